"""Fields made by CDO for the recipe tests, in both longitude conventions, and CDO runs.

A field is seeded uniform noise (scaled to 270..290 "K") on a CDO grid
with both poles, with 5 % random holes and optionally the oceans of CDO's ``topo`` masked
out (NaN shaped like the continents). The second convention is written by xarray:
longitude -180..180 and latitude descending (ERA5's order); CDO reads that file too, so
each comparison runs CDO and the recipe on the same file.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import xarray as xr

from tests.support.known import cell_areas
from tests.support.needs import require_tool

#: the grids' variants, as the tests name them
CONVENTIONS = ("0..360", "-180..180")


def cdo_field(
    folder: Path, nt: int, *, land: bool = True, step: str = "1month", grid: str = "r36x19"
) -> dict[str, Path]:
    """``nt`` time steps from 2000-01-01, one every ``step``: a file per convention.

    The values (uniform noise of numpy's seeded generator, the same in every run) are put
    on CDO's ``grid`` and masked here, and CDO gives them their time axis, name and units
    and writes the file. Not CDO's ``random``: its generator is shared by the threads of a
    chain, so ``-cat [ -random,GRID,1 ... ]`` gave other values in every run, and a chain
    of 48 of them made CDO 2.1.1 crash now and then on a loaded machine (SIGSEGV).
    """
    require_tool("cdo")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{grid}-{nt}-{step}-{'land' if land else 'all'}.nc"
    if not path.exists():
        noise = _noise_on_grid(folder / f"{path.stem}-noise.nc", nt, grid=grid, land=land)
        ops = (
            "-setname,sst -setunit,K -setreftime,1900-01-01,00:00:00,days "
            f"-settaxis,2000-01-01,00:00:00,{step} -setctomiss,0"
        )
        part = path.with_name(f".{path.name}.part")
        cdo(ops, noise, out=part)
        part.replace(path)  # a field another test's fixture reads is never half-written
        noise.unlink()
    return {"0..360": path, "-180..180": other_convention(path)}


def _noise_on_grid(path: Path, nt: int, *, grid: str, land: bool) -> Path:
    """270 + 20 u "K" (u uniform in [0, 1), seeded by ``nt`` and ``grid``) on CDO's
    ``grid``, 0 where it is to be missing: where u <= 0.05 (5 % holes) and, with ``land``,
    where CDO's ``topo`` is 0 or below (the oceans), as CDO's ``-setrtomiss,0,0.05`` and
    ``-ifthen`` of ``-setrtomiss,-20000,0 -topo`` made it; a time axis that ``settaxis``
    replaces."""
    topo_path = cdo(f"-topo,{grid}", out=path.with_name(f"{path.stem}-topo.nc"))
    with xr.open_dataset(topo_path) as ds:
        topo = ds["topo"].load()
    topo_path.unlink()
    rng = np.random.default_rng([nt, *map(ord, grid)])
    u = rng.random((nt, *topo.shape))
    values = 270.0 + 20.0 * u
    missing = u <= 0.05
    if land:
        missing |= ~(topo.values > 0)
    # 0 there, which CDO's ``setctomiss,0`` makes missing: a file CDO read with a missing
    # value would be written with _FillValue too, and the readers must take CDO's files with
    # ``missing_value`` alone
    values[missing] = 0.0
    time = np.datetime64("2000-01-01", "ns") + np.arange(nt) * np.timedelta64(1, "D")
    sst = xr.Variable(("time", *topo.dims), values.astype("f4"))
    noise = xr.Dataset(
        {"sst": sst},
        coords={**{name: topo[name].variable for name in topo.dims}, "time": time},
    )
    for name in noise.variables:
        noise[name].encoding = {"_FillValue": None}
    noise.to_netcdf(path)
    return path


def other_convention(path: Path) -> Path:
    """``path`` with longitude -180..180 (rolled) and latitude from north to south."""
    out = path.with_name(path.stem + "-pm180.nc")
    if not out.exists():
        with xr.open_dataset(path) as ds:
            lon = ds.lon.copy(data=np.where(ds.lon >= 180, ds.lon - 360, ds.lon))  # attrs kept
            moved = ds.assign_coords(lon=lon).sortby("lon")
            write_for_cdo(moved.isel(lat=slice(None, None, -1)), out)
    return out


def write_for_cdo(ds: xr.Dataset, path: Path) -> Path:
    """``ds`` written as CDO writes: its fill value (not NaN, which CDO does not take for
    missing), time in float days since 1900."""
    ds = ds.copy()
    for var in ds.data_vars.values():
        var.encoding = {"dtype": var.dtype, "_FillValue": np.float32(-9e33)}
    for name in ds.coords:
        ds[name].encoding = {"_FillValue": None}
    if "time" in ds.coords:
        ds["time"].encoding.update(
            units="days since 1900-01-01 00:00:00", calendar="proleptic_gregorian", dtype="f8"
        )
    ds.to_netcdf(path)
    return path


def curvilinear_file(
    path: Path,
    lat: np.ndarray,
    lon: np.ndarray,
    name: str,
    time: tuple[np.ndarray, dict[str, str]],
    *,
    seed: int,
    noise: float = 1.0,
) -> Path:
    """A smooth field plus ``noise`` times uniform noise at each ``time`` (values, their
    attributes), 5 % of cells missing, written as CDO reads a curvilinear grid (2-D
    ``lat``/``lon``, ``coordinates`` on the variable ``name``)."""
    rng = np.random.default_rng(seed)
    wave = 10 * np.cos(np.deg2rad(lat)) * np.sin(np.deg2rad(2 * lon))
    values = 280 + wave[None] + noise * rng.random((len(time[0]), *lat.shape))
    values[rng.random(values.shape) < 0.05] = np.nan
    field = ("time", "y", "x"), values.astype("f4"), {"units": "K", "coordinates": "lat lon"}
    ds = xr.Dataset(
        {name: field},
        coords={
            "lat": (("y", "x"), lat, {"units": "degrees_north", "standard_name": "latitude"}),
            "lon": (("y", "x"), lon, {"units": "degrees_east", "standard_name": "longitude"}),
            "time": ("time", time[0], time[1]),
        },
    )
    return write_for_cdo(ds, path)


def cdo(operators: str, *inputs: Path, out: Path, env: dict[str, str] | None = None) -> Path:
    """Run ``cdo -s -f nc4 OPERATORS INPUTS OUT``; ``out``."""
    exe = require_tool("cdo")
    args = [exe, "-s", "-f", "nc4", *operators.split(), *map(str, inputs), str(out)]
    subprocess.run(args, check=True, env={**os.environ, **(env or {})}, capture_output=True)
    return out


def cdo_values(operators: str, *inputs: Path, out: Path, **kwargs) -> np.ndarray:
    """The first data variable of ``cdo OPERATORS INPUTS OUT``, as float64 NaN-for-missing."""
    cdo(operators, *inputs, out=out, **kwargs)
    # not the times: CDO 2.1.1's yseasmean now and then writes garbage for one season's
    with xr.open_dataset(out, decode_times=False) as ds:
        (name,) = [k for k in ds.data_vars if "bnds" not in str(k)]  # not time_bnds
        return ds[name].values.astype("f8")


def cdo_trend_b(path: Path, folder: Path) -> np.ndarray:
    """``b`` of ``cdo trend,equal=false`` (slope per first time step), float64."""
    exe = require_tool("cdo")
    a, b = folder / "trend-a.nc", folder / "trend-b.nc"
    subprocess.run([exe, "-s", "trend,equal=false", str(path), str(a), str(b)], check=True)
    with xr.open_dataset(b) as ds:
        (name,) = [k for k in ds.data_vars if "bnds" not in str(k)]
        return ds[name].values[0].astype("f8")


def sums_rtol(cells: int) -> float:
    """Relative tolerance between two float64 area means over ``cells`` cells of the same
    values with the same weights, CDO's and ours: only the rounding of their sums differs.

    A sum of n float64 terms of one sign (every field here) is exact to (n - 1) eps/2 in
    any order, and a mean is the ratio of two (values times weights, and weights): each
    mean is exact to about n eps, so (2 n + 32) eps bounds their difference, with room for
    the products, CDO's normalised weights and the divisions. 3e-13 for r36x19, 3e-11 for
    r360x181 (measured: 5e-15 and 2e-13), orders below what a wrong mean is off by: means
    with CDO's gridarea and with the exact areas differ by 7e-8 to 6e-6 (the areas by up to
    5e-5 at 1 degree, 5e-3 at the 10-degree poles), which put the old comparison of the
    two at rtol 1e-5 on the edge (issue 27).
    """
    return (2 * cells + 32) * float(np.finfo("f8").eps)


def cdo_cell_areas(path: Path, out: Path) -> xr.DataArray:
    """CDO's own cell areas (``gridarea``, m², float64) of the grid of ``path``, on the
    file's latitude and longitude: the weights of CDO's ``fldmean`` there."""
    cdo("-b F64 -gridarea", path, out=out)
    with xr.open_dataset(out) as ds:
        return ds["cell_area"].load()


def exact_areas_file(path: Path, out: Path) -> Path:
    """The exact cell areas of the grid of ``path`` (the spherical bands of
    ``known.cell_areas``), in the file's order: what :func:`with_exact_areas` gives CDO."""
    with xr.open_dataset(path) as ds:
        lat = next(ds[n] for n in ("lat", "latitude") if n in ds.coords)
        lon = next(ds[n] for n in ("lon", "longitude") if n in ds.coords)
        areas = xr.DataArray(
            cell_areas(lat.values, lon.values),
            dims=(lat.dims[0], lon.dims[0]),
            coords={lat.name: lat.variable, lon.name: lon.variable},
            name="cell_area",
            attrs={"units": "m2", "standard_name": "cell_area"},
        )
    areas.to_dataset().to_netcdf(out)
    return out


