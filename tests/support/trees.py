"""The demo trees the fixtures of tests/conftest.py write: their settings and periods."""

from __future__ import annotations

from pangeo_hpc.demo import DemoSpec

#: the test trees: 2 degree daily fields for ten years (the demo default is 1 degree)
TEST_SPEC = DemoSpec(resolution=2.0, frequency="daily", start="2000-01", end="2009-12", seed=7)

#: the period of every demo variable but precipitation in the ``all_variables_tree`` fixture
ALL_PERIOD = ("2000-01", "2002-12")
#: precipitation is hourly (as era5-pds): three months of it, the first day incomplete
PRECIP_PERIOD = ("2000-12", "2001-02")
DAILY_VARIABLES = (
    "sea_surface_temperature",
    "air_temperature_at_2_metres",
    "eastward_wind_at_10_metres",
    "northward_wind_at_10_metres",
)
