"""The partial states of an incremental run: per piece on the cluster, from the cache, and
the reduction's values from them, filled into its lazy result.

Each piece's state is the reduction's aggregation
(:class:`~pangeo_hpc.recipes.aggregations.Aggregation`) of its blocks: one task per block
(:meth:`~pangeo_hpc.recipes.aggregations.Aggregation.chunk`), laid side by side over the
cells. A piece of several blocks along time keeps the state of each (:func:`pack_blocks`):
the run merges every block's state in time order
(:meth:`~pangeo_hpc.recipes.aggregations.Aggregation.combine`), the left fold a run without
a cache makes (:mod:`pangeo_hpc.recipes.folds`); merging a piece's blocks first would
round otherwise in the last bit of float64 sums. The merged state's values
(:meth:`~pangeo_hpc.recipes.aggregations.Aggregation.finalize`) fill the reduction's own
lazy result (:func:`fill`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import dask
import numpy as np
import xarray as xr

from pangeo_hpc.batch.incremental.plan import Prepared, ResultPlan
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.clusters.threads import as_completed
from pangeo_hpc.recipes.aggregations import Aggregation, State
from pangeo_hpc.recipes.fused_states import fused_reads, state_of_span

#: progress lines (INFO): the CLI prints them
log = logging.getLogger("pangeo_hpc.batch.incremental.run")


def _piece_state(plan: ResultPlan, piece: int, fuse: bool = False) -> Any:
    """The state of one piece as a Dask Delayed: a task per block, laid side by side over
    the cells; several blocks along time packed (:func:`pack_blocks`), not merged. With
    ``fuse`` (no other chain reads these data), a block of data straight from a reader
    that sums as it decodes is summed so (:mod:`pangeo_hpc.recipes.fused_states`)."""
    a, b = plan.rows[piece]
    arr = plan.data[a:b]
    blocks = arr.to_delayed(optimize_graph=False)  # the reads shared by every result
    edges = np.concatenate([[0], np.cumsum(arr.chunks[0])])
    labels = plan.labels[a:b]
    years = None if plan.years is None else plan.years[a:b]
    chunk = dask.delayed(plan.agg.chunk, pure=True)
    read = fused_reads(plan.agg, plan.data, plan.years) if fuse else None
    if read is not None:  # the reader under its key in the data's graph: never tokenized
        reader = dask.delayed(read[0], name=read[1], pure=True)
        state = dask.delayed(state_of_span, pure=True)
    along = []
    for i in range(blocks.shape[0]):
        lo, hi = edges[i], edges[i + 1]
        if read is not None:  # whole fields: one block across the cells
            along.append(state(reader, int(a + lo), int(a + hi), plan.agg, labels[lo:hi]))
            continue
        part = None if years is None else years[lo:hi]
        cells = {
            idx: chunk(blocks[(i, *idx)], labels[lo:hi], part)
            for idx in np.ndindex(blocks.shape[1:])
        }
        grid = _nest(cells, blocks.shape[1:])
        along.append(dask.delayed(_side_by_side, pure=True)(grid, plan.agg))
    return along[0] if len(along) == 1 else dask.delayed(pack_blocks, pure=True)(along)


#: the member of a packed state that counts its blocks (:func:`pack_blocks`)
BLOCKS = "blocks"


def pack_blocks(states: list[State]) -> State:
    """One state holding the states of a piece's blocks along time, in order, unmerged
    (``block<i>:<field>``, and :data:`BLOCKS`): what the cache keeps of the piece.

    Parameters
    ----------
    states : list[State]
        The blocks' states, in time order.

    Returns
    -------
    State
        The packed state; :func:`blocks_of` gives ``states`` back.

    Examples
    --------
    >>> from pangeo_hpc.recipes.aggregations import Sums
    >>> mean = Sums("mean", divide=True)
    >>> x = np.array([[1.0], [2.0], [4.0]])
    >>> first, second = mean.chunk(x[:2], np.array([0, 0])), mean.chunk(x[2:], np.array([0]))
    >>> [s["sum"].tolist() for s in blocks_of(pack_blocks([first, second]))]
    [[[3.0]], [[4.0]]]
    """
    out: State = {BLOCKS: np.array(len(states))}
    for i, state in enumerate(states):
        out.update({f"block{i}:{name}": value for name, value in state.items()})
    return out


def blocks_of(state: State) -> list[State]:
    """The states of a piece's blocks along time, in order: those :func:`pack_blocks`
    packed, or ``[state]``.

    Parameters
    ----------
    state : State
        A piece's state.

    Returns
    -------
    list[State]
        Its blocks' states.

    Examples
    --------
    >>> blocks_of({"labels": np.array([0]), "sum": np.ones((1, 2))})[0]["sum"]
    array([[1., 1.]])
    """
    if BLOCKS not in state:
        return [state]
    parts: list[State] = [{} for _ in range(int(state[BLOCKS]))]
    for name, value in state.items():
        if name != BLOCKS:
            block, field = name.split(":", 1)
            parts[int(block.removeprefix("block"))][field] = value
    return parts


def _nest(cells: dict[tuple[int, ...], Any], shape: tuple[int, ...]) -> Any:
    if not shape:
        return cells[()]
    return [
        _nest({k[1:]: v for k, v in cells.items() if k[0] == i}, shape[1:]) for i in range(shape[0])
    ]


def _side_by_side(grid: Any, agg: Aggregation) -> State:
    """One state from the states of the blocks of one time span laid out over the cells
    (nested lists, one level per cell dimension, as ``dask.array.Array.to_delayed``): the
    same time steps, so the same labels."""
    if not isinstance(grid, list):
        return grid
    parts = [_side_by_side(g, agg) for g in grid]
    out: State = {"labels": parts[0]["labels"]}
    for f in agg.fields:
        # this level's cell dimension: the outermost list is the first (axis 1)
        axis = parts[0][f].ndim - _depth(grid)
        out[f] = np.concatenate([p[f] for p in parts], axis=axis)
    return out


def _depth(grid: Any) -> int:
    d = 0
    while isinstance(grid, list):
        grid, d = grid[0], d + 1
    return d


def from_cache(
    prepared: Prepared,
    cache: StateCache,
    covered: dict[str, set[int]],
    found: dict[tuple[str, int], State],
    only: Any = None,
) -> tuple[dict[int, dict[str, Any]], set[int]]:
    """Into ``found``: the cached state of each piece and chain (of chains ``only``) not in
    its roll-up (``covered``), and an empty one where a chain uses nothing of a piece. Then
    what is left to compute, per piece and chain (Delayed), and the pieces no chain uses.

    Parameters
    ----------
    prepared : Prepared
        The run's plan.
    cache : StateCache
        The state cache.
    covered : dict[str, set[int]]
        The pieces each chain's roll-up holds.
    found : dict[tuple[str, int], State]
        States found, added to.
    only : Any, optional
        The chains to look at; ``None``: all.

    Returns
    -------
    (dict, set)
        Piece -> chain -> Delayed state to compute, and the pieces no chain uses.

    Examples
    --------
    >>> from pangeo_hpc.batch.incremental.states import from_cache
    >>> found = {}
    >>> todo, unused = from_cache(prepared, cache, covered={}, found=found)  # doctest: +SKIP
    """
    chains = {c: p for c, p in prepared.chains.items() if only is None or c in only}
    for c in chains:
        for i in range(len(prepared.pieces)):
            if i not in covered[c] and (c, i) not in found:
                got = cache.get(prepared.keys[c, i])
                if got is not None:
                    found[c, i] = got[0]
    todo: dict[int, dict[str, Any]] = {}
    skipped = set()
    for i in range(len(prepared.pieces)):
        for c, plan in chains.items():
            if (c, i) in found or i in covered[c]:
                continue
            if not plan.uses(i):  # nothing of this file is used (another season, month)
                found[c, i] = plan.agg.empty(tuple(plan.data.shape[1:]))
                continue
            todo.setdefault(i, {})[c] = _piece_state(plan, i, fuse=len(prepared.chains) == 1)
        if i not in todo and not any(p.uses(i) for p in chains.values()):
            skipped.add(i)
    return todo, skipped


def compute_states(
    recipe: Any,
    prepared: Prepared,
    client: Any,
    cache: StateCache,
    todo: dict[int, dict[str, Any]],
    found: dict[tuple[str, int], State],
    held: list[tuple[str, State, dict[str, Any]]] | None = None,
) -> int:
    """Compute the states of ``todo`` on the cluster, one task per piece, each saved to the
    cache as it arrives (a killed run keeps them), or added to ``held`` (saved later by the
    caller), and put into ``found``: how many saved.

    Parameters
    ----------
    recipe : Recipe
        The recipe.
    prepared : Prepared
        The run's plan.
    client : distributed.Client
        A client of the cluster.
    cache : StateCache
        The state cache.
    todo : dict[int, dict[str, Any]]
        What :func:`from_cache` left to compute.
    found : dict[tuple[str, int], State]
        States found, added to.
    held : list[tuple[str, State, dict[str, Any]]], optional
        Where to add the states instead of saving them; ``None``: save them.

    Returns
    -------
    int
        The states saved.

    Examples
    --------
    >>> from pangeo_hpc.batch.incremental.states import compute_states, from_cache
    >>> found = {}
    >>> todo, unused = from_cache(prepared, cache, covered, found)  # doctest: +SKIP
    >>> saved = compute_states(spec, prepared, client, cache, todo, found)  # doctest: +SKIP
    """
    futures = {}
    if todo:
        bundles = [dask.delayed(dict)(todo[i]) for i in sorted(todo)]
        for i, fut in zip(sorted(todo), client.compute(bundles), strict=True):
            futures[fut] = i
    saved = 0
    t0 = time.perf_counter()
    for done, fut in enumerate(as_completed(futures), start=1):
        saved += _keep(recipe, prepared, cache, futures[fut], fut.result(), found, held)
        if done == len(futures) or done % max(1, len(futures) // 10) == 0:
            log.info(f"states: {done} of {len(futures)} files, {time.perf_counter() - t0:.1f} s")
    return saved


def _keep(
    recipe: Any,
    prepared: Prepared,
    cache: StateCache,
    i: int,
    bundle: dict[str, State],
    found: dict[tuple[str, int], State],
    held: list[tuple[str, State, dict[str, Any]]] | None,
) -> int:
    """Piece ``i``'s states (per chain) into ``found``, and saved (or held): how many saved."""
    saved = 0
    for c, state in bundle.items():
        found[c, i] = state
        entry = (prepared.keys[c, i], state, entry_meta(recipe, prepared, c, i))
        if held is None:
            saved += bool(cache.put(*entry))
        else:
            held.append(entry)
    return saved


