"""``regrid``: a field on another latitude/longitude grid, as CDO ``remapcon``, ``remapnn``
and ``remapbil`` compute it.

The weights (:mod:`~pangeo_hpc.recipes.regrid_weights`, a sparse matrix) are built once per
pair of grids and method, in the process that builds the chain, from coordinate values
alone (no data are read), and applied on the workers to whole fields: the latitude and
longitude dimensions in one chunk, any other dimension chunked as it comes. Each time
step is regridded on its own, so a chain with ``regrid`` stays incremental
(:mod:`~pangeo_hpc.recipes.traits`), unless the target grid is read from a file, whose
content the state cache's keys do not hold.

Built weights are kept in this process (the last few pairs) and, when a weights store is
in use (:func:`using_store`: a recipe run uses the state cache's folder), on disk under a
key that holds everything they depend on: both grids' centres and edges, the method, the
code that builds them and the SciPy and NumPy versions. A stored entry that cannot be
read or is not well-formed is a miss, built again.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import importlib.metadata
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError, shown
from pangeo_hpc.jit import njit
from pangeo_hpc.recipes import (
    regrid_curvilinear,
    regrid_grids,
    regrid_search,
    regrid_weights,
)
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import horizontal_names
from pangeo_hpc.recipes.regrid_grids import Grid, source_grid, target_grid
from pangeo_hpc.recipes.regrid_weights import METHODS, Weights
from pangeo_hpc.recipes.time_bounds import bounds_names
from pangeo_hpc.recipes.traits import step_by_step

__all__ = ["WeightsStore", "regrid", "using_store", "weights_key"]

#: the format of a weights entry: in every key
FORMAT = "pangeo-hpc-regrid-weights-1"
#: weights kept in this process, by key
_MEMO: OrderedDict[str, Weights] = OrderedDict()
_MEMO_SIZE = 8


class WeightsStore(Protocol):
    """Where built weights are kept between runs (a recipe run: the state cache).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> class Store:  # weights kept in a dict
    ...     def __init__(self):
    ...         self.kept = {}
    ...     def get(self, key):
    ...         return self.kept.get(key)
    ...     def put(self, key, arrays, meta):
    ...         self.kept[key] = arrays
    >>> coords = {"lat": [-45.0, 45.0], "lon": [0.0, 90.0, 180.0, 270.0]}
    >>> da = xr.DataArray(np.ones((2, 4)), coords=coords, dims=("lat", "lon"))
    >>> store: WeightsStore = Store()
    >>> with using_store(store):
    ...     out = regrid(da, grid={"lat": [-90, 90, 60], "lon": [0, 360, 120]}, method="nearest")
    >>> len(store.kept)  # built once, kept for the next run
    1
    """

    def get(self, key: str) -> dict[str, np.ndarray] | None:
        """The arrays stored under ``key``, or ``None`` (a miss, a damaged entry).

        Parameters
        ----------
        key : str
            A weights key.

        Returns
        -------
        dict or None
            The arrays, or ``None``.

        Examples
        --------
        >>> import numpy as np, xarray as xr
        >>> class Store:  # weights kept in a dict
        ...     def __init__(self):
        ...         self.kept = {}
        ...     def get(self, key):
        ...         return self.kept.get(key)
        ...     def put(self, key, arrays, meta):
        ...         self.kept[key] = arrays
        >>> coords = {"lat": [-45.0, 45.0], "lon": [0.0, 90.0, 180.0, 270.0]}
        >>> da = xr.DataArray(np.ones((2, 4)), coords=coords, dims=("lat", "lon"))
        >>> store: WeightsStore = Store()
        >>> with using_store(store):
        ...     grid = {"lat": [-90, 90, 45], "lon": [0, 360, 120]}
        ...     out = regrid(da, grid=grid, method="nearest")
        >>> key = next(iter(store.kept))
        >>> sorted(store.get(key))  # what a later run finds under that key
        ['data', 'indices', 'indptr', 'mean_rows', 'shape']
        """

    def put(self, key: str, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Keep ``arrays`` under ``key``; ``meta`` says what they are.

        Parameters
        ----------
        key : str
            A weights key.
        arrays : dict[str, np.ndarray]
            Name -> array.
        meta : dict[str, Any]
            What they are (grids, method).

        Examples
        --------
        >>> import numpy as np, xarray as xr
        >>> class Store:  # weights kept in a dict
        ...     def __init__(self):
        ...         self.kept = {}
        ...     def get(self, key):
        ...         return self.kept.get(key)
        ...     def put(self, key, arrays, meta):
        ...         self.kept[key] = arrays
        >>> coords = {"lat": [-45.0, 45.0], "lon": [0.0, 90.0, 180.0, 270.0]}
        >>> da = xr.DataArray(np.ones((2, 4)), coords=coords, dims=("lat", "lon"))
        >>> store: WeightsStore = Store()
        >>> with using_store(store):  # regrid builds the weights and puts them
        ...     out = regrid(da, grid={"lat": [-90, 90, 90], "lon": [0, 360, 90]}, method="nearest")
        >>> len(store.kept)
        1
        """


