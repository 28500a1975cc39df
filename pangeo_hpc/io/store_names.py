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
"""

from __future__ import annotations

from collections.abc import Collection

from pangeo_hpc.errors import DataNotFoundError

__all__ = ["ARCO_NAMES", "store_name"]

#: era5-pds name -> ARCO-ERA5 (CDS) name of the same field. ``total_precipitation`` is not
#: here: ARCO-ERA5 keeps it as the hour's accumulation without era5-pds's ``time1``
#: bounds, so a chain of ``daily_totals`` would put its hours in other days.
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
