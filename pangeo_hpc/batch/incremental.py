"""Incremental and resumable runs: each input file's partial state, cached, then merged.

For every result of a recipe whose chain splits (:func:`pangeo_hpc.batch.splitting.split`),
the data the prefix gives are cut where the input files change (``source_pieces`` of
:func:`~pangeo_hpc.io.era5.open_era5`); each piece's state (:mod:`pangeo_hpc.batch.states`)
is one task on the cluster, saved to the cache (:class:`~pangeo_hpc.batch.state_cache.StateCache`)
as soon as it arrives, keyed by the files' identity and the chain. States of files already
in the cache are not computed again: a period with one more month reads that month, a run
killed at any point goes on from the files it finished. The merged state gives the
reduction's values, put into the reduction's own lazy result on the whole data (its
coordinates, attributes and chunks; never computed), and the rest of the chain runs on that.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import dask
import dask.array as darr
import numpy as np
import pandas as pd
import xarray as xr

from pangeo_hpc.batch import chain, states
from pangeo_hpc.batch.splitting import Split, split
from pangeo_hpc.batch.state_cache import FileStamp, StateCache, entry_key, stamp_files
from pangeo_hpc.io.assemble import Piece
from pangeo_hpc.io.reader import bytes_read
from pangeo_hpc.recipes.grid import time_name
from pangeo_hpc.recipes.resample import FREQS
from pangeo_hpc.recipes.seasonal import SEASONS, group_index

#: progress lines (INFO): the CLI prints them
log = logging.getLogger(__name__)

#: the state kind of each reduction (resample: its ``stat``)
_KIND = {
    "time_mean": "mean",
    "climatology": "mean",
    "trend": "trend",
    "linear_trend": "trend",
    "daily_totals": "sum",
}


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
    chain and piece: results whose chains agree up to the reduction share their states)."""

    pieces: list[Piece]
    results: list[ResultPlan]
    stamps: list[list[FileStamp]]
    keys: dict[tuple[str, int], str] = field(default_factory=dict)

    @property
    def chains(self) -> dict[str, ResultPlan]:
        """One plan per distinct chain up to the reduction."""
        out: dict[str, ResultPlan] = {}
        for plan in self.results:
            out.setdefault(plan.chain, plan)
        return out


def prepare(
    recipe: Any, data: xr.Dataset, *, s3: Any = None, stamps: bool = True
) -> Prepared | str:
    """Plan an incremental run of ``recipe`` on ``data`` (from
    :func:`~pangeo_hpc.batch.steps.open_dataset`), or say why it must run whole."""
    pieces = data.encoding.get("source_pieces")
    if not pieces:
        return "the data are not read file by file (a Zarr store): no per-file states"
    t = data[recipe.variable].dims[0]
    times = data[t].values
    if times.dtype.kind != "M":
        return f"the time axis {t!r} is not in the standard calendar (datetime64)"
    plans = []
    for name, steps in chain.result_chains(recipe).items():
        cut = split(steps)
        if isinstance(cut, str):
            return f"result {name!r}: {cut}" if name else cut
        plan = _plan(name, cut, recipe, data, t, times, pieces)
        if isinstance(plan, str):
            return plan
        plans.append(plan)
    prepared = Prepared(list(pieces), plans, [])
    if stamps:
        every = stamp_files([f for _, _, files in pieces for f in files], s3)
        at = iter(every)
        prepared.stamps = [[next(at) for _ in files] for _, _, files in pieces]
        for i, (lo, hi, _) in enumerate(pieces):
            span = f"{times[lo]}/{times[hi - 1]}/{hi - lo}"
            for c in prepared.chains:
                prepared.keys[c, i] = entry_key(prepared.stamps[i], f"{c}:{span}")
    return prepared


