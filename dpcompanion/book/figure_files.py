"""A published figure's data file (:func:`figure_data`, read back from its artists, so it is exactly what
is drawn) and its script (:func:`figure_script`: :data:`REDRAW_SOURCE` redraws the figure from that file
with matplotlib alone). Nothing here knows of pages, results or dpcompanion.
"""

from __future__ import annotations

import csv
import inspect
import os
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import LineCollection, PathCollection, PolyCollection
from matplotlib.colors import LogNorm, Normalize, to_hex, to_rgba
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator

# --- what a figure plots, read back from its artists ---

#: the columns of a figure's data file (:func:`figure_data`)
DATA_COLUMNS = ("panel", "x_axis", "y_axis", "x_scale", "y_scale", "series", "kind", "point", "x", "y",
                "x_low", "x_high", "y_low", "y_high", "value", "text", "color", "style")
#: the kinds of row that are plotted data (the others describe the figure, a panel, a legend or ticks)
DATA_KINDS = ("line", "errorbar", "hline", "vline", "polygon", "bar", "segment", "scatter", "cell", "text")


def _panel_names(fig) -> dict:
    """Each axis's name in the data file: its title, "panel i" when untitled, a title that
    several panels share numbered " #k" (the redraw strips the number from the title it sets),
    a twin axis named after its host panel."""
    names, titles = {}, [ax.get_title() or ax.get_title(loc="left") or "" for ax in fig.axes]
    for i, (ax, title) in enumerate(zip(fig.axes, titles), 1):
        names[ax] = title or f"panel {i}"
        if title and titles.count(title) > 1:
            names[ax] = f"{title} #{titles[:i].count(title)}"
    for ax in fig.axes:  # a twin axis is named after its host panel
        host = [o for o in fig.axes if o is not ax and o.get_position().bounds == ax.get_position().bounds
                and not getattr(o, "_colorbar", None)]
        if host and not ax.get_title():
            names[ax] = names[host[0]] + " (right axis)"
    return names


def _num(v):
    if isinstance(v, str):  # a label (heatmap categories), kept as written
        return v
    try:
        f = float(v)
    except (TypeError, ValueError):
        return v
    return repr(f) if np.isfinite(f) else str(f)


def _hex(color, alpha=None) -> str:
    """A colour as ``#rrggbb`` (``#rrggbbaa`` when not opaque); empty for none."""
    try:
        rgba = to_rgba(color, alpha)
    except (TypeError, ValueError):
        return ""
    return to_hex(rgba, keep_alpha=rgba[3] < 1)


def _nth_color(colors, i: int) -> str:
    """The ``i``-th of a collection's colours (they cycle, as matplotlib draws them)."""
    colors = np.atleast_2d(colors)
    return _hex(colors[i % len(colors)]) if colors.size else ""


def _style(**kw) -> str:
    """The ``style`` column: ``key=value`` pairs joined by ``;`` (read back by ``parse_style``)."""
    return ";".join(f"{k}={v}" for k, v in kw.items())


def _line_style(line) -> dict:
    marker = line.get_marker()
    fill = {} if line.get_fillstyle() == "full" else {
        "fillstyle": line.get_fillstyle(), "mfcalt": _hex(line.get_markerfacecoloralt()) or "none"}
    return {"color": _hex(line.get_color(), line.get_alpha()),
            "style": _style(marker=marker if isinstance(marker, str) else "o", linestyle=line.get_linestyle(),
                            linewidth=line.get_linewidth(), markersize=line.get_markersize(),
                            mfc=_hex(line.get_markerfacecolor()) or "none",
                            mec=_hex(line.get_markeredgecolor()) or "none", **fill)}


def _handle_style(handle) -> dict:
    """How a legend entry's handle looks: a line or marker, or a filled patch (style ``patch``)."""
    if isinstance(handle, Line2D):
        return _line_style(handle)
    if isinstance(handle, PathCollection):
        return {"color": _nth_color(handle.get_facecolor(), 0), "style": _style(marker="o", linestyle="None")}
    face = handle.get_facecolor() if hasattr(handle, "get_facecolor") else None
    if isinstance(handle, LineCollection):
        return {"color": _nth_color(handle.get_edgecolor(), 0), "style": _style(marker="None", linestyle="-")}
    return {"color": _nth_color(face, 0) if face is not None else "", "style": "patch"}


