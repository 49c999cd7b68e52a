"""One printed number, one verdict: a paper value judged on two pages (reproduction.SAME_PRINTED)
is judged the same way in the verdicts report."""

from __future__ import annotations


def test_one_printed_number_one_verdict():
    """A printed value judged on two pages (W-F1's Fig. 1 right and W-T1245's Table 2 cell) is
    judged the same way in the report: both rows carry the verdict of the one on more runs."""
    from dpcompanion.experiments.comparisons import reproduction

    for (page, rule, item), (other_page, other_item) in reproduction.SAME_PRINTED.items():
        base = dict(claim="effect", paper_evidence="clear", setup="another", size="not testable", absence="not shown",
                    check="n/a", cap="none", paper_value=0.68)
        few = {**base, "page": page, "rule": rule, "item": item, "verdict": "sign only", "outcome": "partial",
               "sign": "paper's side", "ours": {"n": 5}, "note": "five seeds"}
        many = {**base, "page": other_page, "rule": "w-t1245/gap", "item": other_item, "verdict": "inconclusive",
                "outcome": "undecided", "sign": "neither", "ours": {"n": 20}, "note": "twenty seeds"}
        a, b = reproduction.one_verdict_per_printed_number([few, many])
        assert (a["verdict"], a["outcome"], a["sign"]) == (b["verdict"], b["outcome"], b["sign"]) == (
            "inconclusive", "undecided", "neither")
        assert a["judged_on"] == [other_page, other_item] and "five seeds" in a["note"]
    rows = reproduction.report_rows(pages=["w-f1", "w-t1245"])
    by = {(r["page"], r["item"]): r for r in rows}
    for (page, _, item), other in reproduction.SAME_PRINTED.items():
        if (page, item) in by and other in by:
            assert (by[(page, item)]["verdict"], by[(page, item)]["outcome"]) == (by[other]["verdict"], by[other]["outcome"])


def test_a_page_asked_alone_shows_the_judged_cell():
    """A page asked for alone (as its own notebook asks) gives a printed number shared with
    another page the same verdict as the whole report, and shows the judged cell's estimate:
    its own estimate moves to ``own_ours`` and the sentence names both."""
    from dpcompanion.experiments.comparisons import reproduction

    whole = {(r["page"], r["item"]): r for r in reproduction.report_rows(pages=["w-f1", "w-t1245"])}
    alone = {(r["page"], r["item"]): r for r in reproduction.report_rows(pages=["w-f1"])}
    assert {p for p, _ in alone} == {"w-f1"}
    for (page, _, item), other in reproduction.SAME_PRINTED.items():
        if (page, item) not in alone or other not in whole:
            continue
        a, w, o = alone[(page, item)], whole[(page, item)], whole[other]
        assert (a["verdict"], a["outcome"], a["sign"]) == (w["verdict"], w["outcome"], w["sign"]) == (
            o["verdict"], o["outcome"], o["sign"])
        assert a["ours"] == o["ours"] and a["own_ours"]["n"] < o["ours"]["n"]
        assert f"Judged on {other[0]}'s {o['ours']['n']} runs" in a["sentence"]
