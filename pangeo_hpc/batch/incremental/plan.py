"""The plan of an incremental run: each result's chain cut at its reduction, on the data.

:func:`prepare` cuts every result's chain (:func:`~pangeo_hpc.batch.incremental.splitting.split`),
builds the steps before each reduction on the opened data (lazily), finds which time steps
of those data each input file's piece holds and the group of each step (the reduction's
own rules, :meth:`~pangeo_hpc.recipes.traits.Reduction.labels`), and keys each piece's
state in the cache by its files' stamps and the chain. Nothing is read or computed.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import dask.array as darr
import numpy as np
import xarray as xr

from pangeo_hpc.batch.chains import chain
from pangeo_hpc.batch.incremental.keys import entry_key, stamp_files
from pangeo_hpc.batch.incremental.splitting import Split, split
from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.io.assemble import Piece
from pangeo_hpc.recipes.aggregations import Aggregation, years_since_epoch
from pangeo_hpc.recipes.grid import time_name


@dataclass
class ResultPlan:
    """One result's split chain on the opened data.

    Attributes
    ----------
    name : str
        The result (``""`` for a recipe's single result).
    split : Split
        Prefix, reduction, suffix.
    agg : Aggregation
        The reduction's states: fields, per-block state, merge, finish
        (:class:`~pangeo_hpc.recipes.aggregations.Aggregation`).
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
        Years since :data:`pangeo_hpc.recipes.aggregations.EPOCH` per time step (trends).
    rows : list of (int, int)
        The steps of ``data`` each piece holds.
    chain : str
        Hash of the chain up to the reduction.

    Examples
    --------
    >>> from pangeo_hpc.batch import open_inputs
    >>> from pangeo_hpc.batch.incremental.plan import prepare
    >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    >>> plan = prepare(inputs.spec, inputs.dataset).results[0]  # doctest: +SKIP
    >>> plan.name, plan.split.reduction.name, plan.rows[:2]  # doctest: +SKIP
    """

    name: str
    split: Split
    agg: Aggregation
    data: Any
    dims: tuple[str, ...]
    template: xr.DataArray | xr.Dataset
    labels: np.ndarray
    years: np.ndarray | None
    rows: list[tuple[int, int]]
    chain: str

    def uses(self, piece: int) -> bool:
        """Whether the chain uses a time step of ``piece`` (not: another season, a month
        the steps select away).

        Parameters
        ----------
        piece : int
            A piece's index.

        Returns
        -------
        bool
            Whether it is used.

        Examples
        --------
        >>> from pangeo_hpc.batch import open_inputs
        >>> from pangeo_hpc.batch.incremental.plan import prepare
        >>> inputs = open_inputs("era5-nino34-djf", data="data/era5-demo")  # doctest: +SKIP
        >>> plan = prepare(inputs.spec, inputs.dataset).results[0]  # doctest: +SKIP
        >>> [i for i in range(len(plan.rows)) if plan.uses(i)]  # the winters  # doctest: +SKIP
        """
        a, b = self.rows[piece]
        return a != b


@dataclass
class Prepared:
    """What an incremental run will do: its pieces, each result's plan, the cache keys (per
    chain and piece: results whose chains agree up to the reduction share their states),
    and the tree the files are of (``source_root``: names the roll-ups).

    Attributes
    ----------
    pieces : list[Piece]
        The pieces the data is cut into (one file, or one period, each).
    results : list[ResultPlan]
        Each result's plan.
    stamps : list[list[Stamp]]
        The stamps of each piece's files.
    keys : dict[tuple[str, int], str], optional
        The cache key of each ``(chain, piece)``.
    root : str, optional
        The tree the files are of, or ``None``.

    Examples
    --------
    >>> from pangeo_hpc.batch import open_inputs
    >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    >>> prepared, reads = inputs.read_plan(None)  # doctest: +SKIP
    >>> len(prepared.pieces), [r.name for r in prepared.results]  # doctest: +SKIP
    """

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

    def files(self, pieces: Any) -> int:
        """The input files of ``pieces`` (one per variable each).

        Parameters
        ----------
        pieces : Any
            Indices of pieces.

        Returns
        -------
        int
            The count.

        Examples
        --------
        >>> from pangeo_hpc.batch import open_inputs
        >>> from pangeo_hpc.batch.incremental.plan import prepare
        >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
        >>> prepared = prepare(inputs.spec, inputs.dataset)  # doctest: +SKIP
        >>> prepared.files(range(len(prepared.pieces)))  # doctest: +SKIP
        """
        return sum(len(self.pieces[i][2]) for i in pieces)

    def unused(self) -> set[int]:
        """The pieces no result uses a step of (another season, a month the steps select
        away): a run neither reads them nor needs their states.

        Returns
        -------
        set[int]
            Their indices.

        Examples
        --------
        >>> from pangeo_hpc.batch import open_inputs
        >>> from pangeo_hpc.batch.incremental.plan import prepare
        >>> inputs = open_inputs("era5-nino34-djf", data="data/era5-demo")  # doctest: +SKIP
        >>> prepare(inputs.spec, inputs.dataset).unused()  # March to November  # doctest: +SKIP
        """
        plans = self.chains.values()
        return {i for i in range(len(self.pieces)) if not any(p.uses(i) for p in plans)}


def check(recipe: Any, data: xr.Dataset, memo: chain.Memo) -> bool:
    """Whether every result of ``recipe`` splits at a reduction; if so, each one's steps up
    to its reduction are built on ``data`` (checked, kept in ``memo``). Nothing is built
    for a recipe that will run whole.

    Parameters
    ----------
    recipe : Recipe
        The recipe.
    data : xr.Dataset
        Its dataset.
    memo : chain.Memo
        Steps already built on ``data``, added to.

    Returns
    -------
    bool
        Whether it can run incrementally.

    Examples
    --------
    >>> from pangeo_hpc.batch import open_inputs
    >>> from pangeo_hpc.batch.incremental.plan import check
    >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    >>> check(inputs.spec, inputs.dataset, memo={})  # every result splits  # doctest: +SKIP
    """
    cuts = [split(steps) for steps in chain.result_chains(recipe).values()]
    if any(isinstance(cut, str) for cut in cuts):
        return False
    first = data[recipe.variable]
    splits = [cut for cut in cuts if isinstance(cut, Split)]
    chain.read_once(
        lambda: {
            str(i): chain.run_steps([*cut.prefix, cut.reduction], first, data, memo)
            for i, cut in enumerate(splits)
        },
        memo,
    )
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
    :func:`~pangeo_hpc.batch.pipeline.steps.open_dataset`; ``memo``: the steps already built on
    it), or say why it must run whole.

    Parameters
    ----------
    recipe : Recipe
        The recipe.
    data : xr.Dataset
        Its dataset.
    s3 : S3Options, optional
        Endpoint and credentials of ``s3://`` files (their stamps).
    stamps : bool, optional
        Stamp the files (``False``: a plan without cache keys).
    memo : chain.Memo, optional
        Steps already built on ``data``.

    Returns
    -------
    Prepared or str
        The plan, or why the recipe runs whole.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> from pangeo_hpc.batch.chains.recipe_yaml import from_dict
    >>> from pangeo_hpc.batch.incremental.plan import prepare
    >>> from pangeo_hpc.batch.pipeline.steps import open_dataset
    >>> for month in (1, 2):  # two files
    ...     t = pd.date_range(f"2000-0{month}-01", periods=3)
    ...     coords = {"time": t, "lat": [-30.0, 30.0]}
    ...     sst = xr.Dataset({"sst": (("time", "lat"), np.ones((3, 2)))}, coords)
    ...     sst.to_netcdf(f"sst-{month}.nc")
    >>> spec = from_dict({"name": "sst", "description": "SST", "steps": [{"time_mean": {}}],
    ...                   "dataset": {"variable": "sst", "files": "sst-*.nc"}})
    >>> prepared = prepare(spec, open_dataset(spec, "."))
    >>> len(prepared.pieces), prepared.results[0].split.reduction.name, prepared.results[0].rows
    (2, 'time_mean', [(0, 3), (3, 6)])
    """
    pieces = data.encoding.get("source_pieces")
    if not pieces:
        return "the data are not read file by file (a Zarr store): no per-file states"
    t = data[recipe.variable].dims[0]
    times = data[t].values  # datetime64, or cftime dates of any calendar (ordered alike)
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
            for c, plan in prepared.chains.items():
                blocks = block_layout(plan.data.chunks, *plan.rows[i])
                prepared.keys[c, i] = entry_key(prepared.stamps[i], f"{c}:{span}:{blocks}")
    return prepared


