"""Privacy accounting: zCDP, (epsilon, delta)-DP and exact Gaussian DP of full-batch steps, and the
numerical accountants of subsampled ones.

A step adds Gaussian noise of standard deviation ``sigma x sensitivity`` (``sigma``: the noise
multiplier) and costs ``1/sigma^2`` of Hong et al.'s budget ``R``; the release is ``(R/2)``-zCDP,
so **R = 2 rho** (SPEC section 2). To (epsilon, delta):

* **zCDP** (the paper): ``rho = R/2`` and Bun & Steinke's conversion (Hong et al. 2022, FAccT,
  arXiv 2101.07413, Lemma C.3).
* **Exact (Gaussian DP)**: full-batch steps compose to one Gaussian mechanism with
  ``mu = sqrt(sum_t 1/sigma_t^2) = sqrt(R)`` (Dong, Roth & Su, arXiv 1905.02383v3, Cor. 3.3), whose
  exact profile is ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (ibid., Cor. 2.13).
  zCDP loses only in the final conversion, so the exact accountant can spend more.
* **Numerical** (subsampled steps): the paper's PSGD step cost (H Sec. 4.3), the RDP of the
  Poisson-subsampled Gaussian at integer orders (the ledger's and the planner's curve),
  dp-accounting's RDP and PLD accountants and their limits; :func:`epsilon_at_R` turns a budget R
  into epsilon by any accountant. dp-accounting is imported lazily.

H Sec. 4.1.3's printed inversion takes the wrong root of the quadratic: :func:`R_zcdp_as_printed`
evaluates it, :func:`dp_to_zcdp` derives the right one."""

from __future__ import annotations

import collections
import functools
import math
from typing import Sequence

import numpy as np
from scipy import optimize, special

from dpcompanion.core import validate

__all__ = ["zcdp_to_dp", "dp_to_zcdp", "R_from_rho", "rho_from_R", "R_zcdp", "R_zcdp_as_printed", "R_ma", "spent_R",
           "gdp_mu", "gdp_delta", "gdp_epsilon", "exact_delta", "exact_epsilon", "R_exact", "unused_budget",
           "psgd_step_cost", "step_cost", "psgd_R_prime", "accountant_epsilon", "RDP_ORDERS", "rdp_curve",
           "rdp_orders", "step_rdp", "rdp_epsilon", "rdp_epsilon_repeated", "rdp_per_step", "rdp_epsilon_of",
           "rdp_epsilon_curve", "rdp_orders_for", "calibrate_multiplier", "ACCOUNTANTS", "epsilon_at_R",
           "pld_interval", "PLD_MAX_R", "PLD_MIN_DELTA", "pld_delta", "R_accountant"]


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


def psgd_step_cost(*, sigma: float, sampling_rate: float = 1.0) -> float:
    """Cost of one step in R units under the paper's PSGD rule: ``p^2 / sigma^2``.

    Hong et al. 2022 Sec. 4.3, after Yu et al. 2019 Thm 3 (constant ``c`` dropped): ``sum_t p^2/sigma_t^2 = R``
    is ``sum_t 1/sigma_t^2 = R' = R/p^2``. Bookkeeping, not a guarantee (:func:`accountant_epsilon` is tight).

    >>> psgd_step_cost(sigma=2.0, sampling_rate=0.1)
    0.0025000000000000005
    """
    s = sigma_array(sigma)
    if s.size != 1:
        raise ValueError(f"sigma must be a single number here, got {s.size} values")
    return step_cost(float(s[0]), validate.sampling_rate(sampling_rate))


def step_cost(sigma: float, p: float) -> float:
    """:func:`psgd_step_cost` of validated numbers (``sigma`` > 0, ``p`` in (0, 1]).

    >>> step_cost(2.0, 1.0)
    0.25
    """
    return float(p * p / sigma**2)


def psgd_R_prime(*, R: float, sampling_rate: float) -> float:
    """The rescaled full-batch-equivalent budget ``R' = R / p^2`` (H Sec. 4.3).

    >>> round(psgd_R_prime(R=0.5, sampling_rate=0.1), 9)
    50.0
    """
    R = validate.positive("R", R)
    p = validate.sampling_rate(sampling_rate)
    return R / (p * p)


