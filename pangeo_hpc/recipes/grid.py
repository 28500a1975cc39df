"""Find the horizontal and time coordinates of any CF dataset and compute true cell areas.

Coordinates are found with cf-xarray's criteria (https://cf-xarray.readthedocs.io), in
this order:

1. CF attributes: ``standard_name``, ``units`` (``degrees_north``, ``degrees_east`` and
   the other spellings CF lists, in any case), ``axis`` and the others cf-xarray knows;
2. for files without them, the names models use (``lat``, ``latitude``, ``nav_lat``, ...,
   in any case) or an ``axis`` attribute of ``Y``/``X``;
3. time only: a dimension whose coordinate holds dates (``datetime64`` or cftime dates).

Steps 1 and 2 add *custom criteria* to cf-xarray's own. cf-xarray reads those from a
process-wide option: they are set for one lookup at a time, under a lock, and restored
after it, so that neither other threads nor the user's own cf-xarray settings see them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

import cf_xarray
import numpy as np
import xarray as xr
from cf_xarray.criteria import coordinate_criteria

from pangeo_hpc.errors import InputError

EARTH_RADIUS = 6_371_000.0  # m, the sphere CDO uses for cell areas

_NAMES = {
    "latitude": ("lat", "latitude", "nav_lat", "lats", "rlat", "y_lat"),
    "longitude": ("lon", "longitude", "nav_lon", "lons", "rlon", "x_lon"),
}
#: step 1, beyond cf-xarray's own criteria: the units in any case (cf-xarray's list is
#: case-sensitive), e.g. ``degrees_North``, ``degreeN``, ``degree_n``
_BY_ATTRIBUTES: Mapping[str, Mapping[str, str]] = {
    "latitude": {"units": r"(?i)^degrees?_?n(orth)?$"},
    "longitude": {"units": r"(?i)^degrees?_?e(ast)?$"},
}
#: step 2: the usual names, or the axis attribute alone
_BY_NAME: Mapping[str, Mapping[str, str]] = {
    what: {"name": "(?i)^(" + "|".join(names) + ")$", "axis": f"^{axis}$"}
    for (what, names), axis in zip(_NAMES.items(), ("Y", "X"), strict=True)
}
#: the attributes the criteria read (standard_name, units, axis, _CoordinateAxisType, ...)
_CRITERIA_ATTRS = frozenset(a for c in coordinate_criteria.values() for a in c)
_LOCK = threading.Lock()
#: names found, by what the lookup read (:func:`_described`): a recipe's steps look up the
#: same coordinates many times, and cf-xarray's lookup takes milliseconds each time
_FOUND: dict[tuple[Any, ...], str] = {}
_FOUND_SIZE = 256
#: the dimensions cf-xarray marks as time, by what its lookup read
_MARKED_TIME: dict[tuple[Any, ...], frozenset[str]] = {}


def _described(obj: xr.DataArray | xr.Dataset, names: Iterable[str]) -> tuple[Any, ...]:
    """What a lookup reads of the variables ``names`` of ``obj``: each one's name,
    dimensions, shape and the text attributes the criteria use (never a value)."""
    described = []
    for name in names:
        var = obj[name].variable
        attrs = {k: v for k, v in var.attrs.items() if k in _CRITERIA_ATTRS and isinstance(v, str)}
        described.append((name, var.dims, var.shape, tuple(sorted(attrs.items()))))
    return tuple(described)


def _probe(described: tuple[Any, ...]) -> xr.Dataset:
    """The variables of ``described`` (:func:`_described`) as coordinates of a Dataset
    without data.

    cf-xarray then reads only their names and the text attributes its criteria use: no
    value is loaded (lazy coordinates stay lazy), a ``coordinates`` attribute of ``obj``
    does not narrow the search, and an attribute that is not text (``units=1``) or points
    elsewhere (``grid_mapping``, ``cell_measures``) cannot break the matching.
    """
    coords = {
        name: xr.Variable(dims, np.broadcast_to(np.int8(0), shape), dict(attrs))
        for name, dims, shape, attrs in described
    }
    return xr.Dataset(coords=coords)


def _matching(probe: xr.Dataset, key: str, criteria: Mapping[str, Mapping[str, str]]) -> set:
    """Names cf-xarray gives for ``key`` with ``criteria`` added to its own."""
    with _LOCK, cf_xarray.set_options(custom_criteria=dict(criteria)):
        return set(probe.cf.coordinates.get(key, []))


def _find(obj: xr.DataArray | xr.Dataset, what: str) -> str:
    names = [*map(str, obj.coords)]
    if isinstance(obj, xr.Dataset):
        names += [*map(str, obj.data_vars)]
    described = _described(obj, names)
    key = (what, described)
    with _LOCK:
        found_before = _FOUND.get(key)
    if found_before is not None:
        return found_before
    probe = _probe(described)
    for criteria in (_BY_ATTRIBUTES, _BY_NAME):
        found = _matching(probe, what, criteria)
        if found:  # the first in the object's order, coordinates before data variables
            name = next(name for name in names if name in found)
            with _LOCK:
                if len(_FOUND) >= _FOUND_SIZE:
                    _FOUND.clear()
                _FOUND[key] = name
            return name
    raise InputError(
        f"no {what} coordinate among {sorted(names)}: name it "
        f"{_NAMES[what][0]!r} or give it the attribute standard_name={what!r}"
    )


def horizontal_names(obj: xr.DataArray | xr.Dataset) -> tuple[str, str]:
    """Return the names of the latitude and longitude coordinates.

    Parameters
    ----------
    obj : DataArray or Dataset
        Data on a latitude/longitude grid (regular or curvilinear); a Dataset's data
        variables count too.

    Returns
    -------
    tuple of str
        ``(latitude, longitude)``: by CF attributes (``standard_name``, ``units``) first,
        else by the usual names (``lat``, ``latitude``, ``nav_lat``, ...) or ``axis``.

    Raises
    ------
    InputError
        When one of them is not found; the message lists the names there are.

    Examples
    --------
    >>> import xarray as xr
    >>> dims = ("latitude", "longitude")
    >>> da = xr.DataArray([[0.0]], coords={"latitude": [0.0], "longitude": [0.0]}, dims=dims)
    >>> horizontal_names(da)
    ('latitude', 'longitude')
    """
    return _find(obj, "latitude"), _find(obj, "longitude")


def rectilinear_names(
    obj: xr.DataArray | xr.Dataset, recipe: str, *, also: str = ""
) -> tuple[str, str]:
    """:func:`horizontal_names`, for a step that needs a rectilinear grid (1-D latitude
    and longitude): on a curvilinear one (2-D ``lat(y, x)``, ``lon(y, x)``) an InputError
    in one line naming ``recipe`` and the fix, a ``regrid`` step first (and ``also``, a
    fix of the Python API such as ``weights=``).

    Parameters
    ----------
    obj : xr.DataArray | xr.Dataset
        The data.
    recipe : str
        The step's name.
    also : str, optional
        A further fix to name (Python API).

    Returns
    -------
    tuple[str, str]
        The latitude and longitude names.

    Raises
    ------
    InputError
        On a curvilinear grid, or when there is no latitude or longitude.

    Examples
    --------
    >>> import xarray as xr
    >>> da = xr.DataArray([[0.0]], coords={"lat": [0.0], "lon": [0.0]}, dims=("lat", "lon"))
    >>> rectilinear_names(da, "fldmean")
    ('lat', 'lon')
    """
    lat, lon = horizontal_names(obj)
    if obj[lat].ndim != 1 or obj[lon].ndim != 1:
        raise InputError(
            f"{recipe} needs a rectilinear latitude/longitude grid, but {lat!r} "
            f"{tuple(map(str, obj[lat].dims))} and {lon!r} {tuple(map(str, obj[lon].dims))} "
            "are 2-D (a curvilinear grid): put the step regrid: {grid: r144x72, method: "
            f"bilinear}} (or another grid) before it{also}"
        )
    return lat, lon


def _holds_dates(obj: xr.DataArray | xr.Dataset, name: str) -> bool:
    """``datetime64`` values, or cftime dates (xarray indexes those with a CFTimeIndex)."""
    return np.issubdtype(obj[name].dtype, np.datetime64) or isinstance(
        obj.indexes.get(name), xr.CFTimeIndex
    )


def time_name(obj: xr.DataArray | xr.Dataset) -> str:
    """Return the name of the time dimension (ERA5 calls it ``time0``).

    Parameters
    ----------
    obj : DataArray or Dataset
        Data with a time dimension that has a coordinate.

    Returns
    -------
    str
        The first dimension whose coordinate CF marks as time (``standard_name``, ``axis``
        and the other attributes cf-xarray knows), else the first whose coordinate holds
        dates (``datetime64`` or cftime). Other dimensions, such as ensemble members
        labelled with strings, never count.

    Raises
    ------
    InputError
        When there is no such dimension.

    Examples
    --------
    >>> import pandas as pd, xarray as xr
    >>> da = xr.DataArray([0.0, 1.0], coords={"time0": pd.date_range("2000-01-01", periods=2)})
    >>> time_name(da)
    'time0'
    """
    dims = [str(d) for d in obj.dims if d in obj.coords]
    described = _described(obj, dims)
    with _LOCK:
        marked = _MARKED_TIME.get(described)
    if marked is None:
        marked = frozenset(_probe(described).cf.axes.get("T", []))
        with _LOCK:
            if len(_MARKED_TIME) >= _FOUND_SIZE:
                _MARKED_TIME.clear()
            _MARKED_TIME[described] = marked
    found = [d for d in dims if d in marked] or [d for d in dims if _holds_dates(obj, d)]
    if found:
        return found[0]
    raise InputError(
        f"no time dimension among {list(map(str, obj.dims))}: this recipe needs one with "
        "datetime values (name it 'time' or give it standard_name='time')"
    )


#: attribute of a coordinate cut down to one point (select_region): its grid's spacing,
#: from which the one cell's edges follow
SPACING = "grid_spacing"


def cell_edges(
    centers: np.ndarray,
    *,
    clip: tuple[float, float] | None,
    period: float | None,
    spacing: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Cell edges halfway between sorted centres, extended by half a cell at each end
    (one centre: half of ``spacing`` on each side).

    Parameters
    ----------
    centers : np.ndarray
        Sorted cell centres.
    clip : tuple[float, float] | None
        Lowest and highest edge allowed (latitude: -90, 90), or ``None``.
    period : float | None
        The axis' period (longitude: 360), or ``None``.
    spacing : float | None, optional
        The cell width, for a single centre.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        Lower and upper edge of each cell.

    Raises
    ------
    InputError
        For a single centre without ``spacing``.

    Examples
    --------
    >>> cell_edges(np.array([-45.0, 45.0]), clip=(-90, 90), period=None)
    (array([-90.,   0.]), array([ 0., 90.]))
    >>> cell_edges(np.array([0.0, 90.0, 180.0, 270.0]), clip=None, period=360.0)
    (array([-45.,  45., 135., 225.]), array([ 45., 135., 225., 315.]))
    """
    order = np.argsort(centers)
    c = centers[order].astype("f8")
    if c.size == 1:
        if spacing is None:
            raise InputError("a grid needs at least two points along latitude and longitude")
        edges = np.array([c[0] - spacing / 2, c[0] + spacing / 2])
        if clip is not None:
            edges = np.clip(edges, *clip)
        return edges[:1], edges[1:]
    mid = (c[1:] + c[:-1]) / 2
    lo = c[0] - (mid[0] - c[0])
    hi = c[-1] + (c[-1] - mid[-1])
    if period is not None and (hi - lo) > period - 1e-6 * period:
        # a global, periodic axis: the first and last cells meet halfway across the seam
        seam = (c[0] + period + c[-1]) / 2
        lo, hi = seam - period, seam
    edges = np.concatenate([[lo], mid, [hi]])
    if clip is not None:
        edges = np.clip(edges, *clip)
    lower = np.empty_like(c)
    upper = np.empty_like(c)
    lower[order] = edges[:-1]
    upper[order] = edges[1:]
    return lower, upper


