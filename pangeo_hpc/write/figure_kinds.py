"""One panel per kind of result (:mod:`pangeo_hpc.write.result_shape`), drawn into a
matplotlib (sub)figure with the object API.

Every panel is given its short title (:func:`pangeo_hpc.write.panel_text.short_title`) and
takes its units from ``units``, once, as people write them (``K per decade``, ``m s⁻¹``):
never from the recipe. Time axes are dates labelled ``time`` (a DJF series by its winters,
``2000/01``); no axis shows an offset (``+2.916e2``). Maps put longitudes in whichever
convention keeps the data together (-180..180, or 0..360 for a box across the date line),
latitude in increasing order, coastlines (:mod:`pangeo_hpc.write.coastlines`) over the data
and grey where values are missing; or in a projection of
:mod:`pangeo_hpc.write.projections` (a recipe's ``plot: {projection: robinson}``). Fields
get a sequential colour map, differences (an anomaly, a trend, a bias: by name or units) a
diverging one centred on zero; limits are the :data:`ROBUST` percentiles of the data, the
colour bar extended where values pass them.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable

import numpy as np
import xarray as xr
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.collections import QuadMesh
from matplotlib.colors import Colormap
from matplotlib.figure import FigureBase
from matplotlib.image import AxesImage

from pangeo_hpc.recipes.grid import time_name
from pangeo_hpc.write.coastlines import draw_coastlines
from pangeo_hpc.write.panel_text import nice_units, winters
from pangeo_hpc.write.projected_cells import evenly_spaced
from pangeo_hpc.write.projections import MapView, draw_projected
from pangeo_hpc.write.result_shape import (
    CYCLIC,
    MAX_PANELS,
    Shape,
    labels,
    per_decade,
    trend_per_decade,
    years_along,
)

#: grey for missing values (land, sea ice, outside a region)
MISSING = "0.75"
#: words of a name or long name that make a result a difference from something
_DIFFERENCE = re.compile(r"anomal|trend|differen|change|tendenc|departure|bias", re.IGNORECASE)
#: units of a rate per time span (``K/(10 year)``, ``mm/decade``)
_RATE = re.compile(r"/\s*\(?\s*\d*\s*(year|decade|century)", re.IGNORECASE)
#: inches of height per panel of each kind (``maps``: of one map across the figure)
HEIGHTS = {"scalar": 1.2, "series": 3.0, "map": 4.6, "hovmoeller": 3.8, "zonal": 3.0}
HEIGHTS |= {"maps": 4.5, "other": 1.4}
LAT_LABEL, LON_LABEL = "latitude (°N)", "longitude (°E)"
#: percentiles of the data that bound a colour scale (a few extreme cells do not wash
#: out the rest)
ROBUST = (2.0, 98.0)
#: characters per line of a panel's text (a "not plotted" reason)
TEXT_WIDTH = 90


def long_name(da: xr.DataArray) -> str:
    """The variable's ``long_name``, else its name.

    Parameters
    ----------
    da : xr.DataArray
        The result variable.

    Returns
    -------
    str
        The name.

    Examples
    --------
    >>> import xarray as xr
    >>> long_name(xr.DataArray(1.0, name="tas", attrs={"long_name": "air temperature"}))
    'air temperature'
    >>> long_name(xr.DataArray(1.0, name="tas"))
    'tas'
    """
    return str(da.attrs.get("long_name") or da.name or "result")


def units(da: xr.DataArray) -> str:
    """The variable's ``units`` as written in the file.

    Parameters
    ----------
    da : xr.DataArray
        The result variable.

    Returns
    -------
    str
        The units, ``""`` without any.

    Examples
    --------
    >>> import xarray as xr
    >>> units(xr.DataArray(1.0, attrs={"units": "K"})), units(xr.DataArray(1.0))
    ('K', '')
    """
    return str(da.attrs.get("units", "") or "").strip()


def _unit_label(da: xr.DataArray) -> str:
    """The units for an axis or a colour bar, once and unwrapped (``value`` without)."""
    return nice_units(units(da)) or "value"


def is_difference(da: xr.DataArray) -> bool:
    """An anomaly, a trend, a bias or a change, by its name, long name or units.

    Parameters
    ----------
    da : xr.DataArray
        The result variable.

    Returns
    -------
    bool
        Whether it is a difference (drawn on a scale centred on zero).

    Examples
    --------
    >>> import xarray as xr
    >>> is_difference(xr.DataArray(0.2, name="tas_trend", attrs={"units": "K/(10 year)"}))
    True
    >>> is_difference(xr.DataArray(288.0, name="tas", attrs={"units": "K"}))
    False
    """
    text = " ".join(str(s) for s in (da.name, da.attrs.get("long_name"), da.attrs.get("units")))
    return bool(_DIFFERENCE.search(text) or _RATE.search(units(da)))


def colours(da: xr.DataArray, values: np.ndarray) -> dict:
    """``cmap``, ``vmin`` and ``vmax`` from the :data:`ROBUST` percentiles of ``values``
    (viridis; a difference: RdBu_r centred on zero), and ``extend`` for the colour bar.

    Parameters
    ----------
    da : xr.DataArray
        The result variable.
    values : np.ndarray
        Its values as drawn.

    Returns
    -------
    dict
        Keyword arguments of :func:`cells` and the colour bar.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> da = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("lat", "lon"), name="tas")
    >>> style = colours(da, da.values)
    >>> style["cmap"].name, style["vmin"], style["vmax"], style["extend"]
    ('viridis', 0.1, 4.9, 'both')
    """
    cmap, lo, hi, extend = colour_scale(da, values)
    bad: Colormap = colormaps[cmap].with_extremes(bad=MISSING)
    return {"cmap": bad, "vmin": lo, "vmax": hi, "extend": extend}


def colour_scale(da: xr.DataArray, values: np.ndarray) -> tuple[str, float, float, str]:
    """The colour map's name, the limits and the colour bar's ``extend`` of :func:`colours`:
    the same scale in the figures, ``report.html`` and :func:`pangeo_hpc.lab.explore.explore`.

    Parameters
    ----------
    da : xr.DataArray
        The result variable.
    values : np.ndarray
        Its values as drawn.

    Returns
    -------
    (str, float, float, str)
        ``cmap``, ``vmin``, ``vmax`` and ``extend``.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> da = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("lat", "lon"), name="tas")
    >>> colour_scale(da, da.values)
    ('viridis', 0.1, 4.9, 'both')
    """
    finite = values[np.isfinite(values)]
    lo, hi = np.percentile(finite, ROBUST) if finite.size else (0.0, 1.0)
    lo, hi = float(lo), float(hi)
    if is_difference(da):
        lim = max(abs(lo), abs(hi)) or 1.0
        cmap, lo, hi = "RdBu_r", -lim, lim
    else:
        cmap = "viridis"
        if lo == hi:
            lo, hi = lo - (abs(lo) * 0.01 or 0.5), hi + (abs(hi) * 0.01 or 0.5)
    below = finite.size and finite.min() < lo
    above = finite.size and finite.max() > hi
    extend = {(1, 1): "both", (1, 0): "min", (0, 1): "max"}.get((bool(below), bool(above)))
    return cmap, lo, hi, extend or "neither"


def _colour_bar(
    sub: FigureBase, mesh, ax, da: xr.DataArray, style: dict, shrink: float, where: str = "right"
):
    if where == "bottom":  # under a round map: as wide as it, thin
        shrink, aspect = 0.45, 25
    else:
        aspect = 20  # matplotlib's own
    bar = sub.colorbar(
        mesh, ax=ax, label=_unit_label(da), shrink=shrink, aspect=aspect, extend=style["extend"],
        location=where,
    )  # fmt: skip
    bar.formatter.set_useOffset(False)
    return bar


def _bar_side(view: MapView | None) -> str:
    """Beside a map, or under a round one (a globe, a polar cap), which it keeps centred."""
    return "bottom" if view is not None and not view.plain and view.is_round else "right"


def _mesh_style(style: dict) -> dict:
    return {k: v for k, v in style.items() if k != "extend"}


def _text(sub: FigureBase, heading: str, body: str, *, size: float = 11) -> Axes:
    ax = sub.subplots()
    ax.set_axis_off()
    ax.set_title(heading)
    ax.text(0.5, 0.5, textwrap.fill(body, TEXT_WIDTH), ha="center", va="center", fontsize=size)
    return ax


def _grid(shape: Shape, data: xr.DataArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Longitudes, latitudes and values (latitude by longitude) ready for :func:`cells`."""
    lat, lon = shape.lat, shape.lon
    assert lat is not None and lon is not None
    if data[lat].ndim == 2:  # curvilinear: each row's longitudes without a jump at the seam
        data = data.transpose(*data[lat].dims)
        x = np.unwrap(np.asarray(data[lon].values, dtype="f8"), period=360.0, axis=-1)
        return x, np.asarray(data[lat].values), np.asarray(data.values)
    data = data.transpose(data[lat].dims[0], data[lon].dims[0])
    lons = np.asarray(data[lon].values, dtype="f8")
    west = (lons + 180) % 360 - 180  # -180..180
    east = lons % 360  # 0..360: keeps a box across the date line together
    x = east if np.ptp(east) < np.ptp(west) else west
    y = np.asarray(data[lat].values, dtype="f8")
    ix, iy = np.argsort(x, kind="stable"), np.argsort(y, kind="stable")
    return x[ix], y[iy], np.asarray(data.values, dtype="f8")[np.ix_(iy, ix)]


