"""The page cache: drop files from it (cold runs), read them into it (warm runs), and
measure how much of them it holds."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path


def _paths(paths: Sequence[str | Path]) -> Iterator[Path]:
    """Files, with folders (Zarr stores) expanded to the files under them."""
    for p in map(Path, paths):
        if p.is_dir():
            yield from (q for q in p.rglob("*") if q.is_file())
        else:
            yield p


def cold(paths: Sequence[str | Path]) -> None:
    """Drop ``paths`` (files or folders) from the page cache: the next read hits the disk.

    The package's :func:`pangeo_hpc.storage.pagecache.drop_file` on each file (written back
    first, then ``POSIX_FADV_DONTNEED``): no root needed, nothing else on the machine is
    evicted.
    """
    from pangeo_hpc.storage.pagecache import drop_file

    for p in _paths(paths):
        drop_file(p)


def warm(paths: Sequence[str | Path]) -> None:
    """Read ``paths`` (files or folders) through once so that they sit in the page cache
    (:func:`pangeo_hpc.storage.pagecache.read_through`, as the warm-up reads)."""
    from pangeo_hpc.storage.pagecache import read_through

    for p in _paths(paths):
        read_through(p)


def resident_fraction(paths: Sequence[str | Path]) -> float | None:
    """Share of the bytes of ``paths`` in the page cache
    (:func:`pangeo_hpc.storage.pagecache.resident_bytes`, what ``fincore`` prints), or None
    where it cannot be told."""
    from pangeo_hpc.storage.pagecache import resident_bytes

    cached = total = 0
    for p in _paths(paths):
        fd = os.open(p, os.O_RDONLY)
        try:
            resident = resident_bytes(fd)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if resident is None:
            return None
        cached, total = cached + resident, total + size
    return cached / total if total else None
