"""Outputs and caches that cannot be written are found before the work, not after (issue 28).

Each case ran the whole recipe and then failed with a traceback and exit 1: a read-only
cache folder (``EROFS`` from ``mkstemp``), a read-only parent of ``--out``, an ``--out``
that is a mount point (``EBUSY`` from ``os.replace``: every container bind mount), and an
``--out`` with a byte that is not UTF-8. Now: a cache that cannot be written turns caching
off with one warning and the run goes on; a bad ``--out`` is one line and exit 2 before any
cluster starts, with nothing written; a mount point is filled in place. The file systems
are real (a read-only tmpfs, a bind mount), so these tests run as root; CI runs them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import yaml

from pangeo_hpc.batch.incremental.state_cache import CacheWarning, StateCache
from tests.support.needs import CI, need_root
from tests.support.paths import ROOT


def _mount(*args: str, what: str) -> None:
    need_root(what)
    r = subprocess.run(["mount", *args], capture_output=True, text=True)
    if r.returncode != 0:
        if CI:
            pytest.fail(f"{what} failed under CI=true: {r.stderr.strip()}")
        pytest.skip(f"cannot mount here ({what}): {r.stderr.strip()}")


def _mounted(where: Path) -> bool:
    """Whether something is mounted on ``where`` (util-linux's ``mountpoint``, which sees
    bind mounts of the same file system)."""
    return subprocess.run(["mountpoint", "-q", str(where)]).returncode == 0


def _umount(where: Path) -> None:
    subprocess.run(["umount", str(where)], check=True)


@pytest.fixture
def read_only(tmp_path) -> Iterator[Path]:
    """An empty read-only tmpfs, private to this user (``0700``), unmounted afterwards."""
    where = tmp_path / "ro"
    where.mkdir()
    _mount("-t", "tmpfs", "-o", "ro,size=1m,mode=0700", "tmpfs", str(where), what="a tmpfs")
    try:
        yield where
    finally:
        _umount(where)


@pytest.fixture
def bind_mount(tmp_path) -> Iterator[Path]:
    """An empty folder bind-mounted on another, as ``docker run -v`` mounts ``--out``."""
    source, where = tmp_path / "host-out", tmp_path / "mnt"
    source.mkdir()
    where.mkdir()
    _mount("--bind", str(source), str(where), what="a bind mount")
    try:
        yield where
    finally:
        _umount(where)


@pytest.fixture(scope="module")
def recipe(tmp_path_factory) -> Path:
    """Two years of ten days of SST on a 3x4 grid and a time mean of them."""
    folder = tmp_path_factory.mktemp("recipe")
    data = folder / "data"
    data.mkdir()
    for year in (2000, 2001):
        days = np.arange(np.datetime64(f"{year}-01-01"), np.datetime64(f"{year}-01-11"))
        with netCDF4.Dataset(data / f"sst_{year}.nc", "w", format="NETCDF4") as nc:
            nc.createDimension("time", days.size)
            nc.createDimension("lat", 3)
            nc.createDimension("lon", 4)
            t = nc.createVariable("time", "f8", ("time",))
            t.setncatts({"units": "days since 2000-01-01", "calendar": "standard"})
            t[:] = (days - np.datetime64("2000-01-01")).astype(int)
            lat = nc.createVariable("lat", "f4", ("lat",))
            lat.units = "degrees_north"
            lat[:] = [-30.0, 0.0, 30.0]
            lon = nc.createVariable("lon", "f4", ("lon",))
            lon.units = "degrees_east"
            lon[:] = [0.0, 90.0, 180.0, 270.0]
            sst = nc.createVariable("sst", "f4", ("time", "lat", "lon"))
            sst.units = "K"
            sst[:] = 290 + np.random.default_rng(year).normal(size=(days.size, 3, 4))
    doc = {
        "name": "tiny",
        "dataset": {"variable": "sst", "files": str(data / "sst_*.nc")},
        "steps": [{"time_mean": {}}],
    }
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _cli(*args: str | bytes, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DASK_PANGEO_HPC__CACHE__FOLDER": str(cache),
        "DASK_PANGEO_HPC__CATALOG__CACHE": "false",
    }
    return subprocess.run(
        [sys.executable, "-m", "pangeo_hpc.run", *args, "--no-progress"],
        cwd=cwd, env=env, capture_output=True, text=True, errors="replace", timeout=600,
    )  # fmt: skip


def _answer(out: Path) -> np.ndarray:
    with xr.open_dataset(out / "result.nc") as ds:
        return ds["sst"].values


def _no_cache_answer(recipe: Path, tmp_path: Path) -> np.ndarray:
    out = tmp_path / "fresh"
    r = _cli(str(recipe), "--out", str(out), "--no-cache", cwd=tmp_path, cache=tmp_path / "no")
    assert r.returncode == 0, r.stderr[-3000:]
    return _answer(out)


def _one_line_exit_2(r: subprocess.CompletedProcess, *words: str) -> str:
    """The one error line of a bad input, printed before any cluster started."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr[-3000:])
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "cluster:" not in r.stdout and "states:" not in r.stdout, r.stdout
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------------------------
# a cache that cannot be written


