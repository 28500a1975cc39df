"""Measurements behind :func:`pangeo_hpc.planning.calibrate.calibrate`: a recipe's runs on
fresh workers (wall time, task computing, worker and scheduler CPU), the slowdown with every
core busy, storage read rates, and the scheduler's CPU per task as workers are added."""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pangeo_hpc.s3.options import S3Options
from pangeo_hpc.storage.pagecache import read_through

__all__ = [
    "Run",
    "host_cores",
    "job_starts",
    "load_slowdown",
    "local_starts",
    "median_run",
    "noop_cpu",
    "on_this_host",
    "read_local",
    "run_spread",
    "simulated_growth",
    "storage_rates",
    "timed_run",
    "worker_count",
    "worker_cpu",
]

#: progress lines (INFO): what is measured and what came out; the CLI prints them
log = logging.getLogger(__name__)


@dataclass
class Run:
    """One run on freshly started workers.

    Attributes
    ----------
    chunks : int
        Chunks read.
    bytes : int
        Bytes read.
    tasks : int
        Tasks of the graph.
    wall : float, optional
        Seconds from submission to result.
    computing : float, optional
        Seconds of task computing (the task stream), all workers together.
    worker_cpu : float, optional
        CPU seconds of the worker processes.
    scheduler_cpu : float, optional
        CPU seconds of this process (scheduler and client).

    Examples
    --------
    >>> from pangeo_hpc.planning.measure import Run
    >>> run = Run(chunks=8, bytes=1_000_000_000, tasks=40, wall=2.5)
    >>> run.bytes / run.wall / 1e6  # MB/s of this run
    400.0
    """

    chunks: int
    bytes: int
    tasks: int
    wall: float = 0.0
    computing: float = 0.0  # seconds of task computing (task stream)
    worker_cpu: float = 0.0  # CPU seconds of the worker processes
    scheduler_cpu: float = 0.0  # CPU seconds of this process (scheduler and client)


def timed_run(client: Any, lazy: Any, run: Run) -> Run:
    """Compute ``lazy`` on ``client``: wall time, task computing, worker and scheduler CPU.

    Parameters
    ----------
    client : distributed.Client
        A client of fresh workers.
    lazy : dask collection
        A dask collection.
    run : Run
        Its size (chunks, bytes, tasks); the times are filled in.

    Returns
    -------
    Run
        ``run`` with its times.

    Examples
    --------
    >>> from pangeo_hpc.planning.measure import Run, timed_run
    >>> run = timed_run(client, lazy, Run(chunks=8, bytes=10**9, tasks=40))  # doctest: +SKIP
    """
    from distributed import get_task_stream

    w0, s0 = worker_cpu(client), time.process_time()
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
        worker_cpu=worker_cpu(client) - w0,
        scheduler_cpu=time.process_time() - s0,
    )


def read_local(files: list[str]) -> None:
    """Read local ``files`` once, so that the runs find them in the page cache.

    Parameters
    ----------
    files : list[str]
        Paths and URLs (URLs are left out).

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.planning.measure import read_local
    >>> _ = Path("month.nc").write_bytes(b"0" * 1024)
    >>> read_local(["month.nc"])  # now in the page cache
    """
    for f in files:
        if "://" not in str(f):
            read_through(f)


def median_run(runs: list[Run]) -> Run:
    """The run with the median of each time of ``runs`` (of one size).

    Parameters
    ----------
    runs : list[Run]
        Runs of the same size.

    Returns
    -------
    Run
        The first run's size with the median times.

    Examples
    --------
    >>> from pangeo_hpc.planning.measure import Run, median_run
    >>> times = [(2.0, 3.0), (4.0, 1.0), (3.0, 2.0)]  # wall, computing
    >>> runs = [Run(8, 10**9, 40, wall=w, computing=c) for w, c in times]
    >>> median_run(runs)
    Run(chunks=8, bytes=1000000000, tasks=40, wall=3.0, computing=2.0, worker_cpu=0.0, s...
    """
    med = {
        k: statistics.median(getattr(r, k) for r in runs)
        for k in ("wall", "computing", "worker_cpu", "scheduler_cpu")
    }
    return replace(runs[0], **med)


def run_spread(runs: list[tuple[Run, ...]]) -> tuple[float, float]:
    """The fastest and the slowest run over the median of its size, all sizes together:
    ``runs`` holds one tuple of runs (one per size) per repetition.

    Parameters
    ----------
    runs : list[tuple[Run, ...]]
        One tuple of runs per repetition, one run per size in each.

    Returns
    -------
    (float, float)
        Lowest and highest wall time over its size's median.

    Examples
    --------
    >>> from pangeo_hpc.planning.measure import Run, run_spread
    >>> small, large = (8, 10**9, 40), (16, 2 * 10**9, 80)
    >>> rounds = [(Run(*small, wall=2.0), Run(*large, wall=4.0)),
    ...           (Run(*small, wall=2.6), Run(*large, wall=3.6)),
    ...           (Run(*small, wall=1.9), Run(*large, wall=4.4))]
    >>> run_spread(rounds)  # fastest and slowest over its size's median
    (0.9, 1.3)
    """
    ratios = []
    for size in zip(*runs, strict=True):
        mid = statistics.median(r.wall for r in size)
        ratios += [r.wall / mid for r in size if mid > 0]
    return (min(ratios), max(ratios)) if ratios else (1.0, 1.0)


