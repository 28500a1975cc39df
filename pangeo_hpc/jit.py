"""numba's compiled kernels, cached on disk where this user can write.

numba caches compiled code beside the source (``__pycache__``) or, when that folder is not
writable (a site-wide install), in the user's cache folder. A user with neither (a service
account whose home does not exist) would get ``RuntimeError: cannot cache function`` at
import. Here the cache goes to ``~/.cache/pangeo-hpc/numba`` or a private temporary folder
in that case, and caching is off only if nothing is writable.

A kernel's first call in a process costs numba's start, even with its code cached: 0.35-0.45
s on the 2-core VM (numba's typing and target registries import ``numba.typed``,
``scipy.linalg`` and more), 0.9 s when two reading threads wait for it. A run that reads
little spends more on that than on its loops, so within :func:`numpy_twins` the kernels
that have a NumPy twin giving the same bits (a byte shuffle; sums added row after row in
float64) use the twin while none of this package's kernels has started numba
(:func:`use_twins`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
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


def njit(func: Callable[..., Any] | None = None, *, fastmath: Any = False) -> Any:
    """``numba.njit(nogil=True, cache=...)``: compiled, releasing the GIL, cached if possible;
    every kernel of the package is made here, so that :func:`use_twins` sees it loaded.

    Parameters
    ----------
    func : Callable[..., Any], optional
        A function numba can compile; none: a decorator with ``fastmath``.
    fastmath : bool or set of str, optional
        numba's ``fastmath`` (e.g. ``{"reassoc", "contract"}``: sums that vectorise, in
        an order fixed by the compiled code); default off.

    Returns
    -------
    Callable[..., Any]
        The compiled function (or, without ``func``, a decorator).

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
    if func is None:
        return lambda f: njit(f, fastmath=fastmath)
    kernel = numba.njit(nogil=True, cache=CACHE, fastmath=fastmath)(func)
    _KERNELS.append(kernel)
    return kernel


#: every kernel :func:`njit` made (its ``overloads`` fill once numba has loaded it)
_KERNELS: list[Any] = []
#: open :func:`numpy_twins` blocks of this process (its threads share them)
_TWINS = [0]
_LOCK = threading.Lock()
#: whether one of :data:`_KERNELS` has been loaded (numba started) in this process
_STARTED = [False]


@contextlib.contextmanager
def numpy_twins() -> Iterator[None]:
    """Within: kernels with a NumPy twin of the same bits use it (:func:`use_twins`), in
    every thread of this process (a run's threads compute its tasks).

    Yields
    ------
    None

    Examples
    --------
    >>> with numpy_twins():
    ...     inside = _TWINS[0] > 0
    >>> inside, _TWINS[0]
    (True, 0)
    """
    with _LOCK:
        _TWINS[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _TWINS[0] -= 1


def use_twins() -> bool:
    """Whether a kernel with a NumPy twin uses it now: inside :func:`numpy_twins`, and no
    kernel of this package has been loaded by numba in this process yet (once one has, its
    start is paid and the compiled loops are faster).

    Returns
    -------
    bool
        Use the twin.

    Examples
    --------
    >>> use_twins()  # outside numpy_twins(): the compiled kernels
    False
    """
    if _TWINS[0] == 0 or _STARTED[0]:
        return False
    if any(k.overloads for k in _KERNELS):  # numba's start is paid, for good
        _STARTED[0] = True
        return False
    return True
