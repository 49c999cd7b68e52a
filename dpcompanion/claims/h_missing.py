"""Entries issue 12 found missing: the subsampling rule of H Sec. 4.3 as a privacy claim, SPEC
section 2's exact-GDP budget, the chosen T of Eq. (24) against the true minimiser, slides
Thm 3.2 (clipping), a decisive (lower-bound) version of H-Tab2.uniform-stability and a
falsifiable version of H-Tab2.high-probability.

As in :mod:`dpcompanion.claims.end_to_end`, every comparison goes through
``verified_by_margins`` and every check takes ``mutant`` (a minimally false variant, which
must come out refuted; described under ``evidence["mutant"]``).
"""

from __future__ import annotations

import math

import numpy as np

from dpcompanion.claims.registry import claim, verified_by_margins
from dpcompanion.theory import accounting
from dpcompanion.theory import exact_subsampled as xs
from dpcompanion.theory.bounds import gd
from dpcompanion.theory.bounds import tables as tb

H = "Hong et al. (FAccT)"
SLIDES = "Hong et al. (slides)"
TOL = 1e-9
R_PAPER = 0.3927  # H Sec. 5: (4, 1e-8)-DP = 0.1963-zCDP, R = 2 rho


def _result(margins, points, *, domain, mutant, mutant_desc, impact, tol=TOL, smallest_key=None, **evidence):
    ev = dict(evidence)
    ev["mutant"] = mutant_desc
    ev["checked"] = "mutant (a minimally false variant)" if mutant else "the statement as printed"
    res = verified_by_margins(margins, points=points, domain=domain, tol=tol, **ev)
    if res.status == "refuted":
        res.evidence["impact"] = impact
        bad = [p for p, m in zip(points, margins) if m < -tol]
        res.evidence["failing_points"] = len(bad)
        if smallest_key is not None:
            res.evidence["smallest_counterexample"] = min(bad, key=smallest_key)
    return res


# --- H Sec. 4.3: the subsampling rule ------------------------------------------------------------


@claim(
    "H-S4.3.subsampling-rule",
    source=f"{H} Sec. 4.3 (after Yu et al. 2019 Thm 3, constant c dropped)",
    statement=r"A step with sampling rate $p=n/N$ and noise multiplier $\sigma_t$ costs $p^2/\sigma_t^2$ in R units, so "
    r"$\sum_tp^2/\sigma_t^2=R$ gives the $(R/2)$-zCDP of Thm 3.1, i.e. $(\epsilon,\delta)$-DP with "
    r"$\epsilon=R/2+2\sqrt{(R/2)\ln(1/\delta)}$ (Lemma C.3). Checked against the exact privacy profile of one "
    r"Poisson-subsampled Gaussian step.",
    method="numeric",
)
def _subsampling_rule(*, mutant: bool = False):
    margins, points = [], []
    delta = 1e-5
    for p in (1e-3, 1e-2, 0.1, 0.5, 1.0):
        for sigma in (0.5, 1.0, 2.0, 4.0, 8.0):
            cost = accounting.psgd_step_cost(sigma=sigma, sampling_rate=p)
            if mutant:  # the rule with p^2 replaced by p^2/10 on top
                cost /= 10.0
            eps_rule = accounting.zcdp_to_dp(rho=cost / 2, delta=delta)
            eps_true = xs.step_epsilon(delta=delta, sampling_rate=p, noise_multiplier=sigma)
            margins.append((eps_rule - eps_true) / eps_rule)
            points.append({"p": p, "sigma": sigma, "T": 1, "delta": delta, "R_spent_by_rule": cost,
                           "epsilon_rule": eps_rule, "epsilon_exact": eps_true})
    return _result(
        margins, points, mutant=mutant,
        domain="one step, p in {1e-3, 0.01, 0.1, 0.5, 1} x sigma in {0.5, 1, 2, 4, 8}, delta = 1e-5; exact epsilon of the "
        "Poisson-subsampled Gaussian (add/remove neighbours; equal to dp-accounting's PLD to 1e-8, tested); "
        "margin = (epsilon_rule - epsilon_exact)/epsilon_rule",
        mutant_desc="each step costs p^2/(10 sigma^2)",
        impact="The rule is not a privacy guarantee: at small p with sigma of order 1 or below, a step's true epsilon is "
        "orders of magnitude above what p^2/sigma^2 allows (amplification by sampling is linear in p, not quadratic, when "
        "the unsampled step is weakly private). Everything that budgets PSGD by R' = R/p^2 inherits it: Thm 4.8, 4.9 "
        "and the PSGD discussion of Sec. 4.3. The trainers here already charge the rule and check the RDP epsilon too "
        "(CONTRIBUTING, Privacy in trainers).",
        smallest_key=lambda q: (-q["p"], -q["sigma"]),
    )


