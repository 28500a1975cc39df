"""The words of a figure: short panel titles, units for people, winters as ``2000/01``,
and the caption that keeps each result's full ``long_name``.

A panel's title names its result and its selection in a few words ("DJF mean,
2000-2019", "land, annual mean, 2000-2019"); the long name a recipe builds (every step,
the reference period) goes into the figure's caption line and its metadata
(:func:`caption`), never onto the panel, where it would be wrapped or clipped.
"""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pandas as pd
import xarray as xr

#: seasons, as the recipes name them
_SEASON = re.compile(r"\b(DJF|MAM|JJA|SON)\b")
#: the statistic a resample or a time mean leaves in a long name
_STAT = re.compile(r"\b(annual|seasonal|monthly|daily) mean\b")
#: long quantity names and their usual short forms
SHORT_NAMES = {
    "Sea surface temperature": "SST",
    "2 metre temperature": "2 m temperature",
    " over time of mean rate of Total precipitation": " of precipitation",
}
#: a unit's power: ``s-1``, ``m2``
_POWER = re.compile(r"(?<=[A-Za-z])(-?\d+)\b")
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
#: a result of a recipe's ``combine:`` (bias, rmse, correlation): "<statistic> of <what>:
#: <dataset> minus|with <reference>"
_COMPARED = re.compile(r"^(?P<stat>.+?) of .+: (?P<pair>\S+ (?:minus|with) \S+)$")
#: the usual short forms of the combine steps' statistics
SHORT_STATS = {"root-mean-square difference": "RMSE"}
#: rates per a span of years, as the trend recipe writes them (``K/(10 year)``)
_PER = {"(10 year)": "decade", "(100 year)": "century", "year": "year", "(1 year)": "year"}


def nice_units(units: str) -> str:
    """``units`` for a label: powers as superscripts, trends per decade in words, nothing
    for a number without units (CF's ``1``: a correlation, a fraction).

    Parameters
    ----------
    units : str
        CF units.

    Returns
    -------
    str
        The label's units.

    Examples
    --------
    >>> nice_units("m s-1"), nice_units("K/(10 year)"), nice_units("mm day-1"), nice_units("1")
    ('m s⁻¹', 'K per decade', 'mm day⁻¹', '')
    """
    u = units.strip()
    if u == "1":
        return ""
    for span, word in _PER.items():
        if u.endswith("/" + span):
            return f"{nice_units(u[: -len(span) - 1])} per {word}"
    return _POWER.sub(lambda m: m.group(1).translate(_SUPERSCRIPT), u)


def period_text(start: str, end: str) -> str:
    """``2000-2019`` for whole years, else ``2002-01 to 2002-06`` (dates as ISO text; an
    end on the first of a month is the day after the data).

    Parameters
    ----------
    start : str
        First date (ISO).
    end : str
        Last date (ISO).

    Returns
    -------
    str
        The period's words.

    Examples
    --------
    >>> period_text("2000-01-01", "2019-12-31"), period_text("2002-01-01", "2002-07-01")
    ('2000-2019', '2002-01 to 2002-06')
    """
    s, e = pd.Timestamp(start), pd.Timestamp(end)
    if e.day == 1 and e > s:  # an end as the first day after the data
        e -= pd.Timedelta(days=1)
    if (s.month, s.day, e.month, e.day) == (1, 1, 12, 31):
        return f"{s.year}" if e.year == s.year else f"{s.year}-{e.year}"
    return f"{s:%Y-%m}" if (s.year, s.month) == (e.year, e.month) else f"{s:%Y-%m} to {e:%Y-%m}"


def winters(values: np.ndarray) -> list[str] | None:
    """``2000/01`` for each date if every date is a December first of a season (a DJF
    mean, as ``resample(freq="QS-DEC")`` labels it); else ``None``.

    Parameters
    ----------
    values : np.ndarray
        Dates (datetime64).

    Returns
    -------
    list of str or None
        The labels, or ``None``.

    Examples
    --------
    >>> import numpy as np
    >>> winters(np.array(["2000-12-01", "2001-12-01"], dtype="datetime64[ns]"))
    ['2000/01', '2001/02']
    >>> winters(np.array(["2000-01-01"], dtype="datetime64[ns]")) is None
    True
    """
    if not np.issubdtype(np.asarray(values).dtype, np.datetime64) or not len(values):
        return None
    times = pd.DatetimeIndex(values)
    if not (times.month == 12).all():
        return None
    return [f"{y}/{(y + 1) % 100:02d}" for y in times.year]


