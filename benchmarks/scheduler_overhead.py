"""Dask's per-task scheduler overhead against the number of workers (a benchmark, not a test).

Many workers simulated on this one host: for each worker count a local cluster
(``get_cluster("local")``) is started and :func:`pangeo_hpc.planning.overhead.task_overhead` times
graphs of no-op tasks plus one sum (one untimed warm-up round, then ``--repeat`` rounds;
median). Up to ``--max-processes`` (8) workers are processes with one thread each; beyond
that the cluster is ``--max-processes`` processes with several threads each, so "workers"
then means worker *threads* (the table says which). The 1-worker count is always measured
first in the same run: the ratio column is seconds per task over that baseline.

What is measured is the wall time per task of the whole round trip (client, scheduler,
workers). No-op tasks are root tasks, which the scheduler queues by default
(``distributed.scheduler.worker-saturation`` 1.1: about 1.1 tasks per worker thread at a
time), so with few threads each task waits for a scheduler-worker round trip and the time
per task *falls* as threads are added; ``--saturation inf`` turns the queuing off. With more
processes than cores the workers also compete with the scheduler for the CPU.

``benchmarks/results/scheduler_overhead.json`` (``scheduler_overhead-saturation-X.json`` with
``--saturation X``).

    python benchmarks/scheduler_overhead.py [--counts 1,2,8,32,64] [--tasks 2000] [--repeat 3]
                                           [--max-processes 8] [--saturation inf] [--quick]
"""

from __future__ import annotations

import time
from typing import Any

import dask.config

from benchmarks.support.cluster import local_client
from benchmarks.support.options import finish_args, parser
from benchmarks.support.results import machine, write_result
from pangeo_hpc.planning.overhead import task_overhead


def layout(workers: int, max_processes: int) -> tuple[int, int]:
    """(processes, threads each) simulating ``workers`` workers: one thread per process up
    to ``max_processes``, beyond that ``max_processes`` processes sharing the threads."""
    if workers <= max_processes:
        return workers, 1
    if workers % max_processes:
        raise SystemExit(
            f"--counts: {workers} workers do not split over {max_processes} processes: "
            f"use a multiple of {max_processes} (e.g. {max_processes * (workers // max_processes)})"
        )
    return max_processes, workers // max_processes


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__)
    p.add_argument(
        "--counts", help="worker counts, comma separated (default 1,2,8,32,64; --quick 1,2,8)"
    )
    p.add_argument("--tasks", type=int, help="no-op tasks per round (default 2000; --quick 500)")
    p.add_argument(
        "--max-processes",
        type=int,
        default=8,
        help="worker processes at most; more workers are threads in them (default %(default)s)",
    )
    p.add_argument(
        "--saturation",
        type=float,
        help="distributed.scheduler.worker-saturation (default Dask's config; inf: no queuing)",
    )
    a = finish_args(p.parse_args(argv))  # --cache and --workers do not apply here
    counts = [int(c) for c in (a.counts or ("1,2,8" if a.quick else "1,2,8,32,64")).split(",")]
    tasks = a.tasks or (500 if a.quick else 2000)
    if 1 not in counts:
        counts.insert(0, 1)  # the baseline of the ratio
    counts = sorted(set(counts))
    plan = {n: layout(n, a.max_processes) for n in counts}

    saturation = (
        dask.config.get("distributed.scheduler.worker-saturation")
        if a.saturation is None
        else a.saturation
    )
    rows: list[dict[str, Any]] = []
    for n, (procs, threads) in plan.items():
        t = time.perf_counter()
        with (
            dask.config.set({"distributed.scheduler.worker-saturation": saturation}),
            local_client(procs, threads) as client,
        ):
            started = time.perf_counter() - t
            o = task_overhead(client, tasks=tasks, repeat=a.repeat)
        kind = "processes" if threads == 1 else f"{procs} processes x {threads} threads"
        rows.append(
            {
                "workers": n,
                "processes": procs,
                "threads_per_process": threads,
                "layout": kind,
                "dask_workers": o.workers,
                "threads": o.threads,
                "seconds_per_task": o.seconds_per_task,
                "tasks_per_second": o.tasks_per_second,
                "samples_s_per_task": o.samples,
                "cluster_start_s": started,
            }
        )
        print(
            f"  {n:3d} workers ({kind}): {o.seconds_per_task * 1e3:.3f} ms/task "
            f"(rounds {', '.join(f'{s * 1e3:.3f}' for s in o.samples)}; cluster up in "
            f"{started:.1f} s)",
            flush=True,
        )
    base = rows[0]["seconds_per_task"]
    for r in rows:
        r["ratio_to_1_worker"] = r["seconds_per_task"] / base

    m = machine()
    print(
        f"\nper-task scheduler overhead, {tasks} no-op tasks + 1 sum, median of {a.repeat} "
        f"round{'s' if a.repeat > 1 else ''}, worker-saturation {saturation}; {m['cores']} cores ({m['cpu']}), distributed {m['versions']['distributed']}"
    )
    print(
        f"  {'workers':>7s} {'layout':28s} {'threads':>7s} {'ms/task':>8s} {'tasks/s':>8s}"
        f" {'vs 1':>6s}"
    )
    for r in rows:
        layout_text = (
            f"{r['processes']} x 1-thread process" + ("es" if r["processes"] > 1 else "")
            if r["threads_per_process"] == 1
            else r["layout"]
        )
        print(
            f"  {r['workers']:7d} {layout_text:28s} {r['threads']:7d} "
            f"{r['seconds_per_task'] * 1e3:8.3f} {r['tasks_per_second']:8.0f} "
            f"{r['ratio_to_1_worker']:5.2f}x"
        )
    doc = {
        "title": "per-task scheduler overhead against the number of workers",
        "summary": f"{tasks} no-op tasks, {', '.join(map(str, counts))} workers",
        "params": {
            "counts": counts,
            "tasks": tasks,
            "repeat": a.repeat,
            "max_processes": a.max_processes,
            "worker_saturation": str(saturation),  # inf is not JSON
        },
        "rows": rows,
    }
    # a run with --saturation set does not replace the default run's result
    case = "scheduler_overhead" + ("" if a.saturation is None else f"-saturation-{a.saturation:g}")
    write_result(case, doc, quick=a.quick)
    return doc


if __name__ == "__main__":
    main()
