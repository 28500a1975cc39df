"""The synthetic hourly precipitation: daily totals and their percentiles known exactly.

``precipitation_amount_1hour_Accumulation(time1, lat, lon)`` is float32 metres, hourly
whatever the spec's ``frequency`` (era5-pds stores it so), a forecast variable as era5-pds
has it: the file of month M holds ``time1`` from M-01T07:00 to the next month's 01T06:00,
each value the accumulation over the hour *ending* at ``time1``, with
``time1_bounds = [time1 - 1 h, time1]``.

The hours ending at 01:00 ... 24:00 of day D (the intervals that start on D) are D's
precipitation. Its daily total in every cell is ``A(lat, lon) * q(D)``:

* ``A`` (:func:`amplitude`, m/day) has an ITCZ north of the equator, two storm tracks and
  a dry floor, so it is positive everywhere;
* ``q`` (:func:`daily_factors`) is one number per day, drawn from ``seed`` and the day
  alone: 0 on dry days (:data:`DRY_FRACTION` of them), else a Gamma variate of mean 1;

split over the day's 24 hours with weights that sum to 1 and peak at 16:00 local solar time
(:func:`_hourly_weights`), so a reader that gives the value at 00:00 to the day it is
stamped with (instead of the day before) gets other totals. A day is complete only across
two files: its first six hours are in the previous month's file.

The per-cell percentile of the daily totals over a period is then ``A * percentile(q)``
for any of NumPy's percentile methods (:func:`~pangeo_hpc.demo.answers.expected_precip_percentile`).
"""

from __future__ import annotations

import numpy as np

from pangeo_hpc.demo.spec import DemoSpec
from pangeo_hpc.demo.sst import EPOCH
from pangeo_hpc.inputs.periods import Month

#: share of dry days (q = 0)
DRY_FRACTION = 0.35
#: shape of the Gamma distribution of q on wet days (mean 1)
GAMMA_SHAPE = 0.8
#: the hours of a file start here after the month's first midnight
FIRST_HOUR = np.timedelta64(7, "h")
#: local solar hour of the middle of the wettest hour
WETTEST_HOUR = 16.0
#: a stream of random numbers of its own: the SST's are seeded (seed, year, month, step)
_STREAM = 1004


def times(month: Month) -> np.ndarray:
    """``time1`` (datetime64[h]) of the file of ``month``: 07:00 on the 1st to 06:00 next month.

    Parameters
    ----------
    month : Month
        The file's year and month.

    Returns
    -------
    np.ndarray
        The hours of the file.

    Examples
    --------
    >>> from pangeo_hpc.demo.precip import times
    >>> from pangeo_hpc.inputs.periods import Month
    >>> hours = times(Month(2000, 1))
    >>> hours[0], hours[-1], len(hours)
    (np.datetime64('2000-01-01T07','h'), np.datetime64('2000-02-01T06','h'), 744)
    """
    start = np.datetime64(str(month), "h") + FIRST_HOUR
    stop = np.datetime64(str(month.next()), "h") + FIRST_HOUR
    return np.arange(start, stop, np.timedelta64(1, "h"))


def _day_of(time1: np.ndarray) -> np.ndarray:
    """The day (datetime64[D]) whose precipitation the hour ending at ``time1`` is."""
    return (time1 - np.timedelta64(1, "h")).astype("datetime64[D]")


def daily_factors(spec: DemoSpec, days: np.ndarray) -> np.ndarray:
    """``q`` of each of ``days`` (datetime64[D]): 0 on dry days, else Gamma with mean 1.

    Parameters
    ----------
    spec : DemoSpec
        The demo's settings (its seed).
    days : np.ndarray
        The days (datetime64[D]).

    Returns
    -------
    np.ndarray
        One factor per day.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.demo.precip import daily_factors
    >>> from pangeo_hpc.demo.spec import DemoSpec
    >>> days = np.arange("2000-01-01", "2000-01-05", dtype="datetime64[D]")
    >>> daily_factors(DemoSpec(seed=1), days).round(3)  # 0 on dry days
    array([0.   , 0.   , 0.393, 0.   ])
    """
    base = np.datetime64("1900-01-01", "D")
    out = np.empty(len(days))
    for i, day in enumerate(np.asarray(days, dtype="datetime64[D]")):
        rng = np.random.default_rng([int(spec.seed), _STREAM, int((day - base).astype("i8"))])  # type: ignore[arg-type]
        wet, amount = rng.random(), rng.gamma(GAMMA_SHAPE, 1.0 / GAMMA_SHAPE)
        out[i] = amount if wet >= DRY_FRACTION else 0.0
    return out


