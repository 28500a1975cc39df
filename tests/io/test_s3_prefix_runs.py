"""Readers of an ``s3://`` prefix that pangeo-hpc wrote (a real SeaweedFS): ``--data
s3://B/P`` of a ``demo-data --out s3://B/P`` tree or a ``convert --out s3://B/P`` store
reads the run its ``summary.json`` names, as ``index`` does; only runs with a manifest are
trusted (a prefix with runs but no manifest, or a run it does not name: one line, exit 2,
nothing written).

Wrong readers these tests were seen to fail on: the old code, which read the prefix as an
era5-pds tree (no months found under ``s3://B/demo``), and a resolver that takes the
newest ``run-...`` prefix without a manifest (test_a_prefix_with_runs_but_no_manifest_is_
refused_and_nothing_is_written: it read the unfinished run).
"""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from pangeo_hpc.cli import main as run
from pangeo_hpc.io.s3_objects import objects_to_index
from pangeo_hpc.io.s3_runs import run_location
from pangeo_hpc.s3 import options as s3
from tests.support.s3env import aws_environment, forget_s3_clients

pytestmark = pytest.mark.s3

BUCKET = "prefix-runs"
DEMO = ["--start", "2000-01", "--end", "2000-02", "--resolution", "10", "--workers", "1"]
RUN = ["--start", "2000-01", "--end", "2000-02", "--workers", "1", "--no-progress"]


def _client(server) -> object:
    return boto3.client(
        "s3",
        endpoint_url=server.endpoint_url,
        aws_access_key_id=server.key,
        aws_secret_access_key=server.secret,
        region_name="us-east-1",
    )


@pytest.fixture
def aws(monkeypatch, seaweedfs, tmp_path):
    """Credentials through the AWS chain, the bucket, the CLI in this process."""
    aws_environment(monkeypatch, seaweedfs, tmp_path)
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    forget_s3_clients()
    client = _client(seaweedfs)
    if BUCKET not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
        client.create_bucket(Bucket=BUCKET)
    yield client
    forget_s3_clients()


@pytest.fixture(scope="module")
def demo_on_s3(seaweedfs, tmp_path_factory):
    """``demo-data --out s3://BUCKET/demo`` written twice (the second run replaces the
    first): the URL, the manifest, and the first (replaced) run's name."""
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("demo-s3")
    try:
        aws_environment(mp, seaweedfs, tmp)
        mp.setattr(run, "_interruptible", lambda: None)
        forget_s3_clients()
        client = _client(seaweedfs)
        if BUCKET not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
            client.create_bucket(Bucket=BUCKET)
        url = f"s3://{BUCKET}/demo"
        ep = ["--endpoint-url", seaweedfs.endpoint_url]
        runs = []
        for _ in range(2):
            assert run.main(["demo-data", "--out", url, *DEMO, *ep]) == 0
            body = client.get_object(Bucket=BUCKET, Key="demo/summary.json")["Body"].read()
            runs.append(json.loads(body)["run"])
        yield url, json.loads(body), runs[0]
    finally:
        forget_s3_clients()
        mp.undo()


def _answer(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())["answer"]


def _one_line_exit_2(capsys, argv: list[str]) -> str:
    code = run.main(argv)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    return lines[0]


@pytest.mark.slow
def test_data_naming_the_prefix_reads_its_current_run(
    aws, seaweedfs, demo_on_s3, demo_tree, tmp_path, capsys
):
    url, manifest, _old = demo_on_s3
    ep = ["--endpoint-url", seaweedfs.endpoint_url]
    outs = {}
    for name, data in (("prefix", url), ("run", manifest["location"]), ("disk", None)):
        if data is None:  # the same months of a local demo tree at 10 degrees
            data = str(tmp_path / "local-demo")
            assert run.main(["demo-data", "--out", data, *DEMO]) == 0
            extra = []
        else:
            extra = [*ep, "--index", "never"]
        outs[name] = tmp_path / name
        argv = ["era5-sst-mean", "--data", data, *RUN, "--out", str(outs[name]), "--no-cache"]
        assert run.main([*argv, *extra]) == 0, capsys.readouterr().err
    assert _answer(outs["prefix"]) == _answer(outs["run"]) == _answer(outs["disk"])
    # what was read is the current run's objects, named as such in the provenance
    read = json.loads((outs["prefix"] / "summary.json").read_text())
    assert manifest["location"] in json.dumps(read), "the run read is not recorded"
    # index takes the prefix too: the objects of the current run, not of the replaced one
    opts = s3.S3Options(endpoint_url=seaweedfs.endpoint_url)
    stamps = objects_to_index(url, opts, variable="sea_surface_temperature")
    assert [s.path.startswith(manifest["location"] + "/") for s in stamps] == [True, True]
    assert run_location(url + "/", opts) == (manifest["location"], "demo")


