"""Command line: ``python -m pangeo_hpc.run {demo-data, list, RECIPE} ...``.

Exit codes: 0 success, 2 bad input (one line on stderr naming the value and the fix),
1 internal failure, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import traceback
from collections.abc import Sequence

from .errors import ClusterError, InputError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(
            f"{message} (see `python -m pangeo_hpc.run {self.prog.split()[-1]} --help`)"
        )


def _positive_int(text: str) -> int:
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


def _cluster_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster")
    g.add_argument(
        "--cluster",
        default="local",
        choices=("auto", "local", "slurm", "pbs", "sge"),
        help="where the workers run (default local; auto: Slurm if it answers)",
    )
    g.add_argument("--profile", help="site profile (see `profiles`)")
    g.add_argument("--workers", type=_positive_int, help="local worker processes")
    g.add_argument("--jobs", type=_positive_int, help="batch jobs to submit (default 1)")
    g.add_argument(
        "--adapt",
        type=_job_range,
        metavar="MIN:MAX",
        help="batch jobs between MIN and MAX as the load asks, e.g. 1:8",
    )
    for opt in ("queue", "account", "walltime", "memory", "interface"):
        g.add_argument(f"--{opt}", help=f"batch jobs' {opt} (overrides the profile)")
    g.add_argument("--cores", type=_positive_int, help="cores per batch job")
    g.add_argument("--processes", type=_positive_int, help="worker processes per batch job")


def _batch(a: argparse.Namespace) -> dict:
    keys = ("queue", "account", "walltime", "memory", "interface", "cores", "processes")
    return {k: getattr(a, k) for k in keys if getattr(a, k) is not None}


def _profiles(argv: Sequence[str]) -> int:
    from . import profiles

    _Parser(prog="profiles", description="List the site profiles.").parse_args(argv)
    for name in profiles.names():
        print(f"{name:20s} {profiles.describe(name)}")
    return 0


def _job_script(argv: Sequence[str]) -> int:
    from .cluster import get_cluster, kind_of

    p = _Parser(prog="job-script", description="Print the batch script workers are started with.")
    _cluster_args(p)
    a = p.parse_args(argv)
    kind = a.cluster if a.cluster != "local" else "auto"
    cluster = get_cluster(kind, profile=a.profile, preview=True, **_batch(a))
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


def _tunnel(argv: Sequence[str]) -> int:
    from .tunnel import tunnel_command

    p = _Parser(
        prog="tunnel",
        description="Print the ssh line that forwards the dashboard "
        "and JupyterLab from a compute node to your laptop.",
    )
    p.add_argument("--login", required=True, help="login host you ssh to, e.g. hpc.example.org")
    p.add_argument("--user", help="your user name there")
    p.add_argument("--node", help="host running the services (default: this one)")
    p.add_argument("--dashboard-port", type=_positive_int, default=8787)
    p.add_argument("--lab-port", type=_positive_int, help="JupyterLab's port, if running")
    p.add_argument("--local-port", type=_positive_int, help="port on your laptop (default same)")
    a = p.parse_args(argv)
    ports = {"dashboard": a.dashboard_port}
    if a.lab_port:
        ports["jupyterlab"] = a.lab_port
    print(
        tunnel_command(
            login=a.login, user=a.user, node=a.node, ports=ports, local_base=a.local_port
        )
    )
    return 0


def _lab(argv: Sequence[str]) -> int:
    from .lab import instructions, submit_lab

    p = _Parser(
        prog="lab",
        description="Start JupyterLab as a Slurm job on a compute node "
        "and print the ssh tunnel line and the URL (with its token).",
    )
    p.add_argument("--login", help="login host you ssh to (for the tunnel line)")
    p.add_argument("--user", help="your user name there")
    p.add_argument("--walltime", default="02:00:00")
    p.add_argument("--cores", type=_positive_int, default=1)
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
    a = p.parse_args(argv)
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


def _hydration(argv: Sequence[str]) -> int:
    from .storage import hydration

    p = _Parser(
        prog="hydration",
        description="How much of a tree is loaded on a lazily "
        "loading file system (FSx for Lustre, rclone mount, any cache).",
    )
    p.add_argument("path")
    p.add_argument("--json", action="store_true", help="the full per-file report as JSON")
    p.add_argument("--files", action="store_true", help="one line per file")
    a = p.parse_args(argv)
    report = hydration(a.path)
    if a.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    if a.files:
        for f in report.files:
            print(f"{f.state:9s} {f.loaded:>14d} / {f.size:<14d} {f.path}")
    print(report.summary())
    return 0


def _warmup(argv: Sequence[str]) -> int:
    from .storage import warmup

    p = _Parser(
        prog="warmup",
        description="Load the bytes of lazily loaded files before a "
        "job reads them (read-through, or lfs hsm_restore on Lustre as root).",
    )
    p.add_argument("path")
    p.add_argument("--workers", type=_positive_int, help="parallel reads (default 8)")
    p.add_argument(
        "--hsm",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="use lfs hsm_restore (default: on Lustre as root)",
    )
    a = p.parse_args(argv)
    report = warmup(a.path, workers=a.workers, hsm=a.hsm, progress=_byte_progress("warmup"))
    print(report.summary())
    return 0 if not report.failed else 1


def _stage(argv: Sequence[str]) -> int:
    from .storage.stage import stage

    p = _Parser(
        prog="stage",
        description="Copy an S3 prefix or a folder to a Lustre or "
        "local folder in parallel: byte ranges, checksums, striping, resumable.",
    )
    p.add_argument("src", help="s3://bucket/prefix or a folder")
    p.add_argument("dst", help="destination folder")
    p.add_argument("--threads", type=_positive_int, default=8)
    p.add_argument("--endpoint-url", help="S3-compatible endpoint, e.g. http://127.0.0.1:8333")
    p.add_argument("--anon", action="store_true", help="no credentials (public buckets)")
    a = p.parse_args(argv)
    opts: dict = {}
    if a.src.startswith("s3://"):
        opts = {"anon": a.anon}
        if a.endpoint_url:
            opts["client_kwargs"] = {"endpoint_url": a.endpoint_url}
    elif a.anon or a.endpoint_url:
        raise InputError("--anon and --endpoint-url apply to s3:// sources only")
    report = stage(
        a.src, a.dst, storage_options=opts, threads=a.threads, progress=_byte_progress("stage")
    )
    print(report.summary())
    return 0 if not report.failed else 1


def _byte_progress(what: str):
    tty = sys.stdout.isatty()
    state = {"next": 10, "t0": time.perf_counter()}

    def show(done: int, total: int, files: int, nfiles: int) -> None:
        pct = 100 * done / total if total else 100.0
        rate = done / 1e6 / max(time.perf_counter() - state["t0"], 1e-9)
        line = (
            f"{what}: {files}/{nfiles} files, {done / 1e9:.2f}/{total / 1e9:.2f} GB, "
            f"{rate:.0f} MB/s"
        )
        if tty:
            print("\r" + line, end="" if files < nfiles else "\n", flush=True)
        elif pct >= state["next"] or files == nfiles:
            print(line, flush=True)
            state["next"] = (int(pct) // 10 + 1) * 10

    return show


def _demo_data(argv: Sequence[str]) -> int:
    from .demo import DemoSpec, generate

    p = _Parser(prog="demo-data", description="Write synthetic SST in the era5-pds layout.")
    p.add_argument("--out", required=True, help="root folder of the tree to write")
    p.add_argument("--start", help="first month, YYYY-MM (default config demo.start)")
    p.add_argument("--end", help="last month, YYYY-MM (default config demo.end)")
    p.add_argument("--resolution", type=float, help="degrees (1.0 demo, 0.25 as ERA5)")
    p.add_argument("--frequency", choices=("daily", "hourly"))
    p.add_argument("--seed", type=int)
    p.add_argument("--trend", type=float, help="warming in K per decade")
    p.add_argument("--workers", type=_positive_int, help="processes (default: one per core)")
    p.add_argument("--overwrite", action="store_true", help="rewrite existing months")
    a = p.parse_args(argv)
    spec = DemoSpec(
        resolution=a.resolution,
        frequency=a.frequency,
        start=a.start,
        end=a.end,
        seed=a.seed,
        trend=a.trend,
    )

    tty = sys.stdout.isatty()

    def show(done: int, total: int) -> None:
        if tty:
            end = "" if done < total else "\n"
            print(f"\rdemo-data: {done}/{total} months written", end=end, flush=True)
        elif done == total or done % max(1, total // 10) == 0:  # logs: about ten lines
            print(f"demo-data: {done}/{total} months written", flush=True)

    files = generate(a.out, spec, workers=a.workers, overwrite=a.overwrite, progress=show)
    print(f"demo-data: {len(files)} monthly files in {a.out}")
    return 0


def _list(argv: Sequence[str]) -> int:
    from .specs import available, load

    _Parser(prog="list", description="List the recipe specs.").parse_args(argv)
    for name in available():
        spec = load(name)
        first = spec.description.splitlines()[0] if spec.description else ""
        print(f"{name:24s} {spec.start}..{spec.end}  {first}")
    return 0


def _recipe(argv: Sequence[str]) -> int:
    from .runner import run_recipe
    from .specs import load

    p = _Parser(prog="RECIPE", description="Run a recipe spec on a Dask cluster.")
    p.add_argument("recipe", help="name (see `list`) or path of a YAML spec")
    p.add_argument("--data", help="root of the era5-pds tree (default config data.root)")
    p.add_argument("--start", help="first month, YYYY-MM (default: the spec's)")
    p.add_argument("--end", help="last month, YYYY-MM (default: the spec's)")
    _cluster_args(p)
    p.add_argument("--out", help="output folder (default results/RECIPE)")
    p.add_argument("--format", choices=("netcdf", "zarr"), help="result format")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--warmup",
        action="store_true",
        help="read the input files through on the workers first (FSx, rclone)",
    )
    a = p.parse_args(argv)
    spec = load(a.recipe)
    run = run_recipe(
        spec,
        data=a.data,
        start=a.start,
        end=a.end,
        cluster=a.cluster,
        profile=a.profile,
        workers=a.workers,
        jobs=a.jobs,
        adapt=a.adapt,
        batch=_batch(a),
        warm_inputs=a.warmup,
        out=a.out,
        fmt=a.format,
        progress=not a.no_progress,
    )
    print(f"{spec.name}: " + json.dumps(run.summary["answer"]))
    s = run.summary
    print(
        f"read {s['inputs']['files']} files, {s['inputs']['bytes_uncompressed'] / 1e9:.2f} GB "
        f"uncompressed, in {s['timings_s']['compute']:.1f} s ({s['throughput_MB_per_s']:.0f} MB/s)"
    )
    print(f"plot: {run.out / 'plot.png'}")
    print(f"data: {run.out / s['outputs']['data']}   summary: {run.out / 'summary.json'}")
    return 0


_VERBS = {
    "demo-data": _demo_data,
    "list": _list,
    "profiles": _profiles,
    "job-script": _job_script,
    "tunnel": _tunnel,
    "lab": _lab,
    "hydration": _hydration,
    "warmup": _warmup,
    "stage": _stage,
}


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
        if args[0] in _VERBS:
            return _VERBS[args[0]](args[1:])
        return _recipe(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception:
        traceback.print_exc()
        print("internal error: the traceback above is a bug; please report it", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
