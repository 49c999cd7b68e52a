"""The claims on the book's pages as MyST Markdown (the registry is :mod:`dpcompanion.claims`): claim boxes,
theorem boxes, and a per-process cache of check runs. The book is built with ``-W``: the blocks use only
standard directives and roles, and a claim's label target (:func:`label`) is emitted once per process
(:func:`show_claims`). :func:`page_of` finds the page showing a claim from the notebooks themselves.

>>> r = [{"id": "X-1", "status": "proved", "method": "sympy", "source": "H Eq. 1",
...       "statement": "$a=a$", "evidence": {"residual": "0"}}]
>>> status_counts(r)["proved"]
1
>>> "PROVED" in claims_markdown(r)
True
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from dpcompanion import __version__
from dpcompanion.claims.registry import (ERRATA, PASSING, REGISTRY, STATUS_DEFINITIONS, STATUSES, THEOREMS,
                                         load_all, run_claim)

#: badge text and admonition class per status (classes every Sphinx theme styles).
BADGES = {
    "proved": ("✔ PROVED", "tip"),
    "checked": ("✔ CHECKED AT FIXED T", "tip"),
    "verified": ("✔ VERIFIED", "tip"),
    "refuted": ("✘ REFUTED", "error"),
    "identity": ("= IDENTITY", "note"),
    "not-reproduced": ("≠ NOT REPRODUCED", "warning"),
    "illustrated": ("~ ILLUSTRATED", "note"),
    "open": ("? OPEN", "warning"),
    "error": ("! CHECK ERRORED", "warning"),
}

#: evidence keys whose values are prose (rendered as text, not as code).
PROSE_KEYS = ("impact", "note", "holds_instead", "explanation", "which_variance", "summary", "construction", "missing",
              "domain", "comparison", "note_convex", "method_note")
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
_SKIP = ("traceback", "derivation")  # the derivation is shown as numbered steps (derivation_lines)
_MAXLEN = 400

_RUN: dict[str, dict[str, Any]] = {}  # claim id -> its result, each check run at most once per process
_LABELLED: set[str] = set()


#: each registry ``versions`` code as a reader names it
VERSION_NAMES = {"000": "the ICLR submission", "001": "FAccT", "002": "Wu et al.", "003": "the slides",
                 "004": "FAccT (HTML text)"}


def version_names(codes) -> str:
    """The versions a statement appears in, by name.

    >>> version_names(["000", "001"])
    'the ICLR submission, FAccT'
    """
    return ", ".join(VERSION_NAMES.get(str(c), str(c)) for c in codes)


def cached_results(prefix: str | None = None) -> list[dict[str, Any]]:
    """Results of the checks whose id starts with ``prefix``, each run at most once per process.

    >>> cached_results("NO-SUCH-ID")
    []
    """
    reg = load_all()
    ids = [cid for cid in sorted(reg) if prefix is None or cid.startswith(prefix)]
    for cid in ids:
        if cid not in _RUN:
            _RUN[cid] = run_claim(reg[cid])
    return [_RUN[cid] for cid in ids]


def status_counts(results: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Number of results per status (every status listed, ``error`` last).

    >>> c = status_counts([{"status": "verified"}, {"status": "refuted"}])
    >>> c["verified"], c["refuted"], c["identity"], list(c)[-1]
    (1, 1, 0, 'error')
    """
    counts = {s: 0 for s in (*STATUSES, "error")}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts


