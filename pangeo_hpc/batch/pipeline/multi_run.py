"""Run a recipe over several datasets (:mod:`~pangeo_hpc.batch.chains.multi_yaml`): open
each dataset and build its chain, check the combine on the lazy results, compute each
dataset's results as a one-dataset recipe is computed (incrementally, through the state
cache), then run the ``combine:`` steps on them and write the outputs.

Every refusal (an unknown reference, different grids or units of different kinds at the
combine, no overlapping period, daily data of different calendars) comes before any
cluster starts and before anything is computed or cached: the combine is first built on
the lazy results. The combine itself runs in this process, on the per-dataset results
(maps or series, small next to the inputs).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from pangeo_hpc.batch.chains.multi_yaml import (
    MultiRecipe,
    apply_combine,
    join_of,
    reference_of,
)
from pangeo_hpc.batch.chains.recipe_yaml import Recipe
from pangeo_hpc.batch.incremental.state_cache import StateCache, open_cache
from pangeo_hpc.batch.pipeline.regrid_store import CachedWeights
from pangeo_hpc.batch.pipeline.results import (
    RunResult,
    check_format,
    check_plot_format,
    result_folder,
    warmup_summary,
    write_outputs,
)
from pangeo_hpc.batch.pipeline.steps import (
    Computed,
    Inputs,
    check_warmup,
    compute,
    data_root,
    open_dataset,
    open_inputs,
)
from pangeo_hpc.clusters.budget import Guard, within_budget
from pangeo_hpc.clusters.start import running_cluster
from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.align_datasets import align_datasets
from pangeo_hpc.recipes.regrid import using_store
from pangeo_hpc.recipes.regrid_grids import source_grid
from pangeo_hpc.s3.options import S3Options

__all__ = ["combine_results", "dataset_recipes", "grid_box", "run_multi"]

#: degrees within which a grid's spacing is regular (a box of equal cells)
_REGULAR = 1e-6


def grid_box(ds: xr.Dataset | xr.DataArray, name: str) -> dict[str, list[float]]:
    """The grid of ``ds`` as a box of equal cells, ``{lat: [south, north, step], lon:
    [west, east, step]}`` (:func:`~pangeo_hpc.recipes.regrid`'s form), from its cell edges
    (its bounds, else halfway between centres).

    Parameters
    ----------
    ds : xr.Dataset or xr.DataArray
        Data on a regular latitude-longitude grid.
    name : str
        The dataset's name, for messages.

    Returns
    -------
    dict[str, list[float]]
        The box.

    Raises
    ------
    InputError
        For a grid whose cells are not all of one size (a Gaussian grid): name it by
        ``rNxM`` or a file instead.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from pangeo_hpc.batch.pipeline.multi_run import grid_box
    >>> coords = {"lat": [-45.0, 45.0], "lon": [0.0, 90.0, 180.0, 270.0]}
    >>> da = xr.DataArray(np.zeros((2, 4)), coords, ("lat", "lon"))
    >>> grid_box(da, "model")
    {'lat': [-90.0, 90.0, 90.0], 'lon': [-45.0, 315.0, 90.0]}
    """
    g = source_grid(ds)
    out = {}
    for key, edges in (("lat", g.lat_bounds), ("lon", g.lon_bounds)):
        e = np.sort(np.unique(np.asarray(edges, "f8").ravel()))
        steps = np.diff(e)
        if g.curvilinear or e.size < 2 or np.ptp(steps) > _REGULAR:
            raise InputError(
                f"regrid: grid=${name}: the grid of {name} is not regular (cells of one "
                "size in latitude and in longitude): give the grid as rNxM, "
                "{lat: [...], lon: [...]} or a file"
            )
        out[key] = [float(e[0]), float(e[-1]), float(np.mean(steps))]
    return out


def dataset_recipes(
    spec: MultiRecipe,
    root: str | Path,
    *,
    start: str | None = None,
    end: str | None = None,
    s3: S3Options | None = None,
    index: str | None = None,
) -> dict[str, Recipe]:
    """Each dataset's one-dataset recipe (named ``RECIPE.DATASET``), ``grid: $NAME`` made
    the grid of ``NAME`` as opened (:func:`grid_box`; ``s3``, ``index``: how to reach an
    ``s3://`` dataset): what a run computes and a plan predicts, dataset by dataset.

    Parameters
    ----------
    spec : MultiRecipe
        The recipe over several datasets.
    root : str or Path
        The data root of datasets without ``files:`` or ``store:``.
    start : str, optional
        First month (``YYYY-MM``), or ``None``: each dataset's.
    end : str, optional
        Last month, or ``None``.
    s3 : S3Options, optional
        Endpoint and credentials of ``s3://`` datasets.
    index : str, optional
        A reference index of ``s3://`` NetCDF files, or ``None``.

    Returns
    -------
    dict[str, Recipe]
        ``RECIPE.DATASET`` -> its recipe.

    Examples
    --------
    >>> from pangeo_hpc.batch import load_multi
    >>> from pangeo_hpc.batch.pipeline.multi_run import dataset_recipes
    >>> spec = load_multi("model-vs-era5-t2m")
    >>> recipes = dataset_recipes(spec, "data/era5-demo")  # doctest: +SKIP
    >>> list(recipes)  # doctest: +SKIP
    """
    grids = {}
    for name in spec.grid_owners():
        one = spec.recipe_for(name, data=str(root))
        ds = open_dataset(one, root, start=start, end=end, s3=s3, index=index)
        grids[name] = grid_box(ds[one.variable], name)
    return {name: spec.recipe_for(name, grids, data=str(root)) for name in spec.datasets}


def _open_all(
    spec: MultiRecipe,
    root: str | Path,
    *,
    start: str | None = None,
    end: str | None = None,
    s3: S3Options | None = None,
    index: str | None = None,
) -> dict[str, Inputs]:
    """Each dataset opened and its chain built lazily (:func:`dataset_recipes`); the
    periods opened checked to overlap. ``s3`` and ``index`` reach every ``s3://`` dataset
    (a tree or a ``store:``)."""
    recipes = dataset_recipes(spec, root, start=start, end=end, s3=s3, index=index)
    opened = {
        name: open_inputs(one, data=root, start=start, end=end, s3=s3, index=index)
        for name, one in recipes.items()
    }
    periods = {n: i.period for n, i in opened.items()}
    first, last = max(p[0] for p in periods.values()), min(p[1] for p in periods.values())
    if first[:7] > last[:7]:
        said = ", ".join(f"{n} {p[0][:7]}..{p[1][:7]}" for n, p in periods.items())
        raise InputError(
            f"recipe {spec.name!r}: the datasets have no period in common ({said}): give "
            "them overlapping start and end"
        )
    return opened


def _per_result(value: xr.Dataset) -> dict[str, xr.DataArray]:
    return {str(k): v for k, v in value.data_vars.items()}


def combine_results(spec: MultiRecipe, values: Mapping[str, xr.Dataset]) -> xr.Dataset:
    """The ``combine:`` steps on each dataset's results (lazy or computed): one Dataset.

    Each result of the recipe (``results:``; else the one result) is combined on its own;
    a variable keeps the combine step's name for it (``model``) when it is the only one
    of that name, else takes the result's name and then the step's (``model_rmse``).

    Parameters
    ----------
    spec : MultiRecipe
        The recipe over several datasets.
    values : Mapping[str, xr.Dataset]
        Dataset name -> its results.

    Returns
    -------
    xr.Dataset
        The combined results.

    Examples
    --------
    >>> import xarray as xr
    >>> from pangeo_hpc.batch import load_multi
    >>> from pangeo_hpc.batch.pipeline.multi_run import combine_results
    >>> coords = {"lat": [-45.0, 45.0], "lon": [0.0, 180.0]}
    >>> model = xr.Dataset({"tas": (("lat", "lon"), [[281.0, 283.0], [279.0, 280.0]])}, coords)
    >>> era5 = xr.Dataset({"tas": (("lat", "lon"), [[280.0, 282.0], [279.5, 280.5]])}, coords)
    >>> combined = combine_results(load_multi("model-vs-era5-t2m"), {"model": model, "era5": era5})
    >>> sorted(combined.data_vars)
    ['model', 'model_correlation', 'model_rmse']
    """
    names = list(values)
    parts = {n: _per_result(values[n]) for n in names}
    keys = list(parts[names[0]])
    single = len(keys) == 1
    out: dict[str, xr.DataArray] = {}
    attrs: dict[str, Any] = {}
    for step in spec.combine:
        ref = reference_of(step, spec)
        for i, key in enumerate(keys):
            of = {n: parts[n][key] if not single else next(iter(parts[n].values())) for n in names}
            aligned = align_datasets(of, reference=ref, join=join_of(step))  # type: ignore[arg-type]
            made = apply_combine(step, aligned)
            for var, da in made.data_vars.items():
                label = str(var) if single else f"{var}_{keys[i]}"
                if label in out:
                    label = f"{label}_{step.name}"
                out[label] = da.rename(label)
            attrs.update(made.attrs)
    attrs.pop("datasets", None)
    result = xr.Dataset(out)
    # a CMIP file's lat and lon say "bounds: lat_bnds", a variable not carried along
    for name in [c for c in ("lat", "lon", "latitude", "longitude") if c in result.coords]:
        if result[name].attrs.get("bounds") not in (None, *result.variables):
            result[name].attrs = {k: v for k, v in result[name].attrs.items() if k != "bounds"}
    result.attrs["datasets"] = ", ".join(names)
    if "reference" in attrs:
        result.attrs["reference_dataset"] = attrs["reference"]
    return result


def run_multi(
    spec: MultiRecipe,
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
    plot_format: str | None = None,
    progress: Callable[[Any], None] | None = None,
    cache: StateCache | bool | None = None,
    guard: Guard | None = None,
    s3: S3Options | None = None,
    index: str | None = None,
) -> RunResult:
    """Run ``spec`` and write ``result.nc`` (or ``.zarr``), ``plot.png`` and
    ``summary.json``, as :func:`~pangeo_hpc.batch.pipeline.execute.run_recipe` does for
    one dataset; ``summary.json`` adds ``datasets`` (each one's inputs and reads) and
    ``combine``.

    Parameters are those of :func:`~pangeo_hpc.batch.pipeline.execute.run_recipe`;
    ``start`` and ``end`` apply to every dataset. One cluster (``jobs``, ``adapt``,
    ``batch``) runs the datasets one after the other; with ``warm_inputs`` each dataset's
    files are read through on its workers before its states are computed; ``guard`` (a
    budget: :func:`pangeo_hpc.planning.budget.run_within_budget`) watches the whole run.

    Parameters
    ----------
    spec : MultiRecipe
        The recipe over several datasets (:func:`pangeo_hpc.batch.chains.multi_yaml.load_multi`).
    data : str or Path, optional
        The data root (``{data}`` in a dataset's ``files:``); default config
        ``pangeo-hpc.data.root``.
    start, end : str, optional
        The first and last month, for every dataset.
    cluster, profile, workers, jobs, adapt, batch, warm_inputs
        As for :func:`~pangeo_hpc.batch.pipeline.execute.run_recipe`: the cluster is
        shared by the datasets' runs.
    out, fmt, plot_format, progress, cache, guard
        As for :func:`~pangeo_hpc.batch.pipeline.execute.run_recipe`.
    s3, index : optional
        As for :func:`~pangeo_hpc.batch.pipeline.execute.run_recipe`: how to reach every
        ``s3://`` dataset (a tree, or a ``store:`` such as an ARCO-ERA5 Zarr store) and an
        ``s3://`` ``out``.

    Returns
    -------
    RunResult
        The output folder, the summary and the computed results.

    Raises
    ------
    InputError
        For every refusal of the module's description, before anything is computed.

    Examples
    --------
    >>> from pangeo_hpc.batch import load_multi, run_multi
    >>> run = run_multi(load_multi("model-vs-era5-t2m"), data="data/era5-demo")  # doctest: +SKIP
    """
    t0 = time.perf_counter()
    root = data_root(data, profile)
    if warm_inputs:
        check_warmup(root)
    store = open_cache(cache)
    if store is not None:
        store.check_writable()
    with using_store(None if store is None else CachedWeights(store)):
        inputs = _open_all(spec, root, start=start, end=end, s3=s3, index=index)
        ref = reference_of(spec.combine[0], spec)
        first = replace(inputs[ref].spec, name=spec.name, description=spec.description)
        fmt = check_format(fmt, first)
        plot_format = check_plot_format(plot_format)
        # a folder (or prefix) that may not be written: refused now
        result_folder(out, first, root, s3=s3, fmt=fmt)
        # the combine built on the lazy results: every refusal before anything runs
        combine_results(spec, {n: i.lazy for n, i in inputs.items()})
        t_open = time.perf_counter()
        started = running_cluster(
            cluster,  # type: ignore[arg-type]
            profile=profile,
            workers=workers,
            jobs=jobs,
            adapt=adapt,
            **(batch or {}),
        )
        with within_budget(started, guard) as (_, client):
            t_ready = time.perf_counter()
            computed = {
                n: compute(
                    i, client, progress=progress, warm_inputs=warm_inputs, cache=store or False
                )
                for n, i in inputs.items()
            }
    result = combine_results(spec, {n: c.result for n, c in computed.items()})
    seconds = sum(c.seconds for c in computed.values())
    warmed = sum(c.warmup_seconds for c in computed.values())
    shared = {**computed[ref].cluster, "profile": profile, "jobs": jobs}
    done = Computed(result, shared, seconds, reads=computed[ref].reads)
    extra = {
        "datasets": {
            n: {
                "variables": list(i.spec.variables),
                "files": len(i.dataset.encoding.get("source_files", [])),
                "period": list(i.period),
                "reads": None if computed[n].reads is None else computed[n].reads.as_dict(),
                "warmup": warmup_summary(computed[n].warmup),
            }
            for n, i in inputs.items()
        },
        "combine": [f"{s.name} {json.dumps(s.options, default=str)}" for s in spec.combine],
    }
    timings = {"open": t_open - t0, "cluster_start": t_ready - t_open + warmed}
    return write_outputs(
        replace(inputs[ref], spec=first),
        done,
        out=out,
        fmt=fmt,
        plot_format=plot_format,
        timings=timings,
        started=t0,
        extra=extra,
        s3=s3,
    )