_STORE: contextvars.ContextVar[WeightsStore | None] = contextvars.ContextVar(
    "pangeo_hpc_regrid_store", default=None
)


@contextlib.contextmanager
def using_store(store: WeightsStore | None) -> Iterator[None]:
    """Keep the weights built inside this block in ``store`` too, and look them up there.

    Parameters
    ----------
    store : WeightsStore | None
        Where weights are kept (``None``: nowhere).

    Yields
    ------
    None
        Nothing; the block runs with the store.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> class Store:  # weights kept in a dict
    ...     def __init__(self):
    ...         self.kept = {}
    ...     def get(self, key):
    ...         return self.kept.get(key)
    ...     def put(self, key, arrays, meta):
    ...         self.kept[key] = arrays
    >>> coords = {"lat": [-45.0, 45.0], "lon": [0.0, 90.0, 180.0, 270.0]}
    >>> da = xr.DataArray(np.ones((2, 4)), coords=coords, dims=("lat", "lon"))
    >>> store = Store()
    >>> with using_store(store):
    ...     out = regrid(da, grid={"lat": [-90, 90, 36], "lon": [0, 360, 72]}, method="bilinear")
    >>> len(store.kept), out.shape
    (1, (5, 5))
    """
    token = _STORE.set(store)
    try:
        yield
    finally:
        _STORE.reset(token)


def _code() -> str:
    h = hashlib.sha256(FORMAT.encode())
    for module in (regrid_grids, regrid_search, regrid_weights, regrid_curvilinear):
        h.update(Path(module.__file__ or "").read_bytes())
    for lib in ("numpy", "scipy"):
        h.update(f"\0{lib}={importlib.metadata.version(lib)}".encode())
    return h.hexdigest()


def weights_key(src: Grid, dst: Grid, method: str) -> str:
    """64 hex digits: the grids' centres and edges, the method and the code (see above).

    Parameters
    ----------
    src : Grid
        The source grid.
    dst : Grid
        The target grid.
    method : str
        ``bilinear``, ``conservative`` or ``nearest``.

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> from pangeo_hpc.recipes.regrid_grids import target_grid
    >>> key = weights_key(target_grid("r4x2"), target_grid("r2x2"), "conservative")
    >>> len(key), key == weights_key(target_grid("r4x2"), target_grid("r2x2"), "nearest")
    (64, False)
    """
    h = hashlib.sha256(_code().encode() + b"\0" + method.encode())
    for part in [*src.identity(), b"\0->\0", *dst.identity()]:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()


def _weights_for(src: Grid, dst: Grid, method: str) -> Weights:
    """The weights of ``method`` from ``src`` to ``dst``: kept in this process, else from
    the store in use (:func:`using_store`), else built (and stored)."""
    key = weights_key(src, dst, method)
    if key in _MEMO:
        _MEMO.move_to_end(key)
        return _MEMO[key]
    store = _STORE.get()
    found = None
    if store is not None:
        arrays = store.get(key)
        if arrays is not None:
            try:
                found = Weights.from_arrays(arrays)
                if found.matrix.shape != (dst.size, src.size):
                    found = None
            except (KeyError, ValueError, TypeError):
                found = None  # not what this code writes: a miss
    if found is None:
        found = regrid_weights.build(src, dst, method)
        if store is not None:
            meta = {"regrid": method, "source": src.name, "target": dst.name}
            store.put(key, found.arrays(), meta)
    _MEMO[key] = found
    while len(_MEMO) > _MEMO_SIZE:
        _MEMO.popitem(last=False)
    return found


