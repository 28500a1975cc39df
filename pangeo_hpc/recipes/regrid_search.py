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
    """
    a, b = m.tocoo(), extra.tocoo()
    keep = np.isin(b.row, rows)
    data = np.concatenate([a.data, b.data[keep]])
    ij = (np.concatenate([a.row, b.row[keep]]), np.concatenate([a.col, b.col[keep]]))
    return sp.coo_matrix((data, ij), shape=m.shape).tocsr()
