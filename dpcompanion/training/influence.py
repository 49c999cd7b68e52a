"""Influence of each step's noise on the final loss: by retraining, and analytically.

Hong et al. 2022 (FAccT, arXiv 2101.07413) Thm 4.1, Eq. (7) call ``q_t = gamma^{T-t} alpha`` the
*influence* of step t's noise variance on the final excess risk. The ICLR submission (App. D, Fig. 3)
estimates it by **retraining**: every step at the uniform ``sigma`` except step t, swept over [20, 200],
the final loss fitted as ``c sigma_t^2 + c0``, ``q_t ~ c``.

* :func:`influence_by_retraining`: the whole sweep as one batched :func:`~dpcompanion.training.trainers.train_pgd`
  call; runs of one repeat share their seed (common random numbers), so they differ *only* in the
  scale of step t's noise.
* :func:`analytic_influence`: the exact ``q_t`` of PGD on a linear model's squared loss, valid while no
  gradient is clipped; :func:`theory_influence`: the theorem's ``gamma^{T-t}`` (``gamma = 1 - mu/M``).
* :func:`excess_risk_monte_carlo`, :func:`eer_at_scale`, :func:`eer_tightness`: SPEC H-X-EER.

"Relative variance" is the paper's ``var / mean`` over repeats; not being scale-free, the squared
coefficient of variation ``var / mean^2`` is reported beside it.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Sequence

import numpy as np
import torch

from dpcompanion.theory import exact_risk
from dpcompanion.theory.accounting import R_PAPER  # (4, 1e-8)-DP as R = 2 rho (H Sec. 5)
from dpcompanion.theory.bounds import gd
from dpcompanion.training.models import make_model
from dpcompanion.training.trainers import train_pgd

__all__ = ["InfluenceResult", "PAPER_LEVELS", "analytic_influence", "eer_at_scale", "eer_tightness",
           "excess_risk_monte_carlo", "fit_quadratic", "influence_by_retraining", "influence_statistics",
           "squared_loss_quadratic_of", "theory_influence"]

#: the paper's sweep of sigma_t (the ICLR submission, App. D): 10 levels over [20, 200]
PAPER_LEVELS = np.linspace(20.0, 200.0, 10)


def fit_quadratic(levels, losses) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares fit ``loss = c sigma^2 + c0`` along the last axis of ``losses``
    (one value per level). Returns ``(c, c0)`` with the leading shape of ``losses``.

    >>> c, c0 = fit_quadratic([1.0, 2.0, 3.0], np.array([[3.0, 9.0, 19.0]]))  # 2 s^2 + 1
    >>> c.round(12).tolist(), c0.round(12).tolist()
    ([2.0], [1.0])
    """
    s2 = np.asarray(levels, dtype=float) ** 2
    L = np.asarray(losses, dtype=float)
    if s2.ndim != 1 or s2.size < 2 or L.shape[-1] != s2.size:
        raise ValueError(f"need >= 2 levels and losses with last axis {s2.size}, got {s2.shape} and {L.shape}")
    if np.ptp(s2) == 0:
        raise ValueError("levels must not all be equal")
    xc = s2 - s2.mean()
    c = (L - L.mean(axis=-1, keepdims=True)) @ xc / (xc @ xc)
    c0 = L.mean(axis=-1) - c * s2.mean()
    return c, c0


@dataclasses.dataclass
class InfluenceResult:
    """Output of :func:`influence_by_retraining` (arrays indexed by swept step first).

    ``steps`` (1-based t), ``levels``, ``final_loss (n_t, L, repeats)``, the fits of
    :func:`influence_statistics`, ``clip_fraction`` (mean over all runs and steps), ``base_sigma``,
    ``T``, ``runs``, ``wall_s``, ``meta``."""

    steps: np.ndarray
    levels: np.ndarray
    final_loss: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    q: np.ndarray
    q_se: np.ndarray
    coef_relative_variance: np.ndarray
    coef_cv2: np.ndarray
    loss_relative_variance: np.ndarray
    clip_fraction: float
    base_sigma: float
    T: int
    runs: int
    wall_s: float
    meta: dict

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in d.items()}


