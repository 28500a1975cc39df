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
from urllib.parse import urlsplit

import pytest

from tests.support.needs import missing
from tests.support.paths import ROOT
from tests.support.servers import free_port

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
SST_NOTEBOOK = "03-era5-sst-mean.ipynb"
#: where a page may send requests: the JupyterLab of the fixture, nothing else (compute
#: nodes have no internet: a CDN's script never comes, and an output stays empty)
LOCAL = ("127.0.0.1", "localhost")


def off_the_machine(url: str) -> bool:
    """A request over the network to another host (``data:`` and ``blob:`` stay inside)."""
    parts = urlsplit(url)
    return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname not in LOCAL


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


#: ceilings, not expected durations (the notebook's cells take 10-30 s on an idle machine):
#: a wait ends at its event, and only a hang reaches these, then fails saying what it
#: waited for. The test's own pytest timeout is 900 s.
RUN_CEILING = 600_000  # ms: code cells to finish (and the kernel to start)
PAGE_CEILING = 120_000  # ms: a page, a rendered cell or a widget to appear

#: JavaScript, polled: once the kernel is idle, no cell is queued or running ("[*]:") and
#: one of the code cells ``indices`` shows an execution count it did not show before
#: (``before``: the run has started), their prompts and error texts; else null. A cell
#: that raises aborts the ones queued after it (their prompts go back to "[ ]:"), so the
#: wait ends at once. textContent, not innerText: Lab skips the layout of cells out of
#: view (content-visibility), and innerText is empty there.
_RUN_OVER = r"""([indices, before]) => {
  const status = document.querySelector(".jp-Notebook-ExecutionIndicator")?.dataset.status;
  const code = [...document.querySelectorAll(".jp-Notebook .jp-CodeCell")];
  const cells = indices.map((i) => code[i]);
  if (cells.some((c) => !c)) return null;  // not rendered yet
  const prompts = cells.map((c) => c.querySelector(".jp-InputPrompt").textContent.trim());
  if (status !== "idle" || prompts.includes("[*]:")) return null;
  const counted = (p, k) => /^\[\d+\]:$/.test(p) && p !== before[k];
  if (!prompts.some(counted)) return null;
  const stderr = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]';
  return cells.map((c, k) => ({
    prompt: prompts[k],
    ran: counted(prompts[k], k),
    stderr: [...c.querySelectorAll(stderr)].map((o) => o.textContent),
  }));
}"""


def _prompts(page, indices: list[int]) -> list[str]:
    code = page.locator(".jp-Notebook .jp-CodeCell")
    return [(code.nth(i).locator(".jp-InputPrompt").text_content() or "").strip() for i in indices]


def _error(texts: list[str]) -> str | None:
    """The traceback among a cell's stderr outputs (warnings go there too), if any."""
    for text in texts:
        last = text.strip().splitlines()[-1:] or [""]
        if "Traceback (most recent call last)" in text or re.match(
            r"\w*(Error|Exception)\b", last[0]
        ):
            return text
    return None


