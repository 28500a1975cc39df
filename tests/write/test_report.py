"""report.html: written by every run beside result.nc, recorded in summary.json, a page that
asks the network for nothing; in Debian's chromium (headless, driven by playwright as in
tests/test_browser.py) its map is drawn, pans and zooms, and the hover shows the value of
the cell under the pointer, with units, as result.nc holds it."""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.write.report import REPORT, map_layers, report_html
from tests.test_browser import CHROMIUM_FLAGS, chromium  # noqa: F401  (the fixture)


def _field(lat: np.ndarray, lon: np.ndarray, name: str = "trend") -> xr.DataArray:
    """Values that tell every cell apart: 1000 * latitude + longitude."""
    values = 1000.0 * lat[:, None] + lon[None, :]
    return xr.DataArray(
        values,
        coords={"lat": ("lat", lat, {"units": "degrees_north"}),
                "lon": ("lon", lon, {"units": "degrees_east"})},
        dims=("lat", "lon"),
        name=name,
        attrs={"units": "K/(10 year)", "long_name": "linear trend of SST"},
    )  # fmt: skip


def _decoded(page: str) -> list[dict]:
    docs = re.findall(r"<script type='application/json' class='map-data'>(.*?)</script>", page)
    return [json.loads(d) for d in docs]


def test_maps_go_north_up_east_increasing_with_units_and_the_figures_scale():
    """A field stored south to north and in -180..180 order with the date line first is
    sent north first, longitudes increasing; a series and a scalar beside it are not maps."""
    lat = np.arange(-88.0, 90.0, 4.0)
    lon = np.concatenate([np.arange(0.0, 180.0, 5.0), np.arange(-180.0, 0.0, 5.0)])
    ds = xr.Dataset({"trend": _field(lat, lon)})
    ds["series"] = xr.DataArray(np.arange(3.0), dims="time0",
                                coords={"time0": np.array(["2000-01", "2000-02", "2000-03"],
                                                          dtype="datetime64[ns]")})  # fmt: skip
    ds["mean"] = 1.5
    (layer,) = map_layers(ds, max_values=10**6)
    assert layer.name == "trend" and layer.units == "K per decade" and layer.step == 1
    assert list(layer.lat) == sorted(lat, reverse=True)
    assert list(layer.lon) == sorted(lon)
    ((label, values),) = layer.panels
    assert label == ""
    want = 1000.0 * np.sort(lat)[::-1, None] + np.sort(lon)[None, :]
    np.testing.assert_array_equal(values, want.astype("f4"))
    assert layer.cmap == "RdBu_r" and layer.vmin == -layer.vmax  # a trend: diverging

    page = report_html(title="t", lines=["a"], figure=None, provenance={}, layers=[layer])
    (doc,) = _decoded(page)
    sent = np.frombuffer(base64.b64decode(doc["panels"][0]["values"]), "<f4")
    np.testing.assert_array_equal(sent.reshape(values.shape), want.astype("f4"))
    assert doc["east"] is False


