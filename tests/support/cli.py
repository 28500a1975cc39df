"""The command line as a user runs it: ``python -m pangeo_hpc.run ARGS`` in a process of its
own, from the repository the tests run from."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.support.paths import ROOT


def start_cli(*args: str, cwd: Path) -> subprocess.Popen:
    """``python -m pangeo_hpc.run ARGS`` as a user starts it, in its own process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "pangeo_hpc.run", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_cli(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the CLI to its end; returns code, stdout and stderr."""
    p = start_cli(*args, cwd=cwd)
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()  # a hung CLI must not outlive its test
        stdout, stderr = p.communicate()
        raise AssertionError(
            f"{' '.join(args)} did not finish in {timeout} s\n{stdout[-2000:]}\n{stderr[-2000:]}"
        ) from None
    return subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)


#: CLI runs of :func:`run_clis` at once: a run spends much of its time starting processes
#: and waiting on them (the interpreter, the worker processes' imports, the cluster's
#: handshakes), so two at a time finish sooner than one after the other on two cores
#: (measured: 2 runs 40-61 s at once, 58-91 s one after the other, load 13)
CLI_JOBS = 2


def run_clis(
    *commands: Sequence[str], cwd: Path, timeout: float = 600
) -> list[subprocess.CompletedProcess]:
    """Run independent CLI commands (each a list of arguments), :data:`CLI_JOBS` at a time;
    their results in the order given. Each is :func:`run_cli`, with its time-out."""
    with ThreadPoolExecutor(CLI_JOBS) as pool:
        return list(pool.map(lambda args: run_cli(*args, cwd=cwd, timeout=timeout), commands))
