"""A case's result file: the machine, the versions and the commit it was measured at,
written to ``benchmarks/results/<case>.json``."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.support.paths import RESULTS, ROOT


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # not installed
        return None


def machine() -> dict[str, Any]:
    """CPU, cores, memory, kernel, disk and the versions that matter here."""
    import psutil

    cpu = platform.processor()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    cdo = shutil.which("cdo")
    cdo_version = None
    if cdo:
        out = subprocess.run([cdo, "--version"], capture_output=True, text=True, check=False)
        first = (out.stdout or out.stderr).splitlines()[:1]
        cdo_version = first[0].split("version")[-1].split("(")[0].strip() if first else None
    state = tree_state()
    versions = {
        m: _version(m)
        for m in (
            "xarray",
            "dask",
            "distributed",
            "numpy",
            "h5py",
            "h5netcdf",
            "netCDF4",
            "zarr",
            "numcodecs",
            "flox",
            "numba",
        )
    }
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "versions": {**versions, "cdo": cdo_version},
        "pangeo_hpc_commit": state.commit + ("+dirty" if state.dirty else ""),
        "changed_files": state.dirty,
    }


@dataclass(frozen=True)
class TreeState:
    """The code's commit (the last one not only of results) and the paths changed since."""

    commit: str
    dirty: list[str]


#: what a benchmark run itself changes: not a reason to call the tree dirty
_OWN_OUTPUTS = (":(exclude)benchmarks/results",)


def tree_state() -> TreeState:
    """The last commit that changed the project and ``git status --porcelain``, both but
    for the results that the suite writes."""

    def git(*args: str) -> str:
        out = subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
        )
        return out.stdout

    # the last commit that changed more than the results: committing
    # the results of a run does not make them stale
    commit = git("log", "-1", "--format=%h", "--", ".", *_OWN_OUTPUTS).strip() or "unknown"
    status = git("status", "--porcelain", "--", ".", *_OWN_OUTPUTS).splitlines()
    return TreeState(commit, [line[3:] for line in status if line.strip()])


def describe_machine(m: dict[str, Any]) -> str:
    v = m["versions"]
    return (
        f"{m['cpu']}, {m['cores']} cores, {m['memory_gib']:g} GiB, Linux {m['kernel']}; "
        f"Python {m['python']}, xarray {v['xarray']}, dask {v['dask']}, h5py {v['h5py']}, "
        f"CDO {v['cdo']}"
    )


def write_result(case: str, doc: dict[str, Any], *, quick: bool = False) -> Path:
    """Write ``benchmarks/results/<case>.json`` (``<case>-quick.json`` for ``--quick``
    runs, which the docs' benchmarks page ignores) with the machine and the date added."""
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{case}{'-quick' if quick else ''}.json"
    full = {
        "case": case,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        **doc,
        "machine": machine(),
    }
    out.write_text(json.dumps(full, indent=2, default=_json_default) + "\n")
    print(f"\nresults: {out}")
    return out


def _json_default(o: object) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
