"""`plan --data`: the recipe's own files, those whose partial states are cached left out.

A real small demo tree (seven months of daily SST) and real runs of the command line fill a
state cache; plans are then made of periods that it covers whole, in part or not at all,
and checked against the files' sizes on disk and against what a run then reads.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import dask
import pytest

from pangeo_hpc import run
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.demo import DemoSpec, generate
from pangeo_hpc.errors import InputError
from pangeo_hpc.planning.calibration import Calibration, RecipeFit
from pangeo_hpc.planning.plan import plan
from tests.support.lazy import raise_if_dask_computes

#: the run that fills the cache: six months; the tree has a seventh
RUN = ("2000-01", "2000-06")
#: uncompressed bytes of one day of the 2-degree SST (float32, 91 x 180)
DAY = 91 * 180 * 4
#: days of each month of 2000
DAYS = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31}
#: a recipe that cannot run incrementally: a percentile needs every time step at once
P95 = """\
name: sst-p95
dataset:
  variable: sea_surface_temperature
  start: "2000-01"
  end: "2000-06"
steps:
  - percentile: {q: 95}
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seven months of 2-degree daily SST, 2000-01..2000-07 (read-only)."""
    root = tmp_path_factory.mktemp("plan-cache-tree")
    spec = DemoSpec(resolution=2.0, frequency="daily", start="2000-01", end="2000-07", seed=7)
    generate(root, spec, workers=1)
    return root


def _file(tree: Path, month: int) -> Path:
    return tree / "2000" / f"{month:02d}" / "data" / "sea_surface_temperature.nc"


def _stored(tree: Path, months) -> int:
    return sum(_file(tree, m).stat().st_size for m in months)


@pytest.fixture(scope="module")
def calibration(tmp_path_factory: pytest.TempPathFactory) -> Path:
    fit = RecipeFit(100e6, 5, 1.0, 3.0, task_cost=0.002, warmup=2.0)  # ratio: the files'
    cal = Calibration(
        host="test",
        cores=2,
        created="2026-11-23T00:00:00+00:00",
        task_overhead=0.001,
        storage={"local": 5e8},
        recipes={"era5-sst-mean": fit, "sst-p95": fit},
    )
    path = tmp_path_factory.mktemp("plan-cache-cal") / "calibration.json"
    path.write_text(json.dumps(cal.to_json()))
    return path


def _point_at(folder: Path, monkeypatch: pytest.MonkeyPatch):
    """This test's state cache, for this process and the processes it starts (a block),
    holding states only (no record of where results are: result_copies.py)."""
    monkeypatch.setenv("DASK_PANGEO_HPC__CACHE__FOLDER", str(folder))
    monkeypatch.setenv("DASK_PANGEO_HPC__CACHE__COPY_RESULTS", "false")
    return dask.config.set(
        {"pangeo-hpc.cache.folder": str(folder), "pangeo-hpc.cache.copy-results": False}
    )


def _run(tree: Path, out: Path, start: str, end: str) -> dict:
    """A real run of era5-sst-mean from the command line: its summary's ``reads``."""
    code = run.main(
        ["era5-sst-mean", "--data", str(tree), "--start", start, "--end", end,
         "--workers", "1", "--no-progress", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    return json.loads((out / "summary.json").read_text())["reads"]


@pytest.fixture(scope="module")
def after_run(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state cache after one run over :data:`RUN` (read-only: copy it to change it)."""
    base = tmp_path_factory.mktemp("plan-cache-run")
    folder = base / "states"
    with pytest.MonkeyPatch.context() as mp, _point_at(folder, mp):
        reads = _run(tree, base / "out", *RUN)
    assert reads["incremental"] and reads["files_read"] == 6
    return folder


def _copy(cache: Path, tmp_path: Path) -> Path:
    into = tmp_path / "states"
    shutil.copytree(cache, into)  # modes kept: 0700 folder, 0600 entries
    return into


def _plan(tree, calibration, **kw):
    return plan("era5-sst-mean", data=tree, calibration=calibration, nodes=[1], **kw)


def test_before_any_run_nothing_is_cached_and_nothing_is_created(tree, calibration, tmp_path):
    folder = tmp_path / "states"
    with raise_if_dask_computes():
        p = _plan(tree, calibration, start=RUN[0], end=RUN[1], cache=StateCache(folder))
    r = p.reads
    assert (r.files, r.files_cached, r.files_to_read, r.incremental) == (6, 0, 6, True)
    assert r.period == ("2000-01-01", "2000-06-30")
    days = sum(DAYS[m] for m in range(1, 7))
    assert p.model.size == r.size == r.size_to_read == days * DAY
    assert r.stored == r.stored_to_read == _stored(tree, range(1, 7))
    assert p.model.ratio == pytest.approx(days * DAY / _stored(tree, range(1, 7)))
    assert "inputs: 0 of 6 files cached" in p.text()
    assert f"6 files, {_stored(tree, range(1, 7)) / 1e6:,.1f} MB to read" in p.text()
    assert not folder.exists()  # a plan only looks


def test_after_a_run_of_the_period_every_file_is_cached(tree, calibration, after_run):
    before = {e.name: e.stat().st_mtime_ns for e in after_run.iterdir()}
    p = _plan(tree, calibration, start=RUN[0], end=RUN[1], cache=StateCache(after_run))
    r = p.reads
    # six pieces, each in its own entries and in the roll-ups: six, not twelve
    assert (r.files, r.files_cached, r.files_to_read) == (6, 6, 0)
    assert r.size_to_read == 0 and r.stored_to_read == 0 and p.model.size == 0
    row = p.rows[0]
    assert row["bottleneck"] == "none" and row["tasks"] == 0
    assert row["wall_s"] == pytest.approx(p.model.fixed)  # the fixed cost alone
    assert "6 of 6 files cached" in p.text() and "0 files, 0.0 MB to read" in p.text()
    # nothing read, nothing marked used (eviction order unchanged)
    assert {e.name: e.stat().st_mtime_ns for e in after_run.iterdir()} == before


def test_one_more_month_is_one_file_to_read_as_the_run_then_reads(
    tree, calibration, after_run, tmp_path, monkeypatch, capsys
):
    folder = _copy(after_run, tmp_path)
    with _point_at(folder, monkeypatch):
        code = run.main(
            ["plan", "era5-sst-mean", "--data", str(tree), "--start", "2000-01", "--end",
             "2000-07", "--calibration", str(calibration), "--nodes", "1", "--no-plot"]
        )  # fmt: skip
        out = capsys.readouterr().out
        assert code == 0, out
        july = _stored(tree, [7])
        line = f"inputs: 6 of 7 files cached (pangeo-hpc.cache.folder '{folder}'): 1 file, "
        assert line + f"{july / 1e6:,.1f} MB to read" in out, out
        assert "plan for era5-sst-mean on 2000-01-01..2000-07-31" in out
        assert "1 of 7 files to read)" in out
        p = _plan(tree, calibration, start="2000-01", end="2000-07")
        assert p.reads.stored_to_read == july and p.model.size == DAYS[7] * DAY
        reads = _run(tree, tmp_path / "out", "2000-01", "2000-07")
    assert (reads["files_read"], reads["files_reused"]) == (1, 6)  # as planned


def test_a_period_inside_the_run_is_cached_from_its_own_entries(tree, calibration, after_run):
    p = _plan(tree, calibration, start="2000-03", end="2000-04", cache=StateCache(after_run))
    r = p.reads
    assert (r.files, r.files_cached, r.files_to_read) == (2, 2, 0)
    assert r.size == (DAYS[3] + DAYS[4]) * DAY and r.stored == _stored(tree, [3, 4])


def _remove(folder: Path, keep) -> None:
    for entry in StateCache(folder).entries():
        if not keep(entry.meta):
            os.remove(entry.path)


def test_the_roll_up_alone_covers_its_pieces_and_only_for_periods_holding_them(
    tree, calibration, after_run, tmp_path
):
    folder = _copy(after_run, tmp_path)
    _remove(folder, keep=lambda meta: meta["result"].endswith("(all files merged)"))
    assert len(StateCache(folder).entries()) == 3  # one roll-up per chain
    cache = StateCache(folder)
    r = _plan(tree, calibration, start=RUN[0], end=RUN[1], cache=cache).reads
    assert (r.files_cached, r.files_to_read) == (6, 0)
    r = _plan(tree, calibration, start="2000-01", end="2000-07", cache=cache).reads
    assert (r.files_cached, r.files_to_read) == (6, 1)
    # a period starting later: the roll-ups hold January, which this run has not: unused
    r = _plan(tree, calibration, start="2000-02", end="2000-06", cache=cache).reads
    assert (r.files, r.files_cached, r.files_to_read) == (5, 0, 5)
    assert r.stored_to_read == _stored(tree, range(2, 7))


def test_a_file_is_cached_only_when_every_chain_has_its_state(
    tree, calibration, after_run, tmp_path
):
    folder = _copy(after_run, tmp_path)
    chains = {e.meta["chain"] for e in StateCache(folder).entries()}
    assert len(chains) == 3  # era5-sst-mean: three results, three chains
    lost = sorted(chains)[0]
    _remove(folder, keep=lambda meta: not meta["result"].endswith("(all files merged)"))
    march = str(_file(tree, 3))
    _remove(folder, keep=lambda meta: not (meta["chain"] == lost and meta["files"] == [march]))
    r = _plan(tree, calibration, start=RUN[0], end=RUN[1], cache=StateCache(folder)).reads
    assert (r.files_cached, r.files_to_read) == (5, 1)
    assert r.stored_to_read == _stored(tree, [3])


def test_a_recipe_that_cannot_run_incrementally_says_why_and_plans_every_file(
    tree, calibration, after_run, tmp_path, monkeypatch, capsys
):
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / "sst-p95.yaml").write_text(P95)
    with dask.config.set({"pangeo-hpc.recipes.path": [str(recipes)]}):
        p = plan("sst-p95", data=tree, calibration=calibration, cache=StateCache(after_run))
        code = run.main(
            ["plan", "sst-p95", "--data", str(tree), "--calibration", str(calibration),
             "--no-plot"]
        )  # fmt: skip
    out = capsys.readouterr().out
    r = p.reads
    assert not r.incremental and "percentile" in r.why
    days = sum(DAYS[m] for m in range(1, 7))
    assert (r.files, r.files_to_read) == (6, 6) and p.model.size == days * DAY
    assert r.stored_to_read == _stored(tree, range(1, 7))
    assert code == 0 and f"inputs: not incremental ({r.why}): all 6 files, " in out, out


def test_no_cache_plans_every_file(tree, calibration, after_run, monkeypatch, capsys):
    args = ["plan", "era5-sst-mean", "--data", str(tree), "--start", RUN[0], "--end", RUN[1],
            "--calibration", str(calibration), "--no-plot"]  # fmt: skip
    with _point_at(after_run, monkeypatch):
        assert run.main(args) == 0
        assert "6 of 6 files cached" in capsys.readouterr().out
        assert run.main([*args, "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "inputs: not incremental (caching is off (--no-cache" in out, out
    assert f"all 6 files, {_stored(tree, range(1, 7)) / 1e6:,.1f} MB to read" in out
    p = _plan(tree, calibration, start=RUN[0], end=RUN[1], cache=False)
    assert p.model.size == sum(DAYS[m] for m in range(1, 7)) * DAY


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "one of the arguments --size --data is required"),
        (["--size", "1GB", "--data", "x"], "not allowed with argument"),
        (["--size", "1GB", "--start", "2000-01"], "give --data"),
        (["--size", "1GB", "--no-cache"], "give --data"),
        (["--size", "0"], "--size '0' must be at least one byte"),  # as before
    ],
)
def test_cli_plan_size_or_data(args, message, calibration, capsys):
    code = run.main(["plan", "era5-sst-mean", "--calibration", str(calibration), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err


def test_the_library_wants_a_size_or_data_not_both(tree, calibration):
    with pytest.raises(InputError, match=r"needs size= .* or data="):
        plan("era5-sst-mean", calibration=calibration)
    with pytest.raises(InputError, match="both given"):
        plan("era5-sst-mean", "1GB", data=tree, calibration=calibration)
    with pytest.raises(InputError, match="give data= too"):
        plan("era5-sst-mean", "1GB", cache=False, calibration=calibration)