def figure_data(fig) -> list[dict[str, Any]]:
    """Every plotted datum of ``fig``, one row per point (:data:`DATA_COLUMNS`), enough to redraw it
    (:data:`REDRAW_SOURCE`). Row kinds: ``figure`` (``x``/``y`` its size in inches, ``text`` its title);
    ``panel`` (view limits in ``x_low``/``x_high``, ``y_low``/``y_high`` in that order, so an inverted axis
    stays inverted; ``text`` "left bottom width height"); ``xtick``/``ytick`` (ticks the plot function
    placed); ``legend`` (``panel`` empty for a figure legend); and the :data:`DATA_KINDS`. ``style`` holds
    ``key=value`` pairs joined by ``;`` (``patch``: a legend entry drawn as a filled patch); error bars and
    bars give their ends in ``x_low``..``y_high``; a heatmap ``cell`` has ``point`` "row.column" and
    ``value``. Values are data coordinates, before any log axis.

    >>> fig, ax = plt.subplots(); _ = ax.plot([1, 2], [3, 4], label="a"); _ = ax.axhline(0.5)
    >>> [(r["series"], r["kind"], r["x"], r["y"]) for r in figure_data(fig) if r["kind"] in DATA_KINDS]
    [('a', 'line', '1.0', '3.0'), ('a', 'line', '2.0', '4.0'), ('', 'hline', '', '0.5')]
    >>> plt.close(fig)
    """
    rows: list[dict[str, Any]] = []
    names = _panel_names(fig)

    def add(ax, series, kind, i, **kw):
        row = dict.fromkeys(DATA_COLUMNS, "")
        if ax is not None:
            row.update(panel=names[ax], x_axis=ax.get_xlabel(), y_axis=ax.get_ylabel(), x_scale=ax.get_xscale(),
                       y_scale=ax.get_yscale())
        row.update(series=series, kind=kind, point=i)
        row.update({k: v if k in ("text", "color", "style") else _num(v) for k, v in kw.items()})
        rows.append(row)

    def label(artist):
        lab = artist.get_label() or ""
        return "" if lab.startswith("_") else lab

    def legend(ax, leg):
        for i, (handle, text) in enumerate(zip(leg.legend_handles, leg.get_texts())):
            if handle is not None:
                add(ax, "", "legend", i, text=text.get_text(), **_handle_style(handle))

    width, height = fig.get_size_inches()
    add(None, "", "figure", "", x=width, y=height, text=fig.get_suptitle())
    for ax in fig.axes:
        if not ax.get_visible() or getattr(ax, "_colorbar", None) is not None:
            continue
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        add(ax, "", "panel", "", x_low=x0, x_high=x1, y_low=y0, y_high=y1,
            text=" ".join(repr(float(v)) for v in ax.get_position().bounds))
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            locator = axis.get_major_locator()
            if isinstance(locator, FixedLocator):  # ticks the plot function placed (and labelled)
                locs = list(locator.locs)
                for i, (pos, text) in enumerate(zip(locs, axis.get_major_formatter().format_ticks(locs))):
                    add(ax, "", f"{name}tick", i, text=str(text), **{name: pos})
        if ax.get_legend() is not None:
            legend(ax, ax.get_legend())
        seen = set()
        for c in ax.containers:
            if isinstance(c, BarContainer):
                horizontal = getattr(c, "orientation", None) == "horizontal"
                for i, rect in enumerate(c.patches):
                    x0, y0, w, h = rect.get_x(), rect.get_y(), rect.get_width(), rect.get_height()
                    ends = dict(x_low=x0, x_high=x0 + w, y_low=y0, y_high=y0 + h, color=_hex(rect.get_facecolor()),
                                style=_style(orientation="horizontal" if horizontal else "vertical"))
                    if horizontal:
                        add(ax, label(c), "bar", i, x=x0 + w, y=y0 + h / 2, **ends)
                    else:
                        add(ax, label(c), "bar", i, x=x0 + w / 2, y=y0 + h, **ends)
            if isinstance(c, ErrorbarContainer):
                data_line, caps, bars = c.lines
                lab = label(c) or (label(data_line) if data_line is not None else "")
                if data_line is not None:
                    seen.add(id(data_line))
                    xs, ys = data_line.get_xdata(), data_line.get_ydata()
                else:  # pragma: no cover - fmt="none"
                    xs = ys = []
                for a in caps:
                    seen.add(id(a))
                ends = {}
                # matplotlib draws the horizontal bars (xerr) first, then the vertical ones (yerr)
                for col, axis in zip(bars, [a for a, has in (("x", c.has_xerr), ("y", c.has_yerr)) if has]):
                    seen.add(id(col))
                    segs = col.get_segments()
                    if len(segs) == len(ys):
                        k = 0 if axis == "x" else 1
                        ends[f"{axis}_low"] = [min(s[0][k], s[1][k]) if len(s) == 2 else np.nan for s in segs]
                        ends[f"{axis}_high"] = [max(s[0][k], s[1][k]) if len(s) == 2 else np.nan for s in segs]
                style = _line_style(data_line) if data_line is not None else {}
                for i, (x, y) in enumerate(zip(xs, ys)):
                    add(ax, lab, "errorbar", i, x=x, y=y, **{k: v[i] for k, v in ends.items()}, **style)
        for line in ax.lines:
            if id(line) in seen or not isinstance(line, Line2D):
                continue
            xs, ys = np.asarray(line.get_xdata(), dtype=object), np.asarray(line.get_ydata(), dtype=object)
            if len(xs) == 0:
                continue  # a legend-only handle
            style = _line_style(line)
            if line.get_transform() != ax.transData and len(xs) == 2:
                if list(map(float, xs)) == [0.0, 1.0] and ys[0] == ys[1]:
                    add(ax, label(line), "hline", "", y=ys[0], **style)
                    continue
                if list(map(float, ys)) == [0.0, 1.0] and xs[0] == xs[1]:
                    add(ax, label(line), "vline", "", x=xs[0], **style)
                    continue
            for i, (x, y) in enumerate(zip(xs, ys)):
                add(ax, label(line), "line", i, x=x, y=y, **style)
        for col in ax.collections:
            if id(col) in seen:
                continue
            if isinstance(col, LineCollection):
                for i, seg in enumerate(col.get_segments()):
                    color = _nth_color(col.get_edgecolor(), i)
                    for j, (x, y) in enumerate(seg):
                        add(ax, label(col), "segment", f"{i}.{j}", x=x, y=y, color=color, style="linestyle=-")
            elif isinstance(col, PolyCollection):
                for i, path in enumerate(col.get_paths()):
                    color = _nth_color(col.get_facecolor(), i)
                    for j, (x, y) in enumerate(path.vertices):
                        add(ax, label(col), "polygon", f"{i}.{j}", x=x, y=y, color=color)
            elif isinstance(col, PathCollection):
                for i, (x, y) in enumerate(col.get_offsets()):
                    add(ax, label(col), "scatter", i, x=x, y=y, color=_nth_color(col.get_facecolor(), i),
                        style="marker=o")
        for im in ax.images:
            if not isinstance(im, AxesImage):
                continue
            arr = np.ma.filled(np.ma.asarray(im.get_array(), dtype=float), np.nan)
            xt = {int(round(t)): lab.get_text() for t, lab in zip(ax.get_xticks(), ax.get_xticklabels())}
            yt = {int(round(t)): lab.get_text() for t, lab in zip(ax.get_yticks(), ax.get_yticklabels())}
            scale = _style(cmap=im.get_cmap().name, norm="log" if isinstance(im.norm, LogNorm) else "linear",
                           vmin=repr(float(im.norm.vmin)), vmax=repr(float(im.norm.vmax)))  # the colour scale
            for r in range(arr.shape[0]):
                for c in range(arr.shape[1]):
                    add(ax, label(im), "cell", f"{r}.{c}", x=xt.get(c, c), y=yt.get(r, r), value=arr[r, c],
                        color=_hex(im.to_rgba(arr[r, c])) if np.isfinite(arr[r, c]) else "", style=scale)
        for t in ax.texts:
            if t.get_visible() and t.get_text():
                x, y = t.get_position() if not hasattr(t, "xy") else t.xy
                add(ax, "", "text", "", x=x, y=y, text=t.get_text(), color=_hex(t.get_color()),
                    style=_style(ha=t.get_horizontalalignment(), va=t.get_verticalalignment(), weight=t.get_fontweight()))
    for leg in fig.legends:
        legend(None, leg)
    return rows


