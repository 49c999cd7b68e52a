"""Practical margins declared once, TOST, and table verdicts by a stated pooling.

* the margins declared with the rules (:attr:`Rule.margin`) cover every effect row of the verdict report, each
  with a reason and a basis; the W accuracy margin recomputes from the printed tables;
* TOST (:func:`rule.tost`) against scipy's one-sided t tests on the per-seed arrays (paired:
  ``ttest_1samp`` of the differences; independent: Welch's ``ttest_ind`` with one arm shifted);
* ``equivalent`` exactly when the 90% interval lies inside the margin; an effect inside its
  margin never reads ``disagrees`` (property over many cases, and over the report's rows);
* the pooled gap of every W table row recomputes from the stored arrays (results/<id>/.../arrays.npz)
  with a random-effects reference written here (DerSimonian-Laird by its moment equation solved
  with scipy's root finder, the modified Hartung-Knapp interval), not with the library's pooling.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dpcompanion.experiments import comparisons, store
from dpcompanion.experiments.comparisons import reproduction, rule, sequential

#: every declared margin, by rule id (each declared with its rule)
MARGINS = {rid: r.margin for rid, r in comparisons.all_rules().items() if r.margin is not None}
from dpcompanion.experiments.comparisons.rule import estimate_effect, judge_effect, tost, with_margin
from dpcompanion.experiments.protocols import wu_paper


@pytest.fixture(scope="module")
def report():
    return reproduction.report_rows()


def _is_effect_row(r: dict) -> bool:
    """A row judged on an effect measured over runs: a standard error > 0 and an interval."""
    o = r["ours"]
    return bool(o.get("se")) and o.get("ci_low") is not None and o["ci_low"] != o["ci_high"]


def test_margin_table_covers_every_effect_row(report):
    """Every effect row's rule has a declared margin (or a stated reason why
    none), with its basis; the row carries that reason as ``margin_reason``."""
    effect = [r for r in report if _is_effect_row(r)]
    assert effect
    missing = sorted({r["rule"] for r in effect if r["rule"] not in MARGINS})
    assert not missing, f"effect rules without a declared margin: {missing}"
    bases = {"printed precision", "reported spread", "smallest effect of interest", "none"}
    for rid, m in MARGINS.items():
        assert m.basis in bases and len(m.reason) > 40, rid
        assert (m.value is None) == (m.basis == "none" or m.applied_by == "judge"), rid
        assert m.value is None or (math.isfinite(m.value) and m.value > 0), rid
    for r in effect:
        if "margin_reason" in r:
            assert r["margin_reason"] == MARGINS[r["rule"]].reason, r["item"]


def test_w_accuracy_margin_is_the_papers_spread():
    """The W margin is the median standard error of Wu et al.'s printed gaps,
    recomputed here from the printed cells (sd / sqrt(5) per method)."""
    ses = [math.hypot(sa, sd) / math.sqrt(5) for t in (*wu_paper.TABLES.values(), wu_paper.TABLE3)
           for (_, sa, _, sd) in t.values()]
    assert rule.W_ACC_MARGIN == pytest.approx(float(np.median(ses)), rel=1e-12)
    assert 0.1 < rule.W_ACC_MARGIN < 1.0


@pytest.mark.parametrize("seed", range(6))
def test_tost_matches_scipy_paired_and_welch(seed):
    """TOST's two one-sided p-values equal scipy's one-sided t tests on the
    arrays: paired (``ttest_1samp`` of the differences against -+margin) and independent
    (Welch ``ttest_ind`` with the first arm shifted by -+margin)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 12))
    margin = float(rng.uniform(0.05, 1.0))
    a = rng.normal(rng.uniform(-0.5, 0.5), 0.4, n)
    b = a + rng.normal(rng.uniform(-0.5, 0.5), 0.3, n)
    e = estimate_effect(a, b, design="paired")
    t = tost(e.estimate, e.se, margin=margin, df=e.df)
    d = a - b
    assert t.p_lower == pytest.approx(stats.ttest_1samp(d, -margin, alternative="greater").pvalue, rel=1e-9)
    assert t.p_upper == pytest.approx(stats.ttest_1samp(d, margin, alternative="less").pvalue, rel=1e-9)
    b2 = rng.normal(rng.uniform(-0.5, 0.5), 0.5, n + 2)
    e = estimate_effect(a, b2, design="independent")
    t = tost(e.estimate, e.se, margin=margin, df=e.df)
    assert t.p_lower == pytest.approx(stats.ttest_ind(a + margin, b2, equal_var=False,
                                                      alternative="greater").pvalue, rel=1e-9)
    assert t.p_upper == pytest.approx(stats.ttest_ind(a - margin, b2, equal_var=False,
                                                      alternative="less").pvalue, rel=1e-9)
    # equivalence at 0.05 each side is the 90% interval inside the margin
    lo, hi = e.estimate + np.array([-1, 1]) * stats.t.ppf(0.95, e.df) * e.se
    assert t.equivalent == (-margin < lo and hi < margin)


