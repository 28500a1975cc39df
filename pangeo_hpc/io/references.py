"""Byte-range reference indexes of NetCDF4/HDF5 objects (kerchunk), cached by ETag and size.

Reading NetCDF4 from S3 through HDF5 costs many small, serial requests. An index made once
with kerchunk's ``SingleHdf5ToZarr`` records where every compressed chunk lies in the
object; readers then fetch the chunks a task needs as a few coalesced byte ranges, in
parallel and without HDF5 (:class:`pangeo_hpc.io.reader.RefSource`).

One index per object is kept in the cache folder (``pangeo-hpc.s3.index-cache``), named
from the object's URL and holding its ETag and size: a changed object has a stale index,
which is ignored and rebuilt. Each file is a plain kerchunk reference set, so other tools
can open it too: ``xr.open_dataset(path, engine="kerchunk")``; its first member is the
SHA-256 of the rest (:func:`~pangeo_hpc.write.sealed.seal_json`), checked before it is
parsed: a damaged index (a flipped digit of a byte offset would read the wrong bytes) is
ignored like a missing one, and rebuilt by the next ``index``.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.extras import require
from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.s3.options import S3Options
from pangeo_hpc.write.sealed import seal_json, sealed_json, unseal_json

#: chunks smaller than this many bytes (coordinates) are stored inside the index
INLINE_BYTES = 1000
_FORMAT = "pangeo-hpc-references-2"  # 2: sealed


@dataclass
class IndexReport:
    """What :func:`build_index` built, found up to date, and could not index.

    Attributes
    ----------
    built : int
        Indexes built.
    reused : int
        Indexes found up to date.
    seconds : float
        Time taken.
    cache : str
        The cache folder.
    failed : list[tuple[str, str]]
        ``(url, why)`` of each object not indexed.

    Examples
    --------
    >>> print(IndexReport(built=2, reused=10, seconds=1.5, cache="/tmp/index").summary())
    index: 2 built, 10 up to date, in 1.5 s; cache /tmp/index
    """

    built: int = 0
    reused: int = 0
    seconds: float = 0.0
    cache: str = ""
    failed: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> str:
        """One line (and one per failure) for the command line.

        Returns
        -------
        str
            The text.

        Examples
        --------
        >>> report = IndexReport(built=1, seconds=0.4, cache="/tmp/index",
        ...                      failed=[("s3://bucket/x.nc", "not an HDF5 file")])
        >>> print(report.summary())
        index: 1 built, 0 up to date, in 0.4 s; cache /tmp/index; 1 failed:
          s3://bucket/x.nc: not an HDF5 file
        """
        line = (
            f"index: {self.built} built, {self.reused} up to date, in {self.seconds:.1f} s; "
            f"cache {self.cache}"
        )
        if self.failed:
            line += f"; {len(self.failed)} failed:\n" + "\n".join(
                f"  {u}: {e}" for u, e in self.failed
            )
        return line


def _cache_root() -> Path:
    """The index cache folder (config ``pangeo-hpc.s3.index-cache``)."""
    return Path(os.path.expandvars(str(config.get("s3.index-cache")))).expanduser()


def cache_file(url: str) -> Path:
    """Where the index of ``url`` is kept.

    Parameters
    ----------
    url : str
        An object's URL.

    Returns
    -------
    Path
        A file of the index cache.

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"pangeo-hpc.s3.index-cache": "/tmp/index"}):
    ...     print(cache_file("s3://era5-pds/2008/01/data/t2m.nc"))
    /tmp/index/67/672706dcd69523ac5a2d6e93746af32a.json
    """
    digest = hashlib.sha256(url.encode()).hexdigest()[:32]
    return _cache_root() / digest[:2] / f"{digest}.json"


def load_refs(stamp: Stamp) -> dict[str, Any] | None:
    """The cached references of ``stamp``, or ``None`` if absent or made for another version
    of the object (another :attr:`~pangeo_hpc.inputs.stamps.Stamp.identity`: size, ETag,
    version).

    Parameters
    ----------
    stamp : Stamp
        The object's stamp.

    Returns
    -------
    dict[str, Any] | None
        The references, or ``None``.

    Examples
    --------
    >>> import dask, tempfile
    >>> from pangeo_hpc.inputs.stamps import Stamp
    >>> tmp = tempfile.TemporaryDirectory()
    >>> stamp = Stamp.of_object("s3://era5-pds/2008/01/data/t2m.nc", 1024, '"abc"')
    >>> with dask.config.set({"pangeo-hpc.s3.index-cache": tmp.name}):
    ...     _ = save_refs(stamp, {"version": 1, "refs": {}})
    ...     newer = Stamp.of_object(stamp.path, 1024, '"def"')  # the object written again
    ...     load_refs(stamp)["refs"], load_refs(newer)
    ({}, None)
    >>> tmp.cleanup()
    """
    path = cache_file(stamp.path)
    try:
        doc = unseal_json(path.read_bytes())
    except (OSError, ValueError):  # missing, unreadable, damaged (Damaged), unsealed
        return None
    meta = doc.get(_FORMAT, {})
    if not isinstance(meta, dict) or meta.get("url") != stamp.path:
        return None
    if meta.get("stamp") != stamp.identity:  # an index of an earlier version has none
        return None
    return doc


def claim_cache() -> Path:
    """The index cache folder, created (user-only) or checked to be this package's: a
    folder configured there that holds a user's files is refused, never written into.

    Returns
    -------
    Path
        The folder.

    Raises
    ------
    InputError
        When the folder holds files this package did not write.

    Examples
    --------
    >>> import dask, pathlib, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> with dask.config.set({"pangeo-hpc.s3.index-cache": tmp.name}):
    ...     claim_cache() == pathlib.Path(tmp.name)
    True
    >>> tmp.cleanup()
    """
    from pangeo_hpc.write.outputs import claim_tree

    def earlier(root: Path) -> bool:  # a cache of an earlier version: two-hex-digit folders
        return all(re.fullmatch(r"[0-9a-f]{2}", p.name) and p.is_dir() for p in root.iterdir())

    return claim_tree(
        _cache_root(), kind="cache", flag="pangeo-hpc.s3.index-cache",
        ours=earlier, mode=0o700,
    )  # fmt: skip


def _is_refs(path: Path) -> bool:
    """An index of ours: sealed (even if damaged), or of an earlier format."""
    try:
        data = path.read_bytes()
        if sealed_json(data):
            return True
        doc = json.loads(data)
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and any(str(k).startswith(_FORMAT[:-1]) for k in doc)


def save_refs(stamp: Stamp, refs: dict[str, Any]) -> Path:
    """Write the references of ``stamp`` into the cache (temporary name, then rename).

    Parameters
    ----------
    stamp : Stamp
        The object's stamp.
    refs : dict[str, Any]
        Its references.

    Returns
    -------
    Path
        The file written.

    Examples
    --------
    >>> import dask, tempfile
    >>> from pangeo_hpc.inputs.stamps import Stamp
    >>> tmp = tempfile.TemporaryDirectory()
    >>> stamp = Stamp.of_object("s3://era5-pds/2008/01/data/t2m.nc", 1024, '"abc"')
    >>> with dask.config.set({"pangeo-hpc.s3.index-cache": tmp.name}):
    ...     path = save_refs(stamp, {"version": 1, "refs": {}})
    >>> path.relative_to(tmp.name).as_posix()
    '67/672706dcd69523ac5a2d6e93746af32a.json'
    >>> tmp.cleanup()
    """
    from pangeo_hpc.write.outputs import atomic_file

    path = cache_file(stamp.path)
    doc = {**refs, _FORMAT: {"url": stamp.path, "stamp": stamp.identity}}
    with atomic_file(path, flag="pangeo-hpc.s3.index-cache", mode=0o600, ours=_is_refs) as tmp:
        tmp.write_bytes(seal_json(doc))
    return path


def _scan_refs(url: str, opts: S3Options) -> dict[str, Any]:
    """Index one NetCDF4/HDF5 object with kerchunk (reads only its metadata).

    Parameters
    ----------
    url : str
        ``s3://bucket/key``.
    opts : S3Options
        How to reach the store.

    Returns
    -------
    dict
        kerchunk references (version 1).
    """
    require("s3", "indexing S3 objects")
    from kerchunk.hdf import SingleHdf5ToZarr

    fs = opts.filesystem()
    with _no_collection(), fs.open(url, "rb", cache_type="first", block_size=4 << 20) as f:
        return SingleHdf5ToZarr(f, url, inline_threshold=INLINE_BYTES, error="raise").translate()


_gc_lock = threading.Lock()
#: translations running, and whether the collector was on when the first started
_gc_state = {"users": 0, "was_enabled": True}


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """Python's cyclic garbage collector off while any thread translates a file.

    kerchunk's translator holds h5py's global lock while it writes each array's metadata
    through zarr, whose writes run on zarr's event-loop thread. A collection that starts on
    that thread and finalizes an h5py object needs the same lock: neither thread moves
    again (h5py/h5py#2019; kerchunk under zarr 3, fsspec/kerchunk#588). It hung an index
    build here. The collector is off from the first translation that starts to the last
    that ends (a count, as threads overlap); back on, it runs when its thresholds say, as
    the allocations meanwhile were counted (a forced collection took 0.08 s, under the
    lock, at every file of a one-thread build).
    """
    with _gc_lock:
        if _gc_state["users"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
            gc.disable()
        _gc_state["users"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["users"] -= 1
            if _gc_state["users"] == 0 and _gc_state["was_enabled"]:
                gc.enable()


def build_index(
    stamps: Sequence[Stamp],
    opts: S3Options,
    *,
    rebuild: bool = False,
    client: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> IndexReport:
    """Index every object in ``stamps`` whose cached index is missing or stale.

    Parameters
    ----------
    stamps : sequence of Stamp
        The objects, with size and ETag from a listing.
    opts : S3Options
        How to reach the store.
    rebuild : bool
        Index all, even those with an up-to-date index.
    client : distributed.Client, optional
        Scan on this cluster's workers (each returns its references to this process, which
        writes the cache). Default: a few threads here.
    progress : callable, optional
        Called with ``(done, total)`` as objects finish.

    Returns
    -------
    IndexReport

    Examples
    --------
    >>> from pangeo_hpc.io.s3_objects import objects_to_index
    >>> opts = S3Options(endpoint_url="http://localhost:8333")
    >>> stamps = objects_to_index("s3://era5/2020", opts)  # doctest: +SKIP
    >>> print(build_index(stamps, opts).summary())  # doctest: +SKIP
    """
    t0 = time.perf_counter()
    todo = [s for s in stamps if rebuild or load_refs(s) is None]
    if todo:
        claim_cache()
    report = IndexReport(reused=len(stamps) - len(todo), cache=str(_cache_root()))
    for i, (stamp, result) in enumerate(_scan_all(todo, opts, client), 1):
        if isinstance(result, BaseException):
            report.failed.append((stamp.path, f"{type(result).__name__}: {result}"))
        else:
            save_refs(stamp, result)
            report.built += 1
        if progress is not None:
            progress(i, len(todo))
    report.seconds = time.perf_counter() - t0
    return report


def _scan_or_error(url: str, opts: S3Options) -> dict[str, Any] | BaseException:
    try:
        return _scan_refs(url, opts)
    except Exception as exc:  # reported per object; the others go on
        return exc


def _scan_all(todo: Sequence[Stamp], opts: S3Options, client: Any) -> Iterable[tuple[Stamp, Any]]:
    if not todo:
        return
    if client is not None:
        from distributed import as_completed

        futures = client.map(_scan_or_error, [s.path for s in todo], opts=opts, pure=False)
        which = {f.key: s for f, s in zip(futures, todo, strict=True)}
        for future, result in as_completed(futures, with_results=True):
            yield which[future.key], result
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(8, len(todo))) as pool:
        yield from zip(todo, pool.map(lambda s: _scan_or_error(s.path, opts), todo), strict=True)
