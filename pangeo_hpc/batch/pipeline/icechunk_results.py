"""``--format icechunk``: a recipe's results as one commit to an Icechunk repository.

The Dataset committed is the one ``result.nc`` holds (the same variables, coordinates,
attributes and CF encoding: :func:`~pangeo_hpc.recipes.cf_attrs.prepare_for_file`); the
commit's message names the recipe, the period and the inputs, and its metadata holds
what ``summary.json`` would (the answer, inputs, reads, timings, versions, provenance).
No ``summary.json`` or figure is written: the repository is the output, its history the
record. An incremental run that adds a month adds one commit; a run whose result equals
the tip's adds none (:mod:`pangeo_hpc.write.icechunk_out` says why).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import xarray as xr

from pangeo_hpc.batch.chains.recipe_yaml import Recipe
from pangeo_hpc.errors import redact
from pangeo_hpc.write.icechunk_out import Committed, commit_dataset

__all__ = ["write_icechunk"]


def _commit_message(spec: Recipe, period: tuple[str, str] | list[str], root: object) -> str:
    """The message of a run's commit: the recipe, the period and the inputs.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> _commit_message(load("era5-sst-mean"), ("2000-01", "2000-03"), "/data/era5")
    'era5-sst-mean: 2000-01 to 2000-03, sea_surface_temperature from /data/era5'
    """
    start, end = period
    return f"{spec.name}: {start} to {end}, {', '.join(spec.variables)} from {redact(str(root))}"


def write_icechunk(
    written: xr.Dataset,
    summary: dict[str, Any],
    *,
    spec: Recipe,
    period: tuple[str, str] | list[str],
    root: object,
    out: Path | str,
    t0: float,
    started: float | None,
    s3: Any = None,
) -> Committed:
    """Commit ``written`` (the Dataset as ``result.nc`` holds it) to the repository ``out``
    with ``summary`` as the commit's metadata; ``summary`` gains ``outputs`` (the
    repository, branch and snapshot) and its write and total times.

    Parameters
    ----------
    written : xr.Dataset
        The results.
    summary : dict[str, Any]
        The run's ``summary.json``, completed here.
    spec : Recipe
        The recipe.
    period : tuple[str, str] or list[str]
        The first and last month read.
    root : object
        The data read (an input: the repository may not be inside it).
    out : Path or str
        The repository (a folder or ``s3://`` prefix).
    t0 : float
        When the write started (``time.perf_counter``).
    started : float or None
        When the run started (``time.perf_counter``), or ``None``: ``t0``.
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` repository.

    Returns
    -------
    Committed
        The snapshot at the tip of ``main``, and whether this run made it.

    Examples
    --------
    >>> from pangeo_hpc.batch.pipeline.icechunk_results import write_icechunk
    >>> committed = write_icechunk(  # doctest: +SKIP
    ...     result, summary, spec=spec, period=("2000-01", "2000-12"), root="data/era5-demo",
    ...     out="results/sst.icechunk", t0=t0, started=None,
    ... )
    """
    took = summary["timings_s"]
    took["write"] = round(time.perf_counter() - t0, 3)  # the commit's own time: not in it
    took["total"] = round(time.perf_counter() - (t0 if started is None else started), 3)
    done = commit_dataset(
        out,
        written,
        message=_commit_message(spec, period, root),
        metadata=summary,
        inputs=[root],
        s3=s3,
    )
    took["write"] = round(time.perf_counter() - t0, 3)
    summary["outputs"] = {"data": done.where, "branch": "main", "snapshot": done.snapshot}
    if not done.new:
        summary["outputs"]["unchanged"] = done.why
    return done
