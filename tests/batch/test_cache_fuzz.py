"""A damaged state-cache entry is a miss, never a value and never a crash (issue 28).

A small real cache (a three-file time mean on a 30x40 grid: three entries of one file's
state and the roll-up that merges them, 15 to 17 kB each) is damaged in every way a disk,
a crash or a user can: every bit of every header flipped, one at a time (the seal, each
zip local header with its ``.npy`` header, the zip directory, the whole meta and list of
pieces) and every bit of a sample of the data bytes; truncations at several lengths;
every 512-byte block zeroed. (The grid is large enough that the sums outgrow zipfile's
4 kB read-ahead: below it the zip CRC is checked at every load and hides the garbage.) After each, the library's
loader (:meth:`StateCache.get`, :meth:`~StateCache.peek` and the listing of ``cache list``)
must give either the exact value stored or a clean miss: the entry removed and one
:class:`CacheWarning`. The command line then runs on a handful of damaged caches (the
issue's own case first: bit 1 of the ``.npy`` header length of the roll-up's
``sum.npy``): each run exits 0 with the ``--no-cache`` answer, and ``cache list`` shows
the damaged entry instead of crashing.

Before the entries were sealed (:mod:`pangeo_hpc.write.sealed`), the sweep found values
that differ (garbage) and errors that escape the loader.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import yaml
from distributed import Client, LocalCluster

from pangeo_hpc.batch.chains.recipe_yaml import load
from pangeo_hpc.batch.incremental.state_cache import CacheWarning, StateCache
from pangeo_hpc.batch.pipeline.steps import compute, open_inputs
from tests.support.paths import ROOT

YEARS = (2000, 2001, 2002)


def _write_files(data: Path) -> None:
    """Ten days of SST per year on a 30x40 grid, one value missing: small states."""
    data.mkdir()
    lat = np.linspace(-87.0, 87.0, 30)
    lon = np.arange(0.0, 360.0, 9.0)
    for year in YEARS:
        days = np.arange(np.datetime64(f"{year}-01-01"), np.datetime64(f"{year}-01-11"))
        values = 290 + np.random.default_rng(year).normal(size=(days.size, lat.size, lon.size))
        values[0, 0, 0] = np.nan
        with netCDF4.Dataset(data / f"sst_{year}.nc", "w", format="NETCDF4") as nc:
            nc.createDimension("time", days.size)
            nc.createDimension("lat", lat.size)
            nc.createDimension("lon", lon.size)
            t = nc.createVariable("time", "f8", ("time",))
            t.setncatts({"units": "days since 2000-01-01", "calendar": "standard"})
            t[:] = (days - np.datetime64("2000-01-01")).astype(int)
            for name, v, units in (("lat", lat, "degrees_north"), ("lon", lon, "degrees_east")):
                var = nc.createVariable(name, "f4", (name,))
                var.units = units
                var[:] = v
            sst = nc.createVariable("sst", "f4", ("time", "lat", "lon"))
            sst.units = "K"
            sst[:] = values


def _recipe(folder: Path, data: Path) -> Path:
    doc = {
        "name": "fuzz",
        "dataset": {"variable": "sst", "files": str(data / "sst_*.nc")},
        "steps": [{"time_mean": {}}],
    }
    path = folder / "fuzz.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The recipe, and a cache filled by a real run: {key: (bytes, arrays, meta)}."""
    folder = tmp_path_factory.mktemp("fuzz")
    _write_files(folder / "data")
    recipe = _recipe(folder, folder / "data")
    cache = StateCache(folder / "cache")
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster,
        Client(cluster) as client,
    ):
        compute(open_inputs(load(recipe)), client, cache=cache)
    entries = {}
    for e in cache.entries():
        arrays, meta = cache.get(e.key)
        entries[e.key] = (e.path.read_bytes(), arrays, meta)
    assert len(entries) == len(YEARS) + 1, entries.keys()
    return folder, recipe, entries


def _rollup(entries: dict) -> str:
    return next(k for k, (_, _, meta) in entries.items() if "merged" in meta["result"])


def _piece(entries: dict) -> str:
    return next(k for k, (_, _, meta) in entries.items() if "merged" not in meta["result"])


def _same(got, arrays, meta) -> bool:
    a, m = got
    return (
        m == meta
        and a.keys() == arrays.keys()
        and all(a[n].dtype == arrays[n].dtype for n in a)
        and all(np.array_equal(a[n], arrays[n], equal_nan=a[n].dtype.kind in "fc") for n in a)
    )


