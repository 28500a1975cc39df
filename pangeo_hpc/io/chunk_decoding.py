"""Decoding of compressed chunks (deflate, byte shuffle) straight into the output array.

ERA5 NetCDF4 files store each chunk shuffled then deflated. Decoding dominates a read: on
this project's 2-core reference machine stdlib ``zlib`` inflates ~250-480 MB/s a core,
libdeflate (the PyPI package ``deflate``) about twice that, and HDF5's own pipeline adds a
copy per chunk. Here a chunk is inflated with libdeflate (``zlib`` when it is missing) and
un-shuffled by a compiled loop that writes into the part of the output array the chunk
covers, so the decoded bytes are touched once.

Codec chains other than ``[zlib]``, ``[zlib, shuffle]`` and ``[shuffle]`` (in decode order)
go through numcodecs, value for value the same, only slower.
"""

from __future__ import annotations

import sys
import threading
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pangeo_hpc.jit import njit, use_twins

try:  # libdeflate: ~2x stdlib zlib; optional so a missing wheel never breaks reading
    from deflate import zlib_decompress as _libdeflate
except ImportError:  # pragma: no cover - exercised where the wheel is absent
    _libdeflate = None

#: decode-order codec ids handled here without numcodecs
_FAST = {("zlib",), ("zlib", "shuffle"), ("shuffle",)}


