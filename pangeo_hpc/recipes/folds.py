"""An aggregation's states over the blocks of an array, folded group by group in time order.

A reduction by groups of time steps (:meth:`~pangeo_hpc.recipes.aggregations.Aggregation.
reduce_groups`: a climatology's months, a resampling's periods) is computed as an
incremental run computes it from its per-file states (:mod:`pangeo_hpc.batch.incremental`),
so that the two give the same numbers to the bit:

1. the state of each block along time (:meth:`~pangeo_hpc.recipes.aggregations.Aggregation.
   chunk`: one compiled pass, float64 sums; of data straight from the files, a mean's or a
   sum's state summed by the reader as it decodes, to the same bits:
   :mod:`pangeo_hpc.recipes.fused_states`);
2. per group, the states of the blocks that hold it merged in time order, a left fold
   (:meth:`~pangeo_hpc.recipes.aggregations.Aggregation.combine`: ``0 + s1 + s2 + ...``).
   An incremental run keeps the state of every block of a file (not their merge) and
   merges all the blocks' states the same way, so the float64 sums agree bit for bit. A
   tree of additions (``(s1 + s2) + (s3 + s4)``, Dask's ``sum(split_every=...)``, the old
   climatology kernel beyond 8 blocks a group), and a fold of per-file folds
   (``0 + (0 + s1 + s2) + (0 + s3 + s4)``), round otherwise: float64 data (area means,
   float64 files) then differ in the last bit. A reduction of one group (a time mean)
   folds its blocks' sums the same way (:func:`fold_rows`);
3. the values of each group (:meth:`~pangeo_hpc.recipes.aggregations.Aggregation.finalize`).

A long fold is a chain of tasks of at most :data:`SPLIT_EVERY` states each (the previous
fold and the next states), so no task holds more than that many; the chains of the groups
and of the blocks of the other axes run side by side. An array of at most
:data:`SMALL_BYTES` (an area mean's series) is folded in one task per block of the other
axes, from its blocks as they are (no concatenation: the same blocks, the same sums). No
block is copied or sent whole to another worker.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from pangeo_hpc.recipes.fused_states import fused_reads, state_of_span
from pangeo_hpc.recipes.fusion import SUMMED

#: a state: ``labels`` and the fields (:mod:`pangeo_hpc.recipes.aggregations`)
State = dict[str, np.ndarray]


class Aggregation(Protocol):
    """What a fold uses of an :class:`~pangeo_hpc.recipes.aggregations.Aggregation`
    (which imports this module: named here by what it does, not imported).

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.recipes.aggregations import Sums
    >>> agg: Aggregation = Sums("mean", divide=True)  # what fold_groups folds with
    >>> agg.outputs({})
    ('value',)
    """

    name: str
    fields: tuple[str, ...]

    def blank(self, groups: int, cells: tuple[int, ...]) -> State:
        """The state of ``groups`` groups of no time step.

        Parameters
        ----------
        groups : int
            The number of groups.
        cells : tuple[int, ...]
            The shape of the field of one time step.

        Returns
        -------
        State
            The state.

        Examples
        --------
        >>> from pangeo_hpc.recipes.aggregations import Sums
        >>> Sums("mean", divide=True).blank(1, (2,))
        {'sum': array([[0., 0.]]), 'count': array([[0, 0]], dtype=int32)}
        """

    def empty(self, cells: tuple[int, ...]) -> State:
        """The state of no time step at all.

        Parameters
        ----------
        cells : tuple[int, ...]
            The shape of the field of one time step.

        Returns
        -------
        State
            The state.

        Examples
        --------
        >>> from pangeo_hpc.recipes.aggregations import Sums
        >>> Sums("sum", divide=False).empty((1,))["labels"]
        array([], dtype=int64)
        """

    def chunk(self, x: np.ndarray, labels: np.ndarray, t: np.ndarray | None = None) -> State:
        """The state of one block of data, time first.

        Parameters
        ----------
        x : np.ndarray
            One block, time first.
        labels : np.ndarray
            The group of each time step (-1: left out).
        t : np.ndarray | None, optional
            Years since the epoch of each time step, or ``None``.

        Returns
        -------
        State
            The state.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.recipes.aggregations import Sums
        >>> Sums("sum", divide=False).chunk(np.array([[1.0], [2.0], [4.0]]), np.array([1, 1, 0]))
        {'labels': array([0, 1]), 'sum': array([[4.],
               [3.]]), 'count': array([[1],
               [2]], dtype=int32)}
        """

    def combine(self, states: Sequence[State]) -> State:
        """One state from several, groups of the same label merged.

        Parameters
        ----------
        states : Sequence[State]
            States of blocks or files.

        Returns
        -------
        State
            The merged state.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.recipes.aggregations import Sums
        >>> agg = Sums("sum", divide=False)
        >>> a = agg.chunk(np.array([[1.0]]), np.array([0]))
        >>> b = agg.chunk(np.array([[2.0]]), np.array([0]))
        >>> agg.combine([a, b])["sum"]
        array([[3.]])
        """

    def outputs(self, options: Mapping[str, Any]) -> tuple[str, ...]:
        """The names of what ``finalize`` gives for ``options``.

        Parameters
        ----------
        options : Mapping[str, Any]
            The step's options (``freq``, ``per``, ``q`` ...).

        Returns
        -------
        tuple[str, ...]
            The output names.

        Examples
        --------
        >>> from pangeo_hpc.recipes.aggregations import Trend
        >>> Trend().outputs({"stats": True})
        ('trend', 'trend_stderr', 'trend_p_value')
        """

    def finalize(
        self, state: State, options: Mapping[str, Any], dtype: Any = "f8"
    ) -> dict[str, np.ndarray]:
        """What the reduction gives, per group, from a merged state.

        Parameters
        ----------
        state : State
            A merged state, group axis first.
        options : Mapping[str, Any]
            The step's options (``freq``, ``per``, ``q`` ...).
        dtype : Any, optional
            The dtype of the values of a mean, a sum, a minimum or a maximum.

        Returns
        -------
        dict[str, np.ndarray]
            Output name -> values, group axis first.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.recipes.aggregations import Sums
        >>> agg = Sums("mean", divide=True)
        >>> agg.finalize(agg.chunk(np.array([[1.0], [2.0]]), np.array([0, 0])), {})
        {'value': array([[1.5]])}
        """


__all__ = ["SMALL_BYTES", "SPLIT_EVERY", "fold_groups", "fold_rows"]

#: an array this small is folded in one task (a series: one task, not hundreds)
SMALL_BYTES = 16 * 2**20
#: the most states one task of a fold merges
SPLIT_EVERY = 8


def fold_groups(
    agg: Aggregation,
    x: Any,
    codes: np.ndarray,
    options: Mapping[str, Any],
    t: np.ndarray | None = None,
    dtype: Any = "f8",
    *,
    per_group: bool = False,
    split_every: int = SPLIT_EVERY,
) -> Any:
    """What ``agg`` gives of each group of time steps of ``x`` (NumPy or Dask, time first):
    per output name, ``(groups, *x.shape[1:])`` in ``dtype``, lazily for Dask.

    Parameters
    ----------
    agg : Aggregation
        The reduction.
    x : array
        The data, time first.
    codes : numpy.ndarray
        The group of each time step, ``0 .. groups - 1`` (-1: left out); row ``g`` of the
        result is group ``g``.
    options : mapping
        The reduction's options (:meth:`~pangeo_hpc.recipes.aggregations.Aggregation.
        finalize`).
    t : numpy.ndarray, optional
        Years per step, for aggregations that need them.
    dtype : dtype
        Of the values.
    per_group : bool
        One chunk per group along the group axis (a resampling's periods), else one chunk
        of every group (a climatology, which its users index by group).
    split_every : int
        The most states one task merges.

    Returns
    -------
    Any
        Output name -> values, group axis first (Dask arrays for Dask data).

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from pangeo_hpc.recipes.aggregations import Sums
    >>> x = da.from_array(np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]]), chunks=(1, 2))
    >>> out = fold_groups(Sums("mean", divide=True), x, np.array([0, 1, 0]), {})  # lazy
    >>> out["value"].compute()  # group 0: steps 0 and 2
    array([[ 3.,  4.],
           [ 3., nan]])
    """
    codes = np.asarray(codes, dtype="i8")
    if codes.shape != (x.shape[0],):
        raise ValueError(f"codes has shape {codes.shape}, need ({x.shape[0]},)")
    if t is not None:
        t = np.asarray(t, dtype="f8")
        if t.shape != codes.shape:
            raise ValueError(f"t has shape {t.shape}, need ({x.shape[0]},)")
    groups = int(codes.max()) + 1 if codes.size else 0
    names = tuple(agg.outputs(options))
    out_dtype = np.dtype(dtype)
    if not isinstance(x, da.Array):
        state = agg.chunk(np.asarray(x), codes, t)
        value = _finish(agg, [state], list(range(groups)), x.shape[1:], options, out_dtype, names)
        return _split(value, names)
    if groups == 0:
        return _split(da.empty((len(names), 0, *x.shape[1:]), dtype=out_dtype), names)
    lead = (0,) if len(names) > 1 else ()  # several outputs: stacked first
    small = x.nbytes <= SMALL_BYTES
    token = tokenize(agg, x, codes, t, dict(options), out_dtype, per_group, split_every)
    state_name, fold_name = f"fold-state-{token}", f"fold-merge-{token}"
    out_name = f"fold-{agg.name}-{token}"
    edges = np.cumsum((0, *x.chunks[0]))
    spans = [(edges[i], edges[i + 1]) for i in range(len(x.chunks[0]))]
    used = [i for i, (a, b) in enumerate(spans) if (codes[a:b] >= 0).any()]
    # groups whose steps all lie in one block that holds no other group (a month per
    # chunk): one task each, the block's state finalized
    owners: dict[int, set[int]] = {}
    for i in used:
        block_codes = codes[slice(*spans[i])]
        for g in np.unique(block_codes[block_codes >= 0]):
            owners.setdefault(int(g), set()).add(i)
    alone = np.zeros(groups, bool)
    for g, blocks in owners.items():
        (i, *more) = blocks
        if not more:
            block_codes = codes[slice(*spans[i])]
            alone[g] = np.unique(block_codes[block_codes >= 0]).size == 1
    dsk: dict[Any, Any] = {}
    # a mean or sum of data straight from a reader: each block's state summed as it is read
    fused = None if small or per_group else fused_reads(agg, x, t)
    reads: dict[Any, Any] = {}
    read_name = f"{SUMMED}states-{token}"
    for cell in np.ndindex(*(len(c) for c in x.chunks[1:])):
        shape = tuple(x.chunks[1 + k][j] for k, j in enumerate(cell))
        if small:
            dsk[(out_name, *lead, 0, *cell)] = (
                _fold_all,
                agg,
                [(x.name, i, *cell) for i in used],
                [codes[slice(*spans[i])] for i in used],
                [None if t is None else t[slice(*spans[i])] for i in used],
                list(range(groups)),
                shape,
                dict(options),
                out_dtype,
                names,
            )
            continue
        holders: list[list[Any]] = [[] for _ in range(groups)]
        for i in used:
            block_codes = codes[slice(*spans[i])]
            part = None if t is None else t[slice(*spans[i])]
            held = np.unique(block_codes[block_codes >= 0])
            if per_group and held.size == 1 and alone[held[0]]:  # a block that is a period
                g = int(held[0])
                dsk[(out_name, *lead, g, *cell)] = (
                    _fold_all,
                    agg,
                    [(x.name, i, *cell)],
                    [block_codes],
                    [part],
                    [g],
                    shape,
                    dict(options),
                    out_dtype,
                    names,
                )
                continue
            if fused is not None:
                key = (read_name, i, *cell)
                a, b = (int(e) for e in spans[i])
                reads[key] = (state_of_span, fused[1], a, b, agg, block_codes)
            else:
                key = (state_name, i, *cell)
                dsk[key] = (agg.chunk, (x.name, i, *cell), block_codes, part)
            for g in held:
                holders[int(g)].append(key)
        folds = [
            _chain(dsk, agg.combine, (fold_name, g, cell), keys, split_every)
            for g, keys in enumerate(holders)
        ]
        finish = (_finish_each, agg)
        if per_group:
            for g, fold in enumerate(folds):
                if alone[g]:
                    continue  # its block's own task
                dsk[(out_name, *lead, g, *cell)] = (
                    *finish,
                    [fold],
                    [g],
                    shape,
                    dict(options),
                    out_dtype,
                    names,
                )
        else:
            every = list(range(groups))
            dsk[(out_name, *lead, 0, *cell)] = (
                *finish,
                folds,
                every,
                shape,
                dict(options),
                out_dtype,
                names,
            )
    along = (1,) * groups if per_group and not small else (groups,)
    if fused is None:
        graph = HighLevelGraph.from_collections(out_name, dsk, dependencies=[x])
    else:
        original = fused[1]
        layers = {original: x.dask.layers[original], read_name: reads, out_name: dsk}
        deps = {original: set(), read_name: {original}, out_name: {read_name}}
        graph = HighLevelGraph(layers, deps)
    chunks = (*[(len(names),)] * len(lead), along, *x.chunks[1:])
    return _split(da.Array(graph, out_name, chunks=chunks, dtype=out_dtype), names)


def _split(values: Any, names: Sequence[str]) -> dict[str, Any]:
    """The outputs by name: the values of one, or the rows of several stacked."""
    if len(names) == 1:
        return {names[0]: values}
    return {name: values[i] for i, name in enumerate(names)}


def fold_rows(parts: da.Array, split_every: int = SPLIT_EVERY) -> da.Array:
    """The sum over axis 0 of ``parts`` (one row per block along time, in time order) added
    as :meth:`~pangeo_hpc.recipes.aggregations.Aggregation.combine` adds states: a left
    fold from zeros, in a chain of tasks of at most ``split_every`` rows each (the previous
    fold and the next rows). An incremental run adds its files' states so; Dask's ``sum``
    adds them as a tree, which rounds otherwise beyond ``split_every`` blocks.

    Parameters
    ----------
    parts : dask.array.Array
        float64, one row per chunk along axis 0 (chunks of 1).
    split_every : int
        The most rows one task adds.

    Returns
    -------
    dask.array.Array
        ``parts.shape[1:]``, float64.

    Examples
    --------
    >>> import dask.array as da
    >>> rows = da.from_array(np.array([[1e16], [1.0], [-1e16], [1.0]]), chunks=1)
    >>> fold_rows(rows, split_every=2).compute()  # ((1e16 + 1) - 1e16) + 1, in order
    array([1.])
    >>> rows.sum(axis=0, split_every=2).compute()  # a tree: (1e16 + 1) + (-1e16 + 1)
    array([0.])
    """
    token = tokenize(parts, split_every)
    name, out = f"fold-rows-{token}", f"folded-{token}"
    dsk: dict[Any, Any] = {}
    for cell in np.ndindex(*parts.numblocks[1:]):
        keys = [(parts.name, i, *cell) for i in range(parts.numblocks[0])]
        dsk[(out, *cell)] = (
            operator.getitem,
            _chain(dsk, _add_rows, (name, 0, cell), keys, split_every),
            0,
        )
    graph = HighLevelGraph.from_collections(out, dsk, dependencies=[parts])
    return da.Array(graph, out, chunks=parts.chunks[1:], dtype=parts.dtype)


def _add_rows(rows: Sequence[np.ndarray]) -> np.ndarray:
    """``rows`` added in order from zeros (one row as it is), as a state's fields are."""
    if len(rows) == 1:
        return rows[0]
    out = np.zeros(rows[0].shape, dtype=rows[0].dtype)
    for row in rows:
        out += row
    return out


def _chain(
    dsk: dict[Any, Any],
    combine: Callable[[list[Any]], Any],
    name: tuple[str, int, tuple[int, ...]],
    keys: Sequence[Any],
    split_every: int,
) -> Any:
    """The key of the left fold (``combine``) of ``keys`` (in time order) into ``dsk``:
    tasks of at most ``split_every`` of them, each the previous fold and the next ones."""
    if len(keys) <= 1:
        return keys[0] if keys else None
    prefix, g, cell = name
    previous: Any = None
    rest = list(keys)
    step = 0
    while rest:
        take = split_every if previous is None else max(1, split_every - 1)
        part, rest = rest[:take], rest[take:]
        key = (prefix, g, step, *cell)
        dsk[key] = (combine, part if previous is None else [previous, *part])
        previous, step = key, step + 1
    return previous


def _fold_all(
    agg: Aggregation,
    blocks: Sequence[Any],
    codes: Sequence[np.ndarray],
    t: Sequence[np.ndarray | None],
    wanted: Sequence[int],
    cells: tuple[int, ...],
    options: Mapping[str, Any],
    dtype: np.dtype,
    names: Sequence[str],
) -> np.ndarray:
    """The values of the groups ``wanted`` of all ``blocks`` (in time order): each block's
    state, merged in one :meth:`combine` (per group, the left fold of the blocks that hold
    it), finalized."""
    states = [agg.chunk(b, c, y) for b, c, y in zip(blocks, codes, t, strict=True)]
    return _finish(agg, states, wanted, cells, options, dtype, names)


def _finish(
    agg: Aggregation,
    states: Sequence[State],
    wanted: Sequence[int],
    cells: tuple[int, ...],
    options: Mapping[str, Any],
    dtype: np.dtype,
    names: Sequence[str],
) -> np.ndarray:
    """The values of the groups ``wanted`` of the merged ``states``, stacked."""
    held = [s for s in states if s["labels"].size]
    merged = agg.combine(held) if held else agg.empty(tuple(cells))
    return _values(agg, pick(agg, merged, wanted, tuple(cells)), options, dtype, names)


def _finish_each(
    agg: Aggregation,
    folds: Sequence[State | None],
    wanted: Sequence[int],
    cells: tuple[int, ...],
    options: Mapping[str, Any],
    dtype: np.dtype,
    names: Sequence[str],
) -> np.ndarray:
    """The values of group ``wanted[k]`` of each fold ``folds[k]`` (the fold of the blocks
    that hold it; None: no block does), stacked."""
    picks = [
        pick(agg, agg.empty(tuple(cells)) if s is None else s, [g], tuple(cells))
        for s, g in zip(folds, wanted, strict=True)
    ]
    state = {f: np.concatenate([p[f] for p in picks]) for f in agg.fields}
    state["labels"] = np.asarray(wanted, dtype="i8")
    return _values(agg, state, options, dtype, names)


def pick(agg: Aggregation, state: State, wanted: Sequence[int], cells: tuple[int, ...]) -> State:
    """The groups ``wanted`` of ``state``, in that order (a group it does not hold: the
    state of no data).

    Parameters
    ----------
    agg : Aggregation
        The aggregation.
    state : State
        A state.
    wanted : Sequence[int]
        Group labels.
    cells : tuple[int, ...]
        The shape of the field of one time step.

    Returns
    -------
    State
        The state of those groups.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.recipes.aggregations import Sums
    >>> agg = Sums("sum", divide=False)
    >>> state = agg.chunk(np.array([[1.0], [5.0]]), np.array([0, 2]))
    >>> pick(agg, state, [2, 1], (1,))  # group 1 holds no data
    {'labels': array([2, 1]), 'sum': array([[5.],
           [0.]]), 'count': array([[1],
           [0]], dtype=int32)}
    """
    wanted_ = np.asarray(wanted, dtype="i8")
    labels = state["labels"]
    if np.array_equal(labels, wanted_):
        return state
    out = {"labels": wanted_, **agg.blank(wanted_.size, cells)}
    at = np.minimum(np.searchsorted(labels, wanted_), max(labels.size - 1, 0))
    found = labels[at] == wanted_ if labels.size else np.zeros(wanted_.size, bool)
    for f in agg.fields:
        out[f][found] = state[f][at[found]]
    return out


def _values(
    agg: Aggregation,
    state: State,
    options: Mapping[str, Any],
    dtype: np.dtype,
    names: Sequence[str],
) -> np.ndarray:
    values = agg.finalize(state, options, dtype)
    out = [np.asarray(values[n]).astype(dtype, copy=False) for n in names]
    return out[0] if len(out) == 1 else np.stack(out)
