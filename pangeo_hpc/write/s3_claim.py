"""A claim on a new Icechunk repository on S3, so that one a killed run left is known as ours.

On S3 a new repository cannot be made elsewhere and renamed into place: it is made under
its prefix (``Repository.create`` writes its configuration and initial snapshot there),
then given its first commit, which carries this package's mark
(:func:`~pangeo_hpc.write.icechunk_repo.commit_mark`). A run that fails in between removes
what it made; a run that is killed (SIGKILL, the node lost, the job's time up) cannot, and
the prefix then holds a repository without any commit of ours, which the next run would
refuse as a user's.

So before it creates the repository, a run writes a *claim*: a small object beside the
prefix (``<parent>/.<name>.pangeo-hpc-new``, as a local output's lock file sits beside
its folder; a file inside would be an entry Icechunk does not know), and deletes it once
the first commit is made or what it made is removed. A later run that finds a repository
whose ``main`` holds nothing but its initial snapshot, with the claim beside it, knows it
as its own leftover (:func:`is_leftover`): it removes it and starts again. A repository a
user made has no claim, and one with a commit has a history: both are refused as before.
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

from pangeo_hpc.write.s3_guard import S3Target

__all__ = ["SUFFIX", "claim_key", "drop_claim", "is_leftover", "put_claim"]

#: the end of a claim's name
SUFFIX = ".pangeo-hpc-new"


def claim_key(dest: S3Target) -> str:
    """The key of the claim on a new repository at ``dest``: beside its prefix.

    Parameters
    ----------
    dest : S3Target
        The repository's prefix.

    Returns
    -------
    str
        The claim's key in ``dest``'s bucket.

    Examples
    --------
    >>> from pangeo_hpc.write.s3_guard import S3Target
    >>> claim_key(S3Target.of("s3://results/era5/sst.icechunk"))
    'era5/.sst.icechunk.pangeo-hpc-new'
    >>> claim_key(S3Target.of("s3://results/sst"))
    '.sst.pangeo-hpc-new'
    """
    parent, _, name = dest.prefix.rpartition("/")
    return f"{parent}/.{name}{SUFFIX}" if parent else f".{name}{SUFFIX}"


def put_claim(dest: S3Target) -> None:
    """Write the claim on a new repository at ``dest`` (who made it, when).

    Parameters
    ----------
    dest : S3Target
        The repository's prefix, checked empty.

    Examples
    --------
    >>> put_claim(S3Target.of("s3://results/era5/sst.icechunk"))  # doctest: +SKIP
    """
    import obstore

    doc = {"url": dest.url, "host": socket.gethostname(), "pid": os.getpid(), "time": time.time()}
    obstore.put(dest.store, claim_key(dest), json.dumps(doc).encode())


def drop_claim(dest: S3Target) -> None:
    """Delete the claim on the repository at ``dest`` (none: nothing to do).

    Parameters
    ----------
    dest : S3Target
        The repository's prefix.

    Examples
    --------
    >>> drop_claim(S3Target.of("s3://results/era5/sst.icechunk"))  # doctest: +SKIP
    """
    import obstore

    try:
        obstore.delete(dest.store, claim_key(dest))
    except FileNotFoundError:
        pass


def is_leftover(dest: S3Target, repo: Any) -> bool:
    """Whether ``repo`` at ``dest`` is a new repository of a run of ours that was killed
    before its first commit: its ``main`` holds only the initial snapshot, and the claim
    is beside it.

    Parameters
    ----------
    dest : S3Target
        The repository's prefix.
    repo : icechunk.Repository
        The repository found there.

    Returns
    -------
    bool
        Whether it may be removed and made again.

    Examples
    --------
    >>> is_leftover(S3Target.of("s3://results/era5/sst.icechunk"), repo)  # doctest: +SKIP
    False
    """
    import obstore

    history = list(repo.ancestry(branch="main"))
    if len(history) != 1 or len(list(repo.list_branches())) != 1 or list(repo.list_tags()):
        return False
    try:
        obstore.get(dest.store, claim_key(dest), options={"head": True})
    except FileNotFoundError:
        return False
    return True