def write_figure_data(fig, path: str | os.PathLike) -> Path:
    """Write :func:`figure_data` of ``fig`` as CSV to ``path``; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=DATA_COLUMNS)
        w.writeheader()
        w.writerows(figure_data(fig))
    return path


# --- the points a figure plots, tidy: one row per point, with its variables, SE and n where known ---

#: the columns of a figure's points file (:func:`write_points`): ``statistic`` says what ``value`` is (a
#: ``mean`` with its standard error ``se`` over ``n`` samples, an ``estimate`` with its interval, a computed
#: ``value``); ``low``/``high`` are the ends of the bar drawn, ``bar`` what it is; ``note`` holds the rest
POINT_COLUMNS = ("panel", "series", "x_variable", "x", "y_variable", "statistic", "value", "se", "n", "low", "high",
                 "bar", "note")


def record_points(ax, *, series: str, x, y, se=None, n=None, low=None, high=None, statistic: str = "value",
                  bar: str = "", categories=None, x_variable: str | None = None, y_variable: str | None = None,
                  horizontal: bool = False, extra: dict | None = None) -> None:
    """Record points plotted on ``ax`` for the figure's points file (:func:`points`): ``x`` the positions
    (named by ``categories`` when they are categories), ``y`` the values; ``se``, ``n``, ``low``, ``high``
    one per point (or none); ``x_variable``/``y_variable`` name the variables (default: the axes' labels
    when the file is written; ``horizontal``: the values are along x). An axis with recorded points
    contributes only those to the file; ``extra`` goes to the ``note`` column."""
    x = list(np.atleast_1d(np.asarray(x, dtype=object)))
    k = len(x)

    def each(v):
        if v is None:
            return [""] * k
        v = list(np.broadcast_to(np.asarray(v, dtype=object), (k,)))
        return ["" if e is None or (isinstance(e, float) and not np.isfinite(e)) else e for e in v]

    names = list(categories) if categories is not None else [_point_value(v) for v in x]
    note = "; ".join(f"{key} {'' if val is None else _point_value(val)}".strip() for key, val in (extra or {}).items())
    ax.figure.__dict__.setdefault("dpcompanion_points", []).append(dict(
        ax=ax, series=series, horizontal=horizontal, x=names, y=[_point_value(v) for v in each(y)],
        se=[_point_value(v) for v in each(se)], n=[int(v) if v != "" and int(v) >= 0 else "" for v in each(n)],
        low=[_point_value(v) for v in each(low)], high=[_point_value(v) for v in each(high)], statistic=statistic,
        bar=bar, x_variable=x_variable, y_variable=y_variable, note=note))


def name_x_variable(ax, name: str) -> None:
    """Name the variable of ``ax``'s unlabelled category axis (the trainers, the methods) in the points file."""
    ax.dpcompanion_x_variable = name


