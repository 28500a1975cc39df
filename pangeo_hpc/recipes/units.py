"""Units that follow the data: read, compare and convert them with pint.

Units are parsed with cf-xarray's registry (``cf_xarray.units.units``: pint with UDUNITS
spellings such as ``m s-1``, ``degC``, ``mm day-1``) and written back in a spelling that both
UDUNITS (cfchecks) and pint read: ``degC``, never pint's ``°C``; ``day`` and ``year``,
never ``d`` and ``yr``; ``K/(10 year)`` for the trends' per-decade units, which pint parses
as 0.1 K/year. The registry is imported at the first call, not with this module: importing
cf-xarray's registry makes it pint's application registry and registers pint's matplotlib
converters, which importing pangeo_hpc must not do (tests/test_imports.py).

A conversion is affine, ``y = a x + b``: pint gives ``a`` and ``b`` from two scalars and
xarray applies them, so Dask data stay lazy and float32 stays float32. Not pint-xarray's
``quantify``/``to``: it cannot read UDUNITS' scaled units (``K/(10 year)``, this package's
trend units), and it writes ``°C``.

Temperatures: a value in ``K`` or ``degC`` is either a temperature on a scale (0 degC is
273.15 K) or a temperature *difference* (an anomaly of 1 degC is one of 1 K). CF 1.11 says
which with ``units_metadata``; without it, :func:`is_difference` decides from the name,
``long_name``, ``standard_name`` and ``cell_methods``. Units that divide a temperature by
something (``K/(10 year)``, ``K m-1``) are differences whatever the attributes say.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from pangeo_hpc.errors import InputError, shown
from pangeo_hpc.recipes.cf_attrs import per_time_units, with_attrs
from pangeo_hpc.recipes.checks import check_dataarray
from pangeo_hpc.recipes.rates import accumulation_period, rate_attrs
from pangeo_hpc.recipes.traits import step_by_step

if TYPE_CHECKING:
    import pint

#: CF 1.11 ``units_metadata`` of the two kinds of temperature
DIFFERENCE = "temperature: difference"
ON_SCALE = "temperature: on_scale"
#: words of a name, long_name or standard_name that make a temperature a difference
_DIFFERENCE_WORDS = re.compile(
    r"anomal|difference|departure|deviation|change|trend|bias|increment|\brange\b", re.I
)
#: cell methods whose result is a temperature difference
_DIFFERENCE_METHODS = re.compile(r":\s*(range|standard_deviation)\b")
#: pint's cf spellings that UDUNITS does not read, or reads otherwise -> UDUNITS spellings
_SPELLING = {"°C": "degC", "delta_degC": "degC", "°F": "degF", "delta_degF": "degF"}
_SPELLING |= {"d": "day", "yr": "year"}
#: a scale factor of 1/10 or 1/100 per year is UDUNITS' "/(10 year)" or "/(100 year)"
_PER_YEARS = {10: "decade", 100: "century"}
#: UDUNITS has no decade or century (and pint mistakes "decade" for a prefixed unit)
_SPANS = (
    (re.compile(r"\bdecades?\b"), "(10 year)"),
    (re.compile(r"\bcentur(?:y|ies)\b"), "(100 year)"),
)


def _registry() -> pint.UnitRegistry:
    from cf_xarray.units import units  # at the first call: see the module docstring

    return units


def _delta(reg: pint.UnitRegistry, text: str) -> str:
    """``text`` with every offset unit (degC) as its difference (delta_degC): inside a
    product or quotient, a temperature is always a difference."""

    def one(m: re.Match[str]) -> str:
        try:
            unit = reg.parse_units(m.group(0))
        except Exception:  # not a unit by itself ("10", "e3"): pint will say
            return m.group(0)
        name = str(unit)
        if len(unit._units) == 1 and not reg._units[name].is_multiplicative:
            return f"delta_{name}"
        return m.group(0)

    return re.sub(r"[A-Za-z_°][A-Za-z_°]*", one, text)


def _parse(text: Any, *, step: str, what: str, param: str) -> pint.Quantity:
    """``text`` as a pint Quantity: magnitude 1 for plain units, the scale factor for
    UDUNITS' scaled units (``K/(10 year)`` -> 0.1 K/year)."""
    reg = _registry()
    spelled = str(text).strip() or "1"
    for word, years in _SPANS:
        spelled = word.sub(years, spelled)
    try:
        try:
            return reg.Quantity(1, reg.parse_units(spelled))
        except ValueError as exc:  # "Unit expression cannot have a scaling factor."
            if "scaling factor" not in str(exc):
                raise
        q = reg.parse_expression(_delta(reg, spelled))
        return q if isinstance(q, reg.Quantity) else reg.Quantity(q)
    except Exception as exc:  # pint's UndefinedUnitError, DefinitionSyntaxError, ...
        raise InputError(
            f"{step}: {what} {shown(text)} are not units that UDUNITS or pint know: "
            "give UDUNITS units such as 'degC', 'mm day-1' or 'km h-1'",
            param=param,
        ) from exc


