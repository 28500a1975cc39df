"""The folder of the state cache: where it is, what in it is ours, who may own it.

Entries are ``<64 hex>.npz`` files in one flat folder marked ``state-cache``
(:func:`~pangeo_hpc.write.outputs.claim_tree`); writers' temporary files are
``.<entry>.<random>.tmp``. Only such names in such a folder are ever removed, and a folder
that another user owns or may write to is refused (:func:`check_owner`): a state planted
there would become a result. :class:`~pangeo_hpc.batch.incremental.state_cache.StateCache`
reads and writes the entries.

Unwritable: A folder that cannot be written (a read-only file system, no
permission) turns caching off as a full disk does (:meth:`StateCache.check_writable`
before a run's cluster starts, and at any put): hits are still read.

Eviction: least recently used first, beyond ``pangeo-hpc.cache.max-size``. "Used" is
the file's mtime, set by every :meth:`StateCache.get` with ``os.utime`` (atime is not
reliable under ``relatime`` or ``noatime``). Removals go through
:func:`~pangeo_hpc.write.outputs.remove_file`, which removes only ``<64 hex>.npz`` files
of a folder marked ``state-cache``.

Concurrency: several processes (two runs, or a run and ``cache clear``) may share the
folder without locks. Every entry appears whole through one rename and disappears through
one unlink; a reader that has opened an entry keeps reading it after another process
evicts or replaces it (POSIX keeps the inode), and one that finds it gone has a miss
(``FileNotFoundError`` is a miss, not a warning). Two writers of one key both succeed, and
their states are equal (same files, same chain), so whichever rename comes last is right.
Eviction by two processes at once may remove a little more than needed, never a file in
use by a writer (temporary names are not entries). No lock files, so none are left behind
by a killed run, and none depend on ``flock`` working over NFS or Lustre.
"""

from __future__ import annotations

import errno
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.errors import InputError, StorageError, named

__all__ = [
    "FLAG",
    "KIND",
    "Entry",
    "check_owner",
    "default_folder",
    "default_max_bytes",
    "file_size",
    "is_entry",
    "only_ours",
    "remove_stale_parts",
    "scan",
    "why_unwritable",
]

#: the kind in the folder's marker (:func:`pangeo_hpc.write.outputs.claim_tree`)
KIND = "state-cache"
#: how messages name the folder: the setting that chooses it
FLAG = "pangeo-hpc.cache.folder"
#: the name of an entry, and of the temporary file of one being written (atomic_file)
ENTRY = re.compile(r"[0-9a-f]{64}\.npz")
PART = re.compile(r"\.[0-9a-f]{64}\.npz\.[^/]+\.tmp|\.pangeo-hpc\.json\.[^/]+\.tmp")
#: a temporary file older than this was left by a killed writer: eviction removes it
STALE_PART_S = 3600.0
#: errors of a write that mean the folder cannot be written: caching off, the run goes on
UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


@dataclass(frozen=True, slots=True)
class Entry:
    """One cached state, as ``cache list`` shows it.

    Attributes
    ----------
    key : str
        The entry's key (64 hex digits).
    path : Path
        Its file.
    size : int
        Its bytes.
    last_used : float
        When it was last read or written (mtime, seconds since the epoch).
    meta : dict[str, Any], optional
        What the writer recorded (recipe, chain, piece).
    damaged : str, optional
        Why it cannot be read, or ``None``.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.batch import StateCache
    >>> cache = StateCache("states-entry")
    >>> cache.put("a" * 64, {"sum": np.zeros(3)}, {"recipe": "era5-sst-mean"})
    True
    >>> (entry,) = cache.entries()  # what `cache list` shows
    >>> entry.key == "a" * 64, entry.meta["recipe"], entry.damaged
    (True, 'era5-sst-mean', None)
    """

    key: str
    path: Path
    size: int
    last_used: float  # epoch seconds
    meta: dict[str, Any] = field(default_factory=dict)
    #: ``None``, or why the entry cannot be read (damaged, an earlier format)
    damaged: str | None = None


