"""Local files are read by locating chunks with HDF5's index, ``pread`` and our own decoder
(libdeflate + a compiled un-shuffle): the values must be h5py's, bit for bit, whatever the
filters, dtype, chunk grid or index; datasets we do not decode fall back to h5py."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from pangeo_hpc.errors import DamagedInputError
from pangeo_hpc.io import chunk_decoding
from pangeo_hpc.io.chunk_decoding import ChunkDecoder
from pangeo_hpc.io.chunk_table import ChunkTable
from pangeo_hpc.io.reader import H5Source

KEYS = [
    (slice(None), slice(None), slice(None)),
    (slice(3, 29), slice(5, 33), slice(10, 44)),
    (5, slice(None, None, -3), slice(7, 40, 5)),
    (slice(30, 2, -7), 20, slice(None)),
    (-1, -1, -1),
    (slice(4, 4), slice(None), slice(None)),
]


def _values(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = rng.normal(280, 10, shape)
    if np.dtype(dtype).kind == "f":
        x[rng.random(shape) < 0.3] = np.nan  # land
    return x.astype(dtype)


CASES = {  # name: (dtype, h5py dataset options, decoded by us)
    "shuffle+zlib f4": ("<f4", {"shuffle": True, "compression": "gzip", "compression_opts": 1}, 1),
    "zlib only f4": ("<f4", {"compression": "gzip", "compression_opts": 4}, True),
    "shuffle+zlib f8": ("<f8", {"shuffle": True, "compression": "gzip"}, True),
    "shuffle+zlib i2": ("<i2", {"shuffle": True, "compression": "gzip"}, True),
    "big-endian f4": (">f4", {"shuffle": True, "compression": "gzip"}, True),
    "no filter": ("<f4", {}, True),
    "fletcher32": ("<f4", {"compression": "gzip", "fletcher32": True}, False),
    "lzf": ("<f4", {"compression": "lzf"}, False),
}


@pytest.mark.parametrize("case", CASES)
def test_values_are_h5pys(case, tmp_path):
    dtype, opts, ours = CASES[case]
    path = tmp_path / "f.nc"
    x = _values(dtype, (31, 37, 50))  # chunk grid with ragged edges on every axis
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=x, chunks=(24, 10, 16), **opts)
    with h5py.File(path) as f:
        assert (ChunkTable.from_h5(f["v"]) is not None) == bool(ours)
    src = H5Source(str(path), "v")
    for key in KEYS:
        got = src.read(key)
        assert got.dtype.str[1:] == x.dtype.str[1:]  # byte order may be native
        np.testing.assert_array_equal(got, x[key])


def test_unwritten_chunks_read_as_the_fill_value(tmp_path):
    path = tmp_path / "f.nc"
    with h5py.File(path, "w") as f:
        d = f.create_dataset(
            "v",
            (48, 20, 20),
            "f4",
            chunks=(24, 10, 10),
            shuffle=True,
            compression="gzip",
            fillvalue=-9.5,
        )
        d[30:40, :10, :10] = 1.0  # one chunk written, seven never
    got = H5Source(str(path), "v").read((slice(None),) * 3)
    with h5py.File(path) as f:
        np.testing.assert_array_equal(got, f["v"][:])
    assert (got == -9.5).sum() == 48 * 400 - 10 * 100


def test_contiguous_and_two_dimensional_datasets(tmp_path):
    path = tmp_path / "f.nc"
    a, b = _values("f4", (30, 40)), _values("f4", (6, 7, 8))
    with h5py.File(path, "w") as f:
        f.create_dataset("flat", data=a, chunks=(7, 9), shuffle=True, compression="gzip")
        f.create_dataset("contiguous", data=b)
    np.testing.assert_array_equal(H5Source(str(path), "flat").read((slice(2, 29), 5)), a[2:29, 5])
    np.testing.assert_array_equal(
        H5Source(str(path), "contiguous").read((1, slice(None), slice(None, None, -2))),
        b[1, :, ::-2],
    )


def test_without_libdeflate_the_stdlib_inflates(tmp_path, monkeypatch):
    path = tmp_path / "f.nc"
    x = _values("f4", (30, 20, 20))
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=x, chunks=(24, 10, 10), shuffle=True, compression="gzip")
    monkeypatch.setattr(chunk_decoding, "_libdeflate", None)
    np.testing.assert_array_equal(H5Source(str(path), "v").read((slice(None),) * 3), x)


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
def test_unshuffle_matches_numcodecs(itemsize):
    from numcodecs import Shuffle, Zlib

    chunks, dtype = (5, 6, 7), np.dtype(f"u{itemsize}")
    x = np.random.default_rng(1).integers(0, 2 ** (8 * itemsize) - 1, chunks, dtype=dtype)
    payload = Zlib(1).encode(Shuffle(itemsize).encode(x))
    codecs = [{"id": "zlib", "level": 1}, {"id": "shuffle", "elementsize": itemsize}]
    dec = ChunkDecoder(codecs, chunks, dtype)
    assert dec.fast
    np.testing.assert_array_equal(dec.decode(payload), x)
    out = np.zeros((3, 2, 7), dtype)
    dec.decode_into(payload, (slice(2, 5), slice(4, 6), slice(0, 7)), out)
    np.testing.assert_array_equal(out, x[2:5, 4:6])


def test_other_codecs_go_through_numcodecs():
    from numcodecs import LZ4

    x = np.arange(60, dtype="f4").reshape(3, 4, 5)
    dec = ChunkDecoder([{"id": "lz4"}], x.shape, x.dtype)
    assert not dec.fast
    np.testing.assert_array_equal(dec.decode(LZ4().encode(x)), x)


def test_a_corrupt_chunk_or_truncated_file_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / "f.nc"
    x = _values("f4", (48, 20, 20))
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=x, chunks=(24, 10, 10), shuffle=True, compression="gzip")
        infos: list = []
        f["v"].id.chunk_iter(infos.append)
    raw = bytearray(path.read_bytes())
    off = infos[3].byte_offset
    raw[off + 2 : off + 40] = bytes(38)  # garbage inside one deflate stream
    path.write_bytes(bytes(raw))
    # bad input (exit code 2), naming the chunk: its grid index, first element, byte, size
    c = infos[3]
    with pytest.raises(
        DamagedInputError,
        match=rf"f.nc' is damaged: chunk \(0, 1, 1\) at \[0, 10, 10\] \(byte {c.byte_offset}, "
        rf"{c.size} bytes\) does not inflate \(.*\); restore it from its source$",
    ):
        H5Source(str(path), "v").read((slice(None),) * 3)
    path.write_bytes(bytes(raw[: len(raw) // 2]))
    with pytest.raises(DamagedInputError, match="f.nc.*truncated"):
        H5Source(str(path), "v").read((slice(None),) * 3)
