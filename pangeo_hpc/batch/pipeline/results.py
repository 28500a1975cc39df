"""The last step of a recipe run: the result file (``result.nc`` or ``result.zarr``), its
figure (``plot.png``), ``report.html`` (:mod:`pangeo_hpc.write.report`) and
``summary.json``, written together or not at all
(:func:`pangeo_hpc.write.outputs.atomic_dir`, or file by file into a mount point:
:func:`pangeo_hpc.write.in_place.fill_in_place`), from what
:mod:`pangeo_hpc.batch.pipeline.steps` opened and computed; and the summary as a person reads it
(:func:`summary_text`: the answer's table and what was read)."""

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
from pangeo_hpc.batch.chains.chain import FIRST
from pangeo_hpc.batch.chains.recipe_yaml import Recipe, title_of
from pangeo_hpc.batch.pipeline import provenance
from pangeo_hpc.batch.pipeline.answer_text import summary_text
from pangeo_hpc.batch.pipeline.headlines import headlines
from pangeo_hpc.batch.pipeline.icechunk_results import write_icechunk
from pangeo_hpc.batch.pipeline.steps import Computed, Inputs
from pangeo_hpc.errors import InputError, redact
from pangeo_hpc.recipes.cf_attrs import prepare_for_file
from pangeo_hpc.s3.options import S3Options, is_s3
from pangeo_hpc.storage import prepare_output
from pangeo_hpc.write.figures import plot_format as check_plot_format
from pangeo_hpc.write.figures import plot_result
from pangeo_hpc.write.guard import check_folder, folder_in
from pangeo_hpc.write.icechunk_out import check_repository
from pangeo_hpc.write.in_place import is_mount_point
from pangeo_hpc.write.outputs import write_json
from pangeo_hpc.write.records import file_records
from pangeo_hpc.write.report import REPORT, write_report
from pangeo_hpc.write.targets import Output, check_output, output_folder, where_in
from pangeo_hpc.write.writable import check_utf8, check_writable
from pangeo_hpc.write.zarr import write_zarr

FORMATS = ("netcdf", "zarr", "icechunk")


@dataclass
class RunResult:
    """What :func:`write_outputs` wrote (and :func:`~pangeo_hpc.batch.pipeline.execute.run_recipe`
    returns).

    Attributes
    ----------
    out : Path or str
        The output folder, or the ``s3://bucket/prefix`` whose ``summary.json`` names the
        run (:mod:`pangeo_hpc.write.s3_outputs`).
    summary : dict
        What ``summary.json`` holds: the answer, inputs, reads, timings, versions.
    result : xarray.Dataset
        The results, computed, as written to ``result.nc`` (or ``result.zarr``).
    files : str
        Where the run's files are: ``out``, or ``s3://bucket/prefix/RUN`` for an S3
        prefix; empty for a local folder (see :meth:`file`).

    Examples
    --------
    >>> from pangeo_hpc.batch import run_recipe
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> spec = load("era5-sst-mean")
    >>> run = run_recipe(spec, data="data/era5-demo", out="results/sst")  # doctest: +SKIP
    >>> run.out, run.summary["timings_s"]  # doctest: +SKIP
    """

    out: Output
    summary: dict[str, Any]
    result: xr.Dataset
    files: str = ""

    def file(self, name: str) -> str:
        """Where the output's file ``name`` is (``summary.json`` of an S3 prefix: its own).

        Parameters
        ----------
        name : str
            A file's name (``result.nc``, ``summary.json``).

        Returns
        -------
        str
            Its path or URL.

        Examples
        --------
        >>> import xarray as xr
        >>> from pangeo_hpc.batch.pipeline.results import RunResult
        >>> run = RunResult("results/sst", {}, xr.Dataset())
        >>> run.file("result.nc"), run.file("summary.json")
        ('results/sst/result.nc', 'results/sst/summary.json')
        """
        if name == "summary.json" or not self.files:
            return str(Path(self.out) / name) if not is_s3(self.out) else f"{self.out}/{name}"
        return f"{self.files}/{name}"


