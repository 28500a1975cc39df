"""Reductions and statistics recipes against their CDO operators: area_mean (fldmean),
zonal_mean (zonmean), time_mean (timmean), climatology (ymonmean, yseasmean), anomaly
(ymonsub, yseassub, sub of timmean) and trend (trend,equal=false), on CDO-made fields
with poles and NaN masks in both longitude conventions, and on the demo data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from pangeo_hpc import recipes
from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.cf_attrs import TIME_PERIOD
from pangeo_hpc.recipes.grid import cell_area
from pangeo_hpc.recipes.student import t_two_sided_p
from pangeo_hpc.recipes.years import DAYS_PER_YEAR
from tests.support.cdo_fields import (
    CONVENTIONS,
    cdo,
    cdo_cell_areas,
    cdo_field,
    cdo_trend_b,
    cdo_values,
    other_convention,
    sums_rtol,
    with_exact_areas,
)
from tests.support.lazy import raise_if_dask_computes

pytestmark = pytest.mark.cdo

RTOL = 1e-5
REFERENCE = ["2001-01", "2002-12"]
#: the same period for CDO's seldate
SELDATE = "-seldate,2001-01-01T00:00:00,2002-12-31T23:59:59"


@pytest.fixture(scope="module")
def fields(tmp_path_factory) -> dict[str, dict[str, Path]]:
    """48 months with land-shaped holes, and 48 months with random holes only."""
    folder = tmp_path_factory.mktemp("cdo-fields")
    return {
        "land": cdo_field(folder, 48, land=True),
        "holes": cdo_field(folder, 48, land=False),
    }


def _open(path: Path) -> xr.DataArray:
    """The field as Dask, whole fields per chunk (as open_era5 gives)."""
    return xr.open_dataset(path).sst.chunk({"time": 12})


CASES = [(m, c) for m in ("land", "holes") for c in CONVENTIONS]


def _close(got, expected, rtol=RTOL):
    got, expected = np.asarray(got, dtype="f8"), np.asarray(expected, dtype="f8")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=rtol)


# --- area_mean ---------------------------------------------------------------------------


def _cells(da: xr.DataArray) -> int:
    return da.lat.size * da.lon.size


def _fldmean(path: Path, folder: Path, *, exact_areas: bool = False) -> np.ndarray:
    """CDO's fldmean of each time step in float64 (-b F64: float32 output would round to
    6e-8), weighted by CDO's gridarea or, with ``exact_areas``, by the exact cell areas
    (tests/support/known.py) carried by a copy of the file (``with_exact_areas``)."""
    if not exact_areas:
        return cdo_values("-b F64 -fldmean", path, out=folder / "fldmean.nc").ravel()
    copy = with_exact_areas(path, folder / f"{path.stem}-exact.nc")
    return cdo_values("-b F64 -fldmean", copy, out=folder / "fldmean-exact.nc").ravel()


@pytest.mark.parametrize(("mask", "conv"), CASES)
def test_area_mean_equals_fldmean(fields, tmp_path, mask, conv):
    """The same NaN-skipping weighted mean as CDO's, checked with the same weights both
    ways: ours with CDO's gridarea, CDO's with the exact areas ours uses by default. (Our
    exact areas and CDO's gridarea differ by up to 5e-3 at this grid's poles: a mean with
    one against the other differs by ~1e-5, the tolerance this test used to sit on.)"""
    path = fields[mask][conv]
    rtol = sums_rtol(_cells(_open(path)))
    with_cdo_areas = recipes.area_mean(_open(path), weights=cdo_cell_areas(path, tmp_path / "a.nc"))
    _close(with_cdo_areas.compute(), _fldmean(path, tmp_path), rtol=rtol)
    got = recipes.area_mean(_open(path)).compute()
    _close(got, _fldmean(path, tmp_path, exact_areas=True), rtol=rtol)
    assert got.attrs["units"] == "K" and got.attrs["cell_methods"] == "area: mean"
    xr.testing.assert_identical(
        got, recipes.global_mean(_open(path)).compute().assign_attrs(got.attrs)
    )


@pytest.mark.parametrize("conv", CONVENTIONS)
def test_area_mean_of_a_region_across_the_seam_equals_fldmean(fields, tmp_path, conv):
    """40W-40E, 20S-40N, cut by CDO's sellonlatbox, and by xarray in the grid's order:
    across 0 in the 0..360 grid its longitudes are 0..40 then 320..350. Means compared
    with the same weights, as in test_area_mean_equals_fldmean."""
    path = fields["holes"][conv]
    box = cdo("-sellonlatbox,-40,40,-20,40", path, out=tmp_path / "box.nc")
    expected = _fldmean(box, tmp_path)
    rtol = sums_rtol(_cells(_open(box)))
    areas = cdo_cell_areas(box, tmp_path / "a.nc")  # longitudes -40..40
    _close(recipes.area_mean(_open(box), weights=areas).compute(), expected, rtol=rtol)
    exact = _fldmean(box, tmp_path, exact_areas=True)
    _close(recipes.area_mean(_open(box)).compute(), exact, rtol=rtol)
    da = _open(path)
    lon = np.mod(da.lon.values + 180, 360) - 180
    ours = da.isel(lon=np.flatnonzero(np.abs(lon) <= 40)).where(
        (da.lat >= -20) & (da.lat <= 40), drop=True
    )
    if conv == "0..360":  # CDO's areas on the grid's longitudes (matched by label)
        areas = areas.assign_coords(lon=np.mod(areas.lon, 360.0))
    _close(recipes.area_mean(ours, weights=areas).compute(), expected, rtol=rtol)
    _close(recipes.area_mean(ours).compute(), exact, rtol=rtol)


def test_area_mean_min_valid_share_by_construction():
    """Northern rows NaN: the valid share is the southern hemisphere plus the southern
    half of the equator's band, (1 + sin 5°) / 2 = 0.5436."""
    lat = np.arange(-90.0, 90.1, 10.0)
    lon = np.arange(0.0, 360.0, 10.0)
    x = np.full((3, lat.size, lon.size), 280.0)
    x[1, lat > 0, :] = np.nan
    x[2] = np.nan
    da = xr.DataArray(x, dims=("time", "lat", "lon"), coords={"lat": lat, "lon": lon})
    share = (1 + np.sin(np.deg2rad(5.0))) / 2
    for data in (da, da.chunk({"time": 1}), da.chunk({"lat": 5})):  # compiled and xarray paths
        below = recipes.area_mean(data, min_valid_share=share - 1e-4).values
        above = recipes.area_mean(data, min_valid_share=share + 1e-4).values
        full = recipes.area_mean(data, min_valid_share=1.0).values
        np.testing.assert_allclose(below, [280.0, 280.0, np.nan], rtol=1e-12)
        np.testing.assert_allclose(above, [280.0, np.nan, np.nan], rtol=1e-12)
        np.testing.assert_allclose(full, [280.0, np.nan, np.nan], rtol=1e-12)
    # the share is of the area, not of the cells: 10 of 19 rows are valid, 0.526 of them
    assert np.isnan(recipes.area_mean(da, min_valid_share=0.55).values[1])
    assert share == pytest.approx(
        float(cell_area(da.lat, da.lon)[lat <= 0].sum() / 510.06e12), rel=1e-3
    )


