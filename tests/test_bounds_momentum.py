"""Tests of dpcompanion.theory.bounds.momentum against independent references: brute-force double
sums rewritten from H (001) Thm 4.5 / App. D.2, SymPy expressions, and direct search."""

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dpcompanion.theory.bounds import momentum as mom

betas = st.floats(0.05, 0.95)
gammas = st.floats(0.3, 0.995)


def brute_U3(sigma2, beta, gamma):
    """U_3 exactly as printed in H Thm 4.5: a double sum, no recursion."""
    T = len(sigma2)
    tot = 0.0
    for t in range(1, T + 1):
        inner = sum(beta ** (2 * (t - i)) * sigma2[i - 1] for i in range(1, t + 1))
        tot += gamma ** (T - t) * (1 - beta) ** 2 / (1 - beta**t) ** 2 * inner
    return tot


def brute_T_hat(beta, gamma):
    t, last = 1, 1
    while gamma ** (t - 1) >= (1 - beta) / (1 - beta**t) or t < 5:
        if gamma ** (t - 1) >= (1 - beta) / (1 - beta**t):
            last = t
        t += 1
        if t > 100000:
            break
    # continue a bit past the peak to be sure (h is unimodal)
    for s in range(t, t + 1000):
        if gamma ** (s - 1) >= (1 - beta) / (1 - beta**s):
            last = s
    return last


@given(betas, gammas, st.integers(1, 25), st.integers(0, 2**31 - 1))
def test_U3_matches_brute_double_sum(beta, gamma, T, seed):
    s2 = np.random.default_rng(seed).uniform(0.1, 5.0, size=T)
    assert mom.U3(sigma2=s2, beta=beta, gamma=gamma) == pytest.approx(brute_U3(list(s2), beta, gamma), rel=1e-10)


@given(betas, st.floats(0.3, 0.99))
def test_T_hat_brute_force(beta, gamma):
    assert mom.T_hat(beta=beta, gamma=gamma) == brute_T_hat(beta, gamma)


@given(betas, gammas, st.integers(1, 40))
def test_uniform_U3_closed_form_and_bound(beta, gamma, T):
    R = 0.7
    exact = brute_U3([T / R] * T, beta, gamma)
    assert mom.U3_uniform(T=T, R=R, beta=beta, gamma=gamma) == pytest.approx(exact, rel=1e-10)
    assert exact <= mom.U3_uniform_bound(T=T, R=R, beta=beta, gamma=gamma) * (1 + 1e-12)


def test_eta0_max_is_root_of_proof_zeta_sympy():
    b, g, e = sp.symbols("beta gamma eta0", positive=True)
    zeta = 1 - e / 4 - b * g / ((g - b) ** 2 * (1 - b) ** 3) * e**2
    f = sp.lambdify((b, g, e), zeta)
    rng = np.random.default_rng(1)
    for _ in range(50):
        beta, gamma = sorted(rng.uniform(0.01, 0.99, 2))
        if rng.random() < 0.5:
            beta, gamma = gamma, beta
        if abs(beta - gamma) < 1e-3:
            continue
        thr = mom.eta0_max(beta=beta, gamma=gamma)
        assert abs(f(beta, gamma, thr)) < 1e-9
        assert mom.zeta(eta0=thr, beta=beta, gamma=gamma) == pytest.approx(f(beta, gamma, thr), abs=1e-12)
        assert f(beta, gamma, 0.99 * thr) > 0 > f(beta, gamma, 1.01 * thr)


def test_paper_example_value():
    # H (001) text after Thm 4.5 prints eta0 <= 0.98/M for beta = 0.9, gamma = 0.99
    thr = mom.eta0_max(beta=0.9, gamma=0.99)
    assert thr == pytest.approx(8 / (math.sqrt(1 + 64 * 0.9 * 0.99 / (0.09**2 * 0.1**3)) + 1))
    assert thr < 0.98 / 100


def test_statement_zeta_negative_at_admissible_eta0():
    # counterexample of H-T4.5.zeta-statement, recomputed from the printed formula
    beta, gamma = 0.1, 0.99
    thr = 8 / (math.sqrt(1 + 64 * beta * gamma / ((gamma - beta) ** 2 * (1 - beta) ** 3)) + 1)
    stmt = 1 - thr**2 / (beta * (1 - beta) ** 3) - thr / 4
    assert stmt < 0


