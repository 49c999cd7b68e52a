"""Forest plots of the verdict rows of the reproduction report: per row with an estimate, our estimate and
95% interval, the paper's value (diamond) or direction (triangle), the margin (grey band), coloured by
verdict, grouped by paper, filled at the paper's scale and open reduced (a square: computed).

Rows are in different units, so each is divided by its own largest absolute value: zero and signs stay,
and the raw numbers are in the figure's data file. Rows are read with ``.get`` (older rows lack fields).
"""

from __future__ import annotations

import math
import os.path
from typing import Any, Iterable

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from dpcompanion.book import plotting

__all__ = ["VERDICT_COLORS", "PAPERS", "forest_rows", "forest_plot", "paper_of"]

#: one colour per verdict word (success and failure differ in hue and lightness: colour-blind safe)
VERDICT_COLORS = {"reproduced": "#1b7837", "check passes": "#1b7837", "equivalent": "#5aae61",
                  "sign only": "#e08214", "in part": "#e08214", "check passes in part": "#e08214",
                  "equivalent in part": "#e08214", "not reproduced": "#b2182b", "check fails": "#b2182b",
                  "inconclusive": "#4d4d4d", "not judged": "#9e9e9e", "holds by construction": "#2166ac"}
#: the groups a forest plot is split into, in this order: page-ID prefix -> heading
PAPERS = (("h-", "Hong, Wang & Zhou (FAccT 2022)"), ("w-", "Wu et al. (ADP-SGD)"), ("", "The book's own checks"))
#: how many characters of a row's item its label keeps
LABEL_CHARS = 40
#: height of one row (inches): 9 pt labels do not touch at the book's column width
ROW_IN = 0.22
#: figure width (inches): the tight bounding box of 9 pt labels stays under the column scale limit
FIG_WIDTH_IN = 6.6
#: room (inches) under the panel for the legend
LEGEND_IN = 0.65


def paper_of(page: str) -> str:
    """The heading of the group a page's rows belong to (:data:`PAPERS`).

    >>> paper_of("h-f-eff"), paper_of("w-t36"), paper_of("accounting")
    ('Hong, Wang & Zhou (FAccT 2022)', 'Wu et al. (ADP-SGD)', "The book's own checks")
    """
    for prefix, name in PAPERS:
        if page.startswith(prefix):
            return name
    return PAPERS[-1][1]  # pragma: no cover - the last prefix matches every page


def _short(item: str, n: int = LABEL_CHARS) -> str:
    """An item cut in its middle to ``n`` characters: rows of one table differ at their end
    (their cell), so both ends are kept.

    >>> _short("Table 1: gain ADP - DP, linear-sqrt, C_G 1, eps_bar 0.8, epoch 30", 30)
    'Table 1: gain…ar 0.8, epoch 30'
    """
    if len(item) <= n:
        return item
    head = n // 2 - 2
    return item[:head].rstrip() + "…" + item[-(n - head - 1):].lstrip()