# --- SPEC section 2: the exact-GDP budget at (4, 1e-8) ----------------------------------------------


@claim(
    "H-C3.exact-gdp-budget",
    source=f"{H} Sec. 5 budget (4, 1e-8)-DP; exact accounting (ours)",
    statement=r"The largest full-batch budget at $(\epsilon,\delta)=(4,10^{-8})$ by exact Gaussian-DP accounting, "
    r"$R_{exact}\approx0.5134$ (vs $R_{zCDP}=0.3927$): a Gaussian mechanism with multiplier $1/\sqrt{R_{exact}}$ has exact "
    r"epsilon 4 at $\delta=10^{-8}$ (analytic Gaussian profile, an independent computation), and "
    r"$R_{zCDP}<R_{RDP}<R_{exact}$.",
    method="numeric",
)
def _exact_gdp(*, mutant: bool = False):
    eps, delta = 4.0, 1e-8
    R = accounting.R_exact(epsilon=eps, delta=delta)
    if mutant:  # one percent more budget than the exact accountant allows
        R *= 1.01
    e = xs.step_epsilon(delta=delta, sampling_rate=1.0, noise_multiplier=1 / math.sqrt(R))
    rz = accounting.R_zcdp(epsilon=eps, delta=delta)
    rr = accounting.R_accountant(epsilon=eps, delta=delta, accountant="rdp")
    margins = [(eps - e) / eps + 1e-6, (rr - rz) / rr, (R - rr) / R]
    points = [{"check": "epsilon of multiplier 1/sqrt(R_exact) <= 4 (+1e-6 relative)", "epsilon": e, "R_exact": R},
              {"check": "R_zCDP < R_RDP", "R_zCDP": rz, "R_RDP": rr},
              {"check": "R_RDP < R_exact", "R_RDP": rr, "R_exact": R}]
    return _result(
        margins, points, mutant=mutant,
        domain="(epsilon, delta) = (4, 1e-8); exact epsilon from the analytic Gaussian profile (theory.exact_subsampled, "
        "p = 1), R_RDP from dp-accounting",
        mutant_desc="R_exact increased by 1%",
        impact="The accounting page's exact budget would overstate what (4, 1e-8)-DP allows.",
        R_exact=R, R_zcdp=rz, R_rdp=rr,
    )


# --- Eq. (24): the chosen T vs the true minimiser --------------------------------------------------


