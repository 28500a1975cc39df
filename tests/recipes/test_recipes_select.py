"""select_region, select_months and select_season against CDO (sellonlatbox, maskregion,
ifthen, selmon, selseason) on CDO-made fields in both longitude conventions."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import regionmask
import xarray as xr

from pangeo_hpc.demo import DemoSpec, generate
from pangeo_hpc.errors import InputError
from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.recipes import select_months, select_region, select_season
from pangeo_hpc.recipes.cf_attrs import AREA_TYPE
from tests.support.lazy import raise_if_dask_computes
from tests.support.needs import require_tool

pytestmark = pytest.mark.cdo

#: CDO operators that make the test fields: 10-degree random values with both poles and
#: 5-degree ocean depths (NaN over land), three days, in 0..360 and in -180..180; one with
#: latitudes descending as in ERA5
FIELDS = {
    "random-0..360": "-random,r36x19,42",
    "random-180": "-sellonlatbox,-180,180,-90,90 -random,r36x19,42",
    "random-desc": "-invertlat -random,r36x19,42",
    "ocean-0..360": "-setrtomiss,0,20000 -topo,r72x36",
    "ocean-180-desc": "-invertlat -sellonlatbox,-180,180,-90,90 -setrtomiss,0,20000 -topo,r72x36",
}
TIME = "-settaxis,2000-01-01,00:00:00,1day -duplicate,3"
BOXES = [
    (-5, 5, 190, 240),  # Nino3.4 in 0..360
    (-5, 5, -170, -120),  # the same in -180..180
    (-30, 30, 170, -170),  # across the dateline, west > east
    (-30, 30, 170, 190),  # across the dateline, east beyond 180
    (-40, 40, 350, 10),  # across Greenwich, west > east
    (-40, 40, -30, 30),  # across Greenwich in -180..180
    (40, -40, 5, 25),  # latitudes north first; longitudes between cell centres
    (60, 90, 0, 360),  # the whole circle, up to the pole
    (-90, -80, -180, 180),  # the whole circle in -180..180, down to the pole
    (-5, 5, 175, 185),  # a single column at the dateline
]
#: how each box is named in long_name (longitudes in -180..180; the whole circle unnamed)
BOX_WORDS = {
    (-5, 5, 190, 240): "5S-5N 170W-120W",
    (-5, 5, -170, -120): "5S-5N 170W-120W",
    (-30, 30, 170, -170): "30S-30N 170E-170W",
    (-30, 30, 170, 190): "30S-30N 170E-170W",
    (-40, 40, 350, 10): "40S-40N 10W-10E",
    (-40, 40, -30, 30): "40S-40N 30W-30E",
    (40, -40, 5, 25): "40S-40N 5E-25E",
    (60, 90, 0, 360): "60N-90N",
    (-90, -80, -180, 180): "90S-80S",
    (-5, 5, 175, 185): "5S-5N 175E-175W",
}


def run_cdo(*args: str) -> None:
    cdo = require_tool("cdo")
    subprocess.run([cdo, "-s", "-f", "nc4", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def fields(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("fields")
    paths = {}
    for name, ops in FIELDS.items():
        paths[name] = base / f"{name}.nc"
        run_cdo(*TIME.split(), *ops.split(), str(paths[name]))
    return paths


def cdo_result(path: Path, tmp_path: Path, ops: str) -> xr.DataArray:
    out = tmp_path / "cdo-out.nc"
    run_cdo(*ops.split(), str(path), str(out))
    with xr.open_dataset(out) as ds:
        return ds[next(iter(ds.data_vars))].load()


def opened(path: Path) -> xr.DataArray:
    ds = xr.open_dataset(path, chunks={})
    return ds[next(iter(ds.data_vars))]


def assert_same(got: xr.DataArray, expected: xr.DataArray) -> None:
    """Values, latitudes and longitudes (order and convention) as CDO wrote them."""
    np.testing.assert_array_equal(got["lat"].values, expected["lat"].values)
    np.testing.assert_array_equal(got["lon"].values, expected["lon"].values)
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-5)


@pytest.mark.parametrize("field", list(FIELDS))
@pytest.mark.parametrize(("south", "north", "west", "east"), BOXES)
def test_box_equals_cdo_sellonlatbox(fields, tmp_path, field, south, north, west, east):
    expected = cdo_result(fields[field], tmp_path, f"-sellonlatbox,{west},{east},{south},{north}")
    da = opened(fields[field])
    with raise_if_dask_computes():
        got = select_region(da, lat=[south, north], lon=[west, east])
    assert_same(got.compute(), expected)
    # the attributes as they were, the name saying which box selected the cells
    name = f"{da.name} in {BOX_WORDS[south, north, west, east]}"
    assert got.attrs == {**da.attrs, "long_name": name}


@pytest.mark.parametrize("field", ["random-180", "ocean-180-desc"])
@pytest.mark.parametrize(
    ("name", "box"),
    [("nino34", "190,240,-5,5"), ("nino4", "160,210,-5,5"), ("nino12", "270,280,-10,0")],
)
def test_named_boxes_equal_cdo(fields, tmp_path, field, name, box):
    expected = cdo_result(fields[field], tmp_path, f"-sellonlatbox,{box}")
    assert_same(select_region(opened(fields[field]), name=name).compute(), expected)


@pytest.mark.parametrize("field", ["random-0..360", "random-desc"])
@pytest.mark.parametrize(
    ("name", "lats"), [("tropics", "-23.5,23.5"), ("arctic", "66.5,90"), ("global", "-90,90")]
)
def test_latitude_bands_keep_longitudes(fields, tmp_path, field, name, lats):
    expected = cdo_result(fields[field], tmp_path, f"-sellonlatbox,0,360,{lats}")
    assert_same(select_region(opened(fields[field]), name=name).compute(), expected)


#: a pentagon across Greenwich whose edges pass no 10-degree cell centre, and a square
POLYGONS = [
    [(-35, -25), (45, -25), (45, 35), (5, 65), (-35, 35)],
    [(185, -45), (245, -45), (245, 15), (185, 15)],
]


@pytest.mark.parametrize("field", ["random-0..360", "random-180", "random-desc"])
@pytest.mark.parametrize("number", [0, 1])
def test_regionmask_region_equals_cdo_maskregion(fields, tmp_path, field, number):
    regions = regionmask.Regions(POLYGONS, abbrevs=["PENT", "SQ"], name="test regions")
    region_file = tmp_path / "region.txt"
    region_file.write_text("".join(f"{x} {y}\n" for x, y in POLYGONS[number]))
    expected = cdo_result(fields[field], tmp_path, f"-maskregion,{region_file}")
    da = opened(fields[field])
    with raise_if_dask_computes():
        got = select_region(da, name=["PENT", "SQ"][number], regions=regions)
    assert_same(got.compute(), expected)
    assert 0 < int(got.notnull().sum()) < got.size  # the mask keeps the grid, NaN outside


def test_ar6_needs_no_regionmask_data(tmp_path, fields):
    """The AR6 regions ship with the package: regionmask's download cache unusable, ar6:WNA
    still selects its cells (tests/recipes/test_ar6_regions.py: equal to regionmask's, offline)."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    with regionmask.set_options(cache_dir=blocker / "cache"):
        got = select_region(opened(fields["random-0..360"]), name="ar6:WNA").compute()
    assert 0 < int(got.isel(time=0).notnull().sum()) < got.isel(time=0).size


@pytest.mark.parametrize("grid", ["0..360", "180-desc"])
@pytest.mark.parametrize(("mask", "cdo_if"), [("ocean", "ifthen"), ("land", "ifnotthen")])
def test_mask_from_another_variable_equals_cdo_ifthen(fields, tmp_path, grid, mask, cdo_if):
    ocean = fields["ocean-0..360" if grid == "0..360" else "ocean-180-desc"]
    data = tmp_path / "data.nc"  # a field without NaN on the same grid, like t2m for SST
    run_cdo("-addc,1", "-abs", "-setmisstoc,-3", str(ocean), str(data))
    ever_valid = tmp_path / "mask.nc"
    run_cdo("-setmisstoc,0", "-addc,1", "-abs", "-timmax", str(ocean), str(ever_valid))
    expected = cdo_result(data, tmp_path, f"-{cdo_if} {ever_valid}")
    with raise_if_dask_computes():
        got = select_region(opened(data), mask=mask, mask_from=opened(ocean))
    assert_same(got.compute(), expected)


def test_own_mask_counts_cells_valid_at_any_time(tmp_path):
    # an SST-like field whose first day has more NaN (sea ice) than the others
    da = xr.DataArray(
        np.arange(24.0).reshape(3, 2, 4),
        dims=("time", "lat", "lon"),
        coords={
            "time": np.array(["2000-01-01", "2000-01-02", "2000-01-03"], "M8[ns]"),
            "lat": [-45.0, 45.0],
            "lon": [0.0, 90.0, 180.0, 270.0],
        },
        attrs={"units": "K", "standard_name": "sea_surface_temperature"},
    )
    da[:, 0, 0] = np.nan  # land
    da[0, 1, 1] = np.nan  # ice on the first day only: still ocean
    path = tmp_path / "sst.nc"
    da.to_dataset(name="sst").to_netcdf(path)
    ever = tmp_path / "ever.nc"
    run_cdo("-setmisstoc,0", "-addc,1", "-abs", "-timmax", str(path), str(ever))
    for mask, cdo_if in (("ocean", "ifthen"), ("land", "ifnotthen")):
        expected = cdo_result(path, tmp_path, f"-{cdo_if} {ever}")
        got = select_region(opened(path), mask=mask)
        np.testing.assert_allclose(got.values, expected.values)
    assert np.isnan(select_region(da, mask="ocean")[:, 0, 0]).all()
    assert select_region(da, mask="ocean")[1:, 1, 1].notnull().all()
    # a land variable: its valid cells are land
    soil = da.assign_attrs(standard_name="soil_temperature")
    assert select_region(soil, mask="land")[1, 1, 1].notnull()
    assert select_region(soil, mask="ocean")[1:, 1, 1].isnull().all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"lat": [95, 100]}, r"lat=\[95, 100\] holds no grid latitude .* -90\.\.90"),
        ({"lat": [1, 9]}, r"lat=\[1, 9\] holds no grid latitude"),
        ({"lon": [5, 6]}, r"lon=\[5, 6\] holds no grid longitude .* 0\.\.350, spaced 10"),
        ({"lat": ["south", 5]}, r"lat=\['south', 5\] is not two numbers"),
        ({"lon": [1, 2, 3]}, r"lon=\[1, 2, 3\] is not two numbers"),
        ({"name": "atlantis"}, r"name='atlantis' is not one of \['antarctic'"),
        ({"name": "nino34", "lat": [0, 1]}, r"name='nino34' together with lat/lon"),
        ({"mask": "sea"}, r"mask='sea' is not 'land' or 'ocean'"),
        ({"mask": "ocean"}, r"mask='ocean' on 'random', which has no missing values"),
    ],
)
def test_bad_options_are_input_errors(fields, kwargs, match):
    with pytest.raises(InputError, match=match) as info:
        # Dask data without NaN: known when computed (the recipe itself stays lazy)
        select_region(opened(fields["random-0..360"]), **kwargs).compute()
    assert info.value.param == (next(iter(kwargs)),)


