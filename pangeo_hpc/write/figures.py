"""The figures a recipe run writes: a map and a time series, labelled with units.

Drawn with matplotlib's object API (:class:`matplotlib.figure.Figure`, ``fig.savefig``),
never pyplot: a figure written to a file needs no backend and no display, and importing
this module leaves the backend a notebook or the user chose (``MPLBACKEND``) alone.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pangeo_hpc.recipes.grid import horizontal_names, time_name
from pangeo_hpc.recipes.years import decimal_years


def _map(ax: Axes, da: xr.DataArray, title: str, *, cmap: str, center: bool) -> None:
    lat, lon = horizontal_names(da)
    lons = np.asarray(da[lon].values, dtype="f8")
    order = np.argsort(np.where(lons > 180, lons - 360, lons))
    x = np.where(lons > 180, lons - 360, lons)[order]
    values = np.asarray(da.values)[:, order]
    kw: dict = {"cmap": cmap, "shading": "nearest"}
    if center:
        lim = float(np.nanpercentile(np.abs(values), 99)) or 1.0
        kw.update(vmin=-lim, vmax=lim)
    ax.set_facecolor("0.75")  # land and sea ice: grey
    mesh = ax.pcolormesh(x, da[lat].values, values, **kw)
    ax.set_xlabel("longitude (°E)")
    ax.set_ylabel("latitude (°N)")
    ax.set_title(title)
    ax.set_aspect("equal")
    # long names from the data can be long: wrap them so the units stay on the figure
    label = f"{da.attrs.get('long_name', da.name)} ({da.attrs.get('units', '')})"
    ax.figure.colorbar(mesh, ax=ax, label=textwrap.fill(label, 45), shrink=0.8)


def _series(ax: Axes, da: xr.DataArray, title: str, *, fit: bool = False) -> None:
    t = time_name(da)
    ax.plot(da[t].values, da.values, lw=1.2, label=da.attrs.get("long_name", da.name))
    if fit:
        ok = np.isfinite(da.values)
        yrs = decimal_years(da[t])
        coef = np.polyfit(yrs[ok], da.values[ok], 1)
        ax.plot(
            da[t].values,
            np.polyval(coef, yrs),
            "k--",
            lw=1,
            label=f"linear fit: {coef[0] * 10:+.3f} {da.attrs.get('units', '')}/decade",
        )
        ax.legend(loc="upper left")
    ax.set_xlabel("time")
    ax.set_ylabel(f"{da.attrs.get('units', '')}")
    ax.set_title(title)
    ax.grid(alpha=0.3)


def plot_sst_mean(result: xr.Dataset, path: Path, title: str) -> None:
    """Time-mean SST map above the global-mean SST series."""
    fig = Figure(figsize=(10, 9), layout="constrained")
    a, b = fig.subplots(2, 1, height_ratios=[2, 1])
    _map(a, result["time_mean"], f"{title}: time-mean SST", cmap="RdYlBu_r", center=False)
    _series(b, result["global_mean_series"], "Area-weighted global-mean SST")
    fig.savefig(path, dpi=110)


def plot_sst_trend(result: xr.Dataset, path: Path, title: str) -> None:
    """Trend map above the global-mean anomaly series (with its fit) and Nino3.4."""
    fig = Figure(figsize=(10, 11), layout="constrained")
    a, b, c = fig.subplots(3, 1, height_ratios=[2, 1, 1])
    _map(a, result["trend"], f"{title}: linear trend of SST", cmap="RdBu_r", center=True)
    _series(b, result["global_mean_anomaly"], "Global-mean SST anomaly", fit=True)
    _series(c, result["nino34"], "Nino3.4 index (SST anomaly, 5S-5N, 170W-120W)")
    fig.savefig(path, dpi=110)


PLOTS = {"sst-mean": plot_sst_mean, "sst-trend": plot_sst_trend}
