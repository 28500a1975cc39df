"""Smoke test: a 2-job dask_jobqueue.SGECluster on the local Grid Engine from start.sh.

Run with the project venv, e.g. ``.venv/bin/python ci/sge/smoke.py``.
Exits non-zero if the workers do not come up, the task fails, or jobs are left
in the queue.
"""

import os
import subprocess
import sys
import tempfile
import time


def qstat():
    return subprocess.run(
        ["qstat"], check=True, capture_output=True, text=True
    ).stdout.rstrip()


def main():
    from dask.distributed import Client
    from dask_jobqueue import SGECluster

    # Jobs run with -cwd and write <name>.o<id> files there: keep them out of
    # the repo.
    os.chdir(tempfile.mkdtemp(prefix="pangeo-hpc-sge-smoke-"))
    t0 = time.monotonic()
    with SGECluster(
        cores=1,
        processes=1,
        memory="1GB",
        queue="all.q",
        walltime="00:10:00",
        scheduler_options={"host": "127.0.0.1"},
    ) as cluster, Client(cluster) as client:
        cluster.scale(jobs=2)
        client.wait_for_workers(2, timeout=60)
        t_up = time.monotonic() - t0
        result = client.submit(lambda: 1 + 1).result(timeout=30)
        assert result == 2, result
        print(f"2 workers up in {t_up:.1f} s, 1+1={result}, jobs:\n{qstat()}")

    # Closing the cluster qdels the jobs; give Grid Engine a moment to clear them.
    for _ in range(60):
        left = qstat()
        if not left:
            break
        time.sleep(0.5)
    if left:
        sys.exit(f"jobs left in the queue after closing the cluster:\n{left}")
    print(f"cluster closed, queue empty; total {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
