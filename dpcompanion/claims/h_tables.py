"""Hong et al. (FAccT), Tables 1 and 2: the paper's own rows are re-derived from its theorems
(exact minima of the bounds, 1-smooth 1-Lipschitz losses, kappa = 10; the momentum rows from Thm
4.5-4.7) and their fitted exponents in N, D, R compared with the printed orders; the baseline rows
are quoted results of other papers and are only evaluated as printed, except GD+MA, re-derived as
Sec. 4.1.1 describes it. Page: ``book/h-tables``.
"""

from __future__ import annotations

import math

import numpy as np

from dpcompanion.claims.checks import HONG_SOURCE as SRC, R_PAPER, margin_result
from dpcompanion.claims.registry import claim, illustrated, prose, refuted, verified_by_margins
from dpcompanion.theory.bounds import gd
from dpcompanion.theory.bounds import momentum as mom
from dpcompanion.theory.bounds import tables as tb


# --- Table 1: utility upper bounds -------------------------------------------------------------------


_D, _R = 10.0, 0.3927

_TOL = 0.15  # |fitted - printed exponent| tolerated from log factors on the grids of N, D, R


def _exps(key, *, derived: bool):
    f = tb.derived if derived else tb.evaluate
    eN = tb.fit_exponent(lambda N: f(key, N=N, D=_D, R=_R))
    Ds = np.logspace(0, 3, 4)
    Rs = np.logspace(-2, 1, 4)
    eD = float(np.polyfit(np.log(Ds), np.log([f(key, N=1e8, D=d, R=_R) for d in Ds]), 1)[0])
    eR = float(np.polyfit(np.log(Rs), np.log([f(key, N=1e8, D=_D, R=r) for r in Rs]), 1)[0])
    return {"N": eN, "D": eD, "R": eR}


def _compare(keys):
    rows, worst = [], 0.0
    for k in keys:
        d, p = _exps(k, derived=True), _exps(k, derived=False)
        gap = max(abs(d[v] - p[v]) for v in d)
        worst = max(worst, gap)
        rows.append({"row": k, "fitted": d, "printed_order_fitted": p, "max_gap": gap})
    return rows, worst


@claim("H-Tab1.gd-rows", method="bruteforce",
       source=f"{SRC} Table 1 (GD rows: non-private, static, dynamic)")
def _tab1_gd():
    r"""The paper's GD rows of Table 1 have the printed orders $\frac{D}{N^2R}$, $\frac{D\ln N}{N^2R}$,
    $\frac{D}{N^2R}$: exponents in $N$, $D$, $R$ of the exact minima of Thm 4.2/4.4's bounds vs those of the
    printed expressions.
    """
    rows, worst = _compare(["T1-gd-nonprivate", "T1-gd-zcdp-static", "T1-gd-zcdp-dynamic"])
    if worst > _TOL:
        bad = max(rows, key=lambda r: r["max_gap"])
        return refuted(lhs=worst, relation="<=", rhs=_TOL, counterexample=bad["row"], printed=bad["printed_order_fitted"], actual=bad["fitted"], rows=rows)
    return illustrated(rows=rows, worst_exponent_gap=worst, fitted_exponent={r["row"]: r["fitted"]["N"] for r in rows},
                       domain=f"N in [1e6, 1e12] (7 points; D = {_D}, R = {_R}); D in [1, 1e3], R in [0.01, 10] at N = 1e8; kappa = 10",
                       note="exponent gaps come from log factors, which a finite grid cannot separate from powers")


@claim("H-Tab1.ranking", method="numeric",
       source=f"{SRC} Table 1 and Sec. 4.1.3 ('reaches the ideal non-private case')")
def _tab1_rank():
    r"""As printed, the dynamic-schedule row has the fastest decay in $N$ among the private rows and the same order
    as non-private GD; our exact dynamic minimum stays within a constant of the non-private $\alpha$.
    """
    exps = {r.key: tb.fit_exponent(lambda N, r=r: tb.evaluate(r.key, N=N, D=_D, R=_R)) for r in tb.TABLE1}
    Ns = np.logspace(3, 12, 10)
    ratio = [tb.derived("T1-gd-zcdp-dynamic", N=n, D=_D, R=_R) / (_D / (2 * _R * n**2)) for n in Ns]
    return illustrated(fitted_exponent=exps, dynamic_over_alpha=[min(ratio), max(ratio)],
                       domain="printed expressions with constants 1 (R_{eps,delta} read as R, p = 0.05, BBImp c = 0.1), N in [1e6, 1e12]",
                       note="baseline rows are quoted, not re-derived; their exponents only rank the printed table")


