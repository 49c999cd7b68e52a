"""Privacy accounting of Wu et al. (ADP-SGD, arXiv 2110.07435): Thm 4.1's B_delta and noise, the advanced
composition of Lemma 2.2, and the moments-accountant epsilons of Sec. 6 (footnote 3).
dp-accounting is imported lazily."""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from dpcompanion.core import validate

__all__ = ["CLASSIC_ORDERS", "moments_epsilon", "adp_epsilon_bar", "adp_B_delta", "adp_sigma2",
           "advanced_composition", "w_moments_epsilons", "W_EPSILON_BARS", "W_SEC6"]


def adp_B_delta(*, T: int, n: int, delta: float, batch_size: int = 1) -> float:
    """``B_delta = log(16 T m / (n delta)) log(1.25 / delta)`` of Wu et al., ``n`` training samples,
    ``m = batch_size`` (Thm 4.1, Eq. 6 has ``m = 1``; Thm A.1, Eq. 13 and 18 carry ``m``).

    >>> round(adp_B_delta(T=11700, n=50000, delta=1e-5), 2)
    150.61
    """
    T = validate.integer("T", T)
    n = validate.integer("n", n)
    m = validate.integer("batch_size", batch_size)
    delta = validate.delta(delta)
    return math.log(16 * T * m / (n * delta)) * math.log(1.25 / delta)


def adp_sigma2(*, alpha, G: float, n: int, epsilon: float, delta: float, batch_size: int = 1) -> float:
    """ADP-SGD's noise variance (Wu et al., Thm 4.1, Eq. 6 / App. C.1 Eq. 18):

        sigma^2 = (16 G)^2 B_delta sum_{t=1}^T 1/alpha_t^2 / (n^2 epsilon^2),

    ``T = len(alpha)``; step t adds ``alpha_t c_t``, ``c_t ~ N(0, sigma^2 I)``. ``alpha_t = 1``: Thm A.1.

    >>> round(adp_sigma2(alpha=[1.0] * 100, G=1.0, n=1000, epsilon=1.0, delta=1e-5), 4)
    3.6002
    """
    a = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a) & (a > 0)):
        raise ValueError(f"alpha must be a non-empty sequence of finite numbers > 0, got {alpha!r}"[:200])
    G = validate.positive("G", G)
    epsilon = validate.positive("epsilon", epsilon)
    B = adp_B_delta(T=int(a.size), n=n, delta=delta, batch_size=batch_size)
    return (16 * G) ** 2 * B * float(np.sum(1.0 / a**2)) / (n**2 * epsilon**2)


def adp_epsilon_bar(*, sigma: float, T: int, N: int, batch_size: int, clip: float, delta: float) -> float:
    """Wu et al.'s epsilon_bar of ``T`` DP-SGD steps at multiplier ``sigma`` (on a batch's clipped sum; the
    noise on the mean is ``sigma C / m``): Thm 4.1 (alpha_t = 1, G = C) solved for epsilon, over C_epsilon = 16.

    >>> s2 = adp_sigma2(alpha=[1.0] * 100, G=1.0, n=1000, epsilon=16 * 0.5, delta=1e-5)
    >>> round(adp_epsilon_bar(sigma=s2 ** 0.5 * 10, T=100, N=1000, batch_size=10, clip=1.0, delta=1e-5), 12)
    0.5
    """
    s2_at_1 = adp_sigma2(alpha=np.ones(int(T)), G=clip, n=int(N), epsilon=1.0, delta=delta)
    return math.sqrt(s2_at_1) / (sigma * clip / batch_size) / 16.0


def advanced_composition(*, epsilons, deltas, delta_prime: float) -> tuple[float, float]:
    """Extended advanced composition for heterogeneous ``(eps_i, delta_i)``, ``eps_i in (0, 1)`` (Wu et al.,
    Lemma 2.2; Dwork-Rothblum-Vadhan's for equal ``eps_i``, W Lemma A.2):

        eps~ = sqrt(2 ln(1/delta') sum eps_i^2) + sum eps_i (e^eps_i - 1)/(e^eps_i + 1),
        delta~ = 1 - prod (1 - delta_i) + delta'.

    >>> e, d = advanced_composition(epsilons=[0.1] * 10, deltas=[1e-6] * 10, delta_prime=1e-5)
    >>> round(e, 4), round(d * 1e5, 6)
    (1.5674, 1.999996)
    """
    e = np.atleast_1d(np.asarray(epsilons, dtype=np.float64))
    d = np.atleast_1d(np.asarray(deltas, dtype=np.float64))
    if e.shape != d.shape or e.ndim != 1 or e.size == 0:
        raise ValueError(f"epsilons and deltas must be 1-D of equal non-zero length, got {e.shape} and {d.shape}")
    if not np.all((e > 0) & (e < 1)):
        raise ValueError(f"every epsilon_i must be in (0, 1) (W Lemma 2.2), got {e[~((e > 0) & (e < 1))][0]}")
    if not np.all((d > 0) & (d < 1)):
        raise ValueError(f"every delta_i must be in (0, 1), got {d[~((d > 0) & (d < 1))][0]}")
    dp = validate.delta(delta_prime)
    eps = math.sqrt(2 * math.log(1 / dp) * float(np.sum(e**2))) + float(np.sum(e * np.tanh(e / 2)))
    delta = float(-np.expm1(np.sum(np.log1p(-d)))) + dp
    return eps, delta


