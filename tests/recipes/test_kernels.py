"""The compiled block kernels give numpy's answers whatever the chunking."""

from __future__ import annotations

import pickle
from unittest import mock

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc import recipes
from pangeo_hpc.recipes.aggregations import AGGREGATIONS
from pangeo_hpc.recipes.folds import fold_groups
from pangeo_hpc.recipes.kernels import (
    TREND_SUMS,
    group_subtract,
    group_sums,
    trend_sums,
    weighted_nanmean_blocks,
)


def _data(shape=(100, 7, 9), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(280, 5, shape).astype("f4")
    x[rng.random(shape) < 0.4] = np.nan
    x[:, 0, 0] = np.nan  # a land cell: NaN in every group
    return x


@pytest.mark.parametrize("time_chunk", [100, 33, 7, 1])
@pytest.mark.parametrize("split_every", [2, 8])
@pytest.mark.parametrize("cells", [(7, 9), (3, 4)])
@pytest.mark.parametrize("per_group", [False, True])
def test_group_means_any_chunking(time_chunk, split_every, cells, per_group):
    x = _data()
    codes = np.sort(np.random.default_rng(1).integers(0, 5, 100))
    codes[:3] = 0
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning, match="empty slice"):
        want = np.stack([np.nanmean(x[codes == g].astype("f8"), axis=0) for g in range(5)])
    lazy = da.from_array(x, chunks=(time_chunk, *cells))
    mean = AGGREGATIONS["mean"]
    with mock.patch("pangeo_hpc.recipes.folds.SMALL_BYTES", 0):  # the graph of big data
        got = fold_groups(mean, lazy, codes, {}, dtype="f4", per_group=per_group,
                          split_every=split_every)["value"]  # fmt: skip
    along = (1,) * 5 if per_group else (5,)
    assert got.dtype == np.float32 and got.chunks == (along, *lazy.chunks[1:])
    np.testing.assert_allclose(got.compute(), want, rtol=1e-7)
    assert np.isnan(got.compute()[:, 0, 0]).all()
    small = fold_groups(mean, lazy, codes, {}, dtype="f4")["value"]  # one task per cell block
    assert small.chunks == ((5,), *lazy.chunks[1:])
    folds = [k for k in dict(small.__dask_graph__()) if str(k[0]).startswith("fold-")]
    assert len(folds) == small.npartitions
    np.testing.assert_array_equal(small.compute(), got.compute())
    np.testing.assert_allclose(mean.reduce_groups(x, codes, {})["value"], want, rtol=1e-12)


@pytest.mark.parametrize("name", ["mean", "sum", "min", "max"])
@pytest.mark.parametrize("time_chunk", [100, 9, 1])
def test_group_folds_are_the_states_merged_in_order_to_the_bit(name, time_chunk):
    """Float64 data (an area mean's series), whose sums round differently in another
    order: the lazy reduction equals, to the bit, each block's state merged in time order,
    as an incremental run merges its files' states; a tree of the same sums does not."""
    rng = np.random.default_rng(5)
    x = rng.normal(0, 1, (100, 3)) * 10.0 ** rng.integers(-8, 8, (100, 3))
    codes = np.repeat(np.arange(4), 25)
    agg = AGGREGATIONS[name]
    lazy = da.from_array(x, chunks=(time_chunk, 3))
    blocks = [x[i : i + time_chunk] for i in range(0, 100, time_chunk)]
    parts = [
        agg.chunk(b, codes[i * time_chunk : (i + 1) * time_chunk]) for i, b in enumerate(blocks)
    ]
    merged = agg.combine([p for p in parts if p["labels"].size])
    want = agg.finalize(merged, {}, "f8")["value"]
    for small in (0, 2**40):
        with mock.patch("pangeo_hpc.recipes.folds.SMALL_BYTES", small):
            for split_every in (2, 3, 8):
                got = fold_groups(agg, lazy, codes, {}, split_every=split_every)["value"]
                np.testing.assert_array_equal(got.compute(), want)
    if name in ("mean", "sum") and time_chunk == 1:  # a tree of the blocks' sums differs
        tree = lazy.reshape(4, 25, 3).sum(axis=1, split_every=2).compute()
        if name == "mean":
            tree = tree / 25
        assert not np.array_equal(tree, want)


def test_group_folds_refuse_wrong_codes():
    x = da.zeros((10, 4, 4), chunks=(5, 2, 4))
    with pytest.raises(ValueError, match=r"codes has shape \(9,\)"):
        fold_groups(AGGREGATIONS["mean"], x, np.zeros(9, int), {})["value"]


