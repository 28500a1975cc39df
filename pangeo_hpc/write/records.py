"""What a result's ``summary.json`` records of its files (size and SHA-256 of each as
written), and whether a result folder still holds them unchanged: a later run replaces a
result only while every file is as written (:mod:`pangeo_hpc.write.guard`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pangeo_hpc.write.marks import WRITTEN_BY

__all__ = ["FILES_KEY", "file_record", "file_records", "result_changes"]

#: what a result folder of earlier versions holds
_LEGACY_RESULT = {"result.nc", "result.zarr", "plot.png", "summary.json"}

#: the key of a result's ``summary.json`` that records its files as written
FILES_KEY = "files"
#: the record of files and folders hashed already, by what tells a file changed
#: (device, inode, size, mtime, ctime): a result is checked three times per run
_HASHED: dict[tuple[int, ...], str] = {}


def _sha256(path: Path, st: os.stat_result) -> str:
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key not in _HASHED:
        digest = hashlib.sha256()
        with path.open("rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
        if len(_HASHED) > 4096:
            _HASHED.clear()
        _HASHED[key] = digest.hexdigest()
    return _HASHED[key]


def file_record(path: Path) -> dict[str, Any]:
    """Size and SHA-256 of a file as :func:`file_records` writes them; of a folder (a
    ``result.zarr``), its bytes, its files and one SHA-256 of every file's relative path,
    size and SHA-256. A link, or a folder holding one, has no record (``{}``).

    Parameters
    ----------
    path : Path
        A file or folder.

    Returns
    -------
    dict[str, Any]
        ``bytes`` and ``sha256`` (and ``files`` for a folder), or ``{}``.

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("hello.txt").write_text("hello")
    >>> file_record(Path("hello.txt"))
    {'bytes': 5, 'sha256': '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824'}
    """
    st = path.lstat()
    if stat.S_ISREG(st.st_mode):
        return {"bytes": st.st_size, "sha256": _sha256(path, st)}
    if not stat.S_ISDIR(st.st_mode):
        return {}
    tree, total, count = hashlib.sha256(), 0, 0
    for sub in sorted(path.rglob("*")):
        sst = sub.lstat()
        if stat.S_ISDIR(sst.st_mode):
            continue
        if not stat.S_ISREG(sst.st_mode):
            return {}
        rel = sub.relative_to(path).as_posix()
        tree.update(f"{rel}\0{sst.st_size}\0{_sha256(sub, sst)}\n".encode())
        total, count = total + sst.st_size, count + 1
    return {"bytes": total, "files": count, "sha256": tree.hexdigest()}


def file_records(folder: Path, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """What a result's ``summary.json`` records of the files ``names`` in ``folder``
    (under :data:`FILES_KEY`), so that a later run replaces them only while every one is
    as written: ``{"result.nc": {"bytes": ..., "sha256": ...}, ...}`` (:func:`file_record`).

    Parameters
    ----------
    folder : Path
        The result folder.
    names : Iterable[str]
        The files' names in it.

    Returns
    -------
    dict[str, dict[str, Any]]
        Name -> record.

    Examples
    --------
    >>> from pathlib import Path
    >>> Path("recorded").mkdir()
    >>> _ = Path("recorded/hello.txt").write_text("hello")
    >>> file_records(Path("recorded"), ["hello.txt"])["hello.txt"]["bytes"]
    5
    """
    return {name: file_record(folder / name) for name in names}


def result_changes(folder: Path, names: set[str]) -> str | None:
    """``""`` if ``folder`` is a result of this package as written; else why not, for a
    message (a changed file, no record of the files), or ``None`` if it is not one.

    Parameters
    ----------
    folder : Path
        A folder.
    names : set[str]
        Its top-level names.

    Returns
    -------
    str or None
        ``""``, the reason, or ``None``.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.write.outputs import atomic_dir, write_json
    >>> with atomic_dir("results/era5-sst") as tmp:
    ...     _ = write_json(tmp / "summary.json", {"mean": 2.5})
    >>> result_changes(Path("results/era5-sst"), {"summary.json"})  # as written
    ''
    """
    try:
        doc = json.loads((folder / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    old = (
        "holds a result of an older pangeo-hpc, which recorded no sizes or hashes of its "
        "files, so a file edited there cannot be told from its own: move the folder away"
    )
    if str(doc.get("written_by", "")).startswith(WRITTEN_BY):
        listed = {str(v) for v in (doc.get("outputs") or {}).values()} | {"summary.json"}
        if not names <= listed:
            return None
        records = doc.get(FILES_KEY)
        others = sorted(names - {"summary.json"})
        if others and not isinstance(records, dict):
            return old
        for name in others:
            written = records.get(name) if isinstance(records, dict) else None
            if not written or file_record(folder / name) != written:
                return (
                    f"holds {name!r}, changed since pangeo-hpc wrote it (its size or SHA-256 "
                    "differs from summary.json's record): move that file out of the folder"
                )
        return ""
    # written before summaries were marked: the versions name this package
    if WRITTEN_BY in (doc.get("versions") or {}) and names <= _LEGACY_RESULT:
        return old
    return None
