"""Every Examples section of the package runs and shows what it says (doctest).

The examples of :mod:`tests.test_docstrings`' names are run as doctests, module by module
of each folder of :data:`FOLDERS` (and the top-level modules): an example whose output
differs, or that raises, fails here. Examples that need data, a cluster, S3 or a browser
show the call with ``# doctest: +SKIP``; the docs build does not run any example.
"""

from __future__ import annotations

import doctest
import importlib
import io
import tempfile

import pytest

from tests.support.paths import ROOT

#: folders of pangeo_hpc/ whose modules' examples are run ("" for the top-level modules)
FOLDERS = ["", "batch", "cli", "clusters", "demo", "inputs", "io", "lab", "planning", "recipes", "s3", "storage", "write"]  # fmt: skip
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def modules(folder: str) -> list[str]:
    """The modules under ``pangeo_hpc/<folder>`` (subfolders included), or the package's
    top-level modules for ``""``."""
    top = ROOT / "pangeo_hpc" / folder
    paths = sorted(top.glob("*.py")) if folder == "" else sorted(top.rglob("*.py"))
    out = []
    for path in paths:
        parts = path.relative_to(ROOT).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def failures(module: str) -> tuple[int, list[str]]:
    """The number of examples run in ``module`` and the report of each that failed."""
    mod = importlib.import_module(module)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    ran, failed = 0, []
    for test in doctest.DocTestFinder().find(mod, module):
        if test.lineno is None or not test.examples:
            continue
        report = io.StringIO()
        result = runner.run(test, out=report.write, clear_globs=True)
        ran += result.attempted
        if result.failed:
            failed.append(f"{test.name}:\n{report.getvalue()}")
    return ran, failed


@pytest.mark.parametrize("folder", FOLDERS, ids=[f or "top-level" for f in FOLDERS])
def test_the_examples_of_a_folder_run(folder, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # and its mkdtemp() folders
    failed = [report for module in modules(folder) for report in failures(module)[1]]
    assert failed == [], "\n".join(failed)


def test_a_wrong_example_fails(tmp_path, monkeypatch):
    """The runner is not vacuous: an example whose shown output is wrong is reported."""
    probe = tmp_path / "probe_examples.py"
    probe.write_text(
        'def f():\n    """F.\n\n    Examples\n    --------\n    >>> 1 + 1\n    3\n    """\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    ran, failed = failures("probe_examples")
    assert ran == 1 and len(failed) == 1 and "Expected:\n    3" in failed[0]


def test_no_example_shows_a_path_repr():
    """Examples print paths rather than show their repr: ``PosixPath('x')`` is not what a
    user sees on Windows, nor after importing intake-esm (its dependency fastcore patches
    ``Path.__repr__`` to ``Path('x')``: CI's run failed on it once the test modules were
    all imported)."""
    shown = [
        f"{module}: {example.want.strip()}"
        for folder in FOLDERS
        for module in modules(folder)
        for test in doctest.DocTestFinder().find(importlib.import_module(module), module)
        for example in test.examples
        if "Path('" in example.want and "PurePosixPath" not in example.want
    ]
    assert shown == []
