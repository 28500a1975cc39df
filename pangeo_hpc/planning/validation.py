"""Predicted against measured: errors paired by round, and a verdict from the worst one.

``benchmarks/plan_validation.py`` calibrates, predicts and runs in rounds: each round's
prediction comes from that round's calibration, and its run is made right after it. A
prediction is compared with that run, never with a median of the runs: medians of the
predictions and of the measurements, taken separately, can agree while every round is off
(a fast calibration in one round, a slow machine in another). The verdict comes from the
largest paired error; the medians are context.

The error of a pair is ``measured / predicted - 1``: +0.37 means the run took 37 % longer
than predicted.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pangeo_hpc.errors import InputError


def paired_errors(predicted: Sequence[float], measured: Sequence[float]) -> list[float]:
    """``measured[i] / predicted[i] - 1`` for each round ``i``.

    Parameters
    ----------
    predicted, measured : sequence of float
        Seconds, one per round, in the same order (round ``i``'s run made right after
        round ``i``'s calibration).

    Returns
    -------
    list of float

    Raises
    ------
    InputError
        Sequences of different lengths, no rounds, or a time that is not a positive number.

    Examples
    --------
    >>> [round(e, 2) for e in paired_errors([12.41, 18.99], [17.00, 18.68])]
    [0.37, -0.02]
    """
    if len(predicted) != len(measured) or not predicted:
        raise InputError(
            f"{len(predicted)} predictions and {len(measured)} measurements cannot be paired: "
            "give one of each per round, at least one round"
        )
    for t in (*predicted, *measured):
        if not isinstance(t, int | float) or not math.isfinite(t) or t <= 0:
            raise InputError(f"time {t!r} must be a positive number of seconds")
    return [m / p - 1 for p, m in zip(predicted, measured, strict=True)]


def worst(errors: Sequence[float]) -> float:
    """The error of largest magnitude, with its sign (``-0.23`` over ``+0.10``).

    Parameters
    ----------
    errors : Sequence[float]
        Relative errors.

    Returns
    -------
    float
        The worst.

    Examples
    --------
    >>> from pangeo_hpc.planning.validation import worst
    >>> worst([0.10, -0.23, 0.05])
    -0.23
    """
    return max(errors, key=abs)


@dataclass(frozen=True)
class Comparison:
    """One setup's rounds: predictions, measurements, their paired errors.

    Attributes
    ----------
    setup : str
        E.g. ``"local, 2 workers"``.
    predicted, measured : tuple of float
        Seconds per round.
    bottleneck : str
        The model's bottleneck (last round).

    Examples
    --------
    >>> from pangeo_hpc.planning.validation import Comparison
    >>> c = Comparison("local 2 workers", predicted=(10.0, 20.0), measured=(12.5, 18.0))
    >>> [round(e, 3) for e in c.paired_errors], round(c.worst_error, 3)
    ([0.25, -0.1], 0.25)
    """

    setup: str
    predicted: tuple[float, ...]
    measured: tuple[float, ...]
    bottleneck: str = ""

    @property
    def paired_errors(self) -> list[float]:
        """``measured / predicted - 1`` per round."""
        return paired_errors(self.predicted, self.measured)

    @property
    def worst_error(self) -> float:
        """The paired error of largest magnitude, signed."""
        return worst(self.paired_errors)

    def row(self) -> dict[str, object]:
        """What the results file keeps: the pairs first, the medians as context.

        Returns
        -------
        dict[str, object]
            The row.

        Examples
        --------
        >>> from pangeo_hpc.planning.validation import Comparison
        >>> Comparison("local 2 workers", predicted=(10.0, 20.0), measured=(12.5, 18.0)).row()
        {'setup': 'local 2 workers', 'predictions_s': [10.0, 20.0], 'runs_s': [12.5, 18.0], ...
        """
        median_p, median_m = statistics.median(self.predicted), statistics.median(self.measured)
        return {
            "setup": self.setup,
            "predictions_s": list(self.predicted),
            "runs_s": list(self.measured),
            "paired_errors": self.paired_errors,
            "worst_error": self.worst_error,
            "median_predicted_s": median_p,
            "median_measured_s": median_m,
            "median_error": median_m / median_p - 1,
            "bottleneck": self.bottleneck,
        }


def verdict(comparisons: Sequence[Comparison], goal: float = 0.25) -> tuple[float, bool]:
    """The largest paired error of all setups (signed), and whether it is within ``goal``.

    Parameters
    ----------
    comparisons : Sequence[Comparison]
        Predicted and measured times of each setup.
    goal : float, optional
        The largest error accepted (0.25: 25 %).

    Returns
    -------
    (float, bool)
        The worst error, and whether it is within ``goal``.

    Raises
    ------
    InputError
        If ``comparisons`` is empty.

    Examples
    --------
    >>> c = Comparison("local, 1 worker", (12.41, 18.99, 21.35), (17.00, 18.68, 20.96))
    >>> err, met = verdict([c])
    >>> round(err, 2), met
    (0.37, False)
    """
    if not comparisons:
        raise InputError("no setups to compare: give at least one")
    err = worst([c.worst_error for c in comparisons])
    return err, abs(err) <= goal
