"""Climate indices."""

from __future__ import annotations

import re

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.cf_attrs import with_attrs
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import cell_area, horizontal_names, time_name
from pangeo_hpc.recipes.means import time_series
from pangeo_hpc.recipes.seasonal import anomaly

NINO34 = {"lat": (-5.0, 5.0), "lon": (190.0, 240.0)}  # 5S-5N, 170W-120W


def nino34(da: xr.DataArray, *, smooth: int = 1) -> xr.DataArray:
    """Nino3.4 index: monthly SST anomaly averaged over 5S-5N, 170W-120W.

    Parameters
    ----------
    da : DataArray
        SST with a time dimension on a lat/lon grid (0..360 or -180..180 longitude).
    smooth : int
        Length of the centred running mean in months (3 gives the ONI); 1 means none.
    """
    check_dataarray(da, "nino34")
    lat, lon = horizontal_names(da)
    if da[lat].ndim != 1 or da[lon].ndim != 1:
        raise InputError("nino34 needs 1-D latitude and longitude coordinates")
    t = time_name(da)
    la = np.asarray(da[lat].values, dtype="f8")
    lo = np.mod(np.asarray(da[lon].values, dtype="f8"), 360.0)
    ilat = np.flatnonzero((la >= NINO34["lat"][0]) & (la <= NINO34["lat"][1]))
    ilon = np.flatnonzero((lo >= NINO34["lon"][0]) & (lo <= NINO34["lon"][1]))
    if ilat.size == 0 or ilon.size == 0:
        raise InputError(
            "the grid has no point in the Nino3.4 box (5S-5N, 170W-120W): "
            "give data that covers the equatorial Pacific"
        )
    where = {da[lat].dims[0]: ilat, da[lon].dims[0]: ilon}
    area = cell_area(da[lat], da[lon]).isel(where)  # areas of the whole grid's cells
    monthly = time_series(da.isel(where), freq="monthly", weights=area)
    index = anomaly(monthly)
    if smooth > 1:
        index = index.rolling({t: smooth}, center=True).mean()
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
