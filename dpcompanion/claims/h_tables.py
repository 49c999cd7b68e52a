"""Claims about Tables 1 and 2 of Hong et al. 2022 (file 001): the paper's own rows are
re-derived from its theorems (exact minima of the bounds, 1-smooth 1-Lipschitz losses,
kappa = 10) and their fitted exponents in N, D, R compared with the printed orders; the
baseline rows are quoted results of other papers and are only evaluated as printed.
"""

from __future__ import annotations

import math

import numpy as np

from dpcompanion.theory.bounds import gd
from dpcompanion.theory.bounds import tables as tb
from dpcompanion.claims.registry import claim, illustrated, refuted, verified_by_margins

SRC = "Hong et al. (FAccT)"
_D, _R = 10.0, 0.3927
_TOL = 0.15  # |fitted - printed exponent| tolerated from log factors on the grid N in [1e6, 1e12]


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


@claim(
    "H-Tab1.gd-rows",
    source=f"{SRC} Table 1 (GD rows: non-private, static, dynamic)",
    statement=r"The paper's GD rows of Table 1 have the printed orders $\frac{D}{N^2R}$, $\frac{D\ln N}{N^2R}$, $\frac{D}{N^2R}$: "
    r"exponents in $N$, $D$, $R$ of the exact minima of Thm 4.2/4.4's bounds vs those of the printed expressions.",
    method="bruteforce",
)
def _tab1_gd():
    rows, worst = _compare(["T1-gd-nonprivate", "T1-gd-zcdp-static", "T1-gd-zcdp-dynamic"])
    if worst > _TOL:
        bad = max(rows, key=lambda r: r["max_gap"])
        return refuted(lhs=worst, relation="<=", rhs=_TOL, counterexample=bad["row"], printed=bad["printed_order_fitted"], actual=bad["fitted"], rows=rows)
    return illustrated(rows=rows, worst_exponent_gap=worst, fitted_exponent={r["row"]: r["fitted"]["N"] for r in rows},
                       domain=f"N in [1e6, 1e12] (7 points; D = {_D}, R = {_R}); D in [1, 1e3], R in [0.01, 10] at N = 1e8; kappa = 10",
                       note="exponent gaps come from log factors, which a finite grid cannot separate from powers")


@claim(
    "H-Tab1.ranking",
    source=f"{SRC} Table 1 and Sec. 4.1.3 ('reaches the ideal non-private case')",
    statement=r"As printed, the dynamic-schedule row has the fastest decay in $N$ among the private rows and the same order as "
    r"non-private GD; our exact dynamic minimum stays within a constant of the non-private $\alpha$.",
    method="numeric",
)
def _tab1_rank():
    exps = {r.key: tb.fit_exponent(lambda N, r=r: tb.evaluate(r.key, N=N, D=_D, R=_R)) for r in tb.TABLE1}
    Ns = np.logspace(3, 12, 10)
    ratio = [tb.derived("T1-gd-zcdp-dynamic", N=n, D=_D, R=_R) / (_D / (2 * _R * n**2)) for n in Ns]
    return illustrated(fitted_exponent=exps, dynamic_over_alpha=[min(ratio), max(ratio)],
                       domain="printed expressions with constants 1 (R_{eps,delta} read as R, p = 0.05, BBImp c = 0.1), N in [1e6, 1e12]",
                       note="baseline rows are quoted, not re-derived; their exponents only rank the printed table")


@claim(
    "H-Tab1.dynamic-schedule",
    source=f"{SRC} Table 1, schedule column of 'GD+zCDP, Dynamic Schedule'",
    statement=r"The dynamic schedule is $\sigma_t^2=O\left(\frac{\gamma^{(t-T)/2}}{R}\right)$: $R\sigma_t^2/\gamma^{(t-T)/2}$ "
    r"does not depend on $t$ and lies in $[1,2\kappa]$.",
    method="numeric",
    mutant='sigma_t^2 proportional to gamma^t (the square root dropped)',
)
def _tab1_sched(*, mutant=False):
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


@claim(
    "H-Tab1.T",
    source=f"{SRC} Table 1 caption",
    statement=r"All algorithms terminate at $T=O\left(\ln\frac{N^2R}{D}\right)$: the minimising $T$ of the uniform and dynamic bounds, "
    r"divided by $\ln\frac{N^2R}{D}$, stays bounded as $N$ grows.",
    method="bruteforce",
)
def _tab1_T():
    Ns = np.logspace(2, 12, 11)
    out = {}
    for name, mn in (("uniform", gd.argmin_uniform), ("dynamic", gd.argmin_dynamic)):
        r = [mn(kappa=10.0, alpha=_D / (2 * _R * n**2))[0] / math.log(n**2 * _R / _D) for n in Ns]
        out[name] = [min(r), max(r)]
    return illustrated(ratio_T_over_log=out, domain=f"kappa = 10, D = {_D}, R = {_R}, N in [1e2, 1e12]",
                       note="as N grows the ratio tends to about kappa (uniform) and 2 kappa (dynamic): bounded in N, linear in kappa")