@pytest.mark.slow
def test_a_read_only_cache_folder_turns_caching_off_and_the_run_goes_on(
    recipe, read_only, tmp_path
):
    fresh = _no_cache_answer(recipe, tmp_path)
    out = tmp_path / "out"
    r = _cli(str(recipe), "--out", str(out), cwd=tmp_path, cache=read_only)
    assert r.returncode == 0, r.stderr[-3000:]
    warned = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(warned) == 1, r.stderr
    assert warned[0].startswith("warning: state cache: ") and "read-only" in warned[0], warned
    assert "this run is not cached" in warned[0]
    assert np.allclose(_answer(out), fresh, rtol=1e-6, atol=0)
    assert not any(read_only.iterdir())


def _state() -> dict[str, np.ndarray]:
    return {"sum": np.arange(12.0).reshape(3, 4), "count": np.full((3, 4), 2)}


def test_a_cache_remounted_read_only_during_a_run_stops_caching_at_the_next_put(tmp_path):
    """``os.access`` said yes (the folder was writable at the start); then the file system
    went read-only: the put's ``EROFS`` turns caching off, the entries there still read."""
    folder = tmp_path / "states"
    folder.mkdir(mode=0o700)
    _mount("--bind", str(folder), str(folder), what="a bind mount")
    try:
        cache = StateCache(folder)
        key1, key2 = "1" * 64, "2" * 64
        assert cache.put(key1, _state(), {"i": 1})
        _mount("-o", "remount,ro,bind", str(folder), what="a read-only remount")
        with pytest.warns(CacheWarning) as caught:
            assert cache.put(key2, _state(), {"i": 2}) is False
            assert cache.put(key2, _state(), {"i": 2}) is False  # no second warning
        assert len(caught) == 1, [str(w.message) for w in caught]
        assert "cannot be written (Read-only file system)" in str(caught[0].message)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            arrays, meta = cache.get(key1)  # a hit is still read
        assert meta == {"i": 1}
        np.testing.assert_array_equal(arrays["sum"], _state()["sum"])
    finally:
        _umount(folder)


# --------------------------------------------------------------------------------------------
# --out


def test_a_read_only_out_parent_is_one_line_and_exit_2_before_the_cluster(
    recipe, read_only, tmp_path
):
    cache = tmp_path / "states"
    r = _cli(str(recipe), "--out", str(read_only / "res"), cwd=tmp_path, cache=cache)
    line = _one_line_exit_2(r, f"--out '{read_only / 'res'}'", "read-only", "nothing was written")
    assert "give an output folder you can write" in line
    assert not any(read_only.iterdir())
    assert not cache.exists()  # nothing written, the cache included


def test_an_out_that_is_not_utf8_is_one_line_and_exit_2(recipe, tmp_path):
    cache = tmp_path / "states"
    out = os.fsencode(tmp_path) + b"/r\xe9sultats"  # Latin-1 é: not UTF-8
    r = _cli(str(recipe), b"--out", out, cwd=tmp_path, cache=cache)
    _one_line_exit_2(r, "--out b'", "r\\xe9sultats'", "not valid UTF-8", "nothing was written")
    assert sorted(os.listdir(tmp_path)) == [], os.listdir(tmp_path)


@pytest.mark.slow
def test_an_out_that_is_a_mount_point_is_filled_in_place(recipe, bind_mount, tmp_path):
    assert _mounted(bind_mount) and not os.path.ismount(bind_mount)  # the same file system
    fresh = _no_cache_answer(recipe, tmp_path)
    cache = tmp_path / "states"
    for run in ("first", "again, over the first"):  # --no-cache: computed, not served
        more = ["--no-cache"] if run != "first" else []
        r = _cli(str(recipe), "--out", str(bind_mount), *more, cwd=tmp_path, cache=cache)
        assert "reused:" not in r.stdout
        assert r.returncode == 0, (run, r.stderr[-3000:])
        assert "Traceback" not in r.stderr, r.stderr
        assert sorted(os.listdir(bind_mount)) == [
            "plot.png",
            "report.html",
            "result.nc",
            "summary.json",
        ], run
        assert np.allclose(_answer(bind_mount), fresh, rtol=1e-6, atol=0), run
    host = tmp_path / "host-out"  # the files are on the mounted folder, as the host sees it
    assert sorted(os.listdir(host)) == ["plot.png", "report.html", "result.nc", "summary.json"]
    assert _mounted(bind_mount)  # still mounted: not renamed away

    from pangeo_hpc.write.in_place import is_mount_point

    assert is_mount_point(bind_mount)  # which os.path.ismount misses


def test_a_mount_point_holding_a_users_files_is_refused(recipe, bind_mount, tmp_path):
    (bind_mount / "notes.txt").write_text("mine")
    r = _cli(str(recipe), "--out", str(bind_mount), cwd=tmp_path, cache=tmp_path / "states")
    _one_line_exit_2(r, "did not write", "notes.txt")
    assert os.listdir(bind_mount) == ["notes.txt"]
    assert (bind_mount / "notes.txt").read_text() == "mine"
