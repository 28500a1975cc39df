"""The ssh line that brings a compute node's dashboard and JupyterLab to a laptop."""

from __future__ import annotations

import shlex
import socket

from .errors import InputError

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
        if not 0 < int(port) < 65536:
            raise InputError(f"{service} port {port!r} must be between 1 and 65535")
        local = (local_base + i) if local_base else int(port)
        remote_host = "127.0.0.1" if jump else node
        forwards += ["-L", f"{local}:{remote_host}:{port}"]
        urls.append(f"{service}: http://localhost:{local}{PATHS.get(service, '/')}")
    if jump:
        cmd = ["ssh", "-N", "-J", target, *forwards, node]
    else:
        cmd = ["ssh", "-N", *forwards, target]
    return "\n".join([shlex.join(cmd), *urls])
