"""--cluster gateway against a real dask-gateway server (tests/support/gateway_server.py: PyPI
dask-gateway-server, local backend, simple authentication, loopback): the same answers as
the local cluster, workers set up as batch workers, a version mismatch stopped with one
line, and no cluster left on the gateway after any end of a run."""

from __future__ import annotations

import json
import os
import queue
import signal
import threading
import time
from pathlib import Path

import dask.config
import psutil
import pytest
import xarray as xr

from pangeo_hpc.clusters.gateway import (
    gateway_spec,
    new_gateway_cluster,
    version_mismatch,
    versions,
)
from pangeo_hpc.clusters.start import running_cluster
from tests.support.cli import run_clis, start_cli

PERIOD = ("--start", "2000-01", "--end", "2000-03")
#: never to be seen anywhere (the secret of the workers' S3 credentials)
SECRET = "gw-canary-" + os.urandom(12).hex()


@pytest.fixture
def on_gateway(gateway_server, monkeypatch):
    """dask-gateway's config (``DASK_GATEWAY__*``) pointing at the test server, for this
    process and the CLIs it starts; afterwards no cluster may be left."""
    for key, value in gateway_server.env().items():
        monkeypatch.setenv(key, value)
    dask.config.refresh()
    try:
        yield gateway_server
    finally:
        monkeypatch.undo()
        dask.config.refresh()
    assert gateway_server.wait_for_clusters(0) == [], "a cluster outlived its test"


def _mean(name: str, demo_tree: Path, tmp_path: Path, *extra: str) -> tuple[str, ...]:
    return ("era5-sst-mean", "--data", str(demo_tree), *PERIOD, *extra, "--no-cache",
            "--out", str(tmp_path / name), "--no-progress")  # fmt: skip


def test_the_spec_is_pure_and_shows_no_credentials():
    environ = {"AWS_ACCESS_KEY_ID": "AKIAGW", "AWS_SECRET_ACCESS_KEY": SECRET, "HOME": "/h"}
    profile = {
        "kind": "gateway",
        "options": {"worker_cores": 2},
        "worker_memory": 3,
        "environment": {"GDAL_CACHEMAX": 512},
    }
    spec = gateway_spec(profile, environ=environ)
    assert spec.options == {"worker_cores": 2, "worker_memory": 3}
    env = spec.environment
    assert env["HDF5_USE_FILE_LOCKING"] == "FALSE" and env["OPENBLAS_NUM_THREADS"] == "1"
    assert env["AWS_SECRET_ACCESS_KEY"] == SECRET and env["GDAL_CACHEMAX"] == "512"
    assert "HOME" not in env  # only the AWS variables are passed
    shown = repr(spec) + json.dumps(spec.shown())
    assert SECRET not in shown and "AKIAGW" not in shown and "***" in shown
    assert spec.hide(f"refused {SECRET}!") == "refused ***!"


def test_a_version_mismatch_is_one_line_naming_it():
    here = versions()
    assert version_mismatch(here, dict(here)) is None
    message = version_mismatch(here, {**here, "numpy": "1.0.0"})
    assert message is not None and "\n" not in message
    assert f"numpy 1.0.0 (here {here['numpy']})" in message
    assert "dask " not in message  # only what differs


@pytest.mark.slow
def test_a_recipe_on_the_gateway_equals_the_local_run(on_gateway, demo_tree, tmp_path):
    local, gateway = run_clis(
        _mean("local", demo_tree, tmp_path, "--workers", "2"),
        _mean("gateway", demo_tree, tmp_path, "--cluster", "gateway", "--workers", "2"),
        cwd=tmp_path,
    )
    assert local.returncode == 0, local.stderr
    assert gateway.returncode == 0, gateway.stderr
    assert "cluster: gateway, 2 workers" in gateway.stdout
    summary = json.loads((tmp_path / "gateway" / "summary.json").read_text())
    assert summary["cluster"]["kind"] == "gateway"
    want = json.loads((tmp_path / "local" / "summary.json").read_text())["answer"]
    assert summary["answer"] == want  # as printed (rounded)
    with (
        xr.open_dataset(tmp_path / "local" / "result.nc") as a,
        xr.open_dataset(tmp_path / "gateway" / "result.nc") as b,
    ):
        # the same float64 sums, possibly added in another order on other workers
        xr.testing.assert_allclose(a.drop_attrs(), b.drop_attrs(), rtol=1e-12, atol=0)
    assert on_gateway.wait_for_clusters(0) == []


