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

    Examples
    --------
    >>> import xarray as xr
    >>> ds = xr.Dataset({"era5": ("x", [1.0]), "model": ("x", [2.0])})
    >>> reference_of(ds, "era5", "bias").name
    'era5'
    >>> reference_of(ds, "obs", "bias")
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: bias: reference='obs' is not one of the datasets [...]: ...
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

    Examples
    --------
    >>> import xarray as xr
    >>> ds = xr.Dataset({"era5": ("x", [1.0]), "model_a": ("x", [2.0]), "model_b": ("x", [3.0])})
    >>> others(ds, "era5")
    ['model_a', 'model_b']
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

    Examples
    --------
    >>> import xarray as xr
    >>> lat = xr.DataArray([-45.0, 45.0], dims="lat", attrs={"units": "degrees_north"})
    >>> lon = xr.DataArray([0.0, 180.0], dims="lon", attrs={"units": "degrees_east"})
    >>> da = xr.DataArray([[1.0, 2.0], [3.0, 4.0]], coords={"lat": lat, "lon": lon})
    >>> w = area_weights(da, "fldmean")
    >>> w.attrs, bool((w == w[0, 0]).all())  # four equal quarters of the sphere
    ({'units': 'm2', 'standard_name': 'cell_area'}, True)
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

    Examples
    --------
    >>> import xarray as xr
    >>> base_name(xr.DataArray([1.0], attrs={"standard_name": "air_temperature"}))
    'air temperature'
    >>> base_name(xr.DataArray([1.0], attrs={"long_name": "2 metre temperature"}))
    '2 metre temperature'
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

    Examples
    --------
    >>> import xarray as xr
    >>> attrs = {"units": "K", "standard_name": "air_temperature"}
    >>> da = xr.DataArray([1.0], name="t2m", attrs=attrs)
    >>> out = named(da, "bias", {"units": "K"})
    >>> out.name, out.attrs
    ('bias', {'units': 'K'})
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

    Examples
    --------
    >>> import xarray as xr
    >>> is_temperature(xr.DataArray([1.0], attrs={"units": "K"}), "sub")
    True
    >>> is_temperature(xr.DataArray([1.0], attrs={"units": "m"}), "sub")
    False
    """
    if "units" not in da.attrs:
        return False
    return bool(units_of(str(da.attrs["units"]), step=step).dimensionality == {"[temperature]": 1})
