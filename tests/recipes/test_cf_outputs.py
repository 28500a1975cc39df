"""Outputs other tools accept: result.nc passes the CF checker, Zarr stores open anywhere."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.recipes.cf_attrs import per_time_units
from tests.support.cf import cfchecks, unavailable
from tests.support.cli import run_clis
from tests.support.needs import missing, require_tool

PERIOD = ("--start", "2000-01", "--end", "2001-12")


@pytest.fixture(scope="module")
def cf_tools() -> None:
    why = unavailable()
    if why is not None:
        missing("cfchecks", why)


#: a recipe of what no shipped recipe writes: text labels (the seasons), results on time
#: axes of their own (JJA means beside monthly values), windows, a percentile
SEASONS_RECIPE = """
name: seasons
description: |
  Seasonal climatology, JJA means, a 12-month running mean and a percentile of SST.
dataset:
  variable: sea_surface_temperature
  start: "2000-01"
  end: "2001-12"
results:
  seasons:
    - climatology: {freq: seasonal}
  jja:
    - area_mean: {}
    - select_season: {season: JJA}
    - resample: {freq: seasonal}
  smooth:
    - area_mean: {}
    - resample: {freq: monthly}
    - running_mean: {window: 12}
  p90:
    - select_region: {name: nino34}
    - percentile: {q: 90}
