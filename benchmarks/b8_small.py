"""B8: small questions on the command line against CDO (issue 29, section 1), from outside
the process (a benchmark, not a test: every figure is a ratio to CDO measured in the same run).

A scientist exploring compares one command with another: ``python -m pangeo_hpc.run
RECIPE.yaml`` (a fresh Python process: imports, cluster start, the run, writing
``result.nc``, ``plot.png`` and ``summary.json``, interpreter exit) against the CDO line
that answers the same question, each timed as wall time by this process around the child. (CDO runs with ``-b F32``, the
data's own type, and ``-a``, an absolute time axis: without them ``yseasmean`` fails writing
its time axis now and then, "Numeric conversion not representable" for a middle-of-season
time of garbage hours that an int32 axis cannot hold, CDO 2.1.1 here on 2015-2019.)
Questions, on the 1-degree demo SST of ``benchmarks/data/demo-1deg`` (daily, monthly files):

* ``mean``: time mean then area mean of 5 years (60 files), against
  ``cdo fldmean -timmean -mergetime FILES``;
* ``seasonal``: the seasonal climatology of the same 5 years, against
  ``cdo yseasmean -mergetime FILES``;
* ``model``: time mean then area mean of 5 yearly files (``files:``; written once from the
  same data with ``cdo mergetime``, as a model's output comes), against ``cdo fldmean
  -timmean -mergetime FILES``.

Each is run five ways, interleaved in every repetition after one untimed round (the files
in the page cache for both sides): CDO; the recipe with ``--no-cache``; the recipe again
with every state in a state cache primed by the untimed round (nothing read), into a new
``--out`` each time, the result, figure and report written again ("states cached", with
``pangeo-hpc.cache.copy-results: false``, so the answer of another folder is not copied);
the same command into a new ``--out`` each time, whose answer is copied from the
folder of the untimed round ("copied": :mod:`pangeo_hpc.batch.pipeline.result_copies`);
and the same command again into the ``--out`` of the untimed round, whose answer is served
from the result there (recipe, inputs, options and code unchanged:
:mod:`pangeo_hpc.batch.pipeline.reuse`). The benchmark checks that each said what it did.
Figures: CDO / pangeo-hpc (goal >= 1 with no cache; >= 1 / 0.3 with every state cached,
copied, and for the same command again). What bounds a run that writes its outputs again
is timed in each repetition too: a fresh Python importing xarray, ``dask.array`` and
``matplotlib.figure``, which every run that computes and writes ``result.nc`` and
``plot.png`` imports (a copied or served answer imports none of them). Each
answer is checked against CDO's: 1e-4 relative for the area means (CDO's cell areas differ
from exact ones by up to 5e-5), 1e-6 for the climatology maps.

    python benchmarks/b8_small.py [--repeat 3] [--quick]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.support.options import finish_args, parser
from benchmarks.support.paths import DATA
from benchmarks.support.results import write_result
from benchmarks.support.rows import print_rows, ratio_row

SST = "sea_surface_temperature"
TREE = DATA / "demo-1deg"
START, END = "2015-01", "2019-12"
QUICK_START = "2019-01"
#: CDO / pangeo-hpc goals: no cache at least as fast; every state cached <= 0.3x CDO's time
GOALS = {"no cache": 1.0, "states cached": 1 / 0.3, "copied": 1 / 0.3,
         "same command again": 1 / 0.3}  # fmt: skip

_CHAINS = {
    "mean": "    - time_mean: {}\n    - area_mean: {}\n",
    "seasonal": "    - climatology: {freq: seasonal}\n",
    "model": "    - time_mean: {}\n    - area_mean: {}\n",
}
_CDO = {"mean": "fldmean -timmean", "seasonal": "yseasmean", "model": "fldmean -timmean"}
_RTOL = {"mean": 1e-4, "seasonal": 1e-6, "model": 1e-4}
#: what a run that computes (cached or not) and writes result.nc and plot.png imports
_NEEDED = "xarray, dask.array, matplotlib.figure"
#: the floor of every run that computes: those imports alone, in a fresh process
IMPORTS = [sys.executable, "-c", f"import {_NEEDED}"]


def _months(start: str, end: str) -> list[str]:
    y0, m0 = (int(v) for v in start.split("-"))
    y1, m1 = (int(v) for v in end.split("-"))
    return [f"{k // 12:04d}/{k % 12 + 1:02d}" for k in range(y0 * 12 + m0 - 1, y1 * 12 + m1)]


def monthly_files(start: str, end: str) -> list[Path]:
    """The demo tree's SST files of ``start..end`` (written, or checked, first)."""
    from pangeo_hpc.demo import DemoSpec, generate

    generate(TREE, DemoSpec(resolution=1.0, start=start, end=end, variables=(SST,)))
    return [TREE / ym / "data" / f"{SST}.nc" for ym in _months(start, end)]


