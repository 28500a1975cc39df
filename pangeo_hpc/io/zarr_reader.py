"""Read the arrays of a local Zarr v3 store chunk file by chunk file, decoded in place.

The stores :func:`pangeo_hpc.batch.pipeline.convert.to_zarr` writes hold whole fields per
chunk with one
Blosc codec. zarr-python decodes such a chunk into a buffer of its own, then copies it into
the result through its asyncio pipeline: half of a task's time on a 2-core machine. Here the
chunk file is read with one call and Blosc decodes it straight into the part of the output
it covers when that part is contiguous (always, for whole-field chunks read whole).

Only the layout ``to_zarr`` writes is handled: regular chunk grid, ``default`` chunk keys,
codecs ``bytes`` (little-endian) then optionally ``blosc``. :meth:`ZarrChunks.open` returns
``None`` for anything else, and the caller reads it with zarr-python.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import dask.array as dska
import numpy as np
import xarray as xr
from dask.base import tokenize

from pangeo_hpc.errors import DamagedInputError, DataNotFoundError, StorageError
from pangeo_hpc.inputs.periods import months
from pangeo_hpc.io.chunk_decoding import chunks_in, overlap
from pangeo_hpc.io.indexing import bounding_box, full_key

_DTYPES = {
    "bool": "?",
    **{f"int{n}": f"i{n // 8}" for n in (8, 16, 32, 64)},
    **{f"uint{n}": f"u{n // 8}" for n in (8, 16, 32, 64)},
    **{f"float{n}": f"f{n // 8}" for n in (16, 32, 64)},
}
_FILLS = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}


class ZarrChunks:
    """Array-like (``shape``, ``dtype``, ``ndim``, ``__getitem__``) over one Zarr v3 array
    of a local store; give it to ``dask.array.from_array(..., asarray=False)``.

    Parameters
    ----------
    path : Path
        The array's folder.
    shape : tuple[int, ...]
        The array's shape.
    chunks : tuple[int, ...]
        The chunk shape.
    dtype : np.dtype
        The dtype.
    fill_value : Any
        The value of an absent chunk.
    separator : str
        The chunk key separator.
    blosc : bool
        Whether chunks are Blosc-compressed.

    Examples
    --------
    >>> import os, tempfile, xarray as xr, zarr
    >>> tmp = tempfile.TemporaryDirectory()
    >>> store = os.path.join(tmp.name, "t2m.zarr")
    >>> ds = xr.Dataset({"t2m": (("time", "lat"), np.arange(6, dtype="f4").reshape(3, 2))})
    >>> enc = {"t2m": {"chunks": (2, 2), "compressors": [zarr.codecs.BloscCodec()]}}
    >>> _ = ds.to_zarr(store, zarr_format=3, consolidated=False, encoding=enc)
    >>> array = ZarrChunks.open(store, "t2m")
    >>> array.shape, array.chunks, array[1:3]
    ((3, 2), (2, 2), array([[2., 3.],
           [4., 5.]], dtype=float32))
    >>> tmp.cleanup()
    """

    __slots__ = ("blosc", "chunks", "dtype", "fill_value", "ndim", "path", "separator", "shape")

    def __init__(
        self,
        path: Path,
        shape: tuple[int, ...],
        chunks: tuple[int, ...],
        dtype: np.dtype,
        fill_value: Any,
        separator: str,
        blosc: bool,
    ) -> None:
        self.path = Path(path)
        self.shape, self.chunks = tuple(shape), tuple(chunks)
        self.dtype = np.dtype(dtype)
        self.ndim = len(self.shape)
        self.fill_value = fill_value
        self.separator = separator
        self.blosc = blosc

    @classmethod
    def open(cls, store: str | Path, name: str) -> ZarrChunks | None:
        """The array ``name`` of ``store``, or ``None`` if its layout is not the one handled.

        Parameters
        ----------
        store : str | Path
            A local store.
        name : str
            An array's name.

        Returns
        -------
        ZarrChunks or None
            The array, or ``None``.

        Examples
        --------
        >>> import os, tempfile, xarray as xr, zarr
        >>> tmp = tempfile.TemporaryDirectory()
        >>> store = os.path.join(tmp.name, "t2m.zarr")
        >>> ds = xr.Dataset({"t2m": (("time", "lat"), np.arange(6, dtype="f4").reshape(3, 2))})
        >>> enc = {"t2m": {"chunks": (2, 2), "compressors": [zarr.codecs.BloscCodec()]}}
        >>> _ = ds.to_zarr(store, zarr_format=3, consolidated=False, encoding=enc)
        >>> ZarrChunks.open(store, "t2m").blosc, ZarrChunks.open(store, "tp")
        (True, None)
        >>> tmp.cleanup()
        """
        try:
            meta = json.loads((Path(store) / name / "zarr.json").read_text())
        except (OSError, ValueError):
            return None
        try:
            if meta.get("zarr_format") != 3 or meta.get("node_type") != "array":
                return None
            if meta.get("storage_transformers") or meta["chunk_grid"]["name"] != "regular":
                return None
            keys = meta["chunk_key_encoding"]
            if keys["name"] != "default":
                return None
            dtype = np.dtype(_DTYPES[meta["data_type"]])
            codecs = meta["codecs"]
            first = codecs[0]
            endian = first.get("configuration", {}).get("endian", "little")
            if first["name"] != "bytes" or (endian != "little" and dtype.itemsize > 1):
                return None
            if len(codecs) > 2 or (len(codecs) == 2 and codecs[1]["name"] != "blosc"):
                return None
            if sys.byteorder != "little":
                return None
            fill = meta.get("fill_value")
            fill = _FILLS.get(fill, fill) if isinstance(fill, str) else fill
            return cls(
                Path(store) / name,
                tuple(meta["shape"]),
                tuple(meta["chunk_grid"]["configuration"]["chunk_shape"]),
                dtype.newbyteorder("<"),
                dtype.type(0 if fill is None else fill),
                keys.get("configuration", {}).get("separator", "/"),
                len(codecs) == 2,
            )
        except (KeyError, TypeError, IndexError):
            return None

    def __getitem__(self, key: object) -> np.ndarray:
        full = full_key(key, self.ndim)
        if not all(isinstance(k, slice | int | np.integer) for k in full):
            return self[(slice(None),) * self.ndim][full]  # index arrays: after reading
        box, post = bounding_box(full, self.shape)
        out = np.empty([hi - lo for lo, hi in box], dtype=self.dtype)
        for idx in chunks_in(box, self.chunks):
            src, dst = overlap(box, idx, self.chunks)
            self._chunk_into(idx, src, out[dst])
        return out[post]

    def _chunk_into(self, idx: tuple[int, ...], src: tuple[slice, ...], out: np.ndarray) -> None:
        file = self.path / ("c" + self.separator + self.separator.join(map(str, idx)))
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            out[...] = self.fill_value  # never written: the fill value
            return
        except OSError as exc:
            raise StorageError(f"reading {str(file)!r} failed ({exc}): restore the store") from exc
        whole = out.shape == self.chunks and out.flags.c_contiguous
        if not self.blosc:
            chunk = np.frombuffer(data, self.dtype)
            if chunk.size != int(np.prod(self.chunks)):
                raise DamagedInputError(f"{str(file)!r} is damaged: {len(data)} bytes; restore it")
            out[...] = chunk.reshape(self.chunks)[src]
            return
        from numcodecs import blosc

        try:
            if whole:
                blosc.decompress(data, out)
            else:
                dec = np.frombuffer(blosc.decompress(data), self.dtype)
                out[...] = dec.reshape(self.chunks)[src]
        except (RuntimeError, ValueError) as exc:
            raise DamagedInputError(
                f"{str(file)!r} is damaged ({exc}): restore it, or convert again"
            ) from exc


def _stamp(store: str | Path) -> tuple[int, int]:
    """Changes when the store is rewritten (``to_zarr`` renames a new store into place)."""
    st = (Path(store) / "zarr.json").stat()
    return st.st_ino, st.st_mtime_ns


def is_zarr_store(path: str | Path) -> bool:
    """Whether ``path`` is a Zarr store (v2 or v3) rather than an era5-pds tree.

    Parameters
    ----------
    path : str | Path
        A folder.

    Returns
    -------
    bool
        Whether it is a Zarr store.

    Examples
    --------
    >>> import os, tempfile, xarray as xr
    >>> tmp = tempfile.TemporaryDirectory()
    >>> store = os.path.join(tmp.name, "t2m.zarr")
    >>> ds = xr.Dataset({"t2m": ("time", [1.0, 2.0])})
    >>> _ = ds.to_zarr(store, zarr_format=3, consolidated=False)
    >>> is_zarr_store(store), is_zarr_store(tmp.name)
    (True, False)
    >>> tmp.cleanup()
    """
    p = Path(path)
    return p.is_dir() and any((p / n).is_file() for n in ("zarr.json", ".zgroup", ".zmetadata"))


def open_store(
    store: str | Path, variable: str, start: str | None = None, end: str | None = None
) -> Any:
    """The months ``start`` to ``end`` of ``variable`` in a store written by
    :func:`pangeo_hpc.batch.pipeline.convert.to_zarr`, as ``open_era5`` returns them (lazy,
    Dask-backed, one task per Zarr chunk).

    Parameters
    ----------
    store : str | Path
        A local store.
    variable : str
        The variable's name.
    start : str | None, optional
        First month (default: the store's).
    end : str | None, optional
        Last month (default: the store's).

    Returns
    -------
    xarray.Dataset
        Lazy, one variable.

    Raises
    ------
    DataNotFoundError
        When the store lacks the variable or the period.

    Examples
    --------
    >>> import dask, os, tempfile
    >>> from pangeo_hpc.batch.pipeline.convert import to_zarr
    >>> from pangeo_hpc.demo import DemoSpec
    >>> from pangeo_hpc.demo.writer import write_month
    >>> from pangeo_hpc.inputs.periods import months
    >>> tmp, spec = tempfile.TemporaryDirectory(), DemoSpec(resolution=10.0).resolved()
    >>> sst = "sea_surface_temperature"
    >>> root, store = os.path.join(tmp.name, "era5"), os.path.join(tmp.name, "sst.zarr")
    >>> for m in months("2000-01", "2000-02"):  # two months of demo files, 10 degree cells
    ...     _ = write_month(root, spec, sst, m)
    >>> with dask.config.set({"pangeo-hpc.catalog.cache": False}):  # no scan cache kept
    ...     report = to_zarr(root, store, sst)
    >>> ds = open_store(store, sst, "2000-02", "2000-02")
    >>> ds[sst].shape, str(ds[sst].time0[0].values)[:10]
    ((29, 19, 36), '2000-02-01')
    >>> tmp.cleanup()
    """
    ds = xr.open_zarr(store, consolidated=False)
    if variable not in ds.data_vars:
        raise DataNotFoundError(
            f"variable {variable!r} is not in the Zarr store {str(store)!r}: it holds "
            f"{sorted(ds.data_vars)}; pass one of those"
        )
    tname = ds[variable].dims[0]
    times = ds[tname].values
    first, last = str(times[0])[:7], str(times[-1])[:7]
    wanted = months(start or first, end or last)
    lo, hi = wanted[0], wanted[-1]
    if str(lo) < first or str(hi) > last:
        raise DataNotFoundError(
            f"the Zarr store {str(store)!r} holds {first}..{last}, not {lo}..{hi}: choose a "
            "period inside it with start=/end=, or convert more months",
            param=("start", "end"),
        )
    fast = ZarrChunks.open(store, variable)
    if fast is not None:  # chunk files decoded in place, not through zarr-python's pipeline
        lazy = dska.from_array(
            fast,
            chunks=ds[variable].data.chunks,
            lock=False,
            asarray=False,
            meta=np.empty((0,) * fast.ndim, fast.dtype),
            name=f"open_store-{variable}-" + tokenize(str(Path(store).resolve()), _stamp(store)),
        )
        ds = ds.assign({variable: ds[variable].copy(data=lazy)})
    hi_next = hi.next()
    out = ds[[variable]].sel(
        {
            tname: slice(
                np.datetime64(f"{lo}-01"), np.datetime64(f"{hi_next}-01") - np.timedelta64(1, "ns")
            )
        }
    )
    out.encoding["source_files"] = [str(store)]
    out.encoding["source_bytes"] = sum(
        p.stat().st_size for p in Path(store).rglob("*") if p.is_file()
    )
    out.encoding["source_access"] = "zarr"
    return out
