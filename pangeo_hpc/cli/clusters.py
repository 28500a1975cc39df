"""Verbs for clusters: profiles, job-script, tunnel, lab (and lab --here), lab-config."""

from __future__ import annotations

import argparse

from pangeo_hpc.cli.common import (
    Verb,
    add_cluster_args,
    add_s3_args,
    batch_options_from,
    positive_int,
    s3_options_from,
)
from pangeo_hpc.errors import InputError


def _profiles(a: argparse.Namespace) -> int:
    from pangeo_hpc.clusters import profiles

    for name in profiles.names():
        print(f"{name:20s} {profiles.describe(name)}")
    return 0


def _job_script(a: argparse.Namespace) -> int:
    from pangeo_hpc.clusters.start import get_cluster, kind_of

    kind = a.cluster if a.cluster != "local" else "auto"
    cluster = get_cluster(kind, profile=a.profile, preview=True, **batch_options_from(a))
    if kind_of(cluster) == "gateway":  # no script: the cluster options, credentials hidden
        import json

        print(json.dumps(cluster.shown(), indent=2))
        return 0
    try:
        if kind_of(cluster) == "local":
            raise InputError(
                "a local cluster has no job script: pass --cluster slurm, pbs or "
                "sge, or a --profile of a batch site"
            )
        script = cluster.job_script()
        if kind_of(cluster) != "local" and "127.0.0.1" in script and (a.interface or a.profile):
            print(
                "# the scheduler address below is this host's; on the site it is the login "
                "node's address on the profile's interface"
            )
        print(script)
    finally:
        cluster.close()
    return 0


def _tunnel_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--login", required=True, help="login host you ssh to, e.g. hpc.example.org")
    p.add_argument("--user", help="your user name there")
    p.add_argument("--node", help="host running the services (default: this one)")
    p.add_argument("--dashboard-port", type=positive_int, default=8787)
    p.add_argument("--lab-port", type=positive_int, help="JupyterLab's port, if running")
    p.add_argument("--local-port", type=positive_int, help="port on your laptop (default same)")


def _tunnel(a: argparse.Namespace) -> int:
    from pangeo_hpc.lab.tunnel import tunnel_command

    ports = {"dashboard": a.dashboard_port}
    if a.lab_port:
        ports["jupyterlab"] = a.lab_port
    print(
        tunnel_command(
            login=a.login, user=a.user, node=a.node, ports=ports, local_base=a.local_port
        )
    )
    return 0


def _lab_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--here",
        action="store_true",
        help="run JupyterLab on this machine instead (its options: lab --here --help)",
    )
    p.add_argument("--login", help="login host you ssh to (for the tunnel line)")
    p.add_argument("--user", help="your user name there")
    p.add_argument("--walltime", default="02:00:00")
    p.add_argument("--cores", type=positive_int, default=1)
    p.add_argument("--memory", default="4G", help="e.g. 4G")
    p.add_argument("--queue", help="partition")
    p.add_argument(
        "--ip",
        default="127.0.0.1",
        help="address JupyterLab listens on (default loopback: the tunnel hops "
        "through the login node to the compute node)",
    )
    p.add_argument("--notebook-dir", help="folder JupyterLab opens (default: here)")
    p.add_argument("--timeout", type=float, default=300, help="seconds to wait for the job")


def _lab(a: argparse.Namespace) -> int:
    from pangeo_hpc.lab.jupyter import instructions, submit_lab

    job = submit_lab(
        walltime=a.walltime,
        cores=a.cores,
        memory=a.memory,
        queue=a.queue,
        ip=a.ip,
        notebook_dir=a.notebook_dir,
        timeout=a.timeout,
    )
    print(instructions(job, login=a.login, user=a.user))
    return 0


def _lab_here_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--here", action="store_true", help="run JupyterLab on this machine")
    p.add_argument("--notebook-dir", default="notebooks", help="folder JupyterLab shows")
    p.add_argument("--data", help="data folder the notebooks open (default config data.root)")
    p.add_argument("--port", type=positive_int, help="default: a free port")
    p.add_argument("--timeout", type=float, default=60, help="seconds to wait for JupyterLab")


def _lab_here(a: argparse.Namespace) -> int:
    from pangeo_hpc import config
    from pangeo_hpc.lab.setup import local_instructions, start_local_lab

    lab = start_local_lab(
        notebook_dir=a.notebook_dir,
        data_root=a.data or config.get("data.root"),
        port=a.port,
        timeout=a.timeout,
    )
    print(local_instructions(lab), flush=True)
    try:
        code = lab.process.wait()
    except KeyboardInterrupt:
        print("stopping JupyterLab", flush=True)
        lab.stop()
        return 130
    return code


def _lab_config_args(p: argparse.ArgumentParser) -> None:
    from pangeo_hpc.lab.tunnel import HUB_LINK, PROXY_LINK

    p.add_argument("--data", help="data folder the notebooks open")
    p.add_argument(
        "--link",
        default=PROXY_LINK,
        help=f"dashboard link template (default {PROXY_LINK}; JupyterHub, binder: {HUB_LINK})",
    )
    p.add_argument(
        "--out",
        help="file or s3://BUCKET/KEY to write (default ~/.config/dask/pangeo-hpc-lab.yaml)",
    )
    add_s3_args(p)


def _lab_config(a: argparse.Namespace) -> int:
    from pangeo_hpc.lab.setup import write_lab_config

    opts = s3_options_from(a, None, a.out)  # --data is only written into the file
    path = write_lab_config(a.out, data_root=a.data, link=a.link, s3=opts.for_writing())
    print(f"wrote {path}")
    return 0


VERBS = [
    Verb(
        "profiles",
        "list the site profiles (cores, memory, price per node)",
        "List the site profiles: the shipped ones and those of your Dask config "
        "(~/.config/dask/pangeo-hpc.yaml, under pangeo-hpc.profiles).",
        lambda p: None,
        _profiles,
    ),
    Verb(
        "job-script",
        "print the batch script Dask workers are started with",
        "Print the batch script (Slurm, PBS or Grid Engine) that Dask workers are started "
        "with, from a site profile and the options given; nothing is submitted.",
        add_cluster_args,
        _job_script,
    ),
    Verb(
        "lab",
        "start JupyterLab as a Slurm job (--here: on this machine)",
        "Start JupyterLab as a Slurm job on a compute node and print the ssh tunnel line and "
        "the URL (with its token). With --here: on this machine (see lab --here --help).",
        _lab_args,
        _lab,
    ),
    Verb(
        "lab-config",
        "write the Dask settings JupyterLab sessions need",
        "Write the Dask config JupyterLab sessions need: the dashboard link through "
        "jupyter-server-proxy, dask-labextension's cluster factory, the data folder.",
        _lab_config_args,
        _lab_config,
    ),
    Verb(
        "tunnel",
        "print the ssh line for the dashboard and JupyterLab",
        "Print the ssh line that forwards the Dask dashboard and JupyterLab from a compute "
        "node to your laptop.",
        _tunnel_args,
        _tunnel,
    ),
]
#: ``lab --here``: JupyterLab on this machine, with options of its own
LAB_HERE = Verb(
    "lab --here",
    "start JupyterLab on this machine",
    "Start JupyterLab on 127.0.0.1 with the Dask dashboard inside it (/proxy/PORT/status) "
    "and the data the notebooks open; print the URL.",
    _lab_here_args,
    _lab_here,
)
