"""Check `plan`'s model against real runs on this machine (a benchmark, not a test).

1. ``calibrate`` the recipe on one local worker process, on the first ``--amount`` of the
   data (default 256 MB of the 1-degree demo data: 33 months), into a file of its own;
2. run the recipe over all of the data (20 years: 8x the calibration's bytes) with 1 and
   2 local worker processes, and on the one-node Slurm cluster with 1, 2 and 4 one-core
   jobs (``--oversubscribe``: four jobs share the node's two cores), ``--repeat`` times
   each after one warm-up, warm page cache;
3. predict each run with the model (local: one node of N processes on this host's cores;
   Slurm: J one-process nodes sharing this host's cores) and print predicted vs measured
   compute time (the ``timings_s.compute`` of the run's summary) and their ratio; the goal
   is within 25 %.

Writes ``benchmarks/results/plan_validation.json``.

    python benchmarks/plan_validation.py [--repeat 3] [--jobs 1,2,4] [--no-slurm] [--quick]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine, write_result

GOAL = 0.25


def _demo_data(root: Path, quick: bool) -> Path:
    from pangeo_hpc.demo import DemoSpec, generate

    generate(root, DemoSpec(start="2000-01", end="2004-12" if quick else "2019-12"))
    return root


def _runs(
    spec: Any,
    root: Path,
    period: tuple[str, str],
    setups: list[dict[str, Any]],
    repeat: int,
    warm: bool = True,
) -> dict[str, list]:
    """Compute seconds of ``repeat`` runs per setup, the setups interleaved (the machine's
    speed drifts over minutes: each setup sees the same drift), after one warm-up run."""
    from pangeo_hpc.runner import run_recipe

    out: dict[str, list[float]] = {s["name"]: [] for s in setups}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(0 if warm else 1, repeat + 1):
            for s in setups[: 1 if i == 0 else None]:  # round 0: page cache, first setup
                r = run_recipe(spec, data=root, start=period[0], end=period[1],
                               out=Path(tmp) / s["name"], progress=False,
                               log=lambda *_: None, **s["run"])  # fmt: skip
                if i:
                    out[s["name"]].append(r.summary["timings_s"]["compute"])
                    print(f"  {s['name']:<18} measured  {out[s['name']][-1]:6.2f} s", flush=True)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import argparse

    from pangeo_hpc import specs
    from pangeo_hpc.calibrate import calibrate
    from pangeo_hpc.cluster import running_cluster, slurm_available
    from pangeo_hpc.era5 import open_era5
    from pangeo_hpc.plan import Model, Storage

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--recipe", default="era5-sst-mean")
    p.add_argument("--data", help="demo tree (default benchmarks/data/demo-1deg, made once)")
    p.add_argument("--amount", default="256MB", help="calibration bytes (uncompressed)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--jobs", default="1,2,4", help="Slurm job counts")
    p.add_argument("--no-slurm", action="store_true", help="local runs only")
    p.add_argument("--quick", action="store_true", help="5 years of data, one run: the wiring")
    a = p.parse_args(argv)
    repeat = 1 if a.quick else a.repeat
    here = Path(__file__).resolve().parent
    root = Path(a.data) if a.data else here / "data" / ("demo-1deg-5y" if a.quick else "demo-1deg")
    root = _demo_data(root, a.quick)
    spec = specs.load(a.recipe)
    period = ("2000-01", "2004-12") if a.quick else (spec.start, spec.end)

    slurm_jobs = [int(j) for j in a.jobs.split(",")] if not a.no_slurm else []
    if slurm_jobs and not slurm_available():
        print("Slurm does not answer (start it: bash ci/slurm/start.sh): local runs only")
        slurm_jobs = []
    batch = {"cores": 1, "processes": 1, "memory": "2GB", "walltime": "00:30:00",
             "job_extra_directives": ["--oversubscribe"]}  # fmt: skip
    kw = {"data": root, "start": period[0], "end": period[1], "amount": a.amount,
          "simulate_workers": 0, "repeat": 2, "log": lambda line: print("   ", line)}  # fmt: skip
    ds = open_era5(spec.variable, *period, source=root)
    size = int(ds[spec.variable].nbytes)
    chunks = len(ds[spec.variable].chunks[0])
    names = [f"local, {n} worker{'s' * (n > 1)}" for n in (1, 2)]
    names += [f"slurm, {j} job{'s' * (j > 1)}" for j in slurm_jobs]
    predicted: dict[str, list[float]] = {n: [] for n in names}
    measured: dict[str, list[float]] = {n: [] for n in names}
    bottleneck: dict[str, str] = {}
    cals: dict[str, Any] = {}
    print(
        f"{repeat} rounds of: calibrate {a.recipe} on 1 local worker process and on 1 Slurm "
        f"job, on the first {a.amount} of {root}; predict and run each setup on all "
        f"{size / 1e9:.2f} GB ({chunks} chunks, {size / parse(a.amount):.1f}x the calibration)"
    )
    for i in range(1, repeat + 1):
        with tempfile.TemporaryDirectory() as tmp:
            print(f"round {i}: calibrate")
            cals["local"] = calibrate(a.recipe, path=Path(tmp) / "local.json",
                                      storage={"local": str(root)}, **kw)  # fmt: skip
            if slurm_jobs:
                with running_cluster("slurm", jobs=1, **batch) as (_, client):
                    cals["slurm"] = calibrate(a.recipe, client=client, storage={},
                                              path=Path(tmp) / "slurm.json", **kw)  # fmt: skip
        cores = cals["local"].cores

        def model(kind: str, processes: int, cores_per_node: int, cores: int = cores) -> Model:
            # every setup runs its workers and its scheduler on this host
            cal = cals[kind]
            fit = cal.recipe(a.recipe)
            return Model(
                size=size, ratio=fit.ratio, chunk=-(-size // chunks),
                tasks_per_chunk=fit.tasks_per_chunk, process_rate=fit.process_rate,
                task_cost=fit.task_cost, task_overhead=fit.scheduler_task, warmup=fit.warmup,
                load_slowdown=fit.load_slowdown, overhead_per_worker=cal.overhead_per_worker,
                fixed=fit.fixed, processes=processes, cores=cores_per_node,
                storage=Storage("cache", cals["local"].storage.get("cache", 1e12), False, False),
                host_cores=cores,
            )  # fmt: skip

        setups = [
            {"name": names[k], "run": {"cluster": "local", "workers": n},
             "predict": model("local", n, cores).predict(1)}
            for k, n in enumerate((1, 2))
        ]  # fmt: skip
        setups += [
            {"name": f"slurm, {j} job{'s' * (j > 1)}",
             "run": {"cluster": "slurm", "jobs": j, "batch": batch},
             "predict": model("slurm", 1, 1).predict(j)}
            for j in slurm_jobs
        ]  # fmt: skip
        runs = _runs(spec, root, period, setups, 1, warm=i == 1)
        for s in setups:
            predicted[s["name"]].append(s["predict"]["wall_s"])
            measured[s["name"]] += runs[s["name"]]
            bottleneck[s["name"]] = s["predict"]["bottleneck"]
            print(f"  {s['name']:<18} predicted {s['predict']['wall_s']:6.2f} s")

    print("\n3. predicted vs measured compute time")
    print(f"{'setup':<22} {'predicted':>10} {'measured':>10} {'ratio':>6}  bottleneck")
    rows, worst = [], 0.0
    for name in names:
        s = {"name": name, "predict": {"bottleneck": bottleneck[name]}}
        pred, meas = statistics.median(predicted[name]), statistics.median(measured[name])
        err = meas / pred - 1
        worst = max(worst, abs(err))
        print(f"{s['name']:<22} {pred:>9.2f}s {meas:>9.2f}s {meas / pred:>6.2f}  "
              f"{s['predict']['bottleneck']}")  # fmt: skip
        rows.append({"setup": name, "predicted_s": pred, "measured_s": meas,
                     "runs_s": measured[name], "predictions_s": predicted[name], "error": err,
                     "bottleneck": s["predict"]["bottleneck"]})  # fmt: skip
    verdict = "met" if worst <= GOAL else "NOT met"
    print(f"\nlargest error {worst:.0%} (goal within {GOAL:.0%}): {verdict}")
    doc = {
        "title": "plan's model: predicted vs measured",
        "summary": f"largest error {worst:.0%}, goal {GOAL:.0%}: {verdict}",
        "calibration": {k: c.to_json() for k, c in cals.items()},
        "data": {"root": str(root), "bytes_uncompressed": size, "chunks": chunks},
        "rows": rows,
        "machine": machine(),
    }
    write_result("plan_validation", doc, quick=a.quick)
    return doc


def parse(size: str) -> int:
    from pangeo_hpc.sizes import parse_size

    return parse_size(size)


if __name__ == "__main__":
    main()
