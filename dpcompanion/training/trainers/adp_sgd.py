"""ADP-SGD: Wu et al. (ADP-SGD, arXiv 2110.07435) Algorithm 1 on top of the private loop.

W's update is ``theta_{t+1} = theta_t - (eta / b_{t+1}) (grad_t + alpha_{t+1} c_t)``, ``c_t ~ N(0,
sigma^2 I)``: step t's noise multiplier is proportional to alpha_t, with ``alpha_t^2 = b_t`` (W Thm 4.2 /
Remark 4.1; ``adaptive_noise=False``: DP-SGD, alpha_t = 1), made budget-exact by
:func:`dpcompanion.theory.schedules.adp`, so the ledger charges it like any schedule.

Step sizes ``eta_t = eta / b_{t+1}``:

* ``"polynomial"``: ``b_{t+1} = sqrt(a + c t)`` (W Fig. 1: eta = 1, a = 20, c = 1, i.e.
  eta_t = 1/sqrt(20 + t)); alpha_t^2 = sqrt(a + c t).
* ``"adaptive"`` (W Sec. 5.2, Tables 3 and 6): ``b_{t+1}^2 = b_t^2 + max(beta_t ||g_t||^2,
  1e-5)`` with ``beta_t = max(beta / ((t mod period) + 1), 1)`` and ``b_0^2 = b0_sq``; the noise
  follows the pre-set ``alpha_t^2 = sqrt(b_0^2 + t C)``, so it is fixed before training. ``g_t`` is
  the *privatized* gradient (post-processing; W's Algorithm 1 writes the raw one, which would itself
  need privatizing).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from dpcompanion.core import validate
from dpcompanion.theory import schedules
from dpcompanion.theory.budget import Budget
from dpcompanion.training.model_base import Model
from dpcompanion.training.trainers.history import History
from dpcompanion.training.trainers.engine import train_pgd

__all__ = ["train_adpsgd", "adp_schedule", "AdaptiveStepSize", "STEP_SIZES"]

STEP_SIZES = ("polynomial", "adaptive")


def adp_schedule(*, R: float, T: int, sampling_rate: float = 1.0, step_size: str = "polynomial",
                 adaptive_noise: bool = True, eta: float = 1.0, a: float = 20.0, c: float = 1.0, b0_sq: float = 20.0,
                 C: float = 1e-3, beta: float = 1.0, period: int = 195) -> dict:
    """ADP-SGD's (``adaptive_noise=True``) or DP-SGD's noise and step sizes (module docstring)
    for a budget ``R`` charged by the paper's PSGD rule (``p^2/sigma_t^2``, so the schedule is
    budget-exact for ``R / p^2``): ``{"sigma": (T,), "lr": (T,), "lr_rule": None or
    AdaptiveStepSize, "algorithm": name}``.

    >>> s = adp_schedule(R=1.0, T=3)
    >>> round(float(np.sum(1 / s["sigma"] ** 2)), 12), s["algorithm"]
    (1.0, 'adp-sgd-polynomial')
    """
    if step_size not in STEP_SIZES:
        raise ValueError(f"step_size must be one of {', '.join(STEP_SIZES)}, got {step_size!r}")
    if not (isinstance(T, (int, np.integer)) and T >= 1):
        raise ValueError(f"T must be an integer >= 1, got {T}")
    for name, val in (("eta", eta), ("a", a), ("b0_sq", b0_sq)):
        if not (math.isfinite(val) and val > 0):
            raise ValueError(f"{name} must be finite and > 0, got {val}")
    for name, val in (("c", c), ("C", C), ("beta", beta)):
        if not (math.isfinite(val) and val >= 0):
            raise ValueError(f"{name} must be finite and >= 0, got {val}")
    sampling_rate = validate.sampling_rate(sampling_rate)
    R_sched = R / sampling_rate**2
    aa, cc = (a, c) if step_size == "polynomial" else (b0_sq, C)
    if adaptive_noise:
        sigma = schedules.adp(T=int(T), R=R_sched, a=aa, c=cc, power=0.5)
    else:
        sigma = schedules.uniform(T=int(T), R=R_sched)
    t = np.arange(int(T), dtype=np.float64)
    lr_rule = None
    if step_size == "polynomial":
        lr = eta / np.sqrt(a + c * (t + 1))
    else:
        lr = np.full(int(T), eta / math.sqrt(b0_sq))
        lr_rule = AdaptiveStepSize(eta=eta, b0_sq=b0_sq, beta=beta, period=period)
    return {"sigma": sigma, "lr": lr, "lr_rule": lr_rule,
            "algorithm": f"{'adp' if adaptive_noise else 'dp'}-sgd-{step_size}"}


def train_adpsgd(
    model: Model,
    X,
    y,
    *,
    T: int,
    R: float | None = None,
    budget: Budget | None = None,
    sampling_rate: float | None = None,
    step_size: str = "polynomial",
    adaptive_noise: bool = True,
    eta: float = 1.0,
    a: float = 20.0,
    c: float = 1.0,
    b0_sq: float = 20.0,
    C: float = 1e-3,
    beta: float = 1.0,
    period: int = 195,
    clip_norm: float = 1.0,
    **kw,
) -> History:
    """ADP-SGD (``adaptive_noise=True``) or DP-SGD (``False``) with W's step sizes: the schedule of
    :func:`adp_schedule` for the budget's R, trained by :func:`~dpcompanion.training.trainers.train_pgd`
    (the other keywords as there). The budget: ``budget`` or ``R`` (with ``delta``, required for
    p < 1); always a ledger, charged ``p^2/sigma_t^2`` (:func:`~dpcompanion.training.trainers.train_psgd`).
    """
    if R is None and budget is None:
        raise ValueError("train_adpsgd needs R (a finite number > 0) or budget")
    p = budget.sampling_rate if (budget is not None and sampling_rate is None) else (
        1.0 if sampling_rate is None else sampling_rate)
    plan = adp_schedule(R=R if budget is None else budget.R, T=T, sampling_rate=p, step_size=step_size,
                        adaptive_noise=adaptive_noise, eta=eta, a=a, c=c, b0_sq=b0_sq, C=C, beta=beta, period=period)
    return train_pgd(model, X, y, sigma=plan["sigma"], lr=plan["lr"], lr_rule=plan["lr_rule"],
                     algorithm=plan["algorithm"], R=R, budget=budget, sampling_rate=p, clip_norm=clip_norm, **kw)


class AdaptiveStepSize:
    """W's adaptive step size (module docstring): ``b_{t+1}^2 = b_t^2 + max(beta_t ||g_t||^2,
    1e-5)``, ``eta_t = eta / b_{t+1}``, per run. Keeps ``b_t^2`` across steps, so each chunk
    of runs gets its own rule (:meth:`fresh`)."""

    def __init__(self, *, eta: float, b0_sq: float, beta: float, period: int):
        self.eta, self.b0_sq, self.beta, self.period = eta, b0_sq, beta, period
        self.b_sq: torch.Tensor | None = None

    def fresh(self) -> "AdaptiveStepSize":
        return AdaptiveStepSize(eta=self.eta, b0_sq=self.b0_sq, beta=self.beta, period=self.period)

    def __call__(self, step: int, g: torch.Tensor, lr_t: torch.Tensor) -> torch.Tensor:
        if self.b_sq is None:
            self.b_sq = torch.full((g.shape[0],), float(self.b0_sq), dtype=g.dtype, device=g.device)
        beta_t = max(self.beta / ((step % self.period) + 1), 1.0)
        self.b_sq = self.b_sq + torch.clamp(beta_t * (g * g).sum(-1), min=1e-5)
        return self.eta / torch.sqrt(self.b_sq)
