"""What one NetCDF4/HDF5 file holds of a variable: shape, dtype, time values, HDF5 chunking
and CF decoding (:class:`FileInfo`), and the first file's coordinates and attributes
(:class:`Head`); read with h5py, for the first file in full and for the others with the
low-level API, and kept in the per-tree scan cache (:mod:`pangeo_hpc.io.scan_cache`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import h5py
import numpy as np
import xarray as xr

from pangeo_hpc.errors import DataNotFoundError, InputError
from pangeo_hpc.io import scan_cache
from pangeo_hpc.io.reader import Decoding

__all__ = [
    "HEAD_BYTES",
    "FileInfo",
    "Head",
    "cache_entry",
    "from_cache_entry",
    "prefetch_head",
    "scan_file",
    "scan_like",
]


@dataclass(frozen=True)
class FileInfo:
    """What a reader needs to know of one file's variable."""

    length: int
    field_shape: tuple[int, ...]
    dtype: np.dtype
    times: np.ndarray
    chunk_time: int
    decoding: Decoding
    time_name: str = ""


@dataclass(frozen=True)
class Head:
    """What the first file tells of all: dimension names, grid coordinates, attributes."""

    dims: tuple[str, ...]
    coords: dict[str, xr.DataArray]
    var_attrs: dict[str, Any]
    time_attrs: dict[str, Any]
    attrs: dict[str, Any]

    @classmethod
    def of(cls, file: Any, variable: str) -> Head:
        """Read from ``file`` (a path or an open binary file); loads only the coordinates."""
        with xr.open_dataset(file, engine="h5netcdf", decode_times=False) as ds:
            dims = tuple(ds[variable].dims)
            return cls(
                dims=dims,
                coords={d: ds[d].load() for d in dims[1:] if d in ds.variables},
                var_attrs=dict(ds[variable].attrs),
                time_attrs=dict(ds[dims[0]].attrs) if dims[0] in ds.variables else {},
                attrs=dict(ds.attrs),
            )


def scan_file(path: Any, variable: str, *, name: str | None = None) -> FileInfo:
    """Shape, dtype, time values, HDF5 chunking and CF decoding of ``variable`` in ``path``
    (a path or an open binary file)."""
    name = name or str(path)
    try:
        with h5py.File(path, "r") as f:
            return _describe(f, variable, name)
    except OSError as exc:
        raise InputError(
            f"{name!r} is not a readable NetCDF4/HDF5 file ({exc}): it may be truncated or "
            "still being copied; restore it or remove that month from the period"
        ) from exc


def _describe(f: h5py.File, variable: str, path: str) -> FileInfo:
    if variable not in f:
        names = sorted(k for k, v in f.items() if isinstance(v, h5py.Dataset) and v.ndim >= 2)
        raise DataNotFoundError(
            f"variable {variable!r} is not in {path!r}: it holds {names}; pass one of those"
        )
    v = f[variable]
    if v.ndim < 2:
        raise InputError(f"{variable!r} in {path!r} has {v.ndim} dimension(s); need time + grid")
    dims = [d.label for d in v.dims]
    tname = v.dims[0][0].name.lstrip("/") if len(v.dims[0]) else dims[0]
    if not tname or tname not in f:
        raise InputError(f"{variable!r} in {path!r} has no time coordinate variable")
    return FileInfo(
        length=v.shape[0],
        field_shape=tuple(v.shape[1:]),
        dtype=v.dtype,
        times=f[tname][:],
        chunk_time=(v.chunks or v.shape)[0],
        decoding=Decoding.from_attrs(v.attrs),
        time_name=tname,
    )


#: bytes at the start of a file asked to be read ahead before its metadata scan: netCDF-4
#: puts its superblock, object headers and small coordinate variables there
HEAD_BYTES = 256 << 10


def prefetch_head(path: str) -> None:
    """Ask the kernel to read the start of ``path`` in the background (``WILLNEED``): the
    serial HDF5 scans that follow then find it in the page cache. Halves opening 1,000
    files whose metadata are not cached (1.3 s to 0.7 s on the reference machine)."""
    if not hasattr(os, "posix_fadvise"):
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # the scan reports it
    try:
        os.posix_fadvise(fd, 0, HEAD_BYTES, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


def cache_entry(info: FileInfo, st: os.stat_result) -> dict[str, Any]:
    d = info.decoding
    return {
        "stamp": scan_cache.stamp(st),
        "length": info.length,
        "field_shape": list(info.field_shape),
        "dtype": info.dtype.str,
        "times": scan_cache.encode_times(info.times),
        "chunk_time": info.chunk_time,
        "time_name": info.time_name,
        "decoding": [list(d.fill_values), d.scale_factor, d.add_offset],
    }


def from_cache_entry(entry: dict[str, Any]) -> FileInfo:
    fills, scale, offset = entry["decoding"]
    return FileInfo(
        length=entry["length"],
        field_shape=tuple(entry["field_shape"]),
        dtype=np.dtype(entry["dtype"]),
        times=scan_cache.decode_times(entry["times"]),
        chunk_time=entry["chunk_time"],
        decoding=Decoding(tuple(fills), scale, offset),
        time_name=entry["time_name"],
    )


def scan_like(path: str, variable: str, first: FileInfo) -> FileInfo:
    """:func:`scan_file` for a file laid out like the first one: only the variable's shape,
    dtype and chunking and the time values are read, with h5py's low-level API (a third of
    the time of a full scan; it counts when a tree has thousands of files)."""
    try:
        fid = h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY)
    except OSError as exc:
        raise InputError(
            f"{path!r} is not a readable NetCDF4/HDF5 file ({exc}): it may be truncated or "
            "still being copied; restore it or remove that month from the period"
        ) from exc
    try:
        try:
            dset = h5py.h5d.open(fid, variable.encode())
            tvar = h5py.h5d.open(fid, first.time_name.encode())
        except KeyError:
            return scan_file(path, variable)  # laid out otherwise: the full scan says what is wrong
        plist = dset.get_create_plist()
        chunks = plist.get_chunk() if plist.get_layout() == h5py.h5d.CHUNKED else dset.shape
        times = np.empty(tvar.shape, tvar.dtype)
        tvar.read(h5py.h5s.ALL, h5py.h5s.ALL, times)
        return FileInfo(
            length=dset.shape[0],
            field_shape=tuple(dset.shape[1:]),
            dtype=dset.dtype,
            times=times,
            chunk_time=chunks[0],
            decoding=first.decoding,
            time_name=first.time_name,
        )
    finally:
        fid.close()
