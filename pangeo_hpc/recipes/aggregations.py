"""Reductions along time as partial states that merge exactly: one object per kind of state.

After flox's ``Aggregation`` (``flox/aggregations.py``: the per-chunk function, the combine
and the finalize of a reduction in one object, looked up by name), an :class:`Aggregation`
owns all a reduction keeps of a block of data:

* its state fields (:attr:`~Aggregation.fields`) and the state of no data
  (:meth:`~Aggregation.empty`);
* the state of one block (:meth:`~Aggregation.chunk`), per group of time steps;
* the merge of states, of blocks along time or of files (:meth:`~Aggregation.combine`);
* the values a merged state gives (:meth:`~Aggregation.finalize`).

The recipe functions compute through these same objects on their own data
(:meth:`~Aggregation.reduce`: :func:`~pangeo_hpc.recipes.means.time_mean`,
:func:`~pangeo_hpc.recipes.trend.trend`; :meth:`~Aggregation.reduce_groups`:
:func:`~pangeo_hpc.recipes.seasonal.climatology`,
:func:`~pangeo_hpc.recipes.resample.resample`,
:func:`~pangeo_hpc.recipes.accumulations.daily_totals`), and an incremental run per input
file (:mod:`pangeo_hpc.batch.incremental.states`): the two cannot disagree but by the order
of float64 additions, and a reduction by groups merges its blocks' states in the order an
incremental run merges its files' (:mod:`~pangeo_hpc.recipes.folds`), so that one is the
same to the bit. A :class:`~pangeo_hpc.recipes.traits.Reduction` names its aggregation by
the keys of :data:`AGGREGATIONS`; what a reduction is (a statistic of the data's quantity,
its CF cell method, whether it divides) is an attribute of its object, never a list of
names elsewhere.

A state is a dict of NumPy arrays: ``labels`` (one int64 per group of time steps: 0 for a
time mean or a trend, the period's first instant in ns for a resampling, the month or
season for a climatology) and fields of shape ``(groups, *cells)``:

=========================  ==========================================================
aggregation                fields (float64 sums, int32 counts)
=========================  ==========================================================
mean (time_mean, resample  ``sum``, ``count`` of the valid values
mean, climatology)
sum (resample sum)         ``sum``, ``count``
min / max                  ``min`` or ``max`` (NaN where none), ``count``
trend                      ``n``, ``st``, ``stt``, ``sx``, ``stx``, ``sxx`` (t in years
                           since :data:`EPOCH`)
=========================  ==========================================================

Merging adds sums and counts and takes the minimum of minima: the order of the files does
not matter, and a state of one file is the same whichever period it is part of.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dask.array as darr
import numpy as np

from pangeo_hpc.recipes.folds import fold_groups, fold_rows
from pangeo_hpc.recipes.fused_states import fused_stacked_sums
from pangeo_hpc.recipes.kernels import TREND_SUMS, group_sums, stacked_sums, trend_block
from pangeo_hpc.recipes.student import t_two_sided_p
from pangeo_hpc.recipes.years import decimal_years

__all__ = ["AGGREGATIONS", "EPOCH", "STATISTICS", "Aggregation", "State", "years_since_epoch"]

#: trends count time in years from here (a fixed origin: states of any period merge)
EPOCH = np.datetime64("2000-01-01T00:00:00", "ns")
#: a trend's unit of time -> years
YEARS = {"year": 1.0, "decade": 10.0, "century": 100.0}

State = dict[str, np.ndarray]


def years_since_epoch(times: Any) -> np.ndarray:
    """Decimal years (:func:`~pangeo_hpc.recipes.years.decimal_years`) from :data:`EPOCH`
    to each of ``times`` (datetime64, or cftime dates: from 2000-01-01 of their calendar).

    Parameters
    ----------
    times : Any
        datetime64 values, or cftime dates.

    Returns
    -------
    np.ndarray
        float64 years, one per date.

    Examples
    --------
    >>> years_since_epoch(np.array(["2000-01-01", "2001-01-01"], dtype="datetime64[ns]"))
    array([0.        , 1.00207396])
    """
    values = np.asarray(getattr(times, "values", times))
    if values.size == 0 or np.issubdtype(values.dtype, np.datetime64):
        return decimal_years(values, EPOCH)
    first = values.ravel()[0]
    return decimal_years(values, type(first)(2000, 1, 1, calendar=first.calendar))


class Aggregation:
    """A reduction along time by partial states: fields, chunk, combine, finalize.

    Subclasses set :attr:`name` and :attr:`fields` and define :meth:`_add_run` (the state
    of a run of time steps of one group) and :meth:`finalize`; fields named in
    :attr:`extremes` are merged by their function, every other field is added.

    Examples
    --------
    >>> import numpy as np
    >>> mean = Sums("mean", divide=True)  # an Aggregation
    >>> x = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]])  # 3 time steps of 2 cells
    >>> state = mean.chunk(x, labels=np.array([0, 0, 1]))  # steps 0, 1 in group 0
    >>> mean.finalize(mean.combine([state]), {})
    {'value': array([[2., 2.],
           [5., 6.]])}
    """

    name: str
    fields: tuple[str, ...]
    #: fields merged by taking the minimum or maximum (NaN-skipping)
    extremes: Mapping[str, Any] = {}
    #: whether the state needs the time of each step (years since :data:`EPOCH`)
    timed: bool = False
    #: CF's name of the statistic of the values over time (CF Appendix E: ``mean``,
    #: ``minimum``...), for a reduction whose values are of the data's quantity; None
    #: for one that is not (a trend)
    cell_method: str | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def __dask_tokenize__(self) -> tuple[str, str]:
        return (type(self).__name__, self.name)

    def _dtype(self, f: str) -> str:
        return "i4" if f == "count" else "f8"

    def blank(self, groups: int, cells: tuple[int, ...]) -> State:
        """The state of ``groups`` groups of no time step.

        Parameters
        ----------
        groups : int
            The number of groups.
        cells : tuple[int, ...]
            The shape of the field of one time step.

        Returns
        -------
        State
            Per field, zeros (NaN for an extreme) for each group.

        Examples
        --------
        >>> Sums("sum", divide=False).blank(2, (3,))
        {'sum': array([[0., 0., 0.],
               [0., 0., 0.]]), 'count': array([[0, 0, 0],
               [0, 0, 0]], dtype=int32)}
        """
        out: State = {}
        for f in self.fields:
            fill = np.nan if f in self.extremes else 0
            out[f] = np.full((groups, *cells), fill, self._dtype(f))
        return out

    def empty(self, cells: tuple[int, ...]) -> State:
        """The state of no time step at all.

        Parameters
        ----------
        cells : tuple[int, ...]
            The shape of the field of one time step.

        Returns
        -------
        State
            A state without groups.

        Examples
        --------
        >>> Sums("mean", divide=True).empty((2,))
        {'labels': array([], dtype=int64), 'sum': array([], shape=(0, 2), dtype=float64),
         'count': array([], shape=(0, 2), dtype=int32)}
        """
        return {"labels": np.zeros(0, "i8"), **self.blank(0, cells)}

    def chunk(self, x: np.ndarray, labels: np.ndarray, t: np.ndarray | None = None) -> State:
        """The state of one block of data, time first: ``labels`` the group of each time
        step (-1: left out), ``t`` its years since :data:`EPOCH` (when :attr:`timed`).

        Parameters
        ----------
        x : np.ndarray
            One block, time first.
        labels : np.ndarray
            The group of each time step (-1: left out).
        t : np.ndarray | None, optional
            Years since :data:`EPOCH` of each time step; for a timed aggregation only.

        Returns
        -------
        State
            The block's state: its labels and, per group, the fields of this aggregation.

        Examples
        --------
        >>> import numpy as np
        >>> x = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]])
        >>> Sums("mean", divide=True).chunk(x, np.array([0, 0, 1]))
        {'labels': array([0, 1]), 'sum': array([[4., 2.],
               [5., 6.]]), 'count': array([[2, 1],
               [1, 1]], dtype=int32)}
        """
        x = np.asarray(x)
        keep = labels >= 0
        if not keep.all():
            x, labels = x[keep], labels[keep]
            t = None if t is None else t[keep]
        cells = x.shape[1:]
        if labels.size == 0:
            return self.empty(cells)
        groups, codes = np.unique(labels, return_inverse=True)
        out = {"labels": groups.astype("i8"), **self.blank(groups.size, cells)}
        cuts = np.flatnonzero(np.diff(codes)) + 1  # runs of one label (time is in order)
        starts = np.concatenate([[0], cuts])
        stops = np.concatenate([cuts, [codes.size]])
        for a, b in zip(starts, stops, strict=True):
            self._add_run(out, int(codes[a]), x[a:b], None if t is None else t[a:b])
        return out

    def _add_run(self, out: State, g: int, x: np.ndarray, t: np.ndarray | None) -> None:
        raise NotImplementedError

    def combine(self, states: Sequence[State]) -> State:
        """One state from several (of blocks along time, or of files): groups of the same
        label merged, labels sorted.

        Parameters
        ----------
        states : Sequence[State]
            States of blocks or files.

        Returns
        -------
        State
            The merged state.

        Raises
        ------
        ValueError
            When no state holds a time step.

        Examples
        --------
        >>> import numpy as np
        >>> mean = Sums("mean", divide=True)
        >>> x = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]])
        >>> first, second = mean.chunk(x[:2], np.array([0, 0])), mean.chunk(x[2:], np.array([0]))
        >>> mean.combine([first, second])  # as one block of all three steps
        {'labels': array([0]), 'sum': array([[9., 8.]]), 'count': array([[3, 2]], dtype=int32)}
        """
        states = [s for s in states if s["labels"].size]
        if not states:
            raise ValueError("merge: no time step in any state")
        if len(states) == 1:
            return states[0]
        every = np.concatenate([s["labels"] for s in states])
        labels = np.unique(every)
        if labels.size == every.size:  # no group in two states (months of files): side by side
            order = np.argsort(every, kind="stable")
            joined_: State = {"labels": every[order]}
            for f in self.fields:
                joined = np.concatenate([s[f] for s in states])
                joined_[f] = joined if np.all(order[1:] > order[:-1]) else joined[order]
            return joined_
        cells = states[0][self.fields[0]].shape[1:]
        out = {"labels": labels, **self.blank(labels.size, cells)}
        for s in states:
            at = np.searchsorted(labels, s["labels"])
            for f in self.fields:
                if f in self.extremes:
                    out[f][at] = self.extremes[f](out[f][at], s[f])
                else:
                    out[f][at] += s[f]
        return out

    def finalize(
        self, state: State, options: Mapping[str, Any], dtype: Any = "f8"
    ) -> dict[str, np.ndarray]:
        """What the reduction gives, per group, from a merged state (``dtype``: of the
        values of a mean, a sum, a minimum or a maximum).

        Parameters
        ----------
        state : State
            A merged state, group axis first.
        options : Mapping[str, Any]
            The step's options (``freq``, ``per``, ``q`` ...).
        dtype : Any, optional
            The dtype of the values of a mean, a sum, a minimum or a maximum.

        Raises
        ------
        NotImplementedError
            In the base class: each aggregation finalizes its own way.

        Examples
        --------
        >>> import numpy as np
        >>> mean = Sums("mean", divide=True)
        >>> state = mean.chunk(np.array([[1.0], [3.0]]), np.array([0, 0]))
        >>> mean.finalize(state, {})
        {'value': array([[2.]])}
        """
        raise NotImplementedError

    def reduce(
        self, x: Any, options: Mapping[str, Any], t: np.ndarray | None = None, dtype: Any = "f8"
    ) -> dict[str, Any]:
        """The values of one group of every time step of ``x`` (NumPy or Dask, time first),
        as :meth:`finalize` gives them without their group axis: each block's state
        (:meth:`chunk`), added over the blocks in float64, finalized. Lazy for Dask data.
        For aggregations whose fields all add (mean, sum, trend).

        Parameters
        ----------
        x : Any
            NumPy or Dask data, time first.
        options : Mapping[str, Any]
            The step's options (``freq``, ``per``, ``q`` ...).
        t : np.ndarray | None, optional
            Years since :data:`EPOCH` of each time step (a timed aggregation).
        dtype : Any, optional
            The dtype of the values of a mean, a sum, a minimum or a maximum.

        Returns
        -------
        dict[str, Any]
            Output name -> its values (Dask arrays for Dask data).

        Raises
        ------
        TypeError
            For the extremes, whose states do not add.

        Examples
        --------
        >>> import numpy as np, dask.array as da
        >>> x = da.from_array(np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]]), chunks=(2, 2))
        >>> out = Sums("mean", divide=True).reduce(x, {})  # lazy
        >>> out["value"].compute()
        array([3., 4.])
        """
        if self.extremes:
            raise TypeError(f"{self!r}: reduce() adds the blocks' states; {self.name} does not")
        k = len(self.fields)
        read = fused_stacked_sums(self, x, t)  # each block's fields, summed as it is read
        sums = stacked_sums(self._stacked, k, x, t) if read is None else fold_rows(read)
        names = self.outputs(options)
        if not isinstance(sums, darr.Array):
            values = self._finish_stacked(sums, options, dtype, names)
            return dict(zip(names, values, strict=True))
        values = darr.map_blocks(
            self._finish_stacked,
            sums,
            options,
            dtype,
            names,
            chunks=((len(names),), *sums.chunks[1:]),
            dtype=np.dtype(dtype),
            meta=np.empty((0,) * sums.ndim, np.dtype(dtype)),
        )
        return {name: values[i] for i, name in enumerate(names)}

    def reduce_groups(
        self,
        x: Any,
        codes: np.ndarray,
        options: Mapping[str, Any],
        t: np.ndarray | None = None,
        dtype: Any = "f8",
        *,
        per_group: bool = False,
    ) -> dict[str, Any]:
        """The values of each group of time steps of ``x`` (NumPy or Dask, time first;
        ``codes``: the group of each step, 0 .. groups - 1, -1 left out), group axis
        first, lazy for Dask: each block's state (:meth:`chunk`), per group the left fold
        of the blocks that hold it in time order (:meth:`combine`), finalized
        (:func:`~pangeo_hpc.recipes.folds.fold_groups`; ``per_group``: one chunk per
        group). The same states merged in the same order as an incremental run's.

        Parameters
        ----------
        x : Any
            NumPy or Dask data, time first.
        codes : np.ndarray
            The group of each time step, 0 .. groups - 1 (-1: left out).
        options : Mapping[str, Any]
            The step's options (``freq``, ``per``, ``q`` ...).
        t : np.ndarray | None, optional
            Years since :data:`EPOCH` of each time step (a timed aggregation).
        dtype : Any, optional
            The dtype of the values of a mean, a sum, a minimum or a maximum.
        per_group : bool, optional
            Whether each group becomes its own chunk.

        Returns
        -------
        dict[str, Any]
            Output name -> its values, group axis first (Dask arrays for Dask data).

        Examples
        --------
        >>> import numpy as np
        >>> x = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]])
        >>> Sums("mean", divide=True).reduce_groups(x, np.array([0, 0, 1]), {})
        {'value': array([[2., 2.],
               [5., 6.]])}
        """
        return fold_groups(self, x, codes, options, t, dtype, per_group=per_group)

    def outputs(self, options: Mapping[str, Any]) -> tuple[str, ...]:
        """The names of what :meth:`finalize` gives for ``options``.

        Parameters
        ----------
        options : Mapping[str, Any]
            The step's options (``freq``, ``per``, ``q`` ...).

        Returns
        -------
        tuple[str, ...]
            The output names, in order.

        Examples
        --------
        >>> Sums("mean", divide=True).outputs({}), Trend().outputs({"stats": True})
        (('value',), ('trend', 'trend_stderr', 'trend_p_value'))
        """
        return ("value",)

    def _stacked(self, block: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The fields of one block's state of one group, stacked first (float64)."""
        block = np.asarray(block)
        state = self.chunk(block, np.zeros(block.shape[0], "i8"), np.asarray(t).ravel())
        return self.stack_state(state, block.shape[1:])

    def stack_state(self, state: State, cells: tuple[int, ...]) -> np.ndarray:
        """The fields of a state of one group (or of none), stacked first (float64).

        Parameters
        ----------
        state : State
            A state of at most one group.
        cells : tuple[int, ...]
            The shape of the field of one time step.

        Returns
        -------
        np.ndarray
            ``(len(fields), *cells)``: zeros for a state of no group.

        Examples
        --------
        >>> mean = Sums("mean", divide=True)
        >>> mean.stack_state(mean.chunk(np.array([[1.0, np.nan]]), np.array([0])), (2,))
        array([[1., 0.],
               [1., 0.]])
        """
        if not state["labels"].size:
            return np.zeros((len(self.fields), *cells))
        return np.stack([state[f][0].astype("f8", copy=False) for f in self.fields])

    def _finish_stacked(
        self, sums: np.ndarray, options: Mapping[str, Any], dtype: Any, names: Sequence[str]
    ) -> np.ndarray:
        state = {f: sums[i : i + 1] for i, f in enumerate(self.fields)}
        values = self.finalize(state, options, dtype)
        return np.stack([values[n][0].astype(dtype, copy=False) for n in names])


