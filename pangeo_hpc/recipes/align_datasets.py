"""Several datasets' results made comparable before a combine step: one set of units
(the reference's), one grid, one time axis.

- Units of the same kind are converted to the reference's (``degC`` to ``K``); units of
  another kind are refused, naming both.
- Datasets on different grids are refused, naming the grids and the fix (``regrid``).
- Monthly or coarser data align by period (year-month; yearly data by year), whatever
  their calendars: the result carries the reference's time labels. Daily or finer data
  of different calendars are refused (their days are not the same days); of one
  calendar they align by their time labels.
- ``join="inner"``: the overlapping period (none: refused, naming the periods);
  ``"outer"``: all periods, missing where a dataset has no data (the reference's labels
  where it has them, else the first dataset's that has).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Literal

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.grid import horizontal_names
from pangeo_hpc.recipes.units import compatible_units, convert, same_units

__all__ = ["align_datasets"]

#: degrees within which two grids' centres are the same (a box grid's centres computed
#: from its edges differ from a file's written centres by ~1e-13)
GRID_TOLERANCE = 1e-6
_STANDARD = ("standard", "gregorian", "proleptic_gregorian")


def align_datasets(
    values: Mapping[str, xr.DataArray],
    *,
    reference: str,
    join: Literal["inner", "outer"] = "inner",
) -> xr.Dataset:
    """One Dataset of ``values`` (name -> the dataset's result), each variable named after
    its dataset, in ``reference``'s units, on one grid and time axis (module description).

    Parameters
    ----------
    values : Mapping[str, xr.DataArray]
        Dataset name -> its result.
    reference : str
        The dataset whose units, grid and calendar the others take.
    join : Literal['inner', 'outer'], optional
        ``inner``: the common period; ``outer``: all times, NaN where a dataset has none.

    Returns
    -------
    xr.Dataset
        One variable per dataset.

    Raises
    ------
    InputError
        For units of different kinds, different grids, no overlapping period, or daily
        data of different calendars: each naming the datasets and the fix.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=3, freq="D")
    >>> era5 = xr.DataArray([1.0, 2.0, 3.0], coords={"time": time}, attrs={"units": "K"})
    >>> model = xr.DataArray([0.0, 1.0], coords={"time": time[1:]}, attrs={"units": "degC"})
    >>> out = align_datasets({"era5": era5, "model": model}, reference="era5")
    >>> out.era5.values, out.model.values  # the common days, in kelvin
    (array([2., 3.]), array([273.15, 274.15]))
    """
    ref = values[reference]
    out = {n: _in_units(da, n, ref, reference) for n, da in values.items()}
    out = _on_one_grid(out, reference)
    out = _on_one_time_axis(out, reference, join)
    aligned = xr.align(*out.values(), join=join)
    return xr.Dataset({n: da.rename(n) for n, da in zip(out, aligned, strict=True)})


def _in_units(da: xr.DataArray, name: str, ref: xr.DataArray, reference: str) -> xr.DataArray:
    if name == reference:
        return da
    mine, theirs = da.attrs.get("units"), ref.attrs.get("units")
    if mine is None and theirs is None:
        return da
    if mine is None or theirs is None:
        without, holder = (name, reference) if mine is None else (reference, name)
        raise InputError(
            f"combine: {without} has no units and {holder} has {mine or theirs!r}: "
            "give both datasets units (or convert_units in steps:)"
        )
    if same_units(da, ref):
        return da
    if compatible_units(da, ref):
        return convert(da, str(theirs), step="combine")
    raise InputError(
        f"combine: {name} is in {mine!r} and {reference} in {theirs!r}, units of different "
        "kinds: compare the same quantity in both datasets"
    )


def _grid_text(da: xr.DataArray) -> str:
    """``72 x 144 (lat -88.75..88.75, lon 0..357.5)``, or ``no latitude/longitude``.

    Parameters
    ----------
    da : xr.DataArray
        The data.

    Returns
    -------
    str
        The grid's size and extent, for a message.
    """
    try:
        lat, lon = horizontal_names(da)
    except InputError:
        return "no latitude/longitude"
    y, x = np.asarray(da[lat].values, "f8"), np.asarray(da[lon].values, "f8")
    return f"{y.size} x {x.size} (lat {y.min():g}..{y.max():g}, lon {x.min():g}..{x.max():g})"


def _horizontal(da: xr.DataArray) -> tuple[str, str] | None:
    try:
        return horizontal_names(da)
    except InputError:
        return None


def _on_one_grid(values: dict[str, xr.DataArray], reference: str) -> dict[str, xr.DataArray]:
    ref = values[reference]
    names = _horizontal(ref)
    out = {}
    for name, da in values.items():
        mine = _horizontal(da)
        if (names is None) != (mine is None) or not _same_grid(da, mine, ref, names):
            raise InputError(
                f"combine: {name} is on the grid {_grid_text(da)} and {reference} on "
                f"{_grid_text(ref)}: put them on one grid with '- regrid: {{grid: "
                f"${reference}}}' (or rNxM) in steps:"
            )
        if names is not None and mine is not None:
            da = da.sortby([mine[0], mine[1]])
            if name != reference:  # the reference's coordinates, under its names
                da = da.rename({mine[0]: names[0], mine[1]: names[1]})
                ref_sorted = ref.sortby([names[0], names[1]])
                da = da.assign_coords(
                    {names[0]: ref_sorted[names[0]], names[1]: ref_sorted[names[1]]}
                )
        out[name] = da
    return out


def _same_grid(
    da: xr.DataArray,
    mine: tuple[str, str] | None,
    ref: xr.DataArray,
    names: tuple[str, str] | None,
) -> bool:
    if mine is None or names is None:
        return True
    for a, b in zip(mine, names, strict=True):
        x, y = np.sort(np.asarray(da[a].values, "f8")), np.sort(np.asarray(ref[b].values, "f8"))
        if x.shape != y.shape or not np.allclose(x, y, rtol=0, atol=GRID_TOLERANCE):
            return False
    return True


def _calendar_of(time: xr.DataArray) -> str:
    """The calendar of a time coordinate: ``standard`` for NumPy dates.

    Parameters
    ----------
    time : xr.DataArray
        A time coordinate.

    Returns
    -------
    str
        The CF calendar name.
    """
    if time.dtype.kind == "M":
        return "standard"
    cal = str(getattr(time.values.flat[0], "calendar", "") or time.encoding.get("calendar", ""))
    return "standard" if cal in _STANDARD else cal


def _time_dim(da: xr.DataArray) -> Hashable | None:
    for d in da.dims:
        c = da[d] if d in da.coords else None
        if c is not None and c.ndim == 1 and (c.dtype.kind == "M" or _is_cftime(c)):
            return d
    return None


def _is_cftime(c: xr.DataArray) -> bool:
    return c.dtype == object and c.size > 0 and hasattr(c.values.flat[0], "calendar")


def _period_text(da: xr.DataArray) -> str:
    """``1991-01..2014-12`` of a result's time axis, or ``no time axis``.

    Parameters
    ----------
    da : xr.DataArray
        The data.

    Returns
    -------
    str
        The first and last month, for a message.
    """
    t = _time_dim(da)
    if t is None:
        return "no time axis"
    v = da[t].values
    return f"{_ym(v[0])}..{_ym(v[-1])}"


def _ym(value: Any) -> str:
    if isinstance(value, np.datetime64):
        return str(value.astype("datetime64[M]"))
    return f"{value.year:04d}-{value.month:02d}"


def _days_between(time: xr.DataArray) -> float:
    """The median spacing of a time axis, in days."""
    if time.size < 2:
        return np.inf
    if time.dtype.kind == "M":
        steps = np.diff(time.values).astype("timedelta64[s]").astype("f8") / 86400
    else:
        steps = np.array(
            [
                (b - a).total_seconds() / 86400
                for a, b in zip(time.values[:-1], time.values[1:], strict=True)
            ]
        )
    return float(np.median(steps))


def _keys(time: xr.DataArray, yearly: bool) -> list[str]:
    return [_ym(v)[:4] if yearly else _ym(v) for v in time.values]


def _on_one_time_axis(
    values: dict[str, xr.DataArray], reference: str, join: str
) -> dict[str, xr.DataArray]:
    dims = {n: _time_dim(da) for n, da in values.items()}
    if all(d is None for d in dims.values()):
        return values
    if any(d is None for d in dims.values()):
        have = sorted(n for n, d in dims.items() if d is not None)
        lack = sorted(n for n, d in dims.items() if d is None)
        raise InputError(
            f"combine: {have} have a time axis and {lack} none: give all datasets the same "
            "steps: up to the combine"
        )
    calendars = {n: _calendar_of(values[n][d]) for n, d in dims.items()}
    spacing = min(_days_between(values[n][d]) for n, d in dims.items())
    if len(set(calendars.values())) == 1 and spacing < 27:
        return _periods_overlap(values, dims, join, keys=None)
    if spacing < 27:
        said = ", ".join(f"{n} {c}" for n, c in calendars.items())
        raise InputError(
            f"combine: daily data of different calendars ({said}) cannot be compared day "
            "by day: their days are not the same days; resample to months first "
            "('- resample: {freq: monthly}' in steps:)"
        )
    yearly = spacing > 360
    keys = {n: _keys(values[n][d], yearly) for n, d in dims.items()}
    return _periods_overlap(values, dims, join, keys=keys, reference=reference)


def _periods_overlap(
    values: dict[str, xr.DataArray],
    dims: Mapping[str, Hashable | None],
    join: str,
    *,
    keys: dict[str, list[str]] | None,
    reference: str | None = None,
) -> dict[str, xr.DataArray]:
    """Each on the shared period's labels (``keys``: year-month labels; ``None``: the
    time values themselves), or one line naming the periods when they do not overlap."""
    if keys is None:
        keys = {n: [str(v) for v in values[n][d].values] for n, d in dims.items()}
    common = set.intersection(*(set(k) for k in keys.values()))
    if not common:
        said = ", ".join(f"{n} {_period_text(da)}" for n, da in values.items())
        raise InputError(
            f"combine: the datasets have no period in common ({said}): give them "
            "overlapping start and end"
        )
    wanted = sorted(common) if join == "inner" else sorted(set().union(*keys.values()))
    first = reference if reference is not None else next(iter(values))
    order = [first, *(n for n in values if n != first)]
    labels: dict[str, Any] = {}
    for n in order:  # the reference's labels where it has them
        for k, v in zip(keys[n], values[n][dims[n]].values, strict=True):
            labels.setdefault(k, (n, v))
    ref_dim = dims[first]
    out = {}
    for n, da in values.items():
        t = dims[n]
        at = dict(zip(keys[n], range(len(keys[n])), strict=False))
        take = [k for k in wanted if k in at]
        da = da.isel({t: [at[k] for k in take]})
        da = da.drop_vars([c for c in da.coords if t in da[c].dims and c != t])
        da = da.assign_coords({t: _labels([labels[k] for k in take], first, values, ref_dim)})
        out[n] = da.rename({t: ref_dim}) if t != ref_dim else da
    if join == "outer":
        full = _labels([labels[k] for k in wanted], first, values, ref_dim)
        out = {n: da.reindex({ref_dim: full}) for n, da in out.items()}
    return out


def _labels(
    found: list[tuple[str, Any]], first: str, values: Mapping[str, xr.DataArray], dim: Any
) -> Any:
    """Time labels in the reference's calendar (a label only another dataset has is
    written in the reference's calendar, its day clipped to 28)."""
    like = values[first][dim].values[0]
    out = []
    for owner, v in found:
        if owner == first:
            out.append(v)
            continue
        y, m = (int(s) for s in (_ym(v).split("-")))
        if isinstance(like, np.datetime64):
            out.append(np.datetime64(f"{y:04d}-{m:02d}-15", "ns"))
        else:
            out.append(type(like)(y, m, 15))
    return np.array(out) if isinstance(like, np.datetime64) else out