def amplitude(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """``A(lat, lon)``: the daily total (m) of a day with ``q = 1``.

    Parameters
    ----------
    lat : np.ndarray
        Latitudes (degrees north).
    lon : np.ndarray
        Longitudes (degrees east).

    Returns
    -------
    np.ndarray
        The amplitude (m), shape ``(lat, lon)``.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.demo.precip import amplitude
    >>> amplitude(np.array([6.0, -45.0]), np.array([180.0])).round(4)  # m/day: ITCZ, storm track
    array([[0.016 ],
           [0.0054]])
    """
    la = lat.astype("f8")[:, None]
    lo = np.deg2rad(lon.astype("f8"))[None, :]
    itcz = 0.012 * np.exp(-(((la - 6.0) / 8.0) ** 2)) * (1.0 + 0.3 * np.cos(lo - np.pi))
    storms = 0.005 * np.exp(-(((np.abs(la) - 45.0) / 10.0) ** 2))
    return 0.0004 + itcz + storms


def _hourly_weights(lon: np.ndarray) -> np.ndarray:
    """Share of a day's total in each hour (24, lon): hour k is the one from k:00 to k+1:00.

    ``(1 + 0.8 cos(2 pi (local - 16) / 24)) / 24`` at the hour's middle in local solar
    time: 24 equally spaced values of a cosine sum to zero, so each column sums to 1.
    """
    local = np.arange(24.0)[:, None] + 0.5 + lon.astype("f8")[None, :] / 15.0
    return (1.0 + 0.8 * np.cos(2 * np.pi * (local - WETTEST_HOUR) / 24.0)) / 24.0


def hourly(spec: DemoSpec, amp: np.ndarray, lon: np.ndarray, time1: np.ndarray) -> np.ndarray:
    """The accumulations (m, float32) of the hours ending at ``time1`` (datetime64[h]).

    Parameters
    ----------
    spec : DemoSpec
        The demo's settings (its seed).
    amp : np.ndarray
        The daily amplitude of :func:`amplitude`.
    lon : np.ndarray
        Longitudes (degrees east): the hour of the daily peak follows local solar time.
    time1 : np.ndarray
        The ends of the hours.

    Returns
    -------
    np.ndarray
        The accumulations, shape ``(time1, lat, lon)``.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.demo.precip import amplitude, daily_factors, hourly, times
    >>> from pangeo_hpc.demo.spec import DemoSpec
    >>> from pangeo_hpc.inputs.periods import Month
    >>> spec, lat, lon = DemoSpec(seed=1), np.array([6.0]), np.array([0.0, 90.0])
    >>> time1 = times(Month(2000, 1))[42:66]  # the hours ending 2000-01-03T01 ... 01-04T00
    >>> day = hourly(spec, amplitude(lat, lon), lon, time1).sum(axis=0)  # 2000-01-03's total
    >>> day.round(5)
    array([[0.00346, 0.00488]], dtype=float32)
    >>> q = daily_factors(spec, np.array(["2000-01-03"], dtype="datetime64[D]"))
    >>> bool(np.allclose(day, amplitude(lat, lon) * q))
    True
    """
    days = _day_of(time1)
    q = daily_factors(spec, days)
    hour = (time1 - np.timedelta64(1, "h") - days.astype("datetime64[h]")).astype("i8")
    w = _hourly_weights(lon)[hour]  # (time, lon)
    return (amp[None] * (q[:, None] * w)[:, None, :]).astype("f4")


def bounds(time1: np.ndarray) -> np.ndarray:
    """``time1_bounds`` (hours since 1900-01-01, int32): the hour ending at each time.

    Parameters
    ----------
    time1 : np.ndarray
        The ends of the hours (datetime64[h]).

    Returns
    -------
    np.ndarray
        Shape ``(time1, 2)``: each hour's start and end.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.demo.precip import bounds
    >>> bounds(np.array(["1900-01-01T02"], dtype="datetime64[h]"))
    array([[1, 2]], dtype=int32)
    """
    end = (time1 - EPOCH).astype("i4")
    return np.stack([end - 1, end], axis=1).astype("i4")
