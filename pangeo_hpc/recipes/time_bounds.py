"""The interval of time each value stands for, from the step that makes it to the file.

A reduction along time knows what each of its values covers: the steps it reduced. Their
union, from the first step's start to the last step's end, is the value's interval, as CDO
writes it in ``time_bnds`` (``seasmean``, ``runmean``, ``timmean``: the first input
step's lower bound and the last one's upper bound). A JJA mean from a seasonal resample
then covers June to August, not the year to the next label; a 12-month running mean its
twelve months, not one month around its label.

**Where intervals live.** CF writes them as a ``(time, bnds)`` variable, which a
DataArray cannot hold (its coordinates use its own dimensions only). They travel as two
coordinates along the time dimension, ``{t}_bnds_lower`` and ``{t}_bnds_upper``
(:func:`bounds_names`): a selection (``isel``, ``where``) keeps them, a mean over space or
an anomaly keeps them, a reduction along time replaces or removes them.
:func:`pangeo_hpc.recipes.cf_attrs.prepare_for_file` writes them as ``{t}_bnds``.

**Steps without intervals** (the input data) stand for ``[label, label + step)``: whole
months (or years) for labels on the first of a month at midnight (the smallest number of
months between them: monthly data of one season are still months), else the median
spacing of the labels, the convention of :func:`time_span` since the first time means.

Dates are ``datetime64`` or cftime dates of any calendar: the arithmetic is pandas' for
the first, xarray's ``CFTimeIndex`` for the second, so that an interval is in the data's
own calendar.
"""

from __future__ import annotations

import datetime
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

#: suffixes of the two coordinates that carry the intervals of a time dimension
LOWER, UPPER = "_bnds_lower", "_bnds_upper"


def bounds_names(t: str) -> tuple[str, str]:
    """Names of the coordinates that hold the lower and upper bounds of time dimension
    ``t``: ``("time_bnds_lower", "time_bnds_upper")`` for ``time``.

    Parameters
    ----------
    t : str
        A time dimension.

    Returns
    -------
    tuple[str, str]
        The two names.

    Examples
    --------
    >>> bounds_names("time0")
    ('time0_bnds_lower', 'time0_bnds_upper')
    """
    return f"{t}{LOWER}", f"{t}{UPPER}"


def is_bounds_coord(name: str) -> bool:
    """Whether ``name`` is one of the coordinates :func:`bounds_names` makes.

    Parameters
    ----------
    name : str
        A coordinate name.

    Returns
    -------
    bool
        Whether it holds bounds.

    Examples
    --------
    >>> is_bounds_coord("time_bnds_lower"), is_bounds_coord("time")
    (True, False)
    """
    return name.endswith((LOWER, UPPER))


def _index(values: np.ndarray) -> pd.DatetimeIndex | xr.CFTimeIndex:
    """Dates as an index with date arithmetic: pandas' for datetime64, xarray's for
    cftime (its calendar kept)."""
    if np.issubdtype(values.dtype, np.datetime64):
        return pd.DatetimeIndex(values.astype("datetime64[ns]"))
    return xr.CFTimeIndex(values)


def _values(index: pd.DatetimeIndex | xr.CFTimeIndex) -> np.ndarray:
    """An index's dates as a NumPy array (datetime64[ns] or cftime objects)."""
    return np.asarray(index.values if isinstance(index, pd.DatetimeIndex) else np.asarray(index))


def step_of(values: np.ndarray) -> tuple[str, int | float]:
    """The length of one step of the dates ``values``: ``("months", n)`` for labels on the
    first of a month at midnight (n the smallest positive number of months between two),
    else ``("seconds", median spacing)``; ``("seconds", 0)`` for fewer than two dates.

    Parameters
    ----------
    values : np.ndarray
        Dates.

    Returns
    -------
    tuple[str, int | float]
        The unit and the number.

    Examples
    --------
    >>> import pandas as pd
    >>> step_of(pd.date_range("2000-01-01", periods=3, freq="MS").values)
    ('months', 1)
    >>> step_of(pd.date_range("2000-01-01", periods=3, freq="6h").values)
    ('seconds', 21600.0)
    """
    if values.size < 2:
        return "seconds", 0
    index = _index(values)
    midnight = (index.hour == 0) & (index.minute == 0) & (index.second == 0)
    if (np.asarray(index.day) == 1).all() and np.asarray(midnight).all():
        months = np.diff(np.asarray(index.year) * 12 + np.asarray(index.month))
        positive = months[months > 0]
        if positive.size:
            return "months", int(positive.min())
    deltas = np.diff(values)
    if deltas.dtype.kind == "m":  # datetime64: at once (a 20-year daily axis in 0.1 ms)
        seconds = deltas.astype("timedelta64[ns]").astype("i8") / 1e9
    else:  # cftime dates: timedelta objects
        seconds = np.array([_seconds(d) for d in deltas])
    return "seconds", float(np.median(seconds))


