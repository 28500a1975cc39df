"""Verbs for data and recipes: run (or just RECIPE), list, demo-data, convert."""

from __future__ import annotations

import argparse
from typing import Any

from pangeo_hpc.cli.common import (
    Verb,
    add_cluster_args,
    add_s3_args,
    batch_options_from,
    positive_int,
    running_cluster_from,
    s3_options_from,
)
from pangeo_hpc.cli.progress import step_progress
from pangeo_hpc.errors import InputError


def _demo_data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        required=True,
        help="root folder of the tree to write, or s3://bucket/prefix (the whole tree as one "
        "run under the prefix; read it with the --data the verb prints)",
    )
    p.add_argument("--start", help="first month, YYYY-MM (default config demo.start)")
    p.add_argument("--end", help="last month, YYYY-MM (default config demo.end)")
    p.add_argument("--resolution", type=float, help="degrees (1.0 demo, 0.25 as ERA5)")
    p.add_argument("--frequency", choices=("daily", "hourly"))
    p.add_argument("--seed", type=int)
    p.add_argument("--trend", type=float, help="warming in K per decade")
    p.add_argument(
        "--variables",
        help="'all' or a comma list of sea_surface_temperature, air_temperature_at_2_metres, "
        "precipitation_amount_1hour_Accumulation (always hourly), eastward_wind_at_10_metres, "
        "northward_wind_at_10_metres (default config demo.variables: the SST)",
    )
    p.add_argument("--workers", type=positive_int, help="processes (default: one per core)")
    p.add_argument("--overwrite", action="store_true", help="rewrite existing months")
    p.add_argument(
        "--model",
        action="store_true",
        help="also write a CMIP-like model's tas (2.5 degrees, noleap, yearly files under "
        "OUT/cmip) with a known bias against the 2 m temperature (recipe model-vs-era5-t2m)",
    )
    add_s3_args(p)


def _demo_data(a: argparse.Namespace) -> int:
    from pangeo_hpc.demo import DemoSpec, generate
    from pangeo_hpc.s3.options import is_s3

    spec = DemoSpec(
        resolution=a.resolution,
        frequency=a.frequency,
        start=a.start,
        end=a.end,
        seed=a.seed,
        trend=a.trend,
        variables=a.variables,
    )

    s3_options_from(a, None, a.out)  # the flags need an s3:// --out
    if is_s3(a.out):
        return _demo_data_to_s3(a, spec)
    files = generate(
        a.out,
        spec,
        workers=a.workers,
        overwrite=a.overwrite,
        progress=step_progress("demo-data", "months written"),
    )
    names = sorted({f.stem for f in files})
    print(f"demo-data: {len(files)} monthly files in {a.out} ({', '.join(names)})")
    if a.model:
        from pangeo_hpc.demo.model import write_model

        written = write_model(a.out, spec)
        print(f"demo-data: {len(written)} yearly model files in {written[0].parent}")
    return 0


def _demo_data_to_s3(a: argparse.Namespace, spec: Any) -> int:
    """``demo-data --out s3://...``: the whole tree written in a local staging folder, then
    uploaded as one run under the prefix, made visible by its manifest
    (:func:`pangeo_hpc.write.targets.output_folder`); a tree is replaced whole, never
    filled month by month, so ``--overwrite`` changes nothing here."""
    from pangeo_hpc.demo import generate
    from pangeo_hpc.write.targets import output_folder, where_in

    if a.anon:
        raise InputError(f"--anon: writing {a.out!r} needs credentials: drop --anon")
    opts = s3_options_from(a, None, out=a.out)
    run, location = where_in(a.out)
    # the prefix is checked before anything is made, and again before its manifest
    with output_folder(a.out, kind="demo", s3=opts, run=run) as tree:
        files = generate(
            tree, spec, workers=a.workers, progress=step_progress("demo-data", "months written")
        )
        if a.model:
            from pangeo_hpc.demo.model import write_model

            write_model(tree, spec)
    names = sorted({f.stem for f in files})
    print(f"demo-data: {len(files)} monthly files in {location} ({', '.join(names)})")
    print(f"demo-data: read it with --data {location}")
    return 0


def _list(a: argparse.Namespace) -> int:
    from pangeo_hpc.batch.chains.recipe_yaml import available, summary_line

    for name, path in available().items():
        period, first = summary_line(path)
        print(f"{name:24s} {period:16s} {first}")
    return 0


