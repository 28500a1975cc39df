"""Climate indices, as compositions of the recipe functions."""

from __future__ import annotations

import re

import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.cf_attrs import with_attrs
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import rectilinear_names
from pangeo_hpc.recipes.means import area_mean
from pangeo_hpc.recipes.regions import select_region
from pangeo_hpc.recipes.resample import resample, running_mean
from pangeo_hpc.recipes.seasonal import anomaly
from pangeo_hpc.recipes.traits import whole_series


@whole_series("nino34 takes anomalies against the whole period")
def nino34(
    da: xr.DataArray, *, smooth: int = 1, reference: list[str] | None = None
) -> xr.DataArray:
    """Nino3.4 index: monthly SST anomaly averaged over 5S-5N, 170W-120W (CDO ``ymonsub
    -monmean -fldmean -sellonlatbox,190,240,-5,5``).

    The chain ``select_region(name="nino34")``, ``area_mean``, ``resample(freq="monthly")``,
    ``anomaly(reference=...)`` and, with ``smooth``, ``running_mean(window=smooth)``: the
    same as CDO ``runmean,N -ymonsub -monmean -fldmean -sellonlatbox,190,240,-5,5``.

    Parameters
    ----------
    da : DataArray
        SST with a time dimension on a lat/lon grid (0..360 or -180..180 longitude).
    smooth : int
        Length of the running mean in months (3 gives the ONI); 1 means none. A running
        mean has ``smooth - 1`` fewer values, labelled with the middle of each window.
    reference : [start, end], optional
        The period of the climatology (``["1991-01", "2020-12"]``); default all the data.

    Returns
    -------
    DataArray
        The index, one value per month (per full window with ``smooth``), in the units of
        ``da``.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")
    >>> values = np.tile(np.arange(12.0), 2) + np.repeat([0.0, 1.0], 12)  # 2001: 1 K warmer
    >>> sst = xr.DataArray(
    ...     np.broadcast_to(values[:, None, None], (24, 2, 2)),
    ...     coords={"time": time, "lat": [-2.5, 2.5], "lon": [200.0, 220.0]},
    ...     dims=("time", "lat", "lon"), attrs={"units": "K"},
    ... )
    >>> nino34(sst).values[[0, 12]].tolist()
    [-0.5, 0.5]
    """
    check_dataarray(da, "nino34")
    rectilinear_names(da, "nino34")
    try:
        box = select_region(da, name="nino34")
    except InputError:
        raise InputError(
            "the grid has no point in the Nino3.4 box (5S-5N, 170W-120W): "
            "give data that covers the equatorial Pacific"
        ) from None
    monthly = resample(area_mean(box), freq="monthly")
    index = anomaly(monthly, reference=reference)
    if smooth > 1:
        index = running_mean(index, window=smooth)
    # the area of the mean in a comment (CF 7.3: after the method and its where clause; no
    # "comment:" keyword and no colon, compliance-checker reads those as keywords)
    methods = re.sub(
        r"area: mean(?: where \S+)?",
        lambda m: f"{m.group(0)} (Nino3.4 box 5S-5N 170W-120W)",
        index.attrs.get("cell_methods", ""),
        count=1,
    )
    long_name = "Nino3.4 SST anomaly"
    if smooth > 1:  # not a second "time: mean" entry: cfchecks rejects a name given twice
        long_name += f", {smooth}-month running mean"
    attrs = {"units": da.attrs.get("units", "K"), "long_name": long_name}
    return with_attrs(index.rename("nino34"), {**attrs, "cell_methods": methods})
