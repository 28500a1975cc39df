"""The synthetic 2 m temperature: land and ocean warm at two known rates.

``air_temperature_at_2_metres(time0, lat, lon)`` is float32 kelvin with no NaN, the sum of:

* a base map, 300 K at the equator and 250 K at the poles, colder over polar land;
* a seasonal cycle (the SST's phase, :func:`~pangeo_hpc.demo.sst.time_factors`), opposite
  in the two hemispheres and about three times stronger over land;
* a diurnal cycle peaking near 15:00 local solar time, a daily range of 6 K over land and
  0.5 K over the ocean at the equator, none at the poles: a cosine of the hour, so it is
  zero-mean over the 24 hours of a day (in daily data, sampled at 00 UTC, a fixed map);
* a linear warming, ``t2m_trend_land`` K/decade over land and ``t2m_trend_ocean`` over the
  ocean, with a polar-amplified pattern whose mean over each of the two is zero;
* Gaussian noise of standard deviation ``noise``.

"Ocean" is the SST's own NaN mask (:meth:`~pangeo_hpc.demo.sst.Fields.ocean`): the cells
where the demo SST is valid at some time of the year; "land" is the rest (land and
year-round sea ice). At every time step the seasonal, diurnal and noise terms have zero
area mean (cos-latitude weights) over land and over ocean separately (the seasonal map by
construction, the diurnal cycle less its area mean in proportion to its amplitude, the
noise less its area mean), so the area mean of
the data over either is exactly its base mean plus its warming
(:func:`~pangeo_hpc.demo.answers.expected_t2m_area_means`): a recipe that masks t2m with the
SST's NaN mask gets the two trends to float32 rounding.
"""

from __future__ import annotations

import numpy as np

from pangeo_hpc.demo.spec import DemoSpec
from pangeo_hpc.demo.sst import EPOCH, Fields, time_factors, zero_mean

#: local solar hour of the diurnal maximum
DIURNAL_PEAK = 15.0


