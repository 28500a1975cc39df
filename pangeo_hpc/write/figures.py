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

import textwrap
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from pangeo_hpc.write.marks import figure_metadata
from pangeo_hpc.write.panel_text import caption, letters, period_text, short_title, winters
from pangeo_hpc.write.projections import MapView, default_view
from pangeo_hpc.write.result_shape import Shape, result_shape

if TYPE_CHECKING:
    from matplotlib.figure import Figure, FigureBase

__all__ = ["draw_result", "plot_result", "preload"]

#: what drawing and writing a PNG imports (the figure kinds import matplotlib; savefig
#: imports the Agg backend, and Pillow its format plugins)
_DRAWING = ("pangeo_hpc.write.figure_kinds", "matplotlib.backends.backend_agg", "PIL.Image")


#: the thread of :func:`preload` (``None`` before the first)
_preloading: threading.Thread | None = None


def preload() -> threading.Thread:
    """Import what drawing a figure needs, in a daemon thread (started, returned).

    For a run that draws its figure after seconds of reading and computing, mostly
    outside the GIL: the imports then take no time of the run's own. Drawing waits for
    the thread first (:func:`_preloaded`).

    Returns
    -------
    threading.Thread
        The thread.

    Examples
    --------
    >>> thread = preload()  # then read and compute; drawing waits for it
    >>> thread.join()
    """
    global _preloading
    thread = threading.Thread(target=_import_drawing, name="pangeo-hpc-preload", daemon=True)
    thread.start()
    _preloading = thread
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


def _preloaded() -> None:
    """Wait for :func:`preload`'s imports before importing anything of matplotlib here:
    two threads importing it at once can each meet a module of its import cycles that the
    other has half made (a cached run, drawing before the preload ended, printed
    matplotlib's "Unable to import Axes3D" warning)."""
    thread = _preloading
    if thread is not None:
        thread.join()


#: the formats a figure is written in (``--plot-format``)
FORMATS = ("png", "svg", "pdf")
#: inches across a figure
WIDTH = 10.0
#: characters per line of the caption (8 pt) and of the figure's heading (12 pt), in
#: :data:`WIDTH` inches with room to spare
CAPTION_WIDTH, HEADING_WIDTH = 150, 95
#: inches per line of caption
CAPTION_LINE = 0.16


