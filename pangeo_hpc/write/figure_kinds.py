"""One panel per kind of result (:mod:`pangeo_hpc.write.result_shape`), drawn into a
matplotlib (sub)figure with the object API.

Every panel takes its title from the variable's ``long_name`` (else its name) and its units
from ``units``: never from the recipe, so a precipitation result is labelled in m and a
trend in what the trend recipe wrote (``K/(10 year)``). Maps put longitudes in whichever
convention keeps the data together (-180..180, or 0..360 for a box across the date line),
latitude in increasing order, missing values in grey; a difference (an anomaly, a trend,
values of both signs) gets diverging colours centred on zero.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable

import numpy as np
import xarray as xr
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import Colormap
from matplotlib.figure import FigureBase

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
_DIFFERENCE = re.compile(r"anomal|trend|differen|change|tendenc|departure", re.IGNORECASE)
#: units of a rate per time span (``K/(10 year)``, ``mm/decade``)
_RATE = re.compile(r"/\s*\(?\s*\d*\s*(year|decade|century)", re.IGNORECASE)
#: inches of height per panel of each kind (``maps``: of one map across the figure)
HEIGHTS = {"scalar": 1.4, "series": 3.0, "map": 4.6, "hovmoeller": 3.8, "zonal": 3.0}
HEIGHTS |= {"maps": 4.5, "other": 1.4}
LAT_LABEL, LON_LABEL = "latitude (°N)", "longitude (°E)"


def long_name(da: xr.DataArray) -> str:
    """The variable's ``long_name``, else its name."""
    return str(da.attrs.get("long_name") or da.name or "result")


#: characters per line of a panel's title (a long name that names its selection, period
#: and every step is often longer than the figure is wide)
TITLE_WIDTH = 95


def title(da: xr.DataArray) -> str:
    """The panel's title: :func:`long_name`, wrapped to the figure's width."""
    return textwrap.fill(long_name(da), TITLE_WIDTH)


def units(da: xr.DataArray) -> str:
    return str(da.attrs.get("units", "") or "").strip()


def quantity(da: xr.DataArray, width: int = 45) -> str:
    """``long name (units)``, wrapped so that the units stay on the figure."""
    u = units(da)
    return textwrap.fill(f"{long_name(da)} ({u})" if u else long_name(da), width)


def is_difference(da: xr.DataArray, values: np.ndarray) -> bool:
    """An anomaly, a trend or a change by its name or units, or values of both signs."""
    text = " ".join(str(s) for s in (da.name, da.attrs.get("long_name"), da.attrs.get("units")))
    finite = values[np.isfinite(values)]
    both_signs = finite.size > 0 and finite.min() < 0 < finite.max()
    return bool(_DIFFERENCE.search(text) or _RATE.search(units(da)) or both_signs)


def colours(da: xr.DataArray, values: np.ndarray) -> dict:
    """``cmap``, ``vmin`` and ``vmax`` for ``values``: centred on zero for a difference."""
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if is_difference(da, values):
        lim = max(abs(lo), abs(hi)) or 1.0
        cmap, lo, hi = "RdBu_r", -lim, lim
    else:
        cmap = "viridis"
        if lo == hi:
            lo, hi = lo - (abs(lo) * 0.01 or 0.5), hi + (abs(hi) * 0.01 or 0.5)
    bad: Colormap = colormaps[cmap].with_extremes(bad=MISSING)
    return {"cmap": bad, "vmin": lo, "vmax": hi}


def _text(sub: FigureBase, heading: str, body: str, *, size: float = 11) -> Axes:
    ax = sub.subplots()
    ax.set_axis_off()
    ax.set_title(textwrap.fill(heading, TITLE_WIDTH))
    ax.text(0.5, 0.5, textwrap.fill(body, 90), ha="center", va="center", fontsize=size)
    return ax