@claim("H-Tab1.dynamic-schedule", method="numeric",
       source=f"{SRC} Table 1, schedule column of 'GD+zCDP, Dynamic Schedule'",
       mutant='sigma_t^2 proportional to gamma^t (the square root dropped)')
def _tab1_sched(*, mutant=False):
    r"""The dynamic schedule is $\sigma_t^2=O\left(\frac{\gamma^{(t-T)/2}}{R}\right)$:
    $R\sigma_t^2/\gamma^{(t-T)/2}$ does not depend on $t$ and lies in $[1,2\kappa]$.
    """
    margins, points = [], []
    for k in (1.5, 10.0, 1000.0):
        for T in (1, 5, 50, 500):
            s2 = gd.sigma2_dynamic(T=T, kappa=k, R=0.3927)
            t = np.arange(1, T + 1)
            c = 0.3927 * s2 / np.exp((t - T) * math.log1p(-1 / k) / (1 if mutant else 2))
            spread = float(c.max() / c.min() - 1)
            margins.append(min(float(c.min()) - 1 + 1e-12, 2 * k - float(c.max()), 1e-9 - spread))
            points.append({"kappa": k, "T": T, "constant": float(c.mean()), "spread": spread})
    return verified_by_margins(margins, points=points, domain="kappa in {1.5, 10, 1000} x T in {1, 5, 50, 500}")


@claim("H-Tab1.T", method="bruteforce",
       source=f"{SRC} Table 1 caption")
def _tab1_T():
    r"""All algorithms terminate at $T=O\left(\ln\frac{N^2R}{D}\right)$: the minimising $T$ of the uniform and
    dynamic bounds, divided by $\ln\frac{N^2R}{D}$, stays bounded as $N$ grows.
    """
    Ns = np.logspace(2, 12, 11)
    out = {}
    for name, mn in (("uniform", gd.argmin_uniform), ("dynamic", gd.argmin_dynamic)):
        r = [mn(kappa=10.0, alpha=_D / (2 * _R * n**2))[0] / math.log(n**2 * _R / _D) for n in Ns]
        out[name] = [min(r), max(r)]
    return illustrated(ratio_T_over_log=out, domain=f"kappa = 10, D = {_D}, R = {_R}, N in [1e2, 1e12]",
                       note="as N grows the ratio tends to about kappa (uniform) and 2 kappa (dynamic): bounded in N, linear in kappa")


_KAPPA, _BETA, _ETA0 = 10.0, 0.1, 1.5  # gamma = 1 - eta0/kappa = 0.85 > beta; eta0 <= eta0_max(0.1, 0.85) = 1.77


def _momentum_derived(key: str, *, N: float, D: float, R: float) -> float:
    """What H Thm 4.5-4.7 give for a momentum row of Table 1 at 1-smooth, 1-Lipschitz losses (f(theta_1) - f* = 1,
    alpha = D/(2 R N^2)): the minimum over integer T of the momentum ERUB with the exact U_3 (uniform schedule,
    ``T1-mom-static``) or with Lemma 4.3 applied to the exact influence (``T1-mom-dynamic``), zeta >= 0 dropped."""

    alpha = D / (2 * R * N**2)
    T_max = math.ceil(3 * _KAPPA / _ETA0 * math.log1p(_ETA0 / (_KAPPA * alpha))) + 10
    gamma = 1 - _ETA0 / _KAPPA
    curve = mom.erub_uniform_curve if key == "T1-mom-static" else mom.erub_dynamic_curve
    return float(np.min(curve(beta=_BETA, gamma=gamma, eta0=_ETA0, alpha=alpha, T_max=T_max)))


def _exponents(f, key):
    Ns, Ds, Rs = np.logspace(6, 12, 5), np.logspace(0, 2, 3), np.logspace(-1, 1, 3)
    return {"N": tb.fit_exponent(lambda n: f(key, N=n, D=10.0, R=R_PAPER), N_grid=Ns),
            "D": float(np.polyfit(np.log(Ds), np.log([f(key, N=1e8, D=d, R=R_PAPER) for d in Ds]), 1)[0]),
            "R": float(np.polyfit(np.log(Rs), np.log([f(key, N=1e8, D=10.0, R=r) for r in Rs]), 1)[0])}


