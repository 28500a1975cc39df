"""B5: scaling of B1's platform computation with the data size (a benchmark, not a test).

The area-weighted daily global mean (``open_era5`` + ``global_mean``) over 1, 2, 4 and 8 GB
(uncompressed) of daily 0.25-degree demo SST (8 GB is 63 months; generated once). Reports
the time per GB at each size, a least-squares fit of time per GB against GB (its slope
should be ~0: flat), and the peak RSS of each worker process (with its children), sampled
every 50 ms, which must stay under 2 GB.

Warm and cold page cache, the sizes interleaved; ``benchmarks/results/B5.json``.

    python benchmarks/b5_scaling.py [--sizes 1,2,4,8] [--repeat 3] [--cache warm,cold] [--quick]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.b1_global_mean import platform_global_mean
from benchmarks.support.cluster import local_client
from benchmarks.support.data import data_size, files_of, months_for_gb, quarter_degree
from benchmarks.support.options import finish_args, parser
from benchmarks.support.results import write_result
from benchmarks.support.rows import rss_row, text_row
from benchmarks.support.timing import Case, measure


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__)
    p.add_argument(
        "--sizes", help="uncompressed GB, comma separated (default 1,2,4,8; --quick 0.25,0.5,1)"
    )
    a = finish_args(p.parse_args(argv))
    sizes = [float(s) for s in (a.sizes or ("0.25,0.5,1" if a.quick else "1,2,4,8")).split(",")]

    root, start, _ = quarter_degree(max(months_for_gb(g) for g in sizes))
    parts = {}
    for g in sizes:
        end = quarter_degree(months_for_gb(g))[2]
        files = files_of(root, start, end)
        parts[g] = (end, files, data_size(files))
        print(f"B5 {g:g} GB: {start}..{end}: {parts[g][2].describe()}")
    cases = [
        Case(
            f"{g:g} GB",
            lambda e=end: platform_global_mean(root, start, e),
            files,
            "platform",
            rss=True,
        )
        for g, (end, files, _) in parts.items()
    ]
    with local_client(a.workers) as client:
        t = measure(cases, repeat=a.repeat, caches=a.caches, client=client)

    gb = np.array([parts[g][2].bytes_uncompressed / 1e9 for g in sizes])
    fits, per_gb = {}, {}
    for cache in a.caches:
        secs = np.array([t.median(cache, f"{g:g} GB") for g in sizes])
        s_per_gb = secs / gb
        slope, intercept = np.polyfit(gb, s_per_gb, 1)
        t_slope, t_intercept = np.polyfit(gb, secs, 1)
        change = 100 * slope * (gb.max() - gb.min()) / s_per_gb.mean()
        per_gb[cache] = dict(zip([f"{g:g} GB" for g in sizes], s_per_gb.tolist(), strict=True))
        fits[cache] = {
            "s_per_gb_slope_per_gb": float(slope),
            "s_per_gb_intercept": float(intercept),
            "s_per_gb_change_pct_over_range": float(change),
            "seconds_vs_gb_slope": float(t_slope),
            "seconds_vs_gb_intercept": float(t_intercept),
        }
        print(f"\n{cache} page cache (median of {a.repeat}):")
        for g, x, s, q in zip(sizes, gb, secs, s_per_gb, strict=True):
            spread = t.stats()[cache][f"{g:g} GB"]["spread_pct"]
            print(
                f"  {g:4g} GB ({x:5.2f} GB): {s:7.2f} s  {q:5.2f} s/GB  ({1 / q * 1e3:4.0f} MB/s)"
                f"  spread {spread:3.0f}%"
            )
        print(
            f"  fit s/GB = {intercept:.3f} + {slope:+.4f} x GB: {change:+.1f}% over "
            f"{gb.min():.1f}..{gb.max():.1f} GB; seconds = {t_intercept:.2f} + {t_slope:.3f} x GB"
        )
    peak = {case: max(v.values()) for case, v in t.peak_rss.items()}
    print(
        "\npeak RSS per worker (largest worker): "
        + ", ".join(f"{k} {v / 1e9:.2f} GB" for k, v in peak.items())
    )
    rows = [
        text_row(
            "B5",
            f"time per GB, {gb.min():.1f} to {gb.max():.1f} GB",
            cache,
            f"{min(per_gb[cache].values()):.2f}..{max(per_gb[cache].values()):.2f} s/GB; "
            f"slope {fits[cache]['s_per_gb_slope_per_gb']:+.3f} s/GB per GB "
            f"({fits[cache]['s_per_gb_change_pct_over_range']:+.0f}% over the range)",
        )
        for cache in a.caches
    ]
    rows.append(rss_row("B5", t.peak_rss))
    doc = {
        "title": "scaling of the global mean with the data size",
        "summary": f"{', '.join(f'{g:g}' for g in sizes)} GB",
        "params": {"sizes_gb": sizes, "start": start, "workers": a.workers, "repeat": a.repeat},
        "data": {f"{g:g} GB": parts[g][2].__dict__ for g in sizes},
        "stats": t.stats(),
        "failed": t.failed,
        "seconds_per_gb": per_gb,
        "fit": fits,
        "peak_rss_bytes": t.peak_rss,
        "resident_before_cold_run": t.resident_before,
        "rows": rows,
    }
    write_result("B5", doc, quick=a.quick)
    return doc


if __name__ == "__main__":
    main()
