"""Generated Markdown (MyST) for the book: tables, the paper-vs-ours table, tuning and scale blocks, figure
captions. No number here is typed by hand; verdicts come from the caller's rules
(:mod:`dpcompanion.experiments.comparisons`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from typing import Any, Iterable, Sequence

from dpcompanion.experiments import compute
from dpcompanion.experiments.comparisons import VERDICTS, reproduction
from dpcompanion.experiments.scale_tables import SCALE_WORDS, at_paper_scale, scale_of, scale_word, stored_sizes


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


def two_tables(header: Sequence[str], rows: Iterable[Sequence[Any]], split: int, digits: int = 4,
               captions: tuple[str, str] = ("", "")) -> str:
    """A wide table as two sharing its first column: columns ``[0, split)``, then 0 and ``[split, end)``,
    each under its caption (when given).

    >>> print(two_tables(["a", "b", "c"], [[1, 2, 3]], 2))
    | a | b |
    | --- | --- |
    | 1 | 2 |
    <BLANKLINE>
    | a | c |
    | --- | --- |
    | 1 | 3 |
    """
    rows = [list(r) for r in rows]
    if not 1 < split < len(header):
        raise ValueError(f"split must lie between 2 and {len(header) - 1}, got {split}")
    first = markdown_table(header[:split], [r[:split] for r in rows], digits)
    second = markdown_table([header[0], *header[split:]], [[r[0], *r[split:]] for r in rows], digits)
    return "\n\n".join(f"{c}\n\n{t}" if c else t for c, t in zip(captions, (first, second)))


def pairing_note(a: Any, b: Any) -> str:
    """One sentence when two results paired by seed ran on different devices (provenance ``device``), ''
    otherwise.

    >>> pairing_note({"device": "cuda"}, {"device": "cpu"})[:59]
    'These two results ran on different devices (cuda and cpu): '
    >>> pairing_note({"device": "cpu"}, {"device": "cpu"})
    ''
    """
    da, db = (str(p.get("device") or "?") for p in (a, b))
    if da == db:
        return ""
    return (f"These two results ran on different devices ({da} and {db}): each pair shares its seed, and so "
            "its data, initialisation and tuning sets, but not its noise draws (a GPU's generator draws "
            "other numbers than a CPU's); each difference carries the noise of both runs, and its standard "
            "error, computed from the differences, stays valid (wider than with shared draws).")


def paper_vs_ours(rows: Iterable[dict[str, Any]], digits: int = 4) -> str:
    """The paper-vs-ours table of rows with ``item``, ``paper``, ``ours``, ``verdict`` (one of
    :data:`VERDICTS`) and optionally ``note``; long cells shortened by :func:`short_cell`."""
    out = []
    for r in rows:
        if r["verdict"] not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {r['verdict']!r}")
        out.append([r["item"], short_cell(r["paper"]), short_cell(r["ours"]), f"**{r['verdict']}**",
                    short_cell(r.get("note", ""))])
    return markdown_table(["", "paper reported", "we measured", "verdict", "note"], out, digits)


#: a table cell longer than this (before any folded part) folds all but its first clause
CELL_CHARS = 100
_DETAILS = re.compile(r"\s*<details><summary>(?P<summary>.*?)</summary>(?P<body>.*)</details>\s*$")


#: a word ending in a full stop that ends no sentence
ABBREVIATION = re.compile(r"\b(?:Sec|Secs|Fig|Figs|Eq|Eqs|App|Thm|Tab|al|cf|e\.g|i\.e|vs|No)\.$")


def _cut(text: str, limit: int) -> int:
    """Where a long cell's first clause ends: after the first ``"; "`` (else ``". "``, else
    ``", "``, else a space) that lies at 30 to ``limit`` characters, outside math, code, a
    role and parentheses; 0 when there is no such place."""
    depth, dollars, ticks, cands = 0, 0, 0, {";": [], ".": [], ",": [], " ": []}
    for i, ch in enumerate(text[:limit]):
        if ch == "$":
            dollars += 1
        elif ch == "`":
            ticks += 1
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == " " and i >= 30 and depth == 0 and dollars % 2 == 0 and ticks % 2 == 0:
            prev = text[i - 1]
            if prev == "." and ABBREVIATION.search(text[:i]):
                prev = " "  # "Sec. 5", "Fig. 1", "et al. (": not a sentence's end
            cands[prev if prev in ";.," else " "].append(i)
    for kind in (";", ".", ","):
        if cands[kind]:
            return cands[kind][0]
    return cands[" "][-1] if cands[" "] else 0


def short_cell(text: Any, limit: int = CELL_CHARS) -> str:
    """A cell of at most ``limit`` characters (a ``<details>`` block in it aside) unchanged; a longer one
    shows its first clause (:func:`_cut`) and folds the rest, with the block it had, on one line.

    >>> short_cell("short")
    'short'
    >>> short_cell("At N = 250, exp's loss is 0.017 below uni's; the paper reports exp ahead" + ", ok" * 20)[:80]
    "At N = 250, exp's loss is 0.017 below uni's <details><summary>more</summary>the "
    >>> short_cell("ours 1 > 0 " + "x " * 80 + "<details><summary>how it was judged</summary>rule</details>").count("<details>")
    1
    """
    text = " ".join(str(text).split())
    m = _DETAILS.search(text)
    visible = text[:m.start()] if m else text
    if len(visible) <= limit:
        return text
    cut = _cut(visible, limit)
    if not cut or len(visible) - cut < 40:  # nothing to cut, or too little left to be worth a fold
        return text
    head, body = visible[:cut].rstrip(" ;,."), visible[cut:].strip()
    if m:  # the block it had, under its own summary as a heading
        body = f"{body}<br><br><em>{m.group('summary')[:1].upper() + m.group('summary')[1:]}:</em> {m.group('body')}"
    return f"{head} <details><summary>more</summary>{body}</details>"


def _cell(v: Any) -> str:
    if isinstance(v, dict):
        return "; ".join(f"{k} {_cell(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt(x) for x in v) + "]"
    return "not stated" if v is None else fmt(v)


def scale_table(scale: dict) -> str:
    """A result's scale block (:mod:`dpcompanion.experiments.scale_tables`): a sentence, then the table."""
    if not scale:
        return "No scale declaration for this page."
    at = at_paper_scale(scale)
    rows = [[k, _cell(d.get("paper")), d.get("source", ""), _cell(d.get("ours")),
             "-" if d.get("match") is None else "yes" if d["match"] else "larger" if at else "**no**"]
            for k, d in scale.items()]
    differ = [k for k, d in scale.items() if d.get("match") is False]
    word = scale_word(scale)
    head = ("**Scale: paper scale.** This run matches the paper in every dimension the paper prints"
            + (f", or exceeds it ({', '.join(differ)})." if differ else ".")
            if at else
            f"**Scale: {word or 'not stated'}** ({SCALE_WORDS.get(word, 'the paper prints no size')}). "
            + (f"Differing from the paper: {', '.join(differ)}." if differ else ""))
    return head + "\n\n" + markdown_table(["dimension", "paper", "paper's source", "ours", "matches"], rows)


