"""Recipes: pure, lazy functions on xarray objects.

They never open files, start clusters or compute: give them Dask-backed data and they
return Dask-backed results. Every one accepts CF latitude/longitude under any usual name,
latitude in either order, and longitude in 0..360 or -180..180. Every name in ``__all__``
is a step a recipe YAML can name in ``steps:``; every name in :data:`COMBINE`, a step of
``combine:`` over several datasets (one Dataset of one variable per dataset).
"""

from pangeo_hpc.recipes.accumulations import daily_totals
from pangeo_hpc.recipes.bias import bias as bias  # a combine step (COMBINE)
from pangeo_hpc.recipes.correlation import correlation as correlation  # a combine step (COMBINE)
from pangeo_hpc.recipes.ensemble import ensemble as ensemble  # a combine step (COMBINE)
from pangeo_hpc.recipes.indices import nino34
from pangeo_hpc.recipes.means import area_mean, global_mean, time_mean, time_series, zonal_mean
from pangeo_hpc.recipes.months import select_months, select_season
from pangeo_hpc.recipes.percentile import percentile
from pangeo_hpc.recipes.regions import select_region
from pangeo_hpc.recipes.regrid import regrid
from pangeo_hpc.recipes.resample import resample, running_mean
from pangeo_hpc.recipes.rmse import rmse as rmse  # a combine step (COMBINE)
from pangeo_hpc.recipes.seasonal import anomaly, climatology
from pangeo_hpc.recipes.trend import linear_trend, trend, trend_global_mean
from pangeo_hpc.recipes.units import convert_units
from pangeo_hpc.recipes.vectors import magnitude, wind_speed

__all__ = [
    "anomaly",
    "area_mean",
    "climatology",
    "convert_units",
    "daily_totals",
    "global_mean",
    "linear_trend",
    "magnitude",
    "nino34",
    "percentile",
    "regrid",
    "resample",
    "running_mean",
    "select_months",
    "select_region",
    "select_season",
    "time_mean",
    "time_series",
    "trend",
    "trend_global_mean",
    "wind_speed",
    "zonal_mean",
]

#: the steps of a recipe's ``combine:`` (over several datasets, each a variable)
COMBINE = ("bias", "correlation", "ensemble", "rmse")
