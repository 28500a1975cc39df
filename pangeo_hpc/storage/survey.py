"""How fast each storage path reads: MB/s of large reads in parallel threads, cold or warm.

:func:`read_speed` reads the first ``max_bytes`` of whole files under a folder (local disk,
NFS, Lustre, a FUSE mount such as rclone) or an ``s3://bucket/prefix`` and times the reads
alone; :func:`survey` does it for several paths, one after the other, and :func:`table`
and :func:`plot` show the results side by side, as in an EC2 storage comparison.

Files are read as a warm-up reads them (:func:`~pangeo_hpc.storage.warmup.read_through`:
sequential reads of ``block_size`` bytes, one file per thread); objects are fetched with
GET requests of at most ``block_size`` bytes (ranged GETs for larger objects), ``threads``
in flight, through obstore with the options of :class:`~pangeo_hpc.storage.s3.S3Options`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import config
from ..checks import check_path
from ..errors import InputError
from ..sizes import parse_size
from . import pagecache
from .detect import detect
from .s3 import S3Options, explain, is_s3, split_url
from .warmup import read_through

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["ReadSpeed", "plot", "read_speed", "survey", "table"]

Paths = str | Path | Sequence[str | Path] | Mapping[str, str | Path]
_MISSING = "path {path!r} does not exist: give a folder, file or s3://BUCKET/PREFIX to survey"


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
        """The measurement as plain data (JSON-ready), with ``mb_per_s``."""
        out = asdict(self)
        out["failed"] = [{"path": p, "error": e} for p, e in self.failed]
        out["mb_per_s"] = round(self.mb_per_s, 3)
        return out


def _size(value: object, key: str, what: str) -> int:
    """A size in bytes from an int or a string such as ``1GB``; the default from config."""
    return parse_size(config.get(key, value), name=what)


def read_speed(
    path: str | Path,
    *,
    max_bytes: int | str | None = None,
    threads: int | None = None,
    block_size: int | str | None = None,
    cold: bool = True,
    s3_options: S3Options | None = None,
) -> ReadSpeed:
    """Measure how fast ``path`` reads: whole files, in parallel, in large reads.

    Parameters
    ----------
    path : str or Path
        A folder (every file below it, in sorted order), a file, or ``s3://BUCKET/PREFIX``.
    max_bytes : int or str, optional
        Files are taken in order until this many bytes are reached (the last one whole, so
        a little more may be read); ``"1GB"``, ``"500MiB"`` or bytes. Default config
        ``pangeo-hpc.storage.survey-bytes`` (1 GB). For a warm figure keep it below the
        free memory, or the page cache cannot hold the files until they are read again.
    threads : int, optional
        Reads in flight. Default config ``pangeo-hpc.storage.survey-threads``.
    block_size : int or str, optional
        Bytes per read (and per ranged GET on S3). Default config
        ``pangeo-hpc.storage.block-size`` (16 MiB).
    cold : bool
        Drop the files from the page cache first (``posix_fadvise(POSIX_FADV_DONTNEED)``,
        no root needed), so that the bytes come from the storage. False: read the files as
        they are cached now; :attr:`ReadSpeed.cached` tells how much that was. Ignored on
        S3, where nothing is cached locally.
    s3_options : S3Options, optional
        Endpoint, credentials, region for ``s3://``; default :meth:`S3Options.resolve`.

    Returns
    -------
    ReadSpeed

    Raises
    ------
    InputError
        A path that does not exist, a folder without files, a file that cannot be read, an
        S3 bucket or prefix that does not exist or refuses the credentials, a bad size.

    Notes
    -----
    The drop empties only the kernel's page cache. On an rclone FUSE mount the bytes may
    then still come from rclone's own VFS cache on local disk (a cold read of the mount is
    one with an empty ``--cache-dir``); on Lustre the client drops its pages, but the
    servers' caches stay warm. The page cache is shared: the kernel may evict pages at any
    time (memory pressure, or proactive reclaim such as DAMON on cloud VMs), so a warm read
    may find less than all of its files cached; :attr:`ReadSpeed.cached` says how much was.
    Files that vanish during the survey are listed in :attr:`ReadSpeed.failed`, and the
    others are read.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a.nc").write_bytes(b"x" * 65536)
    >>> first = read_speed(d)             # cold: from the disk
    >>> (first.files, first.bytes, first.cached)
    (1, 65536, 0)
    >>> again = read_speed(d, cold=False)  # warm: from the page cache the first read filled
    >>> again.cached > 0
    True
    """
    budget = _size(max_bytes, "storage.survey-bytes", "max_bytes")
    n = int(config.get("storage.survey-threads", threads))
    if n < 1:
        raise InputError(f"threads={n} is not a positive whole number: use e.g. 8")
    bs = _size(block_size, "storage.block-size", "block_size")
    check_path(path)
    if is_s3(path):
        return _read_s3(str(path), budget, n, bs, s3_options or S3Options.resolve())
    return _read_files(path, budget, n, bs, cold)


def survey(
    paths: Paths,
    *,
    max_bytes: int | str | None = None,
    threads: int | None = None,
    block_size: int | str | None = None,
    cold: bool = True,
    s3_options: S3Options | None = None,
) -> list[ReadSpeed]:
    """:func:`read_speed` of several paths, one after the other (so they do not compete).

    Parameters
    ----------
    paths : sequence or mapping
        Paths (folders, files, ``s3://`` URLs), or ``{label: path}`` to name them, e.g.
        ``{"local": "/scratch/era5", "NFS": "/home/era5", "S3": "s3://era5-pds/2019"}``.
    max_bytes, threads, block_size, cold, s3_options
        As for :func:`read_speed`, the same for every path.

    Returns
    -------
    list of ReadSpeed
        In the order given, labelled.

    Raises
    ------
    InputError
        As :func:`read_speed`; every path is checked for existence (local) or form
        (``s3://``) before any is read.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    items = (
        [(str(k), v) for k, v in paths.items()]
        if isinstance(paths, Mapping)
        else [(str(p), p) for p in paths]
    )
    if not items:
        raise InputError("no paths to survey: give at least one folder or s3:// URL")
    for _, p in items:
        if is_s3(p):
            split_url(str(p))
        elif not Path(p).exists():
            raise InputError(_MISSING.format(path=str(p)))
    kw: dict[str, Any] = {
        "max_bytes": max_bytes,
        "threads": threads,
        "block_size": block_size,
        "cold": cold,
        "s3_options": s3_options,
    }
    return [replace(read_speed(p, **kw), label=label) for label, p in items]


# --------------------------------------------------------------------------------------------
# files


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
        return read_through(str(path), block_size), None
    except FileNotFoundError:
        return 0, "vanished during the survey"
    except OSError as exc:
        return 0, f"{exc.strerror or exc} (errno {exc.errno})"


def _read_files(path: str | Path, budget: int, n: int, bs: int, cold: bool) -> ReadSpeed:
    if not Path(path).exists():
        raise InputError(_MISSING.format(path=str(path)))
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


def _read_s3(url: str, budget: int, n: int, bs: int, opts: S3Options) -> ReadSpeed:
    import obstore
    from obstore.exceptions import NotFoundError

    from .inventory import list_objects

    objects = list_objects(url, opts)  # explained InputError: bucket, credentials, endpoint
    if not objects:
        raise InputError(
            f"no objects below {url!r}: check the prefix with `python -m pangeo_hpc.run "
            f"inventory {url}`"
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


def _cache(r: ReadSpeed) -> str:
    """``cold``, or with the share that was cached: ``warm, 100 % cached`` (or ``cold, 100 %
    cached`` where the drop cannot work, as on tmpfs, whose pages are the storage)."""
    state = "cold" if r.cold else "warm"
    if r.cached is None or not r.bytes or (r.cold and not r.cached):
        return state
    return f"{state}, {min(100.0, 100 * r.cached / r.bytes):.0f} % cached"


def table(results: Sequence[ReadSpeed]) -> str:
    """An aligned plain-text table of :func:`survey` results, one row per path.

    Returns
    -------
    str
        Columns label, kind, files, GB, s, MB/s, cache (cold or warm, and the share of the
        bytes that was in the page cache when reading began); then one line per file that
        failed.
    """
    head = ("label", "kind", "files", "GB", "s", "MB/s", "cache")
    rows = [
        (
            r.label,
            r.kind,
            f"{r.files:,}",
            f"{r.bytes / 1e9:.2f}",
            f"{r.seconds:.2f}",
            f"{r.mb_per_s:,.0f}",
            _cache(r),
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    right = (False, False, True, True, True, True, False)

    def line(row: tuple[str, ...]) -> str:
        cells = [
            f"{c:>{w}}" if r else f"{c:<{w}}" for c, w, r in zip(row, widths, right, strict=True)
        ]
        return "  ".join(cells).rstrip()

    out = [line(head), "  ".join("-" * w for w in widths), *map(line, rows)]
    for r in results:
        out += [f"{r.label}: {p}: {e}" for p, e in r.failed]
    return "\n".join(out) + "\n"


def plot(results: Sequence[ReadSpeed], ax: Axes | None = None) -> Axes:
    """A horizontal bar chart of the MB/s of :func:`survey` results, first at the top.

    Parameters
    ----------
    results : sequence of ReadSpeed
    ax : matplotlib Axes, optional
        Where to draw; default a new figure (``matplotlib.pyplot.subplots``).

    Returns
    -------
    matplotlib Axes
    """
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(7, 1 + 0.5 * max(1, len(results))), layout="constrained")
    names = [f"{r.label}\n({r.kind}, {_cache(r)})" for r in results]
    speeds = [r.mb_per_s for r in results]
    bars = ax.barh(range(len(results)), speeds, color="tab:blue")
    ax.bar_label(bars, labels=[f"{s:,.0f}" for s in speeds], padding=3)
    ax.set_yticks(range(len(results)), names)
    ax.invert_yaxis()
    ax.set_xlabel("read throughput (MB/s)")
    ax.set_xlim(0, max(speeds, default=0) * 1.15 or 1)
    ax.set_title("Storage read throughput")
    ax.grid(axis="x", alpha=0.3)
    return ax
