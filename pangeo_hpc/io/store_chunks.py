"""The identity of a month of a Zarr store or Icechunk repository, from its metadata only.

The incremental engine keeps one partial state per *piece* of the data and keys it by
the piece's :class:`~pangeo_hpc.inputs.stamps.Stamp` (habit 16: one identity, as strong
as the state cache needs). For the era5-pds layout a piece is a month's file; for a store
it is a month of the time axis, and its stamp (``STORE/ARRAY#YYYY-MM``) holds, as a
SHA-256 ``fingerprint``, everything the month's values depend on:

* the array's metadata but its shape (dtype, chunk grid, codecs, fill value, attributes:
  an append grows the shape and must not change the months already there);
* the values of the other dimensions' coordinates (latitude, longitude) and of the
  month's time steps;
* each chunk the month's steps lie in (every chunk of those time rows):

  - a local Zarr store: the chunk file's size, mtime, ctime and inode (as git's index
    and :class:`Stamp` compare a file: a chunk rewritten in place has a new ctime);
  - a Zarr store on S3: the chunk object's size, ETag and version, from one listing;
  - an Icechunk repository: the snapshot that last wrote the chunk's manifest entry,
    found by walking the branch's ancestry and asking Icechunk which chunks each commit
    changed (``Repository.diff``; snapshots never change, so the walk of a snapshot is
    kept for the process), and the chunk's size.

A month appended (a new commit, or ``to_zarr(append_dim=...)``) leaves the others'
stamps as they were, so their states are reused; a past chunk rewritten changes the
stamp of the month(s) it holds steps of, and only theirs. A chunk that lies across two
months is in both stamps. The snapshot id read is recorded beside, in
``encoding["source_store"]`` and the result's provenance.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from typing import Any

import numpy as np
import xarray as xr

from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.s3.options import S3Options, is_s3, split_url

__all__ = ["month_pieces", "piece_stamps"]

#: snapshot id -> {(array path, chunk coordinates): snapshot that last wrote it}
_VERSIONS: dict[tuple[str, str], dict[tuple[str, tuple[int, ...]], str]] = {}


def month_pieces(times: np.ndarray) -> list[tuple[int, int]]:
    """The ``(first, stop)`` index span of each calendar month of ``times`` (in order).

    Parameters
    ----------
    times : np.ndarray
        Dates, sorted.

    Returns
    -------
    list[tuple[int, int]]
        ``(first, stop)`` each.

    Examples
    --------
    >>> month_pieces(np.array(["2000-01-31", "2000-02-01", "2000-02-02"], "M8[D]"))
    [(0, 1), (1, 3)]
    """
    labels = [str(t)[:7] for t in times]
    spans, at = [], 0
    for _, group in itertools.groupby(labels):
        n = len(list(group))
        spans.append((at, at + n))
        at += n
    return spans


def _chunk_versions(repo: Any, snapshot: str, url: str) -> dict[tuple[str, tuple[int, ...]], str]:
    """For each chunk of the repository at ``snapshot``: the snapshot that last wrote it.

    Walks the ancestry from ``snapshot`` back to the repository's first commit, asking
    Icechunk for the chunks each commit changed; the newest commit that changed a chunk
    is its version. Kept per ``(url, snapshot)`` for the process (a snapshot never
    changes).
    """
    key = (url, snapshot)
    if key in _VERSIONS:
        return _VERSIONS[key]
    infos = list(repo.ancestry(snapshot_id=snapshot))
    out: dict[tuple[str, tuple[int, ...]], str] = {}
    for child, parent in itertools.pairwise(infos):
        diff = repo.diff(from_snapshot_id=parent.id, to_snapshot_id=child.id)
        for path, coords in diff.updated_chunks.items():
            for c in coords:
                out.setdefault((path.lstrip("/"), tuple(int(i) for i in c)), child.id)
    _VERSIONS[key] = out
    return out


def _meta(store: Any, name: str) -> tuple[Any, str]:
    """The zarr array ``name`` of ``store`` and its metadata but the shape, as JSON."""
    import zarr

    arr = zarr.open_array(store, path=name, mode="r")
    doc = arr.metadata.to_dict()
    doc.pop("shape", None)
    if "attributes" not in doc or not doc["attributes"]:
        doc["attributes"] = dict(arr.attrs)
    return arr, json.dumps(doc, sort_keys=True, default=str)


def _rows(arr: Any, lo: int, a: int, b: int) -> list[tuple[int, ...]]:
    """The chunk coordinates of every chunk holding steps ``lo+a`` to ``lo+b-1``."""
    grid = arr.metadata.chunk_grid.chunk_shape
    counts = [-(-s // c) for s, c in zip(arr.shape, grid, strict=True)]
    rows = range((lo + a) // grid[0], (lo + b - 1) // grid[0] + 1)
    return [(r, *rest) for r in rows for rest in itertools.product(*map(range, counts[1:]))]


def _local_chunk(root: str, key: str) -> list[Any]:
    try:
        st = os.stat(os.path.join(root, key))
    except FileNotFoundError:
        return [key, None]  # never written: the fill value
    return [key, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _s3_listing(url: str, name: str, s3: S3Options) -> dict[str, list[Any]]:
    from pangeo_hpc.s3.listing import list_objects

    _, prefix = split_url(url)
    cut = len(f"{prefix}/{name}/" if prefix else f"{name}/")
    return {o.key[cut:]: [o.size, o.etag, o.version] for o in list_objects(f"{url}/{name}", s3)}


def _icechunk_sizes(store: Any, keys: list[str]) -> list[int]:
    import asyncio

    from zarr.core.sync import sync

    async def sizes() -> list[int]:
        async def one(k: str) -> int:
            return int(await store.getsize(k)) if await store.exists(k) else 0

        return list(await asyncio.gather(*(one(k) for k in keys)))

    return sync(sizes())


def piece_stamps(
    url: str,
    store: Any,
    names: dict[str, str],
    ds: xr.Dataset,
    t: str,
    lo: int,
    spans: list[tuple[int, int]],
    *,
    repo: Any = None,
    session: Any = None,
    s3: S3Options | None = None,
) -> tuple[dict[str, list[str]], dict[str, Stamp]]:
    """The stamp of each month (``spans`` of ``ds``'s time axis ``t``; ``lo``: the store's
    index of its first step) of each variable (recipe name -> array name ``names``).

    Parameters
    ----------
    url : str
        The store's URL or path.
    store : Any
        The open Zarr store.
    names : dict[str, str]
        Recipe name -> array name.
    ds : xr.Dataset
        The store's dataset.
    t : str
        Its time dimension.
    lo : int
        The store's index of the first step.
    spans : list[tuple[int, int]]
        What :func:`month_pieces` gave.
    repo : Any, optional
        The Icechunk repository, or ``None``.
    session : Any, optional
        The Icechunk session, or ``None``.
    s3 : S3Options | None, optional
        How to reach S3, or ``None``.

    Returns
    -------
    files : dict of str to list of str
        Per variable, the name of each month's piece, ``URL/ARRAY#YYYY-MM``.
    stamps : dict of str to Stamp
        Piece name -> its stamp (size: the month's chunks' stored bytes).

    Examples
    --------
    >>> names = {"air_temperature_at_2_metres": "2m_temperature"}
    >>> files, stamps = piece_stamps(url, store, names, ds, "time", lo, spans)  # doctest: +SKIP
    >>> files["air_temperature_at_2_metres"][0]  # 'URL/2m_temperature#2008-01'  # doctest: +SKIP
    """
    times = ds[t].values
    others = [d for d in ds.dims if d != t]
    grid = json.dumps(
        {
            d: hashlib.sha256(np.ascontiguousarray(ds[d].values).tobytes()).hexdigest()
            for d in sorted(others)
            if d in ds.coords
        },
        sort_keys=True,
    )
    versions = None if session is None else _chunk_versions(repo, session.snapshot_id, url)
    files: dict[str, list[str]] = {}
    stamps: dict[str, Stamp] = {}
    for var, name in names.items():
        arr, meta = _meta(store, name)
        listing = (
            _s3_listing(url, name, s3 or S3Options.resolve())
            if (versions is None and is_s3(url))
            else None
        )
        files[var] = []
        for a, b in spans:
            keys = [arr.metadata.encode_chunk_key(c) for c in _rows(arr, lo, a, b)]
            if versions is not None:
                sizes = _icechunk_sizes(store, [f"{name}/{k}" for k in keys])
                coords = _rows(arr, lo, a, b)
                chunks = [
                    [k, versions.get((name, c)), n]
                    for k, c, n in zip(keys, coords, sizes, strict=True)
                ]
                size = sum(sizes)
            elif listing is not None:
                chunks = [[k, *listing.get(k, [None])] for k in keys]
                size = sum(c[1] or 0 for c in chunks)
            else:
                chunks = [_local_chunk(os.path.join(url, name), k) for k in keys]
                size = sum(c[1] or 0 for c in chunks)
            steps = hashlib.sha256(np.asarray(times[a:b]).astype(str).tobytes()).hexdigest()
            doc = json.dumps([meta, grid, steps, chunks], separators=(",", ":"), default=str)
            piece = f"{url}/{name}#{str(times[a])[:7]}"
            files[var].append(piece)
            stamps[piece] = Stamp(
                piece, int(size), fingerprint=hashlib.sha256(doc.encode()).hexdigest()
            )
    return files, stamps
