"""Group-sequential looks: the boundaries spend the declared error rate
look by look (checked by simulating the looks, not by the recursion that made them), a row is
decided at the first look whose repeated interval decides, and W-T1245's declared plan is the
one its full config runs."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.comparisons import sequential, wu_rules
from dpcompanion.experiments.comparisons.sequential import Plan, boundaries, obf_spending


@pytest.mark.parametrize("fractions", [(0.5, 1.0), (0.15, 0.5, 1.0), (0.2, 0.4, 0.6, 0.8, 1.0)])
def test_boundaries_spend_alpha_look_by_look_monte_carlo(fractions):
    """Simulate the looks as Brownian motion at the information fractions (400,000
    paths) and count where |Z_k| first crosses c_k: the cumulative crossing rate at look k is
    the spending function alpha(t_k), within 4.5 Monte Carlo standard errors."""
    c = boundaries(tuple(fractions), alpha=0.05)
    rng = np.random.default_rng(20261128)
    t = np.asarray(fractions)
    incr = rng.standard_normal((400_000, t.size)) * np.sqrt(np.diff(np.concatenate([[0.0], t])))
    z = np.cumsum(incr, axis=1) / np.sqrt(t)
    crossed = np.abs(z) >= np.asarray(c)
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    for k in range(t.size):
        rate = float(np.mean((first >= 0) & (first <= k)))
        want = obf_spending(float(t[k]), alpha=0.05)
        se = math.sqrt(want * (1 - want) / first.size)
        assert abs(rate - want) < 4.5 * se + 1e-5, (k, rate, want)


def test_boundaries_closed_forms():
    """One look is the fixed test (z 1.96); the first boundary is z_{alpha/2} / sqrt(t_1) by
    the spending function's definition; boundaries decrease and the last lies just above 1.96."""
    assert boundaries((1.0,), alpha=0.05)[0] == pytest.approx(stats.norm.isf(0.025), abs=1e-9)
    c = boundaries((0.15, 0.5, 1.0), alpha=0.05)
    assert c[0] == pytest.approx(stats.norm.isf(0.025) / math.sqrt(0.15), rel=1e-9)
    assert c[0] > c[1] > c[2] > 1.96 and c[2] < 2.05


@pytest.mark.parametrize("bad", [(), (0.5,), (0.6, 0.5, 1.0), (0.0, 1.0), (0.5, 1.2)])
def test_boundaries_refuse_bad_fractions(bad):
    with pytest.raises(ValueError, match="fractions must"):
        boundaries(bad)


@pytest.mark.parametrize("looks", [(), (1, 3), (5, 3), (3, 3), (2.5, 4)])
def test_plan_refuses_bad_looks(looks):
    with pytest.raises(ValueError, match="looks must"):
        Plan(looks=looks, interim_looks=True)


