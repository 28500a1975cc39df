"""Stage a tree from object storage (or a folder) to a Lustre or local folder, in parallel.

Like NASA's ``mcp``/``msum`` on Lustre: large files are split into byte ranges copied by
parallel threads, files are striped for their size on Lustre, written under a temporary
name, checked against their source once complete (:mod:`pangeo_hpc.storage.copycheck`:
the MD5 of the copy, re-read from the file system, against the object's ETag where that is
an MD5, else the checksum of each range as read against the same range re-read) and
renamed into place only if they pass. Files staged before from the same size and ETag are
skipped, so an interrupted stage resumes. The destination must be new, empty or a folder
staged into before (its marker); a file that stage did not write there (its log records
the size, inode and mtime of each file it wrote) is never replaced, but reported.

S3 sources take :class:`~pangeo_hpc.s3.options.S3Options` (endpoint, credentials and
profile, retries), as every S3 verb does (:mod:`pangeo_hpc.storage.stage_sources`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from pangeo_hpc.errors import InputError
from pangeo_hpc.s3.options import S3Options, is_s3
from pangeo_hpc.storage.copycheck import digest, verify
from pangeo_hpc.storage.stage_sources import Entry, SourceError, source
from pangeo_hpc.storage.stripe import stripe_file
from pangeo_hpc.write.outputs import append_line, atomic_file, claim_tree

RANGE = 64 << 20
#: what a stage wrote into its folder, a JSON line per file: path, size, source and its
#: ETag, and the inode and mtime of the file written (a file put there since is not ours)
STAGE_LOG = ".pangeo-hpc-stage.jsonl"

Progress = Callable[[int, int, int, int], None]


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_size, st.st_ino, st.st_mtime_ns


@dataclass(frozen=True)
class _Logged:
    identity: tuple[int, int, int]
    etag: str | None


def _staged(dest: Path) -> dict[str, _Logged]:
    """The files staged into ``dest`` before (relative path -> what the log says), from
    its log; a line cut short by a killed stage is skipped, the last line of a path wins."""
    found: dict[str, _Logged] = {}
    try:
        lines = (dest / STAGE_LOG).read_text().splitlines()
    except FileNotFoundError:
        return found
    for line in lines:
        try:
            doc = json.loads(line)
            identity = (int(doc["size"]), int(doc["ino"]), int(doc["mtime_ns"]))
            found[str(doc["path"])] = _Logged(identity, doc.get("etag"))
        except (ValueError, KeyError, TypeError):
            continue
    return found


@dataclass
class StageReport:
    """What a stage copied, skipped and could not copy, and how each copy was checked.

    Attributes
    ----------
    files, bytes : int
        Files copied and checked, and their bytes.
    skipped : int
        Files staged before (same size, and same ETag where the log has one).
    seconds : float
        Wall time.
    failed : list of (source, reason)
        Files not copied, or copied but failing their check (not put in place).
    checks : dict
        How many copies each check proved, e.g. ``{"size and MD5 = ETag": 12,
        "size and re-read checksum (multipart ETag)": 3}``
        (:mod:`pangeo_hpc.storage.copycheck`).
    from_memory : int
        Copies re-read from memory because the kernel kept their pages after the drop
        (tmpfs): their check proves the write, not the storage underneath.

    Examples
    --------
    >>> report = StageReport(files=2, bytes=2_000_000_000, seconds=4.0,
    ...                      checks={"size and MD5 = ETag": 2})
    >>> report.files, report.failed
    (2, [])
    """

    files: int = 0
    skipped: int = 0
    bytes: int = 0
    seconds: float = 0.0
    failed: list[tuple[str, str]] = field(default_factory=list)
    checks: dict[str, int] = field(default_factory=dict)
    from_memory: int = 0

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        """One line (plus a line per failure): what was staged, and what was checked.

        Returns
        -------
        str
            The text.

        Examples
        --------
        >>> report = StageReport(files=2, bytes=2_000_000_000, seconds=4.0,
        ...                      checks={"size and MD5 = ETag": 2})
        >>> print(report.summary())
        staged 2 files (2.00 GB) in 4.0 s (500 MB/s); checked size and MD5 = ETag for 2 files;
        0 already there
        """
        line = (
            f"staged {self.files} files ({self.bytes / 1e9:.2f} GB) in {self.seconds:.1f} s "
            f"({self.mb_per_s:.0f} MB/s)"
        )
        if self.checks:
            line += "; checked " + ", ".join(
                f"{how} for {n} file{'s' if n != 1 else ''}"
                for how, n in sorted(self.checks.items())
            )
        if self.from_memory:
            line += f" ({self.from_memory} re-read from memory: the page cache kept them)"
        line += f"; {self.skipped} already there"
        if self.failed:
            line += f"; {len(self.failed)} failed:\n" + "\n".join(
                f"  {p}: {e}" for p, e in self.failed
            )
        return line


class _Tally:
    """The report's counts and the progress, updated by many threads under one lock;
    ``progress`` is called under it too, one call at a time, with counts that only grow."""

    def __init__(self, report: StageReport, total: int, files: int, progress: Progress | None):
        self.report = report
        self.total = total
        self.files = files
        self.progress = progress
        self.done_bytes = 0
        self.done_files = 0
        self.lock = threading.Lock()

    def _show(self) -> None:
        if self.progress is not None:
            self.progress(self.done_bytes, self.total, self.done_files, self.files)

    def copied(self, nbytes: int) -> None:
        with self.lock:
            self.done_bytes += nbytes
            self._show()

    def staged(self, entry: Entry, how: str, from_memory: bool) -> None:
        with self.lock:
            self.report.files += 1
            self.report.bytes += entry.size
            self.report.checks[how] = self.report.checks.get(how, 0) + 1
            self.report.from_memory += from_memory
            self.done_files += 1
            self._show()

    def failed(self, entry: Entry, reason: str) -> None:
        with self.lock:
            self.report.failed.append((entry.name, reason))
            self.done_files += 1
            self._show()


def _write_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


def _all_ranges(pool: ThreadPoolExecutor, calls: list[tuple]) -> list[bytes]:
    """The results of ``calls`` run in ``pool``, in order; on the first failure the rest
    are cancelled and the running ones waited for (no write after the copy is removed)."""
    futures = [pool.submit(*call) for call in calls]
    try:
        return [fut.result() for fut in futures]
    except BaseException:
        for fut in futures:
            fut.cancel()
        wait(futures)
        raise


def _plan(
    entries: list[Entry], dest: Path, staged: dict[str, _Logged], report: StageReport
) -> list[Entry]:
    """The entries to copy; those staged before are counted, others' files reported."""
    todo = []
    for entry in entries:
        target = dest / entry.rel
        logged = staged.get(entry.rel)
        if not target.exists():
            todo.append(entry)
        elif logged is None or logged.identity != _identity(target.stat()):
            report.failed.append((entry.name, f"{target} was not staged here: not replaced"))
        elif logged.identity[0] == entry.size and (
            logged.etag is None or entry.etag is None or logged.etag == entry.etag
        ):
            report.skipped += 1
        else:  # staged before from an older version of the source
            todo.append(entry)
    return todo