def _grouped(sigma: np.ndarray) -> list[tuple[float, int]]:
    """(sigma, count) pairs of a schedule, equal values grouped; inf (no release) dropped."""
    finite = sigma[np.isfinite(sigma)]
    values, counts = np.unique(finite, return_counts=True)
    return [(float(v), int(c)) for v, c in zip(values, counts)]


#: RDP orders of the ledger and the planner: the integer orders of dp-accounting's default list
#: (0.6.0), where the subsampled Gaussian's RDP has a closed form; with its fractional orders
#: dp-accounting's epsilon is at most ours.
RDP_ORDERS: np.ndarray = np.array(list(range(2, 64)) + [128, 256, 512, 1024], dtype=np.float64)


def _log_binomials(alpha: int) -> np.ndarray:
    k = np.arange(alpha + 1, dtype=np.float64)
    return special.gammaln(alpha + 1.0) - special.gammaln(k + 1.0) - special.gammaln(alpha - k + 1.0)


_LOG_BINOM = {int(a): _log_binomials(int(a)) for a in RDP_ORDERS}


def rdp_curve(*, sigma, sampling_rate: float = 1.0, orders=None) -> np.ndarray:
    """Composed RDP curve ``eps(alpha)`` of Poisson-subsampled Gaussian steps ``sigma`` (each finite and > 0)
    at integer ``orders`` (default :data:`RDP_ORDERS`). One step at integer order alpha (Mironov, Talwar &
    Zhang 2019, arXiv 1908.10530, Sec. 3.3; dp-accounting's ``_compute_log_a_int``):

        eps(alpha) = ln( sum_k C(alpha, k) (1-p)^(alpha-k) p^k exp((k^2 - k) / (2 sigma^2)) ) / (alpha - 1),

    ``alpha / (2 sigma^2)`` at p = 1 (H Lemma C.2). Curves add under composition.

    >>> c = rdp_curve(sigma=[2.0, 2.0])
    >>> bool(np.allclose(c, RDP_ORDERS / 4))
    True
    """
    return _rdp_curve(validate.noise_multipliers(sigma), validate.sampling_rate(sampling_rate), rdp_orders(orders))


def rdp_orders(orders=None) -> np.ndarray:
    """The RDP orders to use: :data:`RDP_ORDERS` by default, else integers >= 2 (validated).

    >>> rdp_orders([2, 3]).tolist()
    [2.0, 3.0]
    """
    if orders is None:
        return RDP_ORDERS
    o = np.asarray(orders, dtype=np.float64)
    if o.ndim != 1 or o.size == 0 or not np.all((o == np.floor(o)) & (o >= 2)):
        raise ValueError(f"orders must be integers >= 2, got {orders!r}"[:200])
    return o


#: Floor on ``ln(A_alpha - 1)`` of one step: below it ``A_alpha - 1`` is subnormal or 0 in float64, so
#: it is rounded *up* to ``e^-700`` and the step's RDP stays an upper bound instead of 0.
_LOG_A_MINUS_1_FLOOR = -700.0


def _rdp_curve(s: np.ndarray, p: float, ords: np.ndarray) -> np.ndarray:
    """:func:`rdp_curve` of validated inputs, as ``ln(1 + (A_alpha - 1))`` with ``A_alpha - 1 = sum_{k>=2}
    C(alpha, k) (1-p)^(alpha-k) p^k expm1((k^2 - k)/(2 sigma^2))``: a sum of positive terms, accurate
    however small (``A_alpha`` itself is within 1e-16 of 1 at small p and would round the RDP to 0)."""
    values, counts = np.unique(s, return_counts=True)
    counts = counts.astype(np.float64)
    if p == 1.0:
        return ords * float(np.sum(counts / (2.0 * values**2)))
    out = np.empty(ords.size)
    lp, l1p = math.log(p), math.log1p(-p)
    with np.errstate(over="ignore"):  # sigma above 1e154: 1/(2 sigma^2) is 0, the step adds the floor below
        inv2s2 = 1.0 / (2.0 * values**2)
    for j, a in enumerate(ords):
        ai = int(a)
        lb = _LOG_BINOM.get(ai)
        if lb is None:
            lb = _log_binomials(ai)
        k = np.arange(2, ai + 1, dtype=np.float64)  # k = 0, 1 add nothing to A - 1
        base = lb[2:] + (ai - k) * l1p + k * lp  # (alpha-1,)
        # chunks of distinct values keep the (values x k) matrix small
        tot = 0.0
        for i in range(0, values.size, 4096):
            y = (k * k - k)[None, :] * inv2s2[i:i + 4096, None]
            with np.errstate(divide="ignore"):  # y = 0 (sigma ~ 1e160): ln expm1(0) = -inf, a zero term
                x = base[None, :] + y + np.log(-np.expm1(-y))  # ln of the terms: ln expm1(y) = y + ln(1 - e^-y)
            m = x.max(axis=1)
            fin = np.isfinite(m)
            log_am1 = np.full(m.shape, -np.inf)
            log_am1[fin] = m[fin] + np.log(np.exp(x[fin] - m[fin, None]).sum(axis=1))
            log_a = np.logaddexp(0.0, np.maximum(log_am1, _LOG_A_MINUS_1_FLOOR))  # ln(1 + (A - 1)), accurately
            tot += float(np.dot(counts[i:i + 4096], log_a))
        out[j] = tot / (ai - 1)
    return out


