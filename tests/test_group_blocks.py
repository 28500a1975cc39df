"""Sums within groups of steps, block by block (recipes/group_blocks.py), and the daily
totals of Dask data made with them: the values of NumPy's sums, no transposed copy."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from pangeo_hpc.recipes import daily_totals
from pangeo_hpc.recipes.group_blocks import group_sums_blocks


def _reference(x: np.ndarray, codes: np.ndarray, groups: int) -> np.ndarray:
    out = np.full((groups, *x.shape[1:]), np.nan)
    for g in range(groups):
        rows = x[codes == g].astype("f8")
        valid = ~np.isnan(rows)
        out[g] = np.where(valid.any(axis=0), np.where(valid, rows, 0).sum(axis=0), np.nan)
    return out


def test_groups_across_blocks_and_steps_in_none():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (40, 3, 4)).astype("f4")
    x[4:8, 0, 0] = np.nan  # group 1's cell (0, 0): no valid value
    codes = np.repeat(np.arange(10), 4)
    codes[:2] = -1  # the first day's first hours are not a whole day
    codes[codes == 9] = -1
    lazy = group_sums_blocks(da.from_array(x, chunks=(7, 3, 4)), codes, 9)
    assert sum(lazy.chunks[0]) == 9 and lazy.dtype == np.float32
    with dask.config.set(scheduler="sync"):
        got = lazy.compute()
    ref = _reference(x, codes, 9)
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    assert np.isnan(got[1, 0, 0])
    np.testing.assert_allclose(group_sums_blocks(x, codes, 9), ref, rtol=1e-6)
    with pytest.raises(ValueError, match="in order"):
        group_sums_blocks(x, codes[::-1], 9)


def test_daily_totals_of_dask_data_sum_each_block_in_place():
    """Hourly accumulations from 07:00 (ERA5's month files) in blocks that cut days."""
    t = pd.date_range("2019-01-01T07:00", periods=24 * 5, freq="h")
    rng = np.random.default_rng(1)
    values = rng.uniform(0, 1e-3, (t.size, 4, 5)).astype("f4")
    values[30:40, 1, 1] = np.nan
    coords = {"time1": t, "lat": np.arange(4.0), "lon": np.arange(5.0)}
    eager = xr.DataArray(values, dims=("time1", "lat", "lon"), coords=coords,
                         attrs={"units": "m"})  # fmt: skip
    lazy = eager.chunk({"time1": 50})
    out = daily_totals(lazy)
    names = list(out.data.dask.layers)
    assert any(n.startswith("group-totals") for n in names)
    assert not any("transpose" in n or "shuffle" in n for n in names), names
    with dask.config.set(scheduler="sync"):
        xr.testing.assert_allclose(out.load(), daily_totals(eager), rtol=1e-6)
