"""JupyterLab in a real browser: Debian's chromium (headless), driven by playwright.

The test starts JupyterLab as ``make lab`` does (``python -m pangeo_hpc.run lab --here``),
opens the ERA5 SST notebook, runs it, checks that the SST map appears, then opens the Dask
dashboard of the notebook's cluster through jupyter-server-proxy (``/proxy/PORT/status``)
and in dask-labextension's sidebar. Screenshots go to ``test-artifacts/screenshots/``
(``PANGEO_HPC_SCREENSHOTS`` overrides). No browser is downloaded: playwright launches
``/usr/bin/chromium``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import missing
from servers import free_port

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
SST_NOTEBOOK = "03-era5-sst-mean.ipynb"


def screenshots() -> Path:
    folder = Path(os.environ.get("PANGEO_HPC_SCREENSHOTS", ROOT / "test-artifacts" / "screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        missing("chromium", "apt-get install chromium (ci/install-system.sh does it as root)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        missing("playwright", "pip install playwright (the test extras)")
    return path


@pytest.fixture
def lab(demo_tree: Path, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """JupyterLab from the CLI, on a copy of the notebooks; yields (base URL, token)."""
    notebooks = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", notebooks)
    token = secrets.token_urlsafe(16)
    port = free_port()
    # a workspace of its own: Lab restores the last layout (e.g. an open sidebar) otherwise
    env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "ws")}
    env.pop("DASK_PANGEO_HPC__DATA__ROOT", None)  # the CLI's --data must reach the kernels
    proc = subprocess.Popen(
        [sys.executable, "-m", "pangeo_hpc.run", "lab", "--here", "--port", str(port),
         "--data", str(demo_tree), "--notebook-dir", str(notebooks)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("JupyterLab: "), first + proc.stdout.read()
        assert f"http://127.0.0.1:{port}/lab?token={token}" in first
        yield f"http://127.0.0.1:{port}", token
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C: the CLI stops JupyterLab and its kernels
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    with pytest.raises(OSError):  # nothing listens any more
        import urllib.request

        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)


def _code_cells(path: Path) -> int:
    return sum(c["cell_type"] == "code" for c in json.loads(path.read_text())["cells"])


def _run_menu(page, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()


def test_lab_runs_the_sst_notebook_and_shows_the_dashboard(chromium, lab):
    from playwright.sync_api import sync_playwright

    base, token = lab
    shots = screenshots()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            try:
                _notebook_and_dashboard(page, browser, base, token, shots)
            except BaseException:
                page.screenshot(path=str(shots / "failed.png"), full_page=True)
                raise
        finally:
            browser.close()
    for name in ("sst-map.png", "lab-sst-notebook.png", "dask-status-via-proxy.png"):
        assert (shots / name).stat().st_size > 10_000, name


def _notebook_and_dashboard(page, browser, base: str, token: str, shots: Path) -> None:
    from playwright.sync_api import expect

    if True:
        if True:
            page.goto(f"{base}/lab/tree/{SST_NOTEBOOK}?token={token}")
            indicator = page.locator(".jp-Notebook-ExecutionIndicator")
            expect(indicator).to_have_attribute("data-status", "idle", timeout=60_000)

            # run everything but the last cell (which closes the cluster), as a user
            # who wants to look at the dashboard afterwards
            news = page.get_by_role("button", name="No", exact=True)  # "official Jupyter news?"
            if news.is_visible():
                news.click()
            cells = page.locator(".jp-Notebook .jp-CodeCell")
            # all cells rendered (Lab renders a notebook lazily), then select the last
            expect(cells).to_have_count(_code_cells(ROOT / "notebooks" / SST_NOTEBOOK))
            cells.last.locator(".jp-InputPrompt").click()
            expect(page.locator(".jp-Notebook .jp-Cell.jp-mod-selected")).to_have_count(1)
            assert "cluster.close()" in page.locator(".jp-Cell.jp-mod-selected").inner_text()
            _run_menu(page, "Run All Above Selected Cell")
            images = page.locator(".jp-OutputArea-output img")
            expect(images).to_have_count(2, timeout=150_000)
            expect(indicator).to_have_attribute("data-status", "idle", timeout=120_000)
            sst_map = images.first
            sst_map.scroll_into_view_if_needed()
            box = sst_map.bounding_box()
            assert box and box["width"] > 400 and box["height"] > 150
            sst_map.screenshot(path=str(shots / "sst-map.png"))
            page.screenshot(path=str(shots / "lab-sst-notebook.png"))

            text = page.locator(".jp-Notebook").inner_text()
            assert re.search(r"global-mean SST: 2\d\d\.\d+ K", text), text[-2000:]
            link = re.search(r"dashboard: (/proxy/(\d+)/status)", text)
            assert link, f"no proxied dashboard link in the notebook's output:\n{text[:2000]}"

            # the dashboard through jupyter-server-proxy, in the same browser session
            status = page.context.new_page()  # same session: the login cookie
            status.goto(f"{base}{link.group(1)}")
            expect(status).to_have_title(re.compile("Dask.*Status"), timeout=30_000)
            expect(status.locator("canvas").first).to_be_visible(timeout=30_000)

            # dask-labextension: the sidebar takes the same link, lists the dashboard's plots,
            # and docks one beside the notebook
            page.bring_to_front()
            url_input = page.locator(".dask-URLInput input")
            if not url_input.is_visible():
                page.locator("li.lm-TabBar-tab[data-id='dask-dashboard-launcher']").click()
            url_input.fill(link.group(1))
            url_input.press("Enter")
            task_stream = page.locator(".dask-DashboardListing-item button", has_text="Task Stream")
            expect(task_stream).to_be_enabled(timeout=30_000)
            task_stream.click()
            docked = page.locator(".lm-TabBar-tab", has_text="Task Stream")
            expect(docked).to_be_visible()

            # compute again while both watch: the global mean and map cell
            page.locator(".lm-TabBar-tab", has_text=SST_NOTEBOOK).click()
            compute = cells.filter(has_text="dask.compute(")
            compute.locator(".jp-InputPrompt").click()
            _run_menu(page, "Run Selected Cell and Do not Advance")
            expect(indicator).to_have_attribute("data-status", "busy", timeout=10_000)
            expect(indicator).to_have_attribute("data-status", "idle", timeout=180_000)
            docked.click()
            time.sleep(2)  # let Bokeh draw
            status.bring_to_front()
            time.sleep(1)
            status.screenshot(path=str(shots / "dask-status-via-proxy.png"))
            page.bring_to_front()
            page.screenshot(path=str(shots / "lab-dask-sidebar.png"))
