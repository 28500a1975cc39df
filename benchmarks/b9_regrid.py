"""B9: ``regrid`` (issue 30 section 2): its speed against B6's yardstick and xarray-regrid,
the cost of building its weights and the workers' memory (a benchmark, not a test).

In one run, on the platform's local cluster (one worker process per core), files in the
page cache, the cases interleaved and each run ``--repeat`` times after one untimed
warm-up run (medians):

1. **regrid + time mean through the platform**: the 1-degree demo SST
   (``benchmarks/data/demo-1deg``, 181 x 360, daily, 2000-01..2019-12) regridded to CDO's
   ``r144x72`` conservatively, then its time mean: a recipe built here (``regrid`` then
   ``time_mean``), opened with ``open_inputs`` and computed on the cluster, no state
   cache. Throughput (uncompressed bytes read per second, opening included) as a ratio
   to era5-sst-mean's throughput in the same run (B6's yardstick): goal >= 0.7.
2. **xarray-regrid** (``ds.regrid.conservative(target)``, its defaults: ``skipna=True``,
   ``nan_threshold=1.0``) then ``.mean(time)`` on the same opened dask data (the same
   opener, chunks and cluster): its time / ours, goal >= 3. The two answers are compared
   (see ``TOLERANCE``). What bounds this ratio is measured in the same run:

   * **the floor** (``read-time-mean``): the same files, opener and cluster, the
     platform's time mean alone (the recipe of case 1 without its ``regrid`` step):
     reading, decoding and the mean, which case 1 pays in full; regridding only adds to
     it, so the whole-run ratio cannot exceed xarray-regrid's time / the floor, however
     fast the regridding. (Until f4bc8a7 the floor was xarray's own ``.mean(time)``;
     once the platform's time mean became faster than xarray's, that no longer bounded
     case 1: 4.29 s against case 1's 4.22 s.)
   * **regridding alone**: one year of the data in memory on one worker (its one thread),
     regridded to r144x72 by each (the values computed, no time mean), interleaved,
     ``--repeat`` times after a warm-up: their time / ours, goal >= 3.
3. **weights** for 0.25 degrees -> 1 degree (ERA5's 1440 x 721, poles as centres, to
   CDO's ``r360x180``) per method, built cold in this process (no memo, no store), as
   ``regrid`` builds them: goal <= 5 s each.
4. **peak RSS per worker** during (1): goal <= 2 GB.

    python benchmarks/b9_regrid.py [--repeat 3] [--years 20] [--data DIR]
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.b6_recipes import bytes_read
from benchmarks.b9_agreement import TOLERANCE, agreement
from benchmarks.support.cluster import local_client
from benchmarks.support.data import VAR
from benchmarks.support.options import finish_args, parser
from benchmarks.support.paths import DATA
from benchmarks.support.results import write_result
from benchmarks.support.rows import print_rows, ratio_row, rss_row, text_row
from benchmarks.support.timing import Case, measure

BASE = "era5-sst-mean"
OURS = "regrid-r144x72-mean"
THEIRS = "xarray-regrid"
FLOOR = "read-time-mean"
GRID = "r144x72"
THROUGHPUT_GOAL = 0.70
XR_GOAL = 3.0
WEIGHTS_GOAL_S = 5.0
METHODS = ("conservative", "bilinear", "nearest")


def recipe(start: str, end: str, *, regridded: bool = True) -> Any:
    """The recipe of case 1, as a YAML file would give it (``regridded=False``: without
    its ``regrid`` step, the floor's)."""
    from pangeo_hpc.batch.chains.recipe_yaml import from_dict

    steps: list[dict[str, Any]] = [{"time_mean": {}}]
    if regridded:
        steps.insert(0, {"regrid": {"grid": GRID, "method": "conservative"}})
    return from_dict(
        {
            "name": OURS if regridded else FLOOR,
            "description": f"SST conservatively regridded to {GRID}, then its time mean"
            if regridded
            else "the time mean of SST",
            "dataset": {"variable": VAR, "start": start, "end": end},
            "steps": steps,
            "outputs": {"format": "netcdf"},
        }
    )


def check_data(root: Path, start: str, end: str) -> list[str]:
    """The SST files of ``start..end`` under ``root``; exit saying how to make them."""
    from pangeo_hpc.io.layout import find_files

    files = [str(f) for f in find_files(root, VAR, start, end)] if root.is_dir() else []
    y0, y1 = int(start[:4]), int(end[:4])
    if len(files) < 12 * (y1 - y0 + 1):
        raise SystemExit(
            f"B9 needs daily 1-degree demo SST {start}..{end} under {root} "
            f"({len(files)} monthly files found); make it with\n"
            f"  python -m pangeo_hpc.run demo-data --out {root} --start {start} --end {end} "
            f"--variables {VAR} --resolution 1.0\n"
            "(or run benchmarks/b6_recipes.py once, which writes the same tree)"
        )
    return files


def target_dataset() -> Any:
    """CDO's r144x72 as xarray-regrid takes a target: coordinates only."""
    import xarray as xr

    from pangeo_hpc.recipes.regrid_grids import target_grid

    g = target_grid(GRID)
    return xr.Dataset(coords={"lat": ("lat", g.lat), "lon": ("lon", g.lon)})


def theirs(ds: Any, target: Any) -> Any:
    """xarray-regrid's conservative regridding then the time mean, lazily."""
    import xarray_regrid  # noqa: F401  (registers the .regrid accessor)

    da = ds[VAR]
    time = da.dims[0]
    return da.regrid.conservative(target, time_dim=time).mean(time)


def regrid_alone(files: list[str], repeat: int) -> dict[str, list[float]]:
    """Seconds to regrid the fields of ``files`` (in memory, one thread: run on a worker)
    to ``GRID`` by ``regrid`` and by xarray-regrid, interleaved, after one untimed run
    of each; each computes every field's values."""
    import xarray as xr
    import xarray_regrid  # noqa: F401  (registers the .regrid accessor)

    from pangeo_hpc.recipes import regrid

    with xr.open_mfdataset(files, combine="by_coords") as ds:
        da = ds[VAR].load()
    time_dim = da.dims[0]
    target = target_dataset()
    runs = {
        OURS: lambda: regrid(da, grid=GRID, method="conservative").values,
        THEIRS: lambda: da.regrid.conservative(target, time_dim=time_dim).values,
    }
    out: dict[str, list[float]] = {n: [] for n in runs}
    for f in runs.values():
        f()
    names = list(runs)
    for rep in range(repeat):
        for n in names[rep % 2 :] + names[: rep % 2]:
            s = time.perf_counter()
            runs[n]()
            out[n].append(time.perf_counter() - s)
    out["fields"] = [float(da.shape[0])]
    return out


def machine_load() -> dict[str, Any]:
    """The machine's load: ``uptime``'s averages (the machine is shared)."""
    import os

    one, five, fifteen = os.getloadavg()
    return {"load_1_5_15": [round(one, 2), round(five, 2), round(fifteen, 2)],
            "cpus": os.cpu_count()}  # fmt: skip


def weights_seconds(repeat: int) -> dict[str, list[float]]:
    """Seconds to build each method's weights 1440 x 721 -> r360x180 from nothing (grids
    included), interleaved; one untimed build of each first (imports, NumPy's first
    allocations)."""
    import numpy as np
    import xarray as xr

    from pangeo_hpc.recipes import regrid_weights
    from pangeo_hpc.recipes.regrid_grids import source_grid, target_grid

    lat = np.linspace(90, -90, 721)
    lon = np.arange(1440) * 0.25
    field = xr.DataArray(
        np.zeros((721, 1440), "f4"), dims=("lat", "lon"), coords={"lat": lat, "lon": lon}
    )

    def build(method: str) -> float:
        s = time.perf_counter()
        regrid_weights.build(source_grid(field), target_grid("r360x180"), method)
        return time.perf_counter() - s

    for m in METHODS:
        print(f"  warm-up    weights 0.25 -> 1 degree {m:14s} {build(m):7.2f} s", flush=True)
    out: dict[str, list[float]] = {m: [] for m in METHODS}
    for rep in range(repeat):
        k = rep % len(METHODS)
        for m in METHODS[k:] + METHODS[:k]:
            out[m].append(build(m))
            print(f"  run {rep + 1}      weights 0.25 -> 1 degree {m:14s} {out[m][-1]:7.2f} s")
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from pangeo_hpc.batch import open_inputs
    from pangeo_hpc.batch.chains.recipe_yaml import load
    from pangeo_hpc.batch.pipeline.steps import open_dataset

    p = parser(__doc__, cache="warm")
    p.add_argument("--years", type=int, help="years of daily data ending 2019 (default 20)")
    p.add_argument("--data", type=Path, default=DATA / "demo-1deg", help="the demo tree")
    a = finish_args(p.parse_args(argv))
    years = a.years or (1 if a.quick else 20)
    start, end = f"{2020 - years}-01", "2019-12"
    files = check_data(a.data, start, end)
    specs = {
        BASE: load(BASE),
        OURS: recipe(start, end),
        FLOOR: recipe(start, end, regridded=False),
    }
    target = target_dataset()

    info: dict[str, Any] = {}
    for n, spec in specs.items():
        inputs = open_inputs(spec, data=a.data, start=start, end=end)
        info[n] = {"bytes_uncompressed": bytes_read(inputs.lazy, inputs.dataset, [VAR])}
        print(f"  {n:24s} {start}..{end} {info[n]['bytes_uncompressed'] / 1e9:6.2f} GB read")
    info[THEIRS] = {"bytes_uncompressed": info[OURS]["bytes_uncompressed"]}

    def platform(n: str) -> Any:
        def run() -> Any:
            inputs = open_inputs(specs[n], data=a.data, start=start, end=end)
            return client.compute(inputs.lazy).result()

        return run

    def xarray_regrid() -> Any:
        ds = open_dataset(specs[OURS], a.data, start=start, end=end)
        return client.compute(theirs(ds, target)).result()

    load_before = machine_load()
    print(f"  load before: {load_before}")
    with local_client(a.workers) as client:
        cases = [
            Case(BASE, platform(BASE), files, "baseline"),
            Case(OURS, platform(OURS), files, "platform", rss=True),
            Case(THEIRS, xarray_regrid, files, "baseline", rss=True),
            Case(FLOOR, platform(FLOOR), files, "ceiling"),
        ]
        t = measure(cases, repeat=a.repeat, caches=a.caches, client=client)
        one_year = files[-12:]
        alone = client.submit(regrid_alone, one_year, a.repeat, pure=False).result()
        for n in (OURS, THEIRS):
            print(f"  regrid alone, {alone['fields'][0]:.0f} fields in memory {n:24s} "
                  f"{statistics.median(alone[n]):7.2f} s")  # fmt: skip
    built = weights_seconds(a.repeat)
    load_after = machine_load()
    print(f"  load after: {load_after}")

    rows = []
    for cache in a.caches:
        rate = {n: info[n]["bytes_uncompressed"] / t.median(cache, n) for n in info}
        for n in info:
            info[n][f"{cache}_MB_per_s"] = round(rate[n] / 1e6, 1)
        # seconds as measured; the ratio is of throughputs (the two read the same bytes)
        row = ratio_row("B9", f"regrid {GRID} + time mean throughput vs {BASE}", cache,
                        t.median(cache, OURS), t.median(cache, BASE), BASE,
                        THROUGHPUT_GOAL)  # fmt: skip
        row["ratio"] = round(rate[OURS] / rate[BASE], 3)
        row["met"] = bool(rate[OURS] / rate[BASE] >= THROUGHPUT_GOAL)
        row["ratio_means"] = f"throughput/throughput of {BASE}"
        rows.append(row)
        what = f"regrid {GRID} + time mean vs xarray-regrid, whole run"
        ours_s, theirs_s = t.median(cache, OURS), t.median(cache, THEIRS)
        rows.append(ratio_row("B9", what, cache, ours_s, theirs_s, THEIRS, XR_GOAL))
        floor_s = t.median(cache, FLOOR)
        text = (
            f"the same reading + decoding + time mean without regridding (the platform's "
            f"time_mean alone, the same opener and workers) {floor_s:.2f} s; ours "
            f"{ours_s - floor_s:.2f} s more (its regridding), xarray-regrid "
            f"{theirs_s - floor_s:.2f} s more: the whole-run ratio cannot exceed "
            f"{theirs_s / floor_s:.2f}x (theirs / the floor)"
        )
        if ours_s < floor_s:  # regridding only adds work: the medians' noise
            text += "; ours below its floor: the two differ by less than the machine's noise"
        rows.append(text_row("B9", "what bounds the whole-run ratio", cache, text))
    ours_alone = statistics.median(alone[OURS])
    theirs_alone = statistics.median(alone[THEIRS])
    what = (
        f"regridding alone vs xarray-regrid ({alone['fields'][0]:.0f} fields in memory, 1 thread)"
    )
    rows.append(ratio_row("B9", what, "memory", ours_alone, theirs_alone, THEIRS, XR_GOAL))
    agree = (
        agreement(t.answers[OURS], t.answers[THEIRS])
        if OURS in t.answers and THEIRS in t.answers
        else {"met": False, "missing": sorted({OURS, THEIRS} - set(t.answers))}
    )
    if "max_rel_diff" in agree:
        text = (
            f"largest difference {agree['max_rel_diff']:.2g} relative, "
            f"{agree['max_abs_diff_K']:.2g} K ({agree['max_abs_diff_within_85_K']:.2g} K "
            f"within 85 degrees of the equator; tolerance {TOLERANCE:g} relative); "
            f"valid in ours only {agree['valid_ours_only']}, "
            f"theirs only {agree['valid_theirs_only']} of {agree['cells']} cells"
        )
    else:
        text = f"not compared: {agree}"
    rows.append(text_row("B9", "answers agree with xarray-regrid's", "warm", text, agree["met"]))
    weights = {m: statistics.median(s) for m, s in built.items()}
    for m, s in weights.items():
        text = f"{s:.2f} s (goal <= {WEIGHTS_GOAL_S:g} s)"
        what = f"weights 1440x721 -> r360x180, {m}"
        rows.append(text_row("B9", what, "cold", text, s <= WEIGHTS_GOAL_S))
    rows.append(rss_row("B9", {OURS: t.peak_rss.get(OURS, {})}, f"peak RSS per worker, {OURS}"))
    text = (
        f"1, 5, 15-minute load averages {load_before['load_1_5_15']} before, "
        f"{load_after['load_1_5_15']} after, on {load_before['cpus']} cores shared with "
        "other users: figures from a loaded machine"
    )
    rows.append(text_row("B9", "machine load (uptime)", "", text))
    print_rows(rows)
    for r in rows:
        if r["met"] is not None:
            print(f"  {'met' if r['met'] else 'NOT met':8s} {r['what']}")
    doc = {
        "title": f"regrid to {GRID} + time mean vs era5-sst-mean and xarray-regrid; weights",
        "summary": f"{years} years of daily 1-degree demo SST, {len(files)} files",
        "params": {
            "years": years,
            "workers": a.workers,
            "repeat": a.repeat,
            "goals": {
                "throughput_vs_era5_sst_mean": THROUGHPUT_GOAL,
                "vs_xarray_regrid": XR_GOAL,
                "weights_s": WEIGHTS_GOAL_S,
            },
        },
        "cases": info,
        "agreement": agree,
        "weights_s": built,
        "regrid_alone_s": alone,
        "load": {"before": load_before, "after": load_after},
        "peak_rss": t.peak_rss,
        "stats": t.stats(),
        "failed": t.failed,
        "rows": rows,
    }
    path = write_result("B9", doc, quick=a.quick)
    print(markdown(json.loads(path.read_text())))
    return doc


def markdown(doc: dict[str, Any]) -> str:
    """B9's lines from a result of this script (its commit named), printed after a run."""
    m = doc["machine"]
    lines = [
        f"B9 at {m['pangeo_hpc_commit']} ({doc['date']}, {doc['summary']}, "
        f"{doc['params']['workers']} workers, median of {doc['params']['repeat']}):",
        "",
        "| what | figure | goal |",
        "|---|---|---|",
    ]
    for r in doc["rows"]:
        met = "" if r["met"] is None else ("met" if r["met"] else "**not met**")
        if r.get("text") is not None:
            lines.append(f"| {r['what']} | {r['text']} | {met} |")
        else:
            lines.append(
                f"| {r['what']} ({r['cache']}) | {r['ratio']:.2f}x ({r['other']} "
                f"{r['other_s']:.2f} s / ours {r['platform_s']:.2f} s) | >= {r['goal']:g}: {met} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
