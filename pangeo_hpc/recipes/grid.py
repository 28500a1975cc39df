"""Find the horizontal and time coordinates of any CF dataset and compute true cell areas."""

from __future__ import annotations

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError

EARTH_RADIUS = 6_371_000.0  # m, the sphere CDO uses for cell areas

_NAMES = {
    "latitude": ("lat", "latitude", "nav_lat", "lats", "rlat", "y_lat"),
    "longitude": ("lon", "longitude", "nav_lon", "lons", "rlon", "x_lon"),
}
_UNITS = {
    "latitude": ("degrees_north", "degree_north", "degree_n", "degrees_n", "degreen", "degreesn"),
    "longitude": ("degrees_east", "degree_east", "degree_e", "degrees_e", "degreee", "degreese"),
}
_AXIS = {"latitude": "Y", "longitude": "X"}


def _find(obj: xr.DataArray | xr.Dataset, what: str) -> str:
    names = [*map(str, obj.coords)]
    if isinstance(obj, xr.Dataset):
        names += [*map(str, obj.data_vars)]
    by_attrs, by_name = [], []
    for name in names:
        attrs = obj[name].attrs
        if (
            attrs.get("standard_name") == what
            or str(attrs.get("units", "")).lower() in _UNITS[what]
        ):
            by_attrs.append(name)
        elif attrs.get("axis") == _AXIS[what] or name.lower() in _NAMES[what]:
            by_name.append(name)
    found = by_attrs + by_name
    if not found:
        raise InputError(
            f"no {what} coordinate among {sorted(names)}: name it "
            f"{_NAMES[what][0]!r} or give it the attribute standard_name={what!r}"
        )
    return found[0]


def horizontal_names(obj: xr.DataArray | xr.Dataset) -> tuple[str, str]:
    """Return the names of the latitude and longitude coordinates, by CF attributes or name."""
    return _find(obj, "latitude"), _find(obj, "longitude")


def time_name(obj: xr.DataArray | xr.Dataset) -> str:
    """Return the name of the time dimension (ERA5 calls it ``time0``)."""
    for name in map(str, obj.dims):
        if name not in obj.coords:
            continue
        coord = obj[name]
        if (
            coord.attrs.get("standard_name") == "time"
            or coord.attrs.get("axis") == "T"
            or np.issubdtype(coord.dtype, np.datetime64)
            or coord.dtype == object
        ):
            return name
    raise InputError(
        f"no time dimension among {list(map(str, obj.dims))}: this recipe needs one with "
        "datetime values (name it 'time' or give it standard_name='time')"
    )


def cell_edges(
    centers: np.ndarray, *, clip: tuple[float, float] | None, period: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """Cell edges halfway between sorted centres, extended by half a cell at each end."""
    order = np.argsort(centers)
    c = centers[order].astype("f8")
    if c.size == 1:
        raise InputError("a grid needs at least two points along latitude and longitude")
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


def cell_area(lat: xr.DataArray, lon: xr.DataArray) -> xr.DataArray:
    """Area in m² of each cell of a regular (1-D) lat/lon grid.

    Cell edges lie halfway between centres; the outermost latitude cells end at the pole
    when the grid reaches it (so cells centred on ±90° are half cells), as in CDO's
    ``gridarea`` and ``fldmean``.
    """
    if lat.ndim != 1 or lon.ndim != 1:
        raise InputError(
            f"coordinates {lat.name!r} and {lon.name!r} are 2-D (a curvilinear grid): "
            "pass the cell areas yourself with weights=<DataArray of areas>"
        )
    south, north = cell_edges(np.asarray(lat.values), clip=(-90.0, 90.0), period=None)
    west, east = cell_edges(np.asarray(lon.values), clip=None, period=360.0)
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
