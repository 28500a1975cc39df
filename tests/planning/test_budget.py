"""A plan you can hold to (issue 29, section 4): the plan's range, the budget's syntax, the
check before a run starts, the watcher that stops a local run which spends its budget, and
the idle release of batch clusters' options. The real-Slurm cases are in test_slurm.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pangeo_hpc import run
from pangeo_hpc.clusters.jobqueue import adaptive_release
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.budget import parse_budget
from pangeo_hpc.planning.budget import check_budget
from pangeo_hpc.planning.calibration import Calibration, RecipeFit
from pangeo_hpc.planning.measure import Run, run_spread
from pangeo_hpc.planning.plan import Model, Storage, plan
from tests.batch.test_resume import (
    N_FILES,
    Runs,
    _args,
    _check_resumed,
    _env,
    _files,
    _pieces,
    _recipe,
)
from tests.support.paths import ROOT

# -- the budget's syntax -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "amount", "unit"),
    [
        ("5USD", 5.0, "USD"),
        ("0.5 usd", 0.5, "USD"),
        ("$12", 12.0, "USD"),
        ("2h", 2.0, "node-hours"),
        ("90min", 1.5, "node-hours"),
        ("36s", 0.01, "node-hours"),
    ],
)
def test_budgets_in_dollars_or_node_hours(text, amount, unit):
    b = parse_budget(text)
    assert b.amount == pytest.approx(amount) and b.unit == unit and b.text == text


@pytest.mark.parametrize("text", ["5", "five", "5EUR", "$5USD", "$2h", "0h", "-1h", "", "2 hours"])
def test_a_bad_budget_names_the_value_and_the_fix(text):
    with pytest.raises(InputError, match=r"budget=.* (is not a budget|must be above zero)"):
        parse_budget(text)


def test_dollars_need_a_price():
    assert parse_budget("5USD").node_hours(2.5) == 2.0
    assert parse_budget("2h").node_hours(None) == 2.0
    with pytest.raises(InputError, match="in dollars but the cluster has no price"):
        parse_budget("5USD").node_hours(None)


def test_cli_bad_budget_is_one_line_exit_2_and_nothing_written(tmp_path, capsys):
    code = run.main(["era5-sst-mean", "--budget", "lots", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        "error: --budget 'lots' is not a budget: write dollars as 5USD or node-hours as 2h "
        "(also 90min, 600s)\n"
    )
    assert list(tmp_path.iterdir()) == []


# -- the plan's range -----------------------------------------------------------------------


def _model(**changes) -> Model:
    base = {
        "size": 128_000_000 * 10, "ratio": 2.0, "chunk": 128_000_000, "tasks_per_chunk": 1.0,
        "process_rate": 128e6, "task_overhead": 0.0, "fixed": 1.0, "processes": 1, "cores": 1,
        "storage": Storage("cache", 1e15, False, False),
    }  # fmt: skip
    return Model(**{**base, **changes})


def test_the_range_scales_the_cpu_costs_by_the_calibrations_spread():
    r = _model(spread=(0.8, 1.25)).predict(1)
    # 10 chunks of 1 s each on one process, plus the fixed second
    assert r["wall_s"] == pytest.approx(11.0)
    assert r["wall_low_s"] == pytest.approx(1 + 8.0) and r["wall_high_s"] == pytest.approx(1 + 12.5)
    assert r["node_hours_low"] == pytest.approx(9 / 3600)
    assert r["node_hours_high"] == pytest.approx(13.5 / 3600)
    assert r["cost_low"] is None


def test_job_queue_is_waited_and_worker_arrival_is_billed():
    m = _model(queue=(2.0, 10.0), arrival=(3.0, 5.0), price=3.6, startup=1.0)
    one, two = m.predict(1), m.predict(2)
    assert one["start_low_s"] == 5.0 and one["start_high_s"] == 15.0
    assert one["node_hours_low"] == pytest.approx((3 + 11 + 1) / 3600)
    assert one["node_hours_high"] == pytest.approx((5 + 11 + 1) / 3600)
    assert one["cost_high"] == pytest.approx(3.6 * (5 + 11 + 1) / 3600)
    # two jobs: the first to start waits for the last (the queue's spread) at the high end
    assert two["node_hours_high"] == pytest.approx(2 * (5 + two["wall_high_s"] + 1 + 8) / 3600)


def test_the_start_compared_with_a_run_is_the_middle_for_one_job_the_end_for_several():
    # queue 2-10 s, arrival 3-5 s: one job starts in the middle, 6 + 4 s; of two, the run waits
    # for the later one: the high end, 15 s (a model that charges no start says 0)
    m = _model(queue=(2.0, 10.0), arrival=(3.0, 5.0))
    assert m.predict(1)["start_s"] == pytest.approx(10.0)
    assert m.predict(2)["start_s"] == pytest.approx(15.0)
    assert _model().predict(1)["start_s"] == 0.0  # a start not measured: none


def test_the_spread_of_repeated_runs_is_taken_per_size():
    small = [Run(1, 1, 1, wall=w) for w in (1.0, 1.2, 0.9)]
    large = [Run(4, 4, 4, wall=w) for w in (4.0, 5.0, 3.0)]
    assert run_spread(list(zip(small, large, strict=True))) == (0.75, 1.25)
    assert run_spread([]) == (1.0, 1.0)


def _calibration(path: Path, recipe: str = "era5-sst-mean", **fit) -> Path:
    """A calibration file of ``recipe`` with a fast rate: a small run predicts seconds."""
    figures = {"process_rate": 1e9, "tasks_per_chunk": 5.0, "fixed": 0.5, "ratio": 2.5,
               "spread": [0.9, 1.2], **fit}  # fmt: skip
    cal = Calibration("here", 2, "2026-11-26T00:00:00+00:00", 0.001,
                      recipes={recipe: RecipeFit(**figures)})  # fmt: skip
    path.write_text(json.dumps(cal.to_json()))
    return path


def test_plan_shows_the_range_in_its_table_and_json(tmp_path):
    cal = _calibration(tmp_path / "cal.json")
    p = plan("era5-sst-mean", "10GB", profile="aws-c5n.18xlarge", nodes=[1], calibration=cal,
             storage="cache:1000GB/s")  # fmt: skip
    row = p.rows[0]
    assert row["wall_low_s"] < row["wall_s"] < row["wall_high_s"]
    assert row["cost_low"] < row["cost"] < row["cost_high"]
    text = p.text()
    assert "range: the calibration's repeated runs took x0.90..x1.20 of their median" in text
    assert f"{row['wall_low_s']:.1f}-{row['wall_high_s']:.1f} s" in text
    assert f"{row['cost_low']:.4f}-{row['cost_high']:.4f}" in text
    assert "job start: not measured on 'aws-c5n.18xlarge'" in text
    doc = json.loads(json.dumps(p.to_json()))
    assert doc["rows"][0]["wall_high_s"] == pytest.approx(row["wall_high_s"])
    assert doc["model"]["spread"] == [0.9, 1.2]


# -- the check before a run ----------------------------------------------------------------


def test_no_calibration_file_refuses_a_budget_and_says_calibrate_first(tmp_path, monkeypatch):
    monkeypatch.setenv("DASK_PANGEO_HPC__PLAN__CALIBRATION", str(tmp_path / "none.json"))
    with pytest.raises(InputError, match=r"^calibrate first: no calibration file .*calibrate\("):
        check_budget("era5-sst-mean", "1h", calibration=tmp_path / "none.json")
    # without a budget a local run is not planned at all
    assert check_budget("era5-sst-mean", None, calibration=tmp_path / "none.json") is None


def test_the_shipped_figures_are_no_calibration_for_a_budget(tmp_path, demo_tree):
    cal = _calibration(tmp_path / "cal.json", recipe="era5-sst-trend")
    with pytest.raises(InputError, match="'era5-sst-mean' is not calibrated in"):
        check_budget("era5-sst-mean", "1h", data=demo_tree, calibration=cal)


def test_a_budget_below_the_predicted_high_end_is_refused(tmp_path, demo_tree):
    cal = _calibration(tmp_path / "cal.json")
    where = {"data": demo_tree, "start": "2000-01", "end": "2000-12", "calibration": cal}
    guard = check_budget("era5-sst-mean", "1h", **where)
    assert guard is not None and guard.node_hours == 1.0
    with pytest.raises(InputError, match=r"^predicted cost .* node-hours on this machine "
                       r"\(.* s\) exceeds budget='0.1s': ask for a shorter period"):  # fmt: skip
        check_budget("era5-sst-mean", "0.1s", **where)
    with pytest.raises(InputError, match="in dollars but the cluster has no price"):
        check_budget("era5-sst-mean", "5USD", **where)


def test_idle_batch_workers_are_released_and_idle_schedulers_close():
    assert adaptive_release(30) == {"interval": "1s", "wait_count": 30}
    assert adaptive_release(0.5) == {"interval": "0.5s", "wait_count": 1}
    assert adaptive_release(None) == {}
    with pytest.raises(InputError, match="idle_timeout='soon' must be seconds above 0"):
        adaptive_release("soon")


# -- a local run that spends its budget ----------------------------------------------------


@pytest.mark.slow
def test_a_run_that_spends_its_budget_stops_keeps_its_states_and_resumes(demo_tree, tmp_path):
    """A recipe of 24 files of 1 s each on two local workers (12 s) with a budget of 5
    node-seconds: the check passes (the calibration predicts a second), the watcher stops
    it as Ctrl-C would (exit 3, one line), the states it finished are kept, and the same
    command without the budget resumes from them."""
    recipe = _recipe(tmp_path / "recipe", seconds=1.0)
    cal = _calibration(tmp_path / "cal.json", recipe="slow-mean")
    cache, runs = tmp_path / "cache", Runs()
    env = {"DASK_PANGEO_HPC__PLAN__CALIBRATION": str(cal)}
    try:
        stopped = _run_with(runs, recipe, demo_tree, tmp_path / "stopped", cache, env,
                            "--budget", "5s")  # fmt: skip
        assert stopped.returncode == 3, stopped.stderr
        last = stopped.stderr.strip().splitlines()[-1]
        assert last.startswith("stopped: budget 5s spent (") and "Traceback" not in stopped.stderr
        assert "run the same command again to resume" in last
        assert "within budget 5s" in stopped.stdout
        assert not (tmp_path / "stopped").exists()
        saved, rollups = _pieces(cache)
        assert len(saved) < N_FILES and rollups == []

        again = _run_with(runs, recipe, demo_tree, tmp_path / "resumed", cache, env)
        assert again.returncode == 0, again.stderr
        # a whole run reads every file once
        full = {"reads": {"bytes_read": sum(Path(f).stat().st_size for f in _files(demo_tree))}}
        _check_resumed(tmp_path / "resumed", saved, _files(demo_tree), full)
    finally:
        runs.close()


def _run_with(runs: Runs, recipe, data, out, cache, env, *extra) -> subprocess.CompletedProcess:
    """The CLI on two local workers with ``env`` added, in a session of its own."""
    p = subprocess.Popen(
        _args(recipe, data, out, 2, *extra),
        cwd=recipe.parent,
        env={**_env(cache), **env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    runs.started.append(p)
    return runs.finish(p)
