"""A real dask-gateway server for the tests (PyPI ``dask-gateway-server[local]``).

Started as dask-gateway's own tests start theirs (``tests/utils_test.py`` there): the
``UnsafeLocalBackend`` (schedulers and workers are processes of this user) and the
``SimpleAuthenticator`` (one shared password), here as a process of its own with a config
file, on free loopback ports, known to be up when ``/api/health`` answers. Its cluster
options are those of a Pangeo deployment: ``worker_cores``, ``worker_memory`` (GiB) and
``environment`` (the workers' variables).

Scheduler and workers run ``python -m distributed.cli.dask_*`` of this interpreter and
inherit ``PATH`` and ``PYTHONPATH`` (the backend's ``inherited_environment``): they import
the pangeo_hpc under test.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from pangeo_hpc.clusters.gateway import close_gateway
from tests.support.servers import HOST, ServerError, child_env, free_port

#: seconds the server has to answer its health check
START_TIMEOUT = 60

_CONFIG = """
import sys
from dask_gateway_server.options import Float, Integer, Mapping, Options

c.DaskGateway.address = "{host}:{port}"
c.Proxy.address = "{host}:{proxy_port}"
c.DaskGateway.backend_class = "dask_gateway_server.backends.local.UnsafeLocalBackend"
c.UnsafeLocalBackend.clusters_directory = {clusters!r}
c.DaskGateway.authenticator_class = "dask_gateway_server.auth.SimpleAuthenticator"
c.SimpleAuthenticator.password = {password!r}
c.ClusterConfig.scheduler_cmd = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
c.ClusterConfig.worker_cmd = [sys.executable, "-m", "distributed.cli.dask_worker"]
c.ClusterConfig.idle_timeout = 0
c.DaskGateway.log_level = "INFO"


def _handler(options):
    return {{
        "worker_cores": options.worker_cores,
        "worker_memory": int(options.worker_memory * 2**30),
        "environment": options.environment,
    }}


c.Backend.cluster_options = Options(
    Integer("worker_cores", 1, min=1, max=2, label="Worker cores"),
    Float("worker_memory", 1, min=0.25, max=4, label="Worker memory (GiB)"),
    Mapping("environment", {{}}, label="Worker environment"),
    handler=_handler,
)
"""


class GatewayServer:
    """``dask-gateway-server`` in ``folder`` (config, log and clusters' working folders).

    Parameters
    ----------
    folder
        A folder of its own (the clusters' folders and the log go there).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.password = "gw-" + secrets.token_hex(8)
        self.port = free_port()
        self.proxy_port = free_port(exclude=(self.port,))
        self.address = f"http://{HOST}:{self.port}"
        self.proxy_address = f"gateway://{HOST}:{self.proxy_port}"
        self.log = self.folder / "gateway.log"
        self.process: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        """The dask-gateway client configuration of this server, as environment variables
        (``DASK_GATEWAY__ADDRESS`` and friends), for this process or a CLI."""
        return {
            "DASK_GATEWAY__ADDRESS": self.address,
            "DASK_GATEWAY__PROXY_ADDRESS": self.proxy_address,
            "DASK_GATEWAY__AUTH__TYPE": "basic",
            "DASK_GATEWAY__AUTH__KWARGS": json.dumps(
                {"username": "tester", "password": self.password}
            ),
        }

    def gateway(self) -> Any:
        """A :class:`dask_gateway.Gateway` client of this server (close it with
        :func:`~pangeo_hpc.clusters.gateway.close_gateway`)."""
        from dask_gateway import Gateway
        from dask_gateway.auth import BasicAuth

        return Gateway(
            self.address,
            proxy_address=self.proxy_address,
            auth=BasicAuth("tester", self.password),
        )

    def cluster_names(self) -> list[str]:
        """Names of the clusters the gateway lists as pending or running."""
        gw = self.gateway()
        try:
            return [c.name for c in gw.list_clusters()]
        finally:
            close_gateway(gw)

    def wait_for_clusters(self, count: int, timeout: float = 60) -> list[str]:
        """Poll the gateway until it lists ``count`` clusters (or ``timeout`` passed);
        returns the last listing."""
        deadline = time.monotonic() + timeout
        while len(names := self.cluster_names()) != count and time.monotonic() < deadline:
            time.sleep(0.2)
        return names

    def __enter__(self) -> Self:
        clusters = self.folder / "clusters"
        clusters.mkdir(parents=True, exist_ok=True)
        config = self.folder / "dask_gateway_config.py"
        config.write_text(
            textwrap.dedent(_CONFIG).format(
                host=HOST,
                port=self.port,
                proxy_port=self.proxy_port,
                clusters=str(clusters),
                password=self.password,
            )
        )
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "dask_gateway_server", "-f", str(config)],
                cwd=self.folder,
                env=child_env({"PYTHONPATH": os.environ.get("PYTHONPATH", "")}),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_up()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_up(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        assert self.process is not None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerError(f"dask-gateway-server ended:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.address}/api/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise ServerError(
            f"dask-gateway-server did not answer in {START_TIMEOUT} s:\n"
            f"{self.log.read_text()[-3000:]}"
        )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()  # the gateway stops its clusters' processes on exit
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait()