def test_mask_from_on_another_grid_and_unknown_regionmask_name(fields):
    da = opened(fields["random-0..360"])
    with pytest.raises(InputError, match="mask='land' on 'random', which has no missing"):
        select_region(da.compute(), mask="land")  # in memory: at once
    with pytest.raises(InputError, match="mask_from .* is not on the grid of"):
        select_region(da, mask="land", mask_from=opened(fields["ocean-0..360"]))
    regions = regionmask.Regions(POLYGONS, abbrevs=["PENT", "SQ"], name="test regions")
    with pytest.raises(InputError, match=r"not a region of 'test regions': .*\['PENT', 'SQ'\]"):
        select_region(da, name="XX", regions=regions)


# -- months and seasons ---------------------------------------------------------------


@pytest.fixture(scope="module")
def monthly(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("monthly") / "monthly.nc"
    run_cdo(
        "-settunits,days",
        "-settaxis,1999-11-15,00:00:00,1month",
        "-duplicate,26",
        "-setrtomiss,0,20000",
        "-topo,r36x18",
        str(path),
    )
    return path


@pytest.mark.parametrize(
    ("months", "words"),
    [
        ([12, 1, 2], "DJF"),
        ([7], "Jul"),
        ([3, 11], "Mar+Nov"),
        ([11, 12, 1, 3, 4], "Nov-Jan+Mar-Apr"),
    ],
)
def test_select_months_equals_cdo_selmon(monthly, tmp_path, months, words):
    expected = cdo_result(monthly, tmp_path, f"-selmon,{','.join(map(str, months))}")
    with raise_if_dask_computes():
        got = select_months(opened(monthly), months=months)
    np.testing.assert_array_equal(got.time.values, expected.time.values)
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-5)
    # the months that selected the data are in their name (a season's by its letters)
    assert got.attrs == {"units": "m", "long_name": f"topo in {words}"}