@claim(
    "H-T4.2.T-eq24-vs-minimiser",
    source=f"{H} proof of Thm 4.2, Eq. (22)-(24)",
    statement=r"The $T$ chosen in Eq. (24), $T=\ln(1+\ln(1/\gamma)/\alpha)/\ln(1/\gamma)$, minimises the uniform ERUB "
    r"(Eq. 22) up to rounding: $|T_{(24)}-T^*|\le1$ for the exact integer minimiser $T^*$, at moderate $\kappa$.",
    method="bruteforce",
)
def _t24(*, mutant: bool = False):
    margins, points = [], []
    for kappa in (2.0, 5.0, 10.0, 30.0, 100.0):
        for alpha in (1e-6, 1e-4, 1e-3, 1e-2):
            T24 = gd.t_uniform(kappa=kappa, alpha=alpha)
            Ts, vmin = gd.argmin_uniform(kappa=kappa, alpha=alpha)
            allowed = 0.0 if mutant else 1.0  # mutant: exact equality required
            margins.append(allowed - abs(T24 - Ts))
            points.append({"kappa": kappa, "alpha": alpha, "T_eq24": T24, "T_star": Ts,
                           "erub_at_T_eq24_over_min": float(gd.erub_uniform(T=float(math.ceil(T24)), kappa=kappa,
                                                                             alpha=alpha)) / vmin})
    # the same question for the exact expected excess risk of a quadratic (D = 3, kappa = 10, alpha ~ 1e-3)
    from dpcompanion.theory import exact_risk as er

    lam = er.spectrum(kappa=10.0, D=3)
    cmp_ = er.compare_with_bound(eigenvalues=lam, offset=np.ones(3), clip_norm=1.0, N=40, R=R_PAPER, T_max=120,
                                 kinds=("uniform",))
    u, cst = cmp_["uniform"], cmp_["constants"]
    T24q = gd.t_uniform(kappa=cst["kappa"], alpha=cst["alpha"])
    exact_view = {"kappa": cst["kappa"], "alpha": cst["alpha"], "T_eq24": T24q, "T_minimising_the_bound": u["T_bound"],
                  "T_minimising_the_exact_risk": u["T_exact"],
                  "exact_risk_at_ceil_T_eq24_over_min": float(u["exact"][math.ceil(T24q) - 1] / u["exact_min"])}
    res = _result(
        margins, points, mutant=mutant,
        domain="kappa in {2, 5, 10, 30, 100} x alpha in {1e-6, 1e-4, 1e-3, 1e-2}; T* by exhaustive search (gd.argmin_uniform); "
        "margin = 1 - |T_24 - T*| (steps)",
        mutant_desc="|T_24 - T*| = 0 required instead of <= 1",
        impact="Eq. (24) is the surrogate's minimiser shifted, not Eq. (22)'s: at moderate kappa it picks about twice the "
        "best T, so Eq. (25) is the value at a non-optimal T (an upper bound of the minimum, not the minimum). Thm 4.2's "
        "Theta statement (Eq. 8) and the T column of Tables 1-2 inherit the mismatch; H-T4.2.Eq8 checks the minimum itself.",
        smallest_key=lambda q: (q["kappa"], -q["alpha"]),
        exact_risk_view=exact_view,
    )
    return res


# --- slides Thm 3.2: clipping ----------------------------------------------------------------------


def _clipped_one_step(*, C: float, G: float, sigma: float, N: int = 1):
    """f(theta; x) = 1/2 (theta - x)^2 with every x = 0 (M = mu = 1, kappa = 1, gamma = 0), theta_1 = G so that the
    per-sample gradient norm on the path is at most G; one clipped PGD step with eta = 1/M = 1 and noise C sigma / N."""
    g = min(G, C)  # clipped gradient at theta_1 = G (norm G)
    mean2 = (G - g) ** 2
    var = (C * sigma / N) ** 2
    exact = 0.5 * (mean2 + var)
    gap = 0.5 * G**2
    R = 1 / sigma**2
    alpha_1 = 1 * 1 / (2 * R) * (C / N) ** 2 / gap  # slides Eq. (5): alpha_t = M D/(2R) (eta_t C_t/N)^2 / gap
    bound = (0.0 + R * alpha_1 * sigma**2) * gap  # gamma^T = 0 at kappa = 1, q_1 = alpha_1
    return exact, bound


