"""regrid equals CDO's remapcon, remapnn and remapbil, on fields with NaN holes and land
masks, in both longitude conventions (the second with latitudes from north to south), from
grids with and without the poles as cell centres, to global, regional and file targets.

Each comparison runs CDO and the recipe on the same file (tests/support/cdo_fields.py). The
tolerance, 1e-5 relative, is far above the float32 rounding of the values both write
(measured: 1.1e-7) and far below what a wrong implementation is off by: the last tests
put three plausible mistakes in and check that the comparison catches each.
"""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import xarray as xr

from pangeo_hpc.batch.incremental.state_cache import CacheWarning, StateCache
from pangeo_hpc.batch.pipeline.regrid_store import CachedWeights
from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes import regrid, regrid_weights
from tests.support.cdo_fields import CONVENTIONS, cdo, cdo_field, cdo_values, write_for_cdo
from tests.support.cf import cfchecks, unavailable
from tests.support.cli import run_cli
from tests.support.lazy import raise_if_dask_computes
from tests.support.needs import missing

module = importlib.import_module("pangeo_hpc.recipes.regrid")

pytestmark = pytest.mark.cdo

OPS = {"conservative": "remapcon", "nearest": "remapnn", "bilinear": "remapbil"}
RTOL = 1e-5


@pytest.fixture(autouse=True)
def _fresh_weights(monkeypatch):
    """No weights kept from another test (their key does not see a monkeypatch)."""
    monkeypatch.setattr(module, "_MEMO", type(module._MEMO)())


@pytest.fixture(scope="module")
def fields(tmp_path_factory) -> dict[str, dict[str, Path]]:
    """Two time steps with land masked and 5 % holes, per source grid and convention:
    1 degree without the poles (r360x180), 2 degrees with them as centres (r180x91)."""
    folder = tmp_path_factory.mktemp("regrid-fields")
    return {g: cdo_field(folder, 2, grid=g) for g in ("r360x180", "r180x91")}


def ours(path: Path, **options) -> np.ndarray:
    with xr.open_dataset(path) as ds:
        out = regrid(ds.sst.chunk({"time": 1}), **options).compute()
    return out.values.astype("f8")


def off_from(got: np.ndarray, expected: np.ndarray) -> float:
    """How far ``got`` is from CDO's: inf if their NaN masks differ, else the largest
    relative difference."""
    if not np.array_equal(np.isnan(got), np.isnan(expected)):
        return np.inf
    ok = ~np.isnan(got)
    return float(np.max(np.abs(got[ok] - expected[ok]) / np.abs(expected[ok])))


def assert_like_cdo(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.shape == expected.shape
    assert np.isnan(expected).any() and not np.isnan(expected).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=RTOL)


@pytest.mark.parametrize("method", list(OPS))
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("source", ["r360x180", "r180x91"])
def test_equal_to_cdo_global(fields, tmp_path, method, convention, source):
    path = fields[source][convention]
    expected = cdo_values(f"{OPS[method]},r144x72", path, out=tmp_path / "cdo.nc")
    assert_like_cdo(ours(path, grid="r144x72", method=method), expected)


def test_coarse_to_fine_bilinear_beyond_the_outermost_latitudes(tmp_path):
    """r72x36's outermost centres are at 87.5: r144x72's at 88.75 lie beyond, where CDO
    takes the inverse-distance mean of the four nearest centres."""
    path = cdo_field(tmp_path, 1, grid="r72x36", land=False)["-180..180"]
    for method in ("bilinear", "nearest", "conservative"):
        expected = cdo_values(f"{OPS[method]},r144x72", path, out=tmp_path / "cdo.nc")
        np.testing.assert_allclose(ours(path, grid="r144x72", method=method), expected, rtol=RTOL)


#: a regional target: 2 x 2.5 degree cells from 30S to 60N, 20W to 50E
REGION = {"lat": [-30, 60, 2.0], "lon": [-20, 50, 2.5]}
REGION_GRIDDES = """gridtype = lonlat
xsize = 28
ysize = 45
xfirst = -18.75
xinc = 2.5
yfirst = -29
yinc = 2
"""


