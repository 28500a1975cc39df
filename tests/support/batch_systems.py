"""The one-node Slurm and Grid Engine of ci/slurm/ and ci/sge/: what runs there."""

from __future__ import annotations

import shutil
import subprocess
import time


def queue(name: str = "dask-worker") -> list[str]:
    """Slurm jobs of ``name`` still known to the controller (any state)."""
    out = subprocess.run(
        ["squeue", "-h", "-n", name, "-o", "%i %T"], capture_output=True, text=True, check=True
    ).stdout
    return out.split("\n")[:-1]


def wait_queue_empty(name: str = "dask-worker", timeout: float = 60) -> list[str]:
    """Poll squeue until no job of ``name`` is left (completing jobs take a few seconds)."""
    deadline = time.monotonic() + timeout
    while (left := queue(name)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def sge_available() -> bool:
    """True when a Grid Engine qmaster answers and has an exec host."""
    if shutil.which("qstat") is None or shutil.which("qhost") is None:
        return False
    try:
        r = subprocess.run(
            ["qstat", "-f", "-q", "all.q"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and "all.q@" in r.stdout