#: a generated table longer than this many rows is shown folded (pages a reader finishes)
FOLD_ROWS = 12


def power_table(rows: Sequence[dict]) -> str:
    """The power table of a page's report rows (:func:`reproduction.power_rows`)."""
    body = reproduction.power_rows(rows)
    if not body:
        return ("**Power.** No row of this page has a single effect with a standard error to compute power from. "
                "A row judged over seeds gives its intervals in its note.")
    table = markdown_table(["", "paper's effect", "our estimate", "our n", "smallest detectable effect",
                            "runs to separate (inconclusive rows)"], body)
    return ("**Power.** The smallest effect our runs detect at 80% power (two-sided 5%), from our standard "
            "errors; a paper's effect below it cannot be confirmed by these runs.\n\n"
            + (folded(f"Power of each row ({len(body)})", table) if len(body) > FOLD_ROWS else table))


#: the columns of the compact tuning summary (seed lists as counts, bounds in short)
TUNING_SUMMARY_COLUMNS = ["cell", "method", "parameter", "setting", "chosen", "grid", "interior or bound",
                          "tuning seeds", "report seeds"]
#: the columns of a tuning CSV (every field of a tuning record; lists as JSON)
TUNING_CSV_COLUMNS = ("cell", "method", "param", "setting", "chosen", "grid_min", "grid_max", "grid", "n_candidates",
                      "interior", "edge", "stopped", "stated_bound", "minimize", "tuning_seeds", "report_seeds",
                      "trace_candidates", "trace_scores")