def _point_value(v):
    if isinstance(v, (str, int)) and not isinstance(v, bool):
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def draw_mean_se(ax, x, mean, se, *, label: str, n=None, horizontal: bool = False, categories=None,
                 x_variable: str | None = None, **style):
    """Draw means with bars of 2 standard errors on ``ax`` (``horizontal``: the means along x at the
    positions ``x`` on y) and record each point for the figure's points file (:func:`record_points`):
    ``n`` (a number or one per point) is the sample size behind each mean; ``categories`` name the
    positions ``x`` when they are categories, not values, ``x_variable`` what they are. Returns the
    errorbar container.

    >>> fig, ax = plt.subplots(); _ = draw_mean_se(ax, [1, 2], [0.5, 0.7], [0.1, 0.2], label="uni", n=20)
    >>> [(r["x"], r["value"], r["se"], r["n"], r["bar"]) for r in points(fig)]
    [(1.0, 0.5, 0.1, 20, '2 SE'), (2.0, 0.7, 0.2, 20, '2 SE')]
    >>> plt.close(fig)
    """
    x, m, s = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (x, mean, se))
    if not (len(x) == len(m) == len(s)):
        raise ValueError(f"x, mean and se must have one value per point, got {len(x)}, {len(m)} and {len(s)}")
    bar = 2 * np.nan_to_num(s)
    drawn = (ax.errorbar(m, x, xerr=bar, label=label, **style) if horizontal
             else ax.errorbar(x, m, yerr=bar, label=label, **style))
    ns = np.broadcast_to(np.asarray(n if n is not None else -1), x.shape)
    record_points(ax, series=label, x=x, y=m, se=s, n=ns, low=m - bar, high=m + bar, statistic="mean", bar="2 SE",
                  categories=categories, x_variable=x_variable, horizontal=horizontal)
    return drawn


