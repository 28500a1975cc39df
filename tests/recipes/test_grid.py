from concurrent.futures import ThreadPoolExecutor

import cf_xarray
import dask
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.grid import EARTH_RADIUS, cell_area, horizontal_names, time_name
from tests.support.known import cell_areas

SPHERE = 4 * np.pi * EARTH_RADIUS**2


def _coords(lat, lon, latname="lat", lonname="lon"):
    return xr.DataArray(lat, dims=latname, name=latname), xr.DataArray(
        lon, dims=lonname, name=lonname
    )


@pytest.mark.parametrize(
    ("lat", "lon"),
    [
        (np.linspace(90, -90, 181), np.arange(360.0)),  # ERA5-like, poles included
        (np.linspace(-89.5, 89.5, 180), np.arange(-179.5, 180, 1.0)),  # cell centres, -180..180
        (np.linspace(90, -90, 721), np.arange(1440) * 0.25),
    ],
)
def test_cell_areas_cover_the_sphere(lat, lon):
    area = cell_area(*_coords(lat, lon))
    assert area.sum().item() == pytest.approx(SPHERE, rel=1e-12)


@pytest.mark.parametrize(
    ("lat", "lon"),
    [
        (np.linspace(-90, 90, 19), np.arange(0, 360, 10.0)),  # CDO's r36x19: poles, 10 deg
        (np.linspace(90, -90, 19), np.arange(-180, 180, 10.0)),  # the same, ERA5's order
        (np.linspace(90, -90, 91), np.arange(0, 360, 2.0)),  # the 2-degree demo grid
        (np.linspace(-90, 90, 181), np.arange(360.0)),  # r360x181
        (np.linspace(-89.75, 89.75, 360), np.arange(0.25, 360, 0.5)),  # r720x360, no poles
        (np.arange(-20, 41, 10.0), np.r_[0:41:10, 320:351:10].astype("f8")),  # across 0
    ],
    ids=["r36x19", "r36x19 north-south -180..180", "2 degrees", "r360x181", "r720x360", "box"],
)
def test_cell_areas_are_the_spherical_bands(lat, lon):
    """R² Δλ (sin φ2 - sin φ1), half cells at the poles (tests/support/known.py), to 1e-12; near
    the poles a band's sine difference keeps only its absolute error, a few eps, so there
    to 4 eps of R² Δλ: its float64 rounding, 1e-8 of a polar half cell at 1 degree."""
    want = cell_areas(lat, lon)
    got = cell_area(*_coords(lat, lon)).values
    dlon = np.deg2rad(np.min(np.diff(np.sort(lon))))
    atol = 4 * np.finfo("f8").eps * EARTH_RADIUS**2 * dlon
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=atol)


def test_polar_cells_are_half_cells():
    lat, lon = _coords(np.linspace(90, -90, 181), np.arange(360.0))
    band = cell_area(lat, lon).sum("lon")
    # independent: band between 89.5 and 90 degrees
    expected_pole = 2 * np.pi * EARTH_RADIUS**2 * (1 - np.sin(np.deg2rad(89.5)))
    assert band.isel(lat=0).item() == pytest.approx(expected_pole, rel=1e-9)
    assert band.isel(lat=-1).item() == pytest.approx(expected_pole, rel=1e-9)


def test_areas_follow_the_order_of_the_coordinates():
    lat = np.linspace(90, -90, 19)
    a = cell_area(*_coords(lat, np.arange(0, 360, 20.0)))
    b = cell_area(*_coords(lat[::-1], np.arange(0, 360, 20.0)))
    np.testing.assert_allclose(a.values, b.values[::-1])


@pytest.mark.parametrize(
    ("names", "attrs"),
    [
        (("lat", "lon"), {}),
        (("latitude", "longitude"), {}),
        (("nav_lat", "nav_lon"), {}),
        (("y", "x"), {"y": {"standard_name": "latitude"}, "x": {"units": "degrees_east"}}),
        (
            ("phi", "lam"),
            {"phi": {"units": "degrees_north"}, "lam": {"standard_name": "longitude"}},
        ),
    ],
)
def test_horizontal_names_by_name_or_cf_attribute(names, attrs):
    la, lo = names
    da = xr.DataArray(np.zeros((3, 4)), dims=names, coords={la: [0.0, 1, 2], lo: [0.0, 1, 2, 3]})
    for name, a in attrs.items():
        da[name].attrs.update(a)
    assert horizontal_names(da) == names


def test_missing_latitude_says_how_to_fix():
    da = xr.DataArray(
        np.zeros((3, 4)), dims=("a", "lon"), coords={"a": [0, 1, 2], "lon": [0, 1, 2, 3]}
    )
    with pytest.raises(InputError, match="no latitude coordinate among .*standard_name='latitude'"):
        horizontal_names(da)


def test_curvilinear_grid_asks_for_weights():
    lat = xr.DataArray(np.zeros((2, 3)), dims=("y", "x"), name="nav_lat")
    lon = xr.DataArray(np.zeros((2, 3)), dims=("y", "x"), name="nav_lon")
    with pytest.raises(InputError, match="curvilinear grid.*weights="):
        cell_area(lat, lon)


