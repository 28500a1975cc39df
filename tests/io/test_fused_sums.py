"""A time mean or a climatology of data straight from the files is summed as
the chunks are decoded (io/fused_sums.py, recipes/fused_states.py): each block's sums and
counts are those of the block read whole, to the bit, for every layout; the answers are
the unfused ones, to the bit; never a second read.

The float values span twelve orders of magnitude, so their float64 sums round and any
other order of the additions shows (checked below on one such order).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import dask
import h5py
import numpy as np
import pytest

from pangeo_hpc.io import fused_sums
from pangeo_hpc.io.files import open_files
from pangeo_hpc.recipes import climatology, folds, fused_states, global_mean, time_mean
from pangeo_hpc.recipes.fused_states import GroupSums
from pangeo_hpc.recipes.fusion import SUMMED, reader_of, reads_twice
from pangeo_hpc.recipes.kernels import group_sums
from tests.support.ncfiles import field, write_nc

N_LAT, N_LON = 13, 22  # chunks of 5 x 7 leave partial chunks at both edges
DAYS = (40, 50, 45)  # three files, across the months of a climatology


def _wide(n: int, seed: int) -> np.ndarray:
    """Values from 1e-6 to 1e6 (their float64 sums round), NaN in a corner."""
    values = np.random.default_rng(seed).lognormal(0.0, 5.0, (n, N_LAT, N_LON))
    values[:, : N_LAT // 3, : N_LON // 4] = np.nan
    return values


def _tree(tmp_path: Path, **kw) -> str:
    start = 0
    for i, n in enumerate(DAYS):
        values = field(n, N_LAT, N_LON, seed=i) if kw.get("pack") else _wide(n, i)
        if kw.get("fill") is not None:
            values[:, -1, -3:] = np.nan  # stored as the fill value, not NaN
        write_nc(tmp_path / f"f{i}.nc", {"v": values}, np.arange(start, start + n, 1.0), **kw)
        start += n
    return str(tmp_path / "f*.nc")


def _rewrite(pattern: str, tmp_path: Path, **create) -> str:
    """The same files with ``v`` stored again by h5py as ``create`` says."""
    for path in sorted(Path(pattern).parent.glob("f*.nc")):
        with h5py.File(path, "a") as f:
            values = f["v"][...]
            del f["v"]
            f.create_dataset("v", data=values, **create)
            for i, dim in enumerate(("time", "lat", "lon")):
                f["v"].dims[i].attach_scale(f[dim])
            f["v"].attrs["units"] = "degC"
    return pattern


LAYOUTS = {
    "shuffled, deflated, NaN": {"chunks": (4, 5, 7)},
    "a fill value": {"chunks": (4, 5, 7), "fill": -999.0},
    "whole-file chunks": {"chunks": (40, N_LAT, N_LON)},
    "packed int16": {"chunks": (4, 5, 7), "pack": (0.01, 10.0), "fill": -32767},
}


def _open(tmp_path: Path, layout: str):
    if layout == "deflated, not shuffled":
        pattern = _rewrite(_tree(tmp_path, chunks=(4, 5, 7)), tmp_path, chunks=(4, 5, 7),
                           compression="gzip")  # fmt: skip
    elif layout == "a chunk never written":
        pattern = _tree(tmp_path, chunks=(4, 5, 7))
        with h5py.File(Path(pattern).parent / "f1.nc", "a") as f:
            values = f["v"][...]
            del f["v"]
            v = f.create_dataset("v", shape=values.shape, dtype="f4", chunks=(4, 5, 7),
                                 fillvalue=np.nan)  # fmt: skip
            v[4:] = values[4:]  # the first chunks along time never written
            for i, dim in enumerate(("time", "lat", "lon")):
                v.dims[i].attach_scale(f[dim])
            v.attrs["units"] = "degC"
    else:
        pattern = _tree(tmp_path, **LAYOUTS[layout])
    return open_files(pattern, "v")["v"]


ALL = [*LAYOUTS, "deflated, not shuffled", "a chunk never written"]


@pytest.mark.parametrize("layout", ALL)
def test_each_span_sums_as_the_block_read_whole(tmp_path, layout):
    x = _open(tmp_path, layout).data
    reader = reader_of(x, GroupSums)
    assert reader is not None
    rng = np.random.default_rng(0)
    edges = np.cumsum((0, *x.chunks[0]))
    spans = [(int(a), int(b)) for a, b in itertools.pairwise(edges)]
    spans += [(5, 15), (38, 60), (0, sum(DAYS))]  # within a file, and across files
    for a, b in spans:
        codes = rng.integers(-1, 3, b - a)
        with dask.config.set(scheduler="sync"):
            block = np.asarray(x[a:b]).reshape(b - a, -1)
        sums, counts = reader.group_sums(a, b, codes, 3)
        want_sums, want_counts = group_sums(block, codes, 3)
        assert sums.reshape(3, -1).tobytes() == want_sums.tobytes(), (layout, a, b)
        np.testing.assert_array_equal(counts.reshape(3, -1), want_counts)


def test_the_data_show_another_order(tmp_path, monkeypatch):
    """Known answer: each chunk summed from zero, then added (a plausible way to sum chunk
    by chunk) gives other bits on these data; the test above catches it."""

    def chunk_first(fetched, array, i, codes, k):
        table, box = fetched.table, fetched.box
        decoder = fused_sums.ChunkDecoder(table.codecs, table.chunks, table.dtype)
        sums = np.zeros((k, *array.shape[1:]))
        counts = np.zeros((k, *array.shape[1:]), np.int32)
        for (idx, _, _), payload in zip(fetched.plan, fetched.payloads, strict=True):
            src, dst = fused_sums.overlap(box, idx, table.chunks)
            values = decoder.decode(payload)[src].astype("f8")
            for g in range(k):
                rows = values[codes[dst[0]] == g]
                sums[g][dst[1:]] += np.nansum(rows, axis=0)
                counts[g][dst[1:]] += (rows == rows).sum(axis=0, dtype=np.int32)
        return sums, counts

    monkeypatch.setattr(fused_sums, "_sum_chunks", chunk_first)
    with pytest.raises(AssertionError):
        test_each_span_sums_as_the_block_read_whole(tmp_path, "shuffled, deflated, NaN")


REDUCTIONS = {
    "time_mean": time_mean,
    "seasonal climatology": lambda da: climatology(da, freq="seasonal"),
    "monthly climatology": lambda da: climatology(da, freq="monthly"),
}


@pytest.mark.parametrize("how", REDUCTIONS)
@pytest.mark.parametrize("layout", ["shuffled, deflated, NaN", "packed int16"])
def test_a_fused_reduction_is_the_unfused_one_to_the_bit(tmp_path, how, layout, monkeypatch):
    monkeypatch.setattr(folds, "SMALL_BYTES", 0)  # folded block by block, as large data are
    monkeypatch.setattr(fused_states, "BLOCK_BYTES", 0)  # small blocks summed as read too
    da = _open(tmp_path, layout)
    with dask.config.set({"pangeo-hpc.data.time-chunk-mb": 0.02}):  # several blocks a file
        da = open_files(str(tmp_path / "f*.nc"), "v")["v"]
    assert len(da.data.chunks[0]) > len(DAYS)
    fused = REDUCTIONS[how](da)
    layers = fused.data.__dask_graph__().layers
    assert any(str(k).startswith(SUMMED) for k in layers)
    assert da.data.name not in layers  # no block is read whole
    with dask.config.set({"pangeo-hpc.data.fuse-reads": False}):
        blockwise = REDUCTIONS[how](da)
    assert not any(str(k).startswith(SUMMED) for k in blockwise.data.__dask_graph__().layers)
    got, want = dask.compute(fused, blockwise, scheduler="threads")
    assert got.values.tobytes() == want.values.tobytes()
    assert got.attrs == want.attrs and list(got.coords) == list(want.coords)


def test_two_fused_reductions_of_the_same_data_read_twice(tmp_path, monkeypatch):
    """A time mean and an area mean, each summed as it reads, would read the files twice:
    found, and with ``data.fuse-reads`` off both read the same blocks."""
    monkeypatch.setattr(fused_states, "BLOCK_BYTES", 0)
    da = _open(tmp_path, "shuffled, deflated, NaN")
    assert not reads_twice([time_mean(da).data])
    assert reads_twice([time_mean(da).data, global_mean(da).data])
    assert reads_twice([time_mean(da).data, da.data])  # the blocks besides
    with dask.config.set({"pangeo-hpc.data.fuse-reads": False}):
        assert not reads_twice([time_mean(da).data, global_mean(da).data])


def test_small_blocks_are_read_whole(tmp_path):
    """Blocks that stay in cache (under ``BLOCK_BYTES``): one pass over the block beats a
    chunk's many small ones, so they are not summed as they are decoded."""
    da = _open(tmp_path, "shuffled, deflated, NaN")
    assert da.data.nbytes < fused_states.BLOCK_BYTES
    layers = time_mean(da).data.__dask_graph__().layers
    assert not any(str(k).startswith(SUMMED) for k in layers) and da.data.name in layers
