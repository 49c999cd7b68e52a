"""The ``sentence`` of a row: H-F-EFF's title claim tested as a trend (a row
per N and a trend row, recomputed here from the stored paper-scale arrays), no tuned parameter
judged at a search edge without a stated bound or a costed next step, one sentence per row
without internal names, and the landing page's counts split by what they rest on."""

import math
import re

import numpy as np
import pytest

from dpcompanion.book import landing
from dpcompanion.experiments import comparisons, scale_tables, store
from dpcompanion.experiments.comparisons import reproduction as R
from dpcompanion.experiments.h_f_eff import eff_trend


@pytest.fixture(scope="module")
def rows():
    return R.report_rows()


@pytest.fixture(scope="module")
def eff():
    res = store.fresh_paper("h-f-eff")
    if res is None:
        pytest.skip("no fresh paper-scale h-f-eff result")
    return res.payload


def _paired(units, key):
    """Per N: mean and SE of exp - uni over the repeats, from the stored per-repeat arrays."""
    out = {}
    for u in units:
        if "kinds" in u:
            continue
        d = np.asarray(u["exp"][key], float) - np.asarray(u["uni"][key], float)
        out[int(u["N"])] = (float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size)))
    return out


def test_eff_trend_is_weighted_least_squares():
    """The trend is WLS of the gap on log2 N with weights 1/se^2 (numpy.polyfit as
    the reference), its SE scaled by sqrt(chi2/df) only where the gaps scatter beyond their SEs."""
    N, se = [250, 500, 1000, 2000, 4000], np.array([0.1, 0.1, 0.2, 0.2, 0.1])
    x = np.log2(N)
    d = 0.5 + 0.3 * x + np.array([0.05, -0.05, 0.1, -0.1, 0.02])  # within the SEs: chi2/df < 1
    t = eff_trend(N=N, diff=d, se=se)
    p, cov = np.polyfit(x, d, 1, w=1 / se, cov="unscaled")
    assert t["slope"] == pytest.approx(p[0]) and t["se"] == pytest.approx(math.sqrt(cov[0, 0]))
    assert not t["inflated"] and t["df"] is None
    d2 = d + np.array([1.0, -1.0, 1.0, -1.0, 1.0])  # scatter far beyond the SEs
    t2 = eff_trend(N=N, diff=d2, se=se)
    p2, cov2 = np.polyfit(x, d2, 1, w=1 / se, cov=True)  # numpy scales by chi2 / (n - 2)
    assert t2["inflated"] and t2["df"] == 3
    assert t2["slope"] == pytest.approx(p2[0]) and t2["se"] == pytest.approx(math.sqrt(cov2[0, 0]))
    with pytest.raises(ValueError, match="distinct positive"):
        eff_trend(N=[100, 100], diff=[0.0, 1.0], se=[0.1, 0.1])


def test_h_f_eff_has_a_row_per_N_and_a_trend_row(rows, eff):
    """A row per N for both metrics, recomputed from the stored per-repeat
    arrays (paired by repeat), and a trend row per metric whose slope is the WLS slope of those
    gaps on log2 N."""
    mine = [r for r in rows if r["page"] == "h-f-eff"]
    Ns = [int(n) for n in eff["table"]["N"]]
    for metric, key, sign in (("acc", "test_accuracy", 1.0), ("loss", "final_loss", -1.0)):
        gaps = _paired(eff["units"], key) if not any("kinds" in u for u in eff["units"]) else None
        per_n = {int(re.search(r"at N = (\d+)", r["item"]).group(1)): r for r in mine if r["rule"] == f"h-f-eff/{metric}-at-N"}
        assert sorted(per_n) == Ns
        for i, N in enumerate(Ns):
            r = per_n[N]
            assert r["design"] == "paired" and r["ours"]["n"] == int(eff["table"]["n"][i])
            assert r["ours"]["estimate"] == pytest.approx(float(eff["table"][f"{metric}_gain"][i]))
            if gaps and N in gaps:  # the stored arrays give the same paired gap (exp - uni; loss: uni - exp)
                m, s = gaps[N]
                assert sign * m == pytest.approx(r["ours"]["estimate"], rel=1e-6, abs=1e-9)
                assert s == pytest.approx(r["ours"]["se"], rel=1e-6)
        trend = [r for r in mine if r["rule"] == f"h-f-eff/{metric}" and "beyond" not in r["item"]]
        assert len(trend) == 1
        t = eff_trend(N=Ns, diff=eff["table"][f"{metric}_gain"], se=eff["table"][f"{metric}_gain_se"])
        assert trend[0]["ours"]["estimate"] == pytest.approx(t["slope"])
        assert trend[0]["ours"]["ci_low"] < t["slope"] < trend[0]["ours"]["ci_high"]
        assert "per doubling of N" in trend[0]["sentence"]


