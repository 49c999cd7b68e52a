"""Plot functions of how the library obtained its results: tuning traces, the privacy audit (audit) and
the benchmark (bench).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from dpcompanion.book.figure_files import name_x_variable, record_points
from dpcompanion.book.plotting import COLORS, KIND_COLORS, apply_style, figure_function, finish

# --- tuning traces ---


@figure_function
def tuning_trace(*, entries: list, cells=None, max_cells: int = 6, title: str = "", ylabel: str = "tuning score"):
    """The tuning trace of a tuned experiment: one row of panels per cell, one panel per tuned
    parameter; per method, the best tuning score over the other parameters at each value of
    this one (its profile), the chosen value (star; a circle for the choice within the paper's
    range when a beyond-the-paper setting chose differently) and, dotted, a bound the paper
    stated. ``entries``: the payload's ``tuning`` records
    (:func:`dpcompanion.experiments.protocols.tuning.record`); ``cells``: the cells to draw (default:
    the first ``max_cells``)."""
    apply_style()
    by_cell: dict = {}
    for e in entries:
        by_cell.setdefault(e.get("cell", ""), []).append(e)
    names = list(by_cell) if cells is None else [c for c in cells if c in by_cell]
    names = names[:max_cells]
    params = sorted({e["param"] for c in names for e in by_cell[c]})
    if not names or not params:
        raise ValueError("tuning_trace needs at least one tuning record")
    fig, axes = plt.subplots(len(names), len(params), figsize=(3.6 * len(params), 2.3 * len(names)), squeeze=False)
    for i, cell in enumerate(names):
        es = by_cell[cell]
        for j, par in enumerate(params):
            ax = axes[i][j]
            mine = [e for e in es if e["param"] == par]
            for k, method in enumerate(dict.fromkeys(e["method"] for e in mine)):
                ms = {e["setting"]: e for e in mine if e["method"] == method}
                e = ms.get("beyond", ms.get("paper"))
                cands, scores = e["trace"]["candidates"], np.asarray(e["trace"]["scores"], dtype=float)
                xs = sorted({float(c[par]) for c in cands})
                better = np.nanmin if e.get("minimize", True) else np.nanmax
                prof = [better([s for c, s in zip(cands, scores) if float(c[par]) == x]) for x in xs]
                colour = KIND_COLORS.get(method, f"C{k}")
                ax.plot(xs, prof, "o-", ms=3, color=colour, label=f"{method} ({e['n_candidates']})")
                ch = float(e["chosen"])
                ax.plot([ch], [prof[xs.index(ch)]], "*", ms=11, color=colour)
                paper = ms.get("paper", e)
                if paper is not e and float(paper["chosen"]) != ch:  # the choice within the paper's range
                    pc = float(paper["chosen"])
                    ax.plot([pc], [prof[xs.index(pc)]], "o", ms=8, mfc="none", mec=colour)
                if paper["stated_bound"]:
                    ax.axvline(float(paper["chosen"]), ls=":", color="0.4", lw=1)
            xs_all = [float(c[par]) for e in mine for c in e["trace"]["candidates"]]
            if min(xs_all) > 0 and max(xs_all) / min(xs_all) > 50:
                ax.set_xscale("log")
            ax.set_xlabel(par)
            ax.set_title(cell, fontsize=9)
            ax.legend(fontsize=9)
        axes[i][0].set_ylabel(ylabel)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


# --- empirical privacy audit ---


@figure_function
def audit_figure(*, audits: list, trainers, curve_trainer: str):
    """The audit page's figure; returns it. Left: per trainer, the epsilon its ledger claims,
    the audit's two lower bounds (filled: Gaussian-DP fit, full batch only; open: threshold
    test with Clopper-Pearson intervals) and the epsilon the noise really has (triangles: exact
    Gaussian DP, PLD when subsampled; the most any audit can show), as shipped (S = 1) and at
    the smallest S below 1. Right: both bounds vs S for ``curve_trainer`` against the claim and
    the exact epsilon of the noise used. ``audits``: reports of
    :func:`dpcompanion.training.privacy_audit.run_audit` (``to_dict()``)."""
    apply_style()
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7.0, 7.6))
    by = {(a["trainer"], a["noise_multiplier_scale"]): a for a in audits}
    s_bad = min(s for (_, s) in by if s < 1.0)
    x = np.arange(len(trainers))
    for i, t in enumerate(trainers):
        claim = by[(t, 1.0)]["epsilon_claimed"]
        ax1.hlines(claim, i - 0.38, i + 0.38, color="black", lw=2, label="claimed (ledger)" if i == 0 else None)
        for S, dx, color in ((1.0, -0.14, COLORS["uniform"]), (s_bad, 0.14, COLORS["momentum"])):
            a = by.get((t, S))
            if a is None:
                continue
            if a["epsilon_lower_gdp"] is not None:
                ax1.plot([i + dx], [a["epsilon_lower_gdp"]], "o", color=color, ms=7,
                         label=f"Gaussian-DP fit, S = {S:g}" if i == 0 else None)
            ax1.plot([i + dx], [a["epsilon_lower_threshold"]], "s", color=color, ms=6, mfc="none",
                     label=f"threshold test, S = {S:g}" if i == 0 else None)
            ax1.plot([i + dx], [a["epsilon_exact"]], "v", color=color, ms=7, mfc="none", ls="none",
                     label=f"epsilon of the noise, S = {S:g}" if i == 0 else None)
    ax1.set_xticks(x, list(trainers))
    name_x_variable(ax1, "trainer")
    ax1.set_ylabel("epsilon")
    ax1.set_title("lower bounds (97.5% each) vs claim and truth", fontsize=9)
    top = max(max(a["epsilon_exact"], a["epsilon_lower"], a["epsilon_claimed"]) for a in audits if a["trainer"] in trainers)
    ax1.set_ylim(0, 1.6 * top)
    ax1.legend(fontsize=9, loc="upper left", ncol=2)
    curve = sorted((a for a in audits if a["trainer"] == curve_trainer), key=lambda a: a["noise_multiplier_scale"])
    S = np.array([a["noise_multiplier_scale"] for a in curve])
    ax2.plot(S, [a["epsilon_exact"] for a in curve], "v--", color="grey", mfc="none", label="exact epsilon of the noise")
    if all(a["epsilon_lower_gdp"] is not None for a in curve):
        ax2.plot(S, [a["epsilon_lower_gdp"] for a in curve], "o-", color=COLORS["momentum"], label="Gaussian-DP fit")
    ax2.plot(S, [a["epsilon_lower_threshold"] for a in curve], "s:", color=COLORS["uniform"], mfc="none",
             label="threshold test")
    ax2.axhline(curve[0]["epsilon_claimed"], color="black", lw=1.5, label="claimed (ledger)")
    ax2.set_xlabel("noise-multiplier scale S (noise added / noise claimed)")
    ax2.set_ylabel("epsilon")
    ax2.set_ylim(bottom=0)
    ax2.set_title(f"{curve_trainer}: lower bounds vs S (flagged above the claim)", fontsize=9)
    ax2.legend(fontsize=9, loc="upper right")
    fig.tight_layout()
    return fig


# --- benchmarks ---


@figure_function
def bench_throughput(*, methods, single, batched, runs: int, title: str = ""):
    """Throughput of each method (bench page): steps per second of one run and run-steps per
    second of ``runs`` runs, as horizontal bars on a log axis, one pair per method (arrays
    indexed like ``methods``; a missing value, NaN, draws no bar)."""
    apply_style()
    methods = list(methods)
    fig, ax = plt.subplots(figsize=(7.0, 0.55 * len(methods) + 1.4))
    y = np.arange(len(methods))
    for vals, dy, color, lab in ((single, -0.18, COLORS["uniform"], "one run (steps/s)"),
                                 (batched, 0.18, COLORS["dynamic"], f"{runs} runs (run-steps/s)")):
        v = np.asarray(vals, dtype=float)
        ax.barh(y + dy, np.where(np.isfinite(v), v, 0.0), height=0.34, color=color, label=lab)
    ax.set_yticks(y, methods)
    name_x_variable(ax, "method")
    ax.invert_yaxis()
    return finish(fig, ax, xscale="log", xlabel="throughput (higher is faster)", title=title or "Throughput per method",
                  legend={"loc": "lower right"})