@pytest.mark.parametrize("bad", [-0.1, 1.5, "half", True])
def test_area_mean_rejects_shares_outside_0_1(bad):
    da = xr.DataArray(
        np.ones((2, 3)), dims=("lat", "lon"), coords={"lat": [0, 1], "lon": [0, 1, 2]}
    )
    with pytest.raises(InputError, match=r"area_mean: min_valid_share=.* from 0 .* to 1") as e:
        recipes.area_mean(da, min_valid_share=bad)
    assert e.value.param == ("min_valid_share",)


def test_area_mean_matches_given_weights_to_the_cells_by_label():
    """Weights in another order, or of a larger grid than a region's, weigh each cell by
    its own weight: in the compiled path (whole fields per chunk) as in xarray's."""
    lat, lon = np.arange(80.0, -81.0, -20.0), np.arange(0.0, 360.0, 30.0)
    x = np.random.default_rng(3).random((2, lat.size, lon.size))
    x[0, 2, 3:6] = np.nan
    da = xr.DataArray(x, dims=("time", "lat", "lon"), coords={"lat": lat, "lon": lon})
    w = np.outer(np.arange(1.0, lat.size + 1), np.arange(1.0, lon.size + 1))  # all different
    weights = xr.DataArray(w, dims=("lat", "lon"), coords={"lat": lat, "lon": lon})
    shuffled = weights.isel(lat=slice(None, None, -1), lon=np.roll(np.arange(lon.size), 5))

    def by_hand(values, w):  # NaN skipped
        ok = np.isfinite(values)
        return np.where(ok, values * w, 0).sum((-2, -1)) / (ok * w).sum((-2, -1))

    for data in (da, da.chunk({"time": 1}), da.chunk({"lat": 2})):
        got = recipes.area_mean(data, weights=shuffled).values
        np.testing.assert_allclose(got, by_hand(x, w), rtol=1e-12)
        region = recipes.area_mean(data.isel(lat=slice(1, 4)), weights=shuffled).values
        np.testing.assert_allclose(region, by_hand(x[:, 1:4], w[1:4]), rtol=1e-12)
    with pytest.raises(InputError, match=r"area_mean: weights have no value at lat=80\.0") as e:
        recipes.area_mean(da, weights=weights.isel(lat=slice(1, None)))
    assert e.value.param == ("weights",)


