"""A state-cache entry read back: its bytes read once, its seal checked, its arrays views.

An entry is a sealed ``np.savez`` (:mod:`pangeo_hpc.write.sealed`): the seal's digest
covers every byte after it, so once it matches, the zip and ``.npy`` headers inside are
the ones written and need no second check. ``np.load`` would check each member's CRC-32
again and copy its bytes out of the zip (for a 63 MB roll-up about as long as the seal's
own check); here each array is a view of the one buffer the file was read into (a NumPy
``uint8`` array made with ``np.empty``: the arrays are writable, and writing changes only
this process's copy; a ``bytearray`` would be zeroed first, 28 ms more for a 63 MB
roll-up, an eighth of a one-month update of era5-sst-trend).
A member whose offset does not suit its type's alignment is copied once.
"""

from __future__ import annotations

import os
import struct
import zipfile
from pathlib import Path

import numpy as np

from pangeo_hpc.write.sealed import payload_offset

__all__ = ["read_entry"]

#: ``np.lib.format``'s header readers by ``.npy`` version (3.0: names in UTF-8, as 2.0)
_HEADERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}
_LOCAL = struct.Struct(zipfile.structFileHeader)


class _Reader:
    """A read-only, seekable file over a memoryview: what :mod:`zipfile` and
    ``np.lib.format`` read headers through (each ``read`` copies only what it returns)."""

    __slots__ = ("_pos", "_view")

    def __init__(self, view: memoryview) -> None:
        self._view = view
        self._pos = 0

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._pos, len(self._view))[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, n: int = -1) -> bytes:
        end = len(self._view) if n is None or n < 0 else min(len(self._view), self._pos + n)
        out = bytes(self._view[self._pos : end])
        self._pos = max(self._pos, end)
        return out


def read_entry(path: Path, head: bytes, digest: str) -> dict[str, np.ndarray]:
    """The arrays of the sealed npz at ``path`` (by member name, ``.npy`` dropped).

    Parameters
    ----------
    path : Path
        The entry's file.
    head : bytes
        The fixed head that names the entry's kind (:func:`pangeo_hpc.write.sealed.seal`).
    digest : str
        The name of the seal's digest (:data:`pangeo_hpc.write.sealed.DIGESTS`).

    Returns
    -------
    dict[str, np.ndarray]
        The arrays.

    Raises
    ------
    FileNotFoundError
        For a missing entry.
    pangeo_hpc.write.sealed.Damaged
        When the seal (``head``, ``digest``) does not match the bytes.
    ValueError
        For sealed bytes that are not an npz of plain arrays (compressed members, object
        arrays, a member shorter than its header says): a bug or a foreign entry.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.batch import StateCache
    >>> from pangeo_hpc.batch.incremental.entry_bytes import read_entry
    >>> from pangeo_hpc.batch.incremental.state_cache import _DIGEST, _HEAD  # the cache's seal
    >>> cache = StateCache("states-read-entry")
    >>> _ = cache.put("a" * 64, {"sum": np.arange(3.0)}, {})
    >>> read_entry(cache.folder / f"{'a' * 64}.npz", _HEAD, _DIGEST)["sum"]
    array([0., 1., 2.])
    """
    with path.open("rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        data = np.empty(size, dtype=np.uint8)  # not zeroed first: every byte is read
        with memoryview(data) as whole:
            got = 0
            while got < size:
                n = f.readinto(whole[got:])
                if not n:
                    break
                got += n
    view = memoryview(data)[:got]  # shorter than its size said (being replaced): the seal fails
    start = payload_offset(view, head, digest=digest)
    return _npz_views(view[start:])


def _npz_views(view: memoryview) -> dict[str, np.ndarray]:
    arrays = {}
    reader = _Reader(view)
    with zipfile.ZipFile(reader) as npz:  # type: ignore[arg-type]  (reads headers only)
        infos = npz.infolist()
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
            raise ValueError(f"member {info.filename!r} is not a stored .npy array")
        reader.seek(info.header_offset)
        local = _LOCAL.unpack(reader.read(_LOCAL.size))
        if local[zipfile._FH_SIGNATURE] != zipfile.stringFileHeader:
            raise ValueError(f"member {info.filename!r} has no local header")
        start = (
            info.header_offset
            + _LOCAL.size
            + local[zipfile._FH_FILENAME_LENGTH]
            + local[zipfile._FH_EXTRA_FIELD_LENGTH]
        )
        arrays[info.filename[:-4]] = _array(view[start : start + info.file_size], info.filename)
    return arrays


def _array(member: memoryview, name: str) -> np.ndarray:
    """The ``.npy`` bytes ``member`` as an array viewing them."""
    reader = _Reader(member)
    version = np.lib.format.read_magic(reader)  # type: ignore[arg-type]
    read_header = _HEADERS.get(version, np.lib.format.read_array_header_2_0)
    shape, fortran, dtype = read_header(reader)  # type: ignore[arg-type]
    if dtype.hasobject:
        raise ValueError(f"member {name!r} holds Python objects, which are never loaded")
    count = int(np.prod(shape, dtype=np.int64))
    offset = reader.tell()
    if offset + count * dtype.itemsize > len(member):
        raise ValueError(f"member {name!r} is shorter than its header says")
    if count == 0:
        return np.empty(shape, dtype, order="F" if fortran else "C")
    flat = np.frombuffer(member, dtype=dtype, count=count, offset=offset)
    if not flat.flags.aligned:
        flat = flat.copy()
    if fortran:
        return flat.reshape(shape[::-1]).T
    return flat.reshape(shape)
