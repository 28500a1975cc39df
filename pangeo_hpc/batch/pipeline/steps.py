"""The first two steps of a recipe run, each callable on its own from a notebook: open the
inputs and build the chain's lazy result (:func:`open_inputs`), then compute it on a Dask
client (:func:`compute`). :func:`pangeo_hpc.batch.pipeline.results.write_outputs` writes what came
out; :func:`pangeo_hpc.batch.pipeline.execute.run_recipe` does all three with a cluster of its own.

>>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
>>> computed = compute(inputs, client, progress=distributed.progress)  # doctest: +SKIP
>>> write_outputs(inputs, computed, out="results/sst").summary["answer"]  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xarray as xr

from pangeo_hpc import config
from pangeo_hpc.batch.chains import chain
from pangeo_hpc.batch.chains.recipe_yaml import Recipe, load
from pangeo_hpc.batch.incremental import run as incremental
from pangeo_hpc.batch.incremental.read_plan import ReadPlan, Report, plan_reads, worker_reads
from pangeo_hpc.batch.incremental.state_cache import StateCache, open_cache
from pangeo_hpc.batch.pipeline.placement import Placement, place
from pangeo_hpc.clusters import profiles
from pangeo_hpc.clusters.start import kind_of
from pangeo_hpc.clusters.threads import ThreadClient
from pangeo_hpc.errors import InputError
from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.io.files import open_files
from pangeo_hpc.io.stores import open_any_store
from pangeo_hpc.s3.options import S3Options, is_s3
from pangeo_hpc.storage import WarmupReport, warmup

#: the warm-up's report line (INFO); the CLI prints it
log = logging.getLogger(__name__)
#: why a run is not incremental when it has no cache
CACHE_OFF = "caching is off (--no-cache, or pangeo-hpc.cache.enabled)"


@dataclass
class Inputs:
    """What :func:`open_inputs` opened: the recipe, its data and the lazy result.

    Attributes
    ----------
    spec : Recipe
        The recipe.
    root : str or Path
        The data: a folder, ``s3://bucket/prefix`` or a Zarr store.
    dataset : xarray.Dataset
        The inputs, lazy (:func:`pangeo_hpc.io.era5.open_era5`).
    seconds : float
        Wall time of the opening.
    s3 : S3Options, optional
        How ``s3://`` data were reached (their ETags identify them in the cache).
    memo : dict
        The steps built so far on ``dataset`` (:func:`pangeo_hpc.batch.chains.chain.run_steps`).

    Examples
    --------
    >>> from pangeo_hpc.batch import open_inputs
    >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    >>> inputs.lazy  # the chain's result, nothing computed yet  # doctest: +SKIP
    """

    spec: Recipe
    root: str | Path
    dataset: xr.Dataset
    seconds: float
    s3: S3Options | None = None
    memo: chain.Memo = field(default_factory=dict)
    _lazy: xr.Dataset | None = field(default=None, repr=False)
    _reads: dict[str | None, tuple[incremental.Prepared | str, ReadPlan]] = field(
        default_factory=dict, repr=False
    )

    def read_plan(self, store: StateCache | None) -> tuple[incremental.Prepared | str, ReadPlan]:
        """The incremental plan of these inputs (or why they run whole) and what a run
        with the state cache ``store`` (``None``: caching off) reads of them
        (:func:`~pangeo_hpc.batch.incremental.read_plan.plan_reads`): made once per cache folder and
        kept, so that deciding where to run and running use the same plan.

        Parameters
        ----------
        store : StateCache or None
            The state cache, or ``None``.

        Returns
        -------
        (Prepared or str, ReadPlan)
            The plan (or the reason) and the reads.

        Examples
        --------
        >>> from pangeo_hpc.batch import StateCache, open_inputs
        >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
        >>> prepared, reads = inputs.read_plan(StateCache())  # doctest: +SKIP
        >>> reads.files_reused, reads.files_to_read  # doctest: +SKIP
        """
        key = None if store is None else str(store.folder)
        if key not in self._reads:
            self._reads[key] = plan_reads(
                self.spec, self.dataset, store, why_not=CACHE_OFF, s3=self.s3, memo=self.memo
            )
        return self._reads[key]

    @property
    def lazy(self) -> xr.Dataset:
        """The chain's result, lazy: nothing is computed yet (built on first use when the
        opening only checked the steps up to each reduction, see :func:`open_inputs`)."""
        if self._lazy is None:
            self._lazy = chain.build(self.spec, self.dataset, self.memo)
        return self._lazy

    @property
    def period(self) -> tuple[str, str]:
        """First and last day of the data opened, ``YYYY-MM-DD``."""
        times = self.dataset[self.spec.variable]
        axis = times[times.dims[0]].values
        return str(axis[0])[:10], str(axis[-1])[:10]


def data_root(data: str | Path | None = None, profile: str | None = None) -> str | Path:
    """The data a run reads: ``data``, else the site profile's ``data_root``, else config
    ``pangeo-hpc.data.root``.

    Parameters
    ----------
    data : str or Path, optional
        The data given, or ``None``.
    profile : str, optional
        A site profile's name, or ``None``.

    Returns
    -------
    str or Path
        A folder or URL.

    Examples
    --------
    >>> import dask
    >>> from pangeo_hpc.batch.pipeline.steps import data_root
    >>> data_root("data/era5-demo")
    'data/era5-demo'
    >>> with dask.config.set({"pangeo-hpc.data.root": "/fsx/era5"}):
    ...     data_root()
    '/fsx/era5'
    """
    site = profiles.resolve(profile) if profile and profile != "auto" else {}
    return data or site.get("data_root") or config.get("data.root")


def check_warmup(root: str | Path) -> None:
    """Refuse a warm-up of ``root`` where there is nothing to warm (S3 is read directly).

    Parameters
    ----------
    root : str or Path
        The data root.

    Raises
    ------
    InputError
        If ``root`` is an ``s3://`` URL.

    Examples
    --------
    >>> from pangeo_hpc.batch.pipeline.steps import check_warmup
    >>> check_warmup("/fsx/era5")  # doctest: +SKIP
    >>> check_warmup("s3://era5-pds")
    Traceback (most recent call last):
        ...
    pangeo_hpc.errors.InputError: warm_inputs=True reads files of a lazily loaded file s...
    """
    if is_s3(str(root)):
        raise InputError(
            f"warm_inputs=True reads files of a lazily loaded file system; {root!r} is read "
            "from S3 directly: drop warm_inputs=True",
            param="warm_inputs",
        )


def open_inputs(
    spec: Recipe | str,
    *,
    data: str | Path | None = None,
    start: str | None = None,
    end: str | None = None,
    profile: str | None = None,
    s3: S3Options | None = None,
    index: str | None = None,
    client: Any = None,
) -> Inputs:
    """Open the recipe's data lazily and build its chain's lazy result; nothing is computed.

    Every step is checked on the opened data before anything is read (a step that computes,
    options the data cannot meet, a reference period the data do not cover). A recipe whose
    results all split at a reduction
    (:func:`pangeo_hpc.batch.incremental.splitting.split`) is checked
    up to its reductions here; the steps after them are checked by :func:`compute` before
    it reads more than one file, and ``Inputs.lazy`` is built when first used.

    Parameters
    ----------
    spec : Recipe or str
        The recipe, or its name or YAML path (:func:`pangeo_hpc.batch.chains.recipe_yaml.load`).
    data : str or Path, optional
        Its data (see :func:`data_root`): a folder, ``s3://bucket/prefix`` or a Zarr store;
        not used by a recipe whose dataset is a ``files:`` glob.
    start, end : str, optional
        First and last month, ``YYYY-MM``; default the recipe's period.
    profile : str, optional
        A site profile whose ``data_root`` is the default data.
    s3, index : optional
        For ``s3://`` data: how to reach S3, and ``"auto"``, ``"build"`` or ``"never"``
        for the byte-range indexes (:func:`pangeo_hpc.io.era5.open_era5`).
    client : distributed.Client, optional
        With ``index="build"``: build missing indexes on its workers (default: here).

    Returns
    -------
    Inputs

    Examples
    --------
    >>> from pangeo_hpc.batch import open_inputs
    >>> inputs = open_inputs(  # doctest: +SKIP
    ...     "era5-sst-mean", data="data/era5-demo", start="2008-01"
    ... )
    """
    t0 = time.perf_counter()
    if isinstance(spec, str):
        spec = load(spec)
    root = data_root(data, profile)
    ds = open_dataset(spec, root, start=start, end=end, s3=s3, index=index, client=client)
    memo: chain.Memo = {}
    lazy = None if incremental.check(spec, ds, memo) else chain.build(spec, ds, memo)
    return Inputs(spec, _source(spec) or root, ds, time.perf_counter() - t0, s3, memo, lazy)


def _source(spec: Recipe) -> str | None:
    """The files a recipe reads, as one text: its glob, the folder its listed files
    share (a catalog's dataset), or its store."""
    if spec.store is not None:
        return spec.store.url
    if isinstance(spec.files, tuple):
        return os.path.commonpath([os.path.abspath(f) for f in spec.files])
    return spec.files


def open_dataset(
    spec: Recipe,
    root: str | Path,
    *,
    start: str | None = None,
    end: str | None = None,
    s3: S3Options | None = None,
    index: str | None = None,
    client: Any = None,
) -> xr.Dataset:
    """The recipe's dataset, lazy: its ``files:`` glob, its ``store:``, else the era5-pds
    tree (or store) ``root``.

    Parameters
    ----------
    spec : Recipe
        The recipe.
    root : str or Path
        The data root (for a recipe without ``files:`` or ``store:``).
    start : str, optional
        First month (``YYYY-MM``), or ``None``: the recipe's.
    end : str, optional
        Last month, or ``None``: the recipe's.
    s3 : S3Options, optional
        Endpoint and credentials of ``s3://`` data.
    index : str, optional
        A reference index of ``s3://`` NetCDF files, or ``None``.
    client : distributed.Client, optional
        With ``index="build"``, the client whose workers build the missing indexes
        (:func:`~pangeo_hpc.io.era5.open_era5`).

    Returns
    -------
    xr.Dataset
        The dataset.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> from pangeo_hpc.batch.chains.recipe_yaml import from_dict
    >>> from pangeo_hpc.batch.pipeline.steps import open_dataset
    >>> t = pd.date_range("2000-01-01", periods=3)
    >>> coords = {"time": t, "lat": [0.0, 1.0]}
    >>> t2m = xr.Dataset({"t2m": (("time", "lat"), np.ones((3, 2)))}, coords)
    >>> t2m.to_netcdf("t2m-2000-01.nc")
    >>> spec = from_dict({"name": "t2m", "description": "T2m", "steps": [{"time_mean": {}}],
    ...                   "dataset": {"variable": "t2m", "files": "t2m-*.nc"}})
    >>> ds = open_dataset(spec, ".")  # lazy
    >>> ds.t2m.dims, ds.t2m.chunks is not None
    (('time', 'lat'), True)
    """
    names = list(spec.variables)
    period = (start or spec.start, end or spec.end)
    if spec.files is not None:
        return open_files(spec.files, names, *period)
    if spec.store is not None:
        return open_any_store(spec.store, names, *period, s3=s3)
    what = names[0] if len(names) == 1 else names
    return open_era5(what, *period, source=root, s3=s3, index=index, client=client)


@dataclass
class Computed:
    """What :func:`compute` computed, and where.

    Attributes
    ----------
    result : xarray.Dataset
        The chain's result, in memory.
    cluster : dict
        ``kind`` (local, slurm, pbs, sge) and ``workers`` when the computation started;
        :func:`~pangeo_hpc.batch.pipeline.execute.run_recipe` adds the ``profile`` and ``jobs`` it
        asked for.
    seconds : float
        Wall time of the computation.
    warmup : WarmupReport, optional
        The warm-up of the input files, if one ran.
    warmup_seconds : float
        Wall time before the computation started (the warm-up).
    reads : Report, optional
        Whether the run was incremental (else why not), the files whose states were reused
        and those read, the bytes read (counted on the workers).

    Examples
    --------
    >>> from pangeo_hpc.batch import compute, open_inputs
    >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    >>> computed = compute(inputs, client)  # doctest: +SKIP
    >>> computed.result, computed.seconds  # doctest: +SKIP
    """

    result: xr.Dataset
    cluster: dict[str, Any]
    seconds: float
    warmup: WarmupReport | None = None
    warmup_seconds: float = 0.0
    reads: Report | None = None


def compute(
    inputs: Inputs,
    client: Any,
    *,
    progress: Callable[[Any], None] | None = None,
    warm_inputs: bool = False,
    cache: StateCache | bool | None = None,
) -> Computed:
    """Compute ``inputs.lazy`` on ``client``'s workers, incrementally when the chain allows.

    A recipe whose every result splits at a reduction
    (:func:`pangeo_hpc.batch.incremental.splitting.split`)
    is computed from per-file partial states, those of unchanged files taken from the cache
    and the others saved to it as their tasks finish (:mod:`pangeo_hpc.batch.incremental.run`):
    one more month reads one file, a killed run resumes. Other recipes run whole.

    Parameters
    ----------
    inputs : Inputs
        From :func:`open_inputs`.
    client : distributed.Client
        Where to compute: e.g. from :func:`pangeo_hpc.start_cluster`.
    progress : callable, optional
        Called with the computation's future as it starts, e.g. ``distributed.progress``
        (it should return once the future is done).
    warm_inputs : bool
        First read the input files through once on the workers (lazily loaded file
        systems: FSx for Lustre, rclone mounts); the report line is logged (INFO).
    cache : StateCache or bool, optional
        Where partial states are kept; ``False``: run whole, nothing cached (``--no-cache``).
        Default: a :class:`~pangeo_hpc.batch.incremental.state_cache.StateCache` of config
        ``pangeo-hpc.cache.folder``, unless ``pangeo-hpc.cache.enabled`` is false.

    Returns
    -------
    Computed
        With ``reads``: incremental or not (and why), files reused and read, bytes read.

    Examples
    --------
    >>> from pangeo_hpc.batch import compute, open_inputs
    >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    >>> computed = compute(inputs, client)  # doctest: +SKIP
    """
    if warm_inputs:
        check_warmup(inputs.root)
    info = client.scheduler_info()
    workers = len(info["workers"])
    cluster = {"kind": kind_of(getattr(client, "cluster", None)), "workers": workers}
    t0 = time.perf_counter()
    warm = None
    if warm_inputs:
        files = inputs.dataset.encoding["source_files"]
        # a files: glob is no path: the folder its files share is where they are warmed
        where = inputs.root if inputs.spec.files is None else os.path.commonpath(files)
        warm = warmup(where, files=files, client=client)
        log.info(warm.summary())
    t1 = time.perf_counter()
    store = open_cache(cache)
    prepared, plan = inputs.read_plan(store)
    if isinstance(prepared, str) or store is None:
        result, reads = _whole(inputs, client, progress, plan)
    else:
        here = _states_here(inputs, client, plan)
        threads = None
        if here is not None:  # as many threads as the workers it stands in for
            log.info(f"states: computed in this process ({here.why})")
            threads = ThreadClient(sum(w["nthreads"] for w in info["workers"].values()))
        result, reads = incremental.run(
            inputs.spec, inputs.dataset, prepared, client, store, plan, here=threads
        )
    log.info(reads.line())
    return Computed(result, cluster, time.perf_counter() - t1, warm, t1 - t0, reads)


def _states_here(inputs: Inputs, client: Any, plan: ReadPlan) -> Placement | None:
    """Where an update (an incremental run with states cached) computes the states of its
    new files: in this process's threads when ``client``'s workers are a LocalCluster's
    (this machine, the same files; not ``s3://`` data) and those files hold at most config
    ``pangeo-hpc.cluster.states-here-bytes`` (as stored): a task's round trip to a worker
    (graph, scheduler, transfer: about 50 ms here) costs more than reading a monthly file.
    ``None``: on the workers, each state saved as it arrives (a first run killed half way
    keeps half)."""
    cluster = getattr(client, "cluster", None)  # none: a ThreadClient computes here already
    if cluster is None or not plan.files_reused or is_s3(str(inputs.root)):
        return None
    from distributed import LocalCluster  # (imported by whoever made the cluster)

    if not isinstance(cluster, LocalCluster):
        return None
    placed = place(plan, limit=config.get("cluster.states-here-bytes"))
    return placed if placed.in_process else None


def _whole(
    inputs: Inputs, client: Any, progress: Callable[[Any], None] | None, plan: ReadPlan
) -> tuple[xr.Dataset, Report]:
    """The recipe computed as one graph: every file read."""
    before = worker_reads(client)
    future = client.compute(inputs.lazy)
    if progress is not None:
        progress(future)
    result = future.result()
    return result, Report(plan, bytes_read=worker_reads(client, before))
