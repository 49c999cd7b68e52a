"""The book's figures (dpcompanion.book.plotting): every plot function is drawn on inputs of
the sizes the pages use, and each figure must be readable where the book shows it (text at
least MIN_FONT_PT once scaled into the text column, no overlapping tick labels), and the data
it publishes is what it draws."""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

from dpcompanion.book import (figure_files, forest, hong_figures, library_figures, plotting,  # noqa: E402
                              theory_figures, wu_figures)

#: the modules of plot functions, one per family of pages: importing them fills plotting.FIGURES
FIGURE_MODULES = (theory_figures, hong_figures, wu_figures, library_figures, forest)

REPO = Path(__file__).resolve().parents[1]
rng = np.random.default_rng(0)
t50 = np.arange(1, 51)


def _eer_comp(kappa):
    T = np.arange(1, 101)
    comp = {"T": T, "constants": {"kappa": kappa}}
    for k, c in (("uniform", 1.0), ("gd-dynamic", 0.8), ("exponential", 0.9)):
        exact = c * (0.9 ** T + 0.01 * T)
        comp[k] = {"exact": exact, "bound": 2 * exact, "T_bound": 20, "exact_at_T_bound": exact[19], "T_exact": 10,
                   "exact_min": exact.min()}
    return comp


def _audits():
    out = []
    for tr in ("pgd", "psgd", "momentum"):
        for S in (0.25, 0.5, 1.0):
            gdp = None if tr == "psgd" else 1.45 / S  # the audit fits no Gaussian-DP curve under sampling
            out.append({"trainer": tr, "noise_multiplier_scale": S, "epsilon_claimed": 2.0,
                        "epsilon_lower": max(gdp or 0.0, 0.6 / S), "epsilon_lower_gdp": gdp,
                        "epsilon_lower_threshold": 0.6 / S, "epsilon_exact": 1.55 / S, "epsilon_actual": 2.0 / S})
    return out


def _tuning_entries():
    from dpcompanion.experiments.protocols import tuning

    out = []
    for i in range(8):  # as many cells as the w-t36 page draws
        _, p = tuning.tune(lambda cs: [-c["T"] for c in cs], {"T": [50, 100, 150]}, stated={"T": {"high": "stated"}})
        _, b = tuning.tune(lambda cs: [abs(c["T"] - 200) for c in cs], {"T": [50, 100, 150]})
        for m in ("uni", "exp"):
            out += (tuning.record(p, method=m, tuning_seeds=[1], report_seeds=[2], cell=f"N = {1000 * (i + 1)}")
                    + tuning.record(b, method=m, tuning_seeds=[1], report_seeds=[2], cell=f"N = {1000 * (i + 1)}",
                                    setting="beyond"))
    return out


def _panels(xs):
    return {f"T = {T}": {"x": xs, "dashed": np.linspace(0, 1, len(xs)),
                         "curves": {k: (rng.normal(0, 0.1, len(xs)), np.full(len(xs), 0.02)) for k in ("exp", "dyn")}}
            for T in (50, 100, 150)}


def _forest_rows():
    """Verdict rows shaped as the reproduction report's: both papers, every verdict,
    a direction-only row, a margin, a row without an estimate and one without the newer fields."""
    def row(page, item, verdict, est, lo, hi, paper=None, **kw):
        units = kw.pop("units", "training loss (nats)" if page == "h-f-eff" else None)
        return {"page": page, "item": item, "verdict": verdict, "paper_value": paper, "units": units,
                "ours": {"estimate": est, "ci_low": lo, "ci_high": hi}, "result": {"mode": "full"},
                "at_paper_scale": kw.pop("at", False), **kw}
    return [row("h-f-eff", "final training loss, exp vs uni, by N (T beyond the paper's range)", "reproduced",
                0.02, 0.01, 0.03, at=True),
            row("h-f-eff", "test accuracy, exp vs uni, by N", "not reproduced", -0.01, -0.015, -0.005),
            row("h-f-curv", "M = 1: trainer mean vs exact E[f]", "inconclusive", 0.1, -0.2, 0.4, margin=0.3),
            row("w-t1245", "Table 1: gain ADP - DP, linear-sqrt, C_G 1, eps_bar 0.8", "sign only", 1.0, 0.2, 1.8,
                paper=7.5, comparable="direction", units="points of accuracy"),
            row("w-eps", "epsilon_bar = 0.8", "reproduced", 0.79, 0.79, 0.79, paper=0.8, margin=0.01, at=None),
            {"page": "accounting", "item": "R = 2 rho", "verdict": "holds by construction", "ours": {"estimate": 3.1}},
            row("audit", "pgd: (2, 1e-05)-DP", "not judged", None, None, None)]


