"""Figures of the book: one shared style, then one section of plot functions per chapter.

Plot functions take computed arrays (never compute or train themselves: STYLE 6) and
return the matplotlib Figure. Importing this module does not import torch.

**Every figure goes through one helper.** Each plot function is declared with
:func:`figure_function`, which registers it in :data:`FIGURES` and, when it is called in a
notebook executed for the book (a :class:`~dpcompanion.core.provenance.Provenance` was
started and the runner named the output folder in ``DPCOMPANION_BOOK_DIR``), *publishes* the
figure (:func:`publish`): it shows the figure, writes what it plots
(:func:`figure_data`, read back from the figure's own artists, so it is exactly what is
drawn, error bars, both axes, scales, ticks and legends included) as
``figures/<page>/figure-<n>.csv`` beside the executed notebook, writes ``figure-<n>.py``, a
script that runs alone on that file and redraws the figure with matplotlib alone
(:func:`figure_script`: the one redraw code, :data:`REDRAW_SOURCE`, followed as comments by
the plot function's source and the notebook cell that called it; issue 34), and shows under
the figure one line with the "data" and "code" links
(Sphinx ``download`` roles, so a missing file fails the build), the function's source in
the repository at the build's commit and the figure's provenance: the stored result it plots
(mode, commit, sizes) and the build that drew it, decided by one function,
:func:`dpcompanion.book.report.figure_caption`, from the result an experiment page hands over
with :func:`drawn_from` (``ExperimentPage.drawing``; issue 34). :func:`figure_problems`
is the layout check the tests run on every figure: fonts at least :data:`MIN_FONT_PT` at the
size the figure is shown in the book's text column, no overlapping tick labels.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import inspect
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import LineCollection, PathCollection, PolyCollection
from matplotlib.colors import LogNorm, Normalize, to_hex, to_rgba
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

from dpcompanion.book import report
from dpcompanion.core.provenance import Provenance

#: colours used consistently across the book: uniform vs dynamic/optimal schedules
COLORS = {"uniform": "#4c72b0", "dynamic": "#dd8452", "optimal": "#dd8452", "exp": "#55a868", "momentum": "#c44e52"}

#: the repository the "code" links point into (the same as ``repository.url`` of the book's
#: ``_config.yml``: tests/test_plotting.py checks it)
REPOSITORY_URL = "https://github.com/dpcompanion/dpcompanion"
#: width (CSS px) of the book's text column at a 1280 px window: an image wider than this is
#: scaled down to it (tests/test_browser.py checks that figures are shown at least this wide)
COLUMN_PX = 670
#: smallest font (CSS pt) any text of a figure may have once the figure is scaled to the column
MIN_FONT_PT = 8.0
#: the dpi figures are drawn and shown at
DPI = 110
#: the breakdown heatmap's colour scale stops here (larger ratios print their value in the cell)
BREAKDOWN_CAP = 1e3
#: widest figure (inches): with 9 pt text, still >= MIN_FONT_PT once scaled to COLUMN_PX
MAX_WIDTH_IN = 7.6
#: the environment variable in which the runner names the folder of the executed notebooks
BOOK_DIR_ENV = "DPCOMPANION_BOOK_DIR"
#: sub-folder of that folder holding each page's figure data and code
FIGURES_DIR = "figures"
#: every plot function of this module, by name (tests/test_plotting.py draws each one)
FIGURES: dict[str, Callable[..., Any]] = {}

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]
_state = threading.local()
_counters: dict[str, int] = {}


def apply_style() -> None:
    """The book's matplotlib style (called by every plot function): no text below 9 pt."""
    plt.rcParams.update(
        {
            "figure.dpi": DPI,
            "savefig.dpi": DPI,
            "figure.figsize": (7.0, 3.6),
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "font.size": 10,
            "axes.titlesize": 10,
            "axes.labelsize": 10,
            "xtick.labelsize": 9,
            "ytick.labelsize": 9,
            "legend.fontsize": 9,
            "legend.title_fontsize": 9,
            "figure.titlesize": 10,
            "legend.frameon": False,
        }
    )