def _count(v: Any) -> Any:
    return len(v) if isinstance(v, (list, tuple)) else ("" if v is None else v)


def short_bound(text: Any) -> str:
    """A stated bound's first clause, without its quotation (the CSV keeps it whole).

    >>> short_bound("T in [50, 150] (the FAccT version, Sec. 5: 'we grid search')")
    'T in [50, 150]'
    >>> short_bound("beta >= 1: W Sec. 6.2 take beta_t = max(...)")
    'beta >= 1'
    """
    t = str(text or "")
    for sep in (" (", ": ", "; "):
        t = t.split(sep)[0]
    return t.strip()


def _where(e: dict) -> str:
    if e.get("interior"):
        return "interior"
    if reproduction.domain_bound(e):
        return "at its domain's end " + short_bound(e["stated_bound"])
    if e.get("stated_bound"):
        return "at stated bound " + short_bound(e["stated_bound"])
    return f"at grid edge ({e.get('stopped') or e.get('edge') or 'stopped'})"


def tuning_summary_rows(tuning: Sequence[dict]) -> list[list[Any]]:
    """One row per tuning record (:data:`TUNING_SUMMARY_COLUMNS`), seed lists as counts. Keys are read
    with ``.get``: a record of an older payload lacks some.

    >>> tuning_summary_rows([{"cell": "N = 250", "method": "uni", "param": "T", "setting": "paper",
    ...     "chosen": 50, "grid_min": 50.0, "grid_max": 150.0, "n_candidates": 5, "interior": False,
    ...     "stated_bound": "T in [50, 150] (the FAccT version)", "tuning_seeds": list(range(10)),
    ...     "report_seeds": list(range(100))}])
    [['N = 250', 'uni', 'T', 'paper', '50', '[50, 150] (5)', 'at stated bound T in [50, 150]', 10, 100]]
    """
    rows = []
    for e in tuning:
        grid = (f"[{fmt(e.get('grid_min'))}, {fmt(e.get('grid_max'))}]" if e.get("grid_min") is not None else "")
        if e.get("n_candidates") is not None:
            grid += f" ({e['n_candidates']})"
        rows.append([e.get("cell", ""), e.get("method", ""), e.get("param", ""), e.get("setting", ""),
                     fmt(e.get("chosen")), grid, _where(e), _count(e.get("tuning_seeds")),
                     _count(e.get("report_seeds"))])
    return rows


def tuning_sentence(tuning: Sequence[dict]) -> str:
    """The tuning in one sentence: choices interior, at a stated bound, at a grid edge; seed counts.

    >>> tuning_sentence([{"interior": True, "tuning_seeds": [1, 2], "report_seeds": [3, 4, 5]},
    ...                  {"interior": False, "stated_bound": "T <= 9", "tuning_seeds": [1, 2], "report_seeds": [3]}])
    '2 tuned choices: 1 interior, 1 at a bound the paper stated, 0 at a grid edge; 2 tuning seeds, disjoint from the 1-3 report seeds.'
    """
    n = len(tuning)
    inner = sum(1 for e in tuning if e.get("interior"))
    domain = sum(1 for e in tuning if reproduction.domain_bound(e))
    stated = sum(1 for e in tuning if not e.get("interior") and e.get("stated_bound")) - domain

    def counts(key):
        cs = sorted({_count(e.get(key)) for e in tuning if isinstance(e.get(key), (list, tuple))})
        return "" if not cs else (str(cs[0]) if len(cs) == 1 else f"{cs[0]}-{cs[-1]}")

    return (f"{n} tuned choice{'s' if n != 1 else ''}: {inner} interior, {stated} at a bound the paper stated, "
            + (f"{domain} at an end of the parameter's domain, " if domain else "")
            + f"{n - inner - stated - domain} at a grid edge; {counts('tuning_seeds') or 'no'} tuning seeds, disjoint from the "
            f"{counts('report_seeds') or 'no'} report seeds.")