#: one call per plot function, with inputs shaped like the pages' (the names must cover FIGURES)
CASES = {
    "landing_figure": lambda: theory_figures.landing_figure(
        t=t50, schedules={"uniform": np.full(50, 3.0), "dynamic, kappa = 3": np.linspace(5, 1, 50),
                          "dynamic, kappa = 30": np.linspace(8, 1, 50)},
        T_grid=np.arange(1, 101), erub_curves={"uniform": np.linspace(1, 0.2, 100), "dynamic": np.linspace(1, 0.1, 100)},
        optima={"uniform": (60, 0.3), "dynamic": (80, 0.15)}, kappa_erub=10),
    "schedule_gallery": lambda: theory_figures.schedule_gallery(t=t50, gallery={
        k: {f"{k} {i}": np.linspace(1 + i, 2, 50) for i in range(3)} for k in ("uniform", "gd-dynamic", "exp", "step", "adp")}),
    "unused_budget_figure": lambda: theory_figures.unused_budget_figure(
        epsilons=np.geomspace(0.1, 10, 30), budgets={"zCDP": np.geomspace(0.01, 10, 30), "exact": np.geomspace(0.02, 12, 30),
                                                    "RDP": np.geomspace(0.015, 11, 30)}, delta=1e-5, anchor_epsilon=1.0),
    "theory_schedules": lambda: theory_figures.theory_schedules(t=t50, uniform=np.full(50, 3.0),
                                                          dynamic={3.0: np.linspace(5, 1, 50), 30.0: np.linspace(9, 1, 50)}),
    "theory_erub_vs_T": lambda: theory_figures.theory_erub_vs_T(
        T=np.arange(1, 201), uniform=np.linspace(1, 0.3, 200), dynamic=np.linspace(1, 0.2, 200),
        argmin={"uniform": (120, 0.4), "dynamic": (150, 0.25)}, marks={"Eq. 24": 100, "Eq. 27": 140}, kappa=10, alpha=1e-3),
    "theory_erub_min": lambda: theory_figures.theory_erub_min(
        N=np.geomspace(1e2, 1e6, 20), alpha=np.geomspace(1e-2, 1e-6, 20), uniform=np.geomspace(1, 1e-4, 20),
        dynamic=np.geomspace(0.9, 1e-4, 20), kappa=10,
        by_kappa={"kappa": np.geomspace(1.5, 1e3, 20), "uniform": np.geomspace(0.1, 1, 20),
                  "eq25": np.geomspace(0.12, 2, 20), "dynamic": np.geomspace(0.08, 0.9, 20)}),
    "theory_T_vs_kappa": lambda: theory_figures.theory_T_vs_kappa(
        kappa=np.geomspace(1.5, 1e3, 15), curves={"uniform, exact": np.geomspace(2, 300, 15),
                                                  "uniform, Eq. 24 (statement)": np.geomspace(3, 320, 15),
                                                  "dynamic, exact": np.geomspace(2, 500, 15),
                                                  "dynamic, Eq. 27": np.geomspace(3, 520, 15)}),
    "theory_table_rows": lambda: theory_figures.theory_table_rows(
        N=np.geomspace(1e3, 1e12, 20), rows={f"GD+zCDP, Dynamic Schedule [uniform-stability] {i}{' (ours)' if i % 2 else ''}":
                                             np.geomspace(1, 10.0 ** -(3 * i), 20) for i in range(1, 10)},
        title="Table 2 rows (printed, constants 1) and the derived stability bound"),
    "momentum_influence": lambda: theory_figures.momentum_influence(
        t=np.arange(1, 101), curves={"exact": np.geomspace(1e-3, 1, 100), "paper": np.geomspace(2e-3, 1, 100),
                                     "slides": np.geomspace(5e-3, 1, 100)}, T_hat=40),
    "momentum_erub_vs_T": lambda: theory_figures.momentum_erub_vs_T(
        T=np.arange(1, 201), curves={"uniform": np.linspace(1, 0.3, 200) + np.linspace(0, 0.2, 200) ** 2,
                                     "dynamic": np.linspace(1, 0.2, 200)}, T_hat=80),
    "adp_stepsizes": lambda: theory_figures.adp_stepsizes(families={
        "1/sqrt(20 + t)": (np.arange(1, 39201), 1 / np.sqrt(20 + np.arange(1, 39201))),
        "0.1 - a_T sqrt(t), 200 epochs": (np.arange(1, 39202), np.linspace(0.1, 0.001, 39201))}),
    "adp_ratio_vs_T": lambda: theory_figures.adp_ratio_vs_T(
        T=np.geomspace(10, 1e5, 12), curves={"M_dp/M_adp": np.linspace(1, 1.4, 12), "printed bounds": np.linspace(1, 2, 12)}),
    "unify_allocation": lambda: theory_figures.unify_allocation(points={
        "Hong": (np.geomspace(1e-3, 1, 50), np.geomspace(30, 1, 50)), "Wu": (np.geomspace(1e-2, 1, 40), np.geomspace(10, 1, 40))}),
    "eer_vs_T_figure": lambda: hong_figures.eer_vs_T_figure(
        comparisons={"MNIST35, data scale 1": _eer_comp(30.0), "MNIST35, data scale 10": _eer_comp(3000.0)},
        logx=("MNIST35, data scale 10",)),
    "eer_tightness_figure": lambda: hong_figures.eer_tightness_figure(
        kappas=np.geomspace(2, 1e4, 8), ratios={k: np.geomspace(1.2, 50, 8) for k in ("uniform", "gd-dynamic", "exponential")}),
    "influence_figure": lambda: hong_figures.influence_figure(
        steps=np.arange(1, 101), retrained=np.geomspace(1e-6, 1e-2, 100) * (1 - 2 * (np.arange(100) < 3)),
        retrained_se=np.full(100, 1e-6), analytic=np.geomspace(1e-6, 1e-2, 100), theory=np.geomspace(1e-6, 1e-2, 100),
        title="squared loss, MNIST35 (quick: T = 100, 20 repeats)"),
    "influence_fit_figure": lambda: hong_figures.influence_fit_figure(
        levels=np.linspace(0, 3, 7), losses={f"t = {t}": rng.normal(1, 0.1, (7, 10)) for t in (10, 50, 90)},
        fits={f"t = {t}": (0.01, 1.0) for t in (10, 50, 90)}),
    "tuning_trace": lambda: library_figures.tuning_trace(entries=_tuning_entries(), max_cells=8),
    "audit_figure": lambda: library_figures.audit_figure(audits=_audits(), trainers=["pgd", "psgd", "momentum"],
                                                  curve_trainer="momentum"),
    "wu_noise_privacy": lambda: wu_figures.wu_noise_privacy(
        t=np.arange(1, 1001), noise={"dp": np.geomspace(1e-2, 1e-3, 1000), "adp": np.geomspace(2e-2, 1e-3, 1000)},
        eps={"dp": np.linspace(0, 2, 1000), "adp": np.linspace(0, 2, 1000)}),
    "wu_accuracy_curves": lambda: wu_figures.wu_accuracy_curves(
        steps=np.arange(0, 1001, 50), acc={"dp": rng.normal(80, 1, (3, 21)), "adp": rng.normal(82, 1, (3, 21))}),
    "efficiency_figure": lambda: hong_figures.efficiency_figure(
        N=[600, 800, 1000, 1200, 1400, 1600, 2000], loss={k: np.linspace(0.5, 0.3, 7) for k in ("uni", "exp")},
        loss_se={k: np.full(7, 0.01) for k in ("uni", "exp")}, acc={k: np.linspace(0.8, 0.9, 7) for k in ("uni", "exp")},
        acc_se={k: np.full(7, 0.01) for k in ("uni", "exp")}, title="MNIST35, DNN 100 hidden (full mode; bars: 2 SE)"),
    "relative_loss_figure": lambda: hong_figures.relative_loss_figure(panels=_panels([1, 5, 10, 25, 50])),
    "curvature_figure": lambda: hong_figures.curvature_figure(
        curves={f"M = {m}": np.abs(rng.normal(1, 0.2, (30, 200))) * np.geomspace(1, 1e-2, 200) for m in (1, 10, 100)},
        means={f"M = {m}": 0.01 * m for m in (1, 10, 100)}, steps=np.arange(1, 201)),
    "wu_gap_grid": lambda: wu_figures.wu_gap_grid(cells=[(f"eps {e:g}, C {c:g}, {ep} ep.", 0.5, 0.2, 1.0 if c < 2 else None)
                                                       for e in (0.5, 2, 8) for c in (1, 3) for ep in (30, 60)]),
    "wu_error_vs_epoch": lambda: wu_figures.wu_error_vs_epoch(
        epochs=np.arange(1, 61), errors={"0": np.linspace(50, 20, 60), "0.5": np.linspace(50, 18, 60)},
        eps_numeric=np.linspace(0, 3, 60), eps_theory=np.linspace(0, 4, 60), sigma=1.1),
    "momentum_schedules_figure": lambda: hong_figures.momentum_schedules_figure(panels=_panels([5, 10, 25])),
    "breakdown_figure": lambda: hong_figures.breakdown_figure(
        kappas=[1.3, 3, 10, 100], Ts=[10, 30, 100], ratio=[[70, 1.1, 1.5, 1], [2.5e9, 16, 0.87, 1], [6e31, 2.3e9, 8.9, 1.1]],
        span=[[50, 5, 2, 1], [1e4, 30, 3, 1], [1e15, 1e4, 30, 2]], max_span=20, clip_label="(clip 4)"),
    "bench_throughput": lambda: library_figures.bench_throughput(
        methods=["ours (dpcompanion, ghost norms)", "Opacus ghost", "Opacus hooks", "Opacus functorch", "Opacus ew"],
        single=[153.0, 61.4, 3.34, 3.54, 3.25], batched=[163.5, 64.2, 3.74, float("nan"), 3.29], runs=32,
        title="cpu-quick.json: throughput per method (cpu, quick mode)"),
    "forest_plot": lambda: forest.forest_plot(rows=_forest_rows(), title="h-f-eff: every verdict row"),
}
#: cases drawn a second way (quick-mode shapes that once produced a defect)
EXTRA = {
    "breakdown_figure, full grid": lambda: hong_figures.breakdown_figure(
        kappas=[1.2, 1.5, 2, 3, 5, 10, 30, 100, 300], Ts=[10, 20, 50, 100, 200],
        ratio=np.geomspace(4e77, 1, 45).reshape(5, 9), span=np.geomspace(1e38, 1, 45).reshape(5, 9), max_span=20),
    "momentum_schedules_figure, one data scale (quick)": lambda: hong_figures.momentum_schedules_figure(panels=_panels([25])),
    "efficiency_figure, quick N": lambda: hong_figures.efficiency_figure(
        N=[200, 600], loss={"uni": [0.47, 0.56], "exp": [0.45, 0.53]}, loss_se={"uni": [0.01, 0.01], "exp": [0.01, 0.01]},
        acc={"uni": [0.8, 0.85], "exp": [0.81, 0.86]}, acc_se={"uni": [0.01, 0.01], "exp": [0.01, 0.01]}),
}