def figure_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Declare a plot function: registered in :data:`FIGURES`; its figure carries the
    function (``fig.dpcompanion_source``) and is published (:func:`publish`) when drawn in a
    book notebook. A plot function that calls another one publishes once, under its own name."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        depth = getattr(_state, "depth", 0)
        _state.depth = depth + 1
        try:
            fig = fn(*args, **kwargs)
        finally:
            _state.depth = depth
        if fig is not None:
            fig.dpcompanion_source = fn
            if depth == 0:
                publish(fig)
        return fig

    FIGURES[fn.__name__] = wrapper
    return wrapper


def source_location(fn: Callable[..., Any]) -> tuple[str, int, int]:
    """(path relative to the repository, first line, last line) of ``fn``'s source."""
    fn = inspect.unwrap(fn)
    lines, first = inspect.getsourcelines(fn)
    path = Path(inspect.getsourcefile(fn)).resolve()
    try:
        rel = path.relative_to(_PACKAGE_ROOT).as_posix()
    except ValueError:  # pragma: no cover - an installed, non-editable copy
        rel = path.name
    return rel, first, first + len(lines) - 1


# --- what a figure plots, read back from its artists ---

#: the columns of a figure's data file (:func:`figure_data`)
DATA_COLUMNS = ("panel", "x_axis", "y_axis", "x_scale", "y_scale", "series", "kind", "point", "x", "y",
                "x_low", "x_high", "y_low", "y_high", "value", "text", "color", "style")
#: the kinds of row that are plotted data (the others describe the figure, a panel, a legend or ticks)
DATA_KINDS = ("line", "errorbar", "hline", "vline", "polygon", "bar", "segment", "scatter", "cell", "text")


def _panel_names(fig) -> dict:
    names = {}
    for i, ax in enumerate(fig.axes, 1):
        title = ax.get_title() or ax.get_title(loc="left") or ""
        names[ax] = title or f"panel {i}"
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
    return {"color": _hex(line.get_color(), line.get_alpha()),
            "style": _style(marker=marker if isinstance(marker, str) else "o", linestyle=line.get_linestyle(),
                            linewidth=line.get_linewidth(), markersize=line.get_markersize(),
                            mfc=_hex(line.get_markerfacecolor()) or "none", mec=_hex(line.get_markeredgecolor()) or "none")}


def _handle_style(handle) -> dict:
    """How a legend entry's handle looks: a line or marker (Line2D), a marker (a scatter's
    handle), a line (a line collection's) or a filled patch (style ``patch``)."""
    if isinstance(handle, Line2D):
        return _line_style(handle)
    if isinstance(handle, PathCollection):
        return {"color": _nth_color(handle.get_facecolor(), 0), "style": _style(marker="o", linestyle="None")}
    face = handle.get_facecolor() if hasattr(handle, "get_facecolor") else None
    if isinstance(handle, LineCollection):
        return {"color": _nth_color(handle.get_edgecolor(), 0), "style": _style(marker="None", linestyle="-")}
    return {"color": _nth_color(face, 0) if face is not None else "", "style": "patch"}


def figure_data(fig) -> list[dict[str, Any]]:
    """Every plotted datum of ``fig``, one row per point (:data:`DATA_COLUMNS`), enough to
    redraw the figure without the code that drew it (:data:`REDRAW_SOURCE`; issue 34):

    - the figure (``figure``: ``x``/``y`` its width and height in inches, ``text`` its title);
    - each panel (``panel``: its view limits in ``x_low``/``x_high`` and ``y_low``/``y_high``,
      in that order, so an inverted axis stays inverted; ``text`` its position in the figure,
      "left bottom width height"); every row of a panel carries the panel's name, axis labels
      and axis scales (``x_scale``/``y_scale``: linear, log, ...);
    - ticks the plot function placed (``xtick``/``ytick``: the position, ``text`` its label) and
      each legend's entries (``legend``, in order, ``text`` the entry's label; ``panel`` empty
      for a legend of the whole figure);
    - the data, with the ``color`` and ``style`` (``key=value`` pairs joined by ``;``: a
      line's ``marker``, ``linestyle``, ``linewidth``, ``markersize``, marker face and edge colours
      ``mfc``/``mec``, a text's alignment ``ha``/``va`` and ``weight``, a bar's ``orientation``, a heatmap's ``cmap``, ``norm``,
      ``vmin``, ``vmax``;
      ``patch`` for a legend entry drawn as a filled patch) they are drawn in: lines and
      markers (``line``), error bars (``errorbar``: ``y_low``/``y_high`` and
      ``x_low``/``x_high`` the ends of its vertical and horizontal bars), reference lines
      (``hline``/``vline``), bands and polygons (``polygon``: their vertices), bars (``bar``:
      ``x``/``y`` the bar's end and its centre on the other axis, ``x_low``..``y_high`` its
      rectangle), segments (``segment``), scatter points, heatmap cells (``cell``: ``x``/``y``
      the column/row labels, ``point`` "row.column", ``value`` the colour value) and text drawn
      in the panel (``text``).

    Values are the data coordinates, before any log axis.

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
            if k in ("marker", "linestyle", "linewidth", "markersize", "mfc", "mec")}


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
            ax.set_title(r["panel"])
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
from matplotlib.patches import Patch
"""
#: the redraw code every figure's script carries: :data:`REDRAW_IMPORTS`, the kinds of data
#: row and the functions of this section (the only redraw code there is: issue 34, item 6)
REDRAW_SOURCE = "\n\n".join(
    [REDRAW_IMPORTS + f"\nDATA_KINDS = {DATA_KINDS!r}\n"]
    + [inspect.getsource(f) for f in (read_figure_data, parse_style, line_kwargs, data_value, artists_of, redraw, redraw_main)])


