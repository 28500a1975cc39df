"""Peak resident memory of the workers (and their children), sampled in a thread."""

from __future__ import annotations

import contextlib
import threading


class PeakRSS:
    """Samples the resident set size of processes (with their children) in a thread.

    ``peak`` maps each key of ``pids`` to the largest RSS seen, in bytes.
    """

    def __init__(self, pids: dict[str, int], interval: float = 0.05) -> None:
        import psutil

        self.procs = {k: psutil.Process(p) for k, p in pids.items()}
        self.interval = interval
        self.peak: dict[str, int] = dict.fromkeys(pids, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        import psutil

        for k, p in self.procs.items():
            try:
                rss = p.memory_info().rss
                for c in p.children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        rss += c.memory_info().rss
            except psutil.Error:
                continue
            self.peak[k] = max(self.peak[k], rss)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> PeakRSS:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()
