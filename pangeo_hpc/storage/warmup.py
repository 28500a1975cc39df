"""Warm up lazily loaded files (FSx for Lustre, rclone, any cache) before a job reads them.

On Lustre with root, released files are restored in batches with ``lfs hsm_restore`` and
polled with ``lfs hsm_action`` until done; everywhere else (and without privileges) the
files are read through: large sequential reads in parallel threads, or spread over the
workers of a Dask client for the bandwidth of many nodes. Loaded files are skipped, so a
warm-up can be run again to finish; files that vanish or cannot be read are reported at
the end, the others go on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.storage.hydration import HydrationReport, hydration
from pangeo_hpc.storage.pagecache import read_through

Progress = Callable[[int, int, int, int], None]  # bytes done, bytes total, files done, total


@dataclass
class WarmupReport:
    """What a warm-up did.

    Attributes
    ----------
    method : str
        How it warmed: ``lfs hsm_restore``, ``N reading threads`` or ``dask workers``.
    files : int
        Files warmed.
    skipped : int
        Files already loaded.
    bytes : int
        Bytes brought in.
    seconds : float
        How long it took.
    failed : list of (str, str)
        Files that could not be read, each with why.
    not_restored : list of str
        Files left released (to keep config ``pangeo-hpc.storage.reserve-fraction`` free).

    Examples
    --------
    >>> WarmupReport("read", files=2, bytes=2_000_000_000, seconds=4.0).summary()
    'warmed 2 files (2.00 GB) in 4.0 s (500 MB/s) by read; 0 already loaded'
    """

    method: str
    files: int = 0
    skipped: int = 0
    bytes: int = 0
    seconds: float = 0.0
    failed: list[tuple[str, str]] = field(default_factory=list)
    not_restored: list[str] = field(default_factory=list)

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        """One line: files and bytes warmed, how fast and how, and what was skipped or left
        released.

        Returns
        -------
        str
            The line.

        Examples
        --------
        >>> WarmupReport("lfs hsm_restore", files=3, skipped=1, bytes=3_000_000_000,
        ...              seconds=6.0).summary()
        'warmed 3 files (3.00 GB) in 6.0 s (500 MB/s) by lfs hsm_restore; 1 already loaded'
        """
        line = (
            f"warmed {self.files} files ({self.bytes / 1e9:.2f} GB) in {self.seconds:.1f} s "
            f"({self.mb_per_s:.0f} MB/s) by {self.method}; {self.skipped} already loaded"
        )
        if self.not_restored:
            line += f"; {len(self.not_restored)} left released (not enough free space)"
        if self.failed:
            line += f"; {len(self.failed)} failed:\n" + "\n".join(
                f"  {p}: {e}" for p, e in self.failed
            )
        return line


def warmup(
    path: str | Path,
    *,
    files: list[str | Path] | None = None,
    workers: int | None = None,
    client: Any = None,
    block_size: int | None = None,
    hsm: bool | None = None,
    progress: Progress | None = None,
) -> WarmupReport:
    """Bring the bytes of every file under ``path`` (or of ``files``) onto the file system.

    Parameters
    ----------
    path : path
        Folder (or file) to warm up.
    files : list, optional
        Only these files (e.g. the ones a recipe will read).
    workers : int, optional
        Parallel reads (threads; default config ``pangeo-hpc.storage.warmup-workers``).
    client : distributed.Client, optional
        Read on the cluster's workers instead, for the bandwidth of many nodes.
    block_size : int, optional
        Bytes per read (default config ``pangeo-hpc.storage.block-size``).
    hsm : bool, optional
        Use ``lfs hsm_restore`` on Lustre (default: when on Lustre as root).
    progress : callable, optional
        Called as ``progress(bytes_done, bytes_total, files_done, files_total)``.

    Returns
    -------
    WarmupReport
        What was warmed, skipped and failed, bytes and seconds.

    Examples
    --------
    >>> print(warmup("/fsx/era5/2020").summary())  # doctest: +SKIP
    """
    t0 = time.perf_counter()
    before = hydration(path, files)
    todo = [f for f in before.files if f.state not in ("loaded", "missing")]
    failed = [(f.path, "vanished before the warm-up") for f in before.files if f.state == "missing"]
    skipped = sum(f.state == "loaded" for f in before.files)
    use_hsm = hsm if hsm is not None else (before.method == "lfs hsm_state" and os.geteuid() == 0)
    if use_hsm:
        report = _hsm_restore(before, todo, progress)
    else:
        bs = int(block_size or config.get("storage.block-size"))
        n = int(workers or config.get("storage.warmup-workers"))
        if n < 1 or bs < 1:
            raise InputError(f"workers={n} and block_size={bs} must be positive")
        report = _read(todo, n, bs, client, progress)
    report.skipped = skipped
    report.failed = failed + report.failed
    report.seconds = time.perf_counter() - t0
    return report


def _read(todo: list, n: int, bs: int, client: Any, progress: Progress | None) -> WarmupReport:
    report = WarmupReport("dask workers" if client is not None else f"{n} reading threads")
    total = sum(f.size for f in todo)
    done_bytes = done_files = 0
    if client is not None:
        futures = {client.submit(_safe_read, f.path, bs, pure=False): f for f in todo}
        results = ((futures[fut], fut.result()) for fut in _as_completed_dask(futures))
    else:
        pool = ThreadPoolExecutor(n)
        futs = {pool.submit(_safe_read, f.path, bs): f for f in todo}
        results = ((futs[fut], fut.result()) for fut in as_completed(futs))
    try:
        for f, (nbytes, error) in results:
            done_files += 1
            if error:
                report.failed.append((f.path, error))
            else:
                report.files += 1
                report.bytes += nbytes
                done_bytes += nbytes
            if progress:
                progress(done_bytes, total, done_files, len(todo))
    finally:
        if client is None:
            pool.shutdown(cancel_futures=True)
    return report


def _as_completed_dask(futures: dict) -> Any:
    from distributed import as_completed as dask_as_completed

    return dask_as_completed(list(futures))


def _safe_read(path: str, block_size: int) -> tuple[int, str | None]:
    try:
        return read_through(path, block_size), None
    except FileNotFoundError:
        return 0, "vanished during the warm-up"
    except OSError as exc:
        return 0, f"{exc.strerror or exc} (errno {exc.errno})"


def _hsm_restore(before: HydrationReport, todo: list, progress: Progress | None) -> WarmupReport:
    """Batched ``lfs hsm_restore``, then ``lfs hsm_action`` until every file says NOOP."""
    if shutil.which("lfs") is None:
        raise InputError("hsm=True needs the Lustre client tool lfs on PATH")
    report = WarmupReport("lfs hsm_restore")
    batch = int(config.get("storage.hsm-batch"))
    if not 1000 <= batch <= 5000:
        raise InputError(f"storage.hsm-batch={batch}: use 1000 to 5000 files per call")
    free = shutil.disk_usage(before.root).free
    reserve = float(config.get("storage.reserve-fraction")) * shutil.disk_usage(before.root).total
    chosen, room = [], free - reserve
    for f in todo:
        if f.size - f.loaded <= room:
            chosen.append(f)
            room -= f.size - f.loaded
        else:
            report.not_restored.append(f.path)
    total = sum(f.size for f in chosen)
    done = 0
    for i in range(0, len(chosen), batch):
        group = chosen[i : i + batch]
        r = subprocess.run(
            ["lfs", "hsm_restore", *(f.path for f in group)], capture_output=True, text=True
        )
        if r.returncode != 0:
            report.failed += [(f.path, r.stderr.strip() or "hsm_restore failed") for f in group]
            continue
        pending = [f.path for f in group]
        poll = float(config.get("storage.hsm-poll-seconds"))
        while pending:
            out = subprocess.run(
                ["lfs", "hsm_action", *pending], capture_output=True, text=True
            ).stdout
            busy = {line.partition(": ")[0] for line in out.splitlines() if "NOOP" not in line}
            pending = [p for p in pending if p in busy]
            if pending:
                time.sleep(poll)
        done += sum(f.size for f in group)
        report.files += len(group)
        report.bytes += sum(f.size - f.loaded for f in group)
        if progress:
            progress(done, total, report.files, len(chosen))
    return report
