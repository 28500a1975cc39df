"""Open ERA5 (era5-pds layout) NetCDF files as one lazy, Dask-backed dataset."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from dask.base import tokenize

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.checks import check_path
from pangeo_hpc.io.catalog import catalog
from pangeo_hpc.io.reader import MultiFileArray
from pangeo_hpc.io.zarr_reader import is_zarr_store, open_store
from pangeo_hpc.s3.options import S3Options

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
    s3: S3Options | None = None,
    index: str | None = None,
    client: Any = None,
) -> xr.Dataset:
    """Open the months ``start`` to ``end`` of one ERA5 variable as a lazy dataset.

    Parameters
    ----------
    variable : str
        ERA5 variable name, e.g. ``"sea_surface_temperature"``.
    start, end : str, optional
        First and last month, ``YYYY-MM`` (a bare year means January or December).
        Default: every month in the tree.
    source : path or str, optional
        Root of a tree in the era5-pds layout (``{YYYY}/{MM}/data/{variable}.nc``): a local
        or mounted folder, or ``s3://bucket/prefix`` (e.g. ``s3://era5-pds``); or a Zarr
        store written by :func:`pangeo_hpc.batch.convert.to_zarr`. Default: config
        ``pangeo-hpc.data.root``.
    time_chunk_mb : float, optional
        Target uncompressed size of one Dask chunk; chunks hold whole fields and never span
        two files. Default: config ``pangeo-hpc.data.time-chunk-mb``.
    s3 : S3Options, optional
        Endpoint, anonymous access, region and profile for ``s3://`` sources. Default: config
        ``pangeo-hpc.s3`` (credentials from the usual AWS chain).
    index : {"auto", "build", "never"}, optional
        For ``s3://`` sources: read each object through its byte-range index when one is
        cached (``auto``), build missing indexes first (``build``, see ``client``), or
        always through HDF5 (``never``). Default: config ``pangeo-hpc.s3.index``. Indexes
        are made by ``index="build"`` or :func:`pangeo_hpc.io.references.build_index`.
    client : distributed.Client, optional
        With ``index="build"``: build the missing indexes on this client's workers (each
        scans its objects' metadata; this process writes the cache). Without one they are
        built here, in this process, on a few threads, whatever Dask client may be current.
        Nothing else uses it: the dataset is lazy and computes wherever it is computed.

    Returns
    -------
    Dataset
        ``variable(time0, lat, lon)`` backed by Dask, read on the workers without xarray's
        process-wide lock (use process workers), with coordinates and attributes as in the
        files. ``encoding["source_access"]`` says how: ``local``, ``s3-indexed``,
        ``s3-direct`` or ``s3-mixed``.

    Notes
    -----
    Only the first file is opened fully for coordinates and attributes; of the others
    only the time axis, shape and dtype are read (or taken from their index), so hundreds
    of files open in about a second. The same files give bit-for-bit the same values
    whichever way they are read.
    """
    if not isinstance(variable, str) or not variable:
        raise InputError(
            f"variable {variable!r} is not a variable name: give one such as "
            "'sea_surface_temperature' (the .nc file names of the tree)"
        )
    root = check_path(config.get("data.root", source), "source")
    if is_zarr_store(root):
        return open_store(root, variable, start, end)
    cat = catalog(root, variable, start, end, s3=s3, index=index, client=client)
    if cat.access == "local":
        _no_hdf5_locks_on(root)
    chunk_mb = float(config.get("data.time-chunk-mb", time_chunk_mb))
    if chunk_mb <= 0:
        raise InputError(f"time_chunk_mb={chunk_mb} must be positive, e.g. 128")

    ref, head = cat.infos[0], cat.head
    time_dim, *field_dims = head.dims
    for path, info in zip(cat.files[1:], cat.infos[1:], strict=True):
        if info.field_shape != ref.field_shape or info.dtype != ref.dtype:
            raise InputError(
                f"{path!r} has {variable} of shape {info.field_shape} {info.dtype}, "
                f"but {cat.files[0]!r} has {ref.field_shape} {ref.dtype}: all files must "
                "share one grid; remove or regrid the odd file"
            )
    lengths = [info.length for info in cat.infos]

    time_attrs = head.time_attrs
    raw_times = np.concatenate([info.times for info in cat.infos])
    times = _decode_times(time_dim, raw_times, time_attrs, cat.files[0])
    dtype = (
        np.dtype("f4") if ref.dtype.kind in "fiu" and ref.dtype.itemsize <= 4 else np.dtype("f8")
    )
    array = MultiFileArray(cat.sources, lengths, ref.field_shape, dtype, ref.decoding)
    chunks = _time_chunks(lengths, ref.chunk_time, ref.field_shape, dtype, chunk_mb)
    data = da.from_array(
        array,
        chunks=(chunks, *ref.field_shape),
        lock=False,
        asarray=False,
        meta=np.empty((0,) * array.ndim, dtype),
        name=f"open_era5-{variable}-" + tokenize(cat.sources, lengths, dtype),
    )
    var_attrs = {k: v for k, v in head.var_attrs.items() if k not in _DIMS_ATTR_SKIP}
    time_coord = xr.DataArray(
        times,
        dims=(time_dim,),
        attrs={k: v for k, v in time_attrs.items() if k not in ("units", "calendar")},
    )
    ds = xr.Dataset(
        {variable: ((time_dim, *field_dims), data, var_attrs)},
        coords={time_dim: time_coord, **head.coords},
        attrs=dict(head.attrs),
    )
    ds[time_dim].encoding.update(
        units=time_attrs.get("units"), calendar=time_attrs.get("calendar", "standard")
    )
    ds.encoding["source_files"] = cat.files
    ds.encoding["source_bytes"] = int(sum(cat.sizes))
    ds.encoding["source_access"] = cat.access
    return ds


def _decode_times(name: str, values: np.ndarray, attrs: dict, path: object) -> np.ndarray:
    """The stored time values as dates, decoded by xarray's public CF coder as
    ``xr.open_dataset`` decodes them (``units`` and ``calendar`` of the first file)."""
    if "since" not in str(attrs.get("units", "")):
        raise InputError(
            f"time variable {name!r} of {str(path)!r} has units {attrs.get('units')!r}, not "
            "dates: give it CF units such as 'hours since 1900-01-01 00:00:00'"
        )
    raw = xr.Variable((name,), values, {k: attrs[k] for k in ("units", "calendar") if k in attrs})
    return np.asarray(xr.coders.CFDatetimeCoder().decode(raw, name=name).values)


def _no_hdf5_locks_on(root: str | Path) -> None:
    """Turn HDF5 file locking off in this process when the data sit on a file system where
    the locks fail or serialise (Lustre, NFS, FUSE...), unless the user set it; HDF5 reads
    the variable at every file open. Workers get it from the cluster's environment."""
    from pangeo_hpc.storage.detect import detect

    if config.get("cluster.hdf5-file-locking"):
        return
    if detect(root).locks_unreliable:
        os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")


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
