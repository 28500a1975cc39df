"""What an S3 failure means for the user: one line naming the bucket, key or endpoint and
the fix (a missing bucket or key, refused credentials, throttling, server errors after the
retries, time-outs), from obstore, s3fs or botocore errors alike.
"""

from __future__ import annotations

import errno
import re

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.s3.options import S3Options, client_timeouts

__all__ = ["denied", "explain", "timed_out"]

_CODE = re.compile(r"<Code>([A-Za-z]+)</Code>")
#: obstore's "Server returned non-2xx status code: 500 Internal Server Error"
_SERVER_STATUS = re.compile(r"status code: (5\d\d [A-Za-z ]*[A-Za-z])")
#: obstore's "Error performing GET ... after 3 retries, max_retries: 3, ...", or (no retry
#: said in the message) its debug text's "retries: 0,"
_RETRIES = re.compile(r"after (\d+) retries|\bretries: (\d+),")


#: S3 error codes, and client error types, of credentials refused for what they asked
_DENIED_CODES = ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AllAccessDisabled")
_DENIED_TYPES = ("PermissionDeniedError", "UnauthenticatedError", "PermissionError")


def denied(exc: BaseException) -> str | None:
    """The code of an S3 refusal of the credentials (``AccessDenied``, ...; ``forbidden``
    when obstore or s3fs say only that), or ``None`` for any other failure.

    Parameters
    ----------
    exc : BaseException
        The failure.

    Returns
    -------
    str or None
        The code.

    Examples
    --------
    >>> denied(OSError("<Code>AccessDenied</Code>")), denied(OSError("timed out"))
    ('AccessDenied', None)
    """
    code = next(iter(_CODE.findall(str(exc))), "")
    if code in _DENIED_CODES or type(exc).__name__ in _DENIED_TYPES:
        return code or "forbidden"
    return None


def _retries(exc: BaseException) -> int:
    """How often the failed request was retried: as obstore or botocore (its response's
    ``RetryAttempts``, behind s3fs's error) report it, else as configured."""
    found = _RETRIES.search(str(exc))
    if found:
        return int(found.group(1) or found.group(2))
    link: BaseException | None = exc
    while link is not None:
        response = getattr(link, "response", None)  # botocore's ClientError
        meta = response.get("ResponseMetadata", {}) if isinstance(response, dict) else {}
        if "RetryAttempts" in meta:
            return int(meta["RetryAttempts"])
        link = link.__cause__
    return int(config.get("s3.max-retries"))


def timed_out(exc: BaseException) -> str | None:
    """``"connect"`` or ``"read"`` if ``exc`` (or an error it was raised from) is a
    time-out of that phase, as obstore (reqwest's ``TimedOut``), botocore
    (``ConnectTimeoutError``, ``ReadTimeoutError``) or aiohttp report it; else ``None``.

    Parameters
    ----------
    exc : BaseException
        An exception.

    Returns
    -------
    str | None
        The phase, or ``None``.

    Examples
    --------
    >>> from botocore.exceptions import ConnectTimeoutError
    >>> timed_out(ConnectTimeoutError(endpoint_url="http://localhost:8333"))
    'connect'
    >>> timed_out(TimeoutError()), timed_out(ValueError())
    ('read', None)
    """
    link: BaseException | None = exc
    while link is not None:
        name, text = type(link).__name__, str(link)
        if "Timeout" in name or "TimedOut" in text or "kind: Timeout" in text:
            connect = "Connect" in name or "kind: Connect" in text or "onnect timeout" in text
            return "connect" if connect else "read"
        link = link.__cause__ or link.__context__
    return None


def explain(exc: BaseException, url: str, opts: S3Options) -> InputError | None:
    """A one-line :class:`InputError` for an S3 failure a user can fix, else ``None``.

    Covers a missing bucket or key, refused credentials, an endpoint that does not answer
    (or not in time: the time-out to raise is named), and throttling or server errors (5xx)
    that outlasted the retries. Works on obstore,
    s3fs and botocore errors.

    Parameters
    ----------
    exc : BaseException
        The failure.
    url : str
        The URL that was read.
    opts : S3Options
        The S3 options used.

    Returns
    -------
    InputError | None
        The error to raise, or ``None``.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> opts = S3Options(endpoint_url="http://localhost:8333", anon=True)
    >>> print(explain(FileNotFoundError("era5-pds/x.nc"), "s3://era5-pds/x.nc", opts))
    's3://era5-pds/x.nc' does not exist on http://localhost:8333: check the prefix with ...
    >>> explain(ValueError("a bug"), "s3://era5-pds/x.nc", opts) is None
    True
    """
    text = str(exc)
    code = next(iter(_CODE.findall(text)), "")
    where = opts.shown_endpoint or "AWS S3"
    if code == "NoSuchBucket" or (code == "" and "NoSuchBucket" in text):
        return InputError(f"bucket of {url!r} does not exist on {where}: check the name")
    if code in ("NoSuchKey",) or type(exc).__name__ in ("NotFoundError", "FileNotFoundError"):
        call = f"pangeo_hpc.storage.inventory.inventory({url!r})"
        return InputError(
            f"{url!r} does not exist on {where}: check the prefix with {call}",
            commands={call: ["inventory", url]},
        )
    refused = denied(exc)
    if refused is not None:
        fix = (
            "the bucket is not public; drop anon=True and use credentials"
            if opts.anon
            else "check AWS_PROFILE / AWS_ACCESS_KEY_ID, or pass anon=True for a public bucket"
        )
        return InputError(f"access to {url!r} denied ({refused}): {fix}", param="anon")
    if (
        code in ("SlowDown", "Throttling", "TooManyRequests", "RequestLimitExceeded")
        or " 503 " in text
    ):
        return InputError(
            f"{where} kept throttling requests for {url!r} (503 SlowDown) after "
            f"{config.get('s3.max-retries')} retries with backoff: lower the concurrency "
            "(pangeo-hpc.s3.list-concurrency) or try again later"
        )
    status = _SERVER_STATUS.search(text)
    if status or (isinstance(exc, OSError) and exc.errno == errno.EREMOTEIO):  # s3fs: 500
        what = status.group(1) if status else getattr(exc, "strerror", None) or "a server error"
        return InputError(
            f"S3 endpoint {where} answered {what!r} for {url!r} after {_retries(exc)} "
            "retries with backoff: the server is failing or shutting down; check that it "
            "runs (and endpoint_url=), then run again",
            param="endpoint_url",
        )
    phase = timed_out(exc)
    if phase is not None:
        seconds = getattr(client_timeouts(), phase)
        what = (
            "did not accept a connection within" if phase == "connect" else "sent no answer within"
        )
        return InputError(
            f"S3 endpoint {where} {what} {seconds:g} s (for {url!r}; {_retries(exc)} retries "
            f"with backoff): check that the server works, or raise "
            f"pangeo-hpc.s3.{phase}-timeout (e.g. "
            f"DASK_PANGEO_HPC__S3__{phase.upper()}_TIMEOUT={max(120, 4 * seconds):g})"
        )
    if (
        "error sending request" in text
        or "Connect" in type(exc).__name__
        or "connect" in text.lower()
    ):
        return InputError(
            f"S3 endpoint {where} does not answer (for {url!r}): check endpoint_url= and "
            f"that the server runs (no answer after {_retries(exc)} retries with backoff)",
            param="endpoint_url",
        )
    return None
