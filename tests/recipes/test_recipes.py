"""Recipes: laziness, values against independent computations, and any CF grid naming."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from pangeo_hpc import recipes
from pangeo_hpc.demo import expected
from pangeo_hpc.io.era5 import open_era5
from tests.support.known import WRONG_BOXES, known_index
from tests.support.lazy import raise_if_dask_computes
from tests.support.trees import TEST_SPEC


def _field(nt=40, dlat=10.0, dlon=15.0, seed=0, nan_fraction=0.3):
    """Random field on a regular grid with poles, NaN holes and a daily time axis."""
    rng = np.random.default_rng(seed)
    lat = np.arange(90, -90 - dlat / 2, -dlat)
    lon = np.arange(0, 360, dlon)
    t = pd.date_range("2001-01-01", periods=nt, freq="D")
    x = 280 + 20 * rng.random((nt, lat.size, lon.size))
    x[rng.random(x.shape) < nan_fraction] = np.nan
    return xr.DataArray(
        x.astype("f4"),
        dims=("time0", "lat", "lon"),
        coords={"time0": t, "lat": lat, "lon": lon},
        name="sst",
        attrs={"units": "K"},
    )


def _independent_global_mean(da: xr.DataArray, dlat: float) -> np.ndarray:
    """Weights from the band formula sin(upper edge) - sin(lower edge), edges clipped at the poles."""
    lat = da.lat.values
    w = np.sin(np.deg2rad(np.minimum(lat + dlat / 2, 90))) - np.sin(
        np.deg2rad(np.maximum(lat - dlat / 2, -90))
    )
    w2 = np.broadcast_to(w[:, None], da.shape[1:])
    x = da.values.astype("f8")
    ok = np.isfinite(x)
    return (
        np.where(ok, x, 0).reshape(len(x), -1) @ w2.ravel() / (ok.reshape(len(x), -1) @ w2.ravel())
    )


@pytest.fixture(params=["numpy", "dask"])
def field(request):
    da = _field()
    return da.chunk({"time0": 7}) if request.param == "dask" else da


ALL = {
    "global_mean": lambda da: recipes.global_mean(da),
    "zonal_mean": lambda da: recipes.zonal_mean(da),
    "time_series": lambda da: recipes.time_series(da, freq="monthly"),
    "climatology": lambda da: recipes.climatology(da),
    "anomaly": lambda da: recipes.anomaly(da),
    "linear_trend": lambda da: recipes.linear_trend(da),
    "trend_global_mean": lambda da: recipes.trend_global_mean(recipes.linear_trend(da)),
    "nino34": lambda da: recipes.nino34(da, smooth=3),
}


@pytest.mark.parametrize("name", sorted(ALL))
def test_recipes_are_lazy(name):
    da = _field(nt=400).chunk({"time0": 50})
    with raise_if_dask_computes():
        out = ALL[name](da)
    assert out.chunks is not None, f"{name} returned computed data"


@pytest.mark.parametrize("name", sorted(ALL))
def test_numpy_and_dask_inputs_agree(name):
    da = _field(nt=400)
    # float32 sums are grouped differently by numpy and Dask: agree to 1e-4 K
    expected = ALL[name](da)
    xr.testing.assert_allclose(expected, ALL[name](da.chunk({"time0": 50})).compute(), atol=1e-4)


def test_global_mean_matches_independent_weights(field):
    got = recipes.global_mean(field).values
    np.testing.assert_allclose(got, _independent_global_mean(_field(), 10.0), rtol=1e-12)


def test_global_mean_fallback_for_spatially_chunked_data():
    da = _field()
    got = recipes.global_mean(da.chunk({"lat": 5, "lon": 6})).compute()
    np.testing.assert_allclose(got.values, _independent_global_mean(da, 10.0), rtol=1e-10)


def test_global_mean_all_nan_field_is_nan():
    da = _field(nt=2)
    da[0] = np.nan
    out = recipes.global_mean(da.chunk()).compute()
    assert np.isnan(out[0]) and np.isfinite(out[1])


@pytest.mark.parametrize(
    "transform",
    [
        pytest.param(lambda da: da.isel(lat=slice(None, None, -1)), id="ascending-lat"),
        pytest.param(
            lambda da: da.assign_coords(lon=((da.lon + 180) % 360) - 180).sortby("lon"),
            id="lon-180-180",
        ),
        pytest.param(lambda da: da.rename(lat="latitude", lon="longitude"), id="latitude"),
        pytest.param(
            lambda da: (
                da.rename(lat="y", lon="x")
                .assign_coords(nav_lat=("y", da.lat.values), nav_lon=("x", da.lon.values))
                .drop_vars(["y", "x"])
            ),
            id="nav_lat",
        ),
        pytest.param(
            lambda da: (
                da.rename(lat="phi", lon="lam")
                .assign_attrs()
                .pipe(
                    lambda d: d.assign_coords(
                        phi=d.phi.assign_attrs(standard_name="latitude"),
                        lam=d.lam.assign_attrs(units="degrees_east"),
                    )
                )
            ),
            id="cf-attributes",
        ),
    ],
)
def test_recipes_accept_any_cf_grid(transform):
    da = _field(nt=400)
    other = transform(da)
    for name in ("global_mean", "time_series", "trend_global_mean", "nino34"):
        np.testing.assert_allclose(
            ALL[name](other).values, ALL[name](da).values, rtol=1e-10, err_msg=name
        )


def test_climatology_and_anomaly_against_pandas():
    da = _field(nt=800, nan_fraction=0.1)
    point = da.isel(lat=3, lon=4).to_series()
    clim = point.groupby(point.index.month).mean()
    got = recipes.climatology(da).isel(lat=3, lon=4)
    # float32 data: means agree to float32 precision (1e-4 K at 290 K)
    np.testing.assert_allclose(got.values, clim.values, rtol=1e-6)
    anom = recipes.anomaly(da).isel(lat=3, lon=4).values
    expected = (point - clim.reindex(point.index.month).values).values
    np.testing.assert_allclose(anom, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("freq", ["monthly", "annual"])
def test_an_anomaly_keeps_the_name_of_its_data(freq):
    """A named series stays named (notebook 07 plots the DJF index with hvplot, which needs a
    name): the annual anomaly subtracted a mean of another name and lost it."""
    da = _field(nt=800, nan_fraction=0.1).rename("sst").chunk({"time0": 100})
    series = recipes.area_mean(da)
    if freq == "annual":  # one DJF value a year
        series = recipes.resample(recipes.select_months(series, months=[12, 1, 2]), freq="QS-DEC")
    assert recipes.anomaly(series).name == "sst"


def test_linear_trend_against_polyfit_with_gaps():
    da = _field(nt=500, nan_fraction=0.2)
    t = da.time0.values
    years = (t - t[0]).astype("timedelta64[s]").astype("f8") / (365.2425 * 86400)
    da = da + (0.5 * years)[:, None, None]  # 0.5 K/yr = 5 K/decade on top of noise
    got = recipes.linear_trend(da, per="decade").values
    for i, j in [(0, 0), (5, 7), (18, 23)]:
        y = da.values[:, i, j].astype("f8")
        ok = np.isfinite(y)
        assert got[i, j] == pytest.approx(np.polyfit(years[ok], y[ok], 1)[0] * 10, rel=1e-9)
    assert got.mean() == pytest.approx(5.0, abs=0.5)


def test_linear_trend_needs_enough_values():
    da = _field(nt=10, nan_fraction=0.0)
    da[:, 0, 0] = np.nan
    da[:2, 1, 1] = 1.0
    da[2:, 1, 1] = np.nan
    out = recipes.linear_trend(da, min_count=3)
    assert np.isnan(out[0, 0]) and np.isnan(out[1, 1]) and np.isfinite(out[2, 2])


def test_bad_options_name_the_choices():
    da = _field(nt=40)
    with pytest.raises(ValueError, match="freq='weekly' is not one of"):
        recipes.time_series(da, freq="weekly")
    with pytest.raises(ValueError, match="per='month' is not one of"):
        recipes.linear_trend(da, per="month")


def test_nino34_needs_the_box():
    da = _field(nt=40).sel(lon=slice(0, 90))
    with pytest.raises(ValueError, match="no point in the Nino3.4 box"):
        recipes.nino34(da)


# --- known answers of the demo data -------------------------------------------------------


@pytest.fixture(scope="module")
def demo_sst(demo_tree):
    return open_era5("sea_surface_temperature", source=demo_tree).sea_surface_temperature


def test_demo_trend_is_recovered_within_5_percent(demo_sst):
    monthly = demo_sst.resample(time0="MS").mean()
    trend = recipes.trend_global_mean(recipes.linear_trend(recipes.anomaly(monthly))).compute()
    known = expected(TEST_SPEC.resolved(), demo_sst.time0.values)["trend_K_per_decade"]
    assert float(trend) == pytest.approx(known, rel=0.05)
    series = recipes.time_series(demo_sst, freq="annual").compute()
    years = np.arange(series.size)
    assert np.polyfit(years, series.values, 1)[0] * 10 == pytest.approx(known, rel=0.05)


@pytest.mark.parametrize("name", WRONG_BOXES)
def test_the_demo_data_tell_nino34_from_other_boxes(demo_sst, name):
    """The known answers of another box are far from Nino3.4's: the test below can fail."""
    right = known_index(TEST_SPEC, demo_sst.time0.values)
    wrong = known_index(TEST_SPEC, demo_sst.time0.values, box=WRONG_BOXES[name])
    corr, ratio = np.corrcoef(right, wrong)[0, 1], wrong.std() / right.std()
    assert corr < 0.95 or abs(ratio - 1) > 0.1, (name, corr, ratio)


