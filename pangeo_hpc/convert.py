"""Convert an era5-pds tree once into an analysis-ready Zarr store, for repeated analyses.

NetCDF4 as ERA5 ships it (zlib + shuffle, 24x100x100 chunks) costs a zlib decode of every
byte at every analysis. A Zarr store written once with Blosc-zstd (byte shuffle, multi-threaded
decode several times faster than zlib) and chunks of whole fields over a few dozen time
steps serves the recipes here (global means, climatologies, time-mean maps) with one read
per chunk. ``open_era5(source=store)`` and ``run RECIPE --data store`` read it like a tree.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import config
from .errors import InputError
from .guard import STORE_ATTR, check_folder
from .outputs import atomic_dir
from .zarr_reader import ZarrChunks


@dataclass
class ConvertReport:
    """What :func:`to_zarr` wrote."""

    store: str
    variable: str
    time_steps: int
    chunks: tuple[int, ...]
    bytes_uncompressed: int
    bytes_written: int
    seconds: float

    def summary(self) -> str:
        ratio = self.bytes_uncompressed / max(self.bytes_written, 1)
        return (
            f"convert: {self.time_steps} time steps of {self.variable} -> {self.store} "
            f"(chunks {self.chunks}), {self.bytes_uncompressed / 1e9:.2f} GB uncompressed in "
            f"{self.bytes_written / 1e9:.2f} GB ({ratio:.1f}:1), {self.seconds:.1f} s "
            f"({self.bytes_uncompressed / 1e6 / max(self.seconds, 1e-9):.0f} MB/s)"
        )


#: Blosc compressors ``convert`` offers
CODECS = ("zstd", "lz4hc", "lz4")


def to_zarr(
    source: str | Path | None,
    store: str | Path,
    variable: str = "sea_surface_temperature",
    start: str | None = None,
    end: str | None = None,
    *,
    chunk_mb: float | None = None,
    clevel: int | None = None,
    codec: str | None = None,
    overwrite: bool = False,
    **open_kwargs: Any,
) -> ConvertReport:
    """Write ``variable`` from ``start`` to ``end`` of an era5-pds tree as a Zarr store.

    Parameters
    ----------
    source : str or path, optional
        The tree: a folder or ``s3://bucket/prefix``; default config ``pangeo-hpc.data.root``.
    store : str or path
        The Zarr store (a folder) to write. It appears complete or not at all: it is written
        under a temporary name and renamed.
    variable : str
        ERA5 variable name.
    start, end : str, optional
        First and last month; default: the whole tree.
    chunk_mb : float, optional
        Uncompressed size of one chunk (whole fields, a multiple of days); default config
        ``pangeo-hpc.convert.chunk-mb``.
    clevel : int, optional
        Compression level 1-9; default config ``pangeo-hpc.convert.clevel``.
    codec : {"zstd", "lz4hc", "lz4"}, optional
        Blosc's compressor (byte shuffle first); default config ``pangeo-hpc.convert.codec``
        (zstd). On ERA5 SST, lz4hc stores ~6 % more and decodes ~2.5x faster.
    overwrite : bool
        Replace an existing store.
    **open_kwargs
        More arguments of :func:`pangeo_hpc.era5.open_era5` (``s3``, ``index``).

    Returns
    -------
    ConvertReport

    Notes
    -----
    Runs on the current Dask scheduler (start a cluster first for speed).
    """
    from zarr.codecs import BloscCodec

    from .era5 import open_era5

    root = source if source is not None else config.get("data.root")
    # replace only a store this package wrote, and only when asked; never the data
    store = check_folder(store, kind="zarr", inputs=[root], overwrite=overwrite)
    chunk_mb = float(config.get("convert.chunk-mb", chunk_mb))
    clevel = int(config.get("convert.clevel", clevel))
    codec = str(config.get("convert.codec", codec))
    if chunk_mb <= 0 or not 1 <= clevel <= 9:
        raise InputError(f"chunk_mb={chunk_mb} must be > 0 and clevel={clevel} in 1..9")
    if codec not in CODECS:
        raise InputError(f"codec={codec!r} is not one of {', '.join(CODECS)}")
    t0 = time.perf_counter()
    ds = open_era5(variable, start, end, source=source, **open_kwargs)
    da = ds[variable]
    step_bytes = int(np.prod(da.shape[1:])) * da.dtype.itemsize
    steps = max(1, min(da.shape[0], int(chunk_mb * 1e6 // step_bytes)))
    chunks = (steps, *da.shape[1:])
    out = ds[[variable]].chunk(dict(zip(da.dims, chunks, strict=True)))
    out.attrs[STORE_ATTR] = str(root)
    blosc = BloscCodec(cname=codec, clevel=clevel, shuffle="shuffle", typesize=da.dtype.itemsize)
    encoding = {variable: {"chunks": chunks, "compressors": [blosc]}}
    for name in out.coords:
        out[name].encoding.pop("chunks", None)
    with atomic_dir(store, kind="zarr", inputs=[root], overwrite=overwrite) as tmp:
        write_zarr(out, tmp, encoding=encoding)
        written = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
    return ConvertReport(
        store=str(store),
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
    files are what :class:`~pangeo_hpc.zarr_reader.ZarrChunks` decodes in place, and a v2
    store would lose that fast path. zarr-python 3 writes v3 consolidated metadata inline
    in the root ``zarr.json`` with ``"must_understand": false`` (readers that do not know
    them ignore them) and warns, at writing only, that they are not in the v3 spec yet;
    that one warning is silenced here, where we chose them. Reading warns nothing
    (tests/test_cf_outputs.py opens the stores under ``warnings.simplefilter("error")``).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Consolidated metadata is currently not part", category=UserWarning
        )
        ds.to_zarr(store, mode="w", consolidated=True, zarr_format=3, **kwargs)


def _stamp(store: str | Path) -> tuple[int, int]:
    """Changes when the store is rewritten (``to_zarr`` renames a new store into place)."""
    st = (Path(store) / "zarr.json").stat()
    return st.st_ino, st.st_mtime_ns


def is_zarr_store(path: str | Path) -> bool:
    """Whether ``path`` is a Zarr store (v2 or v3) rather than an era5-pds tree."""
    p = Path(path)
    return p.is_dir() and any((p / n).is_file() for n in ("zarr.json", ".zgroup", ".zmetadata"))


def open_store(
    store: str | Path, variable: str, start: str | None = None, end: str | None = None
) -> Any:
    """The months ``start`` to ``end`` of ``variable`` in a store written by :func:`to_zarr`,
    as ``open_era5`` returns them (lazy, Dask-backed, one task per Zarr chunk)."""
    import xarray as xr

    from .errors import DataNotFoundError
    from .periods import months

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
            f"period inside it with --start/--end, or convert more months"
        )
    fast = ZarrChunks.open(store, variable)
    if fast is not None:  # chunk files decoded in place, not through zarr-python's pipeline
        import dask.array as dska
        from dask.base import tokenize

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
