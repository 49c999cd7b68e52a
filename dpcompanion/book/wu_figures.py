"""Plot functions of Wu et al.'s experiment pages (w-f1, w-t1245, w-t36, w-ladder, w-f4), of a stored
result's arrays.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FixedLocator, NullFormatter

from dpcompanion.book.figure_files import draw_mean_se, record_points
from dpcompanion.book.plotting import apply_style, figure_function, finish

#: DP-SGD dashed, ADP-SGD solid, as in W's figures
WU_STYLE = {"dp": dict(ls="--", color="#4c72b0", label="DP-SGD ($\\alpha_t = 1$)"),
            "adp": dict(ls="-", color="#dd8452", label="ADP-SGD ($\\alpha_t = 1/\\sqrt{\\eta_t}$)")}


@figure_function
def wu_noise_privacy(*, t, noise: dict, eps: dict, title: str = ""):
    """W Fig. 1 left: the noise added to the parameters (left axis, log) and the privacy spent
    (right axis) vs t; ``noise``/``eps`` map ``"dp"``/``"adp"`` to arrays over ``t``."""
    apply_style()
    fig, ax = plt.subplots()
    ax2 = ax.twinx()
    for k in ("dp", "adp"):
        st = WU_STYLE[k]
        ax.plot(t, noise[k], ls=st["ls"], color="#55a868", lw=1.6, label=f"noise std, {st['label']}")  # no legend
        ax2.plot(t, eps[k], ls=st["ls"], color=st["color"], lw=1.6, label=st["label"])
    ax.set_yscale("log")
    ax.set_xlabel("iteration t")
    ax.set_ylabel(r"noise std on $\theta_t$: $\eta_t \alpha_t C z / m$ (green)")
    ax2.set_ylabel(r"$\varepsilon$ spent (RDP, $\delta = 10^{-5}$)")
    ax2.spines["right"].set_visible(True)
    ax2.grid(False)
    ax2.legend(fontsize=9, loc="center right")
    ax.set_title(title or "Noise and privacy vs t (W Fig. 1 left)")
    fig.tight_layout()
    return fig


@figure_function
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
        record_points(ax, series=st["label"], x=steps, y=m, n=len(a), low=m - s, high=m + s, statistic="mean",
                      bar="1 sd over seeds")
    return finish(fig, ax, xlabel="iteration t", ylabel=ylabel, title=title or "Validation accuracy (W Fig. 1 right)")


@figure_function
def wu_gap_grid(*, cells: list, title: str = "", n=None):
    """W Tables 1/2 as a picture: for each cell ``(label, gap_ours, se_ours, gap_paper)`` the
    ADP-SGD minus DP-SGD gain, ours with a 2-se bar, the paper's as a cross; ``n``: the seeds behind each gain."""
    apply_style()
    fig, ax = plt.subplots(figsize=(7.0, max(2.5, 0.34 * len(cells) + 1.2)))
    y = np.arange(len(cells))
    ours = np.array([c[1] for c in cells], dtype=float)
    se = np.array([c[2] for c in cells], dtype=float)
    paper = np.array([np.nan if c[3] is None else c[3] for c in cells], dtype=float)
    draw_mean_se(ax, y, ours, se, n=n, horizontal=True, categories=[c[0] for c in cells], x_variable="cell",
                 fmt="o", color="#dd8452", ms=4, label="ours (+- 2 se)")
    ax.plot(paper, y, "x", color="k", label="paper (CIFAR-10)")
    record_points(ax, series="paper (CIFAR-10)", x=y, y=paper, categories=[c[0] for c in cells], x_variable="cell",
                  horizontal=True, statistic="paper's value")
    ax.axvline(0, color="0.5", lw=0.8)
    ax.set_yticks(y, [c[0] for c in cells], fontsize=9)
    ax.invert_yaxis()
    return finish(fig, ax, xlabel="ADP-SGD minus DP-SGD accuracy (points)", title=title or "Gain of ADP-SGD per cell")


@figure_function
def wu_error_vs_epoch(*, epochs, errors: dict, eps_numeric, eps_theory, sigma: float):
    """W Fig. 4 panel: test error vs epoch per c (left axis), accountant epsilon (dashed) and
    Thm 4.1's epsilon_bar (dots) on the right axis. The error axis is logarithmic (when every
    error is positive): the first epoch's ~90% error would otherwise squeeze the curves of
    the six c values, which end a few points apart, into one line near zero; one legend, below
    the panel, so that no curve runs through it."""
    apply_style()
    fig, ax = plt.subplots(figsize=(7.0, 4.3))
    for label, err in errors.items():
        ax.plot(epochs, err, lw=1.4, label=f"c = {label}")
    if all(np.all(np.asarray(err, float) > 0) for err in errors.values()):
        ax.set_yscale("log")
        ticks = [1, 2, 5, 10, 20, 50, 100]
        ax.yaxis.set_major_locator(FixedLocator(ticks))
        ax.set_yticklabels([f"{v:g}" for v in ticks])
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax2 = ax.twinx()
    ax2.plot(epochs, eps_numeric, "k--", lw=1.2, label=r"$\varepsilon$ (RDP accountant)")
    ax2.plot(epochs, eps_theory, "k.", ms=4, label=r"$\bar\varepsilon$ (Thm 4.1)")
    ax2.spines["right"].set_visible(True)
    ax2.grid(False)
    ax2.set_ylabel("privacy")
    handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    return finish(fig, ax, xlabel="epoch", ylabel="test error (%)",
                  title=f"DP-SGD, constant vs decaying step size, sigma = {sigma:g} (W Fig. 4)",
                  legend={"handles": handles, "loc": "upper center", "bbox_to_anchor": (0.5, -0.16), "ncol": 4})
