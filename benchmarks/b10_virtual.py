"""B10: B1's recipe (era5-sst-mean) reading NetCDF4 objects on S3 through Icechunk virtual
references, against the kerchunk indexes and against local disk (a benchmark, not a test).

Starts a SeaweedFS S3 server on loopback (tests/support/servers.py), uploads 1-degree daily demo
SST in the era5-pds layout, one field per HDF5 chunk (the chunks must tile each month's
time axis for one Zarr array to reference them: ``index --format icechunk`` refuses
others), builds both kinds of references (the one-time costs are reported), then runs
era5-sst-mean (``open_inputs`` + ``compute``, no state cache) on the platform's local
cluster, interleaved, ``--repeat`` times after one untimed warm-up run each:

* local: the era5-pds tree on local disk (page cache warm): the baseline;
* kerchunk: ``--data s3://...`` through the byte-range indexes (``index``);
* icechunk: a recipe whose ``store:`` is the repository ``index --format icechunk`` wrote.

Medians and the ratios icechunk / kerchunk and icechunk / local (times: above 1 is
slower) are printed and written to ``benchmarks/results/B10-virtual.json``, with the
machine's load average before and after (the machine may be shared).

    python benchmarks/b10_virtual.py [--months 24] [--repeat 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from benchmarks.support.paths import DATA, RESULTS

VAR = "sea_surface_temperature"
BUCKET = "era5-pds"


def tree(months: int) -> tuple[Path, str, str]:
    """1-degree daily demo SST from 2000-01, one field per HDF5 chunk (made once)."""
    from benchmarks.support.data import last_month
    from pangeo_hpc.demo import DemoSpec, generate

    start, end = "2000-01", last_month("2000-01", months)
    root = DATA / f"demo-1deg-fields-{months}"
    spec = DemoSpec(resolution=1.0, frequency="daily", start=start, end=end, seed=7)
    generate(root, replace(spec, hdf5_chunks=(1, 181, 360)))
    return root, start, end


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--months", type=int, default=24)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--workers", type=int, default=os.cpu_count())
    a = p.parse_args()

    import dask
    import yaml

    from benchmarks.support.cluster import local_client
    from benchmarks.support.results import machine
    from pangeo_hpc.batch.chains.recipe_yaml import find, from_dict
    from pangeo_hpc.batch.pipeline.steps import compute, open_inputs
    from pangeo_hpc.io.references import build_index
    from pangeo_hpc.io.s3_objects import objects_to_index
    from pangeo_hpc.io.virtual_refs import build_icechunk
    from pangeo_hpc.s3.options import S3Options
    from tests.support.servers import SeaweedFS, child_env, publish_tree

    root, start, end = tree(a.months)
    os.environ.clear()
    os.environ.update(child_env())  # no AWS_CA_BUNDLE
    work = Path(tempfile.mkdtemp(prefix="b10-virtual-"))
    dask.config.set({"pangeo-hpc.s3.index-cache": str(work / "index")})  # not the user's
    load_before = os.getloadavg()
    with SeaweedFS(work / "seaweedfs") as server:
        os.environ["AWS_ACCESS_KEY_ID"] = server.key
        os.environ["AWS_SECRET_ACCESS_KEY"] = server.secret
        publish_tree(server.storage_options(), root, BUCKET)
        opts = S3Options.resolve(endpoint_url=server.endpoint_url)
        url = f"s3://{BUCKET}"
        stamps = objects_to_index(url, opts, variable=VAR, start=start, end=end)
        stored = sum(s.size for s in stamps)
        with local_client(a.workers) as client:
            t = time.perf_counter()
            report = build_index(stamps, opts, client=client)
            kerchunk_build = time.perf_counter() - t
            repo = work / "sst.icechunk"
            virtual = build_icechunk(stamps, opts, repo, variable=VAR, source=url)
            print(report.summary())
            print(virtual.summary())
            doc = yaml.safe_load(find("era5-sst-mean").read_text())
            doc["dataset"] = {"variable": VAR, "store": str(repo)}
            on_repo = from_dict(doc)
            cases = {
                "local": lambda: open_inputs("era5-sst-mean", data=root, start=start, end=end),
                "kerchunk": lambda: open_inputs(
                    "era5-sst-mean", data=url, start=start, end=end, s3=opts
                ),
                "icechunk": lambda: open_inputs(on_repo, s3=opts),
            }
            times: dict[str, list[float]] = {k: [] for k in cases}
            answers: dict[str, float] = {}
            for rep in range(a.repeat + 1):  # the first: untimed warm-up
                order = list(cases)[rep % 3 :] + list(cases)[: rep % 3]
                for name in order:
                    t = time.perf_counter()
                    done = compute(cases[name](), client, cache=False)
                    dt = time.perf_counter() - t
                    answers[name] = float(done.result["global_mean"].values)
                    if rep:
                        times[name].append(dt)
                    print(f"  {'warm-up' if not rep else f'run {rep}'} {name:9s} {dt:6.2f} s")
            nbytes = cases["local"]().dataset[VAR].nbytes
    load_after = os.getloadavg()
    shutil.rmtree(work, ignore_errors=True)  # the server's data and the references
    med = {k: statistics.median(v) for k, v in times.items()}
    ratios = {
        "icechunk_over_kerchunk_time": med["icechunk"] / med["kerchunk"],
        "icechunk_over_local_time": med["icechunk"] / med["local"],
        "kerchunk_over_local_time": med["kerchunk"] / med["local"],
    }
    print(
        f"\nera5-sst-mean, {len(stamps)} files, {nbytes / 1e9:.2f} GB uncompressed "
        f"({stored / 1e9:.2f} GB stored), {a.workers} workers, median of {a.repeat}; "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after"
    )
    for k, v in med.items():
        print(f"  {k:9s} {v:6.2f} s  (spread {max(times[k]) - min(times[k]):4.2f} s)")
    print(f"  build: kerchunk {kerchunk_build:.1f} s, icechunk {virtual.seconds:.1f} s")
    for k, v in ratios.items():
        print(f"  {k:30s} {v:5.2f}x")
    assert len({round(v, 9) for v in answers.values()}) == 1, answers
    out = RESULTS / "B10-virtual.json"
    out.write_text(
        json.dumps(
            {
                "benchmark": "B10-virtual",
                "recipe": "era5-sst-mean",
                "files": len(stamps),
                "gb_uncompressed": nbytes / 1e9,
                "gb_stored": stored / 1e9,
                "workers": a.workers,
                "repeat": a.repeat,
                "seconds": times,
                "median_s": med,
                "ratios": ratios,
                "build_s": {"kerchunk": kerchunk_build, "icechunk": virtual.seconds},
                "load_average": {"before": load_before, "after": load_after},
                "machine": machine(),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"results: {out}")


if __name__ == "__main__":
    main()