def influence_statistics(levels, final_loss) -> dict[str, np.ndarray]:
    """The per-repeat fits and their summaries from final losses ``(n_t, L, repeats)``
    (the ICLR submission, App. D): ``coef``/``intercept`` ``(n_t, repeats)``, ``q`` (mean coef), ``q_se``,
    ``coef_relative_variance`` (var/mean), ``coef_cv2`` (var/mean^2) and
    ``loss_relative_variance`` ``(n_t, L)``.

    >>> lv = np.array([1.0, 2.0, 3.0]); c = np.array([1.0, 3.0])
    >>> final = (c[None, None, :] * lv[None, :, None] ** 2)  # one step, 3 levels, 2 repeats
    >>> influence_statistics(lv, final)["q"].round(12).tolist()
    [2.0]
    """
    final = np.asarray(final_loss, dtype=float)
    if final.ndim != 3 or final.shape[2] < 2:
        raise ValueError(f"final_loss must have shape (n_t, L, repeats >= 2), got {final.shape}")
    repeats = final.shape[2]
    c, c0 = fit_quadratic(levels, np.moveaxis(final, 1, -1))  # (nt, repeats)
    mean = c.mean(axis=1)
    var = c.var(axis=1, ddof=1)
    lmean, lvar = final.mean(axis=2), final.var(axis=2, ddof=1)
    return {"coef": c, "intercept": c0, "q": mean, "q_se": np.sqrt(var / repeats),
            "coef_relative_variance": var / mean, "coef_cv2": var / mean**2,
            "loss_relative_variance": lvar / lmean}


def _check_levels(levels) -> np.ndarray:
    lv = np.asarray(levels, dtype=float)
    if lv.ndim != 1 or lv.size < 2 or np.any(~np.isfinite(lv)) or np.any(lv <= 0) or np.ptp(lv) == 0:
        raise ValueError(f"levels must be >= 2 distinct finite noise multipliers > 0, got {levels!r}")
    return lv


def _check_steps(steps, T: int) -> np.ndarray:
    st = np.arange(1, T + 1) if steps is None else np.asarray(steps, dtype=int)
    if st.ndim != 1 or st.size == 0 or st.min() < 1 or st.max() > T or np.unique(st).size != st.size:
        raise ValueError(f"steps must be distinct integers in [1, T={T}], got {steps!r}")
    return st


