"""Parse the months and periods users type (``2008-01``, ``2008``, ``2008-01-15``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from pangeo_hpc.errors import InputError

_MONTH = re.compile(r"^\s*(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?\s*$")


@dataclass(frozen=True, order=True, slots=True)
class Month:
    """A calendar month.

    Attributes
    ----------
    year : int
        The year.
    month : int
        The month, 1..12.

    Examples
    --------
    >>> m = Month(2008, 12)
    >>> str(m), str(m.next())
    ('2008-12', '2009-01')
    """

    year: int
    month: int

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"

    def next(self) -> Month:
        """The month after this one.

        Returns
        -------
        Month
            The next month.

        Examples
        --------
        >>> Month(2008, 12).next()
        Month(year=2009, month=1)
        """
        return Month(self.year + self.month // 12, self.month % 12 + 1)


def parse_month(value: object, *, name: str = "month", end: bool = False) -> Month:
    """Parse ``YYYY-MM`` (or ``YYYY``, or ``YYYY-MM-DD``, whose day is ignored).

    A bare year means January, or December when ``end`` is true.

    Parameters
    ----------
    value : object
        ``YYYY-MM``, ``YYYY`` or ``YYYY-MM-DD``.
    name : str, optional
        The parameter's name, for the message.
    end : bool, optional
        Whether a bare year means its December.

    Returns
    -------
    Month
        The month.

    Raises
    ------
    InputError
        For anything else.

    Examples
    --------
    >>> parse_month("2008-03")
    Month(year=2008, month=3)
    >>> parse_month("2009", end=True)
    Month(year=2009, month=12)
    """
    m = _MONTH.match(str(value)) if isinstance(value, str | int) else None
    if m is None:
        raise InputError(
            f"{name} {value!r} is not a month: write it as YYYY-MM, for example 2008-01"
        )
    year = int(m.group(1))
    month = int(m.group(2)) if m.group(2) else (12 if end else 1)
    if not 1 <= month <= 12:
        raise InputError(f"{name} {value!r} has month {month}: months run from 01 to 12")
    if m.group(3) and not 1 <= int(m.group(3)) <= 31:
        raise InputError(f"{name} {value!r} has day {m.group(3)}: days run from 01 to 31")
    if not 1900 <= year <= 2200:
        raise InputError(f"{name} {value!r} has year {year}: give a year from 1900 to 2200")
    return Month(year, month)


def months(start: object, end: object) -> list[Month]:
    """Every month from ``start`` to ``end``, both included.

    Parameters
    ----------
    start : object
        The first month (as :func:`parse_month` reads it).
    end : object
        The last month.

    Returns
    -------
    list[Month]
        The months.

    Raises
    ------
    InputError
        When a month does not parse, or ``end`` is before ``start``.

    Examples
    --------
    >>> [str(m) for m in months("2008-11", "2009-02")]
    ['2008-11', '2008-12', '2009-01', '2009-02']
    """
    first = parse_month(start, name="start")
    last = parse_month(end, name="end", end=True)
    if last < first:
        raise InputError(
            f"the period {first} to {last} is empty: the end must not come before the start"
        )
    return list(_iter(first, last))


def _iter(first: Month, last: Month) -> Iterator[Month]:
    m = first
    while m <= last:
        yield m
        m = m.next()


def month_ranges(ms: list[Month]) -> str:
    """Compress a sorted list of months into ``2008-01..2008-05, 2009-02``.

    Parameters
    ----------
    ms : list[Month]
        Sorted months.

    Returns
    -------
    str
        The ranges, comma-separated.

    Raises
    ------
    InputError
        For no months.

    Examples
    --------
    >>> month_ranges(months("2008-01", "2008-05") + [Month(2009, 2)])
    '2008-01..2008-05, 2009-02'
    """
    if not ms:
        raise InputError("no months")
    out: list[str] = []
    first = prev = ms[0]
    for m in [*ms[1:], None]:
        if m is not None and m == prev.next():
            prev = m
            continue
        out.append(str(first) if first == prev else f"{first}..{prev}")
        if m is not None:
            first = prev = m
    return ", ".join(out)
