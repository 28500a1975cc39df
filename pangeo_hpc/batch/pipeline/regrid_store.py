"""Regridding weights kept in the state cache's folder, between runs.

:func:`~pangeo_hpc.recipes.regrid.regrid` builds its weights from coordinates alone and
looks them up in the store in use (:func:`~pangeo_hpc.recipes.regrid.using_store`). A
recipe run uses this one: entries of the state cache
(:class:`~pangeo_hpc.batch.incremental.state_cache.StateCache`), so the cache's rules hold
for them as for states: keys that hold everything the weights depend on (both grids, the
method, the code: :func:`~pangeo_hpc.recipes.regrid.weights_key`), sealed with their
SHA-256 and checked before they are parsed, written whole or not at all, least recently
used evicted beyond ``pangeo-hpc.cache.max-size``, a damaged entry a warning and a miss,
``--no-cache`` none of it. ``cache list`` shows them as recipe ``(regrid weights)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pangeo_hpc.batch.incremental.state_cache import StateCache

__all__ = ["RECIPE", "CachedWeights"]

#: what ``cache list`` shows in the recipe column of a weights entry
RECIPE = "(regrid weights)"


class CachedWeights:
    """A :class:`~pangeo_hpc.recipes.regrid.WeightsStore` in a state cache's folder.

    Parameters
    ----------
    cache : StateCache
        The state cache whose folder holds the weights.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.batch import StateCache
    >>> from pangeo_hpc.batch.pipeline.regrid_store import CachedWeights
    >>> weights = CachedWeights(StateCache("states-weights"))
    >>> weights.put("e" * 64, {"S": np.ones(4)}, {})
    >>> weights.get("e" * 64)["S"]
    array([1., 1., 1., 1.])
    """

    __slots__ = ("cache",)

    def __init__(self, cache: StateCache) -> None:
        self.cache = cache

    def get(self, key: str) -> dict[str, np.ndarray] | None:
        """The weights stored under ``key`` by :meth:`put`, or ``None`` (a miss, or an
        entry of something else).

        Parameters
        ----------
        key : str
            The weights' key.

        Returns
        -------
        dict or None
            The arrays by name, or ``None``.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.batch import StateCache
        >>> from pangeo_hpc.batch.pipeline.regrid_store import CachedWeights
        >>> cache = StateCache("states-weights-get")
        >>> _ = cache.put("f" * 64, {"sum": np.zeros(2)}, {"recipe": "era5-sst-mean"})
        >>> CachedWeights(cache).get("f" * 64) is None  # a state, not weights
        True
        """
        found = self.cache.get(key)
        if found is None or found[1].get("recipe") != RECIPE:
            return None
        return found[0]

    def put(self, key: str, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Store the weights ``arrays`` under ``key``, marked as regridding weights for
        ``cache list``.

        Parameters
        ----------
        key : str
            The weights' key.
        arrays : dict[str, np.ndarray]
            The weights' arrays by name.
        meta : dict[str, Any]
            What they regrid (``regrid``, ``source``, ``target``).

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.batch import StateCache
        >>> from pangeo_hpc.batch.pipeline.regrid_store import CachedWeights
        >>> cache = StateCache("states-weights-put")
        >>> CachedWeights(cache).put("e" * 64, {"S": np.ones(4)}, {})
        >>> [entry.meta["recipe"] for entry in cache.entries()]  # as `cache list` shows it
        ['(regrid weights)']
        """
        said = f"{meta.get('regrid')}: {meta.get('source')} -> {meta.get('target')}"
        self.cache.put(key, arrays, {"recipe": RECIPE, "result": said, **meta})