def cells(
    ax: Axes, x: np.ndarray, y: np.ndarray, values: np.ndarray, style: dict
) -> AxesImage | QuadMesh:
    """Draw ``values`` (``y`` by ``x``, NaN missing) as cells centred on ``x`` and ``y``.

    On evenly spaced 1-d axes as one image (:func:`evenly_spaced`), else as a mesh
    (``pcolormesh``, ``shading="nearest"``): the same cells, and an image draws a 1-degree
    globe in milliseconds where a mesh of its 65,000 cells takes a tenth of a second. Either
    is one image in an SVG or a PDF (the mesh rasterised): as vector paths, four 1-degree
    maps made an SVG of 51 MB in 21 s.

    Parameters
    ----------
    ax : Axes
        Plain (not projected) axes.
    x, y : np.ndarray
        Cell centres, increasing: 1-d, or 2-d as ``values`` (a mesh).
    values : np.ndarray
        The values, ``y`` by ``x``.
    style : dict
        ``cmap``, ``vmin``, ``vmax``.

    Returns
    -------
    AxesImage or QuadMesh
        The drawn cells, for the colour bar.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> _, ax = plt.subplots()
    >>> drawn = cells(ax, np.array([0.0, 1, 2]), np.array([0.0, 1]), np.ones((2, 3)), {})
    >>> type(drawn).__name__, tuple(float(e) for e in drawn.get_extent())
    ('AxesImage', (-0.5, 2.5, -0.5, 1.5))
    """
    masked = np.ma.masked_invalid(values)
    if evenly_spaced(x) and evenly_spaced(y):
        dx, dy = (x[-1] - x[0]) / (x.size - 1), (y[-1] - y[0]) / (y.size - 1)
        edges = (x[0] - dx / 2, x[-1] + dx / 2, y[0] - dy / 2, y[-1] + dy / 2)
        return ax.imshow(
            masked, extent=edges, origin="lower", interpolation="nearest", aspect="auto", **style
        )
    return ax.pcolormesh(x, y, masked, shading="nearest", rasterized=True, **style)


