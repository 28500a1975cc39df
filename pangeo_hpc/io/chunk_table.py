"""Where each compressed chunk of one variable lies in one NetCDF4/HDF5 object, and how to
decode it: built from a kerchunk reference set (:mod:`pangeo_hpc.io.references`) for S3
objects, or from h5py's chunk index for local files; read by
:mod:`pangeo_hpc.io.reader`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ChunkTable:
    """Where each compressed chunk of one variable lies in one object, and how to decode it.

    Built from kerchunk references by :meth:`from_refs`; small enough to travel inside a Dask
    graph (two integer arrays over the chunk grid).

    Attributes
    ----------
    shape, chunks : tuple of int
        The array's and one chunk's shape.
    dtype : numpy.dtype
        Stored dtype.
    fill_value : scalar
        Value of chunks that were never written.
    codecs : tuple of dict
        numcodecs configurations, in the order they are undone (decompressor first).
    offsets, lengths : numpy.ndarray
        Per chunk of the chunk grid: byte offset and length in the object; -1 if the chunk
        is absent or stored inline.
    inline : dict
        Chunk grid index -> bytes, for chunks kept in the index itself.

    Examples
    --------
    >>> import json
    >>> zarray = {"shape": [8], "chunks": [4], "dtype": "<f4", "fill_value": None,
    ...           "compressor": {"id": "zlib"}, "filters": None}
    >>> refs = {"t2m/.zarray": json.dumps(zarray), "t2m/0": ["s3://b/t.nc", 100, 18],
    ...         "t2m/1": ["s3://b/t.nc", 118, 21]}
    >>> table = ChunkTable.from_refs(refs, "t2m")
    >>> table.shape, table.chunks, table.offsets.tolist(), table.lengths.tolist()
    ((8,), (4,), [100, 118], [18, 21])
    """

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype
    fill_value: Any
    codecs: tuple[dict[str, Any], ...]
    offsets: np.ndarray
    lengths: np.ndarray
    inline: dict[tuple[int, ...], bytes]

    @classmethod
    def from_refs(cls, refs: dict[str, Any], variable: str) -> ChunkTable:
        """The table of ``variable`` in a kerchunk reference set (version 1).

        Parameters
        ----------
        refs : dict[str, Any]
            A kerchunk reference set.
        variable : str
            The variable's name.

        Returns
        -------
        ChunkTable
            The table.

        Raises
        ------
        KeyError
            When ``variable`` is not in ``refs``.
        ValueError
            When a reference has no byte range.

        Examples
        --------
        >>> import json
        >>> zarray = {"shape": [8], "chunks": [4], "dtype": "<f4", "fill_value": None,
        ...           "compressor": {"id": "zlib"}, "filters": None}
        >>> refs = {"t2m/.zarray": json.dumps(zarray), "t2m/0": ["s3://b/t.nc", 100, 18]}
        >>> table = ChunkTable.from_refs(refs, "t2m")
        >>> table.offsets.tolist(), table.lengths.tolist()  # chunk 1 never written
        ([100, -1], [18, -1])
        """
        r = refs.get("refs", refs)
        zarray = r.get(f"{variable}/.zarray")
        if zarray is None:
            names = sorted(k.split("/")[0] for k in r if k.endswith("/.zarray"))
            raise KeyError(f"variable {variable!r} is not in the index; it has {names}")
        meta = json.loads(zarray) if isinstance(zarray, str) else zarray
        shape, chunks = tuple(meta["shape"]), tuple(meta["chunks"])
        sep = meta.get("dimension_separator", ".")
        grid = tuple(-(-n // c) for n, c in zip(shape, chunks, strict=True)) if shape else ()
        offsets = np.full(grid, -1, dtype=np.int64)
        lengths = np.full(grid, -1, dtype=np.int64)
        inline: dict[tuple[int, ...], bytes] = {}
        prefix = f"{variable}/"
        for key, value in r.items():
            if not key.startswith(prefix) or key.rsplit("/", 1)[-1].startswith("."):
                continue
            idx = tuple(int(i) for i in key[len(prefix) :].split(sep)) if shape else ()
            if isinstance(value, list):
                if len(value) == 3:
                    offsets[idx], lengths[idx] = value[1], value[2]
                else:  # a whole object as one chunk: not produced for HDF5 chunks
                    raise ValueError(f"{key}: reference {value!r} has no byte range")
            else:
                inline[idx] = _inline_bytes(value)
        codecs = [*(meta.get("filters") or [])]
        if meta.get("compressor"):
            codecs.append(meta["compressor"])
        fill = meta.get("fill_value")
        dtype = np.dtype(meta["dtype"])
        if isinstance(fill, str):
            fill = float(fill)
        return cls(
            shape=shape,
            chunks=chunks,
            dtype=dtype,
            fill_value=dtype.type(0) if fill is None else dtype.type(fill),
            codecs=tuple(reversed(codecs)),
            offsets=offsets,
            lengths=lengths,
            inline=inline,
        )

    def plan(self, box: Sequence[tuple[int, int]]) -> list[tuple[tuple[int, ...], int, int]]:
        """The chunks that overlap ``box`` (per axis ``(lo, hi)``): grid index, offset, length.

        Parameters
        ----------
        box : Sequence[tuple[int, int]]
            ``(lo, hi)`` per axis.

        Returns
        -------
        list[tuple[tuple[int, ...], int, int]]
            ``(grid index, offset, length)`` each.

        Examples
        --------
        >>> import json
        >>> zarray = {"shape": [8], "chunks": [4], "dtype": "<f4", "fill_value": None,
        ...           "compressor": {"id": "zlib"}, "filters": None}
        >>> refs = {"t2m/.zarray": json.dumps(zarray), "t2m/0": ["s3://b/t.nc", 100, 18],
        ...         "t2m/1": ["s3://b/t.nc", 118, 21]}
        >>> ChunkTable.from_refs(refs, "t2m").plan([(2, 6)])  # elements 2..5 span both chunks
        [((0,), 100, 18), ((1,), 118, 21)]
        """
        from pangeo_hpc.io.chunk_decoding import chunks_in

        return [
            (idx, int(self.offsets[idx]), int(self.lengths[idx]))
            for idx in chunks_in(box, self.chunks)
        ]

    @classmethod
    def from_h5(cls, dset: Any) -> ChunkTable | None:
        """The table of an open h5py dataset, from HDF5's chunk index (``chunk_iter``).

        ``None`` when the dataset is not chunked or uses a filter other than shuffle and
        deflate (read it with h5py then), or when a chunk skipped a filter.

        Parameters
        ----------
        dset : Any
            An open h5py dataset.

        Returns
        -------
        ChunkTable or None
            The table, or ``None``.

        Examples
        --------
        >>> import os, tempfile, h5py, numpy as np
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     with h5py.File(os.path.join(tmp, "t.nc"), "w") as f:
        ...         dset = f.create_dataset("t2m", data=np.arange(8.0), chunks=(4,), compression=4)
        ...         table = ChunkTable.from_h5(dset)
        >>> table.chunks, table.offsets.shape, [c["id"] for c in table.codecs]
        ((4,), (2,), ['zlib'])
        """
        import h5py

        plist = dset.id.get_create_plist()
        if plist.get_layout() != h5py.h5d.CHUNKED or dset.ndim == 0:
            return None
        codecs: list[dict[str, Any]] = []
        for i in range(plist.get_nfilters()):
            code, _, values, _ = plist.get_filter(i)
            if code == h5py.h5z.FILTER_SHUFFLE:
                codecs.append({"id": "shuffle", "elementsize": dset.dtype.itemsize})
            elif code == h5py.h5z.FILTER_DEFLATE:
                codecs.append({"id": "zlib", "level": int(values[0]) if values else 1})
            else:
                return None
        chunks = tuple(dset.chunks)
        grid = tuple(-(-n // c) for n, c in zip(dset.shape, chunks, strict=True))
        offsets = np.full(grid, -1, dtype=np.int64)
        lengths = np.full(grid, -1, dtype=np.int64)
        masked: list[int] = []

        def visit(info: Any) -> None:
            idx = tuple(o // c for o, c in zip(info.chunk_offset, chunks, strict=True))
            offsets[idx], lengths[idx] = info.byte_offset, info.size
            if info.filter_mask:
                masked.append(info.filter_mask)

        dset.id.chunk_iter(visit)
        if masked:
            return None
        fill = dset.fillvalue
        return cls(
            shape=tuple(dset.shape),
            chunks=chunks,
            dtype=dset.dtype,
            fill_value=dset.dtype.type(0) if fill is None else dset.dtype.type(fill),
            codecs=tuple(reversed(codecs)),
            offsets=offsets,
            lengths=lengths,
            inline={},
        )

    def assemble(
        self,
        box: Sequence[tuple[int, int]],
        plan: Sequence[tuple[tuple[int, ...], int, int]],
        payloads: Sequence[Any],
    ) -> np.ndarray:
        """Decode the chunks of ``plan`` (``payloads[i]`` is chunk i's bytes, or ``None``
        when absent) into the array of ``box``.

        Parameters
        ----------
        box : Sequence[tuple[int, int]]
            ``(lo, hi)`` per axis.
        plan : Sequence[tuple[tuple[int, ...], int, int]]
            What :meth:`plan` gave.
        payloads : Sequence[Any]
            Each chunk's bytes, or ``None``.

        Returns
        -------
        np.ndarray
            The array of ``box``.

        Raises
        ------
        CorruptChunkError
            Naming the chunk that does not decode: its grid index, first element, byte
            offset and size (``chunk (1, 0, 1) at [24, 0, 100] (byte 702662, 90658 bytes)``).

        Examples
        --------
        >>> import json, zlib, numpy as np
        >>> a = zlib.compress(np.arange(4, dtype="<f4").tobytes())
        >>> b = zlib.compress(np.arange(4, 8, dtype="<f4").tobytes())
        >>> zarray = {"shape": [8], "chunks": [4], "dtype": "<f4", "fill_value": None,
        ...           "compressor": {"id": "zlib"}, "filters": None}
        >>> refs = {"t2m/.zarray": json.dumps(zarray), "t2m/0": ["t.nc", 0, len(a)],
        ...         "t2m/1": ["t.nc", len(a), len(b)]}
        >>> table = ChunkTable.from_refs(refs, "t2m")
        >>> plan = table.plan([(2, 6)])
        >>> table.assemble([(2, 6)], plan, [a, b])
        array([2., 3., 4., 5.], dtype=float32)
        """
        from pangeo_hpc.io.chunk_decoding import ChunkDecoder, CorruptChunkError, overlap

        decoder = ChunkDecoder(self.codecs, self.chunks, self.dtype)
        out = np.empty([hi - lo for lo, hi in box], dtype=self.dtype)
        for (idx, offset, size), payload in zip(plan, payloads, strict=True):
            src, dst = overlap(box, idx, self.chunks)
            if payload is None:
                out[dst] = self.fill_value
                continue
            try:
                decoder.decode_into(payload, src, out[dst])
            except CorruptChunkError as exc:
                first = [i * c for i, c in zip(idx, self.chunks, strict=True)]
                where = f"byte {offset}, {size} bytes" if offset >= 0 else "inline"
                chunk = f"chunk {tuple(idx)} at {first} ({where})"
                raise CorruptChunkError(exc.reason, chunk) from exc
        return out


def _inline_bytes(value: str | bytes) -> bytes:
    if isinstance(value, bytes):
        return value
    if value.startswith("base64:"):
        return base64.b64decode(value[len("base64:") :])
    return value.encode()
