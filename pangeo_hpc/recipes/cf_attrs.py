"""CF metadata that follows the data: units of rates, cell methods, time periods, bounds.

The recipes call the attribute helpers (pure: they read coordinate values, which are in
memory, never the data); :func:`prepare_for_file` makes the file-level parts (coordinate
attributes, bounds variables, encodings, ``Conventions``) just before a write. Checked with
``cfchecks`` (CF-1.8, the newest the CF checker knows) and ``compliance-checker``:
tests/recipes/test_cf_outputs.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from pangeo_hpc.recipes import time_bounds

#: the version written to ``Conventions`` (cfchecker 4.1 checks up to CF-1.8)
CONVENTIONS = "CF-1.8"
#: name of the scalar time coordinate of values that stand for a whole period (a time
#: mean, a trend); not the input's time dimension, which a dataset may also hold
TIME_PERIOD = "time_period"
#: attribute (not written) of a scalar coordinate that belongs to one result of several
OWNER = "_result"
#: name of the bounds dimension
BOUNDS_DIM = "bnds"
#: attribute (not written) that :func:`~pangeo_hpc.recipes.select_region` sets on land or
#: ocean cells (``land``, ``sea``: CF area types), for the ``where`` of an area mean after
AREA_TYPE = "_area_type"

#: ``per`` -> a UDUNITS spelling. UDUNITS has no "decade"; ``K/(10 year)`` parses and
#: converts to 0.1 K/year (cfunits, cf_units). Its ``year`` is 365.242198781 days, ours
#: (years.py, Gregorian data) 365.2425: 9e-7 apart; a model calendar's year is its own,
#: which the trend's ``long_name`` states. Never ``a``: to UDUNITS that is the are (100 m2).
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
    form UDUNITS parses: ``per_time_units("K", "decade") == "K/(10 year)"``.

    Parameters
    ----------
    units : str | None
        The quantity's units (``None``: dimensionless).
    per : str
        ``year``, ``decade`` or ``century``.

    Returns
    -------
    str
        UDUNITS text.

    Examples
    --------
    >>> per_time_units("K", "decade"), per_time_units("m s-1", "year")
    ('K/(10 year)', '(m s-1)/year')
    >>> per_time_units(None, "century")  # dimensionless
    '1/(100 year)'
    """
    u = (units or "").strip() or "1"
    if not _SIMPLE_UNIT.match(u):
        u = f"({u})"
    return f"{u}/{PER_TIME[per]}"


def area_where(da: xr.DataArray) -> str:
    """`` where sea`` (or ``land``) when a land or ocean mask selected the cells
    (:data:`AREA_TYPE`) or the standard name says where the values live; a mean that skips
    NaN averages over those cells only. Else ``""``.

    Parameters
    ----------
    da : xr.DataArray
        The data.

    Returns
    -------
    str
        `` where sea``, `` where land`` or ``""``.

    Examples
    --------
    >>> import xarray as xr
    >>> area_where(xr.DataArray([1.0], attrs={"standard_name": "sea_surface_temperature"}))
    ' where sea'
    >>> area_where(xr.DataArray([1.0], attrs={"standard_name": "air_temperature"}))
    ''
    """
    inherited = re.search(r"area:[^:]*\bwhere\s+(\S+)", str(da.attrs.get("cell_methods", "")))
    if inherited:
        return f" where {inherited.group(1)}"
    if da.attrs.get(AREA_TYPE):
        return f" where {da.attrs[AREA_TYPE]}"
    name = str(da.attrs.get("standard_name", ""))
    for prefixes, area_type in _AREA_TYPES:
        if name.startswith(prefixes):
            return f" where {area_type}"
    return ""


