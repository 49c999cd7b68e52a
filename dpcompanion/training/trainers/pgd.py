"""Private (stochastic) gradient descent with per-step noise multipliers.

* :func:`train_pgd`: full-batch PGD exactly as Hong et al. 2022 (FAccT, arXiv 2101.07413,
  file 001) Algorithm 1 and Eq. (1): per-sample clipping at C, Gaussian noise
  ``C sigma_t / N`` on the averaged gradient, sigma_t from a schedule array, the ledger
  charged ``1/sigma_t^2`` before each noisy step, stop when the next step is
  unaffordable. ``momentum=beta > 0`` gives the debiased momentum of H Eq. (3) / Eq. (13)
  (slides, file 003, Algorithm 2).
* :func:`train_psgd`: the same with Poisson sampling at rate p (each sample in a step's
  batch independently with probability p), averaged over the expected batch size p N,
  charged with the paper's subsampled cost ``p^2/sigma_t^2`` (H Sec. 4.3, after Yu et
  al. 2019 Thm 3; :func:`dpcompanion.theory.accounting.psgd_step_cost`). With ``delta`` the
  history also reports the tight epsilon of the steps taken
  (:func:`dpcompanion.theory.accounting.accountant_epsilon`, RDP).
"""

from __future__ import annotations

import torch

from dpcompanion.training.models import Model
from dpcompanion.training.trainers.engine import train_loop
from dpcompanion.training.trainers.history import History

__all__ = ["train_pgd", "train_psgd"]


def train_pgd(
    model: Model,
    X,
    y,
    *,
    sigma,
    R: float | None,
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
    ledger_factory=None,
    record=None,
    memory_budget: int | None = None,
    fast: bool | None = None,
) -> History:
    """Full-batch private GD (H Algorithm 1), optionally with debiased momentum.

    ``sigma``: per-step noise multipliers, shape ``(T,)`` (one schedule) or ``(K, T)``
    (one per run; ``numpy.inf`` = noiseless, free step). ``seed``: int (one run, or the
    shared seed of K schedule rows) or a sequence of K ints (batched runs). ``R``: the
    budget (Hong's units, R = 2 rho); ``None`` disables the ledger (analysis only, e.g.
    influence sweeps; cost is still recorded). ``lr``: number, ``(T,)`` or ``(K, T)``.
    ``init``: initial parameters ``(P,)`` or ``(K, P)`` (default: drawn from the seed).
    ``record``: the per-step fields to keep (default all of ``loss, grad_norm,
    clip_fraction, sigma, lr, budget_spent``; the loss history costs a pass over the data per
    step). ``memory_budget``: bytes for the runs' state (default 4 GiB; runs are trained in
    chunks below it, same numbers). ``fast``: None uses the margin fast path for binary
    linear/logistic models, False forces the general path.
    Every sigma must be finite and positive (:func:`~dpcompanion.training.trainers.config.check_sigma`):
    there is no noiseless step.
    Returns a :class:`~dpcompanion.training.trainers.history.History` (batched when K > 1).
    """
    return train_loop(model, X, y, sigma=sigma, R=R, lr=lr, clip_norm=clip_norm, seed=seed, beta=momentum,
                      sampling_rate=1.0, X_test=X_test, y_test=y_test, init=init, device=device, dtype=dtype,
                      delta=delta, progress=progress, ledger_factory=ledger_factory,
                      algorithm="pgd-momentum" if momentum else "pgd", record=record, memory_budget=memory_budget,
                      fast=fast)


def train_psgd(
    model: Model,
    X,
    y,
    *,
    sigma,
    R: float | None,
    sampling_rate: float,
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
    ledger_factory=None,
    record=None,
    memory_budget: int | None = None,
    fast: bool | None = None,
) -> History:
    """Private SGD with Poisson sampling at ``sampling_rate`` p (H Sec. 4.3).

    Arguments as :func:`train_pgd`. The ledger is charged ``p^2 / sigma_t^2`` per step
    (the paper's rule, so a schedule for R' = R/p^2 spends exactly R) and, because that rule
    is not a guarantee, every step is also checked against the target epsilon at ``delta``
    (required when p < 1) with dp-accounting's RDP accountant: a run stops at the first step
    that either check refuses. The tight epsilon of the steps taken is in the history. The step's batch is
    a Poisson mask over the N samples; gradients are computed only on the rows that some
    run sampled (for K batched runs, the union of their batches, with per-run weights).
    ``loss`` in the history is the mean over the step's batch; ``final_loss`` is the
    full training loss.
    """
    return train_loop(model, X, y, sigma=sigma, R=R, lr=lr, clip_norm=clip_norm, seed=seed, beta=momentum,
                      sampling_rate=sampling_rate, X_test=X_test, y_test=y_test, init=init, device=device,
                      dtype=dtype, delta=delta, progress=progress, ledger_factory=ledger_factory,
                      algorithm="psgd-momentum" if momentum else "psgd", record=record,
                      memory_budget=memory_budget, fast=fast)
