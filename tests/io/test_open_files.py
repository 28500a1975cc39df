"""open_files: any CF NetCDF files along time, with the values xarray and CDO read, lazily."""

from __future__ import annotations

import subprocess

import cftime
import dask
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.errors import DataNotFoundError, InputError
from pangeo_hpc.io import files as files_module
from pangeo_hpc.io.files import open_files
from tests.support.lazy import raise_if_dask_computes
from tests.support.ncfiles import field, write_nc
from tests.support.needs import require_tool

LAT = np.arange(-88.0, 90.0, 8.0)  # 23 latitudes, ascending (OISST order)
LON = np.arange(2.0, 360.0, 12.0)  # 30 longitudes, 0..360


def oisst_tree(root, days=6, first=19910129):
    """OISST-like daily files, one a day in monthly folders: sst(time, zlev, lat, lon), int16
    packed (0.01 degC, from the fourth day 0.005 degC + 10), _FillValue -999 over a
    'continent'."""
    paths, values = [], []
    for i in range(days):
        day = np.datetime64("1991-01-29") + np.timedelta64(i, "D")
        stamp = str(day).replace("-", "")
        data = field(1, LAT.size, LON.size, seed=i)
        times = np.array([(day - np.datetime64("1978-01-01")).astype(int) + 0.5])
        path = root / stamp[:6] / f"oisst-avhrr-v02r01.{stamp}.nc"
        write_nc(
            path,
            {"sst": data},
            times,
            lat=LAT,
            lon=LON,
            zlev=True,
            pack=(0.01, 0.0) if i < 3 else (0.005, 10.0),
            fill=-999,
        )
        paths.append(path)
        values.append(data)
    return paths, np.concatenate(values)


def test_daily_oisst_files_give_the_values_xarray_reads(tmp_path):
    paths, expected = oisst_tree(tmp_path / "oisst")
    with raise_if_dask_computes():
        ds = open_files(str(tmp_path / "oisst/*/oisst-avhrr-v02r01.*.nc"), "sst")
    sst = ds.sst
    assert sst.dims == ("time", "lat", "lon") and float(ds.zlev) == 0.0  # zlev kept, scalar
    assert sst.chunks[0] == (1,) * 6  # one whole-field chunk per file
    assert str(ds.time.values[0]) == "1991-01-29T12:00:00.000000000"
    assert sst.attrs["units"] == "degC" and "scale_factor" not in sst.attrs
    np.testing.assert_allclose(sst.values, expected, rtol=1e-6, atol=1e-5)  # fills: NaN
    ref = xr.open_mfdataset(sorted(map(str, paths)), combine="by_coords").sst.squeeze("zlev")
    np.testing.assert_allclose(sst.values, ref.values, rtol=1e-6, atol=1e-5)
    assert ds.encoding["source_files"] == [str(p) for p in paths]
    assert ds.encoding["source_bytes"] == sum(p.stat().st_size for p in paths)
    assert ds.encoding["source_access"] == "local"
    again = open_files(str(tmp_path / "oisst/**/*.nc"), ["sst"], "1991-02", "1991-02")
    assert again.sizes["time"] == 3  # February only: 1, 2, 3
    np.testing.assert_array_equal(again.sst.values, sst.values[3:])
    assert again.encoding["source_files"] == [str(p) for p in paths[3:]]


@pytest.mark.cdo
def test_files_in_time_order_not_name_order_as_cdo_mergetime(tmp_path):
    cdo = require_tool("cdo")
    # names run against time: z.nc holds the first days, a.nc the last
    parts = []
    for name, start in (("z", 0), ("m", 4), ("a", 8)):
        data = field(4, LAT.size, LON.size, seed=start)
        times = np.arange(start, start + 4) + 0.5
        parts.append(write_nc(tmp_path / f"{name}.nc", {"tos": data}, times, lat=LAT, lon=LON))
    merged = tmp_path / "merged.nc"
    subprocess.run([cdo, "-s", "mergetime", *map(str, parts), str(merged)], check=True)
    ds = open_files(str(tmp_path / "[amz].nc"), "tos")
    ref = xr.open_dataset(merged)
    np.testing.assert_array_equal(ds.time.values, ref.time.values)
    np.testing.assert_allclose(ds.tos.values, ref.tos.values, rtol=1e-5)
    assert ds.encoding["source_files"] == [str(p) for p in parts]


