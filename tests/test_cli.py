"""The batch CLI as a user runs it: exit codes, one-line errors, complete outputs or none."""

from __future__ import annotations

import json

import dask
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc import run as cli
from pangeo_hpc.errors import InputError
from tests.support.cli import run_cli, run_clis
from tests.support.known import daily_global_means, month_files


def test_list_names_both_recipes(tmp_path):
    r = run_cli("list", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "era5-sst-mean" in r.stdout and "era5-sst-trend" in r.stdout


@pytest.mark.smoke
@pytest.mark.slow
def test_demo_data_then_both_recipes_end_to_end(tmp_path, demo_tree):
    # three independent runs, two at a time (conftest.run_clis); checked one by one below
    data, mean, trend = tmp_path / "era5", tmp_path / "mean", tmp_path / "trend"
    made, averaged, trended = run_clis(
        ("demo-data", "--out", str(data), "--start", "2001-01", "--end", "2001-02",
         "--resolution", "5"),
        ("era5-sst-mean", "--data", str(demo_tree), "--start", "2003-01", "--end", "2004-12",
         "--workers", "2", "--warmup", "--out", str(mean)),
        ("era5-sst-trend", "--data", str(demo_tree), "--start", "2000-01", "--end", "2009-12",
         "--workers", "1", "--out", str(trend), "--format", "zarr"),
        cwd=tmp_path,
    )  # fmt: skip
    r = made
    assert r.returncode == 0, r.stderr
    assert "2 monthly files" in r.stdout
    assert (data / "2001" / "02" / "data" / "sea_surface_temperature.nc").is_file()

    out, r = mean, averaged
    assert r.returncode == 0, r.stderr
    assert f"plot: {out / 'plot.png'}" in r.stdout
    # plain lines, not a redrawn bar, in logs: the states of the 24 files as they arrive
    assert "states: 24 of 24 files" in r.stdout and "\r" not in r.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "plot.png",
        "report.html",
        "result.nc",
        "summary.json",
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["inputs"]["files"] == 24 and summary["cluster"]["workers"] == 2
    assert summary["warmup"]["skipped"] == 24  # local files are loaded already
    assert summary["inputs"]["period"] == ["2003-01-01", "2004-12-31"]
    result = xr.open_dataset(out / "result.nc")
    headline = summary["answer"]["global_mean"]
    assert headline["units"] == "K" and headline["kind"] == "scalar"
    assert result.global_mean.item() == pytest.approx(headline["value"], abs=1e-3)
    # the known answer, read with h5py and weighted with numpy (tests/support/known.py): the mean
    # of the 731 daily area-weighted ocean means; the plain mean of the cells is 2.4 K lower
    days = np.concatenate(daily_global_means(month_files(demo_tree, "2003-01", "2004-12")))
    assert result.global_mean.item() == pytest.approx(days.mean(), abs=1e-4)
    assert result.global_mean_series.size == 24 and result.time_mean.attrs["units"] == "K"
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    out, r = trend, trended
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["answer"]["global_mean_trend"]["value"] == pytest.approx(0.2, rel=0.05)
    assert summary["answer"]["global_mean_trend"]["units"] == "K/(10 year)"
    assert xr.open_zarr(out / "result.zarr").trend.attrs["units"] == "K/(10 year)"  # UDUNITS


def _number(value) -> str:
    return "n/a" if value is None else f"{value:g}"


@pytest.mark.slow
def test_a_run_prints_its_answer_as_a_table_and_what_it_truly_read(
    demo_tree, tmp_path, capsys, monkeypatch
):
    """An update that reads 2 of 6 files prints those 2 and their bytes (not the 6 files'),
    a run that reads nothing says so instead of a rate; the answer is a table of
    summary.json's numbers, and --json prints that JSON back."""
    monkeypatch.setattr("pangeo_hpc.cli.main._interruptible", lambda: None)  # pytest's signals
    common = ["era5-sst-mean", "--data", str(demo_tree), "--start", "2000-01"]
    common += ["--workers", "1", "--no-progress"]

    def run(end: str, name: str, *more: str) -> tuple[list[str], dict]:
        code = cli.main([*common, "--end", end, "--out", str(tmp_path / name), *more])
        printed = capsys.readouterr()
        assert code == 0, printed.err
        summary = json.loads((tmp_path / name / "summary.json").read_text())
        return printed.out.splitlines(), summary

    run("2000-04", "first")  # 4 files read, their states cached
    lines, summary = run("2000-06", "update")
    reads = summary["reads"]
    assert (reads["files"], reads["files_read"], reads["files_reused"]) == (6, 2, 4)
    on_disk = sum(p.stat().st_size for p in month_files(demo_tree, "2000-05", "2000-06"))
    assert 0.5 * on_disk < reads["bytes_read"] <= on_disk  # the 2 files', not all 6
    seconds = summary["timings_s"]["compute"]
    rate = summary["throughput_MB_per_s"]
    # both rounded in summary.json: the rate to 0.1 MB/s, the seconds to 1 ms
    assert rate == pytest.approx(
        reads["bytes_read"] / 1e6 / seconds, abs=0.05 + 1.01 * rate * 0.0005 / seconds
    )
    read = next(line for line in lines if line.startswith("read "))
    assert read.startswith(
        f"read 2 of 6 files (4 cached, 0 not needed): {reads['bytes_read'] / 1e6:.1f} MB "
        f"in {seconds:.1f} s ({rate:.1f} MB/s); "
    ), read

    # the table: a row per result, the numbers of summary.json's answer, digit for digit
    top = lines.index("era5-sst-mean, 2000-01-01 to 2000-06-30:")
    head = "result kind units mean min max first last trend per decade notes"
    assert lines[top + 1].split() == head.split() and set(lines[top + 2]) == {"-", " "}
    rows = {line.split()[0]: line.split() for line in lines[top + 3 : top + 6]}
    answer = summary["answer"]
    scalar, series, field = answer["global_mean"], answer["global_mean_series"], answer["time_mean"]
    assert rows["global_mean"] == ["global_mean", "scalar", "K", _number(scalar["value"])]
    numbers = [series[k] for k in ("mean", "min", "max", "first", "last", "trend_per_decade")]
    assert rows["global_mean_series"] == [
        "global_mean_series", "series", "K", *map(_number, numbers), "6", "steps"
    ]  # fmt: skip
    share = f"{100 * field['valid_share']:.0f}"
    numbers = [field[k] for k in ("area_mean", "min", "max")]
    assert rows["time_mean"] == [
        "time_mean", "map", "K", *map(_number, numbers), "values", "in", share, "%", "of", "cells"
    ]  # fmt: skip
    with xr.open_dataset(tmp_path / "update" / "result.nc") as result:  # the file's answer
        assert float(rows["global_mean"][3]) == pytest.approx(result.global_mean.item(), 1e-5)

    with dask.config.set({"pangeo-hpc.cache.copy-results": False}):  # not "update"'s copy
        lines, summary = run("2000-06", "again")  # every state from the cache
    assert (summary["reads"]["files_read"], summary["reads"]["bytes_read"]) == (0, 0)
    assert summary["throughput_MB_per_s"] is None
    read = next(line for line in lines if line.startswith("read "))
    assert read.startswith(
        "read 0 of 6 files (6 cached, 0 not needed): nothing read, every state from the cache; "
    ), read
    assert not any("MB/s" in line for line in lines), lines

    lines, summary = run("2000-06", "json", "--json")  # today's JSON line, for programs
    (line,) = [line for line in lines if line.startswith("era5-sst-mean: ")]
    assert json.loads(line.removeprefix("era5-sst-mean: ")) == summary["answer"]
    assert not any(line.startswith("result ") for line in lines)  # no table


def test_the_reads_line_of_a_whole_run_and_of_uncounted_reads():
    from pangeo_hpc.batch.pipeline.answer_text import reads_line
    from pangeo_hpc.batch.pipeline.results import throughput

    why = "caching is off (--no-cache, or pangeo-hpc.cache.enabled)"
    reads = {"incremental": False, "why": why, "files": 240, "files_reused": 0,
             "files_read": 240, "files_skipped": 0, "bytes_read": 1_900_000_000}  # fmt: skip
    took = {"compute": 30.04, "total": 35.0}
    rate = throughput(reads, took["compute"])
    assert rate == pytest.approx(63.2, abs=0.05)
    summary = {"reads": reads, "timings_s": took, "throughput_MB_per_s": rate}
    assert reads_line(summary) == (
        f"read 240 of 240 files: 1.90 GB in 30.0 s (63.2 MB/s); 35.0 s in all; not incremental: {why}"
    )
    # files read but no bytes counted (a reader that does not count): no rate, and it says so
    reads |= {"bytes_read": 0}
    assert throughput(reads, 30.0) is None and throughput(None, 30.0) is None
    summary |= {"throughput_MB_per_s": None}
    assert reads_line(summary).startswith("read 240 of 240 files: bytes not counted, answered in ")


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
        (["era5-sst-mean", "--plot-format", "gif"], "invalid choice: 'gif'"),
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

    monkeypatch.setattr("pangeo_hpc.batch.pipeline.execute.run_recipe", broken)
    assert cli.main(["era5-sst-mean", "--data", str(demo_tree)]) == 1
    assert "internal error" in capsys.readouterr().err


def test_a_failed_write_leaves_previous_results_untouched(monkeypatch, demo_tree, tmp_path):
    from pangeo_hpc.batch.chains.recipe_yaml import load
    from pangeo_hpc.batch.pipeline import execute as runner

    out = tmp_path / "out"
    out.mkdir()  # an earlier result of this package (its marked summary)
    previous = {"written_by": "pangeo-hpc 0.1.0", "previous": True, "outputs": {}}
    (out / "summary.json").write_text(json.dumps(previous))

    def failing_plot(result, path, title, **options):
        path.write_bytes(b"half a png")
        raise OSError("No space left on device")

    monkeypatch.setattr("pangeo_hpc.batch.pipeline.results.plot_result", failing_plot)
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


def test_a_run_draws_its_figure_in_the_format_asked(demo_tree, tmp_path):
    """plot_format="svg": plot.svg (no plot.png), marked as ours, named in summary.json and
    recorded with the files; a format not known is refused before anything is written."""
    from pangeo_hpc.batch.chains.recipe_yaml import load
    from pangeo_hpc.batch.pipeline import execute as runner
    from pangeo_hpc.errors import InputError
    from pangeo_hpc.write.marks import file_is_ours

    where = {"data": demo_tree, "start": "2000-01", "end": "2000-02", "workers": 1}
    with pytest.raises(InputError, match="plot format 'gif' is not one of png, svg, pdf"):
        runner.run_recipe(load("era5-sst-mean"), **where, out=tmp_path / "gif", plot_format="gif")
    assert not (tmp_path / "gif").exists()
    out = tmp_path / "svg"
    run = runner.run_recipe(load("era5-sst-mean"), **where, out=out, plot_format="svg")
    assert sorted(p.name for p in out.iterdir()) == [
        "plot.svg",
        "report.html",
        "result.nc",
        "summary.json",
    ]
    assert file_is_ours(out / "plot.svg")
    assert run.summary["outputs"]["plot"] == "plot.svg"
    assert "plot.svg" in json.loads((out / "summary.json").read_text())["files"]


def test_spec_errors_name_the_file(tmp_path):
    from pangeo_hpc.batch.chains.recipe_yaml import load

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\nchain: sst-median\ndataset: {variable: v, start: 2000-01, end: 2000-02}\n"
    )
    with pytest.raises(
        InputError,
        match=r"bad.yaml': unknown key\(s\) \['chain'\]: a recipe has \['name', 'description', "
        r"'dataset', 'steps', 'results', 'outputs', 'plot'\]",
    ):
        load(str(bad))
    bad.write_text("name: x\nsteps: []\n")
    with pytest.raises(InputError, match="lacks dataset.variable, dataset.start, dataset.end"):
        load(str(bad))
    bad.write_text("name: [unclosed\n")
    with pytest.raises(
        InputError,
        match=r"bad.yaml' is not valid YAML: did not find expected ',' or '\]' \(line 2, column 1\): fix the file$",
    ):
        load(str(bad))