@pytest.mark.slow
def test_workers_are_set_up_and_an_error_shuts_the_cluster_down(on_gateway, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    names = ("HDF5_USE_FILE_LOCKING", "OMP_NUM_THREADS", "AWS_SECRET_ACCESS_KEY")
    with pytest.raises(ZeroDivisionError):
        with running_cluster("gateway", adapt=(1, 2)) as (cluster, client):
            assert on_gateway.cluster_names() == [cluster.name]
            seen = client.run(lambda: {k: os.environ.get(k) for k in names})
            assert next(iter(seen.values())) == {
                "HDF5_USE_FILE_LOCKING": "FALSE",
                "OMP_NUM_THREADS": "1",
                "AWS_SECRET_ACCESS_KEY": SECRET,  # passed through the options, to S3 readers
            }
            1 / 0  # noqa: B018
    assert on_gateway.wait_for_clusters(0) == []


@pytest.mark.slow
def test_a_version_mismatch_stops_the_run_and_leaves_nothing(
    on_gateway, demo_tree, tmp_path, monkeypatch
):
    # a worker whose numpy says 1.0.0: a preload module (distributed's own hook, set by a
    # worker environment variable through the gateway's options) changes its version
    old = tmp_path / "old_numpy.py"
    old.write_text("import numpy\n\nnumpy.__version__ = '1.0.0'\n")
    profile = {
        "kind": "gateway",
        "environment": {"DASK_DISTRIBUTED__WORKER__PRELOAD": json.dumps([str(old)])},
    }
    monkeypatch.setenv("DASK_PANGEO_HPC__PROFILES", json.dumps({"old-numpy": profile}))
    (r,) = run_clis(
        _mean("out", demo_tree, tmp_path, "--cluster", "auto", "--profile", "old-numpy"),
        cwd=tmp_path,
    )
    assert r.returncode == 2, r.stderr
    numpy = versions()["numpy"]
    assert r.stderr.startswith(f"error: the gateway's workers run numpy 1.0.0 (here {numpy}):")
    assert r.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()
    assert on_gateway.wait_for_clusters(0) == []


def _lines(stream) -> queue.Queue:
    """The lines of ``stream`` as they come, read by a thread."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in stream], daemon=True).start()
    return lines


def _wait_line(lines: queue.Queue, start: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if lines.get(timeout=1).startswith(start):
                return
        except queue.Empty:
            continue
    raise AssertionError(f"no line starting {start!r} in {timeout} s")


def _workers_of(server) -> list[psutil.Process]:
    """The gateway's worker processes (nannies and their workers), not the schedulers."""
    kids = psutil.Process(server.process.pid).children(recursive=True)
    nannies = [p for p in kids if "distributed.cli.dask_worker" in " ".join(p.cmdline())]
    return nannies + [c for n in nannies for c in n.children(recursive=True)]


@pytest.mark.slow
@pytest.mark.parametrize("when", ["SIGINT while the cluster starts", "SIGTERM while it works"])
def test_ctrl_c_and_sigterm_shut_the_cluster_down(on_gateway, demo_tree, tmp_path, when):
    p = start_cli(*_mean("out", demo_tree, tmp_path, "--cluster", "gateway"), cwd=tmp_path)
    stopped: list[psutil.Process] = []
    try:
        if when.startswith("SIGINT"):
            assert len(on_gateway.wait_for_clusters(1)) == 1  # submitted, maybe not running
            p.send_signal(signal.SIGINT)
        else:
            _wait_line(_lines(p.stdout), "cluster: gateway")
            # workers that do nothing more: the run cannot end before the signal
            stopped = _workers_of(on_gateway)
            assert stopped
            for w in stopped:
                w.suspend()
            p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=120) == 130
        assert "interrupted" in p.stderr.read()
        assert on_gateway.wait_for_clusters(0) == []
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for w in stopped:
            try:
                w.resume()
            except psutil.NoSuchProcess:
                pass
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_ctrl_c_while_the_gateway_makes_the_cluster_shuts_it_down(on_gateway):
    """An interrupt while the gateway makes the cluster is held until it is made, then the
    cluster is stopped before the interrupt goes on. dask-gateway's own clean-up of a
    cancelled start runs in its event loop's thread after the interrupt has gone on: a
    command line that exits at once left the cluster running (seen here under load)."""

    def interrupt() -> None:
        on_gateway.wait_for_clusters(1)  # submitted: the gateway is making it now
        os.kill(os.getpid(), signal.SIGINT)

    cluster = None
    interrupter = threading.Thread(target=interrupt, daemon=True)
    interrupter.start()
    with pytest.raises(KeyboardInterrupt) as caught:
        cluster = new_gateway_cluster(gateway_spec({}))
        interrupter.join()  # (not reached: the interrupt comes first)
    assert cluster is None
    assert on_gateway.cluster_names() == []  # already stopping, not a moment later
    del caught  # its frames held whatever was made