def test_weighted_mean_blocks_have_no_concatenation():
    x = da.from_array(_data(), chunks=(13, 7, 9))
    w = np.random.default_rng(2).random((7, 9))
    got = weighted_nanmean_blocks(x, w)
    from dask.blockwise import Blockwise

    # map_blocks(drop_axis=...) would make a Blockwise layer with concatenate=True: every
    # block copied (15-17 % of a worker's time in a py-spy profile of B1)
    layers = got.__dask_graph__().layers.values()
    assert not any(
        getattr(lyr, "concatenate", None) for lyr in layers if isinstance(lyr, Blockwise)
    )
    xs = x.compute().astype("f8")
    ok = ~np.isnan(xs)
    want = np.where(ok, xs, 0).reshape(100, -1) @ w.ravel() / (ok.reshape(100, -1) @ w.ravel())
    np.testing.assert_allclose(got.compute(), want, rtol=1e-12)


def test_climatology_kernel_matches_xarray_groupby():
    x = _data((800, 6, 8))
    times = xr.date_range("2000-01-01", periods=800, freq="D")
    arr = xr.DataArray(x, dims=("time0", "lat", "lon"), name="sst", attrs={"units": "K"})
    arr = arr.assign_coords(time0=times, lat=np.arange(6.0), lon=np.arange(8.0))
    lazy = arr.chunk({"time0": 24})  # blocks that straddle months
    got = recipes.climatology(lazy)
    assert got.chunks is not None  # lazy, by the kernel
    want = arr.groupby("time0.month").mean("time0", skipna=True)
    assert got.dims == want.dims and got.name == want.name
    xr.testing.assert_allclose(got.compute().drop_attrs(), want.drop_attrs(), rtol=1e-6)
    assert got.attrs["cell_methods"] == (
        "time: mean (each calendar month over the years 2000-01 to 2002-03)"
    )
    # spatially chunked and NumPy data go through the same kernel: the same float64 sums,
    # so the same float32 values (xarray's groupby of NumPy float32 data differs in the
    # last digits, and anomalies near zero then differ by more than 1e-6 relative)
    split = recipes.climatology(arr.chunk({"time0": 24, "lat": 3}))
    assert split.chunks == ((12,), (3, 3), (8,))
    eager = recipes.climatology(arr)
    assert eager.chunks is None
    np.testing.assert_array_equal(split.values, got.values)
    np.testing.assert_array_equal(eager.values, got.values)


@pytest.mark.parametrize("chunks", [(100, 7, 9), (33, 7, 9), (7, 3, 4), (1, 7, 9)])
def test_trend_sums_are_numpys_sums_of_the_valid_values(chunks):
    # wrong implementations this catches: t counted where x is NaN (st, stt over all
    # rows), blocks along time not added (only the last block's sums), float32 sums
    x = _data()
    t = np.linspace(-1.0, 1.0, 100)
    valid = ~np.isnan(x)
    x8 = np.where(valid, x, 0.0).astype("f8")
    tt = t[:, None, None]
    want = {
        "n": valid.sum(0),
        "st": (tt * valid).sum(0),
        "stt": (tt**2 * valid).sum(0),
        "sx": x8.sum(0),
        "stx": (tt * x8).sum(0),
        "sxx": (x8**2).sum(0),
    }
    for got in (trend_sums(x, t), trend_sums(da.from_array(x, chunks=chunks), t).compute()):
        assert got.shape == (6, 7, 9) and got.dtype == np.float64
        for i, k in enumerate(TREND_SUMS):
            np.testing.assert_allclose(got[i], want[k], rtol=1e-12, atol=1e-9, err_msg=k)
    assert (trend_sums(x, t)[0, 0, 0], trend_sums(x, t)[1, 0, 0]) == (0, 0)  # all NaN
    # two cuts of the same times in one graph, each block with its own times only
    a, b = (trend_sums(da.from_array(x, chunks=c), t) for c in (chunks, (50, 7, 9)))
    for got in dask.compute(a, b):
        np.testing.assert_allclose(got[3], want["sx"], rtol=1e-12, atol=1e-9)
    tasks = [v for k, v in dict(a.__dask_graph__()).items() if "trend_of_block" in str(k)]
    assert tasks and all(len(pickle.dumps(v)) < t.nbytes for v in tasks)
    with pytest.raises(ValueError, match="t has shape"):
        trend_sums(x, t[:-1])