# --- zonal_mean, time_mean ----------------------------------------------------------------


@pytest.mark.parametrize(("mask", "conv"), CASES)
def test_zonal_mean_equals_zonmean(fields, tmp_path, mask, conv):
    path = fields[mask][conv]
    got = recipes.zonal_mean(_open(path)).compute()
    _close(got, cdo_values("-zonmean", path, out=tmp_path / "z.nc")[..., 0])


@pytest.mark.parametrize(("mask", "conv"), CASES)
def test_time_mean_equals_timmean(fields, tmp_path, mask, conv):
    path = fields[mask][conv]
    got = recipes.time_mean(_open(path)).compute()
    _close(got, cdo_values("-timmean", path, out=tmp_path / "t.nc")[0])
    assert got.attrs == {
        "units": "K",
        "long_name": "time-mean sst, 2000-2003",  # 48 months from 2000-01: the years
        "cell_methods": "time: mean",
    }
    period = got[TIME_PERIOD]
    assert (period.attrs["period_start"], period.attrs["period_end"]) == (
        "2000-01-01T00:00:00",
        "2004-01-01T00:00:00",
    )


# --- climatology, anomaly -----------------------------------------------------------------


@pytest.mark.parametrize(("mask", "conv"), CASES)
@pytest.mark.parametrize(("freq", "operator"), [("monthly", "ymonmean"), ("seasonal", "yseasmean")])
def test_climatology_equals_ymonmean_and_yseasmean(fields, tmp_path, mask, conv, freq, operator):
    path = fields[mask][conv]
    reset = "-settaxis,2002-01-15,00:00:00,1month " if operator == "yseasmean" else ""
    expected = cdo_values(f"{reset}-{operator} {SELDATE}", path, out=tmp_path / "c.nc")
    for da in (_open(path), _open(path).chunk({"lat": 5}), _open(path).load()):  # every path
        got = recipes.climatology(da, freq=freq, reference=REFERENCE).compute()
        _close(got, expected)
    dim = "month" if freq == "monthly" else "season"
    labels = list(range(1, 13)) if freq == "monthly" else ["DJF", "MAM", "JJA", "SON"]
    assert got[dim].values.tolist() == labels and got.dims[0] == dim


def test_climatology_without_reference_uses_all_data(fields, tmp_path):
    path = fields["land"]["0..360"]
    _close(recipes.climatology(_open(path)), cdo_values("-ymonmean", path, out=tmp_path / "c.nc"))


