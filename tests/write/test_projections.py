"""Maps in a projection (a recipe's ``plot: {projection: robinson}``), drawn by cartopy.

The values land where their longitudes and latitudes say: a field that is 1 in a box and 0
elsewhere is drawn, and the rendered pixel at the box's centre, projected by cartopy, has
the colour of 1 while a pixel far from it has the colour of 0. The coastlines are the
package's own: a map is drawn in a process that can open no socket, with cartopy's data
folder empty, and stays empty. A projection the package does not know stops a run with one
line naming it and the choices, exit 2, nothing written.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, QuadMesh
from matplotlib.image import AxesImage

from pangeo_hpc.cli import main as run
from pangeo_hpc.errors import InputError
from pangeo_hpc.write.figures import draw_result
from pangeo_hpc.write.projections import PROJECTIONS, MapView, map_view
from tests.support.paths import ROOT

LAT = np.arange(-89.5, 90.0, 1.0)
LON = np.arange(0.5, 360.0, 1.0)  # 0..360: the projected maps must not care


def box_field(lat: tuple[float, float], lon: tuple[float, float]) -> xr.Dataset:
    """1 in the box of centres within ``lat`` and ``lon`` (0..360), 0 elsewhere."""
    inside = (
        (LAT[:, None] > lat[0]) & (LAT[:, None] < lat[1]) & (LON > lon[0]) & (LON < lon[1])
    )  # fmt: skip
    da = xr.DataArray(
        inside.astype("f8"),
        dims=("lat", "lon"),
        coords={"lat": ("lat", LAT, {"units": "degrees_north"}),
                "lon": ("lon", LON, {"units": "degrees_east"})},
        attrs={"units": "1", "long_name": "box"},
    )  # fmt: skip
    return da.to_dataset(name="box")


def rendered(fig) -> np.ndarray:
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3]


def colour_at(fig, image: np.ndarray, lon: float, lat: float) -> np.ndarray:
    """The rendered colour at (lon, lat), projected by the map's own projection."""
    import cartopy.crs as ccrs

    (ax,) = [a for a in fig.subfigs[0].axes if hasattr(a, "projection")]
    x, y = ax.projection.transform_point(lon, lat, ccrs.PlateCarree())
    px, py = ax.transData.transform((x, y))
    row = image.shape[0] - 1 - round(py)  # pixel rows count from the top
    patch = image[row - 2 : row + 3, round(px) - 2 : round(px) + 3].reshape(-1, 3)
    return np.median(patch, axis=0)  # a line of the graticule or a coast may cross it


def cells_of(fig) -> AxesImage | QuadMesh:
    """The map's cells: an image (evenly spaced coordinates) or a mesh."""
    (ax,) = [a for a in fig.subfigs[0].axes if hasattr(a, "projection")]
    (cells,) = [a for a in (*ax.images, *ax.collections) if isinstance(a, AxesImage | QuadMesh)]
    return cells


def mesh_colour(fig, value: float) -> np.ndarray:
    cells = cells_of(fig)
    return np.round(np.asarray(cells.cmap(cells.norm(value)))[:3] * 255)


@pytest.mark.parametrize(
    ("plot", "box", "inside", "outside"),
    [
        ({"projection": "robinson"}, ((10, 30), (20, 40)), (30, 20), (-145, -25)),
        # lon 0..360 data shown from the other side of the globe
        ({"projection": "mollweide", "central_longitude": 180}, ((-40, -20), (200, 230)), (-145, -25), (65, 5)),
        ({"projection": "orthographic", "central_longitude": -60, "central_latitude": 40},
         ((30, 50), (290, 310)), (-65, 37), (-25, 15)),
        ({"projection": "north_polar_stereo"}, ((65, 80), (90, 130)), (110, 72.5), (-65, 55)),
        ({"projection": "south_polar_stereo", "boundary_latitude": -50},
         ((-80, -65), (0, 40)), (20, -72.5), (205, -65)),
    ],
    ids=lambda v: v.get("projection") if isinstance(v, dict) else None,
)  # fmt: skip
def test_values_land_where_their_coordinates_say(plot, box, inside, outside):
    """Sampled at cartopy's projection of the box's centre: wrong implementations seen to
    fail here: the mesh drawn without ``transform=PlateCarree()`` (degrees taken as metres:
    the whole field in a few pixels at the centre) and latitudes taken north to south."""
    fig = draw_result(box_field(*box), "box", view=map_view(plot))
    image = rendered(fig)
    one, zero = mesh_colour(fig, 1.0), mesh_colour(fig, 0.0)
    assert np.abs(one - zero).max() > 60  # the two are told apart
    for where, want in ((inside, one), (outside, zero)):
        got = colour_at(fig, image, *where)
        assert np.abs(got - want).max() <= 3, (plot, where, got, want)


