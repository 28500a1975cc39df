"""Two runs into one folder, Ctrl-C in the middle of the swap, a writer killed on the way:
``atomic_dir`` leaves the old result or the new one, whole, and nothing behind.

The writers here are other processes (``subprocess``: a fresh interpreter each, as two
runs of ``python -m pangeo_hpc.run`` would be); they write a small marked result of their
own letter (``result.nc`` of one letter repeated, and a ``summary.json`` naming it), so
that a mixed or partial folder shows at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pangeo_hpc.write.outputs import atomic_dir, write_json
from pangeo_hpc.write.records import file_records
from tests.support.paths import ROOT

#: bytes of a result: big enough that writing it takes a moment
SIZE = 200_000

#: a result of one letter, written through atomic_dir (the writers' and the tests' own)
WRITE = """
import json, os, sys
from pathlib import Path
from pangeo_hpc.write.records import file_records
from pangeo_hpc.write.outputs import atomic_dir, write_json

def write(target, label, size, hold=None):
    with atomic_dir(Path(target)) as tmp:
        (tmp / "result.nc").write_bytes(label.encode() * size)
        doc = {"outputs": {"data": "result.nc"}, "label": label}
        doc["files"] = file_records(tmp, ["result.nc"])
        write_json(tmp / "summary.json", doc)
        if hold is not None:
            hold(tmp)
"""

WRITER = (
    WRITE
    + """
target, label, n, how = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if how == "renames":  # a file system that cannot exchange two folders in one rename
    import pangeo_hpc.write.swap as swap
    swap._renameat2 = None
print("ready", flush=True)
sys.stdin.readline()  # both writers start together
ok, errors = 0, []
for _ in range(n):
    try:
        write(target, label, int(sys.argv[5]))
        ok += 1
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
print(json.dumps({"ok": ok, "errors": errors[:5], "failed": len(errors)}))
"""
)

READER = """
import json, os, sys
os.nice(10)  # the writers first: on few cores a busy reader would keep them apart
target, stop, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = {"whole": 0, "missing": 0, "mixed": 0, "retired": 0, "labels": []}
first = True
while first or not os.path.exists(stop):
    try:
        fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        seen["missing"] += 1
        continue
    try:
        with open("summary.json", opener=lambda p, f: os.open(p, f, dir_fd=fd)) as f:
            label = json.load(f)["label"]
        with open("result.nc", "rb", opener=lambda p, f: os.open(p, f, dir_fd=fd)) as f:
            data = f.read()
    except FileNotFoundError:  # replaced while read: its files are being removed
        seen["retired"] += 1
        continue
    finally:
        os.close(fd)
    if data == label.encode() * size:
        seen["whole"] += 1
        if label not in seen["labels"]:
            seen["labels"].append(label)
    else:
        seen["mixed"] += 1
    if first:
        print("reading", flush=True)
        first = False
print(json.dumps(seen))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _write(target: Path, label: str, size: int = SIZE) -> None:
    with atomic_dir(target) as tmp:
        (tmp / "result.nc").write_bytes(label.encode() * size)
        doc = {"outputs": {"data": "result.nc"}, "label": label}
        write_json(tmp / "summary.json", doc | {"files": file_records(tmp, ["result.nc"])})


def _whole(target: Path, size: int = SIZE) -> str:
    """The letter of the result at ``target``, checked to be whole."""
    label = json.loads((target / "summary.json").read_text())["label"]
    assert (target / "result.nc").read_bytes() == label.encode() * size, "a mixed result"
    assert sorted(p.name for p in target.iterdir()) == ["result.nc", "summary.json"]
    return label


@pytest.mark.slow
@pytest.mark.parametrize("how", ["exchange", "renames"])
def test_two_processes_writing_one_target_each_leave_a_whole_result(tmp_path, how):
    """100 writes each of A and B into one folder while a third process reads it: every
    write succeeds (no false refusal), the target is always A or B whole, nothing is left
    beside it. With renameat2(RENAME_EXCHANGE) a reader never finds the target missing;
    with two renames (NFS, Lustre) it may, for a moment, but never finds it mixed."""
    n, size = 100, 20_000
    target = tmp_path / "res"
    _write(target, "Z", size)
    stop = tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(target), str(stop), str(size)],
        stdout=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip
    assert reader.stdout is not None and reader.stdout.readline() == "reading\n"
    writers = []
    for label in "AB":
        argv = [sys.executable, "-c", WRITER, str(target), label, str(n), how, str(size)]
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        writers.append(subprocess.Popen(argv, text=True, env=_env(), **pipes))
    for w in writers:  # both imported and waiting: then both go at once
        assert w.stdout is not None and w.stdout.readline() == "ready\n"
    for w in writers:
        assert w.stdin is not None
        w.stdin.write("go\n")
        w.stdin.flush()
    outcomes = []
    for w in writers:
        out, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
        outcomes.append(json.loads(out))
    stop.touch()
    seen = json.loads(reader.communicate(timeout=60)[0])
    assert [o["failed"] for o in outcomes] == [0, 0], outcomes
    assert [o["ok"] for o in outcomes] == [n, n]
    assert _whole(target, size) in "AB"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res", "stop"], "left behind"
    assert seen["mixed"] == 0, seen
    assert seen["whole"] > 0, seen
    if how == "exchange":
        assert seen["missing"] == 0, seen