@claim(
    "H-Slides.T3.2.clipping",
    source=f"{SLIDES} Thm 3.2, Eq. (5)-(7)",
    statement=r"If $C_t\le G$ then clipping does not take place and $\mathrm{EER}\le(\gamma^T+R\sum_tq_t\sigma_t^2)"
    r"(f(\theta_1)-f^*)$ with $q_t=\gamma^{T-t}\alpha_t$, $\alpha_t=\frac{MD}{2R}(\frac{\eta_tC_t}{N})^2/(f(\theta_1)-f^*)$.",
    method="numeric",
    corrected_by="H-Slides.T3.2.clipping-corrected",
    versions=("003",),
)
def _slides_t32(*, mutant: bool = False):
    margins, points = [], []
    for ratio in (0.1, 0.5, 0.9, 1.0):
        for sigma in (0.5, 2.0):
            G = 1.0
            C = ratio * G
            exact, bound = _clipped_one_step(C=C, G=G, sigma=sigma)
            if mutant:
                bound *= 0.5
            margins.append((bound - exact) / exact)
            points.append({"C_over_G": ratio, "sigma": sigma, "T": 1, "exact": exact, "bound": bound})
    return _result(
        margins, points, mutant=mutant,
        domain="f(theta; x) = 1/2 (theta - x)^2, x = 0, theta_1 = G = 1 (gradient norms <= G on the path), one step, "
        "eta = 1/M = 1, N = 1, C_t/G in {0.1, 0.5, 0.9, 1}, sigma in {0.5, 2}; exact E f(theta_2); margin = (bound - exact)/exact",
        mutant_desc="the bound halved",
        impact="The hypothesis is reversed: clipping is inactive when C_t >= G (every per-sample gradient norm is <= G <= "
        "C_t). With C_t < G the clipped step is biased and the bound, whose alpha_t shrinks with C_t^2, fails; the slides' "
        "clipping-aware schedules inherit it (H-Slides.T3.2.clipping-corrected holds).",
        smallest_key=lambda q: (-q["C_over_G"], q["sigma"]),
    )


@claim(
    "H-Slides.T3.2.clipping-corrected",
    source=f"{SLIDES} Thm 3.2, corrected",
    statement=r"With $C_t\ge G$ (no clipping) the bound of slides Thm 3.2 with $\alpha_t\propto C_t^2$ holds (same one-step design).",
    method="numeric",
    corrects="H-Slides.T3.2.clipping",
    versions=("003",),
)
def _slides_t32_corr(*, mutant: bool = False):
    margins, points = [], []
    for ratio in (1.0, 1.5, 4.0):
        for sigma in (0.5, 2.0):
            exact, bound = _clipped_one_step(C=ratio * (0.9 if mutant else 1.0), G=1.0, sigma=sigma)
            margins.append((bound - exact) / exact)
            points.append({"C_over_G": ratio, "sigma": sigma, "T": 1, "exact": exact, "bound": bound})
    return _result(
        margins, points, mutant=mutant,
        domain="as H-Slides.T3.2.clipping with C_t/G in {1, 1.5, 4}; margin = (bound - exact)/exact",
        mutant_desc="C_t = 0.9 G at the first grid point (clipping active)",
        impact="-",
    )


# --- Table 2: decisive and falsifiable versions ------------------------------------------------------


@claim(
    "H-Tab2.uniform-stability.lower-bound",
    source=f"{H} Table 2 (uniform-stability block) and Sec. 4.4",
    statement=r"The uniform-stability rows bound the true excess risk of PGD (static and dynamic schedules, 1-smooth "
    r"1-Lipschitz $\mu$-strongly convex losses) by $O(\frac{D}{N^2R})$ resp. $O(\frac{D\ln N}{N^2R})$. Checked against "
    r"the exact TER of PGD on $f(\theta;x)=\frac14(\theta-x)^2$, $x=\pm1$: with $\eta=1/M$, "
    r"$\mathrm{TER}=\frac14(\frac1N+\mathrm{noise})\ge\frac1{4N}$ for every schedule and $T\ge1$, against the printed "
    r"order times a constant $C=10^3$; for the momentum rows, any output $(1-\rho)\bar x+\rho\theta_1+$noise has "
    r"$\mathrm{EER}+\mathrm{TER}\ge\frac1{8N}$, against $C$ times the sum of the Table 1 and Table 2 rows.",
    method="numeric",
)
def _tab2_us_lower(*, mutant: bool = False):
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
    return _result(
        margins, points, mutant=mutant,
        domain="N in {1e1, ..., 1e9}, D = 1, R = 0.3927, C = 1e3 (any fixed C fails from N ~ 4 C D / R on); "
        "loss 1/4 (theta - x)^2, x = +-1 equiprobable (M = mu = 1/2, gradients <= 1 on [-1, 1]); "
        "margin = (C printed - TER lower bound)/TER lower bound",
        mutant_desc="the printed orders divided by N",
        impact="Decisive form of H-Tab2.uniform-stability (which compared two upper bounds; this entry supersedes it): PGD "
        "at eta = 1/M outputs the data mean plus noise, whose TER is at least Var(x)/(4N) on this loss, and a momentum run "
        "that meets Table 1's EER row must have TER of order 1/N too; so every O(D/(N^2 R)) and O(D ln N/(N^2 R)) "
        "true-risk row of Table 2's uniform-stability block (GD and momentum) is false for large N. The corrected "
        "O(ln N / N) rows (H-Tab2.uniform-stability-corrected) are consistent with the lower bound.",
        smallest_key=lambda q: (q["N"], q["row"]),
    )


