"""Climatologies (each calendar month or season over the years) and anomalies from them.

A reference period is given as ``["1991-01", "2020-12"]``: the first and last month,
inclusive. The values in it are those whose time label falls in one of its months.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError, shown
from pangeo_hpc.recipes.aggregations import AGGREGATIONS
from pangeo_hpc.recipes.cf_attrs import cell_methods, with_attrs
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import time_name
from pangeo_hpc.recipes.kernels import group_subtract
from pangeo_hpc.recipes.traits import Reduction, reduces, whole_series

#: the seasons in CDO's order (``yseasmean``); December belongs to the DJF of its year
SEASONS = ("DJF", "MAM", "JJA", "SON")
#: month 1..12 -> index in :data:`SEASONS`
_SEASON_OF_MONTH = np.array([0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 0])
#: grouping -> (dimension of the climatology, words of long names and cell methods)
_GROUPING = {"monthly": ("month", "calendar month"), "seasonal": ("season", "season")}
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
#: attributes of the climatology's dimension coordinate (written as CF wants a coordinate:
#: a long name, and units for numbers; the season names as text, prepare_for_file)
_LABEL_ATTRS = {
    "month": {"long_name": "month of the year", "units": "1"},
    "season": {"long_name": "season (DJF: December with the January and February after it)"},
}


def _calendar_groups(coord: np.ndarray, options: Mapping[str, Any]) -> np.ndarray:
    """The groups of a climatology's ``month`` (1-12) or ``season`` (DJF...) coordinate, as
    :func:`_group_index` numbers them."""
    if coord.dtype.kind in "USO":
        return np.array([SEASONS.index(str(s)) for s in coord], dtype="i8")
    return coord.astype("i8")


def _climatology_groups(
    time: xr.DataArray, options: Mapping[str, Any], data: xr.Dataset | None = None
) -> np.ndarray:
    """Each time step's calendar month or season (:func:`_group_index`); -1 outside the
    reference period."""
    codes = _group_index(time, options.get("freq", "monthly")).astype("i8")
    reference = options.get("reference")
    if reference is not None:
        first, last = _months(reference, "climatology")
        months = _month_numbers(time)
        codes = np.where((months >= first) & (months <= last), codes, -1)
    return codes


@reduces(Reduction("mean", _climatology_groups, _calendar_groups))
def climatology(
    da: xr.DataArray,
    *,
    freq: Literal["monthly", "seasonal"] = "monthly",
    reference: Sequence[str] | None = None,
) -> xr.DataArray:
    """Mean of each calendar month (CDO ``ymonmean``) or season (``yseasmean``) over the
    years, skipping NaN.

    Parameters
    ----------
    da : DataArray
        Data with a time dimension (hourly, daily, monthly, ...): every time step counts
        once, as in CDO.
    freq : {"monthly", "seasonal"}
        ``monthly``: dimension ``month`` (1..12); ``seasonal``: dimension ``season``
        (``DJF``, ``MAM``, ``JJA``, ``SON``; December with the January and February after
        it, as CDO). Only the months or seasons the data hold.
    reference : [str, str], optional
        First and last month of the reference period, ``["1991-01", "2020-12"]``
        (inclusive); the data must cover it. Default: all the data.

    Returns
    -------
    DataArray
        Units and standard name of ``da``; ``cell_methods`` gains ``time: mean`` with the
        grouping in a comment (CF's ``within years``/``over years`` form needs a
        climatological time axis, which a ``month`` dimension is not).

    Notes
    -----
    Computed by the mean's :class:`~pangeo_hpc.recipes.aggregations.Sums`
    (:meth:`~pangeo_hpc.recipes.aggregations.Aggregation.reduce_groups`), as an incremental
    run's per-file states are: per block of the data (the steps outside the reference
    period left out, not cut away: the same blocks), float64 sums and int32 counts per
    month or season in one compiled pass; per group, the left fold of the blocks that hold
    it; divided. NumPy or Dask, however chunked: the same values from the same numbers to
    float64 rounding, and to the bit from the same blocks.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")  # two years, monthly
    >>> da = xr.DataArray(np.arange(24.0), coords={"time": time}, dims="time", attrs={"units": "K"})
    >>> climatology(da).values[:3].tolist()  # January: (0 + 12) / 2
    [6.0, 7.0, 8.0]
    """
    check_dataarray(da, "climatology")
    dim, words = _grouping(freq, "climatology")
    t = time_name(da)
    ref = _reference_period(da, reference, "climatology")  # checked: the data cover it
    present = np.unique(_group_index(ref[t], freq))
    labels = present if dim == "month" else np.array([SEASONS[i] for i in present])
    steps = _climatology_groups(da[t], {"freq": freq, "reference": reference})
    codes = np.where(steps >= 0, np.searchsorted(present, steps), -1)
    # the time dimension is gone: CF's name "time" in the inherited entries
    period = _period_words(reference, ref[t])
    method = f"time: mean (each {words} over the years{period})"
    attrs = {
        **da.attrs,
        "long_name": f"{da.attrs.get('long_name', da.name or 'field')}, {freq} climatology{period}",
        "cell_methods": cell_methods(da, method, gone={t: "time"}),
    }
    cells = [d for d in da.dims if d != t]
    data = da.transpose(t, *cells)
    dtype = da.dtype if np.issubdtype(da.dtype, np.floating) else np.dtype("f8")
    value = AGGREGATIONS["mean"].reduce_groups(data.data, codes, {}, dtype=dtype)["value"]
    coords = {k: v for k, v in data.coords.items() if t not in v.dims}
    out = xr.DataArray(
        value, dims=(dim, *cells), coords={dim: (dim, labels, _LABEL_ATTRS[dim]), **coords}
    )
    out.name = da.name  # (the constructor names it after the Dask array, given None)
    return out.assign_attrs(attrs)


@whole_series("anomaly subtracts the climatology of the whole period")
def anomaly(
    da: xr.DataArray,
    clim: xr.DataArray | None = None,
    *,
    reference: Sequence[str] | None = None,
    freq: Literal["monthly", "seasonal", "annual"] | None = None,
) -> xr.DataArray:
    """Departure from the climatology of a reference period: CDO ``ymonsub`` of
    ``ymonmean`` (monthly), ``yseassub`` of ``yseasmean`` (seasonal), ``sub`` of
    ``timmean`` (annual).

    Parameters
    ----------
    da : DataArray
        Data with a time dimension.
    clim : DataArray, optional
        A climatology from :func:`climatology` (dimension ``month`` or ``season``) or a
        field without time (subtracted from every step). Default: that of ``da`` itself
        over ``reference``.
    reference : [str, str], optional
        First and last month of the reference period, ``["1991-01", "2020-12"]``
        (inclusive); the data must cover it. Default: all the data.
    freq : {"monthly", "seasonal", "annual"}, optional
        The grouping: each calendar month, each season (DJF, MAM, JJA, SON) or none (one
        mean of the reference period). Default: from the spacing of the time labels,
        the median number of months between them: under 3 (hourly, daily, monthly data)
        monthly; 3 to 11 (seasonal values, e.g. after ``resample`` to ``QS-DEC``)
        seasonal; 12 or more (one value a year) annual.

    Returns
    -------
    DataArray
        Same units, cell methods and ``comment`` as ``da``, no standard name (an anomaly of a
        temperature is not a temperature), ``long_name`` saying from what.

    Raises
    ------
    InputError
        A reference period the data do not cover, one without some month or season of
        the data, an unknown ``freq``, or both ``clim`` and ``reference``.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")  # two years, monthly
    >>> da = xr.DataArray(np.arange(24.0), coords={"time": time}, dims="time", attrs={"units": "K"})
    >>> anomaly(da).values[[0, 12]].tolist()  # the two Januaries
    [-6.0, 6.0]
    """
    check_dataarray(da, "anomaly")
    t = time_name(da)
    if clim is not None:
        check_dataarray(clim, "anomaly")
        if reference is not None:
            raise InputError(
                "anomaly: give clim or reference=, not both: the climatology already has "
                "its period",
                param="reference",
            )
        freq = "monthly" if "month" in clim.dims else "seasonal" if "season" in clim.dims else None
        freq = freq or "annual"
    elif freq is None:
        freq = _infer_grouping(da[t])
    # the reference period: as given, else all the data's months; unknown for a
    # climatology given
    period = "" if clim is not None else _period_words(reference, da[t], da.attrs)
    if freq == "annual":
        if clim is None:
            ref = _reference_period(da, reference, "anomaly")
            clim = _mean(ref, t)
        out = da - clim
        what = "the mean"
    else:
        dim, _ = _grouping(freq, "anomaly")
        own = clim is None  # of these data: the same grid, in the same layout
        if clim is None:
            clim = climatology(da, freq=freq, reference=reference)  # type: ignore[arg-type]
        index = _group_index(da[t], freq)
        wanted = index if dim == "month" else np.array([SEASONS[i] for i in index])
        lacking = sorted(set(wanted.tolist()) - set(clim[dim].values.tolist()))
        if lacking:
            raise InputError(
                f"anomaly: the climatology has no {dim} {lacking} of the data "
                f"(reference={shown(reference)}): give a reference period that holds them",
                param="reference",
            )
        if own and _time_blocks(da, t):  # one pass, one new array (compiled)
            at = {v: k for k, v in enumerate(clim[dim].values.tolist())}
            codes = np.array([at[v] for v in wanted.tolist()], dtype=np.intp)
            out = da.copy(data=group_subtract(da.data, clim.data, codes))
        else:
            key = xr.DataArray(wanted, dims=(t,))
            out = da - clim.sel({dim: key}).drop_vars(dim)
        what = f"the {freq} climatology"
    # the same units (a temperature difference for a temperature), the input's cell methods
    # (each value is still, say, a monthly mean), but no standard name: an anomaly of
    # sea_surface_temperature is not a sea_surface_temperature (and CF has no name for it)
    # and the comment on what the values are (a resample's seasons left out)
    attrs = {k: v for k, v in da.attrs.items() if k in ("units", "cell_methods", "comment")}
    out.name = da.name  # (an arithmetic result keeps a name only if both sides share it)
    name = da.attrs.get("long_name", da.name or "field")
    attrs["long_name"] = f"{name} anomaly from {what}{period}"
    return with_attrs(out, attrs)


def _mean(da: xr.DataArray, t: str) -> xr.DataArray:
    """The mean over ``t``, skipping NaN, through the mean's aggregation (float64 sums in
    one pass per block): NumPy and Dask data (an incremental run's merged values and the
    whole graph's) give the same numbers to the bit."""
    cells = [d for d in da.dims if d != t]
    first = da.transpose(t, *cells)
    dtype = da.dtype if np.issubdtype(da.dtype, np.floating) else np.dtype("f8")
    value = AGGREGATIONS["mean"].reduce(first.data, {}, dtype=dtype)["value"]
    coords = {k: v for k, v in first.coords.items() if t not in v.dims}
    return xr.DataArray(value, dims=cells, coords=coords)


def _reference_period(
    da: xr.DataArray, reference: Sequence[str] | None, recipe: str
) -> xr.DataArray:
    """The time steps of ``da`` whose labels fall in the months of ``reference``
    (``["1991-01", "2020-12"]``, inclusive), lazily; all of them for ``None``.
    InputError when ``reference`` is malformed or the data do not cover it."""
    if reference is None:
        return da
    first, last = _months(reference, recipe)
    t = time_name(da)
    months = _month_numbers(da[t])
    if months.size == 0 or months.min() > first or months.max() < last:
        have = "no time steps" if months.size == 0 else f"{_ym(months.min())}..{_ym(months.max())}"
        raise InputError(
            f"{recipe}: reference={list(reference)} is not inside the data's period ({have}): "
            "give a reference period the data cover, or open a longer period",
            param="reference",
        )
    return da.isel({t: np.flatnonzero((months >= first) & (months <= last))})


def _group_index(time: xr.DataArray, freq: str) -> np.ndarray:
    """Per time step: the calendar month (1..12) or the index of its season in
    :data:`SEASONS`."""
    month = np.asarray(time.dt.month.values, dtype=int)
    return month if freq == "monthly" else _SEASON_OF_MONTH[month - 1]


def _infer_grouping(time: xr.DataArray) -> Literal["monthly", "seasonal", "annual"]:
    """``monthly``, ``seasonal`` or ``annual`` from the median number of months between
    time labels (below 3, 3 to 11, 12 or more)."""
    months = _month_numbers(time)
    if months.size < 2:
        return "monthly"
    step = float(np.median(np.diff(months)))
    return "annual" if step >= 12 else "seasonal" if step >= 3 else "monthly"


def _grouping(freq: object, recipe: str) -> tuple[str, str]:
    if freq not in _GROUPING:
        choices = [*_GROUPING, "annual"] if recipe == "anomaly" else [*_GROUPING]
        raise InputError(f"{recipe}: freq={freq!r} is not one of {choices}: pick one", param="freq")
    return _GROUPING[str(freq)]


def _months(reference: object, recipe: str) -> tuple[int, int]:
    """``["1991-01", "2020-12"]`` -> month numbers (year * 12 + month - 1), checked."""
    parsed = []
    if isinstance(reference, list | tuple) and len(reference) == 2:
        for value in reference:
            m = _MONTH.match(str(value))
            if m and 1 <= int(m.group(2)) <= 12:
                parsed.append(int(m.group(1)) * 12 + int(m.group(2)) - 1)
    if len(parsed) != 2 or parsed[0] > parsed[1]:
        raise InputError(
            f"{recipe}: reference={shown(reference)} is not a period: give its first and "
            'last month, e.g. reference=["1991-01", "2020-12"]',
            param="reference",
        )
    return parsed[0], parsed[1]


def _month_numbers(time: xr.DataArray) -> np.ndarray:
    return np.asarray(time.dt.year.values, dtype=int) * 12 + time.dt.month.values - 1


def _ym(month_number: int) -> str:
    return f"{month_number // 12:04d}-{month_number % 12 + 1:02d}"


def _period_words(
    reference: Sequence[str] | None, time: xr.DataArray, attrs: Mapping[str, Any] | None = None
) -> str:
    """`` 1991-01 to 2020-12``: the reference period given, else the first and last month
    of the time labels ``time`` (all the data); DJF means (labelled by their Decembers, a
    long name saying DJF) by their winters, `` winters 2000/01 to 2018/19``."""
    if reference is not None:
        return f" {reference[0]} to {reference[1]}"
    if time.size == 0:
        return ""
    months = _month_numbers(time)
    djf = "DJF" in str((attrs or {}).get("long_name", ""))
    if djf and bool((months % 12 == 11).all()):
        first, last = int(months[0]) // 12, int(months[-1]) // 12
        return f" winters {first}/{(first + 1) % 100:02d} to {last}/{(last + 1) % 100:02d}"
    return f" {_ym(int(months[0]))} to {_ym(int(months[-1]))}"


def _time_blocks(da: xr.DataArray, t: str) -> bool:
    """Time first (the kernel's layout), and some time steps."""
    return da.dims[0] == t and da.sizes[t] > 0
