"""The command line: ``pangeo-hpc VERB ...`` or ``python -m pangeo_hpc.run VERB ...``.

One argparse subparser per verb; the verbs live by area in ``pangeo_hpc.cli`` (each module's
``VERBS``). A first word that is not a verb is a recipe: ``RECIPE ...`` is ``run RECIPE ...``.

Exit codes: 0 success, 2 bad input (one line on stderr naming the value and the fix, in
flags: :func:`pangeo_hpc.cli.common.for_cli`), 1 a failure while running (one line: storage,
the cluster, a task whose workers died, no space left for the outputs; or a traceback for an
internal error), 3 a run stopped because its cluster spent the budget (``--budget``; its
states are saved: the same command again resumes), 130 interrupted, 141 the reader of the
output left (``... | head``: nothing more is printed). warmup, stage and index
go on past files that fail, list them at the end and exit with 1.
"""

from __future__ import annotations

import argparse
import atexit
import os
import signal
import sys
import threading
import traceback
from collections.abc import Sequence

from pangeo_hpc.cli import cache, clusters, data, index, plan, provenance, s3, storage
from pangeo_hpc.cli.common import Parser, Verb, for_cli, program_name
from pangeo_hpc.cli.logs import library_lines, quiet
from pangeo_hpc.errors import BudgetSpent, ClusterError, InputError, StorageError, redact

#: every verb, in the order ``--help`` lists them
VERBS: list[Verb] = [
    *data.VERBS,
    *plan.VERBS,
    *clusters.VERBS,
    *storage.VERBS,
    *s3.VERBS,
    *index.VERBS,
    *cache.VERBS,
    *provenance.VERBS,
]

_DESCRIPTION = """\
ERA5-scale NetCDF analysis with Dask on HPC and cloud clusters: run recipes,
plan and calibrate their cost, look after clusters, JupyterLab and storage."""
_EPILOG = """\
A recipe runs by its name alone, or after run (for one named like a verb):
  PROG era5-sst-mean --data DIR
  PROG run era5-sst-mean --data DIR
Each verb has --help.

exit codes: 0 success, 2 bad input (one line naming the value and the fix),
1 a failure while running, 3 stopped: the budget (--budget) was spent (the
same command again resumes), 130 interrupted, 141 the output's reader left."""


def _interruptible() -> None:
    """Ctrl-C and SIGTERM unwind the run, so that clusters close and batch jobs are cancelled.

    Installed explicitly: a process started in the background by a shell inherits SIGINT
    ignored, and Python then never raises KeyboardInterrupt.
    """

    def terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, terminate)


