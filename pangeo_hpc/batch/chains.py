"""The chains a recipe can name: compositions of the recipe functions of :mod:`pangeo_hpc.recipes`.

A chain takes the opened dataset and returns a lazy :class:`xarray.Dataset` of results;
:func:`answer` then turns the computed results into the numbers a scientist reads first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes import (
    anomaly,
    global_mean,
    linear_trend,
    nino34,
    time_series,
    trend_global_mean,
)
from pangeo_hpc.recipes.cf_attrs import TIME_PERIOD, cell_methods, period_coord, with_attrs
from pangeo_hpc.recipes.grid import horizontal_names, time_name
from pangeo_hpc.recipes.years import decimal_years


def sst_mean(ds: xr.Dataset, variable: str, *, frequency: str = "monthly") -> xr.Dataset:
    """The FSx + Dask study: time-mean map and area-weighted global-mean series."""
    da = ds[variable]
    t = time_name(da)
    series = time_series(da, freq=frequency)  # type: ignore[arg-type]
    # both means stand for the whole period: CF's "time: mean" with a scalar time coordinate
    # (with bounds in the file); a mean is still the input's quantity (standard name kept)
    period = {TIME_PERIOD: period_coord(da[t], "time mean")}
    keep = {k: v for k, v in da.attrs.items() if k in ("units", "standard_name")}
    time_mean = with_attrs(
        da.mean(t, skipna=True),
        {
            **keep,
            "long_name": f"time-mean {da.attrs.get('long_name', variable)}",
            "cell_methods": cell_methods(da, "time: mean", gone={t: "time"}),
        },
    )
    gm = global_mean(da)
    total = with_attrs(
        gm.mean(t),
        {
            **keep,
            "long_name": "area-weighted global and time mean",
            "cell_methods": cell_methods(gm, "time: mean", gone={t: "time"}),
        },
    )
    return xr.Dataset(
        {
            "time_mean": time_mean.assign_coords(period),
            "global_mean_series": series,
            "global_mean": total.assign_coords(period),
        }
    )


def sst_trend(ds: xr.Dataset, variable: str, *, per: str = "decade") -> xr.Dataset:
    """The climate signal: trend map of monthly anomalies, its global mean, and Nino3.4."""
    da = ds[variable]
    t = time_name(da)
    monthly = with_attrs(
        da.resample({t: "MS"}).mean(), {**da.attrs, "cell_methods": cell_methods(da, f"{t}: mean")}
    )
    if monthly.chunks is not None:
        # monthly means are ~30x smaller than the input: regroup them into few large chunks
        # (whole time series, bands of latitude) so that anomalies and trends are a few
        # big tasks instead of thousands of one-month ones
        lat, _ = horizontal_names(monthly)
        monthly = monthly.chunk({t: -1, lat: "auto"})
    anom = anomaly(monthly)
    trend = linear_trend(anom, per=per)  # type: ignore[arg-type]
    gm_anom = global_mean(anom)
    return xr.Dataset(
        {
            "trend": trend,
            "global_mean_trend": trend_global_mean(trend),
            "global_mean_anomaly": gm_anom.assign_attrs(long_name="global-mean monthly anomaly"),
            "nino34": nino34(monthly),
        }
    )


CHAINS: dict[str, Callable[..., xr.Dataset]] = {"sst-mean": sst_mean, "sst-trend": sst_trend}


def build(chain: str, ds: xr.Dataset, variable: str, options: dict[str, Any]) -> xr.Dataset:
    """Run the chain ``chain`` lazily with the recipe's ``options``."""
    try:
        return CHAINS[chain](ds, variable, **options)
    except TypeError as exc:
        raise InputError(f"options {options} do not fit chain {chain!r}: {exc}") from exc


def answer(chain: str, result: xr.Dataset) -> dict[str, Any]:
    """The headline numbers of computed results, JSON-ready."""
    if chain == "sst-mean":
        gm = float(result["global_mean"])
        series = result["global_mean_series"]
        return {
            "global_mean_K": round(gm, 4),
            "global_mean_degC": round(gm - 273.15, 4),
            "series_min_K": round(float(series.min()), 4),
            "series_max_K": round(float(series.max()), 4),
            "steps": int(series.size),
        }
    if chain == "sst-trend":
        anom = result["global_mean_anomaly"]
        years = decimal_years(anom[time_name(anom)])
        ok = np.isfinite(anom.values)
        slope = np.polyfit(years[ok], anom.values[ok], 1)[0] * 10 if ok.sum() > 2 else np.nan
        return {
            "global_mean_trend_K_per_decade": round(float(result["global_mean_trend"]), 4),
            "trend_of_global_mean_K_per_decade": round(float(slope), 4),
            "nino34_std_K": round(float(result["nino34"].std()), 4),
        }
    raise InputError(f"unknown chain {chain!r}: use one of {sorted(CHAINS)}")
