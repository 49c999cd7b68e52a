"""Claim check results as MyST Markdown for the book, and a per-process cache of runs.

A theory page puts ``show_claims("H-T4.4")`` under the theorem it checks; the cell's
output is one MyST block per claim (id, status badge, method, source, statement,
evidence, link to the correction). The book renders code-cell Markdown as MyST
(``nb_render_markdown_format: myst``) and is built with ``-W``: the blocks use only
standard directives (``admonition``) and roles (``ref``), and a label target is emitted
only by :func:`show_claims` (``labels=True``), once per claim id per process.

>>> r = [{"id": "X-1", "status": "proved", "method": "sympy", "source": "H Eq. 1",
...       "statement": "$a=a$", "evidence": {"residual": "0"}}]
>>> status_counts(r)["proved"]
1
>>> "PROVED" in claims_markdown(r)
True
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Sequence

from dpcompanion.claims.registry import REGISTRY, STATUSES, run_checks

#: badge text and admonition class per status (classes every Sphinx theme styles).
BADGES = {
    "proved": ("✔ PROVED", "tip"),
    "verified": ("✔ VERIFIED", "tip"),
    "refuted": ("✘ REFUTED", "error"),
    "illustrated": ("~ ILLUSTRATED", "note"),
    "open": ("? OPEN", "warning"),
    "error": ("! CHECK ERRORED", "warning"),
}

#: evidence keys whose values are prose (rendered as text, not as code).
PROSE_KEYS = ("impact", "note", "holds_instead", "explanation", "which_variance", "summary")
#: evidence keys shown first, in this order (the rest follow alphabetically).
ORDER = (
    "residual",
    "domain",
    "samples",
    "worst_margin",
    "counterexample",
    "printed",
    "actual",
    "fitted_exponent",
    "printed_order",
)
_SKIP = ("traceback",)
_MAXLEN = 400

_CACHE: dict[str | None, tuple[dict[str, Any], ...]] = {}
_LABELLED: set[str] = set()


def cached_results(prefix: str | None = None) -> list[dict[str, Any]]:
    """Results of the checks whose id starts with ``prefix``, each check run at most once
    per process: a run for a shorter prefix (or for all, ``None``) is reused.

    >>> cached_results("NO-SUCH-ID")
    []
    """
    for p, res in _CACHE.items():
        if p is None or (prefix is not None and prefix.startswith(p)):
            return [r for r in res if prefix is None or r["id"].startswith(prefix)]
    res = tuple(run_checks(prefix))
    _CACHE[prefix] = res
    return list(res)


def clear_cache() -> None:
    """Forget cached runs (tests)."""
    _CACHE.clear()
    _LABELLED.clear()


def status_counts(results: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Number of results per status (every status listed, ``error`` last).

    >>> status_counts([{"status": "verified"}, {"status": "refuted"}])
    {'proved': 0, 'verified': 1, 'refuted': 1, 'illustrated': 0, 'open': 0, 'error': 0}
    """
    counts = {s: 0 for s in (*STATUSES, "error")}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts


def label(claim_id: str) -> str:
    """The Sphinx label of a claim's block: ``claim-`` + the id in lower case, with every
    run of other characters replaced by ``-``.

    >>> label("H-T4.4.T-opt")
    'claim-h-t4-4-t-opt'
    """
    return "claim-" + re.sub(r"[^a-z0-9]+", "-", claim_id.lower()).strip("-")


def _round(v: Any, digits: int = 4) -> Any:
    """Floats inside nested dicts/lists rounded to ``digits`` significant digits (display only)."""
    if isinstance(v, float):
        return float(f"{v:.{digits}g}")
    if isinstance(v, dict):
        return {k: _round(x, digits) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_round(x, digits) for x in v]
    return v


