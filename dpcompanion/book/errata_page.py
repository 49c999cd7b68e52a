"""The errata page: every claim the registry refutes or cannot reproduce, most severe first (a summary
table, then one folded box each), and the printed numbers we do not reproduce with their closest reading.
"""

from __future__ import annotations

from typing import Any, Iterable

from dpcompanion.book.claims_page import (BADGES, cell_text, first_sentence, prose, evidence_lines, evidence_summary, folded, label,
                                          page_of, version_names)
from dpcompanion.claims.registry import ERRATA, SEVERITIES, SEVERITY_DEFINITIONS

__all__ = ["errata_entries", "errata_summary_markdown", "errata_markdown", "severity_definitions_markdown",
           "readings_markdown", "readings_block"]


def _severity_rank(r: dict[str, Any]) -> int:
    sev = r.get("severity")
    return SEVERITIES.index(sev) if sev in SEVERITIES else len(SEVERITIES)


def severity_definitions_markdown() -> str:
    """The severity scale of the errata, most severe first, as a table."""
    out = ["| severity | meaning |", "| --- | --- |"]
    out += [f"| *{s}* | {SEVERITY_DEFINITIONS[s]} |" for s in SEVERITIES]
    return "\n".join(out) + "\n"


def errata_entries(results: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every refuted and not-reproduced claim, most severe first (unclassified last), then by id."""
    rows = [r for r in results if r["status"] in ERRATA]
    return sorted(rows, key=lambda r: (_severity_rank(r), r["id"]))


def built_on(cid: str, results: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The results whose run lists ``cid`` among the refuted claims they rest on (``rests_on_refuted``).

    >>> [r["id"] for r in built_on("A", [{"id": "B", "status": "verified", "rests_on_refuted": ["A"]},
    ...                                  {"id": "C", "status": "proved", "rests_on_refuted": []}])]
    ['B']
    """
    return [r for r in results if cid in (r.get("rests_on_refuted") or [])]


def _name(cid: str, link: bool) -> str:
    return f"{{ref}}`{cid} <{label(cid)}>`" if (link and page_of(cid)) else f"**{cid}**"


def errata_summary_markdown(results: Iterable[dict[str, Any]], *, link: bool = True) -> str:
    """The table that opens the errata page (:func:`errata_entries`, each linked to its claim)."""
    rows = errata_entries(results)
    out = ["| severity | claim | source | in one sentence |", "| --- | --- | --- | --- |"]
    for r in rows:
        sev = r.get("severity") or "not classified"  # a test keeps every entry classified
        what = first_sentence(r.get("impact") or (r.get("evidence") or {}).get("impact") or r.get("statement"))
        out.append(f"| {sev} | {_name(r['id'], link)} | {cell_text(r.get('source', ''))} | {what.replace('|', chr(92) + '|')} |")
    return "\n".join(out) + "\n"


def errata_markdown(results: Iterable[dict[str, Any]], *, link: bool = True) -> str:
    """The errata page body: one folded box per entry (printed, what holds instead, evidence, impact); a
    claim a page shows is linked, the others named in bold."""
    results = list(results)
    by_id = {r["id"]: r for r in results}
    shown = errata_entries(results)
    out = []
    for r in shown:
        ev = dict(r.get("evidence") or {})
        vers = version_names(r.get("versions") or [])
        badge, cls = BADGES.get(r["status"], (r["status"].upper(), "note"))
        sev = r.get("severity") or "not classified"
        page = page_of(r["id"])
        where = f" · evidence on {{doc}}`{page}`" if (link and page) else ""
        out += [f"(errata-{label(r['id'])})=", "", f"::::{{admonition}} {r['id']} · {badge} · {sev}",
                f":class: dropdown {cls} erratum", ""]
        out.append(f"*{prose(r.get('source', ''))}* (versions: {vers}) · claim {_name(r['id'], link)} · method "
                   f"*{r.get('method')}*{where}")
        out.append("")
        out.append(f"**Printed.** {r.get('statement', '')}")
        out.append("")
        corr = r.get("corrected_by")
        if corr and corr in by_id:
            c = by_id[corr]
            badge = BADGES.get(c["status"], (c["status"], ""))[0]
            out.append(f"**What holds instead** ({_name(corr, link)}, {badge}). {c.get('statement', '')}")
        elif "holds_instead" in ev:
            out.append(f"**What holds instead.** {prose(ev['holds_instead'])}")
        else:
            out.append("**What holds instead.** No corrected statement is registered.")
        out.append("")
        impact = r.get("impact") or ev.get("impact")
        shown_ev = {k: v for k, v in ev.items()
                    if k in ("counterexample", "comparison", "printed", "actual", "explanation", "note", "missing")}
        out.append(f"**Evidence.** {evidence_summary(shown_ev)}")
        out.append("")
        out += folded("The evidence in full", evidence_lines(shown_ev))
        out.append("")
        out.append(f"**Are the paper's conclusions affected?** {prose(impact) if impact else 'Not assessed in the registry entry.'}")
        users = built_on(r["id"], results)
        if users:
            out += ["", "**Checked results that build on it** (their checks pass; their boxes say they rest on this "
                    "entry): " + ", ".join(f"{_name(u['id'], link)} ({u['status']})" for u in users) + "."]
        out += ["::::", ""]
    return "\n".join(out)


def readings_markdown(rows: Iterable[dict[str, Any]]) -> str:
    """The table of printed numbers we do not reproduce: every ``failure`` row with a closest ``reading``
    (:mod:`dpcompanion.experiments.comparisons.readings`), its value, deviation and whether it reproduces.

    >>> print(readings_markdown([{"verdict": "not reproduced", "outcome": "failure", "page": "p", "item": "x", "paper": "1", "ours": {"text": "2"},
    ...     "reading": {"name": "r", "value": 1.0, "deviation": 0.0, "reproduces": True}}]).splitlines()[2])
    | p | x | 1 | r | 1 (0) | reproduced under this reading |
    """
    out = ["| page | item | printed | closest reading | its value (deviation) | |",
           "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        rd = r.get("reading")
        if r.get("outcome") != "failure" or not rd:
            continue
        said = "reproduced under this reading" if rd["reproduces"] else "no natural reading reproduces it"
        out.append(f"| {cell_text(r['page'])} | {cell_text(r['item'])} | {cell_text(r['paper'])} | {cell_text(rd['name'])} | "
                   f"{rd['value']:.6g} ({rd['deviation']:.3g}) | {said} |")
    return "\n".join(out) + "\n"


def readings_block(rows: Iterable[dict[str, Any]]) -> str:
    """The errata's readings section: one sentence, then :func:`readings_markdown` folded."""
    from dpcompanion.book.report import folded
    from dpcompanion.experiments.comparisons.wu_rules import W_EPS_TRIED

    rows = list(rows)
    n = sum(1 for r in rows if r.get("outcome") == "failure" and r.get("reading"))
    return (f"{n} printed numbers are not reproduced by ours; for each, the natural readings of the stated protocol were "
            "searched and the closest is named with its deviation.\n\n"
            + folded(f"The closest reading of each ({n})", readings_markdown(rows)
                     + f"\nW-EPS's readings: {W_EPS_TRIED}. The constants footnote 3 leaves open (the accountant's "
                       "data size, the noise multiplier) are fitted to the quoted values on {doc}`w-theory`.") + "\n")
