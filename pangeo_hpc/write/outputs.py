"""Every write of the package goes through here: checked first, whole or not at all.

A verb's output is checked by :mod:`pangeo_hpc.write.guard` (never a URL, never an input, never
over anything this package did not write), written to a hidden temporary name beside the
target, and renamed into place at the end. A failure at any point leaves no partial
output: the target holds the complete previous output or the complete new one. A file
system that fills up on the way is reported as such, in one line
(:class:`~pangeo_hpc.errors.StorageError`).

* :func:`atomic_dir`: a folder output (a recipe's results, a Zarr store), replaced whole;
* :func:`atomic_file`: one file (a plot, a JSON report, a cache entry);
* :func:`write_json` and :func:`save_figure`: the same, with the package's marker inside;
* :func:`claim_tree` and :func:`append_line`: a folder that a verb fills file by file
  (``demo-data``, ``stage``), recognised as this package's by its marker file;
* :func:`remove_file`: one file of such a folder removed (a cache's evicted entry), only
  when its writer recognises it as its own.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pangeo_hpc.errors import InputError, StorageError, named
from pangeo_hpc.write.guard import check_file, check_folder, check_tree, folder_kind, local_path
from pangeo_hpc.write.in_place import fill_in_place, is_mount_point
from pangeo_hpc.write.leftovers import remove_stale, temporary_name
from pangeo_hpc.write.marks import MARKER, WRITTEN_BY, figure_metadata, marker_doc
from pangeo_hpc.write.swap import HeldSignals, swap_in, target_lock

#: a write that failed with less than this left on its file system ran out of space: HDF5
#: and netCDF4 report ENOSPC as a bare "NetCDF: HDF error", without the errno
FULL_BELOW = 1 << 20


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_dir(
    target: str | Path,
    *,
    kind: str = "result",
    inputs: Iterable[object] = (),
    flag: str = "out",
    overwrite: bool = True,
) -> Iterator[Path]:
    """Yield a temporary folder beside ``target``; on success it replaces ``target``.

    Parameters
    ----------
    target : path
        The folder to write. Its parent is created if missing. An existing ``target`` is
        replaced only if it is empty or an output of this ``kind`` that this package wrote
        (see :func:`pangeo_hpc.write.guard.check_folder`), checked on entry and again just
        before the rename.
    kind : str
        What the folder holds: ``"result"`` (marked by its ``summary.json``, written with
        :func:`write_json`) or ``"zarr"`` (marked by its attributes); checked at the end.
    inputs : iterable of paths
        What was read: the output must not be, contain or lie inside any of them.
    flag : str
        How the user named ``target``, for messages: a parameter (``out``) or a flag
        (:func:`pangeo_hpc.write.guard.check_folder`).
    overwrite : bool
        If false, an existing output of this package is an error too.

    Yields
    ------
    pathlib.Path
        The hidden temporary folder (``.NAME.tmp-HOST-PID-RANDOM``) to write into; it is
        removed if the block fails, so ``target`` keeps what it held. Temporary folders
        that killed writers left beside ``target`` are removed first
        (:func:`pangeo_hpc.write.leftovers.remove_stale`).

    Notes
    -----
    A ``target`` that is a mount point (a container's bind mount) cannot be renamed: it is
    filled file by file instead (:func:`pangeo_hpc.write.in_place.fill_in_place`).
    Otherwise the finished folder takes ``target``'s place under a lock, in one exchange of names
    where the file system allows it, with Ctrl-C and ``SIGTERM`` held until it is done
    (:mod:`pangeo_hpc.write.swap`): two processes writing one target each leave their
    whole result or the other's, and a reader never finds a mixed folder.

    Raises
    ------
    InputError
        If ``target`` may not be written (nothing is changed).
    StorageError
        If the file system ran out of space (``ENOSPC``, ``EDQUOT``, or a failed write with
        less than :data:`FULL_BELOW` bytes left), naming ``target`` and the fix.

    Examples
    --------
    >>> import os
    >>> with atomic_dir("results/era5-sst") as tmp:  # a hidden folder beside it
    ...     _ = write_json(tmp / "summary.json", {"mean": 2.5})
    >>> os.listdir("results/era5-sst")
    ['summary.json']
    """
    inputs = list(inputs)
    if is_mount_point(target):  # it cannot be renamed (EBUSY): filled file by file
        try:
            with fill_in_place(
                target, kind=kind, inputs=inputs, flag=flag, overwrite=overwrite
            ) as inside:
                yield inside
        except Exception as exc:
            _raise_if_full(exc, Path(target))
            raise
        return
    target = check_folder(target, kind=kind, inputs=inputs, flag=flag, overwrite=overwrite)
    tmp: Path | None = None
    retired: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale(target.parent)  # what writers killed here left (write/leftovers.py)
        tmp = temporary_name(target, "tmp")
        tmp.mkdir(mode=0o700)
        yield tmp
        if folder_kind(tmp) != kind:  # what is written here must be recognised later
            raise RuntimeError(f"{tmp} lacks the marker of a {kind} output (a bug)")
        # Ctrl-C and SIGTERM wait until the result is in place and the lock released
        with HeldSignals() as signals, target_lock(target):
            # again: a user may have put something there while the outputs were computed,
            # and another run may have put its result there (checked as ours, under the lock)
            check_folder(target, kind=kind, inputs=inputs, flag=flag, overwrite=overwrite)
            mode = 0o777 & ~_umask()  # made 0700: give it a folder's usual mode
            if target.is_dir():
                mode = target.stat().st_mode & 0o7777  # an empty folder made for us keeps it
            tmp.chmod(mode)
            signals.hold()
            retired = swap_in(tmp, target)
        if retired is not None:
            shutil.rmtree(retired, ignore_errors=True)
    except Exception as exc:
        _raise_if_full(exc, target)
        raise
    finally:
        for left in (tmp, retired):
            if left is not None and os.path.lexists(left):
                shutil.rmtree(left, ignore_errors=True)


def mark_folder(folder: Path, kind: str) -> None:
    """Mark ``folder`` (being written inside :func:`atomic_dir`) as an output of ``kind``
    with the marker file :data:`~pangeo_hpc.write.marks.MARKER`: for folders whose
    format has no place of its own for a marker (an Icechunk repository).

    Parameters
    ----------
    folder : Path
        The temporary folder.
    kind : str
        The output's kind (``result``, ``zarr``, ``demo-data``, ...).

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.write.marks import read_marker
    >>> Path("repo_tmp").mkdir()
    >>> mark_folder(Path("repo_tmp"), "icechunk")
    >>> read_marker(Path("repo_tmp"))["kind"]
    'icechunk'
    """
    _write_marker(Path(folder), marker_doc(kind))


def _write_marker(folder: Path, doc: dict[str, Any]) -> None:
    # a name of its own: two processes claiming one new tree at once (a shared cache) must
    # not write into each other's temporary file; the last rename wins, whole either way
    fd, name = tempfile.mkstemp(prefix=f"{MARKER}.", suffix=".tmp", dir=folder)
    part = Path(name)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(doc, indent=2) + "\n")
        part.chmod(0o666 & ~_umask())
        os.replace(part, folder / MARKER)
    finally:
        part.unlink(missing_ok=True)


def _raise_if_full(exc: BaseException, target: Path) -> None:
    if _out_of_space(exc, target.parent):
        kept = "its previous contents are unchanged" if target.exists() else "nothing written"
        raise StorageError(
            f"no space left on device writing {str(target)!r} ({kept}): free space on "
            "its file system or write the outputs elsewhere (--out)"
        ) from exc


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


@contextmanager
def atomic_file(
    target: str | Path,
    *,
    inputs: Iterable[object] = (),
    flag: str = "out",
    mode: int | None = None,
    ours: Callable[[Path], bool] | None = None,
    part: str | None = None,
) -> Iterator[Path]:
    """Yield a temporary name next to ``target``; rename it to ``target`` on success.

    ``target`` may be new or a file this package wrote (:func:`pangeo_hpc.write.marks.file_is_ours`,
    or the ``ours`` test given), checked on entry and before the rename; its parent folder
    is created. The temporary file is created empty with ``mode`` (default from the
    umask; e.g. ``0o600`` for caches); with ``part`` (a suffix such as ``".part"``) it is
    named ``.NAME{part}`` and not created, for writers that create it themselves (Lustre's
    ``lfs setstripe`` makes a new file with its layout). On an exception the temporary file
    is removed and ``target`` stays as it was.

    Parameters
    ----------
    target : str or Path
        The file.
    inputs : Iterable[object], optional
        The data read: the output may not be, contain or lie inside one (paths; URLs and
        ``None`` are skipped).
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.
    mode : int, optional
        The temporary file's permissions, or ``None``: the umask's.
    ours : Callable[[Path], bool], optional
        A test that recognises a file of an earlier version as this package's, besides
        the marker.
    part : str, optional
        A suffix of the temporary name, which is then not created; ``None``: a new
        temporary file.

    Yields
    ------
    Path
        The temporary file to write.

    Raises
    ------
    InputError
        If ``target`` may not be written (:func:`pangeo_hpc.write.guard.check_file`).

    Examples
    --------
    >>> from pathlib import Path
    >>> with atomic_file("table.csv") as tmp:
    ...     _ = Path(tmp).write_text("lat,mean")
    >>> Path("table.csv").read_text()
    'lat,mean'
    """
    inputs = list(inputs)
    target = check_file(target, inputs=inputs, flag=flag, ours=ours)
    target.parent.mkdir(parents=True, exist_ok=True)
    if part is not None:
        tmp = target.with_name(f".{target.name}{part}")
        tmp.unlink(missing_ok=True)  # left by a writer that was killed
    else:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        tmp = Path(name)
    try:
        if part is None:
            tmp.chmod(0o666 & ~_umask() if mode is None else mode)
        yield tmp
        check_file(target, inputs=inputs, flag=flag, ours=ours)
        os.replace(tmp, target)
    except Exception as exc:
        _raise_if_full(exc, target)
        raise
    finally:
        tmp.unlink(missing_ok=True)


def copy_into(src: str | Path, dst: str | Path) -> Path:
    """Copy the bytes of the file or folder ``src`` to ``dst``, a new name inside a folder
    being written (:func:`atomic_dir`'s temporary folder): new times and modes, a link
    copied as a link, never followed.

    Parameters
    ----------
    src : str or Path
        A file, or a folder (a ``result.zarr``).
    dst : str or Path
        Where the copy goes; it must not exist.

    Returns
    -------
    Path
        ``dst``.

    Raises
    ------
    FileExistsError
        If ``dst`` exists (nothing is written over).

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("kept.txt").write_text("42")
    >>> Path("being-written").mkdir()
    >>> copy_into("kept.txt", "being-written/kept.txt").read_text()
    '42'
    """
    src, dst = Path(src), Path(dst)
    if os.path.lexists(dst):
        raise FileExistsError(f"{dst} exists: a copy goes to a new name")
    if stat.S_ISDIR(src.lstat().st_mode):
        shutil.copytree(src, dst, symlinks=True, copy_function=shutil.copyfile)
    else:
        shutil.copyfile(src, dst, follow_symlinks=False)
    return dst


def write_json(
    path: str | Path,
    doc: dict[str, Any],
    *,
    flag: str = "path",
    mode: int | None = None,
    ours: Callable[[Path], bool] | None = None,
) -> Path:
    """Write ``doc`` as indented JSON to ``path``, marked as this package's
    (``"written_by": "pangeo-hpc X.Y"`` first), whole or not at all; ``mode`` and ``ours``
    as for :func:`atomic_file`.

    Parameters
    ----------
    path : str or Path
        The file.
    doc : dict[str, Any]
        The document.
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.
    mode : int, optional
        The file's permissions, or ``None``: the umask's.
    ours : Callable[[Path], bool], optional
        A test that recognises a file of an earlier version as this package's, besides
        the marker.

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    InputError
        If ``path`` may not be written (:func:`pangeo_hpc.write.guard.check_file`).

    Examples
    --------
    >>> from pathlib import Path
    >>> print(write_json("answer.json", {"answer": 42}))
    answer.json
    >>> print(Path("answer.json").read_text())
    {
      "written_by": "pangeo-hpc ...",
      "answer": 42
    }
    """
    from importlib.metadata import version

    marked = {"written_by": f"{WRITTEN_BY} {version('pangeo-hpc')}", **doc}
    with atomic_file(path, flag=flag, mode=mode, ours=ours) as tmp:
        tmp.write_text(json.dumps(marked, indent=2, default=str) + "\n")
    return Path(path)


def save_figure(fig: Any, path: str | Path, *, flag: str = "path", dpi: int = 120) -> Path:
    """Save a matplotlib figure to ``path`` (format from its suffix), marked as this
    package's in the file's metadata, whole or not at all.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A matplotlib figure.
    path : str or Path
        The file (``.png``, ``.svg``, ``.pdf``).
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.
    dpi : int, optional
        Dots per inch.

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    InputError
        If ``path`` may not be written (:func:`pangeo_hpc.write.guard.check_file`).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> print(save_figure(fig, "figure.png"))
    figure.png
    """
    fmt = Path(path).suffix[1:].lower() or "png"
    with atomic_file(path, flag=flag) as tmp:
        fig.savefig(tmp, format=fmt, dpi=dpi, metadata=figure_metadata(fmt))
    return Path(path)


def claim_tree(
    root: str | Path,
    *,
    kind: str,
    inputs: Iterable[object] = (),
    flag: str = "out",
    ours: Callable[[Path], bool] | None = None,
    mode: int = 0o777,
) -> Path:
    """Make sure ``root`` is a folder this package fills file by file, and create it.

    What may be claimed is :func:`pangeo_hpc.write.guard.check_tree`'s rule (new, empty, marked,
    or ``ours`` for trees of earlier versions); anything else is refused
    (:class:`InputError`, nothing changed). A new or empty folder gets the marker, so that
    a later run recognises it; a new one is made with ``mode`` (less the umask; ``0o700``
    for private caches).

    Parameters
    ----------
    root : str or Path
        The folder.
    kind : str
        The output's kind (``result``, ``zarr``, ``demo-data``, ...).
    inputs : Iterable[object], optional
        The data read: the output may not be, contain or lie inside one (paths; URLs and
        ``None`` are skipped).
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.
    ours : Callable[[Path], bool], optional
        A test that recognises a tree of an earlier version as this package's.
    mode : int, optional
        A new folder's permissions, less the umask.

    Returns
    -------
    Path
        The folder.

    Raises
    ------
    InputError
        If the folder may not be claimed (:func:`pangeo_hpc.write.guard.check_tree`).

    Examples
    --------
    >>> import os
    >>> print(claim_tree("demo", kind="demo-data"))
    demo
    >>> os.listdir("demo")  # the marker, so that a later run knows the tree
    ['.pangeo-hpc.json']
    """
    path, marked = check_tree(root, kind=kind, inputs=inputs, flag=flag, ours=ours)
    if marked:
        return path
    path.mkdir(parents=True, exist_ok=True, mode=mode)
    _write_marker(path, marker_doc(kind))
    return path


def append_line(path: Path, doc: dict[str, Any]) -> None:
    """Append ``doc`` as one JSON line to ``path`` (a tree's log of what it wrote); one
    ``write`` of a short line with ``O_APPEND`` is not interleaved with other writers.

    Parameters
    ----------
    path : Path
        The log file.
    doc : dict[str, Any]
        The record.

    Examples
    --------
    >>> from pathlib import Path
    >>> append_line(Path("log.jsonl"), {"file": "a.nc", "bytes": 4})
    >>> append_line(Path("log.jsonl"), {"file": "b.nc", "bytes": 8})
    >>> print(Path("log.jsonl").read_text())
    {"file":"a.nc","bytes":4}
    {"file":"b.nc","bytes":8}
    """
    line = (json.dumps(doc, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def remove_file(path: str | Path, *, ours: Callable[[Path], bool], flag: str) -> bool:
    """Remove the file ``path`` if ``ours(path)`` recognises it as written by this package.

    For trees a verb fills file by file and empties again (a cache's evicted, cleared or
    damaged entries): ``ours`` knows the tree's files (a state cache: a ``<64 hex>.npz``
    inside a folder whose marker is of kind ``"state-cache"``).

    Parameters
    ----------
    path : path
        The file.
    ours : callable
        Whether a path is this package's file; called just before the removal.
    flag : str
        How the user named the tree, for messages (a setting such as
        ``pangeo-hpc.cache.folder``).

    Returns
    -------
    bool
        ``True`` if removed, ``False`` if it was already gone (another process removed it).

    Raises
    ------
    InputError
        For a folder, a link, or a file that ``ours`` does not recognise (nothing removed).

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = claim_tree("cache", kind="state-cache")
    >>> _ = Path("cache/entry.npz").write_bytes(b"...")
    >>> remove_file("cache/entry.npz", ours=lambda p: p.suffix == ".npz", flag="cache")
    True
    """
    path = local_path(path, flag)
    if not path.exists() and not path.is_symlink():
        return False
    if path.is_symlink() or path.is_dir() or not ours(path):
        raise InputError(
            f"{named(flag, path)} was not written by pangeo-hpc (or is a folder or link): "
            "it is left where it is (nothing was changed)"
        )
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
