"""The time functions not in tests/batch/test_cmip_files.py on the five CF calendars of model
output (issue 30 §1): ``anomaly`` (CDO ``ymonsub`` of ``ymonmean``, ``yseassub`` of
``yseasmean``, with and without a reference period), ``percentile`` (``timpctl`` with
``timmin``/``timmax``, CDO's default method ``nrank`` as ours), ``running_mean``
(``runmean``), ``select_months``/``select_season`` (``selmon``/``selseason``) and, on
daily files, ``resample`` and ``climatology`` by month (``monmean``, ``ymonmean``: a
360_day month holds 30 days, a noleap February 28), against CDO 2.1.1 on monthly and daily
CMIP-like files (tests/support/cmipfiles.py); and one chain with ``anomaly`` through the command
line on noleap data, cached and not.

CDO 2.1.1 does not know the ``julian`` calendar: it reads it as ``standard``, the same
numbers as Gregorian dates 13 days later (January's daily steps half in February). Its
reference for julian data is the same file with each date's year, month, day and time
written in the proleptic Gregorian calendar (:func:`_cdo_view`): the two calendars have
the same leap years from 1901 to 2099, so that is the file CDO would see if it knew
julian. Labels are compared as ``YYYY-MM-DDThh:mm:ss`` in the data's calendar.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import cftime
import netCDF4
import numpy as np
import pytest
import xarray as xr
import yaml

from pangeo_hpc import recipes
from pangeo_hpc.io.files import open_files
from tests.support.cli import run_clis
from tests.support.cmipfiles import CALENDARS, write_cmip
from tests.support.needs import require_tool

pytestmark = pytest.mark.cdo

CODER = xr.coders.CFDatetimeCoder(use_cftime=True)
FREQS = ("monthly", "daily")
#: float32 values near 288 K against CDO's float64 of the same float32: one float32 step
#: at 288 is 3.1e-5; the differences here are at most half of it (measured 1.5e-5)
ATOL = 4e-5
#: first and last month of the reference period (the data: 2000-01 to 2002-12)
REFERENCE = ["2000-01", "2001-12"]
#: CDO keeps every value of a cell (its exact percentiles) for up to NBINS / 2 steps:
#: the 1096 days of three julian years need 2192 and more
EXACT_PCTL = {"CDO_PCTL_NBINS": "10000"}


@pytest.fixture(scope="module")
def cmip(tmp_path_factory) -> dict[tuple[str, str], Path]:
    """Three yearly files of ``tas`` per calendar and frequency, descending latitudes,
    -180..180 longitudes; and CDO's view of each (merged, float64)."""
    root = tmp_path_factory.mktemp("cmip-calendars")
    folders = {}
    for freq in FREQS:
        for calendar in CALENDARS:
            folder = root / freq / calendar
            write_cmip(folder, calendar, freq=freq, descending=True, east=True)
            folders[freq, calendar] = folder
    return folders


def _open(cmip, freq: str, calendar: str) -> xr.DataArray:
    return open_files(cmip[freq, calendar] / "*.nc", "tas").tas


def _cdo_view(cmip, freq: str, calendar: str) -> Path:
    """The files merged in float64 by CDO; for julian, the dates re-encoded as the same
    year-month-day-time in the proleptic Gregorian calendar (module docstring)."""
    folder = cmip[freq, calendar]
    merged = folder.parent / f"merged-{freq}-{calendar}.nc"
    if merged.exists():
        return merged
    cdo = require_tool("cdo")
    paths = sorted(map(str, folder.glob("*.nc")))
    raw = folder.parent / f"raw-{freq}-{calendar}.nc"
    subprocess.run([cdo, "-s", "-b", "F64", "mergetime", *paths, str(raw)], check=True)
    if calendar == "julian":
        with netCDF4.Dataset(raw, "a") as nc:
            time = nc["time"]
            names = ["time", *([time.bounds] if "bounds" in time.ncattrs() else [])]
            for name in names:
                dates = netCDF4.num2date(nc[name][:], time.units, "julian")
                same = [
                    cftime.datetime(*d.timetuple()[:6], calendar="proleptic_gregorian")
                    for d in np.ravel(dates)
                ]
                numbers = cftime.date2num(same, time.units, calendar="proleptic_gregorian")
                nc[name][:] = np.reshape(numbers, np.shape(dates))
            time.calendar = "proleptic_gregorian"
    raw.rename(merged)
    return merged


def _run(operators: str, *inputs: Path, out: Path, env: dict | None = None) -> Path:
    """``cdo -b F64 OPERATORS INPUTS OUT``."""
    cdo = require_tool("cdo")
    command = [cdo, "-s", "-b", "F64", *operators.split(), *map(str, inputs), str(out)]
    subprocess.run(command, check=True, env={**os.environ, **(env or {})})
    return out


def _cdo(operators: str, *inputs: Path, out: Path, env: dict | None = None) -> xr.DataArray:
    """:func:`_run`'s ``tas``, loaded, dates as cftime."""
    _run(operators, *inputs, out=out, env=env)
    with xr.open_dataset(out, decode_times=CODER) as ds:
        return ds.tas.load()


