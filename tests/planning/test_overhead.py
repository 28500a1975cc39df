"""pangeo_hpc.planning.overhead: the per-task scheduler overhead, measured on a small local cluster.

No timed assertions: only that the result is consistent with what was asked and measured.
"""

from __future__ import annotations

import dataclasses

import pytest
from distributed import Client, LocalCluster

from pangeo_hpc.errors import ClusterError, InputError
from pangeo_hpc.planning.overhead import TaskOverhead, task_overhead


@pytest.fixture(scope="module")
def client():
    """Two single-threaded workers in this process (threads, not processes: quick to start;
    in-process transport; the scheduler's HTTP server, which starts even without a
    dashboard, on a free loopback port)."""
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=False,
            dashboard_address="127.0.0.1:0",
        ) as cluster,
        Client(cluster) as c,
    ):
        c.wait_for_workers(2)
        yield c


def test_result_is_consistent(client):
    result = task_overhead(client, tasks=200, repeat=3)
    assert isinstance(result, TaskOverhead)
    assert result.tasks == 200
    assert result.workers == 2 and result.threads == 2
    assert len(result.samples) == 3
    assert all(s > 0 for s in result.samples)
    assert result.seconds_per_task > 0
    assert min(result.samples) <= result.seconds_per_task <= max(result.samples)
    assert result.tasks_per_second == pytest.approx(1 / result.seconds_per_task)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.tasks = 1  # type: ignore[misc]


def test_one_task_one_repeat(client):
    result = task_overhead(client, tasks=1, repeat=1)
    assert result.samples == [result.seconds_per_task] and result.tasks == 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tasks": 0}, r"tasks=0 must be a whole number >= 1, e\.g\. tasks=2000"),
        ({"tasks": -5}, r"tasks=-5 must be a whole number >= 1"),
        ({"tasks": 2.5}, r"tasks=2\.5 must be a whole number >= 1"),
        ({"tasks": True}, r"tasks=True must be a whole number >= 1"),
        ({"repeat": 0}, r"repeat=0 must be a whole number >= 1, e\.g\. repeat=3"),
        ({"repeat": "3"}, r"repeat='3' must be a whole number >= 1"),
    ],
)
def test_bad_input_is_named_with_the_fix(client, kwargs, match):
    with pytest.raises(InputError, match=match):
        task_overhead(client, **kwargs)


def test_a_cluster_without_workers_is_an_error_not_a_hang():
    with (
        LocalCluster(n_workers=0, processes=False, dashboard_address="127.0.0.1:0") as cluster,
        Client(cluster) as c,
    ):
        with pytest.raises(ClusterError, match="no workers.*wait_for_workers"):
            task_overhead(c, tasks=10, repeat=1)
