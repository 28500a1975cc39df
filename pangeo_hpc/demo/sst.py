"""The synthetic SST: its grid, land mask and the terms whose answers are known.

``sea_surface_temperature(time0, lat, lon)`` is float32 kelvin, NaN over land and sea ice, the
sum of:

* a meridional gradient (about 27 °C at the equator, freezing near the poles) with a
  western-Pacific warm pool;
* a seasonal cycle, opposite in the two hemispheres;
* a linear warming ``trend`` K/decade whose map has a pattern but whose ocean-area mean
  is exactly ``trend``;
* an ENSO-like oscillation in three bands of the equatorial Pacific (:data:`ENSO_BANDS`):
  the Nino3.4 box's own longitudes, and stronger copies a quarter period early and late
  west and east of it, so that any other box (Nino3, Nino4, Nino3.4 moved by 10 degrees)
  gives another series; each band's ocean-area mean is zero, so it does not bias the
  global trend;
* independent Gaussian noise.

Land comes from the 1 km GLOBE land mask (package ``global-land-mask``); sea ice is where
the noise-free seasonal SST falls below -1.8 °C. The other demo variables share the grid,
the land mask and the seasonal phase (:func:`time_factors`); the 2 m temperature's ocean is
this SST's (:meth:`Fields.ocean`).
"""

from __future__ import annotations

import numpy as np

from pangeo_hpc.demo.spec import DemoSpec
from pangeo_hpc.extras import require
from pangeo_hpc.inputs.periods import Month
from pangeo_hpc.recipes.years import DAYS_PER_YEAR, decimal_years

FREEZING = 271.35  # K, where sea water freezes
EPOCH = np.datetime64("1900-01-01T00:00", "h")
TREND_REFERENCE = np.datetime64("2000-01-01T00:00", "h")

#: The ENSO-like mode, band by band: westmost and eastmost longitude (degrees east, of the
#: cell centres; the Nino3.4 band includes both ends, the others not the end they share
#: with it), amplitude (times ``enso_amplitude``) and phase (fraction of a period). The
#: Nino3.4 longitudes (170W-120W) carry the mode itself; the rest of Nino4 (160E-170W)
#: and of Nino3 (120W-90W) carry twice as strong copies a quarter period early and late.
ENSO_BANDS = (
    (190.0, 240.0, 1.0, 0.0),
    (160.0, 190.0, 2.0, -0.25),
    (240.0, 270.0, 2.0, 0.25),
)


def grid(resolution: float) -> tuple[np.ndarray, np.ndarray]:
    """ERA5's grid at ``resolution``: latitude descending and including the poles.

    Parameters
    ----------
    resolution : float
        Grid spacing (degrees).

    Returns
    -------
    (ndarray, ndarray)
        Latitudes (descending, from 90) and longitudes (from 0).

    Examples
    --------
    >>> from pangeo_hpc.demo.sst import grid
    >>> lat, lon = grid(45.0)
    >>> lat, lon.size
    (array([ 90.,  45.,   0., -45., -90.], dtype=float32), 8)
    """
    n = round(180 / resolution)
    lat = np.linspace(90.0, -90.0, n + 1)
    lon = np.arange(round(360 / resolution)) * resolution
    return lat.astype("f4"), lon.astype("f4")


#: the land masks of the grids this process has made, by their latitudes and longitudes:
#: ``global_land_mask`` unpacks its whole 1 km globe on import (about 1 GB, 5-10 s), so a
#: process does that at most once, and the processes of :func:`~pangeo_hpc.demo.generate`
#: are handed their parent's masks (:func:`known_land_masks`) and never do it
_LAND_MASKS: dict[tuple[bytes, bytes], np.ndarray] = {}


