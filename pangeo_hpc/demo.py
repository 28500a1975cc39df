"""Synthetic SST in the exact layout of the ERA5 bucket ``era5-pds``, with known answers.

Every month is one NetCDF4 file ``{YYYY}/{MM}/data/sea_surface_temperature.nc`` holding
``sea_surface_temperature(time0, lat, lon)``: float32 kelvin, NaN over land and sea ice,
latitude from +90 to -90, longitude from 0 to 360 - resolution, zlib level 1 + shuffle.

The field is the sum of terms whose answers are known exactly:

* a meridional gradient (about 27 °C at the equator, freezing near the poles) with a
  western-Pacific warm pool;
* a seasonal cycle, opposite in the two hemispheres;
* a linear warming ``trend`` K/decade whose map has a pattern but whose ocean-area mean
  is exactly ``trend``;
* an ENSO-like oscillation centred in the Nino3.4 box (its ocean-area mean is zero, so it
  does not bias the global trend);
* independent Gaussian noise.

Land comes from the 1 km GLOBE land mask (package ``global-land-mask``); sea ice is where
the noise-free seasonal SST falls below -1.8 °C. The same seed gives the same bytes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
from dask.system import CPU_COUNT

from . import config
from .errors import InputError
from .layout import month_path
from .periods import Month, months

VARIABLE = "sea_surface_temperature"
FREEZING = 271.35  # K, where sea water freezes
EPOCH = np.datetime64("1900-01-01T00:00", "h")
TREND_REFERENCE = np.datetime64("2000-01-01T00:00", "h")
MANIFEST = "demo-manifest.json"
_HOURS_PER_YEAR = 365.2425 * 24


@dataclass(frozen=True)
class DemoSpec:
    """What the generator makes; ``None`` fields come from the ``pangeo-hpc.demo`` config."""

    resolution: float | None = None
    frequency: str | None = None
    start: str | None = None
    end: str | None = None
    seed: int | None = None
    trend: float | None = None
    enso_amplitude: float | None = None
    enso_period: float | None = None
    noise: float | None = None
    hdf5_chunks: tuple[int, int, int] | None = field(default=None)

    def resolved(self) -> DemoSpec:
        """Fill unset fields from config and check every value."""
        values = {k: config.get(f"demo.{k.replace('_', '-')}", v) for k, v in asdict(self).items()}
        values["start"], values["end"] = str(values["start"]), str(values["end"])
        values["hdf5_chunks"] = tuple(int(c) for c in values["hdf5_chunks"])
        spec = DemoSpec(**values)
        spec._check()
        return spec

    def _check(self) -> None:
        res = float(self.resolution)  # type: ignore[arg-type]
        if not (0 < res <= 10 and abs(180 / res - round(180 / res)) < 1e-9):
            raise InputError(
                f"resolution {self.resolution!r} must divide 180 degrees, e.g. 0.25 or 1.0"
            )
        if self.frequency not in ("daily", "hourly"):
            raise InputError(f"frequency {self.frequency!r} must be 'daily' or 'hourly'")
        if len(self.hdf5_chunks or ()) != 3 or min(self.hdf5_chunks or (0,)) < 1:
            raise InputError(f"hdf5 chunks {self.hdf5_chunks!r} must be three positive sizes")
        if float(self.noise) < 0 or float(self.enso_period) <= 0:  # type: ignore[arg-type]
            raise InputError("noise must be >= 0 and enso_period > 0")
        months(self.start, self.end)


def grid(resolution: float) -> tuple[np.ndarray, np.ndarray]:
    """ERA5's grid at ``resolution``: latitude descending and including the poles."""
    n = round(180 / resolution)
    lat = np.linspace(90.0, -90.0, n + 1)
    lon = np.arange(round(360 / resolution)) * resolution
    return lat.astype("f4"), lon.astype("f4")


