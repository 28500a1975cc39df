"""resample, daily_totals and running_mean against CDO (day/mon/seas/year statistics,
daysum after shifttime, runmean) on CDO-made fields and fields with NaN that vary in time."""

from __future__ import annotations

import subprocess
import typing
from pathlib import Path

import dask.array
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from pangeo_hpc.demo import DemoSpec, generate
from pangeo_hpc.errors import InputError
from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.recipes import (
    daily_totals,
    percentile,
    resample,
    running_mean,
    select_season,
    time_mean,
)
from pangeo_hpc.recipes.aggregations import STATISTICS
from pangeo_hpc.recipes.cf_attrs import TIME_PERIOD, prepare_for_file
from tests.support.lazy import raise_if_dask_computes
from tests.support.needs import require_tool

pytestmark = pytest.mark.cdo

#: 30-degree random values with both poles, in 0..360 and -180..180, and 15-degree
#: ocean depths (NaN over land)
GRIDS = {
    "random-0..360": "-random,r12x7,7",
    "random-180": "-sellonlatbox,-180,180,-90,90 -random,r12x7,7",
    "ocean-180": "-sellonlatbox,-180,180,-90,90 -setrtomiss,0,20000 -topo,r24x12",
}
#: time axes: (first time, step, count); CDO's statistic prefix for each freq
AXES = {
    "daily": ("2000-01-01,07:00:00", "1hour", 24 * 3 + 5),
    "monthly": ("2000-01-01,12:00:00", "1day", 75),
    "seasonal": ("2000-01-01,00:00:00", "5day", 95),
    "annual": ("1999-07-01,00:00:00", "10day", 100),
}
CDO_PREFIX = {"daily": "day", "monthly": "mon", "seasonal": "seas", "annual": "year"}
ALIAS = {"daily": "D", "monthly": "MS", "seasonal": "QS-DEC", "annual": "YS"}


def run_cdo(*args: str) -> None:
    cdo = require_tool("cdo")
    subprocess.run([cdo, "-s", "-f", "nc4", *args], check=True, capture_output=True)


def make(path: Path, axis: tuple[str, str, int], grid: str) -> Path:
    """CDO's ``grid`` field on a time axis, made to vary with time (and NaN in one step)."""
    start, step, count = axis
    raw = path.with_suffix(".raw.nc")
    run_cdo(
        "-settunits,hours",
        f"-settaxis,{start},{step}",
        f"-duplicate,{count}",
        *grid.split(),
        str(raw),
    )
    with xr.open_dataset(raw) as ds:
        name = next(iter(ds.data_vars))
        da = ds[name].load()
    k = np.arange(da.sizes["time"])[:, None, None]
    da = da * (1 + np.sin(0.7 * k)) + k / 10
    da[3, :2, :] = np.nan  # NaN in some steps only
    da.attrs = {"units": "m", "long_name": "test amount"}
    da.to_dataset(name=name).to_netcdf(path)
    return path


def cdo_result(path: Path, tmp_path: Path, ops: str) -> xr.DataArray:
    out = tmp_path / "cdo-out.nc"
    run_cdo("-settunits,hours", *ops.split(), str(path), str(out))
    with xr.open_dataset(out) as ds:
        return ds[next(v for v in ds.data_vars if "bnds" not in str(v))].load()


def opened(path: Path) -> xr.DataArray:
    ds = xr.open_dataset(path, chunks={"time": 10})
    return ds[next(iter(ds.data_vars))]


@pytest.fixture(scope="module")
def series(tmp_path_factory) -> dict[tuple[str, str], Path]:
    base = tmp_path_factory.mktemp("series")
    return {
        (freq, grid): make(base / f"{freq}-{grid}.nc", axis, ops)
        for freq, axis in AXES.items()
        for grid, ops in GRIDS.items()
    }