def _cell(gap: float, sd: float, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    dp = 60 + rng.normal(0, 1.0, n)
    return dp + gap + rng.normal(0, sd, n), dp


PRINTED = (65.36, 0.265, 65.14, 0.254)  # a printed cell (Table 1 style): the paper's gain +0.22


def test_a_clear_gain_is_decided_at_an_early_look():
    """A gain of 3 points with a 0.5-point spread is decided at look 2 (10 seeds),
    with the stage and the looks taken recorded; ours is that look's estimate."""
    adp, dp = _cell(3.0, 0.5, 20)
    j = wu_rules.judge_gap(rule=comparisons.rule_by_id("w-t1245/gap"), printed=PRINTED, adp=adp, dp=dp, where="t",
                            plan=dataclasses.replace(comparisons.plan_of("w-t1245"), interim_looks=True))
    v, ours, note = j.verdict, j.ours, j.row_note
    assert v == "agrees" and j.stage == "look 2 of 3, 10 seeds", (v, j.stage)
    assert [n for n, _ in j.looks] == [3, 10] and j.looks[0][1] == "inconclusive"
    assert "look 2 of 3" in ours and "repeated 95% CI (look 2 of 3, 10 seeds)" in note


def test_the_first_look_is_stricter_than_a_fixed_test():
    """Three seeds that a fixed-sample t interval calls 'agrees' are not decided at
    look 1 of the plan (its boundary spends 0.0001 of the 0.05)."""
    adp, dp = _cell(1.0, 0.2, 3, seed=3)
    fixed = wu_rules.judge_gap(rule=comparisons.rule_by_id("w-t1245/gap"), printed=PRINTED, adp=adp, dp=dp, where="t")
    seq = wu_rules.judge_gap(rule=comparisons.rule_by_id("w-t1245/gap"), printed=PRINTED, adp=adp, dp=dp, where="t", plan=dataclasses.replace(comparisons.plan_of("w-t1245"), interim_looks=True))
    assert fixed.verdict == "agrees" and seq.verdict == "inconclusive" and seq.stage == "look 1 of 3, 3 seeds"


def test_no_effect_reads_equivalent_with_enough_seeds_not_disagrees():
    """A gain of zero with a small spread is shown equivalent (inside the 0.27-point
    margin) by the looks' TOST, at a look that reaches it."""
    adp, dp = _cell(0.0, 0.1, 20, seed=5)
    j = wu_rules.judge_gap(rule=comparisons.rule_by_id("w-t1245/gap"), printed=PRINTED, adp=adp, dp=dp, where="t",
                            plan=dataclasses.replace(comparisons.plan_of("w-t1245"), interim_looks=True))
    assert j.verdict == "equivalent" and j.stage is not None


def test_undecided_at_the_cap_stays_inconclusive():
    adp, dp = _cell(0.3, 3.0, 20, seed=7)
    j = wu_rules.judge_gap(rule=comparisons.rule_by_id("w-t1245/gap"), printed=PRINTED, adp=adp, dp=dp, where="t",
                            plan=dataclasses.replace(comparisons.plan_of("w-t1245"), interim_looks=True))
    assert j.verdict == "inconclusive" and j.stage == "look 3 of 3, 20 seeds" and len(j.looks) == 3


def test_fewer_seeds_than_the_first_look_are_judged_as_before():
    """A quick run (2 seeds) is short of the plan's first look: the fixed 95% interval."""
    adp, dp = _cell(3.0, 0.5, 2)
    j = wu_rules.judge_gap(rule=comparisons.rule_by_id("w-t1245/gap"), printed=PRINTED, adp=adp, dp=dp, where="t",
                            plan=dataclasses.replace(comparisons.plan_of("w-t1245"), interim_looks=True))
    assert j.stage is None and "95% CI" in j.row_note and "repeated" not in j.row_note


def test_w_t1245_full_config_runs_the_declared_plan():
    from dpcompanion.experiments import w_t1245

    assert w_t1245.CONFIGS["full"]["seeds"] == comparisons.plan_of("w-t1245").looks[-1]
    assert sequential.looks_of(comparisons.plan_of("w-t1245"), 10)[-1].n == 10


def test_a_cell_seeds_are_a_prefix_of_a_longer_run():
    """The first seeds of a 20-seed cell are the 3-seed cell's (SeedSequence.generate_state),
    so look 1 judges the runs the 3-seed result judged."""
    a = np.random.SeedSequence([0, 80, 100, 60]).generate_state(3)
    b = np.random.SeedSequence([0, 80, 100, 60]).generate_state(20)
    assert a.tolist() == b[:3].tolist()


def test_h_f_curv_checks_are_judged_look_by_look():
    """H-F-CURV's checks of the trainer against the exact E[f] (undecided at
    1,000 repeats) run under a declared plan; a row decided at look k names it, and the full
    config runs the plan's cap."""
    from dpcompanion.experiments import h_f_curv
    from dpcompanion.experiments import h_f_curv

    plan = comparisons.plan_of("h-f-curv")
    assert h_f_curv.CONFIGS["full"]["repeats"] == plan.looks[-1] and plan.unit == "repeats"
    rng = np.random.default_rng(11)
    losses = 1.0 + rng.normal(0, 0.05, plan.looks[-1])
    j = h_f_curv._judge_exact(mean=float(losses.mean()), se=0.0, exact=1.0, z=0.0,
                                max_clip_fraction=0.0, losses=losses, plan=plan)
    # no look was taken between batches (every repeat ran at once): judged on all of them, at the fixed level
    assert j.verdict == "agrees" and j.stage.startswith("all runs, fixed level") and "repeats" in j.stage
    fixed = h_f_curv._judge_exact(mean=float(losses[:1000].mean()), se=float(losses[:1000].std(ddof=1) / math.sqrt(1000)),
                              exact=1.0, z=0.0, max_clip_fraction=0.0)
    assert fixed.stage is None
