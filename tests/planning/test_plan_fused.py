"""The plan's count of fused read tasks against the graph the recipe really builds."""

from __future__ import annotations

import dask.config
import pytest

from pangeo_hpc.batch.chains import chain, recipe_yaml
from pangeo_hpc.io.era5 import open_era5
from pangeo_hpc.planning.calibrate import _read_tasks_of
from pangeo_hpc.planning.model import fused_read_tasks

#: an area mean straight from the files: summed as they are read (recipes/fusion.py)
GLOBAL_MEAN = {
    "name": "global-mean",
    "dataset": {"variable": "sea_surface_temperature", "start": "2000-01", "end": "2009-12"},
    "results": {"series": [{"area_mean": {}}]},
}


@pytest.mark.parametrize("least", [32, 8])
def test_fused_read_tasks_are_those_of_the_recipes_graph(demo_tree, least):
    spec = recipe_yaml.from_dict(GLOBAL_MEAN, None)
    with dask.config.set({"pangeo-hpc.data.fused-tasks": least}):
        ds = open_era5(spec.variable, "2000-01", "2009-12", source=demo_tree)
        da = ds[spec.variable]
        spans, fused = _read_tasks_of(chain.build(spec, ds), da)
        chunk = -(-int(da.nbytes) // len(da.chunks[0]))
        assert fused and spans < len(da.chunks[0])
        # the model takes the chunks equal (months are 28 to 31 days): one span apart at most
        assert abs(fused_read_tasks(int(da.nbytes), chunk) - spans) <= 1, (spans, chunk)


def test_a_time_mean_beside_it_is_not_fused(demo_tree):
    """era5-sst-mean reads its data for a time mean too: one read task per chunk."""
    spec = recipe_yaml.load("era5-sst-mean")
    ds = open_era5(spec.variable, "2000-01", "2001-12", source=demo_tree)
    da = ds[spec.variable]
    assert _read_tasks_of(chain.build(spec, ds), da) == (len(da.chunks[0]), False)