def _seconds(delta: Any) -> float:
    if isinstance(delta, datetime.timedelta):
        return delta.total_seconds()
    return float(np.timedelta64(delta, "ns").astype("i8")) / 1e9


def _shifted(values: np.ndarray, step: tuple[str, int | float]) -> np.ndarray:
    """``values`` plus one ``step`` (:func:`step_of`), in their calendar.

    Parameters
    ----------
    values : np.ndarray
        Dates.
    step : tuple[str, int | float]
        What :func:`step_of` gave.

    Returns
    -------
    np.ndarray
        The shifted dates.
    """
    kind, n = step
    index = _index(values)
    if kind == "months":
        if isinstance(index, pd.DatetimeIndex):
            return _values(index + pd.DateOffset(months=int(n)))
        return _values(index.shift(int(n), "MS"))
    if isinstance(index, pd.DatetimeIndex):
        return _values(index + pd.Timedelta(float(n), "s"))
    return _values(index + datetime.timedelta(seconds=float(n)))


def intervals(time: xr.DataArray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bound of each step of the time coordinate ``time`` (``da[t]``,
    whose coordinates hold the carried intervals, if any), else ``[label, label + step)``.

    Parameters
    ----------
    time : xr.DataArray
        A time coordinate.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        Lower and upper bounds.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> months = pd.date_range("2000-01-01", periods=2, freq="MS")
    >>> lower, upper = intervals(xr.DataArray(months, coords={"time": months}))
    >>> lower.astype("datetime64[D]")
    array(['2000-01-01', '2000-02-01'], dtype='datetime64[D]')
    >>> upper.astype("datetime64[D]")  # each month to the next
    array(['2000-02-01', '2000-03-01'], dtype='datetime64[D]')
    """
    t = str(time.dims[0])
    lower, upper = bounds_names(t)
    if lower in time.coords and upper in time.coords:
        return _in_memory(time[lower]), _in_memory(time[upper])
    values = np.asarray(time.values)
    return values, _shifted(values, step_of(values))


def _in_memory(coord: xr.DataArray) -> np.ndarray:
    """A coordinate's values. ``DataArray.chunk`` makes Dask arrays of the coordinates
    along the chunked dimension too; these were NumPy arrays (:func:`with_intervals`):
    taken back without the scheduler, which a recipe chain forbids while it is built."""
    data = coord.variable.data
    if hasattr(data, "dask"):
        import dask.local

        # the function, not "sync": see pangeo_hpc/clusters/threads.py
        (data,) = dask.compute(data, scheduler=dask.local.get_sync)
    return np.asarray(data)


def with_intervals(da: xr.DataArray, t: str, lower: np.ndarray, upper: np.ndarray) -> xr.DataArray:
    """``da`` with the intervals of its time dimension ``t`` (replacing any it had).

    Parameters
    ----------
    da : xr.DataArray
        The data.
    t : str
        The time dimension.
    lower : np.ndarray
        Lower bounds, one per step.
    upper : np.ndarray
        Upper bounds, one per step.

    Returns
    -------
    xr.DataArray
        A copy of ``da``.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> months = pd.date_range("2000-01-01", periods=3, freq="MS")
    >>> da = xr.DataArray([1.0, 2.0, 3.0], coords={"time": months})
    >>> lower, upper = intervals(da["time"])
    >>> list(with_intervals(da, "time", lower, upper).coords)
    ['time', 'time_bnds_lower', 'time_bnds_upper']
    """
    lo, up = bounds_names(t)
    return da.assign_coords({lo: (t, np.asarray(lower)), up: (t, np.asarray(upper))})


def without_intervals(da: xr.DataArray, t: str) -> xr.DataArray:
    """``da`` without the interval coordinates of ``t`` (before a reduction along it).

    Parameters
    ----------
    da : xr.DataArray
        The data.
    t : str
        The time dimension.

    Returns
    -------
    xr.DataArray
        A copy of ``da``.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> months = pd.date_range("2000-01-01", periods=3, freq="MS")
    >>> da = xr.DataArray([1.0, 2.0, 3.0], coords={"time": months})
    >>> carried = with_intervals(da, "time", *intervals(da["time"]))
    >>> list(without_intervals(carried, "time").coords)
    ['time']
    """
    return da.drop_vars([n for n in bounds_names(t) if n in da.coords])


def span(time: xr.DataArray) -> tuple[Any, Any]:
    """Start and end of all the steps of ``time``: the first lower and the last upper
    bound of :func:`intervals` (the earliest and latest, whatever the order).

    Parameters
    ----------
    time : xr.DataArray
        A time coordinate.

    Returns
    -------
    tuple[Any, Any]
        ``(start, end)``.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> months = pd.date_range("2000-01-01", periods=3, freq="MS")
    >>> start, end = span(xr.DataArray(months, coords={"time": months}))
    >>> str(start)[:10], str(end)[:10]  # the last month ends on April 1st
    ('2000-01-01', '2000-04-01')
    """
    lower, upper = intervals(time)
    return min(lower), max(upper)


def middle(start: Any, end: Any) -> Any:
    """The date halfway between ``start`` and ``end`` (datetime64 or cftime).

    Parameters
    ----------
    start : Any
        A date.
    end : Any
        A later date.

    Returns
    -------
    Any
        The middle date.

    Examples
    --------
    >>> middle(np.datetime64("2000-01-01"), np.datetime64("2000-01-03"))
    np.datetime64('2000-01-02T00:00:00.000000000')
    >>> import cftime
    >>> middle(cftime.DatetimeNoLeap(2000, 2, 28), cftime.DatetimeNoLeap(2000, 3, 1))  # no Feb 29
    cftime.DatetimeNoLeap(2000, 2, 28, 12, 0, 0, 0, has_year_zero=True)
    """
    if isinstance(start, np.datetime64):
        start, end = np.datetime64(start, "ns"), np.datetime64(end, "ns")
        return start + (end - start) // 2
    return start + (end - start) / 2


def grouped(
    lower: np.ndarray, upper: np.ndarray, first: np.ndarray, last: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of values that each reduce the steps ``first[i]`` to ``last[i]``
    (positions, inclusive, steps in time order): from the first one's lower bound to the
    last one's upper bound.

    Parameters
    ----------
    lower : np.ndarray
        Lower bound of each step.
    upper : np.ndarray
        Upper bound of each step.
    first : np.ndarray
        First step of each value.
    last : np.ndarray
        Last step of each value.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        Lower and upper bounds, one per value.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> months = pd.date_range("2000-01-01", periods=3, freq="MS")
    >>> lower, upper = intervals(xr.DataArray(months, coords={"time": months}))
    >>> start, end = grouped(lower, upper, first=np.array([0, 2]), last=np.array([1, 2]))
    >>> start.astype("datetime64[D]")  # Jan-Feb, and March
    array(['2000-01-01', '2000-03-01'], dtype='datetime64[D]')
    >>> end.astype("datetime64[D]")
    array(['2000-03-01', '2000-04-01'], dtype='datetime64[D]')
    """
    first, last = np.asarray(first, dtype=np.intp), np.asarray(last, dtype=np.intp)
    return np.asarray(lower)[first], np.asarray(upper)[last]


def calendar_encoding(time: xr.DataArray) -> dict[str, str]:
    """``units`` and ``calendar`` of ``time`` as read from its file (its encoding), or the
    calendar of its cftime dates: what a new time coordinate made from it is written in.

    Parameters
    ----------
    time : xr.DataArray
        A time coordinate.

    Returns
    -------
    dict[str, str]
        ``units`` and ``calendar``, those known.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> time = xr.DataArray(pd.date_range("2000-01-01", periods=2), dims="time")
    >>> time.encoding = {"units": "hours since 1900-01-01", "calendar": "gregorian"}  # as read
    >>> calendar_encoding(time)
    {'units': 'hours since 1900-01-01', 'calendar': 'gregorian'}
    >>> calendar_encoding(xr.DataArray(xr.date_range("2000-01-01", periods=2, calendar="noleap")))
    {'calendar': 'noleap'}
    """
    enc = {k: str(time.encoding[k]) for k in ("units", "calendar") if k in time.encoding}
    values = np.asarray(time.values)
    if "calendar" not in enc and values.size and hasattr(values.flat[0], "calendar"):
        enc["calendar"] = str(values.flat[0].calendar)
    return enc


__all__ = [
    "LOWER",
    "UPPER",
    "bounds_names",
    "calendar_encoding",
    "grouped",
    "intervals",
    "is_bounds_coord",
    "middle",
    "span",
    "step_of",
    "with_intervals",
    "without_intervals",
]
