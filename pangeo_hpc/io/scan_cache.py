"""A cache of what the catalog learns from each local file's metadata.

Opening a tree of 1,000 monthly files costs one HDF5 metadata scan per file (time values,
shape, chunking), serial because HDF5 is, and slow when the metadata are not in the page
cache (Lustre's metadata server, an NFS home, a cold disk). The scans are kept in one JSON
file per tree and variable (config ``pangeo-hpc.catalog.cache``; ``false`` turns it off),
each entry stamped with the file's identity (:class:`~pangeo_hpc.inputs.stamps.Stamp`:
device, inode, size, mtime and ctime): a file that changed in any of these is scanned
again. Writes are atomic; each file is sealed with the SHA-256 of its content
(:func:`~pangeo_hpc.write.sealed.seal_json`), checked before it is parsed: a damaged one
(a flipped digit of a time value would be a wrong time) is a miss, like one that cannot
be read, and the next save replaces it. A cache that cannot be read or written is ignored
(opening never fails because of it).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from pangeo_hpc import config
from pangeo_hpc.write.sealed import seal_json, sealed_json, unseal_json

#: 2: bounds, units, calendar, grid; 3: Stamp; 4: sealed; 5: the packing's width; 6: the
#: grid's 2-D coordinates in ``grid``
_FORMAT = "pangeo-hpc-scan-cache-6"


def cache_path(root: Path, variable: str, *, kind: str = "") -> Path | None:
    """The cache file of ``variable`` under ``root``; ``None`` when caching is off. ``kind``
    keeps caches of other shapes apart (``"files"``: :func:`pangeo_hpc.io.files.open_files`).

    Parameters
    ----------
    root : Path
        The tree's folder.
    variable : str
        The variable's name.
    kind : str, optional
        Keeps caches of other shapes apart (``"files"``).

    Returns
    -------
    Path | None
        The file, or ``None``.

    Examples
    --------
    >>> import dask, pathlib
    >>> with dask.config.set({"pangeo-hpc.catalog.cache": "/tmp/catalog"}):
    ...     print(cache_path(pathlib.Path("/data/era5"), "t2m").parent)
    /tmp/catalog
    >>> with dask.config.set({"pangeo-hpc.catalog.cache": False}):
    ...     print(cache_path(pathlib.Path("/data/era5"), "t2m"))
    None
    """
    folder = config.get("catalog.cache")
    if folder in (None, False, "", "false", "none"):
        return None
    name = f"{root.resolve()}\0{variable}" + (f"\0{kind}" if kind else "")
    key = hashlib.sha256(name.encode()).hexdigest()[:24]
    return Path(os.path.expandvars(str(folder))).expanduser() / f"{key}.json"


def load(path: Path | None) -> dict[str, Any]:
    """The cached entries (file path relative to the tree -> entry), or ``{}``.

    Parameters
    ----------
    path : Path | None
        The cache file, or ``None``.

    Returns
    -------
    dict[str, Any]
        The entries.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "t2m.json"
    >>> load(path)  # no cache yet
    {}
    >>> save(path, {"2008/01/data/t2m.nc": {"length": 744}})
    >>> load(path)
    {'2008/01/data/t2m.nc': {'length': 744}}
    >>> tmp.cleanup()
    """
    if path is None:
        return {}
    try:
        doc = unseal_json(path.read_bytes())
    except (OSError, ValueError):  # missing, unreadable, damaged (Damaged), unsealed
        return {}
    files = doc.get("files") if doc.get("format") == _FORMAT else None
    return files if isinstance(files, dict) else {}


def save(path: Path | None, entries: dict[str, Any]) -> None:
    """Write ``entries`` atomically (user-only permissions); errors are ignored, and so is
    a file of that name that is not a scan cache (it is left alone).

    Parameters
    ----------
    path : Path | None
        The cache file, or ``None`` (nothing written).
    entries : dict[str, Any]
        The entries.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "t2m.json"
    >>> save(path, {"2008/01/data/t2m.nc": {"length": 744}})
    >>> load(path)["2008/01/data/t2m.nc"]
    {'length': 744}
    >>> tmp.cleanup()
    """
    from pangeo_hpc.errors import InputError
    from pangeo_hpc.write.outputs import atomic_file

    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with atomic_file(path, flag="pangeo-hpc.catalog.cache", mode=0o600, ours=_is_cache) as tmp:
            tmp.write_bytes(seal_json({"format": _FORMAT, "files": entries}))
    except (OSError, InputError):
        pass


def _is_cache(path: Path) -> bool:
    """A scan cache of ours (sealed, even if damaged, or of an earlier format), or a damaged
    file at its digest-named path (only this module writes such names, so a file there that
    is not even JSON is a damaged entry of ours); JSON of any other kind is left alone."""
    try:
        if sealed_json(path.read_bytes()):
            return True
        doc = json.loads(path.read_text())
    except ValueError:
        return True
    except OSError:
        return False
    return isinstance(doc, dict) and str(doc.get("format")).startswith(_FORMAT[:-1])


def encode_times(times: np.ndarray) -> dict[str, Any]:
    """Times as JSON: their dtype and values.

    Parameters
    ----------
    times : np.ndarray
        Times.

    Returns
    -------
    dict[str, Any]
        JSON-ready.

    Examples
    --------
    >>> encode_times(np.array(["2008-01-01", "2008-01-02"], dtype="datetime64[ns]"))
    {'dtype': '<M8[ns]', 'values': [1199145600000000000, 1199232000000000000]}
    """
    return {"dtype": times.dtype.str, "values": times.tolist()}


def decode_times(doc: dict[str, Any]) -> np.ndarray:
    """The times :func:`encode_times` encoded.

    Parameters
    ----------
    doc : dict[str, Any]
        What :func:`encode_times` gave.

    Returns
    -------
    np.ndarray
        The times.

    Examples
    --------
    >>> times = np.array(["2008-01-01", "2008-01-02"], dtype="datetime64[ns]")
    >>> decode_times(encode_times(times))
    array(['2008-01-01T00:00:00.000000000', '2008-01-02T00:00:00.000000000'],
          dtype='datetime64[ns]')
    """
    return np.asarray(doc["values"], dtype=np.dtype(doc["dtype"]))
