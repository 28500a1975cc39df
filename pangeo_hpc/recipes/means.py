"""Means: over the area (CDO ``fldmean``), along longitude (``zonmean``) and over time
(``timmean``)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError, shown
from pangeo_hpc.recipes.aggregations import AGGREGATIONS
from pangeo_hpc.recipes.cf_attrs import (
    AREA_TYPE,
    TIME_PERIOD,
    area_where,
    cell_methods,
    period_coord,
    period_words,
    with_attrs,
)
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import (
    cell_area,
    horizontal_names,
    longitude_edges,
    rectilinear_names,
    time_name,
)
from pangeo_hpc.recipes.kernels import weighted_nanmean_blocks
from pangeo_hpc.recipes.resample import resample
from pangeo_hpc.recipes.traits import Reduction, reduces, step_by_step, whole_series

_FREQ = {"monthly": "MS", "annual": "YS"}


@step_by_step
def area_mean(
    da: xr.DataArray,
    *,
    min_valid_share: float = 0.0,
    weights: xr.DataArray | None = None,
) -> xr.DataArray:
    """Area-weighted mean over the horizontal dimensions, skipping NaN: CDO ``fldmean``.

    The domain is whatever the data cover: the globe, or a region cut out before (the
    cells' true areas either way, as CDO's ``gridarea``: edges halfway between centres,
    the outermost cells half a spacing wide, clipped at the poles).

    Parameters
    ----------
    da : DataArray
        Field on a regular latitude/longitude grid (any CF names, latitude in either
        order, longitude 0..360 or -180..180); other dimensions are kept.
    min_valid_share : float
        In [0, 1]: the result is NaN where the valid (not NaN) cells cover less than this
        share of the domain's area (0, the default: NaN only where no cell is valid; 1:
        only complete fields). CDO has no direct equivalent.
    weights : DataArray, optional
        Cell areas (or any weights) on the horizontal dimensions, matched to ``da`` by
        their coordinates' labels where they have them (any order; a larger grid's areas
        serve a region cut from it). By default the true areas of the grid's cells, as
        CDO's ``fldmean`` uses (half cells at the poles).

    Returns
    -------
    DataArray
        Same units and standard name as ``da``; ``cell_methods`` gains ``area: mean``
        (``where sea`` or ``land`` when the standard name says so).

    Raises
    ------
    InputError
        When ``min_valid_share`` is not a number in [0, 1], or ``weights`` not a DataArray
        with a value for each cell of ``da``.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> lat = xr.DataArray([-45.0, 45.0], dims="lat", attrs={"units": "degrees_north"})
    >>> lon = xr.DataArray([0.0, 180.0], dims="lon", attrs={"units": "degrees_east"})
    >>> da = xr.DataArray(
    ...     [[1.0, 2.0], [3.0, 4.0]], coords={"lat": lat, "lon": lon}, dims=("lat", "lon"),
    ...     attrs={"units": "K"},
    ... )
    >>> round(float(area_mean(da)), 6)  # equal areas at ±45°
    2.5
    """
    return _area_mean(da, "area_mean", min_valid_share, weights, "area-weighted mean")


@step_by_step
def global_mean(da: xr.DataArray, *, weights: xr.DataArray | None = None) -> xr.DataArray:
    """Area-weighted mean over the whole grid: :func:`area_mean` of a global field, CDO
    ``fldmean``, with ``long_name`` saying "over the globe".

    Parameters
    ----------
    da : DataArray
        Data on a global latitude/longitude grid (any CF names).
    weights : DataArray, optional
        Cell weights; default the true cell areas (as :func:`area_mean`).

    Returns
    -------
    DataArray
        Without the horizontal dimensions, units kept.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> lat = xr.DataArray([-45.0, 45.0], dims="lat", attrs={"units": "degrees_north"})
    >>> lon = xr.DataArray([0.0, 180.0], dims="lon", attrs={"units": "degrees_east"})
    >>> da = xr.DataArray(
    ...     [[1.0, 2.0], [3.0, 4.0]], coords={"lat": lat, "lon": lon}, dims=("lat", "lon"),
    ...     attrs={"units": "K"},
    ... )
    >>> round(float(global_mean(da)), 6)
    2.5
    """
    return _area_mean(da, "global_mean", 0.0, weights, "area-weighted mean over the globe")


def _area_mean(
    da: xr.DataArray,
    recipe: str,
    min_valid_share: float,
    weights: xr.DataArray | None,
    what: str,
) -> xr.DataArray:
    check_dataarray(da, recipe)
    share = _share(min_valid_share, recipe)
    if weights is None:
        lat, lon = rectilinear_names(da, recipe, also=", or pass weights=<cell areas>")
    else:
        lat, lon = horizontal_names(da)
    dims = tuple(dict.fromkeys(da[lat].dims + da[lon].dims))
    if weights is None:
        weights = cell_area(da[lat], da[lon])
    else:
        weights = _on_grid(weights, da, dims, recipe)
    weights = weights.fillna(0.0)
    if _whole_fields(da, dims):
        # one compiled pass per block instead of xarray's fillna/notnull/dot passes
        out = xr.apply_ufunc(
            weighted_nanmean_blocks,
            da,
            weights.transpose(*dims).values,
            share,
            input_core_dims=[list(dims), [], []],
            exclude_dims=set(),
            dask="allowed",
        )
    else:
        out = da.weighted(weights).mean(dims, skipna=True)
        if share > 0:
            valid = xr.dot(da.notnull(), weights, dim=list(dims))
            out = out.where(valid >= share * weights.sum(list(dims)) * (1 - 1e-12))
    method = f"area: mean{area_where(da)}"
    return with_attrs(out, _mean_attrs(da, what, method))


def _on_grid(weights: object, da: xr.DataArray, dims: tuple[str, ...], recipe: str) -> xr.DataArray:
    """``weights`` in the order of ``da`` along ``dims``, matched by coordinate label where
    both have an index (as xarray's weighted mean matches them; the compiled path reads
    values by position), e.g. areas with latitude ascending for data with it descending,
    or the areas of the whole grid for a region cut from it."""
    if not isinstance(weights, xr.DataArray):
        raise InputError(
            f"{recipe}: weights={shown(weights)} is not a DataArray of cell areas: pass one on "
            "the horizontal dimensions, or leave weights out for the cells' true areas",
            param="weights",
        )
    labels = {d: da.indexes[d] for d in dims if d in da.indexes and d in weights.indexes}
    for d, index in labels.items():
        absent = index.difference(weights.indexes[d])
        if len(absent):
            raise InputError(
                f"{recipe}: weights have no value at {d}={absent.tolist()[0]!r} ({len(absent)} "
                f"of the data's {len(index)} {d} values): give them on the data's grid",
                param="weights",
            )
    return weights.sel(labels)


def _share(value: object, recipe: str) -> float:
    """``min_valid_share`` checked: a number in [0, 1]."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1
    if not ok:
        raise InputError(
            f"{recipe}: min_valid_share={value!r} is not a share of the area: "
            "give a number from 0 (any valid cell) to 1 (complete fields only)",
            param="min_valid_share",
        )
    return float(value)  # type: ignore[arg-type]