def _map_axes(ax: Axes, shape: Shape, data: xr.DataArray, style: dict, view: MapView | None):
    x, y, values = _grid(shape, data)
    ax.set_facecolor(MISSING)
    if view is not None and not view.plain:  # a GeoAxes of view.crs()
        return draw_projected(ax, x, y, values, view, style)
    mesh = cells(ax, x, y, values, style)
    if x.ndim == 1:
        draw_coastlines(ax, east=bool(x.max() > 180))
    ax.set_xlabel(LON_LABEL)
    ax.set_ylabel(LAT_LABEL)
    if shape.data[shape.lat].ndim == 1:
        ax.set_aspect("equal")
    return mesh


def _map_kw(shape: Shape, view: MapView | None) -> dict:
    """``subplot_kw`` of the axes of a map in ``view``: a cartopy projection, centred on
    the date line for data across it (:func:`_grid`'s 0..360)."""
    if view is None or view.plain:
        return {}
    x, _, _ = _grid(shape, shape.data.isel({shape.lead: 0}) if shape.lead else shape.data)
    return {"projection": view.crs(east=bool(np.nanmax(x) > 180))}


def _draw_scalar(sub: FigureBase, shape: Shape, heading: str) -> None:
    value = float(shape.data.values)
    body = f"{value:.6g} {nice_units(units(shape.data))}".strip()
    ax = _text(sub, heading, body, size=18)
    ax.texts[0].set_gid("value")


