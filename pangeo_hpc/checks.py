"""Type checks of what the public functions are given: one-line InputErrors naming the value
and the fix, instead of an AttributeError from deep inside xarray or pathlib."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import xarray as xr

from .errors import InputError


def _shown(value: object) -> str:
    text = " ".join(repr(value).split())  # one line, whatever the value
    return text if len(text) <= 60 else text[:57] + "..."


def check_path(value: Any, name: str = "path") -> str | Path:
    """``value`` if it is a path (``str`` or ``os.PathLike``), else an InputError."""
    if isinstance(value, str | os.PathLike) and str(value):
        return value
    raise InputError(
        f"{name} {_shown(value)} is not a path: give a folder or file name, or s3://BUCKET/PREFIX"
    )


def check_dataarray(value: Any, recipe: str) -> xr.DataArray:
    """``value`` if it is an xarray DataArray, else an InputError naming the recipe."""
    if isinstance(value, xr.DataArray):
        return value
    hint = (
        "pick one variable, e.g. ds.sea_surface_temperature"
        if isinstance(value, xr.Dataset)
        else "open data with open_era5() or xarray and pass one variable"
    )
    raise InputError(
        f"{recipe}() needs an xarray DataArray, not {type(value).__name__} {_shown(value)}: {hint}"
    )
