"""Decimal years: one length of a year for every trend, fit and synthetic signal.

A year is the mean Gregorian year, 365.2425 days (UDUNITS' ``year`` is 365.242198781 days:
9e-7 apart, see :data:`pangeo_hpc.recipes.cf_attrs.PER_TIME`). The trend recipe, the
answers of a recipe run, the fit drawn on its figure and the demo data's warming all count
time with it, so that they agree to the last digit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: days in the mean Gregorian year
DAYS_PER_YEAR = 365.2425
#: how many of each NumPy time unit make a day
_PER_DAY = {"D": 1.0, "h": 24.0, "m": 1440.0, "s": 86400.0}


def decimal_years(times: Any, since: Any = None, *, unit: str = "s") -> np.ndarray:
    """Years of :data:`DAYS_PER_YEAR` days from ``since`` to each of ``times``.

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
    return seconds.reshape(values.shape) / (DAYS_PER_YEAR * _PER_DAY["s"])


__all__ = ["DAYS_PER_YEAR", "decimal_years"]