def _run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipe", help="the recipe's name (the list verb shows them) or YAML file")
    p.add_argument(
        "--data",
        help="root of the era5-pds tree: folder or s3://bucket/prefix (default config data.root)",
    )
    p.add_argument("--start", help="first month, YYYY-MM (default: the recipe's)")
    p.add_argument("--end", help="last month, YYYY-MM (default: the recipe's)")
    add_cluster_args(p)
    p.add_argument("--out", help="output folder or s3://bucket/prefix (default results/RECIPE)")
    p.add_argument(
        "--format",
        choices=("netcdf", "zarr", "icechunk"),
        help="result format; icechunk: --out is an Icechunk repository, one commit per run",
    )
    p.add_argument(
        "--plot-format",
        choices=("png", "svg", "pdf"),
        help="the figure's format: plot.png (default), plot.svg or plot.pdf",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--json",
        action="store_true",
        help="the answer as one line RECIPE: {JSON} (summary.json's answer) instead of a table",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="run whole: neither reuse nor save the input files' partial states",
    )
    p.add_argument(
        "--warmup",
        action="store_true",
        help="read the input files through on the workers first (FSx, rclone)",
    )
    p.add_argument(
        "--budget",
        help="refuse the run if its predicted cost may pass this, and stop it (states "
        "saved, exit 3) when its jobs have spent it: dollars (5USD) or node-hours (2h, "
        "90min, 600s); needs a calibration of the recipe on this cluster",
    )
    add_s3_args(p, index=True)


#: the run's flags that only change what is printed, or that the key holds otherwise
_NOT_KEYED = ("run", "verb", "recipe", "data", "start", "end", "out", "format", "plot_format",
              "no_progress", "json", "no_cache")  # fmt: skip


def _run(a: argparse.Namespace) -> int:
    from pangeo_hpc.batch.chains.recipe_yaml import find, from_dict, read_yaml
    from pangeo_hpc.batch.pipeline.reuse import default_out, read_from, run_key, served
    from pangeo_hpc.inputs.budget import parse_budget

    # an unknown recipe, a recipe that is no YAML or too large, a bad budget: refused
    # before the recipe functions, xarray and dask are imported
    path = find(a.recipe)
    doc = read_yaml(path)
    budget = None if a.budget is None else parse_budget(a.budget, name="--budget")
    # the same run into the same folder, nothing changed: its answer, without the
    # scientific stack (batch/pipeline/reuse.py); --no-cache computes it again
    key = None
    if a.profile is None and not (isinstance(doc, dict) and "datasets" in doc):
        options = {k: v for k, v in vars(a).items() if k not in _NOT_KEYED}
        key = run_key(doc, path, data=a.data, start=a.start, end=a.end, fmt=a.format,
                      plot_format=a.plot_format, options=options)  # fmt: skip
    out = a.out if a.out is not None else default_out(doc)
    before = None if a.no_cache else served(out, key)
    if before is not None:
        return _print_served(a, before, out)
    if key is not None and not a.no_cache:  # the same run into another folder: copied
        from pangeo_hpc.batch.pipeline.result_copies import copy_earlier

        name = str(doc.get("name")) if isinstance(doc, dict) else "?"
        copied = copy_earlier(key, out, inputs=[read_from(doc, a.data)], recipe=name)
        if copied is not None:
            return _print_served(a, copied[1], out, source=copied[0])
    from pangeo_hpc.batch.pipeline.results import summary_text

    if isinstance(doc, dict) and "datasets" in doc:  # several datasets: multi_yaml
        run = _run_multi(a, doc, path, budget)
    else:
        run = _run_one(a, from_dict(doc, path), budget, key)
    print("\n".join(summary_text(run.summary, as_json=a.json)))
    outputs = run.summary["outputs"]
    if "snapshot" in outputs:  # --format icechunk: a commit, no files
        said = f" (no new commit: {outputs['unchanged']})" if "unchanged" in outputs else ""
        print(f"icechunk: {outputs['data']} branch {outputs['branch']} snapshot "
              f"{outputs['snapshot']}{said}")  # fmt: skip
        return 0
    print(f"plot: {run.file(outputs['plot'])}")
    print(f"report: {run.file(outputs['report'])} (open it in a browser)")
    data = run.file(run.summary["outputs"]["data"])
    print(f"data: {data}   summary: {run.file('summary.json')}")
    return 0


def _print_served(
    a: argparse.Namespace, summary: dict[str, Any], out: Any, source: Any = None
) -> int:
    """The lines a run prints, from the ``summary.json`` of the result it reused (in
    ``out``, or copied there from ``source``)."""
    from pathlib import Path

    from pangeo_hpc.batch.pipeline.answer_text import summary_text

    where = f"{out}" if source is None else f"{source}, copied to {out}"
    print(f"reused: the result of {summary.get('created', 'the last run')} in {where} (recipe, "
          "inputs, options and code unchanged); --no-cache computes it again")  # fmt: skip
    print("\n".join(summary_text(summary, as_json=a.json)))
    outputs = summary["outputs"]
    print(f"plot: {Path(out) / outputs['plot']}")
    print(f"report: {Path(out) / outputs['report']} (open it in a browser)")
    print(f"data: {Path(out) / outputs['data']}   summary: {Path(out) / 'summary.json'}")
    return 0


