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

#: the task of the cancellation test, on a worker thread of this process: it runs until the
#: test releases it
_RUNNING, _RELEASE = threading.Event(), threading.Event()


def _hold() -> None:
    _RUNNING.set()
    _RELEASE.wait()


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

        # a task that ends only when the test lets it: only the cancellation ends the wait
        slow = client.submit(_hold, pure=False)
        try:
            threading.Thread(target=lambda: _RUNNING.wait() and slow.cancel()).start()
            show_progress(slow)  # the bar alone would wait for ever
            assert slow.status == "cancelled"
            assert not _RELEASE.is_set()  # returned while the task still ran
        finally:
            _RELEASE.set()


def test_progress_counts_the_tasks_and_prints_a_line_per_ten_percent(capsys, monkeypatch):
    """A chain of 30 tasks and their end, on one thread, let through three at a time: every
    second time the progress line is updated, once the three before are done. So the
    progress is asked about twice at each tenth it passes (both answers alike), and the
    lines are known exactly: one per tenth passed (not one per answer), the last at 100 %
    with every task counted (also those done and forgotten by then); and no
    CancelledError logged when the cluster closes right after. Waits on events only:
    the machine's load changes nothing."""
    import dask
    from distributed import Client, LocalCluster

    monkeypatch.setattr(progress, "POLL", 0.02)
    tickets = _TICKETS[0] = threading.Semaphore(0)
    seen = {"updates": 0, "open": 0}
    update = ProgressLine.update

    def update_then_open(self, text, fraction=None, *, last=False):
        update(self, text, fraction, last=last)
        seen["updates"] += 1
        if last or seen["updates"] % 2 or seen["open"] >= 30:
            return
        seen["open"] += 3
        for _ in range(3):
            tickets.release()
        key = f"step-{seen['open'] - 1}"  # the last of the three; after the last, the end
        deadline = time.monotonic() + 120  # a failure, never a wait that ends the test
        while not (seen["future"].done() if seen["open"] == 30 else state(key) == "memory"):
            assert time.monotonic() < deadline, f"{key} never ran"
            time.sleep(0.01)

    def state(key: str) -> str | None:
        def of(dask_scheduler=None):
            ts = dask_scheduler.tasks.get(key)
            return None if ts is None else ts.state

        return seen["client"].run_on_scheduler(of)

    monkeypatch.setattr(ProgressLine, "update", update_then_open)
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
            last = None
            for i in range(30):
                last = dask.delayed(_step)(i, last, dask_key_name=f"step-{i}")
            future = client.compute(dask.delayed(str)(last, dask_key_name="end"))
            seen.update(client=client, future=future)
            show_progress(future)
            assert future.result() == "29"
    finally:
        scheduler_log.removeHandler(logged)
    lines = capsys.readouterr().out.splitlines()
    percents = [int(re.fullmatch(r"progress: +(\d+)% of 31 tasks, .+", x)[1]) for x in lines]
    # 3 k of 31 tasks done: 9 % (under the first tenth), 19, 29, 38, ... 87 %; then all
    assert percents == [19, 29, 38, 48, 58, 67, 77, 87, 100], lines
    assert not [r for r in logged.records if r.exc_info], logged.records


#: the gate of :func:`_step` (a task is sent pickled, by reference: this module's, in process)
_TICKETS: list[threading.Semaphore] = [threading.Semaphore(0)]


def _step(i: int, before: int | None) -> int:
    """A task of the chain: runs once the test gives it a ticket."""
    assert _TICKETS[0].acquire(timeout=120), "no ticket: the test's gate never opened"
    return i


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
