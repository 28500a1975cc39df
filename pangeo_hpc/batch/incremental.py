"""Incremental and resumable runs: each input file's partial state, cached, then merged.

For every result of a recipe whose chain splits (:func:`pangeo_hpc.batch.splitting.split`),
the data the prefix gives are cut where the input files change (``source_pieces`` of
:func:`~pangeo_hpc.io.era5.open_era5`); each piece's state (:mod:`pangeo_hpc.batch.states`)
is one task on the cluster, saved to the cache (:class:`~pangeo_hpc.batch.state_cache.StateCache`)
as soon as it arrives, keyed by the files' identity and the chain. States of files already
in the cache are not computed again: a period with one more month reads that month, a run
killed at any point goes on from the files it finished. The merged state gives the
reduction's values, put into the reduction's own lazy result on the whole data (its
coordinates and attributes; never computed) as NumPy data, and the rest of the chain runs
on that in this process: the recipe functions' kernels (climatology, trend, area means) sum
NumPy and Dask data alike in float64, so the answer is the whole graph's to float64
rounding. Each chain also keeps a roll-up, its merged state over every file (for a
resampling, the finished values), so that an update loads one entry and the new files'.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import dask
import dask.array as darr
import numpy as np
import xarray as xr

from pangeo_hpc.batch import chain, states
from pangeo_hpc.batch.splitting import Split, split
from pangeo_hpc.batch.state_cache import StateCache, entry_key, stamp_files
from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.io.assemble import Piece
from pangeo_hpc.io.reader import bytes_read
from pangeo_hpc.recipes.grid import time_name

#: progress lines (INFO): the CLI prints them
log = logging.getLogger(__name__)


@dataclass
class ResultPlan:
    """One result's split chain on the opened data.

    Attributes
    ----------
    name : str
        The result (``""`` for a recipe's single result).
    split : Split
        Prefix, reduction, suffix.
    kind : str
        The state kind (:func:`pangeo_hpc.batch.states.fields_of`).
    data : dask.array.Array
        The prefix's lazy values, time first.
    dims : tuple of str
        Their dimensions.
    template : DataArray or Dataset
        The reduction's lazy result on the whole data: coordinates, attributes and chunks
        of what the merged state fills. Never computed.
    labels : numpy.ndarray
        The state group of each time step of ``data`` (-1: not used).
    years : numpy.ndarray or None
        Years since :data:`pangeo_hpc.batch.states.EPOCH` per time step (trends).
    rows : list of (int, int)
        The steps of ``data`` each piece holds.
    chain : str
        Hash of the chain up to the reduction.
    """

    name: str
    split: Split
    kind: str
    data: Any
    dims: tuple[str, ...]
    template: xr.DataArray | xr.Dataset
    labels: np.ndarray
    years: np.ndarray | None
    rows: list[tuple[int, int]]
    chain: str


@dataclass
class Prepared:
    """What an incremental run will do: its pieces, each result's plan, the cache keys (per
    chain and piece: results whose chains agree up to the reduction share their states),
    and the tree the files are of (``source_root``: names the roll-ups)."""

    pieces: list[Piece]
    results: list[ResultPlan]
    stamps: list[list[Stamp]]
    keys: dict[tuple[str, int], str] = field(default_factory=dict)
    root: str | None = None

    @property
    def chains(self) -> dict[str, ResultPlan]:
        """One plan per distinct chain up to the reduction."""
        out: dict[str, ResultPlan] = {}
        for plan in self.results:
            out.setdefault(plan.chain, plan)
        return out


def check(recipe: Any, data: xr.Dataset, memo: chain.Memo) -> bool:
    """Whether every result of ``recipe`` splits at a reduction; if so, each one's steps up
    to its reduction are built on ``data`` (checked, kept in ``memo``). Nothing is built
    for a recipe that will run whole."""
    cuts = [split(steps) for steps in chain.result_chains(recipe).values()]
    if any(isinstance(cut, str) for cut in cuts):
        return False
    for cut in cuts:
        assert isinstance(cut, Split)
        chain.run_steps([*cut.prefix, cut.reduction], data[recipe.variable], data, memo)
    return True


def prepare(
    recipe: Any,
    data: xr.Dataset,
    *,
    s3: Any = None,
    stamps: bool = True,
    memo: chain.Memo | None = None,
) -> Prepared | str:
    """Plan an incremental run of ``recipe`` on ``data`` (from
    :func:`~pangeo_hpc.batch.steps.open_dataset`; ``memo``: the steps already built on
    it), or say why it must run whole."""
    pieces = data.encoding.get("source_pieces")
    if not pieces:
        return "the data are not read file by file (a Zarr store): no per-file states"
    t = data[recipe.variable].dims[0]
    times = data[t].values
    if times.dtype.kind != "M":
        return f"the time axis {t!r} is not in the standard calendar (datetime64)"
    plans: list[ResultPlan] = []
    memo = {} if memo is None else memo
    for name, steps in chain.result_chains(recipe).items():
        cut = split(steps)
        if isinstance(cut, str):
            return f"result {name!r}: {cut}" if name else cut
        same = next((p for p in plans if p.chain == cut.chain_hash(recipe.variables)), None)
        if same is not None:  # a chain planned already: the same data, labels and template
            plans.append(replace(same, name=name, split=cut))
            continue
        plan = _plan(name, cut, recipe, data, t, times, pieces, memo)
        if isinstance(plan, str):
            return plan
        plans.append(plan)
    prepared = Prepared(list(pieces), plans, [], root=data.encoding.get("source_root"))
    if stamps:
        every = _stamps([f for _, _, files in pieces for f in files], data, s3)
        at = iter(every)
        prepared.stamps = [[next(at) for _ in files] for _, _, files in pieces]
        for i, (lo, hi, _) in enumerate(pieces):
            span = f"{times[lo]}/{times[hi - 1]}/{hi - lo}"
            for c in prepared.chains:
                prepared.keys[c, i] = entry_key(prepared.stamps[i], f"{c}:{span}")
    return prepared


def _stamps(files: list[str], data: xr.Dataset, s3: Any) -> list[Stamp]:
    """The stamps the catalog made when it opened ``files`` (``source_stamps``), else made
    now: a file's identity is taken once, where it is first looked at."""
    carried = data.encoding.get("source_stamps") or {}
    if all(f in carried for f in files):
        return [carried[f] for f in files]
    return stamp_files(files, s3)


