"""Every verdict rule of the experiment pages, Hong et al. and Wu et al., in one registry.

:data:`RULES` maps ``"<experiment id>/<panel>"`` to a :class:`~.rule.Rule` (``paper``: only
what the paper printed, quoted with version, figure/table and panel; ``tolerance``; ``judge``).
The rules themselves are in :mod:`.hong_rules` (both versions of Hong et al., and H-X-EER) and
:mod:`.wu_rules` (Wu et al.), those of pages that check our own code (the privacy audit) in :mod:`.audit_rules`;
:mod:`.rule` holds what they share and :mod:`.rows` turns a verdict into a table row.
Experiment modules keep a thin ``verdict_rows(payload)`` that extracts our measurements and
calls :func:`compare`; nothing else decides a verdict.

:func:`compare` turns a rule and measurements into one row of the paper-vs-ours table
(:func:`dpcompanion.book.report.paper_vs_ours`). When our sizes differ from the paper's
(``sizes_match=False``) the row is not judged: its verdict is ``not comparable`` and its
note starts with :data:`NOT_COMPARED`, naming both sizes; what the rule would say at our
sizes is still reported. A rule about a shape (no printed number to match) is called with
``sizes_match=True`` whatever our sizes.

One way of judging (issue 21, :mod:`.rule`): an effect measured over runs is judged by its
95% interval against zero and the paper's value (:func:`.rule.judge_effect`: ``agrees``,
``partly`` with the ratio, ``disagrees``, ``inconclusive`` with the runs that would separate
them at 80% power); a claim of no difference by TOST against a stated smallest effect
(:func:`.rule.judge_equivalence`); a row true by construction is ``identity``
(:func:`.rule.judge_identity`); a number without sampling noise against a printed one within a
stated tolerance (:func:`.rule.judge_exact`). Every judge returns one :class:`.rule.Judgement`
(issue 32, item 3; its verdict one of :data:`.rule.VERDICTS`): :func:`compare` puts its numbers
in the row's ``stats`` (estimate, 95% CI, n, margin, smallest detectable effect), which the reproduction report
(:mod:`.reproduction`, ``python -m dpcompanion verdicts``) and the pages' power tables read.
The tuning protocol caps a verdict (:func:`tuning_cap`).

Design and comparability (issue 33): every comparison of two arms declares its design in one
table (:data:`.rows.DESIGN_OF`: ``paired`` where the arms share seeds, else ``independent``,
each with the reason found in the experiment code), and one estimator serves both papers
(:func:`.rule.estimate_effect`: the paired t interval of the per-seed differences, or Welch's);
power and runs needed use the same spread. A row compares the paper's *size* only where our
setup (data set, model, trained layers, number of steps within :data:`.scale.STEPS_RATIO`) is
the paper's; otherwise its *direction* alone (:data:`.rows.COMPARABLE_OF`,
:func:`.scale.comparability`), and size never makes it ``disagrees``. Each row carries
``design`` and ``comparable``. The paper's and our scale per
dimension are declared in :mod:`.scale`.

This package judges numbers, it does not make them: it is left out of the results store's
code hash (:data:`dpcompanion.experiments.store.CODE_HASH_EXCLUDE`), so changing a rule
never makes a stored result stale.
"""

from __future__ import annotations

from typing import Any

from dpcompanion.experiments.comparisons import audit_rules, hong_rules, theory, wu_rules
from dpcompanion.experiments.comparisons.rows import apply_tuning_cap, plan_of, row_of, tuning_cap, tuning_for_row
from dpcompanion.experiments.comparisons.rule import NOT_COMPARED, VERDICTS, Z, Judgement, Rule
from dpcompanion.experiments.protocols import wu_paper

__all__ = ["Z", "NOT_COMPARED", "VERDICTS", "Judgement", "Rule", "RULES", "tuning_cap", "tuning_for_row", "apply_tuning_cap", "compare", "rule_by_id", "verdict_of", "experiment_of", "rules_for", "plan_of", "gap_verdict",
           "w_t1245_cell_rows"]


def _registry(*groups) -> dict[str, Rule]:
    out: dict[str, Rule] = {}
    for g in groups:
        for r in g:
            if r.id in out:
                raise RuntimeError(f"verdict rule {r.id} defined twice")
            if "/" not in r.id:
                raise RuntimeError(f"verdict rule id {r.id!r} is not '<experiment id>/<panel>'")
            out[r.id] = r
    return out


RULES: dict[str, Rule] = _registry(hong_rules.RULES, wu_rules.RULES, audit_rules.RULES, theory.RULES)


