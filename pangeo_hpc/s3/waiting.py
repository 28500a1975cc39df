"""A line that says what is being waited for, when an S3 endpoint is slow to answer.

A server that accepts connections and never answers keeps a request waiting until the read
time-out (``pangeo-hpc.s3.read-timeout``), and obstore retries it until the retry time-out
(``pangeo-hpc.s3.retry-timeout``): a minute or more of silence from a command that usually
answers in a second. :class:`Notice` starts a timer thread when the first request of a step
goes out; unless an answer comes first, after ``pangeo-hpc.s3.notice-after`` seconds it logs
one warning naming the endpoint, the step and the time-out that ends the wait::

    waiting for http://127.0.0.1:8333 (listing s3://era5-pds/2019): no answer in 5 s; a
    request gives up after 30 s without one (pangeo-hpc.s3.read-timeout) ...

The command line prints it on stderr (:func:`pangeo_hpc.cli.logs.library_lines`); elsewhere
Python's logging shows warnings on stderr unless told otherwise. The thread only logs: the
waiting itself is the request's, and ends with its answer or its time-out error.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Self

from pangeo_hpc import config

if TYPE_CHECKING:
    from pangeo_hpc.s3.options import S3Options

__all__ = ["Notice"]

log = logging.getLogger(__name__)


class Notice:
    """A one-time line about a wait on S3, unless an answer comes first.

    Parameters
    ----------
    opts : S3Options
        Whose endpoint is waited for (shown without credentials).
    what : str
        The step, as the line names it: ``"listing s3://bucket/prefix"``.
    after : float, optional
        Seconds before the line; default config ``pangeo-hpc.s3.notice-after``.

    Examples
    --------
    >>> with Notice(opts, f"listing {url}") as notice:     # doctest: +SKIP
    ...     for batch in obstore.list(store, prefix):
    ...         notice.answered()
    """

    __slots__ = ("_timer", "after", "endpoint", "what")

    def __init__(self, opts: S3Options, what: str, *, after: float | None = None) -> None:
        self.endpoint = opts.shown_endpoint or "AWS S3"
        self.what = what
        self.after = float(config.get("s3.notice-after", after))
        self._timer = threading.Timer(self.after, self._say)
        self._timer.daemon = True  # never holds up the end of the process

    def line(self) -> str:
        """The line it logs.

        Returns
        -------
        str
            The line.

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> opts = S3Options(endpoint_url="http://localhost:8333")
        >>> print(Notice(opts, "listing s3://era5-pds/2019", after=5).line())
        waiting for http://localhost:8333 (listing s3://era5-pds/2019): no answer in 5 s; a
        request gives up after 30 s without one (pangeo-hpc.s3.read-timeout) ...
        """
        read = float(config.get("s3.read-timeout"))
        return (
            f"waiting for {self.endpoint} ({self.what}): no answer in {self.after:g} s; a "
            f"request gives up after {read:g} s without one (pangeo-hpc.s3.read-timeout) ..."
        )

    def _say(self) -> None:
        log.warning(self.line())

    def answered(self) -> None:
        """An answer came: no line (any longer).

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> opts = S3Options(endpoint_url="http://localhost:8333")
        >>> with Notice(opts, "listing s3://era5-pds/2019") as notice:
        ...     notice.answered()  # the first answer came: no line is logged
        """
        self._timer.cancel()

    def __enter__(self) -> Self:
        self._timer.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._timer.cancel()