@pytest.mark.parametrize("grid", ["random-0..360", "ocean-180"])
@pytest.mark.parametrize("freq", list(AXES))
@pytest.mark.parametrize("stat", ["mean", "min", "max", "sum"])
def test_resample_equals_cdo(series, tmp_path, grid, freq, stat):
    path = series[freq, grid]
    expected = cdo_result(path, tmp_path, f"-{CDO_PREFIX[freq]}{stat}")
    da = opened(path)
    with raise_if_dask_computes():
        got = resample(da, freq=freq, stat=stat)
        kept = resample(da, freq=freq, stat=stat, incomplete="keep")
    # CDO keeps every period, incomplete seasons too (and warns)
    np.testing.assert_allclose(kept.values, expected.values, rtol=1e-5)
    # each value labelled with its period's start (a season kept without its first
    # month: with its first step); CDO's time stamp lies in that period. The default
    # leaves out the seasons without a month of data (the first DJF of January and
    # February, the last MAM of March and April): the others are CDO's
    cdo_times = pd.DatetimeIndex(expected.time.values)
    for ours in (got, kept):
        starts = pd.DatetimeIndex(ours.time.values)
        ends = starts + pd.tseries.frequencies.to_offset(ALIAS[freq])
        at = [
            np.flatnonzero((cdo_times >= a) & (cdo_times < b))
            for a, b in zip(starts, ends, strict=True)
        ]
        assert [len(i) for i in at] == [1] * len(at)
        np.testing.assert_allclose(ours.values, expected.values[np.concatenate(at)], rtol=1e-5)
    assert got.sizes["time"] == expected.sizes["time"] - (2 if freq == "seasonal" else 0)
    assert (starts == starts.to_period(ALIAS[freq][0]).start_time).all() or freq == "seasonal"
    assert got.attrs["units"] == "m"
    method = {"min": "minimum", "max": "maximum"}.get(stat, stat)
    seasons = " (complete seasons only)" if freq == "seasonal" else ""
    assert got.attrs["cell_methods"] == f"time: {method}{seasons}"


def test_seasons_without_a_month_of_data_are_dropped_or_kept_inside_their_bounds(series):
    da = opened(series["seasonal", "random-0..360"])  # 2000-01-01 on, every 5 days
    got = resample(da, freq="QS-DEC", stat="mean")
    # the DJF of January and February 2000 is left out, and the MAM of March-April 2001
    assert [str(t)[:10] for t in got.time.values] == [
        "2000-03-01", "2000-06-01", "2000-09-01", "2000-12-01"
    ]  # fmt: skip
    assert (
        "DJF from 1999-12 (Jan+Feb only), MAM from 2001-03 (Mar+Apr only)" in (got.attrs["comment"])
    )
    kept = resample(da, freq="QS-DEC", stat="mean", incomplete="keep")
    first = da.sel(time=slice("2000-01-01", "2000-02-29")).mean("time")
    np.testing.assert_allclose(kept.isel(time=0).values, first.values, rtol=1e-6)
    # labelled with its first step, inside its interval (not 1999-12-01, outside it)
    assert str(kept.time.values[0])[:10] == "2000-01-01"
    lower, upper = kept.time_bnds_lower.values[0], kept.time_bnds_upper.values[0]
    assert lower <= kept.time.values[0] <= upper
    assert str(upper)[:10] == "2000-03-01"
    assert kept.attrs["cell_methods"] == "time: mean (incomplete seasons kept)"
    assert kept.attrs["comment"].startswith("Incomplete seasons kept")
    xr.testing.assert_identical(
        kept.isel(time=slice(1, 5)).drop_attrs(), got.drop_attrs()
    )  # the complete ones are the same
    with pytest.raises(InputError, match=r"incomplete='some' is not one of \['drop', 'keep'\]"):
        resample(da, freq="seasonal", incomplete="some")


def test_resample_leaves_out_empty_periods_and_keeps_chunks():
    times = pd.date_range("2000-01-01", periods=366, freq="D")
    months = tuple(pd.Series(times.month).value_counts(sort=False).values)  # a file a month
    field = xr.DataArray(
        dask.array.zeros((366, 200, 200), chunks=(months, 200, 200)),
        dims=("time", "lat", "lon"),
        coords={"time": times, "lat": np.linspace(-89.5, 89.5, 200), "lon": np.arange(200.0)},
    )
    with raise_if_dask_computes():
        monthly = resample(field, freq="monthly")
        small = resample(field.isel(lat=0, lon=0), freq="monthly")
    assert not any("rechunk" in str(k) for k in monthly.data.dask.layers)  # field: no rechunk
    assert monthly.chunks[1:] == ((200,), (200,))
    assert small.chunks == ((12,),)  # a series: one chunk
    gap = resample(field.isel(lat=0, lon=0).drop_sel(time=times[times.month == 3]), freq="MS")
    assert gap.sizes["time"] == 11 and 3 not in gap.time.dt.month.values


