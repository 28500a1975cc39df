"""What each codec costs to decode, alone: the bound on B4's Zarr / NetCDF ratio (not a test).

B4 compares the same analysis on the NetCDF files and on the Zarr store ``convert`` writes.
Both paths share everything but the decoding (the reduction, Dask's cost per task and per
run, reading the bytes from the page cache), so Zarr can be at most
``(decode_nc + rest) / (decode_zarr + rest)`` times faster, and less than 2x whenever
decoding NetCDF takes less than twice as long as decoding Zarr. Here each decoder runs
alone, in one process on one core, on the same values:

* **netcdf**: the files' own chunks (zlib + byte shuffle, 24 x 100 x 100 on the demo
  data), inflated by libdeflate and un-shuffled by the bounds' compiled loop
  (``bounds.py``: what the platform's reader does);
* **zarr-zstd**, **zarr-lz4hc**, **zarr-lz4**: the same values in whole-field chunks of
  ``convert.chunk-mb`` (128 MB), encoded as ``convert`` encodes them (Blosc, byte shuffle,
  ``convert.clevel``), decoded by numcodecs' Blosc on one thread into a preallocated
  buffer (what the platform's Zarr reader does).

Seconds per uncompressed GB (medians of interleaved repeats), stored bytes, and each Zarr
codec's decode speed-up over NetCDF (the bound) are printed and written to
``benchmarks/results/codecs.json``. The encoded chunks are held in memory.

    python benchmarks/codecs.py [--source benchmarks/data/demo-1deg] [--period 2000-01..2019-12]
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bounds import chunk_index, unshuffle4
from benchmarks.support.data import VAR, files_of
from benchmarks.support.options import add_source, parser
from benchmarks.support.paths import DATA
from benchmarks.support.results import write_result

ZARR = ("zstd", "lz4hc", "lz4")


def netcdf_decoder(files: list[str]) -> tuple[Any, int, int]:
    """A function that decodes every stored chunk of ``files`` once; stored, decoded bytes."""
    from deflate import zlib_decompress

    index = [chunk_index(f) for f in files]
    payloads = []
    for fc in index:
        with open(fc.path, "rb") as fh:
            for off, size in zip(fc.byte_offsets, fc.sizes, strict=True):
                fh.seek(int(off))
                payloads.append(fh.read(int(size)))
    n = int(np.prod(index[0].chunks))
    buf = np.empty(n, np.uint32)

    def run() -> None:
        for p in payloads:
            unshuffle4(np.frombuffer(zlib_decompress(p, 4 * n), np.uint8), buf)

    return run, sum(len(p) for p in payloads), 4 * n * len(payloads)


def zarr_decoder(values: np.ndarray, cname: str, steps: int, clevel: int) -> tuple[Any, int, int]:
    """The same for ``values`` in chunks of ``steps`` whole fields, Blosc ``cname``."""
    from numcodecs import blosc
    from numcodecs.blosc import Blosc

    blosc.use_threads = False  # one core: the other decodes another task's chunk
    codec = Blosc(cname=cname, clevel=clevel, shuffle=Blosc.SHUFFLE)
    chunks = [np.ascontiguousarray(values[i : i + steps]) for i in range(0, len(values), steps)]
    encoded = [codec.encode(c) for c in chunks]
    out = np.empty(chunks[0].size, values.dtype)

    def run() -> None:
        for e, c in zip(encoded, chunks, strict=True):
            blosc.decompress(e, out[: c.size])

    return run, sum(len(e) for e in encoded), int(values.nbytes)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from pangeo_hpc import config

    p = parser(__doc__)
    add_source(p, default=str(DATA / "demo-1deg"))
    a = p.parse_args(argv)
    repeat = a.repeat or (1 if a.quick else 5)
    start, end = a.period.split("..")
    files = files_of(Path(a.source), start, end)
    if a.quick:
        files = files[:3]
    import h5py

    with h5py.File(files[0]) as f:
        field = f[VAR].shape[1:]
    values = np.concatenate([h5py.File(f)[VAR][:] for f in files])
    steps = max(1, int(float(config.get("convert.chunk-mb")) * 1e6 // (np.prod(field) * 4)))
    clevel = int(config.get("convert.clevel"))
    cases = {"netcdf": netcdf_decoder(files)}
    for cname in ZARR:
        cases[f"zarr-{cname}"] = zarr_decoder(values, cname, steps, clevel)
    for run, _, _ in cases.values():
        run()  # compile, touch
    seconds: dict[str, list[float]] = {k: [] for k in cases}
    for r in range(repeat):
        names = list(cases)
        for k in names[r % len(names) :] + names[: r % len(names)]:
            t = time.perf_counter()
            cases[k][0]()
            seconds[k].append(time.perf_counter() - t)
    useful = values.nbytes
    rows = {}
    for k, (_, stored, decoded) in cases.items():
        med = float(np.median(seconds[k]))
        rows[k] = {
            "s_per_GB_of_data": med / useful * 1e9,
            "bytes_stored": stored,
            "bytes_decoded": decoded,
            "runs_s": seconds[k],
        }
    nc = rows["netcdf"]["s_per_GB_of_data"]
    print(f"{len(files)} files, {useful / 1e9:.2f} GB of data; one process, load {os.getloadavg()}")
    print(f"{'codec':12s} {'s/GB':>7s} {'stored MB':>10s} {'decoded MB':>11s} {'NetCDF/this':>12s}")
    for k, r in rows.items():
        r["netcdf_over_this"] = nc / r["s_per_GB_of_data"]
        print(
            f"{k:12s} {r['s_per_GB_of_data']:7.3f} {r['bytes_stored'] / 1e6:10.1f} "
            f"{r['bytes_decoded'] / 1e6:11.1f} {r['netcdf_over_this']:11.2f}x"
        )
    doc = {
        "title": "decode cost of each codec alone (one core)",
        "summary": f"{len(files)} files of {a.source}, {useful / 1e9:.2f} GB",
        "params": {
            "source": a.source,
            "period": a.period,
            "repeat": repeat,
            "zarr_steps": steps,
            "clevel": clevel,
            "load": os.getloadavg(),
        },
        "codecs": rows,
    }
    write_result("codecs", doc, quick=a.quick)
    return doc


if __name__ == "__main__":
    main()
