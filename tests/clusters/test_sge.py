"""Real Grid Engine (one node on this machine, started by ci/sge/start.sh)."""

from __future__ import annotations

import os
import subprocess
import time

import dask
import pytest

from pangeo_hpc.clusters.start import kind_of, running_cluster

pytestmark = [pytest.mark.sge, pytest.mark.usefixtures("sge")]

SMALL = {"cores": 1, "processes": 1, "memory": "1GB", "walltime": "00:10:00"}


def sge_jobs() -> list[str]:
    out = subprocess.run(["qstat"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines()[2:] if line.strip()]


def wait_empty(timeout: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := sge_jobs()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def test_sge_cluster_runs_with_the_worker_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # Grid Engine jobs start in the submit folder
    with dask.config.set({"pangeo-hpc.cluster.log-directory": str(tmp_path / "logs")}):
        with running_cluster("sge", profile="sge-generic", jobs=2, timeout=120, **SMALL) as (
            cluster,
            client,
        ):
            assert kind_of(cluster) == "sge"
            assert len(client.scheduler_info()["workers"]) == 2
            env = client.run(
                lambda: (os.environ.get("HDF5_USE_FILE_LOCKING"), os.environ.get("JOB_ID"))
            )
            assert all(v[0] == "FALSE" and v[1] for v in env.values())  # inside SGE jobs
            assert client.submit(sum, [1, 2, 3]).result() == 6
    assert wait_empty() == []
