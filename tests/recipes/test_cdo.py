"""global_mean equals CDO's fldmean (NaN skipped), with the same weights both ways: ours with
CDO's gridarea, and CDO's with the true cell areas (half cells at the poles) ours uses by
default. CDO's gridarea differs from those by up to 5e-5 at 1 degree: a mean with one
against a mean with the other sat on the edge of a 1e-5 tolerance (issue 27)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.recipes import global_mean
from tests.support.cdo_fields import (
    cdo_cell_areas,
    sums_rtol,
    with_exact_areas,
)
from tests.support.needs import require_tool

pytestmark = pytest.mark.cdo


def cdo_fldmean(path: Path, variable: str | None = None, exact: Path | None = None) -> np.ndarray:
    """CDO's fldmean of each time step (to 17 digits), weighted by its gridarea or, with
    ``exact`` (a folder), by the exact cell areas carried by a copy of the file
    (:func:`with_exact_areas`; ``-setgridarea`` in a chain makes CDO 2.1.1 crash now and
    then, see there)."""
    cdo = require_tool("cdo")
    if exact is not None:
        path = with_exact_areas(path, exact / f"{path.stem}-{path.parent.parent.name}.nc")
    args = [cdo, "-s", "outputf,%.17g,1", "-fldmean"]
    args += [f"-selname,{variable}", str(path)] if variable else [str(path)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return np.array([float(v) for v in out.split()])


def cdo_make(tmp_path: Path, name: str, operators: str) -> Path:
    cdo = require_tool("cdo")
    path = tmp_path / f"{name}.nc"
    subprocess.run([cdo, "-s", "-f", "nc4", *operators.split(), str(path)], check=True)
    return path


@pytest.mark.parametrize(
    ("name", "operators"),
    [
        # random values on a 1 degree grid whose latitudes include both poles
        ("random-poles", "-random,r360x181,42"),
        # topography with the oceans masked out: NaN holes shaped like the continents
        ("topo-land", "-setrtomiss,-20000,0 -topo,r360x181"),
        # cell-centred 0.5 degree grid (no pole points), ocean depths only
        ("topo-ocean", "-setrtomiss,0,20000 -topo,r720x360"),
    ],
)
def test_global_mean_equals_cdo_on_cdo_fields(tmp_path, name, operators):
    path = cdo_make(tmp_path, name, operators)
    ds = xr.open_dataset(path)
    var = next(iter(ds.data_vars))
    rtol = sums_rtol(ds.lat.size * ds.lon.size)
    areas = cdo_cell_areas(path, tmp_path / "areas.nc")
    got = global_mean(ds[var].chunk(), weights=areas).compute().values.ravel()
    np.testing.assert_allclose(got, cdo_fldmean(path), rtol=rtol)
    exact = cdo_fldmean(path, exact=tmp_path)
    got = global_mean(ds[var].chunk()).compute().values.ravel()
    np.testing.assert_allclose(got, exact, rtol=rtol)
    assert np.isnan(ds[var].values).any() == ("topo" in name)


def test_global_mean_equals_cdo_on_demo_files(demo_tree, tmp_path):
    files = sorted(demo_tree.glob("2003/*/data/sea_surface_temperature.nc"))[:3]
    ds = open_era5(source=demo_tree, start="2003-01", end="2003-03")
    sst = "sea_surface_temperature"
    rtol = sums_rtol(ds.lat.size * ds.lon.size)
    areas = cdo_cell_areas(files[0], tmp_path / "areas.nc")  # one grid for all the files
    got = global_mean(ds.sea_surface_temperature, weights=areas).compute().values
    expected = np.concatenate([cdo_fldmean(f, sst) for f in files])
    np.testing.assert_allclose(got, expected, rtol=rtol)
    got = global_mean(ds.sea_surface_temperature).compute().values
    expected = np.concatenate([cdo_fldmean(f, sst, exact=tmp_path) for f in files])
    np.testing.assert_allclose(got, expected, rtol=rtol)
    assert np.isnan(ds.sea_surface_temperature[0].values).mean() > 0.3  # land and ice masked
