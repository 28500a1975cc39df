"""Measure what :mod:`pangeo_hpc.planning.plan` needs on this machine or cluster, and keep
it in the calibration file (:mod:`pangeo_hpc.planning.calibration`).

- per recipe: uncompressed MB/s one worker process decodes and reduces (from the task
  stream of real runs on a warm page cache), tasks per read chunk, the fixed cost per run,
  the compression ratio of the files;
- the scheduler's CPU per task (in the recipe's runs, and for no-op tasks with
  :func:`pangeo_hpc.planning.overhead.task_overhead`), and how it grows with the number of workers
  (many workers simulated on this host);
- storage read bandwidth per path (:func:`pangeo_hpc.storage.survey.read_speed`).

The file (config ``plan.calibration``) is JSON; each ``calibrate`` run updates its recipe
and keeps the others.
"""

from __future__ import annotations

import logging
import math
import platform
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.sizes import parse_size
from pangeo_hpc.planning.calibration import (
    Calibration,
    RecipeFit,
    calibration_path,
    calibration_target,
    is_calibration_file,
    load_calibration,
    read_calibration_file,
)
from pangeo_hpc.planning.plan import Model, Storage
from pangeo_hpc.storage.pagecache import read_through

# the calibration file's API comes with the verb that writes it
__all__ = [
    "Calibration",
    "RecipeFit",
    "calibrate",
    "calibration_path",
    "calibration_target",
    "fit_recipe",
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


def _chunks_of(da: Any) -> int:
    return len(da.chunks[0]) if da.chunks else 1


@dataclass
class _Run:
    """One run on freshly started workers."""

    chunks: int
    bytes: int
    tasks: int
    wall: float = 0.0
    computing: float = 0.0  # seconds of task computing (task stream)
    worker_cpu: float = 0.0  # CPU seconds of the worker processes
    scheduler_cpu: float = 0.0  # CPU seconds of this process (scheduler and client)


def _timed_run(client: Any, lazy: Any, run: _Run) -> _Run:
    """Compute ``lazy`` on ``client``: wall time, task computing, worker and scheduler CPU."""
    from distributed import get_task_stream

    w0, s0 = _worker_cpu(client), time.process_time()
    with get_task_stream(client) as ts:
        t0 = time.perf_counter()
        client.compute(lazy).result()
        wall = time.perf_counter() - t0
    return replace(
        run,
        wall=wall,
        computing=sum(
            s["stop"] - s["start"]
            for t in ts.data
            for s in t["startstops"]
            if s["action"] == "compute"
        ),
        worker_cpu=_worker_cpu(client) - w0,
        scheduler_cpu=time.process_time() - s0,
    )


def _read_through(files: list[str]) -> None:
    """Read local ``files`` once, so that the runs find them in the page cache."""
    for f in files:
        if "://" not in str(f):
            read_through(f)


def _median(runs: list[_Run]) -> _Run:
    med = {
        k: statistics.median(getattr(r, k) for r in runs)
        for k in ("wall", "computing", "worker_cpu", "scheduler_cpu")
    }
    return replace(runs[0], **med)


def fit_recipe(
    client: Any,
    recipe: str,
    *,
    data: str | Path | None = None,
    start: str | None = None,
    end: str | None = None,
    amount: int | str = "256MB",
    repeat: int = 3,
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
    from pangeo_hpc.batch import chains, recipe_yaml
    from pangeo_hpc.io.era5 import open_era5

    if not isinstance(repeat, int) or repeat < 1:
        raise InputError(f"repeat={repeat!r} must be a whole number, 1 or more", param="repeat")
    spec = recipe_yaml.load(recipe)
    ds = open_era5(spec.variable, start or spec.start, end, source=data)  # to the last month
    ratio = ds[spec.variable].nbytes / ds.encoding["source_bytes"]
    want = parse_size(amount, name="amount")
    graphs, runs = [], []
    for share, least in ((4, 2), (1, 8)):
        period = _months_for(ds, spec.variable, want // share, least)
        part = open_era5(spec.variable, *period, source=data)
        lazy = chains.build(spec.chain, part, spec.variable, spec.options)
        da = part[spec.variable]
        run = _Run(_chunks_of(da), int(da.nbytes), len(lazy.__dask_graph__()))
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
    _read_through(list(files))
    first = _timed_run(client, lazy, large)  # the workers' first run, as on a new cluster
    for _ in range(repeat):
        runs.append((_timed_run(client, small_lazy, small), _timed_run(client, lazy, large)))
    small, large = _median([r[0] for r in runs]), _median([r[1] for r in runs])
    slowdown = 1.0
    if _on_this_host(client) and _cores() > workers:
        slowdown = load_slowdown(client, lazy, _cores())
    n = large.chunks - small.chunks
    chunk_cpu = (large.worker_cpu - small.worker_cpu) / n
    computing = (large.computing - small.computing) / n
    tasks_per_chunk = (large.tasks - small.tasks) / n
    rate = (large.bytes - small.bytes) / n / max(computing, 1e-9)
    task_cost = max(0.0, chunk_cpu - computing) / tasks_per_chunk
    warmup = max(0.0, first.worker_cpu - large.worker_cpu)
    per_task = max(0.0, large.scheduler_cpu - small.scheduler_cpu) / (large.tasks - small.tasks)
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
        host_cores=_cores() if _on_this_host(client) else None,
    )
    fixed = max(0.0, first.wall - shape.predict(1)["wall_s"])
    log.info(
        f"  {rate / 1e6:,.0f} MB/s per process computing; per task {task_cost * 1e3:.2f} ms "
        f"worker and {per_task * 1e3:.2f} ms scheduler CPU; {warmup:.2f} s warm-up per "
        f"worker; first run {first.wall:.2f} s, then {small.wall:.2f} s and {large.wall:.2f} s; "
        f"fixed {fixed:.2f} s; "
        f"a chunk takes {slowdown:.2f}x as long with all {_cores()} cores busy"
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
    )


def load_slowdown(client: Any, lazy: Any, cores: int, repeat: int = 3) -> float:
    """Worker CPU time of ``lazy`` with ``cores`` busy worker processes on this host over
    that on ``client`` (one process), both on warm workers, medians of ``repeat`` runs
    taken in turns; at least 1.

    CPU time, not the tasks' wall time: time slices lost to the scheduler's process on the
    same cores are the model's "host CPU" limit already.
    """
    from pangeo_hpc.clusters.start import running_cluster

    def cpu(c: Any) -> float:
        before = _worker_cpu(c)
        c.compute(lazy).result()
        return _worker_cpu(c) - before

    one, busy = [], []
    with running_cluster("local", workers=cores) as (_, full):
        full.compute(lazy).result()  # warm the workers
        for _ in range(repeat):
            one.append(cpu(client))
            busy.append(cpu(full))
    return max(1.0, statistics.median(busy) / statistics.median(one))


def storage_rates(
    paths: Mapping[str, str | Path], *, max_bytes: int | str | None = None
) -> dict[str, float]:
    """Cold read bytes/s of each ``{kind: path}``; ``cache``: warm, of the first local one."""
    from pangeo_hpc.s3.options import is_s3
    from pangeo_hpc.storage.survey import read_speed

    out: dict[str, float] = {}
    for kind, path in paths.items():
        r = read_speed(path, max_bytes=max_bytes, cold=True)
        out[kind] = r.bytes / r.seconds
        log.info(f"  storage {kind} ({path}): {r.mb_per_s:,.0f} MB/s cold")
        if not is_s3(str(path)):
            w = read_speed(path, max_bytes=max_bytes, cold=False)
            out.setdefault("cache", w.bytes / w.seconds)
            log.info(f"  storage cache ({path}): {w.mb_per_s:,.0f} MB/s warm")
    return out


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
) -> Calibration:
    """Measure ``recipe`` on ``client`` (default: one local worker process) and store it.

    Parameters
    ----------
    recipe : str
        Recipe name.
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
        Calibration file; default config ``plan.calibration``.
    save : bool
        Write the file (merged with what it holds).

    Returns
    -------
    Calibration
        The merged calibration as written.

    Notes
    -----
    What is measured and found is logged at INFO by the logger ``pangeo_hpc.planning.calibrate``
    (the command line prints it); in a notebook, ``logging.basicConfig(level="INFO")`` shows it.
    """
    from pangeo_hpc.batch import recipe_yaml
    from pangeo_hpc.clusters.start import running_cluster
    from pangeo_hpc.s3.options import is_s3

    recipe_yaml.load(recipe)  # an unknown recipe is an error before any cluster starts
    if not isinstance(simulate_workers, int) or simulate_workers < 0:
        raise InputError(
            f"simulate_workers={simulate_workers!r} must be 0 or a whole number",
            param="simulate_workers",
        )
    root = str(data or config.get("data.root"))
    p = calibration_target(path, data) if save else calibration_path(path)
    if client is None:
        with running_cluster("local", workers=1) as (_, own):
            return calibrate(
                recipe, client=own, data=data, start=start, end=end, amount=amount,
                repeat=repeat, tasks=tasks, simulate_workers=simulate_workers,
                storage=storage, path=path, save=save,
            )  # fmt: skip
    fit = fit_recipe(client, recipe, data=data, start=start, end=end, amount=amount, repeat=repeat)
    per_task = noop_cpu(client, tasks)
    log.info(f"scheduler: {per_task * 1e3:.2f} ms CPU per no-op task ({_workers(client)} workers)")
    previous = Calibration("", 0, "", 0.0, source=str(p))  # nothing kept
    if p.exists():
        try:
            previous = read_calibration_file(p)
        except InputError as exc:  # an earlier version's file of another shape
            log.info(f"{exc}; writing a new one")
    per_worker = previous.overhead_per_worker
    if simulate_workers > 1:
        per_worker = simulated_growth(simulate_workers, tasks, per_task)
    paths = dict(storage) if storage is not None else {("s3" if is_s3(root) else "local"): root}
    rates = storage_rates(paths)
    cal = Calibration(
        host=platform.node(),
        cores=_cores(),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        task_overhead=per_task,
        overhead_per_worker=per_worker,
        storage={**previous.storage, **rates},
        recipes={**previous.recipes, recipe: fit},
        source=str(p),
    )
    if save:
        from pangeo_hpc.write.outputs import write_json

        write_json(p, cal.to_json(), flag="path", ours=is_calibration_file)
        log.info(f"calibration written: {p}")
    return cal


def noop_cpu(client: Any, tasks: int = 2000) -> float:
    """CPU seconds of this process (scheduler and client) per no-op task on ``client``.

    The wall time per task (:func:`pangeo_hpc.planning.overhead.task_overhead`) is measured along;
    this process's CPU time is what a scheduler on its own core spends per task.
    """
    from pangeo_hpc.planning.overhead import task_overhead

    t0 = time.process_time()
    over = task_overhead(client, tasks=tasks)
    rounds = len(over.samples) + 1  # and the warm-up round
    return (time.process_time() - t0) / (tasks * rounds)


def simulated_growth(workers: int, tasks: int, base: float) -> float:
    """Scheduler CPU seconds per task added by each worker, from ``workers`` on this host.

    ``base`` is the figure with one worker (:func:`noop_cpu`). The workers are idle but for
    the no-op tasks; they share this host's cores with the scheduler.
    """
    from pangeo_hpc.clusters.start import running_cluster

    with running_cluster("local", workers=workers, memory_limit="1GB") as (_, client):
        many = noop_cpu(client, tasks)
    growth = max(0.0, (many - base) / max(1, workers - 1))
    log.info(
        f"scheduler with {workers} worker processes on this host: {many * 1e3:.2f} ms CPU "
        f"per task; {growth * 1e6:.2f} us per task for each worker beyond the first"
    )
    return growth


def _workers(client: Any) -> int:
    return len(client.scheduler_info()["workers"])


def _worker_cpu(client: Any) -> float:
    """CPU seconds the worker processes have used so far, all together."""
    return float(sum(client.run(time.process_time).values()))


def _on_this_host(client: Any) -> bool:
    """True when every worker runs where the scheduler (this process) runs."""
    from distributed.utils import get_ip

    here = {"127.0.0.1", "localhost", get_ip()}
    hosts = {a.split("://")[-1].rsplit(":", 1)[0] for a in client.scheduler_info()["workers"]}
    return hosts <= here


def _cores() -> int:
    from dask.system import CPU_COUNT

    return int(CPU_COUNT)
