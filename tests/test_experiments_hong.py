"""Each experiment of Hong et al. on a tiny config: units -> run_unit -> combine, the
payload's shape, the ledger's budget, and the verdict rows (the real data sets are
replaced by small synthetic/digits sets where the config allows, to stay fast)."""

import numpy as np
import pytest

from dpcompanion.experiments import base, h_f_curv, h_f_eff, h_f_mom, h_f_scale
from dpcompanion.experiments.comparisons.rule import VERDICTS
from dpcompanion.experiments.protocols import hong as hp  # the verdict words, from their one home


def _run(exp, config):
    cfg = {**config, "mode": "quick", "seed": 3}
    units = exp.units(cfg)
    return exp.combine(cfg, [exp.run_unit(u, "cpu") for u in units]), units


def test_experiments_are_registered():
    ids = set(base.all_experiments())
    assert {"h-f-eff", "h-f-scale", "h-f-curv", "h-f-mom"} <= ids


def test_eff_tiny():
    cfg = {"dataset": "synthetic", "N": [20, 40], "hidden": 4, "T_grid": [3, 5], "gammas": [0.8],
           "tune_repeats": 2, "repeats": 3}
    p, units = _run(h_f_eff.EXPERIMENT, cfg)
    t = p["table"]
    assert list(t["N"]) == [20, 40]
    assert np.all(t["T_uni"] >= 3) and set(t["T_exp"]) <= {3, 5}  # the stated range [3, 5] holds the main table
    assert set(p["table_beyond"]["T_exp"]) <= set(range(3, h_f_eff.T_LIMITS[1] + 1)) and len(p["beyond_differs"]) == 2
    for e in p["tuning"]:  # tuning protocol: disjoint seeds, and no choice at an unflagged edge
        assert not set(e["tuning_seeds"]) & set(e["report_seeds"])
        assert e["interior"] or e["stated_bound"] or e["stopped"] in ("rounds", "limit"), e
        assert e["setting"] == "beyond" or e["param"] != "T" or 3 <= e["chosen"] <= 5
    assert {(e["method"], e["param"]) for e in p["tuning"]} == {("uni", "T"), ("exp", "T"), ("exp", "gamma")}
    assert np.all(t["R_spent_max"] <= hp.R * (1 + 1e-9)) and np.all(t["R_spent_max"] > 0.99 * hp.R)
    assert np.all(np.isfinite(t["loss_gain"])) and np.all(t["loss_gain_se"] >= 0)
    assert not p["sizes_match"]
    assert {r["verdict"] for r in h_f_eff.verdict_rows(p)} == {"not judged"}
    # units are self-contained and seeded: same unit, same result
    again = h_f_eff.run_unit(units[0], "cpu")
    assert np.array_equal(again["uni"]["final_loss"], p["units"][0]["uni"]["final_loss"])
    assert "hidden units" in h_f_eff.describe(p)


def test_eff_split_units_join_to_the_joint_result():
    """From ``split_from_N`` on, each schedule is its own unit (a unit must fit in a sitting):
    joined, they give the joint unit's choices exactly and its numbers to float rounding (the
    two schedules' evaluation runs are batched apart); below it nothing changes, not a unit key."""
    cfg = {"dataset": "synthetic", "N": [20, 40], "hidden": 4, "T_grid": [3, 5], "gammas": [0.8],
           "tune_repeats": 2, "repeats": 3}
    joint, ju = _run(h_f_eff.EXPERIMENT, cfg)
    split, su = _run(h_f_eff.EXPERIMENT, {**cfg, "split_from_N": 40})
    assert len(ju) == 2 and len(su) == 3 and su[0] == ju[0]
    assert [u.get("kinds") for u in su] == [None, ["uni"], ["exp"]]
    a, b = joint["table"], split["table"]
    assert set(a) == set(b)
    for k in a:
        assert np.allclose(a[k], b[k], rtol=1e-5, atol=1e-7), k
    assert sorted(map(str, joint["tuning"])) == sorted(map(str, split["tuning"]))
    assert split["run_steps"] == joint["run_steps"] and split["beyond_differs"] == joint["beyond_differs"]
    parts = [h_f_eff.run_unit(u, "cpu") for u in su[:2]]  # the exp unit of N = 40 missing
    with pytest.raises(ValueError, match="no result for schedule exp at N = 40"):
        h_f_eff.combine({**cfg, "mode": "quick", "seed": 3}, parts)


