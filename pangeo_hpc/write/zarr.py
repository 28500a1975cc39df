"""Analysis-ready Zarr stores: whole-field chunks with one Blosc codec, written atomically.

NetCDF4 as ERA5 ships it (zlib + shuffle, 24x100x100 chunks) costs a zlib decode of every
byte at every analysis. A Zarr store written once with Blosc-zstd (byte shuffle, multi-threaded
decode several times faster than zlib) and chunks of whole fields over a few dozen time
steps serves the recipes (global means, climatologies, time-mean maps) with one read per
chunk. :func:`pangeo_hpc.batch.pipeline.convert.to_zarr` opens a tree and calls :func:`write_store`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.s3.options import S3Options
from pangeo_hpc.write.codecs import CODECS
from pangeo_hpc.write.marks import STORE_ATTR
from pangeo_hpc.write.targets import check_output, output_folder, where_in


@dataclass
class ConvertReport:
    """What :func:`write_store` wrote.

    Attributes
    ----------
    store : str
        The store written.
    variable : str
        The variable converted.
    time_steps : int
        Its time steps.
    chunks : tuple[int, ...]
        The chunk shape.
    bytes_uncompressed : int
        Bytes of the data.
    bytes_written : int
        Bytes of the store's files.
    seconds : float
        Seconds taken.

    Examples
    --------
    >>> report = ConvertReport("tas.zarr", "tas", time_steps=12, chunks=(1, 180, 360),
    ...                        bytes_uncompressed=3_110_400, bytes_written=1_000_000, seconds=2.0)
    >>> report.chunks
    (1, 180, 360)
    """

    store: str
    variable: str
    time_steps: int
    chunks: tuple[int, ...]
    bytes_uncompressed: int
    bytes_written: int
    seconds: float

    def summary(self) -> str:
        """One line for the log: the time steps, the store, the bytes before and after
        compression, the time and the rate.

        Returns
        -------
        str
            The line.

        Examples
        --------
        >>> report = ConvertReport("tas.zarr", "tas", time_steps=12, chunks=(1, 180, 360),
        ...                        bytes_uncompressed=3_110_400, bytes_written=1_000_000,
        ...                        seconds=2.0)
        >>> print(report.summary())
        convert: 12 time steps of tas -> tas.zarr (chunks (1, 180, 360)), 0.00 GB uncompressed
        in 0.00 GB (3.1:1), 2.0 s (2 MB/s)
        """
        ratio = self.bytes_uncompressed / max(self.bytes_written, 1)
        return (
            f"convert: {self.time_steps} time steps of {self.variable} -> {self.store} "
            f"(chunks {self.chunks}), {self.bytes_uncompressed / 1e9:.2f} GB uncompressed in "
            f"{self.bytes_written / 1e9:.2f} GB ({ratio:.1f}:1), {self.seconds:.1f} s "
            f"({self.bytes_uncompressed / 1e6 / max(self.seconds, 1e-9):.0f} MB/s)"
        )


def write_store(
    ds: Any,
    variable: str,
    store: str | Path,
    *,
    inputs: list[Any],
    chunk_mb: float | None = None,
    clevel: int | None = None,
    codec: str | None = None,
    overwrite: bool = False,
    s3: S3Options | None = None,
) -> ConvertReport:
    """Write ``variable`` of the lazy dataset ``ds`` as a Zarr store of whole-field chunks.

    Parameters
    ----------
    ds : xarray.Dataset
        The opened data (lazy; computed on the current Dask scheduler while it is written).
    variable : str
        The variable to write, with its coordinates.
    store : str or path
        The Zarr store (a folder). It appears complete or not at all: it is written under a
        temporary name and renamed; an existing one is replaced only if pangeo-hpc wrote it
        and ``overwrite`` is true. An ``s3://bucket/prefix`` receives the store under a run
        prefix of its own, made visible by ``PREFIX/summary.json`` written last
        (:mod:`pangeo_hpc.write.s3_outputs`); the report's ``store`` is the run's URL, which
        ``xr.open_zarr`` opens.
    inputs : list
        Where ``ds`` was read from: the store may not be, or be inside, any of them.
    chunk_mb : float, optional
        Uncompressed size of one chunk (whole fields, a multiple of days); default config
        ``pangeo-hpc.convert.chunk-mb``.
    clevel : int, optional
        Compression level 1-9; default config ``pangeo-hpc.convert.clevel``.
    codec : {"zstd", "lz4hc", "lz4"}, optional
        Blosc's compressor (byte shuffle first); default config ``pangeo-hpc.convert.codec``.
    overwrite : bool
        Replace an existing store that pangeo-hpc wrote.
    s3 : S3Options, optional
        Endpoint and credentials of a ``store`` on S3; default :meth:`S3Options.resolve`.

    Returns
    -------
    ConvertReport

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> import xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=4)
    >>> ds = xr.Dataset({"tas": (("time", "lat", "lon"), np.zeros((4, 2, 3), "f4"))},
    ...                 coords={"time": time, "lat": [0.0, 10.0], "lon": [0.0, 10.0, 20.0]})
    >>> report = write_store(ds.chunk(), "tas", "tas.zarr", inputs=["data/era5"])
    >>> report.time_steps, xr.open_zarr(report.store).tas.shape
    (4, (4, 2, 3))
    """
    from zarr.codecs import BloscCodec

    store = check_output(
        store, kind="zarr", inputs=inputs, flag="store", overwrite=overwrite, s3=s3
    )
    run, where = where_in(store)
    chunk_mb = float(config.get("convert.chunk-mb", chunk_mb))
    clevel = int(config.get("convert.clevel", clevel))
    codec = str(config.get("convert.codec", codec))
    if chunk_mb <= 0:
        raise InputError(
            f"chunk_mb={chunk_mb} must be > 0: the size of one chunk in MB, e.g. 256",
            param="chunk_mb",
        )
    if not 1 <= clevel <= 9:
        raise InputError(f"clevel={clevel} must be in 1..9, e.g. 5", param="clevel")
    if codec not in CODECS:
        raise InputError(f"codec={codec!r} is not one of {', '.join(CODECS)}", param="codec")
    t0 = time.perf_counter()
    da = ds[variable]
    step_bytes = int(np.prod(da.shape[1:])) * da.dtype.itemsize
    steps = max(1, min(da.shape[0], int(chunk_mb * 1e6 // step_bytes)))
    chunks = (steps, *da.shape[1:])
    out = ds[[variable]].chunk(dict(zip(da.dims, chunks, strict=True)))
    out.attrs[STORE_ATTR] = ", ".join(str(i) for i in inputs)
    blosc = BloscCodec(cname=codec, clevel=clevel, shuffle="shuffle", typesize=da.dtype.itemsize)
    encoding = {variable: {"chunks": chunks, "compressors": [blosc]}}
    for name in out.coords:
        out[name].encoding.pop("chunks", None)
    with output_folder(
        store, kind="zarr", inputs=inputs, flag="store", overwrite=overwrite, s3=s3, run=run
    ) as tmp:
        write_zarr(out, tmp, encoding=encoding)
        written = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
    return ConvertReport(
        store=where,
        variable=variable,
        time_steps=int(da.shape[0]),
        chunks=chunks,
        bytes_uncompressed=int(da.nbytes),
        bytes_written=written,
        seconds=time.perf_counter() - t0,
    )


def write_zarr(ds: Any, store: str | Path, **kwargs: Any) -> None:
    """Write the Dataset ``ds`` as a Zarr v3 store with consolidated metadata.

    Consolidated metadata let ``xr.open_zarr(store)`` open the store without a
    ``RuntimeWarning`` (it tries them first) and in one read. Format 3 stays: the chunk
    files are what :class:`~pangeo_hpc.io.zarr_reader.ZarrChunks` decodes in place, and a v2
    store would lose that fast path. zarr-python 3 writes v3 consolidated metadata inline
    in the root ``zarr.json`` with ``"must_understand": false`` (readers that do not know
    them ignore them) and warns, at writing only, that they are not in the v3 spec yet;
    that one warning is silenced here, where we chose them. Reading warns nothing
    (tests/recipes/test_cf_outputs.py opens the stores under ``warnings.simplefilter("error")``).

    Parameters
    ----------
    ds : Any
        The Dataset.
    store : str or Path
        The store's folder.
    **kwargs : Any
        More arguments of :meth:`xarray.Dataset.to_zarr`.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> write_zarr(xr.Dataset({"tas": ("x", np.zeros(3))}), "plain.zarr")
    >>> xr.open_zarr("plain.zarr").tas.shape
    (3,)
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Consolidated metadata is currently not part", category=UserWarning
        )
        ds.to_zarr(store, mode="w", consolidated=True, zarr_format=3, **kwargs)
