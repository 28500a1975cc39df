"""The benchmark suite (issue 6): run the selected cases, then print their table.

Each case runs in its own Python process (its own Dask cluster and memory) and writes
``benchmarks/results/<case>.json``; ``report.py`` renders them as a table, which the docs'
benchmarks page (``docs/_ext/bench_page.py``) shows when it is built: commit the results.
Benchmarks, not tests: nothing here asserts on a time.

    B1  SST global mean over >= 2 GB: vs naive, best xarray, CDO, and the machine's ceiling
    B2  opening 1,000 monthly files: vs open_mfdataset, default and tuned
    B3  monthly climatology over 10 years of daily 0.25-degree data: vs xarray +- flox
    B4  convert once to Zarr, then B1 and B3 on it: vs the NetCDF path, conversion cost
    B5  B1 at 1, 2, 4, 8 GB: time per GB (slope) and peak RSS per worker
    B4-LZ4HC  B4 with ``convert --codec lz4hc`` on 2 years
    WARMUP    warm-up of an rclone mount of a local S3 server: fresh mount and cluster per run
    B7  incremental runs: one more month vs the full run; a run killed at 50 % (SIGKILL, and
        a Slurm walltime through a throttled mount) resumed: bytes read vs the full run's
    B8  small questions on the command line (fresh processes) vs the same CDO line
    B9  regrid to r144x72 + time mean vs era5-sst-mean's throughput and xarray-regrid;
        weights 0.25 -> 1 degree per method; peak RSS (needs B7's demo-1deg tree)

Every case reports the peak RSS of the platform's worker processes. The suite runs only on
a clean tree (``git status`` shows nothing but results) unless given ``--dirty``, so that
each result names the commit it measured (``+dirty`` otherwise; the page says so).

    make bench                      # all cases, full size (B3's data takes a while once)
    python benchmarks/suite.py --cases B1,B2 --repeat 5
    python benchmarks/suite.py --quick          # small data, one run each: checks the wiring
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from tests.support.paths import ROOT

SCRIPTS = {
    "B1": "b1_global_mean.py",
    "B2": "b2_open.py",
    "B3": "b3_climatology.py",
    "B4": "b4_zarr.py",
    "B5": "b5_scaling.py",
    "B4-LZ4HC": "b4_zarr.py",
    "WARMUP": "warmup.py",
    "B7": "b7_incremental.py",
    "B8": "b8_small.py",
    "B9": "b9_regrid.py",
}
#: fixed arguments of a case
FIXED = {"B4-LZ4HC": ["--codec", "lz4hc", "--years", "2"]}
#: which size options each case takes
OPTIONS = {
    "B1": ("gb",),
    "B2": ("files",),
    "B3": ("years",),
    "B4": ("gb", "years"),
    "B5": ("sizes",),
    "B4-LZ4HC": ("gb",),
    "WARMUP": (),
    "B7": (),
    "B8": (),
    "B9": (),  # 20 years (--quick: 1); --years is B3's and B4's 0.25-degree years
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--cases", default=",".join(SCRIPTS), help="comma separated (default %(default)s)"
    )
    p.add_argument("--quick", action="store_true", help="small data, one run each")
    p.add_argument("--repeat", type=int, help="timed runs per case and cache state (default 3)")
    p.add_argument("--cache", help="warm, cold or warm,cold (default warm,cold)")
    p.add_argument("--gb", type=float, help="B1/B4: uncompressed GB")
    p.add_argument("--files", type=int, help="B2: monthly files")
    p.add_argument("--years", type=int, help="B3/B4: years of daily 0.25-degree data")
    p.add_argument("--sizes", help="B5: GB, comma separated")
    p.add_argument(
        "--dirty", action="store_true", help="measure a tree with changes (results: +dirty)"
    )
    a = p.parse_args(argv)
    cases = [c.strip().upper() for c in a.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in SCRIPTS]
    if unknown:
        p.error(f"--cases {','.join(unknown)}: choose from {','.join(SCRIPTS)}")

    from benchmarks.report import load, table, tree_state

    state = tree_state()
    if state.dirty and not (a.quick or a.dirty):
        p.error(
            f"the tree at {state.commit} has changes ({', '.join(state.dirty[:5])}): commit "
            "them first, so that the results name the code they measured (or pass --dirty: "
            "they then say +dirty)"
        )
    failed = []
    for case in cases:
        module = f"benchmarks.{Path(SCRIPTS[case]).stem}"
        args = [sys.executable, "-m", module, *FIXED.get(case, [])]
        if a.quick:
            args.append("--quick")
        for opt in ("repeat", "cache"):
            if getattr(a, opt) is not None and not (case == "WARMUP" and opt == "cache"):
                args += [f"--{opt}", str(getattr(a, opt))]
        for opt in OPTIONS[case]:
            if getattr(a, opt) is not None:
                args += [f"--{opt}", str(getattr(a, opt))]
        print(f"\n===== {case}: {' '.join(args[1:])}", flush=True)
        t = time.perf_counter()
        rc = subprocess.run(args, cwd=ROOT, check=False).returncode  # -m: from the root
        print(
            f"===== {case}: {'done' if rc == 0 else f'FAILED ({rc})'} in "
            f"{time.perf_counter() - t:.0f} s",
            flush=True,
        )
        if rc:
            failed.append(case)

    # --quick results go to <case>-quick.json, which the docs' page never shows
    print("\n" + table(load(quick=a.quick)))
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
