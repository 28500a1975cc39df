"""Any Zarr store (v2 or v3) or Icechunk repository, local or on S3, as a recipe's dataset.

A :class:`StoreRef` says where the store is and, for a repository, which version
(``branch``, default ``main``, or ``snapshot``). :func:`open_any_store` opens the
recipe's variables (named as era5-pds names them, or as the store does:
:mod:`pangeo_hpc.io.store_names`), selects the months asked for, and cuts the time axis
into Dask chunks that hold whole store chunks and never cross a month where a store
chunk boundary lies there. Each month is one *piece* of the incremental engine (as one
file of the era5-pds layout is), identified by the store's own metadata
(:mod:`pangeo_hpc.io.store_chunks`): nothing but metadata is read to open it.

Local paths are opened with zarr's ``LocalStore``, ``s3://`` stores with its
``FsspecStore`` over s3fs, repositories with Icechunk (the ``stores`` extra), every one
with the options and credentials of :class:`~pangeo_hpc.s3.options.S3Options`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from pangeo_hpc import config
from pangeo_hpc.errors import DataNotFoundError, InputError
from pangeo_hpc.inputs.periods import months
from pangeo_hpc.io.s3_runs import run_location
from pangeo_hpc.io.store_chunks import month_pieces, piece_stamps
from pangeo_hpc.io.store_names import as_accumulation, store_name
from pangeo_hpc.io.store_ref import StoreRef
from pangeo_hpc.s3.options import S3Options, is_s3

__all__ = ["StoreRef", "open_any_store", "store_kind"]

_ZARR_MARKERS = ("zarr.json", ".zgroup", ".zmetadata")


def store_kind(location: str | Path, s3: S3Options | None = None) -> str | None:
    """``"zarr"``, ``"icechunk"`` or ``None`` (not a store: an era5-pds tree, or nothing).

    Parameters
    ----------
    location : str | Path
        A folder or an ``s3://`` URL.
    s3 : S3Options | None, optional
        How to reach S3 (default from ``pangeo-hpc.s3``).

    Returns
    -------
    str | None
        The kind, or ``None``.

    Examples
    --------
    >>> import os, tempfile, xarray as xr
    >>> tmp = tempfile.TemporaryDirectory()
    >>> store = os.path.join(tmp.name, "t2m.zarr")
    >>> xr.Dataset({"t2m": ("time", [1.0, 2.0])}).to_zarr(store, zarr_format=3, consolidated=False)
    <xarray.backends.zarr.ZarrStore object at 0x...>
    >>> store_kind(store), store_kind(tmp.name)  # a Zarr store; a plain folder
    ('zarr', None)
    >>> tmp.cleanup()
    """
    loc = str(location)
    if is_s3(loc):
        fs = (s3 or S3Options.resolve()).filesystem()
        try:
            names = {p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(loc.rstrip("/"), refresh=True)}
        except (FileNotFoundError, PermissionError):
            return None
    else:
        p = Path(loc).expanduser()
        names = {c.name for c in p.iterdir()} if p.is_dir() else set()
    if names & set(_ZARR_MARKERS):
        return "zarr"
    if {"refs", "snapshots"} <= names:
        return "icechunk"
    return None


def _repository(ref: StoreRef, s3: S3Options) -> Any:
    from pangeo_hpc.extras import require

    require("stores", "Icechunk repositories")
    import icechunk

    from pangeo_hpc.s3 import icechunk_access

    if is_s3(ref.url):
        storage = icechunk_access.storage(ref.url, s3)
    else:
        storage = icechunk.local_filesystem_storage(ref.url)
    repo = icechunk.Repository.open(storage)
    prefixes = list((repo.config.virtual_chunk_containers or {}).keys())
    if prefixes:  # virtual references: reach their objects with the same options
        repo = icechunk.Repository.open(
            storage, authorize_virtual_chunk_access=icechunk_access.credentials(prefixes, s3)
        )
    return repo


def _session(ref: StoreRef, s3: S3Options) -> tuple[Any, Any, dict[str, Any]]:
    """The repository, a read-only session of the version asked for, and what names it."""
    repo = _repository(ref, s3)
    try:
        if ref.snapshot is not None:
            session = repo.readonly_session(snapshot_id=ref.snapshot)
        else:
            session = repo.readonly_session(branch=ref.branch or "main")
    except Exception as exc:  # icechunk raises its own IcechunkError for a bad name
        branches = sorted(repo.list_branches())
        what = f"snapshot {ref.snapshot!r}" if ref.snapshot else f"branch {ref.branch or 'main'!r}"
        raise DataNotFoundError(
            f"{what} is not in the Icechunk repository {ref.location!r}: it has branches "
            f"{branches}; name one in dataset.branch, or a snapshot id of their history "
            "(Repository.ancestry) in dataset.snapshot",
            param="snapshot" if ref.snapshot else "branch",
        ) from exc
    branch = None if ref.snapshot is not None else (ref.branch or "main")
    ident = {"kind": "icechunk", "snapshot": session.snapshot_id, "branch": branch}
    return repo, session, ident


def _zarr_store(ref: StoreRef, s3: S3Options) -> Any:
    import zarr.storage

    if is_s3(ref.url):
        return zarr.storage.FsspecStore.from_url(
            ref.url, storage_options=s3.storage_options(), read_only=True
        )
    return zarr.storage.LocalStore(ref.url, read_only=True)


def open_any_store(
    ref: StoreRef | str,
    variables: list[str],
    start: str | None = None,
    end: str | None = None,
    *,
    s3: S3Options | None = None,
    time_chunk_mb: float | None = None,
) -> xr.Dataset:
    """The months ``start`` to ``end`` of ``variables`` in a Zarr store or Icechunk
    repository, lazily, as :func:`~pangeo_hpc.io.era5.open_era5` returns a tree's.

    Parameters
    ----------
    ref : StoreRef or str
        The store (a path or ``s3://`` URL given alone: a Zarr store, or a repository's
        branch ``main``). An ``s3://`` prefix that ``convert`` wrote is read as the run
        its ``summary.json`` makes visible (:func:`pangeo_hpc.io.s3_runs.run_location`).
    variables : list of str
        Era5-pds names or the store's own; the opened variables carry the names given.
    start, end : str, optional
        First and last month, ``YYYY-MM``; default all the store holds.
    s3 : S3Options, optional
        For ``s3://`` stores and virtual references; default :meth:`S3Options.resolve`.
    time_chunk_mb : float, optional
        Target size of a Dask chunk; default config ``pangeo-hpc.data.time-chunk-mb``.

    Returns
    -------
    Dataset
        Dask-backed. ``encoding``: ``source_pieces`` (one per month),
        ``source_files`` and ``source_stamps`` (one per month and variable, named
        ``STORE/ARRAY#YYYY-MM``, stamped from the chunks it covers), ``source_bytes``,
        ``source_access`` (``zarr``, ``zarr-s3``, ``icechunk``, ``icechunk-s3``),
        ``source_root`` and ``source_store`` (the store's identity: kind, and for a
        repository the snapshot id read and its branch).

    Raises
    ------
    DataNotFoundError
        No store there, a variable or a month it does not hold, an unknown branch.

    Examples
    --------
    >>> import dask, os, tempfile
    >>> from pangeo_hpc.batch.pipeline.convert import to_zarr
    >>> from pangeo_hpc.demo import DemoSpec
    >>> from pangeo_hpc.demo.writer import write_month
    >>> from pangeo_hpc.inputs.periods import months
    >>> tmp, spec = tempfile.TemporaryDirectory(), DemoSpec(resolution=10.0).resolved()
    >>> sst = "sea_surface_temperature"
    >>> root, store = os.path.join(tmp.name, "era5"), os.path.join(tmp.name, "sst.zarr")
    >>> for m in months("2000-01", "2000-02"):  # two months of demo files, 10 degree cells
    ...     _ = write_month(root, spec, sst, m)
    >>> with dask.config.set({"pangeo-hpc.catalog.cache": False}):  # no scan cache kept
    ...     report = to_zarr(root, store, sst)
    >>> ds = open_any_store(store, [sst], "2000-01", "2000-01")  # a local Zarr store
    >>> ds[sst].shape
    (31, 19, 36)
    >>> tmp.cleanup()
    """
    ref = StoreRef(ref) if isinstance(ref, str) else ref
    s3 = s3 or S3Options.resolve()
    if is_s3(ref.url):  # a prefix our writers made: its current run (s3_runs)
        ref = replace(ref, location=run_location(ref.url, s3, flag="store").url)
    kind = store_kind(ref.url, s3)
    if kind is None:
        raise DataNotFoundError(
            f"{ref.location!r} is not a Zarr store or Icechunk repository (no zarr.json, "
            ".zgroup, .zmetadata, nor refs/ and snapshots/ there): give the store's own "
            "folder or URL in dataset.store",
            param="store",
        )
    if kind == "zarr" and (ref.branch or ref.snapshot):
        raise InputError(
            f"{ref.location!r} is a Zarr store, not an Icechunk repository: drop branch:/snapshot:",
            param="branch",
        )
    session = repo = None
    ident: dict[str, Any] = {"kind": "zarr"}
    if kind == "icechunk":
        repo, session, ident = _session(ref, s3)
        store = session.store
    else:
        store = _zarr_store(ref, s3)
    with warnings.catch_warnings():  # a store without consolidated metadata is fine
        warnings.filterwarnings("ignore", "Failed to open Zarr store with consolidated")
        # HDF5's zlib and shuffle in a repository of virtual references: numcodecs's codecs
        warnings.filterwarnings("ignore", "Numcodecs codecs are not in the Zarr version 3")
        full = xr.open_zarr(store, consolidated=False if kind == "icechunk" else None, chunks=None)
    names = {v: store_name(v, list(full.data_vars), ref.location) for v in variables}
    full = full[list(dict.fromkeys(names.values()))]
    t = full[names[variables[0]]].dims[0]
    times = full[t].values
    first, last = str(times[0])[:7], str(times[-1])[:7]
    wanted = months(start or first, end or last)
    if str(wanted[0]) < first or str(wanted[-1]) > last:
        raise DataNotFoundError(
            f"the store {ref.location!r} holds {first}..{last}, not {wanted[0]}..{wanted[-1]}:"
            " choose a period inside it with start=/end=",
            param=("start", "end"),
        )
    keep = (times >= np.datetime64(f"{wanted[0]}-01")) & (
        times < np.datetime64(f"{wanted[-1].next()}-01")
    )
    lo = int(np.argmax(keep))
    ds = full.isel({t: slice(lo, lo + int(keep.sum()))})
    chunk_mb = float(config.get("data.time-chunk-mb", time_chunk_mb))
    if chunk_mb <= 0:
        raise InputError(f"time_chunk_mb={chunk_mb} must be positive, e.g. 128")
    spans = month_pieces(ds[t].values)
    arrays = {v: full[n] for v, n in names.items()}
    sizes = _time_chunks(spans, arrays[variables[0]], lo, chunk_mb)
    files, stamps = piece_stamps(
        ref.url,
        store,
        {v: names[v] for v in variables},
        ds,
        t,
        lo,
        spans,
        repo=repo,
        session=session,
        s3=s3,
    )
    # Dask keys from the months' identities: a rewritten chunk is another task, never
    # one whose result a scheduler still holds from before (as open_store's names)
    token = hashlib.sha256(
        json.dumps([ref.url, ident, [s.fields for s in stamps.values()]]).encode()
    ).hexdigest()[:32]
    ds = ds.chunk({t: sizes, **_other_chunks(arrays[variables[0]], t)}, token=token)
    ds = ds.rename({n: v for v, n in names.items() if n != v})
    for v, n in names.items():  # ARCO-ERA5's accumulations: era5-pds's bounds and attributes
        ds = as_accumulation(ds, v, n, t)
    access = f"{kind}-s3" if is_s3(ref.url) else kind
    ds.encoding["source_pieces"] = [
        (a, b, [files[v][i] for v in variables]) for i, (a, b) in enumerate(spans)
    ]
    ds.encoding["source_files"] = [f for v in variables for f in files[v]]
    ds.encoding["source_stamps"] = stamps
    ds.encoding["source_bytes"] = int(sum(s.size for s in stamps.values()))
    ds.encoding["source_access"] = access
    ds.encoding["source_root"] = ref.url
    ds.encoding["source_store"] = {"url": ref.url, **ident}
    return ds


def _other_chunks(var: xr.DataArray, t: str) -> dict[str, int]:
    """The store's own chunks along every dimension but time."""
    chunks = var.encoding.get("chunks") or var.shape
    return {d: int(c) for d, c in zip(var.dims, chunks, strict=True) if d != t}


def _time_chunks(
    spans: list[tuple[int, int]], var: xr.DataArray, offset: int, chunk_mb: float
) -> tuple[int, ...]:
    """Dask chunk lengths along time: whole store chunks, about ``chunk_mb`` each, cut at
    each month's first step where a store chunk starts there (``offset``: the index in the
    store of the first step opened)."""
    ct = int((var.encoding.get("chunks") or var.shape)[0])
    step = int(np.prod(var.shape[1:])) * var.dtype.itemsize
    per = max(1, int(chunk_mb * 1e6 // max(1, step * ct))) * ct
    cuts = {0, spans[-1][1]}
    for a, b in spans:
        if (a + offset) % ct == 0:
            cuts.add(a)
        start = a if (a + offset) % ct == 0 else a + (ct - (a + offset) % ct)
        cuts.update(range(start, b, per))
    edges = sorted(c for c in cuts if 0 <= c <= spans[-1][1])
    return tuple(int(b - a) for a, b in itertools.pairwise(edges))