def label(claim_id: str) -> str:
    """The Sphinx label of a claim's block.

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


def prose(v: Any) -> str:
    return tex_ascii(" ".join(str(v).split()))


_GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "kappa", "lambda", "mu",
          "nu", "xi", "rho", "sigma", "tau", "phi", "chi", "psi", "omega", "Delta", "Sigma", "Gamma", "Lambda")
_GREEK_RE = re.compile(r"(?<![A-Za-z\\])(" + "|".join(sorted(_GREEK, key=len, reverse=True)) + r")(?![A-Za-z])")
_FUNCS_RE = re.compile(r"(?<![A-Za-z\\])(sum|prod|ln|log|exp|min|max|lim)(?=[_(^]|$)")
#: text a claim box must not show outside math (tests: ASCII math left untypeset)
ASCII_MATH = re.compile(r"sqrt\(|(?<![A-Za-z])(?:sigma|gamma|beta|alpha|kappa|rho|eta|delta|epsilon)(?:_\w+)?\^|\^\(|\w\^-?\w")
_SEGMENT = re.compile(r"(\$\$.+?\$\$|\$[^$]+\$|`[^`]*`|\{[a-z:-]+\}`[^`]*`|\[[^\]]*\]\([^)]*\)|https?://\S+)")
_IDENT = re.compile(r"^[HWX]-|[A-Za-z]{2,}_[A-Za-z]{3,}|\.[a-z]{3,}|\w/\w+/|\.py$")


def _balanced(tok: str, start: int) -> int:
    """Index of the parenthesis closing the one at ``tok[start]``, or -1."""
    depth = 0
    for i in range(start, len(tok)):
        depth += {"(": 1, ")": -1}.get(tok[i], 0)
        if depth == 0:
            return i
    return -1


def _tex(tok: str) -> str:
    """One ASCII math word as TeX: sqrt(x) -> \\sqrt{x}, x^(a+b) -> x^{a+b}, x^-2 -> x^{-2},
    sigma -> \\sigma, sum_t -> \\sum_{t}, <= -> \\le."""
    out, i = [], 0
    while i < len(tok):
        if tok.startswith("sqrt(", i) and (j := _balanced(tok, i + 4)) > 0:
            out.append(r"\sqrt{" + _tex(tok[i + 5:j]) + "}")
            i = j + 1
        elif tok.startswith(("^(", "_("), i) and (j := _balanced(tok, i + 1)) > 0:
            out.append(tok[i] + "{" + _tex(tok[i + 2:j]) + "}")
            i = j + 1
        else:
            out.append(tok[i])
            i += 1
    t = "".join(out)
    t = re.sub(r"([\^_])(-?[A-Za-z0-9.]*[A-Za-z0-9])", lambda m: f"{m.group(1)}{{{m.group(2)}}}", t)
    t = _GREEK_RE.sub(lambda m: "\\" + ("varepsilon" if m.group(1) == "epsilon" else m.group(1)), t)
    t = _FUNCS_RE.sub(lambda m: "\\" + m.group(1), t)
    return t.replace("<=", r"\le ").replace(">=", r"\ge ").replace("*", r"\cdot ")


def tex_ascii(text: str) -> str:
    r"""Typeset the ASCII math words of a claim's prose (a power, a square root, or a Greek letter with a
    subscript) as inline MathJax; existing math, code, roles, links and identifiers are left alone.

    >>> print(tex_ascii("noise sigma_t^2 = T/R, and sqrt(gamma^(t+1)) (see H-T4.4.sigma, `sqrt(x)`)."))
    noise $\sigma_{t}^{2}$ = T/R, and $\sqrt{\gamma^{t+1}}$ (see H-T4.4.sigma, `sqrt(x)`).
    >>> print(tex_ascii(r"already $\sigma^2$; kappa = 3"))
    already $\sigma^2$; kappa = 3
    """
    parts = _SEGMENT.split(text)
    for k in range(0, len(parts), 2):  # the even parts are plain text
        words = _group_parentheses(re.split(r"(\s+)", parts[k]))
        for w, word in enumerate(words):
            if not word.strip():
                continue
            m = re.match(r"^([(\[\"']*)(.*?)([.,;:!?\"')\]]*)$", word)
            lead, core, trail = m.groups()
            while trail.startswith(")") and core.count("(") > core.count(")"):
                core, trail = core + ")", trail[1:]
            if not core or _IDENT.search(core) and not ("sqrt(" in core or "^" in core):
                continue
            if "^" in core or "sqrt(" in core or (_GREEK_RE.search(core) and re.search(r"[A-Za-z]_[A-Za-z0-9{(]", core)):
                words[w] = f"{lead}${_tex(core)}${trail}"
        joined, prev = "".join(words), None
        while joined != prev:  # merge span by span: each merge may meet the next span
            prev, joined = joined, _MATH_GAP.sub(_join_spans, joined, count=1)
        parts[k] = joined
    return "".join(parts)


#: two inline math spans separated only by spaces and operators (``$a$ - $b$``, ``$a$ >= $b$``,
#: ``$n^2$ $m^2$``): one formula, typeset as one span
_MATH_GAP = re.compile(r"\$([^$]+)\$ +((?:(?:[-+=<>/*]|<=|>=|sum_\w+) +)*)\$([^$]+)\$")


def _join_spans(m: re.Match) -> str:
    op = _tex(m.group(2).strip())
    return f"${m.group(1)} {op + ' ' if op else ''}{m.group(3)}$"


def _group_parentheses(words: list[str]) -> list[str]:
    """The words and spaces of ``re.split(r"(\\s+)", text)`` with a math word's parenthesis that closes a
    few words later (at most 8) joined into one word, so that its formula becomes one math span."""
    out, i = [], 0
    while i < len(words):
        w = words[i]
        core = w.lstrip("([\"'")
        if core.count("(") > core.count(")") and ("^" in core or "sqrt(" in core or "_" in core):
            j, group = i, w
            while group.count("(") > group.count(")") and j + 2 < len(words) and j - i < 16:
                j += 2
                group += words[j - 1] + words[j]
            if group.count("(") <= group.count(")"):
                out.append(group)
                i = j + 1
                continue
        out.append(w)
        i += 1
    return out


#: units of the evidence quantities that have one
UNITS = {
    "seconds": "s", "samples": "points", "epsilon": "ε of (ε, δ)-DP", "delta": "δ of (ε, δ)-DP", "rho": "ρ of ρ-zCDP",
    "R": "budget $\\sum_t\\sigma_t^{-2}$", "T": "steps", "N": "samples", "n": "batch size", "kappa": "M/μ", "alpha": "Eq. (6)",
    "worst_margin": "margin (see domain)", "tolerance": "margin (see domain)",
}
_ROWS = 8  # rows shown of a list-of-records table
_COLS = 8  # columns shown of it


def _num(v: float) -> str:
    """A float for a table: 4 significant digits, no "-0".

    >>> _num(-0.0), _num(1.23456e-7), _num(2.0)
    ('0', '1.235e-07', '2')
    """
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    return f"{v:.4g}"


def _text(v: Any) -> str:
    """One value as plain text (records as 'key = value', never JSON)."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _num(v)
    if isinstance(v, dict):
        return "; ".join(f"{k} = {_text(x)}" for k, x in list(v.items())[:12]) + ("; …" if len(v) > 12 else "")
    if isinstance(v, (list, tuple)):
        return ", ".join(_text(x) for x in v[:12]) + (", …" if len(v) > 12 else "")
    return " ".join(str(v).split())


