"""Threads of this process against worker processes for one recipe (the measurement behind
``pangeo-hpc.cluster.in-process-bytes``, ``pangeo_hpc/batch/pipeline/placement.py``).

Interleaved: dask's threaded scheduler with N threads and no cluster (what a run that reads
little uses now, ``pangeo_hpc/clusters/threads.py``), a distributed cluster of one worker
with N threads in this process (what it used before), then a local cluster of N worker
processes, each started, computing the recipe whole (no state cache) and closed, timed in
three parts. A benchmark, not a test: read the ratios, measured in the same run.

    python benchmarks/in_process.py [--recipe era5-sst-mean] [--start 2015-01] [--end 2019-12]
        [--data benchmarks/data/demo-1deg] [--workers 2] [--repeat 2]
"""

from __future__ import annotations

import argparse
import time

from benchmarks.support.paths import DATA


def once(spec: object, data: str, start: str, end: str, workers: int, how: str) -> str:
    from distributed import Client

    from pangeo_hpc.batch.pipeline.steps import compute, open_inputs
    from pangeo_hpc.clusters.start import local_cluster
    from pangeo_hpc.clusters.threads import ThreadClient

    inputs = open_inputs(spec, data=data, start=start, end=end)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    if how == "threads":
        cluster, client = None, ThreadClient(workers)
    else:
        cluster = local_cluster(workers=workers, processes=how == "processes")
        client = Client(cluster)
    with client:
        t1 = time.perf_counter()
        done = compute(inputs, client, cache=False)
        t2 = time.perf_counter()
    if cluster is not None:
        cluster.close()
    t3 = time.perf_counter()
    mb = (done.reads.bytes_read if done.reads else 0) / 1e6
    return (
        f"{how:17s} start {t1 - t0:5.2f} s  compute {t2 - t1:6.2f} s  close {t3 - t2:5.2f} s  "
        f"read {mb:.0f} MB: {mb / (t2 - t1):.0f} MB/s"
    )


def main() -> None:
    from pangeo_hpc.batch.chains.recipe_yaml import load

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--recipe", default="era5-sst-mean")
    p.add_argument("--data", default=str(DATA / "demo-1deg"))
    p.add_argument("--start", default="2015-01")
    p.add_argument("--end", default="2019-12")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeat", type=int, default=2)
    a = p.parse_args()
    spec = load(a.recipe)
    for _ in range(a.repeat):
        for how in ("threads", "in-process cluster", "processes"):
            print(once(spec, a.data, a.start, a.end, a.workers, how), flush=True)


if __name__ == "__main__":
    main()
