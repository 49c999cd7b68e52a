"""Estimates that follow the design, comparability stated per row.

* every W row whose arms share seeds is ``design: paired`` and its interval recomputes from the
  stored arrays (results/<id>/{full,paper}/arrays.npz) as a paired t interval, the reference
  written here with numpy and scipy (``scipy.stats.ttest_rel``), not with the library's estimator;
* W-F4's cells have seeds of their own: ``independent``, Welch (``scipy.stats.ttest_ind``);
* no ``comparable: direction`` row is ``disagrees`` when its interval includes zero or lies on
  the paper's side (size alone never makes it disagree);
* the Hong rows keep their design (paired by seed where the schedules share seeds) and their
  normal interval around the paired mean the experiment hands over.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats

from dpcompanion.experiments import comparisons, store, w_t1245
from dpcompanion.experiments import scale_tables as scale
from dpcompanion.experiments.comparisons import reproduction, rule, sequential
from dpcompanion.experiments.comparisons.rule import estimate_effect, judge_effect
from dpcompanion.experiments.protocols import hong as hp, wu_paper

W_PAIRED_PAGES = ("w-t1245", "w-f1", "w-t36", "w-ladder")


def _stored(eid: str):
    """The stored result the verdict report judges (paper mode where complete, else full)."""
    res = store.fresh_paper(eid) or store.load(eid, mode="full")
    if res is None or not res.fresh:
        pytest.skip(f"no fresh stored result of {eid}")
    return res


@pytest.fixture(scope="module")
def report():
    return reproduction.report_rows()


def _paired_ci(a, b):
    """Reference: scipy's paired t interval (95%) of mean(a - b)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = a - b
    if np.std(d, ddof=1) == 0:  # scipy gives NaN for a zero spread: the interval is the point
        return float(d.mean()), float(d.mean())
    ci = stats.ttest_rel(a, b).confidence_interval(0.95)
    return float(ci.low), float(ci.high)


def _check_paired(row: dict, adp, dp):
    """The row's interval is scipy's paired t interval of the arrays; for a row judged by a
    group-sequential plan (``stage`` "look k of K, n seeds"), on the first n
    seeds at that look's nominal level (the plan's boundary), the repeated interval."""
    assert row["design"] == "paired", row["item"]
    if row.get("stage"):
        n = int(re.search(r"(\d+) seeds", row["stage"]).group(1))
        look = [lk for lk in sequential.looks_of(comparisons.plan_of(row["page"]), n) if lk.n == n][-1]
        adp, dp = np.asarray(adp, float)[:n], np.asarray(dp, float)[:n]
        ci = stats.ttest_rel(adp, dp).confidence_interval(look.level)
        lo, hi = float(ci.low), float(ci.high)
    else:
        lo, hi = _paired_ci(adp, dp)
    o = row["ours"]
    assert o["estimate"] == pytest.approx(float(np.mean(np.subtract(adp, dp))), rel=1e-12, abs=1e-12), row["item"]
    assert o["ci_low"] == pytest.approx(lo, rel=1e-9, abs=1e-9), row["item"]
    assert o["ci_high"] == pytest.approx(hi, rel=1e-9, abs=1e-9), row["item"]
    assert o["n"] == len(adp)


def test_estimator_against_scipy():
    """The one estimator is scipy's paired t interval for paired arms and Welch's otherwise."""
    rng = np.random.default_rng(33)
    a, b = rng.normal(1.0, 1.0, 7), rng.normal(0.0, 1.0, 7)
    e = estimate_effect(a, b, design="paired")
    ci = stats.ttest_rel(a, b).confidence_interval(0.95)
    assert (e.ci_low, e.ci_high, e.df) == (pytest.approx(ci.low), pytest.approx(ci.high), 6)
    w = estimate_effect(a, b[:5], design="independent")
    r = stats.ttest_ind(a, b[:5], equal_var=False)
    ci = r.confidence_interval(0.95)
    assert (w.ci_low, w.ci_high, w.df) == (pytest.approx(ci.low), pytest.approx(ci.high), pytest.approx(r.df))
    with pytest.raises(ValueError, match="paired arms"):
        estimate_effect(a, b[:5], design="paired")
    with pytest.raises(ValueError, match="design must be one of"):
        estimate_effect(a, b, design="matched")


