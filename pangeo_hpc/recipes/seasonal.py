"""Monthly climatology and anomalies."""

from __future__ import annotations

import numpy as np
import xarray as xr

from pangeo_hpc.recipes.cf_attrs import cell_methods, with_attrs
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import time_name
from pangeo_hpc.recipes.kernels import group_nanmean_blocks


def climatology(da: xr.DataArray) -> xr.DataArray:
    """Mean of each calendar month over all years, skipping NaN (dimension ``month``).

    Dask arrays chunked along time only (whole fields per block, as ``open_era5`` gives)
    are reduced block by block with a compiled kernel; anything else with xarray's
    ``groupby``. Both agree to float32 precision (the kernel sums in float64).
    """
    check_dataarray(da, "climatology")
    t = time_name(da)
    # CF's "time: mean within years time: mean over years" needs a climatological time axis;
    # the result has a month number instead, so: a time mean (the standard name "time",
    # as the time dimension is gone), per calendar month in the comment
    attrs = {
        **da.attrs,
        "cell_methods": cell_methods(
            da, "time: mean (each calendar month over the years)", gone={t: "time"}
        ),
    }
    if not _time_blocks(da, t):
        out = da.groupby(f"{t}.month").mean(t, skipna=True)
        return out.assign_attrs(attrs)
    months, codes = np.unique(da[t].dt.month.values, return_inverse=True)
    data = group_nanmean_blocks(da.data, codes.ravel())
    coords = {k: v for k, v in da.coords.items() if t not in v.dims}
    out = xr.DataArray(
        data,
        dims=("month", *da.dims[1:]),
        coords={"month": ("month", months), **coords},
        name=da.name,
        attrs=attrs,
    )
    return out


def _time_blocks(da: xr.DataArray, t: str) -> bool:
    """Dask-backed, time first, every other dimension in one chunk."""
    return (
        da.chunks is not None
        and da.dims[0] == t
        and da.sizes[t] > 0
        and all(len(c) == 1 for c in da.chunks[1:])
    )


def anomaly(da: xr.DataArray, clim: xr.DataArray | None = None) -> xr.DataArray:
    """Departure from the monthly climatology (of ``da`` itself unless ``clim`` is given)."""
    check_dataarray(da, "anomaly")
    t = time_name(da)
    if clim is None:
        clim = climatology(da)
    out = da.groupby(f"{t}.month") - clim
    out = out.drop_vars("month", errors="ignore")
    # the same units (a temperature difference for a temperature), the input's cell methods
    # (each value is still, say, a monthly mean), but no standard name: an anomaly of
    # sea_surface_temperature is not a sea_surface_temperature (and CF has no name for it)
    attrs = {k: v for k, v in da.attrs.items() if k in ("units", "cell_methods")}
    name = da.attrs.get("long_name", da.name or "field")
    attrs["long_name"] = f"{name} anomaly from the monthly climatology"
    return with_attrs(out, attrs)
