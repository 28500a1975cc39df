"""A file's pages in the kernel page cache: how many bytes are resident, dropping them, and
reading a file through (which loads a lazily loaded file, and leaves it in the cache).

``posix_fadvise(POSIX_FADV_DONTNEED)`` asks the kernel to drop one file's clean pages;
unlike ``echo 3 > /proc/sys/vm/drop_caches`` it needs no root and leaves other files alone.
``mincore(2)`` on a read-only mapping of the file tells which pages are resident without
reading any (what util-linux's ``fincore`` prints). The warm-up, the storage survey, the
calibration and the benchmarks all drop and read files with these functions.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import mmap
import os

import numpy as np

#: bytes mapped at a time to ask mincore (address space, not memory: nothing is read)
WINDOW = 1 << 30


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    return libc


def resident_bytes(fd: int) -> int | None:
    """Bytes of the open file ``fd`` that sit in the page cache now.

    Parameters
    ----------
    fd : int
        A file descriptor open for reading.

    Returns
    -------
    int or None
        Resident pages times the page size (at most the file's size); ``None`` where the
        file system cannot be mapped (some FUSE file systems) or mincore refuses.

    Examples
    --------
    >>> import os
    >>> from pathlib import Path
    >>> _ = Path("a.nc").write_bytes(b"x" * 65536)
    >>> read_through("a.nc")
    65536
    >>> fd = os.open("a.nc", os.O_RDONLY)
    >>> resident_bytes(fd)  # all of it, just read
    65536
    >>> os.close(fd)
    """
    size = os.fstat(fd).st_size
    libc = _libc()
    failed = ctypes.c_void_p(-1).value
    page = mmap.PAGESIZE
    resident = 0
    for offset in range(0, size, WINDOW):
        length = min(WINDOW, size - offset)
        addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
        if addr is None or addr == failed:
            return None
        try:
            vec = (ctypes.c_ubyte * ((length + page - 1) // page))()
            if libc.mincore(addr, length, vec) != 0:
                return None
            resident += int(np.count_nonzero(np.frombuffer(vec, np.uint8) & 1)) * page
        finally:
            libc.munmap(addr, length)
    return min(resident, size)


def drop(fd: int) -> None:
    """Drop the pages of the open file ``fd`` from the page cache (no root needed).

    Dirty pages (a file just written) are written back first: the kernel drops only clean
    pages. On a FUSE mount (rclone) this empties the kernel's page cache of the file, not
    the FUSE daemon's own cache; on Lustre, the client's cached pages of the file.

    Parameters
    ----------
    fd : int
        An open file descriptor.

    Examples
    --------
    >>> import os
    >>> from pathlib import Path
    >>> _ = Path("a.nc").write_bytes(b"x" * 65536)
    >>> fd = os.open("a.nc", os.O_RDONLY)
    >>> drop(fd)  # the next read of a.nc comes from the disk
    >>> os.close(fd)
    """
    try:
        os.fdatasync(fd)
    except OSError:  # EINVAL, ENOSYS: nothing to write back on this file system
        pass
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def drop_file(path: str | os.PathLike[str]) -> None:
    """:func:`drop` the pages of the file at ``path``: its next read comes from the disk
    (or the network), not from memory.

    Parameters
    ----------
    path : str | os.PathLike[str]
        A file.

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("a.nc").write_bytes(b"x" * 65536)
    >>> drop_file("a.nc")  # the next read of a.nc comes from the disk
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        drop(fd)
    finally:
        os.close(fd)


def read_through(path: str | os.PathLike[str], block_size: int = 16 << 20) -> int:
    """Read a whole file sequentially in large blocks, unbuffered; returns the bytes read.

    On a lazily loaded file system (FSx for Lustre, an rclone mount) this loads the file;
    everywhere it leaves the file's pages in the page cache.

    Parameters
    ----------
    path : str | os.PathLike[str]
        A file.
    block_size : int, optional
        Bytes per read.

    Returns
    -------
    int
        The bytes read.

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("a.nc").write_bytes(b"x" * 65536)
    >>> read_through("a.nc")
    65536
    """
    view = memoryview(bytearray(block_size))
    total = 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(view):
            total += n
    return total


__all__ = ["drop", "drop_file", "read_through", "resident_bytes"]
