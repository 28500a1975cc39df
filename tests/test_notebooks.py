"""Every notebook runs top to bottom (outputs are stripped in git).

Each runs as a user would run it, with only its ``parameters`` cell changed (as papermill
does: a cell with the test's values is inserted after it): 1, 3 and 4 on the demo data
with a local cluster; 2 on an rclone FUSE mount of the demo data in a real S3 server
(SeaweedFS), so that the warm-up really hydrates lazily loaded files; 5 on the local tree
and on that S3 bucket; 6 calibrates on the demo data and plans the study's run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pandas as pd
import pytest
from nbclient import NotebookClient

from pangeo_hpc.demo import expected
from tests.support.known import NINO34_BOX, daily_global_means, known_index, month_files
from tests.support.paths import ROOT
from tests.support.s3env import aws_environment
from tests.support.trees import TEST_SPEC

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
BUCKET = "era5-notebooks"
#: seconds, a ceiling for the kernel to start and for each cell, not an expected duration
#: (a notebook takes 10-30 s on the 2-degree demo tree): nbclient waits for each cell to
#: finish and fails at once with the traceback of a cell that raises; only a hang reaches
#: this, and nbclient then names the cell. A whole notebook has pytest's 900 s.
CELL_CEILING = 600


def test_there_are_the_eight_notebooks():
    assert [p.stem[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06", "07", "08"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_outputs_are_stripped(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert not cell["outputs"] and cell["execution_count"] is None, (
                f"{path.name}: strip outputs (make strip-notebooks)"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_one_parameters_cell_comes_first(path):
    """The cell a user changes for a real cluster is the first code cell, tagged."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert tagged == code[:1], f"{path.name}: tag the first code cell 'parameters'"


def execute(path: Path, workdir: Path, **parameters: Any) -> nbformat.NotebookNode:
    """Run a notebook with ``parameters`` set after its parameters cell; returns it run."""
    nb = nbformat.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    lines = [f"{name} = {value!r}" for name, value in parameters.items()]
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell("\n".join(lines)))
    NotebookClient(
        nb,
        timeout=CELL_CEILING,
        startup_timeout=CELL_CEILING,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
    ).execute()
    return nb


def text_of(nb: nbformat.NotebookNode) -> str:
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            out.append(o.get("text", ""))
            out.append(o.get("data", {}).get("text/plain", ""))
    return "\n".join(out)


def images_of(nb: nbformat.NotebookNode) -> int:
    return sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))


def number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in the notebook's output:\n{text[-3000:]}"
    return float(found.group(1))


