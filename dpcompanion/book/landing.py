"""The landing page's first screen: what the book found, counted from computed verdicts and
claim statuses (nothing typed)."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Sequence

from dpcompanion.book.claims_page import notebooks_dir
from dpcompanion.experiments.comparisons import reproduction
from dpcompanion.experiments.comparisons.rule import OUTCOMES
from dpcompanion.claims.registry import REGISTRY, load_all

__all__ = ["verdict_tally", "findings_markdown", "page_titles", "id_glossary_markdown", "SCOPE_LABELS", "scope_counts_markdown",
           "title_claim_sentence"]

#: the first letter of every ID: which paper it belongs to
ID_PAPERS = {"H": "Hong, Wang & Zhou (FAccT 2022, its ICLR submission, slides)", "W": "Wu et al. (ADP-SGD)",
             "X": "both papers at once"}
#: the second part of a page's ID: what kind of page it is
PAGE_KINDS = {"F": "figures (the paper's experiments rerun, or its bounds drawn)", "T": "the paper's tables",
              "SEC": "a section's theorems, checked", "X": "our addition beyond the paper",
              "THEORY": "the paper's theory, checked", "LADDER": "a ladder of sizes", "UNIFY": "one rule for both papers"}
#: the result a claim ID names after its paper letter (H-T4.4.T-opt: Theorem 4.4, its part T-opt)
CLAIM_KINDS = {"T": "Theorem", "C": "Lemma C.n of the appendix", "L": "Lemma", "P": "Proposition", "R": "Remark",
               "E": "Equation", "S": "Section", "Tab": "Table", "Slides": "the authors' slides",
               "EPS": "the epsilon values of a footnote", "UNIFY": "the rule shared by both papers"}


def page_titles() -> list[tuple[str, str]]:
    """``(notebook id, title)`` of every page, from the first heading of ``notebooks/<id>.ipynb``."""
    out = []
    for nb in sorted(notebooks_dir().glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", [])
        src = "".join(cells[0].get("source", [])) if cells else ""
        m = re.match(r"#\s+(.+)", src.strip())
        out.append((nb.stem, m.group(1).strip() if m else nb.stem))
    return out


def id_glossary_markdown(pages: Sequence[tuple[str, str]] | None = None) -> str:
    """What the book's IDs mean: the scheme, then every page with an ID and its title. Raises
    ``ValueError`` for an ID part the scheme does not explain.

    One row per ID, listing every page that carries it (the page named by the ID first):

    >>> print(id_glossary_markdown([("h-f-eff", "Data efficiency (H-F-EFF)"), ("index", "Home")]).splitlines()[-1])
    | H-F-EFF | {doc}`Data efficiency <h-f-eff>` |
    >>> two = [("h-x-eer-breakdown", "Breaks (H-X-EER breakdown)"), ("h-x-eer", "How tight (H-X-EER)")]
    >>> print(id_glossary_markdown(two).splitlines()[-1])
    | H-X-EER | {doc}`How tight <h-x-eer>`; {doc}`Breaks <h-x-eer-breakdown>` |
    """
    pages = page_titles() if pages is None else pages
    by_id: dict[str, list[tuple[str, str]]] = {}  # ID -> [(notebook id, short title)], one row each
    used = set()
    for nb_id, title in pages:
        m = re.search(r"\(([^()]*)\)\s*$", title)  # a page's IDs close its title: "... (H-F-INFL, H-F-FIT)"
        ids = re.findall(r"\b[HWX]-[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*\b", m.group(1)) if m else []
        if not ids:
            continue  # a page without an ID (accounting, errata, ...)
        kinds = [re.match(r"([HWX])-([A-Z]+)", pid).groups() for pid in ids]  # W-T1245: W, T (tables 1, 2, 4, 5)
        for pid, (_, kind) in zip(ids, kinds):
            if kind not in PAGE_KINDS:
                raise ValueError(f"page id {pid!r}: {kind!r} is not explained in landing.PAGE_KINDS")
        short = title[: m.start()].strip()
        for pid in ids:
            by_id.setdefault(pid, []).append((nb_id, short))
        used.update(kind for _, kind in kinds)
    rows = []
    for pid in sorted(by_id):
        named = sorted(by_id[pid], key=lambda page: page[0] != pid.lower())  # its own page first, then the others
        rows.append(f"| {pid} | " + "; ".join(f"{{doc}}`{short} <{nb_id}>`" for nb_id, short in named) + " |")
    load_all()
    kinds = {}
    for cid in sorted(REGISTRY):
        m = re.match(r"^([HWX])-([A-Za-z]+)", cid)
        if not m or m.group(1) not in ID_PAPERS or m.group(2) not in CLAIM_KINDS:
            raise ValueError(f"claim id {cid!r}: its result kind is not explained in landing.CLAIM_KINDS")
        kinds.setdefault(m.group(2), cid)
    claims = "; ".join(f"`{k}` {CLAIM_KINDS[k]} (e.g. `{example}`)" for k, example in kinds.items())
    letters = ", ".join(f"`{k}` {v}" for k, v in ID_PAPERS.items())
    what = ", ".join(f"`{k}` {v}" for k, v in PAGE_KINDS.items() if k in used)
    return "\n".join([
        f"Every ID starts with the paper it belongs to: {letters}. A page's ID then says what the page holds: {what}. "
        f"A claim's ID names the result it checks, then a part after a dot: {claims}.",
        "",
        "| ID | page |",
        "| --- | --- |",
        *rows,
    ])


def verdict_tally(rows: Iterable[dict[str, Any]]) -> str:
    """How many rows got each outcome, in the order of :data:`~dpcompanion.experiments.comparisons.rule.OUTCOMES`.

    >>> verdict_tally([{"verdict": "reproduced", "outcome": "success"}, {"verdict": "sign only", "outcome": "partial"},
    ...                {"verdict": "reproduced", "outcome": "success"}])
    '2 success, 1 partial'
    """
    counts: dict[str, int] = {}
    for r in rows:  # the rules decided each row's verdict and outcome (comparisons.outcome)
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    return ", ".join(f"{counts[v]} {v}" for v in OUTCOMES if counts.get(v)) or "no verdict"


def findings_markdown(experiments: Sequence[tuple[str, str, str, Sequence[dict[str, Any]]]],
                      claim_counts: dict[str, int], *, claims_page: str = "errata",
                      verdicts_page: str = "verdicts") -> str:
    """The landing page's "what this book found": one one-line bullet per headline experiment ``(id, label,
    mode shown, verdict rows)`` with its tally, then the count of claims checked and refuted.

    >>> print(findings_markdown([("h-f-eff", "Data efficiency", "full", [{"verdict": "reproduced", "outcome": "success"}])],
    ...                         {"proved": 2, "refuted": 1, "error": 0}))
    - **{doc}`Data efficiency <h-f-eff>`** (full mode): 1 success
    - **Theory**: 3 statements checked (1 refuted); see {doc}`the errata <errata>`
    >>> findings_markdown([("h-f-mom", "Momentum", "paper", [{"verdict": "not reproduced", "outcome": "failure"}])], {}).splitlines()[0]
    '- **{doc}`Momentum <h-f-mom>`** (paper scale): 1 failure'
    """
    out = [f"- **{{doc}}`{label} <{eid}>`** ({'paper scale' if mode == 'paper' else mode + ' mode'}): "
           f"{verdict_tally(rows)}" for eid, label, mode, rows in experiments]
    n = sum(claim_counts.values())  # one line: the count per status is on the errata page
    out.append(f"- **Theory**: {n} statements checked ({claim_counts.get('refuted', 0)} refuted); "
               f"see {{doc}}`the errata <{claims_page}>`")
    return "\n".join(out)


#: the columns of the landing page's counts: a row's scope, in the captions' scale words
#: (:data:`dpcompanion.experiments.comparisons.reproduction.SCOPES`)
SCOPE_LABELS = {"paper scale": "paper scale", "reduced": "reduced (the paper's data, smaller)",
                "other setup": "other setup (a setting changed)", "other data": "other data",
                "no printed run": "no printed run (our experiment)", "own code": "checks of our own code"}


def scope_counts_markdown(rows: Iterable[dict[str, Any]]) -> str:
    """Rows counted by outcome (lines) and scope (columns, :data:`SCOPE_LABELS`), as a Markdown table.

    >>> print(scope_counts_markdown([{"outcome": "success", "rule": "a/b", "paper": "p", "result": {"mode": "computed"}},
    ...                              {"outcome": "failure", "rule": "a/b", "paper": "p", "result": {"mode": "full"},
    ...                               "scale": {"data": {"paper": "x", "ours": "y", "match": False}}}]))
    | outcome | paper scale | other data | all |
    | --- | --- | --- | --- |
    | success | 1 | 0 | 1 |
    | failure | 0 | 1 | 1 |
    """
    c = reproduction.outcome_counts(rows)
    cols = [k for k in SCOPE_LABELS if any(k in by for by in c.values())]
    out = ["| outcome | " + " | ".join(SCOPE_LABELS[k] for k in cols) + " | all |",
           "| --- | " + " | ".join("---" for _ in cols) + " | --- |"]
    for o, by in c.items():
        out.append(f"| {o} | " + " | ".join(str(by.get(k, 0)) for k in cols) + f" | {sum(by.values())} |")
    return "\n".join(out)


def _lean(row: dict) -> str:
    """Which way a trend row's estimate leans, with its interval, in words."""
    o = row["ours"]
    f = 100.0 if row["rule"].endswith("/acc") else 1.0
    unit = " points" if f == 100.0 else ""
    side = "toward the claim" if o["estimate"] > 0 else "against it"
    clear = (" (its interval excludes zero)" if o["ci_low"] > 0 or o["ci_high"] < 0 else
             " (its 95% CI crosses zero)")
    return (f"{f * o['estimate']:+.2g}{unit} per doubling of N (95% CI {f * o['ci_low']:+.2g} to "
            f"{f * o['ci_high']:+.2g}), leaning {side}{clear}")


