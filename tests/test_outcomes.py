"""Every row's word and outcome follow from its criteria by the one declared table
(:mod:`dpcompanion.experiments.comparisons.rule`): re-derived here for every row of the
reproduction report, with the table's principle checked on its own terms (no success where the
paper printed a size we did not find in a matching setup, or could not test; an absent effect
against a claimed one is a failure)."""

from __future__ import annotations

import itertools

import pytest

from dpcompanion.book import landing
from dpcompanion.experiments.comparisons import reproduction, rule, wu_rules
from dpcompanion.experiments.comparisons.rule import Rule, judge_effect
from dpcompanion.experiments.comparisons.sequential import Plan

FIELDS = ("outcome", "setup", "paper_evidence", "sign", "size", "absence")


def _every_combination():
    keys = list(rule.CRITERIA)
    for values in itertools.product(*(rule.CRITERIA[k] for k in keys)):
        yield dict(zip(keys, values))


def test_table_decides_every_combination_within_its_vocabularies():
    """Every combination of criteria gets exactly one word and one outcome of their lists, and
    each word always one outcome."""
    seen: dict[str, set] = {}
    for c in _every_combination():
        word, out = rule.decide(c)
        assert word in rule.VERDICTS and out in rule.OUTCOMES
        seen.setdefault(word, set()).add(out)
    assert set(seen) == set(rule.VERDICTS)
    # 'equivalent' keeps its meaning: only a claim of no difference
    assert all(c["claim"] == "no difference" for c in _every_combination()
               if rule.decide(c)[0].startswith("equivalent"))


def test_the_principle_over_every_combination():
    """No success where the paper printed a size that we did not find in a matching setup, or
    could not test; absence against a claimed effect is a failure; noise on the paper's side
    is never judged."""
    for c in _every_combination():
        word, out = rule.decide(c)
        if c["claim"] != "effect" or c["cap"] != "none":
            continue
        if out == "success":
            assert c["setup"] == "paper's" and c["size"] in ("compatible", "none printed") and c["sign"] == "paper's side"
        if c["absence"] == "shown" and c["paper_evidence"] in ("clear", "stated"):
            assert out == "failure", c
        if c["paper_evidence"] in ("within noise", "at chance", "no spread"):
            assert out == "not judged"


def test_a_lower_setup_makes_the_size_not_testable():
    r = rule.decided({k: v[0] for k, v in rule.CRITERIA.items()}, claim="effect", paper_evidence="clear",
                     sign="paper's side", size="compatible", absence="not shown", check="n/a")
    assert (r["verdict"], r["outcome"]) == ("reproduced", "success")
    low = rule.decided(r, setup="reduced")
    assert (low["size"], low["verdict"], low["outcome"]) == ("not testable", "sign only", "partial")


def test_a_w_cell_the_paper_cannot_separate_is_not_judged():
    """W Table 2, clip 1, epsilon_bar 3.2, 60 epochs, -0.26 +- 0.25: within the paper's noise;
    W Table 4, clip 2.5, epsilon_bar 0.8, 120 epochs: arms at chance."""
    r = Rule("x/gap", "a cell", "printed", "tol", wu_rules.judge_gap, design=("paired", "same seeds"),
             margin=wu_rules.GAP_MARGIN, comparable=("direction", "another setup"), takes_rule=True)
    adp, dp = [66.3, 66.4, 66.5, 66.2], [65.6, 65.7, 65.9, 65.8]
    row = rule.row_of(r, sizes_match=True, printed=(60.0, 0.4, 60.26, 0.4), adp=adp, dp=dp, where="x")
    assert (row["paper_evidence"], row["outcome"]) == ("within noise", "not judged")
    row = rule.row_of(r, sizes_match=True, printed=(10.08, 0.2, 10.47, 0.9), adp=adp, dp=dp, where="x")
    assert (row["paper_evidence"], row["outcome"]) == ("at chance", "not judged")
    row = rule.row_of(r, sizes_match=True, printed=(70.0, 0.4, 60.0, 0.4), adp=adp, dp=dp, where="x")
    assert (row["paper_evidence"], row["sign"], row["size"], row["verdict"]) == (
        "clear", "paper's side", "not testable", "sign only")


