"""List an S3 prefix in parallel: every object below it, once, fast.

S3 has no call that tells a bucket's size or object count: a client pages through LIST
answers of 1,000 keys each, one after the other. The way out (Cycle Computing, "Getting Size
and File Count of a 25 Million Object S3 Bucket", 2014) is to list disjoint prefixes
concurrently, and to order them so that concurrent listers work on different key ranges
("loop interchange": ``00, 10, ..., z0, 01, 11, ...`` instead of ``00, 01, ..., 0z, 10, ...``).

Here, in three steps (:func:`list_objects`; :func:`pangeo_hpc.storage.inventory.inventory`
counts objects and bytes per prefix with the same engine):

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
import math
import socket
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar
from urllib.parse import urlsplit

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.s3.failures import explain
from pangeo_hpc.s3.options import S3Options, client_timeouts, split_url
from pangeo_hpc.s3.waiting import Notice

if TYPE_CHECKING:
    from obstore import ObjectMeta
    from obstore.store import S3Store

__all__ = ["Lister", "ObjectInfo", "list_objects", "listing", "scan"]

#: keys per LIST answer on S3 (and SeaweedFS, MinIO): how requests are counted
PAGE = 1000
#: levels that discovery may go beyond ``depth`` to find enough prefixes to list in parallel
EXTRA_LEVELS = 2
#: objects per batch handed from obstore to Python (progress is reported per batch)
CHUNK = 1000
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
    version : str or None
        Its version id, in a bucket that keeps versions.

    Examples
    --------
    >>> info = ObjectInfo(key="2019/01/data/sst.nc", size=1024, etag=None, last_modified=None,
    ...                   version=None)
    >>> info.key, info.size
    ('2019/01/data/sst.nc', 1024)
    """

    key: str
    size: int
    etag: str | None
    last_modified: datetime | None
    version: str | None = None


