"""The same run into the same folder with nothing changed is served from its previous
result, without the scientific stack (``batch/pipeline/reuse.py``, issue 29 §1); every
change of what the answer depends on is a miss whose answer equals a ``--no-cache`` run's,
and a result a user changed is neither served nor replaced.

Each test of a miss failed on a plausible wrong key (tried in reuse.py, all at 66f2f34's
parent): the input rewritten in place on an mtime-only stamp; the file added to the glob
on a key of the glob's text; the edited function on a key of its module's name only; the
changed option without the recipe's mapping in the key; the changed package sources
without run_code(); the edited result.nc without the check of the files' SHA-256."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from pangeo_hpc.batch.chains import code_identity
from tests.support.cli import run_cli
from tests.support.paths import ROOT

SST = "sea_surface_temperature"
#: what no served run may import
HEAVY = ("numpy", "xarray", "pandas", "scipy", "numba", "matplotlib", "distributed", "h5py")
MONTHS = ("01", "02", "03")


def _tree(demo_tree: Path, root: Path, months: tuple[str, ...] = MONTHS) -> Path:
    """A private copy of months of 2000 of the demo tree (tests here change files)."""
    for m in months:
        (root / "2000" / m / "data").mkdir(parents=True)
        shutil.copy2(demo_tree / "2000" / m / "data" / f"{SST}.nc", root / "2000" / m / "data")
    return root


def _recipe(folder: Path, dataset: str, steps: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "reuse-mean.yaml"
    path.write_text(
        f"name: reuse-mean\ndataset:\n  variable: {SST}\n{dataset}"
        f"steps:\n{steps}  - time_mean: {{}}\n  - area_mean: {{}}\n"
    )
    return path


_PERIOD = '  start: "2000-01"\n  end: "2000-03"\n'


def _run(recipe: Path, tree: Path, out: Path, *extra: str, env: dict[str, str] | None = None):
    args = [str(recipe), "--data", str(tree), "--out", str(out), "--workers", "1",
            "--no-progress", *extra]  # fmt: skip
    if env is None:
        return run_cli(*args, cwd=out.parent)
    return subprocess.run([sys.executable, "-m", "pangeo_hpc.run", *args], cwd=out.parent,
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip


def _answer(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())["answer"]


def _printed(stdout: str) -> list[str]:
    """The answer's lines (the recipe line, the table, the reads line)."""
    lines = stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("reuse-mean, "))
    return lines[first:]


def _fresh_after(recipe: Path, tree: Path, out: Path, tmp_path: Path, **kw) -> dict:
    """Run again into ``out``: not served, and the answer a ``--no-cache`` run gives."""
    again = _run(recipe, tree, out, **kw)
    assert again.returncode == 0, again.stderr
    assert "reused:" not in again.stdout, "served a result whose inputs changed"
    whole = tmp_path / "whole"
    ref = _run(recipe, tree, whole, "--no-cache", **kw)
    assert ref.returncode == 0, ref.stderr
    assert _answer(out) == _answer(whole)
    return _answer(out)


