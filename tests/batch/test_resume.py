"""Resumed runs and runs that survive failures (issue 19), end to end: the real command line
(``python -m pangeo_hpc.run RECIPE --data TREE --out OUT``, a process of its own with its own
state cache) on real demo files, killed by SIGKILL, Ctrl-C, a lost worker or a Slurm time
limit, sharing a cache with another run, finding damaged entries, a full disk or a folder
others may write to; each checked through ``summary.json``'s ``reads`` and the answer.

A run must last long enough to be killed half way on two busy cores, whatever the speed of
the disk: the recipe's first step is a user function that says it works time step by time
step (so the chain still splits by file) and sleeps for each block it passes on (one block
per monthly file). The answers are compared with a run of the same reduction without the
pause, run whole (``--no-cache``): another code path, the same numbers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
import xarray as xr

from pangeo_hpc.batch.incremental.state_cache import StateCache
from tests.support.paths import ROOT

#: the environment variable that overrides the pause of SLOW_PY: a run after an interrupted
#: one goes at full speed (its states' keys stay the same: the step's code and options are
#: unchanged, and the pause changes no value)
PAUSE_VAR = "PANGEO_HPC_TEST_PAUSE"

#: the user step that makes every file's state take ``seconds``; pickled by value to the
#: workers with the task (it lives beside the recipe)
SLOW_PY = f'''\
import os
import time


def pause(da, *, seconds: float = 0.2):
    """Each block as it was, ``seconds`` (or ${PAUSE_VAR}) later."""
    seconds = float(os.environ.get("{PAUSE_VAR}", seconds))

    def nap(block):
        time.sleep(seconds)
        return block

    return da.map_blocks(nap)  # lazy


pause.step_by_step = True
'''

#: the period of most tests: 24 monthly files
START, END = "2000-01", "2001-12"
N_FILES = 24
#: the marker in the meta of a roll-up entry (the merged state of all pieces)
ROLLUP = "(all files merged)"


def _recipe(folder: Path, *, seconds: float | None, start: str = START, end: str = END) -> Path:
    """A recipe file: the time-mean SST map, after a pause of ``seconds`` per monthly file
    (``None``: no pause, the reference)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "slow.py").write_text(SLOW_PY)
    pause = "" if seconds is None else f"  - function: slow:pause\n    seconds: {seconds}\n"
    name = "fast-mean" if seconds is None else "slow-mean"
    path = folder / f"{name}.yaml"
    path.write_text(
        f"name: {name}\n"
        "dataset:\n"
        "  variable: sea_surface_temperature\n"
        f'  start: "{start}"\n'
        f'  end: "{end}"\n'
        "steps:\n"
        f"{pause}"
        "  - time_mean: {}\n"
    )
    return path


def _env(cache: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DASK_PANGEO_HPC__CACHE__FOLDER": str(cache),
        # runs into new folders read the states, never copy an earlier run's answer
        "DASK_PANGEO_HPC__CACHE__COPY_RESULTS": "false",
    }


def _args(recipe: Path, data: Path, out: Path, workers: int, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "pangeo_hpc.run", str(recipe), "--data", str(data),
        "--out", str(out), "--workers", str(workers), "--no-progress", *extra,
    ]  # fmt: skip


def _gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