def test_a_large_field_is_sent_as_block_means():
    lat = np.arange(89.5, -90.0, -1.0)
    lon = np.arange(0.5, 360.0, 1.0)
    ds = xr.Dataset({"field": _field(lat, lon, "field")})
    (layer,) = map_layers(ds, max_values=180 * 360 // 9)
    assert layer.step == 3
    ((_, values),) = layer.panels
    blocks = (1000.0 * lat[:, None] + lon[None, :]).reshape(60, 3, 120, 3).mean(axis=(1, 3))
    np.testing.assert_allclose(values, blocks, rtol=1e-6)
    page = report_html(title="t", lines=[], figure=None, provenance={}, layers=[layer])
    assert "blocks of 3 x 3 cells" in page


def test_the_page_refers_to_nothing_outside_it(tmp_path):
    lat, lon = np.arange(-80.0, 81.0, 20.0), np.arange(0.0, 360.0, 30.0)
    ds = xr.Dataset({"trend": _field(lat, lon)})
    sneaky = {"command": "run x --name '</script><script src=http://x.org/a.js>'"}
    page = report_html(title="a </pre> title", lines=["x < y"], figure=None,
                       provenance=sneaky, layers=map_layers(ds))  # fmt: skip
    assert "default-src 'none'" in page
    tags = re.findall(r"<[a-zA-Z][^>]*>", page)  # text and JSON hold no literal "<"
    assert len(tags) > 10
    assert not [t for t in tags if re.search(r"(src|href|action)\s*=\s*['\"]?(?!data:)\w", t)]
    assert "<script src" not in page and "&lt;/script&gt;&lt;script src=http://x.org" in page
    assert page.count("<script") == page.count("</script>") == 3  # data, coastlines, viewer


@pytest.fixture(scope="module")
def trend_run(demo_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """era5-sst-trend on two years of the demo tree: a map and series."""
    from pangeo_hpc.batch.chains.recipe_yaml import load
    from pangeo_hpc.batch.pipeline.execute import run_recipe

    out = tmp_path_factory.mktemp("report") / "trend"
    run_recipe(load("era5-sst-trend"), data=demo_tree, start="2000-01", end="2001-12",
               workers=1, out=out, progress=None, cache=False)  # fmt: skip
    return out


def test_a_run_writes_its_report_and_records_it(trend_run: Path):
    from pangeo_hpc.batch.pipeline.results import summary_text
    from pangeo_hpc.write.marks import file_is_ours
    from pangeo_hpc.write.records import file_record

    summary = json.loads((trend_run / "summary.json").read_text())
    assert summary["outputs"]["report"] == REPORT
    assert summary["files"][REPORT] == file_record(trend_run / REPORT)
    assert file_is_ours(trend_run / REPORT)
    page = (trend_run / REPORT).read_text()
    # the answer's table as the command line prints it (but the total, timed after)
    for line in summary_text(summary)[:-1]:
        assert html.escape(line) in page
    assert "data:image/png;base64," in page
    prov = re.search(r"<pre class='provenance'>(.*?)</pre>", page, re.DOTALL)
    assert prov and json.loads(html.unescape(prov.group(1))) == summary["provenance"]
    (doc,) = _decoded(page)
    assert doc["name"] == "trend" and doc["units"] == "K per decade"


def _pixel_of(box: dict, doc: dict, lat: float, lon: float) -> tuple[float, float]:
    """Where the centre of the cell at ``lat``, ``lon`` lies on the page, at the canvas's
    first view (the field fitted and centred between its cell edges)."""
    lons, lats = np.asarray(doc["lon"]), np.asarray(doc["lat"])
    left, right = lons[0] - (lons[1] - lons[0]) / 2, lons[-1] + (lons[-1] - lons[-2]) / 2
    top, bottom = lats[0] - (lats[1] - lats[0]) / 2, lats[-1] + (lats[-1] - lats[-2]) / 2
    w, h = box["width"] - 2, box["height"] - 2  # inside the 1 px border
    s = min(w / (right - left), h / (top - bottom))
    x = (lon - (left + right) / 2) * s + w / 2
    y = ((top + bottom) / 2 - lat) * s + h / 2
    return box["x"] + 1 + x, box["y"] + 1 + y


@pytest.mark.browser
@pytest.mark.slow
def test_the_report_in_chromium(chromium, trend_run: Path):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    page_file = trend_run / REPORT
    url = page_file.as_uri()
    doc = _decoded(page_file.read_text())[0]
    trend = xr.open_dataset(trend_run / "result.nc").trend.load()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url, wait_until="load")
            canvas = page.locator("canvas.field")
            expect(canvas).to_have_count(1)
            canvas.scroll_into_view_if_needed()
            # drawn: the colours of many cells (a blank canvas has one)
            colours = page.evaluate("""() => {
                const c = document.querySelector('canvas.field');
                const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                const seen = new Set();
                for (let k = 0; k < d.length; k += 4 * 7) seen.add(d[k] << 16 | d[k+1] << 8 | d[k+2]);
                return [...seen];
            }""")  # fmt: skip
            assert len(colours) > 50, len(colours)
            box = canvas.bounding_box()
            assert box is not None
            tip = page.locator(".viewer .tip")
            # cells with values and without (land), spread over the map
            rng = np.random.default_rng(7)
            wet = np.argwhere(np.isfinite(trend.values))
            dry = np.argwhere(~np.isfinite(trend.values))
            cells = [*wet[rng.choice(len(wet), 6, replace=False)], dry[len(dry) // 2]]
            for i, j in cells:
                cell = trend.isel(lat=i, lon=j)
                page.mouse.move(*_pixel_of(box, doc, float(cell.lat), float(cell.lon)))
                expect(tip).to_be_visible()
                text = tip.text_content() or ""
                m = re.fullmatch(r"trend: (\S+)( K per decade)? at (\S+)°N, (\S+)°E", text)
                assert m, text
                assert float(m.group(3)) == pytest.approx(float(cell.lat), abs=0.006), text
                assert float(m.group(4)) == pytest.approx(float(cell.lon), abs=0.006), text
                if np.isnan(cell):
                    assert m.group(1) == "missing" and not m.group(2), text
                    continue
                assert m.group(2), f"no units: {text}"
                assert float(m.group(1)) == pytest.approx(float(cell), rel=6e-6), text
            # zoom in about a point and pan: the hover still names the cell under it
            i, j = wet[len(wet) // 2]  # a cell's centre: clear of its neighbours
            x, y = _pixel_of(box, doc, float(trend.lat[i]), float(trend.lon[j]))
            page.mouse.move(x, y)
            before = tip.text_content()
            for _ in range(6):
                page.mouse.wheel(0, -100)
            page.mouse.move(x + 1, y)
            page.mouse.move(x, y)
            expect(tip).to_have_text(before or "")  # the point under the pointer stays
            page.mouse.down()
            page.mouse.move(x + 200, y, steps=5)
            page.mouse.up()
            page.mouse.move(x + 201, y)
            page.mouse.move(x + 200, y)
            expect(tip).to_have_text(before or "")  # dragged along with the pointer
            assert not problems, problems
            assert set(requests) == {url}, requests
        finally:
            browser.close()