def cmip_files(root, calendar="noleap"):
    """Two CMIP-like monthly files in their own time units (days since each file's start),
    with time_bnds: 1898-01..1899-12 and 1900-01..1901-12, 365- or 360-day years."""
    year = {"noleap": 365, "360_day": 360}[calendar]
    lengths = (
        np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
        if calendar == "noleap"
        else np.full(12, 30)
    )
    edges = np.concatenate([[0], np.cumsum(np.tile(lengths, 2))]).astype(float)
    paths, values = [], []
    for k, first in enumerate((1898, 1900)):
        data = field(24, 12, 24, seed=k, holes=False) + 273.15
        name = f"tos_Omon_X_historical_r1i1p1f1_gn_{first}01-{first + 1}12.nc"
        paths.append(
            write_nc(
                root / name,
                {"tos": data},
                (edges[:-1] + edges[1:]) / 2,
                time_units=f"days since {first}-01-01",
                calendar=calendar,
                bounds=np.stack([edges[:-1], edges[1:]], axis=1),
                nv="bnds",
                units="K",
                lat=np.linspace(-82.5, 82.5, 12),
                lon=np.arange(-172.5, 180, 15.0),
            )
        )
        values.append(data)
    assert edges[-1] == 2 * year
    return paths, np.concatenate(values)


@pytest.mark.parametrize("calendar", ["noleap", "360_day"])
def test_cmip_files_each_in_its_own_time_units(tmp_path, calendar):
    paths, expected = cmip_files(tmp_path, calendar)
    ds = open_files(tmp_path / "tos_Omon_*.nc", "tos", "1899-11", "1900-02")
    assert ds.sizes["time"] == 4 and ds.tos.chunks[0] == (2, 2)
    t = ds.time.values
    assert isinstance(t[0], cftime.datetime) and t[0].calendar == calendar
    assert (t[0].year, t[0].month, t[-1].year, t[-1].month) == (1899, 11, 1900, 2)
    np.testing.assert_allclose(ds.tos.values, expected[22:26], rtol=1e-6)
    bounds = ds.time_bnds.values
    assert ds.time.attrs["bounds"] == "time_bnds" and ds.time_bnds.dims == ("time", "bnds")
    assert bounds[1, 1] == cftime.datetime(1900, 1, 1, calendar=calendar) == bounds[2, 0]
    assert bounds[3, 1] == cftime.datetime(1900, 3, 1, calendar=calendar)
    ref = xr.open_mfdataset(
        list(map(str, paths)), decode_times=xr.coders.CFDatetimeCoder(use_cftime=True)
    ).sel(time=slice("1899-11", "1900-02"))
    np.testing.assert_array_equal(t, ref.time.values)
    np.testing.assert_allclose(ds.tos.values, ref.tos.values, rtol=1e-6)
    assert ds.tos.attrs["units"] == "K"


def test_several_variables_in_the_same_or_their_own_files(tmp_path):
    times = np.arange(6) + 0.5
    u, v = field(6, 10, 20, seed=1), field(6, 10, 20, seed=2)
    for k in range(2):  # two files holding both
        write_nc(
            tmp_path / "both" / f"w{k}.nc",
            {"u": u[3 * k : 3 * k + 3], "v": v[3 * k : 3 * k + 3]},
            times[3 * k : 3 * k + 3],
            units="m s-1",
        )
    ds = open_files(tmp_path / "both/*.nc", ["u", "v"])
    assert [p.rsplit("/", 1)[-1] for p in ds.encoding["source_files"]] == ["w0.nc", "w1.nc"]
    np.testing.assert_allclose(ds.u.values, u, rtol=1e-6)
    np.testing.assert_allclose(ds.v.values, v, rtol=1e-6)
    for name, data in (("u", u), ("v", v)):  # CMIP-like: one variable a file
        write_nc(tmp_path / "own" / f"{name}_day.nc", {name: data}, times, units="m s-1")
    ds = open_files(tmp_path / "own/*.nc", ["v", "u"])
    np.testing.assert_allclose(ds.u.values, u, rtol=1e-6)
    assert [p.rsplit("/", 1)[-1] for p in ds.encoding["source_files"]] == ["v_day.nc", "u_day.nc"]
    write_nc(tmp_path / "odd" / "u.nc", {"u": u}, times)
    write_nc(tmp_path / "odd" / "v.nc", {"v": v[:, :5]}, times)
    with pytest.raises(
        InputError,
        match=r"'v' \(.*odd/v.nc'\) is on the grid lat x lon \(5, 20\).* but 'u' \(.*odd/u.nc'\) on lat x lon \(10, 20\)",
    ):
        open_files(tmp_path / "odd/*.nc", ["u", "v"])
    write_nc(tmp_path / "late" / "u.nc", {"u": u}, times)
    write_nc(tmp_path / "late" / "v.nc", {"v": v}, times + 1)
    with pytest.raises(
        InputError, match=r"'v' .* has the time axis time: 6 steps .* share one time axis"
    ):
        open_files(tmp_path / "late/*.nc", ["u", "v"])


