"""The recipe file's chain: steps parsed and checked before any data are read, run lazily,
user functions, and one-line errors naming the step and the value."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import dask.array as dsa
import numpy as np
import pytest
import xarray as xr
import yaml

from pangeo_hpc.batch.chains import chain
from pangeo_hpc.batch.chains.recipe_yaml import from_dict, load
from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes import climatology, global_mean, zonal_mean
from tests.support.lazy import raise_if_dask_computes

DATASET = {"variable": "sst", "start": "2000-01", "end": "2000-12"}


def field(nt: int = 24, *, chunks: int | None = 6) -> xr.Dataset:
    """Monthly fields on a 10-degree grid with a NaN patch, Dask-backed."""
    rng = np.random.default_rng(1)
    lat = np.arange(85.0, -90.0, -10.0)
    lon = np.arange(0.0, 360.0, 10.0)
    values = 280 + rng.standard_normal((nt, lat.size, lon.size)).astype("f4")
    values[:, 3:5, 10:14] = np.nan
    time = xr.date_range("2000-01-01", periods=nt, freq="MS")
    da = xr.DataArray(
        values,
        dims=("time", "lat", "lon"),
        coords={"time": time, "lat": lat, "lon": lon},
        attrs={"units": "K", "long_name": "sea surface temperature"},
        name="sst",
    )
    ds = da.to_dataset()
    ds["v"] = (da * 0 + 2.0).assign_attrs(units="K")
    return ds.chunk({"time": chunks}) if chunks else ds


def recipe(steps=None, results=None, *, folder: Path | None = None, **dataset):
    doc = {"name": "t", "dataset": {**DATASET, **dataset}}
    if steps is not None:
        doc["steps"] = steps
    if results is not None:
        doc["results"] = results
    path = None
    if folder is not None:
        path = folder / "t.yaml"
        path.write_text(yaml.safe_dump(doc))
        return load(str(path))
    return from_dict(doc, path)


def test_a_chain_equals_the_functions_called_by_hand():
    ds = field()
    r = recipe([{"zonal_mean": {}}, {"climatology": {}}])
    with raise_if_dask_computes():
        out = chain.build(r, ds)
    assert list(out) == ["sst"]  # a single result keeps the input's name
    assert out.sst.chunks is not None
    # a step dropped would not give this
    by_hand = climatology(zonal_mean(ds.sst))
    xr.testing.assert_allclose(out.sst.compute(), by_hand.compute())


def test_named_results_share_the_steps_before_them():
    ds = field()
    r = recipe(
        [{"global_mean": {}}],
        {"series": [], "overall": [{"climatology": {}}]},
    )
    out = chain.build(r, ds).compute()
    assert list(out) == ["series", "overall"]
    np.testing.assert_allclose(out.series, global_mean(ds.sst).compute(), rtol=1e-6)
    assert out.overall.sizes["month"] == 12


def test_a_list_or_a_value_goes_to_the_first_option():
    step = chain.parse_steps([{"time_series": "annual"}], "steps")[0]
    assert step.options == {chain.FIRST: "annual"} and step.where == "steps[0] (time_series)"
    out = chain.apply(step, field().sst, field())
    assert out.sizes["time"] == 2


def test_dollar_options_are_variables_of_the_dataset(tmp_path):
    (tmp_path / "mine.py").write_text(
        textwrap.dedent(
            """
            def add(da, *, other, factor=1.0):
                return da + factor * other
            """
        )
    )
    r = recipe(
        [{"function": "mine:add", "other": "$v", "factor": 3.0}],
        folder=tmp_path,
        variables=["sst", "v"],
        variable=None,
    )
    ds = field()
    out = chain.build(r, ds)
    np.testing.assert_allclose(out.sst.values, ds.sst.values + 6.0, rtol=1e-6)


def test_a_user_function_from_the_recipes_folder_runs_lazily(tmp_path):
    (tmp_path / "steps_of_mine.py").write_text(
        "import xarray as xr\n\n"
        "def double(da: xr.DataArray) -> xr.DataArray:\n"
        "    return (2 * da).assign_attrs(da.attrs)\n"
    )
    r = recipe([{"function": "steps_of_mine:double"}, {"global_mean": {}}], folder=tmp_path)
    ds = field()
    with raise_if_dask_computes():
        out = chain.build(r, ds)
    np.testing.assert_allclose(out.sst, 2 * global_mean(ds.sst).compute(), rtol=1e-6)


def test_a_user_function_that_computes_is_an_error_naming_it(tmp_path):
    (tmp_path / "eager.py").write_text(
        "def load_it(da):\n    return da.load()\n\n"
        "def to_numpy(da):\n    return da.copy(data=da.values)\n"
    )
    r = recipe([{"function": "eager:load_it"}], folder=tmp_path)
    with pytest.raises(InputError, match=r"steps\[0\] \(eager:load_it\).*computed the data"):
        chain.build(r, field())
    r = recipe([{"global_mean": {}}, {"function": "eager:to_numpy"}], folder=tmp_path)
    with pytest.raises(InputError, match=r"steps\[1\] \(eager:to_numpy\).*(computed|in memory)"):
        chain.build(r, field())
    # the same steps on data in memory are not an error: nothing lazy was computed
    r = recipe([{"function": "eager:load_it"}], folder=tmp_path)
    chain.build(r, field(chunks=None))


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"area_means": {}}], r"steps\[0\] \(area_means\): unknown recipe function 'area_means'"),
        ([{"global_mean": {"wieghts": 1}}], r"steps\[0\] \(global_mean\): options .*wieghts"),
        ([{"time_series": {"freq": "monthly"}, "zonal_mean": {}}], r"names 2 functions"),
        ([{"function": "no_such_module_here:f"}], r"cannot import module 'no_such_module_here'"),
        ([{"function": "os.path"}], r"must be written 'module:function'"),
        ([{"function": "os:no_such_fn"}], r"module 'os' has no function 'no_such_fn'"),
        ([{"anomaly": {"clim": "$nope"}}], r"clim='\$nope' names no variable.*\['\$sst'\]"),
        # values of a kind the function's annotation does not take (batch/chains/option_values.py)
        (
            [{"area_mean": {"weights": "cos"}}],
            r"steps\[0\] \(area_mean\): weights='cos' must be \$NAME.*\['\$sst'\]",
        ),
        ([{"trend": {"per": "eon"}}], r"per='eon' must be one of \['year', 'decade', 'century'\]"),
        ([{"area_mean": {"min_valid_share": "half"}}], r"min_valid_share='half' must be a number"),
        ([{"running_mean": {"window": True}}], r"window=True must be an integer"),
        ([{"wind_speed": {"v": None}}], r"v=None must be \$NAME"),
        ([3], r"steps\[0\]: 3 is not a step"),
        ("global_mean", r"steps must be a list"),
    ],
)
def test_bad_steps_are_refused_when_the_recipe_is_read(steps, message):
    with pytest.raises(InputError, match=message):
        recipe(steps)


def test_the_unknown_function_error_lists_the_known_ones():
    with pytest.raises(InputError) as err:
        recipe([{"nope": {}}])
    for name in ("global_mean", "zonal_mean", "climatology", "anomaly"):
        assert name in str(err.value)


def test_a_failing_step_is_named_in_the_error():
    r = recipe([{"global_mean": {}}, {"zonal_mean": {}}])  # no longitude left
    with pytest.raises(InputError, match=r"^steps\[1\] \(zonal_mean\): "):
        chain.build(r, field())


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"name": "t", "dataset": DATASET}, r"lacks steps"),
        ({"name": "t", "dataset": {"start": "2000-01", "end": "2000-02"}, "steps": []}, "variable"),
        (
            {"name": "t", "dataset": DATASET, "steps": [], "stesp": []},
            r"unknown key\(s\) \['stesp'\]",
        ),
        ({"name": "t", "dataset": {**DATASET, "varaible": "x"}, "steps": []}, "varaible"),
        ({"name": "t", "dataset": DATASET, "results": ["a"]}, "results must map"),
        ({"name": "t", "dataset": DATASET, "chain": "sst-mean"}, r"unknown key\(s\) \['chain'\]"),
    ],
)
def test_bad_recipe_files_are_refused(doc, message):
    with pytest.raises(InputError, match=message):
        from_dict(doc)


def test_a_files_dataset_needs_no_period():
    r = from_dict({"name": "t", "dataset": {"variable": "sst", "files": "/x/*.nc"}, "steps": []})
    assert r.files == "/x/*.nc" and r.start is None and r.variables == ("sst",)


def test_dask_stays_dask_through_a_user_function_using_map_blocks(tmp_path):
    (tmp_path / "blocks.py").write_text(
        "import numpy as np\n\n"
        "def clip(da, *, low):\n"
        "    return da.copy(data=da.data.map_blocks(np.maximum, low))\n"
    )
    r = recipe([{"function": "blocks:clip", "low": 280.0}], folder=tmp_path)
    out = chain.build(r, field())
    assert isinstance(out.sst.data, dsa.Array)
    assert float(out.sst.min()) >= 280.0


# --------------------------------------------------------------------- the command line

BAD = {
    "unknown step": (
        [{"area_means": {}}],
        r"steps\[0\] \(area_means\): unknown recipe function 'area_means': use one of \[.*'area_mean'",
    ),
    "wrong arguments": (
        [{"resample": {"freq": "monthly", "how": "mean"}}],
        r"steps\[0\] \(resample\): options .*'how'",
    ),
    "region outside the grid": (
        [{"select_region": {"lat": [95, 100], "lon": [0, 10]}}],
        r"steps\[0\] \(select_region\): .*95",
    ),
    "months absent from the period": (
        [{"select_months": [12]}],
        r"steps\[0\] \(select_months\): .*12",
    ),
    "incompatible units": (
        [{"convert_units": {"to": "mm"}}],
        r"steps\[0\] \(convert_units\): .*'K'.*'mm'|steps\[0\] \(convert_units\): .*K.*mm",
    ),
    "a user function that computes": (
        [{"function": "eager_steps:load_it"}],
        r"steps\[0\] \(eager_steps:load_it\): eager_steps:load_it computed the data",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_recipes_exit_2_with_one_line_and_write_nothing(case, demo_tree, tmp_path, capsys):
    from pangeo_hpc import run as cli

    steps, message = BAD[case]
    (tmp_path / "eager_steps.py").write_text("def load_it(da):\n    return da.load()\n")
    doc = {
        "name": "bad",
        "dataset": {"variable": "sea_surface_temperature", "start": "2000-01", "end": "2000-06"},
        "steps": steps,
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    code = cli.main([str(path), "--data", str(demo_tree), "--out", str(out), "--workers", "1"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert re.search(message, err), err
    assert not out.exists()


def _nc(path: Path, lat: np.ndarray, start: str) -> None:
    time = xr.date_range(start, periods=2, freq="D")
    lon = np.arange(0.0, 360.0, 30.0)
    da = xr.DataArray(
        np.zeros((2, lat.size, lon.size), "f4"),
        dims=("time", "lat", "lon"),
        coords={"time": time, "lat": lat, "lon": lon},
        attrs={"units": "K"},
    )
    da.to_dataset(name="tas").to_netcdf(path)


@pytest.mark.parametrize("case", ["a glob matching nothing", "files on different grids"])
def test_bad_datasets_exit_2_with_one_line(case, tmp_path, capsys):
    from pangeo_hpc import run as cli

    data = tmp_path / "data"
    data.mkdir()
    if case == "files on different grids":
        _nc(data / "tas_2000.nc", np.arange(-60.0, 61.0, 30.0), "2000-01-01")
        _nc(data / "tas_2001.nc", np.arange(-80.0, 81.0, 20.0), "2001-01-01")
        pattern, message = str(data / "tas_*.nc"), r"tas_200[01]\.nc.*tas_200[01]\.nc"
    else:
        pattern, message = str(data / "nope_*.nc"), r"nope_\*\.nc"
    doc = {"name": "bad", "dataset": {"variable": "tas", "files": pattern}, "steps": []}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    code = cli.main([str(path), "--out", str(out), "--workers", "1"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and re.search(message, err), err
    assert not out.exists()


@pytest.mark.slow
def test_a_files_recipe_runs_from_the_command_line(tmp_path, capsys):
    """Yearly CF files (not the era5-pds layout), a region and an area mean."""
    from pangeo_hpc import run as cli

    data = tmp_path / "data"
    data.mkdir()
    lat = np.arange(-75.0, 76.0, 30.0)
    for year in (2001, 2000):  # written out of order: sorted by their times
        _nc(data / f"tas_{year}.nc", lat, f"{year}-01-01")
    doc = {
        "name": "files",
        "dataset": {"variable": "tas", "files": str(data / "tas_*.nc")},
        "steps": [{"select_region": {"name": "tropics"}}, {"area_mean": {}}],
    }
    path = tmp_path / "files.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    assert cli.main([str(path), "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    res = xr.open_dataset(out / "result.nc")
    assert res.tas.sizes["time"] == 4 and res.tas.attrs["units"] == "K"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["inputs"]["files"] == 2 and summary["answer"]["tas"]["kind"] == "series"


def test_a_result_that_another_is_made_from_computes_on_a_cluster(tmp_path):
    """client.compute of such a Dataset after a resample failed with "lost dependencies"
    (dask/distributed 2026.8): each result is built so that it does not."""
    from distributed import Client

    (tmp_path / "times.py").write_text("def times(da, *, factor):\n    return da * factor\n")
    ds = field(nt=48)
    r = recipe(
        [{"global_mean": {}}, {"resample": {"freq": "QS-DEC"}}, {"anomaly": {}}],
        {"index": [], "double": [{"function": "times:times", "factor": 2.0}]},
        folder=tmp_path,
        end="2003-12",
    )
    with Client(processes=False, n_workers=1, threads_per_worker=1) as client:
        out = client.compute(chain.build(r, ds)).result()
    np.testing.assert_allclose(out.double, 2 * out["index"])


# --------------------------------------------------------------------- how a chain splits


def test_a_split_follows_what_each_function_declares(monkeypatch):
    """Where an incremental run cuts a chain comes from the functions' own declarations
    (pangeo_hpc.recipes.traits), never from a list of names."""
    from pangeo_hpc import recipes
    from pangeo_hpc.batch.incremental.splitting import Split, split
    from pangeo_hpc.recipes import traits

    steps = chain.parse_steps(
        [{"area_mean": {}}, {"resample": {"freq": "monthly", "stat": "max"}}], "steps"
    )
    cut = split(steps)
    assert isinstance(cut, Split) and cut.kind == "max" and cut.how.periods
    assert isinstance(split(chain.parse_steps([{"time_mean": {}}], "s")), Split)
    masked = chain.parse_steps([{"select_region": {"mask": "land"}}, {"time_mean": {}}], "s")
    assert "mask= takes its land/ocean mask from every time step" in split(masked)
    whole = chain.parse_steps([{"running_mean": {"window": 3}}, {"time_mean": {}}], "s")
    assert split(whole) == "s[0] (running_mean): running_mean's windows cross file boundaries"

    monkeypatch.delattr(recipes.area_mean, traits.STEP_BY_STEP)
    assert (
        split(steps)
        == "steps[0] (area_mean): area_mean is not known to work time step by time step"
    )
    monkeypatch.delattr(recipes.resample, traits.REDUCTION)
    later = chain.parse_steps([{"resample": {"freq": "monthly"}}], "s")
    assert split(later) == "s[0] (resample): resample is not known to work time step by time step"