def test_scale_tiny():
    cfg = {"rows": [["synthetic", "logistic"], ["synthetic", "squared"], ["synthetic", "dnn"]], "N": 30,
           "scales": [2.0, 10.0], "T_grid": [2, 4], "repeats": 3, "infl_steps": 2, "infl_levels": 2,
           "infl_repeats": 2, "hidden": 4, "dnn_repeats": 2, "dnn_scales": [5.0], "dnn_T_grid": [3],
           "T_range": [1, 4], "max_rounds": 1}
    p, _ = _run(h_f_scale.EXPERIMENT, cfg)
    assert set(p["rows"]) == {"synthetic/logistic", "synthetic/squared", "synthetic/dnn"}
    sq = p["rows"]["synthetic/squared"]
    assert sq["q_method"].startswith("analytic") and p["rows"]["synthetic/logistic"]["q_method"] == "retraining"
    assert len(sq["rel"]["dyn"]) == 2 and all(np.isfinite(sq["rel_se"]["exp"]))
    assert all(v >= 0 for v in sq["tvar"])
    rows = h_f_scale.verdict_rows(p)
    beyond = sum(any(r["beyond_differs"]) for r in p["rows"].values())
    assert len(rows) == 3 + beyond and {r["verdict"] for r in rows} == {"not judged"}
    for e in p["tuning"]:  # tuning protocol: best T on seeds disjoint from the reported ones, never at a silent edge
        assert not set(e["tuning_seeds"]) & set(e["report_seeds"])
        assert e["interior"] or e["stated_bound"] or e["stopped"] in ("rounds", "limit"), e
        assert e["param"] == "T" and (e["setting"] == "beyond" or 1 <= e["chosen"] <= 4)


def test_scale_helpers():
    s = 2.0 * np.exp(-0.3 * np.arange(1, 8))
    assert h_f_scale.fit_exponential_rate(s) == pytest.approx(0.3)
    q = h_f_scale.influence_on_grid([1, 5], [-1.0, 2.0], T=5)  # a negative estimate is floored
    assert q[-1] == pytest.approx(2.0) and q[0] == pytest.approx(2e-3) and np.all(np.diff(q) > 0)
    with pytest.raises(ValueError, match="no positive influence"):
        h_f_scale.influence_on_grid([1, 2], [-1.0, 0.0], T=2)


def test_curv_tiny_and_exact_check():
    p, _ = _run(h_f_curv.EXPERIMENT, {"curvatures": [1.0, 15.0], "N": 100, "T": 40, "repeats": 200})
    s = {r["curvature"]: r for r in p["summary"]}
    # the trainer's mean agrees with the closed form of PGD on a quadratic (no clipping at this size)
    for r in s.values():
        assert abs(r["z_exact"]) < 4, r
    rows = h_f_curv.verdict_rows(p)
    assert rows[0]["sign"] == "paper's side" and rows[0]["outcome"] in ("success", "partial")  # the sharp loss ends higher: 4x in expectation at this size
    assert s[15.0]["exact"] > 2 * s[1.0]["exact"]


def test_curv_toy_data_rejects_bad_input():
    with pytest.raises(ValueError, match="curvature must be"):
        h_f_curv.toy_data(curvature=-1.0, N=4)


@pytest.mark.slow
def test_mom_tiny():
    cfg = {"dataset": "digits", "N": 60, "hidden": 4, "scales": [25.0], "Ts": [100], "gammas": [0.9, 0.95],
           "crossings": [0.5], "tune_repeats": 2, "repeats": 2, "n_test": 50, "max_rounds": 1}
    p, _ = _run(h_f_mom.EXPERIMENT, cfg)
    (cell,) = p["cells"]
    # both methods search the same gamma grid, on seeds disjoint from the reported ones
    g = {e["method"]: e["grid"] for e in p["tuning"] if e["param"] == "gamma"}
    assert g["expinfl"][:2] == g["momexpinfl"][:2] == [0.9, 0.95]
    assert all(not set(e["tuning_seeds"]) & set(e["report_seeds"]) for e in p["tuning"])
    assert cell["n"] == 2 and cell["mde_80"] > 0
    assert cell["scale"] == 25.0 and cell["T"] == 100 and np.isfinite(cell["diff"])
    assert p["n_test"] == 50 and not p["sizes_match"]
    (row,) = h_f_mom.verdict_rows(p)
    assert row["verdict"] in VERDICTS


def test_protocol_stats():
    r, se = hp.relative_loss([1.0, 1.0, 1.0], [2.0, 2.0, 2.0])
    assert r == -0.5 and se == 0.0
    with pytest.raises(ValueError, match="at least 2"):
        hp.mean_se([1.0])


def test_breakdown_tiny():
    from dpcompanion.experiments import h_x_eer_breakdown as brk

    p, _ = _run(brk.EXPERIMENT, {"kappas": [1.3, 100.0], "Ts": [5, 60], "D": 4, "N": 20, "runs": 20})
    assert p["ratio_clipped"].shape == (2, 2)
    # the unclipped control reproduces the closed form; the clipped run at kappa 1.3, T 60 breaks
    assert np.nanmax(np.abs(p["z_unclipped"])) < 4
    assert p["ratio_clipped"][1, 0] > 100 and p["ratio_clipped"][0, 1] < 3
    assert p["warns"][1, 0] == 1 and p["warns"][0, 1] == 0
    rows = brk.verdict_rows(p)
    assert rows[0]["verdict"] == "check passes"  # our trainer against the closed form: our own code
    assert "kappa = 1.3" in brk.warning_paragraph(p)


