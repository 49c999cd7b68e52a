"""Every figure's caption names the run it plots.

A quick-mode build shows the committed full or paper-scale result on several experiment pages;
their captions said "quick mode, commit <this build>" under a figure of another run. One
function decides the caption from the result a figure plots
(:func:`dpcompanion.book.report.figure_caption`), and every figure of an experiment page is
drawn inside :meth:`dpcompanion.book.show.ExperimentPage.drawing`, which hands that result to
:func:`dpcompanion.book.plotting.publish`. These tests caption every stored result, and run
every experiment page (in-process, quick mode, stored results only) to check that each figure
it publishes names a stored result of its page, with that result's mode and commit.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import pytest

from dpcompanion.book import plotting, report
from dpcompanion.experiments import base, store
from dpcompanion.experiments.store import result_store

matplotlib.use("Agg")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
BUILD = SimpleNamespace(mode="quick", commit="0123456789ab", dirty=False)


def stored_results():
    """Every fresh stored result (experiment, mode): what an experiment page may show."""
    out = []
    for eid in base.all_experiments():
        for mode in ("quick", "full", "paper"):
            r = store.load(eid, mode=mode)
            if r is not None and r.fresh:
                out.append(r)
    return out


def test_the_caption_names_the_mode_and_commit_of_every_stored_result():
    """The caption of a figure of any stored result names that result's mode and
    the commit that computed it, then the build that drew it."""
    results = stored_results()
    if not results:
        pytest.skip("no fresh stored result")
    for r in results:
        caption = report.figure_caption(r, build=BUILD)
        head = f"result: {r.mode} mode, commit {r.provenance['commit']}"
        assert caption.startswith(head), (r.id, r.mode, caption)
        assert caption.endswith("; drawn by this build (quick mode, commit 0123456789ab)"), caption


def test_a_quick_mode_result_is_captioned_quick_mode_and_a_paper_one_paper_scale():
    """A quick-mode result says "quick mode" and is reduced; a result at the paper's
    sizes says "paper scale" with its sizes in a few words, read from the result."""
    quick = SimpleNamespace(id="w-f4", mode="quick", payload={}, provenance={
        "commit": "9dcda9f43b93", "config": {"n_train": 1000, "model": "mlp", "seeds": 2, "epochs": 10, "cs": [0.0, 0.1]}})
    assert report.figure_caption(quick, build=BUILD) == (
        "result: quick mode, commit 9dcda9f43b93 (reduced: 1,000 training samples, mlp model, 10 epochs, 2 seeds); "
        "drawn by this build (quick mode, commit 0123456789ab)")
    paper = SimpleNamespace(id="w-f4", mode="paper", payload={}, provenance={
        "commit": "2e722974aaea", "dirty": True,
        "config": {"n_train": 60000, "model": "cnn-small", "seeds": 2, "epochs": 50, "cs": [0.0, 1e-5, 1e-3, 1e-2, 0.1, 0.5]}})
    assert report.figure_caption(paper, build=BUILD).startswith(
        "result: paper mode, commit 2e722974aaea+dirty (paper scale: 60,000 training samples, CNN model, 50 epochs, "
        "2 seeds (training samples, seeds not printed in the paper))")
    # the sizes come from the numbers the payload holds where it holds them, not from the config alone
    held = SimpleNamespace(id="w-f1", mode="full", provenance={"commit": "5dc64e098c55", "config": {"n_train": 9}},
                           payload={"train": {"N_train": 5000, "acc_adp": [[0.5], [0.6]]}})
    assert "5,000 training samples" in report.result_sizes(held) and "2 seeds" in report.result_sizes(held)
    # a page that plots no stored result (theory, accounting) names the build alone
    assert report.figure_caption(None, build=BUILD) == "quick mode, commit 0123456789ab"


def test_drawing_hands_the_result_to_every_figure_of_a_page():
    """ExperimentPage.drawing is the one way a page's figures learn the result they
    plot, for this build's result as well as for a stored one of another mode."""
    from dpcompanion.book.show import ExperimentPage

    page = ExperimentPage.__new__(ExperimentPage)
    page.mode = "quick"
    for r in (SimpleNamespace(id="w-f4", mode="quick"), SimpleNamespace(id="w-f4", mode="paper")):
        with page.drawing(r):
            assert plotting.plotted_result() is r
        assert plotting.plotted_result() is None


def _run_page(name: str, shell) -> None:
    """Run the code cells of ``notebooks/<name>.ipynb`` in ``shell`` (its parameters: quick mode),
    leaving out a cell that starts a subprocess (the audit page's command-line example)."""
    cells = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]
    for c in cells:
        src = "".join(c["source"])
        if c["cell_type"] != "code" or "subprocess.run(" in src:
            continue
        res = shell.run_cell(src, silent=True)
        if res.error_in_exec is not None:
            if isinstance(res.error_in_exec, pytest.skip.Exception):
                raise res.error_in_exec
            raise AssertionError(f"{name}: {src[:80]!r} failed") from res.error_in_exec


@pytest.mark.parametrize("experiment_id", sorted(base.all_experiments()))
def test_every_figure_of_an_experiment_page_names_the_stored_result_it_plots(experiment_id, tmp_path, monkeypatch):
    """Every figure's caption names the mode and commit of the result it plots (the
    acceptance check): the page is run as the book runs it, from stored results only (a result that would
    have to be computed skips the page); each figure it publishes records the result it plots,
    that result is a stored result whose mode and commit the caption names, and the caption is
    report.figure_caption of it."""
    from IPython.core.interactiveshell import InteractiveShell

    def refuse(*a, **k):
        pytest.skip("a result of this page is not stored fresh: the page would compute it")

    monkeypatch.setattr(result_store, "compute", refuse)
    monkeypatch.setenv(plotting.BOOK_DIR_ENV, str(tmp_path))
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: None)
    shell = InteractiveShell.instance()
    try:
        _run_page(experiment_id, shell)
        build = shell.user_ns["prov"]
    finally:
        InteractiveShell.clear_instance()
    records = sorted((tmp_path / plotting.FIGURES_DIR / experiment_id).glob("*-figure-*.layout.json"))
    assert records, f"{experiment_id}: no figure published"
    for f in records:
        rec = json.loads(f.read_text())
        assert rec["result"] is not None, f"{experiment_id}/{f.name} ({rec['function']}): drawn outside page.drawing(result)"
        stored = store.load(rec["result"]["id"], mode=rec["result"]["mode"])
        assert stored is not None and stored.provenance["commit"] == rec["result"]["commit"], (f.name, rec["result"])
        assert rec["caption"] == report.figure_caption(stored, build=build), f.name
        assert rec["caption"].startswith(f"result: {stored.mode} mode, commit {stored.provenance['commit']}")
    # a page whose verdict rows have an estimate shows their forest plot, drawn
    # from the result the reproduction report judged
    from dpcompanion.book import forest
    from dpcompanion.experiments.comparisons import reproduction

    rows = reproduction.report_rows(pages=[experiment_id]) if experiment_id in reproduction.experiments_with_verdicts() \
        else []
    functions = [json.loads(f.read_text())["function"] for f in records]
    if forest.rows_with_estimates(rows):
        forests = [json.loads(f.read_text()) for f in records
                   if json.loads(f.read_text())["function"] == "forest.forest_plot"]
        assert len(forests) == 1, (experiment_id, functions)
        assert forests[0]["result"]["mode"] == rows[0]["result"]["mode"], forests[0]["result"]
