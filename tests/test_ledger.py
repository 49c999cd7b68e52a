"""Tests of dpcompanion.theory.budget.PrivacyLedger: records steps, never overspends."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcompanion.theory import accounting, schedules
from dpcompanion.theory.budget import BudgetExceeded, PrivacyLedger


def test_budget_exact_schedule_is_affordable_to_the_last_step():
    for kind, kw in [("uniform", {}), ("gd-dynamic", {"kappa": 30.0}), ("exp", {"rate": 0.05})]:
        R = accounting.R_zcdp(epsilon=4, delta=1e-8)
        sigma = schedules.make(kind, T=137, R=R, **kw)
        led = PrivacyLedger(R=R)
        for s in sigma:
            led.charge(sigma=s)
        assert len(led.history) == 137
        assert led.spent == pytest.approx(R, rel=1e-12)
        assert not led.can_afford(sigma=1e3)


def test_refusal_records_nothing_and_names_the_numbers():
    led = PrivacyLedger(R=1.0)
    led.charge(sigma=1.25)  # cost 0.64
    before = (led.spent, len(led.history))
    with pytest.raises(BudgetExceeded) as info:
        led.charge(sigma=1.0)
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    assert "would spend 1" in msg and "0.36" in msg and "spent 0.64" in msg
    assert (led.spent, len(led.history)) == before
    assert led.can_afford(sigma=1 / math.sqrt(0.36))


def test_subsampled_cost_is_papers_rule():
    led = PrivacyLedger(R=0.5, delta=1e-5)
    rec = led.charge(sigma=2.0, sampling_rate=0.1, step=7)
    assert rec.cost == pytest.approx(0.01 / 4)
    assert rec.step == 7 and rec.sampling_rate == 0.1
    rep = led.epsilon(1e-5)
    assert rep["epsilon_exact"] is None and rep["epsilon_rdp"] > 0


def test_epsilon_report_full_batch():
    led = PrivacyLedger(R=1.0)
    for s in [2.0, 3.0, 4.0]:
        led.charge(sigma=s)
    rep = led.epsilon(1e-6)
    assert rep["R_spent"] == pytest.approx(1 / 4 + 1 / 9 + 1 / 16)
    assert rep["epsilon_zcdp"] == pytest.approx(accounting.zcdp_to_dp(rho=rep["R_spent"] / 2, delta=1e-6))
    assert rep["epsilon_exact"] == pytest.approx(accounting.exact_epsilon(sigma=[2.0, 3.0, 4.0], delta=1e-6))
    assert rep["epsilon_exact"] < rep["epsilon_zcdp"]
    assert PrivacyLedger(R=1.0).epsilon(1e-6)["epsilon_exact"] == 0.0


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan"), "x"])
def test_bad_R(bad):
    with pytest.raises(ValueError, match="R must be"):
        PrivacyLedger(R=bad)


def test_bad_sigma_and_rate():
    led = PrivacyLedger(R=1.0)
    with pytest.raises(ValueError, match="sigma"):
        led.charge(sigma=0.0)
    with pytest.raises(ValueError, match="sampling_rate"):
        led.charge(sigma=1.0, sampling_rate=1.5)
    assert led.history == []


def _rdp_epsilon_independent(history, delta):
    """The history's epsilon recomputed with dp-accounting directly: each distinct step
    (sigma, sampling rate) composed as many times as the history holds it (RDP adds up, so
    the order of the steps does not matter; one RDP curve per distinct step, not per step)."""
    import collections

    import dp_accounting as dpa

    acc = dpa.rdp.RdpAccountant()
    for (sigma, p), count in collections.Counter((r.sigma, r.sampling_rate) for r in history).items():
        ev = dpa.GaussianDpEvent(sigma)
        acc.compose(ev if p == 1.0 else dpa.PoissonSampledDpEvent(p, ev), count)
    return acc.get_epsilon(delta)


# sigmas from a small set so that the RDP curves (about 0.1 s per distinct (sigma, p)) are cached
@given(R=st.floats(1e-3, 1e3), sigmas=st.lists(st.sampled_from([0.3, 1.0, 2.0, 5.0, 50.0]), min_size=1, max_size=200),
       rates=st.lists(st.sampled_from([1.0, 0.5, 0.01]), min_size=1, max_size=200))
@pytest.mark.slow
def test_never_exceeds(R, sigmas, rates):
    delta = 1e-6
    led = PrivacyLedger(R=R, delta=delta)
    for i, s in enumerate(sigmas):
        p = rates[i % len(rates)]
        affordable = led.can_afford(sigma=s, sampling_rate=p)
        try:
            led.charge(sigma=s, sampling_rate=p)
            assert affordable
        except BudgetExceeded:
            assert not affordable
        assert led.spent <= R * (1 + 1e-12)
        assert led.remaining >= 0
    assert led.spent == pytest.approx(sum(r.cost for r in led.history), rel=1e-12)
    assert np.all(np.diff([r.spent_after for r in led.history]) > 0)
    if any(r.sampling_rate < 1 for r in led.history):  # the sound side: an independent accountant
        assert _rdp_epsilon_independent(led.history, delta) <= led.epsilon_target * (1 + 1e-9)


def test_subsampled_steps_need_delta():
    with pytest.raises(ValueError, match="needs the ledger's delta"):
        PrivacyLedger(R=1.0).charge(sigma=1.0, sampling_rate=0.1)


def test_ledger_refuses_what_the_papers_psgd_rule_would_overspend():
    """H Sec. 4.3's rule (R' = R/p^2) accepts a uniform schedule whose tight epsilon is far above
    the target at small p; the ledger stops it at the target (RDP), before the rule's budget."""
    epsilon, delta, p, sigma = 4.0, 1e-8, 0.01, 0.8
    R = accounting.R_zcdp(epsilon=epsilon, delta=delta)
    T_rule = int(R / accounting.psgd_step_cost(sigma=sigma, sampling_rate=p))  # what the rule allows
    assert accounting.accountant_epsilon(sigma=[sigma] * T_rule, delta=delta, sampling_rate=p) > 1.5 * epsilon
    led = PrivacyLedger(R=R, delta=delta)
    steps = 0
    while led.can_afford(sigma=sigma, sampling_rate=p):
        led.charge(sigma=sigma, sampling_rate=p)
        steps += 1
    assert 0 < steps < T_rule
    eps = accounting.accountant_epsilon(sigma=[sigma] * steps, delta=delta, sampling_rate=p)
    assert eps <= epsilon * (1 + 1e-9)
    # the ledger's own accountant (dp-accounting's formula at its integer orders) refuses the next step;
    # dp-accounting's full order list (fractional orders too) can only be lower
    ours = accounting.rdp_epsilon(orders=accounting.RDP_ORDERS,
                                  rdp=accounting.rdp_curve(sigma=[sigma] * (steps + 1), sampling_rate=p), delta=delta)
    assert ours > epsilon


