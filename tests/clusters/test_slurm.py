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

from pangeo_hpc.clusters.start import running_cluster
from pangeo_hpc.errors import ClusterError
from tests.support.batch_systems import queue, wait_queue_empty
from tests.support.cli import start_cli
from tests.support.paths import ROOT

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
                    "MALLOC_TRIM_THRESHOLD_",
                )
            }
        )
        (worker_env,) = env.values()
        assert worker_env["HDF5_USE_FILE_LOCKING"] == "FALSE"
        assert worker_env["OMP_NUM_THREADS"] == "1" and worker_env["OPENBLAS_NUM_THREADS"] == "1"
        assert worker_env["SLURM_JOB_ID"]  # really inside a Slurm job
        # glibc's adaptive mmap threshold, as in local workers (jobqueue.NO_MALLOC_TRIM):
        # distributed's nanny in the job would set 65536
        assert worker_env["MALLOC_TRIM_THRESHOLD_"] is None
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


# -- a plan you can hold to: the budget and the idle timeout (issue 29) ----------------------


def _budget_calibration(path, recipe: str, starts: bool = True) -> str:
    """A calibration of ``recipe`` that predicts a small run in seconds, with the jobs'
    queue and the workers' arrival on Slurm measured (``starts``) or not."""
    from pangeo_hpc.planning.calibration import Calibration, JobStarts, RecipeFit

    fit = RecipeFit(process_rate=1e9, tasks_per_chunk=5.0, fixed=0.5, ratio=2.5, spread=[0.9, 1.2])
    measured = {"slurm": JobStarts(queue=[0.1, 0.5], arrival=[1.0, 3.0])} if starts else {}
    cal = Calibration("here", 2, "2026-11-26T00:00:00+00:00", 0.001,
                      recipes={recipe: fit}, starts=measured)  # fmt: skip
    path.write_text(json.dumps(cal.to_json()))
    return str(path)


def _budget_run(tmp_path, recipe, data, out, *args: str, calibration: str, cache=None):
    """``python -m pangeo_hpc.run RECIPE --data DATA --out OUT ARGS`` to its end, with the
    calibration file ``calibration`` (and the state cache ``cache``)."""
    env = {**os.environ, "DASK_PANGEO_HPC__PLAN__CALIBRATION": calibration}
    if cache is not None:
        env["DASK_PANGEO_HPC__CACHE__FOLDER"] = str(cache)
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "pangeo_hpc.run", str(recipe), "--data", str(data),
               "--out", str(out), "--no-progress", *args]  # fmt: skip
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip


def test_a_budget_too_small_is_refused_before_any_job(demo_tree, tmp_path):
    cal = _budget_calibration(tmp_path / "cal.json", "era5-sst-mean")
    r = _budget_run(tmp_path, "era5-sst-mean", demo_tree, tmp_path / "out", "--start",
                    "2000-01", "--end", "2000-12", *ON_SLURM, "--budget", "2s",
                    calibration=cal)  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: predicted cost ") and r.stderr.count("\n") == 1
    assert "node-hours on 2 jobs" in r.stderr and "exceeds --budget '2s'" in r.stderr
    assert "ask for fewer jobs (--jobs), a shorter period (--start, --end)" in r.stderr
    assert queue() == [] and not (tmp_path / "out").exists()


def test_a_budget_without_the_sites_job_starts_says_calibrate_first(demo_tree, tmp_path):
    cal = _budget_calibration(tmp_path / "cal.json", "era5-sst-mean", starts=False)
    r = _budget_run(tmp_path, "era5-sst-mean", demo_tree, tmp_path / "out", *ON_SLURM,
                    "--budget", "1h", calibration=cal)  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: calibrate first: the job start on 'slurm' is not measured")
    assert "calibrate era5-sst-mean --cluster slurm`" in r.stderr
    assert queue() == []
    # without a budget the run goes on, and says so in one line
    r = _budget_run(tmp_path, "era5-sst-mean", demo_tree, tmp_path / "out", "--start",
                    "2000-01", "--end", "2000-03", *ON_SLURM, calibration=cal)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("plan: calibrate first: the job start on 'slurm' is not measured")


