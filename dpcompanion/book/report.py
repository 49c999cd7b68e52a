"""Generated prose for the book: Markdown tables and the paper-vs-ours cell.

Notebooks display these with ``IPython.display.Markdown``; the book renders code-cell
Markdown as MyST (``nb_render_markdown_format: myst``), so generated text may contain
directives and roles. No number shown this way is typed by hand: the cells pass computed
values, and verdicts are computed from them by the caller (see :func:`verdict`).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

#: a row whose sizes differ from the paper's is "not comparable", its note starting with
#: "not compared (sizes differ)" (dpcompanion.experiments.comparisons.NOT_COMPARED)
from dpcompanion.experiments.comparisons import VERDICTS, reproduction  # VERDICTS: one list of verdict words
from dpcompanion.experiments.comparisons.scale import at_paper_scale, scale_of, stored_sizes


def fmt(x: Any, digits: int = 4) -> str:
    """Format a number for prose: ``digits`` significant digits, ints as ints.

    >>> fmt(0.392698), fmt(12), fmt(1.5e-8)
    ('0.3927', '12', '1.5e-08')
    >>> fmt(float("inf")), fmt(float("-inf")), fmt(float("nan"))
    ('∞', '-∞', 'nan')
    """
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, int):
        return str(x)
    try:
        xf = float(x)
    except (TypeError, ValueError):
        return str(x)
    if not math.isfinite(xf):  # e.g. a relative change from zero
        return "nan" if math.isnan(xf) else ("∞" if xf > 0 else "-∞")
    if xf == int(xf) and abs(xf) < 1e15:
        return str(int(xf))
    return f"{xf:.{digits}g}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]], digits: int = 4) -> str:
    """A GitHub/MyST Markdown table.

    >>> print(markdown_table(["a", "b"], [[1, 0.5]]))
    | a | b |
    | --- | --- |
    | 1 | 0.5 |
    """
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    for r in rows:
        lines.append("| " + " | ".join(fmt(v, digits).replace("|", "\\|") for v in r) + " |")
    return "\n".join(lines)


def verdict(*, paper: float, ours: float, rtol: float, partly_rtol: float | None = None) -> str:
    """Compare a reported number with ours: ``agrees`` within ``rtol`` (relative),
    ``partly`` within ``partly_rtol``, else ``disagrees``.

    >>> verdict(paper=0.3927, ours=0.39270, rtol=1e-3)
    'agrees'
    >>> verdict(paper=1.0, ours=1.3, rtol=0.1, partly_rtol=0.5)
    'partly'
    """
    rel = abs(ours - paper) / max(abs(paper), 1e-300)
    if rel <= rtol:
        return "agrees"
    if partly_rtol is not None and rel <= partly_rtol:
        return "partly"
    return "disagrees"


def paper_vs_ours(rows: Iterable[dict[str, Any]], digits: int = 4) -> str:
    """The paper-vs-ours table: each row has ``item``, ``paper``, ``ours``, ``verdict``
    (one of :data:`VERDICTS`, computed by the caller) and optionally ``note``."""
    out = []
    for r in rows:
        if r["verdict"] not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {r['verdict']!r}")
        out.append([r["item"], r["paper"], r["ours"], f"**{r['verdict']}**", r.get("note", "")])
    return markdown_table(["", "paper reported", "we measured", "verdict", "note"], out, digits)


def _cell(v: Any) -> str:
    if isinstance(v, dict):
        return "; ".join(f"{k} {_cell(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt(x) for x in v) + "]"
    return "not stated" if v is None else fmt(v)


def scale_table(scale: dict) -> str:
    """The scale block of a result (:mod:`dpcompanion.experiments.comparisons.scale`) as a
    table: dimension, the paper's value and its source, ours, whether they match; then one
    sentence: at the paper's scale only when every dimension with a printed value matches."""
    if not scale:
        return "No scale declaration for this page."
    rows = [[k, _cell(d.get("paper")), d.get("source", ""), _cell(d.get("ours")),
             "-" if d.get("match") is None else ("yes" if d["match"] else "**no**")] for k, d in scale.items()]
    differ = [k for k, d in scale.items() if d.get("match") is False]
    head = ("**Scale.** This run matches the paper in every dimension the paper prints."
            if at_paper_scale(scale) else
            f"**Scale.** This run is **not** at the paper's scale: {', '.join(differ) or 'the paper prints no size'}"
            + (" differ." if differ else "."))
    return head + "\n\n" + markdown_table(["dimension", "paper", "paper's source", "ours", "matches"], rows)


