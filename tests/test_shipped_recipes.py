"""Every shipped recipe, run from the command line on demo data, against the generator's
known answers; each result passes the CF checker; each recipe reads its data once."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from pangeo_hpc.batch import open_inputs
from pangeo_hpc.batch.chains.recipe_yaml import available
from pangeo_hpc.demo import (
    expected,
    expected_mean_wind_speed,
    expected_precip_percentile,
    expected_t2m,
    expected_t2m_trends,
)
from pangeo_hpc.recipes import area_mean
from pangeo_hpc.recipes.fusion import fused_spans
from pangeo_hpc.write.figures import draw_result
from pangeo_hpc.write.projections import map_view
from tests.support.cf import cfchecks, unavailable
from tests.support.cli import run_cli, run_clis
from tests.support.known import NINO34_BOX, daily_global_means, known_index, month_files
from tests.support.needs import missing, require_tool
from tests.support.trees import ALL_PERIOD, PRECIP_PERIOD, TEST_SPEC

SHIPPED = (
    "era5-nino34",
    "era5-nino34-djf",
    "era5-precip-p95",
    "era5-sst-hovmoeller",
    "era5-sst-mean",
    "era5-sst-trend",
    "era5-t2m-normals",
    "era5-t2m-warming",
    "era5-wind-speed",
)
SPEC = replace(TEST_SPEC, start=ALL_PERIOD[0], end=ALL_PERIOD[1]).resolved()


def period(recipe: str) -> tuple[str, str]:
    return PRECIP_PERIOD if recipe == "era5-precip-p95" else ALL_PERIOD


@pytest.fixture(scope="module")
def runs(all_variables_tree, tmp_path_factory) -> dict[str, Path]:
    """Each shipped recipe run once by the command line, as the README shows."""
    base = tmp_path_factory.mktemp("shipped")
    out = {recipe: base / recipe for recipe in SHIPPED}

    def command(recipe: str) -> tuple[str, ...]:
        start, end = period(recipe)
        return (
            recipe, "--data", str(all_variables_tree), "--start", start, "--end", end,
            "--workers", "2", "--no-progress", "--out", str(out[recipe]),
        )  # fmt: skip

    # independent runs, two at a time (conftest.run_clis)
    for recipe, r in zip(SHIPPED, run_clis(*map(command, SHIPPED), cwd=base), strict=True):
        assert r.returncode == 0, f"{recipe}: {r.stderr}"
    return out


def result(runs, recipe: str) -> xr.Dataset:
    return xr.open_dataset(runs[recipe] / "result.nc")


def answer(runs, recipe: str) -> dict:
    return json.loads((runs[recipe] / "summary.json").read_text())["answer"]


def test_the_shipped_recipes_are_listed_with_their_descriptions(tmp_path):
    assert set(SHIPPED) <= set(available())
    r = run_cli("list", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for recipe in SHIPPED:
        line = next(x for x in r.stdout.splitlines() if x.startswith(recipe + " "))
        assert len(line.split(maxsplit=2)[2]) > 20, line  # a description, not just a name


@pytest.mark.slow
def test_sst_mean_is_the_known_area_weighted_mean(runs, all_variables_tree):
    days = np.concatenate(daily_global_means(month_files(all_variables_tree, *ALL_PERIOD)))
    res = result(runs, "era5-sst-mean")
    assert float(res.global_mean) == pytest.approx(days.mean(), abs=1e-4)
    assert answer(runs, "era5-sst-mean")["global_mean"]["units"] == "K"


@pytest.mark.slow
def test_sst_trend_finds_the_known_warming(runs):
    got = answer(runs, "era5-sst-trend")["global_mean_trend"]
    # 3 years: the known 0.2 K/decade within 10 % (the 10-year runs elsewhere hold 5 %)
    assert got["value"] == pytest.approx(0.2, rel=0.1) and got["units"] == "K/(10 year)"


def _days() -> np.ndarray:
    return pd.date_range(f"{ALL_PERIOD[0]}-01", f"{ALL_PERIOD[1]}-31", freq="D").values


@pytest.mark.slow
def test_nino34_chain_is_the_known_index(runs):
    got = result(runs, "era5-nino34").sea_surface_temperature.values
    known = known_index(SPEC, _days())
    # monthly means of ~30 days of noise over the box: about 0.005 K
    np.testing.assert_allclose(got, known, atol=0.02)
    assert np.corrcoef(got, known)[0, 1] > 0.999


@pytest.mark.slow
def test_nino34_djf_is_the_known_winter_index(runs):
    got = result(runs, "era5-nino34-djf").sea_surface_temperature
    days = pd.DatetimeIndex(_days())
    signal = expected(SPEC, days.values.astype("datetime64[h]"), box=NINO34_BOX)
    daily = pd.Series(signal["box_signal_K"], index=days)
    djf = daily[daily.index.month.isin([12, 1, 2])]
    winters = djf.resample("QS-DEC").mean()
    months = pd.Series(djf.index.year * 12 + djf.index.month, index=djf.index)
    months = months.resample("QS-DEC").nunique()
    whole = winters[months.reindex(winters.index).values == 3]  # all three months in
    known = whole - whole.mean()
    # Jan-Feb 2000 and Dec 2002 alone left out: the two whole winters
    assert got.sizes["time0"] == len(known) == 2
    np.testing.assert_array_equal(got.time0.values, whole.index.values)
    np.testing.assert_allclose(got.values, known.values, atol=0.02)
    res = result(runs, "era5-nino34-djf")
    bounds = res[res.time0.attrs["bounds"]].values  # each label in its winter's bounds
    assert ((bounds[:, 0] <= got.time0.values) & (got.time0.values <= bounds[:, 1])).all()
    assert "complete seasons only" in got.attrs["cell_methods"]


@pytest.mark.slow
@pytest.mark.cdo
def test_hovmoeller_equals_cdo(runs, all_variables_tree, tmp_path):
    cdo = require_tool("cdo")
    files = [str(f) for f in month_files(all_variables_tree, *ALL_PERIOD)]
    out = tmp_path / "zm.nc"
    subprocess.run(
        [cdo, "-s", "-f", "nc4", "zonmean", "-monmean", "-mergetime", *files, str(out)],
        check=True,
    )
    want = xr.open_dataset(out).sea_surface_temperature.squeeze("lon", drop=True)
    got = result(runs, "era5-sst-hovmoeller").sea_surface_temperature
    assert got.dims == ("time0", "lat")
    np.testing.assert_allclose(got.values, want.values, rtol=1e-5)
    assert answer(runs, "era5-sst-hovmoeller")["sea_surface_temperature"]["kind"] == "hovmoeller"


@pytest.mark.slow
def test_wind_speed_is_the_known_speed(runs):
    got = result(runs, "era5-wind-speed")
    known = expected_mean_wind_speed(SPEC, *ALL_PERIOD)
    np.testing.assert_allclose(got.time_mean.values, known, rtol=1e-5)
    assert got.time_mean.attrs["units"] == "m s-1"
    assert got.time_mean.attrs["standard_name"] == "wind_speed"


@pytest.mark.slow
def test_t2m_warming_over_land_and_ocean(runs):
    known = expected_t2m_trends(SPEC)
    got = answer(runs, "era5-t2m-warming")
    # the area means over land and ocean are exact (the generator's noise has none), so the
    # annual means rise exactly; leap years move the fit by < 1e-3 K/decade
    assert got["land"]["trend_per_decade"] == pytest.approx(known["land"], abs=2e-3)
    assert got["ocean"]["trend_per_decade"] == pytest.approx(known["ocean"], abs=2e-3)
    assert got["land"]["trend_units"] == "K per decade"


@pytest.mark.slow
def test_t2m_normals_are_the_seasons_means(runs):
    res = result(runs, "era5-t2m-normals")
    days = pd.DatetimeIndex(_days())
    for season, months in (("DJF", (12, 1, 2)), ("JJA", (6, 7, 8))):
        times = days[days.month.isin(months)].values.astype("datetime64[h]")
        known = xr.DataArray(expected_t2m(SPEC, times).mean(axis=0), coords=res[season].coords)
        # the noise of each cell averages out over the area at every step (by construction)
        assert float(area_mean(res[season])) == pytest.approx(float(area_mean(known)), abs=1e-3)
        assert float(abs(res[season] - known).max()) < 1.0  # noise / sqrt(270 days)


@pytest.mark.slow
def test_precip_p95_is_the_known_percentile_in_mm_per_day(runs):
    res = result(runs, "era5-precip-p95").precipitation_amount_1hour_Accumulation
    # whole days only: the first file starts at 07:00 on 1 December
    start, end = "2000-12-02", "2001-02-28"
    known = 1000 * expected_precip_percentile(SPEC, start, end, q=95, method="linear")
    np.testing.assert_allclose(res.values, known, rtol=1e-5)
    assert res.attrs["units"] == "mm day-1"


@pytest.mark.slow
@pytest.mark.parametrize("recipe", SHIPPED)
def test_every_result_passes_cfchecks(runs, recipe, tmp_path):
    why = unavailable()
    if why is not None:
        missing("cfchecks", why)
    report = cfchecks(runs[recipe] / "result.nc", tmp_path / "tables")
    assert report.errors == [], "\n".join(report.errors)


@pytest.mark.slow
@pytest.mark.cdo
@pytest.mark.parametrize("recipe", SHIPPED)
def test_every_result_opens_in_cdo_and_xarray(runs, recipe):
    path = runs[recipe] / "result.nc"
    cdo = require_tool("cdo")
    r = subprocess.run([cdo, "-s", "sinfon", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    res = xr.open_dataset(path).load()
    results = [str(v) for v in res.data_vars if not str(v).endswith("_bnds")]
    assert set(results) == set(answer(runs, recipe))
    for name in results:  # CDO lists every result it read
        assert re.search(rf":\s+{re.escape(name)}\s*$", r.stdout, re.MULTILINE), (name, r.stdout)


def _results(res: xr.Dataset) -> xr.Dataset:
    return res[[v for v in res.data_vars if not str(v).endswith("_bnds")]]


def _panel_titles(res: xr.Dataset) -> list[str]:
    """The title of each result's panel in the run's figure (the small multiples'
    heading), as drawn from the file."""
    fig = draw_result(_results(res), "run")
    titles = []
    for sub in fig.subfigs[:-1]:  # the last holds the caption
        heading = sub._suptitle.get_text() if sub._suptitle is not None else ""
        titles.append(heading or sub.axes[0].get_title())
    return titles


@pytest.mark.slow
@pytest.mark.parametrize("recipe", SHIPPED)
def test_no_two_results_share_a_name_or_a_title(runs, recipe):
    """Each result says what it is: no two long names, no two panel titles alike."""
    res = result(runs, recipe)
    names = [res[v].attrs.get("long_name") for v in res.data_vars if not str(v).endswith("_bnds")]
    assert None not in names and len(set(names)) == len(names), names
    titles = _panel_titles(res)
    assert len(set(titles)) == len(titles) == len(names), titles


def _outside(fig: Figure) -> list[str]:
    """Each visible text of ``fig`` that does not lie wholly within the figure."""
    FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)  # places the texts as savefig does (constrained layout)
    box = fig.bbox
    # an axes turned off (a panel of text) draws none of its axes' texts, and an axis
    # draws no tick beyond its view (a date locator labels one there too)
    hidden = {id(t) for ax in fig.findobj(Axes) if not ax.axison
              for axis in (ax.xaxis, ax.yaxis) for t in axis.findobj(Text)}  # fmt: skip
    for ax in fig.findobj(Axes):
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            slack = 1e-10 * max(abs(lo), abs(hi), 1.0)
            for tick in axis.get_major_ticks():
                if not lo - slack <= tick.get_loc() <= hi + slack:
                    hidden |= {id(tick.label1), id(tick.label2)}
    out = []
    for text in fig.findobj(Text):
        if not text.get_visible() or not text.get_text().strip() or id(text) in hidden:
            continue
        b = text.get_window_extent(renderer)
        if not np.isfinite(b.bounds).all():  # not laid out: not drawn (an axes turned off)
            continue
        if b.x0 < box.x0 - 0.5 or b.y0 < box.y0 - 0.5 or b.x1 > box.x1 + 0.5 or b.y1 > box.y1 + 0.5:
            out.append(f"{text.get_text()!r} at {b.bounds} outside {box.bounds}")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("recipe", SHIPPED)
def test_every_figure_keeps_its_text_inside_and_says_each_thing_once(runs, recipe):
    """The figure each run draws (redrawn from its result.nc with the run's heading), by
    matplotlib's renderer: every text inside the figure, no two panels alike in title,
    units once on one line, no offset on an axis, time axes named time (or winter), and
    no legend over the points it explains."""
    res = result(runs, recipe)
    title = f"{res.attrs['title']}\n{recipe}: data {res.attrs['period']}"
    fig = draw_result(_results(res), title)
    assert _outside(fig) == []
    titles = _panel_titles(res)
    assert len(set(titles)) == len(titles), titles
    assert all(len(t) <= 80 for t in titles), titles
    for ax in fig.findobj(Axes):
        for axis in (ax.xaxis, ax.yaxis):
            assert "\n" not in axis.get_label_text(), axis.get_label_text()
            assert axis.get_offset_text().get_text() == "", (recipe, ax.get_title())
        assert not re.fullmatch(r"time\d+", ax.get_xlabel()), ax.get_xlabel()
        legend = ax.get_legend()
        if legend is None:
            continue
        where = legend.get_window_extent()
        for line in ax.get_lines():
            points = ax.transData.transform(line.get_xydata())
            assert not where.count_contains(points), (recipe, ax.get_title(), "legend on data")


#: the shipped recipes whose figures hold maps (the test checks that each does)
MAP_RECIPES = ("era5-precip-p95", "era5-sst-mean", "era5-sst-trend", "era5-t2m-normals",
               "era5-wind-speed")  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("recipe", MAP_RECIPES)
def test_every_map_figure_in_robinson_keeps_its_text_inside_and_its_titles(runs, recipe):
    """The same figure with ``plot: {projection: robinson}``: its maps on cartopy's axes,
    every text inside the figure, the panels titled as in the plain figure."""
    res = _results(result(runs, recipe))
    title = f"{res.attrs['title']}\n{recipe}: data {res.attrs['period']}"
    fig = draw_result(res, title, view=map_view({"projection": "robinson"}))
    projected = [
        ax
        for ax in fig.findobj(Axes)
        if type(getattr(ax, "projection", None)).__name__ == "Robinson"
    ]
    assert projected, f"{recipe}: no map in robinson"
    assert _outside(fig) == []
    titles = []
    for sub in fig.subfigs[:-1]:
        heading = sub._suptitle.get_text() if sub._suptitle is not None else ""
        titles.append(heading or sub.axes[0].get_title())
    assert titles == _panel_titles(res)


@pytest.mark.slow
def test_results_name_what_selected_them(runs):
    """The season, the land or ocean mask, the box and the period are in each result's
    name and title, from the steps that selected them (not the recipe's name)."""
    years = f"{ALL_PERIOD[0][:4]}-{ALL_PERIOD[1][:4]}"
    normals = result(runs, "era5-t2m-normals")
    for season, other in (("DJF", "JJA"), ("JJA", "DJF")):
        name = normals[season].attrs["long_name"]
        assert name == f"time-mean 2 metre temperature in {season}, {years}"
        assert other not in name
    warming = result(runs, "era5-t2m-warming")
    for mask, area_type in (("land", "land"), ("ocean", "sea")):
        name = warming[mask].attrs["long_name"]
        assert name.startswith(f"2 metre temperature over {mask}, area-weighted mean"), name
        assert warming[mask].attrs["cell_methods"] == f"area: mean where {area_type} time0: mean"
    djf = result(runs, "era5-nino34-djf").sea_surface_temperature.attrs["long_name"]
    assert "in 5S-5N 170W-120W in DJF" in djf
    # the panels' short titles say the season and the mask; the long names are the caption
    assert _panel_titles(normals) == [f"(a) DJF mean, {years}", f"(b) JJA mean, {years}"]
    assert _panel_titles(warming) == [
        f"(a) land, annual mean, {years}",
        f"(b) ocean, annual mean, {years}",
    ]


@pytest.mark.parametrize("recipe", SHIPPED)
def test_every_recipe_reads_its_data_once(all_variables_tree, recipe):
    """Each input variable's read tasks appear once in the graph: as many as its chunks
    (a recipe that opened a variable twice, or read it again after a rechunk, has more),
    or, where an area mean sums the data as it reads them, no read task and every time
    step in one fused task (era5-sst-mean's time mean beside its area mean: not fused)."""
    inputs = open_inputs(recipe, data=all_variables_tree, start=period(recipe)[0],
                         end=period(recipe)[1])  # fmt: skip
    graph = dict(inputs.lazy.__dask_graph__())
    fused = fused_spans(inputs.lazy.__dask_graph__())  # reads fused with an area mean
    for v in inputs.spec.variables:
        data = inputs.dataset[v].data
        reads = [k for k in graph if isinstance(k, tuple) and k[0] == data.name]
        spans = sorted(fused.get(data.name, []))
        if spans:  # read by the fused tasks only, each step once
            assert not reads, v
            assert [a for a, _ in spans] == [0] + [b for _, b in spans[:-1]], v
            assert spans[-1][1] == data.shape[0], v
            continue
        assert len(reads) == data.npartitions, v
        others = {k[0] for k in graph if isinstance(k, tuple) and str(k[0]).startswith("open_")}
        assert others <= {inputs.dataset[n].data.name for n in inputs.spec.variables}
