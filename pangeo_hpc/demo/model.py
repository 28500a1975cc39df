"""A CMIP-like model dataset beside the demo's ERA5: ``tas`` on a 2.5-degree grid, ``noleap``
calendar, one file per year (``tas_Amon_DEMO-MODEL_historical_r1i1p1f1_gn_YYYY01-YYYY12.nc``)
with ``lat_bnds``, ``lon_bnds`` and ``time_bnds``, monthly, in K.

Its values carry a known bias against the demo's 2 m temperature: at every month, each
cell is the demo t2m's noise-free mean over the demo's period (base, warming, seasonal and
diurnal terms averaged over the very time steps the demo writes), averaged conservatively
onto the 2.5-degree cell (:func:`~pangeo_hpc.recipes.regrid`, checked against CDO
``remapcon`` in its own tests), plus :func:`planted_bias`. So a recipe that averages the
ERA5 t2m over the demo's period, regrids it conservatively to the model's grid and takes
``model - era5`` finds :func:`planted_bias`, up to the time mean of the demo's noise (0.3 K
per step: about 0.01 K per 1-degree cell over two years of daily data, less once averaged
onto 2.5-degree cells). The model is constant in time: the bias is the point.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from pangeo_hpc.demo.spec import DemoSpec
from pangeo_hpc.demo.sst import EPOCH, Fields, time_factors
from pangeo_hpc.demo.t2m import T2mFields
from pangeo_hpc.demo.writer import DEMO_HISTORY, has_history
from pangeo_hpc.inputs.periods import months
from pangeo_hpc.recipes.regrid import regrid
from pangeo_hpc.write.outputs import atomic_file

__all__ = ["FOLDER", "LAT", "LON", "planted_bias", "write_model"]

#: the model's folder under the demo tree
FOLDER = "cmip"
#: the model's grid: 2.5-degree cells from the South Pole, longitudes centred on 0
LAT = np.arange(-88.75, 90.0, 2.5)
LON = np.arange(0.0, 360.0, 2.5)
_BOX = {"lat": [-90.0, 90.0, 2.5], "lon": [-1.25, 358.75, 2.5]}
_HISTORY = f"{DEMO_HISTORY} --model"
#: noleap month lengths
_DAYS = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def planted_bias(lat: np.ndarray = LAT, lon: np.ndarray = LON) -> np.ndarray:
    """The model's bias against the demo t2m (K, ``(lat, lon)``): too warm in the
    tropics' east, too cold towards the poles, +0.5 K overall offset.

    Parameters
    ----------
    lat : np.ndarray, optional
        Latitudes (degrees north).
    lon : np.ndarray, optional
        Longitudes (degrees east).

    Returns
    -------
    np.ndarray
        The bias (K), shape ``(lat, lon)``.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.demo.model import planted_bias
    >>> planted_bias(np.array([0.0, 60.0]), np.array([90.0])).round(3)  # K, (lat, lon)
    array([[ 2.  ],
           [-0.25]])
    """
    la, lo = np.meshgrid(np.deg2rad(lat), np.deg2rad(lon), indexing="ij")
    return 0.5 + 1.5 * np.cos(la) ** 2 * np.sin(lo) - 2.0 * np.sin(la) ** 4


def _model_t2m(spec: DemoSpec | None = None) -> np.ndarray:
    """The model's field (K, ``(lat, lon)`` on :data:`LAT`, :data:`LON`): see the module."""
    spec = (spec or DemoSpec()).resolved()
    f = Fields(spec)
    t2m = T2mFields(spec, f)
    times = np.concatenate([f.times(m) for m in months(spec.start, spec.end)])
    seas, decades, _ = time_factors(times, spec)
    hours, counts = np.unique((times - EPOCH).astype("i8") % 24, return_counts=True)
    diurnal = np.tensordot(
        counts / counts.sum(), t2m.diurnal(EPOCH + hours.astype("timedelta64[h]")), 1
    )
    mean = t2m.base + decades.mean() * t2m.trend_map + seas.mean() * t2m.seasonal + diurnal
    era5 = xr.DataArray(
        mean, dims=("lat", "lon"), coords={"lat": f.lat.astype("f8"), "lon": f.lon.astype("f8")}
    )
    on_model = regrid(era5, grid=_BOX, method="conservative").values
    return on_model + planted_bias()


