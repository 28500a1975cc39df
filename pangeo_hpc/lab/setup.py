"""JupyterLab set up for Dask: the dashboard inside Lab, and JupyterLab on this machine.

One set of Dask settings serves every way users meet the notebooks:

* ``distributed.dashboard.link`` points through jupyter-server-proxy, so that a cluster's
  ``dashboard_link`` opens inside JupyterLab at ``/proxy/{port}/status`` (on JupyterHub and
  binder prefixed with ``{JUPYTERHUB_SERVICE_PREFIX}``, which distributed fills in from the
  environment) and one SSH tunnel to JupyterLab's port serves both;
* ``labextension.factory`` makes the "+ NEW" button of dask-labextension's sidebar start the
  same local cluster as :func:`pangeo_hpc.get_cluster` (worker processes on 127.0.0.1);
* ``pangeo-hpc.data.root`` names the data the notebooks open.

:func:`write_lab_config` writes them as a Dask YAML file (binder's ``postBuild``);
:func:`start_local_lab` passes them as ``DASK_*`` variables to a JupyterLab it starts on
127.0.0.1 (``make lab``).
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pangeo_hpc.clusters.jobqueue import worker_env
from pangeo_hpc.errors import ClusterError, InputError
from pangeo_hpc.extras import require
from pangeo_hpc.lab.tunnel import HUB_LINK, PROXY_LINK
from pangeo_hpc.s3.options import S3Options, is_s3
from pangeo_hpc.write.outputs import atomic_file
from pangeo_hpc.write.targets import output_file


def lab_settings(data_root: str | Path | None, link: str = PROXY_LINK) -> dict[str, Any]:
    """The Dask settings of a JupyterLab session, as dotted keys.

    Parameters
    ----------
    data_root : path, optional
        The data folder notebooks open (config ``pangeo-hpc.data.root``); left as
        configured when None.
    link : str
        Dashboard link template: ``{port}`` (and ``{host}``, or environment variables
        such as ``{JUPYTERHUB_SERVICE_PREFIX}``) are filled in by distributed.

    Returns
    -------
    dict
        ``{"distributed.dashboard.link": ..., "labextension.factory": ..., ...}``.

    Examples
    --------
    >>> from pangeo_hpc.lab.setup import lab_settings
    >>> settings = lab_settings("/scratch/era5")
    >>> settings["pangeo-hpc.data.root"], settings["distributed.dashboard.link"]
    ('/scratch/era5', '/proxy/{port}/status')
    >>> settings["labextension.factory"]["class"]
    'LocalCluster'
    """
    if not isinstance(link, str) or "{port}" not in link:
        raise InputError(
            f"dashboard link {link!r} has no {{port}}: use e.g. {PROXY_LINK!r} "
            f"or {HUB_LINK!r} on JupyterHub"
        )
    settings: dict[str, Any] = {
        "distributed.dashboard.link": link,
        "labextension.factory": {
            "module": "dask.distributed",
            "class": "LocalCluster",
            "args": [],
            "kwargs": {
                "processes": True,
                "threads_per_worker": 1,
                "host": "127.0.0.1",
                "dashboard_address": "127.0.0.1:0",
                "env": worker_env(),
            },
        },
    }
    if is_s3(data_root):
        settings["pangeo-hpc.data.root"] = str(data_root)
    elif data_root is not None:
        settings["pangeo-hpc.data.root"] = str(Path(data_root).expanduser().absolute())
    return settings


def _nested(settings: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in settings.items():
        node = out
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def write_lab_config(
    path: str | Path | None = None,
    *,
    data_root: str | Path | None = None,
    link: str = PROXY_LINK,
    s3: S3Options | None = None,
) -> Path | str:
    """Write :func:`lab_settings` as a Dask YAML config file.

    Parameters
    ----------
    path : path or str, optional
        Default ``~/.config/dask/pangeo-hpc-lab.yaml``, which Dask reads in every process;
        an ``s3://bucket/key`` is one marked object (a binder or hub image fetches it), never
        over an object this package did not write (:func:`pangeo_hpc.write.targets.output_file`).
    data_root, link
        As for :func:`lab_settings` (``data_root`` may be ``s3://bucket/prefix``).
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` ``path``; default :meth:`S3Options.resolve`.

    Returns
    -------
    Path or str
        The file written (through a temporary name, so it is whole or absent), or its URL.

    Examples
    --------
    >>> write_lab_config(data_root="/scratch/era5")  # doctest: +SKIP
    """
    target = path or Path.home() / ".config" / "dask" / "pangeo-hpc-lab.yaml"
    text = (
        "# written by `python -m pangeo_hpc.run lab-config`: the Dask dashboard inside\n"
        "# JupyterLab (jupyter-server-proxy), dask-labextension's cluster factory and the\n"
        "# folder the notebooks open\n"
        + yaml.safe_dump(_nested(lab_settings(data_root, link)), sort_keys=False)
    )
    try:  # a Dask config of the user's own (not written here) is never replaced
        with (
            output_file(target, flag="path", s3=s3) as dest,
            atomic_file(dest, flag="path") as tmp,
        ):
            tmp.write_text(text)
    except OSError as exc:
        raise InputError(
            f"cannot write the Dask config {str(target)!r}: {exc.strerror}; "
            "pass path= with a writable file",
            param="path",
        ) from exc
    return str(target) if is_s3(target) else Path(target).expanduser()


def lab_environment(settings: dict[str, Any]) -> dict[str, str]:
    """The settings as ``DASK_*`` environment variables (Dask reads them at import).

    Parameters
    ----------
    settings : dict[str, Any]
        Dask config settings.

    Returns
    -------
    dict[str, str]
        Variable name -> value.

    Examples
    --------
    >>> from pangeo_hpc.lab.setup import lab_environment
    >>> lab_environment({"distributed.dashboard.link": "/proxy/{port}/status"})
    {'DASK_DISTRIBUTED__DASHBOARD__LINK': '/proxy/{port}/status'}
    """
    return {
        "DASK_" + key.upper().replace(".", "__").replace("-", "_"): (
            value if isinstance(value, str) else repr(value)
        )
        for key, value in settings.items()
    }


@dataclass
class LocalLab:
    """A JupyterLab started by :func:`start_local_lab`.

    Attributes
    ----------
    process : subprocess.Popen[bytes]
        The JupyterLab process.
    port : int
        The port it listens on.
    token : str
        Its access token.
    log : Path
        Its log file.

    Examples
    --------
    >>> from pangeo_hpc.lab.setup import start_local_lab
    >>> lab = start_local_lab(notebook_dir="notebooks")  # doctest: +SKIP
    >>> lab.port, lab.log  # doctest: +SKIP
    """

    process: subprocess.Popen[bytes]
    port: int
    token: str
    log: Path

    @property
    def url(self) -> str:
        """The address to open, with the token."""
        return f"http://127.0.0.1:{self.port}/lab?token={self.token}"

    def stop(self, grace: float = 10.0) -> None:
        """Stop JupyterLab (and the kernels it started).

        Parameters
        ----------
        grace : float, optional
            Seconds to wait before killing it.

        Examples
        --------
        >>> from pangeo_hpc.lab.setup import start_local_lab
        >>> lab = start_local_lab(notebook_dir="notebooks")  # doctest: +SKIP
        >>> lab.stop(grace=5.0)  # doctest: +SKIP
        """
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_local_lab(
    *,
    notebook_dir: str | Path,
    data_root: str | Path | None = None,
    port: int | None = None,
    token: str | None = None,
    timeout: float = 60.0,
) -> LocalLab:
    """Start JupyterLab on 127.0.0.1 with the Dask settings, and wait until it answers.

    Parameters
    ----------
    notebook_dir : path
        The folder JupyterLab shows.
    data_root : path, optional
        The data the notebooks open (config ``pangeo-hpc.data.root``).
    port : int, optional
        Default: a free port.
    token : str, optional
        Default: ``$JUPYTER_TOKEN``, else a new random one. It reaches JupyterLab through
        the environment, never the command line (which other users can read in ``ps``).
    timeout : float
        Seconds to wait for JupyterLab to answer.

    Returns
    -------
    LocalLab
        The running server; :meth:`LocalLab.stop` ends it.

    Examples
    --------
    >>> lab = start_local_lab(notebook_dir="notebooks")  # doctest: +SKIP
    >>> print(local_instructions(lab))  # doctest: +SKIP
    >>> lab.stop()  # doctest: +SKIP
    """
    require("lab", "JupyterLab")
    root = Path(notebook_dir)
    if not root.is_dir():
        raise InputError(f"notebook folder {str(notebook_dir)!r} does not exist: pass a folder")
    if data_root is not None and not Path(data_root).is_dir():
        call = "pangeo_hpc.demo.generate(DIR)"
        raise InputError(
            f"data folder data_root={str(data_root)!r} does not exist: make demo-data "
            f"writes one ({call}), or pass your tree",
            param="data_root",
            commands={call: ["demo-data", "--out", "DIR"]},
        )
    port = port or _free_port()
    token = token or os.environ.get("JUPYTER_TOKEN") or secrets.token_urlsafe(32)
    log_dir = Path.home() / ".cache" / "pangeo-hpc" / "lab"
    log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    log = log_dir / f"jupyterlab-{port}.log"
    env = {
        **os.environ,
        **worker_env(),
        **lab_environment(lab_settings(data_root)),
        "JUPYTER_TOKEN": token,
    }
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root.absolute()}",
        # no "would you like news?" pop-up, no update check: this machine may be offline
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        *(["--allow-root"] if os.geteuid() == 0 else []),
    ]
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    lab = LocalLab(proc, port, token, log)
    try:
        _wait_ready(lab, timeout)
    except BaseException:
        lab.stop()
        raise
    return lab


def _wait_ready(lab: LocalLab, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{lab.port}/api/status"
    request = urllib.request.Request(url, headers={"Authorization": f"token {lab.token}"})
    while True:
        code = lab.process.poll()
        if code is not None:
            tail = lab.log.read_text(errors="replace")[-2000:]
            raise ClusterError(f"JupyterLab exited with {code}; its log {lab.log}:\n{tail}")
        try:
            with urllib.request.urlopen(request, timeout=5):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise ClusterError(
                f"JupyterLab did not answer on port {lab.port} within {timeout:g} s; "
                f"its log: {lab.log}"
            )
        time.sleep(0.3)  # poll interval


def local_instructions(lab: LocalLab) -> str:
    """What to open, and the tunnel line for when this machine is a remote one.

    Parameters
    ----------
    lab : LocalLab
        The running JupyterLab.

    Returns
    -------
    str
        The text.

    Examples
    --------
    >>> from pangeo_hpc.lab.setup import local_instructions, start_local_lab
    >>> lab = start_local_lab(notebook_dir="notebooks")  # doctest: +SKIP
    >>> print(local_instructions(lab))  # the URL with its token, and an ssh line  # doctest: +SKIP
    """
    host = socket.gethostname()
    return "\n".join(
        [
            f"JupyterLab: {lab.url}",
            "  Dask dashboards of clusters you start there open inside Lab at "
            "/proxy/PORT/status (the link cells print), and in the Dask sidebar",
            f"  from a laptop: ssh -N -L {lab.port}:localhost:{lab.port} {host}  "
            f"then open http://localhost:{lab.port}/lab?token={lab.token}",
            f"  log: {lab.log}; stop with Ctrl-C",
        ]
    )
