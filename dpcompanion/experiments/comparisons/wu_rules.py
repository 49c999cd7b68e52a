"""The judges Wu et al.'s experiments share, and the rules of its pages without an experiment.

:func:`judge_gap` (one cell: ADP-SGD's gain over DP-SGD) and :func:`judge_table` (a table's pooled gain)
read the design, margin and comparability of the rule they judge for. Our runs use another setup than
the paper's (Fashion-MNIST instead of CIFAR-10, the CNN's last layer alone trained, fewer steps), so the
table rules compare the *direction* of the gain (:data:`W_TRANSFER`), never the absolute accuracy; both
methods of a cell run on the same seeds (:data:`W_SHARED`). The printed cells are in
:mod:`dpcompanion.experiments.protocols.wu_paper`. The pages without an experiment: W-F2 (the printed
step-size facts, :data:`W_F2_PRINTED`) and W-EPS (footnote 3's epsilons)."""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections import Counter
from typing import Sequence

import numpy as np

from dpcompanion.experiments.comparisons import readings as rd
from dpcompanion.experiments.comparisons.rule import (Case, EVIDENCE_Z, HEADLINE_N, Judgement, Margin, Rule,
                                                      W_ACC_MARGIN, W_PAPER_RUNS, W_SPREAD, cells_cap, estimate_effect,
                                                      evidence_of, judge_effect, judge_exact, pool_random_effects,
                                                      rel_within, row_of)
from dpcompanion.experiments.comparisons.sequential import Plan, first_seeds, judge_sequential
from dpcompanion.theory.bounds import adp

__all__ = ["RULES", "EPSILON_RTOL", "W_F2_RTOL", "W_F2_PRINTED", "W_TRAIN_SIZE", "W_BATCH", "W_EPS_ABS",
           "W_EPS_PARTLY_RTOL", "W_SHARED", "W_TRANSFER", "GAP_TOL", "TABLE_TOL", "gap_stats", "judge_gap",
           "judge_table", "gap_rule", "table_rule", "gap_case", "pooled_case", "AHEAD", "BEHIND", "GAP_MARGIN",
           "TABLE_MARGIN", "GAP_NA_BELOW", "GAP_NA_TABLES", "gap_printed", "w_f2_rows", "w_eps_rows", "w_eps_fits", "w_eps_best_fit", "w_eps_fits_markdown"]

#: the design of every ADP - DP comparison of W's runs: the reason, after the function named
W_SHARED = ("trains DP-SGD and ADP-SGD in one call of protocols.wu.train_segments with seeds + seeds: run k of "
            "both methods starts from the same parameters and draws its Poisson batches and noise from the same "
            "seed, so the two arms are paired by seed")
#: why a W transfer run compares the paper's direction only (the rules' ``comparable``)
W_TRANSFER = ("every W transfer run (protocols.wu.transfer_features and head_model) trains only the last dense "
              "layer (32 -> 10) of a CNN pre-trained on MNIST, on Fashion-MNIST, with fewer steps below 50,000 images "
              "(about 25 times fewer at 2,000); the paper fine-tunes a CNN pre-trained on CIFAR-100 on CIFAR-10 (50,000 images): the "
              "data set, model and trained layers differ at every size, so only the sign of the gain is compared")

#: relative tolerance for "the same final epsilon"
EPSILON_RTOL = 1e-6
#: relative tolerance of the W-F2 step-size end points
W_F2_RTOL = 1e-6
#: W-EPS: the paper prints its epsilons to two decimals, so ours agrees when it rounds to the
#: printed value (within half a unit, 0.005); within this relative distance it is partly
W_EPS_ABS = 0.005
W_EPS_PARTLY_RTOL = 0.25
#: W (002) Sec. 6 and its training-set size: CIFAR-10's 50 000 training images, batch 256
W_TRAIN_SIZE, W_BATCH = 50_000, 256
#: what the paper prints about Fig. 2's step sizes (Wu et al., Sec. 6, Fig. 2 caption, footnote 3,
#: Sec. 6.2, Tables 1 and 4 captions)
W_F2_PRINTED = {
    "iterations_per_epoch": 196,
    "T_by_epochs": {60: 11760, 120: 23520, 200: 39200},
    "T_60_footnote": 11700,
    "eta_T": 1e-10,
}


def gap_stats(adp, dp, *, design: str = "paired") -> tuple[float, float]:
    """Our gap ``mean(adp) - mean(dp)`` and its standard error by ``design`` (every ADP - DP gap
    of W's tables is paired by seed, :data:`W_SHARED`: ``sd(adp_k - dp_k) / sqrt(n)``,
    :func:`~.rule.estimate_effect`). NaN with a single run.

    >>> gap_stats([1.0, 3.0], [0.0, 0.0])
    (2.0, 1.0)
    """
    e = estimate_effect(adp, dp, design=design)
    return e.estimate, e.se


# ------------------------------------------------------------------------ table cells

#: Tables 4 and 5 print "N/A" for the gap of a cell whose arms' accuracies (%) are both below this.
#: Table 4's caption says it ignores a gap "when one has an accuracy of less than 15%", but both tables
#: print the gap where one arm alone is below (Table 4, eps_bar 0.8, C_G 1, 120 epochs: 11.3 with DP
#: at 10.04%); Table 5 points to Table 4 for its reading
GAP_NA_BELOW = 15.0
GAP_NA_TABLES = (4, 5)


