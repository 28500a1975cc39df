"""Real Slurm (one node on this machine, started by ci/slurm/start.sh): recipes, worker
environment, scaling, diagnostics, and no job left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import dask
import pytest
from conftest import queue, start_cli, wait_queue_empty

from pangeo_hpc.clusters.start import running_cluster
from pangeo_hpc.errors import ClusterError

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("slurm")]

SMALL = {"cores": 1, "memory": "1GB", "walltime": "00:10:00"}
#: CLI options of a run on two one-core Slurm jobs
ON_SLURM = ("--cluster", "slurm", "--jobs", "2", "--cores", "1", "--memory", "2GB")


@pytest.fixture(autouse=True)
def private_logs(tmp_path, monkeypatch):
    """Job logs in the test's folder; and no job of a failed test leaks into the next."""
    monkeypatch.setenv("DASK_PANGEO_HPC__CLUSTER__LOG_DIRECTORY", str(tmp_path / "logs"))
    with dask.config.set({"pangeo-hpc.cluster.log-directory": str(tmp_path / "logs")}):
        yield
    left = wait_queue_empty()
    if left:
        subprocess.run(["scancel", "-n", "dask-worker"], check=False)
        pytest.fail(f"jobs left in the queue: {left}")


def test_workers_get_the_environment_and_scale():
    with running_cluster("slurm", jobs=1, timeout=120, **SMALL) as (cluster, client):
        env = client.run(
            lambda: {
                k: os.environ.get(k)
                for k in (
                    "HDF5_USE_FILE_LOCKING",
                    "OMP_NUM_THREADS",
                    "OPENBLAS_NUM_THREADS",
                    "SLURM_JOB_ID",
                )
            }
        )
        (worker_env,) = env.values()
        assert worker_env["HDF5_USE_FILE_LOCKING"] == "FALSE"
        assert worker_env["OMP_NUM_THREADS"] == "1" and worker_env["OPENBLAS_NUM_THREADS"] == "1"
        assert worker_env["SLURM_JOB_ID"]  # really inside a Slurm job
        assert set(client.run(lambda: sys.executable).values()) == {sys.executable}
        cluster.scale(jobs=2)
        client.wait_for_workers(2, timeout=120)
        assert len(queue()) == 2
        cluster.scale(jobs=1)
        deadline = time.monotonic() + 60
        while len(client.scheduler_info()["workers"]) > 1 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(client.scheduler_info()["workers"]) == 1
    assert wait_queue_empty() == []


def test_oversubscribed_one_core_jobs_run_at_once_on_the_node():
    # 4 one-core jobs on the 2-CPU node: they share cores because they ask for it
    # (--oversubscribe; the partition has OverSubscribe=YES, ci/slurm/start.sh)
    shared = {**SMALL, "processes": 1, "job_extra_directives": ["--oversubscribe"]}
    with running_cluster("slurm", jobs=4, timeout=120, **shared) as (cluster, client):
        assert "#SBATCH --oversubscribe" in cluster.job_script()
        jobs = queue()
        assert len(jobs) == 4 and all(j.endswith(" RUNNING") for j in jobs), jobs
        assert len(client.nthreads()) == 4
        assert client.submit(sum, [1, 2, 3]).result() == 6
    assert wait_queue_empty() == []


def test_an_exception_inside_cancels_the_jobs():
    with pytest.raises(ZeroDivisionError):
        with running_cluster("slurm", jobs=2, timeout=120, **SMALL) as (_, client):
            assert len(queue()) == 2
            client.submit(lambda: 1 / 0).result()
    assert wait_queue_empty() == []


def test_workers_that_never_connect_are_explained_and_cancelled():
    never = {**SMALL, "job_script_prologue": ["echo 'stuck before the worker starts'", "sleep 600"]}
    with pytest.raises(ClusterError) as info:
        with running_cluster("slurm", jobs=1, timeout=10, **never):
            pass
    message = str(info.value)
    assert "0 of 1 Dask workers connected within 10 s" in message
    assert "RUNNING" in message  # the job ran but its worker never came
    assert "stuck before the worker starts" in message  # the log tail
    assert "usual causes" in message and "interface=" in message
    assert wait_queue_empty() == []