@njit
def _apply_rows(f, indptr, indices, data, mean_rows, out):  # pragma: no cover - jitted
    """``out[t, r]`` from the fields ``f`` ``(nt, source cells)`` and the CSR weights, by
    the rules of :mod:`~pangeo_hpc.recipes.regrid_weights` (sums in float64, in the CSR
    order, as SciPy's product sums). Each field is first split into its values (0 where
    missing) and its valid cells (1 or 0), so the sums over the weights need no branch.
    The sums over the valid cells (``den``, ``seen``) depend on the field's mask alone:
    kept from the field before while the mask is the same (a land mask, the same in every
    time step), summed in the same order when it changes, so the result is the same."""
    n = f.shape[1]
    rows = indptr.size - 1
    f0 = np.empty(n)
    valid = np.empty(n)
    den_of = np.empty(rows)
    seen_of = np.empty(rows)
    known = False
    for t in range(f.shape[0]):
        same = known
        for c in range(n):
            v = np.float64(f[t, c])
            ok = np.isfinite(v)
            f0[c] = v if ok else 0.0
            w = 1.0 if ok else 0.0
            if valid[c] != w:
                same = False
            valid[c] = w
        if not same:
            for r in range(rows):
                den = 0.0
                seen = 0.0
                for k in range(indptr[r], indptr[r + 1]):
                    j = indices[k]
                    den += data[k] * valid[j]
                    seen += valid[j]
                den_of[r] = den
                seen_of[r] = seen
            known = True
        for r in range(rows):
            num = 0.0
            for k in range(indptr[r], indptr[r + 1]):
                num += data[k] * f0[indices[k]]
            den = den_of[r]
            if mean_rows[r]:  # the mean over the valid weights
                out[t, r] = num / den if den > 0 else np.nan
            elif seen_of[r] < indptr[r + 1] - indptr[r] or indptr[r] == indptr[r + 1]:
                out[t, r] = np.nan  # any missing neighbour, even of weight 0; no neighbour
            else:
                out[t, r] = num


def _apply(block: np.ndarray, *, weights: Weights, shape: tuple[int, int]) -> np.ndarray:
    """Regrid the fields of ``block`` (``(..., ny, nx)``) to ``shape``: one pass over each
    field as it is stored (no copy of a float block, no transposition)."""
    lead = block.shape[:-2]
    if block.dtype.kind != "f":
        block = block.astype("f8")
    f = np.ascontiguousarray(block.reshape(-1, block.shape[-2] * block.shape[-1]))
    m = weights.matrix
    out = np.empty((f.shape[0], m.shape[0]), block.dtype)
    _apply_rows(f, m.indptr, m.indices, m.data, weights.mean_rows, out)
    return out.reshape(*lead, *shape)


def _file_target(options: Mapping[str, Any]) -> str | None:
    grid = options.get("grid")
    if isinstance(grid, str) and not regrid_grids.CDO_NAME.fullmatch(grid.strip()):
        return (
            f"regrid to the grid of the file {grid!r}: the state cache does not see that "
            "file's content (write the grid as rNxM or {lat: [...], lon: [...]} to run "
            "incrementally)"
        )
    return None


