"""What recipe functions are given, checked: a one-line InputError naming the value, the
function and the fix, instead of an AttributeError from deep inside xarray."""

from __future__ import annotations

from typing import Any

import xarray as xr

from pangeo_hpc.errors import InputError, shown


def check_dataarray(value: Any, recipe: str) -> xr.DataArray:
    """``value`` if it is an xarray DataArray, else an InputError naming the recipe.

    Parameters
    ----------
    value : Any
        What the recipe was given.
    recipe : str
        The recipe's name.

    Returns
    -------
    xr.DataArray
        ``value``.

    Raises
    ------
    InputError
        When ``value`` is not a DataArray.

    Examples
    --------
    >>> import xarray as xr
    >>> check_dataarray(xr.DataArray([1.0], name="sst"), "fldmean").name
    'sst'
    >>> check_dataarray(xr.Dataset({"sst": ("x", [1.0])}), "fldmean")
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: fldmean() needs an xarray DataArray, not Dataset ...
    """
    if isinstance(value, xr.DataArray):
        return value
    hint = (
        "pick one variable, e.g. ds.sea_surface_temperature"
        if isinstance(value, xr.Dataset)
        else "open data with open_era5() or xarray and pass one variable"
    )
    raise InputError(
        f"{recipe}() needs an xarray DataArray, not {type(value).__name__} {shown(value)}: {hint}"
    )
