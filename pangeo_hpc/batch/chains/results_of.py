"""A recipe's results as one Dataset (:func:`finish`): each result's value named, series
on their own time axes where their labels or intervals differ, scalars and coordinates
kept to the result they belong to."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from pangeo_hpc.recipes import time_bounds
from pangeo_hpc.recipes.cf_attrs import OWNER, renamed_in_cell_methods

__all__ = ["finish"]


def finish(recipe: Any, values: dict[str, Any]) -> xr.Dataset:
    """The Dataset of results from each result's value (keys as :func:`result_chains`).

    Parameters
    ----------
    recipe : Recipe
        The recipe.
    values : dict[str, Any]
        Result name -> its value.

    Returns
    -------
    xr.Dataset
        The results.

    Examples
    --------
    >>> import xarray as xr
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> from pangeo_hpc.batch.chains.results_of import finish
    >>> values = {"time_mean": xr.DataArray([1.0, 2.0], dims="lat"),
    ...           "global_mean_series": xr.DataArray([1.5], dims="time"),
    ...           "global_mean": xr.DataArray(1.5)}
    >>> sorted(finish(load("era5-sst-mean"), values).data_vars)
    ['global_mean', 'global_mean_series', 'time_mean']
    """
    if not recipe.results:
        return _as_dataset(values[""], recipe.variable)
    out: dict[str, xr.DataArray] = {}
    for name, value in values.items():
        if isinstance(value, xr.Dataset):  # e.g. trend with its statistics
            parts = {k if k.startswith(name) else f"{name}_{k}": v for k, v in value.items()}
        else:
            parts = {name: value.rename(name)}
        out.update(parts)
    return xr.Dataset(_own_scalars(_own_time_axes(_not_inside_others(out))))


def _own_time_axes(results: dict[str, xr.DataArray]) -> dict[str, xr.DataArray]:
    """The results, each whose time dimension holds other labels or other intervals
    (:mod:`pangeo_hpc.recipes.time_bounds`) than an earlier result's of the same name (an
    annual series beside a monthly one; annual means of JJA beside annual means) with
    that dimension renamed ``{t}_{result}``: one dimension has one set of time bounds,
    and xarray would otherwise pad each series to the union of the labels."""
    seen: dict[str, xr.Dataset] = {}
    out = {}
    for name, da in results.items():
        rename: dict[str, str] = {}
        for t in map(str, da.dims):
            if t not in da.coords or time_bounds.bounds_names(t)[0] not in da.coords:
                continue
            axis = da[t].reset_coords()
            if t not in seen:
                seen[t] = axis
            elif not axis.equals(seen[t]):
                new = f"{t}_{name}"
                old_names = (t, *time_bounds.bounds_names(t))
                new_names = (new, *time_bounds.bounds_names(new))
                rename |= dict(zip(old_names, new_names, strict=True))
        if rename:  # its cell methods name the dimension by its new name
            methods = renamed_in_cell_methods(str(da.attrs.get("cell_methods", "")), rename)
            da = da.rename(rename)
            if methods:
                da.attrs["cell_methods"] = methods
        out[name] = da
    return out


def _not_inside_others(results: dict[str, xr.DataArray]) -> dict[str, xr.DataArray]:
    """Each result that another result is computed from, behind a copy of its own.

    ``client.compute`` of a Dataset in which one result is a step of another (an index and
    its warm winters) after a ``resample`` fails with "lost dependencies" (dask and
    distributed 2026.8); with each such result a layer of its own (fused away, no pass over
    the data) it computes."""
    layers = {k: set(v.data.dask.layers) for k, v in results.items() if v.chunks is not None}
    out = {}
    for name, da in results.items():
        inner = name in layers and any(
            da.data.name in deps for other, deps in layers.items() if other != name
        )
        out[name] = da.copy(data=da.data.map_blocks(np.asarray, dtype=da.dtype)) if inner else da
    return out


def _own_scalars(results: dict[str, xr.DataArray]) -> dict[str, xr.DataArray]:
    """The results, each scalar coordinate that results hold with different values (the
    periods of two seasonal means) renamed ``{coord}_{result}`` in each of them (its bounds
    too), so that all fit in one Dataset and each variable names its own in the file."""
    values: dict[str, list[xr.DataArray]] = {}
    for da in results.values():
        for c in da.coords:
            if da[c].ndim == 0:
                values.setdefault(str(c), []).append(da[c])
    clash = {c for c, vs in values.items() if any(not v.identical(vs[0]) for v in vs[1:])}
    out = {}
    for name, da in results.items():
        rename = {c: f"{c}_{name}" for c in map(str, da.coords) if c in clash}
        da = da.rename(rename)
        for old, new in rename.items():
            attrs = dict(da[new].attrs, **{OWNER: name})
            if "bounds" in attrs:
                attrs["bounds"] = str(attrs["bounds"]).replace(old, new, 1)
            da[new].attrs = attrs
        out[name] = da
    return out


def _as_dataset(value: Any, variable: str) -> xr.Dataset:
    if isinstance(value, xr.Dataset):  # a trend and its statistics, computed from it
        return value.assign(_not_inside_others(dict(value.data_vars)))
    return value.rename(value.name or variable).to_dataset()
