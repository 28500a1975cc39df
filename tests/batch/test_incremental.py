"""Incremental runs: per-file partial states, merged, equal the whole graph's answer.

Every chain that splits (steps that work time step by time step, a reduction with
mergeable states, anything after it) is run both ways on real demo files and compared to
1e-6 relative with the same metadata; one more month reads one file; a changed file only
its own; chains that cannot split say why and run whole.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from pangeo_hpc.batch.chains.recipe_yaml import load
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.batch.pipeline.steps import compute, open_inputs
from tests.support.trees import ALL_PERIOD, PRECIP_PERIOD


def _both(spec, data, client, cache_dir, start=None, end=None):
    """The recipe run whole (no cache) and incrementally (a cache in ``cache_dir``)."""
    inputs = open_inputs(spec, data=data, start=start, end=end)
    whole = compute(inputs, client, cache=False)
    again = open_inputs(spec, data=data, start=start, end=end)
    parts = compute(again, client, cache=StateCache(cache_dir))
    return whole, parts


def _same(whole, parts, rtol=1e-6):
    assert set(whole.result.data_vars) == set(parts.result.data_vars)
    for name in whole.result.data_vars:
        a, b = whole.result[name], parts.result[name]
        xr.testing.assert_allclose(a, b, rtol=rtol, atol=0)
        assert a.attrs == b.attrs, name
        for c in a.coords:
            assert a[c].attrs == b[c].attrs, (name, c)


def _recipe(tmp_path: Path, steps: list, name: str = "mine", **dataset) -> Path:
    doc = {
        "name": name,
        "dataset": {"variable": "sea_surface_temperature", **dataset},
        "steps": steps,
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


SHIPPED = [
    ("era5-sst-mean", None),
    ("era5-sst-trend", None),
    ("era5-nino34", None),
    ("era5-nino34-djf", None),
    ("era5-sst-hovmoeller", None),
    ("era5-t2m-normals", "all"),
    ("era5-wind-speed", "all"),
    ("era5-precip-p95", "precip"),
]


@pytest.mark.parametrize(("name", "tree"), SHIPPED, ids=[n for n, _ in SHIPPED])
def test_shipped_recipes_equal_the_whole_graph(
    name, tree, demo_tree, all_variables_tree, client, tmp_path
):
    data = all_variables_tree if tree else demo_tree
    start, end = {None: ("2000-01", "2002-12"), "all": ALL_PERIOD, "precip": PRECIP_PERIOD}[tree]
    whole, parts = _both(name, data, client, tmp_path / "cache", start, end)
    assert parts.reads.incremental, parts.reads.why
    assert not whole.reads.incremental and "caching is off" in whole.reads.why
    _same(whole, parts)
    reads = parts.reads
    assert reads.files_reused == 0 and reads.files_read + reads.files_skipped == reads.files
    assert reads.bytes_read > 0


STEPS = {
    "climatology monthly": [{"climatology": {}}],
    "climatology seasonal, reference": [
        {"climatology": {"freq": "seasonal", "reference": ["2000-03", "2001-11"]}}
    ],
    "seasonal max in a box": [
        {"select_region": {"lat": [-30, 30], "lon": [100, 250]}},
        {"resample": {"freq": "seasonal", "stat": "max"}},
    ],
    "annual min": [{"resample": {"freq": "annual", "stat": "min"}}],
    "monthly sum in degC": [
        {"convert_units": {"to": "degC"}},
        {"resample": {"freq": "monthly", "stat": "sum"}},
    ],
    "DJF area-mean series, daily trend": [
        {"select_months": [12, 1, 2]},
        {"area_mean": {}},
        {"trend": {"per": "decade", "stats": True}},
    ],
    "trend of daily data": [{"linear_trend": {"per": "year"}}],
    "zonal mean then time mean": [{"zonal_mean": {}}, {"time_mean": {}}],
}


@pytest.mark.parametrize("case", list(STEPS))
def test_each_reduction_equals_the_whole_graph(case, demo_tree, client, tmp_path):
    """Groups spanning files (DJF), minima/maxima, sums, climatologies with a reference
    period, trends with their statistics: per-file states merge exactly."""
    spec = load(_recipe(tmp_path, STEPS[case], start="2000-01", end="2002-02"))
    whole, parts = _both(spec, demo_tree, client, tmp_path / "cache")
    assert parts.reads.incremental, parts.reads.why
    _same(whole, parts)


@pytest.mark.parametrize(
    "steps",
    [[{"time_mean": {}}], [{"select_months": [12, 1, 2]}, {"time_mean": {}}]],
    ids=["all", "DJF"],
)
def test_a_time_mean_is_the_same_to_the_bit_whole_or_from_the_files_states(
    steps, demo_tree, client, tmp_path
):
    """time_mean computes through the mean's aggregation both ways (float64 sums and counts
    per block, added, divided): float32 data give the same float32 values to the bit, not
    values a float32 unit apart (xarray's float32 mean against the states' float64 sums)."""
    spec = load(_recipe(tmp_path, steps, start="2000-01", end="2000-12"))
    whole, parts = _both(spec, demo_tree, client, tmp_path / "cache")
    assert parts.reads.incremental, parts.reads.why
    a, b = whole.result["sea_surface_temperature"], parts.result["sea_surface_temperature"]
    assert a.dtype == b.dtype == np.float32
    np.testing.assert_array_equal(a.values, b.values)


def test_one_more_month_reads_one_file_and_equals_a_full_recompute(demo_tree, client, tmp_path):
    cache = StateCache(tmp_path / "cache")
    first = compute(
        open_inputs("era5-sst-trend", data=demo_tree, end="2001-11"), client, cache=cache
    )
    assert first.reads.files_read == 23 and first.reads.files_reused == 0
    inputs = open_inputs("era5-sst-trend", data=demo_tree, end="2001-12")
    update = compute(inputs, client, cache=cache)
    reads = update.reads
    assert (reads.files, reads.files_reused, reads.files_read) == (24, 23, 1)
    # the bytes of one month's file, counted by the reader: about 1/23 of the first run's
    assert 0 < reads.bytes_read < 2.5 * first.reads.bytes_read / 23
    full = compute(
        open_inputs("era5-sst-trend", data=demo_tree, end="2001-12"), client, cache=False
    )
    _same(full, update)
    # and the same again: nothing read, the merged state of every file reused
    again = compute(
        open_inputs("era5-sst-trend", data=demo_tree, end="2001-12"), client, cache=cache
    )
    assert (again.reads.files_reused, again.reads.files_read, again.reads.bytes_read) == (24, 0, 0)
    _same(full, again)


def test_a_changed_file_invalidates_its_own_state_only(demo_tree, client, tmp_path):
    tree = tmp_path / "era5"
    for month in ("01", "02", "03", "04"):
        shutil.copytree(demo_tree / "2000" / month, tree / "2000" / month)
    cache = StateCache(tmp_path / "cache")
    spec = load("era5-sst-mean")
    compute(open_inputs(spec, data=tree, end="2000-04"), client, cache=cache)
    changed = tree / "2000" / "03" / "data" / "sea_surface_temperature.nc"
    # the same bytes, written again: a new mtime (and a month of March 2000 replaced by
    # its reprocessed version would change its size as well)
    st = changed.stat()
    os.utime(changed, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    again = compute(open_inputs(spec, data=tree, end="2000-04"), client, cache=cache)
    assert (again.reads.files_reused, again.reads.files_read) == (3, 1)


@pytest.mark.parametrize(
    ("recipe", "why"),
    [
        ("era5-t2m-warming", "select_region with mask= takes its land/ocean mask"),
    ],
)
def test_chains_that_cannot_split_run_whole_and_say_why(
    recipe, why, all_variables_tree, client, tmp_path
):
    inputs = open_inputs(recipe, data=all_variables_tree, start=ALL_PERIOD[0], end=ALL_PERIOD[1])
    done = compute(inputs, client, cache=StateCache(tmp_path / "cache"))
    assert not done.reads.incremental
    assert why in done.reads.why
    assert done.reads.files_read == done.reads.files and done.reads.bytes_read > 0
    assert not (tmp_path / "cache").exists()  # nothing cached


def test_an_exact_percentile_cannot_split(demo_tree, client, tmp_path):
    spec = load(_recipe(tmp_path, [{"percentile": {"q": 90}}], start="2000-01", end="2000-03"))
    done = compute(open_inputs(spec, data=demo_tree), client, cache=StateCache(tmp_path / "c"))
    assert not done.reads.incremental
    assert "an exact percentile needs all the values" in done.reads.why


USER_STEP = """
def double(da):
    return da * 2