@claim(
    "H-Tab2.high-probability",
    source=f"{SRC} Table 2 (high-probability GD rows), Eq. (16)-(17)",
    statement=r"The high-probability true-risk rows of GD decay like $1/N$: exponent in $N$ of the bound rebuilt from the corrected "
    r"Eq. (15) (H-T4.10-corrected), $k=\lceil\log_2(1/p)\rceil$ repetitions and the exact EER minima, vs the printed rows.",
    method="bruteforce",
)
def _tab2_hp():
    keys = ["T2-hp-gd-static", "T2-hp-gd-dynamic"]
    rows = []
    for k in keys:
        rows.append({"row": k, "fitted_exponent_N": tb.fit_exponent(lambda N, k=k: tb.derived(k, N=N, D=_D, R=_R)),
                     "printed_fitted_exponent_N": tb.fit_exponent(lambda N, k=k: tb.evaluate(k, N=N, D=_D, R=_R))})
    worst = max(abs(r["fitted_exponent_N"] - r["printed_fitted_exponent_N"]) for r in rows)
    return illustrated(rows=rows, worst_exponent_gap=worst, fitted_exponent={r["row"]: r["fitted_exponent_N"] for r in rows},
                       domain=f"N in [1e6, 1e12], D = {_D}, R = {_R}, p = 0.05, kappa = 10 (mu = 1/kappa)",
                       note="the rate in N agrees; the D and R dependence of the first term differs (H-T4.10)")


@claim(
    "H-Tab2.uniform-stability",
    severity="changes a conclusion",
    source=f"{SRC} Table 2 (uniform-stability block) and Sec. 4.4",
    statement=r"Table 2 lists, as true-excess-risk bounds 'by uniform stability', $O\left(\frac{D}{N^2R}\right)$ (GD, "
    r"non-private), $O\left(\frac{D\ln N}{N^2R}\right)$ (static) and $O\left(\frac{D}{N^2R}\right)$ (dynamic), "
    r"$T=O(\ln\frac{N^2R}{D})$. Sec. 4.4 obtains them from $\mathrm{TER}\le\mathrm{EER}+G^2\eta T/N$ by dropping the "
    r"additive term as a constant ($\le O(G^2/M)$), and concludes that the dynamic schedule's advantage transfers from "
    r"empirical to true risk bounds.",
    method="bruteforce",
    corrected_by="H-Tab2.uniform-stability-corrected",
)
def _tab2_us():
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
        impact="The paper says openly that it drops the additive stability term, so the printed orders are the empirical "
        "(EER) orders; what fails is the justification. The term is not a constant to be neglected next to D/(N^2 R): "
        "with T = O(ln(N^2 R/D)) it is of order ln N / N (with the printed G^2 eta T/N as with the corrected "
        "2 G^2 eta T/N, H-T4.12; the computation uses the latter) and dominates D/(N^2 R) for large N. The "
        "uniform-stability rows therefore bound the TER only at O(ln N/N) (H-Tab2.uniform-stability-corrected), the same "
        "order for the static, dynamic and non-private rows; the dynamic schedule's advantage survives only in the "
        "lower-order EER part, not in the true-risk bound. Table 2's comparison with SGD+MA and SSGD (which keep their "
        "generalisation terms) is not like for like. The empirical-risk results (Table 1) are not affected.",
    )


@claim(
    "H-Tab2.uniform-stability-corrected",
    source=f"{SRC} Table 2, corrected",
    statement=r"Keeping the stability term $2G^2\eta T/N$ (H-T4.12-corrected) with $T=O(\ln\frac{N^2R}{D})$, the uniform-stability "
    r"TER bounds of the three GD rows are all $O\left(\frac{D}{N^2R}+\frac{\ln N}{N}\right)=O\left(\frac{\ln N}{N}\right)$.",
    method="bruteforce",
    corrects="H-Tab2.uniform-stability",
)
def _tab2_us_corr():
    keys = ["T2-us-gd-nonprivate", "T2-us-gd-static", "T2-us-gd-dynamic"]
    exps, ratios = {}, {}
    for k in keys:
        exps[k] = tb.fit_exponent(lambda N, k=k: tb.derived(k, N=N, D=_D, R=_R))
        ln_over_n = [tb.derived(k, N=n, D=_D, R=_R) / (math.log(n) / n) for n in np.logspace(6, 12, 7)]
        ratios[k] = [min(ln_over_n), max(ln_over_n)]
    return illustrated(fitted_exponent=exps, printed_order="N^-1 ln N", ratio_bound_over_lnN_over_N=ratios,
                       domain=f"N in [1e6, 1e12], D = {_D}, R = {_R}, kappa = 10, G = M = 1")


@claim(
    "H-Tab2.ranking",
    source=f"{SRC} Table 2",
    statement=r"Exponents in $N$ of every printed row of Table 2 (constants 1), as a ranking of the table's entries.",
    method="numeric",
)
def _tab2_rank():
    exps = {r.key: tb.fit_exponent(lambda N, r=r: tb.evaluate(r.key, N=N, D=_D, R=_R)) for r in tb.TABLE2}
    return illustrated(fitted_exponent=exps, domain="N in [1e6, 1e12], D = 10, R = 0.3927, p = 0.05",
                       note="baseline rows are quoted, not re-derived")