def gap_printed(table: int, printed: tuple | None) -> bool:
    """Whether the paper prints a gap for the cell ``printed`` (ADP mean, ADP sd, DP mean, DP sd) of
    ``table``: False for no cell, and for a cell of :data:`GAP_NA_TABLES` with both arms below
    :data:`GAP_NA_BELOW` (printed "N/A").

    >>> gap_printed(4, (13.22, 3.192, 10.13, 0.054)), gap_printed(4, (21.34, 2.404, 10.04, 0.021))
    (False, True)
    >>> gap_printed(1, (13.22, 3.192, 10.13, 0.054)), gap_printed(4, None)
    (True, False)
    """
    if printed is None:
        return False
    return not (table in GAP_NA_TABLES and max(float(printed[0]), float(printed[2])) < GAP_NA_BELOW)


def judge_gap(*, rule: Rule, printed, adp: Sequence[float], dp: Sequence[float], where: str,
              plan: Plan | None = None, table: int | None = None) -> Judgement:
    """One table cell of rule ``rule`` (declared with ``takes_rule``: its design, margin and
    comparability are read from it): ``printed = (adp_mean, adp_sd, dp_mean, dp_sd)`` as printed (or None),
    ``adp``/``dp`` our per-seed accuracies (%). Our gap by the rule's design (:func:`~.rule.estimate_effect`),
    judged against zero and, where our setup is the paper's, the paper's gap with its standard error (from the
    printed sds over :data:`~.rule.W_PAPER_RUNS` runs each) folded in (:func:`~.rule.judge_effect`); else by
    its sign alone. No printed cell, or fewer than 2 seeds: ``not comparable``.

    A cell of ``table`` whose gap the paper prints as "N/A" (:func:`gap_printed`)
    is no claim to test: its paper evidence is ``not printed``.

    With a group-sequential ``plan`` reached by our seeds, the cell is judged at each look on its first seeds
    and decided at the first look that decides (:func:`~.sequential.judge_sequential`).

    >>> r = Rule("x/gap", "a cell", "printed", "tol", judge_gap, design=("paired", "same seeds"), takes_rule=True)
    >>> judge_gap(rule=r, printed=(50.0, 1.0, 50.0, 1.0), adp=[1.0], dp=[0.0], where="x").verdict
    'not comparable'
    """
    design = rule.design_name or "independent"
    if len(adp) < 2 or len(dp) < 2:
        g_o, se_o = float(np.mean(adp) - np.mean(dp)), float("nan")
    else:
        e = estimate_effect(adp, dp, design=design)
        g_o, se_o = e.estimate, e.se
    ours = f"{g_o:+.2f} ± {se_o:.2f} points ({len(adp)} + {len(dp)} seeds, {design})"
    if printed is None:
        return Judgement("not comparable", "the paper has no such cell", ours=ours, printed=f"no such cell ({where})")
    pa, psa, pd, psd = (float(v) for v in printed)
    g_p = pa - pd
    se_p = math.sqrt(psa**2 / W_PAPER_RUNS + psd**2 / W_PAPER_RUNS)
    na = table is not None and not gap_printed(table, printed)
    paper = (f"gap N/A (ADP {pa:.2f} ± {psa:.3g}, DP {pd:.2f} ± {psd:.3g}; {where})" if na else
             f"{g_p:+.2f} ± {se_p:.2f} points (ADP {pa:.2f} ± {psa:.3g}, DP {pd:.2f} ± {psd:.3g}; {where})")
    if len(adp) < 2 or len(dp) < 2:
        return Judgement("not comparable", "fewer than 2 seeds: no spread to judge by", ours=ours, printed=paper)
    comparable = rule.comparable_name
    # an arm at chance: within EVIDENCE_Z printed se of it, or (Tables 4 and 5) below the accuracy under
    # which their caption ignores a gap
    floor = GAP_NA_BELOW if table in GAP_NA_TABLES else W_CHANCE
    above = all(arm - EVIDENCE_Z * sd / math.sqrt(W_PAPER_RUNS) > W_CHANCE and arm >= floor
                for arm, sd in ((pa, psa), (pd, psd)))
    evidence = "not printed" if na else evidence_of(g_p, se_p, above)
    if na:  # no printed gap: nothing of the paper's to compare, our interval judged alone for the note
        g_p, se_p = None, None
    if plan is not None and plan.interim_looks and min(len(adp), len(dp)) >= plan.looks[0]:
        m = rule.margin

        def at(look):
            el = estimate_effect(first_seeds(adp, look.n), first_seeds(dp, look.n), design=design)
            return judge_effect(el.estimate, el.se, paper=g_p, paper_se=se_p, direction=+1, df=el.df, n=el.n,
                                design=design, comparable=comparable, margin=None if m is None else m.value,
                                level=look.level, tost_alpha=look.tost_alpha,
                                interval=f"repeated 95% CI ({look.label}, {look.n} seeds)")

        j, look, taken = judge_sequential(plan, min(len(adp), len(dp)), at)
        j = dataclasses.replace(j, stage=f"{look.label}, {look.n} seeds", looks=tuple(taken), evidence=evidence)
        ours = f"{j.estimate:+.2f} ± {j.se:.2f} points ({look.n} + {look.n} seeds, {design}; {look.label})"
        return j.for_row(ours, remark=f"; {_looks_note(plan, taken)}", printed=paper)
    j = judge_effect(e.estimate, e.se, paper=g_p, paper_se=se_p, direction=+1, df=e.df, n=e.n, design=design,
                     comparable=comparable)
    j = dataclasses.replace(j, evidence=evidence)
    zero_sd = [name for name, sd in (("ADP-SGD", psa), ("DP-SGD", psd)) if sd == 0]
    flag = (f"; the paper prints an sd of 0 over {W_PAPER_RUNS} runs for {' and '.join(zero_sd)} (implausible: the "
            "printed se rests on the other arm alone)" if zero_sd else "")
    return j.for_row(ours, printed=paper, remark=_evidence_remark(evidence, g_p, se_p, pa, pd) + flag)


