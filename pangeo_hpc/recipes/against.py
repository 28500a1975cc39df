"""What the combine steps over several datasets share (``bias``, ``rmse``,
``correlation``, ``ensemble``): the reference dataset and the others, their area weights,
and the words of a result's ``long_name``.

A combine step takes one :class:`xarray.Dataset` holding one variable per dataset, named
after it (``model``, ``era5``), on one grid, in one set of units and on one time axis
(:func:`~pangeo_hpc.recipes.align_datasets.align_datasets` makes it so).
"""

from __future__ import annotations

from collections.abc import Hashable

import xarray as xr

from pangeo_hpc.errors import InputError, shown
from pangeo_hpc.recipes.grid import cell_area, horizontal_names
from pangeo_hpc.recipes.units import units_of

__all__ = [
    "area_weights",
    "base_name",
    "is_temperature",
    "named",
    "others",
    "reference_of",
]


def reference_of(ds: xr.Dataset, reference: str, step: str) -> xr.DataArray:
    """``ds[reference]``, or one line naming the datasets there are.

    Parameters
    ----------
    ds : xr.Dataset
        The datasets, one variable each.
    reference : str
        The name of the reference dataset.
    step : str
        The step's name, which an error names.

    Returns
    -------
    xr.DataArray
        ``ds[reference]``.

    Raises
    ------
    InputError
        When ``ds`` is not a Dataset, or ``reference`` is not one of its variables (naming
        those there are).
    """
    if not isinstance(ds, xr.Dataset):
        raise InputError(f"{step}() needs a Dataset of one variable per dataset, not {shown(ds)}")
    if reference not in ds.data_vars:
        raise InputError(
            f"{step}: reference={shown(reference)} is not one of the datasets "
            f"{sorted(map(str, ds.data_vars))}: name one of them",
            param="reference",
        )
    return ds[reference]


def others(ds: xr.Dataset, reference: str) -> list[Hashable]:
    """The datasets other than ``reference``, in their order.

    Parameters
    ----------
    ds : xr.Dataset
        The datasets, one variable each.
    reference : str
        The name of the reference dataset.

    Returns
    -------
    list[Hashable]
        The names of the other variables.
    """
    return [n for n in ds.data_vars if n != reference]


def _spatial_dims(da: xr.DataArray, step: str) -> tuple[str, str]:
    """The latitude and longitude dimensions of ``da`` (1-D coordinates), or one line."""
    try:
        lat, lon = horizontal_names(da)
    except InputError:
        raise InputError(
            f"{step}: over='space' needs latitude and longitude, and the data have "
            f"{list(map(str, da.dims))}: use over='time', or keep the grid in steps:",
            param="over",
        ) from None
    return lat, lon


def area_weights(da: xr.DataArray, step: str) -> xr.DataArray:
    """Cell areas of ``da``'s grid (m², from sin(latitude) differences: CDO ``gridarea``).

    Parameters
    ----------
    da : xr.DataArray
        Data on a latitude/longitude grid (1-D coordinates).
    step : str
        The step's name, which an error names.

    Returns
    -------
    xr.DataArray
        Cell areas in m², on ``da``'s latitude and longitude.

    Raises
    ------
    InputError
        When ``da`` has no 1-D latitude and longitude.
    """
    lat, lon = _spatial_dims(da, step)
    return cell_area(da[lat], da[lon])


def base_name(da: xr.DataArray) -> str:
    """What ``da`` is, for a result's ``long_name``: its ``long_name``, else its
    ``standard_name`` in words, else its name.

    Parameters
    ----------
    da : xr.DataArray
        The data.

    Returns
    -------
    str
        Words for what ``da`` is.
    """
    text = da.attrs.get("long_name") or da.attrs.get("standard_name") or da.name or "value"
    return str(text).replace("_", " ")


def named(da: xr.DataArray, name: str, attrs: dict) -> xr.DataArray:
    """``da`` named ``name`` with exactly ``attrs`` (arithmetic keeps the first operand's:
    a weighted sum would otherwise say ``standard_name: cell_area``).

    Parameters
    ----------
    da : xr.DataArray
        The data.
    name : str
        The new name.
    attrs : dict
        The attributes it gets (and no others).

    Returns
    -------
    xr.DataArray
        A renamed copy of ``da``.
    """
    out = da.rename(name)
    out.attrs = dict(attrs)
    return out


def is_temperature(da: xr.DataArray, step: str) -> bool:
    """Whether ``da``'s units are a temperature (its differences then say so in
    ``units_metadata``, CF 1.11).

    Parameters
    ----------
    da : xr.DataArray
        The data.
    step : str
        The step's name, which an error names.

    Returns
    -------
    bool
        True when ``da``'s units are a temperature.

    Raises
    ------
    InputError
        When ``da``'s units cannot be read.
    """
    if "units" not in da.attrs:
        return False
    return bool(units_of(str(da.attrs["units"]), step=step).dimensionality == {"[temperature]": 1})
