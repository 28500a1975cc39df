"""Timed reads behind :func:`pangeo_hpc.storage.survey.read_speed`: the first bytes of whole
files under a folder, or of the objects under an ``s3://`` prefix, in parallel threads.

Files are read as a warm-up reads them (:func:`~pangeo_hpc.storage.pagecache.read_through`:
sequential reads of ``block_size`` bytes, one file per thread), after dropping them from the
page cache for a cold read; objects are fetched with GET requests of at most ``block_size``
bytes (ranged GETs for larger objects), ``threads`` in flight, through obstore with the
options of :class:`~pangeo_hpc.s3.options.S3Options`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pangeo_hpc.errors import InputError
from pangeo_hpc.extras import require
from pangeo_hpc.s3.failures import explain
from pangeo_hpc.s3.options import S3Options, split_url
from pangeo_hpc.storage import pagecache
from pangeo_hpc.storage.detect import detect

__all__ = ["MISSING", "ReadSpeed", "read_files", "read_s3"]

MISSING = "path {path!r} does not exist: give a folder, file or s3://BUCKET/PREFIX to survey"


@dataclass(slots=True)
class ReadSpeed:
    """What :func:`read_speed` measured on one path.

    Attributes
    ----------
    path : str
        The folder, file or ``s3://`` URL, as given.
    kind : str
        The file system (``detect(path).kind``: ``ext4``, ``xfs``, ``nfs``, ``lustre``,
        ``tmpfs``, ...; for FUSE and unknown ones the mount type, e.g. ``fuse.rclone``),
        or ``s3``.
    files, bytes : int
        Files (objects) read completely, and the bytes read.
    seconds : float
        Wall time of the reads alone (not the listing, the cache drop or the check).
    cold : bool
        True when the page cache of the files was dropped before reading (``cached`` tells
        what stayed: all of it on tmpfs, whose pages are the storage), and on S3, where no
        local cache serves the bytes.
    method : str
        How the bytes were read, e.g. ``"8 threads, 16 MiB reads, page cache dropped"``.
    threads, block_size : int
        Reads in flight, and bytes per read (per GET on S3).
    cached : int or None
        Bytes of those files in the page cache when the reads began (after the drop, when
        cold); None on S3, or where it cannot be told.
    failed : list of (str, str)
        Files that vanished or could not be read during the survey, with why.
    label : str
        The name shown in tables and plots (default: ``path``).

    Examples
    --------
    >>> r = ReadSpeed(
    ...     "/scratch/era5", "lustre", files=4, bytes=800_000_000, seconds=2.0, cold=True,
    ...     method="pread", threads=8, block_size=16 * 2**20,
    ... )
    >>> r.to_dict()["mb_per_s"]
    400.0
    """

    path: str
    kind: str
    files: int
    bytes: int
    seconds: float
    cold: bool
    method: str
    threads: int
    block_size: int
    cached: int | None = None
    failed: list[tuple[str, str]] = field(default_factory=list)
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            self.label = self.path

    @property
    def mb_per_s(self) -> float:
        """Read throughput in MB/s (10**6 bytes per second)."""
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The measurement as plain data (JSON-ready), with ``mb_per_s``.

        Returns
        -------
        dict[str, Any]
            The data.

        Examples
        --------
        >>> r = ReadSpeed("/scratch/era5", "lustre", files=4, bytes=800_000_000, seconds=2.0,
        ...               cold=True, method="pread", threads=8, block_size=16 * 2**20)
        >>> data = r.to_dict()
        >>> data["kind"], data["mb_per_s"]
        ('lustre', 400.0)
        """
        out = asdict(self)
        out["failed"] = [{"path": p, "error": e} for p, e in self.failed]
        out["mb_per_s"] = round(self.mb_per_s, 3)
        return out


