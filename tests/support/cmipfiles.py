"""CMIP-like NetCDF files written by hand with netCDF4, as model output comes: ``tas``
monthly or daily in yearly files, ``lat``/``lon`` with ``bounds`` attributes and
``lat_bnds``/``lon_bnds``/``time_bnds`` variables, any CF calendar, descending latitudes
and -180..180 longitudes on request, optionally packed in int16 with float64
``scale_factor``/``add_offset``."""

from __future__ import annotations

from pathlib import Path

import cftime
import netCDF4
import numpy as np

CALENDARS = ("noleap", "360_day", "all_leap", "julian", "standard")
#: the grid: 10 x 16 cells of 18 x 22.5 degrees
N_LAT, N_LON = 10, 16


def grid(*, descending: bool = False, east: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Cell centres: latitudes -81..81 (or 81..-81), longitudes 0..337.5 or -180..157.5."""
    lat = np.linspace(-81, 81, N_LAT)
    lon = np.arange(N_LON) * 22.5 - (180.0 if east else 0.0)
    return (lat[::-1] if descending else lat), lon


def edges(centres: np.ndarray) -> np.ndarray:
    step = centres[1] - centres[0]
    return np.stack([centres - step / 2, centres + step / 2], axis=1)


def time_edges(calendar: str, first: int, last: int, freq: str) -> list[cftime.datetime]:
    """Month or day starts from ``first``-01-01 to ``last + 1``-01-01 in ``calendar``."""
    start = cftime.datetime(first, 1, 1, calendar=calendar)
    end = cftime.datetime(last + 1, 1, 1, calendar=calendar)
    if freq == "monthly":
        return [
            cftime.datetime(y, m, 1, calendar=calendar)
            for y in range(first, last + 2)
            for m in range(1, 13)
        ][: 12 * (last - first + 1) + 1]
    days = round((end - start).total_seconds() / 86400)
    return [start + np.timedelta64(d, "D").astype(object) for d in range(days + 1)]


def values(calendar: str, times: np.ndarray, lat: np.ndarray, lon: np.ndarray, seed: int):
    """A trend of 0.3 K per (calendar) decade, a seasonal cycle and noise, in K."""
    rng = np.random.default_rng(seed)
    t = np.asarray(times, dtype=float)
    year = {"noleap": 365.0, "360_day": 360.0, "all_leap": 366.0}.get(calendar, 365.25)
    seasonal = 8 * np.cos(2 * np.pi * t / year)[:, None, None] * np.sin(np.deg2rad(lat))[:, None]
    trend = (0.03 * t / year)[:, None, None] * (1 + np.cos(np.deg2rad(lon)))[None, None, :]
    base = 288 - 30 * np.sin(np.deg2rad(lat)) ** 2
    noise = rng.normal(0, 0.5, (t.size, lat.size, lon.size))
    return np.round(base[None, :, None] + seasonal + trend + noise, 2)


def write_cmip(
    root: Path,
    calendar: str,
    *,
    years: tuple[int, int] = (2000, 2002),
    freq: str = "monthly",
    descending: bool = False,
    east: bool = False,
    pack: bool = False,
    units_since: str = "1850-01-01",
) -> list[Path]:
    """One file a year of ``tas`` (K) under ``root``; returns their paths in time order."""
    lat, lon = grid(descending=descending, east=east)
    edges = time_edges(calendar, years[0], years[1], freq)
    units = f"days since {units_since}"
    stored = netCDF4.date2num(edges, units, calendar=calendar)
    mids = (stored[:-1] + stored[1:]) / 2
    data = values(calendar, mids, lat, lon, seed=years[0])
    table = "Amon" if freq == "monthly" else "day"
    paths = []
    for year in range(years[0], years[1] + 1):
        inside = np.array([e.year == year for e in edges[:-1]])
        (k,) = np.nonzero(inside)
        tag = f"{year}01-{year}12" if freq == "monthly" else f"{year}0101-{year}1231"
        path = root / f"tas_{table}_MODEL_historical_r1i1p1f1_gn_{tag}.nc"
        _write_file(path, data[k], mids[k], stored, k, lat, lon, units, calendar, pack)
        paths.append(path)
    return paths


def _write_file(path, data, mids, stored, k, lat, lon, units, calendar, pack) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.setncatts({"Conventions": "CF-1.7 CMIP-6.2", "frequency": "mon", "table_id": "Amon"})
        nc.createDimension("time", None)
        nc.createDimension("lat", lat.size)
        nc.createDimension("lon", lon.size)
        nc.createDimension("bnds", 2)
        t = nc.createVariable("time", "f8", ("time",))
        t.setncatts({"units": units, "calendar": calendar, "standard_name": "time", "axis": "T"})
        t.bounds = "time_bnds"
        t[:] = mids
        nc.createVariable("time_bnds", "f8", ("time", "bnds"))[:] = np.stack(
            [stored[k], stored[k + 1]], axis=1
        )
        for name, centres, std in (("lat", lat, "latitude"), ("lon", lon, "longitude")):
            v = nc.createVariable(name, "f8", (name,))
            v.setncatts(
                {
                    "units": "degrees_north" if name == "lat" else "degrees_east",
                    "standard_name": std,
                    "axis": "Y" if name == "lat" else "X",
                    "bounds": f"{name}_bnds",
                }
            )
            v[:] = centres
            nc.createVariable(f"{name}_bnds", "f8", (name, "bnds"))[:] = edges(centres)
        if pack:
            v = nc.createVariable("tas", "i2", ("time", "lat", "lon"), fill_value=np.int16(-32767))
            v.set_auto_maskandscale(False)
            v.scale_factor, v.add_offset = np.float64(0.01), np.float64(273.15)
            v[:] = np.round((data - 273.15) / 0.01).astype("i2")
        else:
            v = nc.createVariable(
                "tas", "f4", ("time", "lat", "lon"), fill_value=np.float32(1e20), zlib=True
            )
            v[:] = data.astype("f4")
        v.setncatts(
            {
                "standard_name": "air_temperature",
                "long_name": "Near-Surface Air Temperature",
                "units": "K",
                "cell_methods": "area: time: mean",
            }
        )
