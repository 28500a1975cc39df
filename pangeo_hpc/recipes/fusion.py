"""Reductions done by the reader, as it decodes: the graph of an area mean over data
straight from a file reader.

``weighted_nanmean_blocks`` of data that come straight from ``da.from_array(reader)``
(nothing between them: no selection, no arithmetic) asks the reader itself for the sums
of each time step, when it offers them (``reader.weighted_sums(start, stop, w)``, the
:class:`WeightedSums` protocol: :class:`pangeo_hpc.io.fused.SummingArray`, which sums
each chunk as it is decoded). Nothing then holds a decoded block, so a task need not be
the size of a block: consecutive blocks (which never cut a stored chunk) are summed by
one task, about ``pangeo-hpc.data.fused-task-mb`` of data each but at least
``pangeo-hpc.data.fused-tasks`` tasks for the whole array, so that workers finish
together.

The data's blocks are then not read for the mean: anything else computed from the same
data with it (a time mean beside an area mean) reads the files a second time.
:func:`reads_twice` finds that in a set of results (the recipe runner then builds them
again with ``pangeo-hpc.data.fuse-reads`` off); a user computing such results together
turns it off. This layer knows no reader: it finds the array Dask's ``from_array`` keeps
(the ``original-`` key, one object) and asks it by duck typing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from pangeo_hpc import config

__all__ = [
    "FUSED",
    "SUMMED",
    "WeightedSums",
    "fused_spans",
    "fused_weighted_nanmean",
    "reader_of",
    "reads_twice",
    "task_spans",
]

#: the start of the name of a layer of reads fused with their reduction
FUSED = "weighted-nanmean-read-"
#: the start of the name of a layer of reads summed block by block as they are decoded
#: (:mod:`pangeo_hpc.recipes.fused_states`: one task per block, as unfused reads, so the
#: plan's count of read tasks, which counts :data:`FUSED` spans, leaves them out)
SUMMED = "summed-read-"


@runtime_checkable
class WeightedSums(Protocol):
    """A reader that sums time steps of a 2-D field as it reads them.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> class Reader:  # a reader that sums as it reads
    ...     shape, dtype, ndim = (4, 2, 3), np.dtype("f8"), 3
    ...     def __getitem__(self, key):
    ...         return np.arange(24.0).reshape(self.shape)[key]
    ...     def weighted_sums(self, start, stop, w):
    ...         x = self[start:stop].reshape(stop - start, -1)
    ...         return np.stack([x @ w.ravel(), np.full(stop - start, w.sum())], axis=1)
    >>> x = da.from_array(Reader(), chunks=(2, 2, 3))
    >>> isinstance(Reader(), WeightedSums)
    True
    """

    def weighted_sums(self, start: int, stop: int, w: np.ndarray) -> np.ndarray:
        """``(stop - start, 2)`` float64: ``Σ w x`` and ``Σ w`` over the values that are
        not NaN, per time step.

        Parameters
        ----------
        start : int
            First time step.
        stop : int
            Time step after the last.
        w : np.ndarray
            Weights on the field's grid.

        Returns
        -------
        ``(stop - start, 2)`` float64
            ``Σ w x`` and ``Σ w``.

        Examples
        --------
        >>> import numpy as np
        >>> class Reader:  # a reader of 4 steps of a 2x3 field that sums as it reads
        ...     def weighted_sums(self, start, stop, w):
        ...         x = np.arange(24.0).reshape(4, -1)[start:stop]
        ...         return np.stack([x @ w.ravel(), np.full(stop - start, w.sum())], axis=1)
        >>> reader: WeightedSums = Reader()
        >>> reader.weighted_sums(1, 3, np.ones((2, 3)))  # Σ w x and Σ w of steps 1 and 2
        array([[51.,  6.],
               [87.,  6.]])
        """
        ...


def reader_of(x: da.Array, protocol: type = WeightedSums) -> Any:
    """The reader ``x`` was made from by ``da.from_array`` if ``x`` is nothing but its
    blocks, whole fields each, and it offers ``protocol`` (a runtime-checkable protocol);
    else ``None``.

    Parameters
    ----------
    x : da.Array
        Data, time first, then a 2-D field.
    protocol : type
        What the reader must offer (:class:`WeightedSums`, or
        :class:`pangeo_hpc.recipes.fused_states.GroupSums`).

    Returns
    -------
    Any
        The reader, or ``None``.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> class Reader:  # a reader that sums as it reads
    ...     shape, dtype, ndim = (4, 2, 3), np.dtype("f8"), 3
    ...     def __getitem__(self, key):
    ...         return np.arange(24.0).reshape(self.shape)[key]
    ...     def weighted_sums(self, start, stop, w):
    ...         return np.zeros((stop - start, 2))
    >>> x = da.from_array(Reader(), chunks=(2, 2, 3))
    >>> type(reader_of(x)).__name__, reader_of(x[1:]), reader_of(x.rechunk((2, 1, 3)))
    ('Reader', None, None)
    """
    original = f"original-{x.name}"
    if x.ndim != 3 or set(x.dask.dependencies.get(x.name, ())) != {original}:
        return None
    if any(len(c) != 1 for c in x.chunks[1:]):
        return None
    layer = x.dask.layers.get(original)
    obj = layer.get(original) if layer is not None else None
    if isinstance(obj, protocol) and getattr(obj, "shape", None) == x.shape:
        return obj
    return None


def task_spans(blocks: tuple[int, ...], itemsize_per_step: float) -> list[tuple[int, int]]:
    """Consecutive ``blocks`` (lengths along time) joined into task spans ``(start, stop)``:
    about ``data.fused-task-mb`` of data each, but at least ``data.fused-tasks`` spans for
    all (fewer when there are fewer blocks); a span ends only where a block ends.

    Parameters
    ----------
    blocks : tuple[int, ...]
        Lengths of the blocks along time.
    itemsize_per_step : float
        Bytes of one time step.

    Returns
    -------
    list[tuple[int, int]]
        ``(start, stop)`` time steps of each task.

    Examples
    --------
    >>> task_spans((31, 29, 31), 4.0)  # small months: one task each (fused-tasks)
    [(0, 31), (31, 60), (60, 91)]
    >>> import dask
    >>> with dask.config.set({"pangeo-hpc.data.fused-tasks": 2}):
    ...     task_spans((31, 29, 31, 30), 4.0)
    [(0, 60), (60, 91), (91, 121)]
    """
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


def fused_weighted_nanmean(
    x: da.Array, w: np.ndarray, min_share: float, finish: Callable[..., np.ndarray]
) -> da.Array | None:
    """The weighted mean over the field of each time step of ``x``, computed by the reader
    ``x`` comes straight from (:func:`reader_of`), or ``None`` when it does not; ``finish``
    makes the means from the sums, the total weight and ``min_share``
    (:func:`pangeo_hpc.recipes.kernels.mean_of_sums`).

    Parameters
    ----------
    x : da.Array
        Data, time first, then a 2-D field.
    w : np.ndarray
        Weights on the field's grid.
    min_share : float
        Share of the weights valid values need.
    finish : Callable[..., np.ndarray]
        Makes means from ``(sums, total, min_share)``.

    Returns
    -------
    da.Array | None
        The means (one per time step), or ``None``.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> class Reader:  # a reader that sums as it reads
    ...     shape, dtype, ndim = (4, 2, 3), np.dtype("f8"), 3
    ...     def __getitem__(self, key):
    ...         return np.arange(24.0).reshape(self.shape)[key]
    ...     def weighted_sums(self, start, stop, w):
    ...         x = self[start:stop].reshape(stop - start, -1)
    ...         return np.stack([x @ w.ravel(), np.full(stop - start, w.sum())], axis=1)
    >>> x = da.from_array(Reader(), chunks=(2, 2, 3))
    >>> from pangeo_hpc.recipes.kernels import mean_of_sums
    >>> fused_weighted_nanmean(x, np.ones((2, 3)), 0.0, mean_of_sums).compute()
    array([ 2.5,  8.5, 14.5, 20.5])
    >>> fused_weighted_nanmean(x + 1, np.ones((2, 3)), 0.0, mean_of_sums) is None  # not a read
    True
    """
    if not config.get("data.fuse-reads"):
        return None
    reader = reader_of(x)
    if reader is None or w.shape != x.shape[1:]:
        return None
    w = np.ascontiguousarray(w, dtype="f8")
    spans = task_spans(x.chunks[0], float(np.prod(x.shape[1:])) * x.dtype.itemsize)
    original = f"original-{x.name}"
    token = tokenize(x.name, w, min_share, spans)
    # not "weights-": the name kernels.weighted_nanmean_blocks gives its Dask array of the
    # same weights, whose layer would replace this one in a graph holding both
    name, wname = f"{FUSED}{token}", f"fused-weights-{tokenize(w)}"
    dsk: dict[Any, Any] = {
        (name, i): (_mean_of_span, original, a, b, wname, min_share, finish)
        for i, (a, b) in enumerate(spans)
    }
    layers = {original: x.dask.layers[original], wname: {wname: w}, name: dsk}
    deps = {original: set(), wname: set(), name: {original, wname}}
    graph = HighLevelGraph(layers, deps)
    chunks = (tuple(b - a for a, b in spans),)
    return da.Array(graph, name, chunks=chunks, dtype="f8", meta=np.empty((0,)))


def _mean_of_span(
    reader: WeightedSums,
    start: int,
    stop: int,
    w: np.ndarray,
    min_share: float,
    finish: Callable[..., np.ndarray],
) -> np.ndarray:
    return finish(reader.weighted_sums(start, stop, w), float(w.sum()), min_share)


def fused_spans(graph: Any) -> dict[str, list[tuple[int, int]]]:
    """The reads fused with a reduction in a high-level ``graph``: per array read (its
    Dask name, that of its blocks), the spans of time steps its fused tasks read.

    Parameters
    ----------
    graph : Any
        A Dask high-level graph.

    Returns
    -------
    dict[str, list[tuple[int, int]]]
        Array name -> spans ``(start, stop)``.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> class Reader:  # a reader that sums as it reads
    ...     shape, dtype, ndim = (4, 2, 3), np.dtype("f8"), 3
    ...     def __getitem__(self, key):
    ...         return np.arange(24.0).reshape(self.shape)[key]
    ...     def weighted_sums(self, start, stop, w):
    ...         x = self[start:stop].reshape(stop - start, -1)
    ...         return np.stack([x @ w.ravel(), np.full(stop - start, w.sum())], axis=1)
    >>> x = da.from_array(Reader(), chunks=(2, 2, 3))
    >>> from pangeo_hpc.recipes.kernels import weighted_nanmean_blocks
    >>> means = weighted_nanmean_blocks(x, np.ones((2, 3)))
    >>> list(fused_spans(means.__dask_graph__()).values())  # two tasks read and sum
    [[(0, 2), (2, 4)]]
    """
    out: dict[str, list[tuple[int, int]]] = {}
    for name, layer in graph.layers.items():
        if not str(name).startswith(FUSED):
            continue
        for task in dict(layer).values():
            _, original, start, stop, *_ = task
            out.setdefault(original[len("original-") :], []).append((start, stop))
    return out


def reads_twice(arrays: Any) -> bool:
    """Whether the Dask arrays ``arrays``, computed together, would read some data twice:
    as blocks and by a reduction fused with its reads (:func:`fused_spans`), or by two
    such reductions (an area mean and a time mean, each summed as it reads).

    Parameters
    ----------
    arrays : Any
        Dask arrays (or collections).

    Returns
    -------
    bool
        Whether some data would be read twice.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> class Reader:  # a reader that sums as it reads
    ...     shape, dtype, ndim = (4, 2, 3), np.dtype("f8"), 3
    ...     def __getitem__(self, key):
    ...         return np.arange(24.0).reshape(self.shape)[key]
    ...     def weighted_sums(self, start, stop, w):
    ...         x = self[start:stop].reshape(stop - start, -1)
    ...         return np.stack([x @ w.ravel(), np.full(stop - start, w.sum())], axis=1)
    >>> x = da.from_array(Reader(), chunks=(2, 2, 3))
    >>> from pangeo_hpc.recipes.kernels import weighted_nanmean_blocks
    >>> means = weighted_nanmean_blocks(x, np.ones((2, 3)))
    >>> reads_twice([means]), reads_twice([means, x])  # x's blocks are read besides
    (False, True)
    """
    from dask.highlevelgraph import HighLevelGraph as Graph

    graphs = [a.__dask_graph__() for a in arrays if isinstance(a, da.Array)]
    if not graphs:
        return False
    merged = Graph.merge(*graphs)
    readers: dict[str, int] = {}  # "original-<array>" -> the fused layers reading it
    for name, layer in merged.layers.items():
        if str(name).startswith((FUSED, SUMMED)):
            for read in {task[1] for task in dict(layer).values()}:
                readers[read] = readers.get(read, 0) + 1
    blocks = (read[len("original-") :] for read in readers)
    return any(n > 1 for n in readers.values()) or any(b in merged.layers for b in blocks)
