"""H-F-EFF-EXACT (beyond the paper): H-F-EFF at the budget exact Gaussian-DP accounting allows
for the paper's (4, 1e-8)-DP, and the split of the gain into accounting and scheduling."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from dpcompanion.experiments import base, h_f_eff, h_f_eff_exact
from dpcompanion.experiments.protocols import hong as hp

TINY = {"dataset": "synthetic", "N": [20, 40], "hidden": 4, "T_grid": [3, 5], "gammas": [0.8], "tune_repeats": 2,
        "repeats": 4}


def _gdp_delta(eps: float, mu: float) -> float:
    """Dong, Roth & Su 2019, Cor. 2.13, written out here: the delta of mu-GDP at eps."""
    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def test_the_exact_budget_spends_the_papers_guarantee_exactly():
    R = h_f_eff_exact.R_EXACT
    assert _gdp_delta(4.0, math.sqrt(R)) == pytest.approx(1e-8, rel=1e-6)
    assert _gdp_delta(4.0, math.sqrt(R * 1.001)) > 1e-8  # a larger R would break (4, 1e-8)
    assert 0.51 < R < 0.52 and R > hp.R  # more budget than the zCDP reading (0.3927) of the same guarantee


def _run(exp_mod, cfg, seed=3):
    c = {**cfg, "mode": "quick", "seed": seed}
    return exp_mod.combine(c, [exp_mod.run_unit(u, "cpu") for u in exp_mod.units(c)])


def test_units_carry_the_budget_and_the_ledger_holds_it():
    cfg = {**TINY, "mode": "quick", "seed": 3}
    assert all("R" not in u for u in h_f_eff.units(cfg))  # H-F-EFF's units unchanged
    exact_units = h_f_eff_exact.units({**cfg, "R": h_f_eff_exact.R_EXACT})
    assert [u["R"] for u in exact_units] == [h_f_eff_exact.R_EXACT] * 2
    assert [{k: v for k, v in u.items() if k != "R"} for u in exact_units] == h_f_eff.units(cfg)
    p = _run(h_f_eff_exact, {**TINY, "R": h_f_eff_exact.R_EXACT})
    R = h_f_eff_exact.R_EXACT
    assert np.all(p["table"]["R_spent_max"] <= R * (1 + 1e-9)) and np.all(p["table"]["R_spent_max"] > 0.99 * R)
    assert p["R"] == R and p["budget"]["accountant"] == "exact" and p["budget"]["R_paper"] == hp.R
    assert {r["verdict"] for r in h_f_eff_exact.verdict_rows(p)} == {"not judged"}
    assert all(r["rule"].startswith("h-f-eff-exact/") for r in h_f_eff_exact.verdict_rows(p))
    assert "accounted exactly" in h_f_eff_exact.describe(p)


def test_decomposition_pairs_repeats_by_seed():
    exact = _run(h_f_eff_exact, {**TINY, "R": h_f_eff_exact.R_EXACT})
    paper = _run(h_f_eff, TINY)
    d = h_f_eff_exact.decomposition(exact, paper)
    assert d["N"].tolist() == [20, 40]
    # repeat by repeat, (uni_p - uni_e) - (uni_p - exp_p) = exp_p - uni_e
    assert np.allclose(d["accounting_over_scheduling"], d["accounting"] - d["scheduling_paper"], atol=1e-12)
    # H-F-EFF's own gain is the scheduling gain at the paper's R
    assert np.allclose(d["scheduling_paper"], paper["table"]["loss_gain"], atol=1e-12)
    assert np.allclose(d["scheduling_exact"], exact["table"]["loss_gain"], atol=1e-12)
    cols, rows = h_f_eff_exact.decomposition_rows(exact, paper)
    assert len(cols) == 6 and [r[0] for r in rows] == [20, 40]
    sentence = h_f_eff_exact.decomposition_sentence(exact, paper)
    assert sentence.startswith("At N = 20,") and "At N = 40," in sentence
    other = _run(h_f_eff, TINY, seed=4)
    with pytest.raises(ValueError, match="do not share seeds"):
        h_f_eff_exact.decomposition(exact, other)


def test_registered_with_its_budget_in_every_mode():
    exp = base.get("h-f-eff-exact")
    for mode in ("quick", "full", "paper"):
        c = base.config_for(exp, mode, seed=0)
        assert c["R"] == h_f_eff_exact.R_EXACT
        assert {k: v for k, v in c.items() if k not in ("R", "mode")} == \
            {k: v for k, v in base.config_for(base.get("h-f-eff"), mode, seed=0).items() if k != "mode"}