def _code(v: Any) -> str:
    """A value as inline code, safe for MyST (no backticks inside, length-capped).

    >>> _code({"a": 0.123456789, "b": [1.0e-9, 2]})
    '`{"a": 0.1235, "b": [1e-09, 2]}`'
    """
    if isinstance(v, float):
        s = f"{v:.6g}"
    elif isinstance(v, (dict, list)):
        s = json.dumps(_round(v), default=str, ensure_ascii=False)
    else:
        s = str(v)
    s = " ".join(s.split()).replace("`", "'")
    if len(s) > _MAXLEN:
        s = s[: _MAXLEN - 3] + "..."
    return f"`` {s} ``" if s.startswith("'") or s.endswith("'") else f"`{s}`"


def _prose(v: Any) -> str:
    return " ".join(str(v).split())


def evidence_lines(evidence: dict[str, Any]) -> list[str]:
    """Bullet lines for an evidence dict: numbers and formulas as code, prose as text.

    >>> evidence_lines({"residual": "0", "note": "a *note*"})
    ['- **residual**: `0`', '- **note**: a *note*']
    """
    keys = [k for k in ORDER if k in evidence]
    keys += sorted(k for k in evidence if k not in ORDER and k not in _SKIP)
    out = []
    for k in keys:
        v = evidence[k]
        name = k.replace("_", " ")
        if k in PROSE_KEYS:
            out.append(f"- **{name}**: {_prose(v)}")
        elif isinstance(v, dict) and v and len(v) <= 12 and (k in ("counterexample", "printed", "actual") or all(
                isinstance(x, (int, float, str)) for x in v.values())):
            inner = ", ".join(f"{kk} = {_code(vv)}" for kk, vv in v.items())
            out.append(f"- **{name}**: {inner}")
        else:
            out.append(f"- **{name}**: {_code(v)}")
    return out


def claim_block(r: dict[str, Any], *, labels: bool = False, linkable: Sequence[str] = ()) -> str:
    """One claim result as a MyST admonition. With ``labels`` a target ``(claim-...)=``
    precedes it; links to the correction / corrected entry use ``{ref}`` only when that
    entry's id is in ``linkable`` (so every reference resolves), plain text otherwise."""
    badge, cls = BADGES.get(r["status"], (r["status"].upper(), "note"))
    lines = []
    if labels:
        lines += [f"({label(r['id'])})=", ""]
    lines += [f":::{{admonition}} {r['id']}: {badge}", f":class: {cls}", ""]
    lines.append(f"**{badge}** · method: *{r.get('method', '?')}* · source: {_prose(r.get('source', ''))}")
    vers = r.get("versions")
    if vers:
        lines[-1] += " · versions: " + ", ".join(str(v) for v in vers)
    lines += ["", f"**Statement.** {r.get('statement', '')}", ""]
    ev = r.get("evidence") or {}
    if r["status"] == "error":
        lines.append(f"**The check raised** {_code(ev.get('exception', '?'))}")
    else:
        lines.append("**Evidence.**")
        lines.append("")
        lines += evidence_lines(ev)
    for key, text in (("corrected_by", "Corrected statement"), ("corrects", "Corrects")):
        other = r.get(key)
        if other:
            ref = f"{{ref}}`{other} <{label(other)}>`" if other in linkable else f"**{other}**"
            lines += ["", f"**{text}:** {ref}"]
    lines += [":::", ""]
    return "\n".join(lines)


def claims_markdown(results: Iterable[dict[str, Any]], *, labels: bool = False) -> str:
    """All results as MyST, one admonition per claim, followed by a count line."""
    results = list(results)
    ids = [r["id"] for r in results] if labels else []
    blocks = [claim_block(r, labels=labels, linkable=ids) for r in results]
    counts = status_counts(results)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return "\n".join(blocks) + f"\n*{len(results)} checked claims: {summary}.*\n"


