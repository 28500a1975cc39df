"""Which points of a latitude/longitude grid lie in a polygon, as regionmask decides it.

The rules are those of regionmask 0.13 (``regionmask/core/mask.py``: ``_mask``,
``_mask_shapely``, ``_mask_edgepoints_shapely``), so that a region shipped with this
package selects the cells regionmask would select from the same vertices, without
regionmask, shapely or rasterio:

1. Longitudes are wrapped to [-180, 180), the convention of the polygons
   (regionmask's ``_wrapAngle180``), whatever the grid's own convention.
2. A point is tested shifted by -1e-8 degrees of longitude and -1e-10 degrees of latitude:
   a point on the edge between two neighbouring regions then belongs to exactly one of
   them (the one just south-west of it).
3. A point that is outside after that and lies on the seam (longitude -180, or 0 on a
   grid without negative longitudes) is tested again 360 degrees east, and a point at the
   South Pole is tested at -90 + 1e-10: a region that touches 180 E or -90 N holds them.

The test itself is the even-odd (crossing number) rule on the plane of longitude and
latitude, for a rectilinear grid at once: along each latitude, the longitudes where the
polygon's edges cross it (an edge counts when its ends lie on either side, one end
strictly above: the half-open rule, so a vertex is counted once), and a point is inside
when an odd number of crossings lie east of it. A region of several parts (a multipolygon,
such as one that crosses 180 E as two) counts the crossings of all its rings together,
which is right as long as the parts do not overlap. The cost is one pass over the grid
per edge.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: regionmask's shift of every tested point, longitude and latitude (degrees)
SHIFT_LON, SHIFT_LAT = 1e-8, 1e-10


def _wrap180(lon: np.ndarray) -> np.ndarray:
    """Longitudes in [-180, 180), others untouched (regionmask's ``_wrapAngle180``).

    >>> _wrap180(np.array([0.0, 179.5, 180.0, 359.75, -180.0])).tolist()
    [0.0, 179.5, -180.0, -0.25, -180.0]
    """
    out = np.array(lon, dtype="f8")
    far = (out < -180) | (out >= 180)
    out[far] = np.mod(out[far] + 180, 360) - 180
    return out


def polygon_mask(rings: Sequence[np.ndarray], lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """The grid points inside the polygon(s) ``rings``, with regionmask's edge rules.

    Parameters
    ----------
    rings : sequence of array (n, 2)
        The polygon's rings (its parts), each as (longitude, latitude) vertices in
        -180..180, closed or not.
    lon, lat : 1-D array
        The grid's longitudes (either convention, any order) and latitudes (any order).

    Returns
    -------
    ndarray of bool, shape (lat.size, lon.size)
        True where the point is inside.

    Examples
    --------
    >>> square = [np.array([[-10.0, -10.0], [10.0, -10.0], [10.0, 10.0], [-10.0, 10.0]])]
    >>> polygon_mask(square, np.array([-10.0, 0.0, 10.0]), np.array([0.0])).astype(int)
    array([[0, 1, 1]])
    """
    lon = _wrap180(np.asarray(lon, dtype="f8"))
    lat = np.asarray(lat, dtype="f8")
    inside = _even_odd(rings, lon - SHIFT_LON, lat - SHIFT_LAT)
    seam = np.isclose(lon, -180.0) if np.nanmin(lon) < 0 else np.isclose(lon, 0.0)
    pole = np.isclose(lat, -90.0)
    if seam.any() or pole.any():
        again = _even_odd(
            rings,
            lon - SHIFT_LON + 360.0 * seam,
            np.where(pole, -90.0 + SHIFT_LAT, lat - SHIFT_LAT),
        )
        inside |= again & (pole[:, None] | seam[None, :])
    return inside


def _even_odd(rings: Sequence[np.ndarray], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Crossing-number test of every (y, x) of the grid against all edges of ``rings``."""
    inside = np.zeros((y.size, x.size), dtype=bool)
    for ring in rings:
        xy = np.asarray(ring, dtype="f8")
        x1, y1 = xy[:, 0], xy[:, 1]
        x2, y2 = np.roll(x1, -1), np.roll(y1, -1)
        for a, b, c, d in zip(x1, y1, x2, y2, strict=True):
            rows = (b > y) != (d > y)  # the edge crosses these latitudes (half-open)
            if not rows.any():
                continue
            crossing = a + (y[rows] - b) * (c - a) / (d - b)
            inside[rows] ^= x[None, :] < crossing[:, None]
    return inside