def _model_files(root: str | Path, spec: DemoSpec | None = None) -> list[Path]:
    """The model's yearly files under ``root`` for the spec's years."""
    spec = (spec or DemoSpec()).resolved()
    years = sorted({m.year for m in months(spec.start, spec.end)})
    folder = Path(root) / FOLDER
    return [folder / f"tas_Amon_DEMO-MODEL_historical_r1i1p1f1_gn_{y}01-{y}12.nc" for y in years]


def _is_model_file(path: Path) -> bool:
    return has_history(path, _HISTORY)


def write_model(root: str | Path, spec: DemoSpec | None = None) -> list[Path]:
    """Write the model's yearly files (whole years covering the spec's period) under
    ``root/cmip``, each atomically; a file there that this function did not write is
    never replaced.

    Parameters
    ----------
    root : str or Path
        The demo tree; the files go to its ``cmip/`` folder.
    spec : DemoSpec, optional
            The generator's settings; None: a spec of the ``pangeo-hpc.demo`` config.

    Returns
    -------
    list of Path
        The files' paths.

    Examples
    --------
    >>> from pangeo_hpc.demo import DemoSpec
    >>> from pangeo_hpc.demo.model import write_model
    >>> paths = write_model("data/era5-demo", DemoSpec(resolution=2.0))  # doctest: +SKIP
    """
    import netCDF4

    spec = (spec or DemoSpec()).resolved()
    field = _model_t2m(spec).astype("f4")
    paths = _model_files(root, spec)
    base = int(paths[0].name.split("_")[-1][:4]) if paths else 0
    for path in paths:
        year = int(path.name.split("_")[-1][:4])
        path.parent.mkdir(parents=True, exist_ok=True)
        ends = 365 * (year - base) + np.cumsum(_DAYS).astype("f8")
        starts = ends - _DAYS
        with atomic_file(path, ours=_is_model_file) as tmp, netCDF4.Dataset(tmp, "w") as nc:
            nc.createDimension("time", None)
            nc.createDimension("lat", LAT.size)
            nc.createDimension("lon", LON.size)
            nc.createDimension("bnds", 2)
            t = nc.createVariable("time", "f8", ("time",))
            t.setncatts(
                {
                    "units": f"days since {base}-01-01",
                    "calendar": "noleap",
                    "standard_name": "time",
                    "axis": "T",
                    "bounds": "time_bnds",
                }
            )
            t[:] = (starts + ends) / 2
            nc.createVariable("time_bnds", "f8", ("time", "bnds"))[:] = np.stack([starts, ends], 1)
            for name, values, std, units in (
                ("lat", LAT, "latitude", "degrees_north"),
                ("lon", LON, "longitude", "degrees_east"),
            ):
                v = nc.createVariable(name, "f8", (name,))
                v.setncatts(
                    {
                        "standard_name": std,
                        "units": units,
                        "axis": "Y" if name == "lat" else "X",
                        "bounds": f"{name}_bnds",
                    }
                )
                v[:] = values
                edges = np.stack([values - 1.25, values + 1.25], 1)
                nc.createVariable(f"{name}_bnds", "f8", (name, "bnds"))[:] = edges
            v = nc.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=1)
            v.setncatts(
                {
                    "standard_name": "air_temperature",
                    "long_name": "Near-Surface Air Temperature",
                    "units": "K",
                    "cell_methods": "area: time: mean",
                }
            )
            v[:] = np.broadcast_to(field, (12, *field.shape))
            nc.setncatts(
                {
                    "Conventions": "CF-1.8",
                    "source": "DEMO-MODEL (synthetic: pangeo-hpc demo data)",
                    "frequency": "mon",
                    "experiment_id": "historical",
                    "source_id": "DEMO-MODEL",
                    "variable_id": "tas",
                    "history": _HISTORY,
                }
            )
    return paths