#: chance accuracy (%) of the paper's CIFAR-10 (10 classes): an arm whose printed mean is not
#: :data:`~.rule.EVIDENCE_Z` printed standard errors above it sits at chance
W_CHANCE = 100.0 / 10


def _evidence_remark(evidence: str, gap: float, se: float, adp: float, dp: float) -> str:
    """What the paper's own printed cell shows (the ``paper_evidence`` criterion), in words."""
    if evidence == "clear":
        return f"; the paper's printed gap {gap:+.2f} is clear of zero (> {EVIDENCE_Z:g} printed se, {se:.2f})"
    if evidence == "not printed":
        return (f"; the paper prints no gap for this cell (\"N/A\", ADP {adp:.2f}% and DP {dp:.2f}%: Table 4's caption "
                f"ignores a gap where an arm is below {GAP_NA_BELOW:g}%, and its tables print N/A where both are): "
                "the cell is no claim to test")
    if evidence == "at chance" and min(adp, dp) < GAP_NA_BELOW:
        return (f"; an arm of the paper's printed cell ({adp:.2f}% and {dp:.2f}%) is below {GAP_NA_BELOW:g}%, where "
                "Table 4's caption (for Tables 4 and 5) says it ignores the gap: the cell is no claim to test")
    if evidence == "at chance":
        return (f"; the paper's printed arms ({adp:.2f}% and {dp:.2f}%) are not both above chance ({W_CHANCE:g}%): "
                "the cell is no claim to test by itself")
    return (f"; the paper's printed gap {gap:+.2f} lies within {EVIDENCE_Z:g} printed se ({se:.2f}) of zero: the cell "
            "is no claim to test by itself")


#: the margin of every W gap (one cell) and of every pooled table gap
GAP_MARGIN = Margin(W_ACC_MARGIN, "points of accuracy", "reported spread", W_SPREAD)
TABLE_MARGIN = Margin(W_ACC_MARGIN, "points of accuracy", "reported spread", W_SPREAD + " (the pooled gap)")


#: per-seed accuracies (%) of a worked example: one arm clearly ahead of the other (by 10 points)
AHEAD, BEHIND = [70.0, 70.5, 71.0], [60.0, 60.5, 61.0]


def gap_case(statement: str, *, printed: tuple, adp: list[float], dp: list[float], **extra) -> Case:
    """A gap rule's worked example: ``adp``/``dp`` (hand-made, written from the ``printed`` cell)
    agree with it; ADP-SGD clearly behind (:data:`BEHIND` against :data:`AHEAD`) disagrees."""
    return Case(statement, {**extra, "printed": printed, "adp": adp, "dp": dp},
                {**extra, "printed": printed, "adp": BEHIND, "dp": AHEAD})


def pooled_case(statement: str, *, table: int) -> Case:
    """A table rule's worked example: three cells whose gaps (0.9, 1.0, 1.1,
    SE 0.1) pool above zero, and the same cells mirrored below it."""
    cells = [{"gap": g, "se": 0.1, "paper_gap": 0.7} for g in (0.9, 1.0, 1.1)]
    return Case(statement, {"table": table, "cells": [{"verdict": "agrees", **c} for c in cells]},
                {"table": table, "cells": [{"verdict": "disagrees", **c, "gap": -c["gap"]} for c in cells]})


def gap_rule(rule_id: str, item: str, paper: str, *, paired_because: str, case: Case, where: str | None = None,
             tolerance: str | None = None) -> Rule:
    """A W experiment's rule for one cell's gain ADP - DP (:func:`judge_gap`): paired by seed for
    the reason ``paired_because`` (found in the experiment's code), W's gap margin, the direction
    alone compared (:data:`W_TRANSFER`). ``where``: the printed table the cell is read from (None:
    the row's ``table`` measurement names it)."""
    if where is None:
        def judge(*, rule, table, **m):
            return judge_gap(rule=rule, where=f"Wu et al., Table {table}", table=table, **m)
    else:
        def judge(*, rule, **m):
            return judge_gap(rule=rule, where=where, **m)
    return Rule(rule_id, item, paper, tolerance or GAP_TOL, judge, design=("paired", paired_because),
                margin=GAP_MARGIN, comparable=("direction", W_TRANSFER), takes_rule=True, case=case)


def table_rule(rule_id: str, item: str, paper: str, *, paired_because: str, tolerance: str | None = None,
               comparable_because: str = W_TRANSFER) -> Rule:
    """A W experiment's rule for a table pooled over its cells (:func:`judge_table`): paired by
    seed (``paired_because``), W's pooled margin, the direction alone compared; its worked example
    is :func:`pooled_case` on the table ``item`` names."""
    table = int(re.search(r"Tables? (\d)", item).group(1))
    return Rule(rule_id, item, paper, tolerance or TABLE_TOL, judge_table, design=("paired", paired_because),
                margin=TABLE_MARGIN, comparable=("direction", comparable_because), takes_rule=True,
                case=pooled_case(f"the pooled gap over the cells of Wu et al.'s Table {table} is above zero",
                                 table=table))


def _looks_note(plan: Plan, taken) -> str:
    said = ", ".join(f"{n} seeds: {v}" for n, v in taken)
    return f"{plan.describe()}; judged at {said}"


GAP_TOL = (f"our gap's 95% CI (paired by seed: the t interval of the per-seed differences ADP - DP); our setup "
            f"is not the paper's (data set, model, trained layers, steps), so its direction alone is compared: "
            f"agrees = the CI excludes zero on the paper's side, disagrees = on the other side, inconclusive = it "
            f"includes zero (the paper's gap, its se from the printed sds over {W_PAPER_RUNS} runs, is quoted, not "
            f"judged); at the paper's setup the size would be judged too: partly = excludes zero and the paper's gap, "
            f"disagrees also when the paper's gap is excluded while zero is not")