def test_inside_margin_never_disagrees():
    """Over many cases (sizes and directions, paper values or not, size or
    direction rows), an effect inside its margin never reads ``disagrees``; ``equivalent``
    exactly when the 90% interval lies inside the margin."""
    rng = np.random.default_rng(33)
    seen = set()
    for _ in range(3000):
        est = float(rng.normal(0, 1))
        se = float(rng.uniform(0.001, 0.8))
        margin = float(rng.uniform(0.01, 1.5))
        df = None if rng.random() < 0.2 else int(rng.integers(1, 60))
        paper = None if rng.random() < 0.4 else float(rng.choice([-1, 1]) * rng.uniform(0.01, 3))
        kw = dict(paper=paper, direction=int(rng.choice([-1, 1])), df=df,
                  comparable=str(rng.choice(["size", "direction"])), paper_se=float(rng.uniform(0, 0.5)))
        j = judge_effect(est, se, margin=margin, **kw)
        seen.add(j.verdict)
        if abs(est) < margin:
            assert j.verdict != "disagrees", (est, se, margin, kw)
        c90 = stats.norm.ppf(0.95) if df is None else stats.t.ppf(0.95, df)
        assert (j.verdict == "equivalent") == (-margin < est - c90 * se and est + c90 * se < margin)
        # applying the margin after the fact is the same judgement
        assert with_margin(judge_effect(est, se, **kw), margin) == j
    assert {"equivalent", "agrees", "disagrees", "inconclusive"} <= seen


def test_report_rows_inside_margin_are_not_agreement(report):
    """As the criteria table reads it: where the paper claims an effect and TOST
    puts ours inside its declared margin, the row is a failure to reproduce, never a kind of
    agreement (nor ``equivalent``, a word kept for claims of no difference). H-F-MOM's -0.0009 on a loss near 0.84 is the named example."""
    for r in report:
        m = r.get("margin")
        est = r["ours"].get("estimate")
        if m and est is not None and r["rule"] in MARGINS and abs(est) < m and r["claim"] == "effect":
            assert r["verdict"] != "equivalent", r["item"]
        if r["claim"] == "effect" and r["absence"] == "shown" and r["paper_evidence"] in ("clear", "stated"):
            assert (r["verdict"], r["outcome"]) == ("not reproduced", "failure"), r["item"]
    mom = [r for r in report if r["rule"] == "h-f-mom/expinfl-vs-momexpinfl"]
    if mom and mom[0]["result"]["mode"] == "paper":
        assert abs(mom[0]["ours"]["estimate"]) < 0.002 and mom[0]["absence"] == "shown"
        assert mom[0]["outcome"] == "failure"


# ------------------------------------------------------------------------ pooling, from the stored arrays

def _dl_reference(y, s, level: float = 0.95):
    """Random effects written from the definitions: tau^2 solves Q(tau^2-free) moment equation
    E[Q] = (k - 1) + tau^2 (sum w - sum w^2 / sum w) (DerSimonian & Laird 1986), found with
    scipy's root finder (0 when Q <= k - 1); then the weighted mean and the modified
    Hartung-Knapp standard error (t on k - 1 df)."""
    y, v = np.asarray(y, float), np.asarray(s, float) ** 2
    k = len(y)
    w = 1 / v
    Q = float(((y - (w @ y) / w.sum()) ** 2) @ w)
    slope = w.sum() - (w**2).sum() / w.sum()
    tau2 = 0.0 if Q <= k - 1 else optimize.brentq(lambda t: (k - 1) + t * slope - Q, 0.0, 1e6)
    ws = 1 / (v + tau2)
    mu = float(ws @ y / ws.sum())
    se = math.sqrt(max(1.0, float(ws @ (y - mu) ** 2) / (k - 1)) / ws.sum())
    half = stats.t.ppf(0.5 + level / 2, k - 1) * se
    return mu, mu - half, mu + half


def _stored(eid: str):
    res = store.fresh_paper(eid) or store.load(eid, mode="full")
    if res is None or not res.fresh:
        pytest.skip(f"no fresh stored result of {eid}")
    return res


