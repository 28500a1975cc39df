"""Compiled inner loops for the reductions recipes run over every value.

Each kernel makes one pass over the data with float64 accumulators and skips NaN, where
xarray's generic ``weighted`` path makes several (fillna, notnull, two dot products).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.utils import funcname

from pangeo_hpc.jit import njit, use_twins
from pangeo_hpc.recipes.folds import fold_rows
from pangeo_hpc.recipes.fusion import fused_weighted_nanmean


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


#: values up to which :func:`weighted_nanmean` sums with NumPy: the compiled kernel's first
#: call in a process costs numba's start (0.5-2 s on the 2-core VM), more than NumPy takes
#: for a field or a few (a cached run's area mean of one field: 65,160 values, 1 ms)
SMALL = 1 << 20


def _weighted_sums_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`_weighted_sums` with NumPy (float64 dot products; the same to rounding)."""
    valid = ~np.isnan(x)
    out = np.empty((x.shape[0], 2))
    out[:, 0] = np.where(valid, x.astype("f8"), 0.0) @ w
    out[:, 1] = valid @ w
    return out


def weighted_nanmean(x: np.ndarray, w: np.ndarray, min_share: float = 0.0) -> np.ndarray:
    """Weighted mean over the last ``w.ndim`` axes of ``x``, skipping NaN (float64).

    Returns NaN where every value is NaN or the weights of the valid values sum to zero,
    and where they are less than ``min_share`` of all the weights (to a relative 1e-12,
    so that ``min_share=1`` keeps complete fields whatever the order of the sums). Up to
    :data:`SMALL` values are summed with NumPy, more by the compiled kernel.

    Parameters
    ----------
    x : np.ndarray
        Data whose last ``w.ndim`` axes are the field.
    w : np.ndarray
        Weights.
    min_share : float, optional
        Share of all the weights the valid values need.

    Returns
    -------
    np.ndarray
        float64, ``x``'s leading axes.

    Examples
    --------
    >>> x = np.array([[1.0, 2.0], [3.0, np.nan]])  # two fields of two cells
    >>> weighted_nanmean(x, np.array([1.0, 3.0]))
    array([1.75, 3.  ])
    >>> weighted_nanmean(x, np.array([1.0, 3.0]), min_share=0.5)
    array([1.75,  nan])
    """
    lead = x.shape[: x.ndim - w.ndim]
    wf = np.ascontiguousarray(w, dtype="f8").ravel()
    sums = weighted_sums(x.reshape(-1, w.size), wf)
    return mean_of_sums(sums, wf.sum(), min_share).reshape(lead)


