"""Hong et al. (FAccT), Section 4.4: the true excess risk. Thm 4.10 (high probability), Thm 4.11
and 4.12 (uniform stability, ``TER <= EER + G^2 eta T / N``), and the chain end to end.
Page: ``book/h-sec-4-4``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import optimize

from dpcompanion.claims.checks import HONG_SOURCE as SRC, scaled_result
from dpcompanion.claims.registry import claim, prose, refuted, verified_by_margins
from dpcompanion.theory.bounds import true_risk


# --- Thm 4.10: high-probability true risk ------------------------------------------------------------


def _disc_data(rng, reps, N):
    r = np.sqrt(rng.random((reps, N)))
    ang = rng.random((reps, N)) * 2 * np.pi
    return np.stack([r * np.cos(ang), r * np.sin(ang)], axis=-1)  # uniform on the unit disc, mean 0


def _t410_frequencies(first_term, *, seed):
    """Violation frequency of TER <= first_term(G, mu, N, emp) + 4G^2/(p mu N) for f(theta;x) = 1/2||theta-x||^2
    on the unit disc (G = 2, mu = 1); candidate outputs theta = xbar + shift (projected to the disc)."""
    rng = np.random.default_rng(seed)
    G, mu = 2.0, 1.0
    margins, points = [], []
    for N in (10, 100, 1000):
        reps = 2000
        xbar = _disc_data(rng, reps, N).mean(axis=1)
        cands = [xbar, xbar + 0.3 * rng.normal(size=xbar.shape), xbar + np.array([0.5, 0.0])]
        for p in (0.05, 0.5):
            viol = np.zeros(reps, bool)
            for th in cands:
                th = th / np.maximum(1.0, np.linalg.norm(th, axis=1, keepdims=True))
                ter = 0.5 * np.sum(th**2, axis=1)  # E_x 1/2||th - x||^2 - min_theta (.) (x has mean 0)
                emp = 0.5 * np.sum((th - xbar) ** 2, axis=1)  # f(theta) - f(theta*), theta* = xbar
                viol |= ter > first_term(G, mu, N, emp) + 4 * G**2 / (p * mu * N)
            freq = float(viol.mean())
            margins.append(p - freq)
            points.append({"N": N, "p": p, "violation_frequency": freq})
    return margins, points


_T410_DOMAIN = ("f(theta;x) = 1/2||theta - x||^2 on the unit disc (G = 2, mu = 1), x uniform; N in {10, 100, 1000}, "
                "p in {0.05, 0.5}, 2000 data sets each; outputs theta = xbar, xbar + N(0, 0.09 I), xbar + (0.5, 0); "
                "margin = p - frequency of data sets where some output violates the bound")


@claim("H-T4.10", severity="changes a conclusion", method="montecarlo", corrected_by="H-T4.10-corrected",
       source=f"{SRC} Thm 4.10, Eq. (15)")
def _t410():
    r"""For $G$-Lipschitz, $\mu$-strongly convex losses, with probability $\ge1-p$ over the data set,
    $\mathrm{TER}(\theta)\le\sqrt{\frac{2G^2}{\mu N}}\sqrt{f(\theta)-f(\theta^*)}+\frac{4G^2}{p\mu N}$.
    """
    margins, points = _t410_frequencies(lambda G, mu, N, emp: np.sqrt(2 * G**2 / (mu * N)) * np.sqrt(emp), seed=410)
    res = verified_by_margins(margins, points=points, domain=_T410_DOMAIN)
    if res.status == "verified":
        return res
    worst = points[int(np.argmin(margins))]
    N, p = worst["N"], worst["p"]
    th = np.array([0.5, 0.0])  # with xbar ~ 0: TER = emp = 1/8
    return refuted(
        lhs=float(np.min(margins)), relation=">=", rhs=0.0,
        counterexample={"loss": "1/2||theta - x||^2, x uniform on the unit disc", "G": 2, "mu": 1, "N": N, "p": p,
                        "theta": "xbar + (0.5, 0)"},
        printed={"rhs_at_xbar_0": float(np.sqrt(8 / N) * np.sqrt(0.125) + 16 / (p * N)),
                 "allowed_violation_frequency": p},
        actual={"TER_at_xbar_0": 0.125, "violation_frequency": worst["violation_frequency"]},
        sweep=points,
        holds_instead=prose("""
            sqrt(2 G^2/mu) sqrt(f(theta) - f(theta*)) + 4 G^2/(p mu N): strong convexity gives ||theta - theta*|| <=
            sqrt(2 (f(theta) - f(theta*))/mu) and Lipschitzness turns it into G times that; there is no 1/N in the
            first term
        """),
        impact=prose("""
            The 1/N under the first square root is spurious. Corrected, the first term of Eq. (16)-(17) becomes G
            sqrt(2 EER/mu), of order sqrt(D ln N ln(1/p)/R)/N (uniform) and sqrt(D ln(1/p)/R)/N (dynamic) instead of
            N^{-3/2}: the high-probability TER rows of Table 2 keep their 1/N rate and the dynamic schedule still
            saves sqrt(ln N) in that term, but the dependence on D and R is stronger than printed.
        """),
    )


@claim("H-T4.10-corrected", method="montecarlo", corrects="H-T4.10",
       source=f"{SRC} Thm 4.10, corrected",
       mutant='the first term divided by sqrt(N) again (the printed Eq. 15)')
def _t410_corr(*, mutant=False):
    r"""With probability $\ge1-p$:
    $\mathrm{TER}(\theta)\le\sqrt{\frac{2G^2}{\mu}}\sqrt{f(\theta)-f(\theta^*)}+\frac{4G^2}{p\mu N}$ (same Monte
    Carlo design).
    """
    margins, points = _t410_frequencies(lambda G, mu, N, emp: np.sqrt(2 * G**2 / (mu * (N if mutant else 1))) * np.sqrt(emp), seed=410)
    return verified_by_margins(margins, points=points, domain=_T410_DOMAIN)


def _logistic_min(x_support, probs):
    f = lambda th: float(np.dot(probs, np.logaddexp(0, -x_support * th)))  # noqa: E731
    r = optimize.minimize_scalar(f, bounds=(-50, 50), method="bounded", options={"xatol": 1e-10})
    return float(r.fun)


@claim("H-T4.10-12.end-to-end", method="end-to-end",
       source=f"{SRC} Thm 4.11, 4.12 and the display after them (Sec. 4.4)")
def _e2e_t41012(*, mutant: bool = False):
    r"""The true-risk chain end to end: PGD with $\eta<2/M$ on a convex, $G$-Lipschitz, $M$-smooth loss has
    $\mathrm{TER}\le\mathrm{EER}+G^2\eta T/N$; Monte Carlo on the 1-D logistic loss ($G=1$, $M=1/4$) with a
    two-point data distribution, upper end of the 99.99% confidence interval of TER - EER against $G^2\eta T/N$.
    """
    rng = np.random.default_rng(41012)
    support, probs = np.array([1.0, -0.5]), np.array([0.7, 0.3])
    minF = _logistic_min(support, probs)
    exacts, bounds, points = [], [], []
    reps = 20000
    for N in (2, 5, 20):
        # min of the empirical risk for a data set with k ones (k = 0..N)
        emp_min = np.array([_logistic_min(support, np.array([k / N, 1 - k / N])) for k in range(N + 1)])
        for eta in (1.0, 7.9):
            for T in (1, 4):
                d = rng.choice(support, p=probs, size=(reps, N))
                th = np.zeros(reps)
                for _ in range(T):
                    grad = np.mean(-d / (1 + np.exp(d * th[:, None])), axis=1)
                    th = th - eta * (grad + 1.0 / N * rng.normal(size=reps))
                F = np.logaddexp(0, -np.multiply.outer(th, support)) @ probs
                emp = np.mean(np.logaddexp(0, -d * th[:, None]), axis=1)
                k = np.sum(d == 1.0, axis=1)
                diff = (F - minF) - (emp - emp_min[k])  # per data set: TER part minus EER part
                est, se = float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(reps))
                s = true_risk.stability_printed(G=1.0, eta=eta, T=T, N=N)
                exacts.append(est + 4 * se)
                bounds.append(s)
                points.append({"N": N, "eta": eta, "T": T, "TER_minus_EER": est, "se": se, "s_printed": s})
    return scaled_result(
        exacts, bounds, points, mutant=mutant,
        domain=prose("""
            f(theta; x) = log(1 + exp(-x theta)), x = 1 (p = 0.7) or -0.5 (p = 0.3); PGD from 0 with sigma = 1, N in
            {2, 5, 20}, eta in {1, 7.9} (< 2/M = 8), T in {1, 4}; 20000 data sets each (seeded); margin = (s -
            (estimate + 4 SE))/s
        """),
        impact="The TER bound feeds the uniform-stability block of Table 2.",
        reps=reps,
    )


# --- Thm 4.12: uniform stability ---------------------------------------------------------------------


def _linear_counterexample(N=10, T=5, eta=0.1, sigma=1.0, seed=0):
    """Linear loss f(theta; x) = x theta, x in {-1, 1}: convex, 1-Lipschitz, 0-smooth (so M-smooth for any M).
    Neighbours d (x_1 = 1) and d' (x_1 = -1), other samples equal; PGD with coupled noise."""
    rng = np.random.default_rng(seed)
    others = rng.choice([-1.0, 1.0], size=N - 1)
    d, d2 = np.r_[1.0, others], np.r_[-1.0, others]
    noise = rng.normal(size=(20000, T))
    th = np.zeros(20000)
    th2 = np.zeros(20000)
    for t in range(T):
        th = th - eta * (d.mean() + sigma / N * noise[:, t])
        th2 = th2 - eta * (d2.mean() + sigma / N * noise[:, t])
    # sup over x in {-1, 1} of E[f(M(d); x) - f(M(d'); x)] = |E[theta - theta']|
    return float(abs(np.mean(th - th2)))


