"""A stamp that tells a changed file from an unchanged one on every file system.

On a local disk, Lustre or NFS the kernel keeps a file's ctime (set at every write, never
settable by a user) and its inode (new for a copy renamed over it), so
:class:`~pangeo_hpc.inputs.stamps.Stamp` sees a rewrite whose mtime was put back. A FUSE
mount does not: measured on an rclone mount (``rclone mount``, 1.60) a file's ctime is its
mtime and its inode a number derived from its path, both unchanged by a rewrite in place
with ``touch -r``, while a remount, a first read (hydration) or a warm-up change nothing
at all. There, and only there, :func:`stamp` adds a content fingerprint, so that such a
rewrite is a miss rather than a stale answer:

* the HDF5 storage map of every dataset: each chunk's offset, filter mask, address and
  stored size (``H5Dchunk_iter``), or a contiguous dataset's address and size. A chunk of a
  compressed file whose values change almost always changes its stored size, and a
  rewritten file lays its chunks out anew;
* the bytes of every dataset stored without a filter (its values rewritten in place keep
  the map): the whole of a small one (coordinates), 16 blocks of 4 KiB spread over a large
  one; of a file that is not HDF5, 16 blocks spread over the file.

It costs reading the file's metadata (and, for uncompressed data, 64 KiB) per file and
run, against a state cache that saves reading the file whole; a compressed file's chunks
are not read, so a lazily loaded mount (rclone, FSx) does not fetch them for it. It is a
fingerprint, not a hash of every byte: a change that keeps every chunk's stored size (and
misses the sampled blocks) is not seen.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import replace
from typing import Any

from pangeo_hpc.inputs.fs_magic import MAGIC, statfs_magic
from pangeo_hpc.inputs.stamps import Stamp

__all__ = ["SAMPLES", "needs_fingerprint", "stamp"]

#: file systems (``statfs`` kind) whose ctime and inode do not follow a file's writes
UNKEPT_TIMES = ("fuse",)
#: blocks of the file read into the fingerprint, and their size
SAMPLES, SAMPLE_BYTES = 16, 4096


def stamp(path: str) -> Stamp:
    """The :class:`~pangeo_hpc.inputs.stamps.Stamp` of the local file ``path`` now, with a
    content fingerprint where its file system does not keep ctime and inode.

    Parameters
    ----------
    path : str
        A local file.

    Returns
    -------
    Stamp
        Its stamp.

    Raises
    ------
    FileNotFoundError
        If it does not exist.

    Examples
    --------
    >>> import os, pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "t2m.nc")
    ...     _ = pathlib.Path(path).write_bytes(b"1234")
    ...     found = stamp(path)
    >>> found.size, found.fingerprint  # no fingerprint off FUSE: ctime and inode suffice
    (4, None)
    """
    plain = Stamp.of_file(path)
    if not needs_fingerprint(plain):
        return plain
    return replace(plain, fingerprint=_fingerprint(plain.path, plain.size))


def needs_fingerprint(plain: Stamp) -> bool:
    """Whether ``plain``'s file system is one of :data:`UNKEPT_TIMES` (asked once per
    device).

    Parameters
    ----------
    plain : Stamp
        A stamp without fingerprint.

    Returns
    -------
    bool
        Whether its file system does not keep ctime and inode.

    Examples
    --------
    >>> import tempfile
    >>> from pangeo_hpc.inputs.stamps import Stamp
    >>> needs_fingerprint(Stamp.of_file(tempfile.gettempdir()))  # not on a FUSE mount
    False
    """
    if plain.device is None:
        return False
    return _kind(plain.device, os.path.dirname(plain.path)) in UNKEPT_TIMES


@functools.lru_cache(maxsize=256)
def _kind(device: int, folder: str) -> str:
    try:
        return MAGIC.get(statfs_magic(folder), "unknown")
    except Exception:  # not Linux, or the folder went away: no fingerprint
        return "unknown"


def _fingerprint(path: str, size: int) -> str:
    h = hashlib.sha256()
    layout, ranges = _storage_map(path, size)
    h.update(layout)
    if ranges:
        with open(path, "rb") as f:
            for offset, length in ranges:
                f.seek(offset)
                h.update(f.read(length))
    return h.hexdigest()


def _spread(offset: int, length: int) -> list[tuple[int, int]]:
    """The whole of a small range, or :data:`SAMPLES` blocks spread over a large one."""
    if length <= SAMPLES * SAMPLE_BYTES:
        return [(offset, length)]
    step = (length - SAMPLE_BYTES) // (SAMPLES - 1)
    return [(offset + i * step, SAMPLE_BYTES) for i in range(SAMPLES)]


def _storage_map(path: str, size: int) -> tuple[bytes, list[tuple[int, int]]]:
    """Where and how large each stored piece of each dataset is, as bytes; and the byte
    ranges to read as well: those of datasets stored without a filter (a file that is not
    HDF5: blocks spread over all of it)."""
    import h5py

    parts: list[str] = []
    ranges: list[tuple[int, int]] = []

    def visit(name: str, obj: object) -> None:
        if not isinstance(obj, h5py.Dataset):
            return
        ds = obj.id
        parts.append(name)
        plist = ds.get_create_plist()
        layout = plist.get_layout()
        bare = plist.get_nfilters() == 0
        if layout == h5py.h5d.CHUNKED:
            chunks = _chunks(ds)
            parts.extend(f"{c[0]}:{c[1]}:{c[2]}:{c[3]}" for c in chunks)
            if bare and chunks:  # the first bytes of chunks spread over the dataset
                pick = chunks[:: max(1, len(chunks) // SAMPLES)][:SAMPLES]
                ranges.extend((c[2], min(c[3], SAMPLE_BYTES)) for c in pick)
        elif layout == h5py.h5d.CONTIGUOUS:
            offset, stored = ds.get_offset(), ds.get_storage_size()
            parts.append(f"{offset}:{stored}")
            if bare and offset is not None and stored:
                ranges.extend(_spread(offset, stored))

    try:
        with h5py.File(path, "r", locking=False) as f:
            f.visititems(visit)
    except OSError:
        return b"<not HDF5>", _spread(0, size)
    return "\n".join(parts).encode(), ranges


def _chunks(ds: Any) -> list[tuple[Any, int, int, int]]:
    """Each chunk's offset, filter mask, address and stored size."""
    found: list[tuple[Any, int, int, int]] = []

    def one(c: Any) -> None:
        found.append((c.chunk_offset, c.filter_mask, c.byte_offset, c.size))

    if hasattr(ds, "chunk_iter"):  # H5Dchunk_iter: HDF5 >= 1.12.3, one call
        ds.chunk_iter(one)
    else:
        for i in range(ds.get_num_chunks()):
            one(ds.get_chunk_info(i))
    return found
