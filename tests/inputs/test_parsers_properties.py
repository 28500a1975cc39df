"""Property-based tests (hypothesis) of the parsers of what users type: months and periods,
walltimes, sizes and memory. Whatever the text, a parser returns a valid value or raises
InputError with one line that names the value; never another exception."""

from __future__ import annotations

import itertools
import string

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.periods import Month, months, parse_month
from pangeo_hpc.inputs.sizes import parse_size
from pangeo_hpc.inputs.walltime import format_walltime, lifetime, parse_walltime

settings.register_profile(
    "pangeo-hpc", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("pangeo-hpc")

#: what users type: mostly characters of dates, durations and sizes, some of anything
typed = st.one_of(
    st.text(alphabet=string.digits + "-:. smhdkKMGTiBb", max_size=16),
    st.text(max_size=16),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)
years = st.integers(min_value=1900, max_value=2200)
month_numbers = st.integers(min_value=1, max_value=12)


def one_line_naming(exc: InputError, value: object) -> None:
    text = str(exc)
    assert "\n" not in text
    assert repr(value) in text, f"the error does not name {value!r}: {text}"


# ----- months and periods


@given(years, month_numbers, st.integers(min_value=1, max_value=28), st.sampled_from(["", " "]))
def test_a_month_written_any_usual_way_parses_to_itself(year, month, day, pad):
    m = Month(year, month)
    assert parse_month(f"{pad}{year}-{month:02d}{pad}") == m
    assert parse_month(f"{year}-{month}") == m
    assert parse_month(f"{year}-{month:02d}-{day:02d}") == m  # the day is ignored
    assert parse_month(str(m)) == m  # str() round-trips
    assert parse_month(year) == Month(year, 1) and parse_month(year, end=True) == Month(year, 12)


@given(typed)
@example("2008-13")
@example("2008-00")
@example("2008-01-32")
@example("1899-12")
@example("08-01")
@example("2008/01")
def test_any_text_is_a_month_or_a_one_line_error_naming_it(value):
    try:
        m = parse_month(value, name="start")
    except InputError as exc:
        one_line_naming(exc, value)
        assert str(exc).startswith("start ")
    else:
        assert 1900 <= m.year <= 2200 and 1 <= m.month <= 12


@given(years, month_numbers, st.integers(min_value=0, max_value=600))
def test_a_period_holds_every_month_once_in_order(year, month, length):
    first = Month(year, month)
    last = first
    for _ in range(length):
        last = last.next()
    if last.year > 2200:
        with pytest.raises(InputError):
            months(str(first), str(last))
        return
    got = months(str(first), str(last))
    assert len(got) == length + 1
    assert got[0] == first and got[-1] == last
    assert all(a.next() == b for a, b in itertools.pairwise(got))
    if length:
        with pytest.raises(InputError, match="the end must not come before the start"):
            months(str(last), str(first))


# ----- walltimes


@given(st.integers(min_value=1, max_value=400 * 86400))
def test_walltime_round_trips_and_the_lifetime_ends_before_it(seconds):
    text = format_walltime(seconds)
    assert parse_walltime(text) == seconds
    life, stagger = lifetime(text)
    assert 0 <= stagger and life + stagger <= seconds  # workers leave before the job ends
    assert life >= seconds // 2


@given(
    st.integers(min_value=0, max_value=30),
    st.integers(min_value=0, max_value=23),
    st.integers(min_value=0, max_value=59),
    st.integers(min_value=0, max_value=59),
)
def test_slurm_forms_mean_what_slurm_means(d, h, m, s):
    total = d * 86400 + h * 3600 + m * 60 + s
    if total == 0:
        with pytest.raises(InputError, match="longer than zero"):
            parse_walltime(f"{d}-{h}:{m}:{s}")
        return
    assert parse_walltime(f"{d}-{h:02d}:{m:02d}:{s:02d}") == total
    if d == 0:
        assert parse_walltime(f"{h}:{m:02d}:{s:02d}") == h * 3600 + m * 60 + s
    if d == h == 0 and (m or s):
        assert parse_walltime(f"{m}:{s:02d}") == m * 60 + s  # M:S, as Slurm reads it


@given(typed)
@example("25:61")
@example("-1:00:00")
@example("0")
@example("1.5h")
@example("2 h")
@example("1-")
def test_any_text_is_a_walltime_or_a_one_line_error_naming_it(value):
    try:
        seconds = parse_walltime(value)
    except InputError as exc:
        one_line_naming(exc, value)
    else:
        assert isinstance(seconds, int) and seconds > 0


# ----- sizes and memory


@given(st.integers(min_value=1, max_value=2**60))
def test_sizes_in_bytes_and_in_units_agree(n):
    assert parse_size(n) == n
    assert parse_size(str(n)) == n
    assert parse_size(f"{n}B") == n
    assert parse_size(f"{n} kB") == n * 1000
    assert parse_size(f"{n}KiB") == n * 1024
    assert parse_size(f"{n}gb") == n * 10**9  # case does not matter


@given(typed)
@example("-5GB")
@example("0")
@example("nan")
@example("inf")
@example("1e400")
@example("12 parsecs")
@example("GB")
def test_any_text_is_a_size_or_a_one_line_error_naming_it(value):
    try:
        n = parse_size(value, name="memory")
    except InputError as exc:
        one_line_naming(exc, value)
        assert str(exc).startswith("memory=")  # the parameter, as Python spells it
    else:
        assert isinstance(n, int) and n >= 1