def test_a_projected_map_has_the_shipped_coastlines_and_no_axis_text():
    from cartopy.mpl.feature_artist import FeatureArtist

    from pangeo_hpc.write.coastlines import coastlines

    fig = draw_result(box_field((0, 10), (0, 10)), "t", view=map_view({"projection": "robinson"}))
    (ax,) = [a for a in fig.subfigs[0].axes if hasattr(a, "projection")]
    assert not ax.findobj(FeatureArtist)  # no Natural Earth feature
    (coast,) = [c for c in ax.collections if c.get_gid() == "coastlines"]
    # every point of the shipped lines is on a whole globe in Robinson: only the steps across
    # the seam are cut, and a piece of one point (none here) would be left out
    drawn = sum(len(piece) for piece in coast.get_segments())
    assert drawn == sum(map(len, coastlines()))
    assert ax.get_xlabel() == ax.get_ylabel() == ""  # degrees are not the axes' units here


@pytest.mark.parametrize(
    ("plot", "shown", "parallels"),
    [({"projection": "robinson"}, (-90, 90), [-60, -30, 0, 30, 60]),
     ({"projection": "north_polar_stereo"}, (40, 90), [50, 60, 70, 80])],
)  # fmt: skip
def test_the_graticule_is_the_packages_spaced_for_what_is_shown(plot, shown, parallels):
    """Not cartopy's ``gridlines()``, which cut every line with shapely at each of
    constrained layout's passes (3.5 s of a figure of four maps)."""
    from cartopy.mpl.gridliner import Gridliner

    fig = draw_result(box_field((60, 80), (0, 40)), "t", view=map_view(plot))
    (ax,) = [a for a in fig.subfigs[0].axes if hasattr(a, "projection")]
    assert not ax.findobj(Gridliner)
    (grid,) = [c for c in ax.collections if c.get_gid() == "graticule"]
    assert isinstance(grid, LineCollection) and grid.get_alpha() == 0.6
    import cartopy.crs as ccrs

    # each parallel drawn is a line of one latitude: its points project back to it
    seen = set()
    for piece in grid.get_segments():
        back = ccrs.PlateCarree().transform_points(ax.projection, piece[:, 0], piece[:, 1])
        lat = back[:, 1][np.isfinite(back[:, 1])]  # the ends on the edge may not come back
        if lat.size > 2 and np.ptp(lat) < 1e-3:  # Robinson's inverse is iterative
            seen.add(round(float(lat[0]), 2))
    assert sorted(s for s in seen if shown[0] < s < shown[1]) == parallels


def random_cells(west: float, east: float, south: float, north: float) -> xr.Dataset:
    """A value at random in each 10-degree cell between these edges (degrees)."""
    lat, lon = np.arange(south + 5, north, 10.0), np.arange(west + 5, east, 10.0)
    values = np.random.default_rng(7).random((lat.size, lon.size))
    da = xr.DataArray(
        values, dims=("lat", "lon"),
        coords={"lat": ("lat", lat, {"units": "degrees_north"}),
                "lon": ("lon", lon, {"units": "degrees_east"})},
        attrs={"units": "1", "long_name": "cells"},
    )  # fmt: skip
    return da.to_dataset(name="cells")


GLOBE, GLOBE_EAST = (-180, 180, -90, 90), (0, 360, -90, 90)
#: the tropical Pacific, across the date line (its maps keep 0..360)
PACIFIC = (140, 280, -30, 30)