def _int(name: str, v, lo: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(v)


def influence_by_retraining(
    model,
    X,
    y,
    *,
    T: int,
    base_sigma: float | None = None,
    levels=PAPER_LEVELS,
    steps: Sequence[int] | None = None,
    repeats: int = 10,
    clip_norm: float = 4.0,
    lr: float = 0.1,
    seed: int = 0,
    device: str = "auto",
    dtype: torch.dtype = torch.float32,
    init=None,
    max_runs_per_call: int | None = None,
    progress: bool | None = False,
) -> InfluenceResult:
    """Estimate ``q_t`` by retraining (the ICLR submission, App. D).

    ``base_sigma``: every other step's noise (default the uniform ``sqrt(T / R_PAPER)``); ``levels``:
    the swept sigma_t; ``steps``: which t (default 1..T); ``repeats``: seeds ``seed, seed+1, ...``.
    ``max_runs_per_call`` splits the runs (memory). No ledger: the sweep deliberately overspends.
    """
    T = _int("T", T)
    lv = _check_levels(levels)
    st = _check_steps(steps, T)
    repeats = _int("repeats", repeats, lo=2)
    if base_sigma is None:
        base_sigma = math.sqrt(T / R_PAPER)
    if not (math.isfinite(base_sigma) and base_sigma > 0):
        raise ValueError(f"base_sigma must be finite and > 0, got {base_sigma!r}")
    nt, L = st.size, lv.size
    # run index = ((i_t * L) + i_level) * repeats + r
    sig = np.full((nt, L, repeats, T), float(base_sigma))
    for i, t in enumerate(st):
        sig[i, :, :, t - 1] = lv[:, None]
    sig = sig.reshape(-1, T)
    seeds = np.broadcast_to(seed + np.arange(repeats), (nt, L, repeats)).reshape(-1).tolist()
    K = sig.shape[0]
    chunk = K if max_runs_per_call is None else _int("max_runs_per_call", max_runs_per_call)
    t0 = time.perf_counter()
    finals, clip = [], []
    for a in range(0, K, chunk):
        h = train_pgd(model, X, y, sigma=sig[a:a + chunk], R=None, clip_norm=clip_norm, lr=lr,
                      seed=seeds[a:a + chunk], init=init, device=device, dtype=dtype, progress=progress,
                      record=("clip_fraction",))  # only final losses and clip statistics are used
        finals.append(np.asarray(h.final_loss, dtype=float).reshape(-1))
        clip.append(np.nanmean(np.asarray(h.clip_fraction, dtype=float)) * len(finals[-1]))
    wall = time.perf_counter() - t0
    final = np.concatenate(finals).reshape(nt, L, repeats)
    return InfluenceResult(
        steps=st,
        levels=lv,
        final_loss=final,
        **influence_statistics(lv, final),
        clip_fraction=float(np.sum(clip) / K),
        base_sigma=float(base_sigma),
        T=T,
        runs=K,
        wall_s=wall,
        meta={"clip_norm": clip_norm, "lr": lr, "seed": seed, "repeats": repeats, "model": repr(model),
              "N": int(len(y)), "calls": math.ceil(K / chunk), "common_random_numbers": "per repeat"},
    )


def squared_loss_quadratic_of(model, X, y, *, init=None) -> dict[str, Any]:
    """The quadratic of a linear model's squared loss as the trainer defines it (labels ``s = 2y - 1``,
    bias a constant feature): :func:`dpcompanion.theory.exact_risk.squared_loss_quadratic`."""
    hidden = getattr(model, "hidden", None)
    if hidden != () or getattr(model, "loss_kind", None) != "squared" or getattr(model, "n_out", None) != 1:
        raise ValueError(f"the analytic influence needs a linear model with squared loss and binary labels, got {model!r}")
    Xn = np.asarray(torch.as_tensor(X).reshape(len(y), -1).to(torch.float64).cpu())
    s = 2.0 * np.asarray(torch.as_tensor(y).cpu(), dtype=float) - 1.0
    feats = np.hstack([Xn, np.ones((Xn.shape[0], 1))]) if model.bias else Xn
    th0 = np.zeros(model.n_params) if init is None else np.asarray(torch.as_tensor(init).to(torch.float64).cpu())
    return exact_risk.squared_loss_quadratic(features=feats, targets=s, theta_init=th0)


def analytic_influence(model, X, y, *, T: int, lr, clip_norm: float) -> np.ndarray:
    """Exact ``q_t`` (t = 1..T, loss units per unit sigma_t^2) of the trainer's PGD on a
    linear model's squared loss, from the Hessian eigenvalues (the ICLR submission, App. D, Fig. 3 middle;
    :func:`dpcompanion.theory.exact_risk.noise_influence`). Exact while no gradient is clipped."""
    quad = squared_loss_quadratic_of(model, X, y)
    return exact_risk.noise_influence(eigenvalues=quad["eigenvalues"], eta=lr, T=T, clip_norm=clip_norm, N=len(y))


def theory_influence(model, X, y, *, T: int, lr: float | None = None) -> dict[str, Any]:
    """The theorem's influence shape ``rate^{T-t}`` (the FAccT version, Thm 4.1, proof D.1) for the same
    Hessian: ``M`` = largest, ``mu`` = smallest positive eigenvalue (the PL constant of a
    quadratic). With ``lr = None`` (the theorem's ``eta = 1/M``) the rate is
    ``gamma = 1 - mu/M``; for another step size it is the proof's per-step contraction
    ``1 - 2 mu eta (1 - M eta / 2)`` before ``eta = 1/M`` is substituted."""
    lam = squared_loss_quadratic_of(model, X, y)["eigenvalues"]
    pos = lam[lam > 1e-12 * lam.max()]
    M, mu = float(lam.max()), float(pos.min())
    eta = 1.0 / M if lr is None else float(lr)
    rate = 1.0 - 2.0 * mu * eta * (1.0 - M * eta / 2.0)
    t = np.arange(1, T + 1)
    return {"gamma": 1.0 - mu / M, "rate": rate, "eta": eta, "kappa": M / mu, "M": M, "mu": mu,
            "q": rate ** (T - t)}


def excess_risk_monte_carlo(
    model,
    X,
    y,
    *,
    schedules: dict[str, np.ndarray],
    runs: int,
    lr,
    clip_norm: float,
    f_star: float = 0.0,
    seed: int = 0,
    device: str = "auto",
    dtype: torch.dtype = torch.float64,
    init=None,
) -> dict[str, dict[str, float]]:
    """Mean final excess risk ``f(theta_{T+1}) - f_star`` of ``runs`` runs per schedule (one batched
    call per length), its standard error and the largest clip fraction seen (0: exactly unclipped PGD)."""
    runs = _int("runs", runs, lo=2)
    out: dict[str, dict[str, float]] = {}
    by_T: dict[int, list[str]] = {}
    for name, s in schedules.items():
        by_T.setdefault(len(s), []).append(name)
    for T, names in by_T.items():
        sig = np.concatenate([np.broadcast_to(np.asarray(schedules[n], float), (runs, T)) for n in names])
        seeds = [seed + r for _ in names for r in range(runs)]
        h = train_pgd(model, X, y, sigma=sig, R=None, clip_norm=clip_norm, lr=lr, seed=seeds, init=init,
                      device=device, dtype=dtype, progress=False)
        fl = np.asarray(h.final_loss, dtype=float).reshape(len(names), runs) - f_star
        cf = np.asarray(h.clip_fraction, dtype=float).reshape(len(names), runs, T)
        for i, n in enumerate(names):
            out[n] = {"mean": float(fl[i].mean()), "se": float(fl[i].std(ddof=1) / math.sqrt(runs)),
                      "max_clip_fraction": float(np.nanmax(cf[i])), "runs": runs}
    return out


def eer_at_scale(
    X,
    y,
    *,
    T_max: int,
    T_mc: int,
    runs_mc: int,
    clip_norm: float = 4.0,
    R: float = R_PAPER,
    seed: int = 0,
    device: str = "auto",
) -> dict[str, Any]:
    """SPEC H-X-EER at one dataset ``(X, y)`` (squared loss of a linear model):

    * ``comparison``: :func:`dpcompanion.theory.exact_risk.compare_with_bound` over
      ``T = 1..T_max`` (exact E[f] - f* vs Hong et al. 2022 (the FAccT version) Thm 4.1, eta = 1/M,
      G = ``clip_norm``);
    * ``monte_carlo[kind]``: the real trainer at ``T = T_mc`` (``runs_mc`` runs, eta = 1/M,
      clip at ``clip_norm``, float64) next to the exact value and the bound, with z-score
      and the largest clip fraction seen (the closed form is PGD *without* clipping);
    * ``eigenvalues``, ``offset``, ``f_star`` of the quadratic."""
    model = make_model("linear", in_dim=X.shape[1], n_classes=2)
    quad = squared_loss_quadratic_of(model, X, y)
    lam, off, N = quad["eigenvalues"], quad["offset"], len(y)
    comp = exact_risk.compare_with_bound(eigenvalues=lam, offset=off, clip_norm=clip_norm, N=N, R=R, T_max=T_max)
    c = comp["constants"]
    scheds = {k: exact_risk.schedule_of(k, T=T_mc, R=R, kappa=c["kappa"]) for k in exact_risk.SCHEDULE_KINDS}
    sim = excess_risk_monte_carlo(model, X, y, schedules=scheds, runs=runs_mc, lr=c["eta"],
                                  clip_norm=clip_norm, f_star=quad["f_star"], seed=seed, device=device)
    mc = {}
    for k, s in scheds.items():
        ex = exact_risk.expected_excess_risk(eigenvalues=lam, offset=off, eta=c["eta"], sigma=s,
                                             clip_norm=clip_norm, N=N)
        bound = c["initial_gap"] * gd.erub(sigma=s, kappa=c["kappa"], alpha=c["alpha"], R=R)
        r = sim[k]
        mc[k] = r | {"exact": ex, "bound": bound, "z": (r["mean"] - ex) / r["se"] if r["se"] > 0 else 0.0,
                     "sigma_first": float(s[0]), "sigma_last": float(s[-1])}
    return {"comparison": comp, "monte_carlo": mc, "eigenvalues": lam, "offset": off, "f_star": quad["f_star"],
            "N": int(N)}


def eer_tightness(*, kappas, initial_gap: float, D: int, N: int, T_max: int, clip_norm: float = 4.0,
                  R: float = R_PAPER) -> dict[str, Any]:
    """H-X-EER tightness against curvature: bound/exact at the bound's T for synthetic
    spectra ``exact_risk.spectrum(kappa, D)`` with the given initial gap spread evenly over
    the eigen-directions (closed forms only; Hong et al. 2022 (the FAccT version) Thm 4.1)."""
    tight = {k: [] for k in exact_risk.SCHEDULE_KINDS}
    tight_T = {k: [] for k in exact_risk.SCHEDULE_KINDS}
    for kappa in kappas:
        lam = exact_risk.spectrum(kappa=float(kappa), D=D)
        off = np.full(D, math.sqrt(2 * initial_gap / np.sum(lam)))  # same initial gap, spread evenly
        comp = exact_risk.compare_with_bound(eigenvalues=lam, offset=off, clip_norm=clip_norm, N=N, R=R, T_max=T_max)
        for k in exact_risk.SCHEDULE_KINDS:
            tight[k].append(comp[k]["bound_min"] / comp[k]["exact_at_T_bound"])
            tight_T[k].append([int(comp[k]["T_bound"]), int(comp[k]["T_exact"])])
    return {"kappas": np.asarray(kappas, dtype=float), "ratio": {k: np.asarray(v) for k, v in tight.items()},
            "T": tight_T}
