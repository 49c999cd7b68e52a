"""Warnings about noise schedules that are budget-exact but useless in practice.

The H-X-EER finding (book page ``h-x-eer``, experiment ``h-x-eer-breakdown``): Hong et
al. 2022 (FAccT, arXiv 2101.07413) Thm 4.4's dynamic schedule,
``sigma_t^2 ∝ gamma^{-(T-t)/2}`` with ``gamma = 1 - 1/kappa`` (Lemma 4.3 applied to Thm 4.1's
``q_t = alpha gamma^{T-t}``), makes the first steps' noise multiplier astronomically large
when kappa is near 1 or T is long: its span ``max sigma / min sigma`` is
``gamma^{-(T-1)/4}``. The bound of Thm 4.1 (and the exact risk of *unclipped* PGD on a
quadratic) shrug this off, because a contraction of ``1 - eta mu`` per step wipes any
displacement out. With per-sample clipping, a step moves the parameters by at most
``lr * clip_norm``, so a displacement of ``lr * clip_norm * sigma_1 * sqrt(D) / N`` from the
first step is never undone: the trained model is noise.

:func:`schedule_warnings` flags such schedules from the schedule alone (no data), so a
command that prints or trains a schedule can warn before anything is spent.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["MAX_SPAN", "MAX_SIGMA", "schedule_warnings", "schedule_span"]

#: default largest ratio max sigma_t / min sigma_t accepted without a warning. Read off the
#: breakdown map (experiment ``h-x-eer-breakdown``): there, every (kappa, T) cell where the
#: clipped trainer ended more than 10x above the exact risk had a span above 20, and the
#: paper's own exponential schedules stay below it (gamma = 0.9 over T = 100 spans
#: 0.9^{-99/4} = 13.5)
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
    """Human-readable warnings (empty list: none) for a schedule ``sigma_1..sigma_T``:

    * its noise multipliers span more than ``max_span`` (``max/min`` over noisy steps);
    * some step's multiplier exceeds ``max_sigma``.

    Both mean that, with clipped gradients, the noisiest steps displace the model further
    than the remaining steps can move it back (H-X-EER breakdown; the FAccT version's Thm 4.4 schedule at
    small kappa). The warnings name the numbers and what to change.

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