def _self_signal(signum: int, calls: list[str], name: str):
    """A wrapper of a rename that sends ``signum`` to this process after its first call."""

    def wrap(real):
        def call(*args, **kwargs):
            result = real(*args, **kwargs)
            if not calls:
                calls.append(name)
                os.kill(os.getpid(), signum)
            return result

        return call

    return wrap


def _rename_hooks(monkeypatch: pytest.MonkeyPatch, how: str, signum: int) -> list[str]:
    """Send ``signum`` from inside the swap: after the exchange, or after the first of the
    two renames (the old result moved away, the new one not yet in place)."""
    calls: list[str] = []
    wrap = _self_signal(signum, calls, how)
    import pangeo_hpc.write.swap as swap

    if how == "exchange":
        assert swap._renameat2 is not None, "no renameat2 here"
        monkeypatch.setattr(swap, "exchange", wrap(swap.exchange))
    else:
        monkeypatch.setattr(swap, "_renameat2", None)
        real_rename, real_replace = os.rename, os.replace

        def moved_away(real):
            def call(src, dst, *a, **kw):  # the first rename of the existing target
                if Path(src).name == "res":
                    return wrap(real)(src, dst, *a, **kw)
                return real(src, dst, *a, **kw)

            return call

        monkeypatch.setattr(os, "rename", moved_away(real_rename))
        monkeypatch.setattr(os, "replace", moved_away(real_replace))
    return calls


@pytest.mark.parametrize("how", ["exchange", "renames"])
def test_ctrl_c_inside_the_swap_waits_until_the_result_is_in_place(tmp_path, monkeypatch, how):
    target = tmp_path / "res"
    _write(target, "A")
    calls = _rename_hooks(monkeypatch, how, signal.SIGINT)
    # Ctrl-C as in a terminal, also where the suite runs as a background job (whose shell
    # starts it with SIGINT ignored, and Python then installs no KeyboardInterrupt for it)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            _write(target, "B")
    finally:
        signal.signal(signal.SIGINT, before)
    monkeypatch.undo()
    assert calls == [how], "the signal was not sent inside the swap"
    assert _whole(target) == "B"  # the swap went through, then Ctrl-C was raised
    assert [p.name for p in tmp_path.iterdir()] == ["res"], "left behind"
    _write(target, "C")  # and the next write is not blocked by anything
    assert _whole(target) == "C"


SIGTERMED = (
    WRITE
    + """
import signal
how, target = sys.argv[1], Path(sys.argv[2])
from tests.write.test_atomic_writes import _rename_hooks  # PYTHONPATH: the repository

class Patch:  # pytest's monkeypatch, enough of it
    def setattr(self, owner, name, value):
        setattr(owner, name, value)

_rename_hooks(Patch(), how, signal.SIGTERM)
write(target, "B", int(sys.argv[3]))
print("not terminated")
"""
)


@pytest.mark.parametrize("how", ["exchange", "renames"])
def test_sigterm_inside_the_swap_ends_the_process_after_it(tmp_path, how):
    """SIGTERM's default action (the end of the process) waits for the swap, then happens."""
    target = tmp_path / "res"
    _write(target, "A")
    argv = [sys.executable, "-c", SIGTERMED, how, str(target), str(SIZE)]
    r = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=120)
    assert r.returncode == -signal.SIGTERM, (r.returncode, r.stdout, r.stderr)
    assert _whole(target) == "B"
    # killed after the swap, before removing the old result (under its unique name)
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "res")
    old = ".res.tmp-" if how == "exchange" else ".res.old-"
    assert [n.startswith(old) for n in left] == [True], left
    _write(target, "C")  # removed by the next write: its writer is dead
    assert [p.name for p in tmp_path.iterdir()] == ["res"], "left behind"


HELD = (
    WRITE
    + """
def hold(tmp):
    print(tmp, flush=True)
    sys.stdin.readline()  # until the test says go on (or kills this process)

write(sys.argv[1], sys.argv[2], int(sys.argv[3]), hold)
"""
)


