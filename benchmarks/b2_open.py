"""B2: opening 1,000 monthly files as one dataset (a benchmark, not a test).

Daily 2-degree demo SST, one NetCDF4 file per month, 1940-01..2023-04 (1,000 files). Each
case opens the lot as one lazy dataset (nothing computed) and returns its shape:

* pangeo-hpc, first open: ``open_era5(VAR, start, end, source=root)`` with the catalog's
  metadata cache off, so that every file's metadata are read: like for like with
  ``open_mfdataset``, warm and cold, and the figure the goal is judged on;
* pangeo-hpc, cached: the same with the metadata cache (filled by the screening's first
  open), as on every open of a tree after its first; on a cold run the cache file is
  dropped from the page cache with the NetCDF files;
* open_mfdataset default: ``xr.open_mfdataset(files)``, every option at its default;
* open_mfdataset tuned: ``combine="nested", concat_dim="time0", compat="override",
  coords="minimal", data_vars="minimal"``, with the engines h5netcdf and netcdf4, and
  ``parallel=True`` with the opens in threads or on the platform's process cluster (or
  ``parallel=False``, which can be faster). All are screened once (warm); the ``--keep``
  fastest are timed in the repetitions and the best is the baseline the goal (>= 10x) is
  judged against. (netcdf4 with ``parallel=True`` in threads is left out: netCDF-C is
  not thread-safe, and it fails with "NetCDF: HDF error" or crashes the process.)

Warm and cold page cache (the files dropped with ``posix_fadvise`` before each cold run),
interleaved repetitions; the peak RSS of this process (where the opens run) during the
platform's first opens, before any ``open_mfdataset`` ran in it; written to
``benchmarks/results/B2.json``.

    python benchmarks/b2_open.py [--files 1000] [--repeat 3] [--cache warm,cold] [--quick]
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.support.cluster import local_client
from benchmarks.support.data import VAR, data_size, files_of, two_degree
from benchmarks.support.options import finish_args, parser
from benchmarks.support.results import write_result
from benchmarks.support.rows import print_rows, ratio_row, rss_row
from benchmarks.support.timing import Case, measure, print_table, screen


def platform_open(root: Path, start: str, end: str, *, scan_cache: bool) -> tuple[int, ...]:
    """``open_era5``; with ``scan_cache`` the catalog's metadata cache (filled by the
    screening's first open) is used, as on every open of a tree after the first;
    without it every file's metadata are read, as on the first open."""
    import dask

    from pangeo_hpc.io.era5 import open_era5

    with dask.config.set({} if scan_cache else {"pangeo-hpc.catalog.cache": False}):
        return tuple(open_era5(VAR, start, end, source=root)[VAR].shape)


def scan_cache_file(root: Path) -> Path:
    """The catalog's metadata cache file of ``root`` (it must exist: filled by an open)."""
    from pangeo_hpc.io.scan_cache import cache_path

    path = cache_path(root, VAR)
    if path is None or not path.is_file():
        raise SystemExit(f"no metadata cache for {root} at {path}: is the cache turned off?")
    return path


def mf_default(files: list[str]) -> tuple[int, ...]:
    import xarray as xr

    return tuple(xr.open_mfdataset(files)[VAR].shape)


