"""One typed value per judge and two vocabularies of judgements, each with one home."""

from __future__ import annotations

import dataclasses

import pytest

from dpcompanion.book import claims_page, forest
from dpcompanion.claims import registry
from dpcompanion.experiments import base, comparisons, store
from dpcompanion.experiments.comparisons import reproduction, rule, sequential, theory, wu_rules
from dpcompanion.experiments.comparisons.rule import JUDGE_WORDS, VERDICTS, Judgement, Rule, judge_effect, with_margin


@pytest.fixture
def judged() -> dict[str, set]:
    """Every rule of :func:`comparisons.all_rules` wrapped for the test: rule id -> the types its
    judge returned. ``Rule`` is frozen, so the registry's own objects are patched and restored."""
    returned: dict[str, set] = {}
    originals = {r.id: r.judge for r in comparisons.all_rules().values()}

    def wrap(rule_id, judge):
        def wrapped(**measured):
            out = judge(**measured)
            returned.setdefault(rule_id, set()).add(type(out))
            return out
        return wrapped

    for r in comparisons.all_rules().values():
        object.__setattr__(r, "judge", wrap(r.id, r.judge))
    try:
        yield returned
    finally:
        for r in comparisons.all_rules().values():
            object.__setattr__(r, "judge", originals[r.id])


def test_every_rule_returns_a_judgement(judged):
    """Every verdict rule's judge returns one :class:`Judgement` (no tuple of
    3, 4 or 5 elements), run on the committed results' payloads (stale or not: the rules judge
    numbers, not code), on H-X-EER's per-cell table (rule ``h-x-eer/mc``) and on the pages that
    compute their rows (theory, accounting, W-F2)."""
    from dpcompanion.experiments import h_x_eer

    payloads = {}
    for eid, exp in base.all_experiments().items():
        res = next((r for r in (store.load(eid, mode=m) for m in ("paper", "full", "quick")) if r is not None), None)
        if res is not None and exp.verdict_rows is not None:
            payloads[eid] = res.payload
            exp.verdict_rows(res.payload)
            exp.judged_rows(res.payload)
    h_x_eer.mc_verdicts(payloads["h-x-eer"])
    theory.h_f_theory_rows()
    theory.accounting_rows()
    theory.h_sec_4_2_rows()
    wu_rules.w_f2_rows()
    assert set(judged) == set(comparisons.all_rules()), sorted(set(comparisons.all_rules()) - set(judged))
    assert {rid: t for rid, t in judged.items() if t != {Judgement}} == {}


def test_a_judge_returning_a_tuple_is_refused():
    """The row builder takes nothing but a Judgement from a judge."""
    r = Rule("x/y", "item", "paper", "tolerance", lambda **m: ("agrees", "1", "note"))
    with pytest.raises(TypeError, match="must return a Judgement"):
        rule.row_of(r, sizes_match=True)


def test_judgement_is_frozen_and_its_row_shows_note_and_remark():
    """The rule's remark follows the statistical note and survives a margin
    (:func:`.rule.with_margin` rewrites the note only); the paper column defaults to the rule's."""
    j = judge_effect(-0.0009, 0.0001, direction=+1, df=99).for_row("ours", remark="; at scale 25")
    with pytest.raises(dataclasses.FrozenInstanceError):
        j.verdict = "agrees"  # type: ignore[misc]
    m = with_margin(j, 0.023)
    assert m.verdict == "equivalent" and m.row_note.endswith("; at scale 25") and m.ours == "ours"
    row = rule.row_of(Rule("x/y", "item", "printed", "tol", lambda: j), sizes_match=True)
    assert row["paper"] == "printed" and row["ours"] == "ours" and row["note"].startswith(j.row_note)


def test_an_overruled_judgement_is_not_refined_by_a_margin():
    """A rule that overrules the statistical verdict (h-f-mom's 'partly')
    keeps its word whatever the row's margin."""
    j = judge_effect(0.5, 0.1, direction=+1, df=9).overruled("partly", "x")
    assert with_margin(j, 10.0) is j


def test_a_judgement_without_numbers_has_no_stats():
    """A count or an exact yes/no reports no numbers; an effect does."""
    assert Judgement("agrees", "x", ours="3").stats() == {}
    assert judge_effect(1.0, 0.1, direction=+1).stats()["estimate"] == 1.0


def test_two_vocabularies_each_with_one_home():
    """The verdict words (a measured number against a printed one) live in
    :data:`.VERDICTS`, the claim statuses (how a claim was checked) in
    :data:`registry.STATUS_DEFINITIONS`; every map keyed by either covers exactly its words."""
    assert comparisons.VERDICTS is VERDICTS and rule.VERDICTS is VERDICTS
    assert set(VERDICTS).isdisjoint({"proved", "checked", "verified", "refuted", "not-reproduced"})
    assert set(forest.VERDICT_COLORS) == set(VERDICTS)
    assert set(sequential.DECIDED) <= set(JUDGE_WORDS) and set(rule.CHECK_OF) == set(JUDGE_WORDS)
    assert registry.STATUSES == tuple(registry.STATUS_DEFINITIONS)
    assert set(registry.PASSING) <= set(registry.STATUSES) and set(registry.ERRATA) <= set(registry.STATUSES)
    assert set(claims_page.BADGES) == set(registry.STATUSES) | {"error"}
