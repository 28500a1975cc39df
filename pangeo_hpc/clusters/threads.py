"""A client of this process's threads: the part of :class:`distributed.Client` a run uses,
computed by dask's local threaded scheduler, without distributed.

A run whose plan reads little (:mod:`pangeo_hpc.batch.pipeline.placement`), or nothing
(every state cached), gains nothing from a scheduler: the in-process
:class:`distributed.LocalCluster` it started before cost it distributed's imports
(0.5-0.75 s on the 2-core reference VM, msgpack, tornado, zict, ...), the cluster's start
and close, and threads to join at exit. :class:`ThreadClient` answers the calls the run
makes of a client (``compute``, ``run``, ``scheduler_info``), computing each graph with
``dask.compute(..., scheduler=dask.threaded.get)``: an explicit scheduler, so the chain's
laziness guard (``dask.config.set(scheduler=...)`` in :mod:`pangeo_hpc.batch.chains.chain`)
does not apply to it, just as it does not to a distributed client. The scheduler is given
as the function, not as its name ``"threads"``: for a name, ``dask.base.get_scheduler``
imports distributed to look for a client first (dask 2025), the import this client is
there to avoid.

Its futures are :class:`concurrent.futures.Future`: a :class:`~dask.delayed.Delayed` among
the collections of one :meth:`ThreadClient.compute` call is finished as soon as its task
is (a per-file state is saved as it arrives, so that a killed run keeps it), the others
when the whole graph is; :func:`as_completed` yields either kind of future.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent import futures as cf
from contextlib import contextmanager
from typing import Any

import dask
import dask.threaded
from dask.callbacks import Callback
from dask.delayed import Delayed

__all__ = ["ThreadClient", "ThreadFuture", "as_completed", "no_client_lookup"]

#: the one "worker" :meth:`ThreadClient.scheduler_info` lists (an in-process cluster had one)
WORKER = "threads"


class ThreadFuture(cf.Future):
    """A :class:`concurrent.futures.Future` with what :func:`pangeo_hpc.cli.progress.show_progress`
    asks of a distributed future: ``key``, ``client`` and ``status``.

    Parameters
    ----------
    key : str
        The task's key.
    client : ThreadClient
        The client that runs it.

    Examples
    --------
    >>> import dask
    >>> from pangeo_hpc.clusters.threads import ThreadClient
    >>> future = ThreadClient(2).compute(dask.delayed(max)([4, 2]))
    >>> future.result(), future.status
    (4, 'finished')
    """

    def __init__(self, key: str, client: ThreadClient) -> None:
        super().__init__()
        self.key = key
        self.client = client

    @property
    def status(self) -> str:
        """``"pending"``, ``"finished"``, ``"error"`` or ``"cancelled"``, as distributed says."""
        if not self.done():
            return "pending"
        if self.cancelled():
            return "cancelled"
        return "error" if self.exception() is not None else "finished"


class _Count(Callback):
    """Tasks of one graph done and in all; finishes a Delayed's future with its task."""

    def __init__(self, single: dict[Any, ThreadFuture]) -> None:
        super().__init__()
        self.single = single
        self.total = 0
        self.done = 0

    def _start_state(self, dsk: Any, state: dict[str, Any]) -> None:
        self.total = len(dsk)

    def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
        self.done += 1
        future = self.single.pop(key, None)
        if future is not None and not future.done():
            future.set_result(result)


