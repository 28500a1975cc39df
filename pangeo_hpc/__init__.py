"""pangeo-hpc: ERA5-scale NetCDF analysis on HPC and cloud clusters with Dask and xarray.

The package is layered: each folder imports only from the ones below it. The layers are
stated once, as the import-linter contract in ``pyproject.toml`` (``make lint`` checks it);
the documentation's Architecture page (``docs/architecture.md``) renders it, with what
each folder and module holds.
"""

import importlib
from typing import TYPE_CHECKING, Any

#: what ``import pangeo_hpc`` offers, and the module that holds each: imported at first use,
#: so that ``python -m pangeo_hpc.run --help`` and argument errors import neither xarray
#: nor dask (issue 29)
_LAZY = {
    "DataNotFoundError": "pangeo_hpc.errors",
    "DemoSpec": "pangeo_hpc.demo",
    "InputError": "pangeo_hpc.errors",
    "config": "pangeo_hpc.config",
    "explore": "pangeo_hpc.lab.explore",
    "generate": "pangeo_hpc.demo",
    "get_cluster": "pangeo_hpc.clusters",
    "open_era5": "pangeo_hpc.io.era5",
    "open_files": "pangeo_hpc.io.files",
    "recipes": "pangeo_hpc.recipes",
    "running_cluster": "pangeo_hpc.clusters",
    "start_cluster": "pangeo_hpc.clusters",
}
__all__ = [
    "DataNotFoundError",
    "DemoSpec",
    "InputError",
    "config",
    "explore",
    "generate",
    "get_cluster",
    "open_era5",
    "open_files",
    "recipes",
    "running_cluster",
    "start_cluster",
]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from pangeo_hpc import config, recipes
    from pangeo_hpc.clusters import get_cluster, running_cluster, start_cluster
    from pangeo_hpc.demo import DemoSpec, generate
    from pangeo_hpc.errors import DataNotFoundError, InputError
    from pangeo_hpc.io.era5 import open_era5
    from pangeo_hpc.io.files import open_files
    from pangeo_hpc.lab.explore import explore


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'pangeo_hpc' has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name])
    value = module if module.__name__ == f"pangeo_hpc.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
