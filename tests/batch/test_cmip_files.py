"""Model output as it comes (issue 30 §1): CMIP-like files (tests/support/cmipfiles.py: ``lat``/
``lon`` with ``bounds`` and ``lat_bnds``/``lon_bnds``/``time_bnds``, descending latitudes,
-180..180 longitudes, five calendars, int16 packing) through every time function, cached
and not, against CDO 2.1.1, written as CF that CDO and xarray open."""

from __future__ import annotations

import subprocess
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import yaml

from pangeo_hpc import recipes
from pangeo_hpc.batch.chains.recipe_yaml import load
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.batch.pipeline.steps import compute, open_inputs
from pangeo_hpc.io.files import open_files
from tests.support.cf import cfchecks, unavailable
from tests.support.cli import run_clis
from tests.support.cmipfiles import CALENDARS, edges, grid, write_cmip
from tests.support.needs import missing, require_tool

CODER = xr.coders.CFDatetimeCoder(use_cftime=True)
#: days in a year of each calendar, as CDO counts them (written out: not the package's)
YEAR_DAYS = {"noleap": 365, "360_day": 360, "all_leap": 366, "julian": 365.25, "standard": 365.2425}
#: every reduction along time an incremental run splits at, each a result of one recipe
RESULTS = {
    "mean": [{"time_mean": {}}],
    "annual": [{"resample": {"freq": "annual", "stat": "max"}}],
    "seasons": [{"area_mean": {}}, {"resample": {"freq": "seasonal"}}],
    "months": [{"climatology": {}}],
    "djf": [{"select_season": "DJF"}, {"climatology": {"freq": "seasonal"}}],
    "zonal": [{"zonal_mean": {}}, {"time_mean": {}}],
    "trend": [{"select_months": [1, 4, 7, 10]}, {"trend": {"per": "year", "stats": True}}],
}


@pytest.fixture(scope="module")
def cmip(tmp_path_factory) -> dict[str, Path]:
    """Three yearly files of monthly ``tas`` per calendar, descending latitudes, -180..180."""
    root = tmp_path_factory.mktemp("cmip")
    for calendar in CALENDARS:
        write_cmip(root / calendar, calendar, descending=True, east=True)
    return {c: root / c for c in CALENDARS}