@pytest.mark.parametrize(
    ("plot", "edges", "where"),
    [
        ({"projection": "robinson"}, GLOBE, [(-175, -55), (5, 5), (175, 65)]),
        ({"projection": "mollweide", "central_longitude": 180}, GLOBE_EAST, [(355, 15), (5, -25), (185, 35)]),
        ({"projection": "orthographic", "central_longitude": -60, "central_latitude": 40},
         GLOBE, [(-65, 45), (-25, 15), (-95, 65)]),
        ({"projection": "north_polar_stereo"}, GLOBE_EAST, [(5, 75), (115, 65), (295, 75)]),
        # cells east of the date line: longitudes the projection gives as -180..-80
        ({"projection": "robinson"}, PACIFIC, [(145, -25), (175, 5), (185, 5), (275, 25)]),
    ],
    ids=["robinson", "mollweide-180", "orthographic", "north_polar_stereo", "robinson-pacific"],
)  # fmt: skip
def test_each_cell_is_drawn_at_its_place_in_its_colour(plot, edges, where):
    """10-degree cells of random values, sampled at two points a quarter of a cell from
    each chosen cell's centre (south-west and north-east). Wrong implementations seen to
    fail here: the grid's edges taken at the first centre (half a cell east and north),
    latitudes north to south, and longitudes not taken modulo 360 (the Pacific's cells
    east of the date line missing)."""
    ds = random_cells(*edges)
    lat, lon = ds["lat"].values, ds["lon"].values
    fig = draw_result(ds, "cells", view=map_view(plot))
    image = rendered(fig)
    assert isinstance(cells_of(fig), AxesImage)
    for centre_lon, centre_lat in where:  # cells' centres
        (i,), (j,) = np.flatnonzero(lat == centre_lat), np.flatnonzero(lon == centre_lon)
        want = mesh_colour(fig, ds["cells"].values[i, j])
        for d in (-2.5, 2.5):
            got = colour_at(fig, image, lon[j] + d, lat[i] + d)
            assert np.abs(got - want).max() <= 3, (plot, lon[j] + d, lat[i] + d, got, want)


#: a map drawn with nothing to download from: every socket refused (and recorded), cartopy's
#: data folder empty; the figure must hold the coastlines and no "not plotted"
_OFFLINE = """
import json, socket, sys
tried = []
def refuse(*args, **kwargs):
    tried.append(repr(args))
    raise OSError("no network in this test")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
import cartopy
cartopy.config["data_dir"] = sys.argv[1]
cartopy.config["pre_existing_data_dir"] = sys.argv[1]
import numpy as np, xarray as xr
from pangeo_hpc.write.figures import plot_result, draw_result
from pangeo_hpc.write.projections import map_view
lat, lon = np.arange(-89.5, 90, 1.0), np.arange(-179.5, 180, 1.0)
ds = xr.Dataset({"t": (("lat", "lon"), np.cos(np.deg2rad(lat))[:, None] + 0 * lon,
                       {"units": "K"})}, coords={"lat": lat, "lon": lon})
view = map_view({"projection": "robinson"})
plot_result(ds, sys.argv[2], "offline", view=view)
fig = draw_result(ds, "offline", view=view)
fig.canvas.draw() if hasattr(fig.canvas, "draw") else None
texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
print(json.dumps({"tried": tried, "not_plotted": [t for t in texts if "not plotted" in t]}))
"""


def test_a_robinson_map_is_drawn_with_no_network_and_no_natural_earth(tmp_path):
    """A wrong implementation seen to fail: ``ax.coastlines()`` (Natural Earth, fetched
    into cartopy's data folder on first use) instead of the shipped lines."""
    import json

    data_dir = tmp_path / "cartopy-data"
    data_dir.mkdir()
    out = tmp_path / "robinson.png"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_OFFLINE), str(data_dir), str(out)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    said = json.loads(r.stdout.strip().splitlines()[-1])
    assert said == {"tried": [], "not_plotted": []}, said
    assert out.stat().st_size > 20_000
    assert not any(data_dir.rglob("*")), list(data_dir.rglob("*"))


