"""Private (stochastic) gradient descent with per-step noise multipliers: thin wrappers that
build a :class:`~dpcompanion.training.trainers.config.TrainConfig` and call
:func:`~dpcompanion.training.trainers.engine.train`.

* :func:`train_pgd`: full-batch PGD exactly as Hong et al. 2022 (FAccT, arXiv 2101.07413,
  the FAccT version) Algorithm 1 and Eq. (1): per-sample clipping at C, Gaussian noise
  ``C sigma_t / N`` on the averaged gradient, sigma_t from a schedule array, the ledger
  charged ``1/sigma_t^2`` before each noisy step, stop when the next step is
  unaffordable. ``momentum=beta > 0`` gives the debiased momentum of H Eq. (3) / Eq. (13)
  (the slides, Algorithm 2).
* :func:`train_psgd`: the same with Poisson sampling at rate p (each sample in a step's
  batch independently with probability p), averaged over the expected batch size p N,
  charged with the paper's subsampled cost ``p^2/sigma_t^2`` (H Sec. 4.3, after Yu et
  al. 2019 Thm 3; :func:`dpcompanion.theory.numerical_accounting.psgd_step_cost`) and checked against
  the target epsilon by the ledger's RDP accountant; the history reports the ledger's spent
  epsilon (:meth:`dpcompanion.theory.ledger.PrivacyLedger.spent_epsilon`).
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

    ``sigma``: per-step noise multipliers, shape ``(T,)`` (one schedule) or ``(K, T)`` (one
    per run); every one finite and > 0 (:func:`~dpcompanion.training.trainers.config.check_sigma`):
    there is no noiseless step. ``seed``: int (one run, or the shared seed of K schedule rows)
    or a sequence of K ints (batched runs). The budget: ``budget`` (a
    :class:`~dpcompanion.theory.budget.Budget`), or ``R`` (Hong's units, R = 2 rho, with an
    optional ``delta``; ``Budget.from_R``); ``R=None`` disables the ledger (analysis only, e.g.
    influence sweeps; the cost is still recorded). ``lr``: number, ``(T,)`` or ``(K, T)``.
    ``init``: initial parameters ``(P,)`` or ``(K, P)`` (default: drawn from the seed).
    ``record``: the per-step fields to keep (default all of ``loss, grad_norm,
    clip_fraction, sigma, lr, budget_spent``; the loss history costs a pass over the data per
    step). ``memory_budget``: bytes for the runs' state (default 4 GiB; runs are trained in
    chunks below it, same numbers). ``fast``: None uses the margin fast path for binary
    linear/logistic models, False forces the general path. ``lr_rule`` and ``algorithm``: as
    in :meth:`TrainConfig.build` (ADP-SGD's adaptive step size and name). ``secure``: the
    noise from secret OS randomness, not from ``seed`` (:class:`TrainConfig`). ``N``: the public
    data-set size the noisy sum is divided by (default ``len(X)``, which the caller thereby
    declares public); the guarantee is for add/remove-one neighbours trained with the same ``N``
    (:data:`~dpcompanion.training.trainers.config.NEIGHBOURING`).
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

    The ledger is charged ``p^2 / sigma_t^2`` per step (the paper's rule, so a schedule for
    R' = R/p^2 spends exactly R) and, because that rule is not a guarantee, every step is also
    checked against the target epsilon at ``delta`` (required when p < 1) with the RDP
    accountant: a run stops at the first step that either check refuses. The step's batch is
    a Poisson mask over the N samples; gradients are computed only on the rows that some run
    sampled (for K batched runs, the union of their batches, with per-run weights). ``loss``
    in the history is the mean over the step's batch; ``final_loss`` is the full training loss.
    """
    return train_pgd(model, X, y, sampling_rate=sampling_rate, **kw)
