"""Exceptions that mean "the user asked for something that cannot be done as asked".

The CLI turns them into one line on stderr and exit code 2; anything else is an internal
failure (exit code 1).

Messages speak Python: a bad argument is named as the caller wrote it (``price='abc'``,
``pass overwrite=True``) and a fix is a function to call (``calibrate('era5-sst-mean')``).
An error says which parameters its message names (``param``) and which calls it suggests
(``commands``, each with the CLI words that do the same), so that the command line can
show its flags and verbs instead (:func:`pangeo_hpc.cli.common.for_cli`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence


class Hinted(Exception):
    """An error whose message names parameters (``name=...``) and calls a user may fix it with.

    Parameters
    ----------
    message : str
        One line naming the value and the fix.
    param : str or sequence of str, optional
        The parameters the message names as ``name=`` (``"price"``, or ``("start", "end")``).
    commands : mapping of str to sequence of str, optional
        Calls the message suggests, exactly as written in it (``"calibrate('x')"``), each
        with the words of the CLI command that does the same (``["calibrate", "x"]``).

    Examples
    --------
    >>> err = Hinted("run calibrate('x') first", param="price",
    ...              commands={"calibrate('x')": ["calibrate", "x"]})
    >>> err.param, err.commands
    (('price',), {"calibrate('x')": ('calibrate', 'x')})
    """

    def __init__(
        self,
        message: str = "",
        *,
        param: str | Sequence[str] | None = None,
        commands: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.param: tuple[str, ...] = (param,) if isinstance(param, str) else tuple(param or ())
        self.commands: dict[str, tuple[str, ...]] = {
            call: tuple(words) for call, words in (commands or {}).items()
        }


class InputError(Hinted, ValueError):
    """A bad value given by the user; the message names the value and the fix.

    Parameters
    ----------
    message : str
        One line naming the value and the fix.
    param : str or sequence of str, optional
        The parameters the message names as ``name=`` (see :class:`Hinted`).
    commands : mapping of str to sequence of str, optional
        Calls the message suggests, each with the words of the CLI command that does the
        same (see :class:`Hinted`).

    Examples
    --------
    >>> err = InputError("start='2030-01' is after the data: give an earlier start", param="start")
    >>> isinstance(err, ValueError), err.param
    (True, ('start',))
    """


class DataNotFoundError(InputError, FileNotFoundError):
    """Requested data (files, months, variables) are not where they were looked for.

    Parameters
    ----------
    *args
        The message, as for :class:`InputError`.
    **kwargs
        ``param`` and ``commands``, as for :class:`InputError`.

    Examples
    --------
    >>> err = DataNotFoundError("no files match pattern='/data/*.nc': check the path")
    >>> isinstance(err, FileNotFoundError), isinstance(err, InputError)
    (True, True)
    """

    def __new__(cls, *args: object, **kwargs: object) -> DataNotFoundError:
        # an OSError underneath: ValueError.__new__, first in the MRO, refuses to make one
        # (tblib's unpickling, as distributed sends errors from workers, calls __new__)
        return FileNotFoundError.__new__(cls, *args)


class DamagedInputError(InputError):
    """An input file whose bytes do not decode (a damaged chunk) or that ends before its own
    index says: damaged, truncated, or changed since it was indexed. The message names the
    file and the chunk; the fix is to restore the file.

    Parameters
    ----------
    message : str, optional
        One line naming the value and the fix.
    param : str | Sequence[str] | None, optional
        The parameters the message names as ``name=``.
    commands : Mapping[str, Sequence[str]] | None, optional
        Calls the message suggests, each with the words of the CLI command that does the same.

    Examples
    --------
    >>> err = DamagedInputError("'a.nc' ends before byte 4096 that its chunk index names")
    >>> isinstance(err, InputError)
    True
    """


class MissingExtraError(InputError, ImportError):
    """An optional feature whose packages are not installed; the message names the extra that
    installs them (``pip install 'pangeo-hpc[s3]'``). An :class:`ImportError` for Python code,
    an :class:`InputError` for the CLI (one line, exit code 2).

    Parameters
    ----------
    message : str, optional
        One line naming the value and the fix.
    param : str | Sequence[str] | None, optional
        The parameters the message names as ``name=``.
    commands : Mapping[str, Sequence[str]] | None, optional
        Calls the message suggests, each with the words of the CLI command that does the same.

    Examples
    --------
    >>> err = MissingExtraError("reading s3:// needs obstore: pip install 'pangeo-hpc[s3]'")
    >>> isinstance(err, ImportError), isinstance(err, InputError)
    (True, True)
    """


class ClusterError(Hinted, RuntimeError):
    """The cluster could not be started or its workers did not come; the message says why.

    Parameters
    ----------
    message : str, optional
        One line naming the value and the fix.
    param : str | Sequence[str] | None, optional
        The parameters the message names as ``name=``.
    commands : Mapping[str, Sequence[str]] | None, optional
        Calls the message suggests, each with the words of the CLI command that does the same.

    Examples
    --------
    >>> err = ClusterError("no worker came within 60 s: see the job's log", param="timeout")
    >>> isinstance(err, RuntimeError), err.param
    (True, ('timeout',))
    """


class BudgetSpent(Hinted, RuntimeError):
    """A running cluster spent its budget and the run was stopped, its states saved; the
    message says what was spent and how to resume. The CLI prints it on one line, exit
    code 3.

    Parameters
    ----------
    message : str, optional
        One line naming the value and the fix.
    param : str | Sequence[str] | None, optional
        The parameters the message names as ``name=``.
    commands : Mapping[str, Sequence[str]] | None, optional
        Calls the message suggests, each with the words of the CLI command that does the same.

    Examples
    --------
    >>> err = BudgetSpent("spent 5.02 USD of budget='5USD': states saved; run again to resume")
    >>> isinstance(err, RuntimeError)
    True
    """


class StorageError(Hinted, OSError):
    """Storage failed while data were read (an endpoint went away, throttling outlasted the
    retries); the message says what and where. The CLI prints it on one line, exit code 1.

    Parameters
    ----------
    message : str, optional
        One line naming the value and the fix.
    param : str | Sequence[str] | None, optional
        The parameters the message names as ``name=``.
    commands : Mapping[str, Sequence[str]] | None, optional
        Calls the message suggests, each with the words of the CLI command that does the same.

    Examples
    --------
    >>> err = StorageError("S3 endpoint http://127.0.0.1:9000 answered 503 after 3 retries")
    >>> isinstance(err, OSError)
    True
    """


def shown(value: object) -> str:
    """``repr(value)`` on one line and at most 60 characters, for an error message.

    Parameters
    ----------
    value : object
        Anything.

    Returns
    -------
    str
        Its ``repr``, shortened with ``...`` past 60 characters.

    Examples
    --------
    >>> shown("2000-01")
    "'2000-01'"
    >>> shown(list(range(30)))
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16...'
    """
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def named(name: str, value: object) -> str:
    """``value`` as the user gave it, for a message: ``out='/x'`` for a parameter (a Python
    name), ``--out '/x'`` for a flag or ``pangeo-hpc.s3.index-cache '/x'`` for a setting.

    Parameters
    ----------
    name : str
        A parameter name (``out``), a flag (``--out``) or a setting (``pangeo-hpc.s3.index-cache``).
    value : object
        The value given.

    Returns
    -------
    str
        ``name`` and the shown value, in the form that fits ``name``.

    Examples
    --------
    >>> named("out", "/x"), named("--out", "/x"), named("pangeo-hpc.s3.index-cache", 3)
    ("out='/x'", "--out '/x'", 'pangeo-hpc.s3.index-cache 3')
    """
    text = repr(str(value)) if isinstance(value, str | os.PathLike) else repr(value)
    return f"{name}={text}" if name.isidentifier() else f"{name} {text}"


#: a URL's user information: ``scheme://USER:PASSWORD@`` (up to the host's last ``@``)
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/?#\s]*)@")
#: query parameters that carry a secret: S3 and GCS presigned URLs (``X-Amz-Signature``,
#: ``X-Amz-Credential``, ``X-Amz-Security-Token``, ``X-Goog-Signature``), Azure SAS
#: (``sig``), the older S3 form (``Signature``, ``AWSAccessKeyId``), tokens, keys, passwords
_SECRET_PARAM = re.compile(
    r"(?P<name>[?&;](?:[\w.-]*(?:signature|credential|token|secret|password|passw|"
    r"apikey|api_key|access_?key|accesskeyid)[\w.-]*|sig|key|code|auth|pwd))="
    r"(?P<value>[^&#\s'\"]*)",
    re.IGNORECASE,
)
#: what stands for a secret in a redacted URL
HIDDEN = "***"


def redact(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced by ``***``.

    A password in a URL's user information (``http://ana:***@host``; a user name without a
    password, which may be a token, as a whole: ``https://***@host``) and the values of
    query parameters that carry secrets (presigned URLs' ``X-Amz-Signature`` and
    ``X-Amz-Credential``, ``token``, ``sig``, ``password`` ...). Everything that prints or
    records a URL, or a message that may hold one, goes through here: error lines, log
    lines, ``summary.json``, ``repr`` of the S3 options.

    Parameters
    ----------
    text : str
        Any text, which may hold URLs.

    Returns
    -------
    str
        ``text`` with every URL's credentials replaced by ``***``.

    Examples
    --------
    >>> redact("S3 endpoint http://ana:s3cr3t@minio:9000 does not answer")
    'S3 endpoint http://ana:***@minio:9000 does not answer'
    >>> redact("https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA%2F&X-Amz-Signature=ab12&x=1")
    'https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&x=1'
    """

    def userinfo(m: re.Match[str]) -> str:
        user, colon, _ = m["info"].partition(":")
        return f"{m['head']}{user}:{HIDDEN}@" if colon else f"{m['head']}{HIDDEN}@"

    return _SECRET_PARAM.sub(rf"\g<name>={HIDDEN}", _USERINFO.sub(userinfo, text))
