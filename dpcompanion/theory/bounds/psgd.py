"""Utility bound of private stochastic gradient descent (PSGD), Hong et al. 2022 (FAccT, arXiv 2101.07413)
Section 4.3, Thm 4.8 and proof D.3: with sampling rate ``p = n/N``, ``R' = R / p^2`` (Yu et al. 2019
Thm 3, constant dropped) and gradient noise ``sigma_g xi_t / n``, ``E ||xi_t||^2 <= D``,

    ERUB = gamma^T + alpha_g sigma_g^2 + R' sum_t q_t sigma_t^2,
    alpha_g = D / (2 mu N^2 R (f(theta_1) - f*)),   q_t = gamma^(T-t) alpha."""

from __future__ import annotations

import math

import numpy as np

from dpcompanion.theory.bounds import gd
from dpcompanion.core import validate

__all__ = ["alpha_g_of", "batch_size", "rescaled_budget", "erub_psgd", "sgd_noise_coefficient"]


def alpha_g_of(*, D: float, mu: float, N: float, R: float, f_gap: float) -> float:
    """``alpha_g = D / (2 mu N^2 R (f(theta_1) - f*))`` (the FAccT version, Thm 4.8).

    >>> alpha_g_of(D=10, mu=0.1, N=100, R=0.5, f_gap=1)
    0.01
    """
    D, mu, N, R, f_gap = (validate.positive(k, v) for k, v in (("D", D), ("mu", mu), ("N", N), ("R", R), ("f_gap", f_gap)))
    return D / (2 * mu * N**2 * R * f_gap)


def batch_size(*, N: float, R: float) -> float:
    """The batch size Thm 4.8 assumes, ``n = max{N sqrt(R), 1}`` (real-valued, as printed).

    >>> batch_size(N=100, R=0.25)
    50.0
    """
    return max(validate.positive("N", N) * math.sqrt(validate.positive("R", R)), 1.0)


def rescaled_budget(*, R: float, n: float, N: float) -> float:
    """``R' = R / p^2 = N^2 R / n^2`` with sampling rate ``p = n/N`` (the FAccT version, Sec. 4.3).

    >>> rescaled_budget(R=0.25, n=50, N=100)
    1.0
    """
    R, n, N = validate.positive("R", R), validate.positive("n", n), validate.positive("N", N)
    return R * (N / n) ** 2


def sgd_noise_coefficient(*, D: float, mu: float, n: float, f_gap: float) -> float:
    """The coefficient of ``sigma_g^2`` before the proof's last relaxation, ``R' kappa alpha / G^2 =
    D / (2 mu n^2 (f(theta_1) - f*))`` (proof D.3; alpha and R' with the batch size n).

    >>> sgd_noise_coefficient(D=10, mu=0.1, n=100, f_gap=1)
    0.005
    """
    D, mu, n, f_gap = (validate.positive(k, v) for k, v in (("D", D), ("mu", mu), ("n", n), ("f_gap", f_gap)))
    return D / (2 * mu * n**2 * f_gap)


def erub_psgd(*, sigma, kappa: float, alpha: float, R_prime: float, alpha_g: float, sigma_g: float) -> float:
    """PSGD bound of Thm 4.8 (the FAccT version): ``gamma^T + alpha_g sigma_g^2 + R' sum_t q_t sigma_t^2``.

    >>> round(erub_psgd(sigma=[1.0, 1.0], kappa=2, alpha=0.1, R_prime=2.0, alpha_g=0.01, sigma_g=2.0), 12)
    0.59
    """
    base = gd.erub(sigma=sigma, kappa=kappa, alpha=alpha, R=R_prime)
    return base + validate.positive("alpha_g", alpha_g, allow_zero=True) * validate.positive("sigma_g", sigma_g, allow_zero=True) ** 2