def step_rdp(sigma: float, p: float, orders: tuple[float, ...] = tuple(RDP_ORDERS)) -> np.ndarray:
    """RDP curve of one step of validated numbers, cached per ``(sigma, p, orders)`` (the ledger's per-step call).

    >>> bool(np.allclose(step_rdp(2.0, 1.0), RDP_ORDERS / 8))
    True
    """
    return np.array(_rdp_step_cached(sigma, p, orders))


@functools.lru_cache(maxsize=4096)
def _rdp_step_cached(sigma: float, p: float, orders: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(_rdp_curve(np.array([sigma]), p, np.array(orders)))


def rdp_epsilon(*, orders, rdp, delta: float, check_order: bool = False) -> float:
    """epsilon at ``delta`` of a composed RDP curve (dp-accounting's ``compute_epsilon``, Balle et al. 2020's
    conversion). ``check_order``: raise if the optimum is the largest order (valid but loose).

    >>> e = rdp_epsilon(orders=RDP_ORDERS, rdp=4 * step_rdp(2.0, 1.0), delta=1e-5)
    >>> bool(accountant_epsilon(sigma=[2.0] * 4, delta=1e-5) <= e < 1.01 * accountant_epsilon(sigma=[2.0] * 4, delta=1e-5))
    True
    """
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    delta = validate.delta(delta)
    orders = np.asarray(orders, dtype=float)
    rdp = np.asarray(rdp, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        eps = float(compute_epsilon(orders, rdp, delta)[0])
    if check_order and eps > 0 and np.isfinite(eps) and _best_order(orders, rdp, delta) == len(orders) - 1:
        raise ValueError(f"epsilon {eps:.3g} is optimal at the largest RDP order {orders[-1]:g}: extend the orders")
    return eps


def rdp_epsilon_repeated(*, sigma: float, T: int, sampling_rate: float, delta: float, orders,
                         check_order: bool = False) -> float:
    """epsilon at ``delta`` of ``T`` steps at one ``sigma`` and sampling rate (one step's RDP times ``T``).

    >>> o = rdp_orders_for(sigma=2.0, T=100, sampling_rate=0.01, delta=1e-5)
    >>> round(rdp_epsilon_repeated(sigma=2.0, T=100, sampling_rate=0.01, delta=1e-5, orders=o), 4) == round(
    ...     rdp_epsilon(orders=o, rdp=100 * rdp_curve(sigma=[2.0], sampling_rate=0.01, orders=o), delta=1e-5), 4)
    True
    """
    return rdp_epsilon(orders=orders, rdp=int(T) * rdp_curve(sigma=[sigma], sampling_rate=sampling_rate, orders=orders),
                       delta=delta, check_order=check_order)


def _best_order(orders: np.ndarray, rdp: np.ndarray, delta: float) -> int:
    """Index of the order at which the improved conversion (Balle et al. 2020) is smallest."""
    vals = rdp + np.log1p(-1 / orders) - (math.log(delta) + np.log(orders)) / (orders - 1)
    return int(np.argmin(vals))


def rdp_per_step(*, sigma, sampling_rate: float = 1.0, orders=None) -> np.ndarray:
    """Per-step RDP ``(T, len(orders))``: row t is :func:`rdp_curve` of step t alone.

    >>> rdp_per_step(sigma=[2.0], orders=[2.0, 8.0]).tolist()
    [[0.25, 1.0]]
    """
    s = validate.noise_multipliers(sigma)
    p = validate.sampling_rate(sampling_rate)
    values, inverse = np.unique(s, return_inverse=True)
    ords = rdp_orders(orders)
    rows = np.stack([_rdp_curve(np.array([v]), p, ords) for v in values])
    return rows[inverse.reshape(-1)]


def rdp_epsilon_of(*, sigma, delta: float, sampling_rate: float = 1.0, orders=None) -> float:
    """RDP epsilon at ``delta`` of Poisson-subsampled Gaussian steps ``sigma`` (0 for no step).

    >>> rdp_epsilon_of(sigma=[], delta=1e-5)
    0.0
    >>> round(rdp_epsilon_of(sigma=[2.0] * 4, delta=1e-5), 4)
    4.7527
    """
    if np.size(sigma) == 0:
        return 0.0
    ords = rdp_orders(orders)
    return rdp_epsilon(orders=ords, rdp=rdp_curve(sigma=sigma, sampling_rate=sampling_rate, orders=ords), delta=delta)


def rdp_epsilon_curve(*, sigma, sampling_rate: float, delta: float, at: Sequence[int] | None = None,
                      orders=None) -> np.ndarray:
    """epsilon at ``delta`` after each step count in ``at`` (1-based; default every step) of the steps ``sigma``.

    >>> c = rdp_epsilon_curve(sigma=[2.0] * 4, sampling_rate=1.0, delta=1e-5, at=[0, 4])
    >>> float(c[0]), bool(c[1] == rdp_epsilon_of(sigma=[2.0] * 4, delta=1e-5))
    (0.0, True)
    """
    ords = rdp_orders(orders)
    cum = np.cumsum(rdp_per_step(sigma=sigma, sampling_rate=sampling_rate, orders=ords), axis=0)
    idx = np.arange(1, len(cum) + 1) if at is None else np.asarray(at, dtype=int)
    return np.array([rdp_epsilon(orders=ords, rdp=cum[i - 1], delta=delta) if i > 0 else 0.0 for i in idx])


def rdp_orders_for(*, sigma: float, T: int, sampling_rate: float, delta: float) -> np.ndarray:
    """Integer orders 2..A, A about twice the optimal order of ``T`` steps at ``sigma`` (32 to 256):
    the optimum of a nearby schedule stays inside, and :func:`rdp_per_step` costs grow with A^2.

    >>> rdp_orders_for(sigma=1.0, T=100, sampling_rate=0.01, delta=1e-5)[[0, -1]].tolist()
    [2.0, 32.0]
    """
    o = np.arange(2, 257.0)
    r = T * rdp_curve(sigma=[sigma], sampling_rate=sampling_rate, orders=o)
    best = int(o[_best_order(o, r, validate.delta(delta))])
    return np.arange(2, min(256, max(32, 2 * best + 8)) + 1, dtype=np.float64)


def calibrate_multiplier(*, alpha, sampling_rate: float, delta: float, epsilon_target: float, rtol: float = 1e-12,
                         bracket: tuple[float, float] | None = None, orders=None) -> float:
    """The ``z`` for which steps ``z alpha_t`` reach ``epsilon_target`` at ``delta`` by the RDP accountant
    (to ``rtol`` in z; Wu et al.'s protocol: ADP-SGD's allocation at DP-SGD's epsilon).

    >>> z = calibrate_multiplier(alpha=[1.0] * 10, sampling_rate=1.0, delta=1e-5, epsilon_target=5.0)
    >>> round(rdp_epsilon_of(sigma=[z] * 10, delta=1e-5), 9)
    5.0
    """
    a = np.asarray(alpha, dtype=np.float64)
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a) & (a > 0)):
        raise ValueError("alpha must be a non-empty 1-D sequence of finite numbers > 0")
    if not (math.isfinite(epsilon_target) and epsilon_target > 0):
        raise ValueError(f"epsilon_target must be finite and > 0, got {epsilon_target}")
    ords = rdp_orders(orders)
    p = validate.sampling_rate(sampling_rate)
    delta = validate.delta(delta)

    def f(log_z: float) -> float:
        r = _rdp_curve(math.exp(log_z) * a, p, ords)
        return math.log(rdp_epsilon(orders=ords, rdp=r, delta=delta)) - math.log(epsilon_target)

    lo, hi = (math.log(1e-2), math.log(1e2)) if bracket is None else (math.log(bracket[0]), math.log(bracket[1]))
    while f(lo) < 0:
        lo -= 1.0
    while f(hi) > 0:
        hi += 1.0
    return float(math.exp(optimize.brentq(f, lo, hi, xtol=rtol, rtol=rtol, maxiter=500)))