def cell_methods(da: xr.DataArray, method: str, *, gone: Mapping[str, str] | None = None) -> str:
    """The input's ``cell_methods`` followed by ``method`` (CF 7.3: in the order applied).

    ``gone`` renames dimensions the result no longer has in the inherited entries (the
    time dimension becomes CF's ``time``), so every name still refers to something real.

    Parameters
    ----------
    da : xr.DataArray
        The input.
    method : str
        The entry this step adds (``time: mean``).
    gone : Mapping[str, str] | None, optional
        Old dimension name -> its new name, for the inherited entries.

    Returns
    -------
    str
        The new ``cell_methods``.

    Examples
    --------
    >>> import xarray as xr
    >>> da = xr.DataArray([1.0], attrs={"cell_methods": "time0: mean"})
    >>> cell_methods(da, "area: mean", gone={"time0": "time"})
    'time: mean area: mean'
    """
    before = renamed_in_cell_methods(str(da.attrs.get("cell_methods", "")).strip(), gone or {})
    # the mean of monthly means over the same months is still that: no second entry
    # (cfchecks rejects a dimension named twice)
    done = {e.strip() for e in _ENTRY.findall(before)}
    parts = [e.strip() for e in _ENTRY.findall(method) if e.strip() not in done]
    return " ".join([before, *parts]).strip()


def renamed_in_cell_methods(methods: str, names: Mapping[str, str]) -> str:
    """``methods`` (a ``cell_methods`` string) with the dimension names ``names`` renamed
    (``{"time0": "time"}``: ``time0: mean`` becomes ``time: mean``).

    Parameters
    ----------
    methods : str
        A ``cell_methods`` string.
    names : Mapping[str, str]
        Old name -> new name.

    Returns
    -------
    str
        The renamed ``cell_methods``.

    Examples
    --------
    >>> renamed_in_cell_methods("time0: mean area: mean", {"time0": "time"})
    'time: mean area: mean'
    """
    for old, new in names.items():
        methods = re.sub(rf"(?<!\S){re.escape(old)}:", f"{new}:", methods)
    return methods


def time_span(time: xr.DataArray) -> tuple[Any, Any]:
    """Start and end of the period the values of ``time`` cover: from the first step's
    lower bound to the last step's upper bound (:func:`~pangeo_hpc.recipes.time_bounds.span`:
    the intervals a reduction carries, else each label to the next step, a month for month
    starts, a day for days), as datetime64 or cftime dates in the data's calendar.

    Parameters
    ----------
    time : xr.DataArray
        A time coordinate.

    Returns
    -------
    tuple[Any, Any]
        ``(start, end)``.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> time = xr.DataArray(pd.date_range("2000-01-01", periods=3, freq="MS"), dims="time")
    >>> start, end = time_span(time)
    >>> str(start)[:10], str(end)[:10]  # the last month runs to April 1st
    ('2000-01-01', '2000-04-01')
    """
    return time_bounds.span(time)


def _step(values: pd.DatetimeIndex) -> pd.DateOffset | pd.Timedelta:
    """The length of one step of ``values``
    (:func:`~pangeo_hpc.recipes.time_bounds.step_of`), as pandas adds it to dates."""
    kind, n = time_bounds.step_of(np.asarray(values.values))
    return pd.DateOffset(months=int(n)) if kind == "months" else pd.Timedelta(float(n), "s")


def period_coord(time: xr.DataArray, what: str) -> xr.DataArray:
    """A scalar time coordinate for a value that stands for the whole period of ``time``:
    its middle, with bounds (made by :func:`prepare_for_file`) from :func:`time_span`, in
    the units and calendar of ``time``.

    Parameters
    ----------
    time : xr.DataArray
        A time coordinate.
    what : str
        What the value is, for the coordinate's ``long_name``.

    Returns
    -------
    xr.DataArray
        A scalar time coordinate.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> time = xr.DataArray(pd.date_range("2000-01-01", periods=24, freq="MS"), dims="time")
    >>> mid = period_coord(time, "mean")
    >>> str(mid.values), mid.attrs["period_start"], mid.attrs["period_end"]
    ('2000-12-31T12:00:00.000000000', '2000-01-01T00:00:00', '2002-01-01T00:00:00')
    """
    start, end = time_span(time)
    out = xr.DataArray(
        time_bounds.middle(start, end),
        attrs={
            "standard_name": "time",
            "long_name": f"period of the {what}",
            "bounds": f"{TIME_PERIOD}_{BOUNDS_DIM}",
            "period_start": _iso(start),
            "period_end": _iso(end),
        },
    )
    out.encoding.update(time_bounds.calendar_encoding(time))
    return out