def test_every_module_of_plot_functions_is_drawn_here():
    """plotting.py is split by page family: plotting.FIGURES holds the plot functions
    of the modules imported, so every module of the book that declares one (with
    plotting.figure_function) must be in FIGURE_MODULES, and each of those declares one."""
    book = REPO / "dpcompanion" / "book"
    declaring = {f"dpcompanion.book.{f.stem}" for f in book.glob("*.py") if f.name != "plotting.py"
                 and "figure_function\ndef " in f.read_text()}
    assert declaring == {m.__name__ for m in FIGURE_MODULES}
    assert {fn.__module__ for fn in plotting.FIGURES.values()} == declaring


def test_every_plot_function_has_a_case():
    assert set(CASES) == set(plotting.FIGURES), (
        f"no case for {sorted(set(plotting.FIGURES) - set(CASES))}; unknown {sorted(set(CASES) - set(plotting.FIGURES))}")


@pytest.mark.parametrize("name", sorted({**CASES, **EXTRA}))
def test_figure_is_readable_where_the_book_shows_it(name):
    """Text >= MIN_FONT_PT CSS points once scaled to the text column, no overlapping tick
    labels (their drawn bounding boxes), at least one datum published."""
    fig = {**CASES, **EXTRA}[name]()
    try:
        assert fig is not None, f"{name} returned no figure"
        problems = plotting.figure_problems(fig)
        assert not problems, f"{name}: {problems}"
        assert figure_files.figure_data(fig), f"{name}: nothing plotted"
    finally:
        plt.close(fig)


