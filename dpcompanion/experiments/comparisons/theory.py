"""Verdict rules of the theory pages' numeric comparisons (h-f-theory, accounting, h-sec-4-2).

These numbers have no sampling noise (a closed form or an exhaustive search against the number the paper's
printed formula gives), so they are judged by :func:`~.rule.judge_exact` within the one relative tolerance
the page states, :data:`H_THEORY_RTOL` (absolute for a printed zero). A row whose printed number we do not
reproduce carries the natural readings of the theorem behind it (:mod:`.readings`: the statement's vs the
proof's constants, log base, integer T, a missing factor 2, rho vs R = 2 rho, the quadratic's other root),
never the printed formula itself; the verdict stays the stated protocol's."""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from dpcompanion.experiments.comparisons import readings as rd, wu_rules
from dpcompanion.experiments.comparisons.rule import Case, Judgement, Rule, judge_exact, row_of
from dpcompanion.theory import accounting
from dpcompanion.theory.bounds import gd, momentum as mom

__all__ = ["RULES", "H_THEORY_RTOL", "H_SEC_4_2_RTOL", "h_f_theory_rows", "accounting_rows", "h_sec_4_2_rows",
           "t_star_readings", "t_limit_readings", "R_readings", "eta0_readings"]

#: the one tolerance of the h-f-theory page (relative; absolute for a printed zero)
H_THEORY_RTOL = 1e-3


#: h-sec-4-2: the tolerance of the page's eta0 rows (relative)
H_SEC_4_2_RTOL = 1e-2


def _judge_value(*, paper: float, ours: float, what: str, rtol: float = H_THEORY_RTOL, explained: str = "",
                 printed: bool = True) -> Judgement:
    """``explained``: the closest reading's sentence (:func:`.readings.note`), appended to the note.
    ``printed=False``: the paper prints no such number (``paper`` is what its formulas give): shown,
    not judged."""
    if not printed:
        return Judgement("not comparable", f"the paper prints no such number: its formulas give {paper:.6g}, the exact "
                         f"computation {ours:.6g}" + (f"; {explained}" if explained else ""),
                         ours=f"{ours:.6g}", printed=f"{paper:.6g} ({what}; not printed in the paper)")
    j = (judge_exact(ours, paper, rtol=rtol) if paper
         else judge_exact(ours, 0.0, atol=rtol))
    return j.for_row(f"{ours:.6g}", remark=f"; {explained}" if explained else "", printed=f"{paper:.6g} ({what})")


def _judge_inequality(*, lhs: float, rhs: float, claim: str, explained: str = "") -> Judgement:
    """A printed strict inequality ``lhs > rhs`` between two exact numbers."""
    ok = float(lhs) > float(rhs)
    return Judgement("agrees" if ok else "disagrees",
                     f"exact numbers: {'holds' if ok else 'fails'}" + (f"; {explained}" if explained else ""),
                     ours=f"{lhs:.6g} vs {rhs:.6g}", printed=claim)


def t_star_readings(*, kappa: float, alpha: float) -> list[rd.Reading]:
    """Readings of "the T minimising the dynamic ERUB" (H Thm 4.4): the
    exhaustive integer minimiser (stated), the continuous one (Eq. 27), the statement's form in
    log base 10 or 2, without its factor 2, with kappa^2 alpha (the order of Eq. 11), Eq. 27 with
    ln(1/gamma) ~ 1/kappa and 1 - sqrt(gamma) ~ 1/(2 kappa), and the uniform schedule's T
    (Eq. 24 and the exhaustive uniform minimiser).

    >>> [r.stated for r in t_star_readings(kappa=10, alpha=1e-3)][:2]
    [True, False]
    """
    u = 1 + 1 / (kappa * alpha)
    return [rd.Reading("exhaustive integer minimiser of the dynamic ERUB", gd.argmin_dynamic(kappa=kappa, alpha=alpha)[0],
                       stated=True),
            rd.Reading("continuous minimiser (Eq. 27)", gd.t_dynamic(kappa=kappa, alpha=alpha)),
            rd.Reading("the statement's form in log base 10", 2 * kappa * math.log10(u)),
            rd.Reading("the statement's form in log base 2", 2 * kappa * math.log2(u)),
            rd.Reading("the statement's form without its factor 2", kappa * math.log(u)),
            rd.Reading("the statement's form with kappa^2 alpha (Eq. 11's order)",
                       2 * kappa * math.log1p(1 / (kappa**2 * alpha))),
            rd.Reading("Eq. 27 with ln(1/gamma) ~ 1/kappa, 1 - sqrt(gamma) ~ 1/(2 kappa)",
                       2 * kappa * math.log1p(1 / (4 * kappa**2 * alpha))),
            rd.Reading("the uniform schedule's T (Eq. 24)", gd.t_uniform(kappa=kappa, alpha=alpha)),
            rd.Reading("exhaustive integer minimiser of the uniform ERUB", gd.argmin_uniform(kappa=kappa, alpha=alpha)[0])]


