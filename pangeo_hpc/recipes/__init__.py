"""Recipes: pure, lazy functions on xarray objects.

They never open files, start clusters or compute: give them Dask-backed data and they
return Dask-backed results. Every one accepts CF latitude/longitude under any usual name,
latitude in either order, and longitude in 0..360 or -180..180.
"""

from pangeo_hpc.recipes.indices import nino34
from pangeo_hpc.recipes.means import global_mean, time_series, zonal_mean
from pangeo_hpc.recipes.seasonal import anomaly, climatology
from pangeo_hpc.recipes.trend import linear_trend, trend_global_mean
from pangeo_hpc.recipes.units import convert_units
from pangeo_hpc.recipes.vectors import magnitude, wind_speed

__all__ = [
    "anomaly",
    "climatology",
    "convert_units",
    "global_mean",
    "linear_trend",
    "magnitude",
    "nino34",
    "time_series",
    "trend_global_mean",
    "wind_speed",
    "zonal_mean",
]
