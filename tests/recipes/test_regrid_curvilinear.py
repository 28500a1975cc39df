"""regrid from curvilinear sources (2-D latitude and longitude) equals CDO's remapbil and
remapnn on grids made here, which no code of the package has seen: a rotated-pole region
crossing the Greenwich meridian, a global grid whose northern rows bend towards two
poles as a tripolar ocean grid's do, and CDO's own r180x91 made curvilinear; each with 5 %
of its cells missing. Conservative remapping from them is refused in one line.

The tolerance is test_regrid's (1e-5 relative, far above the float32 rounding of the
written values); the last test puts two plausible mistakes in (weights from the corners'
latitude and longitude taken apart, without inverting the bilinear map; no longitude
wrap) and checks that the comparison catches each.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from pangeo_hpc.cli import main as run
from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes import regrid, regrid_curvilinear
from tests.recipes.test_regrid import RTOL, assert_like_cdo, off_from
from tests.support.cdo_fields import cdo, cdo_field, cdo_values, curvilinear_file
from tests.support.cf import cfchecks, unavailable
from tests.support.needs import missing

module = importlib.import_module("pangeo_hpc.recipes.regrid")

pytestmark = pytest.mark.cdo

OPS = {"bilinear": "remapbil", "nearest": "remapnn"}
#: a regional target over the rotated grid: 1-degree cells, 10N..70N, 30W..50E
BOX = {"lat": [10, 70, 1.0], "lon": [-30, 50, 1.0]}


@pytest.fixture(autouse=True)
def _fresh_weights(monkeypatch):
    monkeypatch.setattr(module, "_MEMO", type(module._MEMO)())


def rotated_pole(nx: int = 60, ny: int = 50, step: float = 0.8) -> tuple[np.ndarray, ...]:
    """A regular grid in a frame whose pole is tilted 50 degrees: centred on 40N 10E,
    about 48 x 40 degrees, across the Greenwich meridian (longitudes 0..360)."""
    lam, phi = np.meshgrid(
        np.deg2rad((np.arange(nx) - nx / 2 + 0.5) * step),
        np.deg2rad((np.arange(ny) - ny / 2 + 0.5) * step),
    )
    v = np.stack([np.cos(phi) * np.cos(lam), np.cos(phi) * np.sin(lam), np.sin(phi)])
    t = np.deg2rad(50.0)
    tilt = np.array([[np.cos(t), 0, -np.sin(t)], [0, 1, 0], [np.sin(t), 0, np.cos(t)]])
    v = np.einsum("ij,jkl->ikl", tilt, v)
    lat = np.rad2deg(np.arcsin(np.clip(v[2], -1, 1)))
    return lat, np.mod(np.rad2deg(np.arctan2(v[1], v[0])) + 10.0, 360.0)


def bent_north(nx: int = 120, ny: int = 64) -> tuple[np.ndarray, ...]:
    """Global and cyclic in x; north of 40N the rows bend (latitude and longitude both
    moved, most near the top), as a tripolar grid's rows do around its two poles."""
    lon, lat = np.meshgrid(np.arange(nx) * 360.0 / nx, -88 + (np.arange(ny) + 0.5) * 176 / ny)
    north = np.clip((lat - 40) / 50, 0, None)
    lat = lat - 3 * north**2 * np.cos(np.deg2rad(2 * lon))
    return lat, np.mod(lon + 8 * north * np.sin(np.deg2rad(2 * lon)), 360.0)


def sst_file(path: Path, lat: np.ndarray, lon: np.ndarray, nt: int = 2) -> Path:
    """``nt`` daily steps of a smooth field plus noise (:func:`curvilinear_file`), ``sst``."""
    time = np.arange(nt) * 1.0, {"units": "days since 2000-01-01"}
    return curvilinear_file(path, lat, lon, "sst", time, seed=len(lat.ravel()))


