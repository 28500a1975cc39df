"""The package's layers (the docs' architecture page, generated from the contract): the
import-linter contract in pyproject.toml holds, fails on a wrong import, and no module
imports itself in a circle."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from tests.support.paths import ROOT

LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The package and pyproject.toml in a folder of their own, to be broken."""
    shutil.copytree(
        ROOT / "pangeo_hpc", tmp_path / "pangeo_hpc", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def test_the_contract_holds():
    r = _lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 kept, 0 broken" in r.stdout


@pytest.mark.parametrize(
    ("module", "line", "shown"),
    [
        # a recipe function reaching for the data path: recipes import no other layer
        (
            "recipes/means.py",
            "from pangeo_hpc.io import era5",
            "pangeo_hpc.recipes.means -> pangeo_hpc.io.era5",
        ),
        # a lazy import inside a function counts as much as one at the top
        (
            "io/catalog.py",
            "def _late():\n    from pangeo_hpc.batch.chains import chain",
            "pangeo_hpc.io.catalog -> pangeo_hpc.batch.chains.chain",
        ),
        # within batch: the recipe language knows nothing of the pipeline that runs it
        (
            "batch/chains/chain.py",
            "from pangeo_hpc.batch.pipeline import steps",
            "pangeo_hpc.batch.chains.chain -> pangeo_hpc.batch.pipeline.steps",
        ),
        # the inputs layer must not know about clusters
        (
            "inputs/walltime.py",
            "import pangeo_hpc.clusters.start",
            "pangeo_hpc.inputs.walltime -> pangeo_hpc.clusters.start",
        ),
    ],
)
def test_a_wrong_import_fails(copy, module, line, shown):
    path = copy / "pangeo_hpc" / module
    path.write_text(path.read_text() + "\n\n" + line + "\n")
    r = _lint(copy)
    assert r.returncode == 1, r.stdout
    assert "BROKEN" in r.stdout and shown in r.stdout, r.stdout


@pytest.mark.parametrize("module", ["helpers.py", "batch/helpers.py"])
def test_a_module_outside_the_layers_fails(copy, module):
    (copy / "pangeo_hpc" / module).write_text('"""Where would this go?"""\n')
    r = _lint(copy)
    assert r.returncode == 1, r.stdout
    name = "pangeo_hpc." + module.removesuffix(".py").replace("/", ".")
    assert name in r.stdout + r.stderr


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start) & modules)))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    nxt = graph.find_modules_directly_imported_by(child) & modules
                    work.append((child, iter(sorted(nxt))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        component.append(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_circles():
    graph = grimp.build_graph("pangeo_hpc", cache_dir=None)
    # a package's __init__ re-exporting its modules is not a circle of features
    modules = {m for m in graph.modules if not graph.find_children(m)}
    assert _cycles(graph, modules) == []


def test_the_circle_finder_finds_one():
    """A known answer for the check above: two modules importing each other."""
    graph = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(m)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert _cycles(graph, {"p.a", "p.b", "p.c"}) == [["p.a", "p.b"]]


def test_an_unknown_old_name_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pangeo_hpc.no_such_module")