def test_resample_offers_the_statistics_of_the_aggregations():
    """The choices a recipe's YAML is checked against (the signature's) are the
    aggregations with a CF cell method: one list, the registry's."""
    hint = typing.get_type_hints(resample)["stat"]
    assert list(typing.get_args(hint)) == list(STATISTICS)


def test_resample_errors():
    da = xr.DataArray([1.0, 2.0], dims="time", coords={"time": pd.date_range("2000", periods=2)})
    with pytest.raises(InputError, match=r"freq='weekly' is not one of \['daily'") as info:
        resample(da, freq="weekly")
    assert info.value.param == ("freq",)
    with pytest.raises(InputError, match=r"stat='median' is not one of \['mean', 'min'"):
        resample(da, freq="D", stat="median")


# -- daily totals of accumulations ---------------------------------------------------


@pytest.fixture(scope="module")
def hourly(tmp_path_factory) -> Path:
    """ERA5-like hourly accumulations: ``time1`` from 07:00 (the first day partial), the
    value at each hour the amount over the hour before, with ``time1_bounds``."""
    base = tmp_path_factory.mktemp("hourly")
    path = base / "raw.nc"
    run_cdo(
        "-settunits,hours",
        "-settaxis,2000-01-31,07:00:00,1hour",
        "-duplicate,90",
        "-setrtomiss,0,20000",
        "-topo,r24x12",
        str(path),
    )
    with xr.open_dataset(path) as ds:
        da = ds.topo.load().rename(time="time1")
    k = np.arange(da.sizes["time1"])[:, None, None]
    da = abs(da) * 1e-7 * (1 + np.cos(0.3 * k))
    da[10, 3:, :] = np.nan
    da.attrs = {"units": "m", "long_name": "precipitation amount"}
    bounds = np.stack([da.time1.values - np.timedelta64(1, "h"), da.time1.values], axis=1)
    ds = xr.Dataset({"precip": da, "time1_bounds": (("time1", "nv"), bounds)})
    ds.time1.attrs["bounds"] = "time1_bounds"
    out = base / "precip.nc"
    ds.to_netcdf(out)
    return out


@pytest.mark.parametrize("with_bounds", [True, False])
def test_daily_totals_equal_cdo_daysum_after_shifttime(hourly, tmp_path, with_bounds):
    ds = xr.open_dataset(hourly, chunks={"time1": 24})
    bounds = ds.time1_bounds.load() if with_bounds else None  # read as coordinates are
    expected = cdo_result(hourly, tmp_path, "-selname,precip -daysum -shifttime,-1hour")
    with raise_if_dask_computes():
        got = daily_totals(ds.precip, bounds=bounds)
    # 2000-01-31 07:00 .. 02-04 00:00: hours of Jan 31 06:00-24:00 (partial), Feb 1-3
    # whole, and the hour ending 02-04 00:00 (Feb 3's last): the partial Jan 31 is dropped
    assert [str(t)[:13] for t in got.time1.values] == [
        "2000-02-01T00",
        "2000-02-02T00",
        "2000-02-03T00",
    ]
    cdo_days = [str(t)[:10] for t in expected.time1.values]
    assert cdo_days[0] == "2000-01-31" and cdo_days[1:] == [
        "2000-02-01",
        "2000-02-02",
        "2000-02-03",
    ]
    np.testing.assert_allclose(got.values, expected.values[1:], rtol=1e-5)
    assert got.attrs["units"] == "m"
    assert got.attrs["cell_methods"] == "time1: sum"
    assert np.isnan(got.values).any()  # land stays NaN