def experiment_of(rule_id: str) -> str:
    """The experiment (or figure) ID a rule belongs to: the part before the ``/``."""
    return rule_id.split("/", 1)[0]


def rules_for(experiment_id: str) -> list[Rule]:
    """The rules of one experiment page, in registry order."""
    return [r for k, r in RULES.items() if experiment_of(k) == experiment_id]


def rule_by_id(rule_id: str) -> Rule:
    """The registered rule ``rule_id``; ValueError naming the registered ones otherwise (named
    apart from the module :mod:`.rule`, which a function ``rule`` used to hide)."""
    if rule_id not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}, got {rule_id!r}")
    return RULES[rule_id]


def compare(rule_id: str, *, sizes_match: bool, sizes_note: str = "", item: str | None = None,
            tuning: Any = None, **measured: Any) -> dict[str, str]:
    """One paper-vs-ours row for ``rule_id`` (:func:`.rows.row_of` of the registry's rule).
    ``sizes_match=False``: not judged (verdict ``not comparable``, note ``not compared (sizes
    differ): <sizes_note>``), though our numbers are still shown. ``tuning``: the payload's
    tuning list, whose protocol caps the verdict (:func:`tuning_cap`).

    >>> r = compare("h-f-curv/sharp-vs-flat", sizes_match=True, sharp=1.0, sharp_se=0.1, flat=0.5, flat_se=0.1)
    >>> r["verdict"], r["rule"], round(r["stats"]["ci_low"], 3)
    ('agrees', 'h-f-curv/sharp-vs-flat', 0.223)
    >>> compare("h-f-curv/sharp-vs-flat", sizes_match=False, sizes_note="N 10 vs 1000", sharp=1.0, sharp_se=0.1,
    ...         flat=0.5, flat_se=0.1)["note"].split(".")[0]
    'not compared (sizes differ): N 10 vs 1000'
    """
    return row_of(rule_by_id(rule_id), sizes_match=sizes_match, sizes_note=sizes_note, item=item, tuning=tuning, **measured)


def gap_verdict(cell: dict, *, metric: str, item: str | None = None,
                plan: Any = None) -> tuple[int, tuple | None, dict[str, str]]:
    """Rule ``w-t1245/gap`` on one cell of W's Tables 1, 2, 4 and 5 (``cell``: a w-t1245 payload
    cell, ``metric``: ``best`` or ``last``): ``(table, the paper's printed row or None, the
    row of :func:`compare`)``. Comparable only at the paper's epoch counts
    (:data:`~dpcompanion.experiments.protocols.wu_paper.PAPER_EPOCHS`) with >= 2 seeds per
    method. The w-t1245 page's cell table and the verdicts report both judge cells here.
    ``plan``: the experiment's group-sequential plan (:func:`.rows.plan_of`), if any."""
    printed = wu_paper.row(family=cell["family"], metric=metric, epsilon_bar=cell["epsilon_bar"], clip=cell["clip"],
                           epochs=cell["epochs"])
    table = wu_paper.TABLE_OF[(cell["family"], metric)]
    adp, dp = cell[f"{metric}_adp"], cell[f"{metric}_dp"]
    row = compare("w-t1245/gap", sizes_match=cell["epochs"] in wu_paper.PAPER_EPOCHS and len(adp) >= 2 and len(dp) >= 2,
                  sizes_note=f"{cell['epochs']} epochs, {len(adp)} seeds vs {wu_paper.PAPER_EPOCHS} epochs, 5 runs",
                  item=item, table=table, printed=printed, adp=adp, dp=dp, plan=plan)
    return table, printed, row


def w_t1245_cell_rows(payload: dict) -> list[dict]:
    """The w-t1245 verdicts report's rows per cell (rule ``w-t1245/gap``, :func:`gap_verdict`),
    best then last metric, as the page's cell table judges them."""
    out = []
    for metric in ("best", "last"):
        for c in payload["cells"]:
            table = wu_paper.TABLE_OF[(c["family"], metric)]
            out.append(gap_verdict(
                c, metric=metric, plan=plan_of("w-t1245"), item=f"Table {table}: gain ADP - DP, {c['family']}, C_G {c['clip']:g}, "
                                       f"eps_bar {c['epsilon_bar']:g}, {c['epochs']} epochs")[2])
    return out


def verdict_of(rule_id: str, **measured: Any) -> str:
    """The verdict alone of :func:`compare` at matching sizes (for a page's detailed table)."""
    return compare(rule_id, sizes_match=True, **measured)["verdict"]
