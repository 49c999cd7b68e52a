"""Forest plots of the verdict rows of the reproduction report: per row with an estimate, our estimate and
95% interval, the paper's value (diamond), a triangle where the row is judged on the paper's direction only,
the margin (grey band); each verdict word its own colour and marker (:data:`VERDICT_STYLES`), the marker
filled at the paper's scale, open reduced, half filled on other data or setup, computed, or in an experiment or
check of our own (:data:`SCALE_FILL`).

One panel per kind of effect (:func:`effect_kind`, read from the units of the rule's margin), each on its
own axis in those units: rows of one panel can be compared, rows of two cannot. A computed value without
units is drawn as ours divided by the paper's value; a row with neither units nor a printed value on an
axis of its own. An interval far wider than the others of its panel is cut at the axis edge, its end written
there (:func:`_shown_limits`). Labels are whole (wrapped, never cut). Rows are read with ``.get`` (older
rows lack fields). Each row's estimate and interval are the figure's points file, and its alt text says the
verdict counts (:func:`finding`).
"""

from __future__ import annotations

import math
import statistics
import textwrap
from typing import Any, Iterable

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from dpcompanion.book import figure_files, plotting
from dpcompanion.experiments.scale_tables import scale_word

__all__ = ["VERDICT_COLORS", "VERDICT_STYLES", "PAPERS", "forest_rows", "forest_plot", "paper_of"]

#: one colour and one marker per verdict word (success greens and blue, partial oranges and browns, failure
#: reds, neutral purple and grey; no two words share either, so a word reads without its colour)
VERDICT_STYLES = {"reproduced": ("#1b7837", "o"), "check passes": ("#5aae61", "s"), "equivalent": ("#01665e", "8"),
                  "holds by construction": ("#2166ac", "p"), "sign only": ("#e08214", "^"), "in part": ("#b35806", "v"),
                  "check passes in part": ("#fdb863", "P"), "equivalent in part": ("#8c510a", "d"),
                  "not reproduced": ("#b2182b", "X"), "check fails": ("#f4a582", "*"), "inconclusive": ("#762a83", "h"),
                  "not judged": ("#9e9e9e", "H")}
#: each verdict word's colour (:data:`VERDICT_STYLES`)
VERDICT_COLORS = {v: c for v, (c, _) in VERDICT_STYLES.items()}
#: how the estimate's marker is filled for each scale mark (the marker's shape is the verdict's)
SCALE_FILL = {"paper scale": "full", "reduced": "none", "other data or setup": "left", "computed": "top",
              "our experiment or own check": "bottom"}
