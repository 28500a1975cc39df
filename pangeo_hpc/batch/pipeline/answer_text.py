"""A run's answer and reads as text, from its ``summary.json`` alone: the table the
command line prints (:func:`headline_table`, :func:`summary_text`) and the line of what was
read (:func:`reads_line`). Plain Python, no NumPy or xarray: a run served from its previous
result (:mod:`pangeo_hpc.batch.pipeline.reuse`) prints the same lines without importing the
scientific stack."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pangeo_hpc.tables import RULE, text_table

__all__ = ["headline_table", "reads_line", "summary_text"]


#: the table's number columns: header, and the keys of :func:`~.headlines.headlines` each
#: is read from, the first present (a scalar's value is its own mean; a map's, its area mean)
_COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("mean", ("value", "area_mean", "mean")),
    ("min", ("min",)),
    ("max", ("max",)),
    ("first", ("first",)),
    ("last", ("last",)),
    ("trend per decade", ("trend_per_decade",)),
)


def _number(value: Any) -> str:
    """A headline number as :func:`~.headlines.headlines` rounded it; ``n/a`` for ``None``
    (NaN, or an area mean on a grid without cell areas)."""
    return "n/a" if value is None else f"{value:g}"


def _notes(numbers: Mapping[str, Any]) -> str:
    notes = []
    if "steps" in numbers:
        notes.append(f"{numbers['steps']} steps")
    if numbers.get("valid_share") is not None:
        notes.append(f"values in {100 * numbers['valid_share']:.0f} % of cells")
    if numbers["kind"] == "other" and numbers.get("dims"):
        notes.append(" x ".join(f"{k} {n}" for k, n in numbers["dims"].items()))
    return ", ".join(notes)


def _rows(name: str, numbers: Mapping[str, Any]) -> list[list[str]]:
    """The variable's row; a ``maps`` variable's panels each get a row of their area mean."""
    cells = []
    for _, keys in _COLUMNS:
        key = next((k for k in keys if k in numbers), None)
        value = None if key is None else numbers[key]
        cells.append("" if key is None or isinstance(value, dict) else _number(value))
    rows = [[name, numbers["kind"], numbers["units"], *cells, _notes(numbers)]]
    panels = numbers.get("area_mean")
    if isinstance(panels, dict):  # maps: one area mean per panel, by its label
        blank = [""] * (len(_COLUMNS) - 1)
        rows += [[f"  {label}", "", "", _number(v), *blank, ""] for label, v in panels.items()]
    return rows


def headline_table(answer: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The headline numbers of :func:`~.headlines.headlines` as an aligned table, for people.

    One row per variable: its name, kind and units, then ``mean`` (a scalar's value, a
    map's area mean, a series' mean), ``min``, ``max``, a series' ``first``, ``last`` and
    ``trend per decade`` (in the units per decade), and notes (a series' steps, the share
    of a map's cells with a value). A ``maps`` variable gets a row per panel with its area
    mean. A column that no variable has is left out; ``n/a`` is a number that is not known
    (all values missing, or no cell areas). Numbers are printed as rounded in ``answer``,
    so the table and ``summary.json`` agree digit for digit.

    Parameters
    ----------
    answer : mapping
        :func:`~.headlines.headlines`' output (``summary.json``'s ``answer``).

    Returns
    -------
    list of str
        The lines: a header, a rule, the rows.

    Examples
    --------
    >>> answer = {"tp": {"kind": "scalar", "units": "m", "value": 0.000123457}}
    >>> print("\\n".join(headline_table(answer)))
    result  kind    units         mean
    ------  ------  -----  -----------
    tp      scalar  m      0.000123457
    """
    head = ["result", "kind", "units", *(h for h, _ in _COLUMNS), "notes"]
    rows = [row for name, numbers in answer.items() for row in _rows(name, numbers)]
    used = [i < 3 or any(r[i] for r in rows) for i in range(len(head))]

    def kept(row: list[str]) -> list[str]:
        return [c for c, u in zip(row, used, strict=True) if u]

    right = kept([False] * 3 + [True] * len(_COLUMNS) + [False])
    return text_table([kept(head), RULE, *map(kept, rows)], right=right)


