"""Run one recipe end to end: check, open, start the cluster, compute, write the outputs.

:func:`run_recipe` is the composition the command line runs; each step is a public
function a notebook can call on its own (:func:`~pangeo_hpc.batch.pipeline.steps.open_inputs`,
:func:`~pangeo_hpc.batch.pipeline.steps.compute`,
:func:`~pangeo_hpc.batch.pipeline.results.write_outputs`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

import dask.config
import dask.threaded

from pangeo_hpc import config
from pangeo_hpc.batch.chains.recipe_yaml import Recipe
from pangeo_hpc.batch.incremental.read_plan import ReadPlan
from pangeo_hpc.batch.incremental.state_cache import StateCache, open_cache
from pangeo_hpc.batch.pipeline.placement import Placement, place
from pangeo_hpc.batch.pipeline.regrid_store import CachedWeights
from pangeo_hpc.batch.pipeline.result_copies import record
from pangeo_hpc.batch.pipeline.results import (
    RunResult,
    check_format,
    check_plot_format,
    result_folder,
    write_outputs,
)
from pangeo_hpc.batch.pipeline.reuse import KEY
from pangeo_hpc.batch.pipeline.steps import (
    Inputs,
    check_warmup,
    compute,
    data_root,
    open_inputs,
)
from pangeo_hpc.clusters.budget import Guard, within_budget
from pangeo_hpc.clusters.start import kind_of, prepare_local, resolve_kind, running_cluster
from pangeo_hpc.clusters.threads import ThreadClient, no_client_lookup
from pangeo_hpc.jit import numpy_twins
from pangeo_hpc.recipes.regrid import using_store
from pangeo_hpc.s3.options import S3Options, is_s3
from pangeo_hpc.write.figures import preload

__all__ = ["RunResult", "run_recipe"]

#: the cluster line (INFO) once the cluster is up; the CLI prints it
log = logging.getLogger(__name__)


def run_recipe(
    spec: Recipe,
    *,
    data: str | Path | None = None,
    start: str | None = None,
    end: str | None = None,
    cluster: str = "local",
    profile: str | None = None,
    workers: int | None = None,
    jobs: int | None = None,
    adapt: tuple[int, int] | None = None,
    batch: dict[str, Any] | None = None,
    warm_inputs: bool = False,
    out: str | Path | None = None,
    fmt: str | None = None,
    plot_format: str | None = None,
    progress: Callable[[Any], None] | None = None,
    s3: S3Options | None = None,
    index: str | None = None,
    cache: StateCache | bool | None = None,
    guard: Guard | None = None,
    run_key: str | None = None,
) -> RunResult:
    """Run ``spec`` and write ``result.nc`` (or ``.zarr``), ``plot.png`` (``plot.svg``,
    ``plot.pdf`` with ``plot_format``) and ``summary.json``.

    Everything the user typed is checked before a cluster starts; the outputs appear in
    ``out`` (default ``<output.root>/<spec.name>``) all together or not at all. ``cluster``,
    ``profile``, ``workers`` (local), ``jobs`` or ``adapt`` and ``batch`` (profile overrides such as
    ``{"walltime": "00:30:00"}``) go to :func:`pangeo_hpc.clusters.start.running_cluster`.
    ``warm_inputs`` reads the input files through once on the workers before computing
    (lazily loaded file systems: FSx for Lustre, rclone mounts); on Lustre the output
    folder is striped for the result's size. ``s3`` and ``index`` apply to ``s3://`` data
    (see :func:`pangeo_hpc.io.era5.open_era5`); with ``index="build"`` the missing indexes
    are built on the cluster's workers. ``cache`` keeps each input file's partial state
    (see :func:`pangeo_hpc.batch.pipeline.steps.compute`): ``False`` runs whole and caches nothing.
    A local run whose plan reads at most config ``pangeo-hpc.cluster.in-process-bytes``
    (stored; with or without a cache) starts no worker processes: it computes in this
    process's threads (:mod:`~pangeo_hpc.batch.pipeline.placement`), with dask's threaded
    scheduler and no distributed cluster or client (:mod:`~pangeo_hpc.clusters.threads`),
    and ``summary.json``'s ``cluster.in_process`` says why.
    Progress lines (the cluster, the warm-up, the states) are logged at INFO
    (``pangeo_hpc.batch``); the command line prints them. ``guard``: a budget checked
    against the run's prediction (:func:`pangeo_hpc.planning.budget.run_within_budget` makes it
    and calls this), watched while the cluster runs
    (:func:`pangeo_hpc.clusters.budget.within_budget`).

    Parameters
    ----------
    spec : Recipe
        The recipe (:func:`pangeo_hpc.batch.chains.recipe_yaml.load`).
    data : str or Path, optional
        The data: a tree in the era5-pds layout, a Zarr store or an ``s3://`` URL; default
        config ``pangeo-hpc.data.root``.
    start, end : str, optional
        The first and last month (``"2008-01"``); default the recipe's period.
    cluster : {"local", "slurm", "pbs", "sge", "gateway", "auto"}
        The kind of cluster.
    profile : str, optional
        A site profile of config ``pangeo-hpc.profiles``.
    workers : int, optional
        Local (or gateway) worker processes.
    jobs : int, optional
        Batch jobs.
    adapt : (int, int), optional
        Between this many jobs as the load asks.
    batch : dict, optional
        Profile options to change (``{"walltime": "00:30:00"}``).
    warm_inputs : bool
        Read the input files through once on the workers before computing.
    out : str or Path, optional
        The output folder; default ``<output.root>/<spec.name>``.
    fmt : {"netcdf", "zarr", "icechunk"}, optional
        The result's format; default the recipe's. ``"icechunk"``: ``out`` is an Icechunk
        repository that receives the result as one commit on ``main``.
    plot_format : {"png", "svg", "pdf"}, optional
        The plot's format; default config.
    progress : callable, optional
        Called with the progress of the computation (the command line's bar).
    s3 : S3Options, optional
        Credentials and endpoint of ``s3://`` data.
    index : str, optional
        Byte-range indexes of ``s3://`` data: ``"build"`` builds the missing ones.
    cache : StateCache or bool, optional
        The state cache; ``False``: run whole, cache nothing; None: config
        ``pangeo-hpc.cache``.
    guard : Guard, optional
        A budget to watch (:func:`pangeo_hpc.planning.budget.run_within_budget`).
    run_key : str, optional
        The run's key (:func:`pangeo_hpc.batch.pipeline.reuse.run_key`, computed before
        anything was read), recorded in ``summary.json``: the same run again is served
        from this result while the key and the files are unchanged
        (:func:`~pangeo_hpc.batch.pipeline.reuse.served`), and where the result is goes
        into the state cache: the same run into another folder copies it
        (:mod:`~pangeo_hpc.batch.pipeline.result_copies`).

    Returns
    -------
    RunResult
        The output folder, the summary and the computed results.

    Examples
    --------
    >>> from pangeo_hpc.batch import run_recipe
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> run = run_recipe(load("era5-sst-mean"), data="data/era5-demo", workers=2)  # doctest: +SKIP
    """
    t0 = time.perf_counter()
    fmt = check_format(fmt, spec)
    plot_format = check_plot_format(plot_format)
    root = data_root(data, profile)
    # the outputs may replace only an earlier result of this package, never the data
    out = result_folder(out, spec, root, s3, fmt)
    if warm_inputs:
        check_warmup(root)
    store = open_cache(cache)  # a folder others can write to is refused before any cluster
    if store is not None:
        store.check_writable()  # one that cannot be written: caching off, said first
    # regridding weights are kept beside the states, under the same rules
    with using_store(None if store is None else CachedWeights(store)):
        # with index="build", check the inputs now and build the indexes on the workers later
        build_first = is_s3(str(root)) and config.get("s3.index", index) == "build"
        where = {"data": root, "start": start, "end": end, "s3": s3}
        inputs = open_inputs(spec, **where, index="never" if build_first else index)
        t_open = time.perf_counter()
        placed = None
        if not (warm_inputs or build_first or is_s3(str(root))):  # those need their workers
            placed = _placement(inputs, store, cluster, profile)
        small = placed.why if placed is not None and placed.in_process else None
        preload()  # the figure's imports, while the cluster starts and the run computes
        # no cluster: every compute without a client of its own (xarray's writers ask dask
        # for one) uses the threads, as a computation of the in-process cluster's client
        # did, and dask does not import distributed to look for a client
        threads = dask.config.set(scheduler=dask.threaded.get)
        with threads if small is not None else nullcontext():
            if small is not None:
                started = _in_process(workers)
            else:
                started = running_cluster(
                    cluster,  # type: ignore[arg-type]
                    profile=profile,
                    workers=workers,
                    jobs=jobs,
                    adapt=adapt,
                    **(batch or {}),
                )
            with within_budget(started, guard) as (cl, client):
                n_workers = len(client.scheduler_info()["workers"])
                if small is not None:
                    log.info(f"cluster: none started ({small}), computed in this process's threads")
                else:
                    why = f" ({placed.why})" if placed is not None else ""
                    link = cl.dashboard_link
                    log.info(f"cluster: {kind_of(cl)}, {n_workers} workers, dashboard {link}{why}")
                if build_first:
                    inputs = open_inputs(spec, **where, index="build", client=client)
                t_ready = time.perf_counter()
                twins = placed is not None and placed.in_process and placed.numpy_kernels
                if twins:
                    log.debug("kernels: NumPy twins while numba has not started (the same bits)")
                with numpy_twins() if twins else nullcontext():
                    computed = compute(
                        inputs,
                        client,
                        progress=progress,
                        warm_inputs=warm_inputs,
                        cache=store or False,
                    )
            asked: dict[str, Any] = {"profile": profile, "jobs": jobs}  # beside what compute() saw
            if small is not None:
                asked["in_process"] = small
            computed = replace(computed, cluster={**computed.cluster, **asked})
            timings = {
                "open": t_open - t0,
                "cluster_start": t_ready - t_open + computed.warmup_seconds,
            }
            with no_client_lookup() if small is not None else nullcontext():
                run = write_outputs(
                    inputs,
                    computed,
                    out=out,
                    fmt=fmt,
                    plot_format=plot_format,
                    timings=timings,
                    started=t0,
                    s3=s3,
                    extra=None if run_key is None else {KEY: run_key},
                )
            if fmt != "icechunk":  # a repository is committed to, never copied
                record(store, run_key, run.out, spec.name)  # another folder copies it
            return run


def _placement(
    inputs: Inputs, store: StateCache | None, cluster: str, profile: str | None
) -> Placement:
    """Where this run computes (:func:`~pangeo_hpc.batch.pipeline.placement.place`), from
    the plan of what it reads, made once: :func:`compute` runs this same plan."""
    kind = resolve_kind(cluster, profile)[0]
    plan = inputs.read_plan(store)[1] if kind == "local" else ReadPlan(())
    return place(plan, kind=kind)


@contextmanager
def _in_process(workers: int | None) -> Iterator[tuple[None, ThreadClient]]:
    """No cluster: dask's threaded scheduler in this process, a thread per worker process
    asked for (:mod:`pangeo_hpc.clusters.threads`: neither distributed's imports nor a
    scheduler to start, close and join at exit)."""
    n, threads = prepare_local(workers)
    with ThreadClient(n * threads) as client:
        yield None, client
