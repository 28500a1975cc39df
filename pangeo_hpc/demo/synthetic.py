"""Synthetic ERA5 in the exact layout of the ERA5 bucket ``era5-pds``, with known answers.

Every month of every variable is one NetCDF4 file ``{YYYY}/{MM}/data/{variable}.nc``
(:mod:`pangeo_hpc.demo.writer`). The variables (:func:`~pangeo_hpc.demo.spec.variables`):

* ``sea_surface_temperature`` (K, NaN over land and sea ice): :mod:`pangeo_hpc.demo.sst`;
* ``air_temperature_at_2_metres`` (K): :mod:`pangeo_hpc.demo.t2m`;
* ``precipitation_amount_1hour_Accumulation`` (m, hourly ``time1``): :mod:`pangeo_hpc.demo.precip`;
* ``eastward_wind_at_10_metres`` and ``northward_wind_at_10_metres`` (m s-1):
  :mod:`pangeo_hpc.demo.wind`.

Their known answers are in :mod:`pangeo_hpc.demo.answers`. A tree's ``demo-manifest.json``
records one set of settings shared by all its variables and, per variable, the periods
written. The same seed gives the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from dask.system import CPU_COUNT

from pangeo_hpc.demo.answers import expected
from pangeo_hpc.demo.spec import SST, VARIABLES, DemoSpec, variables
from pangeo_hpc.demo.sst import (
    ENSO_BANDS,
    EPOCH,
    FREEZING,
    TREND_REFERENCE,
    Fields,
    grid,
    known_land_masks,
    land_mask,
    remember_land_masks,
    time_factors,
)
from pangeo_hpc.demo.writer import DEMO_HISTORY, is_demo_file, write_month
from pangeo_hpc.errors import InputError
from pangeo_hpc.extras import require
from pangeo_hpc.inputs.periods import months
from pangeo_hpc.io.layout import MANIFEST, month_path
from pangeo_hpc.write.outputs import claim_tree, write_json

#: the variable of the first demo trees, and still the default one
VARIABLE = SST

__all__ = [
    "DEMO_HISTORY",
    "ENSO_BANDS",
    "EPOCH",
    "FREEZING",
    "TREND_REFERENCE",
    "VARIABLE",
    "DemoSpec",
    "Fields",
    "expected",
    "generate",
    "grid",
    "is_demo_file",
    "land_mask",
    "read_manifest",
    "time_factors",
    "variables",
]


def read_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest at ``path`` as ``{"settings": ..., "variables": {name: {"units",
    "periods"}}}``, also from the SST-only format of earlier versions; None if it is none.

    Parameters
    ----------
    path : Path
        The manifest file (``.pangeo-hpc.json`` of a demo tree).

    Returns
    -------
    dict or None
        The manifest, or None when ``path`` holds none.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.demo import read_manifest
    >>> read_manifest(Path("no-such-folder/manifest.json")) is None
    True
    """
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("settings"), dict):
        return None
    if isinstance(doc.get("variables"), dict):
        return {"settings": doc["settings"], "variables": doc["variables"]}
    if doc.get("variable") == SST:  # before the tree had other variables
        entry = {"units": VARIABLES[SST], "periods": doc.get("periods", [])}
        return {"settings": doc["settings"], "variables": {SST: entry}}
    return None


def _is_manifest(path: Path) -> bool:
    return read_manifest(path) is not None


def _other_settings(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a tree made with ``old`` settings cannot take data made with ``new`` ones.

    A setting the tree never recorded (one added to the generator since) was not used to
    make any of its files, so it is taken from ``new``.
    """
    return any(k not in new or new[k] != v for k, v in old.items())


def generate(
    out: str | Path,
    spec: DemoSpec | None = None,
    *,
    workers: int | None = None,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> list[Path]:
    """Write every month of the spec's variables under ``out``; skip months already there.

    Parameters
    ----------
    out : path
        Root of the era5-pds style tree (created if needed).
    spec : DemoSpec, optional
        What to make; unset fields come from the ``pangeo-hpc.demo`` config. Its
        ``variables`` (default: the SST alone) may be added to a tree that holds others,
        made with the same settings.
    workers : int, optional
        Processes writing months in parallel (default: one per core).
    overwrite : bool
        Rewrite months that already exist. Without it, a tree made with other settings is
        an error rather than a silent mixture.
    progress : callable, optional
        Called with ``(done, total)`` after each month of each variable.

    Returns
    -------
    list of Path
        The files of every month of the spec, variable after variable.

    Examples
    --------
    >>> from pangeo_hpc.demo import DemoSpec, generate
    >>> spec = DemoSpec(resolution=2.0, start="2000-01", end="2000-12")
    >>> paths = generate("data/era5-demo", spec)  # doctest: +SKIP
    """
    require("demo", "demo-data")  # before anything is written
    spec = (spec or DemoSpec()).resolved()
    # a new or empty folder, or a tree made here before: never a tree of real data
    root = claim_tree(out, kind="demo", ours=lambda p: _is_manifest(p / MANIFEST))
    manifest = root / MANIFEST
    settings = spec.settings()
    old = read_manifest(manifest)
    if old is not None and not overwrite and _other_settings(old["settings"], settings):
        raise InputError(
            f"{str(root)!r} holds demo data made with other settings "
            f"({old['settings']}): write to another out=, or pass overwrite=True",
            param=("out", "overwrite"),
        )
    todo = [
        (variable, m)
        for variable in spec.variables  # type: ignore[union-attr]
        for m in months(spec.start, spec.end)
        if overwrite or not month_path(root, variable, m).exists()
    ]
    _write_manifest(manifest, spec, settings, old)
    nproc = workers or CPU_COUNT  # this process's CPU share (cgroups), not the host's
    done = 0
    if progress:
        progress(0, len(todo))
    args = ([str(root)] * len(todo), [spec] * len(todo), [v for v, _ in todo], [m for _, m in todo])
    if nproc == 1 or len(todo) <= 1:  # no worker processes to start
        for _ in map(write_month, *args):
            done += 1
            if progress:
                progress(done, len(todo))
    else:
        # the land mask made once here, not in each process (global_land_mask's import)
        land_mask(*grid(float(spec.resolution)))  # type: ignore[arg-type]
        with ProcessPoolExecutor(
            min(nproc, len(todo)),
            mp_context=get_context("spawn"),
            initializer=remember_land_masks,
            initargs=(known_land_masks(),),
        ) as pool:
            for _ in pool.map(write_month, *args):
                done += 1
                if progress:
                    progress(done, len(todo))
    return [
        month_path(root, variable, m)
        for variable in spec.variables  # type: ignore[union-attr]
        for m in months(spec.start, spec.end)
    ]


def _write_manifest(
    path: Path, spec: DemoSpec, settings: dict[str, Any], old: dict[str, Any] | None
) -> None:
    written = dict(old["variables"]) if old else {}
    for variable in spec.variables:  # type: ignore[union-attr]
        periods = written.get(variable, {}).get("periods", [])
        spans = sorted({*map(tuple, periods), (spec.start, spec.end)})
        written[variable] = {"units": VARIABLES[variable], "periods": [list(p) for p in spans]}
    ordered = {k: written[k] for k in (*VARIABLES, *written) if k in written}
    doc = {"settings": settings, "variables": ordered}
    write_json(path, doc, flag="out", ours=_is_manifest)