def _plan(
    name: str,
    cut: Split,
    recipe: Any,
    data: xr.Dataset,
    t: str,
    times: np.ndarray,
    pieces: Sequence[Piece],
    memo: chain.Memo,
) -> ResultPlan | str:
    value = chain.run_steps(cut.prefix, data[recipe.variable], data, memo)
    if not isinstance(value, xr.DataArray) or t not in value.dims or time_name(value) != t:
        return f"result {name!r}: the steps before {cut.reduction.name} change the time axis"
    template = chain.run_steps([*cut.prefix, cut.reduction], data[recipe.variable], data, memo)
    first = value.transpose(t, ...)
    tv = first[t].values
    rows = [
        (
            int(np.searchsorted(tv, times[lo], "left")),
            int(np.searchsorted(tv, times[hi - 1], "right")),
        )
        for lo, hi, _ in pieces
    ]
    kind = cut.kind
    labels = cut.how.labels(first[t], cut.options, data)
    years = None
    if kind == "trend":
        years = (tv - states.EPOCH).astype("timedelta64[s]").astype("f8") / (365.2425 * 86400)
    chain_hash = cut.chain_hash(recipe.variables)
    data_ = first.data if isinstance(first.data, darr.Array) else darr.asarray(first.data)
    dims = tuple(str(d) for d in first.dims)
    return ResultPlan(name, cut, kind, data_, dims, template, labels, years, rows, chain_hash)


def piece_state(plan: ResultPlan, piece: int) -> Any:
    """The state of one piece as a Dask Delayed: a task per block, merged along time, laid
    side by side over the cells."""
    a, b = plan.rows[piece]
    arr = plan.data[a:b]
    blocks = arr.to_delayed(optimize_graph=False)  # the reads shared by every result
    edges = np.concatenate([[0], np.cumsum(arr.chunks[0])])
    labels = plan.labels[a:b]
    years = None if plan.years is None else plan.years[a:b]
    block_state = dask.delayed(states.block_state, pure=True)
    merge = dask.delayed(states.merge, pure=True)
    cells: dict[tuple[int, ...], Any] = {}
    for idx in np.ndindex(blocks.shape[1:]):
        along = []
        for i in range(blocks.shape[0]):
            lo, hi = edges[i], edges[i + 1]
            part = None if years is None else years[lo:hi]
            along.append(block_state(blocks[(i, *idx)], labels[lo:hi], plan.kind, part))
        cells[idx] = along[0] if len(along) == 1 else merge(along, plan.kind)
    grid = _nest(cells, blocks.shape[1:])
    return dask.delayed(states.side_by_side, pure=True)(grid, plan.kind)