@pytest.mark.parametrize("method", list(OPS))
@pytest.mark.parametrize("convention", CONVENTIONS)
def test_equal_to_cdo_regional_target(fields, tmp_path, method, convention):
    griddes = tmp_path / "region.txt"
    griddes.write_text(REGION_GRIDDES)
    path = fields["r360x180"][convention]
    expected = cdo_values(f"{OPS[method]},{griddes}", path, out=tmp_path / "cdo.nc")
    assert_like_cdo(ours(path, grid=REGION, method=method), expected)


@pytest.mark.parametrize("method", list(OPS))
@pytest.mark.parametrize("descending", [False, True])
def test_equal_to_cdo_regional_source(fields, tmp_path, method, descending):
    """A region of 30W..60E, 40S..70N to the global r144x72: targets beyond it missing
    (conservative, bilinear; CDO's bilinear takes the inverse-distance mean in the outer
    half cells), the nearest centre anywhere (remapnn)."""
    path = cdo("sellonlatbox,-30,60,-40,70", fields["r360x180"]["0..360"], out=tmp_path / "r.nc")
    if descending:
        with xr.open_dataset(path) as ds:
            flipped = ds.isel(lat=slice(None, None, -1)).load()
        path = write_for_cdo(flipped, tmp_path / "r-desc.nc")
    expected = cdo_values(f"{OPS[method]},r144x72", path, out=tmp_path / "cdo.nc")
    assert_like_cdo(ours(path, grid="r144x72", method=method), expected)


def test_grid_of_a_file_and_bounds_written(fields, tmp_path):
    """A target read from a NetCDF file (CDO's r72x36, no bounds variables: edges halfway); the result carries
    the target's cell edges, which prepare_for_file writes as lat_bnds and lon_bnds."""
    from pangeo_hpc.recipes.cf_attrs import prepare_for_file

    target = cdo("-setname,t -const,1,r72x36", out=tmp_path / "target.nc")
    path = fields["r360x180"]["0..360"]
    expected = cdo_values(f"remapcon,{target}", path, out=tmp_path / "cdo.nc")
    assert_like_cdo(ours(path, grid=str(target), method="conservative"), expected)
    with xr.open_dataset(path) as ds:
        out = regrid(ds.sst, grid="r72x36")
    written = prepare_for_file(out.to_dataset(), history="test")
    assert written.lat.attrs["bounds"] == "lat_bnds"
    np.testing.assert_allclose(written.lat_bnds.values[[0, -1]], [[-90, -85], [85, 90]])
    assert (written.lon_bnds[:, 0] <= written.lon).all() and (
        written.lon <= written.lon_bnds[:, 1]
    ).all()
    assert "conservative" in out.attrs["comment"] and "r72x36" in out.attrs["comment"]


def test_lazy_and_chunked_along_time_only(fields):
    with xr.open_dataset(fields["r360x180"]["0..360"]) as ds:
        da = ds.sst.chunk({"time": 1, "lat": 45, "lon": 90})
        with raise_if_dask_computes():
            out = regrid(da, grid="r144x72")
        assert out.chunks == ((1, 1), (72,), (144,))
        regrid(da, grid="r144x72", method="nearest").compute()


# -- plausible mistakes the comparisons must catch ------------------------------------


def _no_wrap(monkeypatch):
    """Longitude overlaps computed as if the axis ended at its seam."""
    plain = regrid_weights._interval_overlaps
    monkeypatch.setattr(
        regrid_weights, "_interval_overlaps", lambda d, s, period: plain(d, s, period=None)
    )


def _cos_lat(monkeypatch):
    """Overlaps in degrees of latitude times cos(latitude), not in sin(latitude)."""

    def wrong(src, dst):
        lat = regrid_weights._interval_overlaps(dst.lat_bounds, src.lat_bounds, period=None)
        lat = lat * np.cos(np.deg2rad(src.lat))[None, :]
        lon = regrid_weights._interval_overlaps(dst.lon_bounds, src.lon_bounds, period=360.0)
        return sp.kron(sp.csr_matrix(lat), sp.csr_matrix(lon), format="csr")

    monkeypatch.setattr(regrid_weights, "conservative", wrong)