# --- the layout check every figure must pass ---


def figure_problems(fig, *, column_px: float = COLUMN_PX, min_pt: float = MIN_FONT_PT) -> list[str]:
    """Layout defects of ``fig`` as shown in the book: every visible text smaller than
    ``min_pt`` CSS points once the figure (as saved, ``bbox_inches="tight"``, at its dpi) is
    scaled to a ``column_px`` wide column, and every pair of overlapping tick labels (their
    drawn bounding boxes) on one axis. Empty list: no defect.

    >>> fig, ax = plt.subplots(figsize=(3, 2)); _ = ax.set_title("tiny", fontsize=4)
    >>> figure_problems(fig)[0].startswith("text 'tiny'")
    True
    >>> plt.close(fig)
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width_px = fig.get_tightbbox(renderer).width * fig.dpi
    scale = min(1.0, column_px / width_px) * fig.dpi / 96.0  # matplotlib pt -> CSS pt as shown
    problems = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or not _drawn(t):
            continue
        shown = t.get_fontsize() * scale
        if shown < min_pt - 1e-9:
            problems.append(f"text {t.get_text()[:40]!r} is {shown:.1f} pt as shown (< {min_pt:g}; "
                            f"{t.get_fontsize():g} pt in a {width_px:.0f} px wide figure)")
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            lo, hi = sorted(axis.get_view_interval())
            boxes = []
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                for lab in (tick.label1, tick.label2):
                    pos = tick.get_loc()
                    if lab.get_visible() and lab.get_text() and lo - 1e-12 * abs(hi - lo) <= pos <= hi + 1e-12 * abs(hi - lo):
                        boxes.append((lab.get_text(), lab.get_window_extent(renderer)))
            for i in range(len(boxes)):
                for j in range(i + 1, len(boxes)):
                    a, b = boxes[i][1], boxes[j][1]
                    if a.x0 < b.x1 - 0.5 and b.x0 < a.x1 - 0.5 and a.y0 < b.y1 - 0.5 and b.y0 < a.y1 - 0.5:
                        problems.append(f"{ax.get_title() or 'panel'}: {name} tick labels {boxes[i][0]!r} and "
                                        f"{boxes[j][0]!r} overlap")
    return problems


def _drawn(t) -> bool:
    """Whether a text artist is drawn (not an unused tick label or a hidden axes' text)."""
    ax = t.axes
    if ax is not None and not ax.get_visible():
        return False
    fig = t.get_figure()
    if fig is None:
        return False
    for axis in ([ax.xaxis, ax.yaxis] if ax is not None else []):
        ticks = axis.get_major_ticks() + axis.get_minor_ticks()
        for tick in ticks:
            if t is tick.label1 or t is tick.label2:
                lo, hi = sorted(axis.get_view_interval())
                span = abs(hi - lo)
                return tick.get_visible() and lo - 1e-12 * span <= tick.get_loc() <= hi + 1e-12 * span
    return True


# --- publishing a figure on its page ---


def current_provenance():
    """The :class:`~dpcompanion.core.provenance.Provenance` of the notebook being run: the
    notebook contract binds it to ``prov`` (CONTRIBUTING, "Notebooks"); None outside a
    notebook. (Kept here, not in ``core``: ``core.provenance`` is part of every result's code
    hash.)"""
    ip = _shell()
    if ip is None:
        return None
    prov = ip.user_ns.get("prov")
    if isinstance(prov, Provenance):
        return prov
    found = [v for v in ip.user_ns.values() if isinstance(v, Provenance)]
    return found[-1] if found else None


def _shell():
    """The running IPython shell; None outside one (or without IPython)."""
    try:
        from IPython import get_ipython  # optional: only a notebook's kernel has a shell
    except ImportError:  # pragma: no cover
        return None
    return get_ipython()


def _notebook_cell() -> tuple[str, int | None, str | None]:
    """(source, index among the committed notebook's cells, cell id) of the cell being run."""
    ip = _shell()
    hist = ip.user_ns.get("_ih", []) if ip is not None else []
    source = hist[-1] if hist else ""
    prov = current_provenance()
    nb_path = _PACKAGE_ROOT / "notebooks" / f"{prov.notebook}.ipynb" if prov else None
    if nb_path is not None and nb_path.exists() and source:
        cells = json.loads(nb_path.read_text()).get("cells", [])
        for i, c in enumerate(cells):
            if "".join(c.get("source", "")).strip() == source.strip():
                return source, i, c.get("id")
    return source, None, None


@contextlib.contextmanager
def drawn_from(result):
    """Inside this block, every published figure plots ``result`` (a stored result of the
    store, :class:`~dpcompanion.experiments.store.StoredResult`): its caption is decided from
    it (:func:`dpcompanion.book.report.figure_caption`: its mode, the commit that computed it,
    its sizes) and its layout record names it. A quick-mode build drawing the committed full or
    paper-scale result must not label that figure "quick mode" (issue 34). An experiment page
    enters it through :meth:`dpcompanion.book.show.ExperimentPage.drawing`.

    >>> from types import SimpleNamespace as NS
    >>> r = NS(id="w-f4", mode="paper", provenance={"commit": "2e722974aaea"}, payload={})
    >>> with drawn_from(r):
    ...     plotted_result() is r
    True
    >>> plotted_result() is None
    True
    """
    prev = getattr(_state, "result", None)
    _state.result = result
    try:
        yield
    finally:
        _state.result = prev


def plotted_result():
    """The stored result the figures being drawn plot (:func:`drawn_from`); None outside."""
    return getattr(_state, "result", None)


def _result_record(result) -> dict | None:
    """What a figure's layout record says of the result it plots (None: no stored result)."""
    if result is None:
        return None
    return {"id": result.id, "mode": result.mode, "commit": result.provenance.get("commit"),
            "dirty": bool(result.provenance.get("dirty"))}


def _commented(text: str) -> list[str]:
    return [f"# {ln}" if ln else "#" for ln in text.splitlines()]


def figure_script(stem: str, *, heading: str, drawn_by: str, called_from: str, cell_source: str,
                  function_source: str) -> str:
    """The text of ``<stem>.py``, the code link under a published figure: a script that runs
    alone (``python <stem>.py [<stem>.csv] [--show]``, matplotlib and numpy only) and redraws
    the figure from its data file (:data:`REDRAW_SOURCE`), headed by what the figure is and
    followed, as comments, by the notebook cell and the plot function that drew the original
    (its provenance)."""
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


def publish(fig) -> None:
    """Show ``fig`` in the running book notebook with its data and code links (see the module
    docstring). Outside a book notebook (no IPython kernel, or no Provenance started) it does
    nothing, and the figure is returned to the caller as drawn."""
    prov = current_provenance()
    if _shell() is None or prov is None:
        return
    from IPython.display import Markdown, display  # there is a shell: IPython is installed
    fn = getattr(fig, "dpcompanion_source", None)
    page = prov.notebook
    n = _counters[page] = _counters.get(page, 0) + 1
    parts = [f"Figure {n}"]
    caption = report.figure_caption(plotted_result(), build=prov)  # the one caption (issue 34)
    book_dir = os.environ.get(BOOK_DIR_ENV)
    cell_source, cell_index, cell_id = _notebook_cell()
    cell = (f"notebook cell {cell_index}" + (f" (id `{cell_id}`)" if cell_id else "")) if cell_index is not None \
        else "a notebook cell"
    rel, first, last = source_location(fn) if fn is not None else ("", 0, 0)
    name = f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}" if fn is not None else "plotting"  # forest.forest_plot
    at = prov.commit if prov.commit != "unknown" else "main"
    repo_link = f"{REPOSITORY_URL}/blob/{at}/{rel}#L{first}-L{last}" if fn is not None else ""
    if book_dir:
        folder = Path(book_dir) / FIGURES_DIR / page
        stem = f"figure-{n}"
        write_figure_data(fig, folder / f"{stem}.csv")
        # the layout check of every published figure, kept for the tests of the built book
        (folder / f"{stem}.layout.json").write_text(json.dumps(
            {"function": name, "problems": figure_problems(fig), "result": _result_record(plotted_result()),
             "caption": caption}, indent=1) + "\n")
        (folder / f"{stem}.py").write_text(figure_script(
            stem, heading=f"Figure {n} of the page {page!r} of the dpcompanion book ({caption}).",
            drawn_by=f"dpcompanion.book.{name} ({rel}, lines {first}-{last}): {repo_link}",
            called_from=f"{cell.replace('`', '')} of notebooks/{page}.ipynb", cell_source=cell_source,
            function_source=inspect.getsource(inspect.unwrap(fn)) if fn is not None else ""))
        link = f"{FIGURES_DIR}/{page}/{stem}"
        parts.append(f"{{download}}`data <{link}.csv>` (CSV)")
        parts.append(f"{{download}}`code <{link}.py>` (`{name}`, {cell})")
    else:
        parts.append(f"code: `{name}`, {cell}")
    display(fig)  # after the data is read from it: a closed figure has no renderer
    plt.close(fig)
    if repo_link:
        parts.append(f"[source at {at}]({repo_link})")
    parts.append(caption)
    display(Markdown("<small>" + " · ".join(parts) + "</small>"))


