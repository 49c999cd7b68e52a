"""Exact first and second moments of (momentum, minibatch) private gradient descent on a least-squares
loss, by covariance propagation.

``f_i(theta) = 1/2 (a_i^T theta - y_i)^2``, ``grad f_i = A_i theta - b_i`` (``A_i = a_i a_i^T``,
``b_i = a_i y_i``), full gradient ``H theta - c``. One step is linear in the state ``(theta, v)``:

* Hong et al. 2022 (FAccT, arXiv 2101.07413) Eq. (1) (``beta = 0``) and Eq. (13), Thm 4.5:
  ``g_t = grad + xi_t + s_t nu_t``, ``v_{t+1} = beta v_t + (1 - beta) g_t``,
  ``theta_{t+1} = theta_t - eta_t v_{t+1}/(1 - beta^t)``;
* Sec. 4.3 (PSGD) and Wu et al. (ADP-SGD, arXiv 2110.07435) Algorithm 1: ``xi_t`` is the deviation of a
  with-replacement minibatch mean, covariance ``(1/batch_size) (mean_i g_i g_i^T - grad grad^T)``;
* ``s_t nu_t`` is the privacy noise in gradient units (``G sigma_t / N`` in H, ``alpha_{t+1} sigma`` in W).

``xi_t``, ``nu_t`` are conditionally mean zero, so ``mean' = F mean + k``, ``P' = F P F^T + K Q_t K^T``
with ``Q_t = E[Cov(xi_t | theta)] + s_t^2 I`` and ``E[mean_i g_i g_i^T] = mean_i (A_i P A_i + r_i r_i^T)``,
``r_i = A_i m - b_i``; then ``E f - f* = 1/2 tr(H P) + f(m) - f*``, ``E||grad f||^2 = tr(H P H) +
||H m - c||^2``, ``E||v||^2 = tr(P_v) + ||m_v||^2``. At ``beta = 0``, full batch, this is
:func:`dpcompanion.theory.exact_risk.expected_excess_risk`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["LeastSquares", "condition", "diagonal_quadratic", "initial_gap", "least_squares", "moments"]


class LeastSquares:
    """A least-squares data set ``(a_i, y_i)`` with ``A`` (N, D, D), ``b`` (N, D), ``H``, ``c``,
    ``theta_star``, ``f_star`` and the ``eigenvalues`` of ``H``."""

    def __init__(self, features: Any, targets: Any):
        X = np.asarray(features, dtype=float)
        y = np.asarray(targets, dtype=float)
        if X.ndim != 2 or y.shape != (X.shape[0],) or X.shape[0] == 0:
            raise ValueError(f"features must be (N, D) and targets (N,), got {X.shape} and {y.shape}")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise ValueError("features and targets must be finite")
        self.X, self.y = X, y
        self.N, self.D = X.shape
        self.A = X[:, :, None] * X[:, None, :]
        self.b = X * y[:, None]
        self.H = self.A.mean(axis=0)
        self.c = self.b.mean(axis=0)
        self.theta_star = np.linalg.lstsq(X, y, rcond=None)[0]
        self.f_star = self.loss(self.theta_star)
        self.eigenvalues = np.clip(np.linalg.eigvalsh(self.H), 0.0, None)

    def loss(self, theta: np.ndarray) -> float:
        return float(0.5 * np.mean((self.X @ theta - self.y) ** 2))


def least_squares(*, features, targets) -> LeastSquares:
    """The least-squares problem of ``features`` (N, D) and ``targets`` (N,).

    >>> p = least_squares(features=[[1.0, 0.0], [0.0, 2.0]], targets=[1.0, 2.0])
    >>> p.H.tolist(), p.theta_star.round(12).tolist(), p.f_star
    ([[0.5, 0.0], [0.0, 2.0]], [1.0, 1.0], 0.0)
    """
    return LeastSquares(features, targets)


def diagonal_quadratic(*, eigenvalues) -> LeastSquares:
    """``N = D`` samples ``a_j = sqrt(D lambda_j) e_j``, ``y = 0``: risk ``1/2 theta^T diag(lambda) theta``.

    >>> diagonal_quadratic(eigenvalues=[2.0, 0.5]).H.tolist()
    [[2.0, 0.0], [0.0, 0.5]]
    """
    lam = np.asarray(eigenvalues, dtype=float)
    if lam.ndim != 1 or lam.size == 0 or np.any(lam <= 0) or not np.all(np.isfinite(lam)):
        raise ValueError(f"eigenvalues must be a non-empty 1-D array of finite values > 0, got {eigenvalues!r}")
    D = lam.size
    return LeastSquares(np.diag(np.sqrt(D * lam)), np.zeros(D))


def _steps(name: str, x: Any, T: int) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        a = np.full(T, float(a))
    if a.shape != (T,) or not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"{name} must be a scalar or T = {T} finite values >= 0, got shape {a.shape}")
    return a


def moments(
    problem: LeastSquares,
    *,
    theta1,
    eta,
    noise_std,
    T: int,
    beta: float = 0.0,
    batch_size: int | None = None,
    debias: bool = True,
) -> dict[str, np.ndarray]:
    """Exact moments along ``T`` steps from ``theta1``. ``eta``, ``noise_std`` (privacy noise std per
    coordinate, gradient units): scalars or per step; ``beta`` in [0, 1): H Eq. (13)'s momentum
    (``debias``: divide by ``1 - beta^t``); ``batch_size``: None (full gradient) or ``n`` with replacement.

    Returns arrays over ``t = 1..T+1`` (row T = output): ``excess``, ``grad_sq`` (``E||grad f||^2``),
    ``sample_grad_sq`` (``E||grad f_i||^2``), ``sgd_var`` (minibatch gradient variance) and ``v_sq``.

    >>> p = diagonal_quadratic(eigenvalues=[2.0])
    >>> m = moments(p, theta1=[1.0], eta=0.25, noise_std=[1.0, 1.0], T=2)
    >>> round(float(m["excess"][-1]), 6)    # = exact_risk.expected_excess_risk(...) = 0.140625
    0.140625
    """
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 0:
        raise ValueError(f"T must be an integer >= 0, got {T!r}")
    T = int(T)
    beta = float(beta)
    if not (0.0 <= beta < 1.0):
        raise ValueError(f"beta must be in [0, 1), got {beta!r}")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
                                   or batch_size < 1):
        raise ValueError(f"batch_size must be None (full batch) or an integer >= 1, got {batch_size!r}")
    eta = _steps("eta", eta, T)
    s = _steps("noise_std", noise_std, T)
    D = problem.D
    th = np.asarray(theta1, dtype=float)
    if th.shape != (D,):
        raise ValueError(f"theta1 must have shape ({D},), got {th.shape}")
    H, c, A, b = problem.H, problem.c, problem.A, problem.b
    n2 = 2 * D
    m = np.concatenate([th, np.zeros(D)])  # state (theta, v)
    P = np.zeros((n2, n2))
    I = np.eye(D)
    out = {k: np.empty(T + 1) for k in ("excess", "grad_sq", "sample_grad_sq", "sgd_var", "v_sq")}

    def record(t: int, mt: np.ndarray, Pt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mth, Pth = mt[:D], Pt[:D, :D]
        r = H @ mth - c
        ri = np.einsum("nij,j->ni", A, mth) - b
        APA = np.einsum("nij,jk,nlk->nil", A, Pth, A)  # A_i P A_i (A symmetric)
        S = APA.mean(axis=0) + (ri[:, :, None] * ri[:, None, :]).mean(axis=0)
        gg = H @ Pth @ H + np.outer(r, r)
        out["excess"][t] = 0.5 * np.trace(H @ Pth) + problem.loss(mth) - problem.f_star
        out["grad_sq"][t] = np.trace(gg)
        out["sample_grad_sq"][t] = np.trace(S)
        out["v_sq"][t] = np.trace(Pt[D:, D:]) + float(mt[D:] @ mt[D:])
        cov = np.zeros((D, D)) if batch_size is None else (S - gg) / batch_size
        out["sgd_var"][t] = np.trace(cov)
        return r, cov

    for t in range(1, T + 1):
        _, cov = record(t - 1, m, P)
        d = 1.0 / (1.0 - beta**t) if (debias and beta > 0) else 1.0
        # v' = beta v + (1-beta)(H theta - c + noise); theta' = theta - eta d v'
        Fv = np.hstack([(1 - beta) * H, beta * I])
        kv = -(1 - beta) * c
        Ft = np.hstack([I, np.zeros((D, D))]) - eta[t - 1] * d * Fv
        kt = -eta[t - 1] * d * kv
        F = np.vstack([Ft, Fv])
        k = np.concatenate([kt, kv])
        K = np.vstack([-eta[t - 1] * d * (1 - beta) * I, (1 - beta) * I])
        Q = cov + s[t - 1] ** 2 * I
        m = F @ m + k
        P = F @ P @ F.T + K @ Q @ K.T
        P = 0.5 * (P + P.T)
    record(T, m, P)
    if not all(np.all(np.isfinite(v)) for v in out.values()):
        raise ValueError("moments overflowed: the step size makes the iteration diverge")
    return out


def initial_gap(problem: LeastSquares, theta1) -> float:
    """``f(theta_1) - f*``.

    >>> round(initial_gap(diagonal_quadratic(eigenvalues=[2.0]), [1.0]), 12)
    1.0
    """
    return problem.loss(np.asarray(theta1, dtype=float)) - problem.f_star


def condition(problem: LeastSquares) -> tuple[float, float]:
    """``(M, mu)``: largest and smallest eigenvalue of the Hessian (smoothness and PL constant).

    >>> condition(diagonal_quadratic(eigenvalues=[2.0, 0.5]))
    (2.0, 0.5)
    """
    lam = problem.eigenvalues
    M, mu = float(lam.max()), float(lam.min())
    if not (mu > 0 and math.isfinite(M)):
        raise ValueError(f"the Hessian must be positive definite (PL constant mu > 0), got smallest eigenvalue {mu!r}")
    return M, mu
