"""Open ERA5 (era5-pds layout) NetCDF files as one lazy, Dask-backed dataset."""

from __future__ import annotations

import os
from pathlib import Path

import dask.array as da
import h5py
import numpy as np
import xarray as xr
from dask.base import tokenize

from . import config
from .errors import DataNotFoundError, InputError
from .layout import find_files
from .periods import Month
from .reader import Decoding, MultiFileArray

_DIMS_ATTR_SKIP = (
    "DIMENSION_LIST",
    "REFERENCE_LIST",
    "CLASS",
    "NAME",
    "_Netcdf4Dimid",
    "_Netcdf4Coordinates",
    "_FillValue",
    "scale_factor",
    "add_offset",
    "missing_value",
    "_nc3_strict",
)


def open_era5(
    variable: str = "sea_surface_temperature",
    start: str | None = None,
    end: str | None = None,
    *,
    source: str | Path | None = None,
    time_chunk_mb: float | None = None,
) -> xr.Dataset:
    """Open the months ``start`` to ``end`` of one ERA5 variable as a lazy dataset.

    Parameters
    ----------
    variable : str
        ERA5 variable name, e.g. ``"sea_surface_temperature"``.
    start, end : str, optional
        First and last month, ``YYYY-MM`` (a bare year means January or December).
        Default: every month in the tree.
    source : path, optional
        Root of a local or mounted tree in the era5-pds layout
        (``{YYYY}/{MM}/data/{variable}.nc``). Default: config ``pangeo-hpc.data.root``.
    time_chunk_mb : float, optional
        Target uncompressed size of one Dask chunk; chunks hold whole fields and never span
        two files. Default: config ``pangeo-hpc.data.time-chunk-mb``.

    Returns
    -------
    Dataset
        ``variable(time0, lat, lon)`` backed by Dask, read with h5py on the workers (no
        process-wide xarray lock: use process workers), with coordinates and attributes
        as in the files.

    Notes
    -----
    Only the first file is opened fully for coordinates and attributes; of the others
    only the time axis, shape and dtype are read, so hundreds of files open in about a
    second.
    """
    root = config.get("data.root", source)
    if str(root).startswith(("s3://", "gs://", "http://", "https://")):
        raise InputError(
            f"source {str(root)!r} is remote: reading object storage directly is not "
            "supported yet; mount the bucket (FSx for Lustre, rclone mount) and pass the path"
        )
    if start is None or end is None:
        first, last = _available_span(Path(root), variable)
        start, end = start or first, end or last
    files = [str(p) for p in find_files(root, variable, start, end)]
    _no_hdf5_locks_on(root)
    chunk_mb = float(config.get("data.time-chunk-mb", time_chunk_mb))
    if chunk_mb <= 0:
        raise InputError(f"time_chunk_mb={chunk_mb} must be positive, e.g. 128")

    ref = _scan(files[0], variable)
    head = xr.open_dataset(files[0], engine="h5netcdf", decode_times=False)
    time_dim, *field_dims = head[variable].dims
    coords = {d: head[d].load() for d in field_dims if d in head.variables}
    lengths, raw_times = [ref["length"]], [ref["times"]]
    for path in files[1:]:
        info = _scan(path, variable)
        if info["field_shape"] != ref["field_shape"] or info["dtype"] != ref["dtype"]:
            raise InputError(
                f"{path!r} has {variable} of shape {info['field_shape']} {info['dtype']}, "
                f"but {files[0]!r} has {ref['field_shape']} {ref['dtype']}: all files must "
                "share one grid; remove or regrid the odd file"
            )
        lengths.append(info["length"])
        raw_times.append(info["times"])

    time_attrs = dict(head[time_dim].attrs)
    times = xr.coding.times.decode_cf_datetime(
        np.concatenate(raw_times), time_attrs.get("units"), time_attrs.get("calendar")
    )
    dtype = (
        np.dtype("f4")
        if ref["dtype"].kind in "fiu" and ref["dtype"].itemsize <= 4
        else np.dtype("f8")
    )
    array = MultiFileArray(files, variable, lengths, ref["field_shape"], dtype, ref["decoding"])
    chunks = _time_chunks(lengths, ref["chunk_time"], ref["field_shape"], dtype, chunk_mb)
    data = da.from_array(
        array,
        chunks=(chunks, *ref["field_shape"]),
        lock=False,
        asarray=False,
        meta=np.empty((0,) * array.ndim, dtype),
        name=f"open_era5-{variable}-" + tokenize(files, lengths, dtype),
    )
    var_attrs = {k: v for k, v in head[variable].attrs.items() if k not in _DIMS_ATTR_SKIP}
    head.close()
    time_coord = xr.DataArray(
        times,
        dims=(time_dim,),
        attrs={k: v for k, v in time_attrs.items() if k not in ("units", "calendar")},
    )
    ds = xr.Dataset(
        {variable: ((time_dim, *field_dims), data, var_attrs)},
        coords={time_dim: time_coord, **coords},
        attrs=dict(head.attrs),
    )
    ds[time_dim].encoding.update(
        units=time_attrs.get("units"), calendar=time_attrs.get("calendar", "standard")
    )
    ds.encoding["source_files"] = files
    ds.encoding["source_bytes"] = int(sum(Path(p).stat().st_size for p in files))
    return ds


