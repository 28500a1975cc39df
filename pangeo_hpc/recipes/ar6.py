"""The IPCC WGI AR6 reference regions, shipped with the package: no download.

The vertices are the file ``IPCC-WGI-reference-regions-v4_coordinates.csv`` of the IPCC
WGI Atlas repository (Iturbide et al. 2020, https://doi.org/10.5194/essd-12-2959-2020),
CC BY 4.0, as published (see ``data/AR6_REGIONS_NOTICE.md`` next to it for the source
commit and the attribution). regionmask (``regionmask.defined_regions.ar6``) reads the
same regions from a shapefile it downloads at first use, which fails offline and on
compute nodes without internet; this module needs neither regionmask nor the network.

Each CSV row is one polygon: a region crossing 180 E is given as two rows, the second
with ``*`` after its acronym (``RAR`` and ``RAR*``), which here become the two parts of
one region, as in regionmask's shapefile. Regions are numbered in the file's order
(GIC 0, NWN 1, ..., SOO 57), as regionmask numbers them; ``Land`` and ``Land-Ocean``
regions are land (46), ``Ocean`` and ``Land-Ocean`` ones ocean (15), as
``regionmask.defined_regions.ar6.land`` and ``.ocean`` select them.

The polygons overlap in slivers (63 points of a 0.25-degree grid lie in two regions,
ESAF and MDG for example). regionmask's AR6 regions are a partition (``overlap=False``):
a point in several regions belongs to the one numbered last. :func:`cells` does the
same over all 58 regions, so each grid point is in at most one region and the cells of
``ar6:X`` are those of ``regionmask.defined_regions.ar6.all.mask_3D(...)`` for X.
"""

from __future__ import annotations

import csv
import difflib
import functools
import io
from dataclasses import dataclass
from importlib import resources
from typing import Literal

import numpy as np

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.polygons import polygon_mask

#: the prefix of an AR6 region's name in ``select_region``: ``"ar6:WNA"``
PREFIX = "ar6:"
#: the shipped file (package data of ``pangeo_hpc.recipes``)
CSV_FILE = "data/IPCC-WGI-reference-regions-v4_coordinates.csv"
#: for a result's ``references`` attribute (CC BY 4.0 asks for the attribution)
CITATION = (
    "IPCC WGI AR6 reference regions v4 (CC BY 4.0): Iturbide et al. 2020, Earth Syst. "
    "Sci. Data 12, 2959-2970, https://doi.org/10.5194/essd-12-2959-2020"
)

Ring = tuple[tuple[float, float], ...]


@dataclass(frozen=True, slots=True)
class Region:
    """One AR6 reference region.

    Attributes
    ----------
    number : int
        Its number in the set of all 58 regions (regionmask's).
    abbrev : str
        Its acronym, ``"WNA"``.
    name : str
        Its name, ``"W.North-America"``.
    surface : {"Land", "Ocean", "Land-Ocean"}
        The IPCC's type of the region.
    parts : tuple of rings
        The polygon's parts, each a ring of (longitude, latitude) in -180..180.

    Examples
    --------
    >>> wna = region("WNA")
    >>> wna.number, wna.abbrev, wna.name, wna.surface
    (3, 'WNA', 'W.North-America', 'Land')
    """

    number: int
    abbrev: str
    name: str
    surface: str
    parts: tuple[Ring, ...]

    @property
    def key(self) -> str:
        """What ``select_region(name=...)`` takes: ``"ar6:WNA"``."""
        return PREFIX + self.abbrev

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """West, south, east, north of all its parts."""
        xy = np.concatenate([np.asarray(p) for p in self.parts])
        return (*xy.min(axis=0).tolist(), *xy.max(axis=0).tolist())

    @property
    def label(self) -> str:
        """``"ar6:WNA (W.North-America)"``, for a result's ``long_name``."""
        return f"{self.key} ({self.name})"


