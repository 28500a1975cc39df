"""Argument parsing shared by the verbs: one-line errors, numbers, cluster and S3 options.

The verb modules of :mod:`pangeo_hpc.cli` build their parsers from these: :class:`Parser`,
the argument types (:func:`positive_int`), the option groups (:func:`add_cluster_args`,
:func:`add_s3_args`) and what the parsed options give (:func:`batch_options_from`,
:func:`running_cluster_from`, :func:`s3_options_from`).
"""

from __future__ import annotations

import argparse
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from pangeo_hpc.errors import InputError

if TYPE_CHECKING:
    from distributed import Client

    from pangeo_hpc.s3.options import S3Options


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one-line :class:`~pangeo_hpc.errors.InputError`
    naming the verb's ``--help`` (the CLI exits with code 2), instead of a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(
            f"{message} (see `python -m pangeo_hpc.run {self.prog.split()[-1]} --help`)"
        )


def positive_int(text: str) -> int:
    """``type=`` of an option that takes a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number, e.g. 2")
    return value


def _job_range(text: str) -> tuple[int, int]:
    lo, sep, hi = text.partition(":")
    if sep and lo.isdigit() and hi.isdigit() and 1 <= int(lo) <= int(hi):
        return int(lo), int(hi)
    raise argparse.ArgumentTypeError(f"{text!r} is not MIN:MAX jobs with 1 <= MIN <= MAX, e.g. 1:8")


def add_cluster_args(p: argparse.ArgumentParser) -> None:
    """Add the "cluster" option group: ``--cluster``, ``--profile``, ``--workers``,
    ``--jobs``, ``--adapt`` and the batch jobs' resources (``--queue`` ... ``--processes``)."""
    g = p.add_argument_group("cluster")
    g.add_argument(
        "--cluster",
        default="local",
        choices=("auto", "local", "slurm", "pbs", "sge"),
        help="where the workers run (default local; auto: Slurm if it answers)",
    )
    g.add_argument("--profile", help="site profile (see `profiles`)")
    g.add_argument("--workers", type=positive_int, help="local worker processes")
    g.add_argument("--jobs", type=positive_int, help="batch jobs to submit (default 1)")
    g.add_argument(
        "--adapt",
        type=_job_range,
        metavar="MIN:MAX",
        help="batch jobs between MIN and MAX as the load asks, e.g. 1:8",
    )
    for opt in ("queue", "account", "walltime", "memory", "interface"):
        g.add_argument(f"--{opt}", help=f"batch jobs' {opt} (overrides the profile)")
    g.add_argument("--cores", type=positive_int, help="cores per batch job")
    g.add_argument("--processes", type=positive_int, help="worker processes per batch job")


def batch_options_from(a: argparse.Namespace) -> dict[str, Any]:
    """The batch-job overrides given among :func:`add_cluster_args`' options, as keyword
    arguments of :func:`~pangeo_hpc.clusters.start.get_cluster`."""
    keys = ("queue", "account", "walltime", "memory", "interface", "cores", "processes")
    return {k: getattr(a, k) for k in keys if getattr(a, k) is not None}


def add_s3_args(p: argparse.ArgumentParser, *, index: bool = False) -> None:
    """Add the S3 option group: ``--endpoint-url``, ``--anon`` (as the AWS CLI spells them),
    and with ``index`` also ``--index``."""
    g = p.add_argument_group("S3 (for s3:// sources; credentials from the usual AWS chain)")
    g.add_argument("--endpoint-url", help="S3-compatible endpoint, e.g. http://127.0.0.1:8333")
    g.add_argument("--anon", action="store_true", help="no credentials (public buckets)")
    if index:
        g.add_argument(
            "--index",
            choices=("auto", "build", "never"),
            help="byte-range indexes: use when cached (auto, default), build missing, never",
        )


def s3_options_from(a: argparse.Namespace, source: object) -> S3Options:
    """The S3 options of the parsed flags; refuses them for a source that is not s3://."""
    from pangeo_hpc.s3.options import S3Options, is_s3

    given = [f for f in ("endpoint_url", "anon", "index") if getattr(a, f, None)]
    if given and not is_s3(source):
        flags = ", ".join("--" + f.replace("_", "-") for f in given)
        raise InputError(f"{flags} apply to s3:// sources only, not {source!r}")
    return S3Options.resolve(endpoint_url=a.endpoint_url, anon=a.anon or None)


def running_cluster_from(a: argparse.Namespace) -> AbstractContextManager[tuple[Any, Client]]:
    """The cluster of the parsed :func:`add_cluster_args` options, as
    :func:`~pangeo_hpc.clusters.start.running_cluster`'s context ``(cluster, client)``."""
    from pangeo_hpc.clusters.start import running_cluster

    return running_cluster(
        a.cluster,
        profile=a.profile,
        workers=a.workers,
        jobs=a.jobs,
        adapt=a.adapt,
        **batch_options_from(a),
    )