def test_a_request_slurm_refuses_fails_fast_without_jobs():
    t = time.monotonic()
    with pytest.raises(ClusterError, match="refuses the worker job .*lower memory="):
        with running_cluster("slurm", jobs=1, timeout=120, **{**SMALL, "memory": "100TB"}):
            pass
    assert time.monotonic() - t < 60 and queue() == []


@pytest.mark.slow
def test_recipe_runs_end_to_end_on_slurm(demo_tree, tmp_path):
    out = tmp_path / "out"
    p = start_cli(
        "era5-sst-mean",
        "--data",
        str(demo_tree),
        "--start",
        "2001-01",
        "--end",
        "2002-12",
        *ON_SLURM,
        "--out",
        str(out),
        cwd=tmp_path,
    )
    _, stderr = p.communicate(timeout=600)
    assert p.returncode == 0, stderr
    assert "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cluster"]["kind"] == "slurm" and summary["cluster"]["workers"] == 2
    # the same numbers as on a local cluster
    local = tmp_path / "local"
    p = start_cli(
        "era5-sst-mean",
        "--data",
        str(demo_tree),
        "--start",
        "2001-01",
        "--end",
        "2002-12",
        "--workers",
        "1",
        "--out",
        str(local),
        cwd=tmp_path,
    )
    assert p.communicate(timeout=600) and p.returncode == 0
    assert json.loads((local / "summary.json").read_text())["answer"] == summary["answer"]
    assert wait_queue_empty() == []


@pytest.mark.slow
def test_ctrl_c_in_the_cli_cancels_the_jobs(demo_tree, tmp_path):
    p = start_cli(
        "era5-sst-trend",
        "--data",
        str(demo_tree),
        "--start",
        "2000-01",
        "--end",
        "2009-12",
        *ON_SLURM,
        "--out",
        str(tmp_path / "out"),
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 120
    while len(queue()) < 2 and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.2)
    assert len(queue()) == 2, p.stderr.read() if p.poll() is not None else "jobs never queued"
    p.send_signal(signal.SIGINT)  # while the workers start or compute
    _, stderr = p.communicate(timeout=120)
    assert p.returncode == 130, stderr
    assert "interrupted" in stderr
    assert wait_queue_empty() == []
    assert not (tmp_path / "out").exists()


def test_jupyterlab_as_a_batch_job_with_token_and_dashboard_proxy(tmp_path, monkeypatch):
    import urllib.error
    import urllib.request

    from distributed import LocalCluster

    from pangeo_hpc.lab.jupyter import instructions, submit_lab

    monkeypatch.chdir(tmp_path)
    job = submit_lab(walltime="00:10:00", memory="2G", notebook_dir=str(tmp_path), timeout=120)
    try:
        assert queue("pangeo-lab")
        with urllib.request.urlopen(f"{job.url}/api/status?token={job.token}") as r:
            assert r.status == 200
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(f"{job.url}/api/contents")
        assert denied.value.code == 403  # no token, no entry
        # the dashboard of a cluster on that node, through jupyter-server-proxy
        with LocalCluster(n_workers=1, processes=False, dashboard_address="127.0.0.1:0") as lc:
            port = lc.dashboard_link.split(":")[-1].split("/")[0]
            with urllib.request.urlopen(f"{job.url}/proxy/{port}/status?token={job.token}") as r:
                assert r.status == 200 and b"Dask" in r.read()
        text = instructions(job, login="hpc.example.org", user="ana")
        assert f"-L 8888:127.0.0.1:{job.port}" in text and f"token={job.token}" in text
    finally:
        subprocess.run(["scancel", job.job_id], check=False)
    assert wait_queue_empty("pangeo-lab") == []


def test_adaptive_jobs_stay_within_bounds():
    import dask.array as da

    with running_cluster("slurm", adapt=(1, 2), timeout=120, **SMALL) as (_cluster, client):
        assert 1 <= len(queue()) <= 2
        x = da.random.random((4000, 4000), chunks=(500, 500))
        seen = set()
        future = client.compute((x @ x.T).sum())
        while not future.done():
            seen.add(len(queue()))
            time.sleep(0.2)
        assert future.result() > 0 and max(seen) <= 2
    assert wait_queue_empty() == []