def test_the_same_run_again_is_served_without_the_scientific_stack(demo_tree, tmp_path):
    tree = _tree(demo_tree, tmp_path / "era5")
    recipe = _recipe(tmp_path / "r", _PERIOD)
    out = tmp_path / "out"
    first = _run(recipe, tree, out)
    assert first.returncode == 0, first.stderr
    written = {p.name: p.stat() for p in out.iterdir()}
    code = [sys.executable, "-X", "importtime", "-m", "pangeo_hpc.run", str(recipe), "--data",
            str(tree), "--out", str(out), "--workers", "1", "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    again = subprocess.run(code, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    created = json.loads((out / "summary.json").read_text())["created"]
    assert again.stdout.startswith(f"reused: the result of {created} in {out} ")
    assert _printed(again.stdout) == _printed(first.stdout)
    names = {
        line.split("|")[-1].strip().split(".")[0]
        for line in again.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "pangeo_hpc" in names, "-X importtime printed nothing: the check would be vacuous"
    assert not names & set(HEAVY), sorted(names & set(HEAVY))
    # nothing was written: the same files, untouched
    assert {p.name: p.stat() for p in out.iterdir()} == written
    # --no-cache computes it again
    whole = _run(recipe, tree, out, "--no-cache")
    assert whole.returncode == 0 and "reused:" not in whole.stdout, whole.stderr


def test_an_input_rewritten_in_place_with_its_mtime_put_back_is_not_served(demo_tree, tmp_path):
    tree = _tree(demo_tree, tmp_path / "era5")
    recipe = _recipe(tmp_path / "r", _PERIOD)
    out = tmp_path / "out"
    assert _run(recipe, tree, out).returncode == 0
    before = _answer(out)
    path = tree / "2000" / "02" / "data" / f"{SST}.nc"
    st = path.stat()
    with h5py.File(path, "r+") as f:  # in place: the same inode, new values
        f[SST][...] = f[SST][...] + 1.0
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_ino == st.st_ino
    assert _fresh_after(recipe, tree, out, tmp_path) != before


def test_a_file_added_to_a_files_glob_is_not_served(demo_tree, tmp_path):
    tree = _tree(demo_tree, tmp_path / "era5")
    flat = tmp_path / "flat"
    flat.mkdir()
    for m in MONTHS[:2]:
        shutil.copy2(tree / "2000" / m / "data" / f"{SST}.nc", flat / f"sst_{m}.nc")
    recipe = _recipe(tmp_path / "r", f'  files: "{flat}/sst_*.nc"\n')
    out = tmp_path / "out"
    assert _run(recipe, tree, out).returncode == 0
    before = _answer(out)
    shutil.copy2(tree / "2000" / "03" / "data" / f"{SST}.nc", flat / "sst_03.nc")
    assert _fresh_after(recipe, tree, out, tmp_path) != before


SHIFT_PY = '''\
def shift(da):
    """The data, warmer by a constant."""
    out = da + 1.0
    out.attrs = da.attrs
    return out
'''


def test_an_edited_user_function_is_not_served(demo_tree, tmp_path):
    tree = _tree(demo_tree, tmp_path / "era5")
    recipe = _recipe(tmp_path / "r", _PERIOD, "  - function: shifts:shift\n")
    (recipe.parent / "shifts.py").write_text(SHIFT_PY)
    out = tmp_path / "out"
    assert _run(recipe, tree, out).returncode == 0
    before = _answer(out)
    (recipe.parent / "shifts.py").write_text(SHIFT_PY.replace("+ 1.0", "+ 2.0"))
    assert _fresh_after(recipe, tree, out, tmp_path) != before


def test_a_changed_recipe_option_is_not_served(demo_tree, tmp_path):
    tree = _tree(demo_tree, tmp_path / "era5")
    recipe = _recipe(tmp_path / "r", _PERIOD, "  - select_months: [1, 2]\n")
    out = tmp_path / "out"
    assert _run(recipe, tree, out).returncode == 0
    before = _answer(out)
    _recipe(tmp_path / "r", _PERIOD, "  - select_months: [1, 3]\n")
    assert _fresh_after(recipe, tree, out, tmp_path) != before


def test_changed_recipe_sources_of_the_package_are_not_served(demo_tree, tmp_path):
    """The package as a copy whose ``recipes/means.py`` gets one comment more: the same
    answer, but other code, so not served."""
    tree = _tree(demo_tree, tmp_path / "era5")
    recipe = _recipe(tmp_path / "r", _PERIOD)
    copy = tmp_path / "code"
    shutil.copytree(ROOT / "pangeo_hpc", copy / "pangeo_hpc",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(copy)}
    out = tmp_path / "out"
    first = _run(recipe, tree, out, env=env)
    assert first.returncode == 0, first.stderr
    assert "reused:" in _run(recipe, tree, out, env=env).stdout  # the copy itself is served
    with (copy / "pangeo_hpc" / "recipes" / "means.py").open("a") as f:
        f.write("# changed\n")
    _fresh_after(recipe, tree, out, tmp_path, env=env)


@pytest.mark.parametrize("how", ["result.nc edited", "summary.json truncated"])
def test_a_result_the_user_changed_is_neither_served_nor_replaced(demo_tree, tmp_path, how):
    tree = _tree(demo_tree, tmp_path / "era5")
    recipe = _recipe(tmp_path / "r", _PERIOD)
    out = tmp_path / "out"
    assert _run(recipe, tree, out).returncode == 0
    name = how.split()[0]
    data = (out / name).read_bytes()
    changed = data + b"\0" if name == "result.nc" else data[: len(data) // 2]
    (out / name).write_bytes(changed)
    again = _run(recipe, tree, out)
    assert "reused:" not in again.stdout
    assert again.returncode == 2, again.stderr  # the write guard refuses, as always
    assert "nothing was changed" in again.stderr
    assert (out / name).read_bytes() == changed


#: each key and the libraries whose versions it holds: a served result (run_code), a
#: cached state (package_code)
KEYED = [("run_code", lib) for lib in (*code_identity._LIBRARIES, *code_identity._WRITERS)]
KEYED += [("package_code", lib) for lib in code_identity._LIBRARIES]


@pytest.mark.parametrize(("key", "library"), KEYED)
def test_an_upgraded_library_changes_the_key(key, library, monkeypatch):
    """A served result was made, and a state computed, with the libraries then installed:
    an upgrade of any of them (the writers, figures and report's for a result; those that
    decode and compute, cftime's calendars and regionmask's masks included, for a state)
    is a miss."""
    keyed = getattr(code_identity, key)
    keyed.cache_clear()  # once per process: each command line is one
    before = keyed()
    real = code_identity._version
    monkeypatch.setattr(
        code_identity, "_version", lambda dist: "99.0" if dist == library else real(dist)
    )
    keyed.cache_clear()
    try:
        assert keyed() != before
    finally:
        keyed.cache_clear()
