"""A cost guard: plan a run before any job is submitted, refuse it when its predicted cost's
high end passes the budget, and watch it while it runs.

:func:`run_within_budget` is :func:`pangeo_hpc.batch.pipeline.execute.run_recipe` with ``budget=``
(``5USD`` or ``2h`` node-hours, :func:`pangeo_hpc.inputs.budget.parse_budget`):

1. :func:`check_budget` plans the run as it will be started (its files not cached yet,
   its cluster's shape, the jobs' queue and workers' arrival measured by ``calibrate`` on
   that site) from *the user's own calibration file* (the shipped figures were measured
   elsewhere: they do not count). No calibration of the recipe, or of the site's job
   starts on a batch cluster: refused (``calibrate first: ...``). A predicted high end
   above the budget: refused, naming the prediction and the fix. Nothing has started.
2. the run goes on with a :class:`~pangeo_hpc.clusters.budget.Guard` that
   :func:`~pangeo_hpc.clusters.budget.within_budget` watches: spent node-hours past the
   budget stop it as Ctrl-C does, its states saved
   (:class:`~pangeo_hpc.errors.BudgetSpent`).

Without a budget, a run on a batch cluster still gets one line: its prediction, or that
there is no calibration to predict it from; a local run without a budget is not planned
(it costs no node-hours, and a small question must start at once).

The check lives here and not in :mod:`pangeo_hpc.batch` because it needs the model, one
layer up; the batch run only takes the guard it made.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pangeo_hpc.batch.chains.multi_yaml import MultiRecipe
from pangeo_hpc.batch.chains.recipe_yaml import Recipe, load
from pangeo_hpc.batch.pipeline import execute, multi_run
from pangeo_hpc.batch.pipeline.results import RunResult
from pangeo_hpc.batch.pipeline.steps import data_root
from pangeo_hpc.clusters.budget import Guard
from pangeo_hpc.clusters.start import resolve_kind, site_name
from pangeo_hpc.errors import InputError, named
from pangeo_hpc.inputs.budget import Budget, parse_budget
from pangeo_hpc.planning.calibration import (
    calibrate_call,
    calibration_path,
    read_calibration,
)
from pangeo_hpc.planning.multi_plan import plan_multi
from pangeo_hpc.planning.plan import plan

__all__ = ["check_budget", "run_within_budget"]

#: the prediction line (INFO) before a batch run starts; the CLI prints it
log = logging.getLogger(__name__)


def check_budget(
    spec: Recipe | MultiRecipe | str,
    budget: Budget | str | None,
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
    cache: Any = None,
    s3: Any = None,
    calibration: str | Path | None = None,
) -> Guard | None:
    """Check a run's predicted cost against ``budget`` before anything starts.

    Parameters are those of :func:`pangeo_hpc.batch.pipeline.execute.run_recipe`; ``calibration``
    is the calibration file (default config ``plan.calibration``). An adaptive run is
    planned at its maximum jobs.

    Parameters
    ----------
    spec : Recipe, MultiRecipe or str
        The recipe, or its name. A recipe over several datasets is planned as the sum of
        its datasets' runs on one cluster (:mod:`pangeo_hpc.planning.multi_plan`).
    budget : Budget or str, optional
        ``5USD`` or ``2h`` node-hours (see :mod:`pangeo_hpc.inputs.budget`); None: no check.
    data, start, end, cluster, profile, workers, jobs, adapt, batch, cache, s3
        As for :func:`pangeo_hpc.batch.pipeline.execute.run_recipe`.
    calibration : str or Path, optional
        The calibration file (default config ``plan.calibration``).

    Returns
    -------
    Guard or None
        What the run's watcher enforces; None without a budget.

    Raises
    ------
    InputError
        A budget that cannot be read; no calibration to check it against (``calibrate
        first``); a predicted high end above it; a dollar budget on nodes without a price.

    Examples
    --------
    >>> from pangeo_hpc.planning.budget import check_budget
    >>> guard = check_budget(  # doctest: +SKIP
    ...     "era5-sst-mean", "5USD", profile="aws-c5n.18xlarge", data="data/era5-demo"
    ... )
    """
    given = None if budget is None else parse_budget(budget)
    spec = load(spec) if isinstance(spec, str) else spec
    multi = isinstance(spec, MultiRecipe)
    kind, options = resolve_kind(cluster, profile)
    if given is None and kind == "local":
        return None
    options = {**options, **{k: v for k, v in (batch or {}).items() if v is not None}}
    if kind == "local" and workers is not None:
        options["processes"] = workers
    options["kind"] = kind
    site = site_name(kind, profile)
    nodes = 1 if kind == "local" else (adapt[1] if adapt is not None else jobs or 1)
    # a recipe over several datasets: each is planned as RECIPE.DATASET (multi_plan)
    names = [f"{spec.name}.{d}" for d in spec.datasets] if multi else [spec.name]
    missing = next(
        (m for m in (_uncalibrated(n, site, kind, calibration) for n in names) if m), None
    )
    if missing is not None:
        call, words = calibrate_call(spec.name, site, kind)
        why = (
            f"calibrate first: {missing}, so the run's cost cannot be predicted; "
            f"measure it with {call}"
        )
        if given is None:
            log.info(f"plan: {why}")
            return None
        raise InputError(
            f"{why}, or run without {named('budget', given.text)}",
            param="budget",
            commands={call: words},
        )
    planner: Any = plan_multi if multi else plan
    p = planner(
        spec,
        data=data_root(data, profile),
        start=start,
        end=end,
        cache=cache,
        profile=site,
        options=options,
        nodes=[nodes],
        calibration=calibration,
        s3=s3,
    )
    row = p.rows[0]
    price = p.model.price
    unit = given or Budget(1.0, "node-hours", "")
    shown = unit.describe(row["node_hours_low"], price, row["node_hours_high"])
    what = f"{nodes} job{'s' * (nodes != 1)}" if kind != "local" else "this machine"
    wall = f"{row['wall_low_s']:.1f}-{row['wall_high_s']:.1f} s"
    if row["start_high_s"]:
        wall += f" after {row['start_low_s']:.1f}-{row['start_high_s']:.1f} s of job start"
    line = f"plan: {shown} on {what} ({wall})"
    if given is None:
        log.info(line)
        return None
    limit = given.node_hours(price)
    if row["node_hours_high"] > limit:
        fewer = "fewer jobs (jobs=), " if kind != "local" and nodes > 1 else ""
        raise InputError(
            f"predicted cost {shown} on {what} ({wall}) exceeds {named('budget', given.text)}: "
            f"ask for {fewer}a shorter period (start=, end=), or a larger budget",
            param=("budget", "jobs", "start", "end"),
        )
    log.info(f"{line}, within budget {given.text}")
    return Guard(given, limit, price, shown)


def _uncalibrated(recipe: str, site: str, kind: str, path: str | Path | None) -> str | None:
    """Why the user's calibration file cannot predict ``recipe`` on ``site``, or None."""
    p = calibration_path(path)
    own = read_calibration(p)
    if own is None:
        return f"no calibration file {str(p)!r}"
    if recipe not in own.recipes:
        return f"{recipe!r} is not calibrated in {str(p)!r}"
    if kind != "local" and site not in own.starts:
        return f"the job start on {site!r} is not measured in {str(p)!r}"
    return None