@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_kernel_sums_are_the_rows_added_in_order_to_the_bit(dtype):
    # the compiled loops add a NaN as 0 without a branch (so that they vectorise): the sums
    # must be those of the rows added one after the other, valid values only, in float64
    # (wrong ways this catches: float32 products, NaN counted, rows added in another order)
    x = _data((60, 5, 8)).astype(dtype).reshape(60, -1)
    t = np.linspace(-3.7, 2.9, 60)  # negative times: 0 * t is -0.0
    codes = np.arange(60) % 7 - 1  # group -1: rows in no group
    ok = ~np.isnan(x)
    v = np.where(ok, x, 0).astype("f8")
    trend = np.zeros((6, x.shape[1]))
    sums, counts = np.zeros((6, x.shape[1])), np.zeros((6, x.shape[1]), dtype=np.int32)
    for i in range(60):
        w = ok[i].astype("f8")
        for k, term in enumerate((w, w * t[i], w * t[i] ** 2, v[i], t[i] * v[i], v[i] * v[i])):
            trend[k] += term
        if codes[i] >= 0:
            sums[codes[i]] += v[i]
            counts[codes[i]] += ok[i]
    assert np.array_equal(trend_sums(x, t), trend)
    got_sums, got_counts = group_sums(x, codes, 6)
    assert np.array_equal(got_sums, sums) and np.array_equal(got_counts, counts)


class _Reader:
    """An array read block by block, as ``open_era5``'s reader is (not NumPy data, which
    dask keeps as tasks of their own)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values, self.shape, self.dtype, self.ndim = values, values.shape, values.dtype, 3

    def __getitem__(self, key):
        return self.values[key]


@pytest.mark.parametrize("timed", [False, True])
def test_the_sums_of_each_block_are_one_task_fused_with_its_read(timed):
    # the per-block sums are fused with the read of their block, as xarray's own mean is:
    # 50 blocks give 50 tasks and the tree of additions over them. Wrong implementations
    # this catches: the sums reshaped before they are added, the times of blocks not
    # timed as tasks of their own (1042 tasks for 240 blocks at b3c02f2, 322 at f4bc8a7:
    # 6.0 s -> 4.1 s for 20 years of 1-degree SST on the local cluster)
    x = da.from_array(_Reader(_data()), chunks=(2, 7, 9))  # as the files are read
    if timed:
        sums = trend_sums(x, np.linspace(0.0, 1.0, 100))
    else:
        sums = AGGREGATIONS["mean"].reduce(x, {})["value"]
    (optimized,) = dask.optimize(sums)
    graph = dict(optimized.__dask_graph__())
    # timed: each block's times are a task of their own (the times' from_array). Here: 69
    # and 118 tasks; before, 219 and 218
    assert len(graph) <= (2.5 if timed else 1.5) * 50, len(graph)
    want = np.nansum(np.where(np.isnan(_data()), 0.0, _data()).astype("f8"), 0)
    got = optimized.compute()
    if timed:
        np.testing.assert_allclose(got[3], want, rtol=1e-12)
    else:
        count = (~np.isnan(_data())).sum(0)
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(got, want / count, rtol=1e-6)


@pytest.mark.parametrize("chunks", [(100, 7, 9), (33, 7, 9), (7, 3, 4)])
def test_group_subtract_takes_each_rows_own_group(chunks):
    # wrong implementations this catches: each block's codes taken from the start of the
    # array (blocks after the first subtract the wrong month), a float64 result
    x = _data()
    ref = _data((5, 7, 9), seed=3)
    codes = np.random.default_rng(4).integers(0, 5, 100)
    want = x - ref[codes]
    np.testing.assert_array_equal(group_subtract(x, ref, codes), want)
    lazy = group_subtract(da.from_array(x, chunks=chunks), da.from_array(ref), codes)
    assert lazy.dtype == np.float32 and lazy.chunks == da.from_array(x, chunks=chunks).chunks
    np.testing.assert_array_equal(lazy.compute(), want)
    # the same months cut into other blocks, in one graph: each keeps its own cut (an
    # array of the codes named by their values alone made Dask lose dependencies)
    other = group_subtract(da.from_array(x, chunks=(50, 7, 9)), da.from_array(ref), codes)
    both = dask.compute(lazy, other)
    np.testing.assert_array_equal(both[0], want)
    np.testing.assert_array_equal(both[1], want)
    series = group_subtract(x[:, 1, 1], ref[:, 1, 1], codes)  # an index: rows are numbers
    np.testing.assert_array_equal(series, want[:, 1, 1])
    with pytest.raises(ValueError, match="do not fit"):
        group_subtract(x, ref[:, :3], codes)
