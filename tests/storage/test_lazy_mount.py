"""A real lazily loading mount, as FSx for Lustre's S3 import is: demo data in the bucket
era5-pds of a SeaweedFS S3 server, mounted with rclone (``--vfs-cache-mode full``): the
listing shows every size at once, and the bytes come from S3 on first read into rclone's
cache, which is where hydration is observed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.recipes import global_mean
from pangeo_hpc.storage import detect, hydration, warmup
from tests.support.servers import RcloneMount, publish_tree

pytestmark = pytest.mark.s3

BUCKET = "era5-pds"
YEARS = ("2000", "2001")


@pytest.fixture(scope="module")
def era5_bucket(seaweedfs, demo_tree, tmp_path_factory) -> list[str]:
    """Two years of the demo tree published in s3://era5-pds in the ERA5 key layout."""
    src = tmp_path_factory.mktemp("era5-pds-src")
    for year in YEARS:
        shutil.copytree(demo_tree / year, src / year)
    return publish_tree(seaweedfs.storage_options(), src, BUCKET)


@pytest.fixture
def lazy(seaweedfs, era5_bucket, fuse, tmp_path):
    """s3://era5-pds mounted with rclone, with an empty cache of its own."""
    with RcloneMount.of(seaweedfs, BUCKET, tmp_path / "mnt", tmp_path / "cache") as mount:
        yield mount


def test_the_mount_is_detected_as_fuse(lazy):
    info = detect(lazy.mountpoint)
    assert info.kind == "fuse" and info.mount_type == "fuse.rclone" and info.locks_unreliable


def test_hydration_before_and_after_warmup(lazy):
    before = hydration(lazy.mountpoint)
    assert before.method == "rclone cache"
    assert before.counts["released"] == 24 and before.bytes_loaded == 0
    assert before.bytes_total == sum(
        f.stat().st_size for f in Path(lazy.mountpoint).rglob("*.nc")
    )  # the listing knows every size before any byte is read
    report = warmup(lazy.mountpoint, workers=4)
    assert report.files == 24 and report.bytes == before.bytes_total and not report.failed
    after = hydration(lazy.mountpoint)
    assert after.counts["loaded"] == 24 and after.bytes_loaded == after.bytes_total
    some = "2001/07/data/sea_surface_temperature.nc"
    assert lazy.cached_bytes(some) == (Path(lazy.mountpoint) / some).stat().st_size


def test_warmup_resumes_where_it_stopped(lazy):
    files = sorted(Path(lazy.mountpoint).rglob("*.nc"))
    first = warmup(lazy.mountpoint, files=files[:10])
    assert first.files == 10
    middle = hydration(lazy.mountpoint)
    assert middle.counts["loaded"] == 10 and middle.counts["released"] == 14
    rest = warmup(lazy.mountpoint)
    assert rest.skipped == 10 and rest.files == 14
    assert hydration(lazy.mountpoint).counts["loaded"] == 24


def test_a_vanished_file_is_reported_and_the_others_warm(lazy, seaweedfs):
    fs = seaweedfs.filesystem()
    key = f"{BUCKET}/2000/03/data/sea_surface_temperature.nc"
    saved = fs.cat_file(key)
    files = sorted(Path(lazy.mountpoint).rglob("*.nc"))  # listed while it still exists
    fs.rm(key)
    try:
        report = warmup(lazy.mountpoint, files=files, workers=2)
    finally:
        fs.pipe_file(key, saved)
    failed = dict(report.failed)
    assert list(failed) == [str(Path(lazy.mountpoint) / "2000/03/data/sea_surface_temperature.nc")]
    assert report.files == 23


def test_recipe_results_are_identical_on_the_mount_and_locally(lazy, demo_tree):
    def answer(root):
        sst = open_era5(source=root, start="2000-01", end="2001-12").sea_surface_temperature
        return global_mean(sst).compute(scheduler="threads"), sst.mean("time0").compute()

    (gm_mount, map_mount), (gm_local, map_local) = answer(lazy.mountpoint), answer(demo_tree)
    xr.testing.assert_identical(gm_mount, gm_local)
    np.testing.assert_array_equal(map_mount.values, map_local.values)
    assert hydration(lazy.mountpoint).counts["loaded"] == 24  # the recipe hydrated them


def test_hdf5_locking_is_turned_off_on_the_mount(lazy, monkeypatch):
    """open_era5 turns HDF5 file locking off on FUSE, Lustre and NFS. On this rclone mount
    HDF5 opens files with locking on as well (rclone accepts the locks), so the failure that
    Lustre without flock shows cannot be reproduced here: both settings are checked to open."""
    monkeypatch.delenv("HDF5_USE_FILE_LOCKING", raising=False)
    open_era5(source=lazy.mountpoint, start="2000-01", end="2000-01")
    assert os.environ["HDF5_USE_FILE_LOCKING"] == "FALSE"
    path = Path(lazy.mountpoint) / "2000/01/data/sea_surface_temperature.nc"
    for value in ("TRUE", "FALSE"):
        env = {**os.environ, "HDF5_USE_FILE_LOCKING": value}
        r = subprocess.run(
            [sys.executable, "-c", f"import h5py; h5py.File({str(path)!r}, 'r')"],
            env=env,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr


def test_warmup_spread_over_dask_workers(lazy):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, processes=False, dashboard_address=None) as lc, Client(lc) as c:
        report = warmup(lazy.mountpoint, client=c)
    assert report.method == "dask workers" and report.files == 24
    assert hydration(lazy.mountpoint).counts["loaded"] == 24


def test_stage_from_s3_verifies_and_resumes(
    seaweedfs, era5_bucket, demo_tree, tmp_path, monkeypatch
):
    from pangeo_hpc.s3 import options as s3
    from pangeo_hpc.storage.stage import stage
    from tests.support.s3env import aws_environment

    aws_environment(monkeypatch, seaweedfs, tmp_path)
    opts = s3.S3Options.resolve(endpoint_url=seaweedfs.endpoint_url)
    report = stage(f"s3://{BUCKET}/2001", tmp_path / "fsx", s3=opts, range_size=1 << 20)
    assert report.files == 12 and not report.failed
    assert report.checks == {"size and MD5 = ETag": 12}
    for src in (demo_tree / "2001").rglob("*.nc"):
        assert (
            tmp_path / "fsx" / src.relative_to(demo_tree / "2001")
        ).read_bytes() == src.read_bytes()
    assert stage(f"s3://{BUCKET}/2001", tmp_path / "fsx", s3=opts).skipped == 12
