"""Never destroy what pangeo-hpc did not write: every verb that writes, through one table.

Each writing verb is pointed at a folder of a user's own files, at its input, at the
input's parent and at an ``s3://`` URL: each must end with exit code 2 and one line naming
the path, and leave every byte (and every mtime) where it was, and nothing new anywhere.
A verb added to the CLI must be listed here as writing (with its cases) or as not
writing, so the next verb cannot forget the guard. A static check keeps renames and
removals inside the guarded helper (``pangeo_hpc/write/outputs.py``).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pangeo_hpc.cli import main as run
from tests.support.paths import ROOT

FILE = "2000/01/data/sea_surface_temperature.nc"

# verb -> argv with {out} where the output goes; "folder" outputs are replaced whole or
# filled, "file" outputs are single files. Inputs are {data} (a demo tree of 2 months).
WRITERS: dict[str, tuple[str, list[str]]] = {
    "run": (  # a recipe by its name alone: run RECIPE
        "folder",
        ["era5-sst-mean", "--data", "{data}", "--end", "2000-01", "--out", "{out}"],
    ),
    "run --format icechunk": (  # a repository, committed to (write/icechunk_out.py)
        "folder",
        "era5-sst-mean --data {data} --end 2000-01 --out {out} --format icechunk".split(),
    ),
    "convert": (
        "folder",
        ["convert", "--data", "{data}", "--end", "2000-01", "--out", "{out}", "--overwrite"],
    ),
    "stage": ("folder", ["stage", "{data}", "{out}"]),
    "demo-data": (
        "folder",
        [
            "demo-data",
            "--out",
            "{out}",
            "--start",
            "2000-01",
            "--end",
            "2000-01",
            "--resolution",
            "10",
        ],
    ),
    "survey --json": ("file", ["survey", "{data}", "--bytes", "1MB", "--json", "{out}"]),
    "survey --plot": ("file", ["survey", "{data}", "--bytes", "1MB", "--plot", "{out}"]),
    "plan": ("file", ["plan", "era5-sst-mean", "--size", "1GB", "--plot", "{out}"]),
    "calibrate": ("file", ["calibrate", "--data", "{data}", "--calibration", "{out}"]),
    "inventory": ("file", ["inventory", "s3://no-such-bucket", "--json", "{out}"]),
    "lab-config": ("file", ["lab-config", "--data", "{data}", "--out", "{out}"]),
    # index writes only its cache (pangeo-hpc.s3.index-cache): tests/io/test_s3_source.py
    # points that at a user's folder (test_index_never_writes_into_a_users_folder)
    "index": ("cache", []),
    # ... and with --format icechunk a repository folder, checked before any request
    "index --format icechunk": (
        "folder",
        [
            "index",
            "s3://no-such-bucket",
            "--variable",
            "sea_surface_temperature",
            "--format",
            "icechunk",
            "--out",
            "{out}",
        ],
    ),
    # cache (list, size, clear) removes only its own entries (pangeo-hpc.cache.folder):
    # tests/batch/test_state_cache.py points that at a user's folder and checks nothing there is
    # touched (test_cache_clear_never_touches_a_users_folder); clear also removes the
    # temporaries of killed runs in output.root, and nothing else
    # (tests/write/test_atomic_writes.py: test_only_our_own_leftovers_of_dead_writers_...)
    "cache": ("cache", []),
    # cleanup s3://... removes only objects that carry pangeo-hpc's mark and that no
    # manifest names: tests/write/test_s3_outputs.py runs it on a prefix holding a user's objects
    # (test_a_prefix_holding_a_users_object_is_refused_untouched) and checks each is kept
    "cleanup": ("cache", []),
}
# verbs that write nothing a user named: they print, read, or keep private files in
# folders of their own (lab: a new 0700 folder per job; job logs)
READERS = {"list", "profiles", "job-script", "tunnel", "hydration", "warmup", "lab", "provenance"}


def test_every_verb_is_listed_as_writing_or_not():
    verbs = {verb.name for verb in run.VERBS}
    writers = {name.split()[0] for name in WRITERS}
    assert verbs == writers | READERS, (
        f"list {sorted(verbs - writers - READERS)} in WRITERS (with cases) or READERS"
    )


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry under ``root``: size and mtime (a rewrite changes one of them)."""
    found = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        found[str(p.relative_to(root))] = (st.st_size if p.is_file() else -1, st.st_mtime_ns)
    return found


