"""Byte-range reference indexes of NetCDF4/HDF5 objects (kerchunk), cached by ETag and size.

Reading NetCDF4 from S3 through HDF5 costs many small, serial requests. An index made once
with kerchunk's ``SingleHdf5ToZarr`` records where every compressed chunk lies in the
object; readers then fetch the chunks a task needs as a few coalesced byte ranges, in
parallel and without HDF5 (:class:`pangeo_hpc.io.reader.RefSource`).

One index per object is kept in the cache folder (``pangeo-hpc.s3.index-cache``), named
from the object's URL and holding its ETag and size: a changed object has a stale index,
which is ignored and rebuilt. Each file is a plain kerchunk reference set, so other tools
can open it too: ``xr.open_dataset(path, engine="kerchunk")``; its first member is the
SHA-256 of the rest (:func:`~pangeo_hpc.write.sealed.seal_json`), checked before it is
parsed: a damaged index (a flipped digit of a byte offset would read the wrong bytes) is
ignored like a missing one, and rebuilt by the next ``index``.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pangeo_hpc import config
from pangeo_hpc.extras import require
from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.s3.options import S3Options
from pangeo_hpc.write.sealed import seal_json, sealed_json, unseal_json

#: chunks smaller than this many bytes (coordinates) are stored inside the index
INLINE_BYTES = 1000
_FORMAT = "pangeo-hpc-references-2"  # 2: sealed


@dataclass
class IndexReport:
    """What :func:`build_index` built, found up to date, and could not index."""

    built: int = 0
    reused: int = 0
    seconds: float = 0.0
    cache: str = ""
    failed: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> str:
        line = (
            f"index: {self.built} built, {self.reused} up to date, in {self.seconds:.1f} s; "
            f"cache {self.cache}"
        )
        if self.failed:
            line += f"; {len(self.failed)} failed:\n" + "\n".join(
                f"  {u}: {e}" for u, e in self.failed
            )
        return line


def cache_root() -> Path:
    """The index cache folder (config ``pangeo-hpc.s3.index-cache``)."""
    return Path(os.path.expandvars(str(config.get("s3.index-cache")))).expanduser()


def cache_file(url: str) -> Path:
    """Where the index of ``url`` is kept."""
    digest = hashlib.sha256(url.encode()).hexdigest()[:32]
    return cache_root() / digest[:2] / f"{digest}.json"


def load_refs(stamp: Stamp) -> dict[str, Any] | None:
    """The cached references of ``stamp``, or ``None`` if absent or made for another version
    of the object (another :attr:`~pangeo_hpc.inputs.stamps.Stamp.identity`: size, ETag,
    version)."""
    path = cache_file(stamp.path)
    try:
        doc = unseal_json(path.read_bytes())
    except (OSError, ValueError):  # missing, unreadable, damaged (Damaged), unsealed
        return None
    meta = doc.get(_FORMAT, {})
    if not isinstance(meta, dict) or meta.get("url") != stamp.path:
        return None
    if meta.get("stamp") != stamp.identity:  # an index of an earlier version has none
        return None
    return doc


def claim_cache() -> Path:
    """The index cache folder, created (user-only) or checked to be this package's: a
    folder configured there that holds a user's files is refused, never written into."""
    from pangeo_hpc.write.outputs import claim_tree

    def earlier(root: Path) -> bool:  # a cache of an earlier version: two-hex-digit folders
        return all(re.fullmatch(r"[0-9a-f]{2}", p.name) and p.is_dir() for p in root.iterdir())

    return claim_tree(
        cache_root(), kind="cache", flag="pangeo-hpc.s3.index-cache",
        ours=earlier, mode=0o700,
    )  # fmt: skip


def _is_refs(path: Path) -> bool:
    """An index of ours: sealed (even if damaged), or of an earlier format."""
    try:
        data = path.read_bytes()
        if sealed_json(data):
            return True
        doc = json.loads(data)
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and any(str(k).startswith(_FORMAT[:-1]) for k in doc)