def test_overlapping_files_are_named(tmp_path):
    data = field(3, 5, 8, seed=0)
    write_nc(tmp_path / "a.nc", {"sst": data}, np.array([0.0, 1, 2]))
    write_nc(tmp_path / "b.nc", {"sst": data}, np.array([2.0, 3, 4]))
    with pytest.raises(InputError, match=r"b.nc' starts at 1978-01-03.*end of .*a.nc' .*overlap"):
        open_files(tmp_path / "*.nc", "sst")


def test_bad_files_and_names(tmp_path):
    data = field(2, 5, 8, seed=0)
    write_nc(tmp_path / "d" / "a.nc", {"sst": data}, np.array([0.0, 1]))
    with pytest.raises(
        DataNotFoundError, match=r"no files match .*: '.*d' exists and holds \['a.nc'\]"
    ):
        open_files(tmp_path / "d" / "*.nc4", "sst")
    with pytest.raises(
        DataNotFoundError,
        match=r"'.*nowhere/deeper' does not exist; the nearest .*'.*d', holds \['a.nc'\]",
    ):
        open_files(tmp_path / "d" / "nowhere" / "deeper" / "*.nc", "sst")
    with pytest.raises(
        DataNotFoundError, match=r"variable 'tos' is in none of the 1 files .* holds \['sst'\]"
    ):
        open_files(tmp_path / "d/*.nc", ["sst", "tos"])
    write_nc(
        tmp_path / "d" / "b.nc",
        {"sst": field(2, 5, 8, seed=1)},
        np.array([2.0, 3]),
        lon=np.arange(-180, 180, 45.0),
    )
    with pytest.raises(
        InputError,
        match=r"b.nc' has sst on the grid lat .* lon -180..135 \(8\).* but .*a.nc' on .*lon 0..315 \(8\).*share one grid",
    ):
        open_files(tmp_path / "d/*.nc", "sst")
    write_nc(tmp_path / "d" / "b.nc", {"sst": data}, np.array([2.0, 3]), units="K")
    with pytest.raises(InputError, match=r"b.nc' has sst in units 'K' but .*a.nc' in 'degC'"):
        open_files(tmp_path / "d/*.nc", "sst")
    with pytest.raises(
        DataNotFoundError, match=r"hold 1978-01..1978-01, not 1977-12..1978-01: choose"
    ):
        open_files(tmp_path / "d/a.nc", "sst", start="1977-12")
    write_nc(tmp_path / "gap" / "jan.nc", {"sst": data}, np.array([0.0, 1]))
    write_nc(tmp_path / "gap" / "mar.nc", {"sst": data}, np.array([60.0, 61]))
    with pytest.raises(
        DataNotFoundError, match=r"no file of 'sst' holds times in 1978-02..1978-02"
    ):
        open_files(tmp_path / "gap/*.nc", "sst", "1978-02", "1978-02")
    with pytest.raises(InputError, match=r"start='1978-13' has month 13"):
        open_files(tmp_path / "d/a.nc", "sst", start="1978-13")
    with pytest.raises(InputError, match=r"variables=\[\] is not a variable name"):
        open_files(tmp_path / "d/a.nc", [])


def test_second_open_scans_nothing(tmp_path, monkeypatch):
    oisst_tree(tmp_path / "oisst", days=4)
    seen = []
    scan = files_module.scan_variables
    monkeypatch.setattr(files_module, "scan_variables", lambda p, v: seen.append(p) or scan(p, v))
    with dask.config.set({"pangeo-hpc.catalog.cache": str(tmp_path / "cache")}):
        first = open_files(tmp_path / "oisst/*/*.nc", "sst")
        again = open_files(tmp_path / "oisst/*/*.nc", "sst")
    assert len(seen) == 4  # scanned once each
    assert again.identical(first)
