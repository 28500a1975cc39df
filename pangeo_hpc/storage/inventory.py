"""List an S3 prefix in parallel, and count its objects and bytes per sub-prefix.

S3 has no call that tells a bucket's size or object count: a client pages through LIST
answers of 1,000 keys each, one after the other. The way out (Cycle Computing, "Getting Size
and File Count of a 25 Million Object S3 Bucket", 2014) is to list disjoint prefixes
concurrently, and to order them so that concurrent listers work on different key ranges
("loop interchange": ``00, 10, ..., z0, 01, 11, ...`` instead of ``00, 01, ..., 0z, 10, ...``).

Here, in three steps (:func:`list_objects`, :func:`inventory`):

1. **Discover** prefixes level by level with delimiter listings (``list_with_delimiter``):
   the bucket or prefix given, then the prefixes found, while there are fewer of them than
   the concurrency (up to two levels beyond ``depth``). Objects that sit directly at a level
   listed this way come with that answer, and are counted there.
2. **Order** the prefixes of the last level interleaved: ``1979/01/, 1980/01/, ...,
   1979/02/, 1980/02/, ...`` (the position among siblings, deepest level first).
3. **List** each of them fully (recursively) with at most ``concurrency`` LIST requests in
   flight. The prefixes are disjoint and none holds a level listed in step 1, so every
   object is counted exactly once.

The requests go through obstore (Rust: HTTP, signing, XML parsing, and retries with
backoff on throttling and 5xx; see :meth:`S3Options.store`), called from a pool of
``concurrency`` threads: obstore lets go of the GIL while it waits and parses. Its asyncio
API is as fast here, but its futures are completed from Rust threads that may still be
handing over a result when the interpreter exits, which aborted a short-lived process
(the CLI) now and then (pyo3-async-runtimes; "Fatal Python error: Aborted" at exit).
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar
from urllib.parse import urlsplit

from .. import config
from ..errors import InputError
from .hydration import _size
from .s3 import S3Options, explain, split_url

if TYPE_CHECKING:
    from obstore import ObjectMeta
    from obstore.store import S3Store

__all__ = ["Inventory", "ObjectInfo", "PrefixTotals", "inventory", "list_objects"]

#: keys per LIST answer on S3 (and SeaweedFS, MinIO): how requests are counted
PAGE = 1000
#: levels that discovery may go beyond ``depth`` to find enough prefixes to list in parallel
EXTRA_LEVELS = 2
#: objects per batch handed from obstore to Python (progress is reported per batch)
CHUNK = 1000
#: the label of objects that sit directly at the prefix given (not below a sub-prefix)
TOP = "(top)"

T = TypeVar("T")
Progress = Callable[[int], None]
#: ``take(prefix, batch)``: a batch of objects from the listing of ``prefix`` (None: from
#: discovery); a list of obstore's ``ObjectMeta`` dicts, or an Arrow ``RecordBatch`` of them
Take = Callable[[str | None, Any], None]


class ObjectInfo(NamedTuple):
    """One object found by :func:`list_objects`.

    Attributes
    ----------
    key : str
        The full key in the bucket, e.g. ``"2019/01/data/sea_surface_temperature.nc"``.
    size : int
        Bytes.
    etag : str or None
        The ETag as S3 gives it (quoted, e.g. ``'"9b2cf535f27731c974343645a3985328"'``).
    last_modified : datetime or None
        When the object was written (timezone-aware, UTC).
    """

    key: str
    size: int
    etag: str | None
    last_modified: datetime | None


@dataclass(frozen=True, slots=True)
class PrefixTotals:
    """Objects and bytes below one prefix of an :class:`Inventory`.

    Attributes
    ----------
    prefix : str
        Relative to the inventory's prefix, with a trailing ``/`` (``"1979/"``); ``""``
        for the objects directly at the inventory's prefix.
    objects, bytes : int
        Counted below ``prefix`` (or, for a prefix shallower than the inventory's ``depth``,
        directly in it: the deeper ones have rows of their own).
    """

    prefix: str
    objects: int
    bytes: int


@dataclass(slots=True)
class Inventory:
    """What :func:`inventory` found below ``s3://bucket/prefix``.

    Attributes
    ----------
    url : str
        The ``s3://`` URL listed.
    objects, bytes : int
        In total.
    prefixes : list of PrefixTotals
        The breakdown, sorted by prefix: each object is counted once, under its first
        ``depth`` path segments below the URL (objects directly at the URL under ``""``).
    depth : int
        Levels of the breakdown.
    seconds : float
        Wall time of the listing.
    requests : int
        LIST requests made (pages of up to 1,000 keys and prefixes).
    concurrency : int
        LIST requests allowed in flight.
    tasks : int
        Prefixes listed fully, in parallel, after discovery.
    """

    url: str
    objects: int
    bytes: int
    prefixes: list[PrefixTotals]
    depth: int
    seconds: float
    requests: int
    concurrency: int
    tasks: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The inventory as plain data (what :meth:`to_json` writes).

        Returns
        -------
        dict
            ``url``, ``objects``, ``bytes``, ``depth``, ``seconds``, ``requests``,
            ``concurrency``, ``tasks`` and ``prefixes``: ``{prefix: {"objects": n,
            "bytes": b}}`` with ``""`` for the objects directly at the URL.
        """
        return {
            "url": self.url,
            "objects": self.objects,
            "bytes": self.bytes,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "requests": self.requests,
            "concurrency": self.concurrency,
            "tasks": self.tasks,
            "prefixes": {p.prefix: {"objects": p.objects, "bytes": p.bytes} for p in self.prefixes},
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON text."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def to_table(self) -> str:
        """A text table: one row per prefix (objects, bytes, human-readable size), totals.

        Returns
        -------
        str
            Lines ending with a totals line and how long the listing took.
        """
        rows = [
            (p.prefix or TOP, f"{p.objects:,}", f"{p.bytes:,}", _size(p.bytes))
            for p in self.prefixes
        ]
        total = ("total", f"{self.objects:,}", f"{self.bytes:,}", _size(self.bytes))
        head = ("prefix", "objects", "bytes", "size")
        widths = [max(len(r[i]) for r in [head, total, *rows]) for i in range(4)]

        def line(r: tuple[str, str, str, str]) -> str:
            return (
                f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  "
                f"{r[3]:>{widths[3]}}"
            )

        rule = "  ".join("-" * w for w in widths)
        out = [f"{self.url}", line(head), rule, *map(line, rows), rule, line(total)]
        out.append(
            f"listed in {self.seconds:.2f} s: {self.requests:,} LIST requests, "
            f"{self.tasks:,} prefixes in parallel (concurrency {self.concurrency})"
        )
        return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# the engine


class _Lister:
    """The listing state of one run: the store, the pool of listers, counts, progress.

    ``take`` callbacks and ``progress`` are called under a lock, one at a time.
    """

    def __init__(self, store: S3Store, concurrency: int, progress: Progress | None) -> None:
        self.store = store
        self.concurrency = concurrency
        self.progress = progress
        self.requests = 0
        self.objects = 0
        self.pool = concurrent.futures.ThreadPoolExecutor(concurrency, "s3-list")
        self.lock = threading.Lock()
        self._stop = threading.Event()

    def took(self, requests: int, objects: int) -> None:
        """Count requests and objects, and report progress (call it holding :attr:`lock`)."""
        self.requests += requests
        self.objects += objects
        if self.progress is not None and objects:
            self.progress(self.objects)

    def children(self, prefix: str) -> tuple[list[str], Sequence[ObjectMeta]]:
        """Sub-prefixes (``a/b``, without a trailing ``/``) and objects directly at ``prefix``."""
        import obstore

        found = obstore.list_with_delimiter(self.store, prefix or None)
        prefixes = [p.rstrip("/") for p in found["common_prefixes"]]
        objects = found["objects"]
        with self.lock:
            self.took(max(1, math.ceil((len(prefixes) + len(objects)) / PAGE)), 0)
        return prefixes, objects

    def walk(self, prefix: str, take: Take, *, arrow: bool = False) -> None:
        """List everything below ``prefix``; hand each batch of objects to ``take``.

        With ``arrow``, batches are Arrow record batches (columns ``path``, ``size``,
        ``e_tag``, ...) rather than lists of dicts: no Python object per key.
        """
        import obstore

        found = 0
        for batch in obstore.list(self.store, prefix or None, chunk_size=CHUNK, return_arrow=arrow):
            if self._stop.is_set():
                return
            rows = batch.num_rows if arrow else len(batch)
            found += rows
            with self.lock:
                take(prefix, batch)
                self.took(0, rows)
        with self.lock:
            self.took(max(1, math.ceil(found / PAGE)), 0)

    def run(self, fn: Callable[[str], T], prefixes: Sequence[str]) -> list[T]:
        """``fn(prefix)`` for each prefix in the pool, in this order; the results.

        The first failure stops the rest (those not started are cancelled, running
        listings stop at their next page) and is raised.
        """
        futures = [self.pool.submit(fn, p) for p in prefixes]
        try:
            concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
            for f in futures:
                if f.done() and (exc := f.exception()) is not None:
                    raise exc
            return [f.result() for f in futures]
        except BaseException:  # a failure, or Ctrl-C in the waiting thread
            self._stop.set()
            for f in futures:
                f.cancel()
            raise

    def close(self) -> None:
        """Stop listing and let the threads go."""
        self._stop.set()
        self.pool.shutdown(wait=False, cancel_futures=True)


def _plan(lister: _Lister, root: str, min_depth: int, take: Take) -> list[str]:
    """Discover prefixes below ``root``; return those to list fully, interleaved.

    Objects met at the levels listed with the delimiter are handed to ``take(None, batch)``.
    """
    level = [root]
    rank: dict[str, tuple[int, ...]] = {root: ()}
    depth = 0
    while True:
        answers = lister.run(lister.children, level)
        found: list[str] = []
        for parent, (prefixes, objects) in zip(level, answers, strict=True):
            with lister.lock:
                take(None, objects)
                lister.took(0, len(objects))
            for i, p in enumerate(prefixes):
                rank[p] = (*rank[parent], i)
            found += prefixes
        depth += 1
        if not found:
            return []
        if depth < min_depth or (
            len(found) < lister.concurrency and depth < max(min_depth, 1) + EXTRA_LEVELS
        ):
            level = found
            continue
        # loop interchange: the position among siblings at the deepest level counts first,
        # so that neighbours in the order (and in flight together) sit in different parents
        return sorted(found, key=lambda p: rank[p][::-1])


def _scan(lister: _Lister, root: str, min_depth: int, take: Take, *, arrow: bool = False) -> int:
    """Discover, then list the prefixes found in parallel; returns how many were listed.

    ``take(prefix, batch)`` gets every object once: ``prefix`` is the fully listed prefix the
    batch comes from (at least ``min_depth`` levels below ``root``), or ``None`` for objects
    found by discovery (always a list of dicts; with ``arrow``, the others are Arrow).
    """
    tasks = _plan(lister, root, min_depth, take)
    lister.run(lambda prefix: lister.walk(prefix, take, arrow=arrow), tasks)
    return len(tasks)


def _check_endpoint(url: str, opts: S3Options) -> None:
    """Fail at once, with the usual message, if a custom endpoint refuses connections.

    obstore retries connection errors with backoff (a minute with the default retries),
    which is right for a blip but not for a server that is not running at all.
    """
    if not opts.endpoint_url:
        return
    parts = urlsplit(opts.endpoint_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "", port), timeout=10).close()
    except OSError as exc:
        raise (
            explain(exc, url, opts)
            or InputError(
                f"S3 endpoint {opts.endpoint_url} does not answer (for {url!r}: {exc}): check "
                "--endpoint-url and that the server runs"
            )
        ) from exc