def accountant_epsilon(
    *,
    sigma,
    delta: float,
    sampling_rate=1.0,
    accountant: str = "rdp",
    value_discretization_interval: float = 1e-4,
) -> float:
    """epsilon at ``delta`` of Poisson-subsampled Gaussian steps ``sigma`` by dp-accounting's RDP or PLD
    accountant (add/remove-one neighbours). ``sampling_rate``: one number or one per step. Equal
    multipliers compose as one event with a count, so the cost grows with the number of distinct ones.
    PLD is tight up to its (pessimistic) discretisation; RDP is an upper bound.

    >>> round(accountant_epsilon(sigma=[2.0] * 4, delta=1e-5, accountant="pld"), 2)
    4.38
    """
    import dp_accounting as dpa

    s = sigma_array(sigma)
    delta = validate.delta(delta)
    if np.ndim(sampling_rate) == 0:
        groups = [(v, validate.sampling_rate(sampling_rate), c) for v, c in _grouped(s)]
    else:  # one rate per step (a ledger's mixed history)
        rates = np.asarray(sampling_rate, dtype=np.float64)
        if rates.shape != s.shape:
            raise ValueError(f"sampling_rate must be one number or one per step ({s.size}), got shape {rates.shape}")
        keep = np.isfinite(s)
        pairs = collections.Counter(zip(s[keep].tolist(), rates[keep].tolist()))
        groups = [(v, validate.sampling_rate(r), c) for (v, r), c in sorted(pairs.items())]
    if accountant == "rdp":
        acc = dpa.rdp.RdpAccountant()
    elif accountant == "pld":
        pld_delta(delta)
        acc = dpa.pld.PLDAccountant(value_discretization_interval=value_discretization_interval)
    else:
        raise ValueError(f"accountant must be 'rdp' or 'pld', got {accountant!r}")
    if not groups:
        return 0.0
    for value, p, count in groups:
        event = dpa.GaussianDpEvent(value)
        if p < 1.0:
            event = dpa.PoissonSampledDpEvent(p, event)
        acc.compose(event, count)
    eps = float(acc.get_epsilon(delta))
    if accountant == "rdp" and eps == 0.0 and any(p < 1.0 for _, p, _ in groups):
        # dp-accounting sums A_alpha (within 1e-16 of 1 at small p), which can round its RDP below 0
        # and epsilon to 0: then our curve (a sum of positive terms) decides.
        ords = RDP_ORDERS
        curve = sum(c * _rdp_curve(np.array([v]), p, ords) for v, p, c in groups)
        eps = rdp_epsilon(orders=ords, rdp=curve, delta=delta)
    return eps


