"""``convert``: an era5-pds tree once into an analysis-ready Zarr store, read like a tree."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.batch.pipeline.convert import to_zarr
from pangeo_hpc.errors import DataNotFoundError, InputError
from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.io.zarr_reader import is_zarr_store
from pangeo_hpc.recipes import climatology, global_mean
from tests.support.cli import run_cli, run_clis

VAR = "sea_surface_temperature"


@pytest.fixture(scope="module")
def store(demo_tree, tmp_path_factory):
    path = tmp_path_factory.mktemp("zarr") / "sst.zarr"
    report = to_zarr(demo_tree, path, VAR, "2000-01", "2001-12", chunk_mb=4)
    assert report.time_steps == 731 and report.bytes_written > 0
    assert "731 time steps" in report.summary()
    return path


@pytest.mark.smoke
def test_store_reads_like_the_tree(store, demo_tree):
    assert is_zarr_store(store) and not is_zarr_store(demo_tree)
    z = open_era5(VAR, "2000-03", "2001-02", source=store)
    nc = open_era5(VAR, "2000-03", "2001-02", source=demo_tree)
    assert z.encoding["source_access"] == "zarr"
    coords = z.drop_vars(VAR)
    assert coords.attrs.pop("pangeo_hpc_converted_from") == str(demo_tree)  # provenance
    xr.testing.assert_identical(coords, nc.drop_vars(VAR))
    np.testing.assert_array_equal(z[VAR].values, nc[VAR].values)  # lossless
    assert z[VAR].chunks[1:] == ((91,), (180,))  # whole fields per chunk
    # the same values (above); the NetCDF mean is summed as the chunks are decoded (io/fused.py),
    # the Zarr one per block: float64 sums in another order
    np.testing.assert_allclose(global_mean(z[VAR]).values, global_mean(nc[VAR]).values, rtol=1e-12)
    xr.testing.assert_allclose(climatology(z[VAR]), climatology(nc[VAR]), rtol=1e-6)


def test_store_errors_and_overwrite(store, demo_tree, tmp_path):
    with pytest.raises(DataNotFoundError, match=r"holds 2000-01..2001-12, not 1999-06..2000-01"):
        open_era5(VAR, "1999-06", "2000-01", source=store)
    with pytest.raises(DataNotFoundError, match=r"variable 't2m' is not in the Zarr store"):
        open_era5("t2m", source=store)
    with pytest.raises(InputError, match="exists: pass overwrite=True"):
        to_zarr(demo_tree, store, VAR, "2000-01", "2000-01")
    with pytest.raises(InputError, match=r"clevel=12 must be in 1..9"):
        to_zarr(demo_tree, tmp_path / "x.zarr", VAR, "2000-01", "2000-01", clevel=12)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_conversion_leaves_nothing(demo_tree, tmp_path, monkeypatch):
    target = tmp_path / "sst.zarr"
    real = xr.Dataset.to_zarr

    def half_then_fail(self, path, **kwargs):
        real(self.isel(time0=slice(0, 10)), path, **kwargs)  # some chunks on disk, then:
        raise OSError("No space left on device")

    monkeypatch.setattr(xr.Dataset, "to_zarr", half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        to_zarr(demo_tree, target, VAR, "2000-01", "2000-02")
    assert list(tmp_path.iterdir()) == []  # no store, no temporary folder


@pytest.mark.slow
def test_cli_convert_then_recipe_on_the_store(demo_tree, tmp_path):
    store = tmp_path / "sst.zarr"
    period = ("--start", "2000-01", "--end", "2000-12")

    def mean_of(name: str, data: Path) -> tuple[str, ...]:
        return ("era5-sst-mean", "--data", str(data), *period, "--workers", "2",
                "--out", str(tmp_path / name), "--no-progress")  # fmt: skip

    # the conversion beside the run on the files (conftest.run_clis: two at a time); the
    # refused conversion before the run on the store, which must find the store whole
    converted, on_files = run_clis(
        ("convert", "--data", str(demo_tree), "--out", str(store), *period, "--workers", "1"),
        mean_of("nc", demo_tree),
        cwd=tmp_path,
    )
    r = converted
    assert r.returncode == 0, r.stderr
    assert re.search(r"convert: 366 time steps .* \d+\.\d\d GB uncompressed", r.stdout)
    again = run_cli("convert", "--data", str(demo_tree), "--out", str(store), cwd=tmp_path)
    assert again.returncode == 2 and "exists: pass --overwrite to replace it" in again.stderr
    on_store = run_cli(*mean_of("zarr", store), cwd=tmp_path)
    runs = {}
    for name, r in (("nc", on_files), ("zarr", on_store)):
        assert r.returncode == 0, r.stderr
        runs[name] = json.loads((tmp_path / name / "summary.json").read_text())
    assert runs["zarr"]["inputs"]["access"] == "zarr"
    for name, headline in runs["nc"]["answer"].items():
        other = runs["zarr"]["answer"][name]
        assert other.keys() == headline.keys(), name
        for key, value in headline.items():
            if isinstance(value, float):
                assert other[key] == pytest.approx(value, rel=1e-6), (name, key)
            else:
                assert other[key] == value, (name, key)


@pytest.mark.smoke
def test_chunks_are_decoded_in_place_and_other_layouts_fall_back(store, tmp_path):
    import shutil

    import zarr

    from pangeo_hpc.errors import DamagedInputError
    from pangeo_hpc.io.zarr_reader import ZarrChunks

    fast = ZarrChunks.open(store, VAR)
    assert fast is not None  # the layout to_zarr writes
    ref = zarr.open_array(store / VAR, mode="r")[...]  # zarr-python's values
    for key in [(slice(None),), (slice(20, 400, 3), slice(90, 2, -5), 7), (-1,), (730, 5, 9)]:
        np.testing.assert_array_equal(fast[key], ref[key])
    np.testing.assert_array_equal(fast[[5, 1, 700]], ref[[5, 1, 700]])
    lazy = open_era5(VAR, "2000-01", "2000-02", source=store)[VAR]
    assert "open_store" in lazy.data.name or any(
        k.startswith("open_store") for k in lazy.data.__dask_graph__().layers
    )

    copy = tmp_path / "copy.zarr"
    shutil.copytree(store, copy)
    first = sorted((copy / VAR / "c").rglob("*"))
    chunk0 = next(p for p in first if p.is_file())
    chunk0.unlink()  # a chunk never written reads as the fill value (NaN)
    assert np.isnan(ZarrChunks.open(copy, VAR)[0]).all()
    next(p for p in sorted((copy / VAR / "c").rglob("*")) if p.is_file()).write_bytes(b"junk")
    with pytest.raises(DamagedInputError, match="is damaged"):
        ZarrChunks.open(copy, VAR)[(slice(None),)]

    other = tmp_path / "zstd.zarr"  # another codec chain: zarr-python reads it, same values
    ds = xr.open_zarr(store, consolidated=False)
    from zarr.codecs import ZstdCodec

    ds.to_zarr(
        other, encoding={VAR: {"compressors": [ZstdCodec()]}}, zarr_format=3, consolidated=False
    )
    assert ZarrChunks.open(other, VAR) is None
    np.testing.assert_array_equal(
        open_era5(VAR, "2000-01", "2000-02", source=other)[VAR].values, lazy.values
    )


@pytest.mark.smoke
def test_codec_choice(demo_tree, tmp_path):
    from pangeo_hpc.io.zarr_reader import ZarrChunks

    path = tmp_path / "lz4hc.zarr"
    to_zarr(demo_tree, path, VAR, "2000-01", "2000-02", chunk_mb=4, codec="lz4hc")
    meta = json.loads((path / VAR / "zarr.json").read_text())
    assert meta["codecs"][1]["configuration"]["cname"] == "lz4hc"
    assert ZarrChunks.open(path, VAR) is not None  # decoded in place too
    np.testing.assert_array_equal(
        open_era5(VAR, source=path)[VAR].values,
        open_era5(VAR, "2000-01", "2000-02", source=demo_tree)[VAR].values,
    )
    with pytest.raises(InputError, match="codec='brotli' is not one of zstd, lz4hc, lz4"):
        to_zarr(demo_tree, tmp_path / "x.zarr", VAR, "2000-01", "2000-01", codec="brotli")
    assert not (tmp_path / "x.zarr").exists()
