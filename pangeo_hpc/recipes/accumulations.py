"""Daily totals of accumulated quantities (ERA5's hourly precipitation, CDO ``daysum``
after ``shifttime,-1hour``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes import time_bounds
from pangeo_hpc.recipes.aggregations import AGGREGATIONS
from pangeo_hpc.recipes.cf_attrs import with_attrs
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import time_name
from pangeo_hpc.recipes.resample import period_attrs, period_starts
from pangeo_hpc.recipes.traits import Reduction, reduces

#: units of quantities a sum over time makes no sense of: temperatures and rates
_NOT_SUMMABLE = re.compile(
    r"(?i)^(k|degc|deg_c|celsius|degf|fahrenheit|degrees?_?(c|f|k))$|(/\s*s\b|s-1|s\^-1|s\*\*-1)"
)
_DAY = np.timedelta64(1, "D")


def _day_groups(time: xr.DataArray, options: Mapping[str, Any], data: xr.Dataset) -> np.ndarray:
    """The day (ns) each step's interval lies in: its start's (the hour ending at 00 UTC
    counts in the day before), from the time bounds where the data have them."""
    values = time.values
    bounds = data.get(str(time.attrs.get("bounds", "")))
    if bounds is not None and bounds.dims[0] == time.dims[0]:
        starts = bounds.sel({time.dims[0]: values}).values.min(axis=1)
    else:
        starts = values - np.median(np.diff(values))
    return starts.astype("datetime64[D]").astype("datetime64[ns]").view("i8")


@reduces(Reduction("sum", _day_groups, period_starts, periods=True, partial_left_out=True))
def daily_totals(da: xr.DataArray, *, bounds: xr.DataArray | None = None) -> xr.DataArray:
    """Sum of each day's accumulations, each hour counted in the day its interval lies in
    (CDO ``daysum -shifttime,-1hour``).

    ERA5's forecast variables (``precipitation_amount_1hour_Accumulation(time1, lat,
    lon)``, units m) hold at each ``time1`` the amount over the hour *ending* then: the
    value at 00:00 belongs to the day before. This equals CDO ``daysum`` after
    ``shifttime,-1hour``, except at the ends of the data.

    Parameters
    ----------
    da : DataArray
        Accumulations over the intervals ending at its time labels (any regular step
        that divides a day: 1 h, 3 h, ...).
    bounds : DataArray, optional
        The intervals, ``(time, 2)`` (ERA5's ``time1_bounds``: ``[t - 1 h, t]``). Without
        them each interval is the data's (median) time step ending at the label. Their
        values are read (2 per step, like a coordinate's; CF 7.1 makes them part of it).

    Returns
    -------
    DataArray
        One value per whole day, labelled with the day's 00:00. **Days the data do not
        fully cover are dropped** (the first day of ERA5's month files starts at 07:00):
        their sums would look like days with little rain. Units and standard name as
        ``da`` (a sum of m is m); ``cell_methods`` gains ``time: sum``; NaN where a cell
        has no valid value that day.

    Raises
    ------
    InputError
        Units that a sum makes no sense of (a temperature, a rate per second), intervals
        that cross midnight, or data that hold no whole day.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01T01:00", periods=48, freq="h")  # 1 h ending at each
    >>> tp = xr.DataArray(np.full(48, 1e-3), {"time": time}, "time", attrs={"units": "m"})
    >>> daily_totals(tp).values.round(6).tolist()
    [0.024, 0.024]
    """
    check_dataarray(da, "daily_totals")
    units = str(da.attrs.get("units", "")).strip()
    if units and _NOT_SUMMABLE.search(units):
        raise InputError(
            f"daily_totals: {da.name or 'the data'!r} has units {units!r}, not an amount "
            "accumulated over each step (such as m of precipitation): use "
            "resample(freq='daily', stat='mean') for it",
            param="da",
        )
    t = time_name(da)
    end = pd.DatetimeIndex(np.asarray(da[t].values, dtype="datetime64[ns]"))
    start = _starts(end, bounds, t)
    length = (end - start).values
    day = start.floor("D")
    if (((end - pd.Timedelta(1, "ns")).floor("D")) != day).any():
        raise InputError(
            f"daily_totals: some intervals of {t!r} cross midnight (steps of "
            f"{pd.Timedelta(np.median(length))}): give accumulations over steps that divide "
            "a day",
            param="da",
        )
    covered = pd.Series(length, index=day).groupby(level=0).sum()
    whole = covered.index[covered.values == _DAY]
    if whole.empty:
        raise InputError(
            f"daily_totals: the data ({end[0]}..{end[-1]}) hold no whole day of "
            "accumulations: give at least 24 hours from one midnight to the next",
            param="da",
        )
    da = time_bounds.without_intervals(da, t)
    # each step's whole day (-1: a day the data do not wholly cover), summed by the sum's
    # aggregation as an incremental run's per-file states are (the same blocks: no steps
    # cut away first)
    codes = np.where(day.isin(whole), whole.get_indexer(day), -1)
    cells = [d for d in da.dims if d != t]
    first = da.transpose(t, *cells)
    dtype = da.dtype if np.issubdtype(da.dtype, np.floating) else np.dtype("f8")
    value = AGGREGATIONS["sum"].reduce_groups(first.data, codes, {}, dtype=dtype, per_group=True)
    coords = {k: v for k, v in first.coords.items() if t not in v.dims}
    days = xr.DataArray(whole.values, dims=(t,), attrs=dict(da[t].attrs))
    out = xr.DataArray(value["value"], dims=(t, *cells), coords={**coords, t: days})
    out.name = da.name  # (the constructor names it after the Dask array, given None)
    out = out.transpose(*da.dims)
    # each total covers its whole day (the intervals of its accumulations)
    out = time_bounds.with_intervals(out, t, whole.values, (whole + pd.Timedelta(1, "D")).values)
    out[t].encoding.update(time_bounds.calendar_encoding(da[t]))
    return with_attrs(out, period_attrs(da, t, "daily total", f"{t}: sum"))


def _starts(end: pd.DatetimeIndex, bounds: xr.DataArray | None, t: str) -> pd.DatetimeIndex:
    """Start of each interval: the bounds' earlier value, else one step before the label."""
    if bounds is not None:
        b = np.asarray(bounds.values, dtype="datetime64[ns]")
        if b.ndim != 2 or b.shape[0] != end.size or b.shape[1] != 2:
            raise InputError(
                f"daily_totals: bounds of shape {b.shape} do not fit {end.size} steps of "
                f"{t!r}: give the (time, 2) bounds variable, e.g. {t}_bounds",
                param="bounds",
            )
        return pd.DatetimeIndex(b.min(axis=1))
    if end.size < 2:
        raise InputError(
            f"daily_totals: one time step and no bounds: the interval of {t!r} is unknown "
            f"(give bounds={t}_bounds)",
            param="bounds",
        )
    step = pd.Timedelta(int(np.median(np.diff(end.asi8))), "ns")
    return end - step
