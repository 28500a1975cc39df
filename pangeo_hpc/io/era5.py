"""Open ERA5 (era5-pds layout) NetCDF files as one lazy, Dask-backed dataset."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import xarray as xr

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.checks import check_path
from pangeo_hpc.io.assemble import (
    file_spans,
    lazy_dataset,
    merge_variables,
    time_pieces,
    variable_names,
)
from pangeo_hpc.io.catalog import catalog
from pangeo_hpc.io.s3_runs import run_location
from pangeo_hpc.io.stores import StoreRef, open_any_store, store_kind
from pangeo_hpc.io.zarr_reader import is_zarr_store, open_store
from pangeo_hpc.s3.options import S3Options, is_s3
from pangeo_hpc.write.marks import is_our_store

#: the ends of an ``s3://`` source's last part that make it a store rather than a tree
STORE_SUFFIXES = (".zarr", ".zarr-v2", ".zarr-v3", ".icechunk")


def open_era5(
    variable: str | Sequence[str] = "sea_surface_temperature",
    start: str | None = None,
    end: str | None = None,
    *,
    source: str | Path | None = None,
    time_chunk_mb: float | None = None,
    s3: S3Options | None = None,
    index: str | None = None,
    client: Any = None,
) -> xr.Dataset:
    """Open the months ``start`` to ``end`` of ERA5 variables as a lazy dataset.

    Parameters
    ----------
    variable : str or list of str
        ERA5 variable name, e.g. ``"sea_surface_temperature"``, or several on one grid and
        time axis, e.g. ``["eastward_wind_at_10_metres", "northward_wind_at_10_metres"]``
        (an error names both otherwise: analysis variables have ``time0``, forecast ones
        ``time1``; the wave variables are on a 0.5 degree grid).
    start, end : str, optional
        First and last month, ``YYYY-MM`` (a bare year means January or December).
        Default: every month in the tree.
    source : path or str, optional
        Root of a tree in the era5-pds layout (``{YYYY}/{MM}/data/{variable}.nc``): a local
        or mounted folder, or ``s3://bucket/prefix`` (e.g. ``s3://era5-pds``); or a Zarr
        store written by :func:`pangeo_hpc.batch.pipeline.convert.to_zarr`. A prefix that
        pangeo-hpc wrote (``demo-data --out s3://...``, ``convert``) is read as the run
        its ``summary.json`` makes visible (:func:`pangeo_hpc.io.s3_runs.run_location`).
        Default: config ``pangeo-hpc.data.root``.
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
        files. A forecast variable has its own time axis and its bounds, decoded to dates:
        ``precipitation_amount_1hour_Accumulation(time1, lat, lon)`` with the coordinate
        ``time1_bounds(time1, nv)`` (``time1.attrs["bounds"]`` names it), each step the
        hour it accumulates over. ``encoding["source_files"]`` lists the files of every
        variable; ``encoding["source_access"]`` says how they are read: ``local``,
        ``s3-indexed``, ``s3-direct`` or ``s3-mixed``; ``encoding["source_pieces"]`` the
        spans of the time axis that come from one file per variable
        (:func:`~pangeo_hpc.io.assemble.time_pieces`); ``encoding["source_stamps"]``
        each file's :class:`~pangeo_hpc.inputs.stamps.Stamp` (file -> stamp);
        ``encoding["source_root"]`` the
        tree, whatever the period (absolute path or ``s3://`` URL).

    Notes
    -----
    Only the first file is opened fully for coordinates and attributes; of the others
    only the time axis, shape and dtype are read (or taken from their index), so hundreds
    of files open in about a second. The same files give bit-for-bit the same values
    whichever way they are read.

    Examples
    --------
    >>> from pangeo_hpc.recipes import global_mean
    >>> ds = open_era5(
    ...     "air_temperature_at_2_metres", "2020-01", "2020-12",
    ...     source="s3://era5-pds", s3=S3Options(anon=True),
    ... )  # doctest: +SKIP
    >>> global_mean(ds["air_temperature_at_2_metres"]).compute()  # doctest: +SKIP
    """
    names = variable_names(variable, "variable")
    root = check_path(config.get("data.root", source), "source")
    ours = None
    if is_s3(str(root)):  # a prefix our writers made: its current run (s3_runs)
        root, ours = run_location(str(root), s3, flag="source")
    if ours == "zarr" or _is_other_store(root, s3):  # a store convert wrote to S3, or other
        return open_any_store(
            StoreRef(str(root)), names, start, end, s3=s3, time_chunk_mb=time_chunk_mb
        )
    if is_zarr_store(root):
        if len(names) == 1:
            return open_store(root, names[0], start, end)
        stores = [(v, open_store(root, v, start, end), str(root)) for v in names]
        return merge_variables(stores)
    chunk_mb = float(config.get("data.time-chunk-mb", time_chunk_mb))
    if chunk_mb <= 0:
        raise InputError(f"time_chunk_mb={chunk_mb} must be positive, e.g. 128")
    cats = []
    for v in names:  # a loop, not a comprehension: the catalog's warnings name the caller
        cats.append(catalog(root, v, start, end, s3=s3, index=index, client=client))
    if any(cat.access == "local" for cat in cats):
        _no_hdf5_locks_on(root)
    parts = [
        (
            v,
            lazy_dataset(v, c.files, c.infos, c.sources, c.head, chunk_mb, name="open_era5"),
            c.files[0],
        )
        for v, c in zip(names, cats, strict=True)
    ]
    ds = parts[0][1] if len(parts) == 1 else merge_variables(parts)
    ds.encoding["source_files"] = [f for cat in cats for f in cat.files]
    ds.encoding["source_bytes"] = int(sum(sum(cat.sizes) for cat in cats))
    ds.encoding["source_stamps"] = {
        f: s for cat in cats for f, s in zip(cat.files, cat.stamps, strict=True)
    }
    spans = [file_spans(c.files, [i.length for i in c.infos]) for c in cats]
    ds.encoding["source_pieces"] = time_pieces(spans, ds.sizes[ds[names[0]].dims[0]])
    accesses = {cat.access for cat in cats}
    ds.encoding["source_access"] = accesses.pop() if len(accesses) == 1 else "s3-mixed"
    ds.encoding["source_root"] = str(root) if is_s3(str(root)) else os.path.abspath(root)
    return ds


def _is_other_store(root: str | Path, s3: S3Options | None) -> bool:
    """Whether ``root`` is a store :func:`open_any_store` opens: an Icechunk repository, or
    a Zarr store that ``convert`` did not write (those are read by :func:`open_store`)."""
    text = str(root)
    if is_s3(text):
        return text.rstrip("/").endswith(STORE_SUFFIXES)
    kind = store_kind(root)
    return kind == "icechunk" or (kind == "zarr" and not is_our_store(Path(root)))


def _no_hdf5_locks_on(root: str | Path) -> None:
    """Turn HDF5 file locking off in this process when the data sit on a file system where
    the locks fail or serialise (Lustre, NFS, FUSE...), unless the user set it; HDF5 reads
    the variable at every file open. Workers get it from the cluster's environment."""
    from pangeo_hpc.storage.detect import detect

    if config.get("cluster.hdf5-file-locking"):
        return
    if detect(root).locks_unreliable:
        os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
