"""Zarr stores (v2, v3) and Icechunk repositories as a recipe's dataset (``store:``), in
the ARCO-ERA5 layout made from the demo data (tests/support/arco.py): the same answers as the
era5-pds tree, month-by-month states reused after an append and invalidated by a chunk
rewritten in place, and the snapshot read in the provenance."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import icechunk
import numpy as np
import pytest
import xarray as xr
import yaml
import zarr
from distributed import Client, LocalCluster

from pangeo_hpc.batch.chains.recipe_yaml import find, load
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.batch.pipeline.steps import compute, open_inputs
from pangeo_hpc.errors import DataNotFoundError, InputError
from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.io.stores import StoreRef, open_any_store
from tests.support.arco import arco_dataset, write_icechunk, write_zarr
from tests.support.cf import cfchecks, unavailable
from tests.support.cli import run_cli
from tests.support.needs import missing, require_tool
from tests.support.trees import ALL_PERIOD, DAILY_VARIABLES

SST = "sea_surface_temperature"
#: the shipped recipes of daily variables (precipitation: not in the ARCO names, see
#: pangeo_hpc.io.store_names; model-vs-era5-t2m: several datasets)
RECIPES = (
    "era5-sst-mean",
    "era5-sst-trend",
    "era5-nino34",
    "era5-nino34-djf",
    "era5-sst-hovmoeller",
    "era5-t2m-normals",
    "era5-t2m-warming",
    "era5-wind-speed",
)
KINDS = ("zarr-v3", "zarr-v2", "icechunk")


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def arco(all_variables_tree, tmp_path_factory) -> dict[str, Path]:
    """The four daily demo variables of 2000-2002 as an ARCO-ERA5-like Zarr v3 and v2
    store and Icechunk repository (read-only: don't modify)."""
    ds = arco_dataset(all_variables_tree, list(DAILY_VARIABLES), *ALL_PERIOD)
    root = tmp_path_factory.mktemp("arco")
    out = {k: root / f"arco-{k}" for k in KINDS}
    write_zarr(ds, out["zarr-v3"])
    write_zarr(ds, out["zarr-v2"], zarr_format=2)
    write_icechunk(ds, icechunk.local_filesystem_storage(str(out["icechunk"])))
    return out


def _store_recipe(tmp_path: Path, name: str, store: Path | str, **extra) -> Path:
    """The shipped recipe ``name`` with ``dataset.store`` set."""
    doc = yaml.safe_load(find(name).read_text())
    doc["dataset"]["store"] = str(store)
    doc["dataset"].update(extra)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _values_equal(a: xr.Dataset, b: xr.Dataset, rtol: float = 1e-12) -> None:
    assert set(a.data_vars) == set(b.data_vars)
    for name in a.data_vars:
        x, y = a[name], b[name]
        assert x.shape == y.shape, name
        np.testing.assert_allclose(x.values, y.values, rtol=rtol, atol=0, err_msg=name)
        assert x.attrs.get("units") == y.attrs.get("units"), name


@pytest.mark.parametrize("kind", KINDS)
def test_a_store_opens_as_the_tree_under_the_recipe_names(kind, arco, all_variables_tree):
    names = ["air_temperature_at_2_metres", SST]
    ds = open_any_store(str(arco[kind]), names, "2001-02", "2001-04")
    tree = open_era5(names, "2001-02", "2001-04", source=all_variables_tree)
    assert list(ds.data_vars) == names and ds[SST].dims == ("time", "latitude", "longitude")
    assert ds.latitude.values[0] > ds.latitude.values[-1]  # descending, as ARCO-ERA5
    for v in names:
        np.testing.assert_array_equal(ds[v].values, tree[v].values)
    pieces = ds.encoding["source_pieces"]
    assert [(a, b) for a, b, _ in pieces] == [(0, 28), (28, 59), (59, 89)]
    assert pieces[0][2] == [
        f"{arco[kind]}/2m_temperature#2001-02",
        f"{arco[kind]}/{SST}#2001-02",
    ]
    # Dask chunks never cross a month: a month's state reads its own chunks only
    assert ds[SST].data.chunks[0] == (28, 31, 30)
    store = ds.encoding["source_store"]
    assert store["url"] == str(arco[kind])
    if kind == "icechunk":
        repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(arco[kind])))
        assert store["snapshot"] == repo.lookup_branch("main") and store["branch"] == "main"


