"""numba's compiled kernels, cached on disk where this user can write.

numba caches compiled code beside the source (``__pycache__``) or, when that folder is not
writable (a site-wide install), in the user's cache folder. A user with neither (a service
account whose home does not exist) would get ``RuntimeError: cannot cache function`` at
import. Here the cache goes to ``~/.cache/pangeo-hpc/numba`` or a private temporary folder
in that case, and caching is off only if nothing is writable.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
from numba.core import config as numba_config


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def _choose_cache() -> bool:
    """Whether to cache; sets numba's cache folder if the package's is not writable."""
    if numba_config.CACHE_DIR or os.access(Path(__file__).parent, os.W_OK):
        return True  # the user's NUMBA_CACHE_DIR, or __pycache__ beside the source
    candidates = [
        Path.home() / ".cache" / "pangeo-hpc" / "numba",
        Path(tempfile.gettempdir()) / f"pangeo-hpc-numba-{os.getuid()}",
    ]
    for folder in candidates:
        if _writable(folder):
            numba_config.CACHE_DIR = str(folder)
            return True
    return False


CACHE = _choose_cache()


def njit(func: Callable[..., Any]) -> Callable[..., Any]:
    """``numba.njit(nogil=True, cache=...)``: compiled, releasing the GIL, cached if possible.

    Parameters
    ----------
    func : Callable[..., Any]
        A function numba can compile.

    Returns
    -------
    Callable[..., Any]
        The compiled function.

    Examples
    --------
    A kernel of a module (numba caches by the source file: not one typed in a session):

    >>> @njit  # doctest: +SKIP
    ... def total(values):
    ...     out = 0.0
    ...     for v in values:
    ...         out += v
    ...     return out
    """
    return numba.njit(nogil=True, cache=CACHE)(func)
