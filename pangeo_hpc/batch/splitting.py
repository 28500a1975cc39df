"""Which chains a run can split by input file: steps that work time step by time step, then
one reduction whose partial states merge exactly, then anything on the reduced result.

A chain ``select_region -> area_mean -> resample(monthly) -> anomaly`` splits into the
*prefix* (``select_region``, ``area_mean``: each time step on its own), the *reduction*
(``resample``: per-month sums and counts, added across files) and the *suffix*
(``anomaly``, run on the merged monthly series). :func:`split` says how, or why not.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pangeo_hpc.batch.chain import Step, options_of
from pangeo_hpc.batch.code_identity import function_code, package_code

#: recipe functions that treat each time step on its own (the time axis kept, maybe fewer
#: steps): a file's part of their result depends on that file alone
TIME_STEP_BY_STEP = {
    "select_months",
    "select_season",
    "area_mean",
    "global_mean",
    "zonal_mean",
    "convert_units",
    "wind_speed",
    "magnitude",
    "select_region",  # but not with mask=: see _why_not
}
#: the attribute by which a user function says it treats each time step on its own (its
#: value for time step t depends on time step t alone, and it keeps the time axis)
STEP_BY_STEP = "step_by_step"
#: reductions along time whose partial states merge exactly (:mod:`pangeo_hpc.batch.states`)
REDUCTIONS = {"time_mean", "resample", "climatology", "trend", "linear_trend", "daily_totals"}

#: why a step before the reduction stops the split
_WHY = {
    "percentile": "an exact percentile needs all the values of a cell's series at once; it "
    "cannot be merged from per-file states",
    "anomaly": "anomaly subtracts the climatology of the whole period",
    "running_mean": "running_mean's windows cross file boundaries",
    "nino34": "nino34 takes anomalies against the whole period",
    "time_series": "time_series is not split (write area_mean then resample)",
}


@dataclass(frozen=True)
class Split:
    """A chain cut at its reduction.

    Attributes
    ----------
    prefix : tuple of Step
        Steps that work time step by time step.
    reduction : Step
        The reduction whose states are kept per file.
    suffix : tuple of Step
        Steps run on the merged result.
    options : dict
        The reduction's options with their defaults (``freq``, ``stat``, ``per``...).
    """

    prefix: tuple[Step, ...]
    reduction: Step
    suffix: tuple[Step, ...]
    options: dict[str, Any]

    def chain_hash(self, variables: Sequence[str]) -> str:
        """What a file's state depends on besides the file: the variables, the prefix, the
        reduction and its options, and the code of all of them (hex): pangeo-hpc's and its
        libraries' (:func:`~pangeo_hpc.batch.code_identity.package_code`), and each user
        function's (:func:`~pangeo_hpc.batch.code_identity.function_code`)."""
        steps = [*self.prefix, self.reduction]
        doc = {
            "code": package_code(),
            "user": [[s.name, function_code(s.function())] for s in steps if s.is_user],
            "variables": list(variables),
            "steps": [[s.name, _plain(options_of(s))] for s in self.prefix],
            "reduction": [self.reduction.name, _plain(self.options)],
        }
        text = json.dumps(doc, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()


def split(steps: Sequence[Step]) -> Split | str:
    """Cut ``steps`` at their first reduction, or say (one sentence) why they cannot be."""
    for i, step in enumerate(steps):
        if step.name in REDUCTIONS:
            suffix = tuple(steps[i + 1 :])
            for later in suffix:
                ref = next((v for v in options_of(later).values() if _is_ref(v)), None)
                if ref is not None:
                    return (
                        f"{later.where} uses {ref} after the reduction: that needs the whole "
                        "data again"
                    )
            fn = step.function()
            bound = inspect.signature(fn).bind(None, **options_of(step))
            bound.apply_defaults()
            options = dict(list(bound.arguments.items())[1:])
            return Split(tuple(steps[:i]), step, suffix, options)
        why = _why_not(step)
        if why is not None:
            return f"{step.where}: {why}"
    return (
        "no reduction along time (time_mean, resample, climatology, trend, daily_totals): "
        "the result is as long as the data"
    )


def _why_not(step: Step) -> str | None:
    """Why ``step`` (before any reduction) stops the split; None if it works step by step."""
    if step.is_user:
        if getattr(step.function(), STEP_BY_STEP, False) is True:
            return None
        return (
            "a user function that does not say it works time step by time step (set "
            f"{step.name.split(':')[1]}.{STEP_BY_STEP} = True if it does)"
        )
    if step.name == "select_region" and options_of(step).get("mask") is not None:
        return "select_region with mask= takes its land/ocean mask from every time step"
    if step.name in TIME_STEP_BY_STEP:
        return None
    return _WHY.get(step.name, f"{step.name} is not known to work time step by time step")


def _is_ref(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("$")


def _plain(options: dict[str, Any]) -> dict[str, Any]:
    return {str(k): v for k, v in sorted(options.items())}
