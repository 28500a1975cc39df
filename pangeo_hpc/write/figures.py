"""The figure a recipe run writes: one panel per result variable, of the kind its shape
calls for (:func:`plot_result`; the kinds in :mod:`pangeo_hpc.write.figure_kinds`), labelled
with the data's own names and units.

Drawn with matplotlib's object API (:class:`matplotlib.figure.Figure`, ``fig.savefig``),
never pyplot: a figure written to a file needs no backend and no display, and importing
this module leaves the backend a notebook or the user chose (``MPLBACKEND``) alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure, FigureBase

from pangeo_hpc.write.figure_kinds import DRAW, HEIGHTS, columns, draw_missing
from pangeo_hpc.write.marks import figure_metadata
from pangeo_hpc.write.result_shape import Shape, result_shape


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
        # (batch/pipeline/results.py, all or nothing): a panel that fails must not cost the run
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
    as this package's in its metadata (:func:`pangeo_hpc.write.marks.figure_metadata`)."""
    fmt = Path(path).suffix[1:].lower() or "png"
    fig = draw_result(result, title)
    fig.savefig(path, format=fmt, dpi=110, metadata=figure_metadata(fmt))
