"""Watch what a running cluster spends and stop the run when it passes its budget.

A run with a budget (:func:`pangeo_hpc.planning.budget.check_budget` checked the
prediction first and made its :class:`Guard`) runs inside :func:`within_budget`: a thread of
the client adds up the node-hours spent, every :data:`INTERVAL` seconds:

- a batch cluster: the sum over its jobs of the time since each started. A job's start is
  the start of its worker's first process on the node (:func:`job_started`: the oldest
  ancestor of the worker that runs the same Python, the nanny the job script started);
  a job counts from its start until its last worker left the scheduler, or now. A job
  still queued costs nothing; one whose worker is still starting is counted from its
  start as soon as its worker connects (a few seconds late, never lost).
- a local cluster: one node, since the watch began.

When the spending passes the budget the thread interrupts the main thread as Ctrl-C
does (``SIGINT`` to it alone, ``signal.pthread_kill``): the run unwinds the way a Ctrl-C
unwinds it, with the per-file states it saved so far kept in the state cache, the cluster
closed and its jobs cancelled; :func:`within_budget` then raises
:class:`~pangeo_hpc.errors.BudgetSpent` (the command line: exit code 3 and one line; the
same command again resumes from the saved states). From a thread that is not the main
thread (a signal cannot reach it) the watcher closes the cluster instead, which fails the
computation, and the same error is raised.

Why a signal and not ``client.cancel``: the Ctrl-C path is the one every part of a run
already unwinds correctly (tested: states kept, temporary files removed, jobs cancelled);
a second way to stop would be a second thing to get right.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from pangeo_hpc.errors import BudgetSpent
from pangeo_hpc.inputs.budget import Budget

__all__ = ["INTERVAL", "Guard", "job_started", "within_budget"]

#: seconds between two looks at what the cluster spent
INTERVAL = 1.0
#: environment variables of a batch job's id: Slurm, PBS, Grid Engine
_JOB_IDS = ("SLURM_JOB_ID", "PBS_JOBID", "JOB_ID")


@dataclass(frozen=True)
class Guard:
    """A budget checked against the run's prediction: what the watcher enforces.

    Attributes
    ----------
    budget : Budget
        As the user gave it.
    node_hours : float
        The budget in node-hours (dollars over the price).
    price : float or None
        Dollars per node-hour of the cluster's nodes.
    predicted : str
        What the plan predicted for the run, for messages (``0.0031-0.0044 node-hours``).

    Examples
    --------
    >>> from pangeo_hpc.clusters.budget import Guard
    >>> from pangeo_hpc.inputs.budget import parse_budget
    >>> budget = parse_budget("5USD")
    >>> guard = Guard(budget, node_hours=budget.node_hours(2.5), price=2.5)
    >>> guard.node_hours
    2.0
    """

    budget: Budget
    node_hours: float
    price: float | None = None
    predicted: str = ""


def job_started() -> tuple[str, float]:
    """Run on a worker: its batch job's id and when the job started (seconds since the
    epoch), from the oldest ancestor process running the same Python (the nanny that the
    job script started). Without a batch job id, the host and that ancestor's pid.

    Returns
    -------
    (str, float)
        The job's id (or ``host:pid``) and its start (seconds since the epoch).

    Examples
    --------
    >>> from pangeo_hpc.clusters.budget import job_started
    >>> job, since = job_started()  # outside a batch job: "host:pid" of this Python's eldest
    >>> ":" in job, since > 0
    (True, True)
    """
    import psutil

    me = psutil.Process()
    top = me
    try:
        exe = me.exe()
        for parent in me.parents():
            if parent.exe() != exe:
                break
            top = parent
    except psutil.Error:  # an ancestor we may not look at: the job started before it
        pass
    job = next((os.environ[k] for k in _JOB_IDS if os.environ.get(k)), None)
    return job or f"{socket.gethostname()}:{top.pid}", top.create_time()


class _Spending:
    """The node-hours a cluster has spent so far (see the module's docstring)."""

    def __init__(self, client: Any, *, local: bool, since: float | None = None) -> None:
        self.client = client
        self.local = local
        self.since = time.time() if since is None else since
        self.jobs: dict[str, list[float]] = {}  # job: [start, last seen]
        self.worker_job: dict[str, str] = {}

    def update(self, now: float | None = None) -> float:
        """Node-hours spent until ``now`` (default: now)."""
        now = time.time() if now is None else now
        if self.local:
            return (now - self.since) / 3600
        workers = set(self.client.scheduler_info(n_workers=-1)["workers"])
        new = sorted(workers - set(self.worker_job))
        if new:
            for worker, (job, started) in self.client.run(job_started, workers=new).items():
                self.worker_job[worker] = job
                seen = self.jobs.setdefault(job, [started, now])
                seen[0] = min(seen[0], started)
        for worker in workers:
            if worker in self.worker_job:
                self.jobs[self.worker_job[worker]][1] = now
        return sum(last - start for start, last in self.jobs.values()) / 3600


class _BudgetWatcher:
    """A thread that stops the run in the main thread once ``guard`` is spent."""

    def __init__(
        self, cluster: Any, client: Any, guard: Guard, *, interval: float | None = None
    ) -> None:
        from pangeo_hpc.clusters.start import kind_of

        self.cluster = cluster
        self.guard = guard
        self.interval = INTERVAL if interval is None else interval
        self.spending = _Spending(client, local=kind_of(cluster) == "local")
        self.spent: float | None = None  # node-hours when it fired
        self._main = threading.current_thread() is threading.main_thread()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="budget-watch")

    @property
    def fired(self) -> bool:
        """Whether the budget was spent and the run told to stop."""
        return self.spent is not None

    def start(self) -> _BudgetWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching; after it returns, no interrupt is sent any more."""
        with self._lock:
            self._done.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=30)

    def _watch(self) -> None:
        while not self._done.wait(self.interval):
            try:
                spent = self.spending.update()
            except Exception:  # a worker leaving between two calls: look again next time
                continue
            if spent > self.guard.node_hours:
                self._fire(spent)
                return

    def _fire(self, spent: float) -> None:
        with self._lock:
            if self._done.is_set():
                return
            self.spent = spent
            if self._main:  # as Ctrl-C: the run unwinds and saves what it has
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
                return
        self.cluster.close()  # no signal reaches another thread: end the computation

    def message(self) -> str:
        """One line: the budget, what was spent, and how to go on."""
        g = self.guard
        spent = g.budget.describe(self.spent or 0.0, g.price)
        jobs = len(self.spending.jobs) if not self.spending.local else 1
        where = f"{jobs} job{'s' * (jobs != 1)}" if not self.spending.local else "this machine"
        return (
            f"budget {g.budget.text} spent ({spent} on {where}"
            + (f"; predicted {g.predicted}" if g.predicted else "")
            + "): the run was stopped and the states of the files it finished are saved; "
            "run the same command again to resume from them (with a larger budget to finish)"
        )


@contextmanager
def within_budget(
    started: AbstractContextManager[tuple[Any, Any]],
    guard: Guard | None,
    *,
    interval: float | None = None,
) -> Iterator[tuple[Any, Any]]:
    """``started`` (a running cluster's context) with ``guard`` watched while it runs.

    Yields ``(cluster, client)`` as ``started`` does. Without a guard, ``started`` alone.

    Parameters
    ----------
    started : AbstractContextManager[tuple[Any, Any]]
        The context of a starting cluster
        (:func:`~pangeo_hpc.clusters.start.running_cluster`).
    guard : Guard or None
        The budget to watch; ``None`` watches nothing.
    interval : float, optional
        Seconds between two looks at the spending; default :data:`INTERVAL`.

    Yields
    ------
    (cluster, client)
        As ``started`` yields them.

    Raises
    ------
    BudgetSpent
        The budget was spent: the run was stopped as Ctrl-C stops it, after the cluster
        closed (its jobs cancelled).

    Examples
    --------
    >>> from pangeo_hpc.clusters.budget import Guard, within_budget
    >>> from pangeo_hpc.clusters.start import running_cluster
    >>> from pangeo_hpc.inputs.budget import parse_budget
    >>> guard = Guard(parse_budget("0.5h"), node_hours=0.5)
    >>> started = running_cluster("slurm", jobs=2)  # doctest: +SKIP
    >>> with within_budget(started, guard) as (cluster, client):  # doctest: +SKIP
    ...     client.compute(work).result()  # BudgetSpent once 0.5 node-hours are spent
    """
    if guard is None:
        with started as pair:
            yield pair
        return
    watcher: _BudgetWatcher | None = None
    try:
        with started as (cluster, client):
            watcher = _BudgetWatcher(cluster, client, guard, interval=interval).start()
            try:
                yield cluster, client
            finally:
                watcher.stop()
    except BaseException:
        if watcher is not None and watcher.fired:
            raise BudgetSpent(watcher.message(), param="budget") from None
        raise
