"""A recipe over several datasets on real Slurm (one node on this machine, started by
ci/slurm/start.sh): one cluster of batch jobs shared by the datasets' runs gives the local
run's answer and leaves no job behind; a budget below the summed plan (with the jobs'
start measured on the site) is refused before any job is submitted."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from tests.planning.test_multi_plan import calibration, recipe_doc
from tests.support.batch_systems import queue, wait_queue_empty
from tests.support.multi_data import write_pair
from tests.support.paths import ROOT

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("slurm")]

ON_SLURM = ("--cluster", "slurm", "--jobs", "1", "--cores", "1", "--memory", "2GB")


@pytest.fixture(autouse=True)
def private_logs(tmp_path, monkeypatch):
    """Job logs in the test's folder; no job of a failed test leaks into the next."""
    monkeypatch.setenv("DASK_PANGEO_HPC__CLUSTER__LOG_DIRECTORY", str(tmp_path / "logs"))
    yield
    left = wait_queue_empty()
    if left:
        subprocess.run(["scancel", "-n", "dask-worker"], check=False)
        pytest.fail(f"jobs left in the queue: {left}")


@pytest.fixture
def recipe_file(tmp_path):
    path = tmp_path / "model-vs-obs.yaml"
    path.write_text(yaml.safe_dump(recipe_doc(write_pair(tmp_path / "pair"))))
    return path


def _run(tmp_path, recipe, out, *args, calibration=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env["DASK_PANGEO_HPC__CACHE__FOLDER"] = str(tmp_path / "states")
    if calibration is not None:
        env["DASK_PANGEO_HPC__PLAN__CALIBRATION"] = str(calibration)
    command = [sys.executable, "-m", "pangeo_hpc.run", str(recipe), "--out", str(out),
               "--no-progress", *args]  # fmt: skip
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip


@pytest.mark.slow
def test_the_datasets_share_one_slurm_cluster(recipe_file, tmp_path):
    r = _run(tmp_path, recipe_file, tmp_path / "slurm", *ON_SLURM, "--no-cache")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    # one job for both datasets: one job's log, not one per dataset
    jobs = {p.stem for p in (tmp_path / "logs").rglob("dask-worker-*.err")}
    assert len(jobs) == 1, jobs
    summary = json.loads((tmp_path / "slurm" / "summary.json").read_text())
    assert summary["cluster"]["kind"] == "slurm" and summary["cluster"]["jobs"] == 1
    local = _run(tmp_path, recipe_file, tmp_path / "local", "--workers", "1", "--no-cache")
    assert local.returncode == 0, local.stderr
    assert (
        json.loads((tmp_path / "local" / "summary.json").read_text())["answer"]
        == (summary["answer"])
    )
    assert wait_queue_empty() == []


def test_a_budget_below_the_summed_plan_is_refused_before_any_job(recipe_file, tmp_path):
    cal = calibration(tmp_path / "cal.json", starts=True)
    r = _run(tmp_path, recipe_file, tmp_path / "out", *ON_SLURM, "--budget", "20s",
             calibration=cal)  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: predicted cost ") and r.stderr.count("\n") == 1
    assert "node-hours on 1 job (" in r.stderr and "exceeds --budget '20s'" in r.stderr
    assert queue() == [] and not (tmp_path / "out").exists()
    assert not (tmp_path / "states").exists() or not any((tmp_path / "states").rglob("*"))