def _walk(root: Path) -> Iterator[Path]:
    """Regular files below ``root`` in sorted order, lazily (a huge tree is not listed whole)."""
    try:
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except PermissionError as exc:
        raise InputError(
            f"cannot list folder {str(root)!r}: permission denied: survey a folder you can read"
        ) from exc
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            yield from _walk(Path(e.path))
        elif e.is_file(follow_symlinks=False):
            yield Path(e.path)


def _take_files(root: Path, budget: int) -> tuple[list[Path], list[tuple[str, str]]]:
    """The first files (in sorted order) that hold ``budget`` bytes, and those that vanished."""
    files = [root] if root.is_file() else _walk(root)
    chosen: list[Path] = []
    failed: list[tuple[str, str]] = []
    total = 0
    for f in files:
        if total >= budget:
            break
        try:
            size = f.stat().st_size
        except FileNotFoundError:
            failed.append((str(f), "vanished during the survey"))
            continue
        chosen.append(f)
        total += size
    return chosen, failed


def _prepare(path: Path, cold: bool) -> tuple[int | None, str | None]:
    """Drop the file's pages (when cold); return the bytes still cached, or an error."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None, "vanished during the survey"
    except PermissionError as exc:
        raise InputError(
            f"cannot read {str(path)!r}: permission denied: fix its permissions "
            "(chmod a+r) or survey a folder you can read"
        ) from exc
    try:
        if cold:
            pagecache.drop(fd)
        return pagecache.resident_bytes(fd), None
    finally:
        os.close(fd)


def _read_one(path: Path, block_size: int) -> tuple[int, str | None]:
    try:
        return pagecache.read_through(path, block_size), None
    except FileNotFoundError:
        return 0, "vanished during the survey"
    except OSError as exc:
        return 0, f"{exc.strerror or exc} (errno {exc.errno})"


def read_files(path: str | Path, budget: int, n: int, bs: int, cold: bool) -> ReadSpeed:
    """Read up to ``budget`` bytes of the files below ``path`` with ``n`` threads in reads of ``bs``
    bytes, and measure the speed.

    Parameters
    ----------
    path : str | Path
        A folder or a file.
    budget : int
        Bytes to read (the last file whole).
    n : int
        Reads in flight.
    bs : int
        Bytes per read.
    cold : bool
        Drop the files from the page cache first.

    Returns
    -------
    ReadSpeed
        The measurement.

    Raises
    ------
    InputError
        When ``path`` does not exist, or holds no readable file.

    Examples
    --------
    >>> from pathlib import Path
    >>> Path("measured").mkdir(); _ = Path("measured/a.nc").write_bytes(b"x" * 65536)
    >>> r = read_files("measured", budget=2**20, n=2, bs=2**16, cold=True)
    >>> r.files, r.bytes, r.method
    (1, 65536, '2 threads, 64 KiB reads, page cache dropped')
    """
    if not Path(path).exists():
        raise InputError(MISSING.format(path=str(path)))
    info = detect(path)
    kind = info.mount_type if info.kind in ("fuse", "unknown") else info.kind
    chosen, failed = _take_files(Path(path), budget)
    if not chosen and not failed:
        raise InputError(
            f"folder {str(path)!r} holds no files: give a folder with data files, "
            "e.g. a year of ERA5"
        )
    cached: int | None = 0
    ready = []
    with ThreadPoolExecutor(n) as pool:
        # drop and check first, untimed; every file before any read, so that the pages of
        # one file's read-ahead are not dropped by the preparation of another
        for f, (resident, error) in zip(
            chosen, pool.map(lambda f: _prepare(f, cold), chosen), strict=True
        ):
            if error:
                failed.append((str(f), error))
                continue
            ready.append(f)
            cached = None if cached is None or resident is None else cached + resident
        started = time.perf_counter()
        futures = {pool.submit(_read_one, f, bs): f for f in ready}
        files = nbytes = 0
        for fut in as_completed(futures):
            got, error = fut.result()
            if error:
                failed.append((str(futures[fut]), error))
            else:
                files += 1
                nbytes += got
        seconds = time.perf_counter() - started
    how = "page cache dropped" if cold else "page cache as found"
    return ReadSpeed(
        path=str(path),
        kind=kind,
        files=files,
        bytes=nbytes,
        seconds=seconds,
        cold=cold,
        method=f"{n} threads, {_mib(bs)} reads, {how}",
        threads=n,
        block_size=bs,
        cached=cached,
        failed=failed,
    )


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n / 1024:g} KiB"


# --------------------------------------------------------------------------------------------
# S3


def read_s3(url: str, budget: int, n: int, bs: int, opts: S3Options) -> ReadSpeed:
    """Read up to ``budget`` bytes of the objects below ``url`` with ``n`` ranged GETs in flight of
    ``bs`` bytes, and measure the speed.

    Parameters
    ----------
    url : str
        ``s3://BUCKET/PREFIX``.
    budget : int
        Bytes to read (the last object whole).
    n : int
        Requests in flight.
    bs : int
        Bytes per request.
    opts : S3Options
        How to reach S3.

    Returns
    -------
    ReadSpeed
        The measurement.

    Raises
    ------
    InputError
        When the prefix holds no object, or S3 refuses (explained).

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> opts = S3Options(anon=True)
    >>> r = read_s3("s3://era5-pds/2019/01", 2**30, 16, 2**24, opts)  # doctest: +SKIP
    >>> r.to_dict()["mb_per_s"]  # doctest: +SKIP
    """
    require("s3", f"reading {url!r}")
    import obstore
    from obstore.exceptions import NotFoundError

    from pangeo_hpc.s3.listing import list_objects

    objects = list_objects(url, opts)  # explained InputError: bucket, credentials, endpoint
    if not objects:
        call = f"pangeo_hpc.storage.inventory.inventory({url!r})"
        raise InputError(
            f"no objects below {url!r}: check the prefix with {call}",
            commands={call: ["inventory", url]},
        )
    chosen, total = [], 0
    for o in objects:
        if total >= budget:
            break
        chosen.append(o)
        total += o.size
    bucket = split_url(url)[0]
    store = opts.store(bucket)
    # whole objects up to bs in one GET, larger ones in ranged GETs of bs bytes
    parts = [
        (o.key, start, min(bs, o.size - start) if o.size > bs else None)
        for o in chosen
        for start in (range(0, o.size, bs) if o.size > bs else [0])
    ]

    def get(key: str, start: int, length: int | None) -> int:
        if length is None:
            return len(obstore.get(store, key).bytes())
        return len(obstore.get_range(store, key, start=start, length=length))

    left = {o.key: (o.size + bs - 1) // bs if o.size > bs else 1 for o in chosen}
    failed: dict[str, str] = {}
    files = nbytes = 0
    pool = ThreadPoolExecutor(n, "s3-survey")
    started = time.perf_counter()
    try:
        futures = {pool.submit(get, *part): part[0] for part in parts}
        for fut in as_completed(futures):
            key = futures[fut]
            try:
                got = fut.result()
            except NotFoundError:
                failed[key] = "vanished during the survey"
                continue
            except Exception as exc:
                err = explain(exc, f"s3://{bucket}/{key}", opts)
                if err is None:
                    raise
                raise err from exc
            nbytes += got
            left[key] -= 1
            if left[key] == 0 and key not in failed:
                files += 1
        seconds = time.perf_counter() - started
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return ReadSpeed(
        path=url,
        kind="s3",
        files=files,
        bytes=nbytes,
        seconds=seconds,
        cold=True,
        method=f"{n} threads, GETs of up to {_mib(bs)} (obstore)",
        threads=n,
        block_size=bs,
        cached=None,
        failed=[(f"s3://{bucket}/{k}", e) for k, e in sorted(failed.items())],
    )


# --------------------------------------------------------------------------------------------
# showing the results
