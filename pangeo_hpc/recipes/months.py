"""Time steps of some calendar months or a season (CDO ``selmon``, ``selseason``)."""

from __future__ import annotations

from collections.abc import Sequence

import dask.array as darr
import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.grid import time_name
from pangeo_hpc.recipes.kernels import take_blocks
from pangeo_hpc.recipes.traits import step_by_step

#: the seasons ``select_season`` knows, as CDO's ``selseason`` defines them
SEASONS = {"DJF": (12, 1, 2), "MAM": (3, 4, 5), "JJA": (6, 7, 8), "SON": (9, 10, 11)}
#: month 1..12 -> its name in three letters (``MONTH_NAMES[0] == "Jan"``)
MONTH_NAMES = tuple("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())


@step_by_step
def select_months(da: xr.DataArray, *, months: Sequence[int]) -> xr.DataArray:
    """The time steps in the calendar months ``months``, in time order (CDO ``selmon``).

    Parameters
    ----------
    da : DataArray
        Data with a time dimension (datetime64 or cftime).
    months : list of int
        Month numbers 1-12, in any order (``[12, 1, 2]``); one number is fine.

    Returns
    -------
    DataArray
        The same data and attributes at those time steps only; lazy (an ``isel``).
        ``long_name`` gains the months: ``in DJF`` for a season's, else ``in Jun-Jul``,
        ``in Jan+Mar`` (:func:`months_words`).

    Raises
    ------
    InputError
        A number that is not a month, or a month the data's period does not hold.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")  # two years, monthly
    >>> da = xr.DataArray(np.arange(24.0), coords={"time": time}, dims="time", attrs={"units": "K"})
    >>> select_months(da, months=[12, 1, 2]).values.tolist()
    [0.0, 1.0, 11.0, 12.0, 13.0, 23.0]
    """
    check_dataarray(da, "select_months")
    wanted = _month_numbers(months)
    return _select(da, wanted, "select_months", f"months={list(wanted)!r}")


@step_by_step
def select_season(da: xr.DataArray, *, season: str) -> xr.DataArray:
    """The time steps of one season in every year (CDO ``selseason``).

    Parameters
    ----------
    da : DataArray
        Data with a time dimension.
    season : {"DJF", "MAM", "JJA", "SON"}
        December-January-February and so on (any case). A DJF's December is the one
        before its January; both are kept as they come (``select_season`` selects, it
        does not group: :func:`pangeo_hpc.recipes.resample` with ``freq="seasonal"`` does).

    Returns
    -------
    DataArray
        The same data at those time steps only; ``long_name`` gains ``in DJF`` (the
        season).

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> time = pd.date_range("2000-01-01", periods=24, freq="MS")  # two years, monthly
    >>> da = xr.DataArray(np.arange(24.0), coords={"time": time}, dims="time", attrs={"units": "K"})
    >>> select_season(da, season="JJA").values.tolist()
    [5.0, 6.0, 7.0, 17.0, 18.0, 19.0]
    """
    check_dataarray(da, "select_season")
    key = str(season).upper()
    if key not in SEASONS:
        raise InputError(
            f"select_season: season={season!r} is not one of {list(SEASONS)}", param="season"
        )
    return _select(da, SEASONS[key], "select_season", f"season={season!r}")


def months_words(months: Sequence[int]) -> str:
    """The months ``months`` in a few letters: a season's name (``DJF`` for 12, 1, 2 in
    any order), else runs of consecutive months (``Jun-Aug``, ``Jan+Mar``, ``Nov-Feb``).

    Parameters
    ----------
    months : Sequence[int]
        Month numbers, 1..12.

    Returns
    -------
    str
        A few letters.

    Examples
    --------
    >>> months_words([1, 12, 2]), months_words([6, 7]), months_words([1, 3, 4])
    ('DJF', 'Jun-Jul', 'Jan+Mar-Apr')
    """
    wanted = set(months)
    for name, season in SEASONS.items():
        if wanted == set(season):
            return name
    runs: list[list[int]] = []
    for m in range(1, 13):
        if m in wanted:
            if runs and runs[-1][-1] == m - 1:
                runs[-1].append(m)
            else:
                runs.append([m])
    if len(runs) > 1 and runs[0][0] == 1 and runs[-1][-1] == 12:  # across the new year
        runs = [runs[-1] + runs[0], *runs[1:-1]]
    names = [
        MONTH_NAMES[r[0] - 1] + (f"-{MONTH_NAMES[r[-1] - 1]}" if len(r) > 1 else "") for r in runs
    ]
    return "+".join(names)


def _month_numbers(months: Sequence[int] | int) -> tuple[int, ...]:
    values = [months] if isinstance(months, int | np.integer) else months
    try:
        numbers = tuple(int(m) for m in values)
        ok = all(float(m) == int(m) for m in values) and bool(numbers)
    except (TypeError, ValueError):
        numbers, ok = (), False
    if not ok or any(not 1 <= m <= 12 for m in numbers):
        raise InputError(
            f"select_months: months={months!r} are not month numbers: give a list of 1-12, "
            "e.g. [12, 1, 2]",
            param="months",
        )
    return numbers


def _select(da: xr.DataArray, wanted: Sequence[int], recipe: str, given: str) -> xr.DataArray:
    t = time_name(da)
    month = np.asarray(da[t].dt.month.values)
    absent = sorted(set(wanted) - set(month.tolist()))
    if absent:
        span = f"{_date(da[t].values[0])}..{_date(da[t].values[-1])}" if month.size else "empty"
        raise InputError(
            f"{recipe}: {given}: month(s) {absent} are not in the data's period ({span}): "
            "give months the data hold or a longer period",
            param=given.split("=")[0],
        )
    index = np.flatnonzero(np.isin(month, list(wanted)))
    out = da.isel({t: index})
    if isinstance(da.data, darr.Array):  # the blocks stay the files' (dask's take regroups)
        out = out.copy(data=take_blocks(da.data, index, da.get_axis_num(t)))
    # what selected the data, in their name (a JJA mean is not a DJF mean)
    name = da.attrs.get("long_name", da.name or "field")
    return out.assign_attrs(long_name=f"{name} in {months_words(wanted)}")


def _date(value: object) -> str:
    return (
        str(np.datetime_as_string(value, unit="D"))
        if isinstance(value, np.datetime64)
        else str(value)[:10]
    )
