"""Icechunk's view of :class:`~pangeo_hpc.s3.options.S3Options`: a repository's storage on
S3, the virtual chunk container of a bucket, and the credentials of both.

Icechunk talks to S3 through its own Rust client, configured with its own objects
(``icechunk.s3_storage``, ``icechunk.s3_store``, ``icechunk.s3_credentials``). They are
made here from the same options as s3fs and obstore (endpoint, anonymous access, region)
and the same credential chain (botocore's: environment, profiles, SSO, roles), so a
repository and the NetCDF objects its virtual references point to are reached as every
other S3 source is. Keys are handed over as they are now; they are never shown (the
repr of Icechunk's objects does not print them either).
"""

from __future__ import annotations

from typing import Any

from pangeo_hpc.extras import require
from pangeo_hpc.s3.options import S3Options, _BotocoreCredentials, split_url

__all__ = ["container_prefix", "credentials", "storage", "virtual_container"]


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
    """The ``icechunk.Storage`` of the repository at ``s3://bucket/prefix``.

    Parameters
    ----------
    url : str
        ``s3://bucket/prefix``.
    opts : S3Options
        How to reach S3.

    Returns
    -------
    icechunk.Storage
        The storage.

    Examples
    --------
    >>> import icechunk
    >>> from pangeo_hpc.s3.options import S3Options
    >>> opts = S3Options(endpoint_url="http://localhost:8333", anon=True)
    >>> isinstance(storage("s3://results/era5-sst", opts), icechunk.Storage)
    True
    """
    require("stores", "Icechunk repositories")
    import icechunk

    bucket, prefix = split_url(url)
    return icechunk.s3_storage(
        bucket=bucket, prefix=prefix or None, **_endpoint(opts), **_keys(opts)
    )


def container_prefix(url: str) -> str:
    """The URL prefix of a virtual chunk container for the objects of ``url``'s bucket.

    Parameters
    ----------
    url : str
        An ``s3://`` URL.

    Returns
    -------
    str
        ``s3://bucket/``.

    Examples
    --------
    >>> container_prefix("s3://era5-pds/2019/01/data/air_temperature_at_2_metres.nc")
    's3://era5-pds/'
    """
    bucket, _ = split_url(url)
    return f"s3://{bucket}/"


def virtual_container(prefix: str, opts: S3Options) -> Any:
    """An ``icechunk.VirtualChunkContainer`` for the objects under ``prefix``
    (``s3://bucket/``), reached with ``opts``' endpoint and region.

    Parameters
    ----------
    prefix : str
        ``s3://bucket/``.
    opts : S3Options
        How to reach S3.

    Returns
    -------
    icechunk.VirtualChunkContainer
        The container.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> opts = S3Options(endpoint_url="http://localhost:8333", anon=True)
    >>> virtual_container("s3://era5-pds/", opts).url_prefix
    's3://era5-pds/'
    """
    require("stores", "Icechunk virtual references")
    import icechunk

    kw = _endpoint(opts)
    store = icechunk.s3_store(
        region=kw["region"],
        endpoint_url=kw.get("endpoint_url"),
        allow_http=kw.get("allow_http", False),
        s3_compatible=bool(opts.endpoint_url),
        force_path_style=kw.get("force_path_style", False),
    )
    return icechunk.VirtualChunkContainer(prefix, store)


def credentials(prefixes: list[str], opts: S3Options) -> dict[str, Any]:
    """``authorize_virtual_chunk_access`` of ``icechunk.Repository.open``/``create``: the
    keys of ``opts`` (or anonymous access) for the virtual chunk containers ``prefixes``.

    Parameters
    ----------
    prefixes : list[str]
        The containers' prefixes.
    opts : S3Options
        How to reach S3.

    Returns
    -------
    dict[str, Any]
        Prefix -> credentials.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> opts = S3Options(endpoint_url="http://localhost:8333", anon=True)
    >>> list(credentials(["s3://era5-pds/"], opts))
    ['s3://era5-pds/']
    """
    require("stores", "Icechunk virtual references")
    import icechunk

    keys = _keys(opts)
    if keys.get("anonymous"):
        creds = icechunk.s3_credentials(anonymous=True)
    else:
        creds = icechunk.s3_credentials(
            access_key_id=keys["access_key_id"],
            secret_access_key=keys["secret_access_key"],
            session_token=keys["session_token"],
        )
    return icechunk.containers_credentials(dict.fromkeys(prefixes, creds))