@step_by_step(unless=_file_target)
def regrid(
    da: xr.DataArray,
    *,
    grid: str | dict[str, Any],
    method: Literal["conservative", "nearest", "bilinear"] = "conservative",
    lat_bounds: xr.DataArray | None = None,
    lon_bounds: xr.DataArray | None = None,
) -> xr.DataArray:
    """The field on another latitude/longitude grid: CDO ``remapcon``, ``remapnn`` or
    ``remapbil``.

    Parameters
    ----------
    da : DataArray
        Field on a rectilinear latitude/longitude grid (any CF names, latitude in either
        order, longitude 0..360 or -180..180, global or regional), or a curvilinear one
        (2-D latitude and longitude: ``nearest`` and ``bilinear`` only, see
        :mod:`~pangeo_hpc.recipes.regrid_curvilinear`); other dimensions are kept.
    grid : str or dict
        ``"r144x72"`` (CDO's global grid of 144 longitudes from 0 and 72 latitudes
        centred between the poles), ``{"lat": [south, north, step], "lon": [west, east,
        step]}`` (the cells between these edges), or the path of a NetCDF file whose
        latitude and longitude (and their bounds) are the grid.
    method : {"conservative", "nearest", "bilinear"}
        ``conservative`` (first order): the area-weighted mean of the overlapping source
        cells, exact for cells between meridians and circles of latitude; missing source
        cells are left out of the mean (CDO's default), a target cell that overlaps no
        valid cell is missing. ``nearest``: the value of the nearest source centre (on
        the sphere; ties: the first in the source's order). ``bilinear``: linear in
        latitude and longitude between the four surrounding centres, missing if any of
        them is (CDO: beyond the outermost latitudes of a global source, the inverse-
        distance mean of the four nearest); from a curvilinear source, the inverse of the
        bilinear map of the quadrilateral of centres around the target, as CDO.
        Targets outside a regional source are missing.
    lat_bounds, lon_bounds : DataArray, optional
        ``(n, 2)`` edges of the source's cells (its ``lat_bnds``, ``lon_bnds``: ``$lat_bnds``
        in a recipe); default: those the data carry, else halfway between centres.

    Returns
    -------
    DataArray
        Lazy, on the target grid (latitude and longitude named as in ``da``, with their
        bounds), float32 for float32 data; ``comment`` says what was done.

    Raises
    ------
    InputError
        For an unknown grid or method, a grid that is not latitude/longitude, or a
        curvilinear source with ``method="conservative"`` (CDO ``remapcon`` would need
        the cells' corners, which regrid does not take).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> da = xr.DataArray(np.ones((2, 180, 360)), dims=("time", "lat", "lon"),
    ...     coords={"lat": np.arange(-89.5, 90), "lon": np.arange(0.5, 360)})
    >>> regrid(da, grid="r144x72").sizes["lon"]
    144
    """
    da = check_dataarray(da, "regrid")
    if method not in METHODS:
        raise InputError(
            f"regrid: method={shown(method)} is not one of {list(METHODS)}", param="method"
        )
    lat_name, lon_name = horizontal_names(da)
    carried = _carried_bounds(da, lat_name, lon_name)
    src = source_grid(
        da,
        lat_bounds=lat_bounds if lat_bounds is not None else carried[0],
        lon_bounds=lon_bounds if lon_bounds is not None else carried[1],
    )
    dst = target_grid(grid)
    weights = _weights_for(src, dst, method)
    ydim, xdim = src.dims
    if da.chunks is not None:
        da = da.chunk({ydim: -1, xdim: -1})
    core = da.drop_vars([c for c in da.coords if set(da[c].dims) & {ydim, xdim}])
    core = core.transpose(..., ydim, xdim)
    dtype = core.dtype if core.dtype.kind == "f" else np.dtype("f8")
    kw = {"weights": weights, "shape": dst.shape}
    if core.chunks is None:
        values = _apply(core.values, **kw)
    else:  # block by block, each block's fields whole (no concatenation: no copy of them)
        lead = core.data.chunks[:-2]
        values = core.data.map_blocks(
            _apply, **kw, dtype=dtype, chunks=(*lead, (dst.shape[0],), (dst.shape[1],))
        )
    out = xr.DataArray(
        values,
        dims=(*core.dims[:-2], "__lat", "__lon"),
        coords=core.coords,
        name=core.name,
        attrs=dict(core.attrs),
    )
    ylat, xlon = (lat_name, lon_name) if not src.curvilinear else ("lat", "lon")
    out = out.rename({"__lat": ylat, "__lon": xlon})
    out = out.assign_coords(_target_coords(dst, src, ylat, xlon))
    done = f"regridded to {dst.name} by {method} remapping (as CDO {_CDO_OP[method]})"
    said = out.attrs.get("comment")
    out.attrs["comment"] = f"{said}; {done}" if said else done
    return out.transpose(*[d for d in out.dims if d not in (ylat, xlon)], ylat, xlon)


_CDO_OP = {"conservative": "remapcon", "nearest": "remapnn", "bilinear": "remapbil"}


def _carried_bounds(
    da: xr.DataArray, lat: str, lon: str
) -> tuple[xr.DataArray | None, xr.DataArray | None]:
    """The cell edges a DataArray carries as ``{dim}_bnds_lower``/``_upper`` coordinates
    (what :func:`regrid` writes), as ``(n, 2)`` arrays."""
    out = []
    for name in (lat, lon):
        lower, upper = bounds_names(name)
        if lower in da.coords and upper in da.coords and da[name].ndim == 1:
            pair = np.stack([da[lower].values, da[upper].values], 1)
            out.append(xr.DataArray(pair, dims=(da[name].dims[0], "bnds"), name=f"{name}_bnds"))
        else:
            out.append(None)
    return out[0], out[1]


def _target_coords(dst: Grid, src: Grid, lat: str, lon: str) -> dict[str, Any]:
    attrs = {
        "lat": {**_plain(src.attrs.get("lat", {})), **dst.attrs.get("lat", {})},
        "lon": {**_plain(src.attrs.get("lon", {})), **dst.attrs.get("lon", {})},
    }
    attrs["lat"].update(standard_name="latitude", units="degrees_north", axis="Y")
    attrs["lon"].update(standard_name="longitude", units="degrees_east", axis="X")
    coords: dict[str, Any] = {
        lat: xr.Variable(lat, dst.lat, _plain(attrs["lat"])),
        lon: xr.Variable(lon, dst.lon, _plain(attrs["lon"])),
    }
    for name, bounds in ((lat, dst.lat_bounds), (lon, dst.lon_bounds)):
        lower, upper = bounds_names(name)
        coords[lower] = xr.Variable(name, bounds[:, 0])
        coords[upper] = xr.Variable(name, bounds[:, 1])
    return coords


def _plain(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes of a coordinate, less those that point at variables not carried along."""
    return {k: v for k, v in attrs.items() if k not in ("bounds", "_FillValue", "missing_value")}