def test_time_name_finds_era5_time0():
    t = xr.date_range("2000-01-01", periods=3, freq="D")
    da = xr.DataArray(np.zeros((3, 2)), dims=("time0", "lat"), coords={"time0": t, "lat": [0, 1]})
    assert time_name(da) == "time0"
    with pytest.raises(InputError, match="no time dimension"):
        time_name(da.isel(time0=0, drop=True).expand_dims(member=2))


def test_time_name_is_not_a_dimension_of_string_labels():
    # ensemble members labelled with strings come first; only "time" holds dates. Strings
    # read from NetCDF files (variable-length) have dtype object, like cftime dates
    members = np.array(["r1i1p1", "r2i1p1"], dtype=object)
    t = xr.date_range("2000-01-01", periods=3, freq="D")
    da = xr.DataArray(
        np.zeros((2, 3, 2, 2)),
        dims=("member", "time", "lat", "lon"),
        coords={"member": members, "time": t, "lat": [0, 1], "lon": [0, 1]},
    )
    assert da["member"].dtype == object
    assert time_name(da) == "time"
    assert time_name(da.to_dataset(name="tas")) == "time"
    assert time_name(da.assign_coords(member=members.astype("U6"))) == "time"  # fixed width


def test_time_name_finds_cftime_dates_and_cf_attributes():
    t = xr.date_range("2000-01-01", periods=3, freq="D", calendar="noleap", use_cftime=True)
    members = np.array(["a", "b"], dtype=object)
    cftime = xr.DataArray(
        np.zeros((2, 3)), dims=("member", "t"), coords={"member": members, "t": t}
    )
    assert time_name(cftime) == "t"
    # undecoded hours marked as time by CF attributes, after a dimension of dates
    marked = xr.DataArray(
        np.zeros((2, 3)),
        dims=("valid", "step"),
        coords={"valid": t[:2], "step": ("step", [0.0, 6, 12], {"axis": "T"})},
    )
    assert time_name(marked) == "step"


def test_latitude_units_in_any_case():
    da = xr.DataArray(
        np.zeros((3, 4)), dims=("j", "i"), coords={"j": [0.0, 1, 2], "i": [0, 1, 2, 3]}
    )
    da["j"].attrs["units"] = "Degrees_North"
    da["i"].attrs["units"] = "DEGREE_E"
    assert horizontal_names(da) == ("j", "i")


def test_cf_attributes_win_over_names():
    # "lat" is an index on the model grid; the geographic latitude is named by its attributes
    da = xr.DataArray(
        np.zeros((3, 4)),
        dims=("lat", "lon"),
        coords={
            "lat": [0, 1, 2],
            "lon": [0, 1, 2, 3],
            "gphit": ("lat", [10.0, 20, 30], {"standard_name": "latitude"}),
            "glamt": ("lon", [1.0, 2, 3, 4], {"units": "degrees_east"}),
        },
    )
    assert horizontal_names(da) == ("gphit", "glamt")


def test_detection_reads_no_values_and_survives_odd_attributes():
    def no_compute(*args, **kwargs):
        raise AssertionError("a coordinate was computed")

    lat = xr.DataArray(np.zeros((2, 3)), dims=("y", "x")).chunk()
    ds = xr.Dataset(
        {
            "sst": (("time", "y", "x"), np.zeros((1, 2, 3)), {"grid_mapping": "nowhere"}),
            "mask": (("y", "x"), np.ones((2, 3)), {"units": np.int32(1), "axis": 5}),
        },
        coords={
            "time": ("time", [0.0], {"standard_name": "time", "units": "days since 2000-01-01"}),
            "nav_lat": lat,
            "nav_lon": lat.copy(),
        },
    )
    with dask.config.set(scheduler=no_compute):
        assert horizontal_names(ds) == ("nav_lat", "nav_lon")
        assert horizontal_names(ds["sst"]) == ("nav_lat", "nav_lon")
        assert time_name(ds) == "time"


def test_custom_criteria_are_not_left_behind():
    da = xr.DataArray(
        np.zeros((3, 4)), dims=("lat", "lon"), coords={"lat": [0, 1, 2], "lon": [0, 1, 2, 3]}
    )
    assert horizontal_names(da) == ("lat", "lon")
    assert "latitude" not in da.cf.coordinates  # no CF attributes, and no name criteria now
    mine = {"latitude": {"name": "^lat$"}}
    with cf_xarray.set_options(custom_criteria=mine):
        horizontal_names(da)
        assert da.cf.coordinates["latitude"] == ["lat"]  # the user's own criteria are back


def test_detection_is_safe_from_several_threads():
    named = xr.DataArray(
        np.zeros((2, 3)),
        dims=("y", "x"),
        coords={"nav_lat": ("y", [0.0, 1]), "nav_lon": ("x", [0.0, 1, 2])},
    )
    by_units = xr.DataArray(
        np.zeros((2, 3)),
        dims=("p", "q"),
        coords={
            "p": ("p", [0.0, 1], {"units": "degrees_north"}),
            "q": ("q", [0.0, 1, 2], {"units": "degrees_east"}),
        },
    )
    cases = [(named, ("nav_lat", "nav_lon")), (by_units, ("p", "q"))] * 200
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda case: horizontal_names(case[0]), cases))
    assert got == [want for _, want in cases]
