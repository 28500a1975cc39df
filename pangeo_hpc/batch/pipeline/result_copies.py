"""An answer computed before, asked for again into another folder: copied from the folder
that holds it, not computed again (a build system's cache of outputs, issue 29 §1).

The rules first:

* **Where results are** is recorded in the state cache
  (:class:`~pangeo_hpc.batch.incremental.state_cache.StateCache`, so under its rules:
  sealed, evicted least recently used first, removed by ``cache clear``): one small entry per
  run key (:func:`~pangeo_hpc.batch.pipeline.reuse.run_key`) holding the last
  :data:`KEPT` local folders a run of that key wrote (:func:`record`), the newest first;
  folders since removed are dropped from it.
  Nothing of a result is stored twice.
* **A copy** (:func:`copy_earlier`) is made from the first of them that could be served
  for the key where it is (:func:`~pangeo_hpc.batch.pipeline.reuse.served`: its
  ``summary.json`` records the same key, and the folder holds exactly the files it
  records, each of the size and SHA-256 recorded). The files are copied into the run's
  folder through the write guard (:func:`~pangeo_hpc.write.outputs.atomic_dir`: the folder
  new, empty or an unchanged result of this package, never an input; renamed into place
  whole), checked again against the record after the copy (a file changed while it was
  copied: no copy), and its ``summary.json`` is the source's with ``copied`` added: the
  folder it came from and when. ``created``, the command and the timings stay those of the
  run that computed the answer.
* ``pangeo-hpc.cache.copy-results: false`` turns both off: nothing recorded, nothing
  copied (a run into another folder computes from the states).
* Anything else is a **miss**: no entry, a damaged one, a folder gone, changed,
  unreadable or not the user's own (it or one of its files owned by another user), a copy
  that differs. The run then computes as it would have.

The key, and so what a copy does not see, is :mod:`~pangeo_hpc.batch.pipeline.reuse`'s:
a copy is served exactly when the same command into the source folder would be.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.batch.incremental.state_cache import StateCache, open_cache
from pangeo_hpc.batch.pipeline.reuse import result_files, served
from pangeo_hpc.write.guard import is_url
from pangeo_hpc.write.in_place import is_mount_point
from pangeo_hpc.write.outputs import atomic_dir, copy_into, write_json
from pangeo_hpc.write.records import FILES_KEY, file_records
from pangeo_hpc.write.writable import check_utf8, check_writable

__all__ = ["COPIED", "KEPT", "copy_earlier", "record"]

#: how each file or folder is copied (tests replace it to tear a copy)
_copy_one = copy_into

#: how many folders an entry keeps per run key (a user deletes one: the next serves)
KEPT = 4
#: the entry of a copy's ``summary.json`` that says where it came from and when
COPIED = "copied"
#: what ``cache list`` shows in an entry's ``result`` column
_WHAT = "where its result is (folders)"


class _Differs(Exception):
    """A file copied is not as its source's record says (changed while it was copied)."""


def _entry(key: str) -> str:
    """The state cache's key of the entry of run key ``key`` (never a state's key: those
    hash files' stamps and a chain)."""
    return hashlib.sha256(f"result folders\0{key}".encode()).hexdigest()


def _folders(cache: StateCache, key: str) -> list[str]:
    got = cache.get(_entry(key))
    listed = None if got is None else got[1].get("folders")
    if not isinstance(listed, list):
        return []
    return [f for f in listed if isinstance(f, str) and os.path.isabs(f)]