def _height(shape: Shape) -> float:
    """Inches for the panel of ``shape``: small multiples by their rows."""
    from pangeo_hpc.write.figure_kinds import HEIGHTS, columns

    if shape.kind == "maps" and shape.lead is not None:
        n = shape.data.sizes[shape.lead]
        ncols = columns(n)  # maps about twice as wide as high, 9 inches across
        return -(-n // ncols) * (HEIGHTS["maps"] / ncols + 0.7)
    return HEIGHTS[shape.kind]


def _draw(sub: FigureBase, shape: Shape, heading: str, view: MapView) -> None:
    """One panel (a map in ``view``); a panel that cannot be drawn says why instead of
    raising."""
    from pangeo_hpc.write.figure_kinds import DRAW, MAPS, draw_missing

    kind = shape.kind
    if kind not in ("scalar", "other") and not np.isfinite(shape.data.values).any():
        kind = "missing"
    try:
        if kind in MAPS and not view.plain:  # a map kind takes view= for a projection
            DRAW[kind](sub, shape, heading, view=view)  # type: ignore[call-arg]
        else:
            (draw_missing if kind == "missing" else DRAW[kind])(sub, shape, heading)
    except Exception as exc:  # the figure is written with the results
        # (batch/pipeline/results.py, all or nothing): a panel that fails must not cost the run
        sub.clear()
        DRAW["other"](sub, Shape("other", shape.data), heading)
        sub.axes[0].texts[0].set_text(
            textwrap.fill(f"not plotted: drawing this {kind} failed ({type(exc).__name__}: {exc})")
        )


def _period(result: xr.Dataset, shape: Shape) -> str | None:
    """The period a panel's title names: a series of winters by them, else the run's."""
    if shape.time is not None and shape.time in shape.data.coords:
        labels = winters(np.asarray(shape.data[shape.time].values))
        if labels:
            return (
                f"winter {labels[0]}" if len(labels) == 1 else f"winters {labels[0]}-{labels[-1]}"
            )
    period = str(result.attrs.get("period", ""))
    if " to " in period:
        try:
            return period_text(*period.split(" to ", 1))
        except ValueError:
            return period
    return None


def _panel_texts(result: xr.Dataset | xr.DataArray) -> list[tuple[str, str, str]]:
    """``(letter, short title, long description)`` of each variable's panel, in the order of
    ``result.data_vars``: what :func:`draw_result` writes on the panels and in the caption."""
    _preloaded()
    from pangeo_hpc.write.figure_kinds import long_name, units

    if isinstance(result, xr.DataArray):
        result = result.to_dataset(name=result.name or "result")
    names = list(result.data_vars)
    out = []
    for letter, name in zip(letters(len(names)), names, strict=True):
        shape = result_shape(result[name])
        heading = short_title(result[name], _period(result, shape), single=len(names) == 1)
        u = units(result[name])
        out.append((letter, heading, f"{long_name(result[name])}" + (f" ({u})" if u else "")))
    return out


def _figure_caption(result: xr.Dataset | xr.DataArray) -> str:
    """The caption of :func:`draw_result` in one line: each panel's long description."""
    texts = _panel_texts(result)
    if len(texts) == 1:
        return texts[0][2]
    return "; ".join(f"({a}) {words}" for a, _, words in texts)


def draw_result(
    result: xr.Dataset | xr.DataArray,
    title: str,
    *,
    fig: Figure | None = None,
    view: MapView | None = None,
) -> Figure:
    """Draw each data variable of ``result`` in its own panel, by shape.

    Parameters
    ----------
    result : Dataset or DataArray
        Computed results (a DataArray counts as a Dataset of one variable); the attribute
        ``period`` (``"2000-01-01 to 2019-12-31"``) puts the period into the titles.
    title : str
        The figure's heading (wrapped to the figure's width).
    fig : Figure, optional
        Draw into this figure (default: a new one sized for the panels).
    view : MapView, optional
        The maps' projection (a recipe's ``plot:``,
        :func:`pangeo_hpc.write.projections.map_view`); default config
        ``pangeo-hpc.plot.projection``.

    Returns
    -------
    Figure
        With one subfigure per variable, in the order of ``result.data_vars``, each
        titled ``(a) short title`` (:func:`_panel_texts`), and a last one holding the
        caption: each variable's ``long_name`` and units.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import xarray as xr
    >>> da = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("lat", "lon"), name="tas",
    ...                   coords={"lat": [0.0, 10.0], "lon": [0.0, 10.0, 20.0]})
    >>> fig = draw_result(da.to_dataset(), "ERA5 air temperature")
    >>> len(fig.subfigs)  # the map, and the caption
    2
    """
    _preloaded()
    from matplotlib.figure import Figure

    from pangeo_hpc.write.figure_kinds import DRAW, HEIGHTS

    if isinstance(result, xr.DataArray):
        result = result.to_dataset(name=result.name or "result")
    view = view or default_view()
    shapes = [result_shape(result[name]) for name in result.data_vars]
    texts = _panel_texts(result)
    words = caption([(a, w) for a, _, w in texts], CAPTION_WIDTH) if texts else ""
    if len(texts) == 1:  # one panel: no letter
        words = textwrap.fill(texts[0][2], CAPTION_WIDTH)
    lines = words.count("\n") + 1 if words else 0
    heights = [_height(s) for s in shapes] or [HEIGHTS["other"]]
    heights.append(CAPTION_LINE * lines + 0.15)
    heading = "\n".join(textwrap.fill(line, HEADING_WIDTH) for line in title.splitlines())
    if fig is None:
        top = 0.25 * (heading.count("\n") + 1)
        fig = Figure(figsize=(WIDTH, sum(heights) + top), layout="constrained")
    subs = fig.subfigures(len(heights), 1, height_ratios=heights, squeeze=False).ravel()
    for sub, shape, (letter, short, _) in zip(subs, shapes, texts, strict=False):
        _draw(sub, shape, f"({letter}) {short}" if len(shapes) > 1 else short, view)
    if not shapes:
        DRAW["other"](subs[0], Shape("other", xr.DataArray(np.nan, name="result")), "result")
        subs[0].axes[0].texts[0].set_text("not plotted: the result holds no variables")
    if words:
        subs[-1].text(0.01, 0.5, words, ha="left", va="center", fontsize=8, gid="caption")
    fig.suptitle(heading)
    return fig


def plot_format(fmt: str | None) -> str:
    """``fmt`` checked against :data:`FORMATS` (default ``png``).

    Parameters
    ----------
    fmt : str or None
        The format asked for, or ``None``.

    Returns
    -------
    str
        The format.

    Raises
    ------
    InputError
        Naming the format and the choices.

    Examples
    --------
    >>> plot_format(None), plot_format("pdf")
    ('png', 'pdf')
    >>> plot_format("bmp")
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: plot format 'bmp' is not one of png, svg, pdf: give ...
    """
    from pangeo_hpc.errors import InputError

    fmt = (fmt or "png").lower()
    if fmt not in FORMATS:
        raise InputError(
            f"plot format {fmt!r} is not one of {', '.join(FORMATS)}: give --plot-format png",
            param="plot_format",
        )
    return fmt


def plot_result(result: xr.Dataset, path: Path, title: str, *, view: MapView | None = None) -> None:
    """Write the figure of :func:`draw_result` to ``path`` (format from its suffix: one of
    :data:`FORMATS`), marked as this package's in its metadata
    (:func:`pangeo_hpc.write.marks.figure_metadata`), with the caption (each panel's
    long description) in it as well; maps in the projection of ``view`` (default config
    ``pangeo-hpc.plot.projection``).

    Parameters
    ----------
    result : xr.Dataset
        The results.
    path : Path
        The figure's file.
    title : str
        The figure's title.
    view : MapView, optional
        The maps' projection and extent, or ``None``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import xarray as xr
    >>> from pathlib import Path
    >>> da = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("lat", "lon"), name="tas",
    ...                   coords={"lat": [0.0, 10.0], "lon": [0.0, 10.0, 20.0]})
    >>> plot_result(da.to_dataset(), Path("tas.png"), "ERA5 air temperature")
    >>> Path("tas.png").stat().st_size > 0
    True
    """
    _preloaded()
    fmt = plot_format(Path(path).suffix[1:] or "png")
    fig = draw_result(result, title, view=view)
    meta = figure_metadata(fmt)
    words = _figure_caption(result)
    key = {"png": "Description", "svg": "Title", "pdf": "Subject"}[fmt]
    meta[key] = f"{meta[key]}; {words}" if key in meta else words
    fig.savefig(path, format=fmt, dpi=110, metadata=meta)
