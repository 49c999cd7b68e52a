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

from dpcompanion.experiments.comparisons.reproduction import (PAGE_RULES, all_rules, compare, design_of, experiment_of,
                                                              plan_of, rule_by_id, rules_for, verdict_of)
from dpcompanion.experiments.comparisons.rule import (Judgement, Margin, NOT_COMPARED, Rule, VERDICTS, Z,
                                                      apply_tuning_cap, tuning_cap, tuning_for_row)

__all__ = ["Z", "NOT_COMPARED", "VERDICTS", "Judgement", "Margin", "Rule", "all_rules", "PAGE_RULES", "tuning_cap",
           "tuning_for_row", "apply_tuning_cap", "compare", "rule_by_id", "verdict_of", "experiment_of", "rules_for",
           "design_of", "plan_of"]