def test_infl_extra_tiny():
    from dpcompanion.experiments import h_f_infl_extra as infl

    cfg = {"rows": [["synthetic", "logistic"], ["synthetic", "dnn"]], "N": 30, "T": 6, "step_every": 2, "levels": 2,
           "repeats": 2, "hidden": 4, "dnn_step_every": 3, "dnn_levels": 2, "dnn_repeats": 2}
    p, _ = _run(infl.EXPERIMENT, cfg)
    lg = p["rows"]["synthetic/logistic"]
    assert list(lg["steps"]) == [1, 3, 5, 6] and lg["coef"].shape == (4, 2)
    assert np.isfinite(lg["late_minus_early"]) and not lg["sizes_match"]
    assert {r["verdict"] for r in infl.verdict_rows(p)} == {"not judged"}


def test_infl_extra_dnn_row_split_per_step_joins_to_the_unsplit_row():
    """Paper mode splits the DNN row into one unit per swept step (resumable over sittings): the
    joined row has the unsplit row's steps and, within float rounding of a differently batched
    trainer call, its estimates; the other row stays one unit."""
    from dpcompanion.experiments import h_f_infl_extra as infl

    cfg = {"rows": [["synthetic", "logistic"], ["synthetic", "dnn"]], "N": 30, "T": 6, "step_every": 3, "levels": 2,
           "repeats": 2, "hidden": 4, "dnn_step_every": 2, "dnn_levels": 3, "dnn_repeats": 3}
    whole, whole_units = _run(infl.EXPERIMENT, cfg)
    split, split_units = _run(infl.EXPERIMENT, {**cfg, "dnn_steps_per_unit": 1, "max_runs_per_call": 4})
    assert len(whole_units) == 2 and len(split_units) == 1 + 4  # steps 1, 3, 5, 6
    assert [u["steps"] for u in split_units[1:]] == [[1], [3], [5], [6]]
    assert {infl.unit_size(u) for u in split_units[1:]} == {"synthetic/dnn"}
    a, b = whole["rows"]["synthetic/dnn"], split["rows"]["synthetic/dnn"]
    assert list(b["steps"]) == list(a["steps"]) == [1, 3, 5, 6] and b["coef"].shape == a["coef"].shape == (4, 3)
    np.testing.assert_allclose(b["coef"], a["coef"], rtol=1e-4, atol=1e-6)
    assert b["runs"] == a["runs"] == 4 * 3 * 3 and b["run_steps"] == a["run_steps"]
    assert b["clip_fraction"] == pytest.approx(a["clip_fraction"], rel=1e-4)
    assert b["late_minus_early"] == pytest.approx(a["late_minus_early"], rel=1e-3, abs=1e-6)


def test_infl_extra_paper_mode_is_the_papers_protocol():
    """``--mode paper``: every step of T = 100, 10 levels, 100 repeats, N = 1000, both rows; the
    DNN row in 100 units of one step each."""
    from dpcompanion.experiments import h_f_infl_extra as infl
    from dpcompanion.experiments import scale_tables as scale

    cfg = base.config_for(infl.EXPERIMENT, "paper")
    units = infl.units(cfg)
    dnn = [u for u in units if u["model"] == "dnn"]
    assert len(units) == 101 and len(dnn) == 100 and sorted(s for u in dnn for s in u["steps"]) == list(range(1, 101))
    assert all(u["levels"] == 10 and u["repeats"] == 100 and u["N"] == 1000 and u["T"] == 100 for u in units)
    s = scale.scale_of("h-f-infl-extra", cfg)
    assert all(d["match"] is not False for d in s.values()), s


def test_summary_collects_rule_rows(monkeypatch, tmp_path):
    from dpcompanion.experiments.comparisons import reproduction

    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path))  # not the repository's results/ (a tiny config)
    monkeypatch.setitem(h_f_curv.CONFIGS, "quick", {"curvatures": [1.0, 15.0], "N": 50, "T": 10, "repeats": 20})
    rows = reproduction.verdict_summary(ids=("h-f-curv",))
    assert rows and all(r["item"].startswith("{doc}`h-f-curv <h-f-curv>` (quick)") for r in rows)
    assert {r["verdict"] for r in rows} <= set(VERDICTS)
    # figures with rules but no experiment: linked to the page that shows them, marked computed
    rows = reproduction.verdict_summary(ids=("w-f2",))
    assert rows and all(r["item"].startswith("{doc}`w-f2 <w-theory>` (computed)") for r in rows)
    assert set(reproduction.CLAIM_TABLES) == {"h-f-theory", "accounting", "h-sec-4-2", "w-f2", "w-eps"}