def _whole_fields(da: xr.DataArray, dims: tuple[str, ...]) -> bool:
    """True when every chunk holds whole horizontal fields (or the data are in memory)."""
    if da.chunks is None:
        return True
    return all(len(da.chunksizes[d]) == 1 for d in dims)


@step_by_step
def zonal_mean(da: xr.DataArray) -> xr.DataArray:
    """Mean along longitude, weighted by cell width, skipping NaN: CDO ``zonmean``.

    Parameters
    ----------
    da : DataArray
        Field on a grid with a 1-D longitude (0..360 or -180..180, global or a region,
        also one across the dateline); other dimensions are kept.

    Returns
    -------
    DataArray
        Without the longitude dimension; NaN where a latitude row has no valid value.
        Same units; ``cell_methods`` gains ``longitude: mean`` (CF 7.3 names a dimension
        that is gone by its standard name). On a regular grid the widths are equal and the
        mean is CDO's plain mean over the row's valid values.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> lat = xr.DataArray([-45.0, 45.0], dims="lat", attrs={"units": "degrees_north"})
    >>> lon = xr.DataArray([0.0, 180.0], dims="lon", attrs={"units": "degrees_east"})
    >>> da = xr.DataArray(
    ...     [[1.0, 2.0], [3.0, 4.0]], coords={"lat": lat, "lon": lon}, dims=("lat", "lon"),
    ...     attrs={"units": "K"},
    ... )
    >>> zonal_mean(da).values.tolist()
    [1.5, 3.5]
    """
    check_dataarray(da, "zonal_mean")
    _, lon = rectilinear_names(da, "zonal_mean")
    west, east = longitude_edges(da[lon].values)
    width = xr.DataArray(east - west, dims=da[lon].dims)
    out = da.weighted(width).mean(da[lon].dims[0], skipna=True)
    return with_attrs(out, _mean_attrs(da, "zonal mean", "longitude: mean"))


