"""Rates from accumulations: how long each value covers, and the attributes of its mean rate.

ERA5 stores precipitation as the amount that fell in the hour before each time label (m);
daily or monthly totals are sums over days or months. To turn an amount into a rate
(``mm day-1``) each value is divided by the time it covers, read from the data only:
:func:`accumulation_period` says where it looks and, when nothing tells, what to give.
Only coordinate values are read, never the data.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from pangeo_hpc.errors import InputError, shown
from pangeo_hpc.recipes.cf_attrs import _step, cell_methods
from pangeo_hpc.recipes.grid import time_name

#: ERA5 (era5-pds) names accumulations ``precipitation_amount_1hour_Accumulation``
_ERA5_NAME = re.compile(r"_(\d+)hour_Accumulation\b", re.I)
#: one cell_methods entry: its names, its method, the rest (where/over/comment)
_ENTRY = re.compile(
    r"((?:[^\s:()]+:\s*)+)([a-z_]+)((?:\s+(?:where|over|within)\s+\S+)*(?:\s*\([^)]*\))?)"
)
#: standard name of an amount -> that of its rate
RATE_NAMES = {
    "lwe_thickness_of_precipitation_amount": "lwe_precipitation_rate",
    "precipitation_amount": "precipitation_flux",
    "lwe_thickness_of_snowfall_amount": "lwe_snowfall_rate",
    "snowfall_amount": "snowfall_flux",
    "rainfall_amount": "rainfall_flux",
}


def _last_time_entry(da: xr.DataArray, t: str) -> re.Match[str] | None:
    """The last ``cell_methods`` entry about time (``time:`` or the time dimension)."""
    last = None
    for m in _ENTRY.finditer(str(da.attrs.get("cell_methods", ""))):
        names = {n.strip() for n in m.group(1).split(":") if n.strip()}
        if names & {t, "time"}:
            last = m
    return last


def _given(period: str, step: str) -> float:
    """Seconds of a period given as ``"1h"``, ``"1D"``, ``"3 hours"``, ``"1 day"``."""
    try:
        seconds = pd.Timedelta(period).total_seconds()
    except (ValueError, TypeError):
        seconds = float("nan")
    if not seconds > 0:
        raise InputError(
            f"{step}: period={shown(period)} is not a length of time: give e.g. '1h' or '1D'",
            param="period",
        )
    return seconds


def _bounds_widths(bounds: xr.DataArray, t: str, step: str) -> np.ndarray:
    """Widths in seconds of time bounds (a DataArray with ``t`` and one other dimension)."""
    values = np.asarray(bounds.transpose(t, ...).values) if t in bounds.dims else None
    if values is None or values.ndim != 2 or not np.issubdtype(values.dtype, np.datetime64):
        raise InputError(
            f"{step}: bounds must be the time bounds of the data (dimensions ({t!r}, 2), "
            f"dates), not {bounds.dims} of {bounds.dtype}: give the dataset's time_bnds",
            param="bounds",
        )
    widths = (values[:, -1] - values[:, 0]) / np.timedelta64(1, "s")
    if not np.all(widths > 0):
        raise InputError(f"{step}: bounds has empty or reversed intervals", param="bounds")
    return widths


def _spacing(da: xr.DataArray, t: str) -> np.ndarray | None:
    """Seconds each time label stands for: the step to the next label for month starts
    (each month's or season's length), each label's month (or year) when the labels are
    about a month (a year) apart elsewhere in the month (CDO's ``monsum`` labels the
    middle), else their median spacing."""
    if da.sizes[t] < 2 or not np.issubdtype(da[t].dtype, np.datetime64):
        return None
    values = pd.DatetimeIndex(np.asarray(da[t].values, dtype="datetime64[ns]"))
    step = _step(values)
    days = step / pd.Timedelta(1, "D") if isinstance(step, pd.Timedelta) else 0.0
    if 27 < days < 32:
        return np.asarray(values.days_in_month, dtype="f8") * 86400.0
    if 360 < days < 367:
        return np.where(values.is_leap_year, 366.0, 365.0) * 86400.0
    return np.asarray(((values + step) - values).total_seconds(), dtype="f8")


def _as_period(seconds: np.ndarray, da: xr.DataArray, t: str) -> float | xr.DataArray:
    if np.all(seconds == seconds[0]):
        return float(seconds[0])
    return xr.DataArray(seconds, dims=(t,), coords={t: da[t]})


def _words(seconds: float | xr.DataArray) -> str:
    """``3600.0`` -> ``"1 hour"``, ``86400.0`` -> ``"1 day"``."""
    if isinstance(seconds, xr.DataArray):
        return "each time step"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds:g} seconds"


def accumulation_period(
    da: xr.DataArray, period: str | None, bounds: xr.DataArray | None, *, step: str
) -> tuple[float | xr.DataArray, str]:
    """The time each value of ``da`` accumulates over, in seconds (a number, or one per
    time label when they differ: monthly totals), and how it was found.

    Looked for in this order: ``period`` as given; the widths of the time ``bounds`` given
    (xarray keeps a dataset's ``time_bnds`` out of its DataArrays, so it must be given); a
    last time entry ``sum`` in ``cell_methods`` (totals: the spacing of the time labels,
    see :func:`_spacing`); an ERA5 name ``..._<N>hour_Accumulation``.

    Parameters
    ----------
    da : xr.DataArray
        Accumulated data.
    period : str | None
        A time span given by the user (``1h``), or ``None``.
    bounds : xr.DataArray | None
        Time bounds, or ``None``.
    step : str
        The step's name.

    Returns
    -------
    tuple[float | xr.DataArray, str]
        Seconds, and how they were found.

    Raises
    ------
    InputError
        When none of them tells, naming what was looked at and ``period=`` as the fix.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01T01", periods=3, freq="h")
    >>> tp = xr.DataArray([1e-3, 2e-3, 0.0], coords={"time": time}, attrs={"units": "m"},
    ...                   name="precipitation_amount_1hour_Accumulation")
    >>> accumulation_period(tp, None, None, step="to_rate")  # from the ERA5 name
    (3600.0, 'name')
    >>> accumulation_period(tp, "3h", None, step="to_rate")
    (10800.0, 'given')
    """
    if period is not None:
        return _given(period, step), "given"
    try:
        t: str | None = time_name(da)
    except InputError:
        t = None
    if bounds is not None and t is not None:
        return _as_period(_bounds_widths(bounds, t, step), da, t), "bounds"
    if t is not None:
        entry = _last_time_entry(da, t)
        spacing = _spacing(da, t)
        if entry is not None and entry.group(2) == "sum" and spacing is not None:
            return _as_period(spacing, da, t), "sum"
    text = f"{da.name} {da.attrs.get('long_name', '')}"
    hours = _ERA5_NAME.search(text)
    if hours and int(hours.group(1)) > 0:
        return int(hours.group(1)) * 3600.0, "name"
    raise InputError(
        f"{step}: cannot tell what time each value of {da.name or 'the data'!s} "
        f"({da.attrs.get('units')}) accumulates over: no time bounds given, no "
        "'time: sum' in cell_methods with two or more time steps, no '_1hour_Accumulation' "
        "name: give period='1h' (or the data's accumulation period)",
        param="period",
    )


def rate_attrs(da: xr.DataArray, how: str, seconds: float | xr.DataArray) -> dict[str, Any]:
    """Attributes of the mean rate of the accumulation ``da`` (units are the caller's):
    the standard name of the rate when CF has one (:data:`RATE_NAMES`), ``long_name``
    saying over what, and ``cell_methods`` with ``time: mean`` where it had ``time: sum``
    (or appended: the value is a mean over the period, not an instantaneous rate).

    Parameters
    ----------
    da : xr.DataArray
        The accumulation.
    how : str
        How the period was found (for ``long_name``).
    seconds : float | xr.DataArray
        The period in seconds.

    Returns
    -------
    dict[str, Any]
        The rate's attributes.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=2, freq="D")
    >>> tp = xr.DataArray([1e-3, 2e-3], coords={"time": time}, name="tp", attrs={"units": "m",
    ...     "standard_name": "lwe_thickness_of_precipitation_amount", "cell_methods": "time: sum"})
    >>> attrs = rate_attrs(tp, "sum", 86400.0)
    >>> attrs["standard_name"], attrs["long_name"], attrs["cell_methods"]
    ('lwe_precipitation_rate', 'mean rate of tp over 1 day', 'time: mean')
    """
    attrs = {k: v for k, v in da.attrs.items() if k not in ("standard_name", "units_metadata")}
    if da.attrs.get("standard_name") in RATE_NAMES:
        attrs["standard_name"] = RATE_NAMES[da.attrs["standard_name"]]
    name = da.attrs.get("long_name", da.name or "field")
    attrs["long_name"] = f"mean rate of {name} over {_words(seconds)}"
    try:
        t = time_name(da)
    except InputError:
        return attrs
    entry = _last_time_entry(da, t)
    methods = str(da.attrs.get("cell_methods", ""))
    if how == "sum" and entry is not None:
        mean = f"{entry.group(1)}mean{entry.group(3)}"
        attrs["cell_methods"] = methods[: entry.start()] + mean + methods[entry.end() :]
    else:
        attrs["cell_methods"] = cell_methods(da, f"{t}: mean")
    return attrs