@pytest.mark.parametrize("season", ["DJF", "MAM", "JJA", "son"])
def test_select_season_equals_cdo_selseason(monthly, tmp_path, season):
    expected = cdo_result(monthly, tmp_path, f"-selseason,{season.upper()}")
    got = select_season(opened(monthly), season=season)
    np.testing.assert_array_equal(got.time.values, expected.time.values)
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-5)
    assert got.sizes["time"] in (6, 7)  # Nov 1999 - Dec 2001
    assert got.attrs["long_name"] == f"topo in {season.upper()}"


def test_months_errors(monthly):
    da = opened(monthly).isel(time=slice(0, 4))  # Nov 1999 - Feb 2000
    with pytest.raises(
        InputError,
        match=r"month\(s\) \[7\] are not in the data's period "
        r"\(1999-11-15\.\.2000-02-15\)",
    ) as info:
        select_months(da, months=[7, 12])
    assert info.value.param == ("months",)
    with pytest.raises(InputError, match=r"months=\[0, 13\] are not month numbers"):
        select_months(da, months=[0, 13])
    with pytest.raises(InputError, match=r"season='JJA': month\(s\) \[6, 7, 8\]"):
        select_season(da, season="JJA")
    with pytest.raises(InputError, match=r"season='winter' is not one of \['DJF'"):
        select_season(da, season="winter")
    assert select_months(da, months=12).sizes["time"] == 1