def _nest(cells: dict[tuple[int, ...], Any], shape: tuple[int, ...]) -> Any:
    if not shape:
        return cells[()]
    return [
        _nest({k[1:]: v for k, v in cells.items() if k[0] == i}, shape[1:]) for i in range(shape[0])
    ]


@dataclass
class Report:
    """What an incremental (or whole) run read and reused, for ``summary.json``."""

    incremental: bool
    why: str | None = None
    files: int = 0
    files_reused: int = 0
    files_read: int = 0
    files_skipped: int = 0
    bytes_read: int = 0
    states_saved: int = 0
    cache: str | None = None
    caching: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    def line(self) -> str:
        """One line for the log: what was reused and read."""
        mb = self.bytes_read / 1e6
        if not self.incremental:
            return f"not incremental ({self.why}): read {_files(self.files)}, {mb:.1f} MB"
        whose = "file's" if self.files == 1 else "files'"
        text = (
            f"incremental: {self.files_reused} of {self.files} {whose} states reused, "
            f"{_files(self.files_read)} read ({mb:.1f} MB)"
        )
        if self.files_skipped:
            text += f", {self.files_skipped} not needed"
        return text + (f"; {self.caching}" if self.caching else "")


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def run(
    recipe: Any,
    data: xr.Dataset,
    prepared: Prepared,
    client: Any,
    cache: StateCache,
) -> tuple[xr.Dataset, Report]:
    """Compute the recipe's results from cached and new states (see the module's text)."""
    n_pieces = len(prepared.pieces)
    chains = prepared.chains
    covered = {c: _rollup_pieces(cache, prepared, c) for c in chains}
    found: dict[tuple[str, int], states.State] = {}
    todo, skipped = _from_cache(prepared, cache, covered, found)
    # Nothing a later run could reuse is cached before the steps after each reduction are
    # known to work (a running mean longer than the data). A run of many files checks them
    # on the lazy templates first and saves each state as it arrives (a killed run keeps
    # them); a run of one file (an update: the check would take longer than the run, 0.2 s
    # for era5-sst-trend) holds its states until the steps have run, then saves them.
    checked = len(todo) > 1
    if checked:
        chain.finish(recipe, _suffixes(prepared.results, _templates(chains), data))
    held: list[tuple[str, states.State, dict[str, Any]]] | None = None if checked else []
    before = worker_reads(client)
    with ThreadPoolExecutor(max_workers=1) as background:
        # the roll-ups load while the workers compute the new files' states
        loading = {
            c: background.submit(_load_rollup, cache, prepared, c, covered[c]) for c in chains
        }
        saved = _compute_states(recipe, prepared, client, cache, todo, found, held)
        rolled = {c: loading[c].result() for c in chains}
        lost = {c: set() for c in chains if covered[c] and rolled[c] is None}
        if lost:  # a roll-up damaged or replaced since its pieces were read: file by file
            covered.update(lost)
            more, _ = _from_cache(prepared, cache, covered, found, only=lost)
            saved += _compute_states(recipe, prepared, client, cache, more, found, held)
            for i, work in more.items():
                todo.setdefault(i, {}).update(work)
    read = worker_reads(client, before)
    reduced = {}
    rollups = []
    with ThreadPoolExecutor(max_workers=1) as writer:  # roll-ups written while the rest runs
        saving = []
        for c, plan in chains.items():
            parts = [found[c, i] for i in range(n_pieces) if i not in covered[c]]
            values, keep = _reduce(plan, rolled[c], parts)
            if parts and (rolled[c] is None or len(parts) >= ROLLUP_SHARE * len(covered[c])):
                rollups.append((cache, prepared, c, keep, _meta(recipe, prepared, c, None)))
            reduced[c] = fill(plan, values)
        if checked:
            saving = [writer.submit(_save_rollup, *r) for r in rollups]
        values = _suffixes(prepared.results, reduced, data)
        result = chain.finish(recipe, values).compute(scheduler="threads")
        if held is not None:  # the steps ran: the held states and roll-ups may be saved
            saved += sum(bool(cache.put(*h)) for h in held)
            saving = [writer.submit(_save_rollup, *r) for r in rollups]
        for done in saving:
            done.result()
    reused = [i for i in range(n_pieces) if i not in todo and i not in skipped]
    report = Report(
        incremental=True,
        files=_count_files(prepared, range(n_pieces)),
        files_reused=_count_files(prepared, reused),
        files_read=_count_files(prepared, todo),
        files_skipped=_count_files(prepared, skipped),
        bytes_read=read,
        states_saved=saved,
        cache=str(cache.folder),
        caching=cache.disabled,
    )
    return result, report