def units_of(obj: xr.DataArray | str, *, step: str = "units_of") -> pint.Quantity:
    """The units of ``obj`` (its ``units`` attribute, or a string) as a pint Quantity.

    A Quantity, not a ``pint.Unit``: UDUNITS' scaled units, such as the ``K/(10 year)`` of
    :func:`~pangeo_hpc.recipes.linear_trend`, are a number times a unit (0.1 K/year), which
    a ``pint.Unit`` cannot hold. Plain units have magnitude 1; ``.units`` is the unit.

    Parameters
    ----------
    obj : xr.DataArray | str
        Data with ``units``, or units text.
    step : str, optional
        The step's name, for errors.

    Returns
    -------
    pint.Quantity
        The units.

    Raises
    ------
    InputError
        When ``obj`` has no ``units`` attribute, or pint cannot read it.

    Examples
    --------
    >>> q = units_of("K/(10 year)")
    >>> float(q.magnitude), str(q.units)
    (0.1, 'kelvin / year')
    """
    if isinstance(obj, xr.DataArray):
        if "units" not in obj.attrs:
            raise InputError(
                f"{step}: {obj.name or 'the data'!s} has no units attribute: "
                "set it, e.g. da.attrs['units'] = 'K'"
            )
        return _parse(obj.attrs["units"], step=step, what="the data's units", param="units")
    return _parse(obj, step=step, what="units", param="units")


def _affine(src: pint.Quantity, dst: pint.Quantity) -> tuple[float, float]:
    """``a`` and ``b`` with ``dst value = a * src value + b``."""
    reg = _registry()

    def f(x: float) -> float:
        q = reg.Quantity(x * src.magnitude, src.units).to(dst.units)
        return float(q.magnitude / dst.magnitude)

    b = f(0.0)
    return f(1.0) - b, b


def same_units(a: xr.DataArray | str, b: xr.DataArray | str) -> bool:
    """True when the units of ``a`` and ``b`` are the same units however spelled
    (``m s-1`` and ``m/s``; ``K/(10 year)`` and ``0.1 K/year``); ``K`` and ``degC`` are not.

    Parameters
    ----------
    a : xr.DataArray | str
        Data, or units text.
    b : xr.DataArray | str
        Data, or units text.

    Returns
    -------
    bool
        Whether they are the same units.

    Examples
    --------
    >>> same_units("m s-1", "m/s"), same_units("K/(10 year)", "0.1 K/year"), same_units("K", "degC")
    (True, True, False)
    """
    qa, qb = units_of(a, step="same_units"), units_of(b, step="same_units")
    if qa.dimensionality != qb.dimensionality:
        return False
    scale, offset = _affine(qa, qb)
    return bool(np.isclose(scale, 1.0, rtol=1e-12, atol=0) and offset == 0.0)


def compatible_units(a: xr.DataArray | str, b: xr.DataArray | str) -> bool:
    """True when values in the units of ``a`` convert to those of ``b`` (same dimension).

    Parameters
    ----------
    a : xr.DataArray | str
        Data, or units text.
    b : xr.DataArray | str
        Data, or units text.

    Returns
    -------
    bool
        Whether ``a`` converts to ``b``.

    Examples
    --------
    >>> compatible_units("K", "degC"), compatible_units("K", "m")
    (True, False)
    """
    qa, qb = units_of(a, step="compatible_units"), units_of(b, step="compatible_units")
    return bool(qa.dimensionality == qb.dimensionality)


