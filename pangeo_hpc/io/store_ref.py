"""Where a Zarr store or Icechunk repository is, and which version of it to read: what a
recipe's ``store:`` names (:mod:`pangeo_hpc.batch.chains.recipe_yaml`). Kept apart from
:mod:`pangeo_hpc.io.stores`, which opens stores with xarray: reading a recipe (``list``,
``--help``, a flag's error) imports no scientific stack (``tests/test_cli_startup.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pangeo_hpc.errors import InputError
from pangeo_hpc.s3.options import is_s3

__all__ = ["StoreRef"]


@dataclass(frozen=True, slots=True)
class StoreRef:
    """Where a store is, and which version of a repository to read.

    Attributes
    ----------
    location : str
        A local path or ``s3://bucket/prefix``.
    branch : str, optional
        An Icechunk branch; default ``main`` when no ``snapshot`` is given.
    snapshot : str, optional
        An Icechunk snapshot id (then ``branch`` must not be given).

    Examples
    --------
    >>> StoreRef("s3://bucket/era5.icechunk", snapshot="1CECHNKREP0F1RSTCMT0")
    StoreRef(location='s3://bucket/era5.icechunk', branch=None, snapshot='1CECHNKREP0F1RSTCMT0')
    """

    location: str
    branch: str | None = None
    snapshot: str | None = None

    def __post_init__(self) -> None:
        if self.branch is not None and self.snapshot is not None:
            raise InputError(
                f"store {self.location!r} is given both branch={self.branch!r} and "
                f"snapshot={self.snapshot!r}: keep one",
                param="snapshot",
            )

    @property
    def url(self) -> str:
        """An absolute path, or the ``s3://`` URL without a trailing slash."""
        if is_s3(self.location):
            return self.location.rstrip("/")
        return os.path.abspath(os.path.expanduser(self.location))