#: The epsilon_bar values of Wu et al.'s experiments (Sec. 6).
W_EPSILON_BARS: tuple[float, ...] = (0.8, 1.2, 1.6, 3.2, 6.4)
#: The setting of Wu et al.'s footnote 3 (Sec. 6): T, batch, CIFAR-10's N, clip norm and delta.
W_SEC6: dict[str, float] = {"T": 11700, "batch_size": 256, "N": 50000, "clip_norm": 1.0, "delta": 1e-5}


#: TF-Privacy's RDP orders of 2019-2020 (compute_dp_sgd_privacy), used with the classic conversion
CLASSIC_ORDERS = tuple([1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)))


def moments_epsilon(z: float, *, q: float, T: int, delta: float, conversion: str = "improved") -> float:
    """Epsilon at ``delta`` of ``T`` Poisson-subsampled Gaussian steps (rate ``q``, multiplier ``z``) by
    dp-accounting's RDP accountant: ``"improved"`` its own conversion and orders; ``"classic"``
    ``min_a rdp(a) + ln(1/delta)/(a-1)`` on :data:`CLASSIC_ORDERS` (older moments-accountant code).

    >>> round(moments_epsilon(1.1, q=256 / 60000, T=int(60 * 60000 / 256), delta=1e-5, conversion="classic"), 2)
    3.01
    """
    import dp_accounting as dpa

    if conversion not in ("improved", "classic"):
        raise ValueError(f"conversion must be 'improved' or 'classic', got {conversion!r}")
    event = dpa.PoissonSampledDpEvent(float(q), dpa.GaussianDpEvent(float(z)))
    if conversion == "improved":
        acc = dpa.rdp.RdpAccountant()
        acc.compose(event, int(T))
        return float(acc.get_epsilon(delta))
    acc = dpa.rdp.RdpAccountant(list(CLASSIC_ORDERS))
    acc.compose(event, int(T))
    orders = np.asarray(CLASSIC_ORDERS)
    return float(np.min(np.asarray(acc.rdp) - math.log(delta) / (orders - 1)))


def w_moments_epsilons(
    *,
    epsilon_bar: Iterable[float] = W_EPSILON_BARS,
    T: int = W_SEC6["T"],
    batch_size: int = W_SEC6["batch_size"],
    N: int = W_SEC6["N"],
    clip_norm: float = W_SEC6["clip_norm"],
    delta: float = W_SEC6["delta"],
    C_epsilon: float = 16.0,
    b_delta: str = "main",
    conversion: str = "improved",
) -> list[dict[str, float]]:
    """Recompute Wu et al.'s moments-accountant epsilons (Sec. 6 footnote 3). Per ``epsilon_bar``:
    ``epsilon = C_epsilon epsilon_bar``, DP-SGD's ``sigma`` by :func:`adp_sigma2` (``b_delta="main"``: Eq. 6,
    ``"appendix"``: Eq. 13), added to the batch *mean*, so the multiplier on the sum is
    ``z = sigma m / clip_norm``; then ``T`` steps at rate ``m/N`` by :func:`moments_epsilon`.

    Returns per epsilon_bar ``epsilon_bar, epsilon, sigma, noise_multiplier, epsilon_accountant``
    (the paper quotes 0.29, 0.43, 0.57, 1.23, 3.24).

    >>> [round(r["epsilon_accountant"], 2) for r in w_moments_epsilons(epsilon_bar=[0.8])]
    [0.24]
    """
    T = validate.integer("T", T)
    m = validate.integer("batch_size", batch_size)
    N = validate.integer("N", N)
    if m > N:
        raise ValueError(f"batch_size must be <= N ({N}), got {m}")
    clip_norm = validate.positive("clip_norm", clip_norm)
    C_epsilon = validate.positive("C_epsilon", C_epsilon)
    if b_delta not in ("main", "appendix"):
        raise ValueError(f"b_delta must be 'main' or 'appendix', got {b_delta!r}")
    if conversion not in ("improved", "classic"):
        raise ValueError(f"conversion must be 'improved' or 'classic', got {conversion!r}")
    out = []
    for eb in epsilon_bar:
        eb = validate.positive("epsilon_bar", eb)
        eps = C_epsilon * eb
        B = adp_B_delta(T=T, n=N, delta=delta, batch_size=m if b_delta == "appendix" else 1)
        sigma = 16 * clip_norm * math.sqrt(B * T) / (N * eps)
        z = sigma * m / clip_norm
        e_acc = moments_epsilon(z, q=m / N, T=T, delta=delta, conversion=conversion)
        out.append(
            {"epsilon_bar": eb, "epsilon": eps, "sigma": sigma, "noise_multiplier": z, "epsilon_accountant": e_acc}
        )
    return out
