"""``--anon`` reads a public bucket while the result is written, with credentials, to
another bucket (a real SeaweedFS whose anonymous identity may only read and list
``era5-public``: tests/support/servers.py). The S3 result equals the local run's.

Wrong writer this test was seen to fail on: one that writes the result with the options
it read with (``--anon`` carried over to the output: the server refuses the anonymous
PUT), i.e. :meth:`S3Options.for_writing` left out of ``batch/pipeline/results.py``."""

from __future__ import annotations

import shutil

import dask
import pytest
import xarray as xr

from pangeo_hpc.io.results import open_result
from pangeo_hpc.s3 import options as s3
from tests.support.cli import run_clis
from tests.support.s3env import boto3_client, ensure_bucket
from tests.support.servers import publish_tree

pytestmark = pytest.mark.s3

PUBLIC = "era5-public"  # the server lets anyone read and list this bucket, nothing else
PRIVATE, OUT = "era5-anon-private", "results-anon"
START, END = "2000-01", "2000-03"
#: attributes that say when, by which command and from which copy of the data a result was
#: made: the two runs read the same bytes from two places, so these differ by design
MADE = {"history", "source", "pangeo_hpc_inputs_sha256"}


@pytest.fixture(scope="module")
def trees(seaweedfs, demo_tree, tmp_path_factory) -> tuple[str, str]:
    """Three months of the test tree in the public bucket and in a private one."""
    part = tmp_path_factory.mktemp("anon-upload")
    for month in ("01", "02", "03"):
        shutil.copytree(demo_tree / "2000" / month, part / "2000" / month)
    publish_tree(seaweedfs.storage_options(), part, PUBLIC, "anon-write")
    publish_tree(seaweedfs.storage_options(), part, PRIVATE, "pds")
    return f"s3://{PUBLIC}/anon-write", f"s3://{PRIVATE}/pds"


@pytest.fixture
def aws(aws_chain, tmp_path):
    """The server's keys through the AWS chain (the writer's), the output bucket, a fresh
    index cache."""
    ensure_bucket(aws_chain, OUT)
    with dask.config.set({"pangeo-hpc.s3.index-cache": str(tmp_path / "index")}):
        yield s3.S3Options(endpoint_url=aws_chain.endpoint_url)


def _anonymous(server, method: str, path: str) -> int:
    """The status of an unsigned request to the server."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(
        f"{server.endpoint_url}/{path}", method=method, data=b"1" if method == "PUT" else None
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _run(data: str, out: str, *extra: str) -> list[str]:
    return ["era5-sst-mean", "--data", data, "--start", START, "--end", END, "--out", out,
            "--workers", "1", "--no-progress", "--no-cache", *extra]  # fmt: skip


def test_anon_read_of_a_public_bucket_with_a_credentialed_s3_write_equals_the_local_run(
    trees, aws, seaweedfs, demo_tree, tmp_path, monkeypatch
):
    public, private = trees
    monkeypatch.setenv("DASK_PANGEO_HPC__S3__INDEX_CACHE", str(tmp_path / "index"))
    ep = ("--endpoint-url", seaweedfs.endpoint_url)
    url = f"s3://{OUT}/{tmp_path.name}/sst-mean"
    # the server itself: anonymous requests may read the public bucket and nothing else
    assert _anonymous(seaweedfs, "GET", f"{PUBLIC}?list-type=2") == 200
    assert _anonymous(seaweedfs, "GET", f"{PRIVATE}?list-type=2") == 403
    assert _anonymous(seaweedfs, "PUT", f"{OUT}/{tmp_path.name}/x") == 403

    local, remote, private_anon = run_clis(
        _run(str(demo_tree), str(tmp_path / "local")),
        _run(public, url, "--anon", *ep),
        _run(private, str(tmp_path / "denied"), "--anon", *ep),
        cwd=tmp_path,
    )
    assert local.returncode == 0, local.stderr
    assert remote.returncode == 0, remote.stderr
    # --anon did reach the reads: the same run on the private copy is refused
    assert private_anon.returncode == 2, private_anon.stderr
    assert "denied" in private_anon.stderr and PRIVATE in private_anon.stderr
    assert len(private_anon.stderr.strip().splitlines()) == 1, private_anon.stderr
    assert not (tmp_path / "denied").exists()
    # written with the keys: the run's objects carry the mark, the manifest lists them
    head = boto3_client(seaweedfs).head_object(
        Bucket=OUT, Key=f"{tmp_path.name}/sst-mean/summary.json"
    )
    assert head["Metadata"]["pangeo-hpc"].startswith("written-by pangeo-hpc")
    got = open_result(url, aws)
    with xr.open_dataset(tmp_path / "local" / "result.nc") as here:
        want = here.load()
    # the same bytes read by other paths (byte ranges, other chunks): sums in another order
    xr.testing.assert_allclose(got.drop_attrs(), want.drop_attrs(), rtol=1e-12, atol=0)
    assert set(got.variables) == set(want.variables)
    for name in got.variables:
        assert got[name].attrs == want[name].attrs, name
    assert got.attrs["source"] == public
    assert {k: v for k, v in got.attrs.items() if k not in MADE} == {
        k: v for k, v in want.attrs.items() if k not in MADE
    }
