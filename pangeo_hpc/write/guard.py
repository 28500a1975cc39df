"""What the package may write over: only what it wrote itself, never an input, never a URL.

Every output a verb writes is checked here before anything is written, and again just
before it is renamed into place (a long run gives a user time to put a file there):

* a **URL** (``s3://bucket/x``, any ``scheme://``) is refused: outputs go to a local or
  mounted folder (``Path("s3://b/x")`` would silently be a local folder named ``s3:``);
* an output that **is, contains or lies inside an input** is refused (the data tree, its
  parent, or a folder within it);
* an existing **folder** is replaced only when it is empty or is an output of this
  package that holds nothing else (:func:`folder_kind`: a result folder's marked
  ``summary.json`` lists its files; a Zarr store carries :data:`STORE_ATTR`); a tree
  that a verb fills file by file carries the marker file :data:`MARKER`, and is written
  into, never replaced; an existing **file** only when it carries the format's marker
  (:func:`file_is_ours`). Anything else is refused with one line naming the path, the
  first foreign entries, and the fix. Nothing is renamed, removed or written first.

Result folders written before summaries were marked are recognised by what they hold: a
``summary.json`` whose versions name ``pangeo-hpc``, and only result files.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pangeo_hpc.errors import InputError, named

#: the marker file of a tree this package fills file by file (demo data, stage, caches)
MARKER = ".pangeo-hpc.json"
#: the value of ``written_by`` in markers and JSON outputs, and the text in figures
WRITTEN_BY = "pangeo-hpc"
#: the attribute of Zarr stores written by ``convert`` before the marker file existed
STORE_ATTR = "pangeo_hpc_converted_from"
#: what a result folder of earlier versions holds
_LEGACY_RESULT = {"result.nc", "result.zarr", "plot.png", "summary.json"}
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: figure formats: the marker sits in their metadata (see :func:`figure_metadata`)
_FIGURES = {".png", ".svg", ".pdf"}


def is_url(target: object) -> bool:
    """Whether ``target`` is a URL (``s3://...``) rather than a path."""
    return isinstance(target, str) and _URL.match(target) is not None


def _refused(flag: str, message: str, *more: str) -> InputError:
    """An InputError whose message names the output as :func:`~pangeo_hpc.errors.named`
    does: ``flag`` is a parameter (``out``) or, from the CLI, a flag (``--json``)."""
    return InputError(message, param=(*([flag] if flag.isidentifier() else []), *more))


def local_path(target: str | os.PathLike[str], flag: str) -> Path:
    """``target`` as a local path; a URL is refused (exit 2) instead of becoming a folder
    named ``s3:``. ``flag`` names it in messages: a parameter (``out``) or a flag."""
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


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def check_inputs(target: Path, inputs: Iterable[object], flag: str) -> None:
    """Refuse an output that is, contains or lies inside one of ``inputs`` (paths; URLs
    and ``None`` are skipped)."""
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


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of a folder this package wrote, or ``None``."""
    try:
        doc = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if isinstance(doc, dict) and str(doc.get("written_by", "")).startswith(WRITTEN_BY):
        return doc
    return None


def marker_doc(kind: str) -> dict[str, Any]:
    """The marker of a tree of ``kind`` that a verb fills file by file (it may hold a
    user's files too, so it is never replaced whole)."""
    from datetime import UTC, datetime
    from importlib.metadata import version

    return {
        "written_by": f"{WRITTEN_BY} {version('pangeo-hpc')}",
        "kind": kind,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def folder_kind(folder: Path) -> str | None:
    """The kind of output (``"result"``, ``"zarr"``, a tree's kind) if ``folder`` is one
    this package wrote and holds nothing else; ``None`` otherwise.

    A tree filled file by file (``demo-data``, ``stage``, a cache) has the marker file
    :data:`MARKER`; a recipe's result folder is marked by its ``summary.json`` (which lists
    the outputs beside it); a Zarr store by its attributes (:func:`is_our_store`).
    """
    names = {p.name for p in folder.iterdir()}
    doc = read_marker(folder)
    if doc is not None:
        return str(doc.get("kind"))
    if "summary.json" in names:
        return "result" if _is_result(folder, names) else None
    return "zarr" if is_our_store(folder, names) else None


def _is_result(folder: Path, names: set[str]) -> bool:
    try:
        doc = json.loads((folder / "summary.json").read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(doc, dict):
        return False
    if str(doc.get("written_by", "")).startswith(WRITTEN_BY):
        listed = {str(v) for v in (doc.get("outputs") or {}).values()} | {"summary.json"}
        return names <= listed
    # written before summaries were marked: the versions name this package
    return WRITTEN_BY in (doc.get("versions") or {}) and names <= _LEGACY_RESULT


#: the files of a Zarr group (v3 and v2)
_ZARR_FILES = {"zarr.json", ".zgroup", ".zattrs", ".zmetadata"}


def is_our_store(folder: Path, names: set[str] | None = None) -> bool:
    """Whether ``folder`` is a Zarr store written by ``convert`` and holds nothing else:
    its group attributes carry :data:`STORE_ATTR` (a Zarr store's marker lives in its
    metadata, since zarr-python warns about any file it does not know)."""
    names = {p.name for p in folder.iterdir()} if names is None else names
    attrs: Any = {}
    for meta, key in (("zarr.json", "attributes"), (".zattrs", None)):
        try:
            doc = json.loads((folder / meta).read_text())
        except (OSError, ValueError):
            continue
        attrs = doc.get(key, {}) if key else doc
        break
    if not isinstance(attrs, dict) or STORE_ATTR not in attrs:
        return False
    return all(
        n in _ZARR_FILES or any((folder / n / f).is_file() for f in ("zarr.json", ".zarray"))
        for n in names
    )


def _foreign(folder: Path, limit: int = 3) -> str:
    names = sorted(p.name for p in folder.iterdir())
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


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
    """
    path = local_path(target, flag)
    check_inputs(path, inputs, flag)
    if not path.exists() and not path.is_symlink():
        return path
    if path.is_symlink() or not path.is_dir():
        raise _refused(
            flag,
            f"{named(flag, path)} is a file (or a link), not a folder pangeo-hpc wrote: "
            "give a new folder name",
        )
    if not any(path.iterdir()):
        return path
    found = folder_kind(path)
    if found is None:
        raise _foreign_error(path, flag)
    if found != kind:
        raise _kind_error(path, flag, found, kind)
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

    Returns
    -------
    (pathlib.Path, bool)
        ``root`` as a path, and whether it already carries the marker.

    Raises
    ------
    InputError
        For a URL, an input, a file, or a folder that holds anything else; nothing is
        changed.
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


def file_is_ours(path: Path) -> bool:
    """Whether the file ``path`` carries this package's marker for its format.

    JSON: a top-level ``written_by`` naming ``pangeo-hpc``; YAML: a first line
    ``# written by ... pangeo``; figures (PNG, SVG, PDF): the marker text of
    :func:`figure_metadata` in the file. Other files are never ours.
    """
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            doc = json.loads(path.read_text())
            return isinstance(doc, dict) and str(doc.get("written_by", "")).startswith(WRITTEN_BY)
        if suffix in (".yaml", ".yml"):
            with path.open(errors="replace") as f:
                first = f.readline()
            return first.startswith("# written by") and "pangeo" in first
        if suffix in _FIGURES:
            if path.stat().st_size > 64 << 20:
                return False
            return figure_mark().encode() in path.read_bytes()
    except (OSError, ValueError):
        return False
    return False


def check_file(
    target: str | os.PathLike[str],
    *,
    inputs: Iterable[object] = (),
    flag: str = "out",
    ours: Callable[[Path], bool] | None = None,
) -> Path:
    """Check that the file ``target`` may be written: new, or one this package wrote
    (:func:`file_is_ours`, or the test ``ours`` of a writer that knows its files better).

    Raises
    ------
    InputError
        For a URL, an input, a folder, or an existing file without this package's marker;
        nothing is changed. (A missing parent folder is created by the writer.)
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


def figure_mark() -> str:
    """The text a figure written by this package carries in its metadata."""
    return f"written by {WRITTEN_BY}"


def figure_metadata(fmt: str) -> dict[str, str]:
    """Matplotlib ``savefig(metadata=...)`` that marks a figure of format ``fmt``."""
    from importlib.metadata import version

    text = f"{figure_mark()} {version('pangeo-hpc')}"
    if fmt == "png":
        return {"Software": text}
    if fmt == "svg":
        return {"Description": text}
    if fmt == "pdf":
        return {"Creator": text}
    return {}
