"""Benchmark: warming up a lazily loading mount, and what it saves a recipe (not a test).

A SeaweedFS S3 server holds demo data in the bucket era5-pds; rclone mounts it with a full
VFS cache and ``--bwlimit`` (S3-like cold reads), as FSx for Lustre imports a bucket. In one
run, each on a fresh mount and cache:

* AWS's one-liner, ``find DIR -type f -print0 | xargs -0 -n 1 -P N cat > /dev/null``;
* ``pangeo_hpc.storage.warmup`` with N threads;
* the SST global mean on cold files, then again on the files it warmed.

    python benchmarks/warmup.py [--years 2] [--bwlimit 40M] [--threads 8]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))


def sst_mean(root: Path, start: str, end: str) -> float:
    from pangeo_hpc.era5 import open_era5
    from pangeo_hpc.recipes import global_mean

    sst = open_era5(source=root, start=start, end=end).sea_surface_temperature
    return float(global_mean(sst).mean().compute())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--years", type=int, default=2)
    p.add_argument("--bwlimit", default="40M", help="rclone --bwlimit (bytes/s)")
    p.add_argument("--threads", type=int, default=8)
    a = p.parse_args()

    from distributed import Client
    from servers import RcloneMount, SeaweedFS, child_env, publish_tree

    from pangeo_hpc.cluster import get_cluster
    from pangeo_hpc.demo import DemoSpec, generate
    from pangeo_hpc.storage import hydration, warmup

    start, end = "2000-01", f"{1999 + a.years}-12"
    data = HERE / "data" / "era5-1deg"
    generate(data, DemoSpec(resolution=1.0, start=start, end=end))
    work = Path(tempfile.mkdtemp(prefix="pangeo-hpc-bench-"))
    src = work / "src"
    for year in range(2000, 2000 + a.years):
        shutil.copytree(data / str(year), src / str(year))
    results: dict = {"bwlimit": a.bwlimit, "threads": a.threads}
    try:
        with SeaweedFS(work / "weed") as server:
            publish_tree(server.storage_options(), src, "era5-pds")

            def mount(name: str) -> RcloneMount:
                return RcloneMount.of(
                    server,
                    "era5-pds",
                    work / f"{name}-mnt",
                    work / f"{name}-cache",
                    bwlimit=a.bwlimit,
                )

            with mount("xargs") as m:
                total = hydration(m.mountpoint).bytes_total
                t = time.perf_counter()
                subprocess.run(
                    f"find {m.mountpoint} -type f -print0 | xargs -0 -n 1 -P "
                    f"{a.threads} cat > /dev/null",
                    shell=True,
                    check=True,
                    env=child_env(),
                )
                results["xargs_s"] = time.perf_counter() - t
            with mount("warmup") as m:
                report = warmup(m.mountpoint, workers=a.threads)
                results["warmup_s"] = report.seconds
                assert hydration(m.mountpoint).counts["loaded"] == report.files
            with mount("recipe") as m, get_cluster("local") as cluster, Client(cluster):
                t = time.perf_counter()
                cold = sst_mean(m.mountpoint, start, end)
                results["recipe_cold_s"] = time.perf_counter() - t
                t = time.perf_counter()
                warm = sst_mean(m.mountpoint, start, end)
                results["recipe_warm_s"] = time.perf_counter() - t
                assert cold == warm
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["bytes"] = total
    mb = total / 1e6
    print(f"\n{mb:.0f} MB over rclone --bwlimit {a.bwlimit}, {a.threads} parallel readers")
    print(
        f"find | xargs -P {a.threads} cat : {results['xargs_s']:6.2f} s "
        f"({mb / results['xargs_s']:.0f} MB/s)"
    )
    print(
        f"pangeo-hpc warmup      : {results['warmup_s']:6.2f} s "
        f"({mb / results['warmup_s']:.0f} MB/s)  ratio {results['xargs_s'] / results['warmup_s']:.2f}x"
    )
    print(f"recipe on cold files   : {results['recipe_cold_s']:6.2f} s")
    print(
        f"recipe on warm files   : {results['recipe_warm_s']:6.2f} s  "
        f"ratio cold/warm {results['recipe_cold_s'] / results['recipe_warm_s']:.1f}x"
    )
    out = HERE / "results" / "warmup.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written {out}")


if __name__ == "__main__":
    main()
