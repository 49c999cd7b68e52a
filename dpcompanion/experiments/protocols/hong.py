"""What every experiment of Hong et al. shares: the paper's constants (the FAccT version, arXiv
2101.07413, Sec. 5; the ICLR submission's App. D "Setup"), seeds per unit (:func:`unit_seeds`:
independent of the worker and order), batched training through the library's trainer, and the
statistics the verdicts use.
"""

from __future__ import annotations

import math
import time
from typing import Any, Sequence

import numpy as np
import torch

from dpcompanion.theory.accounting import R_PAPER
from dpcompanion.training.trainers import train_pgd

__all__ = [
    "LR", "CLIP", "R", "SCALE", "PCA_DIM",
    "unit_seeds", "run_batched", "mean_se", "paired_difference", "relative_loss",
]

LR = 0.1  # the FAccT version, Sec. 5: "We fix the learning rate to 0.1"
CLIP = 4.0  # the FAccT version, Sec. 5: clipping norm fixed at 4
R = R_PAPER  # the FAccT version, Sec. 5: (4, 1e-8)-DP = 0.1963-zCDP, R = 0.3927
SCALE = 10.0  # the FAccT version, Sec. 5: max_n ||x_n|| = 10
PCA_DIM = 60  # the FAccT version, Sec. 5: 60-dimensional PCA subspace


def unit_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent 31-bit seeds derived from ``seed`` (SeedSequence.spawn).

    >>> unit_seeds(0, 3) == unit_seeds(0, 3), len(set(unit_seeds(0, 5)))
    (True, 5)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    return [int(s.generate_state(1, dtype=np.uint32)[0] >> 1) for s in np.random.SeedSequence(int(seed)).spawn(int(n))]


def run_batched(model, X, y, *, sigma_rows: np.ndarray, seeds: Sequence[int], R: float | None, device: str,
                lr=LR, clip_norm: float = CLIP, momentum: float = 0.0, X_test=None, y_test=None,
                dtype=None) -> dict[str, Any]:
    """One :func:`dpcompanion.training.trainers.train_pgd` call for K runs (a row of ``sigma_rows`` and
    a seed each; ``R`` charged per run, None: analysis runs): per-run arrays ``final_loss``,
    ``test_accuracy`` (or None), ``steps_done``, ``stopped_early``, ``R_spent``, ``loss_curve`` ``(K, T)``,
    ``clip_fraction``, and ``wall_s``, ``run_steps``."""
    sig = np.asarray(sigma_rows, dtype=float)
    if sig.ndim != 2 or sig.shape[0] != len(seeds):
        raise ValueError(f"sigma_rows must have shape (K, T) with K = len(seeds) = {len(seeds)}, got {sig.shape}")
    t0 = time.perf_counter()
    h = train_pgd(model, X, y, sigma=sig, R=R, clip_norm=clip_norm, lr=lr, momentum=momentum,
                  seed=[int(s) for s in seeds], X_test=X_test, y_test=y_test, device=device,
                  dtype=dtype or torch.float32, progress=False)
    wall = time.perf_counter() - t0
    steps = np.asarray(h.steps_done)
    return {
        "final_loss": np.asarray(h.final_loss, dtype=float).reshape(-1),
        "test_accuracy": None if h.test_accuracy is None else np.asarray(h.test_accuracy, dtype=float).reshape(-1),
        "train_accuracy": np.asarray(h.train_accuracy, dtype=float).reshape(-1),
        "steps_done": steps.reshape(-1),
        "stopped_early": np.asarray(h.stopped_early).reshape(-1),
        "R_spent": np.asarray(h.R_spent, dtype=float).reshape(-1),
        "loss_curve": np.asarray(h.loss, dtype=float).reshape(sig.shape[0], -1),
        "clip_fraction": np.nanmean(np.asarray(h.clip_fraction, dtype=float).reshape(sig.shape[0], -1), axis=1),
        "wall_s": wall,
        "run_steps": int(steps.sum()),
    }


def mean_se(x) -> tuple[float, float]:
    """Mean and standard error (ddof 1) of a sample.

    >>> mean_se([1.0, 2.0, 3.0])
    (2.0, 0.5773502691896258)
    """
    a = np.asarray(x, dtype=float).reshape(-1)
    if a.size < 2:
        raise ValueError(f"need at least 2 values for a standard error, got {a.size}")
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size))


def paired_difference(a, b) -> tuple[float, float]:
    """Mean and standard error of ``a - b`` over runs paired by seed (common random numbers).

    >>> m, se = paired_difference([1.0, 2.0, 4.0], [0.0, 1.0, 2.0])
    >>> round(m, 12), round(se, 12)
    (1.333333333333, 0.333333333333)
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired samples must have the same shape, got {a.shape} and {b.shape}")
    return mean_se(a - b)


def relative_loss(e_sched, e_uni) -> tuple[float, float]:
    """``(mean(e_sched) - mean(e_uni)) / mean(e_uni)`` (the ICLR submission, App. D, Fig. 3 right) and its
    delta-method standard error, for runs paired by seed (the covariance is used).

    >>> r, se = relative_loss([0.9, 1.1, 0.8, 1.0], [1.0, 1.2, 1.0, 1.2])
    >>> round(r, 6)
    -0.136364
    """
    a, b = np.asarray(e_sched, dtype=float), np.asarray(e_uni, dtype=float)
    if a.shape != b.shape or a.size < 2:
        raise ValueError(f"need paired samples of the same shape (>= 2), got {a.shape} and {b.shape}")
    n = a.size
    ma, mb = a.mean(), b.mean()
    va, vb = a.var(ddof=1) / n, b.var(ddof=1) / n
    cab = np.cov(a, b, ddof=1)[0, 1] / n
    r = ma / mb - 1.0
    var = va / mb**2 + ma**2 * vb / mb**4 - 2 * ma * cab / mb**3
    return float(r), float(math.sqrt(max(var, 0.0)))