def land_mask(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """True over land, from the GLOBE 1 km mask sampled at the cell centres.

    Parameters
    ----------
    lat : np.ndarray
        Latitudes of the cell centres (degrees north).
    lon : np.ndarray
        Longitudes of the cell centres (degrees east).

    Returns
    -------
    np.ndarray
        Boolean, shape ``(lat, lon)``.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.demo.sst import land_mask
    >>> land_mask(np.array([48.85, 0.0]), np.array([2.35, 330.0]))  # Paris; the Atlantic
    array([[ True, False],
           [False, False]])
    """
    key = (np.asarray(lat).tobytes(), np.asarray(lon).tobytes())
    if key not in _LAND_MASKS:
        require("demo", "the demo data's land mask")
        from global_land_mask import globe

        la, lo = np.meshgrid(lat.astype("f8"), lon.astype("f8"), indexing="ij")
        lo = np.where(lo >= 180.0, lo - 360.0, lo)
        _LAND_MASKS[key] = np.asarray(globe.is_land(np.clip(la, -89.999, 89.999), lo))
    return _LAND_MASKS[key].copy()


def known_land_masks() -> dict[tuple[bytes, bytes], np.ndarray]:
    """The land masks this process has made (see :func:`remember_land_masks`).

    Returns
    -------
    dict[tuple[bytes, bytes], np.ndarray]
        The masks by the bytes of their latitudes and longitudes.

    Examples
    --------
    >>> from pangeo_hpc.demo.sst import grid, known_land_masks, land_mask
    >>> lat, lon = grid(10.0)
    >>> mask = land_mask(lat, lon)
    >>> (lat.tobytes(), lon.tobytes()) in known_land_masks()
    True
    """
    return dict(_LAND_MASKS)


def remember_land_masks(masks: dict[tuple[bytes, bytes], np.ndarray]) -> None:
    """Take another process's land masks (:func:`known_land_masks`) as this one's.

    Parameters
    ----------
    masks : dict[tuple[bytes, bytes], np.ndarray]
        Masks by the bytes of their latitudes and longitudes, from
        :func:`known_land_masks`.

    Examples
    --------
    >>> from pangeo_hpc.demo.sst import grid, known_land_masks, land_mask, remember_land_masks
    >>> lat, lon = grid(10.0)
    >>> mask = land_mask(lat, lon)
    >>> remember_land_masks(known_land_masks())  # in a worker, the parent's masks
    >>> bool((land_mask(lat, lon) == mask).all())
    True
    """
    _LAND_MASKS.update(masks)


class Fields:
    """The time-independent maps of the synthetic SST on one grid.

    Parameters
    ----------
    spec : DemoSpec
        The demo's settings (grid, seed).

    Examples
    --------
    >>> from pangeo_hpc.demo.spec import DemoSpec
    >>> from pangeo_hpc.demo.sst import Fields
    >>> fields = Fields(DemoSpec(resolution=10.0).resolved())
    >>> fields.lat.size, fields.lon.size, bool(fields.land.any())
    (19, 36, True)
    """

    def __init__(self, spec: DemoSpec) -> None:
        self.spec = spec
        self.lat, self.lon = grid(float(spec.resolution))  # type: ignore[arg-type]
        la = np.deg2rad(self.lat.astype("f8"))[:, None]
        lo = self.lon.astype("f8")[None, :]
        self.land = land_mask(self.lat, self.lon)
        ocean_w = np.where(self.land, 0.0, np.cos(la) + 0 * lo)
        warm_pool = 1.2 * np.cos(np.deg2rad(lo - 150.0)) * np.exp(-((np.rad2deg(la) / 20) ** 2))
        self.base = FREEZING - 2.5 + 31.5 * np.cos(la) ** 2 + warm_pool
        self.seasonal = 3.0 * np.sin(2 * np.abs(la)) * np.sign(la) + 0 * lo
        pattern = 0.6 * np.cos(2 * la) + 0.4 * np.sin(np.deg2rad(lo)) * np.cos(la)
        self.trend_map = float(spec.trend) * (1 + 0.5 * zero_mean(pattern, ocean_w))  # type: ignore[arg-type]
        taper = np.exp(-((np.rad2deg(la) / 8) ** 2))
        self.enso_maps = np.stack(
            [zero_mean(taper * _in_band(lo, west, east), ocean_w) for west, east, *_ in ENSO_BANDS]
        )

    def ocean(self) -> np.ndarray:
        """True where the noise-free SST is valid at some time of the year.

        That is off land and above freezing at the peak of the seasonal cycle: the cells
        that are not NaN in a whole year of the SST (the seasonal term peaks at +-1, and
        at the demo resolutions no ocean cell comes within 0.002 K of freezing there, so
        daily samples find it). The rest is land and year-round sea ice.

        Returns
        -------
        np.ndarray
            Boolean, ``(lat, lon)``.

        Examples
        --------
        >>> from pangeo_hpc.demo.spec import DemoSpec
        >>> from pangeo_hpc.demo.sst import Fields
        >>> fields = Fields(DemoSpec(resolution=10.0).resolved())
        >>> ocean = fields.ocean()
        >>> ocean.shape, bool((ocean & fields.land).any())
        ((19, 36), False)
        """
        return ~self.land & (self.base + np.abs(self.seasonal) >= FREEZING)

    def times(self, month: Month) -> np.ndarray:
        """Hours since 1900-01-01 of every time step of ``month``.

        Parameters
        ----------
        month : Month
            The year and month.

        Returns
        -------
        np.ndarray
            The hours.

        Examples
        --------
        >>> from pangeo_hpc.demo.spec import DemoSpec
        >>> from pangeo_hpc.demo.sst import Fields
        >>> from pangeo_hpc.inputs.periods import Month
        >>> fields = Fields(DemoSpec(resolution=10.0, frequency="daily").resolved())
        >>> days = fields.times(Month(2000, 2))
        >>> days[0], len(days)
        (np.datetime64('2000-02-01T00','h'), 29)
        """
        start = np.datetime64(str(month), "h")
        stop = np.datetime64(str(month.next()), "h")
        step = np.timedelta64(1 if self.spec.frequency == "hourly" else 24, "h")
        return np.arange(start, stop, step)

    def sst(self, times: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """SST (K, float32) at ``times`` (datetime64[h]); ``rng=None`` gives it noise-free.

        Parameters
        ----------
        times : np.ndarray
            Times (datetime64[h]).
        rng : np.random.Generator or None
            The random numbers of the noise; ``None``: noise-free.

        Returns
        -------
        np.ndarray
            Shape ``(time, lat, lon)``.

        Examples
        --------
        >>> from pangeo_hpc.demo.spec import DemoSpec
        >>> from pangeo_hpc.demo.sst import Fields
        >>> from pangeo_hpc.inputs.periods import Month
        >>> fields = Fields(DemoSpec(resolution=10.0, frequency="daily").resolved())
        >>> sst = fields.sst(fields.times(Month(2000, 1)), rng=None)  # noise-free
        >>> sst.shape, sst.dtype
        ((31, 19, 36), dtype('float32'))
        """
        seas, trend, enso = time_factors(times, self.spec)
        clean = self.base + seas[:, None, None] * self.seasonal
        ice = clean < FREEZING
        out = clean + trend[:, None, None] * self.trend_map
        for k, enso_map in enumerate(self.enso_maps):
            out += enso[:, k, None, None] * enso_map
        if rng is not None and float(self.spec.noise) > 0:  # type: ignore[arg-type]
            out += float(self.spec.noise) * rng.standard_normal(out.shape, dtype="f4")  # type: ignore[arg-type]
        out[ice | self.land[None]] = np.nan
        return out.astype("f4")


def _in_band(lon: np.ndarray, west: float, east: float) -> np.ndarray:
    """1 at longitudes of the ENSO band from ``west`` to ``east``, else 0 (:data:`ENSO_BANDS`)."""
    nino34_west, nino34_east = ENSO_BANDS[0][:2]
    low = lon >= west if west != nino34_east else lon > west
    high = lon <= east if east != nino34_west else lon < east
    return (low & high).astype("f8")


def time_factors(times: np.ndarray, spec: DemoSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seasonal phase, years of warming (in decades) and ENSO amplitude at each time.

    The ENSO amplitude has one column per band of :data:`ENSO_BANDS` (shape ``(time, 3)``).

    Parameters
    ----------
    times : np.ndarray
        The times (datetime64).
    spec : DemoSpec
        The demo's settings (its seed and years).

    Returns
    -------
    (ndarray, ndarray, ndarray)
        The seasonal phase (radians), the decades since the start, the ENSO amplitudes.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.demo.spec import DemoSpec
    >>> from pangeo_hpc.demo.sst import time_factors
    >>> t = np.array(["2000-01-01T00", "2010-01-01T00"], dtype="datetime64[h]")
    >>> seasonal, decades, enso = time_factors(t, DemoSpec().resolved())
    >>> decades.round(3), enso.shape
    (array([0., 1.]), (2, 3))
    """
    doy = ((times - EPOCH).astype("f8") / 24.0) % DAYS_PER_YEAR
    seas = np.cos(2 * np.pi * (doy - 228.0) / DAYS_PER_YEAR)
    decades = decimal_years(times, TREND_REFERENCE, unit="h") / 10.0
    years_1979 = decimal_years(times, EPOCH, unit="h") - 79.0
    cycles = years_1979[:, None] / float(spec.enso_period)  # type: ignore[arg-type]
    amplitude, phase = (np.array([band[i] for band in ENSO_BANDS]) for i in (2, 3))
    enso = float(spec.enso_amplitude) * amplitude * np.sin(2 * np.pi * (cycles + phase))  # type: ignore[arg-type]
    return seas, decades, enso


def zero_mean(pattern: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``pattern`` scaled to peak 1 minus its weighted mean, so its ocean-area mean is 0.

    Parameters
    ----------
    pattern : np.ndarray
        A map.
    weights : np.ndarray
        Area weights, 0 over land.

    Returns
    -------
    np.ndarray
        The rescaled map.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.demo.sst import zero_mean
    >>> zero_mean(np.array([1.0, 2.0, 6.0]), np.array([1.0, 1.0, 0.0]))
    array([-0.08333333,  0.08333333,  0.75      ])
    """
    p = pattern / np.abs(pattern).max()
    return p - (p * weights).sum() / weights.sum()