def _pooled_note(p, k_all: int) -> str:
    return (f"pooled over {p.k} of {k_all} cells by random effects (DerSimonian-Laird tau^2 = {p.tau2:.3g}, Q = "
            f"{p.Q:.3g}; modified Hartung-Knapp interval, t on {p.df} df)" if p.df is not None
            else f"one comparable cell of {k_all}: its own gap")


def judge_table(*, rule: Rule, table: int, cells: Sequence[dict]) -> Judgement:
    """One of W's tables (rule ``rule``, declared with ``takes_rule``) from its ``cells``: dicts with
    ``verdict``, ``outcome`` and ``cap`` (the cell's row), ``gap`` and ``se`` (ours, paired by seed) and
    ``paper_gap`` (printed, or None). The table's verdict is that of the *pooled gap* over the comparable cells
    (those whose sizes do not differ; :func:`~.rule.pool_random_effects`: random effects, the cells' true
    gains differ), judged as a cell is, with the rule's margin; the count of cells by verdict is reported
    beside it. Not comparable when no cell is. The cells judged on their own cap the table (:func:`~.rule.cells_cap`).

    >>> c = [{"verdict": "sign only", "outcome": "partial", "cap": "none", "gap": g, "se": 0.1, "paper_gap": 2.0}
    ...      for g in (1.0, 1.1, 1.2)]
    >>> r = Rule("x/table", "a table", "printed", "tol", judge_table, design=("paired", "same seeds"),
    ...          comparable=("direction", "another setup"), takes_rule=True)
    >>> judge_table(rule=r, table=1, cells=c).verdict
    'agrees'

    Two cells pool on one degree of freedom (t = 12.7): agreeing cells need not make the table agree:

    >>> judge_table(rule=r, table=1, cells=c[:1] + [{**c[0], "gap": 1.4}]).verdict
    'inconclusive'
    >>> judge_table(rule=r, table=1, cells=[{**c[0], "cap": "sizes differ", "verdict": "not judged"}]).verdict
    'not comparable'
    >>> judge_table(rule=r, table=1, cells=c[:2] + [{**c[2], "outcome": "failure"}]).cells_cap
    'cells: at most partial'
    """
    cnt = Counter(c["verdict"] for c in cells)
    n = len(cells)
    counted = ", ".join(f"{k} {c}" for k, c in sorted(cnt.items()))
    printed = [c["paper_gap"] for c in cells if c["paper_gap"] is not None]
    paper_pos = sum(1 for g in printed if g > 0)
    ours_pos = sum(1 for c in cells if c["gap"] > 0)
    na = n - len(printed)
    paper = (f"{paper_pos} of {len(printed)} printed gaps ahead"
             + (f" ({na} of the {n} cells run here printed without a gap)" if na else "")
             + f", mean printed gap {float(np.mean(printed)):+.2f} points (Wu et al., Table {table})" if printed
             else f"no printed gap at these sizes (Wu et al., Table {table})")
    headline = ""
    if rule.id == "w-t1245/table" and table in (2, 5):
        headline = (f"; the headline evidence for Table {table} is W-LADDER's top rung (N = {HEADLINE_N:,}, the "
                    "paper's N and steps), on its page")
    use = [c for c in cells if c.get("cap", "none") != "sizes differ" and c.get("paper_gap", 0.0) is not None
           and math.isfinite(float(c.get("se", math.nan)))
           and math.isfinite(float(c["gap"]))]
    same = [c.get("outcome", "not judged") for c in cells if c.get("cap", "none") != "sizes differ"]
    cap = cells_cap(same)
    fails, judged = same.count("failure"), sum(1 for o in same if o != "not judged")
    by_cells = (f"; cells judged on their own: {fails} of {judged} not reproduced"
                + ("" if cap == "none" else f", so the table is capped ({cap})"))
    if not use:
        return Judgement("not comparable", f"cells: {counted}{headline}",
                         ours=f"{ours_pos} of {n} cells ahead; no comparable cell", printed=paper)
    m = rule.margin
    design, comparable = rule.design_name, rule.comparable_name
    p = pool_random_effects([float(c["gap"]) for c in use], [float(c["se"]) for c in use])
    j = judge_effect(p.estimate, p.se, direction=+1, df=p.df, design=design, comparable=comparable,
                     margin=None if m is None else m.value)
    ours = (f"pooled gap {p.estimate:+.2f} points (95% CI {p.ci_low:+.2f} to {p.ci_high:+.2f}); {ours_pos} of {n} "
            f"cells ahead; cells by verdict: {counted}")
    return dataclasses.replace(j.for_row(ours, remark=f"; {_pooled_note(p, n)}; cells by verdict: {counted}{by_cells}"
                                                      f"{headline}", printed=paper), cells_cap=cap)


TABLE_TOL = ("the pooled gap over the table's comparable cells (random effects: DerSimonian-Laird tau^2, the modified "
              "Hartung-Knapp interval with t on k - 1 df; the cells differ in epsilon_bar, clip and epochs, and so do "
              "their true gains), judged as a cell is: by its sign (the setup is the paper's in direction only), "
              "equivalent when TOST puts it inside the practical margin; the count of cells by verdict beside it; "
              "not comparable when no cell is; the cells judged on their own cap it: one not reproduced, at most "
              "partial; half or more, not reproduced")


# ------------------------------------------------------------------------ W-F2

def _judge_exact_int(*, printed: int, ours: int, what: str, note: str = "exact integer match") -> Judgement:
    return Judgement("agrees" if int(ours) == int(printed) else "disagrees", note, ours=str(int(ours)),
                     printed=f"{int(printed)} ({what})")