@claim(
    "H-Tab2.high-probability.first-term",
    source=f"{H} Table 2 (high-probability GD rows), Eq. (16)-(17)",
    statement=r"The privacy (first) term of the high-probability GD rows decays like $N^{-3/2}$ "
    r"($\frac{G^2}{\mu N}\sqrt{\frac{D\ln(1/p)}{NR}}$, dynamic; times $\sqrt{\ln N}$, static): fitted exponent in $N$ of the "
    r"printed term vs that of the term the corrected Thm 4.10 gives from the exact EER minima, tolerance 0.15.",
    method="bruteforce",
)
def _tab2_hp_first(*, mutant: bool = False):
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
    return _result(
        margins, points, mutant=mutant,
        domain="N in [1e6, 1e12] (7 points), D = 10, R = 0.3927, p = 0.05, kappa = 10 (mu = 1/kappa), G = M = 1; "
        "margin = 0.15 - |fitted exponent gap|",
        mutant_desc="the printed term's exponent lowered by 1/2 (N^{-2})",
        impact="Falsifiable form of H-Tab2.high-probability: the printed N^{-3/2} comes from the spurious 1/N under the "
        "square root of Eq. (15) (H-T4.10); with it removed the privacy term decays like N^{-1} and the rows' dependence on "
        "D and R is stronger than printed. The 4G^2/(p mu N) term, and hence the rows' overall 1/N rate, is unchanged.",
    )


# --- Tables 1-2: momentum and baseline rows re-derived ------------------------------------------------

_KAPPA, _BETA, _ETA0 = 10.0, 0.1, 1.5  # gamma = 1 - eta0/kappa = 0.85 > beta; eta0 <= eta0_max(0.1, 0.85) = 1.77
_EXP_TOL = 0.15  # |fitted - printed exponent| tolerated from log factors on the grids below


def _momentum_derived(key: str, *, N: float, D: float, R: float) -> float:
    """What H Thm 4.5-4.7 give for a momentum row of Table 1 at 1-smooth, 1-Lipschitz losses (f(theta_1) - f* = 1,
    alpha = D/(2 R N^2)): the minimum over integer T of the momentum ERUB with the exact U_3 (uniform schedule,
    ``T1-mom-static``) or with Lemma 4.3 applied to the exact influence (``T1-mom-dynamic``), zeta >= 0 dropped."""
    from dpcompanion.theory.bounds import momentum as mom

    alpha = D / (2 * R * N**2)
    T_max = math.ceil(3 * _KAPPA / _ETA0 * math.log1p(_ETA0 / (_KAPPA * alpha))) + 10
    gamma = 1 - _ETA0 / _KAPPA
    curve = mom.erub_uniform_curve if key == "T1-mom-static" else mom.erub_dynamic_curve
    return float(np.min(curve(beta=_BETA, gamma=gamma, eta0=_ETA0, alpha=alpha, T_max=T_max)))


