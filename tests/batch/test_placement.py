"""Where a local run computes (its own threads or worker processes, from the bytes its plan
reads), that both give the same answer, and that the command line and local workers end
without Python's teardown (issue 29: small questions against CDO)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import dask
import pytest
import xarray as xr

from pangeo_hpc.batch import run_recipe
from pangeo_hpc.batch.chains.recipe_yaml import load
from pangeo_hpc.batch.incremental.read_plan import ReadPlan
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.batch.pipeline.placement import place
from pangeo_hpc.batch.pipeline.steps import open_inputs
from tests.support.paths import ROOT

KEY = "pangeo-hpc.cluster.in-process-bytes"
PERIOD = {"start": "2000-01", "end": "2000-03"}


def _plan(**kw) -> ReadPlan:
    files = (("a.nc",), ("b.nc",), ("c.nc",))
    return ReadPlan(files, {"a.nc": 300, "b.nc": 200, "c.nc": 100}, **kw)


def test_the_bytes_to_read_decide_against_the_configured_limit():
    whole = ReadPlan(_plan().pieces, _plan().sizes, why="caching is off")
    assert place(whole, limit=600) == place(whole, limit=600)
    here = place(whole, limit=600)
    assert here.in_process and here.why == "3 files to read, 0.0 MB: <= 0.0 MB"
    away = place(whole, limit=599)
    assert not away.in_process and away.why.endswith("more than 0.0 MB")
    # cached pieces are not read: only the rest counts
    update = _plan(reused=frozenset({0, 1}))
    assert place(update, limit=100).in_process
    assert place(update, limit=100).why.startswith("1 file to read, 0.0 MB, 2 cached")
    assert not place(_plan(reused=frozenset({0})), limit=100).in_process
    # the limit comes from the configuration when not given
    with dask.config.set({KEY: 299}):
        assert place(update).in_process and not place(_plan(reused=frozenset({2}))).in_process
    with dask.config.set({KEY: 0}):  # 0: always worker processes, unless nothing is read
        assert not place(update).in_process
        assert place(_plan(reused=frozenset({0, 1, 2}))).in_process


def test_a_batch_cluster_or_unknown_sizes_keep_their_workers():
    assert not place(_plan(), kind="slurm", limit=1e12).in_process
    unknown = ReadPlan((("a.nc",), ("z.nc",)), {"a.nc": 1})
    got = place(unknown, limit=1e12)
    assert not got.in_process and got.why.endswith("sizes unknown")


@pytest.mark.parametrize("cached", [True, False], ids=["fresh cache", "no cache"])
@pytest.mark.parametrize("relative", [True, False], ids=["relative data", "absolute data"])
def test_a_first_run_knows_the_sizes_of_what_it_reads(
    demo_tree, tmp_path, monkeypatch, cached, relative
):
    """``make demo``'s runs (``--data data/era5-demo``, an empty state cache, issue 29): the
    plan holds the stored size of every file to read, as the catalog's scan found it, so
    a small first run computes in threads (it said "sizes unknown" and started workers)."""
    monkeypatch.chdir(demo_tree.parent)
    data = demo_tree.name if relative else str(demo_tree)
    inputs = open_inputs(load("era5-sst-mean"), data=data, **PERIOD)
    plan = inputs.read_plan(StateCache(tmp_path / "states") if cached else None)[1]
    files = {f for piece in plan.pieces for f in piece}
    assert len(files) == 3 and plan.incremental == cached and plan.to_read == {0, 1, 2}
    assert plan.sizes == {f: os.path.getsize(f) for f in files}
    got = place(plan, limit=1e9)
    assert got.in_process and "unknown" not in got.why


def test_a_run_imports_its_figure_in_the_background_once(demo_tree, tmp_path, monkeypatch):
    """matplotlib's import overlaps the computing (``write.figures.preload``, issue 29)."""
    calls: list[int] = []
    monkeypatch.setattr("pangeo_hpc.batch.pipeline.execute.preload", lambda: calls.append(1))
    where = {"data": demo_tree, "cache": False, "start": "2000-01", "end": "2000-01"}
    run_recipe(load("era5-sst-mean"), out=tmp_path / "out", **where)
    assert calls == [1] and (tmp_path / "out" / "plot.png").stat().st_size > 0


def test_the_default_limit_is_documented_in_the_config():
    text = (ROOT / "pangeo_hpc" / "pangeo-hpc.yaml").read_text()
    assert "in-process-bytes: 1.0e+9" in text
    assert dask.config.get(KEY) == 1e9


