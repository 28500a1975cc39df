"""Timed cases: interleaved repetitions in warm and cold page cache, every time kept,
medians and spreads; a screening round that keeps the fastest variants."""

from __future__ import annotations

import contextlib
import gc
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.support.cluster import worker_pids
from benchmarks.support.memory import PeakRSS
from benchmarks.support.pagecache import cold, resident_fraction, warm


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
