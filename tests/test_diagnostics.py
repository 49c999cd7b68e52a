"""dpcompanion.theory.schedules: warnings for schedules whose noise spans too wide a range."""

import numpy as np
import pytest

from dpcompanion.theory import schedules
from dpcompanion.theory.accounting import R_PAPER


def test_uniform_and_mild_schedules_do_not_warn():
    assert schedules.schedule_warnings(schedules.uniform(T=100, R=R_PAPER)) == []
    # gamma = 0.9 over 100 steps spans 0.9^(-99/4) = 13.5 (formula rewritten here)
    s = schedules.expinfl(T=100, R=R_PAPER, gamma=0.9)
    assert schedules.schedule_span(s) == pytest.approx(0.9 ** (-99 / 4), rel=1e-9)
    assert schedules.schedule_warnings(s) == []


def test_thm44_schedule_at_small_kappa_warns():
    s = schedules.gd_dynamic(T=100, R=R_PAPER, kappa=1.3)
    w = schedules.schedule_warnings(s)
    assert len(w) == 2 and "span a factor" in w[0] and "exceeds" in w[1]
    # the span is gamma^(-(T-1)/4), gamma = 1 - 1/kappa
    assert schedules.schedule_span(s) == pytest.approx((1 - 1 / 1.3) ** (-99 / 4), rel=1e-6)


def test_thresholds_are_respected_and_inf_steps_ignored():
    s = [1.0, 30.0, np.inf]
    assert schedules.schedule_span(s) == 30.0
    assert len(schedules.schedule_warnings(s, max_span=40)) == 0
    assert len(schedules.schedule_warnings(s, max_span=29)) == 1
    assert len(schedules.schedule_warnings(s, max_span=100, max_sigma=10)) == 1
    assert schedules.schedule_warnings([np.inf, np.inf]) == []


@pytest.mark.parametrize("bad,match", [([], "non-empty"), ([1.0, -1.0], "> 0"), ([1.0, np.nan], "> 0")])
def test_bad_schedules(bad, match):
    with pytest.raises(ValueError, match=match):
        schedules.schedule_warnings(bad)


def test_bad_thresholds():
    with pytest.raises(ValueError, match="max_span must be"):
        schedules.schedule_warnings([1.0], max_span=0.5)
    with pytest.raises(ValueError, match="max_sigma must be"):
        schedules.schedule_warnings([1.0], max_sigma=float("inf"))


def test_schedule_and_train_commands_print_the_warning(capsys):
    """The CLI says so when a budget-exact schedule is useless with clipping (H-X-EER), and
    stays quiet for the paper's own setting."""
    from dpcompanion import cli

    assert cli.main(["schedule", "--kind", "gd-dynamic", "--T", "200", "--R", "0.39", "--kappa", "1.5", "--json"]) == 0
    err = capsys.readouterr().err
    assert "dpcompanion schedule: warning: noise multipliers span" in err
    assert cli.main(["schedule", "--kind", "gd-dynamic", "--T", "100", "--R", "0.39", "--kappa", "10", "--json"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert cli.main(["train", "--dataset", "synthetic", "--n", "50", "--device", "cpu", "--json", "--R", "0.39",
                     "--T", "40", "--schedule", "gd-dynamic", "--kappa", "1.2"]) == 0
    assert "dpcompanion train: warning:" in capsys.readouterr().err
