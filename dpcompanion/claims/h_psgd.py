"""Claims of Hong et al. 2022 (file 001) Section 4.3: Thm 4.8 (PSGD). Thm 4.9 (PSGD with
momentum) is checked in :mod:`dpcompanion.claims.h_momentum`.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from dpcompanion.theory.bounds import gd, psgd
from dpcompanion.claims.registry import checked, claim, verified_by_margins

SRC = "Hong et al. (FAccT)"


@claim(
    "H-T4.8.recursion",
    source=f"{SRC} Thm 4.8, proof D.3",
    statement=r"With combined noise $\tilde\sigma_t^2=\sigma_g^2+G^2\sigma_t^2$ the PGD recursion unrolls to "
    r"$\gamma^T+R'\alpha\frac{\sigma_g^2}{G^2}\frac{1-\gamma^T}{1-\gamma}+R'\sum_tq_t\sigma_t^2$ (every $T\le6$), "
    r"$\frac{1-\gamma^T}{1-\gamma}\le\kappa$, and $\frac{R'\kappa\alpha}{G^2}=\frac{D}{2\mu n^2(f(\theta_1)-f^*)}$ "
    r"for $\alpha$ taken with batch size $n$ and budget $R'$.",
    method="sympy",
    mutant='q_t = gamma^(T-t+1) alpha in the target (exponent off by one)',
)
def _t48_rec(*, mutant=False):
    g, a, Rp, sg, G, k, D, M, n, gap = sp.symbols("gamma alpha Rp sigma_g G kappa D M n Delta", positive=True)
    residuals = {}
    for T in range(1, 7):
        s = sp.symbols(f"s1:{T + 1}", positive=True)
        e = sp.Integer(1)
        for t in range(T):
            e = g * e + a * Rp * (sg**2 / G**2 + s[t] ** 2)
        target = g**T + Rp * a * sg**2 / G**2 * (1 - g**T) / (1 - g) + Rp * sum(g ** (T - t + (1 if mutant else 0)) * a * s[t - 1] ** 2 for t in range(1, T + 1))
        residuals[T] = sp.cancel(e - target)
    mu = M / k
    alpha_n = D * G**2 / (2 * Rp * M * n**2 * gap)
    coef = sp.simplify(Rp * k * alpha_n / G**2 - D / (2 * mu * n**2 * gap))
    # (1 - gamma^T)/(1 - gamma) = sum_{j<T} gamma^j <= 1/(1 - gamma) = kappa for gamma in [0, 1)
    geo = sp.simplify(1 / (1 - (1 - 1 / k)) - k)
    return checked({T: sp.simplify(r) ** 2 + coef**2 + geo**2 for T, r in residuals.items()})


@claim(
    "H-T4.8.alpha-g",
    source=f"{SRC} proof D.3 (last line)",
    statement=r"With $n=\max\{N\sqrt R,1\}$: $\frac{D}{2\mu n^2(f(\theta_1)-f^*)}=\frac{D}{2\mu(f(\theta_1)-f^*)}\min\{\frac{1}{N^2R},1\}\le\alpha_g$.",
    method="numeric",
    mutant='alpha_g lowered by 1% (the coefficient equals alpha_g at the tightest points)',
)
def _t48_alpha_g(*, mutant=False):
    margins, points = [], []
    for N in (1, 10, 1000, 1e5):
        for R in (1e-6, 1e-2, 0.3927, 1.0, 16.0):
            for mu in (0.01, 1.0):
                n = psgd.batch_size(N=N, R=R)
                c = psgd.sgd_noise_coefficient(D=10, mu=mu, n=n, f_gap=1.0)
                ag = psgd.alpha_g_of(D=10, mu=mu, N=N, R=R, f_gap=1.0) * (0.99 if mutant else 1.0)
                mid = 10 / (2 * mu) * min(1 / (N**2 * R), 1.0)
                margins.append(min((ag - c) / ag, -abs(c - mid) / mid + 0))
                points.append({"N": N, "R": R, "mu": mu, "n": n, "coefficient": c, "alpha_g": ag})
    return verified_by_margins(margins, points=points, tol=1e-12, domain="N in {1, 10, 1e3, 1e5} x R in {1e-6..16} x mu in {0.01, 1}, D = 10")


@claim(
    "H-T4.8.quadratic",
    source=f"{SRC} Thm 4.8",
    statement=r"For quadratic losses with stochastic-gradient noise $\sigma_g\xi_t/n$ ($\xi_t\sim\mathcal N(0,I_D)$) and privacy noise "
    r"$G\sigma_tv_t/n$, the exact $\mathbb E[f(\theta_{T+1})]-f^*$ never exceeds $(\gamma^T+\alpha_g\sigma_g^2+R'\sum_tq_t\sigma_t^2)(f(\theta_1)-f^*)$ "
    r"at the theorem's batch size $n=N\sqrt R$.",
    method="numeric",
    mutant="the bound scaled by 0.99 (the check's tightest point has zero slack)",
)
def _t48_quadratic(*, mutant=False):
    from dpcompanion.theory.exact_risk import expected_excess_risk

    rng = np.random.default_rng(48)
    margins, points = [], []
    for _ in range(200):
        D = int(rng.integers(1, 5))
        M, mu = 1.0, float(10 ** rng.uniform(-2, 0))
        lam = np.linspace(mu, M, D) if D > 1 else np.array([M])
        mu = float(lam.min())
        offset = rng.normal(size=D)
        gap = 0.5 * float(np.sum(lam * offset**2))
        N = int(rng.integers(20, 2000))
        n = int(rng.integers(1, N + 1))
        R = (n / N) ** 2  # n = N sqrt(R): the theorem's batch size, so R' = 1
        T = int(rng.integers(1, 40))
        w = rng.dirichlet(np.ones(T))
        sigma = 1 / np.sqrt(w)  # sum 1/sigma^2 = R' = 1
        G = float(10 ** rng.uniform(-1, 1))
        sigma_g = float(10 ** rng.uniform(-1, 1))
        exact = expected_excess_risk(eigenvalues=lam, offset=offset, eta=1 / M, sigma=np.sqrt(sigma**2 + sigma_g**2 / G**2),
                                     clip_norm=G, N=n)
        alpha = gd.alpha_of(D=D, G=G, R=1.0, M=M, N=n, f_gap=gap)
        ag = psgd.alpha_g_of(D=D, mu=mu, N=N, R=R, f_gap=gap)
        bound = psgd.erub_psgd(sigma=sigma, kappa=M / mu, alpha=alpha, R_prime=1.0, alpha_g=ag, sigma_g=sigma_g) * gap * (0.99 if mutant else 1.0)
        margins.append((bound - exact) / bound)
        points.append({"D": D, "kappa": M / mu, "N": N, "n": n, "T": T, "G": G, "sigma_g": sigma_g, "exact": exact, "bound": bound})
    return verified_by_margins(margins, points=points, tol=1e-12,
                               domain="diagonal quadratics D in 1..4, kappa in [1, 100], N in 20..1999, n in 1..N with R = (n/N)^2, "
                               "T in 1..39, random budget-exact sigma_t, G and sigma_g in [0.1, 10]")