def check_format(fmt: str | None, spec: Recipe) -> str:
    """``fmt``, or the recipe's format; one of :data:`FORMATS`.

    Parameters
    ----------
    fmt : str or None
        The format asked for, or ``None``.
    spec : Recipe
        The recipe (its ``output.format:``).

    Returns
    -------
    str
        The format.

    Raises
    ------
    InputError
        If the format is not one of :data:`FORMATS`.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> from pangeo_hpc.batch.pipeline.results import check_format
    >>> spec = load("era5-sst-mean")
    >>> check_format(None, spec), check_format("zarr", spec)
    ('netcdf', 'zarr')
    >>> check_format("csv", spec)
    Traceback (most recent call last):
        ...
    pangeo_hpc.errors.InputError: format 'csv' must be netcdf, zarr or icechunk
    """
    fmt = fmt or spec.format
    if fmt not in FORMATS:
        raise InputError(f"format {fmt!r} must be netcdf, zarr or icechunk")
    return fmt


def result_folder(
    out: str | Path | None,
    spec: Recipe,
    root: str | Path,
    s3: S3Options | None = None,
    fmt: str = "netcdf",
) -> Output:
    """The output folder: ``out``, default ``<output.root>/<spec.name>``, checked to be new,
    empty or an earlier result of this package, never the data ``root``, named in UTF-8,
    and writable (its parent, or itself for a mount point, which is filled in place:
    :func:`~pangeo_hpc.write.in_place.fill_in_place`). The recipe's name is a label, never a
    path: the default folder lies inside ``output.root``. An ``s3://bucket/prefix`` is
    checked by :func:`~pangeo_hpc.write.s3_guard.check_prefix` (``s3``: its endpoint and
    credentials) and returned as its URL. With ``fmt="icechunk"`` the folder or prefix is
    the repository: new, empty or one of ours
    (:func:`~pangeo_hpc.write.icechunk_out.check_repository`).

    Parameters
    ----------
    out : str or Path or None
        The output folder or ``s3://`` prefix, or ``None``.
    spec : Recipe
        The recipe.
    root : str or Path
        The data read (the output may not be inside it, nor hold it).
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` output.
    fmt : str, optional
        ``netcdf``, ``zarr`` or ``icechunk``.

    Returns
    -------
    Path or str
        The folder, or the URL.

    Raises
    ------
    InputError
        If the output is the data or inside it, an existing folder this package did not
        write, not UTF-8, or not writable.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> from pangeo_hpc.batch.pipeline.results import result_folder
    >>> print(result_folder("results/sst", load("era5-sst-mean"), root="data/era5-demo"))
    results/sst
    """
    if out is None:
        out = folder_in(config.get("output.root"), spec.name, what="the recipe's name")
    s3 = None if s3 is None else s3.for_writing()  # --anon reads a public bucket only
    if fmt == "icechunk":  # committed to in place once it exists, else renamed into place
        if not is_s3(out):
            check_utf8(out)
        repo = check_repository(out, inputs=[root], s3=s3)
        if isinstance(repo, Path):
            check_writable(repo, in_place=repo.is_dir() and any(repo.iterdir()))
        return repo
    if is_s3(out):
        return check_output(str(out), kind="result", inputs=[root], s3=s3)
    check_utf8(out)
    path = check_folder(out, kind="result", inputs=[root])
    check_writable(path, in_place=is_mount_point(path))
    return path