def _rows_check(keys, derive, *, mutant):
    margins, points = [], []
    for key in keys:
        d = _exponents(derive, key)
        p = _exponents(lambda k, **kw: tb.evaluate(k, **kw), key)
        if mutant:  # the printed order with N^-1 in place of N^-2
            p = {**p, "N": p["N"] + 1.0}
        gap = max(abs(d[v] - p[v]) for v in d)
        margins.append(_TOL - gap)
        points.append({"row": key, "derived_exponents": d, "printed_exponents": p, "max_gap": gap})
    return margins, points


@claim("H-Tab1.momentum-rows", method="bruteforce",
       source=f"{SRC} Table 1 (momentum rows), Thm 4.6, 4.7",
       rests_on={"H-T4.5.end-to-end": "the momentum bound whose exact minima over T the rows are: the orders are those "
                                      "of that bound, which fails as a bound on the excess risk"})
def _tab1_momentum(*, mutant: bool = False):
    r"""The momentum rows of Table 1, $O(\frac{D}{N^2R}(c+\ln N\,\mathbb I_{T>\hat T}))$ (static) and
    $O(\frac{D}{N^2R}(1+\frac{cD}{N^2R}\mathbb I_{T>\hat T}))$ (dynamic), re-derived: exponents in $N$, $D$, $R$
    of the exact minima over $T$ of the momentum bound (exact $U_3$; Lemma 4.3 on the exact influence for the
    dynamic row) vs those of the printed orders, tolerance 0.15.
    """
    margins, points = _rows_check(("T1-mom-static", "T1-mom-dynamic"), _momentum_derived, mutant=mutant)
    return margin_result(
        margins, points, mutant=mutant, tol=0.0,
        domain=f"kappa = {_KAPPA:g}, beta = {_BETA:g}, eta0 = {_ETA0:g} (gamma = 0.85 > beta, eta0 admissible), 1-smooth, "
        "f(theta_1) - f* = 1, alpha = D/(2 R N^2); N in [1e6, 1e12] (5 points, D = 10, R = 0.3927), D in [1, 100], "
        "R in [0.1, 10] at N = 1e8; margin = 0.15 - max |exponent gap|",
        mutant_desc="the printed orders with N^-1 in place of N^-2",
        impact="The momentum rows would not follow from the momentum theorems (which H-T4.5.end-to-end finds false as "
        "printed; this entry checks only that the table is what the theorems give).",
        note="the rows follow from Thm 4.5's bound with zeta >= 0 dropped; H-T4.5/4.6/4.7.end-to-end test that bound itself",
    )


def _ma_derived(key: str, *, N: float, D: float, R: float) -> float:
    """GD+MA [34] (Wang et al. 2017) as H Sec. 4.1.1 describes it: ERUB relaxed to gamma^T + alpha kappa T^2, minimised
    over integer T (alpha = D/(2 R N^2), R_{eps,delta} read as R)."""
    alpha = D / (2 * R * N**2)
    gamma = 1 - 1 / _KAPPA
    T = np.arange(1, math.ceil(3 * _KAPPA * math.log(1 / alpha)) + 10, dtype=float)
    return float(np.min(gamma**T + alpha * _KAPPA * T**2))


@claim("H-Tab1.baseline-gd-ma", method="bruteforce",
       source=f"{SRC} Table 1 (GD+MA [34]) and Sec. 4.1.1")
def _tab1_ma(*, mutant: bool = False):
    r"""The GD+MA row $O(\frac{D\ln^2N}{N^2R_{\epsilon,\delta}})$ re-derived from the paper's own account of [34]
    ($T=O(\ln(1/\alpha))$, ERUB relaxed to $\gamma^T+\alpha\kappa T^2$): exponents in $N$, $D$, $R$ of
    $\min_T(\gamma^T+\alpha\kappa T^2)$ vs the printed order, tolerance 0.15.
    """
    margins, points = _rows_check(("T1-gd-ma",), _ma_derived, mutant=mutant)
    return margin_result(
        margins, points, mutant=mutant, tol=0.0,
        domain=f"kappa = {_KAPPA:g}, alpha = D/(2 R N^2), R_eps,delta read as R; grids as H-Tab1.momentum-rows; "
        "margin = 0.15 - max |exponent gap|",
        mutant_desc="the printed order with N^-1 in place of N^-2",
        impact="Table 1's comparison with [34] would rest on a mis-stated baseline.",
        note="the other baseline rows quote results of other papers whose derivations are not in the FAccT version; they stay "
        "ranked only (H-Tab1.ranking)",
    )


