"""Which cells of a regular latitude/longitude grid a lon/lat box holds, as CDO selects them.

CDO's ``sellonlatbox,west,east,south,north`` (``Selbox.cc``, regular 2-D grids) keeps the
cells whose centres lie in the box, edges included, and returns them in this order:

1. ``east`` is moved by whole turns into ``(west, west + 360]`` (equal edges: the whole
   circle), then both edges by whole turns so that ``west`` lies in ``[x0, x0 + 360)``, where
   ``x0`` is the grid's first longitude;
2. the cells with ``west <= x <= east`` come first, then those with
   ``west - 360 <= x <= east - 360`` (the part of a box that runs past the grid's seam), less
   a last one that repeats the first (a grid that holds both 0 and 360);
3. the longitudes written are "corrected": when the first exceeds the last, those from 180
   on lose 360, any below -180 gains 360 and any above 360 loses 360, and a value below
   its left neighbour then gains 360. A box across the seam of a 0..360 grid thus comes
   back in -180..180 (``350,10`` gives -10, 0, 10), one across the dateline of a
   -180..180 grid in 0..360 (``170,-170`` gives 170, 180, 190).

Latitudes keep the grid's order (descending for ERA5). :func:`box_indices` reproduces
steps 1-2 as index arrays and :func:`cdo_longitudes` step 3, so that the selection is an
``isel`` (lazy, no data read) whose coordinates equal CDO's output.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pangeo_hpc.errors import InputError


def _pair(value: Sequence[float], what: str, recipe: str) -> tuple[float, float]:
    """``value`` as two finite floats, else an InputError naming ``what``."""
    try:
        a, b = (float(v) for v in value)
    except (TypeError, ValueError):
        raise InputError(
            f"{recipe}: {what}={value!r} is not two numbers: give [{_HINT[what]}]", param=what
        ) from None
    if not (np.isfinite(a) and np.isfinite(b)):
        raise InputError(f"{recipe}: {what}={value!r} must be finite numbers", param=what)
    return a, b


_HINT = {"lat": "south, north], e.g. [-5, 5", "lon": "west, east], e.g. [190, 240"}


def lat_indices(lats: np.ndarray, lat: Sequence[float], recipe: str) -> np.ndarray:
    """Indices of the latitudes in ``[min(lat), max(lat)]``, in the grid's order.

    Parameters
    ----------
    lats : np.ndarray
        The grid's latitudes.
    lat : Sequence[float]
        The box's two latitudes.
    recipe : str
        The step's name.

    Returns
    -------
    np.ndarray
        Indices into ``lats``.

    Raises
    ------
    InputError
        When the box holds no latitude.

    Examples
    --------
    >>> lat_indices(np.array([60.0, 30.0, 0.0, -30.0]), [45, 0], "sellonlatbox")
    array([1, 2])
    """
    south, north = sorted(_pair(lat, "lat", recipe))
    idx = np.flatnonzero((lats >= south) & (lats <= north))
    if idx.size == 0:
        raise InputError(
            f"{recipe}: lat={list(lat)!r} holds no grid latitude (the grid's latitudes are "
            f"{_extent(lats)}): give a box that holds at least one cell centre",
            param="lat",
        )
    return idx


def box_indices(lons: np.ndarray, lon: Sequence[float], recipe: str) -> np.ndarray:
    """Indices of the longitudes CDO's ``sellonlatbox`` keeps, in CDO's order.

    ``lons`` must increase (a regular grid, as CDO's loops assume).

    Parameters
    ----------
    lons : np.ndarray
        The grid's longitudes (increasing).
    lon : Sequence[float]
        The box's two longitudes.
    recipe : str
        The step's name.

    Returns
    -------
    np.ndarray
        Indices into ``lons``.

    Raises
    ------
    InputError
        When ``lons`` do not increase, or the box holds no longitude.

    Examples
    --------
    >>> lons = np.array([0.0, 90.0, 180.0, 270.0])
    >>> box_indices(lons, [-100, 10], "sellonlatbox")  # 270 (as -90) first, then 0
    array([3, 0])
    """
    west, east = _pair(lon, "lon", recipe)
    x = np.asarray(lons, dtype="f8")
    if x.size > 1 and np.any(np.diff(x) <= 0):
        raise InputError(
            f"{recipe}: lon={list(lon)!r} needs a grid whose longitudes increase; this one's "
            f"do not ({_extent(x)}): sort it first with da.sortby(<longitude name>)",
            param="lon",
        )
    if west != east:
        east -= 360 * np.floor((east - west) / 360)
        if east == west:
            east += 360
    else:
        east += 1e-5
    turns = 360 * np.floor((west - x[0]) / 360)
    west, east = west - turns, east - turns
    first = np.flatnonzero((x >= west) & (x <= east))
    second = np.flatnonzero((x >= west - 360) & (x <= east - 360))
    start = int(np.searchsorted(x, west, side="left"))  # CDO's lon21, even if none is kept
    if second.size and start < x.size and x[second[-1]] == x[start]:
        second = second[:-1]
    idx = np.concatenate([first, second])
    if idx.size == 0:
        raise InputError(
            f"{recipe}: lon={list(lon)!r} holds no grid longitude (the grid's longitudes are "
            f"{_extent(x)}, spaced {_spacing(x)}): give a wider box",
            param="lon",
        )
    return idx


def cdo_longitudes(values: np.ndarray) -> np.ndarray:
    """The longitudes CDO writes for selected cells ``values`` (step 3 above).

    Parameters
    ----------
    values : np.ndarray
        Longitudes of the selected cells, in CDO's order.

    Returns
    -------
    np.ndarray
        The longitudes CDO would write.

    Examples
    --------
    >>> cdo_longitudes(np.array([270.0, 0.0]))  # a box across the meridian
    array([-90.,   0.])
    """
    x = np.array(values, dtype="f8")
    if x.size > 1 and x[0] == x[-1]:
        x[-1] += 360
    if x[0] > x[-1]:
        x[x >= 180] -= 360
    x[x < -180] += 360
    x[x > 360] -= 360
    if x[0] > x[-1]:
        for i in range(1, x.size):
            if x[i] < x[i - 1]:
                x[i] += 360
    return x.astype(np.asarray(values).dtype)


def _extent(values: np.ndarray) -> str:
    v = np.asarray(values, dtype="f8")
    return f"{v.min():g}..{v.max():g}"


def _spacing(values: np.ndarray) -> str:
    v = np.asarray(values, dtype="f8")
    return f"{np.median(np.diff(v)):g} degrees" if v.size > 1 else "one point"
