"""Known answers of demo trees, computed without the package's recipes.

The standard Nino3.4 box is written here, not imported from the package; area means use
numpy weights from the cell bounds (``sin(north edge) - sin(south edge)``) and read the
files with h5py, so a recipe that averages another box, or weights cells otherwise, fails
the tests that compare with these numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from pangeo_hpc.demo import DemoSpec, expected

#: the standard Nino3.4 box: 5S-5N, 170W-120W (degrees east 190-240)
NINO34_BOX = ((-5.0, 5.0), (190.0, 240.0))
#: boxes a wrong index could average: Nino3, Nino4, Nino3.4 moved 10 degrees east and west
WRONG_BOXES = {
    "Nino3": ((-5.0, 5.0), (210.0, 270.0)),
    "Nino4": ((-5.0, 5.0), (160.0, 210.0)),
    "Nino3.4 10 degrees east": ((-5.0, 5.0), (200.0, 250.0)),
    "Nino3.4 10 degrees west": ((-5.0, 5.0), (180.0, 230.0)),
}


def known_index(
    spec: DemoSpec, time0: np.ndarray, *, box=NINO34_BOX, smooth: int = 1
) -> np.ndarray:
    """The noise-free Nino3.4-style index of ``box`` on the days ``time0`` of a tree made
    with ``spec``: the generator's known signal (ENSO-like mode and warming) averaged to
    months, less each calendar month's mean, and a centred running mean of ``smooth``."""
    days = pd.DatetimeIndex(time0)
    signal = expected(spec.resolved(), days.values.astype("datetime64[h]"), box=box)
    monthly = pd.Series(signal["box_signal_K"], index=days).resample("MS").mean()
    index = monthly - monthly.groupby(monthly.index.month).transform("mean")
    return index.rolling(smooth, center=True).mean().to_numpy()


def band_weights(lat: np.ndarray) -> np.ndarray:
    """Relative areas of the latitude bands of a regular grid: edges halfway between the
    centres, the outermost ones at most at the poles (half cells there)."""
    lat = np.asarray(lat, dtype="f8")
    half = abs(lat[1] - lat[0]) / 2
    north = np.deg2rad(np.minimum(lat + half, 90.0))
    south = np.deg2rad(np.maximum(lat - half, -90.0))
    return np.sin(north) - np.sin(south)


#: m, the sphere CDO uses for cell areas (written here, not imported from the package)
EARTH_RADIUS = 6_371_000.0


def cell_areas(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Exact areas in m² of the cells of a regular lat/lon grid, ``(lat, lon)`` in the
    order given: the spherical band, ``R² Δλ (sin φ_north - sin φ_south)``, with edges
    halfway between centres, half cells at the poles (:func:`band_weights`), and ``Δλ``
    the longitudes' spacing (a global grid or a region, in any order)."""
    lon = np.asarray(lon, dtype="f8")
    spacing = np.min(np.diff(np.sort(np.mod(lon, 360.0))))
    width = np.full(lon.size, np.deg2rad(spacing))
    return EARTH_RADIUS**2 * np.outer(band_weights(lat), width)


def daily_global_means(files: Iterable[Path], weights=band_weights) -> list[np.ndarray]:
    """Per file, the area-weighted mean over the ocean (finite values) of each time step."""
    out = []
    for path in files:
        with h5py.File(path, "r") as h5:
            x = h5["sea_surface_temperature"][:].astype("f8")
            w = np.broadcast_to(weights(h5["lat"][:])[:, None], x.shape[1:]).ravel()
        ok = np.isfinite(x).reshape(len(x), -1)
        values = np.where(ok, x.reshape(len(x), -1), 0.0)
        out.append(values @ w / (ok @ w))
    return out


def month_files(root: Path, start: str, end: str) -> list[Path]:
    """The month files of an era5-pds tree from ``start`` to ``end`` (``YYYY-MM``)."""
    return [
        root / f"{m.year:04d}" / f"{m.month:02d}" / "data" / "sea_surface_temperature.nc"
        for m in pd.period_range(start, end, freq="M")
    ]
