"""Recipes: pure, lazy functions on xarray objects.

They never open files, start clusters or compute: give them Dask-backed data and they
return Dask-backed results. Every one accepts CF latitude/longitude under any usual name,
latitude in either order, and longitude in 0..360 or -180..180.
"""

from pangeo_hpc.recipes.indices import nino34
from pangeo_hpc.recipes.means import area_mean, global_mean, time_mean, time_series, zonal_mean
from pangeo_hpc.recipes.percentile import percentile
from pangeo_hpc.recipes.seasonal import anomaly, climatology
from pangeo_hpc.recipes.trend import linear_trend, trend, trend_global_mean

__all__ = [
    "anomaly",
    "area_mean",
    "climatology",
    "global_mean",
    "linear_trend",
    "nino34",
    "percentile",
    "time_mean",
    "time_series",
    "trend",
    "trend_global_mean",
    "zonal_mean",
]