def test_hong_pairing_is_the_same_estimator():
    """The Hong pages' paired mean and se (protocols.hong.paired_difference, in the
    experiments' code hash) are the estimator's paired estimate and se."""
    rng = np.random.default_rng(7)
    a = rng.normal(size=50)
    b = a + rng.normal(0.1, 0.2, 50)
    m, se = hp.paired_difference(a, b)
    e = estimate_effect(a, b, design="paired")
    assert (e.estimate, e.se) == (pytest.approx(m, rel=1e-12), pytest.approx(se, rel=1e-12))


def test_design_table_is_verified_in_code():
    """One table states the design of every two-arm comparison, with its reason."""
    for rid in ("w-f1/gap", "w-t1245/gap", "w-t1245/table", "w-ladder/table", "w-t36/gap"):
        assert comparisons.design_of(rid) == "paired" and "seed" in comparisons.rule_by_id(rid).design[1]
    assert comparisons.design_of("w-f4/decay") == "independent"


def test_w_t1245_cells_recompute_as_paired(report):
    """Every W-T1245 cell row is paired, its interval scipy's paired t interval of the stored arrays."""
    cells = _stored("w-t1245").payload["cells"]
    by_item = {r["item"]: r for r in report if r["page"] == "w-t1245" and r["rule"] == "w-t1245/gap"}
    n = 0
    for metric in ("best", "last"):
        for c in cells:
            table = wu_paper.TABLE_OF[(c["family"], metric)]
            item = (f"Table {table}: gain ADP - DP, {c['family']}, C_G {c['clip']:g}, eps_bar {c['epsilon_bar']:g}, "
                    f"{c['epochs']} epochs")
            row = by_item[item]
            if row["verdict"] == "not judged" and row["ours"]["ci_low"] is None:
                continue  # no printed cell: nothing judged
            _check_paired(row, c[f"{metric}_adp"], c[f"{metric}_dp"])
            n += 1
    assert n >= 40
    assert all(r["design"] == "paired" for r in report if r["page"] == "w-t1245")


def test_w_f1_and_w_t36_recompute_as_paired(report):
    """W-F1's gain and every W-T36 cell are paired by seed, recomputed from the stored arrays."""
    R = _stored("w-f1").payload["train"]
    best = lambda a: np.asarray(a)[:, 1:].max(axis=1)  # noqa: E731
    row = next(r for r in report if r["rule"] == "w-f1/gap")
    if row.get("judged_on"):  # its printed cell is judged on W-T1245's runs: its own runs are own_ours
        row = {**row, "ours": row["own_ours"]}
    _check_paired(row, best(R["acc_adp"]), best(R["acc_dp"]))
    rows = {r["item"]: r for r in report if r["rule"] == "w-t36/gap"}
    n = 0
    for c in _stored("w-t36").payload["cells"]:
        for setting in ("paper", "beyond"):
            if setting == "beyond" and not c.get("beyond_differs"):
                continue
            tail = "" if setting == "paper" else " (beyond the paper's grid)"
            row = rows[f"Table 3: gain ADP - DP, C_G {c['clip']:g}, eps_bar {c['epsilon_bar']:g}{tail}"]
            rep = c["report"][setting]
            _check_paired(row, rep["adp"]["best"], rep["dp"]["best"])
            n += 1
    assert n >= 8


