"""The command line answers ``--help`` and flag errors without importing the scientific
stack (issue 29: 1.35 s of every start went to xarray, dask, numba and scipy)."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: what no answer below may wait for
HEAVY = ("xarray", "dask", "distributed", "numba", "numpy", "pandas", "scipy", "matplotlib")
#: the interactive view's stack (``pangeo_hpc.explore``): imported when a notebook calls it,
#: never by ``import pangeo_hpc``, ``--help`` or a run (report.html needs none of it)
VIEWS = ("holoviews", "bokeh", "panel", "hvplot", "datashader")


def imported(*args: str, timeout: float = 120) -> tuple[int, set[str]]:
    """The exit code of ``python -X importtime -m pangeo_hpc.run ARGS``, and the top-level
    packages it imported (``-X importtime``'s lines on stderr)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pangeo_hpc.run", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    names = {
        line.split("|")[-1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return done.returncode, names


@pytest.mark.parametrize(
    "args, code",
    [
        (["--help"], 0),
        (["run", "--help"], 0),
        (["era5-sst-mean", "--help"], 0),
        (["plan", "--help"], 0),
        (["convert", "--help"], 0),
        (["lab-config", "--help"], 0),
        (["run", "era5-sst-mean", "--workers", "two"], 2),
        (["era5-sst-mean", "--no-such-flag"], 2),
        (["cache", "--help"], 0),
        (["list"], 0),
        (["no-such-recipe"], 2),
        (["run", "no-such-recipe.yaml"], 2),
        (["era5-sst-mean", "--budget", "lots"], 2),
    ],
)
def test_help_and_flag_errors_import_no_scientific_stack(args, code):
    got, names = imported(*args)
    assert got == code
    assert "pangeo_hpc" in names, "-X importtime printed nothing: the check would be vacuous"
    # the configuration is dask's (dask.config: 0.15 s, no NumPy): allowed past --help
    heavy = set(HEAVY) - ({"dask"} if "--help" not in args else set())
    assert not names & heavy, f"{' '.join(args)} imported {sorted(names & heavy)}"
    assert not names & set(VIEWS), f"{' '.join(args)} imported {sorted(names & set(VIEWS))}"


def test_a_reader_that_leaves_early_gets_no_traceback():
    """``pangeo-hpc list | head -1``: the pipe closed before the lines are written is the
    reader's choice, not an internal error (it was a BrokenPipeError traceback)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "pangeo_hpc.run", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()  # before the child writes: its first flush meets a closed pipe
    err = p.stderr.read()
    assert p.wait(timeout=120) == 141, err
    assert err == "", err


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert not done.stderr, done.stderr
    return set(done.stdout.split())


def test_a_run_imports_matplotlib_in_the_background_while_it_computes():
    """A recipe run's pipeline loads without matplotlib (about a second of a small run's
    start on the loaded 2-core machine); ``preload`` imports the drawing's modules in a
    daemon thread, which the run starts before computing (issue 29)."""
    names = _modules_after("import pangeo_hpc.batch.pipeline.execute")
    assert "pangeo_hpc.batch.pipeline.results" in names  # the check is not vacuous
    assert not {n for n in names if n.split(".")[0] == "matplotlib"}
    code = (
        "from pangeo_hpc.write.figures import preload\n"
        "t = preload()\n"
        "assert t.daemon\n"
        "t.join(100)\n"
    )
    names = _modules_after(code)
    want = {"matplotlib.figure", "matplotlib.backends.backend_agg", "PIL.PngImagePlugin"}
    assert want <= names, want - names


def test_import_and_a_run_import_no_interactive_view_stack(demo_tree, tmp_path):
    """``pangeo_hpc.explore`` is offered by ``import pangeo_hpc`` and brings HoloViews,
    Bokeh, Panel, hvplot and Datashader only when called; a recipe run writes its
    report.html without any of them."""
    names = _modules_after("import pangeo_hpc\nassert callable(pangeo_hpc.explore)")
    assert "pangeo_hpc.lab.explore" in names  # the check is not vacuous
    assert not {n.split(".")[0] for n in names} & set(VIEWS)
    out = tmp_path / "out"
    code, names = imported("era5-sst-mean", "--data", str(demo_tree), "--start", "2000-01",
                           "--end", "2000-02", "--workers", "1", "--out", str(out),
                           timeout=600)  # fmt: skip
    assert code == 0 and (out / "report.html").is_file()
    assert "matplotlib" in names  # the figure: -X importtime saw the whole run
    assert not names & set(VIEWS), sorted(names & set(VIEWS))