def thin(x, y, n: int = 1000):
    """At most ``n`` evenly spaced points of the curve (x, y), first and last included: a
    smooth curve of 40,000 points looks the same through 1000, and its data file stays small.

    >>> [len(a) for a in thin(range(5000), range(5000))], thin([1, 2], [3, 4])
    ([1000, 1000], ([1, 2], [3, 4]))
    """
    if len(x) <= n:
        return x, y
    idx = np.unique(np.linspace(0, len(x) - 1, n).round().astype(int))
    return np.asarray(x)[idx], np.asarray(y)[idx]


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
    ax1.set_xlabel("step t")
    ax1.set_ylabel(r"noise multiplier $\sigma_t$")
    ax1.set_yscale("log")
    ax1.set_title("Same privacy budget, different allocations")
    ax1.legend(fontsize=9)
    for label, curve in erub_curves.items():
        key = "uniform" if label.startswith("uniform") else "dynamic"
        ax2.plot(T_grid, curve, color=COLORS[key], label=label)
        T_opt, v_opt = optima[label]
        ax2.plot([T_opt], [v_opt], "o", color=COLORS[key])
        ax2.annotate(f"T*={T_opt}", (T_opt, v_opt), textcoords="offset points",
                     xytext=(-8, 8) if key == "uniform" else (6, -16), fontsize=9,
                     color="#1f3f6e" if key == "uniform" else "#a0522d")
    ax2.set_xlabel("number of steps T")
    ax2.set_ylabel("ERUB (Thm 4.1 bound)")
    ax2.set_title(rf"Utility bound vs T ($\kappa$ = {kappa_erub:g})")
    ax2.set_ylim(bottom=0)
    ax2.legend(fontsize=9, loc="upper right")
    fig.tight_layout()
    return fig


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
    ax1.set_yscale("log")
    ax1.set_ylabel(r"budget $R=\sum_t 1/\sigma_t^2$")
    ax1.set_title(rf"Budget allowed for ($\epsilon$, {delta:g})")
    ax2.set_ylabel(f"R / R ({labels[0]})")
    ax2.set_title("Budget relative to the zCDP conversion")
    ax1.legend(fontsize=9)
    fig.tight_layout()
    return fig


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
    ax.set_yscale("log")
    ax.set_xlabel("step t")
    ax.set_ylabel(r"noise multiplier $\sigma_t$")
    ax.set_title("Same budget R: uniform vs dynamic (Thm 4.4) schedules")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


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
    ax.set_yscale("log")
    ax.set_xlabel("number of steps T")
    ax.set_ylabel("ERUB (Thm 4.1 bound)")
    ax.set_title(rf"ERUB vs T ($\kappa$ = {kappa:g}, $\alpha$ = {alpha:g})")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


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
    ax.set_xlabel("number of samples N")
    ax.set_ylabel(r"ERUB$_{\min}$")
    ax.set_title(rf"Sample efficiency ($\kappa$ = {kappa:g})" if kappa else "Sample efficiency")
    ax.legend(fontsize=9)
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
        ax.legend(fontsize=9)
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
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"curvature $\kappa$")
    ax.set_ylabel("optimal number of steps T")
    ax.set_title("Optimal T: closed forms vs exhaustive search")
    ax.legend(fontsize=9, ncol=2)
    fig.tight_layout()
    return fig


