"""Partial states of reductions along time: computed per block of data, merged exactly.

A state is a dict of NumPy arrays: ``labels`` (one int64 per group of time steps: 0 for a
time mean or a trend, the period's first instant in ns for a resampling, the month or
season for a climatology) and fields of shape ``(groups, *cells)``:

=========================  ==========================================================
reduction                  fields (float64 sums, int32 counts)
=========================  ==========================================================
mean (time_mean, resample  ``sum``, ``count`` of the valid values
mean, climatology)
sum (resample sum)         ``sum``, ``count``
min / max                  ``min`` or ``max`` (NaN where none), ``count``
trend                      ``n``, ``st``, ``stt``, ``sx``, ``stx``, ``sxx`` (t in years
                           since :data:`EPOCH`)
=========================  ==========================================================

Merging adds sums and counts and takes the minimum of minima: the order of the files does
not matter, and a state of one file is the same whichever period it is part of. The
results are what the recipe functions give (:func:`finish_values`) to float rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pangeo_hpc.recipes.kernels import group_sums
from pangeo_hpc.recipes.student import t_two_sided_p

#: trends count time in years from here (a fixed origin: states of any period merge)
EPOCH = np.datetime64("2000-01-01T00:00:00", "ns")
#: fields merged by taking the minimum or maximum; every other field is added
_EXTREMES = {"min": np.fmin, "max": np.fmax}
_YEARS = {"year": 1.0, "decade": 10.0, "century": 100.0}

State = dict[str, np.ndarray]


def fields_of(kind: str) -> tuple[str, ...]:
    """The fields a state of ``kind`` (mean, sum, min, max, trend) holds."""
    if kind == "trend":
        return ("n", "st", "stt", "sx", "stx", "sxx")
    if kind in _EXTREMES:
        return (kind, "count")
    return ("sum", "count")


def empty(kind: str, cells: tuple[int, ...]) -> State:
    """The state of no time step at all."""
    out: State = {"labels": np.zeros(0, "i8")}
    for f in fields_of(kind):
        out[f] = np.zeros((0, *cells), "i4" if f == "count" else "f8")
    return out


def block_state(x: np.ndarray, labels: np.ndarray, kind: str, t: np.ndarray | None) -> State:
    """The state of one block of data, time first; ``labels`` per time step (-1: left out),
    ``t`` the years since :data:`EPOCH` per time step (trends only)."""
    x = np.asarray(x)
    keep = labels >= 0
    if not keep.all():
        x, labels = x[keep], labels[keep]
        t = None if t is None else t[keep]
    cells = x.shape[1:]
    if labels.size == 0:
        return empty(kind, cells)
    groups, codes = np.unique(labels, return_inverse=True)
    out: State = {"labels": groups.astype("i8")}
    if kind in ("mean", "sum"):  # one compiled pass: float64 sums and counts per group
        flat = np.ascontiguousarray(x.reshape(x.shape[0], -1))
        sums, counts = group_sums(flat, codes.astype(np.intp), groups.size)
        out["sum"] = sums.reshape((groups.size, *cells))
        out["count"] = counts.reshape((groups.size, *cells))
        return out
    for f in fields_of(kind):
        fill = np.nan if f in _EXTREMES else 0
        out[f] = np.full((groups.size, *cells), fill, "i4" if f == "count" else "f8")
    cuts = np.flatnonzero(np.diff(codes)) + 1  # runs of one label (time is in order)
    starts = np.concatenate([[0], cuts])
    stops = np.concatenate([cuts, [codes.size]])
    for a, b in zip(starts, stops, strict=True):
        _add_run(out, int(codes[a]), x[a:b], kind, None if t is None else t[a:b])
    return out


def _add_run(out: State, g: int, x: np.ndarray, kind: str, t: np.ndarray | None) -> None:
    valid = ~np.isnan(x)
    if kind == "trend":
        assert t is not None
        v = valid.astype("f8")
        xf = np.where(valid, x, 0.0).astype("f8")
        out["n"][g] += v.sum(0)
        out["st"][g] += np.tensordot(t, v, axes=1)
        out["stt"][g] += np.tensordot(t * t, v, axes=1)
        out["sx"][g] += xf.sum(0)
        out["stx"][g] += np.tensordot(t, xf, axes=1)
        out["sxx"][g] += (xf * xf).sum(0)
        return
    out["count"][g] += valid.sum(0, dtype="i4")
    if kind in _EXTREMES:
        out[kind][g] = _EXTREMES[kind](out[kind][g], _EXTREMES[kind].reduce(x, axis=0))
    else:
        out["sum"][g] += np.where(valid, x, 0.0).sum(0, dtype="f8")


def merge(states: Sequence[State], kind: str) -> State:
    """One state from several (of blocks along time, or of files): groups of the same label
    combined, labels sorted."""
    states = [s for s in states if s["labels"].size]
    if not states:
        raise ValueError("merge: no time step in any state")
    if len(states) == 1:
        return states[0]
    every = np.concatenate([s["labels"] for s in states])
    labels = np.unique(every)
    if labels.size == every.size:  # no group in two states (months of files): side by side
        order = np.argsort(every, kind="stable")
        out_: State = {"labels": every[order]}
        for f in fields_of(kind):
            joined = np.concatenate([s[f] for s in states])
            out_[f] = joined if np.all(order[1:] > order[:-1]) else joined[order]
        return out_
    cells = states[0][fields_of(kind)[0]].shape[1:]
    out: State = {"labels": labels}
    for f in fields_of(kind):
        fill = np.nan if f in _EXTREMES else 0
        out[f] = np.full((labels.size, *cells), fill, "i4" if f == "count" else "f8")
    for s in states:
        at = np.searchsorted(labels, s["labels"])
        for f in fields_of(kind):
            if f in _EXTREMES:
                out[f][at] = _EXTREMES[f](out[f][at], s[f])
            else:
                out[f][at] += s[f]
    return out


def side_by_side(grid: Any, kind: str) -> State:
    """One state from the states of the blocks of one time span laid out over the cells
    (nested lists, one level per cell dimension, as ``dask.array.Array.to_delayed``): the
    same time steps, so the same labels."""
    if not isinstance(grid, list):
        return grid
    parts = [side_by_side(g, kind) for g in grid]
    out: State = {"labels": parts[0]["labels"]}
    for f in fields_of(kind):
        # this level's cell dimension: the outermost list is the first (axis 1)
        axis = parts[0][f].ndim - _depth(grid)
        out[f] = np.concatenate([p[f] for p in parts], axis=axis)
    return out


def _depth(grid: Any) -> int:
    d = 0
    while isinstance(grid, list):
        grid, d = grid[0], d + 1
    return d


def finish_values(
    state: State, kind: str, options: dict[str, Any], dtype: Any = "f8"
) -> dict[str, np.ndarray]:
    """What the reduction gives, per group, from a merged state: ``value`` (mean, sum,
    minimum, maximum, as ``dtype``; NaN where a group has no valid value), or ``trend``
    (and with ``stats``: ``trend_stderr``, ``trend_p_value``) as
    :func:`pangeo_hpc.recipes.trend`."""
    if kind == "trend":
        return _trend(state, options)
    count = state["count"]
    if kind == "mean":  # a group without valid values has sum 0: 0 / 0 is NaN
        value = np.empty(count.shape, dtype)
        with np.errstate(invalid="ignore", divide="ignore"):
            np.divide(state["sum"], count, out=value, casting="unsafe")
        return {"value": value}
    value = state["sum"] if kind == "sum" else state[kind]
    return {"value": np.where(count > 0, value, np.nan).astype(dtype, copy=False)}


def _trend(state: State, options: dict[str, Any]) -> dict[str, np.ndarray]:
    n, st, sx = state["n"][0], state["st"][0], state["sx"][0]
    stats = bool(options.get("stats", False))
    per = _YEARS[str(options.get("per", "decade"))]
    enough = n >= max(int(options.get("min_count", 3)), 3 if stats else 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        nn = np.where(n > 0, n, np.nan)
        stt = state["stt"][0] - st**2 / nn
        stx = state["stx"][0] - st * sx / nn
        positive = np.where(stt > 0, stt, np.nan)
        slope_years = stx / positive
        out = {"trend": np.where(enough, slope_years * per, np.nan)}
        if not stats:
            return out
        sxx = state["sxx"][0] - sx**2 / nn
        dof = n - 2
        sse = np.clip(sxx - slope_years * stx, 0.0, None)
        stderr = np.sqrt(sse / np.where(dof > 0, dof, np.nan) / positive) * per
        out["trend_stderr"] = np.where(enough, stderr, np.nan)
        p = t_two_sided_p(out["trend"] / out["trend_stderr"], dof)
        out["trend_p_value"] = np.where(enough, p, np.nan)
    return out
