"""The last step of a recipe run: the result file (``result.nc`` or ``result.zarr``), its
figure (``plot.png``) and ``summary.json``, written together or not at all
(:func:`pangeo_hpc.write.outputs.atomic_dir`), from what
:mod:`pangeo_hpc.batch.steps` opened and computed."""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import xarray as xr

from pangeo_hpc import config
from pangeo_hpc.batch.chain import FIRST
from pangeo_hpc.batch.headlines import headlines
from pangeo_hpc.batch.recipe_yaml import Recipe
from pangeo_hpc.batch.steps import Computed, Inputs
from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.cf_attrs import prepare_for_file
from pangeo_hpc.storage import prepare_output
from pangeo_hpc.write.figures import plot_result
from pangeo_hpc.write.guard import check_folder
from pangeo_hpc.write.outputs import atomic_dir, write_json
from pangeo_hpc.write.zarr import write_zarr

FORMATS = ("netcdf", "zarr")


@dataclass
class RunResult:
    """What :func:`write_outputs` wrote (and :func:`~pangeo_hpc.batch.execute.run_recipe`
    returns)."""

    out: Path
    summary: dict[str, Any]
    result: xr.Dataset


def check_format(fmt: str | None, spec: Recipe) -> str:
    """``fmt``, or the recipe's format; one of :data:`FORMATS`."""
    fmt = fmt or spec.format
    if fmt not in FORMATS:
        raise InputError(f"format {fmt!r} must be netcdf or zarr")
    return fmt


def result_folder(out: str | Path | None, spec: Recipe, root: str | Path) -> Path:
    """The output folder: ``out``, default ``<output.root>/<spec.name>``, checked to be new,
    empty or an earlier result of this package, and never the data ``root``."""
    return check_folder(
        out if out is not None else Path(config.get("output.root")) / spec.name,
        kind="result",
        inputs=[root],
    )


def summarise(
    inputs: Inputs, computed: Computed, timings: Mapping[str, float | None]
) -> dict[str, Any]:
    """The contents of ``summary.json`` but its outputs, Lustre stripes and write time."""
    spec, ds, root = inputs.spec, inputs.dataset, inputs.root
    nbytes = int(sum(ds[v].nbytes for v in spec.variables))
    compute_s = computed.seconds
    return {
        "recipe": spec.name,
        "steps": steps_text(spec),
        "answer": headlines(computed.result),
        "inputs": {
            "data": str(root),
            "variables": list(spec.variables),
            "period": list(inputs.period),
            "access": ds.encoding["source_access"],
            "files": len(ds.encoding["source_files"]),
            "bytes_on_disk": ds.encoding["source_bytes"],
            "bytes_uncompressed": nbytes,
        },
        "reads": None if computed.reads is None else computed.reads.as_dict(),
        "cluster": {
            k: computed.cluster.get(k) for k in ("kind", "profile", "workers", "jobs", "in_process")
        },
        "timings_s": {
            "open": round(float(timings.get("open", inputs.seconds) or 0.0), 3),
            "cluster_start": _rounded(timings.get("cluster_start")),
            "compute": round(compute_s, 3),
        },
        "warmup": None
        if computed.warmup is None
        else {
            "files": computed.warmup.files,
            "bytes": computed.warmup.bytes,
            "seconds": round(computed.warmup.seconds, 3),
            "skipped": computed.warmup.skipped,
            "failed": computed.warmup.failed,
        },
        "throughput_MB_per_s": round(nbytes / 1e6 / max(compute_s, 1e-9), 1),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": {
            p: version(p) for p in ("pangeo-hpc", "xarray", "dask", "distributed", "h5py")
        },
        "host": platform.node(),
    }


def steps_text(spec: Recipe) -> dict[str, list[str]] | list[str]:
    """The recipe's chain as written, one ``name {options}`` string per step: a list, or
    the shared steps and each result's own (``{"steps": [...], "results.NAME": [...]}``)."""

    def text(steps: Any) -> list[str]:
        return [f"{s.name} {json.dumps(_plain(s.options), default=str)}" for s in steps]

    if not spec.results:
        return text(spec.steps)
    return {"steps": text(spec.steps)} | {f"results.{k}": text(v) for k, v in spec.results.items()}


def _plain(options: Mapping[str, Any]) -> Any:
    """Options as written (a step's single first value unwrapped)."""
    return options[FIRST] if FIRST in options else options


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)


def write_outputs(
    inputs: Inputs,
    computed: Computed,
    *,
    out: str | Path | None = None,
    fmt: str | None = None,
    timings: Mapping[str, float | None] | None = None,
    started: float | None = None,
) -> RunResult:
    """Write ``result.nc`` (or ``result.zarr``), ``plot.png`` and ``summary.json`` into
    ``out``, all together or not at all.

    Parameters
    ----------
    inputs, computed : Inputs, Computed
        From :func:`~pangeo_hpc.batch.steps.open_inputs` and
        :func:`~pangeo_hpc.batch.steps.compute`.
    out : str or Path, optional
        The folder; default ``<output.root>/<recipe name>``. It may replace only an
        earlier result of this package, never the data.
    fmt : {"netcdf", "zarr"}, optional
        Default: the recipe's ``format``.
    timings : mapping, optional
        Seconds measured before: ``open`` (default the opening's) and ``cluster_start``
        (default ``None``: not measured), for ``summary.json``'s ``timings_s``.
    started : float, optional
        ``time.perf_counter()`` when the run began, for ``timings_s.total``; default: the
        sum of the parts measured (``write`` is this call's own time).

    Returns
    -------
    RunResult
        The folder, the summary as written and the result (with its attributes).
    """
    t0 = time.perf_counter()
    spec, root, result = inputs.spec, inputs.root, computed.result
    fmt = check_format(fmt, spec)
    out = result_folder(out, spec, root)
    summary = summarise(inputs, computed, timings or {})
    period = inputs.period
    result.attrs.update(recipe=spec.name, source=str(root), period=" to ".join(period))
    # CF for the file: Conventions, history, coordinate attributes, time bounds, encodings
    made_by = (
        f"{summary['created']}: python -m pangeo_hpc.run {spec.name} "
        f"(pangeo-hpc {summary['versions']['pangeo-hpc']}) on {', '.join(spec.variables)} "
        f"of {root}, {period[0]} to {period[1]}"
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
        # the recipe's words, then what this run read (a recipe's description may name
        # its default period: a run with --start/--end read another)
        plot_result(
            result, tmp / "plot.png", f"{title}\n{spec.name}: data {period[0]} to {period[1]}"
        )
        summary["outputs"] = {"data": data_file, "plot": "plot.png", "summary": "summary.json"}
        took = summary["timings_s"]
        took["write"] = round(time.perf_counter() - t0, 3)
        if started is not None:
            took["total"] = round(time.perf_counter() - started, 3)
        else:
            took["total"] = round(sum(v for v in took.values() if v is not None), 3)
        write_json(tmp / "summary.json", summary)
    return RunResult(out=out, summary=summary, result=result)
