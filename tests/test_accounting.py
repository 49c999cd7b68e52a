"""Tests of dpcompanion.theory.accounting against closed forms rewritten here, mpmath and dp-accounting."""

from __future__ import annotations

import math

import dp_accounting as dpa
import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dpcompanion.theory import accounting as acc, adp_accounting

deltas = st.floats(min_value=1e-12, max_value=0.5)
epsilons = st.floats(min_value=1e-3, max_value=50.0)
rhos = st.floats(min_value=1e-6, max_value=20.0)


# ------------------------------------------------------------------ zCDP <-> DP


def test_anchor_numbers_of_h_section_5():
    # Hong et al. 2022 (file 001) Sec. 5 prints: (4, 1e-8)-DP "equal to 0.1963-zCDP, which
    # implies R = 0.3927". Compared at the printed precision: R rounds to 0.3927; rho is
    # 0.19635..., which the paper truncates to 0.1963 (within one unit of the last digit).
    rho = acc.dp_to_zcdp(epsilon=4, delta=1e-8)
    R = acc.R_zcdp(epsilon=4, delta=1e-8)
    assert abs(R - 0.3927) <= 0.5e-4  # R rounds to the printed 0.3927 (half a unit of its last digit)
    assert abs(rho - 0.1963) < 1e-4 and math.floor(rho * 1e4) / 1e4 == 0.1963
    assert acc.zcdp_to_dp(rho=rho, delta=1e-8) == pytest.approx(4.0, rel=1e-12)


def test_inverse_matches_sympy_solution_of_lemma_c3():
    rho, eps, L = sp.symbols("rho epsilon L", positive=True)
    sols = sp.solve(sp.Eq(rho + 2 * sp.sqrt(rho * L), eps), rho)
    assert len(sols) == 1  # sympy keeps only the positive-root solution
    f = sp.lambdify((eps, L), sols[0], "mpmath")
    for e, d in [(4, 1e-8), (0.1, 1e-5), (10.0, 1e-3), (1e-3, 1e-10)]:
        expected = float(f(mpmath.mpf(e), mpmath.log(1 / mpmath.mpf(d))))
        assert acc.dp_to_zcdp(epsilon=e, delta=d) == pytest.approx(expected, rel=1e-12)


def test_inverse_rewritten_closed_form():
    # rho = eps + 2L - 2 sqrt(L (L + eps)) (the expanded square of sqrt(L+eps) - sqrt(L))
    for e, d in [(4, 1e-8), (1.0, 1e-5), (8.0, 1e-6)]:
        L = math.log(1 / d)
        assert acc.dp_to_zcdp(epsilon=e, delta=d) == pytest.approx(e + 2 * L - 2 * math.sqrt(L * (L + e)), rel=1e-9)


@given(rho=rhos, delta=deltas)
def test_round_trip_rho(rho, delta):
    assert acc.dp_to_zcdp(epsilon=acc.zcdp_to_dp(rho=rho, delta=delta), delta=delta) == pytest.approx(rho, rel=1e-9)


@given(epsilon=epsilons, delta=deltas)
def test_round_trip_epsilon(epsilon, delta):
    assert acc.zcdp_to_dp(rho=acc.dp_to_zcdp(epsilon=epsilon, delta=delta), delta=delta) == pytest.approx(epsilon, rel=1e-9)


@given(epsilon=epsilons, delta=deltas)
def test_monotone(epsilon, delta):
    r = acc.dp_to_zcdp(epsilon=epsilon, delta=delta)
    assert acc.dp_to_zcdp(epsilon=epsilon * 1.1, delta=delta) > r
    assert acc.dp_to_zcdp(epsilon=epsilon, delta=min(0.9, delta * 2)) > r


def test_R_conventions():
    assert acc.R_from_rho(rho=0.3) == 0.6 and acc.rho_from_R(R=0.6) == 0.3
    # R units: spending R = sum 1/sigma^2 is (R/2)-zCDP (H Thm 3.1)
    assert acc.rho_from_R(R=acc.spent_R(sigma=[1.0, 2.0])) == pytest.approx(0.625)


def test_printed_inversion_is_the_other_root():
    for e, d in [(4, 1e-8), (1.0, 1e-5)]:
        L = math.log(1 / d)
        printed = acc.R_zcdp_as_printed(epsilon=e, delta=d)
        assert printed == pytest.approx(2 * (math.sqrt(L) + math.sqrt(L + e)) ** 2, rel=1e-12)
        assert printed > 100 * acc.R_zcdp(epsilon=e, delta=d)