@figure_function
def theory_table_rows(*, N, rows: dict, title: str):
    """Printed orders of table rows vs N (log-log); ``rows``: label -> array."""
    apply_style()
    fig, ax = plt.subplots(figsize=(7.0, 4.2 + 0.22 * len(rows)))
    for label, y in rows.items():
        ax.loglog(N, y, lw=1.5, ls="-" if "(ours" not in label else "--", label=label)
    ax.set_xlabel("number of samples N")
    ax.set_ylabel("bound (constants = 1)")
    ax.set_title(title)
    ax.legend(ncol=1, loc="upper left", bbox_to_anchor=(0.0, -0.16))  # below the panel: the labels are long
    fig.tight_layout()
    return fig


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
    ax.set_yscale("log")
    ax.set_xlabel("step t")
    ax.set_ylabel(r"influence of $\sigma_t^2$")
    ax.set_title(title or "Momentum: exact influence vs the paper's forms")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


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
    ax.set_yscale("log")
    ax.set_xlabel("number of steps T")
    ax.set_ylabel("ERUB (Thm 4.5 bound)")
    ax.set_title(title or "Momentum: ERUB vs T")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


@figure_function
def adp_stepsizes(*, families: dict):
    """W Figure 2: step-size families over iterations; ``families`` maps a label to (t, eta_t)
    (long curves drawn through at most 1000 of their points, ends included)."""
    apply_style()
    fig, ax = plt.subplots()
    for label, (t, eta) in families.items():
        t, eta = thin(t, eta)
        ax.plot(t, eta, lw=1.5, label=label, ls="-" if "sqrt(20" in label else "--")
    ax.set_xlabel("iteration t")
    ax.set_ylabel(r"step size $\eta_t$")
    ax.set_yscale("log")
    ax.set_title("ADP-SGD's two step-size families (W Fig. 2)")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


