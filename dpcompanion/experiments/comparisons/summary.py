"""One table of every experiment's verdicts for the landing page, rendered from the reproduction report
(:mod:`.reproduction`): :func:`verdict_summary` for ``report.paper_vs_ours``, :func:`write_reproduction_csv`
for the CSV the landing page links (:func:`reproduction_download_md`). Nothing here computes a verdict."""

from __future__ import annotations

from pathlib import Path

from dpcompanion.core.provenance import REPO
from dpcompanion.experiments.comparisons import reproduction
from dpcompanion.experiments.comparisons.reproduction import CLAIM_TABLES, experiments_with_verdicts

__all__ = ["experiments_with_verdicts", "verdict_summary", "CLAIM_TABLES", "CSV_NAME", "reproduction_rows",
           "verdict_counts", "write_reproduction_csv", "reproduction_download_md", "note_with_details"]


#: the reproduction report's CSV, written by the book build (the verdicts page) next to the
#: executed pages in ``book/``; the landing and verdicts pages link it with MyST's ``{download}`` role
CSV_NAME = "reproduction-report.csv"


def reproduction_rows(*, seed: int = 0, device: str = "cpu", ids=None, compute: bool = True) -> list[dict]:
    """The rows of the reproduction report
    (:func:`dpcompanion.experiments.comparisons.reproduction.report_rows`), the one source of
    the landing page's summary and of its CSV. ``compute=True`` (the book build) computes the
    quick result of a page with no fresh stored one; the ``verdicts`` command does not."""
    return reproduction.report_rows(pages=ids, compute=compute, seed=seed, device=device)


def verdict_summary(*, mode: str = "quick", seed: int = 0, device: str = "cpu", ids=None, rows=None) -> list[dict]:
    """Rows ``item, paper, ours, verdict, outcome, note`` (for ``report.paper_vs_ours``) rendered from the
    reproduction report (:func:`reproduction_rows`, or ``rows`` when given), each item prefixed
    with its page (a link) and the result it was judged on (full, quick, or computed for the
    theory tables); ``ours`` carries the 95% interval where there is one. ``ids`` defaults to
    :func:`experiments_with_verdicts` and then :data:`CLAIM_TABLES`. ``mode`` is kept for
    callers: the report always judges the fresh full result when there is one, else quick."""
    if rows is None:
        rows = reproduction_rows(seed=seed, device=device, ids=ids)
    out = []
    for r in rows:
        page = CLAIM_TABLES[r["page"]][0] if r["page"] in CLAIM_TABLES else r["page"]
        o = r["ours"]
        ours = o["text"]
        if o.get("ci_low") is not None and o.get("ci_high") is not None and o["ci_low"] != o["ci_high"]:
            ours += (f" ({reproduction.ci_name(r)} [{o['ci_low']:.3g}, {o['ci_high']:.3g}]"
                     + (f", n = {o['n']}" if o.get("n") else "") + ")")
        mode_r = r["result"]["mode"] or "no result"
        out.append({"item": f"{{doc}}`{r['page']} <{page}>` ({mode_r}): {r['item']}", "paper": r["paper"],
                    "ours": ours, "verdict": r["verdict"], "outcome": r["outcome"], "note": note_with_details(r)})
    return out


def note_with_details(row: dict) -> str:
    """A row's note column: its sentence for the reader, then how the rule
    judged it (the rule's own note: intervals, tolerances, caps) folded in a details block, on
    one line so that it stays inside its table cell. A row without a sentence keeps its note.

    >>> note_with_details({"sentence": "Exp is ahead.", "note": "ours 1, 95% CI [0.5, 1.5]"})
    'Exp is ahead. <details><summary>how it was judged</summary>ours 1, 95% CI [0.5, 1.5]</details>'
    """
    note = " ".join(str(row.get("note", "")).split())
    if not row.get("sentence"):
        return note
    return row["sentence"] + (f" <details><summary>how it was judged</summary>{note}</details>" if note else "")


def verdict_counts(rows) -> dict[str, int]:
    """Verdict word -> rows, of reproduction-report rows."""
    return reproduction.counts(rows)


def write_reproduction_csv(rows, path=None):
    """Write the reproduction report's rows as CSV (default ``book/`` +
    :data:`CSV_NAME`, where the landing page's download link points); returns the path."""
    return reproduction.write_csv(rows, Path(path) if path is not None else Path(REPO) / "book" / CSV_NAME)


def reproduction_download_md(label: str = "the reproduction report (CSV)") -> str:
    """The MyST link to the CSV for a page in ``book/``."""
    return f"{{download}}`{label} <{CSV_NAME}>`"