@given(betas, gammas, st.integers(2, 30))
def test_influence_exact_brute(beta, gamma, T):
    w = mom.influence_exact(beta=beta, gamma=gamma, T=T)
    for i in (1, T // 2 + 1, T):
        e = np.zeros(T)
        e[i - 1] = 1.0
        assert w[i - 1] == pytest.approx(brute_U3(list(e), beta, gamma), rel=1e-10)


def test_slides_form_matches_geometric_sum():
    beta, gamma, T = 0.6, 0.93, 12
    q = mom.influence_form(beta=beta, gamma=gamma, T=T, form="slides")
    for t in range(1, T + 1):
        ref = sum(gamma ** (T - s) * beta ** (2 * (s - t)) for s in range(t, T + 1))
        assert q[t - 1] == pytest.approx(ref, rel=1e-10)


def test_statement_q_fails_and_corrected_q_holds():
    # counterexample of H-T4.7.q-statement recomputed: T > T_hat, t = 1
    beta, gamma = 0.9, 0.99
    Th = mom.T_hat(beta=beta, gamma=gamma)
    T = Th + 20
    w = mom.influence_exact(beta=beta, gamma=gamma, T=T)
    c2 = gamma ** (2 * Th) / (gamma - beta**2)
    q_printed_1 = gamma ** (Th - 1) * c2 * gamma ** (T - 1)
    assert w[0] > q_printed_1
    # the proof's reading (regimes split on t), printed c2: fails at t = T_hat + 1 once T is large enough
    T3 = 3 * Th + 1
    w3 = mom.influence_exact(beta=beta, gamma=gamma, T=T3)
    t3 = Th + 1
    assert w3[t3 - 1] > gamma ** (Th - 1) * c2 * gamma ** (T3 - t3)
    assert w3[t3 - 1] <= gamma ** (Th - 1) * (gamma**Th / (gamma - beta**2)) * gamma ** (T3 - t3)
    assert gamma ** (-Th) <= 1 / (gamma * (1 - beta))  # c2'/c2 bounded via the definition of T_hat
    c1 = 2 / (gamma * (gamma - beta**2))
    c2c = gamma**Th / (gamma - beta**2)
    t = np.arange(1, T + 1)
    q = np.where(t <= Th, c1 * gamma ** (T + t), gamma ** (Th - 1) * c2c * gamma ** (T - t))
    assert np.all(w <= q)
    assert np.all(w <= mom.influence_form(beta=beta, gamma=gamma, T=T, form="derived") * (1 + 1e-12))


def test_remark_bound_schedule_increases_but_exact_influence_turns_early():
    """H-T4.7.remark (the bound's q_t = c1 gamma^(T+t) falls on t <= T_hat, so its optimal schedule rises) and
    H-T4.7.remark-exact (the exact influence starts to rise long before T_hat)."""
    beta, gamma = 0.9, 0.99
    Th = mom.T_hat(beta=beta, gamma=gamma)
    t = np.arange(1, Th + 1)
    q = 2 / (gamma * (gamma - beta**2)) * gamma ** (Th + t)
    sig2 = np.sum(np.sqrt(q)) / np.sqrt(q)  # Lemma 4.3 with R = 1
    assert np.all(np.diff(sig2) > 0)
    w = mom.influence_exact(beta=beta, gamma=gamma, T=Th)
    first_up = int(np.nonzero(np.diff(w) > 0)[0][0]) + 1
    assert first_up < Th // 2


def test_U3g_counterexample_and_corrected_bound():
    beta, kappa, eta0 = 0.5, 10.0, 0.01
    gamma = 1 - eta0 / kappa
    assert eta0 <= mom.eta0_max(beta=beta, gamma=gamma)
    u = sum(gamma ** (5000 - t) * (1 - beta) * (1 + beta**t) / ((1 - beta**t) * (1 + beta)) for t in range(1, 5001))
    assert mom.U3g(T=5000, beta=beta, gamma=gamma, sigma_g=1.0, G=1.0) == pytest.approx(u, rel=1e-10)
    assert u > kappa  # printed bound kappa sigma_g^2 / G^2
    assert u <= kappa / eta0  # corrected bound


def test_c6_U1_printed_vs_exact_and_coefficients():
    assert mom.c6_U1(t=3, i=2, beta=0.5, form="printed") == 0.0
    assert mom.c6_U1(t=3, i=2, beta=0.5) == pytest.approx(0.5 + 2 * 0.25)
    beta, gamma, T = 0.4, 0.8, 9
    lhs, rhs = mom.c6_coefficients(beta=beta, gamma=gamma, T=T)
    for i in range(1, T):
        ref = sum(gamma ** (T - t) * sum(k * beta**k for k in range(t - i, t)) for t in range(i + 1, T + 1))
        assert lhs[i - 1] == pytest.approx(ref, rel=1e-12)
    # beta > gamma admitted by Thm 4.5 (kappa = 1, eta0 = 1 - gamma <= eta0_max): the lemma fails (H-C6)
    beta, gamma, T = 0.25, 0.01, 5
    assert mom.eta0_max(beta=beta, gamma=gamma) >= 1 - gamma
    lhs, rhs = mom.c6_coefficients(beta=beta, gamma=gamma, T=T)
    i = T - 1  # t = T only: U_1(T, T-1) = sum_{k=1}^{T-1} k beta^k against 2 beta gamma^2/((gamma-beta)^2 (1-beta))
    assert lhs[i - 1] == pytest.approx(sum(k * beta**k for k in range(1, T)), rel=1e-12)
    assert rhs[i - 1] == pytest.approx(2 * beta * gamma**2 / ((gamma - beta) ** 2 * (1 - beta)), rel=1e-12)
    assert lhs[i - 1] > 100 * rhs[i - 1]


def test_erub_curves_match_direct():
    beta, gamma, eta0, alpha = 0.5, 0.95, 0.1, 1e-3
    cu = mom.erub_uniform_curve(beta=beta, gamma=gamma, eta0=eta0, alpha=alpha, T_max=15)
    cd = mom.erub_dynamic_curve(beta=beta, gamma=gamma, eta0=eta0, alpha=alpha, T_max=15)
    for T in (1, 7, 15):
        direct = gamma**T + 2 * eta0 * alpha * T * brute_U3([1.0] * T, beta, gamma)
        assert cu[T - 1] == pytest.approx(direct, rel=1e-10)
        w = mom.influence_exact(beta=beta, gamma=gamma, T=T)
        assert cd[T - 1] == pytest.approx(gamma**T + 2 * eta0 * alpha * np.sum(np.sqrt(w)) ** 2, rel=1e-10)
        assert cd[T - 1] <= cu[T - 1] * (1 + 1e-12)


def test_dynamic_minimum_vs_scipy():
    """(sum sqrt w)^2 is the minimum of R sum w s^2 over budgets sum 1/s^2 = R (Lemma 4.3)."""
    from scipy.optimize import minimize

    w = mom.influence_exact(beta=0.7, gamma=0.9, T=6)
    R = 1.0

    def obj(x):
        c = np.exp(x) / np.exp(x).sum()  # 1/s_t^2 = R c_t
        return R * np.sum(w / (R * c))

    res = minimize(obj, np.zeros(6), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000})
    assert res.fun == pytest.approx(np.sum(np.sqrt(w)) ** 2, rel=1e-6)


@pytest.mark.parametrize(
    "kw",
    [dict(beta=1.0, gamma=0.5), dict(beta=0.5, gamma=0.0), dict(beta=-0.1, gamma=0.5), dict(beta="x", gamma=0.5)],
)
def test_validation_messages(kw):
    with pytest.raises(ValueError, match="must be"):
        mom.T_hat(**kw)


def test_validation_names_parameter():
    with pytest.raises(ValueError, match="T must be an integer >= 1, got 0"):
        mom.influence_exact(beta=0.5, gamma=0.9, T=0)
    with pytest.raises(ValueError, match="beta must differ from gamma"):
        mom.eta0_max(beta=0.5, gamma=0.5)
    with pytest.raises(ValueError, match="form must be"):
        mom.influence_form(beta=0.5, gamma=0.9, T=3, form="nope")