def test_w_ladder_cells_are_paired(report):
    """W-LADDER's rows are paired; each cell's interval is scipy's paired t interval."""
    assert all(r["design"] == "paired" for r in report if r["page"] == "w-ladder")
    for c in _stored("w-ladder").payload["cells"]:
        _, printed, row = w_t1245.gap_verdict(c, metric="best")
        if printed is None:
            continue
        lo, hi = _paired_ci(c["best_adp"], c["best_dp"])
        assert row["design"] == "paired"
        assert (row["stats"]["ci_low"], row["stats"]["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))


def test_w_f4_cells_are_independent(report):
    """W-F4's c = 0 and c > 0 cells draw seeds of their own: independent (Welch)."""
    rows = [r for r in report if r["rule"] == "w-f4/decay"]
    assert rows and all(r["design"] == "independent" for r in rows)


def test_no_direction_row_disagrees_by_size(report):
    """A row compared by direction disagrees only when its interval excludes zero on
    the other side of the paper's; never when it includes zero or lies on the paper's side."""
    seen = 0
    for r in report:
        if r["comparable"] != "direction":
            continue
        o = r["ours"]
        if o.get("ci_low") is None or o.get("ci_high") is None:
            continue
        seen += 1
        lo, hi = o["ci_low"], o["ci_high"]
        # the paper's size is never judged here: not testable, so a failure is the other side of
        # zero or an effect shown absent (TOST), never a size ruled out
        assert r["size"] not in ("smaller", "larger", "compatible"), r["item"]
        if r["outcome"] == "failure" and r["absence"] != "shown":
            assert r["sign"] == "other side" and (lo > 0 or hi < 0), r["item"]
            if r["paper_value"]:
                assert (hi < 0) if r["paper_value"] > 0 else (lo > 0), r["item"]
        if r["paper_value"] and (lo <= 0 <= hi or (lo > 0 if r["paper_value"] > 0 else hi < 0)):
            assert r["sign"] != "other side", r["item"]
    assert seen >= 50
    # every W transfer row is compared by direction; the scale block shows its steps and trained layers
    for r in report:
        if r["page"] in W_PAIRED_PAGES and comparisons.rule_by_id(r["rule"]).comparable is not None:
            assert r["comparable"] == "direction", r["item"]
            assert {"steps", "trained layers", "epochs"} <= set(r["scale"]), r["page"]


def test_direction_judgement_never_uses_size():
    """At a setup not the paper's, ours far below the paper's gap but above zero agrees;
    including zero is inconclusive (not disagrees: the paper's size is not what is compared)."""
    assert judge_effect(1.0, 0.2, paper=20.0, paper_se=0.5, df=2, comparable="direction").verdict == "agrees"
    assert judge_effect(0.5, 0.5, paper=20.0, paper_se=0.5, df=2, comparable="direction").verdict == "inconclusive"
    assert judge_effect(0.5, 0.5, paper=20.0, paper_se=0.5, df=2, comparable="size").verdict == "disagrees"
    assert judge_effect(-2.0, 0.3, paper=20.0, paper_se=0.5, df=2, comparable="direction").verdict == "disagrees"


def test_w_scale_block_shows_steps_and_layers():
    """W's scale block has steps (within 1%) and trained layers beside epochs."""
    s = scale.scale_of("w-t1245", {"dataset": "fashion", "pretrain_n": 20000, "n_train": 2000,
                                   "epochs": [60, 120, 200], "batch_size": 256})
    assert s["steps"]["ours"] == [469, 938, 1563] and s["steps"]["match"] is False
    assert s["trained layers"]["match"] is False
    assert scale.comparability("w-t1245", s)[0] == "direction"
    top = scale.scale_of("w-ladder", {"rungs": [2000, 50000], "epochs": [60, 120, 200], "batch_size": 256})
    assert top["steps"]["match"] is True  # the top rung has the paper's steps, not its data set or layers


HONG_DESIGNS = {"h-f-eff/loss": "paired", "h-f-eff/acc": "paired", "h-f-eff-exact/loss": "paired",
                "h-f-eff-exact/acc": "paired", "h-f-scale/dyn": "paired", "h-f-mom/expinfl-vs-momexpinfl": "paired",
                "h-f-curv/sharp-vs-flat": "independent"}


def test_hong_rows_keep_their_design(report):
    """The Hong rows are paired where the schedules share seeds (as before) and keep
    their normal interval around the paired mean the experiment hands over."""
    hong = [r for r in report if r["page"].startswith("h-") and r["rule"] in HONG_DESIGNS]
    assert hong
    z = stats.norm.ppf(0.975)
    for r in hong:
        assert r["design"] == HONG_DESIGNS[r["rule"]], r["item"]
        o = r["ours"]
        # H-F-EFF's trend rows: Student t on sizes - 2 df where the scatter scaled the SE
        c = stats.t.ppf(0.975, o["n"] - 2) if r["rule"].startswith("h-f-eff") and "sqrt(chi2/df)" in r["note"] else z
        if r.get("stage") and "no interim look" not in r["stage"]:  # a look taken between batches: its level
            n = int(re.search(r"(\d+) (seeds|repeats)", r["stage"]).group(1))
            look = [lk for lk in sequential.looks_of(comparisons.plan_of(r["page"]), n) if lk.n == n][-1]
            c = stats.norm.ppf(0.5 + look.level / 2)
        if o.get("se") and o.get("ci_low") is not None:
            assert o["ci_low"] == pytest.approx(o["estimate"] - c * o["se"], rel=1e-9, abs=1e-12)
            assert o["ci_high"] == pytest.approx(o["estimate"] + c * o["se"], rel=1e-9, abs=1e-12)
    assert math.isfinite(z)