"""
RECIPES = ("era5-sst-mean", "era5-sst-trend", "seasons", "era5-nino34-djf")
#: the recipes run on other periods: era5-nino34-djf on three years (two whole winters;
#: data from January 2000 on begin with a DJF without its December, left out: its label,
#: 1999-12-01, lay outside its bounds, and cfchecks warned, CF 7.1)
PERIODS = {"era5-nino34-djf": ("--start", "2000-01", "--end", "2002-12")}


@pytest.fixture(scope="module")
def outputs(demo_tree, tmp_path_factory) -> dict[str, Path]:
    """result.nc of two shipped recipes and of :data:`SEASONS_RECIPE` on two years of the
    demo tree."""
    base = tmp_path_factory.mktemp("cf-outputs")
    (base / "seasons.yaml").write_text(SEASONS_RECIPE)
    commands = [
        (
            str(base / "seasons.yaml") if recipe == "seasons" else recipe,
            "--data",
            str(demo_tree),
            *PERIODS.get(recipe, PERIOD),
            "--workers",
            "1",
            "--no-progress",
            "--out",
            str(base / recipe),
        )
        for recipe in RECIPES
    ]
    for recipe, r in zip(RECIPES, run_clis(*commands, cwd=base), strict=True):  # 2 at a time
        assert r.returncode == 0, f"{recipe}: {r.stderr}"
    return {recipe: base / recipe / "result.nc" for recipe in RECIPES}


@pytest.mark.slow
@pytest.mark.parametrize("recipe", RECIPES)
def test_result_passes_cfchecks(cf_tools, outputs, recipe, tmp_path):
    report = cfchecks(outputs[recipe], tmp_path / "tables")
    print(report.output)
    assert report.errors == [], "\n".join(report.errors)
    # no warnings either: before, the mean's file had 0 errors but no Conventions and no
    # time bounds, which cfchecks only warns about
    assert report.warnings == [], "\n".join(report.warnings)


@pytest.mark.slow
@pytest.mark.parametrize("recipe", RECIPES)
def test_compliance_checker_finds_no_errors(cf_tools, outputs, recipe):
    exe = Path(sys.executable).parent / "compliance-checker"
    if not exe.is_file() and shutil.which("compliance-checker") is None:
        missing("compliance-checker", "pip install compliance-checker (the test extras)")
    cmd = [str(exe) if exe.is_file() else "compliance-checker", "--test=cf:1.8"]
    r = subprocess.run([*cmd, str(outputs[recipe])], capture_output=True, text=True, timeout=300)
    print(r.stdout)
    # it ran to its report (which has no list of corrective actions when none is needed)
    assert re.search(r"Corrective Actions|All tests passed!", r.stdout), r.stdout + r.stderr
    # its report has an "Errors" section (high priority) only when there are some; the
    # warnings left: bounds of the scalar time_period are 1-D, as CF 7.1 wants for a scalar
    assert not re.search(r"^\s+Errors\s*$", r.stdout, re.MULTILINE), r.stdout


@pytest.mark.slow
def test_metadata_follows_the_data(cf_tools, outputs):
    import cfunits

    mean = xr.open_dataset(outputs["era5-sst-mean"])
    trend = xr.open_dataset(outputs["era5-sst-trend"])
    assert mean.attrs["Conventions"] == "CF-1.8" and "era5-sst-mean" in mean.attrs["history"]
    # a mean of SST is still SST; a trend or an anomaly is not
    assert mean.time_mean.attrs["standard_name"] == "sea_surface_temperature"
    assert mean.time_mean.attrs["cell_methods"] == "time: mean"
    assert mean.global_mean_series.attrs["cell_methods"] == "area: mean where sea time0: mean"
    for name in ("trend", "global_mean_trend", "global_mean_anomaly", "nino34"):
        assert "standard_name" not in trend[name].attrs, name
    # K per decade in a spelling UDUNITS parses, and that means 0.1 K per year
    units = cfunits.Units(trend.trend.attrs["units"])
    assert units.isvalid and units.equivalent(cfunits.Units("K/year"))
    assert cfunits.Units.conform(1.0, units, cfunits.Units("K/year")) == pytest.approx(0.1)
    # monthly means stand for their months; the time means for the whole period
    bounds = mean[mean.time0.attrs["bounds"]].values
    assert (bounds[:, 0] == mean.time0.values).all()
    assert bounds[0, 1] == np.datetime64("2000-02-01") and bounds[-1, 1] == np.datetime64("2002-01")
    period = mean[mean.time_period.attrs["bounds"]].values
    np.testing.assert_array_equal(period, np.array(["2000-01-01", "2002-01-01"], "M8[ns]"))
    np.testing.assert_array_equal(trend[trend.time_period.attrs["bounds"]].values, period)
    # every time in the data's calendar (the demo files': gregorian), not xarray's default
    for path in (outputs["era5-sst-mean"], outputs["era5-sst-trend"]):
        with xr.open_dataset(path, decode_times=False) as raw:
            for name in ("time0", "time_period"):
                assert raw[name].attrs["calendar"] == "gregorian", (path.parent.name, name)
    # coordinates: no _FillValue, with standard_name and axis
    import netCDF4

    with netCDF4.Dataset(outputs["era5-sst-trend"]) as nc:
        for name, axis in (("lat", "Y"), ("lon", "X"), ("time0", "T")):
            attrs = nc[name].__dict__
            assert "_FillValue" not in attrs and attrs["axis"] == axis, (name, attrs)
            assert attrs["standard_name"] in ("latitude", "longitude", "time")
        assert "coordinates" not in nc["global_mean_anomaly"].__dict__  # no scalar time on it


@pytest.mark.parametrize(("per", "factor"), [("year", 1.0), ("decade", 0.1), ("century", 0.01)])
def test_rate_units_parse_and_mean_what_they_say(cf_tools, per, factor):
    import cfunits

    for base, per_year in (("K", "K/year"), ("m s-1", "m s-1/year"), ("", "1/year")):
        units = cfunits.Units(per_time_units(base, per))
        assert units.isvalid, per_time_units(base, per)
        got = cfunits.Units.conform(1.0, units, cfunits.Units(per_year))
        assert got == pytest.approx(factor), (base, per)


def _open_silently(store: Path) -> None:
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = xr.open_zarr(store)
        ds.load()
        group = zarr.open_group(store, mode="r")
    assert ds.data_vars and set(map(str, ds.data_vars)) <= set(group.array_keys())


@pytest.mark.slow
def test_zarr_outputs_open_without_warnings(demo_tree, tmp_path):
    out, store = tmp_path / "trend", tmp_path / "sst.zarr"
    trend_run = ("era5-sst-trend", "--data", str(demo_tree), *PERIOD, "--workers", "1",
             "--no-progress", "--format", "zarr", "--out", str(out))  # fmt: skip
    convert_run = ("convert", "--data", str(demo_tree), "--out", str(store), *PERIOD,
               "--workers", "1")  # fmt: skip
    for r in run_clis(trend_run, convert_run, cwd=tmp_path):  # at once
        assert r.returncode == 0, r.stderr
    for path in (out / "result.zarr", store):
        _open_silently(path)
    trend = xr.open_zarr(out / "result.zarr")
    assert trend.trend.attrs["units"] == "K/(10 year)"
    assert xr.open_zarr(store).sea_surface_temperature.sizes["time0"] == 731


@pytest.mark.slow
def test_seasons_are_text_cdo_and_xarray_read(outputs, tmp_path):
    """The season labels are a char array (CF 2.2), not netCDF-4 strings: CDO opens the
    file ("NetCDF: Not a valid data type" before), xarray reads the labels back."""
    import netCDF4

    path = outputs["seasons"]
    cdo = require_tool("cdo")
    r = subprocess.run([cdo, "-s", "sinfon", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert all(name in r.stdout for name in ("seasons", "jja", "smooth", "p90")), r.stdout
    with netCDF4.Dataset(path) as nc:
        assert nc["season"].dtype == np.dtype("S1") and nc["season"].ndim == 2
        assert nc["seasons"].coordinates.split()[0] == "season"  # a label, CF 6.1
    res = xr.open_dataset(path)
    assert res.season.values.tolist() == ["DJF", "MAM", "JJA", "SON"]
    assert res.seasons.sel(season="JJA").notnull().any()


@pytest.mark.slow
def test_a_djf_series_leaves_out_the_winter_without_its_december(outputs):
    """era5-nino34-djf from January 2000: the DJF of January and February alone is left
    out (it was labelled 1999-12-01, outside its bounds [2000-01-01, 2000-03-01]: cfchecks
    warned, CF 7.1); each label lies in its bounds, and the file says what it holds."""
    res = xr.open_dataset(outputs["era5-nino34-djf"])
    sst = res.sea_surface_temperature
    assert [str(t)[:10] for t in sst.time0.values] == ["2000-12-01", "2001-12-01"]
    bounds = res[res.time0.attrs["bounds"]].values.astype("M8[D]")
    want = [["2000-12-01", "2001-03-01"], ["2001-12-01", "2002-03-01"]]
    np.testing.assert_array_equal(bounds, np.array(want, "M8[D]"))
    assert sst.attrs["cell_methods"].endswith("time0: mean (complete seasons only)")
    assert "DJF from 1999-12 (Jan+Feb only), DJF from 2002-12 (Dec only)" in sst.attrs["comment"]


@pytest.mark.slow
def test_time_bounds_say_what_was_averaged(outputs):
    res = xr.open_dataset(outputs["seasons"])
    # JJA means from a seasonal resample: June to August, on a time axis of their own
    jja = res[res[res.jja.dims[0]].attrs["bounds"]].values.astype("M8[D]")
    want = [["2000-06-01", "2000-09-01"], ["2001-06-01", "2001-09-01"]]
    np.testing.assert_array_equal(jja, np.array(want, "M8[D]"))
    assert res.jja.attrs["cell_methods"] == (
        f"area: mean where sea {res.jja.dims[0]}: mean (complete seasons only)"
    )
    # a 12-month running mean: its twelve months
    smooth = res[res[res.smooth.dims[0]].attrs["bounds"]].values.astype("M8[D]")
    np.testing.assert_array_equal(smooth[0], np.array(["2000-01-01", "2001-01-01"], "M8[D]"))
    np.testing.assert_array_equal(smooth[-1], np.array(["2001-01-01", "2002-01-01"], "M8[D]"))
    # a percentile: one of the values, not their mean, and which percentile
    assert res.p90.attrs["cell_methods"] == (
        "time: point (90th percentile over time, method nrank)"
    )
    assert "percentile 90" in res.p90.attrs["comment"]
    assert res.p90.attrs["long_name"] == (
        "90th percentile over time of Sea surface temperature in nino34 (5S-5N 170W-120W), "
        "2000-2001"
    )
