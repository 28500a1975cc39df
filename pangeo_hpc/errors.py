"""Exceptions that mean "the user asked for something that cannot be done as asked".

The CLI turns them into one line on stderr and exit code 2; anything else is an internal
failure (exit code 1).
"""

from __future__ import annotations


class InputError(ValueError):
    """A bad value given by the user; the message names the value and the fix."""


class DataNotFoundError(InputError, FileNotFoundError):
    """Requested data (files, months, variables) are not where they were looked for."""


class MissingExtraError(InputError, ImportError):
    """An optional feature whose packages are not installed; the message names the extra that
    installs them (``pip install 'pangeo-hpc[s3]'``). An :class:`ImportError` for Python code,
    an :class:`InputError` for the CLI (one line, exit code 2)."""


class ClusterError(RuntimeError):
    """The cluster could not be started or its workers did not come; the message says why."""


class StorageError(OSError):
    """Storage failed while data were read (an endpoint went away, throttling outlasted the
    retries); the message says what and where. The CLI prints it on one line, exit code 1."""


def shown(value: object) -> str:
    """``repr(value)`` on one line and at most 60 characters, for an error message."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."