def t_limit_readings(*, kappa: float, alpha: float) -> list[rd.Reading]:
    """Readings of "the uniform schedule's T as kappa -> infinity" (text after Eq. 24) at
    a large ``kappa``: Eq. 24 (stated), Thm 4.2's order kappa ln(1 + 1/(kappa alpha)) and the
    surrogate's minimiser (Eq. 23, T >= 0).

    >>> [round(r.value, 3) for r in t_limit_readings(kappa=1e8, alpha=0.1)]
    [10.0, 10.0, 0.0]
    """
    return [rd.Reading("Eq. 24", gd.t_uniform(kappa=kappa, alpha=alpha), stated=True),
            rd.Reading("Thm 4.2's order kappa ln(1 + 1/(kappa alpha))", kappa * math.log1p(1 / (kappa * alpha))),
            rd.Reading("the surrogate's minimiser (Eq. 23, T >= 0)", gd.t_uniform_surrogate(kappa=kappa, alpha=alpha))]


def R_readings(*, epsilon: float, delta: float) -> list[rd.Reading]:
    """Readings of "R for (epsilon, delta)-DP by the zCDP inversion" (H Sec. 4.1.3, 5):
    R = 2 rho of the quadratic's positive root (stated), rho itself, the quadratic's other root
    (as R and as rho), and the RDP and exact accountants' R.

    >>> [round(r.value, 4) for r in R_readings(epsilon=4, delta=1e-8)][:2]
    [0.3927, 0.1964]
    """
    L = math.log(1 / delta)
    other_rho = (math.sqrt(L) + math.sqrt(L + epsilon)) ** 2
    return [rd.Reading("R = 2 rho, the positive root", accounting.R_zcdp(epsilon=epsilon, delta=delta), stated=True),
            rd.Reading("rho instead of R = 2 rho", accounting.dp_to_zcdp(epsilon=epsilon, delta=delta)),
            rd.Reading("R = 2 rho of the quadratic's other root", 2 * other_rho),
            rd.Reading("rho of the quadratic's other root", other_rho),
            rd.Reading("R of the RDP accountant", accounting.R_accountant(epsilon=epsilon, delta=delta)),
            rd.Reading("R of the exact Gaussian accountant", accounting.R_exact(epsilon=epsilon, delta=delta))]


def eta0_readings(*, beta: float, gamma: float) -> list[rd.Reading]:
    """Readings of "the largest eta0" after H Thm 4.5: the positive root of
    ``zeta = 1 - eta0/4 - c eta0^2`` with the proof's c = beta gamma / ((gamma-beta)^2 (1-beta)^3)
    and the statement's c = 1 / (beta (1-beta)^3) (both stated: they differ), each with (1-beta)^2
    or (1-beta) for (1-beta)^3 and with a factor 2 dropped from c.

    >>> r = eta0_readings(beta=0.9, gamma=0.99)
    >>> round(r[0].value, 6), round(r[1].value, 6)
    (0.003014, 0.029888)
    """
    def root(c: float) -> float:
        return float(max(np.roots([c, 0.25, -1.0]).real))

    base = {"the proof's zeta": beta * gamma / (gamma - beta) ** 2, "the statement's zeta": 1 / beta}
    out = [rd.Reading(n, root(c / (1 - beta) ** 3), stated=True) for n, c in base.items()]
    for n, c in base.items():
        out += [rd.Reading(f"{n} with 1-beta squared, not cubed", root(c / (1 - beta) ** 2)),
                rd.Reading(f"{n} with 1-beta not cubed", root(c / (1 - beta))),
                rd.Reading(f"{n} with a factor 2 dropped from its quadratic term", root(c / (1 - beta) ** 3 / 2))]
    return out


