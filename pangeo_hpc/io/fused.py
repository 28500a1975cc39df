"""Area-weighted sums computed while the chunks are decoded: no block is ever assembled.

Reading a block and then reducing it writes every decoded value into a block of the task's
size (8 MB for a month of 1-degree days, 100 MB for 24 days at 0.25 degree) and reads it
back: a first touch of fresh memory per task, and a second pass over memory that no longer
fits in cache. Here each stored chunk is inflated (libdeflate) and, one row of the chunk
at a time, un-shuffled into a buffer of one row that stays in L1 and added up at once:
the per-step sums ``Σ w x`` and ``Σ w`` over the valid (not NaN) values, in float64, as
:func:`pangeo_hpc.recipes.kernels.weighted_nanmean` does; only the order of the sums
differs (chunk by chunk instead of row by row over the whole field), a few float64 ulps.

The chunks are decoded whole, padding included, as any reader of these files must: this
path does the work of the decode-only bound of ``benchmarks/bounds.py`` plus the sums. As
the bound does, a local file's chunks are read one at a time into one reused buffer just
before they are inflated (:class:`~pangeo_hpc.io.byte_reads.ChunkStream`), not all at once
into fresh memory.
It takes float32 chunks stored shuffled and/or deflated (what ERA5 and the demo data are);
anything else, a chunk never written, or a source that reads through h5py, is read as a
block and summed by the same kernel as the unfused path.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from pangeo_hpc.io.chunk_decoding import ChunkDecoder, CorruptChunkError, inflate, overlap
from pangeo_hpc.io.fused_sums import group_sums_of
from pangeo_hpc.io.reader import Decoding, Fetched, H5Source, MultiFileArray, _assemble
from pangeo_hpc.jit import njit
from pangeo_hpc.recipes.kernels import weighted_sums

__all__ = ["SummingArray"]


@njit
def _cf_decode(x, lo, hi, fills, scale, offset):  # pragma: no cover - jitted
    """``x[lo:hi]`` (float32) CF-decoded in place as :class:`~pangeo_hpc.io.reader.Decoding`
    does: ``fills`` become NaN, then ``* scale`` and ``+ offset``, each rounded to float32
    (no fused multiply-add: not under the sums' ``fastmath``)."""
    for k in range(lo, hi):
        v = x[k]
        for f in range(fills.size):
            if np.float64(v) == fills[f]:
                v = np.float32(np.nan)
        v = v * scale
        x[k] = v + offset


@njit(fastmath={"reassoc", "contract"})
def _chunk_sums(
    src, shuffled, cshape, lo, hi, gy, gx, t_out, w, fills, scale, offset, out, row
):  # pragma: no cover - jitted
    """Add one chunk's part ``lo:hi`` (per axis, in the chunk) to ``out`` (rows from
    ``t_out``: ``Σ w x``, ``Σ w``); its first cell is at ``(gy, gx)`` of the field.

    Each row of the chunk is un-shuffled into ``row`` (uint32, one chunk row), CF-decoded
    there if need be (:func:`_cf_decode`, compiled without ``fastmath``), and added up
    branch-free; ``reassoc`` and ``contract`` let the sums vectorise (in an order fixed by
    the compiled code); NaN tests stay exact.
    """
    n = cshape[0] * cshape[1] * cshape[2]
    decode = fills.size > 0 or scale != np.float32(1) or offset != np.float32(0)
    t0, t1, y0, y1, x0 = lo[0], hi[0], lo[1], hi[1], lo[2]
    m = hi[2] - x0
    r = row[:m]
    x = r.view(np.float32)
    for t in range(t0, t1):
        s = 0.0
        d = 0.0
        for j in range(y0, y1):
            at = (t * cshape[1] + j) * cshape[2] + x0
            if shuffled:  # byte b of element p at b * n + p
                b0, b1 = src[at : at + m], src[n + at : n + at + m]
                b2, b3 = src[2 * n + at : 2 * n + at + m], src[3 * n + at : 3 * n + at + m]
                for k in range(m):
                    r[k] = (
                        np.uint32(b0[k])
                        | (np.uint32(b1[k]) << 8)
                        | (np.uint32(b2[k]) << 16)
                        | (np.uint32(b3[k]) << 24)
                    )
            else:  # at 4 p + b
                e = src[4 * at : 4 * (at + m)]
                for k in range(m):
                    r[k] = (
                        np.uint32(e[4 * k])
                        | (np.uint32(e[4 * k + 1]) << 8)
                        | (np.uint32(e[4 * k + 2]) << 16)
                        | (np.uint32(e[4 * k + 3]) << 24)
                    )
            if decode:
                _cf_decode(x, 0, m, fills, scale, offset)
            wy = w[gy + j - y0, gx : gx + m]
            for k in range(m):
                v = np.float64(x[k])
                ok = v == v
                s += wy[k] * v if ok else 0.0
                d += wy[k] if ok else 0.0
        out[t_out + t - t0, 0] += s
        out[t_out + t - t0, 1] += d


def fusable(fetched: Fetched, decoding: Decoding, dtype: np.dtype) -> bool:
    """Whether :func:`_weighted_sums_of` decodes these chunks itself: float32 stored and
    read, shuffled and/or deflated, three axes, every chunk present, a little-endian host.

    Parameters
    ----------
    fetched : Fetched
        The chunks of a block, as :meth:`~pangeo_hpc.io.reader.H5Source.fetch` gives them.
    decoding : Decoding
        The variable's CF decoding (packed or filled data are not fused).
    dtype : numpy.dtype
        The dtype the values are read as.

    Returns
    -------
    bool
        True when the fused path takes them; else the general block path reads them.

    Examples
    --------
    >>> import os, tempfile, numpy as np, pandas as pd, xarray as xr
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "t2m.nc")
    >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
    >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
    ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
    >>> enc = {"t2m": {"chunksizes": (1, 2, 4), "zlib": True}}
    >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
    >>> from pangeo_hpc.io.reader import Decoding, H5Source
    >>> fetched = H5Source(path, "t2m").fetch((slice(0, 2), slice(None), slice(None)))
    >>> fusable(fetched, Decoding(), np.dtype("f4")), fusable(fetched, Decoding(), np.dtype("f8"))
    (True, False)
    >>> tmp.cleanup()
    """
    table = fetched.table
    decoder = ChunkDecoder(table.codecs, table.chunks, table.dtype)
    return (
        decoder.fast
        and table.dtype == np.dtype("<f4")
        and dtype == np.dtype("f4")
        and len(table.chunks) == 3
        and sys.byteorder == "little"
        and fetched.complete()
    )


def _sum_chunks(fetched: Fetched, decoding: Decoding, w: np.ndarray, out: np.ndarray) -> None:
    table, box = fetched.table, fetched.box
    decoder = ChunkDecoder(table.codecs, table.chunks, table.dtype)
    shuffled = any(c["id"] == "shuffle" for c in table.codecs)
    deflated = table.codecs[0]["id"] == "zlib"
    cshape = np.array(table.chunks, np.int64)
    row = np.empty(table.chunks[2], np.uint32)
    fills = np.array(decoding.fill_values, np.float64)
    scale = np.float32(decoding.scale_factor if decoding.scale_factor is not None else 1)
    offset = np.float32(decoding.add_offset if decoding.add_offset is not None else 0)
    for (idx, _, _), payload in zip(fetched.plan, fetched.payloads, strict=True):
        src, dst = overlap(box, idx, table.chunks)
        raw = inflate(payload, decoder.nbytes) if deflated else payload
        if memoryview(raw).nbytes < decoder.nbytes:
            raise CorruptChunkError(f"decodes to {memoryview(raw).nbytes} bytes")
        data = np.frombuffer(raw, np.uint8, count=decoder.nbytes)
        lo = np.array([s.start for s in src], np.int64)
        hi = np.array([s.stop for s in src], np.int64)
        _chunk_sums(
            data, shuffled, cshape, lo, hi,
            box[1][0] + dst[1].start, box[2][0] + dst[2].start, dst[0].start,
            w, fills, scale, offset, out, row,
        )  # fmt: skip


def _weighted_sums_of(array: MultiFileArray, start: int, stop: int, w: np.ndarray) -> np.ndarray:
    """``(stop - start, 2)`` float64: per time step ``start:stop`` of ``array`` (time and a
    2-D field), ``Σ w x`` and ``Σ w`` over the valid values, ``w`` on the field's grid.

    Each file's chunks are read and summed chunk by chunk where :func:`fusable`; others
    are read as a block and summed by :func:`~pangeo_hpc.recipes.kernels.weighted_sums`.
    """
    w = np.ascontiguousarray(w, dtype="f8")
    out = np.zeros((stop - start, 2))
    for i, a, b, at in array.spans(start, stop):
        key = (slice(a, b), slice(None), slice(None))
        source = array.sources[i]
        fetched: Any
        if isinstance(source, H5Source):  # each chunk read just before it is decoded
            fetched = source.fetch(key, stream=True)
        elif hasattr(source, "fetch"):
            fetched = source.fetch(key)
        else:
            fetched = source.read(key)
        decoding = array.decodings[i]
        part = out[at : at + b - a]
        if isinstance(fetched, Fetched) and fusable(fetched, decoding, array.dtype):
            try:
                _sum_chunks(fetched, decoding, w, part)
                continue
            except CorruptChunkError:  # the assembling below names the chunk
                part[...] = 0.0
        if isinstance(fetched, Fetched):
            fetched = _assemble(*fetched, str(getattr(source, "path", getattr(source, "url", ""))))
        block = decoding.apply(fetched, array.dtype)
        part += weighted_sums(block.reshape(b - a, -1), w.ravel())
    return out


class SummingArray(MultiFileArray):
    """A :class:`~pangeo_hpc.io.reader.MultiFileArray` that also sums time steps of its
    field as it decodes them (the protocol
    :class:`pangeo_hpc.recipes.fusion.WeightedSums`), for
    :func:`pangeo_hpc.recipes.kernels.weighted_nanmean_blocks`.

    Parameters
    ----------
    sources : Sequence[Source]
        What reads each file.
    lengths : Sequence[int]
        The number of time steps in each file.
    field_shape : tuple[int, ...]
        The shape of one time step.
    dtype : np.dtype
        The dtype of the decoded values.
    decoding : Decoding | Sequence[Decoding]
        One decoding for all files, or one per file.

    Examples
    --------
    >>> import os, tempfile, numpy as np, pandas as pd, xarray as xr
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "t2m.nc")
    >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
    >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
    ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
    >>> enc = {"t2m": {"chunksizes": (1, 2, 4), "zlib": True}}
    >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
    >>> from pangeo_hpc.io.reader import Decoding, H5Source
    >>> array = SummingArray([H5Source(path, "t2m")], [3], (2, 4), np.dtype("f4"), Decoding())
    >>> array.weighted_sums(0, 2, np.ones((2, 4)))  # Σ w x and Σ w of steps 0 and 1
    array([[28.,  8.],
           [92.,  8.]])
    >>> tmp.cleanup()
    """

    __slots__ = ()

    def weighted_sums(self, start: int, stop: int, w: np.ndarray) -> np.ndarray:
        """Per time step ``start:stop``: ``Σ w x`` and ``Σ w`` over the valid values of a
        2-D field, ``(stop - start, 2)`` float64 (:func:`_weighted_sums_of`).

        Parameters
        ----------
        start : int
            First time step.
        stop : int
            Time step after the last.
        w : np.ndarray
            Weights on the field's grid.

        Returns
        -------
        ``(stop - start, 2)`` float64
            ``Σ w x`` and ``Σ w``.

        Examples
        --------
        >>> import os, tempfile, numpy as np, pandas as pd, xarray as xr
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "t2m.nc")
        >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
        >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
        ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
        >>> enc = {"t2m": {"chunksizes": (1, 2, 4), "zlib": True}}
        >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
        >>> from pangeo_hpc.io.reader import Decoding, H5Source
        >>> array = SummingArray([H5Source(path, "t2m")], [3], (2, 4), np.dtype("f4"), Decoding())
        >>> array.weighted_sums(1, 3, np.full((2, 4), 0.5))
        array([[46.,  4.],
               [78.,  4.]])
        >>> tmp.cleanup()
        """
        return _weighted_sums_of(self, start, stop, w)

    def group_sums(
        self, start: int, stop: int, codes: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Float64 sums and int32 counts of the valid values of rows ``start:stop`` per
        group (``codes``, -1: none), ``(k, *field)`` each, summed as the chunks are decoded
        (:func:`~pangeo_hpc.io.fused_sums.group_sums_of`; the protocol
        :class:`pangeo_hpc.recipes.fused_states.GroupSums`).

        Parameters
        ----------
        start : int
            First time step.
        stop : int
            Time step after the last.
        codes : np.ndarray
            The group of each step.
        k : int
            The number of groups.

        Returns
        -------
        tuple[np.ndarray, np.ndarray]
            Sums and counts.

        Examples
        --------
        >>> import os, tempfile, numpy as np, pandas as pd, xarray as xr
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "t2m.nc")
        >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
        >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
        ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
        >>> enc = {"t2m": {"chunksizes": (1, 2, 4), "zlib": True}}
        >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
        >>> from pangeo_hpc.io.reader import Decoding, H5Source
        >>> array = SummingArray([H5Source(path, "t2m")], [3], (2, 4), np.dtype("f4"), Decoding())
        >>> sums, counts = array.group_sums(0, 3, np.array([0, -1, 0]), 1)  # steps 0 and 2
        >>> sums[0, 0], counts[0, 0]
        (array([16., 18., 20., 22.]), array([2, 2, 2, 2], dtype=int32))
        >>> tmp.cleanup()
        """
        return group_sums_of(self, start, stop, codes, k)
