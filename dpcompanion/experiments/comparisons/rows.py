"""A rule's verdict as one row of a paper-vs-ours table (:func:`row_of`), capped by the
tuning protocol (:func:`tuning_cap`). The registry of rules
(:func:`dpcompanion.experiments.comparisons.all_rules`, :func:`~dpcompanion.experiments.comparisons.compare`)
is built from the experiments' declared rules and the modules of the pages without an experiment,
which use this module for their rows (``theory.h_f_theory_rows``, ``wu_rules.w_f2_rows`` ...): it
imports none of them. Everything a row needs of its rule (design, margin, comparability) is
read from the :class:`~.rule.Rule` itself.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from dpcompanion.experiments.comparisons import outcome
from dpcompanion.experiments.comparisons.rule import (JUDGE_WORDS, NOT_COMPARED, VERDICTS, Judgement, Rule,
                                                      critical_value, tost)
from dpcompanion.experiments.protocols import wu_paper

__all__ = ["tuning_cap", "tuning_for_row", "apply_tuning_cap", "row_of", "decided", "CAP_OF", "VERDICTS", "W_ACC_MARGIN", "W_PAPER_RUNS", "HEADLINE_N",
           "W_SPREAD", "H_LOSS", "H_ACC", "TREND", "DIRECTION"]

#: runs behind each of Wu et al.'s printed mean +- sd (W Sec. 6: "We repeat the experiments five times")
W_PAPER_RUNS = 5


def _w_acc_margin() -> float:
    """The median standard error of a gap Wu et al. printed, ``sqrt(sd_ADP^2/5 + sd_DP^2/5)``
    over every printed cell of Tables 1 to 5 (points of accuracy; read from the printed tables
    of :mod:`~dpcompanion.experiments.protocols.wu_paper`, not from our runs; Table 6 prints
    hyper-parameters)."""
    cells = [c for t in wu_paper.TABLES.values() for c in t.values()] + list(wu_paper.TABLE3.values())
    return float(np.median([math.sqrt(sa**2 / W_PAPER_RUNS + sd**2 / W_PAPER_RUNS) for _, sa, _, sd in cells]))


#: the one accuracy margin of the book (points): Wu et al.'s own resolution of a gap, the median
#: standard error of its printed gaps (:func:`_w_acc_margin`, about 0.27 points). The rules'
#: margins (:attr:`.rule.Rule.margin`, declared with each rule in its experiment's module) are
#: built from it and from the reasons below, which several experiments share.
W_ACC_MARGIN = _w_acc_margin()

#: the reason of every margin taken from Wu et al.'s reported spread
W_SPREAD = (f"Wu et al.'s reported spread: the median standard error of the gaps it printed (Tables 1 to 5, the "
            f"printed sds over {W_PAPER_RUNS} runs), {W_ACC_MARGIN:.3g} points: a gain below it is smaller than "
            "the paper's own resolution of a gap")
#: the reason of a Hong et al. loss margin (the experiment adds its number of classes)
H_LOSS = ("smallest effect of interest: 1% of the loss at the start of training (the cross-entropy of the zero "
          "model, ln K for K classes); Hong et al. print no loss value to take a precision from")
#: the reason of a Hong et al. accuracy margin
H_ACC = (f"smallest effect of interest: the book's one accuracy margin, {W_ACC_MARGIN:.3g} points (Wu et al.'s "
         "reported spread, see the W rows), as a fraction; Hong et al. print no accuracy")
#: the reason of a margin per doubling of N (a trend row)
TREND = ("per doubling of N: the per-N margin spread over the 4 doublings N = 250 to 4,000 of the page's sizes (a "
         "trend inside it moves the gap by less than its margin over the whole range)")

#: the tolerance of a rule about a direction the paper states without a number (Hong et al.'s figures)
DIRECTION = "the paper prints a direction, no number: our 95% CI above zero agrees, below zero disagrees, else inconclusive"

#: W-LADDER's top rung: CIFAR-10's 50,000 training images, the paper's N (and so its number of
#: steps at its epochs): the headline evidence for Wu et al.'s Tables 2 and 5
HEADLINE_N = 50_000


def tuning_cap(tuning: Any) -> tuple[str | None, str]:
    """The tuning protocol's cap on a verdict, from a payload's ``tuning`` list
    (``{param, method, chosen, grid_min, grid_max, interior, stated_bound, tuning_seeds,
    report_seeds}``): ``("not comparable", why)`` when an optimum lies at a grid edge the
    paper did not state (not the tuned result) or when the tuning and report seeds overlap
    (selection on the reported seeds); ``("partly", why)`` when the methods compared were
    tuned on different grids for the same parameter, or with different numbers of candidates
    (at most partly); ``(None, "")`` otherwise.

    >>> tuning_cap([])
    (None, '')
    >>> e = dict(param="T", method="uni", chosen=150, grid_min=50, grid_max=150, interior=False, stated_bound=True,
    ...          tuning_seeds=[1, 2], report_seeds=[3, 4])
    >>> tuning_cap([e])
    (None, '')
    >>> tuning_cap([{**e, "stated_bound": False}])[0], tuning_cap([{**e, "tuning_seeds": [3]}])[0]
    ('not comparable', 'not comparable')
    >>> tuning_cap([e, {**e, "method": "exp", "grid_max": 100, "chosen": 100, "interior": False}])[0]
    'partly'
    >>> tuning_cap([{**e, "n_candidates": 4}, {**e, "method": "exp", "n_candidates": 12}])
    ('partly', 'the methods compared had different numbers of tuning candidates: exp [12], uni [4]')

    Grids and candidate counts are compared between the methods of the same ``cell`` and
    ``setting`` (the paper's grid, or the beyond-the-paper one) only.
    """
    if not tuning:
        return None, ""
    edge = [t for t in tuning if t.get("interior") is False and not t.get("stated_bound")]
    if edge:
        return "not comparable", "tuned at a grid edge the paper did not state: " + ", ".join(
            f"{t.get('method')} {t.get('param')} = {t.get('chosen')} (grid {t.get('grid_min')}..{t.get('grid_max')})"
            for t in edge)
    shared = [t for t in tuning if set(t.get("tuning_seeds") or []) & set(t.get("report_seeds") or [])]
    if shared:
        return "not comparable", "selected on the reported seeds: " + ", ".join(
            f"{t.get('method')} {t.get('param')}" for t in shared)
    # methods compared: the same cell and setting (the paper's grid, or beyond it); their grids
    # for each parameter must be equal, and so must their numbers of candidates
    grids: dict[tuple, set] = {}
    counts: dict[tuple, set] = {}
    for t in tuning:
        where = (str(t.get("cell", "")), str(t.get("setting", "")))
        grids.setdefault((*where, str(t.get("param"))), set()).add((t.get("grid_min"), t.get("grid_max")))
        if t.get("n_candidates") is not None:
            counts.setdefault(where, {}).setdefault(str(t.get("method")), set()).add(int(t["n_candidates"]))
    unequal = sorted({k[2] for k, g in grids.items() if len(g) > 1})
    if unequal:
        return "partly", f"the methods were tuned on different grids for {', '.join(unequal)}"
    uneven = sorted({f"{m} {sorted(n)}" for by in counts.values() if len(by) > 1
                     and len({max(n) for n in by.values()}) > 1 for m, n in by.items()})
    if uneven:
        return "partly", "the methods compared had different numbers of tuning candidates: " + ", ".join(uneven)
    return None, ""


def tuning_for_row(row: dict, tuning: Any) -> list:
    """The tuning records behind ``row``: those of its setting (``beyond`` when the row's item
    says it is beyond the paper's grid, else ``paper``; records without a setting count for
    both) and of its cell (a record whose ``cell`` appears in the item, or whose cell's first
    part, e.g. ``mnist35/dnn`` of ``mnist35/dnn, scale 5``, starts it); all records of the
    setting when no cell matches.

    >>> recs = [dict(cell="C_G 1, eps_bar 0.8", setting="paper"), dict(cell="C_G 1, eps_bar 0.8", setting="beyond"),
    ...         dict(cell="C_G 2.5, eps_bar 0.8", setting="paper")]
    >>> [r["setting"] for r in tuning_for_row({"item": "gain, C_G 1, eps_bar 0.8 (beyond the paper's grid)"}, recs)]
    ['beyond']
    >>> len(tuning_for_row({"item": "mnist35/dnn: loss"}, [dict(cell="mnist35/dnn, scale 5"), dict(cell="x, scale 5")]))
    1
    """
    recs = list(tuning or [])
    item = str(row.get("item", ""))
    setting = "beyond" if "beyond" in item.lower() else "paper"
    recs = [t for t in recs if t.get("setting") in (None, "", setting)]
    head = item.split(":")[0].strip()
    mine = [t for t in recs if t.get("cell") and (str(t["cell"]) in item
                                                  or str(t["cell"]).split(",")[0].strip() == head)]
    return mine or recs


#: the ``cap`` criterion (:mod:`.outcome`) of a tuning protocol's cap (:func:`tuning_cap`)
CAP_OF = {None: "none", "partly": "tuning: at most partial", "not comparable": "tuning: not judged"}
#: how severe each cap is (a cap never lowers another)
_CAP_RANK = {"none": 0, "tuning: at most partial": 1, "cells: at most partial": 1, "cells: not reproduced": 1.5,
             "tuning: not judged": 2, "sizes differ": 3}


#: the criteria of a row that declares none (built by hand, not by a rule): nothing to judge it by
_NO_CRITERIA = {"claim": "none", "paper_evidence": "none", "setup": "another", "sign": "n/a", "size": "n/a",
                "absence": "n/a", "check": "n/a", "cap": "none"}


def decided(row: dict, **criteria: str) -> dict:
    """``row`` with ``criteria`` replaced (:data:`.outcome.CRITERIA`) and its word (``verdict``)
    and ``outcome`` decided again by the one table (:func:`.outcome.decide`). A lower ``setup``
    than the row's (``reduced`` or ``another`` for ``paper's``) makes the paper's size of an
    effect ``not testable``.

    >>> r = decided({k: v[0] for k, v in outcome.CRITERIA.items()}, claim="effect", paper_evidence="clear",
    ...             sign="paper's side", size="compatible", absence="not shown", check="n/a")
    >>> r["verdict"], r["outcome"], decided(r, setup="another")["verdict"], decided(r, setup="another")["size"]
    ('reproduced', 'success', 'sign only', 'not testable')
    """
    out = {**_NO_CRITERIA, **row, **criteria}  # a row built without a rule declares no claim: not judged
    if out.get("claim") == "effect" and out.get("setup") != "paper's" and out.get("size") in ("compatible", "smaller",
                                                                                                  "larger"):
        out["size"] = "not testable"
    out["verdict"], out["outcome"] = outcome.decide({k: out[k] for k in outcome.CRITERIA})
    return out


def apply_tuning_cap(row: dict, tuning: Any) -> dict:
    """``row`` with its ``cap`` criterion raised by :func:`tuning_cap` over the records behind it
    (:func:`tuning_for_row`; a cap never lowers another; idempotent), the reason prepended to its
    note, and its word and outcome decided again (:func:`decided`)."""
    cap, why = tuning_cap(tuning_for_row(row, tuning))
    c = CAP_OF[cap]
    if _CAP_RANK[c] <= _CAP_RANK.get(row.get("cap", "none"), 0):
        return row
    new = decided(row, cap=c)
    return {**new, "note": f"{why}: capped ({c}; the row would read '{row['verdict']}'). {row.get('note', '')}"}


def row_of(r: Rule, *, sizes_match: bool, sizes_note: str = "", item: str | None = None,
           tuning: Any = None, setup: str | None = None, **measured: Any) -> dict[str, str]:
    """One paper-vs-ours row for the rule ``r`` (:func:`dpcompanion.experiments.comparisons.compare`
    looks a rule up by its id and calls this): the judge's :class:`~.rule.Judgement`, its criteria
    (:func:`criteria_of`: claim, the paper's evidence, setup, sign, size, absence, the
    judge's own check, the protocol's cap), stored in the row one by one, and the word and
    outcome the declared table gives them (:func:`.outcome.decide`). ``setup``: the row's
    (default ``another`` where the rule compares the direction alone, else ``paper's``; the
    reproduction report lowers it where the result's scale is smaller). ``sizes_match=False``:
    not judged (cap ``sizes differ``, note ``not compared (sizes differ): <sizes_note>``),
    though our numbers are still shown. ``tuning``: the payload's tuning list, whose protocol
    caps the row (:func:`tuning_cap`).
    """
    rule_id = r.id
    judgement = r.judge(rule=r, **measured) if r.takes_rule else r.judge(**measured)
    if not isinstance(judgement, Judgement):
        raise TypeError(f"rule {rule_id}'s judge must return a Judgement, got {type(judgement).__name__}")
    if judgement.verdict not in JUDGE_WORDS:
        raise RuntimeError(f"rule {rule_id} said {judgement.verdict!r}, not one of {JUDGE_WORDS}")
    if not r.judged and judgement.verdict != "not comparable":
        raise RuntimeError(f"rule {rule_id} is never judged but its judge said {judgement.verdict!r}")
    margin = r.margin
    if (margin is not None and margin.value is not None and margin.applied_by == "row" and judgement.kind == "effect"
            and judgement.margin is None):
        judgement = dataclasses.replace(judgement, margin=float(margin.value))
    comparable = r.comparable[0] if r.comparable is not None else judgement.comparable
    if setup is None:
        setup = "another" if comparable == "direction" else "paper's"
    crit = criteria_of(r, judgement, setup=setup, cap="none" if sizes_match else "sizes differ",
                               item=str(item or r.item))
    note, ours = judgement.row_note, judgement.ours
    if crit["absence"] != "n/a":
        note += (f"; TOST: our effect {'lies' if crit['absence'] == 'shown' else 'is not shown to lie'} within "
                 f"+-{judgement.margin:.3g} of zero")
    paper = judgement.printed if judgement.printed is not None else r.paper
    row = {"item": item or r.item, "paper": paper, "ours": ours, "judge_verdict": judgement.verdict,
           "note": f"{note}. Tolerance: {r.tolerance}", "rule": rule_id, "stats": judgement.stats(),
           "design": r.design_name, "margin_reason": margin.reason if margin is not None else None}
    if r.comparable is not None:
        row["comparable"] = r.comparable[0]
    row = decided(row, **crit)
    row = apply_tuning_cap(row, tuning)
    if not sizes_match:
        head = f"{NOT_COMPARED}: {sizes_note}" if sizes_note else NOT_COMPARED
        row["note"] = f"{head}. At our sizes the rule's own test gives '{judgement.verdict}' ({note})"
    return row


def criteria_of(rule, judgement, *, setup: str, cap: str = "none", item: str = "") -> dict[str, str]:
    """The criteria of one row (:data:`.outcome.CRITERIA`) from its rule and the judge's
    :class:`~.rule.Judgement` (before any margin rewrote its word), the row's ``setup`` and its
    protocol ``cap``."""
    j = judgement
    claim = outcome.claim_of(rule, j, item=item)
    if cap == "none" and j.cells_cap is not None:
        cap = j.cells_cap  # a pooled row's cells (:func:`.outcome.cells_cap`)
    out = dict(claim=claim, paper_evidence="none", setup=setup, sign="n/a", size="n/a", absence="n/a",
               check=outcome.CHECK_OF.get(j.verdict, "n/a"), cap=cap)
    has_ci = all(isinstance(x, (int, float)) and math.isfinite(x) for x in (j.estimate, j.se, j.ci_low, j.ci_high))
    if claim == "effect":
        out["check"] = "n/a"
        direction = j.direction or (1 if (j.paper or 0) > 0 else -1 if (j.paper or 0) < 0 else None)
        if j.evidence is not None:
            out["paper_evidence"] = j.evidence
        elif j.paper is not None:
            out["paper_evidence"] = outcome.evidence_of(j.paper, j.paper_se)
        else:
            out["paper_evidence"] = "stated"
        if has_ci and direction in (1, -1):
            out["sign"] = outcome.sign_of(j.ci_low, j.ci_high, direction)
        if j.paper is None:
            out["size"] = "none printed"
        elif j.comparable == "direction" or setup != "paper's":
            out["size"] = "not testable"
        elif has_ci:
            out["size"] = outcome.size_of(j.estimate, j.se, j.paper, j.paper_se, crit=critical_value(j.df))
        margin = j.margin if j.margin is not None else (
            rule.margin.value if rule.margin is not None and rule.margin.value is not None else None)
        if margin is not None and has_ci:
            out["absence"] = "shown" if tost(j.estimate, j.se, margin=margin, df=j.df).equivalent else "not shown"
    elif claim == "no difference":
        out["paper_evidence"] = "stated"
        if has_ci and j.margin:
            out["absence"] = "shown" if tost(j.estimate, j.se, margin=j.margin, df=j.df).equivalent else "not shown"
    elif claim == "value":
        out["paper_evidence"] = "exact"
        if j.paper is not None and math.isfinite(j.estimate):
            tol = j.margin or 0.0
            out["size"] = ("compatible" if abs(j.estimate - j.paper) <= tol + 1e-15 * max(1.0, abs(j.paper))
                           else "smaller" if abs(j.estimate) < abs(j.paper) else "larger")
    elif claim == "check":
        out["paper_evidence"] = "stated"
    return out