@claim("H-T4.12", severity="constant factor", method="numeric", corrected_by="H-T4.12-corrected",
       source=f"{SRC} Thm 4.12 (restating Bassily et al.) and the TER bound after it")
def _t412():
    r"""For $\eta<2/M$ and $M$-smooth, $G$-Lipschitz losses, PGD is $s$-uniformly stable with $s=G^2T\eta/N$, so
    $\mathrm{TER}\le\mathrm{EER}+G^2\eta T/N$.
    """
    N, T, eta = 10, 5, 0.1
    actual = _linear_counterexample(N=N, T=T, eta=eta)
    printed = true_risk.stability_printed(G=1.0, eta=eta, T=T, N=N)
    if actual <= printed * (1 + 1e-9):
        return verified_by_margins([printed - actual], domain="linear loss")
    return refuted(
        lhs=actual, relation="<=", rhs=printed, tol=1e-9 * printed,
        counterexample={"loss": "f(theta; x) = x theta, x in {-1, 1} (G = 1, M = 1)", "N": N, "T": T, "eta": eta,
                        "neighbours": "x_1 = 1 vs x_1 = -1"},
        printed=printed,
        actual=actual,
        holds_instead="s = 2 G^2 eta T / N",
        impact=prose("""
            A constant factor 2: with the paper's adjacency (data sets differing in one sample, replaced), the mean
            gradients of two neighbouring data sets differ by up to 2G/N, not G/N. The additive term becomes 2 G^2
            eta T / N; no order in Table 2 changes, and no conclusion rests on the constant (see
            H-Tab2.uniform-stability for what the term itself, dropped in Sec. 4.4, does to the orders). The theorem
            is restated from [2]; we check the statement as printed in this paper (the same in both text
            extractions), not [2].
        """),
    )