def job_starts(
    cluster: Any, client: Any, *, jobs: int = 1, repeat: int = 3, timeout: float | None = None
) -> tuple[list[float], list[float]]:
    """Seconds each batch job queued and its workers took to connect once it ran.

    ``repeat`` rounds: the cluster's jobs are cancelled (``scale(0)``, their workers gone
    from the scheduler), then ``jobs`` submitted at once. A job's start is the start of its
    worker's first process (:func:`pangeo_hpc.clusters.budget.job_started`, seen on the
    node); its queue runs from the submission to that start, its arrival from that start
    to its last worker connected (polled every 20 ms here). The cluster has ``jobs`` jobs
    again afterwards. Clocks of the nodes and of this host are assumed in step (NTP).

    Parameters
    ----------
    cluster : distributed.deploy.Cluster
        A batch cluster (dask-jobqueue).
    client : distributed.Client
        Its client.
    jobs : int, optional
        Jobs submitted at once in each round.
    repeat : int, optional
        Rounds.
    timeout : float, optional
        Seconds to wait for the workers of a round; default config
        ``pangeo-hpc.cluster.wait-timeout``.

    Returns
    -------
    (list of float, list of float)
        Each job's queue and arrival seconds.

    Raises
    ------
    ClusterError
        If the workers do not leave after ``scale(0)``, or the jobs do not start, within
        the time allowed.

    Examples
    --------
    >>> from pangeo_hpc.clusters.start import running_cluster
    >>> from pangeo_hpc.planning.measure import job_starts
    >>> with running_cluster("slurm", profile="sdsc-comet") as (cluster, client):  # doctest: +SKIP
    ...     queue, arrival = job_starts(cluster, client, jobs=2, repeat=3)
    """
    from pangeo_hpc import config
    from pangeo_hpc.clusters.budget import job_started
    from pangeo_hpc.clusters.jobqueue import processes_per_job
    from pangeo_hpc.errors import ClusterError

    wait = float(config.get("cluster.wait-timeout", timeout))
    want = jobs * processes_per_job(cluster)
    queue: list[float] = []
    arrival: list[float] = []

    def workers() -> set[str]:
        return set(client.scheduler_info(n_workers=-1)["workers"])

    for _ in range(repeat):
        cluster.scale(jobs=0)
        deadline = time.monotonic() + wait
        while workers():
            if time.monotonic() > deadline:
                raise ClusterError(f"the workers did not leave within {wait:.0f} s of scale(0)")
            time.sleep(0.05)
        submitted = time.time()
        cluster.scale(jobs=jobs)
        seen: dict[str, float] = {}
        deadline = time.monotonic() + wait
        while len(seen) < want:
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{len(seen)} of {want} workers connected within {wait:.0f} s "
                    "(pangeo-hpc.cluster.wait-timeout) while job starts were measured"
                )
            now = time.time()
            seen.update({w: now for w in workers() - set(seen)})
            time.sleep(0.02)
        by_job: dict[str, list[tuple[float, float]]] = {}
        for worker, (job, started) in client.run(job_started).items():
            by_job.setdefault(job, []).append((started, seen.get(worker, time.time())))
        for times in by_job.values():
            started = min(t[0] for t in times)
            queue.append(max(0.0, started - submitted))
            arrival.append(max(0.0, max(t[1] for t in times) - started))
    log.info(
        f"job starts ({repeat} rounds of {jobs} job{'s' * (jobs > 1)}): queued "
        f"{min(queue):.2f}-{max(queue):.2f} s, workers connected "
        f"{min(arrival):.2f}-{max(arrival):.2f} s after the job started"
    )
    return queue, arrival


def local_starts(workers: int, repeat: int = 3) -> list[float]:
    """Seconds a local cluster of ``workers`` worker processes takes from its start to its
    workers connected, ``repeat`` times (a new cluster each, as every command-line run
    starts one): the processes' start and imports, which share this host's cores with
    whatever else runs. A local run's "arrival" (:attr:`Model.arrival`).

    Parameters
    ----------
    workers : int
        Worker processes of each cluster.
    repeat : int
        Clusters started, one after the other.

    Returns
    -------
    list of float
        Seconds of each.

    Examples
    --------
    >>> from pangeo_hpc.planning.measure import local_starts
    >>> local_starts(workers=2, repeat=3)  # doctest: +SKIP
    """
    from pangeo_hpc.clusters.start import running_cluster

    took = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        with running_cluster("local", workers=workers) as (_, client):
            client.wait_for_workers(workers)
            took.append(time.perf_counter() - t0)
    log.info(
        f"local cluster start ({repeat} of {workers} worker{'s' * (workers > 1)}): "
        f"{min(took):.2f}-{max(took):.2f} s to the workers connected"
    )
    return took


