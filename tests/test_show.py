"""The experiment pages' one notebook helper (dpcompanion.book.show): the blocks in the order
the pages showed them, the stored full-mode result shown only when fresh, the tuning table,
and the notebooks that use it keep the cell contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import toy_units

from dpcompanion.book import show
from dpcompanion.experiments import base, store

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


# a fast experiment, declared as an Experiment with its describe and verdict_rows (the
# page reads them from the object; this module does not pose as an experiment module)
def describe(payload):
    return f"**Sizes ({payload['config']['mode']} mode).** n = {payload['config']['n']}."


def verdict_rows(payload):
    return [{"item": f"total of n = {payload['config']['n']}", "paper": "-", "ours": f"{payload['total']:.3f}",
             "verdict": "holds by construction", "outcome": "not judged", "note": "test"}]


@pytest.fixture()
def page_exp(tmp_path, monkeypatch):
    exp = base.Experiment(id="test-show", title="show", configs={"quick": {"n": 10}, "full": {"n": 20}},
                          units=toy_units.units, run_unit=toy_units.run_unit, combine=toy_units.combine, describe=describe,
                          verdict_rows=verdict_rows)
    base.register(exp)
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    shown: list = []
    monkeypatch.setattr(show.plotting, "_display_markdown", lambda text: shown.append(("md", text)))
    yield exp, shown
    base.unregister(exp.id)


def test_show_experiment_shows_sizes_figure_tables_then_verdicts(page_exp):
    exp, shown = page_exp
    drawn = []
    page = show.show_experiment(exp.id, mode="quick", figure=lambda p: (drawn.append(p["config"]["n"]),
                                                                        shown.append(("figure", p["config"]["n"]))),
                                tables=lambda p: shown.append(("table", p["total"])))
    res = store.load(exp.id, mode="quick")
    assert res is not None and res.fresh and page.payload == res.payload  # computed once, stored
    assert [k for k, _ in shown] == ["md", "md", "figure", "table", "md"]
    assert shown[0][1] == show.full_absent_note(exp.id)  # quick mode, nothing larger stored: says so first
    assert shown[1][1] == describe(res.payload) and drawn == [10]
    assert f"{res.payload['total']:.3f}" in shown[4][1] and "holds by construction" in shown[4][1]
    shown.clear()
    show.show_experiment(exp.id, mode="quick", verdicts=False)  # loaded, not recomputed; no verdicts
    assert [k for k, _ in shown] == ["md", "md"]
    with pytest.raises(ValueError, match="shown must be one of"):
        show.ExperimentPage(exp.id, mode="quick", shown="newest")


def test_larger_result_first_this_build_folded_only_when_fresh(page_exp):
    """Quick mode with nothing larger stored: why, then this build's run. With a fresh full-mode result:
    its sizes (with provenance), its figure and its verdicts first, this build's run folded below (no
    verdicts: it is not the judged run)."""
    exp, shown = page_exp
    drawn = []
    fig = lambda p: drawn.append(("quick", p["config"]["n"]))  # noqa: E731
    full_fig = lambda p: drawn.append(("full", p["config"]["n"]))  # noqa: E731
    show.show_experiment(exp.id, mode="quick", figure=fig, full_figure=full_fig, absent_note=" It takes seconds.")
    assert shown[0][1] == show.full_absent_note(exp.id) + " It takes seconds."
    assert drawn == [("quick", 10)] and not any(":::" in t for _, t in shown)
    store.compute(exp.id, mode="full")
    shown.clear(), drawn.clear()
    show.show_experiment(exp.id, mode="quick", figure=fig, full_figure=full_fig)
    full = store.fresh_full(exp.id)
    assert drawn == [("full", 20), ("quick", 10)]
    assert shown[0][1] == describe(full.payload) + f" <small>{show.result_line(full)}</small>"
    assert "total of n = 20" in shown[1][1]  # the verdicts of the full result, not of this build's
    fold = shown[-1][1]
    assert fold.startswith(":::{admonition} This build's quick-mode run, smaller than the full-mode result above")
    assert describe(store.load(exp.id, mode="quick").payload) in fold and "total of n = 10" not in fold
    shown.clear(), drawn.clear()
    show.show_experiment(exp.id, mode="full", figure=fig, full_figure=full_fig)  # the largest: no fold
    assert drawn == [("quick", 20)] and not any(":::" in t for _, t in shown)


def test_tuning_table_and_trace(page_exp, monkeypatch):
    exp, shown = page_exp
    page = show.ExperimentPage(exp.id, mode="quick")
    entry = {"cell": "c", "method": "uni", "param": "T", "setting": "paper", "chosen": 25.0, "grid_min": 10.0,
             "grid_max": 25.0, "n_candidates": 2, "interior": False, "stated_bound": "T in [1, 25]", "stopped": "",
             "tuning_seeds": [1, 2], "report_seeds": [3, 4, 5]}
    page.result = store.StoredResult(id=exp.id, mode="quick", payload={"tuning": [entry]}, provenance={}, fresh=True,
                                     cached=True, path=None)
    traced = []
    monkeypatch.setattr(show.library_figures, "tuning_trace", lambda **kw: traced.append(kw))
    page.tuning(ylabel="loss", max_cells=8)
    text = shown[0][1]
    assert text.startswith(show.TUNING_TRACE)
    text = text[len(show.TUNING_TRACE):].lstrip()
    # short pages: one sentence, the seeds as counts, the choices folded
    assert text.startswith("**Tuning.** 1 tuned choice: 0 interior, 1 at a bound the paper stated, 0 at a grid edge; "
                           "2 tuning seeds, disjoint from the 3 report seeds.")
    assert "| c | uni | T | paper | 25 | [10, 25] (2) | at stated bound T in [1, 25] | 2 | 3 |" in text
    assert ":class: dropdown" in text and "[1, 2]" not in text  # no seed list on the page
    assert traced == [{"entries": [entry], "ylabel": "loss", "max_cells": 8}]


def test_experiment_notebooks_get_their_result_through_the_helper():
    """Every experiment's page gets its result, verdicts and reproduction tables through the
    helper (``show_experiment`` or ``ExperimentPage``), not from the store, and calls no verdict
    rule itself; a page that calls ``show_experiment`` calls it once."""
    for eid in base.all_experiments():
        path = NOTEBOOKS / f"{eid}.ipynb"
        code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
        assert "from dpcompanion.book.show import" in code, path.name
        assert "store." not in code and "compare(" not in code and "reproduction_tables" not in code, path.name
        assert code.count("show_experiment(") <= 1 and code.count("page.reproduction()") == 1, path.name


# ------------------------------------------------------------------------ the outcome first

def test_lead_block_comes_first_and_is_generated():
    """The redesign's item 7: a page leads with its headline rows (a table's verdict where the
    page has one, else its first rule's), each with the claim, the paper's value, ours with its
    interval, the setup generated from the row's scale table, the outcome word and its sentence."""
    scale = {"training samples": {"paper": 50000, "ours": 2000, "match": False},
             "model / data": {"paper": "CNN, CIFAR-10", "ours": "fashion-mnist", "match": False}}
    rows = [{"rule": "x/gap", "item": "cell", "paper": "+1", "ours": {"estimate": 0.5, "ci_low": 0.1, "ci_high": 0.9},
             "verdict": "sign only", "outcome": "partial", "sentence": "S1.", "scale": scale, "setup": "another"},
            {"rule": "x/table", "item": "Table 1: ahead", "paper": "+7.31", "verdict": "sign only", "outcome": "partial",
             "ours": {"estimate": 1.3119, "ci_low": 0.7227, "ci_high": 1.9012}, "sentence": "S2.", "scale": scale,
             "setup": "another"}]
    head = show.headline_rows(rows, ["x/gap", "x/table"])
    assert [r["item"] for r in head] == ["Table 1: ahead"]
    text = show.lead_markdown(head)
    assert text.startswith("**The outcome.**")
    for part in ("Table 1: ahead", "the paper +7.31", "+1.31 (95% CI +0.723 to +1.9)", "training samples 2,000",
                 "the paper: training samples 50,000, model / data CNN, CIFAR-10", "**sign only**", "(other data)", "S2."):
        assert part in text, part