def power_table(rows: Sequence[dict]) -> str:
    """The power table of a page from its reproduction-report rows: the paper's effect, our
    estimate and n, the smallest effect our runs detect at 80% power (two-sided 5%), and for an
    inconclusive row the runs that would separate zero from the paper's value."""
    body = reproduction.power_rows(rows)
    if not body:
        return ("**Power.** No row of this page has a single effect with a standard error to compute power from. "
                "A row judged over seeds gives its intervals in its note.")
    return ("**Power.** The smallest effect our runs detect at 80% power (two-sided 5%), from our standard "
            "errors; a paper's effect below it cannot be confirmed by these runs.\n\n"
            + markdown_table(["", "paper's effect", "our estimate", "our n", "smallest detectable effect",
                              "runs to separate (inconclusive rows)"], body))


def tuning_table(tuning: Sequence[dict]) -> str:
    """The payload's tuning list (``param, method, chosen, grid_min, grid_max, interior,
    stated_bound, tuning_seeds, report_seeds``) as a table; '' when there is none."""
    if not tuning:
        return ""
    keys = ("param", "method", "chosen", "grid_min", "grid_max", "interior", "stated_bound", "tuning_seeds",
            "report_seeds")
    return "**Tuning.**\n\n" + markdown_table(list(keys), [[_cell(t.get(k)) for k in keys] for t in tuning])


def reproduction_tables(experiment_id: str, *, seed: int = 0, device: str = "cpu") -> str:
    """What every experiment page shows under its verdicts (issue 21): the power table, the
    scale table and the tuning table of the result the reproduction report judges (the fresh
    paper-scale result when complete and fresh, else the fresh full result, else the fresh
    quick one: the one the page shows)."""
    rows = reproduction.report_rows(pages=[experiment_id], compute=True, seed=seed, device=device)
    mode = rows[0]["result"]["mode"] if rows else None
    parts = [power_table(rows), scale_table(rows[0]["scale"] if rows else {}),
             tuning_table(rows[0]["tuning"] if rows else [])]
    judged = ("the paper-scale result (`paper` mode, the paper's own sizes), not the full-mode one" if mode == "paper"
              else f"the {mode} result")
    return f"<small>Judged on {judged}.</small>\n\n" + "\n\n".join(p for p in parts if p)


# --- figure captions (issue 34) ---

#: the dimensions a caption names, in this order, at most :data:`CAPTION_SIZES` of them: the
#: size of the data, the model, the length of training, the number of runs averaged
CAPTION_DIMS = ("training samples", "training samples (largest rung)", "model", "hidden width", "epochs", "T",
                "seeds", "repeats", "Monte Carlo runs", "runs", "trials")
#: how many dimensions a caption names ("its sizes in a few words")
CAPTION_SIZES = 4
#: dimensions that count something: written "<n> <dimension>", the others "<dimension> <value>"
_COUNTED = ("training samples", "epochs", "seeds", "repeats", "Monte Carlo runs", "runs", "trials")


