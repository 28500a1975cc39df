import pytest

from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.periods import Month, months, parse_month


@pytest.mark.parametrize(
    ("text", "end", "expected"),
    [
        ("2008-01", False, Month(2008, 1)),
        ("2008-1", False, Month(2008, 1)),
        ("2008", False, Month(2008, 1)),
        ("2008", True, Month(2008, 12)),
        ("2008-03-15", False, Month(2008, 3)),
        (" 2008-12 ", False, Month(2008, 12)),
        (2008, False, Month(2008, 1)),
    ],
)
def test_parse_month(text, end, expected):
    assert parse_month(text, end=end) == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("2008-13", "month 13: months run from 01 to 12"),
        ("2008-00", "month 0"),
        ("Jan 2008", "is not a month: write it as YYYY-MM"),
        ("2008/01", "is not a month"),
        ("", "is not a month"),
        ("2008-02-40", "day 40"),
        ("0099-01", "give a year from 1900 to 2200"),
        (None, "is not a month"),
        (3.5, "is not a month"),
    ],
)
def test_parse_month_errors_name_value_and_fix(text, match):
    with pytest.raises(InputError, match=match):
        parse_month(text)


def test_months_span_years():
    assert [str(m) for m in months("2008-11", "2009-02")] == [
        "2008-11",
        "2008-12",
        "2009-01",
        "2009-02",
    ]
    assert len(months("2008", "2009")) == 24


def test_empty_period_is_an_error():
    with pytest.raises(InputError, match="period 2009-01 to 2008-12 is empty"):
        months("2009-01", "2008-12")
