"""Run one recipe end to end: open, start the cluster, compute, write outputs."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import xarray as xr

from pangeo_hpc import config
from pangeo_hpc.batch import chains
from pangeo_hpc.batch.recipe_yaml import Recipe
from pangeo_hpc.clusters import profiles
from pangeo_hpc.clusters.start import kind_of, running_cluster
from pangeo_hpc.errors import InputError
from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.recipes.cf_attrs import prepare_for_file
from pangeo_hpc.s3.options import S3Options, is_s3
from pangeo_hpc.storage import prepare_output
from pangeo_hpc.write.figures import PLOTS
from pangeo_hpc.write.guard import check_folder
from pangeo_hpc.write.outputs import atomic_dir, write_json
from pangeo_hpc.write.zarr import write_zarr


@dataclass
class RunResult:
    """What :func:`run_recipe` made."""

    out: Path
    summary: dict[str, Any]
    result: xr.Dataset


def run_recipe(
    spec: Recipe,
    *,
    data: str | Path | None = None,
    start: str | None = None,
    end: str | None = None,
    cluster: str = "local",
    profile: str | None = None,
    workers: int | None = None,
    jobs: int | None = None,
    adapt: tuple[int, int] | None = None,
    batch: dict[str, Any] | None = None,
    warm_inputs: bool = False,
    out: str | Path | None = None,
    fmt: str | None = None,
    progress: Callable[[Any], None] | None = None,
    log: Any = print,
    s3: S3Options | None = None,
    index: str | None = None,
) -> RunResult:
    """Run ``spec`` and write ``result.nc`` (or ``.zarr``), ``plot.png`` and ``summary.json``.

    Everything the user typed is checked before a cluster starts; the outputs appear in
    ``out`` (default ``<output.root>/<spec.name>``) all together or not at all. ``cluster``,
    ``profile``, ``workers`` (local), ``jobs`` or ``adapt`` and ``batch`` (profile overrides such as
    ``{"walltime": "00:30:00"}``) go to :func:`pangeo_hpc.clusters.start.running_cluster`.
    ``warm_inputs`` reads the input files through once on the workers before computing
    (lazily loaded file systems: FSx for Lustre, rclone mounts); on Lustre the output
    folder is striped for the result's size. ``s3`` and ``index`` apply to ``s3://`` data
    (see :func:`pangeo_hpc.io.era5.open_era5`).
    """
    t0 = time.perf_counter()
    fmt = fmt or spec.format
    if fmt not in ("netcdf", "zarr"):
        raise InputError(f"format {fmt!r} must be netcdf or zarr")
    site = profiles.resolve(profile) if profile and profile != "auto" else {}
    root = data or site.get("data_root") or config.get("data.root")
    # the outputs may replace only an earlier result of this package, never the data
    out = check_folder(
        out if out is not None else Path(config.get("output.root")) / spec.name,
        kind="result",
        inputs=[root],
    )
    if warm_inputs and is_s3(str(root)):
        raise InputError(
            f"warm_inputs=True reads files of a lazily loaded file system; {root!r} is read "
            "from S3 directly: drop warm_inputs=True",
            param="warm_inputs",
        )
    # with index="build", check the inputs now and build the indexes on the workers later
    build_first = is_s3(str(root)) and config.get("s3.index", index) == "build"
    span = (start or spec.start, end or spec.end)
    ds = open_era5(
        spec.variable, *span, source=root, s3=s3, index="never" if build_first else index
    )
    lazy = chains.build(spec.chain, ds, spec.variable, spec.options)
    t_open = time.perf_counter()
    da = ds[spec.variable]
    started = running_cluster(
        cluster,  # type: ignore[arg-type]
        profile=profile,
        workers=workers,
        jobs=jobs,
        adapt=adapt,
        **(batch or {}),
    )
    with started as (cl, client):
        n_workers = len(client.scheduler_info()["workers"])
        log(f"cluster: {kind_of(cl)}, {n_workers} workers, dashboard {cl.dashboard_link}")
        if build_first:  # open_era5 builds missing indexes on this client's workers
            ds = open_era5(spec.variable, *span, source=root, s3=s3, index="build")
            lazy = chains.build(spec.chain, ds, spec.variable, spec.options)
            da = ds[spec.variable]
        warm = None
        if warm_inputs:
            from pangeo_hpc.storage import warmup

            warm = warmup(root, files=ds.encoding["source_files"], client=client)
            log(warm.summary())
        t_cluster = time.perf_counter()
        future = client.compute(lazy)
        if progress is not None:
            progress(future)
        result = future.result()
        t_compute = time.perf_counter()
    answer = chains.answer(spec.chain, result)
    period = (str(da[da.dims[0]].values[0])[:10], str(da[da.dims[0]].values[-1])[:10])
    summary = {
        "recipe": spec.name,
        "chain": spec.chain,
        "answer": answer,
        "inputs": {
            "data": str(root),
            "variable": spec.variable,
            "period": list(period),
            "access": ds.encoding["source_access"],
            "files": len(ds.encoding["source_files"]),
            "bytes_on_disk": ds.encoding["source_bytes"],
            "bytes_uncompressed": int(da.nbytes),
        },
        "cluster": {"kind": kind_of(cl), "profile": profile, "workers": n_workers, "jobs": jobs},
        "timings_s": {
            "open": round(t_open - t0, 3),
            "cluster_start": round(t_cluster - t_open, 3),
            "compute": round(t_compute - t_cluster, 3),
        },
        "warmup": None
        if warm is None
        else {
            "files": warm.files,
            "bytes": warm.bytes,
            "seconds": round(warm.seconds, 3),
            "skipped": warm.skipped,
            "failed": warm.failed,
        },
        "throughput_MB_per_s": round(da.nbytes / 1e6 / max(t_compute - t_cluster, 1e-9), 1),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": {
            p: version(p) for p in ("pangeo-hpc", "xarray", "dask", "distributed", "h5py")
        },
        "host": platform.node(),
    }
    result.attrs.update(recipe=spec.name, source=str(root), period=" to ".join(period))
    # CF for the file: Conventions, history, coordinate attributes, time bounds, encodings
    made_by = (
        f"{summary['created']}: python -m pangeo_hpc.run {spec.name} (chain {spec.chain}, "
        f"pangeo-hpc {summary['versions']['pangeo-hpc']}) on {spec.variable} of {root}, "
        f"{period[0]} to {period[1]}"
    )
    title = spec.description.splitlines()[0] if spec.description else spec.name
    written = prepare_for_file(result, history=made_by, title=title)
    with atomic_dir(out, kind="result", inputs=[root]) as tmp:
        stripes = prepare_output(tmp, int(result.nbytes))
        if stripes:
            summary["lustre_stripes"] = stripes
        data_file = "result.nc" if fmt == "netcdf" else "result.zarr"
        if fmt == "netcdf":
            written.to_netcdf(tmp / data_file)
        else:
            write_zarr(written, tmp / data_file)
        PLOTS[spec.chain](result, tmp / "plot.png", spec.name)
        summary["outputs"] = {"data": data_file, "plot": "plot.png", "summary": "summary.json"}
        summary["timings_s"]["write"] = round(time.perf_counter() - t_compute, 3)
        summary["timings_s"]["total"] = round(time.perf_counter() - t0, 3)
        write_json(tmp / "summary.json", summary)
    return RunResult(out=out, summary=summary, result=result)
