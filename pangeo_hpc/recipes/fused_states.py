"""The states of a mean or a sum over time, per block, computed by the reader as it decodes.

A time mean, a time sum or a climatology of data that come straight from
``da.from_array(reader)`` (nothing between them: the protocol and the checks of
:func:`~pangeo_hpc.recipes.fusion.reader_of`) asks the reader for each block's sums and
counts per group (``reader.group_sums(start, stop, codes, k)``, the :class:`GroupSums`
protocol: :class:`pangeo_hpc.io.fused.SummingArray`, which adds each chunk's rows as it is
decoded). Nothing then holds a decoded block.

Each block still gives its own state, the state
:meth:`~pangeo_hpc.recipes.aggregations.Sums.chunk` gives of the block read whole, to the
bit: the folds over the blocks (:mod:`pangeo_hpc.recipes.folds`) and an incremental run's
states then agree as before. The tasks sit in a layer named by
:data:`~pangeo_hpc.recipes.fusion.SUMMED`, so that
:func:`~pangeo_hpc.recipes.fusion.reads_twice` sees them: results computed together that
would read the same data twice are built again without fusing
(``pangeo-hpc.data.fuse-reads`` off).
"""

from __future__ import annotations

import itertools
from typing import Any, Protocol, runtime_checkable

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from pangeo_hpc import config
from pangeo_hpc.recipes.fusion import SUMMED, reader_of

__all__ = ["BLOCK_BYTES", "GroupSums", "fused_reads", "fused_stacked_sums", "state_of_span"]

#: blocks (decoded) of at least this size on average are summed as they are decoded. A
#: block read whole is written to memory and read back; past the processor's cache that
#: costs more than summing chunk by chunk (B8's yearly files, a block of 95 MB each, in
#: the command line, 6 runs alternated with blocks read whole: compute 1.2-1.7 s against
#: 1.4-2.0 s). A smaller block stays in cache, and there its few large passes beat a
#: chunk's many small ones (B8's monthly files, 8 MB: 1.6-2.1 s against 1.4-1.9 s).
BLOCK_BYTES = 32 * 2**20


