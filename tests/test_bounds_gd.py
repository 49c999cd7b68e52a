"""dpcompanion.theory.bounds.gd against SymPy expressions rewritten from Hong et al. 2022 (001)
Sec. 4.1 and against plain brute force over integer T."""

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dpcompanion.theory.bounds import bound_sweeps, gd

k, a, T, R, L = sp.symbols("kappa alpha T R L", positive=True)
g = 1 - 1 / k
RNG = np.random.default_rng(2024)


def _points(n=40):
    """Random admissible (kappa, alpha) points."""
    return [(float(10 ** RNG.uniform(0.05, 3)), float(10 ** RNG.uniform(-7, 0))) for _ in range(n)]


def _close(x, y, rtol=1e-9):
    return abs(x - y) <= rtol * max(abs(x), abs(y), 1e-300)


# --- SymPy references (written from the paper, not from the module) -------------------------

SYM = {
    "erub_uniform": sp.lambdify((T, k, a), g**T + a * k * (1 - g**T) * T),  # Eq. 9
    "t_uniform": sp.lambdify((k, a), sp.log(1 + sp.log(1 / g) / a) / sp.log(1 / g)),  # Eq. 24
    "t_uniform_surrogate": sp.lambdify((k, a), sp.log(sp.log(1 / g) / (k * a)) / sp.log(1 / g)),  # Eq. 23
    "erub_uniform_eq25": sp.lambdify((k, a), (1 + k * sp.log(1 + sp.log(1 / g) / a)) / (1 + sp.log(1 / g) / a)),
    "theta_uniform": sp.lambdify((k, a), k**2 / (k + 1 / a) * sp.log(1 + 1 / (k * a))),  # Eq. 8
    "erub_dynamic": sp.lambdify((T, k, a), g**T + a * ((1 - g ** (T / 2)) / (1 - sp.sqrt(g))) ** 2),
    "t_dynamic": sp.lambdify((k, a), 2 * sp.log(a / (a + (1 - sp.sqrt(g)) ** 2)) / sp.log(g)),  # Eq. 27
    "t_dynamic_statement": sp.lambdify((k, a), 2 * k * sp.log(1 + 1 / (k * a))),
    "erub_dynamic_min": sp.lambdify((k, a), (a / (1 - sp.sqrt(g)) ** 2) / (a / (1 - sp.sqrt(g)) ** 2 + 1)),
    "theta_dynamic": sp.lambdify((k, a), k**2 / (k**2 + 1 / a)),  # Eq. 11
}


@pytest.mark.parametrize("name", ["t_uniform", "erub_uniform_eq25", "theta_uniform", "t_dynamic",
                                  "t_dynamic_statement", "erub_dynamic_min", "theta_dynamic"])
def test_closed_forms_match_sympy(name):
    for kk, aa in _points():
        if name == "t_dynamic" and kk > 1e2 and aa > 0.1:
            continue  # both fine, but the sympy form cancels badly there
        ours = getattr(gd, name)(kappa=kk, alpha=aa)
        ref = SYM[name](kk, aa)
        assert _close(ours, ref, 1e-7), (name, kk, aa, ours, ref)


def test_surrogate_matches_sympy_when_defined():
    for kk, aa in _points():
        ours = gd.t_uniform_surrogate(kappa=kk, alpha=aa)
        if kk * aa + math.log(1 - 1 / kk) < 0:
            assert _close(ours, SYM["t_uniform_surrogate"](kk, aa), 1e-8)
        else:
            assert ours == 0.0


@pytest.mark.parametrize("name", ["erub_uniform", "erub_dynamic"])
def test_erub_of_T_matches_sympy(name):
    for kk, aa in _points(20):
        for TT in (1, 2, 7, 50, 300):
            assert _close(getattr(gd, name)(T=TT, kappa=kk, alpha=aa), SYM[name](TT, kk, aa), 1e-8)


def test_erub_any_schedule_matches_formula():
    for _ in range(30):
        TT = int(RNG.integers(1, 30))
        kk, aa = _points(1)[0]
        sigma = 10 ** RNG.uniform(-1, 1, TT)
        RR = float(RNG.uniform(0.1, 5))
        ref = (1 - 1 / kk) ** TT + RR * sum((1 - 1 / kk) ** (TT - t) * aa * sigma[t - 1] ** 2 for t in range(1, TT + 1))
        assert _close(gd.erub(sigma=sigma, kappa=kk, alpha=aa, R=RR), ref, 1e-10)


def test_uniform_schedule_through_erub_equals_eq9():
    for kk, aa in _points(10):
        for TT in (1, 5, 40):
            RR = 0.3927
            s = np.full(TT, math.sqrt(TT / RR))
            assert _close(gd.erub(sigma=s, kappa=kk, alpha=aa, R=RR), gd.erub_uniform(T=TT, kappa=kk, alpha=aa), 1e-9)


def test_dynamic_schedule_through_erub_equals_closed_form():
    for kk, aa in _points(10):
        if kk == 1:
            continue
        for TT in (1, 5, 40):
            s2 = gd.sigma2_dynamic(T=TT, kappa=kk, R=0.5)
            assert _close(float(np.sum(1 / s2)), 0.5, 1e-12)
            assert _close(gd.erub(sigma=np.sqrt(s2), kappa=kk, alpha=aa, R=0.5), gd.erub_dynamic(T=TT, kappa=kk, alpha=aa), 1e-9)


def test_sigma2_dynamic_matches_statement_formula():
    kk, TT, RR = 7.0, 12, 2.0
    gg = 1 - 1 / kk
    ref = [(math.sqrt((1 / gg) ** TT) - 1) / (1 - math.sqrt(gg)) * math.sqrt(gg**t) / RR for t in range(1, TT + 1)]
    assert np.allclose(gd.sigma2_dynamic(T=TT, kappa=kk, R=RR), ref, rtol=1e-12)