def _summarise(
    inputs: Inputs, computed: Computed, timings: Mapping[str, float | None]
) -> dict[str, Any]:
    """The contents of ``summary.json`` but its outputs, Lustre stripes and write time."""
    spec, ds, root = inputs.spec, inputs.dataset, inputs.root
    nbytes = int(sum(ds[v].nbytes for v in spec.variables))
    compute_s = computed.seconds
    reads = None if computed.reads is None else computed.reads.as_dict()
    return {
        "recipe": spec.name,
        "steps": _steps_text(spec),
        "answer": headlines(computed.result),
        "inputs": {
            "data": redact(str(root)),
            "variables": list(spec.variables),
            "period": list(inputs.period),
            "access": ds.encoding["source_access"],
            "files": len(ds.encoding["source_files"]),
            "bytes_on_disk": ds.encoding["source_bytes"],
            "bytes_uncompressed": nbytes,
        },
        "reads": reads,
        "cluster": {
            k: computed.cluster.get(k) for k in ("kind", "profile", "workers", "jobs", "in_process")
        },
        "timings_s": {
            "open": round(float(timings.get("open", inputs.seconds) or 0.0), 3),
            "cluster_start": _rounded(timings.get("cluster_start")),
            "compute": round(compute_s, 3),
        },
        "warmup": warmup_summary(computed.warmup),
        "throughput_MB_per_s": throughput(reads, compute_s),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": {
            p: version(p) for p in ("pangeo-hpc", "xarray", "dask", "distributed", "h5py")
        },
        "host": platform.node(),
        "provenance": provenance.record(inputs, computed),
    }


def throughput(reads: Mapping[str, Any] | None, seconds: float) -> float | None:
    """MB per second of the bytes the run read (``reads["bytes_read"]``: as stored, counted
    by the reader), over the computation's ``seconds``; ``None`` when nothing was read (every
    state from the cache) or the reads were not counted. Files whose states came from the
    cache are not in it: they were not read.

    Parameters
    ----------
    reads : Mapping[str, Any] or None
        The ``reads`` of ``summary.json``, or ``None``.
    seconds : float
        The computation's seconds.

    Returns
    -------
    float or None
        MB/s, or ``None``.

    Examples
    --------
    >>> from pangeo_hpc.batch.pipeline.results import throughput
    >>> throughput({"bytes_read": 250_000_000}, seconds=2.0)  # MB/s
    125.0
    >>> throughput({"bytes_read": 0}, seconds=2.0) is None  # every state from the cache
    True
    """
    read = 0 if reads is None else reads.get("bytes_read", 0)
    return round(read / 1e6 / max(seconds, 1e-9), 1) if read else None


