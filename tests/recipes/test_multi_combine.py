"""The combine steps of recipes over several datasets against CDO (``sub``, ``fldmean``,
``fldcor``, ``timcor``, ``ens*``) and with known answers, and the alignment of units, grids
and calendars before them (issue 30, section 3)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes import against, bias, correlation, ensemble, rmse
from pangeo_hpc.recipes.align_datasets import align_datasets
from tests.support.cdo_fields import cdo_field, with_exact_areas, write_for_cdo
from tests.support.needs import require_tool

# -- the combine steps against CDO ------------------------------------------------------


@pytest.fixture(scope="module")
def fields(tmp_path_factory) -> dict[str, Path]:
    """Three datasets on CDO's r36x19 (both poles), 4 months, with holes: ``a`` from CDO's
    random fields, ``b`` and ``c`` that plus a pattern, noise and holes of their own."""
    folder = tmp_path_factory.mktemp("cdo")
    a = cdo_field(folder, 4)["0..360"]
    rng = np.random.default_rng(7)
    out = {"a": a}
    with xr.open_dataset(a) as ds:
        for name, scale in (("b", 1.0), ("c", -2.0)):
            noise = rng.normal(0, 3, ds.sst.shape)
            pattern = scale * np.cos(np.deg2rad(ds.lon)) * np.sin(np.deg2rad(ds.lat))
            other = ds.copy()
            sst = (ds.sst + pattern + noise).astype("f4")
            other["sst"] = sst.where(rng.uniform(size=sst.shape) > 0.03).assign_attrs(ds.sst.attrs)
            out[name] = write_for_cdo(other, folder / f"{name}.nc")
    return out


def _open(fields: dict[str, Path], *names: str) -> xr.Dataset:
    return xr.Dataset({n: xr.open_dataset(fields[n]).sst.load().astype("f8") for n in names})


def _cdo(operators: str, *paths: Path, out: Path) -> np.ndarray:
    """CDO's answer, its field means weighted by the exact cell areas (each input carries
    them as ``cell_area``: CDO's own ``gridarea`` differs from them by up to 5e-3 at r36x19's
    poles, see ``cdo_fields.sums_rtol``), which are the recipes' weights."""
    inputs = [str(p) for p in paths]
    if "fld" in operators:
        inputs = [str(with_exact_areas(p, out.with_name(f"{p.stem}-area.nc"))) for p in paths]
    exe = require_tool("cdo")
    subprocess.run([exe, "-s", "-f", "nc4", *operators.split(), *inputs, str(out)], check=True)
    with xr.open_dataset(out, decode_times=False) as ds:
        (name,) = [k for k in ds.data_vars if "bnds" not in str(k) and k != "cell_area"]
        return np.squeeze(ds[name].values.astype("f8"))


CASES = {
    "bias": (lambda ds: bias(ds, reference="a")["b"], "sub", ("b", "a")),
    "relative bias": (lambda ds: bias(ds, reference="a", relative=True)["b"], None, ()),
    "rmse space": (lambda ds: rmse(ds, reference="a")["b"], "-sqrt -fldmean -sqr -sub", ("b", "a")),
    "rmse time": (
        lambda ds: rmse(ds, reference="a", over="time")["b"],
        "-sqrt -timmean -sqr -sub",
        ("b", "a"),
    ),
    "correlation space": (lambda ds: correlation(ds, reference="a")["b"], "fldcor", ("b", "a")),
    "correlation time": (
        lambda ds: correlation(ds, reference="a", over="time")["b"],
        "timcor",
        ("b", "a"),
    ),
    "ensemble mean": (lambda ds: ensemble(ds)["ensemble_mean"], "ensmean", ("a", "b", "c")),
    "ensemble std": (
        lambda ds: ensemble(ds, stat="std")["ensemble_std"],
        "ensstd1",
        ("a", "b", "c"),
    ),
    "ensemble median": (
        lambda ds: ensemble(ds, stat="median")["ensemble_median"],
        "ensmedian",
        ("a", "b", "c"),
    ),
    "ensemble min": (
        lambda ds: ensemble(ds, stat="min")["ensemble_min"],
        "ensmin",
        ("a", "b", "c"),
    ),
    "ensemble max": (
        lambda ds: ensemble(ds, stat="max")["ensemble_max"],
        "ensmax",
        ("a", "b", "c"),
    ),
}


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][1]])
def test_combine_steps_equal_cdo(fields, tmp_path, case):
    fn, op, order = CASES[case]
    ds = _open(fields, "a", "b", "c").chunk({"time": 1})
    got = fn(ds)
    assert got.chunks is not None  # lazy for lazy input
    expected = _cdo(op, *(fields[n] for n in order), out=tmp_path / "cdo.nc")
    got = np.squeeze(got.values)
    assert got.shape == expected.shape
    if case == "correlation time":  # one common valid step: ours missing, CDO's a number
        ok = (ds.a.notnull() & ds.b.notnull()).sum("time").values >= 2
        assert np.isnan(got[~ok]).all()
        got, expected = got[ok], expected[ok]
    if case == "ensemble median":  # CDO's enspctl: missing where any member is; ours skips it
        valid = np.all([ds[n].notnull().values for n in order], axis=0)
        assert np.isfinite(got[np.any([ds[n].notnull().values for n in order], axis=0)]).all()
        got, expected = got[valid], expected[valid]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    # CDO writes float32: 1e-6 relative is its rounding, 1e-5 well clear of it
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-9 if "correlation" in case else 0)


