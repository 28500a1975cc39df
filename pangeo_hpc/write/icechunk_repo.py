"""How this package knows an Icechunk repository it wrote, local or on S3.

An Icechunk repository holds only Icechunk's own entries at its top (:data:`ENTRIES`:
``refs``, ``snapshots``, ``manifests``, ...), and no file of ours can sit beside them
(a marker file would be an entry Icechunk does not know). The mark is in the history
instead: every commit this package makes carries ``written_by: pangeo-hpc X.Y`` and
``kind: icechunk`` in its metadata (:func:`commit_mark`). A repository is ours when it
holds nothing but Icechunk's entries and the tip of its ``main`` branch carries that mark
(:func:`tip_is_ours`): a commit a user made on top of ours, a repository a user made, or a
folder with a file of theirs beside the entries is not, and
:mod:`pangeo_hpc.write.guard` refuses it.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pangeo_hpc.extras import missing
from pangeo_hpc.write.marks import WRITTEN_BY

__all__ = [
    "BRANCH",
    "ENTRIES",
    "KIND",
    "KINDS",
    "REFERENCES",
    "commit_mark",
    "is_our_repository",
    "tip",
    "tip_is_ours",
]

#: the output kind of a repository (guard.py's ``kind``), also in each commit's metadata
KIND = "icechunk"
#: the kind of a repository of virtual references (``index --format icechunk``,
#: :mod:`pangeo_hpc.io.virtual_refs`)
REFERENCES = "icechunk-references"
#: the kinds of repository this package writes
KINDS = (KIND, REFERENCES)
#: the branch every run commits to
BRANCH = "main"
#: the names at the top of an Icechunk repository (1.x; ``repo`` is 2.x's)
ENTRIES = frozenset(
    {"config.yaml", "refs", "snapshots", "manifests", "chunks", "transactions", "repo"}
)


def commit_mark(kind: str = KIND) -> dict[str, str]:
    """The metadata that marks a commit as this package's.

    Parameters
    ----------
    kind : str, optional
        The repository's kind: :data:`KIND` (a result's) or :data:`REFERENCES`
        (``index``'s virtual references).

    Returns
    -------
    dict[str, str]
        Key -> value.

    Examples
    --------
    >>> commit_mark()
    {'written_by': 'pangeo-hpc ...', 'kind': 'icechunk'}
    """
    return {"written_by": f"{WRITTEN_BY} {version('pangeo-hpc')}", "kind": kind}


def only_entries(names: Iterable[str]) -> bool:
    """Whether ``names`` (the top-level names of a folder or prefix) are an Icechunk
    repository's and nothing else.

    Parameters
    ----------
    names : Iterable[str]
        Top-level names.

    Returns
    -------
    bool
        Whether they are a repository's alone.

    Examples
    --------
    >>> only_entries({"config.yaml", "refs", "snapshots", "manifests", "transactions", "chunks"})
    True
    >>> only_entries({"refs", "snapshots", "notes.txt"})
    False
    """
    names = set(names)
    return {"refs", "snapshots"} <= names and names <= ENTRIES


def tip(repo: Any) -> Any:
    """The ``SnapshotInfo`` at the tip of :data:`BRANCH`.

    Parameters
    ----------
    repo : icechunk.Repository
        An open ``icechunk.Repository``.

    Returns
    -------
    icechunk.SnapshotInfo
        The snapshot.

    Examples
    --------
    >>> import icechunk, os
    >>> import numpy as np
    >>> import xarray as xr
    >>> from pangeo_hpc.write.icechunk_out import commit_dataset
    >>> ds = xr.Dataset({"tas": (("lat", "lon"), np.zeros((2, 3)))})
    >>> _ = commit_dataset("tip_repo", ds, message="era5 mean", metadata={})
    >>> repo = open_repository(icechunk.local_filesystem_storage(os.path.abspath("tip_repo")))
    >>> tip(repo).message
    'era5 mean'
    """
    return next(iter(repo.ancestry(branch=BRANCH)))


def tip_is_ours(repo: Any, kind: str = KIND) -> bool:
    """Whether the tip of ``repo``'s :data:`BRANCH` is a commit of this package, to a
    repository of ``kind``.

    Parameters
    ----------
    repo : icechunk.Repository
        An open ``icechunk.Repository``.
    kind : str, optional
        The repository's kind: :data:`KIND` (a result's) or :data:`REFERENCES`.

    Returns
    -------
    bool
        Whether the tip carries :func:`commit_mark` of ``kind``.

    Examples
    --------
    >>> import icechunk, os
    >>> import numpy as np
    >>> import xarray as xr
    >>> from pangeo_hpc.write.icechunk_out import commit_dataset
    >>> ds = xr.Dataset({"tas": (("lat", "lon"), np.zeros((2, 3)))})
    >>> _ = commit_dataset("ours_repo", ds, message="era5 mean", metadata={})
    >>> repo = open_repository(icechunk.local_filesystem_storage(os.path.abspath("ours_repo")))
    >>> tip_is_ours(repo), tip_is_ours(repo, kind=REFERENCES)
    (True, False)
    """
    meta = tip(repo).metadata or {}
    return str(meta.get("written_by", "")).startswith(WRITTEN_BY) and meta.get("kind") == kind


def open_repository(storage: Any) -> Any | None:
    """The repository in ``storage``, or ``None`` if there is none it can open.

    Parameters
    ----------
    storage : icechunk.Storage
        An ``icechunk.Storage``.

    Returns
    -------
    icechunk.Repository or None
        The repository, or ``None``.

    Examples
    --------
    >>> import icechunk, os
    >>> open_repository(icechunk.local_filesystem_storage(os.path.abspath("no_repo"))) is None
    True
    """
    import icechunk

    try:
        return icechunk.Repository.open(storage)
    except (icechunk.IcechunkError, ValueError):
        return None


def is_our_repository(folder: Path, names: set[str] | None = None) -> bool:
    """Whether the local ``folder`` is an Icechunk repository this package wrote and
    holds nothing else (the module's rules). Without icechunk installed, none is.

    Parameters
    ----------
    folder : Path
        A local folder.
    names : set[str], optional
        Its top-level names, if already listed.

    Returns
    -------
    bool
        Whether it is ours.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> from pathlib import Path
    >>> from pangeo_hpc.write.icechunk_out import commit_dataset
    >>> ds = xr.Dataset({"tas": (("lat", "lon"), np.zeros((2, 3)))})
    >>> _ = commit_dataset("our_repo", ds, message="era5 mean", metadata={})
    >>> is_our_repository(Path("our_repo"))
    True
    """
    names = {p.name for p in folder.iterdir()} if names is None else names
    if not only_entries(names) or missing("stores"):
        return False
    import icechunk

    repo = open_repository(icechunk.local_filesystem_storage(str(folder)))
    try:
        return repo is not None and tip_is_ours(repo)
    except (icechunk.IcechunkError, StopIteration):
        return False