def _axis_label(ax, which: str) -> str:
    """An axis's label, or the label of an axis sharing its scale (a twin, a shared column)."""
    own = (ax.get_xlabel() if which == "x" else ax.get_ylabel()).strip()
    if own:
        return own
    shared = ax.get_shared_x_axes() if which == "x" else ax.get_shared_y_axes()
    for other in shared.get_siblings(ax):
        got = (other.get_xlabel() if which == "x" else other.get_ylabel()).strip()
        if got:
            return got
    axes = ax.figure.axes
    for other in axes:  # a twin axis (twinx shares x): the host's label
        if other is not ax and which == "x" and other.get_position().bounds == ax.get_position().bounds:
            if other.get_xlabel().strip():
                return other.get_xlabel().strip()

    def twin(o):  # drawn over an earlier axis at its place
        return any(q.get_position().bounds == o.get_position().bounds for q in axes[:axes.index(o)])

    spec = ax.get_subplotspec() if which == "y" and not twin(ax) else None
    for other in axes if spec is not None else []:  # a row of panels labelled once, at its left
        o_spec = other.get_subplotspec()
        if other is not ax and o_spec is not None and o_spec.get_gridspec() is spec.get_gridspec() \
                and o_spec.rowspan == spec.rowspan and not twin(other) and other.get_ylabel().strip():
            return other.get_ylabel().strip()
    return ""


def _category_names(ax, which: str) -> dict:
    """The positions and labels of an axis whose ticks the plot function named with words (categories)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    if not isinstance(axis.get_major_locator(), FixedLocator):
        return {}
    locs = list(axis.get_major_locator().locs)
    labels = [t.get_text() for t in (ax.get_xticklabels() if which == "x" else ax.get_yticklabels())]
    if len(labels) != len(locs) or all(_is_number(t) for t in labels):
        return {}
    return dict(zip(locs, labels))


def _is_number(text: str) -> bool:
    try:
        float(text.replace("\u2212", "-"))
    except ValueError:
        return False
    return True


def _nearest(names: dict, v):
    """The category at the tick nearest ``v`` (within half a step); ``v`` itself when none is."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return v
    best = min(names, key=lambda t: abs(t - f), default=None)
    return names[best] if best is not None and abs(best - f) <= 0.5 else f


def _drawn_points(fig) -> list[dict]:
    """The tidy rows of the axes of ``fig`` that recorded no points, read back from what they draw
    (:func:`figure_data`): each point of each line, marker, error bar, bar, heatmap cell and labelled
    reference line, a category axis's positions by name."""
    recorded = {id(r["ax"]) for r in getattr(fig, "dpcompanion_points", [])}
    names = _panel_names(fig)
    by_name = {names[ax]: ax for ax in fig.axes if ax in names}
    out = []
    unnamed: dict = {}
    for r in figure_data(fig):
        if r["kind"] not in ("line", "errorbar", "scatter", "bar", "cell", "hline", "vline") or not r["panel"]:
            continue
        ax = by_name.get(r["panel"])
        if ax is None or id(ax) in recorded:
            continue
        if r["kind"] in ("hline", "vline") and not r["series"]:
            continue  # an unlabelled reference line (zero, one): not a datum
        series = r["series"]
        if r["kind"] == "cell" and not series:
            series = "cells"
        elif not series:  # an unlabelled curve or marker: numbered within its panel, as drawn
            key = (r["panel"], r["kind"])
            if r["point"] in ("", "0", "0.0") or unnamed.get("last") != key:
                unnamed[r["panel"]] = unnamed.get(r["panel"], 0) + 1
            unnamed["last"] = key
            series = f"unlabelled {r['kind']} {unnamed[r['panel']]}"
        else:
            unnamed["last"] = None
        xv = getattr(ax, "dpcompanion_x_variable", "") or _axis_label(ax, "x")
        yv = _axis_label(ax, "y")
        xcat, ycat = _category_names(ax, "x"), _category_names(ax, "y")
        row = dict.fromkeys(POINT_COLUMNS, "")
        row.update(panel=r["panel"], series=series, statistic="value")
        horizontal = r["kind"] == "bar" and "orientation=horizontal" in r["style"] or (ycat and not xcat)
        if r["kind"] == "cell":
            row.update(x_variable=xv, x=r["x"], y_variable=yv, value=r["value"], statistic="cell value",
                       note=f"{yv} {r['y']}".strip())
        elif horizontal:  # the values run along x, the categories (or positions) along y
            row.update(x_variable=getattr(ax, "dpcompanion_x_variable", "") or yv, x=_nearest(ycat, r["y"]),
                       y_variable=_axis_label(ax, "x"), value=r["x"])
            if r["kind"] == "errorbar":
                row.update(low=r["x_low"], high=r["x_high"])
        elif r["kind"] == "hline":
            row.update(x_variable=xv, x="all", y_variable=yv, value=r["y"])
        elif r["kind"] == "vline":
            row.update(x_variable=xv, x=r["x"], y_variable=yv, value="", note="a vertical line at x")
        else:
            row.update(x_variable=xv, x=_nearest(xcat, r["x"]), y_variable=yv, value=r["y"])
            if r["kind"] == "errorbar":
                row.update(low=r["y_low"], high=r["y_high"])
        if r["kind"] == "errorbar" and row["low"] != "":
            row["bar"] = "as drawn"
        out.append(row)
    return out