def _stamps(values) -> list[str]:
    """Dates as ``YYYY-MM-DDThh:mm:ss`` in their own calendar (datetime64 or cftime)."""
    values = np.asarray(values)
    if values.dtype.kind == "M":
        return [str(v) for v in np.datetime_as_string(values, unit="s")]
    return [v.strftime("%Y-%m-%dT%H:%M:%S") for v in values]


def _equal(got: xr.DataArray, expected: xr.DataArray, atol: float = ATOL) -> None:
    """The same values and time labels (in each one's calendar)."""
    assert got.dims == expected.dims
    np.testing.assert_allclose(got.values, expected.values, rtol=0, atol=atol)
    if "time" in got.dims:
        assert _stamps(got.time.values) == _stamps(expected.time.values)


@pytest.mark.parametrize("freq", FREQS)
@pytest.mark.parametrize("calendar", CALENDARS)
def test_anomaly_equals_ymonsub_and_yseassub(calendar, freq, cmip, tmp_path):
    """Monthly anomalies from all the data and from a reference period, and seasonal ones
    (each step minus its season's mean: DJF with its December), on every calendar."""
    da = _open(cmip, freq, calendar)
    path = _cdo_view(cmip, freq, calendar)
    clim = tmp_path / "clim.nc"
    _run("-ymonmean", path, out=clim)
    _equal(recipes.anomaly(da, freq="monthly"), _cdo("-ymonsub", path, clim, out=tmp_path / "a"))
    years = f"{REFERENCE[0][:4]}/{REFERENCE[1][:4]}"
    _run(f"-ymonmean -selyear,{years}", path, out=tmp_path / "ref.nc")
    expected = _cdo("-ymonsub", path, tmp_path / "ref.nc", out=tmp_path / "b")
    got = recipes.anomaly(da, reference=REFERENCE)  # monthly: from the labels' spacing
    _equal(got, expected)
    assert f"{REFERENCE[0]} to {REFERENCE[1]}" in got.attrs["long_name"]
    # one time per season set anew: CDO 2.1.1's yseasmean writes a garbage time for a
    # season now and then, and yseassub then aborts ("Season DJF already allocated")
    seasons = tmp_path / "seasons.nc"
    _run("-settaxis,2000-01-15,00:00:00,3month -yseasmean", path, out=seasons)
    expected = _cdo("-yseassub", path, seasons, out=tmp_path / "c")
    _equal(recipes.anomaly(da, freq="seasonal"), expected)


@pytest.mark.parametrize("freq", FREQS)
@pytest.mark.parametrize("calendar", CALENDARS)
def test_percentile_equals_timpctl(calendar, freq, cmip, tmp_path):
    """``timpctl`` between ``timmin`` and ``timmax`` with CDO's default ``--percentile
    nrank``, our default (recipes/percentile.py), exact (CDO_PCTL_NBINS): the same
    float32 values; the period in the data's own calendar. q=0 is ``timmin``."""
    da = _open(cmip, freq, calendar)
    path = _cdo_view(cmip, freq, calendar)
    low = _cdo("-timmin", path, out=tmp_path / "min.nc")
    high = _run("-timmax", path, out=tmp_path / "max.nc")
    for q in (10, 90):
        expected = _cdo(
            f"-timpctl,{q}", path, tmp_path / "min.nc", high, out=tmp_path / f"{q}", env=EXACT_PCTL
        )
        got = recipes.percentile(da, q=q)
        np.testing.assert_allclose(got.values, expected.values[0], rtol=1e-7, atol=0)
        np.testing.assert_array_equal(recipes.percentile(da, q=0).values, low.values[0])
    if calendar != "standard":
        assert got.time_period.encoding["calendar"] == calendar


@pytest.mark.parametrize("window", [4, 5])
@pytest.mark.parametrize("freq", FREQS)
@pytest.mark.parametrize("calendar", CALENDARS)
def test_running_mean_equals_runmean(calendar, freq, window, cmip, tmp_path):
    """Values and labels: an odd window labelled with its middle step, an even one halfway
    between its two middle steps (CDO), not halfway between the window's ends (a day off
    where months differ in length)."""
    da = _open(cmip, freq, calendar)
    path = _cdo_view(cmip, freq, calendar)
    expected = _cdo(f"-runmean,{window}", path, out=tmp_path / "run.nc")
    # float32 sums of up to 5 values near 288 (ours) against float64 ones: 1.6 steps of
    # 3.1e-5 measured
    _equal(recipes.running_mean(da, window=window), expected, atol=1.5e-4)


