"""Every verdict rule of the pages, Hong et al. and Wu et al., in one registry.

:func:`all_rules` maps ``"<experiment id>/<panel>"`` to a :class:`~.rule.Rule`. Each experiment declares
its own rules in its module (:attr:`dpcompanion.experiments.base.Experiment.rules`); the pages without an
experiment declare theirs in :mod:`.theory` (theory pages) and :mod:`.wu_rules` (W-EPS, W-F2). :mod:`.rule`
holds what a rule is made of, its judges, and how a judgement becomes a row (criteria, then one word and
one outcome from one declared table). Experiment modules keep a thin ``verdict_rows(payload)`` that extracts
our measurements and calls :func:`compare`; nothing else decides a verdict.

When our sizes differ from the paper's (``sizes_match=False``) a row is not judged: its verdict is ``not
comparable`` and its note starts with :data:`NOT_COMPARED`; a rule about a shape (no printed number to match)
is called with ``sizes_match=True`` whatever our sizes. A row compares the paper's *size* only where our setup
is the paper's (the rule's ``comparable``, else :func:`dpcompanion.experiments.scale_tables.comparability`),
otherwise its *direction* alone; the tuning protocol caps a verdict (:func:`tuning_cap`).

This package judges numbers, it does not make them: it is left out of the results store's code hash
(:data:`dpcompanion.experiments.store.CODE_HASH_EXCLUDE`). A rule an experiment declares is part of its module
and so of its code hash.
"""

from __future__ import annotations

from typing import Any

from dpcompanion.experiments import base
from dpcompanion.experiments.comparisons import theory, wu_rules
from dpcompanion.experiments.comparisons.rule import (Judgement, Margin, NOT_COMPARED, Rule, VERDICTS, Z,
                                                      apply_tuning_cap, row_of, tuning_cap, tuning_for_row)

__all__ = ["Z", "NOT_COMPARED", "VERDICTS", "Judgement", "Margin", "Rule", "all_rules", "PAGE_RULES", "tuning_cap",
           "tuning_for_row", "apply_tuning_cap", "compare", "rule_by_id", "verdict_of", "experiment_of", "rules_for",
           "design_of", "plan_of"]

#: the rules of the pages that have no experiment (theory pages, W-EPS, W-F2): declared in
#: :mod:`.theory` and :mod:`.wu_rules`; every experiment declares its own (:attr:`.base.Experiment.rules`)
PAGE_RULES: tuple[Rule, ...] = tuple(theory.RULES) + tuple(wu_rules.RULES)


def all_rules() -> dict[str, Rule]:
    """Every verdict rule by id: those of the pages without an experiment (:data:`PAGE_RULES`),
    then each experiment's own (:func:`.base.all_experiments`, registered ones included);
    RuntimeError for an id declared twice."""
    out: dict[str, Rule] = {}
    groups = [PAGE_RULES] + [exp.rules for exp in base.all_experiments().values()]
    for g in groups:
        for r in g:
            if r.id in out:
                raise RuntimeError(f"verdict rule {r.id} defined twice")
            out[r.id] = r
    return out


def experiment_of(rule_id: str) -> str:
    """The experiment (or figure) ID a rule belongs to: the part before the ``/``."""
    return rule_id.split("/", 1)[0]


def rules_for(experiment_id: str) -> list[Rule]:
    """The rules of one page, in registry order."""
    return [r for k, r in all_rules().items() if experiment_of(k) == experiment_id]


def rule_by_id(rule_id: str) -> Rule:
    """The registered rule ``rule_id``; ValueError naming the registered ones otherwise."""
    rules = all_rules()
    if rule_id not in rules:
        raise ValueError(f"rule must be one of {', '.join(rules)}, got {rule_id!r}")
    return rules[rule_id]


def design_of(rule_id: str) -> str | None:
    """The design of rule ``rule_id``'s comparison (its :attr:`.rule.Rule.design`), None where it
    compares no two arms by seed.

    >>> design_of("w-t36/gap"), design_of("w-f4/decay"), design_of("w-eps/epsilon")
    ('paired', 'independent', None)
    """
    return rule_by_id(rule_id).design_name


def plan_of(experiment_id: str):
    """The declared group-sequential plan of an experiment (its :attr:`.base.Experiment.sequential`),
    None if none."""
    return base.get(experiment_id).sequential


def compare(rule_id: str, *, sizes_match: bool, sizes_note: str = "", item: str | None = None,
            tuning: Any = None, **measured: Any) -> dict[str, str]:
    """One paper-vs-ours row for ``rule_id`` (:func:`.rule.row_of` of the registry's rule).
    ``sizes_match=False``: not judged (verdict ``not comparable``, note ``not compared (sizes
    differ): <sizes_note>``), though our numbers are still shown. ``tuning``: the payload's
    tuning list, whose protocol caps the verdict (:func:`tuning_cap`).

    >>> r = compare("h-f-curv/sharp-vs-flat", sizes_match=True, sharp=1.0, sharp_se=0.1, flat=0.5, flat_se=0.1)
    >>> r["verdict"], r["outcome"], r["judge_verdict"], round(r["stats"]["ci_low"], 3)
    ('reproduced', 'success', 'agrees', 0.223)
    >>> compare("h-f-curv/sharp-vs-flat", sizes_match=False, sizes_note="N 10 vs 1000", sharp=1.0, sharp_se=0.1,
    ...         flat=0.5, flat_se=0.1)["note"].split(".")[0]
    'not compared (sizes differ): N 10 vs 1000'
    """
    return row_of(rule_by_id(rule_id), sizes_match=sizes_match, sizes_note=sizes_note, item=item, tuning=tuning, **measured)


def verdict_of(rule_id: str, **measured: Any) -> str:
    """The verdict alone of :func:`compare` at matching sizes (for a page's detailed table)."""
    return compare(rule_id, sizes_match=True, **measured)["verdict"]
