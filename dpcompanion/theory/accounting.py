"""Privacy accounting: zCDP, (epsilon, delta)-DP and exact Gaussian DP of full-batch steps.

A step adds Gaussian noise of standard deviation ``sigma x sensitivity`` (``sigma``: the noise
multiplier) and costs ``1/sigma^2`` of Hong et al.'s budget ``R``; the release is ``(R/2)``-zCDP,
so **R = 2 rho** (SPEC section 2). To (epsilon, delta):

* **zCDP** (the paper): ``rho = R/2`` and Bun & Steinke's conversion (Hong et al. 2022, FAccT,
  arXiv 2101.07413, Lemma C.3).
* **Exact (Gaussian DP)**: full-batch steps compose to one Gaussian mechanism with
  ``mu = sqrt(sum_t 1/sigma_t^2) = sqrt(R)`` (Dong, Roth & Su, arXiv 1905.02383v3, Cor. 3.3), whose
  exact profile is ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (ibid., Cor. 2.13).
  zCDP loses only in the final conversion, so the exact accountant can spend more.
* Numerical accountants (RDP, PLD) for subsampled steps: :mod:`.numerical_accounting`.

H Sec. 4.1.3's printed inversion takes the wrong root of the quadratic: :func:`R_zcdp_as_printed`
evaluates it, :func:`dp_to_zcdp` derives the right one.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from dpcompanion.core import validate

__all__ = ["zcdp_to_dp", "dp_to_zcdp", "R_from_rho", "rho_from_R", "R_zcdp", "R_zcdp_as_printed", "R_ma",
           "spent_R", "gdp_mu", "gdp_delta", "gdp_epsilon", "exact_delta", "exact_epsilon", "R_exact",
           "unused_budget"]


def sigma_array(sigma) -> np.ndarray:
    """Noise multipliers for accounting: each > 0, ``inf`` allowed (a step that releases nothing
    costs nothing; trainers and the ledger refuse it)."""
    return validate.positive_array("sigma", sigma, allow_inf=True)


def zcdp_to_dp(*, rho: float, delta: float) -> float:
    """epsilon of ``(epsilon, delta)``-DP implied by ``rho``-zCDP: ``rho + 2 sqrt(rho ln(1/delta))``.

    Hong et al. 2022 Lemma C.3 (Bun & Steinke arXiv 1605.02065v1 Prop. 1.3).

    >>> round(zcdp_to_dp(rho=0.5, delta=1e-5), 4)
    5.2985
    """
    rho = validate.positive("rho", rho, allow_zero=True)
    delta = validate.delta(delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def dp_to_zcdp(*, epsilon: float, delta: float) -> float:
    """The largest ``rho`` whose Lemma C.3 conversion gives at most ``epsilon`` at ``delta``.

    Derivation (ours; SPEC section 2). With ``L = ln(1/delta)`` and ``x = sqrt(rho) >= 0``, Lemma C.3
    reads ``x^2 + 2 sqrt(L) x - epsilon = 0``, with roots ``x = -sqrt(L) +- sqrt(L + epsilon)`` of product
    ``-epsilon < 0``: one is non-negative, and as the conversion increases in ``rho``,

        rho = (sqrt(L + epsilon) - sqrt(L))^2 = epsilon^2 / (sqrt(L + epsilon) + sqrt(L))^2,

    the second form free of cancellation when ``epsilon << L``. (The paper's Sec. 4.1.3 expression is
    the negative root squared: :func:`R_zcdp_as_printed`.)

    >>> round(dp_to_zcdp(epsilon=4, delta=1e-8), 5)   # H Sec. 5 prints 0.1963 (truncated)
    0.19635
    >>> abs(dp_to_zcdp(epsilon=zcdp_to_dp(rho=0.3, delta=1e-6), delta=1e-6) - 0.3) < 1e-12
    True
    """
    epsilon = validate.positive("epsilon", epsilon)
    delta = validate.delta(delta)
    L = math.log(1.0 / delta)
    return (epsilon / (math.sqrt(L + epsilon) + math.sqrt(L))) ** 2  # no overflow of epsilon^2


def R_from_rho(*, rho: float) -> float:
    """The paper's budget ``R = 2 rho`` (H Thm 3.1: Algorithm 1 is ``R/2``-zCDP).

    >>> R_from_rho(rho=0.25)
    0.5
    """
    return 2.0 * validate.positive("rho", rho, allow_zero=True)


def rho_from_R(*, R: float) -> float:
    """zCDP parameter of a spent paper budget: ``rho = R/2``.

    >>> rho_from_R(R=0.5)
    0.25
    """
    return 0.5 * validate.positive("R", R, allow_zero=True)


def R_zcdp(*, epsilon: float, delta: float) -> float:
    """Budget R the paper allots to ``(epsilon, delta)``-DP: ``2 dp_to_zcdp(epsilon, delta)``.

    >>> round(R_zcdp(epsilon=4, delta=1e-8), 4)       # H Sec. 5 prints R = 0.3927
    0.3927
    """
    return R_from_rho(rho=dp_to_zcdp(epsilon=epsilon, delta=delta))


def R_zcdp_as_printed(*, epsilon: float, delta: float) -> float:
    """The inversion as printed in H Sec. 4.1.3, ``R = 2 eps + 4 ln(1/delta) + 4 sqrt(ln(1/delta)(eps +
    ln(1/delta)))`` = ``2 (sqrt(L) + sqrt(L + eps))^2``: the negative root; not the paper's R = 0.3927.

    >>> round(R_zcdp_as_printed(epsilon=4, delta=1e-8), 2)
    162.97
    """
    epsilon = validate.positive("epsilon", epsilon)
    L = math.log(1.0 / validate.delta(delta))
    return 2 * epsilon + 4 * L + 4 * math.sqrt(L * (epsilon + L))


def R_ma(*, epsilon: float, delta: float) -> float:
    """The moments-accountant budget ``R_MA = epsilon^2 / ln(1/delta)`` of H Sec. 4.1.3 (an order of
    magnitude, constants dropped; not a guarantee).

    >>> round(R_ma(epsilon=4, delta=1e-8), 4)
    0.8686
    """
    epsilon = validate.positive("epsilon", epsilon)
    return epsilon**2 / math.log(1.0 / validate.delta(delta))


def spent_R(*, sigma) -> float:
    """Budget spent by full-batch steps with multipliers ``sigma``: ``sum_t 1/sigma_t^2``.

    >>> spent_R(sigma=[1.0, 2.0])
    1.25
    """
    s = sigma_array(sigma)
    return float(np.sum(1.0 / s**2))


def gdp_mu(*, sigma) -> float:
    """``mu = sqrt(sum 1/sigma_t^2)`` of full-batch Gaussian steps (Dong, Roth & Su Cor. 3.3).

    >>> gdp_mu(sigma=[2.0, 2.0, 2.0, 2.0])
    1.0
    """
    return math.sqrt(spent_R(sigma=sigma))


def gdp_delta(*, mu: float, epsilon: float) -> float:
    """Exact delta(epsilon) of mu-GDP (Dong, Roth & Su arXiv 1905.02383v3 Cor. 2.13):
    ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, evaluated in logs.

    >>> round(gdp_delta(mu=1.0, epsilon=1.0), 6)
    0.126937
    >>> gdp_delta(mu=0.0, epsilon=0.5)
    0.0
    """
    mu = validate.positive("mu", mu, allow_zero=True)
    epsilon = validate.positive("epsilon", epsilon, allow_zero=True)
    if mu == 0.0:
        return 0.0
    a = special.log_ndtr(-epsilon / mu + mu / 2)
    b = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    if b >= a:  # only rounding can bring this about
        return 0.0
    return float(math.exp(a) * -math.expm1(b - a))


def gdp_epsilon(*, mu: float, delta: float) -> float:
    """Smallest epsilon with ``gdp_delta(mu, epsilon) <= delta`` (exact for mu-GDP).

    >>> round(gdp_epsilon(mu=1.0, delta=1e-5), 4)
    4.3772
    """
    mu = validate.positive("mu", mu, allow_zero=True)
    delta = validate.delta(delta)
    if mu == 0.0 or gdp_delta(mu=mu, epsilon=0.0) <= delta:
        return 0.0
    # The zCDP conversion with rho = mu^2/2 is a valid upper bound for this mechanism.
    hi = zcdp_to_dp(rho=mu * mu / 2, delta=delta)
    log_target = math.log(delta)

    def f(eps: float) -> float:
        d = gdp_delta(mu=mu, epsilon=eps)
        return (math.log(d) if d > 0 else -1e300) - log_target

    while f(hi) > 0:  # pragma: no cover - the zCDP bound already suffices
        hi *= 2
    return float(optimize.brentq(f, 0.0, hi, xtol=1e-14, rtol=1e-13, maxiter=500))


def exact_delta(*, sigma, epsilon: float) -> float:
    """Exact delta(epsilon) of full-batch Gaussian steps with multipliers ``sigma`` (GDP).

    >>> round(exact_delta(sigma=[2.0] * 4, epsilon=1.0), 6)
    0.126937
    """
    return gdp_delta(mu=gdp_mu(sigma=sigma), epsilon=epsilon)


def exact_epsilon(*, sigma, delta: float) -> float:
    """Exact epsilon at ``delta`` of full-batch Gaussian steps with multipliers ``sigma``.

    >>> round(exact_epsilon(sigma=[2.0] * 4, delta=1e-5), 4)
    4.3772
    """
    return gdp_epsilon(mu=gdp_mu(sigma=sigma), delta=delta)


def R_exact(*, epsilon: float, delta: float) -> float:
    """Largest budget R (= mu^2) whose exact GDP epsilon at ``delta`` is <= ``epsilon``; >= :func:`R_zcdp`.

    >>> round(R_exact(epsilon=4, delta=1e-8), 4)
    0.5134
    >>> R_exact(epsilon=4, delta=1e-8) > R_zcdp(epsilon=4, delta=1e-8)
    True
    """
    epsilon = validate.positive("epsilon", epsilon)
    delta = validate.delta(delta)
    log_target = math.log(delta)

    def f(mu: float) -> float:
        d = gdp_delta(mu=mu, epsilon=epsilon)
        return (math.log(d) if d > 0 else -1e300) - log_target

    lo = math.sqrt(R_zcdp(epsilon=epsilon, delta=delta))  # f(lo) <= 0
    hi = max(2 * lo, 1e-3)
    while f(hi) < 0:
        lo, hi = hi, 2 * hi
    mu = optimize.brentq(f, lo, hi, xtol=1e-15, rtol=1e-14, maxiter=500) if f(lo) < 0 else lo
    return float(mu * mu)


def unused_budget(*, epsilon: float, delta: float) -> dict[str, float]:
    """``R_zcdp``, ``R_exact``, ``ratio = R_exact / R_zcdp``, ``unused_fraction = 1 - R_zcdp / R_exact``,
    ``epsilon_exact_at_R_zcdp`` (the epsilon a schedule spending ``R_zcdp`` achieves) and ``R_ma``.

    >>> u = unused_budget(epsilon=4, delta=1e-8)
    >>> round(u["ratio"], 3), round(u["epsilon_exact_at_R_zcdp"], 3)
    (1.307, 3.457)
    """
    rz = R_zcdp(epsilon=epsilon, delta=delta)
    rx = R_exact(epsilon=epsilon, delta=delta)
    return {
        "epsilon": float(epsilon),
        "delta": float(delta),
        "R_zcdp": rz,
        "R_exact": rx,
        "ratio": rx / rz,
        "unused_fraction": 1.0 - rz / rx,
        "epsilon_exact_at_R_zcdp": gdp_epsilon(mu=math.sqrt(rz), delta=delta),
        "R_ma": R_ma(epsilon=epsilon, delta=delta),
    }


#: The experiments' budget of Hong et al. (Sec. 5): (4, 1e-8)-DP, converted with
#: H Lemma C.3 to R = 2 rho (the paper prints 0.1963-zCDP and R = 0.3927). Computed, not typed.
PAPER_EPSILON: float = 4.0
PAPER_DELTA: float = 1e-8
R_PAPER: float = R_zcdp(epsilon=PAPER_EPSILON, delta=PAPER_DELTA)
