"""A small HTTP proxy between an S3 client and a test server: latency and throttling on demand.

``tc netem`` is not available in this kernel, so the latency of a real S3 endpoint (tens of
milliseconds per request) is put in by a process in between: :class:`DelayProxy` listens on a
free loopback port, reads each request's head (and its ``Content-Length`` body), waits
``delay`` seconds, and forwards it unchanged to the upstream server; responses are pumped
back raw. Requests keep their ``Host`` header, so AWS signatures made for the proxy's address
still verify upstream.

It can also play a throttling S3: :meth:`DelayProxy.throttle` answers the next N requests (or
all of them, until called again) with ``503 SlowDown`` and S3's XML error body, without
forwarding them, as S3 does when a prefix gets more requests than it can take.

The proxy runs its own asyncio event loop in a background thread, so that synchronous test
code and benchmarks can use it as a context manager. It is meant for HTTP/1.1 clients that
do not pipeline (botocore, obstore/reqwest, s5cmd): one request in flight per connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from types import TracebackType
from typing import Self

__all__ = ["DelayProxy"]

HOST = "127.0.0.1"

_SLOWDOWN_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>"
    b"<RequestId>proxy</RequestId></Error>"
)
_SLOWDOWN = (
    b"HTTP/1.1 503 Slow Down\r\n"
    b"Content-Type: application/xml\r\n"
    b"Content-Length: " + str(len(_SLOWDOWN_BODY)).encode() + b"\r\n"
    b"Connection: close\r\n"
    b"\r\n" + _SLOWDOWN_BODY
)
_CHUNK = 1 << 16


class DelayProxy:
    """Forward HTTP requests to ``upstream`` after a fixed delay; optionally throttle them.

    Parameters
    ----------
    upstream
        The server, as ``http://HOST:PORT`` (e.g. :attr:`SeaweedFS.endpoint_url`).
    delay
        Seconds to wait before forwarding each request (0.02: a near-by S3 region).

    Attributes
    ----------
    requests : int
        Requests received (forwarded or throttled).
    throttled : int
        Requests answered with 503 SlowDown.
    request_lines : list of str
        ``"GET /bucket?list-type=2 HTTP/1.1"`` and so on, in the order received.

    Examples
    --------
    >>> with DelayProxy(server.endpoint_url, delay=0.02) as proxy:    # doctest: +SKIP
    ...     proxy.throttle(3)                 # the next three requests get 503 SlowDown
    ...     store = S3Store("bucket", endpoint=proxy.endpoint_url, ...)
    """

    def __init__(self, upstream: str, *, delay: float = 0.02) -> None:
        hostport = upstream.removeprefix("http://").rstrip("/")
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"upstream {upstream!r} is not http://HOST:PORT")
        self.upstream = (host, int(port))
        self.delay = delay
        self.port = 0
        self.requests = 0
        self.throttled = 0
        self.request_lines: list[str] = []
        self._throttle_left = 0
        self._throttle_all = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    @property
    def endpoint_url(self) -> str:
        """The proxy's address, ``http://127.0.0.1:PORT``: give it to clients as the endpoint."""
        return f"http://{HOST}:{self.port}"

    def throttle(self, count: int | None = None) -> None:
        """Answer requests with ``503 SlowDown`` instead of forwarding them.

        Parameters
        ----------
        count
            How many of the next requests to refuse; ``None``: all of them until
            :meth:`unthrottle`.
        """
        if count is None:
            self._throttle_all = True
        else:
            self._throttle_left = count

    def unthrottle(self) -> None:
        """Forward every request again."""
        self._throttle_all = False
        self._throttle_left = 0

    def reset_counts(self) -> None:
        """Set :attr:`requests`, :attr:`throttled` and :attr:`request_lines` back to nothing."""
        self.requests = self.throttled = 0
        self.request_lines = []

    def _take_throttle(self) -> bool:
        if self._throttle_all:
            return True
        if self._throttle_left > 0:
            self._throttle_left -= 1
            return True
        return False

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        pump: asyncio.Task[None] | None = None
        me = asyncio.current_task()
        assert me is not None
        self._connections[me] = writer
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                length = _content_length(head)
                self.requests += 1
                self.request_lines.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
                if self._take_throttle():
                    self.throttled += 1
                    writer.write(_SLOWDOWN)
                    await writer.drain()
                    return  # "Connection: close": the body, if any, is not read
                if self.delay > 0:
                    await asyncio.sleep(self.delay)
                if upstream is None:
                    up_reader, upstream = await asyncio.open_connection(*self.upstream)
                    pump = asyncio.create_task(_pump(up_reader, writer))
                upstream.write(head)
                # the body is streamed after the head, so "Expect: 100-continue" works too
                while length > 0:
                    data = await reader.read(min(length, _CHUNK))
                    if not data:
                        return
                    upstream.write(data)
                    length -= len(data)
                await upstream.drain()
        except ConnectionError:
            return
        finally:
            if upstream is not None:
                upstream.close()
            if pump is not None:
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                    await pump
            writer.close()
            self._connections.pop(me, None)

    def start(self) -> Self:
        """Listen on a free loopback port, in a background thread with its own event loop.

        Returns
        -------
        DelayProxy
            self, with :attr:`port` set.
        """
        if self._thread is not None:
            raise RuntimeError("the proxy runs already")
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="delay-proxy", daemon=True)
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, HOST, 0), loop
        ).result(timeout=10)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    def stop(self) -> None:
        """Close the listening socket and every connection, and end the thread."""
        loop, thread, server = self._loop, self._thread, self._server
        if loop is None or thread is None:
            return

        async def close() -> None:
            if server is not None:
                server.close()
            # closing a client's socket ends its handler (end of file on the next read)
            for writer in list(self._connections.values()):
                writer.close()
            if self._connections:
                await asyncio.wait(list(self._connections), timeout=5)

        asyncio.run_coroutine_threadsafe(close(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        self._loop = self._thread = self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _content_length(head: bytes) -> int:
    """The ``Content-Length`` of a request head (0 without one)."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy the upstream's responses to the client as they come, until either side closes."""
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


def main() -> None:
    """``python tests/support/proxy.py UPSTREAM [--delay S]``: print the proxy's URL, serve until stdin
    closes (a process of its own, so that it does not share a GIL with a client measured)."""
    import argparse
    import sys

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("upstream", help="http://HOST:PORT")
    p.add_argument("--delay", type=float, default=0.02, help="seconds per request")
    a = p.parse_args()
    with DelayProxy(a.upstream, delay=a.delay) as proxy:
        print(proxy.endpoint_url, flush=True)
        sys.stdin.read()
        print(f"{proxy.requests} requests", file=sys.stderr)


if __name__ == "__main__":
    main()
