"""Benchmark: SST mean over >= 2 GB of uncompressed ERA5-layout NetCDF4 (not a test).

Measures, in one run and on one local Dask cluster of worker processes:

* naive: the FSx + Dask blog's recipe, ``xr.open_mfdataset(files)`` then ``.mean()``;
* pangeo-hpc: ``open_era5`` then the area-weighted ``global_mean`` and the time mean.

Each is repeated (interleaved) and the median, spread and the ratio naive / pangeo-hpc are
printed and written to ``benchmarks/results/sst_mean.json``. The files sit in the page
cache after the first read (warm runs); run ``python benchmarks/sst_mean.py --help``.

    python benchmarks/sst_mean.py [--gb 2.2] [--repeat 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from benchmarks.support.paths import DATA, RESULTS


def demo_data(gb: float) -> tuple[Path, str, str]:
    """0.25-degree daily demo data from 2010-01 for about ``gb`` GB uncompressed."""
    from pangeo_hpc.demo import DemoSpec, generate

    per_day = 721 * 1440 * 4 / 1e9
    n_months = max(1, round(gb / per_day / 30.44))
    end_year, end_month = 2010 + (n_months - 1) // 12, (n_months - 1) % 12 + 1
    start, end = "2010-01", f"{end_year}-{end_month:02d}"
    root = DATA / "era5-0.25-daily"
    generate(root, DemoSpec(resolution=0.25, frequency="daily", start=start, end=end))
    return root, start, end


def naive(files: list[str]) -> float:
    import xarray as xr

    ds = xr.open_mfdataset(files)
    return float(ds["sea_surface_temperature"].mean().compute())


def platform_mean(root: Path, start: str, end: str) -> float:
    import dask

    from pangeo_hpc.io.era5 import open_era5
    from pangeo_hpc.recipes import global_mean

    sst = open_era5("sea_surface_temperature", start, end, source=root).sea_surface_temperature
    gm, _time_mean_map = dask.compute(global_mean(sst).mean("time0"), sst.mean("time0"))
    return float(gm)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--gb", type=float, default=2.2, help="uncompressed GB to read (>= 2)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--workers", type=int, default=os.cpu_count())
    a = p.parse_args()

    from distributed import Client

    from pangeo_hpc.clusters.start import get_cluster
    from pangeo_hpc.io.layout import find_files

    t = time.perf_counter()
    root, start, end = demo_data(a.gb)
    print(f"data: {root} {start}..{end} ready in {time.perf_counter() - t:.1f} s")
    files = [str(f) for f in find_files(root, "sea_surface_temperature", start, end)]
    nbytes = len(files) and sum(
        __import__("xarray").open_dataset(f).sea_surface_temperature.nbytes for f in files
    )
    print(
        f"{len(files)} files, {nbytes / 1e9:.2f} GB uncompressed, "
        f"{sum(os.path.getsize(f) for f in files) / 1e9:.2f} GB on disk"
    )

    times: dict[str, list[float]] = {"naive": [], "pangeo-hpc": []}
    answers: dict[str, float] = {}
    with get_cluster("local", workers=a.workers) as cluster, Client(cluster):
        runs = {
            "naive": lambda: naive(files),
            "pangeo-hpc": lambda: platform_mean(root, start, end),
        }
        for name, fn in runs.items():  # warm the page cache and the workers
            answers[name] = fn()
        for i in range(a.repeat):
            for name, fn in runs.items():
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
                print(f"  run {i + 1}: {name:11s} {times[name][-1]:6.2f} s")

    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{'case':12s} {'median s':>9s} {'min..max s':>14s} {'MB/s':>7s}  answer")
    for k, v in times.items():
        print(
            f"{k:12s} {med[k]:9.2f} {min(v):6.2f}..{max(v):6.2f} {nbytes / 1e6 / med[k]:7.0f}"
            f"  {answers[k]:.4f} K"
        )
    ratio = med["naive"] / med["pangeo-hpc"]
    print(
        f"\nratio naive / pangeo-hpc: {ratio:.2f}x faster (answers differ: the naive recipe "
        "is an unweighted mean, pangeo-hpc weights by cell area)"
    )
    out = RESULTS / "sst_mean.json"
    doc = {
        "benchmark": "sst_mean",
        "bytes_uncompressed": nbytes,
        "files": len(files),
        "workers": a.workers,
        "seconds": times,
        "median_s": med,
        "ratio_naive_over_platform": round(ratio, 3),
        "answers_K": answers,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "cache": "warm",
        "date": time.strftime("%Y-%m-%d"),
    }
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"written {out}")


if __name__ == "__main__":
    main()