@pytest.mark.slow
def test_threads_and_worker_processes_give_the_same_answer(demo_tree, tmp_path):
    """The same recipe without a cache, once in this process's threads (the plan's bytes
    are under the limit) and once in two worker processes (a limit of 0): the same bytes
    of result, and summary.json says where each ran and why."""
    spec = load("era5-sst-trend")
    where = {"data": demo_tree, "workers": 2, "cache": False, **PERIOD}
    here = run_recipe(spec, out=tmp_path / "here", **where).summary
    with dask.config.set({KEY: 0}):
        away = run_recipe(spec, out=tmp_path / "away", **where).summary
    assert here["cluster"]["in_process"].startswith("3 files to read, ")
    assert here["cluster"]["workers"] == 1  # one worker of this process, two threads
    assert away["cluster"]["in_process"] is None and away["cluster"]["workers"] == 2
    assert here["reads"]["bytes_read"] == away["reads"]["bytes_read"] > 0
    with (
        xr.open_dataset(tmp_path / "here" / "result.nc") as a,
        xr.open_dataset(tmp_path / "away" / "result.nc") as b,
    ):
        for name in b.data_vars:
            xr.testing.assert_identical(a[name], b[name])
    assert here["answer"] == away["answer"]


def _cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        [sys.executable, "-m", "pangeo_hpc.run", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
@pytest.mark.parametrize("limit", ["1e9", "0"], ids=["threads", "processes"])
def test_a_command_line_run_ends_cleanly(demo_tree, tmp_path, limit):
    """Threads or worker processes: the run's lines, exit 0, and nothing on stderr (no
    "Worker process still alive ... killing")."""
    env = {"DASK_PANGEO_HPC__CLUSTER__IN_PROCESS_BYTES": limit}
    r = _cli("era5-sst-mean", "--data", str(demo_tree), "--start", "2000-01", "--end",
             "2000-02", "--workers", "2", "--no-cache", "--no-progress",
             "--out", str(tmp_path / "out"), cwd=tmp_path, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "killing" not in r.stderr and "still alive" not in r.stderr, r.stderr
    assert r.stderr == "", r.stderr
    first = r.stdout.splitlines()[0]
    if limit == "0":
        assert first.startswith("cluster: local, 2 workers, dashboard http"), first
        assert first.endswith(": more than 0.0 MB)"), first
    else:
        assert first.startswith("cluster: none started (2 files to read, "), first
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["cluster"]["in_process"] is None) == (limit == "0")


_TEARDOWN = """
import atexit, sys
class Witness:
    def __del__(self):
        sys.stdout.write("torn down\\n")
        sys.stdout.flush()
witness = Witness()  # deleted only when the interpreter tears its modules down
atexit.register(lambda: print("exit handler ran", flush=True))
"""


def test_the_command_line_exits_after_its_handlers_without_the_teardown():
    code = _TEARDOWN + textwrap.dedent("""
        from pangeo_hpc.cli.main import exit_now
        print("answer", flush=False)
        exit_now(3)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    assert r.stdout.splitlines() == ["answer", "exit handler ran"], r.stdout


def test_a_thread_still_running_is_waited_for_as_usual():
    code = _TEARDOWN + textwrap.dedent("""
        import threading, time
        from pangeo_hpc.cli.main import exit_now
        done = threading.Event()
        threading.Thread(target=lambda: (time.sleep(0.2), print("thread done"), done.set())).start()
        exit_now(0)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["thread done", "exit handler ran", "torn down"], r.stdout


_WORKER = """
import atexit, multiprocessing
from pangeo_hpc.clusters.worker_exit import QuickExit

def child(closed):
    atexit.register(print, "earlier handler", flush=True)  # skipped after a close
    plugin = QuickExit()
    plugin.setup(worker=None)
    atexit.register(print, "later handler", flush=True)  # runs first, as always
    if closed:
        plugin.teardown(worker=None)

if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    for closed in (True, False):
        p = ctx.Process(target=child, args=(closed,))
        p.start()
        p.join(120)
        print("exit code", p.exitcode, flush=True)
    child(True)  # the client's own process: the plugin registers nothing
"""


def test_a_local_worker_process_that_closed_ends_at_the_plugins_handler(tmp_path):
    """The plugin's exit handler ends a worker process that closed normally, there and
    then: the handlers registered before it (and the teardown) do not run. One that did
    not close, and the client's own process, exit as usual."""
    script = tmp_path / "workers.py"
    script.write_text(_WORKER)
    r = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "later handler",
        "exit code 0",
        "later handler",
        "earlier handler",
        "exit code 0",
        "later handler",
        "earlier handler",
    ], r.stdout


def test_local_workers_get_the_quick_exit():
    from pangeo_hpc.clusters.start import running_cluster

    with running_cluster("local", workers=1) as (_, client):
        names = client.run(lambda dask_worker: sorted(dask_worker.plugins))
    assert all("pangeo-hpc-quick-exit" in v for v in names.values()), names
