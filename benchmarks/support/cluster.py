"""The platform's local Dask cluster as the cases use it, and its workers' processes."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def local_client(workers: int | None = None, threads: int | None = None) -> Iterator[Any]:
    """The platform's local cluster (``get_cluster("local")``: one process per core by
    default) and a client on it, closed on exit."""
    from distributed import Client

    from pangeo_hpc.clusters.start import get_cluster

    with (
        get_cluster("local", workers=workers, threads_per_worker=threads) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(len(cluster.workers))
        yield client


def worker_pids(client: Any) -> dict[str, int]:
    """Worker address -> process id."""
    return dict(client.run(os.getpid))
