"""``rmse``: the root-mean-square difference of each dataset from the reference, over the
globe's area (pattern) or over time."""

from __future__ import annotations

from typing import Literal

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError, shown
from pangeo_hpc.recipes.against import (
    area_weights,
    base_name,
    is_temperature,
    named,
    others,
    reference_of,
)
from pangeo_hpc.recipes.grid import time_name
from pangeo_hpc.recipes.units import DIFFERENCE

__all__ = ["rmse"]

OVER = ("space", "time")


def rmse(ds: xr.Dataset, *, reference: str, over: Literal["space", "time"] = "space") -> xr.Dataset:
    """Root-mean-square difference of each dataset from the reference (CDO ``sqrt -fldmean
    -sqr -sub``, ``sqrt -timmean -sqr -sub``).

    ``over="space"`` (pattern): the square root of the area-weighted mean of the squared
    differences over latitude and longitude, cells weighted by their area (sin(latitude)
    differences times longitude widths, as CDO ``gridarea``), cells missing in either
    dataset left out: ``cdo sqrt -fldmean -sqr -sub model.nc era5.nc``. ``over="time"``:
    the square root of the mean over time of the squared differences, at each point:
    ``cdo sqrt -timmean -sqr -sub model.nc era5.nc``. ESMValCore: ``distance_metric``
    with ``metric: weighted_rmse`` (space) or ``rmse``.

    Parameters
    ----------
    ds : Dataset
        One variable per dataset, named after it, on one grid, in one set of units.
    reference : str
        The dataset the others are compared with.
    over : {"space", "time"}
        Pattern (over the grid; any other dimension such as time kept) or in time.

    Returns
    -------
    Dataset
        Lazy for lazy input: one variable per other dataset, named after it, in the
        data's units, ``long_name`` ``RMS difference of ... model minus era5``.

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
    >>> ds = xr.Dataset({"model": da + 1, "obs": da})
    >>> float(rmse(ds, reference="obs")["model"])
    1.0
    """
    ref = reference_of(ds, reference, "rmse")
    if over not in OVER:
        raise InputError(f"rmse: over={shown(over)} is not one of {list(OVER)}", param="over")
    out = {}
    for name in others(ds, reference):
        da = ds[name]
        sq = (da - ref) ** 2
        if over == "space":
            area = area_weights(ref, "rmse")
            dims = list(area.dims)
            w = area.where(sq.notnull(), 0.0)
            total = w.sum(dims)
            mean = (sq.fillna(0.0) * w).sum(dims) / total.where(total > 0)
        else:
            mean = sq.mean(time_name(sq), skipna=True)
        value = np.sqrt(mean)
        attrs = {k: v for k, v in da.attrs.items() if k in ("units",)}
        if is_temperature(da, "rmse"):
            attrs["units_metadata"] = DIFFERENCE
        attrs["long_name"] = (
            f"root-mean-square difference of {base_name(da)} over {over}: {name} minus {reference}"
        )
        if over == "space":
            attrs["comment"] = "area-weighted (cell areas as CDO gridarea)"
        out[name] = named(value, name, attrs)
    return xr.Dataset(out, attrs={"reference": reference})
