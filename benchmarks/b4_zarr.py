"""B4: convert once to an analysis-ready Zarr store, then repeat analyses on it (not a test).

``pangeo_hpc.batch.pipeline.convert.to_zarr`` writes the 0.25-degree demo SST (the B3 period, which holds
the B1 period) to a Zarr store (zstd, whole-field chunks chosen for the recipes); the cost
is reported (seconds, bytes written, and after how many analyses it has paid for itself).
Then B1's and B3's platform computations run on both paths:

* NetCDF: ``open_era5(source=tree)``, then ``global_mean(sst)`` / ``climatology(sst)``;
* Zarr: ``open_era5(source=store)`` (chunk files decoded in place), the same recipes.

The goal is >= 2x the NetCDF path. Warm and cold page cache (the store's files or the
NetCDF files dropped before each cold run), interleaved; ``benchmarks/results/B4.json``.

    python benchmarks/b4_zarr.py [--gb 2.2] [--years 10] [--repeat 3] [--cache warm,cold] [--quick]
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.b1_global_mean import platform_global_mean
from benchmarks.b3_climatology import platform_climatology
from benchmarks.support.cluster import local_client
from benchmarks.support.data import VAR, data_size, files_of, months_for_gb, quarter_degree
from benchmarks.support.options import finish_args, parser
from benchmarks.support.pagecache import warm
from benchmarks.support.paths import DATA
from benchmarks.support.results import write_result
from benchmarks.support.rows import print_rows, ratio_row, relative_difference, rss_row, text_row
from benchmarks.support.timing import Case, measure, print_table


def _period(store: Path, start: str, end: str) -> Any:
    """The period from the store, as the platform opens it (``open_era5(source=store)``)."""
    from pangeo_hpc.io.era5 import open_era5

    return open_era5(VAR, start, end, source=store)[VAR]


def zarr_global_mean(store: Path, start: str, end: str) -> np.ndarray:
    from pangeo_hpc.recipes import global_mean

    return global_mean(_period(store, start, end)).compute().values


def zarr_climatology(store: Path, start: str, end: str) -> np.ndarray:
    from pangeo_hpc.recipes import climatology

    return climatology(_period(store, start, end)).compute().values


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__)
    p.add_argument("--gb", type=float, help="B1 part: uncompressed GB (default 2.2; --quick 0.5)")
    p.add_argument("--years", type=int, help="B3 part: years (default 10; --quick 1)")
    p.add_argument(
        "--codec",
        default="zstd",
        help="Blosc compressor of the store (default zstd, the issue's; results of others "
        "go to B4-CODEC.json)",
    )
    p.add_argument(
        "--store", type=Path, help="where to write the Zarr store (default under benchmarks/data)"
    )
    a = finish_args(p.parse_args(argv))
    try:
        from pangeo_hpc.batch.pipeline.convert import to_zarr
    except ImportError as exc:
        msg = f"B4 skipped: pangeo_hpc.batch.pipeline.convert.to_zarr is not available yet ({exc})"
        print(msg)
        write_result(
            "B4", {"title": "analysis-ready Zarr", "skipped": msg, "rows": []}, quick=a.quick
        )
        return {"skipped": msg}
    gb = a.gb or (0.5 if a.quick else 2.2)
    years = a.years or (1 if a.quick else 10)
    n1, n3 = months_for_gb(gb), 12 * years
    root, start, end3 = quarter_degree(max(n1, n3))
    _, _, end1 = quarter_degree(n1)
    if n3 < n1:
        end3 = quarter_degree(n3)[2]
    last = max(end1, end3)
    files1, files3, all_files = (files_of(root, start, e) for e in (end1, end3, last))
    size1, size3 = data_size(files1), data_size(files3)
    print(
        f"B4 data: {root} {start}..{last}; B1 part {size1.describe()}; B3 part {size3.describe()}"
    )
    store = a.store or DATA / "zarr" / f"sst-{start}-{last}-{a.codec}.zarr"
    store.parent.mkdir(parents=True, exist_ok=True)

    with local_client(a.workers) as client:
        warm(all_files)
        shutil.rmtree(store, ignore_errors=True)
        t0 = time.perf_counter()
        report = to_zarr(root, store, VAR, start, last, codec=a.codec, overwrite=True)
        convert_s = time.perf_counter() - t0
        written = int(report.bytes_written)
        print(
            f"converted {start}..{last} in {convert_s:.1f} s (report: {report.seconds:.1f} s), "
            f"{written / 1e9:.2f} GB written"
        )
        cases = [
            Case("B1 NetCDF", lambda: platform_global_mean(root, start, end1), files1, "baseline"),
            Case(
                "B1 Zarr",
                lambda: zarr_global_mean(store, start, end1),
                [store],
                "platform",
                rss=True,
            ),
            Case("B3 NetCDF", lambda: platform_climatology(root, start, end3), files3, "baseline"),
            Case(
                "B3 Zarr",
                lambda: zarr_climatology(store, start, end3),
                [store],
                "platform",
                rss=True,
            ),
        ]
        t = measure(cases, repeat=a.repeat, caches=a.caches, client=client)

    agree = {
        "B1": relative_difference(t.answers["B1 Zarr"], t.answers["B1 NetCDF"]),
        "B3": relative_difference(t.answers["B3 Zarr"], t.answers["B3 NetCDF"]),
    }
    print_table(t, size1.bytes_uncompressed, ["B1 NetCDF", "B1 Zarr"])
    print_table(t, size3.bytes_uncompressed, ["B3 NetCDF", "B3 Zarr"])
    print(f"\nZarr vs NetCDF answers, largest relative difference: {agree}")
    rows, break_even = [], {}
    for cache in a.caches:
        for part in ("B1", "B3"):
            nc, zr = t.median(cache, f"{part} NetCDF"), t.median(cache, f"{part} Zarr")
            rows.append(
                ratio_row(
                    "B4", f"{part} on Zarr vs on NetCDF", cache, zr, nc, f"{part} NetCDF", 2.0
                )
            )
            saved = nc - zr
            break_even[f"{cache} {part}"] = convert_s / saved if saved > 0 else None
    total = data_size(all_files).bytes_uncompressed
    paid = ", ".join(
        f"{k} {v:.1f}" if v is not None else f"{k} never (Zarr not faster)"
        for k, v in break_even.items()
    )
    rows.append(
        text_row(
            "B4",
            "conversion to Zarr (one time)",
            "warm",
            f"{convert_s:.0f} s for {total / 1e9:.1f} GB ({written / 1e9:.2f} GB written); "
            f"analyses to pay it back: {paid}",
        )
    )
    rows.append(rss_row("B4", t.peak_rss))
    print_rows(rows)
    print(f"conversion {convert_s:.1f} s pays for itself after this many analyses: {break_even}")
    doc = {
        "title": "analysis-ready Zarr (convert once, analyse many times)",
        "summary": f"B1 on {size1.bytes_uncompressed / 1e9:.1f} GB, B3 on {years} years",
        "params": {
            "gb": gb,
            "years": years,
            "start": start,
            "end_b1": end1,
            "end_b3": end3,
            "workers": a.workers,
            "repeat": a.repeat,
            "codec": a.codec,
        },
        "data": {"B1": size1.__dict__, "B3": size3.__dict__},
        "conversion": {
            "seconds": convert_s,
            "report_seconds": float(report.seconds),
            "bytes_written": written,
            "bytes_uncompressed": total,
            "period": [start, last],
            "store": str(store),
            "chunks": list(getattr(report, "chunks", ()) or ()),
            "source_cache": "warm",
            "analyses_to_break_even": break_even,
        },
        "stats": t.stats(),
        "failed": t.failed,
        "peak_rss_bytes": t.peak_rss,
        "resident_before_cold_run": t.resident_before,
        "max_relative_difference": agree,
        "rows": rows,
    }
    write_result("B4" if a.codec == "zstd" else f"B4-{a.codec}", doc, quick=a.quick)
    return doc


if __name__ == "__main__":
    main()
