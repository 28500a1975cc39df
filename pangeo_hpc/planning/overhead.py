"""Dask's per-task scheduler overhead, measured on a running cluster.

:func:`task_overhead` times graphs of independent no-op tasks (and one task that sums their
results): whatever the wall time is, it is scheduling, messaging and bookkeeping, not work.
Divided by the number of tasks it is the cost a graph pays per task on that cluster, to set
against the time a task computes (a chunk should take much longer than this).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from pangeo_hpc.errors import ClusterError, InputError


@dataclass(frozen=True)
class TaskOverhead:
    """What :func:`task_overhead` measured.

    Attributes
    ----------
    seconds_per_task : float
        Median over the repeats of the wall time per task (seconds).
    tasks : int
        No-op tasks in each graph (the final sum not counted).
    workers : int
        Dask workers of the cluster when it was measured.
    threads : int
        Threads of all those workers together.
    samples : list of float
        Seconds per task of each timed repeat, in order.

    Examples
    --------
    >>> from pangeo_hpc.planning.overhead import TaskOverhead
    >>> o = TaskOverhead(0.00095, tasks=500, workers=2, threads=1, samples=[0.0009, 0.001])
    >>> f"{o.seconds_per_task * 1e3:.2f} ms/task"
    '0.95 ms/task'
    """

    seconds_per_task: float
    tasks: int
    workers: int
    threads: int
    samples: list[float]

    @property
    def tasks_per_second(self) -> float:
        """Tasks the cluster gets through per second (``1 / seconds_per_task``)."""
        return 1.0 / self.seconds_per_task


def _noop(i: int) -> int:
    """A task that does nothing (module level, so that worker processes can import it)."""
    return i


def _total(values: list[int]) -> int:
    """The final aggregation: one task depending on every no-op task."""
    return sum(values)


def _check_count(value: object, name: str, example: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{name}={value!r} must be a whole number >= 1, e.g. {name}={example}")
    return value


def _one_round(client: Any, tasks: int) -> float:
    """Wall seconds to submit ``tasks`` no-op tasks plus their sum and get the sum back."""
    start = time.perf_counter()
    futures = client.map(_noop, range(tasks), pure=False)
    total = client.submit(_total, futures, pure=False)
    answer = total.result()
    seconds = time.perf_counter() - start
    expected = tasks * (tasks - 1) // 2
    if answer != expected:  # pragma: no cover - would mean lost or repeated tasks
        raise RuntimeError(f"the no-op graph summed to {answer}, expected {expected}")
    del futures, total  # release the keys before the next round
    return seconds


def task_overhead(client: Any, tasks: int = 2000, repeat: int = 3) -> TaskOverhead:
    """Measure the scheduler overhead per task of the cluster behind ``client``.

    Each round submits ``tasks`` independent no-op tasks (``client.map`` with
    ``pure=False``, so every round gets new keys) and one task summing their results, waits
    for the sum, and divides the wall time by ``tasks``. One untimed warm-up round comes
    first (connections, imports, the function's pickle cached on the workers). The time
    includes the client's side (building and sending the graph), the scheduler's and the
    workers' (running a task, reporting it, moving the results to the summing task).

    The no-op tasks are root tasks, which the scheduler queues (Dask config
    ``distributed.scheduler.worker-saturation``, 1.1 by default): a worker holds only about
    1.1 tasks per thread at a time, so on a cluster with few threads each task waits for a
    scheduler-worker round trip and the time per task is mostly that latency; with more
    threads the round trips overlap. Set the option (e.g. to ``inf``) around the call to
    measure without queuing.

    Parameters
    ----------
    client : distributed.Client
        A client of a cluster with at least one worker.
    tasks : int, default 2000
        No-op tasks per round, at least 1.
    repeat : int, default 3
        Timed rounds, at least 1; the result is their median.

    Returns
    -------
    TaskOverhead
        Median seconds per task, every round's value, and the workers and threads of the
        cluster.

    Raises
    ------
    InputError
        ``tasks`` or ``repeat`` is not a whole number >= 1.
    ClusterError
        The cluster has no workers (the graph would wait for ever).

    Examples
    --------
    >>> from pangeo_hpc.clusters.start import running_cluster
    >>> with running_cluster("local", workers=2) as (_, client):  # doctest: +SKIP
    ...     o = task_overhead(client, tasks=500)
    >>> print(f"{o.seconds_per_task * 1e3:.2f} ms/task, {o.workers} workers")  # doctest: +SKIP
    0.95 ms/task, 2 workers
    """
    tasks = _check_count(tasks, "tasks", 2000)
    repeat = _check_count(repeat, "repeat", 3)
    nthreads = client.nthreads()  # every worker (scheduler_info() may list only a few)
    if not nthreads:
        raise ClusterError(
            "the cluster has no workers, so no task can run: start some first "
            "(cluster.scale(...), then client.wait_for_workers(n))"
        )
    _one_round(client, tasks)  # warm-up, not counted
    samples = [_one_round(client, tasks) / tasks for _ in range(repeat)]
    return TaskOverhead(
        seconds_per_task=statistics.median(samples),
        tasks=tasks,
        workers=len(nthreads),
        threads=sum(nthreads.values()),
        samples=samples,
    )