#: the groups a forest plot is split into, in this order: page-ID prefix -> heading
PAPERS = (("h-", "Hong, Wang & Zhou (FAccT 2022)"), ("w-", "Wu et al. (ADP-SGD)"), ("", "The book's own checks"))
#: height of one label line (inches): 9 pt labels do not touch at the book's column width
LINE_IN = 0.2
#: figure width (inches): the tight bounding box of 9 pt labels stays under the column scale limit
FIG_WIDTH_IN = 6.6
#: room (inches) above the legend, and per row of its entries
LEGEND_TOP_IN, LEGEND_ROW_IN = 0.15, 0.2
#: room (inches) for a panel's title above it, for its tick labels below it, for the figure's title
TITLE_IN, TICKS_IN, SUPTITLE_IN = 0.3, 0.35, 0.35
#: the left edge of the panels (a fraction of the width): the row labels sit left of it
LEFT_FRACTION = 0.64


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
    (('accuracy difference, points', 1.0), ('accuracy difference, points per doubling of N', 100.0))
    >>> effect_kind("points of test error"), effect_kind("log ratio of steepness")
    (('test error difference, points', 1.0), ('log ratio', 1.0))
    >>> effect_kind("training loss (nats)"), effect_kind("relative final loss (e_dyn - e_uni) / e_uni")
    (('loss difference', 1.0), ('relative loss difference', 1.0))
    """
    if not units:
        return None
    u = units.lower()
    per = " per doubling of N" if "per doubling" in u else ""
    if "relative" in u:
        return "relative loss difference" + per, 1.0
    if "ratio" in u:
        return "log ratio" + per, 1.0
    if "fraction" in u and "accuracy" in u:
        return "accuracy difference, points" + per, 100.0
    if "error" in u:
        return "test error difference, points" + per, 1.0
    if "accuracy" in u or "points" in u:
        return "accuracy difference, points" + per, 1.0
    if "loss" in u:
        return "loss difference" + per, 1.0
    return units + per, 1.0


#: how to read a forest plot, said above each
READING = ("our estimate with its 95% interval, the paper's value (diamond; a triangle at the edge where the row is "
           "judged on its direction only), the margin where one is declared (grey); each verdict its own colour and "
           "marker (legend), the marker filled at the paper's scale, open reduced, half filled (left) on other data "
           "or setup, half filled (top) computed, half filled (bottom) in an experiment or check of our own. One "
           "panel per kind of effect, each on its own axis in the effect's units (rows of two panels are not "
           "comparable); computed values without units as ours over the paper's, a row without units on an axis of its own. An interval far wider than the others of its panel is cut at "
           "the axis edge, its end written there (\u2192 the value), so that the others stay readable; the points "
           "file keeps its whole interval.")
#: the panel of computed values without units: ours over the paper's printed value
RATIO_KIND = "computed value: ours / the paper's"
#: the rows without units or paper value: each on an axis of its own (its units are its own)
OWN_KIND = "no units stated (one row per axis)"
#: an interval wider than this many times the median width of its panel's intervals is cut at the axis edge
CLIP_WIDTH = 3.0
#: written before (after) the end of an interval cut at the left (right) edge
LEFT_ARROW, RIGHT_ARROW = "\u2190 ", " \u2192"
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
    [('accuracy difference, points', 'reduced', True)]
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
        scope = r.get("scope") or ""
        mark = ("computed" if mode == "computed" else
                "our experiment or own check" if scope in ("own code", "no printed run") or word == "no printed run" else
                "computed" if at is None else "other data or setup" if word.startswith("other")
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
    """The rows by kind, panels in the order their first row appears; the :data:`OWN_KIND` rows last, each in
    a panel of its own (their units differ), numbered when there are several.

    >>> [k for k, _ in panels([{"kind": OWN_KIND}, {"kind": "log ratio"}, {"kind": OWN_KIND}])]
    ['log ratio', 'no units stated (one row per axis) 1', 'no units stated (one row per axis) 2']
    """
    kinds: dict[str, list[dict]] = {}
    own = [f for f in frows if f["kind"] == OWN_KIND]
    for f in frows:
        if f["kind"] != OWN_KIND:
            kinds.setdefault(f["kind"], []).append(f)
    for i, f in enumerate(own, 1):
        kinds[OWN_KIND + (f" {i}" if len(own) > 1 else "")] = [f]
    return list(kinds.items())


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
    axis; one line per row; dotted zero line (one, in the ratio panel); legend below. The panels are
    placed in inches (title, axis, tick labels: none overlaps the next); each row's estimate and interval
    (and the paper's value) are the figure's points file."""
    plotting.apply_style()
    frows = forest_rows(rows)
    if not frows:
        raise ValueError("forest_plot needs at least one row with an estimate")
    groups = panels(frows)
    heights = [sum(f["label"].count("\n") + 1 for f in fs) * LINE_IN + 0.3 for _, fs in groups]
    words = [v for v in VERDICT_STYLES if any(f["verdict"] == v for f in frows)]
    legend_rows = -(-(len(words) + len(SCALE_FILL) + 3) // 3)
    legend_in = LEGEND_TOP_IN + legend_rows * LEGEND_ROW_IN
    top_in = SUPTITLE_IN if title else 0.1
    total = top_in + sum(h + TITLE_IN + TICKS_IN for h in heights) + legend_in
    fig = plt.figure(figsize=(FIG_WIDTH_IN, total))
    y = total - top_in
    for (kind, fs), h in zip(groups, heights):
        y -= TITLE_IN + h
        ax = fig.add_axes((LEFT_FRACTION, y / total, 0.96 - LEFT_FRACTION, h / total))
        _panel(ax, kind, fs)
        y -= TICKS_IN
    handles = [Line2D([], [], color=VERDICT_COLORS[v], marker=VERDICT_STYLES[v][1], lw=2, ms=6, label=v) for v in words]
    handles += [Line2D([], [], ls="", marker="o", ms=6, color="0.3", fillstyle=fill, mfc="0.3", mfcalt="white",
                       mec="0.3", label=mark) for mark, fill in SCALE_FILL.items()]
    handles += [Line2D([], [], ls="", marker="D", mfc="none", mec="black", label="paper's value"),
                Line2D([], [], ls="", marker=">", color="black", label="judged on direction"),
                Patch(color="0.85", label="margin")]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=9, frameon=False, bbox_to_anchor=(0.5, 0.0))
    if title:
        fig.suptitle(title, fontsize=10, y=1 - 0.05 / total, va="top")
    fig.dpcompanion_judged_on = judged_on(rows)  # the caption says which results the rows rest on
    fig.dpcompanion_finding = finding(frows, len(groups))  # the alt text: what the plot shows, then its axes
    fig.dpcompanion_axes_text = "Panels: " + "; ".join(f"{kind} ({len(fs)} row{'s' if len(fs) > 1 else ''})"
                                                       for kind, fs in groups) + "."
    return fig