def _size_value(v: Any) -> str:
    """A size as a caption writes it: 60,000; 60/120/200 (up to three values); 250-4,000
    (more); a mapping by its values (equal values once).

    >>> _size_value(60000), _size_value([60, 120, 200]), _size_value([250, 500, 1000, 2000, 4000])
    ('60,000', '60/120/200', '250-4,000')
    >>> _size_value({"pgd": 200000, "adp": 200000}), _size_value({"pgd": 20000, "psgd": 100000}), _size_value("CNN")
    ('200,000', '20,000-100,000', 'CNN')
    """
    if isinstance(v, dict):
        vals = sorted({x for x in v.values() if x is not None}, key=lambda x: (not isinstance(x, (int, float)), str(x)))
        if len(vals) > 1 and all(isinstance(x, (int, float)) for x in vals):
            return f"{_size_value(min(vals))}-{_size_value(max(vals))}"
        return _size_value(vals[0] if len(vals) == 1 else vals)
    if isinstance(v, (list, tuple)):
        if not v:
            return ""
        if len(v) > 3 and all(isinstance(x, (int, float)) for x in v):
            return f"{_size_value(min(v))}-{_size_value(max(v))}"
        return "/".join(_size_value(x) for x in v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return f"{int(v):,}" if float(v) == int(v) else fmt(v)


def result_sizes(result: Any) -> str:
    """A stored result's sizes in a few words, read from the result itself: ``"paper scale:
    60,000 training samples, CNN model, 50 epochs, 2 seeds"``. The values are those its
    payload holds (:func:`~dpcompanion.experiments.comparisons.scale.stored_sizes`), else its
    recorded config's; "paper scale" when every dimension the paper prints matches
    (:func:`~dpcompanion.experiments.comparisons.scale.at_paper_scale`), "reduced" when one
    differs, nothing for an experiment whose paper prints no size; '' for an experiment
    without a scale declaration."""
    config = result.provenance.get("config") if isinstance(result.provenance.get("config"), dict) else {}
    scale = scale_of(result.id, config) if config else {}
    sizes = {k: d["ours"] for k, d in scale.items()}
    sizes.update(stored_sizes(result.id, result.payload or {}))
    words = []
    for name in CAPTION_DIMS:
        v = sizes.get(name)
        text = _size_value(v) if v is not None else ""
        if not text or text == "None":
            continue
        if name == "training samples (largest rung)":
            words.append(f"up to {text} training samples")
        elif name == "model":
            words.append(f"{text} model")
        elif name == "T":
            words.append(f"T = {text}")
        else:
            words.append(f"{text} {name}" if name in _COUNTED else f"{name} {text}")
    words = words[:CAPTION_SIZES]
    printed = [d["match"] for d in scale.values() if d.get("match") is not None]
    label = "paper scale" if printed and at_paper_scale(scale) else ("reduced" if printed else "")
    if label and words:
        return f"{label}: {', '.join(words)}"
    return label or ", ".join(words)


def figure_caption(result: Any, *, build: Any) -> str:
    """The provenance part of a figure's caption, decided from the result the figure plots
    (issue 34): its mode, the commit that computed it and its sizes in a few words
    (:func:`result_sizes`), then the build that drew it (``build``, the notebook's
    :class:`~dpcompanion.core.provenance.Provenance`). A quick-mode build draws the committed
    full or paper-scale result on several pages: the caption must name the run plotted, not
    the build. ``result`` None (a figure of a page that plots no stored result: theory,
    accounting) gives the build alone. Every published figure's caption is this
    (:func:`dpcompanion.book.plotting.publish`); an experiment page sets ``result`` with
    :meth:`dpcompanion.book.show.ExperimentPage.drawing`.

    >>> from types import SimpleNamespace as NS
    >>> build = NS(mode="quick", commit="9dcda9f43b93", dirty=False)
    >>> figure_caption(None, build=build)
    'quick mode, commit 9dcda9f43b93'
    >>> r = NS(id="w-f4", mode="paper", provenance={"commit": "2e722974aaea"}, payload={})
    >>> figure_caption(r, build=build)
    'result: paper mode, commit 2e722974aaea; drawn by this build (quick mode, commit 9dcda9f43b93)'
    """
    drawn = f"{build.mode} mode, commit {build.commit}" + (" (dirty tree)" if build.dirty else "")
    if result is None:
        return drawn
    p = result.provenance
    sizes = result_sizes(result)
    return (f"result: {result.mode} mode, commit {p.get('commit', 'unknown')}" + ("+dirty" if p.get("dirty") else "")
            + (f" ({sizes})" if sizes else "") + f"; drawn by this build ({drawn})")