def stage(
    src: str,
    dst: str | Path,
    *,
    s3: S3Options | None = None,
    threads: int = 8,
    range_size: int = RANGE,
    progress: Progress | None = None,
) -> StageReport:
    """Copy every file under ``src`` (``s3://bucket/prefix`` or a folder) into ``dst``.

    Each copy is checked against its source before it is put in place
    (:mod:`pangeo_hpc.storage.copycheck`); :attr:`StageReport.checks` says how.

    Parameters
    ----------
    src : str
        ``s3://BUCKET[/PREFIX]`` (or one object's URL), or a local folder (or file).
    dst : path
        Destination folder (created): new, empty, or staged into before. An ``s3://``
        destination is refused: staging brings inputs onto the disk the computation reads
        (Lustre, local); to copy between buckets use ``aws s3 sync``.
    s3 : S3Options, optional
        Endpoint, credentials, profile, for an ``s3://`` source; default
        :meth:`S3Options.resolve` (dask config ``pangeo-hpc.s3.*`` and the AWS chain).
        Requests are retried as ``pangeo-hpc.s3.max-retries`` says.
    threads : int
        Files copied at once, and byte ranges read at once.
    range_size : int
        Bytes per range (64 MiB).
    progress : callable, optional
        ``progress(bytes_done, bytes_total, files_done, files_total)``, called one call at a
        time (from the copying threads).

    Returns
    -------
    StageReport

    Raises
    ------
    InputError
        For a source that does not exist, S3 options for a folder, a destination that is
        not stage's, bad numbers, or an S3 failure that would fail every file (refused
        credentials, an endpoint that does not answer, throttling beyond the retries).

    Examples
    --------
    >>> report = stage(
    ...     "s3://era5-pds/2020/01", "/scratch/era5/2020/01", s3=S3Options(anon=True)
    ... )  # doctest: +SKIP
    >>> print(report.summary())  # doctest: +SKIP
    """
    if is_s3(dst):  # before the source is listed
        raise InputError(
            f"dst={str(dst)!r} is an S3 URL: stage copies to a local or Lustre folder, for the "
            f"computation to read from disk; read the source as it is (--data {src}), or copy "
            f"between buckets with aws s3 sync (nothing was changed)",
            param="dst",
        )
    if threads < 1 or range_size < 1:
        raise InputError(f"threads={threads} and range_size={range_size} must be positive")
    t0 = time.perf_counter()
    origin = source(src, s3)
    entries = origin.entries()
    # a new or empty folder, or one staged into before; never the source or a user's folder
    dest = claim_tree(dst, kind="stage", inputs=[src] if origin.folder else [], flag="dst")
    staged = _staged(dest)
    report = StageReport()
    todo = _plan(entries, dest, staged, report)
    tally = _Tally(report, sum(e.size for e in todo), len(todo), progress)

    def copy_range(entry: Entry, tmp: Path, start: int, end: int) -> bytes:
        data = origin.read(entry, start, end)
        if len(data) != end - start:
            raise OSError(f"short read at {start}: {len(data)} of {end - start} bytes")
        fd = os.open(tmp, os.O_WRONLY)
        try:
            _write_all(fd, data, start)
        finally:
            os.close(fd)
        tally.copied(end - start)
        return digest(data)

    def copy_file(entry: Entry, pool: ThreadPoolExecutor) -> None:
        target, size = dest / entry.rel, entry.size
        logged = staged.get(entry.rel)
        ours = lambda p: logged is not None and logged.identity == _identity(p.stat())  # noqa: E731
        try:
            with atomic_file(target, flag="dst", ours=ours, part=".part") as tmp:
                stripe_file(tmp, size)
                with open(tmp, "ab") as f:
                    f.truncate(size)
                ranges = [(s, min(s + range_size, size)) for s in range(0, size, range_size)]
                read = _all_ranges(pool, [(copy_range, entry, tmp, a, b) for a, b in ranges])
                checked = verify(
                    tmp, size=size, etag=entry.etag, ranges=ranges, read=read, folder=origin.folder
                )
            size_, ino, mtime = _identity(target.stat())
            log = {"path": entry.rel, "size": size_, "source": entry.name, "etag": entry.etag}
            append_line(dest / STAGE_LOG, {**log, "ino": ino, "mtime_ns": mtime})
        except (OSError, InputError) as exc:
            tally.failed(entry, str(exc))
            return
        tally.staged(entry, checked.how, checked.from_memory)

    # files in parallel, and the ranges of large files in parallel too
    ranges = ThreadPoolExecutor(threads, "stage-range")
    per_file = ThreadPoolExecutor(threads, "stage-file")
    try:
        for fut in [per_file.submit(copy_file, e, ranges) for e in todo]:
            fut.result()
    except SourceError as exc:  # the same for every file: stop, and say what to fix
        raise exc.error from exc.__cause__
    finally:
        per_file.shutdown(wait=True, cancel_futures=True)
        ranges.shutdown(wait=True, cancel_futures=True)
    report.seconds = time.perf_counter() - t0
    return report


__all__ = ["RANGE", "STAGE_LOG", "StageReport", "stage"]
