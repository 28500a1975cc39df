"""Where a local run computes: in this process's threads, or in worker processes.

Worker processes cost seconds before the first task and after the last one: each starts
Python, imports the scientific stack and loads the compiled kernels, and each must be shut
down at the end. Threads in this process start at once. On the 2-core reference VM
(``benchmarks/in_process.py``, 2026-11-26, load average 9-12 from other jobs) a
``time_mean`` + ``area_mean`` of 60 and of 240 monthly 1-degree files (174 MB and 695 MB
stored) computed at 28-46 MB/s in two threads of this process against 20-34 MB/s in two
worker processes, which besides took 9.5-10 s to start and 2.7-4.2 s to close (0.05-1.7 s
for the threads): the threads were faster at every size measured. The chunk reader holds
no lock while it inflates and un-shuffles (``pread``, libdeflate, a ``nogil`` kernel), so
threads scale with cores until the Python between the kernels does not: with many cores,
or much more data, processes win back their start. Hence a limit on the bytes to read, as
stored, from the run's :class:`~pangeo_hpc.batch.incremental.read_plan.ReadPlan`: config
``pangeo-hpc.cluster.in-process-bytes`` (default 1 GB, above the largest size measured
faster in threads; ``0`` always starts worker processes). A run that reads nothing (every
state cached) computes here whatever the limit. "Here" was an in-process distributed
cluster when those figures were measured; it is now dask's threaded scheduler with no
distributed at all (:mod:`pangeo_hpc.clusters.threads`: neither its imports nor a
scheduler to start and close).

Batch clusters are the user's choice and are never replaced; nor are runs that warm their
inputs on the workers or read ``s3://`` data (:func:`pangeo_hpc.batch.pipeline.execute.run_recipe`
decides that before asking here).
"""

from __future__ import annotations

from dataclasses import dataclass

from pangeo_hpc import config
from pangeo_hpc.batch.incremental.read_plan import ReadPlan

__all__ = ["Placement", "place"]


@dataclass(frozen=True)
class Placement:
    """Where a run computes, and why (for the log line and ``summary.json``).

    Attributes
    ----------
    in_process : bool
        Compute in this process's threads (no worker processes).
    why : str
        The reason, e.g. ``"60 files to read, 174.2 MB, 0 cached: <= 1.0 GB"``.
    numpy_kernels : bool
        In this process, and reading at most config ``pangeo-hpc.cluster.numpy-kernels-bytes``:
        the kernels with a NumPy twin of the same bits use it while numba has not started
        (:func:`pangeo_hpc.jit.numpy_twins`).

    Examples
    --------
    >>> from pangeo_hpc.batch.pipeline.placement import Placement
    >>> where = Placement(True, "2 files to read, 5.0 MB, 0 cached: <= 1.0 GB")
    >>> where.in_process
    True
    """

    in_process: bool
    why: str
    numpy_kernels: bool = False


def _size(nbytes: float) -> str:
    return f"{nbytes / 1e9:.1f} GB" if nbytes >= 1e9 else f"{nbytes / 1e6:.1f} MB"


def place(plan: ReadPlan, *, kind: str = "local", limit: float | None = None) -> Placement:
    """Whether a run that reads ``plan`` computes in this process's threads.

    Parameters
    ----------
    plan : ReadPlan
        What the run reads (its files to read and their stored sizes).
    kind : str
        The cluster kind the run would start (``"local"``, ``"slurm"`` ...): only a local
        one is ever replaced by threads.
    limit : float, optional
        Stored bytes to read up to which the run computes in threads; default config
        ``pangeo-hpc.cluster.in-process-bytes``.

    Returns
    -------
    Placement

    Examples
    --------
    >>> plan = ReadPlan((("a.nc",), ("b.nc",)), {"a.nc": 3_000_000, "b.nc": 2_000_000},
    ...                 reused=frozenset({0}))
    >>> place(plan, limit=1e9)  # doctest: +NORMALIZE_WHITESPACE
    Placement(in_process=True, why='1 file to read, 2.0 MB, 1 cached: <= 1.0 GB',
              numpy_kernels=True)
    >>> place(plan, limit=1e6).why
    '1 file to read, 2.0 MB, 1 cached: more than 1.0 MB'
    """
    if kind != "local":
        return Placement(False, f"a {kind} cluster: the workers the user asked for")
    limit = float(config.get("cluster.in-process-bytes", limit))
    n = plan.files_to_read
    files = {f for i in plan.to_read for f in plan.pieces[i]}
    what = f"{n} file{'' if n == 1 else 's'} to read"
    cached = f", {plan.files_reused} cached" if plan.incremental else ""
    if files - set(plan.sizes):  # sizes not known (no stamps): as if large
        return Placement(False, f"{what}{cached}: sizes unknown")
    nbytes = plan.bytes_to_read
    text = f"{what}, {_size(nbytes)}{cached}"
    if n == 0 or nbytes <= limit:
        twins = nbytes <= float(config.get("cluster.numpy-kernels-bytes"))
        return Placement(True, f"{text}: <= {_size(limit)}", twins)
    return Placement(False, f"{text}: more than {_size(limit)}")
