"""Verdict rules of the theory pages' numeric comparisons (h-f-theory, accounting, h-sec-4-2).

These numbers have no sampling noise (a closed form or an exhaustive search against the
number the paper's printed formula gives), so they are judged by
:func:`~.rule.judge_exact` within one stated relative tolerance, :data:`H_THEORY_RTOL`, the
tolerance the page states (there is no hidden 'partly' band: the page once used a relative 0.5
for it). A printed value of zero is judged within the absolute tolerance :data:`H_THEORY_RTOL`.
"""

from __future__ import annotations

import math

import numpy as np

from dpcompanion.experiments.comparisons import wu
from dpcompanion.experiments.comparisons.rows import row_of
from dpcompanion.experiments.comparisons.rule import Rule, judge_exact
from dpcompanion.theory import accounting
from dpcompanion.theory.bounds import gd, momentum as mom

__all__ = ["RULES", "H_THEORY_RTOL", "H_SEC_4_2_RTOL", "h_f_theory_rows", "accounting_rows", "h_sec_4_2_rows"]

#: the one tolerance of the h-f-theory page (relative; absolute for a printed zero)
H_THEORY_RTOL = 1e-3


#: h-sec-4-2: the tolerance of the page's eta0 rows (relative)
H_SEC_4_2_RTOL = 1e-2


def _judge_value(*, paper: float, ours: float, what: str, rtol: float = H_THEORY_RTOL) -> tuple:
    j = (judge_exact(ours, paper, rtol=rtol) if paper
         else judge_exact(ours, 0.0, atol=rtol))
    return j.verdict, f"{ours:.6g}", j.note, f"{paper:.6g} ({what})", j


def _judge_inequality(*, lhs: float, rhs: float, claim: str) -> tuple:
    """A printed strict inequality ``lhs > rhs`` between two exact numbers."""
    ok = float(lhs) > float(rhs)
    return ("agrees" if ok else "disagrees", f"{lhs:.6g} vs {rhs:.6g}",
            f"exact numbers: {'holds' if ok else 'fails'}", claim)


def h_f_theory_rows() -> list[dict]:
    """The h-f-theory page's paper-vs-ours rows (the FAccT version, kappa = 10, alpha = 1e-3): R for
    (4, 1e-8)-DP, the T of Thm 4.4's statement vs the exhaustive search, Eq. 24's T as
    kappa -> infinity, and the ratio of the minimal uniform to the minimal dynamic bound
    (Eq. 25 over Eq. 27 vs both exact minima)."""
    k0, a0 = 10.0, 1e-3
    R = accounting.R_zcdp(epsilon=4.0, delta=1e-8)
    T_stat = int(math.ceil(gd.t_dynamic_statement(kappa=k0, alpha=a0)))
    cases = [
        ("R for (4, 1e-8)-DP (Sec. 5)", 0.3927, R, "the FAccT version, Sec. 5"),
        (f"T minimising the dynamic bound, kappa={k0:g}, alpha={a0:g} (Thm 4.4)", T_stat,
         gd.argmin_dynamic(kappa=k0, alpha=a0)[0], "Thm 4.4's statement; ours: exhaustive search"),
        ("Eq. 24's T as kappa -> infinity, alpha = 0.1 (text after Eq. 9)", 0.0, gd.t_uniform(kappa=1e8, alpha=0.1),
         "text after Eq. 9; the limit is 1/alpha"),
        (f"minimal uniform bound / minimal dynamic bound, kappa={k0:g}, alpha={a0:g}",
         gd.erub_uniform_eq25(kappa=k0, alpha=a0) / gd.erub_dynamic_min(kappa=k0, alpha=a0),
         gd.argmin_uniform(kappa=k0, alpha=a0)[1] / gd.argmin_dynamic(kappa=k0, alpha=a0)[1],
         "Eq. 25 over the Eq. 27 minimum; ours: both exact minima"),
    ]
    return [_row("h-f-theory/value", sizes_match=True, item=item, paper=float(np.asarray(p)),
                    ours=float(np.asarray(o)), what=what) for item, p, o, what in cases]


