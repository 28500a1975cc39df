"""Proof of laziness: a Dask scheduler that raises (as xarray's tests do)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dask


@contextmanager
def raise_if_dask_computes() -> Iterator[None]:
    """Fail if anything inside the block makes Dask compute (as xarray's tests do)."""

    def scheduler(dsk, keys, **kwargs):
        raise RuntimeError(f"Dask was asked to compute {keys!r} inside a lazy recipe")

    with dask.config.set(scheduler=scheduler):
        yield
