"""Utility bounds of private gradient descent (PGD), Hong et al. 2022 (FAccT, arXiv 2101.07413) Section 4.1.

Notation (Eq. 4-6; SPEC section 1): ``alpha = D G^2 / (2 R M N^2 (f(theta_1) - f*))``, ``kappa = M / mu >= 1``,
``gamma = 1 - 1/kappa``. With ``eta = 1/M`` the expected-risk upper bound (ERUB, normalised by
``f(theta_1) - f*``) of a schedule spending ``sum_t 1/sigma_t^2 = R`` is (Thm 4.1, Eq. 7)

    ERUB = gamma^T + R sum_t q_t sigma_t^2,   q_t = gamma^(T-t) alpha.

Powers of gamma are ``exp(T log1p(-1/kappa))`` (exact at ``kappa = 1``: ``gamma^0 = 1``), ``1 - gamma^T``
with ``expm1``. Closed forms come with brute-force minimisers over integer T."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpcompanion.core import validate
from dpcompanion.theory import schedules

__all__ = ["one_minus_sqrt_gamma", "alpha_of", "influence", "erub", "erub_uniform",
           "t_uniform_surrogate", "t_uniform", "erub_uniform_eq25", "theta_uniform", "argmin_uniform",
           "optimal_schedule", "sigma2_dynamic", "erub_dynamic", "t_dynamic", "t_dynamic_statement",
           "erub_dynamic_min", "theta_dynamic", "argmin_dynamic"]

_T_CAP = 20_000_000  # largest exhaustive search range (integers)


def _T_array(T: Any) -> np.ndarray:
    arr = np.asarray(T, dtype=float)
    if np.any(arr < 0) or not np.all(np.isfinite(arr)):
        raise ValueError(f"T must be >= 0 and finite, got {T!r}")
    return arr


def _log_gamma(kappa: float) -> float:
    """ln(gamma) = log1p(-1/kappa); -inf at kappa = 1."""
    return -math.inf if kappa == 1 else math.log1p(-1.0 / kappa)


def _gamma_pow(T: np.ndarray, lg: float) -> np.ndarray:
    """gamma^T with gamma^0 = 1 even when gamma = 0."""
    with np.errstate(invalid="ignore"):
        return np.where(T == 0, 1.0, np.exp(T * lg))


def _one_minus_gamma_pow(T: np.ndarray, lg: float) -> np.ndarray:
    """1 - gamma^T, accurate when T ln(gamma) is small."""
    with np.errstate(invalid="ignore"):
        return np.where(T == 0, 0.0, -np.expm1(T * lg) if math.isfinite(lg) else 1.0)


def one_minus_sqrt_gamma(kappa: float) -> float:
    """1 - sqrt(gamma) = (1/kappa) / (1 + sqrt(gamma)), free of cancellation (gamma = 1 - 1/kappa, Eq. 4).

    >>> round(one_minus_sqrt_gamma(4.0), 12) == round(1 - (1 - 1 / 4.0) ** 0.5, 12)
    True
    """
    g = 1.0 - 1.0 / kappa
    return (1.0 / kappa) / (1.0 + math.sqrt(g))


def _scalar(x: np.ndarray) -> Any:
    return float(x) if np.ndim(x) == 0 else x


# --- constants (Eq. 4-6) -----------------------------------------------------------------


def alpha_of(*, D: float, G: float, R: float, M: float, N: float, f_gap: float) -> float:
    """Non-private error scale ``alpha = D G^2 / (2 R M N^2 (f(theta_1) - f*))`` (the FAccT version, Eq. 4);
    ``f_gap = f(theta_1) - f*``.

    >>> alpha_of(D=10, G=1, R=0.5, M=1, N=100, f_gap=1)
    0.001
    """
    D, G, R, M, N, f_gap = (validate.positive(n, v) for n, v in (("D", D), ("G", G), ("R", R), ("M", M), ("N", N), ("f_gap", f_gap)))
    return D * G**2 / (2 * R * M * N**2 * f_gap)


# --- Theorem 4.1: any schedule -----------------------------------------------------------


def influence(*, T: int, kappa: float, alpha: float) -> np.ndarray:
    """Influence ``q_t = gamma^(T-t) alpha`` of step t's noise variance, t = 1..T
    (the FAccT version, Thm 4.1, Eq. 7).

    >>> influence(T=3, kappa=2, alpha=1.0).tolist()
    [0.25, 0.5, 1.0]
    """
    T = validate.integer("T", T, minimum=0)
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    t = np.arange(1, T + 1, dtype=float)
    return alpha * _gamma_pow(T - t, _log_gamma(kappa))


def erub(*, sigma, kappa: float, alpha: float, R: float) -> float:
    """ERUB of PGD with per-step noise multipliers ``sigma`` (T = len(sigma)), eta = 1/M:
    ``gamma^T + R sum_t q_t sigma_t^2`` (the FAccT version, Thm 4.1, Eq. 7; proof D.1).

    >>> erub(sigma=[1.0, 1.0], kappa=2, alpha=0.1, R=2.0)   # 1/4 + 2*0.1*(1/2 + 1)
    0.55
    """
    s = np.asarray(sigma, dtype=float)
    if s.ndim != 1 or np.any(s < 0) or not np.all(np.isfinite(s)):
        raise ValueError(f"sigma must be a 1-D array of finite values >= 0, got {sigma!r}")
    R = validate.positive("R", R)
    q = influence(T=s.size, kappa=kappa, alpha=alpha)
    return float(_gamma_pow(np.asarray(float(s.size)), _log_gamma(validate.kappa(kappa))) + R * np.sum(q * s**2))


# --- Theorem 4.2: uniform schedule -------------------------------------------------------


def erub_uniform(*, T, kappa: float, alpha: float):
    """ERUB of the uniform schedule ``sigma_t^2 = T/R``: ``gamma^T + alpha kappa (1 - gamma^T) T`` (Eq. 9 =
    Eq. 22's objective). T may be an array of reals.

    >>> erub_uniform(T=1, kappa=2, alpha=0.1)       # gamma + alpha
    0.6
    >>> erub_uniform(T=[0, 1, 2], kappa=2, alpha=0.1).round(4).tolist()
    [1.0, 0.6, 0.55]
    """
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    Ta = _T_array(T)
    lg = _log_gamma(kappa)
    return _scalar(_gamma_pow(Ta, lg) + alpha * kappa * _one_minus_gamma_pow(Ta, lg) * Ta)


def t_uniform_surrogate(*, kappa: float, alpha: float) -> float:
    """Minimiser of the surrogate ``gamma^T + alpha kappa T`` (the FAccT version, Eq. 23):
    ``ln(ln(1/gamma) / (kappa alpha)) / ln(1/gamma)`` when ``kappa alpha + ln gamma < 0``,
    else 0 (the surrogate then increases in T).

    >>> round(t_uniform_surrogate(kappa=10, alpha=1e-3), 3)
    22.35
    >>> t_uniform_surrogate(kappa=10, alpha=0.1)
    0.0
    """
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    L = -_log_gamma(kappa)
    if kappa * alpha - L >= 0:
        return 0.0
    return math.log(L / (kappa * alpha)) / L


def t_uniform(*, kappa: float, alpha: float) -> float:
    """The T chosen for the uniform schedule, ``ln(1 + ln(1/gamma)/alpha) / ln(1/gamma)``
    (the FAccT version, Eq. 24; also the sketch after Thm 4.2). Real-valued; 0 at kappa = 1.

    >>> round(t_uniform(kappa=10, alpha=1e-3), 3)
    44.294
    """
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    if kappa == 1:
        return 0.0
    L = -_log_gamma(kappa)
    return math.log1p(L / alpha) / L


def erub_uniform_eq25(*, kappa: float, alpha: float) -> float:
    """ERUB of the uniform schedule at the T of Eq. (24):
    ``(1 + kappa ln(1 + ln(1/gamma)/alpha)) / (1 + ln(1/gamma)/alpha)`` (the FAccT version, Eq. 25).

    >>> x = erub_uniform_eq25(kappa=10, alpha=1e-3)
    >>> abs(x - erub_uniform(T=t_uniform(kappa=10, alpha=1e-3), kappa=10, alpha=1e-3)) < 1e-12
    True
    """
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    if kappa == 1:
        return 1.0
    u = -_log_gamma(kappa) / alpha
    return (1 + kappa * math.log1p(u)) / (1 + u)


def theta_uniform(*, kappa: float, alpha: float) -> float:
    """The order printed for the uniform minimum, ``kappa^2/(kappa + 1/alpha) ln(1 + 1/(kappa
    alpha))`` (the FAccT version, Thm 4.2, Eq. 8), without its hidden constants.

    >>> round(theta_uniform(kappa=10, alpha=1e-3), 4)
    0.4569
    """
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    return kappa**2 / (kappa + 1 / alpha) * math.log1p(1 / (kappa * alpha))


def _exhaustive(f, T_lo: int, T_hi: int) -> tuple[int, float]:
    if T_hi - T_lo > _T_CAP:
        raise ValueError(f"the exhaustive search range [{T_lo}, {T_hi}] exceeds {_T_CAP} integers; "
                         "choose a larger alpha or smaller kappa")
    Ts = np.arange(T_lo, T_hi + 1, dtype=float)
    vals = np.asarray(f(Ts), dtype=float)
    i = int(np.argmin(vals))
    return int(Ts[i]), float(vals[i])


def argmin_uniform(*, kappa: float, alpha: float, T_min: int = 1) -> tuple[int, float]:
    """Exact integer minimiser of the uniform ERUB (Eq. 22) over ``T >= T_min``, and the minimum, by exhaustive
    search; the range suffices: for ``T >= kappa``, ``1 - gamma^T >= 1 - 1/e``, so ``ERUB(T) >= alpha kappa
    (1 - 1/e) T`` exceeds any value ``U`` already seen once T passes ``U / (alpha kappa (1 - 1/e))``.

    >>> T, v = argmin_uniform(kappa=10, alpha=1e-3); T, round(v, 4)
    (21, 0.2964)
    >>> T, v = argmin_uniform(kappa=1e6, alpha=0.1); T, round(v, 4)   # very sharp loss: one step
    (1, 1.1)
    """
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    T_min = validate.integer("T_min", T_min, minimum=0)
    f = lambda T: erub_uniform(T=T, kappa=kappa, alpha=alpha)  # noqa: E731
    t24 = t_uniform(kappa=kappa, alpha=alpha)
    cands = {T_min, max(T_min, math.floor(t24)), max(T_min, math.ceil(t24))}
    U = min(float(f(float(c))) for c in cands)
    T_hi = max(T_min, math.ceil(kappa), math.ceil(U / (alpha * kappa * (1 - math.exp(-1)))))
    return _exhaustive(f, T_min, T_hi)


# --- Lemma 4.3 and Theorem 4.4: dynamic schedule ------------------------------------------


def optimal_schedule(*, q, R: float) -> tuple[np.ndarray, float]:
    """Lemma 4.3 (Eq. 10): the minimiser ``sigma_t^2 = (1/R) sum_i sqrt(q_i / q_t)`` of ``R sum_t q_t sigma_t^2``
    for influences ``q > 0`` and ``sum 1/sigma_t^2 = R`` (:func:`dpcompanion.theory.schedules.optimal`), and
    the minimum ``(sum_t sqrt(q_t))^2``.

    >>> s2, m = optimal_schedule(q=[1.0, 4.0], R=1.0)
    >>> s2.round(12).tolist(), round(m, 12)
    ([3.0, 1.5], 9.0)
    """
    sigma = schedules.optimal(q=q, R=validate.positive("R", R))
    return sigma**2, float(np.sum(np.sqrt(np.asarray(q, dtype=float))) ** 2)


def sigma2_dynamic(*, T: int, kappa: float, R: float) -> np.ndarray:
    """Squared dynamic schedule of Thm 4.4, ``sigma_t^2 = (1/R) (sqrt((1/gamma)^T) - 1) / (1 - sqrt(gamma))
    sqrt(gamma^t)`` (the square of :func:`dpcompanion.theory.schedules.gd_dynamic`); kappa > 1.

    >>> s2 = sigma2_dynamic(T=3, kappa=4, R=2.0)
    >>> round(float(np.sum(1 / s2)), 12)
    2.0
    """
    if validate.kappa(kappa) == 1:
        raise ValueError("kappa must be in (1, inf) for the dynamic schedule, got 1")
    return schedules.gd_dynamic(T=T, R=R, kappa=kappa) ** 2


def erub_dynamic(*, T, kappa: float, alpha: float):
    """ERUB of the dynamic schedule at horizon T (proof of Thm 4.4, the FAccT version):
    ``gamma^T + alpha ((1 - gamma^(T/2)) / (1 - sqrt(gamma)))^2``. T may be an array.

    >>> round(erub_dynamic(T=2, kappa=4, alpha=0.1), 6)   # 9/16 + 0.1 (1 + sqrt(3/4))^2
    0.910705
    """
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    Ta = _T_array(T)
    lg = _log_gamma(kappa)
    s = one_minus_sqrt_gamma(kappa)
    return _scalar(_gamma_pow(Ta, lg) + alpha * (_one_minus_gamma_pow(Ta / 2, lg) / s) ** 2)


def t_dynamic(*, kappa: float, alpha: float) -> float:
    """Continuous minimiser of the dynamic ERUB, ``2 log_gamma(alpha / (alpha + (1 -
    sqrt(gamma))^2))`` (the FAccT version, Eq. 27, proof of Thm 4.4). 0 at kappa = 1.

    >>> round(t_dynamic(kappa=10, alpha=1e-3), 3)
    24.491
    """
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    if kappa == 1:
        return 0.0
    s = one_minus_sqrt_gamma(kappa)
    return 2 * math.log1p(s**2 / alpha) / (-_log_gamma(kappa))


def t_dynamic_statement(*, kappa: float, alpha: float) -> float:
    """The T printed in the statement of Thm 4.4 (the FAccT version): ``2 kappa ln(1 + 1/(kappa alpha))``
    (before rounding up).

    >>> round(t_dynamic_statement(kappa=10, alpha=1e-3), 3)
    92.302
    """
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    return 2 * kappa * math.log1p(1 / (kappa * alpha))


def erub_dynamic_min(*, kappa: float, alpha: float) -> float:
    """Minimum over real T of the dynamic ERUB: ``A / (A + 1)`` with ``A = alpha (1 -
    sqrt(gamma))^-2`` (the FAccT version, the display after Eq. 27).

    >>> x = erub_dynamic_min(kappa=10, alpha=1e-3)
    >>> abs(x - erub_dynamic(T=t_dynamic(kappa=10, alpha=1e-3), kappa=10, alpha=1e-3)) < 1e-12
    True
    """
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    A = alpha / one_minus_sqrt_gamma(kappa) ** 2
    return A / (A + 1)


def theta_dynamic(*, kappa: float, alpha: float) -> float:
    """The order printed for the dynamic minimum, ``kappa^2 / (kappa^2 + 1/alpha)`` (001
    Thm 4.4, Eq. 11), without its hidden constants.

    >>> round(theta_dynamic(kappa=10, alpha=1e-3), 4)
    0.0909
    """
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    return kappa**2 * alpha / (kappa**2 * alpha + 1)


def argmin_dynamic(*, kappa: float, alpha: float, T_min: int = 1) -> tuple[int, float]:
    """Integer minimiser of the dynamic ERUB over ``T_min .. max(2 ceil(T_27) + 10, kappa)``: the objective is
    a convex quadratic in ``x = gamma^(T/2)``, hence unimodal in T, so the range holds the minimiser.

    >>> T, v = argmin_dynamic(kappa=10, alpha=1e-3); T, round(v, 4)
    (24, 0.2753)
    """
    kappa, alpha = validate.kappa(kappa), validate.positive("alpha", alpha)
    T_min = validate.integer("T_min", T_min, minimum=0)
    t27 = t_dynamic(kappa=kappa, alpha=alpha)
    T_hi = max(T_min + 10, 2 * math.ceil(t27) + 10, math.ceil(kappa))
    return _exhaustive(lambda T: erub_dynamic(T=T, kappa=kappa, alpha=alpha), T_min, T_hi)
