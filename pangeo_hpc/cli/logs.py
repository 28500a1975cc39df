"""The library's log records as the command line prints them.

The library reports progress through :mod:`logging` (``logging.getLogger(__name__)``, INFO
lines such as ``cluster: local, 2 workers, dashboard ...``): a notebook or another program
sees them as its logging set-up decides (by default, warnings and worse only). The command
line shows them as plain lines while a verb runs: INFO and below on stdout, warnings and
worse on stderr, the message only, with the credentials of URLs hidden
(:func:`pangeo_hpc.errors.redact`). The package's own warnings (:mod:`warnings`, e.g. a
damaged cache entry or a full disk under the state cache) are one line on stderr too,
``warning: MESSAGE``, instead of Python's two lines of source file, line and code.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pangeo_hpc.errors import redact


class _PlainLines(logging.Handler):
    """``print`` each record's message to the *current* ``sys.stdout`` or ``sys.stderr``
    (looked up at every record: tests and callers may replace them between calls)."""

    def emit(self, record: logging.LogRecord) -> None:
        stream = sys.stderr if record.levelno >= logging.WARNING else sys.stdout
        try:
            print(redact(self.format(record)), file=stream, flush=True)
        except BrokenPipeError:  # its reader left (`| head`): the run goes on, unheard
            quiet(stream)
        except Exception:
            self.handleError(record)


def quiet(stream: Any) -> None:
    """Send whatever is still written to ``stream`` to ``/dev/null``: its reader left (a
    closed pipe, ``pangeo-hpc run ... | head``). The run goes on to its end without a
    traceback for every later line (Python's advice for ``BrokenPipeError``: its file
    descriptor pointed at ``os.devnull``). A stream with no file behind it is left alone.

    Parameters
    ----------
    stream : Any
        ``sys.stdout`` or ``sys.stderr``.

    Examples
    --------
    >>> import io
    >>> quiet(io.StringIO())  # no file descriptor: nothing to do
    """
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def _is_ours(category: type[Warning]) -> bool:
    return category.__module__.split(".")[0] == "pangeo_hpc"


@contextmanager
def library_lines(name: str = "pangeo_hpc", level: int = logging.INFO) -> Iterator[None]:
    """Print the records of logger ``name`` at ``level`` and above while the block runs.

    The handler and the logger's level are restored afterwards, so that ``main()`` called
    from Python leaves the caller's logging as it was. A level the user set lower (e.g.
    ``DEBUG``) is kept. Warnings of the package's own categories are printed as one line,
    ``warning: MESSAGE`` on the current ``sys.stderr``; others as Python prints them.

    Parameters
    ----------
    name : str, optional
        The logger whose records are printed.
    level : int, optional
        The least level printed, unless the user set the logger lower.

    Yields
    ------
    None
        Control, while the records are printed.

    Examples
    --------
    >>> import contextlib, logging, sys
    >>> with contextlib.redirect_stderr(sys.stdout), library_lines():
    ...     logging.getLogger("pangeo_hpc.storage").info("staged 3 files")
    staged 3 files
    """
    logger = logging.getLogger(name)
    handler = _PlainLines(level)
    handler.setFormatter(logging.Formatter("%(message)s"))
    before = logger.level
    if before == logging.NOTSET or before > level:
        logger.setLevel(level)
    logger.addHandler(handler)
    shown = warnings.showwarning

    def one_line(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        if not _is_ours(category):
            shown(message, category, filename, lineno, file, line)
            return
        try:
            print(f"warning: {redact(str(message))}", file=sys.stderr, flush=True)
        except OSError:
            pass  # stderr gone (a closed pipe): as Python's own showwarning

    warnings.showwarning = one_line
    try:
        yield
    finally:
        if warnings.showwarning is one_line:  # unless the block replaced it in turn
            warnings.showwarning = shown
        logger.removeHandler(handler)
        logger.setLevel(before)
