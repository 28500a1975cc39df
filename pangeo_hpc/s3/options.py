"""How pangeo-hpc talks to S3 and S3-compatible stores: one set of options, two clients.

:class:`S3Options` holds what a user sets (endpoint, anonymous access, region, AWS profile),
from arguments, CLI flags (``--endpoint-url``, ``--anon``, spelled as the AWS CLI does) or
dask config ``pangeo-hpc.s3.*``. It hands out an s3fs file system (random access for h5py,
kerchunk) and obstore stores (many concurrent byte ranges and listings, in Rust). Both take
credentials from the usual AWS chain (environment, ``~/.aws/credentials`` and
``~/.aws/config`` profiles, SSO, instance or container roles) unless ``anon``.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from pangeo_hpc import config
from pangeo_hpc.errors import InputError, redact
from pangeo_hpc.extras import require

if TYPE_CHECKING:
    import botocore.credentials
    import s3fs
    from obstore.store import S3Credential, S3Store

_SCHEME = "s3://"


def is_s3(path: object) -> bool:
    """Whether ``path`` is an ``s3://`` URL.

    Parameters
    ----------
    path : object
        Anything.

    Returns
    -------
    bool
        True for a string starting with ``s3://``.

    Examples
    --------
    >>> is_s3("s3://era5-pds/2019"), is_s3("/scratch/era5"), is_s3(None)
    (True, False, False)
    """
    return isinstance(path, str) and path.startswith(_SCHEME)


def split_url(url: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix/`` as ``("bucket", "some/prefix")``.

    Parameters
    ----------
    url : str
        An ``s3://`` URL.

    Returns
    -------
    tuple[str, str]
        The bucket and the prefix.

    Raises
    ------
    InputError
        If ``url`` is not ``s3://BUCKET[/PREFIX]`` with a valid bucket name.

    Examples
    --------
    >>> split_url("s3://era5-pds/2019/01/")
    ('era5-pds', '2019/01')
    """
    if not is_s3(url):
        raise InputError(f"{url!r} is not an S3 URL: write s3://BUCKET[/PREFIX]")
    bucket, _, key = url[len(_SCHEME) :].partition("/")
    if not (3 <= len(bucket) <= 63) or not all(c.isalnum() or c in ".-_" for c in bucket):
        raise InputError(
            f"{bucket!r} in {url!r} is not a bucket name (3-63 letters, digits, '.', '-'): "
            "write s3://BUCKET[/PREFIX], e.g. s3://era5-pds"
        )
    return bucket, key.strip("/")


