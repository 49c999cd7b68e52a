"""The cells every experiment page shares (CONTRIBUTING, "Notebooks"): :func:`show_experiment` shows the
outcome, sizes, figures and paper-vs-ours table; the returned :class:`ExperimentPage` shows the rest
where the notebook places it::

    page = show_experiment("h-f-curv", mode=mode, seed=seed, device=device, figure=figure,
                           absent_note=" It takes seconds on a CPU.")
    page.reproduction()

Nothing here decides a verdict or computes a number (the rules, :mod:`dpcompanion.experiments.comparisons`,
and the store's :func:`~dpcompanion.experiments.store.best_fresh` do). Torch-free at import.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable

from dpcompanion.book import forest, library_figures, plotting, report
from dpcompanion.core import outputs
from dpcompanion.experiments import base, store
from dpcompanion.experiments.comparisons import reproduction as reproduction_report

__all__ = ["ExperimentPage", "show_experiment", "data_link", "forest_block", "paper_progress_note", "full_absent_note",
           "headline_rows", "setup_words", "lead_markdown"]

#: at most this many rows lead a page (the rest are in its tables)
LEAD_ROWS = 6

#: what the tuning trace shows, said above each
TUNING_TRACE = ("**Tuning trace.** Every candidate's tuning score (per method, the best over its other parameters at "
                "each value), the choice (star; a circle marks the choice within the paper's range when the "
                "beyond-the-paper search chose otherwise) and, dotted, a bound the paper stated. A choice on a grid "
                "edge extends the grid until it is interior unless the paper stated that edge "
                "(`dpcompanion.experiments.protocols.tuning`).")
#: what a page says where it shows the paper-scale result in place of the full-mode one
PAPER_SHOWN = ("This is the paper-scale result (`paper` mode: the paper's own sizes), shown instead of the "
               "full-mode result.")


def paper_progress_note(experiment_id: str, root: Path | None = None) -> str:
    """One line while a paper-scale sweep is partial: units done, whether committed, the CPU time left and
    the command that continues it. '' when there is no paper config, a fresh paper result, or no unit."""
    if "paper" not in base.get(experiment_id).configs or store.fresh_paper(experiment_id, root) is not None:
        return ""
    part = store.sweep_progress(experiment_id, "paper", root)
    if part is None:
        return ""
    done, total = part["units_done"], part["units_total"]
    committed = store.committed_units(experiment_id, "paper", root)
    if committed is None:
        tag = ""
    elif committed >= done:
        tag = " (committed)"
    else:
        tag = f" ({committed} of them committed)"
    old = (f", {part['units_old_code']} stored by older code (recomputed)" if part["units_old_code"] else "")
    when = store.estimate_phrase(part, hours=True)
    return (f"paper-scale run in progress: {done} of {total} units done{tag}{old}, {when}; continue with "
            f"`python -m dpcompanion experiment {experiment_id} --mode paper`")


def full_absent_note(experiment_id: str) -> str:
    """Why no fresh full result is shown (none stored, or stale and why), with the command that computes it."""
    full = store.load(experiment_id, mode="full")
    why = ("No full-mode result is stored yet" if full is None
           else f"The stored full-mode result is stale ({full.stale_reason}) and is not shown")
    part = store.sweep_progress(experiment_id, "full")
    if part is not None:
        why += (f"; a full sweep is partly done ({part['units_done']}/{part['units_total']} units stored"
                + (", " if part["estimate_left_s"] is not None else "; ") + store.estimate_phrase(part)
                + ") and is not shown until it is complete")
    return f"{why}: `python -m dpcompanion experiment {experiment_id} --mode full` computes it."


def _md(text: str) -> None:
    plotting.say(text)  # into the open fold, if any


def data_link(stem: str, text: str, *, label: str = "CSV") -> str:
    """Write ``text`` (CSV) as ``figures/<page>/<page>-<stem>.csv`` beside the executed notebooks and return
    the Sphinx ``download`` role linking it (the page in the name: two pages' files never collide); outside a
    book build write nothing and return ''."""
    prov = plotting.current_provenance()
    book_dir = os.environ.get(plotting.BOOK_DIR_ENV)
    if prov is None or not book_dir:
        return ""
    name = f"{prov.notebook}-{stem}.csv"
    path = Path(book_dir) / plotting.FIGURES_DIR / prov.notebook / name
    path.parent.mkdir(parents=True, exist_ok=True)
    outputs.write_text(path, text, name=stem)
    return f"{{download}}`{label} <{plotting.FIGURES_DIR}/{prov.notebook}/{name}>`"


def forest_block(rows: list, *, title: str, head: str = "") -> None:
    """The forest plot of verdict rows under ``head``, with a sentence saying how many it draws; nothing
    where no row has an estimate."""
    if not forest.rows_with_estimates(rows):
        return
    if head:
        _md(head)
    forest.forest_plot(rows=rows, title=title)
    _md("<small>" + forest.left_out_sentence(rows) + " Each row of the plot's data file names its page, item, "
        "verdict, the result it was judged on and its raw numbers.</small>")


def _words(v) -> str:
    """A scale value in words: integers with thousands separators, lists as ranges."""
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() and abs(v) >= 1000 else f"{v:g}"
    if isinstance(v, (list, tuple)):
        vals = [_words(x) for x in v]
        return vals[0] if len(set(vals)) == 1 else f"{vals[0]} to {vals[-1]}" if len(vals) > 3 else ", ".join(vals)
    if isinstance(v, dict):
        return ""
    return str(v)


def setup_words(scale: dict) -> str:
    """The setup of a row in words from its scale table (:func:`~dpcompanion.experiments.scale_tables.scale_of`):
    ours, then the paper's values where they differ.

    >>> setup_words({"training samples": {"paper": 50000, "ours": 2000, "match": False},
    ...              "model / data": {"paper": "CNN, CIFAR-10", "ours": "fashion-mnist", "match": False},
    ...              "epochs": {"paper": 60, "ours": 60, "match": True}})
    'training samples 2,000, model / data fashion-mnist, epochs 60; the paper: training samples 50,000, model / data CNN, CIFAR-10'
    >>> setup_words({"repeats": {"paper": 100, "ours": 100, "match": True}})
    "repeats 100; the paper's where it prints a size"
    """
    ours = [f"{k} {_words(d.get('ours'))}" for k, d in scale.items() if _words(d.get("ours")) not in ("", "None")]
    paper = [f"{k} {_words(d.get('paper'))}" for k, d in scale.items()
             if d.get("match") is False and _words(d.get("paper")) not in ("", "None")]
    return ", ".join(ours) + ("; the paper: " + ", ".join(paper) if paper else "; the paper's where it prints a size")


def headline_rows(rows: list[dict], rule_ids: list[str]) -> list[dict]:
    """The rows a page leads with: those of its ``.../table`` rules, else of its first rule with rows, then
    every failing row of its other rules (not our own checks); judged rows first, at most :data:`LEAD_ROWS`.

    >>> rows = [{"rule": "x/gap", "outcome": "partial"}, {"rule": "x/table", "outcome": "failure"}]
    >>> [r["rule"] for r in headline_rows(rows, ["x/gap", "x/table"])], headline_rows(rows[:1], ["x/gap"])[0]["rule"]
    (['x/table'], 'x/gap')
    """
    have = [rid for rid in rule_ids if any(r.get("rule") == rid for r in rows)]
    pick = [rid for rid in have if rid.endswith("/table")] or have[:1]
    mine = [r for r in rows if r.get("rule") in pick]
    # a claim of the paper that fails on this page leads too, whatever its rule (a failure is the news)
    mine += [r for r in rows if r.get("rule") in have and r.get("rule") not in pick and r.get("outcome") == "failure"
             and r.get("scope") != "own code"]
    return sorted(mine, key=lambda r: r.get("outcome") == "not judged")[:LEAD_ROWS]


def _interval(o: dict) -> str:
    est, lo, hi = (o.get(k) for k in ("estimate", "ci_low", "ci_high"))
    if est is None:
        return o.get("text") or "-"
    if lo is None or hi is None or lo == hi:
        return f"{est:.3g}"
    return f"{est:+.3g} (95% CI {lo:+.3g} to {hi:+.3g})"


def lead_markdown(rows: list[dict]) -> str:
    """The block an experiment page leads with, one entry per headline row: the claim, the paper's value,
    ours with its interval, the setup (:func:`setup_words`) with the row's scale word (its ``scope``), the
    outcome and the row's sentence.

    >>> r = {"item": "a gap", "paper": "+0.68", "ours": {"estimate": 0.17, "ci_low": 0.01, "ci_high": 0.33},
    ...      "verdict": "sign only", "outcome": "partial", "sentence": "Ours is ahead, smaller.",
    ...      "scale": {"epochs": {"paper": 60, "ours": 60, "match": True}}, "setup": "another", "scope": "other data"}
    >>> print(lead_markdown([r]))
    **The outcome.**
    <BLANKLINE>
    - **a gap**: the paper +0.68; ours +0.17 (95% CI +0.01 to +0.33); setup: epochs 60; the paper's where it prints a size (other data); **sign only**. Ours is ahead, smaller.
    """
    if not rows:
        return ""
    out = ["**The outcome.**", ""]
    items = []
    for r in rows:
        scale = r.get("scale") or {}
        scope = r.get("scope") or reproduction_report.scope_of(r)  # the captions' scale word
        setup = f"setup: {setup_words(scale)} ({scope})" if scale else f"setup: {scope}"
        item = re.sub(r"([*_])", r"\\\1", str(r["item"]))  # f* and theta_{T+1} stay as written
        items.append(f"- **{item}**: the paper {report.short_cell(str(r.get('paper', '')))}; "
                     f"ours {_interval(r.get('ours') or {})}; {setup}; **{r['verdict']}**. "
                     f"{r.get('sentence') or ''}".rstrip())
    out += items[:2]
    if len(items) > 2:  # the rest folded: the page stays within its height (every page at most 12,000 px)
        from dpcompanion.book.claims_page import folded

        out += [""] + folded(f"The other headline rows ({len(items) - 2})", items[2:])
    return "\n".join(out)


def result_line(result: store.StoredResult) -> str:
    """One line of provenance under a stored result a page shows (mode, device, time, counts, commit, freshness)."""
    p = result.provenance
    if result.damaged:
        return f"{result.mode} result: damaged ({result.damaged}), not shown"
    count = lambda n: "?" if n is None else f"{int(n):,}"  # noqa: E731  (a result stored before a count was recorded)
    dirty = "+dirty" if p.get("dirty") else ""
    reval = p.get("revalidated") or []
    rv = f", revalidated {reval[-1]['date']}" if reval else ""
    summed = result.over_sittings_s
    sittings = "" if summed is None else f" in its last sitting, {summed:,.0f} s of unit time in all"
    return (f"{result.mode} result: computed on {p.get('device')} in {p.get('wall_s', 0):.0f} s{sittings} "
            f"({count(p.get('runs'))} runs, {count(p.get('run_steps'))} run-steps, {p.get('units')} units, "
            f"executor {p.get('executor')}) "
            f"at commit {p.get('commit')}{dirty}, created {p.get('created')}{rv}; "
            f"{'fresh' if result.fresh else 'stale: ' + result.stale_reason}")


class ExperimentPage:
    """An experiment page: its ``result``, the declared ``experiment`` and one method per block.

    ``figure(payload)`` draws the page's figures; ``full_figure(payload)`` those of the stored full-mode
    (or paper-scale) result (default: ``figure``). ``shown``: ``"this build"`` (``store.load_or_compute``)
    or ``"full when fresh"`` (``store.result_to_show``)."""

    SHOWN = ("this build", "full when fresh")

    def __init__(self, experiment_id: str, *, mode: str, seed: int = 0, device: str = "cpu",
                 figure: Callable[[dict], Any] | None = None, full_figure: Callable[[dict], Any] | None = None,
                 shown: str = "this build"):
        if shown not in self.SHOWN:
            raise ValueError(f"shown must be one of {', '.join(self.SHOWN)}, got {shown!r}")
        self.id, self.mode, self.seed, self.device = experiment_id, mode, seed, device
        self.experiment = base.get(experiment_id)
        load = store.load_or_compute if shown == "this build" else store.result_to_show
        self.result = load(experiment_id, mode=mode, seed=seed, device=device)
        self.figure, self.full_figure = figure, full_figure or figure

    @property
    def payload(self) -> dict:
        return self.result.payload

    def sizes(self, payload: dict | None = None, *, suffix: str = "") -> None:
        """The sizes paragraph (the experiment's ``describe``), then ``suffix``."""
        if self.experiment.describe is None:
            raise ValueError(f"experiment {self.id} declares no describe (its sizes paragraph)")
        _md(self.experiment.describe(self.payload if payload is None else payload) + suffix)

    def figures(self, result: store.StoredResult | None = None) -> None:
        """The page's figures of ``result`` (default: this page's), captioned from it."""
        if self.figure is None:
            return
        result = self.result if result is None else result
        with self.drawing(result):
            self.figure(result.payload)

    def drawing(self, result: store.StoredResult):
        """The context a figure of ``result`` is drawn in (:func:`dpcompanion.book.plotting.drawn_from`)."""
        return plotting.drawn_from(result)

    def verdicts(self, payload: Any = None, *, head: str = "", fold: bool = False) -> None:
        """The paper-vs-ours table of ``verdict_rows`` (of this page's payload or ``payload``) under ``head``;
        folded when no row is comparable with the paper (sizes differ), or when ``fold``."""
        if self.experiment.verdict_rows is None:
            raise ValueError(f"experiment {self.id} declares no verdict_rows")
        rows = self.experiment.verdict_rows(self.payload if payload is None else payload)
        rows = as_judged(rows, self.report_rows())
        table = report.paper_vs_ours(rows)
        if rows and all(r.get("cap") == "sizes differ" for r in rows):
            table = report.folded(f"This run's {len(rows)} rows: not comparable with the paper (its sizes differ)", table)
        elif fold:
            table = report.folded(f"This run's {len(rows)} rows", table)
        _md(f"{head}\n\n{table}" if head else table)

    def paper_note(self) -> None:
        """:func:`paper_progress_note`, where there is one."""
        note = paper_progress_note(self.id)
        if note:
            _md(note)

    def fresh_full(self) -> store.StoredResult | None:
        """The stored full-mode result when fresh (None in full mode or when none is fresh)."""
        return store.fresh_full(self.id) if self.mode != "full" else None

    def fresh_paper(self) -> store.StoredResult | None:
        """The stored paper-mode result (the paper's own sizes) when complete and fresh, else None."""
        return store.fresh_paper(self.id)

    def absent_note(self) -> str:
        """Why no full-mode result is shown, with the command that computes it."""
        return full_absent_note(self.id)

    def tuning(self, result: store.StoredResult | None = None, *, ylabel: str, max_cells: int | None = None) -> None:
        """The tuning summary of ``result`` (default: this build's; every record in a CSV, :func:`data_link`)
        and its tuning trace, under :data:`TUNING_TRACE`."""
        result = self.result if result is None else result
        entries = result.payload["tuning"]
        stem = "tuning" if result is self.result else f"tuning-{result.mode}"
        _md(TUNING_TRACE + "\n\n" + report.tuning_table(entries, link=data_link(stem, report.tuning_csv_text(entries))))
        kw = {} if max_cells is None else {"max_cells": max_cells}
        # folded: a trace is a tall grid (a panel per setting), and the table above says what it chose
        with plotting.folded("The tuning trace as a figure (every candidate's score)"), self.drawing(result):
            library_figures.tuning_trace(entries=entries, ylabel=ylabel, **kw)

    def shown_first(self) -> store.StoredResult | None:
        """The fresh stored result larger than this page's result that the page shows first: the paper-scale
        one, else (below full mode) the full-mode one; None where none is fresh or this page's result is
        already the largest (a ``"full when fresh"`` page that holds the full result is not shown twice)."""
        above = store.SHOWN_FIRST[:store.SHOWN_FIRST.index(self.result.mode)]
        return store.best_fresh(self.id, modes=above) if above else None

    def fold_title(self, first: store.StoredResult) -> str:
        """The title of the fold that holds this page's own (smaller) run below ``first``."""
        larger = "paper-scale" if first.mode == "paper" else f"{first.mode}-mode"
        return f"This build's {self.result.mode}-mode run, smaller than the {larger} result above (not judged)"

    def run_block(self, result: store.StoredResult, *, figure: Callable[[dict], Any] | None,
                  tables: Callable[[dict], Any] | None = None, verdicts: bool = True,
                  tuning_ylabel: str = "") -> None:
        """One result's blocks: sizes (with its provenance line when it is not this build's), figures,
        ``tables(payload)``, the paper-vs-ours table and the tuning trace (where ``tuning_ylabel``)."""
        mine = result is self.result
        said = f" {PAPER_SHOWN}" if result.mode == "paper" and not mine else ""
        self.sizes(result.payload, suffix="" if mine else f"{said} <small>{result_line(result)}</small>")
        if figure is not None:
            with self.drawing(result):
                figure(result.payload)
        if tables is not None:
            tables(result.payload)
        if verdicts:
            self.verdicts(result.payload)
        if tuning_ylabel and result.payload.get("tuning"):
            self.tuning(result, ylabel=tuning_ylabel)

    def judged_result(self, rows: list) -> store.StoredResult | None:
        """The fresh stored result the report judged ``rows`` on; None where none is stored fresh."""
        mode = ((rows[0].get("result") or {}).get("mode")) if rows else None
        return store.best_fresh(self.id, modes=(mode,), seed=self.seed) if mode in store.SHOWN_FIRST else None

    def report_rows(self) -> list[dict]:
        """This page's rows of the reproduction report (``verdicts --page <id>``), computed once."""
        if getattr(self, "_report_rows", None) is None:
            self._report_rows = reproduction_report.report_rows(pages=[self.id], compute=True, seed=self.seed,
                                                                device=self.device)
        return self._report_rows

    def lead(self) -> None:
        """The outcome first (:func:`lead_markdown`); nothing for an experiment without rules."""
        ids = [r.id for r in (self.experiment.rules or ())]
        if ids:
            text = lead_markdown(headline_rows(self.report_rows(), ids))
            if text:
                _md(text)

    def reproduction(self) -> None:
        """The forest plot of this page's verdict rows, then power, scale and tuning of the result judged."""
        rows = self.report_rows()
        judged = self.judged_result(rows)
        if judged is not None:
            with self.drawing(judged):
                forest_block(rows, title=f"{self.id}: every verdict row",
                             head="**Forest plot.** Each verdict row of this page: " + forest.READING)
        tuning = (rows[0].get("tuning") or []) if rows else []
        link = data_link("tuning-judged", report.tuning_csv_text(tuning)) if tuning else ""
        _md(report.reproduction_tables(self.id, seed=self.seed, device=self.device, rows=rows, tuning_link=link))


def as_judged(rows: list[dict], judged: list[dict]) -> list[dict]:
    """A page table's ``rows`` with the verdict the report gives the same row (same item, same measured
    text, same rule: the same computation) after the setup and scale of its result are applied, so that a page's
    table and its lead, forest plot and the verdicts page say one word; a row the report does not
    judge keeps its own.

    >>> as_judged([{"item": "a", "ours": "1", "verdict": "reproduced", "rule": "x/y"}],
    ...           [{"item": "a", "ours": {"text": "1"}, "verdict": "in part", "note": "n", "rule": "x/y"}])[0]["verdict"]
    'in part'
    """
    by = {(str(r["item"]), str((r.get("ours") or {}).get("text", ""))): r for r in judged}
    out = []
    for r in rows:
        j = by.get((str(r["item"]), str(r["ours"])))
        out.append(r if j is None or j["verdict"] == r["verdict"] or not r.get("rule") or j.get("rule") != r["rule"] else
                   {**r, "verdict": j["verdict"], "note": f"{reproduction_report.outcome_words(j)}; {r.get('note', '')}"})
    return out


def show_experiment(experiment_id: str, *, mode: str, seed: int = 0, device: str = "cpu",
                    figure: Callable[[dict], Any] | None = None, full_figure: Callable[[dict], Any] | None = None,
                    tables: Callable[[dict], Any] | None = None, verdicts: bool = True,
                    tuning_ylabel: str = "", absent_note: str = "", shown: str = "this build") -> ExperimentPage:
    """Load (or compute) the result and show the outcome, then the largest fresh result first
    (:meth:`ExperimentPage.shown_first`: sizes, ``full_figure``, ``tables``, the paper-vs-ours table and
    the tuning trace) with this build's run folded below it; where none is larger, this build's run
    (``figure``), preceded in quick mode by why no larger one is shown (:func:`full_absent_note` and
    ``absent_note``). Returns the :class:`ExperimentPage` for the other blocks (:meth:`~ExperimentPage.reproduction`)."""
    page = ExperimentPage(experiment_id, mode=mode, seed=seed, device=device, figure=figure,
                          full_figure=full_figure, shown=shown)
    page.lead()
    page.paper_note()
    first = page.shown_first()
    blocks = dict(tables=tables, verdicts=verdicts, tuning_ylabel=tuning_ylabel)
    if first is None:
        if page.result.mode == "quick":  # nothing larger is fresh: say why (not where the full result is shown)
            _md(full_absent_note(experiment_id) + absent_note)
        page.run_block(page.result, figure=page.figure, **blocks)
        return page
    page.run_block(first, figure=page.full_figure, **blocks)
    with plotting.folded(page.fold_title(first)):
        page.run_block(page.result, figure=page.figure, **{**blocks, "verdicts": False})  # judged: the run above
    return page


def verdict_tables_by_page(rows: list[dict], table_rows: list[dict]) -> str:
    """The verdicts page's paper-vs-ours tables, one folded table per page with its verdict counts.
    ``table_rows``: ``rows`` (the report's) rendered for :func:`~dpcompanion.book.report.paper_vs_ours`."""
    from collections import Counter

    from dpcompanion.book.claims_page import folded

    if len(rows) != len(table_rows):
        raise ValueError(f"{len(rows)} report rows but {len(table_rows)} table rows")
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(r["page"], []).append(i)
    out = []
    for page, idx in groups.items():
        counts = Counter(rows[i]["verdict"] for i in idx)
        said = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        out += folded(f"{page}: {len(idx)} row{'s' if len(idx) != 1 else ''} ({said})",
                      [report.paper_vs_ours([table_rows[i] for i in idx])]) + [""]
    return "\n".join(out)
