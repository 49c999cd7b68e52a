"""Pooling the cells of a table into one verdict: the random-effects mean of
the cells' effects (:func:`pool_random_effects`), which W's table rules
(:func:`dpcompanion.experiments.comparisons.wu_rules.judge_table`) and W-F4's pooled decay judge
as one effect with :func:`~.rule.judge_effect`."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpcompanion.experiments.comparisons.rule import critical_value

__all__ = ["Pooled", "pool_random_effects"]


@dataclasses.dataclass(frozen=True)
class Pooled:
    """A pooled effect over ``k`` cells: ``estimate``, its ``se`` and ``df`` (Student t; None:
    normal, a single cell), the 95% interval, the between-cell variance ``tau2`` and
    Cochran's ``Q``."""

    estimate: float
    se: float
    df: float | None
    ci_low: float
    ci_high: float
    k: int
    tau2: float
    Q: float


def pool_random_effects(estimates, ses) -> Pooled:
    """The random-effects mean of ``k`` cells' effects, each with its standard
    error: DerSimonian-Laird's between-cell variance ``tau2 = max(0, (Q - (k - 1)) / C)`` with
    the fixed-effect weights ``w = 1 / se^2`` (``Q = sum w (y - ybar_w)^2``,
    ``C = sum w - sum w^2 / sum w``), the mean weighted by ``1 / (se^2 + tau2)``, and the
    modified Hartung-Knapp-Sidik-Jonkman interval (Roever, Knapp & Friede 2015): the standard
    error ``sqrt(1 / sum w*)`` scaled by ``sqrt(max(1, q))``, ``q = sum w* (y - mu)^2 / (k - 1)``,
    with Student t on ``k - 1`` degrees of freedom, never narrower than DerSimonian-Laird's.

    Why random effects: the cells of a table differ in epsilon_bar, clip and epochs, and so do
    their true gains (the paper's printed gaps range over more than an order of magnitude), so
    no common effect is assumed; the pooled gap is the mean gain over cells like these, its
    interval carrying the between-cell spread. Why the Hartung-Knapp interval: a table pools 2
    to 12 cells, where DerSimonian-Laird's normal interval is too narrow. One cell: that cell
    (normal interval, no between-cell variance).

    >>> p = pool_random_effects([1.0, 1.0, 1.0], [0.5, 0.5, 0.5]); p.estimate, p.tau2, p.df
    (1.0, 0.0, 2)
    >>> p = pool_random_effects([0.0, 4.0], [1.0, 1.0]); round(p.tau2, 6), round(p.se, 6)
    (7.0, 2.0)
    """
    y, s = np.asarray(estimates, dtype=float).ravel(), np.asarray(ses, dtype=float).ravel()
    if y.size == 0 or y.shape != s.shape:
        raise ValueError(f"estimates and ses must be non-empty and of one length, got {y.size} and {s.size}")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(s)) and np.all(s >= 0)):
        raise ValueError("estimates and ses must be finite, ses >= 0")
    k = int(y.size)
    v = np.maximum(s**2, np.finfo(float).tiny)  # a zero spread: a weight as large as a float allows
    if k == 1:
        mu, se = float(y[0]), float(s[0])
        c = critical_value(None)
        return Pooled(estimate=mu, se=se, df=None, ci_low=mu - c * se, ci_high=mu + c * se, k=1, tau2=0.0, Q=0.0)
    w = 1.0 / v
    mu_f = float(np.sum(w * y) / np.sum(w))
    Q = float(np.sum(w * (y - mu_f) ** 2))
    C = float(np.sum(w) - np.sum(w**2) / np.sum(w))
    tau2 = max(0.0, (Q - (k - 1)) / C) if C > 0 else 0.0
    ws = 1.0 / (v + tau2)
    mu = float(np.sum(ws * y) / np.sum(ws))
    q = float(np.sum(ws * (y - mu) ** 2) / (k - 1))
    se = math.sqrt(1.0 / float(np.sum(ws))) * math.sqrt(max(1.0, q))
    c = critical_value(k - 1)
    return Pooled(estimate=mu, se=se, df=k - 1, ci_low=mu - c * se, ci_high=mu + c * se, k=k, tau2=tau2, Q=Q)