class _Help(argparse.RawDescriptionHelpFormatter):
    """The verbs in one column: argparse indents them deeper than it measures them."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=18)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):
            self._action_max_length += 2


def _add(parent: argparse._SubParsersAction, verb: Verb, prog: str, flags: bool) -> Parser:
    p = parent.add_parser(
        verb.name,
        prog=f"{prog} {verb.name}",
        help=verb.help.replace("PROG", prog),
        description=verb.description.replace("PROG", prog),
    )
    if flags:
        verb.args(p)
    p.set_defaults(run=verb.run)
    return p


def build_parser(
    prog: str | None = None, only: str | None = None
) -> tuple[Parser, dict[str, Parser]]:
    """The parser of the command line, and each verb's parser by name.

    Parameters
    ----------
    prog : str, optional
        How the user called it (usage lines and hints); default from ``sys.argv[0]``
        (:func:`pangeo_hpc.cli.common.program_name`).
    only : str, optional
        Build that verb's parser alone (the others are left out, so the command starts
        faster); ``None`` builds all.

    Returns
    -------
    (parser, dict)
        The top-level parser (``--help`` lists the verbs) and the verbs' parsers.

    Examples
    --------
    >>> parser, verbs = build_parser(prog="pangeo-hpc")
    >>> verbs["plan"].prog
    'pangeo-hpc plan'
    >>> "inventory" in verbs
    True
    """
    prog = prog or program_name()
    parser = Parser(
        prog=prog,
        description=_DESCRIPTION,
        epilog=_EPILOG.replace("PROG", prog),
        formatter_class=_Help,
    )
    sub = parser.add_subparsers(title="verbs", dest="verb", metavar="VERB", required=True)
    parsers = {verb.name: _add(sub, verb, prog, only in (None, verb.name)) for verb in VERBS}
    return parser, parsers


def _lab_here_parser(prog: str) -> Parser:
    verb = clusters.LAB_HERE
    p = Parser(prog=f"{prog} {verb.name}", description=verb.description)
    verb.args(p)
    p.set_defaults(run=verb.run, verb=verb.name)
    return p


def _parse(args: list[str], prog: str) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code of ``--help`` (argparse exits after it)."""
    names = {verb.name for verb in VERBS}
    if args and args[0] not in names and args[0] not in ("-h", "--help"):
        args = ["run", *args]  # a recipe by name, as the README shows
    parser, parsers = build_parser(prog, only=args[0] if args else "")
    if args[:1] == ["lab"] and "--here" in args[1:]:
        parser = _lab_here_parser(prog)
        args = args[1:]
    try:
        a, extra = parser.parse_known_args(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    if extra:  # named by the verb's parser, whose --help lists what it takes
        parsers.get(a.verb, parser).error(f"unrecognized arguments: {' '.join(extra)}")
    return a


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code.

    Parameters
    ----------
    argv : Sequence[str], optional
        The arguments after the program's name; ``None`` takes ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit code: 0 done, 2 bad input (one line on stderr), others as the verb
        says.

    Examples
    --------
    >>> main(["plan", "--nope"])  # bad input: one line on stderr, exit code 2
    2
    """
    _interruptible()
    args = list(sys.argv[1:] if argv is None else argv)
    prog = program_name()
    if not args:
        build_parser(prog)[0].print_help()
        return 2
    verb = None
    try:
        a = _parse(args, prog)
        if isinstance(a, int):
            return a
        verb = a.verb
        with library_lines():  # the library's logging INFO lines on stdout
            return a.run(a)
    except InputError as exc:
        print(f"error: {for_cli(exc, prog, verb)}", file=sys.stderr)
        return 2
    except (ClusterError, StorageError) as exc:
        print(f"error: {for_cli(exc, prog, verb)}", file=sys.stderr)
        return 1
    except PermissionError as exc:  # a path the user may not read or write: their input
        where = redact(str(exc.filename)) if exc.filename is not None else "a path"
        print(
            f"error: permission denied on {where!r}: ask its owner for access, "
            "or choose a path you can read (and write, for --out)",
            file=sys.stderr,
        )
        return 2
    except BudgetSpent as exc:
        print(f"stopped: {for_cli(exc, prog, verb)}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `... | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's last flush at exit must not fail
        return 128 + signal.SIGPIPE
    except Exception as exc:
        if _killed_worker(exc):  # workers died running one task too often
            from pangeo_hpc.clusters.diagnostics import lost_task

            print(f"error: {for_cli(lost_task(exc), prog, verb)}", file=sys.stderr)
            return 1
        print(redact(traceback.format_exc()), end="", file=sys.stderr)
        print("internal error: the traceback above is a bug; please report it", file=sys.stderr)
        return 1


def _killed_worker(exc: BaseException) -> bool:
    """Whether ``exc`` is distributed's ``KilledWorker`` (checked without importing
    distributed: a run that never started a cluster cannot have raised it)."""
    distributed = sys.modules.get("distributed")
    return distributed is not None and isinstance(exc, distributed.KilledWorker)


def console() -> None:
    """The ``pangeo-hpc`` command and ``python -m pangeo_hpc.run``: :func:`main`, then the
    process ends without tearing the interpreter down (:func:`exit_now`).

    Examples
    --------
    >>> console()  # as `pangeo-hpc plan recipe.yaml`, then the process ends  # doctest: +SKIP
    """
    try:
        code = main()
    except BrokenPipeError:  # the answer printed to a reader that left (`| head`)
        quiet(sys.stdout)
        code = 141  # as a command that SIGPIPE ended: 128 + 13
    exit_now(code)


def exit_now(code: int) -> None:
    """End this process with ``code`` once the exit handlers ran and the output is out,
    skipping the interpreter's teardown.

    After the answer is printed, tearing down the modules of the scientific stack one by
    one (xarray, dask, distributed, numba, matplotlib, HDF5) took 0.9 s of every command on
    the 2-core VM, 2 s when it was loaded. Nothing of a run lives in that teardown: outputs
    are closed and renamed into place, logging is flushed and temporary folders are removed
    by their ``atexit`` handlers, which run here first. A non-daemon thread still running
    (a notebook's, never the command line's) is waited for as a normal exit would.

    Parameters
    ----------
    code : int
        The process's exit code.

    Examples
    --------
    >>> exit_now(main(["plan", "recipe.yaml"]))  # the process ends  # doctest: +SKIP
    """
    if any(not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    atexit._run_exitfuncs()  # what sys.exit would run: logging, finalizers, temporary folders
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that left, a closed stream: nothing to say
            pass
    os._exit(code)


if __name__ == "__main__":
    console()