def _at_n(rows: list[dict], rule: str) -> list[tuple[int, float]]:
    at = [(int(re.search(r"N = (\d+)", r["item"]).group(1)), r["ours"]["estimate"]) for r in rows
          if r.get("rule") == rule and r["ours"].get("estimate") is not None and re.search(r"N = (\d+)", r["item"])]
    return sorted(at)


#: the rows that answer Wu et al.'s main claim: each printed table's pooled gap (W-T1245, W-T36)
WU_TABLE_RULES = ("w-t1245/table", "w-t36/table")


def _cells_run(r: dict) -> int | None:
    """How many cells a table row pooled: the ``N`` of its "k of N cells ahead" (None where it says none)."""
    m = re.search(r"\b\d+ of (\d+) cells ahead", str((r.get("ours") or {}).get("text") or ""))
    return int(m.group(1)) if m else None


def _rung(r: dict) -> int | None:
    """The training-set size of a W-LADDER row, from its item ("Table 2 at N = 50,000: ...")."""
    m = re.search(r"N = ([\d,]+)", str(r.get("item", "")))
    return int(m.group(1).replace(",", "")) if m else None


def _scale_value(r: dict, *keys: str, side: str = "ours") -> Any:
    """A row's scale-table value on ``side`` (``ours`` or ``paper``) under the first of ``keys`` it has."""
    scale = r.get("scale") or {}
    return next(((scale[k] or {}).get(side) for k in keys if k in scale), None)


