"""Tests of dpcompanion.theory.schedules: budget exactness, closed forms, optimality, clean refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize

from dpcompanion.theory import schedules as S

Ts = st.integers(min_value=1, max_value=100_000)
Rs = st.floats(min_value=1e-4, max_value=1e4)
kappas = st.floats(min_value=1.0, max_value=1e8)
betas = st.floats(min_value=0.0, max_value=0.99)


def _check_schedule_or_clean_error(fn, R, **kw):
    """Spends R to 1e-9 relative, finite positive float64 -- or a one-line ValueError."""
    try:
        s = fn(R=R, **kw)
    except ValueError as exc:
        msg = str(exc)
        assert msg and "\n" not in msg
        return None
    assert s.dtype == np.float64
    assert np.all(np.isfinite(s)) and np.all(s > 0)
    spent = np.sum(1.0 / s**2)
    assert abs(spent - R) <= 1e-9 * R
    return s


@given(T=Ts, R=Rs)
def test_uniform_budget(T, R):
    s = _check_schedule_or_clean_error(S.uniform, R, T=T)
    assert s is not None and np.allclose(s, math.sqrt(T / R), rtol=1e-12)


@given(T=Ts, R=Rs, kappa=kappas)
def test_gd_dynamic_budget(T, R, kappa):
    _check_schedule_or_clean_error(S.gd_dynamic, R, T=T, kappa=kappa)


@given(T=Ts, R=Rs, rate=st.floats(min_value=-1.0, max_value=1.0))
def test_exponential_budget(T, R, rate):
    _check_schedule_or_clean_error(S.exponential, R, T=T, rate=rate)


@given(T=Ts, R=Rs, drop=st.floats(min_value=0.01, max_value=10.0), period=st.integers(1, 1000))
def test_step_budget(T, R, drop, period):
    _check_schedule_or_clean_error(S.step_decay, R, T=T, drop=drop, period=period)


@given(T=st.integers(1, 20_000), R=Rs, kappa=st.floats(min_value=1.5, max_value=1e8), beta=betas,
       variant=st.sampled_from(["corrected", "proof", "statement", "slides"]))
def test_momentum_budget(T, R, kappa, beta, variant):
    _check_schedule_or_clean_error(S.momentum_dynamic, R, T=T, kappa=kappa, beta=beta, variant=variant)


@given(T=Ts, R=Rs, gamma=st.floats(min_value=1e-3, max_value=10.0))
def test_expinfl_budget(T, R, gamma):
    _check_schedule_or_clean_error(S.expinfl, R, T=T, gamma=gamma)


@given(T=Ts, R=Rs, gamma=st.floats(min_value=1e-3, max_value=0.999999), c1=st.floats(0, 1e3), c2=st.floats(1e-6, 1e3))
def test_momexpinfl_budget(T, R, gamma, c1, c2):
    _check_schedule_or_clean_error(S.momexpinfl, R, T=T, gamma=gamma, c1=c1, c2=c2)


@given(T=Ts, R=Rs, a=st.floats(1e-3, 1e3), c=st.floats(0, 10), power=st.floats(-2, 2))
def test_adp_budget(T, R, a, c, power):
    _check_schedule_or_clean_error(S.adp, R, T=T, a=a, c=c, power=power)


@given(q=st.lists(st.floats(min_value=1e-100, max_value=1e100), min_size=1, max_size=300), R=Rs)
def test_optimal_budget(q, R):
    _check_schedule_or_clean_error(S.optimal, R, q=q)


def test_extremes_named_in_the_issue():
    # T = 1e5 with kappa = 1e8 works; with kappa = 10 it refuses with a reason and a fix
    s = S.gd_dynamic(T=100_000, R=0.3927, kappa=1e8)
    assert abs(np.sum(1 / s**2) / 0.3927 - 1) < 1e-9
    with pytest.raises(ValueError, match=r"beyond float64.*use T <= \d+"):
        S.gd_dynamic(T=100_000, R=0.3927, kappa=10)
    with pytest.raises(ValueError, match="kappa = 1"):
        S.gd_dynamic(T=5, R=1.0, kappa=1.0)
    assert S.gd_dynamic(T=1, R=4.0, kappa=1.0).tolist() == [0.5]


# ---------------------------------------------------------------- closed forms


@pytest.mark.parametrize("T,kappa,R", [(1, 2.0, 1.0), (10, 5.0, 0.3927), (150, 50.0, 2.0), (400, 1e4, 0.1)])
def test_gd_dynamic_matches_thm_4_4_closed_form(T, kappa, R):
    # H Thm 4.4: sigma_t^2 = (1/R) (sqrt((1/gamma)^T) - 1) / (1 - sqrt(gamma)) sqrt(gamma^t)
    g = 1 - 1 / kappa
    t = np.arange(1, T + 1)
    closed = (1 / R) * (np.sqrt((1 / g) ** T) - 1) / (1 - np.sqrt(g)) * np.sqrt(g**t)
    assert np.allclose(S.gd_dynamic(T=T, R=R, kappa=kappa) ** 2, closed, rtol=1e-9)


def test_optimal_matches_lemma_4_3_formula_and_brute_force():
    rng = np.random.default_rng(0)
    q = rng.uniform(0.1, 5.0, size=6)
    R = 0.7
    s2 = S.optimal(q=q, R=R) ** 2
    assert np.allclose(s2, [(1 / R) * np.sum(np.sqrt(q / qt)) for qt in q], rtol=1e-12)
    assert R * np.sum(q * s2) == pytest.approx(np.sum(np.sqrt(q)) ** 2, rel=1e-12)  # Eq. (10)
    # brute force: minimise sum q_t/w_t over w > 0 with sum w = R (w = 1/sigma^2)
    res = optimize.minimize(lambda w: np.sum(q / w), np.full(6, R / 6), method="SLSQP",
                            constraints=[{"type": "eq", "fun": lambda w: np.sum(w) - R}],
                            bounds=[(1e-9, None)] * 6, options={"ftol": 1e-14, "maxiter": 500})
    assert res.fun == pytest.approx(np.sum(q * s2), rel=1e-6)


@given(q=st.lists(st.floats(min_value=1e-3, max_value=1e3), min_size=2, max_size=50), R=Rs)
def test_optimal_beats_uniform(q, R):
    q = np.array(q)
    T = q.size
    opt = np.sum(q * S.optimal(q=q, R=R) ** 2)
    uni = np.sum(q * S.uniform(T=T, R=R) ** 2)
    if np.ptp(np.sqrt(q)) / np.max(np.sqrt(q)) > 1e-6:
        assert opt < uni
    # the gap is T^2 Var(sqrt q) / R (H Eq. 26 remark, variance over t of sqrt(q_t))
    assert uni - opt == pytest.approx(T**2 * np.var(np.sqrt(q)) / R, rel=1e-6, abs=1e-9 * uni)


@given(T=st.integers(1, 1000), c=st.floats(1e-3, 1e3), R=Rs)
def test_optimal_ties_uniform_for_constant_q(T, c, R):
    assert np.allclose(S.optimal(q=[c] * T, R=R), S.uniform(T=T, R=R), rtol=1e-12)


def test_exponential_and_step_shapes():
    s = S.exponential(T=20, R=1.0, rate=0.1)
    assert np.allclose(np.log(s[1:] / s[:-1]), -0.1)
    s = S.step_decay(T=10, R=1.0, drop=0.5, period=3)
    assert np.allclose(s / s[0], 0.5 ** (np.arange(10) // 3))
    assert len(set(np.round(S.step_decay(T=8, R=1.0) / S.step_decay(T=8, R=1.0)[0], 12))) == 4


def test_expinfl_equivalences():
    a = S.expinfl(T=30, R=0.5, gamma=0.9)
    assert np.allclose(a, S.gd_dynamic(T=30, R=0.5, kappa=10.0), rtol=1e-9)
    assert np.allclose(a, S.exponential(T=30, R=0.5, rate=-math.log(0.9) / 4), rtol=1e-9)


def test_momexpinfl_influence_formula():
    g, c1, c2, T = 0.8, 2.0, 0.5, 12
    t = np.arange(1, T + 1)
    q = c1 * g ** (T + t) + c2 * g ** (T - t)
    assert np.allclose(S.momexpinfl(T=T, R=1.0, gamma=g, c1=c1, c2=c2), S.optimal(q=q, R=1.0), rtol=1e-9)


def test_momentum_T_hat_brute_force():
    for kappa, beta, eta0 in [(100.0, 0.9, 1.0), (10.0, 0.5, 1.0), (1000.0, 0.99, 0.5), (5.0, 0.0, 1.0)]:
        g = 1 - eta0 / kappa
        T = 3000
        ok = [t for t in range(1, T + 1) if g ** (t - 1) >= (1 - beta) / (1 - beta**t) * (1 - 1e-12)]
        assert S.momentum_T_hat(T=T, kappa=kappa, beta=beta, eta0=eta0) == max(ok)


def test_momentum_variants_influences():
    T, kappa, beta = 40, 20.0, 0.5
    g = 1 - 1 / kappa
    t = np.arange(1, T + 1)
    # slides (file 003, Thm 3.4): q_t = (beta^{2(T-t+1)} - gamma^{T-t+1}) / (beta^2 - gamma)
    q_slides = (beta ** (2 * (T - t + 1)) - g ** (T - t + 1)) / (beta**2 - g)
    assert np.allclose(S.momentum_dynamic(T=T, R=1.0, kappa=kappa, beta=beta, variant="slides"),
                       S.optimal(q=q_slides, R=1.0), rtol=1e-9)
    # proof of H Thm 4.7: c1 gamma^{T+t} for t <= T_hat, gamma^{T_hat-1} c2 gamma^{T-t} after
    Th = S.momentum_T_hat(T=T, kappa=kappa, beta=beta)
    assert 1 < Th < T
    c1 = 2 / (g * (g - beta**2))
    c2 = g ** (2 * Th) / (g - beta**2)
    q_proof = np.where(t <= Th, c1 * g ** (T + t), g ** (Th - 1) * c2 * g ** (T - t))
    assert np.allclose(S.momentum_dynamic(T=T, R=1.0, kappa=kappa, beta=beta, variant="proof"),
                       S.optimal(q=q_proof, R=1.0), rtol=1e-9)
    # default: the corrected constant c2' = gamma^T_hat / (gamma - beta^2) (claim H-T4.7.q-corrected)
    c2c = g**Th / (g - beta**2)
    q_corr = np.where(t <= Th, c1 * g ** (T + t), g ** (Th - 1) * c2c * g ** (T - t))
    assert np.allclose(S.momentum_dynamic(T=T, R=1.0, kappa=kappa, beta=beta), S.optimal(q=q_corr, R=1.0), rtol=1e-9)
    # statement as printed (indicator on T): T > T_hat gives the GD schedule
    assert np.allclose(S.momentum_dynamic(T=T, R=1.0, kappa=kappa, beta=beta, variant="statement"),
                       S.gd_dynamic(T=T, R=1.0, kappa=kappa), rtol=1e-9)
    with pytest.raises(ValueError, match="beta must be < gamma"):
        S.momentum_dynamic(T=T, R=1.0, kappa=2.0, beta=0.9)


def test_adp_mapping():
    T = 50
    t = np.arange(1, T + 1)
    s = S.adp(T=T, R=0.3, a=20.0, c=1.0)
    assert np.allclose(s**2 / s[0] ** 2, np.sqrt(20 + t) / np.sqrt(21))  # sigma_t^2 ∝ alpha_t^2 = b_t
    # X-UNIFY: the same as Lemma 4.3 with q_t ∝ eta_t^2 = 1/b_t^2
    assert np.allclose(s, S.optimal(q=1 / (20 + t), R=0.3), rtol=1e-9)
    assert np.allclose(S.adp(T=3, R=1.0, alpha2=[1.0, 2.0, 4.0]) ** 2, np.array([1.0, 2.0, 4.0]) * 1.75)


@pytest.mark.parametrize("kind,kw,match", [
    ("uniform", dict(T=0, R=1.0), "T must be"),
    ("uniform", dict(T=3, R=-1.0), "R must be"),
    ("gd-dynamic", dict(T=3, R=1.0, kappa=0.5), "kappa must be"),
    ("momentum-dynamic", dict(T=3, R=1.0, kappa=10.0, beta=1.0), "beta must be"),
    ("optimal", dict(q=[1.0, 0.0], R=1.0), "q must be finite and > 0"),
    ("optimal", dict(q=[1.0, float("nan")], R=1.0), "q must be"),
    ("gd-dynamic", dict(T=3, R=1.0), "kappa"),
    ("nope", dict(T=3, R=1.0), "kind must be one of"),
])
def test_make_refuses_cleanly(kind, kw, match):
    with pytest.raises(ValueError, match=match):
        S.make(kind, **kw)


def test_kinds_all_dispatch():
    params = {"optimal": dict(q=[1.0, 2.0, 3.0]), "gd-dynamic": dict(kappa=5.0), "exp": dict(rate=0.1),
              "momentum-dynamic": dict(kappa=10.0, beta=0.5), "expinfl": dict(gamma=0.9), "momexpinfl": dict(gamma=0.9)}
    for kind in S.KINDS:
        kw = params.get(kind, {})
        if kind != "optimal":
            kw = dict(kw, T=3)
        s = S.make(kind, R=2.0, **kw)
        assert s.shape == (3,) and abs(np.sum(1 / s**2) - 2.0) < 1e-12
