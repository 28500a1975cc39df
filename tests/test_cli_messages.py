"""What the command line says: ``--help`` as users read it (the program named as they called
it, each verb once, no markup, no source file names), and every error twice: from the
library in Python (``price='cheap'``, ``calibrate(...)``) and from the CLI in its own
words (``--price 'cheap'``, ``python -m pangeo_hpc.run calibrate ...``).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import dask.config
import pytest

from pangeo_hpc.cli import main as cli
from pangeo_hpc.cli.common import FLAGS, VERB_FLAGS, for_cli, program_name
from pangeo_hpc.errors import ClusterError, DataNotFoundError, InputError, StorageError
from tests.support.paths import ROOT

PROG = "python -m pangeo_hpc.run"
VERBS = [verb.name for verb in cli.VERBS]
SST = "sea_surface_temperature"
#: what a user's help text must not show: reST markup, module files, files not in the wheel
MARKUP = ("`", ".py", ":mod:", ":func:", "docs/")


@pytest.fixture
def main(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """``cli.main`` in this process, called as ``python -m pangeo_hpc.run`` is."""
    monkeypatch.setattr(cli, "_interruptible", lambda: None)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "pangeo_hpc" / "run.py")])
    monkeypatch.chdir(tmp_path)
    with dask.config.set({"pangeo-hpc.plan.calibration": str(tmp_path / "no-calibration.json")}):
        yield cli.main


def _cli(*args: str, cwd: Path, script: Path | None = None) -> subprocess.CompletedProcess:
    """The CLI in its own process: ``python -m pangeo_hpc.run`` or the console ``script``."""
    start = [str(script)] if script is not None else ["-m", "pangeo_hpc.run"]
    return subprocess.run(
        [sys.executable, *start, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )


# --------------------------------------------------------------------------------------------
# --help


def test_the_program_is_named_as_it_was_called(tmp_path):
    assert program_name("/home/me/.venv/bin/pangeo-hpc") == "pangeo-hpc"
    assert program_name(str(ROOT / "pangeo_hpc" / "run.py")) == PROG
    module = _cli("--help", cwd=tmp_path)
    assert module.returncode == 0, module.stderr
    assert module.stdout.startswith(f"usage: {PROG} [-h] VERB ..."), module.stdout
    # the console script pip writes for [project.scripts], under its name
    script = tmp_path / "pangeo-hpc"
    script.write_text("import sys\nfrom pangeo_hpc.cli.main import main\nsys.exit(main())\n")
    console = _cli("plan", "--help", cwd=tmp_path, script=script)
    assert console.returncode == 0, console.stderr
    assert console.stdout.startswith("usage: pangeo-hpc plan "), console.stdout
    wrong = _cli("plan", "era5-sst-mean", "--sise", "1GB", cwd=tmp_path, script=script)
    assert wrong.returncode == 2
    assert wrong.stderr.strip().endswith("(see `pangeo-hpc plan --help`)"), wrong.stderr


def test_help_lists_each_verb_once_in_plain_words(main, capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    usage = out.splitlines()[0]
    assert usage == f"usage: {PROG} [-h] VERB ...", usage  # no {verb,verb,...} list
    for name in VERBS:
        lines = re.findall(rf"^ +{re.escape(name)}  +\S.*$", out, re.M)
        assert len(lines) == 1, f"{name!r} listed {len(lines)} times:\n{out}"
    assert "exit codes: 0 success, 2 bad input" in out
    assert f"{PROG} era5-sst-mean --data DIR" in out  # a recipe by its name
    assert not [m for m in MARKUP if m in out], out
    assert main([]) == 2 and capsys.readouterr().out == out  # no verb: the same help


@pytest.mark.parametrize("verb", [*VERBS, "lab --here"])
def test_each_verb_has_help_in_plain_words(verb, main, capsys):
    assert main([*verb.split(), "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {PROG} {verb} "), out
    description = out.split("\n\n")[1]
    assert len(description) > 30 and not description.startswith(("options", "positional"))
    assert not [m for m in MARKUP if m in out], out
    if verb == "calibrate":  # the model is explained in the documentation, by a page's title
        page = "Plan before you pay: the scaling model"
        assert f"documentation, page '{page}'" in " ".join(out.split())
        assert (ROOT / "docs" / "scaling.md").read_text().startswith(f"# {page}\n")


def test_a_recipe_runs_by_name_or_after_run(main, capsys, tmp_path, demo_tree):
    assert main(["list"]) == 0 and "era5-sst-mean" in capsys.readouterr().out  # the verb
    assert main(["run", "list"]) == 2  # a recipe named like a verb: reached through run
    assert capsys.readouterr().err.startswith("error: unknown recipe 'list': choose one of")
    nowhere = tmp_path / "nowhere"
    for argv in (["era5-sst-mean"], ["run", "era5-sst-mean"]):
        assert main([*argv, "--data", str(nowhere)]) == 2
        assert f"'{nowhere}' does not exist: pass --data" in capsys.readouterr().err
    assert main(["run", "era5-sst-mean", "--bogus"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"error: unrecognized arguments: --bogus (see `{PROG} run --help`)"
    out = tmp_path / "out"
    argv = ["run", "era5-sst-mean", "--data", str(demo_tree), "--start", "2000-01"]
    argv += ["--end", "2000-01", "--workers", "1", "--no-progress", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    assert json.loads((out / "summary.json").read_text())["inputs"]["files"] == 1


def test_every_flag_of_the_table_is_a_flag_of_the_cli():
    _, parsers = cli.build_parser(PROG)
    options = {
        option
        for p in [*parsers.values(), cli._lab_here_parser(PROG)]
        for action in p._actions
        for option in action.option_strings
    }
    table = {*FLAGS.values(), *(f for flags in VERB_FLAGS.values() for f in flags.values())}
    assert table <= options, sorted(table - options)
    assert set(VERB_FLAGS) <= set(parsers)


# --------------------------------------------------------------------------------------------
# errors: Python in the library, flags in the CLI


@pytest.mark.parametrize(
    ("message", "param", "verb", "said"),
    [
        ("price='cheap' is not a price", "price", None, "--price 'cheap' is not a price"),
        ("drop anon=True and use credentials", "anon", None, "drop --anon and use credentials"),
        ("with start=/end= (or", ("start", "end"), None, "with --start/--end (or"),
        ("pass source= with the root", "source", None, "pass --data with the root"),
        ("lower memory=, cores= or walltime=", ("memory", "cores"), None, "lower --memory, --cores or walltime="),
        ("chunk_mb=0.0 must be > 0", "chunk_mb", None, "--chunk-mb 0.0 must be > 0"),
        ("simulate_workers=-1 must be 0", "simulate_workers", None, "--simulate-workers -1 must be 0"),
        ("out='x' holds files: pass out=NEW", "out", None, "--out 'x' holds files: pass --out NEW"),
        # only the parameters the error names, and only as whole names
        ("out='x' and layout='y'", (), None, "out='x' and layout='y'"),
        ("layout='y' and data.layout='z'", "out", None, "layout='y' and data.layout='z'"),
        # a parameter the verb spells otherwise
        ("path='c.json' exists", "path", "calibrate", "--calibration 'c.json' exists"),
        ("path='l.yaml' exists", "path", "lab-config", "--out 'l.yaml' exists"),
        ("path='s.json' exists", "path", "survey", "path='s.json' exists"),
    ],
)  # fmt: skip
def test_the_cli_says_flags_for_parameters(message, param, verb, said):
    for kind in (InputError, DataNotFoundError, ClusterError, StorageError):
        assert for_cli(kind(message, param=param), PROG, verb) == said


def test_the_cli_says_commands_for_calls():
    exc = InputError(
        "measure it with calibrate('my recipe'), or pass calibration='c.json'",
        param="calibration",
        commands={"calibrate('my recipe')": ["calibrate", "my recipe"]},
    )
    assert for_cli(exc, "pangeo-hpc") == (
        "measure it with `pangeo-hpc calibrate 'my recipe'`, or pass --calibration 'c.json'"
    )
    assert str(exc).startswith("measure it with calibrate('my recipe')")  # the library's


def test_what_the_cli_needs_travels_with_the_error():
    """Errors raised on Dask workers come back pickled (through tblib, as distributed
    sends them): the parameters and calls too."""
    import tblib.pickling_support

    tblib.pickling_support.install()
    exc = DataNotFoundError("start='1990-01'", param=("start", "end"), commands={"f()": ["x"]})
    back = pickle.loads(pickle.dumps(exc))
    assert isinstance(back, InputError) and isinstance(back, FileNotFoundError)
    assert (str(back), back.param, back.commands) == (str(exc), ("start", "end"), {"f()": ("x",)})
    assert InputError("plain").param == () and InputError("plain").commands == {}


def _setup(tmp_path: Path, demo_tree: Path) -> dict[str, str]:
    (tmp_path / "notes.txt").write_text("my notes\n")
    (tmp_path / "mine.json").write_text('{"my": "settings"}')
    from pangeo_hpc.demo import DemoSpec, generate

    generate(tmp_path / "demo", DemoSpec(resolution=10.0, start="2000-01", end="2000-01"))
    return {"tmp": str(tmp_path), "tree": str(demo_tree)}


def _library_calls(d: dict[str, str]) -> dict[str, object]:
    from pangeo_hpc import open_era5
    from pangeo_hpc.demo import DemoSpec, generate
    from pangeo_hpc.planning.calibrate import calibrate
    from pangeo_hpc.planning.calibration import load_calibration
    from pangeo_hpc.planning.plan import plan
    from pangeo_hpc.s3.options import S3Options

    tmp, tree = d["tmp"], d["tree"]
    return {
        "price": lambda: plan("era5-sst-mean", "1GB", price="cheap"),
        "out": lambda: generate(f"{tmp}/notes.txt"),
        "out and overwrite": lambda: generate(
            f"{tmp}/demo", DemoSpec(resolution=5.0, start="2000-01", end="2000-01")
        ),
        "data": lambda: open_era5(SST, "2000-01", "2000-01", source=f"{tmp}/nowhere"),
        "calibration missing": lambda: load_calibration(f"{tmp}/c.json"),
        "calibration not ours": lambda: calibrate(path=f"{tmp}/mine.json", data=tree),
        "start and end": lambda: open_era5(SST, "1990-01", "1990-02", source=tree),
        "endpoint": lambda: S3Options.resolve(endpoint_url="127.0.0.1:9"),
    }


# case: (the library's message, the CLI's argv, the CLI's line); {tmp} and {tree} filled in
ERRORS = {
    "price": (
        "price='cheap' is not a price per node-hour: write it like '3.888/h'",
        ["plan", "era5-sst-mean", "--size", "1GB", "--price", "cheap", "--no-plot"],
        "--price 'cheap' is not a price per node-hour: write it like '3.888/h'",
    ),
    "out": (
        "out='{tmp}/notes.txt' is a file: give a folder",
        ["demo-data", "--out", "{tmp}/notes.txt"],
        "--out '{tmp}/notes.txt' is a file: give a folder",
    ),
    "out and overwrite": (
        "'{tmp}/demo' holds demo data made with other settings (*): write to another out=, "
        "or pass overwrite=True",
        ["demo-data", "--out", "{tmp}/demo", "--start", "2000-01", "--end", "2000-01",
         "--resolution", "5"],
        "'{tmp}/demo' holds demo data made with other settings (*): write to another --out, "
        "or pass --overwrite",
    ),
    "data": (
        "data directory '{tmp}/nowhere' does not exist: pass source= with the root of your "
        "era5-pds tree (for synthetic demo data: `make demo`, or "
        "pangeo_hpc.demo.generate(DIR))",
        ["era5-sst-mean", "--data", "{tmp}/nowhere"],
        "data directory '{tmp}/nowhere' does not exist: pass --data with the root of your "
        "era5-pds tree (for synthetic demo data: `make demo`, or "
        "`python -m pangeo_hpc.run demo-data --out DIR`)",
    ),
    "calibration missing": (
        "calibration '{tmp}/c.json' does not exist: measure it with "
        "calibrate(path='{tmp}/c.json') first, or give no calibration file (*)",
        ["plan", "era5-sst-mean", "--size", "1GB", "--no-plot", "--calibration", "{tmp}/c.json"],
        "calibration '{tmp}/c.json' does not exist: measure it with "
        "`python -m pangeo_hpc.run calibrate --calibration {tmp}/c.json` first, or give no "
        "calibration file (*)",
    ),
    "calibration not ours": (
        "path='{tmp}/mine.json' exists and is not a calibration file pangeo-hpc wrote: move "
        "it away or pass path='NEW.json' (nothing was changed)",
        ["calibrate", "--data", "{tree}", "--calibration", "{tmp}/mine.json"],
        "--calibration '{tmp}/mine.json' exists and is not a calibration file pangeo-hpc "
        "wrote: move it away or pass --calibration 'NEW.json' (nothing was changed)",
    ),
    "start and end": (
        "2 of 2 months*: choose a period that exists with start=/end=, or generate them "
        "with pangeo_hpc.demo.generate('{tree}', pangeo_hpc.demo.DemoSpec(start='1990-01', "
        "end='1990-02', *))",
        ["era5-sst-mean", "--data", "{tree}", "--start", "1990-01", "--end", "1990-02"],
        "2 of 2 months*: choose a period that exists with --start/--end, or generate them "
        "with `python -m pangeo_hpc.run demo-data --out {tree} * --start 1990-01 --end 1990-02`",
    ),
    "endpoint": (
        "endpoint_url='127.0.0.1:9' needs a scheme: write e.g. http://127.0.0.1:8333",
        ["inventory", "s3://era5-pds", "--endpoint-url", "127.0.0.1:9"],
        "--endpoint-url '127.0.0.1:9' needs a scheme: write e.g. http://127.0.0.1:8333",
    ),
}  # fmt: skip


def _pattern(text: str, d: dict[str, str]) -> str:
    """``text`` with {tmp} and {tree} filled in, as a regex where ``*`` stands for anything."""
    return ".*".join(re.escape(part.format(**d)) for part in text.split("*"))


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_name_parameters_in_python_and_flags_on_the_command_line(
    case, main, capsys, tmp_path, demo_tree
):
    d = _setup(tmp_path, demo_tree)
    library, argv, line = ERRORS[case]
    with pytest.raises(InputError, match=f"^{_pattern(library, d)}$") as info:
        _library_calls(d)[case]()
    assert " --" not in str(info.value) and PROG not in str(info.value)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main([a.format(**d) for a in argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert re.fullmatch(f"error: {_pattern(line, d)}", err.strip()), err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
