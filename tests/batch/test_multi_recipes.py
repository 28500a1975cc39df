"""Recipes over several datasets (issue 30, sections 3 and 4): the loader's refusals, whole
runs with a planted bias (files, the shipped recipe on the demo, notebook 08), the state
cache, catalogs. The combine steps against CDO: ``test_multi_combine.py``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import dask
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.batch.chains.multi_yaml import from_multi_dict
from pangeo_hpc.batch.pipeline.multi_run import run_multi
from pangeo_hpc.errors import InputError
from pangeo_hpc.write.figure_kinds import colours
from tests.support.cf import cfchecks, unavailable
from tests.support.cli import run_cli
from tests.support.known import cell_areas
from tests.support.multi_data import MODEL_LAT, MODEL_LON, planted_bias, write_pair
from tests.support.needs import missing, require_tool

STEPS = [{"time_mean": {}}, {"regrid": {"grid": "$model", "method": "conservative"}}]
COMBINE = [
    {"bias": {"reference": "obs"}},
    {"rmse": {"reference": "obs"}},
    {"correlation": {"reference": "obs"}},
]


def recipe(folders: tuple[Path, Path], **changes) -> dict:
    model, obs = folders
    doc = {
        "name": "model-vs-obs",
        "datasets": {
            "model": {"variable": "tas", "files": f"{model}/*.nc"},
            "obs": {"variable": "t2m", "files": f"{obs}/*.nc"},
        },
        "steps": STEPS,
        "combine": COMBINE,
    }
    return doc | changes


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    return write_pair(tmp_path_factory.mktemp("pair"))


# -- the loader ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda d: d["combine"].__setitem__(0, {"bias": {"reference": "era6"}}),
            r"combine\[0\] \(bias\): reference='era6' is not one of the datasets \['model', 'obs'\]",
        ),
        (
            lambda d: d.__setitem__("steps", [{"regrid": {"grid": "$modle"}}]),
            r"steps\[0\] \(regrid\): grid=\$modle names no dataset: use one of \['\$model', '\$obs'\]",
        ),
        (
            lambda d: d["combine"].__setitem__(0, {"bias_map": {}}),
            r"unknown combine step 'bias_map'",
        ),
        (
            lambda d: d["combine"].__setitem__(0, {"rmse": {"reference": "obs", "over": "depth"}}),
            r"over='depth' must be",
        ),
        (
            lambda d: (
                d["datasets"]["model"].update(start="2001-01", end="2001-12"),
                d["datasets"]["obs"].update(start="2005-01", end="2005-12"),
            ),
            r"no period in common \(model 2001-01..2001-12, obs 2005-01..2005-12\)",
        ),
        (lambda d: d["datasets"].pop("obs"), r"two or more names"),
    ],
)
def test_loader_refuses_in_one_line(edit, match):
    doc = recipe((Path("m"), Path("o")))
    doc["combine"] = list(COMBINE)
    doc["datasets"] = {k: dict(v) for k, v in doc["datasets"].items()}
    edit(doc)
    with pytest.raises(InputError, match=match) as info:
        from_multi_dict(doc)
    assert "\n" not in str(info.value)


def test_each_dataset_is_a_recipe_of_its_own_with_the_grid_written_in():
    spec = from_multi_dict(recipe((Path("m"), Path("o"))))
    box = {"lat": [-90.0, 90.0, 2.5], "lon": [-1.25, 358.75, 2.5]}
    obs = spec.recipe_for("obs", {"model": box})
    assert [s.name for s in obs.steps] == ["time_mean", "regrid"]
    assert obs.steps[1].options["grid"] == box  # in the state cache's key
    assert [s.name for s in spec.recipe_for("model", {"model": box}).steps] == ["time_mean"]


# -- a whole run: the planted bias --------------------------------------------------------


@pytest.fixture(scope="module")
def run(pair, tmp_path_factory):
    folder = tmp_path_factory.mktemp("run")
    with dask.config.set({"pangeo-hpc.cache.folder": str(folder / "cache")}):
        return run_multi(from_multi_dict(recipe(pair)), workers=1, out=folder / "out")


def test_bias_is_the_planted_one_with_rmse_and_correlation(run):
    ds = run.result
    planted = planted_bias(MODEL_LAT, MODEL_LON)
    # float32 inputs near 280 K: 3e-5 K of rounding; 2e-4 is clear of it
    np.testing.assert_allclose(ds.model.values, planted, atol=2e-4)
    assert ds.model.attrs["units"] == "K"  # the model's degC converted to obs' K
    assert ds.model.attrs["long_name"].endswith("model minus obs")
    w = cell_areas(MODEL_LAT, MODEL_LON)
    expected = np.sqrt((w * planted**2).sum() / w.sum())
    np.testing.assert_allclose(float(ds.model_rmse), expected, rtol=1e-5)
    assert 0.9 < float(ds.model_correlation) < 1.0
    style = colours(ds.model, ds.model.values)
    assert style["vmin"] == -style["vmax"] and style["cmap"].name.startswith("RdBu")
    assert set(run.summary["datasets"]) == {"model", "obs"}


def test_the_result_passes_cfchecks_and_opens_in_cdo(run, tmp_path):
    path = run.out / "result.nc"
    info = subprocess.run(
        [require_tool("cdo"), "-s", "showname", str(path)], capture_output=True, text=True
    )
    assert info.returncode == 0 and "model" in info.stdout, info.stderr
    why = unavailable()
    if why is not None:
        missing("cfchecks", why)
    report = cfchecks(path, tmp_path / "tables")
    assert report.errors == [], "\n".join(report.errors)


def test_each_dataset_runs_incrementally_and_a_second_run_reads_nothing(pair, tmp_path):
    spec = from_multi_dict(recipe(pair))
    with dask.config.set({"pangeo-hpc.cache.folder": str(tmp_path / "cache")}):
        first = run_multi(spec, workers=1, out=tmp_path / "one")
        again = run_multi(spec, workers=1, out=tmp_path / "two")
    # obs (standard calendar) runs from per-file states; the noleap model runs whole until
    # the state cache takes other calendars (issue 30 section 1, another branch)
    for name in ("model", "obs"):
        before = first.summary["datasets"][name]["reads"]
        after = again.summary["datasets"][name]["reads"]
        if name == "model" and not before["incremental"]:
            assert "calendar" in before["why"], before
            continue
        assert before["incremental"] and before["files_read"] == 2, before
        assert after["files_reused"] == 2 and after["files_read"] == 0, after
    xr.testing.assert_identical(first.result, again.result)


def test_different_grids_at_the_combine_exit_2_and_nothing_written(pair, tmp_path):
    doc = recipe(pair, steps=[{"time_mean": {}}])
    import yaml

    (tmp_path / "r.yaml").write_text(yaml.safe_dump(doc))
    cache = tmp_path / "cache"
    r = run_cli(
        "r.yaml",
        "--workers",
        "1",
        "--no-progress",
        "--out",
        str(tmp_path / "out"),
        cwd=tmp_path,
    )
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and "model is on the grid 72 x 144" in line and "regrid" in line, line
    assert not (tmp_path / "out").exists()
    assert not cache.exists() or not any(cache.rglob("*"))


# -- section 4: the demo's model against the demo's ERA5 ----------------------------------


@pytest.fixture(scope="module")
def demo_with_model(tmp_path_factory) -> Path:
    from dataclasses import replace

    from pangeo_hpc.demo import generate
    from pangeo_hpc.demo.model import write_model
    from tests.support.trees import TEST_SPEC

    root = tmp_path_factory.mktemp("demo-model")
    spec = replace(
        TEST_SPEC, start="2000-01", end="2001-12", variables=("air_temperature_at_2_metres",)
    )
    generate(root, spec, workers=2)
    write_model(root, spec)
    return root


@pytest.mark.slow
def test_shipped_model_vs_era5_finds_the_planted_bias(demo_with_model, tmp_path):
    from pangeo_hpc.demo.model import planted_bias

    args = ("model-vs-era5-t2m", "--data", str(demo_with_model), "--start", "2000-01")
    r = run_cli(
        *args,
        "--end",
        "2001-12",
        "--workers",
        "1",
        "--no-progress",
        "--out",
        str(tmp_path / "out"),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    with xr.open_dataset(tmp_path / "out" / "result.nc") as ds:
        b = planted_bias()
        # the demo's noise (0.3 K a day) averaged over two years onto 2.5-degree cells:
        # ~0.005 K; a bilinear instead of conservative regrid is off by up to ~0.3 K
        np.testing.assert_allclose(ds.model.values, b, atol=0.03)
        w = cell_areas(MODEL_LAT, MODEL_LON)
        assert float(ds.model_rmse) == pytest.approx(np.sqrt((w * b**2).sum() / w.sum()), rel=1e-2)
        assert float(ds.model_correlation) > 0.99
        assert ds.model.attrs["long_name"].endswith("model minus era5")
    report = (
        cfchecks(tmp_path / "out" / "result.nc", tmp_path / "tables")
        if unavailable() is None
        else None
    )
    assert report is None or report.errors == [], report


@pytest.mark.slow
def test_08_notebook_builds_the_chain_and_the_recipe_agrees(demo_with_model, tmp_path):
    from tests.test_notebooks import NOTEBOOKS, execute, images_of, number, text_of

    path = next(p for p in NOTEBOOKS if p.stem.startswith("08"))
    nb = execute(
        path,
        tmp_path,
        DATA=str(demo_with_model),
        START="2000-01",
        END="2001-12",
        WORKDIR=str(tmp_path / "out"),
    )
    text = text_of(nb)
    assert "model minus era5" in text and images_of(nb) == 1
    assert 0.99 < number(r"pattern correlation: ([\d.]+)", text) <= 1.0
    assert "same as step by step: True" in text
    assert number(r"recipe RMSE: ([\d.]+) K", text) == number(
        r"area-weighted RMSE: ([\d.]+) K", text
    )


# -- datasets from an ESM collection catalog ----------------------------------------------


def _catalog(folder: Path, models: dict[str, float]) -> Path:
    """An ESM collection (JSON + CSV) of the "model" files of :func:`write_pair` copied
    per source_id with an offset each (K), and one row of another variable."""
    import shutil

    rows = []
    model_folder, _ = write_pair(folder / "pair")
    for source, offset in models.items():
        for src in sorted(model_folder.glob("*.nc")):
            dst = folder / source / src.name.replace("TOY", source)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst)
            with xr.open_dataset(
                src, decode_times=xr.coders.CFDatetimeCoder(use_cftime=True)
            ) as ds:
                ds = ds.load()
            ds["tas"] = ds.tas + offset
            ds.tas.attrs.update(units="degC")
            dst.unlink()
            ds.to_netcdf(dst)
            rows.append(f"{source},historical,tas,{dst.relative_to(folder)}")
    rows.append(f"{next(iter(models))},historical,pr,nowhere.nc")
    (folder / "cat.csv").write_text(
        "source_id,experiment_id,variable_id,path\n" + "\n".join(rows) + "\n"
    )
    doc = {
        "esmcat_version": "0.1.0",
        "id": "test",
        "catalog_file": "cat.csv",
        "attributes": [{"column_name": c} for c in ("source_id", "experiment_id", "variable_id")],
        "assets": {"column_name": "path", "format": "netcdf"},
        "aggregation_control": {
            "variable_column_name": "variable_id",
            "groupby_attrs": ["source_id"],
            "aggregations": [],
        },
    }
    path = folder / "cat.json"
    path.write_text(__import__("json").dumps(doc))
    return path


def test_catalog_datasets_one_per_source_and_their_ensemble(tmp_path):
    cat = _catalog(tmp_path, {"MODEL-A": 0.0, "MODEL-B": 1.0, "MODEL-C": 3.5})
    doc = {
        "name": "ensemble-of-a-catalog",
        "datasets": {
            "catalog": str(cat),
            "query": {"variable_id": "tas", "experiment_id": "historical"},
            "by": "source_id",
        },
        "steps": [{"time_mean": {}}],
        "combine": [{"ensemble": {"stat": "mean"}}, {"ensemble": {"stat": "max"}}],
    }
    spec = from_multi_dict(doc)
    assert list(spec.datasets) == ["MODEL_A", "MODEL_B", "MODEL_C"]
    assert len(spec.datasets["MODEL_B"]["files"]) == 2
    with dask.config.set({"pangeo-hpc.cache.folder": str(tmp_path / "cache")}):
        run = run_multi(spec, workers=1, out=tmp_path / "out")
    with xr.open_dataset(sorted((tmp_path / "MODEL-A").glob("*.nc"))[0]) as one:
        units = one.tas.attrs["units"]
    a = run.result
    assert units == "degC"
    base = a.ensemble_max - 3.5
    np.testing.assert_allclose(a.ensemble_mean.values, base.values + 1.5, atol=1e-4)
    doc["datasets"]["query"] = {"variable_id": "tos"}
    with pytest.raises(
        InputError, match=r"no row of catalog 'cat.json' matches query \{'variable_id': 'tos'\}"
    ):
        from_multi_dict(doc)


def test_several_results_are_combined_each_under_its_own_name():
    from pangeo_hpc.batch.pipeline.multi_run import combine_results

    doc = recipe((Path("m"), Path("o")), steps=[], combine=[{"bias": {"reference": "obs"}}])
    doc["results"] = {"clim": [{"time_mean": {}}], "spread": [{"time_mean": {}}]}
    spec = from_multi_dict(doc)
    grid = {"lat": [-45.0, 45.0], "lon": [90.0, 270.0]}

    def values(offset: float) -> xr.Dataset:
        field = np.array([[1.0, 2.0], [3.0, 4.0]])
        return xr.Dataset(
            {
                "clim": (("lat", "lon"), field + offset, {"units": "K"}),
                "spread": (("lat", "lon"), 2 * field + offset, {"units": "K"}),
            },
            coords=grid,
        )

    out = combine_results(spec, {"model": values(1.5), "obs": values(0.0)})
    assert sorted(out.data_vars) == ["model_clim", "model_spread"]
    np.testing.assert_allclose(out.model_clim.values, 1.5)
    np.testing.assert_allclose(out.model_spread.values, 1.5)


def test_the_demo_model_rewrites_its_own_files_and_no_other(tmp_path):
    """``demo-data --model`` run again rewrites its own yearly files (``make demo`` twice);
    a file of the same name that it did not write is refused, unchanged."""
    from dataclasses import replace

    from pangeo_hpc.demo.model import write_model
    from pangeo_hpc.errors import InputError
    from tests.support.trees import TEST_SPEC

    spec = replace(TEST_SPEC, start="2000-01", end="2000-12")
    first = write_model(tmp_path, spec)
    again = write_model(tmp_path, spec)
    assert again == first and all(p.is_file() for p in again)
    first[0].write_bytes(b"a user's file")
    with pytest.raises(InputError):
        write_model(tmp_path, spec)
    assert first[0].read_bytes() == b"a user's file"
