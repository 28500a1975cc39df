"""Recipes run end to end: the YAML files (:mod:`~pangeo_hpc.batch.recipe_yaml`), their
chains of recipe functions (:mod:`~pangeo_hpc.batch.chain`), the steps of a run
(:mod:`~pangeo_hpc.batch.steps`: open, compute; :mod:`~pangeo_hpc.batch.results`: write),
their composition (:mod:`~pangeo_hpc.batch.execute`), incremental runs from per-file partial
states (:mod:`~pangeo_hpc.batch.incremental`, kept by
:class:`~pangeo_hpc.batch.state_cache.StateCache`) and the conversion to Zarr."""

from pangeo_hpc.batch.execute import run_recipe
from pangeo_hpc.batch.results import RunResult, write_outputs
from pangeo_hpc.batch.state_cache import StateCache
from pangeo_hpc.batch.steps import Computed, Inputs, compute, open_inputs

__all__ = [
    "Computed",
    "Inputs",
    "RunResult",
    "StateCache",
    "compute",
    "open_inputs",
    "run_recipe",
    "write_outputs",
]