def _ma_derived(key: str, *, N: float, D: float, R: float) -> float:
    """GD+MA [34] (Wang et al. 2017) as H Sec. 4.1.1 describes it: ERUB relaxed to gamma^T + alpha kappa T^2, minimised
    over integer T (alpha = D/(2 R N^2), R_{eps,delta} read as R)."""
    alpha = D / (2 * R * N**2)
    gamma = 1 - 1 / _KAPPA
    T = np.arange(1, math.ceil(3 * _KAPPA * math.log(1 / alpha)) + 10, dtype=float)
    return float(np.min(gamma**T + alpha * _KAPPA * T**2))


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
        margins.append(_EXP_TOL - gap)
        points.append({"row": key, "derived_exponents": d, "printed_exponents": p, "max_gap": gap})
    return margins, points


@claim(
    "H-Tab1.momentum-rows",
    source=f"{H} Table 1 (momentum rows), Thm 4.6, 4.7",
    statement=r"The momentum rows of Table 1, $O(\frac{D}{N^2R}(c+\ln N\,\mathbb I_{T>\hat T}))$ (static) and "
    r"$O(\frac{D}{N^2R}(1+\frac{cD}{N^2R}\mathbb I_{T>\hat T}))$ (dynamic), re-derived: exponents in $N$, $D$, $R$ of the exact "
    r"minima over $T$ of the momentum bound (exact $U_3$; Lemma 4.3 on the exact influence for the dynamic row) vs those "
    r"of the printed orders, tolerance 0.15.",
    method="bruteforce",
)
def _tab1_momentum(*, mutant: bool = False):
    margins, points = _rows_check(("T1-mom-static", "T1-mom-dynamic"), _momentum_derived, mutant=mutant)
    return _result(
        margins, points, mutant=mutant, tol=0.0,
        domain=f"kappa = {_KAPPA:g}, beta = {_BETA:g}, eta0 = {_ETA0:g} (gamma = 0.85 > beta, eta0 admissible), 1-smooth, "
        "f(theta_1) - f* = 1, alpha = D/(2 R N^2); N in [1e6, 1e12] (5 points, D = 10, R = 0.3927), D in [1, 100], "
        "R in [0.1, 10] at N = 1e8; margin = 0.15 - max |exponent gap|",
        mutant_desc="the printed orders with N^-1 in place of N^-2",
        impact="The momentum rows would not follow from the momentum theorems (which H-T4.5.end-to-end finds false as "
        "printed; this entry checks only that the table is what the theorems give).",
        note="the rows follow from Thm 4.5's bound with zeta >= 0 dropped; H-T4.5/4.6/4.7.end-to-end test that bound itself",
    )


@claim(
    "H-Tab1.baseline-gd-ma",
    source=f"{H} Table 1 (GD+MA [34]) and Sec. 4.1.1",
    statement=r"The GD+MA row $O(\frac{D\ln^2N}{N^2R_{\epsilon,\delta}})$ re-derived from the paper's own account of [34] "
    r"($T=O(\ln(1/\alpha))$, ERUB relaxed to $\gamma^T+\alpha\kappa T^2$): exponents in $N$, $D$, $R$ of "
    r"$\min_T(\gamma^T+\alpha\kappa T^2)$ vs the printed order, tolerance 0.15.",
    method="bruteforce",
)
def _tab1_ma(*, mutant: bool = False):
    margins, points = _rows_check(("T1-gd-ma",), _ma_derived, mutant=mutant)
    return _result(
        margins, points, mutant=mutant, tol=0.0,
        domain=f"kappa = {_KAPPA:g}, alpha = D/(2 R N^2), R_eps,delta read as R; grids as H-Tab1.momentum-rows; "
        "margin = 0.15 - max |exponent gap|",
        mutant_desc="the printed order with N^-1 in place of N^-2",
        impact="Table 1's comparison with [34] would rest on a mis-stated baseline.",
        note="the other baseline rows quote results of other papers whose derivations are not in the FAccT version; they stay "
        "ranked only (H-Tab1.ranking)",
    )


# --- where Thm 4.5 loses its rate: the polarisation step of Eq. (28) ------------------------------------