def test_h_f_mom_shows_the_cell_it_judges():
    """H-F-MOM is judged at data scale 25, T = 100: its "we measured" cell and its lead show that
    cell first (not scale 5)."""
    from dpcompanion.experiments import comparisons

    cells = [{"scale": 5, "T": 100, "diff": 0.05, "se": 0.003}, {"scale": 25, "T": 100, "diff": -0.0009, "se": 0.0001}]
    row = comparisons.compare("h-f-mom/expinfl-vs-momexpinfl", sizes_match=True, cells=cells)
    assert row["ours"].startswith("scale 25, T=100 (judged): -0.0009")
    assert show.report.short_cell(row["ours"]).startswith("scale 25, T=100")
    lead = show.lead_markdown(show.headline_rows([{**row, "ours": {**row["stats"], "text": row["ours"]},
                                                   "sentence": "", "scale": {}, "setup": "paper's"}],
                                                 ["h-f-mom/expinfl-vs-momexpinfl"]))
    assert "ours -0.0009 (95% CI" in lead


# ------------------------------------------------------------------------ the largest result first, everywhere

def test_a_page_holding_the_full_result_does_not_fold_it_again(page_exp):
    """A "full when fresh" page whose result is the full one has nothing larger to show first: it was
    shown a second time inside the fold labelled as this build's quick run."""
    exp, shown = page_exp
    store.compute(exp.id, mode="quick")
    store.compute(exp.id, mode="full")
    page = show.ExperimentPage(exp.id, mode="quick", shown="full when fresh")
    assert page.result.mode == "full" and page.shown_first() is None
    quick = show.ExperimentPage(exp.id, mode="quick")
    first = quick.shown_first()
    assert first is not None and first.mode == "full"
    assert quick.fold_title(first) == "This build's quick-mode run, smaller than the full-mode result above (not judged)"
    shown.clear()
    show.show_experiment(exp.id, mode="quick", shown="full when fresh")
    assert not any(":::" in t for _, t in shown)  # the full result once, no fold holding it again
    assert shown[0][1].startswith(describe(page.result.payload))  # and no note that a full result is missing