@pytest.mark.parametrize(
    ("block", "says"),
    [
        ({"projection": "robinsn"}, "plot.projection 'robinsn' is not one of platecarree, robinson, mollweide, orthographic, north_polar_stereo, south_polar_stereo"),
        ({"projection": "robinson", "central_latitude": 10}, "plot.central_latitude is not an option of robinson: it takes central_longitude"),
        ({"projection": "orthographic", "central_latitude": 95}, "plot.central_latitude 95 must be a number from -90 to 90"),
        ({"projection": "orthographic", "central_longitude": "east"}, "plot.central_longitude 'east' must be a number"),
        ({"projection": "north_polar_stereo", "boundary_latitude": -30}, "boundary_latitude -30 is not in the northern hemisphere"),
        ({"projection": "robinson", "scale": 2}, "unknown plot key(s) ['scale']: use ['projection', 'central_longitude', 'central_latitude', 'boundary_latitude']"),
        ("robinson", "plot 'robinson' must be a mapping such as {projection: robinson}"),
    ],
)  # fmt: skip
def test_a_plot_block_not_understood_is_named_with_the_choices(block, says):
    with pytest.raises(InputError) as info:
        map_view(block, "recipe 'x'")
    assert says in str(info.value)
    assert str(info.value).startswith("recipe 'x': ")


def test_every_projection_is_checked_and_makes_its_cartopy_projection():
    for name, spec in PROJECTIONS.items():
        view = map_view({"projection": name})
        assert view == MapView(name)
        assert type(view.crs()).__name__ == spec.crs
    assert map_view(None) is None
    assert map_view({"projection": "platecarree"}).plain
    assert not map_view({"projection": "platecarree", "central_longitude": 180}).plain
    ortho = map_view(
        {"projection": "orthographic", "central_longitude": 20, "central_latitude": 45}
    )
    assert ortho.crs().proj4_params["lat_0"] == 45 and ortho.crs().proj4_params["lon_0"] == 20


def test_the_config_names_the_projection_of_recipes_without_one(monkeypatch):
    import dask

    from pangeo_hpc.write.projections import default_view

    assert default_view() == MapView("platecarree")
    with dask.config.set({"pangeo-hpc.plot.projection": "mollweide"}):
        fig = draw_result(box_field((0, 10), (0, 10)), "t")
        assert type(fig.subfigs[0].axes[0].projection).__name__ == "Mollweide"
    with dask.config.set({"pangeo-hpc.plot.projection": "robinsn"}):
        with pytest.raises(InputError, match="config pangeo-hpc.plot: plot.projection 'robinsn'"):
            default_view()


BAD_RECIPE = """\
name: sst-robinsn
dataset: {variable: sea_surface_temperature, start: "2000-01", end: "2000-02"}
steps:
  - time_mean: {}
plot: {projection: robinsn}
"""


def test_a_recipe_with_an_unknown_projection_exits_2_naming_it_and_writes_nothing(
    demo_tree, tmp_path, capsys, monkeypatch, _state_cache_per_test
):
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    recipe = tmp_path / "sst-robinsn.yaml"
    recipe.write_text(BAD_RECIPE)
    before = sorted(tmp_path.rglob("*"))
    code = run.main([str(recipe), "--data", str(demo_tree), "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (out, err)
    assert len(lines) == 1, err
    assert "plot.projection 'robinsn' is not one of platecarree, robinson," in lines[0]
    assert sorted(tmp_path.rglob("*")) == before, "output left behind"
    states = Path(_state_cache_per_test)
    assert not states.exists() or not any(states.rglob("*")), "a cache entry was left"


GOOD_RECIPE = """\
name: sst-robinson
dataset: {variable: sea_surface_temperature, start: "2000-01", end: "2000-02"}
steps:
  - time_mean: {}
plot: {projection: robinson, central_longitude: 150}
"""


def test_a_recipe_run_draws_its_maps_in_the_recipe_projection(demo_tree, tmp_path, monkeypatch):
    """The run's own figure call is given the recipe's view (recorded), and writes it."""
    from pangeo_hpc.batch.pipeline import results

    seen = []
    real = results.plot_result
    monkeypatch.setattr(results, "plot_result", lambda *a, **k: seen.append(k) or real(*a, **k))
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    recipe = tmp_path / "sst-robinson.yaml"
    recipe.write_text(GOOD_RECIPE)
    argv = [str(recipe), "--data", str(demo_tree), "--out", str(tmp_path / "out"),
            "--workers", "1", "--no-progress"]  # fmt: skip
    assert run.main(argv) == 0
    assert [k.get("view") for k in seen] == [MapView("robinson", central_longitude=150.0)]
    assert (tmp_path / "out" / "plot.png").stat().st_size > 20_000
