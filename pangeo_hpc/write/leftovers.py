"""The temporary names of :func:`~pangeo_hpc.write.outputs.atomic_dir`, and the removal of
those a killed writer left behind.

A folder output is written under a hidden name beside its target and renamed into place
(:mod:`pangeo_hpc.write.swap`). A writer killed on the way (``SIGKILL``, a node that went
down, the out-of-memory killer) cannot clean up: its temporary folder, a whole
``result.nc`` perhaps, would stay forever. So each temporary name says who made it::

    .NAME.tmp-HOST-PID-RANDOM     the folder being written
    .NAME.old-HOST-PID-RANDOM     the folder replaced, until removed (when the file system
                                  cannot exchange two folders in one rename)
    .NAME.pangeo-hpc-lock         the lock of writers of NAME (empty; removed on release)

``HOST`` is 8 hex digits of the SHA-256 of the host name, ``PID`` the writer's process id,
``RANDOM`` 8 hex digits, so that a name is never used twice (a leftover never blocks a later
write of the same process id). :func:`remove_stale` removes a folder of these names only
if it is a folder (not a link) owned by this user, made on this host, by a process that no
longer runs (``os.kill(pid, 0)`` finds none); a lock file only if it is empty, owned by
this user and held by nobody. Anything else is left where it is: a live writer's
temporary, another host's (its process cannot be seen from here), another user's, or a
user's own file that happens to look alike.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import secrets
import shutil
import socket
import stat
from pathlib import Path

#: this host, as temporary names carry it
HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
#: a temporary folder of :func:`temporary_name`
_TEMPORARY = re.compile(
    r"\.(?P<name>.+)\.(?:tmp|old)-(?P<host>[0-9a-f]{8})-(?P<pid>[1-9][0-9]{0,9})-[0-9a-f]{8}",
    re.DOTALL,
)
#: the suffix of a lock file (:func:`lock_name`)
LOCK_SUFFIX = ".pangeo-hpc-lock"


def temporary_name(target: Path, what: str) -> Path:
    """A new hidden name beside ``target`` for a folder being written (``what="tmp"``) or
    being replaced (``"old"``), carrying this host, this process and a random part.

    Parameters
    ----------
    target : Path
        The folder written.
    what : str
        ``"tmp"`` or ``"old"``.

    Returns
    -------
    Path
        The name (nothing is created).

    Examples
    --------
    >>> from pathlib import Path
    >>> print(temporary_name(Path("results/era5-sst"), "tmp"))
    results/.era5-sst.tmp-...
    """
    return target.with_name(f".{target.name}.{what}-{HOST}-{os.getpid()}-{secrets.token_hex(4)}")


def lock_name(target: Path) -> Path:
    """The lock file of writers of ``target`` (:func:`pangeo_hpc.write.swap.target_lock`).

    Parameters
    ----------
    target : Path
        The folder written.

    Returns
    -------
    Path
        The lock file's path.

    Examples
    --------
    >>> from pathlib import Path
    >>> print(lock_name(Path("results/era5-sst")))
    results/.era5-sst.pangeo-hpc-lock
    """
    return target.with_name(f".{target.name}{LOCK_SUFFIX}")


def _pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (one of another user counts)."""
    if pid <= 0:
        return True  # not a process id: never judged dead
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_stale(entry: os.DirEntry[str] | Path) -> bool:
    """Whether ``entry`` is a temporary folder of a writer on this host that no longer
    runs, owned by this user (see the module's docstring)."""
    m = _TEMPORARY.fullmatch(entry.name)
    if m is None or m["host"] != HOST:
        return False
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return False
    return not _pid_alive(int(m["pid"]))


def _remove_lock(path: Path) -> bool:
    """Remove the lock file ``path`` if it is empty, this user's, and nobody holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size or st.st_uid != os.getuid():
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held (a writer is swapping now), or no locks here: leave it
            return False
        try:
            if not os.path.samestat(st, os.stat(path, follow_symlinks=False)):
                return False
        except FileNotFoundError:
            return False
        path.unlink()
        return True
    finally:
        os.close(fd)


def remove_stale(parent: Path) -> list[Path]:
    """Remove the temporary folders and lock files that writers killed on this host left
    in ``parent`` (see the module's docstring: nothing else is touched).

    Parameters
    ----------
    parent : path
        The folder that holds outputs (``results/``, the parent of an ``--out``).

    Returns
    -------
    list of Path
        What was removed; a missing ``parent`` holds nothing.

    Examples
    --------
    >>> from pathlib import Path
    >>> remove_stale(Path("results"))  # nothing left by killed writers
    []
    """
    removed: list[Path] = []
    try:
        with os.scandir(parent) as it:
            entries = [e for e in it if e.name.startswith(".")]
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return removed
    for entry in entries:
        path = Path(entry.path)
        if entry.name.endswith(LOCK_SUFFIX) and len(entry.name) > len(LOCK_SUFFIX) + 1:
            if _remove_lock(path):
                removed.append(path)
        elif _is_stale(entry):
            shutil.rmtree(path, ignore_errors=True)
            if not os.path.lexists(path):
                removed.append(path)
    return removed
