"""A rule's verdict as one row of a paper-vs-ours table (:func:`row_of`), capped by the
tuning protocol (:func:`tuning_cap`, issue 21). The registry of rules
(:func:`dpcompanion.experiments.comparisons.all_rules`, :func:`~dpcompanion.experiments.comparisons.compare`)
is built from the experiments' declared rules and the modules of the pages without an experiment,
which use this module for their rows (``theory.h_f_theory_rows``, ``wu_rules.w_f2_rows`` ...): it
imports none of them. Everything a row needs of its rule (design, margin, comparability) is
read from the :class:`~.rule.Rule` itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpcompanion.experiments.comparisons.rule import NOT_COMPARED, VERDICTS, Judgement, Rule, with_margin
from dpcompanion.experiments.protocols import wu_paper

__all__ = ["tuning_cap", "tuning_for_row", "apply_tuning_cap", "row_of", "W_ACC_MARGIN", "W_PAPER_RUNS", "HEADLINE_N",
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
#: steps at its epochs): the headline evidence for Wu et al.'s Tables 2 and 5 (issue 33, item 5)
HEADLINE_N = 50_000


def tuning_cap(tuning: Any) -> tuple[str | None, str]:
    """The tuning protocol's cap on a verdict (issue 21), from a payload's ``tuning`` list
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


_ORDER = {"agrees": 0, "identity": 0, "equivalent": 0, "partly": 1, "inconclusive": 2, "disagrees": 2,
          "not comparable": 3}


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


def apply_tuning_cap(row: dict, tuning: Any) -> dict:
    """``row`` with its verdict capped by :func:`tuning_cap` over the records behind it
    (:func:`tuning_for_row`; a cap never raises a verdict; idempotent), the reason prepended
    to its note."""
    cap, why = tuning_cap(tuning_for_row(row, tuning))
    v = row["verdict"]
    if cap is None or _ORDER[cap] <= _ORDER.get(v, 3) or (cap == "partly" and v != "agrees"):
        return row
    return {**row, "verdict": cap, "note": f"{why}: capped at '{cap}' (the rule gave '{v}'). {row.get('note', '')}"}


def row_of(r: Rule, *, sizes_match: bool, sizes_note: str = "", item: str | None = None,
           tuning: Any = None, **measured: Any) -> dict[str, str]:
    """One paper-vs-ours row for the rule ``r`` (:func:`dpcompanion.experiments.comparisons.compare`
    looks a rule up by its id and calls this). ``sizes_match=False``: not judged (verdict
    ``not comparable``, note ``not compared (sizes differ): <sizes_note>``), though our
    numbers are still shown. ``tuning``: the payload's tuning list, whose protocol caps the
    verdict (:func:`tuning_cap`: an ``agrees`` becomes ``partly`` on unequal grids; any verdict
    becomes ``not comparable`` at an unstated grid edge or with shared tuning/report seeds).
    """
    rule_id = r.id
    judgement = r.judge(rule=r, **measured) if r.takes_rule else r.judge(**measured)
    if not isinstance(judgement, Judgement):
        raise TypeError(f"rule {rule_id}'s judge must return a Judgement, got {type(judgement).__name__}")
    margin = r.margin
    if margin is not None and margin.value is not None and margin.applied_by == "row":
        # the declared practical margin (issue 33, item 4): equivalent / never disagrees inside it
        judgement = with_margin(judgement, margin.value)
    verdict, note, ours = judgement.verdict, judgement.row_note, judgement.ours
    paper = judgement.printed if judgement.printed is not None else r.paper
    if verdict not in VERDICTS:
        raise RuntimeError(f"rule {rule_id} said {verdict!r}, not one of {VERDICTS}")
    if not r.judged and verdict != "not comparable":
        raise RuntimeError(f"rule {rule_id} is never judged but its judge said {verdict!r}")
    row = {"item": item or r.item, "paper": paper, "ours": ours, "verdict": verdict,
           "note": f"{note}. Tolerance: {r.tolerance}", "rule": rule_id,
           "stats": judgement.stats(),
           "design": r.design_name, "margin_reason": margin.reason if margin is not None else None}
    if r.comparable is not None:
        row["comparable"] = r.comparable[0]
    row = apply_tuning_cap(row, tuning)
    if not sizes_match:
        row["verdict"] = "not comparable"
        head = f"{NOT_COMPARED}: {sizes_note}" if sizes_note else NOT_COMPARED
        row["note"] = f"{head}. At our sizes the rule would give '{verdict}' ({note})"
    return row


