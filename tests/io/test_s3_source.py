"""ERA5 straight from S3 (a real SeaweedFS server): direct, through byte-range indexes, and
the same answers as from local files, bit for bit."""

from __future__ import annotations

import json
import re
import shutil

import dask
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.errors import DataNotFoundError, InputError
from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.io.references import build_index, cache_file, load_refs
from pangeo_hpc.recipes import global_mean
from pangeo_hpc.s3 import options as s3
from tests.support.cli import run_cli, run_clis
from tests.support.s3env import forget_s3_clients
from tests.support.servers import free_port, publish_tree

pytestmark = pytest.mark.s3

VAR = "sea_surface_temperature"
START, END = "2000-01", "2001-12"  # 24 monthly files of the 2-degree test tree
PRIVATE, PUBLIC = "era5-mirror", "era5-public"  # the server lets anyone read era5-public


@pytest.fixture(scope="module")
def s3_tree(seaweedfs, demo_tree, tmp_path_factory) -> str:
    """The test tree's 2000-2001 uploaded to s3://era5-mirror/pds and s3://era5-public."""
    part = tmp_path_factory.mktemp("s3-upload")
    for year in ("2000", "2001"):
        shutil.copytree(demo_tree / year, part / year)
    publish_tree(seaweedfs.storage_options(), part, PRIVATE, "pds")
    publish_tree(seaweedfs.storage_options(), part, PUBLIC)
    return f"s3://{PRIVATE}/pds"


@pytest.fixture
def aws(aws_chain, tmp_path):
    """The server through the AWS chain, a fresh index cache; yields the server's options."""
    with dask.config.set({"pangeo-hpc.s3.index-cache": str(tmp_path / "index")}):
        yield s3.S3Options.resolve(endpoint_url=aws_chain.endpoint_url)


def _stamps(ds: xr.Dataset, opts: s3.S3Options) -> list[Stamp]:
    import obstore

    out = []
    for url in ds.encoding["source_files"]:
        bucket, key = s3.split_url(url)
        meta = obstore.head(opts.store(bucket), key)
        out.append(Stamp.of_object(url, meta["size"], meta["e_tag"], meta.get("version")))
    return out


