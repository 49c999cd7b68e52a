"""Tests of dpcompanion.theory.schedules: budget exactness, closed forms, optimality, clean refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy import optimize

from dpcompanion.theory import schedules as S

Ts = st.integers(min_value=1, max_value=100_000)
Rs = st.floats(min_value=1e-4, max_value=1e4)

# Valid inputs by construction. Every schedule is ``1/sigma_t^2 = R softmax(c)_t``
# for log-weights ``c_t`` (module docstring) and refuses only what its docstring names: parameters
# outside their domain, and schedules whose ``sigma^2`` would leave float64 (``|ln sigma^2| > 700``).
# With T <= 1e5 and R in [1e-4, 1e4], ``ln sigma_t^2 = logsumexp(c) - c_t - ln R`` lies in
# [-ln R, ln T + spread(c) - ln R], so a spread ``max c - min c`` of at most SPREAD = 600 keeps every
# input below accepted; each strategy below draws the schedule's parameters from its documented
# domain restricted to that spread (the bound on the spread is worked out in each strategy).
SPREAD = 600.0
# ... and a spread of at least OVERFLOW = 720 puts some ln sigma_t^2 above 720 - ln(1e4) > 700.
OVERFLOW = 720.0


def _assert_budget_exact(s, R, T):
    """The property every schedule promises: T finite, positive float64 multipliers spending R
    to 1e-9 relative, never more than R when a ledger adds the steps one by one."""
    assert isinstance(s, np.ndarray) and s.dtype == np.float64 and s.shape == (T,)
    assert np.all(np.isfinite(s)) and np.all(s > 0)
    spent = np.cumsum(1.0 / s**2)[-1]
    assert spent <= R and abs(spent - R) <= 1e-9 * R


def _refuses(fn, match, **kw):
    """``fn(**kw)`` raises a one-line ValueError matching ``match``."""
    with pytest.raises(ValueError, match=match) as exc:
        fn(**kw)
    assert str(exc.value) and "\n" not in str(exc.value)


def _max_abs_log(spread, T):
    """The largest change per step (``|ln gamma|``, ``2 |rate|``, ...) that keeps a total
    change of at most ``spread`` over the ``T - 1`` steps."""
    return spread / max(T - 1, 1)


@st.composite
def gd_inputs(draw):
    # c_t = (T - t) ln(gamma) / 2, gamma = 1 - 1/kappa: spread (T - 1) |ln gamma| / 2. kappa = 1
    # (gamma = 0) is documented as allowed only with T = 1.
    T = draw(Ts)
    if T == 1:
        return T, draw(st.floats(min_value=1.0, max_value=1e8))
    lim = _max_abs_log(2 * SPREAD, T)
    return T, draw(st.floats(min_value=1.0 / -math.expm1(-lim), max_value=1e8, exclude_min=True))


@given(inp=gd_inputs(), R=Rs)
def test_gd_dynamic_budget(inp, R):
    """gd_dynamic spends R exactly on every input of its domain that float64 holds."""
    T, kappa = inp
    _assert_budget_exact(S.gd_dynamic(T=T, R=R, kappa=kappa), R, T)


@given(T=Ts, R=Rs)
def test_uniform_budget(T, R):
    """uniform spends R exactly for every T and R, each step sqrt(T/R)."""
    s = S.uniform(T=T, R=R)
    _assert_budget_exact(s, R, T)
    assert np.allclose(s, math.sqrt(T / R), rtol=1e-12)


@st.composite
def exponential_inputs(draw):
    # c_t = 2 rate t: spread 2 |rate| (T - 1); any finite rate is in the domain.
    T = draw(Ts)
    lim = _max_abs_log(SPREAD / 2, T)
    return T, draw(st.floats(min_value=-lim, max_value=lim))


@given(inp=exponential_inputs(), R=Rs)
def test_exponential_budget(inp, R):
    """exponential spends R exactly, each step exp(-rate) times the previous."""
    T, rate = inp
    s = S.exponential(T=T, R=R, rate=rate)
    _assert_budget_exact(s, R, T)
    if T > 1:
        assert np.allclose(s[1:] / s[:-1], math.exp(-rate), rtol=1e-9)


@st.composite
def step_inputs(draw):
    # c_t = -2 ln(drop) floor((t - 1) / period): spread 2 |ln drop| floor((T - 1) / period);
    # the default period (None) is ceil(T / 4).
    T = draw(Ts)
    period = draw(st.none() | st.integers(1, T + 10))
    plateaus = (T - 1) // (period or max(1, math.ceil(T / 4)))
    lim = min(SPREAD / 2 / max(plateaus, 1), 690.0)
    return T, period, math.exp(draw(st.floats(min_value=-lim, max_value=lim)))


@given(inp=step_inputs(), R=Rs)
def test_step_budget(inp, R):
    """step_decay spends R exactly on every drop > 0 and period >= 1 float64 holds."""
    T, period, drop = inp
    _assert_budget_exact(S.step_decay(T=T, R=R, drop=drop, period=period), R, T)


@st.composite
def momentum_inputs(draw):
    # gamma = 1 - 1/kappa (eta0 = 1 < kappa). The paper's variants' ln q_t are (T + t - 1) ln gamma
    # and (k T_hat - 1 + T - t) ln gamma (k = 2, 3) up to one constant and ln 2, so spread(c) <=
    # 2 T |ln gamma| + 1; the slides' ln q_t lies within (T - 1) |ln gamma| + ln T. They need beta < gamma.
    T = draw(st.integers(1, 20_000))
    variant = draw(st.sampled_from(S.MOMENTUM_VARIANTS))
    lim = SPREAD / 2 / T - 1e-3
    kappa = draw(st.floats(min_value=1.0 / -math.expm1(-lim), max_value=1e8, exclude_min=True))
    gamma = 1.0 - 1.0 / kappa
    top = 0.99 if variant == "slides" else min(0.99, gamma)
    beta = draw(st.floats(min_value=0.0, max_value=top, exclude_max=variant != "slides"))
    return T, kappa, beta, variant


@given(inp=momentum_inputs(), R=Rs)
def test_momentum_budget(inp, R):
    """momentum_dynamic spends R exactly in every variant on the domain it documents."""
    T, kappa, beta, variant = inp
    _assert_budget_exact(S.momentum_dynamic(T=T, R=R, kappa=kappa, beta=beta, variant=variant), R, T)


@st.composite
def expinfl_inputs(draw):
    # c_t = (T - t) ln(gamma) / 2 for any gamma > 0: spread (T - 1) |ln gamma| / 2.
    T = draw(Ts)
    lim = min(_max_abs_log(2 * SPREAD, T), 700.0)
    return T, math.exp(draw(st.floats(min_value=-lim, max_value=lim)))


@given(inp=expinfl_inputs(), R=Rs)
def test_expinfl_budget(inp, R):
    """expinfl spends R exactly for every gamma > 0 (decaying and growing noise)."""
    T, gamma = inp
    _assert_budget_exact(S.expinfl(T=T, R=R, gamma=gamma), R, T)


@st.composite
def momexpinfl_inputs(draw):
    # ln q_t = logaddexp(ln c1 + t ln gamma, ln c2 - t ln gamma), gamma in (0, 1): the upper envelope
    # of two lines of slope |ln gamma|, spread at most (T - 1) |ln gamma| + ln 2.
    T = draw(Ts)
    lim = min(_max_abs_log(2 * SPREAD - 1, T), 700.0)
    gamma = math.exp(draw(st.floats(min_value=-lim, max_value=0.0, exclude_max=True)))
    c1, c2 = draw(st.floats(0.0, 1e300)), draw(st.floats(0.0, 1e300))
    assume(gamma < 1.0 and (c1 > 0 or c2 > 0))  # documented refusals: gamma in (0, 1), c1 = c2 = 0
    return T, gamma, c1, c2


@given(inp=momexpinfl_inputs(), R=Rs)
def test_momexpinfl_budget(inp, R):
    """momexpinfl spends R exactly for gamma in (0, 1) and any c1, c2 >= 0 not both 0."""
    T, gamma, c1, c2 = inp
    _assert_budget_exact(S.momexpinfl(T=T, R=R, gamma=gamma, c1=c1, c2=c2), R, T)


# c_t = -power ln(a + c t): spread |power| ln((a + c T) / (a + c)) <= 20 ln(1e9) = 414 here. The
# log-weights' size is kept to a few hundred too: a schedule is exact to the rounding of its
# log-weights, and 1e-9 relative needs |c_t| well below 1e6.
@given(T=Ts, R=Rs, a=st.floats(1e-3, 1e3), c=st.floats(0, 10), power=st.floats(-20, 20))
def test_adp_budget(T, R, a, c, power):
    """adp spends R exactly for a > 0, c >= 0 and any power, on W's scales."""
    _assert_budget_exact(S.adp(T=T, R=R, a=a, c=c, power=power), R, T)


