"""A recipe's variable names in a Zarr store or Icechunk repository of ERA5.

A recipe names its variables as era5-pds does (``air_temperature_at_2_metres``); an
analysis-ready store such as Google's ARCO-ERA5 (``gs://gcp-public-data-arco-era5/ar/...``)
holds the same fields under the names of the CDS (``2m_temperature``), with dimensions
``time``, ``latitude`` (descending) and ``longitude``. :func:`store_name` finds a
recipe's name in a store: the name itself when the store has it, else its ARCO-ERA5
name from :data:`ARCO_NAMES`. The opened variable is renamed to the recipe's name, so the
chain and its ``$name`` options read the same on either layout; dimensions are kept as
the store has them (the recipe functions find latitude, longitude and time by their CF
attributes).

Accumulations differ in more than the name: ARCO-ERA5's ``total_precipitation`` holds at
each ``time`` the metres of the hour *ending* then, as era5-pds's
``precipitation_amount_1hour_Accumulation`` does at ``time1``, but without era5-pds's
``time1_bounds`` and attributes. :func:`as_accumulation` gives the opened variable what
era5-pds gives it (:data:`ACCUMULATED`): the interval of each step, ``[t - 1 h, t]``, as
bounds of the time axis (so ``daily_totals`` counts the hour ending at 00:00 in the day
before, and ``convert_units``/``to_rate`` know the period), the units, the standard name
and ``cell_methods: time: sum``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

import numpy as np

from pangeo_hpc.errors import DataNotFoundError, InputError

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["ACCUMULATED", "ARCO_NAMES", "as_accumulation", "store_name"]

#: era5-pds name -> ARCO-ERA5 (CDS) name of the same field
ARCO_NAMES: dict[str, str] = {
    "sea_surface_temperature": "sea_surface_temperature",
    "air_temperature_at_2_metres": "2m_temperature",
    "dew_point_temperature_at_2_metres": "2m_dewpoint_temperature",
    "eastward_wind_at_10_metres": "10m_u_component_of_wind",
    "northward_wind_at_10_metres": "10m_v_component_of_wind",
    "eastward_wind_at_100_metres": "100m_u_component_of_wind",
    "northward_wind_at_100_metres": "100m_v_component_of_wind",
    "air_pressure_at_mean_sea_level": "mean_sea_level_pressure",
    "surface_air_pressure": "surface_pressure",
    "sea_ice_cover": "sea_ice_cover",
    "precipitation_amount_1hour_Accumulation": "total_precipitation",
}

#: ARCO-ERA5 accumulations over the hour ending at each time label: the length of that
#: hour and the attributes era5-pds gives the same field (``units`` as there: metres)
ACCUMULATED: dict[str, tuple[np.timedelta64, dict[str, str]]] = {
    "total_precipitation": (
        np.timedelta64(1, "h"),
        {
            "units": "m",
            "standard_name": "lwe_thickness_of_precipitation_amount",
            "long_name": "Total precipitation",
        },
    ),
}


def store_name(variable: str, present: Collection[str], where: str) -> str:
    """The name under which the store ``where`` holds the recipe's ``variable``.

    Parameters
    ----------
    variable : str
        As the recipe names it (era5-pds, or the store's own name).
    present : collection of str
        The store's data variables.
    where : str
        The store, for the message.

    Returns
    -------
    str
        ``variable`` if the store has it, else its :data:`ARCO_NAMES` name.

    Raises
    ------
    DataNotFoundError
        Neither is in the store; the message lists what it holds.

    Examples
    --------
    >>> store_name("air_temperature_at_2_metres", ["2m_temperature"], "arco.zarr")
    '2m_temperature'
    """
    if variable in present:
        return variable
    arco = ARCO_NAMES.get(variable)
    if arco is not None and arco in present:
        return arco
    also = f" (nor its ARCO-ERA5 name {arco!r})" if arco and arco != variable else ""
    raise DataNotFoundError(
        f"variable {variable!r}{also} is not in the store {where!r}: it holds "
        f"{sorted(present)}; name one of those in dataset.variable",
        param="variable",
    )


def as_accumulation(ds: xr.Dataset, variable: str, name: str, t: str) -> xr.Dataset:
    """``ds`` with its ``variable`` (the store's ``name``, on time axis ``t``) given what
    era5-pds gives an accumulation (the module's description), if ``name`` is one of
    :data:`ACCUMULATED`; else ``ds`` unchanged.

    The bounds are a coordinate ``{t}_bounds(t, nv)`` named by ``t``'s ``bounds``
    attribute (CF 7.1), in memory (made from the time labels, which are), so nothing is
    read to know them. Attributes the store gives are kept; ``units`` must be the same.

    Parameters
    ----------
    ds : xr.Dataset
        The store's dataset.
    variable : str
        The recipe's variable name.
    name : str
        The store's array name.
    t : str
        The time dimension.

    Returns
    -------
    xr.Dataset
        The dataset.

    Raises
    ------
    InputError
        If the store's ``units`` are not era5-pds's (the values would be off by a factor).

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> hours = pd.date_range("2008-01-01T01", periods=2, freq="h")
    >>> ds = xr.Dataset({"tp": ("time", np.zeros(2, "f4"), {"units": "m"})}, coords={"time": hours})
    >>> out = as_accumulation(ds, "tp", "total_precipitation", "time")
    >>> str(out["time_bounds"].values[0, 0]), out.tp.attrs["cell_methods"]  # hour ending 01:00
    ('2008-01-01T00:00:00.000000', 'time: sum')
    """
    if name not in ACCUMULATED:
        return ds
    step, attrs = ACCUMULATED[name]
    units = ds[variable].attrs.get("units")
    if units is not None and units != attrs["units"]:
        raise InputError(
            f"{name!r} of the store is in {units!r}, not {attrs['units']!r} as ARCO-ERA5's "
            f"and era5-pds's: convert the store, or name the variable {name!r} and add "
            "convert_units to the steps",
            param="variable",
        )
    ends = ds[t].values
    bounds = np.stack([ends - step, ends], axis=1)
    bname = f"{t}_bounds"
    ds = ds.assign_coords({bname: ((t, "nv"), bounds)})
    ds[t].attrs = {**ds[t].attrs, "bounds": bname}
    ds[variable].attrs = {
        **attrs,
        **ds[variable].attrs,
        "cell_methods": f"{t}: sum",
    }
    return ds
