"""An interactive view of a result: :func:`explore`, for notebooks.

The figures a run writes (:mod:`pangeo_hpc.write.figures`) are static; in a notebook the
same results are better looked at the way the FSx + Dask ERA5 study did, with hvplot,
HoloViews and Datashader: each map is **rasterised per view** (``rasterize=True``: Datashader
regrids the field to the plot's pixels on every pan and zoom, so a 0.25-degree field of
1440 x 721 cells and thousands of hours sends the browser one screen of pixels, never the
field), a **slider** steps through every other dimension (time, month, a lead), the
**hover** shows the value under the pointer with its units, and a **tap** on the map
draws the series at that cell beside it. Coastlines are the package's own
(:func:`pangeo_hpc.write.coastlines.joined_coastlines`), never downloaded; colours and
limits are the figure's (:func:`pangeo_hpc.write.figure_kinds.colour_scale`).

HoloViews, Bokeh, Panel and Datashader are imported when :func:`explore` is called (the
``lab`` extra), never with :mod:`pangeo_hpc`; their JavaScript goes into the notebook from
the installed packages (:func:`inline_javascript`), not from a CDN. No GeoViews: the
maps are in plate carree degrees, as the figures are, and cartopy would fetch Natural Earth
at run time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.extras import require
from pangeo_hpc.recipes.grid import horizontal_names, time_name
from pangeo_hpc.write.result_shape import result_shape

if TYPE_CHECKING:
    import holoviews as hv

__all__ = ["explore", "inline_javascript"]

#: pixels across a map (its height follows the field's aspect)
MAP_WIDTH = 720
#: pixels of the linked series
SERIES_SIZE = (720, 220)
#: the hover's number format (printf): six significant digits
NUMBER = "%.6g"


def _open_result(result: xr.DataArray | xr.Dataset | str | os.PathLike[str]) -> xr.Dataset:
    """``result`` as a Dataset: a DataArray (one variable), a Dataset, or a run's output
    folder (``result.nc`` or ``result.zarr`` in it) or such a file.

    Raises
    ------
    InputError
        For anything else, naming the value and what to give.
    """
    if isinstance(result, xr.DataArray):
        return result.to_dataset(name=result.name or "result")
    if isinstance(result, xr.Dataset):
        return result
    if not isinstance(result, str | os.PathLike):
        raise InputError(
            f"explore(result={result!r}): give a DataArray, a Dataset or a run's output "
            "folder (the --out of `python -m pangeo_hpc.run RECIPE`)",
            param="result",
        )
    path = Path(result).expanduser()
    for candidate in (path / "result.nc", path / "result.zarr", path):
        if candidate.suffix == ".nc" and candidate.is_file():
            return xr.open_dataset(candidate)
        if candidate.suffix == ".zarr" and candidate.is_dir():
            return xr.open_zarr(candidate)
    raise InputError(
        f"explore(result={str(path)!r}): no result.nc or result.zarr there: give a run's "
        "output folder (the --out of `python -m pangeo_hpc.run RECIPE`) or a DataArray",
        param="result",
    )


def _map_axes(da: xr.DataArray) -> tuple[str, str] | None:
    """Latitude and longitude of ``da`` when both are 1-D dimension coordinates of it."""
    try:
        lat, lon = horizontal_names(da)
    except InputError:
        return None
    ok = all(da[n].ndim == 1 and da[n].dims[0] in da.dims and da.sizes[n] > 1 for n in (lat, lon))
    return (lat, lon) if ok else None


def _along(da: xr.DataArray, others: list[str]) -> str:
    """The dimension a linked series runs along: the time axis, else the first other."""
    try:
        t = time_name(da)
    except InputError:
        t = None
    return t if t in others else others[0]


def _coast(east: bool, lon: str, lat: str) -> hv.Path:
    import holoviews as hv

    from pangeo_hpc.write.coastlines import joined_coastlines

    x, y = joined_coastlines(east)
    breaks = np.flatnonzero(np.isnan(x))
    lines = [
        np.column_stack([px, py])[1:] if i else np.column_stack([px, py])
        for i, (px, py) in enumerate(zip(np.split(x, breaks), np.split(y, breaks), strict=True))
    ]
    return hv.Path([line for line in lines if len(line) > 1], kdims=[lon, lat]).opts(
        color="black", line_width=0.6, tools=[]
    )


def _map(da: xr.DataArray, lat: str, lon: str) -> list[Any]:
    """The rasterised map of ``da`` (a slider per other dimension), with coastlines, and
    the series at a tapped cell when there is another dimension."""
    import holoviews as hv
    import hvplot.xarray  # noqa: F401  (registers .hvplot)

    from pangeo_hpc.write.figure_kinds import colour_scale, long_name, units
    from pangeo_hpc.write.panel_text import nice_units

    da = da.sortby(lat)  # hvplot's image wants increasing coordinates
    others = [str(d) for d in da.dims if d not in (da[lat].dims[0], da[lon].dims[0])]
    name, unit = str(da.name), nice_units(units(da))
    sample = da.isel({d: 0 for d in others}) if others else da
    cmap, lo, hi, _ = colour_scale(da, np.asarray(sample.values, dtype="f8"))
    value = f"@image{{{NUMBER}}}" + (f" {unit}" if unit else "")
    span = {n: float(np.ptp(da[n].values)) for n in (lat, lon)}
    height = int(MAP_WIDTH * span[lat] / max(span[lon], 1e-9))
    image = da.hvplot.image(
        x=lon,
        y=lat,
        groupby=others or None,
        rasterize=True,  # datashader: one screen of pixels per view, whatever the field
        dynamic=True,
        cmap=cmap,
        clim=(lo, hi),
        clabel=unit or None,
        title=long_name(da),
        frame_width=MAP_WIDTH,
        frame_height=max(120, min(height, 2 * MAP_WIDTH)),
    ).opts(
        hover_tooltips=[("longitude", "$x{0.00} °E"), ("latitude", "$y{0.00} °N"), (name, value)],
        hover_formatters={"@image": "printf"},
        tools=["hover", "tap"],
    )
    east = bool(da[lon].max() > 180)
    views: list[Any] = [image * _coast(east, lon, lat)]
    if not others:
        return views
    along = _along(da, others)
    x0, y0 = float(da[lon].mean()), float(da[lat].mean())
    tap = hv.streams.Tap(source=image, x=x0, y=y0)

    def series(x: float | None, y: float | None) -> hv.Curve:
        x, y = (x0 if x is None else x), (y0 if y is None else y)
        point = da.sel({lon: x, lat: y}, method="nearest")
        point = point.isel({d: 0 for d in others if d != along})
        where = f"{float(point[lat]):.2f}°N, {float(point[lon]):.2f}°E"
        curve = hv.Curve((point[along].values, np.asarray(point.values)), along, name)
        return curve.opts(
            title=f"{name} at {where} (tap the map for another cell)",
            ylabel=f"{name} ({unit})" if unit else name,
            hover_tooltips=[(along, f"@{{{along}}}"), (name, f"@{{{name}}}{{{NUMBER}}} {unit}")],
            hover_formatters={f"@{{{name}}}": "printf"},
            tools=["hover"],
            frame_width=SERIES_SIZE[0],
            frame_height=SERIES_SIZE[1],
            framewise=True,
        )

    views.append(hv.DynamicMap(series, streams=[tap]))
    return views


def _series(da: xr.DataArray, along: str) -> hv.Curve:
    import hvplot.xarray  # noqa: F401

    from pangeo_hpc.write.figure_kinds import long_name, units
    from pangeo_hpc.write.panel_text import nice_units

    name, unit = str(da.name), nice_units(units(da))
    return da.hvplot.line(
        x=along,
        title=long_name(da),
        ylabel=f"{name} ({unit})" if unit else name,
        frame_width=SERIES_SIZE[0],
        frame_height=SERIES_SIZE[1],
    ).opts(  # hvplot's own hover_formatters is deprecated; HoloViews' option is not
        hover_tooltips=[(along, f"@{{{along}}}"), (name, f"@{{{name}}}{{{NUMBER}}} {unit}")],
        hover_formatters={f"@{{{name}}}": "printf"},
        tools=["hover"],
    )


def inline_javascript() -> None:
    """Have Bokeh's and Panel's JavaScript put into the notebook from the installed packages.

    By default HoloViews, hvplot and Panel make the notebook load them from their CDNs, and
    a compute node or an offline laptop shows an empty output ("Bokeh or Panel library is
    missing"). This sets Panel's ``config.inline`` and the class default of HoloViews'
    ``extension`` (which hvplot's ``import hvplot.xarray`` calls), so every later call
    inlines them, and has Panel inline the stylesheets of every object it renders.
    :func:`explore` calls it; call it before ``import hvplot.xarray``.

    Raises
    ------
    MissingExtraError
        Without the ``lab`` extra (HoloViews, hvplot, Panel).

    Examples
    --------
    >>> from pangeo_hpc.lab.explore import inline_javascript
    >>> inline_javascript()  # doctest: +SKIP
    >>> import hvplot.xarray  # doctest: +SKIP
    """
    require("lab", "inline_javascript()")
    import holoviews as hv
    import panel as pn

    pn.config.inline = True
    hv.extension.inline = True  # the class default: hvplot's own extension call inlines too
    # Panel inlines the stylesheets (its theme, loading.css) of what it displays itself, not
    # of what HoloViews displays through it (hvplot's figures): a hook on every render does
    from panel.viewable import Viewable

    if _inline_stylesheets not in Viewable._preprocessing_hooks:
        Viewable._preprocessing_hooks.append(_inline_stylesheets)


def _inline_stylesheets(viewable: Any, root: Any) -> None:
    """Panel's own inline treatment of a displayed object's stylesheets (the files of the
    installed Panel instead of their CDN addresses), for every model of ``root``."""
    from bokeh.models import UIElement
    from panel.io.notebook import patch_inline_stylesheets

    for model in root.select({"type": UIElement}):
        patch_inline_stylesheets(model)


def explore(
    result: xr.DataArray | xr.Dataset | str | os.PathLike[str],
    *,
    variables: list[str] | None = None,
) -> hv.Layout:
    """An interactive view of ``result``: rasterised maps, sliders, hover values, series.

    Parameters
    ----------
    result : DataArray, Dataset or path
        What to look at: data in memory or lazy (dask), or a run's output folder holding
        ``result.nc`` (or ``result.zarr``).
    variables : list of str, optional
        The variables to show (default: every map and series of ``result``).

    Returns
    -------
    holoviews.Layout
        One column: for each variable on a latitude-longitude grid a map rasterised with
        Datashader per view (a slider for each other dimension: time, month, ...; the hover
        shows longitude, latitude and the value with its units), and, when it has another
        dimension, the series at the cell last tapped on the map; for each series
        (:func:`~pangeo_hpc.write.result_shape.result_shape` kind ``series``) its line.
        Displayed by a notebook; ``panel.panel(view).servable()`` or ``hvplot.save``
        serve or save it.

    Raises
    ------
    InputError
        For a path without a result, an unknown variable, or nothing to show.
    MissingExtraError
        Without the ``lab`` extra (hvplot, Datashader, ...).

    Examples
    --------
    >>> view = pangeo_hpc.explore("results/era5-sst-trend")  # doctest: +SKIP
    >>> view  # in a notebook: pan, zoom, hover, tap  # doctest: +SKIP
    """
    ds = _open_result(result)
    names = [str(n) for n in ds.data_vars] if variables is None else list(variables)
    unknown = [n for n in names if n not in ds.data_vars]
    if unknown:
        raise InputError(
            f"explore(variables={unknown!r}): not in the result: choose from "
            f"{', '.join(map(str, ds.data_vars))}",
            param="variables",
        )
    inline_javascript()
    import holoviews as hv

    hv.extension("bokeh", logo=False, inline=True)
    views: list[Any] = []
    for name in names:
        da = ds[name].squeeze(drop=True)
        if not np.issubdtype(da.dtype, np.number):
            continue
        axes = _map_axes(da)
        if axes is not None:
            views.extend(_map(da, *axes))
            continue
        shape = result_shape(da)
        if shape.kind == "series" and shape.time is not None:
            views.append(_series(shape.data, shape.time))
    if not views:
        raise InputError(
            f"explore: nothing to show in {', '.join(names)} (neither a map on latitude and "
            "longitude nor a series): give a result with one",
            param="result",
        )
    return hv.Layout(views).cols(1).opts(shared_axes=False)