def wu_claim_sentence(rows: Iterable[dict[str, Any]]) -> str:
    """One sentence answering Wu et al.'s main empirical claim (Sec. 6: at the same privacy budget and
    number of steps ADP-SGD is mostly ahead of DP-SGD, the more so as T grows) from the pooled rows of
    Tables 1-5 (:data:`WU_TABLE_RULES`, the paper's grid only), on the data they were computed on, and
    from W-LADDER's rows at its top rung (:data:`~dpcompanion.experiments.comparisons.rule.HEADLINE_N`
    training images, the paper's number) where there are some: a table with such a row is counted by it
    (its smaller row is listed, not counted). What each rung ran (images, data set, trained layers, cells)
    and what the paper used are read from the rows' scale tables and texts. Empty without table rows.

    >>> scale = {"training samples": {"ours": 2000, "paper": 50000},
    ...          "model / data": {"ours": "Fashion-MNIST", "paper": "CNN, CIFAR-10", "match": False},
    ...          "trained layers": {"ours": "last layer only", "paper": "all"}}
    >>> row = lambda t, e, o, v: {"rule": "w-t1245/table", "item": f"Table {t}: ADP-SGD ahead of DP-SGD",
    ...     "ours": {"estimate": e, "ci_low": e - .5, "ci_high": e + .5, "text": "12 of 12 cells ahead"},
    ...     "outcome": o, "verdict": v, "paper": "12 of 12 printed cells ahead, mean printed gap +7.31 points",
    ...     "scale": scale}
    >>> text = wu_claim_sentence([row(1, 1.3, "partial", "sign only"), row(5, 0.0, "failure", "not reproduced")])
    >>> print(text[text.index("is **"):text.index(" on ")])
    is **not reproduced as claimed** in our runs (1 sign only, 1 not reproduced of 2 tables)
    >>> print(text[text.index(" on "):text.index(". ADP")])
     on other data: 2,000 training images of Fashion-MNIST, last layer only trained privately (the paper: CNN, CIFAR-10, 50,000 training images, all)
    >>> print(text.splitlines()[-1])
    - Table 5: +0.00 points (95% CI -0.50 to +0.50) (the paper: 12 of 12 printed cells ahead, mean printed gap +7.31 points): **not reproduced**
    >>> rung = {**row(1, 0.03, "failure", "not reproduced"), "rule": "w-ladder/table", "item": "Table 1 at N = 50,000",
    ...         "paper": "5 of 6 printed cells ahead, mean printed gap +1.55 points",
    ...         "ours": {"estimate": 0.03, "ci_low": -0.01, "ci_high": 0.07, "text": "5 of 6 cells ahead"},
    ...         "scale": {**scale, "training samples (largest rung)": {"ours": 50000, "paper": 50000}}}
    >>> text = wu_claim_sentence([row(1, 1.3, "partial", "sign only"), rung])
    >>> print(text[text.index("is **"):text.index(" on ")])
    is **not reproduced** in our runs (1 not reproduced of 1 table; Table 1 answered by W-LADDER's top rung, below)
    >>> print(text.splitlines()[-2])
    - Table 1: +1.30 points (95% CI +0.80 to +1.80) (the paper: 12 of 12 printed cells ahead, mean printed gap +7.31 points): **sign only** (not counted: answered below by W-LADDER's top rung, on 6 of these 12 cells)
    >>> print(text.splitlines()[-1])
    - Table 1 at W-LADDER's top rung, on 50,000 training images of Fashion-MNIST, last layer only trained privately (the paper: CNN, CIFAR-10, 50,000 training images, all), 6 of the table's 12 cells: +0.03 points (95% CI -0.01 to +0.07): **not reproduced** (the paper on those cells: 5 of 6 printed cells ahead, mean printed gap +1.55 points)
    """
    from dpcompanion.experiments.comparisons.rule import HEADLINE_N

    rows = list(rows)
    tables = [r for r in rows if r.get("rule") in WU_TABLE_RULES and "beyond" not in str(r.get("item", ""))
              and (r.get("ours") or {}).get("estimate") is not None]
    if not tables:
        return ""
    def table(r: dict) -> int:
        return int(re.search(r"Table (\d+)", r["item"]).group(1))

    tables.sort(key=table)
    ladder = [r for r in rows if r.get("rule") == "w-ladder/table" and _rung(r) == HEADLINE_N
              and (r.get("ours") or {}).get("estimate") is not None]
    at_top_rung = {table(r): r for r in ladder}  # a table judged at the ladder's top rung is answered there
    headline = [at_top_rung.get(table(r), r) for r in tables]
    counts: dict[str, int] = {}
    for r in headline:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    outcomes = {r["outcome"] for r in headline}
    # "reproduced" (in part) only where a table's claim was found; the sign alone is not the claim
    answer = ("reproduced" if outcomes == {"success"} else "reproduced in part" if "success" in outcomes
              else "not reproduced" if outcomes == {"failure"}
              else "not reproduced as claimed" if "failure" in outcomes or "partial" in outcomes else "not decided")

    def setup(r: dict, n: Any) -> str:  # what a row ran on, and what the paper used, from its scale table
        data, paper_data = _scale_value(r, "model / data"), _scale_value(r, "model / data", side="paper")
        layers, paper_layers = _scale_value(r, "trained layers"), _scale_value(r, "trained layers", side="paper")
        paper_n = _scale_value(r, "training samples", "training samples (largest rung)", side="paper")
        ours = ", ".join(x for x in (f"{n:,} training images" + (f" of {data}" if data else "") if isinstance(n, int)
                                     else data or "", f"{layers} trained privately" if layers else "") if x)
        paper = ", ".join(x for x in (paper_data, f"{paper_n:,} training images" if isinstance(paper_n, int) else "",
                                      paper_layers) if x)
        return (ours or "our data") + (f" (the paper: {paper})" if paper else "")

    def gain(r: dict) -> str:
        o = r["ours"]
        return f"{o['estimate']:+.2f} points (95% CI {o['ci_low']:+.2f} to {o['ci_high']:+.2f})"

    def answered_below(r: dict) -> str:
        k, K = _cells_run(at_top_rung[table(r)]), _cells_run(r)
        on = f", on {k} of these {K} cells" if k is not None and K is not None else ""
        return f" (not counted: answered below by W-LADDER's top rung{on})"

    def rung_line(r: dict) -> str:
        k = _cells_run(r)
        K = next((_cells_run(t) for t in tables if table(t) == table(r)), None)
        cells = f", {k} of the table's {K} cells" if k is not None and K is not None else ""
        return (f"- Table {table(r)} at W-LADDER's top rung, on {setup(r, _rung(r))}{cells}: {gain(r)}: "
                f"**{r['verdict']}** (the paper on those cells: {str(r['paper']).split(' (')[0]})")

    lines = [f"- Table {table(r)}: {gain(r)} (the paper: {str(r['paper']).split(' (')[0]}): **{r['verdict']}**"
             + (answered_below(r) if table(r) in at_top_rung else "") for r in tables]
    lines += [rung_line(r) for r in ladder]
    tally = ", ".join(f"{k} {v}" for v, k in counts.items())
    big = sorted(at_top_rung)
    big_note = (f"; Table{'s' if len(big) > 1 else ''} {' and '.join(map(str, big))} answered by W-LADDER's top "
                "rung, below" if big else "")
    return (f"**Wu et al.'s main claim**, that ADP-SGD is ahead of DP-SGD at the same privacy budget and number of "
            f"steps (their Sec. 6, Tables 1-5), is **{answer}** in our runs ({tally} of {len(tables)} table{'s' if len(tables) != 1 else ''}{big_note}) "
            f"on {tables[0].get('scope') or reproduction.scope_of(tables[0])}: {setup(tables[0], _scale_value(tables[0], 'training samples'))}. "
            "ADP-SGD's mean gain in accuracy:\n\n"
            + "\n".join(lines))