def test_alpha_gamma_influence():
    assert gd.alpha_of(D=3, G=2, R=0.5, M=4, N=10, f_gap=2) == 3 * 4 / (2 * 0.5 * 4 * 100 * 2)
    assert np.allclose(gd.influence(T=4, kappa=5, alpha=0.1), [0.1 * 0.8**3, 0.1 * 0.8**2, 0.1 * 0.8, 0.1])
    assert gd.erub_uniform(T=0, kappa=1, alpha=0.3) == 1.0  # gamma^0 = 1 at gamma = 0
    assert _close(gd.erub_uniform(T=3, kappa=1, alpha=0.3), 0.9)  # gamma = 0: alpha T


# --- brute force ---------------------------------------------------------------------------------


def _naive_argmin(f, T_hi):
    best = (None, math.inf)
    for TT in range(1, T_hi + 1):
        v = f(TT)
        if v < best[1]:
            best = (TT, v)
    return best


@pytest.mark.parametrize("kk,aa", [(1.5, 1e-3), (10.0, 1e-3), (10.0, 0.05), (50.0, 1e-5), (200.0, 1e-2), (30.0, 0.5)])
def test_argmin_uniform_equals_naive_search(kk, aa):
    gg = 1 - 1 / kk
    T_best, v_best = _naive_argmin(lambda TT: gg**TT + aa * kk * (1 - gg**TT) * TT, 20000)
    assert gd.argmin_uniform(kappa=kk, alpha=aa) == (T_best, pytest.approx(v_best, rel=1e-12))


@pytest.mark.parametrize("kk,aa", [(1.5, 1e-3), (10.0, 1e-3), (10.0, 0.05), (50.0, 1e-5), (200.0, 1e-2), (30.0, 0.5)])
def test_argmin_dynamic_equals_naive_search_and_eq27(kk, aa):
    gg = 1 - 1 / kk
    T_best, v_best = _naive_argmin(lambda TT: gg**TT + aa * ((1 - gg ** (TT / 2)) / (1 - math.sqrt(gg))) ** 2, 20000)
    T_ours, v_ours = gd.argmin_dynamic(kappa=kk, alpha=aa)
    assert v_ours == pytest.approx(v_best, rel=1e-12)
    t27 = gd.t_dynamic(kappa=kk, alpha=aa)
    assert T_best in {max(1, math.floor(t27)), max(1, math.ceil(t27))}
    # the continuous minimum (display after Eq. 27) is below every integer value
    assert gd.erub_dynamic_min(kappa=kk, alpha=aa) <= v_best * (1 + 1e-12)


def test_lemma43_against_numerical_optimiser():
    from scipy.optimize import minimize

    q = np.array([0.3, 1.0, 2.5, 0.01, 7.0])
    s2, m = gd.optimal_schedule(q=q, R=2.0)
    res = minimize(lambda z: 2.0 * float(np.sum(q / (2.0 * np.exp(z) / np.exp(z).sum()))), np.zeros(5), method="BFGS")
    assert res.fun == pytest.approx(m, rel=1e-6)
    assert m == pytest.approx(float(np.sqrt(q).sum() ** 2))
    assert float(np.sum(1 / s2)) == pytest.approx(2.0)


@given(st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=30), st.floats(0.05, 20))
def test_lemma43_never_worse_than_uniform(q, RR):
    q = np.asarray(q)
    _, m = gd.optimal_schedule(q=q, R=RR)
    assert m <= q.size * q.sum() * (1 + 1e-12)  # uniform sigma_t^2 = T/R gives R sum q T/R


@given(st.floats(1.01, 1e3), st.floats(1e-6, 1.0), st.integers(1, 400))
def test_dynamic_never_above_uniform(kk, aa, TT):
    assert gd.erub_dynamic(T=TT, kappa=kk, alpha=aa) <= gd.erub_uniform(T=TT, kappa=kk, alpha=aa) * (1 + 1e-10)


# --- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize("call,param", [
    (lambda: gd.erub_uniform(T=3, kappa=0.5, alpha=0.1), "kappa"),
    (lambda: gd.erub_uniform(T=3, kappa=2, alpha=0.0), "alpha"),
    (lambda: gd.erub_uniform(T=-1, kappa=2, alpha=0.1), "T"),
    (lambda: gd.influence(T=2.5, kappa=2, alpha=0.1), "T"),
    (lambda: gd.alpha_of(D=1, G=1, R=-1, M=1, N=1, f_gap=1), "R"),
    (lambda: gd.optimal_schedule(q=[1.0, -2.0], R=1.0), "q"),
    (lambda: gd.sigma2_dynamic(T=3, kappa=1, R=1.0), "kappa"),
    (lambda: gd.erub(sigma=[1.0, float("nan")], kappa=2, alpha=0.1, R=1.0), "sigma"),
])
def test_validation_names_parameter(call, param):
    with pytest.raises(ValueError, match=param):
        call()


def test_sweeps_consistent():
    d = bound_sweeps.erub_vs_T(kappa=10, alpha=1e-3, T_max=50)
    Tb, vb = d["argmin"]["dynamic"]
    assert d["dynamic"][Tb - 1] == pytest.approx(vb)
    o = bound_sweeps.optimal_T_vs_kappa(kappas=[2.0, 50.0], alpha=1e-3)
    assert list(o["dynamic_exact"]) == [gd.argmin_dynamic(kappa=kk, alpha=1e-3)[0] for kk in (2.0, 50.0)]
