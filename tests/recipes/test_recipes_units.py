"""convert_units, wind_speed and magnitude against CDO, known values, errors and laziness."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes import anomaly, convert_units, linear_trend, magnitude, wind_speed
from pangeo_hpc.recipes.cf_attrs import prepare_for_file
from pangeo_hpc.recipes.units import compatible_units, is_difference, same_units, units_of
from tests.support.cf import cfchecks, unavailable
from tests.support.lazy import raise_if_dask_computes
from tests.support.needs import missing, require_tool

pytestmark = pytest.mark.cdo

#: CDO fields: poles and random values; NaN holes shaped like the continents or the oceans
FIELDS = {
    "random-poles": "-random,r36x19,42",
    "topo-land": "-setrtomiss,-20000,0 -topo,r36x19",
    "topo-ocean": "-setrtomiss,0,20000 -topo,r72x36",
}


def cdo(tmp_path: Path, name: str, operators: str, *inputs: Path) -> Path:
    """Run ``cdo OPERATORS INPUTS out`` and return the output (NetCDF4)."""
    path = tmp_path / f"{name}.nc"
    args = [require_tool("cdo"), "-s", "-f", "nc4", *operators.split(), *map(str, inputs)]
    subprocess.run([*args, str(path)], check=True)
    return path


def var(path: Path, name: str | None = None) -> xr.DataArray:
    ds = xr.open_dataset(path)
    return ds[name or next(iter(ds.data_vars))]


def lon180(da: xr.DataArray) -> xr.DataArray:
    """The same field with longitudes -180..180, sorted."""
    return da.assign_coords(lon=((da.lon + 180) % 360) - 180).sortby("lon")


def demo_like(values: np.ndarray, name: str, attrs: dict) -> xr.DataArray:
    """ERA5-like: dimension ``time0``, latitudes from north to south, float32."""
    lat = np.linspace(90, -90, values.shape[1])
    lon = np.arange(values.shape[2]) * 360 / values.shape[2]
    time = pd.date_range("2003-01-01", periods=values.shape[0], freq="D")
    return xr.DataArray(
        values.astype("f4"),
        dims=("time0", "lat", "lon"),
        coords={"time0": time, "lat": lat, "lon": lon},
        name=name,
        attrs=attrs,
    )


CONVERSIONS = {
    # data units, their CDO field, the units wanted, the CDO operators that convert
    "K-degC": ("K", "-setunit,K -addc,273.15 -mulc,0.01", "degC", "-setunit,degC -subc,273.15"),
    "m-mm": ("m", "-setunit,m -mulc,0.001", "mm", "-setunit,mm -mulc,1000"),
    "ms-kmh": ("m s-1", "-setunit,m/s -mulc,0.01", "km/h", "-setunit,km/h -mulc,3.6"),
}


@pytest.mark.parametrize("convention", ["0..360", "-180..180"])
@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("conversion", sorted(CONVERSIONS))
def test_convert_units_equals_cdo_on_cdo_fields(tmp_path, field, conversion, convention):
    units, make, to, operators = CONVERSIONS[conversion]
    source = cdo(tmp_path, "in", f"{make} {FIELDS[field]}")
    expected, got = var(cdo(tmp_path, "out", operators, source)), var(source)
    assert got.attrs["units"] == units.replace(" s-1", "/s")
    if convention == "-180..180":
        expected, got = lon180(expected), lon180(got)
    out = convert_units(got.chunk(), to=to)
    np.testing.assert_allclose(out.values, expected.values, rtol=1e-5)
    assert np.isnan(out.values).any() == ("topo" in field)
    assert same_units(out, expected)  # CDO's units, however spelled, are ours


@pytest.mark.parametrize("convention", ["0..360", "-180..180"])
def test_convert_units_equals_cdo_on_demo_like_sst(tmp_path, convention):
    rng = np.random.default_rng(3)
    sst = 271.0 + 30 * rng.random((3, 19, 36))
    sst[:, 5:9, 10:20] = np.nan  # land
    da = demo_like(sst, "sea_surface_temperature", {"units": "K"})
    da.attrs["standard_name"] = "sea_surface_temperature"
    path = tmp_path / "sst.nc"
    da.to_dataset().to_netcdf(path)
    expected = var(cdo(tmp_path, "degc", "-setunit,degC -subc,273.15", path))
    got = xr.open_dataset(path, chunks={})["sea_surface_temperature"]
    if convention == "-180..180":
        expected, got = lon180(expected), lon180(got)
    out = convert_units(got, to="degC")
    np.testing.assert_allclose(out.values, expected.values, rtol=1e-5)
    assert out.attrs["standard_name"] == "sea_surface_temperature"  # the same quantity
    assert out.attrs["units_metadata"] == "temperature: on_scale"


def hourly_precipitation(tmp_path: Path, field: str) -> Path:
    """Two days of hourly accumulations in m (era5-pds name), from 00:00."""
    return cdo(
        tmp_path,
        "hourly",
        "-setname,precipitation_amount_1hour_Accumulation -setunit,m -mulc,0.000001 "
        f"-settaxis,2000-01-01,00:00:00,1hour -duplicate,48 {FIELDS[field]}",
    )


@pytest.mark.parametrize("field", ["random-poles", "topo-land"])
def test_hourly_accumulation_to_mm_per_day_equals_cdo(tmp_path, field):
    source = hourly_precipitation(tmp_path, field)
    expected = var(cdo(tmp_path, "rate", "-setunit,mm/day -mulc,24000", source))
    got = convert_units(lon180(var(source)).chunk(), to="mm/day")  # period from the name
    np.testing.assert_allclose(got.values, lon180(expected).values, rtol=1e-5)
    assert got.attrs["units"] == "mm day-1"
    assert got.attrs["cell_methods"] == "time: mean"
    assert got.attrs["long_name"] == (
        "mean rate of precipitation_amount_1hour_Accumulation over 1 hour"
    )


def test_daily_totals_to_mm_per_day_equal_cdo_daysum(tmp_path):
    source = hourly_precipitation(tmp_path, "topo-land")
    daily = cdo(tmp_path, "daily", "-daysum", source)
    rate = cdo(tmp_path, "rate", "-setunit,mm/day -mulc,1000", daily)
    expected = var(rate, "precipitation_amount_1hour_Accumulation")
    ds = xr.open_dataset(daily)
    da = ds["precipitation_amount_1hour_Accumulation"]
    assert da.attrs["cell_methods"] == "time: sum"
    got = convert_units(da.chunk(), to="mm day-1")
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-5)
    assert got.attrs["cell_methods"] == "time: mean"
    # CDO's bounds run from the first to the last hour: 23 h, as given
    wide = convert_units(da.chunk(), to="mm day-1", bounds=ds.time_bnds)
    np.testing.assert_allclose(wide.values, expected.values * 24 / 23, rtol=1e-5)


def test_monthly_totals_to_mm_per_day_equal_cdo_monmean(tmp_path):
    rng = np.random.default_rng(5)
    daily = rng.gamma(0.5, 0.004, (90, 19, 36))
    daily[:, :4] = np.nan
    da = demo_like(daily, "tp", {"units": "m", "long_name": "Total precipitation"})
    path = tmp_path / "daily.nc"
    da.rename(time0="time").to_dataset().to_netcdf(path)
    monthly = var(cdo(tmp_path, "monsum", "-monsum", path), "tp")  # labels mid-month
    expected = var(cdo(tmp_path, "monmean", "-mulc,1000 -monmean", path), "tp")
    got = convert_units(monthly.chunk(), to="mm/day")  # Jan 31, Feb 28, Mar 31 days
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-5)


def test_rates_of_totals_on_month_starts_and_time_bounds_known_values():
    months = pd.date_range("2000-01-01", periods=3, freq="MS")
    totals = xr.DataArray(
        [31.0, 29.0, 31.0],
        dims="time",
        coords={"time": months},
        attrs={
            "units": "mm",
            "cell_methods": "area: mean time: sum",
            "standard_name": "lwe_thickness_of_precipitation_amount",
        },
    )
    got = convert_units(totals, to="mm/day")
    np.testing.assert_allclose(got.values, [1.0, 1.0, 1.0])
    assert got.attrs["cell_methods"] == "area: mean time: mean"
    assert got.attrs["standard_name"] == "lwe_precipitation_rate"
    hours = pd.date_range("2000-01-01", periods=3, freq="3h")
    bounds = np.stack([hours, hours + pd.Timedelta("3h")], axis=1)
    tp = xr.DataArray(
        [0.003, 0.006, 0.0], dims="time", coords={"time": hours}, name="tp", attrs={"units": "m"}
    )
    time_bnds = xr.DataArray(bounds, dims=("time", "bnds"), coords={"time": hours})
    np.testing.assert_allclose(
        convert_units(tp, to="mm h-1", bounds=time_bnds).values, [1.0, 2.0, 0.0]
    )
    np.testing.assert_allclose(convert_units(tp, to="mm h-1", period="1h").values, [3, 6, 0])


def test_temperature_differences_convert_without_offset():
    t = pd.date_range("2000-01-01", periods=24, freq="MS")
    values = 280.0 + np.arange(24.0) / 12  # 1 K a year
    temp = xr.DataArray(values, dims="time", coords={"time": t}, name="t2m", attrs={"units": "K"})
    np.testing.assert_allclose(convert_units(temp, to="degC").values, values - 273.15)
    assert not is_difference(temp)
    anom = anomaly(temp)
    got = convert_units(anom, to="degC")
    np.testing.assert_allclose(got.values, anom.values)  # 1 K of anomaly is 1 degC
    assert got.attrs["units_metadata"] == "temperature: difference"
    assert got.attrs["units"] == "degC"
    trend = linear_trend(temp, per="decade")
    assert trend.attrs["units"] == "K/(10 year)"
    np.testing.assert_allclose(trend.values, 10.0, rtol=1e-5)
    np.testing.assert_allclose(convert_units(trend, to="degC/(10 year)").values, trend.values)
    np.testing.assert_allclose(convert_units(trend, to="K/year").values, trend.values / 10)
    assert convert_units(trend, to="degC/decade").attrs["units"] == "degC/(10 year)"
    # the attribute decides over the words; standard deviations are differences
    said = temp.assign_attrs(long_name="t2m anomaly", units_metadata="temperature: on_scale")
    np.testing.assert_allclose(convert_units(said, to="degC").values, values - 273.15)
    said = temp.assign_attrs(units_metadata="temperature: difference")
    np.testing.assert_allclose(convert_units(said, to="degC").values, values)
    spread = temp.assign_attrs(cell_methods="time: standard_deviation")
    np.testing.assert_allclose(convert_units(spread, to="degC").values, values)
    back = convert_units(convert_units(temp, to="degC"), to="K")
    np.testing.assert_allclose(back.values, values)


def uv_file(tmp_path: Path, field: str) -> Path:
    """u and v (m/s, with their standard names) in one file, made by CDO."""
    parts = []
    for i, (name, standard) in enumerate((("u", "eastward_wind"), ("v", "northward_wind"))):
        base = FIELDS[field] if "topo" in field else f"-random,r36x19,{i + 1}"
        scale = "-mulc,0.003" if "topo" in field else f"-mulc,{20 + 7 * i} -subc,0.5"
        parts.append(
            cdo(
                tmp_path,
                name,
                f"-setattribute,{name}@standard_name={standard} "
                f"-setname,{name} -setunit,m/s {scale} {base}",
            )
        )
    return cdo(tmp_path, "uv", "-merge", *parts)


@pytest.mark.parametrize("convention", ["0..360", "-180..180"])
@pytest.mark.parametrize("field", ["random-poles", "topo-ocean"])
def test_wind_speed_equals_cdo_expr(tmp_path, field, convention):
    path = uv_file(tmp_path, field)
    expected = var(cdo(tmp_path, "ws", "-expr,ws=sqrt(u*u+v*v)", path), "ws")
    ds = xr.open_dataset(path, chunks={})
    u, v = ds.u, ds.v
    if convention == "-180..180":
        expected, u, v = lon180(expected), lon180(u), lon180(v)
    got = wind_speed(u, v=v)
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-5)
    assert got.name == "wind_speed" and got.attrs["standard_name"] == "wind_speed"
    assert got.attrs["units"] == "m/s"
    # v in km/h is converted to the units of u first
    fast = convert_units(v, to="km/h")
    np.testing.assert_allclose(wind_speed(u, v=fast).values, expected.values, rtol=1e-5)


def test_magnitude_on_demo_like_winds(tmp_path):
    rng = np.random.default_rng(11)
    u = demo_like(rng.normal(0, 8, (2, 10, 20)), "eastward_wind_at_10_metres", {"units": "m s-1"})
    v = demo_like(rng.normal(0, 8, (2, 10, 20)), "northward_wind_at_10_metres", {"units": "m s-1"})
    path = tmp_path / "uv.nc"
    xr.merge([u.rename("u"), v.rename("v")]).to_netcdf(path)
    expected = var(cdo(tmp_path, "ws", "-expr,ws=sqrt(u*u+v*v)", path), "ws")
    got = wind_speed(u.chunk(), v=v.chunk())
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-5)
    assert got.name == "wind_speed"  # known by the era5-pds names
    other = magnitude(u.rename("a").assign_attrs(long_name="A"), other=v.rename("b"))
    assert other.name == "magnitude" and "standard_name" not in other.attrs
    assert other.attrs["long_name"] == "magnitude of (A, b)"
    assert magnitude(u, other=v, name="speed").name == "speed"


def test_recipes_stay_lazy_and_float32():
    t = pd.date_range("2000-01-01", periods=4, freq="MS")
    da = xr.DataArray(
        np.full((4, 3), 0.03, "f4"),
        dims=("time", "x"),
        coords={"time": t},
        name="tp",
        attrs={"units": "m", "cell_methods": "time: sum"},
    ).chunk({"time": 1})
    wind = da.assign_attrs(units="m s-1", standard_name="eastward_wind")
    with raise_if_dask_computes():
        outs = [
            convert_units(da, to="mm"),
            convert_units(da, to="mm/day"),  # one period per month
            convert_units(da.assign_attrs(units="K"), to="degC"),
            wind_speed(wind, v=convert_units(wind, to="km/h")),
        ]
    for out in outs:
        assert out.chunks is not None
    assert outs[0].dtype == outs[2].dtype == np.float32
    np.testing.assert_allclose(
        outs[1].values[:, 0], [30 / 31, 30 / 29, 30 / 31, 30 / 30], rtol=1e-6
    )


def test_units_are_spelled_for_udunits():
    cfunits = pytest.importorskip("cfunits")
    da = xr.DataArray([1.0], dims="x", attrs={"units": "m"})
    pairs = [("m", "km"), ("m s-1", "km h-1"), ("m s-1", "km/h"), ("m s-1", "mm/day")]
    pairs += [("K", "degC"), ("K/(10 year)", "K/century"), ("K/year", "K/decade")]
    pairs += [("kg m-2 h-1", "kg m-2 s-1"), ("m", "cm")]
    for src, to in pairs:
        spelled = convert_units(da.assign_attrs(units=src), to=to).attrs["units"]
        assert cfunits.Units(spelled).isvalid, spelled
        assert "°" not in spelled and not spelled.endswith(" d-1")
    assert convert_units(da.assign_attrs(units="K"), to="Celsius").attrs["units"] == "degC"


def test_converted_results_pass_cfchecks(tmp_path):
    why = unavailable()
    if why is not None:
        missing("cfchecks", why)
    t = pd.date_range("2000-01-01", periods=24, freq="MS")
    rng = np.random.default_rng(2)
    sst = xr.DataArray(
        280 + rng.random((24, 3, 4)),
        dims=("time", "lat", "lon"),
        coords={"time": t, "lat": [-10.0, 0, 10], "lon": [0.0, 90, 180, 270]},
        attrs={
            "units": "K",
            "standard_name": "sea_surface_temperature",
            "cell_methods": "time: mean",
        },
    )
    pr = sst.assign_attrs(units="m", standard_name="lwe_thickness_of_precipitation_amount")
    pr.attrs["cell_methods"] = "time: sum"
    ds = xr.Dataset(
        {
            "anomaly": convert_units(anomaly(sst), to="degC"),
            "sst": convert_units(sst, to="degC"),
            "pr": convert_units(pr, to="mm/day"),
            "trend": convert_units(linear_trend(sst), to="degC/century"),
        }
    )
    assert ds.pr.attrs["standard_name"] == "lwe_precipitation_rate"
    prepare_for_file(ds, history="test").to_netcdf(tmp_path / "units.nc")
    report = cfchecks(tmp_path / "units.nc", tmp_path / "tables")
    assert report.errors == [], report.output


def test_units_helpers():
    assert same_units("m s-1", "m/s") and same_units("K/(10 year)", "0.1 K/year")
    assert not same_units("K", "degC") and not same_units("m", "mm")
    assert compatible_units("K", "degC") and not compatible_units("K", "m")
    q = units_of(xr.DataArray(1.0, attrs={"units": "K/(10 year)"}))
    assert q.magnitude == pytest.approx(0.1) and str(q.units) == "kelvin / year"


def test_bad_units_and_periods_are_input_errors():
    t = pd.date_range("2000-01-01", periods=2, freq="D")
    temp = xr.DataArray(
        [280.0, 281.0], dims="time", coords={"time": t}, name="t2m", attrs={"units": "K"}
    )
    with pytest.raises(
        InputError,
        match=r"^convert_units: cannot convert t2m from 'K' \(\[temperature\]\) to 'mm' \(\[length\]\): give units of the same kind$",
    ) as info:
        convert_units(temp, to="mm")
    assert info.value.param == ("to",)
    with pytest.raises(
        InputError, match=r"convert_units: cannot convert t2m from 'K' .* to 'K/day'"
    ):
        convert_units(temp, to="K/day")  # a temperature is no accumulation
    with pytest.raises(InputError, match=r"a rate becomes an amount by a sum over time"):
        convert_units(temp.assign_attrs(units="mm/day"), to="mm")
    with pytest.raises(InputError, match=r"the target units 'furlong_per_bogus' are not units"):
        convert_units(temp, to="furlong_per_bogus")
    with pytest.raises(InputError, match=r"convert_units: t2m has no units attribute"):
        convert_units(temp.drop_attrs(), to="degC")
    tp = temp.assign_attrs(units="m").rename("tp")[:1]
    with pytest.raises(
        InputError,
        match=r"cannot tell what time each value of tp \(m\) accumulates over: .*give period='1h'",
    ) as info:
        convert_units(tp, to="mm/day")
    assert info.value.param == ("period",)
    with pytest.raises(InputError, match=r"period='often' is not a length of time"):
        convert_units(tp, to="mm/day", period="often")
    wind = temp.assign_attrs(units="m s-1")
    with pytest.raises(InputError, match=r"^wind_speed: cannot convert t2m from 'K' .* to 'm s-1'"):
        wind_speed(wind, v=temp)
    with pytest.raises(
        InputError, match=r"wind_speed: t2m has no units attribute while the other has"
    ):
        wind_speed(wind, v=temp.drop_attrs())
    with pytest.raises(
        InputError, match=r"magnitude: t2m and t2m are not on the same grid and times"
    ):
        magnitude(wind, other=wind.assign_coords(time=t + pd.Timedelta("1D")))
    with pytest.raises(
        InputError, match=r"convert_units\(\) needs an xarray DataArray, not Dataset"
    ):
        convert_units(temp.to_dataset(), to="degC")