class T2mFields:
    """The time-independent maps of the synthetic 2 m temperature on one grid.

    Parameters
    ----------
    spec : DemoSpec
        The demo's settings (grid, seed).
    sst : Fields, optional
        The SST's maps on the same grid, if already made (they are made otherwise).

    Examples
    --------
    >>> from pangeo_hpc.demo.spec import DemoSpec
    >>> from pangeo_hpc.demo.t2m import T2mFields
    >>> fields = T2mFields(DemoSpec(resolution=10.0).resolved())
    >>> fields.base.shape
    (19, 36)
    """

    def __init__(self, spec: DemoSpec, sst: Fields | None = None) -> None:
        sst = sst or Fields(spec)
        self.spec = spec
        self.lat, self.lon = sst.lat, sst.lon
        la = np.deg2rad(self.lat.astype("f8"))[:, None]
        lo = self.lon.astype("f8")[None, :]
        self.ocean = sst.ocean()
        land = ~self.ocean
        w = np.cos(la) + 0 * lo
        #: (mask, cos-latitude weights on it) of land, then ocean
        self.domains = ((land, w * land), (self.ocean, w * self.ocean))
        self.base = 250.0 + 50.0 * np.cos(la) ** 2 - 8.0 * land * np.sin(la) ** 4
        self.seasonal = self.remove_domain_means((np.sin(la) * (4.0 + 11.0 * land))[None])[0]
        self.diurnal_amplitude = (0.25 + 2.75 * land) * np.cos(la)  # half the daily range
        pattern = np.sin(la) ** 2 + 0 * lo
        trend_land, trend_ocean = float(spec.t2m_trend_land), float(spec.t2m_trend_ocean)  # type: ignore[arg-type]
        self.trend_map = np.where(
            land,
            trend_land * (1 + 0.5 * zero_mean(pattern, w * land)),
            trend_ocean * (1 + 0.5 * zero_mean(pattern, w * self.ocean)),
        )

    def remove_domain_means(self, x: np.ndarray, profile: np.ndarray | None = None) -> np.ndarray:
        """``x`` (time, lat, lon) less its area mean over land and over ocean, at each time.

        The mean is taken off in proportion to ``profile`` (lat, lon; default uniform), so
        that a cell where ``profile`` is 0 keeps its value.

        Parameters
        ----------
        x : np.ndarray
            Fields, ``(time, lat, lon)``.
        profile : np.ndarray, optional
            Weights of the removal, ``(lat, lon)``; ``None``: uniform.

        Returns
        -------
        np.ndarray
            The fields less their means.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.demo.spec import DemoSpec
        >>> from pangeo_hpc.demo.t2m import T2mFields
        >>> fields = T2mFields(DemoSpec(resolution=10.0).resolved())
        >>> x = fields.remove_domain_means(np.ones((1, *fields.base.shape)))
        >>> [abs(float((x[0] * w).sum() / w.sum())) < 1e-9 for _, w in fields.domains]  # land, sea
        [True, True]
        """
        x = np.array(x, dtype="f8")
        shape = np.ones(x.shape[1:]) if profile is None else profile
        for mask, w in self.domains:
            mean = np.tensordot(x, w, axes=([1, 2], [0, 1])) / (shape * w).sum()
            x -= mean[:, None, None] * (shape * mask)
        return x

    def diurnal(self, times: np.ndarray) -> np.ndarray:
        """The diurnal term (K) at ``times`` (datetime64[h]): zero area mean over land and
        over ocean at every time, zero mean over the 24 hours of a day in every cell.

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
        >>> from pangeo_hpc.demo.t2m import T2mFields
        >>> fields = T2mFields(DemoSpec(resolution=10.0).resolved())
        >>> day = np.arange("2000-01-01T00", "2000-01-02T00", dtype="datetime64[h]")
        >>> float(abs(fields.diurnal(day).mean(axis=0)).max()) < 1e-9  # zero daily mean
        True
        """
        hours, which = np.unique((times - EPOCH).astype("i8") % 24, return_inverse=True)
        local = hours.astype("f8")[:, None, None] + self.lon.astype("f8")[None, None, :] / 15.0
        cycle = self.diurnal_amplitude * np.cos(2 * np.pi * (local - DIURNAL_PEAK) / 24.0)
        return self.remove_domain_means(cycle, self.diurnal_amplitude)[which.ravel()]

    def t2m(self, times: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """2 m temperature (K, float32) at ``times``; ``rng=None`` gives it noise-free.

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
        >>> from pangeo_hpc.demo.t2m import T2mFields
        >>> fields = T2mFields(DemoSpec(resolution=10.0).resolved())
        >>> t2m = fields.t2m(np.array(["2000-07-01T12"], dtype="datetime64[h]"), rng=None)
        >>> t2m.shape, t2m.dtype
        ((1, 19, 36), dtype('float32'))
        """
        seas, decades, _ = time_factors(times, self.spec)
        out = self.base + decades[:, None, None] * self.trend_map
        out = out + seas[:, None, None] * self.seasonal + self.diurnal(times)
        if rng is not None and float(self.spec.noise) > 0:  # type: ignore[arg-type]
            noise = float(self.spec.noise) * rng.standard_normal(out.shape, dtype="f4")  # type: ignore[arg-type]
            out += self.remove_domain_means(noise)
        return out.astype("f4")

    def area_means(self, times: np.ndarray) -> dict[str, np.ndarray]:
        """The exact land- and ocean-area means (K) of :meth:`t2m` at ``times``.

        Parameters
        ----------
        times : np.ndarray
            Times (datetime64[h]).

        Returns
        -------
        dict[str, np.ndarray]
            ``land`` and ``ocean``: one value per time.

        Examples
        --------
        >>> import numpy as np
        >>> from pangeo_hpc.demo.spec import DemoSpec
        >>> from pangeo_hpc.demo.t2m import T2mFields
        >>> spec = DemoSpec(resolution=10.0, t2m_trend_land=0.3, t2m_trend_ocean=0.1).resolved()
        >>> t = np.array(["2000-01-01T00", "2010-01-01T00"], dtype="datetime64[h]")
        >>> means = T2mFields(spec).area_means(t)
        >>> (np.diff(means["land"]) / np.diff(means["ocean"])).round(3)  # the trends' ratio
        array([3.])
        """
        _, decades, _ = time_factors(times, self.spec)
        out = {}
        for name, (_, w) in zip(("land", "ocean"), self.domains, strict=True):
            base, trend = ((m * w).sum() / w.sum() for m in (self.base, self.trend_map))
            out[name] = base + decades * trend
        return out
