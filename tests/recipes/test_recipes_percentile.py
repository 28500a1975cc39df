"""percentile against CDO's timpctl (exact where CDO keeps the values: CDO_PCTL_NBINS above
twice the number of time steps), its definitions, bands in bounded memory, CF metadata."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from pangeo_hpc import recipes
from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.cf_attrs import prepare_for_file
from pangeo_hpc.recipes.percentile import METHODS, band_chunks, sorted_percentile
from tests.support.cdo_fields import CONVENTIONS, cdo, cdo_field, cdo_values
from tests.support.cf import cfchecks, unavailable
from tests.support.lazy import raise_if_dask_computes
from tests.support.needs import missing

pytestmark = pytest.mark.cdo

#: enough bins that CDO keeps every value of 48 steps (it keeps NBINS * 2 / 4)
EXACT = {"CDO_PCTL_NBINS": "1000"}


@pytest.fixture(scope="module")
def fields(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pctl-fields")
    return {"land": cdo_field(folder, 48, land=True), "holes": cdo_field(folder, 48, land=False)}


def timpctl(path, q, tmp_path, method="nrank", env=EXACT):
    low, high = tmp_path / "min.nc", tmp_path / "max.nc"
    if not high.exists():  # the bounds once per test
        cdo("-timmin", path, out=low)
        cdo("-timmax", path, out=high)
    ops = f"--percentile {method} -timpctl,{q}"
    return cdo_values(ops, path, low, high, out=tmp_path / f"p{q}{method}.nc", env=env)[0]


def _open(path):
    return xr.open_dataset(path).sst.chunk({"time": 12})


# CDO's NumPy methods differ from NumPy's for ranks below 2 (not with q=37 or 90 and 43
# to 48 valid values) and, for nearest, at halves: (n - 1) q / 100 = 40.5 for q=90 and the
# cells with 46 values, where CDO takes the 42nd value and NumPy (and we) the 41st
CDO_METHODS = ["nrank", "nist", "rtype8", "linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("conv", CONVENTIONS)
@pytest.mark.parametrize("mask", ["land", "holes"])
@pytest.mark.parametrize("q", [37, 90])
def test_percentile_equals_timpctl(fields, tmp_path, conv, mask, q):
    path = fields[mask][conv]
    da = _open(path)
    for method in CDO_METHODS if q != 90 else [m for m in CDO_METHODS if m != "nearest"]:
        expected = timpctl(path, q, tmp_path, method)
        got = recipes.percentile(da, q=q, method=method, band_mb=0.01).compute()
        np.testing.assert_array_equal(np.isnan(got.values), np.isnan(expected), err_msg=method)
        np.testing.assert_allclose(got.values, expected, rtol=1e-5, err_msg=method)


def test_percentile_ends_and_default_bins(fields, tmp_path):
    """q = 0 and 100 are timmin and timmax; CDO's default 101 bins keep 50 values, so for
    48 steps CDO is exact even without CDO_PCTL_NBINS."""
    path = fields["land"]["0..360"]
    da = _open(path)
    for q, operator in ((0, "-timmin"), (100, "-timmax")):
        expected = cdo_values(operator, path, out=tmp_path / "x.nc")[0]
        np.testing.assert_allclose(recipes.percentile(da, q=q).values, expected, rtol=1e-6)
    np.testing.assert_allclose(
        recipes.percentile(da, q=90).values, timpctl(path, 90, tmp_path, env={}), rtol=1e-6
    )


def test_cdo_bins_are_approximate_beyond_half_the_bins(tmp_path):
    """The documented case: 60 steps with 101 bins, CDO interpolates within bins (every
    method alike); with 1000 bins it is exact again, and equal to ours."""
    path = cdo_field(tmp_path / "f", 60, land=False)["0..360"]
    ours = recipes.percentile(_open(path), q=37).values
    binned = timpctl(path, 37, tmp_path, env={"CDO_PCTL_NBINS": "101"})
    many = _open(path).count("time").values > 50  # the cells CDO bins
    assert many.mean() > 0.9 and np.nanmax(np.abs(binned - ours)[many]) > 1e-2  # K
    nist = timpctl(path, 37, tmp_path, method="nist", env={"CDO_PCTL_NBINS": "101"})
    np.testing.assert_allclose(nist[many], binned[many])
    np.testing.assert_allclose(timpctl(path, 37, tmp_path), ours, rtol=1e-6)


def test_definitions_by_hand():
    """x = 15 20 35 40 50 (the example in CDO's percentiles.cc), plus a NaN, skipped."""
    x = np.array([40.0, 15.0, np.nan, 50.0, 35.0, 20.0])
    expected = {  # q = 30 and 75
        "nrank": (20.0, 40.0),  # ranks ceil(1.5) = 2, ceil(3.75) = 4
        "nist": (19.0, 45.0),  # ranks 1.8 and 4.5 (cdo --percentile nist -fldpctl: the same)
        "rtype8": (19.666666666666668, 43.333333333333336),  # ranks 1/3 + 16/3 q (CDO too)
        "linear": (23.0, 40.0),  # 0-based 1.2 and 3.0
        "lower": (20.0, 40.0),
        "higher": (35.0, 40.0),
        "midpoint": (27.5, 40.0),
        "nearest": (20.0, 40.0),
    }
    assert set(expected) == set(METHODS)
    for method, values in expected.items():
        got = [float(sorted_percentile(x, q=q, method=method)) for q in (30, 75)]
        np.testing.assert_allclose(got, values, rtol=1e-12, err_msg=method)
        if method in ("linear", "lower", "higher", "midpoint", "nearest"):
            np.testing.assert_allclose(
                got, np.nanpercentile(x, [30, 75], method=method), rtol=1e-12, err_msg=method
            )
    assert np.isnan(sorted_percentile(np.full(4, np.nan), q=50, method="nist"))


def test_bands_fit_the_budget():
    time = xr.date_range("2000-01-01", periods=100, freq="D", use_cftime=False)
    da = xr.DataArray(np.zeros((100, 30, 40)), dims=("time", "lat", "lon"), coords={"time": time})
    assert band_chunks(da, "time", 100 * 8 * 40 * 3) == {"time": -1, "lon": -1, "lat": 3}
    assert band_chunks(da, "time", 100 * 8 * 25) == {"time": -1, "lon": 25, "lat": 1}
    assert band_chunks(da, "time", 1e12) == {"time": -1, "lon": -1, "lat": -1}
    out = recipes.percentile(da.chunk({"time": 10}), q=50, band_mb=100 * 8 * 40 * 3 / 2**20)
    assert out.chunks == ((3,) * 10, (40,))


def test_percentile_is_lazy(fields):
    da = _open(fields["land"]["0..360"])
    with raise_if_dask_computes():
        out = recipes.percentile(da, q=90, method="nist")
    assert out.chunks is not None


@pytest.mark.parametrize(
    ("kwargs", "match", "param"),
    [
        ({"q": 101}, "percentile: q=101 is not a percentile: give a number from 0 to 100", "q"),
        ({"q": "90"}, "q='90' is not a percentile", "q"),
        ({"q": 90, "method": "median"}, "method='median' is not one of \\['nrank'", "method"),
    ],
)
def test_percentile_errors(fields, kwargs, match, param):
    with pytest.raises(InputError, match=match) as e:
        recipes.percentile(_open(fields["land"]["0..360"]), **kwargs)
    assert e.value.param == (param,)


def test_percentile_metadata_passes_cfchecks(fields, tmp_path):
    why = unavailable()
    if why is not None:
        missing("cfchecks", why)
    da = _open(fields["land"]["0..360"]).assign_attrs(
        standard_name="sea_surface_temperature", cell_methods="time: mean"
    )
    p90 = recipes.percentile(da, q=90)
    first, last = (str(y) for y in da.time.dt.year.values[[0, -1]])
    assert p90.attrs["units"] == "K"
    assert p90.attrs["long_name"] == f"90th percentile over time of sst, {first}-{last}"
    # CF has no percentile method: not "time: mean" alone (each value is not a mean of the
    # series) nor "time: percentile" (cfchecks rejects it), but "time: point" naming it
    assert p90.attrs["cell_methods"] == (
        "time: mean time: point (90th percentile over time, method nrank)"
    )
    assert "CF 1.8 has no cell method for percentiles" in p90.attrs["comment"]
    median = recipes.percentile(da, q=50, method="linear")
    assert median.attrs["cell_methods"] == "time: mean time: median"
    ds = xr.Dataset({"sst_p90": p90, "sst_median": median}).compute()
    path = tmp_path / "p.nc"
    prepare_for_file(ds, history="test").to_netcdf(path)
    report = cfchecks(path, tmp_path / "tables")
    assert report.errors == [], report.output
    assert report.warnings == [], report.output