class ThreadClient:
    """What a run asks of a distributed client, answered in this process's threads.

    Parameters
    ----------
    threads : int
        Threads of the threaded scheduler (``num_workers``).

    Examples
    --------
    >>> import dask
    >>> client = ThreadClient(2)
    >>> client.compute(dask.delayed(sum)([1, 2, 3])).result()
    6
    >>> client.run(lambda: 1)
    {'threads': 1}
    """

    #: no cluster object: :func:`pangeo_hpc.clusters.start.kind_of` says "local"
    cluster = None

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._counts: dict[str, _Count] = {}
        self._lock = threading.Lock()

    def scheduler_info(self) -> dict[str, Any]:
        """One worker, with this client's threads (as an in-process cluster listed).

        Returns
        -------
        dict[str, Any]
            As :meth:`distributed.Client.scheduler_info`'s.

        Examples
        --------
        >>> from pangeo_hpc.clusters.threads import ThreadClient
        >>> ThreadClient(4).scheduler_info()
        {'workers': {'threads': {'nthreads': 4}}}
        """
        return {"workers": {WORKER: {"nthreads": self.threads}}}

    def run(self, function: Callable[[], Any]) -> dict[str, Any]:
        """``function()`` here, keyed as the one worker's answer.

        Parameters
        ----------
        function : Callable[[], Any]
            A function of no arguments.

        Returns
        -------
        dict[str, Any]
            Its result under this client's one worker address.

        Examples
        --------
        >>> import os
        >>> from pangeo_hpc.clusters.threads import ThreadClient
        >>> ThreadClient(2).run(lambda: os.getpid() > 0)
        {'threads': True}
        """
        return {WORKER: function()}

    def run_on_scheduler(self, function: Any, key: str) -> tuple[int, int] | None:
        """Tasks of the computation ``key`` not done yet, and in all (``function``, the
        scheduler-side counter of :mod:`pangeo_hpc.cli.progress`, is not needed here);
        None before its graph has started.

        Parameters
        ----------
        function : Any
            Ignored.
        key : str
            The computation's key.

        Returns
        -------
        (int, int) or None
            Tasks left and in all, or ``None``.

        Examples
        --------
        >>> import threading, time
        >>> import dask
        >>> from pangeo_hpc.clusters.threads import ThreadClient
        >>> client, gate = ThreadClient(1), threading.Event()
        >>> future = client.compute(dask.delayed(gate.wait)())
        >>> while client.run_on_scheduler(None, key=future.key) is None:  # until the graph starts
        ...     time.sleep(0.01)
        >>> client.run_on_scheduler(None, key=future.key)  # tasks left, in all
        (1, 1)
        >>> gate.set(), future.result()
        (None, True)
        """
        with self._lock:
            count = self._counts.get(key)
        if count is None or not count.total:
            return None
        return count.total - count.done, count.total

    def compute(self, collections: Any) -> Any:
        """Start computing ``collections`` (one, or a list) in a background thread; return
        a :class:`ThreadFuture` for each (a list for a list).

        Parameters
        ----------
        collections : dask collection or list
            A dask collection or a list of them.

        Returns
        -------
        ThreadFuture or list of ThreadFuture
            The futures.

        Examples
        --------
        >>> import dask
        >>> from pangeo_hpc.clusters.threads import ThreadClient
        >>> futures = ThreadClient(2).compute([dask.delayed(sum)([1, 2]), dask.delayed(len)("abc")])
        >>> [f.result() for f in futures]
        [3, 3]
        """
        many = isinstance(collections, list | tuple)
        items = list(collections) if many else [collections]
        keys = [f"threads-{id(self):x}-{id(x):x}-{n}" for n, x in enumerate(items)]
        outs = [ThreadFuture(k, self) for k in keys]
        single = {x.key: f for x, f in zip(items, outs, strict=True) if isinstance(x, Delayed)}
        count = _Count(single)
        with self._lock:
            for k in keys:
                self._counts[k] = count

        def work() -> None:
            try:
                values = dask.compute(
                    *items,
                    scheduler=dask.threaded.get,  # a function: see the module's text
                    num_workers=self.threads,
                    callbacks=[count._callback],  # this graph's only: not another thread's
                )
            except BaseException as exc:
                for f in outs:
                    if not f.done():
                        f.set_exception(exc)
                return
            finally:
                with self._lock:
                    for k in keys:
                        self._counts.pop(k, None)
            for f, v in zip(outs, values, strict=True):
                if not f.done():
                    f.set_result(v)

        threading.Thread(target=work, name="pangeo-hpc-compute", daemon=True).start()
        return outs if many else outs[0]

    def close(self) -> None:
        """Nothing to close (for the ``with`` of a distributed client).

        Examples
        --------
        >>> from pangeo_hpc.clusters.threads import ThreadClient
        >>> with ThreadClient(2) as client:  # close() at the end, as a distributed client's
        ...     client.run(lambda: "ran")
        {'threads': 'ran'}
        """

    def __enter__(self) -> ThreadClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def as_completed(futures: Iterable[Any]) -> Iterator[Any]:
    """``futures`` as they finish: :class:`ThreadFuture` through
    :func:`concurrent.futures.as_completed`, distributed's through its own.

    Parameters
    ----------
    futures : Iterable[Any]
        Futures of one client (all thread futures or all distributed ones).

    Returns
    -------
    iterator
        The futures, each once done.

    Examples
    --------
    >>> import dask
    >>> from pangeo_hpc.clusters.threads import ThreadClient, as_completed
    >>> futures = ThreadClient(2).compute([dask.delayed(abs)(-3), dask.delayed(abs)(-5)])
    >>> sorted(f.result() for f in as_completed(futures))
    [3, 5]
    """
    futures = list(futures)
    if all(isinstance(f, cf.Future) for f in futures):
        return cf.as_completed(futures)
    from distributed import as_completed as distributed_as_completed

    return iter(distributed_as_completed(futures))


@contextmanager
def no_client_lookup() -> Iterator[None]:
    """While this process has never imported distributed, ``import dask.distributed``
    fails at once (ImportError) inside the block.

    xarray's ``to_netcdf`` asks whether dask's scheduler is a distributed client by
    importing ``dask.distributed`` and catching ImportError
    (``xarray.backends.locks.get_dask_scheduler``, xarray 2025-2026): for a run without a
    cluster that import, 0.5-0.75 s of distributed, tornado and msgpack, answered "no".
    A process that never imported distributed has no client, so the answer is the same.
    Only ``dask.distributed`` is held back, only for the block (a result's writing), and
    not at all once distributed is imported.

    Yields
    ------
    None
        Control, with the import refused.

    Examples
    --------
    >>> from pangeo_hpc.clusters.threads import no_client_lookup
    >>> with no_client_lookup():  # doctest: +SKIP
    ...     result.to_netcdf("out.nc")  # no 0.5 s import of distributed to learn there is no client
    """
    if "distributed" in sys.modules or "dask.distributed" in sys.modules:
        yield
        return
    sys.modules["dask.distributed"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if "dask.distributed" in sys.modules and sys.modules["dask.distributed"] is None:
            del sys.modules["dask.distributed"]
