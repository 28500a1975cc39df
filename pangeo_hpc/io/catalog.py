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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.errors import DataNotFoundError, InputError
from pangeo_hpc.extras import require
from pangeo_hpc.inputs.periods import Month
from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.io import fingerprint, scan_cache
from pangeo_hpc.io.chunk_table import ChunkTable
from pangeo_hpc.io.hdf5_meta import (
    FileInfo,
    Head,
    cache_entry,
    from_cache_entry,
    prefetch_head,
    scan_file,
    scan_like,
)
from pangeo_hpc.io.layout import find_files
from pangeo_hpc.io.reader import H5Source, RefSource, S3H5Source, Source
from pangeo_hpc.io.references import build_index, load_refs
from pangeo_hpc.io.s3_objects import map_threads, objects_to_index
from pangeo_hpc.s3.options import S3Options, is_s3
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

    Examples
    --------
    >>> import dask, tempfile
    >>> from pangeo_hpc.demo import DemoSpec
    >>> from pangeo_hpc.demo.writer import write_month
    >>> from pangeo_hpc.inputs.periods import months
    >>> tmp, spec = tempfile.TemporaryDirectory(), DemoSpec(resolution=10.0).resolved()
    >>> sst, t2m = "sea_surface_temperature", "air_temperature_at_2_metres"
    >>> for m in months("2000-01", "2000-02"):  # two months of demo files, 10 degree cells
    ...     _ = write_month(tmp.name, spec, sst, m)
    >>> with dask.config.set({"pangeo-hpc.catalog.cache": False}):  # no scan cache kept
    ...     cat = catalog(tmp.name, sst, "2000-01", "2000-02")
    >>> len(cat.files), cat.access, cat.head.dims, type(cat.sources[0]).__name__
    (2, 'local', ('time0', 'lat', 'lon'), 'H5Source')
    >>> tmp.cleanup()
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

    Returns
    -------
    Catalog
        The files and how to read them.

    Examples
    --------
    >>> import dask, tempfile
    >>> from pangeo_hpc.demo import DemoSpec
    >>> from pangeo_hpc.demo.writer import write_month
    >>> from pangeo_hpc.inputs.periods import months
    >>> tmp, spec = tempfile.TemporaryDirectory(), DemoSpec(resolution=10.0).resolved()
    >>> sst, t2m = "sea_surface_temperature", "air_temperature_at_2_metres"
    >>> for m in months("2000-01", "2000-02"):  # two months of demo files, 10 degree cells
    ...     _ = write_month(tmp.name, spec, sst, m)
    >>> with dask.config.set({"pangeo-hpc.catalog.cache": False}):  # no scan cache kept
    ...     cat = catalog(tmp.name, sst, "2000-01", "2000-02")
    >>> [f.removeprefix(tmp.name) for f in cat.files]
    ['/2000/01/data/sea_surface_temperature.nc', '/2000/02/data/sea_surface_temperature.nc']
    >>> [info.length for info in cat.infos]  # daily steps
    [31, 29]
    >>> tmp.cleanup()
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

    described = map_threads(describe, range(len(urls)))
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
