"""Synthetic ERA5: the era5-pds layout with known answers, for demos, tests and benchmarks.

``python -m pangeo_hpc.run demo-data`` writes it (:func:`generate`); :func:`variables` lists
what it can write; :mod:`pangeo_hpc.demo.answers` gives the known answers.
"""

from pangeo_hpc.demo.answers import (
    days_between,
    expected,
    expected_daily_precip,
    expected_mean_wind_speed,
    expected_precip_percentile,
    expected_t2m,
    expected_t2m_area_means,
    expected_t2m_trends,
    expected_wind_speed,
    ocean_mask,
)
from pangeo_hpc.demo.spec import DemoSpec, variables
from pangeo_hpc.demo.sst import ENSO_BANDS
from pangeo_hpc.demo.synthetic import VARIABLE, generate, read_manifest
from pangeo_hpc.demo.writer import is_demo_file

__all__ = [
    "ENSO_BANDS",
    "VARIABLE",
    "DemoSpec",
    "days_between",
    "expected",
    "expected_daily_precip",
    "expected_mean_wind_speed",
    "expected_precip_percentile",
    "expected_t2m",
    "expected_t2m_area_means",
    "expected_t2m_trends",
    "expected_wind_speed",
    "generate",
    "is_demo_file",
    "ocean_mask",
    "read_manifest",
    "variables",
]
