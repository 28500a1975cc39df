"""An update (states of most files cached) computes its few new files' states in the
client's own threads when the workers are a LocalCluster's: a task's round trip to a worker
costs more than reading one monthly file. The answer is the workers' to the bit; the bytes
are counted where they were read; other clients and S3 data stay on the workers."""

from __future__ import annotations

import logging
import shutil
from types import SimpleNamespace

import dask
import numpy as np
import pytest
from distributed import Client

from pangeo_hpc.batch.incremental.read_plan import ReadPlan
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.batch.pipeline import steps
from pangeo_hpc.batch.pipeline.steps import compute, open_inputs
from pangeo_hpc.clusters.start import local_cluster
from pangeo_hpc.io.byte_reads import bytes_read

KEY = "pangeo-hpc.cluster.states-here-bytes"
RECIPE = "era5-sst-trend"


@pytest.fixture(scope="module")
def client():
    """One worker in a process of its own (what it reads is counted there, not here), made
    by the package's own helper: a plain LocalCluster would set distributed's
    MALLOC_TRIM_THRESHOLD_ in this process's environment, for every later cluster's workers
    to inherit (test_local_workers_get_the_environment failed after it)."""
    with local_cluster(workers=1) as cluster, Client(cluster) as c:
        yield c


def _worker_bytes(client: Client) -> int:
    return sum(client.run(bytes_read).values())


def _update(demo_tree, client, cache_dir):
    return compute(
        open_inputs(RECIPE, data=demo_tree, end="2001-12"), client, cache=StateCache(cache_dir)
    )


@pytest.fixture(scope="module")
def cached(demo_tree, client, tmp_path_factory):
    """A state cache of 2000-01..2001-11, made on the worker."""
    folder = tmp_path_factory.mktemp("states")
    first = compute(
        open_inputs(RECIPE, data=demo_tree, end="2001-11"), client, cache=StateCache(folder)
    )
    assert first.reads.files_read == 23 and first.reads.files_reused == 0
    return folder


def test_a_one_file_update_computes_here_and_equals_the_workers_to_the_bit(
    demo_tree, client, cached, tmp_path, caplog
):
    here_cache, away_cache = tmp_path / "here", tmp_path / "away"
    shutil.copytree(cached, here_cache)
    shutil.copytree(cached, away_cache)
    new_file = sorted((demo_tree / "2001" / "12").rglob("*.nc"))

    on_workers, locally = _worker_bytes(client), bytes_read()
    with caplog.at_level(logging.INFO, logger="pangeo_hpc"):
        here = _update(demo_tree, client, here_cache)
    assert _worker_bytes(client) == on_workers  # nothing read on the worker
    assert here.reads.bytes_read == bytes_read() - locally > 0  # counted here, once
    assert here.reads.bytes_read <= 1.05 * sum(f.stat().st_size for f in new_file)
    assert "states: computed in this process (1 file to read, " in caplog.text

    with dask.config.set({KEY: 0}):  # 0: always on the workers
        away = _update(demo_tree, client, away_cache)
    assert _worker_bytes(client) > on_workers
    assert away.reads.bytes_read == here.reads.bytes_read
    assert (here.reads.files_reused, here.reads.files_read) == (23, 1)
    for name in away.result.data_vars:
        np.testing.assert_array_equal(here.result[name].values, away.result[name].values)
    # and the states it saved are those the worker saves: a re-run reuses every one
    again = _update(demo_tree, client, here_cache)
    assert (again.reads.files_read, again.reads.bytes_read) == (0, 0)


def test_a_client_of_a_scheduler_elsewhere_keeps_the_work_on_its_workers(
    demo_tree, client, cached, tmp_path
):
    # a client given only the scheduler's address cannot know its workers share this
    # machine and its files (Slurm, PBS, SGE, a gateway: the same)
    shutil.copytree(cached, tmp_path / "cache")
    with Client(client.scheduler.address) as remote:
        assert remote.cluster is None
        on_workers = _worker_bytes(remote)
        update = _update(demo_tree, remote, tmp_path / "cache")
        assert _worker_bytes(remote) - on_workers == update.reads.bytes_read > 0


def test_first_runs_and_s3_data_stay_on_the_workers(client):
    plan = ReadPlan((("a.nc",), ("b.nc",)), {"a.nc": 1000, "b.nc": 1000}, reused=frozenset({0}))
    fresh = ReadPlan((("a.nc",), ("b.nc",)), {"a.nc": 1000, "b.nc": 1000})
    local, s3 = SimpleNamespace(root="/data/era5"), SimpleNamespace(root="s3://bucket/era5")
    assert steps._states_here(local, client, plan).in_process
    assert steps._states_here(local, client, fresh) is None  # saved as they arrive
    assert steps._states_here(s3, client, plan) is None
    with dask.config.set({KEY: 999}):
        assert steps._states_here(local, client, plan) is None  # more than the limit
