"""What the machine can do with B1's files at best: the bounds the platform is a share of.

Two bounds, each run by ``N`` processes (one per core) started once, that take the files'
chunks from a shared queue (a file's chunks in ``parts`` runs, in file order) and read
them with ``os.preadv`` into a preallocated buffer:

* **decode only**: inflate (libdeflate, PyPI ``deflate``) and un-shuffle into a
  preallocated buffer with one compiled loop; no reduction, nothing per element in Python.
  Nothing that computes an answer from these files can be faster here: it is the bound;
* **decode + one fused pass**: the same, then one compiled pass over each decoded chunk
  while it is in cache that adds up both the area-weighted sums of every time step (the
  global-mean series) and the time-sum of every cell (the time-mean map);
* **decode + series pass** (``mode="series"``): that pass for the series alone, which is
  all B1's platform computes (it sums each chunk as it is decoded): the bound of B1's
  question once decoding is done, kept a bound by doing no more than the platform does.

The chunk index (offsets and sizes, from h5py's ``chunk_iter``) is read once, before any
timing: it is metadata that a catalog keeps, so neither bound pays for it. Not a test.

Imported as ``benchmarks.bounds`` (the spawned processes import it by that name). numba's
on-disk cache of the compiled loops names the module it was compiled in and is kept while
this file's size and time stay the same: a cache written under another name (``bounds``,
when benchmarks/ was on ``sys.path``) fails to load with ``No module named 'bounds'``;
delete ``benchmarks/__pycache__`` then.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

VAR = "sea_surface_temperature"


@dataclass(frozen=True)
class FileChunks:
    """One file's chunks (in file order) and the geometry of its variable."""

    path: str
    shape: tuple[int, int, int]
    chunks: tuple[int, int, int]
    offsets: np.ndarray  # (n, 3) chunk origin in elements
    byte_offsets: np.ndarray
    sizes: np.ndarray


def chunk_index(path: str, var: str = VAR) -> FileChunks:
    """The chunk index of ``var`` in ``path``; only zlib + shuffle float32 is accepted."""
    import h5py

    with h5py.File(path, "r") as f:
        d = f[var]
        if set(d._filters) != {"shuffle", "gzip"} or d.dtype != np.float32 or d.ndim != 3:
            raise ValueError(f"{path}: {d.dtype} {d.ndim}-D with {d._filters}: not B1's data")
        infos: list[Any] = []
        d.id.chunk_iter(infos.append)
        shape, chunks = d.shape, d.chunks
    if any(s.filter_mask for s in infos):
        raise ValueError(f"{path}: a chunk skipped a filter")
    infos.sort(key=lambda s: s.byte_offset)
    return FileChunks(
        path,
        shape,
        chunks,
        np.array([s.chunk_offset for s in infos], dtype=np.int64).reshape(-1, 3),
        np.array([s.byte_offset for s in infos], dtype=np.int64),
        np.array([s.size for s in infos], dtype=np.int64),
    )


# --------------------------------------------------------------------------- kernels


@numba.njit(nogil=True, cache=True)
def unshuffle4(src: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - jitted
    """Un-shuffle ``src`` (the 4 byte planes of ``out.size`` elements) into ``out`` (uint32)."""
    n = out.size
    for p in range(n):
        out[p] = (
            np.uint32(src[p])
            | (np.uint32(src[n + p]) << 8)
            | (np.uint32(src[2 * n + p]) << 16)
            | (np.uint32(src[3 * n + p]) << 24)
        )


@numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})
def unshuffle_reduce(
    src, buf, cshape, origin, shape, w, num, den, tsum, tcount
):  # pragma: no cover - jitted
    """Un-shuffle one chunk into ``buf``, then one pass over its valid part that adds the
    area-weighted sums per time step (``num``, ``den``) and the time sums per cell
    (``tsum``, ``tcount``); NaN (land) counts in neither. Branch-free, so that it
    vectorises (``reassoc``: sums in any order; NaN tests stay exact)."""
    unshuffle4(src, buf)
    x = buf.view(np.float32)
    ct = min(cshape[0], shape[0] - origin[0])
    cy = min(cshape[1], shape[1] - origin[1])
    cx = min(cshape[2], shape[2] - origin[2])
    y0, x0 = origin[1], origin[2]
    for t in range(ct):
        s = 0.0
        d = 0.0
        for j in range(cy):
            base = (t * cshape[1] + j) * cshape[2]
            wy = w[y0 + j, x0 : x0 + cx]
            sy = tsum[y0 + j, x0 : x0 + cx]
            ny = tcount[y0 + j, x0 : x0 + cx]
            for k in range(cx):
                v = x[base + k]
                ok = v == v
                vz = v if ok else np.float32(0)
                wk = wy[k] if ok else 0.0
                s += wk * vz
                d += wk
                sy[k] += vz
                ny[k] += ok
        num[origin[0] + t] += s
        den[origin[0] + t] += d


@numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})
def unshuffle_series(src, buf, cshape, origin, shape, w, num, den):  # pragma: no cover - jitted
    """:func:`unshuffle_reduce` for the area-weighted sums per time step alone."""
    unshuffle4(src, buf)
    x = buf.view(np.float32)
    ct = min(cshape[0], shape[0] - origin[0])
    cy = min(cshape[1], shape[1] - origin[1])
    cx = min(cshape[2], shape[2] - origin[2])
    y0, x0 = origin[1], origin[2]
    for t in range(ct):
        s = 0.0
        d = 0.0
        for j in range(cy):
            base = (t * cshape[1] + j) * cshape[2]
            wy = w[y0 + j, x0 : x0 + cx]
            for k in range(cx):
                v = x[base + k]
                ok = v == v
                vz = v if ok else np.float32(0)
                wk = wy[k] if ok else 0.0
                s += wk * vz
                d += wk
        num[origin[0] + t] += s
        den[origin[0] + t] += d


# --------------------------------------------------------------------------- worker


def _worker(
    files: list[FileChunks], weights: np.ndarray, mode: str, tasks: Any, conn: Any
) -> None:  # pragma: no cover - runs in a child process
    """One run per message on ``conn``: take chunk runs from ``tasks`` until ``None``,
    then send back what this process found."""
    from deflate import zlib_decompress

    while conn.recv():
        series: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        fused = mode == "fused"
        tsum = np.zeros(weights.shape) if fused else None
        tcount = np.zeros(weights.shape, np.int64) if fused else None
        decoded = 0
        for i, lo, hi in iter(tasks.get, None):
            fc = files[i]
            n = int(np.prod(fc.chunks))
            raw = bytearray(int(fc.sizes[lo:hi].max()))
            view = memoryview(raw)
            buf = np.empty(n, np.uint32)
            cshape, shape = np.array(fc.chunks, np.int64), np.array(fc.shape, np.int64)
            if i not in series:
                series[i] = (np.zeros(fc.shape[0]), np.zeros(fc.shape[0]))
            num, den = series[i]
            fd = os.open(fc.path, os.O_RDONLY)
            try:
                for c in range(lo, hi):
                    size = int(fc.sizes[c])
                    os.preadv(fd, [view[:size]], int(fc.byte_offsets[c]))
                    src = np.frombuffer(zlib_decompress(view[:size], 4 * n), np.uint8)
                    if fused:
                        unshuffle_reduce(
                            src, buf, cshape, fc.offsets[c], shape, weights, num, den, tsum, tcount
                        )
                    elif mode == "series":
                        unshuffle_series(src, buf, cshape, fc.offsets[c], shape, weights, num, den)
                    else:
                        unshuffle4(src, buf)
                    decoded += 4 * n
            finally:
                os.close(fd)
        conn.send((decoded, series, tsum, tcount))


class Bound:
    """``procs`` processes, started once, that decode B1's files (``mode="decode"``) or
    decode them and reduce them in one fused pass (``mode="fused"``: the series and the
    time-mean map; ``mode="series"``: the series alone).

    Calling it returns the global-mean series (fused, series) or the bytes decoded (decode);
    :attr:`time_mean` holds the last fused run's time-mean map.
    """

    def __init__(
        self,
        files: Sequence[str],
        weights: np.ndarray,
        procs: int,
        mode: str,
        parts: int = 4,
    ) -> None:
        if mode not in ("decode", "fused", "series"):
            raise ValueError(f"mode {mode!r}: decode, fused or series")
        self.mode, self.procs = mode, procs
        self.index = [chunk_index(f) for f in files]
        self.items = [
            (i, k * len(fc.sizes) // parts, (k + 1) * len(fc.sizes) // parts)
            for i, fc in enumerate(self.index)
            for k in range(parts)
        ]
        self.time_mean: np.ndarray | None = None
        ctx = multiprocessing.get_context("spawn")
        self.tasks = ctx.Queue()
        w = np.ascontiguousarray(weights, dtype="f8")
        self.conns, self.workers = [], []
        for _ in range(procs):
            here, there = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(self.index, w, mode, self.tasks, there))
            p.start()
            self.conns.append(here)
            self.workers.append(p)
        self()  # compile (numba's cache) and touch everything once

    def __call__(self) -> Any:
        # a process that took its None waits for the next run: each takes exactly one
        for c in self.conns:
            c.send(True)
        for item in self.items:
            self.tasks.put(item)
        for _ in self.conns:
            self.tasks.put(None)
        parts = [c.recv() for c in self.conns]
        decoded = sum(p[0] for p in parts)
        if self.mode == "decode":
            return decoded
        todo = range(len(self.index))
        zero = (0.0, 0.0)
        num = [sum(p[1].get(i, zero)[0] for p in parts) for i in todo]
        den = [sum(p[1].get(i, zero)[1] for p in parts) for i in todo]
        if self.mode == "fused":
            tsum = sum(p[2] for p in parts)
            tcount = sum(p[3] for p in parts)
            with np.errstate(invalid="ignore", divide="ignore"):
                self.time_mean = np.where(tcount > 0, tsum / np.maximum(tcount, 1), np.nan)
        return np.concatenate(num) / np.concatenate(den)

    def close(self) -> None:
        for c in self.conns:
            c.send(False)
        for p in self.workers:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
