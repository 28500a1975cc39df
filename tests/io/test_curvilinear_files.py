"""Curvilinear model output (2-D ``lat(y, x)``/``lon(y, x)``, ``coordinates: "lat lon"``)
through a recipe's ``files:`` opener: the opener carries the 2-D coordinates (also from
the scan cache), a recipe ``regrid: {method: bilinear}`` + ``time_mean`` runs from the
command line, incrementally (one more file reads one more file; the cached run equals a
``--no-cache`` run to the bit), and equals CDO ``-timmean -remapbil`` within test_regrid's
tolerance; the steps that need a rectilinear grid are refused in one line naming the step
and the fix (a ``regrid`` step first), exit 2, nothing written, no cache entry.

The grid is test_regrid_curvilinear's rotated pole across the Greenwich meridian, which
no code of the package has seen; three files of two months each.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import yaml

from pangeo_hpc.cli import main as run
from pangeo_hpc.errors import InputError
from pangeo_hpc.io import scan_cache
from pangeo_hpc.io.files import open_files
from tests.recipes.test_regrid import assert_like_cdo
from tests.recipes.test_regrid_curvilinear import rotated_pole
from tests.support.cdo_fields import cdo_values, curvilinear_file
from tests.support.cf import cfchecks, unavailable
from tests.support.cli import run_cli
from tests.support.needs import missing

pytestmark = pytest.mark.cdo

MONTHS = pd.date_range("2001-01-01", periods=6, freq="MS")


def month_file(path: Path, months: pd.DatetimeIndex, lat: np.ndarray, lon: np.ndarray) -> Path:
    """A smooth field plus noise per month (:func:`curvilinear_file`), variable ``tos``."""
    time = months.values, {"standard_name": "time"}
    return curvilinear_file(path, lat, lon, "tos", time, seed=months[0].month, noise=3)


@pytest.fixture
def rotated(tmp_path) -> list[Path]:
    """The three files, in a folder of their own."""
    folder = tmp_path / "rotated"
    folder.mkdir()
    lat, lon = rotated_pole()
    return [
        month_file(folder / f"tos_{k}.nc", MONTHS[2 * k : 2 * k + 2], lat, lon) for k in range(3)
    ]


def test_the_opener_carries_2d_coordinates(rotated, tmp_path):
    lat, lon = rotated_pole()
    pattern = str(rotated[0].parent / "*.nc")
    for _ in range(2):  # a full scan, then the scan cache
        ds = open_files(pattern, "tos")
        assert ds.tos.dims == ("time", "y", "x") and ds.sizes["time"] == 6
        assert ds.lat.dims == ds.lon.dims == ("y", "x")
        np.testing.assert_array_equal(ds.lat.values, lat)
        np.testing.assert_array_equal(ds.lon.values, lon)
        assert ds.lat.attrs["standard_name"] == "latitude"
    root = Path(rotated[0].parent)
    entries = scan_cache.load(scan_cache.cache_path(root, "tos", kind="files"))
    assert sorted(entries) == ["tos_0.nc", "tos_1.nc", "tos_2.nc"]
    grid = entries["tos_0.nc"]["vars"]["tos"]["grid"]
    assert ", lat 26.4666..69.5971 (50, 60) #" in grid and ", lon " in grid  # the 2-D ones


def test_files_on_other_2d_coordinates_are_refused(rotated, tmp_path):
    """Same dimensions and sizes, other centres: not one grid (the dimensions have no
    coordinate values, so only the 2-D coordinates tell)."""
    lat, lon = rotated_pole()
    month_file(rotated[2], MONTHS[4:], lat + 0.1, lon)
    with pytest.raises(InputError, match=r"tos_2.nc' has tos on the grid .*lat .* but .*tos_0"):
        open_files(str(rotated[0].parent / "*.nc"), "tos")


def _recipe(folder: Path, files: str, steps: list) -> Path:
    doc = {"name": "curvilinear", "dataset": {"variable": "tos", "files": files}, "steps": steps}
    path = folder / "curvilinear.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.slow
def test_regrid_bilinear_then_time_mean_from_the_cli(rotated, tmp_path):
    """Two files, then the third added: the run reads one file; equal to ``--no-cache`` to
    the bit and to CDO within its tolerance; the result passes cfchecks."""
    later = tmp_path / "later.nc"
    rotated[2].rename(later)
    recipe = _recipe(
        tmp_path,
        str(rotated[0].parent / "*.nc"),
        [{"regrid": {"grid": "r144x72", "method": "bilinear"}}, {"time_mean": {}}],
    )
    args = (str(recipe), "--workers", "1", "--no-progress")
    first = run_cli(*args, "--out", str(tmp_path / "first"), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    later.rename(rotated[2])
    again = run_cli(*args, "--out", str(tmp_path / "cached"), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "2 of 3 files' states reused, 1 file read" in again.stdout + again.stderr
    fresh = run_cli(*args, "--no-cache", "--out", str(tmp_path / "fresh"), cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    with (
        xr.open_dataset(tmp_path / "cached" / "result.nc") as a,
        xr.open_dataset(tmp_path / "fresh" / "result.nc") as b,
    ):
        assert a.tos.dims == ("lat", "lon") and a.tos.shape == (72, 144)
        np.testing.assert_array_equal(a.tos.values, b.tos.values)
        got = a.tos.values.astype("f8")
    expected = cdo_values(
        "-timmean -remapbil,r144x72 -mergetime", *rotated, out=tmp_path / "cdo.nc"
    )[0]
    assert np.isfinite(got).sum() > 300  # the region's cells (about 19 x 16), not an empty map
    assert_like_cdo(got, expected)
    why = unavailable()
    if why is not None:
        missing("cfchecks", why)
    report = cfchecks(tmp_path / "cached" / "result.nc", tmp_path / "tables")
    assert report.errors == [], "\n".join(report.errors)


RECTILINEAR_ONLY = [
    ({"area_mean": {}}, "area_mean"),
    ({"global_mean": {}}, "global_mean"),
    ({"time_series": {}}, "global_mean"),
    ({"trend_global_mean": {}}, "global_mean"),
    ({"zonal_mean": {}}, "zonal_mean"),
    ({"select_region": {"lat": [30, 50], "lon": [0, 20]}}, "select_region"),
    ({"select_region": {"name": "ar6:WCE"}}, "select_region"),
    ({"nino34": {}}, "nino34"),
]


@pytest.mark.parametrize(
    ("step", "named"), RECTILINEAR_ONLY, ids=[n for n, _ in enumerate(RECTILINEAR_ONLY)]
)
def test_steps_that_need_a_rectilinear_grid_are_refused(
    rotated, tmp_path, capsys, monkeypatch, _state_cache_per_test, step, named
):
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    recipe = _recipe(tmp_path, str(rotated[0].parent / "*.nc"), [step])
    before = sorted(p.name for p in tmp_path.iterdir())
    code = run.main([str(recipe), "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.count("\n") == 0, err
    assert f"steps[0] ({next(iter(step))}): {named} needs a rectilinear" in err
    assert "put the step regrid: {grid: r144x72, method: bilinear}" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "output left behind"
    states = Path(_state_cache_per_test)
    assert not states.exists() or not any(states.rglob("*")), "a cache entry was left"


def test_a_step_before_regrid_keeps_the_2d_coordinates(rotated, tmp_path):
    """``time_mean`` first, then ``regrid``: the mean keeps ``lat(y, x)``, so the regrid
    still finds its grid (the order of steps is the user's)."""
    recipe = _recipe(
        tmp_path,
        str(rotated[0].parent / "*.nc"),
        [{"time_mean": {}}, {"regrid": {"grid": "r144x72", "method": "bilinear"}}],
    )
    r = run_cli(
        str(recipe), "--workers", "1", "--no-progress", "--out", str(tmp_path / "o"), cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    expected = cdo_values("-remapbil,r144x72 -timmean -mergetime", *rotated, out=tmp_path / "c.nc")
    with xr.open_dataset(tmp_path / "o" / "result.nc") as ds:
        assert_like_cdo(ds.tos.values.astype("f8"), expected[0])


@pytest.mark.slow
def test_a_curvilinear_map_is_written_with_its_2d_coordinates(rotated, tmp_path):
    """``time_mean`` alone keeps the curvilinear grid: the result carries ``lat(y, x)`` and
    ``lon(y, x)`` (the variable's ``coordinates`` names them), passes cfchecks, and equals
    CDO ``timmean`` read back by CDO."""
    recipe = _recipe(tmp_path, str(rotated[0].parent / "*.nc"), [{"time_mean": {}}])
    r = run_cli(
        str(recipe), "--workers", "1", "--no-progress", "--out", str(tmp_path / "o"), cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    path = tmp_path / "o" / "result.nc"
    lat, lon = rotated_pole()
    with xr.open_dataset(path) as ds:
        assert ds.tos.dims == ("y", "x") and ds.lat.dims == ("y", "x")
        np.testing.assert_array_equal(ds.lat.values, lat)
        np.testing.assert_array_equal(ds.lon.values, lon)
    expected = cdo_values("-timmean -mergetime", *rotated, out=tmp_path / "c.nc")[0]
    got = cdo_values("copy", path, out=tmp_path / "r.nc")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-6)  # float32 means of 6 values
    why = unavailable()
    if why is not None:
        missing("cfchecks", why)
    report = cfchecks(path, tmp_path / "tables")
    assert report.errors == [], "\n".join(report.errors)