class Runs:
    """CLI runs of one test, each the leader of a session of its own: whatever it leaves
    behind (the workers of a killed client) is killed by its session's id afterwards."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[str]] = []

    def start(
        self,
        recipe: Path,
        data: Path,
        out: Path,
        cache: Path,
        *extra: str,
        workers: int = 2,
        pause: float | None = None,
    ) -> subprocess.Popen[str]:
        """Start a run; ``pause`` (seconds) overrides the recipe's pause per file."""
        env = _env(cache) if pause is None else {**_env(cache), PAUSE_VAR: str(pause)}
        p = subprocess.Popen(
            _args(recipe, data, out, workers, *extra),
            cwd=recipe.parent,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.started.append(p)
        return p

    def run(
        self,
        recipe: Path,
        data: Path,
        out: Path,
        cache: Path,
        *extra: str,
        workers: int = 2,
        pause: float | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return self.finish(
            self.start(recipe, data, out, cache, *extra, workers=workers, pause=pause)
        )

    def finish(self, p: subprocess.Popen[str], timeout: float = 300) -> subprocess.CompletedProcess:
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_group(p)
            stdout, stderr = p.communicate()
            raise AssertionError(
                f"no end in {timeout} s\n{stdout[-3000:]}\n{stderr[-3000:]}"
            ) from None
        return subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)

    def kill_group(self, p: subprocess.Popen[str]) -> None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        for p in self.started:
            self.kill_group(p)
            if p.poll() is None:
                p.wait(timeout=30)
            for stream in (p.stdout, p.stderr):
                if stream is not None:
                    stream.close()


@pytest.fixture
def runs() -> Iterator[Runs]:
    r = Runs()
    try:
        yield r
    finally:
        r.close()


@pytest.fixture(scope="module")
def reference(demo_tree: Path, tmp_path_factory: pytest.TempPathFactory):
    """The time-mean of a period (no pause, run whole: ``--no-cache``): its ``result.nc``
    loaded and its ``summary.json`` (whose ``reads.bytes_read`` is a full run's), per period."""
    done: dict[tuple[str, str], tuple[xr.Dataset, dict[str, Any]]] = {}

    def get(start: str = START, end: str = END) -> tuple[xr.Dataset, dict[str, Any]]:
        if (start, end) not in done:
            folder = tmp_path_factory.mktemp("reference")
            recipe = _recipe(folder, seconds=None, start=start, end=end)
            out = folder / "out"
            r = Runs()
            try:
                run = r.run(recipe, demo_tree, out, folder / "cache", "--no-cache")
            finally:
                r.close()
            assert run.returncode == 0, run.stderr
            summary = json.loads((out / "summary.json").read_text())
            assert summary["reads"]["incremental"] is False
            with xr.open_dataset(out / "result.nc") as ds:
                done[start, end] = (ds.load(), summary)
        return done[start, end]

    return get


def _summary(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text())


def _same_answer(out: Path, expected: xr.Dataset) -> None:
    with xr.open_dataset(out / "result.nc") as got:
        xr.testing.assert_allclose(got.load(), expected, rtol=1e-6)


def _files(tree: Path, start: str = START, end: str = END) -> list[str]:
    """The period's input files, as the run names them."""
    first, last = int(start[:4]), int(end[:4])
    paths = [
        str(p)
        for year in range(first, last + 1)
        for p in sorted((tree / str(year)).glob("*/data/sea_surface_temperature.nc"))
    ]
    return [p for p in paths if start <= f"{p.split('/')[-4]}-{p.split('/')[-3]}" <= end]


def _npz(cache: Path) -> int:
    try:
        return sum(1 for p in cache.iterdir() if p.suffix == ".npz")
    except FileNotFoundError:
        return 0


def _wait_for_states(cache: Path, n: int, p: subprocess.Popen[str], timeout: float = 240) -> int:
    """Poll the cache folder until it holds ``n`` entries; the run must still be going."""
    deadline = time.monotonic() + timeout
    while (count := _npz(cache)) < n:
        if p.poll() is not None:
            raise AssertionError(f"the run ended (code {p.returncode}) with {count} states")
        assert time.monotonic() < deadline, f"{count} of {n} states in {timeout} s"
        time.sleep(0.05)
    return count


def _pieces(cache: Path) -> tuple[list[Any], list[Any]]:
    """The entries of per-file states and of roll-ups, each checked to load."""
    store = StateCache(cache)
    entries = store.entries()
    for e in entries:
        assert store.get(e.key) is not None, f"{e.path} does not load"
    rollups = [e for e in entries if e.meta["result"].endswith(ROLLUP)]
    return [e for e in entries if e not in rollups], rollups


def _no_parts(cache: Path) -> None:
    left = [p.name for p in cache.iterdir() if p.name.endswith(".tmp")]
    assert left == [], left


def _check_resumed(
    out: Path, saved: list[Any], files: list[str], full: dict[str, Any]
) -> dict[str, Any]:
    """A run after an interrupted one (``summary.json`` in ``out``): it reused exactly the
    files whose states were saved, read only the others, and no more bytes than they hold
    (``full``: the summary of a whole run)."""
    reads = _summary(out)["reads"]
    have = {f for e in saved for f in e.meta["files"]}
    assert have < set(files)
    rest, n = [f for f in files if f not in have], len(files)
    assert reads["incremental"] is True and reads["files"] == n
    assert reads["files_reused"] == len(have) and reads["files_read"] == len(rest), reads
    assert reads["files_reused"] + reads["files_read"] == reads["files"]
    full_bytes = full["reads"]["bytes_read"]
    assert 0 < reads["bytes_read"] < full_bytes * (len(rest) + 1) / n, (reads, full_bytes)
    assert reads["bytes_read"] <= 1.05 * sum(os.path.getsize(f) for f in rest)
    return reads


# -- killed runs resume --------------------------------------------------------------------


@pytest.fixture(params=["threads", "processes"])
def where(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A run in the client's threads (the default for so little to read) or in worker
    processes (pangeo-hpc.cluster.in-process-bytes 0)."""
    if request.param == "processes":
        monkeypatch.setenv("DASK_PANGEO_HPC__CLUSTER__IN_PROCESS_BYTES", "0")
    return request.param


@pytest.mark.slow
def test_a_client_killed_by_sigkill_resumes_from_the_states_it_saved(
    demo_tree, tmp_path, reference, runs, where
):
    expected, full = reference()
    recipe, cache = _recipe(tmp_path / "recipe", seconds=0.5), tmp_path / "cache"
    p = runs.start(recipe, demo_tree, tmp_path / "killed", cache)
    _wait_for_states(cache, N_FILES // 2, p)
    os.kill(p.pid, signal.SIGKILL)  # the client only; its workers are orphaned
    assert p.wait(timeout=30) == -signal.SIGKILL
    runs.kill_group(p)
    assert not (tmp_path / "killed").exists()  # no outputs of a killed run
    saved, rollups = _pieces(cache)  # each entry whole: written by one rename
    assert N_FILES // 2 <= len(saved) < N_FILES and rollups == []

    run = runs.run(recipe, demo_tree, tmp_path / "resumed", cache, pause=0)
    assert run.returncode == 0, run.stderr
    _check_resumed(tmp_path / "resumed", saved, _files(demo_tree), full)
    assert f"incremental: {len(saved)} of {N_FILES} files' states reused" in run.stdout
    _same_answer(tmp_path / "resumed", expected)


@pytest.mark.slow
def test_ctrl_c_exits_130_keeps_the_states_and_the_next_run_resumes(
    demo_tree, tmp_path, reference, runs, where
):
    expected, full = reference()
    recipe, cache = _recipe(tmp_path / "recipe", seconds=0.5), tmp_path / "cache"
    p = runs.start(recipe, demo_tree, tmp_path / "stopped", cache)
    before = _wait_for_states(cache, N_FILES // 2, p)
    os.kill(p.pid, signal.SIGINT)  # Ctrl-C: to the client only, as a terminal would not
    stopped = runs.finish(p, timeout=120)
    assert stopped.returncode == 130, stopped.stderr
    assert stopped.stderr.rstrip().endswith("interrupted") and "Traceback" not in stopped.stderr
    deadline = time.monotonic() + 30  # the cluster was closed: its workers end
    while not _gone(p.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _gone(p.pid), "workers left running after Ctrl-C"
    assert not (tmp_path / "stopped").exists()
    saved, rollups = _pieces(cache)
    assert before <= len(saved) < N_FILES and rollups == []
    _no_parts(cache)  # a write interrupted half way removed its temporary file

    run = runs.run(recipe, demo_tree, tmp_path / "resumed", cache, pause=0)
    assert run.returncode == 0, run.stderr
    _check_resumed(tmp_path / "resumed", saved, _files(demo_tree), full)
    _same_answer(tmp_path / "resumed", expected)


@pytest.mark.slow
def test_a_lost_worker_is_replaced_and_the_run_finishes_right(
    demo_tree, tmp_path, reference, runs, monkeypatch
):
    monkeypatch.setenv("DASK_PANGEO_HPC__CLUSTER__IN_PROCESS_BYTES", "0")  # one to kill
    expected, _ = reference()
    recipe, cache = _recipe(tmp_path / "recipe", seconds=0.5), tmp_path / "cache"
    p = runs.start(recipe, demo_tree, tmp_path / "out", cache, workers=2)
    _wait_for_states(cache, N_FILES // 3, p)
    workers = [
        c
        for c in psutil.Process(p.pid).children()
        if any("spawn_main" in part for part in c.cmdline())
    ]
    assert len(workers) == 2, [c.cmdline() for c in workers]
    workers[0].send_signal(signal.SIGKILL)  # its tasks are rerun, its nanny starts another
    assert p.poll() is None, "the run had ended before its worker was killed"
    run = runs.finish(p)
    assert run.returncode == 0, run.stderr
    assert not workers[0].is_running()
    assert "Restarting worker" in run.stderr  # distributed's nanny log (WARNING)
    reads = _summary(tmp_path / "out")["reads"]
    assert reads["incremental"] is True and reads["files_read"] == N_FILES, reads
    assert reads["states_saved"] == N_FILES
    _same_answer(tmp_path / "out", expected)

    again = runs.run(recipe, demo_tree, tmp_path / "again", cache)
    assert again.returncode == 0, again.stderr
    reads = _summary(tmp_path / "again")["reads"]
    assert reads["files_reused"] == N_FILES and reads["files_read"] == 0, reads
    assert reads["bytes_read"] == 0
    _same_answer(tmp_path / "again", expected)


#: the Slurm run: 40 monthly files of 3.5 s each on one worker, ~150 s in all
SLURM_END, SLURM_FILES, SLURM_PAUSE = "2003-04", 40, 3.5
SLURM_TEST = "test_a_run_ended_by_the_slurm_time_limit_resumes"


def _job_state(job: str) -> str:
    out = subprocess.run(
        ["scontrol", "show", "job", job], capture_output=True, text=True, check=True
    ).stdout
    return next(w.split("=", 1)[1] for w in out.split() if w.startswith("JobState="))


#: the states of a Slurm job that has not ended
JOB_GOING = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING")


@dataclass
class TimedJob:
    """The Slurm test's run, submitted with a time limit of one minute (Slurm's least).
    A thread follows its state (``scontrol show job``, every second) until it ends, and
    keeps the last one: slurmctld forgets an ended job after MinJobAge (300 s), which may
    pass before the test looks when the job was submitted early. ``started`` is set when
    it leaves PENDING (the node may be busy with other jobs: the time limit counts from
    there), ``ended`` when it ends."""

    job: str
    folder: Path
    recipe: Path
    state: str = field(default="", init=False)
    started: threading.Event = field(default_factory=threading.Event, init=False)
    ended: threading.Event = field(default_factory=threading.Event, init=False)

    def __post_init__(self) -> None:
        threading.Thread(target=self._follow, name=f"slurm job {self.job}", daemon=True).start()

    def _follow(self) -> None:
        try:
            while (state := _job_state(self.job)) in JOB_GOING:
                if state != "PENDING":
                    self.started.set()
                time.sleep(1)
        except (subprocess.CalledProcessError, StopIteration) as exc:
            state = f"unknown ({exc!r})"
        self.state = state
        self.started.set()
        self.ended.set()

    @property
    def cache(self) -> Path:
        return self.folder / "cache"

    @property
    def log(self) -> Path:
        return self.folder / "job.log"

    @property
    def out(self) -> Path:
        return self.folder / "timed-out"

    @classmethod
    def submit(cls, folder: Path, data: Path) -> TimedJob:
        recipe = _recipe(folder / "recipe", seconds=SLURM_PAUSE, end=SLURM_END)
        command = " ".join(_args(recipe, data, folder / "timed-out", 1))
        submitted = subprocess.run(
            ["sbatch", "--parsable", "--time=1", "--job-name=pangeo-resume",
             f"--output={folder / 'job.log'}", f"--chdir={recipe.parent}",
             "--wrap", f"exec {command}"],
            env=_env(folder / "cache"), capture_output=True, text=True, check=True,
        )  # fmt: skip
        return cls(submitted.stdout.strip().split(";")[0], folder, recipe)

    def cancel(self) -> None:
        subprocess.run(["scancel", self.job], check=False)


@pytest.fixture(scope="module", autouse=True)
def early_slurm_job(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TimedJob | None]:
    """The Slurm test's job, submitted as this module starts when that test is to run and
    Slurm answers: its minute of time limit (and the up to 30 s slurmctld takes to notice)
    passes while the other tests of the module run, instead of in the test. ``None``
    otherwise: the test then submits its job itself (after its ``slurm`` fixture)."""
    from pangeo_hpc.clusters.start import slurm_available

    wanted = any(
        item.module is request.module and getattr(item, "originalname", "") == SLURM_TEST
        for item in request.session.items
    )
    if not wanted or not slurm_available():
        yield None
        return
    job = TimedJob.submit(
        tmp_path_factory.mktemp("slurm-time-limit"), request.getfixturevalue("demo_tree")
    )
    try:
        yield job
    finally:
        job.cancel()


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.usefixtures("slurm")
def test_a_run_ended_by_the_slurm_time_limit_resumes(
    demo_tree, tmp_path, reference, runs, early_slurm_job
):
    timed = early_slurm_job or TimedJob.submit(tmp_path, demo_tree)
    try:
        # the reference while the job runs
        expected, full = reference(START, SLURM_END)
        # pending while the node runs other jobs; then 60 s of time limit, checked every
        # 30 s or so
        assert timed.started.wait(600), f"job {timed.job} still pending after 600 s"
        assert timed.ended.wait(300), f"job {timed.job} still going 300 s after it started"
    finally:
        timed.cancel()
    assert timed.state == "TIMEOUT", f"{timed.state}\n{timed.log.read_text()}"
    assert not timed.out.exists()
    saved, rollups = _pieces(timed.cache)
    assert 0 < len(saved) < SLURM_FILES and rollups == [], timed.log.read_text()

    resumed = tmp_path / "resumed"
    run = runs.run(timed.recipe, demo_tree, resumed, timed.cache, workers=2, pause=0)
    assert run.returncode == 0, run.stderr
    _check_resumed(resumed, saved, _files(demo_tree, START, SLURM_END), full)
    _same_answer(resumed, expected)


# -- reliability of the cache ---------------------------------------------------------------


@pytest.mark.slow
def test_two_runs_at_once_share_one_cache(demo_tree, tmp_path, reference, runs):
    expected, _ = reference()
    recipe, cache = _recipe(tmp_path / "recipe", seconds=0.2), tmp_path / "cache"
    both = [runs.start(recipe, demo_tree, tmp_path / f"out{i}", cache) for i in (1, 2)]
    for i, p in enumerate(both, start=1):
        run = runs.finish(p)
        assert run.returncode == 0, run.stderr
        assert "warning" not in run.stderr.lower(), run.stderr
        reads = _summary(tmp_path / f"out{i}")["reads"]
        assert reads["files_reused"] + reads["files_read"] == N_FILES, reads
        _same_answer(tmp_path / f"out{i}", expected)
    saved, rollups = _pieces(cache)  # every entry loads
    assert len(saved) == N_FILES and len(rollups) == 1
    _no_parts(cache)


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    path.write_bytes(os.urandom(len(data)) if how == "random" else data[: len(data) // 2])


def _warned(stderr: str, path: Path) -> None:
    lines = [line for line in stderr.splitlines() if str(path) in line]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("warning: the cached state") and "is damaged" in lines[0]
    assert "rebuilt" in lines[0]


@pytest.mark.slow
def test_damaged_entries_are_ignored_with_a_warning_and_rebuilt(
    demo_tree, tmp_path, reference, runs
):
    expected, _ = reference()
    recipe, cache = _recipe(tmp_path / "recipe", seconds=0.1), tmp_path / "cache"
    first = runs.run(recipe, demo_tree, tmp_path / "first", cache)
    assert first.returncode == 0, first.stderr
    saved, (rollup,) = _pieces(cache)
    assert len(saved) == N_FILES and all(len(e.meta["files"]) == 1 for e in saved)
    # two per-file states, one random bytes, one cut in half; and the roll-up (while it
    # holds every file, the run reads no per-file state: damaged ones would go unseen)
    _damage(saved[3].path, "random")
    _damage(saved[17].path, "truncated")
    _damage(rollup.path, "truncated")

    run = runs.run(recipe, demo_tree, tmp_path / "second", cache)
    assert run.returncode == 0, run.stderr
    for path in (saved[3].path, saved[17].path, rollup.path):
        _warned(run.stderr, path)
    assert "pickle.load" not in run.stderr  # NumPy's advice for random bytes is not passed on
    reads = _summary(tmp_path / "second")["reads"]
    assert reads["files_read"] == 2 and reads["files_reused"] == N_FILES - 2, reads
    _same_answer(tmp_path / "second", expected)
    again, (rebuilt,) = _pieces(cache)  # all whole again
    assert {e.key for e in again} == {e.key for e in saved} and rebuilt.key == rollup.key

    # the roll-up alone, random bytes: the per-file states give the answer, nothing is read
    _damage(rebuilt.path, "random")
    run = runs.run(recipe, demo_tree, tmp_path / "third", cache)
    assert run.returncode == 0, run.stderr
    _warned(run.stderr, rebuilt.path)
    reads = _summary(tmp_path / "third")["reads"]
    assert reads["files_read"] == 0 and reads["files_reused"] == N_FILES, reads
    _same_answer(tmp_path / "third", expected)
    assert len(_pieces(cache)[1]) == 1  # the roll-up rebuilt


def _root_only(what: str) -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{what} needs root, and CI=true: run the tests as root")
        pytest.skip(f"{what} needs root")


@pytest.mark.slow
def test_a_full_disk_under_the_cache_stops_caching_not_the_run(
    demo_tree, tmp_path, reference, runs
):
    _root_only("mounting a 2 MB tmpfs as the cache's disk")
    expected, _ = reference()
    recipe, disk = _recipe(tmp_path / "recipe", seconds=0.1), tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], check=True)
    try:
        cache = disk / "states"  # ~10 of the 24 states (200 kB each) fit
        run = runs.run(recipe, demo_tree, tmp_path / "out", cache)
        assert run.returncode == 0, run.stderr
        reads = _summary(tmp_path / "out")["reads"]
        assert "no space left on device" in reads["caching"], reads
        assert 0 < reads["states_saved"] < N_FILES and reads["files_read"] == N_FILES
        lines = [line for line in run.stderr.splitlines() if "no space left" in line]
        assert len(lines) == 1 and lines[0].startswith("warning: state cache: "), run.stderr
        assert str(cache) in lines[0]
        _same_answer(tmp_path / "out", expected)
        saved, rollups = _pieces(cache)  # what was stored is whole
        assert len(saved) == reads["states_saved"] and rollups == []
        _no_parts(cache)
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_cache_folder_others_can_write_is_refused_before_any_cluster(demo_tree, tmp_path, runs):
    recipe, cache = _recipe(tmp_path / "recipe", seconds=0.1), tmp_path / "shared"
    cache.mkdir()
    cache.chmod(0o777)
    run = runs.run(recipe, demo_tree, tmp_path / "out", cache)
    assert run.returncode == 2, run.stderr
    (line,) = run.stderr.splitlines()
    assert line.startswith("error: ") and str(cache) in line and f"chmod 700 {cache}" in line
    assert "cluster:" not in run.stdout  # refused before a cluster started
    assert list(cache.iterdir()) == [] and not (tmp_path / "out").exists()
