"""The benchmarks page, rendered from ``benchmarks/results/*.json`` at build time.

The suite's table comes from ``benchmarks/report.py`` (the cases of ``make bench``), B6's
from ``benchmarks/b6_recipes.py``; every other result file (``--quick`` runs left out)
gets a section of its own figures. Each names the commit and date it was measured at;
no number on the page is typed by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _flat(prefix: str, value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [row for k, v in value.items() for row in _flat(f"{prefix}{k} / ", v)]
    return [(prefix.rstrip(" /"), value)]


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(_shown(v) for v in value)
    return str(value).replace("|", "\\|")


#: the figures of a result file without rows of the suite's shape worth a table
FIGURES = (
    "summary", "ratios", "ratios_loopback", "ratios_delayed", "goals", "median_s",
    "MB_per_s", "ratio_naive_over_platform", "worst_error", "goal", "index_build_s",
)  # fmt: skip


def other_result(name: str, doc: dict[str, Any]) -> list[str]:
    """A section for a result file of its own shape (plan validation, S3 reads, ...).

    Parameters
    ----------
    name : str
        The file's stem.
    doc : dict
        Its content.

    Returns
    -------
    list of str
        Markdown lines: a heading, when and where it was measured, its figures.
    """
    machine = doc.get("machine") or {}
    commit = machine.get("pangeo_hpc_commit", "not recorded")
    title = doc.get("title") or doc.get("benchmark") or name
    out = [f"### {name}: {title}", ""]
    when = f"`benchmarks/results/{name}.json`, measured at {commit}"
    if doc.get("date"):
        when += f" on {doc['date']}"
    if doc.get("command"):
        when += f" by `{doc['command']}`"
    out += [when + ".", ""]
    rows = doc.get("rows") or []
    if rows and isinstance(rows[0], dict):
        keys = [k for k in rows[0] if not isinstance(rows[0][k], (list, dict))][:8]
        out += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        out += ["| " + " | ".join(_shown(r.get(k, "")) for k in keys) + " |" for r in rows]
        out.append("")
    figures = [(k, v) for key in FIGURES if key in doc for k, v in _flat(f"{key} / ", doc[key])]
    if figures:
        out += ["| figure | value |", "|---|---|"]
        out += [f"| {k} | {_shown(v)} |" for k, v in figures]
        out.append("")
    return out


def markdown(root: Path) -> str:
    """The whole generated part of the benchmarks page.

    Parameters
    ----------
    root : Path
        The repository (``benchmarks/`` and its ``results/``).

    Returns
    -------
    str
        The page fragment that ``docs/benchmarks.md`` includes.
    """
    from benchmarks import b6_recipes, report  # the repository's root is on the path (conf.py)

    bench = root / "benchmarks"
    results = report.load(bench / "results")
    out = ["### The suite (`make bench`)", "", report.table(results), ""]
    mixed = report.why_not(results)
    if mixed:
        out += ["```{note}", f"Not one clean run of one commit: {mixed}.", "```", ""]
    b6 = bench / "results" / "B6.json"
    out += ["### B6: every shipped recipe against era5-sst-mean", ""]
    out += [b6_recipes.markdown(json.loads(b6.read_text())) if b6.is_file() else "No B6 result."]
    out.append("")
    done = {*report.CASES, "B6"}
    for path in sorted((bench / "results").glob("*.json")):
        if path.stem in done or path.stem.endswith("-quick"):
            continue
        out += other_result(path.stem, json.loads(path.read_text()))
    return "\n".join(out)