def chunks_in(box: Sequence[tuple[int, int]], chunks: Sequence[int]) -> list[tuple[int, ...]]:
    """Grid indices of the chunks (shape ``chunks``) that overlap ``box`` (``(lo, hi)`` per
    axis), in C order.

    Parameters
    ----------
    box : Sequence[tuple[int, int]]
        ``(lo, hi)`` per axis.
    chunks : Sequence[int]
        The chunk shape.

    Returns
    -------
    list[tuple[int, ...]]
        Chunk grid indices.

    Examples
    --------
    >>> chunks_in([(0, 5), (2, 7)], [4, 4])  # a 5x5 box on a grid of 4x4 chunks
    [(0, 0), (0, 1), (1, 0), (1, 1)]
    """
    ranges = [range(lo // c, -(-hi // c)) for (lo, hi), c in zip(box, chunks, strict=True)]
    return [
        tuple(r[i] for r, i in zip(ranges, idx, strict=True))
        for idx in np.ndindex(*map(len, ranges))
    ]


def overlap(
    box: Sequence[tuple[int, int]], idx: Sequence[int], chunks: Sequence[int]
) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
    """Where chunk ``idx`` and ``box`` meet: the slices in the chunk and in the box's array.

    Parameters
    ----------
    box : Sequence[tuple[int, int]]
        ``(lo, hi)`` per axis.
    idx : Sequence[int]
        A chunk's grid index.
    chunks : Sequence[int]
        The chunk shape.

    Returns
    -------
    tuple[tuple[slice, ...], tuple[slice, ...]]
        Slices into the chunk, and into the box's array.

    Examples
    --------
    >>> overlap([(0, 5), (2, 7)], (1, 0), [4, 4])  # chunk (1, 0): rows 4..7, columns 0..3
    ((slice(0, 1, None), slice(2, 4, None)), (slice(4, 5, None), slice(0, 2, None)))
    """
    src, dst = [], []
    for (lo, hi), i, c in zip(box, idx, chunks, strict=True):
        a, b = max(lo, i * c), min(hi, (i + 1) * c)
        src.append(slice(a - i * c, b - i * c))
        dst.append(slice(a - lo, b - lo))
    return tuple(src), tuple(dst)


class CorruptChunkError(ValueError):
    """A chunk's bytes do not decode: the file or object is damaged.

    Parameters
    ----------
    reason : str
        What went wrong, as a predicate: ``"does not inflate (...)"``.
    chunk : str
        Which chunk: ``"a chunk of 90658 bytes"``, or where it is once known
        (:meth:`pangeo_hpc.io.chunk_table.ChunkTable.assemble`).

    Examples
    --------
    >>> str(CorruptChunkError("does not inflate", "a chunk of 12 bytes"))
    'a chunk of 12 bytes does not inflate'
    """

    def __init__(self, reason: str, chunk: str = "a chunk") -> None:
        super().__init__(reason, chunk)
        self.reason = reason
        self.chunk = chunk

    def __str__(self) -> str:
        return f"{self.chunk} {self.reason}"


def _whole(raw: Any, nbytes: int) -> Any:
    """``raw``, if it holds at least the ``nbytes`` of a chunk."""
    if memoryview(raw).nbytes < nbytes:
        raise CorruptChunkError(f"decodes to {memoryview(raw).nbytes} bytes, not {nbytes}")
    return raw


def inflate(payload: Any, nbytes: int) -> bytes:
    """Inflate one zlib stream whose decoded size is ``nbytes``.

    Parameters
    ----------
    payload : Any
        Deflated bytes.
    nbytes : int
        Their decoded size.

    Returns
    -------
    bytes
        The decoded bytes.

    Raises
    ------
    CorruptChunkError
        When the stream does not inflate to ``nbytes``.

    Examples
    --------
    >>> import zlib
    >>> inflate(zlib.compress(b"abcd"), 4)
    bytearray(b'abcd')
    >>> inflate(b"xx", 4)
    Traceback (most recent call last):
    ...
    pangeo_hpc.io.chunk_decoding.CorruptChunkError: a chunk of 2 bytes does not inflate (...)
    """
    try:
        if _libdeflate is not None:
            return _libdeflate(payload, nbytes)
        out = zlib.decompress(payload, bufsize=nbytes)
    except Exception as exc:  # deflate.DeflateError, zlib.error
        raise CorruptChunkError(
            f"does not inflate ({exc})", f"a chunk of {len(payload)} bytes"
        ) from exc
    if len(out) != nbytes:
        raise CorruptChunkError(f"inflates to {len(out)} bytes, not {nbytes}")
    return out


@njit
def _unshuffle4(src, out):  # pragma: no cover - jitted
    """Un-shuffle the 4 byte planes of ``src`` into ``out`` (contiguous uint32, same size):
    one contiguous loop that the compiler vectorises."""
    n = out.size
    for p in range(n):
        out[p] = (
            np.uint32(src[p])
            | (np.uint32(src[n + p]) << 8)
            | (np.uint32(src[2 * n + p]) << 16)
            | (np.uint32(src[3 * n + p]) << 24)
        )


def _unshuffle4_numpy(src: np.ndarray, out: np.ndarray) -> None:
    """:func:`_unshuffle4` with NumPy (a byte shuffle: the same bits), for a process where
    numba has not started (:func:`pangeo_hpc.jit.use_twins`)."""
    planes = src[: 4 * out.size].reshape(4, out.size)
    shifted = _scratch(out.size, "shifted")  # no array made per plane (a page fault each)
    np.copyto(out, planes[0])
    for b in (1, 2, 3):
        np.left_shift(planes[b], np.uint32(8 * b), out=shifted, dtype=np.uint32)
        np.bitwise_or(out, shifted, out=out)


def _unshuffle_numpy(src: np.ndarray, itemsize: int) -> np.ndarray:
    """:func:`_unshuffle` with NumPy (the same bytes)."""
    n = src.size // itemsize
    out = np.empty(src.size, np.uint8)
    out[: n * itemsize].reshape(n, itemsize)[...] = src[: n * itemsize].reshape(itemsize, n).T
    out[n * itemsize :] = src[n * itemsize :]
    return out


_SCRATCH = threading.local()


def _scratch(n: int, name: str = "buf") -> np.ndarray:
    """A contiguous uint32 buffer of ``n`` elements, reused by this thread (one chunk: it
    stays in cache between un-shuffling and copying out); one per ``name``."""
    buf = getattr(_SCRATCH, name, None)
    if buf is None or buf.size < n:
        buf = np.empty(n, np.uint32)
        setattr(_SCRATCH, name, buf)
    return buf[:n]


@njit
def _unshuffle(src, itemsize):  # pragma: no cover - jitted
    """Un-shuffled copy of ``src`` (bytes of ``len(src) // itemsize`` elements)."""
    n = src.size // itemsize
    out = np.empty(src.size, np.uint8)
    for i in range(n):
        for b in range(itemsize):
            out[i * itemsize + b] = src[b * n + i]
    out[n * itemsize :] = src[n * itemsize :]  # HDF5 leaves a ragged tail as it is
    return out


class ChunkDecoder:
    """Decodes chunks of one shape and dtype through a codec chain.

    Parameters
    ----------
    codecs : sequence of dict
        numcodecs configurations in the order they are undone (decompressor first).
    chunks : tuple of int
        The chunk shape.
    dtype : numpy.dtype
        The stored dtype.

    Examples
    --------
    >>> import zlib, numpy as np
    >>> decoder = ChunkDecoder([{"id": "zlib"}], (2, 3), np.dtype("<f4"))
    >>> decoder.decode(zlib.compress(np.arange(6, dtype="<f4").tobytes()))
    array([[0., 1., 2.],
           [3., 4., 5.]], dtype=float32)
    """

    def __init__(
        self, codecs: Sequence[Mapping[str, Any]], chunks: tuple[int, ...], dtype: np.dtype
    ) -> None:
        self.codecs = tuple(dict(c) for c in codecs)
        self.chunks = tuple(int(c) for c in chunks)
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.chunks)) * self.dtype.itemsize
        ids = tuple(c["id"] for c in self.codecs)
        shuffle = [c for c in self.codecs if c["id"] == "shuffle"]
        self.fast = ids in _FAST and all(
            int(c.get("elementsize", self.dtype.itemsize)) == self.dtype.itemsize for c in shuffle
        )
        self._shuffled = bool(shuffle)
        self._numcodecs: list[Any] | None = None

    def decode(self, payload: Any) -> np.ndarray:
        """One chunk as an array of the chunk shape.

        Parameters
        ----------
        payload : Any
            The chunk's stored bytes.

        Returns
        -------
        np.ndarray
            The chunk.

        Raises
        ------
        CorruptChunkError
            If the bytes do not decode, or decode to fewer bytes than a chunk holds.

        Examples
        --------
        >>> import zlib, numpy as np
        >>> decoder = ChunkDecoder([{"id": "zlib"}], (4,), np.dtype("<f4"))
        >>> decoder.decode(zlib.compress(np.arange(4, dtype="<f4").tobytes()))
        array([0., 1., 2., 3.], dtype=float32)
        """
        if self.fast:
            buf = self._stored_bytes(payload)
            if self._shuffled and self.dtype.itemsize > 1:
                buf = (_unshuffle_numpy if use_twins() else _unshuffle)(buf, self.dtype.itemsize)
        else:
            if self._numcodecs is None:
                from numcodecs import get_codec

                self._numcodecs = [get_codec(dict(c)) for c in self.codecs]
            raw = payload
            for codec in self._numcodecs:
                try:
                    raw = codec.decode(raw)
                except Exception as exc:  # each codec raises its own (RuntimeError, ...)
                    raise CorruptChunkError(
                        f"does not decode with {codec.codec_id} ({exc})",
                        f"a chunk of {len(payload)} bytes",
                    ) from exc
            buf = np.frombuffer(_whole(raw, self.nbytes), np.uint8, count=self.nbytes)
        return buf.view(self.dtype).reshape(self.chunks)

    def _stored_bytes(self, payload: Any) -> np.ndarray:
        """The bytes of a chunk of the fast chains, inflated if deflated (uint8)."""
        raw = inflate(payload, self.nbytes) if self.codecs[0]["id"] == "zlib" else payload
        return np.frombuffer(_whole(raw, self.nbytes), np.uint8, count=self.nbytes)

    def decode_view(self, payload: Any) -> np.ndarray:
        """One chunk as an array of the chunk shape, in a buffer this thread reuses: valid
        until the thread decodes its next chunk with this method (read it first). Shuffled
        4-byte values are un-shuffled by the loop :meth:`decode_into` uses, the others
        decoded by :meth:`decode`.

        Parameters
        ----------
        payload : Any
            The chunk's stored bytes.

        Returns
        -------
        np.ndarray
            The chunk (a view of the thread's buffer, or a new array).

        Raises
        ------
        CorruptChunkError
            If the bytes do not decode, or decode to fewer bytes than a chunk holds.

        Examples
        --------
        >>> import numcodecs, zlib, numpy as np
        >>> decoder = ChunkDecoder([{"id": "zlib"}, {"id": "shuffle", "elementsize": 4}],
        ...                        (2, 2), np.dtype("<f4"))
        >>> stored = numcodecs.Shuffle(4).encode(np.arange(4, dtype="<f4"))
        >>> decoder.decode_view(zlib.compress(stored))
        array([[0., 1.],
               [2., 3.]], dtype=float32)
        """
        if not (self.fast and self._shuffled and self.dtype.itemsize == 4):
            return self.decode(payload)
        buf = self._stored_bytes(payload)
        chunk = _scratch(self.nbytes // 4, "view")
        (_unshuffle4_numpy if use_twins() else _unshuffle4)(buf, chunk)
        return chunk.view(self.dtype).reshape(self.chunks)

    def decode_into(self, payload: Any, src: tuple[slice, ...], out: np.ndarray) -> None:
        """Decode one chunk and write its part ``src`` into ``out`` (a view of that shape).

        Parameters
        ----------
        payload : Any
            The chunk's stored bytes.
        src : tuple[slice, ...]
            The part of the chunk wanted.
        out : np.ndarray
            Where it goes (a view of that shape).

        Examples
        --------
        >>> import zlib, numpy as np
        >>> decoder = ChunkDecoder([{"id": "zlib"}], (2, 3), np.dtype("<f4"))
        >>> out = np.zeros((2, 2), dtype="<f4")
        >>> payload = zlib.compress(np.arange(6, dtype="<f4").tobytes())
        >>> decoder.decode_into(payload, np.s_[:, 1:], out)
        >>> out
        array([[1., 2.],
               [4., 5.]], dtype=float32)
        """
        if (
            self.fast
            and self._shuffled
            and self.dtype.itemsize == 4
            and len(self.chunks) == 3
            and sys.byteorder == "little"
            and out.dtype == self.dtype
        ):
            buf = self._stored_bytes(payload)
            # un-shuffled into a small contiguous buffer, then copied out: writing straight
            # into the strided result was 3-10x slower (no vector loop, a fault per page)
            chunk = _scratch(self.nbytes // 4)
            (_unshuffle4_numpy if use_twins() else _unshuffle4)(buf, chunk)
            out.view(np.uint32)[...] = chunk.reshape(self.chunks)[src]
        else:
            out[...] = self.decode(payload)[src]
