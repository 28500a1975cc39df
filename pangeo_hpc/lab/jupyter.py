"""JupyterLab as a batch job on a compute node, reached over an SSH tunnel.

As the Pangeo HPC guide does: submit a job that starts JupyterLab on a free port with a
token, wait until it answers, then print the ssh line and the URL. The token never
appears in the job script, on a command line or in the queue: it travels in a file only
the user can read. The Dask dashboard link points through jupyter-server-proxy
(``/proxy/{port}/status``) so that the one tunnel serves both.
"""

from __future__ import annotations

import os
import secrets
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from pangeo_hpc import config
from pangeo_hpc.clusters.jobqueue import worker_env
from pangeo_hpc.errors import ClusterError, InputError
from pangeo_hpc.extras import require
from pangeo_hpc.inputs.walltime import format_walltime, parse_walltime
from pangeo_hpc.lab.tunnel import tunnel_command


@dataclass(frozen=True)
class LabJob:
    """A running JupyterLab job.

    Attributes
    ----------
    job_id : str
        The Slurm job id.
    node : str
        The compute node it runs on.
    port : int
        The port JupyterLab listens on.
    token : str
        Its access token.
    ip : str
        The address it listens on.

    Examples
    --------
    >>> from pangeo_hpc.lab.jupyter import LabJob
    >>> job = LabJob(job_id="4242", node="cn042", port=8888, token="abc123", ip="127.0.0.1")
    >>> job.node, job.port
    ('cn042', 8888)
    """

    job_id: str
    node: str
    port: int
    token: str
    ip: str

    @property
    def url(self) -> str:
        """Where JupyterLab answers on the node."""
        return f"http://{self.ip if self.ip != '0.0.0.0' else self.node}:{self.port}"


def lab_job_script(
    *,
    folder: Path,
    walltime: str = "02:00:00",
    cores: int = 1,
    memory: str = "4G",
    queue: str | None = None,
    ip: str = "127.0.0.1",
    notebook_dir: str | None = None,
    python: str | None = None,
) -> str:
    """The sbatch script that starts JupyterLab; ``folder`` holds the token and the
    connection file (node and port) the job writes when it starts.

    Parameters
    ----------
    folder : Path
        Where the job writes its token and connection file.
    walltime : str, optional
        The job's time limit.
    cores : int, optional
        CPU cores.
    memory : str, optional
        Memory (``4G``).
    queue : str | None, optional
        The partition, or ``None`` for the default.
    ip : str, optional
        The address JupyterLab listens on.
    notebook_dir : str | None, optional
        The folder JupyterLab opens (default: the home folder).
    python : str | None, optional
        The Python that runs JupyterLab (default: this one).

    Returns
    -------
    str
        The script.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.lab.jupyter import lab_job_script
    >>> script = lab_job_script(folder=Path("/tmp/lab"), walltime="04:00:00", cores=4, memory="16G")
    >>> [line for line in script.splitlines() if line.startswith("#SBATCH")]
    ['#SBATCH -J pangeo-lab', '#SBATCH -t 04:00:00', '#SBATCH --cpus-per-task=4',
     '#SBATCH --mem=16G', '#SBATCH -o /tmp/lab/lab-%j.log']
    """
    py = shlex.quote(python or sys.executable)
    lines = [
        "#!/usr/bin/env bash",
        "#SBATCH -J pangeo-lab",
        f"#SBATCH -t {format_walltime(parse_walltime(walltime))}",
        f"#SBATCH --cpus-per-task={int(cores)}",
        f"#SBATCH --mem={memory}",
        f"#SBATCH -o {folder}/lab-%j.log",
        *([f"#SBATCH -p {queue}"] if queue else []),
        "umask 077",
        *(f"export {k}={v}" for k, v in worker_env().items()),
        "export DASK_DISTRIBUTED__DASHBOARD__LINK='/proxy/{port}/status'",
        f'export JUPYTER_TOKEN="$(cat {shlex.quote(str(folder / "token"))})"',
        f'port=$({py} -c \'import socket; s=socket.socket(); s.bind(("", 0)); '
        "print(s.getsockname()[1])')",
        f'echo "$(hostname) $port" > {folder}/connection.tmp && '
        f"mv {folder}/connection.tmp {folder}/connection",
        f"exec {py} -m jupyterlab --no-browser --ip={shlex.quote(ip)} --port=$port"
        f" --ServerApp.root_dir={shlex.quote(notebook_dir or os.getcwd())}"
        + (" --allow-root" if os.geteuid() == 0 else ""),
    ]
    return "\n".join(lines) + "\n"


