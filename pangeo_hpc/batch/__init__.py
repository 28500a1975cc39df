"""Recipes run end to end, one job per folder, each importing only from those below it:

* :mod:`~pangeo_hpc.batch.pipeline`: open the inputs, compute, write; ``run_recipe``;
* :mod:`~pangeo_hpc.batch.incremental`: per-file partial states, roll-ups, the read plan
  and the state cache;
* :mod:`~pangeo_hpc.batch.chains`: the recipe language (YAML, chains, options, code
  identity).
"""

import importlib
from typing import TYPE_CHECKING, Any

#: each name and its module: imported at first use (``chains`` alone stays light)
_LAZY = {
    "Computed": "pangeo_hpc.batch.pipeline.steps",
    "Inputs": "pangeo_hpc.batch.pipeline.steps",
    "RunResult": "pangeo_hpc.batch.pipeline.results",
    "StateCache": "pangeo_hpc.batch.incremental.state_cache",
    "compute": "pangeo_hpc.batch.pipeline.steps",
    "load_multi": "pangeo_hpc.batch.chains.multi_yaml",
    "open_inputs": "pangeo_hpc.batch.pipeline.steps",
    "run_multi": "pangeo_hpc.batch.pipeline.multi_run",
    "run_recipe": "pangeo_hpc.batch.pipeline.execute",
    "write_outputs": "pangeo_hpc.batch.pipeline.results",
}
__all__ = [
    "Computed",
    "Inputs",
    "RunResult",
    "StateCache",
    "compute",
    "load_multi",
    "open_inputs",
    "run_multi",
    "run_recipe",
    "write_outputs",
]

if TYPE_CHECKING:
    from pangeo_hpc.batch.chains.multi_yaml import load_multi
    from pangeo_hpc.batch.incremental.state_cache import StateCache
    from pangeo_hpc.batch.pipeline.execute import run_recipe
    from pangeo_hpc.batch.pipeline.multi_run import run_multi
    from pangeo_hpc.batch.pipeline.results import RunResult, write_outputs
    from pangeo_hpc.batch.pipeline.steps import Computed, Inputs, compute, open_inputs


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'pangeo_hpc.batch' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
