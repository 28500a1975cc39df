"""Monthly climatology and anomalies."""

from __future__ import annotations

import xarray as xr

from ..grid import time_name


def climatology(da: xr.DataArray) -> xr.DataArray:
    """Mean of each calendar month over all years, skipping NaN (dimension ``month``)."""
    t = time_name(da)
    out = da.groupby(f"{t}.month").mean(t, skipna=True)
    return out.assign_attrs({**da.attrs, "cell_methods": f"{t}: mean within months"})


def anomaly(da: xr.DataArray, clim: xr.DataArray | None = None) -> xr.DataArray:
    """Departure from the monthly climatology (of ``da`` itself unless ``clim`` is given)."""
    t = time_name(da)
    if clim is None:
        clim = climatology(da)
    out = da.groupby(f"{t}.month") - clim
    out = out.drop_vars("month", errors="ignore")
    return out.assign_attrs(
        {**{k: v for k, v in da.attrs.items() if k == "units"}, "long_name": "anomaly"}
    )