# -- demo-like data: ERA5's names, descending latitudes, float32, NaN over land --------


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, Path]:
    """Five months of 2-degree daily demo SST and the same merged into one file for CDO."""
    root = tmp_path_factory.mktemp("demo")
    generate(
        root,
        DemoSpec(resolution=2.0, frequency="daily", start="2000-11", end="2001-03", seed=7),
        workers=1,
    )
    merged = root / "merged.nc"
    run_cdo("-mergetime", *map(str, sorted(root.rglob("*.nc"))), str(merged))
    return root, merged


@pytest.mark.parametrize(
    ("kwargs", "ops", "words"),
    [
        ({"name": "nino34"}, "-sellonlatbox,190,240,-5,5", "in nino34 (5S-5N 170W-120W)"),
        ({"lat": [-20, 30], "lon": [-40, 20]}, "-sellonlatbox,-40,20,-20,30", "in 20S-30N 40W-20E"),
        (
            {"mask": "land", "lat": [-10, 10], "lon": [0, 40]},
            "-sellonlatbox,0,40,-10,10 -ifnotthen -setmisstoc,0 -addc,1000 -timmax {merged}",
            "over land in 10S-10N 0-40E",
        ),
    ],
)
def test_demo_sst_equals_cdo(demo, tmp_path, kwargs, ops, words):
    root, merged = demo
    sst = open_era5(source=root, start="2000-11", end="2001-03").sea_surface_temperature
    expected = cdo_result(merged, tmp_path, ops.format(merged=merged))
    with raise_if_dask_computes():
        got = select_region(sst, **kwargs)
    assert_same(got.compute(), expected)
    assert got.dtype == np.float32
    # what selected the cells is in their name; a mask's area type is kept for area_mean
    attrs = {k: v for k, v in got.attrs.items() if k != AREA_TYPE}
    assert attrs == {**sst.attrs, "long_name": f"Sea surface temperature {words}"}
    assert got.attrs.get(AREA_TYPE) == ("land" if "mask" in kwargs else None)