def block_layout(chunks: tuple[tuple[int, ...], ...], a: int, b: int) -> str:
    """How the blocks of an array of ``chunks`` (time first) cut its steps ``a:b``, and its
    other axes: a piece's state depends on it, so its key holds it.

    A state is the left fold of its blocks' float64 sums (:mod:`pangeo_hpc.recipes.folds`):
    the same steps cut otherwise (``data.time-chunk-mb`` changed) round otherwise, in the
    last bit of float64 data.

    Parameters
    ----------
    chunks : tuple of tuple of int
        The array's chunks (``dask.array.Array.chunks``), time first.
    a, b : int
        The piece's steps.

    Returns
    -------
    str
        The lengths of the blocks within ``a:b``, then the chunks of the other axes.

    Examples
    --------
    >>> block_layout(((10, 10, 10), (5, 5)), 10, 30)  # two blocks of ten steps
    '10,10|5,5'
    >>> block_layout(((6, 6, 6, 6, 6), (10,)), 12, 30)
    '6,6,6|10'
    """
    edges = np.cumsum((0, *chunks[0]))
    cuts = [a, *(int(e) for e in edges if a < e < b), b]
    lengths = [str(hi - lo) for lo, hi in itertools.pairwise(cuts) if hi > lo]
    return "|".join([",".join(lengths), *(",".join(map(str, c)) for c in chunks[1:])])


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
    agg = cut.aggregation
    labels = cut.how.labels(first[t], cut.options, data)
    years = years_since_epoch(tv) if agg.timed else None
    chain_hash = cut.chain_hash(recipe.variables)
    data_ = first.data if isinstance(first.data, darr.Array) else darr.asarray(first.data)
    dims = tuple(str(d) for d in first.dims)
    return ResultPlan(name, cut, agg, data_, dims, template, labels, years, rows, chain_hash)
