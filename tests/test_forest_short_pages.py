"""Short pages and forest plots.

Short pages: the tuning records of a result (seed lists of 100 seeds, stated bounds with their
quotation, every candidate's score) filled h-f-eff's page with a 39,902 px table; a page now
shows one sentence, the choices folded with the seeds as counts, and the records whole in a CSV
(:func:`dpcompanion.book.report.tuning_table`, :func:`dpcompanion.book.show.data_link`).
Forest plots: each verdict row as its estimate with its 95% interval, the paper's value or
direction, the margin, coloured by verdict, one panel per kind of effect on its own axis, labels
whole, marked at the paper's scale or reduced (:mod:`dpcompanion.book.forest`); on every experiment page (test_captions runs them)
and for the whole book on the verdicts page. The page heights themselves are measured in the
built book by tests/test_browser.py.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import matplotlib
import pytest

from dpcompanion.book import figure_files, forest, plotting, report, show
from dpcompanion.experiments import store
from dpcompanion.experiments.comparisons import reproduction

matplotlib.use("Agg")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@pytest.fixture(scope="module")
def book_rows():
    """Every verdict row of the book from the stored results (nothing computed)."""
    return reproduction.report_rows()


def _stored_tuning(eid):
    for mode in ("paper", "full", "quick"):
        r = store.load(eid, mode=mode)
        if r is not None and r.fresh and (r.payload or {}).get("tuning"):
            return r.payload["tuning"]
    pytest.skip(f"no fresh stored {eid} result with tuning records")


def test_the_tuning_block_of_h_f_eff_is_short_and_its_csv_whole():
    """h-f-eff's tuning table was 39,902 px tall: the page shows one sentence and a folded
    summary with the seeds as counts; the CSV keeps every record whole (the seed lists, the
    stated bound's quotation, every candidate's score)."""
    tuning = _stored_tuning("h-f-eff")
    text = report.tuning_table(tuning, link="{download}`CSV <figures/h-f-eff/tuning.csv>`")
    before, _, folded = text.partition(":::{admonition}")
    assert before.startswith("**Tuning.** ") and len(before) < 600 and "|" not in before, before
    assert ":class: dropdown" in folded and folded.rstrip().endswith(":::")
    seeds = tuning[0]["report_seeds"]
    assert str(seeds[:3])[:-1] not in text  # no seed list on the page
    assert "grid_min" not in text and "stated_bound" not in text
    assert f"{len(tuning[0]['tuning_seeds'])} tuning seeds" in text
    lines = [ln for ln in folded.splitlines() if ln.startswith("| ")]
    assert len(lines) == len(tuning) + 2 and max(len(ln) for ln in lines) < 160, max(lines, key=len)
    rows = list(csv.DictReader(io.StringIO(report.tuning_csv_text(tuning))))
    assert len(rows) == len(tuning)
    assert json.loads(rows[0]["report_seeds"]) == seeds
    assert json.loads(rows[0]["trace_scores"]) == tuning[0]["trace"]["scores"]
    assert rows[0]["stated_bound"] == (tuning[0]["stated_bound"] or "")


def test_a_long_power_table_is_folded():
    """w-t1245's 48 rows of power no longer lengthen the page: a table longer than
    report.FOLD_ROWS rows is folded under its sentence."""
    row = {"ours": {"estimate": 0.1, "ci_low": 0.0, "ci_high": 0.2, "n": 5, "se": 0.05}, "item": "x",
           "paper_value": 0.2, "mde": 0.14, "runs_needed": None, "verdict": "agrees"}
    short, long = report.power_table([row] * 2), report.power_table([row] * (report.FOLD_ROWS + 1))
    assert ":class: dropdown" not in short
    assert ":class: dropdown" in long and long.startswith("**Power.**")


def test_data_link_writes_beside_the_figures_only_in_a_book_build(tmp_path, monkeypatch):
    """A page's CSV goes where its figures' data go (figures/<page>/), linked with a
    download role; outside a book build nothing is written."""
    from IPython.core.interactiveshell import InteractiveShell

    from dpcompanion.core.provenance import Provenance

    assert show.data_link("tuning", "a\n1\n") == ""  # no notebook running
    monkeypatch.setenv(plotting.BOOK_DIR_ENV, str(tmp_path))
    shell = InteractiveShell.instance()
    try:
        shell.user_ns["prov"] = Provenance.start(notebook="h-f-eff", mode="quick", seed=0, device="cpu")
        link = show.data_link("tuning", "a\n1\n")
    finally:
        InteractiveShell.clear_instance()
    assert link == "{download}`CSV <figures/h-f-eff/h-f-eff-tuning.csv>`"
    assert (tmp_path / "figures" / "h-f-eff" / "h-f-eff-tuning.csv").read_text() == "a\n1\n"


def test_forest_rows_tolerate_missing_fields_and_group_by_paper():
    """Rows are read with .get (a row without design, comparable, margin or
    at_paper_scale is drawn); rows without an estimate are left out; Hong before Wu before the
    book's own checks; the scale mark says paper scale, reduced or computed."""
    rows = [{"page": "w-f1", "item": "gain", "verdict": "agrees", "ours": {"estimate": 1.0}},
            {"page": "accounting", "item": "R", "verdict": "identity", "ours": {"estimate": 2.0},
             "result": {"mode": "computed"}},
            {"page": "h-f-eff", "item": "loss", "verdict": "disagrees", "at_paper_scale": True,
             "ours": {"estimate": -0.5, "ci_low": -1.0, "ci_high": 0.0}, "paper_value": 0.25, "margin": 2.0,
             "result": {"mode": "paper"}},
            {"page": "h-f-mom", "item": "no estimate", "verdict": "not comparable", "ours": {"estimate": None}},
            {"page": "w-t36", "item": "nan", "verdict": "inconclusive", "ours": {"estimate": float("nan")}}]
    f = forest.forest_rows(rows)
    assert [r["page"] for r in f] == ["h-f-eff", "w-f1", "accounting"]
    assert [r["scale_mark"] for r in f] == ["paper scale", "computed", "computed"]
    assert f[0]["margin_centre"] == 0.0  # an effect's margin: around zero
    # no units, a printed value: ours over the paper's; no units, none printed: its own panel
    assert f[0]["kind"] == forest.RATIO_KIND and f[0]["factor"] == pytest.approx(4.0)
    assert f[1]["kind"] == f[2]["kind"] == forest.OWN_KIND
    exact = forest.forest_rows([{"page": "w-eps", "item": "eps", "verdict": "agrees", "paper_value": 0.8, "margin": 0.01,
                                 "ours": {"estimate": 0.79, "ci_low": 0.79, "ci_high": 0.79}}])[0]
    assert exact["margin_centre"] == 0.8  # a tolerance against a printed number: around the paper's value
    assert forest.left_out_sentence(rows).startswith("3 of 5 verdict rows have an estimate")


