"""Verbs ``plan`` (time and cost per node count) and ``calibrate`` (measure what it needs)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pangeo_hpc.cli.common import (
    Verb,
    add_cluster_args,
    add_s3_args,
    positive_int,
    running_cluster_from,
    s3_options_from,
)
from pangeo_hpc.errors import InputError


def _plan_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipe", help="recipe name, e.g. era5-sst-mean")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--size", help="uncompressed size of the data, e.g. 300GB")
    what.add_argument(
        "--data",
        help="plan the recipe's own files in this tree (a folder or s3://bucket/prefix): "
        "a recipe that runs incrementally reads only the files whose states are not "
        "cached, and the plan is of those bytes",
    )
    p.add_argument("--start", help="with --data: first month, YYYY-MM (default the recipe's)")
    p.add_argument("--end", help="with --data: last month, YYYY-MM (default the recipe's)")
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="with --data: plan as if nothing were cached (as a run with --no-cache reads)",
    )
    p.add_argument("--profile", default="local", help="site profile (default local)")
    p.add_argument(
        "--storage",
        help="KIND[:RATE]: fsx:2880MB/s (shared), s3, local, cache (default the profile's)",
    )
    p.add_argument("--price", help="USD per node-hour, e.g. 3.888/h (default the profile's)")
    p.add_argument("--nodes", help="node counts, e.g. 1,2,4,8 (default config plan.nodes)")
    p.add_argument("--chunk", help="uncompressed size of a read task (default data.time-chunk-mb)")
    p.add_argument(
        "--ratio",
        type=float,
        help="compression ratio (default: with --data the files' own, else the calibration's)",
    )
    p.add_argument("--startup", type=float, help="seconds billed per node besides the run")
    p.add_argument(
        "--calibration",
        help="calibration file or s3://bucket/key (default config plan.calibration)",
    )
    p.add_argument(
        "--plot",
        help="PNG to write, or s3://BUCKET/KEY.png (default <output.root>/plan-RECIPE.png)",
    )
    p.add_argument("--no-plot", action="store_true", help="print the table only")
    add_s3_args(p)


def _plan(a: argparse.Namespace) -> int:
    from pangeo_hpc.planning.plan import plan
    from pangeo_hpc.write.outputs import save_figure
    from pangeo_hpc.write.targets import check_output_file, output_file, suffix_of

    if a.ratio is not None and not a.ratio > 0:
        raise InputError(f"--ratio {a.ratio!r} must be above 0, e.g. 2.5")
    if a.data is None and (a.start or a.end or a.no_cache):
        raise InputError("--start, --end and --no-cache choose what to plan of --data: give --data")
    opts = s3_options_from(a, [a.data, a.calibration], None if a.no_plot else a.plot)
    out = None
    if not a.no_plot:
        from pangeo_hpc import config

        default = Path(config.get("output.root")) / f"plan-{a.recipe}.png"
        out = check_output_file(
            a.plot or default, flag="--plot", inputs=[a.data], s3=opts.for_writing()
        )
        if suffix_of(out) != ".png":
            raise InputError(f"--plot {str(out)!r} must end in .png")
    recipe = _plan_target(a.recipe)
    planner: Any = plan
    if not isinstance(recipe, str):  # over several datasets: the sum of their plans
        from pangeo_hpc.planning.multi_plan import plan_multi

        if a.size is not None:
            raise InputError(
                f"--size: {recipe.name!r} is over several datasets, each with its own files: "
                "it is planned from them; give --data (the data root) instead"
            )
        planner = plan_multi
    result = planner(
        recipe,
        **({"size": a.size} if a.size is not None else {}),
        data=a.data,
        start=a.start,
        end=a.end,
        cache=False if a.no_cache else None,
        profile=a.profile,
        storage=a.storage,
        price=a.price,
        nodes=a.nodes,
        chunk=a.chunk,
        ratio=a.ratio,
        startup=a.startup,
        calibration=a.calibration,
        s3=opts,
    )
    print(result.text())
    if out is not None:
        from matplotlib.figure import Figure  # not pyplot: no backend, no display

        fig = Figure(figsize=(7, 4), layout="constrained")
        result.plot(fig.add_subplot())
        with output_file(out, flag="--plot", inputs=[a.data], s3=opts.for_writing()) as dest:
            save_figure(fig, dest, flag="--plot")
        print(f"plot: {out}")
    return 0


def _plan_target(name: str) -> Any:
    """``name`` for a one-dataset recipe; the loaded recipe for one over several datasets."""
    from pangeo_hpc.batch.chains.multi_yaml import from_multi_dict, is_multi
    from pangeo_hpc.batch.chains.recipe_yaml import find, read_yaml

    try:
        path = find(name)
    except InputError:
        return name  # a calibrated name without a YAML file: plan --size needs none
    doc = read_yaml(path)
    return from_multi_dict(doc, path) if is_multi(doc) else name


def _storage_path(text: str) -> tuple[str, str]:
    kind, sep, path = text.partition("=")
    if not sep or not kind or not path:
        raise argparse.ArgumentTypeError(f"{text!r} is not KIND=PATH, e.g. fsx=/fsx/era5-pds")
    return kind.lower(), path


def _calibrate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipe", nargs="?", default="era5-sst-mean", help="recipe name")
    p.add_argument("--data", help="data root (default config data.root)")
    p.add_argument("--start", help="first month, YYYY-MM (default the recipe's)")
    p.add_argument("--end", help="last month, YYYY-MM (default the recipe's)")
    p.add_argument("--amount", default="256MB", help="uncompressed bytes to run on (256MB)")
    p.add_argument("--repeat", type=positive_int, default=3, help="measured runs (3)")
    p.add_argument("--tasks", type=positive_int, default=2000, help="no-op tasks (2000)")
    p.add_argument(
        "--simulate-workers",
        type=int,
        default=0,
        help="also fit the scheduler's growth per worker from this many idle workers on "
        "this host (default 0: skip; measure it only where each of them has a core of its "
        "own, or the growth comes out too high and plans overestimate large clusters)",
    )
    p.add_argument(
        "--storage-path",
        action="append",
        type=_storage_path,
        metavar="KIND=PATH",
        help="read bandwidth to measure, e.g. fsx=/fsx/era5-pds (default: the data)",
    )
    p.add_argument(
        "--calibration",
        help="file or s3://bucket/key to update (default config plan.calibration)",
    )
    add_cluster_args(p)
    add_s3_args(p)


def _calibrate(a: argparse.Namespace) -> int:
    from pangeo_hpc.planning.calibrate import calibrate
    from pangeo_hpc.planning.plan import STORAGE_KINDS

    for kind, _ in a.storage_path or []:
        if kind not in STORAGE_KINDS:
            raise InputError(
                f"--storage-path kind {kind!r} is unknown: use one of {', '.join(STORAGE_KINDS)}"
            )
    if a.simulate_workers < 0:
        raise InputError(f"--simulate-workers {a.simulate_workers} must be 0 or more")
    from pangeo_hpc.planning.calibrate import calibration_target
    from pangeo_hpc.planning.measured_recipes import recipes_to_measure

    opts = s3_options_from(a, a.data, a.calibration)
    # any recipe (each dataset of one over several) checked before a cluster starts
    recipes_to_measure(a.recipe, a.data, a.start, a.end, opts)
    calibration_target(a.calibration, a.data, flag="--calibration", s3=opts.for_writing())
    if a.cluster == "local" and a.workers is None:
        a.workers = 1  # one process: the rate the model multiplies
    with running_cluster_from(a) as (_, client):
        calibrate(
            a.recipe,
            client=client,
            data=a.data,
            start=a.start,
            end=a.end,
            amount=a.amount,
            repeat=a.repeat,
            tasks=a.tasks,
            simulate_workers=a.simulate_workers,
            storage=dict(a.storage_path) if a.storage_path else None,
            path=a.calibration,
            s3=opts,
        )
    return 0


VERBS = [
    Verb(
        "plan",
        "predict wall time and cost of a recipe per node count",
        "Predict wall time, efficiency, bottleneck and cost of a recipe per node count, from "
        "the calibration (the calibrate verb measures it) and a site profile, for a size "
        "(--size 300GB) or for the recipe's files (--data TREE [--start YYYY-MM] [--end "
        "YYYY-MM]). With --data, a recipe that runs incrementally is planned for the files "
        "whose partial states are not in the state cache (pangeo-hpc.cache.folder) yet, e.g. "
        "'239 of 240 files cached (...): 1 file, 2.9 MB to read'; a recipe that cannot says "
        "why and is planned for all its files; --no-cache plans as if nothing were cached.",
        _plan_args,
        _plan,
    ),
    Verb(
        "calibrate",
        "measure what plan needs, on this machine or on batch jobs",
        "Measure what plan needs (per-process throughput of the recipe, scheduler overhead "
        "per task, storage bandwidth) and store it in the calibration file. The model and "
        "its check against real runs are described in the documentation, page 'Plan before "
        "you pay: the scaling model' (user guide, 'Planning and cost').",
        _calibrate_args,
        _calibrate,
    ),
]
