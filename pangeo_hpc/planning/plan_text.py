"""A plan as the table a terminal shows: its inputs, one row per node count with the ranges
the calibration measured, and the recommendation (:meth:`pangeo_hpc.planning.plan.Plan.text`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pangeo_hpc.tables import text_table

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pangeo_hpc.planning.model import Model
    from pangeo_hpc.planning.reads import Reads

__all__ = ["fewest_nodes", "plan_text", "rows_text"]


def fewest_nodes(rows: Sequence[Mapping[str, Any]], within: float = 0.1) -> Mapping[str, Any]:
    """The row of the fewest nodes whose wall time is within ``within`` of the fastest.

    Parameters
    ----------
    rows : Sequence[Mapping[str, Any]]
        The plan's rows (``nodes``, ``wall`` ...).
    within : float, optional
        Fraction above the fastest wall time still accepted.

    Returns
    -------
    Mapping[str, Any]
        The row.

    Examples
    --------
    >>> from pangeo_hpc.planning.plan_text import fewest_nodes
    >>> rows = [{"nodes": n, "wall_s": s} for n, s in [(1, 52.4), (2, 38.2), (4, 36.0)]]
    >>> fewest_nodes(rows)["nodes"]  # 38.2 s is within 10 % of 36.0 s
    2
    """
    fastest = min(r["wall_s"] for r in rows)
    return min((r for r in rows if r["wall_s"] <= fastest * (1 + within)), key=lambda r: r["nodes"])


def plan_text(
    recipe: str,
    m: Model,
    rows: Sequence[Mapping[str, Any]],
    sources: Mapping[str, str],
    r: Reads | None,
) -> str:
    """A plan of ``recipe`` (its model ``m``, ``rows`` per node count, where its figures came
    from and what it reads) as a table a terminal shows, with a recommendation.

    Parameters
    ----------
    recipe : str
        The recipe's name.
    m : Model
        The model the rows come from.
    rows : Sequence[Mapping[str, Any]]
        One row per node count.
    sources : Mapping[str, str]
        What each figure came from (calibration, shipped, given).
    r : Reads or None
        What the recipe reads (files, bytes), or ``None``.

    Returns
    -------
    str
        The text, several lines.

    Examples
    --------
    >>> from pangeo_hpc.planning.model import Model, parse_storage
    >>> from pangeo_hpc.planning.plan_text import plan_text
    >>> m = Model(size=300 * 10**9, ratio=2.73, chunk=128 * 10**6, tasks_per_chunk=5.0,
    ...           process_rate=185e6, task_overhead=0.0025, fixed=0.0, processes=36, cores=72,
    ...           storage=parse_storage("fsx:2880MB/s"))
    >>> text = plan_text("era5-sst-mean", m, [m.predict(n) for n in (1, 2, 4)], {}, None)
    >>> print(text.splitlines()[-1])
    fewest nodes within 10 % of the fastest: 2 (38.2 s, storage-bound)
    """
    lines = [
        f"plan for {recipe}"
        + (f" on {r.period[0]}..{r.period[1]}" if r else "")
        + f": {m.size / 1e9:,.1f} GB uncompressed "
        + ("to read " if r else "")
        + f"({m.size / m.ratio / 1e9:,.1f} GB stored, ratio {m.ratio:.2f}), "
        f"{math.ceil(m.size / m.chunk):,} chunks of {m.chunk / 1e6:,.0f} MB",
        f"nodes: {m.processes} processes, {m.cores} cores"
        + (f", network {m.network / 1e6:,.0f} MB/s" if m.network else "")
        + (f", ${m.price:g}/node-hour" if m.price is not None else "")
        + f"; storage {m.storage.describe()}",
        f"measured: {m.process_rate / 1e6:,.0f} MB/s per process; per task "
        f"{m.task_cost * 1e3:.2f} ms on its worker, {m.task_overhead * 1e3:.2f} ms on the "
        f"scheduler (+{m.overhead_per_worker * 1e6:.2f} us per worker); "
        f"{m.warmup:.2f} s warm-up per worker; {m.fixed:.2f} s per run",
        _range_line(m),
    ]
    if r is not None:
        lines.insert(1, f"inputs: {r.line()}")
    lines += [f"  {k}: {v}" for k, v in sources.items()]
    files = (r.files_to_read, r.files) if r is not None else None
    return "\n".join([*lines, *rows_text(m, rows, files)])


def rows_text(
    m: Model, rows: Sequence[Mapping[str, Any]], files: tuple[int, int] | None = None
) -> list[str]:
    """The table of ``rows`` (one per node count; ``m`` tells whether the jobs' start and
    a price are known) and the recommendation, as lines; ``files``: (to read, in all).

    Parameters
    ----------
    m : Model
        The model the rows come from.
    rows : Sequence[Mapping[str, Any]]
        One row per node count.
    files : tuple[int, int], optional
        Files to read and files in all, or ``None``.

    Returns
    -------
    list[str]
        The lines.

    Examples
    --------
    >>> from pangeo_hpc.planning.model import Model, parse_storage
    >>> from pangeo_hpc.planning.plan_text import rows_text
    >>> m = Model(size=300 * 10**9, ratio=2.73, chunk=128 * 10**6, tasks_per_chunk=5.0,
    ...           process_rate=185e6, task_overhead=0.0025, fixed=0.0, processes=36, cores=72,
    ...           storage=parse_storage("fsx:2880MB/s"))
    >>> lines = rows_text(m, [m.predict(n) for n in (1, 2)])
    >>> lines[1].split()[:4]
    ['nodes', 'workers', 'tasks', 'chunks/proc']
    >>> print(lines[-1])
    <BLANKLINE>
    fewest nodes within 10 % of the fastest: 2 (38.2 s, storage-bound)
    """
    lines: list[str] = []
    starts = m.queue != (0.0, 0.0) or m.arrival != (0.0, 0.0)
    head = ["nodes", "workers", "tasks", "chunks/proc", "chunk s"]
    head += ["start", "wall"] if starts else ["wall"]
    head += ["effic.", "tail", "bottleneck", "read MB/s"]
    head += ["cost $"] if m.price is not None else ["node-h"]
    cells = []
    for row in rows:
        start = [_span(row["start_low_s"], row["start_high_s"], _duration)] if starts else []
        end = (row["cost_low"], row["cost_high"]) if m.price is not None else (
            row["node_hours_low"], row["node_hours_high"])  # fmt: skip
        cells.append([f"{row['nodes']}", f"{row['workers']:,}", f"{row['tasks']:,}",
                     f"{row['chunks_per_process']:.2f}", f"{row['chunk_s']:.3f}", *start,
                     _span(row["wall_low_s"], row["wall_high_s"], _duration),
                     f"{row['efficiency']:.0%}", f"{row['tail_efficiency']:.0%}",
                     row["bottleneck"], f"{row['read_MB_s']:,.0f}",
                     _span(*end, lambda x: f"{x:.4f}")])  # fmt: skip
    gap = head.index("bottleneck")
    widths = [6, 8, 8, 11, 8, *([12] if starts else []), 16, 7, 5, 11, 10, 16]
    table = text_table(
        [head, *cells],
        right=[h != "bottleneck" for h in head],
        widths=widths,
        sep=[" "] * (gap - 1) + ["  "] + [" "] * (len(head) - gap - 1),
    )
    lines += ["", *table]
    b = fewest_nodes(rows)
    lines.append(
        f"\nfewest nodes within 10 % of the fastest: {b['nodes']} "
        f"({_span(b['wall_low_s'], b['wall_high_s'], _duration)}, {b['bottleneck']}-bound"
        + (
            f", ${_span(b['cost_low'], b['cost_high'], lambda x: f'{x:.4f}')}"
            if b["cost"] is not None
            else ""
        )
        + (f"; {files[0]} of {files[1]} files to read" if files else "")
        + ")"
    )
    return lines


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _span(low: float, high: float, show: Any) -> str:
    """``7.8-9.1 s`` (one figure when both ends show the same)."""
    a, b = show(low), show(high)
    if a == b:
        return a
    unit_a, unit_b = a.rpartition(" ")[2], b.rpartition(" ")[2]
    if " " in a and unit_a == unit_b:
        return f"{a.rpartition(' ')[0]}-{b}"
    return f"{a}-{b}"


def _range_line(m: Model) -> str:
    """Where the ranges come from, in one line."""
    lo, hi = m.spread
    text = (
        f"range: the calibration's repeated runs took x{lo:.2f}..x{hi:.2f} of their median"
        if (lo, hi) != (1.0, 1.0)
        else "range: none measured (calibrate to measure repeated runs)"
    )
    if m.queue == (0.0, 0.0) and m.arrival != (0.0, 0.0):
        text += f"; workers start in {m.arrival[0]:.1f}-{m.arrival[1]:.1f} s (a local cluster)"
    elif m.queue != (0.0, 0.0) or m.arrival != (0.0, 0.0):
        text += (
            f"; jobs queue {m.queue[0]:.1f}-{m.queue[1]:.1f} s, workers arrive "
            f"{m.arrival[0]:.1f}-{m.arrival[1]:.1f} s after the job starts (billed)"
        )
    return text
