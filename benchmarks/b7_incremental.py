"""B7: incremental and resumable runs (issue 19) on the 20-year 1-degree demo SST (a
benchmark, not a test: every figure is a ratio to a baseline measured in the same run).

1. **Append a month.** ``benchmarks/data/demo-1deg`` gets 2020-01 (one more monthly file,
   written once, same settings as the tree; every other benchmark names its period, so
   none sees it). For era5-sst-mean and era5-sst-trend, in this process on one local
   cluster: a full run 2000-01..2019-12 with a fresh state cache, then the update
   2000-01..2020-01 with the same cache (it must read exactly one file), each timed as open
   + compute; the pairs repeated ``--repeat`` times with fresh caches, interleaved, after
   an untimed warm-up of the same three runs on two months. The update's answer is checked
   against a ``cache=False`` run of 2000-01..2020-01 (every result variable, rtol 1e-6).
   Figure: full / update (goal >= 20x). The same pair as CLI subprocesses
   (``python -m pangeo_hpc.run``): wall time with process and cluster start and the
   written outputs, so the ratio is smaller; shown, no goal.
2. **Kill at about 50 %.** A CLI run of era5-sst-trend 2000-01..2019-12 with a fresh cache
   in its own session; once half of the pieces' states are in the cache folder the client
   gets SIGKILL and its orphaned workers a killpg. The re-run's ``bytes_read``
   (``summary.json`` "reads", counted by the package's reader on the workers) against a
   cold full run's in this run (goal <= 55 %); its answer against that run's (rtol 1e-6).
3. **Slurm walltime.** The same on the one-node Slurm: ``sbatch --time=1`` runs the CLI
   (its local cluster inside the allocation) on the tree read through an rclone FUSE mount
   with ``--bwlimit`` (the stored bytes / 90 s: with the job's ~15 s of start-up, Slurm's
   one minute lands near half-way; at 120 s it landed at 32 %), until Slurm ends the job
   (TIMEOUT); then a second job without that limit
   resumes. Its bytes against the full run of part 2 (read without the mount: the bytes
   are counted by the reader, not the mount). Needs root (the mount), rclone, fuse3 and
   Slurm; otherwise the part says why it was skipped.

The machine has 2 cores shared with other work: times move by 10 % or more run to run,
and the kill lands within a few pieces of 50 %. An update of era5-sst-trend (about 0.25 s)
now and then takes 0.1-0.3 s more: NumPy asks for transparent huge pages for its large
arrays and the kernel (``defrag=madvise``) compacts memory to give them, inside the
allocations of the 62 MB monthly fields (seen as main-thread CPU time with few page faults,
gone with NumPy's huge pages off, which makes every run slower): hence five pairs, medians.

    python benchmarks/b7_incremental.py [--repeat 5] [--parts append,kill,slurm] [--quick]
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.support.cluster import local_client
from benchmarks.support.options import finish_args, parser
from benchmarks.support.pagecache import cold, warm
from benchmarks.support.paths import DATA
from benchmarks.support.results import write_result
from benchmarks.support.rows import print_rows, ratio_row, relative_difference, text_row
from tests.support.servers import FolderMount

REPO = Path(__file__).resolve().parent.parent
SST = "sea_surface_temperature"
RECIPES = ("era5-sst-mean", "era5-sst-trend")
KILLED = "era5-sst-trend"
START, END, NEXT = "2000-01", "2019-12", "2020-01"
QUICK_START = "2018-01"
#: the update is to be this many times faster than the full run
SPEEDUP_GOAL = 20.0
#: the resumed run may read at most this share of the full run's bytes
RESUME_GOAL = 0.55
#: share of the pieces whose states are in the cache when the client is killed
KILL_AT = 0.5
RTOL = 1e-6
#: the reads of the cold run through the throttled mount should take about this long
#: (seconds): twice the minute of the job's limit less its start-up (~15 s here)
MOUNT_SECONDS = 90.0
#: an entry of the state cache (temporary files of writes in progress are not)
ENTRY = re.compile(r"[0-9a-f]{64}\.npz")


# --------------------------------------------------------------------------- data


def demo_tree() -> Path:
    """The 1-degree demo tree with the SST of 2000-01..2020-01 (B6's tree plus a month)."""
    from pangeo_hpc.demo import DemoSpec, generate

    root = DATA / "demo-1deg"
    t = time.perf_counter()
    generate(root, DemoSpec(resolution=1.0, start=START, end=NEXT, variables=(SST,)))
    print(f"B7 data: {root} {START}..{NEXT} ({time.perf_counter() - t:.0f} s to check or write)")
    return root


def files_of(root: Path, start: str, end: str) -> list[str]:
    from pangeo_hpc.io.layout import find_files

    return [str(f) for f in find_files(root, SST, start, end)]


def entries(folder: Path) -> int:
    """Entries in a state cache folder (a roll-up counts too: written only at the end)."""
    try:
        return sum(1 for n in os.listdir(folder) if ENTRY.fullmatch(n))
    except FileNotFoundError:
        return 0


def max_difference(a: Any, b: Any) -> float:
    """Largest relative difference ``|a - b| / |b|`` over every data variable of two
    Datasets (inf: they differ in variables, shapes or NaN positions)."""
    if set(a.data_vars) != set(b.data_vars):
        return float("inf")
    return max(relative_difference(a[k].values, b[k].values) for k in a.data_vars)


def scaled_difference(a: Any, b: Any) -> float:
    """Largest ``|a - b|`` over every data variable, each divided by the largest ``|b|`` of
    its variable: says whether a large relative difference sits on a value near zero."""
    import numpy as np

    out = 0.0
    for k in b.data_vars:
        x, y = np.asarray(a[k], "f8"), np.asarray(b[k], "f8")
        scale = np.nanmax(np.abs(y)) if np.isfinite(y).any() else 0.0
        if scale:
            out = max(out, float(np.nanmax(np.abs(x - y))) / scale)
    return out


def open_result(out: Path) -> Any:
    import xarray as xr

    with xr.open_dataset(out / "result.nc") as ds:
        return ds.load()


# --------------------------------------------------------------------------- part 1


def _tidy(client: Any) -> None:
    gc.collect()
    client.run(gc.collect)


def timed_run(client: Any, recipe: str, root: Path, end: str, start: str, cache: Any) -> Any:
    """Open + compute ``recipe`` (``cache``: a StateCache or False): (seconds, Computed)."""
    from pangeo_hpc.batch import open_inputs
    from pangeo_hpc.batch.pipeline.steps import compute

    t = time.perf_counter()
    inputs = open_inputs(recipe, data=root, start=start, end=end)
    computed = compute(inputs, client, cache=cache)
    dt = time.perf_counter() - t
    _tidy(client)
    return dt, computed


def check_update(recipe: str, computed: Any) -> None:
    reads = computed.reads
    if reads is None or not reads.incremental or reads.files_read != 1:
        raise SystemExit(
            f"B7: the update of {recipe} was to read exactly 1 file; it reported "
            f"{None if reads is None else reads.as_dict()}"
        )


def append_in_process(
    root: Path, start: str, repeat: int, caches: list[str], workers: int
) -> dict[str, Any]:
    """Part 1 in this process: full and update times per recipe and page-cache state."""
    from pangeo_hpc.batch.incremental.state_cache import StateCache

    full_files = files_of(root, start, END)
    all_files = files_of(root, start, NEXT)
    out: dict[str, Any] = {
        r: {"full_s": {}, "update_s": {}, "max_rel_diff": 0.0, "max_scaled_diff": 0.0}
        for r in RECIPES
    }
    with local_client(workers) as client:
        print("warm-up (2 months: full, update, whole; not timed)")
        for recipe in RECIPES:
            with tempfile.TemporaryDirectory() as tmp:
                cache = StateCache(tmp)
                timed_run(client, recipe, root, END, "2019-12", cache)
                timed_run(client, recipe, root, NEXT, "2019-12", cache)
                timed_run(client, recipe, root, NEXT, "2019-12", False)
        whole = {}
        for recipe in RECIPES:
            warm(all_files)
            dt, computed = timed_run(client, recipe, root, NEXT, start, False)
            whole[recipe] = computed.result
            print(
                f"  whole run (cache=False) {recipe:16s} {start}..{NEXT} {dt:6.2f} s  "
                f"{computed.reads.line()}"
            )
        for rep in range(repeat):
            order = RECIPES[rep % 2 :] + RECIPES[: rep % 2]
            for page in caches:
                for recipe in order:
                    with tempfile.TemporaryDirectory() as tmp:
                        cache = StateCache(tmp)
                        (cold if page == "cold" else warm)(full_files)
                        tf, full = timed_run(client, recipe, root, END, start, cache)
                        (cold if page == "cold" else warm)(all_files)
                        tu, update = timed_run(client, recipe, root, NEXT, start, cache)
                    check_update(recipe, update)
                    diff = max_difference(update.result, whole[recipe])
                    scaled = scaled_difference(update.result, whole[recipe])
                    r = out[recipe]
                    r["max_rel_diff"] = max(r["max_rel_diff"], diff)
                    r["max_scaled_diff"] = max(r["max_scaled_diff"], scaled)
                    r["full_s"].setdefault(page, []).append(tf)
                    r["update_s"].setdefault(page, []).append(tu)
                    r["update_reads"] = update.reads.as_dict()
                    r["full_reads"] = full.reads.as_dict()
                    print(
                        f"  run {rep + 1} {page} {recipe:16s} full {tf:6.2f} s, update "
                        f"{tu:5.2f} s = {tf / tu:5.1f}x  ({update.reads.line()}; vs whole: max "
                        f"rel. diff {diff:.1e}, scaled {scaled:.1e})",
                        flush=True,
                    )
    return out


# --------------------------------------------------------------------------- the CLI


def cli_env(cache: Path) -> dict[str, str]:
    env = {**os.environ, "DASK_PANGEO_HPC__CACHE__FOLDER": str(cache)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def cli_args(recipe: str, data: Path, start: str, end: str, out: Path, workers: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pangeo_hpc.run",
        recipe,
        "--data",
        str(data),
        "--start",
        start,
        "--end",
        end,
        "--out",
        str(out),
        "--workers",
        str(workers),
        "--no-progress",
    ]


def cli_run(
    recipe: str, data: Path, start: str, end: str, out: Path, cache: Path, workers: int
) -> tuple[float, dict[str, Any]]:
    """A CLI run to its end: (wall seconds, summary.json's "reads")."""
    t = time.perf_counter()
    done = subprocess.run(
        cli_args(recipe, data, start, end, out, workers),
        env=cli_env(cache),
        capture_output=True,
        text=True,
        check=False,
    )
    dt = time.perf_counter() - t
    if done.returncode:
        raise SystemExit(f"B7: {recipe} {start}..{end} failed ({done.returncode}):\n{done.stderr}")
    return dt, json.loads((out / "summary.json").read_text())["reads"]


def append_cli(root: Path, start: str, repeat: int, workers: int, tmp: Path) -> dict[str, Any]:
    """Part 1 through the CLI: full then update with one fresh cache folder per pair."""
    out: dict[str, Any] = {r: {"full_s": [], "update_s": []} for r in RECIPES}
    warm(files_of(root, start, NEXT))
    for rep in range(repeat):
        for recipe in RECIPES[rep % 2 :] + RECIPES[: rep % 2]:
            where = tmp / f"cli-{recipe}-{rep}"
            cache = where / "cache"
            tf, full = cli_run(recipe, root, start, END, where / "full", cache, workers)
            tu, update = cli_run(recipe, root, start, NEXT, where / "update", cache, workers)
            if update.get("files_read") != 1:
                raise SystemExit(f"B7: the CLI update of {recipe} read {update}")
            out[recipe]["full_s"].append(tf)
            out[recipe]["update_s"].append(tu)
            out[recipe]["full_out"] = where / "full"
            out[recipe]["full_reads"] = full
            print(
                f"  CLI run {rep + 1} {recipe:16s} full {tf:6.2f} s, update {tu:5.2f} s = "
                f"{tf / tu:4.1f}x",
                flush=True,
            )
    return out


# --------------------------------------------------------------------------- part 2


def killed_run(
    recipe: str, root: Path, start: str, out: Path, cache: Path, workers: int, n_pieces: int
) -> dict[str, Any]:
    """A CLI run killed (SIGKILL, then its process group) once ``KILL_AT`` of the pieces'
    states are in ``cache``: the share of pieces done, or why the kill missed."""
    log = out.parent / f"{out.name}.log"
    with log.open("w") as f:
        proc = subprocess.Popen(
            cli_args(recipe, root, start, END, out, workers),
            env=cli_env(cache),
            stdout=f,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    target = round(KILL_AT * n_pieces)
    t = time.perf_counter()
    seen = 0
    while proc.poll() is None:
        seen = entries(cache)
        if seen >= target:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):  # its workers, orphaned
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = entries(cache)  # a rename may have landed between the count and the kill
    return {
        "killed_after_s": round(time.perf_counter() - t, 1),
        "finished_before_kill": seen < target,
        "pieces_done": min(done, n_pieces),
        "share_done": min(done, n_pieces) / n_pieces,
    }


def kill_and_resume(
    root: Path, start: str, workers: int, tmp: Path, full: tuple[dict[str, Any], Path] | None
) -> dict[str, Any]:
    n_pieces = len(files_of(root, start, END))
    warm(files_of(root, start, END))
    if full is None:
        where = tmp / "kill-full"
        _, reads = cli_run(KILLED, root, start, END, where / "out", where / "cache", workers)
        full = (reads, where / "out")
    full_reads, full_out = full
    where = tmp / "kill"
    cache = where / "cache"
    where.mkdir(parents=True, exist_ok=True)
    kill = killed_run(KILLED, root, start, where / "killed", cache, workers, n_pieces)
    print(
        f"  killed {KILLED} after {kill['killed_after_s']} s with {kill['pieces_done']} of "
        f"{n_pieces} pieces' states saved ({100 * kill['share_done']:.0f} %)"
    )
    tr, reads = cli_run(KILLED, root, start, END, where / "resumed", cache, workers)
    diff = max_difference(open_result(where / "resumed"), open_result(full_out))
    share = reads["bytes_read"] / full_reads["bytes_read"]
    print(
        f"  resumed in {tr:.1f} s: {reads['files_reused']} files' states reused, "
        f"{reads['files_read']} read, {reads['bytes_read'] / 1e6:.1f} MB = {100 * share:.0f} % "
        f"of the full run's {full_reads['bytes_read'] / 1e6:.1f} MB; max rel. diff {diff:.1e}"
    )
    return {
        **kill,
        "n_pieces": n_pieces,
        "resumed_s": tr,
        "resumed_reads": reads,
        "full_reads": full_reads,
        "full_out": full_out,
        "share_read": share,
        "max_rel_diff": diff,
    }


# --------------------------------------------------------------------------- part 3


def slurm_missing() -> str | None:
    """Why part 3 cannot run here, or None."""
    if os.geteuid() != 0:
        return "not root: cannot mount with rclone"
    for tool in ("rclone", "sbatch", "scontrol", "fusermount3"):
        if shutil.which(tool) is None:
            return f"{tool} not found"
    if not Path("/dev/fuse").exists():
        return "no /dev/fuse"
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, check=False)
    if "UP" not in ping.stdout:
        return "Slurm does not answer (make system starts it)"
    return None


@contextlib.contextmanager
def rclone_mount(tree: Path, mountpoint: Path, bwlimit: str | None) -> Iterator[Path]:
    """``tree`` read-only through ``rclone mount`` (throttled to ``bwlimit`` per second, e.g.
    6M): the tests' :class:`~tests.support.servers.FolderMount`, its VFS cache off."""
    cache = mountpoint.parent / f"{mountpoint.name}-rclone-cache"
    with FolderMount(tree, mountpoint, cache, bwlimit=bwlimit, extra_args=["--read-only"]) as m:
        yield m.mountpoint


def job_state(job: str) -> dict[str, str]:
    """``scontrol show job``'s fields (accounting is off here: no sacct)."""
    out = subprocess.run(
        ["scontrol", "show", "job", job], capture_output=True, text=True, check=False
    ).stdout
    return dict(re.findall(r"(\w+)=(\S*)", out))


def sbatch(args: list[str], where: Path, name: str, limit: str, env: dict[str, str]) -> str:
    script = where / f"{name}.sh"
    script.write_text("#!/bin/bash\nexec " + " ".join(args) + "\n")
    done = subprocess.run(
        [
            "sbatch",
            "--parsable",
            f"--time={limit}",
            f"--job-name=b7-{name}",
            "--cpus-per-task=2",
            "--mem=4G",
            f"--output={where / name}-%j.out",
            f"--chdir={where}",
            str(script),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().split(";")[0]


def wait_job(job: str, timeout: float) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        state = job_state(job)
        if state.get("JobState") not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
            return state
        if time.monotonic() > deadline:
            subprocess.run(["scancel", job], check=False)
            return {**state, "JobState": f"{state.get('JobState')} (cancelled by B7: too long)"}
        time.sleep(1)


def slurm_walltime(
    root: Path, start: str, workers: int, tmp: Path, full: tuple[dict[str, Any], Path]
) -> dict[str, Any]:
    why = slurm_missing()
    if why:
        print(f"  skipped: {why}")
        return {"skipped": why}
    full_reads, full_out = full
    files = files_of(root, start, END)
    stored = sum(os.path.getsize(f) for f in files)
    bwlimit = f"{max(0.1, stored / 2**20 / MOUNT_SECONDS):.1f}M"
    where = tmp / "slurm"
    cache, mnt = where / "cache", where / "mnt"
    where.mkdir(parents=True)
    env = cli_env(cache)
    print(
        f"  {len(files)} files, {stored / 1e6:.0f} MB stored, read through rclone --bwlimit "
        f"{bwlimit} (a cold run about {MOUNT_SECONDS:.0f} s)"
    )
    with rclone_mount(root, mnt, bwlimit):
        args = cli_args(KILLED, mnt, start, END, where / "timed-out", workers)
        job = sbatch(args, where, "walltime", "1", env)
        t = time.perf_counter()
        first = wait_job(job, 600)
        elapsed = time.perf_counter() - t
    done = min(entries(cache), len(files))
    state = first.get("JobState", "?")
    print(
        f"  job {job} --time=1: {state} after {elapsed:.0f} s (RunTime {first.get('RunTime')}); "
        f"{done} of {len(files)} pieces' states saved"
    )
    out: dict[str, Any] = {
        "bwlimit": bwlimit,
        "job": job,
        "state": state,
        "run_time": first.get("RunTime"),
        "pieces_done": done,
        "n_pieces": len(files),
        "share_done": done / len(files),
    }
    if state != "TIMEOUT" or done == 0 or done >= len(files):
        out["problem"] = (
            f"the job ended {state}, not TIMEOUT"
            if state != "TIMEOUT"
            else "no state was saved before the time limit"
            if done == 0
            else "the run finished before the time limit"
        ) + ": not met, retry (another --bwlimit)"
        print(f"  {out['problem']}")
        return out
    # resumed through the same paths (the cache keys name them), unthrottled: what counts
    # is the bytes the reader reads, not how fast the mount serves them
    with rclone_mount(root, mnt, None):
        args = cli_args(KILLED, mnt, start, END, where / "resumed", workers)
        second = wait_job(sbatch(args, where, "resumed", "15", env), 900)
    if second.get("JobState") != "COMPLETED":
        out["problem"] = f"the resumed job ended {second.get('JobState')}: not met, retry"
        print(f"  {out['problem']}")
        return out
    reads = json.loads((where / "resumed" / "summary.json").read_text())["reads"]
    diff = max_difference(open_result(where / "resumed"), open_result(full_out))
    share = reads["bytes_read"] / full_reads["bytes_read"]
    print(
        f"  resumed job: {reads['files_reused']} files' states reused, {reads['files_read']} "
        f"read, {reads['bytes_read'] / 1e6:.1f} MB = {100 * share:.0f} % of the full run's; "
        f"max rel. diff {diff:.1e}"
    )
    return {**out, "resumed_reads": reads, "share_read": share, "max_rel_diff": diff}


# --------------------------------------------------------------------------- main


def median(ts: list[float]) -> float:
    return statistics.median(ts) if ts else float("inf")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress in a log
    p = parser(__doc__, cache="warm")
    p.add_argument("--parts", default="append,kill,slurm", help="of append, kill, slurm")
    p.add_argument("--cli-repeat", type=int, help="CLI pairs per recipe (default 1)")
    a = finish_args(p.parse_args(argv), default_repeat=5)
    parts = {s.strip() for s in a.parts.split(",") if s.strip()}
    if parts - {"append", "kill", "slurm"}:
        p.error(f"--parts {a.parts!r}: choose from append, kill, slurm")
    cli_repeat = a.cli_repeat or 1
    start = QUICK_START if a.quick else START
    root = demo_tree()
    rows: list[dict[str, Any]] = []
    doc: dict[str, Any] = {
        "title": "incremental and resumable runs: append a month, kill and resume",
        "summary": f"{start}..{END} + {NEXT}, daily 1-degree SST, {a.workers} workers",
        "params": {
            "start": start,
            "end": END,
            "next": NEXT,
            "workers": a.workers,
            "repeat": a.repeat,
            "cli_repeat": cli_repeat,
        },
    }
    with tempfile.TemporaryDirectory(prefix="b7-") as scratch:
        tmp = Path(scratch)
        full_cli = None
        if "append" in parts:
            print(f"\n1. append {NEXT} to {start}..{END}: full run, then the update (in process)")
            inproc = append_in_process(root, start, a.repeat, a.caches, a.workers)
            print(f"\n1b. the same through the CLI ({cli_repeat} pair(s) per recipe)")
            cli = append_cli(root, start, cli_repeat, a.workers, tmp)
            full_cli = (cli[KILLED]["full_reads"], cli[KILLED]["full_out"])
            for recipe in RECIPES:
                r = inproc[recipe]
                for page in a.caches:
                    tf, tu = median(r["full_s"][page]), median(r["update_s"][page])
                    rows.append(
                        ratio_row(
                            "B7",
                            f"{recipe}: update with {NEXT} vs full run",
                            page,
                            tu,
                            tf,
                            "full run",
                            SPEEDUP_GOAL,
                        )
                    )
                c = cli[recipe]
                tf, tu = median(c["full_s"]), median(c["update_s"])
                row = ratio_row(
                    "B7",
                    f"{recipe}: the same as CLI runs (process, cluster, outputs included)",
                    "warm",
                    tu,
                    tf,
                    "full CLI run",
                    None,
                )
                rows.append(row)
                rows.append(
                    text_row(
                        "B7",
                        f"{recipe}: update's answer vs a cache=False run",
                        "all",
                        f"max rel. diff {r['max_rel_diff']:.1e} (rtol {RTOL:g}); max abs. diff / "
                        f"the variable's largest value {r['max_scaled_diff']:.1e}",
                        r["max_rel_diff"] <= RTOL,
                    )
                )
            doc["append"] = {"in_process": inproc, "cli": cli}
        if "kill" in parts or "slurm" in parts:
            print(f"\n2. kill {KILLED} at ~{100 * KILL_AT:.0f} % (SIGKILL), resume")
            kill = kill_and_resume(root, start, a.workers, tmp, full_cli)
            full_cli = (kill["full_reads"], kill["full_out"])
            doc["kill"] = kill
            if "kill" in parts:
                rows.append(_resume_row("SIGKILL of the client", kill))
        if "slurm" in parts:
            print(f"\n3. Slurm: sbatch --time=1 ends {KILLED} (through a throttled mount), resume")
            slurm = slurm_walltime(root, start, a.workers, tmp, full_cli)
            doc["slurm"] = slurm
            if slurm.get("skipped"):
                rows.append(
                    text_row("B7", "Slurm walltime, resumed", "all", f"skipped: {slurm['skipped']}")
                )
            elif slurm.get("problem"):
                rows.append(
                    text_row("B7", "Slurm walltime, resumed", "all", slurm["problem"], False)
                )
            else:
                rows.append(_resume_row("Slurm walltime (TIMEOUT)", slurm))
    print_rows(rows)
    doc["rows"] = rows
    write_result("B7", doc, quick=a.quick)
    return doc


def _resume_row(what: str, r: dict[str, Any]) -> dict[str, Any]:
    met = bool(r["share_read"] <= RESUME_GOAL and r["max_rel_diff"] <= RTOL)
    text = (
        f"killed at {100 * r['share_done']:.0f} % of {r['n_pieces']} pieces; resumed run read "
        f"{100 * r['share_read']:.0f} % of the full run's bytes (goal <= "
        f"{100 * RESUME_GOAL:.0f} %), max rel. diff {r['max_rel_diff']:.1e}"
    )
    return text_row("B7", f"{what}, resumed", "all", text, met)


if __name__ == "__main__":
    main()
