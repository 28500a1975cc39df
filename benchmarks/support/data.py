"""The demo data the cases read, made once under ``benchmarks/data/`` and reused: the
0.25-degree and 2-degree daily SST trees, their files and sizes."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.support.paths import DATA

VAR = "sea_surface_temperature"
#: uncompressed bytes of one day of 0.25-degree SST (721 x 1440 float32)
DAY_025 = 721 * 1440 * 4
#: mean days per month
MONTH_DAYS = 30.436875


def last_month(start: str, n: int) -> str:
    """The month ``n - 1`` months after ``start`` (YYYY-MM), i.e. the last of ``n`` months."""
    y, m = (int(v) for v in start.split("-"))
    k = y * 12 + m - 1 + n - 1
    return f"{k // 12:04d}-{k % 12 + 1:02d}"


def months_for_gb(gb: float) -> int:
    """Months of daily 0.25-degree SST holding about ``gb`` GB uncompressed (at least 1)."""
    return max(1, round(gb * 1e9 / (DAY_025 * MONTH_DAYS)))


def _generate(root: Path, resolution: float, start: str, end: str) -> None:
    from pangeo_hpc.cli.progress import step_progress
    from pangeo_hpc.demo import DemoSpec, generate

    t = time.perf_counter()
    spec = DemoSpec(resolution=resolution, frequency="daily", start=start, end=end)
    made = generate(root, spec, progress=step_progress(f"  demo data {root.name}", "months"))
    dt = time.perf_counter() - t
    if dt > 2:
        print(f"  demo data {root.name} {start}..{end} ({len(made)} months) ready in {dt:.0f} s")


def quarter_degree(n_months: int, start: str = "2010-01") -> tuple[Path, str, str]:
    """``n_months`` of daily 0.25-degree demo SST from ``start``: (root, start, end).

    All cases share one tree (``benchmarks/data/era5-0.25-daily``, also that of
    ``sst_mean.py``); months already there are not written again.
    """
    root = DATA / "era5-0.25-daily"
    end = last_month(start, n_months)
    _generate(root, 0.25, start, end)
    return root, start, end


def two_degree(n_files: int, start: str = "1940-01") -> tuple[Path, str, str]:
    """``n_files`` monthly files of daily 2-degree demo SST from ``start`` (B2's tree)."""
    root = DATA / "era5-2deg-daily"
    end = last_month(start, n_files)
    _generate(root, 2.0, start, end)
    return root, start, end


def files_of(root: Path, start: str, end: str) -> list[str]:
    from pangeo_hpc.io.layout import find_files

    return [str(f) for f in find_files(root, VAR, start, end)]


@dataclass(frozen=True)
class DataSize:
    files: int
    bytes_uncompressed: int
    bytes_stored: int

    def describe(self) -> str:
        return (
            f"{self.files} files, {self.bytes_uncompressed / 1e9:.2f} GB uncompressed, "
            f"{self.bytes_stored / 1e9:.2f} GB stored"
        )


def data_size(files: Sequence[str]) -> DataSize:
    """Uncompressed bytes of the variable (from HDF5 metadata) and bytes on disk."""
    import h5py

    raw = 0
    for f in files:
        with h5py.File(f, "r") as h:
            d = h[VAR]
            raw += d.size * d.dtype.itemsize
    return DataSize(len(files), raw, sum(os.path.getsize(f) for f in files))
