"""Progress lines: a computation's tasks, a copy's bytes, steps and counts, drawn by one
ProgressLine; progress never outlives its computation (a cancelled future ends the wait)."""

from __future__ import annotations

import io
import logging
import re
import threading
import time

from pangeo_hpc.cli import progress
from pangeo_hpc.cli.progress import ProgressLine, byte_progress, show_progress, step_progress


def test_progress_returns_when_the_future_is_cancelled(capsys):
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        done = client.submit(sum, [1, 2])
        show_progress(done)
        assert done.result() == 3
        assert "progress: 100%" in capsys.readouterr().out

        slow = client.submit(time.sleep, 6)
        threading.Timer(0.5, slow.cancel).start()
        t0 = time.perf_counter()
        show_progress(slow)  # the bar alone would wait for ever
        assert slow.status == "cancelled"
        assert time.perf_counter() - t0 < 4


def test_progress_counts_the_tasks_and_prints_a_line_per_ten_percent(capsys, monkeypatch):
    """30 naps of 0.1 s, each passed on to a task of its own, and their count, on one
    thread, asked about every 0.1 s: one line per tenth passed (not one per answer), the
    last at 100 % with every task counted (also the naps done and forgotten by then); and
    no CancelledError logged when the cluster closes right after."""
    import dask
    from distributed import Client, LocalCluster

    monkeypatch.setattr(progress, "POLL", 0.1)
    logged = _Records()
    scheduler_log = logging.getLogger("distributed.scheduler")
    scheduler_log.addHandler(logged)
    try:
        with (
            LocalCluster(
                n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
            ) as cluster,
            Client(cluster) as client,
        ):
            naps = [dask.delayed(time.sleep)(0.1, dask_key_name=f"nap-{i}") for i in range(30)]
            passed = [
                dask.delayed(str)(nap, dask_key_name=f"pass-{i}") for i, nap in enumerate(naps)
            ]
            future = client.compute(dask.delayed(len)(passed, dask_key_name="count"))
            show_progress(future)
            assert future.result() == 30
    finally:
        scheduler_log.removeHandler(logged)
    lines = capsys.readouterr().out.splitlines()
    percents = [int(re.fullmatch(r"progress: +(\d+)% of 61 tasks, .+", x)[1]) for x in lines]
    assert percents[-1] == 100 and len(percents) >= 4, lines
    tenths = [p // 10 for p in percents]
    assert tenths == sorted(set(tenths)), lines
    assert not [r for r in logged.records if r.exc_info], logged.records


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_in_a_log_a_line_per_step_and_the_last():
    out = io.StringIO()
    line = ProgressLine(out)
    for done in (0, 5, 37, 38, 99, 100):
        line.update(f"{done}/100", done / 100)
    line.update("all", 1.0, last=True)
    assert out.getvalue().splitlines() == ["37/100", "99/100", "100/100", "all"]


def test_on_a_terminal_one_line_redrawn(monkeypatch):
    monkeypatch.setattr(progress, "REDRAW", 0.0)
    out = _Terminal()
    line = ProgressLine(out)
    line.update("long line", 0.5)
    line.update("short", 0.6)
    line.update("done", 1.0, last=True)
    line.end()  # nothing left to end
    assert out.getvalue() == "\rlong line\033[K\rshort\033[K\rdone\033[K\n"
    out = _Terminal()
    line = ProgressLine(out)
    line.update("12 objects")
    line.end(clear=True)
    assert out.getvalue() == "\r12 objects\033[K\r\033[K"


def test_without_a_total_a_line_every_so_often():
    out = io.StringIO()
    line = ProgressLine(out, every=3600)
    line.update("1 object")
    assert out.getvalue() == ""
    line = ProgressLine(out, every=0)
    line.update("2 objects")
    assert out.getvalue() == "2 objects\n"


def test_a_copy_ends_with_its_last_file_even_when_bytes_failed(capsys):
    show = byte_progress("warmup")
    for args in ((0, 100, 0, 4), (30, 100, 1, 4), (60, 100, 2, 4), (60, 100, 3, 4)):
        show(*args)
    show(60, 100, 4, 4)  # the last file failed: its bytes never came
    lines = capsys.readouterr().out.splitlines()
    assert [x.split(" GB")[0] for x in lines] == [
        "warmup: 1/4 files, 0.00/0.00",
        "warmup: 2/4 files, 0.00/0.00",
        "warmup: 4/4 files, 0.00/0.00",
    ]
    show = step_progress("demo-data", "months written")
    for done in range(25):
        show(done, 24)
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "demo-data: 24/24 months written" and 9 <= len(lines) <= 11, lines