def _logistic_pgd(x_data, *, eta, T, sigma, G, noise):
    """1-D PGD on the logistic loss log(1 + exp(-x theta)) for a batch of data sets (rows)."""
    N = x_data.shape[1]
    theta = np.zeros(x_data.shape[0])
    for t in range(T):
        z = x_data * theta[:, None]
        grad = np.mean(-x_data / (1 + np.exp(z)), axis=1)
        theta = theta - eta * (grad + sigma * G / N * noise[:, t])
    return theta


def _loss(theta, x):
    return np.logaddexp(0, -np.multiply.outer(theta, x))


@claim("H-T4.12-corrected", method="montecarlo", corrects="H-T4.12",
       source=f"{SRC} Thm 4.12, corrected",
       mutant='s scaled by 0.99 (the linear loss attains s)')
def _t412_corr(*, mutant=False):
    r"""PGD ($\eta\le2/M$, convex $M$-smooth $G$-Lipschitz loss) is $s$-uniformly stable with $s=2G^2\eta T/N$:
    checked with coupled noise on the 1-D logistic loss ($G=1$, $M=1/4$) over random neighbouring data sets, and
    attained by the linear loss.
    """
    rng = np.random.default_rng(412)
    margins, points = [], []
    xs = np.linspace(-1, 1, 21)
    for N in (5, 20):
        for eta in (0.5, 4.0):
            T = 8
            reps = 400
            base = rng.uniform(-1, 1, size=(reps, N))
            d2 = base.copy()
            d2[:, 0] = rng.uniform(-1, 1, size=reps)
            noise = rng.normal(size=(reps, T))
            th = _logistic_pgd(base, eta=eta, T=T, sigma=1.0, G=1.0, noise=noise)
            th2 = _logistic_pgd(d2, eta=eta, T=T, sigma=1.0, G=1.0, noise=noise)
            # each row is one neighbouring pair with its own coupled noise; sup over x of the loss difference
            diff = np.max(np.abs(_loss(th, xs) - _loss(th2, xs)), axis=1)
            s = true_risk.stability_gd(G=1.0, eta=eta, T=T, N=N) * (0.99 if mutant else 1.0)
            margins.append(float((s - diff.max()) / s))
            points.append({"N": N, "eta": eta, "T": T, "max_loss_difference": float(diff.max()), "s": s})
    lin = _linear_counterexample()
    s_lin = true_risk.stability_gd(G=1.0, eta=0.1, T=5, N=10) * (0.99 if mutant else 1.0)
    margins.append((s_lin - lin) / s_lin)  # the linear loss attains s: the tight point
    points.append({"loss": "linear, x in {-1, 1}", "N": 10, "eta": 0.1, "T": 5, "max_loss_difference": lin, "s": s_lin})
    return verified_by_margins(margins, points=points, tol=1e-9,
                               domain="1-D logistic loss, x in [-1, 1], N in {5, 20}, eta in {0.5, 4} (< 2/M = 8), T = 8, 400 random "
                               "neighbouring pairs each (pathwise, a stronger test than the expectation), plus the linear loss f = x theta (N = 10, eta = 0.1, T = 5), which attains s",
                               linear_loss_attains={"difference": lin, "s": s_lin})


