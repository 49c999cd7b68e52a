"""Plot functions of the pages that plot the papers' mathematics rather than an experiment (index,
accounting, h-f-theory, h-sec-4-1, h-sec-4-2, h-tables, w-theory, x-unify), of arrays the page computed.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from dpcompanion.book.plotting import COLORS, MAX_WIDTH_IN, apply_style, figure_function, finish, thin

# --- landing page ---


@figure_function
def landing_figure(*, t, schedules: dict, T_grid, erub_curves: dict, optima: dict, kappa_erub: float):
    """Left: noise multiplier sigma_t of each schedule (label -> array over t).
    Right: ERUB vs T (label -> array over T_grid), each optimum (label -> (T, value)) marked."""
    apply_style()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 3.6))
    dyn = [k for k in schedules if not k.startswith("uniform")]
    shades = plt.cm.Oranges(np.linspace(0.45, 0.95, max(len(dyn), 1)))
    for label, sigma in schedules.items():
        if label.startswith("uniform"):
            style = dict(color=COLORS["uniform"], lw=2.2, ls="--", zorder=5)
        else:
            style = dict(color=shades[dyn.index(label)], lw=1.6)
        ax1.plot(t, sigma, label=label, **style)
    ax1.set(xlabel="step t", ylabel=r"noise multiplier $\sigma_t$", yscale="log",
            title="Same privacy budget, different allocations")
    ax1.legend()
    for label, curve in erub_curves.items():
        key = "uniform" if label.startswith("uniform") else "dynamic"
        ax2.plot(T_grid, curve, color=COLORS[key], label=label)
        T_opt, v_opt = optima[label]
        ax2.plot([T_opt], [v_opt], "o", color=COLORS[key])
        ax2.annotate(f"T*={T_opt}", (T_opt, v_opt), textcoords="offset points",
                     xytext=(-8, 8) if key == "uniform" else (6, -16), fontsize=9,
                     color="#1f3f6e" if key == "uniform" else "#a0522d")
    return finish(fig, ax2, xlabel="number of steps T", ylabel="ERUB (Thm 4.1 bound)",
                  title=rf"Utility bound vs T ($\kappa$ = {kappa_erub:g})", ylim=(0, None), legend={"loc": "upper right"})


# --- schedules (accounting chapter) ---


@figure_function
def schedule_gallery(*, t, gallery: dict, ncols: int = 2):
    """One panel per schedule kind: ``gallery`` maps a panel title to {curve label: sigma over t}.

    Noise multipliers on a log axis; darker curves are later entries (e.g. larger kappa)."""
    apply_style()
    n = len(gallery)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(MAX_WIDTH_IN, 2.6 * nrows), sharex=True, squeeze=False)
    for ax, (title, curves) in zip(axes.flat, gallery.items()):
        shades = plt.cm.viridis(np.linspace(0.1, 0.8, max(len(curves), 1)))
        for (label, sigma), color in zip(curves.items(), shades):
            ax.plot(t[: len(sigma)], sigma, color=color, lw=1.5, label=label)
        ax.set_title(title, fontsize=9)
        ax.set_yscale("log")
        ax.legend(fontsize=9, loc="best")
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("step t")
    for ax in axes[:, 0]:
        ax.set_ylabel(r"$\sigma_t$")
    fig.tight_layout()
    return fig


@figure_function
def unused_budget_figure(*, epsilons, budgets: dict, delta: float, anchor_epsilon: float | None = None):
    """Left: budget R against epsilon for each accounting (label -> array over ``epsilons``).
    Right: each budget relative to the paper's zCDP one (the first entry)."""
    apply_style()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 3.6))
    labels = list(budgets)
    base = np.asarray(budgets[labels[0]], dtype=float)
    colors = plt.cm.tab10(np.arange(len(labels)))
    for label, color in zip(labels, colors):
        R = np.asarray(budgets[label], dtype=float)
        ax1.plot(epsilons, R, color=color, label=label)
        ax2.plot(epsilons, R / base, color=color, label=label)
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_xlabel(r"target $\epsilon$")
        if anchor_epsilon is not None:
            ax.axvline(anchor_epsilon, color="grey", lw=0.8, ls=":")
    ax2.set(ylabel=f"R / R ({labels[0]})", title="Budget relative to the zCDP conversion")
    return finish(fig, ax1, yscale="log", ylabel=r"budget $R=\sum_t 1/\sigma_t^2$",
                  title=rf"Budget allowed for ($\epsilon$, {delta:g})")


# --- theory (bounds) ---