def _run_multi(a: argparse.Namespace, doc: Any, path: Any, budget: Any) -> Any:
    from pangeo_hpc.batch.chains.multi_yaml import from_multi_dict
    from pangeo_hpc.cli.progress import show_progress
    from pangeo_hpc.planning.budget import run_within_budget

    spec = from_multi_dict(doc, path)
    # one cluster for every dataset's run; a budget checked against their summed plans
    return run_within_budget(
        spec,
        budget=budget,
        data=a.data,
        start=a.start,
        end=a.end,
        cluster=a.cluster,
        profile=a.profile,
        workers=a.workers,
        jobs=a.jobs,
        adapt=a.adapt,
        batch=batch_options_from(a),
        warm_inputs=a.warmup,
        out=a.out,
        fmt=a.format,
        plot_format=a.plot_format,
        progress=None if a.no_progress else show_progress,
        cache=False if a.no_cache else None,
        s3=s3_options_from(a, [a.data, *_stores(spec.datasets.values())], a.out),
        index=a.index,
    )


def _stores(datasets: Any) -> list[str]:
    """The ``store:`` of each dataset mapping that has one."""
    return [str(d["store"]) for d in datasets if isinstance(d, dict) and d.get("store")]


def _run_one(a: argparse.Namespace, spec: Any, budget: Any, key: str | None) -> Any:
    from pangeo_hpc.cli.progress import show_progress
    from pangeo_hpc.planning.budget import run_within_budget

    # a recipe's own store (an s3:// Zarr store or repository) takes --endpoint-url, --anon
    source = spec.store.location if spec.store is not None else a.data
    s3 = s3_options_from(a, source, a.out)
    return run_within_budget(
        spec,
        data=a.data,
        start=a.start,
        end=a.end,
        cluster=a.cluster,
        profile=a.profile,
        workers=a.workers,
        jobs=a.jobs,
        adapt=a.adapt,
        batch=batch_options_from(a),
        warm_inputs=a.warmup,
        out=a.out,
        fmt=a.format,
        plot_format=a.plot_format,
        progress=None if a.no_progress else show_progress,
        s3=s3,
        index=a.index,
        cache=False if a.no_cache else None,
        budget=budget,
        run_key=key,
    )


def _convert_args(p: argparse.ArgumentParser) -> None:
    from pangeo_hpc.write.codecs import CODECS

    p.add_argument("--data", help="the tree: folder or s3://bucket/prefix (default data.root)")
    p.add_argument(
        "--out", required=True, help="the Zarr store to write: folder or s3://bucket/prefix"
    )
    p.add_argument("--variable", default="sea_surface_temperature")
    p.add_argument("--start", help="first month, YYYY-MM (default: all)")
    p.add_argument("--end", help="last month, YYYY-MM (default: all)")
    p.add_argument("--chunk-mb", type=float, help="uncompressed MB per chunk (default 128)")
    p.add_argument("--clevel", type=int, help="compression level 1-9 (default 3)")
    p.add_argument(
        "--codec",
        choices=CODECS,
        help="Blosc compressor (default zstd; lz4hc: ~6 %% larger, decodes ~2.5x faster)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing store")
    add_cluster_args(p)
    add_s3_args(p, index=True)


def _convert(a: argparse.Namespace) -> int:
    from pangeo_hpc import config
    from pangeo_hpc.batch.pipeline.convert import to_zarr
    from pangeo_hpc.write.targets import check_output

    s3 = s3_options_from(a, a.data, a.out)
    # before a cluster starts: replace only a store of ours, never the data
    check_output(
        a.out,
        kind="zarr",
        inputs=[a.data or config.get("data.root")],
        overwrite=a.overwrite,
        s3=s3,
    )
    with running_cluster_from(a):
        report = to_zarr(
            a.data,
            a.out,
            a.variable,
            a.start,
            a.end,
            chunk_mb=a.chunk_mb,
            clevel=a.clevel,
            codec=a.codec,
            overwrite=a.overwrite,
            s3=s3,
            index=a.index,
        )
    print(report.summary())
    return 0


VERBS = [
    Verb(
        "run",
        "run a recipe on a Dask cluster (or give just RECIPE)",
        "Run a recipe (a name the list verb shows, or a YAML file) on a Dask cluster and "
        "write its result, plot and summary.json into the output folder, all at once; print "
        "the answer as a table (--json: as JSON) and the files and bytes it read. "
        "PROG RECIPE ... does the same; run RECIPE also reaches a recipe named like a verb.",
        _run_args,
        _run,
    ),
    Verb(
        "list",
        "list the recipes",
        "List the recipes that run by name: name, period and what each computes.",
        lambda p: None,
        _list,
    ),
    Verb(
        "demo-data",
        "write synthetic ERA5 SST with known answers",
        "Write synthetic sea surface temperature in the layout of the era5-pds bucket "
        "(YYYY/MM/data/sea_surface_temperature.nc), with a known trend, ENSO and coastlines, "
        "for demos and tests. Months already there are kept.",
        _demo_data_args,
        _demo_data,
    ),
    Verb(
        "convert",
        "convert an era5-pds tree once into a Zarr store",
        "Convert an era5-pds tree once into an analysis-ready Zarr store (Blosc-zstd by "
        "default, whole-field chunks); recipes then read it with --data STORE.",
        _convert_args,
        _convert,
    ),
]