def default_folder() -> Path:
    """The folder of config ``pangeo-hpc.cache.folder``, ``~`` and ``$VARS`` expanded.

    Returns
    -------
    Path
        The folder.

    Examples
    --------
    >>> import dask
    >>> from pangeo_hpc.batch.incremental.cache_folder import default_folder
    >>> with dask.config.set({"pangeo-hpc.cache.folder": "~/states"}):
    ...     default_folder() == default_folder().home() / "states"
    True
    """
    return Path(os.path.expandvars(str(config.get("cache.folder")))).expanduser()


def default_max_bytes() -> int:
    """Config ``pangeo-hpc.cache.max-size`` in bytes.

    Returns
    -------
    int
        The bytes.

    Examples
    --------
    >>> import dask
    >>> from pangeo_hpc.batch.incremental.cache_folder import default_max_bytes
    >>> with dask.config.set({"pangeo-hpc.cache.max-size": "2GB"}):
    ...     default_max_bytes()
    2000000000
    """
    from pangeo_hpc.inputs.sizes import parse_size

    return parse_size(config.get("cache.max-size"), name="pangeo-hpc.cache.max-size")


def _marked(folder: Path) -> bool:
    from pangeo_hpc.write.marks import read_marker

    doc = read_marker(folder)
    return doc is not None and doc.get("kind") == KIND


def is_entry(path: Path) -> bool:
    """An entry of a state cache: its name, inside a folder marked ``state-cache``.

    Parameters
    ----------
    path : Path
        A file.

    Returns
    -------
    bool
        Whether it is an entry.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.batch import StateCache
    >>> from pangeo_hpc.batch.incremental.cache_folder import is_entry
    >>> cache = StateCache("states-is-entry")
    >>> cache.put("b" * 64, {"sum": np.zeros(3)}, {})
    True
    >>> is_entry(cache.folder / f"{'b' * 64}.npz"), is_entry(cache.folder / "notes.npz")
    (True, False)
    """
    return ENTRY.fullmatch(path.name) is not None and _marked(path.parent)


def _is_part(path: Path) -> bool:
    """A temporary file of a writer, inside a folder marked ``state-cache``."""
    return PART.fullmatch(path.name) is not None and _marked(path.parent)


def only_ours(folder: Path) -> bool:
    """An unmarked folder that holds only entries and temporary files (another process is
    claiming it right now, or its marker was lost): ours to mark.

    Parameters
    ----------
    folder : Path
        An unmarked folder.

    Returns
    -------
    bool
        Whether it holds nothing else.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.batch.incremental.cache_folder import only_ours
    >>> Path("unmarked").mkdir()
    >>> _ = Path("unmarked", "c" * 64 + ".npz").write_bytes(b"")
    >>> only_ours(Path("unmarked"))
    True
    >>> _ = Path("unmarked", "notes.txt").write_text("a user's")
    >>> only_ours(Path("unmarked"))
    False
    """
    return all(ENTRY.fullmatch(p.name) or PART.fullmatch(p.name) for p in folder.iterdir())


def why_unwritable(exc: BaseException, folder: Path) -> str | None:
    """Why a put failed, if the folder cannot take entries (a full disk, a read-only file
    system, no permission): then caching stops for the run; ``None`` for other errors.

    Parameters
    ----------
    exc : BaseException
        The error of the put.
    folder : Path
        The cache's folder.

    Returns
    -------
    str or None
        The reason, or ``None``.

    Examples
    --------
    >>> import errno
    >>> from pathlib import Path
    >>> from pangeo_hpc.batch.incremental.cache_folder import why_unwritable
    >>> why_unwritable(OSError(errno.ENOSPC, "No space left on device"), Path("/scratch/states"))
    'no space left on device on /scratch/states'
    >>> why_unwritable(ValueError("a bug"), Path("/scratch/states")) is None
    True
    """
    link: BaseException | None = exc
    seen: list[BaseException] = []
    while link is not None and link not in seen:
        if isinstance(link, StorageError) and "no space left" in str(link):
            return f"no space left on device on {folder}"
        if isinstance(link, OSError) and link.errno in (errno.ENOSPC, errno.EDQUOT):
            return f"no space left on device on {folder}"
        if isinstance(link, OSError) and link.errno in UNWRITABLE:
            return f"{folder} cannot be written ({os.strerror(link.errno)})"
        seen.append(link)
        link = link.__cause__ or link.__context__
    return None


