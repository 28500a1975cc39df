"""Predictions against measurements, paired by round (benchmarks/plan_validation.py)."""

from __future__ import annotations

import statistics

import pytest

from pangeo_hpc.errors import InputError
from pangeo_hpc.planning.validation import Comparison, paired_errors, verdict, worst

#: benchmarks/results/plan_validation.json of 2026-11-23 16:03: the medians agree within
#: 2 %, but round 1 ran 37 % (1 worker) and 28 % (2 workers) longer than predicted
ONE = Comparison("local, 1 worker", (12.41, 18.99, 21.35), (17.00, 18.68, 20.96), "CPU decode")
TWO = Comparison("local, 2 workers", (10.19, 14.03, 16.17), (13.09, 13.92, 14.69), "host CPU")
SLURM = Comparison("slurm, 1 job", (21.89, 21.98, 22.14), (17.47, 16.88, 19.37), "CPU decode")


def test_medians_that_agree_do_not_hide_an_off_round():
    median_error = statistics.median(ONE.measured) / statistics.median(ONE.predicted) - 1
    assert abs(median_error) < 0.02  # what the medians said: "met"
    assert ONE.paired_errors == pytest.approx([0.370, -0.016, -0.018], abs=1e-3)
    err, met = verdict([ONE, TWO, SLURM], goal=0.25)
    assert err == pytest.approx(17.00 / 12.41 - 1)
    assert not met


def test_the_verdict_is_met_only_when_every_round_of_every_setup_is_within_the_goal():
    good = Comparison("a", (10.0, 20.0), (12.0, 16.0))  # +20 %, -20 %
    assert verdict([good], goal=0.25) == (pytest.approx(0.2), True)
    assert verdict([good, SLURM], goal=0.25) == (pytest.approx(16.88 / 21.98 - 1), True)
    assert verdict([good], goal=0.1)[1] is False


def test_the_worst_error_keeps_its_sign():
    assert SLURM.worst_error == pytest.approx(16.88 / 21.98 - 1)  # -23 %
    assert worst([0.1, -0.3, 0.2]) == -0.3


def test_a_row_has_the_pairs_and_the_medians_as_context():
    row = ONE.row()
    assert row["paired_errors"] == ONE.paired_errors
    assert row["worst_error"] == pytest.approx(0.370, abs=1e-3)
    assert row["median_error"] == pytest.approx(18.68 / 18.99 - 1)
    assert (row["predictions_s"], row["runs_s"]) == ([12.41, 18.99, 21.35], [17.0, 18.68, 20.96])
    assert row["bottleneck"] == "CPU decode"


@pytest.mark.parametrize(
    ("predicted", "measured", "match"),
    [
        ([1.0, 2.0], [1.0], "2 predictions and 1 measurements cannot be paired"),
        ([], [], "0 predictions and 0 measurements"),
        ([0.0], [1.0], "time 0.0 must be a positive number"),
        ([1.0], [float("nan")], "time nan must be a positive number"),
    ],
)
def test_what_cannot_be_paired_is_refused(predicted, measured, match):
    with pytest.raises(InputError, match=match):
        paired_errors(predicted, measured)


def test_no_setups_is_refused():
    with pytest.raises(InputError, match="no setups to compare"):
        verdict([])