def _answers(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    sst = ds[VAR]
    # one reduction path for every source, so the data alone are compared bit for bit (a
    # local file's area mean is otherwise summed as it is decoded: tests/io/test_fused_reads.py)
    with dask.config.set({"pangeo-hpc.data.fuse-reads": False}):
        series, mean_map = dask.compute(global_mean(sst), sst.mean("time0"))
    return series.values, mean_map.values


@pytest.mark.smoke
def test_local_direct_and_indexed_agree_bit_for_bit(s3_tree, demo_tree, aws):
    local = open_era5(VAR, START, END, source=demo_tree)
    direct = open_era5(VAR, START, END, source=s3_tree, s3=aws, index="never")
    assert direct.encoding["source_access"] == "s3-direct"
    report = build_index(_stamps(direct, aws), aws)
    assert (report.built, report.reused, report.failed) == (24, 0, [])
    indexed = open_era5(VAR, START, END, source=s3_tree, s3=aws)  # the index, automatically
    assert indexed.encoding["source_access"] == "s3-indexed"

    want = _answers(local)
    for ds in (direct, indexed):
        xr.testing.assert_identical(ds.drop_vars(VAR), local.drop_vars(VAR))
        assert ds[VAR].attrs == local[VAR].attrs
        assert ds[VAR].chunks == local[VAR].chunks
        for got, expected in zip(_answers(ds), want, strict=True):
            np.testing.assert_array_equal(got, expected)  # bit for bit, NaNs in place
    assert indexed.encoding["source_bytes"] == local.encoding["source_bytes"]


@pytest.mark.parametrize(
    "index",
    [
        {"time0": slice(5, 40, 3), "lat": slice(80, 2, -7), "lon": 7},
        {"time0": 400, "lat": slice(None, None, -1)},
        {"time0": [3, 1, 700], "lon": slice(170, 190)},
        {"time0": slice(28, 35), "lat": slice(0, 0)},
    ],
)
def test_indexed_reads_any_hyperslab(s3_tree, demo_tree, aws, index):
    local = open_era5(VAR, START, END, source=demo_tree)
    indexed = open_era5(VAR, START, END, source=s3_tree, s3=aws, index="build")
    assert indexed.encoding["source_access"] == "s3-indexed"
    np.testing.assert_array_equal(indexed[VAR].isel(index).values, local[VAR].isel(index).values)


def test_index_build_uses_the_client_given_and_no_other(s3_tree, aws, monkeypatch):
    """index="build" scans on the workers of the client passed, never on whatever client
    happens to be current (a notebook's): without one, in this process."""
    from distributed import Client, LocalCluster

    from pangeo_hpc.io import catalog

    used = []
    build = catalog.build_index

    def recorded(stamps, opts, **kwargs):
        used.append(kwargs.get("client"))
        return build(stamps, opts, **kwargs)

    def scanned_there(client):  # task prefixes outlive their tasks
        return client.run_on_scheduler(
            lambda dask_scheduler: "scan_or_error" in dask_scheduler.task_prefixes
        )

    monkeypatch.setattr(catalog, "build_index", recorded)
    with LocalCluster(n_workers=1, processes=False) as cluster, Client(cluster) as current:
        ds = open_era5(VAR, "2000-01", "2000-02", source=s3_tree, s3=aws, index="build")
        assert used == [None] and ds.encoding["source_access"] == "s3-indexed"
        assert not scanned_there(current)
        open_era5(VAR, "2000-03", "2000-03", source=s3_tree, s3=aws, index="build", client=current)
        assert used == [None, current] and scanned_there(current)


def test_index_is_reused_and_rebuilt_when_an_object_changes(s3_tree, demo_tree, aws, seaweedfs):
    ds = open_era5(VAR, "2000-01", "2000-03", source=s3_tree, s3=aws, index="never")
    stamps = _stamps(ds, aws)
    assert build_index(stamps, aws).built == 3
    again = build_index(stamps, aws)
    assert (again.built, again.reused) == (0, 3)
    refs = json.loads(cache_file(stamps[0].path).read_text())
    assert refs["version"] == 1 and f"{VAR}/.zarray" in refs["refs"]  # a kerchunk set

    # replace January by February's bytes: new ETag and size, so its index is stale
    fs = seaweedfs.filesystem()
    fs.put_file(str(demo_tree / "2000/02/data" / f"{VAR}.nc"), stamps[0].path)
    changed = _stamps(ds, aws)
    assert changed[0].etag != stamps[0].etag and changed[1:] == stamps[1:]
    assert load_refs(changed[0]) is None and load_refs(changed[1]) is not None
    with pytest.warns(UserWarning, match=r"1 of 3 files .* have no byte-range index"):
        mixed = open_era5(VAR, "2000-01", "2000-03", source=s3_tree, s3=aws)
    assert mixed.encoding["source_access"] == "s3-mixed"
    rebuilt = build_index(changed, aws)
    assert (rebuilt.built, rebuilt.reused) == (1, 2)
    now = open_era5(VAR, "2000-01", "2000-03", source=s3_tree, s3=aws)
    assert now.encoding["source_access"] == "s3-indexed"
    feb = open_era5(VAR, "2000-02", "2000-02", source=demo_tree)
    np.testing.assert_array_equal(now[VAR].values[:29], feb[VAR].values)  # the new bytes
    fs.put_file(str(demo_tree / "2000/01/data" / f"{VAR}.nc"), stamps[0].path)  # restore


def test_public_bucket_anonymously(s3_tree, demo_tree, aws, seaweedfs, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    anon = s3.S3Options(endpoint_url=seaweedfs.endpoint_url, anon=True)
    ds = open_era5(VAR, "2001-01", "2001-02", source=f"s3://{PUBLIC}", s3=anon, index="build")
    local = open_era5(VAR, "2001-01", "2001-02", source=demo_tree)
    np.testing.assert_array_equal(ds[VAR].values, local[VAR].values)
    with pytest.raises(
        InputError, match=r"access to .*era5-mirror.* denied .*not public; drop anon=True"
    ):
        open_era5(VAR, "2001-01", "2001-01", source=s3_tree, s3=anon)
    with pytest.raises(InputError, match="no AWS credentials found .* pass anon=True"):
        s3.S3Options(endpoint_url=seaweedfs.endpoint_url).store(PRIVATE)


def test_credentials_from_a_named_profile(s3_tree, aws, seaweedfs, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    creds = tmp_path / "credentials"
    creds.write_text(
        f"[science]\naws_access_key_id = {seaweedfs.key}\n"
        f"aws_secret_access_key = {seaweedfs.secret}\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    with dask.config.set({"pangeo-hpc.s3.profile": "science"}):
        opts = s3.S3Options.resolve(endpoint_url=seaweedfs.endpoint_url)
    assert opts.profile == "science"
    ds = open_era5(VAR, "2000-01", "2000-01", source=s3_tree, s3=opts, index="build")
    assert ds.encoding["source_access"] == "s3-indexed"
    assert "science" in repr(s3._BotocoreCredentials("science"))
    assert seaweedfs.secret not in repr(opts.store(PRIVATE))


def test_obstore_asks_again_before_refreshing_keys_expire():
    from datetime import UTC, datetime, timedelta

    from botocore.credentials import Credentials, RefreshableCredentials

    def refresh():
        later = datetime.now(UTC) + timedelta(hours=1)
        return {"access_key": "new", "secret_key": "s2", "token": "t2", "expiry_time": str(later)}

    start = datetime.now(UTC)
    # 8 minutes left: inside botocore's mandatory refresh window, so it refreshes first
    creds = RefreshableCredentials("old", "s1", "t1", start + timedelta(minutes=8), refresh, "x")
    got = s3.obstore_credential(creds)
    assert (got["access_key_id"], got["secret_access_key"], got["token"]) == ("new", "s2", "t2")
    # obstore must ask again while botocore's keys still have minutes left
    assert start < got["expires_at"] <= datetime.now(UTC) + timedelta(minutes=10)
    fixed = s3.obstore_credential(Credentials("key", "secret"))
    assert fixed == {
        "access_key_id": "key",
        "secret_access_key": "secret",
        "token": None,
        "expires_at": None,
    }


def test_errors_name_the_value_and_the_fix(s3_tree, aws, seaweedfs, monkeypatch):
    with pytest.raises(InputError, match=r"bucket of 's3://no-such-bucket/x' does not exist"):
        open_era5(VAR, START, END, source="s3://no-such-bucket/x", s3=aws)
    with pytest.raises(
        DataNotFoundError, match=r"2 of 2 months .* missing under .*\(1990-01..1990-02\).*inventory"
    ):
        open_era5(VAR, "1990-01", "1990-02", source=s3_tree, s3=aws)
    with pytest.raises(DataNotFoundError, match="no 'salinity' files under"):
        open_era5("salinity", source=s3_tree, s3=aws)
    down = s3.S3Options(endpoint_url=f"http://127.0.0.1:{free_port()}")
    with dask.config.set({"pangeo-hpc.s3.max-retries": 1}):
        with pytest.raises(InputError, match=r"S3 endpoint http://127.0.0.1:\d+ does not answer"):
            open_era5(VAR, START, START, source=s3_tree, s3=down)
    with pytest.raises(InputError, match="needs a scheme: write e.g. http://"):
        s3.S3Options.resolve(endpoint_url="127.0.0.1:8333")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    forget_s3_clients()
    with pytest.raises(InputError, match=r"access to .* denied .*check AWS_PROFILE"):
        open_era5(VAR, START, START, source=s3_tree, s3=aws)


@pytest.mark.slow
def test_cli_index_then_recipe_from_s3_matches_local(
    s3_tree, demo_tree, aws, seaweedfs, tmp_path, monkeypatch
):
    monkeypatch.setenv("DASK_PANGEO_HPC__S3__INDEX_CACHE", str(tmp_path / "cli-index"))
    ep = ("--endpoint-url", seaweedfs.endpoint_url)
    period = ("--start", "2000-01", "--end", "2000-06")
    cmd = ("index", s3_tree, "--variable", VAR, *period, *ep, "--workers", "1")
    first = run_cli(*cmd, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "index: 6 built, 0 up to date" in first.stdout
    again = run_cli(*cmd, cwd=tmp_path)
    assert "index: 0 built, 6 up to date" in again.stdout, again.stderr

    # the recipe builds its own indexes on its workers, in a fresh cache
    monkeypatch.setenv("DASK_PANGEO_HPC__S3__INDEX_CACHE", str(tmp_path / "recipe-index"))

    def mean_of(name: str, data: str, *extra: str) -> tuple[str, ...]:
        return ("era5-sst-mean", "--data", data, *period, *extra, "--workers", "2",
                "--out", str(tmp_path / name), "--no-progress")  # fmt: skip

    # the two runs at once (conftest.run_clis)
    done = run_clis(
        mean_of("local", str(demo_tree)),
        mean_of("s3", s3_tree, *ep, "--index", "build"),
        cwd=tmp_path,
    )
    runs = {}
    for name, r in zip(("local", "s3"), done, strict=True):
        assert r.returncode == 0, r.stderr
        runs[name] = json.loads((tmp_path / name / "summary.json").read_text())
    assert runs["s3"]["inputs"]["access"] == "s3-indexed"
    assert len(list((tmp_path / "recipe-index").glob("*/*.json"))) == 6  # one per object
    assert runs["s3"]["answer"] == runs["local"]["answer"]
    local_nc = xr.open_dataset(tmp_path / "local/result.nc")
    s3_nc = xr.open_dataset(tmp_path / "s3/result.nc")
    # the same data (bit for bit: test_local_direct_and_indexed_agree_bit_for_bit), reduced
    # in another order of float64 additions since 2026-11-26's merges (3.9e-15 relative;
    # which merge made the local and S3 runs' orders differ is not yet known)
    xr.testing.assert_allclose(local_nc.drop_attrs(), s3_nc.drop_attrs(), rtol=1e-12, atol=0)
    assert seaweedfs.secret not in (tmp_path / "s3/summary.json").read_text()

    bad, missing = run_clis(
        ("era5-sst-mean", "--data", str(demo_tree), "--anon"),
        ("index", "s3://no-such-bucket", *ep),
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and re.search(r"--anon apply to s3:// sources only", bad.stderr)
    assert missing.returncode == 2
    assert "error: bucket of 's3://no-such-bucket' does not exist" in missing.stderr


def test_index_period_without_variable_and_never_into_a_users_folder(
    s3_tree, aws, seaweedfs, tmp_path, monkeypatch
):
    """--start/--end without --variable index every variable's files of those months (they
    used to be ignored: all 24 objects); the cache is never a folder of a user's files."""
    ep = ("--endpoint-url", seaweedfs.endpoint_url)
    monkeypatch.setenv("DASK_PANGEO_HPC__S3__INDEX_CACHE", str(tmp_path / "index"))
    r = run_cli("index", s3_tree, "--start", "2000-03", "--end", "2000-04", *ep,
                "--workers", "1", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert f"index: 2 objects under {s3_tree}" in r.stdout and "index: 2 built" in r.stdout
    assert len(list((tmp_path / "index").glob("*/*.json"))) == 2
    only_end = run_cli("index", s3_tree, "--end", "2000-02", *ep, "--workers", "1", cwd=tmp_path)
    assert f"index: 2 objects under {s3_tree}" in only_end.stdout, only_end.stderr

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("mine")
    monkeypatch.setenv("DASK_PANGEO_HPC__S3__INDEX_CACHE", str(mine))
    r = run_cli("index", s3_tree, "--variable", VAR, "--end", "2000-01", *ep, cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert str(mine) in r.stderr and "did not write" in r.stderr
    assert [p.name for p in mine.iterdir()] == ["thesis.tex"]


def test_chunk_table_reads_edges_and_absent_chunks():
    from pangeo_hpc.io.chunk_table import ChunkTable

    data = np.arange(5 * 7, dtype="<f4").reshape(5, 7)
    refs = {
        "x/.zarray": json.dumps(
            {
                "shape": [5, 7],
                "chunks": [2, 3],
                "dtype": "<f4",
                "fill_value": -1.0,
                "filters": [{"id": "shuffle", "elementsize": 4}],
                "compressor": {"id": "zlib", "level": 1},
                "zarr_format": 2,
            }
        ),
    }
    from numcodecs import Shuffle, Zlib

    payloads = {}
    for i in range(3):
        for j in range(3):
            block = np.full((2, 3), -1, "<f4")
            part = data[2 * i : 2 * i + 2, 3 * j : 3 * j + 3]
            block[: part.shape[0], : part.shape[1]] = part
            if (i, j) != (1, 1):  # one chunk never written
                payloads[(i, j)] = Zlib(1).encode(Shuffle(4).encode(block.tobytes()))
                refs[f"x/{i}.{j}"] = (
                    "base64:" + __import__("base64").b64encode(payloads[(i, j)]).decode()
                )
    table = ChunkTable.from_refs({"version": 1, "refs": refs}, "x")
    box = [(1, 5), (2, 7)]
    plan = table.plan(box)
    got = table.assemble(box, plan, [table.inline.get(idx) for idx, _, _ in plan])
    want = data[1:5, 2:7].copy()
    want[1:3, 1:4] = -1  # the absent chunk (rows 2-3, columns 3-5) is the fill value
    np.testing.assert_array_equal(got, want)
    with pytest.raises(KeyError, match=r"variable 'y' is not in the index; it has \['x'\]"):
        ChunkTable.from_refs(refs, "y")


def test_cache_is_keyed_by_size_etag_and_version(tmp_path):
    from pangeo_hpc.io.references import save_refs

    with dask.config.set({"pangeo-hpc.s3.index-cache": str(tmp_path)}):
        stamp = Stamp.of_object("s3://b/k.nc", 10, '"e"')
        path = save_refs(stamp, {"version": 1, "refs": {}})
        assert load_refs(stamp) is not None
        assert load_refs(Stamp.of_object("s3://b/k.nc", 10, '"other"')) is None
        assert load_refs(Stamp.of_object("s3://b/k.nc", 11, '"e"')) is None
        assert load_refs(Stamp.of_object("s3://b/k.nc", 10, '"e"', "v2")) is None
        # an index of the earlier format (size and ETag, no stamp) is built again
        doc = json.loads(path.read_text())
        doc[next(k for k in doc if k.startswith("pangeo-hpc-references"))].pop("stamp")
        path.write_text(json.dumps(doc))
        assert load_refs(stamp) is None
        assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left


def test_incremental_runs_from_s3_reuse_states_by_etag(seaweedfs, demo_tree, aws, tmp_path):
    """A recipe over S3 objects keeps each object's state under its ETag: a second run reads
    nothing, an object whose bytes change is read again, alone."""
    import h5py
    from distributed import Client, LocalCluster

    from pangeo_hpc.batch.incremental.state_cache import StateCache
    from pangeo_hpc.batch.pipeline.steps import compute, open_inputs

    part = tmp_path / "tree"
    for month in ("01", "02", "03"):
        shutil.copytree(demo_tree / "2000" / month, part / "2000" / month)
    publish_tree(seaweedfs.storage_options(), part, PRIVATE, "incremental")
    url = f"s3://{PRIVATE}/incremental"
    cache = StateCache(tmp_path / "cache")
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster,
        Client(cluster) as client,
    ):

        def run(cache):
            inputs = open_inputs("era5-sst-mean", data=url, end="2000-03", s3=aws, index="never")
            return compute(inputs, client, cache=cache)

        first, second = run(cache), run(cache)
        assert (first.reads.files_read, second.reads.files_reused, second.reads.bytes_read) == (
            3,
            3,
            0,
        )
        xr.testing.assert_identical(first.result, second.result)
        # February's bytes change (one ocean value 10 K warmer): a new ETag
        feb = part / "2000/02/data" / f"{VAR}.nc"
        with h5py.File(feb, "r+") as f:
            sst = f[VAR]
            cell = tuple(int(i[0]) for i in np.nonzero(np.isfinite(sst[0]) & (sst[0] > 0)))
            sst[(0, *cell)] = sst[(0, *cell)] + 10 / float(sst.attrs.get("scale_factor", 1))
        seaweedfs.filesystem().put_file(str(feb), f"{url}/2000/02/data/{VAR}.nc")
        third = run(cache)
        assert (third.reads.files_reused, third.reads.files_read) == (2, 1)
        whole = run(False)
        xr.testing.assert_allclose(third.result, whole.result, rtol=1e-6)
        assert not np.allclose(third.result["time_mean"], first.result["time_mean"], equal_nan=True)