def _listing(
    url: str,
    opts: S3Options | None,
    concurrency: int | None,
    progress: Progress | None,
    body: Callable[[_Lister, str], T],
) -> T:
    """Resolve the URL, options and store; run ``body(lister, prefix)``; explain S3 errors."""
    bucket, prefix = split_url(url)
    opts = opts if opts is not None else S3Options.resolve()
    limit = int(config.get("s3.list-concurrency", concurrency))
    if limit < 1:
        raise InputError(f"concurrency {limit} is not a positive whole number: use e.g. 64")
    _check_endpoint(url, opts)
    lister = _Lister(opts.store(bucket), limit, progress)
    try:
        return body(lister, prefix)
    except InputError:
        raise
    except Exception as exc:
        err = explain(exc, url, opts)
        if err is None:
            raise
        raise err from exc
    finally:
        lister.close()


# --------------------------------------------------------------------------------------------
# the public functions


def list_objects(
    url: str,
    opts: S3Options | None = None,
    *,
    concurrency: int | None = None,
    progress: Progress | None = None,
) -> list[ObjectInfo]:
    """Every object below ``s3://bucket[/prefix]``, listed with concurrent LIST requests.

    Parameters
    ----------
    url : str
        ``s3://BUCKET`` or ``s3://BUCKET/PREFIX``. A prefix matches whole path segments:
        ``s3://era5-pds/2019`` lists ``2019/...``, not ``2019-backup/...``.
    opts : S3Options, optional
        Endpoint, credentials, region; default :meth:`S3Options.resolve` (dask config
        ``pangeo-hpc.s3.*`` and the AWS chain).
    concurrency : int, optional
        LIST requests in flight at once; default ``pangeo-hpc.s3.list-concurrency`` (64).
    progress : callable, optional
        Called with the number of objects found so far, after each batch.

    Returns
    -------
    list of ObjectInfo
        Sorted by key; ``key`` is the full key in the bucket.

    Raises
    ------
    InputError
        For a malformed URL, a missing bucket, refused credentials, an endpoint that does
        not answer, or throttling that outlasts ``pangeo-hpc.s3.max-retries`` retries; the
        message says what to fix.

    Notes
    -----
    Keys that end in ``/`` (the "folder" placeholders some consoles create) come back
    without that slash: obstore normalises paths.

    Examples
    --------
    >>> files = list_objects("s3://era5-pds/2019/01", S3Options(anon=True))  # doctest: +SKIP
    >>> [f.key for f in files if f.key.endswith(".nc")][:1]                  # doctest: +SKIP
    ['2019/01/data/air_pressure_at_mean_sea_level.nc']
    """
    found: list[ObjectInfo] = []

    def take(_prefix: str | None, batch: Sequence[ObjectMeta]) -> None:
        found.extend(
            [ObjectInfo(o["path"], o["size"], o["e_tag"], o["last_modified"]) for o in batch]
        )

    def body(lister: _Lister, prefix: str) -> list[ObjectInfo]:
        _scan(lister, prefix, 1, take)
        found.sort()
        return found

    return _listing(url, opts, concurrency, progress, body)