def test_the_layout_check_catches_small_text_and_overlapping_ticks():
    fig, ax = plt.subplots(figsize=(12, 3))  # shrunk to the column: its 9 pt text shows at ~5 pt
    ax.plot([1, 2], [1, 2])
    assert any("pt as shown" in p for p in plotting.figure_problems(fig))
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_xticks(np.arange(30), [f"label {i}" for i in range(30)])
    assert any("overlap" in p for p in plotting.figure_problems(fig))
    plt.close(fig)


def test_figure_data_is_what_is_drawn(tmp_path):
    fig = CASES["efficiency_figure"]()
    rows = list(csv.DictReader(figure_files.write_figure_data(fig, tmp_path / "f.csv").open()))
    plt.close(fig)
    bars = [r for r in rows if r["kind"] == "errorbar" and r["series"] == "uni" and r["y_axis"] == "final training loss"]
    assert [float(r["x"]) for r in bars] == [600, 800, 1000, 1200, 1400, 1600, 2000]
    assert np.allclose([float(r["y"]) for r in bars], np.linspace(0.5, 0.3, 7))
    assert np.allclose([float(r["y_high"]) - float(r["y"]) for r in bars], 0.02)  # 2 SE bars
    fig = CASES["breakdown_figure"]()
    cells = [r for r in figure_files.figure_data(fig) if r["kind"] == "cell"]
    plt.close(fig)
    assert len(cells) == 2 * 12 and {c["x"] for c in cells} == {"1.3", "3", "10", "100"}


