"""B6: every shipped recipe's throughput on the 20-year demo data, against era5-sst-mean's
in the same run (a benchmark, not a test).

Each recipe is opened (``open_inputs``) and computed on the platform's local cluster (one
worker process per core), files in the page cache, the recipes interleaved and each run
``--repeat`` times after one untimed warm-up run. Throughput is what the recipe reads
(the uncompressed bytes of the chunks its graph reads: a recipe that selects months reads
only the chunks holding them) per second of its run (opening included);
the ratio to era5-sst-mean's throughput measured in the same run is the figure, with the
goal >= 0.70 for every recipe. Every recipe reads its data once: the number of read tasks
of each input variable in its graph is printed beside its number of chunks.

The data: ``benchmarks/data/demo-1deg`` (1 degree): 2000-2019 daily SST, 2 m temperature
and 10 m winds, and 2019 hourly precipitation (era5-pds stores it hourly; 20 years would
be 45 GB). A recipe whose period lies outside the data (era5-t2m-normals: 1991-2020) runs
on 2000-2019. Recipes of several datasets (model-vs-era5-t2m) are listed and left out: their
model dataset is not part of this tree.

    python benchmarks/b6_recipes.py [--repeat 3] [--quick] [--recipes a,b]
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from benchmarks.support.cluster import local_client
from benchmarks.support.options import finish_args, parser
from benchmarks.support.paths import DATA
from benchmarks.support.results import write_result
from benchmarks.support.rows import print_rows, ratio_row
from benchmarks.support.timing import Case, measure

BASE = "era5-sst-mean"
GOAL = 0.70
PRECIP = "precipitation_amount_1hour_Accumulation"
DAILY = (
    "sea_surface_temperature",
    "air_temperature_at_2_metres",
    "eastward_wind_at_10_metres",
    "northward_wind_at_10_metres",
)


def demo_data(years: int) -> tuple[Path, str, str]:
    """The demo tree with ``years`` daily years ending 2019 and 2019's hourly precipitation."""
    from pangeo_hpc.demo import DemoSpec, generate

    root = DATA / "demo-1deg"
    start, end = f"{2020 - years}-01", "2019-12"
    t = time.perf_counter()
    generate(root, DemoSpec(resolution=1.0, start=start, end=end, variables=DAILY))
    precip_start = "2019-12" if years < 2 else "2019-01"
    generate(root, DemoSpec(resolution=1.0, start=precip_start, end=end, variables=(PRECIP,)))
    print(f"B6 data: {root} ({time.perf_counter() - t:.0f} s to check or write)")
    return root, start, end


def read_tasks(lazy: Any, dataset: Any, variables: list[str]) -> dict[str, tuple[int, int]]:
    """Per input variable: (read tasks in the recipe's graph, chunks of the variable)."""
    from pangeo_hpc.recipes.fusion import fused_spans

    graph = dict(lazy.__dask_graph__())
    fused = fused_spans(lazy.__dask_graph__())  # tasks that read and reduce (area means)
    out = {}
    for v in variables:
        name = dataset[v].data.name
        reads = sum(1 for k in graph if isinstance(k, tuple) and k[0] == name)
        out[v] = (reads + len(fused.get(name, [])), dataset[v].data.npartitions)
    return out


