"""Coastlines for the maps of a figure, from data shipped with the package.

The lines are the 0.5 contour of the GLOBE 1 km land mask of the PyPI package
``global-land-mask`` (the mask the demo data are made with), sampled every
:data:`STRIDE` cells (0.25 degrees), islands of fewer than :data:`MIN_POINTS` points left
out. :func:`build_coastlines` makes them; they are shipped as ``coastlines.npz`` beside this
module (about 100 KB, longitudes and latitudes in hundredths of a degree), because that
package unpacks its whole 1 GB globe on import (5-10 s): a figure must cost neither that nor
a download. :func:`coastlines` reads the file once per process.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: the shipped lines (:func:`build_coastlines`)
FILE = Path(__file__).with_name("coastlines.npz")
#: cells of the 1 km (1/120 degree) mask per sample: 0.25 degrees
STRIDE = 30
#: a closed line of fewer points (an island under about 50 km across) is left out
MIN_POINTS = 12
#: hundredths of a degree per unit of the stored integers
SCALE = 100


def build_coastlines(path: Path | None = None) -> list[np.ndarray]:
    """Contour the ``global-land-mask`` raster; write the lines to ``path`` if given.

    Parameters
    ----------
    path : Path, optional
        Where to write them (``np.savez_compressed``: ``points``, int16 ``(n, 2)``
        longitude and latitude in hundredths of a degree, and ``ends``, each line's end).

    Returns
    -------
    list of ndarray
        One ``(n, 2)`` array of longitudes (-180..180) and latitudes per line.

    Examples
    --------
    >>> from pathlib import Path
    >>> lines = build_coastlines(Path("coastlines.npz"))  # needs global-land-mask  # doctest: +SKIP
    """
    import contourpy
    from global_land_mask import globe  # 1 GB, 5-10 s: only to build the file

    mask = globe._mask[::STRIDE, ::STRIDE].astype("f4")
    lat, lon = globe._lat[::STRIDE], globe._lon[::STRIDE]
    gen = contourpy.contour_generator(lon, lat, mask, line_type="Separate")
    lines = [np.asarray(p) for p in gen.lines(0.5) if len(p) >= MIN_POINTS]
    if path is not None:
        points = np.round(np.concatenate(lines) * SCALE).astype("i2")
        ends = np.cumsum([len(p) for p in lines]).astype("i4")
        np.savez_compressed(path, points=points, ends=ends)
    return lines


@lru_cache(maxsize=1)
def stored_coastlines() -> tuple[np.ndarray, np.ndarray]:
    """The shipped file as stored: int16 ``(n, 2)`` longitude (-180..180) and latitude in
    1/:data:`SCALE` degree, and each line's end (``report.html`` sends them as they are).

    Examples
    --------
    >>> points, ends = stored_coastlines()
    >>> points.dtype, points.shape[1], int(ends[-1]) == len(points)
    (dtype('int16'), 2, True)
    """
    with np.load(FILE) as f:
        return f["points"], f["ends"]


@lru_cache(maxsize=1)
def coastlines() -> tuple[np.ndarray, ...]:
    """The shipped lines: one ``(n, 2)`` array of longitude (-180..180) and latitude each.

    Examples
    --------
    >>> lines = coastlines()
    >>> len(lines), lines[0].shape[1]
    (182, 2)
    """
    points, ends = stored_coastlines()
    return tuple(np.split(points.astype("f8") / SCALE, ends[:-1]))


@lru_cache(maxsize=2)
def joined_coastlines(east: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """All lines in one pair of arrays (longitude, latitude), lines apart by NaN (one
    ``plot`` call draws them); in 0..360 for ``east``, broken where a line crosses the
    0/360 seam. For the figures, :func:`pangeo_hpc.lab.explore.explore` and ``report.html``.

    Parameters
    ----------
    east : bool, optional
        Longitudes in 0..360 (else -180..180).

    Examples
    --------
    >>> import numpy as np
    >>> lon, lat = joined_coastlines(east=True)
    >>> lon.shape == lat.shape, float(np.nanmin(lon)) >= 0, float(np.nanmax(lon)) <= 360
    (True, True, True)
    """
    parts = []
    for line in coastlines():
        x = line[:, 0] % 360 if east else line[:, 0]
        jumps = np.flatnonzero(np.abs(np.diff(x)) > 180) + 1
        xy = np.column_stack([x, line[:, 1]])
        parts.extend(p for seg in np.split(xy, jumps) for p in (seg, [[np.nan, np.nan]]))
    both = np.concatenate(parts)
    return both[:, 0], both[:, 1]


def draw_coastlines(ax: Axes, *, east: bool = False, **style) -> None:
    """Draw the coastlines on the longitude-latitude axes ``ax`` without changing its limits.

    Parameters
    ----------
    ax : Axes
        Axes in degrees east (-180..180, or 0..360 with ``east``) and north.
    east : bool
        Longitudes 0..360 (a map across the date line).
    **style
        Line style for ``ax.plot`` (default thin black).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.set_xlim(-10, 30), ax.set_ylim(35, 60)
    >>> draw_coastlines(ax, color="grey")
    >>> tuple(float(x) for x in ax.get_xlim())  # the limits stay
    (-10.0, 30.0)
    """
    x, y = joined_coastlines(east)
    limits = ax.get_xlim(), ax.get_ylim()
    ax.plot(x, y, **({"color": "k", "lw": 0.5} | style))
    ax.set_xlim(*limits[0])
    ax.set_ylim(*limits[1])


__all__ = [
    "build_coastlines",
    "coastlines",
    "draw_coastlines",
    "joined_coastlines",
    "stored_coastlines",
]
