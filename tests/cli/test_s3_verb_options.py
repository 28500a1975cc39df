"""The S3 options (``--endpoint-url``, ``--anon``) on every verb that writes a single file
to S3, from one definition (``cli.common.add_s3_args``), and working against a real
SeaweedFS with no endpoint in the environment: ``plan --plot``, ``calibrate
--calibration``, ``lab-config --out`` (``survey`` and ``inventory`` had them).

Wrong code these tests were seen to fail on: main before this change (plan, calibrate
and lab-config refused ``--endpoint-url``: "unrecognized arguments"), and a copy of the
flag in plan.py with its own help text (test_every_writing_verb_has_the_s3_options_of_
one_definition).
"""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from pangeo_hpc.cli import main as run
from pangeo_hpc.cli.main import build_parser
from tests.support.s3env import aws_environment, forget_s3_clients

pytestmark = pytest.mark.s3

BUCKET = "verb-options"
#: every verb that writes single files to S3 (plan --plot, calibrate --calibration,
#: lab-config --out, survey --json/--plot, inventory --json), and the folder writers
WRITERS = ("plan", "calibrate", "lab-config", "survey", "inventory", "run", "convert",
           "demo-data", "cleanup")  # fmt: skip


def _s3_actions(parser) -> dict[str, tuple[str | None, str]]:
    """``{flag: (help, group title)}`` of the S3 flags of a verb's parser."""
    found = {}
    for group in parser._action_groups:
        for action in group._group_actions:
            for flag in action.option_strings:
                if flag in ("--endpoint-url", "--anon"):
                    found[flag] = (action.help, group.title)
    return found


def test_every_writing_verb_has_the_s3_options_of_one_definition():
    _, parsers = build_parser("pangeo-hpc")
    seen = {verb: _s3_actions(parsers[verb]) for verb in WRITERS}
    missing = [verb for verb, flags in seen.items() if set(flags) != {"--endpoint-url", "--anon"}]
    assert not missing, f"verbs without --endpoint-url/--anon: {missing}"
    # one definition: the same help and group everywhere (a copy drifts)
    assert len({json.dumps(flags, sort_keys=True) for flags in seen.values()}) == 1, seen


def test_the_flags_are_refused_where_nothing_is_on_s3(tmp_path, capsys):
    for argv in (
        ["plan", "era5-sst-mean", "--size", "1GB", "--no-plot", "--endpoint-url", "http://x:1"],
        ["lab-config", "--out", str(tmp_path / "lab.yaml"), "--anon"],
    ):
        assert run.main(argv) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "apply to s3:// sources only" in lines[0], lines
    assert not (tmp_path / "lab.yaml").exists()


@pytest.fixture
def aws(monkeypatch, seaweedfs, tmp_path):
    """Credentials through the AWS chain but NO endpoint there: only --endpoint-url
    reaches the server; the bucket; the CLI in this process."""
    aws_environment(monkeypatch, seaweedfs, tmp_path)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "DASK_PANGEO_HPC__S3__ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    forget_s3_clients()
    client = boto3.client(
        "s3",
        endpoint_url=seaweedfs.endpoint_url,
        aws_access_key_id=seaweedfs.key,
        aws_secret_access_key=seaweedfs.secret,
        region_name="us-east-1",
    )
    if BUCKET not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
        client.create_bucket(Bucket=BUCKET)
    yield client
    forget_s3_clients()


def _marked(client, key: str) -> bytes:
    got = client.get_object(Bucket=BUCKET, Key=key)
    assert got["Metadata"]["pangeo-hpc"].startswith("written-by pangeo-hpc"), got["Metadata"]
    return got["Body"].read()


def test_plan_and_lab_config_write_to_the_endpoint_given(aws, seaweedfs, tmp_path, capsys):
    ep = ["--endpoint-url", seaweedfs.endpoint_url]
    plot = f"s3://{BUCKET}/plan.png"
    assert run.main(["plan", "era5-sst-mean", "--size", "1GB", "--plot", plot, *ep]) == 0, (
        capsys.readouterr().err
    )
    assert _marked(aws, "plan.png").startswith(b"\x89PNG")
    lab = f"s3://{BUCKET}/lab.yaml"
    assert run.main(["lab-config", "--data", str(tmp_path), "--out", lab, *ep]) == 0
    assert b"pangeo-hpc" in _marked(aws, "lab.yaml")
    assert f"wrote {lab}" in capsys.readouterr().out


@pytest.mark.slow
def test_calibrate_writes_and_plan_reads_a_calibration_at_the_endpoint_given(
    aws, seaweedfs, demo_tree: Path, capsys
):
    ep = ["--endpoint-url", seaweedfs.endpoint_url]
    cal = f"s3://{BUCKET}/calibration.json"
    argv = ["calibrate", "era5-sst-mean", "--data", str(demo_tree), "--amount", "16MB",
            "--repeat", "1", "--tasks", "100", "--calibration", cal, *ep]  # fmt: skip
    assert run.main(argv) == 0, capsys.readouterr().err
    doc = json.loads(_marked(aws, "calibration.json"))
    assert "era5-sst-mean" in doc["recipes"]
    capsys.readouterr()
    argv = ["plan", "era5-sst-mean", "--size", "1GB", "--no-plot", "--calibration", cal, *ep]
    assert run.main(argv) == 0, capsys.readouterr().err
    assert "nodes" in capsys.readouterr().out
