"""The magnitude of a vector from its two components: wind speed from u and v."""

from __future__ import annotations

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.cf_attrs import with_attrs
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.traits import step_by_step
from pangeo_hpc.recipes.units import convert, same_units

#: standard names of two components -> that of their magnitude (CF standard-name table)
SPEEDS = {
    frozenset({"eastward_wind", "northward_wind"}): "wind_speed",
    frozenset({"x_wind", "y_wind"}): "wind_speed",
    frozenset({"eastward_sea_water_velocity", "northward_sea_water_velocity"}): "sea_water_speed",
    frozenset({"sea_water_x_velocity", "sea_water_y_velocity"}): "sea_water_speed",
    frozenset({"surface_downward_eastward_stress", "surface_downward_northward_stress"}): (
        "magnitude_of_surface_downward_stress"
    ),
}


def _label(da: xr.DataArray) -> str:
    return str(da.attrs.get("long_name") or da.attrs.get("standard_name") or da.name or "field")


def _standard(da: xr.DataArray) -> str | None:
    """The standard name, or a known one that the name starts with (era5-pds names the
    10 m wind ``eastward_wind_at_10_metres``)."""
    if "standard_name" in da.attrs:
        return str(da.attrs["standard_name"])
    known = sorted({n for pair in SPEEDS for n in pair}, key=len, reverse=True)
    return next((n for n in known if str(da.name or "").startswith(n)), None)


@step_by_step
def magnitude(da: xr.DataArray, *, other: xr.DataArray, name: str | None = None) -> xr.DataArray:
    """``sqrt(da² + other²)``, lazily, point by point: the length of the vector whose
    components are ``da`` and ``other``. CDO: ``expr,'ws=sqrt(u*u+v*v)'``.

    Parameters
    ----------
    da : DataArray
        The first component, e.g. the eastward wind.
    other : DataArray
        The second component on the same grid and times. Converted to the units of
        ``da`` when they differ (``km h-1`` to ``m s-1``).
    name : str, optional
        Name of the result. By default the standard name of the magnitude when the two
        standard names are a known pair (``eastward_wind`` and ``northward_wind`` make
        ``wind_speed``), else ``magnitude``.

    Returns
    -------
    DataArray
        In the units of ``da``; NaN where either component is NaN. ``standard_name`` for a
        known pair (see :data:`SPEEDS`), else none and ``long_name``
        ``"magnitude of (A, B)"``. The components' ``cell_methods`` stay when they agree
        (the speed of a mean wind, not the mean speed).

    Raises
    ------
    InputError
        Units of different kinds (``m s-1`` and ``K``), units on one component only, or
        components on different grids or times.

    Examples
    --------
    >>> import xarray as xr
    >>> u = xr.DataArray([3.0, -6.0], dims="x", attrs={"units": "m s-1"})
    >>> v = xr.DataArray([4.0, 8.0], dims="x", attrs={"units": "m s-1"})
    >>> magnitude(u, other=v).values.tolist()
    [5.0, 10.0]
    """
    return _magnitude(da, other, name, step="magnitude")


def _magnitude(
    da: xr.DataArray, other: xr.DataArray, name: str | None, *, step: str
) -> xr.DataArray:
    check_dataarray(da, step)
    check_dataarray(other, step)
    has = ("units" in da.attrs, "units" in other.attrs)
    if has[0] != has[1]:
        missing = other if has[0] else da
        raise InputError(
            f"{step}: {missing.name or 'a component'!s} has no units attribute while the other "
            "has: set it, e.g. v.attrs['units'] = 'm s-1'",
            param="other",
        )
    if all(has) and not same_units(da, other):
        other = convert(other, str(da.attrs["units"]), step=step)
    try:
        da_, other_ = xr.align(da, other, join="exact")
    except ValueError as exc:
        raise InputError(
            f"{step}: {da.name!s} and {other.name!s} are not on the same grid and times "
            f"({dict(da.sizes)} and {dict(other.sizes)}): select the same region and period "
            "of both",
            param="other",
        ) from exc
    out = xr.apply_ufunc(np.hypot, da_, other_, dask="allowed", keep_attrs=False)
    pair = frozenset({_standard(da), _standard(other)})
    attrs = {"units": da.attrs["units"]} if "units" in da.attrs else {}
    if pair in SPEEDS:
        standard = SPEEDS[pair]
        attrs |= {"standard_name": standard, "long_name": standard.replace("_", " ")}
    else:
        standard = "magnitude"
        attrs["long_name"] = f"magnitude of ({_label(da)}, {_label(other)})"
    if "cell_methods" in da.attrs and da.attrs["cell_methods"] == other.attrs.get("cell_methods"):
        attrs["cell_methods"] = da.attrs["cell_methods"]
    return with_attrs(out.rename(name or standard), attrs)


@step_by_step
def wind_speed(u: xr.DataArray, *, v: xr.DataArray) -> xr.DataArray:
    """Wind speed ``sqrt(u² + v²)`` from the eastward ``u`` and northward ``v`` wind, in
    the units of ``u`` (``v`` converted when it differs). CDO: ``expr,'ws=sqrt(u*u+v*v)'``.

    Parameters
    ----------
    u : DataArray
        Eastward wind (ERA5 ``eastward_wind_at_10_metres``).
    v : DataArray
        Northward wind on the same grid and times.

    Returns
    -------
    DataArray
        :func:`magnitude` of ``u`` and ``v``: named ``wind_speed`` with that standard name
        when their standard names (or era5-pds names) say they are the eastward and
        northward wind; else, as the names come from the data, ``magnitude``.

    Examples
    --------
    >>> import xarray as xr
    >>> u = xr.DataArray([3.0, -6.0], dims="x", attrs={"units": "m s-1"})
    >>> v = xr.DataArray([4.0, 8.0], dims="x", attrs={"units": "m s-1"})
    >>> wind_speed(u, v=v).values.tolist()
    [5.0, 10.0]
    """
    return _magnitude(u, v, None, step="wind_speed")