def _steps_text(spec: Recipe) -> dict[str, list[str]] | list[str]:
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
    plot_format: str | None = None,
    timings: Mapping[str, float | None] | None = None,
    started: float | None = None,
    extra: Mapping[str, Any] | None = None,
    s3: S3Options | None = None,
) -> RunResult:
    """Write ``result.nc`` (or ``result.zarr``), ``plot.png``, ``report.html`` and
    ``summary.json`` into ``out``, all together or not at all.

    Parameters
    ----------
    inputs, computed : Inputs, Computed
        From :func:`~pangeo_hpc.batch.pipeline.steps.open_inputs` and
        :func:`~pangeo_hpc.batch.pipeline.steps.compute`.
    out : str or Path, optional
        The folder; default ``<output.root>/<recipe name>``. It may replace only an
        earlier result of this package, never the data.
    fmt : {"netcdf", "zarr", "icechunk"}, optional
        Default: the recipe's ``format``. ``"icechunk"``: ``out`` is an Icechunk
        repository, and the result becomes one commit on its ``main`` whose metadata is the
        summary (no figure, no ``summary.json``:
        :mod:`~pangeo_hpc.batch.pipeline.icechunk_results`).
    plot_format : {"png", "svg", "pdf"}, optional
        The figure's format (default ``png``): ``plot.png``, ``plot.svg`` or ``plot.pdf``.
    timings : mapping, optional
        Seconds measured before: ``open`` (default the opening's) and ``cluster_start``
        (default ``None``: not measured), for ``summary.json``'s ``timings_s``.
    started : float, optional
        ``time.perf_counter()`` when the run began, for ``timings_s.total``; default: the
        sum of the parts measured (``write`` is this call's own time).
    extra : mapping, optional
        More entries for ``summary.json`` (a recipe over several datasets: ``datasets``
        and ``combine``).
    s3 : S3Options, optional
        Endpoint and credentials of an ``out`` on S3 (``s3://bucket/prefix``): the files go
        under a run prefix of their own, made visible by ``summary.json`` written last
        (:mod:`pangeo_hpc.write.s3_outputs`); default :meth:`S3Options.resolve`.

    Returns
    -------
    RunResult
        The folder, the summary as written and the result (with its attributes).

    Examples
    --------
    >>> from pangeo_hpc.batch import compute, open_inputs, write_outputs
    >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    >>> run = write_outputs(inputs, compute(inputs, client), out="results/sst")  # doctest: +SKIP
    """
    t0 = time.perf_counter()
    spec, root, result = inputs.spec, inputs.root, computed.result
    fmt = check_format(fmt, spec)
    plot_name = f"plot.{check_plot_format(plot_format)}"
    s3 = None if s3 is None else s3.for_writing()  # --anon reads a public bucket only
    out = result_folder(out, spec, root, s3, fmt)
    run, files = where_in(out) if fmt != "icechunk" else (None, str(out))
    summary = _summarise(inputs, computed, timings or {}) | dict(extra or {})
    period = inputs.period
    result.attrs.update(recipe=spec.name, source=redact(str(root)), period=" to ".join(period))
    result.attrs.update(provenance.file_attributes(summary["provenance"]))
    # CF for the file: Conventions, history, coordinate attributes, time bounds, encodings
    made_by = (
        f"{summary['created']}: {summary['provenance']['command']} "
        f"(pangeo-hpc {summary['versions']['pangeo-hpc']})"
    )
    title = title_of(spec.description) or spec.name
    written = prepare_for_file(result, history=made_by, title=title)
    if fmt == "icechunk":
        write_icechunk(
            written, summary, spec=spec, period=period, root=root, out=out, t0=t0,
            started=started, s3=s3,
        )  # fmt: skip
        return RunResult(out=out, summary=summary, result=result, files=files)
    # a mount point: in place; an s3:// prefix: uploaded, then its summary.json written
    with output_folder(out, kind="result", inputs=[root], s3=s3, run=run) as tmp:
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
        heading = f"{title}\n{spec.name}: data {period[0]} to {period[1]}"
        plot_result(result, tmp / plot_name, heading, view=spec.plot)
        # one page with the answer, the figure, the maps and the provenance (no network)
        write_report(
            tmp / REPORT,
            result,
            title=heading,
            lines=summary_text(summary),
            figure=tmp / plot_name,
            provenance=summary["provenance"],
        )
        summary["outputs"] = {
            "data": data_file,
            "plot": plot_name,
            "report": REPORT,
            "summary": "summary.json",
        }
        # as written: a later run replaces them only while every one is (write/records.py)
        summary["files"] = file_records(tmp, [data_file, plot_name, REPORT])
        took = summary["timings_s"]
        took["write"] = round(time.perf_counter() - t0, 3)
        if started is not None:
            took["total"] = round(time.perf_counter() - started, 3)
        else:
            took["total"] = round(sum(v for v in took.values() if v is not None), 3)
        write_json(tmp / "summary.json", summary)
    if run is not None:
        summary["run"] = run
    return RunResult(out=out, summary=summary, result=result, files=files)


def warmup_summary(report: Any) -> dict[str, Any] | None:
    """A warm-up's report (:class:`~pangeo_hpc.storage.warmup.WarmupReport`) as
    ``summary.json`` gives it; ``None`` without one.

    Parameters
    ----------
    report : Any
        A warm-up's report, or ``None``.

    Returns
    -------
    dict or None
        Its figures, or ``None``.

    Examples
    --------
    >>> from pangeo_hpc.batch.pipeline.results import warmup_summary
    >>> from pangeo_hpc.storage.warmup import WarmupReport
    >>> warmup_summary(WarmupReport("read", files=2, bytes=2_000_000_000, seconds=4.0))
    {'files': 2, 'bytes': 2000000000, 'seconds': 4.0, 'skipped': 0, 'failed': []}
    >>> warmup_summary(None) is None  # no warm-up asked for
    True
    """
    if report is None:
        return None
    return {
        "files": report.files,
        "bytes": report.bytes,
        "seconds": round(report.seconds, 3),
        "skipped": report.skipped,
        "failed": report.failed,
    }