def R_accountant(*, epsilon: float, delta: float, accountant: str = "rdp") -> float:
    """Largest full-batch budget R whose dp-accounting epsilon (RDP or PLD) is <= ``epsilon`` (one Gaussian
    of multiplier ``1/sqrt(R)``, root-found to relative 1e-7); between ``R_zcdp`` and ``R_exact``.

    >>> rz, rr, rx = (R_zcdp(epsilon=4, delta=1e-8), R_accountant(epsilon=4, delta=1e-8),
    ...               R_exact(epsilon=4, delta=1e-8))
    >>> bool(rz < rr < rx), round(rr, 3)
    (True, 0.465)
    """
    epsilon = validate.positive("epsilon", epsilon)
    delta = validate.delta(delta)
    if accountant not in ("rdp", "pld"):
        raise ValueError(f"accountant must be 'rdp' or 'pld', got {accountant!r}")
    lo = R_zcdp(epsilon=epsilon, delta=delta) * 0.99  # RDP/PLD are never looser than zCDP
    hi = R_exact(epsilon=epsilon, delta=delta) * 1.01  # nor tighter than exact
    if accountant == "pld":
        pld_delta(delta)
    if accountant == "pld" and lo > PLD_MAX_R:
        raise ValueError(f"epsilon must be small enough that R <= {PLD_MAX_R:g} for the pld accountant, got epsilon = "
                         f"{epsilon:g} at delta = {delta:g} (R about {lo:.3g}); use the exact or zcdp accountant")
    if accountant == "pld":
        hi = min(hi, PLD_MAX_R)

    def f(log_R: float) -> float:
        R = math.exp(log_R)
        return epsilon_at_R(R=R, delta=delta, accountant=accountant) - epsilon

    a, b = math.log(lo), math.log(hi)
    try:
        return float(math.exp(optimize.brentq(f, a, b, xtol=1e-7)))
    except ValueError:
        # RDP at fixed orders is looser than zCDP where the best order lies outside them: widen the
        # bracket downwards (epsilon -> 0 as R -> 0)
        for _ in range(200):
            if f(a) <= 0:
                break
            a -= math.log(4.0)
        if f(b) < 0:  # only the pld accountant's capped R comes here
            raise ValueError(f"epsilon must be small enough that R <= {PLD_MAX_R:g} for the pld accountant, got "
                             f"epsilon = {epsilon:g} at delta = {delta:g}; use the exact or zcdp accountant") from None
        return float(math.exp(optimize.brentq(f, a, b, xtol=1e-7)))


