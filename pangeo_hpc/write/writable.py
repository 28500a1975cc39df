"""Whether an output can be written at all, asked before any work starts.

A run that computes for an hour and then finds that its output folder is on a read-only
file system, or named with bytes that are not UTF-8, has wasted the hour (issue 28). So
before a cluster starts, :func:`check_writable` asks the file system (``os.access``, which
also answers ``EROFS`` for a read-only mount and asks an NFS server) whether the folder the
output goes into can be written: the folder's parent (a new or replaced folder is renamed
there), or the folder itself when it is a mount point (filled in place:
:mod:`pangeo_hpc.write.in_place`). A missing parent is created later: the nearest folder
above it that exists is asked.
"""

from __future__ import annotations

import os
from pathlib import Path

from pangeo_hpc.errors import InputError, named

__all__ = ["check_utf8", "check_writable", "nearest_existing", "read_only"]


def nearest_existing(path: Path) -> Path:
    """``path``, or the nearest folder above it that exists.

    Parameters
    ----------
    path : Path
        A path.

    Returns
    -------
    Path
        The path or folder.

    Examples
    --------
    >>> from pathlib import Path
    >>> Path("figures").mkdir()
    >>> print(nearest_existing(Path("figures/era5/2019/plot.png")))
    figures
    """
    while not os.path.lexists(path) and path.parent != path:
        path = path.parent
    return path


def read_only(path: Path) -> bool:
    """Whether ``path`` lies on a file system mounted read-only.

    Parameters
    ----------
    path : Path
        An existing path.

    Returns
    -------
    bool
        Whether its file system is read-only.

    Examples
    --------
    >>> from pathlib import Path
    >>> read_only(Path("."))  # the current folder can be written
    False
    """
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_utf8(target: str | os.PathLike[str], flag: str = "out") -> None:
    """Refuse a path holding bytes that are not UTF-8 (Python keeps them as surrogates):
    netCDF-C, ``summary.json`` and the lines printed need UTF-8 names.

    Parameters
    ----------
    target : str or os.PathLike[str]
        The output's path.
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.

    Raises
    ------
    InputError
        Naming the path's bytes and the fix; nothing is written.

    Examples
    --------
    >>> check_utf8("results/été")
    >>> check_utf8(os.fsdecode(b"results/\\xff"))
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: out=b'results/\\xff' is not valid UTF-8 ...
    """
    text = os.fspath(target)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raw = os.fsencode(text)
        raise InputError(
            f"{named(flag, raw)} is not valid UTF-8 (the file names of NetCDF results, "
            "summary.json and the lines printed must be): give a name in UTF-8 "
            "(nothing was written)",
            param=flag if flag.isidentifier() else None,
        ) from None


def check_writable(target: str | os.PathLike[str], *, in_place: bool, flag: str = "out") -> None:
    """Refuse an output folder that cannot be written, before anything is computed.

    Parameters
    ----------
    target : path
        The output folder (checked by :func:`pangeo_hpc.write.guard.check_folder` too).
    in_place : bool
        Whether ``target`` is filled in place (a mount point): then it must be writable
        itself; otherwise the folder it is renamed into, its parent, must be.
    flag : str
        How the user named ``target``, for the message (``out`` or a flag).

    Raises
    ------
    InputError
        For a path that is not UTF-8, or whose folder is read-only or not writable by
        this user, or is a file; one line naming it and the fix; nothing is written.

    Examples
    --------
    >>> from pathlib import Path
    >>> check_writable("results/era5-sst", in_place=False)  # its parent can be written
    >>> _ = Path("notes.txt").write_text("mine")
    >>> check_writable("notes.txt/out", in_place=False)
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: out='notes.txt/out' cannot be made: 'notes.txt' is a file, ...
    """
    check_utf8(target, flag)
    path = Path(target).expanduser()
    where = path if in_place else nearest_existing(path.parent)
    param = flag if flag.isidentifier() else None
    if not where.is_dir():
        raise InputError(
            f"{named(flag, path)} cannot be made: {str(where)!r} is a file, not a folder: "
            "give an output folder elsewhere (nothing was written)",
            param=param,
        )
    if os.access(where, os.W_OK | os.X_OK):
        return
    why = "on a read-only file system" if read_only(where) else "not writable by you"
    raise InputError(
        f"{named(flag, path)} cannot be written: {str(where)!r} is {why}: give an output "
        "folder you can write (nothing was written)",
        param=param,
    )
