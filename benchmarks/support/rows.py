"""What a case reports: rows of ratios against a baseline measured in the same run, rows
of text, the workers' peak memory against its goal, and how far two answers differ."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


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