def mf_tuned(files: list[str], engine: str, scheduler: str, workers: int) -> tuple[int, ...]:
    """Tuned ``open_mfdataset``; ``scheduler`` runs the opens: ``serial`` (parallel=False),
    ``threads`` or ``processes`` (the platform's cluster)."""
    import dask
    import xarray as xr

    config = {"scheduler": "threads", "num_workers": workers} if scheduler == "threads" else {}
    with dask.config.set(config):
        ds = xr.open_mfdataset(
            files,
            engine=engine,
            combine="nested",
            concat_dim="time0",
            compat="override",
            coords="minimal",
            data_vars="minimal",
            parallel=scheduler != "serial",
        )
    return tuple(ds[VAR].shape)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__)
    p.add_argument("--files", type=int, help="monthly files to open (default 1000; --quick 120)")
    p.add_argument("--keep", type=int, default=2, help="tuned variants kept after screening")
    a = finish_args(p.parse_args(argv))
    n = a.files or (120 if a.quick else 1000)

    root, start, end = two_degree(n)
    files = files_of(root, start, end)
    size = data_size(files)
    print(f"B2 data: {root} {start}..{end}: {size.describe()}")
    tuned = [
        Case(
            f"open_mfdataset tuned {engine} {sched}",
            lambda e=engine, s=sched: mf_tuned(files, e, s, a.workers),
            files,
            label=f"open_mfdataset tuned, engine={engine}, "
            + ("parallel=False" if sched == "serial" else f"parallel=True on {sched}"),
        )
        for engine in ("h5netcdf", "netcdf4")
        for sched in ("serial", "threads", "processes")
        if (engine, sched) != ("netcdf4", "threads")
    ]
    first = Case(
        "pangeo-hpc first open",
        lambda: platform_open(root, start, end, scan_cache=False),
        files,
        "platform",
        label="open_era5, first open (no metadata cache: every file scanned)",
        rss="client",
    )
    with local_client(a.workers) as client:
        # the platform first, before any open_mfdataset in this process: its RSS sampled
        fresh = measure([first], repeat=0, caches=("warm",), client=client)
        platform_open(root, start, end, scan_cache=True)  # fills the metadata cache
        cached = Case(
            "pangeo-hpc cached",
            lambda: platform_open(root, start, end, scan_cache=True),
            [*files, scan_cache_file(root)],
            "platform",
            label="open_era5 (catalog metadata cached: every open after a tree's first)",
            rss="client",
        )
        fresh.peak_rss.update(measure([cached], repeat=0, caches=("warm",)).peak_rss)
        print(f"screening {len(tuned)} tuned open_mfdataset variants (warm cache, one run each)")
        kept, screened = screen(tuned, keep=a.keep, client=client)
        cases = [
            replace(first, rss=False),
            replace(cached, rss=False),
            Case("open_mfdataset default", lambda: mf_default(files), files),
            *kept,
        ]
        t = measure(
            cases, repeat=a.repeat, caches=a.caches, client=client, answers=screened.answers
        )
    shapes = {k: tuple(v) for k, v in t.answers.items() if v is not None}
    if len(set(shapes.values())) != 1:
        raise SystemExit(f"the cases opened different shapes: {shapes}")
    print(f"\nopened {shapes['pangeo-hpc first open']} ({VAR})")
    print_table(screened, size.bytes_uncompressed)
    print_table(t, size.bytes_uncompressed)
    rows = []
    for cache in a.caches:
        best = min((c.name for c in kept), key=lambda k: t.median(cache, k))
        for name, when in (
            ("pangeo-hpc first open", ", first open (like for like)"),
            ("pangeo-hpc cached", ", metadata cached"),
        ):
            plat = t.median(cache, name)
            rows += [
                ratio_row(
                    "B2",
                    f"open {len(files)} files{when} vs best tuned open_mfdataset",
                    cache,
                    plat,
                    t.median(cache, best),
                    best,
                    10.0,
                ),
                ratio_row(
                    "B2",
                    f"open {len(files)} files{when} vs default open_mfdataset",
                    cache,
                    plat,
                    t.median(cache, "open_mfdataset default"),
                    "open_mfdataset default",
                    10.0,
                ),
            ]
    rows.append(rss_row("B2", fresh.peak_rss, "peak RSS of the opening process"))
    print_rows(rows)
    doc = {
        "title": f"opening {len(files)} monthly files",
        "summary": f"{len(files)} files",
        "params": {
            "files": n,
            "start": start,
            "end": end,
            "workers": a.workers,
            "repeat": a.repeat,
        },
        "data": size.__dict__,
        "screening": screened.stats()["screen"],
        "kept": [c.name for c in kept],
        "labels": {c.name: c.label for c in [*tuned, *cases] if c.label},
        "stats": t.stats(),
        "failed": {**screened.failed, **t.failed},
        "peak_rss_bytes": fresh.peak_rss,
        "peak_rss_when": "the platform's first opens, before any open_mfdataset in the process",
        "resident_before_cold_run": t.resident_before,
        "rows": rows,
    }
    write_result("B2", doc, quick=a.quick)
    return doc


if __name__ == "__main__":
    main()
