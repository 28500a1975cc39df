"""Bad input everywhere a user types: every CLI verb gets wrong values, missing and
unreadable paths, malformed dates, unknown recipes, variables and profiles, damaged and
foreign NetCDF files. Each must end with exit code 2 and one line on stderr that names the
value (and says what to do), and leave no output behind.

The cases run ``pangeo_hpc.run.main`` in this process (``{tmp}``, ``{tree}`` and ``{bad}``
are filled in per case); the parsers' own properties are in test_parsers_properties.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from pangeo_hpc.cli import main as run
from tests.support.needs import missing

FILE = "2000/01/data/sea_surface_temperature.nc"
#: a recipe asking for cos(latitude) weights by name: weights takes a variable ($name)
WEIGHTS_COS = """\
name: weights-cos
dataset: {variable: sea_surface_temperature, start: "2000-01", end: "2000-02"}
steps:
  - area_mean: {weights: cos}
  - time_mean: {}
"""

# (id, argv, text the one line must contain)
CASES = [
    # verbs and recipes
    ("unknown verb", ["frobnicate"], "'frobnicate'"),
    ("unknown recipe", ["era5-sst-meen", "--data", "{tree}"], "era5-sst-meen"),
    ("unknown option", ["era5-sst-mean", "--dta", "{tree}"], "--dta"),
    # paths
    ("missing data", ["era5-sst-mean", "--data", "{tmp}/nope"], "nope"),
    ("data is a file", ["era5-sst-mean", "--data", "{tree}/" + FILE], "sea_surface_temperature.nc"),
    ("empty folder", ["era5-sst-mean", "--data", "{tmp}/empty"], "empty"),
    ("missing hydration path", ["hydration", "{tmp}/nope"], "nope"),
    ("missing warmup path", ["warmup", "{tmp}/nope"], "nope"),
    ("missing survey path", ["survey", "{tmp}/nope"], "nope"),
    (
        "missing convert data",
        ["convert", "--data", "{tmp}/nope", "--out", "{tmp}/out.zarr"],
        "nope",
    ),
    ("lab without notebooks", ["lab", "--here", "--notebook-dir", "{tmp}/nope"], "nope"),
    # dates and periods
    ("month 13", ["era5-sst-mean", "--data", "{tree}", "--start", "2000-13"], "'2000-13'"),
    ("not a date", ["era5-sst-mean", "--data", "{tree}", "--start", "last year"], "'last year'"),
    (
        "end before start",
        ["era5-sst-mean", "--data", "{tree}", "--start", "2001-01", "--end", "2000-01"],
        "2001-01",
    ),
    (
        "period outside the data",
        ["era5-sst-mean", "--data", "{tree}", "--start", "1990-01", "--end", "1990-12"],
        "1990-01",
    ),
    ("demo month 00", ["demo-data", "--out", "{tmp}/demo", "--start", "2000-00"], "'2000-00'"),
    # variables, profiles, clusters, sizes, walltimes
    (
        "unknown variable",
        [
            "convert",
            "--data",
            "{tree}",
            "--out",
            "{tmp}/o.zarr",
            "--variable",
            "sea_surface_temprature",
        ],
        "sea_surface_temprature",
    ),
    ("unknown profile", ["job-script", "--profile", "aws-c5n.81xlarge"], "aws-c5n.81xlarge"),
    ("unknown cluster kind", ["job-script", "--cluster", "kubernetes"], "kubernetes"),
    (
        "bad memory",
        ["job-script", "--cluster", "slurm", "--cores", "2", "--memory", "lots"],
        "'lots'",
    ),
    (
        "bad walltime",
        [
            "job-script",
            "--cluster",
            "slurm",
            "--cores",
            "2",
            "--memory",
            "4GB",
            "--walltime",
            "soon",
        ],
        "'soon'",
    ),
    ("zero workers", ["era5-sst-mean", "--data", "{tree}", "--workers", "0"], "'0'"),
    ("words for workers", ["warmup", "{tree}", "--workers", "many"], "'many'"),
    ("bad survey size", ["survey", "{tree}", "--bytes", "1XB"], "'1XB'"),
    ("bad tunnel login", ["tunnel", "--login", "my host"], "'my host'"),
    ("bad tunnel port", ["tunnel", "--login", "hpc", "--dashboard-port", "70000"], "70000"),
    (
        "link without port",
        ["lab-config", "--out", "{tmp}/l.yaml", "--link", "/status"],
        "'/status'",
    ),
    (
        "bad codec",
        ["convert", "--data", "{tree}", "--out", "{tmp}/o.zarr", "--codec", "gzip9"],
        "gzip9",
    ),
    # S3
    ("bucket name", ["inventory", "s3://ab"], "'ab'"),
    (
        "endpoint without scheme",
        ["inventory", "s3://era5-pds", "--endpoint-url", "127.0.0.1:9"],
        "127.0.0.1:9",
    ),
    ("s3 flags on a folder", ["hydration", "{tree}", "--anon"], "--anon"),
    # recipe files: an option's value of a kind the step cannot take, refused when read
    (
        "area_mean weights cos",
        ["run", "{tmp}/recipes/weights-cos.yaml", "--data", "{tree}", "--workers", "1"],
        "steps[0] (area_mean): weights='cos'",
    ),
    # files the recipe cannot use
    (
        "truncated file",
        ["era5-sst-mean", "--data", "{bad}", "--start", "2000-01", "--end", "2000-01"],
        "sea_surface_temperature.nc",
    ),
]


@pytest.fixture
def dirs(demo_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    bad = tmp_path / "bad"
    shutil.copytree(demo_tree / "2000" / "01", bad / "2000" / "01")
    path = bad / FILE
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # truncated mid-copy
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "weights-cos.yaml").write_text(WEIGHTS_COS)
    return {"tmp": str(tmp_path), "tree": str(demo_tree), "bad": str(bad)}


def _one_line_exit_2(argv: list[str], must: str, capsys, tmp_path: Path) -> None:
    before = sorted(p.name for p in tmp_path.iterdir())
    code = run.main(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (argv, code, out, err)
    assert len(lines) == 1, f"{argv}: not one line:\n{err}"
    assert must in lines[0], f"{argv}: {must!r} not named in: {lines[0]}"
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "output left behind"
    assert not list(Path.cwd().glob("results*")), "a results folder was left"


@pytest.mark.parametrize(("argv", "must"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_exits_2_with_one_line_naming_it(
    argv, must, dirs, capsys, tmp_path, _state_cache_per_test
):
    argv = [a.format(**dirs) for a in argv]
    _one_line_exit_2(argv, must, capsys, tmp_path)
    states = Path(_state_cache_per_test)  # this test's own state cache (conftest)
    assert not states.exists() or not any(states.rglob("*")), "a cache entry was left"


def test_a_file_on_another_grid_is_named(demo_tree, tmp_path, capsys, monkeypatch):
    """One month on a different grid: the run stops before computing, naming the file."""
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    tree = tmp_path / "tree"
    for month in ("01", "02"):
        shutil.copytree(demo_tree / "2000" / month, tree / "2000" / month)
    odd = tree / "2000/02/data/sea_surface_temperature.nc"
    with netCDF4.Dataset(demo_tree / "2000/02/data/sea_surface_temperature.nc") as src:
        times = src["time0"][:]
        units = src["time0"].units
    odd.unlink()
    with netCDF4.Dataset(odd, "w") as nc:  # a 5-degree grid, same variable and times
        nc.createDimension("time0", len(times))
        nc.createDimension("lat", 37)
        nc.createDimension("lon", 72)
        t = nc.createVariable("time0", "f8", ("time0",))
        t[:], t.units = times, units
        nc.createVariable("lat", "f4", ("lat",))[:] = np.linspace(90, -90, 37)
        nc.createVariable("lon", "f4", ("lon",))[:] = np.arange(0, 360, 5)
        v = nc.createVariable("sea_surface_temperature", "f4", ("time0", "lat", "lon"))
        v[:] = 290.0
    _one_line_exit_2(
        ["era5-sst-mean", "--data", str(tree), "--start", "2000-01", "--end", "2000-02"],
        "2000/02",
        capsys,
        tmp_path,
    )


def test_an_unreadable_tree_is_named(demo_tree, tmp_path):
    """Root reads anything: the CLI runs as nobody (setpriv) on a folder it may not enter."""
    if shutil.which("setpriv") is None:
        missing("setpriv", "apt-get install util-linux")
    tree = tmp_path / "tree"
    shutil.copytree(demo_tree / "2000" / "01", tree / "2000" / "01")
    (tree / "2000").chmod(0o700)
    tmp_path.chmod(0o755)
    import sys

    r = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
         "pangeo_hpc.run", "hydration", str(tree / "2000" / "01")],
        capture_output=True, text=True, cwd="/tmp",
    )  # fmt: skip
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "2000/01" in r.stderr and "permission denied" in r.stderr


def _field():
    import xarray as xr

    return xr.DataArray(
        np.ones((2, 3, 4), "f4"),
        dims=("time", "lat", "lon"),
        coords={
            "time": np.array(["2000-01-01", "2000-02-01"], "datetime64[ns]"),
            "lat": [-10.0, 0.0, 10.0],
            "lon": [0.0, 90.0, 180.0, 270.0],
        },
    )


def _public_calls(tree: str) -> list[tuple[str, object, str]]:
    """(id, call, text the one-line InputError must contain)."""
    from pangeo_hpc import get_cluster, open_era5, open_files, recipes, start_cluster
    from pangeo_hpc.lab.setup import write_lab_config
    from pangeo_hpc.lab.tunnel import tunnel_command
    from pangeo_hpc.storage.hydration import hydration
    from pangeo_hpc.storage.survey import read_speed
    from pangeo_hpc.storage.warmup import warmup

    sst = "sea_surface_temperature"
    return [
        ("open_era5 variable int", lambda: open_era5(123, source=tree), "123"),
        ("open_era5 unknown variable", lambda: open_era5("sst", source=tree), "'sst'"),
        ("open_era5 source int", lambda: open_era5(sst, source=42), "42"),
        ("open_era5 month 13", lambda: open_era5(sst, "2000-13", source=tree), "'2000-13'"),
        ("open_era5 variables dict", lambda: open_era5({"a": 1}, source=tree), "{'a': 1}"),
        ("open_files pattern int", lambda: open_files(7, sst), "pattern=7"),
        ("open_files nothing", lambda: open_files(f"{tree}/*.nc4", sst), ".nc4'"),
        ("open_files variables", lambda: open_files(f"{tree}/2000/01/*/*.nc", "sst"), "'sst'"),
        ("global_mean ndarray", lambda: recipes.global_mean(np.ones((3, 4))), "ndarray"),
        (
            "global_mean dataset",
            lambda: recipes.global_mean(_field().to_dataset(name="x")),
            "Dataset",
        ),
        ("nino34 str", lambda: recipes.nino34("sst"), "'sst'"),
        ("anomaly list", lambda: recipes.anomaly([1, 2, 3]), "[1, 2, 3]"),
        (
            "area_mean weights str",
            lambda: recipes.area_mean(_field(), weights="cos"),
            "weights='cos'",
        ),
        ("time_series freq", lambda: recipes.time_series(_field(), freq="weekly"), "'weekly'"),
        ("linear_trend per", lambda: recipes.linear_trend(_field(), per="eon"), "'eon'"),
        ("climatology no time", lambda: recipes.climatology(_field().isel(time=0)), "time"),
        ("get_cluster kind", lambda: get_cluster("kubernetes"), "'kubernetes'"),
        ("get_cluster workers", lambda: get_cluster("local", workers="two"), "'two'"),
        ("start_cluster jobs", lambda: start_cluster(profile="local", jobs=0), "jobs=0"),
        ("unknown profile", lambda: get_cluster(profile="nowhere"), "nowhere"),
        ("warmup missing", lambda: warmup("/nope"), "'/nope'"),
        ("hydration int", lambda: hydration(5), "path 5"),
        ("read_speed None", lambda: read_speed(None), "None"),
        ("tunnel port str", lambda: tunnel_command(login="h", ports={"dashboard": "x"}), "'x'"),
        ("lab link int", lambda: write_lab_config("/nonexistent/x.yaml", link=5), "link 5"),
    ]


def test_public_functions_raise_one_line_input_errors(demo_tree):
    from pangeo_hpc.errors import InputError

    wrong = []
    for name, call, must in _public_calls(str(demo_tree)):
        try:
            call()
        except InputError as exc:
            text = str(exc)
            if "\n" in text or must not in text:
                wrong.append(f"{name}: {text!r} (must name {must!r}, on one line)")
        except Exception as exc:
            wrong.append(f"{name}: {type(exc).__name__}: {exc}")
        else:
            wrong.append(f"{name}: no error")
    assert not wrong, "\n".join(wrong)


@pytest.mark.s3
def test_an_empty_bucket_is_named(seaweedfs, monkeypatch, tmp_path, capsys):
    from tests.support.s3env import aws_environment

    aws_environment(monkeypatch, seaweedfs, tmp_path)
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    fs = seaweedfs.filesystem()
    if not fs.exists("era5-empty"):
        fs.mkdir("era5-empty")
    ep = ["--endpoint-url", seaweedfs.endpoint_url]
    for argv in (
        ["era5-sst-mean", "--data", "s3://era5-empty", *ep, "--out", str(tmp_path / "r")],
        ["convert", "--data", "s3://era5-empty", *ep, "--out", str(tmp_path / "z.zarr")],
        ["survey", "s3://era5-empty", *ep],
        ["index", "s3://era5-empty", *ep],
    ):
        _one_line_exit_2(argv, "era5-empty", capsys, tmp_path)


def test_a_result_folder_gets_the_usual_mode(tmp_path):
    """Outputs are written in a private temporary folder, but the result is an ordinary
    folder (mode from the umask), so that a group can read shared results."""
    import os
    import stat

    from pangeo_hpc.write.outputs import atomic_dir, write_json

    old = os.umask(0o022)
    try:
        with atomic_dir(tmp_path / "result") as tmp:
            write_json(tmp / "summary.json", {"outputs": {}})  # what marks a result
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "result").stat().st_mode) == 0o755
    assert [p.name for p in tmp_path.iterdir()] == ["result"]
