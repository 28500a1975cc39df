"""Headline numbers of any result, by kind, in the data's own units, against numpy (and the
area mean of a map against CDO's fldmean)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from pangeo_hpc.batch.pipeline.headlines import headline_table, headlines, rounded
from tests.support.cdo_fields import with_exact_areas
from tests.support.needs import require_tool

LAT = np.arange(-80.0, 80.1, 20.0)  # 9 cell-centred latitudes: edges every 20 degrees
LON = np.arange(0.0, 360.0, 30.0)
MONTHS = pd.date_range("1991-01-01", periods=360, freq="MS")
RATE = {"units": "mm/day", "long_name": "precipitation rate"}
WIND = {"units": "m s-1", "long_name": "10 metre wind speed"}


def field(values, dims, attrs, **coords) -> xr.DataArray:
    return xr.DataArray(np.asarray(values, dtype="f8"), dims=dims, coords=coords, attrs=attrs)


def band_weights(lat: np.ndarray = LAT) -> np.ndarray:
    """Area of each latitude band of 20 degrees (edges halfway between centres), per cell."""
    edges = np.deg2rad(np.append(lat - 10.0, lat[-1] + 10.0))
    return np.diff(np.sin(edges))


def numpy_area_mean(values: np.ndarray) -> float:
    w = np.broadcast_to(band_weights()[:, None], values.shape)
    ok = np.isfinite(values)
    return float((values[ok] * w[ok]).sum() / w[ok].sum())


def test_rounded_keeps_significant_digits_and_maps_nan_to_none():
    assert rounded(1.23456789e-4) == 0.000123457  # a precipitation total in m: not 0.0001
    assert rounded(287.123456789) == 287.123
    assert rounded(np.float32(2.5)) == 2.5
    assert rounded(np.nan) is None and rounded(np.inf) is None


def test_scalar():
    out = headlines(xr.Dataset({"tp": field(1.23456789e-4, (), {"units": "m"})}))
    assert out == {
        "tp": {"kind": "scalar", "units": "m", "long_name": "tp", "dims": {}, "value": 0.000123457}
    }


def test_series_numbers_against_numpy_with_a_known_trend():
    years = (MONTHS - MONTHS[0]).days.values / 365.2425
    values = 3.0 + 0.025 * years  # 0.25 mm/day per decade
    values[[0, 17]] = np.nan
    out = headlines(field(values, "time", RATE, time=MONTHS).rename("pr"))["pr"]
    assert out["kind"] == "series" and out["dims"] == {"time": 360}
    assert out["trend_per_decade"] == pytest.approx(0.25, rel=1e-5)
    assert out["trend_units"] == "mm/day per decade"
    assert out["units"] == "mm/day" and out["long_name"] == "precipitation rate"
    assert out["steps"] == 360
    assert out["mean"] == pytest.approx(np.nanmean(values), rel=1e-6)
    assert out["min"] == pytest.approx(np.nanmin(values), rel=1e-6)
    assert out["max"] == pytest.approx(np.nanmax(values), rel=1e-6)
    assert out["first"] is None  # NaN
    assert out["last"] == pytest.approx(values[-1], rel=1e-6)


def test_series_trend_of_noisy_data_is_numpys_least_squares_per_decade():
    t = pd.date_range("2000-01-01", periods=730, freq="D")
    values = np.random.default_rng(0).normal(size=t.size)
    out = headlines(field(values, "time", WIND, time=t).rename("u"))["u"]
    years = (t - t[0]).days.values / 365.2425
    assert out["trend_per_decade"] == pytest.approx(np.polyfit(years, values, 1)[0] * 10, rel=1e-5)
    assert out["trend_units"] == "m s-1 per decade"


def test_series_along_integer_years_and_months():
    by_year = field(0.1 * np.arange(10.0), "year", RATE, year=np.arange(2000, 2010))
    clim = field(np.arange(12.0), "month", RATE, month=np.arange(1, 13))
    out = headlines(xr.Dataset({"annual": by_year, "clim": clim}))
    assert out["annual"]["trend_per_decade"] == pytest.approx(1.0)
    assert out["clim"]["kind"] == "series"
    assert out["clim"]["trend_per_decade"] is None  # no trend along a position in the year


@pytest.mark.parametrize("west", [False, True], ids=["lon 0..360", "lon -180..180"])
def test_map_area_mean_is_weighted_by_cell_area(west):
    values = np.random.default_rng(1).random((LAT.size, LON.size)) * 1e-3 + np.abs(LAT)[:, None]
    values[3, 2:5] = np.nan
    lon = (LON + 180) % 360 - 180 if west else LON
    out = headlines(field(values, ("latitude", "longitude"), WIND, latitude=LAT, longitude=lon))
    (entry,) = out.values()
    assert entry["kind"] == "map" and entry["dims"] == {"latitude": 9, "longitude": 12}
    assert entry["area_mean"] == pytest.approx(numpy_area_mean(values), rel=1e-5)
    assert entry["min"] == pytest.approx(np.nanmin(values), rel=1e-6)
    assert entry["max"] == pytest.approx(np.nanmax(values), rel=1e-6)
    assert entry["valid_share"] == pytest.approx(1 - 3 / values.size, rel=1e-6)


def test_maps_give_an_area_mean_per_panel():
    values = np.stack([np.full((LAT.size, LON.size), v) for v in (1.0, 2.0, 3.0, 4.0)])
    values[0, :4] = 100.0  # the southern bands of the first panel: weighted, not counted
    da = field(values, ("season", "lat", "lon"), RATE, season=["DJF", "MAM", "JJA", "SON"])
    out = headlines(da.assign_coords(lat=LAT, lon=LON).rename("pr"))["pr"]
    assert out["kind"] == "maps" and (out["min"], out["max"]) == (1.0, 100.0)
    assert out["area_mean"] == pytest.approx(
        {"DJF": numpy_area_mean(values[0]), "MAM": 2.0, "JJA": 3.0, "SON": 4.0}, rel=1e-5
    )


def test_hovmoeller_zonal_other_and_missing_values():
    hov = field(np.arange(24.0 * 9).reshape(24, 9) - 5, ("time", "lat"), WIND, time=MONTHS[:24], lat=LAT)  # fmt: skip
    zonal = field(np.where(LAT > 0, np.nan, LAT), "lat", WIND, lat=LAT)
    empty = field(np.full(9, np.nan), "lat", WIND, lat=LAT)
    other = field(np.ones((2, 3, 4)), ("a", "b", "c"), WIND)
    words = xr.DataArray(np.array(["x", "y"]), dims="x")
    out = headlines(
        xr.Dataset({"hov": hov, "zonal": zonal, "empty": empty, "other": other, "words": words})
    )
    assert out["hov"] | {"long_name": None} == {
        "kind": "hovmoeller", "units": "m s-1", "long_name": None,
        "dims": {"time": 24, "lat": 9}, "min": -5.0, "max": 210.0,
    }  # fmt: skip
    assert (out["zonal"]["kind"], out["zonal"]["min"], out["zonal"]["max"]) == ("zonal", -80, 0)
    assert (out["empty"]["min"], out["empty"]["max"]) == (None, None)
    assert set(out["other"]) == {"kind", "units", "long_name", "dims"}
    assert out["other"]["kind"] == out["words"]["kind"] == "other"
    json.dumps(out, allow_nan=False)  # JSON-ready: no NaN, no numpy types


def test_everything_is_json_ready():
    ds = xr.Dataset(
        {
            "s": field(np.nan, (), RATE),
            "t": field(np.arange(24.0), "time", RATE, time=MONTHS[:24]),
            "m": field(np.ones((9, 12)), ("lat", "lon"), RATE, lat=LAT, lon=LON),
        }
    )
    out = json.loads(json.dumps(headlines(ds), allow_nan=False))
    assert out["s"]["value"] is None and out["t"]["steps"] == 24
    assert all(
        type(v) in (float, int, str, dict, type(None)) for e in out.values() for v in e.values()
    )


def test_the_table_has_a_row_per_result_and_its_numbers_as_in_the_answer():
    """Each kind in its columns (a scalar's value and a map's area mean under mean, a
    series' first, last and trend), a panel per row, n/a for a number not known."""
    answer = {
        "global_mean": {"kind": "scalar", "units": "K", "value": 291.478},
        "series": {
            "kind": "series", "units": "K", "mean": 291.5, "min": 290.1, "max": 292.25,
            "first": 290.8, "last": 292.0, "steps": 240, "trend_per_decade": 0.200712,
            "trend_units": "K per decade",
        },
        "trend": {
            "kind": "map", "units": "K/(10 year)", "area_mean": 0.2007, "min": -0.0123,
            "max": 0.451, "valid_share": 0.7104,
        },
        "normals": {
            "kind": "maps", "units": "K", "min": 230.5, "max": 310.0,
            "area_mean": {"DJF": 277.1, "JJA": None},
        },
        "hov": {"kind": "hovmoeller", "units": "m s-1", "min": 0.5, "max": 12.25},
        "other": {"kind": "other", "units": "", "dims": {"a": 2, "b": 3}},
    }  # fmt: skip
    assert headline_table(answer) == [
        "result       kind        units           mean      min     max  first  last"
        "  trend per decade  notes",
        "-----------  ----------  -----------  -------  -------  ------  -----  ----"
        "  ----------------  -----------------------",
        "global_mean  scalar      K            291.478",
        "series       series      K              291.5    290.1  292.25  290.8   292"
        "          0.200712  240 steps",
        "trend        map         K/(10 year)   0.2007  -0.0123   0.451"
        "                                 values in 71 % of cells",
        "normals      maps        K                       230.5     310",
        "  DJF                                   277.1",
        "  JJA                                     n/a",
        "hov          hovmoeller  m s-1                     0.5   12.25",
        "other        other                                                           "
        "                  a 2 x b 3",
    ]


def test_the_table_shows_every_number_headlines_gives_and_only_the_columns_used():
    maps = field(np.ones((2, 9, 12)), ("season", "lat", "lon"), RATE, season=["DJF", "JJA"])
    ds = xr.Dataset(
        {
            "s": field(np.nan, (), RATE),
            "m": field(np.arange(108.0).reshape(9, 12), ("lat", "lon"), RATE, lat=LAT, lon=LON),
            "p": maps.assign_coords(lat=LAT, lon=LON),
        }
    )
    out = headlines(ds)
    lines = headline_table(out)
    assert lines[0].split() == ["result", "kind", "units", "mean", "min", "max", "notes"]
    rows = [line.split() for line in lines[2:]]
    assert rows[0] == ["s", "scalar", "mm/day", "n/a"]  # NaN: no value
    numbers = [f"{out['m'][k]:g}" for k in ("area_mean", "min", "max")]
    assert rows[1][:6] == ["m", "map", "mm/day", *numbers]
    assert rows[2:] == [["p", "maps", "mm/day", "1", "1"], ["DJF", "1"], ["JJA", "1"]]


@pytest.mark.cdo
@pytest.mark.parametrize("west", [False, True], ids=["lon 0..360", "lon -180..180"])
def test_map_area_mean_equals_cdo_fldmean(tmp_path, west):
    """On CDO's topography with the oceans masked (NaN holes, pole points), 1 degree. CDO
    weighs by the exact cell areas (carried by a copy of the file; its own gridarea differs from them by up to
    5e-5, which put a 1e-5 comparison on the edge, issue 27); the headlines are CDO's
    numbers rounded to their 6 digits (the means agree to ~1e-13 before rounding)."""
    cdo = require_tool("cdo")
    path = tmp_path / "topo.nc"
    subprocess.run([cdo, "-s", "-f", "nc4", "-setrtomiss,-20000,0", "-topo,r360x181", str(path)], check=True)  # fmt: skip
    ds = xr.open_dataset(path)
    da = next(iter(ds.data_vars.values())).squeeze()
    if west:
        da = da.assign_coords(lon=(da.lon + 180) % 360 - 180).sortby("lon")
    entry = headlines(da.to_dataset(name="topo"))["topo"]
    exact = with_exact_areas(path, tmp_path / "exact.nc")
    for key, operator, source in [("area_mean", "fldmean", exact), ("min", "fldmin", path), ("max", "fldmax", path)]:  # fmt: skip
        assert entry[key] == rounded(cdo_out(cdo, operator, source)), key
    assert 0.2 < entry["valid_share"] < 0.5  # land only


def cdo_out(cdo: str, operator: str, path) -> float:
    args = [cdo, "-s", "outputf,%.17g,1", *(f"-{operator}").split(), str(path)]
    return float(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
