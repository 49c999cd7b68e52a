"""Warnings about noise schedules that are budget-exact but useless in practice (the H-X-EER finding).

Hong et al. 2022 (FAccT, arXiv 2101.07413) Thm 4.4's schedule, ``sigma_t^2 ∝ gamma^{-(T-t)/2}``, spans
``max sigma / min sigma = gamma^{-(T-1)/4}``: astronomically large when kappa is near 1 or T is long.
Thm 4.1's bound shrugs this off (a contraction of ``1 - eta mu`` per step wipes out any displacement),
but with per-sample clipping the first step's displacement ``lr * clip_norm * sigma_1 * sqrt(D) / N`` is
never undone. :func:`schedule_warnings` flags such schedules from the schedule alone, before training."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["MAX_SPAN", "MAX_SIGMA", "schedule_warnings", "schedule_span"]

#: default largest span max sigma_t / min sigma_t without a warning: in experiment ``h-x-eer-breakdown``
#: every cell where the clipped trainer ended 10x above the exact risk spanned more than 20, and the
#: paper's exponential schedules stay below (gamma = 0.9 over T = 100 spans 13.5)
MAX_SPAN = 20.0
#: default largest single noise multiplier accepted without a warning
MAX_SIGMA = 1e4


def schedule_span(sigma) -> float:
    """``max sigma_t / min sigma_t`` over the noisy (finite) steps; 1 for fewer than two.

    >>> schedule_span([1.0, 10.0, float("inf")])
    10.0
    """
    s = _check(sigma)
    f = s[np.isfinite(s)]
    if f.size < 2:
        return 1.0
    return float(f.max() / f.min())


def _check(sigma) -> np.ndarray:
    try:
        s = np.atleast_1d(np.asarray(sigma, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"sigma must be a sequence of noise multipliers > 0, got {sigma!r}"[:200]) from None
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"sigma must be a non-empty 1-D sequence, got shape {s.shape}")
    if np.any(np.isnan(s)) or np.any(s <= 0):
        raise ValueError("sigma must be > 0 at every step (inf = a noiseless step), got a value <= 0 or NaN")
    return s


def schedule_warnings(sigma, *, max_span: float = MAX_SPAN, max_sigma: float = MAX_SIGMA) -> list[str]:
    """Human-readable warnings (empty: none) for a schedule whose noise multipliers span more than
    ``max_span`` (over noisy steps) or exceed ``max_sigma``; they name the numbers and what to change.

    >>> schedule_warnings([1.6, 1.6, 1.6])
    []
    >>> w = schedule_warnings([1e9, 1e3, 1.0])
    >>> len(w), w[0].split(":")[0]
    (2, 'noise multipliers span a factor 1e+09')
    """
    s = _check(sigma)
    if not (isinstance(max_span, (int, float)) and math.isfinite(max_span) and max_span >= 1):
        raise ValueError(f"max_span must be a finite number >= 1, got {max_span!r}")
    if not (isinstance(max_sigma, (int, float)) and math.isfinite(max_sigma) and max_sigma > 0):
        raise ValueError(f"max_sigma must be a finite number > 0, got {max_sigma!r}")
    out: list[str] = []
    f = s[np.isfinite(s)]
    if f.size == 0:
        return out
    span = schedule_span(s)
    hint = ("use a larger curvature guess kappa, fewer steps T, or a uniform / exponential schedule "
            "(see the book's h-x-eer-breakdown page)")
    if span > max_span:
        out.append(f"noise multipliers span a factor {span:.3g}: from {f.min():.3g} to {f.max():.3g} (more than "
                   f"{max_span:g}); with clipped gradients the noisiest steps move the model further than the "
                   f"other steps can undo; {hint}")
    if f.max() > max_sigma:
        t = int(np.argmax(np.where(np.isfinite(s), s, -np.inf))) + 1
        out.append(f"noise multiplier {f.max():.3g} at step {t} exceeds {max_sigma:g}: that step's noise alone "
                   f"is {f.max():.3g} clip norms per sample; {hint}")
    return out
