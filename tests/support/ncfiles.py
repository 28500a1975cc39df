"""Small CF NetCDF4 files written with netCDF4, for the tests of open_files and open_era5:
any time name and units, calendars, packing, fill values, extra dimensions, time bounds."""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np


def write_nc(
    path: Path,
    variables: dict[str, np.ndarray],
    times: np.ndarray,
    *,
    time_name: str = "time",
    time_units: str = "days since 1978-01-01 00:00:00",
    calendar: str = "standard",
    lat: np.ndarray | None = None,
    lon: np.ndarray | None = None,
    units: str | dict[str, str] = "degC",
    zlev: bool = False,
    bounds: np.ndarray | None = None,
    bounds_name: str | None = None,
    nv: str = "nv",
    pack: tuple[float, float] | None = None,
    fill: float | None = None,
    chunks: tuple[int, ...] | None = None,
) -> Path:
    """Write ``variables`` (each ``(time, lat, lon)``; float data, NaN where missing) at
    the stored ``times`` (numbers in ``time_units``). ``pack=(scale, offset)`` stores int16
    with that packing and ``fill`` as ``_FillValue``; ``zlev`` adds OISST's size-1 level."""
    first = next(iter(variables.values()))
    lat = np.linspace(-90, 90, first.shape[1]) if lat is None else lat
    lon = np.arange(first.shape[2]) * 360.0 / first.shape[2] if lon is None else lon
    path.parent.mkdir(parents=True, exist_ok=True)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension(time_name, len(times))
        nc.createDimension("lat", len(lat))
        nc.createDimension("lon", len(lon))
        t = nc.createVariable(time_name, "f8", (time_name,))
        t.setncatts({"units": time_units, "calendar": calendar, "standard_name": "time"})
        t[:] = times
        if bounds is not None:
            name = bounds_name or f"{time_name}_bnds"
            t.bounds = name
            nc.createDimension(nv, 2)
            b = nc.createVariable(name, "f8", (time_name, nv))
            b[:] = bounds
        grid: tuple[str, ...] = ("lat", "lon")
        if zlev:
            nc.createDimension("zlev", 1)
            z = nc.createVariable("zlev", "f4", ("zlev",))
            z.setncatts({"units": "meters", "axis": "Z"})
            z[:] = 0.0
            grid = ("zlev", *grid)
        for name, values in (("lat", lat), ("lon", lon)):
            v = nc.createVariable(name, "f4", (name,))
            v.units = "degrees_north" if name == "lat" else "degrees_east"
            v[:] = values
        for name, data in variables.items():
            dtype = "i2" if pack else "f4"
            v = nc.createVariable(
                name,
                dtype,
                (time_name, *grid),
                zlib=True,
                chunksizes=chunks,
                fill_value=fill if fill is not None else (None if pack else np.float32(np.nan)),
            )
            v.set_auto_maskandscale(False)
            v.units = units if isinstance(units, str) else units[name]
            v.long_name = name
            values = np.asarray(data, dtype="f8")
            if pack:
                scale, offset = pack
                v.scale_factor, v.add_offset = scale, offset
                stored = np.round((values - offset) / scale)
                stored = np.where(np.isnan(values), fill, stored).astype("i2")
            else:
                stored = values.astype("f4")
            v[:] = stored[:, None] if zlev else stored
    return path


def field(n_time: int, n_lat: int, n_lon: int, seed: int, *, holes: bool = True) -> np.ndarray:
    """Random values rounded to 0.01 (exact after int16 packing), NaN in a corner."""
    rng = np.random.default_rng(seed)
    values = np.round(rng.uniform(-2, 30, (n_time, n_lat, n_lon)), 2)
    if holes:
        values[:, : n_lat // 3, : n_lon // 4] = np.nan
    return values


def write_era5_month(
    root: Path,
    variable: str,
    year: int,
    month: int,
    *,
    forecast: bool = False,
    n_lat: int = 6,
    n_lon: int = 8,
    units: str = "m",
    seed: int = 0,
    hours: int | None = None,
) -> tuple[Path, np.ndarray]:
    """One month of ``variable`` in the era5-pds layout and shapes (descending ``lat`` with
    both poles, ``lon`` 0..360): an analysis ``(time0, lat, lon)`` at 00..23 h, or a
    forecast ``(time1, lat, lon)`` from the 1st 07:00 to the next month's 1st 06:00 with
    ``time1_bounds(time1, nv)``, each step the hour before it; only the first ``hours`` steps
    if given (large grids). Returns the path and values."""
    first = np.datetime64(f"{year:04d}-{month:02d}-01T00", "h")
    after = np.datetime64(f"{year + month // 12:04d}-{month % 12 + 1:02d}-01T00", "h")
    hours = np.arange(first, after)[:hours] + (np.timedelta64(7, "h") if forecast else 0)
    since = (hours - np.datetime64("1970-01-01T00", "h")).astype("f8")
    name = "time1" if forecast else "time0"
    data = field(hours.size, n_lat, n_lon, seed=seed, holes=False) / 1000.0
    path = root / f"{year:04d}" / f"{month:02d}" / "data" / f"{variable}.nc"
    write_nc(
        path,
        {variable: data},
        since,
        time_name=name,
        time_units="hours since 1970-01-01 00:00:00",
        calendar="gregorian",
        lat=np.linspace(90, -90, n_lat),
        lon=np.arange(n_lon) * 360.0 / n_lon,
        units=units,
        bounds=np.stack([since - 1, since], axis=1) if forecast else None,
        bounds_name="time1_bounds" if forecast else None,
        chunks=(min(24, hours.size), n_lat, n_lon),
    )
    return path, data
