"""Notebook 07 in JupyterLab in Chromium, every request of the page recorded: its hvplot
figure draws with Bokeh's JavaScript from the installed packages, and no request leaves the
machine (compute nodes have no internet: a CDN's script never comes, and the output stays
empty). JupyterLab and the browser as in test_browser.py (its fixtures and helpers).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.test_browser import (  # noqa: F401  (chromium, lab: fixtures)
    CHROMIUM_FLAGS,
    PAGE_CEILING,
    RUN_CEILING,
    _code_cells,
    _prompts,
    _run_menu,
    _wait_for_cells,
    chromium,
    lab,
    off_the_machine,
    screenshots,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = "07-your-own-recipe.ipynb"


def test_notebook_07_draws_its_hvplot_figure_with_no_request_off_the_machine(chromium, lab):  # noqa: F811
    """A wrong notebook seen to fail here: ``import hvplot.xarray`` without
    ``inline_javascript()`` first (Bokeh's and Panel's scripts from their CDNs)."""
    from playwright.sync_api import expect, sync_playwright

    base, token = lab
    shots = screenshots()
    requested: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.on("request", lambda request: requested.append(request.url))
            page = context.new_page()
            try:
                _run_notebook_07(page, base, token, shots, expect)
            except BaseException:
                page.screenshot(path=str(shots / "failed-07.png"), full_page=True)
                raise
        finally:
            browser.close()
    assert requested, "no request recorded: the recorder is not listening"
    outside = [u for u in requested if off_the_machine(u)]
    assert outside == [], "\n".join(outside)


def _run_notebook_07(page, base: str, token: str, shots: Path, expect) -> None:
    page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}")
    kernel = re.compile(r"^(?!No Kernel).+ \| Idle$")  # as in test_browser: connected, idle
    expect(page.locator(".jp-StatusBar-TextItem", has_text=kernel)).to_be_visible(
        timeout=RUN_CEILING
    )
    news = page.get_by_role("button", name="No", exact=True)  # "official Jupyter news?"
    if news.is_visible():
        news.click()
    cells = page.locator(".jp-Notebook .jp-CodeCell")
    n = _code_cells(ROOT / "notebooks" / NOTEBOOK)
    expect(cells).to_have_count(n, timeout=PAGE_CEILING)
    every = list(range(n))
    before = _prompts(page, every)
    _run_menu(page, "Run All Cells")
    _wait_for_cells(page, every, before, "Run All Cells of notebook 07")
    # the cell of the hvplot figure: Bokeh's canvas drawn in its output
    cell = cells.filter(has_text=".hvplot.line(")
    expect(cell).to_have_count(1)
    cell.scroll_into_view_if_needed()  # Lab renders the outputs of cells in view
    canvas = cell.locator(".jp-OutputArea-output canvas").first
    expect(canvas).to_be_visible(timeout=PAGE_CEILING)
    box = canvas.bounding_box()
    assert box and box["width"] > 200 and box["height"] > 100, box
    cell.screenshot(path=str(shots / "notebook-07-hvplot.png"))
