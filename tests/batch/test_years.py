"""Decimal years: one year (365.2425 days) for the trend recipe, a run's answers, the fit on
its figure and the demo data's warming."""

from __future__ import annotations

import cftime
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.batch.pipeline.headlines import headlines
from pangeo_hpc.demo import DemoSpec
from pangeo_hpc.demo.synthetic import TREND_REFERENCE, time_factors
from pangeo_hpc.recipes.years import DAYS_PER_YEAR, decimal_years


def test_known_answers():
    t = np.array(["2000-01-01", "2001-01-01", "2010-01-01T12"], dtype="datetime64[ns]")
    # 2000 is a leap year: 366 days; ten years later 3653 days and a half
    assert decimal_years(t) == pytest.approx([0.0, 366 / 365.2425, 3653.5 / 365.2425], rel=1e-14)
    assert decimal_years(xr.DataArray(t, dims="time")).tolist() == decimal_years(t).tolist()
    since = np.datetime64("2001-01-01")
    assert decimal_years(t, since) == pytest.approx(
        [-366 / 365.2425, 0, 3287.5 / 365.2425], rel=1e-14
    )
    assert DAYS_PER_YEAR == 365.2425


def test_cftime_calendars_count_their_own_years():
    """A model's year is its calendar's: 365 days in noleap, 360 in 360_day (CDO counts
    them so; issue 30), 366 in all_leap, 365.25 in julian, the Gregorian mean otherwise."""
    noleap = [cftime.DatetimeNoLeap(y, 1, 1) for y in (2000, 2001, 2004)]
    assert decimal_years(np.array(noleap)).tolist() == [0.0, 1.0, 4.0]
    days360 = np.array([cftime.Datetime360Day(2000, 1, 1), cftime.Datetime360Day(2000, 7, 1)])
    assert decimal_years(days360).tolist() == [0.0, 0.5]
    leap = np.array([cftime.DatetimeAllLeap(2001, 1, 1), cftime.DatetimeAllLeap(2003, 1, 1)])
    assert decimal_years(leap).tolist() == [0.0, 2.0]
    julian = np.array([cftime.DatetimeJulian(1900, 1, 1), cftime.DatetimeJulian(1904, 1, 1)])
    assert decimal_years(julian).tolist() == [0.0, 4.0]
    standard = np.array(
        [cftime.DatetimeGregorian(2000, 1, 1), cftime.DatetimeGregorian(2001, 1, 1)]
    )
    assert decimal_years(standard) == pytest.approx([0.0, 366 / 365.2425], rel=1e-14)


def test_hours_give_the_same_years_as_seconds_for_whole_hours():
    t = np.arange("1979-01", "2020-01", dtype="datetime64[M]").astype("datetime64[h]")
    assert decimal_years(t, unit="h") == pytest.approx(decimal_years(t), rel=1e-15, abs=1e-12)


def test_the_answers_and_the_demo_count_the_same_years():
    """A run's trend of the global mean, fitted on a series that rises exactly 10 K per
    365.2425 days, is 100 K/decade (to the 4 decimals of the answer: a year of 365.25 days
    would give 100.0021); the demo's warming is counted in the same years."""
    time = np.arange("2000-01-01", "2010-01-01", 30, dtype="datetime64[D]").astype("M8[ns]")
    years = (time - time[0]).astype("m8[s]").astype("f8") / (365.2425 * 86400)
    anom = xr.DataArray(10 * years, dims="time", coords={"time": time}, attrs={"units": "K"})
    answer = headlines(xr.Dataset({"global_mean_anomaly": anom}))
    assert answer["global_mean_anomaly"]["trend_per_decade"] == 100.0

    at = np.array(["2000-01-01T00", "2010-01-01T06"], dtype="datetime64[h]")
    _, decades, _ = time_factors(at, DemoSpec().resolved())
    assert TREND_REFERENCE == at[0]
    assert decades.tolist() == [0.0, (3653 * 24 + 6) / (365.2425 * 24) / 10]
