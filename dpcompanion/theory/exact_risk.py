"""Exact expected excess risk of private gradient descent (PGD) on a quadratic loss.

For ``f(theta) = 1/2 (theta - theta*)^T H (theta - theta*) + f*``, ``H = U diag(lambda) U^T`` PSD, PGD
(Hong et al. 2022 (FAccT, arXiv 2101.07413) Eq. (1), Algorithm 1)
``theta_{t+1} = theta_t - eta_t (grad f(theta_t) + G sigma_t v_t / N)``, ``v_t ~ N(0, I_D)``, is linear in
the noise. With ``e_t = U^T (theta_t - theta*)`` and ``a_{s,i} = 1 - eta_s lambda_i``, each final
coordinate is Gaussian with mean ``m_i = (prod_s a_{s,i}) e_{1,i}`` and variance
``s_i^2 = (G/N)^2 sum_t eta_t^2 sigma_t^2 prod_{s>t} a_{s,i}^2``, so

    E[f(theta_{T+1})] - f* = 1/2 sum_i lambda_i (m_i^2 + s_i^2)
        = 1/2 sum_i lambda_i prod_s a_{s,i}^2 e_{1,i}^2 + sum_t sigma_t^2 q_t,

    q_t = (eta_t G / N)^2 sum_i (lambda_i / 2) prod_{s=t+1}^T (1 - eta_s lambda_i)^2,

the exact *influence* of step t's noise (what Hong et al. estimate by retraining, the ICLR submission,
App. D, Fig. 3 middle). The variance is ``sum_i lambda_i^2 (s_i^4 / 2 + m_i^2 s_i^2)``.

Thm 4.1 (the FAccT version, proof D.1) bounds it for ``eta = 1/M`` by ``gamma^T (f(theta_1) - f*) +
sum_t gamma^{T-t} (D G^2 / (2 M N^2)) sigma_t^2``, ``M = max lambda``, ``mu = min lambda``,
``gamma = 1 - mu/M``: termwise ``lambda_i (1 - lambda_i/M)^{2k} <= M gamma^k`` and
``(1 - lambda_i/M)^{2T} <= gamma^T``, so the exact value never exceeds the bound."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpcompanion.core import validate
from dpcompanion.theory import schedules
from dpcompanion.theory.bounds import gd

__all__ = ["SCHEDULE_KINDS", "compare_with_bound", "deterministic_excess_risk", "excess_risk_variance",
           "expected_excess_risk", "noise_influence", "pl_constants", "squared_loss_quadratic", "schedule_of",
           "spectrum"]

#: schedule kinds compared by :func:`compare_with_bound`
SCHEDULE_KINDS = ("uniform", "gd-dynamic", "exponential")


def _steps(eta: Any, T: int) -> np.ndarray:
    """Step sizes eta_1..eta_T (T may be 0: the empty run)."""
    e = np.asarray(eta, dtype=float)
    if e.ndim == 0:
        e = np.full(T, float(e))
    if e.shape != (T,):
        raise ValueError(f"eta must be a scalar or have length T = {T}, got shape {e.shape}")
    return validate.positive_array("eta", e) if T else e


def _offset(offset: Any, D: int) -> np.ndarray:
    c = np.asarray(offset, dtype=float)
    if c.shape != (D,):
        raise ValueError(f"offset must have one entry per eigenvalue ({D}), got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError("offset must be finite")
    return c


def _tail_products(lam: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """P[t, i] = prod_{s=t+1}^{T} (1 - eta_s lambda_i)^2 for t = 0..T (row 0: the full product; row T: ones),
    a reversed cumulative product of squares."""
    T = eta.size
    a2 = (1.0 - eta[:, None] * lam[None, :]) ** 2  # (T, D), row s-1 = step s
    P = np.ones((T + 1, lam.size))
    if T:
        with np.errstate(over="ignore"):
            P[:T] = np.cumprod(a2[::-1], axis=0)[::-1]
    return P


def noise_influence(*, eigenvalues, eta, T: int, clip_norm: float, N: int) -> np.ndarray:
    """Exact influence ``q_t = (eta_t G/N)^2 sum_i lambda_i/2 prod_{s>t} (1 - eta_s lambda_i)^2`` (t = 1..T)
    of step t's noise variance on ``E[f(theta_{T+1})]``, for Hessian eigenvalues ``eigenvalues``, step
    ``eta`` (scalar or per-step), ``G = clip_norm`` and ``N`` samples; compare Thm 4.1's ``gamma^{T-t}``.

    >>> q = noise_influence(eigenvalues=[1.0, 0.5], eta=0.5, T=3, clip_norm=2.0, N=4)
    >>> [round(float(v), 6) for v in q]
    [0.006897, 0.016602, 0.046875]
    >>> # last step: (eta G/N)^2 * sum(lambda)/2 = 0.0625 * 0.75
    >>> float(q[-1]) == 0.0625 * 0.75
    True
    """
    lam = validate.positive_array("eigenvalues", eigenvalues, allow_zero=True)
    T = validate.integer("T", T, minimum=0)
    e = _steps(eta, T)
    G = validate.positive("clip_norm", clip_norm)
    N = validate.positive("N", N)
    P = _tail_products(lam, e)[1:]  # row t-1 = prod_{s>t}
    return (e * G / N) ** 2 * (P @ (lam / 2.0))


def deterministic_excess_risk(*, eigenvalues, offset, eta, T: int) -> float:
    """Noiseless excess risk ``1/2 sum_i lambda_i prod_s (1 - eta_s lambda_i)^2 e_{1,i}^2`` after T steps
    (``offset``: ``theta_1 - theta*`` in the eigenbasis of H).

    >>> deterministic_excess_risk(eigenvalues=[2.0], offset=[1.0], eta=0.25, T=2)
    0.0625
    >>> deterministic_excess_risk(eigenvalues=[2.0], offset=[1.0], eta=0.25, T=0)  # f(theta_1) - f*
    1.0
    """
    lam = validate.positive_array("eigenvalues", eigenvalues, allow_zero=True)
    T = validate.integer("T", T, minimum=0)
    e = _steps(eta, T)
    c = _offset(offset, lam.size)
    P0 = _tail_products(lam, e)[0]
    return float(0.5 * np.sum(lam * P0 * c**2))


def expected_excess_risk(*, eigenvalues, offset, eta, sigma, clip_norm: float, N: int) -> float:
    """Exact ``E[f(theta_{T+1})] - f*`` of PGD on a quadratic (T = len(sigma)): what Thm 4.1 bounds.

    >>> expected_excess_risk(eigenvalues=[2.0], offset=[1.0], eta=0.25, sigma=[1.0, 1.0], clip_norm=1.0, N=1)
    0.140625
    >>> # = 1/2*2*(1/2)^4 + (1/4)^2*(1/4) + (1/4)^2: deterministic, step 1, step 2
    >>> # noiseless schedule = gradient descent
    >>> expected_excess_risk(eigenvalues=[2.0], offset=[1.0], eta=0.25, sigma=[0.0, 0.0], clip_norm=1.0, N=1)
    0.0625
    """
    s = validate.positive_array("sigma", sigma, allow_zero=True)
    q = noise_influence(eigenvalues=eigenvalues, eta=eta, T=s.size, clip_norm=clip_norm, N=N)
    det = deterministic_excess_risk(eigenvalues=eigenvalues, offset=offset, eta=eta, T=s.size)
    return float(det + np.sum(q * s**2))


def excess_risk_variance(*, eigenvalues, offset, eta, sigma, clip_norm: float, N: int) -> float:
    """Exact variance of ``f(theta_{T+1}) - f*``: ``sum_i lambda_i^2 (s_i^4/2 + m_i^2 s_i^2)`` (module docstring).

    >>> # one coordinate, no initial offset: f = lambda/2 * s^2 * chi2_1, Var = lambda^2 s^4 / 2
    >>> v = excess_risk_variance(eigenvalues=[2.0], offset=[0.0], eta=0.5, sigma=[1.0], clip_norm=1.0, N=1)
    >>> v == 2.0**2 * 0.25**2 / 2
    True
    """
    lam = validate.positive_array("eigenvalues", eigenvalues, allow_zero=True)
    s = validate.positive_array("sigma", sigma, allow_zero=True)
    T = s.size
    e = _steps(eta, T)
    c = _offset(offset, lam.size)
    G = validate.positive("clip_norm", clip_norm)
    N = validate.positive("N", N)
    P = _tail_products(lam, e)
    m2 = P[0] * c**2
    s2 = (G / N) ** 2 * ((e * s) ** 2 @ P[1:])
    return float(np.sum(lam**2 * (s2**2 / 2.0 + m2 * s2)))


def pl_constants(*, eigenvalues, offset, clip_norm: float, N: int, R: float) -> dict[str, float]:
    """The constants of Hong et al. 2022 (the FAccT version) Eq. (4)-(6) for a quadratic loss: ``M = max
    lambda``, ``mu = min lambda`` (> 0), ``kappa``, ``gamma = 1 - 1/kappa``, ``D``, ``G = clip_norm``,
    ``initial_gap = f(theta_1) - f*``, ``alpha = D G^2 / (2 R M N^2 initial_gap)`` and ``eta = 1/M``.

    >>> c = pl_constants(eigenvalues=[4.0, 1.0], offset=[1.0, 0.0], clip_norm=1.0, N=10, R=0.5)
    >>> c["kappa"], c["gamma"], c["initial_gap"], c["alpha"]
    (4.0, 0.75, 2.0, 0.0025)
    """
    lam = validate.positive_array("eigenvalues", eigenvalues, allow_zero=True)
    c = _offset(offset, lam.size)
    G = validate.positive("clip_norm", clip_norm)
    N = validate.positive("N", N)
    R = validate.positive("R", R)
    M, mu = float(lam.max()), float(lam.min())
    if mu <= 0:
        raise ValueError(f"the smallest eigenvalue (PL constant mu) must be > 0, got {mu!r}")
    gap = float(0.5 * np.sum(lam * c**2))
    if gap <= 0:
        raise ValueError("offset must be non-zero: f(theta_1) - f* = 0 makes ERUB undefined")
    D = lam.size
    return {
        "M": M,
        "mu": mu,
        "kappa": M / mu,
        "gamma": 1.0 - mu / M,
        "eta": 1.0 / M,
        "D": float(D),
        "G": G,
        "N": N,
        "R": R,
        "initial_gap": gap,
        "alpha": D * G**2 / (2.0 * R * M * N**2 * gap),
    }


def squared_loss_quadratic(*, features, targets, theta_init) -> dict[str, Any]:
    """The quadratic of ``f(theta) = 1/(2N) sum_n (x_n^T theta - y_n)^2`` (the ICLR submission, App. D, on
    MNIST35): ``eigenvalues`` of ``H = X^T X / N``, eigenvectors ``basis``, minimum-norm ``theta_star``,
    ``f_star`` and ``offset = basis^T (theta_init - theta_star)``; each eigenvector's sign is fixed (its
    largest-magnitude entry positive), so the offset does not depend on the LAPACK build.

    >>> X = np.array([[1.0, 0.0], [0.0, 2.0]]); y = np.array([1.0, 2.0])
    >>> q = squared_loss_quadratic(features=X, targets=y, theta_init=np.zeros(2))
    >>> q["eigenvalues"].tolist(), q["theta_star"].round(12).tolist(), round(q["f_star"], 12)
    ([0.5, 2.0], [1.0, 1.0], 0.0)
    """
    X = np.asarray(features, dtype=float)
    y = np.asarray(targets, dtype=float)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"features must be (N, D) and targets (N,), got {X.shape} and {y.shape}")
    th0 = np.asarray(theta_init, dtype=float)
    if th0.shape != (X.shape[1],):
        raise ValueError(f"theta_init must have shape ({X.shape[1]},), got {th0.shape}")
    N = X.shape[0]
    lam, U = np.linalg.eigh(X.T @ X / N)
    lam = np.clip(lam, 0.0, None)
    # LAPACK may return any eigenvector's sign, and does differently across machines: fix it
    # (largest-magnitude entry positive, as sklearn's svd_flip) so the stored offset is reproducible
    U = U * np.where(U[np.abs(U).argmax(axis=0), np.arange(U.shape[1])] < 0, -1.0, 1.0)
    theta_star = np.linalg.lstsq(X, y, rcond=None)[0]
    f_star = float(0.5 * np.mean((X @ theta_star - y) ** 2))
    return {
        "eigenvalues": lam,
        "basis": U,
        "theta_star": theta_star,
        "f_star": f_star,
        "offset": U.T @ (th0 - theta_star),
    }


def spectrum(*, kappa: float, D: int, M: float = 1.0) -> np.ndarray:
    """``D`` eigenvalues spaced geometrically from ``M / kappa`` to ``M``.

    >>> spectrum(kappa=100.0, D=3).tolist()
    [0.01, 0.1, 1.0]
    """
    kappa = validate.positive("kappa", kappa)
    if kappa < 1:
        raise ValueError(f"kappa must be >= 1, got {kappa!r}")
    if isinstance(D, bool) or not isinstance(D, (int, np.integer)) or D < 1:
        raise ValueError(f"D must be a positive integer, got {D!r}")
    M = validate.positive("M", M)
    if D == 1:
        return np.array([M])
    return M * np.geomspace(1.0 / kappa, 1.0, D)


def schedule_of(kind: str, *, T: int, R: float, kappa: float) -> np.ndarray:
    """The schedules of SPEC H-X-EER: ``uniform`` (H Thm 4.2), ``gd-dynamic`` (H Thm 4.4) and ``exponential``
    (Yu et al. 2019; the ICLR submission, App. D) with ``rate = ln(10) / (T - 1)`` (noise falls tenfold).

    >>> s = schedule_of("exponential", T=5, R=1.0, kappa=10.0)
    >>> round(float(s[0] / s[-1]), 9), round(float(np.sum(1 / s**2)), 12)
    (10.0, 1.0)
    """
    if kind == "uniform":
        return schedules.uniform(T=T, R=R)
    if kind == "gd-dynamic":
        return schedules.gd_dynamic(T=T, R=R, kappa=kappa)
    if kind == "exponential":
        return schedules.exponential(T=T, R=R, rate=math.log(10.0) / max(T - 1, 1))
    raise ValueError(f"kind must be one of {', '.join(SCHEDULE_KINDS)}, got {kind!r}")


def compare_with_bound(
    *, eigenvalues, offset, clip_norm: float, N: int, R: float, T_max: int, kinds=SCHEDULE_KINDS
) -> dict[str, Any]:
    """Exact expected excess risk vs the Thm 4.1 bound (the FAccT version), both in ERUB units, for PGD with
    ``eta = 1/M`` and each kind (:func:`schedule_of`) at ``T = 1..T_max``. Returns ``constants`` and per kind
    ``exact``, ``bound``, ``ratio`` (arrays over T), ``T_bound``, ``T_exact``, ``bound_min``,
    ``exact_at_T_bound`` and ``exact_min``.

    >>> r = compare_with_bound(eigenvalues=[1.0, 0.1], offset=[1.0, 1.0], clip_norm=1.0, N=100, R=1.0, T_max=30)
    >>> bool(np.all(r["uniform"]["exact"] <= r["uniform"]["bound"]))
    True
    """
    c = pl_constants(eigenvalues=eigenvalues, offset=offset, clip_norm=clip_norm, N=N, R=R)
    T_max = validate.integer("T_max", T_max, minimum=0)
    if T_max < 1:
        raise ValueError(f"T_max must be >= 1, got {T_max}")
    lam = validate.positive_array("eigenvalues", eigenvalues, allow_zero=True)
    off = _offset(offset, lam.size)
    Ts = np.arange(1, T_max + 1)
    out: dict[str, Any] = {"constants": c, "T": Ts}
    for kind in kinds:
        exact = np.empty(T_max)
        bound = np.empty(T_max)
        for i, T in enumerate(Ts):
            s = schedule_of(kind, T=int(T), R=R, kappa=c["kappa"])
            exact[i] = expected_excess_risk(eigenvalues=lam, offset=off, eta=c["eta"], sigma=s,
                                            clip_norm=clip_norm, N=N) / c["initial_gap"]
            bound[i] = gd.erub(sigma=s, kappa=c["kappa"], alpha=c["alpha"], R=R)
        ib, ie = int(np.argmin(bound)), int(np.argmin(exact))
        out[kind] = {
            "exact": exact,
            "bound": bound,
            "ratio": bound / exact,
            "T_bound": int(Ts[ib]),
            "T_exact": int(Ts[ie]),
            "bound_min": float(bound[ib]),
            "exact_at_T_bound": float(exact[ib]),
            "exact_min": float(exact[ie]),
        }
    return out
