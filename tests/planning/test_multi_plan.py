"""Recipes over several datasets planned, budgeted, calibrated and run on a shared cluster
(issue 30, what the multi-dataset runs refused before): ``plan RECIPE`` is the sum of the
datasets' plans with each one's reads shown and the jobs' start billed once; ``--budget``
refuses before any cluster starts when the summed high end passes it; ``--warmup`` warms
each dataset's files on the one cluster; ``calibrate RECIPE`` measures every dataset. The
real-Slurm cases (``--jobs``, a budget against measured job starts) are in
``test_multi_slurm.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import dask
import numpy as np
import pytest
import xarray as xr
import yaml

from pangeo_hpc.batch.chains.multi_yaml import from_multi_dict
from pangeo_hpc.batch.pipeline import multi_run
from pangeo_hpc.cli import main as run
from pangeo_hpc.errors import InputError
from pangeo_hpc.planning.calibration import Calibration, JobStarts, RecipeFit
from pangeo_hpc.planning.multi_plan import plan_multi
from pangeo_hpc.planning.plan import plan
from tests.support.multi_data import write_pair

NAME = "model-vs-obs"
#: a small run predicted in seconds, with a spread (the ranges) measured
FIT = RecipeFit(process_rate=1e8, tasks_per_chunk=5.0, fixed=0.5, ratio=2.5, spread=[0.9, 1.2])


def recipe_doc(folders: tuple[Path, Path]) -> dict:
    model, obs = folders
    return {
        "name": NAME,
        "datasets": {
            "model": {"variable": "tas", "files": f"{model}/*.nc"},
            "obs": {"variable": "t2m", "files": f"{obs}/*.nc"},
        },
        "steps": [{"time_mean": {}}, {"regrid": {"grid": "$model", "method": "conservative"}}],
        "combine": [{"bias": {"reference": "obs"}}],
    }


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    return write_pair(tmp_path_factory.mktemp("pair"))


@pytest.fixture
def recipe_file(pair, tmp_path) -> Path:
    path = tmp_path / "model-vs-obs.yaml"
    path.write_text(yaml.safe_dump(recipe_doc(pair)))
    return path


def calibration(path: Path, *, datasets=("model", "obs"), starts: bool = False) -> Path:
    measured = {"slurm": JobStarts(queue=[2.0, 6.0], arrival=[10.0, 30.0])} if starts else {}
    cal = Calibration(
        "here",
        2,
        "2026-11-27T00:00:00+00:00",
        0.001,
        recipes={f"{NAME}.{d}": FIT for d in datasets},
        starts=measured,
    )
    path.write_text(json.dumps(cal.to_json()))
    return path


def use(cal: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``cal`` as config ``plan.calibration``, for this process and the ones it starts."""
    monkeypatch.setenv("DASK_PANGEO_HPC__PLAN__CALIBRATION", str(cal))
    plan_config = dask.config.config.setdefault("pangeo-hpc", {}).setdefault("plan", {})
    monkeypatch.setitem(plan_config, "calibration", str(cal))


# -- the plan ------------------------------------------------------------------------------


def test_the_plan_is_the_sum_of_the_datasets_plans_with_one_job_start(pair, tmp_path):
    """On a batch site with measured job starts: each row's wall times are the sums of the
    datasets' own plans, and the queue, the workers' arrival and the startup are billed
    once (summing the datasets' node-hours would bill them twice)."""
    spec = from_multi_dict(recipe_doc(pair))
    cal = calibration(tmp_path / "cal.json", starts=True)
    site = {"kind": "slurm", "cores": 2, "processes": 2}
    where = {"profile": "slurm", "options": site, "nodes": [1, 2], "calibration": cal}
    where |= {"cache": False, "startup": 60.0}
    total = plan_multi(spec, data=tmp_path, **where)
    own = multi_run.dataset_recipes(spec, tmp_path)
    parts = [plan(own[n], data=tmp_path, **where) for n in ("model", "obs")]
    assert list(total.parts) == ["model", "obs"]
    for i, row in enumerate(total.rows):
        a, b = parts[0].rows[i], parts[1].rows[i]
        for key in ("wall_s", "wall_low_s", "wall_high_s", "tasks"):
            assert row[key] == pytest.approx(a[key] + b[key]), key
        assert (row["start_low_s"], row["start_high_s"]) == (a["start_low_s"], a["start_high_s"])
        n = row["nodes"]
        once = n * ((10.0 + 30.0) / 2 + 60.0) / 3600  # arrival (middle) and startup, billed
        assert row["node_hours"] == pytest.approx(a["node_hours"] + b["node_hours"] - once)
        assert row["node_hours_high"] < a["node_hours_high"] + b["node_hours_high"]
        assert row["bottleneck"] == max((a, b), key=lambda r: r["wall_s"])["bottleneck"]
    assert total.parts["obs"].reads.files == 2 and total.parts["obs"].reads.files_to_read == 2
    doc = json.loads(json.dumps(total.to_json()))
    assert set(doc["datasets"]) == {"model", "obs"} and len(doc["rows"]) == 2


