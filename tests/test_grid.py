import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.grid import EARTH_RADIUS, cell_area, horizontal_names, time_name

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
