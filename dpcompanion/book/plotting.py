"""The machinery every figure of the book shares: one style, the declaration of a plot function
(:func:`figure_function`), publishing a figure on its page (:func:`publish`) and the layout check
(:func:`figure_problems`). The plot functions live in :mod:`.theory_figures`, :mod:`.hong_figures`,
:mod:`.wu_figures`, :mod:`.library_figures` and :mod:`.forest`; they take computed arrays (never compute
or train: STYLE 6) and return the matplotlib Figure. Importing this module does not import torch.

In a notebook executed for the book, a published figure is shown with one line under it: links to its
data (``figures/<page>/<page>-figure-<n>.csv``, read back from the drawn artists) and to a script that redraws it
with matplotlib alone (``<page>-figure-<n>.py``, :mod:`.figure_files`), its source at the build's commit, and its
caption (:func:`dpcompanion.book.report.figure_caption`, from the result set by :func:`drawn_from`).
"""

from __future__ import annotations

import contextlib
import functools
import html
import inspect
import json
import os
import re
import threading
from pathlib import Path
from typing import Any, Callable

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.text import Text
from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

from dpcompanion.book import report
from dpcompanion.book.figure_files import figure_script, points, write_figure_data, write_points
from dpcompanion.core.provenance import Provenance

#: colours used consistently across the book: uniform vs dynamic/optimal schedules
COLORS = {"uniform": "#4c72b0", "dynamic": "#dd8452", "optimal": "#dd8452", "exp": "#55a868", "momentum": "#c44e52"}
#: the colour of each schedule kind as the experiment pages label them (uni, exp, dyn, ...)
KIND_COLORS = {"uni": COLORS["uniform"], "exp": COLORS["exp"], "dyn": COLORS["dynamic"],
               "expinfl": COLORS["exp"], "momexpinfl": COLORS["momentum"]}

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
#: widest figure (inches): with 9 pt text, still >= MIN_FONT_PT once scaled to COLUMN_PX
MAX_WIDTH_IN = 7.6
#: the environment variable in which the runner names the folder of the executed notebooks
BOOK_DIR_ENV = "DPCOMPANION_BOOK_DIR"
#: sub-folder of that folder holding each page's figure data and code
FIGURES_DIR = "figures"
#: every plot function of the book, by name, registered by :func:`figure_function` when its
#: module is imported (tests/test_plotting.py imports each module and draws every function)
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
    """Declare a plot function: registered in :data:`FIGURES`, its figure published (:func:`publish`);
    a plot function that calls another one publishes once, under its own name."""

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


# --- helpers of the plot functions ---