# --- Table 2: true excess risk -----------------------------------------------------------------------


@claim("H-Tab2.high-probability", method="bruteforce",
       source=f"{SRC} Table 2 (high-probability GD rows), Eq. (16)-(17)")
def _tab2_hp():
    r"""The high-probability true-risk rows of GD decay like $1/N$: exponent in $N$ of the bound rebuilt from the
    corrected Eq. (15) (H-T4.10-corrected), $k=\lceil\log_2(1/p)\rceil$ repetitions and the exact EER minima, vs
    the printed rows.
    """
    keys = ["T2-hp-gd-static", "T2-hp-gd-dynamic"]
    rows = []
    for k in keys:
        rows.append({"row": k, "fitted_exponent_N": tb.fit_exponent(lambda N, k=k: tb.derived(k, N=N, D=_D, R=_R)),
                     "printed_fitted_exponent_N": tb.fit_exponent(lambda N, k=k: tb.evaluate(k, N=N, D=_D, R=_R))})
    worst = max(abs(r["fitted_exponent_N"] - r["printed_fitted_exponent_N"]) for r in rows)
    return illustrated(rows=rows, worst_exponent_gap=worst, fitted_exponent={r["row"]: r["fitted_exponent_N"] for r in rows},
                       domain=f"N in [1e6, 1e12], D = {_D}, R = {_R}, p = 0.05, kappa = 10 (mu = 1/kappa)",
                       note="the rate in N agrees; the D and R dependence of the first term differs (H-T4.10)")


@claim("H-Tab2.uniform-stability", severity="changes a conclusion", method="bruteforce", corrected_by="H-Tab2.uniform-stability-corrected",
       source=f"{SRC} Table 2 (uniform-stability block) and Sec. 4.4")
def _tab2_us():
    r"""Table 2 lists, as true-excess-risk bounds 'by uniform stability', $O\left(\frac{D}{N^2R}\right)$ (GD,
    non-private), $O\left(\frac{D\ln N}{N^2R}\right)$ (static) and $O\left(\frac{D}{N^2R}\right)$ (dynamic),
    $T=O(\ln\frac{N^2R}{D})$. Sec. 4.4 obtains them from $\mathrm{TER}\le\mathrm{EER}+G^2\eta T/N$ by dropping
    the additive term as a constant ($\le O(G^2/M)$), and concludes that the dynamic schedule's advantage
    transfers from empirical to true risk bounds.
    """
    keys = ["T2-us-gd-nonprivate", "T2-us-gd-static", "T2-us-gd-dynamic"]
    rows, worst = _compare(keys)
    if worst <= _TOL:
        return illustrated(rows=rows)
    N = 1e8
    k = "T2-us-gd-dynamic"
    T, eer = gd.argmin_dynamic(kappa=10.0, alpha=_D / (2 * _R * N**2))
    ratio = [tb.derived(k, N=n, D=_D, R=_R) / tb.evaluate(k, N=n, D=_D, R=_R) for n in (1e4, 1e6, 1e8)]
    return refuted(
        lhs=worst, relation="<=", rhs=_TOL,
        counterexample={"row": k, "N": N, "D": _D, "R": _R, "kappa": 10, "G": 1, "M": 1},
        printed={"order D/(N^2 R)": tb.evaluate(k, N=N, D=_D, R=_R), "fitted_exponent_N": -2.0},
        actual={"EER_min": eer, "stability_term 2 G^2 eta T/N": 2 * T / N, "TER_bound": tb.derived(k, N=N, D=_D, R=_R),
                "fitted_exponent_N": next(r["fitted"]["N"] for r in rows if r["row"] == k)},
        ratio_bound_over_printed_at_N_1e4_1e6_1e8=ratio,
        rows=rows,
        impact=prose("""
            The paper says openly that it drops the additive stability term, so the printed orders are the empirical
            (EER) orders; what fails is the justification. The term is not a constant to be neglected next to D/(N^2
            R): with T = O(ln(N^2 R/D)) it is of order ln N / N (with the printed G^2 eta T/N as with the corrected
            2 G^2 eta T/N, H-T4.12; the computation uses the latter) and dominates D/(N^2 R) for large N. The
            uniform-stability rows therefore bound the TER only at O(ln N/N) (H-Tab2.uniform-stability-corrected),
            the same order for the static, dynamic and non-private rows; the dynamic schedule's advantage survives
            only in the lower-order EER part, not in the true-risk bound. Table 2's comparison with SGD+MA and SSGD
            (which keep their generalisation terms) is not like for like. The empirical-risk results (Table 1) are
            not affected.
        """),
    )