def _keeps_values(plan: ResultPlan) -> bool:
    """Reductions to periods (a file's time steps in periods of their own or shared with
    the files beside it, :attr:`~pangeo_hpc.recipes.traits.Reduction.periods`): their
    roll-up keeps the finished values (a float32 map per month rather than a float64 sum
    and an int32 count), which fill the result as they are."""
    return plan.split.how.periods


def _reduce(
    plan: ResultPlan, rolled: states.State | None, parts: list[states.State]
) -> tuple[dict[str, np.ndarray], states.State]:
    """The reduction's values from the roll-up and the states of the other pieces, and
    what the next roll-up keeps (the merged state, or for reductions to periods the
    values with their labels)."""
    parts = [p for p in parts if p["labels"].size]
    if not _keeps_values(plan):
        merged = states.merge([*([rolled] if rolled else []), *parts], plan.kind)
        values = states.finish_values(merged, plan.kind, plan.split.options)
        return {**values, "labels": merged["labels"]}, merged
    dtype = plan.template.dtype
    done = [] if rolled is None else [_finished(rolled, plan, dtype)]
    if parts:
        done.append(_finished(states.merge(parts, plan.kind), plan, dtype))
    if not done:
        raise ValueError("merge: no time step in any state")
    # the roll-up's groups are not in the new pieces (_rollup_pieces): side by side, in order
    labels = np.concatenate([d["labels"] for d in done])
    order = np.argsort(labels, kind="stable")
    value = np.concatenate([d["value"] for d in done])
    if np.any(order[1:] < order[:-1]):
        labels, value = labels[order], value[order]
    values = {"labels": labels, "value": value}
    return values, values


def _finished(state: states.State, plan: ResultPlan, dtype: Any) -> dict[str, np.ndarray]:
    """The values of a merged state (or a roll-up that holds them already)."""
    if "value" in state:
        return {"labels": state["labels"], "value": state["value"].astype(dtype, copy=False)}
    value = states.finish_values(state, plan.kind, plan.split.options, dtype)["value"]
    return {"labels": state["labels"], "value": value}


def _piece_groups(plan: ResultPlan, pieces: Any) -> set[int]:
    """The groups (labels) the time steps of ``pieces`` fall in."""
    out: set[int] = set()
    for i in pieces:
        a, b = plan.rows[i]
        out.update(int(v) for v in np.unique(plan.labels[a:b]) if v >= 0)
    return out


def _from_cache(
    prepared: Prepared,
    cache: StateCache,
    covered: dict[str, set[int]],
    found: dict[tuple[str, int], states.State],
    only: Any = None,
) -> tuple[dict[int, dict[str, Any]], set[int]]:
    """Into ``found``: the cached state of each piece and chain (of chains ``only``) not in
    its roll-up (``covered``), and an empty one where a chain uses nothing of a piece. Then
    what is left to compute, per piece and chain (Delayed), and the pieces no chain uses."""
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
            a, b = plan.rows[i]
            if a == b:  # nothing of this file is used (another season, another month)
                found[c, i] = states.empty(plan.kind, tuple(plan.data.shape[1:]))
                continue
            todo.setdefault(i, {})[c] = piece_state(plan, i)
        if i not in todo and all(p.rows[i][0] == p.rows[i][1] for p in chains.values()):
            skipped.add(i)
    return todo, skipped


