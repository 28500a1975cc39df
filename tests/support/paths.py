"""Where things are: the repository the tests run from, and the stand-ins shipped beside
these helpers."""

from __future__ import annotations

from pathlib import Path

#: the repository's root (pyproject.toml, pangeo_hpc/, recipes/, docs/, benchmarks/)
ROOT = Path(__file__).resolve().parents[2]
#: a fake Lustre ``lfs`` program (tests/storage/test_storage.py puts its folder on PATH)
FAKE_LFS = Path(__file__).resolve().parent / "fake_lfs"