def test_daily_totals_errors(hourly):
    ds = xr.open_dataset(hourly)
    with pytest.raises(InputError, match=r"has units 'K', not an amount .* resample"):
        daily_totals(ds.precip.assign_attrs(units="K"))
    with pytest.raises(InputError, match=r"units 'kg m-2 s-1'"):
        daily_totals(ds.precip.assign_attrs(units="kg m-2 s-1"))
    with pytest.raises(InputError, match=r"hold no whole day of accumulations"):
        daily_totals(ds.precip.isel(time1=slice(0, 30)))
    with pytest.raises(InputError, match=r"bounds of shape \(90, 2\) do not fit 30 steps"):
        daily_totals(ds.precip.isel(time1=slice(0, 30)), bounds=ds.time1_bounds)


# -- running means -------------------------------------------------------------------


@pytest.mark.parametrize("grid", ["random-180", "ocean-180"])
@pytest.mark.parametrize("window", [1, 3, 4, 12])
def test_running_mean_equals_cdo_runmean(series, tmp_path, grid, window):
    path = series["monthly", grid]
    expected = cdo_result(path, tmp_path, f"-runmean,{window}")
    da = opened(path)
    with raise_if_dask_computes():
        got = running_mean(da, window=window)
    assert got.sizes["time"] == da.sizes["time"] - window + 1
    np.testing.assert_array_equal(got.time.values, expected.time.values)
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-5)
    trailing = running_mean(da, window=window, center=False)
    np.testing.assert_array_equal(trailing.time.values, da.time.values[window - 1 :])
    np.testing.assert_allclose(trailing.values, expected.values, rtol=1e-5)
    assert got.attrs["cell_methods"] == "time: mean"


def test_running_mean_errors():
    da = xr.DataArray([1.0, 2.0], dims="time", coords={"time": pd.date_range("2000", periods=2)})
    for window in (0, 3, 2.5, True):
        with pytest.raises(InputError, match=rf"window={window!r} is not a number of time steps"):
            running_mean(da, window=window)


# -- demo-like data: ERA5's names (time0), descending latitudes, float32, NaN over land -


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, Path]:
    """Five months of 2-degree daily demo SST and the same merged into one file for CDO."""
    root = tmp_path_factory.mktemp("demo")
    spec = DemoSpec(resolution=2.0, frequency="daily", start="2000-11", end="2001-03", seed=7)
    generate(root, spec, workers=1)
    merged = root / "merged.nc"
    run_cdo("-mergetime", *map(str, sorted(root.rglob("*.nc"))), str(merged))
    return root, merged


def test_demo_sst_equals_cdo(demo, tmp_path):
    root, merged = demo
    sst = open_era5(source=root, start="2000-11", end="2001-03").sea_surface_temperature
    with raise_if_dask_computes():
        monthly = resample(sst, freq="monthly")
        seasonal = resample(sst, freq="seasonal", stat="max", incomplete="keep")
        complete = resample(sst, freq="seasonal", stat="max")
        smooth = running_mean(monthly, window=3)
    for got, ops in (
        (monthly, "-monmean"),
        (seasonal, "-seasmax"),  # SON 2000 (Nov only), DJF, MAM (March only)
        (smooth, "-runmean,3 -monmean"),
    ):
        expected = cdo_result(merged, tmp_path, ops)
        np.testing.assert_allclose(got.values, expected.values, rtol=1e-5)
    # kept incomplete seasons are labelled with their first step (inside their bounds)
    assert [str(t)[:7] for t in seasonal.time0.values] == ["2000-11", "2000-12", "2001-03"]
    # by default only the complete DJF, CDO's second
    assert [str(t)[:7] for t in complete.time0.values] == ["2000-12"]
    np.testing.assert_allclose(complete.values, expected_seasons(merged, tmp_path)[1:2], rtol=1e-5)
    assert monthly.attrs["units"] == sst.attrs["units"]
    assert monthly.attrs["cell_methods"].endswith("time0: mean")


def expected_seasons(merged: Path, tmp_path: Path) -> np.ndarray:
    return cdo_result(merged, tmp_path, "-seasmax").values