class Sweep:
    """Loads of damaged copies of one entry, and what went wrong: values that differ,
    errors that escape, misses that left the entry or did not warn once."""

    def __init__(self, folder: Path, key: str, original: bytes, arrays, meta) -> None:
        self.folder, self.key, self.original = folder, key, original
        self.arrays, self.meta = arrays, meta
        self.path = folder / f"{key}.npz"
        self.loads = self.misses = 0
        self.wrong: list[str] = []

    def load(self, damaged: bytes, what: str, *, also_peek: bool = False) -> None:
        self.path.write_bytes(damaged)
        self.loads += 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                cache = StateCache(self.folder)
                if also_peek:  # the listing and the roll-up's list of pieces: no removal
                    listed = [e for e in cache.entries() if e.key == self.key]
                    damaged = getattr(listed[0], "damaged", None)  # not before issue 28
                    if damaged is None and listed[0].meta not in (self.meta, {}):
                        self.wrong.append(f"{what}: cache list shows meta {listed[0].meta}")
                    held = cache.peek(self.key, "merged_pieces")
                    want = self.arrays.get("merged_pieces")
                    if held is not None and not np.array_equal(held, want):
                        self.wrong.append(f"{what}: peek gave {held!r}")
                got = cache.get(self.key)
            except Exception as exc:  # the bug this test is for
                self.wrong.append(f"{what}: {type(exc).__name__}: {exc}"[:300])
                return
        ours = [w for w in caught if issubclass(w.category, CacheWarning)]
        if got is None:
            self.misses += 1
            if self.path.exists():
                self.wrong.append(f"{what}: a miss that left the entry")
            if len(ours) != 1 or len(caught) != len(ours):
                self.wrong.append(f"{what}: {[str(w.message)[:80] for w in caught]} warned")
        elif not _same(got, self.arrays, self.meta):
            self.wrong.append(f"{what}: a value that differs (garbage with exit 0)")


def _report(sweep: Sweep) -> str:
    kinds: dict[str, int] = {}
    for line in sweep.wrong:
        kind = line.split(": ", 1)[1].split(":")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    return f"{len(sweep.wrong)} of {sweep.loads} loads wrong {kinds}; first: {sweep.wrong[:5]}"


def _structure(blob: bytes, every: int = 31) -> list[int]:
    """The offsets of every byte of an entry's file that is not array data (the seal, the
    zip's local headers, ``.npy`` headers and directory, the meta and the list of pieces
    whole, the last bytes of each member), and of every ``every``-th data byte."""
    start = blob.index(b"PK\x03\x04")  # after the seal (none in an entry of format 2)
    picked = set(range(start))
    zf = zipfile.ZipFile(io.BytesIO(blob[start:]))
    for info in zf.infolist():
        local = start + info.header_offset
        names = int.from_bytes(blob[local + 26 : local + 28], "little")
        extra = int.from_bytes(blob[local + 28 : local + 30], "little")
        data = local + 30 + names + extra
        end = data + info.compress_size
        whole = info.filename in ("__meta__.npy", "merged_pieces.npy", "labels.npy")
        picked |= set(range(local, end if whole else data + 128))
        picked |= set(range(end - 8, end))
        picked |= set(range(data, end, every))
    directory = blob.rindex(b"PK\x01\x02", start)
    first = int.from_bytes(blob[-6:-2], "little") + start  # the EOCD's offset of the directory
    picked |= set(range(min(first, directory), len(blob)))
    return sorted(picked)


def _flip_every_bit(sweep: Sweep) -> None:
    blob = bytearray(sweep.original)
    for i in _structure(sweep.original):
        for bit in range(8):
            blob[i] ^= 1 << bit
            sweep.load(bytes(blob), f"byte {i} bit {bit}")
            blob[i] ^= 1 << bit


@pytest.mark.slow
def test_every_header_bit_of_the_rollup_flipped_is_a_miss_or_the_value(made, tmp_path):
    _, _, entries = made
    key = _rollup(entries)
    original, arrays, meta = entries[key]
    cache = StateCache(tmp_path / "cache")
    cache.put(key, arrays, meta)  # a cache of its own: the module's stays whole
    sweep = Sweep(cache.folder, key, original, arrays, meta)
    _flip_every_bit(sweep)
    assert sweep.loads > 8 * 2000, sweep.loads
    assert not sweep.wrong, _report(sweep)
    assert sweep.misses == sweep.loads  # a seal over every byte: no flip goes unseen


@pytest.mark.slow
def test_every_header_bit_of_a_pieces_entry_flipped_is_a_miss_or_the_value(made, tmp_path):
    _, _, entries = made
    key = _piece(entries)
    original, arrays, meta = entries[key]
    cache = StateCache(tmp_path / "cache")
    cache.put(key, arrays, meta)
    sweep = Sweep(cache.folder, key, original, arrays, meta)
    _flip_every_bit(sweep)
    assert not sweep.wrong, _report(sweep)


