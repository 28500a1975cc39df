"""Argument parsing shared by the verbs: the verb type, one-line errors that name flags,
numbers, cluster and S3 options."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from pangeo_hpc.errors import InputError, redact

#: how the command line spells the library's parameters: errors of the library name them
#: as ``price='abc'`` (:class:`pangeo_hpc.errors.InputError` ``param``), the CLI shows the flag
FLAGS: dict[str, str] = {
    # data and period
    "data": "--data",
    "source": "--data",  # open_era5(source=...) is the run's --data
    "data_root": "--data",  # lab --here
    "start": "--start",
    "end": "--end",
    "variable": "--variable",
    # outputs
    "out": "--out",
    "store": "--out",  # convert
    "overwrite": "--overwrite",
    "chunk_mb": "--chunk-mb",
    "clevel": "--clevel",
    "codec": "--codec",
    "warm_inputs": "--warmup",
    # plan and calibrate
    "size": "--size",
    "price": "--price",
    "nodes": "--nodes",
    "chunk": "--chunk",
    "storage": "--storage",
    "ratio": "--ratio",
    "startup": "--startup",
    "calibration": "--calibration",
    "budget": "--budget",
    "amount": "--amount",
    "repeat": "--repeat",
    "simulate_workers": "--simulate-workers",
    # clusters and JupyterLab
    "kind": "--cluster",
    "profile": "--profile",
    "workers": "--workers",
    "jobs": "--jobs",
    "adapt": "--adapt",
    "cores": "--cores",
    "processes": "--processes",
    "memory": "--memory",
    "walltime": "--walltime",
    "queue": "--queue",
    "interface": "--interface",
    "ip": "--ip",
    # S3
    "anon": "--anon",
    "endpoint_url": "--endpoint-url",
    "index": "--index",
}
#: where a verb spells a parameter otherwise (``calibrate(path=...)`` is ``--calibration``)
VERB_FLAGS: dict[str, dict[str, str]] = {
    "calibrate": {"path": "--calibration"},
    "lab-config": {"path": "--out"},
}
#: what may follow ``name=`` in a message as its value (then a space goes between flag and it)
_VALUE = re.compile(r"[\w'\"\[{(<-]")


def program_name(argv0: str | None = None) -> str:
    """How the user called the CLI, for usage lines and hints.

    Parameters
    ----------
    argv0 : str, optional
        The path the process was started as; default ``sys.argv[0]``.

    Returns
    -------
    str
        ``pangeo-hpc`` for the console script, else ``python -m pangeo_hpc.run`` (or
        ``python -m pangeo_hpc.cli.main``, run as that module).

    Examples
    --------
    >>> program_name("/home/ana/.local/bin/pangeo-hpc")
    'pangeo-hpc'
    >>> program_name("/home/ana/pangeo_hpc/run.py")
    'python -m pangeo_hpc.run'
    """
    path = Path(sys.argv[0] if argv0 is None else argv0)
    if path.name.startswith("pangeo-hpc"):
        return "pangeo-hpc"
    if path.name == "main.py" and path.parent.name == "cli":
        return "python -m pangeo_hpc.cli.main"
    return "python -m pangeo_hpc.run"


def for_cli(exc: BaseException, prog: str, verb: str | None = None) -> str:
    """The message of ``exc`` as the command line says it.

    The calls it suggests become commands (``calibrate('x')``: ``python -m pangeo_hpc.run
    calibrate x``), the parameters it names become flags through :data:`FLAGS` and the
    verb's :data:`VERB_FLAGS` (``price='abc'``: ``--price 'abc'``, ``anon=True``:
    ``--anon``, ``start=/end=``: ``--start/--end``). Only what the error declares is
    rewritten (:class:`pangeo_hpc.errors.Hinted`'s ``param`` and ``commands``).

    Parameters
    ----------
    exc : BaseException
        The error; one without ``param`` and ``commands`` keeps its message.
    prog : str
        How the CLI was called (:func:`program_name`).
    verb : str, optional
        The verb that ran, for its own spellings.

    Returns
    -------
    str
        One line for ``error: ...`` on stderr, with the credentials of any URL in it hidden
        (:func:`pangeo_hpc.errors.redact`).

    Examples
    --------
    >>> from pangeo_hpc.errors import InputError
    >>> for_cli(InputError("price='abc' is not a number: pass price=0.05", param="price"),
    ...         "pangeo-hpc")
    "--price 'abc' is not a number: pass --price 0.05"
    >>> err = InputError("no calibration: run calibrate('hpc')",
    ...                  commands={"calibrate('hpc')": ["calibrate", "hpc"]})
    >>> for_cli(err, "pangeo-hpc")
    'no calibration: run `pangeo-hpc calibrate hpc`'
    """
    text = str(exc)
    for call, words in getattr(exc, "commands", {}).items():
        text = text.replace(call, f"`{prog} {shlex.join(words)}`")
    flags = {**FLAGS, **VERB_FLAGS.get(verb or "", {})}
    for name in getattr(exc, "param", ()):
        flag = flags.get(name)
        if flag is None:
            continue

        def spelled(m: re.Match[str], flag: str = flag) -> str:
            if m.group(1):  # name=True: a switch
                return flag
            return flag + (" " if _VALUE.match(m.string, m.end()) else "")

        text = re.sub(rf"(?<![\w.-]){re.escape(name)}=(True(?!\w))?", spelled, text)
    return redact(text)


class Verb(NamedTuple):
    """A verb of the command line: its name, one line for the list of verbs, the text of
    its ``--help``, a function that adds its arguments and one that runs it.

    Parameters
    ----------
    name : str
        The verb as typed after ``python -m pangeo_hpc.run``.
    help : str
        One line for the list of verbs.
    description : str
        The text of the verb's ``--help``.
    args : Callable[[argparse.ArgumentParser], None]
        Adds the verb's arguments to its parser.
    run : Callable[[argparse.Namespace], int]
        Runs the verb on the parsed arguments and returns the exit code.

    Examples
    --------
    >>> def add_name(parser):
    ...     parser.add_argument("name")
    >>> verb = Verb(name="hello", help="say hello", description="Say hello to NAME.",
    ...             args=add_name, run=lambda a: print("hello", a.name))
    >>> parser = Parser(prog="pangeo-hpc hello", description=verb.description)
    >>> verb.args(parser)
    >>> verb.run(parser.parse_args(["ana"]))
    hello ana
    """

    name: str
    help: str
    description: str
    args: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are :class:`~pangeo_hpc.errors.InputError` naming
    ``--help`` (exit 2 through ``main``), instead of argparse's own exit.

    Parameters
    ----------
    prog, usage, description, epilog, parents, formatter_class, prefix_chars, \
fromfile_prefix_chars, argument_default, conflict_handler, add_help, allow_abbrev, \
exit_on_error : optional
        As :class:`argparse.ArgumentParser`'s.

    Examples
    --------
    >>> parser = Parser(prog="pangeo-hpc")
    >>> parser.parse_args(["--nope"])
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: unrecognized arguments: --nope (see `pangeo-hpc --help`)
    """

    def error(self, message: str) -> None:  # type: ignore[override]
        """Raise the usage error ``message`` as an :class:`~pangeo_hpc.errors.InputError`
        naming ``--help``.

        Parameters
        ----------
        message : str
            argparse's message.

        Raises
        ------
        InputError
            Always.

        Examples
        --------
        >>> Parser(prog="pangeo-hpc plan").error("the following arguments are required: recipe")
        Traceback (most recent call last):
        ...
        pangeo_hpc.errors.InputError: the following ... recipe (see `pangeo-hpc plan --help`)
        """
        raise InputError(f"{message} (see `{self.prog} --help`)")


def positive_int(text: str) -> int:
    """The ``type=`` of options that take a count of 1 or more (``--workers``, ``--jobs``).

    Parameters
    ----------
    text : str
        The option's value as typed.

    Returns
    -------
    int
        The count.

    Raises
    ------
    argparse.ArgumentTypeError
        If ``text`` is not a whole number of at least 1 (argparse names the option).

    Examples
    --------
    >>> positive_int("4")
    4
    >>> positive_int("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: '0' is not a positive whole number, e.g. 2
    """
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
    """Add the cluster options every verb that computes shares (``--cluster``, ``--profile``,
    ``--workers``, ``--jobs``, ``--adapt`` and the batch jobs' ``--queue``, ``--account``,
    ...).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The verb's parser; the options go in its group ``cluster``.

    Examples
    --------
    >>> parser = Parser(prog="pangeo-hpc run")
    >>> add_cluster_args(parser)
    >>> a = parser.parse_args(["--workers", "4", "--queue", "normal"])
    >>> a.cluster, a.workers, a.queue
    ('local', 4, 'normal')
    """
    g = p.add_argument_group("cluster")
    g.add_argument(
        "--cluster",
        default="local",
        choices=("auto", "local", "slurm", "pbs", "sge", "gateway"),
        help="where the workers run (default local; auto: Slurm if it answers; gateway: "
        "the dask-gateway of gateway.address, e.g. DASK_GATEWAY__ADDRESS)",
    )
    g.add_argument("--profile", help="site profile (the profiles verb lists them)")
    g.add_argument("--workers", type=positive_int, help="local worker processes, gateway workers")
    g.add_argument("--jobs", type=positive_int, help="batch jobs to submit (default 1)")
    g.add_argument(
        "--adapt",
        type=_job_range,
        metavar="MIN:MAX",
        help="batch jobs (gateway workers) between MIN and MAX as the load asks, e.g. 1:8",
    )
    for opt in ("queue", "account", "walltime", "memory", "interface"):
        g.add_argument(f"--{opt}", help=f"batch jobs' {opt} (overrides the profile)")
    g.add_argument("--cores", type=positive_int, help="cores per batch job")
    g.add_argument("--processes", type=positive_int, help="worker processes per batch job")


def batch_options_from(a: argparse.Namespace) -> dict:
    """The batch-job options given on the command line (``--queue``, ``--account``,
    ``--walltime``, ``--memory``, ``--interface``, ``--cores``, ``--processes``), those left
    out omitted.

    Parameters
    ----------
    a : argparse.Namespace
        The parsed arguments of a verb with :func:`add_cluster_args`.

    Returns
    -------
    dict
        Option name -> value, for the cluster's keyword arguments (they override the
        profile).

    Examples
    --------
    >>> parser = Parser(prog="pangeo-hpc run")
    >>> add_cluster_args(parser)
    >>> batch_options_from(parser.parse_args(["--queue", "normal", "--walltime", "01:00:00"]))
    {'queue': 'normal', 'walltime': '01:00:00'}
    """
    keys = ("queue", "account", "walltime", "memory", "interface", "cores", "processes")
    return {k: getattr(a, k) for k in keys if getattr(a, k) is not None}


def add_s3_args(p: argparse.ArgumentParser, *, index: bool = False) -> None:
    """``--endpoint-url``, ``--anon`` (as the AWS CLI spells them), ``--index``: the S3
    options of every verb that reads or writes ``s3://`` (one definition; the verb turns
    them into :class:`~pangeo_hpc.s3.options.S3Options` with :func:`s3_options_from`).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The verb's parser; the options go in a group of their own.
    index : bool, optional
        Whether to add ``--index`` too (the verbs that read NetCDF from ``s3://``
        through a reference index).

    Examples
    --------
    >>> parser = Parser(prog="pangeo-hpc inventory")
    >>> add_s3_args(parser)
    >>> parser.parse_args(["--endpoint-url", "http://localhost:8333", "--anon"])
    Namespace(endpoint_url='http://localhost:8333', anon=True)
    """
    g = p.add_argument_group(
        "S3 (for s3:// sources and outputs; credentials from the usual AWS chain)"
    )
    g.add_argument("--endpoint-url", help="S3-compatible endpoint, e.g. http://127.0.0.1:8333")
    g.add_argument("--anon", action="store_true", help="no credentials (public buckets)")
    if index:
        g.add_argument(
            "--index",
            choices=("auto", "build", "never"),
            help="byte-range indexes: use when cached (auto, default), build missing, never",
        )


def _listed(value: object) -> list[object]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [v for v in value if v is not None]
    return [value]


def s3_options_from(
    a: argparse.Namespace, source: object = None, out: object = None, *, always: bool = False
):
    """The S3 options of the parsed :func:`add_s3_args` flags, for reading.

    ``source`` and ``out`` are what the verb reads and writes: a path or URL, or a list of
    them (``None`` left out). The flags are refused unless one of them is ``s3://``
    (``--index`` needs an ``s3://`` source), or ``always`` (a verb of S3 alone, such as
    ``inventory``: its URL is checked where it is read). Outputs take
    :meth:`~pangeo_hpc.s3.options.S3Options.for_writing` of the result (never anonymous).

    Parameters
    ----------
    a : argparse.Namespace
        The parsed arguments of a verb with :func:`add_s3_args`.
    source : object, optional
        What the verb reads: a path or URL, a list of them, or ``None``.
    out : object, optional
        What the verb writes: a path or URL, a list of them, or ``None``.
    always : bool, optional
        Accept the flags without an ``s3://`` source or output (a verb of S3 alone).

    Returns
    -------
    S3Options
        The options to read with (:meth:`~pangeo_hpc.s3.options.S3Options.resolve` of
        the flags).

    Raises
    ------
    InputError
        If an S3 flag is given and neither ``source`` nor ``out`` is ``s3://`` (nor
        ``always``), or ``--index`` without an ``s3://`` source.

    Examples
    --------
    >>> parser = Parser(prog="pangeo-hpc inventory")
    >>> add_s3_args(parser)
    >>> a = parser.parse_args(["--endpoint-url", "http://localhost:8333", "--anon"])
    >>> s3_options_from(a, "s3://era5-pds/2019")
    S3Options(endpoint_url='http://localhost:8333', anon=True, region=None, profile=None)
    """
    from pangeo_hpc.s3.options import S3Options, is_s3

    reads, writes = _listed(source), _listed(out)
    given = [f for f in ("endpoint_url", "anon", "index") if getattr(a, f, None)]
    on_s3 = always or any(is_s3(s) for s in reads)
    if given and not on_s3 and not (any(is_s3(o) for o in writes) and "index" not in given):
        flags = ", ".join("--" + f.replace("_", "-") for f in given)
        what = ", ".join(repr(str(v)) for v in (*reads, *writes)) or "nothing on S3"
        raise InputError(
            f"{flags} apply to s3:// sources only (and s3:// outputs), not {what}: drop them"
        )
    return S3Options.resolve(endpoint_url=a.endpoint_url, anon=a.anon or None)


def running_cluster_from(a: argparse.Namespace):
    """The cluster of the parsed ``add_cluster_args`` flags (``running_cluster``'s context).

    Parameters
    ----------
    a : argparse.Namespace
        The parsed arguments of a verb with :func:`add_cluster_args`.

    Returns
    -------
    contextmanager
        The context of :func:`~pangeo_hpc.clusters.start.running_cluster` for those
        flags: entered, it yields the Dask client.

    Examples
    --------
    >>> parser = Parser(prog="pangeo-hpc run")
    >>> add_cluster_args(parser)
    >>> a = parser.parse_args(["--workers", "2"])
    >>> with running_cluster_from(a) as client:  # doctest: +SKIP
    ...     print(client.dashboard_link)
    """
    from pangeo_hpc.clusters.start import running_cluster

    return running_cluster(
        a.cluster,
        profile=a.profile,
        workers=a.workers,
        jobs=a.jobs,
        adapt=a.adapt,
        **batch_options_from(a),
    )
