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
its folder; a file inside would be an entry Icechunk does not know), through the guarded
S3 writer (:func:`~pangeo_hpc.write.s3_outputs.put_marked`: it carries the package's mark,
kind :data:`KIND`; an object of that name it did not write is refused, never replaced),
and removes it once the first commit is made or what it made is removed. A later run that
finds a repository whose ``main`` holds nothing but its initial snapshot, with the claim
beside it, knows it as its own leftover (:func:`is_leftover`): it removes it and starts
again. A repository a user made has no claim, and one with a commit has a history: both
are refused as before.
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

from pangeo_hpc.errors import InputError, named
from pangeo_hpc.write.s3_guard import S3Target, head, marked_kind
from pangeo_hpc.write.s3_outputs import put_marked, remove_marked

__all__ = ["KIND", "SUFFIX", "claim_key", "drop_claim", "is_leftover", "put_claim"]

#: the end of a claim's name
SUFFIX = ".pangeo-hpc-new"
#: the kind in a claim's mark
KIND = "icechunk-claim"


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


def put_claim(dest: S3Target, flag: str = "out") -> None:
    """Write the claim on a new repository at ``dest`` (who made it, when); one of ours
    there (a killed run's) is written over.

    Parameters
    ----------
    dest : S3Target
        The repository's prefix, checked empty.
    flag : str, optional
        How the user named ``dest``, for messages.

    Raises
    ------
    InputError
        If an object pangeo-hpc did not write has the claim's name; nothing is written.

    Examples
    --------
    >>> put_claim(S3Target.of("s3://results/era5/sst.icechunk"))  # doctest: +SKIP
    """
    key = claim_key(dest)
    doc = {"url": dest.url, "host": socket.gethostname(), "pid": os.getpid(), "time": time.time()}
    body = json.dumps(doc).encode()
    attrs = head(dest, key)
    if attrs is not None and marked_kind(attrs) != KIND:
        raise InputError(
            f"{named(flag, dest.url)}: s3://{dest.bucket}/{key} is an object pangeo-hpc did "
            "not write, where it keeps the claim on a new repository: remove it or give "
            "another prefix (nothing was changed)",
            param=(flag,) if flag.isidentifier() else (),
        )
    put_marked(dest, key, body, kind=KIND, mode="create" if attrs is None else None)


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
    remove_marked(dest, [claim_key(dest)])  # only an object carrying the package's mark


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
    history = list(repo.ancestry(branch="main"))
    if len(history) != 1 or len(list(repo.list_branches())) != 1 or list(repo.list_tags()):
        return False
    return marked_kind(head(dest, claim_key(dest))) == KIND