"""


@pytest.mark.parametrize("says", [False, True])
def test_a_user_step_splits_only_when_it_says_it_works_step_by_step(
    says, demo_tree, client, tmp_path
):
    code = USER_STEP + ("double.step_by_step = True\n" if says else "")
    (tmp_path / "mine_steps.py").write_text(code)
    steps = [{"function": "mine_steps:double"}, {"time_mean": {}}]
    spec = load(_recipe(tmp_path, steps, start="2000-01", end="2000-03"))
    whole, parts = _both(spec, demo_tree, client, tmp_path / "cache")
    assert parts.reads.incremental is says
    if not says:
        assert "double.step_by_step = True" in parts.reads.why
    _same(whole, parts)
    plain = compute(
        open_inputs("era5-sst-mean", data=demo_tree, end="2000-03"), client, cache=False
    )
    np.testing.assert_allclose(
        parts.result["sea_surface_temperature"], 2 * plain.result["time_mean"], rtol=1e-6
    )


def _rollups(cache: StateCache) -> list:
    return [e for e in cache.entries() if e.meta["result"].endswith("(all files merged)")]


def test_a_roll_up_of_finished_groups_is_not_used_when_a_new_file_adds_to_one(
    demo_tree, client, tmp_path
):
    # a resampling's roll-up keeps each season's finished value; January and February
    # 2001 belong to the DJF whose December the roll-up of 2000 holds: it must not be
    # used (the wrong implementation, a roll-up used whenever its files are all in the
    # run, gives DJF 2000/01 from December alone, or a season twice)
    steps = [{"area_mean": {}}, {"resample": {"freq": "seasonal"}}]
    spec = load(_recipe(tmp_path, steps, start="2000-01", end="2000-12"))
    cache = StateCache(tmp_path / "cache")
    compute(open_inputs(spec, data=demo_tree), client, cache=cache)
    (rollup,) = _rollups(cache)
    assert len(rollup.meta["files"]) == 12
    whole, parts = (
        compute(open_inputs(spec, data=demo_tree, end="2001-02"), client, cache=c)
        for c in (False, cache)
    )
    assert (parts.reads.files_reused, parts.reads.files_read) == (12, 2)
    _same(whole, parts)
    # MAM, JJA, SON 2000 and DJF 2000/01 (the DJF of January and February 2000 lacks its
    # December: left out, as resample leaves out incomplete seasons)
    assert parts.result["sea_surface_temperature"].sizes["time0"] == 4


def test_a_month_more_keeps_the_roll_up_a_year_more_writes_it_again(demo_tree, client, tmp_path):
    # one new file of 24: its own entry is loaded beside the roll-up, which is not written
    # again (5 % of its files); twelve more: written again, holding all 36
    cache = StateCache(tmp_path / "cache")
    spec = load("era5-sst-trend")
    runs = {}
    for end in ("2001-12", "2002-01", "2002-12"):
        runs[end] = compute(open_inputs(spec, data=demo_tree, end=end), client, cache=cache)
        held = {len(e.meta["files"]) for e in _rollups(cache)}
        assert held == {36 if end == "2002-12" else 24}, end
    assert (runs["2002-01"].reads.files_reused, runs["2002-01"].reads.files_read) == (24, 1)
    assert (runs["2002-12"].reads.files_reused, runs["2002-12"].reads.files_read) == (25, 11)
    full = compute(open_inputs(spec, data=demo_tree, end="2002-12"), client, cache=False)
    _same(full, runs["2002-12"])


def test_the_steps_after_a_reduction_are_checked_before_the_files_are_read(
    demo_tree, client, tmp_path
):
    # the opening checks the steps up to the reduction; a mistake after it (a reference
    # period the data do not cover) stops the run before any file is read, not after
    steps = [{"resample": {"freq": "monthly"}}, {"anomaly": {"reference": ["1990-01", "1990-12"]}}]
    spec = load(_recipe(tmp_path, steps, start="2000-01", end="2000-06"))
    inputs = open_inputs(spec, data=demo_tree)
    cache = StateCache(tmp_path / "cache")
    from pangeo_hpc.errors import InputError

    with pytest.raises(InputError, match=r"reference=\['1990-01', '1990-12'\]"):
        compute(inputs, client, cache=cache)
    assert cache.entries() == []
    with pytest.raises(InputError, match=r"reference=\['1990-01', '1990-12'\]"):
        inputs.lazy  # noqa: B018 - the whole graph, built when first asked for


def test_a_mistake_after_the_reduction_caches_nothing_even_with_one_file_to_read(
    demo_tree, client, tmp_path
):
    # a running mean longer than the monthly series: found before the one file's state is
    # computed, so neither its state nor a roll-up is left for a later run (issue 27)
    steps = [{"resample": {"freq": "monthly"}}, {"running_mean": {"window": 12}}]
    spec = load(_recipe(tmp_path, steps, start="2000-01", end="2000-01"))
    cache = StateCache(tmp_path / "cache")
    from pangeo_hpc.errors import InputError

    with pytest.raises(InputError, match=r"window"):
        compute(open_inputs(spec, data=demo_tree), client, cache=cache)
    assert cache.entries() == []


def test_the_whole_graph_is_built_when_asked_for_and_from_the_steps_built_before(
    demo_tree, all_variables_tree
):
    inputs = open_inputs("era5-sst-trend", data=demo_tree, end="2000-06")
    assert inputs._lazy is None and inputs.memo  # the resampling, built and checked
    (resampled,) = inputs.memo.values()
    lazy = inputs.lazy
    assert lazy is inputs.lazy and set(lazy) >= {"trend", "nino34", "global_mean_anomaly"}
    assert resampled.data.name in lazy["trend"].data.dask.layers  # not built twice
    # a recipe that runs whole is built (and checked) as it is opened
    whole = open_inputs(
        "era5-t2m-warming", data=all_variables_tree, start=ALL_PERIOD[0], end=ALL_PERIOD[1]
    )
    assert whole._lazy is not None


def test_a_roll_up_damaged_inside_its_values_gives_way_to_the_files_states(
    demo_tree, client, tmp_path
):
    # its list of files still reads (the run counts on it), its values do not (a CRC
    # error): the run takes each file's own state instead, reads nothing, same answer
    cache = StateCache(tmp_path / "cache")
    spec = load("era5-sst-trend")
    first = compute(open_inputs(spec, data=demo_tree, end="2000-12"), client, cache=cache)
    (rollup,) = _rollups(cache)
    raw = bytearray(rollup.path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # inside the largest member: the monthly values
    rollup.path.write_bytes(bytes(raw))
    from pangeo_hpc.batch.incremental.state_cache import CacheWarning

    with pytest.warns(CacheWarning, match="is damaged"):
        again = compute(open_inputs(spec, data=demo_tree, end="2000-12"), client, cache=cache)
    assert (again.reads.files_reused, again.reads.files_read) == (12, 0)
    _same(first, again, rtol=0)
    assert len(_rollups(cache)) == 1  # written again
