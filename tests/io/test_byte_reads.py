"""A local file's chunks read one at a time into one reused buffer (io/byte_reads.py): the
same bytes as the all-at-once read, counted, a truncated file named; the fused area mean
that reads through it falls back to the block path on a chunk never written."""

from __future__ import annotations

import os

import dask
import h5py
import numpy as np
import pytest

from pangeo_hpc.errors import DamagedInputError
from pangeo_hpc.io.byte_reads import ChunkStream, bytes_read, pread_ranges
from pangeo_hpc.io.files import open_files
from pangeo_hpc.io.fused import fusable
from pangeo_hpc.io.reader import Decoding, H5Source
from pangeo_hpc.recipes import global_mean
from tests.support.ncfiles import field, write_nc


def _chunk_ranges(path, var="v") -> list[tuple[int, int]]:
    with h5py.File(path) as f:
        infos: list = []
        f[var].id.chunk_iter(infos.append)
    return [(s.byte_offset, s.size) for s in infos]


def test_stream_gives_each_chunk_as_the_whole_read_does(tmp_path):
    values = field(10, 13, 22, seed=5)
    path = write_nc(tmp_path / "a.nc", {"v": values}, np.arange(10.0), chunks=(4, 5, 7))
    # sizes differ from chunk to chunk (the buffer must hold the largest, not the first);
    # an absent chunk (offset -1) comes out as None
    ranges = [*_chunk_ranges(path), (-1, -1)]
    assert len({n for _, n in ranges[:-1]}) > 1
    fd = os.open(path, os.O_RDONLY)
    try:
        whole = pread_ranges(fd, ranges, str(path))
    finally:
        os.close(fd)
    stream = ChunkStream(str(path), ranges)
    assert len(stream) == len(ranges) and not stream.complete
    assert ChunkStream(str(path), ranges[:-1]).complete
    before = bytes_read()
    got = [None if p is None else bytes(p) for p in stream]  # each copied before the next
    assert bytes_read() - before == sum(n for _, n in ranges[:-1])
    assert got == [None if p is None else bytes(p) for p in whole]
    assert got == [None if p is None else bytes(p) for p in stream]  # read again, the same


def test_stream_of_a_truncated_file_names_it(tmp_path):
    values = field(10, 13, 22, seed=6)
    path = write_nc(tmp_path / "f.nc", {"v": values}, np.arange(10.0), chunks=(4, 5, 7))
    ranges = _chunk_ranges(path)
    end = max(o + n for o, n in ranges)
    with open(path, "r+b") as fh:
        fh.truncate(end - 10)  # the last chunk loses its end
    with pytest.raises(DamagedInputError, match=rf"f.nc' ends before byte {end} .*truncated"):
        list(ChunkStream(str(path), ranges))


def _sums(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    ok = ~np.isnan(values)
    x = np.where(ok, values, 0).astype("f8")
    return np.stack([(x * w).sum((1, 2)), (ok * w).sum((1, 2))], axis=1)


def test_a_chunk_never_written_is_read_as_a_block(tmp_path):
    """The stream says, without reading, that a chunk is absent: the fused sums then come
    from the assembled block (fill value there), and equal the sums of h5py's values."""
    path = tmp_path / "holes.nc"
    values = field(8, 10, 14, seed=7).astype("f4")
    with h5py.File(path, "w") as f:
        d = f.create_dataset(
            "v", shape=values.shape, dtype="f4", chunks=(4, 5, 7), shuffle=True,
            compression="gzip", fillvalue=np.float32(np.nan),
        )  # fmt: skip
        d[:, :5, :] = values[:, :5, :]
        d[:4, 5:, :7] = values[:4, 5:, :7]  # chunks (0, 1, 1), (1, 1, 0), (1, 1, 1) absent
        stored = d[...]
    assert np.isnan(stored[4:, 5:, :]).all()
    np.testing.assert_array_equal(stored[:, :5], values[:, :5])
    fetched = H5Source(str(path), "v").fetch((slice(None),) * 3, stream=True)
    assert isinstance(fetched.payloads, ChunkStream)
    assert not fetched.complete() and not fusable(fetched, Decoding(), np.dtype("f4"))
    from pangeo_hpc.io.fused import SummingArray

    array = SummingArray([H5Source(str(path), "v")], [8], (10, 14), np.dtype("f4"), Decoding())
    w = np.random.default_rng(0).random((10, 14))
    np.testing.assert_allclose(array.weighted_sums(0, 8, w), _sums(stored, w), rtol=1e-12)


def test_streamed_fused_mean_equals_the_block_read(tmp_path):
    """The fused global mean (chunks streamed) against the same mean with fused reads off
    (blocks read all at once), over files whose chunks are cut at every edge."""
    for i, n in enumerate((9, 11)):
        values = field(n, 13, 22, seed=10 + i)
        write_nc(tmp_path / f"f{i}.nc", {"v": values}, np.arange(n) + 20.0 * i, chunks=(4, 5, 7))
    sst = open_files(str(tmp_path / "f*.nc"), "v")["v"]
    with dask.config.set(scheduler="sync"):
        fused = global_mean(sst).values
        with dask.config.set({"pangeo-hpc.data.fuse-reads": False}):
            blocks = global_mean(sst).values
    np.testing.assert_allclose(fused, blocks, rtol=1e-12, atol=0)