def _along(da: xr.DataArray, dim: str) -> tuple[np.ndarray, list[str] | None]:
    """Positions along a time-like axis and, for a position in the year or a winter, tick
    labels."""
    years = years_along(da, dim)
    values = np.asarray(da[dim].values) if dim in da.coords else np.arange(da.sizes[dim])
    numeric = np.issubdtype(values.dtype, np.number)
    if dim in CYCLIC:  # months by name, seasons in their order
        return (values if numeric else np.arange(values.size)), labels(da, dim)
    if np.issubdtype(values.dtype, np.datetime64):
        return values, winters(values)
    if numeric:
        return values, None
    if years is not None:  # cftime dates: decimal years from the first one's year
        return years + da[dim].values[0].year, None
    return np.arange(values.size), labels(da, dim)


def _time_label(da: xr.DataArray, dim: str, ticks: list[str] | None) -> str:
    """``time`` for the data's time axis (``winter`` for winters), else the dimension."""
    try:
        is_time = dim == time_name(da)
    except Exception:  # no time axis: month, season, year
        is_time = False
    if not is_time:
        return dim
    return "winter" if ticks is not None else "time"


def _date_ticks(ax: Axes) -> None:
    """Dates along x labelled briefly (``2001``, ``Feb``, ``08``, ``06:00``: each tick by
    what changes there), at most eight: matplotlib's default labels every tick with the
    whole date, and three monthly means got nine labels running into each other. No
    offset text: the panel's title names the period."""
    from matplotlib import dates

    locator = dates.AutoDateLocator(minticks=3, maxticks=8)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator, show_offset=False))