def cell_text(v: Any) -> str:
    r"""One value as the text of a Markdown table cell (:func:`_text`, pipes escaped, capped).

    >>> cell_text({"a": 0.5, "b": [1, 2.0], "c": "x|y"})
    'a = 0.5; b = 1, 2; c = x\\|y'
    """
    out = _text(v)
    if len(out) > _MAXLEN:  # cut before typesetting, and never inside a formula
        out = out[: _MAXLEN - 1]
        if out.count("$") % 2:
            out = out[: out.rindex("$")]
        out += "…"
    return tex_ascii(out).replace("|", "\\|")


def _records_table(rows: list[dict[str, Any]]) -> list[str]:
    """A list of records as a small Markdown table (first rows and columns; the rest counted)."""
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    shown = cols[:_COLS]
    # headers are record keys: their underscores read as spaces (and let a long key wrap)
    out = ["| " + " | ".join(cell_text(c).replace("_", " ") or "·" for c in shown) + " |", "|" + " --- |" * len(shown)]
    for r in rows[:_ROWS]:
        out.append("| " + " | ".join(cell_text(r.get(c, "")) for c in shown) + " |")
    more = []
    if len(rows) > _ROWS:
        more.append(f"{len(rows) - _ROWS} more rows")
    if len(cols) > _COLS:
        more.append("columns not shown: " + ", ".join(cols[_COLS:]))
    if more:
        out += ["", f"*({'; '.join(more)}; the full record is in `checks --json`.)*"]
    return out


