"""Forest plots of the verdict rows of the reproduction report: per row with an estimate, our estimate and
95% interval, the paper's value (diamond), a triangle where the row is judged on the paper's direction only,
the margin (grey band), coloured by verdict, filled at the paper's scale and open reduced (a square:
computed).

One panel per kind of effect (:func:`effect_kind`, read from the units of the rule's margin), each on its
own axis in those units: rows of one panel can be compared, rows of two cannot. A computed value without
units is drawn as ours divided by the paper's value. Labels are whole (wrapped, never cut). Rows are read
with ``.get`` (older rows lack fields).
"""

from __future__ import annotations

import math
import textwrap
from typing import Any, Iterable

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from dpcompanion.book import plotting
from dpcompanion.experiments.scale_tables import scale_word

__all__ = ["VERDICT_COLORS", "PAPERS", "forest_rows", "forest_plot", "paper_of"]

#: one colour per verdict word (success and failure differ in hue and lightness: colour-blind safe)
VERDICT_COLORS = {"reproduced": "#1b7837", "check passes": "#1b7837", "equivalent": "#5aae61",
                  "sign only": "#e08214", "in part": "#e08214", "check passes in part": "#e08214",
                  "equivalent in part": "#e08214", "not reproduced": "#b2182b", "check fails": "#b2182b",
                  "inconclusive": "#4d4d4d", "not judged": "#9e9e9e", "holds by construction": "#2166ac"}
#: the groups a forest plot is split into, in this order: page-ID prefix -> heading
PAPERS = (("h-", "Hong, Wang & Zhou (FAccT 2022)"), ("w-", "Wu et al. (ADP-SGD)"), ("", "The book's own checks"))
#: height of one label line (inches): 9 pt labels do not touch at the book's column width
LINE_IN = 0.2
#: a panel's title and axis (inches)
PANEL_IN = 0.75
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


def effect_kind(units: str | None) -> tuple[str, float] | None:
    """The panel a rule's effect is drawn in and the factor to that panel's units, from the units of its
    margin; None without units.

    >>> effect_kind("points of accuracy"), effect_kind("test accuracy (fraction) per doubling of N")
    (('accuracy or error difference, points', 1.0), ('accuracy difference, points per doubling of N', 100.0))
    >>> effect_kind("training loss (nats)"), effect_kind("relative final loss (e_dyn - e_uni) / e_uni")
    (('loss difference', 1.0), ('relative loss or log ratio', 1.0))
    """
    if not units:
        return None
    u = units.lower()
    per = " per doubling of N" if "per doubling" in u else ""
    if "relative" in u or "ratio" in u:
        return "relative loss or log ratio" + per, 1.0
    if "fraction" in u and "accuracy" in u:
        return "accuracy difference, points" + per, 100.0
    if "accuracy" in u or "error" in u or "points" in u:
        return "accuracy or error difference, points" + per, 1.0
    if "loss" in u:
        return "loss difference" + per, 1.0
    return units + per, 1.0


#: how to read a forest plot, said above each
READING = ("our estimate with its 95% interval, the paper's value (diamond; a triangle at the edge where the row is "
           "judged on its direction only), the margin where one is declared (grey), coloured by verdict; filled dots "
           "at the paper's scale, open dots reduced, squares computed. One panel per kind of effect, each on its own "
           "axis in the effect's units (rows of two panels are not comparable); computed values without units as "
           "ours over the paper's.")
#: the panel of computed values without units: ours over the paper's printed value
RATIO_KIND = "computed value: ours / the paper's"
#: the panel of the rest (no units, no paper value): each row in its own units
OWN_KIND = "other: each row in its own units"
#: characters per line of a wrapped label
LABEL_CHARS = 60