@runtime_checkable
class GroupSums(Protocol):
    """A reader that adds the valid values of time steps per group as it reads them.

    Examples
    --------
    >>> class Reader:
    ...     def group_sums(self, start, stop, codes, k):
    ...         x = np.arange(12.0).reshape(4, 3)[start:stop]
    ...         sums = np.stack([x[codes == g].sum(0) for g in range(k)])
    ...         return sums, np.stack([(codes == g).sum() + 0 * x[0] for g in range(k)])
    >>> isinstance(Reader(), GroupSums)
    True
    """

    def group_sums(
        self, start: int, stop: int, codes: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Float64 sums and int32 counts of the valid values of steps ``start:stop`` in
        each of ``k`` groups (``codes``: -1 none), ``(k, *field)`` each.

        Parameters
        ----------
        start : int
            First time step.
        stop : int
            Time step after the last.
        codes : np.ndarray
            The group of each step.
        k : int
            The number of groups.

        Returns
        -------
        tuple[np.ndarray, np.ndarray]
            Sums and counts.

        Examples
        --------
        >>> class Reader:  # two steps of a field of one cell, both in group 0
        ...     def group_sums(self, start, stop, codes, k):
        ...         return np.array([[3.0]]), np.array([[2]], dtype=np.int32)
        >>> reader: GroupSums = Reader()
        >>> reader.group_sums(0, 2, np.array([0, 0]), 1)[0]
        array([[3.]])
        """
        ...


def fused_reads(agg: Any, x: Any, t: np.ndarray | None) -> tuple[Any, str] | None:
    """The reader of ``x`` and the key that holds it in ``x``'s graph, when ``agg``'s
    states can be had from the reader's sums (a mean or a sum, not timed), ``x`` comes
    straight from a :class:`GroupSums` reader in blocks of :data:`BLOCK_BYTES` or more and
    ``pangeo-hpc.data.fuse-reads`` is on; else ``None``.

    Parameters
    ----------
    agg : Aggregation
        The reduction's aggregation.
    x : Any
        Its data, time first.
    t : np.ndarray or None
        Years per step (a timed aggregation), or ``None``.

    Returns
    -------
    tuple or None
        ``(reader, key)``, or ``None``.

    Examples
    --------
    >>> from pangeo_hpc.recipes.aggregations import Sums
    >>> fused_reads(Sums("mean", divide=True), da.ones((4, 2, 3)), None) is None  # no reader
    True
    """
    if t is not None or not hasattr(agg, "from_sums") or not isinstance(x, da.Array):
        return None
    if not config.get("data.fuse-reads") or x.nbytes < BLOCK_BYTES * x.numblocks[0]:
        return None
    reader = reader_of(x, GroupSums)
    return None if reader is None else (reader, f"original-{x.name}")


def state_of_span(reader: GroupSums, start: int, stop: int, agg: Any, labels: np.ndarray) -> Any:
    """The state of steps ``start:stop`` (one block) with their ``labels`` (-1: left out),
    from the reader's sums: :meth:`~pangeo_hpc.recipes.aggregations.Sums.chunk` of the
    block, to the bit.

    Parameters
    ----------
    reader : GroupSums
        The reader.
    start, stop : int
        The block's steps.
    agg : Sums
        The aggregation.
    labels : np.ndarray
        The group of each step.

    Returns
    -------
    State
        The block's state.

    Examples
    --------
    >>> from pangeo_hpc.recipes.aggregations import Sums
    >>> class Reader:  # 4 steps of a field of 2 cells
    ...     x = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0], [7.0, 8.0]])
    ...     def group_sums(self, start, stop, codes, k):
    ...         from pangeo_hpc.recipes.kernels import group_sums
    ...         return group_sums(self.x[start:stop], codes, k)
    >>> mean, labels = Sums("mean", divide=True), np.array([5, -1, 5])
    >>> state_of_span(Reader(), 1, 4, mean, labels)
    {'labels': array([5]), 'sum': array([[10.,  8.]]), 'count': array([[2, 1]], dtype=int32)}
    >>> mean.chunk(Reader.x[1:4], labels)  # the block read whole
    {'labels': array([5]), 'sum': array([[10.,  8.]]), 'count': array([[2, 1]], dtype=int32)}
    """
    labels = np.asarray(labels)
    keep = labels >= 0
    if not keep.any():
        return agg.empty(tuple(reader.shape[1:]))  # type: ignore[attr-defined]
    groups, codes = np.unique(labels[keep], return_inverse=True)
    every = np.full(labels.shape, -1, dtype=np.intp)
    every[keep] = codes
    sums, counts = reader.group_sums(start, stop, every, groups.size)
    return agg.from_sums(groups, sums, counts)


def fused_stacked_sums(agg: Any, x: Any, t: np.ndarray | None) -> da.Array | None:
    """Each block's stacked state fields (``(1, k, *field)`` float64, as
    :meth:`~pangeo_hpc.recipes.aggregations.Aggregation.reduce` stacks them) from the
    reader's sums, one task per block, or ``None`` (:func:`fused_reads`).

    Parameters
    ----------
    agg : Aggregation
        A mean or a sum.
    x : Any
        Its data, time first.
    t : np.ndarray or None
        Years per step, or ``None``.

    Returns
    -------
    dask.array.Array or None
        One row per block, to add in time order
        (:func:`~pangeo_hpc.recipes.folds.fold_rows`).

    Examples
    --------
    >>> from pangeo_hpc.recipes.aggregations import Sums
    >>> fused_stacked_sums(Sums("mean", divide=True), da.ones((4, 2, 3)), None) is None
    True
    """
    found = fused_reads(agg, x, t)
    if found is None:
        return None
    _, original = found
    k = len(agg.fields)
    edges = np.cumsum((0, *x.chunks[0]))
    name = f"{SUMMED}stacked-{tokenize(x.name, agg, x.chunks)}"
    dsk = {
        (name, i, 0, 0, 0): (_stacked_of_span, original, int(a), int(b), agg)
        for i, (a, b) in enumerate(itertools.pairwise(edges))
    }
    graph = HighLevelGraph(
        {original: x.dask.layers[original], name: dsk}, {original: set(), name: {original}}
    )
    chunks = ((1,) * len(x.chunks[0]), (k,), *x.chunks[1:])
    return da.Array(graph, name, chunks=chunks, dtype="f8", meta=np.empty((0,) * 4))


def _stacked_of_span(reader: GroupSums, start: int, stop: int, agg: Any) -> np.ndarray:
    state = state_of_span(reader, start, stop, agg, np.zeros(stop - start, "i8"))
    return agg.stack_state(state, tuple(reader.shape[1:]))[None]  # type: ignore[attr-defined]
