"""Momentum variant of private gradient descent: Hong et al. 2022 (FAccT, arXiv 2101.07413) Sec. 4.2,
Thm 4.5-4.7, Thm 4.9, Lemmas C.5-C.7 and the proofs in App. D.2.

Notation (H Thm 4.5): ``eta_t = eta0/(2M)``, ``gamma = 1 - eta0/kappa``, momentum ``beta``, debias
factor ``d_t = (1 - beta)/(1 - beta^t)``. The noise term of the bound (H Eq. 14) is

    U_3 = sum_{t=1}^T gamma^{T-t} d_t^2 sum_{i=1}^t beta^{2(t-i)} sigma_i^2 = sum_i w_i sigma_i^2,

with the exact influence ``w_i = sum_{t=i}^T gamma^{T-t} d_t^2 beta^{2(t-i)}`` (:func:`influence_exact`),
which the paper bounds by forms ``q_i`` (:func:`influence_form`; the printed ones live in
:mod:`dpcompanion.theory.schedules`). Powers are taken in log space where they would over/underflow."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpcompanion.core import validate
from dpcompanion.theory import schedules

__all__ = ["T_hat", "debias_factor", "influence_exact", "U3", "U3_uniform", "U3_uniform_bound", "erub",
           "eta0_max", "zeta", "influence_form", "U3g", "U3g_bound", "erub_uniform_curve",
           "erub_dynamic_curve", "c6_coefficients", "c6_U1"]


def _bg(beta: Any, gamma: Any) -> tuple[float, float]:
    return validate.unit_interval("beta", beta), validate.unit_interval("gamma", gamma)


# ------------------------------------------------------------------ T_hat, influences


def T_hat(*, beta: float, gamma: float) -> int:
    """``T_hat = max t s.t. gamma^{t-1} >= (1 - beta)/(1 - beta^t)`` (H Thm 4.6/4.7, Lemma C.7); finite since
    the right side tends to ``1 - beta > 0``: ``T_hat <= 1 + ln(1-beta)/ln(gamma)``.

    >>> T_hat(beta=0.9, gamma=0.99)
    230
    >>> T_hat(beta=0.1, gamma=0.9)
    1
    """
    beta, gamma = _bg(beta, gamma)
    upper = 2 + int(math.floor(math.log1p(-beta) / math.log(gamma)))
    if upper > 5_000_000:
        raise ValueError(f"T_hat would exceed 5e6 steps for beta={beta}, gamma={gamma}; use gamma further from 1")
    return schedules.momentum_T_hat(T=upper, kappa=1.0 / (1.0 - gamma), beta=beta)


def debias_factor(*, beta: float, T: int) -> np.ndarray:
    """``d_t = (1 - beta)/(1 - beta^t)``, t = 1..T (H Eq. 13 and Thm 4.5).

    >>> debias_factor(beta=0.5, T=3)
    array([1.        , 0.66666667, 0.57142857])
    """
    beta = validate.unit_interval("beta", beta)
    T = validate.integer("T", T)
    t = np.arange(1, T + 1, dtype=np.float64)
    return (1.0 - beta) / -np.expm1(t * math.log(beta))


def influence_exact(*, beta: float, gamma: float, T: int) -> np.ndarray:
    """Exact influence ``w_i`` of ``sigma_i^2`` on U_3 (H Thm 4.5): ``U_3 = sum_i w_i sigma_i^2``,
    ``w_i = sum_{t=i}^T gamma^{T-t} d_t^2 beta^{2(t-i)}``, by the backward recursion
    ``w_i = gamma^{T-i} d_i^2 + beta^2 w_{i+1}``.

    >>> w = influence_exact(beta=0.5, gamma=0.9, T=2)
    >>> bool(np.isclose(w[0], 0.9 + 0.25 * (0.5 / 0.75) ** 2)), bool(np.isclose(w[1], (0.5 / 0.75) ** 2))
    (True, True)
    """
    beta, gamma = _bg(beta, gamma)
    T = validate.integer("T", T)
    d2 = debias_factor(beta=beta, T=T) ** 2
    g = np.exp((T - np.arange(1, T + 1)) * math.log(gamma))  # underflows to 0 gracefully
    w = np.empty(T)
    acc = 0.0
    b2 = beta * beta
    for i in range(T - 1, -1, -1):
        acc = g[i] * d2[i] + b2 * acc
        w[i] = acc
    return w


def _sigma2(sigma2: Any) -> np.ndarray:
    s = np.atleast_1d(np.asarray(sigma2, dtype=np.float64))
    if s.ndim != 1 or s.size == 0 or not np.all(np.isfinite(s) & (s >= 0)):
        raise ValueError(f"sigma2 must be a non-empty 1-D sequence of finite numbers >= 0, got {sigma2!r}"[:200])
    return s


def U3(*, sigma2: Any, beta: float, gamma: float) -> float:
    """The noise term U_3 of H Thm 4.5 (Eq. 14) for noise variances ``sigma2`` (t = 1..T).

    >>> round(U3(sigma2=[1.0, 1.0], beta=0.5, gamma=0.9), 6)
    1.455556
    """
    s = _sigma2(sigma2)
    return float(np.dot(influence_exact(beta=beta, gamma=gamma, T=s.size), s))


def U3_uniform(*, T: int, R: float, beta: float, gamma: float) -> float:
    """Exact U_3 for the uniform schedule ``sigma^2 = T/R`` (H proof of Thm 4.6, line 4):
    ``sigma^2 sum_t gamma^{T-t} (1-beta)(1+beta^t) / ((1-beta^t)(1+beta))``.

    >>> bool(np.isclose(U3_uniform(T=5, R=2.0, beta=0.5, gamma=0.9), U3(sigma2=[2.5] * 5, beta=0.5, gamma=0.9)))
    True
    """
    beta, gamma = _bg(beta, gamma)
    T = validate.integer("T", T)
    R = validate.positive("R", R)
    t = np.arange(1, T + 1, dtype=np.float64)
    f = debias_factor(beta=beta, T=T) * (1.0 + beta**t) / (1.0 + beta)
    return float((T / R) * np.sum(np.exp((T - t) * math.log(gamma)) * f))


def U3_uniform_bound(*, T: int, R: float, beta: float, gamma: float) -> float:
    """H proof of Thm 4.6 (last display): ``U_3 <= (T/(gamma R)) gamma^T (min{T_hat, T} +
    max{(gamma^{T_hat - T} - 1)/(1 - gamma), 0})``, evaluated as
    ``(T/R) [gamma^{T-1} min{T_hat,T} + max{gamma^{T_hat-1} - gamma^{T-1}, 0}/(1-gamma)]``.

    >>> U3_uniform(T=50, R=1.0, beta=0.9, gamma=0.99) <= U3_uniform_bound(T=50, R=1.0, beta=0.9, gamma=0.99)
    True
    """
    beta, gamma = _bg(beta, gamma)
    T = validate.integer("T", T)
    R = validate.positive("R", R)
    Th = T_hat(beta=beta, gamma=gamma)
    lg = math.log(gamma)
    a = math.exp((T - 1) * lg)
    b = math.exp((Th - 1) * lg)
    return (T / R) * (a * min(Th, T) + max(b - a, 0.0) / (1.0 - gamma))


def erub(*, sigma2: Any, beta: float, gamma: float, eta0: float, alpha: float, R: float) -> float:
    """ERUB of H Thm 4.5 with the momentum-effect term dropped (zeta >= 0):
    ``gamma^T + 2 R eta0 alpha U_3``.

    >>> round(erub(sigma2=[1.0], beta=0.5, gamma=0.9, eta0=0.1, alpha=0.01, R=1.0), 6)
    0.902
    """
    s = _sigma2(sigma2)
    eta0 = validate.positive("eta0", eta0)
    alpha = validate.positive("alpha", alpha)
    R = validate.positive("R", R)
    return math.exp(s.size * math.log(validate.unit_interval("gamma", gamma))) + 2 * R * eta0 * alpha * U3(
        sigma2=s, beta=beta, gamma=gamma
    )


# ------------------------------------------------------------------ eta0 and zeta


def eta0_max(*, beta: float, gamma: float) -> float:
    """Largest admissible ``eta0`` of H Thm 4.5: ``8 / (sqrt(1 + 64 beta gamma (gamma-beta)^-2
    (1-beta)^-3) + 1)``, the positive root of the proof's zeta (App. D.2).

    >>> round(eta0_max(beta=0.9, gamma=0.99), 6)
    0.003014
    """
    beta, gamma = _bg(beta, gamma)
    if beta == gamma:
        raise ValueError(f"beta must differ from gamma (H Thm 4.5), got beta = gamma = {beta}")
    A = beta * gamma / ((gamma - beta) ** 2 * (1 - beta) ** 3)
    return 8.0 / (math.sqrt(1.0 + 64.0 * A) + 1.0)


def zeta(*, eta0: float, beta: float, gamma: float | None = None, form: str = "proof") -> float:
    """Momentum-effect coefficient of H Thm 4.5.

    * ``form="proof"`` (App. D.2): ``1 - eta0/4 - beta gamma eta0^2 / ((gamma-beta)^2 (1-beta)^3)``;
    * ``form="statement"`` (as printed in the theorem, both versions):
      ``1 - eta0^2/(beta (1-beta)^3) - eta0/4`` (no gamma).

    >>> zeta(eta0=eta0_max(beta=0.9, gamma=0.99), beta=0.9, gamma=0.99) < 1e-12
    True
    """
    eta0 = validate.positive("eta0", eta0, allow_zero=True)
    beta = validate.unit_interval("beta", beta)
    if form == "statement":
        return 1.0 - eta0**2 / (beta * (1 - beta) ** 3) - eta0 / 4
    if form != "proof":
        raise ValueError(f"form must be 'proof' or 'statement', got {form!r}")
    gamma = validate.unit_interval("gamma", gamma)
    return 1.0 - eta0 / 4 - beta * gamma * eta0**2 / ((gamma - beta) ** 2 * (1 - beta) ** 3)


# ------------------------------------------------------------------ influence forms


def influence_form(*, beta: float, gamma: float, T: int, form: str) -> np.ndarray:
    """The paper's influence forms q_t (t = 1..T), each meant to satisfy ``w_t <= q_t``:

    * ``"statement"``, ``"proof"``, ``"corrected"``, ``"slides"``: the variants of
      :func:`dpcompanion.theory.schedules.momentum_dynamic` (H Thm 4.7 as printed, split on t, with
      ``c2' = gamma^{T_hat}/(gamma - beta^2)``, the slides' Thm 3.4);
    * ``"derived"``: what the proof of Thm 4.7 derives before its last relaxation, ``c1 gamma^{T+t}`` for
      ``t <= T_hat`` and ``gamma^{2T_hat-2} (gamma^{T+1-t} - beta^{2(T+1-t)})/(gamma - beta^2)`` after
      (needs ``beta < gamma``).

    >>> q = influence_form(beta=0.5, gamma=0.9, T=4, form="slides")
    >>> bool(np.isclose(q[-1], 1.0)), bool(np.isclose(q[0], sum(0.9**k * 0.25**(3 - k) for k in range(4))))
    (True, True)
    """
    beta, gamma = _bg(beta, gamma)
    T = validate.integer("T", T)
    kappa = 1.0 / (1.0 - gamma)
    if form in schedules.MOMENTUM_VARIANTS:
        return np.exp(schedules.log_influence("momentum-dynamic", T=T, kappa=kappa, beta=beta, eta0=1.0, variant=form))
    if form != "derived":
        raise ValueError(f"form must be 'statement', 'proof', 'corrected', 'derived' or 'slides', got {form!r}")
    if not beta < gamma:
        raise ValueError(f"beta must be < gamma (H Thm 4.7), got beta={beta}, gamma={gamma}")
    Th = T_hat(beta=beta, gamma=gamma)
    t = np.arange(1, T + 1, dtype=np.float64)
    lg = math.log(gamma)
    first = math.log(2.0) - lg - math.log(gamma - beta * beta) + (T + t) * lg
    # (gamma^{T+1-t} - beta^{2(T+1-t)})/(gamma - beta^2) is the slides' q_t (same geometric sum)
    log_geo = schedules.log_influence("momentum-dynamic", T=T, kappa=kappa, beta=beta, eta0=1.0, variant="slides")
    second = (2 * Th - 2) * lg + log_geo
    return np.exp(np.where(t <= Th, first, second))


# ------------------------------------------------------------------ PSGD + momentum (Thm 4.9)


def U3g(*, T: int, beta: float, gamma: float, sigma_g: float, G: float) -> float:
    """``U_3^g = (sigma_g^2/G^2) sum_t gamma^{T-t} d_t^2 sum_{i<=t} beta^{2(t-i)}`` (H proof of Thm 4.9).

    >>> bool(np.isclose(U3g(T=3, beta=0.5, gamma=0.9, sigma_g=2.0, G=1.0), 4 * U3_uniform(T=3, R=3.0, beta=0.5, gamma=0.9)))
    True
    """
    sigma_g = validate.positive("sigma_g", sigma_g, allow_zero=True)
    G = validate.positive("G", G)
    T = validate.integer("T", T)
    return (sigma_g / G) ** 2 * U3_uniform(T=T, R=float(T), beta=beta, gamma=gamma)


def U3g_bound(*, kappa: float, sigma_g: float, G: float, eta0: float | None = None) -> float:
    """Bound on U_3^g: ``eta0=None``, as printed in H Thm 4.9's proof, ``kappa sigma_g^2/G^2``; with ``eta0``,
    ``sigma_g^2/((1-gamma) G^2) = kappa sigma_g^2/(eta0 G^2)`` for ``gamma = 1 - eta0/kappa``.

    >>> U3g_bound(kappa=10.0, sigma_g=1.0, G=1.0), U3g_bound(kappa=10.0, sigma_g=1.0, G=1.0, eta0=0.5)
    (10.0, 20.0)
    """
    kappa = validate.positive("kappa", kappa)
    sigma_g = validate.positive("sigma_g", sigma_g, allow_zero=True)
    G = validate.positive("G", G)
    base = kappa * (sigma_g / G) ** 2
    return base if eta0 is None else base / validate.positive("eta0", eta0)


# ------------------------------------------------------------------ ERUB vs T (Thm 4.6, 4.7)


def erub_uniform_curve(*, beta: float, gamma: float, eta0: float, alpha: float, T_max: int) -> np.ndarray:
    """ERUB(T), T = 1..T_max, of the uniform schedule with the *exact* U_3 (H Thm 4.5/4.6):
    ``gamma^T + 2 eta0 alpha T sum_t gamma^{T-t} d_t (1+beta^t)/(1+beta)`` (R cancels).

    >>> c = erub_uniform_curve(beta=0.5, gamma=0.9, eta0=0.1, alpha=0.01, T_max=3)
    >>> bool(np.isclose(c[2], erub(sigma2=[3.0] * 3, beta=0.5, gamma=0.9, eta0=0.1, alpha=0.01, R=1.0)))
    True
    """
    beta, gamma = _bg(beta, gamma)
    eta0, alpha = validate.positive("eta0", eta0), validate.positive("alpha", alpha)
    T_max = validate.integer("T_max", T_max)
    t = np.arange(1, T_max + 1, dtype=np.float64)
    f = debias_factor(beta=beta, T=T_max) * (1.0 + beta**t) / (1.0 + beta)
    S = np.empty(T_max)
    acc = 0.0
    for k in range(T_max):  # S(T) = gamma S(T-1) + f(T)
        acc = gamma * acc + f[k]
        S[k] = acc
    return np.exp(t * math.log(gamma)) + 2 * eta0 * alpha * t * S


def erub_dynamic_curve(*, beta: float, gamma: float, eta0: float, alpha: float, T_max: int) -> np.ndarray:
    """ERUB(T), T = 1..T_max, of the best schedule for the *exact* influence (Lemma 4.3 on
    w_t): ``gamma^T + 2 eta0 alpha (sum_t sqrt(w_t))^2``.

    >>> c = erub_dynamic_curve(beta=0.5, gamma=0.9, eta0=0.1, alpha=0.01, T_max=3)
    >>> bool(c[2] <= erub_uniform_curve(beta=0.5, gamma=0.9, eta0=0.1, alpha=0.01, T_max=3)[2])
    True
    """
    beta, gamma = _bg(beta, gamma)
    eta0, alpha = validate.positive("eta0", eta0), validate.positive("alpha", alpha)
    T_max = validate.integer("T_max", T_max)
    d2 = debias_factor(beta=beta, T=T_max) ** 2
    out = np.empty(T_max)
    w = np.zeros(0)
    b2 = beta * beta
    for T in range(1, T_max + 1):  # w_i(T) = gamma w_i(T-1) + d_T^2 beta^{2(T-i)}
        new = d2[T - 1] * b2 ** (T - np.arange(1, T + 1))
        w = np.concatenate([gamma * w, [0.0]]) + new
        out[T - 1] = math.exp(T * math.log(gamma)) + 2 * eta0 * alpha * float(np.sum(np.sqrt(w))) ** 2
    return out


# ------------------------------------------------------------------ Lemmas C.5, C.6


def c6_U1(*, t: int, i: int, beta: float, form: str = "exact") -> float:
    """``U_1(t, i) = sum_{k=t-i}^{t-1} k beta^k`` (H Lemma C.6 proof). ``form="printed"`` is the
    closed form printed there, ``((t-i) beta^{t-i} + (beta^{t-i+1} - beta)/(1-beta))/(1-beta)``.

    >>> c6_U1(t=3, i=2, beta=0.5), c6_U1(t=3, i=2, beta=0.5, form="printed")
    (1.0, 0.0)
    """
    beta = validate.unit_interval("beta", beta)
    t, i = validate.integer("t", t), validate.integer("i", i)
    if i > t - 1:
        raise ValueError(f"i must be <= t - 1 = {t - 1}, got {i}")
    if form == "exact":
        k = np.arange(t - i, t, dtype=np.float64)
        return float(np.sum(k * beta**k))
    if form != "printed":
        raise ValueError(f"form must be 'exact' or 'printed', got {form!r}")
    j = t - i
    return (j * beta**j + (beta ** (j + 1) - beta) / (1 - beta)) / (1 - beta)


def c6_coefficients(*, beta: float, gamma: float, T: int) -> tuple[np.ndarray, np.ndarray]:
    """Both sides of H Lemma C.6 as coefficients of ``||v_{i+1}||^2``, i = 1..T-1:
    LHS ``sum_{t=i+1}^T gamma^{T-t} U_1(t, i)`` and RHS ``2 beta gamma/((gamma-beta)^2 (1-beta))
    gamma^{T-i}``. The lemma holds for all v iff LHS <= RHS coefficient-wise.

    >>> l, r = c6_coefficients(beta=0.5, gamma=0.9, T=20)
    >>> bool(np.all(l <= r))
    True
    """
    beta, gamma = _bg(beta, gamma)
    T = validate.integer("T", T, minimum=2)
    if beta == gamma:
        raise ValueError(f"beta must differ from gamma (H Thm 4.5), got {beta}")
    n = np.arange(0, T + 1, dtype=np.float64)
    S = np.cumsum(n * beta**n)  # S[m] = sum_{k=0}^m k beta^k
    lhs = np.zeros(T - 1)
    for i in range(1, T):
        t = np.arange(i + 1, T + 1)
        U1 = S[t - 1] - S[t - i - 1]
        lhs[i - 1] = float(np.sum(gamma ** (T - t) * U1))
    i = np.arange(1, T, dtype=np.float64)
    rhs = 2 * beta * gamma / ((gamma - beta) ** 2 * (1 - beta)) * gamma ** (T - i)
    return lhs, rhs
