"""Regridding weights as sparse matrices: target cells x source cells, in the grids' order.

Each method gives a :class:`Weights`: a ``scipy.sparse`` CSR matrix ``W`` (rows: target
cells, columns: source cells, both flattened latitude-major in the order the data are
stored) and, per target cell, how missing source values count (:attr:`Weights.mean_rows`).
Applied to a field ``f`` with valid cells ``v`` (not NaN) and ``f0 = f`` where valid, else 0:

* mean rows (conservative; bilinear's inverse-distance rows): ``(W @ f0) / (W @ v)``,
  missing where ``W @ v`` is 0: the mean over the valid part of the overlap, as CDO
  ``remapcon`` normalises by default (``FRACAREA``). A target cell that overlaps no valid
  source cell is missing.
* the other rows (nearest, bilinear): ``W @ f0`` where every source cell with a weight
  (even a weight of 0) is valid, else missing (a masked neighbour masks the target, as
  in CDO).

Methods:

* :func:`conservative` (first order, CDO ``remapcon``): the weight of a source cell is
  the area it shares with the target cell, exact for cells bounded by meridians and
  circles of latitude: the overlap in longitude (radians, periodic) times the overlap in
  sin(latitude). Both factors are 1-D, so ``W`` is the Kronecker product of a latitude
  and a longitude overlap matrix, built in well under a second for 0.25 degrees to 1.
* :func:`nearest` (CDO ``remapnn``): the source centre at the least great-circle distance
  (a k-d tree of points on the unit sphere); rectilinear or curvilinear sources.
* :func:`bilinear` (CDO ``remapbil``): linear in longitude (periodic on a global source)
  and in latitude between the four surrounding source centres; from a curvilinear
  source, the inverse of the bilinear map of the quadrilateral of centres around the
  target (:mod:`~pangeo_hpc.recipes.regrid_curvilinear`).
* conservative from a curvilinear source is refused (:func:`_refusal`).

A target cell outside a regional source (no overlap; a centre outside the source's
cells) is missing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes import regrid_curvilinear
from pangeo_hpc.recipes.regrid_grids import Grid
from pangeo_hpc.recipes.regrid_search import inverse_distance, neighbours, with_rows

__all__ = ["METHODS", "Weights", "bilinear", "build", "conservative", "nearest"]

#: the methods, as a recipe names them
METHODS = ("conservative", "nearest", "bilinear")
_RAD = np.pi / 180.0
#: overlaps smaller than this share of a cell's width are rounding, not overlap
_TINY = 1e-10


@dataclass(frozen=True, eq=False)
class Weights:
    """A sparse matrix of weights and how missing values count in each row.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix
        ``(target cells, source cells)``, float64.
    mean_rows : numpy.ndarray
        Bool per target cell: normalised by the valid weights (else missing if any
        weighted source value is).

    Examples
    --------
    >>> from pangeo_hpc.recipes.regrid_grids import target_grid
    >>> w = build(target_grid("r4x2"), target_grid("r2x2"), "conservative")
    >>> w.matrix.shape, w.mean_rows
    ((4, 8), array([ True,  True,  True,  True]))
    """

    matrix: sp.csr_matrix
    mean_rows: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        """The CSR arrays, to store (no pickle).

        Returns
        -------
        dict[str, np.ndarray]
            Name -> array.

        Examples
        --------
        >>> from pangeo_hpc.recipes.regrid_grids import target_grid
        >>> w = build(target_grid("r4x2"), target_grid("r2x2"), "nearest")
        >>> sorted(w.arrays())
        ['data', 'indices', 'indptr', 'mean_rows', 'shape']
        """
        m = self.matrix
        return {
            "data": m.data,
            "indices": m.indices,
            "indptr": m.indptr,
            "shape": np.asarray(m.shape, "i8"),
            "mean_rows": self.mean_rows,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Weights:
        """The weights :meth:`arrays` gave; ValueError if they are not well-formed.

        Parameters
        ----------
        arrays : dict[str, np.ndarray]
            What :meth:`arrays` gave.

        Returns
        -------
        Weights
            The weights.

        Raises
        ------
        ValueError
            When the arrays are not well-formed.

        Examples
        --------
        >>> from pangeo_hpc.recipes.regrid_grids import target_grid
        >>> w = build(target_grid("r4x2"), target_grid("r2x2"), "nearest")
        >>> Weights.from_arrays(w.arrays()).matrix.shape
        (4, 8)
        """
        shape = tuple(int(n) for n in arrays["shape"])
        m = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=shape)
        if m.data.dtype != np.float64 or not np.isfinite(m.data).all():
            raise ValueError("weights must be finite float64")
        m.check_format(full_check=True)
        rows = np.asarray(arrays["mean_rows"])
        if rows.dtype != bool or rows.shape != (m.shape[0],):
            raise ValueError("mean_rows must be one bool per target cell")
        return cls(m, rows)


def build(src: Grid, dst: Grid, method: str) -> Weights:
    """The weights of ``method`` from ``src`` to ``dst``.

    Parameters
    ----------
    src : Grid
        The source grid.
    dst : Grid
        The target grid.
    method : str
        ``bilinear``, ``conservative`` or ``nearest``.

    Returns
    -------
    Weights
        The weights.

    Raises
    ------
    InputError
        For ``conservative`` from a curvilinear source (see :func:`_refusal`).

    Examples
    --------
    >>> from pangeo_hpc.recipes.regrid_grids import target_grid
    >>> w = build(target_grid("r4x2"), target_grid("r2x2"), "conservative")
    >>> m = w.matrix.toarray()  # shared areas; a row divided by its sum gives the mean
    >>> (m @ np.arange(8.0) / m.sum(axis=1)).round(6)  # cell 0: (0 + 1 / 2 + 3 / 2) / 2
    array([1., 2., 5., 6.])
    """
    why = _refusal(src, method)
    if why is not None:
        raise InputError(why, param="method")
    if method == "conservative":
        return Weights(conservative(src, dst), np.ones(dst.size, bool))
    if method == "nearest":
        return Weights(nearest(src, dst), np.zeros(dst.size, bool))
    if src.curvilinear:
        m, mean_rows = regrid_curvilinear.bilinear(src, dst)
    else:
        m, mean_rows = bilinear(src, dst)
    return Weights(m, mean_rows)


def _refusal(src: Grid, method: str) -> str | None:
    """Why ``method`` cannot regrid from ``src`` (one line naming the value and the fix),
    or ``None``. Conservative remapping needs the corners of each cell, which a
    curvilinear grid's 2-D centres do not give (CDO ``remapcon`` reads them from
    ``lat_bnds``/``lon_bnds`` of shape (ny, nx, 4)); regrid does not take those.

    Parameters
    ----------
    src : Grid
        The source grid.
    method : str
        ``bilinear``, ``conservative`` or ``nearest``.

    Returns
    -------
    str | None
        One line, or ``None``.
    """
    if src.curvilinear and method == "conservative":
        return (
            f"regrid: method={method!r} needs a rectilinear source grid; this one is "
            "curvilinear (2-D latitude and longitude): use method='bilinear' or "
            "method='nearest'"
        )
    return None


def _interval_overlaps(dst: np.ndarray, src: np.ndarray, *, period: float | None) -> np.ndarray:
    """Dense ``(len(dst), len(src))`` lengths of the overlaps of intervals ``(n, 2)``;
    ``period``: the axis is periodic (each interval at most one period long)."""
    a_lo, a_hi = dst[:, :1], dst[:, 1:]
    b_lo, b_hi = src[:, 0], src[:, 1]
    if period is None:
        out = np.minimum(a_hi, b_hi) - np.maximum(a_lo, b_lo)
    else:  # move each source interval to start in [a_lo, a_lo + period)
        lo = a_lo + np.mod(b_lo - a_lo, period)
        hi = lo + (b_hi - b_lo)
        out = np.clip(np.minimum(a_hi, hi) - lo, 0, None)
        out += np.clip(np.minimum(a_hi, hi - period) - a_lo, 0, None)  # wrapped around
    width = np.minimum(a_hi - a_lo, (b_hi - b_lo)[None, :])
    out[out <= _TINY * width] = 0.0
    return np.clip(out, 0, None)


def conservative(src: Grid, dst: Grid) -> sp.csr_matrix:
    """Shared areas (steradians) of target and source cells (see the module's description).

    Parameters
    ----------
    src : Grid
        The source grid.
    dst : Grid
        The target grid.

    Returns
    -------
    sp.csr_matrix
        Weights, one row per target cell.

    Examples
    --------
    >>> from pangeo_hpc.recipes.regrid_grids import target_grid
    >>> shared = conservative(target_grid("r4x2"), target_grid("r2x2"))
    >>> (shared.toarray()[0] / (4 * np.pi)).round(4)  # shares of the sphere's area
    array([0.125 , 0.0625, 0.    , 0.0625, 0.    , 0.    , 0.    , 0.    ])
    """
    sin_d = np.sin(np.deg2rad(dst.lat_bounds))
    sin_s = np.sin(np.deg2rad(src.lat_bounds))
    lat = _interval_overlaps(sin_d, sin_s, period=None)
    lon = _interval_overlaps(dst.lon_bounds, src.lon_bounds, period=360.0)
    lon_s = sp.csr_matrix(np.deg2rad(lon))
    return sp.kron(sp.csr_matrix(lat), lon_s, format="csr")


def _inside(src: Grid, dst: Grid) -> np.ndarray:
    """Which target centres lie inside the cells of a rectilinear source (all of them for
    a global one), flattened as the target's cells (a rectilinear target)."""
    if src.curvilinear:
        return np.ones(dst.size, bool)
    south, north = src.lat_bounds.min(), src.lat_bounds.max()
    rows = (dst.lat >= south - 1e-9) & (dst.lat <= north + 1e-9)
    west = src.lon_bounds[:, 0]
    width = src.lon_bounds[:, 1] - west
    cols = (np.mod(dst.lon[:, None] - west[None, :], 360.0) <= width[None, :] + 1e-9).any(1)
    return (rows[:, None] & cols[None, :]).ravel()


def nearest(src: Grid, dst: Grid) -> sp.csr_matrix:
    """One weight of 1 per target cell, on the source centre nearest to its centre on the
    sphere (anywhere: beyond a regional source too, as CDO).

    Parameters
    ----------
    src : Grid
        The source grid.
    dst : Grid
        The target grid.

    Returns
    -------
    sp.csr_matrix
        Weights, one row per target cell.

    Examples
    --------
    >>> from pangeo_hpc.recipes.regrid_grids import target_grid
    >>> src = target_grid("r4x2")  # 4 x 2 cells: lat -45, 45; lon 0, 90, 180, 270
    >>> nearest(src, target_grid({"lat": [-10, 10, 20], "lon": [30, 60, 30]})).toarray()
    array([[1., 0., 0., 0., 0., 0., 0., 0.]])
    """
    idx, _ = neighbours(src, dst, 1)
    rows = np.arange(dst.size)  # as CDO's remapnn, beyond a regional source too
    return sp.csr_matrix((np.ones(rows.size), (rows, idx[rows, 0])), shape=(dst.size, src.size))


def _linear_1d(
    x: np.ndarray, xs: np.ndarray, *, period: float | None, closed: bool = False
) -> sp.csr_matrix:
    """``(len(x), len(xs))`` weights of linear interpolation from points ``xs`` (any
    order) to ``x``, moved by whole ``period`` into their range; rows of points outside
    ``xs`` are empty (``closed``: the axis goes round, and none are)."""
    # in radians, a target moved by whole turns into the source's range, as CDO does it:
    # where a target falls exactly on a source point, the box is [that point's left
    # neighbour, the point], and which side a moved target falls is decided to the last bit
    order = np.argsort(xs)
    s = xs[order] * _RAD
    x = np.asarray(x, "f8") * _RAD
    if period is not None and closed:  # into [s0, s0 + turn]; the first point again at its end
        turn = period * _RAD
        x = np.where(x < s[0], x + turn, x)
        x = np.where(x > s[0] + turn, x - turn, x)
        s = np.append(s, s[0] + turn)
        order = np.append(order, order[0])
    elif period is not None:  # a region: a target beyond either end moved by a turn
        turn = period * _RAD
        x = np.where(x > s[-1], x - turn, x)
        x = np.where(np.abs(x - s[0]) < 1e-12, s[0], x)  # on the end but for the rounding
        x = np.where(x < s[0], x + turn, x)
        x = np.where(np.abs(x - s[-1]) < 1e-12, s[-1], x)
    right = np.clip(np.searchsorted(s, x, side="left"), 1, s.size - 1)
    left = right - 1
    t = (x - s[left]) / (s[right] - s[left])
    ok = (x >= s[0]) & (x <= s[-1])
    rows = np.flatnonzero(ok)
    cols = np.concatenate([order[left[ok]], order[right[ok]]])
    vals = np.concatenate([1.0 - t[ok], t[ok]])
    # zero weights stay: a missing neighbour masks the target even where its weight is 0
    return sp.coo_matrix((vals, (np.tile(rows, 2), cols)), shape=(x.size, xs.size)).tocsr()


def bilinear(src: Grid, dst: Grid) -> tuple[sp.csr_matrix, np.ndarray]:
    """Weights linear in latitude and in longitude between the four source centres
    around each target centre (see the module's description), and the rows of
    inverse-distance weights beyond the outermost latitudes of a global source.

    Parameters
    ----------
    src : Grid
        The source grid.
    dst : Grid
        The target grid.

    Returns
    -------
    tuple[sp.csr_matrix, np.ndarray]
        The weights, and the rows of inverse-distance weights.

    Examples
    --------
    >>> from pangeo_hpc.recipes.regrid_grids import target_grid
    >>> src = target_grid("r4x2")  # 4 x 2 cells: lat -45, 45; lon 0, 90, 180, 270
    >>> weights, fallback = bilinear(src, target_grid({"lat": [-10, 10, 20], "lon": [30, 60, 30]}))
    >>> weights.toarray(), fallback  # (0, 45): halfway between four centres
    (array([[0.25, 0.25, 0.  , 0.  , 0.25, 0.25, 0.  , 0.  ]]), array([False]))
    """
    span = np.ptp(np.append(src.lon_bounds[:, 0], src.lon_bounds[:, 1]))
    periodic = span >= 360.0 - 1e-6
    lat = _linear_1d(dst.lat, src.lat, period=None)
    lon = _linear_1d(dst.lon, src.lon, period=360.0, closed=periodic)
    m = sp.kron(lat, lon, format="csr")
    outside = np.flatnonzero(np.diff(m.indptr) == 0)
    mean_rows = np.zeros(dst.size, bool)
    # inside the source's cells but not between four centres (beyond the outermost
    # latitudes of a global grid, the outer half cells of a region): CDO's fallback
    outside = outside[_inside(src, dst)[outside]]
    if outside.size:
        m = with_rows(m, outside, inverse_distance(src, dst, outside))
        mean_rows[outside] = True
    return m, mean_rows
