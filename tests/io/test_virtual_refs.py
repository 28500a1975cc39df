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
from tests.support.s3env import ensure_bucket
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


OUT = "virtual-out"  # the repositories' bucket: beside the objects, never inside them


def _s3_repo(seaweedfs, url: str) -> icechunk.Repository:
    """The repository at ``url`` as a user opens it: icechunk's S3 storage, the server's
    keys for the repository and for the objects its references point to."""
    bucket, prefix = s3.split_url(url)
    keys = {"access_key_id": seaweedfs.key, "secret_access_key": seaweedfs.secret}
    storage = icechunk.s3_storage(
        bucket=bucket, prefix=prefix, endpoint_url=seaweedfs.endpoint_url, allow_http=True,
        force_path_style=True, region="us-east-1", **keys,
    )  # fmt: skip
    creds = icechunk.containers_credentials({f"s3://{BUCKET}/": icechunk.s3_credentials(**keys)})
    return icechunk.Repository.open(storage, authorize_virtual_chunk_access=creds)


def _keys_under(client, prefix: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=OUT, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def test_index_writes_icechunk_references_to_s3_equal_to_the_files(
    s3_tree, field_tree, aws, aws_chain, seaweedfs, tmp_path, monkeypatch
):
    """``--out s3://``: the repository opens with icechunk and xarray alone and equals the
    files; a second index commits the rebuilt references on top (the local rebuild's
    replacement, with Icechunk's commit as the atomic step); a failed rebuild leaves the
    tip, a failed first build leaves no repository; a foreign or other-kind prefix is
    refused in one line, exit 2, nothing written."""
    from pangeo_hpc.io import virtual_refs

    client = ensure_bucket(aws_chain, OUT)
    ep = ("--endpoint-url", seaweedfs.endpoint_url)
    period = ("--start", START, "--end", END, "--variable", VAR)
    url = f"s3://{OUT}/{tmp_path.name}/sst.icechunk"
    made = run_cli("index", s3_tree, *period, *ep, "--format", "icechunk", "--out", url,
                   cwd=tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert f"Icechunk virtual references to 6 objects in {url}" in made.stdout
    assert not list(tmp_path.rglob("*icechunk*"))  # nothing local, not even a temporary
    direct = _direct(field_tree)
    session = _s3_repo(seaweedfs, url).readonly_session(branch="main")
    assert session.all_virtual_chunk_locations()  # references into the objects, not copies
    plain = xr.open_zarr(session.store, consolidated=False)[VAR].load()
    np.testing.assert_array_equal(plain.values, direct.values)
    np.testing.assert_array_equal(plain.time0.values, direct.time0.values)
    ds = open_any_store(url, [VAR], s3=aws)  # a recipe's store:
    assert ds.encoding["source_store"]["snapshot"] == session.snapshot_id
    np.testing.assert_array_equal(ds[VAR].values, direct.values)

    # a second index: one new commit on top whose contents are the rebuilt references
    fewer = ("--start", START, "--end", "2000-03", "--variable", VAR)
    again = run_cli("index", s3_tree, *fewer, *ep, "--format", "icechunk", "--out", url,
                    cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr
    repo = _s3_repo(seaweedfs, url)
    history = [s.id for s in repo.ancestry(branch="main")]
    assert history[1] == session.snapshot_id and len(history) == 3  # init, first, second
    rebuilt = xr.open_zarr(repo.readonly_session(branch="main").store, consolidated=False)
    np.testing.assert_array_equal(rebuilt[VAR].values, direct.values[: rebuilt.sizes["time0"]])
    assert rebuilt.sizes["time0"] == 31 + 29 + 31  # replaced, not appended to

    def fail(session) -> None:
        raise RuntimeError("the references failed after the write started")

    monkeypatch.setattr(virtual_refs, "BEFORE_COMMIT", [fail])
    stamps = _stamps_of(s3_tree, aws)
    with pytest.raises(RuntimeError):
        virtual_refs.build_icechunk(stamps, aws, url, variable=VAR, source=s3_tree)
    assert _s3_repo(seaweedfs, url).lookup_branch("main") == history[0]  # the tip kept
    new = f"s3://{OUT}/{tmp_path.name}/new.icechunk"
    with pytest.raises(RuntimeError):
        virtual_refs.build_icechunk(stamps, aws, new, variable=VAR, source=s3_tree)
    assert _keys_under(client, f"{tmp_path.name}/new.icechunk/") == []
    monkeypatch.setattr(virtual_refs, "BEFORE_COMMIT", [])

    # refused, one line, exit 2, nothing written: a user's object, a result repository
    client.put_object(Bucket=OUT, Key=f"{tmp_path.name}/mine/notes.txt", Body=b"mine")
    result_repo = f"s3://{OUT}/{tmp_path.name}/result.icechunk"
    from pangeo_hpc.write import icechunk_out

    icechunk_out.commit_dataset(result_repo, xr.Dataset({"x": ("t", [1.0])}), message="r",
                                metadata={}, s3=aws)  # fmt: skip
    before = _keys_under(client, f"{tmp_path.name}/")
    for target, words in [
        (f"s3://{OUT}/{tmp_path.name}/mine", "holds objects that are no Icechunk repository"),
        (result_repo, "holds an icechunk repository of pangeo-hpc, not an icechunk-references"),
        (f"{s3_tree}/refs", f"lies inside the input {s3_tree!r}"),
    ]:
        done = run_cli("index", s3_tree, *period, *ep, "--format", "icechunk", "--out", target,
                       cwd=tmp_path)  # fmt: skip
        assert done.returncode == 2, (target, done.stderr)
        assert words in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert _keys_under(client, f"{tmp_path.name}/") == before
    assert client.list_objects_v2(Bucket=BUCKET, Prefix="pds/refs/").get("KeyCount", 0) == 0


def _stamps_of(url: str, opts: s3.S3Options) -> list:
    from pangeo_hpc.io.s3_objects import objects_to_index

    return objects_to_index(url, opts, variable=VAR, start=START, end=END)