def _f(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def forest_rows(rows: Iterable[dict]) -> list[dict]:
    """The rows with an estimate, in group order (:data:`PAPERS`), each with its raw numbers, the ``scale``
    it is divided by, ``scale_mark`` (``paper scale``, ``reduced``, ``computed``), ``direction`` and ``label``.

    >>> r = {"page": "w-f1", "item": "gain", "verdict": "reproduced", "paper_value": 2.0,
    ...      "ours": {"estimate": 1.0, "ci_low": 0.5, "ci_high": 1.5}, "at_paper_scale": False,
    ...      "comparable": "direction", "result": {"mode": "full"}}
    >>> [(f["scale"], f["scale_mark"], f["direction"]) for f in forest_rows([r, {"page": "x", "ours": {}}])]
    [(2.0, 'reduced', True)]
    """
    out = []
    for r in rows:
        ours = r.get("ours") or {}
        est = _f(ours.get("estimate"))
        if est is None:
            continue
        lo, hi = _f(ours.get("ci_low")), _f(ours.get("ci_high"))
        paper, margin = _f(r.get("paper_value")), _f(r.get("margin"))
        margin = abs(margin) if margin else None
        # a tolerance against a printed number (no sampling interval: judge_exact) sits around the
        # paper's value; a smallest effect of interest (TOST, rule.with_margin) around zero
        exact = lo is not None and lo == hi == est
        centre = paper if (exact and paper is not None) else 0.0
        ends = [est, lo, hi, paper] + ([centre - margin, centre + margin] if margin else [])
        scale = max(abs(v) for v in ends if v is not None) or 1.0
        mode = (r.get("result") or {}).get("mode")
        at = r.get("at_paper_scale")
        mark = "computed" if at is None or mode == "computed" else ("paper scale" if at else "reduced")
        page = str(r.get("page", ""))
        item = str(r.get("item", ""))
        out.append({"page": page, "item": item, "label": "", "verdict": r.get("verdict", ""),
                    "estimate": est, "ci_low": lo, "ci_high": hi, "paper_value": paper, "margin": margin,
                    "margin_centre": centre, "scale": scale, "scale_mark": mark,
                    "direction": r.get("comparable") == "direction", "mode": mode,
                    "group": paper_of(page)})
    by_page: dict[str, list[dict]] = {}
    for f in out:
        by_page.setdefault(f["page"], []).append(f)
    for page, fs in by_page.items():
        cut = _common_prefix([f["item"] for f in fs])
        for f in fs:
            f["label"] = f"{page}: {_short(f['item'][cut:] or f['item'])}"
    order = {name: i for i, (_, name) in enumerate(PAPERS)}
    return sorted(out, key=lambda f: order[f["group"]])  # stable: the report's order within a group


def _common_prefix(items: list[str]) -> int:
    """Length of the words every item of a page starts with (cut after ", " or ": "); 0 for one item.

    >>> _common_prefix(["Table 3: gain ADP - DP, C_G 1, eps_bar 0.8", "Table 3: gain ADP - DP, C_G 2.5, eps_bar 0.8"])
    24
    >>> _common_prefix(["loss", "loss"]), _common_prefix(["a: b"])
    (0, 0)
    """
    if len(items) < 2:
        return 0
    prefix = os.path.commonprefix(items)
    cut = max(prefix.rfind(", ") + 2 if ", " in prefix else 0, prefix.rfind(": ") + 2 if ": " in prefix else 0)
    return cut if all(len(i) > cut for i in items) else 0


def _series(f: dict) -> str:
    """What the data file says of a row: its page, item, verdict, judged result, raw numbers."""
    g = lambda v: "none" if v is None else f"{v:.6g}"  # noqa: E731
    return (f"{f['page']} | {f['item']} | {f['verdict']} | {f['mode'] or 'no'} result ({f['scale_mark']}) | "
            f"estimate {g(f['estimate'])} [{g(f['ci_low'])}, {g(f['ci_high'])}] | paper {g(f['paper_value'])}"
            + (" (direction)" if f["direction"] else "") + f" | margin {g(f['margin'])} | divided by {g(f['scale'])}")


@plotting.figure_function
def forest_plot(*, rows: list, title: str = ""):
    """The forest plot of verdict rows (see the module docstring): ``rows`` are
    reproduction-report rows (:func:`forest_rows` picks those with an estimate). One line per
    row, headed by its paper; x is the row's numbers divided by its own largest absolute value;
    dotted zero line; legend below."""
    plotting.apply_style()
    frows = forest_rows(rows)
    if not frows:
        raise ValueError("forest_plot needs at least one row with an estimate")
    # y positions, top to bottom, with a heading line before each group
    ys, heads, y = [], [], 0.0
    for i, f in enumerate(frows):
        if i == 0 or f["group"] != frows[i - 1]["group"]:
            heads.append((y, f["group"]))
            y += 1.0
        ys.append(y)
        y += 1.0
    n_lines = y
    fig, ax = plt.subplots(figsize=(FIG_WIDTH_IN, 1.4 + LEGEND_IN + ROW_IN * n_lines))
    for f, yy in zip(frows, ys):
        s, colour, name = f["scale"], VERDICT_COLORS.get(f["verdict"], "#000000"), _series(f)
        if f["margin"]:
            c, m = f["margin_centre"] / s, f["margin"] / s
            ax.fill_between([c - m, c + m], [yy - 0.35] * 2, [yy + 0.35] * 2, color="0.85", lw=0, zorder=1,
                            label=f"{name} | margin band")
        if f["ci_low"] is not None and f["ci_high"] is not None:
            ax.plot([f["ci_low"] / s, f["ci_high"] / s], [yy, yy], "-", color=colour, lw=2, zorder=2,
                    label=f"{name} | 95% interval")
        marker, fill = {"paper scale": ("o", colour), "reduced": ("o", "white"), "computed": ("s", colour)}[f["scale_mark"]]
        ax.plot([f["estimate"] / s], [yy], marker, ms=6, mfc=fill, mec=colour, mew=1.5, zorder=3,
                label=f"{name} | estimate")
        if f["paper_value"] is not None:
            if f["direction"]:
                sign = 1.0 if f["paper_value"] >= 0 else -1.0
                ax.plot([1.12 * sign], [yy], ">" if sign > 0 else "<", ms=6, color="black", zorder=3,
                        label=f"{name} | paper's direction")
            else:
                ax.plot([f["paper_value"] / s], [yy], "D", ms=5, mfc="none", mec="black", zorder=4,
                        label=f"{name} | paper's value")
    ax.axvline(0.0, color="0.3", ls=":", lw=1)
    ax.set_yticks(ys, [f["label"] for f in frows], fontsize=9)
    for yy, name in heads:
        ax.text(-1.25, yy, name, fontsize=9, fontweight="bold", va="center", ha="left")
    ax.set_ylim(n_lines - 0.4, -0.6)
    ax.set_xlim(-1.25, 1.25)
    ax.set_xticks([-1, -0.5, 0, 0.5, 1])
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("each row divided by its largest |value| (raw numbers in the data file)")
    handles = [Line2D([], [], color=VERDICT_COLORS[v], lw=2, label=v)
               for v in VERDICT_COLORS if any(f["verdict"] == v for f in frows)]
    handles += [Line2D([], [], ls="", marker="o", color="0.3", label="paper scale"),
                Line2D([], [], ls="", marker="o", mfc="white", mec="0.3", label="reduced"),
                Line2D([], [], ls="", marker="D", mfc="none", mec="black", label="paper's value"),
                Line2D([], [], ls="", marker=">", color="black", label="paper's direction"),
                Patch(color="0.85", label="margin")]
    height = fig.get_size_inches()[1]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=9, frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout(rect=(0, LEGEND_IN / height, 1, 1))
    return fig


def rows_with_estimates(rows: Iterable[dict]) -> int:
    """How many of ``rows`` a forest plot draws (those with an estimate)."""
    return len(forest_rows(rows))


def left_out_sentence(rows: list) -> str:
    """One sentence under a forest plot: how many rows it draws and leaves out."""
    n, drawn = len(rows), rows_with_estimates(rows)
    if drawn == n:
        return f"All {n} verdict rows are drawn."
    return (f"{drawn} of {n} verdict rows have an estimate and are drawn; the other {n - drawn} (identities, "
            "checks without an interval, pages without a fresh result) are in the table.")

