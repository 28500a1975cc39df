"""Bilinear weights from a curvilinear source (2-D latitude and longitude), as CDO
``remapbil`` computes them (its SCRIP-derived search and weights, read from CDO 2.x's
``remap_search.cc`` and ``remap_bilinear.cc`` and checked against ``cdo remapbil``).

For each target centre P (all angles in radians, longitudes in [0, 2 pi)):

1. **the quadrilateral around P.** The source centre nearest to P on the sphere
   (:func:`~pangeo_hpc.recipes.regrid_search.neighbours`) is a corner of four
   quadrilaterals of centres ``(i, j), (i+1, j), (i+1, j+1), (i, j+1)``: the ones to its
   south-west, south-east, north-west and north-east, tried in that order (across the
   seam of a cyclic grid, :func:`cyclic`). P is inside one when the cross products of its
   four sides with the vectors from their starts to P, in (longitude, latitude), are all
   of one sign (zero counts as either); corner longitudes are first moved by whole turns
   to within half a turn of P (the first) and of the first corner (the others).
2. **its local coordinates.** The bilinear map of the unit square onto that
   quadrilateral (in longitude and latitude) is inverted by Newton's method from
   (1/2, 1/2), to 1e-10, at most 100 steps; the four weights are
   ``(1-i)(1-j), i(1-j), i j, (1-i) j``. A missing corner masks the target.
3. **no quadrilateral** (the polar cap of a grid, a target beyond the grid's edge, or a
   distorted grid whose enclosing quadrilateral does not touch the nearest centre): on a
   cyclic (global) source, the inverse-distance mean of the four nearest centres over
   those that are valid, as CDO extrapolates; on a regional one the target is missing.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from pangeo_hpc.recipes.regrid_grids import Grid
from pangeo_hpc.recipes.regrid_search import centres, inverse_distance, neighbours, with_rows

__all__ = ["bilinear", "cyclic"]

_TURN = 2.0 * np.pi
#: Newton's method: converged when both steps are below this; at most _MAX_ITER steps
_CONVERGE = 1e-10
_MAX_ITER = 100
#: a cross product within this of 0 is neither sign (P on a side)
_CROSS_EPS = 1e-20


def cyclic(lon: np.ndarray) -> bool:
    """Whether a curvilinear grid's first column follows its last (in every row, the gap
    from the last longitude to the first is the step from the first to the second, to
    half a step), as CDO decides that its longitude wraps.

    Parameters
    ----------
    lon : np.ndarray
        2-D longitudes (y, x).

    Returns
    -------
    bool
        Whether the longitude wraps.

    Examples
    --------
    >>> lon = np.array([[0.0, 90.0, 180.0, 270.0]] * 2)
    >>> cyclic(lon), cyclic(lon[:, :3])  # 270 -> 0 is one step; 180 -> 0 is not
    (True, False)
    """
    if lon.shape[1] < 2:
        return False
    step = np.mod(lon[:, 1] - lon[:, 0], 360.0)
    gap = np.mod(lon[:, 0] - lon[:, -1], 360.0)
    return bool(np.all((step > 0) & (np.abs(gap - step) < 0.5 * step)))


def _near(d: np.ndarray, half: float) -> np.ndarray:
    """``d`` moved by a whole turn if it is beyond ``half`` on either side."""
    return np.where(d > half, d - _TURN, np.where(d < -half, d + _TURN, d))


def _inside(
    plon: np.ndarray, plat: np.ndarray, lons: np.ndarray, lats: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Which points lie in their quadrilateral ``(n, 4)``, and the corners' longitudes
    as moved for the test (see the module's description, step 1)."""
    lons = lons.copy()
    lons[:, 0] = plon + _near(lons[:, 0] - plon, np.pi)
    for k in range(1, 4):
        lons[:, k] = lons[:, 0] + _near(lons[:, k] - lons[:, 0], np.pi)
    positive = np.ones(plon.shape, bool)
    negative = np.ones(plon.shape, bool)
    for k in range(4):
        nxt = (k + 1) % 4
        side_lon = _near(lons[:, nxt] - lons[:, k], 1.5 * np.pi)
        to_p_lon = _near(plon - lons[:, k], 1.5 * np.pi)
        cross = side_lon * (plat - lats[:, k]) - to_p_lon * (lats[:, nxt] - lats[:, k])
        positive &= cross >= -_CROSS_EPS
        negative &= cross <= _CROSS_EPS
    return positive | negative, lons


