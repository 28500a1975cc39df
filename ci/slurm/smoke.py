"""Smoke test: a 2-job dask_jobqueue.SLURMCluster on the local Slurm from start.sh.

Run with the project venv, e.g. ``.venv/bin/python ci/slurm/smoke.py``.
Exits non-zero if the workers do not come up, the task fails, or jobs are left
in the queue.
"""

import os
import subprocess
import sys
import tempfile
import time


def squeue():
    return subprocess.run(
        ["squeue", "-h"], check=True, capture_output=True, text=True
    ).stdout.rstrip()


def main():
    from dask.distributed import Client
    from dask_jobqueue import SLURMCluster

    # Job scripts run from the submit directory and write slurm-<id>.out there:
    # keep them out of the repo.
    os.chdir(tempfile.mkdtemp(prefix="pangeo-hpc-slurm-smoke-"))
    t0 = time.monotonic()
    with SLURMCluster(
        cores=1,
        processes=1,
        memory="1GB",
        walltime="00:10:00",
        scheduler_options={"host": "127.0.0.1"},
        interface=None,
    ) as cluster, Client(cluster) as client:
        cluster.scale(jobs=2)
        client.wait_for_workers(2, timeout=60)
        t_up = time.monotonic() - t0
        result = client.submit(lambda: 1 + 1).result(timeout=30)
        assert result == 2, result
        print(f"2 workers up in {t_up:.1f} s, 1+1={result}, jobs:\n{squeue()}")

    # Closing the cluster scancels the jobs; give Slurm a moment to clear them.
    for _ in range(60):
        left = squeue()
        if not left:
            break
        time.sleep(0.5)
    if left:
        sys.exit(f"jobs left in the queue after closing the cluster:\n{left}")
    print(f"cluster closed, queue empty; total {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
