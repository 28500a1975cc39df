"""The figure of any result: one panel per variable, chosen by shape, labelled from the data.

Small synthetic results in units other than K (m, mm/day, m s-1, K/decade); the drawn
Figure is inspected (titles, axis and colour-bar labels, what each mesh holds) and the file
written by plot_result is checked to be a PNG marked as this package's.
"""

from __future__ import annotations

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.collections import QuadMesh
from matplotlib.text import Text

from pangeo_hpc.write import figure_kinds
from pangeo_hpc.write.figures import draw_result, plot_result
from pangeo_hpc.write.marks import file_is_ours
from pangeo_hpc.write.result_shape import result_shape

LAT = np.arange(-90.0, 90.1, 30.0)  # 7 latitudes, both poles
LON = np.arange(0.0, 360.0, 45.0)  # 8 longitudes, 0..360
MONTHS = pd.date_range("2000-01-01", periods=24, freq="MS")


def field(values, dims, attrs, **coords) -> xr.DataArray:
    return xr.DataArray(np.asarray(values, dtype="f8"), dims=dims, coords=coords, attrs=attrs)


def grid(lat=LAT, lon=LON, *, seed=0, shift=0.0) -> np.ndarray:
    return np.random.default_rng(seed).random((lat.size, lon.size)) + shift


def texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def panel(fig, i: int = 0):
    """The data axes and the colour-bar axes of the ``i``-th variable's panel."""
    axes = fig.subfigs[i].axes
    data = [a for a in axes if a.get_label() != "<colorbar>" and a.get_visible()]
    bars = [a for a in axes if a.get_label() == "<colorbar>"]
    return data, bars