def save_refs(stamp: Stamp, refs: dict[str, Any]) -> Path:
    """Write the references of ``stamp`` into the cache (temporary name, then rename)."""
    from pangeo_hpc.write.outputs import atomic_file

    path = cache_file(stamp.path)
    doc = {**refs, _FORMAT: {"url": stamp.path, "stamp": stamp.identity}}
    with atomic_file(path, flag="pangeo-hpc.s3.index-cache", mode=0o600, ours=_is_refs) as tmp:
        tmp.write_bytes(seal_json(doc))
    return path


def scan_refs(url: str, opts: S3Options) -> dict[str, Any]:
    """Index one NetCDF4/HDF5 object with kerchunk (reads only its metadata).

    Parameters
    ----------
    url : str
        ``s3://bucket/key``.
    opts : S3Options
        How to reach the store.

    Returns
    -------
    dict
        kerchunk references (version 1).
    """
    require("s3", "indexing S3 objects")
    from kerchunk.hdf import SingleHdf5ToZarr

    fs = opts.filesystem()
    with _no_collection(), fs.open(url, "rb", cache_type="first", block_size=4 << 20) as f:
        return SingleHdf5ToZarr(f, url, inline_threshold=INLINE_BYTES, error="raise").translate()


_gc_lock = threading.Lock()
#: translations running, and whether the collector was on when the first started
_gc_state = {"users": 0, "was_enabled": True}


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """Python's cyclic garbage collector off while any thread translates a file.

    kerchunk's translator holds h5py's global lock while it writes each array's metadata
    through zarr, whose writes run on zarr's event-loop thread. A collection that starts on
    that thread and finalizes an h5py object needs the same lock: neither thread moves
    again (h5py/h5py#2019; kerchunk under zarr 3, fsspec/kerchunk#588). It hung an index
    build here. The collector is off from the first translation that starts to the last
    that ends (a count, as threads overlap); back on, it runs when its thresholds say, as
    the allocations meanwhile were counted (a forced collection took 0.08 s, under the
    lock, at every file of a one-thread build).
    """
    with _gc_lock:
        if _gc_state["users"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
            gc.disable()
        _gc_state["users"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["users"] -= 1
            if _gc_state["users"] == 0 and _gc_state["was_enabled"]:
                gc.enable()


def build_index(
    stamps: Sequence[Stamp],
    opts: S3Options,
    *,
    rebuild: bool = False,
    client: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> IndexReport:
    """Index every object in ``stamps`` whose cached index is missing or stale.

    Parameters
    ----------
    stamps : sequence of Stamp
        The objects, with size and ETag from a listing.
    opts : S3Options
        How to reach the store.
    rebuild : bool
        Index all, even those with an up-to-date index.
    client : distributed.Client, optional
        Scan on this cluster's workers (each returns its references to this process, which
        writes the cache). Default: a few threads here.
    progress : callable, optional
        Called with ``(done, total)`` as objects finish.

    Returns
    -------
    IndexReport
    """
    t0 = time.perf_counter()
    todo = [s for s in stamps if rebuild or load_refs(s) is None]
    if todo:
        claim_cache()
    report = IndexReport(reused=len(stamps) - len(todo), cache=str(cache_root()))
    for i, (stamp, result) in enumerate(_scan_all(todo, opts, client), 1):
        if isinstance(result, BaseException):
            report.failed.append((stamp.path, f"{type(result).__name__}: {result}"))
        else:
            save_refs(stamp, result)
            report.built += 1
        if progress is not None:
            progress(i, len(todo))
    report.seconds = time.perf_counter() - t0
    return report


def _scan_or_error(url: str, opts: S3Options) -> dict[str, Any] | BaseException:
    try:
        return scan_refs(url, opts)
    except Exception as exc:  # reported per object; the others go on
        return exc


def _scan_all(todo: Sequence[Stamp], opts: S3Options, client: Any) -> Iterable[tuple[Stamp, Any]]:
    if not todo:
        return
    if client is not None:
        from distributed import as_completed

        futures = client.map(_scan_or_error, [s.path for s in todo], opts=opts, pure=False)
        which = {f.key: s for f, s in zip(futures, todo, strict=True)}
        for future, result in as_completed(futures, with_results=True):
            yield which[future.key], result
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(8, len(todo))) as pool:
        yield from zip(todo, pool.map(lambda s: _scan_or_error(s.path, opts), todo), strict=True)


@dataclass(frozen=True)
class ChunkTable:
    """Where each compressed chunk of one variable lies in one object, and how to decode it.

    Built from kerchunk references by :meth:`from_refs`; small enough to travel inside a Dask
    graph (two integer arrays over the chunk grid).

    Attributes
    ----------
    shape, chunks : tuple of int
        The array's and one chunk's shape.
    dtype : numpy.dtype
        Stored dtype.
    fill_value : scalar
        Value of chunks that were never written.
    codecs : tuple of dict
        numcodecs configurations, in the order they are undone (decompressor first).
    offsets, lengths : numpy.ndarray
        Per chunk of the chunk grid: byte offset and length in the object; -1 if the chunk
        is absent or stored inline.
    inline : dict
        Chunk grid index -> bytes, for chunks kept in the index itself.
    """

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype
    fill_value: Any
    codecs: tuple[dict[str, Any], ...]
    offsets: np.ndarray
    lengths: np.ndarray
    inline: dict[tuple[int, ...], bytes]

    @classmethod
    def from_refs(cls, refs: dict[str, Any], variable: str) -> ChunkTable:
        """The table of ``variable`` in a kerchunk reference set (version 1)."""
        r = refs.get("refs", refs)
        zarray = r.get(f"{variable}/.zarray")
        if zarray is None:
            names = sorted(k.split("/")[0] for k in r if k.endswith("/.zarray"))
            raise KeyError(f"variable {variable!r} is not in the index; it has {names}")
        meta = json.loads(zarray) if isinstance(zarray, str) else zarray
        shape, chunks = tuple(meta["shape"]), tuple(meta["chunks"])
        sep = meta.get("dimension_separator", ".")
        grid = tuple(-(-n // c) for n, c in zip(shape, chunks, strict=True)) if shape else ()
        offsets = np.full(grid, -1, dtype=np.int64)
        lengths = np.full(grid, -1, dtype=np.int64)
        inline: dict[tuple[int, ...], bytes] = {}
        prefix = f"{variable}/"
        for key, value in r.items():
            if not key.startswith(prefix) or key.rsplit("/", 1)[-1].startswith("."):
                continue
            idx = tuple(int(i) for i in key[len(prefix) :].split(sep)) if shape else ()
            if isinstance(value, list):
                if len(value) == 3:
                    offsets[idx], lengths[idx] = value[1], value[2]
                else:  # a whole object as one chunk: not produced for HDF5 chunks
                    raise ValueError(f"{key}: reference {value!r} has no byte range")
            else:
                inline[idx] = _inline_bytes(value)
        codecs = [*(meta.get("filters") or [])]
        if meta.get("compressor"):
            codecs.append(meta["compressor"])
        fill = meta.get("fill_value")
        dtype = np.dtype(meta["dtype"])
        if isinstance(fill, str):
            fill = float(fill)
        return cls(
            shape=shape,
            chunks=chunks,
            dtype=dtype,
            fill_value=dtype.type(0) if fill is None else dtype.type(fill),
            codecs=tuple(reversed(codecs)),
            offsets=offsets,
            lengths=lengths,
            inline=inline,
        )

    def plan(self, box: Sequence[tuple[int, int]]) -> list[tuple[tuple[int, ...], int, int]]:
        """The chunks that overlap ``box`` (per axis ``(lo, hi)``): grid index, offset, length."""
        from pangeo_hpc.io.chunk_decoding import chunks_in

        return [
            (idx, int(self.offsets[idx]), int(self.lengths[idx]))
            for idx in chunks_in(box, self.chunks)
        ]

    @classmethod
    def from_h5(cls, dset: Any) -> ChunkTable | None:
        """The table of an open h5py dataset, from HDF5's chunk index (``chunk_iter``).

        ``None`` when the dataset is not chunked or uses a filter other than shuffle and
        deflate (read it with h5py then), or when a chunk skipped a filter.
        """
        import h5py

        plist = dset.id.get_create_plist()
        if plist.get_layout() != h5py.h5d.CHUNKED or dset.ndim == 0:
            return None
        codecs: list[dict[str, Any]] = []
        for i in range(plist.get_nfilters()):
            code, _, values, _ = plist.get_filter(i)
            if code == h5py.h5z.FILTER_SHUFFLE:
                codecs.append({"id": "shuffle", "elementsize": dset.dtype.itemsize})
            elif code == h5py.h5z.FILTER_DEFLATE:
                codecs.append({"id": "zlib", "level": int(values[0]) if values else 1})
            else:
                return None
        chunks = tuple(dset.chunks)
        grid = tuple(-(-n // c) for n, c in zip(dset.shape, chunks, strict=True))
        offsets = np.full(grid, -1, dtype=np.int64)
        lengths = np.full(grid, -1, dtype=np.int64)
        masked: list[int] = []

        def visit(info: Any) -> None:
            idx = tuple(o // c for o, c in zip(info.chunk_offset, chunks, strict=True))
            offsets[idx], lengths[idx] = info.byte_offset, info.size
            if info.filter_mask:
                masked.append(info.filter_mask)

        dset.id.chunk_iter(visit)
        if masked:
            return None
        fill = dset.fillvalue
        return cls(
            shape=tuple(dset.shape),
            chunks=chunks,
            dtype=dset.dtype,
            fill_value=dset.dtype.type(0) if fill is None else dset.dtype.type(fill),
            codecs=tuple(reversed(codecs)),
            offsets=offsets,
            lengths=lengths,
            inline={},
        )

    def assemble(
        self,
        box: Sequence[tuple[int, int]],
        plan: Sequence[tuple[tuple[int, ...], int, int]],
        payloads: Sequence[Any],
    ) -> np.ndarray:
        """Decode the chunks of ``plan`` (``payloads[i]`` is chunk i's bytes, or ``None``
        when absent) into the array of ``box``.

        Raises
        ------
        CorruptChunkError
            Naming the chunk that does not decode: its grid index, first element, byte
            offset and size (``chunk (1, 0, 1) at [24, 0, 100] (byte 702662, 90658 bytes)``).
        """
        from pangeo_hpc.io.chunk_decoding import ChunkDecoder, CorruptChunkError, overlap

        decoder = ChunkDecoder(self.codecs, self.chunks, self.dtype)
        out = np.empty([hi - lo for lo, hi in box], dtype=self.dtype)
        for (idx, offset, size), payload in zip(plan, payloads, strict=True):
            src, dst = overlap(box, idx, self.chunks)
            if payload is None:
                out[dst] = self.fill_value
                continue
            try:
                decoder.decode_into(payload, src, out[dst])
            except CorruptChunkError as exc:
                first = [i * c for i, c in zip(idx, self.chunks, strict=True)]
                where = f"byte {offset}, {size} bytes" if offset >= 0 else "inline"
                chunk = f"chunk {tuple(idx)} at {first} ({where})"
                raise CorruptChunkError(exc.reason, chunk) from exc
        return out


def _inline_bytes(value: str | bytes) -> bytes:
    if isinstance(value, bytes):
        return value
    if value.startswith("base64:"):
        return base64.b64decode(value[len("base64:") :])
    return value.encode()
