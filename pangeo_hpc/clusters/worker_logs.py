"""Workers keep quiet about failures the user is told about in one line anyway.

When a task raises, distributed's worker logs it (``distributed.worker``, ERROR): "Compute
Failed", the task's key, state, repr, the exception and its traceback, seven lines, before
the client raises the same exception where ``compute()`` was called. For a bug those lines
are the evidence. For bad input they are noise in front of the one line the command line
prints: a damaged chunk of an input file
(:class:`~pangeo_hpc.errors.DamagedInputError`) is raised in a task, and the user is to
read which file and chunk, not a traceback. So workers drop the "Compute Failed" record of
an :class:`~pangeo_hpc.errors.InputError` (recognised by its class name at the head of the
record's exception text, ``repr(exc)``); every other exception keeps its record.

They also drop "Async instruction for <Task ...> ended with CancelledError"
(``distributed.worker.state_machine``, WARNING), which distributed logs for each task still
running when a worker closes: after a failure the cluster closes with the other tasks in
flight, and those lines are the closing, not a failure. For the same reason they drop
"Failed to communicate with scheduler during heartbeat." (with its traceback) when the
worker is closing: a heartbeat in flight as the worker closes its connections fails with
"Stream is closed"; while the worker runs, the same record (a scheduler gone) is kept.

:class:`QuietInputErrors` is a worker plugin: :func:`quiet_input_errors` registers it with a
client, so that every worker of the cluster, those that join later included, filters its
own records (a filter on the two loggers, removed when the plugin is).
"""

from __future__ import annotations

import logging
from typing import Any

from distributed import Client, WorkerPlugin
from distributed.core import Status

from pangeo_hpc.errors import InputError

__all__ = ["QuietInputErrors", "quiet_input_errors"]

#: the loggers of distributed's worker that the filter sits on
LOGGERS = ("distributed.worker", "distributed.worker.state_machine")
#: the worker's states in which a failed heartbeat is its own closing
CLOSING = (Status.closing, Status.closing_gracefully, Status.closed)


def _subclass_names(cls: type) -> set[str]:
    names = {cls.__name__}
    for sub in cls.__subclasses__():
        names |= _subclass_names(sub)
    return names


class InputErrorFilter(logging.Filter):
    """Drops the worker's records of input errors, and of tasks cancelled as it closes.

    Parameters
    ----------
    worker : distributed.Worker, optional
        The worker whose records are filtered: with it, a failed heartbeat is dropped while
        the worker is closing (without it, such records are all kept).

    Examples
    --------
    >>> import logging
    >>> from pangeo_hpc.clusters.worker_logs import InputErrorFilter
    >>> logging.getLogger("distributed.worker").addFilter(InputErrorFilter())  # doctest: +SKIP
    """

    def __init__(self, worker: Any = None) -> None:
        super().__init__()
        self.worker = worker

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether ``record`` is kept: not a task's failure with an input error, nor a task
        cancelled or a heartbeat failed as the worker closes.

        Parameters
        ----------
        record : logging.LogRecord
            A worker's log record.

        Returns
        -------
        bool
            ``False`` to drop it.

        Examples
        --------
        >>> import logging
        >>> from pangeo_hpc.clusters.worker_logs import InputErrorFilter
        >>> def record(*args):
        ...     return logging.LogRecord("w", 40, "", 0, "Compute Failed %s %s", args, None)
        >>> keep = InputErrorFilter().filter
        >>> keep(record("key", "InputError('bad year')")), keep(record("key", "MemoryError()"))
        (False, True)
        """
        msg = record.msg if isinstance(record.msg, str) else ""
        if msg.startswith("Compute Failed") and isinstance(record.args, tuple):
            texts = [a for a in record.args if isinstance(a, str)]
            # the exception's repr, "DamagedInputError('...')", is the first text after the
            # key, state and task: look at every text, whatever their order
            names = _subclass_names(InputError)
            return not any(t.partition("(")[0] in names for t in texts)
        if msg.startswith("Async instruction for") and msg.endswith("ended with CancelledError"):
            return False
        if msg.startswith("Failed to communicate with scheduler during heartbeat"):
            return getattr(self.worker, "status", None) not in CLOSING
        return True


class QuietInputErrors(WorkerPlugin):
    """A worker plugin that puts :class:`InputErrorFilter` on the worker's loggers.

    Examples
    --------
    >>> from pangeo_hpc.clusters.worker_logs import QuietInputErrors
    >>> client.register_plugin(QuietInputErrors())  # doctest: +SKIP
    """

    name = "pangeo-hpc-quiet-input-errors"
    idempotent = True

    def __init__(self) -> None:
        self._filter = InputErrorFilter()

    def setup(self, worker: Any) -> None:
        """Add the filter (bound to ``worker``) to the worker's loggers.

        Parameters
        ----------
        worker : distributed.Worker
            The worker (passed by distributed).

        Examples
        --------
        >>> import logging
        >>> from pangeo_hpc.clusters.worker_logs import LOGGERS, QuietInputErrors
        >>> plugin = QuietInputErrors()
        >>> plugin.setup(worker=None)
        >>> plugin._filter in logging.getLogger(LOGGERS[0]).filters
        True
        >>> plugin.teardown(worker=None)
        """
        self._filter.worker = worker
        for name in LOGGERS:
            logging.getLogger(name).addFilter(self._filter)

    def teardown(self, worker: Any) -> None:
        """Take the filter off the worker's loggers.

        Parameters
        ----------
        worker : distributed.Worker
            The worker (passed by distributed).

        Examples
        --------
        >>> import logging
        >>> from pangeo_hpc.clusters.worker_logs import LOGGERS, QuietInputErrors
        >>> plugin = QuietInputErrors()
        >>> plugin.setup(worker=None)
        >>> plugin.teardown(worker=None)
        >>> plugin._filter in logging.getLogger(LOGGERS[0]).filters
        False
        """
        for name in LOGGERS:
            logging.getLogger(name).removeFilter(self._filter)


def quiet_input_errors(client: Client) -> None:
    """Register :class:`QuietInputErrors` on the workers of ``client``'s cluster, present and
    future.

    Parameters
    ----------
    client : Client
        A client of the cluster.

    Examples
    --------
    >>> from pangeo_hpc.clusters.worker_logs import quiet_input_errors
    >>> quiet_input_errors(client)  # doctest: +SKIP
    """
    client.register_plugin(QuietInputErrors())