class Sums(Aggregation):
    """A mean (``divide``) or a sum: float64 sums and int32 counts of the valid values per
    group.

    Parameters
    ----------
    name : str
        The aggregation's name (``mean``, ``sum``).
    divide : bool
        True for a mean (sums divided by counts), False for a sum.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]])
    >>> Sums("mean", divide=True).reduce(x, {}), Sums("sum", divide=False).reduce(x, {})
    ({'value': array([3., 4.])}, {'value': array([9., 8.])})
    """

    fields = ("sum", "count")

    def __init__(self, name: str, *, divide: bool) -> None:
        self.name = name
        self.cell_method = name
        self.divide = divide

    def chunk(self, x: np.ndarray, labels: np.ndarray, t: np.ndarray | None = None) -> State:
        """The sums and counts of the valid values of one block per group, time first.

        Parameters
        ----------
        x : np.ndarray
            One block, time first.
        labels : np.ndarray
            The group of each time step (-1: left out).
        t : np.ndarray | None, optional
            Not used (a mean or sum is not timed).

        Returns
        -------
        State
            The block's state.

        Examples
        --------
        >>> import numpy as np
        >>> x = np.array([[1.0], [np.nan], [5.0]])
        >>> Sums("sum", divide=False).chunk(x, np.array([0, 0, -1]))  # step 2 left out
        {'labels': array([0]), 'sum': array([[1.]]), 'count': array([[1]], dtype=int32)}
        """
        x = np.asarray(x)
        keep = labels >= 0
        if not keep.all():
            x, labels = x[keep], labels[keep]
        cells = x.shape[1:]
        if labels.size == 0:
            return self.empty(cells)
        groups, codes = np.unique(labels, return_inverse=True)
        # one compiled pass: float64 sums and counts per group
        flat = np.ascontiguousarray(x.reshape(x.shape[0], -1))
        sums, counts = group_sums(flat, codes.astype(np.intp), groups.size)
        return self.from_sums(groups, sums.reshape((groups.size, *cells)), counts)

    def from_sums(self, groups: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> State:
        """The state of the groups ``groups`` (sorted labels) from their float64 sums and
        int32 counts of valid values (group first; a reader's sums,
        :mod:`pangeo_hpc.recipes.fused_states`, or :meth:`chunk`'s).

        Parameters
        ----------
        groups : np.ndarray
            The labels of the groups, sorted.
        sums : np.ndarray
            ``(groups, *cells)`` float64.
        counts : np.ndarray
            Int32, of the same shape (or flattened cells).

        Returns
        -------
        State
            The state.

        Examples
        --------
        >>> ones = np.ones((1, 2))
        >>> Sums("sum", divide=False).from_sums(np.array([3]), ones, ones.astype("i4"))
        {'labels': array([3]), 'sum': array([[1., 1.]]), 'count': array([[1, 1]], dtype=int32)}
        """
        return {
            "labels": groups.astype("i8"),
            "sum": sums,
            "count": counts.reshape(sums.shape),
        }

    def finalize(
        self, state: State, options: Mapping[str, Any], dtype: Any = "f8"
    ) -> dict[str, np.ndarray]:
        """The mean (or sum) of each group, NaN where a cell has no valid value (or fewer than
        ``min_count``).

        Parameters
        ----------
        state : State
            A merged state, group axis first.
        options : Mapping[str, Any]
            The step's options (``freq``, ``per``, ``q`` ...).
        dtype : Any, optional
            The dtype of the values of a mean, a sum, a minimum or a maximum.

        Returns
        -------
        dict[str, np.ndarray]
            Output name -> values, group axis first.

        Examples
        --------
        >>> import numpy as np
        >>> mean = Sums("mean", divide=True)
        >>> state = mean.chunk(np.array([[1.0, np.nan], [3.0, np.nan]]), np.array([0, 0]))
        >>> mean.finalize(state, {})  # NaN where a cell has no valid value
        {'value': array([[ 2., nan]])}
        """
        count = state["count"]
        if self.divide:  # a group without valid values has sum 0: 0 / 0 is NaN
            value = np.empty(count.shape, dtype)
            with np.errstate(invalid="ignore", divide="ignore"):
                np.divide(state["sum"], count, out=value, casting="unsafe")
            return {"value": value}
        return {"value": np.where(count > 0, state["sum"], np.nan).astype(dtype, copy=False)}


class _Extreme(Aggregation):
    """A minimum or a maximum (NaN where a group has no valid value) and the count."""

    def __init__(self, name: str, pick: Any, cell_method: str) -> None:
        self.name = name
        self.cell_method = cell_method
        self.fields = (name, "count")
        self.extremes = {name: pick}

    def _add_run(self, out: State, g: int, x: np.ndarray, t: np.ndarray | None) -> None:
        pick = self.extremes[self.name]
        out["count"][g] += (~np.isnan(x)).sum(0, dtype="i4")
        out[self.name][g] = pick(out[self.name][g], pick.reduce(x, axis=0))

    def finalize(
        self, state: State, options: Mapping[str, Any], dtype: Any = "f8"
    ) -> dict[str, np.ndarray]:
        value = np.where(state["count"] > 0, state[self.name], np.nan)
        return {"value": value.astype(dtype, copy=False)}


class Trend(Aggregation):
    """A least-squares slope along time: the sums :data:`~pangeo_hpc.recipes.kernels.TREND_SUMS`
    of 1, t, t², x, tx and x² over the valid values (t in years since :data:`EPOCH`),
    from which the slope (and its standard error and p-value) follow.

    The slope is ``Stx / Stt``, the residual sum of squares ``Sxx - slope Stx`` (S: sums of
    products of departures from the means, from the raw sums); this loses digits only where
    the data's variance is below ~1e-10 of their squared mean.

    Examples
    --------
    >>> import numpy as np
    >>> times = np.array(["2000-01-01", "2001-01-01", "2002-01-01"], dtype="datetime64[ns]")
    >>> x = np.array([[0.0], [0.3], [0.6]])  # 0.3 K a year
    >>> Trend().reduce(x, {"per": "decade"}, years_since_epoch(times))  # per decade (leap years)
    {'trend': array([2.99788459])}
    """

    name = "trend"
    fields = TREND_SUMS
    timed = True

    def _add_run(self, out: State, g: int, x: np.ndarray, t: np.ndarray | None) -> None:
        assert t is not None
        sums = trend_block(x, t)  # one compiled pass, float64
        for i, f in enumerate(self.fields):
            out[f][g] += sums[i]

    def outputs(self, options: Mapping[str, Any]) -> tuple[str, ...]:
        """``trend``, and with ``stats`` also ``trend_stderr`` and ``trend_p_value``.

        Parameters
        ----------
        options : Mapping[str, Any]
            The step's options (``freq``, ``per``, ``q`` ...).

        Returns
        -------
        tuple[str, ...]
            The output names, in order.

        Examples
        --------
        >>> Trend().outputs({}), Trend().outputs({"stats": True})
        (('trend',), ('trend', 'trend_stderr', 'trend_p_value'))
        """
        stats = ("trend_stderr", "trend_p_value") if options.get("stats", False) else ()
        return ("trend", *stats)

    def finalize(
        self, state: State, options: Mapping[str, Any], dtype: Any = "f8"
    ) -> dict[str, np.ndarray]:
        """``trend`` per ``options["per"]`` (and with ``stats``: ``trend_stderr`` and
        ``trend_p_value``, a two-sided t test of a zero slope with n - 2 degrees of
        freedom), NaN where a cell has fewer than ``min_count`` valid values; group axis
        first (one group).

        Parameters
        ----------
        state : State
            A merged state, group axis first.
        options : Mapping[str, Any]
            The step's options: ``per``, ``stats``, ``min_count``.
        dtype : Any, optional
            The dtype of the values of a mean, a sum, a minimum or a maximum.

        Returns
        -------
        dict[str, np.ndarray]
            Output name -> values, group axis first.

        Examples
        --------
        >>> import numpy as np
        >>> t = np.array([0.0, 1.0, 2.0])  # years since the epoch
        >>> state = Trend().chunk(np.array([[0.0], [0.3], [0.6]]), np.zeros(3, dtype=int), t)
        >>> Trend().finalize(state, {"per": "year"})
        {'trend': array([[0.3]])}
        """
        n, st, sx = state["n"], state["st"], state["sx"]
        stats = bool(options.get("stats", False))
        per = YEARS[str(options.get("per", "decade"))]
        enough = n >= max(int(options.get("min_count", 3)), 3 if stats else 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            nn = np.where(n > 0, n, np.nan)  # no 0/0 where a cell is never valid
            stt = state["stt"] - st**2 / nn
            stx = state["stx"] - st * sx / nn
            positive = np.where(stt > 0, stt, np.nan)
            slope_years = stx / positive
            out = {"trend": np.where(enough, slope_years * per, np.nan)}
            if not stats:
                return out
            sxx = state["sxx"] - sx**2 / nn
            dof = n - 2
            sse = np.clip(sxx - slope_years * stx, 0.0, None)
            stderr = np.sqrt(sse / np.where(dof > 0, dof, np.nan) / positive) * per
            out["trend_stderr"] = np.where(enough, stderr, np.nan)
            p = t_two_sided_p(out["trend"] / out["trend_stderr"], dof)
            out["trend_p_value"] = np.where(enough, p, np.nan)
        return out


#: every aggregation by the name a :class:`~pangeo_hpc.recipes.traits.Reduction` gives
AGGREGATIONS: dict[str, Aggregation] = {
    a.name: a
    for a in (
        Sums("mean", divide=True),
        _Extreme("min", np.fmin, "minimum"),
        _Extreme("max", np.fmax, "maximum"),
        Sums("sum", divide=False),
        Trend(),
    )
}
#: the aggregations whose values are of the data's quantity (those with a CF cell method:
#: a mean, a sum, an extreme): the statistics :func:`~pangeo_hpc.recipes.resample.resample`
#: offers
STATISTICS: dict[str, Aggregation] = {
    n: a for n, a in AGGREGATIONS.items() if a.cell_method is not None
}