@figure_function
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
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


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
    ax.set_xlabel(r"influence $q_t$ / max$_t$ $q_t$")
    ax.set_ylabel(r"noise variance $s_t^2$ / min$_t$ $s_t^2$")
    ax.set_title("Hong et al.'s and Wu et al.'s allocations: one rule")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


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
    n = len(comparisons)
    ncols = min(n, 2)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(MAX_WIDTH_IN if ncols > 1 else 6.0, 4.0 * nrows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
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
    ax.set_xlabel(r"curvature $\kappa$ (synthetic spectrum)")
    ax.set_ylabel("bound / exact at the bound's T")
    ax.set_title("How tight is Thm 4.1?")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


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
    ax.set_ylabel(r"influence $q_t$ (normalised)")
    ax.set_xlabel("step t")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


@figure_function
def influence_fit_figure(*, levels, losses: dict, fits: dict):
    """Final loss vs sigma_t with the fitted ``c sigma_t^2 + c0`` (the ICLR submission, Fig. 3 left).
    ``losses``: label (e.g. "t = 10") -> ``(len(levels), repeats)`` array; ``fits``: label
    -> ``(c, c0)``."""
    apply_style()
    levels = np.asarray(levels, dtype=float)
    n = len(losses)
    ncols = min(n, 2)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(MAX_WIDTH_IN if ncols > 1 else 5.0, 3.2 * nrows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    grid = np.linspace(levels.min(), levels.max(), 100)
    for ax, (label, L) in zip(axes.flat, losses.items()):
        L = np.asarray(L)
        for r in range(L.shape[1]):
            ax.plot(levels, L[:, r], ".", color=COLORS["uniform"], alpha=0.25, ms=3)
        ax.plot(levels, L.mean(axis=1), "o", color=COLORS["uniform"], ms=4, label="mean over repeats")
        c, c0 = fits[label]
        ax.plot(grid, c * grid**2 + c0, color=COLORS["dynamic"], lw=1.6, label=r"fit $c\sigma_t^2 + c_0$")
        ax.set_xlabel(r"$\sigma_t$")
        ax.set_title(label, fontsize=10)
    for row in axes:
        row[0].set_ylabel("final loss")
    axes[0][0].legend(fontsize=9)
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


# --- Wu et al. experiments (W-F1, W-T1245, W-T36, W-F4) ---

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
        ax.plot(t, noise[k], ls=st["ls"], color="#55a868", lw=1.6)
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
    ax.set_xlabel("iteration t")
    ax.set_ylabel(ylabel)
    ax.set_title(title or "Validation accuracy (W Fig. 1 right)")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


# --- experiments of Hong et al. (H-F-EFF, H-F-SCALE, H-F-CURV, H-F-MOM, H-X-EER breakdown) ---

_KIND_COLORS = {"uni": COLORS["uniform"], "exp": COLORS["exp"], "dyn": COLORS["dynamic"],
                "expinfl": COLORS["exp"], "momexpinfl": COLORS["momentum"]}


@figure_function
def efficiency_figure(*, N, loss: dict, loss_se: dict, acc: dict, acc_se: dict, title: str = ""):
    """The FAccT version's Fig. 1 middle/right layout: final training loss (left) and test accuracy
    (right) vs the number of training samples N, one line per schedule with 2-SE bars.
    Each dict maps a schedule label ("uni", "exp") to an array over ``N``."""
    apply_style()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 3.6))
    for kind in loss:
        c = _KIND_COLORS.get(kind)
        a1.errorbar(N, loss[kind], yerr=2 * np.asarray(loss_se[kind]), fmt="o-", ms=4, color=c, label=kind, capsize=2)
        a2.errorbar(N, acc[kind], yerr=2 * np.asarray(acc_se[kind]), fmt="o-", ms=4, color=c, label=kind, capsize=2)
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
                         dashed_label: str = r"$T\,\mathrm{Var}(q_t)$"):
    """the ICLR submission's Fig. 2 middle / Fig. 3 right layout: relative final loss vs data scale (solid,
    left axis, 2-SE bars) per schedule and a dashed influence term on a right axis.
    ``panels``: title -> {"x": array, "curves": {label: (mean, se)}, "dashed": array or None}.
    When every panel has one x value (quick mode: one data scale), a curve would be a single
    point: the panels become the categories of one panel instead (:func:`_one_point_panels`)."""
    apply_style()
    if panels and all(len(np.atleast_1d(p["x"])) == 1 for p in panels.values()):
        return _one_point_panels(panels, xlabel=xlabel, ylabel=ylabel)
    n = len(panels)
    ncols = min(n, 2)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(MAX_WIDTH_IN if ncols > 1 else 6.0, 3.4 * nrows), squeeze=False)
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
    axes[0][0].legend(fontsize=9)
    fig.tight_layout()
    return fig


