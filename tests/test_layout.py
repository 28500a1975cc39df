"""The tests' own layout: folders that mirror the package's, helpers imported from the
tests.support package (never by bare name, never from a conftest), and every path of a
test or helper named in the docs, the sources and the tests themselves one that exists."""

from __future__ import annotations

import ast
import re
import subprocess

import pytest

from tests.support.paths import ROOT

TESTS = ROOT / "tests"
#: test folders that are not a folder of pangeo_hpc/: the helpers
NOT_MIRRORED = {"support"}
#: a path of the test tree as text: tests/test_cli.py, tests/support/servers.py, tests/io/
TEST_PATH = re.compile(r"(?<![\w/.-])tests/(?:[a-z0-9_]+/)*[a-z0-9_]+(?:\.py|/)")


def _tracked(*patterns: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard",
         "--", *patterns],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [line for line in out.splitlines() if (ROOT / line).is_file()]


def _folders() -> list[str]:
    return sorted(
        p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
    )


def test_each_test_folder_mirrors_a_folder_of_the_package_and_is_a_package():
    """tests/io/ for pangeo_hpc/io/ ...; each folder has an __init__.py, so pytest names its
    modules tests.io.test_x (prepend import mode, the root on sys.path): without it, a
    basename would clash with another folder's."""
    package = {p.name for p in (ROOT / "pangeo_hpc").iterdir() if (p / "__init__.py").is_file()}
    for name in _folders():
        if name in NOT_MIRRORED or name == "__pycache__":
            continue
        assert name in package, f"tests/{name}/ mirrors no folder of pangeo_hpc/: {sorted(package)}"
    for folder in [TESTS, *(TESTS / n for n in _folders() if n != "__pycache__")]:
        if any(folder.glob("*.py")):
            assert (folder / "__init__.py").is_file(), f"{folder.relative_to(ROOT)} is no package"


def _bare_imports(path: str) -> list[str]:
    """Helpers imported the old way: ``from servers import`` (a module of tests/support/ by
    its bare name), ``from conftest import``, ``from test_x import``."""
    helpers = {p.stem for p in (TESTS / "support").glob("*.py")} | {"privileges", "conftest"}
    tree = ast.parse((ROOT / path).read_text(), path)
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top = node.module.split(".")[0]
            if top in helpers or top.startswith("test_"):
                bad.append(f"{path}:{node.lineno}: from {node.module} import")
        elif isinstance(node, ast.Import):
            bad += [
                f"{path}:{node.lineno}: import {a.name}"
                for a in node.names
                if a.name.split(".")[0] in helpers or a.name.startswith("test_")
            ]
    return bad


def test_helpers_are_imported_from_tests_support():
    bad = [b for path in _tracked("tests/*.py", "benchmarks/*.py") for b in _bare_imports(path)]
    assert not bad, (
        "import the helpers as tests.support.NAME (conftest's helpers: tests/support/needs.py, "
        "cli.py, lazy.py, s3env.py, trees.py, batch_systems.py, paths.py; another test "
        "module: tests.FOLDER.test_x): bash ci/adapt-test-imports.sh FILE\n" + "\n".join(bad)
    )


@pytest.mark.parametrize(
    "text, found",
    [
        ("from servers import SeaweedFS\n", ["x.py:1: from servers import"]),
        ("def f():\n    from conftest import run_cli\n", ["x.py:2: from conftest import"]),
        ("from test_resume import _env\n", ["x.py:1: from test_resume import"]),
        ("import known\n", ["x.py:1: import known"]),
        ("from tests.support.servers import SeaweedFS\nfrom pangeo_hpc import cf\n", []),
    ],
)
def test_the_bare_import_check_finds_each_old_form(text, found, tmp_path, monkeypatch):
    """The check above on files written the old way (it would pass on an empty list)."""
    (tmp_path / "x.py").write_text(text)
    monkeypatch.setattr("tests.test_layout.ROOT", tmp_path)
    assert _bare_imports("x.py") == found


def test_every_test_path_named_in_the_docs_and_sources_exists():
    """A moved test leaves no stale path behind in the docs, docstrings or comments."""
    missing = []
    for path in _tracked("*.md", "*.py", "*.toml", "*.yml", "*.yaml", "Makefile", "*.sh"):
        if path == "ci/adapt-test-imports.sh":
            continue  # names the old paths it rewrites
        text = (ROOT / path).read_text(errors="replace")
        for m in TEST_PATH.finditer(text):
            name = m.group(0)
            if not (ROOT / name).exists() and name != "tests/utils_test.py":  # dask-gateway's
                missing.append(f"{path}: {name}")
    assert not missing, "\n".join(missing)
