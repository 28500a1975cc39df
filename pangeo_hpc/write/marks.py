"""How this package knows what it wrote: the marker file of a tree it fills file by file,
``written_by`` in its JSON outputs, the attribute of its Zarr stores and the text in its
figures' metadata. :mod:`pangeo_hpc.write.guard` asks these before anything is replaced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = [
    "MARKER",
    "STORE_ATTR",
    "WRITTEN_BY",
    "figure_mark",
    "figure_metadata",
    "file_is_ours",
    "is_our_store",
    "marker_doc",
    "read_marker",
]

#: the marker file of a tree this package fills file by file (demo data, stage, caches)
MARKER = ".pangeo-hpc.json"
#: the value of ``written_by`` in markers and JSON outputs, and the text in figures
WRITTEN_BY = "pangeo-hpc"
#: the attribute of Zarr stores written by ``convert`` before the marker file existed
STORE_ATTR = "pangeo_hpc_converted_from"
#: figure formats: the marker sits in their metadata (see :func:`figure_metadata`)
_FIGURES = {".png", ".svg", ".pdf"}


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of a folder this package wrote, or ``None``.

    Parameters
    ----------
    folder : Path
        A folder.

    Returns
    -------
    dict or None
        The marker's document, or ``None``.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.write.outputs import claim_tree
    >>> read_marker(claim_tree("marked_tree", kind="demo-data"))["kind"]
    'demo-data'
    >>> Path("plain").mkdir()
    >>> read_marker(Path("plain")) is None
    True
    """
    try:
        doc = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if isinstance(doc, dict) and str(doc.get("written_by", "")).startswith(WRITTEN_BY):
        return doc
    return None


def marker_doc(kind: str) -> dict[str, Any]:
    """The marker of a tree of ``kind`` that a verb fills file by file (it may hold a
    user's files too, so it is never replaced whole).

    Parameters
    ----------
    kind : str
        The output's kind (``result``, ``zarr``, ``demo-data``, ...).

    Returns
    -------
    dict[str, Any]
        The marker's document.

    Examples
    --------
    >>> doc = marker_doc("demo-data")
    >>> doc["kind"], doc["written_by"]
    ('demo-data', 'pangeo-hpc ...')
    """
    from datetime import UTC, datetime
    from importlib.metadata import version

    return {
        "written_by": f"{WRITTEN_BY} {version('pangeo-hpc')}",
        "kind": kind,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


#: the files of a Zarr group (v3 and v2)
_ZARR_FILES = {"zarr.json", ".zgroup", ".zattrs", ".zmetadata"}


def is_our_store(folder: Path, names: set[str] | None = None) -> bool:
    """Whether ``folder`` is a Zarr store written by ``convert`` and holds nothing else:
    its group attributes carry :data:`STORE_ATTR` (a Zarr store's marker lives in its
    metadata, since zarr-python warns about any file it does not know).

    Parameters
    ----------
    folder : Path
        A folder.
    names : set[str], optional
        Its top-level names, if already listed.

    Returns
    -------
    bool
        Whether it is ours.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> from pathlib import Path
    >>> _ = xr.Dataset({"tas": ("x", np.zeros(3))}).to_zarr("users.zarr", consolidated=False)
    >>> is_our_store(Path("users.zarr"))  # not written by convert
    False
    """
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


def file_is_ours(path: Path) -> bool:
    """Whether the file ``path`` carries this package's marker for its format.

    JSON: a top-level ``written_by`` naming ``pangeo-hpc``; YAML: a first line
    ``# written by ... pangeo``; figures (PNG, SVG, PDF): the marker text of
    :func:`figure_metadata` in the file; a page (``report.html``): that text in its
    first 2 KB (its ``generator``). Other files are never ours.

    Parameters
    ----------
    path : Path
        An existing file.

    Returns
    -------
    bool
        Whether it carries the marker.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.write.outputs import write_json
    >>> file_is_ours(write_json("stats.json", {"mean": 2.5}))
    True
    >>> _ = Path("notes.json").write_text('{"mean": 2.5}')
    >>> file_is_ours(Path("notes.json"))
    False
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
        if suffix == ".html":  # report.html: the marker in its generator, in the head
            with path.open("rb") as f:
                return figure_mark().encode() in f.read(2048)
        if suffix in _FIGURES:
            if path.stat().st_size > 64 << 20:
                return False
            return figure_mark().encode() in path.read_bytes()
    except (OSError, ValueError):
        return False
    return False


def figure_mark() -> str:
    """The text a figure written by this package carries in its metadata.

    Returns
    -------
    str
        The text.

    Examples
    --------
    >>> figure_mark()
    'written by pangeo-hpc'
    """
    return f"written by {WRITTEN_BY}"


def figure_metadata(fmt: str) -> dict[str, str]:
    """Matplotlib ``savefig(metadata=...)`` that marks a figure of format ``fmt``.

    Parameters
    ----------
    fmt : str
        ``png``, ``svg`` or ``pdf``.

    Returns
    -------
    dict[str, str]
        The metadata.

    Examples
    --------
    >>> figure_metadata("png"), figure_metadata("pdf")
    ({'Software': 'written by pangeo-hpc ...'}, {'Creator': 'written by pangeo-hpc ...'})
    """
    from importlib.metadata import version

    text = f"{figure_mark()} {version('pangeo-hpc')}"
    if fmt == "png":
        return {"Software": text}
    if fmt == "svg":
        return {"Description": text}
    if fmt == "pdf":
        return {"Creator": text}
    return {}
