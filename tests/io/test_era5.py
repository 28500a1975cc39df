"""open_era5: the same values as xarray's open_mfdataset, lazily, with clear errors."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.demo import DemoSpec, generate
from pangeo_hpc.errors import DataNotFoundError, InputError
from pangeo_hpc.io.era5 import open_era5
from tests.support.ncfiles import write_era5_month


@pytest.mark.smoke
def test_same_values_as_open_mfdataset(demo_tree):
    ds = open_era5("sea_surface_temperature", "2001-11", "2002-02", source=demo_tree)
    files = sorted(
        str(p)
        for y, ms in (("2001", ("11", "12")), ("2002", ("01", "02")))
        for m in ms
        for p in (demo_tree / y / m / "data").glob("*.nc")
    )
    ref = xr.open_mfdataset(files, combine="nested", concat_dim="time0")
    xr.testing.assert_identical(
        ds.sea_surface_temperature.compute(), ref.sea_surface_temperature.compute()
    )
    assert ds.time0.values[0] == np.datetime64("2001-11-01")
    assert ds.encoding["source_files"] == files


def test_lazy_whole_field_chunks_within_files(demo_tree):
    ds = open_era5(source=demo_tree, start="2000-01", end="2000-03")
    sst = ds.sea_surface_temperature
    assert sst.chunks == ((31, 29, 31), (91,), (180,))
    assert ds.attrs["institution"] == "ECMWF" and sst.attrs["units"] == "K"
    assert "_FillValue" not in sst.attrs


def test_small_chunks_follow_hdf5_time_chunks(demo_tree):
    ds = open_era5(source=demo_tree, start="2000-01", end="2000-01", time_chunk_mb=0.001)
    assert ds.sea_surface_temperature.chunks[0] == (24, 7)
    np.testing.assert_array_equal(
        ds.sea_surface_temperature[20:30].values,
        open_era5(source=demo_tree, start="2000-01", end="2000-01")
        .sea_surface_temperature[20:30]
        .values,
    )


def test_default_period_is_the_whole_tree(demo_tree):
    ds = open_era5(source=demo_tree)
    assert (
        str(ds.time0.values[0])[:10] == "2000-01-01"
        and str(ds.time0.values[-1])[:10] == "2009-12-31"
    )


def test_indexing_with_integers_and_arrays(demo_tree):
    sst = open_era5(source=demo_tree, start="2000-01", end="2000-02").sea_surface_temperature
    full = sst.values
    np.testing.assert_array_equal(sst[40, 10, 20].values, full[40, 10, 20])
    np.testing.assert_array_equal(sst.isel(time0=[3, 45, 30]).values, full[[3, 45, 30]])
    np.testing.assert_array_equal(sst.isel(lat=[5, 1]).values, full[:, [5, 1]])


def test_missing_months_are_listed_with_the_fix(demo_copy):
    shutil.rmtree(demo_copy / "2001" / "03")
    shutil.rmtree(demo_copy / "2001" / "04")
    with pytest.raises(
        DataNotFoundError,
        match=r"2 of 24 months .* missing .*\(2001-03\.\.2001-04\): .* start=/end=, or generate "
        r"them with pangeo_hpc\.demo\.generate\(.*DemoSpec\(start='2001-03', end='2001-04', ",
    ):
        open_era5(source=demo_copy, start="2000-01", end="2001-12")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"variable": "sst"},
            DataNotFoundError,
            r"variable 'sst' is not in .* holds \['sea_surface_temperature'\]",
        ),
        ({"start": "2001-13"}, InputError, "month 13"),
        ({"start": "2001-05", "end": "2001-01"}, InputError, "is empty"),
        ({"start": "last year"}, InputError, "write it as YYYY-MM"),
        ({"start": "1990-01", "end": "1990-02"}, DataNotFoundError, "2 of 2 months"),
        ({"source": "gs://era5-pds"}, InputError, "only s3:// URLs and folders"),
        ({"source": "s3://x"}, InputError, "'x' in 's3://x' is not a bucket name"),
        (
            {"source": "s3://era5-pds", "index": "always"},
            InputError,
            "index='always' must be one of auto, build, never",
        ),
        ({"time_chunk_mb": -1}, InputError, "must be positive"),
    ],
)
def test_bad_input(demo_copy, kwargs, error, match):
    args = {
        "variable": "sea_surface_temperature",
        "start": "2000-01",
        "end": "2000-02",
        "source": demo_copy,
    }
    with pytest.raises(error, match=match):
        open_era5(**{**args, **kwargs})


def test_missing_directory(tmp_path):
    with pytest.raises(
        DataNotFoundError, match="does not exist: pass source= with the root of your era5-pds"
    ):
        open_era5(source=tmp_path / "nowhere", start="2000-01", end="2000-01")
    with pytest.raises(DataNotFoundError, match="no 'sea_surface_temperature' files"):
        open_era5(source=tmp_path)


def test_a_file_on_another_grid_is_named(demo_copy, tmp_path):
    odd = generate(tmp_path / "odd", DemoSpec(resolution=10.0, start="2000-02", end="2000-02"))[0]
    target = demo_copy / "2000" / "02" / "data" / "sea_surface_temperature.nc"
    shutil.copy(odd, target)
    with pytest.raises(
        InputError, match=r"2000/02/data/sea_surface_temperature.nc' has .*share one grid"
    ):
        open_era5(source=demo_copy, start="2000-01", end="2000-03")


def test_a_truncated_file_is_an_error_naming_it(demo_copy):
    target = demo_copy / "2000" / "02" / "data" / "sea_surface_temperature.nc"
    target.write_bytes(target.read_bytes()[:5000])
    with pytest.raises(
        InputError, match=r"2000/02/data/sea_surface_temperature.nc.*not a readable NetCDF4"
    ):
        open_era5(source=demo_copy, start="2000-01", end="2000-03")


def test_times_without_date_units_are_named(demo_copy):
    import h5py

    first = demo_copy / "2000" / "01" / "data" / "sea_surface_temperature.nc"
    with h5py.File(first, "r+") as f:
        f["time0"].attrs["units"] = "hours"
    with pytest.raises(
        InputError, match=r"time variable 'time0' of .*2000/01/data.* has units 'hours', not dates"
    ):
        open_era5(source=demo_copy, start="2000-01", end="2000-02")


def test_forecast_variable_with_time1_and_its_bounds(tmp_path):
    var = "precipitation_amount_1hour_Accumulation"
    made = [write_era5_month(tmp_path, var, 2000, m, forecast=True, seed=m) for m in (1, 2)]
    ds = open_era5(var, "2000-01", "2000-02", source=tmp_path)
    p = ds[var]
    assert p.dims == ("time1", "lat", "lon") and p.attrs["units"] == "m"
    assert ds.sizes["time1"] == (31 + 29) * 24 and p.chunks[0] == (744, 696)
    assert ds.time1.values[0] == np.datetime64("2000-01-01T07:00")
    assert ds.time1.values[743] == np.datetime64("2000-02-01T06:00")  # January's last step
    assert ds.time1.values[-1] == np.datetime64("2000-03-01T06:00")
    bounds = ds.time1_bounds
    assert ds.time1.attrs["bounds"] == "time1_bounds" and bounds.dims == ("time1", "nv")
    np.testing.assert_array_equal(bounds.values[:, 1], ds.time1.values)
    np.testing.assert_array_equal(bounds.values[:, 0], ds.time1.values - np.timedelta64(1, "h"))
    np.testing.assert_allclose(p.values, np.concatenate([d for _, d in made]), rtol=1e-6)
    ref = xr.open_mfdataset([str(f) for f, _ in made], combine="nested", concat_dim="time1")
    np.testing.assert_array_equal(ds.time1_bounds.values, ref.time1_bounds.values)
    again = open_era5(var, "2000-02", "2000-02", source=tmp_path)  # cached scans
    np.testing.assert_array_equal(again.time1_bounds.values, bounds.values[744:])


def test_several_variables_share_one_dataset(tmp_path):
    u, v = "eastward_wind_at_10_metres", "northward_wind_at_10_metres"
    made = {
        name: [
            write_era5_month(tmp_path, name, 2000, m, units="m s-1", seed=k + m)[1] for m in (1, 2)
        ]
        for k, name in enumerate((u, v))
    }
    ds = open_era5([u, v], "2000-01", "2000-02", source=tmp_path)
    assert list(ds.data_vars) == [u, v] and ds[u].dims == ("time0", "lat", "lon")
    for name in (u, v):
        np.testing.assert_allclose(ds[name].values, np.concatenate(made[name]), rtol=1e-6)
    assert [f.split("/")[-3:] for f in ds.encoding["source_files"]] == [
        ["01", "data", f"{u}.nc"],
        ["02", "data", f"{u}.nc"],
        ["01", "data", f"{v}.nc"],
        ["02", "data", f"{v}.nc"],
    ]
    assert ds.encoding["source_bytes"] == sum(
        os.path.getsize(f) for f in ds.encoding["source_files"]
    )
    precip = "precipitation_amount_1hour_Accumulation"
    write_era5_month(tmp_path, precip, 2000, 1, forecast=True)
    with pytest.raises(
        InputError,
        match=rf"'{precip}' .* has the time axis time1: 744 steps 2000-01-01T07.* but '{u}'",
    ):
        open_era5([u, precip], "2000-01", "2000-01", source=tmp_path)
    with pytest.raises(InputError, match=r"variable=\['x', 'x'\] names a variable twice"):
        open_era5(["x", "x"], source=tmp_path)


def test_the_half_degree_wave_grid_opens(tmp_path):
    waves = "significant_height_of_combined_wind_waves_and_swell"
    _, data = write_era5_month(tmp_path, waves, 2001, 2, n_lat=361, n_lon=720, seed=3, hours=3)
    ds = open_era5(waves, "2001-02", "2001-02", source=tmp_path)
    assert ds[waves].shape == (3, 361, 720) and ds.lat.values[0] == 90.0
    assert ds.lon.values[1] == 0.5 and ds.lat.values[-1] == -90.0
    np.testing.assert_allclose(ds[waves].values, data, rtol=1e-6)
    write_era5_month(tmp_path, "sea_surface_temperature", 2001, 2, n_lat=721, n_lon=8, hours=3)
    with pytest.raises(InputError, match=r"is on the grid lat x lon \(721, 8\).* share one grid"):
        open_era5([waves, "sea_surface_temperature"], "2001-02", "2001-02", source=tmp_path)
