"""Climatologies and resamplings computed whole and from per-file states: the same numbers
to the bit (both compute through the same aggregation, merging the same blocks' states in
the same order), and seasons left out or completed the same way as files come in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from pangeo_hpc.batch.chains.recipe_yaml import load
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.batch.pipeline.steps import compute, open_inputs
from pangeo_hpc.recipes import area_mean


def _recipe(tmp_path: Path, steps: list, start: str, end: str) -> Path:
    doc = {
        "name": "mine",
        "dataset": {"variable": "sea_surface_temperature", "start": start, "end": end},
        "steps": steps,
    }
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _values(run) -> xr.DataArray:
    return run.result["sea_surface_temperature"]


def _bit_identical(whole, parts) -> None:
    a, b = _values(whole), _values(parts)
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a.values, b.values)
    for c in a.coords:
        np.testing.assert_array_equal(a[c].values, b[c].values)
    assert a.attrs == b.attrs


#: float64 series (area means), whose sums round differently in another order, and a
#: float32 field; the second climatology's seasons each span 12 files (more than a tree
#: of 8 blocks a task merges in the same order as the files' states)
CASES = {
    "seasonal resample of an area mean": (
        [{"area_mean": {}}, {"resample": {"freq": "seasonal"}}],
        "2002-12",
        lambda s: s.resample(time0="QS-DEC").mean(),
    ),
    "seasonal climatology of an area mean": (
        [{"area_mean": {}}, {"climatology": {"freq": "seasonal"}}],
        "2003-12",
        lambda s: s.groupby("time0.season").mean(),
    ),
    # kept incomplete seasons, labelled with their first step (2000-01-01, 2000-12-01)
    "seasonal max of a box, incomplete seasons kept": (
        [
            {"select_region": {"lat": [-30, 30], "lon": [100, 250]}},
            {"resample": {"freq": "seasonal", "stat": "max", "incomplete": "keep"}},
        ],
        "2001-01",
        None,
    ),
    "monthly climatology of the field, a reference period": (
        [{"climatology": {"reference": ["2000-03", "2001-11"]}}],
        "2001-12",
        None,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_whole_and_incremental_are_the_same_to_the_bit(case, demo_tree, client, tmp_path):
    steps, end, wrong = CASES[case]
    spec = load(_recipe(tmp_path, steps, "2000-01", end))
    whole = compute(open_inputs(spec, data=demo_tree), client, cache=False)
    parts = compute(open_inputs(spec, data=demo_tree), client, cache=StateCache(tmp_path / "c"))
    assert parts.reads.incremental, parts.reads.why
    assert not whole.reads.incremental
    _bit_identical(whole, parts)
    if wrong is None:
        return
    # a plausible wrong implementation: xarray's own reduction of the same area-mean
    # series (pairwise sums of the whole series, not the files' sums added in order)
    # agrees to 1e-12 but not to the bit, so the test above would see it
    series = area_mean(open_inputs(spec, data=demo_tree).dataset.sea_surface_temperature)
    other = wrong(series.compute())
    got = _values(parts)
    dim = got.dims[0]
    other = other.sel({dim: got[dim].values})
    np.testing.assert_allclose(other.values, got.values, rtol=1e-12)
    assert not np.array_equal(other.values, got.values)


def test_one_more_month_completes_a_season_as_a_run_without_the_cache(demo_tree, client, tmp_path):
    """Month by month across DJF 2000/01: December alone and December-January are
    incomplete (left out), February completes the season. Each cached run reads one new
    file and equals a run without the cache to the bit; a state of December that knew
    its season was incomplete then (labelled -1 and cached empty) would give DJF from
    January and February alone."""
    cache = StateCache(tmp_path / "cache")
    steps = [{"area_mean": {}}, {"resample": {"freq": "seasonal"}}]
    seasons = {}
    for end in ("2000-11", "2000-12", "2001-01", "2001-02", "2001-03"):
        spec = load(_recipe(tmp_path, steps, "2000-01", end))
        parts = compute(open_inputs(spec, data=demo_tree), client, cache=cache)
        whole = compute(open_inputs(spec, data=demo_tree), client, cache=False)
        _bit_identical(whole, parts)
        if end != "2000-11":
            assert (parts.reads.files_read, parts.reads.files_reused) == (1, parts.reads.files - 1)
        seasons[end] = [str(t)[:7] for t in _values(parts).time0.values]
        lower = _values(parts).time0_bnds_lower.values
        upper = _values(parts).time0_bnds_upper.values
        labels = _values(parts).time0.values
        assert ((lower <= labels) & (labels <= upper)).all()
    whole_year = ["2000-03", "2000-06", "2000-09"]  # the DJF of Jan-Feb 2000: left out
    assert seasons == {
        "2000-11": whole_year,
        "2000-12": whole_year,
        "2001-01": whole_year,
        "2001-02": [*whole_year, "2000-12"],
        "2001-03": [*whole_year, "2000-12"],
    }
    comment = _values(parts).attrs["comment"]
    assert comment.endswith("DJF from 1999-12 (Jan+Feb only), MAM from 2001-03 (Mar only)")


def test_nino34_djf_across_a_winter_equals_a_run_without_the_cache(demo_tree, client, tmp_path):
    """The shipped recipe (DJF months, area mean, seasonal means, anomaly): as its data
    grow by a month into a new winter, cached runs equal runs without the cache."""
    cache = StateCache(tmp_path / "cache")
    sizes = []
    for end in ("2002-12", "2003-01", "2003-02"):
        parts = compute(
            open_inputs("era5-nino34-djf", data=demo_tree, end=end), client, cache=cache
        )
        whole = compute(
            open_inputs("era5-nino34-djf", data=demo_tree, end=end), client, cache=False
        )
        _bit_identical(whole, parts)
        sizes.append(_values(parts).sizes["time0"])
        assert "time0: mean (complete seasons only)" in _values(parts).attrs["cell_methods"]
    assert sizes == [2, 2, 3]  # DJF 2000/01 and 2001/02; 2002/03 once its February is in