def _eq28_margins(factor: float):
    """|lhs - rhs| at random points for -(eta/b) g^T v = factor (eta/b^2)(||b g - v||^2 - ||b g||^2 - ||v||^2)."""
    rng = np.random.default_rng(28)
    margins, points = [], []
    for _ in range(20):
        D = int(rng.integers(1, 5))
        g, v = rng.normal(size=D), rng.normal(size=D)
        eta, b = float(rng.uniform(0.01, 1)), float(rng.uniform(0.1, 1))
        lhs = -(eta / b) * float(g @ v)
        rhs = factor * (eta / b**2) * (float(np.sum((b * g - v) ** 2)) - b**2 * float(g @ g) - float(v @ v))
        margins.append(-abs(lhs - rhs) / (abs(lhs) + abs(rhs) + 1e-300))
        points.append({"D": D, "eta": eta, "b": b, "lhs": lhs, "rhs": rhs})
    return margins, points


@claim(
    "H-T4.5.Eq28",
    source=f"{H} proof of Thm 4.5, Eq. (28)",
    statement=r"$-\frac{\eta_t}{b_t}\nabla_t^\top v_{t+1}=\frac{\eta_t}{b_t^2}\left(\|b_t\nabla_t-v_{t+1}\|^2-\|b_t\nabla_t\|^2-"
    r"\|v_{t+1}\|^2\right)$ (the step that yields $-\eta_t\|\nabla_t\|^2$ and hence $\gamma=1-2\mu\eta_t$).",
    method="numeric",
    corrected_by="H-T4.5.Eq28-corrected",
)
def _eq28(*, mutant: bool = False):
    margins, points = _eq28_margins(1.0 if not mutant else 2.0)
    return _result(
        margins, points, mutant=mutant, tol=1e-12,
        domain="20 random (g, v) in R^D, D in 1..4, eta in [0.01, 1], b in [0.1, 1]; margin = -|lhs - rhs|/(|lhs| + |rhs|)",
        mutant_desc="the right-hand side doubled again",
        impact="The identity holds with a factor 1/2 (H-T4.5.Eq28-corrected). With it, Eq. (28) gives -(eta_t/2)||grad||^2, "
        "and the PL step yields the contraction 1 - mu eta_t = 1 - eta0/(2 kappa), not gamma = 1 - eta0/kappa: the "
        "source of the failure of Thm 4.5-4.7 end to end (H-T4.5.end-to-end).",
        smallest_key=lambda q: q["D"],
    )


@claim(
    "H-T4.5.Eq28-corrected",
    source=f"{H} proof of Thm 4.5, Eq. (28), corrected",
    statement=r"$-\frac{\eta_t}{b_t}\nabla_t^\top v_{t+1}=\frac{\eta_t}{2b_t^2}\left(\|b_t\nabla_t-v_{t+1}\|^2-\|b_t\nabla_t\|^2-"
    r"\|v_{t+1}\|^2\right)$ (polarisation identity; SymPy, coordinates symbolic, D = 3).",
    method="sympy",
    corrects="H-T4.5.Eq28",
)
def _eq28_corr(*, mutant: bool = False):
    import sympy as sp

    from dpcompanion.claims.registry import proved

    eta, b = sp.symbols("eta b", positive=True)
    g = sp.Matrix(sp.symbols("g1:4"))
    v = sp.Matrix(sp.symbols("v1:4"))
    half = sp.Rational(1, 3) if mutant else sp.Rational(1, 2)  # mutant: 1/3 instead of 1/2
    lhs = -(eta / b) * (g.T * v)[0]
    rhs = half * (eta / b**2) * (((b * g - v).T * (b * g - v))[0] - b**2 * (g.T * g)[0] - (v.T * v)[0])
    residual = sp.expand(lhs - rhs)  # a polynomial: expanding decides it
    if residual != 0:  # the mutant: report the failed comparison at a point
        margins, points = _eq28_margins(float(half))
        return _result(margins, points, mutant=mutant, tol=1e-12, domain="random points", mutant_desc="factor 1/3",
                       impact="-", symbolic_residual=str(residual))
    return proved(residual, mutant="factor 1/3 instead of 1/2 (SymPy residual non-zero; then refuted at random points)")