def is_difference(da: xr.DataArray) -> bool:
    """Whether a temperature in ``da`` is a difference (an anomaly, a trend, a range)
    rather than a value on a scale.

    In this order: ``units_metadata`` (CF 1.11) ``"temperature: difference"`` or
    ``"temperature: on_scale"``; units that divide a temperature (``K/(10 year)``); the
    words anomaly, difference, departure, deviation, change, trend, bias, increment or
    range in the name, ``long_name`` or ``standard_name``; a ``cell_methods`` entry
    ``range`` or ``standard_deviation``. Else a value on a scale.

    Parameters
    ----------
    da : xr.DataArray
        The data.

    Returns
    -------
    bool
        True for a difference.

    Examples
    --------
    >>> import xarray as xr
    >>> t2m = xr.DataArray([1.0], attrs={"units": "K", "long_name": "2 metre temperature"})
    >>> is_difference(t2m), is_difference(t2m.assign_attrs(long_name="temperature anomaly"))
    (False, True)
    """
    meta = " ".join(str(da.attrs.get("units_metadata", "")).split()).lower()
    if meta in (DIFFERENCE, ON_SCALE):
        return meta == DIFFERENCE
    if "units" in da.attrs:
        q = units_of(da)
        if q.dimensionality != {"[temperature]": 1} or len(q.units._units) != 1:
            return True
    names = " ".join(
        str(v) for v in (da.name, da.attrs.get("long_name"), da.attrs.get("standard_name"))
    )
    methods = str(da.attrs.get("cell_methods", ""))
    return bool(_DIFFERENCE_WORDS.search(names) or _DIFFERENCE_METHODS.search(methods))


def spell(q: pint.Quantity) -> str:
    """UDUNITS spelling of the units ``q`` (magnitude: a scale factor), as pint and CDO
    print them: ``mm day-1``, ``km h-1``, ``degC``, ``K/(10 year)``.

    Parameters
    ----------
    q : pint.Quantity
        Units.

    Returns
    -------
    str
        UDUNITS text.

    Examples
    --------
    >>> spell(units_of("mm/day")), spell(units_of("km/h")), spell(units_of("K/(10 year)"))
    ('mm day-1', 'km h-1', 'K/(10 year)')
    """
    reg = _registry()
    unit, scale = q.units, float(q.magnitude)
    if not np.isclose(scale, 1.0, rtol=1e-12, atol=0):
        per_year = unit._units.get("year", 0) == -1
        years = round(1 / scale) if scale else 0
        if per_year and years in _PER_YEARS and np.isclose(scale * years, 1, rtol=1e-12):
            return per_time_units(spell(reg.Quantity(1, unit * reg.year)), _PER_YEARS[years])
        return f"{scale:.10g} {spell(reg.Quantity(1, unit))}"
    text = f"{unit:cf}"

    def one(m: re.Match[str]) -> str:
        return _SPELLING.get(m.group(1), m.group(1)) + m.group(2)

    return " ".join(re.sub(r"^(.*?)(-?\d*)$", one, token) for token in text.split())


def _apply(da: xr.DataArray, scale: float | xr.DataArray, offset: float) -> xr.DataArray:
    """``da * scale + offset`` in float64, back in the data's float type: float32 data stay
    float32, and 273.4 K - 273.15 is 0.25 degC as CDO computes it (it works in double),
    not 0.2500153 (float32 arithmetic loses the small difference of large numbers)."""
    out = da.astype("f8") * scale + offset
    return out.astype(da.dtype) if np.issubdtype(da.dtype, np.floating) else out


def _temperature_attrs(q: pint.Quantity, difference: bool) -> dict[str, str]:
    if q.dimensionality == {"[temperature]": 1} and len(q.units._units) == 1:
        return {"units_metadata": DIFFERENCE if difference else ON_SCALE}
    return {}


def convert(
    da: xr.DataArray,
    to: str,
    *,
    step: str,
    period: str | None = None,
    bounds: xr.DataArray | None = None,
) -> xr.DataArray:
    """:func:`convert_units` for other recipes: errors name ``step`` instead.

    Parameters
    ----------
    da : xr.DataArray
        The data.
    to : str
        The units wanted.
    step : str
        The step's name, for errors.
    period : str | None, optional
        An accumulation's period (``1h``), or ``None``.
    bounds : xr.DataArray | None, optional
        Time bounds, or ``None``.

    Returns
    -------
    xr.DataArray
        The data in ``to``.

    Raises
    ------
    InputError
        When the units do not convert.

    Examples
    --------
    >>> import xarray as xr
    >>> da = xr.DataArray([273.15, 283.15], dims="x", attrs={"units": "K"})
    >>> out = convert(da, "degC", step="anomaly")
    >>> out.values, out.attrs["units"]
    (array([ 0., 10.]), 'degC')
    """
    src = units_of(da, step=step)
    dst = _parse(to, step=step, what="the target units", param="to")
    difference = is_difference(da) if src.dimensionality == {"[temperature]": 1} else False
    attrs = {k: v for k, v in da.attrs.items() if k != "units_metadata"}
    if src.dimensionality == dst.dimensionality:
        scale, offset = _affine(src, dst)
        if difference:
            offset = 0.0
        out = da if (scale, offset) == (1.0, 0.0) else _apply(da, scale, offset)
        attrs |= {"units": spell(dst), **_temperature_attrs(dst, difference)}
        return with_attrs(out.rename(da.name), attrs)
    reg = _registry()
    accumulates = "[temperature]" not in src.dimensionality  # never degree-days
    if accumulates and src.dimensionality / reg.second.dimensionality == dst.dimensionality:
        seconds, how = accumulation_period(da, period, bounds, step=step)
        scale, _ = _affine(reg.Quantity(src.magnitude, src.units / reg.second), dst)
        out = _apply(da, scale / seconds, 0.0)
        attrs = rate_attrs(da, how, seconds) | {"units": spell(dst)}
        return with_attrs(out.rename(da.name), attrs)
    hint = (
        ": a rate becomes an amount by a sum over time (resample with stat='sum')"
        if dst.dimensionality / reg.second.dimensionality == src.dimensionality
        else ": give units of the same kind"
    )
    raise InputError(
        f"{step}: cannot convert {da.name or 'the data'!s} from {da.attrs['units']!r} "
        f"({src.dimensionality}) to {to!r} ({dst.dimensionality}){hint}",
        param="to",
    )