@functools.cache
def regions(kind: Literal["all", "land", "ocean"] = "all") -> tuple[Region, ...]:
    """The AR6 regions: all 58, or those regionmask's ``ar6.land`` / ``ar6.ocean`` hold.

    Parameters
    ----------
    kind : Literal['all', 'land', 'ocean'], optional
        ``all``, ``land`` or ``ocean``.

    Returns
    -------
    tuple[Region, ...]
        The regions, by number.

    Raises
    ------
    InputError
        For another ``kind``.

    Examples
    --------
    >>> len(regions()), len(regions("land")), len(regions("ocean")), regions()[3].label
    (58, 46, 15, 'ar6:WNA (W.North-America)')
    """
    if kind != "all":
        if kind not in ("land", "ocean"):
            raise InputError(f"AR6 regions: kind={kind!r} is not 'all', 'land' or 'ocean'")
        return tuple(r for r in regions() if kind.capitalize() in r.surface)
    text = resources.files("pangeo_hpc.recipes").joinpath(CSV_FILE).read_text("utf-8")
    rows = list(csv.reader(io.StringIO(text)))[1:]
    parts: dict[str, list[Ring]] = {}
    about: dict[str, tuple[str, str]] = {}
    for row in rows:
        abbrev = row[3].strip().rstrip("*")
        vertices = [cell.split("|") for cell in row[4:] if cell.strip()]
        parts.setdefault(abbrev, []).append(tuple((float(x), float(y)) for x, y in vertices))
        about.setdefault(abbrev, (row[2].strip(), row[1].strip()))
    return tuple(
        Region(number, abbrev, about[abbrev][0], about[abbrev][1], tuple(parts[abbrev]))
        for number, abbrev in enumerate(parts)
    )


def region(name: str) -> Region:
    """The region named ``"ar6:WNA"``: by acronym or name (any case), or number.

    Parameters
    ----------
    name : str
        ``ar6:`` and an acronym, a name or a number.

    Returns
    -------
    Region
        The region.

    Raises
    ------
    InputError
        An unknown name, listing the closest names (or all acronyms).

    Examples
    --------
    >>> region("ar6:wna").label, region("ar6:Mediterranean").abbrev, region("ar6:57").abbrev
    ('ar6:WNA (W.North-America)', 'MED', 'SOO')
    """
    key = name[len(PREFIX) :] if name.lower().startswith(PREFIX) else name
    everything = regions()
    if key.strip().isdigit() and int(key) < len(everything):
        return everything[int(key)]
    by_key = {r.abbrev.lower(): r for r in everything}
    by_key.update({r.name.lower(): r for r in everything})
    if key.strip().lower() in by_key:
        return by_key[key.strip().lower()]
    labels = {r.abbrev.lower(): r.label for r in everything}
    labels.update({r.name.lower(): r.label for r in everything})
    close = difflib.get_close_matches(key.strip().lower(), list(labels), n=4, cutoff=0.5)
    hint = (
        "did you mean " + ", ".join(dict.fromkeys(labels[c] for c in close))
        if close
        else "give one of " + " ".join(r.abbrev for r in everything)
    )
    raise InputError(f"select_region: name={name!r} is not an AR6 region: {hint}", param="name")


def cells(found: Region, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """The points of a latitude/longitude grid in region ``found``, as regionmask's
    ``ar6.all`` assigns them: inside its polygon and in no region numbered after it.

    Parameters
    ----------
    found : Region
        One of :func:`regions`.
    lon, lat : 1-D array
        The grid's longitudes (either convention) and latitudes (either order).

    Returns
    -------
    ndarray of bool, shape (lat.size, lon.size)
        Read-only: the last few grids' masks are kept (an incremental run selects the
        same region on the same grid once per file; 0.1 s each at 0.25 degrees).

    Examples
    --------
    >>> cells(region("ar6:WNA"), np.array([240.0, 250.0, 260.0]), np.array([40.0])).tolist()
    [[True, True, False]]
    """
    lon, lat = np.asarray(lon, dtype="f8"), np.asarray(lat, dtype="f8")
    return _cells(found.number, lon.tobytes(), lat.tobytes())


@functools.lru_cache(maxsize=8)
def _cells(number: int, lon_bytes: bytes, lat_bytes: bytes) -> np.ndarray:
    lon, lat = np.frombuffer(lon_bytes, "f8"), np.frombuffer(lat_bytes, "f8")
    found = regions()[number]
    inside = polygon_mask([np.asarray(p) for p in found.parts], lon, lat)
    west, south, east, north = found.bounds
    for later in regions()[number + 1 :]:
        w, s, e, n = later.bounds
        if w <= east and west <= e and s <= north and south <= n:
            inside &= ~polygon_mask([np.asarray(p) for p in later.parts], lon, lat)
    inside.flags.writeable = False
    return inside