#: Accountants that turn noise into (epsilon, delta) (see :mod:`dpcompanion.theory.budget`).
ACCOUNTANTS: tuple[str, ...] = ("zcdp", "exact", "rdp", "pld")


def epsilon_at_R(*, R: float, delta: float, accountant: str) -> float:
    """epsilon at ``delta`` of full-batch Gaussian steps spending ``R = sum_t 1/sigma_t^2`` (one Gaussian
    of multiplier ``1/sqrt(R)``), by ``accountant``.

    >>> round(epsilon_at_R(R=1.0, delta=1e-5, accountant="zcdp"), 4), round(epsilon_at_R(R=1.0, delta=1e-5, accountant="exact"), 4)
    (5.2985, 4.3772)
    """
    validate.choice("accountant", accountant, ACCOUNTANTS)
    if R == 0.0:
        return 0.0
    if accountant == "zcdp":
        return zcdp_to_dp(rho=rho_from_R(R=R), delta=delta)
    if accountant == "exact":
        return gdp_epsilon(mu=math.sqrt(R), delta=delta)
    if accountant == "pld":
        return accountant_epsilon(sigma=[1 / math.sqrt(R)], delta=delta, accountant="pld",
                                  value_discretization_interval=pld_interval(R=R))
    return accountant_epsilon(sigma=[1 / math.sqrt(R)], delta=delta, accountant=accountant)


#: Full-batch budgets R up to which the PLD accountant keeps its default discretisation (1e-4);
#: above, the interval grows with R so that the PLD's time and memory stay bounded (the result
#: stays an upper bound).
PLD_R0: float = 10.0

#: Largest full-batch R the PLD accountant is asked about (epsilon about 5 x 10^5 at delta 1e-5):
#: beyond it dp-accounting's discretisation overflows (``math range error``).
PLD_MAX_R: float = 1e6


#: Smallest delta the PLD accountant is asked about: dp-accounting truncates the privacy-loss tails
#: at mass 1e-15 and adds it to delta, so its epsilon is ``inf`` below about 1e-16; at 1e-14 it is
#: within 0.2 % of exact.
PLD_MIN_DELTA: float = 1e-14


def pld_delta(delta: float) -> float:
    """``delta`` validated for the PLD accountant: in ``[PLD_MIN_DELTA, 1)``.

    >>> pld_delta(1e-5)
    1e-05
    """
    delta = validate.delta(delta)
    if delta < PLD_MIN_DELTA:
        raise ValueError(f"delta must be at least {PLD_MIN_DELTA:g} for the pld accountant (dp-accounting truncates "
                         f"the privacy loss tails at 1e-15), got {delta:g}; use the exact, rdp or zcdp accountant")
    return delta


def pld_interval(*, R: float) -> float:
    """PLD discretisation for one Gaussian of budget ``R``: 1e-4 up to :data:`PLD_R0`, then ``1e-4 R / PLD_R0``;
    refused above :data:`PLD_MAX_R`.

    >>> pld_interval(R=1.0), pld_interval(R=1000.0)
    (0.0001, 0.01)
    """
    R = validate.positive("R", R)
    if R > PLD_MAX_R:
        raise ValueError(f"R must be at most {PLD_MAX_R:g} for the pld accountant (its discretisation overflows beyond), "
                         f"got {R:g}; use the exact or zcdp accountant")
    return 1e-4 * max(1.0, R / PLD_R0)
