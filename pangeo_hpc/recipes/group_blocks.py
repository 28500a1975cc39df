"""Sums over time within groups of steps (the days of hourly data), block by block.

``xarray``'s ``resample(...).sum()`` on Dask data goes through flox, which moves time to
the last axis (a transposed copy of every block) and, when some steps belong to no group,
first takes the others out (a shuffle of the blocks). Here each block gives the sums and
counts of the groups it holds in one compiled pass over it as it is
(:func:`~pangeo_hpc.recipes.kernels.group_sums`, steps in no group skipped), and each
output block, the groups that start in one input block, adds the parts of the one or two
blocks a group spans (a day of ERA5's hourly precipitation starts in one monthly file and
ends in the next). No block is copied, transposed or sent whole to another worker.
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from pangeo_hpc.recipes.kernels import group_sums

__all__ = ["group_sums_blocks"]


def _partial(block: np.ndarray, codes: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Sums and counts of the groups ``codes`` names in ``block`` (first axis)."""
    present = np.unique(codes[codes >= 0])
    local = np.searchsorted(present, codes)
    local[codes < 0] = -1
    flat = block.reshape(block.shape[0], -1)
    sums, counts = group_sums(flat, local.astype(np.intp), len(present))
    return {int(g): (sums[i], counts[i]) for i, g in enumerate(present)}


def _totals(parts: list[dict], groups: list[int], shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """The sums of ``groups`` from the blocks' ``parts``; NaN where a group has no valid
    value (``min_count=1``), in ``dtype``."""
    out = np.empty((len(groups), *shape), dtype)
    for i, g in enumerate(groups):
        held = [p[g] for p in parts if g in p]
        s = held[0][0].copy()
        c = held[0][1].copy()
        for hs, hc in held[1:]:
            s += hs
            c += hc
        out[i] = np.where(c > 0, s, np.nan).reshape(shape)
    return out


def group_sums_blocks(x: Any, codes: np.ndarray, groups: int) -> Any:
    """Sums over axis 0 within groups, skipping NaN (NaN where a group has no valid value):
    row ``g`` of the result sums the rows ``i`` of ``x`` with ``codes[i] == g``; rows
    coded -1 are in no group. ``codes`` must be non-decreasing where not -1 (groups of
    consecutive steps, as days are), every group present. Floating ``x`` keeps its dtype
    (sums in float64).

    For Dask, ``x`` must hold whole fields per block (one chunk along the other axes); the
    result is chunked along groups by the block each group starts in.
    """
    codes = np.asarray(codes)
    if codes.shape != (x.shape[0],):
        raise ValueError(f"codes has shape {codes.shape}, need ({x.shape[0]},)")
    coded = codes[codes >= 0]
    if np.any(np.diff(coded) < 0) or (coded.size and set(coded) != set(range(groups))):
        raise ValueError("codes must name groups 0..groups-1 in order, -1 for none")
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype("f8")
    field = tuple(x.shape[1:])
    if not isinstance(x, da.Array):
        part = _partial(np.ascontiguousarray(x), codes)
        return _totals([part], list(range(groups)), field, dtype)
    if any(len(c) != 1 for c in x.chunks[1:]):
        raise ValueError("every block must hold whole fields (one chunk along the other axes)")
    token = tokenize(x, codes, groups)
    part_name, out_name = f"group-sums-{token}", f"group-totals-{token}"
    edges = np.cumsum((0, *x.chunks[0]))
    zeros = (0,) * (x.ndim - 1)
    dsk: dict[Any, Any] = {}
    holders: dict[int, list[int]] = {}
    for i in range(len(x.chunks[0])):
        block_codes = codes[edges[i] : edges[i + 1]]
        dsk[(part_name, i)] = (_partial, (x.name, i, *zeros), block_codes)
        for g in np.unique(block_codes[block_codes >= 0]):
            holders.setdefault(int(g), []).append(i)
    sizes = []
    for i in range(len(x.chunks[0])):
        owned = [g for g, blocks in holders.items() if blocks[0] == i]
        needs = sorted({b for g in owned for b in holders[g]})
        dsk[(out_name, i, *zeros)] = (
            _totals, [(part_name, b) for b in needs], owned, field, dtype
        )  # fmt: skip
        sizes.append(len(owned))
    graph = HighLevelGraph.from_collections(out_name, dsk, dependencies=[x])
    return da.Array(graph, out_name, chunks=(tuple(sizes), *x.chunks[1:]), dtype=dtype)