def _judge_iterations(*, ours: int) -> Judgement:
    return _judge_exact_int(printed=W_F2_PRINTED["iterations_per_epoch"], ours=ours, what="Wu et al., Sec. 6")


def _judge_T(*, epochs: int, ours: int) -> Judgement:
    T = W_F2_PRINTED["T_by_epochs"]
    if epochs not in T:
        raise ValueError(f"epochs must be one of {sorted(T)} (Wu et al., Sec. 6), got {epochs!r}")
    return _judge_exact_int(printed=T[epochs], ours=ours, what="Wu et al., Sec. 6")


def _judge_T_footnote(*, ours: int, explained: str = "") -> Judgement:
    p = W_F2_PRINTED["T_60_footnote"]
    note = (f"{p} = 60 x {p // 60} (floor(50000/256) per epoch; Sec. 6.2 also uses t mod 195): the paper uses two "
            "epoch lengths" if p % 60 == 0 else "exact integer match")
    return _judge_exact_int(printed=p, ours=ours, what="Wu et al., footnote 3, Sec. 6.2",
                            note=f"{note}; {explained}" if explained else note)


def _judge_eta_T(*, ours: float) -> Judgement:
    p = W_F2_PRINTED["eta_T"]
    return Judgement("agrees" if rel_within(p, ours, W_F2_RTOL) else "disagrees",
                     "identity: a_T is defined so; checks our implementation", ours=f"{ours:.4g}",
                     printed=f"{p:g} (Wu et al., Fig. 2 caption, Table 1)")


def _judge_caption_plus(*, ours: float, explained: str = "") -> Judgement:
    p = W_F2_PRINTED["eta_T"]
    note = "sign typo: Table 1 and Fig. 2 have 0.1 - a_T sqrt(t)"
    return Judgement("agrees" if rel_within(p, ours, W_F2_RTOL) else "disagrees",
                     f"{note}; {explained}" if explained else note, ours=f"{ours:.4g}",
                     printed=f"{p:g} (Wu et al., Table 4 caption)")


def _explained_row(rule_id: str, c: "rd.Closest", **kw) -> dict:
    """A row of ``rule_id`` whose note ends with the closest reading's sentence and whose
    ``reading`` field carries it (:mod:`.readings`: the verdict stays the stated protocol's)."""
    row = _row(rule_id, sizes_match=True, explained=rd.note(c), **kw)
    row["reading"] = rd.field(c)
    return row


