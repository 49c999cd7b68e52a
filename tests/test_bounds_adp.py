"""Tests of dpcompanion.theory.bounds.adp against W (002) formulas rewritten here, SymPy and scipy."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize

from dpcompanion.theory.bounds import adp


def seqs(n_min=1, n_max=30):
    return st.lists(st.floats(0.05, 20.0), min_size=n_min, max_size=n_max)


@given(seqs(), st.integers(0, 2**31 - 1))
def test_M_definition_and_cauchy_schwarz(b, seed):
    b = np.array(b)
    alpha = np.random.default_rng(seed).uniform(0.1, 5, size=b.size)
    M = sum((a / bb) ** 2 for a, bb in zip(alpha, b)) * sum(1 / a**2 for a in alpha)
    assert adp.M(alpha=alpha, b=b) == pytest.approx(M, rel=1e-12)
    assert adp.M(alpha=alpha, b=b) >= adp.M_adp(b=b) * (1 - 1e-12)
    assert adp.M(alpha=np.sqrt(b), b=b) == pytest.approx(adp.M_adp(b=b), rel=1e-12)
    assert adp.M(alpha=np.ones_like(b), b=b) == pytest.approx(adp.M_dp(b=b), rel=1e-12)
    assert adp.M_ratio(b=b) >= 1 - 1e-12


def test_min_over_alpha_by_scipy():
    b = adp.b_poly(a=2.0, c=1.0, T=8)
    res = minimize(lambda x: adp.M(alpha=np.exp(x), b=b), np.zeros(8), method="BFGS", options={"gtol": 1e-10})
    assert res.fun == pytest.approx(adp.M_adp(b=b), rel=1e-8)
    a2 = np.exp(2 * res.x)
    assert np.allclose(a2 / a2[0], b / b[0], rtol=1e-4)  # alpha_t^2 proportional to b_t


def test_alt_relationship_counterexample():
    # W-R4.1.alt: alpha = (1, 2) gives b = (2, 2) with alpha_t alpha_{T+1-t} = b_t, but M != M_adp
    alpha = np.array([1.0, 2.0])
    b = alpha * alpha[::-1]
    assert adp.M(alpha=alpha, b=b) == pytest.approx(1.5625)
    assert adp.M_adp(b=b) == pytest.approx(1.0)


def test_eq9_counterexample_and_eq25():
    # W-P5.1.eq9: sum 1/sqrt(1 + t) over t <= 20000 vs the printed sqrt(T/c)
    T = 20000
    exact = sum(1 / math.sqrt(1 + t) for t in range(1, T + 1))
    assert exact > adp.prop51_bound(T=T, a=1.0, c=1.0, which="adp")
    assert exact <= adp.prop51_bound(T=T, a=1.0, c=1.0, which="adp", version="appendix")
    b = adp.b_poly(a=1.0, c=1.0, T=T)
    assert adp.privacy_term(alpha=np.sqrt(b), b=b) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("a,c", [(1.0, 1.0), (20.0, 1.0), (1.0, 0.01)])
def test_dp_bounds_hold(a, c):
    T0 = math.ceil(5 + 4 * a / c)
    for T in (T0, 10 * T0, 5000):
        b = adp.b_poly(a=a, c=c, T=T)
        exact = T * np.sum(1 / b**2) / np.sum(1 / b)
        assert exact <= adp.prop51_bound(T=T, a=a, c=c, which="dp")
        assert exact <= adp.prop51_bound(T=T, a=a, c=c, which="dp", version="appendix")


def test_ratio_grows_like_quarter_log_T():
    Ts = [10**3, 10**4, 10**5, 10**6]
    r = [adp.M_ratio(b=adp.b_poly(a=20.0, c=1.0, T=T)) for T in Ts]
    slope = np.polyfit(np.log(Ts), r, 1)[0]
    assert 0.15 < slope < 0.3


def test_prop52_bounds_and_stepsizes():
    assert adp.prop52_bound(T=11700, nu=1e-5, b0_sq=20.0, G=1.0, which="dp") == pytest.approx(
        32 * math.log(1 + 11700 * 1e-5 / 20)
    )
    e = adp.stepsize_sqrt(T=5, a=20.0)
    assert e[0] == pytest.approx(1 / math.sqrt(20)) and e[-1] == pytest.approx(1 / math.sqrt(24))
    f = adp.stepsize_linear_sqrt(T=11700)
    assert f[0] == pytest.approx(0.1) and f[-1] == pytest.approx(1e-10, abs=1e-15)
    assert np.all(np.diff(f) < 0)


def test_validation():
    with pytest.raises(ValueError, match="alpha and b must have the same length"):
        adp.M(alpha=[1.0], b=[1.0, 2.0])
    with pytest.raises(ValueError, match="b must be"):
        adp.M_dp(b=[0.0])
    with pytest.raises(ValueError, match="which must be"):
        adp.prop51_bound(T=10, a=1.0, c=1.0, which="x")
    with pytest.raises(ValueError, match="T must be an integer >= 2, got 1"):
        adp.prop51_bound(T=1, a=1.0, c=1.0, which="adp")