def test_no_tuned_parameter_at_a_search_edge_without_a_bound_or_a_cost(rows):
    """Every tuning record behind a row whose choice sits on a grid edge has
    the paper's stated bound, or the row states the next step and what it would cost (or, where
    every search ended at its own limit, says so)."""
    seen = 0
    for r in rows:
        bounded = [t for t in r["tuning"] if t.get("interior") is False and t.get("stated_bound")]
        if r["verdict"] != "not judged" and any(not R.domain_bound(t) for t in bounded):
            assert "stated search range bounds the tuning" in r["sentence"], r["sentence"]  # marked, the bound named
        if r["verdict"] != "not judged" and any(R.domain_bound(t) for t in bounded):
            # an end of a parameter's domain (a fraction of T at 0) is no bound the paper stated
            assert "at an end of its domain" in r["sentence"], r["sentence"]
        edge = [t for t in r["tuning"] if t.get("interior") is False and not t.get("stated_bound")]
        if not edge:
            continue
        seen += 1
        assert r["next_step"] and len(r["next_step"]["steps"]) == len(edge), r["item"]
        if all(s["next"] is None for s in r["next_step"]["steps"]):  # every search at its own limit: no cost within it
            assert "reached their own limit" in r["next_step"]["text"], r["next_step"]["text"]
        else:
            assert ("CPU" in r["next_step"]["text"] or "run-steps" in r["next_step"]["text"]), r["next_step"]["text"]
        assert r["next_step"]["text"] in r["sentence"]
    assert seen, "no row rests on a search edge: the test checks nothing"


def test_next_step_cost_from_the_stored_times(eff):
    """The cost of the next step of a search = its runs x steps x the
    stored unit's seconds per run-step (no new runs)."""
    rec = next(t for t in eff["tuning"] if t["setting"] == "beyond" and t["method"] == "uni" and t["param"] == "T"
               and t["interior"] is False)
    step = R.next_steps([rec], eff)["steps"][0]
    unit = next(u for u in eff["units"] if f"N = {u['N']}" == rec["cell"] and "kinds" not in u) \
        if any(f"N = {u['N']}" == rec["cell"] and "kinds" not in u for u in eff["units"]) else None
    assert step["next"] == rec["chosen"] + (rec["grid"][-1] - rec["grid"][-2])
    assert step["runs"] == len(rec["tuning_seeds"])
    if unit is not None:
        assert step["cpu_s"] == pytest.approx(step["runs"] * step["next"] * unit["train_wall_s"] / unit["run_steps"])


#: what a sentence must not contain: identifiers, module paths, rule
#: plumbing, verdict words in quotes
INTERNAL = [re.compile(p) for p in (
    r"_",                                              # snake_case identifiers (and any x_y notation)
    r"\b[a-z]{2,}\.[a-z]{2,}",                          # dotted module paths (comparisons.rule)
    r"[\"'`](agrees|partly|disagrees|inconclusive|identity|equivalent|not comparable)[\"'`]",
    r"\bcapped\b", r"rule gave", r"\bcomparisons\b", r"\bjudge_", r"\b[hwx]-[a-z0-9]+(-[a-z0-9]+)*/",
    r"\bmnist35\b", r"\beps(ilon)?_bar\b",
)]


def test_every_row_has_a_sentence_without_internal_names(rows):
    """Every row of ``verdicts --json`` has a ``sentence`` a reader
    understands: no identifiers, module paths, rule ids or quoted verdict words."""
    for r in rows:
        s = r["sentence"]
        assert isinstance(s, str) and len(s) > 20 and s.endswith("."), r["item"]
        for pat in INTERNAL:
            assert not pat.search(s), (pat.pattern, s)
        for rid in comparisons.all_rules():
            assert rid not in s, (rid, s)


