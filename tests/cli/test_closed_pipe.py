"""A reader that leaves early (``pangeo-hpc run ... | head -1``): the run goes on to its
end and writes its result, with no traceback for each later line (it printed "Logging
error" and a stack for every log line after the pipe closed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT


def test_a_run_whose_reader_left_finishes_without_tracebacks(demo_tree: Path, tmp_path: Path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "pangeo_hpc.run", "era5-sst-mean", "--data", str(demo_tree),
           "--start", "2000-01", "--end", "2000-02", "--no-cache", "--no-progress",
           "--out", str(out)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        first = child.stdout.readline()  # the first line, then the reader leaves
        child.stdout.close()
        err = child.stderr.read().decode()
        code = child.wait(timeout=300)
    assert first.strip(), err
    assert "Traceback" not in err and "Logging error" not in err, err
    assert code == 0, err
    assert (out / "result.nc").stat().st_size > 0 and (out / "summary.json").exists()