def _recipe(folder: Path, files: Path, results: dict, name: str = "cmip") -> Path:
    doc = {
        "name": name,
        "dataset": {"variable": "tas", "files": str(files / "*.nc")},
        "results": results,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _merged(files: Path, folder: Path) -> Path:
    """CDO's view of the files: ``mergetime`` in float64."""
    out = folder / f"merged-{files.name}.nc"
    if not out.exists():
        cdo = require_tool("cdo")
        paths = sorted(map(str, files.glob("*.nc")))
        subprocess.run([cdo, "-s", "-b", "F64", "mergetime", *paths, str(out)], check=True)
    return out


def _cdo(operator: str, path: Path, out: Path) -> xr.Dataset:
    cdo = require_tool("cdo")
    subprocess.run([cdo, "-s", "-b", "F64", *operator.split(), str(path), str(out)], check=True)
    return xr.open_dataset(out, decode_times=False)


@pytest.mark.parametrize("calendar", CALENDARS)
def test_every_time_function_cached_equals_whole_on_every_calendar(
    calendar, cmip, client, tmp_path
):
    """States per file merge on cftime axes as on datetime64 ones: the same values to the
    bit (trends: to float64 rounding, their sums start from another origin), the same
    labels, attributes and bounds, and a second run reads nothing."""
    spec = load(_recipe(tmp_path, cmip[calendar], RESULTS))
    whole = compute(open_inputs(spec), client, cache=False)
    cache = StateCache(tmp_path / "cache")
    parts = compute(open_inputs(spec), client, cache=cache)
    again = compute(open_inputs(spec), client, cache=cache)
    assert parts.reads.incremental, parts.reads.why
    assert again.reads.files_read == 0
    for run in (parts, again):
        assert set(run.result.data_vars) == set(whole.result.data_vars)
        for name, a in whole.result.data_vars.items():
            b = run.result[name]
            if name.startswith("trend"):
                np.testing.assert_allclose(b.values, a.values, rtol=1e-9, atol=0)
            else:
                assert a.dtype == b.dtype, name
                np.testing.assert_array_equal(b.values, a.values, err_msg=name)
            assert a.attrs == b.attrs, name
            for c in a.coords:
                np.testing.assert_array_equal(b[c].values, a[c].values, err_msg=f"{name} {c}")
    first = whole.result["months"]
    assert first.lat.values.tolist() == grid(descending=True)[0].tolist()  # as given
    assert first.lon.values.tolist() == grid(east=True)[1].tolist()


@pytest.mark.cdo
@pytest.mark.parametrize("calendar", CALENDARS)
def test_timmean_zonmean_and_trend_equal_cdo(calendar, cmip, tmp_path):
    """``timmean``, ``zonmean`` and ``trend,equal=false`` (``b``: the slope per day of the
    calendar times the first step's length) of CDO 2.1.1; a trend per year is per year of
    the data's calendar: 365 days in noleap, 360 in 360_day (one of 365.2425 days is
    6.6e-4 and 1.4e-2 off, far above the 1e-9 here: both are float64 sums)."""
    ds = open_files(cmip[calendar] / "*.nc", "tas")
    merged = _merged(cmip[calendar], tmp_path)
    ref = _cdo("timmean", merged, tmp_path / "timmean.nc")
    mean = recipes.time_mean(ds.tas).compute()
    np.testing.assert_allclose(mean.values, ref.tas.values[0], rtol=1e-6)  # float32 both
    np.testing.assert_array_equal(mean.lat.values, ref.lat.values)
    np.testing.assert_array_equal(mean.lon.values, ref.lon.values)
    ref = _cdo("zonmean", merged, tmp_path / "zonmean.nc")
    zonal = recipes.zonal_mean(ds.tas).compute()
    np.testing.assert_allclose(zonal.values, ref.tas.values[..., 0], rtol=1e-6)
    cdo = require_tool("cdo")
    a, b = tmp_path / "a.nc", tmp_path / "b.nc"
    subprocess.run(
        [cdo, "-s", "-b", "F64", "trend,equal=false", str(merged), str(a), str(b)], check=True
    )
    with xr.open_dataset(merged, decode_times=False) as m, xr.open_dataset(b) as slope:
        first_step = float(m.time[1] - m.time[0])  # days
        per_day = slope.tas.values[0] / first_step
    got = recipes.trend(ds.tas, per="year").compute()
    np.testing.assert_allclose(got.values, per_day * YEAR_DAYS[calendar], rtol=1e-9)
    decade = recipes.trend(ds.tas, per="decade").compute()
    np.testing.assert_allclose(decade.values, per_day * YEAR_DAYS[calendar] * 10, rtol=1e-9)
    if calendar == "standard":
        assert decade.attrs["long_name"].endswith("per decade")
    else:
        assert decade.attrs["long_name"].endswith(
            f"per decade of {YEAR_DAYS[calendar]}-day years ({calendar} calendar)"
        )
    assert decade.attrs["units"] == "K/(10 year)"


@pytest.mark.cdo
def test_packed_int16_with_float64_scale_unpacks_to_float64_as_cf(tmp_path):
    """int16 with float64 ``scale_factor``/``add_offset``: float64 values, as netCDF4 and
    xarray decode them (float32 was 9.4e-6 K off CDO's mean), and CDO's ``timmean``."""
    folder = tmp_path / "packed"
    paths = write_cmip(folder, "noleap", pack=True, descending=True, east=True)
    ds = open_files(folder / "*.nc", "tas")
    assert ds.tas.dtype == np.float64
    expected = []
    for path in paths:
        with netCDF4.Dataset(path) as nc:
            expected.append(np.ma.filled(nc["tas"][:], np.nan))
    np.testing.assert_array_equal(ds.tas.values, np.concatenate(expected))
    with xr.open_mfdataset(
        paths, decode_times=CODER, data_vars="minimal", coords="minimal", compat="override"
    ) as ref:
        assert ref.tas.dtype == np.float64
        np.testing.assert_array_equal(ds.tas.values, ref.tas.values)
    cdo = _cdo("timmean", _merged(folder, tmp_path), tmp_path / "timmean.nc")
    mean = recipes.time_mean(ds.tas).compute()
    assert mean.dtype == np.float64
    np.testing.assert_allclose(mean.values, cdo.tas.values[0], rtol=1e-13)


@pytest.fixture(scope="module")
def cf_tools() -> None:
    why = unavailable()
    if why is not None:
        missing("cfchecks", why)


@pytest.mark.cdo
@pytest.mark.parametrize("calendar", ["noleap", "360_day"])
def test_cli_outputs_keep_the_bounds_pass_cfchecks_and_open_in_cdo(
    cf_tools, calendar, cmip, tmp_path
):
    """The command line on CMIP files, NetCDF and Zarr: the cells' bounds as the files
    gave them, the period in the data's calendar; cfchecks finds no error, CDO reads it."""
    results = {
        "mean": [{"select_region": {"lat": [-50, 50], "lon": [-100, 100]}}, {"time_mean": {}}],
        "trend": [{"trend": {}}],
    }
    recipe = _recipe(tmp_path, cmip[calendar], results, name=f"cmip-{calendar}")
    runs = run_clis(
        *(
            [str(recipe), "--out", str(tmp_path / fmt), "--format", fmt, "--no-cache"]
            for fmt in ("netcdf", "zarr")
        ),
        cwd=tmp_path,
    )
    for r in runs:
        assert r.returncode == 0, r.stderr[-3000:]
    lat, lon = grid(descending=True, east=True)
    box = (np.abs(lat) <= 50, np.abs(lon) <= 100)
    path = tmp_path / "netcdf" / "result.nc"
    with netCDF4.Dataset(path) as nc:
        assert nc["lat"].bounds == "lat_bnds" and nc["lon"].bounds == "lon_bnds"
        np.testing.assert_array_equal(nc["lat"][:], lat[box[0]])
        # as the files gave them (descending latitudes: each pair descending too)
        np.testing.assert_array_equal(nc["lat_bnds"][:], edges(lat)[box[0]])
        np.testing.assert_array_equal(nc["lon_bnds"][:], edges(lon)[box[1]])
        # the trend's whole grid beside the box's, each with its own cells' edges
        assert nc["lat_trend"].bounds == "lat_trend_bnds"
        np.testing.assert_array_equal(nc["lat_trend_bnds"][:], edges(lat))
        np.testing.assert_array_equal(nc["lon_trend_bnds"][:], edges(lon))
        assert nc["time_period_mean"].calendar == nc["time_period_trend"].calendar == calendar
        assert "decade of" in nc["trend"].long_name
    report = cfchecks(path, tmp_path / "tables")
    assert report.errors == [], report.output
    cdo = require_tool("cdo")
    info = subprocess.run([cdo, "-s", "griddes", str(path)], capture_output=True, text=True)
    assert info.returncode == 0, info.stderr
    assert "ybounds" in info.stdout and "xbounds" in info.stdout
    with xr.open_zarr(tmp_path / "zarr" / "result.zarr", decode_times=CODER) as z:
        with xr.open_dataset(path, decode_times=CODER) as n:
            xr.testing.assert_identical(z.lat_bnds, n.lat_bnds)
            xr.testing.assert_allclose(z["mean"], n["mean"])
            assert z.time_period_mean.values[()] == n.time_period_mean.values[()]