def period_words(time: xr.DataArray) -> str:
    """The years (``2000-2019``, ``2000``) or months (``2000-12 to 2001-02``) of the time
    labels ``time``: years when they run from the first to the last of their months in
    the year (January to December; June to August for JJA data; January to December
    for DJF data of whole years), else months.

    Parameters
    ----------
    time : xr.DataArray
        A time coordinate.

    Returns
    -------
    str
        The period in words.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> period_words(xr.DataArray(pd.date_range("2000-01-01", periods=24, freq="MS"), dims="time"))
    '2000-2001'
    >>> period_words(xr.DataArray(pd.date_range("2000-12-01", periods=3, freq="MS"), dims="time"))
    '2000-12 to 2001-02'
    """
    values = np.asarray(time.values)
    if values.size == 0:
        return "no time steps"
    years = np.asarray(time.dt.year.values, dtype=int)
    months = np.asarray(time.dt.month.values, dtype=int)
    if months[0] == months.min() and months[-1] == months.max():
        first, last = int(years[0]), int(years[-1])
        return f"{first}" if first == last else f"{first}-{last}"
    return f"{years[0]:04d}-{months[0]:02d} to {years[-1]:04d}-{months[-1]:02d}"


def _iso(date: Any) -> str:
    """``2000-01-01T00:00:00`` of a datetime64 or cftime date."""
    if isinstance(date, np.datetime64):
        return str(np.datetime64(date, "s"))
    return str(date.isoformat())[:19]


def _dates(texts: list[str], like: Any) -> np.ndarray:
    """ISO dates ``texts`` as dates of the kind and calendar of ``like``."""
    if isinstance(like, np.datetime64):
        return np.array(texts, dtype="datetime64[ns]")
    calendar = like.calendar
    return np.array(
        [xr.date_range(d, periods=1, calendar=calendar, use_cftime=True)[0] for d in texts]
    )


def _is_time(coord: xr.DataArray) -> bool:
    """Dates (datetime64 or cftime, any calendar), or CF's ``standard_name: time``."""
    if np.issubdtype(coord.dtype, np.datetime64) or coord.attrs.get("standard_name") == "time":
        return True
    return coord.dtype == object and coord.size > 0 and hasattr(coord.values.flat[0], "calendar")