def test_repository_url_is_the_books():
    cfg = yaml.safe_load((REPO / "_config.yml").read_text())
    assert cfg["repository"]["url"] == plotting.REPOSITORY_URL


def test_publish_writes_data_and_code_beside_the_page(tmp_path, monkeypatch):
    """In a book notebook (an IPython shell, a Provenance started, the runner's folder named)
    a figure is shown with its data (CSV) and code (.py) written under figures/<page>/."""
    from IPython.core.interactiveshell import InteractiveShell

    from dpcompanion.core.provenance import Provenance

    shell = InteractiveShell.instance()
    monkeypatch.setenv(plotting.BOOK_DIR_ENV, str(tmp_path))
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.extend(a))
    try:
        assert plotting.current_provenance() is None  # no page: nothing is published
        shell.user_ns["prov"] = Provenance.start(notebook="h-f-eff", mode="quick", seed=0, device="cpu")
        CASES["efficiency_figure"]()
    finally:
        InteractiveShell.clear_instance()
    folder = tmp_path / plotting.FIGURES_DIR / "h-f-eff"
    n = max(int(p.stem.rsplit("-", 1)[1]) for p in folder.glob("h-f-eff-figure-*.py"))
    assert (folder / f"h-f-eff-figure-{n}.csv").read_text().startswith("panel,")
    code = (folder / f"h-f-eff-figure-{n}.py").read_text()
    assert "def efficiency_figure" in code and plotting.REPOSITORY_URL in code
    caption = shown[-1].data
    assert f"figures/h-f-eff/h-f-eff-figure-{n}.csv" in caption and "{download}`code" in caption


