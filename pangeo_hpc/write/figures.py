"""The figure a recipe run writes: one panel per result variable, of the kind its shape
calls for (:func:`plot_result`; the kinds in :mod:`pangeo_hpc.write.figure_kinds`), labelled
with the data's own names and units. ``PLOTS`` keeps the figures of the two fixed chains.

Drawn with matplotlib's object API (:class:`matplotlib.figure.Figure`, ``fig.savefig``),
never pyplot: a figure written to a file needs no backend and no display, and importing
this module leaves the backend a notebook or the user chose (``MPLBACKEND``) alone.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure, FigureBase

from pangeo_hpc.recipes.grid import horizontal_names, time_name
from pangeo_hpc.recipes.years import decimal_years
from pangeo_hpc.write.figure_kinds import DRAW, HEIGHTS, columns, draw_missing
from pangeo_hpc.write.guard import figure_metadata
from pangeo_hpc.write.result_shape import Shape, result_shape


def _map(ax: Axes, da: xr.DataArray, title: str, *, cmap: str, center: bool) -> None:
    lat, lon = horizontal_names(da)
    lons = np.asarray(da[lon].values, dtype="f8")
    order = np.argsort(np.where(lons > 180, lons - 360, lons))
    x = np.where(lons > 180, lons - 360, lons)[order]
    values = np.asarray(da.values)[:, order]
    kw: dict = {"cmap": cmap, "shading": "nearest"}
    if center:
        lim = float(np.nanpercentile(np.abs(values), 99)) or 1.0
        kw.update(vmin=-lim, vmax=lim)
    ax.set_facecolor("0.75")  # land and sea ice: grey
    mesh = ax.pcolormesh(x, da[lat].values, values, **kw)
    ax.set_xlabel("longitude (°E)")
    ax.set_ylabel("latitude (°N)")
    ax.set_title(title)
    ax.set_aspect("equal")
    # long names from the data can be long: wrap them so the units stay on the figure
    label = f"{da.attrs.get('long_name', da.name)} ({da.attrs.get('units', '')})"
    ax.figure.colorbar(mesh, ax=ax, label=textwrap.fill(label, 45), shrink=0.8)


def _series(ax: Axes, da: xr.DataArray, title: str, *, fit: bool = False) -> None:
    t = time_name(da)
    ax.plot(da[t].values, da.values, lw=1.2, label=da.attrs.get("long_name", da.name))
    if fit:
        ok = np.isfinite(da.values)
        yrs = decimal_years(da[t])
        coef = np.polyfit(yrs[ok], da.values[ok], 1)
        ax.plot(
            da[t].values,
            np.polyval(coef, yrs),
            "k--",
            lw=1,
            label=f"linear fit: {coef[0] * 10:+.3f} {da.attrs.get('units', '')}/decade",
        )
        ax.legend(loc="upper left")
    ax.set_xlabel("time")
    ax.set_ylabel(f"{da.attrs.get('units', '')}")
    ax.set_title(title)
    ax.grid(alpha=0.3)


def plot_sst_mean(result: xr.Dataset, path: Path, title: str) -> None:
    """Time-mean SST map above the global-mean SST series."""
    fig = Figure(figsize=(10, 9), layout="constrained")
    a, b = fig.subplots(2, 1, height_ratios=[2, 1])
    _map(a, result["time_mean"], f"{title}: time-mean SST", cmap="RdYlBu_r", center=False)
    _series(b, result["global_mean_series"], "Area-weighted global-mean SST")
    fig.savefig(path, dpi=110)


def plot_sst_trend(result: xr.Dataset, path: Path, title: str) -> None:
    """Trend map above the global-mean anomaly series (with its fit) and Nino3.4."""
    fig = Figure(figsize=(10, 11), layout="constrained")
    a, b, c = fig.subplots(3, 1, height_ratios=[2, 1, 1])
    _map(a, result["trend"], f"{title}: linear trend of SST", cmap="RdBu_r", center=True)
    _series(b, result["global_mean_anomaly"], "Global-mean SST anomaly", fit=True)
    _series(c, result["nino34"], "Nino3.4 index (SST anomaly, 5S-5N, 170W-120W)")
    fig.savefig(path, dpi=110)


def _height(shape: Shape) -> float:
    """Inches for the panel of ``shape``: small multiples by their rows."""
    if shape.kind == "maps" and shape.lead is not None:
        n = shape.data.sizes[shape.lead]
        ncols = columns(n)  # maps about twice as wide as high, 9 inches across
        return -(-n // ncols) * (HEIGHTS["maps"] / ncols + 0.7)
    return HEIGHTS[shape.kind]


def _draw(sub: FigureBase, shape: Shape) -> None:
    """One panel; a panel that cannot be drawn says why instead of raising."""
    kind = shape.kind
    if kind not in ("scalar", "other") and not np.isfinite(shape.data.values).any():
        kind = "missing"
    try:
        (draw_missing if kind == "missing" else DRAW[kind])(sub, shape)
    except Exception as exc:  # the figure is written with the results
        # (batch/results.py, all or nothing): a panel that fails must not cost the run
        sub.clear()
        DRAW["other"](sub, Shape("other", shape.data))
        sub.axes[0].texts[0].set_text(
            f"not plotted: drawing this {kind} failed ({type(exc).__name__}: {exc})"
        )


def draw_result(
    result: xr.Dataset | xr.DataArray, title: str, *, fig: Figure | None = None
) -> Figure:
    """Draw each data variable of ``result`` in its own panel, by shape.

    Parameters
    ----------
    result : Dataset or DataArray
        Computed results (a DataArray counts as a Dataset of one variable).
    title : str
        The figure's heading; each panel's title is its variable's ``long_name``.
    fig : Figure, optional
        Draw into this figure (default: a new one sized for the panels).

    Returns
    -------
    Figure
        With one subfigure per variable, in the order of ``result.data_vars``.
    """
    if isinstance(result, xr.DataArray):
        result = result.to_dataset(name=result.name or "result")
    shapes = [result_shape(result[name]) for name in result.data_vars]
    heights = [_height(s) for s in shapes] or [HEIGHTS["other"]]
    if fig is None:
        fig = Figure(figsize=(10, sum(heights) + 0.5), layout="constrained")
    subs = fig.subfigures(len(heights), 1, height_ratios=heights, squeeze=False).ravel()
    for sub, shape in zip(subs, shapes, strict=False):
        _draw(sub, shape)
    if not shapes:
        DRAW["other"](subs[0], Shape("other", xr.DataArray(np.nan, name="result")))
        subs[0].axes[0].texts[0].set_text("not plotted: the result holds no variables")
    fig.suptitle(title)
    return fig


def plot_result(result: xr.Dataset, path: Path, title: str) -> None:
    """Write the figure of :func:`draw_result` to ``path`` (format from its suffix), marked
    as this package's in its metadata (:func:`pangeo_hpc.write.guard.figure_metadata`)."""
    fmt = Path(path).suffix[1:].lower() or "png"
    fig = draw_result(result, title)
    fig.savefig(path, format=fmt, dpi=110, metadata=figure_metadata(fmt))


PLOTS = {"sst-mean": plot_sst_mean, "sst-trend": plot_sst_trend}
