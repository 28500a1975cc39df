"""The figure a recipe run writes: one panel per result variable, of the kind its shape
calls for (:func:`plot_result`; the kinds in :mod:`pangeo_hpc.write.figure_kinds`), labelled
with the data's own names and units.

Drawn with matplotlib's object API (:class:`matplotlib.figure.Figure`, ``fig.savefig``),
never pyplot: a figure written to a file needs no backend and no display, and importing
this module leaves the backend a notebook or the user chose (``MPLBACKEND``) alone.

matplotlib is imported when a figure is first drawn, not with this module: a recipe run
imports it in a background thread while it reads and computes (:func:`preload`), where
the import costs the run nothing but a core the reading leaves idle.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from pangeo_hpc.write.marks import figure_metadata
from pangeo_hpc.write.result_shape import Shape, result_shape

if TYPE_CHECKING:
    from matplotlib.figure import Figure, FigureBase

__all__ = ["draw_result", "plot_result", "preload"]

#: what drawing and writing a PNG imports (the figure kinds import matplotlib; savefig
#: imports the Agg backend, and Pillow its format plugins)
_DRAWING = ("pangeo_hpc.write.figure_kinds", "matplotlib.backends.backend_agg", "PIL.Image")


def preload() -> threading.Thread:
    """Import what drawing a figure needs, in a daemon thread (started, returned).

    For a run that draws its figure after seconds of reading and computing, mostly
    outside the GIL: the imports then take no time of the run's own. A drawing that
    starts before the thread is done waits for the module being imported (Python's
    import lock), as it would have imported it itself.
    """
    thread = threading.Thread(target=_import_drawing, name="pangeo-hpc-preload", daemon=True)
    thread.start()
    return thread


def _import_drawing() -> None:
    import importlib

    try:
        for name in _DRAWING:
            importlib.import_module(name)
        from PIL import Image

        Image.preinit()  # the format plugins that Image.save imports
    except Exception:  # raised again, with its message, where the figure is drawn
        return


def _height(shape: Shape) -> float:
    """Inches for the panel of ``shape``: small multiples by their rows."""
    from pangeo_hpc.write.figure_kinds import HEIGHTS, columns

    if shape.kind == "maps" and shape.lead is not None:
        n = shape.data.sizes[shape.lead]
        ncols = columns(n)  # maps about twice as wide as high, 9 inches across
        return -(-n // ncols) * (HEIGHTS["maps"] / ncols + 0.7)
    return HEIGHTS[shape.kind]


def _draw(sub: FigureBase, shape: Shape) -> None:
    """One panel; a panel that cannot be drawn says why instead of raising."""
    from pangeo_hpc.write.figure_kinds import DRAW, draw_missing

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
    from matplotlib.figure import Figure

    from pangeo_hpc.write.figure_kinds import DRAW, HEIGHTS

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
