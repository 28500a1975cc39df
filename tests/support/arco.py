"""ARCO-ERA5-like stores made from the demo data: one store, many variables, dimensions
``time``/``latitude``/``longitude`` (latitude descending, as the demo's), one time step
per chunk and whole fields (as ARCO-ERA5's ``...-chunk-1.zarr-v3``), CDS names
(``2m_temperature``), as a Zarr v2 or v3 store or an Icechunk repository, local or on S3.

The values are the demo files' (float32), so a recipe on the store must give what it
gives on the era5-pds tree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.io.store_names import ARCO_NAMES


def arco_dataset(tree: Path, variables: list[str], start: str, end: str) -> xr.Dataset:
    """The demo tree's ``variables`` (era5-pds names) for ``start``..``end`` in the
    ARCO-ERA5 layout, in memory."""
    parts = []
    for v in variables:
        ds = open_era5(v, start, end, source=tree).load()
        tname = ds[v].dims[0]
        ds = ds.rename({tname: "time", "lat": "latitude", "lon": "longitude", v: ARCO_NAMES[v]})
        parts.append(ds[[ARCO_NAMES[v]]])
    out = xr.merge(parts, combine_attrs="override")
    out.attrs = {"title": "ARCO-ERA5-like test store"}
    for c in ("time", "latitude", "longitude"):
        out[c].encoding = {}
    return out


def _encoding(ds: xr.Dataset, zarr_format: int = 3, compressed: bool = True) -> dict[str, Any]:
    """One time step per chunk; ``compressed=False``: stored raw, so that every chunk has
    the same size whatever its values (a rewrite shows only in mtime, ctime or version)."""
    enc: dict[str, Any] = {v: {"chunks": (1, *ds[v].shape[1:])} for v in ds.data_vars}
    if not compressed:
        for v in ds.data_vars:
            enc[v]["compressors"] = None
    enc["time"] = {"units": "hours since 1900-01-01", "dtype": "int64", "chunks": (100000,)}
    return enc


def write_zarr(
    ds: xr.Dataset,
    target: Any,
    *,
    zarr_format: int = 3,
    append: bool = False,
    storage_options: dict | None = None,
    compressed: bool = True,
) -> None:
    """Write (or with ``append`` add along time) ``ds`` to a Zarr store at ``target``."""
    kw: dict[str, Any] = {"zarr_format": zarr_format, "consolidated": zarr_format == 2}
    if storage_options:
        kw["storage_options"] = storage_options
    if append:
        ds.to_zarr(target, append_dim="time", **kw)
    else:
        ds.to_zarr(target, mode="w-", encoding=_encoding(ds, zarr_format, compressed), **kw)


def write_icechunk(
    ds: xr.Dataset,
    storage: Any,
    *,
    append: bool = False,
    message: str = "",
    compressed: bool = True,
) -> str:
    """Commit ``ds`` to the repository of ``storage`` (created if new); its snapshot id."""
    import icechunk

    repo = icechunk.Repository.open_or_create(storage)
    session = repo.writable_session("main")
    if append:
        ds.to_zarr(session.store, append_dim="time", consolidated=False, zarr_format=3)
    else:
        ds.to_zarr(
            session.store,
            mode="w-",
            encoding=_encoding(ds, 3, compressed),
            consolidated=False,
            zarr_format=3,
        )
    return session.commit(message or ("append" if append else "first months"))


def rewrite_step(ds_store: Any, name: str, index: int, value: np.ndarray) -> None:
    """Write ``value`` over time step ``index`` of ``name`` in an open zarr group."""
    ds_store[name][index] = value
