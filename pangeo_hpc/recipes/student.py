"""Student's t distribution, for the p-values of trends, without SciPy (not a dependency).

The two-sided tail probability of ``t`` with ``dof`` degrees of freedom is the regularized
incomplete beta function ``I_x(dof/2, 1/2)`` at ``x = dof / (dof + t²)`` (Abramowitz and
Stegun 26.7.1). ``I_x`` comes from its continued fraction evaluated with the modified
Lentz method (Numerical Recipes, 3rd ed., 6.4), on whichever side of the mean it converges
fast. Checked against ``scipy.stats.t.sf`` to 1e-12 in tests/recipes/test_recipes_stats.py.
"""

from __future__ import annotations

import math

import numpy as np

from pangeo_hpc.jit import njit

_EPS = 1e-15
_TINY = 1e-300


@njit
def _beta_fraction(a: float, b: float, x: float) -> float:  # pragma: no cover - jitted
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


@njit
def _beta_regularized(a: float, b: float, x: float) -> float:  # pragma: no cover - jitted
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


@njit
def _two_sided(t: np.ndarray, dof: np.ndarray) -> np.ndarray:  # pragma: no cover - jitted
    out = np.empty(t.size)
    for i in range(t.size):
        ti, ni = t[i], dof[i]
        if ti != ti or ni != ni or ni <= 0:
            out[i] = np.nan
        elif math.isinf(ti):
            out[i] = 0.0
        else:
            out[i] = _beta_regularized(0.5 * ni, 0.5, ni / (ni + ti * ti))
    return out


def t_two_sided_p(t: np.ndarray, dof: np.ndarray) -> np.ndarray:
    """P(|T| >= |t|) for Student's t with ``dof`` degrees of freedom, elementwise (float64;
    NaN where ``t`` or ``dof`` is NaN or ``dof <= 0``; 0 for infinite ``t``).

    Parameters
    ----------
    t : np.ndarray
        t values.
    dof : np.ndarray
        Degrees of freedom.

    Returns
    -------
    np.ndarray
        p values.

    Examples
    --------
    >>> t_two_sided_p(np.array([0.0, 2.0, np.inf]), np.array([10.0, 10.0, 10.0]))
    array([1.        , 0.07338803, 0.        ])
    """
    t, dof = np.broadcast_arrays(np.asarray(t, dtype="f8"), np.asarray(dof, dtype="f8"))
    flat = _two_sided(np.ascontiguousarray(t).ravel(), np.ascontiguousarray(dof).ravel())
    return flat.reshape(t.shape)