def inventory(
    url: str,
    opts: S3Options | None = None,
    *,
    depth: int = 1,
    concurrency: int | None = None,
    progress: Progress | None = None,
) -> Inventory:
    """Count the objects and bytes below ``s3://bucket[/prefix]``, in total and per prefix.

    Parameters
    ----------
    url : str
        ``s3://BUCKET`` or ``s3://BUCKET/PREFIX`` (whole path segments, as in
        :func:`list_objects`).
    opts : S3Options, optional
        Endpoint, credentials, region; default :meth:`S3Options.resolve`.
    depth : int
        Path segments below ``url`` that make a row of the breakdown: 1 gives ``1979/``,
        ``1980/``, ...; 2 gives ``1979/01/``, ... (and ``1979/`` for the objects directly in
        it). 0: totals only.
    concurrency : int, optional
        LIST requests in flight at once; default ``pangeo-hpc.s3.list-concurrency`` (64).
    progress : callable, optional
        Called with the number of objects counted so far, after each batch.

    Returns
    -------
    Inventory
        Totals, the per-prefix breakdown, the wall time and the number of LIST requests.

    Raises
    ------
    InputError
        As :func:`list_objects`, and for a negative ``depth``.

    Examples
    --------
    >>> inv = inventory("s3://era5-pds", S3Options(anon=True))  # doctest: +SKIP
    >>> print(inv.to_table())                                    # doctest: +SKIP
    """
    if depth < 0:
        raise InputError(f"depth {depth} is negative: use 0 (totals only), 1, 2, ...")
    totals: dict[str, list[int]] = {}

    def group(key: str, root: str) -> str:
        """The row of an object: its first ``depth`` folders below ``root``."""
        folders = key[len(root) + 1 if root else 0 :].split("/")[:-1][:depth]
        return "".join(f + "/" for f in folders)

    def add(row: str, objects: int, nbytes: int) -> None:
        cell = totals.setdefault(row, [0, 0])
        cell[0] += objects
        cell[1] += nbytes

    def body(lister: _Lister, root: str) -> Inventory:
        started = time.perf_counter()

        def take(prefix: str | None, batch: Any) -> None:
            if prefix is None:  # from discovery, at most `depth` levels down: each its row
                for o in batch:
                    add(group(o["path"], root), 1, o["size"])
            else:  # a fully listed prefix, `depth` or more levels down: all in one row
                add(group(prefix + "/", root), batch.num_rows, int(batch["size"].to_numpy().sum()))

        # Arrow batches: sizes are summed without a Python object per key (20 % less CPU
        # than lists of dicts, measured on 100,000 keys)
        tasks = _scan(lister, root, depth, take, arrow=True)
        rows = [PrefixTotals(p, n, b) for p, (n, b) in sorted(totals.items())]
        return Inventory(
            url=url,
            objects=sum(r.objects for r in rows),
            bytes=sum(r.bytes for r in rows),
            prefixes=rows if depth > 0 else [],
            depth=depth,
            seconds=time.perf_counter() - started,
            requests=lister.requests,
            concurrency=lister.concurrency,
            tasks=tasks,
        )

    return _listing(url, opts, concurrency, progress, body)
