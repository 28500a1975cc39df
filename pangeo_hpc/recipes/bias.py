"""``bias``: every dataset minus the reference (CDO ``sub``; ESMValCore ``bias``)."""

from __future__ import annotations

import xarray as xr

from pangeo_hpc.recipes.against import base_name, is_temperature, named, others, reference_of
from pangeo_hpc.recipes.units import DIFFERENCE

__all__ = ["bias"]

#: attributes a difference does not keep from its dataset: it is another quantity
_DROPPED = ("standard_name", "units_metadata", "valid_min", "valid_max", "valid_range")


def bias(ds: xr.Dataset, *, reference: str, relative: bool = False) -> xr.Dataset:
    """Each dataset minus the reference: absolute, or relative to the reference (CDO ``sub``,
    ``div -sub``).

    Equivalents: CDO ``cdo sub model.nc era5.nc`` (relative: ``cdo div -sub model.nc
    era5.nc era5.nc``); ESMValCore's ``bias`` preprocessor
    (``bias_type: absolute | relative``).

    Parameters
    ----------
    ds : Dataset
        One variable per dataset, named after it, on one grid and in one set of units
        (:func:`~pangeo_hpc.recipes.align_datasets.align_datasets`).
    reference : str
        The dataset subtracted from every other (``era5``).
    relative : bool
        ``(dataset - reference) / reference``, dimensionless (units ``1``), missing where
        the reference is 0; default the difference, in the data's units.

    Returns
    -------
    Dataset
        Lazy for lazy input: one variable per other dataset, named after it, whose
        ``long_name`` says ``... model minus era5``.

    Raises
    ------
    InputError
        For a ``reference`` that is not one of the datasets.

    Examples
    --------
    >>> ds = xr.Dataset({"model": ("x", [3.0, 5.0]), "era5": ("x", [1.0, 4.0])})
    >>> bias(ds, reference="era5")["model"].values.tolist()
    [2.0, 1.0]
    """
    ref = reference_of(ds, reference, "bias")
    out = {}
    for name in others(ds, reference):
        da = ds[name]
        attrs = {k: v for k, v in da.attrs.items() if k not in _DROPPED}
        what = base_name(da)
        if relative:
            value = (da - ref) / ref.where(ref != 0)
            attrs |= {
                "units": "1",
                "long_name": f"relative bias of {what}: ({name} minus {reference}) / {reference}",
            }
        else:
            value = da - ref
            attrs["long_name"] = f"bias of {what}: {name} minus {reference}"
            if is_temperature(da, "bias"):
                attrs["units_metadata"] = DIFFERENCE
        out[name] = named(value, name, attrs)
    return xr.Dataset(out, attrs={"reference": reference})