def _one_point_panels(panels: dict, *, xlabel: str, ylabel: str):
    """Panels with one x value each, drawn as one panel: a category per panel title, one
    marker with its 2-SE bar per curve (side by side), the shared x value in the axis label."""
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    titles = list(panels)
    labels = list(dict.fromkeys(lab for p in panels.values() for lab in p["curves"]))
    width = 0.5 / max(len(labels), 1)
    for k, lab in enumerate(labels):
        xs, ms, ses = [], [], []
        for i, t in enumerate(titles):
            if lab in panels[t]["curves"]:
                m, se = panels[t]["curves"][lab]
                xs.append(i + (k - (len(labels) - 1) / 2) * width)
                ms.append(float(np.atleast_1d(m)[0]))
                ses.append(2 * float(np.atleast_1d(se)[0]))
        ax.errorbar(xs, ms, yerr=ses, fmt="o", ms=6, capsize=3, color=_KIND_COLORS.get(lab), label=lab)
    ax.axhline(0.0, color="0.5", lw=0.8)
    xvals = sorted({float(np.atleast_1d(p["x"])[0]) for p in panels.values()})
    ax.set_xticks(range(len(titles)), titles)
    ax.set_xlim(-0.6, len(titles) - 0.4)
    ax.set_xlabel(f"{xlabel} = " + ", ".join(f"{v:g}" for v in xvals) + " (one value in this mode)")
    ax.set_ylabel(ylabel)
    ax.legend()
    fig.tight_layout()
    return fig


