"""The steps after an incremental run's reductions: side by side in two threads only where
that cannot break the chain's laziness guard (``dask.config.set(scheduler=...)``, which is
the process's, not the thread's: 348a404 reverted a version that set it from two threads,
and a store's lazy bounds compared in another thread then raised ``chain._Computed``)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import dask
import dask.array as dsa
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.batch.chains import chain
from pangeo_hpc.batch.chains.chain import Step
from pangeo_hpc.batch.incremental import run

#: how long a step waits for the other one to be running beside it (an event, not a
#: measure: side by side they meet at once; one after the other the wait ends in failure)
MEET = 60.0


def _plans(*chains: list[Step]) -> list[SimpleNamespace]:
    """Results (``_suffixes`` reads their name, chain and suffix) of one reduced chain."""
    return [
        SimpleNamespace(name=f"r{i}", chain="c", split=SimpleNamespace(suffix=steps))
        for i, steps in enumerate(chains)
    ]


@pytest.fixture
def recorded(monkeypatch):
    """Two recipe functions, ``left`` and ``right``, that record their thread and the
    scheduler Dask would use there; with ``meet`` set, each waits for the other."""
    seen: list[tuple[str, str, object]] = []
    meet: dict[str, threading.Barrier | None] = {"barrier": None}

    def make(name: str):
        def step(da: xr.DataArray) -> xr.DataArray:
            seen.append((name, threading.current_thread().name, dask.config.get("scheduler", None)))
            if meet["barrier"] is not None:
                meet["barrier"].wait(MEET)
            return da + 1

        step.__name__ = name
        return step

    functions = {**chain.step_functions(), "left": make("left"), "right": make("right")}
    monkeypatch.setattr(chain, "step_functions", lambda: functions)
    return SimpleNamespace(seen=seen, meet=meet)


def _value(lazy: bool) -> xr.DataArray:
    data = np.arange(24.0).reshape(4, 6)
    return xr.DataArray(dsa.from_array(data, chunks=2) if lazy else data, dims=("time", "x"))


def test_steps_on_values_in_memory_run_side_by_side_unguarded(recorded):
    recorded.meet["barrier"] = threading.Barrier(2)
    plans = _plans([Step("left")], [Step("right")])
    before = dask.config.get("scheduler", None)
    out = run._suffixes(plans, {"c": _value(lazy=False)}, xr.Dataset())
    # both met: they ran at once, in two threads, and neither saw the guard
    assert {name for name, _, _ in recorded.seen} == {"left", "right"}
    assert len({thread for _, thread, _ in recorded.seen}) == 2
    assert all(scheduler is before for _, _, scheduler in recorded.seen)
    assert dask.config.get("scheduler", None) is before
    np.testing.assert_array_equal(out["r0"].values, _value(False).values + 1)


def test_first_steps_run_before_any_waits_on_its_parent(recorded):
    # submitted in plan order (left, left -> right, right), the second thread took the
    # step after left and waited for left while the other first step had no thread:
    # era5-sst-trend's Nino3.4 waited behind its trend. The first steps must meet.
    once = threading.Barrier(2, action=lambda: recorded.meet.update(barrier=None))
    recorded.meet["barrier"] = once  # the step after left, third, does not wait
    plans = _plans([Step("left"), Step("right")], [Step("right")])
    out = run._suffixes(plans, {"c": _value(lazy=False)}, xr.Dataset())
    assert [name for name, _, _ in recorded.seen][:2] in (["left", "right"], ["right", "left"])
    np.testing.assert_array_equal(out["r0"].values, _value(False).values + 2)
    np.testing.assert_array_equal(out["r1"].values, _value(False).values + 1)


def test_a_shared_step_runs_once_and_its_children_after_it(recorded):
    plans = _plans([Step("left"), Step("right")], [Step("left")])
    out = run._suffixes(plans, {"c": _value(lazy=False)}, xr.Dataset())
    assert [name for name, _, _ in recorded.seen] == ["left", "right"]
    np.testing.assert_array_equal(out["r0"].values, _value(False).values + 2)
    np.testing.assert_array_equal(out["r1"].values, _value(False).values + 1)


def test_lazy_values_run_one_after_the_other_guarded(recorded):
    plans = _plans([Step("left")], [Step("right")])
    run._suffixes(plans, {"c": _value(lazy=True)}, xr.Dataset())
    assert [name for name, _, _ in recorded.seen] == ["left", "right"]
    assert {thread for _, thread, _ in recorded.seen} == {threading.current_thread().name}
    assert all(scheduler is chain._forbid for _, _, scheduler in recorded.seen)


def test_a_user_function_makes_every_step_run_one_after_the_other_guarded(
    recorded, tmp_path, monkeypatch
):
    (tmp_path / "mine.py").write_text("def plus(da):\n    return da + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plans = _plans([Step("left")], [Step("mine:plus"), Step("right")])
    out = run._suffixes(plans, {"c": _value(lazy=False)}, xr.Dataset())
    assert {thread for _, thread, _ in recorded.seen} == {threading.current_thread().name}
    assert all(scheduler is chain._forbid for _, _, scheduler in recorded.seen)
    np.testing.assert_array_equal(out["r1"].values, _value(False).values + 2)