def h_f_theory_rows() -> list[dict]:
    """The h-f-theory page's paper-vs-ours rows (the FAccT version, kappa = 10, alpha = 1e-3): R for
    (4, 1e-8)-DP, the T of Thm 4.4's statement vs the exhaustive search, Eq. 24's T as
    kappa -> infinity, and the ratio of the minimal uniform to the minimal dynamic bound
    (Eq. 25 over Eq. 27 vs both exact minima)."""
    k0, a0 = 10.0, 1e-3
    R = accounting.R_zcdp(epsilon=4.0, delta=1e-8)
    T_stat = int(math.ceil(gd.t_dynamic_statement(kappa=k0, alpha=a0)))
    cases = [
        ("R for (4, 1e-8)-DP (Sec. 5)", 0.3927, R, "the FAccT version, Sec. 5", None),
        (f"T minimising the dynamic bound, kappa={k0:g}, alpha={a0:g} (Thm 4.4)", T_stat,
         gd.argmin_dynamic(kappa=k0, alpha=a0)[0], "Thm 4.4's statement; ours: exhaustive search",
         t_star_readings(kappa=k0, alpha=a0)),
        ("Eq. 24's T as kappa -> infinity, alpha = 0.1 (text after Eq. 9)", 0.0, gd.t_uniform(kappa=1e8, alpha=0.1),
         "text after Eq. 9; the limit is 1/alpha", t_limit_readings(kappa=1e8, alpha=0.1)),
    ]
    rows = [_row("h-f-theory/value", sizes_match=True, item=item, paper=float(np.asarray(p)),
                 ours=float(np.asarray(o)), what=what,
                 reading=None if rs is None else _closest(float(np.asarray(p)), rs, H_THEORY_RTOL))
            for item, p, o, what, rs in cases]
    rows[1]["paper_source"] = "formula"  # the T of Thm 4.4's statement: the value of its formula
    # the paper prints no ratio of the two minimal bounds (Thms 4.2 and 4.4 state orders): what its
    # formulas give is shown beside the exact minima, not judged
    ratio = _row("h-f-theory/value", sizes_match=True, printed=False,
                 item=f"minimal uniform bound / minimal dynamic bound, kappa={k0:g}, alpha={a0:g}",
                 paper=float(gd.erub_uniform_eq25(kappa=k0, alpha=a0) / gd.erub_dynamic_min(kappa=k0, alpha=a0)),
                 ours=float(gd.argmin_uniform(kappa=k0, alpha=a0)[1] / gd.argmin_dynamic(kappa=k0, alpha=a0)[1]),
                 what="Eq. 25 over the Eq. 27 minimum; ours: both exact minima")
    return rows + [{**ratio, "paper_source": "formula"}]


def accounting_rows() -> list[dict]:
    """The accounting page's rows (H Sec. 5 and 4.1.3): rho and R for (4, 1e-8)-DP within one
    unit of the printed 4th decimal, the printed inversion's R within a relative 1e-3, and the
    printed inequality R_zCDP > R_MA. W's moments-accountant epsilons are W-EPS's rows
    (:func:`.wu_rules.w_eps_rows`, one rule for W-EPS everywhere)."""
    from dpcompanion.claims import w_adp_eps

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
        {**_row("accounting/value", sizes_match=True, item="R from the Sec. 4.1.3 inversion as printed",
                paper=float(R_printed), ours=R0, rtol=1e-3, what="H Sec. 4.1.3's formula: it takes the wrong root",
                reading=_closest(float(R_printed), R_readings(epsilon=eps0, delta=delta0), 1e-3)),
         "paper_source": "formula"},
        _row("accounting/inequality", sizes_match=True, item="Sec. 4.1.3: R_zCDP > R_MA = eps^2/ln(1/delta)",
                lhs=R0, rhs=R_ma0, claim="R_zCDP > R_MA (H Sec. 4.1.3); with the correct root R_zCDP < R_MA for every "
                "eps > 0", reading=rd.closest(R_ma0, R_readings(epsilon=eps0, delta=delta0), relation=">")),
    ]
    return rows + [{**r, "item": f"W moments-accountant epsilon, {r['item']}"}
                   for r in wu_rules.w_eps_rows(w_adp_eps.w_eps_table(), w_adp_eps.w_eps_readings())]