def land_mask(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """True over land, from the GLOBE 1 km mask sampled at the cell centres."""
    from global_land_mask import globe

    la, lo = np.meshgrid(lat.astype("f8"), lon.astype("f8"), indexing="ij")
    lo = np.where(lo >= 180.0, lo - 360.0, lo)
    return np.asarray(globe.is_land(np.clip(la, -89.999, 89.999), lo))


class Fields:
    """The time-independent maps of the synthetic SST on one grid."""

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
        self.trend_map = float(spec.trend) * (1 + 0.5 * _zero_mean(pattern, ocean_w))  # type: ignore[arg-type]
        enso = np.exp(-((np.rad2deg(la) / 8) ** 2) - ((lo - 225.0) / 35) ** 2)
        self.enso_map = _zero_mean(enso, ocean_w)

    def times(self, month: Month) -> np.ndarray:
        """Hours since 1900-01-01 of every time step of ``month``."""
        start = np.datetime64(str(month), "h")
        stop = np.datetime64(str(month.next()), "h")
        step = np.timedelta64(1 if self.spec.frequency == "hourly" else 24, "h")
        return np.arange(start, stop, step)

    def sst(self, times: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """SST (K, float32) at ``times`` (datetime64[h]); ``rng=None`` gives it noise-free."""
        seas, trend, enso = time_factors(times, self.spec)
        clean = self.base + seas[:, None, None] * self.seasonal
        ice = clean < FREEZING
        out = clean + trend[:, None, None] * self.trend_map + enso[:, None, None] * self.enso_map
        if rng is not None and float(self.spec.noise) > 0:  # type: ignore[arg-type]
            out += float(self.spec.noise) * rng.standard_normal(out.shape, dtype="f4")  # type: ignore[arg-type]
        out[ice | self.land[None]] = np.nan
        return out.astype("f4")


def time_factors(times: np.ndarray, spec: DemoSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seasonal phase, years of warming (in decades) and ENSO amplitude at each time."""
    hours = (times - EPOCH).astype("f8")
    doy = (hours / 24.0) % 365.2425
    seas = np.cos(2 * np.pi * (doy - 228.0) / 365.2425)
    decades = (times - TREND_REFERENCE).astype("f8") / _HOURS_PER_YEAR / 10.0
    years_1979 = hours / _HOURS_PER_YEAR - 79.0
    enso = float(spec.enso_amplitude) * np.sin(2 * np.pi * years_1979 / float(spec.enso_period))  # type: ignore[arg-type]
    return seas, decades, enso


def _zero_mean(pattern: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``pattern`` scaled to peak 1 minus its weighted mean, so its ocean-area mean is 0."""
    p = pattern / np.abs(pattern).max()
    return p - (p * weights).sum() / weights.sum()


def expected(spec: DemoSpec, times: np.ndarray) -> dict[str, Any]:
    """Known answers: the global-mean trend, and the ENSO signal in the Nino3.4 box."""
    from .recipes.indices import NINO34

    f = Fields(spec)
    lat, lon = f.lat.astype("f8"), f.lon.astype("f8")
    box = np.ix_(
        (lat >= NINO34["lat"][0]) & (lat <= NINO34["lat"][1]),
        (lon >= NINO34["lon"][0]) & (lon <= NINO34["lon"][1]),
    )
    w = np.cos(np.deg2rad(lat))[:, None] * np.ones_like(lon)[None, :]
    ocean = ~f.land
    box_pattern = (f.enso_map * w * ocean)[box].sum() / (w * ocean)[box].sum()
    _, _, enso = time_factors(times, spec)
    return {
        "trend_K_per_decade": float(spec.trend),  # type: ignore[arg-type]
        "nino34_signal_K": enso * box_pattern,
    }


def _write_month(root: str, spec: DemoSpec, month: Month) -> str:
    """Write one month atomically (temporary name, then rename); return its path."""
    import netCDF4

    f = Fields(spec)
    path = month_path(root, VARIABLE, month)
    path.parent.mkdir(parents=True, exist_ok=True)
    times = f.times(month)
    chunks = tuple(
        min(c, n)
        for c, n in zip(spec.hdf5_chunks, (len(times), f.lat.size, f.lon.size), strict=True)
    )  # type: ignore[arg-type]
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with netCDF4.Dataset(tmp, "w", format="NETCDF4") as nc:
            nc.createDimension("time0", len(times))
            nc.createDimension("lat", f.lat.size)
            nc.createDimension("lon", f.lon.size)
            v = nc.createVariable("lat", "f4", ("lat",))
            v.setncatts({"units": "degrees_north", "long_name": "latitude"})
            v[:] = f.lat
            v = nc.createVariable("lon", "f4", ("lon",))
            v.setncatts({"units": "degrees_east", "long_name": "longitude"})
            v[:] = f.lon
            v = nc.createVariable("time0", "i4", ("time0",))
            v.setncatts(
                {
                    "units": "hours since 1900-01-01 00:00:00.0",
                    "long_name": "time",
                    "standard_name": "time",
                    "calendar": "gregorian",
                }
            )
            v[:] = (times - EPOCH).astype("i4")
            sst = nc.createVariable(
                VARIABLE,
                "f4",
                ("time0", "lat", "lon"),
                zlib=True,
                complevel=1,
                shuffle=True,
                chunksizes=chunks,
                fill_value=np.float32(np.nan),
            )
            sst.set_auto_mask(False)
            sst.setncatts(
                {
                    "units": "K",
                    "long_name": "Sea surface temperature",
                    "standard_name": "sea_surface_temperature",
                    "nameECMWF": "Sea surface temperature",
                    "nameCDM": "Sea_surface_temperature_surface",
                    "shortNameECMWF": "sst",
                    "product_type": "analysis",
                }
            )
            step = chunks[0]
            for i in range(0, len(times), step):
                rng = np.random.default_rng([int(spec.seed), month.year, month.month, i])  # type: ignore[arg-type]
                sst[i : i + step] = f.sst(times[i : i + step], rng)
            nc.setncatts(
                {
                    "source": "Reanalysis (synthetic: pangeo-hpc demo data)",
                    "institution": "ECMWF",
                    "title": "ERA5 forecasts",
                    "history": "generated by python -m pangeo_hpc.run demo-data",
                }
            )
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return str(path)


def generate(
    out: str | Path,
    spec: DemoSpec | None = None,
    *,
    workers: int | None = None,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> list[Path]:
    """Write demo data for every month of the spec under ``out``; skip months already there.

    Parameters
    ----------
    out : path
        Root of the era5-pds style tree (created if needed).
    spec : DemoSpec, optional
        What to make; unset fields come from the ``pangeo-hpc.demo`` config.
    workers : int, optional
        Processes writing months in parallel (default: one per core).
    overwrite : bool
        Rewrite months that already exist. Without it, a tree made with other settings is
        an error rather than a silent mixture.
    progress : callable, optional
        Called with ``(done, total)`` after each month.
    """
    spec = (spec or DemoSpec()).resolved()
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    manifest = root / MANIFEST
    settings = {k: v for k, v in asdict(spec).items() if k not in ("start", "end")}
    settings["hdf5_chunks"] = list(settings["hdf5_chunks"])
    if manifest.exists() and not overwrite:
        old = json.loads(manifest.read_text())
        if old.get("settings") != settings:
            raise InputError(
                f"{str(root)!r} holds demo data made with other settings "
                f"({old.get('settings')}): write to another --out, or pass --overwrite"
            )
    todo = [
        m
        for m in months(spec.start, spec.end)
        if overwrite or not month_path(root, VARIABLE, m).exists()
    ]
    _write_manifest(manifest, spec, settings)
    nproc = workers or CPU_COUNT  # this process's CPU share (cgroups), not the host's
    done = 0
    if progress:
        progress(0, len(todo))
    if nproc == 1 or len(todo) <= 1:  # no worker processes to start
        results = map(_write_month, [str(root)] * len(todo), [spec] * len(todo), todo)
        for _ in results:
            done += 1
            if progress:
                progress(done, len(todo))
    else:
        with ProcessPoolExecutor(min(nproc, len(todo)), mp_context=get_context("spawn")) as pool:
            for _ in pool.map(_write_month, [str(root)] * len(todo), [spec] * len(todo), todo):
                done += 1
                if progress:
                    progress(done, len(todo))
    return [month_path(root, VARIABLE, m) for m in months(spec.start, spec.end)]


def _write_manifest(path: Path, spec: DemoSpec, settings: dict[str, Any]) -> None:
    old = json.loads(path.read_text()) if path.exists() else {}
    spans = sorted({*map(tuple, old.get("periods", [])), (spec.start, spec.end)})
    doc = {"variable": VARIABLE, "settings": settings, "periods": [list(p) for p in spans]}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)
