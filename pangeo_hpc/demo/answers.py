"""Known answers of the demo data, computed from its formulas, never from its files.

Recipes are tested against these; the tests of the demo check these against the files.
Every function takes the spec the data were made with (``None``: the config's) and
resolves it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pangeo_hpc.demo import precip
from pangeo_hpc.demo.spec import DemoSpec
from pangeo_hpc.demo.sst import Fields, time_factors
from pangeo_hpc.demo.t2m import T2mFields
from pangeo_hpc.demo.wind import WindFields
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.periods import months

#: the methods :func:`expected_precip_percentile` takes (NumPy's ``percentile`` methods)
PERCENTILE_METHODS = (
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
    "interpolated_inverted_cdf",
    "hazen",
    "weibull",
    "linear",
    "median_unbiased",
    "normal_unbiased",
    "lower",
    "higher",
    "midpoint",
    "nearest",
)


def _resolved(spec: DemoSpec | None) -> DemoSpec:
    return (spec or DemoSpec()).resolved()


def expected(
    spec: DemoSpec | None,
    times: np.ndarray,
    *,
    box: tuple[tuple[float, float], tuple[float, float]] | None = None,
) -> dict[str, Any]:
    """Known answers of the SST: the global-mean trend, and the signal averaged over a box.

    Parameters
    ----------
    spec : DemoSpec
        The spec of the data.
    times : array of datetime64
        When to give the box's signal.
    box : ((south, north), (west, east)), optional
        Latitudes and longitudes (degrees east, 0 to 360) of a box; the grid points on its
        edges count. Without it, only the trend is given.

    Returns
    -------
    dict
        ``trend_K_per_decade``; with ``box``, also ``box_signal_K``: the ocean-area mean
        (cos-latitude weights) over the box of the ENSO-like mode and the warming at
        ``times``, without noise and seasonal cycle.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.demo import DemoSpec, expected
    >>> times = np.arange("2000-01", "2002-01", dtype="datetime64[M]").astype("datetime64[ns]")
    >>> answer = expected(DemoSpec(resolution=2.0), times)  # doctest: +SKIP
    """
    spec = _resolved(spec)
    out: dict[str, Any] = {"trend_K_per_decade": float(spec.trend)}  # type: ignore[arg-type]
    if box is None:
        return out
    f = Fields(spec)
    lat, lon = f.lat.astype("f8"), f.lon.astype("f8")
    (south, north), (west, east) = box
    where = np.ix_((lat >= south) & (lat <= north), (lon >= west) & (lon <= east))
    w = (np.cos(np.deg2rad(lat))[:, None] * ~f.land)[where]
    if w.sum() == 0:
        raise InputError(f"the box {box!r} holds no ocean point of the demo grid")
    enso_means = [(m[where] * w).sum() / w.sum() for m in f.enso_maps]
    trend_mean = (f.trend_map[where] * w).sum() / w.sum()
    _, decades, enso = time_factors(times, spec)
    out["box_signal_K"] = enso @ np.array(enso_means) + decades * trend_mean
    return out


def ocean_mask(spec: DemoSpec | None = None) -> np.ndarray:
    """The SST's NaN mask turned round: True (lat, lon) where the demo SST is valid at some
    time of the year, False over land and year-round sea ice (``Fields.ocean``).

    Parameters
    ----------
    spec : DemoSpec, optional
            The generator's settings; None: a spec of the ``pangeo-hpc.demo`` config.

    Returns
    -------
    numpy.ndarray
        Booleans, (lat, lon).

    Examples
    --------
    >>> from pangeo_hpc.demo import DemoSpec, ocean_mask
    >>> mask = ocean_mask(DemoSpec(resolution=2.0))
    >>> mask.shape, mask.dtype.name, bool(mask.any() and not mask.all())
    ((91, 180), 'bool', True)
    """
    return Fields(_resolved(spec)).ocean()


def expected_t2m(spec: DemoSpec | None, times: np.ndarray) -> np.ndarray:
    """The noise-free 2 m temperature (K, float32, (time, lat, lon)) at ``times``
    (datetime64): the data themselves when the spec's ``noise`` is 0.

    Parameters
    ----------
    spec : DemoSpec, optional
            The generator's settings; None: a spec of the ``pangeo-hpc.demo`` config.
    times : numpy.ndarray
        The times, datetime64.

    Returns
    -------
    numpy.ndarray
        The temperature, (time, lat, lon), float32 K.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.demo import DemoSpec, expected_t2m
    >>> times = np.array(["2000-01-01T00", "2000-07-01T00"], dtype="datetime64[ns]")
    >>> expected_t2m(DemoSpec(resolution=2.0), times).shape
    (2, 91, 180)
    """
    spec = _resolved(spec)
    return T2mFields(spec).t2m(np.asarray(times, dtype="datetime64[h]"), None)


def expected_t2m_trends(spec: DemoSpec | None = None) -> dict[str, Any]:
    """The 2 m temperature's warming in K/decade.

    Parameters
    ----------
    spec : DemoSpec, optional
            The generator's settings; None: a spec of the ``pangeo-hpc.demo`` config.

    Returns
    -------
    dict
        ``land`` and ``ocean``: the area means (cos-latitude weights) of the warming over
        land and over the ocean of :func:`ocean_mask`, exactly the spec's
        ``t2m_trend_land`` and ``t2m_trend_ocean``; ``map``: the warming of each cell
        (lat, lon).

    Examples
    --------
    >>> from pangeo_hpc.demo import DemoSpec, expected_t2m_trends
    >>> trends = expected_t2m_trends(DemoSpec(t2m_trend_land=0.35, t2m_trend_ocean=0.15))
    >>> trends["land"], trends["ocean"]
    (0.35, 0.15)
    """
    spec = _resolved(spec)
    f = T2mFields(spec)
    out: dict[str, Any] = {
        name: float((f.trend_map * w).sum() / w.sum())
        for name, (_, w) in zip(("land", "ocean"), f.domains, strict=True)
    }
    out["map"] = f.trend_map
    return out


def expected_t2m_area_means(spec: DemoSpec | None, times: np.ndarray) -> dict[str, np.ndarray]:
    """The area means (K, cos-latitude weights) of the 2 m temperature over land and over
    the ocean of :func:`ocean_mask` at ``times``: exact, whatever the noise (``land`` and
    ``ocean``, one value per time).

    Parameters
    ----------
    spec : DemoSpec, optional
            The generator's settings; None: a spec of the ``pangeo-hpc.demo`` config.
    times : numpy.ndarray
        The times, datetime64.

    Returns
    -------
    dict of str to numpy.ndarray
        ``land`` and ``ocean``: one mean per time, in K.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.demo import DemoSpec, expected_t2m_area_means
    >>> times = np.array(["2000-01-01T00", "2000-07-01T00"], dtype="datetime64[ns]")
    >>> means = expected_t2m_area_means(DemoSpec(resolution=2.0), times)
    >>> sorted(means), means["land"].shape
    (['land', 'ocean'], (2,))
    """
    spec = _resolved(spec)
    return T2mFields(spec).area_means(np.asarray(times, dtype="datetime64[h]"))


def days_between(start: Any, end: Any) -> np.ndarray:
    """Every day (datetime64[D]) from ``start`` to ``end``, both included; a month
    (``"2019-12"``) as ``end`` means its last day.

    Parameters
    ----------
    start, end : str or numpy.datetime64
        The first and last day (or month).

    Returns
    -------
    numpy.ndarray
        The days, datetime64[D].

    Examples
    --------
    >>> from pangeo_hpc.demo import days_between
    >>> days = days_between("2019-12-30", "2020-01")
    >>> str(days[0]), str(days[-1]), len(days)
    ('2019-12-30', '2020-01-31', 33)
    """
    s, e = np.datetime64(start), np.datetime64(end)
    if np.datetime_data(e.dtype)[0] in ("Y", "M"):
        e = (e + 1).astype("datetime64[D]") - 1
    s, e = s.astype("datetime64[D]"), e.astype("datetime64[D]")
    if e < s:
        raise InputError(f"the days {start!r} to {end!r} are none: give end >= start")
    return np.arange(s, e + 1)


def expected_daily_precip(spec: DemoSpec | None, days: np.ndarray) -> np.ndarray:
    """Daily totals (m, (day, lat, lon)) of the precipitation on ``days`` (datetime64[D]):
    ``A(lat, lon) * q(day)``, the sum of the 24 hours ending at 01:00 ... 24:00 of each.

    CDO gives them as ``cdo daysum -shifttime,-1hour -mergetime FILES``; a plain
    ``daysum`` gives each day's 00:00 value to the day it is stamped with, one hour late.

    Parameters
    ----------
    spec : DemoSpec, optional
            The generator's settings; None: a spec of the ``pangeo-hpc.demo`` config.
    days : numpy.ndarray
        The days, datetime64[D].

    Returns
    -------
    numpy.ndarray
        The totals, (day, lat, lon), in m.

    Examples
    --------
    >>> from pangeo_hpc.demo import DemoSpec, days_between, expected_daily_precip
    >>> days = days_between("2000-01-01", "2000-01-10")
    >>> totals = expected_daily_precip(DemoSpec(resolution=2.0), days)
    >>> totals.shape
    (10, 91, 180)
    """
    spec = _resolved(spec)
    f = Fields(spec)
    q = precip.daily_factors(spec, np.asarray(days, dtype="datetime64[D]"))
    return q[:, None, None] * precip.amplitude(f.lat, f.lon)[None]


def expected_precip_percentile(
    spec: DemoSpec | None,
    start: Any,
    end: Any,
    q: float = 95.0,
    method: str = "linear",
) -> np.ndarray:
    """The per-cell ``q``-th percentile (m, (lat, lon)) of the daily totals from day
    ``start`` to day ``end`` (both included; see :func:`days_between`).

    It is ``A(lat, lon) * numpy.percentile(q(days), q, method=method)``: every method of
    :data:`PERCENTILE_METHODS` is order statistics or a linear interpolation between
    them, so it scales with ``A >= 0``. ``"linear"`` is NumPy's default (and xarray's
    ``quantile``); CDO's ``timpctl`` takes its default ``nrank`` rule unless given
    ``--percentile linear`` (or another NumPy method), and bins the values in
    ``CDO_PCTL_NBINS`` (101) bins: with 10000 it agrees to 1e-5.

    Parameters
    ----------
    spec : DemoSpec, optional
            The generator's settings; None: a spec of the ``pangeo-hpc.demo`` config.
    start, end : str or numpy.datetime64
        The first and last day (a month as ``end``: its last day).
    q : float
        The percentile, 0 to 100.
    method : str
        A method of :data:`PERCENTILE_METHODS` (NumPy's names and CDO's).

    Returns
    -------
    numpy.ndarray
        The percentile, (lat, lon), in m.

    Examples
    --------
    >>> from pangeo_hpc.demo import DemoSpec, expected_precip_percentile
    >>> expected_precip_percentile(DemoSpec(resolution=2.0), "2000-01-01", "2000-03-31").shape
    (91, 180)
    """
    if method not in PERCENTILE_METHODS:
        raise InputError(
            f"expected_precip_percentile: method {method!r} unknown: give one of "
            f"{', '.join(PERCENTILE_METHODS)}",
            param="method",
        )
    if not 0 <= float(q) <= 100:
        raise InputError(f"expected_precip_percentile: q={q!r} must be 0 to 100", param="q")
    spec = _resolved(spec)
    f = Fields(spec)
    factors = precip.daily_factors(spec, days_between(start, end))
    return precip.amplitude(f.lat, f.lon) * np.percentile(factors, float(q), method=method)


def expected_wind_speed(spec: DemoSpec | None, times: np.ndarray) -> np.ndarray:
    """The 10 m wind speed ``sqrt(u**2 + v**2)`` (m s-1, (time, lat, lon)) at ``times``.

    Parameters
    ----------
    spec : DemoSpec, optional
            The generator's settings; None: a spec of the ``pangeo-hpc.demo`` config.
    times : numpy.ndarray
        The times, datetime64.

    Returns
    -------
    numpy.ndarray
        The speed, (time, lat, lon), in m s-1.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.demo import DemoSpec, expected_wind_speed
    >>> times = np.array(["2000-01-01T00", "2000-01-01T06"], dtype="datetime64[ns]")
    >>> speed = expected_wind_speed(DemoSpec(resolution=2.0), times)
    >>> speed.shape, bool((speed >= 0).all())
    ((2, 91, 180), True)
    """
    spec = _resolved(spec)
    return WindFields(spec).speed(np.asarray(times, dtype="datetime64[h]"))


def expected_mean_wind_speed(spec: DemoSpec | None, start: str, end: str) -> np.ndarray:
    """The time mean (m s-1, (lat, lon)) of the wind speed over every time step of the
    months ``start`` to ``end`` at the spec's frequency.

    Parameters
    ----------
    spec : DemoSpec, optional
            The generator's settings; None: a spec of the ``pangeo-hpc.demo`` config.
    start, end : str
        The first and last month, ``"2000-01"``.

    Returns
    -------
    numpy.ndarray
        The mean speed, (lat, lon), in m s-1.

    Examples
    --------
    >>> from pangeo_hpc.demo import DemoSpec, expected_mean_wind_speed
    >>> expected_mean_wind_speed(DemoSpec(resolution=2.0), "2000-01", "2000-02").shape
    (91, 180)
    """
    spec = _resolved(spec)
    f = Fields(spec)
    times = np.concatenate([f.times(m) for m in months(start, end)])
    seas, _, _ = time_factors(times, spec)
    wind = WindFields(spec, f)
    return wind.s0 + seas.mean() * wind.s1