def tuning_csv_text(tuning: Sequence[dict]) -> str:
    """Every tuning record whole, as CSV (:data:`TUNING_CSV_COLUMNS`; lists and the trace as JSON)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(TUNING_CSV_COLUMNS), lineterminator="\n")
    w.writeheader()
    for e in tuning:
        trace = e.get("trace") or {}
        row = {k: e.get(k) for k in TUNING_CSV_COLUMNS}
        row.update(trace_candidates=trace.get("candidates"), trace_scores=trace.get("scores"))
        w.writerow({k: ("" if v is None else json.dumps(v, default=str) if isinstance(v, (list, dict)) else v)
                    for k, v in row.items()})
    return buf.getvalue()


def folded(title: str, body: str, *, cls: str = "") -> str:
    """``body`` in a folded block (a MyST ``dropdown`` admonition, with the classes ``cls`` too) titled ``title``.

    >>> print(folded("All rows", "| a |"))
    :::{admonition} All rows
    :class: dropdown
    <BLANKLINE>
    | a |
    :::
    >>> folded("Outer", folded("Inner", "x")).splitlines()[0]
    '::::{admonition} Outer'
    """
    fence = ":" * max([3] + [len(m) + 1 for m in re.findall(r"(?m)^(:{3,})", body)])  # longer than any inside
    return f"{fence}{{admonition}} {title}\n:class: {' '.join(('dropdown', cls)).strip()}\n\n{body}\n{fence}"


def tuning_table(tuning: Sequence[dict], *, link: str = "") -> str:
    """The tuning block: :func:`tuning_sentence`, ``link`` to the CSV (if any), the summary table folded."""
    if not tuning:
        return ""
    table = markdown_table(TUNING_SUMMARY_COLUMNS, tuning_summary_rows(tuning))
    return (f"**Tuning.** {tuning_sentence(tuning)}" + (f" Every record, with the seed lists and every candidate's "
                                                        f"score: {link}." if link else "")
            + "\n\n" + folded(f"Each tuned choice ({len(tuning)})", table))


def reproduction_tables(experiment_id: str, *, seed: int = 0, device: str = "cpu", rows: list | None = None,
                        tuning_link: str = "") -> str:
    """The power, scale and tuning tables of the result the reproduction report judges (``rows``: the page's
    report rows, computed when not given)."""
    if rows is None:
        rows = reproduction.report_rows(pages=[experiment_id], compute=True, seed=seed, device=device)
    mode = rows[0]["result"]["mode"] if rows else None
    parts = [power_table(rows), scale_table(rows[0]["scale"] if rows else {}),
             tuning_table(rows[0].get("tuning") or [] if rows else [], link=tuning_link)]
    judged = ("the paper-scale result (`paper` mode, the paper's own sizes), not the full-mode one" if mode == "paper"
              else f"the {mode} result")
    return f"<small>Judged on {judged}.</small>\n\n" + "\n\n".join(p for p in parts if p)


# --- figure captions ---

#: the dimensions a caption names, in this order, at most :data:`CAPTION_SIZES` of them
CAPTION_DIMS = ("training samples", "training samples (largest rung)", "model", "hidden width", "epochs", "T",
                "seeds", "repeats", "Monte Carlo runs", "runs", "trials")
CAPTION_SIZES = 4
#: dimensions that count something: written "<n> <dimension>", the others "<dimension> <value>"
_COUNTED = ("training samples", "epochs", "seeds", "repeats", "Monte Carlo runs", "runs", "trials")


def _size_value(v: Any) -> str:
    """A size as a caption writes it.

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
    """A stored result's sizes in a few words (``"paper scale: 60,000 training samples, CNN model, 50
    epochs, 2 seeds"``), from its payload, else its config, after its scale word
    (:func:`dpcompanion.experiments.scale_tables.scale_word`: paper scale, reduced, other data, other setup)."""
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
    label = scale_word(scale)
    unprinted = [k for k in CAPTION_DIMS if k in scale and scale[k].get("match") is None and scale[k].get("ours") is not None]
    # "paper scale" covers what the paper prints: a size it does not print is ours alone
    tail = f" ({', '.join(unprinted)} not printed in the paper)" if label == "paper scale" and unprinted else ""
    if label and words:
        return f"{label}: {', '.join(words)}{tail}"
    return label or ", ".join(words)


