"""A rule's verdict as one row of a paper-vs-ours table (:func:`row_of`), capped by the
tuning protocol (:func:`tuning_cap`, issue 21). The registry of rules
(:data:`dpcompanion.experiments.comparisons.RULES`, :func:`~dpcompanion.experiments.comparisons.compare`)
is built from the rule modules, which use this module for the rows of the pages that have
no experiment (``theory.h_f_theory_rows``, ``wu_rules.w_f2_rows`` ...): it imports none of them.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from dpcompanion.experiments.comparisons.rule import NOT_COMPARED, VERDICTS, Judgement, Rule, with_margin
from dpcompanion.experiments.comparisons.sequential import Plan
from dpcompanion.experiments.protocols import wu_paper

__all__ = ["DESIGN_OF", "COMPARABLE_OF", "design_of", "tuning_cap", "tuning_for_row", "apply_tuning_cap",
           "row_of", "Margin", "MARGINS", "margin_of", "W_ACC_MARGIN", "W_PAPER_RUNS", "HEADLINE_N",
           "SEQUENTIAL", "plan_of"]

_W_SHARED = ("trains DP-SGD and ADP-SGD in one call of protocols.wu.train_segments with seeds + seeds: run k of "
             "both methods starts from the same parameters and draws its Poisson batches and noise from the same "
             "seed, so the two arms are paired by seed")

#: the design of every comparison of two arms (issue 33), verified in the experiment code:
#: rule id -> (design, why). Rules not listed compare no two arms by seed (a closed form, a
#: count, one arm against an exact value): their rows have design None. The Hong rules are
#: handed their paired mean and se by the experiment module (protocols.hong.paired_difference
#: and relative_loss, which :func:`.rule.estimate_effect` reproduces); the W rules estimate
#: from the per-seed arrays with :func:`.rule.estimate_effect` of this design.
DESIGN_OF: dict[str, tuple[str, str]] = {
    "w-f1/gap": ("paired", "w_f1.run_unit " + _W_SHARED),
    "w-t1245/gap": ("paired", "w_t1245.run_cell " + _W_SHARED),
    "w-t1245/table": ("paired", "its cells are w-t1245/gap's (w_t1245.run_cell " + _W_SHARED + ")"),
    "w-ladder/table": ("paired", "its cells are w-t1245/gap's, run by w_t1245.run_cell at each rung (" + _W_SHARED + ")"),
    "w-t36/gap": ("paired", "w_t36.run_unit reports both chosen configurations on the same report seeds "
                            "(seeds = list(rseeds) * len(configs) in one protocols.wu.train_segments call)"),
    "w-t36/table": ("paired", "its cells are w-t36/gap's (the same report seeds for both chosen configurations)"),
    "w-f4/decay": ("independent", "w_f4.run_unit draws each (sigma, c) cell's seeds from SeedSequence([seed, sigma, "
                                  "c]): the c = 0 and c > 0 runs share the data, not their batches or noise"),
    "h-f-eff/loss": ("paired", "uni and exp run on the same seeds per repeat (h_f_eff, protocols.hong.paired_difference)"),
    "h-f-eff/acc": ("paired", "uni and exp run on the same seeds per repeat (h_f_eff, protocols.hong.paired_difference)"),
    "h-f-eff/loss-at-N": ("paired", "as h-f-eff/loss, at one N (protocols.hong.paired_difference)"),
    "h-f-eff/acc-at-N": ("paired", "as h-f-eff/acc, at one N (protocols.hong.paired_difference)"),
    "h-f-eff-exact/loss": ("paired", "as h-f-eff (protocols.hong.paired_difference)"),
    "h-f-eff-exact/acc": ("paired", "as h-f-eff (protocols.hong.paired_difference)"),
    "h-f-scale/dyn": ("paired", "every schedule runs on the same seeds (h_f_scale, protocols.hong.relative_loss with "
                                "the covariance)"),
    "h-f-mom/expinfl-vs-momexpinfl": ("paired", "expinfl and momexpinfl run on the same seeds per repeat (h_f_mom, "
                                                "protocols.hong.paired_difference)"),
    "h-f-curv/sharp-vs-flat": ("independent", "each curvature is its own unit with seeds of its own "
                                              "(h_f_curv.units, protocols.hong.unit_seeds)"),
}


def design_of(rule_id: str) -> str | None:
    """The design of rule ``rule_id``'s comparison (:data:`DESIGN_OF`), None where it compares
    no two arms by seed.

    >>> design_of("w-t36/gap"), design_of("w-f4/decay"), design_of("w-eps/epsilon")
    ('paired', 'independent', None)
    """
    d = DESIGN_OF.get(rule_id)
    return d[0] if d else None


# ------------------------------------------------------------------------ practical margins (issue 33, item 4)

@dataclasses.dataclass(frozen=True)
class Margin:
    """The practical margin of one rule's effect: ``value`` in the units of the rule's estimate
    (None: the rule has no margin, ``reason`` says why), ``basis`` (``printed precision``,
    ``reported spread``, ``smallest effect of interest``, ``none``) and ``reason``;
    ``applied_by``: ``row`` (:func:`row_of` applies it, :func:`.rule.with_margin`) or
    ``judge`` (the rule's judge is itself a TOST with this margin)."""

    value: float | None
    units: str
    basis: str
    reason: str
    applied_by: str = "row"


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
#: standard error of its printed gaps (:func:`_w_acc_margin`, about 0.27 points)
W_ACC_MARGIN = _w_acc_margin()

_W_SPREAD = (f"Wu et al.'s reported spread: the median standard error of the gaps it printed (Tables 1 to 5, the "
             f"printed sds over {W_PAPER_RUNS} runs), {W_ACC_MARGIN:.3g} points: a gain below it is smaller than "
             "the paper's own resolution of a gap")
_H_LOSS = ("smallest effect of interest: 1% of the loss at the start of training (the cross-entropy of the zero "
           "model, ln K for K classes); Hong et al. print no loss value to take a precision from")
_H_ACC = (f"smallest effect of interest: the book's one accuracy margin, {W_ACC_MARGIN:.3g} points (Wu et al.'s "
          "reported spread, see the W rows), as a fraction; Hong et al. print no accuracy")
_TREND = ("per doubling of N: the per-N margin spread over the 4 doublings N = 250 to 4,000 of the page's sizes (a "
          "trend inside it moves the gap by less than its margin over the whole range)")

#: every effect rule's practical margin (issue 33, item 4), declared once, each with its reason,
#: before any verdict was regenerated with it: rule id -> :class:`Margin`. An effect whose 90%
#: interval lies inside +-margin reads ``equivalent`` (TOST at 0.05 each side); an effect inside
#: its margin never reads ``disagrees`` (:func:`.rule.with_margin`). A rule judging an effect
#: over runs (:func:`.rule.judge_effect`, :func:`.rule.judge_equivalence`) is listed here, with
#: ``value`` None where no margin can be stated and the reason why.
MARGINS: dict[str, Margin] = {
    "w-f1/gap": Margin(W_ACC_MARGIN, "points of accuracy", "reported spread", _W_SPREAD),
    "w-t1245/gap": Margin(W_ACC_MARGIN, "points of accuracy", "reported spread", _W_SPREAD),
    "w-t1245/table": Margin(W_ACC_MARGIN, "points of accuracy", "reported spread", _W_SPREAD + " (the pooled gap)"),
    "w-ladder/table": Margin(W_ACC_MARGIN, "points of accuracy", "reported spread", _W_SPREAD + " (the pooled gap)"),
    "w-t36/gap": Margin(W_ACC_MARGIN, "points of accuracy", "reported spread", _W_SPREAD),
    "w-t36/table": Margin(W_ACC_MARGIN, "points of accuracy", "reported spread", _W_SPREAD + " (the pooled gap)"),
    "w-f4/decay": Margin(W_ACC_MARGIN, "points of test error", "reported spread",
                         _W_SPREAD + "; Fig. 4 prints no number, test error is accuracy's complement"),
    "h-f-eff/loss-at-N": Margin(0.01 * math.log(2), "training loss (nats)", "smallest effect of interest",
                                _H_LOSS + ": 2 classes, 0.01 ln 2"),
    "h-f-eff/acc-at-N": Margin(W_ACC_MARGIN / 100, "test accuracy (fraction)", "smallest effect of interest", _H_ACC),
    "h-f-eff/loss": Margin(0.01 * math.log(2) / 4, "training loss (nats) per doubling of N",
                           "smallest effect of interest", _H_LOSS + ": 2 classes, 0.01 ln 2, " + _TREND),
    "h-f-eff/acc": Margin(W_ACC_MARGIN / 100 / 4, "test accuracy (fraction) per doubling of N",
                          "smallest effect of interest", _H_ACC + "; " + _TREND),
    "h-f-eff-exact/loss": Margin(0.01 * math.log(2) / 4, "training loss (nats) per doubling of N",
                                 "smallest effect of interest", _H_LOSS + ": 2 classes, 0.01 ln 2, " + _TREND),
    "h-f-eff-exact/acc": Margin(W_ACC_MARGIN / 100 / 4, "test accuracy (fraction) per doubling of N",
                                "smallest effect of interest", _H_ACC + "; " + _TREND),
    "h-f-mom/expinfl-vs-momexpinfl": Margin(0.01 * math.log(10), "final training loss (nats)",
                                            "smallest effect of interest", _H_LOSS + ": MNIST's 10 classes, 0.01 ln 10"),
    "h-f-scale/dyn": Margin(0.01, "relative final loss (e_dyn - e_uni) / e_uni", "smallest effect of interest",
                            "smallest effect of interest: 1% of uni's loss, the relative form of the Hong loss margin"),
    "h-f-curv/sharp-vs-flat": Margin(None, "final loss (our synthetic quadratics)", "none",
                                     "no margin: the two losses are synthetic quadratics of our choosing, whose units "
                                     "give no practical scale and which the paper prints no number for; judged "
                                     "against zero alone"),
    "h-f-curv/exact": Margin(None, "final loss, trainer mean - exact", "smallest effect of interest",
                             "5% of |exact E[f]| (comparisons.hong_rules.EXACT_REL_MARGIN), relative to each cell's exact "
                             "value: the rule's own judge is a TOST with it", applied_by="judge"),
    "h-f-infl-extra/increasing": Margin(None, "influence q_t (our units)", "none",
                                        "no margin: the influence's units depend on the loss scale and step size of "
                                        "each setting, and the paper prints no influence value; judged against zero "
                                        "alone"),
    "h-f-infl/logistic-flatter": Margin(math.log(1.5), "log ratio of steepness", "smallest effect of interest",
                                        "smallest effect of interest: a factor 1.5 in steepness, the factor within "
                                        "which this page calls two influences the same (comparisons.hong_rules.INFL_RATIO)"),
}


def margin_of(rule_id: str) -> Margin | None:
    """The declared margin of rule ``rule_id`` (:data:`MARGINS`), None for a rule not listed.

    >>> margin_of("w-t1245/gap").basis, margin_of("w-eps/epsilon") is None
    ('reported spread', True)
    """
    return MARGINS.get(rule_id)


#: group-sequential plans (issue 33, item 6), by experiment: the cumulative seeds at each look.
#: Declared on 2026-11-28 before any seed (repeat) beyond the first look's was run. W-T1245's cells had been
#: judged at 3 seeds (its full result of 2026-11-25: look 1, 42 of its 48 cell rows
#: inconclusive); seeds are added to 10 and then 20 (a W-T1245 seed of all 24 cells costs about
#: 35 CPU seconds on this project's 2-core machine: 20 seeds about 12 CPU minutes), the cap.
#: Every look, the first included, is judged by the plan's repeated intervals (O'Brien-Fleming
#: spending), so looking three times keeps the overall error rate at 5%.
SEQUENTIAL: dict[str, Plan] = {
    "w-t1245": Plan(looks=(3, 10, 20), reason=(
        "look 1 is the 3-seed result already judged; 10 and 20 seeds (the cap: 4x the paper's 5 runs, 12 CPU "
        "minutes here) are where runs_needed put most of the undecided cells")),
    # H-F-CURV's two checks of our trainer against the exact E[f] were undecided at 1,000 repeats
    # (runs_needed 5,683 and 9,053); a repeat costs about 0.3 ms here, so the cap is 16,000
    "h-f-curv": Plan(looks=(1000, 4000, 16000), unit="repeats", reason=(
        "look 1 is the 1,000-repeat result already judged; 4,000 and 16,000 repeats (the cap) bracket the "
        "runs_needed of its two undecided checks at a cost of seconds")),
}


def plan_of(experiment_id: str) -> Plan | None:
    """The declared group-sequential plan of an experiment (:data:`SEQUENTIAL`), None if none."""
    return SEQUENTIAL.get(experiment_id)


#: W-LADDER's top rung: CIFAR-10's 50,000 training images, the paper's N (and so its number of
#: steps at its epochs): the headline evidence for Wu et al.'s Tables 2 and 5 (issue 33, item 5)
HEADLINE_N = 50_000


_W_TRANSFER = ("every W transfer run (protocols.wu.transfer_features and head_model) trains only the last dense "
               "layer (32 -> 10) of a CNN pre-trained on MNIST, on Fashion-MNIST, with fewer steps below 50,000 images "
               "(about 25 times fewer at 2,000); the paper fine-tunes a CNN pre-trained on CIFAR-100 on CIFAR-10 (50,000 images): the "
               "data set, model and trained layers differ at every size, so only the sign of the gain is compared")

#: rules whose comparability is fixed by our protocol, whatever the run's sizes (issue 33):
#: rule id -> (comparable, why). Every other row takes it from its experiment's scale block
#: (:func:`.scale.comparability`), or ``size`` where it has none (a closed form, a count, an
#: accountant: the same quantity as the paper's).
COMPARABLE_OF: dict[str, tuple[str, str]] = {
    "w-f1/gap": ("direction", _W_TRANSFER),
    "w-t1245/gap": ("direction", _W_TRANSFER),
    "w-t1245/table": ("direction", _W_TRANSFER),
    "w-ladder/table": ("direction", _W_TRANSFER + " (the top rung has the paper's 50,000 images and steps, "
                                                  "not its data set, model or trained layers)"),
    "w-t36/gap": ("direction", _W_TRANSFER),
    "w-t36/table": ("direction", _W_TRANSFER),
}


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
    judgement = r.judge(**measured)
    if not isinstance(judgement, Judgement):
        raise TypeError(f"rule {rule_id}'s judge must return a Judgement, got {type(judgement).__name__}")
    margin = margin_of(rule_id)
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
           "design": design_of(rule_id), "margin_reason": margin.reason if margin is not None else None}
    if rule_id == "w-ladder/table" and f"N = {HEADLINE_N:,}" in str(row["item"]):
        row["headline"] = (f"the headline evidence for Wu et al.'s Table {measured.get('table')}: this rung has the "
                           f"paper's {HEADLINE_N:,} training images and steps (not its data set, model or trained layers)")
    if rule_id in COMPARABLE_OF:
        row["comparable"] = COMPARABLE_OF[rule_id][0]
    row = apply_tuning_cap(row, tuning)
    if not sizes_match:
        row["verdict"] = "not comparable"
        head = f"{NOT_COMPARED}: {sizes_note}" if sizes_note else NOT_COMPARED
        row["note"] = f"{head}. At our sizes the rule would give '{verdict}' ({note})"
    return row


