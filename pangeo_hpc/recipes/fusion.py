"""Reductions done by the reader, as it decodes: the graph of an area mean over data
straight from a file reader.

``weighted_nanmean_blocks`` of data that come straight from ``da.from_array(reader)``
(nothing between them: no selection, no arithmetic) asks the reader itself for the sums
of each time step, when it offers them (``reader.weighted_sums(start, stop, w)``, the
:class:`WeightedSums` protocol: :class:`pangeo_hpc.io.reader.MultiFileArray`, which sums
each chunk as it is decoded). Nothing then holds a decoded block, so a task need not be
the size of a block: consecutive blocks (which never cut a stored chunk) are summed by
one task, about ``pangeo-hpc.data.fused-task-mb`` of data each but at least
``pangeo-hpc.data.fused-tasks`` tasks for the whole array, so that workers finish
together. This layer knows no reader: it finds the array Dask's ``from_array`` keeps
(the ``original-`` key, one object) and asks it by duck typing.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from pangeo_hpc import config

__all__ = ["WeightedSums", "fused_weighted_nanmean", "reader_of", "task_spans"]


@runtime_checkable
class WeightedSums(Protocol):
    """A reader that sums time steps of a 2-D field as it reads them."""

    def weighted_sums(self, start: int, stop: int, w: np.ndarray) -> np.ndarray:
        """``(stop - start, 2)`` float64: ``Σ w x`` and ``Σ w`` over the values that are
        not NaN, per time step."""
        ...


def reader_of(x: da.Array) -> WeightedSums | None:
    """The reader ``x`` was made from by ``da.from_array`` if ``x`` is nothing but its
    blocks, whole fields each, and it offers :class:`WeightedSums`; else ``None``."""
    original = f"original-{x.name}"
    if x.ndim != 3 or set(x.dask.dependencies.get(x.name, ())) != {original}:
        return None
    if any(len(c) != 1 for c in x.chunks[1:]):
        return None
    layer = x.dask.layers.get(original)
    obj = layer.get(original) if layer is not None else None
    if isinstance(obj, WeightedSums) and getattr(obj, "shape", None) == x.shape:
        return obj
    return None


def task_spans(blocks: tuple[int, ...], itemsize_per_step: float) -> list[tuple[int, int]]:
    """Consecutive ``blocks`` (lengths along time) joined into task spans ``(start, stop)``:
    about ``data.fused-task-mb`` of data each, but at least ``data.fused-tasks`` spans for
    all (fewer when there are fewer blocks); a span ends only where a block ends."""
    total = sum(blocks) * itemsize_per_step
    cap = float(config.get("data.fused-task-mb")) * 1e6
    want = int(config.get("data.fused-tasks"))
    target = min(cap, total / max(want, 1))
    spans: list[tuple[int, int]] = []
    start = stop = 0
    for n in blocks:
        if stop > start and (stop - start + n) * itemsize_per_step > target:
            spans.append((start, stop))
            start = stop
        stop += n
    if stop > start:
        spans.append((start, stop))
    return spans


def fused_weighted_nanmean(x: da.Array, w: np.ndarray, min_share: float) -> da.Array | None:
    """The weighted mean over the field of each time step of ``x``, computed by the reader
    ``x`` comes straight from (:func:`reader_of`), or ``None`` when it does not."""
    reader = reader_of(x)
    if reader is None or w.shape != x.shape[1:]:
        return None
    w = np.ascontiguousarray(w, dtype="f8")
    spans = task_spans(x.chunks[0], float(np.prod(x.shape[1:])) * x.dtype.itemsize)
    original = f"original-{x.name}"
    token = tokenize(x.name, w, min_share, spans)
    name, wname = f"weighted-nanmean-read-{token}", f"weights-{tokenize(w)}"
    dsk: dict[Any, Any] = {
        (name, i): (_mean_of_span, original, a, b, wname, min_share)
        for i, (a, b) in enumerate(spans)
    }
    layers = {original: x.dask.layers[original], wname: {wname: w}, name: dsk}
    deps = {original: set(), wname: set(), name: {original, wname}}
    graph = HighLevelGraph(layers, deps)
    chunks = (tuple(b - a for a, b in spans),)
    return da.Array(graph, name, chunks=chunks, dtype="f8", meta=np.empty((0,)))


def _mean_of_span(
    reader: WeightedSums, start: int, stop: int, w: np.ndarray, min_share: float
) -> np.ndarray:
    from pangeo_hpc.recipes.kernels import mean_of_sums

    return mean_of_sums(reader.weighted_sums(start, stop, w), float(w.sum()), min_share)
