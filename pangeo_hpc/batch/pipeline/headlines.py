"""The numbers a scientist reads first, for any result: by kind, in the data's own units.

Each result variable is classified as the figure classifies it
(:func:`pangeo_hpc.write.result_shape.result_shape`), so ``summary.json`` and ``plot.png``
agree on what a variable is. Nothing here knows the quantity: a precipitation total in m
reports m (rounded to significant digits, so 1.234e-4 m stays 0.0001234, not 0.0001), a
trend reports the trend recipe's units. Every number is a float or ``None`` (for NaN), ready
for JSON.

==============  ===========================================================================
kind            numbers
==============  ===========================================================================
``scalar``      ``value``
``series``      ``mean``, ``min``, ``max``, ``first``, ``last``, ``steps``,
                ``trend_per_decade`` (least squares over the finite values, in
                ``trend_units``; ``None`` along months or seasons)
``map``         ``area_mean`` (weighted by true cell areas, as CDO's ``fldmean``),
                ``min``, ``max``, ``valid_share`` (the share of cells with a value)
``hovmoeller``  ``min``, ``max``
``zonal``       ``min``, ``max``
``maps``        ``min``, ``max``, ``area_mean``: one per panel, by its label
``other``       none
==============  ===========================================================================

:func:`headline_table` prints these numbers for a person (the command line's answer): one
row per variable, a column per kind of number, the columns no variable has left out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.means import global_mean
from pangeo_hpc.tables import RULE, text_table
from pangeo_hpc.write.result_shape import Shape, labels, per_decade, result_shape, trend_per_decade

#: significant digits of every headline number
DIGITS = 6


def rounded(value: Any, digits: int = DIGITS) -> float | None:
    """``value`` to ``digits`` significant digits as a float; ``None`` for NaN or infinity.

    Parameters
    ----------
    value : Any
        A number (numpy scalars and 0-d arrays included).
    digits : int, optional
        Significant digits.

    Returns
    -------
    float or None
        The rounded value, or ``None``.
    """
    x = float(value)
    return float(f"{x:.{digits}g}") if np.isfinite(x) else None


def _finite(da: xr.DataArray) -> np.ndarray:
    values = np.asarray(da.values, dtype="f8").ravel()
    return values[np.isfinite(values)]


def _range(shape: Shape) -> dict[str, Any]:
    ok = _finite(shape.data)
    if not ok.size:  # nanmin of nothing warns: every value is missing
        return {"min": None, "max": None}
    return {"min": rounded(ok.min()), "max": rounded(ok.max())}


def _area_mean(shape: Shape) -> xr.DataArray | None:
    """The area-weighted mean of each field, or ``None`` on a grid without cell areas (a
    curvilinear one: its areas are not known from the coordinates)."""
    try:
        return global_mean(shape.data)
    except InputError:
        return None


def _scalar(shape: Shape) -> dict[str, Any]:
    return {"value": rounded(shape.data.values)}


def _series(shape: Shape) -> dict[str, Any]:
    da, t = shape.data, shape.time
    assert t is not None
    ok = _finite(da)
    values = np.asarray(da.values, dtype="f8")
    slope = trend_per_decade(da, t)
    return {
        "mean": rounded(ok.mean()) if ok.size else None,
        **_range(shape),
        "first": rounded(values[0]),
        "last": rounded(values[-1]),
        "steps": int(values.size),
        "trend_per_decade": None if slope is None else rounded(slope),
        "trend_units": per_decade(da.attrs.get("units")),
    }


def _map(shape: Shape) -> dict[str, Any]:
    mean = _area_mean(shape)
    values = np.asarray(shape.data.values, dtype="f8")
    return {
        "area_mean": None if mean is None else rounded(mean.values),
        **_range(shape),
        "valid_share": rounded(np.isfinite(values).mean()),
    }


def _maps(shape: Shape) -> dict[str, Any]:
    lead = shape.lead
    assert lead is not None
    mean = _area_mean(shape)
    names = labels(shape.data, lead)
    return {
        **_range(shape),
        "area_mean": None
        if mean is None
        else {k: rounded(v) for k, v in zip(names, mean.transpose(lead).values, strict=True)},
    }


_NUMBERS: dict[str, Callable[[Shape], dict[str, Any]]] = {
    "scalar": _scalar,
    "series": _series,
    "map": _map,
    "hovmoeller": _range,
    "zonal": _range,
    "maps": _maps,
    "other": lambda shape: {},
}


def headlines(result: xr.Dataset | xr.DataArray) -> dict[str, dict[str, Any]]:
    """The headline numbers of each variable of computed results.

    Parameters
    ----------
    result : Dataset or DataArray
        Computed results (a DataArray counts as a Dataset of one variable).

    Returns
    -------
    dict
        ``{variable: {"kind", "units", "long_name", "dims", ...numbers}}``, JSON-ready:
        ``dims`` maps each dimension left after squeezing to its size; the numbers by kind
        are in the module's table.

    Examples
    --------
    >>> pr = xr.DataArray(1.23456789e-4, name="tp", attrs={"units": "m"})
    >>> headlines(pr)["tp"]
    {'kind': 'scalar', 'units': 'm', 'long_name': 'tp', 'dims': {}, 'value': 0.000123457}
    """
    if isinstance(result, xr.DataArray):
        result = result.to_dataset(name=result.name or "result")
    out: dict[str, dict[str, Any]] = {}
    for name, da in result.data_vars.items():
        shape = result_shape(da)
        out[str(name)] = {
            "kind": shape.kind,
            "units": str(da.attrs.get("units", "")),
            "long_name": str(da.attrs.get("long_name") or name),
            "dims": shape.dims,
            **_NUMBERS[shape.kind](shape),
        }
    return out


#: the table's number columns: header, and the keys of :func:`headlines` each is read from,
#: the first present (a scalar's value is its own mean; a map's, its area mean)
_COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("mean", ("value", "area_mean", "mean")),
    ("min", ("min",)),
    ("max", ("max",)),
    ("first", ("first",)),
    ("last", ("last",)),
    ("trend per decade", ("trend_per_decade",)),
)


def _number(value: Any) -> str:
    """A headline number as :func:`headlines` rounded it; ``n/a`` for ``None`` (NaN, or an
    area mean on a grid without cell areas)."""
    return "n/a" if value is None else f"{value:g}"


def _notes(numbers: Mapping[str, Any]) -> str:
    notes = []
    if "steps" in numbers:
        notes.append(f"{numbers['steps']} steps")
    if numbers.get("valid_share") is not None:
        notes.append(f"values in {100 * numbers['valid_share']:.0f} % of cells")
    if numbers["kind"] == "other" and numbers.get("dims"):
        notes.append(" x ".join(f"{k} {n}" for k, n in numbers["dims"].items()))
    return ", ".join(notes)


def _rows(name: str, numbers: Mapping[str, Any]) -> list[list[str]]:
    """The variable's row; a ``maps`` variable's panels each get a row of their area mean."""
    cells = []
    for _, keys in _COLUMNS:
        key = next((k for k in keys if k in numbers), None)
        value = None if key is None else numbers[key]
        cells.append("" if key is None or isinstance(value, dict) else _number(value))
    rows = [[name, numbers["kind"], numbers["units"], *cells, _notes(numbers)]]
    panels = numbers.get("area_mean")
    if isinstance(panels, dict):  # maps: one area mean per panel, by its label
        blank = [""] * (len(_COLUMNS) - 1)
        rows += [[f"  {label}", "", "", _number(v), *blank, ""] for label, v in panels.items()]
    return rows


def headline_table(answer: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The headline numbers of :func:`headlines` as an aligned table, for people.

    One row per variable: its name, kind and units, then ``mean`` (a scalar's value, a
    map's area mean, a series' mean), ``min``, ``max``, a series' ``first``, ``last`` and
    ``trend per decade`` (in the units per decade), and notes (a series' steps, the share
    of a map's cells with a value). A ``maps`` variable gets a row per panel with its area
    mean. A column that no variable has is left out; ``n/a`` is a number that is not known
    (all values missing, or no cell areas). Numbers are printed as rounded in ``answer``,
    so the table and ``summary.json`` agree digit for digit.

    Parameters
    ----------
    answer : mapping
        :func:`headlines`' output (``summary.json``'s ``answer``).

    Returns
    -------
    list of str
        The lines: a header, a rule, the rows.

    Examples
    --------
    >>> pr = xr.DataArray(1.23456789e-4, name="tp", attrs={"units": "m"})
    >>> print("\\n".join(headline_table(headlines(pr))))
    result  kind    units         mean
    ------  ------  -----  -----------
    tp      scalar  m      0.000123457
    """
    head = ["result", "kind", "units", *(h for h, _ in _COLUMNS), "notes"]
    rows = [row for name, numbers in answer.items() for row in _rows(name, numbers)]
    used = [i < 3 or any(r[i] for r in rows) for i in range(len(head))]

    def kept(row: list[str]) -> list[str]:
        return [c for c, u in zip(row, used, strict=True) if u]

    right = kept([False] * 3 + [True] * len(_COLUMNS) + [False])
    return text_table([kept(head), RULE, *map(kept, rows)], right=right)


__all__ = ["DIGITS", "headline_table", "headlines", "rounded"]