def test_R_ma_against_R_zcdp_at_paper_setting():
    # H Sec. 4.1.3 claims R_zCDP > R_MA when eps <= 2 ln(1/delta); with the correct root the
    # reverse holds at the paper's own setting (eps = 4 <= 2 ln(1e8) = 36.8).
    assert acc.R_ma(epsilon=4, delta=1e-8) == pytest.approx(16 / math.log(1e8))
    assert acc.R_ma(epsilon=4, delta=1e-8) > acc.R_zcdp(epsilon=4, delta=1e-8)


@pytest.mark.parametrize("bad", [dict(epsilon=0, delta=1e-5), dict(epsilon=1, delta=0), dict(epsilon=1, delta=1.0),
                                 dict(epsilon=-1, delta=1e-5), dict(epsilon=float("nan"), delta=1e-5)])
def test_validation(bad):
    with pytest.raises(ValueError, match="epsilon|delta"):
        acc.dp_to_zcdp(**bad)


# --------------------------------------------------------------------- exact GDP


def _gdp_delta_mpmath(mu, eps):
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    Phi = lambda x: mpmath.ncdf(x)  # noqa: E731
    return Phi(-eps / mu + mu / 2) - mpmath.e**eps * Phi(-eps / mu - mu / 2)


@pytest.mark.parametrize("mu,eps", [(0.1, 0.05), (0.5, 1.0), (0.7166, 4.0), (1.0, 3.0), (3.0, 10.0), (0.2, 2.0)])
def test_gdp_delta_against_mpmath(mu, eps):
    mpmath.mp.dps = 50
    assert acc.gdp_delta(mu=mu, epsilon=eps) == pytest.approx(float(_gdp_delta_mpmath(mu, eps)), rel=1e-8)


def test_exact_epsilon_against_pld_distinct_sigmas():
    sigma = np.array([3.0, 2.5, 2.0])
    ours = acc.exact_epsilon(sigma=sigma, delta=1e-6)
    pld = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    for s in sigma:  # one event per step: an independent composition
        pld.compose(dpa.GaussianDpEvent(float(s)))
    theirs = pld.get_epsilon(1e-6)
    assert theirs == pytest.approx(ours, abs=5e-3)
    assert theirs >= ours - 1e-6  # PLD discretisation is pessimistic


@given(R=st.floats(min_value=1e-3, max_value=50.0), delta=st.floats(min_value=1e-12, max_value=1e-2))
def test_exact_is_below_zcdp_and_rdp(R, delta):
    sigma = [1 / math.sqrt(R)]
    exact = acc.exact_epsilon(sigma=sigma, delta=delta)
    assert exact <= acc.zcdp_to_dp(rho=R / 2, delta=delta) + 1e-9
    assert acc.gdp_delta(mu=math.sqrt(R), epsilon=exact) == pytest.approx(delta, rel=1e-6) or exact == 0.0


def test_rdp_is_above_exact():
    sigma = [2.0] * 10
    assert acc.accountant_epsilon(sigma=sigma, delta=1e-5, accountant="rdp") >= acc.exact_epsilon(sigma=sigma, delta=1e-5)


@given(epsilon=st.floats(min_value=0.05, max_value=20.0), delta=st.floats(min_value=1e-12, max_value=1e-2))
def test_R_exact_spends_exactly_epsilon(epsilon, delta):
    R = acc.R_exact(epsilon=epsilon, delta=delta)
    assert R >= acc.R_zcdp(epsilon=epsilon, delta=delta)
    assert acc.gdp_epsilon(mu=math.sqrt(R), delta=delta) == pytest.approx(epsilon, rel=1e-7)


def test_unused_budget_at_paper_setting():
    u = acc.unused_budget(epsilon=4, delta=1e-8)
    assert u["ratio"] > 1.2
    assert u["epsilon_exact_at_R_zcdp"] < 4
    # cross-check the exact R with dp-accounting's PLD: one Gaussian with sigma = 1/sqrt(R_exact)
    pld = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    pld.compose(dpa.GaussianDpEvent(1 / math.sqrt(u["R_exact"])))
    assert pld.get_epsilon(1e-8) == pytest.approx(4.0, abs=5e-3)


def test_exact_handles_inf_sigma_and_validation():
    assert acc.exact_epsilon(sigma=[float("inf")] * 3, delta=1e-5) == 0.0
    assert acc.exact_epsilon(sigma=[2.0, float("inf")], delta=1e-5) == acc.exact_epsilon(sigma=[2.0], delta=1e-5)
    with pytest.raises(ValueError, match="sigma must be > 0"):
        acc.exact_epsilon(sigma=[1.0, 0.0], delta=1e-5)