def load_slowdown(client: Any, lazy: Any, cores: int, repeat: int = 3) -> float:
    """Worker CPU time of ``lazy`` with ``cores`` busy worker processes on this host over
    that with one busy process, both on warm workers, medians of ``repeat`` runs taken in
    turns; at least 1.

    On a local cluster (``client``'s, one process) the busy processes are a LocalCluster of
    ``cores`` workers. On a batch cluster whose workers run on this host (one node shared
    by its jobs) they are the cluster's own: it is scaled to ``cores`` jobs, "one busy"
    runs on one of its workers alone, and it is scaled back afterwards. A local cluster's
    workers stand in for a batch job's badly: they computed a chunk 1.5x faster than a
    Slurm job's worker here, and the ratio came out below 1 (docs/scaling.md).

    CPU time, not the tasks' wall time: time slices lost to the scheduler's process on the
    same cores are the model's "host CPU" limit already.

    Parameters
    ----------
    client : distributed.Client
        The cluster's client.
    lazy : dask collection
        A dask collection to compute.
    cores : int
        Busy worker processes of the loaded runs.
    repeat : int, optional
        Runs of each.

    Returns
    -------
    float
        The slowdown (1 or more).

    Examples
    --------
    >>> from pangeo_hpc.planning.measure import load_slowdown
    >>> load_slowdown(client, lazy, cores=4)  # doctest: +SKIP
    """
    from pangeo_hpc.clusters.start import kind_of, running_cluster

    cluster = getattr(client, "cluster", None)
    if cluster is not None and kind_of(cluster) != "local":
        return _batch_slowdown(client, cluster, lazy, cores, repeat)

    def cpu(c: Any) -> float:
        before = worker_cpu(c)
        c.compute(lazy).result()
        return worker_cpu(c) - before

    one, busy = [], []
    with running_cluster("local", workers=cores) as (_, full):
        full.compute(lazy).result()  # warm the workers
        for _ in range(repeat):
            one.append(cpu(client))
            busy.append(cpu(full))
    return max(1.0, statistics.median(busy) / statistics.median(one))


