"""Fixtures of the batch tests: runs computed on one in-process Dask cluster per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from distributed import Client, LocalCluster


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """A Dask client of an in-process cluster (two workers of one thread each, threads of
    this process: no worker processes to start), shared by the tests of a module."""
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster,
        Client(cluster) as c,
    ):
        yield c