@pytest.mark.parametrize(("mask", "conv"), CASES)
def test_monthly_anomaly_equals_ymonsub(fields, tmp_path, mask, conv):
    path = fields[mask][conv]
    clim = cdo("-ymonmean " + SELDATE, path, out=tmp_path / "c.nc")
    expected = cdo_values("-ymonsub", path, clim, out=tmp_path / "a.nc")
    got = recipes.anomaly(_open(path), reference=REFERENCE)
    _close(got, expected, rtol=1e-4)  # differences of ~280 K values: float32 inputs
    np.testing.assert_allclose(got.values, expected, atol=2e-5)
    assert got.attrs["units"] == "K" and "2001-01 to 2002-12" in got.attrs["long_name"]


@pytest.mark.parametrize("conv", CONVENTIONS)
def test_seasonal_values_get_seasonal_anomalies(fields, tmp_path, conv):
    """After CDO's seasmean (one value a season, DJF across the year's end) the grouping
    is seasonal from the spacing of the labels, as CDO's yseassub of yseasmean."""
    seas = cdo("-seasmean", fields["land"][conv], out=tmp_path / "s.nc")
    # one time per season set anew: CDO 2.1.1's yseasmean now and then writes a garbage
    # time for one season, and yseassub then aborts ("Season JJA already allocated")
    reset = "-settaxis,2002-01-15,00:00:00,3month"
    clim = cdo(f"{reset} -yseasmean {SELDATE}", seas, out=tmp_path / "c.nc")
    expected = cdo_values("-yseassub", seas, clim, out=tmp_path / "a.nc")
    da = _open(seas)
    got = recipes.anomaly(da, reference=REFERENCE)
    np.testing.assert_allclose(got.values, expected, atol=2e-5)
    np.testing.assert_array_equal(np.isnan(got.values), np.isnan(expected))
    # the same as asking for it; not the same as a monthly grouping of these labels
    xr.testing.assert_allclose(got, recipes.anomaly(da, reference=REFERENCE, freq="seasonal"))
    # and from the seasonal climatology given as clim
    clim_ours = recipes.climatology(da, freq="seasonal", reference=REFERENCE)
    np.testing.assert_allclose(recipes.anomaly(da, clim_ours).values, expected, atol=2e-5)


def test_annual_values_get_anomalies_from_the_mean(fields, tmp_path):
    years = cdo("-yearmean", fields["holes"]["-180..180"], out=tmp_path / "y.nc")
    mean = cdo("-timmean " + SELDATE, years, out=tmp_path / "m.nc")
    expected = cdo_values("-sub", years, mean, out=tmp_path / "a.nc")
    got = recipes.anomaly(_open(years), reference=REFERENCE)
    np.testing.assert_allclose(got.values, expected, atol=2e-5)
    assert "anomaly from the mean 2001-01 to 2002-12" in got.attrs["long_name"]


def test_anomaly_with_positional_clim_still_works(fields):
    da = _open(fields["land"]["0..360"])
    clim = recipes.climatology(da)
    xr.testing.assert_allclose(recipes.anomaly(da, clim), recipes.anomaly(da))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda da: recipes.climatology(da, reference=["1999-01", "2001-12"]), "not inside the data's period \\(2000-01..2003-12\\)"),
        (lambda da: recipes.anomaly(da, reference=["2002-01", "2004-01"]), "reference=\\['2002-01', '2004-01'\\] is not inside"),
        (lambda da: recipes.climatology(da, reference=["2001", "2002"]), 'reference=.* is not a period: give its first and last month, e.g. reference=\\["1991-01"'),
        (lambda da: recipes.climatology(da, reference=["2002-12", "2001-01"]), "is not a period"),
        (lambda da: recipes.climatology(da, reference="2001-01"), "is not a period"),
        (lambda da: recipes.anomaly(da, reference=["2001-01", "2001-06"]), "the climatology has no month \\[7, 8, 9, 10, 11, 12\\]"),
        (lambda da: recipes.climatology(da, freq="annual"), "climatology: freq='annual' is not one of \\['monthly', 'seasonal'\\]"),
        (lambda da: recipes.anomaly(da, freq="weekly"), "anomaly: freq='weekly' is not one of"),
        (lambda da: recipes.anomaly(da, recipes.climatology(da), reference=REFERENCE), "give clim or reference=, not both"),
    ],
)  # fmt: skip
def test_climatology_and_anomaly_errors(fields, call, match):
    da = _open(fields["land"]["0..360"])
    with pytest.raises(InputError, match=match) as e:
        call(da)
    assert e.value.param in (("reference",), ("freq",))