@figure_function
def theory_schedules(*, t, uniform, dynamic: dict):
    """sigma_t of the uniform schedule and of the dynamic schedule (Thm 4.4) for several kappa
    (``dynamic``: kappa -> array), same budget."""
    apply_style()
    fig, ax = plt.subplots()
    ax.plot(t, uniform, color=COLORS["uniform"], lw=2.2, label="uniform (any $\\kappa$)")
    cmap = plt.get_cmap("Oranges")
    for i, (k, s) in enumerate(sorted(dynamic.items())):
        ax.plot(t, s, color=cmap(0.45 + 0.5 * i / max(1, len(dynamic) - 1)), lw=1.6, label=f"dynamic, $\\kappa$ = {k:g}")
    return finish(fig, ax, yscale="log", xlabel="step t", ylabel=r"noise multiplier $\sigma_t$",
                  title="Same budget R: uniform vs dynamic (Thm 4.4) schedules")


@figure_function
def theory_erub_vs_T(*, T, uniform, dynamic, argmin: dict, marks: dict, kappa: float, alpha: float):
    """ERUB(T) of both schedules, the exact minimisers (dots) and closed-form T's (``marks``:
    label -> T, drawn as vertical lines)."""
    apply_style()
    fig, ax = plt.subplots()
    ax.plot(T, uniform, color=COLORS["uniform"], label="uniform (Eq. 9)")
    ax.plot(T, dynamic, color=COLORS["dynamic"], label="dynamic (proof of Thm 4.4)")
    for i, (key, (Tb, vb)) in enumerate(argmin.items()):
        ax.plot([Tb], [vb], "o", color=COLORS[key], ms=7, zorder=5)
        ax.annotate(f"min at T={Tb}", (Tb, vb), textcoords="offset points", xytext=(-60, 10) if i == 0 else (6, -14),
                    fontsize=9, color=COLORS[key])
    styles = ["--", ":", "-."]
    for i, (label, x) in enumerate(marks.items()):
        if x <= T[-1]:
            ax.axvline(x, ls=styles[i % 3], color="0.35", lw=1, label=label)
    return finish(fig, ax, yscale="log", xlabel="number of steps T", ylabel="ERUB (Thm 4.1 bound)",
                  title=rf"ERUB vs T ($\kappa$ = {kappa:g}, $\alpha$ = {alpha:g})")


@figure_function
def theory_erub_min(*, N, alpha, uniform, dynamic, kappas=None, by_kappa: dict | None = None, kappa: float | None = None):
    """Left: minimal ERUB vs N (log-log) for both schedules against the non-private alpha line.
    Right (when ``by_kappa`` is given): minimal ERUB vs kappa."""
    apply_style()
    ncols = 2 if by_kappa is not None else 1
    fig, axes = plt.subplots(1, ncols, figsize=(MAX_WIDTH_IN if ncols == 2 else 7.0, 3.8))
    axes = np.atleast_1d(axes)
    ax = axes[0]
    ax.loglog(N, uniform, color=COLORS["uniform"], label="uniform, exact min")
    ax.loglog(N, dynamic, color=COLORS["dynamic"], label="dynamic, exact min")
    ax.loglog(N, alpha, color="0.3", ls="--", label=r"non-private $\alpha$")
    ax.set(xlabel="number of samples N", ylabel=r"ERUB$_{\min}$",
           title=rf"Sample efficiency ($\kappa$ = {kappa:g})" if kappa else "Sample efficiency")
    ax.legend()
    if by_kappa is not None:
        ax = axes[1]
        k = by_kappa["kappa"]
        ax.loglog(k, by_kappa["uniform"], color=COLORS["uniform"], label="uniform, exact min")
        ax.loglog(k, by_kappa["eq25"], color=COLORS["uniform"], ls=":", label="uniform at Eq. 24's T (Eq. 25)")
        ax.loglog(k, by_kappa["dynamic"], color=COLORS["dynamic"], label="dynamic, exact min")
        ax.axhline(1.0, color="0.5", lw=0.8, ls="--", label="trivial bound 1 (T = 0)")
        ax.set(xlabel=r"curvature $\kappa$", ylabel=r"ERUB$_{\min}$", title="Sharp losses")
        ax.legend()
    fig.tight_layout()
    return fig


@figure_function
def theory_T_vs_kappa(*, kappa, curves: dict):
    """Optimal T vs kappa: exact (brute force, markers) and closed forms (lines);
    ``curves``: label -> array; labels containing 'exact' are drawn as markers."""
    apply_style()
    fig, ax = plt.subplots()
    for label, y in curves.items():
        key = "uniform" if label.startswith("uniform") else "dynamic"
        if "exact" in label:
            ax.plot(kappa, y, "o", ms=4, color=COLORS[key], label=label)
        else:
            ls = "--" if "statement" in label or "23" in label else "-"
            ax.plot(kappa, np.maximum(y, 1e-1), ls=ls, color=COLORS[key], lw=1.4, alpha=0.85, label=label)
    return finish(fig, ax, xscale="log", yscale="log", xlabel=r"curvature $\kappa$", ylabel="optimal number of steps T",
                  title="Optimal T: closed forms vs exhaustive search", legend={"ncol": 2})


