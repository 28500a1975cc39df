"""Command line: ``python -m pangeo_hpc.run VERB ...``; the verbs live in ``pangeo_hpc.cli``.

Verbs: demo-data, list, RECIPE, convert (data.py);
profiles, job-script, tunnel, lab, lab-config (clusters.py);
hydration, warmup, stage, survey (storage.py);
index (index.py); inventory (s3.py); plan, calibrate (plan.py).

Exit codes: 0 success, 2 bad input (one line on stderr naming the value and the fix),
1 a failure while running (one line: storage, the cluster, a task whose workers died, no
space left for the outputs; or a traceback for an internal error), 130 interrupted.
warmup, stage and index go on past files that fail, list them at the end and exit with 1.
"""

from __future__ import annotations

import signal
import sys
import threading
import traceback
from collections.abc import Sequence

from distributed import KilledWorker

from pangeo_hpc.cli.clusters import _job_script, _lab, _lab_config, _profiles, _tunnel
from pangeo_hpc.cli.data import _convert, _demo_data, _list, _recipe
from pangeo_hpc.cli.index import _index
from pangeo_hpc.cli.logs import library_lines
from pangeo_hpc.cli.plan import _calibrate, _plan
from pangeo_hpc.cli.s3 import _inventory
from pangeo_hpc.cli.storage import _hydration, _stage, _survey, _warmup
from pangeo_hpc.clusters.diagnostics import lost_task
from pangeo_hpc.errors import ClusterError, InputError, StorageError


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


_VERBS = {
    "demo-data": _demo_data,
    "list": _list,
    "convert": _convert,
    "profiles": _profiles,
    "job-script": _job_script,
    "tunnel": _tunnel,
    "lab": _lab,
    "lab-config": _lab_config,
    "hydration": _hydration,
    "warmup": _warmup,
    "stage": _stage,
    "survey": _survey,
    "index": _index,
    "inventory": _inventory,
    "plan": _plan,
    "calibrate": _calibrate,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    _interruptible()
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        print(
            f"\nverbs: {', '.join(_VERBS)}, or the name of a recipe (see `list`); each has --help"
        )
        return 0 if args else 2
    try:
        with library_lines():  # the library's logging INFO lines on stdout
            if args[0] in _VERBS:
                return _VERBS[args[0]](args[1:])
            return _recipe(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (ClusterError, StorageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KilledWorker as exc:  # workers died running one task too often
        print(f"error: {lost_task(exc)}", file=sys.stderr)
        return 1
    except PermissionError as exc:  # a path the user may not read or write: their input
        where = exc.filename if exc.filename is not None else "a path"
        print(
            f"error: permission denied on {str(where)!r}: ask its owner for access, "
            "or choose a path you can read (and write, for --out)",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception:
        traceback.print_exc()
        print("internal error: the traceback above is a bug; please report it", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