@pytest.fixture(scope="module")
def grids(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("curvilinear")
    r180x91 = cdo_field(folder, 2, grid="r180x91")["0..360"]
    return {
        "rotated-pole": sst_file(folder / "rotated.nc", *rotated_pole()),
        "bent-north": sst_file(folder / "bent.nc", *bent_north()),
        "r180x91-curvilinear": cdo("setgridtype,curvilinear", r180x91, out=folder / "c.nc"),
    }


def griddes(box: dict, folder: Path) -> Path:
    """CDO's description of the cells of a ``{lat: [...], lon: [...]}`` target."""
    (s, n, dy), (w, e, dx) = box["lat"], box["lon"]
    path = folder / "box.txt"
    path.write_text(
        f"gridtype = lonlat\nxsize = {round((e - w) / dx)}\nysize = {round((n - s) / dy)}\n"
        f"xfirst = {w + dx / 2}\nxinc = {dx}\nyfirst = {s + dy / 2}\nyinc = {dy}\n"
    )
    return path


def ours(path: Path, **options) -> np.ndarray:
    with xr.open_dataset(path) as ds:
        assert ds.lat.dims == ("y", "x")
        return regrid(ds.sst, **options).values.astype("f8")


@pytest.mark.parametrize("method", list(OPS))
@pytest.mark.parametrize("source", ["rotated-pole", "bent-north", "r180x91-curvilinear"])
@pytest.mark.parametrize("target", ["r144x72", "box"])
def test_equal_to_cdo(grids, tmp_path, method, source, target):
    """Global and regional targets; the bent grid's top rows (beyond its last centres:
    CDO's inverse-distance fallback) and seam (its cyclic quadrilaterals) included."""
    path = grids[source]
    spec = BOX if target == "box" else target
    cdo_grid = griddes(BOX, tmp_path) if target == "box" else target
    expected = cdo_values(f"{OPS[method]},{cdo_grid}", path, out=tmp_path / "cdo.nc")
    assert_like_cdo(ours(path, grid=spec, method=method), expected)


def test_cyclic_grids_are_recognised(grids):
    assert regrid_curvilinear.cyclic(bent_north()[1])
    assert not regrid_curvilinear.cyclic(rotated_pole()[1])


def test_conservative_is_refused_in_one_line(grids):
    with xr.open_dataset(grids["rotated-pole"]) as ds:
        with pytest.raises(InputError, match="method='conservative' needs a rectilinear") as e:
            regrid(ds.sst, grid="r144x72", method="conservative")
    assert "\n" not in str(e.value) and "method='bilinear'" in str(e.value)


def _recipe(folder: Path, files: Path, method: str) -> Path:
    doc = {
        "name": f"curvilinear-{method}",
        "dataset": {"variable": "sst", "files": str(files)},
        "steps": [{"regrid": {"grid": "r144x72", "method": method}}, {"time_mean": {}}],
    }
    path = folder / f"{method}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_in_a_recipe_exit_2_nothing_written(
    grids, tmp_path, capsys, monkeypatch, _state_cache_per_test
):
    """Conservative regridding of a curvilinear ``files:`` dataset (the opener carries its
    2-D coordinates) stops at regrid's grid check: one line, exit 2, nothing written."""
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    recipe = _recipe(tmp_path, grids["rotated-pole"], "conservative")
    before = sorted(p.name for p in tmp_path.iterdir())
    code = run.main([str(recipe), "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.count("\n") == 0 and "(regrid): method='conservative' needs a rectilinear" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "output left behind"
    states = Path(_state_cache_per_test)
    assert not states.exists() or not any(states.rglob("*")), "a cache entry was left"


def test_written_result_passes_cf_checks_and_opens_in_cdo(grids, tmp_path):
    from pangeo_hpc.recipes.cf_attrs import prepare_for_file

    with xr.open_dataset(grids["bent-north"]) as ds:
        out = regrid(ds.sst, grid="r144x72", method="bilinear").mean("time", keep_attrs=True)
        written = prepare_for_file(out.to_dataset(), history="test").load()
    path = tmp_path / "result.nc"
    written.to_netcdf(path)
    with xr.open_dataset(path) as back:
        assert back.lat.attrs["bounds"] == "lat_bnds" and back.sst.dims == ("lat", "lon")
        assert "bilinear" in back.sst.attrs["comment"]
    expected = cdo_values("-timmean -remapbil,r144x72", grids["bent-north"], out=tmp_path / "c.nc")
    assert_like_cdo(cdo_values("copy", path, out=tmp_path / "r.nc"), expected[0])
    why = unavailable()
    if why is not None:
        missing("cfchecks", why)
    report = cfchecks(path, tmp_path / "tables")
    assert report.errors == [], "\n".join(report.errors)


# -- plausible mistakes the comparison must catch ----------------------------------------


def _corners_apart(monkeypatch):
    """Weights linear in longitude along the south side and in latitude along the west
    side, each on its own: no inverse of the bilinear map (right on a rectilinear grid)."""

    def apart(plon, plat, lons, lats):
        i = regrid_curvilinear._near(plon - lons[:, 0], 1.5 * np.pi) / (lons[:, 1] - lons[:, 0])
        j = (plat - lats[:, 0]) / (lats[:, 3] - lats[:, 0])
        return i, j, np.ones(plon.shape, bool)

    monkeypatch.setattr(regrid_curvilinear, "_local", apart)


def _no_wrap(monkeypatch):
    """Longitudes compared as they are: no move by a turn at the seam."""
    monkeypatch.setattr(regrid_curvilinear, "_near", lambda d, half: d)


@pytest.mark.parametrize("mistake", [_corners_apart, _no_wrap])
@pytest.mark.parametrize("source", ["rotated-pole", "bent-north"])
def test_the_comparison_catches_plausible_mistakes(grids, tmp_path, monkeypatch, mistake, source):
    path = grids[source]
    expected = cdo_values("remapbil,r144x72", path, out=tmp_path / "cdo.nc")
    assert off_from(ours(path, grid="r144x72", method="bilinear"), expected) < RTOL
    module._MEMO.clear()
    mistake(monkeypatch)
    assert off_from(ours(path, grid="r144x72", method="bilinear"), expected) > 10 * RTOL
