"""What a result looks like: its kind (scalar, series, map, ...) from its dimensions alone.

A recipe may end in anything: one number, a time series, a map, twelve monthly maps. The
figure (:mod:`pangeo_hpc.write.figures`) and the headline numbers
(:mod:`pangeo_hpc.batch.pipeline.headlines`) both start from :func:`result_shape`, so that they
always agree on what a variable is. The kind follows the dimensions left after dropping
those of size 1, found by what they hold, not by their names: latitude and longitude with
:func:`~pangeo_hpc.recipes.grid.horizontal_names` (any CF naming), time with
:func:`~pangeo_hpc.recipes.grid.time_name`, and besides those the dimensions ``month``,
``season`` (a position in the year) and ``year`` (integer years, as ``groupby("time.year")``
makes them).

=============  ===========================================================
kind           dimensions (after squeezing)
=============  ===========================================================
``scalar``     none
``series``     time (or year, month, season)
``map``        latitude and longitude
``hovmoeller`` time (or year, month, season) and latitude
``zonal``      latitude
``maps``       a dimension of at most :data:`MAX_PANELS` values, latitude, longitude
``other``      anything else, or values that are not numbers
=============  ===========================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.grid import horizontal_names, time_name
from pangeo_hpc.recipes.months import MONTH_NAMES
from pangeo_hpc.recipes.years import decimal_years

#: the kinds, in the order the table above lists them
KINDS = ("scalar", "series", "map", "hovmoeller", "zonal", "maps", "other")
#: at most this many small maps (a month of the year, a season, a few years)
MAX_PANELS = 12
#: dimensions that stand for a position in the year; no trend is fitted along them
CYCLIC = ("month", "season")
#: a stand-in longitude, so that horizontal_names finds the latitude of a zonal mean
_PROBE = "__pangeo_hpc_probe_longitude__"


@dataclass(frozen=True)
class Shape:
    """A result variable, squeezed, with its kind and the names that kind needs.

    ``lat`` and ``lon`` are coordinate names (their dimensions may be named otherwise);
    ``time`` and ``lead`` are dimension names.

    Attributes
    ----------
    kind : str
        ``scalar``, ``series``, ``map``, ``hovmoeller``, ``zonal``, ``maps`` or
        ``other``.
    data : xr.DataArray
        The variable, squeezed.
    time : str, optional
        The time dimension, or ``None``.
    lat : str, optional
        The latitude coordinate, or ``None``.
    lon : str, optional
        The longitude coordinate, or ``None``.
    lead : str, optional
        The other dimension of small multiples, or ``None``.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> da = xr.DataArray(np.zeros((2, 3)), dims=("lat", "lon"), name="tas")
    >>> Shape("map", da, lat="lat", lon="lon").kind
    'map'
    """

    kind: str
    data: xr.DataArray
    time: str | None = None
    lat: str | None = None
    lon: str | None = None
    lead: str | None = None

    @property
    def dims(self) -> dict[str, int]:
        """``{dimension: size}`` after squeezing."""
        return {str(d): int(n) for d, n in self.data.sizes.items()}


def _latitude_longitude(da: xr.DataArray) -> tuple[str | None, str | None]:
    """Names of the latitude and longitude coordinates that span dimensions of ``da``
    (a coordinate left scalar by squeezing does not count); ``None`` where there is none."""
    try:
        lat, lon = horizontal_names(da)
    except InputError:
        # horizontal_names wants both; a zonal mean has latitude alone: find it beside a
        # stand-in longitude (marked by standard name, so found whatever the real names)
        probe = xr.DataArray(0.0, attrs={"standard_name": "longitude"})
        try:
            lat, lon = horizontal_names(da.assign_coords({_PROBE: probe}))[0], None
        except InputError:
            return None, None

    def spans(name: str | None) -> str | None:
        return name if name is not None and name in da.coords and da[name].ndim else None

    return spans(lat), spans(lon)


def _time_axis(da: xr.DataArray) -> str | None:
    """The dimension along which values follow each other in time, or ``None``."""
    try:
        return time_name(da)
    except InputError:
        pass
    for name in (*CYCLIC, "year"):
        if name in da.dims:
            return name
    return None


def result_shape(da: xr.DataArray) -> Shape:
    """Classify ``da`` by its dimensions (see the module's table).

    Parameters
    ----------
    da : DataArray
        A result variable; dimensions of size 1 are dropped first (their coordinates stay
        as scalar coordinates).

    Returns
    -------
    Shape
        Never raises: what fits no kind is ``other``.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> da = xr.DataArray(np.zeros((1, 2, 3)), dims=("time", "lat", "lon"), name="tas",
    ...                   coords={"lat": [0.0, 10.0], "lon": [0.0, 10.0, 20.0]})
    >>> shape = result_shape(da)  # time of size 1 dropped: a map
    >>> shape.kind, shape.lat, shape.lon
    ('map', 'lat', 'lon')
    """
    sq = da.squeeze()
    if not (np.issubdtype(sq.dtype, np.number) and not np.issubdtype(sq.dtype, np.complexfloating)):
        return Shape("other", sq)
    dims = set(map(str, sq.dims))
    if not dims:
        return Shape("scalar", sq)
    lat, lon = _latitude_longitude(sq)
    t = _time_axis(sq)
    lat_dims = set(map(str, sq[lat].dims)) if lat else set()
    horizontal = lat_dims | set(map(str, sq[lon].dims)) if lat and lon else set()
    if dims == {t}:
        return Shape("series", sq, time=t)
    if lat and dims == lat_dims and len(dims) == 1:
        return Shape("zonal", sq, lat=lat)
    if len(horizontal) == 2 and dims == horizontal:
        return Shape("map", sq, lat=lat, lon=lon)
    if t and lat and len(lat_dims) == 1 and dims == lat_dims | {t} and t not in lat_dims:
        return Shape("hovmoeller", sq, time=t, lat=lat)
    rest = dims - horizontal
    if len(horizontal) == 2 and len(rest) == 1 and horizontal < dims:
        (lead,) = rest
        if sq.sizes[lead] <= MAX_PANELS:
            return Shape("maps", sq, lat=lat, lon=lon, lead=lead)
    return Shape("other", sq)


def years_along(da: xr.DataArray, dim: str) -> np.ndarray | None:
    """Decimal years of the coordinate ``dim`` (dates, or integer years), for a trend; ``None``
    for a position in the year (month, season) or a dimension without such a coordinate.

    Parameters
    ----------
    da : xr.DataArray
        A variable.
    dim : str
        Its dimension.

    Returns
    -------
    ndarray or None
        The years, or ``None``.

    Examples
    --------
    >>> import pandas as pd
    >>> import xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=3, freq="YS")
    >>> years_along(xr.DataArray([1.0, 2.0, 3.0], dims="time", coords={"time": time}), "time")
    array([0.        , 1.00207396, 2.00141002])
    """
    if dim in CYCLIC or dim not in da.coords:
        return None
    values = da[dim]
    try:
        if dim == time_name(da):
            return decimal_years(values)
    except InputError:
        pass
    if np.issubdtype(values.dtype, np.integer):  # ``year`` as groupby("time.year") makes it
        return np.asarray(values.values, dtype="f8")
    return None


def trend_per_decade(da: xr.DataArray, dim: str) -> float | None:
    """Least-squares slope of the 1-D ``da`` along ``dim``, per decade (years of
    :data:`~pangeo_hpc.recipes.years.DAYS_PER_YEAR` days), over its finite values; ``None``
    without a time axis or with fewer than three finite values.

    Parameters
    ----------
    da : xr.DataArray
        A 1-D variable.
    dim : str
        Its dimension.

    Returns
    -------
    float or None
        The slope per decade, or ``None``.

    Examples
    --------
    >>> import pandas as pd
    >>> import xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=4, freq="YS")
    >>> da = xr.DataArray([1.0, 2.0, 3.0, 4.0], dims="time", coords={"time": time})
    >>> round(trend_per_decade(da, "time"), 2)  # 1 a year
    10.0
    """
    years = years_along(da, dim)
    if years is None:
        return None
    values = np.asarray(da.values, dtype="f8")
    ok = np.isfinite(values)
    if ok.sum() < 3:
        return None
    return float(np.polyfit(years[ok], values[ok], 1)[0] * 10)


def per_decade(units: str | None) -> str:
    """How a trend of data in ``units`` is written for people: ``"mm/day per decade"``
    (``"per decade"`` for data without units).

    Parameters
    ----------
    units : str or None
        The data's units, or ``None``.

    Returns
    -------
    str
        The trend's units.

    Examples
    --------
    >>> per_decade("mm/day"), per_decade(None)
    ('mm/day per decade', 'per decade')
    """
    u = (units or "").strip()
    return f"{u} per decade" if u else "per decade"


def labels(da: xr.DataArray, dim: str) -> list[str]:
    """One short label per value of ``dim``: month names for months 1-12, dates as
    ``YYYY-MM-DD``, else the values as text (positions when there is no coordinate).

    Parameters
    ----------
    da : xr.DataArray
        A variable.
    dim : str
        Its dimension.

    Returns
    -------
    list[str]
        The labels.

    Examples
    --------
    >>> import xarray as xr
    >>> da = xr.DataArray([1.0, 2.0, 3.0], dims="month", coords={"month": [1, 2, 3]})
    >>> labels(da, "month")
    ['Jan', 'Feb', 'Mar']
    """
    if dim not in da.coords:
        return [str(i) for i in range(da.sizes[dim])]
    values = np.asarray(da[dim].values)
    if (
        dim == "month"
        and np.issubdtype(values.dtype, np.integer)
        and set(values) <= set(range(1, 13))
    ):
        return [MONTH_NAMES[int(v) - 1] for v in values]
    if np.issubdtype(values.dtype, np.datetime64):
        return [str(v)[:10] for v in values.astype("datetime64[D]")]
    return [str(v)[:10] if hasattr(v, "calendar") else str(v) for v in values]


__all__ = [
    "KINDS",
    "MAX_PANELS",
    "Shape",
    "labels",
    "per_decade",
    "result_shape",
    "trend_per_decade",
    "years_along",
]
