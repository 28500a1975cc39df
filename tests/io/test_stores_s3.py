"""Zarr stores and Icechunk repositories on S3 (a real SeaweedFS server) as a recipe's
``store:``: the values of the local tree, the credentials and endpoint of every S3
source, and one month appended read alone (chunk ETags for Zarr, the snapshots' chunk
changes for Icechunk)."""

from __future__ import annotations

import json

import dask
import numpy as np
import pytest
import xarray as xr
import yaml
from distributed import Client, LocalCluster

from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.batch.pipeline.steps import compute, open_inputs
from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.io.stores import open_any_store
from pangeo_hpc.s3 import icechunk_access
from pangeo_hpc.s3 import options as s3
from tests.support.arco import arco_dataset, write_icechunk, write_zarr
from tests.support.cli import run_cli
from tests.support.servers import publish_tree

pytestmark = pytest.mark.s3

SST = "sea_surface_temperature"
BUCKET = "arco-stores"


@pytest.fixture
def aws(aws_chain):
    return s3.S3Options.resolve(endpoint_url=aws_chain.endpoint_url)


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def _recipe(tmp_path, store: str) -> str:
    doc = {
        "name": "s3-store-sst",
        "dataset": {"variable": SST, "store": store},
        "results": {
            "map": [{"time_mean": {}}],
            "series": [{"area_mean": {}}, {"resample": {"freq": "monthly", "stat": "mean"}}],
        },
    }
    path = tmp_path / "s3-store-sst.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_zarr_and_icechunk_on_s3_read_as_the_tree_and_append_incrementally(
    demo_tree, aws, seaweedfs, client, tmp_path
):
    first = arco_dataset(demo_tree, [SST], "2000-01", "2000-03")
    more = arco_dataset(demo_tree, [SST], "2000-04", "2000-04")
    write_zarr(first, tmp_path / "arco.zarr")
    publish_tree(seaweedfs.storage_options(), tmp_path / "arco.zarr", BUCKET, "arco.zarr")
    zarr_url = f"s3://{BUCKET}/arco.zarr"
    ice_url = f"s3://{BUCKET}/arco.icechunk"
    storage = icechunk_access.storage(ice_url, aws)
    write_icechunk(first, storage)
    tree = open_era5(SST, "2000-01", "2000-03", source=demo_tree)
    for url, access in ((zarr_url, "zarr-s3"), (ice_url, "icechunk-s3")):
        ds = open_any_store(url, [SST], s3=aws)
        assert ds.encoding["source_access"] == access
        np.testing.assert_array_equal(ds[SST].values, tree[SST].values)

    with dask.config.set({"pangeo-hpc.s3.endpoint-url": seaweedfs.endpoint_url}):
        for url in (zarr_url, ice_url):
            recipe = _recipe(tmp_path, url)
            cache = StateCache(tmp_path / f"cache-{url.rsplit('.', 1)[-1]}")
            before = compute(open_inputs(recipe, s3=aws), client, cache=cache)
            assert (before.reads.files_read, before.reads.files_reused) == (3, 0)
            if url == zarr_url:
                write_zarr(more, url, append=True, storage_options=seaweedfs.storage_options())
            else:
                write_icechunk(more, storage, append=True)
            after = compute(open_inputs(recipe, s3=aws), client, cache=cache)
            assert (after.reads.files_read, after.reads.files_reused) == (1, 3), url
            whole = compute(open_inputs(recipe, s3=aws), client, cache=False)
            for name in whole.result.data_vars:
                xr.testing.assert_allclose(after.result[name], whole.result[name], rtol=1e-6)


def test_cli_runs_a_recipe_on_an_s3_repository(demo_tree, aws, seaweedfs, tmp_path):
    """``--endpoint-url`` applies to a recipe whose ``store:`` is on S3 (no ``--data``);
    the summary records the snapshot read, and no credential."""
    url = f"s3://{BUCKET}/cli.icechunk"
    snapshot = write_icechunk(
        arco_dataset(demo_tree, [SST], "2001-01", "2001-02"), icechunk_access.storage(url, aws)
    )
    out = tmp_path / "result"
    done = run_cli(_recipe(tmp_path, url), "--out", str(out), "--endpoint-url",
                   seaweedfs.endpoint_url, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = (out / "summary.json").read_text()
    assert seaweedfs.secret not in text and seaweedfs.secret not in done.stdout + done.stderr
    store = json.loads(text)["provenance"]["inputs"]["store"]
    assert store == {"url": url, "kind": "icechunk", "snapshot": snapshot, "branch": "main"}