def weighted_sums(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``(n, 2)`` float64: per row of ``x`` (``n`` rows of ``w.size`` values), ``Σ w x`` and
    ``Σ w`` over the values that are not NaN; one compiled pass (NumPy up to
    :data:`SMALL` values).

    Parameters
    ----------
    x : np.ndarray
        ``n`` rows of ``w.size`` values.
    w : np.ndarray
        Weights.

    Returns
    -------
    ``(n, 2)`` float64
        ``Σ w x`` and ``Σ w`` per row.

    Examples
    --------
    >>> weighted_sums(np.array([[1.0, 2.0], [3.0, np.nan]]), np.array([1.0, 3.0]))  # Σ w x, Σ w
    array([[7., 4.],
           [3., 1.]])
    """
    flat = np.ascontiguousarray(x)
    wf = np.ascontiguousarray(w, dtype="f8")
    return _weighted_sums_numpy(flat, wf) if flat.size <= SMALL else _weighted_sums(flat, wf)


def mean_of_sums(sums: np.ndarray, total: float, min_share: float = 0.0) -> np.ndarray:
    """The means of :func:`weighted_sums` (``total``: the sum of all the weights), NaN where
    the valid weights sum to zero or to less than ``min_share`` of ``total`` (see
    :func:`weighted_nanmean`).

    Parameters
    ----------
    sums : np.ndarray
        The output of :func:`weighted_sums`.
    total : float
        The sum of all the weights.
    min_share : float, optional
        Share of ``total`` the valid values need.

    Returns
    -------
    np.ndarray
        One mean per row.

    Examples
    --------
    >>> sums = weighted_sums(np.array([[1.0, 2.0], [3.0, np.nan]]), np.array([1.0, 3.0]))
    >>> mean_of_sums(sums, 4.0), mean_of_sums(sums, 4.0, min_share=0.5)
    (array([1.75, 3.  ]), array([1.75,  nan]))
    """
    enough = sums[:, 1] > 0
    if min_share > 0:
        enough &= sums[:, 1] >= min_share * total * (1 - 1e-12)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(enough, sums[:, 0] / sums[:, 1], np.nan)


def weighted_nanmean_blocks(x: Any, w: np.ndarray, min_share: float = 0.0) -> Any:
    """:func:`weighted_nanmean` of a NumPy or Dask array, block by block.

    For Dask, each block must hold whole fields (the last ``w.ndim`` axes in one chunk). The
    kernel runs on each block as it is: ``map_blocks(drop_axis=...)`` or
    ``apply_ufunc(dask="parallelized")`` would make Dask concatenate each block's single
    chunk along the dropped axes first, a copy of every block. With ``concatenate=False``
    the block arrives as it is, wrapped in one list per dropped axis.

    Data straight from a reader that sums as it decodes (``weighted_sums``, e.g.
    :meth:`pangeo_hpc.io.fused.SummingArray.weighted_sums`) are summed there instead, in
    fewer, larger tasks that never hold a block (:mod:`pangeo_hpc.recipes.fusion`).

    Parameters
    ----------
    x : Any
        NumPy or Dask data whose last ``w.ndim`` axes are the field.
    w : np.ndarray
        Weights.
    min_share : float, optional
        Share of all the weights the valid values need.

    Returns
    -------
    Any
        The means: NumPy, or Dask (lazy).

    Raises
    ------
    ValueError
        When a Dask block does not hold whole fields.

    Examples
    --------
    >>> import dask.array as da
    >>> x = da.from_array(np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]]), chunks=(1, 2))
    >>> weighted_nanmean_blocks(x, np.array([1.0, 3.0])).compute()
    array([1.75, 3.  , 5.75])
    """

    if not isinstance(x, da.Array):
        return weighted_nanmean(x, w, min_share)
    fused = fused_weighted_nanmean(x, w, min_share, mean_of_sums)
    if fused is not None:
        return fused
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
        if g < 0:  # a step in no group
            continue
        for j in range(m):  # branch-free (NaN adds 0): vectorised, the same bits
            v = x[i, j]
            ok = v == v  # not NaN
            sums[g, j] += v if ok else 0.0
            counts[g, j] += 1 if ok else 0
    return sums, counts


#: cells from which a NumPy twin adds row by row (a Python loop over rows, each row one
#: vector operation); fewer cells: cumulative sums over the rows, vectorised along them
_ROW_CELLS = 256
#: cells of the float64 rows a twin copies at a time (1 MB)
_BLOCK_CELLS = 1 << 17


def _in_order(v: np.ndarray) -> np.ndarray:
    """The sum over axis 0 of ``v`` (float64) with its rows added one after the other from
    0.0, as the compiled loops add them: a cumulative sum is in order by definition, where
    ``v.sum(0)`` may add pairwise. (``+ 0.0``: a sum of -0.0 alone is 0.0 from 0.0.)"""
    if v.shape[0] == 0:
        return np.zeros(v.shape[1:])
    return np.cumsum(v, axis=0)[-1] + 0.0


def _group_sums_numpy(x: np.ndarray, codes: np.ndarray, k: int) -> tuple:
    """:func:`_group_sums` with NumPy, to the same bits (:func:`pangeo_hpc.jit.use_twins`)."""
    n, m = x.shape
    sums = np.zeros((k, m))
    counts = np.zeros((k, m), dtype=np.int32)
    codes = np.asarray(codes)
    ok = x == x
    if m >= _ROW_CELLS:
        step = max(1, _BLOCK_CELLS // m)
        for lo in range(0, n, step):  # blocks of rows: a small float64 copy at a time
            # NaN as 0.0, as the loop adds it (a NumPy float64 zero: no weak scalar)
            v = np.where(ok[lo : lo + step], x[lo : lo + step], np.float64(0.0))
            for i, g in enumerate(codes[lo : lo + step]):
                if g >= 0:  # each row onto its group's sums, in order
                    np.add(sums[g], v[i], out=sums[g])
        for g in np.unique(codes[codes >= 0]):  # integers: any order gives them
            counts[g] = ok[codes == g].sum(axis=0, dtype=np.int32)
        return sums, counts
    v = np.where(ok, x, 0).astype("f8")
    for g in range(k):
        rows = codes == g
        if rows.any():
            sums[g] = _in_order(v[rows])
            counts[g] = ok[rows].sum(axis=0, dtype=np.int32)
    return sums, counts


def group_sums(x: np.ndarray, codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """NaN-skipping sums (float64) and counts (int32) of the rows of ``x`` (time, cells) in
    each of the ``k`` groups ``codes`` (0..k-1 per row; a row coded -1 is in none) names:
    one compiled pass.

    Parameters
    ----------
    x : np.ndarray
        Data (time, cells).
    codes : np.ndarray
        The group of each row (-1: none).
    k : int
        The number of groups.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        Sums ``(k, cells)`` float64 and counts int32.

    Examples
    --------
    >>> x = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]])
    >>> group_sums(x, np.array([0, 1, 0]), 2)
    (array([[6., 8.],
           [3., 0.]]), array([[2, 2],
           [1, 0]], dtype=int32))
    """
    return (_group_sums_numpy if use_twins() else _group_sums)(x, codes, k)


#: the sums :func:`trend_sums` gives, in order
TREND_SUMS = ("n", "st", "stt", "sx", "stx", "sxx")


@njit
def _trend_sums(x: np.ndarray, t: np.ndarray) -> np.ndarray:  # pragma: no cover - jitted
    n, m = x.shape
    out = np.zeros((6, m))
    for i in range(n):
        ti = t[i]
        tt = ti * ti
        for j in range(m):  # branch-free (NaN adds 0): vectorised, the same bits
            v = np.float64(x[i, j])  # float32 data: products in float64 too
            ok = v == v  # not NaN
            w = 1.0 if ok else 0.0
            v = v if ok else 0.0
            out[0, j] += w
            out[1, j] += w * ti
            out[2, j] += w * tt
            out[3, j] += v
            out[4, j] += ti * v
            out[5, j] += v * v
    return out


def _trend_sums_numpy(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """:func:`_trend_sums` with NumPy, to the same bits (:func:`pangeo_hpc.jit.use_twins`)."""
    n, m = x.shape
    if m >= _ROW_CELLS:
        out = np.zeros((6, m))
        for i in range(n):  # each sum gets the row's valid terms, in float64
            ok = x[i] == x[i]
            v = x[i].astype("f8")
            ti = t[i]
            for k, term in enumerate((1.0, ti, ti * ti, v, ti * v, v * v)):
                np.add(out[k], term, out=out[k], where=ok)
        return out
    ok = x == x
    w = ok.astype("f8")
    v = np.where(ok, x, 0).astype("f8")
    tc = t[:, None]
    terms = (w, w * tc, w * (t * t)[:, None], v, tc * v, v * v)
    return np.stack([_in_order(term) for term in terms])


def trend_block(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """:data:`TREND_SUMS` over axis 0 of one block, stacked first: ``(6, *x.shape[1:])``.

    Parameters
    ----------
    x : np.ndarray
        One block, time first.
    t : np.ndarray
        float64 time of each row.

    Returns
    -------
    np.ndarray
        ``(6, *x.shape[1:])`` float64.

    Examples
    --------
    >>> trend_block(np.array([[0.0], [0.3], [0.6]]), np.array([0.0, 1.0, 2.0]))[:, 0]
    array([3.  , 3.  , 5.  , 0.9 , 1.5 , 0.45])
    """
    x = np.asarray(x)
    flat = np.ascontiguousarray(x.reshape(x.shape[0], -1))
    sums = _trend_sums_numpy if use_twins() else _trend_sums
    return sums(flat, np.asarray(t, dtype="f8")).reshape((6, *x.shape[1:]))


def _trend_of_block(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    return trend_block(x, np.asarray(t).ravel())


def trend_sums(x: Any, t: np.ndarray) -> Any:
    """NaN-skipping sums of a least-squares fit along axis 0 in one compiled pass:
    ``(6, *x.shape[1:])`` float64, the :data:`TREND_SUMS` count, Σt, Σt², Σx, Σtx, Σx² of
    each cell, with ``t`` (float64, one per row) where ``x`` is valid.

    A Dask array gives one task per block (its sums), added over the blocks along time in
    order (:func:`stacked_sums`); no block is concatenated with another.

    Parameters
    ----------
    x : Any
        NumPy or Dask data, time first.
    t : np.ndarray
        float64 time of each row.

    Returns
    -------
    Any
        ``(6, *x.shape[1:])`` float64 (Dask for Dask).

    Examples
    --------
    >>> import dask.array as da
    >>> x = da.from_array(np.array([[0.0], [0.3], [np.nan]]), chunks=1)
    >>> trend_sums(x, np.array([0.0, 1.0, 2.0])).compute()[:, 0]  # n, Σt, Σt², Σx, Σtx, Σx²
    array([2.  , 1.  , 1.  , 0.3 , 0.3 , 0.09])
    """
    return stacked_sums(_trend_of_block, len(TREND_SUMS), x, t)


def stacked_sums(block_sums: Any, k: int, x: Any, t: np.ndarray | None) -> Any:
    """``k`` sums along axis 0 of ``x``, stacked first (``(k, *x.shape[1:])``, float64):
    ``block_sums(block, t_block)`` of each block along axis 0 (``t``: one float64 per row,
    each block given its own; None: not timed, zeros), added over the blocks.

    A Dask array gives one task per block, added over the blocks along time in order from
    zeros (:func:`~pangeo_hpc.recipes.folds.fold_rows`: the left fold an incremental run
    makes of its files' states); no block is concatenated with another.

    Parameters
    ----------
    block_sums : Any
        ``(block, t_block)`` -> its ``k`` sums.
    k : int
        The number of sums.
    x : Any
        NumPy or Dask data, time first.
    t : np.ndarray or None
        float64, one per row; None for sums that are not timed (given zeros).

    Returns
    -------
    Any
        ``(k, *x.shape[1:])`` float64 (Dask for Dask).

    Raises
    ------
    ValueError
        When ``t`` is not one value per row.

    Examples
    --------
    >>> import dask.array as da
    >>> def count_and_sum(block, t_block):
    ...     return np.stack([np.isfinite(block).sum(0), np.nansum(block, 0)]).astype("f8")
    >>> x = da.from_array(np.array([[1.0], [np.nan], [3.0]]), chunks=1)
    >>> stacked_sums(count_and_sum, 2, x, np.zeros(3)).compute()
    array([[2.],
           [4.]])
    """
    if t is not None:
        t = np.asarray(t, dtype="f8")
        if t.shape != (x.shape[0],):
            raise ValueError(f"t has shape {t.shape}, need ({x.shape[0]},)")
    if not isinstance(x, da.Array):
        return block_sums(x, np.zeros(x.shape[0]) if t is None else t)
    # one task per block, its sums on an axis of their own (one per block along time),
    # then added in order over that axis: one blockwise layer that dask fuses with the
    # reads (no reshape, no separate tasks for the times)
    cells = tuple(range(2, x.ndim + 1))
    args: list[Any] = [x, (0, *cells)]
    if t is not None:  # each block's own times, as a block of their own, named by them
        name = "block-times-" + tokenize(t, x.chunks[0])
        args += [da.from_array(t, chunks=(x.chunks[0],), name=name), (0,)]
    parts = da.blockwise(
        partial(_block_part, block_sums),
        (0, 1, *cells),
        *args,
        new_axes={1: k},
        adjust_chunks={0: 1},
        token=funcname(block_sums).strip("_"),
        dtype="f8",
        meta=np.empty((0,) * (x.ndim + 1)),
    )
    return fold_rows(parts)


def _block_part(block_sums: Any, block: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
    """One block's ``k`` sums with an axis of length 1 first (the block's place)."""
    return block_sums(block, np.zeros(block.shape[0]) if t is None else t)[None]


def _subtract_block(x: np.ndarray, ref: np.ndarray, codes: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    ref = np.asarray(ref, dtype=x.dtype)
    if x.ndim == 1:  # a series: rows are numbers
        return x - ref[np.asarray(codes)]
    out = np.empty_like(x)
    for i, g in enumerate(np.asarray(codes).tolist()):  # a row at a time: no (n, ...) copy
        np.subtract(x[i], ref[g], out=out[i])
    return out


def group_subtract(x: Any, ref: Any, codes: np.ndarray) -> Any:
    """``x[i] - ref[codes[i]]`` for each row ``i`` of ``x`` (a monthly anomaly from its
    climatology), in ``x``'s dtype, row by row into one new array (``x - ref[codes]``
    would copy ``ref`` to ``x``'s size first).

    ``ref`` has a row per group and ``x``'s other axes; for Dask, in one chunk along its
    first axis and chunked as ``x`` along the others. Each block of ``x`` becomes one task.

    Parameters
    ----------
    x : Any
        NumPy or Dask data, time first.
    ref : Any
        One row per group.
    codes : np.ndarray
        The group of each row of ``x``.

    Returns
    -------
    Any
        The differences, shaped as ``x``.

    Raises
    ------
    ValueError
        When the shapes do not fit.

    Examples
    --------
    >>> x = np.array([[1.0], [5.0], [3.0]])  # three months
    >>> climatology = np.array([[1.0], [4.0]])  # two calendar months
    >>> group_subtract(x, climatology, np.array([0, 1, 0]))
    array([[0.],
           [1.],
           [2.]])
    """
    codes = np.asarray(codes)
    if codes.shape != (x.shape[0],) or tuple(ref.shape[1:]) != tuple(x.shape[1:]):
        raise ValueError(
            f"x {x.shape}, ref {ref.shape} and codes {codes.shape} do not fit: need "
            "(n, ...), (groups, ...) and (n,)"
        )
    if not isinstance(x, da.Array) and not isinstance(ref, da.Array):
        return _subtract_block(x, ref, codes)
    x = da.asarray(x)
    ref = da.asarray(ref).rechunk((ref.shape[0], *x.chunks[1:]))
    # named by the values and their chunks: the same months cut another way is another array
    name = "codes-" + tokenize(codes, x.chunks[0])
    tokens = da.from_array(codes, chunks=(x.chunks[0],), name=name)
    lead = "".join(chr(ord("i") + k) for k in range(x.ndim - 1))
    return da.blockwise(
        _subtract_block,
        "t" + lead,
        x,
        "t" + lead,
        ref,
        "g" + lead,
        tokens,
        "t",
        dtype=x.dtype,
        concatenate=True,
        meta=np.empty((0,) * x.ndim, x.dtype),
    )


def _rows(block: np.ndarray, local: np.ndarray, axis: int) -> np.ndarray:
    if local.size and np.array_equal(local, np.arange(local[0], local[0] + local.size)):
        where = [slice(None)] * block.ndim  # a run of rows: a view, not a copy
        where[axis] = slice(int(local[0]), int(local[0]) + local.size)
        return block[tuple(where)]
    return np.take(block, local, axis=axis)


def take_blocks(x: Any, index: np.ndarray, axis: int = 0) -> Any:
    """``x`` at the sorted positions ``index`` along ``axis``, each block of the result the
    positions that lie in one block of ``x`` (blocks with none are left out).

    Dask's own take (``x[index]``, xarray's ``isel``) regroups the rows into chunks of
    about the same size, which cut across the blocks of ``x``: a selection of DJF from a
    chunk per monthly file gave chunks of 30 days, each of two files. Here the blocks stay
    the files': an incremental run's per-file states are then states of the same blocks
    as the whole graph's, and merge to the same numbers to the bit
    (:mod:`pangeo_hpc.recipes.folds`). A block's rows that follow each other are a view.

    Parameters
    ----------
    x : Any
        NumPy or Dask data.
    index : np.ndarray
        Sorted positions.
    axis : int, optional
        The axis.

    Returns
    -------
    Any
        The selection (Dask for Dask).

    Examples
    --------
    >>> import dask.array as da
    >>> x = da.from_array(np.arange(6.0), chunks=3)  # two files of three steps
    >>> take_blocks(x, np.array([0, 1, 4])).chunks  # dask's x[index] gives ((3,),)
    ((2, 1),)
    """
    index = np.asarray(index, dtype=np.intp)
    if not isinstance(x, da.Array) or index.size == 0:
        return (
            np.take(x, index, axis=axis)
            if not isinstance(x, da.Array)
            else x[(slice(None),) * axis + (index,)]
        )
    from itertools import product

    from dask.highlevelgraph import HighLevelGraph

    edges = np.cumsum((0, *x.chunks[axis]))
    which = np.searchsorted(edges, index, "right") - 1
    blocks, starts = np.unique(which, return_index=True)
    parts = np.split(index, starts[1:])
    name = "take-blocks-" + tokenize(x, index, axis)
    others = [range(len(c)) for i, c in enumerate(x.chunks) if i != axis]
    dsk: dict[Any, Any] = {}
    for j, (b, part) in enumerate(zip(blocks, parts, strict=True)):
        local = part - edges[b]
        for rest in product(*others):
            source = (x.name, *rest[:axis], int(b), *rest[axis:])
            dsk[(name, *rest[:axis], j, *rest[axis:])] = (_rows, source, local, axis)
    chunks = list(x.chunks)
    chunks[axis] = tuple(p.size for p in parts)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, chunks=tuple(chunks), meta=x._meta)
