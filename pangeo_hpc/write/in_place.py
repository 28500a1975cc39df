"""An output folder that is a mount point: filled in place, file by file, since it cannot be
renamed.

:func:`pangeo_hpc.write.outputs.atomic_dir` replaces a folder by renaming a finished
temporary folder over it. A mount point cannot be renamed (``EBUSY``), and every bind
mount of a container (``docker run -v $PWD/out:/out``, Apptainer's ``--bind``) is one: a
run into it used to fail after all the compute (issue 28). ``atomic_dir`` calls
:func:`fill_in_place` for a mount point (:func:`is_mount_point`): part of the guarded
helper, never called by a verb directly.

:func:`fill_in_place` keeps the guard's rules: the folder is checked by
:func:`pangeo_hpc.write.guard.check_folder` on entry (empty, or an earlier output of this
package); the outputs are written into a hidden temporary folder inside it (the same
file system, so each file is renamed, never copied); at the end nothing in the folder may
have changed since the check (else nothing is replaced: :class:`InputError`), and each
output is renamed over its namesake, one atomic rename per file, ``summary.json`` (which
lists the others) last. A crash midway leaves the previous ``summary.json`` and a mix of
new and previous files; the next run into the folder replaces them. Files of the previous
output that the new one lacks (``result.zarr`` after ``result.nc``) are removed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pangeo_hpc.errors import InputError, named
from pangeo_hpc.write.guard import check_folder, folder_kind

__all__ = ["fill_in_place", "is_mount_point"]

#: the prefix of the temporary folder inside a mount point
_TMP = ".pangeo-hpc.tmp-"
#: renamed last: it marks the folder as this package's and lists the others
_LAST = "summary.json"


def _unescape(field: str) -> str:
    """A path of ``/proc/self/mountinfo``, whose spaces, tabs, newlines and backslashes
    are written as octal escapes (``\\040``)."""
    raw = field.encode("utf-8", "surrogateescape")
    out, i = bytearray(), 0
    while i < len(raw):
        if raw[i : i + 1] == b"\\" and raw[i + 1 : i + 4].isdigit():
            out.append(int(raw[i + 1 : i + 4], 8))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return os.fsdecode(bytes(out))


def is_mount_point(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder that something is mounted on: a file system, or a bind
    mount of a folder of the same file system (which ``os.path.ismount`` misses: the device
    is the parent's), read from ``/proc/self/mountinfo`` where there is one.

    Parameters
    ----------
    path : str or os.PathLike[str]
        A path.

    Returns
    -------
    bool
        Whether something is mounted on it.

    Examples
    --------
    >>> is_mount_point("/"), is_mount_point("/proc/self")
    (True, False)
    """
    p = Path(path)
    if not p.is_dir() or p.is_symlink():
        return False
    if os.path.ismount(p):
        return True
    real = os.path.realpath(p)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            return any(_unescape(line.split(" ")[4]) == real for line in f if line.count(" ") > 4)
    except OSError:  # not Linux: os.path.ismount's answer
        return False


def _listing(folder: Path, skip: str = "") -> dict[str, tuple[int, ...]]:
    out = {}
    for entry in os.scandir(folder):
        if entry.name != skip:
            st = entry.stat(follow_symlinks=False)
            out[entry.name] = (st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return out


@contextmanager
def fill_in_place(
    target: str | Path,
    *,
    kind: str = "result",
    inputs: Iterable[object] = (),
    flag: str = "out",
    overwrite: bool = True,
) -> Iterator[Path]:
    """Yield a temporary folder inside the folder ``target``; on success, move its files
    into ``target`` one by one (see the module's description).

    Parameters
    ----------
    target, kind, inputs, flag, overwrite
        As for :func:`pangeo_hpc.write.outputs.atomic_dir`; ``target`` must exist.

    Yields
    ------
    Path
        The temporary folder to write the files in.

    Raises
    ------
    InputError
        If ``target`` may not be written (:func:`pangeo_hpc.write.guard.check_folder`), or
        changed while the outputs were made; nothing of it is changed then.

    Examples
    --------
    >>> import os
    >>> from pathlib import Path
    >>> from pangeo_hpc.write.outputs import write_json
    >>> Path("mounted").mkdir()  # e.g. a mount point, which cannot be renamed
    >>> with fill_in_place("mounted") as tmp:
    ...     _ = write_json(tmp / "summary.json", {"mean": 2.5})
    >>> os.listdir("mounted")
    ['summary.json']
    """
    inputs = list(inputs)
    target = check_folder(target, kind=kind, inputs=inputs, flag=flag, overwrite=overwrite)
    before = _listing(target)
    tmp = Path(tempfile.mkdtemp(prefix=_TMP, dir=target))
    try:
        yield tmp
        if folder_kind(tmp) != kind:  # what is written here must be recognised later
            raise RuntimeError(f"{tmp} lacks the marker of a {kind} output (a bug)")
        if _listing(target, skip=tmp.name) != before:
            raise InputError(
                f"{named(flag, target)} changed while the outputs were made (a file added, "
                "removed or edited): nothing in it was replaced; run again to write it",
                param=flag if flag.isidentifier() else None,
            )
        new = sorted(os.listdir(tmp), key=lambda n: (n == _LAST, n))
        old = tmp / ".previous"
        old.mkdir()
        for name in [n for n in before if n not in new]:  # checked ours on entry
            os.replace(target / name, old / name)
        for name in new:
            if (target / name).is_dir() and not (target / name).is_symlink():
                os.replace(target / name, old / name)  # a folder is not renamed over
            os.replace(tmp / name, target / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
