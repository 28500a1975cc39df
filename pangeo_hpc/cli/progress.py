"""Progress of a Dask computation, a copy, a list of steps or a count: one line, drawn by
:class:`ProgressLine` for all of them.

On a terminal the line is redrawn in place; in batch logs and notebooks (not a terminal) a
plain line is printed at every ``step`` percent and at the end, or every ``every`` seconds
when there is no total (an object count).

A computation's progress uses public API only: the future's done callback ends the wait
(also when the scheduler cancels it), and :meth:`distributed.Client.run_on_scheduler` asks
the scheduler how many of the future's tasks are left, from the task states its docs
describe (``Scheduler.tasks``, ``TaskState.state``, ``.dependencies``, ``.group``). Unlike
distributed's progress bar it keeps no feed open on the scheduler, so nothing is left to
cancel (and to log a ``CancelledError`` traceback) when the cluster closes right after.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

#: seconds between two redraws on a terminal
REDRAW = 0.1
#: least seconds between two questions to the scheduler
POLL = 0.5


class ProgressLine:
    """One progress line on ``stream`` (default stdout).

    Parameters
    ----------
    stream : file, optional
        Where the line goes; redrawn in place when it is a terminal.
    step : int
        Not a terminal: a line each time the fraction done passes a multiple of ``step``
        percent, and the last one.
    every : float, optional
        Without a fraction: seconds between lines (default 0.1 on a terminal, else 10).

    Examples
    --------
    >>> import sys
    >>> line = ProgressLine(sys.stdout, step=50)
    >>> for done in range(1, 5):
    ...     line.update(f"{done}/4 files", done / 4, last=done == 4)
    2/4 files
    4/4 files
    >>> line.end()
    """

    def __init__(
        self, stream: TextIO | None = None, *, step: int = 10, every: float | None = None
    ) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.tty = self.stream.isatty()
        self.step = step
        self.every = every if every is not None else (REDRAW if self.tty else 10.0)
        self.t0 = self._drawn = time.perf_counter()
        self._next = step
        self._open = False  # a redrawn line waits for its end

    @property
    def elapsed(self) -> float:
        """Seconds since the line was made."""
        return time.perf_counter() - self.t0

    def update(self, text: str, fraction: float | None = None, *, last: bool = False) -> None:
        """Show ``text``, ``fraction`` of the way (None: no total), or as the ``last`` line.

        Parameters
        ----------
        text : str
            The line.
        fraction : float, optional
            How far (0 to 1), or ``None``.
        last : bool, optional
            The final line (always shown).

        Examples
        --------
        >>> import sys
        >>> line = ProgressLine(sys.stdout, step=50)
        >>> line.update("1/4 files", 0.25)
        >>> line.update("2/4 files", 0.5)
        2/4 files
        """
        now = time.perf_counter()
        if self.tty:
            if last or now - self._drawn >= REDRAW:
                self._write("\r" + text + "\033[K" + ("\n" if last else ""))
                self._open, self._drawn = not last, now
            return
        if fraction is None:
            due = last or now - self._drawn >= self.every
        else:
            percent = 100 * fraction
            due = last or percent >= self._next
            if due:
                self._next = (int(percent) // self.step + 1) * self.step
        if due:
            self._write(text + "\n")
            self._drawn = now

    def end(self, *, clear: bool = False) -> None:
        """End a redrawn line: keep it (a newline), or ``clear`` it for what follows.

        Parameters
        ----------
        clear : bool, optional
            Clear the line instead of keeping it.

        Examples
        --------
        >>> import sys
        >>> line = ProgressLine(sys.stdout)
        >>> line.update("4/4 files", 1.0, last=True)
        4/4 files
        >>> line.end(clear=True)
        """
        if self._open:
            self._write("\r\033[K" if clear else "\n")
            self._open = False

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def show_progress(future: Any) -> None:
    """Block until ``future`` is done (finished, failed or cancelled), showing on stdout how
    many of its tasks are done: ``progress:  40% of 1234 tasks, 12.3s``. A cancelled
    future (e.g. "lost dependencies") ends the wait; ``future.result()`` tells the caller
    why.

    Parameters
    ----------
    future : distributed.Future
        A Dask future of the client in use.

    Examples
    --------
    >>> future = client.compute(result.to_zarr("out.zarr", compute=False))  # doctest: +SKIP
    >>> show_progress(future)  # progress:  40% of 1234 tasks, 12.3s  # doctest: +SKIP
    """
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    count = _task_counter()  # one function, so that it is sent to the scheduler once
    line = ProgressLine()
    total = 0

    def text(left: int) -> str:
        percent = int(100 * (1 - left / total)) if total else 100
        tasks = f"{total} tasks" if total else "the tasks"
        from dask.utils import format_time

        return f"progress: {percent:3d}% of {tasks}, {format_time(line.elapsed)}"

    while not done.is_set():
        asked = time.perf_counter()
        try:
            counts = future.client.run_on_scheduler(count, future.key)
        except Exception:  # the scheduler closing with the future, or a distributed
            done.wait()  # without these task states: no counts, the done callback ends this
            break
        if counts is None:  # the scheduler has not got the graph yet: ask again soon
            done.wait(0.05)
            continue
        total = max(total, counts[1])
        if counts[0]:
            line.update(text(counts[0]), 1 - counts[0] / total)
        done.wait(max(POLL, 20 * (time.perf_counter() - asked)))  # a light load on it
    if future.status != "finished":
        line.end()
        return
    if not total:  # done before the first answer: the future's own task (group) is left
        with contextlib.suppress(Exception):
            total = future.client.run_on_scheduler(count, future.key)[1]
    line.update(text(0), 1.0, last=True)


def _task_counter() -> Callable[..., tuple[int, int] | None]:
    """A function for :meth:`~distributed.Client.run_on_scheduler` that returns how many
    tasks of the future with key ``key`` are not done yet, and its tasks in all (the sizes
    of the task groups still in reach); None while the scheduler does not know the key.
    Defined inside a function, so that it is sent by value: the scheduler need not import
    pangeo_hpc."""

    def count(key: Any, dask_scheduler: Any = None) -> tuple[int, int] | None:
        # walk from the future's task through the dependencies of the tasks not done yet
        first = dask_scheduler.tasks.get(key)
        if first is None:
            return None
        seen, todo, groups, left = {first}, [first], {}, 0
        while todo:
            ts = todo.pop()
            groups[ts.group.name] = len(ts.group)
            if ts.state in ("memory", "erred"):
                continue
            left += 1
            for dep in ts.dependencies:
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return left, sum(groups.values())

    return count


def byte_progress(what: str) -> Callable[[int, int, int, int], None]:
    """A ``progress(bytes_done, bytes_total, files_done, files_total)`` callback that prints
    ``what: 3/10 files, 1.20/4.00 GB, 310 MB/s``.

    For :func:`pangeo_hpc.storage.warmup.warmup` and ``stage``; the last line is the one
    with every file done.

    Parameters
    ----------
    what : str
        The label in front of each line.

    Returns
    -------
    Callable[[int, int, int, int], None]
        The callback.

    Examples
    --------
    >>> progress = byte_progress("warm-up")
    >>> progress(1_200_000_000, 4_000_000_000, 3, 10)
    warm-up: 3/10 files, 1.20/4.00 GB, ... MB/s
    """
    line = ProgressLine()

    def show(done: int, total: int, files: int, nfiles: int) -> None:
        rate = done / 1e6 / max(line.elapsed, 1e-9)
        text = (
            f"{what}: {files}/{nfiles} files, {done / 1e9:.2f}/{total / 1e9:.2f} GB, "
            f"{rate:.0f} MB/s"
        )
        line.update(text, done / total if total else 1.0, last=files == nfiles)

    return show


def step_progress(what: str, unit: str) -> Callable[[int, int], None]:
    """A ``progress(done, total)`` callback that prints ``what: done/total unit``.

    Parameters
    ----------
    what : str
        The label in front of each line.
    unit : str
        What is counted, after the numbers (``files``, ``steps``).

    Returns
    -------
    Callable[[int, int], None]
        The callback.

    Examples
    --------
    >>> progress = step_progress("stage", "files")
    >>> progress(1, 3)
    stage: 1/3 files
    >>> progress(3, 3)
    stage: 3/3 files
    """
    line = ProgressLine()

    def show(done: int, total: int) -> None:
        line.update(f"{what}: {done}/{total} {unit}", done / total if total else 1.0,
                    last=done == total)  # fmt: skip

    return show


def count_progress(what: str) -> tuple[Callable[[int], None], Callable[[], None]]:
    """A ``progress(objects_so_far)`` callback that prints ``what: 1,234 objects, 567/s`` on
    stderr (redrawn ten times a second on a terminal, else a line every ten seconds), and
    a function that clears a redrawn line for what follows.

    Parameters
    ----------
    what : str
        The label in front of each line.

    Returns
    -------
    (callable, callable)
        The callback, and the function that clears its line.

    Examples
    --------
    >>> progress, clear = count_progress("listing s3://era5-pds/2019")
    >>> progress(1234)  # on stderr: listing s3://era5-pds/2019: 1,234 objects, ... /s
    >>> clear()
    """
    line = ProgressLine(sys.stderr)

    def show(objects: int) -> None:
        rate = objects / max(line.elapsed, 1e-9)
        line.update(f"{what}: {objects:,} objects, {rate:,.0f}/s")

    return show, lambda: line.end(clear=True)