def _label(da: xr.DataArray, single: bool) -> str:
    """The result's name in words (the names of a recipe's ``results:``); a single result,
    named like its input variable (``sea_surface_temperature``), by the first clause of its
    long name instead."""
    name = str(da.name or "result")
    long_name = str(da.attrs.get("long_name") or name)
    if single and long_name != name:
        clause = long_name.split(",")[0]
        for long, short in SHORT_NAMES.items():
            clause = clause.replace(long, short)
        return clause
    return name.replace("_", " ")


def short_title(da: xr.DataArray, period: str | None, *, single: bool = False) -> str:
    """A panel's title: the result's name, the season, mask and statistic that selected
    it when the name does not say them, and the period.

    Parameters
    ----------
    da : DataArray
        The result variable (its name, ``long_name`` and ``cell_methods``).
    period : str or None
        The period's words (:func:`period_text`, or ``"winters 2000/01-2018/19"``).
    single : bool
        The figure's only result (then a variable name is the input's, not the author's).

    Returns
    -------
    str
        The title.

    Examples
    --------
    >>> import xarray as xr
    >>> da = xr.DataArray(288.0, name="tas", attrs={"long_name": "air temperature"})
    >>> short_title(da, "2000-2019")
    'tas, 2000-2019'
    """
    long_name = str(da.attrs.get("long_name") or "")
    methods = str(da.attrs.get("cell_methods") or "")
    if compared := _COMPARED.match(long_name):  # a bias, RMSE, correlation of two datasets
        stat = SHORT_STATS.get(compared.group("stat"), compared.group("stat"))
        return ", ".join(p for p in (stat, compared.group("pair"), period) if p)
    label = _label(da, single)
    parts = [label]
    low = label.lower()
    if "mean" not in low and "time-mean" in long_name:
        parts[0] = f"{label} mean"
    elif "mean" not in low and not _SEASON.search(label) and (stat := _STAT.search(long_name)):
        parts.append(stat.group(0))
    if "zonal mean" in long_name and "zonal" not in low:
        parts.insert(1, "zonal mean")
    if (season := _SEASON.search(long_name)) and season.group(0) not in label:
        parts.append(season.group(0))
    for where, word in (("where land", "land"), ("where sea", "ocean")):
        if where in methods and word not in low:
            parts.append(word)
    if "anomal" in long_name.lower() and "anomal" not in low:
        parts.append("anomaly")
    if period:
        parts.append(period)
    return ", ".join(parts)


def caption(entries: list[tuple[str, str]], width: int) -> str:
    """``(a) long name (units); (b) ...`` wrapped to ``width`` characters a line.

    Parameters
    ----------
    entries : list[tuple[str, str]]
        ``(letter, text)`` of each panel.
    width : int
        Characters per line.

    Returns
    -------
    str
        The caption.

    Examples
    --------
    >>> print(caption([("a", "air temperature (K)"), ("b", "precipitation (mm day⁻¹)")], 40))
    (a) air temperature (K); (b)
    precipitation (mm day⁻¹)
    """
    text = "; ".join(f"({letter}) {words}" for letter, words in entries)
    return textwrap.fill(text, width)


def letters(n: int) -> list[str]:
    """``a``, ``b``, ... for ``n`` panels (``aa`` after ``z``).

    Parameters
    ----------
    n : int
        The number of panels.

    Returns
    -------
    list[str]
        The letters.

    Examples
    --------
    >>> letters(3), letters(28)[-2:]
    (['a', 'b', 'c'], ['aa', 'ab'])
    """
    abc = "abcdefghijklmnopqrstuvwxyz"
    return [abc[i] if i < 26 else abc[i // 26 - 1] + abc[i % 26] for i in range(n)]


__all__ = ["caption", "letters", "nice_units", "period_text", "short_title", "winters"]
