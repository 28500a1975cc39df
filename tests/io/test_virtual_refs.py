"""``index --format icechunk|kerchunk`` on a real SeaweedFS server: Icechunk virtual
references (VirtualiZarr) and kerchunk JSON to the demo NetCDF objects both open in
xarray and give, bit for bit, the values of the NetCDF files read directly; a recipe runs
on the repository as a ``store:``."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import dask
import icechunk
import numpy as np
import pytest
import xarray as xr
import yaml

from pangeo_hpc.batch.chains.recipe_yaml import find, load
from pangeo_hpc.batch.pipeline.steps import compute, open_inputs
from pangeo_hpc.demo import generate
from pangeo_hpc.io.references import cache_file
from pangeo_hpc.io.stores import open_any_store
from pangeo_hpc.s3 import options as s3
from tests.support.cli import run_cli
from tests.support.servers import publish_tree
from tests.support.trees import TEST_SPEC

pytestmark = pytest.mark.s3

VAR = "sea_surface_temperature"
BUCKET = "era5-virtual"
START, END = "2000-01", "2000-06"


@pytest.fixture(scope="module")
def field_tree(tmp_path_factory) -> Path:
    """Six months of the test tree's daily SST stored one field per HDF5 chunk (as an
    hourly era5-pds file's 24-hour chunks tile its month): chunks that tile the time axis."""
    root = tmp_path_factory.mktemp("era5-fields")
    generate(root, replace(TEST_SPEC, start=START, end=END, hdf5_chunks=(1, 91, 180)), workers=2)
    return root


@pytest.fixture(scope="module")
def s3_tree(seaweedfs, field_tree, demo_tree, tmp_path_factory) -> str:
    """``field_tree`` on s3://era5-virtual/pds, and the demo tree's 2000 (24-day chunks,
    which leave a partial chunk at each month's end) on s3://era5-virtual/pds24
    (tests/support/servers.py publish_tree)."""
    part = tmp_path_factory.mktemp("virtual-upload")
    shutil.copytree(demo_tree / "2000", part / "2000")
    publish_tree(seaweedfs.storage_options(), part, BUCKET, "pds24")
    publish_tree(seaweedfs.storage_options(), field_tree, BUCKET, "pds")
    return f"s3://{BUCKET}/pds"


@pytest.fixture
def aws(aws_chain, monkeypatch, tmp_path):
    monkeypatch.setenv("DASK_PANGEO_HPC__S3__INDEX_CACHE", str(tmp_path / "index"))
    with dask.config.set({"pangeo-hpc.s3.index-cache": str(tmp_path / "index")}):
        yield s3.S3Options.resolve(endpoint_url=aws_chain.endpoint_url)


def _direct(tree: Path) -> xr.DataArray:
    """The months read from the NetCDF files themselves (netCDF4, no pangeo-hpc reader)."""
    files = [tree / f"2000/{m:02d}/data/{VAR}.nc" for m in range(1, 7)]
    with xr.open_mfdataset(files, combine="by_coords", engine="netcdf4") as ds:
        return ds[VAR].load()


