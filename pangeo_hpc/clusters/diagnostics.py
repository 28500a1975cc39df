"""Wait for batch workers, and explain why they did not come or why they died.

On timeout the error names each job's state and reason as the scheduler (``squeue``,
``qstat``) reports it, the tail of its log, and the usual causes; the jobs are cancelled.
A task whose workers all died while running it (distributed's ``KilledWorker``) becomes
one line naming the task, see :func:`lost_task`.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

from pangeo_hpc.clusters.jobqueue import log_directory
from pangeo_hpc.errors import ClusterError

CAUSES = {
    "slurm": [
        "PENDING with reason Resources/Priority: the partition is busy; wait or ask for less",
        "PENDING with ReqNodeNotAvail or PartitionConfig: memory/cores/walltime exceed the "
        "partition; lower memory=, cores= or walltime=",
    ],
    "pbs": ["state Q: the queue is busy or the request exceeds its limits (qstat -f JOBID)"],
    "sge": ["state qw: no slots free; state Eqw: the job failed to start (qstat -j JOBID)"],
    "any": [
        "RUNNING but no worker: the node cannot reach the scheduler; set interface= to a "
        "network the compute nodes share (ib0, ens5, ...)",
        "the log says 'No such file' or 'No module named distributed': the Python "
        "environment is not on the compute nodes; set python= or activate it in "
        "job_script_prologue",
        "no job at all: submission failed; run the printed job script by hand",
    ],
}


def _job_ids(cluster: Any) -> list[str]:
    """Scheduler job ids of a dask-jobqueue cluster's jobs."""
    ids = []
    for job in list(getattr(cluster, "workers", {}).values()):
        jid = getattr(job, "job_id", None)
        if jid:
            ids.append(str(jid))
    return ids


def _job_states(kind: str, ids: list[str]) -> dict[str, str]:
    """Job id -> "STATE (reason)" as the batch scheduler reports it now."""
    if not ids:
        return {}
    cmd = {
        "slurm": ["squeue", "-h", "-j", ",".join(ids), "-o", "%i|%T|%R"],
        "pbs": ["qstat", *ids],
        "sge": ["qstat"],
    }[kind]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return dict.fromkeys(ids, f"unknown ({cmd[0]} failed: {exc})")
    states = dict.fromkeys(ids, "not in the queue (finished, failed or cancelled)")
    for line in out.splitlines():
        if kind == "slurm" and line.count("|") == 2:
            jid, state, reason = line.split("|")
            states[jid] = f"{state} ({reason})"
        else:
            fields = line.split()
            for jid in ids:
                if fields and fields[0].split(".")[0] == jid.split(".")[0]:
                    states[jid] = " ".join(fields[1:])
    return states