def _cells_ref(cells, metric, n: int | None = None):
    """Per table: (gap, se) of each comparable cell from the per-seed arrays (paired by seed), leaving
    out the cells Tables 4 and 5 print without a gap (both arms below 15%, their "N/A");
    ``n``: the first n seeds only (a look of a group-sequential plan)."""
    out: dict[int, list] = {}
    for c in cells:
        adp, dp = np.asarray(c[f"{metric}_adp"], float)[:n], np.asarray(c[f"{metric}_dp"], float)[:n]
        printed = wu_paper.row(family=c["family"], metric=metric, epsilon_bar=c["epsilon_bar"], clip=c["clip"],
                               epochs=c["epochs"])
        t = wu_paper.TABLE_OF[(c["family"], metric)]
        if printed is None or c["epochs"] not in wu_paper.PAPER_EPOCHS or len(adp) < 2:
            continue
        if t in (4, 5) and printed[0] < 15 and printed[2] < 15:  # printed "N/A" (Table 4's caption): no gap
            continue
        d = adp - dp
        out.setdefault(t, []).append((d.mean(), d.std(ddof=1) / math.sqrt(d.size)))
    return out


@pytest.mark.parametrize("eid", ["w-t1245", "w-ladder"])
def test_pooled_table_gap_recomputes_from_stored_arrays(report, eid):
    """Every W table row's pooled gap and 95% interval recompute from the
    stored per-seed arrays (paired differences per cell, random effects over the cells) with
    the reference above; the row counts its cells by verdict."""
    res = _stored(eid)
    rows = [r for r in report if r["page"] == eid and r["rule"] in ("w-t1245/table", "w-ladder/table")]
    assert rows
    checked = 0
    for r in rows:
        t = int(r["item"].split()[1].rstrip(":"))
        cells = res.payload["cells"]
        if eid == "w-ladder":
            n = int(r["item"].split("N = ")[1].split(":")[0].replace(",", ""))
            cells = [c for c in cells if c["rung"] == n]
        n, level = None, 0.95
        if r.get("stage"):  # a look of the experiment's group-sequential plan
            n = int(r["stage"].split(", ")[1].split()[0])
            level = [lk for lk in sequential.looks_of(comparisons.plan_of(eid), n) if lk.n == n][-1].level
        ref = {}
        for metric in ("best", "last"):
            ref.update(_cells_ref(cells, metric, n))
        if t not in ref:
            assert r["verdict"] == "not judged"
            continue
        y, s = zip(*ref[t])
        mu, lo, hi = (_dl_reference(y, s, level) if len(y) > 1
                      else (y[0], y[0] - stats.norm.ppf(0.975) * s[0], y[0] + stats.norm.ppf(0.975) * s[0]))
        o = r["ours"]
        assert o["estimate"] == pytest.approx(mu, rel=1e-9, abs=1e-12), r["item"]
        assert o["ci_low"] == pytest.approx(lo, rel=1e-7, abs=1e-9), r["item"]
        assert o["ci_high"] == pytest.approx(hi, rel=1e-7, abs=1e-9), r["item"]
        assert "cells by verdict" in r["note"] and r["margin"] == pytest.approx(rule.W_ACC_MARGIN)
        checked += 1
    assert checked


def test_ladder_top_rung_is_the_headline(report):
    """W-LADDER's top rung (the paper's 50,000 images and steps) is marked the
    headline evidence for Tables 2 and 5, and the W-T1245 rows of those tables point to it."""
    top = [r for r in report if r["rule"] == "w-ladder/table" and f"N = {rule.HEADLINE_N:,}" in r["item"]]
    if not top:
        pytest.skip("no W-LADDER top rung stored")
    assert all("headline evidence" in r.get("headline", "") for r in top)
    t25 = [r for r in report if r["rule"] == "w-t1245/table" and r["item"].startswith(("Table 2", "Table 5"))]
    assert t25 and all("W-LADDER's top rung" in r["note"] for r in t25)


def test_w_t36_table_pools_its_cells(report):
    """W-T36's Table 3 verdict is its cells pooled (the paper's grid and the
    grid beyond it separately); the cells' paired gaps recompute from the arrays in
    tests/test_paired_design.py, the pooling here with the reference above."""
    cells = [r for r in report if r["rule"] == "w-t36/gap"]
    tables = [r for r in report if r["rule"] == "w-t36/table"]
    if not cells:
        pytest.skip("no W-T36 result stored")
    assert tables
    for t in tables:
        beyond = "beyond" in t["item"]
        use = [r["ours"] for r in cells if ("beyond" in r["item"]) == beyond and r["ours"].get("se") is not None]
        y, s = [o["estimate"] for o in use], [o["se"] for o in use]
        mu, lo, hi = _dl_reference(y, s)
        assert t["ours"]["estimate"] == pytest.approx(mu, rel=1e-9)
        assert (t["ours"]["ci_low"], t["ours"]["ci_high"]) == pytest.approx((lo, hi), rel=1e-7)
        assert t["design"] == "paired" and t["comparable"] == "direction"
