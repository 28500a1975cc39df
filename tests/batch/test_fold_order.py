"""A cached answer equals a fresh one to the bit on float64 data, whose sums round.

The float32 demo data sum exactly in float64, so the order of the additions never shows
there. Here each value is drawn from a wide log-normal (1e-6 to 1e6), stored as float64: a
sum of them rounds, and a run that adds the blocks' states in another order than a run
without a cache differs in the last bit. Three ways that happened (each test below fails
on the code before this one):

* more than Dask's ``split_every`` (32) files: the run without a cache added its blocks as
  a tree (``sum(axis=0)``), the incremental run file after file;
* files of several blocks each (``data.time-chunk-mb`` below a file's size): the
  incremental run merged each file's blocks first, then the files;
* ``data.time-chunk-mb`` changed between two runs: the states of the old blocks were
  reused under the same key.
"""

from __future__ import annotations

from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest
import xarray as xr
import yaml

from pangeo_hpc.batch.chains.recipe_yaml import load
from pangeo_hpc.batch.incremental import plan as incremental_plan
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.batch.pipeline.steps import compute, open_inputs
from pangeo_hpc.recipes import fused_states

#: MB: blocks of 4-5 steps of a 10 x 10 float64 field, three or four to a file
SMALL_CHUNK = 0.004


@pytest.fixture(autouse=True)
def _sum_as_read(monkeypatch):
    """Small blocks summed as they are decoded too (recipes/fused_states.py), so that both
    ways of reading a block are folded here (``data.fuse-reads`` off: read whole)."""
    monkeypatch.setattr(fused_states, "BLOCK_BYTES", 0)


def _write(folder: Path, files: int, steps: int) -> Path:
    """``files`` NetCDF files of ``steps`` days each of float64 values over twelve orders
    of magnitude, chunked a step a chunk (so that a small time chunk cuts a file)."""
    folder.mkdir()
    rng = np.random.default_rng(files)
    days = pd.date_range("2001-01-01", periods=files * steps, freq="D")
    coords = {
        "lat": ("lat", np.linspace(-45.0, 45.0, 10), {"units": "degrees_north"}),
        "lon": ("lon", np.arange(10) * 36.0, {"units": "degrees_east"}),
    }
    for i in range(files):
        values = rng.lognormal(0.0, 5.0, (steps, 10, 10))
        ds = xr.Dataset(
            {"pr": (("time", "lat", "lon"), values, {"units": "kg m-2 s-1"})},
            coords={"time": days[i * steps : (i + 1) * steps], **coords},
        )
        ds.to_netcdf(folder / f"pr_{i:02d}.nc", encoding={"pr": {"chunksizes": (1, 10, 10)}})
    return folder


def _recipe(tmp_path: Path, data: Path, steps: list) -> Path:
    doc = {"name": "folds", "dataset": {"variable": "pr", "files": str(data / "pr_*.nc")}}
    path = tmp_path / "folds.yaml"
    path.write_text(yaml.safe_dump({**doc, "steps": steps}))
    return path


def _bits(result: xr.Dataset) -> bytes:
    names = sorted(v for v in result.data_vars if result[v].dtype.kind == "f")
    assert names and all(result[v].dtype == np.float64 for v in names)
    return b"".join(np.ascontiguousarray(result[v].values).tobytes() for v in names)


def _answer(recipe: Path, client, cache, chunk_mb: float | None = None) -> bytes:
    options = {} if chunk_mb is None else {"pangeo-hpc.data.time-chunk-mb": chunk_mb}
    with dask.config.set(options):
        inputs = open_inputs(load(recipe))
        if chunk_mb is not None:  # the files are cut as meant
            assert max(inputs.dataset["pr"].data.chunks[0]) < 12
        return _bits(compute(inputs, client, cache=cache).result)


STEPS = {
    "time_mean": [{"time_mean": {}}],
    "climatology": [{"climatology": {"freq": "monthly"}}],
}


@pytest.mark.parametrize("steps", STEPS.values(), ids=STEPS.keys())
def test_forty_files_of_float64_cached_equal_fresh_to_the_bit(steps, client, tmp_path):
    recipe = _recipe(tmp_path, _write(tmp_path / "data", files=40, steps=5), steps)
    cache = StateCache(tmp_path / "cache")
    fresh = _answer(recipe, client, False)
    with dask.config.set({"pangeo-hpc.data.fuse-reads": False}):  # blocks read whole
        assert _answer(recipe, client, False) == fresh
    assert _answer(recipe, client, cache) == fresh  # the states computed, then merged
    assert _answer(recipe, client, cache) == fresh  # every state from the cache


@pytest.mark.parametrize("steps", STEPS.values(), ids=STEPS.keys())
def test_files_of_several_blocks_cached_equal_fresh_to_the_bit(steps, client, tmp_path):
    recipe = _recipe(tmp_path, _write(tmp_path / "data", files=4, steps=36), steps)
    cache = StateCache(tmp_path / "cache")
    fresh = _answer(recipe, client, False, SMALL_CHUNK)
    assert _answer(recipe, client, cache, SMALL_CHUNK) == fresh
    assert _answer(recipe, client, cache, SMALL_CHUNK) == fresh


def _changed_chunk_matches(client, tmp_path: Path) -> bool:
    recipe = _recipe(tmp_path, _write(tmp_path / "data", files=4, steps=36), STEPS["time_mean"])
    cache = StateCache(tmp_path / "cache")
    _answer(recipe, client, cache)  # states of one block a file
    return _answer(recipe, client, cache, SMALL_CHUNK) == _answer(
        recipe, client, False, SMALL_CHUNK
    )


def test_a_changed_time_chunk_misses_the_states_of_the_old_blocks(client, tmp_path):
    assert _changed_chunk_matches(client, tmp_path)


def test_the_changed_chunk_is_seen_only_through_the_block_layout_in_the_key(
    client, tmp_path, monkeypatch
):
    """Known answer: with the block layout left out of the key, the old states are reused
    and the answer differs from the fresh one."""
    monkeypatch.setattr(incremental_plan, "block_layout", lambda chunks, a, b: "")
    assert not _changed_chunk_matches(client, tmp_path)
