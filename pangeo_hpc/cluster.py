"""Start the Dask cluster a recipe runs on.

Only the local cluster is available so far; Slurm, PBS and SGE (dask-jobqueue) come with
their site profiles.
"""

from __future__ import annotations

import os
from typing import Literal

import dask.config
from distributed import LocalCluster

from . import config
from .errors import InputError

#: environment every worker process gets: one BLAS/OpenMP thread per process, and no HDF5
#: file locking (it fails or serialises on Lustre, NFS and FUSE mounts)
WORKER_ENV = {
    "HDF5_USE_FILE_LOCKING": "FALSE",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}

Kind = Literal["auto", "local", "slurm", "pbs", "sge"]


def get_cluster(
    kind: Kind = "auto",
    *,
    workers: int | None = None,
    threads_per_worker: int | None = None,
    memory_limit: str | None = None,
) -> LocalCluster:
    """Return a running Dask cluster.

    Parameters
    ----------
    kind : {"auto", "local", "slurm", "pbs", "sge"}
        ``"local"`` (and ``"auto"`` for now) starts a :class:`distributed.LocalCluster` of
        worker *processes* on 127.0.0.1 with the dashboard on a free port.
    workers : int, optional
        Worker processes; default config ``pangeo-hpc.cluster.workers`` or one per core.
    threads_per_worker : int, optional
        Default config ``pangeo-hpc.cluster.threads-per-worker`` (1: HDF5 serialises
        threads within a process, so processes scale and threads do not).
    memory_limit : str, optional
        Per worker, e.g. ``"4GB"``; default config ``pangeo-hpc.cluster.memory-limit``.
    """
    if kind not in ("auto", "local", "slurm", "pbs", "sge"):
        raise InputError(f"cluster kind {kind!r} is unknown: use auto, local, slurm, pbs or sge")
    if kind in ("slurm", "pbs", "sge"):
        raise InputError(
            f"--cluster {kind} is not available yet in this version: use --cluster local"
        )
    n = config.get("cluster.workers", workers) or os.cpu_count() or 1
    if not isinstance(n, int) or n < 1:
        raise InputError(f"workers={n!r} must be a positive whole number, e.g. 2")
    threads = int(config.get("cluster.threads-per-worker", threads_per_worker))
    os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")  # the client reads files too
    # distributed sets MALLOC_TRIM_THRESHOLD_=65536 in workers, which pins glibc's mmap
    # threshold at 128 KiB: every HDF5 chunk buffer is then mmapped and page-faulted anew
    # (measured here: HDF5 reads 15 % slower). Keep glibc's adaptive default instead.
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        return LocalCluster(
            n_workers=n,
            threads_per_worker=threads,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            memory_limit=config.get("cluster.memory-limit", memory_limit),
            env=dict(WORKER_ENV),
        )


def dashboard_link(cluster: LocalCluster) -> str:
    """The dashboard URL of ``cluster``."""
    return str(cluster.dashboard_link)
