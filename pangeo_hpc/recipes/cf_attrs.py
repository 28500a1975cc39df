"""CF metadata that follows the data: units of rates, cell methods, time periods, bounds.

The recipes call the attribute helpers (pure: they read coordinate values, which are in
memory, never the data); :func:`prepare_for_file` makes the file-level parts (coordinate
attributes, bounds variables, encodings, ``Conventions``) just before a write. Checked with
``cfchecks`` (CF-1.8, the newest the CF checker knows) and ``compliance-checker``:
tests/test_cf_outputs.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

#: the version written to ``Conventions`` (cfchecker 4.1 checks up to CF-1.8)
CONVENTIONS = "CF-1.8"
#: name of the scalar time coordinate of values that stand for a whole period (a time
#: mean, a trend); not the input's time dimension, which a dataset may also hold
TIME_PERIOD = "time_period"
#: attribute (not written) of a scalar coordinate that belongs to one result of several
OWNER = "_result"
#: name of the bounds dimension
BOUNDS_DIM = "bnds"

#: ``per`` -> a UDUNITS spelling. UDUNITS has no "decade"; ``K/(10 year)`` parses and
#: converts to 0.1 K/year (cfunits, cf_units). Its ``year`` is 365.242198781 days, ours
#: (trend.py) 365.2425: 9e-7 apart. Never ``a``: to UDUNITS that is the are (100 m2).
PER_TIME = {"year": "year", "decade": "(10 year)", "century": "(100 year)"}

#: standard-name prefixes -> CF area type of the cells that hold values (``where``)
_AREA_TYPES = (
    (("sea_surface_", "sea_water_", "sea_ice_", "ocean_"), "sea"),
    (("land_", "soil_"), "land"),
)
#: one ``name: [name: ...] method [where ...] [(comment)]`` entry of a cell_methods string
_ENTRY = re.compile(r"(?:\S+:\s*)+[a-z_]+(?:\s+(?:where|over|within)\s+\S+)*(?:\s*\([^)]*\))?")
_SIMPLE_UNIT = re.compile(r"^(?:[A-Za-z_]+[0-9]*|1)$")


def per_time_units(units: str | None, per: str) -> str:
    """``units`` of a quantity divided by a time span ``per`` (year, decade, century), in a
    form UDUNITS parses: ``per_time_units("K", "decade") == "K/(10 year)"``."""
    u = (units or "").strip() or "1"
    if not _SIMPLE_UNIT.match(u):
        u = f"({u})"
    return f"{u}/{PER_TIME[per]}"


def area_where(da: xr.DataArray) -> str:
    """`` where sea`` (or ``land``) when the standard name says where the values live; a
    mean that skips NaN averages over those cells only. Else ``""``."""
    inherited = re.search(r"area:[^:]*\bwhere\s+(\S+)", str(da.attrs.get("cell_methods", "")))
    if inherited:
        return f" where {inherited.group(1)}"
    name = str(da.attrs.get("standard_name", ""))
    for prefixes, area_type in _AREA_TYPES:
        if name.startswith(prefixes):
            return f" where {area_type}"
    return ""


def cell_methods(da: xr.DataArray, method: str, *, gone: Mapping[str, str] | None = None) -> str:
    """The input's ``cell_methods`` followed by ``method`` (CF 7.3: in the order applied).

    ``gone`` renames dimensions the result no longer has in the inherited entries (the
    time dimension becomes CF's ``time``), so every name still refers to something real.
    """
    before = str(da.attrs.get("cell_methods", "")).strip()
    for old, new in (gone or {}).items():
        before = re.sub(rf"(?<!\S){re.escape(old)}:", f"{new}:", before)
    # the mean of monthly means over the same months is still that: no second entry
    # (cfchecks rejects a dimension named twice)
    done = {e.strip() for e in _ENTRY.findall(before)}
    parts = [e.strip() for e in _ENTRY.findall(method) if e.strip() not in done]
    return " ".join([before, *parts]).strip()


def time_span(time: xr.DataArray) -> tuple[np.datetime64, np.datetime64]:
    """Start and end of the period the values of ``time`` cover: from the first label to
    the last label plus one step (a month for month starts, a day for days)."""
    values = pd.DatetimeIndex(np.asarray(time.values, dtype="datetime64[ns]"))
    first, last = values[0], values[-1]
    return np.datetime64(first, "ns"), np.datetime64(last + _step(values), "ns")


def _step(values: pd.DatetimeIndex) -> pd.DateOffset | pd.Timedelta:
    """The length of one step of ``values``: whole months (or years) for labels on the first
    of a month at midnight a constant number of months apart, else their (median) spacing.
    Not ``pd.infer_freq``: pandas 3 warns about its return type."""
    if values.size < 2:
        return pd.Timedelta(0)
    if (values.day == 1).all() and (values == values.normalize()).all():
        months = np.diff(values.year * 12 + values.month)
        if (months == months[0]).all() and months[0] > 0:
            return pd.DateOffset(months=int(months[0]))
    ns = values.values.astype("datetime64[ns]").astype("i8")  # whatever the index's unit
    return pd.Timedelta(int(np.median(np.diff(ns))), "ns")


def period_coord(time: xr.DataArray, what: str) -> xr.DataArray:
    """A scalar time coordinate for a value that stands for the whole period of ``time``:
    its middle, with bounds (made by :func:`prepare_for_file`) from :func:`time_span`."""
    start, end = time_span(time)
    middle = start + (end - start) // 2
    return xr.DataArray(
        middle,
        attrs={
            "standard_name": "time",
            "long_name": f"period of the {what}",
            "bounds": f"{TIME_PERIOD}_{BOUNDS_DIM}",
            "period_start": str(start)[:19],
            "period_end": str(end)[:19],
        },
    )


def _is_time(coord: xr.DataArray) -> bool:
    return np.issubdtype(coord.dtype, np.datetime64) or coord.attrs.get("standard_name") == "time"


def prepare_for_file(ds: xr.Dataset, *, history: str, title: str | None = None) -> xr.Dataset:
    """A copy of ``ds`` ready to be written as CF: attributes of latitude, longitude and
    time (``standard_name``, ``axis``), time bounds where a value stands for a period, no
    ``_FillValue`` on coordinates and bounds, ``Conventions``, ``history`` and ``title``.

    Bounds of a time dimension come from its spacing (month starts: one month) and are
    added when a variable's ``cell_methods`` name it; those of :data:`TIME_PERIOD` from the
    span it records.
    """
    from pangeo_hpc.recipes.grid import horizontal_names

    ds = ds.copy()
    try:
        lat, lon = horizontal_names(ds)
    except Exception:  # no horizontal grid: nothing to describe
        lat = lon = None
    for name, sn, units, axis in (
        (lat, "latitude", "degrees_north", "Y"),
        (lon, "longitude", "degrees_east", "X"),
    ):
        if name is not None and name in ds.coords:
            var = ds.variables[name]
            var.attrs = {"units": units, **var.attrs, "standard_name": sn, "axis": axis}
    methods = " ".join(str(v.attrs.get("cell_methods", "")) for v in ds.data_vars.values())
    time_dims = [str(d) for d in ds.dims if d in ds.coords and _is_time(ds[d])]
    for t in time_dims:
        ds.variables[t].attrs.update(standard_name="time", axis="T")
        if ds.sizes[t] >= 1 and re.search(rf"(?<!\S){re.escape(t)}:", methods):
            values = pd.DatetimeIndex(np.asarray(ds[t].values, dtype="datetime64[ns]"))
            step = _step(values)
            if step != pd.Timedelta(0):
                bnds = np.stack([values.values, (values + step).values], axis=1)
                ds[f"{t}_{BOUNDS_DIM}"] = ((t, BOUNDS_DIM), bnds)
                ds.variables[t].attrs["bounds"] = f"{t}_{BOUNDS_DIM}"
    for name in [c for c in ds.coords if "period_start" in ds.variables[c].attrs]:
        attrs = ds.variables[name].attrs
        start, end = attrs.pop("period_start"), attrs.pop("period_end")
        ds[attrs["bounds"]] = ((BOUNDS_DIM,), np.array([start, end], dtype="datetime64[ns]"))
    # a scalar coordinate of one result only (its own period): on that variable alone
    owners = {str(c): ds.variables[c].attrs.pop(OWNER) for c in ds.coords if OWNER in ds[c].attrs}
    _encode(ds, time_dims, owners)
    ds.attrs = {"Conventions": CONVENTIONS, **ds.attrs, "history": history}
    if title:
        ds.attrs["title"] = title
    return ds


def _encode(ds: xr.Dataset, time_dims: list[str], owners: Mapping[str, str]) -> None:
    """No ``_FillValue`` on coordinates and bounds (CF 2.5.1); bounds in their coordinate's
    time units; each variable lists only the scalar coordinates that fit it: a scalar time
    coordinate not on a variable that has a time dimension."""
    bounds = {
        str(v.attrs["bounds"]): str(k) for k, v in ds.variables.items() if "bounds" in v.attrs
    }
    enc = {str(k): v.encoding for k, v in ds.variables.items()}
    for name in [*map(str, ds.coords), *bounds]:
        enc[name]["_FillValue"] = None
    for name, parent in bounds.items():
        if _is_time(ds[parent]):  # bounds in the units and calendar of their coordinate
            enc[parent].setdefault("units", "hours since 1970-01-01 00:00:00")
            enc[parent].setdefault("calendar", "proleptic_gregorian")
            enc[name].update(units=enc[parent]["units"], calendar=enc[parent]["calendar"])
            # float64, not xarray's int64: cfchecks 4.1 takes int64 bounds for "non-numeric"
            # (it knows the type codes i, f and d only); whole hours are exact in float64
            enc[parent]["dtype"] = enc[name]["dtype"] = "float64"
    scalars = [str(k) for k, v in ds.coords.items() if v.ndim == 0]
    for name, var in ds.data_vars.items():
        if name in bounds:  # bounds take their coordinate's coordinates (CF 7.1)
            enc[str(name)]["coordinates"] = None
            continue
        if not scalars:
            continue
        timed = any(d in time_dims for d in var.dims)
        keep = [
            c
            for c in scalars
            if not (timed and _is_time(ds[c])) and owners.get(c, str(name)) == str(name)
        ]
        enc[str(name)]["coordinates"] = " ".join(keep) if keep else None


def rate_attrs(da: xr.DataArray, per: str, long_name: str) -> dict[str, Any]:
    """Attributes of a rate of change of ``da`` per ``per``: its units per time, no standard
    name (a trend of sea surface temperature is not a sea surface temperature)."""
    return {"units": per_time_units(da.attrs.get("units"), per), "long_name": long_name}


def with_attrs(da: xr.DataArray, attrs: Mapping[str, Any]) -> xr.DataArray:
    """``da`` with exactly ``attrs`` (``assign_attrs`` would keep what the input carried:
    its ``cell_methods`` and ``standard_name`` are wrong for most results)."""
    out = da.copy(deep=False)
    out.attrs = dict(attrs)
    return out
