"""Measure what :mod:`pangeo_hpc.planning.plan` needs on this machine or cluster, and keep
it in the calibration file (:mod:`pangeo_hpc.planning.calibration`).

- per recipe: uncompressed MB/s one worker process decodes and reduces (from the task
  stream of real runs on a warm page cache), tasks per read chunk, the fixed cost per run,
  the compression ratio of the files;
- the scheduler's CPU per task (in the recipe's runs, and for no-op tasks with
  :func:`pangeo_hpc.planning.overhead.task_overhead`), and how it grows with the number of workers
  (many workers simulated on this host);
- storage read bandwidth per path (:func:`pangeo_hpc.storage.survey.read_speed`);
- on a batch cluster: how long its jobs queue and how long their workers take to connect
  once a job runs (:func:`pangeo_hpc.planning.measure.job_starts`), per site.

The file (config ``plan.calibration``) is JSON; each ``calibrate`` run updates its recipe
and keeps the others. A recipe over several datasets is measured dataset by dataset, each
as the one-dataset recipe ``RECIPE.DATASET`` that its runs compute and its plans predict
(:mod:`pangeo_hpc.planning.multi_plan`).
"""

from __future__ import annotations

import logging
import math
import platform
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.sizes import parse_size
from pangeo_hpc.planning.calibration import (
    Calibration,
    JobStarts,
    RecipeFit,
    calibration_path,
    calibration_target,
    is_calibration_file,
    load_calibration,
    read_calibration,
)
from pangeo_hpc.planning.measure import (
    Run,
    host_cores,
    job_starts,
    load_slowdown,
    local_starts,
    median_run,
    noop_cpu,
    on_this_host,
    read_local,
    run_spread,
    simulated_growth,
    storage_rates,
    timed_run,
    worker_count,
)
from pangeo_hpc.planning.measured_recipes import (
    measured_root,
    open_measured,
    recipes_to_measure,
)
from pangeo_hpc.planning.model import Model, Storage
from pangeo_hpc.s3.options import S3Options

if TYPE_CHECKING:
    from pangeo_hpc.batch.chains.recipe_yaml import Recipe

# the calibration file's API comes with the verb that writes it
__all__ = [
    "Calibration",
    "RecipeFit",
    "calibrate",
    "calibration_path",
    "calibration_target",
    "load_calibration",
    "load_slowdown",
    "noop_cpu",
    "simulated_growth",
    "storage_rates",
]

#: progress lines (INFO): what is measured and what came out; the CLI prints them
log = logging.getLogger(__name__)


def _months_for(ds: Any, variable: str, min_bytes: int, min_chunks: int) -> tuple[str, str]:
    """First and last month (``YYYY-MM``) of the first chunks: ``min_bytes``, ``min_chunks``.

    Chunks never cross files and files are months, so these whole months hold them.
    """
    da = ds[variable]
    sizes = da.chunks[0] if da.chunks else (da.shape[0],)
    per_step = da.nbytes / da.shape[0]
    steps, total = 0, 0.0
    for i, n in enumerate(sizes):
        steps += n
        total += n * per_step
        if total >= min_bytes and i + 1 >= min_chunks:
            break
    times = da[da.dims[0]].values
    return str(times[0])[:7], str(times[steps - 1])[:7]


def _read_tasks_of(lazy: Any, da: Any) -> tuple[int, bool]:
    """Read tasks of ``lazy`` over ``da`` and whether they are fused with an area mean:
    the fused spans when its graph has them (:data:`pangeo_hpc.recipes.fusion.FUSED`),
    else one per chunk of ``da``."""
    from pangeo_hpc.recipes.fusion import FUSED

    graph = lazy.__dask_graph__()
    spans = {k[1] for k in graph if isinstance(k, tuple) and str(k[0]).startswith(FUSED)}
    if spans:
        return len(spans), True
    return (len(da.chunks[0]) if da.chunks else 1), False


