"""A lazy array over one variable split along time across many HDF5/NetCDF4 files.

Dask reads it block by block, without xarray's backend lock: each worker opens the file it
needs, reads whole fields, and decodes CF packing and fill values itself. Each file is read
by a *source*:

- :class:`H5Source`: a local or mounted file, with h5py (HDF5 serialises threads within one
  process: use process workers);
- :class:`S3H5Source`: an S3 object through s3fs and h5py (no index needed; many small
  requests);
- :class:`RefSource`: an S3 object through its byte-range index: the chunks a task needs
  are fetched as a few coalesced, concurrent range requests and decoded with numcodecs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import h5py
import numpy as np

from pangeo_hpc.errors import DamagedInputError, StorageError
from pangeo_hpc.io.byte_reads import ChunkStream, count_read, pread_ranges
from pangeo_hpc.io.chunk_decoding import CorruptChunkError
from pangeo_hpc.io.chunk_table import ChunkTable
from pangeo_hpc.io.indexing import bounding_box, full_key
from pangeo_hpc.s3.failures import explain
from pangeo_hpc.s3.options import S3Options, split_url

#: s3fs block size for HDF5 over S3: its default read-ahead cache is ~2x slower for HDF5
S3_BLOCK = 8 << 20


@dataclass(frozen=True, slots=True)
class Decoding:
    """CF decoding of stored values: fill/missing values become NaN, then scale and offset.

    Attributes
    ----------
    fill_values : tuple[float, ...]
        Values that mean missing (``_FillValue``, ``missing_value``).
    scale_factor : float | None
        ``scale_factor``, or ``None``.
    add_offset : float | None
        ``add_offset``, or ``None``.
    wide : bool
        Whether the packing attributes are float64 (CF 8.1 and xarray unpack to their type).

    Examples
    --------
    >>> attrs = {"_FillValue": -32767, "scale_factor": 0.01, "add_offset": 273.15}
    >>> decoding = Decoding.from_attrs(attrs)
    >>> decoding.apply(np.array([0, 100, -32767], dtype="i2"), np.dtype("f8"))
    array([273.15, 274.15,    nan])
    """

    fill_values: tuple[float, ...] = ()
    scale_factor: float | None = None
    add_offset: float | None = None
    #: the packing attributes are float64: CF (8.1) and xarray unpack to their type
    wide: bool = False

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        # dask's generic dataclass token takes 70 us each: 17 ms for a 20-year daily tree
        return ("Decoding", self.fill_values, self.scale_factor, self.add_offset, self.wide)

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any]) -> Decoding:
        """The decoding a variable's attributes (``_FillValue``, ``missing_value``,
        ``scale_factor``, ``add_offset``) say.

        Parameters
        ----------
        attrs : Mapping[str, Any]
            A variable's attributes.

        Returns
        -------
        Decoding
            The decoding.

        Examples
        --------
        >>> Decoding.from_attrs({"_FillValue": np.float32(-9999.0), "units": "K"})
        Decoding(fill_values=(-9999.0,), scale_factor=None, add_offset=None, wide=False)
        """
        fills: list[float] = []
        for key in ("_FillValue", "missing_value"):
            if key in attrs:
                fills += [float(v) for v in np.atleast_1d(attrs[key])]
        fills = [v for v in fills if not np.isnan(v)]

        def scalar(key: str) -> float | None:
            return float(np.atleast_1d(attrs[key])[0]) if key in attrs else None

        packing = [np.asarray(attrs[k]) for k in ("scale_factor", "add_offset") if k in attrs]
        wide = any(v.dtype.kind == "f" and v.dtype.itemsize > 4 for v in packing)
        return cls(tuple(dict.fromkeys(fills)), scalar("scale_factor"), scalar("add_offset"), wide)

    def value_dtype(self, stored: np.dtype) -> np.dtype:
        """The type values of ``stored`` type decode to: float64 when packed with float64
        ``scale_factor``/``add_offset`` (CF 8.1, as xarray), else float32 for stored
        types of up to 4 bytes and float64 for wider ones.

        Parameters
        ----------
        stored : np.dtype
            The stored dtype.

        Returns
        -------
        np.dtype
            The decoded dtype.

        Examples
        --------
        >>> Decoding().value_dtype(np.dtype("i2")), Decoding().value_dtype(np.dtype("f8"))
        (dtype('float32'), dtype('float64'))
        >>> Decoding(scale_factor=0.01, wide=True).value_dtype(np.dtype("i2"))  # float64 packing
        dtype('float64')
        """
        if self.wide or not (stored.kind in "fiu" and stored.itemsize <= 4):
            return np.dtype("f8")
        return np.dtype("f4")

    def apply(self, raw: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """Decode stored values: fill values become NaN, then scale and offset.

        Parameters
        ----------
        raw : np.ndarray
            Stored values.
        dtype : np.dtype
            The decoded dtype (:meth:`value_dtype`).

        Returns
        -------
        np.ndarray
            The values.

        Examples
        --------
        >>> packed = Decoding(fill_values=(-32767.0,), scale_factor=0.5, add_offset=10.0)
        >>> packed.apply(np.array([0, 4, -32767], dtype="i2"), np.dtype("f4"))
        array([10., 12., nan], dtype=float32)
        """
        out = raw.astype(dtype, copy=False)
        if self.fill_values:
            mask = np.isin(raw, self.fill_values)
            if mask.any():
                out = np.where(mask, np.nan, out).astype(dtype, copy=False)
        if self.scale_factor is not None:
            out = out * dtype.type(self.scale_factor)
        if self.add_offset is not None:
            out = out + dtype.type(self.add_offset)
        return out


class Fetched(NamedTuple):
    """The stored chunks a read needs, before decoding: ``table`` locates and decodes them,
    ``box`` is the block they are decoded into (``(lo, hi)`` per axis), ``post`` what the
    key takes out of it (:func:`~pangeo_hpc.io.indexing.bounding_box`); ``plan`` lists each
    chunk (grid index, byte offset, length) and ``payloads`` its bytes (``None`` for a
    chunk never written), or a :class:`~pangeo_hpc.io.byte_reads.ChunkStream` that reads
    them one at a time. A reduction can decode them chunk by chunk
    (:mod:`pangeo_hpc.io.fused`) instead of assembling the block.

    Attributes
    ----------
    table : ChunkTable
        Locates and decodes the chunks.
    box : list of (int, int)
        The block they are decoded into, ``(lo, hi)`` per axis.
    post : tuple
        What the key takes out of the block.
    plan : list of (tuple of int, int, int)
        Each chunk's grid index, byte offset and length.
    payloads : list or ChunkStream
        Each chunk's bytes (``None``: never written), or a ``ChunkStream``.

    Examples
    --------
    >>> import os, tempfile, numpy as np, pandas as pd, xarray as xr
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "t2m.nc")
    >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
    >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
    ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
    >>> enc = {"t2m": {"chunksizes": (1, 2, 4), "zlib": True}}
    >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
    >>> fetched = H5Source(path, "t2m").fetch((slice(0, 2), slice(None), slice(None)))
    >>> fetched.box, len(fetched.plan), fetched.complete()
    ([(0, 2), (0, 2), (0, 4)], 2, True)
    >>> tmp.cleanup()
    """

    table: ChunkTable
    box: list[tuple[int, int]]
    post: tuple
    plan: list[tuple[tuple[int, ...], int, int]]
    payloads: list[Any] | ChunkStream

    def complete(self) -> bool:
        """Whether every chunk has bytes (none was never written), read or not yet.

        Returns
        -------
        bool
            True when no chunk is missing.

        Examples
        --------
        >>> import os, tempfile, numpy as np, pandas as pd, xarray as xr
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "t2m.nc")
        >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
        >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
        ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
        >>> enc = {"t2m": {"chunksizes": (1, 2, 4), "zlib": True}}
        >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
        >>> H5Source(path, "t2m").fetch((0, slice(None), slice(None))).complete()
        True
        >>> tmp.cleanup()
        """
        if isinstance(self.payloads, ChunkStream):
            return self.payloads.complete
        return all(p is not None for p in self.payloads)


class Source(Protocol):
    """Reads a hyperslab of one variable of one file, as stored (before CF decoding).

    Examples
    --------
    >>> import os, tempfile, numpy as np, pandas as pd, xarray as xr
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "t2m.nc")
    >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
    >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
    ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
    >>> enc = {"t2m": {"chunksizes": (1, 2, 4), "zlib": True}}
    >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
    >>> source: Source = H5Source(path, "t2m")  # any class with read(key) is a Source
    >>> source.read((0, 0, slice(None)))
    array([0., 1., 2., 3.], dtype=float32)
    >>> tmp.cleanup()
    """

    def read(self, key: tuple[slice | int, ...]) -> np.ndarray:
        """The hyperslab ``key`` of the variable, as stored.

        Parameters
        ----------
        key : tuple[slice | int, ...]
            Indices along each axis (slices and integers).

        Returns
        -------
        np.ndarray
            The values.

        Examples
        --------
        >>> import os, tempfile, numpy as np, pandas as pd, xarray as xr
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "t2m.nc")
        >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
        >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
        ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
        >>> enc = {"t2m": {"chunksizes": (1, 2, 4), "zlib": True}}
        >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
        >>> source: Source = H5Source(path, "t2m")
        >>> source.read((slice(0, 3), 1, 3))
        array([ 7., 15., 23.], dtype=float32)
        >>> tmp.cleanup()
        """


@dataclass(frozen=True, slots=True)
class H5Source:
    """``variable`` of a local or mounted file.

    The chunks a read needs are located with HDF5's chunk index, read with ``pread`` in as
    few calls as they are contiguous on disk, and decoded by
    :class:`~pangeo_hpc.io.chunk_decoding.ChunkDecoder` (no HDF5 lock, one copy). Datasets with
    other filters or layouts are read with h5py.

    Attributes
    ----------
    path : str
        A local or mounted file.
    variable : str
        The variable's name.

    Examples
    --------
    >>> import os, tempfile, numpy as np, pandas as pd, xarray as xr
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "t2m.nc")
    >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
    >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
    ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
    >>> enc = {"t2m": {"chunksizes": (1, 2, 4), "zlib": True}}
    >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
    >>> H5Source(path, "t2m").read((slice(1, 2), 0, slice(None)))
    array([[ 8.,  9., 10., 11.]], dtype=float32)
    >>> tmp.cleanup()
    """

    path: str
    variable: str

    def __dask_tokenize__(self) -> tuple[str, str, str]:
        return ("H5Source", self.path, self.variable)  # as Decoding's: fast, same fields

    def read(self, key: tuple[slice | int, ...]) -> np.ndarray:
        """The hyperslab ``key`` of the variable, as stored.

        Parameters
        ----------
        key : tuple[slice | int, ...]
            Indices along each axis (slices and integers).

        Returns
        -------
        np.ndarray
            The values.

        Examples
        --------
        >>> import os, tempfile, numpy as np, pandas as pd, xarray as xr
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "t2m.nc")
        >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
        >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
        ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
        >>> enc = {"t2m": {"chunksizes": (1, 2, 4), "zlib": True}}
        >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
        >>> H5Source(path, "t2m").read((2, slice(None), slice(0, 2)))
        array([[16., 17.],
               [20., 21.]], dtype=float32)
        >>> tmp.cleanup()
        """
        fetched = self.fetch(key)
        if not isinstance(fetched, Fetched):  # read by h5py (a NumPy scalar for one value)
            return fetched
        return _assemble(*fetched, self.path)

    def fetch(self, key: tuple[slice | int, ...], *, stream: bool = False) -> Fetched | Any:
        """The chunks ``key`` needs as stored (see :data:`Fetched`), or, for a dataset the
        chunk reader does not take, the values themselves (read with h5py).

        With ``stream``, the chunks are not read yet: the payloads are a
        :class:`~pangeo_hpc.io.byte_reads.ChunkStream` that reads each chunk into one
        reused buffer as it is taken (for a reader that decodes chunk by chunk).

        Parameters
        ----------
        key : tuple[slice | int, ...]
            Indices along each axis (slices and integers).
        stream : bool
            Read the chunks as they are taken, not now (see above).

        Returns
        -------
        Fetched | Any
            The chunks, or the values.

        Raises
        ------
        DamagedInputError
            When the file ends before its chunks do.
        StorageError
            When reading fails otherwise.

        Examples
        --------
        >>> import os, tempfile, numpy as np, pandas as pd, xarray as xr
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "t2m.nc")
        >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
        >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
        ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
        >>> enc = {"t2m": {"chunksizes": (1, 2, 4), "zlib": True}}
        >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
        >>> fetched = H5Source(path, "t2m").fetch((slice(1, 3), slice(None), slice(None)))
        >>> [(index, length > 0) for index, offset, length in fetched.plan]
        [((1, 0, 0), True), ((2, 0, 0), True)]
        >>> tmp.cleanup()
        """
        try:
            with h5py.File(self.path, "r") as f:
                dset = f[self.variable]
                table = ChunkTable.from_h5(dset)
                if table is None:  # h5py takes no negative steps: read the box
                    box, post = bounding_box(key, dset.shape)
                    out = dset[tuple(slice(lo, hi) for lo, hi in box)][post]
                    count_read(out.nbytes)
                    return out
        except OSError as exc:
            # HDF5 says "truncated file: eof = ..." of a file shorter than its superblock
            # says: bad input; other errors may be the storage's (EIO)
            kind = DamagedInputError if "truncated file" in str(exc) else StorageError
            raise kind(
                f"reading {self.path!r} failed ({str(exc).splitlines()[0]}): the file may be "
                "truncated or still being copied; restore it"
            ) from exc
        box, post = bounding_box(key, table.shape)
        plan = table.plan(box)
        ranges = [(off, n) for _, off, n in plan]
        if stream:
            return Fetched(table, box, post, plan, ChunkStream(self.path, ranges))
        fd = os.open(self.path, os.O_RDONLY)
        try:
            payloads = pread_ranges(fd, ranges, self.path)
        finally:
            os.close(fd)
        return Fetched(table, box, post, plan, payloads)


@dataclass(frozen=True, slots=True)
class S3H5Source:
    """``variable`` of an S3 object, read with h5py through an s3fs file.

    Attributes
    ----------
    url : str
        The object's ``s3://`` URL.
    variable : str
        The variable's name.
    opts : S3Options
        How to reach S3.

    Examples
    --------
    >>> url = "s3://era5-pds/2008/01/data/air_temperature_at_2_metres.nc"
    >>> opts = S3Options(anon=True)
    >>> source = S3H5Source(url, "air_temperature_at_2_metres", opts)  # doctest: +SKIP
    >>> field = source.read((0, slice(None), slice(None)))  # 721 x 1440  # doctest: +SKIP
    """

    url: str
    variable: str
    opts: S3Options

    def read(self, key: tuple[slice | int, ...]) -> np.ndarray:
        """The hyperslab ``key`` of the variable, as stored, read through s3fs and h5py.

        Parameters
        ----------
        key : tuple[slice | int, ...]
            Indices along each axis (slices and integers).

        Returns
        -------
        np.ndarray
            The values.

        Raises
        ------
        StorageError
            When S3 fails while reading.

        Examples
        --------
        >>> source = S3H5Source("s3://era5-pds/2008/01/data/t2m.nc", "t2m", opts)  # doctest: +SKIP
        >>> source.read((slice(0, 24), 0, 0))  # doctest: +SKIP
        """
        from botocore.exceptions import BotoCoreError

        fs = self.opts.filesystem()
        try:
            with (
                fs.open(self.url, "rb", cache_type="blockcache", block_size=S3_BLOCK) as fo,
                h5py.File(fo, "r") as f,
            ):
                out = f[self.variable][key]
                count_read(out.nbytes)
                return out
        except (OSError, BotoCoreError) as exc:  # s3fs leaves connection errors as botocore's
            raise _storage_error(exc, self.url, self.opts) from exc


@dataclass(frozen=True, slots=True)
class RefSource:
    """``variable`` of an S3 object, read through its byte-range index (a :class:`ChunkTable`).

    Attributes
    ----------
    url : str
        The object's ``s3://`` URL.
    table : ChunkTable
        Its byte-range index.
    opts : S3Options
        How to reach S3.

    Examples
    --------
    >>> table = ChunkTable.from_refs(load_refs(stamp), "t2m")  # doctest: +SKIP
    >>> source = RefSource(stamp.path, table, S3Options.resolve())  # doctest: +SKIP
    >>> source.read((slice(0, 24), 0, 0))  # doctest: +SKIP
    """

    url: str
    table: ChunkTable
    opts: S3Options

    def read(self, key: tuple[slice | int, ...]) -> np.ndarray:
        """The hyperslab ``key`` of the variable, as stored, read by byte ranges.

        Parameters
        ----------
        key : tuple[slice | int, ...]
            Indices along each axis (slices and integers).

        Returns
        -------
        np.ndarray
            The values.

        Examples
        --------
        >>> source = RefSource("s3://era5-pds/2008/01/data/t2m.nc", table, opts)  # doctest: +SKIP
        >>> source.read((slice(0, 24), 0, slice(None)))  # doctest: +SKIP
        """
        return _assemble(*self.fetch(key), self.url)

    def fetch(self, key: tuple[slice | int, ...]) -> Fetched:
        """The chunks ``key`` needs as stored (see :data:`Fetched`).

        Parameters
        ----------
        key : tuple[slice | int, ...]
            Indices along each axis (slices and integers).

        Returns
        -------
        Fetched
            The chunks.

        Raises
        ------
        StorageError
            When S3 fails while reading.

        Examples
        --------
        >>> source = RefSource("s3://era5-pds/2008/01/data/t2m.nc", table, opts)  # doctest: +SKIP
        >>> fetched = source.fetch((slice(0, 24), slice(None), slice(None)))  # doctest: +SKIP
        """
        import obstore

        box, post = bounding_box(key, self.table.shape)
        plan = self.table.plan(box)
        ranged = [(off, off + n) for _, off, n in plan if off >= 0]
        fetched: list[Any] = []
        if ranged:
            bucket, path = split_url(self.url)
            try:
                fetched = obstore.get_ranges(
                    self.opts.store(bucket),
                    path,
                    starts=[a for a, _ in ranged],
                    ends=[b for _, b in ranged],
                )
            except Exception as exc:  # obstore's errors: not found, denied, network
                raise _storage_error(exc, self.url, self.opts) from exc
            count_read(sum(b - a for a, b in ranged))
        it = iter(fetched)
        payloads = [next(it) if off >= 0 else self.table.inline.get(idx) for idx, off, _ in plan]
        return Fetched(self.table, box, post, plan, payloads)


def _assemble(
    table: ChunkTable, box: list, post: tuple, plan: list, payloads: list, name: str
) -> np.ndarray:
    try:
        return table.assemble(box, plan, payloads)[post]
    except CorruptChunkError as exc:
        if not name.startswith("s3://"):
            raise DamagedInputError(
                f"{name!r} is damaged: {exc}; restore it from its source"
            ) from exc
        raise DamagedInputError(
            f"{name!r} is damaged: {exc}; restore it from its source (an index made before "
            "the object changed is rebuilt by build_index(..., rebuild=True))",
            commands={"build_index(..., rebuild=True)": ["index", "URL", "--rebuild"]},
        ) from exc


def _storage_error(exc: BaseException, url: str, opts: S3Options) -> StorageError:
    """One line: the known cause and its fix (naming ``url``), else what the client said."""
    known = explain(exc, url, opts)
    if known is None:
        return StorageError(f"reading {url!r} failed: {exc}".splitlines()[0])
    return StorageError(str(known).splitlines()[0], param=known.param, commands=known.commands)


class MultiFileArray:
    """Array-like view ``(time, *field_shape)`` over one variable in consecutive files.

    Indexing with slices and integers reads just the needed hyperslab; index arrays are
    applied after reading the rows they span. ``lengths[i]`` is the number of time steps in
    the file that ``sources[i]`` reads; ``decoding`` is one for all files or one per file
    (packed files of different years may differ in ``scale_factor``).

    Parameters
    ----------
    sources : Sequence[Source]
        What reads each file.
    lengths : Sequence[int]
        The number of time steps in each file.
    field_shape : tuple[int, ...]
        The shape of one time step.
    dtype : np.dtype
        The dtype of the decoded values.
    decoding : Decoding | Sequence[Decoding]
        One decoding for all files, or one per file.

    Examples
    --------
    >>> import os, tempfile, numpy as np, pandas as pd, xarray as xr
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "t2m.nc")
    >>> values = np.arange(24, dtype="f4").reshape(3, 2, 4)
    >>> ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values, {"units": "K"})},
    ...                 coords={"time": pd.date_range("2008-01-01", periods=3)})
    >>> enc = {"t2m": {"chunksizes": (1, 2, 4), "zlib": True}}
    >>> ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
    >>> source = H5Source(path, "t2m")  # the same file twice stands for two months
    >>> array = MultiFileArray([source, source], [3, 3], (2, 4), np.dtype("f4"), Decoding())
    >>> array.shape, array[2:4, 0, 0]  # rows 2 and 3 come from the first and the second file
    ((6, 2, 4), array([16.,  0.], dtype=float32))
    >>> tmp.cleanup()
    """

    __slots__ = ("_offsets", "decodings", "dtype", "lengths", "ndim", "shape", "sources")

    def __init__(
        self,
        sources: Sequence[Source],
        lengths: Sequence[int],
        field_shape: tuple[int, ...],
        dtype: np.dtype,
        decoding: Decoding | Sequence[Decoding],
    ) -> None:
        self.sources = list(sources)
        self.lengths = list(lengths)
        self._offsets = np.concatenate([[0], np.cumsum(self.lengths)]).astype(int)
        self.shape = (int(self._offsets[-1]), *field_shape)
        self.ndim = len(self.shape)
        self.dtype = np.dtype(dtype)
        self.decodings = (
            [decoding] * len(self.sources) if isinstance(decoding, Decoding) else list(decoding)
        )

    def __getitem__(self, key: object) -> np.ndarray:
        key = full_key(key, self.ndim)
        rows = np.arange(self.shape[0])[key[0]]
        scalar = np.ndim(rows) == 0
        rows = np.atleast_1d(rows)
        simple = all(isinstance(k, slice | int | np.integer) for k in key[1:])
        field_key = key[1:] if simple else (slice(None),) * (self.ndim - 1)
        if rows.size == 0:
            block = self._rows(0, 0, field_key)
        else:
            lo, hi = int(rows.min()), int(rows.max()) + 1
            block = self._rows(lo, hi, field_key)
            if not (isinstance(key[0], slice) and rows.size == hi - lo and rows[0] == lo):
                block = block[rows - lo]
        if not simple:
            block = block[(slice(None), *key[1:])]
        return block[0] if scalar else block

    def spans(self, start: int, stop: int) -> list[tuple[int, int, int, int]]:
        """The files that rows ``start:stop`` come from: ``(file, first, stop, at)``, the
        file's rows ``first:stop`` being rows ``at:`` of the span.

        Parameters
        ----------
        start : int
            First row.
        stop : int
            Row after the last.

        Returns
        -------
        list[tuple[int, int, int, int]]
            ``(file, first, stop, at)`` each.

        Examples
        --------
        >>> array = MultiFileArray([None, None], [3, 3], (2, 4), np.dtype("f4"), Decoding())
        >>> array.spans(2, 5)  # (file, first, stop, at)
        [(0, 2, 3, 0), (1, 0, 2, 1)]
        """
        out = []
        first = int(np.searchsorted(self._offsets, start, side="right")) - 1
        for i in range(max(first, 0), len(self.sources)):
            lo, hi = int(self._offsets[i]), int(self._offsets[i + 1])
            if lo >= stop:
                break
            a, b = max(start, lo) - lo, min(stop, hi) - lo
            if b > a:
                out.append((i, a, b, lo + a - start))
        return out

    def _rows(self, start: int, stop: int, field_key: tuple) -> np.ndarray:
        """Rows ``start:stop`` along time, each file read once."""
        parts = [self._read(i, (slice(a, b), *field_key)) for i, a, b, _ in self.spans(start, stop)]
        if not parts:
            shape = np.empty(self.shape[1:], dtype=bool)[field_key].shape
            return np.empty((0, *shape), dtype=self.dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _read(self, i: int, key: tuple[slice, ...]) -> np.ndarray:
        return self.decodings[i].apply(self.sources[i].read(key), self.dtype)
