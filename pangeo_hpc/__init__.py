"""pangeo-hpc: ERA5-scale NetCDF analysis on HPC and cloud clusters with Dask and xarray."""

from . import config, recipes
from .cluster import get_cluster, start_cluster
from .demo import DemoSpec, generate
from .era5 import open_era5
from .errors import DataNotFoundError, InputError

__all__ = [
    "DataNotFoundError",
    "DemoSpec",
    "InputError",
    "config",
    "generate",
    "get_cluster",
    "open_era5",
    "recipes",
    "start_cluster",
]
__version__ = "0.1.0"