def finding(frows: list[dict], n_panels: int) -> str:
    """What a forest plot shows, in one sentence (its alt text): the rows drawn, their verdicts, and how
    many 95% intervals exclude the reference (zero; one for ratios).

    >>> f = [{"verdict": "reproduced", "kind": "log ratio", "factor": 1.0, "ci_low": 0.5, "ci_high": 1.5},
    ...      {"verdict": "inconclusive", "kind": "log ratio", "factor": 1.0, "ci_low": -1.0, "ci_high": 2.0}]
    >>> finding(f, 1)
    '2 verdict rows on 1 axis: 1 reproduced, 1 inconclusive; 1 of 2 intervals (95%) excludes zero.'
    """
    counts: dict[str, int] = {}
    for f in frows:
        counts[f["verdict"]] = counts.get(f["verdict"], 0) + 1
    words = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    with_ci = [f for f in frows if f["ci_low"] is not None and f["ci_high"] is not None]
    away = sum(1 for f in with_ci if not (min(f["ci_low"], f["ci_high"]) * f["factor"]
                                          <= (1.0 if f["kind"] == RATIO_KIND else 0.0)
                                          <= max(f["ci_low"], f["ci_high"]) * f["factor"]))
    text = (f"{len(frows)} verdict row{'s' if len(frows) > 1 else ''} on {n_panels} "
            f"ax{'es' if n_panels > 1 else 'is'}: {words}")
    if with_ci:
        ratios = any(f["kind"] == RATIO_KIND for f in with_ci)
        text += (f"; {away} of {len(with_ci)} intervals (95%) exclude{'s' if away == 1 else ''} "
                 + ("the reference (zero; one for ratios)" if ratios else "zero"))
    return text + "."


def _shown_limits(fs: list[dict], ref: float) -> tuple[float, float]:
    """The x range a panel shows: every estimate, paper value, margin and the reference line, and every
    95% interval but those wider than :data:`CLIP_WIDTH` times the median width of the panel's intervals
    (they are cut at the edge). Numbers in the panel's units.

    >>> rows = [{"factor": 1.0, "estimate": e, "ci_low": e - w, "ci_high": e + w, "margin": None,
    ...          "paper_value": None} for e, w in ((0.0, 1.0), (1.0, 2.0), (2.0, 40.0))]
    >>> _shown_limits(rows, 0.0)
    (-1.0, 3.0)
    """
    widths = sorted(abs(f["ci_high"] - f["ci_low"]) * f["factor"] for f in fs
                    if f["ci_low"] is not None and f["ci_high"] is not None)
    median = statistics.median(widths) if widths else 0.0
    ends = [ref]
    for f in fs:
        k = f["factor"]
        ends.append(f["estimate"] * k)
        if f["paper_value"] is not None:
            ends.append(f["paper_value"] * k)
        if f["margin"]:
            ends += [(f["margin_centre"] - f["margin"]) * k, (f["margin_centre"] + f["margin"]) * k]
        if f["ci_low"] is not None and f["ci_high"] is not None:
            width = abs(f["ci_high"] - f["ci_low"]) * k
            if len(widths) < 3 or width <= CLIP_WIDTH * median:
                ends += [f["ci_low"] * k, f["ci_high"] * k]
    return min(ends), max(ends)