@given(q=st.lists(st.floats(min_value=1e-250, max_value=1e250), min_size=1, max_size=300), R=Rs)
def test_optimal_budget(q, R):
    """optimal spends R exactly for influences spanning 500 orders of magnitude
    (c_t = ln(q_t) / 2: spread at most 576)."""
    _assert_budget_exact(S.optimal(q=q, R=R), R, len(q))


@pytest.mark.parametrize("fn,kw,match", [
    (S.uniform, dict(T=0, R=1.0), "T must be"),
    (S.uniform, dict(T=2.5, R=1.0), "T must be"),
    (S.uniform, dict(T=3, R=0.0), "R must be"),
    (S.uniform, dict(T=3, R=math.nan), "R must be"),
    (S.gd_dynamic, dict(T=3, R=1.0, kappa=0.5), "kappa must be"),
    (S.gd_dynamic, dict(T=3, R=1.0, kappa=math.inf), "kappa must be"),
    (S.gd_dynamic, dict(T=3, R=1.0, kappa=1.0), "kappa = 1"),
    (S.exponential, dict(T=3, R=1.0, rate=math.nan), "rate must be"),
    (S.step_decay, dict(T=3, R=1.0, drop=0.0), "drop must be"),
    (S.step_decay, dict(T=3, R=1.0, drop=0.5, period=0), "period must be"),
    (S.momentum_dynamic, dict(T=3, R=1.0, kappa=10.0, beta=1.0), "beta must be"),
    (S.momentum_dynamic, dict(T=3, R=1.0, kappa=10.0, beta=0.95), "beta must be < gamma"),
    (S.momentum_dynamic, dict(T=3, R=1.0, kappa=10.0, beta=0.5, eta0=10.0), "eta0 must be < kappa"),
    (S.momentum_dynamic, dict(T=3, R=1.0, kappa=10.0, beta=0.5, variant="nope"), "variant must be"),
    (S.expinfl, dict(T=3, R=1.0, gamma=0.0), "gamma must be"),
    (S.momexpinfl, dict(T=3, R=1.0, gamma=1.0), "gamma must be"),
    (S.momexpinfl, dict(T=3, R=1.0, gamma=0.5, c1=0.0, c2=0.0), "c1 and c2"),
    (S.momexpinfl, dict(T=3, R=1.0, gamma=0.5, c1=-1.0), "c1 must be"),
    (S.adp, dict(T=3, R=1.0, a=0.0), "a must be"),
    (S.adp, dict(T=3, R=1.0, c=-1.0), "c must be"),
    (S.adp, dict(T=3, R=1.0, power=math.inf), "power must be"),
    (S.optimal, dict(q=[], R=1.0), "q must be"),
    (S.optimal, dict(q=[1.0, 0.0], R=1.0), "q must be"),
    (S.optimal, dict(q=[1.0, math.nan], R=1.0), "q must be"),
])
def test_schedules_refuse_outside_their_domain(fn, kw, match):
    """Each schedule refuses a parameter outside its documented domain with a
    one-line ValueError naming it."""
    _refuses(fn, match, **kw)


