"""Map projections of a figure's maps: a recipe's ``plot:`` block, checked, and the maps drawn
in it with cartopy.

A recipe asks for a projection by the name a scientist knows it by::

    plot:
      projection: orthographic   # platecarree | robinson | mollweide | orthographic
      central_longitude: -30     #   | north_polar_stereo | south_polar_stereo
      central_latitude: 45       # orthographic only

:data:`PROJECTIONS` is the one list of them (each a :class:`Projection`: its cartopy class and
the options it takes); :func:`map_view` checks a ``plot:`` block against it before anything
runs, and :func:`default_view` reads config ``pangeo-hpc.plot`` for recipes without one.
``platecarree`` without a ``central_longitude`` is the longitude-by-latitude map that
matplotlib alone draws (:mod:`pangeo_hpc.write.figure_kinds`); every other view is drawn by
:func:`draw_projected` on cartopy's ``GeoAxes`` (the ``plot`` extra).

Nothing is downloaded: cartopy fetches Natural Earth only for its features
(``ax.coastlines()``, ``cartopy.feature``), which are never used here; the coastlines are the
package's own (:mod:`pangeo_hpc.write.coastlines`), projected point by point
(:mod:`pangeo_hpc.write.projected_cells`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.extras import require

if TYPE_CHECKING:
    import numpy as np
    from matplotlib.axes import Axes
    from matplotlib.collections import QuadMesh
    from matplotlib.image import AxesImage

__all__ = ["PROJECTIONS", "MapView", "Projection", "default_view", "draw_projected", "map_view"]

#: the keys of a recipe's ``plot:`` block
KEYS = ("projection", "central_longitude", "central_latitude", "boundary_latitude")
#: a regional map spanning at least this many degrees of longitude is shown whole
GLOBAL_SPAN = 350.0


@dataclass(frozen=True)
class Projection:
    """One projection, by the name a recipe gives it.

    Attributes
    ----------
    name : str
        As written in ``plot: {projection: NAME}``.
    crs : str
        The class of :mod:`cartopy.crs` that draws it.
    options : tuple of str
        The keys of :data:`KEYS` besides ``projection`` that it takes.
    pole : {0, 1, -1}
        Polar stereographic around the north (1) or south (-1) pole: a round map from the
        pole to ``boundary_latitude``.
    whole : bool
        Always shows its whole globe (orthographic: one hemisphere), whatever the data cover.

    Examples
    --------
    >>> PROJECTIONS["robinson"]
    Projection(name='robinson', crs='Robinson', options=('central_longitude',), pole=0, whole=False)
    """

    name: str
    crs: str
    options: tuple[str, ...] = ("central_longitude",)
    pole: int = 0
    whole: bool = False


#: the projections a recipe may name, by name
PROJECTIONS: dict[str, Projection] = {
    p.name: p
    for p in (
        Projection("platecarree", "PlateCarree"),
        Projection("robinson", "Robinson"),
        Projection("mollweide", "Mollweide"),
        Projection(
            "orthographic", "Orthographic", ("central_longitude", "central_latitude"), whole=True
        ),
        Projection(
            "north_polar_stereo", "NorthPolarStereo", ("central_longitude", "boundary_latitude"), 1
        ),
        Projection(
            "south_polar_stereo", "SouthPolarStereo", ("central_longitude", "boundary_latitude"), -1
        ),
    )
}


@dataclass(frozen=True)
class MapView:
    """How a figure's maps are projected (a recipe's ``plot:`` block, checked).

    Attributes
    ----------
    projection : str
        A name of :data:`PROJECTIONS`.
    central_longitude : float, optional
        Default: 0, or 180 for data across the date line.
    central_latitude : float, optional
        ``orthographic``: the latitude seen face on (default 0).
    boundary_latitude : float, optional
        Polar maps: their edge towards the equator (default: the data's, at most config
        ``pangeo-hpc.plot.boundary-latitude`` from the pole's side).

    Examples
    --------
    >>> view = MapView("orthographic", central_latitude=60.0)
    >>> type(view.crs()).__name__
    'Orthographic'
    """

    projection: str = "platecarree"
    central_longitude: float | None = None
    central_latitude: float | None = None
    boundary_latitude: float | None = None

    @property
    def is_round(self) -> bool:
        """A round map (a globe, a polar cap), about as high as it is wide."""
        spec = PROJECTIONS[self.projection]
        return bool(spec.pole) or spec.whole

    @property
    def plain(self) -> bool:
        """Longitude by latitude as matplotlib draws it alone (no cartopy needed)."""
        return self.projection == "platecarree" and self.central_longitude is None

    def crs(self, east: bool = False) -> Any:
        """The :mod:`cartopy.crs` projection; ``east``: the data lie across the date line
        (centred on 180 unless ``central_longitude`` says otherwise).

        Parameters
        ----------
        east : bool, optional
            The data lie across the date line.

        Returns
        -------
        cartopy.crs.Projection
            The projection.

        Examples
        --------
        >>> crs = MapView("robinson").crs(east=True)  # data across the date line
        >>> type(crs).__name__, crs.proj4_params["lon_0"]
        ('Robinson', 180.0)
        """
        require("plot", f"a map in the {self.projection} projection")
        import cartopy.crs as ccrs

        spec = PROJECTIONS[self.projection]
        kwargs: dict[str, float] = {
            "central_longitude": (
                self.central_longitude
                if self.central_longitude is not None
                else (180.0 if east else 0.0)
            )
        }
        if "central_latitude" in spec.options:
            kwargs["central_latitude"] = self.central_latitude or 0.0
        return getattr(ccrs, spec.crs)(**kwargs)


def _number(value: Any, key: str, low: float, high: float, where: str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not low <= value <= high:
        raise InputError(
            f"{where}: plot.{key} {value!r} must be a number from {low:g} to {high:g} (degrees)",
            param="plot",
        )
    return float(value)


#: each option's range in degrees
_RANGES = {
    "central_longitude": (-180.0, 360.0),
    "central_latitude": (-90.0, 90.0),
    "boundary_latitude": (-89.0, 89.0),
}


def map_view(block: Any, where: str = "plot") -> MapView | None:
    """Check a recipe's ``plot:`` block; ``None`` for none.

    Parameters
    ----------
    block : mapping or None
        ``{projection: NAME, central_longitude: ..., ...}`` (the keys of :data:`KEYS`).
    where : str
        What holds it, for the messages (``recipe 'era5-sst-mean'``).

    Returns
    -------
    MapView or None

    Raises
    ------
    InputError
        A key, a projection or a value not known, naming it and the choices.
    MissingExtraError
        A projection other than plain ``platecarree`` without cartopy (the ``plot`` extra).

    Examples
    --------
    >>> map_view({"projection": "robinson"}).projection
    'robinson'
    """
    if block is None:
        return None
    if not isinstance(block, dict):
        raise InputError(
            f"{where}: plot {block!r} must be a mapping such as {{projection: robinson}}",
            param="plot",
        )
    unknown = sorted(str(k) for k in set(block) - set(KEYS))
    if unknown:
        raise InputError(f"{where}: unknown plot key(s) {unknown}: use {list(KEYS)}", param="plot")
    name = block.get("projection", "platecarree")
    if name not in PROJECTIONS:
        raise InputError(
            f"{where}: plot.projection {name!r} is not one of {', '.join(PROJECTIONS)}: "
            "e.g. plot: {projection: robinson}",
            param="plot",
        )
    spec = PROJECTIONS[name]
    given = {k: v for k, v in block.items() if k != "projection" and v is not None}
    for key in given:
        if key not in spec.options:
            raise InputError(
                f"{where}: plot.{key} is not an option of {name}: it takes "
                f"{', '.join(spec.options)}",
                param="plot",
            )
    values = {k: _number(v, k, *_RANGES[k], where) for k, v in given.items()}
    bound = values.get("boundary_latitude")
    if bound is not None and bound * spec.pole <= 0:
        side = "north" if spec.pole > 0 else "south"
        raise InputError(
            f"{where}: plot.boundary_latitude {bound:g} is not in the {side}ern hemisphere "
            f"of {name}",
            param="plot",
        )
    view = MapView(projection=name, **values)
    if not view.plain:
        require("plot", f"plot: {{projection: {name}}}")
    return view


def default_view() -> MapView:
    """The view of a recipe without ``plot:``: config ``pangeo-hpc.plot.projection``.

    Returns
    -------
    MapView
        The view.

    Examples
    --------
    >>> default_view()  # config pangeo-hpc.plot.projection
    MapView(projection='platecarree', central_longitude=None, central_latitude=None,
            boundary_latitude=None)
    """
    return map_view({"projection": config.get("plot.projection")}, "config pangeo-hpc.plot") or (
        MapView()
    )


def _round_boundary(ax: Axes) -> None:
    import matplotlib.path as mpath
    import numpy as np  # (recipes are read without NumPy: the command line starts fast)

    theta = np.linspace(0, 2 * np.pi, 120)
    circle = mpath.Path(np.column_stack([np.sin(theta), np.cos(theta)]) * 0.5 + 0.5)
    ax.set_boundary(circle, transform=ax.transAxes)  # type: ignore[attr-defined]


def _frame(ax: Axes, x: np.ndarray, y: np.ndarray, view: MapView) -> tuple[float, float]:
    """Show the data's region: the whole globe of a global field (and always for
    orthographic), a polar cap from the pole, else the data's box. Returns the spans of
    longitude and latitude shown, in degrees (the graticule's spacing follows them)."""
    import cartopy.crs as ccrs
    import numpy as np  # (recipes are read without NumPy: the command line starts fast)

    spec = PROJECTIONS[view.projection]
    if spec.pole:
        edge = view.boundary_latitude
        if edge is None:
            limit = spec.pole * float(config.get("plot.boundary-latitude"))
            edge = max(float(np.nanmin(y)), limit) if spec.pole > 0 else min(np.nanmax(y), limit)
        low, high = sorted((float(edge), 90.0 * spec.pole))
        ax.set_extent([-180, 180, low, high], crs=ccrs.PlateCarree())  # type: ignore[attr-defined]
        _round_boundary(ax)
        return 360.0, high - low
    span = float(np.nanmax(x) - np.nanmin(x))
    if spec.whole or span >= GLOBAL_SPAN:
        ax.set_global()  # type: ignore[attr-defined]
        return 360.0, 180.0
    box = [float(np.nanmin(x)), float(np.nanmax(x)), float(np.nanmin(y)), float(np.nanmax(y))]
    ax.set_extent(box, crs=ccrs.PlateCarree())  # type: ignore[attr-defined]
    return box[1] - box[0], box[3] - box[2]


def draw_projected(
    ax: Axes, x: np.ndarray, y: np.ndarray, values: np.ndarray, view: MapView, style: dict
) -> AxesImage | QuadMesh:
    """Draw a map on the cartopy ``GeoAxes`` ``ax`` (made with ``view.crs()``): the values,
    the shipped coastlines over them and a graticule, framed on the data.

    Cells on evenly spaced 1-d coordinates are one image sampled pixel by pixel, others a
    mesh; the coastlines are projected point by point
    (:mod:`pangeo_hpc.write.projected_cells`).

    Parameters
    ----------
    ax : GeoAxes
        In ``view.crs(...)``.
    x, y : ndarray
        Longitudes and latitudes in degrees: 1-d (a regular grid, increasing) or 2-d
        (curvilinear).
    values : ndarray
        Latitude by longitude; NaN where missing (shown in the axes' face colour).
    view : MapView
    style : dict
        ``cmap``, ``vmin``, ``vmax``.

    Returns
    -------
    AxesImage or QuadMesh
        The cells, for the colour bar.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> view = MapView("robinson")
    >>> ax = plt.figure().add_subplot(projection=view.crs())
    >>> lon, lat, values = np.array([0.0, 10, 20]), np.array([0.0, 10]), np.ones((2, 3))
    >>> style = {"cmap": plt.get_cmap("viridis")}
    >>> type(draw_projected(ax, lon, lat, values, view, style)).__name__
    'AxesImage'
    >>> uneven = np.array([0.0, 10, 30])
    >>> type(draw_projected(ax, uneven, lat, values, view, style)).__name__
    'GeoQuadMesh'
    """
    import cartopy.crs as ccrs
    import numpy as np  # (recipes are read without NumPy: the command line starts fast)

    from pangeo_hpc.write.projected_cells import (
        draw_cells,
        draw_graticule,
        draw_projected_coastlines,
        evenly_spaced,
    )

    # missing cells transparent over the axes' grey (an image's, and a mesh's: cartopy draws
    # the cells that cross the projection's edge again, only with a transparent "bad" colour)
    style = style | {"cmap": style["cmap"].with_extremes(bad=(0.0, 0.0, 0.0, 0.0))}
    if evenly_spaced(x) and evenly_spaced(y):
        # framed on the cells' edges, set first: the image covers the frame
        dx, dy = (x[-1] - x[0]) / (x.size - 1), (y[-1] - y[0]) / (y.size - 1)
        edges_y = np.clip([y[0] - dy / 2, y[-1] + dy / 2], -90.0, 90.0)
        spans = _frame(ax, np.array([x[0] - dx / 2, x[-1] + dx / 2]), edges_y, view)
        cells: AxesImage | QuadMesh = draw_cells(ax, x, y, values, style)
    else:  # uneven or curvilinear: each cell a quad, rasterised in an SVG or a PDF
        cells = ax.pcolormesh(
            x, y, np.ma.masked_invalid(values), shading="nearest",
            transform=ccrs.PlateCarree(), rasterized=True, **style,
        )  # fmt: skip
        spans = _frame(ax, x, y, view)
    draw_projected_coastlines(ax)
    draw_graticule(ax, *spans)
    return cells
