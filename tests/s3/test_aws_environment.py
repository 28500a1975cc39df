"""Keys, profile or region changed in ``os.environ`` mid-session (a notebook's cell) are used
at once: the S3 clients this process cached with the old ones are forgotten
(``s3.options.follow_aws_environment``). botocore keeps the keys a session first found, and
the package keeps its sessions and obstore stores, as s3fs keeps its file systems.

Wrong code this was seen to fail on: the sessions cached per profile alone (before the
follow), where the second key read back was still the first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pangeo_hpc.errors import InputError
from pangeo_hpc.s3 import options as s3

ENDPOINT = "http://127.0.0.1:9"  # nothing is sent: clients are only made


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Keys of the environment only (no user files, CA bundle or profile)."""
    for name in ("AWS_CA_BUNDLE", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDFIRST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "first-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    return monkeypatch


def _key_in_use() -> str:
    """The access key an obstore store made now would sign with."""
    return s3._BotocoreCredentials(None)()["access_key_id"]


def test_keys_changed_in_the_environment_are_used_at_once(keys):
    opts = s3.S3Options(endpoint_url=ENDPOINT)
    store, fs = opts.store("bucket"), opts.filesystem()
    assert _key_in_use() == "AKIDFIRST"
    # nothing changed: the cached clients are kept
    assert opts.store("bucket") is store and opts.filesystem() is fs

    keys.setenv("AWS_ACCESS_KEY_ID", "AKIDSECOND")
    keys.setenv("AWS_SECRET_ACCESS_KEY", "second-secret")
    assert _key_in_use() == "AKIDSECOND"
    assert opts.store("bucket") is not store
    assert opts.filesystem() is not fs

    keys.delenv("AWS_ACCESS_KEY_ID")
    keys.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(InputError, match="no AWS credentials found"):
        _key_in_use()


def test_a_region_or_profile_changed_in_the_environment_is_used_at_once(keys, tmp_path):
    opts = s3.S3Options(endpoint_url=ENDPOINT)
    assert opts.resolved_region() == "eu-west-1"
    keys.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    assert opts.resolved_region() == "ap-south-1"

    credentials = tmp_path / "credentials"
    credentials.write_text("[other]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = s\n")
    keys.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    keys.delenv("AWS_ACCESS_KEY_ID")
    keys.delenv("AWS_SECRET_ACCESS_KEY")
    keys.setenv("AWS_PROFILE", "other")
    assert _key_in_use() == "AKIDPROFILE"
