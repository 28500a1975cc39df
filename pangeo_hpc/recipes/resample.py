"""Means, extremes and sums over calendar periods (CDO ``daymean`` ... ``yearsum``,
``seasmean``) and running means (CDO ``runmean``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes import time_bounds
from pangeo_hpc.recipes.cf_attrs import AREA_TYPE, cell_methods, with_attrs
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import time_name
from pangeo_hpc.recipes.traits import Reduction, reduces, whole_series

#: the periods by name -> pandas aliases; each labels a period with its first day
FREQS = {"daily": "D", "monthly": "MS", "seasonal": "QS-DEC", "annual": "YS"}
_WORDS = {alias: word for word, alias in FREQS.items()}
#: our statistics -> CF cell method names (CF Appendix E)
STATS = {"mean": "mean", "min": "minimum", "max": "maximum", "sum": "sum"}
#: a series below this size is resampled as one chunk (one task, not thousands)
SMALL_BYTES = 16 * 2**20


def period_starts(coord: np.ndarray) -> np.ndarray:
    """The labels of periods (their first instants) as int64 nanoseconds: the groups of a
    resampling, or of days."""
    return coord.astype("datetime64[ns]").view("i8")


def _stat(options: Mapping[str, Any]) -> str:
    return str(options.get("stat", "mean"))


def _period_groups(time: xr.DataArray, options: Mapping[str, Any], data: xr.Dataset) -> np.ndarray:
    """The start of each time step's period (ns), as pandas' resampling groups them."""
    alias = FREQS.get(options["freq"], options["freq"])
    values = time.values
    index = pd.DatetimeIndex(values)
    starts = pd.Series(index, index=index).resample(alias).min().index.values
    at = np.searchsorted(starts, values, "right") - 1
    return starts[at].astype("datetime64[ns]").view("i8")


@reduces(Reduction(_stat, _period_groups, period_starts, periods=True))
def resample(
    da: xr.DataArray,
    *,
    freq: str,
    stat: Literal["mean", "min", "max", "sum"] = "mean",
) -> xr.DataArray:
    """One value per calendar day, month, season or year (CDO ``daymean``, ``monmax``,
    ``seasmean``, ``yearsum``, ...).

    Parameters
    ----------
    da : DataArray
        Data with a time dimension (datetime64 or cftime), on any grid or none.
    freq : {"daily", "monthly", "seasonal", "annual", "D", "MS", "QS-DEC", "YS"}
        The periods. Seasons are DJF, MAM, JJA, SON; a DJF holds the December before its
        January. As CDO ``seasmean`` does, a season the data only partly cover is
        reduced over the steps it has: data from January on start with a DJF of January
        and February alone (CDO warns "Season 1 has only 2 input time steps"), labelled
        with the December before.
    stat : {"mean", "min", "max", "sum"}
        The statistic over each period's time steps, skipping NaN (NaN where a period has
        no valid value, as CDO's missing value).

    Returns
    -------
    DataArray
        Labelled with each period's start (``2000-12-01`` for DJF 2000/01); periods with no
        time step at all are left out, as CDO leaves them. Each value's time interval
        (:mod:`~pangeo_hpc.recipes.time_bounds`, the file's ``time_bnds``) runs from the
        start of its first step to the end of its last, as CDO's: a JJA mean covers June
        to August, a DJF of January and February alone those two months (its label, the
        December before, then lies outside them: cfchecks warns). Units and standard name as
        ``da`` (a sum of m is m); ``cell_methods`` gains ``time: mean`` (``minimum``,
        ``maximum``, ``sum``). Dask data stay lazy: a small series is made one chunk
        first; a large field keeps its chunks (no rechunk), each period reduced from
        the chunks that hold it (in one pass, block by block, when its chunks are
        exactly its periods). A field of many small periods is regrouped into bands of
        whole time series, about 16 MB each.
    """
    check_dataarray(da, "resample")
    alias = FREQS.get(freq, freq)
    if alias not in _WORDS:
        raise InputError(
            f"resample: freq={freq!r} is not one of {[*FREQS, *FREQS.values()]}", param="freq"
        )
    if stat not in STATS:
        raise InputError(f"resample: stat={stat!r} is not one of {list(STATS)}", param="stat")
    t = time_name(da)
    lower, upper = time_bounds.intervals(da[t])
    da = time_bounds.without_intervals(da, t)
    out = _by_block(da, t, alias, stat)
    if out is None:
        series = one_chunk_if_small(da, t)
        grouped = series.resample({t: alias})
        kw = _engine()
        out = grouped.sum(min_count=1, **kw) if stat == "sum" else getattr(grouped, stat)(**kw)
        # periods that hold no time step (a gap in the data): counted on the coordinate
        steps = xr.ones_like(da[t].drop_vars(list(da[t].coords)), dtype="i4")
        counts = steps.assign_coords({t: da[t].values}).resample({t: alias}).sum(**kw).values
        held = np.nan_to_num(counts) > 0  # an empty period's sum is NaN or 0 (xarray versions)
        if not held.all():
            out = out.isel({t: np.flatnonzero(held)})
    out = _fewer_chunks(out, t)
    # each value covers its steps: the first one's start to the last one's end (CDO's
    # time_bnds), not its period (JJA only of a year) nor the step to the next label
    first, last = _members(da[t], out[t], alias)
    out = time_bounds.with_intervals(out, t, *time_bounds.grouped(lower, upper, first, last))
    out[t].attrs = dict(da[t].attrs)
    out[t].encoding.update(time_bounds.calendar_encoding(da[t]))
    word = f"{_WORDS[alias]} {STATS[stat]}"
    return with_attrs(out, period_attrs(da, t, word, f"{t}: {STATS[stat]}"))


def _members(time: xr.DataArray, labels: xr.DataArray, alias: str) -> tuple[Any, Any]:
    """Positions of the first and the last step of ``time`` in the period of each of
    ``labels`` (the periods that hold steps, as :func:`resample` keeps them)."""
    t = str(time.dims[0])
    positions = xr.DataArray(
        np.arange(time.size), dims=(t,), coords={t: np.asarray(time.values)}
    ).resample({t: alias})
    first, last = positions.min(**_engine()), positions.max(**_engine())
    at = {t: np.asarray(labels.values)}
    return first.sel(at).values, last.sel(at).values


def _engine() -> dict[str, str]:
    """flox's NumPy engine for xarray's resampling. Its default when numbagg is installed,
    numbagg, compiles its kernels at each new process's first call (0.8 s here, in every
    worker and in the client of a run), more than a series of monthly values takes."""
    return {"engine": "flox"} if xr.get_options()["use_flox"] else {}


@whole_series("running_mean's windows cross file boundaries")
def running_mean(da: xr.DataArray, *, window: int, center: bool = True) -> xr.DataArray:
    """Mean over ``window`` consecutive time steps, one value per full window (CDO
    ``runmean,window``).

    Parameters
    ----------
    da : DataArray
        Data with a time dimension.
    window : int
        Number of time steps in each mean (3 for the ONI's three months).
    center : bool
        Label each mean with the middle of its window: the middle step for an odd
        window, halfway between the two middle steps for an even one (CDO's default
        ``timestat_date=middle``; CDO equals this). False labels it with the window's
        last step (pandas' and xarray's trailing convention).

    Returns
    -------
    DataArray
        ``n - window + 1`` values for ``n`` time steps (no partial windows at the ends).
        NaN in a window are skipped (CDO ``runmean``, not ``runavg``); a window of NaN only
        gives NaN. Units as ``da``; ``cell_methods`` gains ``time: mean``. Each mean's time
        interval is its window's, from the start of its first step to the end of its
        last (CDO's ``time_bnds``: 2015-01-01 to 2016-01-01 for twelve months of 2015).
    """
    check_dataarray(da, "running_mean")
    t = time_name(da)
    n = da.sizes[t]
    if isinstance(window, bool) or not isinstance(window, int | np.integer) or not 1 <= window <= n:
        raise InputError(
            f"running_mean: window={window!r} is not a number of time steps from 1 to {n} "
            "(the data's length)",
            param="window",
        )
    series = one_chunk_if_small(da, t)
    rolled = series.rolling({t: int(window)}, min_periods=1).mean()
    out = rolled.isel({t: slice(window - 1, None)})
    times = da[t].values
    last = times[window - 1 :]
    if center:
        first = times[: n - window + 1]
        labels = first + (last - first) / 2
    else:
        labels = last
    out = out.assign_coords({t: (t, labels, da[t].attrs)})
    out[t].encoding.update(time_bounds.calendar_encoding(da[t]))
    # each mean covers its window: the first step's start to the last step's end (CDO)
    lower, upper = time_bounds.intervals(da[t])
    out = time_bounds.with_intervals(out, t, lower[: n - window + 1], upper[window - 1 :])
    word = f"{window}-step running mean"
    return with_attrs(out, period_attrs(da, t, word, f"{t}: mean"))


def _by_block(da: xr.DataArray, t: str, alias: str, stat: str) -> xr.DataArray | None:
    """The periods of a big field whose time chunks are exactly its periods (a month per
    chunk, as ``open_era5`` gives for monthly means: a chunk never spans two files),
    reduced block by block in one pass: no grouping machinery, no second pass for counts.
    None when they are not (then xarray's resample)."""
    if (
        da.chunks is None
        or da.nbytes <= SMALL_BYTES
        or da.dims[0] != t
        or any(len(c) != 1 for c in da.chunks[1:])
        or da[t].dtype.kind != "M"
    ):
        return None
    position = pd.Series(np.arange(da.sizes[t]), index=pd.DatetimeIndex(da[t].values))
    periods = position.resample(alias)
    first, last = periods.min().dropna(), periods.max().dropna()
    edges = np.cumsum((0, *da.chunks[0]))
    if not (
        np.array_equal(first.values, edges[:-1]) and np.array_equal(last.values + 1, edges[1:])
    ):
        return None
    chunks = ((1,) * len(first), *da.chunks[1:])
    data = da.data.map_blocks(_reduce_block, stat, chunks=chunks, dtype=da.dtype)
    coords = {k: v for k, v in da.coords.items() if t not in v.dims}
    time = xr.DataArray(first.index.values, dims=(t,), attrs=da[t].attrs)
    return xr.DataArray(data, dims=da.dims, coords={t: time, **coords}, name=da.name)


def _reduce_block(block: np.ndarray, stat: str) -> np.ndarray:
    """``stat`` over the first axis of one block, skipping NaN (NaN where none is valid);
    sums in float64."""
    valid = ~np.isnan(block)
    count = valid.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        if stat in ("mean", "sum"):
            total = np.where(valid, block, 0).sum(axis=0, dtype="f8")
            value = total / count if stat == "mean" else total
        else:
            fill = np.inf if stat == "min" else -np.inf
            pick = np.min if stat == "min" else np.max
            value = pick(np.where(valid, block, fill), axis=0)
    out = np.where(count > 0, value, np.nan).astype(block.dtype)
    return out[None]


#: chunks of a resampled field below this are regrouped (one month of a 1-degree field: 0.26 MB)
SMALL_CHUNK = 8 * 2**20


def _fewer_chunks(out: xr.DataArray, t: str) -> xr.DataArray:
    """Periods of a field reduced from its chunks, one small chunk each (a month of daily
    fields: 0.26 MB at 1 degree), regrouped into few large ones: the whole time axis, the
    other dimensions as Dask chooses. The steps after (anomalies, trends) are then a few
    big tasks instead of thousands of tiny ones."""
    if out.chunks is None or out.nbytes <= SMALL_BYTES:
        return out
    largest = int(np.prod([max(c) for c in out.chunks])) * out.dtype.itemsize
    if largest >= SMALL_CHUNK:
        return out
    # bands along the first other dimension, about 16 MB each: whole time series, a few
    # chunks per worker (one chunk would leave all but one worker idle)
    band = next(d for d in out.dims if d != t)
    per_row = out.nbytes / out.sizes[band]
    rows = max(1, min(out.sizes[band], int(16 * 2**20 // per_row)))
    return out.chunk({t: -1, band: rows, **{d: -1 for d in out.dims if d not in (t, band)}})


def one_chunk_if_small(da: xr.DataArray, t: str) -> xr.DataArray:
    """``da`` as one chunk along time when it is small (an area mean's series), else as
    it is: a big field chunked by file keeps its chunks."""
    if da.chunks is not None and da.nbytes <= SMALL_BYTES:
        return da.chunk({t: -1})
    return da


def period_attrs(da: xr.DataArray, t: str, what: str, method: str) -> dict[str, str]:
    """Attributes of a statistic over time of ``da``: the same quantity and units, a
    ``long_name`` saying ``what``, the input's cell methods followed by ``method``."""
    kept = ("units", "standard_name", "long_name", AREA_TYPE)
    attrs = {k: v for k, v in da.attrs.items() if k in kept}
    attrs["long_name"] = f"{attrs.get('long_name', da.name or 'field')}, {what}"
    attrs["cell_methods"] = cell_methods(da, method)
    return attrs
