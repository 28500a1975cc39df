"""The benchmark suite's yardsticks: the bounds compute the right answer, and the docs'
benchmarks page shows each result with its commit, and says when they are not one clean
run of the commit checked out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from benchmarks import b7_incremental, b9_regrid, bounds, report
from benchmarks.support.pagecache import cold, resident_fraction, warm
from benchmarks.support.rows import RSS_GOAL, rss_row
from tests.support.paths import ROOT

VAR = bounds.VAR


def _file(path: Path, data: np.ndarray, chunks: tuple[int, int, int]) -> str:
    with h5py.File(path, "w") as f:
        f.create_dataset(VAR, data=data, chunks=chunks, shuffle=True, compression="gzip")
    return str(path)


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[list[str], list[np.ndarray], np.ndarray]:
    """Two files of 7 and 5 time steps on a 13 x 17 grid (ragged chunks), land as NaN."""
    rng = np.random.default_rng(3)
    land = rng.random((13, 17)) < 0.3
    data = []
    for nt in (7, 5):
        x = (280 + 20 * rng.random((nt, 13, 17))).astype("f4")
        x[:, land] = np.nan
        data.append(x)
    files = [_file(tmp_path / f"f{i}.nc", d, (3, 5, 4)) for i, d in enumerate(data)]
    weights = 1 + rng.random((13, 17))
    return files, data, weights


def test_fused_bound_answers_the_weighted_series_and_the_time_mean(two_files):
    files, data, w = two_files
    fused = bounds.Bound(files, w, procs=2, mode="fused")
    try:
        series = fused()
    finally:
        fused.close()
    x = np.concatenate(data).astype("f8")
    ok = ~np.isnan(x)
    expected = np.where(ok, x, 0).reshape(len(x), -1) @ w.ravel()
    expected /= ok.reshape(len(x), -1) @ w.ravel()
    np.testing.assert_allclose(series, expected, rtol=1e-6)
    # the unweighted mean differs by far more than the tolerance: the test can fail
    assert np.abs(np.nanmean(x, axis=(1, 2)) / expected - 1).max() > 1e-4
    with np.errstate(invalid="ignore"):  # all-land cells: NaN in both
        time_mean = np.where(ok, x, 0).sum(axis=0) / ok.sum(axis=0)
    np.testing.assert_allclose(fused.time_mean, time_mean, rtol=1e-6)
    alone = bounds.Bound(files, w, procs=2, mode="series")  # B1's bound: the series alone
    try:
        np.testing.assert_allclose(alone(), expected, rtol=1e-6)
    finally:
        alone.close()


def test_decode_bound_inflates_every_chunk_whole(two_files):
    files, data, w = two_files
    decode = bounds.Bound(files, w, procs=1, mode="decode")
    try:
        decoded = decode()
    finally:
        decode.close()
    chunks = sum(-(-d.shape[0] // 3) * -(-13 // 5) * -(-17 // 4) for d in data)
    assert decoded == chunks * 3 * 5 * 4 * 4  # edge chunks are stored (and inflated) whole


def test_bound_refuses_files_it_cannot_decode(tmp_path: Path):
    with h5py.File(tmp_path / "lz.nc", "w") as f:
        f.create_dataset(VAR, data=np.zeros((2, 4, 4), "f4"), chunks=(1, 4, 4))
    with pytest.raises(ValueError, match="not B1's data"):
        bounds.chunk_index(str(tmp_path / "lz.nc"))


def _result(commit: str) -> dict:
    return {"machine": {"pangeo_hpc_commit": commit}, "date": "2026-11-23 10:00", "rows": []}


def test_readme_table_only_from_one_clean_commit():
    assert report.why_not({"B1": _result("abc1234"), "B2": _result("abc1234")}, "abc1234") is None
    dirty = report.why_not({"B1": _result("abc1234+dirty")}, "abc1234")
    assert dirty and "B1" in dirty and "uncommitted" in dirty
    mixed = report.why_not({"B1": _result("abc1234"), "B2": _result("0cb110a")}, "abc1234")
    assert mixed and "B2 at 0cb110a" in mixed and "B1" not in mixed
    assert report.why_not({}, "abc1234")
    table = report.table({"B1": {**_result("abc1234"), "machine": _machine("abc1234")}})
    assert "at commit abc1234" in table


def _machine(commit: str) -> dict:
    return {
        "pangeo_hpc_commit": commit,
        "cpu": "cpu",
        "cores": 2,
        "memory_gib": 23.5,
        "kernel": "6",
        "python": "3.11",
        "versions": {"xarray": "x", "dask": "d", "h5py": "h", "cdo": "c"},
    }


def test_the_docs_page_names_each_commit_and_a_dirty_result(tmp_path: Path, monkeypatch):
    """docs/_ext/bench_page.py renders the results folder it is given: each case at its
    commit, a note naming a result measured with changes, and a result file of another
    shape as a section of its own figures (a number typed nowhere but in the JSON)."""
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    import bench_page

    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    b1 = {**_result("abc1234+dirty"), "machine": _machine("abc1234+dirty")}
    b1["rows"] = [{"what": "vs naive", "cache": "warm", "platform_s": 1.0, "other": "naive",
                   "other_s": 3.0, "ratio": 3.0, "goal": 2.0, "met": True}]  # fmt: skip
    (results / "B1.json").write_text(json.dumps(b1))
    (results / "s3_read.json").write_text(
        json.dumps({"benchmark": "s3_read", "ratios": {"x": 9.19}})
    )
    monkeypatch.setattr(report, "RESULTS", results)
    page = bench_page.markdown(tmp_path)
    assert "| B1 (at abc1234+dirty) | vs naive (naive) |" in page
    assert "B1 measured with uncommitted changes" in page
    assert "### s3_read" in page and "| ratios / x | 9.19 |" in page
    assert "No B6 result." in page


def test_rss_row_judges_the_largest_worker():
    small = rss_row("B3", {"pangeo-hpc": {"w1": 1_000_000_000, "w2": 1_500_000_000}})
    assert small["met"] is True and "1.50 GB" in small["text"]
    big = rss_row("B3", {"a": {"w1": 1e9}, "b": {"w1": 1e9, "w2": RSS_GOAL + 1}})
    assert big["met"] is False and ", b;" in big["text"]
    assert rss_row("B2", {})["met"] is None


def test_a_pipe_in_a_row_stays_inside_its_cell():
    row = {"what": "warmup vs find | xargs cat", "cache": "cold", "platform_s": 1.0,
           "other": "find | xargs -P 8 cat", "other_s": 1.0, "ratio": 1.0, "goal": None}  # fmt: skip
    res = {**_result("abc1234"), "machine": _machine("abc1234"), "rows": [row]}
    line = report.table({"warmup": res}).splitlines()[-1]
    assert line.count("|") - line.count("\\|") == 7  # six cells


def test_cold_and_warm_use_the_page_cache_of_the_package(tmp_path):
    """A folder (a Zarr store) dropped: nothing of it resident; read through: all of it."""
    store = tmp_path / "store.zarr"
    (store / "t").mkdir(parents=True)
    for i, size in enumerate((1 << 20, 3, 70_000)):
        (store / "t" / str(i)).write_bytes(np.random.default_rng(i).bytes(size))
    cold([store])
    assert resident_fraction([store]) == 0.0
    warm([store])
    assert resident_fraction([store]) == 1.0
    cold([store / "t" / "0"])
    assert resident_fraction([store]) == pytest.approx(70_003 / ((1 << 20) + 70_003))


def test_b7_counts_cache_entries_not_writes_in_progress(tmp_path):
    """B7 kills a run when half the pieces' states are in the cache: a temporary file of a
    write in progress (atomic_file's name) or another file is not a state."""
    key = "ab" * 32
    for name in (f"{key}.npz", f"{'cd' * 32}.npz", f".{key}.npz.x1.tmp", ".pangeo-hpc.json"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / f"{'ef' * 31}.npz").write_bytes(b"")  # 62 hex digits: not a key
    assert b7_incremental.entries(tmp_path) == 2
    assert b7_incremental.entries(tmp_path / "missing") == 0


def test_b7_differences_relative_to_each_value_and_to_the_variable():
    """Relative to each value a near-zero anomaly blows up; scaled by the variable's
    largest value it does not; a NaN in one answer only is infinitely different."""
    import xarray as xr

    truth = xr.Dataset({"a": ("x", [1e-3, 10.0]), "b": ("y", [2.0, np.nan])})
    got = truth.copy(deep=True)
    got["a"][0] = 1.1e-3
    assert b7_incremental.max_difference(got, truth) == pytest.approx(0.1)
    assert b7_incremental.scaled_difference(got, truth) == pytest.approx(1e-5)
    got["b"][1] = 2.0
    assert b7_incremental.max_difference(got, truth) == float("inf")
    assert b7_incremental.max_difference(truth[["a"]], truth) == float("inf")


def test_b9_agreement_is_relative_and_counts_cells_valid_in_one_answer_only():
    """B9 compares its answer with xarray-regrid's whatever their latitude order: the
    largest relative difference where both are valid, and the cells valid in one only."""
    import xarray as xr

    lat, lon = [-1.0, 1.0], [0.0, 2.0, 4.0]
    ours = xr.Dataset(
        {b9_regrid.VAR: (("lat", "lon"), [[300.0, 300.0, np.nan], [290.0, 280.0, 270.0]])},
        coords={"lat": lat, "lon": lon},
    )
    theirs = xr.DataArray(
        [[290.0, 280.0 * (1 + 1e-4), np.nan], [300.0, 300.0, 1.0]],  # north first
        dims=("lat", "lon"),
        coords={"lat": lat[::-1], "lon": lon},
    )
    out = b9_regrid.agreement(ours, theirs)
    assert out["max_rel_diff"] == pytest.approx(1e-4, rel=1e-3)  # relative to theirs
    assert out["max_abs_diff_K"] == pytest.approx(0.028)
    assert (out["valid_ours_only"], out["valid_theirs_only"], out["valid_both"]) == (1, 1, 4)
    assert out["met"] is False  # 1e-4 > the tolerance
    theirs[0, 1] = 280.0
    assert b9_regrid.agreement(ours, theirs)["met"] is True