def panel_grid(n: int, *, row_height_in: float, single_width_in: float = 6.0):
    """``(fig, axes)``: ``n`` panels two to a row (2-D ``axes``, a spare cell hidden), the full width
    (:data:`MAX_WIDTH_IN`) or ``single_width_in`` for one panel, ``row_height_in`` a row.

    >>> fig, axes = panel_grid(3, row_height_in=3.0)
    >>> axes.shape, fig.get_size_inches().tolist(), axes[1][1].get_visible()
    ((2, 2), [7.6, 6.0], False)
    >>> panel_grid(1, row_height_in=3.0, single_width_in=5.0)[0].get_size_inches().tolist()
    [5.0, 3.0]
    >>> plt.close("all")
    """
    ncols = min(n, 2)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(MAX_WIDTH_IN if ncols > 1 else single_width_in,
                                                    row_height_in * nrows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes


def finish(fig, ax, *, legend: bool | dict = True, **props):
    """``ax.set(**props)`` (in the order given), the legend (a dict is passed to ``ax.legend``, ``False``
    draws none) and ``fig.tight_layout()``; returns ``fig`` (``return finish(fig, ax, ...)``).

    >>> apply_style()
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([1, 10], [1, 2], label="a")
    >>> fig is finish(fig, ax, xscale="log", xlabel="x", title="t", legend={"loc": "upper left"})
    True
    >>> ax.get_xscale(), ax.get_xlabel(), ax.get_title(), ax.get_legend().get_texts()[0].get_fontsize()
    ('log', 'x', 't', 9.0)
    >>> plt.close("all")
    """
    ax.set(**props)
    if legend is not False:
        ax.legend(**({} if legend is True else legend))
    fig.tight_layout()
    return fig


def thin(x, y, n: int = 1000):
    """At most ``n`` evenly spaced points of the curve (x, y), first and last included (small data files).

    >>> [len(a) for a in thin(range(5000), range(5000))], thin([1, 2], [3, 4])
    ([1000, 1000], ([1, 2], [3, 4]))
    """
    if len(x) <= n:
        return x, y
    idx = np.unique(np.linspace(0, len(x) - 1, n).round().astype(int))
    return np.asarray(x)[idx], np.asarray(y)[idx]


def log_ticks(axis, values, *, min_ratio: float = 1.35) -> None:
    """Label a log ``axis`` at the data's own ``values``, skipping a value within ``min_ratio`` of the last
    labelled one (no overlap), with no minor-tick labels."""
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


# --- the layout check every figure must pass ---


def figure_problems(fig, *, column_px: float = COLUMN_PX, min_pt: float = MIN_FONT_PT) -> list[str]:
    """Layout defects of ``fig`` as shown in the book: every visible text under ``min_pt`` CSS points once
    the figure (as saved, tight bbox) is scaled to a ``column_px`` wide column, and every pair of
    overlapping tick labels on one axis. Empty list: no defect.

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
            boxes = [(lab.get_text(), lab.get_window_extent(renderer))
                     for tick in axis.get_major_ticks() + axis.get_minor_ticks() if _in_view(axis, tick)
                     for lab in (tick.label1, tick.label2) if lab.get_visible() and lab.get_text()]
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
        for tick in axis.get_major_ticks() + axis.get_minor_ticks():
            if t is tick.label1 or t is tick.label2:
                return tick.get_visible() and _in_view(axis, tick)
    return True


def _in_view(axis, tick) -> bool:
    lo, hi = sorted(axis.get_view_interval())
    return lo - 1e-12 * abs(hi - lo) <= tick.get_loc() <= hi + 1e-12 * abs(hi - lo)


# --- publishing a figure on its page ---


def current_provenance():
    """The :class:`~dpcompanion.core.provenance.Provenance` of the running notebook (bound to ``prov``,
    CONTRIBUTING "Notebooks"); None outside one. Not in ``core``: ``core.provenance`` is code-hashed."""
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
    """Inside this block every published figure plots ``result`` (a
    :class:`~dpcompanion.experiments.store.StoredResult`): its caption and layout record name it, so a
    quick build drawing the committed full or paper-scale result does not label it "quick mode".

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


def plain_text(label: str) -> str:
    r"""A matplotlib label as words for an alt text: mathtext's ``$...$`` unwrapped, commands spelled out
    (Markdown would typeset or drop the TeX of an image's alt text).

    An asterisk is written as the asterisk operator (Markdown would read two of them as emphasis).

    >>> plain_text(r"$f(\theta_t) - f^*$ (log scale)"), plain_text(r"fit $c\sigma_t^2 + c_0$")
    ('f(theta_t) - f^∗ (log scale)', 'fit c sigma_t^2 + c_0')
    >>> plain_text(r"$(\mathbb{E} f(\theta_{T+1}) - f^*) / (f(\theta_1) - f^*)$")
    '(E f(theta_T+1) - f^∗) / (f(theta_1) - f^∗)'
    """
    def unwrap(m: re.Match) -> str:
        tex = re.sub(r"\\(?:mathrm|text|mathit|operatorname|mathbb|mathcal|mathbf)\{([^}]*)\}", r"\1", m.group(1))
        tex = re.sub(r"\\([A-Za-z]+)\s*", lambda c: " " + c.group(1) + " ", tex)
        tex = tex.replace("{", "").replace("}", "").replace("\\", "")
        return " ".join(tex.split()).replace(" _", "_").replace(" ^", "^").replace("( ", "(")
    return re.sub(r"\$([^$]*)\$", unwrap, label).replace("*", "\u2217")


#: at most this many series are compared in a finding (more are runs or a family: their range is said)
FINDING_SERIES = 8
#: at most this many panels' findings in an alt text (the rest counted)
FINDING_PANELS = 3


def number_words(v) -> str:
    """A number as the alt text writes it: whole numbers of 1,000 and more with separators, else 3 digits.

    >>> number_words(60000.0), number_words(0.012345), number_words("pgd")
    ('60,000', '0.0123', 'pgd')
    """
    try:
        f = float(v)
    except (TypeError, ValueError):
        return plain_text(str(v))
    if not np.isfinite(f):
        return str(f)
    return f"{int(f):,}" if f.is_integer() and abs(f) >= 1000 else f"{f:.3g}"


def _panel_finding(rows: list[dict]) -> str:
    """What one panel's points (:func:`figure_files.points` rows) show, in words: with several series, which
    is lowest at the ends of their common x (at every x when it is the same one); with one, its trend or its
    highest and lowest category; a heatmap, its range."""
    def num(v):
        try:
            f = float(v)
        except (TypeError, ValueError):
            return None
        return f if np.isfinite(f) else None

    series: dict[str, list] = {}
    for r in rows:
        if num(r["value"]) is not None:
            series.setdefault(r["series"], []).append(r)
    named = {k: v for k, v in series.items() if not k.startswith("unlabelled ")}  # marks of optima, not series
    series = named or series
    curves = {k: v for k, v in series.items() if any(r["x"] != "all" for r in v)}  # not the reference levels
    series = curves or series
    if not series:
        return ""
    first = next(iter(series.values()))[0]
    xname, yname = plain_text(first["x_variable"]), plain_text(first["y_variable"]) or "the value"
    if len(series) > FINDING_SERIES:  # runs of one experiment: the means, else the range
        means = {k: v for k, v in series.items() if v[0]["statistic"] == "mean"}
        if means and len(means) <= FINDING_SERIES:
            series = means
        else:
            vals = [num(r["value"]) for v in series.values() for r in v]
            return f"{yname} from {number_words(min(vals))} to {number_words(max(vals))} over {len(series)} series"
    if first["statistic"] == "cell value":
        cells = next(iter(series.values()))
        lo, hi = (min(cells, key=lambda r: num(r["value"])), max(cells, key=lambda r: num(r["value"])))
        where = lambda r: f"{xname} {number_words(r['x'])}, {plain_text(r['note'])}"  # noqa: E731
        return (f"values from {number_words(lo['value'])} ({where(lo)}) to {number_words(hi['value'])} "
                f"({where(hi)})")
    names = [plain_text(k) for k in series]
    if len(series) == 1:
        pts = next(iter(series.values()))
        xs = [num(r["x"]) for r in pts]
        if all(x is not None for x in xs) and len(pts) > 1:
            pts = [r for _, r in sorted(zip(xs, pts), key=lambda t: t[0])]
            y0, y1 = num(pts[0]["value"]), num(pts[-1]["value"])
            verb = "falls" if y1 < y0 else "rises" if y1 > y0 else "stays"
            return (f"{names[0]}: {yname} {verb} from {number_words(y0)} at {xname} {number_words(pts[0]['x'])} "
                    f"to {number_words(y1)} at {number_words(pts[-1]['x'])}")
        hi, lo = max(pts, key=lambda r: num(r["value"])), min(pts, key=lambda r: num(r["value"]))
        if hi is lo:
            return f"{names[0]}: {yname} {number_words(hi['value'])} at {xname} {number_words(hi['x'])}"
        return (f"{names[0]}: {yname} highest at {xname} {number_words(hi['x'])} ({number_words(hi['value'])}), "
                f"lowest at {number_words(lo['x'])} ({number_words(lo['value'])})")
    at: dict = {}  # x -> {series: value}, for the x every series has
    for k, pts in series.items():
        for r in pts:
            at.setdefault(str(r["x"]), {})[k] = num(r["value"])
    common = [x for x, v in at.items() if len(v) == len(series)]
    if not common and len(series) > 2:  # a short series (a few marked points) set aside: the others compared
        shortest = min(series, key=lambda k: len(series[k]))
        return _panel_finding([r for r in rows if r["series"] != shortest])
    order = {str(r["x"]): i for i, r in enumerate(next(iter(series.values())))}
    common.sort(key=lambda x: (num(x) if num(x) is not None else order.get(x, 0)))
    if not common:  # no x in common: each series' value at its last point
        ends = {k: num(v[-1]["value"]) for k, v in series.items()}
        low = plain_text(min(ends, key=ends.get))
        return f"{low} ends lowest of {len(series)} series ({yname} {number_words(min(ends.values()))})"
    ties = [x for x in common if sorted(at[x].values())[0] == sorted(at[x].values())[1]]
    common = [x for x in common if x not in ties] or common
    lowest = [min(at[x], key=at[x].get) for x in common]
    span = (f"at every {xname} from {number_words(common[0])} to {number_words(common[-1])}" if len(common) > 1
            else f"at {xname} {number_words(common[0])}")
    if ties and len(ties) < len(at):
        span += (f" (equal at {xname} {', '.join(number_words(x) for x in ties)})" if len(ties) <= 3
                 else f" (equal at {len(ties)} of them)")
    if len(set(lowest)) == 1:
        low = lowest[0]
        if len(series) == 2:
            other = plain_text(next(k for k in series if k != low))
            return f"{_possessive(plain_text(low))} {yname} below {_possessive(other)} {span}"
        return f"{plain_text(low)} lowest of {len(series)} series ({', '.join(names)}) in {yname} {span}"
    first_x, last_x = common[0], common[-1]
    return (f"lowest {yname}: {plain_text(lowest[0])} at {xname} {number_words(first_x)}, "
            f"{plain_text(lowest[-1])} at {number_words(last_x)}"
            + (f" ({len(set(lowest))} series lowest somewhere)" if len(set(lowest)) > 2 else ""))


def _possessive(name: str) -> str:
    """``name's`` (``name'`` after an s).

    >>> _possessive("exp"), _possessive("printed bounds")
    ("exp's", "printed bounds'")
    """
    return name + ("'" if name.endswith("s") else "'s")


def finding(fig) -> str:
    """One sentence saying what ``fig`` shows, from the points it plots (:func:`figure_files.points`): per
    panel (at most :data:`FINDING_PANELS`), :func:`_panel_finding`; a figure may state its own (a forest
    plot's verdict counts: ``fig.dpcompanion_finding``).

    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([1000, 10000, 60000], [0.5, 0.4, 0.3], label="exp"); _ = ax.plot([1000, 10000, 60000], [0.6, 0.5, 0.4], label="uni")
    >>> _ = ax.set(xlabel="N", ylabel="loss")
    >>> finding(fig)
    "exp's loss below uni's at every N from 1,000 to 60,000."
    >>> plt.close(fig)
    """
    own = getattr(fig, "dpcompanion_finding", None)
    if own:
        return own
    by_panel: dict[str, list] = {}
    for r in points(fig):
        by_panel.setdefault(r["panel"], []).append(r)
    said = []
    for panel, rows in by_panel.items():
        text = _panel_finding(rows)
        if text:
            titled = panel and not (panel.startswith("panel ") and panel[6:].isdigit()) and len(by_panel) > 1
            said.append((plain_text(panel) + ": " if titled else "") + text)
    if not said:
        return ""
    more = len(said) - FINDING_PANELS
    return ("; ".join(said[:FINDING_PANELS]) + (f"; {more} more panels" if more > 0 else "")).rstrip(".") + "."


def describe_figure(fig) -> str:
    """A figure's alt text: what it shows (:func:`finding`, from its data), then, shortly, per panel its
    title, what is plotted against what (with log axes said), its series and how many points each has.

    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([1, 10, 100], [3, 2, 1], label="dynamic"); _ = ax.plot([1, 10, 100], [3, 2.5, 2], label="uniform")
    >>> _ = ax.set(xscale="log", xlabel="N", ylabel="test loss", title="Loss against N"); _ = ax.legend()
    >>> describe_figure(fig)
    "dynamic's test loss below uniform's at every N from 10 to 100 (equal at N 1). Loss against N: test loss against N (log scale); series dynamic, uniform (3 points each)."
    >>> plt.close(fig)
    """
    said = finding(fig)
    axes = _describe_axes(fig)
    return f"{said} {axes}" if said else axes


def _describe_axes(fig) -> str:
    """Per panel its title, what is plotted against what (log axes said), its series and their points (a
    figure may say its own: a forest plot's panels, ``fig.dpcompanion_axes_text``)."""
    if getattr(fig, "dpcompanion_axes_text", None):
        return fig.dpcompanion_axes_text
    def label(ax, which: str) -> str:  # an axis sharing its scale with a labelled one reads that label
        own = (ax.get_xlabel() if which == "x" else ax.get_ylabel()).strip()
        if own:
            return plain_text(own)
        shared = ax.get_shared_x_axes() if which == "x" else ax.get_shared_y_axes()
        for other in shared.get_siblings(ax):
            got = (other.get_xlabel() if which == "x" else other.get_ylabel()).strip()
            if got:
                return plain_text(got)
        return ""

    panels = []
    for ax in fig.axes:
        if not ax.get_visible() or not (ax.lines or ax.collections or ax.patches or ax.images):
            continue
        x, y = label(ax, "x"), label(ax, "y")
        x += " (log scale)" if x and ax.get_xscale() == "log" else ""
        y += " (log scale)" if y and ax.get_yscale() == "log" else ""
        what = f"{y} against {x}" if x and y else (y or x or "a plot")
        series = [ln for ln in ax.lines if not ln.get_label().startswith("_")]
        counts = sorted({len(ln.get_xdata()) for ln in series})
        text = (plain_text(ax.get_title().strip()) + ": " if ax.get_title().strip() else "") + what
        if len(series) > FINDING_SERIES:  # a family of rows or runs: counted, not listed
            text += f"; {len(series)} series"
        elif series:
            text += "; series " + ", ".join(plain_text(ln.get_label()) for ln in series)
            text += f" ({counts[0]} points each)" if len(counts) == 1 else ""
        panels.append(text)
    head = fig._suptitle.get_text().strip() + ". " if getattr(fig, "_suptitle", None) is not None else ""
    if not panels:
        return head.strip() or "A figure."
    many = f"{len(panels)} panels. " if len(panels) > 1 else ""
    return head + many + ". ".join(panels) + "."


@contextlib.contextmanager
def folded(title: str):
    """Inside this block the book's Markdown (:func:`say`) and every published figure are collected and shown,
    on leaving it, as one folded block titled ``title`` (the figures as PNG files beside their data, so they
    can sit inside the fold); outside a book build, shown as usual."""
    prev = getattr(_state, "fold", None)
    _state.fold = parts = []
    try:
        yield
    finally:
        _state.fold = prev
    if parts:
        say(report.folded(title, "\n\n".join(parts)))


def say(text: str) -> None:
    """Show Markdown in the running notebook, or collect it into the open :func:`folded` block."""
    fold = getattr(_state, "fold", None)
    if fold is not None:
        fold.append(text)
        return
    _display_markdown(text)


def _display_markdown(text: str) -> None:
    from IPython.display import Markdown, display

    display(Markdown(text))


def publish(fig) -> None:
    """Show ``fig`` in the running book notebook with its data and code links (module docstring); nothing
    outside a book notebook (no IPython kernel, or no Provenance started)."""
    prov = current_provenance()
    if _shell() is None or prov is None:
        return
    from IPython.display import display  # there is a shell: IPython is installed
    fn = getattr(fig, "dpcompanion_source", None)
    page = prov.notebook
    n = _counters[page] = _counters.get(page, 0) + 1
    parts = [f"Figure {n}"]
    caption = report.figure_caption(plotted_result(), build=prov,  # the one caption
                                    judged_on=getattr(fig, "dpcompanion_judged_on", ""))
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
        stem = f"{page}-figure-{n}"  # the page in the name: downloads from two pages never collide
        write_figure_data(fig, folder / f"{stem}.csv")
        tidy = write_points(fig, folder / f"{stem}.points.csv")  # every point plotted, tidy, for analysis
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
        if tidy is not None:
            parts.append(f"{{download}}`points <{link}.points.csv>` (one row per point: variables, value, SE, n)")
        parts.append(f"{{download}}`code <{link}.py>` (`{name}`, {cell})")
    else:
        parts.append(f"code: `{name}`, {cell}")
    alt_text = describe_figure(fig)
    if repo_link:
        parts.append(f"[source at {at}]({repo_link})")
    parts.append(caption)
    parts.append(report.rerun_line(plotted_result(), page=page))
    line = "<small>" + " · ".join(parts) + "</small>"
    if getattr(_state, "fold", None) is not None and book_dir:  # inside a fold: the image as a file
        fig.savefig(Path(book_dir) / FIGURES_DIR / page / f"{stem}.png", bbox_inches="tight")
        plt.close(fig)
        alt = alt_text.replace("[", "(").replace("]", ")")
        # one paragraph: the caption line is the image's next element, as under a figure outside the fold
        say(f"![{alt}]({FIGURES_DIR}/{page}/{stem}.png)\n{line}")
        return
    display(fig)  # after the data is read from it: a closed figure has no renderer
    plt.close(fig)
    alt = html.escape(alt_text, quote=True)
    # the alt text travels in a hidden span after the image; dpcompanion.book.site.describe_images sets it
    say(f'<span class="dpc-alt" hidden data-alt="{alt}"></span>' + line)