@pytest.mark.parametrize("stat", ["mean", "min", "max", "sum"])
def test_periods_that_are_the_chunks_are_reduced_block_by_block_as_xarray(stat):
    """A month per chunk (open_era5's monthly files): each month reduced from its own
    block (a state, finalized: no merge task), as xarray's resample, NaN cells and all-NaN
    months included."""
    time = xr.date_range("2000-01-01", "2001-12-31", freq="D")
    rng = np.random.default_rng(3)
    values = (280 + rng.standard_normal((time.size, 60, 100))).astype("f4")  # > 16 MiB
    values[:, :5] = np.nan  # never valid
    values[40:59, 10] = np.nan  # a whole February of one row
    da = xr.DataArray(values, dims=("time", "lat", "lon"),
                      coords={"time": time, "lat": np.linspace(-60, 60, 60),
                              "lon": np.arange(100.0)}, attrs={"units": "K"})  # fmt: skip
    month_chunks = tuple(pd.Series(1, index=time).resample("MS").sum().values)
    lazy = da.chunk({"time": month_chunks})
    with raise_if_dask_computes():
        fast = resample(lazy, freq="MS", stat=stat)
    graph = dict(fast.data.__dask_graph__())
    assert not any(str(k[0]).startswith("fold-merge") for k in graph if isinstance(k, tuple))
    grouped = da.resample(time="MS")
    slow = grouped.sum(min_count=1) if stat == "sum" else getattr(grouped, stat)()
    np.testing.assert_allclose(fast.values, slow.values, rtol=1e-6)
    np.testing.assert_array_equal(fast.time.values, slow.time.values)
    # chunks that are not the periods: a month's blocks merged, the same values
    other = resample(lazy.chunk({"time": 50}), freq="MS", stat=stat)
    graph = dict(other.data.__dask_graph__())
    assert any(str(k[0]).startswith("fold-merge") for k in graph if isinstance(k, tuple))
    np.testing.assert_allclose(other.values, slow.values, rtol=1e-6)


# -- time bounds: what each value covers, as CDO writes time_bnds -------------------


@pytest.fixture(scope="module")
def bounded(tmp_path_factory) -> dict[str, Path]:
    """CDO fields whose steps have bounds (``settbounds``), so that CDO's statistics write
    the bounds of what they reduced: daily steps over 800 days from 2000-01-01 (a first
    DJF of January and February alone), and 24 monthly steps from 2015-01."""
    base = tmp_path_factory.mktemp("bounded")
    out = {}
    for name, (start, step, count, bounds) in {
        "daily": ("2000-01-01,00:00:00", "1day", 800, "day"),
        "monthly": ("2015-01-01,00:00:00", "1month", 24, "month"),
    }.items():
        out[name] = base / f"{name}.nc"
        run_cdo(
            f"-settbounds,{bounds}",
            "-settunits,hours",
            f"-settaxis,{start},{step}",
            f"-duplicate,{count}",
            "-random,r12x7,7",
            str(out[name]),
        )
    return out


def written_bounds(da: xr.DataArray, tmp_path: Path) -> np.ndarray:
    """The bounds of the time coordinate of ``da`` (a dimension, else the scalar
    ``time_period``) in the file a run writes (:func:`prepare_for_file`)."""
    path = tmp_path / "ours.nc"
    prepare_for_file(da.to_dataset(name="x"), history="test").to_netcdf(path)
    with xr.open_dataset(path) as ds:
        time = TIME_PERIOD if TIME_PERIOD in ds.coords else "time"
        return ds[ds[time].attrs["bounds"]].values.astype("datetime64[s]").reshape(-1, 2)


def cdo_bounds(tmp_path: Path, *args: str | Path) -> np.ndarray:
    """``time_bnds`` of ``cdo ARGS OUT``."""
    out = tmp_path / "cdo-bounds.nc"
    run_cdo(*map(str, args), str(out))
    with xr.open_dataset(out) as ds:
        return ds.time_bnds.values.astype("datetime64[s]")


def opened_field(path: Path) -> xr.DataArray:
    """The field of a file with time bounds (``time_bnds`` is a data variable of it)."""
    ds = xr.open_dataset(path, chunks={"time": 10})
    return ds[next(str(v) for v in ds.data_vars if "bnds" not in str(v))]


def _jja(da: xr.DataArray) -> xr.DataArray:
    return select_season(da, season="JJA")