def test_the_whole_book_forest_plot_is_readable_and_its_data_names_each_rows_result(book_rows, tmp_path):
    """The verdicts page leads with the forest plot: every row with an estimate is one
    line, readable at the book's column width; the data file names, per row, its page, item,
    verdict, the result it was judged on and its raw numbers."""
    fig = forest.forest_plot(rows=book_rows, title="every verdict")
    try:
        assert plotting.figure_problems(fig) == []
        labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
        titles = [ax.get_title(loc="left") for ax in fig.axes]
        data = list(csv.DictReader(figure_files.write_figure_data(fig, tmp_path / "f.csv").open()))
    finally:
        matplotlib.pyplot.close(fig)
    frows = forest.forest_rows(book_rows)
    assert len(labels) == len(frows) > 0
    # whole labels: each is its row's page and item, wrapped, never cut; so no two rows share one
    assert [" ".join(lab.split()) for lab in labels] == [" ".join(f"{f['page']}: {f['item']}".split())
                                                          for _, fs in forest.panels(frows) for f in fs]
    assert len(set(labels)) == len(labels)
    # one axis per kind of effect, each kind once, every row on its kind's axis
    assert titles == [kind for kind, _ in forest.panels(frows)] and len(set(titles)) == len(titles) > 2
    estimates = [d for d in data if d["series"].endswith("| estimate")]
    assert len(estimates) == len(labels)
    for d in estimates:
        page, item, verdict, judged = d["series"].split(" | ")[:4]
        assert verdict in report.VERDICTS and judged.split(" result")[0] in ("paper", "full", "quick", "computed")
        assert "estimate " in d["series"] and "units " in d["series"] and "plotted times " in d["series"]
    pages = {d["series"].split(" | ")[0] for d in estimates}
    assert any(p.startswith("h-") for p in pages) and any(p.startswith("w-") for p in pages)


