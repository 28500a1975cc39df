"""What the package may write over: only what it wrote itself, never an input, never a URL.

Every output a verb writes is checked here before anything is written, and again just
before it is renamed into place (a long run gives a user time to put a file there):

* a **URL** (``s3://bucket/x``, any ``scheme://``) is refused here: outputs go to a local
  or mounted folder (``Path("s3://b/x")`` would silently be a local folder named ``s3:``).
  The verbs that write to S3 (a recipe's run, ``convert``, ``demo-data``,
  and the single files of ``survey``, ``inventory``, ``plan``, ``calibrate``,
  ``lab-config``) send an ``s3://`` output to :mod:`pangeo_hpc.write.s3_guard` instead
  (:mod:`pangeo_hpc.write.targets`), whose rules are these for objects: marked objects
  only, a run's manifest written last, a single file in one conditional PUT;
* an output that **is, contains or lies inside an input** is refused (the data tree, its
  parent, or a folder within it);
* an existing **folder** is replaced only when it is empty or is an output of this
  package that holds nothing else, unchanged (:func:`folder_kind`: a result folder's
  marked ``summary.json`` lists its files with the size and SHA-256 of each as written,
  :mod:`pangeo_hpc.write.records`; a Zarr store carries
  :data:`~pangeo_hpc.write.marks.STORE_ATTR`; an Icechunk repository the mark in the
  metadata of the tip of its ``main``, :mod:`pangeo_hpc.write.icechunk_repo`, and it is
  committed to, never replaced); a tree that a verb fills file by file
  carries the marker file :data:`~pangeo_hpc.write.marks.MARKER`, and is written into,
  never replaced; an existing **file** only when it carries the format's marker
  (:func:`~pangeo_hpc.write.marks.file_is_ours`). Anything else is refused with one line
  naming the path, the first foreign entries (or the file a user changed), and the fix.
  Nothing is renamed, removed or written first.
* a folder named after a **label** (a recipe's ``name:`` under ``results/``) is built by
  :func:`folder_in`, which accepts only a label (:func:`check_label`) and a path that
  stays inside its root.

A result folder whose ``summary.json`` records no sizes and hashes (written by an earlier
version, marked or not) is recognised as a result but **not replaced**: a file a user
edited there cannot be told from the one written, so replacing it could destroy the only
copy of the user's work; the message says to move the folder away once. A folder that
another process replaces while it is checked is checked again (:func:`check_folder`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from pangeo_hpc.errors import InputError, named, shown
from pangeo_hpc.write.icechunk_repo import KIND as ICECHUNK
from pangeo_hpc.write.icechunk_repo import is_our_repository
from pangeo_hpc.write.marks import file_is_ours, is_our_store, read_marker
from pangeo_hpc.write.records import result_changes

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(target: object) -> bool:
    """Whether ``target`` is a URL (``s3://...``, any ``scheme://``) rather than a path.

    Parameters
    ----------
    target : object
        A path, a string or anything else (not a URL).

    Returns
    -------
    bool
        True for a string that starts with ``scheme://``.

    Examples
    --------
    >>> is_url("s3://era5-pds/2019"), is_url("results/era5"), is_url(None)
    (True, False, False)
    """
    return isinstance(target, str) and _URL.match(target) is not None


def _refused(flag: str, message: str, *more: str) -> InputError:
    """An InputError whose message names the output as :func:`~pangeo_hpc.errors.named`
    does: ``flag`` is a parameter (``out``) or, from the CLI, a flag (``--json``)."""
    return InputError(message, param=(*([flag] if flag.isidentifier() else []), *more))


def local_path(target: str | os.PathLike[str], flag: str) -> Path:
    """``target`` as a local path; a URL is refused (exit 2) instead of becoming a folder
    named ``s3:``. ``flag`` names it in messages: a parameter (``out``) or a flag.

    Parameters
    ----------
    target : str or os.PathLike[str]
        The output given.
    flag : str
        How messages name the output: a parameter (``out``) or a command-line flag.

    Returns
    -------
    Path
        The path, ``~`` expanded.

    Raises
    ------
    InputError
        If ``target`` is a URL.

    Examples
    --------
    >>> print(local_path("results/era5", "out"))
    results/era5
    >>> local_path("s3://bucket/era5", "out")
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: out='s3://bucket/era5' is a URL, and outputs are written to ...
    """
    if is_url(target):
        raise _refused(
            flag,
            f"{named(flag, target)} is a URL, and outputs are written to a local or mounted "
            f"folder: write them to a folder (e.g. {named(flag, 'results/out')}), then copy "
            f"them (aws s3 cp --recursive results/out {target})",
        )
    if not isinstance(target, str | os.PathLike):
        raise _refused(flag, f"{named(flag, target)} is not a path: give a folder or file name")
    return Path(target).expanduser()


#: a label that names one folder (a recipe's ``name:``, under ``results/``): letters,
#: digits, ``-``, ``_`` and ``.``, not ``.`` first (no hidden folder, no ``..``), at most
#: 100 characters (a path is then no surprise: no ``/``, no newline, no escape)
LABEL = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")


def check_label(value: str, what: str) -> str:
    """``value`` if it is a label (:data:`LABEL`); else :class:`InputError` naming it as
    ``what`` (``"recipe 'x.yaml': name"``).

    Parameters
    ----------
    value : str
        The name given.
    what : str
        What it is, for the message.

    Returns
    -------
    str
        ``value``.

    Raises
    ------
    InputError
        If ``value`` is not a label: letters, digits, ``-``, ``_`` and ``.``, not ``.``
        first, at most 100 characters.

    Examples
    --------
    >>> check_label("era5-sst_2019.v1", "recipe 'x.yaml': name")
    'era5-sst_2019.v1'
    >>> check_label("../etc", "recipe 'x.yaml': name")
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: recipe 'x.yaml': name '../etc' is not a label: ...
    """
    if not LABEL.fullmatch(value):
        raise InputError(
            f"{what} {shown(value)} is not a label: use letters, digits, '-', '_' and '.' "
            "(not first), at most 100 characters, e.g. era5-sst-mean"
        )
    return value


def folder_in(root: str | os.PathLike[str], name: str, *, what: str, flag: str = "out") -> Path:
    """The folder ``root/name`` for the label ``name`` (:func:`check_label`), which must
    lie directly inside ``root`` once links are resolved (``root`` itself may be a link).

    Parameters
    ----------
    root : str or os.PathLike[str]
        The folder that holds the outputs.
    name : str
        The label.
    what : str
        What ``name`` is, for messages.
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.

    Returns
    -------
    Path
        The folder.

    Raises
    ------
    InputError
        For a name that is not a label, or a ``root/name`` that is a link leading out of
        ``root``; nothing is changed.

    Examples
    --------
    >>> from pathlib import Path
    >>> Path("outputs").mkdir()
    >>> print(folder_in("outputs", "era5-sst", what="recipe 'x.yaml': name"))
    outputs/era5-sst
    """
    check_label(name, what)
    base = local_path(root, flag)
    path = base / name
    if _real(path).parent != _real(base):
        raise _refused(
            flag,
            f"{named(flag, path)} leads out of {str(base)!r} (a link): remove the link, or "
            "give another folder (nothing was changed)",
        )
    return path


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def check_inputs(target: Path, inputs: Iterable[object], flag: str) -> None:
    """Refuse an output that is, contains or lies inside one of ``inputs`` (paths; URLs
    and ``None`` are skipped).

    Parameters
    ----------
    target : Path
        The output.
    inputs : Iterable[object]
        The data read: the output may not be, contain or lie inside one (paths; URLs and
        ``None`` are skipped).
    flag : str
        How messages name the output: a parameter (``out``) or a command-line flag.

    Raises
    ------
    InputError
        If the output is, contains or lies inside an input.

    Examples
    --------
    >>> from pathlib import Path
    >>> check_inputs(Path("results/era5"), ["data/era5", "s3://era5-pds/2019"], "out")
    >>> check_inputs(Path("data/era5/out"), ["data/era5"], "out")
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: out='data/era5/out' lies inside the input 'data/era5': ...
    """
    out = _real(target)
    for given in inputs:
        if given is None or is_url(given):
            continue
        src = _real(Path(given).expanduser())
        if out == src:
            how = "is"
        elif out in src.parents:
            how = "contains"
        elif src in out.parents:
            how = "lies inside"
        else:
            continue
        raise _refused(
            flag,
            f"{named(flag, target)} {how} the input {str(given)!r}: write the outputs "
            "outside the input data (nothing was changed)",
        )


def folder_kind(folder: Path) -> str | None:
    """The kind of output (``"result"``, ``"zarr"``, a tree's kind) if ``folder`` is one
    this package wrote and holds nothing else, unchanged; ``None`` otherwise.

    A tree filled file by file (``demo-data``, ``stage``, a cache) has the marker file
    :data:`~pangeo_hpc.write.marks.MARKER`; a recipe's result folder is marked by its
    ``summary.json`` (which lists the outputs beside it with their sizes and hashes); a Zarr
    store by its attributes
    (:func:`~pangeo_hpc.write.marks.is_our_store`).

    Parameters
    ----------
    folder : Path
        An existing folder.

    Returns
    -------
    str or None
        The kind, or ``None``.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.write.outputs import claim_tree
    >>> folder_kind(claim_tree("demo_tree", kind="demo-data"))
    'demo-data'
    >>> Path("notes").mkdir()
    >>> folder_kind(Path("notes")) is None  # a user's folder
    True
    """
    return _examine(folder)[0]


def _examine(folder: Path) -> tuple[str | None, str | None]:
    """:func:`folder_kind`, and why a result folder of this package may not be replaced
    (a changed file, no record of its files), for the message; ``None`` if not that."""
    names = {p.name for p in folder.iterdir()}
    doc = read_marker(folder)
    if doc is not None:
        return str(doc.get("kind")), None
    if "summary.json" in names:
        why = result_changes(folder, names)
        return ("result", None) if why == "" else (None, why)
    if is_our_repository(folder, names):
        return ICECHUNK, None
    return ("zarr" if is_our_store(folder, names) else None), None


def _foreign(folder: Path, limit: int = 3) -> str:
    try:
        names = sorted(p.name for p in folder.iterdir())
    except FileNotFoundError:  # replaced since it was checked
        return "..."
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


#: times a folder replaced by another process while it is checked is checked again
_ATTEMPTS = 100


def _settled(path: Path) -> bool | tuple[str | None, str | None]:
    """What is at ``path`` now: ``False`` for nothing or an empty folder, ``True`` for a
    file or link, else :func:`_examine`'s answer about one folder.

    Another process may replace the folder while it is read (a second run into the same
    ``--out``: :func:`pangeo_hpc.write.outputs.atomic_dir` renames a finished folder in its
    place, then removes the old one file by file). The folder is held open while it is
    read, and the answer counts only if ``path`` is still that folder afterwards: a folder
    being replaced is renamed away before anything in it is removed, and an open folder's
    inode cannot be reused, so names, ``summary.json`` and the files hashed all come
    from one folder. Otherwise (or if a file vanished meanwhile) it is checked again.
    """
    for attempt in range(_ATTEMPTS):
        try:  # one lstat: a folder renamed away between two looks is no file
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return True  # a file or a link
        except FileNotFoundError:
            return False
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            return False
        except NotADirectoryError:
            continue  # replaced by a file meanwhile: look again
        try:
            try:
                found = _examine(path) if any(path.iterdir()) else False
            except FileNotFoundError:
                if attempt == _ATTEMPTS - 1:
                    raise
                continue
            try:
                if os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False)):
                    return found
            except FileNotFoundError:
                pass
        finally:
            os.close(fd)
    raise InputError(
        f"{str(path)!r} was replaced {_ATTEMPTS} times while it was checked: stop the other "
        "process writing there, or write elsewhere (nothing was changed)"
    )


def check_folder(
    target: str | os.PathLike[str],
    *,
    kind: str,
    inputs: Iterable[object] = (),
    flag: str = "out",
    overwrite: bool = True,
) -> Path:
    """Check that the folder ``target`` may be written (created, or replaced as a whole).

    Parameters
    ----------
    target : path
        The folder to write.
    kind : str
        What it will hold (``"result"``, ``"zarr"``, ``"demo"``, ``"stage"``, ...); an
        existing folder of this package is replaced only by an output of the same kind.
    inputs : iterable of paths
        What the verb reads: the output must not be, contain or lie inside any of them.
    flag : str
        How the user named the output, for the messages: the parameter (``out``, shown as
        ``out='...'``), or the flag when the CLI checks it itself (``--json``).
    overwrite : bool
        Whether an existing output of this package may be replaced; if not, it is an
        error that says to pass ``overwrite=True``.

    Returns
    -------
    pathlib.Path
        ``target`` as a path.

    Raises
    ------
    InputError
        For a URL, an input, a file, or a folder that holds anything this package did not
        write; nothing is changed.

    Examples
    --------
    >>> print(check_folder("results/era5-sst", kind="result"))  # new: may be written
    results/era5-sst
    >>> check_folder("data/era5/out", kind="result", inputs=["data/era5"])
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: out='data/era5/out' lies inside the input 'data/era5': ...
    """
    path = local_path(target, flag)
    check_inputs(path, inputs, flag)
    found = _settled(path)
    if found is False:
        return path  # new, or empty
    if found is True:
        raise _refused(
            flag,
            f"{named(flag, path)} is a file (or a link), not a folder pangeo-hpc wrote: "
            "give a new folder name",
        )
    what, why = found
    if what is None and why:
        raise _refused(
            flag, f"{named(flag, path)} {why}, or give another folder (nothing was changed)"
        )
    if what is None:
        raise _foreign_error(path, flag)
    if what != kind:
        raise _kind_error(path, flag, what, kind)
    if not overwrite:
        raise _refused(
            flag, f"{named(flag, path)} exists: pass overwrite=True to replace it", "overwrite"
        )
    return path


def check_tree(
    root: str | os.PathLike[str],
    *,
    kind: str,
    inputs: Iterable[object] = (),
    flag: str = "out",
    ours: Callable[[Path], bool] | None = None,
) -> tuple[Path, bool]:
    """Check that ``root`` may be a folder this package fills file by file (``demo-data``,
    ``stage``, a cache): new, empty, carrying the marker of this ``kind``, or (``ours``) a
    tree of an earlier version. Never replaced whole, so it may also hold a user's files.

    Parameters
    ----------
    root : str or os.PathLike[str]
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

    Returns
    -------
    (pathlib.Path, bool)
        ``root`` as a path, and whether it already carries the marker.

    Raises
    ------
    InputError
        For a URL, an input, a file, or a folder that holds anything else; nothing is
        changed.

    Examples
    --------
    >>> print(*check_tree("demo", kind="demo-data"))  # new, so not marked yet
    demo False
    """
    path = local_path(root, flag)
    check_inputs(path, inputs, flag)
    if path.exists() and not path.is_dir():
        raise _refused(flag, f"{named(flag, path)} is a file: give a folder")
    if not path.is_dir() or not any(path.iterdir()):
        return path, False
    doc = read_marker(path)
    if doc is not None:
        if doc.get("kind") != kind:
            raise _kind_error(path, flag, str(doc.get("kind")), kind)
        return path, True
    if ours is None or not ours(path):
        raise _foreign_error(path, flag)
    return path, False


def _foreign_error(path: Path, flag: str) -> InputError:
    return _refused(
        flag,
        f"{named(flag, path)} holds files that pangeo-hpc did not write "
        f"({_foreign(path)}): give a new or empty folder (nothing was changed)",
    )


def _kind_error(path: Path, flag: str, found: str, kind: str) -> InputError:
    return _refused(
        flag,
        f"{named(flag, path)} holds a {found} output of pangeo-hpc, not a {kind}: "
        "give another folder (nothing was changed)",
    )


def check_file(
    target: str | os.PathLike[str],
    *,
    inputs: Iterable[object] = (),
    flag: str = "out",
    ours: Callable[[Path], bool] | None = None,
) -> Path:
    """Check that the file ``target`` may be written: new, or one this package wrote
    (:func:`~pangeo_hpc.write.marks.file_is_ours`, or the test ``ours`` of a writer that
    knows its files better).

    Parameters
    ----------
    target : str or os.PathLike[str]
        The file.
    inputs : Iterable[object], optional
        The data read: the output may not be, contain or lie inside one (paths; URLs and
        ``None`` are skipped).
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.
    ours : Callable[[Path], bool], optional
        A test that recognises a file of an earlier version as this package's, besides
        the marker.

    Returns
    -------
    Path
        ``target`` as a path.

    Raises
    ------
    InputError
        For a URL, an input, a folder, or an existing file without this package's marker;
        nothing is changed. (A missing parent folder is created by the writer.)

    Examples
    --------
    >>> from pathlib import Path
    >>> print(check_file("stats.json"))  # new: may be written
    stats.json
    >>> _ = Path("notes.txt").write_text("mine")
    >>> check_file("notes.txt")
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: out='notes.txt' exists and was not written by pangeo-hpc: ...
    """
    path = local_path(target, flag)
    check_inputs(path, inputs, flag)
    if path.is_dir():
        raise _refused(flag, f"{named(flag, path)} is a folder: give a file name")
    if path.exists() and not (ours or file_is_ours)(path):
        raise _refused(
            flag,
            f"{named(flag, path)} exists and was not written by pangeo-hpc: give another "
            "file name, or move that file away yourself (nothing was changed)",
        )
    return path