BOUNDS_CASES = {
    # JJA means: June to August, not the year to the next JJA's label
    "seasmean of JJA": ("daily", "-seasmean -selseason,JJA",
                        lambda da: resample(_jja(da), freq="seasonal")),
    # every season, kept as CDO keeps them: the first DJF holds January and February alone
    "seasmean": ("daily", "-seasmean",
                 lambda da: resample(da, freq="seasonal", incomplete="keep")),
    "yearmean of JJA": ("daily", "-yearmean -selseason,JJA",
                        lambda da: resample(_jja(da), freq="annual")),
    "monmax": ("daily", "-monmax", lambda da: resample(da, freq="monthly", stat="max")),
    # twelve months each: 2015-01-01 to 2016-01-01, not a month around the middle label
    "runmean,12": ("monthly", "-runmean,12", lambda da: running_mean(da, window=12)),
    "runmean,3 of seasmean": ("monthly", "-runmean,3 -seasmean",
                              lambda da: running_mean(resample(da, freq="seasonal",
                                                               incomplete="keep"), window=3)),
    # whole periods: the first step's start to the last step's end
    "timmean": ("daily", "-timmean", time_mean),
    "timmean of JJA": ("daily", "-timmean -selseason,JJA", lambda da: time_mean(_jja(da))),
    "timmean of DJF means": ("daily", "-timmean -seasmean -selseason,DJF",
                             lambda da: time_mean(resample(
                                 select_season(da, season="DJF"), freq="seasonal",
                                 incomplete="keep"))),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BOUNDS_CASES))
def test_time_bounds_equal_cdo(bounded, tmp_path, case):
    name, ops, ours = BOUNDS_CASES[case]
    expected = cdo_bounds(tmp_path, *ops.split(), bounded[name])
    with raise_if_dask_computes():
        got = ours(opened_field(bounded[name]))
    np.testing.assert_array_equal(written_bounds(got, tmp_path), expected)


def test_bounds_of_complete_seasons_are_cdos(bounded, tmp_path):
    """The default leaves out the first DJF (January and February 2000) and the last MAM
    (March 2002 alone): the bounds of the others are CDO's, and each label (the season's
    start) lies in them."""
    expected = cdo_bounds(tmp_path, "-seasmean", bounded["daily"])
    got = resample(opened_field(bounded["daily"]), freq="seasonal")
    written = written_bounds(got, tmp_path)
    np.testing.assert_array_equal(written, expected[1:-1])
    labels = got.time.values.astype("datetime64[s]")
    assert ((written[:, 0] <= labels) & (labels <= written[:, 1])).all()


def test_percentile_bounds_equal_timpctl(bounded, tmp_path):
    path = bounded["daily"]
    expected = cdo_bounds(tmp_path, "-timpctl,90", path, "-timmin", path, "-timmax", path)
    got = percentile(opened_field(path), q=90)
    np.testing.assert_array_equal(written_bounds(got, tmp_path), expected)


def test_time_bounds_in_the_data_calendar(tmp_path):
    """A noleap calendar's dates: intervals, periods and files in that calendar."""
    time = xr.date_range("2001-01-01", periods=365 * 2, freq="D", calendar="noleap",
                         use_cftime=True)  # fmt: skip
    da = xr.DataArray(np.arange(time.size, dtype="f8"), dims="time", coords={"time": time})
    da["time"].encoding.update(units="days since 2001-01-01", calendar="noleap")
    jja = resample(_jja(da), freq="seasonal")
    bounds = written_bounds(jja, tmp_path)
    assert [str(b)[:10] for b in bounds[0]] == ["2001-06-01", "2001-09-01"]
    mean = time_mean(da)
    path = tmp_path / "mean.nc"
    prepare_for_file(mean.to_dataset(name="x"), history="test").to_netcdf(path)
    with xr.open_dataset(path, decode_times=False) as ds:
        # the bounds in their coordinate's units and calendar (xarray writes them there)
        assert ds[TIME_PERIOD].attrs["calendar"] == "noleap"
        # two years of 365 days: the middle is day 365, 2002-01-01
        np.testing.assert_array_equal(ds[f"{TIME_PERIOD}_bnds"].values, [0.0, 730.0])
        assert float(ds[TIME_PERIOD]) == 365.0