@figure_function
def theory_table_rows(*, N, rows: dict, title: str):
    """Printed orders of table rows vs N (log-log); ``rows``: label -> array."""
    apply_style()
    fig, ax = plt.subplots(figsize=(7.0, 4.2 + 0.22 * len(rows)))
    for label, y in rows.items():
        ax.loglog(N, y, lw=1.5, ls="-" if "(ours" not in label else "--", label=label)
    return finish(fig, ax, xlabel="number of samples N", ylabel="bound (constants = 1)", title=title,
                  legend={"ncol": 1, "loc": "upper left", "bbox_to_anchor": (0.0, -0.16)})  # below the panel: long labels


# --- momentum and ADP-SGD theory ---


@figure_function
def momentum_influence(*, t, curves: dict, T_hat: int, title: str = ""):
    """Influence of each step's noise variance on the momentum bound (H Thm 4.5-4.7):
    ``curves`` maps a label to q_t (or w_t) over ``t``; log axis; T_hat marked."""
    apply_style()
    fig, ax = plt.subplots()
    styles = ["-", "--", ":", "-."]
    for i, (label, q) in enumerate(curves.items()):
        ax.plot(t, q, ls=styles[i % 4], lw=2.0 if i == 0 else 1.4, label=label,
                color=COLORS["momentum"] if i == 0 else None)
    if T_hat <= t[-1]:
        ax.axvline(T_hat, color="0.4", lw=1, ls="--")
        ax.annotate(r"$\hat T$", (T_hat, ax.get_ylim()[0]), textcoords="offset points", xytext=(3, 5), fontsize=9)
    return finish(fig, ax, yscale="log", xlabel="step t", ylabel=r"influence of $\sigma_t^2$",
                  title=title or "Momentum: exact influence vs the paper's forms")


@figure_function
def momentum_erub_vs_T(*, T, curves: dict, T_hat: int, title: str = ""):
    """ERUB(T) of the momentum bound for several schedules (``curves``: label -> array over T);
    each minimum marked, T_hat drawn."""
    apply_style()
    fig, ax = plt.subplots()
    for label, y in curves.items():
        key = "uniform" if label.startswith("uniform") else "dynamic"
        ax.plot(T, y, color=COLORS[key], label=label)
        k = int(np.argmin(y))
        ax.plot([T[k]], [y[k]], "o", color=COLORS[key])
    if T_hat <= T[-1]:
        ax.axvline(T_hat, color="0.4", lw=1, ls="--", label=r"$\hat T$")
    return finish(fig, ax, yscale="log", xlabel="number of steps T", ylabel="ERUB (Thm 4.5 bound)",
                  title=title or "Momentum: ERUB vs T")


@figure_function
def adp_stepsizes(*, families: dict):
    """W Figure 2: step-size families over iterations; ``families`` maps a label to (t, eta_t)
    (long curves drawn through at most 1000 of their points, ends included)."""
    apply_style()
    fig, ax = plt.subplots()
    for label, (t, eta) in families.items():
        t, eta = thin(t, eta)
        ax.plot(t, eta, lw=1.5, label=label, ls="-" if "sqrt(20" in label else "--")
    return finish(fig, ax, xlabel="iteration t", ylabel=r"step size $\eta_t$", yscale="log",
                  title="ADP-SGD's two step-size families (W Fig. 2)")


@figure_function
def adp_ratio_vs_T(*, T, curves: dict):
    """M_dp/M_adp and the ratio of the printed bounds vs T (log x axis); ``curves``: label -> array."""
    apply_style()
    fig, ax = plt.subplots()
    for label, y in curves.items():
        ax.plot(T, y, marker="o", ms=3, lw=1.4, label=label)
    return finish(fig, ax, xscale="log", xlabel="number of steps T", ylabel="DP-SGD / ADP-SGD",
                  title="Gain of ADP-SGD's allocation (W Prop. 5.1)")


@figure_function
def unify_allocation(*, points: dict):
    """One rule for both papers: normalised noise variance s_t^2 against normalised influence
    q_t on log-log axes (``points``: label -> (q, s2)); the line of slope -1/2 is Lemma 4.3."""
    apply_style()
    fig, ax = plt.subplots(figsize=(6.0, 4.2))
    markers = ["o", "s", "^", "D", "v"]
    lo, hi = np.inf, -np.inf
    for i, (label, (q, s2)) in enumerate(points.items()):
        qn, sn = np.asarray(q) / np.max(q), np.asarray(s2) / np.min(s2)
        ax.loglog(qn, sn, markers[i % 5], ms=3.5, alpha=0.75, label=label)
        lo, hi = min(lo, qn.min()), max(hi, qn.max())
    x = np.geomspace(lo, hi, 50)
    ax.loglog(x, x ** -0.5, color="0.2", lw=1.2, ls="--", label=r"$s_t^2 \propto q_t^{-1/2}$ (Lemma 4.3)")
    return finish(fig, ax, xlabel=r"influence $q_t$ / max$_t$ $q_t$", ylabel=r"noise variance $s_t^2$ / min$_t$ $s_t^2$",
                  title="Hong et al.'s and Wu et al.'s allocations: one rule")