def with_exact_areas(path: Path, out: Path) -> Path:
    """A copy of ``path`` whose data variables carry the exact cell areas of its grid (a
    ``cell_area`` variable named by ``cell_measures``, which CDO reads as the grid's
    areas): CDO's ``fldmean`` of it weighs by them instead of by its ``gridarea``.

    CDO's means of the copy equal ``-fldmean -setgridarea,AREAS FILE`` to the last bit
    (checked on these fields, masked ones included), without ``-setgridarea`` in a chain:
    that makes CDO 2.1.1 crash now and then (SIGSEGV, SIGABRT or exit 1 "NetCDF: Not a
    valid ID", about 1 in 100 runs here, with ``-L`` too and with netCDF-3 files: its
    operators' threads race, not only their NetCDF reads).
    """
    areas_path = exact_areas_file(path, out.with_name(f"{out.stem}-areas.nc"))
    with xr.open_dataset(path) as ds, xr.open_dataset(areas_path) as areas:
        ds = ds.load()
        ds["cell_area"] = areas["cell_area"].load()
        ds["cell_area"].encoding["_FillValue"] = None
        for name, var in ds.data_vars.items():
            if name != "cell_area" and "bnds" not in str(name):
                var.attrs["cell_measures"] = "area: cell_area"
            # CDO's fields carry only ``missing_value``: without a matching _FillValue
            # xarray writes the masked cells as NaN, which CDO averages as numbers
            if "missing_value" in var.encoding and "_FillValue" not in var.encoding:
                var.encoding["_FillValue"] = var.encoding["missing_value"]
    ds.to_netcdf(out)
    return out