def prepare_for_file(ds: xr.Dataset, *, history: str, title: str | None = None) -> xr.Dataset:
    """A copy of ``ds`` ready to be written as CF: attributes of latitude, longitude and
    time (``standard_name``, ``axis``), time bounds where a value stands for a period, no
    ``_FillValue`` on coordinates and bounds, text as character arrays, ``Conventions``,
    ``history`` and ``title``.

    Bounds of a time dimension are the intervals its values carry (a reduction's,
    :mod:`pangeo_hpc.recipes.time_bounds`), else, when a variable's ``cell_methods`` name
    it, each label to the next step (month starts: one month); those of
    :data:`TIME_PERIOD` come from the span it records. Every time is written in the units
    and calendar of the data it was made from.

    Text (the ``season`` labels of a seasonal climatology, any string coordinate) is
    written as a fixed-length character array with a string-length dimension (CF 2.2),
    never as netCDF-4 variable-length strings, which CDO ("NetCDF: Not a valid data type")
    and cfchecks cannot read; xarray reads it back as the same strings.

    Parameters
    ----------
    ds : xr.Dataset
        A result.
    history : str
        The global ``history`` attribute.
    title : str | None, optional
        The global ``title`` attribute (``None``: none).

    Returns
    -------
    xr.Dataset
        A copy ready to write.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=3, freq="D")
    >>> ds = xr.Dataset({"tas": ("time", [1.0, 2.0, 3.0], {"units": "K"})}, coords={"time": time})
    >>> out = prepare_for_file(ds, history="fldmean", title="Daily mean")
    >>> out.attrs
    {'Conventions': 'CF-1.8', 'history': 'fldmean', 'title': 'Daily mean'}
    >>> out.time.attrs
    {'standard_name': 'time', 'axis': 'T'}
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
        carried = all(n in ds.coords for n in time_bounds.bounds_names(t))
        named = re.search(rf"(?<!\S){re.escape(t)}:", methods) is not None
        if ds.sizes[t] >= 1 and (carried or named):
            lower, upper = time_bounds.intervals(ds[t])
            if not (lower == upper).all():
                ds[f"{t}_{BOUNDS_DIM}"] = ((t, BOUNDS_DIM), np.stack([lower, upper], axis=1))
                ds.variables[t].attrs["bounds"] = f"{t}_{BOUNDS_DIM}"
    # cell edges the files gave or a regrid made (two 1-D coordinates), on every other
    # axis that carries them: lat, lon, and a result's own grid beside another's (lat_box)
    for d in [str(d) for d in ds.dims if d in ds.coords and d not in time_dims]:
        lower, upper = time_bounds.bounds_names(d)
        if lower in ds.coords and upper in ds.coords:
            pair = np.stack([ds[lower].values, ds[upper].values], axis=1)
            ds[f"{d}_{BOUNDS_DIM}"] = ((d, BOUNDS_DIM), pair)
            ds.variables[d].attrs["bounds"] = f"{d}_{BOUNDS_DIM}"
    carriers = [str(c) for c in ds.coords if time_bounds.is_bounds_coord(str(c))]
    ds = ds.drop_vars(carriers)
    for name in [c for c in ds.coords if "period_start" in ds.variables[c].attrs]:
        attrs = ds.variables[name].attrs
        start, end = attrs.pop("period_start"), attrs.pop("period_end")
        ds[attrs["bounds"]] = ((BOUNDS_DIM,), _dates([start, end], ds[name].values[()]))
    for var in ds.variables.values():  # a pointer to bounds not carried along: dropped
        if "bounds" in var.attrs and var.attrs["bounds"] not in ds.variables:
            del var.attrs["bounds"]
    # a scalar coordinate of one result only (its own period): on that variable alone
    owners = {str(c): ds.variables[c].attrs.pop(OWNER) for c in ds.coords if OWNER in ds[c].attrs}
    for var in ds.variables.values():
        var.attrs.pop(AREA_TYPE, None)
    _encode(ds, time_dims, owners)
    ds.attrs = {"Conventions": CONVENTIONS, **ds.attrs, "history": history}
    if title:
        ds.attrs["title"] = title
    return ds


def _is_text(var: xr.Variable) -> bool:
    if var.dtype.kind in "US":
        return True
    return var.dtype.kind == "O" and var.size > 0 and isinstance(var.values.flat[0], str)


def _calendar(ds: xr.Dataset) -> dict[str, str]:
    """The units and calendar of the data's times: those a time variable of ``ds`` was read
    or made with (:func:`~pangeo_hpc.recipes.time_bounds.calendar_encoding`), else hours
    since 1970 in the proleptic Gregorian calendar (datetime64's)."""
    found: dict[str, str] = {}
    for var in ds.variables.values():
        if _is_time(xr.DataArray(var)):
            enc = time_bounds.calendar_encoding(xr.DataArray(var))
            if "calendar" in enc:
                found = {**enc, **found}
    return {"units": "hours since 1970-01-01 00:00:00", "calendar": "proleptic_gregorian"} | found


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
    for name, var in ds.variables.items():
        if _is_text(var):  # a char array with a string-length dimension, not vlen strings
            enc[str(name)]["dtype"] = "S1"
    for name, var in ds.coords.items():  # CF 1.8 (2.2) has no 64-bit integers: the month
        values = var.values if var.dtype == np.int64 and "dtype" not in enc[str(name)] else None
        if values is not None and np.abs(values).max(initial=0) < 2**31:
            enc[str(name)]["dtype"] = "int32"
    calendar = _calendar(ds)
    for name in time_dims:  # a time dimension without bounds: in the data's calendar too
        if not np.issubdtype(ds[name].dtype, np.datetime64) or "calendar" in enc[name]:
            continue
        enc[name].update({k: v for k, v in calendar.items() if k not in enc[name]})
    for name, parent in bounds.items():
        if _is_time(ds[parent]):  # bounds in the units and calendar of their coordinate
            for key, value in calendar.items():
                enc[parent].setdefault(key, value)
            enc[name].update(units=enc[parent]["units"], calendar=enc[parent]["calendar"])
            # float64, not xarray's int64: cfchecks 4.1 takes int64 bounds for "non-numeric"
            # (it knows the type codes i, f and d only); whole hours are exact in float64
            enc[parent]["dtype"] = enc[name]["dtype"] = "float64"
    scalars = [str(k) for k, v in ds.coords.items() if v.ndim == 0]
    # a text dimension coordinate, a char array of two dimensions, is named as a coordinate
    # of each variable along it: else cfchecks warns "Possible incorrect declaration of a
    # coordinate variable" (CF 6.1 labels are auxiliary coordinates)
    labels = [str(d) for d in ds.dims if d in ds.coords and _is_text(ds.variables[d])]
    for name, var in ds.data_vars.items():
        if name in bounds:  # bounds take their coordinate's coordinates (CF 7.1)
            enc[str(name)]["coordinates"] = None
            continue
        if not scalars and not labels:
            continue
        timed = any(d in time_dims for d in var.dims)
        keep = [d for d in labels if d in var.dims] + [
            c
            for c in scalars
            if not (timed and _is_time(ds[c])) and owners.get(c, str(name)) == str(name)
        ]
        enc[str(name)]["coordinates"] = " ".join(keep) if keep else None


def rate_attrs(da: xr.DataArray, per: str, long_name: str) -> dict[str, Any]:
    """Attributes of a rate of change of ``da`` per ``per``: its units per time, no standard
    name (a trend of sea surface temperature is not a sea surface temperature).

    Parameters
    ----------
    da : xr.DataArray
        The quantity.
    per : str
        ``year``, ``decade`` or ``century``.
    long_name : str
        The result's ``long_name``.

    Returns
    -------
    dict[str, Any]
        The attributes.

    Examples
    --------
    >>> import xarray as xr
    >>> da = xr.DataArray([1.0], attrs={"units": "K", "standard_name": "sea_surface_temperature"})
    >>> rate_attrs(da, "decade", "trend of sea surface temperature")
    {'units': 'K/(10 year)', 'long_name': 'trend of sea surface temperature'}
    """
    return {"units": per_time_units(da.attrs.get("units"), per), "long_name": long_name}


def with_attrs(da: xr.DataArray, attrs: Mapping[str, Any]) -> xr.DataArray:
    """``da`` with exactly ``attrs`` (``assign_attrs`` would keep what the input carried:
    its ``cell_methods`` and ``standard_name`` are wrong for most results).

    Parameters
    ----------
    da : xr.DataArray
        The data.
    attrs : Mapping[str, Any]
        The attributes it gets.

    Returns
    -------
    xr.DataArray
        A copy of ``da``.

    Examples
    --------
    >>> import xarray as xr
    >>> da = xr.DataArray([1.0], attrs={"units": "K", "cell_methods": "time: mean"})
    >>> with_attrs(da, {"units": "K", "long_name": "bias"}).attrs
    {'units': 'K', 'long_name': 'bias'}
    """
    out = da.copy(deep=False)
    out.attrs = dict(attrs)
    return out