def accounting_rows() -> list[dict]:
    """The accounting page's rows (H Sec. 5 and 4.1.3): rho and R for (4, 1e-8)-DP within one
    unit of the printed 4th decimal, the printed inversion's R within a relative 1e-3, and the
    printed inequality R_zCDP > R_MA. W's moments-accountant epsilons are W-EPS's rows
    (:func:`.wu.w_eps_rows`, one rule for W-EPS everywhere)."""
    from dpcompanion.claims import w_adp

    eps0, delta0 = 4.0, 1e-8
    rho0 = accounting.dp_to_zcdp(epsilon=eps0, delta=delta0)
    R0 = accounting.R_zcdp(epsilon=eps0, delta=delta0)
    R_printed = accounting.R_zcdp_as_printed(epsilon=eps0, delta=delta0)
    R_ma0 = accounting.R_ma(epsilon=eps0, delta=delta0)
    rows = [
        _row("accounting/value", sizes_match=True, item="rho-zCDP for (4, 1e-8)-DP (H Sec. 5)", paper=0.1963,
                ours=rho0, rtol=1e-4 / 0.1963, what=f"H Sec. 5, 4 decimals: the paper truncates {rho0:.5f}"),
        _row("accounting/value", sizes_match=True, item="R = 2 rho (H Sec. 5)", paper=0.3927, ours=R0,
                rtol=1e-4 / 0.3927, what="H Sec. 5, 4 decimals"),
        _row("accounting/value", sizes_match=True, item="R from the Sec. 4.1.3 inversion as printed",
                paper=float(R_printed), ours=R0, rtol=1e-3, what="H Sec. 4.1.3's formula: it takes the wrong root"),
        _row("accounting/inequality", sizes_match=True, item="Sec. 4.1.3: R_zCDP > R_MA = eps^2/ln(1/delta)",
                lhs=R0, rhs=R_ma0, claim="R_zCDP > R_MA (H Sec. 4.1.3); with the correct root R_zCDP < R_MA for every "
                "eps > 0"),
    ]
    return rows + [{**r, "item": f"W moments-accountant epsilon, {r['item']}"} for r in wu.w_eps_rows(w_adp.w_eps_table())]


def h_sec_4_2_rows() -> list[dict]:
    """The h-sec-4-2 page's rows (text after H Thm 4.5): the printed eta0 <= 0.98/M for
    beta = 0.9, gamma = 0.99 against the theorem's own bound and the statement's zeta, within a
    relative :data:`H_SEC_4_2_RTOL`."""
    b0, g0, paper = 0.9, 0.99, 0.98
    eta0_thm = mom.eta0_max(beta=b0, gamma=g0)
    eta0_stmt = 8 / (math.sqrt(1 + 64 / (b0 * (1 - b0) ** 3)) + 1)
    return [_row("h-sec-4-2/value", sizes_match=True, item=f"largest eta0 for beta = {b0}, gamma = {g0} (text "
                    "after Thm 4.5)", paper=paper, ours=float(eta0_thm), rtol=H_SEC_4_2_RTOL,
                    what="the theorem's own bound; eta0 is dimensionless"),
            _row("h-sec-4-2/value", sizes_match=True, item="same, from the statement's zeta", paper=paper,
                    ours=float(eta0_stmt), rtol=H_SEC_4_2_RTOL, what="statement and proof differ")]


RULES: tuple[Rule, ...] = (
    Rule("h-f-theory/value", "a number of the paper's formulas vs our computation", "the FAccT version (per row)",
         f"agrees within a relative {H_THEORY_RTOL:g} (absolute for a printed zero), else disagrees",
         _judge_value),
    Rule("accounting/value", "a number of the paper's accounting vs ours", "H Sec. 4.1.3, 5 (per row)",
         "agrees within the row's relative tolerance (one unit of the printed last decimal, or 1e-3), else disagrees",
         _judge_value),
    Rule("accounting/inequality", "a printed inequality between exact numbers", "H Sec. 4.1.3",
         "agrees when it holds, else disagrees", _judge_inequality),
    Rule("h-sec-4-2/value", "eta0 bound after Thm 4.5 vs ours", "H text after Thm 4.5: eta0 <= 0.98/M",
         f"agrees within a relative {H_SEC_4_2_RTOL:g}, else disagrees", _judge_value),
)


def _row(rule_id: str, **kw) -> dict:
    """One paper-vs-ours row of this module's rule ``rule_id`` (:func:`.rows.row_of`)."""
    by_id = {r.id: r for r in RULES}
    if rule_id not in by_id:
        raise ValueError(f"rule must be one of {', '.join(by_id)}, got {rule_id!r}")
    return row_of(by_id[rule_id], **kw)