def points(fig) -> list[dict]:
    """The rows of ``fig``'s points file: every point recorded by :func:`record_points` (means with their
    SE and n, estimates with their intervals), its axes' labels as the variables unless named (read when
    the figure is published, after the axes are labelled), then every point of the axes that recorded
    none, read back from what they draw."""
    names = _panel_names(fig)
    rows = []
    for rec in getattr(fig, "dpcompanion_points", []):
        ax = rec["ax"]
        xv, yv = (_axis_label(ax, "y"), _axis_label(ax, "x")) if rec["horizontal"] else \
            (_axis_label(ax, "x"), _axis_label(ax, "y"))
        xv = rec["x_variable"] or getattr(ax, "dpcompanion_x_variable", "") or xv
        yv = rec["y_variable"] or yv
        for i, x in enumerate(rec["x"]):
            rows.append(dict(panel=names.get(ax, ""), series=rec["series"], x_variable=xv, x=x, y_variable=yv,
                             statistic=rec["statistic"], value=rec["y"][i], se=rec["se"][i], n=rec["n"][i],
                             low=rec["low"][i], high=rec["high"][i], bar=rec["bar"], note=rec["note"]))
    return rows + _drawn_points(fig)


def write_points(fig, path: str | os.PathLike) -> Path | None:
    """Write :func:`points` of ``fig`` as CSV to ``path`` (one row per point: the variables, the value and
    what it is, SE, n, the bar's ends); nothing (None) for a figure that plots no point."""
    rows = points(fig)
    if not rows:
        return None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=POINT_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return path


# --- redrawing a figure from its data file alone ---
# The functions of this section use only the csv module, numpy and matplotlib (the names
# REDRAW_IMPORTS binds): their source is written into every figure's script (REDRAW_SOURCE),
# which a reader runs anywhere on the figure's data file, without dpcompanion.


def read_figure_data(path) -> list:
    """The rows of a figure's data file (:func:`write_figure_data`), as dicts of strings."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def parse_style(style: str) -> dict:
    """The ``style`` column's ``key=value`` pairs as a dict.

    >>> parse_style("marker=o;linestyle=--"), parse_style("")
    ({'marker': 'o', 'linestyle': '--'}, {})
    """
    return dict(part.split("=", 1) for part in style.split(";") if "=" in part)


def line_kwargs(style: dict) -> dict:
    """The keyword arguments of a matplotlib line that a row's style (:func:`parse_style`) gives."""
    return {k: float(v) if k in ("linewidth", "markersize") else v for k, v in style.items()
            if k in ("marker", "linestyle", "linewidth", "markersize", "mfc", "mec", "fillstyle", "mfcalt")}


def data_value(v: str):
    """A value of the data file: a float, NaN for an empty cell, or the text of a label."""
    if v == "":
        return float("nan")
    try:
        return float(v)
    except ValueError:
        return v


def artists_of(rows: list) -> list:
    """The data rows (DATA_KINDS) grouped into the artists that drew them, in order: a run of
    rows of one panel, series and kind, broken where the point numbering starts again
    (``0``, ``0.0``) and at every reference line and text (one row each)."""
    groups, prev = [], None
    for r in rows:
        if r["kind"] not in DATA_KINDS:
            continue
        key = (r["panel"], r["series"], r["kind"])
        if prev is None or key != prev or r["point"] in ("", "0", "0.0"):
            groups.append([])
        groups[-1].append(r)
        prev = key
    return groups