def submit_lab(
    *,
    walltime: str = "02:00:00",
    cores: int = 1,
    memory: str = "4G",
    queue: str | None = None,
    ip: str = "127.0.0.1",
    notebook_dir: str | None = None,
    timeout: float = 120,
) -> LabJob:
    """Submit JupyterLab as a Slurm job and wait until it answers (the job runs this Python,
    which needs the ``lab`` extra).

    Parameters
    ----------
    walltime : str
        The job's walltime, ``HH:MM:SS``.
    cores : int
        Cores of the job.
    memory : str
        Memory of the job, as Slurm takes it (``4G``).
    queue : str, optional
        The Slurm partition; default the cluster's default.
    ip : str
        The address JupyterLab listens on, on the node (127.0.0.1: reached by the ``ssh -L``
        line only).
    notebook_dir : str, optional
        The folder JupyterLab opens; default the job's working folder.
    timeout : float
        Seconds to wait for the job to start and for JupyterLab to answer.

    Returns
    -------
    LabJob
        The job's id, node, port, token and address (see :func:`instructions` for the
        ``ssh -L`` line and URL).

    Examples
    --------
    >>> job = submit_lab(walltime="04:00:00", cores=4, memory="16G")  # doctest: +SKIP
    >>> print(instructions(job, login="login.hpc.example.org", user=None))  # doctest: +SKIP
    """
    require("lab", "JupyterLab")
    base = Path(os.path.expanduser(config.get("cluster.log-directory"))).parent / "lab"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder = Path(os.path.realpath(base / f"{int(time.time())}-{secrets.token_hex(4)}"))
    folder.mkdir(mode=0o700)
    token = secrets.token_urlsafe(32)
    (folder / "token").touch(mode=0o600)
    (folder / "token").write_text(token)
    script = folder / "lab.sbatch"
    script.write_text(
        lab_job_script(
            folder=folder,
            walltime=walltime,
            cores=cores,
            memory=memory,
            queue=queue,
            ip=ip,
            notebook_dir=notebook_dir,
        )
    )
    r = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True)
    if r.returncode != 0:
        raise ClusterError(f"sbatch refused the JupyterLab job: {r.stderr.strip()}")
    job_id = r.stdout.strip().split(";")[0]
    try:
        node, port = _wait_connection(folder, job_id, timeout)
        job = LabJob(job_id, node, port, token, ip)
        _wait_http(job, timeout)
    except BaseException:
        subprocess.run(["scancel", job_id], check=False)
        raise
    return job


def _wait_connection(folder: Path, job_id: str, timeout: float) -> tuple[str, int]:
    deadline = time.monotonic() + timeout
    conn = folder / "connection"
    while not conn.exists():
        state = subprocess.run(
            ["squeue", "-h", "-j", job_id, "-o", "%T %R"], capture_output=True, text=True
        ).stdout.strip()
        if not state:
            log = next(folder.glob("lab-*.log"), None)
            tail = log.read_text()[-2000:] if log else "(no log)"
            raise ClusterError(f"the JupyterLab job {job_id} ended before starting:\n{tail}")
        if time.monotonic() > deadline:
            raise ClusterError(
                f"JupyterLab job {job_id} did not start within {timeout:g} s "
                f"(state {state}); it was cancelled"
            )
        time.sleep(0.5)
    node, port = conn.read_text().split()
    return node, int(port)


def _wait_http(job: LabJob, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{job.url}/api/status?token={job.token}", timeout=5):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"JupyterLab on {job.url} did not answer within {timeout:g} s: {exc}"
                ) from exc
            time.sleep(0.5)


def instructions(job: LabJob, *, login: str | None, user: str | None) -> str:
    """What to type on the laptop: the ssh line, the URL with the token, how to stop.

    Parameters
    ----------
    job : LabJob
        The running job.
    login : str | None
        The login node's name, or ``None``.
    user : str | None
        The user name on it, or ``None``.

    Returns
    -------
    str
        The text.

    Examples
    --------
    >>> from pangeo_hpc.lab.jupyter import LabJob, instructions
    >>> job = LabJob(job_id="4242", node="cn042", port=8888, token="abc123", ip="127.0.0.1")
    >>> print(instructions(job, login="hpc.example.org", user="ana"))
    JupyterLab job 4242 runs on cn042, port 8888
    on your laptop: ssh -N -J ana@hpc.example.org -L 8888:127.0.0.1:8888 cn042
    then open: http://localhost:8888/lab?token=abc123
    the Dask dashboard of clusters started there: http://localhost:8888/proxy/PORT/status
    stop it: scancel 4242
    """
    if _ip_is_loopback(job.ip):
        tunnel = tunnel_command(
            login=login or job.node,
            user=user,
            node=job.node,
            ports={"jupyterlab": job.port},
            local_base=8888,
            jump=bool(login) and login != job.node,
        )
    else:
        tunnel = tunnel_command(
            login=login or job.node,
            user=user,
            node=job.node,
            ports={"jupyterlab": job.port},
            local_base=8888,
        )
    ssh = tunnel.splitlines()[0]
    return "\n".join(
        [
            f"JupyterLab job {job.job_id} runs on {job.node}, port {job.port}",
            f"on your laptop: {ssh}",
            f"then open: http://localhost:8888/lab?token={job.token}",
            "the Dask dashboard of clusters started there: http://localhost:8888/proxy/PORT/status",
            f"stop it: scancel {job.job_id}",
        ]
    )


def _ip_is_loopback(ip: str) -> bool:
    """True for 127.x.x.x and localhost."""
    if ip in ("localhost", "::1") or ip.startswith("127."):
        return True
    if not ip:
        raise InputError(f"ip={ip!r} must be an address, e.g. '127.0.0.1' or '0.0.0.0'", param="ip")
    return False
