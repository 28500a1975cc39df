"""Progress of a Dask computation or of a copy: a bar on a terminal, a few plain lines in batch
logs and notebooks."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from dask.utils import format_time
from distributed.diagnostics.progressbar import TextProgressBar


class LogProgress(TextProgressBar):
    """One line per ``step`` percent, for job logs where a redrawn bar is unreadable."""

    def __init__(self, keys: Any, *, step: int = 10, **kwargs: Any) -> None:
        self._step = step
        self._next = step
        super().__init__(keys, **kwargs)

    def _draw_bar(self, remaining: int, all: int, **kwargs: Any) -> None:
        percent = int(100 * (1 - remaining / all)) if all else 100
        if percent >= self._next:
            print(
                f"progress: {percent:3d}% of {all} tasks, {format_time(self.elapsed)}", flush=True
            )
            self._next = (percent // self._step + 1) * self._step

    def _draw_stop(self, **kwargs: Any) -> None:
        pass


def show_progress(future: Any) -> None:
    """Block until ``future`` is done (finished, failed or cancelled), showing its progress
    on stdout. The bar runs beside the wait: it alone would wait forever for a future the
    scheduler cancelled (e.g. "lost dependencies")."""
    from distributed import wait

    bar = threading.Thread(target=_draw, args=(future,), daemon=True, name="progress")
    bar.start()
    try:
        wait(future)
    except Exception:  # cancelled: future.result() tells the caller why
        pass
    bar.join(timeout=1)  # its last line, if it has one to draw


def _draw(future: Any) -> None:
    if sys.stdout.isatty():
        from distributed import progress

        progress(future)
        print()
    else:
        LogProgress([future])


class _FeedCancelled(logging.Filter):
    """Drop the scheduler's log of its progress feed being cancelled at shutdown.

    The feed sleeps between updates; when the cluster closes right after a computation,
    the sleep is cancelled and ``distributed`` logs a CancelledError traceback that means
    nothing to the user.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[0] if record.exc_info else None
        return not (exc is asyncio.CancelledError and record.name == "distributed.scheduler")


_FILTER = _FeedCancelled()
logging.getLogger("distributed.scheduler").addFilter(_FILTER)


def byte_progress(what: str) -> Callable[[int, int, int, int], None]:
    """A ``progress(bytes_done, bytes_total, files_done, files_total)`` callback that prints.

    On a terminal one line is redrawn; elsewhere (batch logs, notebooks) a line is printed
    every 10 % and at the end. For :func:`pangeo_hpc.storage.warmup.warmup` and ``stage``.
    """
    tty = sys.stdout.isatty()
    state = {"next": 10, "t0": time.perf_counter()}

    def show(done: int, total: int, files: int, nfiles: int) -> None:
        pct = 100 * done / total if total else 100.0
        rate = done / 1e6 / max(time.perf_counter() - state["t0"], 1e-9)
        line = (
            f"{what}: {files}/{nfiles} files, {done / 1e9:.2f}/{total / 1e9:.2f} GB, "
            f"{rate:.0f} MB/s"
        )
        if tty:
            print("\r" + line, end="" if files < nfiles else "\n", flush=True)
        elif pct >= state["next"] or files == nfiles:
            print(line, flush=True)
            state["next"] = (int(pct) // 10 + 1) * 10

    return show