def _panel(ax, kind: str, fs: list[dict]) -> None:
    """One kind's rows on one axis in its units (row i at y = its first line, top to bottom); an interval
    beyond the shown range (:func:`_shown_limits`) cut at the edge, its end written there."""
    ys, y = [], 0.0
    for f in fs:
        lines = f["label"].count("\n") + 1
        ys.append(y + (lines - 1) / 2)
        y += lines
    ref = 1.0 if kind == RATIO_KIND else 0.0
    lo, hi = _shown_limits(fs, ref)
    pad = 0.06 * (hi - lo or 1.0)
    x0, x1 = lo - pad, hi + pad
    for f, yy in zip(fs, ys):
        k, name = f["factor"], _series(f)
        colour, marker = VERDICT_STYLES.get(f["verdict"], ("#000000", "o"))
        if f["margin"]:
            c0, c1 = sorted(((f["margin_centre"] - f["margin"]) * k, (f["margin_centre"] + f["margin"]) * k))
            ax.fill_between([c0, c1], [yy - 0.35] * 2, [yy + 0.35] * 2, color="0.85", lw=0, zorder=1,
                            label=f"{name} | margin band")
        if f["ci_low"] is not None and f["ci_high"] is not None:
            lo, hi = sorted((f["ci_low"] * k, f["ci_high"] * k))
            ax.plot([max(lo, x0), min(hi, x1)], [yy, yy], "-", color=colour, lw=2, zorder=2,
                    label=f"{name} | 95% interval" + (" (cut at the axis edge)" if lo < x0 or hi > x1 else ""))
            for end, edge, inside in ((lo, x0, lo < x0), (hi, x1, hi > x1)):
                if inside:  # the interval goes on beyond the axis: its end written at the edge
                    ax.annotate(f"{LEFT_ARROW if end < edge else ''}{end:.3g}{RIGHT_ARROW if end > edge else ''}",
                                (edge, yy), xytext=(0, 3), textcoords="offset points", fontsize=9, color=colour,
                                ha="left" if end < edge else "right", va="bottom")
        ax.plot([f["estimate"] * k], [yy], marker, ms=7, color=colour, fillstyle=SCALE_FILL[f["scale_mark"]],
                mfc=colour, mfcalt="white", mec=colour, mew=1.5, zorder=3, label=f"{name} | estimate")
        if f["paper_value"] is not None:
            ax.plot([f["paper_value"] * k], [yy], "D", ms=5, mfc="none", mec="black", zorder=4,
                    label=f"{name} | paper's value")
            if f["direction"]:
                right = f["paper_value"] >= 0
                ax.plot([1.0 if right else 0.0], [yy], ">" if right else "<", ms=6, color="black", zorder=3,
                        clip_on=False, transform=ax.get_yaxis_transform(), label=f"{name} | judged on direction")
        figure_files.record_points(ax, series=f["label"].replace("\n", " "), x=[f["label"].replace("\n", " ")],
                                   y=[f["estimate"] * k], low=[f["ci_low"] * k if f["ci_low"] is not None else None],
                                   high=[f["ci_high"] * k if f["ci_high"] is not None else None],
                                   statistic="estimate", x_variable="verdict row",
                                   bar="95% interval" if f["ci_low"] is not None and f["ci_high"] is not None else "",
                                   y_variable=kind, extra={"verdict": f["verdict"], "scale": f["scale_mark"],
                                                           "paper_value": f["paper_value"] * k
                                                           if f["paper_value"] is not None else None})
    ax.axvline(ref, color="0.3", ls=":", lw=1)
    ax.set_xlim(x0, x1)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4))  # a narrow axis beside whole labels
    ax.set_yticks(ys, [f["label"] for f in fs], fontsize=9)
    ax.set_ylim(y - 0.4, -0.6)
    ax.grid(axis="y", visible=False)
    # the panel's title starts at the figure's left, over the row labels: a long kind never runs off the right edge
    left = ax.get_position().x0
    ax.set_title(kind, fontsize=9, loc="left", x=(0.02 - left) / ax.get_position().width, fontweight="bold")


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