@dataclass(frozen=True, slots=True)
class S3Options:
    """Where and how to reach S3.

    Parameters
    ----------
    endpoint_url : str, optional
        An S3-compatible endpoint, e.g. ``http://127.0.0.1:8333`` (SeaweedFS, MinIO, Ceph).
        Default: ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` if set, else AWS.
    anon : bool
        Unsigned requests, for public buckets such as ``era5-pds``; no credentials needed.
    region : str, optional
        Default: from the AWS chain (``AWS_REGION``, the profile), else ``us-east-1``.
    profile : str, optional
        A named profile of ``~/.aws/config``; default ``AWS_PROFILE`` or ``default``.

    Examples
    --------
    >>> opts = S3Options(endpoint_url="http://localhost:8333", anon=True)
    >>> opts.anon, opts.endpoint_url
    (True, 'http://localhost:8333')
    >>> S3Options.resolve(anon=True).anon  # the rest from dask config pangeo-hpc.s3
    True
    """

    endpoint_url: str | None = None
    anon: bool = False
    region: str | None = None
    profile: str | None = None

    def __post_init__(self) -> None:
        _check_endpoint_url(self.endpoint_url)

    def __repr__(self) -> str:  # the endpoint as every message shows it: no credentials
        return (
            f"S3Options(endpoint_url={self.shown_endpoint!r}, anon={self.anon!r}, "
            f"region={self.region!r}, profile={self.profile!r})"
        )

    @property
    def shown_endpoint(self) -> str | None:
        """The endpoint as messages and logs show it (:func:`~pangeo_hpc.errors.redact`)."""
        return None if self.endpoint_url is None else redact(self.endpoint_url)

    @classmethod
    def resolve(
        cls,
        endpoint_url: str | None = None,
        anon: bool | None = None,
        region: str | None = None,
        profile: str | None = None,
    ) -> S3Options:
        """Options from the arguments given, the rest from dask config ``pangeo-hpc.s3``.

        Parameters
        ----------
        endpoint_url : str | None, optional
            The S3 endpoint (default: AWS).
        anon : bool | None, optional
            Read without credentials.
        region : str | None, optional
            The region.
        profile : str | None, optional
            The AWS profile.

        Returns
        -------
        S3Options
            The options.

        Examples
        --------
        >>> S3Options.resolve(endpoint_url="http://localhost:8333", anon=True)
        S3Options(endpoint_url='http://localhost:8333', anon=True, region=None, profile=None)
        """
        endpoint = (
            config.get("s3.endpoint-url", endpoint_url)
            or os.environ.get("AWS_ENDPOINT_URL_S3")
            or os.environ.get("AWS_ENDPOINT_URL")
        )
        return cls(
            endpoint_url=endpoint,
            anon=bool(config.get("s3.anon", anon)),
            region=config.get("s3.region", region) or None,
            profile=config.get("s3.profile", profile) or None,
        )

    def for_writing(self) -> S3Options:
        """These options with credentials: an output is never written anonymously, even
        when the inputs are read so (``--anon`` on a public bucket).

        Returns
        -------
        S3Options
            The options.

        Examples
        --------
        >>> S3Options(endpoint_url="http://localhost:8333", anon=True).for_writing()
        S3Options(endpoint_url='http://localhost:8333', anon=False, region=None, profile=None)
        """
        return S3Options(self.endpoint_url, False, self.region, self.profile)

    def storage_options(self) -> dict[str, Any]:
        """Keyword arguments for ``s3fs.S3FileSystem`` (fsspec's ``storage_options``).

        botocore retries failed connections, 5xx answers, time-outs and throttling with
        exponential backoff (its "standard" mode), up to ``pangeo-hpc.s3.max-retries``
        times, as the obstore stores of :meth:`store` do; each attempt connects within
        ``pangeo-hpc.s3.connect-timeout`` and waits ``pangeo-hpc.s3.read-timeout`` seconds
        at most for the next bytes of an answer.

        Returns
        -------
        dict[str, Any]
            The keyword arguments.

        Examples
        --------
        >>> kwargs = S3Options(endpoint_url="http://localhost:8333", anon=True).storage_options()
        >>> kwargs["anon"], kwargs["client_kwargs"]
        (True, {'endpoint_url': 'http://localhost:8333'})
        >>> kwargs["config_kwargs"]["retries"]["mode"]
        'standard'
        """
        follow_aws_environment()  # s3fs caches its instances, with the keys they found
        retries = {"max_attempts": int(config.get("s3.max-retries")), "mode": "standard"}
        timeouts = client_timeouts()
        opts: dict[str, Any] = {
            "anon": self.anon,
            "config_kwargs": {
                "retries": retries,
                "connect_timeout": timeouts.connect,
                "read_timeout": timeouts.read,
            },
        }
        client: dict[str, Any] = {}
        if self.endpoint_url:
            client["endpoint_url"] = self.endpoint_url
        if self.region:
            client["region_name"] = self.region
        if client:
            opts["client_kwargs"] = client
        if self.profile and not self.anon:
            opts["profile"] = self.profile
        return opts

    def filesystem(self) -> s3fs.S3FileSystem:
        """An s3fs file system with these options (cached by s3fs per process).

        Returns
        -------
        s3fs.S3FileSystem
            The file system.

        Examples
        --------
        >>> fs = S3Options(endpoint_url="http://localhost:8333", anon=True).filesystem()
        >>> type(fs).__name__
        'S3FileSystem'
        >>> fs.ls("era5-pds/2019")  # doctest: +SKIP
        """
        require("s3", "S3 access")
        import s3fs

        return s3fs.S3FileSystem(**self.storage_options())

    def store(self, bucket: str) -> S3Store:
        """An obstore ``S3Store`` for ``bucket``, cached per process.

        Retries 5xx answers, throttling (503 SlowDown, 429) and time-outs with exponential
        backoff, up to ``pangeo-hpc.s3.max-retries`` times and for at most
        ``pangeo-hpc.s3.retry-timeout`` seconds; each attempt connects within
        ``pangeo-hpc.s3.connect-timeout`` and waits ``pangeo-hpc.s3.read-timeout`` seconds at
        most for the next bytes of an answer.

        Parameters
        ----------
        bucket : str
            The bucket.

        Returns
        -------
        S3Store
            The store.

        Examples
        --------
        >>> store = S3Options(endpoint_url="http://localhost:8333", anon=True).store("era5-pds")
        >>> type(store).__name__
        'S3Store'
        """
        require("s3", "S3 access")
        follow_aws_environment()
        return _store(self, bucket, int(config.get("s3.max-retries")), client_timeouts())

    def resolved_region(self) -> str:
        """The region requests are signed for.

        Returns
        -------
        str
            The region.

        Examples
        --------
        >>> S3Options(region="eu-west-1").resolved_region()
        'eu-west-1'
        """
        if self.region:
            return self.region
        return _botocore_session(self.profile).get_config_variable("region") or "us-east-1"


