"""The landing page's first screen: what the book found, counted from computed verdicts and
claim statuses (nothing typed)."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from dpcompanion.book.report import VERDICTS

__all__ = ["verdict_tally", "findings_markdown"]


def verdict_tally(rows: Iterable[dict[str, Any]]) -> str:
    """How many rows got each verdict, in the order of :data:`VERDICTS`.

    >>> verdict_tally([{"verdict": "agrees"}, {"verdict": "partly"}, {"verdict": "agrees"}])
    '2 agrees, 1 partly'
    """
    counts: dict[str, int] = {}
    for r in rows:
        if r["verdict"] not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {r['verdict']!r}")
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts.get(v)) or "no verdict"


def findings_markdown(experiments: Sequence[tuple[str, str, str, Sequence[dict[str, Any]]]],
                      claim_counts: dict[str, int], *, claims_page: str = "errata",
                      verdicts_page: str = "verdicts") -> str:
    """The landing page's "what this book found": one bullet per headline experiment
    ``(id, label, mode of the result shown, its verdict rows)`` with its verdict tally (each
    bullet short enough for one line of the first screen: the citation below must stay on it) and a
    link to its page, then the claim registry's count and its refuted ones (the full verdict table is linked from
    the page's opening sentence). Every number is counted
    here from computed verdicts and statuses; nothing is typed.

    >>> print(findings_markdown([("h-f-eff", "Data efficiency", "full", [{"verdict": "agrees"}])],
    ...                         {"proved": 2, "refuted": 1, "error": 0}))
    - **{doc}`Data efficiency <h-f-eff>`** (full mode): 1 agrees
    - **Theory**: 3 statements checked (1 refuted); see {doc}`the errata <errata>`
    >>> findings_markdown([("h-f-mom", "Momentum", "paper", [{"verdict": "disagrees"}])], {}).splitlines()[0]
    '- **{doc}`Momentum <h-f-mom>`** (paper scale): 1 disagrees'
    """
    out = [f"- **{{doc}}`{label} <{eid}>`** ({'paper scale' if mode == 'paper' else mode + ' mode'}): "
           f"{verdict_tally(rows)}" for eid, label, mode, rows in experiments]
    n = sum(claim_counts.values())  # one line: the count per status is on the errata page
    out.append(f"- **Theory**: {n} statements checked ({claim_counts.get('refuted', 0)} refuted); "
               f"see {{doc}}`the errata <{claims_page}>`")
    return "\n".join(out)