def _plan(
    name: str,
    cut: Split,
    recipe: Any,
    data: xr.Dataset,
    t: str,
    times: np.ndarray,
    pieces: Sequence[Piece],
) -> ResultPlan | str:
    value = chain.run_steps(cut.prefix, data[recipe.variable], data)
    if not isinstance(value, xr.DataArray) or t not in value.dims or time_name(value) != t:
        return f"result {name!r}: the steps before {cut.reduction.name} change the time axis"
    template = chain.apply(cut.reduction, value, data)
    first = value.transpose(t, ...)
    tv = first[t].values
    rows = [
        (
            int(np.searchsorted(tv, times[lo], "left")),
            int(np.searchsorted(tv, times[hi - 1], "right")),
        )
        for lo, hi, _ in pieces
    ]
    kind = _KIND.get(cut.reduction.name) or str(cut.options.get("stat", "mean"))
    labels = _labels(cut, first[t], data)
    years = None
    if kind == "trend":
        years = (tv - states.EPOCH).astype("timedelta64[s]").astype("f8") / (365.2425 * 86400)
    chain_hash = cut.chain_hash(recipe.variables)
    data_ = first.data if isinstance(first.data, darr.Array) else darr.asarray(first.data)
    dims = tuple(str(d) for d in first.dims)
    return ResultPlan(name, cut, kind, data_, dims, template, labels, years, rows, chain_hash)