def _fit_recipe(
    client: Any,
    recipe: str | Recipe,
    *,
    data: str | Path | None = None,
    start: str | None = None,
    end: str | None = None,
    amount: int | str = "256MB",
    repeat: int = 3,
    s3: S3Options | None = None,
) -> RecipeFit:
    """Fit the costs of ``recipe`` from runs on the first ``amount`` of the data and a quarter.

    The first run is on the client's workers as they are: pass a client whose workers
    have not run anything yet (a new cluster, as every command-line run has), so that it
    shows their warm-up (imports, JIT, first file opens). Then ``repeat`` runs of each size,
    page cache warm. From the two sizes (medians): worker CPU per chunk and its computing
    part (Dask's task stream), so the process rate and the worker's cost per task; the
    scheduler's CPU per task. The warm-up is the first run's worker CPU beyond a later
    run's; the fixed cost is what the first run's wall time has beyond the model's.
    """
    from pangeo_hpc.batch.chains import chain, recipe_yaml

    if not isinstance(repeat, int) or repeat < 1:
        raise InputError(f"repeat={repeat!r} must be a whole number, 1 or more", param="repeat")
    spec = recipe_yaml.load(recipe) if isinstance(recipe, str) else recipe
    recipe = spec.name
    ds = open_measured(spec, data, start or spec.start, end, s3)  # to the last month
    ratio = ds[spec.variable].nbytes / ds.encoding["source_bytes"]
    want = parse_size(amount, name="amount")
    graphs, runs = [], []
    for share, least in ((4, 2), (1, 8)):
        period = _months_for(ds, spec.variable, want // share, least)
        part = open_measured(spec, data, *period, s3)
        lazy = chain.build(spec, part)
        da = part[spec.variable]
        read_tasks, fused = _read_tasks_of(lazy, da)
        run = Run(read_tasks, int(da.nbytes), len(lazy.__dask_graph__()))
        graphs.append((lazy, run, period))
        files = part.encoding["source_files"]
    (small_lazy, small, p_small), (lazy, large, p_large) = graphs
    if large.chunks <= small.chunks:
        raise InputError(
            f"calibrating {recipe} needs more data than {p_large[0]}..{p_large[1]} "
            f"({large.chunks} chunks): "
            "give a larger amount= or a longer period (start=, end=)",
            param=("amount", "start", "end"),
        )
    workers = len(client.scheduler_info()["workers"])
    log.info(
        f"calibrate {recipe}: {small.chunks} and {large.chunks} chunks "
        f"({p_small[0]}..{p_small[1]}, {p_large[0]}..{p_large[1]}): the first run on the "
        f"fresh workers, then {repeat} runs each"
    )
    read_local(list(files))
    first = timed_run(client, lazy, large)  # the workers' first run, as on a new cluster
    for _ in range(repeat):
        runs.append((timed_run(client, small_lazy, small), timed_run(client, lazy, large)))
    spread = run_spread(runs)
    small, large = median_run([r[0] for r in runs]), median_run([r[1] for r in runs])
    slowdown = 1.0
    if on_this_host(client) and host_cores() > workers:
        slowdown = load_slowdown(client, lazy, host_cores())
    n = large.chunks - small.chunks
    chunk_cpu = (large.worker_cpu - small.worker_cpu) / n
    computing = _marginal(
        (large.computing, large.chunks), (small.computing, small.chunks), "computing times", "chunk"
    )
    tasks_per_chunk = (large.tasks - small.tasks) / n
    rate = (large.bytes - small.bytes) / n / computing
    task_cost = max(0.0, chunk_cpu - computing) / tasks_per_chunk
    warmup = max(0.0, first.worker_cpu - large.worker_cpu)
    per_task = _marginal(
        (large.scheduler_cpu, large.tasks),
        (small.scheduler_cpu, small.tasks),
        "scheduler CPU",
        "task",
    )
    per_chunk = large.bytes / large.chunks
    shape = Model(
        size=large.bytes,
        ratio=ratio,
        chunk=max(1, math.ceil(per_chunk)),
        tasks_per_chunk=large.tasks / large.chunks,
        process_rate=rate,
        task_cost=task_cost,
        task_overhead=per_task,
        warmup=warmup,
        load_slowdown=slowdown,
        fixed=0.0,
        processes=workers,
        cores=workers,
        storage=Storage("cache", math.inf, False, False),
        host_cores=host_cores() if on_this_host(client) else None,
    )
    fixed = max(0.0, first.wall - shape.predict(1)["wall_s"])
    log.info(
        f"  {rate / 1e6:,.0f} MB/s per process computing; per task {task_cost * 1e3:.2f} ms "
        f"worker and {per_task * 1e3:.2f} ms scheduler CPU; {warmup:.2f} s warm-up per "
        f"worker; first run {first.wall:.2f} s, then {small.wall:.2f} s and {large.wall:.2f} s; "
        f"fixed {fixed:.2f} s; "
        f"a chunk takes {slowdown:.2f}x as long with all {host_cores()} cores busy; the "
        f"repeated runs took x{spread[0]:.2f}..x{spread[1]:.2f} of their median"
    )
    return RecipeFit(
        process_rate=rate,
        tasks_per_chunk=large.tasks / large.chunks,
        fixed=fixed,
        ratio=ratio,
        task_cost=task_cost,
        scheduler_task=per_task,
        warmup=warmup,
        load_slowdown=slowdown,
        chunk=int(per_chunk),
        chunks=large.chunks,
        walls=[round(first.wall, 4), *(round(r[1].wall, 4) for r in runs)],
        workers=workers,
        data=f"{data or config.get('data.root')} {p_large[0]}..{p_large[1]}",
        spread=[round(spread[0], 4), round(spread[1], 4)],
        fused=fused,
    )


def _marginal(large: tuple[float, int], small: tuple[float, int], what: str, per: str) -> float:
    """The cost of one more ``per`` from two runs' ``(total, count)``: their difference.

    When the difference drowns in the machine's noise (a busy host: at most 1 % of the
    larger run's cost per ``per``, or negative), the larger run alone, which still carries
    its share of the fixed cost, with a warning.
    """
    marginal = (large[0] - small[0]) / (large[1] - small[1])
    average = large[0] / large[1]
    if marginal <= 0.01 * average:
        log.warning(
            f"  the two sizes' {what} differ by {marginal * 1e3:.2f} ms per {per}: the "
            "machine is too noisy for the difference; using the larger run alone"
        )
        return average
    return marginal


def calibrate(
    recipe: str = "era5-sst-mean",
    *,
    client: Any = None,
    data: str | Path | None = None,
    start: str | None = None,
    end: str | None = None,
    amount: int | str = "256MB",
    repeat: int = 3,
    tasks: int = 2000,
    simulate_workers: int = 0,
    storage: Mapping[str, str | Path] | None = None,
    path: str | Path | None = None,
    save: bool = True,
    profile: str | None = None,
    s3: S3Options | None = None,
) -> Calibration:
    """Measure ``recipe`` on ``client`` (default: one local worker process) and store it.

    Parameters
    ----------
    recipe : str
        Recipe name or YAML file; one over several datasets is measured dataset by
        dataset (``RECIPE.DATASET`` each, on the same client).
    client : distributed.Client, optional
        Where to measure (a Slurm cluster's client measures its nodes), with workers that
        have not run anything yet (their warm-up is measured). Default: a new LocalCluster
        of one worker process, so that the rate is one process's.
    data, start, end : optional
        The data (default config ``data.root``) and where the period starts and ends
        (default: the recipe's first month, to the last month there is); only its first
        ``amount`` is read.
    amount : int or str
        Uncompressed bytes to run on (the first chunks; at least 4 chunks).
    repeat : int
        Measured runs (the median counts), after one warm-up run.
    tasks : int
        No-op tasks for the per-task scheduler overhead.
    simulate_workers : int
        Also measure the scheduler's CPU per no-op task with this many worker processes on
        this host (idle but for those tasks) to fit its growth per worker; 0 (default):
        keep the previous figure (0 unless set). On a small host this counts the idle
        workers' heartbeats per task and overstates the growth (docs/scaling.md).
    storage : mapping, optional
        ``{kind: path}`` read-bandwidth figures to take (``local``, ``s3``, ``fsx``...);
        default ``{"local": data}`` for local data, ``{"s3": data}`` for S3 data.
    path : str or Path, optional
        Calibration file, or an ``s3://bucket/key`` object; default config
        ``plan.calibration``.
    save : bool
        Write the file (merged with what it holds).
    profile : str, optional
        The site profile the client's cluster was started with: on a batch cluster
        (``client.cluster`` from dask-jobqueue) the jobs' queue and their workers' arrival
        are measured too, ``repeat`` times (the cluster's jobs cancelled and submitted
        again, :func:`~pangeo_hpc.planning.measure.job_starts`), and kept under this name;
        default the cluster's kind (``slurm``), as a run without a profile looks them up.
    s3 : S3Options, optional
        Endpoint and credentials of ``s3://`` data and of an ``s3://`` calibration object
        (written with credentials even if ``s3.anon``); default :meth:`S3Options.resolve`.

    Returns
    -------
    Calibration
        The merged calibration as written.

    Notes
    -----
    What is measured and found is logged at INFO by the logger ``pangeo_hpc.planning.calibrate``
    (the command line prints it); in a notebook, ``logging.basicConfig(level="INFO")`` shows it.

    Examples
    --------
    >>> from pangeo_hpc.planning.calibrate import calibrate
    >>> cal = calibrate("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    """
    from pangeo_hpc.clusters.start import kind_of, running_cluster, site_name
    from pangeo_hpc.s3.options import is_s3

    fits = recipes_to_measure(recipe, data, start, end, s3)  # before any cluster starts
    if not isinstance(simulate_workers, int) or simulate_workers < 0:
        raise InputError(
            f"simulate_workers={simulate_workers!r} must be 0 or a whole number",
            param="simulate_workers",
        )
    root = str(data or config.get("data.root"))
    writes = None if s3 is None else s3.for_writing()
    p = calibration_target(path, data, s3=writes) if save else calibration_path(path)
    if client is None:
        with running_cluster("local", workers=1) as (_, own):
            return calibrate(
                recipe, client=own, data=data, start=start, end=end, amount=amount,
                repeat=repeat, tasks=tasks, simulate_workers=simulate_workers,
                storage=storage, path=path, save=save, profile=profile, s3=s3,
            )  # fmt: skip
    measured = {
        key: _fit_recipe(
            client, one, data=data, start=start, end=end, amount=amount, repeat=repeat, s3=s3
        )
        for key, one in fits.items()
    }
    per_task = noop_cpu(client, tasks)
    log.info(
        f"scheduler: {per_task * 1e3:.2f} ms CPU per no-op task ({worker_count(client)} workers)"
    )
    previous = Calibration("", 0, "", 0.0, source=str(p))  # nothing kept
    try:
        previous = read_calibration(p, writes) or previous
    except InputError as exc:  # an earlier version's file of another shape
        log.info(f"{exc}; writing a new one")
    per_worker = previous.overhead_per_worker
    if simulate_workers > 1:
        per_worker = simulated_growth(simulate_workers, tasks, per_task)
    starts = dict(previous.starts)
    cluster = getattr(client, "cluster", None)
    if cluster is not None and kind_of(cluster) == "local":
        # a local run's cluster start, as the command line's (one worker per core): its
        # workers' arrival, with no queue
        took = local_starts(host_cores(), repeat)
        starts["local"] = JobStarts(
            queue=[0.0] * len(took),
            arrival=[round(t, 3) for t in took],
            jobs=1,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
        )
    elif cluster is not None:
        where = site_name(kind_of(cluster), profile)
        jobs = max(1, len(getattr(cluster, "workers", {}) or {}))
        queue, arrival = job_starts(cluster, client, jobs=jobs, repeat=repeat)
        starts[where] = JobStarts(
            queue=[round(q, 3) for q in queue],
            arrival=[round(a, 3) for a in arrival],
            jobs=jobs,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
        )
    root = measured_root(fits.values(), root)  # files: recipes read their own folders
    paths = dict(storage) if storage is not None else {("s3" if is_s3(root) else "local"): root}
    rates = storage_rates(paths, s3=s3)
    cal = Calibration(
        host=platform.node(),
        cores=host_cores(),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        task_overhead=per_task,
        overhead_per_worker=per_worker,
        storage={**previous.storage, **rates},
        recipes={**previous.recipes, **measured},
        source=str(p),
        starts=starts,
    )
    if save:
        from pangeo_hpc.write.outputs import write_json
        from pangeo_hpc.write.targets import output_file

        # a file whole or not at all; an s3:// key: one marked, conditional PUT
        with output_file(
            p, inputs=[root], flag="path", ours=is_calibration_file, s3=writes
        ) as dest:
            write_json(dest, cal.to_json(), flag="path", ours=is_calibration_file)
        log.info(f"calibration written: {p}")
    return cal