def _grid(shape: Shape, data: xr.DataArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Longitudes, latitudes and values (latitude by longitude) ready for ``pcolormesh``."""
    lat, lon = shape.lat, shape.lon
    assert lat is not None and lon is not None
    if data[lat].ndim == 2:  # curvilinear: as it is
        data = data.transpose(*data[lat].dims)
        return np.asarray(data[lon].values), np.asarray(data[lat].values), np.asarray(data.values)
    data = data.transpose(data[lat].dims[0], data[lon].dims[0])
    lons = np.asarray(data[lon].values, dtype="f8")
    west = (lons + 180) % 360 - 180  # -180..180
    east = lons % 360  # 0..360: keeps a box across the date line together
    x = east if np.ptp(east) < np.ptp(west) else west
    y = np.asarray(data[lat].values, dtype="f8")
    ix, iy = np.argsort(x, kind="stable"), np.argsort(y, kind="stable")
    return x[ix], y[iy], np.asarray(data.values, dtype="f8")[np.ix_(iy, ix)]


def _map_axes(ax: Axes, shape: Shape, data: xr.DataArray, style: dict):
    x, y, values = _grid(shape, data)
    ax.set_facecolor(MISSING)
    mesh = ax.pcolormesh(x, y, np.ma.masked_invalid(values), shading="nearest", **style)
    ax.set_xlabel(LON_LABEL)
    ax.set_ylabel(LAT_LABEL)
    if shape.data[shape.lat].ndim == 1:
        ax.set_aspect("equal")
    return mesh


def draw_scalar(sub: FigureBase, shape: Shape) -> None:
    value = float(shape.data.values)
    body = f"{value:.6g} {units(shape.data)}".strip()
    ax = _text(sub, long_name(shape.data), body, size=20)
    ax.texts[0].set_gid("value")


def _along(da: xr.DataArray, dim: str) -> tuple[np.ndarray, list[str] | None]:
    """Positions along a time-like axis and, for a position in the year, tick labels."""
    years = years_along(da, dim)
    values = np.asarray(da[dim].values) if dim in da.coords else np.arange(da.sizes[dim])
    numeric = np.issubdtype(values.dtype, np.number)
    if dim in CYCLIC:  # months by name, seasons in their order
        return (values if numeric else np.arange(values.size)), labels(da, dim)
    if np.issubdtype(values.dtype, np.datetime64) or numeric:
        return values, None
    if years is not None:  # cftime dates: decimal years from the first one's year
        return years + da[dim].values[0].year, None
    return np.arange(values.size), labels(da, dim)


def draw_series(sub: FigureBase, shape: Shape) -> None:
    da, t = shape.data, shape.time
    assert t is not None
    ax = sub.subplots()
    x, ticks = _along(da, t)
    values = np.asarray(da.values, dtype="f8")
    ax.plot(
        x,
        values,
        lw=1.2,
        marker="." if values.size < 40 else None,
        label=textwrap.fill(long_name(da), 80),
    )
    slope = trend_per_decade(da, t)
    if slope is not None:
        years = years_along(da, t)
        assert years is not None
        ok = np.isfinite(values)
        coef = np.polyfit(years[ok], values[ok], 1)
        fit = f"least-squares trend: {slope:+.3g} {per_decade(units(da))}"
        ax.plot(x, np.polyval(coef, years), "k--", lw=1, label=fit)
    if ticks is not None:
        ax.set_xticks(x, ticks)
    ax.legend(loc="best", fontsize=8)
    ax.set_xlabel(t)
    ax.set_ylabel(units(da) or "value")
    ax.set_title(title(da))
    ax.grid(alpha=0.3)


def draw_map(sub: FigureBase, shape: Shape) -> None:
    values = np.asarray(shape.data.values, dtype="f8")
    ax = sub.subplots()
    mesh = _map_axes(ax, shape, shape.data, colours(shape.data, values))
    ax.set_title(title(shape.data))
    sub.colorbar(mesh, ax=ax, label=quantity(shape.data), shrink=0.85)


def draw_hovmoeller(sub: FigureBase, shape: Shape) -> None:
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
    mesh = ax.pcolormesh(x, y[iy], np.ma.masked_invalid(values), shading="nearest", **style)
    if ticks is not None:
        ax.set_xticks(x, ticks)
    ax.set_xlabel(t)
    ax.set_ylabel(LAT_LABEL)
    ax.set_title(title(da))
    sub.colorbar(mesh, ax=ax, label=quantity(da), shrink=0.9)


def draw_zonal(sub: FigureBase, shape: Shape) -> None:
    """Latitude along x, the value along y."""
    da, lat = shape.data, shape.lat
    assert lat is not None
    y = np.asarray(da[lat].values, dtype="f8")
    order = np.argsort(y, kind="stable")
    values = np.asarray(da.values, dtype="f8")[order]
    ax = sub.subplots()
    ax.plot(y[order], values, lw=1.4)
    if is_difference(da, values):
        ax.axhline(0, color="0.4", lw=0.8)
    ax.set_xlabel(LAT_LABEL)
    ax.set_ylabel(quantity(da, 30))
    ax.set_title(title(da))
    ax.grid(alpha=0.3)


def columns(n: int) -> int:
    """Columns of small multiples: 2x2 for four seasons, 4x3 for twelve months."""
    return {1: 1, 2: 2, 3: 3, 4: 2}.get(n, 3 if n <= 9 else 4)


def draw_maps(sub: FigureBase, shape: Shape) -> None:
    """One map per value of the leading dimension, one colour bar for all."""
    da, lead = shape.data, shape.lead
    assert lead is not None and da.sizes[lead] <= MAX_PANELS
    n = da.sizes[lead]
    ncols = columns(n)
    axes = sub.subplots(-(-n // ncols), ncols, squeeze=False).ravel()
    style = colours(da, np.asarray(da.values, dtype="f8"))
    mesh = None
    for ax, label, i in zip(axes, labels(da, lead), range(n), strict=False):
        mesh = _map_axes(ax, shape, da.isel({lead: i}), style)
        ax.set_title(f"{lead} {label}", fontsize=9)
        ax.label_outer()
    for ax in axes[n:]:
        ax.set_visible(False)
    sub.suptitle(title(da))
    sub.colorbar(mesh, ax=list(axes[:n]), label=quantity(da), shrink=0.85)


def draw_other(sub: FigureBase, shape: Shape) -> None:
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
    _text(sub, long_name(da), f"not plotted: {why}")


def draw_missing(sub: FigureBase, shape: Shape) -> None:
    _text(sub, long_name(shape.data), "not plotted: every value is missing (NaN)")


DRAW: dict[str, Callable[[FigureBase, Shape], None]] = {
    "scalar": draw_scalar,
    "series": draw_series,
    "map": draw_map,
    "hovmoeller": draw_hovmoeller,
    "zonal": draw_zonal,
    "maps": draw_maps,
    "other": draw_other,
}
