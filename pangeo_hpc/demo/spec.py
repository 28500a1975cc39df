"""What the demo generator makes: the variables it knows and the settings they share.

:class:`DemoSpec` holds one set of settings for every variable of a tree (grid, seed,
warming...); ``None`` fields come from the ``pangeo-hpc.demo`` config at call time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.periods import months

SST = "sea_surface_temperature"
T2M = "air_temperature_at_2_metres"
PRECIP = "precipitation_amount_1hour_Accumulation"
U10 = "eastward_wind_at_10_metres"
V10 = "northward_wind_at_10_metres"

#: every demo variable (era5-pds names) and its units, in the order they are written
VARIABLES = {SST: "K", T2M: "K", PRECIP: "m", U10: "m s-1", V10: "m s-1"}

#: fields of :class:`DemoSpec` that say what to write, not how: not part of a tree's settings
NOT_SETTINGS = ("start", "end", "variables")


def variables() -> dict[str, str]:
    """The demo variables, era5-pds name to units: ``{"sea_surface_temperature": "K", ...}``.

    Returns
    -------
    dict of str to str
        Each variable's era5-pds name and its units.

    Examples
    --------
    >>> from pangeo_hpc.demo import variables
    >>> variables()["sea_surface_temperature"]
    'K'
    """
    return dict(VARIABLES)


def variable_names(value: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``value`` as a tuple of demo variables: ``"all"``, one name, a comma list or a sequence.

    Unknown names are an :class:`InputError` listing the known ones.

    Parameters
    ----------
    value : str or tuple[str, ...] or list[str]
        ``"all"``, a name, ``"t2m,sst"`` or a sequence of names.

    Returns
    -------
    tuple[str, ...]
        The names, in the order given.

    Raises
    ------
    InputError
        If a name is not a demo variable (the message lists the known ones).

    Examples
    --------
    >>> from pangeo_hpc.demo.spec import variable_names
    >>> variable_names("precipitation_amount_1hour_Accumulation,sea_surface_temperature")
    ('sea_surface_temperature', 'precipitation_amount_1hour_Accumulation')
    >>> len(variable_names("all"))
    5
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    names = [str(n).strip() for n in items if str(n).strip()]
    if "all" in names:
        return tuple(VARIABLES)
    unknown = [n for n in names if n not in VARIABLES]
    if unknown or not names:
        raise InputError(
            f"demo variables {', '.join(unknown) or repr(value)} unknown: give 'all' or some of "
            f"{', '.join(VARIABLES)}",
            param="variables",
        )
    return tuple(n for n in VARIABLES if n in names)  # known order, no repeats


@dataclass(frozen=True)
class DemoSpec:
    """What the generator makes; ``None`` fields come from the ``pangeo-hpc.demo`` config.

    ``variables`` says which variables to write (``"all"``, a comma list or a tuple of
    :func:`variables` names; default ``demo.variables``: the SST alone); every other field
    but ``start`` and ``end`` is a setting shared by all the variables of a tree.

    Attributes
    ----------
    resolution : float, optional
        Degrees; a divisor of 180 (config ``demo.resolution``).
    frequency : {"daily", "hourly"}, optional
        The time step (precipitation is always hourly).
    start, end : str, optional
        The first and last month, ``"2000-01"``.
    seed : int, optional
        The same seed gives the same bytes.
    trend : float, optional
        SST warming, K per decade, over the ocean.
    enso_amplitude, enso_period : float, optional
        The ENSO-like mode in the Nino3.4 box: peak anomaly (K) and period (years).
    noise : float, optional
        Standard deviation of the Gaussian noise, K.
    hdf5_chunks : (int, int, int), optional
        The files' HDF5 chunk shape (time, lat, lon).
    t2m_trend_land, t2m_trend_ocean : float, optional
        2 m temperature warming over land and over the ocean, K per decade.
    variables : str or tuple of str, optional
        The variables to write, as above.

    Examples
    --------
    >>> from pangeo_hpc.demo import DemoSpec
    >>> spec = DemoSpec(resolution=2.0, start="2000-01", end="2000-12")
    >>> spec.resolution, spec.seed is None  # the seed comes from config at generation
    (2.0, True)
    """

    resolution: float | None = None
    frequency: str | None = None
    start: str | None = None
    end: str | None = None
    seed: int | None = None
    trend: float | None = None
    enso_amplitude: float | None = None
    enso_period: float | None = None
    noise: float | None = None
    hdf5_chunks: tuple[int, int, int] | None = field(default=None)
    t2m_trend_land: float | None = None
    t2m_trend_ocean: float | None = None
    variables: str | tuple[str, ...] | None = None

    def resolved(self) -> DemoSpec:
        """Fill unset fields from config and check every value (a resolved spec is kept).

        Returns
        -------
        DemoSpec
            A spec with every field set.

        Examples
        --------
        >>> from pangeo_hpc.demo.spec import DemoSpec
        >>> spec = DemoSpec(resolution=2.0).resolved()
        >>> spec.resolution, spec.frequency, spec.variables
        (2.0, 'daily', ('sea_surface_temperature',))
        >>> DemoSpec(resolution=7.0).resolved()
        Traceback (most recent call last):
            ...
        pangeo_hpc.errors.InputError: resolution 7.0 must divide 180 degrees and be at most ...
        """
        values = {k: config.get(f"demo.{k.replace('_', '-')}", v) for k, v in asdict(self).items()}
        values["start"], values["end"] = str(values["start"]), str(values["end"])
        values["hdf5_chunks"] = tuple(int(c) for c in values["hdf5_chunks"])
        values["variables"] = variable_names(values["variables"])
        spec = DemoSpec(**values)
        spec._check()
        return spec

    def settings(self) -> dict[str, Any]:
        """The settings a tree records in its manifest (JSON types).

        Returns
        -------
        dict[str, Any]
            Setting -> value.

        Examples
        --------
        >>> from pangeo_hpc.demo.spec import DemoSpec
        >>> settings = DemoSpec(resolution=2.0).resolved().settings()
        >>> settings["resolution"], "start" in settings
        (2.0, False)
        """
        out = {k: v for k, v in asdict(self).items() if k not in NOT_SETTINGS}
        out["hdf5_chunks"] = list(out["hdf5_chunks"])
        return out

    def _check(self) -> None:
        res = float(self.resolution)  # type: ignore[arg-type]
        if not (0 < res <= 10 and abs(180 / res - round(180 / res)) < 1e-9):
            raise InputError(
                f"resolution {self.resolution!r} must divide 180 degrees and be at most 10, "
                "e.g. 0.25 or 1.0"
            )
        if self.frequency not in ("daily", "hourly"):
            raise InputError(f"frequency {self.frequency!r} must be 'daily' or 'hourly'")
        if len(self.hdf5_chunks or ()) != 3 or min(self.hdf5_chunks or (0,)) < 1:
            raise InputError(f"hdf5 chunks {self.hdf5_chunks!r} must be three positive sizes")
        if float(self.noise) < 0 or float(self.enso_period) <= 0:  # type: ignore[arg-type]
            raise InputError("noise must be >= 0 and enso_period > 0")
        months(self.start, self.end)