def longitude_edges(lon: np.ndarray, spacing: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """West and east edges of the cells centred on ``lon`` (degrees east, any order or
    convention). A region across the seam of its convention (170..180, -180..-170) is
    first made contiguous (170..190): its cells are as wide as anywhere else, not as wide
    as the gap on the far side of the globe.

    Parameters
    ----------
    lon : np.ndarray
        Longitudes in degrees east.
    spacing : float | None, optional
        The cell width, for a single longitude.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        West and east edges, in ``lon``'s order.

    Examples
    --------
    >>> longitude_edges(np.array([170.0, 180.0, -170.0]))  # across the seam: made contiguous
    (array([165., 175., 185.]), array([175., 185., 195.]))
    """
    u = np.mod(np.asarray(lon, dtype="f8"), 360.0)
    s = np.sort(u)
    gaps = np.diff(np.concatenate([s, s[:1] + 360.0]))
    start = s[(int(np.argmax(gaps)) + 1) % s.size]  # the region begins after its widest gap
    return cell_edges(np.where(u < start, u + 360.0, u), clip=None, period=360.0, spacing=spacing)


def cell_area(lat: xr.DataArray, lon: xr.DataArray) -> xr.DataArray:
    """Area in m² of each cell of a regular (1-D) lat/lon grid.

    Cell edges lie halfway between centres; the outermost latitude cells end at the pole
    when the grid reaches it (so cells centred on ±90° are half cells), as in CDO's
    ``gridarea`` and ``fldmean``.

    Parameters
    ----------
    lat : xr.DataArray
        1-D latitude.
    lon : xr.DataArray
        1-D longitude.

    Returns
    -------
    xr.DataArray
        Areas (lat, lon), m².

    Raises
    ------
    InputError
        For 2-D (curvilinear) coordinates.

    Examples
    --------
    >>> import xarray as xr
    >>> lat, lon = xr.DataArray([-45.0, 45.0], dims="lat"), xr.DataArray([0.0, 180.0], dims="lon")
    >>> area = cell_area(lat, lon)
    >>> round(float(area.sum() / (4 * np.pi * 6371e3**2)), 12)  # the whole sphere, R = 6371 km
    1.0
    """
    if lat.ndim != 1 or lon.ndim != 1:
        raise InputError(
            f"coordinates {lat.name!r} and {lon.name!r} are 2-D (a curvilinear grid): "
            "pass the cell areas yourself with weights=<DataArray of areas>"
        )
    south, north = cell_edges(
        np.asarray(lat.values), clip=(-90.0, 90.0), period=None, spacing=lat.attrs.get(SPACING)
    )
    west, east = longitude_edges(np.asarray(lon.values), lon.attrs.get(SPACING))
    band = np.sin(np.deg2rad(north)) - np.sin(np.deg2rad(south))
    width = np.deg2rad(east - west)
    area = EARTH_RADIUS**2 * np.outer(band, width)
    return xr.DataArray(
        area,
        dims=(lat.dims[0], lon.dims[0]),
        coords={lat.name: (lat.dims[0], lat.values), lon.name: (lon.dims[0], lon.values)},
        name="cell_area",
        attrs={"units": "m2", "standard_name": "cell_area"},
    )
