"""Shared fixtures: small demo trees, a guard that proves laziness, and external tools."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import dask
import pytest

from pangeo_hpc.demo import DemoSpec, generate

#: the test trees: 2 degree daily fields for ten years (the demo default is 1 degree)
TEST_SPEC = DemoSpec(resolution=2.0, frequency="daily", start="2000-01", end="2009-12", seed=7)


@pytest.fixture(scope="session")
def demo_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten years of 2-degree daily demo SST in the era5-pds layout (read-only: don't modify)."""
    root = tmp_path_factory.mktemp("era5-pds")
    generate(root, TEST_SPEC, workers=2)
    return root


@pytest.fixture
def demo_copy(demo_tree: Path, tmp_path: Path) -> Path:
    """A private copy of two years of the demo tree, for tests that change files."""
    root = tmp_path / "era5"
    for year in ("2000", "2001"):
        shutil.copytree(demo_tree / year, root / year)
    shutil.copy(demo_tree / "demo-manifest.json", root)
    return root


@contextmanager
def raise_if_dask_computes():
    """Fail if anything inside the block makes Dask compute (as xarray's tests do)."""

    def scheduler(dsk, keys, **kwargs):
        raise RuntimeError(f"Dask was asked to compute {keys!r} inside a lazy recipe")

    with dask.config.set(scheduler=scheduler):
        yield


def require_tool(name: str) -> str:
    """Path of an external program; skip without it, except under CI=true where it must exist."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{name} is not installed, and CI=true: ci/install-system.sh installs it")
        pytest.skip(f"{name} is not installed (Debian: apt-get install {name}); CI installs it")
    return path
