"""Paths users give, checked: a one-line InputError naming the value and the fix, instead of
an AttributeError from deep inside pathlib."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pangeo_hpc.errors import InputError, shown


def check_path(value: Any, name: str = "path") -> str | Path:
    """``value`` if it is a path (``str`` or ``os.PathLike``), else an InputError.

    Parameters
    ----------
    value : Any
        What was given.
    name : str, optional
        The parameter's name, for the message.

    Returns
    -------
    str | Path
        ``value``.

    Raises
    ------
    InputError
        When ``value`` is not a path.

    Examples
    --------
    >>> check_path("/scratch/run")
    '/scratch/run'
    >>> check_path(None, "out")
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: out None is not a path: give a folder or file name, ...
    """
    if isinstance(value, str | os.PathLike) and str(value):
        return value
    raise InputError(
        f"{name} {shown(value)} is not a path: give a folder or file name, or s3://BUCKET/PREFIX"
    )
