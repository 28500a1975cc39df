"""Write a run's outputs all at once: into a hidden temporary folder, then one rename.

A failure at any point leaves no partial output: the folder either holds the complete
previous results or the complete new ones. A file system that fills up on the way is
reported as such, in one line (:class:`~pangeo_hpc.errors.StorageError`).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import StorageError

#: a write that failed with less than this left on its file system ran out of space: HDF5
#: and netCDF4 report ENOSPC as a bare "NetCDF: HDF error", without the errno
FULL_BELOW = 1 << 20


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yield a temporary folder beside ``target``; on success it replaces ``target``.

    Parameters
    ----------
    target : path
        The folder to write. Its parent is created if missing.

    Yields
    ------
    pathlib.Path
        The hidden temporary folder (``.NAME.tmp-*``) to write into; it is removed if the
        block fails, so ``target`` keeps what it held.

    Raises
    ------
    StorageError
        If the file system ran out of space (``ENOSPC``, ``EDQUOT``, or a failed write with
        less than :data:`FULL_BELOW` bytes left), naming ``target`` and the fix.
    """
    target = Path(target)
    tmp: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        yield tmp
        tmp.chmod(0o777 & ~_umask())  # mkdtemp makes it 0700: give it a folder's usual mode
        old = None
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except Exception as exc:
        if _out_of_space(exc, target.parent):
            kept = "its previous contents are unchanged" if target.exists() else "nothing written"
            raise StorageError(
                f"no space left on device writing {str(target)!r} ({kept}): free space on "
                "its file system or write the outputs elsewhere (--out)"
            ) from exc
        raise
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _out_of_space(exc: BaseException, folder: Path) -> bool:
    """Whether ``exc`` (or an error it chains) is ENOSPC/EDQUOT, or a failed write (an
    ``OSError`` or the ``RuntimeError`` of netCDF4) while ``folder``'s file system is all
    but full, as it is before the temporary folder is removed."""
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain:
        chain.append(link)
        link = link.__cause__ or link.__context__
    if any(isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT) for e in chain):
        return True
    if not isinstance(exc, OSError | RuntimeError):
        return False
    try:
        return shutil.disk_usage(folder).free < FULL_BELOW
    except OSError:
        return False


def write_json(path: Path, doc: dict[str, Any]) -> None:
    """Write ``doc`` as indented JSON to ``path`` via a temporary name."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    os.replace(tmp, path)


@contextmanager
def atomic_file(target: str | Path) -> Iterator[Path]:
    """Yield a temporary name next to ``target``; rename it to ``target`` on success.

    On an exception the temporary file is removed and ``target`` stays as it was.
    """
    target = Path(target)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