class Lister:
    """The listing state of one run: the store, the pool of listers, counts, progress.

    ``take`` callbacks and ``progress`` are called under a lock, one at a time.

    Parameters
    ----------
    store : S3Store
        The bucket's store.
    concurrency : int
        Listings in flight.
    progress : Progress | None
        Called with the number of objects listed so far, or ``None``.
    answered : Callable[[], None] | None, optional
        Called after each answered request, or ``None``.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> store = S3Options(endpoint_url="http://localhost:8333", anon=True).store("era5-pds")
    >>> lister = Lister(store, concurrency=4, progress=None)
    >>> lister.run(len, ["2019/", "2019/01/"])  # any function of a prefix, in the pool
    [5, 8]
    >>> lister.close()
    """

    def __init__(
        self,
        store: S3Store,
        concurrency: int,
        progress: Progress | None,
        answered: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.concurrency = concurrency
        self.progress = progress
        self.answered = answered
        self.requests = 0
        self.objects = 0
        self.pool = concurrent.futures.ThreadPoolExecutor(concurrency, "s3-list")
        self.lock = threading.Lock()
        self._stop = threading.Event()

    def took(self, requests: int, objects: int) -> None:
        """Count requests and objects, and report progress (call it holding :attr:`lock`).

        Parameters
        ----------
        requests : int
            Requests answered.
        objects : int
            Objects they listed.

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> store = S3Options(anon=True).store("era5-pds")
        >>> lister = Lister(store, concurrency=4, progress=lambda n: print(n, "objects"))
        >>> with lister.lock:
        ...     lister.took(requests=1, objects=1000)
        1000 objects
        >>> lister.requests, lister.objects
        (1, 1000)
        >>> lister.close()
        """
        if self.answered is not None:
            self.answered()
        self.requests += requests
        self.objects += objects
        if self.progress is not None and objects:
            self.progress(self.objects)

    def children(self, prefix: str) -> tuple[list[str], Sequence[ObjectMeta]]:
        """Sub-prefixes (``a/b``, without a trailing ``/``) and objects directly at ``prefix``.

        Parameters
        ----------
        prefix : str
            A prefix (``""``: the bucket's root).

        Returns
        -------
        tuple[list[str], Sequence[ObjectMeta]]
            The sub-prefixes, and the objects.

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> lister = Lister(S3Options(anon=True).store("era5-pds"), concurrency=4, progress=None)
        >>> prefixes, objects = lister.children("2019/01/")  # doctest: +SKIP
        >>> prefixes  # ['2019/01/data'], and objects the keys right at 2019/01/  # doctest: +SKIP
        """
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

        Parameters
        ----------
        prefix : str
            A prefix.
        take : Take
            Called with ``(prefix, batch)``.
        arrow : bool, optional
            Hand over Arrow record batches.

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> lister = Lister(S3Options(anon=True).store("era5-pds"), concurrency=4, progress=None)
        >>> found = []
        >>> lister.walk("2019/01/", lambda prefix, batch: found.extend(batch))  # doctest: +SKIP
        >>> len(found)  # every object below 2019/01/  # doctest: +SKIP
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

        Parameters
        ----------
        fn : Callable[[str], T]
            A function of one prefix.
        prefixes : Sequence[str]
            The prefixes.

        Returns
        -------
        list[T]
            The results, in order.

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> lister = Lister(S3Options(anon=True).store("era5-pds"), concurrency=4, progress=None)
        >>> lister.run(lambda prefix: prefix + "/data", ["2019/01", "2019/02"])
        ['2019/01/data', '2019/02/data']
        >>> lister.run(lister.children, ["2019/01/", "2019/02/"])  # listings  # doctest: +SKIP
        >>> lister.close()
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
        """Stop listing and let the threads go.

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> lister = Lister(S3Options(anon=True).store("era5-pds"), concurrency=4, progress=None)
        >>> lister.close()
        """
        self._stop.set()
        self.pool.shutdown(wait=False, cancel_futures=True)


def _plan(lister: Lister, root: str, min_depth: int, take: Take) -> list[str]:
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


def scan(lister: Lister, root: str, min_depth: int, take: Take, *, arrow: bool = False) -> int:
    """Discover, then list the prefixes found in parallel; returns how many were listed.

    ``take(prefix, batch)`` gets every object once: ``prefix`` is the fully listed prefix the
    batch comes from (at least ``min_depth`` levels below ``root``), or ``None`` for objects
    found by discovery (always a list of dicts; with ``arrow``, the others are Arrow).

    Parameters
    ----------
    lister : Lister
        The listing state.
    root : str
        The prefix listed.
    min_depth : int
        Levels below ``root`` at which to list in parallel.
    take : Take
        Called with ``(prefix, batch)``.
    arrow : bool, optional
        Hand over Arrow record batches.

    Returns
    -------
    int
        The prefixes listed.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> lister = Lister(S3Options(anon=True).store("era5-pds"), concurrency=8, progress=None)
    >>> keys = []
    >>> take = lambda prefix, batch: keys.extend(o["path"] for o in batch)
    >>> scan(lister, "2019/", 2, take)  # 2019/MM/data listed in parallel  # doctest: +SKIP
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
    seconds = client_timeouts().connect
    try:
        socket.create_connection((parts.hostname or "", port), timeout=seconds).close()
    except TimeoutError as exc:
        raise InputError(
            f"S3 endpoint {opts.shown_endpoint} did not accept a connection within {seconds:g} s "
            f"(for {url!r}): check endpoint_url= and the network, or raise "
            "pangeo-hpc.s3.connect-timeout",
            param="endpoint_url",
        ) from exc
    except OSError as exc:
        raise (
            explain(exc, url, opts)
            or InputError(
                f"S3 endpoint {opts.shown_endpoint} does not answer (for {url!r}: {exc}): check "
                "endpoint_url= and that the server runs",
                param="endpoint_url",
            )
        ) from exc


def listing(
    url: str,
    opts: S3Options | None,
    concurrency: int | None,
    progress: Progress | None,
    body: Callable[[Lister, str], T],
) -> T:
    """Resolve the URL, options and store; run ``body(lister, prefix)``; explain S3 errors.

    Parameters
    ----------
    url : str
        ``s3://bucket/prefix``.
    opts : S3Options | None
        How to reach S3 (``None``: from config).
    concurrency : int | None
        Listings in flight (``None``: from config).
    progress : Progress | None
        Called with the number of objects listed so far, or ``None``.
    body : Callable[[Lister, str], T]
        What to run.

    Returns
    -------
    T
        What ``body`` returns.

    Raises
    ------
    InputError
        For a bad URL, or an S3 failure a user can fix (explained).

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> opts = S3Options(anon=True)
    >>> top = lambda lister, prefix: lister.children(prefix)
    >>> prefixes, objects = listing("s3://era5-pds/2019", opts, 8, None, top)  # doctest: +SKIP
    """
    bucket, prefix = split_url(url)
    opts = opts if opts is not None else S3Options.resolve()
    limit = int(config.get("s3.list-concurrency", concurrency))
    if limit < 1:
        raise InputError(f"concurrency {limit} is not a positive whole number: use e.g. 64")
    with Notice(opts, f"listing {url}") as notice:
        _check_endpoint(url, opts)
        lister = Lister(opts.store(bucket), limit, progress, notice.answered)
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
            [
                ObjectInfo(o["path"], o["size"], o["e_tag"], o["last_modified"], o.get("version"))
                for o in batch
            ]
        )

    def body(lister: Lister, prefix: str) -> list[ObjectInfo]:
        scan(lister, prefix, 1, take)
        found.sort()
        return found

    return listing(url, opts, concurrency, progress, body)
