"""Find the monthly files of one ERA5 variable and decide how each will be read.

A tree in the era5-pds layout may be a local or mounted folder or an ``s3://bucket/prefix``.
:func:`catalog` returns, per file, its time axis, grid and HDF5 chunking (read from the
file's metadata or from its byte-range index) and the source that workers read it with
(:mod:`pangeo_hpc.io.reader`). Only the first file is opened with xarray, for coordinates and
attributes.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.errors import DataNotFoundError, InputError
from pangeo_hpc.extras import require
from pangeo_hpc.inputs.periods import Month, month_ranges, months, parse_month
from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.io import fingerprint, scan_cache
from pangeo_hpc.io.hdf5_meta import (
    FileInfo,
    Head,
    cache_entry,
    from_cache_entry,
    prefetch_head,
    scan_file,
    scan_like,
)
from pangeo_hpc.io.layout import find_files, key_month
from pangeo_hpc.io.reader import H5Source, RefSource, S3H5Source, Source
from pangeo_hpc.io.references import ChunkTable, build_index, load_refs
from pangeo_hpc.s3.failures import explain
from pangeo_hpc.s3.options import S3Options, is_s3, split_url
from pangeo_hpc.s3.waiting import Notice

INDEX_MODES = ("auto", "build", "never")


@dataclass
class Catalog:
    """The files of one variable and period, and how each is read.

    Attributes
    ----------
    root : str
        The tree's folder or ``s3://`` URL.
    files : list of str
        Paths or URLs, one per month, in time order.
    stamps : list of Stamp
        The identity of each file (its size too), as the catalog found it: what the
        caches made from it are keyed by.
    infos : list of FileInfo
        Their time axes, grids and chunking.
    sources : list of Source
        What reads each file on the workers.
    head : Head
        Dimensions, coordinates and attributes, from the first file.
    access : str
        ``local``, ``s3-indexed`` (every file through its index), ``s3-direct`` (none) or
        ``s3-mixed``.
    """

    root: str
    files: list[str]
    stamps: list[Stamp]
    infos: list[FileInfo]
    sources: list[Source]
    head: Head
    access: str

    @property
    def sizes(self) -> list[int]:
        """Bytes of each file as stored."""
        return [s.size for s in self.stamps]


def catalog(
    root: str | Path,
    variable: str,
    start: str | None,
    end: str | None,
    *,
    s3: S3Options | None = None,
    index: str | None = None,
    client: Any = None,
) -> Catalog:
    """The files of ``variable`` from ``start`` to ``end`` under ``root``.

    Parameters
    ----------
    root : str or path
        A folder or ``s3://bucket/prefix`` in the era5-pds layout.
    variable : str
        ERA5 variable name.
    start, end : str, optional
        First and last month; default: what the tree holds.
    s3 : S3Options, optional
        How to reach S3; default from dask config ``pangeo-hpc.s3``.
    index : {"auto", "build", "never"}, optional
        S3 only: read through byte-range indexes where cached (auto), build the missing ones
        first (build), or read every file through h5py (never). Default: config
        ``pangeo-hpc.s3.index``.
    client : distributed.Client, optional
        Where ``build`` scans the objects: this client's workers; default this process (a
        few threads).
    """
    if is_s3(str(root)):
        require("s3", f"reading {str(root)!r}")
        mode = config.get("s3.index", index)
        if mode not in INDEX_MODES:
            raise InputError(f"index={mode!r} must be one of {', '.join(INDEX_MODES)}")
        opts = s3 or S3Options.resolve()
        return _s3_catalog(str(root), variable, start, end, opts, mode, client)
    if str(root).startswith(("gs://", "az://", "abfs://", "http://", "https://")):
        raise InputError(
            f"source {str(root)!r}: only s3:// URLs and folders are supported; mount other "
            "stores (rclone mount) and pass the path"
        )
    return _local_catalog(Path(root), variable, start, end)


@functools.lru_cache(maxsize=16)
def _first_head(path: str, variable: str, stamp: tuple[int, ...]) -> Head:
    """The first file's :class:`Head`, read once per process while the file is unchanged
    (``stamp``: its :attr:`Stamp.identity`): a notebook that opens a tree again reads no header.
    (The datasets made from it get their own attributes: xarray copies them.)"""
    return Head.of(path, variable)


def _local_catalog(root: Path, variable: str, start: str | None, end: str | None) -> Catalog:
    if start is None or end is None:
        first, last = _available_span(root, variable)
        start, end = start or first, end or last
    files = [str(p) for p in find_files(root, variable, start, end)]
    cache_file = scan_cache.cache_path(root, variable)
    cached = scan_cache.load(cache_file)
    names = {f: os.path.relpath(f, root) for f in files}  # the same from any working folder
    entries = {f: cached.get(names[f]) for f in files}

    def stat(path: str) -> Stamp:
        stamp = fingerprint.stamp(path)
        entry = entries[path]
        if entry is None or entry["stamp"] != stamp.identity:
            prefetch_head(path)  # to be scanned: start reading its metadata now
        return stamp

    with ThreadPoolExecutor(16) as pool:  # stat() releases the GIL: metadata servers in parallel
        stamps = list(pool.map(stat, files))
    infos: list[FileInfo] = []
    for f, stamp in zip(files, stamps, strict=True):
        entry = entries[f]
        if entry is not None and entry["stamp"] == stamp.identity:
            infos.append(from_cache_entry(entry))
            continue
        info = scan_file(f, variable) if not infos else scan_like(f, variable, infos[0])
        infos.append(info)
        entries[f] = cache_entry(info, stamp)
    if any(entries[f] is not cached.get(names[f]) for f in files):
        scan_cache.save(cache_file, {**cached, **{names[f]: entries[f] for f in files}})
    head = _first_head(files[0], variable, tuple(stamps[0].identity))
    return Catalog(
        root=str(root),
        files=files,
        stamps=stamps,
        infos=infos,
        sources=[H5Source(p, variable) for p in files],
        head=head,
        access="local",
    )


def _s3_catalog(
    root: str,
    variable: str,
    start: str | None,
    end: str | None,
    opts: S3Options,
    mode: str,
    client: Any,
) -> Catalog:
    stamps = objects_to_index(root, opts, variable=variable, start=start, end=end)
    urls = [s.path for s in stamps]
    if mode == "build":
        report = build_index(stamps, opts, client=client)
        if report.failed:
            url, why = report.failed[0]
            raise InputError(f"could not index {url!r}: {why}; pass index='never' to read it")
    refs = [load_refs(s) if mode != "never" else None for s in stamps]

    fs = opts.filesystem()
    with (
        Notice(opts, f"reading the header of {urls[0]}"),
        fs.open(urls[0], "rb", cache_type="blockcache", block_size=4 << 20) as fo,
    ):
        infos = [scan_file(fo, variable, name=urls[0])]
        head = Head.of(fo, variable)
    time_dim = head.dims[0]

    def describe(i: int) -> tuple[FileInfo, Source]:
        url = urls[i]
        if refs[i] is not None:
            table = ChunkTable.from_refs(refs[i], variable)
            times = RefSource(url, ChunkTable.from_refs(refs[i], time_dim), opts).read(
                (slice(None),)
            )
            first = infos[0]
            bounds = None
            if first.bounds_name:  # forecast steps: their bounds through the index too
                btable = ChunkTable.from_refs(refs[i], first.bounds_name)
                bounds = RefSource(url, btable, opts).read((slice(None), slice(None)))
            info = FileInfo(
                length=table.shape[0],
                field_shape=table.shape[1:],
                dtype=table.dtype,
                times=times,
                chunk_time=table.chunks[0],
                decoding=first.decoding,
                time_name=first.time_name,
                bounds=bounds,
                bounds_name=first.bounds_name if bounds is not None else "",
                units=first.units,
                time_units=first.time_units,
                calendar=first.calendar,
                grid=first.grid,
            )
            return info, RefSource(url, table, opts)
        if i == 0:
            return infos[0], S3H5Source(url, variable, opts)
        with fs.open(url, "rb", cache_type="blockcache", block_size=4 << 20) as fo:
            return scan_file(fo, variable, name=url), S3H5Source(url, variable, opts)

    described = _map(describe, range(len(urls)))
    indexed = sum(r is not None for r in refs)
    if 0 < indexed < len(urls) or (indexed == 0 and mode == "auto" and len(urls) > 1):
        warnings.warn(
            f"{len(urls) - indexed} of {len(urls)} files under {root!r} have no byte-range "
            "index and are read through HDF5, which is several times slower over S3: open "
            "them once with index='build' to build the indexes",
            stacklevel=4,
        )
    return Catalog(
        root=root,
        files=urls,
        stamps=list(stamps),
        infos=[d[0] for d in described],
        sources=[d[1] for d in described],
        head=head,
        access={0: "s3-direct", len(urls): "s3-indexed"}.get(indexed, "s3-mixed"),
    )


def objects_to_index(
    url: str,
    opts: S3Options,
    *,
    variable: str | None = None,
    start: str | None = None,
    end: str | None = None,
    suffixes: Sequence[str] = (".nc", ".nc4", ".h5", ".hdf5"),
) -> list[Stamp]:
    """The objects under ``url`` that ``index`` makes byte-range indexes for.

    With ``variable``: its monthly files in the era5-pds layout from ``start`` to ``end``
    (default: all there are). Without: every object whose name ends in one of ``suffixes``;
    with ``start`` or ``end`` too, those of every variable in that period (keys in the
    layout ``pangeo-hpc.data.layout``).
    """
    if variable is not None:
        if start is None or end is None:
            first, last = _s3_span(url, variable, opts)
            start, end = start or first, end or last
        bucket, prefix = split_url(url)
        base = f"s3://{bucket}/{prefix}".rstrip("/")
        pattern = config.get("data.layout")
        wanted = months(start, end)
        urls = [
            f"{base}/" + pattern.format(year=m.year, month=m.month, variable=variable)
            for m in wanted
        ]
        what = f"HEAD of {len(urls)} object{'s' * (len(urls) != 1)} under {url}"
        with Notice(opts, what) as notice:

            def head(u: str) -> Stamp | None:
                found = _head(u, opts)
                notice.answered()
                return found

            heads = _map(head, urls)
        missing = [m for m, h in zip(wanted, heads, strict=True) if h is None]
        if missing:
            _check_bucket(url, opts)
            call = _inventory_call(url)
            raise DataNotFoundError(
                f"{len(missing)} of {len(wanted)} months of {variable!r} are missing under "
                f"{url!r} ({month_ranges(missing)}): choose a period that exists with "
                f"start=/end= ({call} lists what is there)",
                param=("start", "end"),
                commands={call: ["inventory", url]},
            )
        return [h for h in heads if h is not None]
    from pangeo_hpc.s3.listing import list_objects

    bucket, prefix = split_url(url)
    found = [
        Stamp.of_object(f"s3://{bucket}/{o.key}", o.size, o.etag, o.version)
        for o in list_objects(url, opts)
        if o.key.endswith(tuple(suffixes))
    ]
    if not found:
        call = _inventory_call(url)
        raise DataNotFoundError(
            f"no NetCDF4/HDF5 objects ({', '.join(suffixes)}) under {url!r}: check the prefix "
            f"({call})",
            commands={call: ["inventory", url]},
        )
    if start is None and end is None:
        return found
    # a period without a variable: every variable's files of those months (era5-pds layout)
    dated = []
    for stamp in found:
        key = stamp.path[len(f"s3://{bucket}/") :]
        hit = key_month(key[len(prefix) :].lstrip("/") if prefix else key)
        if hit is not None:
            dated.append((hit[0], stamp))
    if not dated:
        raise DataNotFoundError(
            f"no objects under {url!r} are in the layout {config.get('data.layout')!r}, so "
            "start=/end= select nothing: drop them to index every NetCDF4 object",
            param=("start", "end"),
        )
    first = parse_month(start, name="start") if start else min(m for m, _ in dated)
    last = parse_month(end, name="end", end=True) if end else max(m for m, _ in dated)
    months(str(first), str(last))  # the end must not come before the start
    chosen = [s for m, s in dated if first <= m <= last]
    if not chosen:
        call = _inventory_call(url)
        raise DataNotFoundError(
            f"no objects under {url!r} between {first} and {last}: choose a period that "
            f"exists ({call} lists what is there)",
            commands={call: ["inventory", url]},
        )
    return chosen


def _inventory_call(url: str) -> str:
    """The call that lists what is under ``url``, for messages (the CLI's ``inventory``)."""
    return f"pangeo_hpc.storage.inventory.inventory({url!r})"


def _check_bucket(url: str, opts: S3Options) -> None:
    """Raise the usual message if the bucket of ``url`` is missing or refuses access."""
    import obstore

    bucket, prefix = split_url(url)
    try:
        with Notice(opts, f"listing {url}"):
            obstore.list_with_delimiter(opts.store(bucket), prefix or None)
    except Exception as exc:
        raise (explain(exc, url, opts) or exc) from exc


def _head(url: str, opts: S3Options) -> Stamp | None:
    """The stamp of ``url`` (size, ETag, version), or ``None`` if it does not exist."""
    import obstore
    from obstore.exceptions import NotFoundError

    bucket, key = split_url(url)
    try:
        meta = obstore.head(opts.store(bucket), key)
    except (NotFoundError, FileNotFoundError):  # obstore raises the builtin for a 404
        return None
    except Exception as exc:
        raise (explain(exc, url, opts) or exc) from exc
    return Stamp.of_object(url, meta["size"], meta.get("e_tag"), meta.get("version"))


def _s3_span(root: str, variable: str, opts: S3Options) -> tuple[str, str]:
    """First and last month of ``variable`` under ``root``, from a listing."""
    from pangeo_hpc.s3.listing import list_objects

    prefix = split_url(root)[1]
    pattern = config.get("data.layout")
    found: list[Month] = []
    for obj in list_objects(root, opts):
        rel = obj.key[len(prefix) :].lstrip("/") if prefix else obj.key
        hit = key_month(rel, variable)
        if hit is not None:
            found.append(hit[0])
    if not found:
        call = _inventory_call(root)
        raise DataNotFoundError(
            f"no {variable!r} files under {root!r} in the layout {pattern!r}: check the "
            f"bucket and prefix ({call})",
            commands={call: ["inventory", root]},
        )
    found.sort()
    return str(found[0]), str(found[-1])


def _map(fn: Any, items: Sequence[Any] | range) -> list[Any]:
    """``[fn(x) for x in items]`` on a few threads (metadata reads wait on I/O)."""
    items = list(items)
    if len(items) < 4:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(fn, items))


def _available_span(root: Path, variable: str) -> tuple[str, str]:
    found = sorted(root.glob(f"[0-9][0-9][0-9][0-9]/[0-9][0-9]/data/{variable}.nc"))
    if not found:
        raise DataNotFoundError(
            f"no {variable!r} files under {str(root)!r}: pass source= with the root of a tree "
            "in the era5-pds layout ({YYYY}/{MM}/data/VARIABLE.nc)",
            param="source",
        )
    ms = [Month(int(p.parts[-4]), int(p.parts[-3])) for p in found]
    return str(ms[0]), str(ms[-1])
