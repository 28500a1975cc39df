"""A Dataset committed to an Icechunk repository: one commit on ``main`` per run that
changes it, in a local folder or under an ``s3://bucket/prefix``.

The rules are :mod:`pangeo_hpc.write.guard`'s, for a repository (recognised by
:mod:`pangeo_hpc.write.icechunk_repo`):

* the target may not be, contain or lie inside an input;
* a **new or empty** target gets a new repository. A local one is made and given its
  first commit in a temporary folder that :func:`~pangeo_hpc.write.outputs.atomic_dir`
  renames into place; on S3 (no rename) the repository is made under the prefix, and
  removed again if its first commit fails (the prefix was empty when checked); one left
  by a run killed before its first commit is known by its claim
  (:mod:`pangeo_hpc.write.s3_claim`), removed and made again;
* an **existing repository of ours** (the tip of ``main`` marked) is committed to, never
  replaced: every earlier snapshot stays readable (``repo.readonly_session(
  snapshot_id=...)``). A local one is committed to under the lock of its writers
  (:func:`~pangeo_hpc.write.swap.target_lock`: Icechunk's local storage does not make
  concurrent commits safe); on S3, Icechunk's conditional update of the branch does;
* **anything else** (a user's files, a repository a user made or committed to, another
  kind of output of ours) is refused in one line, and nothing is written.

Icechunk's transactions give the rest: the Dataset is written into a session, which no
reader sees until :meth:`icechunk.Session.commit` moves the branch in one step; a run that
fails before (the hooks :data:`BEFORE_COMMIT` let the tests fail it there) leaves the
branch where it was. A Dataset equal to the tip's (values, coordinates, attributes but
``history``, which says when it was made) is not committed: the session is dropped and
:class:`Committed` says why.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pangeo_hpc.errors import InputError, named
from pangeo_hpc.extras import require
from pangeo_hpc.s3 import icechunk_access
from pangeo_hpc.s3.options import S3Options, is_s3
from pangeo_hpc.write.guard import check_folder, folder_kind
from pangeo_hpc.write.icechunk_repo import (
    BRANCH,
    KIND,
    KINDS,
    commit_mark,
    only_entries,
    open_repository,
    tip,
    tip_is_ours,
)
from pangeo_hpc.write.outputs import atomic_dir
from pangeo_hpc.write.s3_claim import drop_claim, is_leftover, put_claim
from pangeo_hpc.write.s3_guard import (
    MANIFEST,
    S3Target,
    check_place,
    list_objects,
    read_manifest,
)
from pangeo_hpc.write.swap import target_lock

__all__ = [
    "BEFORE_COMMIT",
    "MADE",
    "Committed",
    "check_repository",
    "commit_dataset",
    "s3_repository",
]

#: called with the writable session once the Dataset is written into it, before the commit:
#: tests fail a run there
BEFORE_COMMIT: list[Callable[[Any], None]] = []
#: global attributes that say when and by which command a result was made: a Dataset that
#: differs from the tip's only in these is not committed again
MADE = frozenset({"history"})


@dataclass(frozen=True)
class Committed:
    """What :func:`commit_dataset` did.

    Attributes
    ----------
    where : str
        The repository: a folder, or ``s3://bucket/prefix``.
    snapshot : str
        The id of the tip of ``main`` now: the new commit's, or the unchanged tip's.
    parent : str or None
        The tip before (``None`` for a new repository).
    new : bool
        Whether a commit was made.
    why : str
        Why no commit was made (empty when one was).

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> ds = xr.Dataset({"tas": (("lat", "lon"), np.zeros((2, 3)))})
    >>> done = commit_dataset("committed_repo", ds, message="era5 mean", metadata={})
    >>> done.where, done.parent, done.new
    ('committed_repo', None, True)
    """

    where: str
    snapshot: str
    parent: str | None
    new: bool
    why: str = ""


def _refused(flag: str, message: str) -> InputError:
    return InputError(message, param=(flag,) if flag.isidentifier() else ())


def check_repository(
    target: str | os.PathLike[str],
    *,
    inputs: Iterable[object] = (),
    flag: str = "out",
    s3: S3Options | None = None,
    kind: str = KIND,
) -> Path | str:
    """Check that ``target`` may receive a commit (the module's rules; nothing is written).

    Parameters
    ----------
    target : str or os.PathLike[str]
        The repository: a folder or an ``s3://`` prefix.
    inputs : Iterable[object], optional
        The data read: the output may not be, contain or lie inside one (paths; URLs and
        ``None`` are skipped).
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` target.
    kind : str, optional
        The repository's kind: :data:`~pangeo_hpc.write.icechunk_repo.KIND` (a result's),
        or :data:`~pangeo_hpc.write.icechunk_repo.REFERENCES` (``index``'s).

    Returns
    -------
    pathlib.Path or str
        The folder, or the ``s3://bucket/prefix`` URL (normalised).

    Raises
    ------
    InputError
        For an input, a file, or a folder or prefix holding anything but a repository of
        this package; nothing is changed.

    Examples
    --------
    >>> print(check_repository("results/era5-sst.icechunk"))  # new: may receive a commit
    results/era5-sst.icechunk
    >>> check_repository("data/era5/repo", inputs=["data/era5"])
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: out='data/era5/repo' lies inside the input 'data/era5': ...
    """
    inputs = list(inputs)
    if not is_s3(target):
        return check_folder(target, kind=kind, inputs=inputs, flag=flag)
    dest = S3Target.of(str(target), s3, flag=flag)
    check_place(dest, inputs, flag)
    keys = list_objects(dest)
    if keys and not _s3_ours(dest, keys, flag, kind):
        first = min(keys)
        raise _refused(
            flag,
            f"{named(flag, dest.url)} holds objects that are no Icechunk repository of "
            f"pangeo-hpc (first: s3://{dest.bucket}/{first}): give a new or empty prefix "
            "(nothing was changed)",
        )
    return dest.url


def _s3_ours(dest: S3Target, keys: Mapping[str, Any], flag: str, kind: str) -> bool:
    """Whether the objects ``keys`` under ``dest`` are a repository of ours (a result
    run of ours there is named as such)."""
    if dest.key(MANIFEST) in keys and read_manifest(dest):
        raise _refused(
            flag,
            f"{named(flag, dest.url)} holds a result output of pangeo-hpc, not an "
            f"{kind} repository: give another prefix (nothing was changed)",
        )
    top = {k[len(dest.prefix) + 1 :].partition("/")[0] for k in keys}
    if not only_entries(top):
        return False
    repo = open_repository(icechunk_access.storage(dest.url, dest.s3))
    if repo is None:
        return False
    if is_leftover(dest, repo):  # a run of ours killed before its first commit
        return True
    other = next((k for k in KINDS if k != kind and tip_is_ours(repo, k)), None)
    if other is not None:
        raise _refused(
            flag,
            f"{named(flag, dest.url)} holds an {other} repository of pangeo-hpc, not an "
            f"{kind} repository: give another prefix (nothing was changed)",
        )
    return tip_is_ours(repo, kind)


def commit_dataset(
    target: str | os.PathLike[str],
    ds: Any,
    *,
    message: str,
    metadata: Mapping[str, Any],
    inputs: Iterable[object] = (),
    flag: str = "out",
    s3: S3Options | None = None,
) -> Committed:
    """Write ``ds`` to ``main`` of the repository ``target`` as one commit.

    Parameters
    ----------
    target : str or path
        A local folder or ``s3://bucket/prefix``: new, empty, or a repository of this
        package (the module's rules).
    ds : xarray.Dataset
        The Dataset, encoded as for a file (CF attributes and encodings); it replaces the
        tip's contents in the new snapshot.
    message : str
        The commit's message.
    metadata : mapping
        JSON-able provenance for the commit's metadata; the package's mark is added.
    inputs : iterable
        What was read: the repository may not be, contain or lie inside any of them.
    flag : str
        How the user named ``target``, for messages.
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` target; default :meth:`S3Options.resolve`.

    Returns
    -------
    Committed
        The snapshot now at the tip, and whether it is new.

    Raises
    ------
    InputError
        If ``target`` may not be written, or ``main`` moved under this run (another
        writer); nothing is committed.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> ds = xr.Dataset({"tas": (("lat", "lon"), np.zeros((2, 3)))})
    >>> commit_dataset("sst_repo", ds, message="era5 mean", metadata={"recipe": "sst"}).new
    True
    >>> again = commit_dataset("sst_repo", ds, message="era5 mean", metadata={"recipe": "sst"})
    >>> again.new, again.why
    (False, "the result equals snapshot ...'s (only its history differs)")
    """
    require("stores", "--format icechunk")
    import icechunk

    inputs = list(inputs)
    where = check_repository(target, inputs=inputs, flag=flag, s3=s3)
    meta = json.loads(json.dumps({**metadata, **commit_mark()}, default=str))
    write = _Writer(ds, message, meta, flag)
    if isinstance(where, Path):
        if (
            where.is_dir() and any(where.iterdir()) and folder_kind(where) == KIND
        ):  # ours: committed to, under its writers' lock
            with target_lock(where):
                check_repository(where, inputs=inputs, flag=flag)
                repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(where)))
                return write(repo, str(where), created=False)
        with atomic_dir(where, kind=KIND, inputs=inputs, flag=flag) as tmp:
            repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp)))
            done = write(repo, str(where), created=True)
        return done
    with s3_repository(where, s3 or S3Options.resolve(), flag=flag) as (repo, created):
        return write(repo, where, created=created)


@contextmanager
def s3_repository(
    url: str,
    opts: S3Options,
    *,
    flag: str = "out",
    containers: Mapping[str, Any] | None = None,
    authorize: Any = None,
) -> Iterator[tuple[Any, bool]]:
    """The repository at ``url`` (checked by :func:`check_repository`) and whether it is
    new: opened if there is one, else created (under a claim:
    :mod:`pangeo_hpc.write.s3_claim`). A repository this made is removed again if the block
    raises (no repository without a commit of ours is left behind), and one a killed run
    left is removed and made again.

    Parameters
    ----------
    url : str
        ``s3://bucket/prefix``.
    opts : S3Options
        Endpoint and credentials (with keys: see :meth:`S3Options.for_writing`).
    flag : str
        How the user named ``url``, for messages.
    containers : mapping, optional
        ``{url prefix: icechunk.VirtualChunkContainer}`` the repository must have (virtual
        references): set at creation; added to an existing repository's configuration
        (saved, before any commit: a container added never changes what an earlier
        snapshot reads).
    authorize : dict, optional
        ``authorize_virtual_chunk_access`` (:func:`icechunk_access.credentials`).

    Yields
    ------
    tuple
        ``(icechunk.Repository, created)``.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> opts = S3Options(endpoint_url="http://localhost:8333").for_writing()
    >>> with s3_repository("s3://results/era5-sst", opts) as (repo, new):  # doctest: +SKIP
    ...     session = repo.writable_session("main")
    """
    import icechunk

    storage = icechunk_access.storage(url, opts)
    kw = {"authorize_virtual_chunk_access": authorize} if authorize is not None else {}
    dest = S3Target.of(url, opts, flag=flag)
    if icechunk.Repository.exists(storage) and is_leftover(dest, icechunk.Repository.open(storage)):
        _remove_new(dest)  # ours, left by a run killed before its first commit: made again
    if icechunk.Repository.exists(storage):
        repo = icechunk.Repository.open(storage, **kw)
        have = repo.config.virtual_chunk_containers or {}
        if any(have.get(p) != c for p, c in (containers or {}).items()):
            config = repo.config
            for container in (containers or {}).values():
                config.set_virtual_chunk_container(container)
            repo = icechunk.Repository.open(storage, config, **kw)
            repo.save_config()
        yield repo, False
        return
    config = None
    if containers:
        config = icechunk.RepositoryConfig.default()
        for container in containers.values():
            config.set_virtual_chunk_container(container)
    put_claim(dest, flag)  # known as ours if this run is killed before its first commit
    repo = icechunk.Repository.create(storage, config, **kw)
    try:
        yield repo, True
    except BaseException:
        _remove_new(dest)
        drop_claim(dest)
        raise
    drop_claim(dest)


@dataclass(frozen=True)
class _Writer:
    ds: Any
    message: str
    metadata: dict[str, Any]
    flag: str

    def __call__(self, repo: Any, where: str, *, created: bool) -> Committed:
        import icechunk

        before = tip(repo)
        if not created and not tip_is_ours(repo):  # a user's commit since it was checked
            raise _refused(
                self.flag,
                f"{named(self.flag, where)}: the tip of {BRANCH} ({before.id}) is not a "
                "commit of pangeo-hpc: give a new folder or prefix (nothing was changed)",
            )
        session = repo.writable_session(BRANCH)
        self.ds.to_zarr(session.store, mode="w", zarr_format=3, consolidated=False)
        for hook in BEFORE_COMMIT:
            hook(session)
        if not created and _same(repo.readonly_session(snapshot_id=before.id).store, session):
            why = f"the result equals snapshot {before.id}'s (only its {', '.join(MADE)} differs)"
            return Committed(where, before.id, before.parent_id, new=False, why=why)
        try:
            snapshot = session.commit(self.message, metadata=self.metadata)
        except icechunk.ConflictError as exc:
            raise _refused(
                self.flag,
                f"{named(self.flag, where)}: {BRANCH} moved while this run wrote (another "
                "writer): run again (nothing was committed)",
            ) from exc
        return Committed(where, snapshot, None if created else before.id, new=True)


def _same(old_store: Any, session: Any) -> bool:
    """Whether the Dataset in ``session`` equals the one in ``old_store``: the same values,
    coordinates and attributes but :data:`MADE`, both read back as a reader reads them."""
    import xarray as xr

    try:
        old = xr.open_zarr(old_store, consolidated=False).load()
    except (FileNotFoundError, KeyError, ValueError):  # no Dataset there
        return False
    new = xr.open_zarr(session.store, consolidated=False).load()
    if not new.equals(old) or set(new.variables) != set(old.variables):
        return False
    if any(new[v].attrs != old[v].attrs for v in new.variables):
        return False
    kept = [{k: v for k, v in d.attrs.items() if k not in MADE} for d in (new, old)]
    return bool(kept[0] == kept[1])


def _remove_new(dest: S3Target) -> None:
    """Remove the repository this run made under ``dest`` (empty when checked), whose first
    commit failed: no repository without a commit of ours is left behind."""
    import obstore

    keys = list(list_objects(dest))
    if keys:
        obstore.delete(dest.store, keys)