def entry_meta(recipe: Any, prepared: Prepared, c: str, i: int | None) -> dict[str, Any]:
    """What ``cache list`` shows of a piece's state (``i``), or of a roll-up (``None``).

    Parameters
    ----------
    recipe : Recipe
        The recipe.
    prepared : Prepared
        The run's plan.
    c : str
        The chain's hash.
    i : int or None
        The piece, or ``None`` for a roll-up.

    Returns
    -------
    dict[str, Any]
        What is shown.

    Examples
    --------
    >>> from pangeo_hpc.batch import open_inputs
    >>> from pangeo_hpc.batch.incremental.plan import prepare
    >>> from pangeo_hpc.batch.incremental.states import entry_meta
    >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    >>> prepared = prepare(inputs.spec, inputs.dataset)  # doctest: +SKIP
    >>> entry_meta(inputs.spec, prepared, prepared.results[0].chain, 0)  # doctest: +SKIP
    """
    plan = prepared.chains[c]
    results = [p.name or recipe.variable for p in prepared.results if p.chain == c]
    files = [f for _, _, fs in prepared.pieces for f in fs] if i is None else prepared.pieces[i][2]
    return {
        "recipe": recipe.name,
        "result": ", ".join(results) + (" (all files merged)" if i is None else ""),
        "reduction": plan.split.reduction.name,
        "chain": plan.chain,
        "files": list(files),
        "variables": list(recipe.variables),
        "created": time.time(),
    }


