"""Regions: lon/lat boxes (CDO ``sellonlatbox``), named boxes, the AR6 reference regions
(shipped: :mod:`pangeo_hpc.recipes.ar6`), regionmask regions, and land or ocean from a NaN
mask."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes import ar6
from pangeo_hpc.recipes.cf_attrs import AREA_TYPE, with_attrs
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import SPACING, horizontal_names, rectilinear_names, time_name
from pangeo_hpc.recipes.lonlatbox import box_indices, cdo_longitudes, lat_indices
from pangeo_hpc.recipes.traits import step_by_step

if TYPE_CHECKING:
    import regionmask

#: named boxes: ``lat`` (south, north) and ``lon`` (west, east; None: all longitudes), edges
#: included, cells selected by their centres as CDO ``sellonlatbox`` does
REGIONS: Mapping[str, Mapping[str, tuple[float, float] | None]] = {
    # the Nino regions as NOAA CPC defines them (https://www.cpc.ncep.noaa.gov/data/indices/,
    # Trenberth & Stepaniak 2001, J. Climate 14, 1697): 0-10S 90W-80W, 5S-5N 150W-90W,
    # 5S-5N 170W-120W, 5S-5N 160E-150W
    "nino12": {"lat": (-10.0, 0.0), "lon": (270.0, 280.0)},
    "nino3": {"lat": (-5.0, 5.0), "lon": (210.0, 270.0)},
    "nino34": {"lat": (-5.0, 5.0), "lon": (190.0, 240.0)},
    "nino4": {"lat": (-5.0, 5.0), "lon": (160.0, 210.0)},
    # the tropics and polar circles at 23.5 and 66.5 degrees (their rounded values, as in
    # the AMS Glossary of Meteorology, https://glossary.ametsoc.org)
    "tropics": {"lat": (-23.5, 23.5), "lon": None},
    "arctic": {"lat": (66.5, 90.0), "lon": None},
    "antarctic": {"lat": (-90.0, -66.5), "lon": None},
    # hemispheres: both hold the equator's cells when the grid has some (edges included)
    "northern_hemisphere": {"lat": (0.0, 90.0), "lon": None},
    "southern_hemisphere": {"lat": (-90.0, 0.0), "lon": None},
    "global": {"lat": (-90.0, 90.0), "lon": None},
}


def _mask_why(options: Mapping[str, Any]) -> str | None:
    """Why select_region does not work step by step: its mask comes from every step."""
    if options.get("mask") is not None:
        return "select_region with mask= takes its land/ocean mask from every time step"
    return None


@step_by_step(unless=_mask_why)
def select_region(
    da: xr.DataArray,
    *,
    lat: Sequence[float] | None = None,
    lon: Sequence[float] | None = None,
    name: str | None = None,
    mask: Literal["land", "ocean"] | None = None,
    mask_from: xr.DataArray | None = None,
    regions: regionmask.Regions | None = None,
) -> xr.DataArray:
    """The cells of a region: a lon/lat box, a named box, a regionmask region, land or ocean
    (CDO ``sellonlatbox``, ``maskregion``, ``ifthen``).

    Parameters
    ----------
    da : DataArray
        Field on a regular latitude/longitude grid (any CF names; latitude ascending or
        descending; longitude in 0..360 or -180..180).
    lat : [south, north], optional
        Latitudes of the box, edges included (either order).
    lon : [west, east], optional
        Longitudes of the box, edges included, in either convention; ``west > east`` (or
        ``[170, 190]``) crosses the dateline or the grid's seam.
    name : str, optional
        A box of :data:`REGIONS` (``nino34``, ``tropics``, ``arctic``, ...), an AR6
        reference region as ``"ar6:WNA"`` (acronym or name, any case, or number; shipped
        with the package, no download: :mod:`pangeo_hpc.recipes.ar6`), or a region of
        ``regions`` (abbreviation, name or number). Not together with ``lat``/``lon``.
    mask : {"land", "ocean"}, optional
        Keep land or ocean cells only (NaN elsewhere), from the NaN mask of ``mask_from``
        or else of ``da`` itself: the cells where those data are ever valid are ocean
        (SST, say), unless their ``standard_name`` starts with ``land_`` or ``soil_``.
    mask_from : DataArray, optional
        Another variable on the same grid whose NaN mask decides ``mask`` (SST for 2 m
        temperature).
    regions : regionmask.Regions, optional
        Regions to take ``name`` from, instead of AR6.

    Returns
    -------
    DataArray
        A box: only its cells, in the order and with the coordinates CDO's
        ``sellonlatbox,west,east,south,north`` gives (a box across the seam of a 0..360
        grid comes back in -180..180; see :mod:`pangeo_hpc.recipes.lonlatbox`). A
        region, land or ocean: the whole grid, NaN outside (CDO ``maskregion``,
        ``ifthen``); the cells of a region are those regionmask selects from the same
        vertices. Attributes unchanged but ``long_name``, which says what was selected
        (``"... over ar6:WNA (W.North-America)"``), and, for an AR6 region, ``references``
        (the regions' citation, as their CC BY 4.0 licence asks).

    Raises
    ------
    InputError
        A box that holds no cell centre (naming the grid's extent), an unknown name, a
        ``mask`` on data without missing values and without ``mask_from`` (Dask data:
        when the result is computed, as only then is it known). An unknown AR6 name is
        refused naming the closest ones (``ar6:WNE``: did you mean ``ar6:WNA``...).

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> lat = xr.DataArray([-45.0, 45.0], dims="lat", attrs={"units": "degrees_north"})
    >>> lon = xr.DataArray([0.0, 180.0], dims="lon", attrs={"units": "degrees_east"})
    >>> da = xr.DataArray(
    ...     [[1.0, 2.0], [3.0, 4.0]], coords={"lat": lat, "lon": lon}, dims=("lat", "lon"),
    ...     attrs={"units": "K"},
    ... )
    >>> select_region(da, lat=[0, 90]).values.tolist()
    [[3.0, 4.0]]
    """
    check_dataarray(da, "select_region")
    la, lo = rectilinear_names(da, "select_region")
    out = da
    words = []  # what selected the data, for their long_name
    references = None  # the AR6 regions' citation, when one is used
    if mask is not None:
        out = _land_or_ocean(out, mask, mask_from, la, lo)
        words.append(f"over {mask}")
    if name is not None:
        if lat is not None or lon is not None:
            raise InputError(
                f"select_region: name={name!r} together with lat/lon: give one of them",
                param="name",
            )
        if name in REGIONS and regions is None:
            lat, lon = REGIONS[name]["lat"], REGIONS[name]["lon"]
        else:
            out, label = _in_region(out, name, regions, la, lo)
            words.append(f"over {label}")
            if regions is None:
                references = ar6.CITATION
    if lat is not None:
        out = out.isel(
            {da[la].dims[0]: lat_indices(np.asarray(da[la].values), lat, "select_region")}
        )
    if lon is not None:
        idx = box_indices(np.asarray(da[lo].values), lon, "select_region")
        dim = da[lo].dims[0]
        where: Any = slice(idx[0], idx[-1] + 1) if np.all(np.diff(idx) == 1) else idx
        out = out.isel({dim: where})
        values = cdo_longitudes(np.asarray(out[lo].values))
        out = out.assign_coords({lo: out[lo].copy(data=values)})
    for c in (la, lo):  # a box one cell wide: its width for the cell areas (grid.cell_area)
        if out.sizes[out[c].dims[0]] == 1 and da.sizes[da[c].dims[0]] > 1:
            step = float(np.median(np.abs(np.diff(np.asarray(da[c].values, dtype="f8")))))
            out[c].attrs[SPACING] = step
    if lat is not None or lon is not None:  # checked above: two numbers each
        box = _box_words(lat, lon)
        words.append(f"in {name} ({box})" if name is not None else f"in {box}")
    attrs = dict(da.attrs)
    attrs["long_name"] = " ".join([str(da.attrs.get("long_name", da.name or "field")), *words])
    if references is not None:
        attrs["references"] = "; ".join(
            dict.fromkeys(r for r in (da.attrs.get("references"), references) if r)
        )
    if mask is not None:  # the CF area type of the cells kept, for an area mean's "where"
        attrs[AREA_TYPE] = "land" if mask == "land" else "sea"
    return with_attrs(out, attrs)


def _box_words(lat: Sequence[float] | None, lon: Sequence[float] | None) -> str:
    """A lon/lat box as people write it: ``5S-5N 170W-120W`` for ``lat=[-5, 5]``,
    ``lon=[190, 240]`` (longitudes in -180..180, whichever convention was given).

    >>> _box_words([-5, 5], [190, 240]), _box_words([66.5, 90], None), _box_words([0, 90], [0, 360])
    ('5S-5N 170W-120W', '66.5N-90N', '0-90N')
    """
    parts = []
    if lat is not None:
        south, north = sorted(float(v) for v in lat)
        parts.append(f"{_degrees(south, 'S', 'N')}-{_degrees(north, 'S', 'N')}")
    if lon is not None:
        west, east = (float(v) for v in lon)
        if west == east or (east - west) % 360 != 0:  # [0, 360]: every longitude, no words
            parts.append(f"{_degrees(_pm180(west), 'W', 'E')}-{_degrees(_pm180(east), 'W', 'E')}")
    return " ".join(parts) or "all longitudes"


def _pm180(lon: float) -> float:
    """A longitude in (-180, 180]."""
    x = (lon + 180.0) % 360.0 - 180.0
    return 180.0 if x == -180.0 else x


def _degrees(value: float, negative: str, positive: str) -> str:
    """``-5`` -> ``5S``, ``23.5`` -> ``23.5N``, ``0`` -> ``0`` (the equator or meridian)."""
    if value == 0:
        return "0"
    return f"{abs(value):g}{negative if value < 0 else positive}"


def _in_region(
    da: xr.DataArray, name: str, regions: Any, la: str, lo: str
) -> tuple[xr.DataArray, str]:
    """``da`` with NaN outside region ``name`` (AR6 for ``ar6:...``), and the region's
    label for the result's ``long_name``."""
    lon, lat = np.asarray(da[lo].values), np.asarray(da[la].values)
    if regions is None:
        if not name.lower().startswith(ar6.PREFIX):
            raise InputError(
                f"select_region: name={name!r} is not one of {sorted(REGIONS)} nor an AR6 "
                "region such as 'ar6:WNA'",
                param="name",
            )
        found = ar6.region(name)
        inside = ar6.cells(found, lon, lat)
        label = found.label
    else:
        try:
            number = regions.map_keys(int(name) if str(name).isdigit() else name)
        except KeyError:
            raise InputError(
                f"select_region: name={name!r} is not a region of {regions.name!r}: "
                f"give one of {list(regions.abbrevs)}",
                param="name",
            ) from None
        # this region alone: regionmask refuses a set whose polygons mix 0..360 and -180..180
        inside = np.asarray(regions[[number]].mask(lon, lat).values) == number
        label = f"{regions[number].abbrev} ({regions[number].name})"
    keep = xr.DataArray(
        inside, dims=(da[la].dims[0], da[lo].dims[0]), coords={la: da[la], lo: da[lo]}
    )
    return da.where(keep), label


def _land_or_ocean(
    da: xr.DataArray, mask: str, mask_from: xr.DataArray | None, la: str, lo: str
) -> xr.DataArray:
    """``da`` with NaN where the NaN mask of ``mask_from`` (or ``da``) says not ``mask``."""
    if mask not in ("land", "ocean"):
        raise InputError(f"select_region: mask={mask!r} is not 'land' or 'ocean'", param="mask")
    source = da if mask_from is None else check_dataarray(mask_from, "select_region mask_from")
    no_nan = InputError(
        f"select_region: mask={mask!r} on {da.name or 'data'!r}, which has no missing "
        "values to tell land from ocean: give mask_from=<a variable with NaN over land "
        "or sea, e.g. sea_surface_temperature>",
        param="mask",
    )
    if mask_from is not None:
        _same_grid(da, mask_from, la, lo)
    elif da.chunks is None and not np.isnan(np.asarray(da.values, dtype="f8")).any():
        raise no_nan
    valid = source.notnull()
    try:
        t = time_name(source)
    except InputError:
        t = None
    if t is not None:
        valid = valid.any(t)
    valid = valid.drop_vars([c for c in valid.coords if c not in (la, lo)])
    sn = str(source.attrs.get("standard_name", ""))
    valid_is = "land" if sn.startswith(("land_", "soil_")) else "ocean"
    keep = valid if mask == valid_is else ~valid
    if mask_from is None and keep.chunks is not None:
        keep = _raising_if_all(keep, valid, no_nan)
    return da.where(keep)


def _raising_if_all(keep: xr.DataArray, valid: xr.DataArray, error: InputError) -> xr.DataArray:
    """``keep``, whose computation raises ``error`` when ``valid`` holds no False: Dask
    data are only known to hold no NaN once computed, and reading them here would."""
    import dask.array

    def check(block: np.ndarray, everywhere: np.ndarray) -> np.ndarray:
        if bool(everywhere):
            raise error
        return block

    everywhere = dask.array.asarray(valid.data).all()
    return keep.copy(data=dask.array.map_blocks(check, keep.data, everywhere, dtype=bool))


def _same_grid(da: xr.DataArray, other: xr.DataArray, la: str, lo: str) -> None:
    """An InputError unless ``other`` has ``da``'s latitudes and longitudes."""
    ola, olo = horizontal_names(other)
    same = (
        other[ola].shape == da[la].shape
        and other[olo].shape == da[lo].shape
        and np.allclose(other[ola].values, da[la].values)
        and np.allclose(other[olo].values, da[lo].values)
    )
    if not same:
        raise InputError(
            f"select_region: mask_from ({other.name!r}) is not on the grid of "
            f"{da.name!r}: give a variable of the same dataset, before any region step",
            param="mask_from",
        )
