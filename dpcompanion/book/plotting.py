"""Figures of the book: one shared style, then one section of plot functions per chapter.

Plot functions take computed arrays (never compute or train themselves: STYLE 6) and
return the matplotlib Figure. Importing this module does not import torch.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

#: colours used consistently across the book: uniform vs dynamic/optimal schedules
COLORS = {"uniform": "#4c72b0", "dynamic": "#dd8452", "optimal": "#dd8452", "exp": "#55a868", "momentum": "#c44e52"}


def apply_style() -> None:
    """The book's matplotlib style (called by every plot function)."""
    plt.rcParams.update(
        {
            "figure.dpi": 110,
            "savefig.dpi": 110,
            "figure.figsize": (7.0, 3.6),
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "font.size": 10,
            "legend.frameon": False,
        }
    )


# --- landing page ---


def landing_figure(*, t, schedules: dict, T_grid, erub_curves: dict, optima: dict, kappa_erub: float):
    """Left: noise multiplier sigma_t of each schedule (label -> array over t).
    Right: ERUB vs T (label -> array over T_grid), each optimum (label -> (T, value)) marked."""
    apply_style()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 3.6))
    dyn = [k for k in schedules if not k.startswith("uniform")]
    shades = plt.cm.Oranges(np.linspace(0.45, 0.95, max(len(dyn), 1)))
    for label, sigma in schedules.items():
        if label.startswith("uniform"):
            style = dict(color=COLORS["uniform"], lw=2.2, ls="--", zorder=5)
        else:
            style = dict(color=shades[dyn.index(label)], lw=1.6)
        ax1.plot(t, sigma, label=label, **style)
    ax1.set_xlabel("step t")
    ax1.set_ylabel(r"noise multiplier $\sigma_t$")
    ax1.set_yscale("log")
    ax1.set_title("Same privacy budget, different allocations")
    ax1.legend(fontsize=8)
    for label, curve in erub_curves.items():
        key = "uniform" if label.startswith("uniform") else "dynamic"
        ax2.plot(T_grid, curve, color=COLORS[key], label=label)
        T_opt, v_opt = optima[label]
        ax2.plot([T_opt], [v_opt], "o", color=COLORS[key])
        ax2.annotate(f"T*={T_opt}", (T_opt, v_opt), textcoords="offset points",
                     xytext=(-8, 8) if key == "uniform" else (6, -16), fontsize=8,
                     color="#1f3f6e" if key == "uniform" else "#a0522d")
    ax2.set_xlabel("number of steps T")
    ax2.set_ylabel("ERUB (Thm 4.1 bound)")
    ax2.set_title(rf"Utility bound vs T ($\kappa$ = {kappa_erub:g})")
    ax2.set_ylim(bottom=0)
    ax2.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


# --- schedules (accounting chapter) ---


def schedule_gallery(*, t, gallery: dict, ncols: int = 3):
    """One panel per schedule kind: ``gallery`` maps a panel title to {curve label: sigma over t}.

    Noise multipliers on a log axis; darker curves are later entries (e.g. larger kappa)."""
    apply_style()
    n = len(gallery)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 2.5 * nrows), sharex=True, squeeze=False)
    for ax, (title, curves) in zip(axes.flat, gallery.items()):
        shades = plt.cm.viridis(np.linspace(0.1, 0.8, max(len(curves), 1)))
        for (label, sigma), color in zip(curves.items(), shades):
            ax.plot(t[: len(sigma)], sigma, color=color, lw=1.5, label=label)
        ax.set_title(title, fontsize=9)
        ax.set_yscale("log")
        ax.legend(fontsize=6.5, loc="best")
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("step t")
    for ax in axes[:, 0]:
        ax.set_ylabel(r"$\sigma_t$")
    fig.tight_layout()
    return fig


