"""Benchmark: warming up a lazily loading mount, and what it saves a recipe (not a test).

A SeaweedFS S3 server holds demo data in the bucket era5-pds; rclone mounts it with a full
VFS cache and ``--bwlimit`` (S3-like cold reads), as FSx for Lustre imports a bucket.

Every run below starts from a **fresh mount with an empty cache** and, where a recipe
runs, a **fresh local cluster** (started before the clock starts), so that no variant
inherits another's hydrated files, the mount's metadata cache or started workers. The
variants are interleaved (their order rotated each repetition), ``--repeat`` times:

* ``xargs``: AWS's one-liner, ``find DIR -type f -print0 | xargs -0 -n 1 -P N cat``;
* ``warmup``: ``pangeo_hpc.storage.warmup`` with N threads;
* ``recipe cold``: the SST global mean on the cold mount, without warm-up;
* ``warmup + recipe``: ``warmup``, then the same recipe; its two parts are timed too.

The comparisons: ``warmup`` against ``xargs`` (the same work); the recipe after a warm-up
against the recipe on a cold mount (what warm-up saves the recipe itself); and warm-up +
recipe against the cold recipe (whether warming first pays off end to end). The peak RSS
of the workers during the recipe is reported too.

    python benchmarks/warmup.py [--years 2] [--bwlimit 40M] [--threads 8] [--repeat 3]
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.support.cluster import local_client, worker_pids
from benchmarks.support.memory import PeakRSS
from benchmarks.support.paths import DATA
from benchmarks.support.results import write_result
from benchmarks.support.rows import print_rows, ratio_row, rss_row

VARIANTS = ("xargs", "warmup", "recipe cold", "warmup + recipe")


def sst_mean(root: Path, start: str, end: str) -> float:
    from pangeo_hpc.io.era5 import open_era5
    from pangeo_hpc.recipes import global_mean

    sst = open_era5(source=root, start=start, end=end).sea_surface_temperature
    return float(global_mean(sst).mean().compute())


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import argparse

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--years", type=int, default=2)
    p.add_argument("--bwlimit", default="40M", help="rclone --bwlimit (bytes/s)")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--repeat", type=int, default=3, help="runs of each variant (>= 3)")
    p.add_argument("--quick", action="store_true", help="one year, one run: checks the wiring")
    a = p.parse_args(argv)
    if a.quick:
        a.years, a.repeat = 1, 1

    from pangeo_hpc.demo import DemoSpec, generate
    from pangeo_hpc.storage import hydration, warmup
    from tests.support.servers import RcloneMount, SeaweedFS, child_env, publish_tree

    start, end = "2000-01", f"{1999 + a.years}-12"
    data = DATA / "era5-1deg"
    generate(data, DemoSpec(resolution=1.0, start=start, end=end))
    work = Path(tempfile.mkdtemp(prefix="pangeo-hpc-bench-"))
    src = work / "src"
    for year in range(2000, 2000 + a.years):
        shutil.copytree(data / str(year), src / str(year))
    times: dict[str, list[float]] = {v: [] for v in [*VARIANTS, "warmup part", "recipe part"]}
    peaks: dict[str, dict[str, int]] = {}
    answers: list[float] = []
    total = sum(f.stat().st_size for f in src.rglob("*") if f.is_file())
    try:
        with SeaweedFS(work / "weed") as server:
            publish_tree(server.storage_options(), src, "era5-pds")
            n = 0

            @contextlib.contextmanager
            def fresh_mount() -> Iterator[Path]:
                nonlocal n
                n += 1
                with RcloneMount.of(
                    server,
                    "era5-pds",
                    work / f"mnt-{n}",
                    work / f"cache-{n}",
                    bwlimit=a.bwlimit,
                ) as m:
                    yield m.mountpoint
                shutil.rmtree(work / f"cache-{n}", ignore_errors=True)

            def xargs(mnt: Path) -> None:
                t = time.perf_counter()
                subprocess.run(
                    f"find {mnt} -type f -print0 | xargs -0 -n 1 -P {a.threads} cat > /dev/null",
                    shell=True,
                    check=True,
                    env=child_env(),
                )
                times["xargs"].append(time.perf_counter() - t)

            def warm_only(mnt: Path) -> None:
                report = warmup(mnt, workers=a.threads)
                times["warmup"].append(report.seconds)
                if hydration(mnt).counts["loaded"] != report.files:
                    raise SystemExit(f"warmup left files of {mnt} unloaded")

            def recipe(mnt: Path, *, warm_first: bool) -> None:
                with local_client() as client:  # started before the clock starts
                    with PeakRSS(worker_pids(client)) as rss:
                        t = time.perf_counter()
                        if warm_first:
                            warmup(mnt, workers=a.threads)
                            times["warmup part"].append(time.perf_counter() - t)
                        r = time.perf_counter()
                        answers.append(sst_mean(mnt, start, end))
                        done = time.perf_counter()
                    name = "warmup + recipe" if warm_first else "recipe cold"
                    times[name].append(done - t)
                    if warm_first:
                        times["recipe part"].append(done - r)
                    for w, b in rss.peak.items():
                        peak = peaks.setdefault(name, {})
                        peak[w] = max(peak.get(w, 0), b)

            run: dict[str, Callable[[Path], None]] = {
                "xargs": xargs,
                "warmup": warm_only,
                "recipe cold": lambda m: recipe(m, warm_first=False),
                "warmup + recipe": lambda m: recipe(m, warm_first=True),
            }
            for rep in range(a.repeat):
                order = VARIANTS[rep % len(VARIANTS) :] + VARIANTS[: rep % len(VARIANTS)]
                for name in order:
                    with fresh_mount() as mnt:  # nothing looks at it before the variant
                        run[name](mnt)
                    print(f"  run {rep + 1} {name:16s} {times[name][-1]:7.2f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if len(set(answers)) != 1:
        raise SystemExit(f"the recipe answered differently on its runs: {answers}")
    return report(a, times, peaks, total)


def report(
    a: Any, times: dict[str, list[float]], peaks: dict[str, dict[str, int]], total: int
) -> dict[str, Any]:
    med = {k: statistics.median(v) for k, v in times.items() if v}
    mb = total / 1e6
    print(f"\n{mb:.0f} MB over rclone --bwlimit {a.bwlimit}, {a.threads} parallel readers;")
    print(f"medians of {a.repeat} runs, each on a fresh mount (and a fresh cluster for recipes)")
    for k, v in times.items():
        print(f"  {k:18s} {med[k]:7.2f} s  (runs {', '.join(f'{x:.2f}' for x in v)})")
    ratios = {
        "xargs / warmup": med["xargs"] / med["warmup"],
        "recipe cold / recipe after warmup": med["recipe cold"] / med["recipe part"],
        "recipe cold / (warmup + recipe)": med["recipe cold"] / med["warmup + recipe"],
    }
    for k, r in ratios.items():
        print(f"  {k:36s} {r:5.2f}x")
    rows = [
        ratio_row(
            "warm-up",
            "warmup vs find | xargs cat",
            "cold",
            med["warmup"],
            med["xargs"],
            f"find | xargs -P {a.threads} cat",
            None,
        ),
        ratio_row(
            "warm-up",
            "recipe after warmup vs on a cold mount (what warm-up saves the recipe)",
            "cold",
            med["recipe part"],
            med["recipe cold"],
            "recipe on a cold mount",
            None,
        ),
        ratio_row(
            "warm-up",
            "warmup + recipe vs recipe on a cold mount (end to end)",
            "cold",
            med["warmup + recipe"],
            med["recipe cold"],
            "recipe on a cold mount",
            None,
        ),
        rss_row("warm-up", peaks),
    ]
    print_rows(rows)
    doc = {
        "title": "warm-up of a lazily loading mount",
        "summary": f"{mb:.0f} MB, rclone --bwlimit {a.bwlimit}",
        "params": {
            "years": a.years,
            "bwlimit": a.bwlimit,
            "threads": a.threads,
            "repeat": a.repeat,
        },
        "bytes": total,
        "runs_s": times,
        "median_s": med,
        "ratios": ratios,
        "peak_rss_bytes": peaks,
        "rows": rows,
    }
    write_result("warmup", doc, quick=a.quick)
    return doc


if __name__ == "__main__":
    main()