@pytest.mark.parametrize("name", ["theory_schedules", "efficiency_figure", "wu_gap_grid", "bench_throughput",
                                  "forest_plot"])
def test_the_code_link_names_the_module_and_lines_of_the_plot_function(name, tmp_path, monkeypatch):
    """plotting.py is split by page family: a published figure's code link names its
    plot function as ``<module>.<function>`` of the family module it lives in (one of each
    module here), and the source it points to (path and lines, in the script and the
    repository link) is that function's: the link resolves in this checkout."""
    import re

    from IPython.core.interactiveshell import InteractiveShell

    from dpcompanion.core.provenance import Provenance

    fn = plotting.FIGURES[name]
    module = fn.__module__.rsplit(".", 1)[-1]
    shell = InteractiveShell.instance()
    monkeypatch.setenv(plotting.BOOK_DIR_ENV, str(tmp_path))
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.extend(a))
    try:
        shell.user_ns["prov"] = Provenance.start(notebook="h-f-eff", mode="quick", seed=0, device="cpu")
        CASES[name]()
    finally:
        InteractiveShell.clear_instance()
    (script,) = sorted((tmp_path / plotting.FIGURES_DIR / "h-f-eff").glob("*-figure-*.py"))
    assert f"(`{module}.{name}`, " in shown[-1].data
    assert json.loads(script.with_suffix(".layout.json").read_text())["function"] == f"{module}.{name}"
    drawn = re.search(rf"dpcompanion\.book\.{module}\.{name} \((\S+), lines (\d+)-(\d+)\): ([^\s,]+)", script.read_text())
    assert drawn, script.read_text()[:600]
    rel, first, last, link = drawn.group(1), int(drawn.group(2)), int(drawn.group(3)), drawn.group(4)
    assert rel == f"dpcompanion/book/{module}.py" and link.endswith(f"/{rel}#L{first}-L{last}")
    source = (REPO / rel).read_text()
    lines = source.splitlines()[first - 1:last]
    assert lines[0].endswith("figure_function") and lines[1].startswith(f"def {name}(")
    (node,) = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert last == node.end_lineno  # the whole function, its closing statement on however many lines


def test_a_figure_of_a_stored_result_names_that_result_in_its_caption(tmp_path, monkeypatch):
    """A quick-mode build that draws the committed paper-scale (or full) result labels the
    figure with that result's mode and commit, not "quick mode" alone; outside drawn_from the
    caption names the build only (the caption is report.figure_caption of the
    result, and the layout record names the result)."""
    from types import SimpleNamespace

    from IPython.core.interactiveshell import InteractiveShell

    from dpcompanion.core.provenance import Provenance

    stored = SimpleNamespace(id="h-f-mom", mode="paper", provenance={"commit": "28c07ad"}, payload={})

    shell = InteractiveShell.instance()
    monkeypatch.setenv(plotting.BOOK_DIR_ENV, str(tmp_path))
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.extend(a))
    try:
        prov = shell.user_ns["prov"] = Provenance.start(notebook="h-f-mom", mode="quick", seed=0, device="cpu")
        CASES["efficiency_figure"]()
        plain = shown[-1].data
        with plotting.drawn_from(stored):
            CASES["efficiency_figure"]()
        labelled = shown[-1].data
        CASES["efficiency_figure"]()
        after = shown[-1].data
    finally:
        InteractiveShell.clear_instance()
    assert f"quick mode, commit {prov.commit}" in plain and "result:" not in plain
    assert "result: paper mode, commit 28c07ad; drawn by this build (quick mode" in labelled
    assert "result:" not in after
    folder = tmp_path / plotting.FIGURES_DIR / "h-f-mom"
    code = sorted(folder.glob("*-figure-*.py"))
    assert any("result: paper mode, commit 28c07ad" in c.read_text() for c in code)
    records = [json.loads(f.read_text()) for f in sorted(folder.glob("*-figure-*.layout.json"))]
    assert {"id": "h-f-mom", "mode": "paper", "commit": "28c07ad", "dirty": False} in [r["result"] for r in records]


