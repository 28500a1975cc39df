"""Old module names (before the layered package, 0.1) that still import, with a FutureWarning.

``import pangeo_hpc.era5`` gives a module whose attributes are those of
:mod:`pangeo_hpc.io.era5`, and warns once where the new name is. The old names go in 0.3.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from typing import Any

#: old module -> where it lives now
MOVED = {
    "pangeo_hpc.checks": "pangeo_hpc.inputs.checks",
    "pangeo_hpc.periods": "pangeo_hpc.inputs.periods",
    "pangeo_hpc.sizes": "pangeo_hpc.inputs.sizes",
    "pangeo_hpc.walltime": "pangeo_hpc.inputs.walltime",
    "pangeo_hpc.storage.s3": "pangeo_hpc.s3.options",
    "pangeo_hpc.era5": "pangeo_hpc.io.era5",
    "pangeo_hpc.layout": "pangeo_hpc.io.layout",
    "pangeo_hpc.catalog": "pangeo_hpc.io.catalog",
    "pangeo_hpc.scan_cache": "pangeo_hpc.io.scan_cache",
    "pangeo_hpc.reader": "pangeo_hpc.io.reader",
    "pangeo_hpc.references": "pangeo_hpc.io.references",
    "pangeo_hpc.zarr_reader": "pangeo_hpc.io.zarr_reader",
    "pangeo_hpc.chunk_decoding": "pangeo_hpc.io.chunk_decoding",
    "pangeo_hpc.guard": "pangeo_hpc.write.guard",
    "pangeo_hpc.outputs": "pangeo_hpc.write.outputs",
    "pangeo_hpc.plotting": "pangeo_hpc.write.figures",
    "pangeo_hpc.convert": "pangeo_hpc.batch.convert",
    "pangeo_hpc.grid": "pangeo_hpc.recipes.grid",
    "pangeo_hpc.cf_attrs": "pangeo_hpc.recipes.cf_attrs",
    "pangeo_hpc.kernels": "pangeo_hpc.recipes.kernels",
    "pangeo_hpc.cluster": "pangeo_hpc.clusters.start",
    "pangeo_hpc.jobqueue": "pangeo_hpc.clusters.jobqueue",
    "pangeo_hpc.profiles": "pangeo_hpc.clusters.profiles",
    "pangeo_hpc.diagnostics": "pangeo_hpc.clusters.diagnostics",
    "pangeo_hpc.lab_setup": "pangeo_hpc.lab.setup",
    "pangeo_hpc.tunnel": "pangeo_hpc.lab.tunnel",
    "pangeo_hpc.specs": "pangeo_hpc.batch.recipe_yaml",
    "pangeo_hpc.workflows": "pangeo_hpc.batch.legacy",
    "pangeo_hpc.runner": "pangeo_hpc.batch.execute",
    "pangeo_hpc.progress": "pangeo_hpc.cli.progress",
    "pangeo_hpc.plan": "pangeo_hpc.planning.plan",
    "pangeo_hpc.calibrate": "pangeo_hpc.planning.calibrate",
    "pangeo_hpc.validation": "pangeo_hpc.planning.validation",
    "pangeo_hpc.overhead": "pangeo_hpc.planning.overhead",
}

#: old modules whose parts went to more than one place: the others, searched in order
ALSO = {
    "pangeo_hpc.checks": ("pangeo_hpc.recipes.checks",),
    "pangeo_hpc.catalog": ("pangeo_hpc.io.hdf5_meta",),
    "pangeo_hpc.convert": ("pangeo_hpc.io.zarr_reader", "pangeo_hpc.write.zarr"),
}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names only; every other import goes on to the normal finders."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname in MOVED:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        return types.ModuleType(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        new = MOVED[module.__name__]
        warnings.warn(
            f"{module.__name__} is now {new}: import from there "
            "(the old name keeps working until pangeo-hpc 0.3)",
            FutureWarning,
            stacklevel=2,
        )
        targets = [importlib.import_module(m) for m in (new, *ALSO.get(module.__name__, ()))]
        module.__doc__ = targets[0].__doc__

        def attribute(name: str) -> Any:
            for target in targets:
                if hasattr(target, name):
                    return getattr(target, name)
            raise AttributeError(f"module {module.__name__!r} (now {new!r}) has no {name!r}")

        module.__getattr__ = attribute  # type: ignore[method-assign]
        module.__dir__ = lambda: sorted({n for t in targets for n in dir(t)})  # type: ignore[method-assign]


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
