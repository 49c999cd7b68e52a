"""The code under a figure runs alone.

Each published figure comes with its data file (``<page>-figure-<n>.csv``: dpcompanion.book.figure_files.
figure_data) and a script (``<page>-figure-<n>.py``: figure_files.figure_script) that, run alone on that
file, redraws the figure with matplotlib alone. These tests redraw every plot function's figure
from its data and read the redrawn figure's data back (it must be the same data), and run the
scripts the book publishes in a folder holding only the script and its data, with dpcompanion
not importable.
"""

from __future__ import annotations

import ast
import csv
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dpcompanion.book import figure_files, forest, plotting, wu_figures  # noqa: E402
from test_plotting import CASES, EXTRA, _forest_rows  # noqa: E402

NUMERIC = ("x", "y", "x_low", "x_high", "y_low", "y_high", "value")

#: run a script as a reader would, where dpcompanion is not installed: isolated mode (no
#: PYTHONPATH, no user site, not the caller's folder), and any import of dpcompanion refused
#: (the virtualenv holds it as an editable install, which isolated mode still sees)
BOOT = """
import importlib.abc, runpy, sys
class NoDpcompanion(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "dpcompanion" or name.startswith("dpcompanion."):
            raise ModuleNotFoundError("dpcompanion is not installed here", name=name)
sys.meta_path.insert(0, NoDpcompanion())
try:
    import dpcompanion
except ModuleNotFoundError:
    pass
else:
    raise SystemExit("dpcompanion is importable")
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_figure_script(script: Path, data: Path, folder: Path) -> subprocess.CompletedProcess:
    """Copy ``script`` and its ``data`` file alone into ``folder`` and run the script there, as
    a reader who downloaded both would (``python <page>-figure-<n>.py``), without dpcompanion."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(script, folder / script.name)
    shutil.copy(data, folder / data.name)
    return subprocess.run([sys.executable, "-I", "-c", BOOT, script.name], cwd=folder, capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"})


def data_counts(data: Path) -> str:
    """What a figure's data file holds, as the script prints what it drew: panels, series (a
    panel's series of one kind) and points (data rows)."""
    rows = list(csv.DictReader(data.open()))
    points = [r for r in rows if r["kind"] in figure_files.DATA_KINDS]
    return (f"panels {sum(r['kind'] == 'panel' for r in rows)}, "
            f"series {len({(r['panel'], r['series'], r['kind']) for r in points})}, points {len(points)}")


def imports_dpcompanion(source: str) -> bool:
    """Whether the code of a script (comments aside) imports dpcompanion."""
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if any(n.split(".")[0] == "dpcompanion" for n in names):
            return True
    return False


def _close(a: str, b: str) -> bool:
    fa, fb = figure_files.data_value(a), figure_files.data_value(b)
    if isinstance(fa, str) or isinstance(fb, str):
        return a == b
    return bool(np.isclose(fa, fb, rtol=1e-9, atol=1e-12, equal_nan=True))


@pytest.mark.parametrize("name", sorted({**CASES, **EXTRA}))
def test_the_redrawn_figure_plots_the_same_data(name, tmp_path):
    """Redrawing a figure from its data file (figure_files.redraw, the code every
    script carries) gives a figure whose data, read back with figure_data, is the data file's:
    every panel with its labels, scales, limits and ticks, every series by kind, error bars,
    bars, cells and texts, and the legends' entries."""
    fig = {**CASES, **EXTRA}[name]()
    data = figure_files.write_figure_data(fig, tmp_path / "figure-1.csv")
    plt.close(fig)
    rows = figure_files.read_figure_data(data)
    again, counts = figure_files.redraw(rows)
    try:
        back = [{k: str(v) for k, v in r.items()} for r in figure_files.figure_data(again)]
    finally:
        plt.close(again)
    for kind in (*figure_files.DATA_KINDS, "legend", "xtick", "ytick"):
        want = [r for r in rows if r["kind"] == kind]
        got = [r for r in back if r["kind"] == kind]
        assert len(got) == len(want), f"{name}: {len(want)} {kind} rows drawn as {len(got)}"
        for w, g in zip(want, got):
            for col in ("panel", "x_axis", "y_axis", "x_scale", "y_scale", "series", "point", "text"):
                assert w[col] == g[col], (name, kind, col, w[col], g[col])
            for col in NUMERIC:
                assert _close(w[col], g[col]), (name, kind, w["series"], w["point"], col, w[col], g[col])
            if kind in ("line", "errorbar", "scatter", "bar", "text"):
                assert (w["color"], w["style"]) == (g["color"], g["style"]), (name, kind, w["series"])
            if kind == "legend":  # an entry is redrawn as a line or a patch of the handle's look
                look = lambda r: (r["color"], {k: v for k, v in figure_files.parse_style(r["style"]).items()  # noqa: E731
                                               if k in ("marker", "linestyle")})
                assert look(w) == look(g), (name, w["text"])
    panels = [r for r in rows if r["kind"] == "panel"]
    for w in panels:  # a heatmap's colour bar takes room from its panel: limits and scales only
        g = next(r for r in back if r["kind"] == "panel" and r["panel"] == w["panel"])
        assert all(_close(w[c], g[c]) for c in ("x_low", "x_high", "y_low", "y_high")), (name, w["panel"])
    assert f"panels {counts['panels']}, series {counts['series']}, points {counts['points']}" == data_counts(data)


def test_panels_sharing_a_title_are_redrawn_apart(tmp_path):
    """Two panels with one title (the tuning traces' "N = 250" over T and over gamma) are two
    panels in the data file ("N = 250 #1", "N = 250 #2") and in the redraw, each titled as drawn
    and holding its own line, not one panel drawn over twice."""
    fig, axes = plt.subplots(1, 3, figsize=(7, 2.5))
    for ax, x, title in zip(axes, ([1, 2], [3, 4, 5], [6]), ("N = 250", "N = 250", "N = 500")):
        ax.plot(x, [0.5] * len(x))
        ax.set_title(title)
    data = figure_files.write_figure_data(fig, tmp_path / "figure-1.csv")
    plt.close(fig)
    rows = figure_files.read_figure_data(data)
    assert [r["panel"] for r in rows if r["kind"] == "panel"] == ["N = 250 #1", "N = 250 #2", "N = 500"]
    again, counts = figure_files.redraw(rows)
    try:
        assert [ax.get_title() for ax in again.axes] == ["N = 250", "N = 250", "N = 500"]
        assert [len(ax.lines[0].get_xdata()) for ax in again.axes] == [2, 3, 1]
    finally:
        plt.close(again)
    assert (counts["panels"], counts["series"], counts["points"]) == (3, 3, 6)


def test_errorbars_keep_both_ends_and_the_grid_keeps_its_labels(tmp_path):
    """The w-t1245 figure (wu_gap_grid) draws horizontal error bars (+- 2 se): its
    data file keeps their ends (x_low, x_high), each cell's label (ytick rows) and both axes;
    a vertical error bar's ends are y_low, y_high."""
    cells = [("eps 0.5, C 1", 0.5, 0.2, 1.0), ("eps 2, C 1", -0.3, 0.1, None), ("eps 8, C 3", 1.0, float("nan"), 2.0)]
    fig = wu_figures.wu_gap_grid(cells=cells)
    rows = figure_files.figure_data(fig)
    plt.close(fig)
    bars = [r for r in rows if r["kind"] == "errorbar"]
    ends = [float(r[k]) for r in bars for k in ("x_low", "x_high")]
    assert ends == pytest.approx([0.1, 0.9, -0.5, -0.1, 1.0, 1.0])  # a missing se: a bar of length 0
    assert [r["text"] for r in rows if r["kind"] == "ytick"] == [c[0] for c in cells]
    assert {r["x_axis"] for r in bars} == {"ADP-SGD minus DP-SGD accuracy (points)"}
    panel = next(r for r in rows if r["kind"] == "panel")
    assert float(panel["y_low"]) > float(panel["y_high"])  # the inverted axis: first cell on top
    fig = CASES["efficiency_figure"]()
    bars = [r for r in figure_files.figure_data(fig) if r["kind"] == "errorbar"]
    plt.close(fig)
    assert all(r["x_low"] == "" and float(r["y_low"]) < float(r["y"]) < float(r["y_high"]) for r in bars)


def test_the_forest_plot_keeps_its_rows_labels_colours_and_legend():
    """A forest plot's data names each row (ytick rows: the labels), draws each in
    its verdict's colour and keeps the figure's legend (verdicts and marks)."""
    fig = forest.forest_plot(rows=_forest_rows(), title="every verdict row")
    rows = figure_files.figure_data(fig)
    plt.close(fig)
    labels = [r["text"] for r in rows if r["kind"] == "ytick"]
    assert len(labels) == forest.rows_with_estimates(_forest_rows()) and labels[0].startswith("h-f-eff: ")
    assert len({r["panel"] for r in rows if r["kind"] == "ytick"}) == len(forest.panels(forest.forest_rows(_forest_rows())))
    legend = [r for r in rows if r["kind"] == "legend"]
    assert {r["panel"] for r in legend} == {""} and "reproduced" in [r["text"] for r in legend]
    reproduced = next(r for r in rows if r["kind"] == "line" and "| reproduced |" in r["series"])
    assert reproduced["color"] == forest.VERDICT_COLORS["reproduced"]


def _publish(tmp_path, monkeypatch, page: str, draw) -> list[Path]:
    """Draw with ``draw`` in a book notebook (an IPython shell, a Provenance started, the
    runner's folder named, as tests/test_plotting.py does) and return the scripts written."""
    from IPython.core.interactiveshell import InteractiveShell

    from dpcompanion.core.provenance import Provenance

    shell = InteractiveShell.instance()
    monkeypatch.setenv(plotting.BOOK_DIR_ENV, str(tmp_path / "book"))
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: None)
    try:
        shell.user_ns["prov"] = Provenance.start(notebook=page, mode="quick", seed=0, device="cpu")
        draw()
    finally:
        InteractiveShell.clear_instance()
    return sorted((tmp_path / "book" / plotting.FIGURES_DIR / page).glob("*-figure-*.py"))


