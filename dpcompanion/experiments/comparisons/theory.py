"""Verdict rules of the theory pages' numeric comparisons (Hong et al.: the h-f-theory page).

These numbers have no sampling noise (a closed form or an exhaustive search against the
number the paper's printed formula gives), so they are judged by
:func:`~.rule.judge_exact` within one stated relative tolerance, :data:`H_THEORY_RTOL`, the
tolerance the page states (there is no hidden 'partly' band: the page once used a relative 0.5
for it). A printed value of zero is judged within the absolute tolerance :data:`H_THEORY_RTOL`.
"""

from __future__ import annotations

import math

import numpy as np

from dpcompanion.experiments.comparisons.rule import Rule, judge_exact

__all__ = ["RULES", "H_THEORY_RTOL", "h_f_theory_rows"]

#: the one tolerance of the h-f-theory page (relative; absolute for a printed zero)
H_THEORY_RTOL = 1e-3


def _judge_value(*, paper: float, ours: float, what: str) -> tuple:
    j = (judge_exact(ours, paper, rtol=H_THEORY_RTOL) if paper
         else judge_exact(ours, 0.0, atol=H_THEORY_RTOL))
    return j.verdict, f"{ours:.6g}", j.note, f"{paper:.6g} ({what})", j


def h_f_theory_rows() -> list[dict]:
    """The h-f-theory page's paper-vs-ours rows (001, kappa = 10, alpha = 1e-3): R for
    (4, 1e-8)-DP, the T of Thm 4.4's statement vs the exhaustive search, Eq. 24's T as
    kappa -> infinity, and the ratio of the minimal uniform to the minimal dynamic bound
    (Eq. 25 over Eq. 27 vs both exact minima)."""
    from dpcompanion.experiments.comparisons import compare
    from dpcompanion.theory import accounting
    from dpcompanion.theory.bounds import gd

    k0, a0 = 10.0, 1e-3
    R = accounting.R_zcdp(epsilon=4.0, delta=1e-8)
    T_stat = int(math.ceil(gd.t_dynamic_statement(kappa=k0, alpha=a0)))
    cases = [
        ("R for (4, 1e-8)-DP (Sec. 5)", 0.3927, R, "001 Sec. 5"),
        (f"T minimising the dynamic bound, kappa={k0:g}, alpha={a0:g} (Thm 4.4)", T_stat,
         gd.argmin_dynamic(kappa=k0, alpha=a0)[0], "Thm 4.4's statement; ours: exhaustive search"),
        ("Eq. 24's T as kappa -> infinity, alpha = 0.1 (text after Eq. 9)", 0.0, gd.t_uniform(kappa=1e8, alpha=0.1),
         "text after Eq. 9; the limit is 1/alpha"),
        (f"minimal uniform bound / minimal dynamic bound, kappa={k0:g}, alpha={a0:g}",
         gd.erub_uniform_eq25(kappa=k0, alpha=a0) / gd.erub_dynamic_min(kappa=k0, alpha=a0),
         gd.argmin_uniform(kappa=k0, alpha=a0)[1] / gd.argmin_dynamic(kappa=k0, alpha=a0)[1],
         "Eq. 25 over the Eq. 27 minimum; ours: both exact minima"),
    ]
    return [compare("h-f-theory/value", sizes_match=True, item=item, paper=float(np.asarray(p)),
                    ours=float(np.asarray(o)), what=what) for item, p, o, what in cases]


RULES: tuple[Rule, ...] = (
    Rule("h-f-theory/value", "a number of the paper's formulas vs our computation", "001 (per row)",
         f"agrees within a relative {H_THEORY_RTOL:g} (absolute for a printed zero), else disagrees",
         _judge_value),
)
