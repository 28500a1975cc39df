"""The compiled block kernels give numpy's answers whatever the chunking."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc import recipes
from pangeo_hpc.recipes.kernels import group_nanmean_blocks, weighted_nanmean_blocks


def _data(shape=(100, 7, 9), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(280, 5, shape).astype("f4")
    x[rng.random(shape) < 0.4] = np.nan
    x[:, 0, 0] = np.nan  # a land cell: NaN in every group
    return x


@pytest.mark.parametrize("time_chunk", [100, 33, 7, 1])
@pytest.mark.parametrize("split_every", [2, 8])
def test_group_nanmean_any_chunking(time_chunk, split_every):
    x = _data()
    codes = np.sort(np.random.default_rng(1).integers(0, 5, 100))
    codes[:3] = 0
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning, match="empty slice"):
        want = np.stack([np.nanmean(x[codes == g].astype("f8"), axis=0) for g in range(5)])
    lazy = da.from_array(x, chunks=(time_chunk, 7, 9))
    got = group_nanmean_blocks(lazy, codes, split_every=split_every)
    assert got.dtype == np.float32 and got.chunks[0] == (1,) * 5
    np.testing.assert_allclose(got.compute(), want, rtol=1e-7)
    assert np.isnan(got.compute()[:, 0, 0]).all()
    np.testing.assert_allclose(group_nanmean_blocks(x, codes), want, rtol=1e-7)


def test_group_nanmean_refuses_split_fields_and_wrong_codes():
    x = da.zeros((10, 4, 4), chunks=(5, 2, 4))
    with pytest.raises(ValueError, match="span all axes"):
        group_nanmean_blocks(x, np.zeros(10, int))
    with pytest.raises(ValueError, match=r"codes has shape \(9,\)"):
        group_nanmean_blocks(x.rechunk((5, 4, 4)), np.zeros(9, int))


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
    assert got.attrs["cell_methods"] == "time: mean (each calendar month over the years)"
    # spatially chunked data go through xarray's groupby: the same answer
    split = recipes.climatology(arr.chunk({"time0": 24, "lat": 3}))
    xr.testing.assert_allclose(split.compute(), got.compute(), rtol=1e-6)