# ---------------------------------------------------------------------- subsampling


def test_psgd_rule_is_rescaled_budget():
    p, R = 0.05, 0.4
    sigma = np.full(100, math.sqrt(100 * p * p / R))  # sum p^2/sigma^2 = R
    assert sum(acc.psgd_step_cost(sigma=s, sampling_rate=p) for s in sigma) == pytest.approx(R)
    assert acc.spent_R(sigma=sigma) == pytest.approx(acc.psgd_R_prime(R=R, sampling_rate=p))


def test_grouping_equals_step_by_step_composition():
    sigma = [1.5, 2.0, 1.5, 3.0, 2.0, 1.5]
    p = 0.1
    ours = acc.accountant_epsilon(sigma=sigma, delta=1e-5, sampling_rate=p, accountant="rdp")
    a = dpa.rdp.RdpAccountant()
    for s in sigma:
        a.compose(dpa.PoissonSampledDpEvent(p, dpa.GaussianDpEvent(s)))
    assert ours == pytest.approx(a.get_epsilon(1e-5), rel=1e-12)


def test_subsampling_amplifies():
    sigma = [1.0] * 50
    e = [acc.accountant_epsilon(sigma=sigma, delta=1e-5, sampling_rate=p) for p in (0.01, 0.1, 1.0)]
    assert e[0] < e[1] < e[2]
    with pytest.raises(ValueError, match="sampling_rate"):
        acc.accountant_epsilon(sigma=sigma, delta=1e-5, sampling_rate=0.0)
    with pytest.raises(ValueError, match="accountant"):
        acc.accountant_epsilon(sigma=sigma, delta=1e-5, accountant="ma")


# -------------------------------------------------------------------------- ADP-SGD


def test_adp_sigma2_rewritten():
    alpha = np.sqrt(np.sqrt(20 + np.arange(1, 101)))
    n, eps, d, G = 1000, 2.0, 1e-5, 1.5
    B = math.log(16 * 100 / (n * d)) * math.log(1.25 / d)
    expected = (16 * G) ** 2 * B * np.sum(1 / alpha**2) / (n**2 * eps**2)
    assert adp_accounting.adp_sigma2(alpha=alpha, G=G, n=n, epsilon=eps, delta=d) == pytest.approx(expected, rel=1e-12)


def test_adp_sigma2_scaling_in_T():
    # W Sec. 4: alpha_t^2 ∝ t^p gives sigma^2 ∝ T^(1-p) (p < 1), up to B_delta's log T
    def ratio(p):
        s = [adp_accounting.adp_sigma2(alpha=np.arange(1, T + 1) ** (p / 2), G=1, n=10**9, epsilon=1, delta=1e-5)
             / adp_accounting.adp_B_delta(T=T, n=10**9, delta=1e-5) for T in (10**4, 10**5)]
        return s[1] / s[0]

    assert ratio(0.0) == pytest.approx(10.0)
    assert ratio(0.5) == pytest.approx(10**0.5, rel=0.02)


def test_advanced_composition_reduces_to_classical():
    e0, k, dp = 0.05, 40, 1e-6
    eps, delta = adp_accounting.advanced_composition(epsilons=[e0] * k, deltas=[1e-7] * k, delta_prime=dp)
    classical = e0 * math.sqrt(2 * k * math.log(1 / dp)) + k * e0 * (math.exp(e0) - 1) / (math.exp(e0) + 1)
    assert eps == pytest.approx(classical, rel=1e-12)
    assert delta == pytest.approx(1 - (1 - 1e-7) ** k + dp, rel=1e-9)
    with pytest.raises(ValueError, match="epsilon_i"):
        adp_accounting.advanced_composition(epsilons=[1.5], deltas=[1e-6], delta_prime=1e-6)


def test_w_moments_epsilons_recompute():
    rows = adp_accounting.w_moments_epsilons()
    assert [r["epsilon_bar"] for r in rows] == list(adp_accounting.W_EPSILON_BARS)
    eps = [r["epsilon_accountant"] for r in rows]
    assert all(a < b for a, b in zip(eps, eps[1:]))
    r0 = rows[0]
    B = math.log(16 * 11700 / (50000 * 1e-5)) * math.log(1.25 / 1e-5)
    assert r0["noise_multiplier"] == pytest.approx(256 * 16 * math.sqrt(B * 11700) / (50000 * 16 * 0.8))
    classic = adp_accounting.w_moments_epsilons(epsilon_bar=[0.8], conversion="classic")[0]["epsilon_accountant"]
    assert classic > eps[0]  # the classic RDP conversion is looser