def _nan_as_zero(monkeypatch):
    """Missing source values counted as 0."""
    plain = module._apply
    monkeypatch.setattr(module, "_apply", lambda block, **kw: plain(np.nan_to_num(block), **kw))


@pytest.mark.parametrize(
    ("mistake", "method"),
    [
        (_no_wrap, "conservative"),
        (_cos_lat, "conservative"),
        (_nan_as_zero, "conservative"),
        (_nan_as_zero, "bilinear"),
        (_nan_as_zero, "nearest"),
    ],
)
def test_the_comparison_catches_plausible_mistakes(fields, tmp_path, monkeypatch, mistake, method):
    path = fields["r360x180"]["-180..180"]
    expected = cdo_values(f"{OPS[method]},r144x72", path, out=tmp_path / "cdo.nc")
    assert off_from(ours(path, grid="r144x72", method=method), expected) < RTOL
    module._MEMO.clear()
    mistake(monkeypatch)
    assert off_from(ours(path, grid="r144x72", method=method), expected) > 10 * RTOL


# -- the weights' cache ----------------------------------------------------------------


def test_weights_cache_hits_and_a_damaged_entry_is_a_miss(fields, tmp_path, monkeypatch):
    builds = []
    plain = regrid_weights.build
    monkeypatch.setattr(regrid_weights, "build", lambda *a: builds.append(a) or plain(*a))
    store = CachedWeights(StateCache(tmp_path / "cache"))
    path = fields["r360x180"]["0..360"]
    with module.using_store(store):
        first = ours(path, grid="r144x72")
        assert len(builds) == 1
        module._MEMO.clear()  # a new process: only the folder remembers
        np.testing.assert_array_equal(ours(path, grid="r144x72"), first)
        assert len(builds) == 1  # the second use read them
        (entry,) = store.cache.entries()
        assert entry.meta["recipe"] == "(regrid weights)"
        data = bytearray(entry.path.read_bytes())
        data[len(data) // 2] ^= 0x10  # one bit anywhere
        entry.path.write_bytes(bytes(data))
        module._MEMO.clear()
        with pytest.warns(CacheWarning, match="damaged"):
            again = ours(path, grid="r144x72")
        assert len(builds) == 2  # a miss: built again, and stored again
        np.testing.assert_array_equal(again, first)
        assert len(store.cache.entries()) == 1
        module._MEMO.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ours(path, grid="r144x72")
        assert len(builds) == 2
    # another method, another grid: other keys
    assert module.weights_key(*_grids("r144x72"), "conservative") != module.weights_key(
        *_grids("r144x72"), "bilinear"
    )
    assert module.weights_key(*_grids("r144x72"), "nearest") != module.weights_key(
        *_grids("r72x36"), "nearest"
    )


def _grids(target: str):
    from pangeo_hpc.recipes.regrid_grids import source_grid, target_grid

    da = xr.DataArray(
        np.zeros((3, 4)),
        dims=("lat", "lon"),
        coords={"lat": [-60.0, 0, 60], "lon": [0.0, 90, 180, 270]},
    )
    return source_grid(da), target_grid(target)


# -- refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"grid": "r0x5"}, r"grid='r0x5' has no cells"),
        ({"grid": "t63grid"}, r"grid='t63grid' is not a grid: give grid: r144x72"),
        ({"grid": {"lat": [-60, 60, 7], "lon": [0, 360, 1]}}, r"not a whole number of cells"),
        ({"grid": {"lat": [-60, 60, 1]}}, r"exactly the keys lat and lon"),
        ({"grid": "r144x72", "method": "cubic"}, r"method='cubic' is not one of"),
    ],
)
def test_bad_options_are_one_line(options, match):
    da = xr.DataArray(
        np.zeros((3, 4)),
        dims=("lat", "lon"),
        coords={"lat": [-60.0, 0, 60], "lon": [0.0, 90, 180, 270]},
    )
    with pytest.raises(InputError, match=match) as err:
        regrid(da, **options)
    assert "\n" not in str(err.value)