def record(cache: StateCache | None, key: str | None, out: Any, recipe: str) -> None:
    """Record that the result of run key ``key`` is in folder ``out`` (newest first, the
    last :data:`KEPT` folders kept). No cache, no key, an ``s3://`` output, or
    ``pangeo-hpc.cache.copy-results`` false: nothing.

    Parameters
    ----------
    cache : StateCache or None
        The run's state cache (``None``: the run is not cached).
    key : str or None
        The run key, or ``None`` (a run that cannot be keyed).
    out : path or str
        The result folder just written.
    recipe : str
        The recipe's name (``cache list`` and ``cache clear --recipe`` match it).

    Returns
    -------
    None
        The entry is stored (or not, when the cache is :attr:`~StateCache.disabled`).

    Examples
    --------
    >>> from pangeo_hpc.batch import StateCache
    >>> from pangeo_hpc.batch.pipeline.result_copies import record
    >>> cache = StateCache("states-record")
    >>> record(cache, "ab" * 32, "results/sst", "era5-sst-mean")
    >>> [e.meta["folders"][0].endswith("results/sst") for e in cache.entries()]
    [True]
    """
    if cache is None or key is None or is_url(str(out)) or not config.get("cache.copy-results"):
        return
    folder = os.path.abspath(out)
    alive = (f for f in _folders(cache, key) if f != folder and os.path.isfile(f"{f}/summary.json"))
    kept = [folder, *alive][:KEPT]  # folders since removed make no room
    cache.put(_entry(key), {}, {"recipe": recipe, "result": _WHAT, "folders": kept})


def copy_earlier(
    key: str | None, out: Any, *, inputs: Iterable[object], recipe: str
) -> tuple[Path, dict[str, Any]] | None:
    """Copy the result of run key ``key`` from a folder that holds it into ``out``, or
    ``None`` (a miss: nothing written). The state cache is config's (none when
    ``pangeo-hpc.cache.enabled`` is false); ``pangeo-hpc.cache.copy-results`` false: a miss.

    Parameters
    ----------
    key : str or None
        The run key (``None``: a miss).
    out : path or None
        The run's result folder (``None`` or an ``s3://`` URL: a miss).
    inputs : iterable of paths
        What the run reads, as its write guard is given it: ``out`` may not be, contain or
        lie inside one.
    recipe : str
        The recipe's name.

    Returns
    -------
    (Path, dict) or None
        The folder copied from and the ``summary.json`` written into ``out``.

    Raises
    ------
    InputError
        If ``out`` may not be written (as the run would have found before computing).

    Examples
    --------
    >>> from pangeo_hpc.batch.pipeline.result_copies import copy_earlier
    >>> copy_earlier("ab" * 32, "results/new", inputs=["data"], recipe="x") is None
    True
    """
    if key is None or out is None or is_url(str(out)) or not config.get("cache.copy-results"):
        return None
    cache = open_cache()
    if cache is None:
        return None
    target = os.path.realpath(out)
    for source in _folders(cache, key):
        if os.path.realpath(source) == target:
            continue  # served there already, had it been servable
        summary = served(source, key)
        if summary is None or not _yours(Path(source), summary):
            continue
        check_utf8(out)
        check_writable(out, in_place=is_mount_point(out))
        written = _copy(Path(source), Path(out), summary, list(inputs))
        if written is not None:
            record(cache, key, out, recipe)
            return Path(source), written
    return None


def _yours(source: Path, summary: dict[str, Any]) -> bool:
    """Whether the folder and its files are this user's own (a folder put at a recorded
    path by another user is not copied from, whatever its ``summary.json`` says)."""
    names = result_files(summary)
    try:
        return all(p.lstat().st_uid == os.getuid() for p in [source, *(source / n for n in names)])
    except OSError:
        return False


def _copy(
    source: Path, out: Path, summary: dict[str, Any], inputs: list[object]
) -> dict[str, Any] | None:
    """The copy of ``source``'s result into ``out`` through the guard, or ``None`` (a file
    differed from its record after the copy: nothing written)."""
    names = result_files(summary)
    doc = {k: v for k, v in summary.items() if k != "written_by"}
    doc[COPIED] = {"from": str(source), "at": datetime.now(UTC).isoformat(timespec="seconds")}
    try:
        with atomic_dir(out, kind="result", inputs=inputs) as tmp:
            for name in names:
                _copy_one(source / name, tmp / name)
            if file_records(tmp, names) != summary[FILES_KEY]:
                raise _Differs(str(source))
            write_json(tmp / "summary.json", doc)
    except _Differs:
        return None
    return doc