def keeps_values(plan: ResultPlan) -> bool:
    """Reductions to periods (a file's time steps in periods of their own or shared with
    the files beside it, :attr:`~pangeo_hpc.recipes.traits.Reduction.periods`): their
    roll-up keeps the finished values (a float32 map per month rather than a float64 sum
    and an int32 count), which fill the result as they are.

    Parameters
    ----------
    plan : ResultPlan
        A result's plan.

    Returns
    -------
    bool
        Whether its reduction is to periods.

    Examples
    --------
    >>> from pangeo_hpc.batch import open_inputs
    >>> from pangeo_hpc.batch.incremental.plan import prepare
    >>> from pangeo_hpc.batch.incremental.states import keeps_values
    >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    >>> [keeps_values(p) for p in prepare(inputs.spec, inputs.dataset).results]  # doctest: +SKIP
    """
    return plan.split.how.periods


def reduce(
    plan: ResultPlan, rolled: State | None, parts: list[State]
) -> tuple[dict[str, np.ndarray], State]:
    """The reduction's values from the roll-up and the states of the other pieces, and
    what the next roll-up keeps (the merged state, or for reductions to periods the
    values with their labels).

    Parameters
    ----------
    plan : ResultPlan
        A result's plan.
    rolled : State or None
        The roll-up, or ``None``.
    parts : list[State]
        The states of the other pieces.

    Returns
    -------
    (dict, State)
        The values, and the next roll-up.

    Raises
    ------
    ValueError
        If neither ``rolled`` nor ``parts`` holds a state.

    Examples
    --------
    >>> from pangeo_hpc.batch.incremental.states import reduce
    >>> values, next_rollup = reduce(plan, rolled, parts)  # doctest: +SKIP
    """
    # every block's state, in time order: merged as the run without a cache merges them
    parts = [b for p in parts for b in blocks_of(p) if b["labels"].size]
    if not keeps_values(plan):
        merged = plan.agg.combine([*([rolled] if rolled else []), *parts])
        values = plan.agg.finalize(merged, plan.split.options)
        return {**values, "labels": merged["labels"]}, merged
    dtype = plan.template.dtype
    done = [] if rolled is None else [_finished(rolled, plan, dtype)]
    if parts:
        done.append(_finished(plan.agg.combine(parts), plan, dtype))
    if not done:
        raise ValueError("merge: no time step in any state")
    # the roll-up's groups are not in the new pieces (rollup_pieces): side by side, in order
    labels = np.concatenate([d["labels"] for d in done])
    order = np.argsort(labels, kind="stable")
    value = np.concatenate([d["value"] for d in done])
    if np.any(order[1:] < order[:-1]):
        labels, value = labels[order], value[order]
    values = {"labels": labels, "value": value}
    return values, values


