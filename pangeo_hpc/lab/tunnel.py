"""The ssh line that brings a compute node's dashboard and JupyterLab to a laptop, and the
links that reach the dashboard from inside JupyterLab."""

from __future__ import annotations

import numbers
import shlex
import socket
import urllib.parse
from typing import Any

from pangeo_hpc.errors import InputError

#: the dashboard link for a JupyterLab served at "/" (make lab, an SSH tunnel to a node)
PROXY_LINK = "/proxy/{port}/status"
#: the link on JupyterHub and binder, where JupyterLab is served under a per-user prefix
HUB_LINK = "{JUPYTERHUB_SERVICE_PREFIX}proxy/{port}/status"

PATHS = {"dashboard": "/status", "jupyterlab": "/lab"}


def tunnel_command(
    *,
    login: str,
    ports: dict[str, int],
    user: str | None = None,
    node: str | None = None,
    local_base: int | None = None,
    jump: bool = False,
) -> str:
    """``ssh -N -L ...`` forwarding each service's port on ``node`` through ``login``.

    Parameters
    ----------
    login : str
        The host users ssh to.
    ports : dict
        Service name -> port on ``node``, e.g. ``{"dashboard": 8787, "jupyterlab": 8888}``.
    user : str, optional
        User name on ``login``.
    node : str, optional
        Where the services listen (default: this host; ``localhost`` if it is the login host).
    local_base : int, optional
        Laptop port of the first service (the others follow); default: the same ports.
    jump : bool
        For services bound to the node's loopback: hop through ``login`` to the node
        (``ssh -J login node``) and forward to 127.0.0.1 there.

    Returns
    -------
    str
        The command, then one line per service with the URL to open on the laptop.

    Examples
    --------
    >>> print(tunnel_command(login="hpc.example.org", user="ana", node="cn042",
    ...                      ports={"dashboard": 8787}))
    ssh -N -L 8787:cn042:8787 ana@hpc.example.org
    dashboard: http://localhost:8787/status
    """
    if not login or any(c.isspace() for c in login):
        raise InputError(f"login host {login!r} must be a host name, e.g. hpc.example.org")
    node = node or socket.gethostname()
    if node == login:
        node = "localhost"
    target = f"{user}@{login}" if user else login
    forwards, urls = [], []
    for i, (service, port) in enumerate(ports.items()):
        if isinstance(port, bool) or not isinstance(port, numbers.Integral) or not 0 < port < 65536:
            raise InputError(f"{service} port {port!r} must be a whole number from 1 to 65535")
        local = (local_base + i) if local_base else int(port)
        remote_host = "127.0.0.1" if jump else node
        forwards += ["-L", f"{local}:{remote_host}:{port}"]
        urls.append(f"{service}: http://localhost:{local}{PATHS.get(service, '/')}")
    if jump:
        cmd = ["ssh", "-N", "-J", target, *forwards, node]
    else:
        cmd = ["ssh", "-N", *forwards, target]
    return "\n".join([shlex.join(cmd), *urls])


def dashboard_port(cluster: Any) -> int:
    """The port the Dask dashboard of ``cluster`` listens on.

    Parameters
    ----------
    cluster : Any
        A Dask cluster.

    Returns
    -------
    int
        The port.

    Raises
    ------
    InputError
        When the cluster runs no dashboard (bokeh missing).

    Examples
    --------
    >>> from dask.distributed import LocalCluster
    >>> from pangeo_hpc.lab.tunnel import dashboard_port
    >>> cluster = LocalCluster(n_workers=1, dashboard_address=":8787")  # doctest: +SKIP
    >>> dashboard_port(cluster)  # the port given above  # doctest: +SKIP
    """
    port = cluster.scheduler_info.get("services", {}).get("dashboard")
    if not port:
        raise InputError(f"{cluster!r} runs no dashboard: install bokeh>=3.1 (dask's diagnostics)")
    return int(port)


def cluster_tunnel(
    cluster: Any,
    *,
    login: str | None = None,
    user: str | None = None,
    lab_port: int | None = None,
    local_base: int | None = None,
) -> str:
    """The ssh line that brings ``cluster``'s dashboard (and JupyterLab) to a laptop.

    The scheduler runs where this Python runs (a login node, or a compute node with
    JupyterLab on it). A dashboard bound to loopback is reached by hopping through
    ``login`` to this host.

    Parameters
    ----------
    cluster
        A running Dask cluster (local or dask-jobqueue).
    login : str, optional
        The host users ssh to; default this host's fully qualified name.
    user : str, optional
        User name on ``login``.
    lab_port : int, optional
        JupyterLab's port on this host, forwarded too.
    local_base : int, optional
        Laptop port of the first service, as for :func:`tunnel_command`.

    Returns
    -------
    str
        The command, then the URL of each service on the laptop.

    Examples
    --------
    >>> from dask.distributed import LocalCluster
    >>> from pangeo_hpc.lab.tunnel import cluster_tunnel
    >>> cluster = LocalCluster(n_workers=1)  # doctest: +SKIP
    >>> print(cluster_tunnel(cluster, login="hpc.example.org", user="ana"))  # doctest: +SKIP
    """
    here = socket.getfqdn()
    if here.startswith("localhost"):  # no DNS name: the host name is what ssh knows
        here = socket.gethostname()
    login = login or here
    ports = {"dashboard": dashboard_port(cluster)}
    if lab_port:
        ports["jupyterlab"] = int(lab_port)
    host = urllib.parse.urlsplit(cluster.scheduler_address).hostname or ""
    loopback = host in ("localhost", "::1") or host.startswith("127.")
    on_login = login in (here, socket.gethostname(), "localhost")
    return tunnel_command(
        login=login,
        user=user,
        node="localhost" if on_login else socket.gethostname(),
        ports=ports,
        local_base=local_base,
        jump=loopback and not on_login,
    )
