"""The library's log records as the command line prints them.

The library reports progress through :mod:`logging` (``logging.getLogger(__name__)``, INFO
lines such as ``cluster: local, 2 workers, dashboard ...``): a notebook or another program
sees them as its logging set-up decides (by default, warnings and worse only). The command
line shows them as plain lines while a verb runs: INFO and below on stdout, warnings and
worse on stderr, the message only.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager


class _PlainLines(logging.Handler):
    """``print`` each record's message to the *current* ``sys.stdout`` or ``sys.stderr``
    (looked up at every record: tests and callers may replace them between calls)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stderr if record.levelno >= logging.WARNING else sys.stdout
            print(self.format(record), file=stream, flush=True)
        except Exception:
            self.handleError(record)


@contextmanager
def library_lines(name: str = "pangeo_hpc", level: int = logging.INFO) -> Iterator[None]:
    """Print the records of logger ``name`` at ``level`` and above while the block runs.

    The handler and the logger's level are restored afterwards, so that ``main()`` called
    from Python leaves the caller's logging as it was. A level the user set lower (e.g.
    ``DEBUG``) is kept.
    """
    logger = logging.getLogger(name)
    handler = _PlainLines(level)
    handler.setFormatter(logging.Formatter("%(message)s"))
    before = logger.level
    if before == logging.NOTSET or before > level:
        logger.setLevel(level)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)
