"""A test's view of an S3 server (tests/support/servers.py): its credentials through the AWS
chain, and S3 clients that forget what a previous test set."""

from __future__ import annotations

from pathlib import Path

import pytest


def aws_environment(monkeypatch: pytest.MonkeyPatch, server, tmp_path: Path) -> None:
    """Credentials of ``server`` (a tests/support/servers.py SeaweedFS) through the AWS chain: the
    environment, seen by this process, the CLIs and kernels it starts; no CA bundle (the
    shell's breaks some clients), no profile, no config or credentials file of the user's.
    The S3 clients this process made with other keys are forgotten by the package itself
    (``s3.options.follow_aws_environment``), which the tests using this rely on."""
    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", server.key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server.secret)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))


def forget_s3_clients() -> None:
    """Forget the S3 clients this process cached (obstore stores, botocore sessions, s3fs
    instances) with their endpoints and credentials: a test that changes them starts fresh."""
    from pangeo_hpc.s3 import options as s3_options

    s3_options.forget_clients()


def boto3_client(server):
    """A boto3 S3 client of ``server`` (its endpoint and credentials, us-east-1)."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=server.endpoint_url,
        aws_access_key_id=server.key,
        aws_secret_access_key=server.secret,
        region_name="us-east-1",
    )


def ensure_bucket(server, bucket: str):
    """``bucket`` on ``server``, created unless there; returns the boto3 client."""
    client = boto3_client(server)
    if bucket not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
        client.create_bucket(Bucket=bucket)
    return client