def _overflowing(draw, T):
    """A log-slope that, over ``T - 1`` steps, spreads the log-weights by at least OVERFLOW."""
    return draw(st.floats(min_value=2 * OVERFLOW / (T - 1), max_value=30.0))  # gamma = e^-30 > 0 still


@st.composite
def overflowing_inputs(draw):
    """A schedule and parameters in its domain whose sigma^2 float64 cannot hold."""
    T = draw(st.integers(100, 100_000))
    slope = _overflowing(draw, T)  # |ln gamma| with (T - 1) |ln gamma| / 2 >= OVERFLOW
    return draw(st.sampled_from([
        (S.gd_dynamic, dict(T=T, kappa=1.0 / -math.expm1(-slope))),
        (S.exponential, dict(T=T, rate=draw(st.sampled_from([-1, 1])) * slope / 4)),
        (S.step_decay, dict(T=T, drop=math.exp(-slope / 4), period=1)),
        (S.momentum_dynamic, dict(T=T, kappa=1.0 / -math.expm1(-slope), beta=0.0, variant="slides")),
        (S.expinfl, dict(T=T, gamma=math.exp(draw(st.sampled_from([-1, 1])) * slope))),
        (S.momexpinfl, dict(T=T, gamma=math.exp(-slope), c1=0.0, c2=1.0)),
        (S.adp, dict(T=T, a=1.0, c=1.0, power=OVERFLOW / math.log((1 + T) / 2))),
        (S.optimal, dict(q=[5e-324, 1.7e308])),  # c = ln(q) / 2 spreads over 727
    ]))


@given(case=overflowing_inputs(), R=Rs)
def test_schedules_refuse_what_float64_cannot_hold(case, R):
    """A schedule whose noise multipliers span more than float64 holds is refused with
    a one-line ValueError saying so (module docstring), never returned with inf, 0 or NaN."""
    fn, kw = case
    _refuses(fn, "beyond float64", R=R, **kw)


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


@pytest.mark.parametrize("kappa", [1.5, 10.0, 300.0])
@pytest.mark.parametrize("T", [1, 7, 60])
def test_gd_dynamic_is_the_closed_form_of_thm_4_4(T, kappa):
    """The schedule the trainers use (evaluated in logs) is the statement's closed form, which H-T4.4.sigma proves
    to be Lemma 4.3's schedule."""
    from dpcompanion.theory.bounds import gd

    np.testing.assert_allclose(S.gd_dynamic(T=T, R=0.4, kappa=kappa) ** 2, gd.sigma2_dynamic(T=T, kappa=kappa, R=0.4),
                               rtol=1e-9)
