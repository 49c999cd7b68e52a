"""Exact privacy profile of one subsampled Gaussian step (a *lower* bound for any composition).

A step using the differing record with probability ``q`` (shift ``Delta``) and adding ``N(0, s^2)``
gives ``P = (1 - q) N(0, s^2) + q N(Delta, s^2)`` vs ``Q = N(0, s^2)`` along the difference: the Poisson
subsampled Gaussian (Abadi et al. 2016; Mironov et al. 2019, arXiv 1908.10530), also one index out of
``n`` (``q = 1/n``) when the other records share a gradient. The privacy loss
``L(x) = log(1 - q + q exp((2 x Delta - Delta^2)/(2 s^2)))`` increases in x, so
``delta(epsilon) = P[L > epsilon] - e^epsilon Q[L > epsilon]`` is two normal tails; the order ``Q`` vs
``P`` matters only for ``epsilon < -log(1 - q)``. Releasing more steps only increases epsilon, so if
``delta_step(epsilon) > delta`` no algorithm releasing this step is ``(epsilon, delta)``-DP (Hong et al.
2022 Sec. 4.3's subsampling rule, Wu et al. Thm 4.1)."""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

__all__ = ["step_delta", "step_epsilon"]


def _log_sf(z: float) -> float:
    """log P[N(0,1) > z], accurate in the far tail."""
    return float(special.log_ndtr(-z))


def step_delta(*, epsilon: float, sampling_rate: float, noise_multiplier: float) -> float:
    """``max(delta_{P||Q}(epsilon), delta_{Q||P}(epsilon))`` of one subsampled Gaussian step,
    with ``noise_multiplier = s / Delta`` (noise std in units of the sensitivity).

    >>> round(step_delta(epsilon=1.0, sampling_rate=1.0, noise_multiplier=1.0), 6)   # plain Gaussian
    0.126937
    >>> step_delta(epsilon=1.0, sampling_rate=0.01, noise_multiplier=1.0) < 1e-3
    True
    """
    eps = float(epsilon)
    q = float(sampling_rate)
    z = float(noise_multiplier)
    if not (math.isfinite(eps) and eps >= 0):
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    if not (0 < q <= 1):
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate!r}")
    if not (math.isfinite(z) and z > 0):
        raise ValueError(f"noise_multiplier must be finite and > 0, got {noise_multiplier!r}")
    # units: Delta = 1, s = z. L > eps  <=>  x > x*, x* = z^2 log((e^eps - 1 + q)/q) + 1/2
    xs = z * z * (eps + math.log1p(-(1 - q) * math.exp(-eps)) - math.log(q)) + 0.5  # log(e^eps - 1 + q), no overflow
    lp = np.logaddexp(math.log1p(-q) + _log_sf(xs / z) if q < 1 else -np.inf, math.log(q) + _log_sf((xs - 1) / z))
    lq = eps + _log_sf(xs / z)
    d1 = math.exp(lp) * -math.expm1(min(lq - lp, 0.0)) if lp > lq else 0.0
    d2 = 0.0
    if q < 1 and eps < -math.log1p(-q):  # Q vs P: L < -eps <=> x < x2
        x2 = z * z * (math.log(math.exp(-eps) - (1 - q)) - math.log(q)) + 0.5
        lq2 = _log_sf(-x2 / z)  # Q[x < x2]
        lp2 = np.logaddexp(math.log1p(-q) + _log_sf(-x2 / z), math.log(q) + _log_sf(-(x2 - 1) / z))
        if lq2 > eps + lp2:
            d2 = math.exp(lq2) * -math.expm1(eps + lp2 - lq2)
    return float(max(d1, d2))


def step_epsilon(*, delta: float, sampling_rate: float, noise_multiplier: float) -> float:
    """Smallest epsilon with :func:`step_delta` ``<= delta`` (bisection in epsilon).

    >>> round(step_epsilon(delta=1e-5, sampling_rate=1.0, noise_multiplier=1.0), 3)   # Balle & Wang 2018 analytic Gaussian
    4.377
    """
    delta = float(delta)
    if not (0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    f = lambda e: step_delta(epsilon=e, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier) - delta  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
        if hi > 1e8:
            return math.inf
    return float(optimize.brentq(f, 0.0, hi, xtol=1e-12, rtol=1e-10))