# --- trend ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("mask", "conv"), CASES)
@pytest.mark.parametrize("step", ["1month", "1day"])
def test_trend_equals_cdo_trend(tmp_path_factory, tmp_path, mask, conv, step):
    """CDO's b is per time step of the first interval (equal=false): 31 days for months
    from January, one day for days; ours per decade of 365.2425-day years."""
    path = cdo_field(tmp_path_factory.getbasetemp() / "trend", 40, land=mask == "land", step=step)[
        conv
    ]
    b = cdo_trend_b(path, tmp_path)
    first_step_days = 31.0 if step == "1month" else 1.0
    expected = b / first_step_days * DAYS_PER_YEAR * 10
    got = recipes.trend(_open(path)).compute()
    # CDO's float32 output of a slope of noise: compare against the size of the slopes
    ok = np.isfinite(expected)
    np.testing.assert_array_equal(np.isnan(got.values), ~ok)
    np.testing.assert_allclose(
        got.values[ok], expected[ok], rtol=RTOL, atol=1e-5 * np.abs(expected[ok]).max()
    )
    assert got.attrs["units"] == "K/(10 year)"


def test_trend_stats_against_scipy_linregress(fields):
    scipy_stats = pytest.importorskip("scipy.stats")
    da = _open(fields["holes"]["-180..180"])
    years = (da.time.values - da.time.values[0]).astype("timedelta64[s]").astype("f8") / (
        DAYS_PER_YEAR * 86400
    )
    da = da + xr.DataArray(0.3 * years, dims="time")  # a trend of 3 K/decade under the noise
    ds = recipes.trend(da, stats=True).compute()
    assert set(ds.data_vars) == {"trend", "trend_stderr", "trend_p_value"}
    values = da.values.astype("f8")
    for i, j in [(0, 0), (3, 7), (9, 20), (18, 35)]:
        y = values[:, i, j]
        ok = np.isfinite(y)
        fit = scipy_stats.linregress(years[ok] / 10, y[ok])
        assert ds.trend.values[i, j] == pytest.approx(fit.slope, rel=1e-9)
        assert ds.trend_stderr.values[i, j] == pytest.approx(fit.stderr, rel=1e-7)
        assert ds.trend_p_value.values[i, j] == pytest.approx(fit.pvalue, rel=1e-6, abs=1e-300)
    assert (
        ds.trend_stderr.attrs["units"] == "K/(10 year)" and ds.trend_p_value.attrs["units"] == "1"
    )
    assert ds.trend_p_value.max() < 1 and (ds.trend_p_value.min() >= 0)


def test_student_t_against_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    t = rng.normal(0, 4, 2000)
    dof = rng.integers(1, 600, 2000).astype("f8")
    np.testing.assert_allclose(
        t_two_sided_p(t, dof), 2 * scipy_stats.t.sf(np.abs(t), dof), rtol=1e-10
    )
    np.testing.assert_array_equal(
        t_two_sided_p([np.inf, np.nan, 1.0], [5, 5, 0]), [0.0, np.nan, np.nan]
    )


def test_trend_keeps_linear_trend_and_checks_options(fields):
    da = _open(fields["holes"]["0..360"])
    xr.testing.assert_identical(recipes.linear_trend(da, per="year"), recipes.trend(da, per="year"))
    with pytest.raises(InputError, match="trend: per='month' is not one of") as e:
        recipes.trend(da, per="month")
    assert e.value.param == ("per",)
    with pytest.raises(InputError, match="trend: min_count=0 is not a count"):
        recipes.trend(da, min_count=0)


# --- laziness, and the demo data -----------------------------------------------------------

LAZY = {
    "area_mean": lambda da: recipes.area_mean(da, min_valid_share=0.5),
    "area_mean-bands": lambda da: recipes.area_mean(da.chunk({"lat": 5}), min_valid_share=0.5),
    "zonal_mean": recipes.zonal_mean,
    "time_mean": recipes.time_mean,
    "climatology": lambda da: recipes.climatology(da, freq="seasonal", reference=REFERENCE),
    "anomaly": lambda da: recipes.anomaly(da, reference=REFERENCE),
    "anomaly-annual": lambda da: recipes.anomaly(da, reference=REFERENCE, freq="annual"),
    "trend": lambda da: recipes.trend(da, stats=True),
}