@pytest.mark.parametrize("name", RECIPES)
def test_shipped_recipes_on_a_repository_equal_the_tree(
    name, arco, all_variables_tree, client, tmp_path
):
    """Each shipped chain on the Icechunk repository (incrementally, a state per month)
    against the same recipe on the NetCDF tree (whole): equal to 1e-12."""
    spec = load(_store_recipe(tmp_path, name, arco["icechunk"]))
    inputs = open_inputs(spec, start=ALL_PERIOD[0], end=ALL_PERIOD[1])
    on_store = compute(inputs, client, cache=StateCache(tmp_path / "cache"))
    tree = open_inputs(name, data=all_variables_tree, start=ALL_PERIOD[0], end=ALL_PERIOD[1])
    on_tree = compute(tree, client, cache=False)
    _values_equal(on_store.result, on_tree.result)
    if name != "era5-t2m-warming":  # its land/ocean mask is made from every step
        assert on_store.reads.incremental, on_store.reads.why
        assert on_store.reads.files_read + on_store.reads.files_skipped == on_store.reads.files


@pytest.mark.parametrize("kind", ["zarr-v3", "zarr-v2"])
def test_era5_sst_mean_on_zarr_stores_equals_the_tree(
    kind, arco, all_variables_tree, client, tmp_path
):
    spec = load(_store_recipe(tmp_path, "era5-sst-mean", arco[kind]))
    on_store = compute(open_inputs(spec, start="2000-01", end="2001-12"), client, cache=False)
    tree = open_inputs("era5-sst-mean", data=all_variables_tree, start="2000-01", end="2001-12")
    _values_equal(on_store.result, compute(tree, client, cache=False).result)


def _sst(all_variables_tree: Path, start: str, end: str) -> xr.Dataset:
    return arco_dataset(all_variables_tree, [SST], start, end)


def _mean_recipe(tmp_path: Path, store: Path) -> Path:
    doc = {
        "name": "store-sst",
        "dataset": {"variable": SST, "store": str(store)},
        "results": {
            "map": [{"time_mean": {}}],
            "series": [{"area_mean": {}}, {"resample": {"freq": "monthly", "stat": "mean"}}],
        },
    }
    path = tmp_path / "store-sst.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _run(spec_path: Path, client, cache: Path):
    """The recipe incrementally with ``cache``, and whole (no cache) for comparison."""
    parts = compute(open_inputs(str(spec_path)), client, cache=StateCache(cache))
    whole = compute(open_inputs(str(spec_path)), client, cache=False)
    _values_equal(parts.result, whole.result, rtol=1e-6)
    return parts


@pytest.mark.parametrize("kind", ["zarr-v3", "icechunk"])
def test_a_month_appended_reads_only_its_chunks(kind, all_variables_tree, client, tmp_path):
    """Five months, then a sixth appended (zarr append / a new Icechunk commit): the next
    run reads one month and reuses the five states."""
    store = tmp_path / "sst-store"
    first, sixth = (
        _sst(all_variables_tree, "2000-01", "2000-05"),
        _sst(all_variables_tree, "2000-06", "2000-06"),
    )
    if kind == "icechunk":
        storage = icechunk.local_filesystem_storage(str(store))
        write_icechunk(first, storage)
    else:
        write_zarr(first, store)
    recipe = _mean_recipe(tmp_path, store)
    before = _run(recipe, client, tmp_path / "cache")
    assert before.reads.files_read == 5 and before.reads.files_reused == 0
    if kind == "icechunk":
        write_icechunk(sixth, storage, append=True)
    else:
        write_zarr(sixth, store, append=True)
    after = _run(recipe, client, tmp_path / "cache")
    assert (after.reads.files_read, after.reads.files_reused) == (1, 5), after.reads.as_dict()
    assert after.result["series"].sizes["time"] == 6


@pytest.mark.parametrize("kind", ["zarr-v3", "zarr-v2", "icechunk"])
def test_a_chunk_rewritten_in_place_invalidates_its_month_only(
    kind, all_variables_tree, client, tmp_path
):
    store = tmp_path / "sst-store"
    first = _sst(all_variables_tree, "2000-01", "2000-04")
    if kind == "icechunk":
        storage = icechunk.local_filesystem_storage(str(store))
        write_icechunk(first, storage, compressed=False)
    else:
        write_zarr(first, store, zarr_format=2 if kind == "zarr-v2" else 3, compressed=False)
    recipe = _mean_recipe(tmp_path, store)
    before = _run(recipe, client, tmp_path / "cache")
    day = 40  # 2000-02-10
    changed = np.where(np.isnan(first[SST][day].values), np.nan, first[SST][day].values + 5)
    if kind == "icechunk":
        repo = icechunk.Repository.open(storage)
        session = repo.writable_session("main")
        zarr.open_group(session.store, mode="r+")[SST][day] = changed
        session.commit("February 10th corrected")
    else:
        zarr.open_group(str(store), mode="r+")[SST][day] = changed
    after = _run(recipe, client, tmp_path / "cache")
    assert (after.reads.files_read, after.reads.files_reused) == (1, 3), after.reads.as_dict()
    feb = (
        after.result["series"].sel(time="2000-02").values
        - before.result["series"].sel(time="2000-02").values
    )
    assert feb.item() > 0.1  # the new values, not the cached state
    jan = after.result["series"].sel(time="2000-01") - before.result["series"].sel(time="2000-01")
    assert jan.item() == 0


