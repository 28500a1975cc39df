"""The AR6 reference regions shipped with the package: masks equal regionmask's built from
the same vertices, no network and no regionmask needed, the region named in the result,
an unknown name refused with the closest names."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import regionmask
import shapely
import xarray as xr

from pangeo_hpc.cli import main as run
from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes import ar6, select_region
from tests.support.cf import cfchecks, unavailable
from tests.support.cli import run_cli
from tests.support.lazy import raise_if_dask_computes
from tests.support.needs import missing, require_tool
from tests.support.paths import ROOT

CSV = Path(ar6.__file__).parent / ar6.CSV_FILE
#: 1 and 0.25 degrees, both longitude conventions, poles and the seam on the grid (points
#: on region edges), ERA5's descending latitudes at 0.25 degrees
GRIDS = {
    "1deg-0..360": (np.arange(0.0, 360.0, 1.0), np.arange(-90.0, 90.5, 1.0)),
    "1deg-180": (np.arange(-180.0, 180.0, 1.0), np.arange(-90.0, 90.5, 1.0)),
    "0.25deg-0..360-desc": (np.arange(0.0, 360.0, 0.25), np.arange(90.0, -90.1, -0.25)),
    "0.25deg-180": (np.arange(-180.0, 180.0, 0.25), np.arange(-90.0, 90.1, 0.25)),
}


def _regionmask_from_csv() -> tuple[regionmask.Regions, list[str]]:
    """regionmask's AR6 regions as regionmask builds them (one MultiPolygon per region
    across 180 E, overlap=False), from the shipped CSV read here on its own; and the
    surface types."""
    with CSV.open() as f:
        rows = list(csv.reader(f))[1:]
    parts: dict[str, list[shapely.Polygon]] = {}
    names, surfaces = {}, {}
    for row in rows:
        abbrev = row[3].strip().rstrip("*")
        xy = [tuple(map(float, c.split("|"))) for c in row[4:] if c.strip()]
        parts.setdefault(abbrev, []).append(shapely.Polygon(xy))
        names.setdefault(abbrev, row[2])
        surfaces.setdefault(abbrev, row[1])
    geoms = [p[0] if len(p) == 1 else shapely.MultiPolygon(p) for p in parts.values()]
    regions = regionmask.Regions(
        geoms, names=list(names.values()), abbrevs=list(parts), name="AR6", overlap=False
    )
    return regions, list(surfaces.values())


def test_the_shipped_set_is_regionmasks():
    """58 regions numbered as regionmask numbers them; land and ocean as it selects them."""
    assert [r.abbrev for r in ar6.regions()][:4] == ["GIC", "NWN", "NEN", "WNA"]
    assert (ar6.region("ar6:EAN").number, ar6.region("ar6:SOO").number) == (44, 57)
    land, ocean = ar6.regions("land"), ar6.regions("ocean")
    assert (len(ar6.regions()), len(land), len(ocean)) == (58, 46, 15)
    assert {r.abbrev for r in land} & {r.abbrev for r in ocean} == {"CAR", "MED", "SEA"}
    assert [len(r.parts) for r in ar6.regions() if len(r.parts) > 1] == [2, 2, 2, 2]


@pytest.mark.parametrize("grid", list(GRIDS))
def test_every_region_equals_regionmask(grid):
    """Each region's cells (the 46 land ones, and the ocean ones: ARO to the pole, NPO, EPO
    and SPO across 180 E) are those regionmask's mask_3D gives from the same vertices: edge
    points, the seam, the poles and the slivers where two polygons overlap (63 points at
    0.25 degrees, which regionmask gives to the region numbered last)."""
    lon, lat = GRIDS[grid]
    regions, surfaces = _regionmask_from_csv()
    expected = regions.mask_3D(lon, lat, drop=False).values
    da = xr.DataArray(
        np.ones((lat.size, lon.size), "f4"),
        dims=("lat", "lon"),
        coords={"lat": ("lat", lat, {"units": "degrees_north"}),
                "lon": ("lon", lon, {"units": "degrees_east"})},
        name="t2m",
    )  # fmt: skip
    assert sum("Land" in s for s in surfaces) == 46 and len(surfaces) == 58
    wrong = {}
    for i, abbrev in enumerate(regions.abbrevs):
        got = select_region(da, name=f"ar6:{abbrev}").notnull().values
        if (got != expected[i]).any():
            wrong[abbrev] = int((got != expected[i]).sum())
    assert not wrong, f"cells unlike regionmask's: {wrong}"
    # every grid point in at most one region, as in regionmask's 2-D mask
    assert expected.sum(axis=0).max() == 1


def test_no_network_and_no_regionmask_needed(tmp_path):
    """In a Python where sockets refuse to connect and regionmask, pooch, geopandas,
    shapely and rasterio cannot be imported, with an empty regionmask cache, ar6:WNA
    selects the cells that regionmask selects here."""
    lon, lat = GRIDS["1deg-180"]
    regions, _ = _regionmask_from_csv()
    expected = int(regions.mask_3D(lon, lat, drop=False).values[3].sum())
    code = """
        import socket, sys
        for m in ("regionmask", "pooch", "geopandas", "shapely", "rasterio", "requests"):
            sys.modules[m] = None
        def refuse(*args, **kwargs):
            raise AssertionError("a network call was attempted: " + repr(args))
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        import numpy as np, xarray as xr
        from pangeo_hpc.recipes import select_region
        lon, lat = np.arange(-180.0, 180.0, 1.0), np.arange(-90.0, 90.5, 1.0)
        da = xr.DataArray(np.ones((lat.size, lon.size)), dims=("lat", "lon"),
                          coords={"lat": lat, "lon": lon})
        print(int(select_region(da, name="ar6:WNA").notnull().sum()))
        """
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(tmp_path / "empty-cache"),  # pooch's (regionmask's) cache
    }
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert int(r.stdout.strip()) == expected > 0


def test_the_region_is_named_in_the_result_and_lazy():
    lon, lat = GRIDS["1deg-0..360"]
    da = xr.DataArray(
        np.ones((2, lat.size, lon.size), "f4"),
        dims=("time", "lat", "lon"),
        coords={"time": np.array(["2000-01-01", "2000-01-02"], "datetime64[ns]"),
                "lat": lat, "lon": lon},
        name="t2m",
        attrs={"long_name": "2 metre temperature", "units": "K", "references": "ERA5"},
    ).chunk({"time": 1})  # fmt: skip
    with raise_if_dask_computes():
        got = select_region(da, name="ar6:wna")
    assert got.attrs["long_name"] == "2 metre temperature over ar6:WNA (W.North-America)"
    assert got.attrs["units"] == "K"
    assert got.attrs["references"].startswith("ERA5; IPCC WGI AR6 reference regions v4")
    assert "https://doi.org/10.5194/essd-12-2959-2020" in got.attrs["references"]
    by_name = select_region(da, name="ar6:W.North-America").compute()
    xr.testing.assert_identical(got.compute(), by_name)


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("ar6:WNE", "did you mean ar6:WNA (W.North-America)"),
        ("ar6:Mediteranean", "did you mean ar6:MED (Mediterranean)"),
        ("ar6:XYZQ", "give one of GIC NWN NEN WNA"),
    ],
)
def test_an_unknown_name_lists_close_names(name, hint):
    da = xr.DataArray(np.ones((3, 4)), dims=("lat", "lon"),
                      coords={"lat": [-10.0, 0.0, 10.0], "lon": [0.0, 90.0, 180.0, 270.0]})  # fmt: skip
    with pytest.raises(InputError, match=re.escape(f"name={name!r} is not an AR6 region: {hint}")):
        select_region(da, name=name)


RECIPE = """\
name: ar6-{slug}
description: |
  Mean SST over one AR6 region.
