"""The grids of :func:`~pangeo_hpc.recipes.regrid.regrid`: where the cells are and where they end.

A :class:`Grid` is a rectilinear latitude/longitude grid in the order its data are stored
(latitude in either order, longitude in either convention or across its seam), with the
edges of each cell, or, for a source only, a curvilinear one (2-D latitude and longitude,
cell centres only: nearest and bilinear weights, not conservative ones).
Targets are written three ways (:func:`target_grid`):

* ``rNxM``: CDO's global grid of N longitudes and M latitudes, as ``cdo griddes
  -const,1,r144x72`` describes it: longitudes ``0, 360/N, ...`` (the first cell centred on
  the Greenwich meridian), latitudes ``-90 + 180/M * (j + 1/2)`` from south to north;
* ``{lat: [south, north, step], lon: [west, east, step]}``: the cells between these
  edges, each ``step`` degrees wide (centred half a step inside), a region or the globe;
* a path to a NetCDF file: the grid of its latitude and longitude coordinates.

Edges come from the grid's bounds variables (CF ``bounds`` attribute) when it has them,
else halfway between centres (the outermost cells as wide as their neighbours, latitude
clipped at the poles, a global longitude axis closed across its seam), as CDO makes them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError, shown
from pangeo_hpc.recipes.grid import cell_edges, horizontal_names, longitude_edges

__all__ = ["CDO_NAME", "Grid", "source_grid", "target_grid"]

#: CDO's name of a global grid of N longitudes and M latitudes
CDO_NAME = re.compile(r"r(\d+)x(\d+)")
_GRID_HINT = (
    "give grid: r144x72 (CDO's rNxM), {lat: [south, north, step], lon: [west, east, step]} "
    "or the path of a NetCDF file"
)


@dataclass(frozen=True, eq=False)
class Grid:
    """Cell centres and edges of a latitude/longitude grid, in the order of its data.

    Attributes
    ----------
    lat, lon : numpy.ndarray
        Centres in degrees: 1-D (rectilinear) or both 2-D (curvilinear).
    lat_bounds, lon_bounds : numpy.ndarray or None
        ``(n, 2)`` edges of each row and column of a rectilinear grid (south/north,
        west/east, each pair increasing; longitude edges may run past 360 or below 0);
        ``None`` for a curvilinear one.
    name : str
        How messages and attributes name the grid (``r144x72``, ``1.0 x 1.0 degree``).
    dims : tuple of str
        The names of its latitude and longitude dimensions.
    attrs : dict
        The attributes of its latitude and longitude coordinates, by ``"lat"``/``"lon"``.

    Examples
    --------
    >>> grid = target_grid("r4x2")
    >>> grid.name, grid.lat, grid.lon, grid.dims
    ('r4x2', array([-45.,  45.]), array([  0.,  90., 180., 270.]), ('lat', 'lon'))
    >>> grid.lat_bounds
    array([[-90.,   0.],
           [  0.,  90.]])
    """

    lat: np.ndarray
    lon: np.ndarray
    lat_bounds: np.ndarray | None
    lon_bounds: np.ndarray | None
    name: str
    dims: tuple[str, str] = ("lat", "lon")
    attrs: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def curvilinear(self) -> bool:
        return self.lat.ndim == 2

    @property
    def shape(self) -> tuple[int, ...]:
        return self.lat.shape if self.curvilinear else (self.lat.size, self.lon.size)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __post_init__(self) -> None:
        if self.lon_bounds is not None:  # each cell's west edge at or before its centre
            west, east = self.lon_bounds[:, 0], self.lon_bounds[:, 1]
            shift = 360.0 * np.ceil((west - self.lon) / 360.0 - 1e-12)
            object.__setattr__(self, "lon_bounds", np.stack([west - shift, east - shift], 1))

    def identity(self) -> list[bytes]:
        """The bytes a weights key is made of: every centre and edge, as float64.

        Returns
        -------
        list[bytes]
            The arrays' bytes.

        Examples
        --------
        >>> [len(b) for b in target_grid("r4x2").identity()]  # name, centres and edges
        [6, 16, 32, 32, 64]
        """
        parts = [self.lat, self.lon, self.lat_bounds, self.lon_bounds]
        out = [str(self.shape).encode()]
        for a in parts:
            out.append(b"-" if a is None else np.ascontiguousarray(a, "<f8").tobytes())
        return out


def target_grid(spec: Any) -> Grid:
    """The grid ``spec`` names: ``rNxM``, a ``{lat: [...], lon: [...]}`` mapping, or a path
    (see the module's description).

    Parameters
    ----------
    spec : Any
        ``rNxM``, a mapping of ``lat`` and ``lon``, or a path.

    Returns
    -------
    Grid
        The grid.

    Raises
    ------
    InputError
        For anything else, a box whose width is not a whole number of steps, or a file
        without a latitude/longitude grid.

    Examples
    --------
    >>> target_grid("r144x72").lat[:2]  # CDO's 2.5 degree grid
    array([-88.75, -86.25])
    >>> grid = target_grid({"lat": [-10, 10, 20], "lon": [30, 60, 30]})  # one cell
    >>> grid.name, grid.lat, grid.lon
    ('20 x 30 degree cells, lat -10..10, lon 30..60', array([0.]), array([45.]))
    """
    if isinstance(spec, Mapping):
        return _box(spec)
    if isinstance(spec, str | Path):
        match = CDO_NAME.fullmatch(str(spec).strip())
        if match:
            nlon, nlat = int(match[1]), int(match[2])
            if nlon < 1 or nlat < 1:
                raise InputError(f"grid={spec!r} has no cells: {_GRID_HINT}", param="grid")
            lon = np.arange(nlon) * (360.0 / nlon)
            lat = -90.0 + (np.arange(nlat) + 0.5) * (180.0 / nlat)
            return _regular(lat, lon, str(spec).strip())
        path = Path(spec).expanduser()
        if path.suffix in (".nc", ".nc4", ".netcdf") or path.exists():
            return _from_file(path)
    raise InputError(f"grid={shown(spec)} is not a grid: {_GRID_HINT}", param="grid")


def _box(spec: Mapping[str, Any]) -> Grid:
    if set(spec) != {"lat", "lon"}:
        raise InputError(
            f"grid={shown(dict(spec))} must have exactly the keys lat and lon: {_GRID_HINT}",
            param="grid",
        )
    axes = {}
    for key in ("lat", "lon"):
        try:
            start, stop, step = (float(v) for v in spec[key])
        except (TypeError, ValueError):
            raise InputError(
                f"grid: {key}={shown(spec[key])} is not [start, stop, step]: {_GRID_HINT}",
                param="grid",
            ) from None
        cells = (stop - start) / step if step > 0 else -1.0
        n = round(cells)
        if not np.isfinite(cells) or n < 1 or abs(cells - n) > 1e-6 * max(n, 1):
            raise InputError(
                f"grid: {key}={shown(list(spec[key]))} is not a whole number of cells of "
                f"{step:g} degrees from {start:g} to {stop:g}: make stop - start a positive "
                "multiple of step",
                param="grid",
            )
        limit = (-90.0, 90.0) if key == "lat" else (-360.0, 720.0)
        if start < limit[0] - 1e-9 or stop > limit[1] + 1e-9 or (key == "lon" and n * step > 360):
            raise InputError(
                f"grid: {key}={shown(list(spec[key]))} runs past "
                f"{'the poles' if key == 'lat' else 'a whole turn'}: {_GRID_HINT}",
                param="grid",
            )
        axes[key] = start + step * (np.arange(n) + 0.5), start + step * np.arange(n + 1)
    (lat, lat_e), (lon, lon_e) = axes["lat"], axes["lon"]
    name = f"{_g(spec['lat'][2])} x {_g(spec['lon'][2])} degree cells, lat {_g(lat_e[0])}.."
    name += f"{_g(lat_e[-1])}, lon {_g(lon_e[0])}..{_g(lon_e[-1])}"
    return Grid(
        lat, lon, np.stack([lat_e[:-1], lat_e[1:]], 1), np.stack([lon_e[:-1], lon_e[1:]], 1), name
    )


def _g(value: Any) -> str:
    return f"{float(value):g}"


def _regular(lat: np.ndarray, lon: np.ndarray, name: str) -> Grid:
    south, north = cell_edges(lat, clip=(-90.0, 90.0), period=None)
    west, east = longitude_edges(lon)
    return Grid(lat, lon, np.stack([south, north], 1), np.stack([west, east], 1), name)


def _from_file(path: Path) -> Grid:
    try:
        ds = xr.open_dataset(path, decode_times=False, decode_cf=False)
    except (OSError, ValueError) as exc:
        raise InputError(
            f"grid={str(path)!r} cannot be read as NetCDF ({exc}): {_GRID_HINT}", param="grid"
        ) from None
    with ds:
        grid = source_grid(ds, name=path.name)
    if grid.curvilinear:
        raise InputError(
            f"grid={str(path)!r} is curvilinear (2-D latitude and longitude): only "
            "rectilinear target grids are supported: give a regular grid",
            param="grid",
        )
    return grid


def source_grid(
    obj: xr.DataArray | xr.Dataset,
    *,
    name: str = "",
    lat_bounds: xr.DataArray | None = None,
    lon_bounds: xr.DataArray | None = None,
) -> Grid:
    """The grid of ``obj``: its latitude and longitude, with edges from ``lat_bounds`` and
    ``lon_bounds``, else from its bounds variables (a Dataset), else halfway between centres.

    Parameters
    ----------
    obj : xr.DataArray | xr.Dataset
        Data on the grid.
    name : str, optional
        The data's name, for messages.
    lat_bounds : xr.DataArray | None, optional
        Latitude bounds, or ``None``.
    lon_bounds : xr.DataArray | None, optional
        Longitude bounds, or ``None``.

    Returns
    -------
    Grid
        The grid.

    Raises
    ------
    InputError
        When ``obj`` has no latitude/longitude grid.

    Examples
    --------
    >>> import xarray as xr
    >>> coords = {"lat": [-45.0, 45.0], "lon": [0.0, 90.0, 180.0, 270.0]}
    >>> grid = source_grid(xr.DataArray(np.zeros((2, 4)), coords=coords, dims=("lat", "lon")))
    >>> grid.lat_bounds  # halfway between centres, to the poles
    array([[-90.,   0.],
           [  0.,  90.]])
    """
    lat_name, lon_name = horizontal_names(obj)
    lat_c, lon_c = obj[lat_name], obj[lon_name]
    lat = np.asarray(lat_c.values, dtype="f8")
    lon = np.asarray(lon_c.values, dtype="f8")
    attrs = {"lat": dict(lat_c.attrs), "lon": dict(lon_c.attrs)}
    if lat.ndim == 2 and lon.ndim == 2 and lat_c.dims == lon_c.dims:
        return Grid(lat, lon, None, None, name or "curvilinear", tuple(lat_c.dims), attrs)
    if lat.ndim != 1 or lon.ndim != 1 or lat_c.dims == lon_c.dims:
        raise InputError(
            f"regrid: latitude {lat_name!r} {lat_c.dims} and longitude {lon_name!r} "
            f"{lon_c.dims} are not a latitude/longitude grid: give a grid whose latitude and "
            "longitude are each a 1-D dimension, or both 2-D on the same dimensions"
        )
    dims = (str(lat_c.dims[0]), str(lon_c.dims[0]))
    lat_b = _bounds(obj, lat_c, lat_bounds)
    lon_b = _bounds(obj, lon_c, lon_bounds)
    if lat_b is None:
        lat_b = np.stack(cell_edges(lat, clip=(-90.0, 90.0), period=None), 1)
    if lon_b is None:
        lon_b = np.stack(longitude_edges(lon), 1)
    else:  # west to east; a pair more than half a turn apart crosses the seam ([359.5, 0.5])
        lo, hi = lon_b.min(1), lon_b.max(1)
        wraps = hi - lo > 180.0
        lon_b = np.stack([np.where(wraps, hi, lo), np.where(wraps, lo + 360.0, hi)], 1)
    return Grid(lat, lon, np.sort(lat_b, 1), lon_b, name or "source", dims, attrs)


def _bounds(
    obj: xr.DataArray | xr.Dataset, coord: xr.DataArray, given: xr.DataArray | None
) -> np.ndarray | None:
    """``(n, 2)`` edges of ``coord`` from ``given`` or its CF bounds variable, else None."""
    if given is None:
        name = coord.attrs.get("bounds")
        if not isinstance(obj, xr.Dataset) or name not in obj.variables:
            return None
        given = obj[name]
    values = np.asarray(given.values, dtype="f8")
    if values.shape != (coord.size, 2):
        raise InputError(
            f"regrid: the bounds {given.name!r} of {coord.name!r} have shape {values.shape}, "
            f"not ({coord.size}, 2): give one pair of edges per cell"
        )
    return values
