"""Percentiles over time per cell, exact: CDO ``timpctl`` where CDO is exact.

**Definitions** (``method``; ``x`` sorted, the cell's ``n`` valid values, ``p = q / 100``;
ranks count from 1), as CDO 2.1's ``--percentile`` names them:

* ``nrank`` (CDO's default), nearest rank: ``x[ceil(n p)]``, the rank clipped to 1..n;
* ``nist``, NIST's recommended method: rank ``r = (n + 1) p``, linear between ``x[floor r]``
  and the next, the ends where ``r < 1`` or ``r >= n``;
* ``rtype8``, R's type 8: the same with ``r = 1/3 + (n + 1/3) p``;
* NumPy's ``linear`` (its default), ``lower``, ``higher``, ``nearest`` and ``midpoint``:
  ``numpy.percentile(..., method=...)`` of the valid values.

**Where CDO is approximate.** ``timpctl,q in min max`` keeps the values themselves (as
float32) only while a cell has at most ``CDO_PCTL_NBINS * 2 / 4`` of them (``* 4 / 4``
from 65535 time steps): 50 with the default 101 bins. Beyond that it bins them in
``CDO_PCTL_NBINS`` bins between ``timmin`` and ``timmax`` and interpolates within the bin
(every ``--percentile`` method then gives the same value, off by up to a bin width). Set
``CDO_PCTL_NBINS`` above twice the number of time steps for CDO's exact answers. Two
more differences, both in CDO's NumPy methods: for a rank ``1 + (n - 1) p`` below 2 CDO
returns the smallest value without interpolating, and its ``nearest`` rounds halves away
from zero where NumPy rounds them to even.

**Memory.** A percentile needs every time step of a cell at once. Dask data are rechunked
to the whole time axis and bands of cells, as many as fit ``band_mb`` (default
``pangeo-hpc.recipes.percentile-band-mb``) as float64; sorting a band takes about three
times that. Each band is sorted once, whatever the method.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import xarray as xr

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.cf_attrs import (
    AREA_TYPE,
    TIME_PERIOD,
    cell_methods,
    period_coord,
    period_words,
    with_attrs,
)
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import time_name
from pangeo_hpc.recipes.traits import whole_series

Method = Literal["nrank", "nist", "rtype8", "linear", "lower", "higher", "nearest", "midpoint"]
METHODS: tuple[str, ...] = Method.__args__  # type: ignore[attr-defined]


@whole_series(
    "an exact percentile needs all the values of a cell's series at once; it cannot be "
    "merged from per-file states"
)
def percentile(
    da: xr.DataArray,
    *,
    q: float,
    method: Method = "nrank",
    band_mb: float | None = None,
) -> xr.DataArray:
    """Percentile ``q`` of each cell's values over time, skipping NaN: CDO ``timpctl,q``.

    Parameters
    ----------
    da : DataArray
        Data with a time dimension.
    q : float
        The percentile, 0 to 100.
    method : {"nrank", "nist", "rtype8", "linear", "lower", "higher", "nearest", "midpoint"}
        Its definition (module docstring); ``nrank`` is CDO's default.
    band_mb : float, optional
        Memory budget of one band of cells (MB of float64 time series); default the
        setting ``pangeo-hpc.recipes.percentile-band-mb``.

    Returns
    -------
    DataArray
        Units and standard name of ``da`` (a percentile of temperatures is a temperature),
        a scalar ``time_period`` coordinate. CF 1.8 has no cell method for a percentile:
        ``time: minimum``/``maximum`` for q = 0/100, ``time: median`` for q = 50 with
        ``linear``; else ``time: point (90th percentile over time, method nrank)``, the
        percentile also in ``long_name`` (with the years or months of the data) and
        ``comment``. NaN where a cell has no valid value.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")  # two years, monthly
    >>> da = xr.DataArray(np.arange(24.0), coords={"time": time}, dims="time", attrs={"units": "K"})
    >>> float(percentile(da, q=50))  # the 12th of 24 values
    11.0
    """
    check_dataarray(da, "percentile")
    if isinstance(q, bool) or not isinstance(q, int | float) or not 0 <= q <= 100:
        raise InputError(
            f"percentile: q={q!r} is not a percentile: give a number from 0 to 100, e.g. q=90",
            param="q",
        )
    if method not in METHODS:
        raise InputError(
            f"percentile: method={method!r} is not one of {list(METHODS)}: pick one "
            "(nrank is CDO's default)",
            param="method",
        )
    t = time_name(da)
    budget = float(config.get("recipes.percentile-band-mb", band_mb)) * 2**20
    if da.chunks is not None:
        # the data only: the coordinates stay in memory (a chunk of the time bounds)
        chunks = band_chunks(da, t, budget)
        da = da.copy(data=da.data.rechunk(tuple(chunks[str(d)] for d in da.dims)))
    dtype = da.dtype if np.issubdtype(da.dtype, np.floating) else np.dtype("f8")
    out = xr.apply_ufunc(
        sorted_percentile,
        da,
        input_core_dims=[[t]],
        kwargs={"q": float(q), "method": method},
        dask="parallelized",
        output_dtypes=[dtype],
    ).astype(dtype, copy=False)
    return with_attrs(out, _attrs(da, t, float(q), method)).assign_coords(
        {TIME_PERIOD: period_coord(da[t], f"{_ordinal(q)} percentile")}
    )


def band_chunks(da: xr.DataArray, t: str, budget: float) -> dict[str, int]:
    """Chunks of ``da``: the whole of ``t``, and bands of the other dimensions holding at
    most ``budget`` bytes of float64 (whole along the innermost dimensions first).

    Parameters
    ----------
    da : xr.DataArray
        The data.
    t : str
        The time dimension.
    budget : float
        Bytes a chunk may hold.

    Returns
    -------
    dict[str, int]
        Dimension -> chunk size.

    Examples
    --------
    >>> import xarray as xr
    >>> da = xr.DataArray(np.zeros((100, 10, 20)), dims=("time", "lat", "lon"))
    >>> band_chunks(da, "time", budget=3 * 100 * 20 * 8)  # three latitude rows of all times
    {'time': -1, 'lon': -1, 'lat': 3}
    """
    cells = max(1, int(budget // (da.sizes[t] * 8)))
    chunks = {t: -1}
    for dim in reversed([str(d) for d in da.dims if d != t]):
        size = da.sizes[dim]
        chunks[dim] = -1 if cells >= size else cells
        cells = max(1, cells // size)
    return chunks


def sorted_percentile(x: Any, *, q: float, method: str) -> np.ndarray:
    """Percentile ``q`` along the last axis of ``x`` by ``method``, skipping NaN (float64).

    Parameters
    ----------
    x : Any
        NumPy data.
    q : float
        The percentile, 0..100.
    method : str
        NumPy's percentile method (``linear``, ``nearest`` ...).

    Returns
    -------
    np.ndarray
        float64, ``x`` without its last axis.

    Examples
    --------
    >>> sorted_percentile(np.array([[1.0, 2.0, 3.0, np.nan, 5.0]]), q=50, method="linear")
    array([2.5])
    """
    s = np.sort(np.asarray(x, dtype="f8"), axis=-1)  # NaN sort last
    n = (~np.isnan(s)).sum(axis=-1)
    p = q / 100.0
    if method == "nrank":
        return _at(s, n, np.ceil(n * p) - 1)
    if method in ("nist", "rtype8"):
        rank = (n + 1) * p if method == "nist" else 1.0 / 3.0 + (n + 1.0 / 3.0) * p
        k = np.floor(rank)
        lo, hi = _at(s, n, k - 1), _at(s, n, k)
        inside = (k >= 1) & (k < n)
        return np.where(inside, lo + (rank - k) * (hi - lo), np.where(k < 1, _at(s, n, 0), hi))
    virtual = (n - 1) * p  # NumPy's 0-based index
    lo_i, hi_i = np.floor(virtual), np.ceil(virtual)
    lo, hi = _at(s, n, lo_i), _at(s, n, hi_i)
    if method == "linear":
        return lo + (virtual - lo_i) * (hi - lo)
    if method == "lower":
        return lo
    if method == "higher":
        return hi
    if method == "midpoint":
        return (lo + hi) / 2
    return _at(s, n, np.around(virtual))  # nearest: halves to even, as NumPy


def _at(s: np.ndarray, n: np.ndarray, index: Any) -> np.ndarray:
    """``s[..., index]`` with the index clipped to the valid values (NaN where none)."""
    i = np.clip(np.asarray(index), 0, np.maximum(n - 1, 0)).astype(np.intp)
    i = np.broadcast_to(i, s.shape[:-1])
    if s.shape[-1] == 0:
        return np.full(s.shape[:-1], np.nan)
    out = np.take_along_axis(s, i[..., None], axis=-1)[..., 0]
    return np.where(n > 0, out, np.nan)


def _attrs(da: xr.DataArray, t: str, q: float, method: str) -> dict[str, str]:
    attrs = {k: v for k, v in da.attrs.items() if k in ("units", "standard_name", AREA_TYPE)}
    name = da.attrs.get("long_name", da.name or "field")
    attrs["long_name"] = f"{_ordinal(q)} percentile over time of {name}, {period_words(da[t])}"
    known = {0.0: "minimum", 100.0: "maximum"}
    if method == "linear":
        known[50.0] = "median"
    if q in known:
        attrs["cell_methods"] = cell_methods(da, f"time: {known[q]}", gone={t: "time"})
        return attrs
    # CF 1.8 (appendix E) has no percentile method. "time: point" is a method cfchecks
    # and compliance-checker accept, and true of a percentile: each value is one of the
    # values over time (or between two), not a statistic of all of them such as the
    # input's "time: mean"; the percentile is named in the entry's comment, long_name
    # and comment. No colon in the parentheses: compliance-checker reads those as keywords
    what = f"{_ordinal(q)} percentile over time, method {method}"
    attrs["cell_methods"] = cell_methods(da, f"time: point ({what})", gone={t: "time"})
    attrs["comment"] = (
        f"percentile {q:g} of the values over time, method {method} (as CDO timpctl "
        f"with --percentile {method}); CF 1.8 has no cell method for percentiles, so "
        "cell_methods says time: point (each value is one of the values over time, or "
        "between two) and names the percentile in parentheses"
    )
    return attrs


def _ordinal(q: float) -> str:
    """90 -> "90th", 2.5 -> "2.5th", 1 -> "1st"."""
    text = f"{q:g}"
    if not math.isclose(q, round(q)) or 10 <= int(q) % 100 <= 20:
        return f"{text}th"
    return text + {1: "st", 2: "nd", 3: "rd"}.get(int(q) % 10, "th")
