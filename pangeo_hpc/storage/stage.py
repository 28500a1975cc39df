"""Stage a tree from object storage (or a folder) to a Lustre or local folder, in parallel.

Like NASA's ``mcp``/``msum`` on Lustre, done with fsspec: large files are split into byte
ranges copied by parallel threads, every range's checksum is compared between what was
read and what landed on disk, files are striped for their size on Lustre, written under a
temporary name and renamed when complete, and files staged before with the same size are
skipped, so an interrupted stage resumes. The destination must be new, empty or a folder
staged into before (its marker); a file that stage did not write there (its log records
the size, inode and mtime of each file it wrote) is never replaced, but reported.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec

from pangeo_hpc.errors import InputError
from pangeo_hpc.storage.stripe import stripe_file
from pangeo_hpc.write.outputs import append_line, atomic_file, claim_tree

RANGE = 64 << 20
#: what a stage wrote into its folder, a JSON line per file: path, size, source, and the
#: inode and mtime of the file written (a file put there since is not ours)
STAGE_LOG = ".pangeo-hpc-stage.jsonl"


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_size, st.st_ino, st.st_mtime_ns


def _staged(dest: Path) -> dict[str, tuple[int, int, int]]:
    """The files staged into ``dest`` before (relative path -> size, inode, mtime), from
    its log; a line cut short by a killed stage is skipped, the last line of a path wins."""
    found: dict[str, tuple[int, int, int]] = {}
    try:
        lines = (dest / STAGE_LOG).read_text().splitlines()
    except FileNotFoundError:
        return found
    for line in lines:
        try:
            doc = json.loads(line)
            found[str(doc["path"])] = (int(doc["size"]), int(doc["ino"]), int(doc["mtime_ns"]))
        except (ValueError, KeyError, TypeError):
            continue
    return found


@dataclass
class StageReport:
    """What a stage copied, skipped and could not copy."""

    files: int = 0
    skipped: int = 0
    bytes: int = 0
    seconds: float = 0.0
    failed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        line = (
            f"staged {self.files} files ({self.bytes / 1e9:.2f} GB) in {self.seconds:.1f} s "
            f"({self.mb_per_s:.0f} MB/s), checksums verified; {self.skipped} already there"
        )
        if self.failed:
            line += f"; {len(self.failed)} failed:\n" + "\n".join(
                f"  {p}: {e}" for p, e in self.failed
            )
        return line


def _source(src: str, storage_options: dict[str, Any] | None) -> tuple[Any, str]:
    fs, root = fsspec.core.url_to_fs(src, **(storage_options or {}))
    try:
        if not fs.exists(root):
            raise InputError(f"source {src!r} does not exist: check the bucket and prefix")
    except PermissionError as exc:
        raise InputError(
            f"source {src!r} is not readable: {exc}; check the credentials "
            "(for a public bucket: anon=True)",
            param="anon",
        ) from exc
    return fs, root


def stage(
    src: str,
    dst: str | Path,
    *,
    storage_options: dict[str, Any] | None = None,
    threads: int = 8,
    range_size: int = RANGE,
    progress: Callable[[int, int, int, int], None] | None = None,
) -> StageReport:
    """Copy every file under ``src`` (``s3://bucket/prefix`` or a folder) into ``dst``.

    Parameters
    ----------
    src : str
        Source URL or folder.
    dst : path
        Destination folder (created).
    storage_options : dict, optional
        For fsspec, e.g. ``{"anon": True}`` or ``{"client_kwargs": {"endpoint_url": ...}}``.
    threads : int
        Ranges copied at once.
    range_size : int
        Bytes per range (64 MiB).
    progress : callable, optional
        ``progress(bytes_done, bytes_total, files_done, files_total)``.
    """
    if threads < 1 or range_size < 1:
        raise InputError(f"threads={threads} and range_size={range_size} must be positive")
    t0 = time.perf_counter()
    fs, root = _source(src, storage_options)
    # a new or empty folder, or one staged into before; never the source or a user's folder
    dest = claim_tree(dst, kind="stage", inputs=[] if "://" in src else [src], flag="dst")
    listing = fs.find(root, detail=True) if fs.isdir(root) else {root: fs.info(root)}
    files = {k: int(v["size"]) for k, v in listing.items() if v.get("type") != "directory"}
    base = root.rstrip("/")
    staged = _staged(dest)
    report = StageReport()
    todo = []
    for name, size in sorted(files.items()):
        rel = name[len(base) :].lstrip("/") or os.path.basename(name)
        target = dest / rel
        if not target.exists():
            todo.append((name, rel, size))
        elif staged.get(rel) != _identity(target.stat()):  # not the file stage wrote there
            report.failed.append((name, f"{target} was not staged here: not replaced"))
        elif staged[rel][0] == size:
            report.skipped += 1
        else:  # staged before from an older version of the source
            todo.append((name, rel, size))
    total = sum(s for _, _, s in todo)
    done = [0, 0]

    def copy_range(name: str, tmp: Path, start: int, end: int) -> None:
        data = fs.cat_file(name, start=start, end=end)
        if len(data) != end - start:
            raise OSError(f"short read at {start}: {len(data)} of {end - start} bytes")
        fd = os.open(tmp, os.O_WRONLY)
        try:
            os.pwrite(fd, data, start)
            os.fsync(fd)
        finally:
            os.close(fd)
        with open(tmp, "rb") as f:  # what landed on disk must be what was read
            f.seek(start)
            if hashlib.md5(f.read(end - start)).digest() != hashlib.md5(data).digest():
                raise OSError(f"checksum mismatch in bytes {start}..{end}")
        done[0] += end - start
        if progress:
            progress(done[0], total, done[1], len(todo))

    def copy_file(name: str, rel: str, size: int, pool: ThreadPoolExecutor) -> None:
        target = dest / rel
        try:
            ours = lambda p: staged.get(rel) == _identity(p.stat())  # noqa: E731
            with atomic_file(target, flag="dst", ours=ours, part=".part") as tmp:
                stripe_file(tmp, size)
                with open(tmp, "ab") as f:
                    f.truncate(size)
                ranges = [(s, min(s + range_size, size)) for s in range(0, size, range_size)]
                for fut in [pool.submit(copy_range, name, tmp, a, b) for a, b in ranges]:
                    fut.result()
                if tmp.stat().st_size != size:
                    raise OSError(f"size {tmp.stat().st_size} != {size}")
            size_, ino, mtime = _identity(target.stat())
            entry = {"path": rel, "size": size_, "source": name, "ino": ino, "mtime_ns": mtime}
            append_line(dest / STAGE_LOG, entry)
            report.files += 1
            report.bytes += size
        except (OSError, InputError) as exc:
            report.failed.append((name, str(exc)))
        done[1] += 1
        if progress:
            progress(done[0], total, done[1], len(todo))

    # files in parallel, and the ranges of large files in parallel too
    with ThreadPoolExecutor(threads) as ranges, ThreadPoolExecutor(threads) as per_file:
        for fut in [per_file.submit(copy_file, n, t, s, ranges) for n, t, s in todo]:
            fut.result()
    report.seconds = time.perf_counter() - t0
    return report