@step_by_step
def convert_units(
    da: xr.DataArray,
    *,
    to: str,
    period: str | None = None,
    bounds: xr.DataArray | None = None,
) -> xr.DataArray:
    """Values in other units, lazily: ``K`` to ``degC``, ``m`` to ``mm``, ``m s-1`` to
    ``km h-1``, and accumulations to rates (``m`` per hour to ``mm day-1``): CDO
    ``setunit`` with ``subc`` or ``mulc``.

    Parameters
    ----------
    da : DataArray
        Data with a ``units`` attribute that pint reads (UDUNITS spellings).
    to : str
        The units wanted, in UDUNITS or pint spelling (``degC``, ``mm/day``, ``km h-1``).
        The result's ``units`` spell them as UDUNITS and CDO print them (``mm day-1``).
    period : str, optional
        Accumulations only: the time each value accumulates over (``"1h"``, ``"1D"``,
        ``"3 hours"``), when the data do not say (see Notes).
    bounds : DataArray, optional
        Accumulations only: the time bounds of ``da`` (the dataset's ``time_bnds``), whose
        widths are the periods.

    Returns
    -------
    DataArray
        The converted values, Dask-backed when ``da`` is. The name, ``standard_name``,
        ``long_name`` and ``cell_methods`` stay (a temperature in degC is still the same
        quantity); temperatures get ``units_metadata`` (CF 1.11) saying whether they are
        values on a scale or differences (:func:`is_difference`), so that the offset is
        applied to the former only: 300 K is 26.85 degC, an anomaly of 1 K is one of 1 degC.

    Raises
    ------
    InputError
        Units pint cannot read, or of different kinds (``K`` to ``mm``); an accumulation
        whose period cannot be known.

    Notes
    -----
    CDO: ``-setunit,degC -subc,273.15`` (``addc`` back), ``-setunit,mm -mulc,1000`` and in
    general ``-setunit,TO -mulc,A -addc,B``; an hourly accumulation to ``mm day-1`` is
    ``-mulc,24000``; monthly totals (``monsum``) to ``mm day-1`` equal ``monmean`` of the
    daily totals.

    An *accumulation* is converted to a rate when ``to`` is the data's units per time: the
    values are divided by the time each covers, taken from (in this order) ``period``;
    ``bounds``; a last time entry ``sum`` in ``cell_methods`` (daily totals: the spacing of
    the time labels, each month's length for monthly totals); a name or long_name
    ``..._<N>hour_Accumulation`` (ERA5 in the era5-pds layout). CDO's ``daysum`` writes
    bounds from the first to the last sample (23 h for a day of hourly values): give no
    ``bounds`` for its totals, their ``time: sum`` and spacing say 24 h. The rate is the
    mean over that time: ``cell_methods`` says ``time: mean`` where it said ``time: sum``.

    Examples
    --------
    >>> import xarray as xr
    >>> da = xr.DataArray([273.15, 283.15], dims="x", attrs={"units": "K"})
    >>> c = convert_units(da, to="degC")
    >>> c.values.round(6).tolist(), c.attrs["units"]
    ([0.0, 10.0], 'degC')
    """
    check_dataarray(da, "convert_units")
    return convert(da, to, step="convert_units", period=period, bounds=bounds)