def _log_tails(log_directory: str | None, ids: list[str], lines: int = 15) -> dict[str, str]:
    """The last lines of each job's output files in ``log_directory``."""
    out: dict[str, str] = {}
    if not log_directory:
        return out
    for jid in ids:
        for path in sorted(Path(log_directory).glob(f"*{jid.split('.')[0]}*")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            out[path.name] = "\n".join(text) or "(empty)"
    return out


def explain(cluster: Any, kind: str, expected: int, timeout: float) -> str:
    """The message of a worker timeout: jobs, states, log tails and usual causes.

    Parameters
    ----------
    cluster : distributed.deploy.Cluster
        The cluster whose workers did not come.
    kind : str
        Its kind (``slurm``, ``pbs``, ``sge``, ``gateway``, ``local``).
    expected : int
        The workers waited for.
    timeout : float
        The seconds waited.

    Returns
    -------
    str
        The message, several lines.

    Examples
    --------
    >>> from pangeo_hpc.clusters.diagnostics import explain
    >>> print(explain(cluster, "slurm", expected=4, timeout=300))  # doctest: +SKIP
    """
    ids = _job_ids(cluster)
    n = len(cluster.scheduler_info.get("workers", {}))
    lines = [f"{n} of {expected} Dask workers connected within {timeout:g} s"]
    states = _job_states(kind, ids)
    lines += [f"  job {jid}: {state}" for jid, state in states.items()] or [
        "  no job in the queue: submission failed"
    ]
    for name, tail in _log_tails(log_directory(cluster), ids).items():
        lines.append(f"  --- tail of {name} ---")
        lines += ["    " + t for t in tail.splitlines()]
    lines.append("usual causes:")
    lines += [f"  - {c}" for c in CAUSES.get(kind, []) + CAUSES["any"]]
    lines.append(f"the jobs were cancelled; print the job script with {_script_call(kind)}")
    return "\n".join(lines)


def _script_call(kind: str) -> str:
    return f"get_cluster({kind!r}, preview=True).job_script()"


#: the parameters the messages of a failed start name (``memory=``, ``interface=``, ...)
_PARAMS = ("memory", "cores", "walltime", "queue", "interface")


def lost_task(exc: Any) -> ClusterError:
    """One line for distributed's ``KilledWorker``: which task, how many deaths, what to do.

    Dask reschedules the tasks of a worker that dies and the nanny restarts the worker; a
    task is given up only when ``distributed.scheduler.allowed-failures + 1`` workers died
    while running it, usually because it needs more memory than a worker has.

    Parameters
    ----------
    exc : distributed.KilledWorker
        The error a computation's result raised.

    Returns
    -------
    ClusterError
        Its message names the task's key and the last worker's address.

    Examples
    --------
    >>> from distributed import KilledWorker
    >>> from pangeo_hpc.clusters.diagnostics import lost_task
    >>> try:  # doctest: +SKIP
    ...     client.compute(result).result()
    ... except KilledWorker as exc:
    ...     raise lost_task(exc) from None  # ClusterError: task '...' failed: 4 workers died ...
    """
    deaths = exc.allowed_failures + 1
    return ClusterError(
        f"task {exc.task!r} failed: {deaths} worker{'s' if deaths > 1 else ''} died while "
        f"running it (the last {exc.last_worker.address}; killed, or out of memory: see the "
        "worker log lines above): give workers more memory (memory=, "
        "pangeo-hpc.cluster.memory-limit) or allow more attempts "
        "(distributed.scheduler.allowed-failures), then run again",
        param="memory",
    )


def _submit_check(cluster: Any, kind: str) -> str | None:
    """Why the scheduler would refuse the job script, or None (Slurm: ``sbatch --test-only``)."""
    if kind != "slurm":
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write(cluster.job_script())
    try:
        r = subprocess.run(
            ["sbatch", "--test-only", f.name], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sbatch --test-only failed: {exc}"
    finally:
        Path(f.name).unlink(missing_ok=True)
    return None if r.returncode == 0 else (r.stderr or r.stdout).strip()


def preflight(cluster: Any, kind: str) -> None:
    """Refuse at once a job the batch scheduler would never run (no job is submitted).

    Parameters
    ----------
    cluster : distributed.deploy.Cluster
        A dask-jobqueue cluster with no jobs yet.
    kind : str
        Its kind; kinds other than ``slurm`` are not checked.

    Raises
    ------
    ClusterError
        If Slurm's test submission (``sbatch --test-only``) refuses the job script, with
        its reason.

    Examples
    --------
    >>> from pangeo_hpc.clusters.diagnostics import preflight
    >>> from pangeo_hpc.clusters.start import get_cluster
    >>> cluster = get_cluster("slurm", profile="sdsc-comet", preview=True)  # doctest: +SKIP
    >>> preflight(cluster, "slurm")  # doctest: +SKIP
    """
    refusal = _submit_check(cluster, kind)
    if refusal:
        raise ClusterError(
            f"{kind} refuses the worker job ({refusal}): lower memory=, cores= or walltime= "
            f"to what the partition offers (sinfo -o '%P %c %m %l'), or pick another queue=",
            param=_PARAMS,
        )


def wait_for_workers(client: Any, cluster: Any, kind: str, n: int, timeout: float) -> None:
    """Block until ``n`` workers are connected; otherwise cancel the jobs and explain.

    Parameters
    ----------
    client : distributed.Client
        The cluster's client.
    cluster : distributed.deploy.Cluster
        The cluster whose jobs were submitted.
    kind : str
        Its kind (``slurm``, ``gateway``, ...).
    n : int
        The workers to wait for.
    timeout : float
        Seconds to wait.

    Raises
    ------
    ClusterError
        If fewer than ``n`` workers came within ``timeout``: the message of
        :func:`explain`.

    Examples
    --------
    >>> from pangeo_hpc.clusters.diagnostics import wait_for_workers
    >>> cluster.scale(jobs=2)  # doctest: +SKIP
    >>> wait_for_workers(client, cluster, "slurm", n=2, timeout=600)  # doctest: +SKIP
    """
    try:
        client.wait_for_workers(n, timeout=timeout)
    except TimeoutError as exc:
        message = explain(cluster, kind, n, timeout)
        cluster.close()
        commands = {_script_call(kind): ["job-script", "--cluster", kind]}
        raise ClusterError(message, param=_PARAMS, commands=commands) from exc