def mesh_of(ax) -> QuadMesh:
    (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
    return mesh


WIND = {"units": "m s-1", "long_name": "10 metre wind speed"}
PRECIP = {"units": "m", "long_name": "total precipitation"}
RATE = {"units": "mm/day", "long_name": "precipitation rate"}
TREND = {"units": "K/(10 year)", "long_name": "linear trend of 2 metre temperature per decade"}


@pytest.mark.parametrize(
    ("da", "kind"),
    [
        (field(1.5e-4, (), PRECIP), "scalar"),
        (field(np.ones(24), "time", RATE, time=MONTHS), "series"),
        (field(np.ones((1, 24)), ("member", "time"), RATE, time=MONTHS), "series"),  # squeezed
        (field(np.ones(12), "month", RATE, month=np.arange(1, 13)), "series"),
        (field(np.ones(5), "year", RATE, year=np.arange(2000, 2005)), "series"),
        (field(grid(), ("lat", "lon"), WIND, lat=LAT, lon=LON), "map"),
        # CF names by attribute, latitude north to south, longitude -180..180
        (
            field(
                grid(),
                ("y", "x"),
                WIND,
                y=("y", LAT[::-1], {"units": "degrees_north"}),
                x=("x", LON - 180, {"standard_name": "longitude"}),
            ),
            "map",
        ),
        (field(grid()[None], ("time", "lat", "lon"), WIND, lat=LAT, lon=LON), "map"),
        (field(np.ones((24, 7)), ("time", "latitude"), WIND, time=MONTHS, latitude=LAT), "hovmoeller"),
        (field(np.ones((12, 7)), ("month", "lat"), WIND, month=np.arange(1, 13), lat=LAT), "hovmoeller"),
        (field(np.ones(7), "lat", WIND, lat=LAT), "zonal"),
        (field(np.ones((4, 7, 8)), ("season", "lat", "lon"), TREND, season=list("ABCD"), lat=LAT, lon=LON), "maps"),
        (field(np.ones((13, 7, 8)), ("month", "lat", "lon"), TREND, month=np.arange(13), lat=LAT, lon=LON), "other"),
        (field(np.ones(8), "lon", WIND, lon=LON), "other"),
        (field(np.ones((2, 3, 7, 8)), ("a", "b", "lat", "lon"), WIND, lat=LAT, lon=LON), "other"),
        (xr.DataArray(np.array(["a", "b"]), dims="x"), "other"),
    ],
)  # fmt: skip
def test_kind_follows_the_dimensions_after_squeezing(da, kind):
    assert result_shape(da).kind == kind


def test_scalar_is_a_number_with_its_units_titled_by_long_name():
    fig = draw_result(xr.Dataset({"tp": field(1.23456789e-4, (), PRECIP)}), "Run title")
    (ax,), _ = panel(fig)
    assert ax.get_title() == "total precipitation"
    assert [t.get_text() for t in ax.texts] == ["0.000123457 m"]
    assert fig.get_suptitle() == "Run title"
    assert not any(" K" in t or "SST" in t for t in texts(fig))


def test_series_has_its_trend_per_decade_in_the_legend():
    years = (MONTHS - MONTHS[0]).days.values / 365.2425
    da = field(2.0 + 0.05 * years, "time", RATE, time=MONTHS)  # 0.5 mm/day per decade
    fig = draw_result(da.to_dataset(name="pr"), "t")
    (ax,), bars = panel(fig)
    assert not bars
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["precipitation rate", "least-squares trend: +0.5 mm/day per decade"]
    assert ax.get_ylabel() == "mm/day"
    assert ax.get_xlabel() == "time"
    assert ax.get_title() == "precipitation rate"
    line = ax.get_lines()[0]
    np.testing.assert_allclose(line.get_ydata(), da.values)


def test_series_along_months_has_month_names_and_no_trend():
    da = field(np.arange(12.0), "month", RATE, month=np.arange(1, 13))
    (ax,), _ = panel(draw_result(da.to_dataset(name="clim"), "t"))
    assert [t.get_text() for t in ax.get_xticklabels()][:3] == ["Jan", "Feb", "Mar"]
    assert len(ax.get_legend().get_texts()) == 1  # no trend along a position in the year


@pytest.mark.parametrize("west", [False, True], ids=["lon 0..360", "lon -180..180"])
def test_map_has_a_labelled_colour_bar_grey_nan_and_longitudes_in_order(west):
    values = grid(shift=0.1)  # positive: sequential colours from min to max
    values[2, 3] = np.nan
    lon = np.where(LON > 180, LON - 360, LON) if west else LON
    da = field(values, ("latitude", "longitude"), PRECIP, latitude=LAT, longitude=lon)
    fig = draw_result(xr.Dataset({"tp": da}), "t")
    (ax,), (bar,) = panel(fig)
    assert bar.get_ylabel() == "total precipitation (m)"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("longitude (°E)", "latitude (°N)")
    assert ax.get_title() == "total precipitation"
    mesh = mesh_of(ax)
    assert mesh.get_clim() == (np.nanmin(values), np.nanmax(values))
    assert mesh.get_cmap().name.startswith("viridis")
    assert ax.get_facecolor()[:3] == pytest.approx((0.75, 0.75, 0.75))
    # the mesh holds the values by increasing longitude in -180..180, latitude south to north
    order = np.argsort((LON + 180) % 360 - 180)  # 180 is -180
    shown = mesh.get_array().reshape(LAT.size, LON.size)
    np.testing.assert_array_equal(shown.filled(np.nan), values[:, order])
    assert shown.mask.sum() == 1
    centres = mesh.get_coordinates()[0, :, 0]  # cell edges: between sorted centres
    assert np.all(np.diff(centres) > 0) and centres[0] < -135 and centres[-1] > 135


def test_map_of_a_box_across_the_date_line_stays_together():
    lon = np.arange(150.0, 251.0, 10.0)
    da = field(grid(LAT, lon), ("lat", "lon"), WIND, lat=LAT, lon=lon - 360 * (lon > 180))
    (ax,), _ = panel(draw_result(xr.Dataset({"ws": da}), "t"))
    edges = mesh_of(ax).get_coordinates()[0, :, 0]
    np.testing.assert_allclose(edges, np.arange(145.0, 256.0, 10.0))  # not -180..180 apart


def test_differences_get_diverging_colours_centred_on_zero():
    trend = field(grid(shift=0.2), ("lat", "lon"), TREND, lat=LAT, lon=LON)  # all positive
    both = field(grid(shift=-0.3), ("lat", "lon"), WIND, lat=LAT, lon=LON)
    fig = draw_result(xr.Dataset({"trend": trend, "u": both}), "t")
    for i, da in enumerate((trend, both)):
        (ax,), (_bar,) = panel(fig, i)
        lo, hi = mesh_of(ax).get_clim()
        assert lo == -hi == -np.abs(da.values).max()
        assert mesh_of(ax).get_cmap().name.startswith("RdBu_r")
    label = panel(fig, 0)[1][0].get_ylabel()  # wrapped: the units stay on the figure
    assert (
        label.replace("\n", " ") == "linear trend of 2 metre temperature per decade (K/(10 year))"
    )


def test_hovmoeller_has_time_along_x_and_latitude_along_y():
    values = np.arange(24 * 7, dtype="f8").reshape(24, 7)
    da = field(values, ("time", "lat"), WIND, time=MONTHS, lat=LAT[::-1])
    fig = draw_result(xr.Dataset({"u": da}), "t")
    (ax,), (bar,) = panel(fig)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("time", "latitude (°N)")
    assert bar.get_ylabel() == "10 metre wind speed (m s-1)"
    shown = mesh_of(ax).get_array().reshape(7, 24)  # rows: latitudes, columns: times
    np.testing.assert_array_equal(shown, values[:, ::-1].T)
    x0, x1 = ax.get_xlim()
    assert mdates.num2date(x0).year == 1999 and mdates.num2date(x1).year == 2001
    assert ax.get_ylim()[0] < -80 and ax.get_ylim()[1] > 80


def test_hovmoeller_of_months_names_them():
    da = field(np.ones((12, 7)), ("month", "lat"), RATE, month=np.arange(1, 13), lat=LAT)
    (ax,), _ = panel(draw_result(xr.Dataset({"pr": da}), "t"))
    assert ax.get_xlabel() == "month"
    assert ax.get_xticklabels()[-1].get_text() == "Dec"


def test_zonal_profile_has_latitude_along_x():
    da = field(np.cos(np.deg2rad(LAT)), "lat", WIND, lat=LAT[::-1])
    (ax,), _ = panel(draw_result(xr.Dataset({"u": da}), "t"))
    assert ax.get_xlabel() == "latitude (°N)"
    assert ax.get_ylabel() == "10 metre wind speed (m s-1)"
    line = ax.get_lines()[0]
    np.testing.assert_allclose(line.get_xdata(), LAT)
    np.testing.assert_allclose(line.get_ydata(), np.cos(np.deg2rad(LAT)))


def test_small_multiples_share_one_colour_bar():
    seasons = ["DJF", "MAM", "JJA", "SON"]
    values = np.stack([grid(seed=i, shift=i) for i in range(4)])
    da = field(values, ("season", "lat", "lon"), RATE, season=seasons, lat=LAT, lon=LON)
    fig = draw_result(xr.Dataset({"pr": da}), "t")
    maps, bars = panel(fig)
    assert len(maps) == 4 and len(bars) == 1
    assert [a.get_title() for a in maps] == [f"season {s}" for s in seasons]
    assert {mesh_of(a).get_clim() for a in maps} == {(values.min(), values.max())}
    assert bars[0].get_ylabel() == "precipitation rate (mm/day)"
    assert fig.subfigs[0].get_suptitle() == "precipitation rate"


def test_twelve_months_are_twelve_maps_in_four_columns():
    da = field(np.ones((12, 7, 8)), ("month", "lat", "lon"), TREND, month=np.arange(1, 13), lat=LAT, lon=LON)  # fmt: skip
    maps, _ = panel(draw_result(xr.Dataset({"t": da}), "t"))
    assert [a.get_title() for a in maps][::4] == ["month Jan", "month May", "month Sep"]
    assert len({a.get_position().x0 for a in maps}) == 4


@pytest.mark.parametrize(
    ("da", "says"),
    [
        (field(np.ones((2, 3, 4)), ("a", "b", "c"), WIND), "no figure for dimensions (a: 2, b: 3, c: 4)"),
        (xr.DataArray(np.array(["x", "y"]), dims="x", name="names"), "not numbers"),
        (field(np.full((7, 8), np.nan), ("lat", "lon"), WIND, lat=LAT, lon=LON), "every value is missing"),
    ],
)  # fmt: skip
def test_what_cannot_be_drawn_is_said_not_raised(da, says):
    fig = draw_result(xr.Dataset({"v": da}), "t")
    assert any(says in t.replace("\n", " ") for t in texts(fig)), texts(fig)


def test_a_panel_that_fails_says_so_and_the_others_are_drawn(monkeypatch):
    def broken(sub, shape):
        sub.subplots()
        raise ValueError("boom")

    monkeypatch.setitem(figure_kinds.DRAW, "map", broken)
    ds = xr.Dataset(
        {"m": field(grid(), ("lat", "lon"), WIND, lat=LAT, lon=LON), "s": field(3.0, (), RATE)}
    )
    fig = draw_result(ds, "t")
    assert any("drawing this map failed (ValueError: boom)" in t for t in texts(fig))
    assert "3 mm/day" in texts(fig)


def test_plot_result_writes_a_marked_png(tmp_path):
    ds = xr.Dataset(
        {
            "tp": field(1e-4, (), PRECIP),
            "series": field(np.arange(24.0), "time", RATE, time=MONTHS),
            "map": field(grid(), ("lat", "lon"), WIND, lat=LAT, lon=LON),
        }
    )
    path = tmp_path / "plot.png"
    plot_result(ds, path, "precipitation")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert file_is_ours(path)
    plot_result(ds["map"], tmp_path / "one.png", "a DataArray alone")  # type: ignore[arg-type]
    assert (tmp_path / "one.png").stat().st_size > 1000