#: experiment pages that place their blocks themselves (not through show_experiment or "full when fresh")
OWN_LAYOUT = ("h-x-eer", "h-f-infl")


def test_own_layout_pages_show_and_judge_the_largest_result_first():
    """H-X-EER and H-F-INFL showed this build's quick run first, unfolded, and H-X-EER judged its verdict
    rows on it although a fresh full result was committed. Every experiment page now either goes through
    show_experiment, or shows the "full when fresh" result only, or (these two) takes the result it shows
    and judges from ExperimentPage.shown_first and folds this build's run under fold_title."""
    for eid in base.all_experiments():
        code = "\n".join("".join(c["source"]) for c in json.loads((NOTEBOOKS / f"{eid}.ipynb").read_text())["cells"]
                         if c["cell_type"] == "code")
        if "show_experiment(" in code or 'shown="full when fresh"' in code:
            assert eid not in OWN_LAYOUT, eid
            continue
        assert eid in OWN_LAYOUT, f"{eid}: lays its page out itself; add it to OWN_LAYOUT and follow the rule"
        assert "main = first or res" in code and "page.shown_first()" in code, eid
        assert "with folded(page.fold_title(first)):" in code and "page.lead()" in code, eid
        assert "fresh_full(" not in code and "page.verdicts(main.payload" in code, eid
        assert code.count("page.verdicts(") == 1, eid  # the judged result's rows only, never the quick ones