def show_claims(prefix: str, *, results: list[dict[str, Any]] | None = None, labels: bool = True):
    """Display (IPython) the check results of every claim whose id starts with ``prefix``,
    running the checks once per process (:func:`cached_results`) unless ``results`` is given.
    Raises ``ValueError`` if no claim matches (a page must not silently show nothing)."""
    from IPython.display import Markdown, display

    res = cached_results(prefix) if results is None else [r for r in results if r["id"].startswith(prefix)]
    order = {cid: i for i, cid in enumerate(REGISTRY)}  # the order the module states them in
    res = sorted(res, key=lambda r: (order.get(r["id"], len(order)), r["id"]))
    if not res:
        raise ValueError(f"no registered claim id starts with {prefix!r}")
    if labels:  # a label may be emitted once per process (one page = one process)
        fresh = [r for r in res if r["id"] not in _LABELLED]
        _LABELLED.update(r["id"] for r in fresh)
        md = "\n".join(
            claim_block(r, labels=r in fresh, linkable=[x["id"] for x in res]) for r in res
        )
        counts = status_counts(res)
        md += "\n*" + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + ".*\n"
    else:
        md = claims_markdown(res)
    display(Markdown(md))


#: where each claim id prefix is shown with its label (the theory pages of the book);
#: used by :func:`errata_markdown` to link back (only to pages that emit the labels).
PAGES = {
    "H-L3.1": "h-theory-3", "H-C3": "h-theory-3", "H-C4": "h-theory-3",
    "H-T4.1.": "h-theory-4-1", "H-T4.2": "h-theory-4-1", "H-L4.3": "h-theory-4-1", "H-E26": "h-theory-4-1",
    "H-T4.4": "h-theory-4-1", "H-S4.1.3": "h-theory-4-1", "H-Slides.uniform": "h-theory-4-1",
    "H-Slides.dynamic": "h-theory-4-1", "H-T4.8": "h-theory-4-3", "H-T4.10": "h-theory-4-4",
    "H-T4.11": "h-theory-4-4", "H-T4.12": "h-theory-4-4", "H-Tab": "h-tables",
}


def page_of(claim_id: str) -> str | None:
    """The theory page (notebook id) that shows ``claim_id`` with its label, if one of ours.

    >>> page_of("H-T4.4.T-opt"), page_of("W-T4.1")
    ('h-theory-4-1', None)
    """
    for p, page in PAGES.items():
        if claim_id.startswith(p):
            return page
    return None


def errata_markdown(results: Iterable[dict[str, Any]], *, link: bool = True) -> str:
    """The errata page body: one section per refuted claim (what is printed, what holds
    instead, the evidence, whether conclusions are affected), each with its correction's
    status. Links (``{ref}`` to the claim's label) only for claims shown on a page of
    :data:`PAGES`; the others are named in bold."""
    results = list(results)
    by_id = {r["id"]: r for r in results}
    refuted_ = [r for r in results if r["status"] == "refuted"]
    out = []

    def name(cid: str) -> str:
        return f"{{ref}}`{cid} <{label(cid)}>`" if (link and page_of(cid)) else f"**{cid}**"

    for r in refuted_:
        ev = dict(r.get("evidence") or {})
        out.append(f"### {r['id']}")
        out.append("")
        vers = ", ".join(r.get("versions") or [])
        out.append(f"*{_prose(r.get('source', ''))}* (versions: {vers}) · claim {name(r['id'])} · method *{r.get('method')}*")
        out.append("")
        out.append(f"**Printed.** {r.get('statement', '')}")
        out.append("")
        corr = r.get("corrected_by")
        if corr and corr in by_id:
            c = by_id[corr]
            badge = BADGES.get(c["status"], (c["status"], ""))[0]
            out.append(f"**What holds instead** ({name(corr)}, {badge}). {c.get('statement', '')}")
        elif "holds_instead" in ev:
            out.append(f"**What holds instead.** {_prose(ev['holds_instead'])}")
        else:
            out.append("**What holds instead.** No corrected statement is registered.")
        out.append("")
        impact = ev.pop("impact", None)
        ev.pop("holds_instead", None)
        out.append("**Evidence.**")
        out.append("")
        out += evidence_lines({k: v for k, v in ev.items() if k in ("counterexample", "printed", "actual", "explanation", "note")})
        out.append("")
        out.append(f"**Are the paper's conclusions affected?** {_prose(impact) if impact else 'Not assessed in the registry entry.'}")
        out.append("")
    return "\n".join(out)