def _no_hdf5_locks_on(root: str | Path) -> None:
    """Turn HDF5 file locking off in this process when the data sit on a file system where
    the locks fail or serialise (Lustre, NFS, FUSE...), unless the user set it; HDF5 reads
    the variable at every file open. Workers get it from the cluster's environment."""
    from .storage.detect import detect

    if config.get("cluster.hdf5-file-locking"):
        return
    if detect(root).locks_unreliable:
        os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")


def _scan(path: str, variable: str) -> dict:
    """Shape, dtype, time values, HDF5 chunking and CF decoding of ``variable`` in ``path``."""
    try:
        with h5py.File(path, "r") as f:
            return _describe(f, variable, path)
    except OSError as exc:
        raise InputError(
            f"{path!r} is not a readable NetCDF4/HDF5 file ({exc}): it may be truncated or "
            "still being copied; restore it or remove that month from the period"
        ) from exc


def _describe(f: h5py.File, variable: str, path: str) -> dict:
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
    return {
        "length": v.shape[0],
        "field_shape": tuple(v.shape[1:]),
        "dtype": v.dtype,
        "times": f[tname][:],
        "chunk_time": (v.chunks or v.shape)[0],
        "decoding": Decoding.from_attrs(v.attrs),
    }


def _time_chunks(
    lengths: list[int], hdf5_time: int, field_shape: tuple[int, ...], dtype: np.dtype, mb: float
) -> tuple[int, ...]:
    """Chunks along time: multiples of the HDF5 chunk, about ``mb`` each, never across files."""
    per_step = float(np.prod(field_shape)) * dtype.itemsize
    steps = max(1, int(mb * 1e6 // per_step))
    steps = max(hdf5_time, steps // hdf5_time * hdf5_time)
    out: list[int] = []
    for n in lengths:
        out += [steps] * (n // steps) + ([n % steps] if n % steps else [])
    return tuple(out)


def _available_span(root: Path, variable: str) -> tuple[str, str]:
    found = sorted(root.glob(f"[0-9][0-9][0-9][0-9]/[0-9][0-9]/data/{variable}.nc"))
    if not found:
        raise DataNotFoundError(
            f"no {variable!r} files under {str(root)!r}: pass --data DIR, or create demo data "
            f"with `python -m pangeo_hpc.run demo-data --out {root}`"
        )
    ms = [Month(int(p.parts[-4]), int(p.parts[-3])) for p in found]
    return str(ms[0]), str(ms[-1])
