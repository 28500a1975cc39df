"""B3: monthly climatology over 10 years of daily 0.25-degree SST (a benchmark, not a test).

About 15 GB uncompressed (120 monthly files, 5 GB stored; generated once into
``benchmarks/data/``, which takes ~15 minutes on 2 cores). Every case computes the mean of
each calendar month over all years, skipping NaN, and the answers are compared:

* pangeo-hpc: ``open_era5`` then ``recipes.climatology(sst).compute()`` on the platform's
  local cluster (one worker process per core);
* xarray: ``open_mfdataset`` (tuned: nested, ``coords="minimal"``, ``compat="override"``,
  one chunk per file, i.e. per month, and ``parallel=True`` except for netcdf4 on threads,
  where netCDF-C, not thread-safe, crashes) then
  ``groupby("time0.month").mean()`` with flox (``method="map-reduce"`` or ``"cohorts"``) or
  without (``xr.set_options(use_flox=False)``), engines h5netcdf and netcdf4, on threads or
  on the same process cluster. All twelve are screened once on ``--screen-years`` (default
  1); the ``--keep`` fastest are timed on the whole period and the best is the baseline.

Warm and cold page cache, interleaved; written to ``benchmarks/results/B3.json``.

The platform's peak RSS per worker (goal <= 2 GB, one c5n.18xlarge worker's share of the
node) is sampled during its first run, on workers that have run nothing else: worker
processes keep what the xarray cases allocated (3.3-3.4 GB each after one 10-year run, a
measurement on this machine), and the sampler reads a process's whole RSS, so sampled after
them it would report xarray's memory as the platform's.

    python benchmarks/b3_climatology.py [--years 10] [--repeat 3] [--cache warm,cold] [--quick]
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.support.cluster import local_client
from benchmarks.support.data import VAR, data_size, files_of, last_month, quarter_degree
from benchmarks.support.options import finish_args, parser
from benchmarks.support.results import write_result
from benchmarks.support.rows import print_rows, ratio_row, relative_difference, rss_row
from benchmarks.support.timing import Case, measure, print_table, screen

METHODS = ("flox map-reduce", "flox cohorts", "no flox")


def platform_climatology(root: Path, start: str, end: str) -> np.ndarray:
    """The platform: open through the catalog, mean of each calendar month."""
    from pangeo_hpc.io.era5 import open_era5
    from pangeo_hpc.recipes import climatology

    return climatology(open_era5(VAR, start, end, source=root)[VAR]).compute().values


def xarray_climatology(
    files: list[str], *, engine: str, method: str, scheduler: str, workers: int
) -> np.ndarray:
    import dask
    import xarray as xr

    config = {"scheduler": "threads", "num_workers": workers} if scheduler == "threads" else {}
    flox = method != "no flox"
    kwargs = {"method": method.split()[1]} if flox else {}
    with dask.config.set(config), xr.set_options(use_flox=flox):
        ds = xr.open_mfdataset(
            files,
            engine=engine,
            chunks={"time0": -1, "lat": -1, "lon": -1},
            # netCDF-C is not thread-safe: opening in threads segfaults or fails ("NetCDF:
            # HDF error"), so netcdf4 with threads opens serially (reads are locked anyway)
            parallel=not (engine == "netcdf4" and scheduler == "threads"),
            combine="nested",
            concat_dim="time0",
            coords="minimal",
            compat="override",
            data_vars="minimal",
        )
        return ds[VAR].groupby("time0.month").mean(**kwargs).compute().values


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__)
    p.add_argument(
        "--years", type=int, help="years of daily 0.25-degree data (default 10; --quick 1)"
    )
    p.add_argument(
        "--screen-years", type=int, default=1, help="years the xarray variants are screened on"
    )
    p.add_argument("--keep", type=int, default=2, help="xarray configurations kept after screening")
    a = finish_args(p.parse_args(argv))
    years = a.years or (1 if a.quick else 10)
    workers = a.workers

    root, start, end = quarter_degree(12 * years)
    files = files_of(root, start, end)
    size = data_size(files)
    print(f"B3 data: {root} {start}..{end}: {size.describe()}")
    screen_end = last_month(start, 12 * min(a.screen_years, years))
    screen_files = files_of(root, start, screen_end)

    def variants(fs: list[str], suffix: str = "") -> list[Case]:
        return [
            Case(
                f"xarray {engine} {method} {sched}{suffix}",
                lambda e=engine, m=method, s=sched: xarray_climatology(
                    fs, engine=e, method=m, scheduler=s, workers=workers
                ),
                fs,
                label=f"xarray groupby-mean: engine={engine}, {method}, {sched}",
            )
            for engine in ("h5netcdf", "netcdf4")
            for method in METHODS
            for sched in ("threads", "processes")
        ]

    platform = Case(
        "pangeo-hpc", lambda: platform_climatology(root, start, end), files, "platform", rss=True
    )
    with local_client(workers) as client:
        # first, on fresh workers: the platform's warm-up run, its RSS sampled (see above)
        fresh = measure([platform], repeat=0, caches=("warm",), client=client)
        print(f"screening 12 xarray configurations on {start}..{screen_end} (warm, one run each)")
        screen_cases = variants(screen_files)
        kept_screen, screened = screen(screen_cases, keep=a.keep, client=client)
        screened.answers.clear()  # climatologies of the screening period: large, not kept
        full = {c.name: c for c in variants(files)}
        kept = [full[c.name] for c in kept_screen]
        cases = [replace(platform, rss=False), *kept]
        t = measure(cases, repeat=a.repeat, caches=a.caches, client=client, answers=fresh.answers)

    ref = t.answers["pangeo-hpc"]
    agree = {k: relative_difference(v, ref) for k, v in t.answers.items()}
    print_table(screened, data_size(screen_files).bytes_uncompressed)
    print_table(t, size.bytes_uncompressed)
    print("\nlargest relative difference from pangeo-hpc's climatology:")
    for k, v in agree.items():
        print(f"  {k:36s} {v:.1e}")
    rows = []
    for cache in a.caches:
        plat = t.median(cache, "pangeo-hpc")
        best = min((c.name for c in kept), key=lambda k: t.median(cache, k))
        rows.append(
            ratio_row(
                "B3",
                f"climatology of {years} years vs best xarray",
                cache,
                plat,
                t.median(cache, best),
                best,
                1.5,
            )
        )
    rows.append(rss_row("B3", fresh.peak_rss))
    print_rows(rows)
    doc = {
        "title": f"monthly climatology, {years} years of daily 0.25-degree SST",
        "summary": f"{years} years, {size.bytes_uncompressed / 1e9:.1f} GB",
        "params": {
            "years": years,
            "start": start,
            "end": end,
            "workers": workers,
            "repeat": a.repeat,
            "screen_period": [start, screen_end],
        },
        "data": size.__dict__,
        "screening": screened.stats()["screen"],
        "kept": [c.name for c in kept],
        "labels": {c.name: c.label for c in [*screen_cases, *cases] if c.label},
        "stats": t.stats(),
        "failed": {**screened.failed, **t.failed},
        "peak_rss_bytes": fresh.peak_rss,
        "peak_rss_when": "the platform's first run, on workers that had run nothing else",
        "resident_before_cold_run": t.resident_before,
        "max_relative_difference": agree,
        "rows": rows,
    }
    write_result("B3", doc, quick=a.quick)
    return doc


if __name__ == "__main__":
    main()