def _ticks(ax: Axes, x: np.ndarray, ticks: list[str], axis: str = "x") -> None:
    """Label positions ``x`` by ``ticks``, at most about twelve of them."""
    step = max(1, -(-len(ticks) // 12))
    (ax.set_xticks if axis == "x" else ax.set_yticks)(x[::step], ticks[::step])


def _draw_series(sub: FigureBase, shape: Shape, heading: str) -> None:
    da, t = shape.data, shape.time
    assert t is not None
    ax = sub.subplots()
    x, ticks = _along(da, t)
    values = np.asarray(da.values, dtype="f8")
    ax.plot(x, values, lw=1.2, marker="." if values.size < 40 else None, label="values")
    slope = trend_per_decade(da, t)
    if slope is not None:
        years = years_along(da, t)
        assert years is not None
        ok = np.isfinite(values)
        coef = np.polyfit(years[ok], values[ok], 1)
        fit = f"trend {slope:+.3g} {nice_units(per_decade(units(da)))}"
        ax.plot(x, np.polyval(coef, years), "k--", lw=1, label=fit)
        # beside the axes, where it covers no point
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    if ticks is not None:
        _ticks(ax, x, ticks)
    elif np.issubdtype(x.dtype, np.datetime64):
        _date_ticks(ax)
    ax.ticklabel_format(axis="y", useOffset=False)
    ax.set_xlabel(_time_label(da, t, ticks if t not in CYCLIC else None))
    ax.set_ylabel(_unit_label(da))
    ax.set_title(heading)
    ax.grid(alpha=0.3)


def _draw_map(sub: FigureBase, shape: Shape, heading: str, view: MapView | None = None) -> None:
    """A longitude-latitude map, in the projection of ``view`` (default: plain)."""
    values = np.asarray(shape.data.values, dtype="f8")
    ax = sub.subplots(subplot_kw=_map_kw(shape, view))
    style = colours(shape.data, values)
    mesh = _map_axes(ax, shape, shape.data, _mesh_style(style), view)
    ax.set_title(heading)
    _colour_bar(sub, mesh, ax, shape.data, style, 0.85, _bar_side(view))


def _draw_hovmoeller(sub: FigureBase, shape: Shape, heading: str) -> None:
    """Time (or month, season) along x, latitude along y."""
    da, t, lat = shape.data, shape.time, shape.lat
    assert t is not None and lat is not None
    data = da.transpose(da[lat].dims[0], t)
    x, ticks = _along(da, t)
    y = np.asarray(data[lat].values, dtype="f8")
    iy = np.argsort(y, kind="stable")
    values = np.asarray(data.values, dtype="f8")[iy]
    ax = sub.subplots()
    ax.set_facecolor(MISSING)
    style = colours(da, values)
    mesh = ax.pcolormesh(  # rasterised in an SVG or a PDF: 20 years of days, one image
        x, y[iy], np.ma.masked_invalid(values), shading="nearest", rasterized=True,
        **_mesh_style(style),
    )  # fmt: skip
    if ticks is not None:
        _ticks(ax, x, ticks)
    elif np.issubdtype(x.dtype, np.datetime64):
        _date_ticks(ax)
    ax.set_xlabel(_time_label(da, t, ticks if t not in CYCLIC else None))
    ax.set_ylabel(LAT_LABEL)
    ax.set_title(heading)
    _colour_bar(sub, mesh, ax, da, style, 0.9)


def _draw_zonal(sub: FigureBase, shape: Shape, heading: str) -> None:
    """Latitude along x, the value along y."""
    da, lat = shape.data, shape.lat
    assert lat is not None
    y = np.asarray(da[lat].values, dtype="f8")
    order = np.argsort(y, kind="stable")
    values = np.asarray(da.values, dtype="f8")[order]
    ax = sub.subplots()
    ax.plot(y[order], values, lw=1.4)
    if is_difference(da):
        ax.axhline(0, color="0.4", lw=0.8)
    ax.ticklabel_format(axis="y", useOffset=False)
    ax.set_xlabel(LAT_LABEL)
    ax.set_ylabel(_unit_label(da))
    ax.set_title(heading)
    ax.grid(alpha=0.3)


def columns(n: int) -> int:
    """Columns of small multiples: 2x2 for four seasons, 4x3 for twelve months.

    Parameters
    ----------
    n : int
        The number of panels.

    Returns
    -------
    int
        The columns.

    Examples
    --------
    >>> columns(4), columns(12), columns(3)
    (2, 4, 3)
    """
    return {1: 1, 2: 2, 3: 3, 4: 2}.get(n, 3 if n <= 9 else 4)


def _draw_maps(sub: FigureBase, shape: Shape, heading: str, view: MapView | None = None) -> None:
    """One map per value of the leading dimension, one colour bar for all, in the
    projection of ``view`` (default: plain)."""
    da, lead = shape.data, shape.lead
    assert lead is not None and da.sizes[lead] <= MAX_PANELS
    n = da.sizes[lead]
    ncols = columns(n)
    kw = _map_kw(shape, view)
    axes = sub.subplots(-(-n // ncols), ncols, squeeze=False, subplot_kw=kw).ravel()
    style = colours(da, np.asarray(da.values, dtype="f8"))
    mesh = None
    for ax, label, i in zip(axes, labels(da, lead), range(n), strict=False):
        mesh = _map_axes(ax, shape, da.isel({lead: i}), _mesh_style(style), view)
        ax.set_title(f"{lead} {label}", fontsize=9)
        ax.label_outer()
    for ax in axes[n:]:
        ax.set_visible(False)
    sub.suptitle(heading)
    _colour_bar(sub, mesh, list(axes[:n]), da, style, 0.85, _bar_side(view))


def _draw_other(sub: FigureBase, shape: Shape, heading: str) -> None:
    da = shape.data
    if not np.issubdtype(da.dtype, np.number):
        why = f"its values are {da.dtype} data, not numbers"
    else:
        dims = ", ".join(f"{d}: {n}" for d, n in shape.dims.items())
        why = (
            f"no figure for dimensions ({dims}): a figure shows one number, a time series, "
            "a latitude/longitude map, time by latitude, latitude alone, or up to "
            f"{MAX_PANELS} maps"
        )
    _text(sub, heading, f"not plotted: {why}")


def draw_missing(sub: FigureBase, shape: Shape, heading: str) -> None:
    """Draw the panel of a result whose every value is missing: its title and a line saying so.

    Parameters
    ----------
    sub : FigureBase
        The subfigure to draw in.
    shape : Shape
        The result variable and its kind.
    heading : str
        The panel's title.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> import xarray as xr
    >>> from pangeo_hpc.write.result_shape import result_shape
    >>> da = xr.DataArray(np.full((2, 3), np.nan), dims=("lat", "lon"), name="tas")
    >>> draw_missing(plt.figure().subfigures(), result_shape(da), "(a) tas")
    """
    _text(sub, heading, "not plotted: every value is missing (NaN)")


#: the kinds drawn as maps: their drawing also takes the figure's ``view`` (a projection)
MAPS = ("map", "maps")
#: each kind's drawing: ``(subfigure, shape, the panel's title)``
DRAW: dict[str, Callable[[FigureBase, Shape, str], None]] = {
    "scalar": _draw_scalar,
    "series": _draw_series,
    "map": _draw_map,
    "hovmoeller": _draw_hovmoeller,
    "zonal": _draw_zonal,
    "maps": _draw_maps,
    "other": _draw_other,
}
