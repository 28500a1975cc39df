"""What the API reference documents: the one definition of pangeo-hpc's public API.

Public is, for each module below, the names listed: ``None`` takes the module's ``__all__``
(the package, its recipe functions and the packages that export a surface), a list names
the library function of a command-line verb (``python -m pangeo_hpc.run VERB`` calls it)
and the classes it returns. ``docs/api/index.md`` is generated from this table, and
``tests/test_docstrings.py`` validates the docstring of every object in it with numpydoc.
"""

from __future__ import annotations

import importlib
from typing import Any

#: module -> names documented (None: its ``__all__``); the verbs that call each in comments
API: dict[str, list[str] | None] = {
    "pangeo_hpc": None,
    "pangeo_hpc.recipes": None,  # every step of ``steps:``; COMBINE's are added below
    "pangeo_hpc.batch": None,  # run RECIPE, cache (StateCache)
    "pangeo_hpc.clusters": None,  # --cluster, --profile
    "pangeo_hpc.demo": None,  # demo-data
    "pangeo_hpc.storage": None,  # hydration, warmup, survey
    "pangeo_hpc.batch.chains.recipe_yaml": ["available"],  # list
    "pangeo_hpc.batch.pipeline.convert": ["to_zarr"],  # convert
    "pangeo_hpc.batch.pipeline.provenance": ["check"],  # provenance
    "pangeo_hpc.planning.plan": ["plan", "Plan"],  # plan
    "pangeo_hpc.planning.calibrate": ["calibrate", "load_calibration"],  # calibrate
    "pangeo_hpc.planning.budget": ["run_within_budget", "check_budget"],  # run --budget
    "pangeo_hpc.demo.model": ["write_model"],  # demo-data --model
    "pangeo_hpc.lab.jupyter": ["submit_lab"],  # lab
    "pangeo_hpc.lab.setup": ["start_local_lab", "write_lab_config"],  # lab --here, lab-config
    "pangeo_hpc.lab.tunnel": ["tunnel_command"],  # tunnel
    "pangeo_hpc.storage.stage": ["stage"],  # stage
    "pangeo_hpc.storage.inventory": ["inventory"],  # inventory
    "pangeo_hpc.io.references": ["build_index"],  # index
    "pangeo_hpc.s3.options": ["S3Options"],  # --anon, --endpoint-url, ...
}


def names(module: str) -> list[str]:
    """The public names of ``module``, as :data:`API` defines them.

    Parameters
    ----------
    module : str
        A key of :data:`API`.

    Returns
    -------
    list of str
        The names, in the order the API reference shows them.
    """
    listed = API[module]
    mod = importlib.import_module(module)
    if listed is None:
        listed = list(mod.__all__)
        if module == "pangeo_hpc.recipes":
            listed += list(mod.COMBINE)
    return listed


def objects() -> dict[str, Any]:
    """Every public object, by its documented dotted name (``module.name``).

    Returns
    -------
    dict
        ``"pangeo_hpc.recipes.area_mean"`` -> the function, for each name of :data:`API`
        whose object is a function or a class (module-level constants and submodules
        are listed on their module's page, not validated).
    """
    out = {}
    for module in API:
        mod = importlib.import_module(module)
        for name in names(module):
            obj = getattr(mod, name)
            if callable(obj) and not isinstance(obj, type(mod)):
                out[f"{module}.{name}"] = obj
    return out
