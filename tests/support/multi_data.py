"""Two small CMIP-like datasets for the recipes over several datasets: a "model" on a
2.5-degree grid, ``noleap``, yearly files with lat/lon bounds, in degC; "obs" on a
1.25-degree grid, ``standard`` calendar, in K. The obs field is constant over each 2 x 2
block of its cells, so that conservative regridding to the model's grid gives each block's
value exactly; the model is that value plus a known bias pattern (:func:`planted_bias`)."""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np

YEARS = (2001, 2002)
MODEL_LAT = np.arange(-88.75, 90, 2.5)
MODEL_LON = np.arange(0, 360, 2.5)


def planted_bias(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """The model's bias against obs, K: a dipole in longitude, larger towards the poles."""
    la, lo = np.meshgrid(np.deg2rad(lat), np.deg2rad(lon), indexing="ij")
    return 1.5 * np.sin(lo) * (0.5 + np.sin(la) ** 2) + 0.25


def obs_blocks(n_time: int) -> np.ndarray:
    """The obs field on the model's grid (each 2 x 2 block of obs cells), K."""
    la, lo = np.meshgrid(np.deg2rad(MODEL_LAT), np.deg2rad(MODEL_LON), indexing="ij")
    base = 255.0 + 35.0 * np.cos(la) ** 2 + 3.0 * np.cos(2 * lo) * np.cos(la)
    months = np.arange(n_time)
    season = 4.0 * np.sin(2 * np.pi * months / 12)[:, None, None] * np.sin(la)[None]
    return base[None] + season


def _write(
    path: Path,
    name: str,
    values: np.ndarray,
    days: np.ndarray,
    *,
    calendar: str,
    lat: np.ndarray,
    lon: np.ndarray,
    units: str,
    bounds: bool,
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", len(days))
        nc.createDimension("lat", len(lat))
        nc.createDimension("lon", len(lon))
        nc.createDimension("bnds", 2)
        t = nc.createVariable("time", "f8", ("time",))
        t.setncatts({"units": "days since 2001-01-01", "calendar": calendar})
        t.standard_name, t.axis = "time", "T"
        t[:] = days
        for axis, values_, std, u in (
            ("lat", lat, "latitude", "degrees_north"),
            ("lon", lon, "longitude", "degrees_east"),
        ):
            v = nc.createVariable(axis, "f8", (axis,))
            v.setncatts({"standard_name": std, "units": u, "axis": axis[0].upper() + ""})
            v[:] = values_
            if bounds:
                v.bounds = f"{axis}_bnds"
                step = values_[1] - values_[0]
                b = nc.createVariable(f"{axis}_bnds", "f8", (axis, "bnds"))
                b[:] = np.stack([values_ - step / 2, values_ + step / 2], 1)
        v = nc.createVariable(name, "f4", ("time", "lat", "lon"))
        v.setncatts({"units": units, "standard_name": "air_temperature"})
        v.long_name = "near-surface air temperature"
        v[:] = values.astype("f4")


def write_pair(root: Path) -> tuple[Path, Path]:
    """Write the model's yearly files under ``root/model`` and the obs' under ``root/obs``:
    24 months from 2001-01 each. Returns both folders."""
    n = 12 * len(YEARS)
    blocks = obs_blocks(n)
    model = blocks + planted_bias(MODEL_LAT, MODEL_LON)[None] - 273.15
    obs_lat, obs_lon = np.arange(-89.375, 90, 1.25), np.arange(0.625, 360, 1.25)
    # the model's cell of each obs cell (model cells centred on 0 span -1.25..1.25)
    rows = np.floor((obs_lat + 90) / 2.5).astype(int)
    cols = np.floor((obs_lon + 1.25) / 2.5).astype(int) % MODEL_LON.size
    obs = blocks[:, rows][:, :, cols]
    for i, year in enumerate(YEARS):
        sl = slice(12 * i, 12 * (i + 1))
        noleap = 365 * i + np.array(
            [15.5, 45, 74.5, 105, 135.5, 166, 196.5, 227.5, 258, 288.5, 319, 349.5]
        )
        stamps = [np.datetime64(f"{year}-{m:02d}-15") for m in range(1, 13)]
        standard = (np.array(stamps) - np.datetime64("2001-01-01")).astype("f8")
        _write(
            root / "model" / f"tas_Amon_TOY_historical_r1i1p1f1_gn_{year}01-{year}12.nc",
            "tas",
            model[sl],
            noleap,
            calendar="noleap",
            lat=MODEL_LAT,
            lon=MODEL_LON,
            units="degC",
            bounds=True,
        )
        _write(
            root / "obs" / f"t2m_{year}.nc",
            "t2m",
            obs[sl],
            standard,
            calendar="standard",
            lat=obs_lat,
            lon=obs_lon,
            units="K",
            bounds=False,
        )
    return root / "model", root / "obs"
