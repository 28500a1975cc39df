"""Render ``benchmarks/results/B*.json`` as a markdown table.

The docs' benchmarks page shows it (``docs/_ext/bench_page.py`` calls :func:`table` when
the docs are built), and ``benchmarks/suite.py`` prints it after the cases. Each case names
the commit its result was measured at; :func:`why_not` says when the results are not one
clean run of one commit (from a tree with changes, or from different commits), which the
page shows as a note.

    python benchmarks/report.py [--quick]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks.support.paths import RESULTS
from benchmarks.support.results import describe_machine, tree_state

CASES = ("B1", "B2", "B3", "B4", "B5", "B4-lz4hc", "warmup", "B7", "B8", "B9")


def load(results: Path = RESULTS, *, quick: bool = False) -> dict[str, dict[str, Any]]:
    """The latest result of each case that has one (of ``--quick`` runs if ``quick``)."""
    out = {}
    for case in CASES:
        f = results / f"{case}{'-quick' if quick else ''}.json"
        if f.is_file():
            out[case] = json.loads(f.read_text())
    return out


def commits(results: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Case -> the commit its result was measured at (``+dirty``: with changes)."""
    return {
        k: r.get("machine", {}).get("pangeo_hpc_commit") or "unknown" for k, r in results.items()
    }


def why_not(results: dict[str, dict[str, Any]], head: str | None = None) -> str | None:
    """Why ``results`` are not one clean run of ``head`` (None: they are)."""
    if not results:
        return "no results: run `make bench`"
    by_case = commits(results)
    dirty = [k for k, c in by_case.items() if c.endswith("+dirty") or c == "unknown"]
    if dirty:
        return f"{', '.join(dirty)} measured with uncommitted changes: commit, then re-run them"
    head = head or tree_state().commit
    other = {k: c for k, c in by_case.items() if c != head}
    if other:
        shown = ", ".join(f"{k} at {c}" for k, c in other.items())
        return f"{shown}, not at HEAD {head}: re-run them (`make bench BENCH_ARGS=--cases ...`)"
    return None


def _cell(text: str) -> str:
    """``text`` safe inside a markdown table cell (a ``|`` would end the cell)."""
    return text.replace("|", "\\|")


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f} s" if x < 100 else f"{x:.0f} s"


def _ratio(row: dict[str, Any]) -> str:
    if row.get("ratio") is None:
        return "-"
    if row["what"].startswith("share"):
        return f"{100 * row['ratio']:.0f} %"
    return f"{row['ratio']:.2f}x"


def _goal(rows: list[dict[str, Any]]) -> str:
    goal = rows[0].get("goal")
    met = [r["met"] for r in rows if r.get("met") is not None]
    if goal is None and not met:
        return ""
    verdict = "met" if met and all(met) else "not met" if met and not any(met) else "partly met"
    if goal is None:
        return verdict
    shown = f"{100 * goal:.0f} %" if rows[0]["what"].startswith("share") else f"{goal:g}x"
    return f">= {shown}: {verdict}"


#: the order of a case's rows by their ``cache``: warm, cold, all, then any other
#: (B9's regridding alone, in ``memory``) in the order they came
_CACHES = ("warm", "cold", "all")


def _cache_order(row: dict[str, Any]) -> int:
    cache = row.get("cache")
    return _CACHES.index(cache) if cache in _CACHES else len(_CACHES)


def table(results: dict[str, dict[str, Any]]) -> str:
    """The table: one line on the machine and method, then one row per comparison (warm /
    cold side by side), each case with the commit it was measured at."""
    if not results:
        return "No benchmark results yet: run `make bench`."
    machine = next(iter(results.values()))["machine"]
    dates = sorted({r["date"][:10] for r in results.values()})
    measured_at = ", ".join(sorted(set(commits(results).values())))
    lines = [
        f"`make bench` (`benchmarks/suite.py`; one file per case in `benchmarks/`, JSON in "
        f"`benchmarks/results/`) at commit {measured_at} on {describe_machine(machine)}; "
        f"run {' to '.join([dates[0], dates[-1]] if len(dates) > 1 else dates)}. "
        "Medians of interleaved runs; ratio = the other's time / pangeo-hpc's (above 1: "
        "pangeo-hpc faster); *warm*: files in the page cache, *cold*: dropped from it "
        "first (for the warm-up: a fresh mount, cluster and cache per run). Peak RSS: the "
        "largest resident memory of any worker process during the platform's runs.",
        "",
        "| case | comparison | pangeo-hpc warm / cold | other warm / cold | ratio warm / cold "
        "| goal |",
        "|---|---|---|---|---|---|",
    ]
    at = commits(results)
    for case, res in results.items():
        about = f"{res['summary']}; " if res.get("summary") else ""
        head = f"{case} ({about}at {at[case]})"
        if res.get("skipped"):
            lines.append(f"| {head} | {res['skipped']} | | | | |")
            continue
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in res.get("rows", []):
            groups.setdefault(row["what"], []).append(row)
        for what, rows in groups.items():
            what = _cell(what)
            label, head = head, ""  # the case and its data once, on its first row
            rows.sort(key=_cache_order)
            if rows[0].get("text") is not None:
                text = _cell(" / ".join(r["text"] for r in rows))
                lines.append(f"| {label} | {what} | {text} | | | {_goal(rows)} |")
                continue
            others = sorted({_cell(r["other"]) for r in rows})
            lines.append(
                f"| {label} | {what} ({', '.join(others)}) "
                f"| {' / '.join(_s(r['platform_s']) for r in rows)} "
                f"| {' / '.join(_s(r['other_s']) for r in rows)} "
                f"| {' / '.join(_ratio(r) for r in rows)} | {_goal(rows)} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="the table of --quick runs")
    a = p.parse_args(argv)
    results = load(quick=a.quick)
    print(table(results))
    refused = why_not(results)
    if refused and not a.quick:
        print(f"\nnote: {refused}")


if __name__ == "__main__":
    main()