def _local(
    plon: np.ndarray, plat: np.ndarray, lons: np.ndarray, lats: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(i, j)`` of each point in its quadrilateral's bilinear map, and which converged."""
    dth1, dth2 = lats[:, 1] - lats[:, 0], lats[:, 3] - lats[:, 0]
    dth3 = lats[:, 2] - lats[:, 1] - dth2
    dph1 = _near(lons[:, 1] - lons[:, 0], 1.5 * np.pi)
    dph2 = _near(lons[:, 3] - lons[:, 0], 1.5 * np.pi)
    dph3 = _near(lons[:, 2] - lons[:, 1], 1.5 * np.pi) - dph2
    to_p = _near(plon - lons[:, 0], 1.5 * np.pi)
    i = np.full(plon.shape, 0.5)
    j = np.full(plon.shape, 0.5)
    done = np.zeros(plon.shape, bool)
    for _ in range(_MAX_ITER):
        dthp = plat - lats[:, 0] - dth1 * i - dth2 * j - dth3 * i * j
        dphp = to_p - dph1 * i - dph2 * j - dph3 * i * j
        m1, m2 = dth1 + dth3 * j, dth2 + dth3 * i
        m3, m4 = dph1 + dph3 * j, dph2 + dph3 * i
        with np.errstate(divide="ignore", invalid="ignore"):
            det = m1 * m4 - m2 * m3
            di = (dthp * m4 - dphp * m2) / det
            dj = (dphp * m1 - dthp * m3) / det
        done |= (np.abs(di) < _CONVERGE) & (np.abs(dj) < _CONVERGE)
        if done.all():
            break
        i = np.where(done, i, i + di)
        j = np.where(done, j, j + dj)
    return i, j, done


def bilinear(src: Grid, dst: Grid) -> tuple[sp.csr_matrix, np.ndarray]:
    """Weights of CDO ``remapbil`` from the curvilinear ``src`` to ``dst`` (see the
    module's description), and the rows of inverse-distance weights (normalised by the
    valid ones when applied).

    Parameters
    ----------
    src : Grid
        The curvilinear source grid.
    dst : Grid
        The target grid.

    Returns
    -------
    tuple[sp.csr_matrix, np.ndarray]
        The weights, and the rows of inverse-distance weights.

    Examples
    --------
    >>> import xarray as xr
    >>> from pangeo_hpc.recipes.regrid_grids import source_grid, target_grid
    >>> lat = np.array([[0.0] * 4, [10.0] * 4])  # 2-D: curvilinear
    >>> lon = np.array([[0.0, 90.0, 180.0, 270.0]] * 2)
    >>> src = source_grid(xr.DataArray(np.zeros((2, 4)), coords={"nav_lat": (("y", "x"), lat),
    ...                                 "nav_lon": (("y", "x"), lon)}, dims=("y", "x")))
    >>> weights, fallback = bilinear(src, target_grid({"lat": [0, 10, 10], "lon": [40, 60, 20]}))
    >>> weights.toarray().round(4), fallback  # centre (5, 50) between (0..10, 0..90)
    (array([[0.2222, 0.2778, 0.    , 0.    , 0.2222, 0.2778, 0.    , 0.    ]]), array([False]))
    """
    ny, nx = src.shape
    wraps = cyclic(src.lon)
    slat = np.deg2rad(src.lat).ravel()
    slon = np.mod(np.deg2rad(src.lon), _TURN).ravel()
    tlat, tlon = (np.deg2rad(a) for a in centres(dst))
    tlon = np.mod(tlon, _TURN)
    j0, i0 = np.divmod(neighbours(src, dst, 1)[0][:, 0], nx)
    found = np.zeros(dst.size, bool)
    corners = np.zeros((dst.size, 4), np.int64)
    moved = np.zeros((dst.size, 4))
    for k in range(4):  # south-west, south-east, north-west, north-east of the nearest
        west = np.where(i0 > 0, i0 - 1, nx - 1 if wraps else 0)
        i = west if k in (0, 2) else i0
        j = np.where(j0 > 0, j0 - 1, 0) if k in (0, 1) else j0
        ip1 = np.where(i < nx - 1, i + 1, 0 if wraps else i)
        jp1 = np.where(j < ny - 1, j + 1, j)
        idx = np.stack([j * nx + i, j * nx + ip1, jp1 * nx + ip1, jp1 * nx + i], 1)
        todo = np.flatnonzero(~found & (i != ip1) & (j != jp1))
        yes, lons = _inside(tlon[todo], tlat[todo], slon[idx[todo]], slat[idx[todo]])
        hit = todo[yes]
        corners[hit], moved[hit] = idx[hit], lons[yes]
        found[hit] = True
    rows = np.flatnonzero(found)
    i, j, ok = _local(tlon[rows], tlat[rows], moved[rows], slat[corners[rows]])
    rows, i, j = rows[ok], i[ok], j[ok]
    w = np.stack([(1 - i) * (1 - j), i * (1 - j), i * j, (1 - i) * j], 1)
    # zero weights stay: a missing corner masks the target even where its weight is 0
    m = sp.coo_matrix(
        (w.ravel(), (np.repeat(rows, 4), corners[rows].ravel())), shape=(dst.size, src.size)
    ).tocsr()
    mean_rows = np.zeros(dst.size, bool)
    if wraps:  # a global source: CDO's inverse-distance fallback where no quadrilateral is
        rest = np.setdiff1d(np.arange(dst.size), rows)
        if rest.size:
            m = with_rows(m, rest, inverse_distance(src, dst, rest))
            mean_rows[rest] = True
    return m, mean_rows