def _laughs(levels: int) -> str:
    """A valid recipe but for its description: ``levels`` lists of aliases, each naming the
    list before it ten times (10**levels strings once expanded: a "billion laughs" at 9)."""
    lists = [f"  - &l0 [{', '.join(['ha'] * 10)}]"]
    lists += [f"  - &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "\n".join(
        ["name: laughs", "description:", *lists,
         "dataset: {variable: sea_surface_temperature, start: 2000-01, end: 2000-01}",
         "steps:", "  - time_mean: {}", ""]
    )  # fmt: skip


def test_an_alias_bomb_or_a_huge_recipe_is_refused_before_it_is_built(tmp_path, capsys):
    from pangeo_hpc.batch.chains.recipe_yaml import load

    recipe = tmp_path / "laughs.yaml"
    recipe.write_text(_laughs(1))
    assert load(recipe).description.startswith("[['ha', 'ha'")  # aliases are fine
    recipe.write_text(_laughs(4))  # 10^4 values: the old code built them (a 100 KB string)
    with pytest.raises(
        InputError,
        match=r"^recipe '.*laughs.yaml' holds more than 10,000 values once its aliases \(\*name\) are expanded: a recipe holds a few dozen; check the file \(aliases of aliases multiply\)$",
    ):
        load(recipe)
    (tmp_path / "loop.yaml").write_text("name: x\ndescription: &a [*a]\n")
    with pytest.raises(
        InputError, match=r"loop.yaml' holds an alias \(\*name\) inside the value it names"
    ):
        load(tmp_path / "loop.yaml")
    huge = tmp_path / "huge.yaml"
    huge.write_text(_laughs(0).replace("name: laughs", "name: huge\n# " + "x" * (64 << 10)))
    with pytest.raises(
        InputError, match=r"huge.yaml' is larger than 64 KiB: a recipe is a few KB of YAML"
    ):
        load(huge)
    # the billion laughs itself, through the command line: one line, exit code 2, nothing written
    recipe.write_text(_laughs(9))
    out = tmp_path / "out"
    assert cli.main([str(recipe), "--data", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds more than 10,000 values" in err, err
    assert not out.exists()