def log_ticks(axis, values, *, min_ratio: float = 1.35) -> None:
    """Label a log ``axis`` at the data's own ``values`` (plain numbers), skipping any value
    closer than ``min_ratio`` to the last labelled one so that labels never overlap, and no
    minor-tick labels (which matplotlib adds when the range is under a decade)."""
    v = sorted({float(x) for x in np.atleast_1d(values) if float(x) > 0})
    keep = []
    for x in v:
        if not keep or x / keep[-1] >= min_ratio:
            keep.append(x)
    if v and keep[-1] != v[-1] and v[-1] / keep[-1] < min_ratio and len(keep) > 1:
        keep[-1] = v[-1]  # the largest value labelled rather than its neighbour
    axis.set_major_locator(FixedLocator(keep))
    axis.set_major_formatter(plt.FuncFormatter(lambda x, _: f"{x:g}"))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


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
        ax.plot([], [], color=col, lw=1.2, label=f"{lab}: runs")
        ax.axhline(means[lab], color=col, ls="--", lw=1.6, label=f"{lab}: mean final loss")
    ax.set_yscale("log")
    ax.set_ylim(bottom=1e-2 * min(means.values()))
    ax.set_xlabel("step t")
    ax.set_ylabel(r"$f(\theta_t) - f^*$")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


@figure_function
def wu_gap_grid(*, cells: list, title: str = ""):
    """W Tables 1/2 as a picture: for each cell ``(label, gap_ours, se_ours, gap_paper)`` the
    ADP-SGD minus DP-SGD gain, ours with a 2-se bar, the paper's as a cross."""
    apply_style()
    fig, ax = plt.subplots(figsize=(7.0, max(2.5, 0.34 * len(cells) + 1.2)))
    y = np.arange(len(cells))
    ours = np.array([c[1] for c in cells], dtype=float)
    se = np.array([c[2] for c in cells], dtype=float)
    paper = np.array([np.nan if c[3] is None else c[3] for c in cells], dtype=float)
    ax.errorbar(ours, y, xerr=2 * np.nan_to_num(se), fmt="o", color="#dd8452", ms=4, label="ours (+- 2 se)")
    ax.plot(paper, y, "x", color="k", label="paper (CIFAR-10)")
    ax.axvline(0, color="0.5", lw=0.8)
    ax.set_yticks(y, [c[0] for c in cells], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("ADP-SGD minus DP-SGD accuracy (points)")
    ax.set_title(title or "Gain of ADP-SGD per cell")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


@figure_function
def wu_error_vs_epoch(*, epochs, errors: dict, eps_numeric, eps_theory, sigma: float):
    """W Fig. 4 panel: test error vs epoch per c (left axis), accountant epsilon (dashed) and
    Thm 4.1's epsilon_bar (dots) on the right axis. The error axis is logarithmic (when every
    error is positive): the first epoch's ~90% error would otherwise squeeze the curves of
    the six c values, which end a few points apart, into one line near zero; one legend, below
    the panel, so that no curve runs through it (issue 34, item 8)."""
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
    ax.set_xlabel("epoch")
    ax.set_ylabel("test error (%)")
    ax2.set_ylabel("privacy")
    ax.set_title(f"DP-SGD, constant vs decaying step size, sigma = {sigma:g} (W Fig. 4)")
    handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=4)
    fig.tight_layout()
    return fig


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
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("throughput (higher is faster)")
    ax.set_title(title or "Throughput per method")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


# --- tuning traces (issue 21) ---


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
            ax.set_title(cell, fontsize=9)
            ax.legend(fontsize=9)
        axes[i][0].set_ylabel(ylabel)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