def test_every_experiment_page_and_the_verdicts_page_draw_a_forest_plot():
    """Every experiment page draws its forest plot through
    ExperimentPage.reproduction (which every experiment notebook calls once: test_show), and the
    verdicts notebook draws the whole book's from the report's rows."""
    import inspect

    assert "forest_block(" in inspect.getsource(show.ExperimentPage.reproduction)
    cells = json.loads((NOTEBOOKS / "verdicts.ipynb").read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert "show.forest_block(rows" in code
    assert code.index("show.forest_block(") < code.index("show.verdict_tables_by_page(")  # the page leads with it


def _row(page, item, verdict, est, lo, hi, units, **kw):
    return {"page": page, "item": item, "verdict": verdict, "units": units, "result": {"mode": "paper"},
            "ours": {"estimate": est, "ci_low": lo, "ci_high": hi}, "at_paper_scale": True, **kw}


def test_each_kind_of_effect_has_its_own_axis_and_a_row_without_units_its_own():
    """Points of accuracy, points of test error, relative losses and log ratios are different effects: each
    its own panel; rows without units or printed value never share an axis (each its own)."""
    rows = [_row("w-f1", "gain", "reproduced", 1.0, 0.5, 1.5, "points of accuracy"),
            _row("w-f4", "error", "inconclusive", 0.1, -1.0, 1.2, "points of test error"),
            _row("h-f-scale", "rel", "reproduced", -0.1, -0.12, -0.08, "relative final loss (e_dyn - e_uni) / e_uni"),
            _row("h-f-infl", "steep", "reproduced", 4.8, 4.3, 5.3, "log ratio of steepness"),
            _row("h-f-theory", "a", "not reproduced", 10.0, 10.0, 10.0, None),
            _row("accounting", "b", "holds by construction", 3.0, None, None, None)]
    kinds = [k for k, _ in forest.panels(forest.forest_rows(rows))]
    assert len(kinds) == len(set(kinds)) == 6
    assert all(len(fs) == 1 for _, fs in forest.panels(forest.forest_rows(rows)))


def test_a_very_wide_interval_is_cut_at_the_edge_and_said_so():
    """W-F4's widest interval (sigma 12.8, about 18 times the narrowest) once set its axis, squeezing the others
    to dots: it is cut at the axis edge, its ends written there, the reading says so, and the points file keeps
    the whole interval."""
    rows = [_row("w-f4", f"sigma {s}", "inconclusive", e, lo, hi, "points of test error")
            for s, e, lo, hi in ((1.6, 0.1, -1.75, 1.98), (3.2, 1.2, -3.4, 5.9), (6.4, 3.1, -10.8, 17.0),
                                 (12.8, -1.9, -35.7, 31.9))]
    fig = forest.forest_plot(rows=rows)
    try:
        (ax,) = fig.axes
        lo, hi = ax.get_xlim()
        assert -35.7 < lo and hi < 31.9 and lo <= -10.8 and 17.0 <= hi  # the others whole, the widest cut
        written = [t.get_text() for t in ax.texts]
        assert any(t.startswith(forest.LEFT_ARROW) and "-35.7" in t for t in written), written
        assert any(t.endswith(forest.RIGHT_ARROW) and "31.9" in t for t in written), written
        tidy = figure_files.points(fig)
    finally:
        matplotlib.pyplot.close(fig)
    wide = next(r for r in tidy if r["x"] == "sigma 12.8")
    assert (wide["low"], wide["high"]) == (-35.7, 31.9)
    assert "cut at the axis edge" in forest.READING
    narrow = [_row("w-f4", f"s {i}", "inconclusive", 0.0, -1.0 - i * 0.1, 1.0 + i * 0.1, "points of test error")
              for i in range(4)]
    fig = forest.forest_plot(rows=narrow)  # intervals of like widths: none is cut
    try:
        assert not fig.axes[0].texts
    finally:
        matplotlib.pyplot.close(fig)


def test_each_verdict_word_has_its_own_colour_and_marker_in_the_legend():
    """Reproduced and check passes were one green (and the partial and failing words shared theirs): each
    verdict word now has a colour and a marker no other word has, and the legend shows both."""
    colours = [c for c, _ in forest.VERDICT_STYLES.values()]
    markers = [m for _, m in forest.VERDICT_STYLES.values()]
    assert len(set(colours)) == len(set(markers)) == len(forest.VERDICT_STYLES) == len(report.VERDICTS)
    assert not set(markers) & {"D", "<", ">"}  # the paper's value and the direction marks
    rows = [_row("h-f-eff", v, v, i * 0.1, i * 0.1 - 0.05, i * 0.1 + 0.05, "training loss (nats)")
            for i, v in enumerate(forest.VERDICT_STYLES)]
    fig = forest.forest_plot(rows=rows)
    try:
        entries = {t.get_text(): h for t, h in zip(fig.legends[0].get_texts(), fig.legends[0].legend_handles)}
        estimates = {ln.get_label().split(" | ")[2]: ln for ln in fig.axes[0].lines if ln.get_label().endswith("estimate")}
    finally:
        matplotlib.pyplot.close(fig)
    for v, (colour, marker) in forest.VERDICT_STYLES.items():
        assert entries[v].get_marker() == marker and entries[v].get_color() == colour
        assert estimates[v].get_marker() == marker and estimates[v].get_markeredgecolor() == colour


def test_the_panel_titles_overlap_nothing(book_rows):
    """The whole book's forest plot: no panel title touches a tick label of the panel above or another title."""
    fig = forest.forest_plot(rows=book_rows, title="every verdict")
    try:
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        titles = [ax.title if ax.get_title() else ax._left_title for ax in fig.axes]
        boxes = [t.get_window_extent(r) for t in titles]
        ticks = [lab.get_window_extent(r) for ax in fig.axes for lab in ax.get_xticklabels() + ax.get_yticklabels()
                 if lab.get_visible() and lab.get_text()]
        suptitle = fig._suptitle.get_window_extent(r)
    finally:
        matplotlib.pyplot.close(fig)
    for i, a in enumerate(boxes):
        assert not a.overlaps(suptitle)
        for b in boxes[i + 1:] + ticks:
            assert not a.overlaps(b), (titles[i].get_text(), a, b)