def unused_budget_figure(*, epsilons, budgets: dict, delta: float, anchor_epsilon: float | None = None):
    """Left: budget R against epsilon for each accounting (label -> array over ``epsilons``).
    Right: each budget relative to the paper's zCDP one (the first entry)."""
    apply_style()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 3.4))
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
    ax1.set_yscale("log")
    ax1.set_ylabel(r"budget $R=\sum_t 1/\sigma_t^2$")
    ax1.set_title(rf"Budget allowed for ($\epsilon$, {delta:g})")
    ax2.set_ylabel(f"R / R ({labels[0]})")
    ax2.set_title("Budget relative to the zCDP conversion")
    ax1.legend(fontsize=8)
    fig.tight_layout()
    return fig


# --- theory (bounds) ---


def theory_schedules(*, t, uniform, dynamic: dict):
    """sigma_t of the uniform schedule and of the dynamic schedule (Thm 4.4) for several kappa
    (``dynamic``: kappa -> array), same budget."""
    apply_style()
    fig, ax = plt.subplots()
    ax.plot(t, uniform, color=COLORS["uniform"], lw=2.2, label="uniform (any $\\kappa$)")
    cmap = plt.get_cmap("Oranges")
    for i, (k, s) in enumerate(sorted(dynamic.items())):
        ax.plot(t, s, color=cmap(0.45 + 0.5 * i / max(1, len(dynamic) - 1)), lw=1.6, label=f"dynamic, $\\kappa$ = {k:g}")
    ax.set_yscale("log")
    ax.set_xlabel("step t")
    ax.set_ylabel(r"noise multiplier $\sigma_t$")
    ax.set_title("Same budget R: uniform vs dynamic (Thm 4.4) schedules")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


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
                    fontsize=8, color=COLORS[key])
    styles = ["--", ":", "-."]
    for i, (label, x) in enumerate(marks.items()):
        if x <= T[-1]:
            ax.axvline(x, ls=styles[i % 3], color="0.35", lw=1, label=label)
    ax.set_yscale("log")
    ax.set_xlabel("number of steps T")
    ax.set_ylabel("ERUB (Thm 4.1 bound)")
    ax.set_title(rf"ERUB vs T ($\kappa$ = {kappa:g}, $\alpha$ = {alpha:g})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def theory_erub_min(*, N, alpha, uniform, dynamic, kappas=None, by_kappa: dict | None = None, kappa: float | None = None):
    """Left: minimal ERUB vs N (log-log) for both schedules against the non-private alpha line.
    Right (when ``by_kappa`` is given): minimal ERUB vs kappa."""
    apply_style()
    ncols = 2 if by_kappa is not None else 1
    fig, axes = plt.subplots(1, ncols, figsize=(9.5 if ncols == 2 else 7.0, 3.6))
    axes = np.atleast_1d(axes)
    ax = axes[0]
    ax.loglog(N, uniform, color=COLORS["uniform"], label="uniform, exact min")
    ax.loglog(N, dynamic, color=COLORS["dynamic"], label="dynamic, exact min")
    ax.loglog(N, alpha, color="0.3", ls="--", label=r"non-private $\alpha$")
    ax.set_xlabel("number of samples N")
    ax.set_ylabel(r"ERUB$_{\min}$")
    ax.set_title(rf"Sample efficiency ($\kappa$ = {kappa:g})" if kappa else "Sample efficiency")
    ax.legend(fontsize=8)
    if by_kappa is not None:
        ax = axes[1]
        k = by_kappa["kappa"]
        ax.loglog(k, by_kappa["uniform"], color=COLORS["uniform"], label="uniform, exact min")
        ax.loglog(k, by_kappa["eq25"], color=COLORS["uniform"], ls=":", label="uniform at Eq. 24's T (Eq. 25)")
        ax.loglog(k, by_kappa["dynamic"], color=COLORS["dynamic"], label="dynamic, exact min")
        ax.axhline(1.0, color="0.5", lw=0.8, ls="--", label="trivial bound 1 (T = 0)")
        ax.set_xlabel(r"curvature $\kappa$")
        ax.set_ylabel(r"ERUB$_{\min}$")
        ax.set_title("Sharp losses")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


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
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"curvature $\kappa$")
    ax.set_ylabel("optimal number of steps T")
    ax.set_title("Optimal T: closed forms vs exhaustive search")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def theory_table_rows(*, N, rows: dict, title: str):
    """Printed orders of table rows vs N (log-log); ``rows``: label -> array."""
    apply_style()
    fig, ax = plt.subplots(figsize=(8.0, 4.2))
    for label, y in rows.items():
        ax.loglog(N, y, lw=1.5, ls="-" if "(ours" not in label else "--", label=label)
    ax.set_xlabel("number of samples N")
    ax.set_ylabel("bound (constants = 1)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


# --- momentum and ADP-SGD theory ---


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
    ax.set_yscale("log")
    ax.set_xlabel("step t")
    ax.set_ylabel(r"influence of $\sigma_t^2$")
    ax.set_title(title or "Momentum: exact influence vs the paper's forms")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


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
    ax.set_yscale("log")
    ax.set_xlabel("number of steps T")
    ax.set_ylabel("ERUB (Thm 4.5 bound)")
    ax.set_title(title or "Momentum: ERUB vs T")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def adp_stepsizes(*, families: dict):
    """W Figure 2: step-size families over iterations; ``families`` maps a label to (t, eta_t)."""
    apply_style()
    fig, ax = plt.subplots()
    for label, (t, eta) in families.items():
        ax.plot(t, eta, lw=1.5, label=label, ls="-" if "sqrt(20" in label else "--")
    ax.set_xlabel("iteration t")
    ax.set_ylabel(r"step size $\eta_t$")
    ax.set_yscale("log")
    ax.set_title("ADP-SGD's two step-size families (W Fig. 2)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def adp_ratio_vs_T(*, T, curves: dict):
    """M_dp/M_adp and the ratio of the printed bounds vs T (log x axis); ``curves``: label -> array."""
    apply_style()
    fig, ax = plt.subplots()
    for label, y in curves.items():
        ax.plot(T, y, marker="o", ms=3, lw=1.4, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("number of steps T")
    ax.set_ylabel("DP-SGD / ADP-SGD")
    ax.set_title("Gain of ADP-SGD's allocation (W Prop. 5.1)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


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
    ax.set_xlabel(r"influence $q_t$ / max$_t$ $q_t$")
    ax.set_ylabel(r"noise variance $s_t^2$ / min$_t$ $s_t^2$")
    ax.set_title("Hong et al.'s and Wu et al.'s allocations: one rule")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# --- experiments (influence, EER) ---


def eer_vs_T_figure(*, comparisons: dict, kinds=("uniform", "gd-dynamic", "exponential"), logx: tuple = ()):
    """Exact expected excess risk (solid) vs the Thm 4.1 bound (dashed) over T, in ERUB
    units, one panel per quadratic. ``comparisons``: panel title ->
    :func:`dpcompanion.theory.exact_risk.compare_with_bound` result. Circles mark the T the bound
    picks, crosses the truly best T. ``logx``: titles of the panels drawn with a log T axis
    (e.g. the data-scale-10 panel, whose optima sit at small T)."""
    apply_style()
    colors = {"uniform": COLORS["uniform"], "gd-dynamic": COLORS["dynamic"], "exponential": COLORS["exp"]}
    fig, axes = plt.subplots(1, len(comparisons), figsize=(4.8 * len(comparisons), 3.8), squeeze=False)
    for ax, (title, comp) in zip(axes[0], comparisons.items()):
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
    axes[0][0].legend(fontsize=7, ncol=1)
    fig.tight_layout()
    return fig


def eer_tightness_figure(*, kappas, ratios: dict):
    """Bound / exact at the T the bound picks, vs the curvature kappa (log-log).
    ``ratios``: schedule kind -> array over ``kappas``."""
    apply_style()
    colors = {"uniform": COLORS["uniform"], "gd-dynamic": COLORS["dynamic"], "exponential": COLORS["exp"]}
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for kind, r in ratios.items():
        ax.loglog(kappas, r, "o-", color=colors.get(kind), label=kind)
    ax.axhline(1.0, color="0.5", lw=0.8)
    ax.set_xlabel(r"curvature $\kappa$ (synthetic spectrum)")
    ax.set_ylabel("bound / exact at the bound's T")
    ax.set_title("How tight is Thm 4.1?")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


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
    ax.set_ylabel(r"influence $q_t$ (normalised)")
    ax.set_xlabel("step t")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def influence_fit_figure(*, levels, losses: dict, fits: dict):
    """Final loss vs sigma_t with the fitted ``c sigma_t^2 + c0`` (000 Fig. 3 left).
    ``losses``: label (e.g. "t = 10") -> ``(len(levels), repeats)`` array; ``fits``: label
    -> ``(c, c0)``."""
    apply_style()
    levels = np.asarray(levels, dtype=float)
    fig, axes = plt.subplots(1, len(losses), figsize=(3.4 * len(losses), 3.2), squeeze=False)
    grid = np.linspace(levels.min(), levels.max(), 100)
    for ax, (label, L) in zip(axes[0], losses.items()):
        L = np.asarray(L)
        for r in range(L.shape[1]):
            ax.plot(levels, L[:, r], ".", color=COLORS["uniform"], alpha=0.25, ms=3)
        ax.plot(levels, L.mean(axis=1), "o", color=COLORS["uniform"], ms=4, label="mean over repeats")
        c, c0 = fits[label]
        ax.plot(grid, c * grid**2 + c0, color=COLORS["dynamic"], lw=1.6, label=r"fit $c\sigma_t^2 + c_0$")
        ax.set_xlabel(r"$\sigma_t$")
        ax.set_title(label, fontsize=10)
    axes[0][0].set_ylabel("final loss")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


# --- empirical privacy audit ---


def audit_figure(*, audits: list, trainers, curve_trainer: str):
    """Left: per trainer, the epsilon its ledger claims and the audit's 95 % lower bound, as
    shipped (S = 1) and with a quarter of the noise (S = 0.25), with the epsilon that noise
    really has (the most any audit can show). Right: lower bound vs S for ``curve_trainer``
    against the claim and the exact epsilon of the noise used. ``audits``: reports of
    :func:`dpcompanion.training.audit.run_audit` (``to_dict()``)."""
    apply_style()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10.0, 4.0), gridspec_kw={"width_ratios": [1.1, 1.0]})
    by = {(a["trainer"], a["noise_multiplier_scale"]): a for a in audits}
    x = np.arange(len(trainers))
    for i, t in enumerate(trainers):
        claim = by[(t, 1.0)]["epsilon_claimed"]
        ax1.hlines(claim, i - 0.35, i + 0.35, color="black", lw=2, label="claimed (ledger)" if i == 0 else None)
        for S, dx, color, name in ((1.0, -0.12, COLORS["uniform"], "lower bound, S = 1"),
                                   (0.25, 0.12, COLORS["momentum"], "lower bound, S = 0.25")):
            a = by.get((t, S))
            if a is None:
                continue
            ax1.plot([i + dx], [a["epsilon_lower"]], "o", color=color, ms=7, label=name if i == 0 else None)
            actual = a["epsilon_actual_exact"] if a["epsilon_actual_exact"] is not None else a["epsilon_actual"]
            ax1.plot([i + dx], [actual], "v", color=color, ms=6, mfc="none",
                     label=f"epsilon of the noise used, S = {S:g}" if i == 0 else None)
    ax1.set_xticks(x, list(trainers))
    ax1.set_ylabel("epsilon")
    ax1.set_title("audit per trainer (triangles: exact, RDP when subsampled)", fontsize=9)
    top = max(max(a["epsilon_actual"], a["epsilon_lower"]) for a in audits if a["trainer"] in trainers)
    ax1.set_ylim(0, 1.75 * top)
    ax1.legend(fontsize=7.5, loc="upper left")
    curve = sorted((a for a in audits if a["trainer"] == curve_trainer), key=lambda a: a["noise_multiplier_scale"])
    S = np.array([a["noise_multiplier_scale"] for a in curve])
    ax2.plot(S, [a["epsilon_lower"] for a in curve], "o-", color=COLORS["momentum"], label="95% lower bound")
    ax2.plot(S, [a["epsilon_actual_exact"] or a["epsilon_actual"] for a in curve], "v--", color="grey", mfc="none",
             label="exact epsilon of the noise used")
    ax2.axhline(curve[0]["epsilon_claimed"], color="black", lw=1.5, label="claimed (ledger)")
    ax2.set_xlabel("noise-multiplier scale S (noise added / noise claimed)")
    ax2.set_ylabel("epsilon")
    ax2.set_ylim(bottom=0)
    ax2.set_title(f"{curve_trainer}: lower bound vs S")
    ax2.legend(fontsize=8, loc="upper right")


# --- Wu et al. experiments (W-F1, W-T1245, W-T36, W-F4) ---

#: DP-SGD dashed, ADP-SGD solid, as in W's figures
WU_STYLE = {"dp": dict(ls="--", color="#4c72b0", label="DP-SGD ($\\alpha_t = 1$)"),
            "adp": dict(ls="-", color="#dd8452", label="ADP-SGD ($\\alpha_t = 1/\\sqrt{\\eta_t}$)")}


def wu_noise_privacy(*, t, noise: dict, eps: dict, title: str = ""):
    """W Fig. 1 left: the noise added to the parameters (left axis, log) and the privacy spent
    (right axis) vs t; ``noise``/``eps`` map ``"dp"``/``"adp"`` to arrays over ``t``."""
    apply_style()
    fig, ax = plt.subplots()
    ax2 = ax.twinx()
    for k in ("dp", "adp"):
        st = WU_STYLE[k]
        ax.plot(t, noise[k], ls=st["ls"], color="#55a868", lw=1.6)
        ax2.plot(t, eps[k], ls=st["ls"], color=st["color"], lw=1.6, label=st["label"])
    ax.set_yscale("log")
    ax.set_xlabel("iteration t")
    ax.set_ylabel(r"noise std on $\theta_t$: $\eta_t \alpha_t C z / m$ (green)")
    ax2.set_ylabel(r"$\varepsilon$ spent (RDP, $\delta = 10^{-5}$)")
    ax2.spines["right"].set_visible(True)
    ax2.grid(False)
    ax2.legend(fontsize=8, loc="center right")
    ax.set_title(title or "Noise and privacy vs t (W Fig. 1 left)")
    fig.tight_layout()
    return fig


def wu_accuracy_curves(*, steps, acc: dict, title: str = "", ylabel: str = "validation accuracy (%)"):
    """W Fig. 1 right / Fig. 3: mean accuracy over seeds with a one-sd band; ``acc`` maps
    ``"dp"``/``"adp"`` to ``(seeds, n_eval)`` arrays."""
    apply_style()
    fig, ax = plt.subplots()
    for k in ("dp", "adp"):
        a = np.asarray(acc[k], dtype=float)
        m, s = a.mean(0), (a.std(0, ddof=1) if len(a) > 1 else np.zeros(a.shape[1]))
        st = WU_STYLE[k]
        ax.plot(steps, m, ls=st["ls"], color=st["color"], lw=1.6, label=st["label"])
        ax.fill_between(steps, m - s, m + s, color=st["color"], alpha=0.2, lw=0)
    ax.set_xlabel("iteration t")
    ax.set_ylabel(ylabel)
    ax.set_title(title or "Validation accuracy (W Fig. 1 right)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# --- experiments of Hong et al. (H-F-EFF, H-F-SCALE, H-F-CURV, H-F-MOM, H-X-EER breakdown) ---

_KIND_COLORS = {"uni": COLORS["uniform"], "exp": COLORS["exp"], "dyn": COLORS["dynamic"],
                "expinfl": COLORS["exp"], "momexpinfl": COLORS["momentum"]}


def efficiency_figure(*, N, loss: dict, loss_se: dict, acc: dict, acc_se: dict, title: str = ""):
    """001 Fig. 1 middle/right layout: final training loss (left) and test accuracy
    (right) vs the number of training samples N, one line per schedule with 2-SE bars.
    Each dict maps a schedule label ("uni", "exp") to an array over ``N``."""
    apply_style()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for kind in loss:
        c = _KIND_COLORS.get(kind)
        a1.errorbar(N, loss[kind], yerr=2 * np.asarray(loss_se[kind]), fmt="o-", ms=4, color=c, label=kind, capsize=2)
        a2.errorbar(N, acc[kind], yerr=2 * np.asarray(acc_se[kind]), fmt="o-", ms=4, color=c, label=kind, capsize=2)
    for ax, lab in ((a1, "final training loss"), (a2, "test accuracy")):
        ax.set_xscale("log")
        ax.set_xlabel("number of training samples N")
        ax.set_ylabel(lab)
    a1.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def relative_loss_figure(*, panels: dict, xlabel: str = "data scale", ylabel: str = r"$(e - e_{uni}) / e_{uni}$",
                         dashed_label: str = r"$T\,\mathrm{Var}(q_t)$"):
    """000 Fig. 2 middle / Fig. 3 right layout: relative final loss vs data scale (solid,
    left axis, 2-SE bars) per schedule and a dashed influence term on a right axis.
    ``panels``: title -> {"x": array, "curves": {label: (mean, se)}, "dashed": array or None}."""
    apply_style()
    n = len(panels)
    ncols = min(n, 2)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.5 * nrows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax, (title, p) in zip(axes.flat, panels.items()):
        x = np.asarray(p["x"], dtype=float)
        for lab, (m, se) in p["curves"].items():
            ax.errorbar(x, m, yerr=2 * np.asarray(se), fmt="o-", ms=4, capsize=2, color=_KIND_COLORS.get(lab), label=lab)
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
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def curvature_figure(*, curves: dict, means: dict, steps, max_runs: int = 25):
    """000 Fig. 1 layout: trajectories of the training loss of repeated PGD runs on losses
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
        ax.plot([], [], color=col, lw=1.2, label=f"{lab}: runs")
        ax.axhline(means[lab], color=col, ls="--", lw=1.6, label=f"{lab}: mean final loss")
    ax.set_yscale("log")
    ax.set_ylim(bottom=1e-2 * min(means.values()))
    ax.set_xlabel("step t")
    ax.set_ylabel(r"$f(\theta_t) - f^*$")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def wu_gap_grid(*, cells: list, title: str = ""):
    """W Tables 1/2 as a picture: for each cell ``(label, gap_ours, se_ours, gap_paper)`` the
    ADP-SGD minus DP-SGD gain, ours with a 2-se bar, the paper's as a cross."""
    apply_style()
    fig, ax = plt.subplots(figsize=(7.0, max(2.5, 0.28 * len(cells) + 1)))
    y = np.arange(len(cells))
    ours = np.array([c[1] for c in cells], dtype=float)
    se = np.array([c[2] for c in cells], dtype=float)
    paper = np.array([np.nan if c[3] is None else c[3] for c in cells], dtype=float)
    ax.errorbar(ours, y, xerr=2 * np.nan_to_num(se), fmt="o", color="#dd8452", ms=4, label="ours (+- 2 se)")
    ax.plot(paper, y, "x", color="k", label="paper (CIFAR-10)")
    ax.axvline(0, color="0.5", lw=0.8)
    ax.set_yticks(y, [c[0] for c in cells], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ADP-SGD minus DP-SGD accuracy (points)")
    ax.set_title(title or "Gain of ADP-SGD per cell")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def wu_error_vs_epoch(*, epochs, errors: dict, eps_numeric, eps_theory, sigma: float):
    """W Fig. 4 panel: test error vs epoch per c (left axis), accountant epsilon (dashed) and
    Thm 4.1's epsilon_bar (dots) on the right axis."""
    apply_style()
    fig, ax = plt.subplots()
    for label, err in errors.items():
        ax.plot(epochs, err, lw=1.4, label=f"c = {label}")
    ax2 = ax.twinx()
    ax2.plot(epochs, eps_numeric, "k--", lw=1.2, label=r"$\varepsilon$ (RDP accountant)")
    ax2.plot(epochs, eps_theory, "k.", ms=4, label=r"$\bar\varepsilon$ (Thm 4.1)")
    ax2.spines["right"].set_visible(True)
    ax2.grid(False)
    ax.set_xlabel("epoch")
    ax.set_ylabel("test error (%)")
    ax2.set_ylabel("privacy")
    ax.set_title(f"DP-SGD, constant vs decaying step size, sigma = {sigma:g} (W Fig. 4)")
    ax.legend(fontsize=7, loc="upper center")
    ax2.legend(fontsize=7, loc="center right")
    fig.tight_layout()
    return fig


def momentum_schedules_figure(*, panels: dict):
    """000 Fig. 2 right layout: final loss relative to uniform vs data scale, for
    expinfl and momexpinfl, one panel per T. ``panels``: title -> {"x", "curves"} as in
    :func:`relative_loss_figure`."""
    return relative_loss_figure(panels=panels, ylabel=r"$(e - e_{uni}) / e_{uni}$ (momentum DNN)")


def breakdown_figure(*, kappas, Ts, ratio, span, max_span: float, clip_label: str = ""):
    """Where the dynamic schedule breaks (H-X-EER): left, mean excess risk of the clipped
    trainer over the exact no-clipping value on the (kappa, T) grid (log colour, value
    printed in each cell); right, the schedule's span max sigma / min sigma, cells above
    the warning threshold ``max_span`` marked "W". Arrays are ``(len(Ts), len(kappas))``;
    the grid is shown cell by cell (kappa and T as labelled categories)."""
    from matplotlib.colors import LogNorm

    apply_style()
    kappas, Ts = np.asarray(kappas, float), np.asarray(Ts)
    r = np.clip(np.asarray(ratio, float), 1e-2, None)
    sp = np.asarray(span, float)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10.0, 0.5 * len(Ts) + 2.6))
    finite = r[np.isfinite(r)]
    hi = max(float(finite.max()) if finite.size else 10.0, 10.0)
    m1 = a1.imshow(r, origin="lower", aspect="auto", cmap="magma", norm=LogNorm(vmin=0.5, vmax=hi))
    fig.colorbar(m1, ax=a1, label="clipped trainer / exact excess risk")
    m2 = a2.imshow(np.log10(np.maximum(sp, 1.0)), origin="lower", aspect="auto", cmap="viridis")
    fig.colorbar(m2, ax=a2, label=r"$\log_{10}(\max\sigma_t / \min\sigma_t)$")
    for i in range(len(Ts)):
        for j in range(len(kappas)):
            v = r[i, j]
            a1.text(j, i, "n/a" if not np.isfinite(v) else f"{v:.2g}", ha="center", va="center", fontsize=7,
                    color="k" if np.isfinite(v) and v > hi ** 0.6 else "w")
            if sp[i, j] > max_span:
                a2.text(j, i, "W", ha="center", va="center", fontsize=9, color="w", fontweight="bold")
    for ax in (a1, a2):
        ax.set_xticks(range(len(kappas)), [f"{k:g}" for k in kappas])
        ax.set_yticks(range(len(Ts)), [str(int(t)) for t in Ts])
        ax.set_xlabel(r"curvature $\kappa$")
        ax.set_ylabel("T")
        ax.grid(False)
    a1.set_title(f"Thm 4.4 schedule, clipped trainer {clip_label}".strip(), fontsize=10)
    a2.set_title(f"schedule span (W: warning, span > {max_span:g})", fontsize=10)
    fig.tight_layout()
    return fig


# --- tuning traces (issue 21) ---


def tuning_trace(*, entries: list, cells=None, max_cells: int = 6, title: str = "", ylabel: str = "tuning score"):
    """The tuning trace of a tuned experiment: one row of panels per cell, one panel per tuned
    parameter; per method, the best tuning score over the other parameters at each value of
    this one (its profile), the chosen value (star; a circle for the choice within the paper's
    range when a beyond-the-paper setting chose differently) and, dotted, a bound the paper
    stated. ``entries``: the payload's ``tuning`` records
    (:func:`dpcompanion.experiments.tuning.record`); ``cells``: the cells to draw (default:
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
                colour = _KIND_COLORS.get(method, f"C{k}")
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
            ax.set_title(cell, fontsize=8)
            ax.legend(fontsize=7)
        axes[i][0].set_ylabel(ylabel)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
