"""One call for a Dask cluster: Slurm, PBS or SGE through dask-jobqueue, or a local one.

cluster = get_cluster()                                  # auto: Slurm if it answers
cluster = get_cluster("slurm", profile="aws-c5n.18xlarge", jobs=8)
cluster = get_cluster("local", workers=2)
cluster = get_cluster("gateway", profile="pangeo-hub")    # dask-gateway (gateway.address)
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import dask.config
from dask.system import CPU_COUNT

from pangeo_hpc import config
from pangeo_hpc.clusters import gateway, profiles
from pangeo_hpc.clusters.diagnostics import preflight, wait_for_workers
from pangeo_hpc.clusters.jobqueue import (
    NO_MALLOC_TRIM,
    adaptive_release,
    close_when_idle,
    make_cluster,
    processes_per_job,
    worker_env,
)
from pangeo_hpc.errors import ClusterError, InputError
from pangeo_hpc.write.swap import deferred_signals

if TYPE_CHECKING:  # distributed is imported where a cluster starts: a run computed in this
    # process's threads (clusters/threads.py) never imports it
    from distributed import Client, LocalCluster

Kind = Literal["auto", "local", "slurm", "pbs", "sge", "gateway"]
KINDS = ("auto", "local", "slurm", "pbs", "sge", "gateway")


def slurm_available(timeout: float = 10) -> bool:
    """True inside a Slurm allocation or when a Slurm controller answers ``scontrol ping``.

    Parameters
    ----------
    timeout : float, optional
        Seconds to wait for ``scontrol ping``.

    Returns
    -------
    bool
        Whether Slurm can take jobs from here.

    Examples
    --------
    >>> from pangeo_hpc.clusters.start import slurm_available
    >>> slurm_available()  # doctest: +SKIP
    """
    if os.environ.get("SLURM_JOB_ID"):
        return True
    if shutil.which("scontrol") is None:
        return False
    try:
        r = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and " is UP" in r.stdout


def slurm_node_profile() -> dict[str, Any]:
    """Cores and memory of the default partition's nodes, for Slurm without a site profile.

    Returns
    -------
    dict[str, Any]
        ``cores`` and ``memory`` of a node.

    Raises
    ------
    ClusterError
        If ``sinfo`` fails or gives no node.

    Examples
    --------
    >>> from pangeo_hpc.clusters.start import slurm_node_profile
    >>> slurm_node_profile()  # doctest: +SKIP
    """
    command = ["sinfo", "-h", "-o", "%c %m %P"]
    try:
        r = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        r = subprocess.CompletedProcess(command, 1, "", str(exc))
    rows = [line.split() for line in r.stdout.split("\n") if line.strip()]
    if r.returncode != 0 or not rows:
        why = " ".join((r.stderr or "no partitions listed").split())
        raise ClusterError(
            f"a Slurm cluster without a profile takes the default partition's cores and memory "
            f"from `{' '.join(command)}`, which failed ({why}): check that Slurm is up "
            "(scontrol ping), or give a profile with cores and memory"
        )
    default = next((r for r in rows if r[2].endswith("*")), rows[0])
    cores, mem_mb = int(default[0].rstrip("+")), int(default[1].rstrip("+"))
    return {"kind": "slurm", "cores": cores, "memory": f"{int(mem_mb * 0.9)}MB"}


def resolve_kind(
    kind: str, profile: str | None, given: Mapping[str, Any] | None = None
) -> tuple[str, dict[str, Any]]:
    """The cluster kind to start and the profile options, with "auto" decided. A Slurm
    cluster without a profile asks ``sinfo`` for the nodes' cores and memory unless the
    options ``given`` hold both (their values are checked later, without Slurm).

    Parameters
    ----------
    kind : str
        ``auto``, ``local``, ``slurm``, ``pbs``, ``sge`` or ``gateway``.
    profile : str or None
        A site profile's name, or ``None``.
    given : Mapping[str, Any], optional
        Options given by the caller (``cores``, ``memory``, ...).

    Returns
    -------
    (str, dict)
        The kind, and the profile's options.

    Raises
    ------
    InputError
        If ``kind`` is unknown, or a PBS or SGE cluster has no profile with cores and
        memory.
    ClusterError
        If Slurm without a profile cannot tell its nodes' cores and memory.

    Examples
    --------
    >>> from pangeo_hpc.clusters.start import resolve_kind
    >>> kind, options = resolve_kind("auto", "sdsc-comet")
    >>> kind, options["cores"]
    ('slurm', 24)
    """
    if kind not in KINDS:
        raise InputError(f"cluster kind {kind!r} is unknown: use one of {', '.join(KINDS)}")
    name = profile or config.get("cluster.profile")
    if kind == "gateway" and name == "auto":  # the gateway's defaults
        return "gateway", {"kind": "gateway"}
    if name == "auto":
        if kind in ("auto", "slurm") and (kind == "slurm" or slurm_available()):
            if given and given.get("cores") is not None and given.get("memory") is not None:
                return "slurm", {"kind": "slurm"}
            return "slurm", slurm_node_profile()
        if kind in ("pbs", "sge"):
            raise InputError(
                f"kind={kind!r} needs a profile with cores and memory: pass profile=NAME, "
                f"one of {profiles.names()}",
                param=("kind", "profile"),
            )
        return "local", {"kind": "local"}
    opts = profiles.resolve(name)
    chosen = opts.get("kind", "local") if kind == "auto" else kind
    return chosen, opts


def site_name(kind: str, profile: str | None) -> str:
    """The name a site's measurements are kept under: the profile, or for a cluster
    started without one (or with ``auto``) its kind (``slurm``, ``local``).

    Parameters
    ----------
    kind : str
        The cluster kind asked for.
    profile : str or None
        The profile's name, or ``None``.

    Returns
    -------
    str
        The site's name.

    Examples
    --------
    >>> from pangeo_hpc.clusters.start import site_name
    >>> site_name("slurm", "sdsc-comet"), site_name("slurm", None)
    ('sdsc-comet', 'slurm')
    """
    return profile if profile and profile != "auto" else kind


def get_cluster(
    kind: Kind = "auto",
    *,
    profile: str | None = None,
    workers: int | None = None,
    threads_per_worker: int | None = None,
    memory_limit: str | None = None,
    **overrides: Any,
) -> Any:
    """Return a running Dask cluster (scale batch clusters with ``cluster.scale(jobs=N)``).

    Parameters
    ----------
    kind : {"auto", "local", "slurm", "pbs", "sge", "gateway"}
        ``"auto"`` takes the profile's kind; without a profile, Slurm when a controller
        answers (or inside an allocation), else a local cluster. ``"gateway"``: a cluster
        of the dask-gateway in dask-gateway's config (``gateway.address``), with the
        profile's ``options`` (:mod:`pangeo_hpc.clusters.gateway`), not yet scaled.
    profile : str, optional
        A site profile from config ``pangeo-hpc.profiles`` (``profiles`` CLI lists them);
        default config ``pangeo-hpc.cluster.profile``.
    workers, threads_per_worker, memory_limit
        Local clusters only: worker processes (default one per core), threads each
        (default 1: HDF5 serialises threads within a process) and memory per worker.
    **overrides
        Batch clusters: profile options to change, e.g. ``cores=4, memory="8GB",
        walltime="00:30:00", queue="debug", interface="ib0"``; gateway clusters: cluster
        options (``worker_cores=2``). ``preview=True`` returns what would be asked for
        (a job script's cluster, or a gateway's
        :class:`~pangeo_hpc.clusters.gateway.GatewaySpec`) without starting anything.

    Returns
    -------
    cluster
        A ``distributed.LocalCluster``, a dask-jobqueue cluster (``SLURMCluster``,
        ``PBSCluster``, ``SGECluster``) or a dask-gateway cluster; with ``preview=True``
        what would be asked for, nothing started.

    Examples
    --------
    >>> from distributed import Client
    >>> from pangeo_hpc import get_cluster
    >>> client = Client(get_cluster("local", workers=2))  # doctest: +SKIP
    >>> cluster = get_cluster("slurm", profile="my-site")  # doctest: +SKIP
    >>> cluster.scale(jobs=4)  # doctest: +SKIP
    """
    chosen, opts = resolve_kind(kind, profile, overrides)
    if chosen == "local":
        return local_cluster(
            workers=workers, threads_per_worker=threads_per_worker, memory_limit=memory_limit
        )
    preview = bool(overrides.pop("preview", False))
    if chosen == "gateway":
        spec = gateway.gateway_spec(
            {**opts, **{k: v for k, v in overrides.items() if v is not None}}
        )
        return spec if preview else gateway.new_gateway_cluster(spec)
    opts.update({k: v for k, v in overrides.items() if v is not None})
    return make_cluster(chosen, opts, preview=preview)


#: the HTTP routes of a cluster in this process: no dashboard, no proxy to one
_NO_DASHBOARD = {
    "distributed.scheduler.http.routes": [
        "distributed.http.scheduler.info",
        "distributed.http.scheduler.json",
        "distributed.http.health",
    ],
    "distributed.worker.http.routes": ["distributed.http.health"],
}


def prepare_local(
    workers: int | None = None, threads_per_worker: int | None = None
) -> tuple[int, int]:
    """Local worker processes (config ``pangeo-hpc.cluster.workers``, default the CPUs this
    process may use) and threads each (``pangeo-hpc.cluster.threads-per-worker``); sets
    HDF5 file locking for this process as for a worker's (unless set already).

    Parameters
    ----------
    workers : int, optional
        Worker processes; default from config.
    threads_per_worker : int, optional
        Threads per worker; default from config.

    Returns
    -------
    (int, int)
        The workers and threads per worker.

    Raises
    ------
    InputError
        If ``workers`` is not a whole number of at least 1.

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> from pangeo_hpc.clusters.start import prepare_local
    >>> with mock.patch.dict(os.environ):  # it sets HDF5_USE_FILE_LOCKING: restored after
    ...     prepare_local(workers=2, threads_per_worker=1)
    (2, 1)
    """
    # the CPUs this process may use (cgroup quota and affinity), not the host's: in a
    # container or a binder pod os.cpu_count() is the whole node's
    n = config.get("cluster.workers", workers) or CPU_COUNT
    if not isinstance(n, int) or n < 1:
        raise InputError(f"workers={n!r} must be a positive whole number, e.g. 2", param="workers")
    os.environ.setdefault("HDF5_USE_FILE_LOCKING", worker_env()["HDF5_USE_FILE_LOCKING"])
    return n, int(config.get("cluster.threads-per-worker", threads_per_worker))


def local_cluster(
    *,
    workers: int | None = None,
    threads_per_worker: int | None = None,
    memory_limit: str | None = None,
    processes: bool = True,
) -> LocalCluster:
    """A :class:`distributed.LocalCluster` of worker processes on 127.0.0.1.

    With ``processes=False``: one worker in this process, with a thread per requested
    worker process (no processes to spawn), and no dashboard: the dashboard's imports
    (bokeh, and jupyter-server-proxy for the scheduler's proxy route) took 1.2 s of its
    start. Its HTTP server keeps the health and info routes. (A recipe run that reads
    little uses no cluster at all: :mod:`pangeo_hpc.clusters.threads`.)

    Parameters
    ----------
    workers : int, optional
        Worker processes; default config ``pangeo-hpc.cluster.workers``.
    threads_per_worker : int, optional
        Threads per worker; default config ``pangeo-hpc.cluster.threads-per-worker``.
    memory_limit : str, optional
        Each worker's memory limit (``"4GB"``); default distributed's.
    processes : bool, optional
        Worker processes (``True``) or one worker in this process (``False``).

    Returns
    -------
    LocalCluster
        The running cluster.

    Examples
    --------
    >>> from distributed import Client
    >>> from pangeo_hpc.clusters.start import local_cluster
    >>> with local_cluster(workers=2, processes=False) as cluster, Client(cluster) as client:
    ...     len(client.scheduler_info()["workers"])
    1
    """
    from distributed import LocalCluster

    n, threads = prepare_local(workers, threads_per_worker)
    if not processes:
        with dask.config.set(_NO_DASHBOARD):
            cluster = LocalCluster(
                n_workers=1,
                threads_per_worker=n * threads,
                processes=False,
                dashboard_address="127.0.0.1:0",  # the HTTP server's routes, on loopback
                scheduler_kwargs={"dashboard": False},
                memory_limit=config.get("cluster.memory-limit", memory_limit),
            )
    else:
        # glibc's adaptive mmap threshold in the workers (jobqueue.NO_MALLOC_TRIM; measured
        # here: HDF5 reads 15 % slower without it); this process's nannies start them
        with dask.config.set(NO_MALLOC_TRIM):
            cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=threads,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
                memory_limit=config.get("cluster.memory-limit", memory_limit),
                env=worker_env(),
            )
    keep_ctrl_c()
    return cluster


def keep_ctrl_c() -> None:
    """Remove distributed's garbage-collection callback from this process, which a local
    cluster's scheduler (and its worker, with ``processes=False``) added.

    Python runs a gc callback inside whatever code allocates, and an exception raised there
    is printed as "Exception ignored in: <... GCDiagnosis._gc_callback ...>" and dropped: a
    Ctrl-C (``KeyboardInterrupt``) that lands in it is lost and the run goes on. That was
    seen on a loaded machine (``test_ctrl_c_closes_a_local_cluster_without_its_workers_noise``
    waited 120 s on a run that had not stopped). The callback only logs long collections
    (at INFO). The scheduler's close asks to disable it again, which then does nothing.

    Examples
    --------
    >>> import gc
    >>> keep_ctrl_c()
    >>> [cb for cb in gc.callbacks if "GCDiagnosis" in repr(cb)]
    []
    """
    from distributed.gc import disable_gc_diagnosis

    disable_gc_diagnosis(force=True)


def worker_count(cluster: Any, jobs: int) -> int:
    """Dask workers that ``jobs`` batch jobs of ``cluster`` start.

    Parameters
    ----------
    cluster : distributed.deploy.Cluster
        A cluster made by :func:`get_cluster`.
    jobs : int
        Batch jobs (ignored for a local cluster).

    Returns
    -------
    int
        The workers.

    Examples
    --------
    >>> from pangeo_hpc.clusters.start import get_cluster, worker_count
    >>> cluster = get_cluster("slurm", profile="sdsc-comet", preview=True)
    >>> worker_count(cluster, jobs=3)
    36
    >>> cluster.close()
    """
    return jobs * processes_per_job(cluster)


def kind_of(cluster: Any) -> str:
    """ "local", "slurm", "pbs", "sge" or "gateway" for a cluster made by :func:`get_cluster`.

    Parameters
    ----------
    cluster : distributed.deploy.Cluster
        A cluster, or ``None``.

    Returns
    -------
    str
        The kind.

    Examples
    --------
    >>> from pangeo_hpc.clusters.start import kind_of
    >>> from pangeo_hpc.clusters.threads import ThreadClient
    >>> kind_of(ThreadClient(2).cluster)
    'local'
    """
    name = type(cluster).__name__.lower()
    return next((k for k in ("slurm", "pbs", "sge", "gateway") if name.startswith(k)), "local")


def start_cluster(
    kind: Kind = "auto",
    *,
    profile: str | None = None,
    workers: int | None = None,
    jobs: int | None = None,
    adapt: tuple[int, int] | None = None,
    timeout: float | None = None,
    idle_timeout: float | None = None,
    **overrides: Any,
) -> tuple[Any, Client]:
    """Start a cluster and a client, and wait for the first workers (for notebooks).

    Batch clusters get ``jobs`` jobs (default 1), or with ``adapt=(minimum, maximum)``
    between that many jobs as the load asks (at least one job is waited for). When batch
    workers do not come within ``timeout`` seconds (config
    ``pangeo-hpc.cluster.wait-timeout``) a :class:`~pangeo_hpc.errors.ClusterError` says
    which jobs are in which state, with their log tails and the usual causes, and the jobs
    are cancelled. Close both at the end (``client.close(); cluster.close()``); scripts use
    :func:`running_cluster`, which does it for them.

    Parameters
    ----------
    kind, profile, workers, **overrides
        As for :func:`get_cluster`.
    jobs, adapt, timeout
        Batch clusters only, as above; a gateway cluster takes ``workers`` (default 1) or
        ``adapt=(minimum, maximum)`` workers and ``timeout``, then compares python, dask,
        distributed, numpy and pangeo-hpc here and on a worker
        (:func:`~pangeo_hpc.clusters.gateway.check_versions`: an
        :class:`~pangeo_hpc.errors.InputError` names a mismatch).
    idle_timeout : float, optional
        Batch clusters only: seconds after which what sits idle is given back (config
        ``pangeo-hpc.cluster.idle-timeout``, default 1200; None there: never). An adaptive
        cluster releases a worker that has been idle that long, down to its minimum
        (:func:`~pangeo_hpc.clusters.jobqueue.adaptive_release`); a fixed-size one closes
        its scheduler once no task has run that long
        (``distributed.scheduler.idle-timeout``), and its workers leave, ending their jobs.

    Returns
    -------
    tuple
        ``(cluster, client)``.

    Examples
    --------
    >>> from pangeo_hpc import start_cluster
    >>> cluster, client = start_cluster("slurm", profile="my-site", jobs=2)  # doctest: +SKIP
    >>> client.close(); cluster.close()  # doctest: +SKIP
    """
    if adapt is not None and not (1 <= adapt[0] <= adapt[1]):
        raise InputError(
            f"adapt={adapt!r} needs 1 <= minimum <= maximum jobs, e.g. (1, 8)", param="adapt"
        )
    if jobs is not None and jobs < 1:
        raise InputError(f"jobs={jobs!r} must be a positive whole number, e.g. 2", param="jobs")
    idle = config.get("cluster.idle-timeout", idle_timeout)
    cluster = get_cluster(kind, profile=profile, workers=workers, **overrides)
    try:
        if kind_of(cluster) == "gateway":  # scaled, waited for, versions checked
            return cluster, gateway.start_gateway(
                cluster, workers=workers, adapt=adapt, timeout=timeout
            )
        from distributed import Client

        from pangeo_hpc.clusters.worker_exit import quick_exit
        from pangeo_hpc.clusters.worker_logs import quiet_input_errors

        client = Client(cluster)
        try:
            quiet_input_errors(client)  # bad input is one line, without the workers' log
            chosen = kind_of(cluster)
            if chosen == "local":
                quick_exit(client)  # close() in 0.1 s, not 3-4 s (worker_exit.py)
            else:
                preflight(cluster, chosen)
                if adapt is not None:
                    release = adaptive_release(idle)  # idle workers, down to the minimum
                    cluster.adapt(minimum_jobs=adapt[0], maximum_jobs=adapt[1], **release)
                    first = adapt[0]
                else:
                    first = jobs or 1
                    cluster.scale(jobs=first)
                wait = float(config.get("cluster.wait-timeout", timeout))
                wait_for_workers(client, cluster, chosen, worker_count(cluster, first), wait)
                if adapt is None and idle is not None:  # from now: not while jobs queue
                    client.run_on_scheduler(close_when_idle, seconds=idle)
        except BaseException:
            client.close()
            raise
    except BaseException:
        _close(cluster)
        raise
    return cluster, client


#: the connect timeout of closing a cluster whose scheduler has closed already
GONE_CONNECT = "1s"


def _close(cluster: Any) -> None:
    """Close ``cluster``; a gateway's is shut down with Ctrl-C and SIGTERM held. A batch
    cluster whose scheduler closed itself (``idle_timeout``) is closed without waiting for
    its scheduler to answer: nothing listens, and each call to it would otherwise be tried
    for ``distributed.comm.timeouts.connect`` (30 s); its jobs are cancelled all the same
    (dask-jobqueue ends each job without the scheduler)."""
    if kind_of(cluster) == "gateway":
        with deferred_signals():
            gateway.close_gateway(cluster)
    elif _scheduler_closed(cluster):
        with dask.config.set({"distributed.comm.timeouts.connect": GONE_CONNECT}):
            cluster.close()
    else:
        cluster.close()


def _scheduler_closed(cluster: Any) -> bool:
    """Whether the scheduler of ``cluster``, running in this process, has closed."""
    status = getattr(getattr(cluster, "scheduler", None), "status", None)
    return getattr(status, "name", None) in ("closing", "closed")


@contextmanager
def running_cluster(
    kind: Kind = "auto",
    *,
    profile: str | None = None,
    workers: int | None = None,
    jobs: int | None = None,
    adapt: tuple[int, int] | None = None,
    timeout: float | None = None,
    idle_timeout: float | None = None,
    **overrides: Any,
) -> Iterator[tuple[Any, Client]]:
    """:func:`start_cluster` as a context: yield ``(cluster, client)``, then close both.

    Batch jobs are cancelled, and a gateway cluster shut down, whatever ends the block:
    normal exit, an exception, Ctrl-C or SIGTERM (the command line makes it a
    ``KeyboardInterrupt``); the gateway's shutdown holds both signals until it is done.

    Parameters
    ----------
    kind, profile, workers, jobs, adapt, timeout, idle_timeout, **overrides
        As for :func:`start_cluster`.

    Yields
    ------
    tuple
        ``(cluster, client)``, closed when the block ends.

    Examples
    --------
    >>> from pangeo_hpc import running_cluster
    >>> with running_cluster("local", workers=2) as (cluster, client):  # doctest: +SKIP
    ...     print(client.submit(sum, [1, 2]).result())
    3
    """
    cluster, client = start_cluster(
        kind,
        profile=profile,
        workers=workers,
        jobs=jobs,
        adapt=adapt,
        timeout=timeout,
        idle_timeout=idle_timeout,
        **overrides,
    )
    levels: dict[str, int] | None = None
    try:
        with client:
            try:
                yield cluster, client
            except KeyboardInterrupt:
                if kind_of(cluster) == "local":
                    levels = _hush()  # the scheduler and nannies live in this process
                    _hush_teardown(client)
                raise
    finally:
        try:
            _close(cluster)
        finally:
            if levels is not None:  # a notebook's kernel goes on: its logging as it was
                for name, level in levels.items():
                    logging.getLogger(name).setLevel(level)


#: the loggers that report a cluster's teardown (workers fetching from peers that left)
_TEARDOWN_LOGGERS = ("distributed", "tornado", "asyncio")


def _hush() -> dict[str, int]:
    """Raise the teardown loggers to CRITICAL; return their levels before."""
    before = {}
    for name in _TEARDOWN_LOGGERS:
        before[name] = logging.getLogger(name).level
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return before


def _hush_teardown(client: Client, timeout: float = 5.0) -> None:
    """Quiet the workers of a local cluster that is being closed after Ctrl-C.

    Their processes share this terminal: closing them with tasks in flight makes each log
    the transfers its peers no longer answer (tracebacks of ``CommClosedError``,
    ``CancelledError``), noise after the user asked to stop. Real failures were reported
    before the interrupt; batch workers log to their job files and are left alone. Waits
    at most ``timeout`` seconds (a worker busy in C code answers late).
    """
    done = threading.Event()

    def ask() -> None:
        try:
            client.run(_hush, on_error="ignore")
        except Exception:  # a cluster already going away: nothing to quiet
            pass
        finally:
            done.set()

    threading.Thread(target=ask, daemon=True, name="hush-teardown").start()
    done.wait(timeout)
