"""Means, extremes and sums over calendar periods (CDO ``daymean`` ... ``yearsum``,
``seasmean``) and running means (CDO ``runmean``)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes import time_bounds
from pangeo_hpc.recipes.aggregations import STATISTICS
from pangeo_hpc.recipes.cf_attrs import AREA_TYPE, cell_methods, with_attrs
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.folds import SMALL_BYTES
from pangeo_hpc.recipes.grid import time_name
from pangeo_hpc.recipes.months import MONTH_NAMES, months_words
from pangeo_hpc.recipes.traits import Reduction, reduces, whole_series

#: the periods by name -> pandas aliases; each labels a period with its first day
FREQS = {"daily": "D", "monthly": "MS", "seasonal": "QS-DEC", "annual": "YS"}
_WORDS = {alias: word for word, alias in FREQS.items()}
#: the months of a season: a season with fewer of them in the data is incomplete
SEASON_MONTHS = 3
#: what to do with incomplete seasons
INCOMPLETE = ("drop", "keep")


def period_starts(coord: np.ndarray, options: Mapping[str, Any] | None = None) -> np.ndarray:
    """The labels of periods (their first instants) as int64 nanoseconds: the groups of a
    resampling, or of days.

    Parameters
    ----------
    coord : np.ndarray
        Period labels (datetime64).
    options : Mapping[str, Any] | None, optional
        Not read: the labels are already the periods' first instants.

    Returns
    -------
    np.ndarray
        int64 nanoseconds, one per label.

    Examples
    --------
    >>> period_starts(np.array(["2000-01-01", "2000-02-01"], dtype="datetime64[ns]"))
    array([946684800000000000, 949363200000000000])
    """
    return coord.astype("datetime64[ns]").view("i8")


def periods(values: np.ndarray, alias: str) -> tuple[np.ndarray, np.ndarray]:
    """The periods of ``alias`` from the first to the last of the dates ``values`` (sorted;
    datetime64 or cftime), as xarray's and pandas' resampling cut them (anchored to the
    calendar: the same periods whatever the data's first date), and the index of each
    date's period among them: ``(starts, at)``, read-only.

    Parameters
    ----------
    values : np.ndarray
        Sorted dates.
    alias : str
        A pandas frequency (``MS``, ``YS``).

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        ``(starts, at)``.

    Examples
    --------
    >>> dates = np.array(["2000-01-15", "2000-02-10", "2000-02-20"], dtype="datetime64[ns]")
    >>> starts, at = periods(dates, "MS")
    >>> starts.astype("datetime64[D]"), at
    (array(['2000-01-01', '2000-02-01'], dtype='datetime64[D]'), array([0, 1, 1]))
    """
    values = np.asarray(values)
    if values.size == 0:
        return values[:0], np.zeros(0, np.intp)
    key = None
    if values.dtype.kind == "M":  # a run asks for the same periods several times (6 ms each)
        digest = hashlib.blake2b(np.ascontiguousarray(values).view("u1"), digest_size=16)
        key = (alias, values.dtype.str, values.shape, digest.digest())
        with _PERIODS_LOCK:
            if key in _PERIODS:
                return _PERIODS[key]
    positions = xr.DataArray(np.arange(values.size), dims=("t",), coords={"t": values})
    # only the labels are used, which xarray's resampler cuts (through pandas) whatever
    # reduces the groups: xarray's own reduction, not flox's, whose numpy_groupies builds
    # ~500 numba wrappers when imported (0.4-1 s of a cached run that needed nothing else)
    with xr.set_options(use_flox=False):
        starts = np.asarray(positions.resample(t=alias).count()["t"].values)
    if starts.dtype.kind == "M":  # in the dates' own resolution
        starts = starts.astype(values.dtype)
    at = np.searchsorted(starts, values, "right") - 1
    for array in (starts, at):
        array.setflags(write=False)
    if key is not None:
        with _PERIODS_LOCK:
            if len(_PERIODS) >= 64:
                _PERIODS.clear()
            _PERIODS[key] = (starts, at)
    return starts, at


_PERIODS: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}
_PERIODS_LOCK = threading.Lock()


def _stat(options: Mapping[str, Any]) -> str:
    return str(options.get("stat", "mean"))


def _period_groups(time: xr.DataArray, options: Mapping[str, Any], data: xr.Dataset) -> np.ndarray:
    """The start of each time step's period (ns): the groups of an incremental run's states,
    every period, whole or not (a later file may complete a season)."""
    starts, at = periods(time.values, FREQS.get(options["freq"], options["freq"]))
    return period_starts(starts[at])


def _result_periods(labels: np.ndarray, options: Mapping[str, Any]) -> np.ndarray:
    """The start (ns) of the period each of a result's labels lies in: its group (a season
    kept without its first month is labelled with its first step, inside the season)."""
    return _period_groups(xr.DataArray(labels, dims=("t",)), options, xr.Dataset())


@reduces(Reduction(_stat, _period_groups, _result_periods, periods=True, partial_left_out=True))
def resample(
    da: xr.DataArray,
    *,
    freq: str,
    stat: Literal["mean", "min", "max", "sum"] = "mean",
    incomplete: Literal["drop", "keep"] = "drop",
) -> xr.DataArray:
    """One value per calendar day, month, season or year (CDO ``daymean``, ``monmax``,
    ``seasmean``, ``yearsum``, ...).

    Parameters
    ----------
    da : DataArray
        Data with a time dimension (datetime64 or cftime, in time order), on any grid or
        none.
    freq : {"daily", "monthly", "seasonal", "annual", "D", "MS", "QS-DEC", "YS"}
        The periods. Seasons are DJF, MAM, JJA, SON; a DJF holds the December before its
        January.
    stat : {"mean", "min", "max", "sum"}
        The statistic over each period's time steps, skipping NaN (NaN where a period has
        no valid value, as CDO's missing value): an
        :data:`~pangeo_hpc.recipes.aggregations.STATISTICS` aggregation.
    incomplete : {"drop", "keep"}
        Seasons the data hold only some months of (data from January on: a DJF of January
        and February alone). ``drop`` (as ESMValCore's ``seasonal_statistics``) leaves
        them out; a season is complete when each of its three months holds a time step.
        ``keep`` (as CDO ``seasmean``, which warns "Season 1 has only 2 input time steps")
        reduces them over the steps they have, labelled with their first step's start
        when that is after the season's (then the label lies in the value's interval).
        Other periods are all kept.

    Returns
    -------
    DataArray
        Labelled with each period's start (``2000-12-01`` for DJF 2000/01); periods with no
        time step at all are left out, as CDO leaves them. Each value's time interval
        (:mod:`~pangeo_hpc.recipes.time_bounds`, the file's ``time_bnds``) runs from the
        start of its first step to the end of its last, as CDO's: a JJA mean covers June
        to August. Units and standard name as ``da`` (a sum of m is m); ``cell_methods``
        gains ``time: mean`` (``minimum``, ``maximum``, ``sum``), for seasons with
        ``(complete seasons only)``, or ``(incomplete seasons kept)`` when some are; a
        ``comment`` names the seasons left out or kept incomplete.

    Notes
    -----
    Computed by the statistic's :class:`~pangeo_hpc.recipes.aggregations.Aggregation`
    (:meth:`~pangeo_hpc.recipes.aggregations.Aggregation.reduce_groups`), as an
    incremental run's per-file states are: the state of each block (one compiled pass,
    float64 sums), per period the left fold of the blocks that hold it, finalized: the same
    numbers to the bit. Dask data stay lazy and keep their chunks (no rechunk along time);
    a series below 16 MB is reduced in one task, periods of a small field regrouped into
    bands of whole time series, about 16 MB each.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")  # two years, monthly
    >>> da = xr.DataArray(np.arange(24.0), coords={"time": time}, dims="time", attrs={"units": "K"})
    >>> resample(da, freq="annual").values.tolist()
    [5.5, 17.5]
    >>> resample(da, freq="annual", stat="max").values.tolist()
    [11.0, 23.0]
    """
    check_dataarray(da, "resample")
    alias = FREQS.get(freq, freq)
    if alias not in _WORDS:
        raise InputError(
            f"resample: freq={freq!r} is not one of {[*FREQS, *FREQS.values()]}", param="freq"
        )
    if stat not in STATISTICS:
        raise InputError(f"resample: stat={stat!r} is not one of {list(STATISTICS)}", param="stat")
    if incomplete not in INCOMPLETE:
        raise InputError(
            f"resample: incomplete={incomplete!r} is not one of {list(INCOMPLETE)}",
            param="incomplete",
        )
    agg = STATISTICS[stat]
    t = time_name(da)
    lower, upper = time_bounds.intervals(da[t])
    da = time_bounds.without_intervals(da, t)
    starts, at = periods(da[t].values, alias)
    held, codes = np.unique(at, return_inverse=True)  # the periods that hold steps
    partial = _incomplete(da[t], codes, held.size, alias)
    kept = ~partial if incomplete == "drop" else np.ones(held.size, bool)
    codes = np.where(kept[codes], np.cumsum(kept)[codes] - 1, -1)
    rows = np.arange(codes.size)
    first = np.array([rows[codes == g][0] for g in range(int(kept.sum()))], dtype=np.intp)
    last = np.array([rows[codes == g][-1] for g in range(int(kept.sum()))], dtype=np.intp)
    labels = starts[held[kept]]
    late = partial[kept] & (lower[first] > labels)  # a season kept without its start
    labels = np.where(late, lower[first], labels) if late.any() else labels
    cells = [d for d in da.dims if d != t]
    data = da.transpose(t, *cells)
    dtype = da.dtype if np.issubdtype(da.dtype, np.floating) else np.dtype("f8")
    value = agg.reduce_groups(data.data, codes, {}, dtype=dtype, per_group=True)["value"]
    coords = {k: v for k, v in data.coords.items() if t not in v.dims}
    time = xr.DataArray(labels, dims=(t,), attrs=dict(da[t].attrs))
    out = xr.DataArray(value, dims=(t, *cells), coords={**coords, t: time})
    out.name = da.name  # (the constructor names it after the Dask array, given None)
    out = _fewer_chunks(out.transpose(*da.dims), t)
    # each value covers its steps: the first one's start to the last one's end (CDO's
    # time_bnds), not its period (JJA only of a year) nor the step to the next label
    out = time_bounds.with_intervals(out, t, *time_bounds.grouped(lower, upper, first, last))
    out[t].encoding.update(time_bounds.calendar_encoding(da[t]))
    method = f"{t}: {agg.cell_method}"
    if alias == FREQS["seasonal"]:
        method += " (incomplete seasons kept)" if partial.any() and incomplete == "keep" else ""
        method += " (complete seasons only)" if incomplete == "drop" else ""
    attrs = period_attrs(da, t, f"{_WORDS[alias]} {agg.cell_method}", method)
    if partial.any():
        attrs["comment"] = _partial_words(da[t], at, held[partial], starts, incomplete)
    return with_attrs(out, attrs)


def _incomplete(time: xr.DataArray, codes: np.ndarray, groups: int, alias: str) -> np.ndarray:
    """Per period (``codes``: each step's, 0 .. groups - 1): a season with a month that
    holds no time step; no other period is incomplete."""
    if alias != FREQS["seasonal"] or groups == 0:
        return np.zeros(groups, bool)
    month = np.asarray(time.dt.year.values, "i8") * 12 + np.asarray(time.dt.month.values, "i8")
    pairs = np.unique(np.stack([np.asarray(codes, "i8"), month]), axis=1)
    return np.bincount(pairs[0], minlength=groups) < SEASON_MONTHS


def _partial_words(
    time: xr.DataArray, at: np.ndarray, which: np.ndarray, starts: np.ndarray, incomplete: str
) -> str:
    """What became of the incomplete seasons (``which``: their indices among the periods
    ``starts``; ``at``: each step's period), for the result's ``comment``."""
    month = np.asarray(time.dt.month.values)
    names = []
    for k in which:
        first = int(str(starts[k])[5:7])
        season = [first, first % 12 + 1, (first + 1) % 12 + 1]
        have = [MONTH_NAMES[m - 1] for m in season if m in set(month[at == k].tolist())]
        names.append(f"{months_words(season)} from {str(starts[k])[:7]} ({'+'.join(have)} only)")
    if incomplete == "drop":
        return (
            "Seasons that lack a month of data are left out (incomplete='keep' keeps them): "
            + ", ".join(names)
        )
    return "Incomplete seasons kept, each reduced over the months it has: " + ", ".join(names)


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

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")  # two years, monthly
    >>> da = xr.DataArray(np.arange(24.0), coords={"time": time}, dims="time", attrs={"units": "K"})
    >>> running_mean(da, window=3).values[:3].tolist()
    [1.0, 2.0, 3.0]
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
    series = _one_chunk_if_small(da, t)
    rolled = series.rolling({t: int(window)}, min_periods=1).mean()
    out = rolled.isel({t: slice(window - 1, None)})
    times = da[t].values
    if center:  # the middle step, or halfway between the two middle ones (CDO): not
        # halfway between the window's ends, a day off for months of unequal lengths
        a, b = (window - 1) // 2, window // 2
        low, high = times[a : n - window + 1 + a], times[b : n - window + 1 + b]
        labels = low if a == b else low + (high - low) / 2
    else:
        labels = times[window - 1 :]
    out = out.assign_coords({t: (t, labels, da[t].attrs)})
    out[t].encoding.update(time_bounds.calendar_encoding(da[t]))
    # each mean covers its window: the first step's start to the last step's end (CDO)
    lower, upper = time_bounds.intervals(da[t])
    out = time_bounds.with_intervals(out, t, lower[: n - window + 1], upper[window - 1 :])
    word = f"{window}-step running mean"
    return with_attrs(out, period_attrs(da, t, word, f"{t}: mean"))


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


def _one_chunk_if_small(da: xr.DataArray, t: str) -> xr.DataArray:
    """``da`` as one chunk along time when it is small (an area mean's series), else as
    it is: a big field chunked by file keeps its chunks."""
    if da.chunks is not None and da.nbytes <= SMALL_BYTES:
        return da.chunk({t: -1})
    return da


def period_attrs(da: xr.DataArray, t: str, what: str, method: str) -> dict[str, str]:
    """Attributes of a statistic over time of ``da``: the same quantity and units, a
    ``long_name`` saying ``what``, the input's cell methods followed by ``method``.

    Parameters
    ----------
    da : xr.DataArray
        The data.
    t : str
        The time dimension.
    what : str
        Words for the statistic.
    method : str
        The ``cell_methods`` entry.

    Returns
    -------
    dict[str, str]
        The attributes.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=3, freq="D")
    >>> da = xr.DataArray([1.0, 2.0, 3.0], coords={"time": time}, attrs={"units": "K"})
    >>> period_attrs(da, "time", "monthly mean", "time: mean")
    {'units': 'K', 'long_name': 'field, monthly mean', 'cell_methods': 'time: mean'}
    """
    kept = ("units", "standard_name", "long_name", AREA_TYPE)
    attrs = {k: v for k, v in da.attrs.items() if k in kept}
    attrs["long_name"] = f"{attrs.get('long_name', da.name or 'field')}, {what}"
    attrs["cell_methods"] = cell_methods(da, method)
    return attrs