def test_demo_nino34_follows_the_enso_signal(demo_sst):
    index = recipes.nino34(demo_sst).compute()
    known = known_index(TEST_SPEC, demo_sst.time0.values)  # the standard box, not the package's
    # the index differs from the known answer only by noise: 0.3 K per point and day over
    # 130 ocean points of the box and 30 days make 0.0047 K per month (seen: rms 0.0047,
    # at most 0.0153 K over 120 months); 5 sigma at most, 1.5 sigma rms. Nino3 or a box
    # moved by 10 degrees is 0.5 to 1.3 K off (corr 0.47 to 0.91, std x0.88 to x1.04).
    diff = index.values - known
    rms, worst = np.sqrt(np.mean(diff**2)), np.abs(diff).max()
    corr, ratio = np.corrcoef(index.values, known)[0, 1], index.std().item() / known.std()
    got = f"rms {rms:.4f} K, at most {worst:.4f} K, corr {corr:.5f}, std x{ratio:.4f}"
    assert rms < 0.007 and worst < 0.025 and corr > 0.999 and abs(ratio - 1) < 0.01, got


def test_demo_gradient_and_seasons(demo_sst):
    zonal = recipes.zonal_mean(demo_sst.isel(time0=slice(0, 365)).mean("time0")).compute()
    assert zonal.sel(lat=0).item() - zonal.sel(lat=60).item() > 15  # equator much warmer
    clim = recipes.climatology(demo_sst.sel(lat=40, lon=180)).compute()
    assert clim.sel(month=8).item() > clim.sel(month=2).item() + 3  # NH summer warmer