def h_sec_4_2_rows() -> list[dict]:
    """The h-sec-4-2 page's rows (text after H Thm 4.5): the printed eta0 <= 0.98/M for
    beta = 0.9, gamma = 0.99 against the theorem's own bound and the statement's zeta, within a
    relative :data:`H_SEC_4_2_RTOL`."""
    b0, g0, paper = 0.9, 0.99, 0.98
    eta0_thm = mom.eta0_max(beta=b0, gamma=g0)
    eta0_stmt = 8 / (math.sqrt(1 + 64 / (b0 * (1 - b0) ** 3)) + 1)
    c = _closest(paper, eta0_readings(beta=b0, gamma=g0), H_SEC_4_2_RTOL)
    return [_row("h-sec-4-2/value", sizes_match=True, item=f"largest eta0 for beta = {b0}, gamma = {g0} (text "
                    "after Thm 4.5)", paper=paper, ours=float(eta0_thm), rtol=H_SEC_4_2_RTOL,
                    what="the theorem's own bound; eta0 is dimensionless", reading=c),
            _row("h-sec-4-2/value", sizes_match=True, item="same, from the statement's zeta", paper=paper,
                    ours=float(eta0_stmt), rtol=H_SEC_4_2_RTOL, what="statement and proof differ", reading=c)]


RULES: tuple[Rule, ...] = (
    Rule("h-f-theory/value", "a number of the paper's formulas vs our computation", "the FAccT version (per row)",
         f"agrees within a relative {H_THEORY_RTOL:g} (absolute for a printed zero), else disagrees",
         _judge_value,
         case=Case("the FAccT version, Sec. 5: R = 0.3927 for (4, 1e-8)-DP (relative 1e-3)",
                   {"paper": 0.3927, "ours": 0.39270, "what": "the FAccT version, Sec. 5"},
                   {"paper": 93.0, "ours": 24.0, "what": "the FAccT version, Thm 4.4"})),
    Rule("accounting/value", "a number of the paper's accounting vs ours", "H Sec. 4.1.3, 5 (per row)",
         "agrees within the row's relative tolerance (one unit of the printed last decimal, or 1e-3), else disagrees",
         _judge_value,
         case=Case("H Sec. 5: R = 0.3927 (one unit of the 4th decimal)",
                   {"paper": 0.3927, "ours": 0.392704, "rtol": 1e-4 / 0.3927, "what": "H Sec. 5"},
                   {"paper": 0.3927, "ours": 0.3929, "rtol": 1e-4 / 0.3927, "what": "H Sec. 5"})),
    Rule("accounting/inequality", "a printed inequality between exact numbers", "H Sec. 4.1.3",
         "agrees when it holds, else disagrees", _judge_inequality,
         case=Case("H Sec. 4.1.3: R_zCDP > R_MA",
                   {"lhs": 2.0, "rhs": 1.0, "claim": "x"}, {"lhs": 0.39, "rhs": 0.87, "claim": "x"})),
    Rule("h-sec-4-2/value", "eta0 bound after Thm 4.5 vs ours", "H text after Thm 4.5: eta0 <= 0.98/M",
         f"agrees within a relative {H_SEC_4_2_RTOL:g}, else disagrees", _judge_value,
         case=Case("H after Thm 4.5: eta0 <= 0.98/M (relative 1e-2)",
                   {"paper": 0.98, "ours": 0.985, "what": "x",
                   "rtol": 0.01},
              {"paper": 0.98, "ours": 0.003, "what": "x", "rtol": 0.01})),
)


def _closest(paper: float, readings: list[rd.Reading], rtol: float) -> rd.Closest:
    """The closest reading within the row's tolerance (relative; absolute for a printed zero, as
    :func:`_judge_value`)."""
    return rd.closest(paper, readings, rtol=rtol) if paper else rd.closest(paper, readings, atol=rtol)


def _row(rule_id: str, *, reading: rd.Closest | None = None, **kw) -> dict:
    """One paper-vs-ours row of this module's rule ``rule_id`` (:func:`.rule.row_of`); with a
    ``reading`` (:func:`.readings.closest`) its note ends with the reading's sentence and the row
    carries the ``reading`` field."""
    by_id = {r.id: r for r in RULES}
    if rule_id not in by_id:
        raise ValueError(f"rule must be one of {', '.join(by_id)}, got {rule_id!r}")
    if reading is None:
        return row_of(by_id[rule_id], **kw)
    row = row_of(by_id[rule_id], explained=rd.note(reading), **kw)
    row["reading"] = rd.field(reading)
    return row
