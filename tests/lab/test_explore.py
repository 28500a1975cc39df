"""pangeo_hpc.explore: what the view it returns is made of (a map rasterised by Datashader,
a slider per other dimension, the hover's value with units, the series at a tapped cell),
on a lazy 0.25-degree hourly field as ERA5's, and on a run's output folder."""

from __future__ import annotations

import dask.array as dsa
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from pangeo_hpc.errors import InputError


def _era5_like(hours: int = 24) -> xr.DataArray:
    """A lazy 0.25-degree hourly field (1440 x 721 x ``hours``), one chunk per hour, with
    ERA5's orientation: latitude from 90 down to -90, longitude 0..359.75."""
    lat = np.linspace(90.0, -90.0, 721)
    lon = np.arange(1440) * 0.25
    time = pd.date_range("2020-01-01", periods=hours, freq="h")
    # every cell and hour its own value: 1e4 * hour + 10 * latitude + longitude / 100
    field = (
        1e4 * dsa.arange(hours, chunks=1)[:, None, None]
        + 10.0 * dsa.from_array(lat, chunks=-1)[None, :, None]
        + dsa.from_array(lon, chunks=-1)[None, None, :] / 100.0
    ).astype("f4")
    return xr.DataArray(
        field,
        coords={"time": time, "latitude": ("latitude", lat, {"units": "degrees_north"}),
                "longitude": ("longitude", lon, {"units": "degrees_east"})},
        dims=("time", "latitude", "longitude"),
        name="t2m",
        attrs={"units": "K", "long_name": "2 metre temperature"},
    )  # fmt: skip


@pytest.fixture(scope="module")
def view():
    import pangeo_hpc

    da = _era5_like()
    return da, pangeo_hpc.explore(da)


def test_the_map_is_rasterised_per_view_with_a_time_slider(view):
    import holoviews as hv
    import panel as pn
    from bokeh.models import GlyphRenderer, HoverTool, Image

    da, layout = view
    assert isinstance(layout, hv.Layout)
    the_map, series = layout.values()
    assert isinstance(series, hv.DynamicMap) and not series.kdims  # driven by the tap
    assert isinstance(the_map, hv.DynamicMap) and [d.name for d in the_map.kdims] == ["time"]
    # the slider panel makes of the time dimension: every hour, in order
    sliders = pn.panel(layout).select(pn.widgets.DiscreteSlider)
    assert len(sliders) == 1 and sliders[0].name == "time"
    assert list(sliders[0].values) == list(da.time.values)

    figure = hv.render(layout)
    images = [r for r in figure.select({"type": GlyphRenderer}) if isinstance(r.glyph, Image)]
    assert len(images) == 1
    shown = images[0].data_source.data["image"][0]
    # Datashader's screen of pixels, not the 721 x 1440 field
    assert shown.size <= 1000 * 1000 and shown.shape != (721, 1440), shown.shape
    tooltips = [t for h in figure.select({"type": HoverTool}) for t in (h.tooltips or [])]
    assert ("t2m", "@image{%.6g} K") in tooltips, tooltips
    assert ("longitude", "$x{0.00} °E") in tooltips and ("latitude", "$y{0.00} °N") in tooltips


def _streams(dmap):
    """The streams of ``dmap`` and of the DynamicMaps it is made from (the rasterising
    operation's RangeXY: what the browser's pan and zoom send)."""
    import holoviews as hv

    yield from dmap.streams
    for source in getattr(dmap.callback, "inputs", []):
        if isinstance(source, hv.DynamicMap):
            yield from _streams(source)


