"""Sums and counts per group of time steps, computed while the chunks are decoded.

A time mean or a climatology reads a block (a month of days, a year of a model's output)
and adds its rows into float64 sums and int32 counts per group
(:func:`pangeo_hpc.recipes.kernels.group_sums`). Reading the block first writes every
decoded value into memory the size of the block (95 MB for a year of 1-degree days) and
reads it back. Here each stored chunk is decoded on its own (:class:`~pangeo_hpc.io.
chunk_decoding.ChunkDecoder`, then the variable's CF decoding) and its rows are added at
once, while the chunk is in cache.

The bits are those of :func:`~pangeo_hpc.recipes.kernels.group_sums` on the block: each
cell's valid values are added to 0.0 one after the other in time order (the chunks are
visited in C order of the chunk grid, so a cell's chunks in time order), NaN adding 0.0
and 0 to the count; float32 values are added as float64, exactly. So a block summed here
and a block read whole give the same state, and the folds over blocks
(:mod:`pangeo_hpc.recipes.folds`) and an incremental run's states agree to the bit.

A span of rows from more than one file, a chunk never written, or a source that reads
through h5py is read as a block and summed by that same kernel.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from pangeo_hpc.io.chunk_decoding import ChunkDecoder, CorruptChunkError, overlap
from pangeo_hpc.io.reader import Fetched, H5Source, MultiFileArray
from pangeo_hpc.jit import njit, use_twins
from pangeo_hpc.recipes.kernels import group_sums

__all__ = ["group_sums_of"]


def group_sums_of(
    array: MultiFileArray, start: int, stop: int, codes: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Float64 sums and int32 counts of the valid values of rows ``start:stop`` of
    ``array`` in each of ``k`` groups (``codes``: the group of each row, -1 none), each
    ``(k, *array.shape[1:])``: :func:`~pangeo_hpc.recipes.kernels.group_sums` of the block,
    to the bit, without the block.

    Parameters
    ----------
    array : MultiFileArray
        The reader.
    start, stop : int
        The rows.
    codes : np.ndarray
        The group of each row (``stop - start`` of them).
    k : int
        The number of groups.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        Sums (float64) and counts (int32).

    Examples
    --------
    >>> import os, tempfile, pandas as pd, xarray as xr
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "t2m.nc")
    >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
    >>> values[1, 0, 0] = np.nan
    >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
    ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
    >>> enc = {"t2m": {"chunksizes": (2, 1, 4), "zlib": True}}
    >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
    >>> from pangeo_hpc.io.reader import Decoding, H5Source
    >>> array = MultiFileArray([H5Source(path, "t2m")], [3], (2, 4), np.dtype("f4"), Decoding())
    >>> sums, counts = group_sums_of(array, 0, 3, np.array([0, 0, 1]), 2)
    >>> sums[:, 0], counts[:, 0]  # steps 0 and 1 (one NaN), then step 2
    (array([[ 0., 10., 12., 14.],
           [16., 17., 18., 19.]]), array([[1, 2, 2, 2],
           [1, 1, 1, 1]], dtype=int32))
    >>> tmp.cleanup()
    """
    codes = np.asarray(codes, dtype=np.intp)
    if codes.shape != (stop - start,):
        raise ValueError(f"codes has shape {codes.shape}, need ({stop - start},)")
    spans = array.spans(start, stop)
    if len(spans) == 1:
        i, a, b, _ = spans[0]
        source = array.sources[i]
        key = (slice(a, b), *(slice(None),) * (array.ndim - 1))
        fetched: Any = None
        if isinstance(source, H5Source):  # each chunk read just before it is decoded
            fetched = source.fetch(key, stream=True)
        elif hasattr(source, "fetch"):
            fetched = source.fetch(key)
        if isinstance(fetched, Fetched) and fetched.complete():
            try:
                return _sum_chunks(fetched, array, i, codes, k)
            except CorruptChunkError:  # reading the block below names the chunk
                pass
    block = np.asarray(array[start:stop])
    sums, counts = group_sums(block.reshape(stop - start, -1), codes, k)
    return sums.reshape((k, *array.shape[1:])), counts.reshape((k, *array.shape[1:]))


def _sum_chunks(
    fetched: Fetched, array: MultiFileArray, i: int, codes: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The sums and counts of the chunks of ``fetched`` (rows of file ``i``), chunk by
    chunk in C order, row by row."""
    table, box = fetched.table, fetched.box
    decoder = ChunkDecoder(table.codecs, table.chunks, table.dtype)
    decoding = array.decodings[i]
    cells = array.shape[1:]
    sums = np.zeros((k, *cells))
    counts = np.zeros((k, *cells), dtype=np.int32)
    for (idx, _, _), payload in zip(fetched.plan, fetched.payloads, strict=True):
        src, dst = overlap(box, idx, table.chunks)
        values = decoding.apply(decoder.decode_view(payload)[src], array.dtype)
        field = dst[1:]
        rows = codes[dst[0]]
        cuts = [0, *(np.flatnonzero(rows[1:] != rows[:-1]) + 1).tolist(), rows.size]
        for lo, hi in itertools.pairwise(cuts):  # runs of rows of one group
            g = int(rows[lo])
            if g >= 0:
                _add_rows(values[lo:hi], sums[g][field], counts[g][field])
    return sums, counts


@njit
def _add_rows_compiled(values, total, count):  # pragma: no cover - jitted
    """:func:`_add_rows` compiled: the loop of :func:`~pangeo_hpc.recipes.kernels.
    group_sums` (branch-free, NaN adds 0.0), over a chunk's rows of one group."""
    for t in range(values.shape[0]):
        for y in range(values.shape[1]):
            for x in range(values.shape[2]):
                v = values[t, y, x]
                ok = v == v  # not NaN
                total[y, x] += v if ok else 0.0
                count[y, x] += 1 if ok else 0


def _add_rows(values: np.ndarray, total: np.ndarray, count: np.ndarray) -> None:
    """Add ``values`` (rows of one group) to ``total`` (float64) one row after the other,
    and their valid values to ``count``: compiled, or with NumPy while a small run keeps
    numba unstarted (:func:`pangeo_hpc.jit.use_twins`), to the same bits."""
    (_add_rows_numpy if use_twins() else _add_rows_compiled)(values, total, count)


def _add_rows_numpy(values: np.ndarray, total: np.ndarray, count: np.ndarray) -> None:
    """:func:`_add_rows_compiled` with NumPy, to the same bits: the rows added one after
    the other, NaN left out where the kernel adds 0.0 (a sum that starts at 0.0 is never
    -0.0, and 0.0 + -0.0 is 0.0, so the bits are the same)."""
    ok = values == values  # not NaN
    for row, valid in zip(values, ok, strict=True):
        np.add(total, row, out=total, where=valid)
    count += ok.sum(axis=0, dtype=np.int32)