def test_absent_effect_against_a_claimed_one_is_a_failure():
    """An effect TOST puts within its margin, where the paper claims one: not reproduced (it used
    to read 'equivalent')."""
    r = Rule("x/y", "an effect", "the paper: up", "tol", lambda **m: judge_effect(m["e"], m["se"], direction=+1, df=19),
             margin=wu_rules.GAP_MARGIN)
    row = rule.row_of(r, sizes_match=True, e=0.03, se=0.016)
    assert (row["absence"], row["verdict"], row["outcome"]) == ("shown", "not reproduced", "failure")
    assert row["judge_verdict"] == "agrees" or row["judge_verdict"] in ("inconclusive", "disagrees")


def test_a_plan_whose_looks_were_never_taken_judges_every_seed():
    """All 20 seeds ran in one batch: no boundary, the cell judged on all of them."""
    r = Rule("x/gap", "a cell", "printed", "tol", wu_rules.judge_gap, design=("paired", "same seeds"),
             margin=wu_rules.GAP_MARGIN, comparable=("direction", "another setup"), takes_rule=True)
    adp = [66.0 + 0.1 * k for k in range(20)]
    dp = [65.5 + 0.1 * k + (0.3 if k % 2 else -0.3) for k in range(20)]
    row = rule.row_of(r, sizes_match=True, printed=(70.0, 0.4, 60.0, 0.4), adp=adp, dp=dp, where="x",
                      plan=Plan(looks=(3, 10, 20)))
    assert row["stats"]["n"] == 20 and row["stats"]["stage"] is None


@pytest.fixture(scope="module")
def report() -> list[dict]:
    return reproduction.report_rows()


def test_every_report_row_rederives_from_its_criteria(report):
    """Acceptance: every row carries the criteria and its word and outcome are the declared
    table's for them; no success with a printed size unless the setup is the paper's and ours
    is compatible with it; no absent effect against a claimed one other than a failure."""
    assert report
    for r in report:
        for k in FIELDS + tuple(rule.CRITERIA):
            assert k in r, (r["item"], k)
        assert (r["verdict"], r["outcome"]) == rule.decide({k: r[k] for k in rule.CRITERIA}), r["item"]
        if r["outcome"] == "success" and r["claim"] == "effect" and r.get("paper_value") is not None:
            assert r["setup"] == "paper's" and r["size"] == "compatible", r["item"]
        if r["claim"] == "effect" and r["absence"] == "shown" and r["paper_evidence"] in ("clear", "stated"):
            assert r["outcome"] == "failure", r["item"]


def test_w_t1245_rows_use_every_seed_that_ran(report):
    for r in report:
        if r["page"] == "w-t1245" and r.get("rule") == "w-t1245/gap":
            assert not r.get("stage"), r["item"]


def test_landing_counts_by_outcome_and_setup(report):
    md = landing.scope_counts_markdown(report)
    assert md.startswith("| outcome |")
    total = sum(int(line.rsplit("|", 2)[1]) for line in md.splitlines()[2:])
    assert total == len(report)


def test_title_sentence_names_both_halves():
    def trend(rule, e, lo, hi):
        return {"page": "h-f-eff", "rule": rule, "item": "trend", "outcome": "undecided", "setup": "paper's",
                "ours": {"estimate": e, "ci_low": lo, "ci_high": hi}}

    def at(rule, n, e):
        return {"page": "h-f-eff", "rule": rule, "item": f"x, at N = {n}", "outcome": "partial", "setup": "paper's",
                "ours": {"estimate": e, "ci_low": e, "ci_high": e}}

    rows_ = [trend("h-f-eff/acc", -0.0014, -0.0043, 0.0015), trend("h-f-eff/loss", -0.002, -0.0057, 0.0017),
             at("h-f-eff/loss-at-N", 250, 0.017), at("h-f-eff/loss-at-N", 4000, 0.007),
             at("h-f-eff/acc-at-N", 250, 0.005), at("h-f-eff/acc-at-N", 4000, -0.0007)]
    s = landing.title_claim_sentence(rows_)
    assert "training loss" in s and "test accuracy" in s and "both estimates lean against it" in s
    assert "ahead at every N" in s and "not shown" in s