def bytes_read(lazy: Any, dataset: Any, variables: list[str]) -> int:
    """Uncompressed bytes of the chunks the culled graph reads (a recipe that selects
    months reads only the chunks that hold them), and of the time steps its fused tasks
    read (an area mean summed as the data are decoded)."""
    import numpy as np
    from dask.core import flatten

    from pangeo_hpc.recipes.fusion import fused_spans

    culled = lazy.__dask_graph__().cull(set(flatten(lazy.__dask_keys__())))
    keys = {k for k in culled.keys() if isinstance(k, tuple)}
    fused = fused_spans(lazy.__dask_graph__())
    total = 0
    for v in variables:
        arr = dataset[v].data
        step = int(np.prod(arr.shape[1:])) * arr.dtype.itemsize
        total += sum(b - a for a, b in fused.get(arr.name, [])) * step  # read as summed
        for index in np.ndindex(*arr.numblocks):
            if (arr.name, *index) in keys:
                sizes = [c[i] for c, i in zip(arr.chunks, index, strict=True)]
                total += int(np.prod(sizes)) * arr.dtype.itemsize
    return total


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import yaml

    from pangeo_hpc.batch import open_inputs
    from pangeo_hpc.batch.chains.multi_yaml import is_multi
    from pangeo_hpc.batch.chains.recipe_yaml import available, load

    p = parser(__doc__, cache="warm")
    p.add_argument("--years", type=int, help="years of daily data (default 20; --quick 1)")
    p.add_argument("--recipes", help="comma separated (default: every shipped recipe)")
    a = finish_args(p.parse_args(argv))
    years = a.years or (1 if a.quick else 20)
    root, start, end = demo_data(years)
    names = a.recipes.split(",") if a.recipes else sorted(available())
    names = [BASE, *(n for n in names if n != BASE)]
    several = [n for n in names if is_multi(yaml.safe_load(available()[n].read_text()))]
    for n in several:  # its model dataset is not on the demo tree's 20 years
        print(f"  {n}: not timed (several datasets; B6 times recipes of one dataset)")
    names = [n for n in names if n not in several]

    def period(spec: Any) -> tuple[str, str]:
        s, e = spec.start, spec.end
        return (max(s, start), min(e, end)) if s < start or e > end else (s, e)

    opened = {}
    for n in names:
        spec = load(n)
        s, e = period(spec)
        opened[n] = (spec, s, e)

    def case(n: str) -> Case:
        spec, s, e = opened[n]

        def run() -> Any:
            inputs = open_inputs(spec, data=root, start=s, end=e)
            return client.compute(inputs.lazy).result()

        files = open_inputs(spec, data=root, start=s, end=e).dataset.encoding["source_files"]
        return Case(n, run, files, "platform" if n == BASE else "baseline")

    info = {}
    for n in names:
        spec, s, e = opened[n]
        inputs = open_inputs(spec, data=root, start=s, end=e)
        ds = inputs.dataset
        nbytes = bytes_read(inputs.lazy, ds, list(spec.variables))
        info[n] = {
            "period": [s, e],
            "bytes_uncompressed": nbytes,
            "bytes_of_the_period": int(sum(ds[v].nbytes for v in spec.variables)),
            "reads": read_tasks(inputs.lazy, ds, list(spec.variables)),
        }
        print(f"  {n:24s} {s}..{e} {nbytes / 1e9:6.2f} GB read  reads/chunks {info[n]['reads']}")

    with local_client(a.workers) as client:
        cases = [case(n) for n in names]
        t = measure(cases, repeat=a.repeat, caches=a.caches, client=client)

    rows = []
    for cache in a.caches:
        base_rate = info[BASE]["bytes_uncompressed"] / t.median(cache, BASE)
        for n in names:
            rate = info[n]["bytes_uncompressed"] / t.median(cache, n)
            info[n][f"{cache}_MB_per_s"] = round(rate / 1e6, 1)
            if n == BASE:
                continue
            # ratio_row reports other/platform of seconds: give it the inverse rates
            row = ratio_row("B6", f"{n} throughput vs {BASE}", cache, 1 / base_rate, 1 / rate,
                            n, GOAL)  # fmt: skip
            row["ratio"] = round(rate / base_rate, 3)
            row["met"] = bool(rate / base_rate >= GOAL)
            row["ratio_means"] = "throughput/throughput of era5-sst-mean"
            rows.append(row)
            print(f"  {cache} {n:24s} {rate / 1e6:7.1f} MB/s = {rate / base_rate:5.2f} x {BASE}")
    print_rows(rows)
    doc = {
        "title": "each shipped recipe's throughput on the demo data vs era5-sst-mean",
        "summary": f"{years} years of daily 1-degree demo data, {len(names)} recipes",
        "params": {"years": years, "workers": a.workers, "repeat": a.repeat, "goal": GOAL},
        "recipes": info,
        "stats": t.stats(),
        "failed": t.failed,
        "rows": rows,
    }
    path = write_result("B6", doc, quick=a.quick)
    print(markdown(json.loads(path.read_text())))
    return doc


def markdown(doc: dict[str, Any]) -> str:
    """The B6 table of the docs' benchmarks page from a result of this script (its commit
    named)."""
    m = doc["machine"]
    lines = [
        f"B6 at {m['pangeo_hpc_commit']} ({doc['date']}, {doc['summary']}, "
        f"{doc['params']['workers']} workers, median of {doc['params']['repeat']}, warm):",
        "",
        "| recipe | period | GB read | MB/s | vs era5-sst-mean | goal >= 0.70 |",
        "|---|---|---|---|---|---|",
    ]
    ratio = {r["other"]: r for r in doc["rows"] if r["cache"] == "warm"}
    for name, info in doc["recipes"].items():
        r = ratio.get(name)
        share = f"{r['ratio']:.2f}" if r else "1 (baseline)"
        met = ("met" if r["met"] else "**not met**") if r else ""
        lines.append(
            f"| `{name}` | {info['period'][0]}..{info['period'][1]} | "
            f"{info['bytes_uncompressed'] / 1e9:.2f} | {info.get('warm_MB_per_s', '')} | "
            f"{share} | {met} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