def _f(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def forest_rows(rows: Iterable[dict]) -> list[dict]:
    """The rows with an estimate, in group order (:data:`PAPERS`), each with its raw numbers, ``kind``
    (:func:`effect_kind`, :data:`RATIO_KIND` or :data:`OWN_KIND`), ``factor`` to the panel's units (the
    plotted numbers are the raw ones times it; for :data:`RATIO_KIND` one over the paper's value),
    ``scale_mark`` (``paper scale``, ``reduced``, ``other data or setup``, ``computed``), ``direction`` and a whole ``label``.

    >>> r = {"page": "w-f1", "item": "gain", "verdict": "reproduced", "paper_value": 2.0, "units": "points of accuracy",
    ...      "ours": {"estimate": 1.0, "ci_low": 0.5, "ci_high": 1.5}, "at_paper_scale": False,
    ...      "comparable": "direction", "result": {"mode": "full"}}
    >>> [(f["kind"], f["scale_mark"], f["direction"]) for f in forest_rows([r, {"page": "x", "ours": {}}])]
    [('accuracy or error difference, points', 'reduced', True)]
    >>> forest_rows([{"page": "w-eps", "item": "eps", "paper_value": 0.5, "ours": {"estimate": 0.25}}])[0]["factor"]
    2.0
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
        kind = effect_kind(r.get("units"))
        if kind is not None:
            kind, factor = kind
        elif paper:
            kind, factor = RATIO_KIND, 1.0 / paper
        else:
            kind, factor = OWN_KIND, 1.0
        # a tolerance against a printed number (no sampling interval: judge_exact) sits around the
        # paper's value; a smallest effect of interest (TOST, rule.with_margin) around zero
        exact = lo is not None and lo == hi == est
        centre = paper if (exact and paper is not None) else 0.0
        mode = (r.get("result") or {}).get("mode")
        at = r.get("at_paper_scale")
        word = scale_word(r["scale"]) if r.get("scale") else ""  # the caption's word for the result's scale
        mark = ("computed" if at is None or mode == "computed" else "other data or setup" if word.startswith("other")
                else "paper scale" if at else "reduced")
        page = str(r.get("page", ""))
        item = str(r.get("item", ""))
        out.append({"page": page, "item": item, "label": "\n".join(textwrap.wrap(f"{page}: {item}", LABEL_CHARS)),
                    "verdict": r.get("verdict", ""), "estimate": est, "ci_low": lo, "ci_high": hi,
                    "paper_value": paper, "margin": margin, "margin_centre": centre, "kind": kind,
                    "units": r.get("units"), "factor": factor, "scale_mark": mark,
                    "direction": r.get("comparable") == "direction", "mode": mode, "group": paper_of(page)})
    if len({f["page"] for f in out}) == 1:  # one page's plot, on that page: its name would repeat on every row
        for f in out:
            f["label"] = "\n".join(textwrap.wrap(f["item"], LABEL_CHARS))
    order = {name: i for i, (_, name) in enumerate(PAPERS)}
    return sorted(out, key=lambda f: order[f["group"]])  # stable: the report's order within a group


def panels(frows: list[dict]) -> list[tuple[str, list[dict]]]:
    """The rows by kind, panels in the order their first row appears, :data:`OWN_KIND` last."""
    kinds: dict[str, list[dict]] = {}
    for f in frows:
        kinds.setdefault(f["kind"], []).append(f)
    return sorted(kinds.items(), key=lambda kv: kv[0] == OWN_KIND)


def judged_on(rows: Iterable[dict]) -> str:
    """Which results the rows with an estimate were judged on, for a caption.

    >>> judged_on([{"ours": {"estimate": 1}, "result": {"mode": "paper"}}, {"ours": {"estimate": 2}}])
    'rows judged on: 1 paper-mode result row, 1 computed row'
    """
    counts: dict[str, int] = {}
    for f in forest_rows(rows):
        key = "computed" if f["mode"] in (None, "computed") else f"{f['mode']}-mode result"
        counts[key] = counts.get(key, 0) + 1
    return "rows judged on: " + ", ".join(f"{n} {k} row" + ("s" if n > 1 else "") for k, n in counts.items())


def _series(f: dict) -> str:
    """What the data file says of a row: its page, item, verdict, judged result, raw numbers."""
    g = lambda v: "none" if v is None else f"{v:.6g}"  # noqa: E731
    return (f"{f['page']} | {f['item']} | {f['verdict']} | {f['mode'] or 'no'} result ({f['scale_mark']}) | "
            f"estimate {g(f['estimate'])} [{g(f['ci_low'])}, {g(f['ci_high'])}] | paper {g(f['paper_value'])}"
            + (" (direction)" if f["direction"] else "") + f" | margin {g(f['margin'])} | units {f['units'] or 'none'}"
            + f" | plotted times {g(f['factor'])}")


@plotting.figure_function
def forest_plot(*, rows: list, title: str = ""):
    """The forest plot of verdict rows (see the module docstring): ``rows`` are reproduction-report rows
    (:func:`forest_rows` picks those with an estimate). One panel per kind of effect, each with its own x
    axis; one line per row; dotted zero line (one, in the ratio panel); legend below."""
    plotting.apply_style()
    frows = forest_rows(rows)
    if not frows:
        raise ValueError("forest_plot needs at least one row with an estimate")
    groups = panels(frows)
    heights = [sum(f["label"].count("\n") + 1 for f in fs) * LINE_IN + PANEL_IN for _, fs in groups]
    fig, axes = plt.subplots(len(groups), 1, figsize=(FIG_WIDTH_IN, sum(heights) + LEGEND_IN + 0.4),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (kind, fs) in zip(axes[:, 0], groups):
        _panel(ax, kind, fs)
    handles = [Line2D([], [], color=VERDICT_COLORS[v], lw=2, label=v)
               for v in VERDICT_COLORS if any(f["verdict"] == v for f in frows)]
    handles += [Line2D([], [], ls="", marker="o", color="0.3", label="paper scale"),
                Line2D([], [], ls="", marker="o", mfc="white", mec="0.3", label="reduced"),
                Line2D([], [], ls="", marker="^", mfc="white", mec="0.3", label="other data or setup"),
                Line2D([], [], ls="", marker="s", color="0.3", label="computed"),
                Line2D([], [], ls="", marker="D", mfc="none", mec="black", label="paper's value"),
                Line2D([], [], ls="", marker=">", color="black", label="judged on direction"),
                Patch(color="0.85", label="margin")]
    height = fig.get_size_inches()[1]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=9, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, LEGEND_IN / height, 1, 1))
    fig.dpcompanion_judged_on = judged_on(rows)  # the caption says which results the rows rest on
    return fig


def _panel(ax, kind: str, fs: list[dict]) -> None:
    """One kind's rows on one axis in its units (row i at y = its first line, top to bottom)."""
    ys, y = [], 0.0
    for f in fs:
        lines = f["label"].count("\n") + 1
        ys.append(y + (lines - 1) / 2)
        y += lines
    ends = []
    for f, yy in zip(fs, ys):
        k, colour, name = f["factor"], VERDICT_COLORS.get(f["verdict"], "#000000"), _series(f)
        if f["margin"]:
            c0, c1 = sorted(((f["margin_centre"] - f["margin"]) * k, (f["margin_centre"] + f["margin"]) * k))
            ax.fill_between([c0, c1], [yy - 0.35] * 2, [yy + 0.35] * 2, color="0.85", lw=0, zorder=1,
                            label=f"{name} | margin band")
            ends += [c0, c1]
        if f["ci_low"] is not None and f["ci_high"] is not None:
            lo, hi = sorted((f["ci_low"] * k, f["ci_high"] * k))
            ax.plot([lo, hi], [yy, yy], "-", color=colour, lw=2, zorder=2, label=f"{name} | 95% interval")
            ends += [lo, hi]
        marker, fill = {"paper scale": ("o", colour), "reduced": ("o", "white"), "computed": ("s", colour),
                        "other data or setup": ("^", "white")}[f["scale_mark"]]
        ax.plot([f["estimate"] * k], [yy], marker, ms=6, mfc=fill, mec=colour, mew=1.5, zorder=3,
                label=f"{name} | estimate")
        ends.append(f["estimate"] * k)
        if f["paper_value"] is not None:
            ax.plot([f["paper_value"] * k], [yy], "D", ms=5, mfc="none", mec="black", zorder=4,
                    label=f"{name} | paper's value")
            ends.append(f["paper_value"] * k)
            if f["direction"]:
                right = f["paper_value"] >= 0
                ax.plot([1.0 if right else 0.0], [yy], ">" if right else "<", ms=6, color="black", zorder=3,
                        clip_on=False, transform=ax.get_yaxis_transform(), label=f"{name} | judged on direction")
    ref = 1.0 if kind == RATIO_KIND else 0.0
    ax.axvline(ref, color="0.3", ls=":", lw=1)
    lo, hi = min(ends + [ref]), max(ends + [ref])
    pad = 0.06 * (hi - lo or 1.0)
    ax.set_xlim(lo - pad, hi + pad)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4))  # a narrow axis beside whole labels
    ax.set_yticks(ys, [f["label"] for f in fs], fontsize=9)
    ax.set_ylim(y - 0.4, -0.6)
    ax.grid(axis="y", visible=False)
    ax.set_title(kind, fontsize=9, loc="left")


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