@pytest.mark.parametrize("case", ["rmse space", "correlation space"])
def test_the_cdo_comparison_catches_unweighted_cells(fields, tmp_path, monkeypatch, case):
    """The planted mistake: every cell weighted alike (no cell areas)."""
    fn, op, order = CASES[case]
    monkeypatch.setattr(against, "cell_area", lambda lat, lon: xr.ones_like(lat * lon))
    got = np.squeeze(fn(_open(fields, "a", "b")).values)
    expected = _cdo(op, *(fields[n] for n in order), out=tmp_path / "cdo.nc")
    assert not np.allclose(got, expected, rtol=1e-5)


def test_relative_bias_and_median_known():
    ds = xr.Dataset(
        {"m": ("x", [3.0, 2.0, 1.0]), "r": ("x", [2.0, 0.0, 4.0]), "s": ("x", [9.0, 1.0, np.nan])}
    )
    rel = bias(ds[["m", "r"]], reference="r", relative=True)["m"]
    np.testing.assert_allclose(rel.values, [0.5, np.nan, -0.75])
    assert rel.attrs["units"] == "1" and "(m minus r) / r" in rel.attrs["long_name"]
    med = ensemble(ds, stat="median")["ensemble_median"].values
    np.testing.assert_allclose(med, [3.0, 1.0, 2.5])
    p90 = ensemble(ds, stat="percentile", percentile=90)["ensemble_p90"].values
    np.testing.assert_allclose(p90, np.nanpercentile(np.stack([ds.m, ds.r, ds.s]), 90, axis=0))


# -- alignment: units, grids, calendars --------------------------------------------------


def _monthly(calendar: str, start: int, n: int, units: str = "K", value: float = 1.0):
    times = xr.date_range(
        f"{start}-01-01", periods=n, freq="MS", calendar=calendar, use_cftime=calendar != "standard"
    )
    return xr.DataArray(
        np.full(n, value), dims="time", coords={"time": times}, attrs={"units": units}
    )


def test_monthly_calendars_align_by_year_month_and_units_convert():
    model = _monthly("noleap", 2000, 24, units="degC", value=10.0)
    era5 = _monthly("standard", 2001, 24, value=280.0)
    ds = align_datasets({"model": model, "era5": era5}, reference="era5")
    assert ds.sizes["time"] == 12  # 2001-01..2001-12
    assert ds.time.dtype.kind == "M" and str(ds.time.values[0])[:7] == "2001-01"
    np.testing.assert_allclose(ds.model.values, 283.15)
    assert ds.model.attrs["units"] == "K"
    full = align_datasets({"model": model, "era5": era5}, reference="era5", join="outer")
    assert full.sizes["time"] == 36 and int(full.era5.isnull().sum()) == 12


def test_daily_data_of_different_calendars_are_refused():
    days = {
        c: xr.DataArray(
            np.ones(40),
            dims="time",
            coords={"time": xr.date_range("2001-01-01", periods=40, calendar=c, use_cftime=True)},
            attrs={"units": "K"},
        )
        for c in ("noleap", "360_day")
    }
    with pytest.raises(
        InputError,
        match=r"daily data of different calendars \(noleap noleap, 360_day 360_day\).*resample",
    ):
        align_datasets(days, reference="noleap")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"units": "kg m-2"}, r"model is in 'degC' and obs in 'kg m-2', units of different kinds"),
        (
            {"grid": True},
            r"model is on the grid 3 x 4 .* and obs on 2 x 4 .*regrid: \{grid: \$obs\}",
        ),
        ({"period": True}, r"no period in common \(model 2000-01..2000-03, obs 2005-01..2005-03\)"),
    ],
)
def test_refusals_at_the_combine_name_both(change, match):
    def field(nlat, units, year):
        t = xr.date_range(f"{year}-01-01", periods=3, freq="MS")
        return xr.DataArray(
            np.ones((3, nlat, 4)),
            dims=("time", "lat", "lon"),
            coords={"time": t, "lat": np.linspace(-60, 60, nlat), "lon": [0.0, 90, 180, 270]},
            attrs={"units": units},
        )

    model = field(3, "degC", 2000)
    obs = field(
        2 if "grid" in change else 3, change.get("units", "K"), 2005 if "period" in change else 2000
    )
    with pytest.raises(InputError, match=match):
        align_datasets({"model": model, "obs": obs}, reference="obs")
