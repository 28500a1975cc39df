"""Area-weighted spatial means."""

from __future__ import annotations

from typing import Literal

import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.cf_attrs import area_where, cell_methods, with_attrs
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import cell_area, cell_edges, horizontal_names, time_name
from pangeo_hpc.recipes.kernels import weighted_nanmean_blocks

_FREQ = {"monthly": "MS", "annual": "YS"}


def global_mean(da: xr.DataArray, *, weights: xr.DataArray | None = None) -> xr.DataArray:
    """Area-weighted mean over the horizontal dimensions, skipping NaN.

    Parameters
    ----------
    da : DataArray
        Field on a regular latitude/longitude grid; other dimensions are kept.
    weights : DataArray, optional
        Cell areas (or any weights) on the horizontal dimensions. By default the true
        areas of the grid's cells, as CDO's ``fldmean`` uses (half cells at the poles).

    Returns
    -------
    DataArray
        Same units as ``da``; NaN where a field has no valid value.
    """
    check_dataarray(da, "global_mean")
    lat, lon = horizontal_names(da)
    if weights is None:
        weights = cell_area(da[lat], da[lon])
    dims = tuple(dict.fromkeys(da[lat].dims + da[lon].dims))
    weights = weights.fillna(0.0)
    if _whole_fields(da, dims):
        # one compiled pass per block instead of xarray's fillna/notnull/dot passes
        out = xr.apply_ufunc(
            weighted_nanmean_blocks,
            da,
            weights.transpose(*dims).values,
            input_core_dims=[list(dims), []],
            exclude_dims=set(),
            dask="allowed",
        )
    else:
        out = da.weighted(weights).mean(dims, skipna=True)
    method = f"area: mean{area_where(da)}"
    return with_attrs(out, _mean_attrs(da, "area-weighted mean over the globe", method))


def _whole_fields(da: xr.DataArray, dims: tuple[str, ...]) -> bool:
    """True when every chunk holds whole horizontal fields (or the data are in memory)."""
    if da.chunks is None:
        return True
    return all(len(da.chunksizes[d]) == 1 for d in dims)


def zonal_mean(da: xr.DataArray) -> xr.DataArray:
    """Mean along longitude (weighted by cell width), skipping NaN."""
    check_dataarray(da, "zonal_mean")
    _, lon = horizontal_names(da)
    if da[lon].ndim != 1:
        raise InputError(f"zonal_mean needs a 1-D longitude, got {lon!r} with dims {da[lon].dims}")
    west, east = cell_edges(da[lon].values, clip=None, period=360.0)
    width = xr.DataArray(east - west, dims=da[lon].dims)
    out = da.weighted(width).mean(da[lon].dims[0], skipna=True)
    return with_attrs(out, _mean_attrs(da, "zonal mean", f"{da[lon].dims[0]}: mean"))


def time_series(
    da: xr.DataArray,
    *,
    freq: Literal["monthly", "annual"] = "monthly",
    weights: xr.DataArray | None = None,
) -> xr.DataArray:
    """Global-mean time series, averaged to calendar months or years.

    Parameters
    ----------
    da : DataArray
        Field with a time dimension on a lat/lon grid.
    freq : {"monthly", "annual"}
        Averaging period; each value is labelled with the period's first day.
    weights : DataArray, optional
        As for :func:`global_mean`.
    """
    check_dataarray(da, "time_series")
    if freq not in _FREQ:
        raise InputError(f"freq={freq!r} is not one of {sorted(_FREQ)}")
    t = time_name(da)
    gm = global_mean(da, weights=weights)
    if gm.chunks is not None:
        # the series is small: one chunk makes the resampling a single task, not thousands
        gm = gm.chunk({t: -1})
    out = gm.resample({t: _FREQ[freq]}).mean()
    # each value stands for its month or year: the file gets time bounds for it
    # (pangeo_hpc.recipes.cf_attrs.prepare_for_file)
    return with_attrs(out, {**gm.attrs, "cell_methods": cell_methods(gm, f"{t}: mean")})


def _mean_attrs(da: xr.DataArray, what: str, method: str) -> dict[str, str]:
    """A mean is still the quantity of ``da`` (units, standard name); its cell methods add
    ``method`` to the input's."""
    attrs = {k: v for k, v in da.attrs.items() if k in ("units", "standard_name", "long_name")}
    attrs["long_name"] = f"{attrs.get('long_name', da.name or 'field')}, {what}"
    attrs["cell_methods"] = cell_methods(da, method)
    return attrs