@pytest.fixture
def on_demo_data(demo_tree: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The notebooks' default data folder is the demo tree (as `make lab` sets it)."""
    monkeypatch.setenv("DASK_PANGEO_HPC__DATA__ROOT", str(demo_tree))
    return demo_tree


@pytest.fixture
def demo_bucket(seaweedfs, demo_tree: Path) -> str:
    """The demo tree in s3://era5-notebooks of the session's SeaweedFS."""
    from tests.support.servers import publish_tree

    fs = seaweedfs.filesystem()
    if not fs.exists(BUCKET):
        publish_tree(fs, demo_tree, BUCKET)
    return BUCKET


@pytest.fixture
def demo_mount(seaweedfs, demo_bucket: str, fuse: None, tmp_path: Path) -> Iterator[Path]:
    """s3://era5-notebooks mounted with rclone and an empty cache: files are listed with
    their sizes, and their bytes come from S3 on first read, as on FSx for Lustre."""
    from tests.support.servers import RcloneMount

    with RcloneMount.of(seaweedfs, demo_bucket, tmp_path / "mnt", tmp_path / "cache") as mount:
        yield Path(mount.mountpoint)


@pytest.mark.slow
def test_01_getting_started(on_demo_data, tmp_path):
    nb = execute(NOTEBOOKS[0], tmp_path, LOGIN="hpc.example.org")
    text = text_of(nb)
    assert "aws-c5n.18xlarge" in text  # the profiles
    assert number(r"(\d+) workers", text) >= 1
    assert re.search(r"dashboard: \S+/status", text)
    assert re.search(r"ssh -N -J hpc\.example\.org -L (\d+):127\.0\.0\.1:\1 \S+", text)
    assert 0.49 < number(r"mean of [\d,]+ random numbers: ([\d.]+)", text) < 0.51


@pytest.mark.slow
@pytest.mark.s3
def test_02_warmup_hydrates_a_lazy_mount(demo_mount: Path, tmp_path):
    nb = execute(NOTEBOOKS[1], tmp_path, DATA=str(demo_mount), SAMPLE_BYTES=20e6)
    text = text_of(nb)
    files = sum(p.is_file() for p in demo_mount.rglob("*"))
    # before: nothing of the mount is here; after: everything
    assert re.search(rf"{files} files \({files} released\); 0 B of \S+ \S+ loaded \(0\.0 %\)", text)
    assert re.search(rf"{files} files \({files} loaded\); .* loaded \(100\.0 %\)", text)
    read_before = number(r"before: \d+ MB/s over (\d+) files", text)  # hydrated those
    assert number(r"warmed (\d+) files", text) == files - read_before
    # the speed-up is the two printed rates' ratio (to its one decimal), and above 1: after
    # the warm-up every byte comes from the local cache, before it came over HTTP from S3
    before = number(r"before: (\d+) MB/s", text)
    after = number(r"after: +(\d+) MB/s", text)
    speedup = number(r"speed-up: ([\d.]+)x", text)
    rounding = 0.05 + 0.5 / before + 0.5 * after / before**2  # printed to 0.1 and to 1 MB/s
    assert speedup == pytest.approx(after / before, abs=rounding)
    assert speedup > 1, text
    assert images_of(nb) == 1


@pytest.mark.slow
def test_03_era5_sst_mean(on_demo_data, tmp_path):
    nb = execute(NOTEBOOKS[2], tmp_path)
    text = text_of(nb)
    assert number(r"(\d+) files", text) == 120
    # the mean of the monthly area-weighted means, read with h5py and weighted with numpy
    # (tests/support/known.py); printed to 4 decimals: 1e-4 K holds the rounding and float sums
    months = daily_global_means(month_files(on_demo_data, TEST_SPEC.start, TEST_SPEC.end))
    known = np.mean([days.mean() for days in months])
    assert number(r"global-mean SST: ([\d.]+) K", text) == pytest.approx(known, abs=1e-4)
    assert images_of(nb) == 2  # the time-mean map and the series


@pytest.mark.slow
def test_04_climate_signal(on_demo_data, tmp_path):
    nb = execute(NOTEBOOKS[3], tmp_path)
    text = text_of(nb)
    trend = number(r"global-mean trend: ([-+.\d]+) K/decade", text)
    assert trend == pytest.approx(0.2, rel=0.05)  # the demo data's known warming
    low = number(r"Nino3\.4 \(3-month mean\): ([-+.\d]+) to", text)
    high = number(r"Nino3\.4 \(3-month mean\): [-+.\d]+ to ([-+.\d]+) K", text)
    # the known index of the standard box (tests/support/known.py); printed to 2 decimals (0.005)
    # and noisy by 0.003 K (0.0047 K a month, over 3 months): 0.01 K holds both
    days = pd.date_range(f"{TEST_SPEC.start}-01", f"{TEST_SPEC.end}-31", freq="D").values
    known = known_index(TEST_SPEC, days, smooth=3)
    assert low == pytest.approx(np.nanmin(known), abs=0.01)
    assert high == pytest.approx(np.nanmax(known), abs=0.01)
    assert images_of(nb) == 4  # the trend map also in robinson (the package's figure)


@pytest.mark.slow
@pytest.mark.s3
def test_05_storage_survey_of_local_and_s3(
    seaweedfs, demo_bucket: str, on_demo_data: Path, monkeypatch, tmp_path
):
    aws_environment(monkeypatch, seaweedfs, tmp_path)  # the kernel inherits it
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", seaweedfs.endpoint_url)
    paths = {"local demo": str(on_demo_data), "SeaweedFS S3": f"s3://{demo_bucket}/2001"}
    nb = execute(NOTEBOOKS[4], tmp_path, PATHS=paths, SAMPLE_BYTES=30e6)
    text = text_of(nb)
    for label in paths:
        rows = [line for line in text.splitlines() if line.startswith(label)]
        assert len(rows) == 2, f"{label}: a cold and a warm row\n{text}"
    assert re.search(r"SeaweedFS S3\s+s3\s", text)
    assert images_of(nb) == 1


@pytest.mark.slow
def test_06_calibrate_then_plan(on_demo_data, tmp_path):
    cal = tmp_path / "calibration.json"
    nb = execute(NOTEBOOKS[5], tmp_path, CALIBRATION_FILE=str(cal), CALIBRATION_BYTES="16MB")
    text = text_of(nb)
    assert "calibration written" in text and json.loads(cal.read_text())["recipes"]
    assert re.search(rf"{re.escape(str(cal))}, measured on \S+ \(\d+ cores\)", text)
    rows = re.findall(
        r"^\s+(\d+)\s+([\d,]+)\s+[\d,]+ .*?(CPU decode|storage|network|scheduler)", text, re.M
    )
    assert [int(n) for n, _, _ in rows[:7]] == [1, 2, 4, 8, 16, 32, 64]
    # 64 nodes are bound by the shared 2,880 MB/s or by the one scheduler, not by decoding
    assert dict((int(n), b) for n, _, b in rows[:7])[64] in ("storage", "scheduler")
    assert images_of(nb) == 1


@pytest.mark.slow
def test_07_your_own_recipe(on_demo_data, tmp_path):
    nb = execute(NOTEBOOKS[6], tmp_path, WORKDIR=str(tmp_path / "mine"))
    text = text_of(nb)
    # the recipe file gives what the chain built by hand gave: the run merges each file's
    # float64 sums (incremental), so to rounding only (a wrong box is off by ~0.1 K)
    assert number(r"largest difference from the chain built by hand: ([-+.\de]+)", text) < 1e-9
    # the known DJF index of the Nino3.4 box: the generator's noise-free signal, averaged
    # over the days of each winter (December with the January and February after it), whole
    # winters only (Jan-Feb 2000 and Dec 2009 are left out), less the mean of them; printed to 2 decimals (0.005), noise about 0.003 K
    days = pd.date_range("2000-01-01", "2009-12-31", freq="D")
    signal = expected(TEST_SPEC.resolved(), days.values.astype("datetime64[h]"), box=NINO34_BOX)
    daily = pd.Series(signal["box_signal_K"], index=days)
    djf = daily[daily.index.month.isin([12, 1, 2])].resample("QS-DEC")
    whole = djf.apply(lambda s: s.index.month.nunique()) == 3  # resample drops the others
    winters = djf.mean()[whole]
    known = winters - winters.mean()
    low = number(r"DJF index: ([-+.\d]+) to", text)
    high = number(r"DJF index: [-+.\d]+ to ([-+.\d]+) K", text)
    assert low == pytest.approx(known.min(), abs=0.01)
    assert high == pytest.approx(known.max(), abs=0.01)
    answer = json.loads((tmp_path / "mine" / "result" / "summary.json").read_text())["answer"]
    assert set(answer) == {"index", "warm_winters"}
    assert images_of(nb) >= 1