@pytest.mark.parametrize("freq", FREQS)
@pytest.mark.parametrize("calendar", CALENDARS)
def test_select_months_and_seasons_equal_selmon_and_selseason(calendar, freq, cmip, tmp_path):
    da = _open(cmip, freq, calendar)
    path = _cdo_view(cmip, freq, calendar)
    for months in ([2], [1, 4, 7, 10]):
        expected = _cdo(f"-selmon,{','.join(map(str, months))}", path, out=tmp_path / "m")
        _equal(recipes.select_months(da, months=months), expected, atol=0)
    for season in ("DJF", "JJA"):
        expected = _cdo(f"-selseason,{season}", path, out=tmp_path / season)
        _equal(recipes.select_season(da, season=season), expected, atol=0)


#: days in each month of the year of each calendar, written out (not the package's)
MONTH_DAYS = {
    "noleap": [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31],
    "360_day": [30] * 12,
    "all_leap": [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31],
}


@pytest.mark.parametrize("calendar", CALENDARS)
def test_monthly_means_of_daily_data_equal_monmean_and_ymonmean(calendar, cmip, tmp_path):
    """Each month's mean of its own days: 30 in every 360_day month, 28 in a noleap
    February (``resample`` by month, then counted with ``stat="sum"`` of ones), and the
    daily climatology by calendar month (``ymonmean``)."""
    da = _open(cmip, "daily", calendar)
    path = _cdo_view(cmip, "daily", calendar)
    got = recipes.resample(da, freq="monthly")
    expected = _cdo("-monmean", path, out=tmp_path / "mon.nc")
    # labels: the month's start (ours, documented) and its middle step (CDO's)
    np.testing.assert_allclose(got.values, expected.values, rtol=0, atol=ATOL)
    months = [s[:7] for s in _stamps(got.time.values)]
    assert months == [s[:7] for s in _stamps(expected.time.values)]
    assert months[:2] == ["2000-01", "2000-02"] and len(months) == 36
    days = recipes.resample(xr.ones_like(da.isel(lat=0, lon=0)), freq="monthly", stat="sum")
    if calendar in MONTH_DAYS:
        assert days.values.tolist() == MONTH_DAYS[calendar] * 3
    clim = recipes.climatology(da)
    expected = _cdo("-ymonmean", path, out=tmp_path / "ymon.nc")
    np.testing.assert_allclose(clim.values, expected.values, rtol=0, atol=ATOL)
    assert clim.month.values.tolist() == list(range(1, 13))


def test_anomaly_chain_through_the_cli_cached_equals_uncached_and_cdo(cmip, tmp_path, monkeypatch):
    """Monthly means of daily noleap files (each file's states cached), then anomalies
    from a reference period, by the command line: the same numbers on a first run that
    caches, a second that reads every state from the cache, and one with ``--no-cache``;
    and CDO's ``ymonsub`` of ``monmean`` by ``ymonmean`` of the reference years."""
    folder = cmip["daily", "noleap"]
    doc = {
        "name": "cmip-anomaly",
        "dataset": {"variable": "tas", "files": str(folder / "*.nc")},
        "steps": [{"resample": {"freq": "monthly"}}, {"anomaly": {"reference": REFERENCE}}],
    }
    recipe = tmp_path / "cmip-anomaly.yaml"
    recipe.write_text(yaml.safe_dump(doc))
    common = [str(recipe), "--format", "netcdf"]
    cached, uncached = run_clis(
        [*common, "--out", str(tmp_path / "cached")],
        [*common, "--out", str(tmp_path / "uncached"), "--no-cache"],
        cwd=tmp_path,
    )
    # from the states, not copied from "cached" (batch/pipeline/result_copies.py)
    monkeypatch.setenv("DASK_PANGEO_HPC__CACHE__COPY_RESULTS", "false")
    (again,) = run_clis([*common, "--out", str(tmp_path / "again")], cwd=tmp_path)
    for run in (cached, uncached, again):
        assert run.returncode == 0, run.stderr[-3000:]
    assert "read 3 of 3 files (0 cached" in cached.stdout, cached.stdout[-2000:]
    assert "read 0 of 3 files (3 cached" in again.stdout, again.stdout[-2000:]
    path = _cdo_view(cmip, "daily", "noleap")
    monthly = _run("-monmean", path, out=tmp_path / "monthly.nc")
    _run("-ymonmean -selyear,2000/2001", monthly, out=tmp_path / "ref.nc")
    expected = _cdo("-ymonsub", monthly, tmp_path / "ref.nc", out=tmp_path / "cdo.nc")
    with xr.open_dataset(tmp_path / "uncached" / "result.nc", decode_times=CODER) as whole:
        values = whole.tas.load()
    for name in ("cached", "again"):
        with xr.open_dataset(tmp_path / name / "result.nc", decode_times=CODER) as other:
            xr.testing.assert_identical(other.tas, values)
    assert values.time.values[0].calendar == "noleap"
    # float32 monthly means and their climatology, each rounded once (CDO's in float64):
    # up to 1.5 float32 steps near 288 K (4.4e-5 measured)
    np.testing.assert_allclose(values.values, expected.values, rtol=0, atol=1e-4)
    months = [s[:7] for s in _stamps(values.time.values)]
    assert months == [s[:7] for s in _stamps(expected.time.values)] and len(months) == 36
