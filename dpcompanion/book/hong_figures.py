"""Plot functions of Hong et al.'s experiment pages (h-f-eff, h-f-eff-exact, h-f-scale, h-f-mom, h-f-curv,
h-f-infl, h-f-infl-extra, h-x-eer, h-x-eer-breakdown), of a stored result's arrays.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm

from dpcompanion.book.figure_files import draw_mean_se, record_points
from dpcompanion.book.plotting import (COLORS, KIND_COLORS, MAX_WIDTH_IN, apply_style, figure_function, finish, log_ticks,
                                       panel_grid)

#: the breakdown heatmap's colour scale stops here (larger ratios print their value in the cell)
BREAKDOWN_CAP = 1e3


# --- experiments (influence, EER) ---


@figure_function
def eer_vs_T_figure(*, comparisons: dict, kinds=("uniform", "gd-dynamic", "exponential"), logx: tuple = ()):
    """Exact expected excess risk (solid) vs the Thm 4.1 bound (dashed) over T, in ERUB
    units, one panel per quadratic. ``comparisons``: panel title ->
    :func:`dpcompanion.theory.exact_risk.compare_with_bound` result. Circles mark the T the bound
    picks, crosses the truly best T. ``logx``: titles of the panels drawn with a log T axis
    (e.g. the data-scale-10 panel, whose optima sit at small T)."""
    apply_style()
    colors = {"uniform": COLORS["uniform"], "gd-dynamic": COLORS["dynamic"], "exponential": COLORS["exp"]}
    fig, axes = panel_grid(len(comparisons), row_height_in=4.0)
    for ax, (title, comp) in zip(axes.flat, comparisons.items()):
        T = comp["T"]
        for kind in kinds:
            r, col = comp[kind], colors.get(kind)
            ax.plot(T, r["exact"], color=col, lw=1.8, label=f"{kind}: exact")
            ax.plot(T, r["bound"], color=col, lw=1.2, ls="--", label=f"{kind}: Thm 4.1 bound")
            ax.plot([r["T_bound"]], [r["exact_at_T_bound"]], "o", color=col, ms=5)
            ax.plot([r["T_exact"]], [r["exact_min"]], "x", color=col, ms=7)
        ax.set_yscale("log")
        if title in logx:
            ax.set_xscale("log")
        ax.set_xlabel("number of steps T")
        ax.set_ylabel(r"$(\mathbb{E} f(\theta_{T+1}) - f^*) / (f(\theta_1) - f^*)$")
        k = comp["constants"]["kappa"]
        ax.set_title(f"{title} ($\\kappa$ = {k:.3g})", fontsize=10)
    axes[0][0].legend(fontsize=9, ncol=1)
    fig.tight_layout()
    return fig


@figure_function
def eer_tightness_figure(*, kappas, ratios: dict):
    """Bound / exact at the T the bound picks, vs the curvature kappa (log-log).
    ``ratios``: schedule kind -> array over ``kappas``."""
    apply_style()
    colors = {"uniform": COLORS["uniform"], "gd-dynamic": COLORS["dynamic"], "exponential": COLORS["exp"]}
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for kind, r in ratios.items():
        ax.loglog(kappas, r, "o-", color=colors.get(kind), label=kind)
    ax.axhline(1.0, color="0.5", lw=0.8)
    return finish(fig, ax, xlabel=r"curvature $\kappa$ (synthetic spectrum)", ylabel="bound / exact at the bound's T",
                  title="How tight is Thm 4.1?")


@figure_function
def influence_figure(*, steps, retrained, retrained_se=None, analytic=None, theory=None, title: str = "",
                     theory_label: str = r"theory $\rho^{T-t}$ (Thm 4.1 proof)"):
    """Influence q_t vs step t, each curve normalised to sum 1 over ``steps`` (log y):
    retraining estimate (points with 2-SE bars), analytic (Hessian) and the theory's
    geometric shape (``rho^{T-t}``, rho the proof's per-step contraction; gamma for
    eta = 1/M). Arrays are indexed like ``steps``. Curves are normalised by the sum of their
    absolute values on a log axis; retrained estimates <= 0 (early influences below the
    retraining noise) are open triangles on the axis floor, counted in the legend.

    >>> fig = influence_figure(steps=[1, 2, 3], retrained=[-1e-9, 1e-6, 2e-6], retrained_se=[1e-9] * 3)
    >>> any(t.get_text().endswith("(1 steps)") for t in fig.axes[0].get_legend().get_texts())
    True
    """
    apply_style()
    steps = np.asarray(steps)
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    q = np.asarray(retrained, dtype=float)
    tot = float(np.sum(np.abs(q))) or 1.0
    pos = q > 0  # estimates <= 0 (early influences below the retraining noise) cannot sit on a log axis
    if retrained_se is not None:
        se = np.asarray(retrained_se, dtype=float)
        lower = q - np.maximum(q - 2 * se, q * 1e-3)  # bars stay above 0
        ax.errorbar(steps[pos], q[pos] / tot, yerr=[lower[pos] / tot, 2 * se[pos] / tot], fmt="o", ms=3,
                    color=COLORS["uniform"], lw=0.8, label="retraining (2 SE)")
    else:
        ax.plot(steps[pos], q[pos] / tot, "o", ms=3, color=COLORS["uniform"], label="retraining")
    if analytic is not None:
        ax.plot(steps, np.asarray(analytic) / np.sum(analytic), color=COLORS["dynamic"], lw=1.8,
                label="analytic (Hessian eigenvalues)")
    if theory is not None:
        ax.plot(steps, np.asarray(theory) / np.sum(theory), color="0.3", ls="--", lw=1.2,
                label=theory_label)
    ax.set_yscale("log")
    if not pos.all():
        floor = ax.get_ylim()[0]
        ax.plot(steps[~pos], np.full(int((~pos).sum()), floor), "v", ms=4, mfc="none", color=COLORS["uniform"],
                clip_on=False, label=f"retraining estimate $\\leq 0$ ({int((~pos).sum())} steps)")
    return finish(fig, ax, ylabel=r"influence $q_t$ (normalised)", xlabel="step t", title=title)


@figure_function
def influence_fit_figure(*, levels, losses: dict, fits: dict):
    """Final loss vs sigma_t with the fitted ``c sigma_t^2 + c0`` (the ICLR submission, Fig. 3 left).
    ``losses``: label (e.g. "t = 10") -> ``(len(levels), repeats)`` array; ``fits``: label
    -> ``(c, c0)``."""
    apply_style()
    levels = np.asarray(levels, dtype=float)
    fig, axes = panel_grid(len(losses), row_height_in=3.2, single_width_in=5.0)
    grid = np.linspace(levels.min(), levels.max(), 100)
    for ax, (label, L) in zip(axes.flat, losses.items()):
        L = np.asarray(L)
        for r in range(L.shape[1]):
            ax.plot(levels, L[:, r], ".", color=COLORS["uniform"], alpha=0.25, ms=3)
            record_points(ax, series=f"repeat {r + 1}", x=levels, y=L[:, r], y_variable="final loss")
        ax.plot(levels, L.mean(axis=1), "o", color=COLORS["uniform"], ms=4, label="mean over repeats")
        record_points(ax, series="mean over repeats", x=levels, y=L.mean(axis=1), n=L.shape[1], statistic="mean",
                      y_variable="final loss")
        c, c0 = fits[label]
        ax.plot(grid, c * grid**2 + c0, color=COLORS["dynamic"], lw=1.6, label=r"fit $c\sigma_t^2 + c_0$")
        record_points(ax, series=f"fit c sigma_t^2 + c_0 (c = {c:.6g}, c_0 = {c0:.6g})", x=grid, y=c * grid**2 + c0,
                      statistic="fitted value", y_variable="final loss")
        ax.set_xlabel(r"$\sigma_t$")
        ax.set_title(label, fontsize=10)
    for row in axes:
        row[0].set_ylabel("final loss")
    axes[0][0].legend(fontsize=9)
    fig.tight_layout()
    return fig


# --- experiments of Hong et al. (H-F-EFF, H-F-SCALE, H-F-CURV, H-F-MOM, H-X-EER breakdown) ---


@figure_function
def efficiency_figure(*, N, loss: dict, loss_se: dict, acc: dict, acc_se: dict, n=None, title: str = ""):
    """The FAccT version's Fig. 1 middle/right layout: final training loss (left) and test accuracy
    (right) vs the number of training samples N, one line per schedule with 2-SE bars.
    Each dict maps a schedule label ("uni", "exp") to an array over ``N``; ``n``: the repeats behind each mean."""
    apply_style()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 3.6))
    for kind in loss:
        c = KIND_COLORS.get(kind)
        draw_mean_se(a1, N, loss[kind], loss_se[kind], n=n, fmt="o-", ms=4, color=c, label=kind, capsize=2)
        draw_mean_se(a2, N, acc[kind], acc_se[kind], n=n, fmt="o-", ms=4, color=c, label=kind, capsize=2)
    for ax, lab in ((a1, "final training loss"), (a2, "test accuracy")):
        ax.set_xscale("log")
        log_ticks(ax.xaxis, N)
        ax.set_xlabel("number of training samples N")
        ax.set_ylabel(lab)
    a1.legend(fontsize=9)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


@figure_function
def relative_loss_figure(*, panels: dict, xlabel: str = "data scale", ylabel: str = r"$(e - e_{uni}) / e_{uni}$",
                         dashed_label: str = r"$T\,\mathrm{Var}(q_t)$", n=None):
    """the ICLR submission's Fig. 2 middle / Fig. 3 right layout: relative final loss vs data scale (solid,
    left axis, 2-SE bars) per schedule and a dashed influence term on a right axis.
    ``panels``: title -> {"x": array, "curves": {label: (mean, se)}, "dashed": array or None, "n": the repeats
    behind each mean (optional; default ``n``)}.
    When every panel has one x value (quick mode: one data scale), a curve would be a single
    point: the panels become the categories of one panel instead (:func:`_one_point_panels`)."""
    apply_style()
    if panels and all(len(np.atleast_1d(p["x"])) == 1 for p in panels.values()):
        return _one_point_panels(panels, xlabel=xlabel, ylabel=ylabel, n=n)
    fig, axes = panel_grid(len(panels), row_height_in=3.4)
    for ax, (title, p) in zip(axes.flat, panels.items()):
        x = np.asarray(p["x"], dtype=float)
        for lab, (m, se) in p["curves"].items():
            draw_mean_se(ax, x, m, se, n=p.get("n", n), fmt="o-", ms=4, capsize=2, color=KIND_COLORS.get(lab), label=lab)
        ax.axhline(0.0, color="0.5", lw=0.8)
        ax.set_xlabel(xlabel)
        ax.set_title(title, fontsize=10)
        if p.get("dashed") is not None:
            ax2 = ax.twinx()
            ax2.plot(x, p["dashed"], ls="--", color="0.35", lw=1.2, label=dashed_label)
            ax2.set_ylabel(dashed_label, color="0.35")
            ax2.spines["right"].set_visible(True)
            ax2.grid(False)
    for row in axes:
        row[0].set_ylabel(ylabel)
    axes[0][0].legend(fontsize=9)
    fig.tight_layout()
    return fig


def _one_point_panels(panels: dict, *, xlabel: str, ylabel: str, n=None):
    """Panels with one x value each, drawn as one panel: a category per panel title, one
    marker with its 2-SE bar per curve (side by side), the shared x value in the axis label."""
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    titles = list(panels)
    labels = list(dict.fromkeys(lab for p in panels.values() for lab in p["curves"]))
    width = 0.5 / max(len(labels), 1)
    for k, lab in enumerate(labels):
        xs, ms, ses, names, ns = [], [], [], [], []
        for i, t in enumerate(titles):
            if lab in panels[t]["curves"]:
                m, se = panels[t]["curves"][lab]
                xs.append(i + (k - (len(labels) - 1) / 2) * width)
                ms.append(float(np.atleast_1d(m)[0]))
                ses.append(float(np.atleast_1d(se)[0]))
                names.append(t)
                ns.append(int(np.atleast_1d(panels[t].get("n", n if n is not None else -1))[0]))
        draw_mean_se(ax, xs, ms, ses, n=ns, categories=names, fmt="o", ms=6, capsize=3, color=KIND_COLORS.get(lab),
                     label=lab)
    ax.axhline(0.0, color="0.5", lw=0.8)
    xvals = sorted({float(np.atleast_1d(p["x"])[0]) for p in panels.values()})
    ax.set_xticks(range(len(titles)), titles)
    ax.set_xlim(-0.6, len(titles) - 0.4)
    return finish(fig, ax, xlabel=f"{xlabel} = " + ", ".join(f"{v:g}" for v in xvals) + " (one value in this mode)",
                  ylabel=ylabel)


@figure_function
def curvature_figure(*, curves: dict, means: dict, steps, max_runs: int = 25):
    """the ICLR submission's Fig. 1 layout: trajectories of the training loss of repeated PGD runs on losses
    of different curvature (thin lines), and each loss's mean final loss (dashed
    horizontal line). ``curves``: label -> ``(runs, T)`` loss per step; ``means``: label ->
    mean final loss."""
    apply_style()
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    palette = [COLORS["uniform"], COLORS["momentum"], COLORS["exp"], COLORS["dynamic"]]
    for (lab, L), col in zip(curves.items(), palette):
        L = np.asarray(L)
        for r in range(min(L.shape[0], max_runs)):
            ax.plot(steps, L[r], color=col, lw=0.5, alpha=0.3)
            record_points(ax, series=f"{lab}: run {r + 1}", x=steps, y=L[r])
        ax.plot([], [], color=col, lw=1.2, label=f"{lab}: runs")
        ax.axhline(means[lab], color=col, ls="--", lw=1.6, label=f"{lab}: mean final loss")
        record_points(ax, series=f"{lab}: mean final loss", x=[np.asarray(steps)[-1]], y=[means[lab]], statistic="mean",
                      n=L.shape[0])
    return finish(fig, ax, yscale="log", ylim=(1e-2 * min(means.values()), None), xlabel="step t",
                  ylabel=r"$f(\theta_t) - f^*$")


@figure_function
def momentum_schedules_figure(*, panels: dict):
    """the ICLR submission's Fig. 2 right layout: final loss relative to uniform vs data scale, for
    expinfl and momexpinfl, one panel per T. ``panels``: title -> {"x", "curves"} as in
    :func:`relative_loss_figure`."""
    return relative_loss_figure(panels=panels, ylabel=r"$(e - e_{uni}) / e_{uni}$ (momentum DNN)")


@figure_function
def breakdown_figure(*, kappas, Ts, ratio, span, max_span: float, clip_label: str = ""):
    """Where the dynamic schedule breaks (H-X-EER): top, mean excess risk of the clipped
    trainer over the exact no-clipping value on the (kappa, T) grid (log colour capped at
    :data:`BREAKDOWN_CAP`, so that the ordinary cells stay distinguishable; the value printed
    in each cell); bottom, the schedule's span max sigma / min sigma, cells above the warning
    threshold ``max_span`` marked "W". Arrays are ``(len(Ts), len(kappas))``; the grid is shown
    cell by cell (kappa and T as labelled categories)."""
    apply_style()
    kappas, Ts = np.asarray(kappas, float), np.asarray(Ts)
    r = np.clip(np.asarray(ratio, float), 1e-2, None)
    sp = np.asarray(span, float)
    h = 0.42 * len(Ts) + 1.3
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7.0, 2 * h + 0.4))
    norm = LogNorm(vmin=0.5, vmax=BREAKDOWN_CAP)
    cmap1 = plt.get_cmap("viridis").copy()
    m1 = a1.imshow(np.where(np.isfinite(r), np.minimum(r, BREAKDOWN_CAP), np.nan), origin="lower", aspect="auto",
                   cmap=cmap1, norm=norm)
    fig.colorbar(m1, ax=a1, extend="max", label=f"clipped / exact (capped at {BREAKDOWN_CAP:g})")
    span_log = np.log10(np.maximum(sp, 1.0))
    m2 = a2.imshow(span_log, origin="lower", aspect="auto", cmap="cividis")
    fig.colorbar(m2, ax=a2, label=r"$\log_{10}$ span")
    for ax, mappable, values in ((a1, m1, r), (a2, m2, span_log)):
        for i in range(len(Ts)):
            for j in range(len(kappas)):
                rgba = mappable.to_rgba(min(values[i, j], BREAKDOWN_CAP) if np.isfinite(values[i, j]) else 0.0)
                dark = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] < 0.5
                if ax is a1:
                    v = r[i, j]
                    text = ("n/a" if not np.isfinite(v) else f"{v:.2g}" if v < BREAKDOWN_CAP
                            else f"$10^{{{int(np.floor(np.log10(v)))}}}$")  # beyond the cap: its order of magnitude
                else:
                    text = "W" if sp[i, j] > max_span else ""
                if text:
                    ax.text(j, i, text, ha="center", va="center", fontsize=9, color="w" if dark else "k",
                            fontweight="bold" if text == "W" else "normal")
    for ax in (a1, a2):
        ax.set_xticks(range(len(kappas)), [f"{k:g}" for k in kappas])
        ax.set_yticks(range(len(Ts)), [str(int(t)) for t in Ts])
        ax.set_xlabel(r"curvature $\kappa$")
        ax.set_ylabel("T")
        ax.grid(False)
    a1.set_title(" ".join(x for x in ("Thm 4.4 schedule, clipped trainer", clip_label) if x) + ": excess risk / exact",
                 fontsize=10)
    a2.set_title(rf"schedule span $\max\sigma_t/\min\sigma_t$ (W: warning, span > {max_span:g})", fontsize=10)
    fig.tight_layout()
    return fig
