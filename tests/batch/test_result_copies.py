"""The same run into another folder is copied from the folder that holds its answer
(``batch/pipeline/result_copies.py``, issue 29 §1), never from one whose files changed,
never into a folder the run could not have written, and never half.

Tried against wrong copies (each test below failed on one): copying from a recorded folder
without checking it could be served there for the key (another question's answer copied);
keeping only the newest folder (a deleted one hides the older); skipping the check of the
copied files against the record (a file that differs after the copy served)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.batch.pipeline import result_copies
from pangeo_hpc.batch.pipeline.result_copies import COPIED, copy_earlier
from tests.batch.test_reuse import _PERIOD, HEAVY, _answer, _printed, _recipe, _run, _tree
from tests.support.cli import run_cli
from tests.support.paths import ROOT

#: what every result folder holds
FILES = ("result.nc", "plot.png", "report.html")


def _first(demo_tree: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """The private tree, the recipe, and its result in ``tmp_path / "a"``."""
    tree = _tree(demo_tree, tmp_path / "era5")
    recipe = _recipe(tmp_path / "r", _PERIOD)
    first = _run(recipe, tree, tmp_path / "a")
    assert first.returncode == 0, first.stderr
    return tree, recipe, tmp_path / "a"


def _copied_from(stdout: str) -> str | None:
    """The folder a run says it copied its result from, or ``None``."""
    line = stdout.splitlines()[0] if stdout else ""
    if not line.startswith("reused: ") or ", copied to " not in line:
        return None
    return line.split(" in ", 1)[1].split(", copied to ")[0]


def test_the_same_run_into_another_folder_is_copied_without_the_scientific_stack(
    demo_tree, tmp_path
):
    tree, recipe, a = _first(demo_tree, tmp_path)
    b = tmp_path / "b"
    code = [sys.executable, "-X", "importtime", "-m", "pangeo_hpc.run", str(recipe), "--data",
            str(tree), "--out", str(b), "--workers", "1", "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    copy = subprocess.run(code, env=env, capture_output=True, text=True, timeout=300)
    assert copy.returncode == 0, copy.stderr
    assert _copied_from(copy.stdout) == str(a)
    lines = _printed(copy.stdout)
    assert lines[:-3] == _printed(_run(recipe, tree, a).stdout)[:-3]  # its answer
    assert lines[-3:] == [f"plot: {b / 'plot.png'}", f"report: {b / 'report.html'} (open it in "
                          f"a browser)", f"data: {b / 'result.nc'}   summary: {b / 'summary.json'}"]  # fmt: skip
    names = {
        line.split("|")[-1].strip().split(".")[0]
        for line in copy.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "pangeo_hpc" in names, "-X importtime printed nothing: the check would be vacuous"
    # the state cache's entries are NumPy files: numpy is read, nothing heavier
    assert not names & (set(HEAVY) - {"numpy"}), sorted(names & set(HEAVY))
    for name in FILES:
        assert (b / name).read_bytes() == (a / name).read_bytes(), name
    summary = json.loads((b / "summary.json").read_text())
    source = json.loads((a / "summary.json").read_text())
    assert summary[COPIED]["from"] == str(a)
    assert {k: v for k, v in summary.items() if k != COPIED} == source
    # the copy is a result of its own: served where it is, replaced by a run that computes
    again = _run(recipe, tree, b)
    assert again.stdout.startswith(f"reused: the result of {source['created']} in {b} (")
    whole = _run(recipe, tree, b, "--no-cache")
    assert whole.returncode == 0 and "reused:" not in whole.stdout, whole.stderr
    assert COPIED not in json.loads((b / "summary.json").read_text())
    assert _answer(b) == _answer(a)


def test_a_changed_source_is_not_copied_and_stays_as_the_user_left_it(demo_tree, tmp_path):
    tree, recipe, a = _first(demo_tree, tmp_path)
    before = _answer(a)
    edited = (a / "plot.png").read_bytes() + b"\0"  # a user's own figure now
    (a / "plot.png").write_bytes(edited)
    b = tmp_path / "b"
    run = _run(recipe, tree, b)
    assert run.returncode == 0, run.stderr
    assert "reused:" not in run.stdout, "copied a result whose files changed"
    assert _answer(b) == before
    assert (b / "plot.png").read_bytes() != edited
    assert (a / "plot.png").read_bytes() == edited


def test_a_folder_since_holding_another_runs_result_is_not_copied(demo_tree, tmp_path):
    """The recorded folder was written again by the same recipe over another period: its
    files are intact, but they answer another question."""
    tree, recipe, a = _first(demo_tree, tmp_path)
    before = _answer(a)
    other = _run(recipe, tree, a, "--end", "2000-02")
    assert other.returncode == 0 and "reused:" not in other.stdout, other.stderr
    assert _answer(a) != before
    b = tmp_path / "b"
    run = _run(recipe, tree, b)
    assert run.returncode == 0 and "reused:" not in run.stdout, run.stderr
    assert _answer(b) == before


def test_a_deleted_source_falls_back_to_the_older_then_to_computing(demo_tree, tmp_path):
    tree, recipe, a = _first(demo_tree, tmp_path)
    b, c, d = (tmp_path / n for n in "bcd")
    assert _copied_from(_run(recipe, tree, b).stdout) == str(a)
    shutil.rmtree(b)  # the newest copy gone: the older one serves
    assert _copied_from(_run(recipe, tree, c).stdout) == str(a)
    shutil.rmtree(a)
    shutil.rmtree(c)
    run = _run(recipe, tree, d)
    assert run.returncode == 0 and "reused:" not in run.stdout, run.stderr
    # every entry damaged: a warning and a miss, never a crash
    for entry in StateCache().folder.glob("*.npz"):
        entry.write_bytes(entry.read_bytes()[:-7] + b"garbage")
    e = tmp_path / "e"
    run = _run(recipe, tree, e)
    assert run.returncode == 0 and "reused:" not in run.stdout, run.stderr
    assert _answer(e) == _answer(d)


def test_a_copy_into_a_users_folder_is_refused_as_a_run_would_be(demo_tree, tmp_path):
    tree, recipe, _ = _first(demo_tree, tmp_path)
    b = tmp_path / "b"
    b.mkdir()
    (b / "notes.txt").write_text("mine")
    run = _run(recipe, tree, b)
    assert run.returncode == 2
    assert "reused:" not in run.stdout
    (line,) = run.stderr.strip().splitlines()
    assert "notes.txt" in line and "nothing was changed" in line, line
    assert sorted(p.name for p in b.iterdir()) == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_copy_that_differs_from_its_record_is_never_in_place(demo_tree, tmp_path, monkeypatch):
    """A file that changes while it is copied: the copy is dropped whole, nothing seen."""
    tree, _, a = _first(demo_tree, tmp_path)
    key = json.loads((a / "summary.json").read_text())["run_key"]
    real = result_copies._copy_one

    def torn(src: Path, dst: Path) -> None:
        real(src, dst)
        if dst.name == "plot.png":
            with dst.open("ab") as f:
                f.write(b"\0")

    monkeypatch.setattr(result_copies, "_copy_one", torn)
    b = tmp_path / "b"
    # in this process, the test's own state cache (conftest.py), as the CLI's
    assert copy_earlier(key, b, inputs=[str(tree)], recipe="reuse-mean") is None
    assert not b.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    monkeypatch.setattr(result_copies, "_copy_one", real)  # the same call, intact
    source, summary = copy_earlier(key, b, inputs=[str(tree)], recipe="reuse-mean")
    assert source == a and summary[COPIED]["from"] == str(a)


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_source_another_user_owns_is_not_copied(demo_tree, tmp_path):
    tree, _, a = _first(demo_tree, tmp_path)
    key = json.loads((a / "summary.json").read_text())["run_key"]
    os.chown(a / "result.nc", 65534, 65534)  # nobody's now, its bytes and record unchanged
    b = tmp_path / "b"
    assert copy_earlier(key, b, inputs=[str(tree)], recipe="reuse-mean") is None
    assert not b.exists()
    os.chown(a / "result.nc", 0, 0)
    assert copy_earlier(key, b, inputs=[str(tree)], recipe="reuse-mean") is not None


@pytest.mark.parametrize("out", ["era5", "era5/2000/out"])
def test_a_copy_into_the_inputs_is_refused(demo_tree, tmp_path, out):
    tree, recipe, _ = _first(demo_tree, tmp_path)
    listed = sorted(p.relative_to(tree) for p in tree.rglob("*"))
    run = _run(recipe, tree, tmp_path / out)
    assert run.returncode == 2 and "reused:" not in run.stdout
    assert "outside the input data" in run.stderr
    assert sorted(p.relative_to(tree) for p in tree.rglob("*")) == listed


def test_a_zarr_result_is_copied_whole_and_opens(demo_tree, tmp_path):
    import xarray as xr

    tree = _tree(demo_tree, tmp_path / "era5")
    recipe = _recipe(tmp_path / "r", _PERIOD)
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run(recipe, tree, a, "--format", "zarr").returncode == 0
    run = _run(recipe, tree, b, "--format", "zarr")
    assert run.returncode == 0 and _copied_from(run.stdout) == str(a), run.stderr
    files = sorted(p.relative_to(a) for p in (a / "result.zarr").rglob("*"))
    assert sorted(p.relative_to(b) for p in (b / "result.zarr").rglob("*")) == files
    with xr.open_zarr(a / "result.zarr") as x, xr.open_zarr(b / "result.zarr") as y:
        xr.testing.assert_identical(x.load(), y.load())
    # the other format is another question: computed, not copied
    nc = _run(recipe, tree, tmp_path / "c")
    assert nc.returncode == 0 and "reused:" not in nc.stdout, nc.stderr


@pytest.mark.parametrize("dataset", ["oops", "[1, 2]"])
def test_a_recipe_with_a_bad_dataset_gets_its_one_line_not_a_traceback(tmp_path, dataset):
    """A recipe that cannot be keyed never reaches the copy (a dataset that is no mapping
    crashed read_from at 27897e4)."""
    (tmp_path / "bad.yaml").write_text(
        f"name: bad\ndataset: {dataset}\nsteps: [{{time_mean: {{}}}}]\n"
    )
    run = run_cli(str(tmp_path / "bad.yaml"), "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert "dataset" in line and "Traceback" not in run.stderr, line
    assert not (tmp_path / "o").exists()