def title_claim_sentence(rows: Iterable[dict[str, Any]], *, at_largest_n: bool = True) -> str:
    """One sentence answering Hong et al.'s title claim ("as the training size increases, exp outperforms
    uni") from H-F-EFF's loss and accuracy trend rows: ``supported`` only when both succeed,
    ``contradicted`` when one fails, else ``not shown``; with ``at_largest_n`` also exp's gain at the
    smallest and largest N. Empty without both trend rows."""
    rows = [r for r in rows if r.get("page") == "h-f-eff"]
    trend = {r["rule"]: r for r in rows if r.get("rule") in ("h-f-eff/acc", "h-f-eff/loss")
             and "beyond" not in str(r.get("item", ""))}
    if set(trend) != {"h-f-eff/acc", "h-f-eff/loss"}:
        return ""
    acc, loss = trend["h-f-eff/acc"], trend["h-f-eff/loss"]
    outcomes = {acc["outcome"], loss["outcome"]}
    answer = ("supported" if outcomes == {"success"} else "contradicted" if "failure" in outcomes else "not shown")
    scale = "at the paper's scale" if acc.get("setup") == "paper's" else "in runs smaller than the paper's"
    both = ("both estimates lean against it" if acc["ours"]["estimate"] < 0 and loss["ours"]["estimate"] < 0 else
            "both estimates lean toward it" if acc["ours"]["estimate"] > 0 and loss["ours"]["estimate"] > 0 else
            "the two halves lean different ways")
    tail = ""
    if at_largest_n:
        parts = []
        for rule, what, f, unit in (("h-f-eff/loss-at-N", "training loss", 1.0, ""),
                                    ("h-f-eff/acc-at-N", "test accuracy", 100.0, " points")):
            at = _at_n(rows, rule)
            if at:
                ahead = all(e > 0 for _, e in at)
                parts.append(f"in {what} exp is {'ahead at every N' if ahead else 'not ahead at every N'}, its gain "
                             f"{f * at[0][1]:+.2g}{unit} at N = {at[0][0]} and {f * at[-1][1]:+.2g}{unit} at N = {at[-1][0]}")
        tail = ("; " + "; ".join(parts)) if parts else ""
    return (f"**The title claim**, that the dynamic schedule exp outperforms the uniform one more as the training size "
            f"increases, is **{answer}** {scale} ({both}): exp's gain in final training loss changes by {_lean(loss)}; "
            f"its gain in test accuracy by {_lean(acc)}{tail}.")