def _held_writer(target: Path, label: str) -> tuple[subprocess.Popen, Path]:
    """A writer stopped inside atomic_dir, its temporary folder written: (process, folder)."""
    p = subprocess.Popen(
        [sys.executable, "-c", HELD, str(target), label, str(SIZE)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip
    assert p.stdout is not None
    return p, Path(p.stdout.readline().strip())


def test_a_killed_writers_temporary_folder_is_removed_by_the_next_write(tmp_path):
    target = tmp_path / "res"
    killed, left = _held_writer(target, "K")
    assert left.parent == tmp_path and (left / "result.nc").is_file()
    killed.kill()
    killed.wait()
    alive, writing = _held_writer(tmp_path / "other", "L")  # another writer, still at work
    _write(target, "A")
    assert not left.exists(), "a dead writer's temporary folder was kept"
    assert (writing / "result.nc").is_file(), "a live writer's temporary folder was removed"
    assert alive.stdin is not None
    alive.stdin.write("go on\n")
    alive.stdin.close()
    assert alive.wait() == 0
    assert _whole(target) == "A" and _whole(tmp_path / "other") == "L"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "res"]


def test_only_our_own_leftovers_of_dead_writers_on_this_host_are_removed(tmp_path):
    from pangeo_hpc.write.leftovers import HOST, lock_name, remove_stale

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    dead = int(done.stdout)  # a process that has ended
    other_host = "0" * 8 if HOST != "0" * 8 else "1" * 8
    kept = {
        f".res.tmp-{other_host}-{dead}-0123abcd": "dir",  # its process may run there
        f".res.tmp-{HOST}-{os.getpid()}-0123abcd": "dir",  # alive: this process
        f".res.tmp-{HOST}-{dead}-0123abcd.bak": "dir",  # not quite our name
        f".res.tmp-{HOST}-{dead}-0123abce": "file",  # a file, not our folder
        f".res.tmp-{HOST}-0-0123abcd": "dir",  # pid 0 is no process: never judged dead
        ".res.tmp-notes": "dir",  # a user's
        "res.tmp-x": "dir",
        ".notes.pangeo-hpc-lock": "not empty",  # a lock file holds nothing
    }
    removed = {f".res.tmp-{HOST}-{dead}-0123abcd", f".res.old-{HOST}-{dead}-4567cdef"}
    for name, what in kept.items():
        if what == "dir":
            (tmp_path / name).mkdir()
            (tmp_path / name / "result.nc").write_bytes(b"x")
        else:
            (tmp_path / name).write_text(what)
    for name in removed:
        (tmp_path / name).mkdir()
        (tmp_path / name / "result.nc").write_bytes(b"x")
    (tmp_path / ".link.tmp-x").symlink_to(tmp_path / f".res.tmp-{other_host}-{dead}-0123abcd")
    stale_lock = lock_name(tmp_path / "gone")
    stale_lock.touch()  # a writer killed while it held the lock
    found = remove_stale(tmp_path)
    assert sorted(p.name for p in found) == sorted([*removed, stale_lock.name])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*kept, ".link.tmp-x"])


def test_a_file_system_without_flock_writes_unlocked_with_one_warning(tmp_path, monkeypatch):
    import errno

    import pangeo_hpc.write.swap as swap

    def no_flock(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(swap.fcntl, "flock", no_flock)
    monkeypatch.setattr(swap, "_warned", [])
    with pytest.warns(swap.LockWarning, match="no flock") as warned:
        for label in "AB":
            _write(tmp_path / "res", label)
    assert len(warned) == 1
    assert _whole(tmp_path / "res") == "B"
    assert [p.name for p in tmp_path.iterdir()] == ["res"]


def test_a_write_from_another_thread_works(tmp_path):
    """Signals are held in the main thread only (Python's handlers run there)."""
    errors: list[BaseException] = []

    def write() -> None:
        try:
            _write(tmp_path / "res", "T")
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=write)
    t.start()
    t.join()
    assert errors == []
    assert _whole(tmp_path / "res") == "T"


def test_cache_clear_removes_what_killed_runs_left_in_the_results_folder(
    tmp_path, monkeypatch, capsys
):
    from pangeo_hpc.cli import main as cli

    monkeypatch.setattr(cli, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)  # output.root: results, where `run RECIPE` writes
    killed, left = _held_writer(tmp_path / "results" / "era5-sst-mean", "K")
    killed.kill()
    killed.wait()
    (tmp_path / "results" / ".notes.tmp-mine").mkdir()  # a user's: not ours
    assert cli.main(["cache", "clear"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "cache: removed 1 temporary of killed runs in results", out
    assert not left.exists()
    assert [p.name for p in (tmp_path / "results").iterdir()] == [".notes.tmp-mine"]


def test_the_default_result_folder_stays_inside_results(tmp_path):
    """A recipe built in Python skips the YAML's check: the path is checked anyway."""
    from pangeo_hpc.write.guard import folder_in

    root = tmp_path / "results"
    root.mkdir()
    assert folder_in(root, "era5-sst-mean", what="name") == root / "era5-sst-mean"
    for bad in ("../x", "/abs/path", "x\ny", ".hidden", "a/b", "..", "", "x" * 101):
        with pytest.raises(ValueError, match="is not a label: use letters, digits"):
            folder_in(root, bad, what="name")
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(ValueError, match="leads out of"):
        folder_in(root, "link", what="name")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "scratch")  # results on scratch: fine
    assert folder_in(tmp_path / "linked", "ok", what="name") == tmp_path / "linked" / "ok"
