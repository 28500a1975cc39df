"""Roll-ups: per chain, one cache entry holding its states merged over every file of the
last run (for a reduction to periods, the finished values), so that an update loads one
entry and the new files' states instead of one entry per file.

A roll-up lists the entry keys of the pieces merged into it; a run uses it only if every
piece it holds is a piece of this run (no file changed, the period does not start later),
and for reductions to periods only if no piece outside it adds to a period it finished.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pangeo_hpc.batch.incremental.keys import entry_key
from pangeo_hpc.batch.incremental.plan import Prepared, ResultPlan
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.batch.incremental.states import keeps_values
from pangeo_hpc.recipes.aggregations import State

#: a roll-up is written again once the pieces outside it (each loaded from its own entry)
#: are this share of those it holds: a month added to 20 years loads one small entry more
#: rather than writing 20 years of states again
ROLLUP_SHARE = 0.05
#: the array of a roll-up entry that lists the entry keys of the pieces merged into it
_PIECES = "merged_pieces"


def _rollup_key(prepared: Prepared, c: str) -> str:
    """The roll-up of chain ``c`` over this tree (``source_root``, else the folder its
    files share): one entry, replaced as runs go on."""
    if prepared.root:
        return entry_key([], f"rollup:{c}:{prepared.root}")
    parts = [f.split("/") for _, _, fs in prepared.pieces for f in fs]
    common = []
    for column in zip(*parts, strict=False):
        if any(name != column[0] for name in column):
            break
        common.append(column[0])
    return entry_key([], f"rollup:{c}:{'/'.join(common)}")


def rollup_pieces(cache: StateCache, prepared: Prepared, c: str, report: bool = True) -> set[int]:
    """The pieces of this run the roll-up of chain ``c`` holds (its list of pieces read
    alone): none if it holds a piece this run has not (a file changed, the period starts
    later), or finished groups a piece outside it adds to. ``report``: a roll-up that
    cannot be read is reported and removed (:meth:`StateCache.get`).

    Parameters
    ----------
    cache : StateCache
        The state cache.
    prepared : Prepared
        The run's plan.
    c : str
        The chain's hash.
    report : bool, optional
        Report and remove a roll-up that cannot be read.

    Returns
    -------
    set[int]
        The pieces.

    Examples
    --------
    >>> from pangeo_hpc.batch.incremental.rollups import rollup_pieces
    >>> rollup_pieces(cache, prepared, prepared.results[0].chain)  # doctest: +SKIP
    """
    key = _rollup_key(prepared, c)
    held = cache.peek(key, _PIECES)
    if held is None:
        if report and cache.has(key):
            cache.get(key)  # damaged: a warning, removed
        return set()
    covered = _covered(prepared, c, held) or set()
    plan = prepared.chains[c]
    if covered and keeps_values(plan):  # finished groups: no other file may add to them
        others = set(range(len(prepared.pieces))) - covered
        if _piece_groups(plan, covered) & _piece_groups(plan, others):
            return set()
    return covered


def _piece_groups(plan: ResultPlan, pieces: Any) -> set[int]:
    """The groups (labels) the time steps of ``pieces`` fall in."""
    out: set[int] = set()
    for i in pieces:
        a, b = plan.rows[i]
        out.update(int(v) for v in np.unique(plan.labels[a:b]) if v >= 0)
    return out


def load_rollup(cache: StateCache, prepared: Prepared, c: str, covered: set[int]) -> State | None:
    """The roll-up of chain ``c`` if it still holds just the pieces ``covered`` (another run
    may have replaced it since, or it may be damaged: then none).

    Parameters
    ----------
    cache : StateCache
        The state cache.
    prepared : Prepared
        The run's plan.
    c : str
        The chain's hash.
    covered : set[int]
        The pieces it should hold (:func:`rollup_pieces`).

    Returns
    -------
    State or None
        The roll-up, or ``None``.

    Examples
    --------
    >>> from pangeo_hpc.batch.incremental.rollups import load_rollup, rollup_pieces
    >>> covered = rollup_pieces(cache, prepared, chain)  # doctest: +SKIP
    >>> rolled = load_rollup(cache, prepared, chain, covered)  # doctest: +SKIP
    """
    if not covered:
        return None
    got = cache.get(_rollup_key(prepared, c))
    if got is None:
        return None
    arrays, _ = got
    if _covered(prepared, c, arrays.pop(_PIECES)) != covered:
        return None
    return arrays


def _covered(prepared: Prepared, c: str, held: np.ndarray) -> set[int] | None:
    """The pieces of this run a roll-up of chain ``c`` holding the entry keys ``held``
    covers, or ``None`` if it holds any other piece (then it is of no use)."""
    keys = set(held.tolist())
    mine = {prepared.keys[c, i]: i for i in range(len(prepared.pieces))}
    if not keys <= mine.keys():
        return None
    return {mine[k] for k in keys}


def save_rollup(
    cache: StateCache, prepared: Prepared, c: str, merged: State, meta: dict[str, Any]
) -> None:
    """Replace the roll-up of chain ``c`` with ``merged``, of every piece of this run.

    Parameters
    ----------
    cache : StateCache
        The state cache.
    prepared : Prepared
        The run's plan.
    c : str
        The chain's hash.
    merged : State
        The state of every piece merged.
    meta : dict[str, Any]
        What ``cache list`` shows of it.

    Examples
    --------
    >>> from pangeo_hpc.batch.incremental.rollups import save_rollup
    >>> save_rollup(cache, prepared, chain, merged, meta)  # doctest: +SKIP
    """
    keys = np.array([prepared.keys[c, i] for i in range(len(prepared.pieces))], dtype="<U64")
    cache.put(_rollup_key(prepared, c), {**merged, _PIECES: keys}, meta)
