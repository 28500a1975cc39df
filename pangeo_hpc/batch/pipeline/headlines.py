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

from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from pangeo_hpc.batch.pipeline.answer_text import headline_table
from pangeo_hpc.errors import InputError
from pangeo_hpc.recipes.means import global_mean
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

    Examples
    --------
    >>> from pangeo_hpc.batch.pipeline.headlines import rounded
    >>> rounded(291.123456789), rounded(float("nan")), rounded(0.000123456789, digits=3)
    (291.123, None, 0.000123)
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


__all__ = ["DIGITS", "headline_table", "headlines", "rounded"]