def redraw(rows: list):
    """Draw the figure a data file describes (:func:`figure_data`'s rows, read back as strings)
    with matplotlib alone; return ``(figure, counts)``, where counts says how many panels,
    series (a panel's series of one kind) and points were drawn."""
    fig_row = next((r for r in rows if r["kind"] == "figure"), None)
    size = (float(fig_row["x"]), float(fig_row["y"])) if fig_row else None
    fig = plt.figure(figsize=size)
    if fig_row and fig_row["text"]:
        fig.suptitle(fig_row["text"])
    axes = {}
    for r in rows:
        if r["kind"] != "panel":
            continue
        ax = axes[r["panel"]] = fig.add_axes([float(v) for v in r["text"].split()])
        if r["panel"].endswith(" (right axis)"):  # a twin axis: its own y axis, on the right
            ax.patch.set_visible(False)
            ax.yaxis.tick_right()
            ax.yaxis.set_label_position("right")
            ax.xaxis.set_visible(False)
        elif not (r["panel"].startswith("panel ") and r["panel"][6:].isdigit()):
            title, _, k = r["panel"].rpartition(" #")
            ax.set_title(title if title and k.isdigit() else r["panel"])
        ax.set_xlabel(r["x_axis"])
        ax.set_ylabel(r["y_axis"])
        ax.set_xscale(r["x_scale"])
        ax.set_yscale(r["y_scale"])
        ax.grid(True, alpha=0.3)
    counts = {"panels": len(axes), "series": 0, "points": 0}
    seen = set()
    for g in artists_of(rows):
        first, ax = g[0], axes[g[0]["panel"]]
        kind, label = first["kind"], first["series"] or None
        st = parse_style(first["style"])
        color = first["color"] or None
        x = [data_value(r["x"]) for r in g]
        y = [data_value(r["y"]) for r in g]
        line = line_kwargs(st)
        if kind == "line":
            ax.plot(x, y, color=color, label=label, **line)
        elif kind == "errorbar":
            def err(axis, centre):
                lo = np.array([data_value(r[f"{axis}_low"]) for r in g], dtype=float)
                hi = np.array([data_value(r[f"{axis}_high"]) for r in g], dtype=float)
                if np.isnan(lo).all() and np.isnan(hi).all():
                    return None
                return np.array([centre - lo, hi - centre])
            ax.errorbar(x, y, xerr=err("x", np.array(x, dtype=float)), yerr=err("y", np.array(y, dtype=float)),
                        color=color, capsize=2, label=label, **line)
        elif kind == "hline":
            ax.axhline(y[0], color=color, label=label, **line)
        elif kind == "vline":
            ax.axvline(x[0], color=color, label=label, **line)
        elif kind in ("polygon", "segment"):
            shapes, colors = [], []
            for r in g:
                if r["point"].endswith(".0"):  # a polygon's (a segment's) first vertex
                    shapes.append([])
                    colors.append(r["color"] or "C0")
                shapes[-1].append((data_value(r["x"]), data_value(r["y"])))
            if kind == "polygon":
                ax.add_collection(PolyCollection(shapes, closed=False, facecolors=colors, linewidths=0, label=label))
            else:
                ax.add_collection(LineCollection(shapes, colors=colors, label=label))
        elif kind == "bar":
            x0, x1 = (np.array([data_value(r[k]) for r in g]) for k in ("x_low", "x_high"))
            y0, y1 = (np.array([data_value(r[k]) for r in g]) for k in ("y_low", "y_high"))
            colors = [r["color"] or "C0" for r in g]
            if st.get("orientation") == "horizontal":
                ax.barh(y0, x1 - x0, height=y1 - y0, left=x0, align="edge", color=colors, label=label)
            else:
                ax.bar(x0, y1 - y0, width=x1 - x0, bottom=y0, align="edge", color=colors, label=label)
        elif kind == "scatter":
            ax.scatter(x, y, c=[r["color"] or "C0" for r in g], marker=st.get("marker", "o"), label=label)
        elif kind == "cell":
            at = [tuple(int(i) for i in r["point"].split(".")) for r in g]
            values = np.full((max(a for a, _ in at) + 1, max(b for _, b in at) + 1), np.nan)
            for (i, j), r in zip(at, g):
                values[i, j] = data_value(r["value"])
            vmin, vmax = float(st.get("vmin", np.nanmin(values))), float(st.get("vmax", np.nanmax(values)))
            norm = LogNorm(vmin, vmax) if st.get("norm") == "log" else Normalize(vmin, vmax)
            im = ax.imshow(values, cmap=st.get("cmap", "viridis"), norm=norm, aspect="auto", label=label)
            fig.colorbar(im, ax=ax)
        elif kind == "text":
            ax.text(x[0], y[0], first["text"], color=color, ha=st.get("ha", "center"), va=st.get("va", "center"),
                    fontweight=st.get("weight", "normal"))
        seen.add((first["panel"], first["series"], kind))
        counts["points"] += len(g)
    counts["series"] = len(seen)
    for r_panel, ax in axes.items():
        r = next(r for r in rows if r["kind"] == "panel" and r["panel"] == r_panel)
        for name in ("x", "y"):
            ticks = [t for t in rows if t["kind"] == f"{name}tick" and t["panel"] == r_panel]
            if ticks:
                getattr(ax, f"set_{name}ticks")([float(t[name]) for t in ticks], [t["text"] for t in ticks])
        ax.set_xlim(float(r["x_low"]), float(r["x_high"]))  # after the ticks, which widen the limits
        ax.set_ylim(float(r["y_low"]), float(r["y_high"]))
    for panel in [p for p in axes] + [""]:
        entries = [r for r in rows if r["kind"] == "legend" and r["panel"] == panel]
        if not entries:
            continue
        handles = []
        for r in entries:
            st = parse_style(r["style"])
            if r["style"] == "patch":
                handles.append(Patch(color=r["color"] or "C0", label=r["text"]))
            else:
                handles.append(Line2D([], [], color=r["color"] or "C0", label=r["text"], **line_kwargs(st)))
        if panel:
            axes[panel].legend(handles=handles, fontsize=9, frameon=False)
        else:
            fig.legend(handles=handles, loc="lower center", ncol=min(4, len(handles)), fontsize=9, frameon=False)
    return fig, counts