#: a figure of each kind, drawn as the pages draw them
PUBLISHED = {
    "lines, a legend and a log axis": CASES["theory_schedules"],
    "two panels (the landing figure)": CASES["landing_figure"],
    "error bars": CASES["efficiency_figure"],
    "bars": CASES["bench_throughput"],
    "a heatmap": CASES["breakdown_figure"],
    "reference lines and segments": CASES["audit_figure"],
    "a twin axis": CASES["wu_error_vs_epoch"],
    "the forest plot": lambda: forest.forest_plot(rows=_forest_rows(), title="every verdict row"),
    "wu_gap_grid (w-t1245)": CASES["wu_gap_grid"],
}


@pytest.mark.parametrize("kind", list(PUBLISHED))
def test_the_published_script_redraws_the_figure_alone(kind, tmp_path, monkeypatch):
    """Acceptance: the code link, run alone on the data link, redraws the
    figure: publish writes <page>-figure-<n>.py, which never imports dpcompanion; run with python in
    a folder holding only it and <page>-figure-<n>.csv, where dpcompanion cannot be imported, it exits
    0, writes <page>-figure-<n>.png and says it drew every panel, series and point of the data file.
    The script keeps its provenance: the plot function and the notebook cell, as comments."""
    scripts = _publish(tmp_path, monkeypatch, "h-f-eff", PUBLISHED[kind])
    assert len(scripts) == 1
    script = scripts[0]
    data = script.with_suffix(".csv")
    source = script.read_text()
    assert not imports_dpcompanion(source) and figure_files.REDRAW_SOURCE in source
    fn = plotting.FIGURES.get(source.split("dpcompanion.book.")[1].split(" ")[0].split(".")[-1])
    assert fn is not None and f"# def {fn.__name__}(" in source
    run = run_figure_script(script, data, tmp_path / "alone")
    assert run.returncode == 0, run.stderr[-2000:]
    png = tmp_path / "alone" / script.with_suffix(".png").name
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert run.stdout.splitlines()[0] == data_counts(data)