def test_the_sentence_of_the_largest_N_reads_as_the_issue_asks(rows):
    """Units, direction, size and scale, e.g. "At N = 4000, exp's test
    accuracy is 0.067 points below uni's (95% CI 0.016 to 0.12 below), at the paper's scale;
    the paper reports exp ahead"."""
    r = next((r for r in rows if r["rule"] == "h-f-eff/acc-at-N" and r["item"].endswith("N = 4000")), None)
    if r is None:
        pytest.skip("no paper-scale h-f-eff rows")
    e, lo, hi = (100 * r["ours"][k] for k in ("estimate", "ci_low", "ci_high"))
    side = "above" if e >= 0 else "below"
    assert r["sentence"].startswith(f"At N = 4000, exp's test accuracy is {abs(e):.2g} points {side} uni's (95% CI ")
    assert "at the paper's scale; the paper reports exp ahead" in r["sentence"]


def test_sentence_covers_any_row_from_its_fields():
    """The sentence is written from a row's generic fields, so rows of rules
    it does not know (another verdict word, a pooled estimate) still get one."""
    row = {"page": "w-x", "rule": "w-x/pooled", "item": "Table 9: pooled gain, eps_bar 0.8", "verdict": "equivalent",
           "paper": "Wu et al., Table 9", "paper_value": None, "comparable": "direction", "at_paper_scale": False,
           "result": {"mode": "full"}, "note": "TOST ...", "tuning": [], "next_step": None,
           "ours": {"estimate": 0.1, "ci_low": -0.2, "ci_high": 0.4, "n": 5, "text": "+0.10"}}
    s = R.sentence(row)
    assert s.startswith("Table 9: pooled gain, ε̄ 0.8: our estimate is 0.1 (95% CI -0.2 to 0.4)")
    assert "only the direction is compared" in s and "equivalent" in s
    assert not any(p.search(s) for p in INTERNAL)


def test_landing_counts_split_and_title_claim(rows):
    """The landing page splits its counts into the paper's scale, reduced runs
    and checks of our own code (W-F2's step size, defined so that it holds, is ours, not the
    paper's), and answers the title claim in one sentence."""
    scopes = {r["scope"] for r in rows}
    assert scopes <= set(R.SCOPES)
    assert all(r["scope"] == "own code" for r in rows if r["rule"] in ("w-f2/eta-T", "audit/claim", "audit/power"))
    # one vocabulary: a row's scope is the caption's scale word of its result (never "reduced" for other data)
    for r in rows:
        if r["scope"] != "own code" and (r["result"] or {}).get("mode") not in ("computed", None):
            word = scale_tables.scale_word(r["scale"] or {}) or "no printed run"
            assert r["scope"] == ("other setup" if word == "paper scale" and r["comparable"] == "direction" else word), r["item"]
    assert all(r["scope"] != "paper scale" for r in rows if r["comparable"] == "direction")
    md = landing.scope_counts_markdown(rows)
    assert sum(int(line.rsplit("|", 2)[1]) for line in md.splitlines()[2:]) == len(rows)
    title = landing.title_claim_sentence(rows)
    if any(r["rule"] == "h-f-eff/acc" for r in rows):
        assert title.startswith("**The title claim**") and "per doubling of N" in title and title.count(". ") == 0
    table = R.verdict_summary(rows=rows)
    assert all("<details>" in t["note"] for t in table if t["note"])


def test_a_w_cell_sentence_quotes_the_cells_own_printed_sign():
    """Where Wu et al. printed ADP-SGD behind in a cell, the cell's sentence says
    so (it said 'the paper reports ADP-SGD ahead' next to 'this disagrees')."""
    row = {"rule": "w-t1245/gap", "item": "Table 2: gain ADP - DP, sqrt, C_G 1, eps_bar 3.2, 60 epochs",
           "verdict": "disagrees", "paper_value": -0.26, "comparable": "direction", "at_paper_scale": False,
           "result": {"mode": "full"}, "note": "", "stage": "look 2 of 3, 10 seeds",
           "ours": {"estimate": 0.33, "ci_low": 0.034, "ci_high": 0.62, "n": 10}, "paper": "", "tuning": []}
    s = R.sentence(row)
    assert "the paper prints ADP-SGD 0.26 points below DP-SGD here" in s and "reports ADP-SGD ahead" not in s
    assert "repeated 95% CI at look 2 of 3, 10 seeds" in s
    s2 = R.sentence({**row, "paper_value": 0.4, "verdict": "agrees"})
    assert "the paper prints ADP-SGD 0.40 points above DP-SGD here" in s2