def test_R_accountant_between_zcdp_and_exact():
    rz = acc.R_zcdp(epsilon=4, delta=1e-8)
    rx = acc.R_exact(epsilon=4, delta=1e-8)
    rr = acc.R_accountant(epsilon=4, delta=1e-8, accountant="rdp")
    assert rz < rr < rx
    assert acc.accountant_epsilon(sigma=[1 / math.sqrt(rr)], delta=1e-8) == pytest.approx(4.0, rel=1e-6)
    # PLD of a Gaussian is (up to discretisation) the exact GDP profile
    assert acc.R_accountant(epsilon=4, delta=1e-8, accountant="pld") == pytest.approx(rx, rel=1e-3)


@pytest.mark.parametrize("sigma,p", [(1.0, 0.01), (0.5, 0.1), (3.0, 0.5), (0.3, 0.9), (2.0, 1.0)])
def test_rdp_curve_is_dp_accountings_formula_at_integer_orders(sigma, p):
    """Our vectorised subsampled-Gaussian RDP equals dp-accounting's at every integer order
    (independent implementation), and its epsilon is never below dp-accounting's (which adds
    fractional orders): the ledger is at least as strict as dp-accounting's RDP accountant."""
    from dp_accounting.rdp import rdp_privacy_accountant as rpa

    ref = rpa._compute_rdp_poisson_subsampled_gaussian(p, sigma, acc.RDP_ORDERS)
    ours = acc.rdp_curve(sigma=[sigma], sampling_rate=p)
    assert np.allclose(ours, ref, rtol=1e-9, atol=1e-300)
    ref_acc = dpa.rdp.RdpAccountant()
    ev = dpa.GaussianDpEvent(sigma)
    ref_acc.compose(ev if p == 1 else dpa.PoissonSampledDpEvent(p, ev), 50)
    e_ours = acc.rdp_epsilon(orders=acc.RDP_ORDERS, rdp=50 * ours, delta=1e-5)
    assert ref_acc.get_epsilon(1e-5) <= e_ours * (1 + 1e-12)


def test_rdp_curve_refuses_noiseless_steps():
    for bad in (np.inf, np.nan, 0.0, -1.0):
        with pytest.raises(ValueError, match="sigma"):
            acc.rdp_curve(sigma=[1.0, bad], sampling_rate=0.1)


def test_rdp_protocol_helpers_calibrate_and_refuse_the_last_order():
    """calibrate_multiplier reaches its target by the same accountant; rdp_epsilon with
    check_order refuses an optimum at the last order (a valid but loose value)."""
    a = np.linspace(1.0, 2.0, 12)
    z = acc.calibrate_multiplier(alpha=a, sampling_rate=0.1, delta=1e-5, epsilon_target=1.5)
    assert acc.rdp_epsilon_of(sigma=z * a, delta=1e-5, sampling_rate=0.1) == pytest.approx(1.5, rel=1e-9)
    orders = np.arange(2, 6.0)
    r = acc.rdp_curve(sigma=[20.0], orders=orders)
    assert acc.rdp_epsilon(orders=orders, rdp=r, delta=1e-5) > 0
    with pytest.raises(ValueError, match="largest RDP order"):
        acc.rdp_epsilon(orders=orders, rdp=r, delta=1e-5, check_order=True)
    o = acc.rdp_orders_for(sigma=1.0, T=1000, sampling_rate=0.01, delta=1e-5)
    assert o[0] == 2 and 32 <= o[-1] <= 256
    rows = acc.rdp_per_step(sigma=[2.0, 3.0, 2.0], sampling_rate=0.2, orders=orders)
    np.testing.assert_allclose(rows.sum(0), acc.rdp_curve(sigma=[2.0, 3.0, 2.0], sampling_rate=0.2, orders=orders))


# ------------------------------------------------------------------ ranges of the accountants


@pytest.mark.parametrize("epsilon", [1e-6, 0.003, 4000.0, 1e6])
def test_R_accountant_rdp_outside_the_old_bracket(epsilon):
    """Below about 0.0038 or above about 3077 (delta 1e-5) RDP at its fixed orders is looser
    than zCDP and the root bracket [0.99 R_zcdp, 1.01 R_exact] held no sign change ("f(a) and
    f(b) must have different signs"): widened, the root is the boundary of the
    budgets within epsilon (to the root-finder's 1e-7 in log R; RDP's epsilon jumps from 0 to
    about 0.0035 at delta 1e-5, so every smaller target has the same R)."""
    R = acc.R_accountant(epsilon=epsilon, delta=1e-5, accountant="rdp")
    below = acc.epsilon_at_R(R=R * (1 - 1e-6), delta=1e-5, accountant="rdp")
    above = acc.epsilon_at_R(R=R * (1 + 1e-6), delta=1e-5, accountant="rdp")
    assert below <= epsilon < above


