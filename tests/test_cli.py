"""The batch CLI as a user runs it: exit codes, one-line errors, complete outputs or none."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from conftest import run_cli
from known import daily_global_means, month_files

from pangeo_hpc import run as cli
from pangeo_hpc.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


def test_list_names_both_recipes(tmp_path):
    r = run_cli("list", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "era5-sst-mean" in r.stdout and "era5-sst-trend" in r.stdout


@pytest.mark.smoke
@pytest.mark.slow
def test_demo_data_then_both_recipes_end_to_end(tmp_path, demo_tree):
    data = tmp_path / "era5"
    r = run_cli(
        "demo-data",
        "--out",
        str(data),
        "--start",
        "2001-01",
        "--end",
        "2001-02",
        "--resolution",
        "5",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "2 monthly files" in r.stdout
    assert (data / "2001" / "02" / "data" / "sea_surface_temperature.nc").is_file()

    out = tmp_path / "mean"
    r = run_cli(
        "era5-sst-mean",
        "--data",
        str(demo_tree),
        "--start",
        "2003-01",
        "--end",
        "2004-12",
        "--workers",
        "2",
        "--warmup",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert f"plot: {out / 'plot.png'}" in r.stdout
    # plain lines, not a redrawn bar, in logs: the states of the 24 files as they arrive
    assert "states: 24 of 24 files" in r.stdout and "\r" not in r.stdout
    assert sorted(p.name for p in out.iterdir()) == ["plot.png", "result.nc", "summary.json"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["inputs"]["files"] == 24 and summary["cluster"]["workers"] == 2
    assert summary["warmup"]["skipped"] == 24  # local files are loaded already
    assert summary["inputs"]["period"] == ["2003-01-01", "2004-12-31"]
    result = xr.open_dataset(out / "result.nc")
    headline = summary["answer"]["global_mean"]
    assert headline["units"] == "K" and headline["kind"] == "scalar"
    assert result.global_mean.item() == pytest.approx(headline["value"], abs=1e-3)
    # the known answer, read with h5py and weighted with numpy (tests/known.py): the mean
    # of the 731 daily area-weighted ocean means; the plain mean of the cells is 2.4 K lower
    days = np.concatenate(daily_global_means(month_files(demo_tree, "2003-01", "2004-12")))
    assert result.global_mean.item() == pytest.approx(days.mean(), abs=1e-4)
    assert result.global_mean_series.size == 24 and result.time_mean.attrs["units"] == "K"
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    out = tmp_path / "trend"
    r = run_cli(
        "era5-sst-trend",
        "--data",
        str(demo_tree),
        "--start",
        "2000-01",
        "--end",
        "2009-12",
        "--workers",
        "1",
        "--out",
        str(out),
        "--format",
        "zarr",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["answer"]["global_mean_trend"]["value"] == pytest.approx(0.2, rel=0.05)
    assert summary["answer"]["global_mean_trend"]["units"] == "K/(10 year)"
    assert xr.open_zarr(out / "result.zarr").trend.attrs["units"] == "K/(10 year)"  # UDUNITS


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["era5-sst-nope"], "unknown recipe 'era5-sst-nope': choose one of"),
        (["era5-sst-mean", "--start", "2008-13"], "month 13: months run from 01 to 12"),
        (["era5-sst-mean", "--start", "2009-01", "--end", "2008-01"], "is empty"),
        (["era5-sst-mean", "--workers", "0"], "'0' is not a positive whole number"),
        (["era5-sst-mean", "--cluster", "k8s"], "invalid choice: 'k8s'"),
        (["era5-sst-mean", "--data", "/nonexistent"], "'/nonexistent' does not exist: pass --data"),
        (["era5-sst-mean", "--start", "1950-01", "--end", "1950-03"], "3 of 3 months"),
        (["demo-data"], "the following arguments are required: --out"),
        (["demo-data", "--out", "x", "--resolution", "0.7"], "resolution 0.7 must divide 180"),
        (["era5-sst-mean", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_output(tmp_path, demo_tree, args, message):
    if "--data" not in args and args[0] != "demo-data":
        args = [*args, "--data", str(demo_tree)]
    r = (
        run_cli(*args, "--out", str(tmp_path / "out"), cwd=tmp_path)
        if args[0] != "demo-data"
        else run_cli(*args, cwd=tmp_path)
    )
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert message in lines[0]
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "x").exists()


def test_internal_failure_exits_1(monkeypatch, capsys, demo_tree, tmp_path):
    def broken(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("pangeo_hpc.batch.execute.run_recipe", broken)
    assert cli.main(["era5-sst-mean", "--data", str(demo_tree)]) == 1
    assert "internal error" in capsys.readouterr().err


def test_a_failed_write_leaves_previous_results_untouched(monkeypatch, demo_tree, tmp_path):
    from pangeo_hpc.batch import execute as runner
    from pangeo_hpc.batch.recipe_yaml import load

    out = tmp_path / "out"
    out.mkdir()  # an earlier result of this package (its marked summary)
    previous = {"written_by": "pangeo-hpc 0.1.0", "previous": True, "outputs": {}}
    (out / "summary.json").write_text(json.dumps(previous))

    def failing_plot(result, path, title):
        path.write_bytes(b"half a png")
        raise OSError("No space left on device")

    monkeypatch.setattr("pangeo_hpc.batch.results.plot_result", failing_plot)
    with pytest.raises(OSError, match="No space left"):
        runner.run_recipe(
            load("era5-sst-mean"),
            data=demo_tree,
            start="2000-01",
            end="2000-02",
            workers=1,
            out=out,
            progress=None,
        )
    assert [p.name for p in out.iterdir()] == ["summary.json"]
    assert json.loads((out / "summary.json").read_text()) == previous
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary folders left


def test_a_recipe_with_the_old_key_still_loads_and_says_so(tmp_path):
    from pangeo_hpc.batch.recipe_yaml import load

    old = tmp_path / "old.yaml"
    old.write_text(
        "name: x\nrecipe: sst-mean\ndataset: {variable: v, start: 2000-01, end: 2000-02}\n"
    )
    with pytest.warns(FutureWarning, match="'recipe: sst-mean' is replaced by the steps"):
        assert set(load(str(old)).results) == {"time_mean", "global_mean_series", "global_mean"}


def test_spec_errors_name_the_file(tmp_path):
    from pangeo_hpc.batch.recipe_yaml import load

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\nchain: sst-median\ndataset: {variable: v, start: 2000-01, end: 2000-02}\n"
    )
    with pytest.raises(
        InputError,
        match=r"bad.yaml' names chain 'sst-median': write its steps: instead \(the 0.1 chains "
        r"were \['sst-mean', 'sst-trend'\]\)",
    ):
        load(str(bad))
    bad.write_text("name: x\nchain: sst-mean\n")
    with pytest.raises(InputError, match="lacks dataset.variable, dataset.start, dataset.end"):
        load(str(bad))
    bad.write_text("name: [unclosed\n")
    with pytest.raises(InputError, match="is not valid YAML"):
        load(str(bad))
