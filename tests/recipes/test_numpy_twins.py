"""The NumPy twins of the compiled kernels (``pangeo_hpc.jit.numpy_twins``, issue 29 §1): a
run that reads little uses them while numba has not started, since numba's start costs more
than their slower loops there. They must give the compiled kernels' bits, so that a result
does not depend on which ran (a cached state from one, a fresh one from the other)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pangeo_hpc import jit
from pangeo_hpc.io.chunk_decoding import (
    _unshuffle,
    _unshuffle4,
    _unshuffle4_numpy,
    _unshuffle_numpy,
)
from pangeo_hpc.io.fused_sums import _add_rows_compiled, _add_rows_numpy
from pangeo_hpc.recipes.kernels import (
    _group_sums,
    _group_sums_numpy,
    _trend_sums,
    _trend_sums_numpy,
    group_sums,
)
from tests.support.paths import ROOT


def _field(n, m, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(280, 30, (n, m)).astype(dtype)
    x[rng.random((n, m)) < 0.3] = np.nan
    if m > 2:
        x[:, 0] = np.nan  # a cell never valid
        x[:, 1] = -0.0  # a cell of negative zeros: its sum is 0.0 from 0.0, not -0.0
    return x


#: few cells (the twins' cumulative sums), many (their loop over rows) and more than a
#: block of rows holds (the group sums' rows copied a few at a time)
SHAPES = [(0, 5), (1, 5), (7, 5), (200, 1), (365, 40), (0, 300), (1, 300), (60, 300),
          (9, 50_000)]  # fmt: skip


@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("shape", SHAPES)
def test_the_twins_of_the_sums_give_the_compiled_bits(shape, dtype):
    # a wrong twin this catches: v.sum(axis=0), which adds a single column pairwise (tried)
    x = _field(*shape, dtype)
    t = np.linspace(-2.5, 3.5, shape[0])  # negative times: their products with 0 are -0.0
    want, got = _trend_sums(x, t), _trend_sums_numpy(x, t)
    assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    codes = np.arange(shape[0]) % 4 - 1  # -1: rows in no group
    for w, g in zip(_group_sums(x, codes, 3), _group_sums_numpy(x, codes, 3), strict=True):
        assert g.dtype == w.dtype and np.array_equal(g, w)
        assert np.array_equal(np.signbit(g), np.signbit(w))


@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("rows", [1, 2, 24])
def test_the_twin_of_a_chunks_sums_gives_the_compiled_bits(rows, dtype):
    """A chunk's rows added to running sums as it is decoded (io/fused_sums.py), on a
    strided part of the sums (a chunk of a larger field)."""
    x = _field(rows, 7 * 9, dtype, seed=rows).reshape(rows, 7, 9)
    start = np.random.default_rng(1).normal(0, 1e3, (2, 10, 12))
    start[:, 1, :] = 0.0  # sums that start at 0.0 (the first chunk of a block)
    counts = np.random.default_rng(2).integers(0, 9, (2, 10, 12)).astype(np.int32)
    (want, want_n), (got, got_n) = (start.copy(), counts.copy()), (start.copy(), counts.copy())
    _add_rows_compiled(x, want[1, 1:8, 2:11], want_n[1, 1:8, 2:11])
    _add_rows_numpy(x, got[1, 1:8, 2:11], got_n[1, 1:8, 2:11])
    assert got.tobytes() == want.tobytes() and np.array_equal(got_n, want_n)
    assert not np.signbit(want[1, 1:8, 2:11][0, 1])  # -0.0 added to 0.0: 0.0


@pytest.mark.parametrize("itemsize", [2, 4, 8])
def test_the_twins_of_the_unshuffles_give_the_same_bytes(itemsize):
    rng = np.random.default_rng(itemsize)
    src = rng.integers(0, 256, 4 * 1000 + 3, dtype=np.uint8)  # a ragged tail of 3 bytes
    assert np.array_equal(_unshuffle_numpy(src, itemsize), _unshuffle(src, itemsize))
    words = src[: 4 * 1000]
    want, got = np.empty(1000, np.uint32), np.empty(1000, np.uint32)
    _unshuffle4(words, want)
    _unshuffle4_numpy(words, got)
    assert np.array_equal(got, want)


def test_twins_are_used_inside_numpy_twins_only_until_numba_has_started():
    x, codes = _field(10, 3, "f8"), np.zeros(10, dtype=np.int64)
    group_sums(x, codes, 1)  # this process: numba has started now
    assert not jit.use_twins()
    with jit.numpy_twins():
        assert not jit.use_twins()  # its start is paid: the compiled loops are faster
    assert jit._TWINS[0] == 0


def test_every_compiled_kernel_of_the_package_is_made_by_jit_njit():
    # a kernel made with numba.njit directly could start numba unseen by use_twins
    import importlib
    import pkgutil

    import numba.core.registry

    import pangeo_hpc

    kernels = []
    for info in pkgutil.walk_packages(pangeo_hpc.__path__, "pangeo_hpc."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, numba.core.registry.CPUDispatcher)
                and value.__module__ == info.name
            ):
                kernels.append(value)
    assert len(kernels) >= 8  # unshuffles, sums, fused reads, regrid, Student's t
    assert all(any(k is made for made in jit._KERNELS) for k in kernels), [
        k.__name__ for k in kernels if not any(k is made for made in jit._KERNELS)
    ]


_RUN = """
import json, sys
from pangeo_hpc import jit
from pangeo_hpc.batch import run_recipe
from pangeo_hpc.batch.chains.recipe_yaml import load
if __name__ == "__main__":
    data, out = sys.argv[1:]
    run_recipe(load("era5-sst-trend"), data=data, out=out, cache=False, start="2000-01",
               end="2000-06", workers=2)
    print(json.dumps({"numba": any(k.signatures for k in jit._KERNELS)}))
"""


def test_a_small_run_gives_the_same_bytes_without_starting_numba(demo_tree, tmp_path):
    """Two fresh processes, the same small run of era5-sst-trend (the trend, anomaly, area
    mean and Nino3.4 of six months): one with the twins (the default limit), one with
    config ``numpy-kernels-bytes`` 0. Only the second starts numba; result.nc's data are
    the same bytes."""
    script = tmp_path / "run.py"
    script.write_text(_RUN)
    started = {}
    for name, limit in (("twins", None), ("numba", "0")):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("DASK_PANGEO_HPC__CLUSTER__NUMPY_KERNELS_BYTES", None)
        if limit is not None:
            env["DASK_PANGEO_HPC__CLUSTER__NUMPY_KERNELS_BYTES"] = limit
        out = tmp_path / name
        done = subprocess.run(
            [sys.executable, str(script), str(demo_tree), str(out)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        started[name] = json.loads(done.stdout.strip().splitlines()[-1])["numba"]
    assert started == {"twins": False, "numba": True}
    import xarray as xr

    with (
        xr.open_dataset(tmp_path / "twins" / "result.nc") as a,
        xr.open_dataset(tmp_path / "numba" / "result.nc") as b,
    ):
        assert sorted(a.data_vars) == sorted(b.data_vars) and len(a.data_vars) >= 4
        for name in a.data_vars:
            assert a[name].values.tobytes() == b[name].values.tobytes(), name
