"""Register the package defaults (``pangeo-hpc.yaml``) with :mod:`dask.config`.

Functions read options at call time with :func:`get`, never in their signatures, so that
``dask.config.set`` and ``DASK_PANGEO_HPC__...`` environment variables take effect.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dask.config
import yaml

_DEFAULTS = Path(__file__).with_name("pangeo-hpc.yaml")


def _register() -> None:
    with _DEFAULTS.open() as f:
        defaults = yaml.safe_load(f)
    # user values already collected (~/.config/dask/*.yaml, DASK_* variables) take priority
    dask.config.update_defaults(defaults)


def get(key: str, override: Any = None) -> Any:
    """Return ``override`` if given, else the option ``pangeo-hpc.<key>``.

    Parameters
    ----------
    key : str
        The option's name below ``pangeo-hpc.`` (``"s3.index-cache"``).
    override : Any, optional
        A value given by the caller; ``None`` reads the option.

    Returns
    -------
    Any
        ``override``, or the option's value (from ``pangeo-hpc.yaml`` and the user's Dask config).

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"pangeo-hpc.s3.max-retries": 7}):
    ...     get("s3.max-retries"), get("s3.max-retries", 2)
    (7, 2)
    """
    if override is not None:
        return override
    return dask.config.get(f"pangeo-hpc.{key}")


_register()