@claim("H-Tab2.uniform-stability-corrected", method="bruteforce", corrects="H-Tab2.uniform-stability",
       source=f"{SRC} Table 2, corrected")
def _tab2_us_corr():
    r"""Keeping the stability term $2G^2\eta T/N$ (H-T4.12-corrected) with $T=O(\ln\frac{N^2R}{D})$, the
    uniform-stability TER bounds of the three GD rows are all $O\left(\frac{D}{N^2R}+\frac{\ln
    N}{N}\right)=O\left(\frac{\ln N}{N}\right)$.
    """
    keys = ["T2-us-gd-nonprivate", "T2-us-gd-static", "T2-us-gd-dynamic"]
    exps, ratios = {}, {}
    for k in keys:
        exps[k] = tb.fit_exponent(lambda N, k=k: tb.derived(k, N=N, D=_D, R=_R))
        ln_over_n = [tb.derived(k, N=n, D=_D, R=_R) / (math.log(n) / n) for n in np.logspace(6, 12, 7)]
        ratios[k] = [min(ln_over_n), max(ln_over_n)]
    return illustrated(fitted_exponent=exps, printed_order="N^-1 ln N", ratio_bound_over_lnN_over_N=ratios,
                       domain=f"N in [1e6, 1e12], D = {_D}, R = {_R}, kappa = 10, G = M = 1")


@claim("H-Tab2.ranking", method="numeric",
       source=f"{SRC} Table 2")
def _tab2_rank():
    r"""Exponents in $N$ of every printed row of Table 2 (constants 1), as a ranking of the table's entries.
    """
    exps = {r.key: tb.fit_exponent(lambda N, r=r: tb.evaluate(r.key, N=N, D=_D, R=_R)) for r in tb.TABLE2}
    return illustrated(fitted_exponent=exps, domain="N in [1e6, 1e12], D = 10, R = 0.3927, p = 0.05",
                       note="baseline rows are quoted, not re-derived")


@claim("H-Tab2.uniform-stability.lower-bound", severity="changes a conclusion", method="numeric",
       source=f"{SRC} Table 2 (uniform-stability block) and Sec. 4.4")