def _check_endpoint_url(endpoint: str | None) -> None:
    """Refuse an endpoint without a scheme, or with a user name and password in it: S3
    requests are signed with AWS keys, and aiohttp (s3fs) refuses a URL's credentials
    beside that signature, after a run has listed its inputs."""
    if endpoint is None:
        return
    shown = redact(str(endpoint))
    if not str(endpoint).startswith(("http://", "https://")):
        raise InputError(
            f"endpoint_url={shown!r} needs a scheme: write e.g. http://127.0.0.1:8333",
            param="endpoint_url",
        )
    parts = urlsplit(str(endpoint))
    if parts.username is not None or parts.password is not None:
        bare = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        raise InputError(
            f"endpoint_url={shown!r} holds a user name and password, which S3 does not take: "
            f"write endpoint_url={bare!r} and give the keys as AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (or a profile)",
            param="endpoint_url",
        )


def _botocore_session(profile: str | None) -> Any:
    follow_aws_environment()
    return _cached_botocore_session(profile)


@functools.cache
def _cached_botocore_session(profile: str | None) -> Any:
    require("s3", "S3 access")  # botocore comes with s3fs
    import botocore.session

    return botocore.session.Session(profile=profile)


#: a digest of the ``AWS_*`` environment the cached clients were made under (not the keys)
_clients_environment: str | None = None


def follow_aws_environment() -> None:
    """Forget the S3 clients of this process when an ``AWS_*`` variable changed since they
    were made: a notebook that sets other keys, a profile or a region uses them at once.

    botocore keeps the keys it first found in a session, and this module keeps its sessions
    and obstore stores, as s3fs keeps its file systems: without this, keys changed in
    ``os.environ`` would be ignored until a restart. Keys that refresh (roles, SSO) refresh
    either way. Workers started before the change keep the environment they started with.

    Examples
    --------
    >>> follow_aws_environment()  # nothing to forget while the environment is the same
    """
    global _clients_environment
    aws = sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_"))
    digest = hashlib.sha256(repr(aws).encode()).hexdigest()
    if digest != _clients_environment:
        forget_clients()
        _clients_environment = digest


def forget_clients() -> None:
    """Forget the S3 clients this process cached: obstore stores, botocore sessions and
    s3fs file systems, with the endpoints and keys they were made with.

    Examples
    --------
    >>> forget_clients()
    """
    _store.cache_clear()
    _cached_botocore_session.cache_clear()
    s3fs = sys.modules.get("s3fs")
    if s3fs is not None:
        s3fs.S3FileSystem.clear_instance_cache()


#: how long obstore may sign with one set of keys before it asks botocore again. botocore's
#: ``get_frozen_credentials()`` refreshes expiring keys first and never returns keys with
#: less than 10 minutes left (its mandatory refresh, 15 minutes ahead when it can), so keys
#: are given up at least 5 minutes before they expire.
CREDENTIAL_RECHECK = timedelta(minutes=5)


def obstore_credential(creds: botocore.credentials.Credentials) -> S3Credential:
    """botocore credentials as an obstore ``S3Credential``, through botocore's public API.

    Parameters
    ----------
    creds : botocore.credentials.Credentials
        From ``botocore.session.Session.get_credentials()``.

    Returns
    -------
    S3Credential
        The current keys (refreshed by botocore when they are about to expire). Keys that
        refresh (``RefreshableCredentials``: roles, SSO, ``credential_process``) expire for
        obstore :data:`CREDENTIAL_RECHECK` from now, so that it asks again in time; fixed
        keys never expire.

    Examples
    --------
    >>> from botocore.credentials import Credentials
    >>> cred = obstore_credential(Credentials("AKIDEXAMPLE", "EXAMPLEKEY"))
    >>> cred["access_key_id"], cred["expires_at"]  # fixed keys never expire
    ('AKIDEXAMPLE', None)
    """
    from botocore.credentials import RefreshableCredentials

    frozen = creds.get_frozen_credentials()
    refreshes = isinstance(creds, RefreshableCredentials)
    return {
        "access_key_id": frozen.access_key,
        "secret_access_key": frozen.secret_key,
        "token": frozen.token,
        "expires_at": datetime.now(UTC) + CREDENTIAL_RECHECK if refreshes else None,
    }