def test_truncated_and_zeroed_entries_are_misses(made, tmp_path):
    _, _, entries = made
    for key in (_rollup(entries), _piece(entries)):
        original, arrays, meta = entries[key]
        cache = StateCache(tmp_path / key[:8])
        cache.put(key, arrays, meta)
        sweep = Sweep(cache.folder, key, original, arrays, meta)
        n = len(original)
        for length in sorted({0, 1, 8, 30, 64, 95, 96, n // 2, n - 22, n - 1}):
            sweep.load(original[:length], f"truncated to {length}", also_peek=True)
        for start in range(0, n, 512):
            zeroed = original[:start] + bytes(len(original[start : start + 512]))
            zeroed += original[start + 512 :]
            sweep.load(zeroed, f"block at {start} zeroed", also_peek=True)
        sweep.load(original + b"\0" * 512, "512 bytes appended", also_peek=True)
        assert not sweep.wrong, _report(sweep)
        sweep.load(original, "undamaged", also_peek=True)  # and the sweep does see a value
        assert sweep.misses == sweep.loads - 1 and not sweep.wrong, _report(sweep)


def test_an_unsealed_entry_of_an_earlier_version_is_a_miss(made, tmp_path):
    """A bare ``.npz`` (format 2: no seal) under a current key: a miss, removed."""
    _, _, entries = made
    key = _piece(entries)
    original, arrays, meta = entries[key]
    cache = StateCache(tmp_path / "cache")
    cache.put(key, arrays, meta)
    bare = original[original.index(b"PK\x03\x04") :]
    assert zipfile.ZipFile(io.BytesIO(bare)).testzip() is None  # a valid npz
    sweep = Sweep(cache.folder, key, original, arrays, meta)
    sweep.load(bare, "unsealed", also_peek=True)
    assert sweep.misses == 1 and not sweep.wrong, _report(sweep)


# --------------------------------------------------------------------------------------------
# the command line on damaged caches


def _header_len_byte(blob: bytes, member: str) -> int:
    """The offset in ``blob`` (an entry's file) of the first byte of the ``.npy``
    ``header_len`` of ``member``: after its zip local header, the magic and the version."""
    start = blob.index(b"PK\x03\x04")
    info = zipfile.ZipFile(io.BytesIO(blob[start:])).getinfo(member)
    local = start + info.header_offset
    names = int.from_bytes(blob[local + 26 : local + 28], "little")
    extra = int.from_bytes(blob[local + 28 : local + 30], "little")
    data = local + 30 + names + extra
    assert blob[data : data + 6] == b"\x93NUMPY"
    return data + 8


def _flip(blob: bytes, offset: int, bit: int) -> bytes:
    out = bytearray(blob)
    out[offset] ^= 1 << bit
    return bytes(out)


def _cli(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DASK_PANGEO_HPC__CACHE__FOLDER": str(cache),
        "DASK_PANGEO_HPC__CATALOG__CACHE": str(cwd / "scans"),
    }
    return subprocess.run(
        [sys.executable, "-m", "pangeo_hpc.run", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def _answer(out: Path) -> np.ndarray:
    with xr.open_dataset(out / "result.nc") as ds:
        return ds["sst"].values


def _allclose(fresh: np.ndarray):
    """Equal to ``fresh`` but for the order of the sums (merged states: float32 rounding);
    a damaged state read as a value differs by far more (min -3.3e38 in issue 28)."""
    assert np.isfinite(fresh).all()
    return lambda got: got.shape == fresh.shape and np.allclose(got, fresh, rtol=1e-6, atol=0)


@pytest.mark.slow
def test_the_command_line_on_damaged_caches_gives_the_no_cache_answer(made, tmp_path):
    _, recipe, _ = made
    cache = tmp_path / "states"
    runs = iter(range(100))

    def run(*flags: str) -> tuple[subprocess.CompletedProcess, Path]:
        for old in tmp_path.glob("out*"):  # no answer to copy: each run reads the states
            shutil.rmtree(old)
        out = tmp_path / f"out{next(runs)}"
        r = _cli(str(recipe), "--out", str(out), "--no-progress", *flags, cwd=tmp_path, cache=cache)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "Traceback" not in r.stderr, r.stderr
        return r, out

    fresh = _answer(run("--no-cache")[1])
    assert not cache.exists()
    same = _allclose(fresh)
    assert same(_answer(run()[1]))  # the cache filled

    def entry(kind: str) -> Path:
        for e in StateCache(cache).entries():
            if "folders" in e.meta:  # where the result is (batch/pipeline/result_copies.py)
                continue
            if ("merged" in e.meta["result"]) == (kind == "rollup"):
                return e.path
        raise AssertionError(f"no {kind} entry")

    damages = {  # the reproduction first; a damaged roll-up makes the pieces read
        "bit 1 of the header_len of the roll-up's sum.npy": [
            ("rollup", lambda b: _flip(b, _header_len_byte(b, "sum.npy"), 1)),
        ],
        "a flip in the roll-up's meta, a piece truncated to half": [
            ("rollup", lambda b: _flip(b, _header_len_byte(b, "__meta__.npy") + 200, 3)),
            ("piece", lambda b: b[: len(b) // 2]),
        ],
        "the roll-up truncated to 100 bytes, a piece's first 512 bytes zeroed": [
            ("rollup", lambda b: b[:100]),
            ("piece", lambda b: bytes(512) + b[512:]),
        ],
    }
    for what, damage in damages.items():
        paths = [entry(kind) for kind, _ in damage]
        for path, (_, how) in zip(paths, damage, strict=True):
            path.write_bytes(how(path.read_bytes()))
        listed = _cli("cache", "list", cwd=tmp_path, cache=cache)
        r, out = run()
        assert same(_answer(out)), what
        lines = [x for x in r.stderr.splitlines() if x.strip()]
        assert len(lines) == len(paths), (what, r.stderr)
        for line, path in zip(sorted(lines), sorted(paths), strict=True):
            assert line.startswith("warning: the cached state") and str(path) in line, line
            assert "is damaged" in line, line
        assert listed.returncode == 0, f"{what}: {listed.stderr[-2000:]}"
        assert listed.stdout.count("(damaged)") == len(paths), (what, listed.stdout)
        assert f"{len(paths)} entr" in listed.stdout.splitlines()[-1], listed.stdout
        assert all(e.damaged is None for e in StateCache(cache).entries()), what  # rebuilt


# --------------------------------------------------------------------------------------------
# the other caches: scanned metadata and byte-range indexes (JSON, sealed the same way)


def _flip_json_bits(path: Path, load, want, rewrite) -> list[str]:
    """Every bit of the file at ``path`` flipped: ``load()`` is ``want`` or a miss (falsy),
    never another value and never an error; after a miss, ``rewrite()`` replaces the
    damaged file (its writer still knows it as its own)."""
    original = path.read_bytes()
    wrong = []
    blob = bytearray(original)
    for i in range(len(blob)):
        for bit in range(8):
            blob[i] ^= 1 << bit
            path.write_bytes(bytes(blob))
            blob[i] ^= 1 << bit
            try:
                got = load()
            except Exception as exc:
                wrong.append(f"byte {i} bit {bit}: {type(exc).__name__}: {exc}"[:200])
                continue
            if got and got != want:
                wrong.append(f"byte {i} bit {bit}: a value that differs")
            elif not got and i % 97 == 0:  # a sample: rewriting is slower than loading
                rewrite()
                if path.read_bytes() != original:
                    wrong.append(f"byte {i} bit {bit}: the damaged file was not replaced")
    return wrong


@pytest.mark.slow
def test_every_bit_of_a_scan_cache_flipped_is_a_miss_or_the_value(made, tmp_path):
    import dask.config

    from pangeo_hpc.io import scan_cache

    _, recipe, _ = made
    with dask.config.set({"pangeo-hpc.catalog.cache": str(tmp_path / "scans")}):
        open_inputs(load(recipe))  # scans the three files and saves what it learned
    (path,) = (tmp_path / "scans").glob("*.json")
    entries = scan_cache.load(path)
    assert len(entries) == len(YEARS)
    wrong = _flip_json_bits(
        path, lambda: scan_cache.load(path), entries, lambda: scan_cache.save(path, entries)
    )
    assert not wrong, f"{len(wrong)} wrong: {wrong[:5]}"


def test_every_bit_of_a_byte_range_index_flipped_is_a_miss_or_the_value(tmp_path):
    import dask.config

    from pangeo_hpc.inputs.stamps import Stamp
    from pangeo_hpc.io import references

    url = "s3://era5-pds/2000/01/data/sea_surface_temperature.nc"
    stamp = Stamp.of_object(url, 123456, '"0123456789abcdef"', None)
    zarray = {"chunks": [24, 10, 10], "shape": [744, 30, 40], "dtype": "<f4",
              "compressor": {"id": "zlib", "level": 4}, "fill_value": None, "filters": None,
              "order": "C", "zarr_format": 2}  # fmt: skip
    refs = {"version": 1, "refs": {
        "sst/.zarray": json.dumps(zarray),
        **{f"sst/{i}.0.0": [url, 4096 + 1000 * i, 987] for i in range(8)},
    }}  # fmt: skip
    with dask.config.set({"pangeo-hpc.s3.index-cache": str(tmp_path / "refs")}):
        references.claim_cache()
        path = references.save_refs(stamp, refs)
        want = references.load_refs(stamp)
        assert want is not None and want["refs"] == refs["refs"]
        wrong = _flip_json_bits(
            path,
            lambda: references.load_refs(stamp),
            want,
            lambda: references.save_refs(stamp, refs),
        )
    assert not wrong, f"{len(wrong)} wrong: {wrong[:5]}"