def w_f2_rows() -> list[dict]:
    """Paper-vs-ours rows for W-F2 (the step sizes of Fig. 2; nothing is trained), ours from the
    library's step sizes (:func:`dpcompanion.theory.bounds.adp.stepsize_linear_sqrt`): iterations per epoch
    (ceil(50000 / 256) vs the printed 196); T for 60/120/200 epochs; footnote 3's T = 11700 for 60 epochs
    (60 x 195: the paper uses two epoch lengths); eta_T = 1e-10 at t = T (true by construction of a_T: it
    checks our implementation); Table 4's caption's 0.1 + a_T sqrt(t) (a sign typo of Table 1's)."""
    per_epoch = math.ceil(W_TRAIN_SIZE / W_BATCH)
    rows = [_row("w-f2/iterations-per-epoch", sizes_match=True, ours=per_epoch)]
    for ep in W_F2_PRINTED["T_by_epochs"]:
        rows.append(_row("w-f2/T-by-epochs", sizes_match=True, item=f"T for {ep} epochs (Sec. 6)", epochs=ep,
                            ours=per_epoch * ep))
    T_readings = [rd.Reading("60 x ceil(50000/256) = 60 x 196 (Sec. 6's epoch)", per_epoch * 60, stated=True),
                  rd.Reading("60 x floor(50000/256) = 60 x 195 (Sec. 6.2's t mod 195)", 60 * (W_TRAIN_SIZE // W_BATCH)),
                  rd.Reading("ceil(60 x 50000/256) (TF-Privacy's compute_dp_sgd_privacy)",
                             math.ceil(60 * W_TRAIN_SIZE / W_BATCH))]
    rows.append(_explained_row("w-f2/T-footnote", rd.closest(W_F2_PRINTED["T_60_footnote"], T_readings),
                               ours=per_epoch * 60))
    for ep, T in W_F2_PRINTED["T_by_epochs"].items():
        rows.append(_row("w-f2/eta-T", sizes_match=True, item=f"0.1 - a_T sqrt(t) at t = T ({ep} epochs)",
                            ours=float(adp.stepsize_linear_sqrt(T=T)[-1])))
    T = W_F2_PRINTED["T_by_epochs"][60]
    a_T = (0.1 - W_F2_PRINTED["eta_T"]) / math.sqrt(T)
    plus = 0.1 + a_T * math.sqrt(T)
    caption = [rd.Reading("0.1 + a_T sqrt(T) as printed in Table 4's caption", plus, stated=True),
               rd.Reading("0.1 - a_T sqrt(T) (Table 1 and Fig. 2's sign)", float(adp.stepsize_linear_sqrt(T=T)[-1]))]
    rows.append(_explained_row("w-f2/table4-caption", rd.closest(W_F2_PRINTED["eta_T"], caption, rtol=W_F2_RTOL),
                               ours=plus))
    return rows


# ------------------------------------------------------------------------ W-EPS (footnote 3)

def _judge_w_eps(*, paper: float, readings: dict, explained: str = "", accountant: str | None = None) -> Judgement:
    """``readings``: accountant name -> our epsilon for one epsilon_bar. The paper's code is an image, so
    its accountant is unknown: the reading closest to the printed value (or ``accountant``, the one every row
    shows) is judged within claim W-EPS's tolerance (:data:`W_EPS_ABS`, half a unit of the printed two
    decimals), every reading listed in the note. ``explained``: the protocol's other readings
    (:func:`.readings.note`), appended to the note; it never changes the verdict."""
    if not readings:
        raise ValueError("w-eps needs at least one accountant reading")
    if accountant is not None and accountant not in readings:
        raise ValueError(f"accountant must be one of {', '.join(readings)}, got {accountant!r}")
    best = accountant or min(readings, key=lambda k: abs(float(readings[k]) - paper))
    ours = float(readings[best])
    j = judge_exact(ours, paper, atol=W_EPS_ABS, what="half a unit of the printed two decimals")
    which = ("the accountant closest over all five values" if accountant else "the accountant closest to the printed value")
    remark = (f"; ours is {which}, {ACCOUNTANT_NAMES.get(best, best)}; all: "
              + ", ".join(f"{ACCOUNTANT_NAMES.get(k, k)} {float(x):.3f}" for k, x in sorted(readings.items()))
              + (f"; {explained}" if explained else ""))
    return j.for_row(f"{ours:.3f} ({ACCOUNTANT_SHORT.get(best, best)})", remark=remark,
                     printed=f"{paper:g} (Wu et al., Sec. 6, footnote 3)")


#: the accountants behind the W-EPS readings, named for the reader (the accounting page's
#: recomputation is the RDP accountant with the improved conversion)
ACCOUNTANT_NAMES = {
    "rdp-improved": "RDP accountant, dp-accounting's improved RDP-to-DP conversion",
    "rdp-classic": "RDP accountant, classic conversion min_a rdp(a) + ln(1/delta)/(a-1) on TF-Privacy's orders",
    "pld": "PLD accountant",
}
ACCOUNTANT_SHORT = {"rdp-improved": "RDP, improved conversion", "rdp-classic": "RDP, classic conversion", "pld": "PLD"}


def w_eps_rows(table: Sequence[dict], protocol_readings: dict | None = None) -> list[dict]:
    """Paper-vs-ours rows for W-EPS (Wu et al., Sec. 6 footnote 3: the moments-accountant epsilons of
    Thm 4.1's noise at each epsilon_bar; nothing is trained): one row per epsilon_bar of the main-text
    B_delta reading of ``table`` (:func:`dpcompanion.claims.w_adp_eps.w_eps_table`), one accountant
    headlining every row. ``protocol_readings`` (:func:`dpcompanion.claims.w_adp_eps.w_eps_readings`):
    the footnote's natural readings; each row's note names the closest (its ``reading`` field carries it)
    and the one closest over all the rows. The verdict stays the stated protocol's."""
    main = [r for r in table if r["b_delta"] == "main"]
    ebs = sorted({float(r["epsilon_bar"]) for r in main})
    papers_of = {}
    for eb in ebs:
        papers = {float(r["paper"]) for r in main if float(r["epsilon_bar"]) == eb}
        if len(papers) != 1:
            raise ValueError(f"w-eps rows at epsilon_bar {eb} disagree on the printed value: {sorted(papers)}")
        papers_of[eb] = papers.pop()
    joint = _w_eps_joint(papers_of, protocol_readings) if protocol_readings else ""
    # one accountant headlines every row: the one whose largest deviation over the five values is smallest
    accs = sorted({r["accountant"] for r in main})
    worst = {a: max(abs(float(r["epsilon_accountant"]) - papers_of[float(r["epsilon_bar"])]) for r in main
                    if r["accountant"] == a) for a in accs}
    headline = min(accs, key=lambda a: worst[a])
    out = []
    for eb in ebs:
        sel = [r for r in main if float(r["epsilon_bar"]) == eb]
        c = None
        if protocol_readings:
            c = rd.closest(papers_of[eb], [rd.Reading(*x) for x in protocol_readings[eb]], atol=W_EPS_ABS)
        row = _row("w-eps/epsilon", sizes_match=True, item=f"epsilon_bar = {eb:g}", paper=papers_of[eb],
                   readings={r["accountant"]: float(r["epsilon_accountant"]) for r in sel}, accountant=headline,
                   explained="" if c is None else rd.note(c, tried="footnote 3's protocol varied, listed on the "
                                                                     "errata page") + joint)
        if c is not None:
            row["reading"] = rd.field(c)
        out.append(row)
    return out


#: how the W-EPS notes summarise the readings tried (:data:`dpcompanion.claims.w_adp_eps.W_EPS_READING_GRID`)
W_EPS_TRIED = ("the stated protocol (T 11700, N 50000, batch 256, Poisson, delta 1e-5, main-text B_delta) under PLD "
                "and RDP with the improved and the classic conversion; every combination of T in {11700, 11719, "
                "11760}, N in {50000, 60000}, delta in {1e-5, 1/N}, B_delta main or appendix, RDP improved or classic "
                "conversion; sampling without replacement; TF-Privacy's orders with the improved conversion")


def _w_eps_joint(papers_of: dict, protocol_readings: dict) -> str:
    """The one reading closest over every epsilon_bar (smallest largest deviation), as a clause."""
    names = [n for n, _, _ in protocol_readings[next(iter(papers_of))]]
    worst = {n: max(abs(dict((m, v) for m, v, _ in protocol_readings[eb])[n] - p) for eb, p in papers_of.items())
             for n in names}
    best = min(names, key=lambda n: worst[n])
    return f"; over all {len(papers_of)} rows the closest single reading is {best} (largest deviation {worst[best]:.3g})"


RULES: tuple[Rule, ...] = (
    Rule("w-eps/epsilon", "moments-accountant epsilon of Thm 4.1's noise (epsilon = 16 epsilon_bar)",
         "Wu et al., Sec. 6 footnote 3: 0.29, 0.43, 0.57, 1.23, 3.24",
         f"the closest of our accountants within {W_EPS_ABS:g} (half a unit of the printed precision, as claim W-EPS "
         f"of the claims registry) agrees, else disagrees", _judge_w_eps,
         case=Case("Wu et al., footnote 3: epsilon 0.29 at epsilon_bar 0.8",
                   {"paper": 0.29, "readings": {"pld": 0.2941, "rdp-improved": 0.24}},
                   {"paper": 0.29, "readings": {"pld": 0.6, "rdp-improved": 0.01}})),
    Rule("w-f2/iterations-per-epoch", "iterations per epoch (50000 images, batch 256)", "Wu et al., Sec. 6",
         "exact integer match", _judge_iterations,
         case=Case("Wu et al., Sec. 6: 196 iterations per epoch", {"ours": 196}, {"ours": 195})),
    Rule("w-f2/T-by-epochs", "T for 60/120/200 epochs (Sec. 6)", "Wu et al., Sec. 6", "exact integer match", _judge_T,
         case=Case("Wu et al., Sec. 6: T = 23520 for 120 epochs",
                   {"epochs": 120, "ours": 23520}, {"epochs": 120, "ours": 23400})),
    Rule("w-f2/T-footnote", "T for 60 epochs (footnote 3, Sec. 6.2)", "Wu et al., footnote 3, Sec. 6.2",
         "exact integer match", _judge_T_footnote,
         case=Case("Wu et al., footnote 3: T = 11700 for 60 epochs", {"ours": 11700}, {"ours": 11760})),
    Rule("w-f2/eta-T", "0.1 - a_T sqrt(t) at t = T", "Wu et al., Fig. 2 caption, Table 1: eta_T = 1e-10",
         f"relative {W_F2_RTOL:g}", _judge_eta_T,
         case=Case("Wu et al., Fig. 2: eta_T = 1e-10", {"ours": 1e-10 * (1 + 1e-9)}, {"ours": 0.2})),
    Rule("w-f2/table4-caption", "Table 4 caption's 0.1 + a_T sqrt(t) at t = T (60 epochs)",
         "Wu et al., Table 4 caption: eta_T = 1e-10", f"relative {W_F2_RTOL:g}", _judge_caption_plus,
         case=Case("Wu et al., Table 4 caption: eta_T = 1e-10", {"ours": 1e-10}, {"ours": 0.2 - 1e-10})),
)


def _row(rule_id: str, **kw) -> dict:
    """One paper-vs-ours row of this module's rule ``rule_id`` (:func:`.rule.row_of`)."""
    by_id = {r.id: r for r in RULES}
    if rule_id not in by_id:
        raise ValueError(f"rule must be one of {', '.join(by_id)}, got {rule_id!r}")
    return row_of(by_id[rule_id], **kw)


# ------------------------------------------------------------------------ W-EPS: the constants footnote 3 leaves open

#: named values the footnote's open constants may have come from
W_EPS_N_CANDIDATES = (rd.Candidate("CIFAR-10's training set less a 5,000-image validation split", 45000),
                      rd.Candidate("CIFAR-10's training set (Sec. 6, the stated value)", 50000),
                      rd.Candidate("MNIST's training set (TF-Privacy's tutorial), or CIFAR-10 with its test images",
                                   60000))
W_EPS_T_CANDIDATES = (rd.Candidate("footnote 3's 11,700 steps (the stated value)", 11700),
                      rd.Candidate("60 epochs of 196 batches (Sec. 6)", 11760),
                      rd.Candidate("120 epochs (Sec. 6)", 23520), rd.Candidate("200 epochs (Sec. 6)", 39200))
#: TF-Privacy's MNIST tutorial's noise multiplier
TF_TUTORIAL_Z = 1.1


def _w_eps_stated():
    from dpcompanion.claims.w_adp_eps import W_EPS_PAPER
    from dpcompanion.theory import adp_accounting as adp_acc

    w6 = adp_acc.W_SEC6
    main = adp_acc.w_moments_epsilons(b_delta="main")
    return w6, adp_acc, tuple(W_EPS_PAPER), [r["epsilon_bar"] for r in main], [r["noise_multiplier"] for r in main]


@functools.cache
def w_eps_fits() -> list[dict]:
    """The constants W's footnote 3 leaves open, fitted to its five quoted epsilons
    (:func:`.readings.fit_constants`), under each moments accountant's conversion (RDP
    with dp-accounting's improved or TF-Privacy's classic conversion; the footnote names the
    moments accountant): the data size the accountant was given (the sampling rate 256/N, the
    noise as Thm 4.1 gives it for N = 50,000), the number of steps, one noise constant
    ``K = z epsilon_bar`` (Thm 4.1's form ``z proportional to 1/epsilon_bar``), the data size and
    ``K`` together, and per epsilon_bar the noise multiplier that gives the quoted value. Each
    is :func:`.readings.fit_field` with the nearest named value (a library's default, a
    tutorial's constant, another number of the paper). Computed once per process (about 20 s)."""
    w6, adp_acc, paper, ebs, z0 = _w_eps_stated()
    q0, T0, d0 = w6["batch_size"] / w6["N"], w6["T"], w6["delta"]
    K0 = z0[0] * ebs[0]
    K_app = adp_acc.w_moments_epsilons(epsilon_bar=[ebs[0]], b_delta="appendix")[0]["noise_multiplier"] * ebs[0]
    K_60 = adp_acc.w_moments_epsilons(epsilon_bar=[ebs[0]], N=60000)[0]["noise_multiplier"] * ebs[0]
    K_cands = (rd.Candidate("Thm 4.1's noise, main-text B_delta (the stated value)", K0),
               rd.Candidate("Thm 4.1's noise, the appendix's B_delta", K_app),
               rd.Candidate("Thm 4.1's noise for N = 60,000", K_60))
    out = []
    for conv in ("improved", "classic"):
        def eps(z, q=q0, T=T0):
            return adp_acc.moments_epsilon(z, q=q, T=T, delta=d0, conversion=conv)
        ctx = f"RDP, {conv} conversion"
        fN = rd.fit_constants(paper, lambda N: [eps(z, q=w6["batch_size"] / N) for z in z0], names=["N"],
                              bounds=[(5000.0, 1e6)], log=[True], integer=[True], decimals=2,
                              candidates=[W_EPS_N_CANDIDATES], context=f"{ctx}; the accountant's data size")
        fT = rd.fit_constants(paper, lambda T: [eps(z, T=int(round(T))) for z in z0], names=["T"],
                              bounds=[(1000.0, 1e5)], log=[True], integer=[True], decimals=2,
                              candidates=[W_EPS_T_CANDIDATES], context=f"{ctx}; the number of steps")
        fK = rd.fit_constants(paper, lambda K: [eps(K / eb) for eb in ebs], names=["K"], bounds=[(1.0, 20.0)],
                              log=[True], decimals=2, candidates=[K_cands],
                              context=f"{ctx}; one noise constant, z = K / epsilon_bar")
        fNK = rd.fit_constants(paper, lambda N, K: [eps(K / eb, q=w6["batch_size"] / N) for eb in ebs],
                               names=["N", "K"], bounds=[(5000.0, 1e6), (1.0, 20.0)], log=[True, True],
                               integer=[True, False],
                               start=[fN.values[0], fK.values[0]], decimals=2,
                               candidates=[W_EPS_N_CANDIDATES, K_cands],
                               context=f"{ctx}; the accountant's data size and one noise constant together")
        out += [(f, ctx, None) for f in (fN, fT, fK, fNK)]
        for eb, p, z in zip(ebs, paper, z0):
            out.append((rd.fit_constants([p], lambda zz: [eps(zz)], names=["z"], bounds=[(0.3, 50.0)], log=[True],
                                         decimals=2, candidates=[(rd.Candidate("Thm 4.1's noise (stated)", z),
                                                                  rd.Candidate("TF-Privacy's MNIST tutorial", TF_TUTORIAL_Z))],
                                         context=f"{ctx}; the noise multiplier at epsilon_bar {eb:g} alone"), ctx, eb))
    return [{**rd.fit_field(f), "accountant": ctx, "fitted_what": f.context.split("; ", 1)[1], "epsilon_bar": eb,
             "thm41_K": K0} for f, ctx, eb in out]


def w_eps_best_fit(fits: Sequence[dict]) -> dict:
    """The fit of :func:`w_eps_fits` over all five values (not a per-value noise multiplier)
    with the smallest deviation."""
    return min((f for f in fits if len(f["printed"]) > 1), key=lambda f: f["deviation"])


def _v(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def w_eps_fits_markdown(fits: Sequence[dict]) -> tuple[str, str]:
    """The W-EPS fits (:func:`w_eps_fits`) for a page: ``(lead, details)``, a generated
    sentence on the best fit over all five values, and the paragraph on its constants' named
    values with one table row per fit."""
    best = w_eps_best_fit(fits)
    vals = ", ".join(f"{k} = {_v(v)}" for k, v in best["constants"].items())
    per_value = {}
    for f in fits:
        if f["epsilon_bar"] is not None:
            per_value.setdefault(f["accountant"], []).append(f["constants"]["z"] * f["epsilon_bar"])
    spread = "; ".join(f"{min(k):.3g} to {max(k):.3g} ({acc})" for acc, k in per_value.items())
    nat = "; ".join(f"{n['constant']} lies {n['distance']:.1%} from {_v(n['value'])}, {n['name']}, "
                    f"{'a natural source' if n['natural'] else 'not a natural source'} (plugged in, largest "
                    f"deviation {n['deviation']:.1%})" for n in best["nearest"] if n["name"])
    lead = (f"**What the footnote leaves open, fitted.** The closest any fit comes to all five quoted values is "
            f"{best['fitted_what']} under {best['accountant']}: {vals}, largest relative deviation "
            f"{best['deviation']:.1%} ("
            + ("every fitted value rounds to the quoted one" if best["reproduces"] else
               "the fitted values do not all round to the quoted ones") + ").")
    details = (f"{nat[:1].upper() + nat[1:]}. Only a separate noise multiplier per epsilon_bar reproduces every "
               f"value; their products z epsilon_bar run from {spread}, where Thm 4.1's noise has one constant "
               f"K = {best['thm41_K']:.4g}.")
    rows = ["| accountant | fitted | best fit | largest relative deviation | rounds to the quoted? | nearest named value "
            "(its deviation) | natural source? |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for f in fits:
        acc, what = f["accountant"], f["fitted_what"]
        near = "; ".join(f"{n['constant']}: {_v(n['value'])}, {n['name']} ({n['deviation']:.1%})"
                         for n in f["nearest"] if n["name"])
        natural = ", ".join(f"{n['constant']} {'yes' if n['natural'] else 'no'}" for n in f["nearest"] if n["name"])
        rows.append(f"| {acc} | {what} | {', '.join(f'{k} = {_v(v)}' for k, v in f['constants'].items())} | "
                    f"{f['deviation']:.2%} | {'yes' if f['reproduces'] else 'no'} | {near} | {natural} |")
    return lead, details + "\n\n" + "\n".join(rows) + "\n"