def test_curvilinear_source_nearest(fields, tmp_path):
    """CDO's r180x91 field with holes as a curvilinear grid (2-D lat and lon): nearest
    equals remapnn; conservative is refused in one line (bilinear and other curvilinear
    grids: test_regrid_curvilinear.py)."""
    path = cdo("setgridtype,curvilinear", fields["r180x91"]["0..360"], out=tmp_path / "c.nc")
    with xr.open_dataset(path) as ds:
        assert ds.lat.dims == ("y", "x")
        with pytest.raises(InputError, match="method='conservative' needs a rectilinear"):
            regrid(ds.sst, grid="r144x72")
    expected = cdo_values("remapnn,r144x72", path, out=tmp_path / "cdo.nc")
    assert_like_cdo(ours(path, grid="r144x72", method="nearest"), expected)


def test_step_by_step_unless_the_grid_is_a_file():
    from pangeo_hpc.batch.chains.chain import parse_steps
    from pangeo_hpc.batch.incremental.splitting import Split, split

    steps = parse_steps([{"regrid": {"grid": "r144x72"}}, {"time_mean": {}}], "steps")
    assert isinstance(split(steps), Split)
    steps = parse_steps([{"regrid": {"grid": "t.nc"}}, {"time_mean": {}}], "steps")
    assert "the state cache does not see that file's content" in split(steps)


# -- a recipe run through the command line ----------------------------------------------

RECIPE = """
name: sst-on-r144x72
description: SST regridded conservatively to 2.5 degrees, then its mean.
dataset:
  variable: sea_surface_temperature
  start: "2000-01"
  end: "2000-02"
steps:
  - regrid: {grid: r144x72, method: conservative}
  - time_mean: {}
"""


@pytest.mark.slow
def test_recipe_through_the_cli_equals_cdo(demo_tree, tmp_path, monkeypatch):
    (tmp_path / "r.yaml").write_text(RECIPE)
    period = ("--start", "2000-01", "--end", "2000-02")
    args = ("r.yaml", "--data", str(demo_tree), *period, "--workers", "1", "--no-progress")
    r = run_cli(*args, "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    files = sorted(demo_tree.glob("2000/0[12]/data/sea_surface_temperature.nc"))
    expected = cdo_values("-timmean -remapcon,r144x72 -mergetime", *files, out=tmp_path / "cdo.nc")[
        0
    ]
    with xr.open_dataset(tmp_path / "out" / "result.nc") as ds:
        got = ds.sea_surface_temperature.values.astype("f8")
        assert ds.lat.attrs["bounds"] == "lat_bnds" and "lon_bnds" in ds
    assert_like_cdo(got, expected)
    # again: the weights come from the cache folder, the states too (not a copy of "out")
    monkeypatch.setenv("DASK_PANGEO_HPC__CACHE__COPY_RESULTS", "false")
    r = run_cli(*args, "--out", str(tmp_path / "again"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with xr.open_dataset(tmp_path / "again" / "result.nc") as ds:
        np.testing.assert_array_equal(ds.sea_surface_temperature.values, got.astype("f4"))
    r = run_cli("cache", "list", cwd=tmp_path)
    assert "(regrid weights)" in r.stdout, r.stdout + r.stderr
    why = unavailable()
    if why is not None:
        missing("cfchecks", why)
    report = cfchecks(tmp_path / "out" / "result.nc", tmp_path / "tables")
    assert report.errors == [], "\n".join(report.errors)


def test_a_bad_grid_in_a_recipe_is_exit_2(demo_tree, tmp_path):
    (tmp_path / "r.yaml").write_text(RECIPE.replace("r144x72", "r144y72"))
    r = run_cli(
        "r.yaml",
        "--data",
        str(demo_tree),
        "--start",
        "2000-01",
        "--end",
        "2000-01",
        "--workers",
        "1",
        "--no-progress",
        "--out",
        str(tmp_path / "out"),
        cwd=tmp_path,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "grid='r144y72' is not a grid" in r.stderr
    assert not (tmp_path / "out").exists()
