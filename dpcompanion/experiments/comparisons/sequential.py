"""Group-sequential looks at a growing number of seeds ("add seeds ... with a
group-sequential boundary, so that looking again does not inflate the error rate").

A comparison whose seeds are added in stages is looked at after each stage. Judged at every
look with the ordinary 95% interval, it would be wrong more often than 5% of the time (five
looks at a true zero: about 14%). The plan below is declared before the added seeds are run
(an experiment's ``sequential``, :attr:`dpcompanion.experiments.base.Experiment.sequential`): the cumulative number of seeds at each look, and the overall
two-sided error rate, spent over the looks by the Lan-DeMets O'Brien-Fleming-type function
``alpha(t) = 2 - 2 Phi(z_{1 - alpha/2} / sqrt(t))`` (Lan & DeMets 1983), ``t`` the share of the
planned seeds seen. The boundaries ``c_1 > c_2 > ... > c_K`` (normal scale) solve

    P(|Z_1| < c_1, ..., |Z_{k-1}| < c_{k-1}, |Z_k| >= c_k) = alpha(t_k) - alpha(t_{k-1})

for the Brownian-motion correlation of the looks (``corr(Z_j, Z_k) = sqrt(t_j / t_k)``),
computed by numerical integration on a grid (Armitage, McPherson & Rowe 1969; Jennison &
Turnbull 2000, Ch. 19), no simulation. Every look is judged by a *repeated confidence
interval* (Jennison & Turnbull 2000, Ch. 9): ``estimate +- q_k se``, ``q_k`` the Student t
quantile (n_k - 1 df) at the normal boundary's tail probability, so that all K intervals
cover together with probability about 95%. A row is decided at the first look whose interval
excludes zero (agrees or disagrees), or lies inside the practical margin by TOST, whose two
one-sided 5% tests get boundaries of their own (the same spending at two-sided 10%). A row
undecided at the last planned look stays ``inconclusive``.

The integration is the textbook recursion (neither scipy nor statsmodels has group-sequential
boundaries), tested against a Monte Carlo simulation of the looks and against published boundaries.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable, Sequence

import numpy as np

__all__ = ["Plan", "obf_spending", "boundaries", "Look", "judge_sequential", "GRID"]

#: grid points per look in the numerical integration (boundaries to about 1e-6)
GRID = 4001


def obf_spending(t: float, *, alpha: float) -> float:
    """Lan-DeMets O'Brien-Fleming-type spending: the two-sided error rate spent by the share
    ``t`` in (0, 1] of the planned information; ``alpha`` at ``t = 1``.

    >>> round(obf_spending(1.0, alpha=0.05), 12), round(obf_spending(0.5, alpha=0.05), 6)
    (0.05, 0.005575)
    """
    from scipy import stats

    if not 0 < t <= 1:
        raise ValueError(f"t must be in (0, 1], got {t!r}")
    z = float(stats.norm.isf(alpha / 2))
    return float(2 * stats.norm.sf(z / math.sqrt(t)))


@functools.lru_cache(maxsize=64)
def boundaries(fractions: tuple[float, ...], *, alpha: float = 0.05) -> tuple[float, ...]:
    """Two-sided normal-scale boundaries ``c_1..c_K`` at the information ``fractions``
    (increasing, the last 1) spending ``alpha`` by :func:`obf_spending`.

    One look is the fixed-sample test:

    >>> round(boundaries((1.0,))[0], 4)
    1.96
    """
    from scipy import optimize, stats

    t = np.asarray(fractions, dtype=float)
    if t.ndim != 1 or t.size < 1 or not np.all(np.diff(t) > 0) or t[0] <= 0 or abs(t[-1] - 1) > 1e-12:
        raise ValueError(f"fractions must increase within (0, 1] and end at 1, got {fractions!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    spend = np.diff(np.concatenate([[0.0], [obf_spending(float(x), alpha=alpha) for x in t]]))
    c = [float(stats.norm.isf(spend[0] / 2))]
    # sub-density of the score S_1 = Z_1 sqrt(t_1) on the continuation region |s| < c_1 sqrt(t_1)
    b = c[0] * math.sqrt(t[0])
    s = np.linspace(-b, b, GRID)
    g = stats.norm.pdf(s, scale=math.sqrt(t[0]))
    w = _simpson_weights(s)
    for k in range(1, t.size):
        sd = math.sqrt(t[k] - t[k - 1])
        mass = g * w

        def crossing(ck: float) -> float:
            bk = ck * math.sqrt(t[k])
            return float(np.sum(mass * (stats.norm.cdf((-bk - s) / sd) + stats.norm.sf((bk - s) / sd))))

        target = spend[k]
        if target <= 0:
            c.append(math.inf)
            continue
        hi = 1.0
        while crossing(hi) > target:
            hi *= 2
        ck = float(optimize.brentq(lambda x: crossing(x) - target, 1e-6, hi, xtol=1e-10))
        c.append(ck)
        bk = ck * math.sqrt(t[k])
        s_new = np.linspace(-bk, bk, GRID)
        g = (stats.norm.pdf((s_new[:, None] - s[None, :]) / sd) / sd) @ mass
        s, w = s_new, _simpson_weights(s_new)
    return tuple(c)


def _simpson_weights(x: np.ndarray) -> np.ndarray:
    """Composite Simpson weights on an evenly spaced grid of an odd number of points."""
    n = x.size
    if n < 3 or n % 2 == 0:
        raise ValueError(f"Simpson's rule needs an odd number >= 3 of points, got {n}")
    h = (x[-1] - x[0]) / (n - 1)
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w * h / 3


@dataclasses.dataclass(frozen=True)
class Plan:
    """A declared group-sequential plan: ``looks`` the cumulative numbers of seeds (paired
    runs) at which the comparison is judged, ``alpha`` its overall two-sided error rate,
    ``reason`` why these looks (cost, the paper's runs ...). Declared before the added seeds
    run, as its experiment's ``sequential``."""

    looks: tuple[int, ...]
    alpha: float = 0.05
    reason: str = ""
    #: what is counted at a look: "seeds" (paired runs of two arms) or "repeats"
    unit: str = "seeds"
    #: whether the looks were really taken between batches of runs (each batch judged before
    #: the next was run). False (no record of a look taken): every run was in one batch, so no
    #: boundary applies and the row is judged on all its runs at the fixed level (:func:`judge_sequential`)
    interim_looks: bool = False

    def __post_init__(self):
        if len(self.looks) < 1 or any(int(n) != n or n < 2 for n in self.looks) or list(self.looks) != sorted(set(self.looks)):
            raise ValueError(f"looks must be increasing whole numbers >= 2, got {self.looks!r}")

    @property
    def fractions(self) -> tuple[float, ...]:
        return tuple(n / self.looks[-1] for n in self.looks)

    def z(self) -> tuple[float, ...]:
        """The boundaries of the effect test (two-sided ``alpha``), normal scale."""
        return boundaries(self.fractions, alpha=self.alpha)

    def z_tost(self) -> tuple[float, ...]:
        """The boundaries of TOST's two one-sided tests at ``alpha`` each (two-sided ``2 alpha``)."""
        return boundaries(self.fractions, alpha=2 * self.alpha)

    def describe(self) -> str:
        zs = ", ".join(f"{z:.3g}" for z in self.z())
        return (f"group-sequential plan: looks at {', '.join(f'{n:,}' for n in self.looks)} {self.unit}, two-sided "
                f"{self.alpha:g} spent by the O'Brien-Fleming-type function (Lan-DeMets), boundaries z = {zs}")


@dataclasses.dataclass(frozen=True)
class Look:
    """One look of a plan: its number ``k`` of ``K``, its seeds ``n``, the nominal two-sided
    level of its repeated interval (``level``) and the one-sided level of its TOST tests
    (``tost_alpha``), both from the plan's normal boundaries."""

    k: int
    K: int
    n: int
    z: float
    level: float
    tost_alpha: float
    #: a single look at every run, at the fixed level (the plan's looks were never taken)
    fixed: bool = False

    @property
    def label(self) -> str:
        return "all runs, fixed level (no interim look was taken)" if self.fixed else f"look {self.k} of {self.K}"


def looks_of(plan: Plan, n_available: int) -> list[Look]:
    """The looks of ``plan`` that ``n_available`` seeds reach (a run short of the plan is
    judged at the looks it reached: the error rate it spends is then below ``alpha``)."""
    from scipy import stats

    z, zt = plan.z(), plan.z_tost()
    K = len(plan.looks)
    return [Look(k=i + 1, K=K, n=n, z=z[i], level=float(1 - 2 * stats.norm.sf(z[i])),
                 tost_alpha=float(stats.norm.sf(zt[i])))
            for i, n in enumerate(plan.looks) if n <= n_available]


#: verdicts that end a sequential comparison (words of :data:`.rule.VERDICTS`)
DECIDED = ("agrees", "disagrees", "partly", "equivalent")


def judge_sequential(plan: Plan, n_available: int, judge_at: Callable[[Look], "object"]):
    """Judge at each look that ``n_available`` seeds reach, in order, until one decides
    (:data:`DECIDED`); ``judge_at(look)`` returns a :class:`~.rule.Judgement` computed from the
    first ``look.n`` seeds at the look's levels. Returns ``(judgement, look, per_look)``: the
    deciding (or last) look's, and the verdict at every look taken. None when no look is
    reached (fewer seeds than the first look).

    A plan whose looks were never taken between batches (``plan.interim_looks`` False) has no
    boundary to apply: one look at all ``n_available`` runs, at the fixed 95% level and TOST at 5%.
    """
    if not plan.interim_looks:
        from dpcompanion.experiments.comparisons.rule import LEVEL, TOST_ALPHA, critical_value

        if n_available < 2:
            return None
        look = Look(k=1, K=1, n=int(n_available), z=critical_value(None), level=LEVEL, tost_alpha=TOST_ALPHA, fixed=True)
        j = judge_at(look)
        return j, look, [(look.n, j.verdict)]
    taken = []
    for look in looks_of(plan, n_available):
        j = judge_at(look)
        taken.append((look, j))
        if j.verdict in DECIDED:
            break
    if not taken:
        return None
    look, j = taken[-1]
    return j, look, [(lk.n, jj.verdict) for lk, jj in taken]


def first_seeds(x: Sequence[float], n: int) -> np.ndarray:
    """The first ``n`` per-seed values (seeds are added at the end, so a look's seeds are a prefix)."""
    a = np.asarray(x, dtype=float)
    if n > a.size:
        raise ValueError(f"a look at {n} seeds needs {n} values, got {a.size}")
    return a[:n]