class _BotocoreCredentials:
    """obstore credential provider backed by botocore's chain (refreshed as it expires)."""

    def __init__(self, profile: str | None) -> None:
        self.profile = profile
        creds = _botocore_session(profile).get_credentials()
        if creds is None:
            raise InputError(
                "no AWS credentials found (environment, ~/.aws/credentials, profile, instance "
                "role): pass anon=True for a public bucket, or set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, or run `aws configure`",
                param="anon",
            )
        self._creds = creds

    def __call__(self) -> S3Credential:
        return obstore_credential(self._creds)

    def __repr__(self) -> str:  # never show the keys
        return f"_BotocoreCredentials(profile={self.profile!r})"


class Timeouts(NamedTuple):
    """Seconds, from config ``pangeo-hpc.s3.*``: ``connect-timeout`` (each attempt's
    connection), ``read-timeout`` (each attempt's wait for the next bytes) and
    ``retry-timeout`` (after a request's first attempt, no more retries).

    Attributes
    ----------
    connect : float
        ``connect-timeout``.
    read : float
        ``read-timeout``.
    retry : float
        ``retry-timeout``.

    Examples
    --------
    >>> t = Timeouts(connect=10.0, read=30.0, retry=60.0)
    >>> t.read
    30.0
    """

    connect: float
    read: float
    retry: float


def client_timeouts() -> Timeouts:
    """The time-outs of S3 requests, from config (:class:`Timeouts`).

    Returns
    -------
    Timeouts
        The time-outs.

    Raises
    ------
    InputError
        For a value that is not a positive number of seconds.

    Examples
    --------
    >>> client_timeouts()  # the defaults of pangeo-hpc.yaml
    Timeouts(connect=10.0, read=30.0, retry=60.0)
    """
    values = []
    for name in ("connect", "read", "retry"):
        key = f"s3.{name}-timeout"
        value = config.get(key)
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            seconds = math.nan
        if not (0 < seconds < math.inf):
            raise InputError(
                f"pangeo-hpc.{key} {value!r} is not a positive number of seconds: set e.g. "
                f"DASK_PANGEO_HPC__S3__{name.upper()}_TIMEOUT=30"
            )
        values.append(seconds)
    return Timeouts(*values)


#: the longest one attempt may take in all, its whole answer included (120 MB at 1 MB/s); an
#: answer that stalls fails sooner, after ``read-timeout`` seconds without bytes
REQUEST_TIMEOUT = timedelta(minutes=2)


@functools.lru_cache(maxsize=64)
def _store(opts: S3Options, bucket: str, max_retries: int, timeouts: Timeouts) -> S3Store:
    from obstore.store import S3Store

    kwargs: dict[str, Any] = {
        "region": opts.resolved_region(),
        "retry_config": {
            "max_retries": max_retries,
            "backoff": {
                "init_backoff": timedelta(milliseconds=100),
                "max_backoff": timedelta(seconds=15),
                "base": 2,
            },
            "retry_timeout": timedelta(seconds=timeouts.retry),
        },
        "client_options": {
            "timeout": REQUEST_TIMEOUT,
            "connect_timeout": timedelta(seconds=timeouts.connect),
            "read_timeout": timedelta(seconds=timeouts.read),
        },
    }
    if opts.endpoint_url:
        kwargs["endpoint"] = opts.endpoint_url
        kwargs["virtual_hosted_style_request"] = False
        if opts.endpoint_url.startswith("http://"):
            kwargs["client_options"]["allow_http"] = True
    if opts.anon:
        kwargs["skip_signature"] = True
    else:
        kwargs["credential_provider"] = _BotocoreCredentials(opts.profile)
    try:
        return S3Store(bucket, **kwargs)
    except ValueError as exc:  # an obstore without read_timeout (0.8, the lowest allowed):
        if "read_timeout" not in str(exc):  # there the request time-out bounds each read
            raise
        del kwargs["client_options"]["read_timeout"]
        return S3Store(bucket, **kwargs)
