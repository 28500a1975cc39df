"""Incremental and resumable runs: each input file's partial state, cached, then merged.

For every result of a recipe whose chain splits
(:func:`pangeo_hpc.batch.incremental.splitting.split`),
the data the prefix gives are cut where the input files change (``source_pieces`` of
:func:`~pangeo_hpc.io.era5.open_era5`; the plan: :mod:`pangeo_hpc.batch.incremental.plan`);
each piece's state (the reduction's :class:`~pangeo_hpc.recipes.aggregations.Aggregation`,
:mod:`pangeo_hpc.batch.incremental.states`) is one task on the cluster, saved to the cache
(:class:`~pangeo_hpc.batch.incremental.state_cache.StateCache`) as soon as it arrives, keyed by the
files' identity and the chain. States of files already in the cache are not computed
again: a period with one more month reads that month, a run killed at any point goes on
from the files it finished. The merged state gives the reduction's values, put into the
reduction's own lazy result on the whole data (its coordinates and attributes; never
computed) as NumPy data, and the rest of the chain runs on that in this process: the recipe
functions compute through the same aggregations and kernels on NumPy and Dask data alike in
float64, so the answer is the whole graph's to float64 rounding. Each chain also keeps a
roll-up (:mod:`pangeo_hpc.batch.incremental.rollups`), its merged state over every file
(for a resampling, the finished values), so that an update loads one entry and the new
files'. What the run reads is planned once
(:class:`~pangeo_hpc.batch.incremental.read_plan.ReadPlan`)
and reported from that plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import dask.threaded
import xarray as xr

from pangeo_hpc.batch.chains import chain, results_of
from pangeo_hpc.batch.incremental.plan import Prepared, ResultPlan, check, prepare
from pangeo_hpc.batch.incremental.read_plan import ReadPlan, Report, plan_reads, worker_reads
from pangeo_hpc.batch.incremental.rollups import (
    ROLLUP_SHARE,
    load_rollup,
    rollup_pieces,
    save_rollup,
)
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.batch.incremental.states import (
    compute_states,
    entry_meta,
    fill,
    from_cache,
    reduce,
)
from pangeo_hpc.recipes.aggregations import State

__all__ = ["Prepared", "ReadPlan", "Report", "check", "plan_reads", "prepare", "run"]


def run(
    recipe: Any,
    data: xr.Dataset,
    prepared: Prepared,
    client: Any,
    cache: StateCache,
    reads: ReadPlan,
    *,
    here: Any = None,
) -> tuple[xr.Dataset, Report]:
    """Compute the recipe's results from cached and new states (see the module's text);
    ``reads`` is what :func:`~pangeo_hpc.batch.incremental.read_plan.plan_reads` planned with
    ``prepared``: the report is that plan as carried out (:meth:`ReadPlan.as_run`).
    ``here``: a client of this process's threads
    (:class:`~pangeo_hpc.clusters.threads.ThreadClient`) that computes the new files' states
    instead of ``client``'s workers (a few small files: the round trip to a worker would
    take longer; the caller decides); ``client`` still computes what a damaged roll-up
    leaves to read again.

    Parameters
    ----------
    recipe : Recipe
        The recipe.
    data : xr.Dataset
        Its dataset.
    prepared : Prepared
        The plan of :func:`prepare`.
    client : distributed.Client
        A client of the cluster.
    cache : StateCache
        The state cache.
    reads : ReadPlan
        The read plan.
    here : ThreadClient, optional
        A thread client of this process, or ``None``.

    Returns
    -------
    (Dataset, Report)
        The results in memory, and what was read and reused.

    Examples
    --------
    >>> from pangeo_hpc.batch import StateCache, open_inputs
    >>> from pangeo_hpc.batch.incremental.run import run
    >>> cache = StateCache()  # doctest: +SKIP
    >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    >>> prepared, reads = inputs.read_plan(cache)  # doctest: +SKIP
    >>> spec, ds = inputs.spec, inputs.dataset  # doctest: +SKIP
    >>> result, report = run(spec, ds, prepared, client, cache, reads)  # doctest: +SKIP
    >>> report.line()  # doctest: +SKIP
    """
    n_pieces = len(prepared.pieces)
    chains = prepared.chains
    covered = {c: rollup_pieces(cache, prepared, c) for c in chains}
    found: dict[tuple[str, int], State] = {}
    todo, _ = from_cache(prepared, cache, covered, found)
    # Nothing a later run could reuse is cached before the steps after each reduction are
    # known to work (a running mean longer than the data). A run of many files checks them
    # on the lazy templates first and saves each state as it arrives (a killed run keeps
    # them); a run of one file (an update: the check would take longer than the run, 0.2 s
    # for era5-sst-trend) holds its states until the steps have run, then saves them.
    checked = len(todo) > 1
    if checked:
        results_of.finish(recipe, _suffixes(prepared.results, _templates(chains), data))
    held: list[tuple[str, State, dict[str, Any]]] | None = None if checked else []
    with ThreadPoolExecutor(max_workers=1) as background:
        # the roll-ups load while the new files' states are computed
        loading = {
            c: background.submit(load_rollup, cache, prepared, c, covered[c]) for c in chains
        }
        states = client if here is None else here  # its reads are counted where it reads
        before = worker_reads(states)
        saved = compute_states(recipe, prepared, states, cache, todo, found, held)
        read = worker_reads(states, before)
        rolled = {c: loading[c].result() for c in chains}
        lost = {c: set() for c in chains if covered[c] and rolled[c] is None}
        if lost:  # a roll-up damaged or replaced since its pieces were read: file by file
            covered.update(lost)
            more, _ = from_cache(prepared, cache, covered, found, only=lost)
            before = worker_reads(client)
            saved += compute_states(recipe, prepared, client, cache, more, found, held)
            read += worker_reads(client, before)
            for i, work in more.items():
                todo.setdefault(i, {}).update(work)
    reduced = {}
    rollups = []
    with ThreadPoolExecutor(max_workers=1) as writer:  # roll-ups written while the rest runs
        saving = []
        for c, plan in chains.items():
            parts = [found[c, i] for i in range(n_pieces) if i not in covered[c]]
            values, keep = reduce(plan, rolled[c], parts)
            if parts and (rolled[c] is None or len(parts) >= ROLLUP_SHARE * len(covered[c])):
                rollups.append((cache, prepared, c, keep, entry_meta(recipe, prepared, c, None)))
            reduced[c] = fill(plan, values)
        if checked:
            saving = [writer.submit(save_rollup, *r) for r in rollups]
        values = _suffixes(prepared.results, reduced, data)
        result = results_of.finish(recipe, values).compute(scheduler=dask.threaded.get)
        if held is not None:  # the steps ran: the held states and roll-ups may be saved
            saved += sum(bool(cache.put(*h)) for h in held)
            saving = [writer.submit(save_rollup, *r) for r in rollups]
        for done in saving:
            done.result()
    report = Report(reads.as_run(todo), bytes_read=read, states_saved=saved, caching=cache.disabled)
    return result, report


def _templates(chains: dict[str, ResultPlan]) -> dict[str, Any]:
    return {c: plan.template for c, plan in chains.items()}


def _suffixes(
    plans: Sequence[ResultPlan], reduced: dict[str, Any], data: xr.Dataset
) -> dict[str, Any]:
    """Each result: the rest of its chain on its reduced values; steps that results share
    (an anomaly before a trend and before an area mean) run once.

    On reduced values in memory, the package's own steps that do not wait for each other
    run side by side (era5-sst-trend's Nino3.4 beside its anomaly, the anomaly's area mean
    beside its trend): their kernels release the GIL, and the workers are idle by now.
    Those steps have nothing to compute lazily, so they run without the chain's laziness
    guard, which is the process's Dask scheduler (:func:`chain.apply`) and so cannot be set
    from two threads; user functions and lazy values (the templates a run checks its steps
    on first) run one after the other, guarded."""
    steps: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = {}
    ends = {}
    for plan in plans:
        key: tuple[Any, ...] = (plan.chain,)
        for step in plan.split.suffix:
            parent, key = key, (*key, *chain.step_key(step))
            steps.setdefault(key, (parent, step))
        ends[plan.name] = key
    side = (
        len(steps) > 1
        and all(chain.in_memory(v) for v in reduced.values())
        and not any(step.is_user for _, step in steps.values())
    )
    if not side:
        done: dict[tuple[Any, ...], Any] = {}
        for key, (parent, step) in steps.items():  # parents first
            done[key] = chain.apply(step, done.get(parent, reduced.get(parent[0])), data)
        return {name: done[key] if key in done else reduced[key[0]] for name, key in ends.items()}
    futures: dict[tuple[Any, ...], Future[Any]] = {}
    with ThreadPoolExecutor(max_workers=SIDE_BY_SIDE) as pool:
        # first steps first, then second steps, ...: a step waits only on one that has
        # started, and a thread that would wait on a parent takes another first step
        # (era5-sst-trend's Nino3.4 beside its anomaly, not its trend waiting for it)
        for key in sorted(steps, key=len):
            parent, step = steps[key]
            above = futures.get(parent)
            futures[key] = pool.submit(_after, above, reduced[key[0]], step, data)
        return {
            name: futures[key].result() if key in futures else reduced[key[0]]
            for name, key in ends.items()
        }


#: threads running a recipe's steps after its reductions
SIDE_BY_SIDE = 2


def _after(parent: Future[Any] | None, reduced: Any, step: Any, data: xr.Dataset) -> Any:
    """``step`` applied to its parent step's value (or the reduced values), unguarded."""
    value = reduced if parent is None else parent.result()
    return chain.apply(step, value, data, guarded=False)
