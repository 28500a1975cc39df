"""Optional dependencies: which extra of ``pyproject.toml`` a feature needs, and one message
that names it.

The core (local and mounted trees, recipes, clusters, batch runs, planning) needs only the
``[project] dependencies``. Seven features need more, installed as extras:

* ``s3``: ``s3://`` sources, byte-range indexes, listings, inventories (s3fs, obstore,
  kerchunk, arro3-core);
* ``stores``: Zarr and Icechunk stores as datasets, ``--format icechunk`` outputs and Icechunk
  virtual references
  (icechunk, virtualizarr);
* ``lab``: JupyterLab with the Dask dashboard inside (jupyterlab, jupyter-server-proxy,
  dask-labextension, hvplot, datashader);
* ``demo``: the synthetic demo data's coastlines (global-land-mask);
* ``regions``: regionmask, for polygon regions of your own in ``select_region(regions=...)``
  (the AR6 reference regions ship with the package and need nothing more);
* ``plot``: maps in a projection (``plot: {projection: robinson}`` in a recipe), by
  cartopy (the default longitude-by-latitude map needs nothing more);
* ``gateway``: ``--cluster gateway``, clusters from a dask-gateway server (dask-gateway).

``pip install 'pangeo-hpc[all]'`` installs all seven. Nothing is imported here: a feature
calls :func:`require` before its first import of such a package, so that ``import
pangeo_hpc`` works without them and the feature fails with
:class:`~pangeo_hpc.errors.MissingExtraError` rather than a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib.util

from pangeo_hpc.errors import InputError, MissingExtraError

#: extra -> {module to import: distribution that provides it}; tests/test_extras.py checks
#: that the distributions are pyproject.toml's optional-dependencies of the same name
EXTRAS: dict[str, dict[str, str]] = {
    "s3": {
        "s3fs": "s3fs",
        "obstore": "obstore",
        "kerchunk": "kerchunk",
        "arro3.core": "arro3-core",
    },
    "stores": {"icechunk": "icechunk", "virtualizarr": "virtualizarr"},
    "lab": {
        "jupyterlab": "jupyterlab",
        "jupyter_server_proxy": "jupyter-server-proxy",
        "dask_labextension": "dask-labextension",
        "hvplot": "hvplot",
        "datashader": "datashader",
    },
    "regions": {"regionmask": "regionmask"},
    "demo": {"global_land_mask": "global-land-mask"},
    "plot": {"cartopy": "cartopy"},
    "gateway": {"dask_gateway": "dask-gateway"},
}

#: modules found importable once (packages are not uninstalled while a process runs)
_found: set[str] = set()


def _importable(module: str) -> bool:
    if module in _found:
        return True
    try:
        ok = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or None in sys.modules
        ok = False
    if ok:
        _found.add(module)
    return ok


def missing(extra: str) -> list[str]:
    """The distributions of ``extra`` that are not installed (importable) here.

    Parameters
    ----------
    extra : {"s3", "lab", "demo"}
        The optional-dependency group of ``pyproject.toml``.

    Returns
    -------
    list of str
        Distribution names, e.g. ``["obstore"]``; empty when the extra is complete.

    Raises
    ------
    InputError
        For an extra that does not exist.

    Examples
    --------
    >>> missing("s3")  # here every package of the s3 extra is installed
    []
    """
    if extra not in EXTRAS:
        raise InputError(f"extra {extra!r} is unknown: use one of {', '.join(EXTRAS)}")
    return [dist for module, dist in EXTRAS[extra].items() if not _importable(module)]


def require(extra: str, feature: str) -> None:
    """Raise unless every package of ``extra`` can be imported.

    Parameters
    ----------
    extra : {"s3", "lab", "demo"}
        The optional-dependency group of ``pyproject.toml``.
    feature : str
        What needs it, for the message, e.g. ``"reading s3://era5-pds"``.

    Raises
    ------
    MissingExtraError
        An :class:`ImportError` (and an :class:`~pangeo_hpc.errors.InputError`) naming the
        missing packages and ``pip install 'pangeo-hpc[EXTRA]'``.

    Examples
    --------
    >>> require("s3", "reading s3://era5-pds")  # installed: nothing happens
    >>> require("gpu", "a GPU run")
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: extra 'gpu' is unknown: use one of ...
    """
    gone = missing(extra)
    if gone:
        verb = "is" if len(gone) == 1 else "are"
        raise MissingExtraError(
            f"{feature} needs {', '.join(gone)}, which {verb} not installed: "
            f"pip install 'pangeo-hpc[{extra}]'"
        )
