"""Least-squares linear trends."""

from __future__ import annotations

from typing import Literal

import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.aggregations import AGGREGATIONS, YEARS, years_since_epoch
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
from pangeo_hpc.recipes.traits import Reduction, reduces
from pangeo_hpc.recipes.years import calendar_of, year_phrase

_YEARS = YEARS


@reduces(Reduction("trend"))
def trend(
    da: xr.DataArray,
    *,
    per: Literal["year", "decade", "century"] = "decade",
    stats: bool = False,
    min_count: int = 3,
) -> xr.DataArray | xr.Dataset:
    """Ordinary least-squares slope along time, per grid cell, skipping NaN: CDO
    ``trend,equal=false``'s ``b`` (there per time step, here per ``per``).

    Parameters
    ----------
    da : DataArray
        Data with a time dimension (usually anomalies or annual means). Time counts in
        decimal years of the data's calendar: 365.2425 days (datetime64, Gregorian), 365
        (``noleap``), 366 (``all_leap``), 360 (``360_day``), 365.25 (``julian``)
        (:func:`~pangeo_hpc.recipes.years.decimal_years`), as CDO counts a calendar's days.
    per : {"year", "decade", "century"}
        Unit of time of the slope: the result is in ``units`` of ``da`` per ``per``
        (``K/(10 year)`` for K per decade, a spelling UDUNITS parses); in a calendar of
        other years the ``long_name`` says which (``per decade of 365-day years (noleap
        calendar)``).
    stats : bool
        Also the slope's standard error and the two-sided p-value of a t test of a zero
        slope with n - 2 degrees of freedom (as ``scipy.stats.linregress``): a Dataset
        ``{trend, trend_stderr, trend_p_value}``.
    min_count : int
        Cells with fewer valid values get NaN (and always those with fewer than 2, or
        3 with ``stats``).

    Returns
    -------
    DataArray or Dataset
        ``trend`` (and with ``stats`` its companions), with a scalar ``time_period``
        coordinate for the period fitted. No standard name and no ``cell_methods``: a slope
        is none of CF's methods.

    Notes
    -----
    Computed by the trend's :class:`~pangeo_hpc.recipes.aggregations.Trend`, as an
    incremental run's per-file states are: one compiled pass over each block
    (:func:`~pangeo_hpc.recipes.kernels.trend_sums`), sums of 1, t, t², x, tx and x² per
    cell over the valid values in float64 (t in years from the period's middle), added over
    the blocks; the slope is ``Stx / Stt``, the residual sum of squares ``Sxx - slope Stx``
    (S: sums of products of departures from the means); this loses digits only where the
    data's variance is below ~1e-10 of their squared mean.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")  # two years, monthly
    >>> da = xr.DataArray(np.arange(24.0), coords={"time": time}, dims="time", attrs={"units": "K"})
    >>> sorted(trend(da, per="year", stats=True).data_vars)
    ['trend', 'trend_p_value', 'trend_stderr']
    """
    check_dataarray(da, "trend")
    if per not in _YEARS:
        raise InputError(
            f"trend: per={per!r} is not one of {sorted(_YEARS)}: pick one", param="per"
        )
    if not isinstance(min_count, int) or isinstance(min_count, bool) or min_count < 1:
        raise InputError(
            f"trend: min_count={min_count!r} is not a count: give a positive integer "
            "(a slope needs 2 values at least, its statistics 3)",
            param="min_count",
        )
    t = time_name(da)
    cells = [d for d in da.dims if d != t]
    first = da.transpose(t, *cells)
    options = {"per": per, "stats": stats, "min_count": min_count}
    # the sums and the slope of an incremental run's trend states, on the whole data; time
    # centred on the period's middle here (the slope does not depend on the origin, but
    # the departures from the means lose fewer digits: a flat series gives 0, not 1e-16)
    years = years_since_epoch(da[t])
    values = AGGREGATIONS["trend"].reduce(first.data, options, years - years.mean())
    coords = {k: v for k, v in first.coords.items() if t not in v.dims}
    value = {k: xr.DataArray(v, dims=cells, coords=coords) for k, v in values.items()}
    name = da.attrs.get("long_name", da.name or "field")
    units = per_time_units(da.attrs.get("units"), per)
    period = {TIME_PERIOD: period_coord(da[t], "linear trend")}
    per_text = f"{per}{year_phrase(calendar_of(da[t]))}"
    out = with_attrs(
        value["trend"].rename("trend"),
        {"units": units, "long_name": f"linear trend of {name} per {per_text}"},
    )
    out = out.assign_coords(period)
    if not stats:
        return out
    stderr_attrs = {"units": units, "long_name": f"standard error of the linear trend of {name}"}
    p_attrs = {
        "units": "1",
        "long_name": f"p-value of the linear trend of {name} (two-sided t test of a zero "
        "slope, n - 2 degrees of freedom)",
    }
    return xr.Dataset(
        {
            "trend": out,
            "trend_stderr": with_attrs(value["trend_stderr"], stderr_attrs).assign_coords(period),
            "trend_p_value": with_attrs(value["trend_p_value"], p_attrs).assign_coords(period),
        }
    )


@reduces(Reduction("trend"))
def linear_trend(
    da: xr.DataArray, *, per: Literal["year", "decade", "century"] = "decade", min_count: int = 3
) -> xr.DataArray:
    """The slope of :func:`trend` alone (its ``stats=False`` form), per ``per``: CDO
    ``trend,equal=false``'s ``b``.

    Parameters
    ----------
    da : DataArray
        Data with a time dimension.
    per : {"year", "decade", "century"}
        Unit of time of the slope (see :func:`trend`).
    min_count : int
        Cells with fewer valid values get NaN.

    Returns
    -------
    DataArray
        The slope per cell, in ``units`` of ``da`` per ``per`` (``K/(10 year)``).

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")  # two years, monthly
    >>> da = xr.DataArray(np.arange(24.0), coords={"time": time}, dims="time", attrs={"units": "K"})
    >>> t = linear_trend(da, per="year")  # 1 K a month
    >>> round(float(t), 2), t.attrs["units"]
    (12.0, 'K/year')
    """
    check_dataarray(da, "linear_trend")
    if per not in _YEARS:
        raise InputError(f"per={per!r} is not one of {sorted(_YEARS)}", param="per")
    out = trend(da, per=per, min_count=min_count)
    assert isinstance(out, xr.DataArray)
    return out


def trend_global_mean(trend: xr.DataArray) -> xr.DataArray:
    """Area-weighted global mean of a trend map, in the map's units: CDO ``fldmean``.

    Parameters
    ----------
    trend : DataArray
        A trend map (:func:`trend`).

    Returns
    -------
    DataArray
        A scalar, in the map's units.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> lat = xr.DataArray([-45.0, 45.0], dims="lat", attrs={"units": "degrees_north"})
    >>> lon = xr.DataArray([0.0, 180.0], dims="lon", attrs={"units": "degrees_east"})
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")
    >>> values = np.arange(24.0)[:, None, None] + np.array([[0.0, 1.0], [2.0, 3.0]])
    >>> da = xr.DataArray(
    ...     values, coords={"time": time, "lat": lat, "lon": lon}, dims=("time", "lat", "lon"),
    ...     attrs={"units": "K"},
    ... )
    >>> round(float(trend_global_mean(linear_trend(da, per="year"))), 2)
    12.0
    """
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
