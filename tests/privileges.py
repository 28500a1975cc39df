"""Tests that need root (mounts, read-only remounts): run as root in CI, skipped elsewhere."""

from __future__ import annotations

import os

import pytest

#: CI runs every test: one that cannot run there fails instead of skipping
CI = os.environ.get("CI", "").lower() == "true"


def need_root(what: str) -> None:
    """Skip (fail under ``CI=true``) unless this process is root; ``what`` names the need."""
    if os.geteuid() == 0:
        return
    if CI:
        pytest.fail(f"{what} needs root, and CI=true: run the tests as root in CI")
    pytest.skip(f"{what} needs root (sudo); CI runs it")