def yearly_files(start: str, end: str) -> list[Path]:
    """One file per year (``cdo mergetime`` of its months), written once beside the tree."""
    root = DATA / "model-yearly"
    root.mkdir(exist_ok=True)
    out = []
    for year in range(int(start[:4]), int(end[:4]) + 1):
        path = root / f"sst_day_{year}.nc"
        if not path.exists():
            months = monthly_files(f"{year}-01", f"{year}-12")
            part = path.with_suffix(".part.nc")
            subprocess.run(["cdo", "-s", "-O", "-f", "nc4", "-z", "zip_1", "mergetime",
                            *map(str, months), str(part)], check=True)  # fmt: skip
            part.rename(path)
        out.append(path)
    return out


def recipe_text(question: str, start: str, end: str, files: list[Path]) -> str:
    if question == "model":
        dataset = f'  files: "{files[0].parent}/sst_day_*.nc"\n  variable: {SST}\n'
    else:
        dataset = f'  variable: {SST}\n  start: "{start}"\n  end: "{end}"\n'
    return f"name: b8-{question}\ndataset:\n{dataset}results:\n  answer:\n{_CHAINS[question]}"


def timed(cmd: list[str], env: dict[str, str], *, served: str | None = None) -> float:
    """Wall seconds of ``cmd``; with ``served`` (``"in"`` its folder, ``"copied"`` from
    another), it must have said it reused its result so, else that it did not."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"B8: {' '.join(cmd[:6])} ... failed:\n{done.stderr[-3000:]}")
    first = done.stdout.splitlines()[0] if done.stdout else ""
    said = None
    if first.startswith("reused: "):
        said = "copied" if ", copied to " in first else "in"
    if said != served:
        raise SystemExit(f"B8: {' '.join(cmd[:6])} ... served {said}, not {served}:\n{first}")
    return took


def answers_agree(question: str, ours: Path, cdo: Path) -> float:
    """The largest relative difference of our answer from CDO's (raises past the limit)."""
    import numpy as np
    import xarray as xr

    with xr.open_dataset(ours) as a, xr.open_dataset(cdo) as b:
        mine = np.asarray(a["answer"].values, dtype="f8").squeeze()
        theirs = np.asarray(b[SST].values, dtype="f8").squeeze()
    if question == "seasonal":  # ours by season DJF, MAM, JJA, SON; CDO's by time, same order
        assert mine.shape == theirs.shape, (mine.shape, theirs.shape)
    diff = float(np.nanmax(np.abs(mine - theirs) / np.abs(theirs)))
    if not (np.isnan(mine) == np.isnan(theirs)).all() or diff > _RTOL[question]:
        raise SystemExit(f"B8 {question}: pangeo-hpc and CDO differ by {diff:.2e}")
    return diff


