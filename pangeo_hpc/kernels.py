"""Compiled inner loops for the reductions recipes run over every value.

Each kernel makes one pass over the data with float64 accumulators and skips NaN, where
xarray's generic ``weighted`` path makes several (fillna, notnull, two dot products).
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numba
import numpy as np
from dask.base import tokenize


@numba.njit(nogil=True, cache=True)
def _weighted_sums(x: np.ndarray, w: np.ndarray) -> np.ndarray:  # pragma: no cover - jitted
    n, m = x.shape
    out = np.zeros((n, 2))
    for i in range(n):
        num = 0.0
        den = 0.0
        for j in range(m):
            v = x[i, j]
            if v == v:  # not NaN
                num += v * w[j]
                den += w[j]
        out[i, 0] = num
        out[i, 1] = den
    return out


def weighted_nanmean(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted mean over the last ``w.ndim`` axes of ``x``, skipping NaN (float64).

    Returns NaN where every value is NaN or the weights of the valid values sum to zero.
    """
    lead = x.shape[: x.ndim - w.ndim]
    flat = np.ascontiguousarray(x.reshape(-1, w.size))
    sums = _weighted_sums(flat, np.ascontiguousarray(w, dtype="f8").ravel())
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(sums[:, 1] > 0, sums[:, 0] / sums[:, 1], np.nan)
    return mean.reshape(lead)


def weighted_nanmean_blocks(x: Any, w: np.ndarray) -> Any:
    """:func:`weighted_nanmean` of a NumPy or Dask array, block by block.

    For Dask, each block must hold whole fields (the last ``w.ndim`` axes in one chunk). The
    kernel runs on each block as it is. Dropping the field axes in the same step (with
    ``drop_axis`` or ``apply_ufunc(dask="parallelized")``) would make Dask concatenate each
    block's single chunk along those axes first: a copy of every block. So blocks keep
    length-1 field axes, removed afterwards from the (small) result.
    """
    if not isinstance(x, da.Array):
        return weighted_nanmean(x, w)
    core = tuple(range(x.ndim - w.ndim, x.ndim))
    if any(len(x.chunks[i]) != 1 for i in core):
        raise ValueError("every block must hold whole fields (one chunk along the field axes)")
    weights = da.from_array(w, chunks=w.shape, name="weights-" + tokenize(w))  # one graph key
    kept = da.map_blocks(
        _keepdims_mean,
        x,
        weights,
        chunks=(*x.chunks[: x.ndim - w.ndim], *((1,),) * w.ndim),
        dtype="f8",
        meta=np.empty((0,) * x.ndim),
    )
    return kept[(Ellipsis, *(0,) * w.ndim)]


def _keepdims_mean(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return weighted_nanmean(x, w).reshape(x.shape[: x.ndim - w.ndim] + (1,) * w.ndim)
