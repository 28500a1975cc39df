"""Least-squares linear trends."""

from __future__ import annotations

from typing import Literal

import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.cf_attrs import (
    TIME_PERIOD,
    area_where,
    per_time_units,
    period_coord,
    with_attrs,
)
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import time_name
from pangeo_hpc.recipes.means import global_mean
from pangeo_hpc.recipes.years import decimal_years

_YEARS = {"year": 1.0, "decade": 10.0, "century": 100.0}


def linear_trend(
    da: xr.DataArray, *, per: Literal["year", "decade", "century"] = "decade", min_count: int = 3
) -> xr.DataArray:
    """Ordinary least-squares slope along time, per grid cell, skipping NaN.

    Parameters
    ----------
    da : DataArray
        Data with a time dimension (usually anomalies or annual means).
    per : {"year", "decade", "century"}
        Unit of time of the slope: the result is in ``units`` of ``da`` per ``per``.
    min_count : int
        Cells with fewer valid values get NaN.

    Notes
    -----
    One pass over the data: the slope is ``(n Σtx - Σt Σx) / (n Σt² - (Σt)²)`` with time
    centred on the middle of the period, so the sums are exact enough in float64.
    """
    check_dataarray(da, "linear_trend")
    if per not in _YEARS:
        raise InputError(f"per={per!r} is not one of {sorted(_YEARS)}")
    t = time_name(da)
    years = decimal_years(da[t])
    tc = xr.DataArray((years - years.mean()) / _YEARS[per], dims=(t,))
    valid = da.notnull()
    x = da.astype("f8").fillna(0.0)
    n = valid.sum(t)
    st = (tc * valid).sum(t)
    stt = (tc**2 * valid).sum(t)
    sx = x.sum(t)
    stx = (tc * x).sum(t)
    denom = n * stt - st**2
    slope = ((n * stx - st * sx) / denom.where(denom > 0)).where(n >= min_count)
    # units per year, per 10 or 100 years in a spelling UDUNITS parses; no standard name
    # and no cell_methods (a slope is none of CF's methods); the period fitted is a scalar
    # time coordinate with bounds
    attrs = {
        "units": per_time_units(da.attrs.get("units"), per),
        "long_name": f"linear trend of {da.attrs.get('long_name', da.name or 'field')} per {per}",
    }
    out = with_attrs(slope.rename("trend"), attrs)
    return out.assign_coords({TIME_PERIOD: period_coord(da[t], "linear trend")})


def trend_global_mean(trend: xr.DataArray) -> xr.DataArray:
    """Area-weighted global mean of a trend map, in the map's units."""
    check_dataarray(trend, "trend_global_mean")
    out = global_mean(trend)
    return with_attrs(
        out,
        {
            "units": trend.attrs.get("units", ""),
            "long_name": "global-mean linear trend",
            "cell_methods": f"area: mean{area_where(trend)}",
        },
    )