def test_pld_keeps_its_discretisation_up_to_R0_and_bounds_it_above():
    """Up to PLD_R0 the full-batch pld epsilon is dp-accounting's at its default discretisation,
    to the bit; above, the interval grows with R (bounded size; at R = 1000 the default took 26 s
    and 2.6 GB) and the value stays a valid upper bound, within 1e-3 of exact GDP."""
    for R in (0.5, 4.0, acc.PLD_R0):
        assert acc.epsilon_at_R(R=R, delta=1e-5, accountant="pld") == acc.accountant_epsilon(
            sigma=[1 / math.sqrt(R)], delta=1e-5, accountant="pld")
    for R in (1000.0, 1e4, acc.PLD_MAX_R):
        e = acc.epsilon_at_R(R=R, delta=1e-5, accountant="pld")
        exact = acc.gdp_epsilon(mu=math.sqrt(R), delta=1e-5)
        assert exact <= e <= exact * (1 + 1e-3)


def test_pld_past_its_range_is_refused_or_left_out():
    """R above PLD_MAX_R: epsilon_at_R and R_accountant refuse in one line naming the range; a
    budget's epsilon_by_accountant leaves pld out instead of failing after training."""
    from dpcompanion.theory.budget import Budget

    with pytest.raises(ValueError, match=r"R must be at most 1e\+06 for the pld accountant"):
        acc.epsilon_at_R(R=2e6, delta=1e-5, accountant="pld")
    with pytest.raises(ValueError, match=r"epsilon must be small enough that R <= 1e\+06 for the pld accountant"):
        acc.R_accountant(epsilon=1e6, delta=1e-5, accountant="pld")
    b = Budget.from_R(R=1e7, delta=1e-5)
    assert sorted(b.epsilon_by_accountant([1 / math.sqrt(1e7)])) == ["exact", "rdp", "zcdp"]


@pytest.mark.parametrize("delta", [5e-324, 1e-310, 2.2e-308])
def test_subnormal_delta_is_refused(delta):
    """A subnormal delta (1/delta overflows: rho 0 was printed for delta 5e-324) is
    refused by every conversion, naming the smallest delta allowed."""
    for fn in (acc.dp_to_zcdp, acc.R_exact, acc.R_ma):
        with pytest.raises(ValueError, match=r"delta must be in \(0, 1\) and at least 2.2e-308"):
            fn(epsilon=1.0, delta=delta)
    L = -mpmath.log(mpmath.mpf(2.3e-308))  # the smallest normal deltas keep the right answer
    assert acc.dp_to_zcdp(epsilon=1.0, delta=2.3e-308) == pytest.approx(
        float((mpmath.sqrt(L + 1) - mpmath.sqrt(L)) ** 2), rel=1e-12)


def test_pld_delta_floor_against_exact():
    """The pld accountant is asked only at delta >= PLD_MIN_DELTA, where it is within 0.2 % of
    the exact Gaussian-DP epsilon (an independent closed form); below, dp-accounting's tail
    truncation made it inf and the planner over-noised 10,000-fold."""
    import math

    import pytest

    from dpcompanion.theory import accounting, budget

    for R in (1e-4, 1.0):
        pld = acc.epsilon_at_R(R=R, delta=acc.PLD_MIN_DELTA, accountant="pld")
        exact = accounting.gdp_epsilon(mu=math.sqrt(R), delta=acc.PLD_MIN_DELTA)
        assert exact <= pld <= exact * 1.002
    for fn in (lambda: acc.epsilon_at_R(R=1.0, delta=1e-17, accountant="pld"),
               lambda: acc.R_accountant(epsilon=1.0, delta=1e-17, accountant="pld")):
        with pytest.raises(ValueError, match="delta must be at least 1e-14 for the pld accountant"):
            fn()
    b = budget.Budget.from_epsilon(epsilon=1.0, delta=1e-17, accountant="exact")
    eps = b.epsilon_by_accountant(budget.plan(b, "uniform", T=10))
    assert "pld" not in eps and all(math.isfinite(v) for v in eps.values())
