"""Decimal years: one length of a year for every trend, fit and synthetic signal.

A year is the data's calendar's own: the mean Gregorian year, 365.2425 days, for
datetime64 and the ``standard``/``gregorian``/``proleptic_gregorian`` calendars (UDUNITS'
``year`` is 365.242198781 days: 9e-7 apart, see
:data:`pangeo_hpc.recipes.cf_attrs.PER_TIME`); 365 days in ``noleap``, 366 in ``all_leap``,
360 in ``360_day``, 365.25 in ``julian`` (:data:`CALENDAR_YEAR_DAYS`): a model's decade
is ten of its own years, as CDO counts them. The trend recipe, the answers of a recipe
run, the fit drawn on its figure and the demo data's warming all count time with it, so
that they agree to the last digit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: days in the mean Gregorian year
DAYS_PER_YEAR = 365.2425
#: days in a year of each CF calendar whose years are not the Gregorian mean
CALENDAR_YEAR_DAYS = {
    "noleap": 365.0,
    "365_day": 365.0,
    "all_leap": 366.0,
    "366_day": 366.0,
    "360_day": 360.0,
    "julian": 365.25,
}
#: how many of each NumPy time unit make a day
_PER_DAY = {"D": 1.0, "h": 24.0, "m": 1440.0, "s": 86400.0}


def _year_days(calendar: str | None) -> float:
    """Days in a (mean) year of ``calendar``; :data:`DAYS_PER_YEAR` for the Gregorian ones
    and ``None`` (datetime64).

    >>> _year_days("noleap"), _year_days("360_day"), _year_days("standard")
    (365.0, 360.0, 365.2425)
    """
    return CALENDAR_YEAR_DAYS.get((calendar or "standard").lower(), DAYS_PER_YEAR)


def calendar_of(times: Any) -> str | None:
    """The CF calendar of cftime dates (``times`` an array, a DataArray or a date), ``None``
    for datetime64.

    Parameters
    ----------
    times : Any
        Dates, or one date.

    Returns
    -------
    str | None
        The calendar, or ``None``.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> calendar_of(xr.date_range("2000-01-01", periods=2, calendar="360_day", use_cftime=True))
    '360_day'
    >>> calendar_of(pd.date_range("2000-01-01", periods=2).values) is None  # datetime64
    True
    """
    values = np.asarray(getattr(times, "values", times))
    if values.size == 0 or values.dtype.kind == "M":
        return None
    return str(getattr(values.ravel()[0], "calendar", "") or "standard")


def year_phrase(calendar: str | None) -> str:
    """What a year is, for a ``long_name``: empty for the Gregorian calendars, else
    `` of 365-day years (noleap calendar)`` and the like.

    Parameters
    ----------
    calendar : str | None
        A CF calendar, or ``None``.

    Returns
    -------
    str
        The phrase.

    Examples
    --------
    >>> year_phrase("360_day"), year_phrase("julian"), year_phrase(None)
    (' of 360-day years (360_day calendar)', ' of 365.25-day years (julian calendar)', '')
    """
    if calendar is None or calendar.lower() not in CALENDAR_YEAR_DAYS:
        return ""
    return f" of {_year_days(calendar):g}-day years ({calendar} calendar)"


def decimal_years(times: Any, since: Any = None, *, unit: str = "s") -> np.ndarray:
    """Years of the dates' calendar (:func:`_year_days`) from ``since`` to each of ``times``.

    Parameters
    ----------
    times : array-like or DataArray
        ``datetime64`` values, or cftime dates (any calendar).
    since : datetime64 or cftime date, optional
        The origin; default the first of ``times``.
    unit : {"s", "m", "h", "D"}
        Whole units the differences are counted in before dividing (``datetime64`` only):
        the resolution of the answer. Seconds by default; the demo data counts hours.

    Returns
    -------
    numpy.ndarray
        float64 years, negative before ``since``.

    Examples
    --------
    >>> t = np.array(["2000-01-01", "2000-07-01T15", "2001-01-01"], dtype="datetime64[h]")
    >>> decimal_years(t).round(4).tolist()
    [0.0, 0.5, 1.0021]
    """
    values = np.asarray(getattr(times, "values", times))
    origin = values[0] if since is None else since
    if np.issubdtype(values.dtype, np.datetime64):
        delta = (values - np.datetime64(origin)).astype(f"timedelta64[{unit}]").astype("f8")
        return delta / (DAYS_PER_YEAR * _PER_DAY[unit])
    seconds = np.array([(v - origin).total_seconds() for v in values.ravel()], dtype="f8")
    return seconds.reshape(values.shape) / (_year_days(calendar_of(values)) * _PER_DAY["s"])


__all__ = [
    "CALENDAR_YEAR_DAYS",
    "DAYS_PER_YEAR",
    "calendar_of",
    "decimal_years",
    "year_phrase",
]