def _batch_slowdown(client: Any, cluster: Any, lazy: Any, cores: int, repeat: int) -> float:
    """:func:`load_slowdown` on a batch ``cluster``'s own workers (see there)."""
    from pangeo_hpc.clusters.jobqueue import processes_per_job

    per_job = processes_per_job(cluster)
    jobs = max(1, len(client.scheduler_info(n_workers=-1)["workers"]) // per_job)
    want = max(1, -(-cores // per_job))

    def cpu(**where: Any) -> float:
        before = worker_cpu(client)
        client.compute(lazy, **where).result()
        return worker_cpu(client) - before

    one, busy = [], []
    cluster.scale(jobs=max(jobs, want))
    try:
        client.wait_for_workers(max(jobs, want) * per_job)
        client.compute(lazy).result()  # warm the new workers
        first = sorted(client.scheduler_info(n_workers=-1)["workers"])[0]
        for _ in range(repeat):
            one.append(cpu(workers=[first], allow_other_workers=False))
            busy.append(cpu())
    finally:
        cluster.scale(jobs=jobs)
        _wait_for_count(client, cluster, jobs, per_job)
    log.info(
        f"  load slowdown on the cluster's own {want} job{'s' * (want > 1)}: worker CPU "
        f"{statistics.median(busy):.2f} s all busy, {statistics.median(one):.2f} s one"
    )
    return max(1.0, statistics.median(busy) / statistics.median(one))


def _wait_for_count(client: Any, cluster: Any, jobs: int, per_job: int) -> None:
    """Until ``cluster`` has ``jobs`` jobs and the scheduler their workers (after a scale)."""
    from pangeo_hpc import config
    from pangeo_hpc.errors import ClusterError

    wait = float(config.get("cluster.wait-timeout"))
    deadline = time.monotonic() + wait
    while (
        len(client.scheduler_info(n_workers=-1)["workers"]) != jobs * per_job
        or len(getattr(cluster, "workers", {}) or {}) > jobs
    ):
        if time.monotonic() > deadline:
            raise ClusterError(f"the cluster did not return to {jobs} jobs within {wait:.0f} s")
        time.sleep(0.05)


def storage_rates(
    paths: Mapping[str, str | Path],
    *,
    max_bytes: int | str | None = None,
    s3: S3Options | None = None,
) -> dict[str, float]:
    """Cold read bytes/s of each ``{kind: path}``; ``cache``: warm, of the first local one
    (``s3``: how to reach ``s3://`` paths).

    Parameters
    ----------
    paths : Mapping[str, str or Path]
        A file or folder per storage kind (``{"fsx": "/fsx/era5"}``).
    max_bytes : int or str, optional
        Bytes read of each at most (``"2GB"``, or bytes); default config
        ``pangeo-hpc.storage.survey-bytes`` (:func:`pangeo_hpc.storage.survey.read_speed`).
    s3 : S3Options, optional
        Endpoint and credentials of ``s3://`` paths.

    Returns
    -------
    dict[str, float]
        Bytes/s by kind, and ``cache``.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.planning.measure import storage_rates
    >>> _ = Path("sample.bin").write_bytes(bytes(4_000_000))
    >>> rates = storage_rates({"local": "sample.bin"}, max_bytes="2MB")  # bytes/s
    >>> sorted(rates), all(r > 0 for r in rates.values())
    (['cache', 'local'], True)
    """
    from pangeo_hpc.s3.options import is_s3
    from pangeo_hpc.storage.survey import read_speed

    out: dict[str, float] = {}
    for kind, path in paths.items():
        r = read_speed(path, max_bytes=max_bytes, cold=True, s3_options=s3)
        out[kind] = r.bytes / r.seconds
        log.info(f"  storage {kind} ({path}): {r.mb_per_s:,.0f} MB/s cold")
        if not is_s3(str(path)):
            w = read_speed(path, max_bytes=max_bytes, cold=False)
            out.setdefault("cache", w.bytes / w.seconds)
            log.info(f"  storage cache ({path}): {w.mb_per_s:,.0f} MB/s warm")
    return out


def noop_cpu(client: Any, tasks: int = 2000) -> float:
    """CPU seconds of this process (scheduler and client) per no-op task on ``client``.

    The wall time per task (:func:`pangeo_hpc.planning.overhead.task_overhead`) is measured along;
    this process's CPU time is what a scheduler on its own core spends per task.

    Parameters
    ----------
    client : distributed.Client
        A client of the cluster measured.
    tasks : int, optional
        No-op tasks to run.

    Returns
    -------
    float
        CPU seconds per task.

    Examples
    --------
    >>> from pangeo_hpc.planning.measure import noop_cpu
    >>> noop_cpu(client, tasks=2000)  # doctest: +SKIP
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

    Parameters
    ----------
    workers : int
        Local workers to start.
    tasks : int
        No-op tasks to run.
    base : float
        CPU seconds per task with one worker.

    Returns
    -------
    float
        Seconds per task per added worker (0 or more).

    Examples
    --------
    >>> from pangeo_hpc.planning.measure import simulated_growth
    >>> simulated_growth(workers=4, tasks=2000, base=0.0008)  # doctest: +SKIP
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


def worker_count(client: Any) -> int:
    """The workers connected to ``client``'s scheduler now.

    Parameters
    ----------
    client : distributed.Client
        A client.

    Returns
    -------
    int
        The count.

    Examples
    --------
    >>> from pangeo_hpc.planning.measure import worker_count
    >>> worker_count(client)  # doctest: +SKIP
    """
    return len(client.scheduler_info()["workers"])


def worker_cpu(client: Any) -> float:
    """CPU seconds the worker processes have used so far, all together.

    Parameters
    ----------
    client : distributed.Client
        A client of the workers.

    Returns
    -------
    float
        CPU seconds.

    Examples
    --------
    >>> from pangeo_hpc.planning.measure import worker_cpu
    >>> worker_cpu(client)  # doctest: +SKIP
    """
    return float(sum(client.run(time.process_time).values()))


def on_this_host(client: Any) -> bool:
    """True when every worker runs where the scheduler (this process) runs.

    Parameters
    ----------
    client : distributed.Client
        A client of the workers.

    Returns
    -------
    bool
        Whether they all run on this host.

    Examples
    --------
    >>> from pangeo_hpc.planning.measure import on_this_host
    >>> on_this_host(client)  # doctest: +SKIP
    """
    from distributed.utils import get_ip

    here = {"127.0.0.1", "localhost", get_ip()}
    hosts = {a.split("://")[-1].rsplit(":", 1)[0] for a in client.scheduler_info()["workers"]}
    return hosts <= here


def host_cores() -> int:
    """The cores this process may use (``dask.system.CPU_COUNT``: affinity and cgroup limits
    counted).

    Returns
    -------
    int
        The count.

    Examples
    --------
    >>> from pangeo_hpc.planning.measure import host_cores
    >>> host_cores() >= 1
    True
    """
    from dask.system import CPU_COUNT

    return int(CPU_COUNT)
