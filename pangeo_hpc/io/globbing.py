"""Which files a glob (or a list of globs and paths) names, and why it names none: the
folder before its first wildcard and what it holds, or the nearest folder that exists."""

from __future__ import annotations

import glob
import os
from pathlib import Path

from pangeo_hpc.errors import DataNotFoundError, InputError

__all__ = ["expand"]


def expand(pattern: object) -> list[str]:
    """The files ``pattern`` (a glob, a file, or a list of these) names, each once.

    Parameters
    ----------
    pattern : object
        A glob, a file, or a list of these.

    Returns
    -------
    list[str]
        The files, sorted, each once.

    Raises
    ------
    InputError
        When ``pattern`` is no glob, or names an S3 URL.
    DataNotFoundError
        When nothing matches (saying what the folder holds).

    Examples
    --------
    >>> import os, pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     for name in ("t2m-2008.nc", "t2m-2009.nc", "tp-2008.nc"):
    ...         _ = pathlib.Path(os.path.join(tmp, name)).write_bytes(b"")
    ...     found = expand(os.path.join(tmp, "t2m-*.nc"))
    >>> [os.path.basename(f) for f in found]
    ['t2m-2008.nc', 't2m-2009.nc']
    """
    items = [pattern] if isinstance(pattern, str | os.PathLike) else pattern
    if not isinstance(items, list | tuple) or not items:
        raise InputError(
            f"pattern={pattern!r} is not a glob of files: give one such as "
            "'/data/oisst/*/oisst-avhrr-v02r01.*.nc', or a list of files",
            param="pattern",
        )
    found: list[str] = []
    for item in items:
        text = os.path.expanduser(os.fspath(item))
        if "://" in text:
            raise InputError(
                f"pattern={text!r}: open_files reads local or mounted files; mount the "
                "store (rclone mount) and give the path, or use open_era5(source=...) for "
                "an era5-pds bucket",
                param="pattern",
            )
        hits = sorted(p for p in glob.glob(text, recursive=True) if os.path.isfile(p))
        if not hits:
            raise DataNotFoundError(_nothing_matches(text), param="pattern")
        found += [os.path.abspath(p) for p in hits]
    return list(dict.fromkeys(found))


def _nothing_matches(pattern: str) -> str:
    """Why ``pattern`` matches no file: the folder before its first wildcard and what it
    holds, or the nearest folder above that exists."""
    parts = Path(pattern).parts
    fixed = next((i for i, p in enumerate(parts) if glob.has_magic(p)), len(parts) - 1)
    folder = Path(*parts[:fixed]) if fixed else Path(".")
    if folder.is_dir():
        where = f"{str(folder)!r} exists and holds {_listing(folder)}"
        fix = "check the file-name part of the pattern"
    else:
        up = folder
        while not up.is_dir() and up != up.parent:
            up = up.parent
        where = (
            f"{str(folder)!r} does not exist; the nearest folder that does, {str(up)!r}, "
            f"holds {_listing(up)}"
        )
        fix = "check the path"
    return f"no files match pattern={pattern!r}: {where}; {fix}"


def _listing(folder: Path, most: int = 5) -> str:
    try:
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    except OSError:
        return "nothing readable"
    if not names:
        return "nothing"
    return str(names[:most])[:-1] + (
        f", ... {len(names) - most} more]" if len(names) > most else "]"
    )