def test_calibrate_measures_the_jobs_queue_and_their_workers_arrival():
    from pangeo_hpc.planning.measure import job_starts

    with running_cluster("slurm", jobs=1, timeout=120, **SMALL) as (cluster, client):
        queued, arrived = job_starts(cluster, client, jobs=1, repeat=2)
        assert len(client.scheduler_info()["workers"]) == 1  # as it was
    assert len(queued) == len(arrived) == 2
    # a worker process starts Python and distributed before it connects: not instant
    assert all(0 <= q < 120 for q in queued) and all(0.1 < a < 120 for a in arrived), (
        queued,
        arrived,
    )


@pytest.mark.slow
def test_a_budget_spent_mid_run_cancels_the_jobs_keeps_the_states_and_resumes(demo_tree, tmp_path):
    """24 monthly files of 1.5 s each on one one-core job (36 s), a budget of 15
    node-seconds: the check passes (a second or two predicted), the watcher stops the run
    once the job has run 15 s; the job is gone, the states kept, and a run without the
    budget (local) reads only the files left."""
    from tests.batch.test_resume import N_FILES, _check_resumed, _files, _pieces, _recipe

    recipe = _recipe(tmp_path / "recipe", seconds=1.5)
    cal = _budget_calibration(tmp_path / "cal.json", "slow-mean")
    cache = tmp_path / "cache"
    one_job = ("--cluster", "slurm", "--jobs", "1", "--cores", "1", "--memory", "2GB")
    r = _budget_run(tmp_path, str(recipe), demo_tree, tmp_path / "stopped", *one_job,
                    "--budget", "15s", calibration=cal, cache=cache)  # fmt: skip
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("stopped: budget 15s spent (")
    assert "on 1 job" in r.stderr and "Traceback" not in r.stderr
    assert wait_queue_empty() == []
    assert not (tmp_path / "stopped").exists()
    saved, rollups = _pieces(cache)
    assert 0 < len(saved) < N_FILES and rollups == []

    from tests.batch.test_resume import PAUSE_VAR, _args, _env

    # at full speed: the pause is what made the run outlast its budget, not part of the answer
    again = subprocess.run(_args(recipe, demo_tree, tmp_path / "resumed", 2),
                           env={**_env(cache), PAUSE_VAR: "0"},
                           cwd=tmp_path, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert again.returncode == 0, again.stderr
    full = {"reads": {"bytes_read": sum(os.path.getsize(f) for f in _files(demo_tree))}}
    _check_resumed(tmp_path / "resumed", saved, _files(demo_tree), full)


@pytest.mark.slow
def test_an_idle_fixed_size_cluster_closes_and_its_job_ends():
    """idle_timeout on a fixed-size cluster: its scheduler closes once nothing has run for
    that long, its worker leaves and the job ends, with the client still open; closing
    the cluster then does not wait for the closed scheduler to answer (the connect
    timeout, here made 300 s: the test would take that long)."""
    with dask.config.set({"distributed.comm.timeouts.connect": "300s"}):
        started = running_cluster("slurm", jobs=1, timeout=120, idle_timeout=2, **SMALL)
        with started as (_, client):
            assert client.submit(sum, [1, 2]).result() == 3
            assert len(queue()) == 1
            assert wait_queue_empty(timeout=120) == []
            closing = time.monotonic()
        assert time.monotonic() - closing < 120, "closing waited for the closed scheduler"


def test_a_batch_clusters_load_slowdown_is_measured_on_its_own_jobs(demo_tree):
    """On the one-node Slurm the jobs share the host's cores: the slowdown with every core
    busy is measured on the cluster's own jobs (scaled to the host's cores, then back),
    not on a LocalCluster whose workers compute at another rate."""
    from distributed import get_task_stream

    from pangeo_hpc.batch.chains import chain, recipe_yaml
    from pangeo_hpc.io.era5 import open_era5
    from pangeo_hpc.planning.measure import host_cores, load_slowdown

    spec = recipe_yaml.load("era5-sst-mean")
    lazy = chain.build(spec, open_era5(spec.variable, "2000-01", "2000-06", source=demo_tree))
    shared = {**SMALL, "processes": 1, "job_extra_directives": ["--oversubscribe"]}
    with running_cluster("slurm", jobs=1, timeout=120, **shared) as (cluster, client):
        client.compute(lazy).result()
        with get_task_stream(client) as ts:
            slowdown = load_slowdown(client, lazy, host_cores(), repeat=1)
        assert slowdown >= 1
        # the busy runs ran on as many of the cluster's own workers as the host has cores
        assert len({t["worker"] for t in ts.data}) == host_cores()
        assert len(client.scheduler_info()["workers"]) == 1 and len(cluster.workers) == 1