def file_size(path: Path) -> int:
    """The bytes of ``path``, 0 if it is gone (another process may remove an entry at any
    time).

    Parameters
    ----------
    path : Path
        A file.

    Returns
    -------
    int
        The bytes.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.batch.incremental.cache_folder import file_size
    >>> _ = Path("entry.npz").write_bytes(bytes(100))
    >>> file_size(Path("entry.npz")), file_size(Path("evicted.npz"))
    (100, 0)
    """
    try:
        return path.stat().st_size
    except FileNotFoundError:  # evicted by another process already
        return 0


def _mtime(entry: os.DirEntry[str]) -> float:
    try:
        return entry.stat(follow_symlinks=False).st_mtime
    except FileNotFoundError:
        return time.time()


def _user(uid: int) -> str:
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def check_owner(where: Path) -> bool:
    """Refuse a folder that is not this user's own or holds what we did not write;
    ``False`` if it does not exist.

    Parameters
    ----------
    where : Path
        The cache's folder.

    Returns
    -------
    bool
        Whether the folder exists.

    Raises
    ------
    InputError
        If the folder belongs to another user, or holds what this package did not write.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.batch.incremental.cache_folder import check_owner
    >>> check_owner(Path("no-cache-yet"))  # a folder that does not exist
    False
    >>> Path("notes").mkdir(mode=0o700)
    >>> _ = Path("notes/todo.txt").write_text("mine")
    >>> check_owner(Path("notes"))
    Traceback (most recent call last):
        ...
    pangeo_hpc.errors.InputError: pangeo-hpc.cache.folder 'notes' holds files that pange...
    """
    from pangeo_hpc.write.guard import check_tree

    try:
        st = where.stat()
    except FileNotFoundError:
        return False
    me = os.geteuid()
    if st.st_uid != me or st.st_mode & 0o022:
        mode = f"{st.st_mode & 0o7777:04o}"
        owner = _user(st.st_uid)
        fix = (
            f"`chmod 700 {where}`"
            if st.st_uid == me
            else "a folder of your own (`mkdir -m 700 ~/.cache/pangeo-hpc-states`)"
        )
        raise InputError(
            f"{named(FLAG, where)} is owned by {owner} with mode {mode}: a cache "
            "folder that another user can write to is refused (a state put there would "
            f"become your results): use {fix}, or set {FLAG} to a folder only you can "
            "write (nothing was changed)"
        )
    check_tree(where, kind=KIND, flag=FLAG, ours=only_ours)
    return True


def scan(where: Path) -> list[tuple[Path, int, float]]:
    """Each entry's path, size and last use (mtime); a missing folder has none.

    Parameters
    ----------
    where : Path
        The cache's folder.

    Returns
    -------
    list of (Path, int, float)
        The entries.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.batch import StateCache
    >>> from pangeo_hpc.batch.incremental.cache_folder import scan
    >>> cache = StateCache("states-scan")
    >>> cache.put("d" * 64, {"sum": np.zeros(3)}, {})
    True
    >>> [(path.name[:4], size > 0) for path, size, used in scan(cache.folder)]
    [('dddd', True)]
    >>> scan(cache.folder / "missing")
    []
    """
    found = []
    try:
        with os.scandir(where) as it:
            for e in it:
                if not ENTRY.fullmatch(e.name):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                found.append((Path(e.path), st.st_size, st.st_mtime))
    except FileNotFoundError:
        return []
    return found


def remove_stale_parts(where: Path) -> None:
    """Remove the temporary files that killed writers left in ``where`` (older than
    :data:`STALE_PART_S`).

    Parameters
    ----------
    where : Path
        The cache's folder.

    Examples
    --------
    >>> from pangeo_hpc.batch import StateCache
    >>> from pangeo_hpc.batch.incremental.cache_folder import remove_stale_parts
    >>> cache = StateCache("states-remove-stale-parts")
    >>> remove_stale_parts(cache.folder)  # what killed writers left there an hour ago
    """
    from pangeo_hpc.write.outputs import remove_file

    now = time.time()
    try:
        with os.scandir(where) as it:
            stale = [
                Path(e.path)
                for e in it
                if PART.fullmatch(e.name) and now - _mtime(e) > STALE_PART_S
            ]
    except FileNotFoundError:
        return
    for path in stale:
        remove_file(path, ours=_is_part, flag=FLAG)