@reduces(Reduction("mean"))
def time_mean(da: xr.DataArray) -> xr.DataArray:
    """Mean over all time steps, skipping NaN: CDO ``timmean``.

    Parameters
    ----------
    da : DataArray
        Data with a time dimension (any CF name).

    Returns
    -------
    DataArray
        Without the time dimension, with a scalar coordinate ``time_period`` (the middle of
        the period, with its start and end for the file's bounds,
        :func:`~pangeo_hpc.recipes.cf_attrs.period_coord`). Units and standard name kept;
        ``cell_methods`` gains ``time: mean``; ``long_name`` says the years (or months)
        averaged, ``time-mean 2 metre temperature in JJA, 2000-2019``. NaN where a cell
        is never valid. Floating data keep their dtype (others give float64).

    Notes
    -----
    Computed by the mean's :class:`~pangeo_hpc.recipes.aggregations.Sums`, as an
    incremental run's per-file states are: per block, float64 sums and int32 counts of the
    valid values in one compiled pass, added over the blocks, then divided.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")  # two years, monthly
    >>> da = xr.DataArray(np.arange(24.0), coords={"time": time}, dims="time", attrs={"units": "K"})
    >>> float(time_mean(da))
    11.5
    """
    check_dataarray(da, "time_mean")
    t = time_name(da)
    attrs = {k: v for k, v in da.attrs.items() if k in ("units", "standard_name", AREA_TYPE)}
    name = da.attrs.get("long_name", da.name or "field")
    attrs["long_name"] = f"time-mean {name}, {period_words(da[t])}"
    attrs["cell_methods"] = cell_methods(da, "time: mean", gone={t: "time"})
    cells = [d for d in da.dims if d != t]
    first = da.transpose(t, *cells)
    # float64 sums and counts per block, added: what an incremental run's states hold
    dtype = da.dtype if np.issubdtype(da.dtype, np.floating) else np.dtype("f8")
    value = AGGREGATIONS["mean"].reduce(first.data, {}, dtype=dtype)["value"]
    coords = {k: v for k, v in first.coords.items() if t not in v.dims}
    out = with_attrs(xr.DataArray(value, dims=cells, coords=coords, name=da.name), attrs)
    return out.assign_coords({TIME_PERIOD: period_coord(da[t], "time mean")})


@whole_series("time_series is not split (write area_mean then resample)")
def time_series(
    da: xr.DataArray,
    *,
    freq: Literal["monthly", "annual"] = "monthly",
    weights: xr.DataArray | None = None,
) -> xr.DataArray:
    """Global-mean time series, averaged to calendar months or years: CDO ``monmean
    -fldmean`` or ``yearmean -fldmean``.

    Parameters
    ----------
    da : DataArray
        Field with a time dimension on a lat/lon grid.
    freq : {"monthly", "annual"}
        Averaging period; each value is labelled with the period's first day.
    weights : DataArray, optional
        As for :func:`global_mean`.

    Returns
    -------
    DataArray
        :func:`~pangeo_hpc.recipes.resample` of the :func:`global_mean`: each value's time
        interval is the steps it averages.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> lat = xr.DataArray([-45.0, 45.0], dims="lat", attrs={"units": "degrees_north"})
    >>> lon = xr.DataArray([0.0, 180.0], dims="lon", attrs={"units": "degrees_east"})
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")
    >>> values = np.arange(24.0)[:, None, None] + np.array([[0.0, 1.0], [2.0, 3.0]])
    >>> da = xr.DataArray(
    ...     values, coords={"time": time, "lat": lat, "lon": lon}, dims=("time", "lat", "lon"),
    ...     attrs={"units": "K"},
    ... )
    >>> time_series(da, freq="annual").values.tolist()
    [7.0, 19.0]
    """
    check_dataarray(da, "time_series")
    if freq not in _FREQ:
        raise InputError(f"freq={freq!r} is not one of {sorted(_FREQ)}")
    gm = global_mean(da, weights=weights)
    # one value per month or year, its time bounds the steps it holds, as resample's
    return resample(gm, freq=_FREQ[freq])


def _mean_attrs(da: xr.DataArray, what: str, method: str) -> dict[str, str]:
    """A mean is still the quantity of ``da`` (units, standard name); its cell methods add
    ``method`` to the input's."""
    attrs = {k: v for k, v in da.attrs.items() if k in ("units", "standard_name", "long_name")}
    attrs["long_name"] = f"{attrs.get('long_name', da.name or 'field')}, {what}"
    attrs["cell_methods"] = cell_methods(da, method)
    return attrs
