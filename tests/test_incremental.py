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
from distributed import Client, LocalCluster

from pangeo_hpc.batch.recipe_yaml import load
from pangeo_hpc.batch.state_cache import StateCache
from pangeo_hpc.batch.steps import compute, open_inputs
from tests.conftest import ALL_PERIOD, PRECIP_PERIOD


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster,
        Client(cluster) as c,
    ):
        yield c


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
