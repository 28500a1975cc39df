"""The synthetic 10 m wind: a speed known exactly, a direction that wanders.

``eastward_wind_at_10_metres`` and ``northward_wind_at_10_metres`` (time0, lat, lon) are
float32 m s-1, ``u = S cos(theta)`` and ``v = S sin(theta)``:

* the speed ``S = S0(lat, lon) + S1(lat, lon) * seasonal(t) >= 0`` (:func:`speed`): trade
  winds and stronger mid-latitude westerlies, weaker over land, and a seasonal term (the
  SST's phase, zero-mean over whole years) stronger in each hemisphere's winter;
* the direction ``theta`` (radians anticlockwise from east): easterly in the tropics and
  polar latitudes, westerly in between, turned towards the equator in the trades, plus a
  seasonal swing and independent Gaussian noise of :data:`DIRECTION_NOISE` radians.

So the wind speed ``sqrt(u**2 + v**2)`` is known exactly
(:func:`~pangeo_hpc.demo.answers.expected_wind_speed`), and the time mean of ``u`` or
``v`` alone is not the mean speed. Both files draw the same ``theta`` (same seed and stream).
"""

from __future__ import annotations

import numpy as np

from pangeo_hpc.demo.spec import U10, V10, DemoSpec
from pangeo_hpc.demo.sst import EPOCH, Fields, time_factors
from pangeo_hpc.recipes.years import DAYS_PER_YEAR

#: standard deviation of the random part of the direction (radians)
DIRECTION_NOISE = 0.6
#: a stream of random numbers of its own: the SST's are seeded (seed, year, month, step)
_STREAM = 1010


class WindFields:
    """The time-independent maps of the synthetic 10 m wind on one grid.

    Parameters
    ----------
    spec : DemoSpec
        The demo's settings (grid, seed).
    sst : Fields, optional
        The SST's maps on the same grid, if already made (they are made otherwise).

    Examples
    --------
    >>> from pangeo_hpc.demo.spec import DemoSpec
    >>> from pangeo_hpc.demo.wind import WindFields
    >>> fields = WindFields(DemoSpec(resolution=10.0).resolved())
    >>> bool((fields.s0 > 0).all())  # the mean speed, m s-1
    True
    """

    def __init__(self, spec: DemoSpec, sst: Fields | None = None) -> None:
        sst = sst or Fields(spec)
        self.spec = spec
        self.lat, self.lon = sst.lat, sst.lon
        la = np.deg2rad(self.lat.astype("f8"))[:, None]
        lo = np.deg2rad(self.lon.astype("f8"))[None, :]
        westerlies = 5.0 * np.exp(-(((np.abs(np.rad2deg(la)) - 50.0) / 12.0) ** 2))
        trades = 3.5 * np.exp(-(((np.abs(np.rad2deg(la)) - 15.0) / 10.0) ** 2))
        land = np.where(sst.land, 0.6, 1.0)
        self.s0 = (2.0 + westerlies + trades + 0.5 * np.cos(2 * lo)) * land
        # winter (seasonal < 0 in the north) is windier: |s1| <= 0.4 s0 keeps S >= 0.6 s0
        self.s1 = -0.4 * self.s0 * np.sin(la)
        # easterly (pi) at the equator and the poles, westerly (0) at 30 to 60 degrees
        band = 0.5 * np.pi * (1 + np.cos(np.pi * np.minimum(np.abs(np.rad2deg(la)), 60.0) / 30.0))
        toward_equator = -0.4 * np.sign(la) * np.exp(-((np.rad2deg(la) / 20.0) ** 2))
        self.theta0 = band - toward_equator + 0 * lo

    def speed(self, times: np.ndarray) -> np.ndarray:
        """The wind speed (m s-1, float64) at ``times`` (datetime64[h]).

        Parameters
        ----------
        times : np.ndarray
            Times (datetime64[h]).

        Returns
        -------
        np.ndarray
            Shape ``(time, lat, lon)``.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.demo.spec import DemoSpec
        >>> from pangeo_hpc.demo.wind import WindFields
        >>> fields = WindFields(DemoSpec(resolution=10.0).resolved())
        >>> speed = fields.speed(np.array(["2000-01-01T00"], dtype="datetime64[h]"))
        >>> speed.shape, bool((speed > 0).all())
        ((1, 19, 36), True)
        """
        seas, _, _ = time_factors(times, self.spec)
        return self.s0 + seas[:, None, None] * self.s1

    def direction(self, times: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """``theta`` (radians from east) at ``times``; ``rng=None`` gives it noise-free.

        Parameters
        ----------
        times : np.ndarray
            Times (datetime64[h]).
        rng : np.random.Generator or None
            The random numbers of the noise; ``None``: noise-free.

        Returns
        -------
        np.ndarray
            Shape ``(time, lat, lon)``.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.demo.spec import DemoSpec
        >>> from pangeo_hpc.demo.wind import WindFields
        >>> fields = WindFields(DemoSpec(resolution=10.0).resolved())
        >>> theta = fields.direction(np.array(["2000-01-01T00"], dtype="datetime64[h]"), rng=None)
        >>> theta.shape  # radians from east, noise-free
        (1, 19, 36)
        """
        phase = ((times - EPOCH).astype("f8") / 24.0) / DAYS_PER_YEAR
        swing = 0.5 * np.sin(2 * np.pi * phase[:, None, None] + np.deg2rad(self.lon)[None, None])
        theta = self.theta0 + swing
        if rng is not None:
            theta = theta + DIRECTION_NOISE * rng.standard_normal(theta.shape)
        return theta

    def component(
        self, variable: str, times: np.ndarray, rng: np.random.Generator | None
    ) -> np.ndarray:
        """``u`` (:data:`U10`) or ``v`` (:data:`V10`) in m s-1, float32, at ``times``.

        Parameters
        ----------
        variable : str
            :data:`U10` or :data:`V10`.
        times : np.ndarray
            Times (datetime64[h]).
        rng : np.random.Generator or None
            The random numbers of the noise; ``None``: noise-free.

        Returns
        -------
        np.ndarray
            Shape ``(time, lat, lon)``.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.demo.spec import DemoSpec, U10, V10
        >>> from pangeo_hpc.demo.wind import WindFields
        >>> fields = WindFields(DemoSpec(resolution=10.0).resolved())
        >>> t = np.array(["2000-01-01T00"], dtype="datetime64[h]")
        >>> u, v = (fields.component(name, t, rng=None) for name in (U10, V10))
        >>> bool(np.allclose(np.hypot(u, v), fields.speed(t), rtol=1e-5))
        True
        """
        turn = np.cos if variable == U10 else np.sin
        assert variable in (U10, V10), variable
        return (self.speed(times) * turn(self.direction(times, rng))).astype("f4")


def rng_for(spec: DemoSpec, year: int, month: int, step: int) -> np.random.Generator:
    """The random numbers of the direction's noise, the same for ``u`` and ``v``.

    Parameters
    ----------
    spec : DemoSpec
        The demo's settings (its seed).
    year : int
        The time step's year.
    month : int
        The time step's month.
    step : int
        The time step within the month.

    Returns
    -------
    np.random.Generator
        A generator seeded from those.

    Examples
    --------
    >>> from pangeo_hpc.demo.spec import DemoSpec
    >>> from pangeo_hpc.demo.wind import rng_for
    >>> spec = DemoSpec(seed=1)
    >>> float(rng_for(spec, 2000, 1, 0).random()) == float(rng_for(spec, 2000, 1, 0).random())
    True
    """
    return np.random.default_rng([int(spec.seed), year, month, step, _STREAM])  # type: ignore[arg-type]
