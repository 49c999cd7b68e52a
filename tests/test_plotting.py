"""Figures of :mod:`dpcompanion.book.plotting`: every function that draws a figure returns it
(a notebook's ``display(fig)`` of a function that returns nothing renders the text "None", as
the audit page did), and the audit figure draws the committed full result."""

import ast
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from dpcompanion.book import plotting  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_every_function_that_makes_a_figure_returns_something():
    src = (ROOT / "dpcompanion" / "book" / "plotting.py").read_text()
    missing = []
    for f in ast.parse(src).body:
        if not isinstance(f, ast.FunctionDef):
            continue
        body = ast.get_source_segment(src, f)
        makes = "subplots(" in body or "plt.figure(" in body
        returns = any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(f))
        if makes and not returns:
            missing.append(f.name)
    assert missing == []


def test_audit_figure_is_a_figure_of_the_committed_result():
    P = json.loads((ROOT / "results" / "audit" / "full" / "payload.json").read_text())
    fig = plotting.audit_figure(audits=P["audits"], trainers=["pgd", "momentum", "psgd", "adp"],
                                curve_trainer=P["audits"][-1]["trainer"])
    try:
        assert isinstance(fig, matplotlib.figure.Figure) and len(fig.axes) == 2
        left, right = fig.axes
        assert [t.get_text() for t in left.get_xticklabels()] == ["pgd", "momentum", "psgd", "adp"]
        labels = right.get_legend_handles_labels()[1]
        assert {"Gaussian-DP fit", "threshold test", "exact epsilon of the noise", "claimed (ledger)"} <= set(labels)
    finally:
        plotting.plt.close(fig)
