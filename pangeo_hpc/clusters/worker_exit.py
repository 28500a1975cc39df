"""Local worker processes end as soon as they have closed, without tearing Python down.

A local cluster's ``close()`` asks each nanny to close its worker and waits for the worker
process to end. After the worker has closed (its tasks done, its scratch folder removed,
its nanny told), the process still runs Python's exit: the ``atexit`` handlers, then the
teardown of every module a task imported (xarray, dask, numba, h5py, ...). On the 2-core VM
that took 3.3-3.9 s of every ``close()`` of two workers under load (0.1-0.2 s without), and
past the nanny's patience distributed kills the process and says so ("Worker process still
alive after 4.0 seconds, killing").

:class:`QuickExit` is a worker plugin: once its worker closed normally (the plugin's
``teardown``), an ``atexit`` handler, registered when the worker started, flushes the
standard streams and ends the process with status 0 (``os._exit``). Handlers registered
after it (by what the tasks imported) have run by then; those registered before it are
distributed's and multiprocessing's, whose work the worker's close already did. A worker
that did not close normally exits as before. Only in a worker process of its own: a worker
in the client's process (``processes=False``) is left alone.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import sys
from typing import Any

from distributed import Client, WorkerPlugin

__all__ = ["QuickExit", "quick_exit"]


class QuickExit(WorkerPlugin):
    """A worker plugin: the worker's process ends right after a normal close.

    Examples
    --------
    >>> from pangeo_hpc.clusters.worker_exit import QuickExit
    >>> client.register_plugin(QuickExit())  # doctest: +SKIP
    """

    name = "pangeo-hpc-quick-exit"
    idempotent = True

    def __init__(self) -> None:
        self.closed = False

    def setup(self, worker: Any) -> None:
        """Register the quick exit at the worker process's exit (not in the client's own
        process).

        Parameters
        ----------
        worker : distributed.Worker
            The worker (passed by distributed).

        Examples
        --------
        >>> from pangeo_hpc.clusters.worker_exit import QuickExit
        >>> plugin = QuickExit()
        >>> plugin.setup(worker=None)  # in the client's own process: nothing registered
        >>> plugin.closed
        False
        """
        if multiprocessing.parent_process() is None:
            return  # the client's own process: its exit is the caller's
        self.closed = False
        atexit.register(self._exit)

    def teardown(self, worker: Any) -> None:
        """Note that the worker closed: the quick exit may then skip the interpreter's
        teardown.

        Parameters
        ----------
        worker : distributed.Worker
            The worker (passed by distributed).

        Examples
        --------
        >>> from pangeo_hpc.clusters.worker_exit import QuickExit
        >>> plugin = QuickExit()
        >>> plugin.teardown(worker=None)  # distributed calls it as the worker closes
        >>> plugin.closed
        True
        """
        self.closed = True

    def _exit(self) -> None:
        if not self.closed:
            return
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed stream: nothing more to say
                pass
        os._exit(0)


def quick_exit(client: Client) -> None:
    """Register :class:`QuickExit` on the workers of ``client``'s cluster, present and
    future.

    Parameters
    ----------
    client : Client
        A client of the cluster.

    Examples
    --------
    >>> from pangeo_hpc.clusters.worker_exit import quick_exit
    >>> quick_exit(client)  # doctest: +SKIP
    """
    client.register_plugin(QuickExit())
