"""``correlation``: Pearson's correlation of each dataset with the reference, over the
globe's area (pattern correlation) or over time."""

from __future__ import annotations

from typing import Literal

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError, shown
from pangeo_hpc.recipes.against import area_weights, base_name, named, others, reference_of
from pangeo_hpc.recipes.grid import time_name

__all__ = ["correlation"]

OVER = ("space", "time")


def _pearson(x: xr.DataArray, y: xr.DataArray, w: xr.DataArray, dims: list[str]) -> xr.DataArray:
    """Weighted Pearson correlation of ``x`` and ``y`` along ``dims`` (points missing in
    either left out)."""
    both = x.notnull() & y.notnull()
    w = w.where(both, 0.0)
    x, y = x.fillna(0.0), y.fillna(0.0)
    total = w.sum(dims)
    total = total.where(total > 0)
    mx, my = (w * x).sum(dims) / total, (w * y).sum(dims) / total
    dx, dy = x - mx, y - my
    cov = (w * dx * dy).sum(dims)
    var = (w * dx * dx).sum(dims) * (w * dy * dy).sum(dims)
    return cov / np.sqrt(var.where(var > 0))


def correlation(
    ds: xr.Dataset, *, reference: str, over: Literal["space", "time"] = "space"
) -> xr.Dataset:
    """Pearson's correlation coefficient of each dataset with the reference (CDO ``fldcor``,
    ``timcor``).

    ``over="space"`` (pattern correlation): over latitude and longitude, each cell weighted
    by its area (CDO ``gridarea``), cells missing in either left out, one value per time
    step if time is kept: ``cdo fldcor model.nc era5.nc``. ``over="time"``: over the time
    steps at each point, each step weighted equally: ``cdo timcor model.nc era5.nc``.
    ESMValCore: ``distance_metric`` with ``metric: weighted_pearsonr`` / ``pearsonr``.

    Parameters
    ----------
    ds : Dataset
        One variable per dataset, named after it, on one grid.
    reference : str
        The dataset the others are correlated with.
    over : {"space", "time"}
        Pattern (over the grid) or in time (at each point).

    Returns
    -------
    Dataset
        Lazy for lazy input: one dimensionless variable per other dataset, named after it,
        ``long_name`` ``... correlation of ...: model with era5``; missing where either
        field is constant.

    Raises
    ------
    InputError
        For an unknown ``reference`` or ``over``, or data without the dimensions asked for.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> lat = xr.DataArray([-45.0, 45.0], dims="lat", attrs={"units": "degrees_north"})
    >>> lon = xr.DataArray([0.0, 180.0], dims="lon", attrs={"units": "degrees_east"})
    >>> da = xr.DataArray(
    ...     [[1.0, 2.0], [3.0, 4.0]], coords={"lat": lat, "lon": lon}, dims=("lat", "lon"),
    ...     attrs={"units": "K"},
    ... )
    >>> ds = xr.Dataset({"model": da, "obs": 2 * da})
    >>> float(correlation(ds, reference="obs")["model"])
    1.0
    """
    ref = reference_of(ds, reference, "correlation")
    if over not in OVER:
        raise InputError(
            f"correlation: over={shown(over)} is not one of {list(OVER)}", param="over"
        )
    out = {}
    for name in others(ds, reference):
        da = ds[name]
        if over == "space":
            w = area_weights(ref, "correlation")
            value = _pearson(da, ref, w, list(map(str, w.dims)))
        else:
            t = time_name(ref)
            value = _pearson(da, ref, xr.ones_like(ref[t], dtype="f8"), [t])
        what = "pattern" if over == "space" else "temporal"
        attrs = {
            "units": "1",
            "long_name": f"{what} correlation of {base_name(da)}: {name} with {reference}",
        }
        out[name] = named(value, name, attrs)
    return xr.Dataset(out, attrs={"reference": reference})