def test_a_zoomed_view_shows_the_fields_own_values(view):
    """Zoomed in to 4 x 4 cells (as the browser's RangeXY stream says after a zoom), the
    rasterised image holds the cells' own values at the hour the slider is at: what the
    hover reads (``@image``)."""
    import holoviews as hv

    da, layout = view
    the_map = layout.values()[0]
    ranges = [s for s in _streams(the_map) if isinstance(s, hv.streams.RangeXY)]
    assert ranges, "no RangeXY stream: the map is not rasterised per view"
    for stream in ranges:  # the edges of the cells 10.0-10.75 E, 44.0-44.75 N
        stream.event(x_range=(9.875, 10.875), y_range=(43.875, 44.875))
    image = the_map[da.time.values[5]].get(0)
    got = image.data
    assert dict(got.sizes) == {"longitude": 4, "latitude": 4}
    np.testing.assert_array_equal(got.longitude, [10.0, 10.25, 10.5, 10.75])
    np.testing.assert_array_equal(got.latitude, [44.0, 44.25, 44.5, 44.75])
    want = 1e4 * 5 + 10.0 * got.latitude + got.longitude / 100.0  # the field's rule, hour 5
    np.testing.assert_allclose(got.t2m.transpose("latitude", "longitude"), want, rtol=1e-7)


def test_a_tap_draws_the_series_of_that_cell(view):
    da, layout = view
    series = layout.values()[1]
    tap = series.streams[0]
    for x, y in [(10.3, 45.1), (359.9, -89.9), (180.0, 0.12)]:
        tap.event(x=x, y=y)
        curve = series[()]  # the callback, with the stream as the tap left it
        # independently: the nearest cell by index
        j = int(np.argmin(np.abs(da.longitude.values - x)))
        i = int(np.argmin(np.abs(da.latitude.values - y)))
        want = da.isel(latitude=i, longitude=j).values
        np.testing.assert_array_equal(curve.dimension_values(1), want)
        np.testing.assert_array_equal(curve.dimension_values(0), da.time.values)
        where = f"{da.latitude.values[i]:.2f}°N, {da.longitude.values[j]:.2f}°E"
        assert where in curve.opts.get().kwargs["title"]


def test_a_run_folder_is_explored_from_its_result_nc(tmp_path):
    import holoviews as hv

    import pangeo_hpc

    lat, lon = np.arange(-80.0, 81.0, 10.0), np.arange(0.0, 360.0, 10.0)
    ds = xr.Dataset(
        {
            "trend": (("lat", "lon"), np.outer(lat, np.ones(lon.size)), {"units": "K/(10 year)"}),
            "series": ("time", np.arange(4.0), {"units": "K"}),
            "mean": ((), 1.0, {"units": "K"}),
        },
        coords={"lat": ("lat", lat, {"units": "degrees_north"}),
                "lon": ("lon", lon, {"units": "degrees_east"}),
                "time": pd.date_range("2000-01-01", periods=4, freq="MS")},
    )  # fmt: skip
    ds.to_netcdf(tmp_path / "result.nc")
    layout = pangeo_hpc.explore(tmp_path)
    kinds = [type(v).__name__ for v in layout.values()]
    assert kinds == ["DynamicMap", "Curve"], kinds  # the map, the series; the scalar: no view
    figure = hv.render(layout)
    from bokeh.models import HoverTool

    tooltips = [t for h in figure.select({"type": HoverTool}) for t in (h.tooltips or [])]
    assert ("trend", "@image{%.6g} K per decade") in tooltips, tooltips


def test_bad_input_names_the_value_and_the_fix(tmp_path):
    import pangeo_hpc

    with pytest.raises(InputError, match=r"explore\(result='.*nothing-here'\): no result.nc or "
                       r"result.zarr there: give a run's output folder"):  # fmt: skip
        pangeo_hpc.explore(tmp_path / "nothing-here")
    with pytest.raises(InputError, match=r"explore\(result=3\): give a DataArray"):
        pangeo_hpc.explore(3)
    da = _era5_like(2)
    with pytest.raises(InputError, match=r"explore\(variables=\['sst'\]\): not in the result: "
                       "choose from t2m"):  # fmt: skip
        pangeo_hpc.explore(da, variables=["sst"])
    with pytest.raises(InputError, match="explore: nothing to show in x"):
        pangeo_hpc.explore(xr.DataArray(1.0, name="x"))
