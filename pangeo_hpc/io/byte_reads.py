"""Byte ranges of local files as the chunk reader reads them, and the count of bytes read.

Two ways to read the stored chunks a task needs:

- :func:`pread_ranges`: every chunk at once, in as few ``pread`` calls as they are close
  together on disk, each chunk a view of one large read (the block is assembled from them);
- :class:`ChunkStream`: one chunk at a time, each read into the same small buffer just
  before it is decoded. A reduction that decodes chunk by chunk
  (:mod:`pangeo_hpc.io.fused`) takes this one: reading a file's 40 MB of chunks at once
  into fresh memory costs a page fault per 4 KiB and leaves each chunk out of cache by the
  time it is inflated; a buffer of one chunk, reused, is in cache when libdeflate reads
  it. Measured on B1's 0.25-degree files (240 chunks of ~176 kB a file, page cache warm):
  reading and inflating took 0.72-0.74 s a file the first way and 0.45-0.52 s this way
  (benchmarks/b1_global_mean.py gives the whole run's share of the decode-only bound).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence

from pangeo_hpc.errors import DamagedInputError

#: neighbouring chunks closer than this are read with one ``pread``
READ_GAP = 1 << 16
#: and one ``pread`` reads at most this many bytes
READ_MAX = 64 << 20

_read = [0]
_read_lock = threading.Lock()


def count_read(n: int) -> None:
    """Add ``n`` bytes to this process's count of bytes read (:func:`bytes_read`).

    Parameters
    ----------
    n : int
        Bytes just read.

    Examples
    --------
    >>> before = bytes_read()
    >>> count_read(100)
    >>> bytes_read() - before
    100
    """
    with _read_lock:
        _read[0] += n


def bytes_read() -> int:
    """Bytes this process has read from input files so far, as stored (compressed): every
    ``pread`` of a local file and every range of an S3 object read through its index.
    Reads through h5py (S3 objects without an index, HDF5 layouts the chunk reader does not
    take) are counted by the bytes of the hyperslab they return instead.

    Returns
    -------
    int
        Bytes.

    Examples
    --------
    >>> before = bytes_read()
    >>> count_read(4096)
    >>> bytes_read() - before
    4096
    """
    return _read[0]


def _truncated(name: str, end: int) -> DamagedInputError:
    return DamagedInputError(
        f"{name!r} ends before byte {end} that its chunk index names: the file is "
        "truncated or still being copied; restore it"
    )


def pread_ranges(fd: int, ranges: Sequence[tuple[int, int]], name: str) -> list[memoryview | None]:
    """The bytes of each ``(offset, length)`` (``None`` where offset < 0), read with few
    ``pread`` calls: ranges close together on disk are read as one.

    Parameters
    ----------
    fd : int
        An open file's descriptor.
    ranges : sequence of (int, int)
        Each range's offset and length; a negative offset for a chunk never written.
    name : str
        The file's name, for the message of a file shorter than its ranges.

    Returns
    -------
    list of memoryview or None
        Each range's bytes, in the order given.

    Raises
    ------
    DamagedInputError
        When the file ends before a range does.

    Examples
    --------
    >>> import os, pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "t.nc")
    ...     _ = pathlib.Path(path).write_bytes(b"abcdefghij")
    ...     fd = os.open(path, os.O_RDONLY)
    ...     views = pread_ranges(fd, [(0, 3), (5, 2), (-1, 0)], "t.nc")
    ...     os.close(fd)
    >>> [None if v is None else bytes(v) for v in views]
    [b'abc', b'fg', None]
    """
    out: list[memoryview | None] = [None] * len(ranges)
    order = sorted((off, n, i) for i, (off, n) in enumerate(ranges) if off >= 0)
    j = 0
    while j < len(order):
        start, end, k = order[j][0], order[j][0] + order[j][1], j + 1
        while (
            k < len(order)
            and order[k][0] - end <= READ_GAP
            and (order[k][0] + order[k][1] - start <= READ_MAX)
        ):
            end = max(end, order[k][0] + order[k][1])
            k += 1
        data = memoryview(os.pread(fd, end - start, start))
        count_read(len(data))
        if len(data) < end - start:
            raise _truncated(name, end)
        for off, n, i in order[j:k]:
            out[i] = data[off - start : off - start + n]
        j = k
    return out


class ChunkStream:
    """The stored bytes of chunks of one local file, read one at a time, in the order of
    ``ranges`` (``(offset, length)``; offset < 0: a chunk never written, given as ``None``).

    Iterating opens the file and reads each chunk with one ``preadv`` into one buffer that
    every chunk reuses: **a chunk's bytes are valid only until the next one is taken**
    (decode it, or copy it, first). Each iteration reads the file again.

    Parameters
    ----------
    path : str
        The file.
    ranges : sequence of (int, int)
        Byte offset and length of each chunk.

    Examples
    --------
    >>> import os, pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "t.nc")
    ...     _ = pathlib.Path(path).write_bytes(b"abcdefghij")
    ...     stream = ChunkStream(path, [(0, 3), (-1, 0), (7, 3)])
    ...     chunks = [None if c is None else bytes(c) for c in stream]
    >>> chunks
    [b'abc', None, b'hij']
    """

    __slots__ = ("path", "ranges")

    def __init__(self, path: str, ranges: Sequence[tuple[int, int]]) -> None:
        self.path = path
        self.ranges = [(int(o), int(n)) for o, n in ranges]

    def __len__(self) -> int:
        return len(self.ranges)

    @property
    def complete(self) -> bool:
        """Whether every chunk was written (no ``None`` among them), without reading."""
        return all(off >= 0 for off, _ in self.ranges)

    def __iter__(self) -> Iterator[memoryview | None]:
        size = max((n for off, n in self.ranges if off >= 0), default=0)
        view = memoryview(bytearray(size))
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for off, n in self.ranges:
                if off < 0:
                    yield None
                    continue
                got = os.preadv(fd, [view[:n]], off)
                count_read(got)
                if got < n:
                    raise _truncated(self.path, off + n)
                yield view[:n]
        finally:
            os.close(fd)
