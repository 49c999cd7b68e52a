"""Private (stochastic) gradient descent with per-step noise multipliers: thin wrappers that
build a :class:`~dpcompanion.training.trainers.config.TrainConfig` and call
:func:`~dpcompanion.training.trainers.engine.train`.

* :func:`train_pgd`: full-batch PGD as Hong et al. 2022 (FAccT, arXiv 2101.07413) Algorithm 1 and
  Eq. (1): clipping at C, noise ``C sigma_t / N`` on the averaged gradient, the ledger charged
  ``1/sigma_t^2`` before each noisy step; ``momentum=beta > 0``: debiased momentum (H Eq. (3)).
* :func:`train_psgd`: Poisson sampling at rate p, charged ``p^2/sigma_t^2`` (H Sec. 4.3, after Yu
  et al. 2019 Thm 3) and checked against the target epsilon by the ledger's RDP accountant.
"""

from __future__ import annotations

import numpy as np
import torch

from dpcompanion.theory.budget import Budget
from dpcompanion.training.model_base import Model
from dpcompanion.training.trainers.config import TrainConfig
from dpcompanion.training.trainers.engine import train
from dpcompanion.training.trainers.history import History

__all__ = ["train_pgd", "train_psgd", "n_samples"]


def n_samples(X) -> int:
    """Number of rows of ``X`` (tensor, array or sequence)."""
    return int(X.shape[0]) if isinstance(X, torch.Tensor) else int(np.shape(X)[0])


def _budget_given(fn: str, R, budget):
    if R is ... and budget is None:
        raise TypeError(f"{fn} needs R (None: no ledger, analysis runs) or budget")
    return None if R is ... else R


def train_pgd(
    model: Model,
    X,
    y,
    *,
    sigma,
    R: float | None = ...,
    budget: Budget | None = None,
    clip_norm: float = 4.0,
    lr=0.1,
    momentum: float = 0.0,
    seed=0,
    X_test=None,
    y_test=None,
    init=None,
    device: str = "auto",
    dtype: torch.dtype = torch.float32,
    delta: float | None = None,
    progress: bool | None = None,
    record=None,
    memory_budget: int | None = None,
    fast: bool | None = None,
    sampling_rate: float | None = None,
    lr_rule=None,
    algorithm: str | None = None,
    secure: bool = False,
    N: int | None = None,
) -> History:
    """Full-batch private GD (H Algorithm 1), optionally with debiased momentum:
    ``train(model, X, y, TrainConfig.build(...))`` with these settings (``sampling_rate``: default
    the budget's, 1 without one; below 1 the steps are Poisson-sampled, see :func:`train_psgd`).

    ``sigma``: ``(T,)`` or ``(K, T)``, every entry finite and > 0 (no noiseless step). ``seed``: int
    (one run, or the shared seed of K schedule rows) or K ints. The budget: ``budget``, or ``R``
    (R = 2 rho, optional ``delta``); ``R=None`` disables the ledger (analysis only; the cost is still
    recorded). ``lr``: number, ``(T,)`` or ``(K, T)``. ``N``: the public data-set size the noisy sum is
    divided by (default ``len(X)``, declared public). The rest as :meth:`TrainConfig.build`.
    Returns a :class:`~dpcompanion.training.trainers.history.History` (batched when K > 1).
    """
    config = TrainConfig.build(sigma=sigma, budget=budget, R=_budget_given("train_pgd", R, budget), delta=delta,
                               lr=lr, clip_norm=clip_norm, seed=seed, N=n_samples(X) if N is None else N,
                               beta=momentum,
                               sampling_rate=sampling_rate, lr_rule=lr_rule, device=device, dtype=dtype,
                               progress=progress, algorithm=algorithm, record=record, memory_budget=memory_budget,
                               fast=fast, secure=secure)
    return train(model, X, y, config, X_test=X_test, y_test=y_test, init=init)


def train_psgd(model: Model, X, y, *, sampling_rate: float, **kw) -> History:
    """Private SGD with Poisson sampling at ``sampling_rate`` p (H Sec. 4.3); the other
    arguments as :func:`train_pgd`.

    The ledger is charged ``p^2 / sigma_t^2`` per step (the paper's rule) and, because that rule is
    not a guarantee, every step is also checked against the target epsilon at ``delta`` (required
    when p < 1) by the RDP accountant: a run stops at the first step either check refuses. ``loss``
    is the mean over the step's batch; ``final_loss`` the full training loss.
    """
    return train_pgd(model, X, y, sampling_rate=sampling_rate, **kw)
