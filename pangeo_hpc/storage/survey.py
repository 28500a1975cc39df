"""How fast each storage path reads: MB/s of large reads in parallel threads, cold or warm.

:func:`read_speed` reads the first ``max_bytes`` of whole files under a folder (local disk,
NFS, Lustre, a FUSE mount such as rclone) or an ``s3://bucket/prefix`` and times the reads
alone; :func:`survey` does it for several paths, one after the other, and :func:`table`
and :func:`plot` show the results side by side, as in an EC2 storage comparison.

Files are read as a warm-up reads them (:func:`~pangeo_hpc.storage.pagecache.read_through`:
sequential reads of ``block_size`` bytes, one file per thread); objects are fetched with
GET requests of at most ``block_size`` bytes (ranged GETs for larger objects), ``threads``
in flight, through obstore with the options of :class:`~pangeo_hpc.s3.options.S3Options`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.checks import check_path
from pangeo_hpc.inputs.sizes import parse_size
from pangeo_hpc.s3.options import S3Options, is_s3, split_url
from pangeo_hpc.storage.readspeed import MISSING, ReadSpeed, read_files, read_s3
from pangeo_hpc.tables import RULE, text_table

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["ReadSpeed", "plot", "read_speed", "survey", "table"]

Paths = str | Path | Sequence[str | Path] | Mapping[str, str | Path]


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
        return read_s3(str(path), budget, n, bs, s3_options or S3Options.resolve())
    return read_files(path, budget, n, bs, cold)


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

    Examples
    --------
    >>> results = survey(
    ...     {"scratch": "/scratch/era5", "home": "/home/me/era5"}, max_bytes="1GB"
    ... )  # doctest: +SKIP
    >>> print(table(results))  # doctest: +SKIP
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
            raise InputError(MISSING.format(path=str(p)))
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


def _cache(r: ReadSpeed) -> str:
    """``cold``, or with the share that was cached: ``warm, 100 % cached`` (or ``cold, 100 %
    cached`` where the drop cannot work, as on tmpfs, whose pages are the storage)."""
    state = "cold" if r.cold else "warm"
    if r.cached is None or not r.bytes or (r.cold and not r.cached):
        return state
    return f"{state}, {min(100.0, 100 * r.cached / r.bytes):.0f} % cached"


def table(results: Sequence[ReadSpeed]) -> str:
    """An aligned plain-text table of :func:`survey` results, one row per path.

    Parameters
    ----------
    results : Sequence[ReadSpeed]
        What :func:`survey` measured.

    Returns
    -------
    str
        Columns label, kind, files, GB, s, MB/s, cache (cold or warm, and the share of the
        bytes that was in the page cache when reading began); then one line per file that
        failed.

    Examples
    --------
    >>> from pangeo_hpc.storage.readspeed import ReadSpeed
    >>> r = ReadSpeed("/scratch/era5", "lustre", files=4, bytes=800_000_000, seconds=2.0,
    ...               cold=True, method="pread", threads=8, block_size=16 * 2**20, cached=0)
    >>> print(table([r]))
    label          kind    files    GB     s  MB/s  cache
    -------------  ------  -----  ----  ----  ----  -----
    /scratch/era5  lustre      4  0.80  2.00   400  cold
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
    right = (False, False, True, True, True, True, False)
    out = text_table([head, RULE, *rows], right=right)
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

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from pangeo_hpc.storage.readspeed import ReadSpeed
    >>> r = ReadSpeed("/scratch/era5", "lustre", files=4, bytes=800_000_000, seconds=2.0,
    ...               cold=True, method="pread", threads=8, block_size=16 * 2**20)
    >>> plot([r]).get_xlabel()
    'read throughput (MB/s)'
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
