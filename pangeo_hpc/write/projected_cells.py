"""A map's cells, coastlines and graticule in a cartopy projection, projected with NumPy and
pyproj's point transforms rather than cartopy's mesh and geometry routines.

A 1-degree globe in Robinson took 5-7 s as a PNG (cartopy's ``pcolormesh`` of 65,000 cells,
with every cell that crosses the projection's edge drawn again), and the shipped coastlines
1-1.5 s more on every first figure of a process (shapely cutting 27,000 points at the
edge). Here, on evenly spaced 1-d longitudes and latitudes (:func:`evenly_spaced`), each
pixel of the map's frame is projected back to a longitude and latitude and takes the value
of the cell it falls in (:func:`sample_cells`; nothing where it lies outside the grid or the
projection), drawn as one image; and the coastlines and the graticule are projected point
by point and broken where they leave the projection or jump across its seam
(:func:`projected_lines`). cartopy's own graticule (``ax.gridlines()``) cut every line with
shapely again at each of constrained layout's passes: 3.5 s of a figure of four maps.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.collections import LineCollection
    from matplotlib.image import AxesImage

#: a graticule's spacings to choose from, degrees
STEPS = (1, 2, 5, 10, 15, 30, 60)
#: at most this many graticule lines across a map's span of longitude or latitude
LINES = 6
#: the graticule's style (thin grey, half transparent)
GRATICULE = {"colors": "0.4", "linewidths": 0.3, "alpha": 0.6}

#: pixels of a projected map's image per pixel of its axes on screen (savefig at dpi 110 of
#: a figure at 100 dpi, with room): finer than what is seen, coarser than a 0.1-degree grid
OVERSAMPLE = 1.5


def evenly_spaced(v: np.ndarray) -> bool:
    """Whether the increasing 1-d ``v`` has one step between all its values, to a thousandth
    of it (float32 coordinates of a 0.1-degree grid are within a few millionths of a degree).

    Parameters
    ----------
    v : np.ndarray
        Cell centres, increasing.

    Returns
    -------
    bool
        Two or more values, evenly spaced.

    Examples
    --------
    >>> import numpy as np
    >>> evenly_spaced(np.arange(-89.5, 90, 1.0)), evenly_spaced(np.array([-60.0, 0, 30]))
    (True, False)
    """
    if v.ndim != 1 or v.size < 2:
        return False
    steps = np.diff(v)
    return bool(steps[0] > 0 and np.all(np.abs(steps - steps[0]) <= 1e-3 * steps[0]))


def sample_cells(
    crs: Any,
    extent: tuple[float, float, float, float],
    shape: tuple[int, int],
    lon: np.ndarray,
    lat: np.ndarray,
    values: np.ndarray,
) -> np.ndarray:
    """The value of the cell under the centre of each pixel of a ``shape`` image covering
    ``extent`` in ``crs``: NaN outside the grid and outside the projection.

    Parameters
    ----------
    crs : cartopy.crs.Projection
        The map's projection.
    extent : tuple of float
        ``(x0, x1, y0, y1)`` in ``crs``'s coordinates (``ax.get_extent()``).
    shape : tuple of int
        Rows and columns of the image, south row first.
    lon, lat : np.ndarray
        Cell centres, evenly spaced and increasing (:func:`evenly_spaced`); longitudes in
        degrees east, either convention; a grid of 360 degrees wraps around.
    values : np.ndarray
        ``lat`` by ``lon``.

    Returns
    -------
    np.ndarray
        ``shape``, float64.

    Examples
    --------
    >>> import cartopy.crs as ccrs
    >>> import numpy as np
    >>> lon, lat = np.arange(0.5, 360, 1.0), np.arange(-89.5, 90, 1.0)
    >>> values = np.add.outer(lat, lon / 1000)
    >>> image = sample_cells(ccrs.PlateCarree(), (-180, 180, -90, 90), (180, 360), lon, lat, values)
    >>> float(image[0, 0]), float(image[179, 180])  # (-179.5, -89.5) and (0.5, 89.5)
    (-89.3195, 89.5005)
    """
    import cartopy.crs as ccrs

    x0, x1, y0, y1 = extent
    rows, cols = shape
    px = x0 + (np.arange(cols) + 0.5) * ((x1 - x0) / cols)
    py = y0 + (np.arange(rows) + 0.5) * ((y1 - y0) / rows)
    grid_x, grid_y = np.meshgrid(px, py)
    degrees = ccrs.PlateCarree().transform_points(crs, grid_x, grid_y)
    dx = (lon[-1] - lon[0]) / (lon.size - 1)
    dy = (lat[-1] - lat[0]) / (lat.size - 1)
    with np.errstate(invalid="ignore"):
        j = np.floor(np.mod(degrees[..., 0] - (lon[0] - dx / 2), 360.0) / dx)
        i = np.floor((degrees[..., 1] - (lat[0] - dy / 2)) / dy)
        if abs(lon.size * dx - 360.0) <= 1e-3 * dx:  # a whole circle: 360 is 0 again
            j = np.mod(j, lon.size)
        inside = (j >= 0) & (j < lon.size) & (i >= 0) & (i < lat.size)  # False for NaN
    image = np.full(shape, np.nan)
    image[inside] = values[i[inside].astype(np.intp), j[inside].astype(np.intp)]
    return image


def draw_cells(
    ax: Axes, lon: np.ndarray, lat: np.ndarray, values: np.ndarray, style: dict
) -> AxesImage:
    """Draw ``values`` on the cartopy ``GeoAxes`` ``ax``, whose extent is set, as one image
    of :func:`sample_cells` (missing values and what lies outside the grid transparent).

    Parameters
    ----------
    ax : GeoAxes
        Framed (its extent set).
    lon, lat : np.ndarray
        Evenly spaced cell centres (:func:`evenly_spaced`).
    values : np.ndarray
        ``lat`` by ``lon``, NaN where missing.
    style : dict
        ``cmap`` (its "bad" colour transparent), ``vmin``, ``vmax``.

    Returns
    -------
    AxesImage
        The image, for the colour bar.

    Examples
    --------
    >>> import cartopy.crs as ccrs
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> ax = plt.figure().add_subplot(projection=ccrs.Robinson())
    >>> ax.set_global()
    >>> lon, lat = np.arange(-175.0, 180, 10), np.arange(-85.0, 90, 10)
    >>> image = draw_cells(ax, lon, lat, np.ones((18, 36)), {"cmap": plt.get_cmap("viridis")})
    >>> image.get_array().count() > 0.7 * image.get_array().size  # the globe's share of it
    np.True_
    """
    extent = ax.get_extent()  # type: ignore[attr-defined]
    box = ax.get_window_extent()
    shape = (max(1, math.ceil(OVERSAMPLE * box.height)), max(1, math.ceil(OVERSAMPLE * box.width)))
    image = sample_cells(ax.projection, extent, shape, lon, lat, values)  # type: ignore[attr-defined]
    return ax.imshow(
        np.ma.masked_invalid(image), extent=extent, origin="lower", interpolation="nearest",
        transform=ax.projection, **style,  # type: ignore[attr-defined]
    )  # fmt: skip


def projected_lines(crs: Any, lines: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    """``lines`` (longitude, latitude) in ``crs``, broken where a point is not on the map
    (the far side of an orthographic globe) and where a step jumps across the projection's
    seam (over half its width): the segment over the seam or the edge is left out, one step
    of the shipped coastlines (a quarter of a degree at most).

    Parameters
    ----------
    crs : cartopy.crs.Projection
        The map's projection.
    lines : tuple of np.ndarray
        ``(n, 2)`` longitudes and latitudes in degrees.

    Returns
    -------
    list of np.ndarray
        ``(m, 2)`` pieces in ``crs``'s coordinates, two points or more each.

    Examples
    --------
    >>> import cartopy.crs as ccrs
    >>> import numpy as np
    >>> across = np.array([[170.0, 0.0], [179.9, 0.0], [-179.9, 0.0], [-170.0, 0.0]])
    >>> [len(p) for p in projected_lines(ccrs.Robinson(), (across,))]  # cut at the seam
    [2, 2]
    """
    import cartopy.crs as ccrs

    counts = [len(line) for line in lines]
    points = np.concatenate(lines)
    xy = crs.transform_points(ccrs.PlateCarree(), points[:, 0], points[:, 1])[:, :2]
    width = abs(crs.x_limits[1] - crs.x_limits[0])
    pieces = []
    for part in np.split(xy, np.cumsum(counts)[:-1]):
        ok = np.isfinite(part).all(axis=1)
        steps = np.abs(np.diff(part, axis=0)).max(axis=1)
        with np.errstate(invalid="ignore"):
            cut = ~ok[:-1] | ~ok[1:] | ~(steps < width / 2)
        for piece in np.split(part, np.flatnonzero(cut) + 1):
            piece = piece[np.isfinite(piece).all(axis=1)]
            if len(piece) >= 2:
                pieces.append(piece)
    return pieces


def draw_projected_coastlines(ax: Axes, **style: Any) -> LineCollection:
    """Draw the shipped coastlines (:mod:`pangeo_hpc.write.coastlines`) on the cartopy
    ``GeoAxes`` ``ax``, projected by :func:`projected_lines`, without changing its extent.

    Parameters
    ----------
    ax : GeoAxes
        The map.
    **style
        For the ``LineCollection`` (default thin black).

    Returns
    -------
    LineCollection
        The lines.

    Examples
    --------
    >>> import cartopy.crs as ccrs
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> ax = plt.figure().add_subplot(projection=ccrs.Orthographic(0, 45))
    >>> len(draw_projected_coastlines(ax).get_segments()) > 50  # Europe, Africa, the Americas
    True
    """
    from pangeo_hpc.write.coastlines import coastlines

    return _draw_lines(ax, coastlines(), "coastlines", {"colors": "k", "linewidths": 0.5} | style)


def graticule(lon_span: float, lat_span: float) -> tuple[np.ndarray, ...]:
    """Meridians and parallels, as lines of (longitude, latitude) sampled every half degree
    (or every tenth of their spacing, if finer), spaced by the first of :data:`STEPS` that
    draws at most :data:`LINES` of each across the spans.

    Parameters
    ----------
    lon_span, lat_span : float
        The extent shown, in degrees.

    Returns
    -------
    tuple of np.ndarray
        ``(n, 2)`` lines: whole meridians (pole to pole) and whole parallels (around).

    Examples
    --------
    >>> lines = graticule(360, 180)  # every 60 degrees of longitude and 30 of latitude
    >>> len(lines), sorted({float(line[0, 1]) for line in lines[6:]})
    (11, [-60.0, -30.0, 0.0, 30.0, 60.0])
    """
    dlon = next((s for s in STEPS if min(lon_span, 360) / s <= LINES), STEPS[-1])
    dlat = next((s for s in STEPS if min(lat_span, 180) / s <= LINES), STEPS[-1])
    lats = np.linspace(-90.0, 90.0, max(int(1800 / dlat), 360) + 1)  # every 0.5 degree
    lons = np.linspace(-180.0, 180.0, max(int(3600 / dlon), 720) + 1)  # or finer
    meridians = [np.column_stack([np.full(lats.size, x), lats]) for x in range(-180, 180, dlon)]
    parallels = [
        np.column_stack([lons, np.full(lons.size, y)]) for y in range(-90 + dlat, 90, dlat)
    ]
    return (*meridians, *parallels)


def draw_graticule(ax: Axes, lon_span: float, lat_span: float) -> LineCollection:
    """Draw :func:`graticule` on the cartopy ``GeoAxes`` ``ax``, projected by
    :func:`projected_lines`, without changing its extent (no labels).

    Parameters
    ----------
    ax : GeoAxes
        The map.
    lon_span, lat_span : float
        The extent shown, in degrees.

    Returns
    -------
    LineCollection
        The lines.

    Examples
    --------
    >>> import cartopy.crs as ccrs
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> ax = plt.figure().add_subplot(projection=ccrs.Robinson())
    >>> len(draw_graticule(ax, 360, 180).get_segments())  # 6 meridians, 5 parallels
    11
    """
    return _draw_lines(ax, graticule(lon_span, lat_span), "graticule", GRATICULE)


def _draw_lines(ax: Axes, lines: tuple[np.ndarray, ...], gid: str, style: dict) -> LineCollection:
    """``lines`` (longitude, latitude) projected by :func:`projected_lines` onto ``ax`` as one
    ``LineCollection`` named ``gid``, without changing its extent."""
    from matplotlib.collections import LineCollection

    pieces = projected_lines(ax.projection, lines)  # type: ignore[attr-defined]
    collection = LineCollection(pieces, gid=gid, **style)
    ax.add_collection(collection, autolim=False)
    return collection


__all__ = [
    "draw_cells",
    "draw_graticule",
    "draw_projected_coastlines",
    "evenly_spaced",
    "graticule",
    "projected_lines",
    "sample_cells",
]
