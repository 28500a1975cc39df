"""``store:`` inside a multi-dataset recipe's ``datasets:`` (an ARCO-ERA5-like Zarr store,
local and on a real SeaweedFS, against the demo's CMIP-like model files), and ARCO-ERA5's
``total_precipitation`` read as era5-pds's ``precipitation_amount_1hour_Accumulation``.

Wrong code these tests were seen to fail on: main before this change (run_multi did not
pass --endpoint-url on to a dataset's s3:// store: test_a_multi_recipe_reads_an_s3_store_
with_the_endpoint_given; ``total_precipitation`` was not mapped: DataNotFoundError), and
precipitation bounds ``[t, t + 1 h]`` instead of ``[t - 1 h, t]`` (the hour ending at
00:00 counted in the day it is stamped with: the percentile of daily totals off by up to
a factor of two in test_arco_total_precipitation_gives_the_planted_daily_totals).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import boto3
import numpy as np
import pytest
import xarray as xr
import yaml

from pangeo_hpc.demo import generate
from pangeo_hpc.demo.answers import expected_precip_percentile
from pangeo_hpc.demo.model import planted_bias, write_model
from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.io.stores import open_any_store
from pangeo_hpc.recipes import daily_totals
from tests.support.arco import arco_dataset, write_zarr
from tests.support.cli import run_cli
from tests.support.paths import ROOT
from tests.support.s3env import aws_environment, forget_s3_clients
from tests.support.trees import TEST_SPEC

T2M = "air_temperature_at_2_metres"
PRECIP = "precipitation_amount_1hour_Accumulation"
START, END = "2000-01", "2000-06"
BUCKET = "multi-stores"
RECIPES = ROOT / "recipes"


@pytest.fixture(scope="module")
def model_and_store(tmp_path_factory) -> tuple[Path, Path]:
    """The demo's 2 m temperature and model (6 months), and an ARCO-like Zarr v3 store of
    the same 2 m temperature (``2m_temperature``, time/latitude/longitude)."""
    root = tmp_path_factory.mktemp("multi-store")
    spec = replace(TEST_SPEC, start=START, end=END, variables=(T2M,))
    generate(root / "tree", spec, workers=2)
    write_model(root / "tree", spec)
    write_zarr(arco_dataset(root / "tree", [T2M], START, END), root / "arco.zarr")
    return root / "tree", root / "arco.zarr"


def _multi(tmp_path: Path, store: str, file: str = "model-vs-arco-t2m.yaml") -> str:
    """model-vs-era5-t2m with ERA5 as a ``store:`` named by its ARCO-ERA5 variable."""
    doc = yaml.safe_load((RECIPES / "model-vs-era5-t2m.yaml").read_text())
    doc["name"] = "model-vs-arco-t2m"
    doc["datasets"]["model"].update(start=START, end=END)
    doc["datasets"]["era5"] = {"store": store, "variable": "2m_temperature",
                               "start": START, "end": END}  # fmt: skip
    path = tmp_path / file
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _run(recipe: str, tree: Path, out: Path, *extra: str) -> xr.Dataset:
    """Run ``recipe`` on ``tree`` into ``out`` (its folder is the CLI's working folder)."""
    done = run_cli(recipe, "--data", str(tree), "--start", START, "--end", END,
                   "--workers", "1", "--no-progress", "--no-cache", "--out", str(out),
                   *extra, cwd=out.parent)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with xr.open_dataset(out / "result.nc") as ds:
        return ds.load()


@pytest.mark.slow
def test_a_multi_recipe_reads_a_local_arco_store_as_the_tree(model_and_store, tmp_path):
    tree, store = model_and_store
    on_tree = _run("model-vs-era5-t2m", tree, tmp_path / "tree-out")
    on_store = _run(_multi(tmp_path, str(store)), tree, tmp_path / "store-out")
    # the same fields read two ways: the same answers (float32 inputs, float64 sums)
    for name in ("model", "model_rmse", "model_correlation"):
        np.testing.assert_allclose(on_store[name].values, on_tree[name].values, rtol=1e-6)
    # and the planted bias: 6 months of the demo's noise (0.3 K a day) leave up to
    # ~0.05 K per 2.5-degree cell; a bilinear instead of conservative regrid is off by
    # up to ~0.3 K
    np.testing.assert_allclose(on_store.model.values, planted_bias(), atol=0.1)


@pytest.mark.slow
@pytest.mark.s3
def test_a_multi_recipe_reads_an_s3_store_with_the_endpoint_given(
    model_and_store, seaweedfs, monkeypatch, tmp_path
):
    """The endpoint only on the command line (none in the environment): it must reach
    the era5 dataset's ``store:`` of a recipe over several datasets."""
    tree, store = model_and_store
    aws_environment(monkeypatch, seaweedfs, tmp_path)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    forget_s3_clients()
    client = boto3.client("s3", endpoint_url=seaweedfs.endpoint_url,
                          aws_access_key_id=seaweedfs.key,
                          aws_secret_access_key=seaweedfs.secret, region_name="us-east-1")  # fmt: skip
    if BUCKET not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
        client.create_bucket(Bucket=BUCKET)
    url = f"s3://{BUCKET}/arco-t2m.zarr"
    with xr.open_zarr(store) as local:
        write_zarr(local.load(), url, storage_options={
            "key": seaweedfs.key, "secret": seaweedfs.secret,
            "client_kwargs": {"endpoint_url": seaweedfs.endpoint_url}})  # fmt: skip
    recipe = _multi(tmp_path, url)
    local = _multi(tmp_path, str(store), "local-store.yaml")
    local_out = _run(local, tree, tmp_path / "local-out")
    s3_out = _run(recipe, tree, tmp_path / "s3-out", "--endpoint-url", seaweedfs.endpoint_url)
    xr.testing.assert_allclose(s3_out.drop_attrs(), local_out.drop_attrs(), rtol=1e-12, atol=0)
    forget_s3_clients()


def _arco_precip(tree: Path, start: str, end: str) -> xr.Dataset:
    """The demo's hourly precipitation as ARCO-ERA5 holds it: ``total_precipitation`` on
    ``time`` (each value the hour ending then), no bounds, ARCO's attributes."""
    ds = arco_dataset(tree, [PRECIP], start, end)
    ds = ds.drop_vars([c for c in ds.coords if c not in ("time", "latitude", "longitude")])
    ds["total_precipitation"].attrs = {"long_name": "Total precipitation", "short_name": "tp",
                                       "units": "m"}  # fmt: skip
    ds["time"].attrs = {}
    return ds


@pytest.mark.slow
def test_arco_total_precipitation_gives_the_planted_daily_totals(tmp_path):
    spec = replace(TEST_SPEC, resolution=10.0, start="2000-01", end="2000-02", variables=(PRECIP,))
    generate(tmp_path / "tree", spec, workers=2)
    write_zarr(_arco_precip(tmp_path / "tree", "2000-01", "2000-02"), tmp_path / "arco.zarr")

    ds = open_any_store(str(tmp_path / "arco.zarr"), [PRECIP], "2000-01", "2000-02")
    da = ds[PRECIP]
    assert da.attrs["units"] == "m"
    assert da.attrs["standard_name"] == "lwe_thickness_of_precipitation_amount"
    bounds = ds[ds["time"].attrs["bounds"]].values
    np.testing.assert_array_equal(bounds[:, 1] - bounds[:, 0], np.timedelta64(1, "h"))
    np.testing.assert_array_equal(bounds[:, 1], ds["time"].values)
    # daily totals as on the era5-pds tree (the same hours, each in the day it ends in)
    got = daily_totals(da, bounds=ds[ds["time"].attrs["bounds"]]).compute()
    tree = open_era5(PRECIP, "2000-01", "2000-02", source=tmp_path / "tree")
    want = daily_totals(tree[PRECIP], bounds=tree["time1_bounds"]).compute()
    t = got.dims[0]
    common = np.intersect1d(got[t].values, want[want.dims[0]].values)
    assert len(common) >= 57  # Jan 2 .. Feb 28 (the store's months end at Feb 29 23:00)
    np.testing.assert_allclose(
        got.sel({t: common}).values, want.sel({want.dims[0]: common}).values, rtol=1e-6
    )

    # the shipped recipe's steps on the store: the planted percentile, in mm/day
    doc = yaml.safe_load((RECIPES / "era5-precip-p95.yaml").read_text())
    doc["dataset"] = {"store": str(tmp_path / "arco.zarr"), "variable": PRECIP,
                      "start": "2000-01", "end": "2000-02"}  # fmt: skip
    recipe = tmp_path / "arco-precip-p95.yaml"
    recipe.write_text(yaml.safe_dump(doc))
    done = run_cli(str(recipe), "--workers", "1", "--no-progress", "--no-cache",
                   "--out", str(tmp_path / "out"), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with xr.open_dataset(tmp_path / "out" / "result.nc") as res:
        got = res[PRECIP]
        first, last = str(common[0])[:10], str(common[-1])[:10]
        expected = expected_precip_percentile(spec, first, last) * 1000.0  # m -> mm
        np.testing.assert_allclose(got.values, expected, rtol=1e-4)
        assert got.attrs["units"] == "mm day-1", got.attrs