def test_index_writes_icechunk_and_kerchunk_references_equal_to_the_files(
    s3_tree, field_tree, aws, seaweedfs, tmp_path
):
    ep = ("--endpoint-url", seaweedfs.endpoint_url)
    period = ("--start", START, "--end", END, "--variable", VAR)
    out = tmp_path / "sst.icechunk"
    made = run_cli("index", s3_tree, *period, *ep, "--format", "icechunk", "--out", str(out),
                   cwd=tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "Icechunk virtual references to 6 objects" in made.stdout
    kerchunk = run_cli("index", s3_tree, *period, *ep, "--format", "kerchunk", "--workers", "1",
                       cwd=tmp_path)  # fmt: skip
    assert kerchunk.returncode == 0, kerchunk.stderr
    direct = _direct(field_tree)

    # Icechunk, with xarray alone: every chunk a virtual reference into the objects
    storage = icechunk.local_filesystem_storage(str(out))
    prefix = f"s3://{BUCKET}/"
    creds = icechunk.s3_credentials(access_key_id=seaweedfs.key, secret_access_key=seaweedfs.secret)
    repo = icechunk.Repository.open(
        storage, authorize_virtual_chunk_access=icechunk.containers_credentials({prefix: creds})
    )
    session = repo.readonly_session(branch="main")
    assert session.all_virtual_chunk_locations()  # references, not copies
    plain = xr.open_zarr(session.store, consolidated=False)[VAR].load()
    np.testing.assert_array_equal(plain.values, direct.values)
    np.testing.assert_array_equal(plain.time0.values, direct.time0.values)

    # kerchunk: one JSON per object, opened by xarray's kerchunk engine
    remote = {"remote_protocol": "s3", "remote_options": aws.storage_options()}
    months = []
    for m in range(1, 7):
        url = f"{s3_tree}/2000/{m:02d}/data/{VAR}.nc"
        with xr.open_dataset(
            str(cache_file(url)), engine="kerchunk", storage_options=remote
        ) as one:
            months.append(one[VAR].load())
    np.testing.assert_array_equal(xr.concat(months, "time0").values, direct.values)

    # the repository as a recipe's store: (pangeo-hpc's reader), same values
    ds = open_any_store(str(out), [VAR], s3=aws)
    assert ds.encoding["source_store"]["snapshot"] == session.snapshot_id
    np.testing.assert_array_equal(ds[VAR].values, direct.values)

    # a second index replaces the repository it wrote (a new snapshot)
    again = run_cli("index", s3_tree, *period, *ep, "--format", "icechunk", "--out", str(out),
                    cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert icechunk.Repository.open(storage).lookup_branch("main") != session.snapshot_id


def test_a_recipe_on_virtual_references_equals_the_tree(
    s3_tree, field_tree, aws, seaweedfs, tmp_path
):
    out = tmp_path / "sst.icechunk"
    ep = ("--endpoint-url", seaweedfs.endpoint_url)
    made = run_cli("index", s3_tree, "--variable", VAR, "--start", START, "--end", END, *ep,
                   "--format", "icechunk", "--out", str(out), cwd=tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr
    doc = yaml.safe_load(find("era5-sst-mean").read_text())
    doc["dataset"] = {"variable": VAR, "store": str(out)}
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(doc))
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
        ) as c,
        Client(c) as cl,
    ):
        on_store = compute(open_inputs(load(tmp_path / "r.yaml"), s3=aws), cl, cache=False)
        tree = open_inputs("era5-sst-mean", data=field_tree, start=START, end=END)
        on_tree = compute(tree, cl, cache=False)
    for name in on_tree.result.data_vars:
        np.testing.assert_allclose(on_store.result[name].values, on_tree.result[name].values,
                                   rtol=1e-12, atol=0)  # fmt: skip


def test_index_icechunk_refuses_bad_input_and_writes_nothing(s3_tree, aws, seaweedfs, tmp_path):
    ep = ("--endpoint-url", seaweedfs.endpoint_url)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    cases = [
        (("--format", "icechunk", "--out", str(tmp_path / "x")), "give --variable NAME and --out"),
        (("--format", "icechunk", "--variable", VAR, "--out", str(mine)), "notes.txt"),
        (("--variable", VAR, "--out", str(tmp_path / "y")), "--out is for --format icechunk"),
    ]
    partial = f"s3://{BUCKET}/pds24"
    cases += [  # a month of 31 days in chunks of 24: no regular chunk grid; nothing written
        (
            ("--format", "icechunk", "--variable", VAR, "--out", str(tmp_path / "x"), partial),
            f"{partial}/2000/01/data/{VAR}.nc holds 31 steps of {VAR!r} in chunks of 24",
        )
    ]
    for flags, words in cases:
        url = flags[-1] if flags[-1] == partial else s3_tree
        flags = flags[:-1] if flags[-1] == partial else flags
        done = run_cli("index", url, *flags, *ep, cwd=tmp_path)
        assert done.returncode == 2, (flags, done.stderr)
        assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