def _wait_for_cells(page, indices: list[int], before: list[str], what: str) -> None:
    """Wait until the code cells ``indices`` (0-based), whose prompts were ``before``, have
    run and the kernel is idle, for at most :data:`RUN_CEILING`; fail at once, with its
    traceback, when one of them raised, and say where it stood when the ceiling is hit."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        handle = page.wait_for_function(
            _RUN_OVER, arg=[indices, before], timeout=RUN_CEILING, polling=500
        )
    except PlaywrightTimeout:
        status = page.locator(".jp-Notebook-ExecutionIndicator").get_attribute("data-status")
        pytest.fail(
            f"{what}: not done in {RUN_CEILING / 1000:.0f} s: kernel {status}, prompts "
            f"{_prompts(page, indices)} (before: {before})"
        )
    cells = handle.json_value()
    for i, cell in zip(indices, cells, strict=True):
        error = _error(cell["stderr"])
        if error is not None:
            pytest.fail(f"{what}: code cell {i + 1} {cell['prompt']} raised:\n{error[-3000:]}")
    not_run = [
        f"{i + 1} {c['prompt']}" for i, c in zip(indices, cells, strict=True) if not c["ran"]
    ]
    assert not not_run, f"{what}: code cells {not_run} did not run"


def test_lab_runs_the_sst_notebook_and_shows_the_dashboard(chromium, lab):
    from playwright.sync_api import sync_playwright

    base, token = lab
    shots = screenshots()
    requested: list[str] = []  # every request of the page: the explore cell's Bokeh too
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.on("request", lambda request: requested.append(request.url))
            page = context.new_page()
            try:
                _notebook_and_dashboard(page, base, token, shots)
            except BaseException:
                page.screenshot(path=str(shots / "failed.png"), full_page=True)
                raise
        finally:
            browser.close()
    for name in ("sst-map.png", "lab-sst-notebook.png", "dask-status-via-proxy.png", "explore.png"):
        assert (shots / name).stat().st_size > 10_000, name
    assert requested, "no request recorded: the recorder is not listening"
    outside = [u for u in requested if off_the_machine(u)]
    assert outside == [], "\n".join(outside)


def _notebook_and_dashboard(page, base: str, token: str, shots: Path) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/lab/tree/{SST_NOTEBOOK}?token={token}")
    # the kernel started and connected: the status bar names it and says Idle. The execution
    # indicator says "idle" before there is a kernel at all (then initializing, connecting,
    # unknown, idle): cells run then are lost while the kernel connects, and nothing comes.
    kernel = re.compile(r"^(?!No Kernel).+ \| Idle$")
    expect(page.locator(".jp-StatusBar-TextItem", has_text=kernel)).to_be_visible(
        timeout=RUN_CEILING
    )

    # run everything but the last cell (which closes the cluster), as a user who wants to
    # look at the dashboard afterwards
    news = page.get_by_role("button", name="No", exact=True)  # "official Jupyter news?"
    if news.is_visible():
        news.click()
    cells = page.locator(".jp-Notebook .jp-CodeCell")
    # all cells rendered (Lab renders a notebook lazily), then select the last
    n = _code_cells(ROOT / "notebooks" / SST_NOTEBOOK)
    expect(cells).to_have_count(n, timeout=PAGE_CEILING)
    cells.last.locator(".jp-InputPrompt").click()
    expect(page.locator(".jp-Notebook .jp-Cell.jp-mod-selected")).to_have_count(1)
    assert "cluster.close()" in page.locator(".jp-Cell.jp-mod-selected").inner_text()
    above = list(range(n - 1))
    before = _prompts(page, above)
    _run_menu(page, "Run All Above Selected Cell")
    _wait_for_cells(page, above, before, "Run All Above Selected Cell")
    # every cell has run: its outputs are in, two of them the map and the series
    images = page.locator(".jp-OutputArea-output img")
    expect(images).to_have_count(2, timeout=PAGE_CEILING)  # rendering what has arrived
    sst_map = images.first
    sst_map.scroll_into_view_if_needed()
    box = sst_map.bounding_box()
    assert box and box["width"] > 400 and box["height"] > 150
    sst_map.screenshot(path=str(shots / "sst-map.png"))
    page.screenshot(path=str(shots / "lab-sst-notebook.png"))

    _explore_output(page, cells, shots)

    text = page.locator(".jp-Notebook").text_content() or ""  # innerText: only cells in view
    assert re.search(r"global-mean SST: 2\d\d\.\d+ K", text), text[-2000:]
    link = re.search(r"dashboard: (/proxy/(\d+)/status)", text)
    assert link, f"no proxied dashboard link in the notebook's output:\n{text[:2000]}"

    # the dashboard through jupyter-server-proxy, in the same browser session
    status = page.context.new_page()  # same session: the login cookie
    status.goto(f"{base}{link.group(1)}", timeout=PAGE_CEILING)
    expect(status).to_have_title(re.compile("Dask.*Status"), timeout=PAGE_CEILING)
    expect(status.locator("canvas").first).to_be_visible(timeout=PAGE_CEILING)

    # dask-labextension: the sidebar takes the same link, lists the dashboard's plots, and
    # docks one beside the notebook
    page.bring_to_front()
    url_input = page.locator(".dask-URLInput input")
    if not url_input.is_visible():
        page.locator("li.lm-TabBar-tab[data-id='dask-dashboard-launcher']").click()
    url_input.fill(link.group(1))
    url_input.press("Enter")
    task_stream = page.locator(".dask-DashboardListing-item button", has_text="Task Stream")
    expect(task_stream).to_be_enabled(timeout=PAGE_CEILING)
    task_stream.click()
    docked = page.locator(".lm-TabBar-tab", has_text="Task Stream")
    expect(docked).to_be_visible(timeout=PAGE_CEILING)

    # compute again while both watch: the global mean and map cell, until it shows a new
    # execution count (a short run can go busy and idle between two looks at the kernel)
    page.locator(".lm-TabBar-tab", has_text=SST_NOTEBOOK).click()
    again = [i for i in above if "dask.compute(" in (cells.nth(i).text_content() or "")]
    assert len(again) == 1, again
    cells.nth(again[0]).locator(".jp-InputPrompt").click()
    before = _prompts(page, again)
    _run_menu(page, "Run Selected Cell and Do not Advance")
    _wait_for_cells(page, again, before, "the compute cell run again")
    docked.click()
    time.sleep(2)  # let Bokeh draw (screenshots only: nothing is asserted on them)
    status.bring_to_front()
    time.sleep(1)
    status.screenshot(path=str(shots / "dask-status-via-proxy.png"))
    page.bring_to_front()
    page.screenshot(path=str(shots / "lab-dask-sidebar.png"))


def _explore_output(page, cells, shots: Path) -> None:
    """The notebook's ``pangeo_hpc.explore(sst)`` cell: its output holds Bokeh's canvas
    (the rasterised map) and Panel's time slider, and hovering over the map shows the
    SST there with its units. Bokeh draws inside shadow roots, which playwright's CSS
    locators pierce; every wait ends at its event."""
    from playwright.sync_api import expect

    cell = cells.filter(has_text="pangeo_hpc.explore(sst)")
    expect(cell).to_have_count(1)
    cell.scroll_into_view_if_needed()  # Lab renders the outputs of cells in view
    output = cell.locator(".jp-OutputArea-output")
    canvas = output.locator("canvas").first
    expect(canvas).to_be_visible(timeout=PAGE_CEILING)
    expect(output.locator(".noUi-handle").first).to_be_visible(timeout=PAGE_CEILING)
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 100, box
    # the middle of the map: the Pacific at the equator, where the SST is ~300 K
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    # Bokeh puts its tooltip into the page's shadow roots, not necessarily under the output
    value = page.locator(".bk-tooltip-row-value", has_text=re.compile(r"\d\s+K\s*$"))
    expect(value.first).to_be_visible(timeout=PAGE_CEILING)
    kelvin = float((value.first.text_content() or "").split()[0])  # "302.339 K"
    assert 260 < kelvin < 310, kelvin
    cell.screenshot(path=str(shots / "explore.png"))