def _labels(cut: Split, time: xr.DataArray, data: xr.Dataset) -> np.ndarray:
    """The state group of each time step (see :mod:`pangeo_hpc.batch.states`)."""
    name, options = cut.reduction.name, cut.options
    values = time.values
    if name == "daily_totals":  # the day each step's interval lies in (its start's)
        bounds = data.get(str(time.attrs.get("bounds", "")))
        if bounds is not None and bounds.dims[0] == time.dims[0]:
            starts = bounds.sel({time.dims[0]: values}).values.min(axis=1)
        else:
            starts = values - np.median(np.diff(values))
        return starts.astype("datetime64[D]").astype("datetime64[ns]").view("i8")
    if name == "resample":
        alias = FREQS.get(options["freq"], options["freq"])
        index = pd.DatetimeIndex(values)
        starts = pd.Series(index, index=index).resample(alias).min().index.values
        at = np.searchsorted(starts, values, "right") - 1
        return starts[at].astype("datetime64[ns]").view("i8")
    if name == "climatology":
        codes = group_index(time, options.get("freq", "monthly")).astype("i8")
        reference = options.get("reference")
        if reference is not None:
            month = values.astype("datetime64[M]")
            first, last = (np.datetime64(str(r)[:7], "M") for r in reference)
            codes = np.where((month >= first) & (month <= last), codes, -1)
        return codes
    return np.zeros(values.size, "i8")


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
    from distributed import as_completed

    n_pieces = len(prepared.pieces)
    chains = prepared.chains
    found: dict[tuple[str, int], states.State] = {}
    rollups = {c: _rollup(cache, prepared, c) for c in chains}
    for (c, i), key in prepared.keys.items():
        if i in rollups[c][1]:
            continue
        got = cache.get(key)
        if got is not None:
            found[c, i] = got[0]
    todo: dict[int, dict[str, Any]] = {}
    skipped = set()
    for i in range(n_pieces):
        for c, plan in chains.items():
            if (c, i) in found or i in rollups[c][1]:
                continue
            a, b = plan.rows[i]
            if a == b:  # nothing of this file is used (another season, another month)
                found[c, i] = states.empty(plan.kind, tuple(plan.data.shape[1:]))
                continue
            todo.setdefault(i, {})[c] = piece_state(plan, i)
        if i not in todo and all(p.rows[i][0] == p.rows[i][1] for p in chains.values()):
            skipped.add(i)
    before = worker_reads(client)
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
            saved += bool(cache.put(prepared.keys[c, i], state, _meta(recipe, prepared, c, i)))
        if done == len(futures) or done % max(1, len(futures) // 10) == 0:
            log.info(f"states: {done} of {len(futures)} files, {time.perf_counter() - t0:.1f} s")
    read = worker_reads(client, before)
    reduced = {}
    with ThreadPoolExecutor(max_workers=1) as writer:  # roll-ups written while the rest runs
        saving = []
        for c, plan in chains.items():
            state, covered = rollups[c]
            parts = [found[c, i] for i in range(n_pieces) if i not in covered]
            merged = states.merge([*([state] if state else []), *parts], plan.kind)
            if parts:  # something new: the next run starts from this
                meta = _meta(recipe, prepared, c, None)
                saving.append(writer.submit(_save_rollup, cache, prepared, c, merged, meta))
            reduced[c] = fill(plan, merged)
        values = _suffixes(prepared.results, reduced, data)
        result = chain.finish(recipe, values).compute(scheduler="threads")
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


#: the array of a roll-up entry that lists the entry keys of the pieces merged into it
_PIECES = "merged_pieces"


def _rollup_key(prepared: Prepared, c: str) -> str:
    """The roll-up of chain ``c`` over this tree: one entry, replaced by each run."""
    parts = [f.split("/") for _, _, fs in prepared.pieces for f in fs]
    common = []
    for column in zip(*parts, strict=False):
        if any(name != column[0] for name in column):
            break
        common.append(column[0])
    return entry_key([], f"rollup:{c}:{'/'.join(common)}")


def _rollup(cache: StateCache, prepared: Prepared, c: str) -> tuple[states.State | None, set[int]]:
    """The merged state of the last run of chain ``c`` on this tree and the pieces of this
    run it holds, if every piece it holds is one of this run's (else none: a file changed,
    or the period starts later)."""
    got = cache.get(_rollup_key(prepared, c))
    if got is None:
        return None, set()
    arrays, _ = got
    covered = _covered(prepared, c, arrays.pop(_PIECES))
    if covered is None:
        return None, set()
    return arrays, covered


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
        held = cache.peek(_rollup_key(prepared, c), _PIECES)
        in_rollup = (None if held is None else _covered(prepared, c, held)) or set()
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


def fill(plan: ResultPlan, merged: states.State) -> xr.DataArray | xr.Dataset:
    """The reduction's result on the whole data (``plan.template``) with the merged state's
    values, chunked as the template."""
    values = states.finish_values(merged, plan.kind, plan.split.options)
    template = plan.template
    if plan.kind == "trend":
        if isinstance(template, xr.Dataset):
            return xr.Dataset(
                {
                    k: _put(template[k], values[k], plan, merged["labels"])
                    for k in template.data_vars
                }
            ).assign_attrs(template.attrs)
        return _put(template, values["trend"], plan, merged["labels"])
    return _put(template, values["value"], plan, merged["labels"])


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
    out = template.copy(data=arranged.transpose(*template.dims).values.astype(template.dtype))
    if template.chunks is None:
        return out
    # chunked as the whole graph has it: the steps after run the same code on the same
    # values (a climatology of Dask data sums in float64, of NumPy data in float32)
    return out.chunk(dict(zip(template.dims, template.chunks, strict=True)))


def _select_groups(
    arranged: xr.DataArray, template: xr.DataArray, plan: ResultPlan, labels: np.ndarray
) -> xr.DataArray:
    """The groups of ``arranged`` in the order of the template's group axis (none for a
    time mean), named as the template's."""
    name = plan.split.reduction.name
    if name == "time_mean":
        return arranged.isel({"\x00group": 0})
    dim = next(d for d in template.dims if d not in arranged.dims)
    coord = template[dim].values
    if name in ("resample", "daily_totals"):
        wanted = coord.astype("datetime64[ns]").view("i8")
    elif dim == "season":
        wanted = np.array([SEASONS.index(str(s)) for s in coord])
    else:
        wanted = coord.astype("i8")
    at = np.searchsorted(labels, wanted)
    # daily_totals leaves out the days the data do not wholly cover; the others, none
    extra = labels.size != wanted.size and name != "daily_totals"
    if extra or not np.array_equal(labels[np.minimum(at, labels.size - 1)], wanted):
        raise RuntimeError(
            f"{name}: the merged states hold groups {labels[:5]}... but the result wants "
            f"{wanted[:5]}...: a bug, please report it"
        )
    return arranged.isel({"\x00group": at}).rename({"\x00group": dim})


def worker_reads(client: Any, before: dict[str, int] | None = None) -> Any:
    """Each worker's :func:`~pangeo_hpc.io.reader.bytes_read`; with ``before``: the bytes
    read since then, summed over the workers (a worker new since then from zero)."""
    now = client.run(bytes_read)
    if before is None:
        return now
    return int(sum(v - before.get(k, 0) for k, v in now.items()))
