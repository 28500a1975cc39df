"""dask-jobqueue clusters (Slurm, PBS, SGE) built from a site profile.

:func:`cluster_kwargs` is pure: it turns a profile into the keyword arguments of
``SLURMCluster``/``PBSCluster``/``SGECluster``, so the job script can be checked without a
scheduler (``cluster.job_script()`` prints it in full). What a running cluster's jobs do is
read back from that same public script (:func:`processes_per_job`, :func:`log_directory`),
not from dask-jobqueue's private attributes.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.sizes import parse_size
from pangeo_hpc.inputs.walltime import format_walltime, lifetime, parse_walltime

#: profile keys that are ours, not dask-jobqueue's
OWN_KEYS = ("kind", "data_root", "hdf5_file_locking", "host", "jobs")
#: options dask-jobqueue passes through for every kind
_PASS = (
    "queue",
    "account",
    "project",
    "job_extra_directives",
    "job_directives_skip",
    "local_directory",
    "death_timeout",
    "shebang",
    "resource_spec",
    "job_cpu",
    "job_mem",
)
#: distributed's nannies set MALLOC_TRIM_THRESHOLD_=65536 in their workers, which pins
#: glibc's mmap threshold at 128 KiB: every HDF5 chunk buffer is then mmapped and
#: page-faulted anew (a one-core Slurm job's worker used 1.3-1.4x a local worker's CPU for
#: the same 240 chunks, 2026-11-27). None unsets it (distributed's own way); the local
#: cluster's nanny runs in this process (:func:`pangeo_hpc.clusters.start.local_cluster`),
#: a batch job's in the job, which reads it from :func:`nanny_env`.
NO_MALLOC_TRIM = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}


def worker_env(*, hdf5_file_locking: bool | None = None) -> dict[str, str]:
    """Environment every worker process needs.

    One BLAS/OpenMP thread per process (Dask provides the parallelism), and HDF5 file
    locking off unless asked for: the locks fail or serialise on Lustre, NFS and FUSE.

    Parameters
    ----------
    hdf5_file_locking : bool, optional
        Keep HDF5's file locking on; default config
        ``pangeo-hpc.cluster.hdf5-file-locking``.

    Returns
    -------
    dict[str, str]
        Variable -> value.

    Examples
    --------
    >>> from pangeo_hpc.clusters.jobqueue import worker_env
    >>> env = worker_env()
    >>> env["OMP_NUM_THREADS"], env["HDF5_USE_FILE_LOCKING"]
    ('1', 'FALSE')
    """
    locking = config.get("cluster.hdf5-file-locking", hdf5_file_locking)
    return {
        "HDF5_USE_FILE_LOCKING": "TRUE" if locking else "FALSE",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }


def nanny_env() -> dict[str, str]:
    """Environment of a batch job's nanny: :data:`NO_MALLOC_TRIM` as Dask's configuration
    reads it from the environment (a dict literal; dask keeps its keys' case).

    Returns
    -------
    dict[str, str]
        The variable to export in the job script, by name.

    Examples
    --------
    >>> nanny_env()
    {'DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON': '{"MALLOC_TRIM_THRESHOLD_": None}'}
    """
    ((key, value),) = NO_MALLOC_TRIM.items()
    section, _, name = key.rpartition(".")
    variable = "DASK_" + section.upper().replace(".", "__").replace("-", "_")
    return {variable: f'{{"{name}": {value!r}}}'}


def cluster_kwargs(kind: str, profile: dict[str, Any], *, name: str = "dask-worker") -> dict:
    """Keyword arguments of the dask-jobqueue cluster for ``kind`` from ``profile``.

    Parameters
    ----------
    kind : str
        ``slurm``, ``pbs`` or ``sge``.
    profile : dict[str, Any]
        The profile's options (:func:`~pangeo_hpc.clusters.profiles.resolve`).
    name : str, optional
        The jobs' name.

    Returns
    -------
    dict
        The keyword arguments (``cores``, ``memory``, ``job_extra_directives``, ...).

    Raises
    ------
    InputError
        If the profile lacks ``cores`` or ``memory``, or has more processes than cores.

    Examples
    --------
    >>> from pangeo_hpc.clusters.jobqueue import cluster_kwargs
    >>> from pangeo_hpc.clusters.profiles import resolve
    >>> kwargs = cluster_kwargs("slurm", resolve("sdsc-comet"))
    >>> kwargs["cores"], kwargs["processes"], kwargs["memory"]
    (24, 12, '120GB')
    """
    missing = [k for k in ("cores", "memory") if profile.get(k) in (None, "")]
    if missing:
        raise InputError(
            f"a {kind} cluster needs {' and '.join(missing)} per job: pass "
            + ", ".join(f"{k}=..." for k in missing)
            + " or use a profile that sets them (profile=NAME)",
            param=(*missing, "profile"),
        )
    cores = _positive(profile["cores"], "cores")
    # one single-threaded process per core unless told otherwise: HDF5 serialises threads
    processes = _positive(profile.get("processes") or cores, "processes")
    if processes > cores:
        raise InputError(
            f"processes={processes} exceeds cores={cores}: use processes <= cores",
            param=("processes", "cores"),
        )
    memory = str(profile["memory"])
    parse_size(memory, name="memory")
    walltime = profile.get("walltime") or "01:00:00"
    life, stagger = lifetime(walltime)
    env = worker_env(hdf5_file_locking=profile.get("hdf5_file_locking"))
    kwargs: dict[str, Any] = {
        "cores": cores,
        "processes": processes,
        "memory": memory,
        "walltime": format_walltime(parse_walltime(walltime)),
        "python": profile.get("python") or sys.executable,
        "job_name": name,
        "job_script_prologue": [
            *(f"export {k}={shlex.quote(v)}" for k, v in {**env, **nanny_env()}.items()),
            *profile.get("job_script_prologue", []),
        ],
        "worker_extra_args": [
            "--lifetime",
            f"{life}s",
            "--lifetime-stagger",
            f"{stagger}s",
            "--lifetime-restart",
            *profile.get("worker_extra_args", []),
        ],
        "log_directory": os.path.expanduser(
            config.get("cluster.log-directory", profile.get("log_directory"))
        ),
    }
    kwargs.update({k: profile[k] for k in _PASS if profile.get(k) is not None})
    if profile.get("interface"):
        # workers on other nodes reach the scheduler on this interface
        kwargs["interface"] = profile["interface"]
        kwargs["scheduler_options"] = {"interface": profile["interface"], "dashboard_address": ":0"}
    else:
        host = profile.get("host") or "127.0.0.1"
        kwargs["scheduler_options"] = {"host": host, "dashboard_address": f"{host}:0"}
    return kwargs


def adaptive_release(idle_timeout: float | None) -> dict[str, Any]:
    """Keyword arguments of ``cluster.adapt`` that release a worker idle ``idle_timeout``
    seconds: distributed's :class:`~distributed.deploy.Adaptive` retires a worker once it
    has been recommended for retirement ``wait_count`` times in a row, every ``interval``.

    Parameters
    ----------
    idle_timeout : float or None
        Seconds a worker may stay idle; ``None`` leaves distributed's defaults.

    Returns
    -------
    dict[str, Any]
        ``interval`` and ``wait_count``, or nothing.

    Examples
    --------
    >>> adaptive_release(60)
    {'interval': '1s', 'wait_count': 60}
    >>> adaptive_release(None)
    {}
    """
    if idle_timeout is None:
        return {}
    idle = _seconds(idle_timeout, "idle_timeout")
    interval = min(1.0, idle)
    return {"interval": f"{interval:g}s", "wait_count": max(1, math.ceil(idle / interval))}


def close_when_idle(dask_scheduler: Any, seconds: float) -> None:
    """Run on a scheduler (``client.run_on_scheduler``): close it once no task has run for
    ``seconds``, counted from now (``distributed.scheduler.idle-timeout``). Set once the
    workers are there: a scheduler given it at its start closes while its jobs queue.

    Parameters
    ----------
    dask_scheduler : distributed.Scheduler
        The scheduler (passed by ``run_on_scheduler``).
    seconds : float
        Idle seconds before it closes.

    Examples
    --------
    >>> from pangeo_hpc.clusters.jobqueue import close_when_idle
    >>> client.run_on_scheduler(close_when_idle, seconds=600)  # doctest: +SKIP
    """
    dask_scheduler.idle_timeout = _seconds(seconds, "idle_timeout")
    dask_scheduler.idle_since = None


def _seconds(value: Any, name: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if isinstance(value, bool) or not (math.isfinite(seconds) and seconds > 0):
        raise InputError(
            f"{name}={value!r} must be seconds above 0, e.g. 1200 (config "
            "pangeo-hpc.cluster.idle-timeout; null: never)",
            param=name,
        )
    return seconds


def processes_per_job(cluster: Any) -> int:
    """Dask worker processes that one batch job of ``cluster`` starts.

    Parameters
    ----------
    cluster : dask_jobqueue.JobQueueCluster or other
        A cluster from :func:`make_cluster`, or any other Dask cluster.

    Returns
    -------
    int
        The ``--nworkers N`` of the worker command in ``cluster.job_script()`` (written by
        dask-jobqueue when a job starts more than one process), else 1; 1 for a cluster
        without a job script (a ``LocalCluster``).

    Examples
    --------
    >>> from pangeo_hpc.clusters.jobqueue import processes_per_job
    >>> from pangeo_hpc.clusters.start import get_cluster
    >>> cluster = get_cluster("slurm", profile="sdsc-comet", preview=True)
    >>> processes_per_job(cluster)
    12
    >>> cluster.close()
    """
    job_script = getattr(cluster, "job_script", None)
    if job_script is None:
        return 1
    counts = re.findall(r"--nworkers (\d+)\b", job_script())
    return int(counts[-1]) if counts else 1


#: the job header's error/output file lines: ``#SBATCH -e DIR/NAME-%J.err``, ``#PBS -e DIR/``,
#: ``#$ -e DIR/``
_LOG_LINE = re.compile(r"^#(?:SBATCH|PBS|\$) -[eo] (.+?)\s*$", re.MULTILINE)


def log_directory(cluster: Any) -> str | None:
    """The folder the batch jobs of ``cluster`` write their output to.

    Parameters
    ----------
    cluster : dask_jobqueue.JobQueueCluster or other
        A cluster from :func:`make_cluster`, or any other Dask cluster.

    Returns
    -------
    str or None
        The folder of the first ``-e``/``-o`` line of ``cluster.job_header`` (dask-jobqueue
        writes them when it has a ``log_directory``); None without one, or for a cluster
        without a job header (a ``LocalCluster``).

    Examples
    --------
    >>> from pangeo_hpc.clusters.jobqueue import log_directory
    >>> from pangeo_hpc.clusters.start import get_cluster
    >>> cluster = get_cluster("slurm", profile="sdsc-comet", preview=True)
    >>> log_directory(cluster)
    '.../.pangeo-hpc/logs'
    >>> cluster.close()
    """
    header = getattr(cluster, "job_header", None)
    found = _LOG_LINE.search(header) if isinstance(header, str) else None
    return os.path.dirname(found.group(1)) if found else None


def make_cluster(kind: str, profile: dict[str, Any], *, preview: bool = False) -> Any:
    """Start the scheduler of a dask-jobqueue cluster (no jobs yet: scale it).

    With ``preview`` the scheduler listens on 127.0.0.1 whatever the profile's interface,
    so that a site's job script can be printed on any machine.

    Parameters
    ----------
    kind : str
        ``slurm``, ``pbs`` or ``sge``.
    profile : dict[str, Any]
        The profile's options.
    preview : bool, optional
        Listen on 127.0.0.1 (to print the job script).

    Returns
    -------
    dask_jobqueue.JobQueueCluster
        The cluster, without jobs.

    Raises
    ------
    InputError
        If the profile's options are not valid (:func:`cluster_kwargs`) or its network
        interface does not exist on this host.

    Examples
    --------
    >>> from pangeo_hpc.clusters.jobqueue import make_cluster
    >>> from pangeo_hpc.clusters.profiles import resolve
    >>> cluster = make_cluster("slurm", resolve("sdsc-comet"), preview=True)
    >>> "#SBATCH" in cluster.job_script()
    True
    >>> cluster.close()
    """
    import psutil

    PBSCluster, SGECluster, SLURMCluster = _import_jobqueue()

    classes = {"slurm": SLURMCluster, "pbs": PBSCluster, "sge": SGECluster}
    kwargs = cluster_kwargs(kind, profile)
    interface = kwargs.get("interface")
    if interface and interface not in psutil.net_if_addrs():
        if not preview:
            raise InputError(
                f"network interface={interface!r} does not exist on this host (it has "
                f"{sorted(psutil.net_if_addrs())}): pass interface=NAME, the network the "
                "compute nodes share with this host",
                param="interface",
            )
        kwargs["scheduler_options"] = {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}
        kwargs["worker_extra_args"] = [*kwargs["worker_extra_args"], "--interface", interface]
        del kwargs["interface"]
    Path(kwargs["log_directory"]).mkdir(parents=True, exist_ok=True, mode=0o700)
    return classes[kind](**kwargs)


def _import_jobqueue() -> tuple[Any, Any, Any]:
    """dask-jobqueue's cluster classes, keeping the caller's SIGINT handler.

    Importing ``dask_jobqueue.slurm`` imports ``dask_jobqueue.runner``, which sets SIGINT to
    ``sys.exit()``: Ctrl-C would then exit silently with code 0 (or kill a Jupyter kernel)
    instead of raising KeyboardInterrupt and cancelling the jobs.
    """
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    from dask_jobqueue import PBSCluster, SGECluster, SLURMCluster

    if main and previous is not None:
        signal.signal(signal.SIGINT, previous)
    return PBSCluster, SGECluster, SLURMCluster


def _positive(value: Any, name: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1 or str(n) != str(value).strip():
        raise InputError(f"{name}={value!r} must be a positive whole number, e.g. 4", param=name)
    return n
