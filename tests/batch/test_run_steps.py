"""A recipe run step by step, as a notebook calls it (open_inputs, compute, write_outputs),
against run_recipe; and its progress lines: log records in the library, printed by the CLI."""

from __future__ import annotations

import json
import logging

import dask
import pytest
import xarray as xr

from pangeo_hpc import run as cli
from pangeo_hpc.batch import compute, open_inputs, run_recipe, write_outputs
from pangeo_hpc.batch.chains.recipe_yaml import load
from pangeo_hpc.clusters import running_cluster
from tests.support.lazy import raise_if_dask_computes

PERIOD = {"start": "2000-01", "end": "2000-06"}


def test_open_inputs_opens_and_builds_lazily(demo_tree):
    with raise_if_dask_computes():
        inputs = open_inputs("era5-sst-mean", data=demo_tree, **PERIOD)
    assert inputs.spec.name == "era5-sst-mean" and inputs.root == demo_tree
    assert inputs.period == ("2000-01-01", "2000-06-30")
    assert len(inputs.dataset.encoding["source_files"]) == 6
    assert all(dask.is_dask_collection(v) for v in inputs.lazy.data_vars.values())


class _Records(logging.Handler):
    """The log records of the ``pangeo_hpc`` logger at INFO and above, while attached.

    Not pytest's caplog: its handlers sit on the root logger, which LocalCluster's
    ``silence_logs`` turns down to WARNING while a cluster runs."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.slow
def test_the_steps_one_by_one_write_what_run_recipe_writes(demo_tree, tmp_path, capsys):
    logger, seen = logging.getLogger("pangeo_hpc"), _Records()
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(seen)
    try:
        with dask.config.set({"pangeo-hpc.cluster.in-process-bytes": 0}):  # a worker process
            whole = run_recipe(
                load("era5-sst-mean"), data=demo_tree, workers=1, out=tmp_path / "whole", **PERIOD
            )
    finally:
        logger.removeHandler(seen)
        logger.setLevel(level)
    # a library: no print, the cluster line is a log record
    assert capsys.readouterr().out == ""
    cluster_lines = [r for r in seen.records if r.getMessage().startswith("cluster: local, 1 ")]
    assert [r.name for r in cluster_lines] == ["pangeo_hpc.batch.pipeline.execute"]

    with running_cluster("local", workers=1) as (_, client):
        inputs = open_inputs("era5-sst-mean", data=demo_tree, **PERIOD)
        computed = compute(inputs, client)
    steps = write_outputs(inputs, computed, out=tmp_path / "steps")

    a, b = whole.summary, steps.summary
    assert a.keys() == b.keys() and a["timings_s"].keys() == b["timings_s"].keys()
    for key in ("recipe", "steps", "answer", "inputs", "warmup", "outputs"):
        assert a[key] == b[key], key
    assert a["cluster"] == {
        "kind": "local",
        "profile": None,
        "workers": 1,
        "jobs": None,
        "in_process": None,
    }
    assert b["cluster"] == a["cluster"]
    assert a["timings_s"]["cluster_start"] > 0 and b["timings_s"]["cluster_start"] is None
    assert b["timings_s"]["total"] >= b["timings_s"]["compute"] + b["timings_s"]["write"]
    written = json.loads((tmp_path / "steps" / "summary.json").read_text())
    assert written["answer"] == b["answer"] and written["timings_s"] == b["timings_s"]
    names = sorted(p.name for p in (tmp_path / "steps").iterdir())
    assert names == ["plot.png", "report.html", "result.nc", "summary.json"]
    with (
        xr.open_dataset(tmp_path / "whole" / "result.nc") as x,
        xr.open_dataset(tmp_path / "steps" / "result.nc") as y,
    ):
        xr.testing.assert_identical(x.drop_attrs(), y.drop_attrs())
        assert x.global_mean.attrs == y.global_mean.attrs


def test_the_cli_prints_the_library_lines_and_leaves_logging_as_it_was(demo_tree, tmp_path, capsys):
    logger = logging.getLogger("pangeo_hpc")
    before = (list(logger.handlers), logger.level)
    args = ["--data", str(demo_tree), "--start", "2000-01", "--end", "2000-02"]
    code = cli.main(
        ["era5-sst-mean", *args, "--workers", "1", "--warmup", "--no-progress", "--out",
         str(tmp_path / "out")]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("cluster: local, 1 workers, dashboard http"), out
    assert lines[1].startswith("warmed ") and lines[1].endswith("2 already loaded"), out
    states = [k for k, line in enumerate(lines) if line.startswith("states: ")]
    assert [lines[k] for k in states][-1].startswith("states: 2 of 2 files"), out
    assert lines[states[-1] + 1].startswith(
        "incremental: 0 of 2 files' states reused, 2 files read"
    ), out
    assert lines[states[-1] + 2] == "era5-sst-mean, 2000-01-01 to 2000-02-29:", out
    assert (list(logger.handlers), logger.level) == before


def test_a_local_cached_run_plans_its_reads_once(demo_tree, tmp_path, monkeypatch):
    """Deciding where to compute (this process's threads for a file or two to read) and
    computing use one plan of the run (its chains on the data, the cache looked at once),
    and summary.json's reads are that plan's: the files reused and read, and the stored
    bytes of those read."""
    from pangeo_hpc.batch.incremental import plan as incremental_plan
    from pangeo_hpc.batch.incremental.state_cache import StateCache

    spec, cache = load("era5-sst-mean"), StateCache(tmp_path / "cache")
    where = {"data": demo_tree, "start": "2000-01", "workers": 1, "cache": cache}
    run_recipe(spec, end="2000-03", out=tmp_path / "first", **where)
    planned = []
    plan = incremental_plan._plan
    monkeypatch.setattr(
        incremental_plan, "_plan", lambda *a, **kw: planned.append(a[1]) or plan(*a, **kw)
    )
    summary = run_recipe(spec, end="2000-04", out=tmp_path / "update", **where).summary
    assert summary["cluster"]["in_process"].startswith("1 file to read, ")
    assert summary["cluster"]["in_process"].endswith(", 3 cached: <= 1.0 GB")
    chains = {cut.chain_hash(spec.variables) for cut in planned}
    assert len(planned) == len(chains), "a chain planned twice in one run"
    reads = summary["reads"]
    assert (reads["files"], reads["files_reused"], reads["files_read"]) == (4, 3, 1)
    april = demo_tree / "2000" / "04" / "data" / "sea_surface_temperature.nc"
    assert reads["bytes_to_read"] == april.stat().st_size
    assert 0 < reads["bytes_read"] <= reads["bytes_to_read"]


@pytest.mark.slow
def test_a_run_with_little_to_read_starts_no_worker_processes(demo_tree, tmp_path):
    """A local run whose plan reads at most pangeo-hpc.cluster.in-process-bytes computes in
    the client's threads, cache or none; one that reads more starts its worker processes.
    Here the limit is set between the bytes of two and of three monthly files."""
    from pangeo_hpc.batch.incremental.state_cache import StateCache

    spec, cache = load("era5-sst-trend"), StateCache(tmp_path / "cache")
    logger, seen = logging.getLogger("pangeo_hpc"), _Records()
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(seen)
    month = sorted(demo_tree.glob("2001/0[1-6]/data/*.nc"))
    sizes = sorted(p.stat().st_size for p in month)
    limit = sum(sizes[-2:]) + sizes[0] // 2  # any two months, never three

    def run(end, out, **kw):
        kw.setdefault("cache", cache)
        seen.records.clear()
        with dask.config.set({"pangeo-hpc.cluster.in-process-bytes": limit}):
            done = run_recipe(spec, data=demo_tree, start="2000-01", end=end, workers=2,
                              out=tmp_path / out, **kw)  # fmt: skip
        lines = [r.getMessage() for r in seen.records if r.getMessage().startswith("cluster: ")]
        return done.summary, lines

    try:
        first, lines = run("2000-02", "first", cache=StateCache(tmp_path / "other"))
        assert first["cluster"]["in_process"].startswith("2 files to read, ")  # none cached
        full, lines = run("2000-12", "full")
        assert full["cluster"]["in_process"] is None and full["reads"]["files_read"] == 12
        assert full["cluster"]["workers"] == 2
        assert lines[0].startswith("cluster: local, 2 workers, dashboard http"), lines
        assert lines[0].endswith(f", 0 cached: more than {limit / 1e6:.1f} MB)"), lines
        update, lines = run("2001-01", "update")
        assert update["reads"]["files_read"] == 1
        assert update["cluster"]["in_process"].endswith(
            ", 12 cached: <= " + f"{limit / 1e6:.1f} MB"
        )
        assert update["cluster"]["workers"] == 1  # one worker of this process, two threads
        assert lines == [
            f"cluster: none started ({update['cluster']['in_process']}), computed in this "
            "process's threads"
        ]
        two, _ = run("2001-03", "two")  # 2001-02 and 2001-03 new
        assert two["cluster"]["in_process"].startswith("2 files to read, ")
        three, _ = run("2001-06", "three")  # 2001-04..06 new: worker processes
        assert three["cluster"]["in_process"] is None and three["reads"]["files_read"] == 3
        whole, _ = run("2001-01", "whole", cache=False)  # 13 files: worker processes
        assert whole["reads"]["incremental"] is False and whole["cluster"]["in_process"] is None
    finally:
        logger.removeHandler(seen)
        logger.setLevel(level)
    with (
        xr.open_dataset(tmp_path / "update" / "result.nc") as got,
        xr.open_dataset(tmp_path / "whole" / "result.nc") as want,
    ):
        for name in want.data_vars:
            xr.testing.assert_allclose(got[name], want[name], rtol=1e-6)
