"""Searches on the sphere shared by the regridding methods: the source centres nearest to
each target centre and the inverse-distance weights CDO falls back to.

Points are unit vectors (x, y, z), so distances need no care at the seam of longitude or
at the poles; a k-d tree (``scipy.spatial.cKDTree``) of the source's centres answers
"the k nearest" for all targets at once, ties broken in the source's order as CDO's
search does (:func:`neighbours`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from pangeo_hpc.recipes.regrid_grids import Grid

__all__ = ["centres", "inverse_distance", "neighbours", "with_rows"]


def _unit_vectors(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """``(n, 3)`` points on the unit sphere of latitudes and longitudes in degrees."""
    phi, lam = np.deg2rad(lat.ravel()), np.deg2rad(lon.ravel())
    return np.stack([np.cos(phi) * np.cos(lam), np.cos(phi) * np.sin(lam), np.sin(phi)], 1)


def centres(grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """Latitude and longitude of every cell, flattened in the data's order.

    Parameters
    ----------
    grid : Grid
        A grid.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        Latitudes and longitudes, flat.

    Examples
    --------
    >>> from pangeo_hpc.recipes.regrid_grids import target_grid
    >>> lat, lon = centres(target_grid("r4x2"))
    >>> lat
    array([-45., -45., -45., -45.,  45.,  45.,  45.,  45.])
    >>> lon
    array([  0.,  90., 180., 270.,   0.,  90., 180., 270.])
    """
    if grid.curvilinear:
        return grid.lat.ravel(), grid.lon.ravel()
    lat, lon = np.meshgrid(grid.lat, grid.lon, indexing="ij")
    return lat.ravel(), lon.ravel()


def neighbours(src: Grid, dst: Grid, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` source centres nearest to each target centre on the sphere, and their
    great-circle distances (radians), nearest first; equally near ones (a target halfway
    between two) in the source's order, as CDO's search returns them.

    Parameters
    ----------
    src : Grid
        The source grid.
    dst : Grid
        The target grid.
    k : int
        How many neighbours.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        Source indices and great-circle distances (radians), ``(targets, k)`` each.

    Examples
    --------
    >>> from pangeo_hpc.recipes.regrid_grids import target_grid
    >>> src = target_grid("r4x2")  # 4 x 2 cells: lat -45, 45; lon 0, 90, 180, 270
    >>> dst = target_grid({"lat": [-10, 10, 20], "lon": [30, 60, 30]})  # one cell at (0, 45)
    >>> index, distance = neighbours(src, dst, 2)
    >>> index, distance.round(6)  # two of four equally near: the source's order
    (array([[0, 1]]), array([[1.047198, 1.047198]]))
    """
    from scipy.spatial import cKDTree

    points = _unit_vectors(*centres(src))
    k = min(k, src.size)
    more = min(2 * k, src.size)
    chord, near = cKDTree(points).query(_unit_vectors(*centres(dst)), k=more)
    chord, near = chord.reshape(-1, more), near.reshape(-1, more)
    # ties: distances equal to 1e-9 relative form one rank, ordered by source index
    step = np.diff(chord, axis=1) > 1e-9 * np.maximum(chord[:, 1:], 1e-12)
    rank = np.concatenate([np.zeros((chord.shape[0], 1), int), np.cumsum(step, 1)], 1)
    order = np.lexsort((near, rank), axis=1)[:, :k]
    chord = np.take_along_axis(chord, order, 1)
    return np.take_along_axis(near, order, 1), 2 * np.arcsin(np.clip(chord / 2, 0, 1))


def inverse_distance(src: Grid, dst: Grid, rows: np.ndarray) -> sp.csr_matrix:
    """Rows ``rows`` of the weights 1/distance of the four nearest source centres, as
    CDO ``remapbil`` falls back to where no four centres surround a target.

    Parameters
    ----------
    src : Grid
        The source grid.
    dst : Grid
        The target grid.
    rows : np.ndarray
        Target rows.

    Returns
    -------
    sp.csr_matrix
        Weights, one row per target cell.

    Examples
    --------
    >>> from pangeo_hpc.recipes.regrid_grids import target_grid
    >>> src = target_grid("r4x2")  # 4 x 2 cells: lat -45, 45; lon 0, 90, 180, 270
    >>> dst = target_grid({"lat": [-10, 10, 20], "lon": [30, 60, 30]})  # one cell at (0, 45)
    >>> inverse_distance(src, dst, np.array([0])).toarray()  # four equally near
    array([[0.25, 0.25, 0.  , 0.  , 0.25, 0.25, 0.  , 0.  ]])
    """
    idx, dist = neighbours(src, dst, 4)
    idx, dist = idx[rows], dist[rows]
    w = 1.0 / np.maximum(dist, 1e-12)
    w /= w.sum(1, keepdims=True)
    k = idx.shape[1]
    return sp.csr_matrix((w.ravel(), (np.repeat(rows, k), idx.ravel())), shape=(dst.size, src.size))


def with_rows(m: sp.csr_matrix, rows: np.ndarray, extra: sp.csr_matrix) -> sp.csr_matrix:
    """``m`` with its empty rows ``rows`` taken from ``extra`` (entries of weight 0 kept:
    sparse products and sums would drop them).

    Parameters
    ----------
    m : sp.csr_matrix
        Weights.
    rows : np.ndarray
        Its empty rows to fill.
    extra : sp.csr_matrix
        Weights to take them from.

    Returns
    -------
    sp.csr_matrix
        The combined weights.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> m = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 0.0]]))  # row 1 empty
    >>> extra = sp.csr_matrix(np.array([[0.0, 0.0], [0.5, 0.5]]))
    >>> with_rows(m, np.array([1]), extra).toarray()
    array([[1. , 0. ],
           [0.5, 0.5]])
    """
    a, b = m.tocoo(), extra.tocoo()
    keep = np.isin(b.row, rows)
    data = np.concatenate([a.data, b.data[keep]])
    ij = (np.concatenate([a.row, b.row[keep]]), np.concatenate([a.col, b.col[keep]]))
    return sp.coo_matrix((data, ij), shape=m.shape).tocsr()
