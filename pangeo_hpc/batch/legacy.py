"""The two chains of 0.1 (``chain: sst-mean``, ``chain: sst-trend``) as the steps they stand
for, so that a recipe file of 0.1 still runs (with a FutureWarning) and gives the same answers
as ``recipes/era5-sst-mean.yaml`` and ``recipes/era5-sst-trend.yaml``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def sst_mean(frequency: str = "monthly") -> dict[str, Any]:
    """Time-mean map, area-weighted mean series and their overall mean."""
    return {
        "results": {
            "time_mean": [{"time_mean": {}}],
            "global_mean_series": [{"area_mean": {}}, {"resample": {"freq": frequency}}],
            "global_mean": [{"area_mean": {}}, {"time_mean": {}}],
        }
    }


def sst_trend(per: str = "decade") -> dict[str, Any]:
    """Trend map of monthly anomalies, its area mean, the mean anomaly series and Nino3.4."""
    return {
        "steps": [{"resample": {"freq": "monthly"}}],
        "results": {
            "trend": [{"anomaly": {}}, {"trend": {"per": per}}],
            "global_mean_trend": [{"anomaly": {}}, {"trend": {"per": per}}, {"area_mean": {}}],
            "global_mean_anomaly": [{"anomaly": {}}, {"area_mean": {}}],
            "nino34": [{"nino34": {}}],
        },
    }


#: name of a 0.1 chain -> the recipe keys (steps, results) it stands for, given its options
LEGACY_CHAINS: dict[str, Callable[..., dict[str, Any]]] = {
    "sst-mean": sst_mean,
    "sst-trend": sst_trend,
}