def _compute_states(
    recipe: Any,
    prepared: Prepared,
    client: Any,
    cache: StateCache,
    todo: dict[int, dict[str, Any]],
    found: dict[tuple[str, int], states.State],
    held: list[tuple[str, states.State, dict[str, Any]]] | None = None,
) -> int:
    """Compute the states of ``todo`` on the cluster, one task per piece, each saved to the
    cache as it arrives (a killed run keeps them), or added to ``held`` (saved later by the
    caller), and put into ``found``: how many saved."""
    from distributed import as_completed

    futures = {}
    if todo:
        bundles = [dask.delayed(dict)(todo[i]) for i in sorted(todo)]
        for i, fut in zip(sorted(todo), client.compute(bundles), strict=True):
            futures[fut] = i
    saved = 0
    t0 = time.perf_counter()
    for done, fut in enumerate(as_completed(list(futures)), start=1):
        i = futures[fut]
        for c, state in fut.result().items():
            found[c, i] = state
            entry = (prepared.keys[c, i], state, _meta(recipe, prepared, c, i))
            if held is None:
                saved += bool(cache.put(*entry))
            else:
                held.append(entry)
        if done == len(futures) or done % max(1, len(futures) // 10) == 0:
            log.info(f"states: {done} of {len(futures)} files, {time.perf_counter() - t0:.1f} s")
    return saved


def _templates(chains: dict[str, ResultPlan]) -> dict[str, Any]:
    return {c: plan.template for c, plan in chains.items()}


def _count_files(prepared: Prepared, pieces: Any) -> int:
    """The input files of ``pieces`` (one per variable each)."""
    return sum(len(prepared.pieces[i][2]) for i in pieces)


def _suffixes(
    plans: Sequence[ResultPlan], reduced: dict[str, Any], data: xr.Dataset
) -> dict[str, Any]:
    """Each result: the rest of its chain on its reduced values; steps that results share
    (an anomaly before a trend and before an area mean) run once."""
    done: dict[tuple[Any, ...], Any] = {}
    values = {}
    for plan in plans:
        value, key = reduced[plan.chain], (plan.chain,)
        for step in plan.split.suffix:
            key = (*key, step.name, repr(sorted(chain.options_of(step).items())))
            if key not in done:
                done[key] = chain.apply(step, value, data)
            value = done[key]
        values[plan.name] = value
    return values


#: a roll-up is written again once the pieces outside it (each loaded from its own entry)
#: are this share of those it holds: a month added to 20 years loads one small entry more
#: rather than writing 20 years of states again
ROLLUP_SHARE = 0.05
#: the array of a roll-up entry that lists the entry keys of the pieces merged into it
_PIECES = "merged_pieces"


def _rollup_key(prepared: Prepared, c: str) -> str:
    """The roll-up of chain ``c`` over this tree (``source_root``, else the folder its
    files share): one entry, replaced as runs go on."""
    if prepared.root:
        return entry_key([], f"rollup:{c}:{prepared.root}")
    parts = [f.split("/") for _, _, fs in prepared.pieces for f in fs]
    common = []
    for column in zip(*parts, strict=False):
        if any(name != column[0] for name in column):
            break
        common.append(column[0])
    return entry_key([], f"rollup:{c}:{'/'.join(common)}")


def _rollup_pieces(cache: StateCache, prepared: Prepared, c: str, report: bool = True) -> set[int]:
    """The pieces of this run the roll-up of chain ``c`` holds (its list of pieces read
    alone): none if it holds a piece this run has not (a file changed, the period starts
    later), or finished groups a piece outside it adds to. ``report``: a roll-up that
    cannot be read is reported and removed (:meth:`StateCache.get`)."""
    key = _rollup_key(prepared, c)
    held = cache.peek(key, _PIECES)
    if held is None:
        if report and cache.has(key):
            cache.get(key)  # damaged: a warning, removed
        return set()
    covered = _covered(prepared, c, held) or set()
    plan = prepared.chains[c]
    if covered and _keeps_values(plan):  # finished groups: no other file may add to them
        others = set(range(len(prepared.pieces))) - covered
        if _piece_groups(plan, covered) & _piece_groups(plan, others):
            return set()
    return covered


def _load_rollup(
    cache: StateCache, prepared: Prepared, c: str, covered: set[int]
) -> states.State | None:
    """The roll-up of chain ``c`` if it still holds just the pieces ``covered`` (another run
    may have replaced it since, or it may be damaged: then none)."""
    if not covered:
        return None
    got = cache.get(_rollup_key(prepared, c))
    if got is None:
        return None
    arrays, _ = got
    if _covered(prepared, c, arrays.pop(_PIECES)) != covered:
        return None
    return arrays


def _covered(prepared: Prepared, c: str, held: np.ndarray) -> set[int] | None:
    """The pieces of this run a roll-up of chain ``c`` holding the entry keys ``held``
    covers, or ``None`` if it holds any other piece (then it is of no use)."""
    keys = set(held.tolist())
    mine = {prepared.keys[c, i]: i for i in range(len(prepared.pieces))}
    if not keys <= mine.keys():
        return None
    return {mine[k] for k in keys}


def unused_pieces(prepared: Prepared) -> set[int]:
    """The pieces no result uses a step of (another season, a month the steps select
    away): a run neither reads them nor needs their states."""
    plans = prepared.chains.values()
    return {
        i for i in range(len(prepared.pieces)) if all(p.rows[i][0] == p.rows[i][1] for p in plans)
    }


def cached_pieces(prepared: Prepared, cache: StateCache) -> set[int]:
    """The pieces :func:`run` would not read: for every chain that uses a piece, its state
    is in ``cache``, as an entry of its own or inside the roll-up of the last run.

    Cheap and read-only, for a plan: per-piece entries are looked for by name
    (:meth:`~pangeo_hpc.batch.state_cache.StateCache.has`), of the roll-up only its list of
    pieces is read (:meth:`~pangeo_hpc.batch.state_cache.StateCache.peek`); no state is
    loaded and none is marked used. A damaged entry counts as cached here; the run finds it
    out, removes it and reads its files. Unused pieces (:func:`unused_pieces`) are not in it.

    Parameters
    ----------
    prepared : Prepared
        From :func:`prepare` (with ``stamps=True``: the keys).
    cache : StateCache
        Where a run would look.

    Returns
    -------
    set of int
        Indexes into ``prepared.pieces``.
    """
    n = len(prepared.pieces)
    cached = set(range(n)) - unused_pieces(prepared)
    for c, plan in prepared.chains.items():
        in_rollup = _rollup_pieces(cache, prepared, c, report=False)
        for i in list(cached):
            a, b = plan.rows[i]
            if a == b or i in in_rollup:
                continue
            if not cache.has(prepared.keys[c, i]):
                cached.discard(i)
    return cached


def _save_rollup(
    cache: StateCache, prepared: Prepared, c: str, merged: states.State, meta: dict[str, Any]
) -> None:
    keys = np.array([prepared.keys[c, i] for i in range(len(prepared.pieces))], dtype="<U64")
    cache.put(_rollup_key(prepared, c), {**merged, _PIECES: keys}, meta)


def _meta(recipe: Any, prepared: Prepared, c: str, i: int | None) -> dict[str, Any]:
    """What ``cache list`` shows of a piece's state (``i``), or of a roll-up (``None``)."""
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


def fill(plan: ResultPlan, values: dict[str, np.ndarray]) -> xr.DataArray | xr.Dataset:
    """The reduction's result on the whole data (``plan.template``) with ``values`` (of
    :func:`~pangeo_hpc.batch.states.finish_values`, and their ``labels``), in memory."""
    template, labels = plan.template, values["labels"]
    if plan.kind == "trend":
        if isinstance(template, xr.Dataset):
            return xr.Dataset(
                {k: _put(template[k], values[k], plan, labels) for k in template.data_vars}
            ).assign_attrs(template.attrs)
        return _put(template, values["trend"], plan, labels)
    return _put(template, values["value"], plan, labels)


def _put(
    template: xr.DataArray, value: np.ndarray, plan: ResultPlan, labels: np.ndarray
) -> xr.DataArray:
    """``value`` (groups first, then the prefix's cells) in ``template``'s layout."""
    cells = plan.dims[1:]
    if value.ndim == len(cells):  # trend: no group axis
        arranged = xr.DataArray(value, dims=cells)
    else:
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
    time mean), named as the template's."""
    name, how = plan.split.reduction.name, plan.split.how
    if how.result_groups is None:  # one group (a time mean)
        return arranged.isel({"\x00group": 0})
    dim = next(d for d in template.dims if d not in arranged.dims)
    wanted = how.result_groups(template[dim].values)
    at = np.searchsorted(labels, wanted)
    # daily_totals leaves out the days the data do not wholly cover; the others, none
    extra = labels.size != wanted.size and not how.partial_left_out
    if extra or not np.array_equal(labels[np.minimum(at, labels.size - 1)], wanted):
        raise RuntimeError(
            f"{name}: the merged states hold groups {labels[:5]}... but the result wants "
            f"{wanted[:5]}...: a bug, please report it"
        )
    if not np.array_equal(at, np.arange(labels.size)):  # not every group, in order: pick
        arranged = arranged.isel({"\x00group": at})
    return arranged.rename({"\x00group": dim})


def worker_reads(client: Any, before: dict[str, int] | None = None) -> Any:
    """Each worker's :func:`~pangeo_hpc.io.reader.bytes_read`; with ``before``: the bytes
    read since then, summed over the workers (a worker new since then from zero)."""
    now = client.run(bytes_read)
    if before is None:
        return now
    return int(sum(v - before.get(k, 0) for k, v in now.items()))
