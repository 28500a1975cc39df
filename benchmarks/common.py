"""Shared helpers of the benchmark suite (``benchmarks/suite.py``): not a test, not the package.

* :func:`measure` runs cases in interleaved repetitions (warm and cold page cache) and
  returns every time, with median and spread;
* :func:`cold` / :func:`warm` drop files from the page cache or read them into it;
* :func:`local_client` starts the platform's local Dask cluster (one process per core);
* :class:`PeakRSS` samples the resident memory of the workers (and their children);
* :func:`machine` describes the machine and the versions; :func:`write_result` writes
  ``benchmarks/results/<case>.json``;
* :func:`quarter_degree` and :func:`two_degree` make demo data once under
  ``benchmarks/data/`` (gitignored) and reuse it.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RESULTS = HERE / "results"
VAR = "sea_surface_temperature"
#: uncompressed bytes of one day of 0.25-degree SST (721 x 1440 float32)
DAY_025 = 721 * 1440 * 4
#: mean days per month
MONTH_DAYS = 30.436875

# --------------------------------------------------------------------------- demo data


def _month(start: str, n: int) -> str:
    """The month ``n - 1`` months after ``start`` (YYYY-MM), i.e. the last of ``n`` months."""
    y, m = (int(v) for v in start.split("-"))
    k = y * 12 + m - 1 + n - 1
    return f"{k // 12:04d}-{k % 12 + 1:02d}"


def months_for_gb(gb: float) -> int:
    """Months of daily 0.25-degree SST holding about ``gb`` GB uncompressed (at least 1)."""
    return max(1, round(gb * 1e9 / (DAY_025 * MONTH_DAYS)))


def _generate(root: Path, resolution: float, start: str, end: str) -> None:
    from pangeo_hpc.cli.progress import step_progress
    from pangeo_hpc.demo import DemoSpec, generate

    t = time.perf_counter()
    spec = DemoSpec(resolution=resolution, frequency="daily", start=start, end=end)
    made = generate(root, spec, progress=step_progress(f"  demo data {root.name}", "months"))
    dt = time.perf_counter() - t
    if dt > 2:
        print(f"  demo data {root.name} {start}..{end} ({len(made)} months) ready in {dt:.0f} s")


def quarter_degree(n_months: int, start: str = "2010-01") -> tuple[Path, str, str]:
    """``n_months`` of daily 0.25-degree demo SST from ``start``: (root, start, end).

    All cases share one tree (``benchmarks/data/era5-0.25-daily``, also that of
    ``sst_mean.py``); months already there are not written again.
    """
    root = DATA / "era5-0.25-daily"
    end = _month(start, n_months)
    _generate(root, 0.25, start, end)
    return root, start, end


def two_degree(n_files: int, start: str = "1940-01") -> tuple[Path, str, str]:
    """``n_files`` monthly files of daily 2-degree demo SST from ``start`` (B2's tree)."""
    root = DATA / "era5-2deg-daily"
    end = _month(start, n_files)
    _generate(root, 2.0, start, end)
    return root, start, end


def files_of(root: Path, start: str, end: str) -> list[str]:
    from pangeo_hpc.io.layout import find_files

    return [str(f) for f in find_files(root, VAR, start, end)]


@dataclass(frozen=True)
class DataSize:
    files: int
    bytes_uncompressed: int
    bytes_stored: int

    def describe(self) -> str:
        return (
            f"{self.files} files, {self.bytes_uncompressed / 1e9:.2f} GB uncompressed, "
            f"{self.bytes_stored / 1e9:.2f} GB stored"
        )


def data_size(files: Sequence[str]) -> DataSize:
    """Uncompressed bytes of the variable (from HDF5 metadata) and bytes on disk."""
    import h5py

    raw = 0
    for f in files:
        with h5py.File(f, "r") as h:
            d = h[VAR]
            raw += d.size * d.dtype.itemsize
    return DataSize(len(files), raw, sum(os.path.getsize(f) for f in files))


# --------------------------------------------------------------------------- page cache


def _paths(paths: Sequence[str | Path]) -> Iterator[Path]:
    """Files, with folders (Zarr stores) expanded to the files under them."""
    for p in map(Path, paths):
        if p.is_dir():
            yield from (q for q in p.rglob("*") if q.is_file())
        else:
            yield p


def cold(paths: Sequence[str | Path]) -> None:
    """Drop ``paths`` (files or folders) from the page cache: the next read hits the disk.

    The package's :func:`pangeo_hpc.storage.pagecache.drop_file` on each file (written back
    first, then ``POSIX_FADV_DONTNEED``): no root needed, nothing else on the machine is
    evicted.
    """
    from pangeo_hpc.storage.pagecache import drop_file

    for p in _paths(paths):
        drop_file(p)


def warm(paths: Sequence[str | Path]) -> None:
    """Read ``paths`` (files or folders) through once so that they sit in the page cache
    (:func:`pangeo_hpc.storage.pagecache.read_through`, as the warm-up reads)."""
    from pangeo_hpc.storage.pagecache import read_through

    for p in _paths(paths):
        read_through(p)


def resident_fraction(paths: Sequence[str | Path]) -> float | None:
    """Share of the bytes of ``paths`` in the page cache
    (:func:`pangeo_hpc.storage.pagecache.resident_bytes`, what ``fincore`` prints), or None
    where it cannot be told."""
    from pangeo_hpc.storage.pagecache import resident_bytes

    cached = total = 0
    for p in _paths(paths):
        fd = os.open(p, os.O_RDONLY)
        try:
            resident = resident_bytes(fd)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if resident is None:
            return None
        cached, total = cached + resident, total + size
    return cached / total if total else None


# --------------------------------------------------------------------------- timing


@dataclass
class Case:
    """One thing to time. ``run()`` returns its answer (kept from the warm-up run)."""

    name: str
    run: Callable[[], Any]
    files: Sequence[str | Path] = ()  # dropped from the page cache before a cold run
    kind: str = "baseline"  # platform | baseline | ceiling
    label: str = ""  # longer description for the report
    rss: bool | str = False  # sample the workers' peak RSS ("client": this process's)


@dataclass
class Timings:
    """Every time of every case, per cache state, and what the cases answered."""

    seconds: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    peak_rss: dict[str, dict[str, int]] = field(default_factory=dict)  # case -> worker -> B
    resident_before: dict[str, list[float | None]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # case -> error

    def median(self, cache: str, name: str) -> float:
        """Median seconds; infinite for a case that failed."""
        ts = self.seconds[cache].get(name)
        return statistics.median(ts) if ts else float("inf")

    def stats(self) -> dict[str, dict[str, dict[str, Any]]]:
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for cache, by_case in self.seconds.items():
            out[cache] = {}
            for name, ts in by_case.items():
                if not ts:
                    continue
                med = statistics.median(ts)
                out[cache][name] = {
                    "median_s": med,
                    "min_s": min(ts),
                    "max_s": max(ts),
                    "spread_pct": 100 * (max(ts) - min(ts)) / med if med else 0.0,
                    "runs_s": ts,
                }
        return out


def measure(
    cases: Sequence[Case],
    *,
    repeat: int,
    caches: Sequence[str] = ("warm", "cold"),
    client: Any = None,
    warmup: bool = True,
    answers: dict[str, Any] | None = None,
) -> Timings:
    """Time ``cases`` ``repeat`` times each, interleaved, in every cache state of ``caches``.

    One untimed warm-up run of each case first (worker imports, JIT caches, page cache);
    its answer is kept. Then each repetition runs every case once per cache state, the
    order of the cases rotated by one each repetition so none is always first after a
    cold drop. Before a *warm* run the case's files are read into the page cache (not
    timed); before a *cold* run they are dropped from it. Between runs the workers (and
    this process) collect garbage. Cases named in ``answers`` (already run, e.g. by
    :func:`screen`) skip the warm-up. A baseline that raises is reported in ``failed``
    and left out from then on; the platform raising ends the benchmark.
    """
    t = Timings(seconds={c: {k.name: [] for k in cases} for c in caches})
    t.answers.update(answers or {})
    pids = worker_pids(client) if client is not None else {}

    def tidy() -> None:
        gc.collect()
        if client is not None:
            client.run(gc.collect)

    def run(case: Case, what: str) -> tuple[Any, float] | None:
        watch = {"client": os.getpid()} if case.rss == "client" else pids if case.rss else {}
        sampler = PeakRSS(watch) if watch else contextlib.nullcontext()
        try:
            with sampler:
                s = time.perf_counter()
                answer = case.run()
                dt = time.perf_counter() - s
        except Exception as exc:
            if case.kind == "platform":
                raise
            t.failed[case.name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            print(f"  {what} {case.name:40s} FAILED: {t.failed[case.name]}", flush=True)
            tidy()
            return None
        if isinstance(sampler, PeakRSS):
            peak = t.peak_rss.setdefault(case.name, {})
            for w, b in sampler.peak.items():
                peak[w] = max(peak.get(w, 0), b)
        print(f"  {what} {case.name:40s} {dt:7.2f} s", flush=True)
        tidy()
        return answer, dt

    if warmup:
        for case in cases:
            if case.name not in t.answers:
                warm(case.files)
                done = run(case, "warm-up   ")
                if done:
                    t.answers[case.name] = done[0]
    for rep in range(repeat):
        k = rep % len(cases)
        order = list(cases[k:]) + list(cases[:k])
        for cache in caches:
            for case in order:
                if case.name in t.failed:
                    continue
                (cold if cache == "cold" else warm)(case.files)
                t.resident_before.setdefault(f"{cache}:{case.name}", []).append(
                    resident_fraction(case.files) if cache == "cold" else None
                )
                done = run(case, f"run {rep + 1} {cache}")
                if done:
                    t.answers.setdefault(case.name, done[0])
                    t.seconds[cache][case.name].append(done[1])
    return t


def screen(cases: Sequence[Case], *, keep: int, client: Any = None) -> tuple[list[Case], Timings]:
    """Run each case twice on a warm page cache (warm-up, then one timed run) and return the
    ``keep`` fastest with the timings (state ``screen``): many configurations, few kept for
    the interleaved repetitions of :func:`measure`."""
    t = measure(cases, repeat=1, caches=("warm",), client=client)
    t.seconds = {"screen": t.seconds["warm"]}
    ranked = sorted(
        (c for c in cases if t.seconds["screen"][c.name]),
        key=lambda c: t.seconds["screen"][c.name][0],
    )
    return ranked[:keep], t


def print_table(t: Timings, nbytes: int, names: Sequence[str] | None = None) -> None:
    """Median, spread and throughput (uncompressed MB/s) of each case and cache state."""
    for cache, by_case in t.stats().items():
        if not by_case:
            continue
        print(f"\n{cache} page cache: median of {len(next(iter(by_case.values()))['runs_s'])}")
        print(f"  {'case':40s} {'median s':>9s} {'min..max s':>15s} {'spread':>7s} {'MB/s':>7s}")
        for name, s in by_case.items():
            if names is not None and name not in names:
                continue
            print(
                f"  {name:40s} {s['median_s']:9.2f} {s['min_s']:7.2f}..{s['max_s']:<7.2f}"
                f" {s['spread_pct']:6.0f}% {nbytes / 1e6 / s['median_s']:7.0f}"
            )


def ratio_row(
    case: str,
    what: str,
    cache: str,
    platform_s: float,
    other_s: float,
    other: str,
    goal: float | None,
    *,
    higher_is: str = "other/platform",
) -> dict[str, Any]:
    """One row of the suite's table: ``other_s / platform_s`` against ``goal``."""
    r = other_s / platform_s
    return {
        "case": case,
        "what": what,
        "cache": cache,
        "platform_s": round(platform_s, 3),
        "other": other,
        "other_s": round(other_s, 3),
        "ratio": round(r, 3),
        "ratio_means": higher_is,
        "goal": goal,
        "met": None if goal is None else bool(r >= goal),
    }


def text_row(case: str, what: str, cache: str, text: str, met: bool | None = None) -> dict:
    """A row of the suite's table that is a sentence rather than a ratio (scaling, conversion cost)."""
    return {
        "case": case,
        "what": what,
        "cache": cache,
        "platform_s": None,
        "other": None,
        "other_s": None,
        "ratio": None,
        "ratio_means": None,
        "goal": None,
        "met": met,
        "text": text,
    }


#: the peak resident memory each worker may use (a c5n.18xlarge worker of the FSx study has
#: 150 GB / 36 = 4.2 GB; the platform is to leave most of it to the user's own steps)
RSS_GOAL = 2e9


def rss_row(case: str, peak_rss: dict[str, dict[str, int]], what: str = "") -> dict:
    """A row of the suite's table: the largest peak RSS of any process of the platform's runs (``peak_rss``:
    case -> worker -> bytes, from :class:`PeakRSS`), against :data:`RSS_GOAL`."""
    peaks = {name: max(w.values()) for name, w in peak_rss.items() if w}
    label = what or "peak RSS per worker"
    if not peaks:
        return text_row(case, label, "all", "not measured")
    name, worst = max(peaks.items(), key=lambda kv: kv[1])
    clients = all(set(w) == {"client"} for w in peak_rss.values() if w)
    where = ("this process" if clients else "largest worker") + (
        f", {name}" if len(peaks) > 1 else ""
    )
    text = f"{worst / 1e9:.2f} GB ({where}; goal <= {RSS_GOAL / 1e9:g} GB)"
    return text_row(case, label, "all", text, bool(worst <= RSS_GOAL))


def print_rows(rows: Sequence[dict[str, Any]]) -> None:
    print()
    for r in rows:
        if r.get("text") is not None:
            print(f"  {r['cache']:4s} {r['what']:48s} {r['text']}")
            continue
        goal = (
            ""
            if r["goal"] is None
            else f"  goal >= {r['goal']:g}: {'met' if r['met'] else 'NOT met'}"
        )
        print(
            f"  {r['cache']:4s} {r['what']:48s} {r['ratio']:6.2f}x  "
            f"({r['other']} {r['other_s']:.2f} s / pangeo-hpc {r['platform_s']:.2f} s){goal}"
        )


# --------------------------------------------------------------------------- Dask


@contextlib.contextmanager
def local_client(workers: int | None = None, threads: int | None = None) -> Iterator[Any]:
    """The platform's local cluster (``get_cluster("local")``: one process per core by
    default) and a client on it, closed on exit."""
    from distributed import Client

    from pangeo_hpc.clusters.start import get_cluster

    with (
        get_cluster("local", workers=workers, threads_per_worker=threads) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(len(cluster.workers))
        yield client


def worker_pids(client: Any) -> dict[str, int]:
    """Worker address -> process id."""
    return dict(client.run(os.getpid))


class PeakRSS:
    """Samples the resident set size of processes (with their children) in a thread.

    ``peak`` maps each key of ``pids`` to the largest RSS seen, in bytes.
    """

    def __init__(self, pids: dict[str, int], interval: float = 0.05) -> None:
        import psutil

        self.procs = {k: psutil.Process(p) for k, p in pids.items()}
        self.interval = interval
        self.peak: dict[str, int] = dict.fromkeys(pids, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        import psutil

        for k, p in self.procs.items():
            try:
                rss = p.memory_info().rss
                for c in p.children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        rss += c.memory_info().rss
            except psutil.Error:
                continue
            self.peak[k] = max(self.peak[k], rss)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> PeakRSS:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


# --------------------------------------------------------------------------- reporting


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # not installed
        return None


def machine() -> dict[str, Any]:
    """CPU, cores, memory, kernel, disk and the versions that matter here."""
    import psutil

    cpu = platform.processor()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    cdo = shutil.which("cdo")
    cdo_version = None
    if cdo:
        out = subprocess.run([cdo, "--version"], capture_output=True, text=True, check=False)
        first = (out.stdout or out.stderr).splitlines()[:1]
        cdo_version = first[0].split("version")[-1].split("(")[0].strip() if first else None
    state = tree_state()
    versions = {
        m: _version(m)
        for m in (
            "xarray",
            "dask",
            "distributed",
            "numpy",
            "h5py",
            "h5netcdf",
            "netCDF4",
            "zarr",
            "numcodecs",
            "flox",
            "numba",
        )
    }
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "versions": {**versions, "cdo": cdo_version},
        "pangeo_hpc_commit": state.commit + ("+dirty" if state.dirty else ""),
        "changed_files": state.dirty,
    }


@dataclass(frozen=True)
class TreeState:
    """The code's commit (the last one not only of results) and the paths changed since."""

    commit: str
    dirty: list[str]


#: what a benchmark run itself changes: not a reason to call the tree dirty
_OWN_OUTPUTS = (":(exclude)benchmarks/results",)


def tree_state() -> TreeState:
    """The last commit that changed the project and ``git status --porcelain``, both but
    for the results that the suite writes."""

    def git(*args: str) -> str:
        out = subprocess.run(
            ["git", "-C", str(HERE.parent), *args], capture_output=True, text=True, check=False
        )
        return out.stdout

    # the last commit that changed more than the results: committing
    # the results of a run does not make them stale
    commit = git("log", "-1", "--format=%h", "--", ".", *_OWN_OUTPUTS).strip() or "unknown"
    status = git("status", "--porcelain", "--", ".", *_OWN_OUTPUTS).splitlines()
    return TreeState(commit, [line[3:] for line in status if line.strip()])


def describe_machine(m: dict[str, Any]) -> str:
    v = m["versions"]
    return (
        f"{m['cpu']}, {m['cores']} cores, {m['memory_gib']:g} GiB, Linux {m['kernel']}; "
        f"Python {m['python']}, xarray {v['xarray']}, dask {v['dask']}, h5py {v['h5py']}, "
        f"CDO {v['cdo']}"
    )


def write_result(case: str, doc: dict[str, Any], *, quick: bool = False) -> Path:
    """Write ``benchmarks/results/<case>.json`` (``<case>-quick.json`` for ``--quick``
    runs, which the docs' benchmarks page ignores) with the machine and the date added."""
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{case}{'-quick' if quick else ''}.json"
    full = {
        "case": case,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        **doc,
        "machine": machine(),
    }
    out.write_text(json.dumps(full, indent=2, default=_json_default) + "\n")
    print(f"\nresults: {out}")
    return out


def _json_default(o: object) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


# --------------------------------------------------------------------------- options


def parser(doc: str | None, **defaults: Any) -> argparse.ArgumentParser:
    """The options every case takes: --repeat, --quick, --cache, --workers."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--repeat",
        type=int,
        help=f"timed runs per case (default {defaults.get('repeat', 3)}; --quick 1)",
    )
    p.add_argument("--quick", action="store_true", help="small data, one run: checks the wiring")
    p.add_argument(
        "--cache",
        default=defaults.get("cache", "warm,cold"),
        help="page-cache states to time, comma separated: warm, cold (default %(default)s)",
    )
    p.add_argument("--workers", type=int, default=os.cpu_count(), help="Dask worker processes")
    return p


def add_source(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """``--source TREE`` (an existing era5-pds tree of daily SST, read, never written) and
    ``--period A..B`` (its months)."""
    p.add_argument("--source", default=default, help="an existing era5-pds tree of SST to read")
    p.add_argument("--period", default="2000-01..2019-12", help="months of --source, A..B")


def finish_args(a: argparse.Namespace, default_repeat: int = 3) -> argparse.Namespace:
    if a.repeat is None:
        a.repeat = 1 if a.quick else default_repeat
    a.caches = [c.strip() for c in a.cache.split(",") if c.strip()]
    bad = set(a.caches) - {"warm", "cold"}
    if bad:
        raise SystemExit(f"--cache {a.cache!r}: choose from warm, cold (e.g. --cache warm)")
    return a


def relative_difference(a: Any, b: Any) -> float:
    """Largest ``|a - b| / |b|`` over the values (NaN where both are NaN are equal)."""
    import numpy as np

    a, b = np.asarray(a, dtype="f8"), np.asarray(b, dtype="f8")
    if a.shape != b.shape:
        return float("inf")
    both = np.isnan(a) & np.isnan(b)
    if (np.isnan(a) != np.isnan(b)).any():
        return float("inf")
    d = np.abs(a - b)[~both] / np.maximum(np.abs(b[~both]), 1e-300)
    return float(d.max()) if d.size else 0.0
