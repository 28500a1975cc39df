"""What a test needs that may be missing: a program, root, a local service. On a
developer's machine the test is skipped and says how to get it; under ``CI=true`` it fails
instead: CI runs every test."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

#: CI runs every test: one that cannot run there fails instead of skipping
CI = os.environ.get("CI", "").lower() == "true"


def missing(what: str, hint: str) -> None:
    """Skip for a missing tool, except under CI=true, where it must be there."""
    if CI:
        pytest.fail(f"{what} is missing and CI=true: {hint}")
    pytest.skip(f"{what} is missing: {hint}")


def require_tool(name: str) -> str:
    """Path of an external program; skip without it, except under CI=true where it must exist."""
    path = shutil.which(name)
    if path is None:
        if CI:
            pytest.fail(f"{name} is not installed, and CI=true: ci/install-system.sh installs it")
        pytest.skip(f"{name} is not installed (Debian: apt-get install {name}); CI installs it")
    return path


def need_root(what: str) -> None:
    """Skip (fail under ``CI=true``) unless this process is root; ``what`` names the need."""
    if os.geteuid() == 0:
        return
    if CI:
        pytest.fail(f"{what} needs root, and CI=true: run the tests as root in CI")
    pytest.skip(f"{what} needs root (sudo); CI runs it")


def require_service(name: str, available: Callable[[], bool], start_script: Path) -> None:
    """Make sure a local server runs: start it with the project's script as root; without
    root skip, except under CI=true where it must run."""
    if available():
        return
    if os.geteuid() == 0:
        subprocess.run(["bash", str(start_script)], check=True, timeout=900)
        assert available(), f"{start_script} ran but {name} does not answer"
        return
    if CI:
        pytest.fail(f"{name} is not running and CI=true: run {start_script} as root first")
    pytest.skip(f"{name} is not running; starting it needs root: sudo bash {start_script}")
