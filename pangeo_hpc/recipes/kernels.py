"""Compiled inner loops for the reductions recipes run over every value.

Each kernel makes one pass over the data with float64 accumulators and skips NaN, where
xarray's generic ``weighted`` path makes several (fillna, notnull, two dot products).
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize

from pangeo_hpc.jit import njit


@njit
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


def weighted_nanmean(x: np.ndarray, w: np.ndarray, min_share: float = 0.0) -> np.ndarray:
    """Weighted mean over the last ``w.ndim`` axes of ``x``, skipping NaN (float64).

    Returns NaN where every value is NaN or the weights of the valid values sum to zero,
    and where they are less than ``min_share`` of all the weights (to a relative 1e-12,
    so that ``min_share=1`` keeps complete fields whatever the order of the sums).
    """
    lead = x.shape[: x.ndim - w.ndim]
    flat = np.ascontiguousarray(x.reshape(-1, w.size))
    wf = np.ascontiguousarray(w, dtype="f8").ravel()
    sums = _weighted_sums(flat, wf)
    enough = sums[:, 1] > 0
    if min_share > 0:
        enough &= sums[:, 1] >= min_share * wf.sum() * (1 - 1e-12)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(enough, sums[:, 0] / sums[:, 1], np.nan)
    return mean.reshape(lead)


def weighted_nanmean_blocks(x: Any, w: np.ndarray, min_share: float = 0.0) -> Any:
    """:func:`weighted_nanmean` of a NumPy or Dask array, block by block.

    For Dask, each block must hold whole fields (the last ``w.ndim`` axes in one chunk). The
    kernel runs on each block as it is: ``map_blocks(drop_axis=...)`` or
    ``apply_ufunc(dask="parallelized")`` would make Dask concatenate each block's single
    chunk along the dropped axes first, a copy of every block. With ``concatenate=False``
    the block arrives as it is, wrapped in one list per dropped axis.
    """
    if not isinstance(x, da.Array):
        return weighted_nanmean(x, w, min_share)
    lead = tuple(range(x.ndim - w.ndim))
    core = tuple(range(x.ndim - w.ndim, x.ndim))
    if any(len(x.chunks[i]) != 1 for i in core):
        raise ValueError("every block must hold whole fields (one chunk along the field axes)")
    weights = da.from_array(w, chunks=w.shape, name="weights-" + tokenize(w))  # one graph key
    return da.blockwise(
        _mean_of_block,
        lead,
        x,
        lead + core,
        weights,
        core,
        min_share,
        None,
        concatenate=False,
        dtype="f8",
        meta=np.empty((0,) * len(lead)),
    )


def _mean_of_block(x: Any, w: Any, min_share: float = 0.0) -> np.ndarray:
    while isinstance(x, list):  # one list level per dropped axis, each of one block
        (x,) = x
    while isinstance(w, list):
        (w,) = w
    return weighted_nanmean(x, w, min_share)


@njit
def _group_sums(x: np.ndarray, codes: np.ndarray, k: int) -> tuple:  # pragma: no cover - jitted
    n, m = x.shape
    sums = np.zeros((k, m))
    counts = np.zeros((k, m), dtype=np.int32)
    for i in range(n):
        g = codes[i]
        for j in range(m):
            v = x[i, j]
            if v == v:  # not NaN
                sums[g, j] += v
                counts[g, j] += 1
    return sums, counts


def group_sums(x: np.ndarray, codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """NaN-skipping sums (float64) and counts (int32) of the rows of ``x`` (time, cells) in
    each of the ``k`` groups ``codes`` (0..k-1 per row) names: one compiled pass."""
    return _group_sums(x, codes, k)


def _partial(block: np.ndarray, codes: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per group present in ``block`` (groups ``codes`` along axis 0): NaN-skipping sums and
    counts over that axis, float64 and int32."""
    present, local = np.unique(codes, return_inverse=True)
    flat = np.ascontiguousarray(block.reshape(block.shape[0], -1))
    sums, counts = _group_sums(flat, local.astype(np.intp), len(present))
    return {int(g): (sums[i], counts[i]) for i, g in enumerate(present)}


def _combine(parts: list[dict], group: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    s, c = parts[0][group]
    s, c = s.copy(), c.copy()
    for p in parts[1:]:
        s += p[group][0]
        c += p[group][1]
    return {group: (s, c)}


def _finalize(parts: list[dict], group: int, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    s, c = _combine(parts, group)[group]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(c > 0, s / c, np.nan)
    return mean.astype(dtype, copy=False).reshape((1, *shape))


def group_nanmean_blocks(x: Any, codes: np.ndarray, split_every: int = 8) -> Any:
    """Mean over axis 0 within each group, skipping NaN: row ``g`` of the result is the mean
    of the rows ``i`` of ``x`` with ``codes[i] == g`` (``codes``: 0..G-1, every group
    present).

    For Dask, blocks must span every other axis whole. Each block yields sums and counts of
    just the groups it holds (one compiled pass, float64); per group, those of the blocks
    that hold it are added in a tree of ``split_every`` and divided. No block is copied,
    transposed or sent whole to another worker. Floating results keep ``x``'s dtype.
    """
    codes = np.asarray(codes)
    if codes.shape != (x.shape[0],):
        raise ValueError(f"codes has shape {codes.shape}, need ({x.shape[0]},)")
    groups = int(codes.max()) + 1 if codes.size else 0
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype("f8")
    field = tuple(x.shape[1:])
    if not isinstance(x, da.Array):
        part = _partial(np.asarray(x), codes)
        return np.concatenate([_finalize([part], g, field, dtype) for g in range(groups)])
    if any(len(c) != 1 for c in x.chunks[1:]):
        raise ValueError("every block must span all axes but the first (one chunk each)")
    from dask.highlevelgraph import HighLevelGraph

    token = tokenize(x, codes, split_every)
    part_name, out_name = f"group-sums-{token}", f"group-nanmean-{token}"
    dsk: dict[Any, Any] = {}
    holders: dict[int, list[Any]] = {g: [] for g in range(groups)}
    edges = np.cumsum((0, *x.chunks[0]))
    zeros = (0,) * (x.ndim - 1)
    for i in range(len(x.chunks[0])):
        block_codes = codes[edges[i] : edges[i + 1]]
        if block_codes.size == 0:
            continue
        dsk[(part_name, i)] = (_partial, (x.name, i, *zeros), block_codes)
        for g in np.unique(block_codes):
            holders[int(g)].append((part_name, i))
    for g, keys in holders.items():
        level = 0
        while len(keys) > split_every:  # a tree: no task adds more than split_every parts
            name = f"group-combine-{level}-{token}"
            keys_next = []
            for j in range(0, len(keys), split_every):
                dsk[(name, g, j)] = (_combine, keys[j : j + split_every], g)
                keys_next.append((name, g, j))
            keys, level = keys_next, level + 1
        dsk[(out_name, g, *zeros)] = (_finalize, keys, g, field, dtype)
    graph = HighLevelGraph.from_collections(out_name, dsk, dependencies=[x])
    return da.Array(graph, out_name, chunks=((1,) * groups, *x.chunks[1:]), dtype=dtype)
