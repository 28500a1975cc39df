"""Icechunk's view of :class:`~pangeo_hpc.s3.options.S3Options`: a repository's storage on
S3 and its credentials.

Icechunk talks to S3 through its own Rust client, configured with its own objects
(``icechunk.s3_storage``). They are made here from the same options as s3fs and obstore
(endpoint, anonymous access, region) and the same credential chain (botocore's:
environment, profiles, SSO, roles), so a repository is reached as every other S3 output
is. Keys are handed over as they are now; they are never shown (the repr of Icechunk's
objects does not print them either).
"""

from __future__ import annotations

from typing import Any

from pangeo_hpc.extras import require
from pangeo_hpc.s3.options import S3Options, _BotocoreCredentials, split_url

__all__ = ["storage"]


def _endpoint(opts: S3Options) -> dict[str, Any]:
    if not opts.endpoint_url:
        return {"region": opts.resolved_region()}
    return {
        "region": opts.resolved_region(),
        "endpoint_url": opts.endpoint_url,
        "allow_http": opts.endpoint_url.startswith("http://"),
        "force_path_style": True,  # S3-compatible servers (SeaweedFS, MinIO) by path
    }


def _keys(opts: S3Options) -> dict[str, Any]:
    """``anonymous=True``, or the current keys of the AWS chain (``InputError`` if none,
    as for obstore: :class:`~pangeo_hpc.s3.options._BotocoreCredentials`)."""
    if opts.anon:
        return {"anonymous": True}
    frozen = _BotocoreCredentials(opts.profile)()
    return {
        "access_key_id": frozen["access_key_id"],
        "secret_access_key": frozen["secret_access_key"],
        "session_token": frozen["token"],
    }


def storage(url: str, opts: S3Options) -> Any:
    """The ``icechunk.Storage`` of the repository at ``s3://bucket/prefix``."""
    require("icechunk", "Icechunk repositories")
    import icechunk

    bucket, prefix = split_url(url)
    return icechunk.s3_storage(
        bucket=bucket, prefix=prefix or None, **_endpoint(opts), **_keys(opts)
    )