def test_a_replaced_run_named_by_hand_is_refused(aws, seaweedfs, demo_on_s3, tmp_path, capsys):
    url, manifest, old = demo_on_s3
    assert old != manifest["run"]
    out = tmp_path / "out"
    line = _one_line_exit_2(
        capsys,
        ["era5-sst-mean", "--data", f"{url}/{old}", *RUN, "--out", str(out),
         "--endpoint-url", seaweedfs.endpoint_url],
    )  # fmt: skip
    assert f"is not the current run of {url}" in line and f"give --data '{url}'" in line, line
    assert not out.exists()


def test_a_prefix_with_runs_but_no_manifest_is_refused_and_nothing_is_written(
    aws, seaweedfs, demo_on_s3, tmp_path, capsys
):
    """A killed upload: a run's objects, no summary.json (copied from the demo's run)."""
    _url, manifest, _old = demo_on_s3
    run_name = manifest["run"]
    for key in manifest["objects"]:
        aws.copy_object(
            Bucket=BUCKET,
            Key=key.replace("demo/", "killed/", 1),
            CopySource={"Bucket": BUCKET, "Key": key},
        )
    cache = tmp_path / "state-cache"
    ep = ["--endpoint-url", seaweedfs.endpoint_url]
    for data in (f"s3://{BUCKET}/killed", f"s3://{BUCKET}/killed/{run_name}"):
        out = tmp_path / "out"
        line = _one_line_exit_2(
            capsys, ["era5-sst-mean", "--data", data, *RUN, "--out", str(out), *ep]
        )
        assert "no summary.json" in line and "--data" in line, line
        assert not out.exists()
        assert not cache.exists() or not any(cache.iterdir())
    line = _one_line_exit_2(capsys, ["index", f"s3://{BUCKET}/killed", *ep])
    assert "holds runs of pangeo-hpc but no summary.json" in line
    assert "pangeo-hpc cleanup s3://prefix-runs/killed --min-age 0" in line, line


@pytest.mark.slow
def test_data_naming_a_converted_store_reads_its_current_run(
    aws, seaweedfs, demo_tree, tmp_path, capsys
):
    ep = ["--endpoint-url", seaweedfs.endpoint_url]
    url = f"s3://{BUCKET}/sst-zarr"
    conv = ["convert", "--data", str(demo_tree), "--out", url, "--variable",
            "sea_surface_temperature", "--start", "2000-01", "--end", "2000-02",
            "--workers", "1", *ep]  # fmt: skip
    assert run.main(conv) == 0, capsys.readouterr().err
    outs = []
    for data, extra in ((url, ep), (str(demo_tree), [])):
        outs.append(tmp_path / f"out-{len(outs)}")
        argv = ["era5-sst-mean", "--data", data, *RUN, "--out", str(outs[-1]), "--no-cache"]
        assert run.main([*argv, *extra]) == 0, capsys.readouterr().err
    assert _answer(outs[0]) == _answer(outs[1])  # lossless: the same values, rounded alike


@pytest.mark.slow
def test_provenance_reads_a_result_on_s3_through_its_manifest(
    aws, seaweedfs, demo_tree, tmp_path, capsys
):
    ep = ["--endpoint-url", seaweedfs.endpoint_url]
    url = f"s3://{BUCKET}/results/sst-mean"
    argv = ["era5-sst-mean", "--data", str(demo_tree), *RUN, "--out", url, "--no-cache", *ep]
    assert run.main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert run.main(["provenance", url, *ep]) == 0, capsys.readouterr().err
    shown = capsys.readouterr().out
    assert "command: " in shown and "era5-sst-mean" in shown, shown
    # the manifest gone (a killed replacement's state): one line, exit 2
    aws.delete_object(Bucket=BUCKET, Key="results/sst-mean/summary.json")
    line = _one_line_exit_2(capsys, ["provenance", url, *ep])
    assert "no summary.json" in line, line