def main(argv: list[str] | None = None) -> int:
    a = finish_args(parser(__doc__).parse_args(argv))
    start = QUICK_START if a.quick else START
    monthly = monthly_files(start, END)
    yearly = yearly_files(start, END)
    work = Path(tempfile.mkdtemp(prefix="b8-"))
    env = {**os.environ, "DASK_PANGEO_HPC__CACHE__FOLDER": str(work / "states")}
    env.pop("AWS_CA_BUNDLE", None)
    nocache_env = {**env, "DASK_PANGEO_HPC__CACHE__FOLDER": str(work / "unused")}
    states_env = {**env, "DASK_PANGEO_HPC__CACHE__COPY_RESULTS": "false"}
    times: dict[tuple[str, str], list[float]] = {}
    diffs: dict[str, float] = {}
    try:
        runs = 0

        def ours(question: str, tag: str, *extra: str, out: str | None = None) -> list[str]:
            nonlocal runs
            runs += 1
            recipe = work / f"{question}.yaml"
            return [sys.executable, "-m", "pangeo_hpc.run", str(recipe), "--data", str(TREE),
                    "--workers", str(a.workers), "--no-progress",
                    "--out", str(work / (out or f"out-{question}-{tag}-{runs}")), *extra]  # fmt: skip

        for q in _CHAINS:
            (work / f"{q}.yaml").write_text(recipe_text(q, start, END, yearly))
        for rep in range(a.repeat + 1):  # round 0: untimed (page cache, state cache, CDO)
            for q in _CHAINS:
                inputs = yearly if q == "model" else monthly
                cdo_out = work / f"cdo-{q}.nc"
                cdo = ["cdo", "-s", "-O", "-a", "-b", "F32", *_CDO[q].split(), "-mergetime", *map(str, inputs),
                       str(cdo_out)]  # fmt: skip
                steps = [
                    ("cdo", cdo, env),
                    ("no cache", ours(q, "nocache", "--no-cache"), nocache_env),
                    ("states cached", ours(q, "states"), states_env),
                    ("copied", ours(q, "copied"), env),
                    ("same command again", ours(q, "", out=f"again-{q}"), env),
                ]
                for how, cmd, e in steps if rep % 2 else reversed(steps):
                    served = {"copied": "copied", "same command again": "in"}.get(how)
                    if rep == 0 and how == "same command again":
                        served = None  # its first run: computed, the others copy it
                    took = timed(cmd, e, served=served)
                    if rep:
                        times.setdefault((q, how), []).append(took)
                if rep == 0:
                    got = sorted(work.glob(f"out-{q}-nocache-*"))[-1] / "result.nc"
                    diffs[q] = answers_agree(q, got, cdo_out)
                for old in work.glob("out-*"):
                    shutil.rmtree(old)
            if rep:  # what bounds a cached run: the imports it needs, in a fresh process
                times.setdefault(("imports", "floor"), []).append(timed(IMPORTS, env))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rows: list[dict[str, Any]] = []
    med = {k: statistics.median(v) for k, v in times.items()}
    files = {"mean": f"{len(monthly)} monthly files", "seasonal": f"{len(monthly)} monthly files",
             "model": f"{len(yearly)} yearly files"}  # fmt: skip
    for q in _CHAINS:
        for how in GOALS:
            what = f"{q} ({_CDO[q]}, {files[q]}), {how}"
            rows.append(ratio_row("B8", what, "warm", med[(q, how)], med[(q, "cdo")], "CDO",
                                  GOALS[how]))  # fmt: skip
        what = f"{q}: the best a run writing its outputs can reach (a fresh Python importing {_NEEDED})"
        rows.append(ratio_row("B8", what, "warm", med[("imports", "floor")], med[(q, "cdo")],
                              "CDO", None))  # fmt: skip
    print_rows(rows)
    write_result(
        "B8",
        {
            "period": [start, END],
            "workers": a.workers,
            "repeat": a.repeat,
            "times_s": {f"{q}/{how}": v for (q, how), v in times.items()},
            "answer_differences": diffs,
            "rows": rows,
        },
        quick=a.quick,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