def test_the_points_file_holds_each_mean_its_se_and_n(tmp_path, monkeypatch):
    """Beside the drawing's data, a figure of means publishes ``<page>-figure-<n>.points.csv``: one row per
    mean drawn, with the axes' labels as its variables, the standard error (the bar is 2 SE, as drawn) and
    the sample size; the categories of a category axis by name. A figure of no means publishes none."""
    from dpcompanion.book import hong_figures

    N, loss, se = [200, 600, 1000], {"uni": [0.5, 0.4, 0.3], "exp": [0.45, 0.35, 0.3]}, [0.01, 0.02, 0.03]
    _publish(tmp_path, monkeypatch, "h-f-eff", lambda: hong_figures.efficiency_figure(
        N=N, loss=loss, loss_se={k: se for k in loss}, acc=loss, acc_se={k: se for k in loss}, n=40))
    folder = tmp_path / "book" / plotting.FIGURES_DIR / "h-f-eff"
    (points,) = folder.glob("h-f-eff-figure-*.points.csv")  # the figure's number: as many as published so far
    rows = list(csv.DictReader(points.open()))
    assert len(rows) == 2 * 2 * 3  # two panels, two schedules, three N
    uni = [r for r in rows if r["series"] == "uni" and r["y_variable"] == "final training loss"]
    assert [float(r["x"]) for r in uni] == N and [float(r["value"]) for r in uni] == loss["uni"]
    assert {r["statistic"] for r in rows} == {"mean"}
    assert [float(r["se"]) for r in uni] == se and {r["n"] for r in rows} == {"40"} and {r["bar"] for r in rows} == {"2 SE"}
    assert {r["x_variable"] for r in rows} == {"number of training samples N"}
    drawn = list(csv.DictReader(points.with_name(points.name.replace(".points", "")).open()))  # the bars drawn are those 2 SE
    bars = [r for r in drawn if r["kind"] == "errorbar" and r["series"] == "uni" and r["y_axis"] == "final training loss"]
    assert np.allclose([float(r["y_high"]) - float(r["y"]) for r in bars], [2 * s for s in se])

    cells = [("eps 0.8, C 1, 60 ep.", 1.5, 0.25, 7.0), ("eps 3.2, C 1, 60 ep.", -0.5, 0.5, None)]
    _publish(tmp_path, monkeypatch, "w-t1245", lambda: wu_figures.wu_gap_grid(cells=cells, n=[20, 5]))
    (points,) = (tmp_path / "book" / plotting.FIGURES_DIR / "w-t1245").glob("*.points.csv")
    rows = list(csv.DictReader(points.open()))
    ours = [r for r in rows if r["statistic"] == "mean"]
    assert [(r["x"], float(r["value"]), float(r["se"]), r["n"]) for r in ours] == [
        (c[0], c[1], c[2], n) for c, n in zip(cells, ("20", "5"))]
    assert {r["x_variable"] for r in rows} == {"cell"}  # the category axis named, not left empty
    assert ours[0]["y_variable"] == "ADP-SGD minus DP-SGD accuracy (points)"
    paper = [r for r in rows if r["statistic"] == "paper's value"]
    assert [(r["x"], r["value"]) for r in paper] == [(cells[0][0], "7.0"), (cells[1][0], "")]

    # a forest plot: one row per verdict row, its estimate and 95% interval in its panel's units
    _publish(tmp_path, monkeypatch, "verdicts", PUBLISHED["the forest plot"])
    (points,) = (tmp_path / "book" / plotting.FIGURES_DIR / "verdicts").glob("*.points.csv")
    rows = list(csv.DictReader(points.open()))
    frows = forest.forest_rows(_forest_rows())
    assert len(rows) == len(frows) and {r["x_variable"] for r in rows} == {"verdict row"}
    assert [float(r["value"]) for r in rows] == pytest.approx([f["estimate"] * f["factor"] for _, fs in
                                                              forest.panels(frows) for f in fs])
    sign = next(r for r in rows if r["x"].startswith("w-t1245"))
    assert (float(sign["low"]), float(sign["high"]), sign["bar"]) == (0.2, 1.8, "95% interval")
    assert "verdict sign only" in sign["note"] and "paper_value 7.5" in sign["note"]