dataset: {{variable: sea_surface_temperature, start: "2000-01", end: "2000-02"}}
steps:
  - select_region: {{name: "{name}"}}
  - time_mean: {{}}
outputs: {{format: netcdf}}
"""


def test_an_unknown_name_in_a_recipe_exits_2_writing_nothing(
    demo_tree, tmp_path, capsys, monkeypatch, _state_cache_per_test
):
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    recipe = tmp_path / "recipes" / "bad.yaml"
    recipe.parent.mkdir()
    recipe.write_text(RECIPE.format(slug="bad", name="ar6:WNE"))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code = run.main(["run", str(recipe), "--data", str(demo_tree), "--workers", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "'ar6:WNE'" in err[0] and "ar6:WNA (W.North-America)" in err[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before, "output left behind"
    states = Path(_state_cache_per_test)
    assert not states.exists() or not any(states.rglob("*")), "a cache entry was left"


@pytest.mark.slow
def test_a_recipe_over_an_ar6_region_writes_a_cf_file_cdo_reads(demo_tree, tmp_path):
    """The region reaches result.nc's long_name; the file passes cfchecks and opens in CDO."""
    why = unavailable()
    if why is not None:
        missing("cfchecks", why)
    recipe = tmp_path / "npo.yaml"
    recipe.write_text(RECIPE.format(slug="npo", name="ar6:NPO"))
    out = tmp_path / "out"
    r = run_cli(str(recipe), "--data", str(demo_tree), "--workers", "1", "--no-progress",
                "--out", str(out), cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    with xr.open_dataset(out / "result.nc") as ds:
        sst = ds["sea_surface_temperature"]
        assert "Sea surface temperature over ar6:NPO (N.Pacific-Ocean)" in sst.attrs["long_name"]
        assert 0 < int(sst.notnull().sum()) < sst.size
    report = cfchecks(out / "result.nc", tmp_path / "tables")
    assert (report.errors, report.warnings) == ([], []), report.output
    cdo = require_tool("cdo")
    info = subprocess.run([cdo, "-s", "infon", str(out / "result.nc")],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert "sea_surface_temperature" in info.stdout


def test_the_vertices_are_part_of_the_cache_key(monkeypatch):
    """A state cached with other vertices is not reused: the shipped CSV's bytes are in
    the package code's identity, which every state's key holds."""
    from pangeo_hpc.batch.chains import code_identity

    shipped = CSV.resolve()
    read = Path.read_bytes

    def edited(path: Path) -> bytes:  # WNA's first vertex moved by 0.1 degree
        data = read(path)
        return data.replace(b"WNA,-130.0|50.0", b"WNA,-130.1|50.0") if path == shipped else data

    code_identity.package_code.cache_clear()
    before = code_identity.package_code()
    monkeypatch.setattr(Path, "read_bytes", edited)
    code_identity.package_code.cache_clear()
    try:
        assert code_identity.package_code() != before
    finally:
        code_identity.package_code.cache_clear()


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # regionmask's, 0.13
def test_polygon_mask_equals_regionmask_on_random_polygons():
    """polygons.polygon_mask alone, on 300 random star-shaped polygons whose vertices lie
    on a half-degree lattice (so edges run through grid points, and some touch 180 E and
    the poles): the cells regionmask selects, on a 1-degree grid (fixed seed)."""
    from pangeo_hpc.recipes.polygons import polygon_mask

    rng = np.random.default_rng(20201)
    lon, lat = np.arange(-180.0, 180.0, 1.0), np.arange(-90.0, 90.5, 1.0)
    tried, wrong = 0, []
    for k in range(300):
        n = rng.integers(3, 12)
        cx, cy = rng.uniform(-170, 170), rng.uniform(-80, 80)
        angles, radii = np.sort(rng.uniform(0, 2 * np.pi, n)), rng.uniform(2, 30, n)
        x = np.clip(np.round((cx + radii * np.cos(angles)) * 2) / 2, -180, 180)
        y = np.clip(np.round((cy + radii * np.sin(angles)) * 2) / 2, -90, 90)
        ring = np.column_stack([x, y])
        polygon = shapely.Polygon(ring)
        if not polygon.is_valid or polygon.area == 0:
            continue
        tried += 1
        expected = regionmask.Regions([polygon]).mask_3D(lon, lat, drop=False).values[0]
        if (polygon_mask([ring], lon, lat) != expected).any():
            wrong.append(k)
    assert tried > 200
    assert not wrong, f"polygons unlike regionmask's: {wrong}"