def _is_records(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def _is_table_of_records(v: Any) -> bool:
    return isinstance(v, dict) and len(v) >= 2 and all(isinstance(x, dict) for x in v.values())


def _verdict(status: str, evidence: dict[str, Any]) -> str | None:
    """The sentence saying what the numbers mean (VERIFIED: the worst margin against the tolerance)."""
    if status == "verified" and "worst_margin" in evidence:
        m = float(evidence["worst_margin"])
        tol = float(evidence.get("tolerance") or 0.0)
        s = (f"Holds at all {evidence.get('samples', '?')} points: the worst margin is {_num(m)} against the stated "
             f"tolerance {_num(tol)} (a point passes when its margin is at least minus the tolerance)")
        if m < 0:
            s += "; the negative worst margin is floating-point rounding at a point where the claim holds with equality"
        return s + "."
    if status == "proved":
        return "SymPy reduces the residual (claim minus derivation) to exactly 0, for every admissible value."
    if status == "checked" and evidence.get("T_checked"):
        return (f"SymPy reduces the residual (claim minus derivation) to exactly 0 at T = "
                f"{t_values(evidence['T_checked'])} (the values this check ran); other values of T are not shown.")
    return None


def t_values(Ts: Iterable[int]) -> str:
    """The values of T a check ran, runs of consecutive values as ranges.

    >>> t_values([1, 2, 3, 4, 5]), t_values([4]), t_values([1, 2, 5, 7, 8])
    ('1, ..., 5', '4', '1, 2, 5, 7, 8')
    """
    Ts = sorted(int(t) for t in Ts)
    if len(Ts) >= 3 and Ts == list(range(Ts[0], Ts[-1] + 1)):
        return f"{Ts[0]}, ..., {Ts[-1]}"
    return ", ".join(str(t) for t in Ts)


def evidence_lines(evidence: dict[str, Any], *, status: str | None = None) -> list[str]:
    """The evidence as Markdown: a table of quantities with units, records as small tables, prose keys
    as sentences.

    >>> print("\\n".join(evidence_lines({"residual": "0", "note": "a *note*"})))
    | quantity | value | unit |
    | --- | --- | --- |
    | residual | 0 |  |
    <BLANKLINE>
    **note**: a *note*
    """
    keys = [k for k in ORDER if k in evidence]
    keys += sorted(k for k in evidence if k not in ORDER and k not in _SKIP)
    scalars, texts, tables = [], [], []
    for k in keys:
        v = evidence[k]
        name = k.replace("_", " ")
        if k in PROSE_KEYS and isinstance(v, str):
            texts.append(f"**{name}**: {prose(v)}")
        elif _is_records(v):
            tables.append((name, v))
        elif _is_table_of_records(v):
            tables.append((name, [{"": kk, **x} for kk, x in v.items()]))
        elif isinstance(v, dict) and any(_is_records(x) for x in v.values()):
            for kk, x in v.items():
                if _is_records(x):
                    tables.append((f"{name}: {kk}", x))
                else:
                    scalars.append((f"{name}: {kk}", x, ""))
        else:
            scalars.append((name, v, UNITS.get(k, "")))
    out = []
    if scalars:
        out += ["| quantity | value | unit |", "| --- | --- | --- |"]
        out += [f"| {cell_text(n)} | {cell_text(v)} | {u} |" for n, v, u in scalars]
    for n, rows in tables:
        out += ["", f"*{n}*", ""] + _records_table(rows)
    verdict = _verdict(status, evidence) if status else None
    if verdict:
        out += ["", verdict]
    for p in texts:
        out += ["", p]
    return out


#: prose keys whose first sentence can stand for the evidence, in order of preference
_SUMMARY_KEYS = ("summary", "explanation", "comparison", "holds_instead", "note", "missing")
_SUMMARY_LEN = 240


def evidence_summary(evidence: dict[str, Any], *, status: str | None = None) -> str:
    """The evidence in one line: the verdict sentence (:func:`_verdict`), else the first sentence of the
    first of :data:`_SUMMARY_KEYS`, else the first quantity (capped, never cut inside a formula).

    >>> evidence_summary({"residual": "0"}, status="proved")
    'SymPy reduces the residual (claim minus derivation) to exactly 0, for every admissible value.'
    >>> evidence_summary({"counterexample": {"a": 2, "b": 1}, "note": "Fails at a = 2. More."})
    'Fails at a = 2.'
    >>> evidence_summary({"counterexample": {"a": 2, "b": 1}})
    'counterexample: a = 2; b = 1.'
    """
    verdict = _verdict(status, evidence) if status else None
    if verdict:
        return verdict
    for k in _SUMMARY_KEYS:
        if isinstance(evidence.get(k), str) and evidence[k].strip():
            return first_sentence(evidence[k], limit=_SUMMARY_LEN)
    keys = [k for k in ORDER if k in evidence] + sorted(k for k in evidence if k not in ORDER and k not in _SKIP)
    for k in keys:
        if k in PROSE_KEYS or _is_records(evidence[k]) or _is_table_of_records(evidence[k]):
            continue
        text = _text(evidence[k])
        if len(text) > _SUMMARY_LEN:  # cut at a space, never inside a word or a formula
            text = text[: _SUMMARY_LEN - 1].rsplit(" ", 1)[0].rstrip(" ;,=")
            if text.count("$") % 2:
                text = text[: text.rindex("$")]
            text += "…"
        return f"{k.replace('_', ' ')}: {tex_ascii(text)}" + ("" if text.endswith(("…", ".")) else ".")
    return "see the tables below." if evidence else "none recorded."


#: the class of a block shown online only: the PDF handout leaves it out (:mod:`dpcompanion.book.pdf`)
ONLINE_ONLY = "dpc-online-only"


def folded(title: str, lines: list[str], *, cls: str = "") -> list[str]:
    """``lines`` folded under ``title`` (:func:`dpcompanion.book.report.folded`, a three-colon fence that
    nests inside a claim's four-colon admonition); [] when ``lines`` are blank.

    >>> print("\\n".join(folded("More", ["| a |", "| --- |"])))
    :::{admonition} More
    :class: dropdown
    <BLANKLINE>
    | a |
    | --- |
    :::
    """
    if not any(line.strip() for line in lines):
        return []
    from dpcompanion.book.report import folded as fold  # the book's one folded block

    return fold(title, "\n".join(lines), cls=cls).split("\n")


def derivation_lines(steps: Sequence[dict[str, str]], claim_id: str) -> list[str]:
    r"""A check's derivation (:class:`dpcompanion.claims.registry.Derivation` steps) as numbered steps, each
    equation after what justifies it, and its LaTeX in a block to copy (online only). A step is cited by its
    claim and number ("H-T4.1.step, step 2") and linked by its anchor; its equation carries no page-wide
    number, which a reader would take for the paper's (the prose cites "Eq. (27)" of the paper).

    >>> print("\n".join(derivation_lines([{"lhs": "a", "rel": "<=", "rhs": "b", "why": "by Eq. (7)"}], "X-1")[:6]))
    **Derivation of X-1**, step by step (each side is an expression the check computed with SymPy):
    <BLANKLINE>
    (claim-x-1-step-1)=
    *Step 1*, by Eq. (7):
    <BLANKLINE>
    $$a \le b$$
    """
    if not steps:
        return []
    from dpcompanion.claims.registry import Derivation

    out = [f"**Derivation of {claim_id}**, step by step (each side is an expression the check computed with SymPy):",
           ""]
    tex = []
    for i, st in enumerate(steps, 1):
        eq = f"{st['lhs']} {Derivation.RELATIONS[st['rel']]} {st['rhs']}"
        out += [f"({label(claim_id)}-step-{i})=", f"*Step {i}*, {st['why']}:", "", f"$${eq}$$", ""]
        tex.append(f"% {claim_id}, step {i}: {st['why']}\n{eq}")
    return out + folded("The derivation in LaTeX", ["```latex", "\n\n".join(tex), "```"], cls=ONLINE_ONLY)


def cite_bibtex(claim_id: str, *, status: str = "") -> str:
    """A BibTeX entry citing one check of the book (its claim id and the book's version).

    >>> print(cite_bibtex("H-T4.4.T-opt", status="refuted").splitlines()[0])
    @misc{dpcompanion-H-T4.4.T-opt,
    """
    v = __version__
    return "\n".join([
        f"@misc{{dpcompanion-{claim_id},",
        "  author  = {{The dpcompanion contributors}},",
        f"  title   = {{dpcompanion check {claim_id}" + (f" ({status})" if status else "") + "},",
        f"  note    = {{Claim {claim_id}, machine-checked by dpcompanion version {v}, anchor {label(claim_id)}; "
        "companion to Hong et al. 2022 (arXiv 2101.07413) and Wu et al. 2021 (arXiv 2110.07435)},",
        f"  version = {{{v}}},",
        "  year    = {2026}",
        "}",
    ])


def claim_block(r: dict[str, Any], *, labels: bool = False, linkable: Sequence[str] = ()) -> str:
    """One claim result as a folded MyST admonition (classes ``dropdown``, the status's colour, ``claim``:
    :mod:`dpcompanion.book.pdf` prints it open) titled by its id, badge and statement. With ``labels`` a
    target precedes it; a correction is a ``{ref}`` only when its id is in ``linkable``.

    >>> print(claim_block({"id": "X-1", "status": "proved", "statement": "$a = b$.", "method": "sympy",
    ...                    "evidence": {"residual": 0}}).splitlines()[:3])
    ['::::{admonition} **X-1 · ✔ PROVED:** $a = b$.', ':class: dropdown tip claim', '']
    """
    badge, cls = BADGES.get(r["status"], (r["status"].upper(), "note"))
    if r["status"] == "checked" and (r.get("evidence") or {}).get("T_checked"):
        badge = f"✔ CHECKED AT T = {t_values(r['evidence']['T_checked'])}"
    lines = []
    if labels:
        lines += [f"({label(r['id'])})=", ""]
    badge += rests_on_badge(r)
    statement = " ".join(tex_ascii(str(r.get("statement", ""))).split())
    lines += [f"::::{{admonition}} **{r['id']} · {badge}:** {statement}", f":class: dropdown {cls} claim", ""]
    lines.append(f"**{badge}** · method: *{r.get('method', '?')}* · source: {prose(r.get('source', ''))}")
    vers = r.get("versions")
    if vers:
        lines[-1] += " · versions: " + version_names(vers)
    lines.append("")
    ev = dict(r.get("evidence") or {})
    lines += rests_on_lines(r, linkable)
    if r["status"] == "error":
        lines.append(f"**The check raised** {_code(ev.get('exception', '?'))}")
    else:
        if r.get("impact") and "impact" not in ev and r["status"] in ERRATA:
            ev["impact"] = r["impact"]
        lines.append(f"**Evidence.** {evidence_summary(ev, status=r['status'])}")
        lines += ["", *derivation_lines(ev.get("derivation") or [], r["id"])]
        full = evidence_lines(ev)  # the verdict sentence is the summary line above
        if r.get("mutant"):
            caught = {True: " Caught.", False: " NOT caught."}.get(r.get("mutant_caught"), "")
            full += ["", f"**Mutant** (a minimally false variant the same check must refute): {prose(r['mutant'])}.{caught}"]
        lines += ["", *folded("The evidence in full", full, cls=ONLINE_ONLY)]
    for key, text in (("corrected_by", "Corrected statement"), ("corrects", "Corrects")):
        other = r.get(key)
        if other:
            ref = f"{{ref}}`{other} <{label(other)}>`" if other in linkable else f"**{other}**"
            lines += ["", f"**{text}:** {ref}"]
    lines += ["", ":::{admonition} Cite this check", f":class: dropdown {ONLINE_ONLY}", "", "```bibtex",
              cite_bibtex(r["id"], status=r["status"]), "```", ":::"]
    lines += ["::::", ""]
    return "\n".join(lines)


def rests_on_badge(r: dict[str, Any]) -> str:
    """The qualifier a passing claim's badge carries when a claim it builds on is refuted ("" otherwise).

    >>> rests_on_badge({"status": "verified", "rests_on_refuted": ["H-T4.5.end-to-end"]})
    ', ON A REFUTED RESULT'
    >>> rests_on_badge({"status": "verified", "rests_on_refuted": []})
    ''
    """
    return ", ON A REFUTED RESULT" if r.get("rests_on_refuted") and r.get("status") != "refuted" else ""


def rests_on_lines(r: dict[str, Any], linkable: Sequence[str] = ()) -> list[str]:
    """The sentence naming each refuted claim this one builds on and the part of it used ([] when none).

    >>> print(rests_on_lines({"id": "X-2", "status": "verified", "rests_on_refuted": ["X-1"],
    ...                       "rests_on": [{"id": "X-1", "part": "its rate", "status": "refuted"}]})[0])
    **Rests on a refuted result.** The status above is this check's own; the result builds on X-1 (refuted; the part used: its rate), whose failure it does not repair.
    """
    bad = [d for d in r.get("rests_on") or [] if d["id"] in (r.get("rests_on_refuted") or [])]
    if not bad or r.get("status") == "refuted":
        return []

    def ref(cid: str) -> str:
        return f"{{ref}}`{cid} <{label(cid)}>`" if cid in linkable or page_of(cid) else cid

    parts = "; ".join(f"{ref(d['id'])} (refuted; the part used: {prose(d['part'])})" for d in bad)
    return [f"**Rests on a refuted result.** The status above is this check's own; the result builds on {parts}, "
            "whose failure it does not repair.", ""]


def claims_markdown(results: Iterable[dict[str, Any]], *, labels: bool = False) -> str:
    """All results as MyST, one admonition per claim, followed by a count line."""
    results = list(results)
    ids = [r["id"] for r in results] if labels else []
    blocks = [claim_block(r, labels=labels, linkable=ids) for r in results]
    counts = status_counts(results)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return "\n".join(blocks) + f"\n*{len(results)} checked claims: {summary}.*\n"


def show_claims(prefix: str, *, results: list[dict[str, Any]] | None = None, labels: bool = True):
    """Display the check results of every claim whose id starts with ``prefix`` (:func:`cached_results`
    unless ``results`` is given). Raises ``ValueError`` if no claim matches."""
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


_SEVERITY_ORDER = ("invalidates a privacy claim", "changes a conclusion", "missing hypothesis", "constant factor", "typo")


def erratum_line(theorem_id: str, results: Iterable[dict[str, Any]]) -> str:
    """The box's erratum: each refuted claim of the result (:func:`is_member`: its main claim and its parts),
    gravest first, with its severity and its corrected statement if the book has one; "" when none is refuted.

    >>> r = [{"id": "H-T9.a", "status": "refuted", "severity": "typo", "corrected_by": None},
    ...      {"id": "H-T9.b", "status": "proved"}, {"id": "H-T90.c", "status": "refuted"}]
    >>> erratum_line("H-T9", r)
    '**Erratum, from the checks on this page.** The checks refute 1 part of this result (statement, proof or remarks): H-T9.a (typo; no corrected statement).'
    >>> erratum_line("H-T9", r + [{"id": "H-T9", "status": "refuted", "severity": "missing hypothesis"}]).count("H-T9 (")
    1
    """
    bad = [r for r in results if is_member(r["id"], theorem_id) and r["status"] == "refuted"]
    if not bad:
        return ""
    rank = {s: i for i, s in enumerate(_SEVERITY_ORDER)}
    bad.sort(key=lambda r: (rank.get(r.get("severity") or "", len(rank)), r["id"]))

    def ref(cid: str) -> str:
        return f"{{ref}}`{cid} <{label(cid)}>`" if page_of(cid) else cid

    parts = []
    for r in bad:
        fix = r.get("corrected_by")
        parts.append(f"{ref(r['id'])} ({r.get('severity') or 'refuted'}; "
                     + (f"corrected: {ref(fix)})" if fix else "no corrected statement)"))
    n = len(bad)
    return (f"**Erratum, from the checks on this page.** The checks refute {n} part{'s' if n > 1 else ''} of this "
            f"result (statement, proof or remarks): " + ", ".join(parts) + ".")


def members(theorem_id: str) -> list[str]:
    """The claim-id prefixes of a declared result: itself, or each number of a range ("H-T4.11-12").

    >>> members("H-T4.11-12"), members("H-T4.4")
    (['H-T4.11', 'H-T4.12'], ['H-T4.4'])
    """
    m = re.fullmatch(r"(.*?)(\d+)-(\d+)", theorem_id)
    if m and int(m.group(3)) > int(m.group(2)):
        return [f"{m.group(1)}{k}" for k in range(int(m.group(2)), int(m.group(3)) + 1)]
    return [theorem_id]


def overall_word(theorem_id: str, results: Iterable[dict[str, Any]]) -> str:
    """A result's standing at a glance, from the statuses of its box's checks (:func:`is_member`): how many
    are refuted (or, none refuted, not reproduced) of how many, else whether all pass; "" without checks.

    >>> rs = [{"id": "H-T9", "status": "refuted"}, {"id": "H-T9.a", "status": "proved"}, {"id": "H-T90", "status": "refuted"}]
    >>> overall_word("H-T9", rs), overall_word("H-T9", rs[:1]), overall_word("H-T9", rs[1:]), overall_word("H-T8", rs)
    ('REFUTED IN PART: 1 of 2 checks', 'REFUTED: 1 of 1 check', 'ALL CHECKS PASS: 1 check', '')
    >>> overall_word("H-T9", [{"id": "H-T9.a", "status": "proved"}, {"id": "H-T9.b", "status": "illustrated"}])
    'NONE REFUTED: 1 proved, 1 illustrated'
    >>> overall_word("H-T9", [{"id": "H-T9", "status": "verified", "rests_on_refuted": ["H-T7"]}])
    'ALL CHECKS PASS: 1 check, resting on refuted H-T7'
    """
    own = [r for r in results if is_member(r["id"], theorem_id)]
    st = [r["status"] for r in own]
    n = len(st)
    if not n:
        return ""
    on = sorted({d for r in own for d in r.get("rests_on_refuted") or [] if not is_member(d, theorem_id)})
    rest = f", resting on refuted {', '.join(on)}" if on else ""
    checks = f"{n} check{'s' if n > 1 else ''}{rest}"
    for bad, word in (("refuted", "REFUTED"), ("not-reproduced", "NOT REPRODUCED")):
        k = st.count(bad)
        if k:
            return f"{word}{' IN PART' if k < n else ''}: {k} of {checks}"
    if all(s in PASSING or s == "identity" for s in st):
        return f"ALL CHECKS PASS: {checks}"
    return "NONE REFUTED: " + ", ".join(f"{st.count(s)} {s}" for s in STATUSES if s in st) + rest


def is_member(claim_id: str, theorem_id: str) -> bool:
    """Whether a claim belongs to a declared result's box: it is the result's main claim (id ``<member>``) or
    one of its parts (``<member>.*``), for each member of :func:`members`.

    >>> is_member("H-C6", "H-C6"), is_member("H-C6.U1", "H-C6"), is_member("H-C60", "H-C6"), is_member("H-T4.12.a", "H-T4.11-12")
    (True, True, False, True)
    """
    return any(claim_id == p or claim_id.startswith(p + ".") for p in members(theorem_id))


def theorem_markdown(theorem_id: str, *, results: Iterable[dict[str, Any]] | None = None) -> str:
    """The MyST box of a declared result (:data:`registry.THEOREMS`), after its index entries: headed as the
    paper numbers it (:func:`box_heading`), one anchor (its label) with a permalink, its proof sketch below,
    and the erratum of its refuted parts (:func:`erratum_line`; ``results`` default: the checks of the result).

    >>> print([ln for ln in theorem_markdown("H-T4.4", results=[]).splitlines() if ln.startswith(("```{", "(", ":::{"))])
    ['```{index} !single: Theorem 4.4', '```{index} !single: Thm 4.4', '(thm-4-4)=', ':::{admonition} Theorem 4.4 (Dynamic schedule) {ref}`¶ <thm-4-4>`']
    """
    load_all()
    if theorem_id not in THEOREMS:
        raise ValueError(f"no declared theorem {theorem_id!r}; declared: {', '.join(sorted(THEOREMS))}")
    t = THEOREMS[theorem_id]
    # main index entries ("!": "Theorem 4.5", "Thm 4.5"): Sphinx's search lists a page whose
    # main index entry matches the query first, so searching "Theorem 4.5" finds the page
    # stating it (a non-main entry would be listed after every full-text match)
    index = [line for k in index_terms(t.title) for line in (f"```{{index}} !single: {k}", "```", "")]
    sketch = ["", f"*Proof sketch.* {t.sketch}"] if t.sketch else []
    if results is None:
        results = [r for p in members(t.id) for r in cached_results(p) if is_member(r["id"], t.id)]
    results = list(results)
    erratum, word = erratum_line(t.id, results), overall_word(t.id, results)
    heading = box_heading(t.kind, t.title) + (f" \u2014 {word}" if word else "")
    return "\n".join([*index, f"({t.label})=", f":::{{admonition}} {heading} {{ref}}`¶ <{t.label}>`",
                      f":class: dpc-result dpc-{t.kind}", "", t.statement, *sketch, *(["", erratum] if erratum else []),
                      ":::", ""])


def box_heading(kind: str, title: str) -> str:
    """A result's heading as a textbook numbers it: kind and the paper's number, then its name.

    >>> box_heading("theorem", "Dynamic schedule (Thm 4.4)")
    'Theorem 4.4 (Dynamic schedule)'
    >>> box_heading("proposition", "ADP vs DP with an adaptive step size (W Prop. 5.2)")
    'Proposition 5.2 of Wu et al. (ADP vs DP with an adaptive step size)'
    >>> box_heading("proposition", "One Cauchy-Schwarz allocation")
    'Proposition of this book (One Cauchy-Schwarz allocation)'
    """
    m = re.fullmatch(r"(.*) \((W )?(?:Thm|Lemma|Prop\.|Remark) ([^)]*)\)", title)
    if not m:
        return f"{kind.capitalize()} of this book ({title})"
    name, wu, number = m.groups()
    return f"{kind.capitalize()} {number}" + (" of Wu et al." if wu else "") + f" ({name})"


_NUMBERED = re.compile(r"\((?:W )?(Thm|Lemma) ((?:[A-Z]\.)?\d+(?:\.\d+)*(?:, (?:[A-Z]\.)?\d+(?:\.\d+)*)*)\)")


def index_terms(title: str) -> list[str]:
    """The search keys of a declared result's title: its numbers spelled out and abbreviated.

    >>> index_terms("Stability and generalisation (Thm 4.11, 4.12)")
    ['Theorem 4.11', 'Thm 4.11', 'Theorem 4.12', 'Thm 4.12']
    >>> index_terms("zCDP to approximate DP (Lemma C.3)")
    ['Lemma C.3']
    """
    m = _NUMBERED.search(title)
    if not m:
        return []
    out = []
    for n in m.group(2).split(", "):
        out += [f"Theorem {n}", f"Thm {n}"] if m.group(1) == "Thm" else [f"Lemma {n}"]
    return out


def show_theorem(theorem_id: str) -> None:
    """Display (IPython) the box of a declared result; a page calls it above ``show_claims``."""
    from IPython.display import Markdown, display

    display(Markdown(theorem_markdown(theorem_id)))


def notebooks_dir() -> Path:
    """The repository's ``notebooks/`` folder (the pages of the book)."""
    return Path(__file__).resolve().parents[2] / "notebooks"


@functools.lru_cache(maxsize=1)
def pages() -> dict[str, str]:
    """``{claim id prefix: notebook id}`` of every ``show_claims("P")`` call in ``notebooks/*.ipynb``."""
    out: dict[str, str] = {}
    d = notebooks_dir()
    for nb in sorted(d.glob("*.ipynb")) if d.is_dir() else []:
        try:
            cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", [])
        except (OSError, ValueError):
            continue
        for c in cells:
            if c.get("cell_type") != "code":
                continue
            src = "".join(c.get("source", []))
            for m in re.finditer(r"""show_claims\(\s*["']([^"']+)["']""", src):
                out.setdefault(m.group(1), nb.stem)
    return out


def page_of(claim_id: str) -> str | None:
    """The notebook id whose ``show_claims`` prefix is the longest prefix of ``claim_id``; None if none.

    >>> page_of("H-T4.4.T-opt") is not None, page_of("NO-SUCH-ID")
    (True, None)
    """
    best = None
    for p, page in pages().items():
        if claim_id.startswith(p) and (best is None or len(p) > len(best[0])):
            best = (p, page)
    return best[1] if best else None


_ABBREV = ("Eq", "Eqs", "e.g", "i.e", "Sec", "Thm", "App", "Prop", "Fig", "Def", "cf", "vs", "resp", "al")


def first_sentence(text: Any, limit: int = 200) -> str:
    """The first sentence of a prose field (an abbreviation's period does not end it), capped at ``limit``.

    >>> first_sentence("From the surrogate (paper Eq. 23), not the bound. Later text.")
    'From the surrogate (paper Eq. 23), not the bound.'
    """
    t = prose(text or "")
    for m in re.finditer(r"\.(\s+)(?=[A-Z(])", t):
        word = re.search(r"([A-Za-z.]+)$", t[: m.start()])
        if word and word.group(1).rstrip(".") in _ABBREV:
            continue
        t = t[: m.start() + 1]
        break
    if len(t) <= limit:
        return t
    t = t[: limit - 1]
    if t.count("$") % 2:  # never cut inside a formula (MathJax left it raw)
        t = t[: t.rindex("$")].rstrip()
    return t + "…"


def status_definitions_markdown() -> str:
    """One line per status, as a table (the errata page shows it)."""
    out = ["| status | meaning |", "| --- | --- |"]
    for s in STATUSES:
        if s != "open":
            out.append(f"| {BADGES[s][0]} | {STATUS_DEFINITIONS[s]} |")
    return "\n".join(out) + "\n"