@pytest.mark.parametrize("name", sorted({**CASES, **EXTRA}))
def test_every_figure_offers_a_tidy_points_file_with_its_x_variable_named(name, tmp_path):
    """Every plot function the book calls (one case each: test_plotting checks the cases cover
    plotting.FIGURES) writes a points file: one row per plotted point with its series, its x variable
    named (never empty), its y variable and the value; a bar's ends where one is drawn."""
    fig = {**CASES, **EXTRA}[name]()
    try:
        path = figure_files.write_points(fig, tmp_path / "f.points.csv")
    finally:
        plt.close(fig)
    assert path is not None, f"{name} offers no points file"
    rows = list(csv.DictReader(path.open()))
    assert rows and list(rows[0]) == list(figure_files.POINT_COLUMNS)
    empty = sorted({(r["panel"], r["series"]) for r in rows if not r["x_variable"].strip()})
    assert not empty, f"{name}: no x variable for {empty[:5]}"
    assert all(r["y_variable"].strip() or r["statistic"] == "cell value" for r in rows), name
    assert all(r["series"] and r["statistic"] for r in rows), name
    # a bar is named where its ends are given (2 SE, 1 sd, a 95% interval, as drawn), and only there
    assert all((r["low"] != "" or r["high"] != "") == bool(r["bar"]) for r in rows), name
