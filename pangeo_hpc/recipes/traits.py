"""What a recipe function says of itself, for runs that split by input file.

An incremental run (:mod:`pangeo_hpc.batch.incremental.run`) needs to know, of each step, three
things; each function declares them itself, beside its code, as an attribute (never in a
list of names kept elsewhere, which drifts from the code it describes):

* :data:`STEP_BY_STEP`: its value at time step *t* depends on time step *t* alone and it
  keeps the time axis (``True``), or a function of the step's options that says why not
  (``None``: it does). A user function sets ``fn.step_by_step = True`` the same way.
* :data:`REDUCTION`: a :class:`Reduction`, for a reduction along time whose per-file
  partial states merge exactly: which state it keeps (an
  :class:`~pangeo_hpc.recipes.aggregations.Aggregation`: its fields, the state of a block,
  the merge, the finish) and which group each time step falls in, computed by the same
  rules (pandas' resampling, the climatology's months and seasons, the days of
  accumulations) as the function itself.
* :data:`WHOLE_SERIES`: why it needs the whole series at once (a sentence), for the message
  of a run that cannot split.

Set by the decorators :func:`step_by_step`, :func:`reduces` and :func:`whole_series`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import xarray as xr

from pangeo_hpc.recipes.aggregations import AGGREGATIONS, Aggregation

__all__ = [
    "REDUCTION",
    "STEP_BY_STEP",
    "WHOLE_SERIES",
    "Reduction",
    "reduces",
    "step_by_step",
    "whole_series",
]

STEP_BY_STEP = "step_by_step"
REDUCTION = "reduction"
WHOLE_SERIES = "needs_whole_series"

F = TypeVar("F", bound=Callable[..., Any])
#: the group of each time step: (the prefix's time coordinate, the step's options with
#: their defaults, the dataset) -> int64 per step, -1 where the step is left out
Groups = Callable[[xr.DataArray, Mapping[str, Any], xr.Dataset], np.ndarray]


@dataclass(frozen=True)
class Reduction:
    """How a reduction along time is computed from per-file partial states.

    Attributes
    ----------
    state : str or callable
        The name of its :class:`~pangeo_hpc.recipes.aggregations.Aggregation` (a key of
        :data:`~pangeo_hpc.recipes.aggregations.AGGREGATIONS`: ``mean``, ``sum``, ``min``,
        ``max``, ``trend``), or a function of the options that gives it (``resample``: its
        ``stat``).
    groups : callable, optional
        Each time step's group (:data:`Groups`); ``None``: one group of every step.
    result_groups : callable, optional
        The group of each value of the result's group coordinate (the values of that
        coordinate and the options -> int64, as :attr:`groups` labels them); ``None`` for
        one group (no group axis in the result).
    periods : bool
        The groups are periods of time that follow each other (a resampling, days): a
        period wholly before the new files is finished, so a roll-up keeps its finished
        values rather than sums and counts.
    partial_left_out : bool
        Groups that the data do not wholly cover may be left out of the result (days of an
        accumulation, incomplete seasons), so the result may hold fewer groups than the
        states. Which ones the function decides on the whole data; the states hold every
        group (a file's state must not depend on the other files: a later month may
        complete a season).

    Examples
    --------
    >>> from pangeo_hpc.recipes.seasonal import climatology
    >>> climatology.reduction.kind({}), climatology.reduction.periods  # months of the year
    ('mean', False)
    """

    state: str | Callable[[Mapping[str, Any]], str]
    groups: Groups | None = None
    result_groups: Callable[[np.ndarray, Mapping[str, Any]], np.ndarray] | None = None
    periods: bool = False
    partial_left_out: bool = False

    def kind(self, options: Mapping[str, Any]) -> str:
        """The name of the state's aggregation for these options.

        Parameters
        ----------
        options : Mapping[str, Any]
            The step's options (``freq``, ``per``, ``q`` ...).

        Returns
        -------
        str
            The aggregation's name.

        Examples
        --------
        >>> from pangeo_hpc.recipes.resample import resample
        >>> resample.reduction.kind({"stat": "max", "freq": "MS"})  # the state follows the stat
        'max'
        """
        return self.state(options) if callable(self.state) else self.state

    def aggregation(self, options: Mapping[str, Any]) -> Aggregation:
        """What the states are and how they are computed, merged and finished, for these
        options (:class:`~pangeo_hpc.recipes.aggregations.Aggregation`).

        Parameters
        ----------
        options : Mapping[str, Any]
            The step's options (``freq``, ``per``, ``q`` ...).

        Returns
        -------
        Aggregation
            The aggregation.

        Examples
        --------
        >>> from pangeo_hpc.recipes.resample import resample
        >>> type(resample.reduction.aggregation({"stat": "mean"})).__name__
        'Sums'
        """
        return AGGREGATIONS[self.kind(options)]

    def labels(
        self, time: xr.DataArray, options: Mapping[str, Any], data: xr.Dataset
    ) -> np.ndarray:
        """The group of each time step of ``time`` (int64; -1: left out).

        Parameters
        ----------
        time : xr.DataArray
            A time coordinate.
        options : Mapping[str, Any]
            The step's options (``freq``, ``per``, ``q`` ...).
        data : xr.Dataset
            The input data.

        Returns
        -------
        np.ndarray
            int64, one per time step.

        Examples
        --------
        >>> import pandas as pd, xarray as xr
        >>> from pangeo_hpc.recipes.seasonal import climatology
        >>> time = xr.DataArray(pd.date_range("2000-01-01", periods=14, freq="MS"), dims="time")
        >>> climatology.reduction.labels(time, {"freq": "monthly"}, None)  # the calendar month
        array([ 1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12,  1,  2])
        """
        if self.groups is None:
            return np.zeros(time.size, "i8")
        return np.asarray(self.groups(time, options, data), dtype="i8")


def step_by_step(
    fn: F | None = None, *, unless: Callable[[Mapping[str, Any]], str | None] | None = None
) -> Any:
    """Declare ``fn`` to work time step by time step (``@step_by_step``), or to do so
    unless ``unless(options)`` gives a reason (``@step_by_step(unless=...)``).

    Parameters
    ----------
    fn : F | None, optional
        The recipe function (the decorator without arguments).
    unless : Callable[[Mapping[str, Any]], str | None] | None, optional
        Options -> why not, or ``None``.

    Returns
    -------
    Any
        The function, or the decorator.

    Examples
    --------
    >>> @step_by_step
    ... def to_celsius(da):
    ...     return da - 273.15
    >>> to_celsius.step_by_step
    True
    """

    def mark(f: F) -> F:
        setattr(f, STEP_BY_STEP, True if unless is None else unless)
        return f

    return mark if fn is None else mark(fn)


def reduces(reduction: Reduction) -> Callable[[F], F]:
    """Declare ``fn`` a reduction along time whose partial states merge (``reduction``).

    Parameters
    ----------
    reduction : Reduction
        What the states are.

    Returns
    -------
    Callable[[F], F]
        The decorator.

    Examples
    --------
    >>> @reduces(Reduction("max"))
    ... def hottest(da):
    ...     return da.max("time")
    >>> hottest.reduction.aggregation({}).name
    'max'
    """

    def mark(f: F) -> F:
        setattr(f, REDUCTION, reduction)
        return f

    return mark


def whole_series(why: str) -> Callable[[F], F]:
    """Declare that ``fn`` needs the whole series at once, and why (one sentence).

    Parameters
    ----------
    why : str
        One sentence.

    Returns
    -------
    Callable[[F], F]
        The decorator.

    Examples
    --------
    >>> @whole_series("a running mean needs the steps on either side")
    ... def running_mean(da):
    ...     return da.rolling(time=3, center=True).mean()
    >>> running_mean.needs_whole_series
    'a running mean needs the steps on either side'
    """

    def mark(f: F) -> F:
        setattr(f, WHOLE_SERIES, why)
        return f

    return mark
