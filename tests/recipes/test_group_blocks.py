"""The daily totals of Dask data in blocks that cut days (ERA5's month files start at
07:00): each block summed where it lies, no transposed copy or shuffle of the steps kept,
the values of the eager computation."""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import xarray as xr

from pangeo_hpc.recipes import daily_totals


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
    assert not any("transpose" in n or "shuffle" in n for n in names), names
    with dask.config.set(scheduler="sync"):
        xr.testing.assert_allclose(out.load(), daily_totals(eager), rtol=1e-6)