@pytest.mark.parametrize("name", sorted(LAZY))
def test_new_recipes_are_lazy(fields, name):
    da = _open(fields["land"]["0..360"])
    with raise_if_dask_computes():
        out = LAZY[name](da)
    arrays = out.data_vars.values() if isinstance(out, xr.Dataset) else [out]
    assert all(a.chunks is not None for a in arrays), f"{name} returned computed data"


@pytest.fixture(scope="module")
def demo_file(demo_tree, tmp_path_factory) -> dict[str, Path]:
    """A year of the demo's daily SST (land and sea ice masked) merged by CDO."""
    files = sorted(demo_tree.glob("2001/*/data/sea_surface_temperature.nc"))
    path = cdo("-mergetime", *files, out=tmp_path_factory.mktemp("demo") / "sst-2001.nc")
    return {"0..360": path, "-180..180": other_convention(path)}


@pytest.mark.parametrize("conv", CONVENTIONS)
def test_demo_data_against_cdo(demo_file, tmp_path, conv):
    path = demo_file[conv]
    da = xr.open_dataset(path).sea_surface_temperature
    t = da.dims[0]
    da = da.chunk({t: 31})
    assert np.isnan(da[0].values).mean() > 0.3  # land and ice masked
    # the area mean with the same weights both ways (test_area_mean_equals_fldmean)
    areas, rtol = cdo_cell_areas(path, tmp_path / "a.nc"), sums_rtol(_cells(da))
    _close(recipes.area_mean(da, weights=areas).compute(), _fldmean(path, tmp_path), rtol=rtol)
    exact = _fldmean(path, tmp_path, exact_areas=True)
    _close(recipes.area_mean(da).compute(), exact, rtol=rtol)
    checks = {
        "-zonmean": (recipes.zonal_mean(da), lambda v: v[..., 0]),
        "-timmean": (recipes.time_mean(da), lambda v: v[0]),
        "-ymonmean": (recipes.climatology(da, reference=["2001-01", "2001-12"]), lambda v: v),
        # the time axis set anew: CDO 2.1.1's yseasmean now and then writes a garbage time
        # for one season, and netCDF refuses it (exit 1)
        "-settaxis,2001-01-15,00:00:00,3month -yseasmean": (
            recipes.climatology(da, freq="seasonal"),
            lambda v: v,
        ),
    }
    for i, (operator, (got, shape)) in enumerate(checks.items()):
        _close(got.compute(), shape(cdo_values(operator, path, out=tmp_path / f"{i}.nc")))
    clim = cdo("-ymonmean", path, out=tmp_path / "clim.nc")
    expected = cdo_values("-ymonsub", path, clim, out=tmp_path / "anom.nc")
    np.testing.assert_allclose(recipes.anomaly(da).values, expected, atol=3e-5)


def test_an_anomaly_of_winters_names_its_reference_by_winters():
    """DJF means labelled by their Decembers (resample QS-DEC): the reference period of
    their anomaly reads ``winters 2000/01 to 2002/03``, not ``2000-12 to 2002-12``."""
    import pandas as pd

    time = xr.DataArray(pd.date_range("2000-12-01", periods=3, freq="12MS"), dims="time",
                        attrs={"standard_name": "time", "axis": "T"})  # fmt: skip
    da = xr.DataArray([1.0, 2.0, 6.0], dims="time", coords={"time": time},
                      attrs={"long_name": "SST in DJF, seasonal mean", "units": "K"})  # fmt: skip
    got = recipes.anomaly(da)
    np.testing.assert_allclose(got.values, [-2.0, -1.0, 3.0])
    assert got.attrs["long_name"].endswith("anomaly from the mean winters 2000/01 to 2002/03")
    months = da.assign_attrs(long_name="SST in December")  # Decembers, not winters
    assert recipes.anomaly(months).attrs["long_name"].endswith("from the mean 2000-12 to 2002-12")
