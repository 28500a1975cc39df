"""The identity of the code a cached state depends on: ours, the libraries', the user's.

A state cached from a file is valid only for the code that computed it. Its key
(:meth:`pangeo_hpc.batch.incremental.splitting.Split.chain_hash`) therefore holds, besides the step
names and options:

* :func:`package_code`: Python's and pangeo-hpc's versions, a SHA-256 of the sources that
  read the files and compute the states (``recipes/`` with the files of its ``data``
  folders, such as the AR6 regions' vertices, ``io/``, the state and chain modules of
  ``batch/``, ``jit.py``), and the versions of the libraries that decode and compute with
  them (:data:`_LIBRARIES`: NumPy, xarray, Dask, ..., cftime, regionmask). An editable install whose
  kernel changed, or an upgrade of any of these, misses the old states (what Bazel and
  Nix do: the tool is part of the key). Hashed once per process (about 5 ms).
* :func:`function_code`: a user function's source as it runs (its compiled code, with
  constants and defaults) and the bytes of the module file it comes from (helpers and
  module constants it uses), as ``joblib.Memory`` keys a function by its source. A user
  module beside a recipe is loaded again when its file changes
  (:func:`pangeo_hpc.batch.chains.chain.user_function`), so the code that runs is the file's.

What it does not see: a user function's imports of other modules of the user (their
changes are not in the key; put the helpers in the same module), and data read by a user
function from elsewhere than its arguments.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import marshal
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["SOURCE_ATTR", "function_code", "package_code", "run_code"]

#: the attribute of a user module loaded from a recipe's folder: the SHA-256 of the file's
#: bytes as loaded (the code that runs, whatever the file says later)
SOURCE_ATTR = "__pangeo_hpc_source_sha256__"

#: the package's sources a state depends on, relative to the package's folder
_SOURCES = (
    "recipes",
    "io",
    "batch/incremental/splitting.py",
    "batch/incremental/run.py",
    "batch/incremental/plan.py",
    "batch/incremental/states.py",
    "batch/incremental/rollups.py",
    "batch/chains/chain.py",
    "batch/chains/results_of.py",
    "batch/pipeline/steps.py",
    "jit.py",
)
#: the libraries whose versions a state depends on: those that compute, and those that
#: decode the files (times in other calendars: cftime), draw region masks (regionmask,
#: shapely), convert units (pint, cf-xarray) and build regridding weights (scipy)
_LIBRARIES = (
    "numpy", "pandas", "xarray", "dask", "flox", "numbagg", "numba", "h5py", "h5netcdf",
    "netCDF4", "cftime", "zarr", "numcodecs", "deflate", "scipy", "regionmask", "shapely",
    "pint", "cf-xarray",
)  # fmt: skip
#: besides those, the libraries a whole run's outputs depend on: the result's, figure's
#: and report's writers, the CF, grid and region helpers, the map projections and the
#: report's interactive maps
_WRITERS = (
    "matplotlib", "pyproj", "PyYAML", "cartopy", "global-land-mask", "bokeh", "holoviews",
    "hvplot", "panel", "datashader",
)  # fmt: skip


@functools.lru_cache(maxsize=1)
def package_code() -> str:
    """The SHA-256 (hex) of pangeo-hpc's version, its state-making sources and the
    versions of :data:`_LIBRARIES` in this process.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.code_identity import package_code
    >>> code = package_code()  # part of every state's cache key
    >>> len(code), code == package_code()
    (64, True)
    """
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256(sys.version.encode())
    h.update(_version("pangeo-hpc").encode())
    for lib in _LIBRARIES:
        h.update(f"\0{lib}={_version(lib)}".encode())
    files: list[Path] = []
    for name in _SOURCES:
        path = root / name
        if path.is_dir():  # its modules, and every file of its data folders
            files += sorted(
                f for f in path.rglob("*")
                if f.suffix == ".py" or ("data" in f.relative_to(path).parts[:-1] and f.is_file())
            )  # fmt: skip
        else:
            files.append(path)
    for path in files:
        h.update(b"\0" + path.relative_to(root).as_posix().encode() + b"\0")
        try:
            h.update(path.read_bytes())
        except OSError:  # an install without sources (byte code only): the version counts
            h.update(b"<no source>")
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def run_code() -> str:
    """The SHA-256 (hex) of everything a whole run's outputs depend on in code: Python's
    version, pangeo-hpc's version and **every** file of the package (sources, the defaults
    file ``pangeo-hpc.yaml``, the data folders; not ``__pycache__``), and the versions of
    :data:`_LIBRARIES` and :data:`_WRITERS`. Wider than :func:`package_code` (a state
    depends on the reading and reducing code only; a run's ``result.nc``, ``plot.png`` and
    answer on all of it): the key of a run served from its previous result
    (:mod:`pangeo_hpc.batch.pipeline.reuse`). Reads about 2 MB, imports none of them.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.code_identity import package_code, run_code
    >>> code = run_code()  # part of every run key
    >>> len(code), code != package_code()
    (64, True)
    """
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256(sys.version.encode())
    h.update(f"\0{_version('pangeo-hpc')}".encode())
    for lib in (*_LIBRARIES, *_WRITERS):
        h.update(f"\0{lib}={_version(lib)}".encode())
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if "__pycache__" in rel.parts or not path.is_file():
            continue
        h.update(b"\0" + rel.as_posix().encode() + b"\0")
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"<unreadable>")
    return h.hexdigest()


def function_code(fn: Callable[..., Any]) -> str:
    """The SHA-256 (hex) of a user function's code: its compiled code (every constant,
    name and nested function), its defaults, and its module's file as loaded (a module
    beside a recipe) or as it is now (a module on the Python path).

    Parameters
    ----------
    fn : Callable[..., Any]
        A user function of a recipe.

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> def f(x):
    ...     return x * 1.0
    >>> def g(x):
    ...     return x * 2.0
    >>> function_code(f) != function_code(g)
    True
    """
    h = hashlib.sha256()
    target = getattr(fn, "__wrapped__", fn)
    code = getattr(target, "__code__", None)
    if code is not None:
        h.update(marshal.dumps(code))
    else:  # a callable object or a builtin: its type's qualified name
        h.update(f"{type(target).__module__}.{type(target).__qualname__}".encode())
    for extra in ("__defaults__", "__kwdefaults__"):
        h.update(repr(getattr(target, extra, None)).encode())
    module = sys.modules.get(getattr(target, "__module__", "") or "")
    loaded = getattr(module, SOURCE_ATTR, None)
    if loaded is not None:
        h.update(str(loaded).encode())
    else:
        file = getattr(module, "__file__", None)
        try:
            h.update(Path(file).read_bytes() if file else b"")
        except OSError:
            h.update(b"<unreadable module file>")
    return h.hexdigest()


def _version(dist: str) -> str:
    """The installed version of the distribution ``dist``; ``-`` if it is not installed.

    Read from the names of the ``NAME-VERSION.dist-info`` folders on ``sys.path``, listed
    once per process (one ``importlib.metadata.version`` call scans every folder again:
    17 of them took 0.1 s); a distribution not found so falls back to that call.
    """
    found = _dist_infos().get(re.sub(r"[-_.]+", "_", dist).lower())
    if found is not None:
        return found
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "-"


@functools.lru_cache(maxsize=1)
def _dist_infos() -> dict[str, str]:
    """Normalised distribution name to version, from the ``.dist-info`` folders on
    ``sys.path``, the first of each name (as :mod:`importlib.metadata` finds it)."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            stem = name.removesuffix(".dist-info")
            if stem != name and stem.count("-") == 1:
                dist, version = stem.split("-")
                found.setdefault(re.sub(r"[-_.]+", "_", dist).lower(), version)
    return found