def run_within_budget(
    spec: Recipe | MultiRecipe,
    *,
    budget: Budget | str | None = None,
    calibration: str | Path | None = None,
    **kwargs: Any,
) -> RunResult:
    """:func:`pangeo_hpc.batch.pipeline.execute.run_recipe` with a budget: checked against the
    run's prediction before anything starts, then watched while it runs.

    Parameters
    ----------
    spec : Recipe or MultiRecipe
        The recipe; one over several datasets runs through
        :func:`~pangeo_hpc.batch.pipeline.multi_run.run_multi`, its budget checked
        against the sum of its datasets' plans.
    budget : str or Budget, optional
        ``5USD`` (needs the cluster's price per node-hour) or ``2h`` node-hours (also
        ``90min``, ``600s``); see :mod:`pangeo_hpc.inputs.budget`.
    calibration : str or Path, optional
        The calibration file to predict from (default config ``plan.calibration``).
    **kwargs
        As for :func:`pangeo_hpc.batch.pipeline.execute.run_recipe`.

    Returns
    -------
    RunResult
        As :func:`pangeo_hpc.batch.pipeline.execute.run_recipe` returns.

    Raises
    ------
    InputError
        As :func:`check_budget`: nothing was started.
    BudgetSpent
        The cluster spent the budget: the run was stopped, its states are saved and the
        same call again resumes from them.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> from pangeo_hpc.planning.budget import run_within_budget
    >>> spec = load("era5-sst-mean")
    >>> run = run_within_budget(spec, budget="2h", data="data/era5-demo")  # doctest: +SKIP
    """
    where = {k: kwargs.get(k) for k in ("data", "start", "end", "workers", "jobs", "adapt")}
    guard = check_budget(
        spec,
        budget,
        **where,
        cluster=kwargs.get("cluster", "local"),
        profile=kwargs.get("profile"),
        batch=kwargs.get("batch"),
        cache=kwargs.get("cache"),
        s3=kwargs.get("s3"),
        calibration=calibration,
    )
    if isinstance(spec, MultiRecipe):
        return multi_run.run_multi(spec, guard=guard, **kwargs)
    return execute.run_recipe(spec, guard=guard, **kwargs)  # looked up now: patchable