def test_every_function_that_makes_a_figure_returns_something():
    missing = []
    for module in (plotting, figure_files, *FIGURE_MODULES):
        src = Path(module.__file__).read_text()
        for f in ast.parse(src).body:
            if not isinstance(f, ast.FunctionDef):
                continue
            body = ast.get_source_segment(src, f)
            makes = "subplots(" in body or "plt.figure(" in body
            returns = any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(f))
            if makes and not returns:
                missing.append(f"{module.__name__}.{f.name}")
    assert missing == []


def test_audit_figure_is_a_figure_of_the_committed_result():
    P = json.loads((REPO / "results" / "audit" / "full" / "payload.json").read_text())
    fig = library_figures.audit_figure(audits=P["audits"], trainers=["pgd", "momentum", "psgd", "adp"],
                                       curve_trainer=P["audits"][-1]["trainer"])
    try:
        assert isinstance(fig, matplotlib.figure.Figure) and len(fig.axes) == 2
        left, right = fig.axes
        assert [t.get_text() for t in left.get_xticklabels()] == ["pgd", "momentum", "psgd", "adp"]
        labels = right.get_legend_handles_labels()[1]
        assert {"Gaussian-DP fit", "threshold test", "exact epsilon of the noise", "claimed (ledger)"} <= set(labels)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("name", sorted({**CASES, **EXTRA}))
def test_the_alt_text_says_what_the_figure_shows(name):
    """The alt text's first sentence is a finding read from the plotted data (plotting.finding), not a list
    of axes: every figure of the book has one, before the axes are described."""
    fig = {**CASES, **EXTRA}[name]()
    try:
        said, alt = plotting.finding(fig), plotting.describe_figure(fig)
    finally:
        plt.close(fig)
    assert said and said.endswith(".") and alt.startswith(said), (name, alt[:200])
    assert " | " not in alt, (name, alt[:200])  # a forest's data descriptors are not its alt text


def test_the_finding_follows_the_data():
    """The finding is generated: swap which schedule is lower and the sentence swaps; with the data of the
    reader's example it reads "exp's ... below uni's at every N from 1,000 to 60,000"."""
    N = [1000, 10000, 60000]
    def draw(low, high):
        return hong_figures.efficiency_figure(N=N, loss={"uni": high, "exp": low}, loss_se={k: [0.01] * 3 for k in ("uni", "exp")},
                                              acc={"uni": [0.8] * 3, "exp": [0.81] * 3}, acc_se={k: [0.01] * 3 for k in ("uni", "exp")})
    fig = draw([0.3, 0.25, 0.2], [0.35, 0.3, 0.25])
    first = plotting.finding(fig)
    plt.close(fig)
    assert first.startswith("exp's final training loss below uni's at every number of training samples N from 1,000 "
                            "to 60,000"), first
    fig = draw([0.35, 0.3, 0.25], [0.3, 0.25, 0.2])
    second = plotting.finding(fig)
    plt.close(fig)
    assert second.startswith("uni's final training loss below exp's"), second
    fig = forest.forest_plot(rows=_forest_rows())
    said = plotting.finding(fig)
    plt.close(fig)
    n = forest.rows_with_estimates(_forest_rows())
    assert said.startswith(f"{n} verdict rows on ") and "1 not reproduced" in said, said