def figure_caption(result: Any, *, build: Any, judged_on: str = "") -> str:
    """A figure's provenance caption: the plotted result's mode, commit and sizes, then the build that drew
    it (``build``: the notebook's Provenance); where ``result`` is None, ``judged_on`` (a figure of
    verdict rows from many results: :func:`dpcompanion.book.forest.judged_on`) and the build.

    >>> from types import SimpleNamespace as NS
    >>> build = NS(mode="quick", commit="9dcda9f43b93", dirty=False)
    >>> figure_caption(None, build=build)
    'quick mode, commit 9dcda9f43b93'
    >>> figure_caption(None, build=build, judged_on="rows judged on: 3 paper-mode result rows")
    'rows judged on: 3 paper-mode result rows; drawn by this build (quick mode, commit 9dcda9f43b93)'
    >>> r = NS(id="w-f4", mode="paper", provenance={"commit": "2e722974aaea"}, payload={})
    >>> figure_caption(r, build=build)
    'result: paper mode, commit 2e722974aaea; drawn by this build (quick mode, commit 9dcda9f43b93)'
    """
    drawn = f"{build.mode} mode, commit {build.commit}" + (" (dirty tree)" if build.dirty else "")
    if result is None:
        return f"{judged_on}; drawn by this build ({drawn})" if judged_on else drawn
    p = result.provenance
    sizes = result_sizes(result)
    return (f"result: {result.mode} mode, commit {p.get('commit', 'unknown')}" + ("+dirty" if p.get("dirty") else "")
            + (f" ({sizes})" if sizes else "") + f"; drawn by this build ({drawn})")


def _duration(seconds: float) -> str:
    """``"42 s"``, ``"9.8 min"``, ``"2.3 h"``."""
    return f"{seconds:.0f} s" if seconds < 120 else (f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h")


def rerun_line(result: Any, *, page: str) -> str:
    """How to redraw a figure at the size shown, and what it cost when measured: the experiment's command
    and the result's recorded wall time and device; for a figure without a stored result, the page's command.

    >>> from types import SimpleNamespace as NS
    >>> r = NS(id="h-f-eff", mode="full", provenance={"wall_s": 586.3, "device": "cpu"}, over_sittings_s=None)
    >>> rerun_line(r, page="h-f-eff")
    'rerun: `python -m dpcompanion experiment h-f-eff --mode full --recompute` (measured: 9.8 min on cpu when this result was computed)'
    >>> rerun_line(None, page="h-sec-4-1")
    'rerun: `python -m dpcompanion reproduce --only h-sec-4-1 --reexecute` (this page, drawn by the build)'
    """
    if result is None:
        return f"rerun: `python -m dpcompanion reproduce --only {page} --reexecute` (this page, drawn by the build)"
    p = result.provenance
    device = p.get("device") or "cpu"
    cmd = compute.rerun_command(result.id, p, result.mode) + " --recompute"  # its device, seed and executor
    summed = getattr(result, "over_sittings_s", None)
    wall = summed if summed is not None else p.get("wall_s")
    if not isinstance(wall, (int, float)):
        return f"rerun: `{cmd}` (its time was not recorded)"
    how = "summed over the sittings that computed its units" if summed is not None else "when this result was computed"
    return f"rerun: `{cmd}` (measured: {_duration(float(wall))} on {device} {how})"