def test_cli_plan_shows_each_datasets_reads_and_after_a_run_nothing_to_read(
    recipe_file, tmp_path, capsys, monkeypatch, _state_cache_per_test
):
    cal = calibration(tmp_path / "cal.json")
    use(cal, monkeypatch)
    args = ["plan", str(recipe_file), "--data", str(tmp_path), "--nodes", "1", "--no-plot"]
    assert run.main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"plan for {NAME}: 2 datasets (model, obs) one after the other")
    for name in ("model", "obs"):
        assert f"  {name} ({NAME}.{name}, 2001-01-" in out
    assert out.count("inputs: 0 of 2 files cached") == 2
    assert "4 of 4 files to read" in out
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    done = [str(recipe_file), "--workers", "1", "--no-progress", "--out", str(tmp_path / "o")]
    assert run.main(done) == 0
    capsys.readouterr()
    assert run.main(args) == 0
    out = capsys.readouterr().out
    assert out.count("inputs: 2 of 2 files cached") == 2 and "0 of 4 files to read" in out


def test_cli_plan_writes_its_figure(recipe_file, tmp_path, capsys, monkeypatch):
    use(calibration(tmp_path / "c.json"), monkeypatch)
    figure, data = tmp_path / "plan.png", tmp_path / "data"
    data.mkdir()
    code = run.main(["plan", str(recipe_file), "--data", str(data), "--plot", str(figure)])
    assert code == 0, capsys.readouterr().err
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--data", "."],
            r"^error: no calibration for 'model-vs-obs.obs' \(the dataset 'obs' of "
            r"'model-vs-obs'\) in '.*cal.json': measure every dataset with "
            r"`python -m pangeo_hpc.run calibrate model-vs-obs`$",
        ),
        (
            ["--size", "3GB"],
            r"^error: --size: 'model-vs-obs' is over several datasets, each with its own "
            r"files: it is planned from them; give --data \(the data root\) instead$",
        ),
    ],
)
def test_cli_plan_refusals_are_one_line(recipe_file, tmp_path, capsys, monkeypatch, args, message):
    cal = calibration(tmp_path / "cal.json", datasets=("model",))
    use(cal, monkeypatch)
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    assert run.main(["plan", str(recipe_file), *args, "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert re.match(message, err.strip()), err
    assert sorted(tmp_path.iterdir()) == before


# -- the budget ----------------------------------------------------------------------------


@pytest.fixture
def no_cluster(monkeypatch):
    """A cluster that must not start: the refusals come before it."""

    def refuse(*args, **kwargs):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(multi_run, "running_cluster", refuse)


def test_a_budget_below_the_summed_plan_is_refused_before_any_cluster(
    recipe_file, tmp_path, capsys, monkeypatch, no_cluster, _state_cache_per_test
):
    use(calibration(tmp_path / "c.json"), monkeypatch)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    code = run.main([str(recipe_file), "--budget", "2s", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: predicted cost ") and "node-hours on this machine" in err
    assert "exceeds --budget '2s': ask for a shorter period (--start, --end)" in err
    assert not out.exists()
    states = Path(_state_cache_per_test)
    assert not states.exists() or not any(states.rglob("*")), "a cache entry was left"


def test_a_budget_needs_every_dataset_calibrated(
    recipe_file, tmp_path, capsys, monkeypatch, no_cluster
):
    cal = calibration(tmp_path / "c.json", datasets=("obs",))
    use(cal, monkeypatch)
    code = run.main([str(recipe_file), "--budget", "1h", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(
        f"error: calibrate first: '{NAME}.model' is not calibrated in '{tmp_path / 'c.json'}'"
    )
    assert f"calibrate {NAME}`, or run without --budget '1h'" in err


@pytest.mark.slow
def test_within_budget_with_a_warmup_the_run_equals_a_plain_one(
    recipe_file, tmp_path, capsys, monkeypatch, _state_cache_per_test
):
    """A budget the plan fits in, and ``--warmup``: the run says it is within budget, warms
    each dataset's files on the cluster's workers, and gives the plain run's numbers."""
    use(calibration(tmp_path / "c.json"), monkeypatch)
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    base = [str(recipe_file), "--workers", "1", "--no-progress", "--no-cache"]
    assert run.main([*base, "--budget", "1h", "--warmup", "--out", str(tmp_path / "w")]) == 0
    assert "within budget 1h" in capsys.readouterr().out
    assert run.main([*base, "--out", str(tmp_path / "plain")]) == 0
    warmed = json.loads((tmp_path / "w" / "summary.json").read_text())
    plain = json.loads((tmp_path / "plain" / "summary.json").read_text())
    for name in ("model", "obs"):
        report = warmed["datasets"][name]["warmup"]
        assert report["files"] + report["skipped"] == 2 and report["failed"] == []
        assert plain["datasets"][name]["warmup"] is None
    assert warmed["answer"] == plain["answer"]


# -- calibrate -----------------------------------------------------------------------------


def monthly_files(folder: Path, variable: str, offset: float) -> Path:
    """A file per month of 2001 (one time step each: one chunk each), 4-degree cells, K."""
    folder.mkdir(parents=True)
    lat, lon = np.arange(-88.0, 90, 4.0), np.arange(0.0, 360, 4.0)
    base = 250 + 40 * np.cos(np.deg2rad(lat))[:, None] + 0 * lon
    for month in range(12):
        ds = xr.Dataset(
            {variable: (("time", "lat", "lon"), (base + offset + month)[None].astype("f4"),
                        {"units": "K"})},
            coords={
                "time": ("time", [month * 30.0 + 15], {"units": "days since 2001-01-01",
                                                        "calendar": "noleap"}),
                "lat": ("lat", lat, {"units": "degrees_north"}),
                "lon": ("lon", lon, {"units": "degrees_east"}),
            },
        )  # fmt: skip
        ds.to_netcdf(folder / f"{variable}_{month:02d}.nc", engine="h5netcdf")
    return folder


@pytest.mark.slow
def test_calibrate_measures_every_dataset_and_the_plan_uses_them(tmp_path):
    """``calibrate RECIPE`` fits each dataset's recipe (``files:`` data, not an era5-pds
    tree) under ``RECIPE.DATASET``; the plan of the recipe then comes from those fits."""
    from pangeo_hpc.clusters.start import running_cluster
    from pangeo_hpc.planning.calibrate import calibrate

    data = tmp_path / "data"
    data.mkdir()
    doc = recipe_doc((monthly_files(data / "a", "tas", 1.0), monthly_files(data / "b", "t2m", 0.0)))
    doc["steps"] = [{"time_mean": {}}]
    recipe_file = tmp_path / "r.yaml"
    recipe_file.write_text(yaml.safe_dump(doc))
    path = tmp_path / "calibration.json"
    with running_cluster("local", workers=1) as (_, client):
        cal = calibrate(
            str(recipe_file), client=client, amount="200kB", repeat=1, tasks=50, path=path
        )
    assert {f"{NAME}.model", f"{NAME}.obs"} <= set(cal.recipes)
    for name in ("model", "obs"):
        fit = cal.recipes[f"{NAME}.{name}"]
        assert fit.process_rate > 0 and fit.chunks >= 8
        stored = sum(f.stat().st_size for f in (data / "ab"[name == "obs"]).glob("*.nc"))
        assert fit.ratio == pytest.approx(12 * 45 * 90 * 4 / stored)  # the files' own
    p = plan_multi(from_multi_dict(doc), data=tmp_path, calibration=path, nodes=[1], cache=False)
    assert p.parts["model"].model.process_rate == cal.recipes[f"{NAME}.model"].process_rate
    assert p.parts["obs"].model.process_rate == cal.recipes[f"{NAME}.obs"].process_rate
    assert p.parts["obs"].reads.files == 12


def test_plan_multi_refuses_a_size():
    spec = from_multi_dict(recipe_doc((Path("m"), Path("o"))))
    with pytest.raises(InputError, match="planned from them, not from one size"):
        plan_multi(spec, size="3GB")