def _size(nbytes: int) -> str:
    return f"{nbytes / 1e9:.2f} GB" if nbytes >= 1e9 else f"{nbytes / 1e6:.1f} MB"


def reads_line(summary: Mapping[str, Any]) -> str:
    """One line of what a run read, from its ``summary.json``: the files read, cached and
    not needed, the bytes read (as stored,
    :func:`~pangeo_hpc.batch.pipeline.results.throughput`) and the time.

    Parameters
    ----------
    summary : Mapping[str, Any]
        A run's ``summary.json``.

    Returns
    -------
    str
        The line.

    Examples
    --------
    >>> took = {"compute": 2.14, "total": 9.31}
    >>> reads = {"incremental": True, "files": 24, "files_reused": 18, "files_read": 6,
    ...          "files_skipped": 0, "bytes_read": 17_612_345}
    >>> reads_line({"reads": reads, "timings_s": took, "throughput_MB_per_s": 8.2})
    'read 6 of 24 files (18 cached, 0 not needed): 17.6 MB in 2.1 s (8.2 MB/s); 9.3 s in all'
    >>> reads |= {"files_reused": 24, "files_read": 0, "bytes_read": 0}
    >>> print(reads_line({"reads": reads, "timings_s": took, "throughput_MB_per_s": None}))
    read 0 of 24 files (24 cached, 0 not needed): nothing read, every state from the cache; 9.3 s in all
    """  # noqa: E501
    took, reads = summary["timings_s"], summary.get("reads")
    compute = f"{took['compute']:.1f} s"
    if reads is None:  # a summary made without compute()'s count
        parts = [f"answered in {compute} (reads not counted)"]
    else:
        n, read = reads["files"], reads["files_read"]
        text = f"read {read} of {n} file{'' if n == 1 else 's'}"
        if reads["incremental"]:
            text += f" ({reads['files_reused']} cached, {reads['files_skipped']} not needed)"
        rate = summary.get("throughput_MB_per_s")
        if rate is not None:
            text += f": {_size(reads['bytes_read'])} in {compute} ({rate:.1f} MB/s)"
        elif read:  # files read, bytes not counted (a reader that does not count them)
            text += f": bytes not counted, answered in {compute}"
        else:
            text += ": nothing read"
            if reads["files_reused"]:
                text += ", every state from the cache"
        parts = [text]
    if took.get("total") is not None:
        parts.append(f"{took['total']:.1f} s in all")
    if reads is not None and not reads["incremental"]:
        parts.append(f"not incremental: {reads['why']}")
    return "; ".join(parts)


def summary_text(summary: Mapping[str, Any], *, as_json: bool = False) -> list[str]:
    """A run's answer and reads as the command line prints them, from its ``summary.json``.

    Parameters
    ----------
    summary : mapping
        :attr:`~pangeo_hpc.batch.pipeline.results.RunResult.summary`, or ``summary.json`` read back.
    as_json : bool
        The answer as one line, ``RECIPE: {JSON}`` (``summary["answer"]``, for programs),
        instead of the table (:func:`headline_table`).

    Returns
    -------
    list of str
        The lines: the recipe and period, the answer, :func:`reads_line`.

    Examples
    --------
    >>> from pangeo_hpc.batch.pipeline.answer_text import summary_text
    >>> summary = {"recipe": "era5-sst-mean", "inputs": {"period": ["2000-01", "2000-12"]},
    ...            "answer": {"global_mean": {"kind": "scalar", "units": "K", "value": 291.25}},
    ...            "reads": None, "timings_s": {"compute": 2.1, "total": 9.3}}
    >>> print("\\n".join(summary_text(summary)))
    era5-sst-mean, 2000-01 to 2000-12:
    result       kind    units    mean
    -----------  ------  -----  ------
    global_mean  scalar  K      291.25
    answered in 2.1 s (reads not counted); 9.3 s in all
    >>> summary_text(summary, as_json=True)[0]
    'era5-sst-mean: {"global_mean": {"kind": "scalar", "units": "K", "value": 291.25}}'
    """
    name = summary["recipe"]
    if as_json:
        return [f"{name}: " + json.dumps(summary["answer"]), reads_line(summary)]
    start, end = summary["inputs"]["period"]
    return [f"{name}, {start} to {end}:", *headline_table(summary["answer"]), reads_line(summary)]