def test_a_snapshot_is_read_as_it_was_and_recorded(all_variables_tree, client, tmp_path):
    store = tmp_path / "sst.icechunk"
    storage = icechunk.local_filesystem_storage(str(store))
    old = write_icechunk(_sst(all_variables_tree, "2000-01", "2000-02"), storage)
    write_icechunk(_sst(all_variables_tree, "2000-03", "2000-03"), storage, append=True)
    path = _store_recipe(tmp_path, "era5-sst-mean", store, snapshot=old)
    doc = yaml.safe_load(path.read_text())
    doc["dataset"].pop("start"), doc["dataset"].pop("end")
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "result"
    done = run_cli(str(path), "--out", str(out), "--cluster", "local", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    store_doc = summary["provenance"]["inputs"]["store"]
    assert store_doc == {"url": str(store), "kind": "icechunk", "snapshot": old, "branch": None}
    assert summary["inputs"]["period"][1] == "2000-02-29"
    assert summary["inputs"]["access"] == "icechunk"
    assert xr.open_dataset(out / "result.nc").sizes  # opens
    cdo = subprocess.run([require_tool("cdo"), "-s", "sinfon", str(out / "result.nc")],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert cdo.returncode == 0 and "latitude" in cdo.stdout, cdo.stderr
    why = unavailable()
    if why:
        missing("cfchecks", why)
    report = cfchecks(out / "result.nc", tmp_path / "tables")  # the store's coordinate names
    assert not report.errors, report
    shown = run_cli("provenance", str(out), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"store: icechunk {store} , snapshot {old}".replace(" ,", ",") in shown.stdout
    assert f"2 months of the store {store} at snapshot {old} not checked" in shown.stdout


def test_bad_store_input_is_one_line(arco, tmp_path):
    with pytest.raises(InputError, match="both files: and store:; keep one"):
        load(_store_recipe(tmp_path, "era5-sst-mean", arco["icechunk"], files="x/*.nc"))
    with pytest.raises(InputError, match=r"dataset.branch is for an Icechunk repository"):
        doc = yaml.safe_load(find("era5-sst-mean").read_text())
        doc["dataset"]["branch"] = "dev"
        (tmp_path / "b.yaml").write_text(yaml.safe_dump(doc))
        load(tmp_path / "b.yaml")
    with pytest.raises(InputError, match="keep one"):
        StoreRef("x", branch="main", snapshot="ABC")
    with pytest.raises(DataNotFoundError, match=r"branch 'dev' is not in the Icechunk repository"):
        open_any_store(StoreRef(str(arco["icechunk"]), branch="dev"), [SST])
    with pytest.raises(
        DataNotFoundError,
        match=r"'total_cloud_cover' is not in the store .* it holds \['10m_u_component_of_wind'",
    ):
        open_any_store(str(arco["zarr-v3"]), ["total_cloud_cover"])
    with pytest.raises(DataNotFoundError, match=r"holds 2000-01..2002-12, not 1999-01..2000-01"):
        open_any_store(str(arco["zarr-v3"]), [SST], "1999-01", "2000-01")
    with pytest.raises(DataNotFoundError, match="is not a Zarr store or Icechunk repository"):
        open_any_store(str(tmp_path), [SST])
    with pytest.raises(InputError, match="is a Zarr store, not an Icechunk repository"):
        open_any_store(StoreRef(str(arco["zarr-v3"]), branch="main"), [SST])


def test_cli_refuses_a_bad_store_with_exit_2_and_writes_nothing(arco, tmp_path):
    path = _store_recipe(tmp_path, "era5-sst-mean", arco["icechunk"], branch="nope")
    out = tmp_path / "out"
    done = run_cli(str(path), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "branch 'nope' is not in the Icechunk repository" in done.stderr
    assert "it has branches ['main']" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_data_flag_at_a_store(arco, all_variables_tree, client, tmp_path):
    """``--data`` at a store that convert did not write opens it as ``store:`` does."""
    inputs = open_inputs("era5-sst-mean", data=str(arco["zarr-v3"]), start="2000-01", end="2000-03")
    assert inputs.dataset.encoding["source_access"] == "zarr"
    tree = open_inputs("era5-sst-mean", data=all_variables_tree, start="2000-01", end="2000-03")
    _values_equal(
        compute(inputs, client, cache=False).result, compute(tree, client, cache=False).result
    )