def _tab2_us_lower(*, mutant: bool = False):
    r"""The uniform-stability rows bound the true excess risk of PGD (static and dynamic schedules, 1-smooth
    1-Lipschitz $\mu$-strongly convex losses) by $O(\frac{D}{N^2R})$ resp. $O(\frac{D\ln N}{N^2R})$. Checked
    against the exact TER of PGD on $f(\theta;x)=\frac14(\theta-x)^2$, $x=\pm1$: with $\eta=1/M$,
    $\mathrm{TER}=\frac14(\frac1N+\mathrm{noise})\ge\frac1{4N}$ for every schedule and $T\ge1$, against the
    printed order times a constant $C=10^3$; for the momentum rows, any output $(1-\rho)\bar
    x+\rho\theta_1+$noise has $\mathrm{EER}+\mathrm{TER}\ge\frac1{8N}$, against $C$ times the sum of the Table 1
    and Table 2 rows.
    """
    D, R, C = 1.0, R_PAPER, 1e3
    margins, points = [], []
    for N in np.logspace(1, 9, 9):
        ter_lower = 1 / (4 * N)  # theta_{T+1} = xbar - noise: TER = 1/4 E(theta - E x)^2 >= Var(xbar)/4 = 1/(4N)
        for key in ("T2-us-gd-dynamic", "T2-us-gd-static"):
            printed = C * tb.evaluate(key, N=N, D=D, R=R)
            if mutant:  # the printed order divided by N (O(D/(N^3 R)))
                printed /= N
            margins.append((printed - ter_lower) / ter_lower)
            points.append({"row": key, "N": float(N), "C_times_printed": printed, "TER_lower_bound": ter_lower})
        # momentum rows: any run whose output is (1 - rho) xbar + rho theta_1 + independent noise (momentum PGD with any
        # beta, eta0, schedule, T; theta_1 = 0) has EER >= rho^2/(4N) and TER >= (1 - rho)^2/(4N), so
        # EER + TER >= 1/(8N): Table 1's and Table 2's momentum rows cannot both hold
        for key1, key2 in (("T1-mom-static", "T2-us-mom-static"), ("T1-mom-dynamic", "T2-us-mom-dynamic")):
            printed = C * (tb.evaluate(key1, N=N, D=D, R=R) + tb.evaluate(key2, N=N, D=D, R=R))
            if mutant:
                printed /= N
            lower = 1 / (8 * N)
            margins.append((printed - lower) / lower)
            points.append({"row": f"{key1} + {key2}", "N": float(N), "C_times_printed": printed,
                           "EER_plus_TER_lower_bound": lower})
    return margin_result(
        margins, points, mutant=mutant,
        domain=prose("""
            N in {1e1, ..., 1e9}, D = 1, R = 0.3927, C = 1e3 (any fixed C fails from N ~ 4 C D / R on); loss 1/4
            (theta - x)^2, x = +-1 equiprobable (M = mu = 1/2, gradients <= 1 on [-1, 1]); margin = (C printed - TER
            lower bound)/TER lower bound
        """),
        mutant_desc="the printed orders divided by N",
        impact=prose("""
            Decisive form of H-Tab2.uniform-stability (which compared two upper bounds; this entry supersedes it):
            PGD at eta = 1/M outputs the data mean plus noise, whose TER is at least Var(x)/(4N) on this loss, and a
            momentum run that meets Table 1's EER row must have TER of order 1/N too; so every O(D/(N^2 R)) and O(D
            ln N/(N^2 R)) true-risk row of Table 2's uniform-stability block (GD and momentum) is false for large N.
            The corrected O(ln N / N) rows (H-Tab2.uniform-stability-corrected) are consistent with the lower bound.
        """),
        smallest_key=lambda q, m: (q["N"], q["row"]),
    )


@claim("H-Tab2.high-probability.first-term", severity="changes a conclusion", method="bruteforce",
       source=f"{SRC} Table 2 (high-probability GD rows), Eq. (16)-(17)")
def _tab2_hp_first(*, mutant: bool = False):
    r"""The privacy (first) term of the high-probability GD rows decays like $N^{-3/2}$ ($\frac{G^2}{\mu
    N}\sqrt{\frac{D\ln(1/p)}{NR}}$, dynamic; times $\sqrt{\ln N}$, static): fitted exponent in $N$ of the
    printed term vs that of the term the corrected Thm 4.10 gives from the exact EER minima, tolerance 0.15.
    """
    D, R, p = 10.0, R_PAPER, 0.05
    mu = 1 / tb.KAPPA_DEFAULT
    margins, points = [], []
    for key in ("T2-hp-gd-static", "T2-hp-gd-dynamic"):
        def derived_first(N, key=key):  # corrected Eq. (15) first term, sqrt(2 G^2/mu) sqrt(EER)
            return tb.derived(key, N=N, D=D, R=R, p=p) - 4 / (p * mu * N)

        def printed_first(N, key=key):
            return tb.evaluate(key, N=N, D=D, R=R, p=p) - 4 / (p * N)

        e_d = tb.fit_exponent(derived_first)
        e_p = tb.fit_exponent(printed_first)
        if mutant:  # the printed term with N^{-2} in place of N^{-3/2}
            e_p -= 0.5
        margins.append(0.15 - abs(e_d - e_p))
        points.append({"row": key, "fitted_exponent_printed": e_p, "fitted_exponent_derived": e_d})
    return margin_result(
        margins, points, mutant=mutant,
        domain="N in [1e6, 1e12] (7 points), D = 10, R = 0.3927, p = 0.05, kappa = 10 (mu = 1/kappa), G = M = 1; "
        "margin = 0.15 - |fitted exponent gap|",
        mutant_desc="the printed term's exponent lowered by 1/2 (N^{-2})",
        impact=prose("""
            Falsifiable form of H-Tab2.high-probability: the printed N^{-3/2} comes from the spurious 1/N under the
            square root of Eq. (15) (H-T4.10); with it removed the privacy term decays like N^{-1} and the rows'
            dependence on D and R is stronger than printed. The 4G^2/(p mu N) term, and hence the rows' overall 1/N
            rate, is unchanged.
        """),
    )
