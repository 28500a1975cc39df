"""``ensemble``: a statistic over datasets, point by point (ESMValCore's
``multi_model_statistics``; CDO ``ensmean``, ``ensstd1``, ``ensmedian``, ``ensmin``,
``ensmax``, ``enspctl``)."""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError, shown
from pangeo_hpc.recipes.against import base_name, named

__all__ = ["ensemble"]

STATS = ("mean", "std", "median", "min", "max", "percentile")
SPANS = ("overlap", "full")
#: the dimension the datasets are stacked along while reducing
MEMBER = "dataset"


def _nanquantile(x: np.ndarray, q: float) -> np.ndarray:
    """NumPy's linear quantile over the last axis, NaN skipped (all NaN: NaN, silently)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice encountered"
        return np.nanquantile(x, q, axis=-1)


def _quantile(stack: xr.DataArray, q: float) -> xr.DataArray:
    """The ``q`` quantile over the datasets, by NumPy on each block (xarray's own quantile
    and median JIT-compile numbagg on first use: 50 s on a loaded 2-core machine)."""
    return xr.apply_ufunc(
        _nanquantile,
        stack,
        input_core_dims=[[MEMBER]],
        kwargs={"q": q},
        dask="parallelized",
        output_dtypes=[np.result_type(stack.dtype, np.float64)],
    )


def _ensemble_name(stat: str, percentile: float | None = None) -> str:
    """The result variable's name: ``ensemble_mean``, ``ensemble_p90``."""
    return f"ensemble_p{percentile:g}" if stat == "percentile" else f"ensemble_{stat}"


def ensemble(
    ds: xr.Dataset,
    *,
    stat: Literal["mean", "std", "median", "min", "max", "percentile"] = "mean",
    percentile: float | None = None,
    span: Literal["overlap", "full"] = "overlap",
) -> xr.Dataset:
    """A statistic over the datasets at each point and time step (CDO ``ensmean``,
    ``ensstd1``, ``ensmedian``, ``ensmin``, ``ensmax``, ``enspctl``).

    Equivalents: CDO ``ensmean``, ``ensstd1`` (the sample standard deviation, divided by
    n - 1, as ESMValCore's ``std_dev``), ``ensmedian``, ``ensmin``, ``ensmax``,
    ``enspctl,P``; ESMValCore ``multi_model_statistics(span=..., statistics=[...])``.
    Points missing in some datasets take the statistic of the others (as CDO ``ensmean``;
    CDO's ``ensmedian`` and ``enspctl`` are missing there instead).

    Parameters
    ----------
    ds : Dataset
        One variable per dataset, named after it, on one grid and time axis: the
        overlapping period for ``span="overlap"``, all the periods (missing where a
        dataset has no data) for ``span="full"``
        (:func:`~pangeo_hpc.recipes.align_datasets.align_datasets`).
    stat : {"mean", "std", "median", "min", "max", "percentile"}
        The statistic.
    percentile : float, optional
        With ``stat="percentile"``: 0..100, linear between the closest ranks (NumPy's
        default, as ESMValCore).
    span : {"overlap", "full"}
        Which period: recorded in the result; the alignment before this step uses it.

    Returns
    -------
    Dataset
        Lazy for lazy input: one variable :func:`_ensemble_name`, in the data's units.

    Raises
    ------
    InputError
        For an unknown ``stat`` or ``span``, or a missing or out-of-range ``percentile``.

    Examples
    --------
    >>> ds = xr.Dataset({"a": ("x", [1.0, 2.0]), "b": ("x", [3.0, 6.0])})
    >>> ensemble(ds)["ensemble_mean"].values.tolist()
    [2.0, 4.0]
    """
    if not isinstance(ds, xr.Dataset) or not ds.data_vars:
        raise InputError(f"ensemble() needs a Dataset of one variable per dataset, not {shown(ds)}")
    if stat not in STATS:
        raise InputError(f"ensemble: stat={shown(stat)} is not one of {list(STATS)}", param="stat")
    if span not in SPANS:
        raise InputError(f"ensemble: span={shown(span)} is not one of {list(SPANS)}", param="span")
    if (stat == "percentile") != (percentile is not None):
        raise InputError(
            f"ensemble: stat={stat!r} with percentile={shown(percentile)}: give percentile "
            "(0..100) with stat: percentile, and only then",
            param="percentile",
        )
    if percentile is not None and not 0 <= float(percentile) <= 100:
        raise InputError(
            f"ensemble: percentile={shown(percentile)} is not within 0..100", param="percentile"
        )
    names = [str(n) for n in ds.data_vars]
    first = ds[names[0]]
    stack = xr.concat([ds[n] for n in names], dim=MEMBER, coords="minimal", compat="override")
    if stack.chunks is not None:
        stack = stack.chunk({MEMBER: -1})
    if stat == "mean":
        value = stack.mean(MEMBER, skipna=True)
    elif stat == "std":
        value = stack.std(MEMBER, ddof=1, skipna=True)
    elif stat == "median":
        value = _quantile(stack, 0.5)
    elif stat == "min":
        value = stack.min(MEMBER, skipna=True)
    elif stat == "max":
        value = stack.max(MEMBER, skipna=True)
    else:
        value = _quantile(stack, float(percentile) / 100)  # type: ignore[arg-type]
    name = _ensemble_name(stat, percentile)
    said = "standard deviation" if stat == "std" else stat
    if stat == "percentile":
        said = f"{percentile:g}th percentile"
    attrs = {k: v for k, v in first.attrs.items() if k in ("units", "units_metadata")}
    if stat == "std" and "units_metadata" in attrs:
        attrs["units_metadata"] = "temperature: difference"
    attrs["long_name"] = (
        f"{said} of {base_name(first)} over {len(names)} datasets ({', '.join(names)})"
    )
    attrs["comment"] = f"multi-dataset statistic over the {span} period"
    return xr.Dataset({name: named(value, name, attrs)}, attrs={"datasets": names})