# --- Thm 4.11: TER <= EER + G^2 eta T / N ------------------------------------------------------------


@claim("H-T4.11", method="montecarlo",
       source=f"{SRC} Thm 4.11",
       mutant="s scaled by 0.49 (the linear loss has expected gap exactly s/2)")
def _t411(*, mutant=False):
    r"""An $s$-uniformly stable algorithm has expected generalisation gap $\mathbb E[f(\mathcal M(d);\mathcal
    D)-f(\mathcal M(d);d)]\le s$ (PGD with $s=2G^2\eta T/N$: Monte Carlo on the 1-D logistic loss, and exactly
    on a linear loss, which has gap $s/2$).
    """
    scale = 0.49 if mutant else 1.0
    rng = np.random.default_rng(411)
    margins, points = [], []
    support, probs = np.array([1.0, -0.5]), np.array([0.7, 0.3])
    for N in (5, 20):
        T, eta, reps = 10, 2.0, 20000
        d = rng.choice(support, p=probs, size=(reps, N))
        th = _logistic_pgd(d, eta=eta, T=T, sigma=1.0, G=1.0, noise=rng.normal(size=(reps, T)))
        true_loss = _loss(th, support) @ probs
        emp = np.mean(np.logaddexp(0, -d * th[:, None]), axis=1)
        gap = true_loss - emp
        est, se = float(gap.mean()), float(gap.std(ddof=1) / np.sqrt(reps))
        s = true_risk.stability_gd(G=1.0, eta=eta, T=T, N=N) * scale
        margins.append((s - (est + 4 * se)) / s)
        points.append({"loss": "logistic", "N": N, "gap_estimate": est, "se": se, "s": s})
    # the linear loss f(theta; x) = x theta, x = +-1 with probability 1/2 (G = 1, convex, 0-smooth): PGD from 0 gives
    # theta = -eta T xbar - (noise independent of the data), so the expected gap E[0 - xbar theta] = eta T E[xbar^2],
    # computed exactly by enumerating all 2^N data sets (= eta T / N = s/2: the tightest case known to us)
    for N in (5, 10):
        T, eta = 10, 0.5
        gap = float(np.mean([eta * T * np.mean(x) ** 2 for x in itertools.product((-1.0, 1.0), repeat=N)]))
        s = true_risk.stability_gd(G=1.0, eta=eta, T=T, N=N) * scale
        margins.append((s - gap) / s)
        points.append({"loss": "linear", "N": N, "gap_exact": gap, "s": s})
    return verified_by_margins(margins, points=points, tol=1e-12,
                               domain=prose("""
                                   logistic loss, x in {1 (p=0.7), -0.5 (p=0.3)}, PGD T = 10, eta = 2, sigma = 1, N
                                   in {5, 20}, 20000 data sets (margin = (s - (estimate + 4 SE))/s); linear loss x
                                   theta, x = +-1, N in {5, 10}, T = 10, eta = 0.5, exact expectation over all 2^N
                                   data sets (margin = (s - gap)/s)
                               """),
                               note=prose("""
                                   The linear loss has gap s/2 exactly: s = 2 G^2 eta T/N (Hardt et al. 2016) is the
                                   stability of the algorithm, and the expected gap of this instance is half of it,
                                   so no check on it can be tighter than 50%; the mutant 0.49 s is refuted there.
                                   The logistic instance is far from tight.
                               """))
