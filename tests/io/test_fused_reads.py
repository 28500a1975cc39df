"""An area mean over data straight from the files is summed as the chunks are decoded
(io/fused.py, recipes/fusion.py): the same values as xarray's weighted mean, in fewer
tasks, for every layout the chunk reader takes and the others; never a second read."""

from __future__ import annotations

from pathlib import Path

import dask
import h5py
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.io.files import open_files
from pangeo_hpc.recipes import area_mean, global_mean, time_mean
from pangeo_hpc.recipes.fusion import FUSED, fused_spans, reads_twice
from pangeo_hpc.recipes.grid import cell_area
from tests.support.ncfiles import field, write_nc

N_LAT, N_LON = 13, 22  # chunks of 5 x 7 leave partial chunks at both edges


def _tree(tmp_path: Path, **kw) -> tuple[str, np.ndarray]:
    """Three files of 9, 10 and 11 days; values as floats (NaN where missing)."""
    parts, start = [], 0
    for i, n in enumerate((9, 10, 11)):
        values = field(n, N_LAT, N_LON, seed=i)
        if kw.get("fill") is not None:
            values[:, -1, -3:] = np.nan  # stored as the fill value, not NaN
        write_nc(tmp_path / f"f{i}.nc", {"v": values}, np.arange(start, start + n, 1.0), **kw)
        parts.append(values)
        start += n
    return str(tmp_path / "f*.nc"), np.concatenate(parts)


def _expected(da: xr.DataArray, share: float = 0.0) -> np.ndarray:
    """xarray's weighted mean, with the same cell areas, of the values the reader reads
    as blocks (decoded as stored: float32, unpacked in float32)."""
    area = cell_area(da.lat, da.lon)
    with dask.config.set(scheduler="sync"):
        da = da.load()
    mean = da.weighted(area).mean(("lat", "lon"))
    valid = xr.dot(da.notnull(), area, dim=["lat", "lon"])
    return mean.where(valid >= share * area.sum() * (1 - 1e-12)).values


LAYOUTS = {
    "shuffled, deflated, NaN": {"chunks": (4, 5, 7)},
    "a fill value": {"chunks": (4, 5, 7), "fill": -999.0},
    "whole-file chunks": {"chunks": (9, N_LAT, N_LON)},
    "packed int16 (read as a block)": {"chunks": (4, 5, 7), "pack": (0.01, 10.0), "fill": -32767},
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("share", [0.0, 0.999])
def test_fused_area_mean_is_xarrays(tmp_path, layout, share):
    pattern, _ = _tree(tmp_path, **LAYOUTS[layout])
    sst = open_files(pattern, "v")["v"]
    out = area_mean(sst, min_valid_share=share)
    assert any(str(k).startswith(FUSED) for k in out.data.dask.layers)
    assert not any(str(k).startswith("open_files") for k in out.data.dask.layers)
    with dask.config.set(scheduler="sync"):
        got = out.values
    expected = _expected(sst, share)
    assert np.isnan(expected).any() == (share > 0)  # the NaN corner: a polar cap
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))


def test_chunks_stored_without_shuffle(tmp_path):
    """Deflate only (no shuffle): the bytes of each value lie together."""
    values = field(12, N_LAT, N_LON, seed=3)
    path = write_nc(tmp_path / "a.nc", {"v": values}, np.arange(12.0), chunks=(4, 5, 7))
    with h5py.File(path, "a") as f:  # the same data again, deflated but not shuffled
        f.create_dataset("w", data=values.astype("f4"), chunks=(4, 5, 7), compression="gzip")
        for i, dim in enumerate(("time", "lat", "lon")):
            f["w"].dims[i].attach_scale(f[dim])
    assert h5py.File(path)["w"].shuffle is False
    ds = open_files(str(path), "w")
    with dask.config.set(scheduler="sync"):
        got = global_mean(ds["w"]).values
    np.testing.assert_allclose(got, _expected(ds["w"]), rtol=1e-12, atol=0)


def test_fewer_larger_tasks_that_never_cut_a_block(tmp_path):
    pattern, values = _tree(tmp_path, chunks=(2, 5, 7))
    per_day = N_LAT * N_LON * 4 / 1e6
    sst = open_files(pattern, "v", time_chunk_mb=2 * per_day)["v"]  # 2 days a block
    with dask.config.set({"pangeo-hpc.data.fused-tasks": 4}):
        out = global_mean(sst)
    spans = fused_spans(out.data.__dask_graph__())[sst.data.name]
    edges = set(np.cumsum((0, *sst.data.chunks[0])).tolist())
    assert 4 <= len(spans) < sst.data.npartitions  # each at most a quarter of the data
    assert spans[0][0] == 0 and spans[-1][1] == values.shape[0]
    assert all(a in edges and b in edges for a, b in spans)
    assert all(spans[i][1] == spans[i + 1][0] for i in range(len(spans) - 1))
    with dask.config.set(scheduler="sync"):
        np.testing.assert_allclose(out.values, _expected(sst), rtol=1e-12, atol=0)


def test_reads_twice_and_the_switch(tmp_path):
    """Beside a time mean, the fused area mean would read the files again: found, and
    with ``data.fuse-reads`` off the area mean reads the blocks the time mean reads."""
    pattern, _ = _tree(tmp_path, chunks=(4, 5, 7))
    sst = open_files(pattern, "v")["v"]
    assert reads_twice([global_mean(sst).data, time_mean(sst).data])
    assert not reads_twice([global_mean(sst).data])
    with dask.config.set({"pangeo-hpc.data.fuse-reads": False}):
        assert not reads_twice([global_mean(sst).data, time_mean(sst).data])
    # a selection first: blocks read, then reduced (not fused)
    assert not fused_spans(global_mean(sst.isel(lat=slice(1, None))).data.__dask_graph__())


def test_a_fused_and_a_blockwise_area_mean_computed_together(tmp_path):
    """Both hold the grid's weights under a name of their own (notebook 04: a fused area
    mean of the data beside one of their monthly means gave 'could not convert string to
    float: weights-...', the blockwise layer replacing the fused one's in the merged graph)."""
    pattern, _ = _tree(tmp_path, chunks=(4, 5, 7))
    sst = open_files(pattern, "v")["v"]
    doubled = sst * 2  # not straight from the reader: area-meaned block by block
    fused, blockwise = global_mean(sst), global_mean(doubled)
    assert fused_spans(fused.data.__dask_graph__()) and not fused_spans(blockwise.data.dask)
    a, b = dask.compute(fused, blockwise)
    np.testing.assert_allclose(b.values, 2 * a.values, rtol=1e-12)


def test_an_incremental_run_reads_each_file_once(demo_tree, tmp_path):
    """era5-sst-mean's area means beside its time mean, run file by file with a state
    cache: the fused area mean is built as in a whole run (not fused), so the reader counts
    each file's bytes once, in the first run and in the update (a second read doubled them)."""
    from distributed import Client, LocalCluster

    from pangeo_hpc.batch import open_inputs
    from pangeo_hpc.batch.incremental.state_cache import StateCache
    from pangeo_hpc.batch.pipeline.steps import compute

    cache = StateCache(tmp_path / "cache")
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cl,  # fmt: skip
        Client(cl) as client,
    ):
        for end in ("2000-02", "2000-03"):
            inputs = open_inputs("era5-sst-mean", data=demo_tree, start="2000-01", end=end)
            reads = compute(inputs, client, cache=cache).reads
            assert reads is not None and reads.incremental and reads.files_read >= 1
            done = reads.as_dict()
            assert 0 < done["bytes_read"] <= done["bytes_to_read"], done