# ---------------------------------------------------- epsilon-only ledger, end-of-run report


def test_epsilon_only_ledger_stops_at_the_last_step_within_the_target():
    """Without R the ledger enforces (epsilon, delta) alone by the RDP accountant, full-batch
    steps included: it accepts exactly the longest prefix whose RDP epsilon is within the target."""
    from dpcompanion.theory.budget import EpsilonTarget

    sig, delta = np.full(30, 3.0), 1e-5
    target = accounting.rdp_epsilon_of(sigma=sig[:17], delta=delta) * (1 + 1e-6)
    led = PrivacyLedger(R=None, delta=delta, epsilon=target)
    n = 0
    with pytest.raises(BudgetExceeded, match="above the target"):
        for s in sig:
            led.charge(sigma=float(s))
            n += 1
    assert n == 17 and led.spent_epsilon() <= target
    assert accounting.rdp_epsilon_of(sigma=sig[:18], delta=delta) > target  # the check can fail
    # an EpsilonTarget is such a budget (the trainers' engine charges its ledger)
    sched = PrivacyLedger.from_budget(EpsilonTarget(epsilon=target, delta=delta))
    assert sched.R is None and sched.rel_slack == 1e-9
    for s in sig[:3]:
        sched.charge(sigma=float(s))
    assert sched.spent_epsilon() == pytest.approx(accounting.rdp_epsilon_of(sigma=sig[:3], delta=delta))
    with pytest.raises(ValueError, match="R is required"):
        PrivacyLedger(R=None, delta=delta)


def test_spent_epsilon_is_what_the_ledger_enforces():
    from dpcompanion.theory.budget import Budget

    full = Budget.from_epsilon(epsilon=2.0, delta=1e-5, accountant="exact")
    led = PrivacyLedger.from_budget(full)
    for _ in range(4):
        led.charge(sigma=math.sqrt(4 / full.R) * 1.01)
    assert led.spent_epsilon() == accounting.epsilon_at_R(R=led.spent, delta=1e-5, accountant="exact") <= 2.0
    sub = Budget.from_epsilon(epsilon=2.0, delta=1e-5, sampling_rate=0.1)
    led = PrivacyLedger.from_budget(sub)
    for _ in range(5):
        led.charge(sigma=1.5, sampling_rate=0.1)
    assert led.spent_epsilon() == pytest.approx(
        accounting.rdp_epsilon_of(sigma=[1.5] * 5, delta=1e-5, sampling_rate=0.1), rel=1e-12)
    assert PrivacyLedger(R=1.0).spent_epsilon() is None  # no delta, no epsilon
    # the mixed-rate report composes each step at its own rate (dp-accounting)
    e = led.epsilon(1e-5)["epsilon_rdp"]
    assert e == pytest.approx(accounting.accountant_epsilon(sigma=[1.5] * 5, delta=1e-5, sampling_rate=0.1))
    assert e <= led.spent_epsilon()
