"""The demo generator writes the era5-pds layout, deterministically, with real coastlines."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.demo import DemoSpec, generate
from pangeo_hpc.errors import InputError
from tests.support.trees import TEST_SPEC


def test_layout_names_and_attributes(demo_tree):
    path = demo_tree / "2004" / "02" / "data" / "sea_surface_temperature.nc"
    assert path.is_file()
    ds = xr.open_dataset(path)
    sst = ds.sea_surface_temperature
    assert sst.dims == ("time0", "lat", "lon")
    assert sst.dtype == np.float32 and sst.attrs["units"] == "K"
    assert ds.time0.size == 29  # a leap year's February, daily
    assert ds.lat.values[0] == 90 and ds.lat.values[-1] == -90  # descending, with poles
    assert ds.lon.values[0] == 0 and ds.lon.values[-1] == 358
    assert ds.lat.attrs["units"] == "degrees_north" and ds.lon.attrs["units"] == "degrees_east"
    enc = sst.encoding
    assert enc["zlib"] and enc["shuffle"] and enc["complevel"] == 1
    assert enc["chunksizes"] == (24, 91, 100)  # (24, 100, 100) capped at the grid
    with h5py.File(path) as f:
        assert f["time0"].attrs["units"].decode().startswith("hours since 1900-01-01")


def test_values_are_plausible_with_land_and_ice(demo_tree):
    sst = xr.open_dataset(demo_tree / "2005" / "01" / "data" / "sea_surface_temperature.nc")[
        "sea_surface_temperature"
    ]
    first = sst.isel(time0=0)
    assert 270 < float(first.min()) and float(first.max()) < 306
    assert np.isnan(first.sel(lat=20, lon=10)).item()  # Sahara
    assert np.isnan(first.sel(lat=-80, lon=0)).item()  # Antarctica
    assert np.isnan(first.sel(lat=40, lon=260)).item()  # North America
    assert np.isfinite(first.sel(lat=0, lon=180)).item()  # central Pacific
    assert np.isfinite(first.sel(lat=-30, lon=330)).item()  # South Atlantic
    assert np.isnan(first.sel(lat=86, lon=180)).item()  # Arctic sea ice in January
    ocean = np.isfinite(first).mean().item()
    assert 0.45 < ocean < 0.75


def test_same_seed_same_values(tmp_path):
    spec = DemoSpec(resolution=10.0, start="2001-03", end="2001-03", seed=3)
    a = generate(tmp_path / "a", spec, workers=1)[0]
    b = generate(tmp_path / "b", spec, workers=1)[0]
    c = generate(tmp_path / "c", DemoSpec(resolution=10.0, start="2001-03", end="2001-03", seed=4))[
        0
    ]
    with h5py.File(a) as fa, h5py.File(b) as fb, h5py.File(c) as fc:
        va, vb, vc = (f["sea_surface_temperature"][:] for f in (fa, fb, fc))
    np.testing.assert_array_equal(va, vb)
    assert not np.array_equal(va, vc, equal_nan=True)


def test_hourly_frequency(tmp_path):
    spec = DemoSpec(resolution=10.0, frequency="hourly", start="2001-02", end="2001-02")
    (path,) = generate(tmp_path, spec, workers=1)
    assert xr.open_dataset(path).time0.size == 28 * 24


def test_resume_skips_existing_months_and_refuses_other_settings(tmp_path):
    spec = DemoSpec(resolution=10.0, start="2001-01", end="2001-02")
    first = generate(tmp_path, spec, workers=1)
    mtime = first[0].stat().st_mtime_ns
    generate(tmp_path, DemoSpec(resolution=10.0, start="2001-01", end="2001-03"), workers=1)
    assert first[0].stat().st_mtime_ns == mtime
    manifest = json.loads((tmp_path / "demo-manifest.json").read_text())
    # one entry per variable since the tree can hold several (was manifest["periods"])
    periods = manifest["variables"]["sea_surface_temperature"]["periods"]
    assert periods == [["2001-01", "2001-02"], ["2001-01", "2001-03"]]
    with pytest.raises(InputError, match="other settings.*another out=, or pass overwrite=True"):
        generate(tmp_path, DemoSpec(resolution=5.0, start="2001-01", end="2001-01"), workers=1)
    assert not list(tmp_path.rglob(".*tmp*"))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"resolution": 0.7}, "resolution 0.7 must divide 180"),
        ({"resolution": 30.0}, "resolution 30.0 must divide 180 degrees and be at most 10"),
        ({"frequency": "weekly"}, "frequency 'weekly' must be 'daily' or 'hourly'"),
        ({"start": "2001-05", "end": "2001-01"}, "is empty"),
        ({"hdf5_chunks": (24, 0, 100)}, "three positive sizes"),
    ],
)
def test_bad_settings(kwargs, match):
    with pytest.raises(InputError, match=match):
        DemoSpec(**kwargs).resolved()


def test_test_spec_is_what_the_tree_holds(demo_tree):
    settings = json.loads((demo_tree / "demo-manifest.json").read_text())["settings"]
    assert settings["resolution"] == TEST_SPEC.resolution and settings["seed"] == TEST_SPEC.seed