@pytest.fixture
def place(demo_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A user's home: a thesis folder, and a project folder with notes and a data tree."""
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    thesis = tmp_path / "thesis"
    thesis.mkdir()
    (thesis / "thesis.tex").write_text("\\chapter{Results}\n")
    (thesis / "figure.png").write_bytes(b"\x89PNG my own figure")
    (thesis / "notes.json").write_text('{"mine": true}')
    (thesis / "lab.yaml").write_text("pangeo-hpc:\n  data:\n    root: /mine\n")
    project = tmp_path / "project"
    data = project / "data"
    for month in ("01", "02"):
        shutil.copytree(demo_tree / "2000" / month, data / "2000" / month)
    (project / "notes.md").write_text("my notes\n")
    return {"home": tmp_path, "thesis": thesis, "project": project, "data": data}


def _targets(kind: str, place: dict[str, Path]) -> dict[str, str]:
    """Where a verb is sent: (case -> output) for its kind of output."""
    if kind == "folder":
        return {
            "a folder of a user's files": str(place["thesis"]),
            "the input itself": str(place["data"]),
            "the input's parent": str(place["project"]),
            "a folder inside the input": str(place["data"] / "2000"),
            "an S3 URL": "s3://my-bucket/results/x",
        }
    return {
        "a user's file": str(place["thesis"] / "thesis.tex"),
        "a user's figure": str(place["thesis"] / "figure.png"),
        "a user's JSON": str(place["thesis"] / "notes.json"),
        "a user's YAML about pangeo-hpc": str(place["thesis"] / "lab.yaml"),
        "a file of the input": str(place["data"] / FILE),
        "an S3 URL": "s3://my-bucket/results/x.png",
    }


#: verbs that write to ``s3://`` (write/targets.py): a prefix, a run and its manifest
#: (run, convert: tests/write/test_s3_outputs.py; demo-data: tests/write/test_s3_files.py), or one
#: object at its key (the single files: tests/write/test_s3_files.py), each pointed there at a
#: user's objects (exit 2, every object and ETag kept); --format icechunk:
#: tests/write/test_icechunk_outputs.py; index --format icechunk:
#: tests/io/test_virtual_refs.py. stage refuses an S3 URL here: it
#: copies onto the disk the computation reads (docs: S3 outputs)
S3_WRITERS = {
    "calibrate",
    "run",
    "run --format icechunk",
    "index --format icechunk",
    "convert",
    "demo-data",
    "survey --json",
    "survey --plot",
    "inventory",
    "plan",
    "lab-config",
}

CASES = [
    (verb, case)
    for verb, (kind, argv) in WRITERS.items()
    if argv
    for case in _targets(kind, {k: Path(k) for k in ("home", "thesis", "project", "data")})
    if not (verb in S3_WRITERS and case == "an S3 URL")
]


@pytest.mark.parametrize(("verb", "case"), CASES, ids=[f"{v}: {c}" for v, c in CASES])
def test_no_verb_writes_over_what_it_did_not_write(verb, case, place, capsys):
    kind, argv = WRITERS[verb]
    out = _targets(kind, place)[case]
    argv = [a.format(data=place["data"], out=out) for a in argv]
    before = _snapshot(place["home"])
    code = run.main(argv)
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (argv, code, err)
    assert len(lines) == 1, f"{argv}: not one line:\n{err}"
    assert out in lines[0], f"{argv}: {out!r} not named in: {lines[0]}"
    assert "nothing was changed" in lines[0] or "URL" in lines[0], lines[0]
    assert _snapshot(place["home"]) == before, "something was written, moved or removed"


@pytest.fixture(scope="module")
def a_result(demo_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A result folder of era5-sst-mean as a run wrote it (each test edits a copy)."""
    out = tmp_path_factory.mktemp("written") / "g"
    argv = ["era5-sst-mean", "--data", str(demo_tree), "--end", "2000-01", "--workers", "1"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run, "_interruptible", lambda: None)
        assert run.main([*argv, "--no-progress", "--out", str(out)]) == 0
    return out


def _redraw_plot(folder: Path) -> str:
    """The user draws the figure again, their way (matplotlib, no marker of ours)."""
    from matplotlib.figure import Figure

    fig = Figure()
    fig.subplots().plot([1, 2, 3], [2, 1, 3])
    fig.savefig(folder / "plot.png")
    return "plot.png"


def _add_an_attribute(folder: Path) -> str:
    """The user adds a note to the result file (as ``ncatted`` would), same size or not."""
    import netCDF4

    with netCDF4.Dataset(folder / "result.nc", "a") as nc:
        nc.my_notes = "checked against HadISST: fine"
    return "result.nc"


def _annotate_the_report(folder: Path) -> str:
    """The user adds a paragraph to report.html (its marker, the generator, stays)."""
    page = folder / "report.html"
    page.write_text(
        page.read_text().replace("<h2>Answer</h2>", "<p>Seen by A. User.</p><h2>Answer</h2>")
    )
    return "report.html"


EDITS = {
    "plot.png redrawn": _redraw_plot,
    "result.nc with an added attribute": _add_an_attribute,
    "report.html annotated": _annotate_the_report,
}


@pytest.mark.parametrize("edit", EDITS)
def test_a_run_never_replaces_a_result_a_user_edited(edit, a_result, place, capsys):
    """A user edited a file among the results: the next run into that folder refuses,
    naming the file, and leaves every byte; before it, nothing of the run was done."""
    out = place["home"] / "out" / "g"
    shutil.copytree(a_result, out)
    name = EDITS[edit](out)
    argv = [a.format(data=place["data"], out=out) for a in WRITERS["run"][1]]
    before = _snapshot(place["home"])
    code = run.main(argv)
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (argv, code, err)
    assert len(lines) == 1, f"{argv}: not one line:\n{err}"
    assert str(out) in lines[0] and repr(name) in lines[0], lines[0]
    assert "move that file out of the folder" in lines[0], lines[0]
    assert "nothing was changed" in lines[0], lines[0]
    assert _snapshot(place["home"]) == before, "something was written, moved or removed"


#: a recipe's name is a label, never a path (results/NAME when --out is not given)
NAMES = {
    "an absolute path (another result of ours)": "{home}/elsewhere/run1",
    "a path out of results/": "../../x",
    "a newline": "x\ny",
    "a hidden folder": ".hidden",
}


@pytest.mark.parametrize("case", NAMES)
def test_a_recipe_name_is_never_used_as_a_path(case, place, capsys, monkeypatch):
    from pangeo_hpc.write.outputs import write_json

    home = place["home"]
    (home / "work").mkdir()
    monkeypatch.chdir(home / "work")  # results/../../x would be home/x
    theirs = home / "elsewhere" / "run1"  # a result of another recipe, replaceable as ours
    theirs.mkdir(parents=True)
    write_json(theirs / "summary.json", {"outputs": {"summary": "summary.json"}})
    name = NAMES[case].format(home=home)
    recipe = (ROOT / "recipes" / "era5-sst-mean.yaml").read_text()
    spec = home / "recipe.yaml"
    spec.write_text(recipe.replace("name: era5-sst-mean", f"name: {json.dumps(name)}"))
    argv = ["run", str(spec), "--data", str(place["data"]), "--end", "2000-01"]
    before = _snapshot(home)
    code = run.main([*argv, "--workers", "1", "--no-progress"])
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (argv, code, err)
    assert len(lines) == 1, f"{argv}: not one line:\n{err}"
    assert repr(name)[:30] in lines[0] and "not a label" in lines[0], lines[0]
    assert _snapshot(home) == before, "something was written, moved or removed"


def test_outputs_of_our_own_are_replaced(place, capsys):
    """The guard refuses foreign outputs, not ours: a second run replaces the first."""
    home = place["home"]
    for argv in (
        ["demo-data", "--out", f"{home}/demo", "--end", "2000-01", "--resolution", "10"],
        ["stage", str(place["data"]), f"{home}/staged"],
        ["plan", "era5-sst-mean", "--size", "1GB", "--plot", f"{home}/plan.png"],
        ["survey", str(place["data"]), "--bytes", "1MB", "--json", f"{home}/s.json"],
        ["survey", str(place["data"]), "--bytes", "1MB", "--plot", f"{home}/s.svg"],
        ["lab-config", "--data", str(place["data"]), "--out", f"{home}/lab.yaml"],
    ):
        for attempt in (1, 2):
            code = run.main(argv)
            _, err = capsys.readouterr()
            assert code == 0, (argv, attempt, err)
    assert json.loads((home / "s.json").read_text())["written_by"].startswith("pangeo-hpc")
    assert (home / "staged" / FILE).is_file() and (home / "demo" / "2000").is_dir()


@pytest.mark.slow
def test_a_recipe_replaces_its_own_result_and_an_empty_folder(place, capsys):
    out = place["home"] / "results"
    out.mkdir(mode=0o750)  # made for the results, e.g. with a group's permissions
    argv = ["era5-sst-mean", "--data", str(place["data"]), "--end", "2000-01"]
    argv += ["--workers", "1", "--no-progress", "--out", str(out)]
    # the same run again would be served from the first (batch/pipeline/reuse.py):
    # --no-cache computes it, and replaces the first result
    for attempt in (1, 2):
        more = ["--no-cache"] if attempt == 2 else []
        assert run.main([*argv, *more]) == 0, (attempt, capsys.readouterr().err)
        assert "reused:" not in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [
        "plot.png",
        "report.html",
        "result.nc",
        "summary.json",
    ]
    assert out.stat().st_mode & 0o777 == 0o750
    (out / "my-notes.txt").write_text("a user's file among the results")
    capsys.readouterr()
    assert run.main(argv) == 2
    assert "my-notes.txt" in capsys.readouterr().err
    assert (out / "my-notes.txt").read_text() == "a user's file among the results"


def test_stage_never_replaces_a_users_file_inside_its_folder(place):
    from pangeo_hpc.storage.stage import stage

    dst = place["home"] / "staged"
    assert stage(str(place["data"]), dst).files == 2
    theirs = dst / "2000/02/data/sea_surface_temperature.nc"
    theirs.unlink()
    theirs.write_bytes(b"a user's own file at a staged path")
    again = stage(str(place["data"]), dst)
    assert again.files == 0 and again.skipped == 1
    assert [str(theirs) in why for _, why in again.failed] == [True]
    assert theirs.read_bytes() == b"a user's own file at a staged path"


def test_legacy_result_folder_is_recognised_and_extra_files_are_not(tmp_path):
    """A result of an older version, which recorded no sizes and hashes of its files, is
    recognised but not replaced: a file a user edited there cannot be told from ours."""
    from pangeo_hpc.write.guard import check_folder, folder_kind
    from pangeo_hpc.write.outputs import write_json

    for old, summary in (
        (tmp_path / "old", {"versions": {"pangeo-hpc": "0.1.0"}}),  # before the marker
        (tmp_path / "marked", {"written_by": "pangeo-hpc 0.9", "outputs": {"d": "result.nc"}}),
    ):
        old.mkdir()
        (old / "summary.json").write_text(json.dumps(summary))
        (old / "result.nc").write_bytes(b"x")
        assert folder_kind(old) is None
        with pytest.raises(ValueError, match=r"holds a result of an older pangeo-hpc.*move"):
            check_folder(old, kind="result")
    new = tmp_path / "new"  # a summary of ours with no other file has nothing to record
    new.mkdir()
    write_json(new / "summary.json", {"outputs": {}})
    assert folder_kind(new) == "result" and check_folder(new, kind="result") == new
    old = tmp_path / "old"
    (old / "thesis.tex").write_text("mine")
    assert folder_kind(old) is None
    with pytest.raises(ValueError, match=r"did not write \('result.nc', 'summary.json'"):
        check_folder(old, kind="result")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match="is a file \\(or a link\\)"):
        check_folder(link, kind="result")


def test_a_missing_month_suggests_demo_data_only_for_demo_trees_and_quotes_it(
    demo_tree, tmp_path, capsys, monkeypatch
):
    """Real data never gets synthetic months mixed in; the suggestion runs as printed: the
    library's as Python (a call of generate), the command line's in a shell."""
    from pangeo_hpc.errors import DataNotFoundError
    from pangeo_hpc.io.layout import find_files

    monkeypatch.setattr(run, "_interruptible", lambda: None)
    real = tmp_path / "my era5 mirror"  # a space: the printed command must be quoted
    shutil.copytree(demo_tree / "2000" / "01", real / "2000" / "01")
    with pytest.raises(DataNotFoundError) as info:
        find_files(real, "sea_surface_temperature", "2000-01", "2000-02")
    assert "generate" not in str(info.value) and "2000-02" in str(info.value)

    demo = tmp_path / "my demo"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    r = subprocess.run(
        ["python", "-m", "pangeo_hpc.run", "demo-data", "--out", str(demo), "--end", "2000-01",
         "--resolution", "10"],
        capture_output=True, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    with pytest.raises(DataNotFoundError) as info:
        find_files(demo, "sea_surface_temperature", "2000-01", "2000-02")
    message = str(info.value)
    assert "demo-data" not in message and "python -m" not in message, message
    call = message[message.index("pangeo_hpc.demo.generate(") :]
    assert call.startswith(f"pangeo_hpc.demo.generate({str(demo)!r}, "), call
    argv = ["era5-sst-mean", "--data", str(demo), "--start", "2000-01", "--end", "2000-02"]
    assert run.main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    command = err.split("`")[1]
    assert command.startswith("python -m pangeo_hpc.run demo-data"), err
    assert f"--out '{demo}'" in command and "--start 2000-02 --end 2000-02" in command, command
    r = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    assert find_files(demo, "sea_surface_temperature", "2000-01", "2000-02")
    shutil.rmtree(demo / "2000" / "02")  # and the library's call, run in Python, does the same
    r = subprocess.run(
        [sys.executable, "-c", f"import pangeo_hpc.demo; {call}"],
        capture_output=True, text=True, cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert find_files(demo, "sea_surface_temperature", "2000-01", "2000-02")


# Calls that write, rename or remove; only the guarded helper may make them, but for
# writes into a folder the helper has just handed out (named here, with the reason).
WRITE_CALLS = {"replace", "rename", "rmtree", "move", "remove", "unlink", "mkdtemp",
               "mkstemp", "to_netcdf", "to_zarr", "savefig", "copyfile", "copytree",
               "delete"}  # fmt: skip
ALLOWED = {
    ("write/outputs.py", "*"): "the guarded helper itself",
    ("write/swap.py", "*"): "the guarded helper's swap and lock (called by atomic_dir only)",
    ("write/leftovers.py", "*"): "the guarded helper's own temporaries of dead writers",
    ("write/in_place.py", "*"): "the guarded helper filling a mount point (atomic_dir's)",
    ("write/s3_outputs.py", "*"): "the guarded S3 writer: its staging folder, its own run's "
    "objects, and (cleanup, retired runs) only objects that carry its mark",
    ("write/targets.py", "mkdtemp"): "the staging folder of one file PUT to S3 (output_file)",
    ("write/targets.py", "rmtree"): "that staging folder, which it made, after the PUT",
    ("batch/pipeline/results.py", "to_netcdf"): "into atomic_dir's temporary folder",
    ("write/icechunk_out.py", "to_zarr"): "into an Icechunk session (seen only once committed) "
    "of a repository of ours, or of a new one in atomic_dir's temporary folder",
    ("write/icechunk_out.py", "delete"): "the objects of a repository this run made under an "
    "S3 prefix that was empty when checked, whose first commit failed",
    ("write/zarr.py", "to_zarr"): "into atomic_dir's temporary folder",
    ("write/figures.py", "savefig"): "into the path batch gives: atomic_dir's temporary folder",
    ("clusters/diagnostics.py", "unlink"): "a NamedTemporaryFile it made for sbatch --test-only",
    ("recipes/trend.py", "rename"): "DataArray.rename, not a file",
    ("recipes/indices.py", "rename"): "DataArray.rename, not a file",
    ("recipes/units.py", "rename"): "DataArray.rename, not a file",
    ("recipes/vectors.py", "rename"): "DataArray.rename, not a file",
    ("recipes/regrid.py", "rename"): "DataArray.rename of the target grid's dims, not a file",
    ("batch/chains/chain.py", "rename"): "DataArray.rename of results and coordinates, not a file",
    ("batch/chains/results_of.py", "rename"): "DataArray.rename of results and dims, not a file",
    ("batch/incremental/states.py", "rename"): "DataArray.rename of a dimension, not a file",
    ("batch/pipeline/multi_run.py", "rename"): "DataArray.rename of a combined result",
    ("recipes/against.py", "rename"): "DataArray.rename of a combined result, not a file",
    ("recipes/align_datasets.py", "rename"): "DataArray.rename of dims and datasets, not a file",
    ("io/stores.py", "rename"): "Dataset.rename of a store's variables to the recipe's names",
}


def test_only_the_guarded_helper_renames_or_removes_files():
    package = ROOT / "pangeo_hpc"
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = str(path.relative_to(package))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = node.func.attr
                owner = node.func.value
                module = isinstance(owner, ast.Name) and owner.id in ("os", "shutil")
                if name in ("replace", "rename") and not module and len(node.args) != 1:
                    continue  # str.replace(old, new), not a file's
                if name in WRITE_CALLS and (rel, "*") not in ALLOWED and (rel, name) not in ALLOWED:
                    found.append(f"{rel}:{node.lineno} .{name}()")
    assert not found, "write through pangeo_hpc.write.outputs instead:\n" + "\n".join(found)