def redraw_main(argv: list, *, default) -> int:
    """The script's command line: ``[DATA.csv] [--show]``. Redraw the figure of the data file
    (``default``: the one beside the script), write it as PNG beside the data file (or show
    it with ``--show``) and print what was drawn: "panels P, series S, points N"."""
    show = "--show" in argv
    paths = [a for a in argv if a != "--show"]
    if len(paths) > 1 or any(a.startswith("-") for a in paths):
        print("usage: python FIGURE.py [DATA.csv] [--show]")
        return 2
    data = Path(paths[0] if paths else default)
    if not show:
        plt.switch_backend("Agg")
    fig, counts = redraw(read_figure_data(data))
    print(f"panels {counts['panels']}, series {counts['series']}, points {counts['points']}")
    if show:
        plt.show()
    else:
        out = data.with_suffix(".png")
        fig.savefig(out, dpi=110, bbox_inches="tight")
        print(f"wrote {out}")
    return 0


#: the imports the redraw functions need (the first lines of every figure's script)
REDRAW_IMPORTS = """import csv
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import LogNorm, Normalize
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
"""
#: the redraw code every figure's script carries: :data:`REDRAW_IMPORTS`, the kinds of data
#: row and the functions of this section (the only redraw code there is)
REDRAW_SOURCE = "\n\n".join(
    [REDRAW_IMPORTS + f"\nDATA_KINDS = {DATA_KINDS!r}\n"]
    + [inspect.getsource(f) for f in (read_figure_data, parse_style, line_kwargs, data_value, artists_of, redraw, redraw_main)])


# --- the script under a published figure ---


def _commented(text: str) -> list[str]:
    return [f"# {ln}" if ln else "#" for ln in text.splitlines()]


def figure_script(stem: str, *, heading: str, drawn_by: str, called_from: str, cell_source: str,
                  function_source: str) -> str:
    """The text of ``<stem>.py``: a script that redraws the figure from its data file with matplotlib and
    numpy alone (:data:`REDRAW_SOURCE`), followed as comments by the notebook cell and plot function
    that drew the original."""
    return "\n".join([
        f"# {heading}",
        f"# Redraws the figure from its data file, {stem}.csv, with matplotlib alone (no dpcompanion):",
        f"#     python {stem}.py [{stem}.csv] [--show]",
        f"# writes {stem}.png beside the data file (or shows the figure) and prints what it drew.",
        f"# The book drew it with {drawn_by},",
        f"# called from {called_from} (both as comments below the script).",
        "", REDRAW_SOURCE, "",
        'if __name__ == "__main__":',
        f"    sys.exit(redraw_main(sys.argv[1:], default=Path(__file__).with_name({stem + '.csv'!r})))",
        "", "", "# --- the notebook cell that drew the figure in the book ---", *_commented(cell_source),
        "", "# --- the plot function it called ---", *_commented(function_source), ""])