def _finished(state: State, plan: ResultPlan, dtype: Any) -> dict[str, np.ndarray]:
    """The values of a merged state (or a roll-up that holds them already)."""
    if "value" in state:
        return {"labels": state["labels"], "value": state["value"].astype(dtype, copy=False)}
    value = plan.agg.finalize(state, plan.split.options, dtype)["value"]
    return {"labels": state["labels"], "value": value}


def fill(plan: ResultPlan, values: dict[str, np.ndarray]) -> xr.DataArray | xr.Dataset:
    """The reduction's result on the whole data (``plan.template``) with ``values`` (of
    :meth:`~pangeo_hpc.recipes.aggregations.Aggregation.finalize`, and their ``labels``),
    in memory: a DataArray of ``value`` (or of the first output), or a Dataset of every
    output the template holds (a trend with its statistics).

    Parameters
    ----------
    plan : ResultPlan
        A result's plan.
    values : dict[str, np.ndarray]
        The reduction's values.

    Returns
    -------
    xr.DataArray or xr.Dataset
        The result.

    Examples
    --------
    >>> from pangeo_hpc.batch.incremental.states import fill, reduce
    >>> values, rollup = reduce(plan, rolled, parts)  # doctest: +SKIP
    >>> fill(plan, values)  # the reduction's result, in memory  # doctest: +SKIP
    """
    template, labels = plan.template, values["labels"]
    if isinstance(template, xr.Dataset):
        return xr.Dataset(
            {k: _put(template[k], values[k], plan, labels) for k in template.data_vars}
        ).assign_attrs(template.attrs)
    first = next(k for k in plan.agg.outputs(plan.split.options))
    return _put(template, values[first], plan, labels)


def _put(
    template: xr.DataArray, value: np.ndarray, plan: ResultPlan, labels: np.ndarray
) -> xr.DataArray:
    """``value`` (groups first, then the prefix's cells) in ``template``'s layout."""
    cells = plan.dims[1:]
    arranged = xr.DataArray(value, dims=("\x00group", *cells))
    arranged = _select_groups(arranged, template, plan, labels)
    # in memory: the steps after run on NumPy data, through the same kernels as the whole
    # graph's Dask data (climatology, trend, area means), so to float64 rounding the same
    value = arranged.transpose(*template.dims).values.astype(template.dtype, copy=False)
    return template.copy(data=value)


def _select_groups(
    arranged: xr.DataArray, template: xr.DataArray, plan: ResultPlan, labels: np.ndarray
) -> xr.DataArray:
    """The groups of ``arranged`` in the order of the template's group axis (none for a
    time mean or a trend), named as the template's."""
    name, how = plan.split.reduction.name, plan.split.how
    if how.result_groups is None:  # one group (a time mean, a trend)
        return arranged.isel({"\x00group": 0})
    dim = next(d for d in template.dims if d not in arranged.dims)
    wanted = how.result_groups(template[dim].values, plan.split.options)
    at = np.searchsorted(labels, wanted)
    # daily_totals leaves out the days the data do not wholly cover, resample incomplete
    # seasons (as the function decided on the whole data, the template); the others, none
    extra = labels.size != wanted.size and not how.partial_left_out
    if extra or not np.array_equal(labels[np.minimum(at, labels.size - 1)], wanted):
        raise RuntimeError(
            f"{name}: the merged states hold groups {labels[:5]}... but the result wants "
            f"{wanted[:5]}...: a bug, please report it"
        )
    if not np.array_equal(at, np.arange(labels.size)):  # not every group, in order: pick
        arranged = arranged.isel({"\x00group": at})
    return arranged.rename({"\x00group": dim})
