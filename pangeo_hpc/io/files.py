"""Open any CF NetCDF4/HDF5 files, concatenated along time, as one lazy dataset.

Daily files (OISST: ``sst(time, zlev, lat, lon)``, one step a file), yearly files and
multi-decade CMIP files (``tos_Omon_..._185001-201412.nc``) are read as
:func:`~pangeo_hpc.io.era5.open_era5` reads the era5-pds tree: each file's metadata are
scanned once (h5py; kept in the scan cache, :mod:`pangeo_hpc.io.scan_cache`, keyed by the
files' common folder and the variables), the data are one Dask array of whole-field chunks
that never span two files, read without xarray's lock. Each file's packing
(``scale_factor``, ``add_offset``, ``_FillValue``) and time units are its own; files are put
in order by their first time, not their names.

Handled: regular grids with 1-D coordinates, curvilinear ones (``lat(y, x)``, ``lon(y, x)``
named by the variable's ``coordinates`` attribute: read from the first file, their
checksum in each file's scan, so files on other centres are refused; the cells' corners
are not read), any CF calendar (``noleap``,
``360_day``: cftime dates), time bounds (``time_bnds``). Local or mounted files only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from pangeo_hpc import config
from pangeo_hpc.errors import DataNotFoundError, InputError
from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.io import fingerprint, scan_cache
from pangeo_hpc.io.assemble import (
    clip_spans,
    decode_times,
    file_spans,
    lazy_dataset,
    merge_variables,
    time_pieces,
    variable_names,
)
from pangeo_hpc.io.globbing import expand
from pangeo_hpc.io.hdf5_meta import (
    FileInfo,
    Head,
    cache_entry,
    from_cache_entry,
    prefetch_head,
    scan_variables,
)
from pangeo_hpc.io.reader import H5Source

__all__ = ["open_files"]

_MONTH = re.compile(r"^(\d{4})(?:-(\d{1,2}))?$")
Month = tuple[int, int]


def open_files(
    pattern: str | os.PathLike | Sequence[str | os.PathLike],
    variables: str | Sequence[str],
    start: str | None = None,
    end: str | None = None,
    *,
    time_chunk_mb: float | None = None,
) -> xr.Dataset:
    """Open ``variables`` of the NetCDF4/HDF5 files ``pattern`` matches, along time.

    Parameters
    ----------
    pattern : str, path or list of them
        A glob of files (``"/data/oisst/*/oisst-avhrr-v02r01.*.nc"``; ``**`` matches any
        folders), a file, or a list of these.
    variables : str or list of str
        Variable names as in the files (``"sst"``, ``["uas", "vas"]``). Several must share
        the grid and the time axis; they may sit in the same files or in files of their own
        (CMIP: one variable a file).
    start, end : str, optional
        First and last month, ``YYYY-MM`` (a bare year means January or December): files
        whose times overlap them are read, then exactly those months are kept. Default: all.
    time_chunk_mb : float, optional
        Target size of one Dask chunk (whole fields, never across files). Default: config
        ``pangeo-hpc.data.time-chunk-mb``.

    Returns
    -------
    Dataset
        The variables along the files' time axis (``time``, as the files name it) with
        the files' coordinates and attributes; a time bounds variable that the time axis
        names (``time_bnds``) as a coordinate, decoded to dates. Size-1 dimensions between
        time and the horizontal grid (OISST's ``zlev``) are dropped and their coordinate
        kept as a scalar, so ``sst(time, zlev, lat, lon)`` gives ``sst(time, lat, lon)``.
        ``encoding``: ``source_files`` (every file read, in time order per variable),
        ``source_bytes``, ``source_stamps`` (each file's
        :class:`~pangeo_hpc.inputs.stamps.Stamp`), ``source_access`` (``"local"``).

    Raises
    ------
    DataNotFoundError
        Nothing matches (the message says which folder exists and what it holds), or a
        variable is in none of the files (the message lists theirs).
    InputError
        Files overlap in time, differ in grid, units or calendar, or variables differ in
        grid or time axis: the message names two files and how they differ.

    Examples
    --------
    >>> ds = open_files(
    ...     "/data/oisst/*/oisst-avhrr-v02r01.*.nc", "sst", "2020-01", "2020-12"
    ... )  # doctest: +SKIP
    """
    names = variable_names(variables, "variables")
    files = expand(pattern)
    chunk_mb = float(config.get("data.time-chunk-mb", time_chunk_mb))
    if chunk_mb <= 0:
        raise InputError(f"time_chunk_mb={chunk_mb} must be positive, e.g. 128")
    period = _period(start, end)
    scans, holds, stamps = _scan(files, names)
    for path in files:
        if not any(v in scans[path] for v in names):
            raise DataNotFoundError(
                f"{path!r} holds none of variables={names}: it holds {holds[path]}; pass "
                "those names or a pattern that leaves it out",
                param="variables",
            )
    parts = []
    used: list[str] = []
    spans = []
    for v in names:
        mine = [f for f in files if v in scans[f]]
        if not mine:
            raise DataNotFoundError(
                f"variable {v!r} is in none of the {len(files)} files of {_shown(pattern)}: "
                f"{files[0]!r} holds {holds[files[0]]}; pass one of those",
                param="variables",
            )
        ds, kept = _one_variable(v, mine, [scans[f][v] for f in mine], period, chunk_mb)
        parts.append((v, ds, kept[0][2]))
        used += [f for _, _, f in kept]
        spans.append(kept)
    ds = parts[0][1] if len(parts) == 1 else merge_variables(parts)
    ds.encoding["source_files"] = list(dict.fromkeys(used))  # a file of u and v once
    ds.encoding["source_bytes"] = int(sum(stamps[f].size for f in dict.fromkeys(used)))
    ds.encoding["source_stamps"] = {f: stamps[f] for f in dict.fromkeys(used)}
    ds.encoding["source_access"] = "local"
    ds.encoding["source_pieces"] = time_pieces(spans, ds.sizes[ds[names[0]].dims[0]])
    return ds


def _one_variable(
    variable: str,
    files: list[str],
    infos: list[FileInfo],
    period: tuple[Month | None, Month | None] | None,
    chunk_mb: float,
) -> tuple[xr.Dataset, list[tuple[int, int, str]]]:
    """``variable`` of ``files``, in time order, within ``period``; and the files read, each
    with its steps on the time axis (:func:`~pangeo_hpc.io.assemble.file_spans`)."""
    for f, info in zip(files[1:], infos[1:], strict=True):
        if info.grid != infos[0].grid:
            raise InputError(
                f"{f!r} has {variable} on the grid {info.grid} but {files[0]!r} on "
                f"{infos[0].grid}: all files must share one grid; leave the odd files out of "
                "the pattern or regrid them (cdo remapbil)"
            )
        if info.units != infos[0].units:
            raise InputError(
                f"{f!r} has {variable} in units {info.units!r} but {files[0]!r} in "
                f"{infos[0].units!r}: all files must share the units; convert one set first "
                "(cdo mulc/addc, then setattribute)"
            )
    firsts_lasts = decode_times(
        infos[0].time_name, [i.times[[0, -1]] for i in infos], infos, {}, files
    )
    spans = firsts_lasts.reshape(len(files), 2)
    order = sorted(range(len(files)), key=lambda k: spans[k, 0])
    files, infos, spans = [files[k] for k in order], [infos[k] for k in order], spans[order]
    for k in range(1, len(files)):
        if spans[k, 0] <= spans[k - 1, 1]:
            raise InputError(
                f"{files[k]!r} starts at {spans[k, 0]}, not after the end of {files[k - 1]!r} "
                f"({spans[k - 1, 1]}): the files overlap or repeat times; leave one out of "
                "the pattern"
            )
    if period is not None:
        first, last = spans[0, 0], spans[-1, 1]
        asked = (period[0] or _month_of(first), period[1] or _month_of(last))
        lo, hi = _instant(first, asked[0]), _instant(first, _next(asked[1]))
        if lo < _instant(first, _month_of(first)) or hi > _instant(first, _next(_month_of(last))):
            raise DataNotFoundError(
                f"the files of {variable!r} hold {_text(_month_of(first))}.."
                f"{_text(_month_of(last))}, not {_text(asked[0])}..{_text(asked[1])}: "
                "choose a period inside it with start=/end=",
                param=("start", "end"),
            )
        keep = [k for k in range(len(files)) if spans[k, 1] >= lo and spans[k, 0] < hi]
        if not keep:
            raise DataNotFoundError(
                f"no file of {variable!r} holds times in {_text(asked[0])}..{_text(asked[1])}"
                f" (a gap between {files[0]!r} and {files[-1]!r}): choose another period "
                "with start=/end=",
                param=("start", "end"),
            )
        files, infos = [files[k] for k in keep], [infos[k] for k in keep]
    head = Head.of(files[0], variable)
    sources = [H5Source(f, variable) for f in files]
    ds = lazy_dataset(variable, files, infos, sources, head, chunk_mb, name="open_files")
    spans = file_spans(files, [i.length for i in infos])
    if period is not None:  # the exact months, within the first and last file
        t = ds[head.dims[0]].values
        first, stop = int((t < lo).sum()), int((t < hi).sum())
        ds = ds.isel({head.dims[0]: slice(first, stop)})
        spans = clip_spans(spans, first, stop)
    single = [d for d in head.dims[1:-2] if ds.sizes[d] == 1]
    return ds.isel(dict.fromkeys(single, 0)), spans


def _period(start: str | None, end: str | None) -> tuple[Month | None, Month | None] | None:
    """``start`` and ``end`` as (year, month), ``None`` where not given (the files'
    first or last month); ``None`` for all the files hold."""
    if start is None and end is None:
        return None
    lo = _parse_month(start, "start", end=False) if start is not None else None
    hi = _parse_month(end, "end", end=True) if end is not None else None
    if lo is not None and hi is not None and hi < lo:
        raise InputError(
            f"start={start!r} comes after end={end!r}: the period is empty; swap them",
            param=("start", "end"),
        )
    return lo, hi


def _parse_month(value: object, name: str, *, end: bool) -> Month:
    match = _MONTH.match(str(value)) if isinstance(value, str | int) else None
    if match is None:
        raise InputError(
            f"{name}={value!r} is not a month: write it as YYYY-MM, for example 1991-01",
            param=name,
        )
    month = int(match[2]) if match[2] else (12 if end else 1)
    if not 1 <= month <= 12:
        raise InputError(f"{name}={value!r} has month {month}: months run from 01 to 12")
    return int(match[1]), month


def _next(month: Month) -> Month:
    year, m = month
    return (year + 1, 1) if m == 12 else (year, m + 1)


def _month_of(value: Any) -> Month:
    """(year, month) of a decoded time: ``numpy.datetime64`` or cftime."""
    if isinstance(value, np.datetime64):
        text = str(value.astype("datetime64[M]"))
        return int(text[:-3]), int(text[-2:])
    return value.year, value.month


def _instant(like: Any, month: Month) -> Any:
    """The first instant of ``month`` as the same kind of date as ``like``."""
    year, m = month
    if isinstance(like, np.datetime64):
        return np.datetime64(f"{year:04d}-{m:02d}-01", "ns")
    import cftime

    return cftime.datetime(year, m, 1, calendar=like.calendar)


def _text(month: Month) -> str:
    return f"{month[0]:04d}-{month[1]:02d}"


def _shown(pattern: object) -> str:
    return repr(os.fspath(pattern)) if isinstance(pattern, str | os.PathLike) else "the list"


def _scan(
    files: list[str], names: list[str]
) -> tuple[dict[str, dict[str, FileInfo]], dict[str, list[str]], dict[str, Stamp]]:
    """Each file's scans of ``names`` (those it holds), the variables it holds and its
    size: from the scan cache where the file has not changed, else by one full scan (the
    files need not be laid out alike, so no low-level scan as for era5-pds trees)."""
    root = Path(os.path.commonpath([os.path.dirname(f) for f in files]))
    cache_file = scan_cache.cache_path(root, "\0".join(names), kind="files")
    cached = scan_cache.load(cache_file)
    rel = {f: os.path.relpath(f, root) for f in files}
    entries = {f: cached.get(rel[f]) for f in files}

    def stat(path: str) -> Stamp:
        stamp = fingerprint.stamp(path)
        entry = entries[path]
        if entry is None or entry["stamp"] != stamp.identity:
            prefetch_head(path)
        return stamp

    with ThreadPoolExecutor(16) as pool:
        stamps = dict(zip(files, pool.map(stat, files), strict=True))
    scans: dict[str, dict[str, FileInfo]] = {}
    holds: dict[str, list[str]] = {}
    changed = False
    for f in files:
        entry, stamp = entries[f], stamps[f]
        if entry is None or entry["stamp"] != stamp.identity:
            infos, holds[f] = scan_variables(f, names)
            infos = {v: i for v, i in infos.items() if i.length}  # an empty file adds nothing
            entries[f] = {
                "stamp": stamp.identity,
                "holds": holds[f],
                "vars": {v: cache_entry(i, stamp) for v, i in infos.items()},
            }
            scans[f] = infos
            changed = True
        else:
            holds[f] = entry["holds"]
            scans[f] = {v: from_cache_entry(e) for v, e in entry["vars"].items()}
    if changed:
        scan_cache.save(cache_file, {**cached, **{rel[f]: entries[f] for f in files}})
    return scans, holds, stamps
