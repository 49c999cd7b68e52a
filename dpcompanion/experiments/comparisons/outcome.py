"""A row's verdict as criteria first, then one word and one outcome from one declared table.

Every row of the book (:func:`.rows.row_of`, :mod:`.reproduction`) computes, stores and shows
separately (:data:`CRITERIA`, each with its allowed values):

* ``claim``: what the paper's statement is: an ``effect`` (a direction, with or without a
  printed size), ``no difference``, a printed ``value`` without sampling noise (a closed form,
  an accountant), a ``check`` the rule decides itself (a shape, a count), an ``own check`` (our
  own code, not a claim of the paper), a row true by ``construction``, or ``none`` (a row
  shown but never judged: the quantities differ in kind, or there is no result);
* ``paper_evidence``: is the paper's own printed effect clear of zero: ``clear`` (a spread is
  printed and |gap| > 2 se, both arms above chance), ``within noise`` (|gap| <= 2 se),
  ``at chance`` (an arm not above chance), ``no spread`` (a gap printed without its spread),
  ``stated`` (a direction the text or a figure states, no number), ``exact`` (a printed value
  without sampling noise), ``none`` (nothing of the paper's to weigh);
* ``setup``: ``paper's`` (the paper's data, model and scale, or computed at its parameters),
  ``reduced`` (the same data and model, smaller), ``another`` (another data set, model or tuning protocol);
* ``sign``: our interval excludes zero on the ``paper's side``, on the ``other side``, or
  ``neither``; ``n/a`` for a row without an interval about a direction;
* ``size``, where the paper printed one: ours ``compatible`` with it, ``smaller``, ``larger``
  (the paper's size ruled out), ``not testable`` (another setup), ``none printed``; ``n/a``;
* ``absence``: TOST puts our effect within its margin of zero (``shown``), ``not shown``, or
  ``n/a`` (no margin, or no interval);
* ``check``: the rule's own decision where it judges no interval (``pass``, ``part``, ``fail``,
  ``undecided``; ``n/a`` for a row judged by the criteria above);
* ``cap``: what the protocol caps: ``none``, ``tuning: at most partial`` (unequal searches),
  ``tuning: not judged`` (an optimum at an unstated grid edge, or chosen on the reported seeds),
  ``sizes differ`` (the rule's sizes are not ours); and, for a row that pools the cells of a
  table (:func:`cells_cap`), what its cells allow: ``cells: at most partial`` (a judged cell is
  not reproduced), ``cells: not reproduced`` (half or more of the judged cells are not).

A table claim is judged by its pooled gap *and* by its cells: the pooled row is a success only
if its pooled gap is (the lines below) and no cell judged on its own is a failure; one failing
cell makes it at most partial, and when half or more of the judged cells fail, the table is not
reproduced whatever its pooled gap. The cells only ever lower the pooled row, never raise it (an
absent pooled gain stays a failure however its cells read): a pooled mean cannot stand for
cells that contradict it. A quantified claim over cells ("every c > 0 beats c = 0") is judged
by an intersection-union test in its rule (each cell at the fixed level; W-F4).

:data:`TABLE` maps these to the row's word (:data:`VERDICTS`) and its ``outcome``
(:data:`OUTCOMES`): the first line that matches decides (:func:`decide`). Its principle: nothing
a reader could take for success where the paper printed a size that we did not find, in a
matching setup, or could not test; an absent effect against a claimed one is a failure to
reproduce, never a kind of agreement. ``equivalent`` is the word only where the paper claims
no difference.
"""

from __future__ import annotations

import math
from typing import Mapping

__all__ = ["CRITERIA", "OUTCOMES", "VERDICTS", "TABLE", "ANY", "decide", "table_markdown", "sign_of", "size_of",
           "evidence_of", "OWN_CODE_RULES", "CHECK_OF", "claim_of", "cells_cap"]

#: every criterion of a row and its allowed values
CRITERIA: dict[str, tuple[str, ...]] = {
    "claim": ("effect", "no difference", "value", "check", "own check", "construction", "none"),
    "paper_evidence": ("clear", "within noise", "at chance", "no spread", "stated", "exact", "none"),
    "setup": ("paper's", "reduced", "another"),
    "sign": ("paper's side", "other side", "neither", "n/a"),
    "size": ("compatible", "smaller", "larger", "not testable", "none printed", "n/a"),
    "absence": ("shown", "not shown", "n/a"),
    "check": ("pass", "part", "fail", "undecided", "n/a"),
    "cap": ("none", "tuning: at most partial", "tuning: not judged", "sizes differ", "cells: at most partial",
            "cells: not reproduced"),
}

#: every outcome, the one count of the book
OUTCOMES = ("success", "partial", "failure", "undecided", "not judged")

#: a wildcard in :data:`TABLE`
ANY = None

#: the one declared table: ``(conditions, word, outcome)``, the first line whose conditions all
#: hold decides; a condition maps a criterion to the values it accepts (a criterion not named
#: accepts any value)
TABLE: tuple[tuple[Mapping[str, tuple[str, ...]], str, str], ...] = (
    # nothing to judge
    ({"claim": ("none",)}, "not judged", "not judged"),
    ({"cap": ("sizes differ", "tuning: not judged")}, "not judged", "not judged"),
    ({"claim": ("construction",), "check": ("pass", "part", "undecided", "n/a")}, "holds by construction", "not judged"),
    ({"claim": ("construction",), "check": ("fail",)}, "check fails", "failure"),
    # our own code
    ({"claim": ("own check",), "check": ("pass",), "cap": ("none",)}, "check passes", "success"),
    ({"claim": ("own check",), "check": ("pass", "part")}, "check passes in part", "partial"),
    ({"claim": ("own check",), "check": ("fail",)}, "check fails", "failure"),
    ({"claim": ("own check",)}, "inconclusive", "undecided"),
    # an effect the paper claims: its own evidence first
    ({"claim": ("effect",), "paper_evidence": ("within noise", "at chance", "no spread")}, "not judged", "not judged"),
    ({"claim": ("effect",), "cap": ("cells: not reproduced",)}, "not reproduced", "failure"),
    ({"claim": ("effect",), "sign": ("other side",)}, "not reproduced", "failure"),
    ({"claim": ("effect",), "absence": ("shown",)}, "not reproduced", "failure"),
    ({"claim": ("effect",), "sign": ("neither", "n/a"), "size": ("smaller", "larger")}, "not reproduced", "failure"),
    ({"claim": ("effect",), "sign": ("neither", "n/a")}, "inconclusive", "undecided"),
    ({"claim": ("effect",), "sign": ("paper's side",), "setup": ("paper's",), "size": ("compatible", "none printed"),
      "cap": ("none",)}, "reproduced", "success"),
    ({"claim": ("effect",), "sign": ("paper's side",)}, "sign only", "partial"),
    # a claim of no difference
    ({"claim": ("no difference",), "absence": ("shown",), "setup": ("paper's",), "cap": ("none",)}, "equivalent",
     "success"),
    ({"claim": ("no difference",), "absence": ("shown",)}, "equivalent in part", "partial"),
    ({"claim": ("no difference",), "check": ("fail",)}, "not reproduced", "failure"),
    ({"claim": ("no difference",)}, "inconclusive", "undecided"),
    # a printed value, or a check the rule decides
    ({"claim": ("value",), "size": ("smaller", "larger")}, "not reproduced", "failure"),
    ({"claim": ("value", "check"), "check": ("fail",)}, "not reproduced", "failure"),
    ({"claim": ("value", "check"), "check": ("undecided",)}, "inconclusive", "undecided"),
    ({"claim": ("value", "check"), "check": ("pass",), "setup": ("paper's",), "cap": ("none",)}, "reproduced",
     "success"),
    ({"claim": ("value", "check"), "check": ("pass", "part")}, "in part", "partial"),
    ({"claim": ("value", "check"), "check": ("n/a",)}, "not judged", "not judged"),
)

#: every word a row may show, each with the one outcome the table gives it
VERDICTS: tuple[str, ...] = tuple(dict.fromkeys(w for _, w, _ in TABLE))


def decide(criteria: Mapping[str, str]) -> tuple[str, str]:
    """``(word, outcome)`` of a row's ``criteria`` by :data:`TABLE` (the first line that matches);
    ValueError for a criterion missing or a value not allowed, RuntimeError if no line matches.

    >>> base = dict(claim="effect", paper_evidence="clear", setup="another", sign="paper's side",
    ...             size="not testable", absence="not shown", check="n/a", cap="none")
    >>> decide(base)
    ('sign only', 'partial')
    >>> decide({**base, "setup": "paper's", "size": "compatible"})
    ('reproduced', 'success')
    >>> decide({**base, "sign": "neither", "absence": "shown"})
    ('not reproduced', 'failure')
    >>> decide({**base, "paper_evidence": "within noise"})
    ('not judged', 'not judged')
    """
    for k, allowed in CRITERIA.items():
        if k not in criteria:
            raise ValueError(f"criteria must name {k}, got {sorted(criteria)}")
        if criteria[k] not in allowed:
            raise ValueError(f"{k} must be one of {', '.join(allowed)}, got {criteria[k]!r}")
    for cond, word, outcome in TABLE:
        if all(criteria[k] in v for k, v in cond.items()):
            return word, outcome
    raise RuntimeError(f"no line of the outcome table matches {dict(criteria)}")


def table_markdown() -> str:
    """:data:`TABLE` as a Markdown table (the book's "how a verdict is decided")."""
    keys = list(CRITERIA)
    out = ["| " + " | ".join(k.replace("_", " ") for k in keys) + " | word | outcome |",
           "| " + " | ".join("---" for _ in keys) + " | --- | --- |"]
    for cond, word, outcome in TABLE:
        out.append("| " + " | ".join(", ".join(cond[k]) if k in cond else "any" for k in keys) + f" | {word} | {outcome} |")
    return "\n".join(out)


def cells_cap(outcomes) -> str:
    """The ``cap`` a pooled row's cells put on it (the module docstring), from the ``outcomes``
    of the cells pooled (:data:`OUTCOMES`; ``not judged`` cells do not count): ``none`` when no
    judged cell is a failure, ``cells: not reproduced`` when half or more of them are, else
    ``cells: at most partial``.

    >>> cells_cap(["partial", "undecided", "not judged"]), cells_cap(["partial", "failure", "undecided"])
    ('none', 'cells: at most partial')
    >>> cells_cap(["failure", "partial", "not judged", "not judged"]), cells_cap([])
    ('cells: not reproduced', 'none')
    """
    judged = [o for o in outcomes if o != "not judged"]
    for o in judged:
        if o not in OUTCOMES:
            raise ValueError(f"a cell's outcome must be one of {', '.join(OUTCOMES)}, got {o!r}")
    fails = sum(1 for o in judged if o == "failure")
    if judged and 2 * fails >= len(judged):
        return "cells: not reproduced"
    return "cells: at most partial" if fails else "none"


# ------------------------------------------------------------------------ the criteria of one judgement

#: rules that check our own code (a closed form against our trainer, a quantity true by our
#: construction, the privacy audit of our trainers), not a claim of either paper
OWN_CODE_RULES = frozenset({
    "audit/claim", "audit/power", "h-f-curv/exact", "h-f-infl/retrained-vs-analytic", "h-x-eer/mc", "h-x-eer/mc-all",
    "h-x-eer-breakdown/control", "h-x-eer-breakdown/clipped", "w-f1/same-epsilon", "w-f1/slower-decay", "w-f2/eta-T"})

#: a judge's own word (:data:`.rule.JUDGE_WORDS`) as the ``check`` criterion
CHECK_OF = {"agrees": "pass", "identity": "pass", "equivalent": "pass", "partly": "part", "disagrees": "fail",
            "inconclusive": "undecided", "not comparable": "n/a"}

#: how far a printed effect must stand from zero, in its printed standard errors, to be clear
EVIDENCE_Z = 2.0


def sign_of(ci_low: float, ci_high: float, direction: int) -> str:
    """Which side of zero our interval excludes, against the paper's ``direction`` (+1 / -1).

    >>> sign_of(0.1, 2.0, 1), sign_of(-2.0, -0.1, 1), sign_of(-0.5, 3.0, -1)
    ("paper's side", 'other side', 'neither')
    """
    pos = ci_low > 0 if direction > 0 else ci_high < 0
    neg = ci_high < 0 if direction > 0 else ci_low > 0
    return "paper's side" if pos else "other side" if neg else "neither"


def size_of(estimate: float, se: float, paper: float, paper_se: float | None, *, crit: float) -> str:
    """Our effect against the paper's printed size: the interval of ``ours - paper`` (our
    ``se`` and the paper's printed one folded in, ``crit`` our critical value) includes zero:
    ``compatible``; else ``smaller`` or ``larger`` in magnitude.

    >>> size_of(1.38, 0.42, 20.47, 0.61, crit=2.1), size_of(2.4, 0.3, 2.5, 0.2, crit=1.96)
    ('smaller', 'compatible')
    """
    s = math.hypot(se, paper_se or 0.0)
    lo, hi = estimate - paper - crit * s, estimate - paper + crit * s
    if lo <= 0 <= hi:
        return "compatible"
    return "smaller" if abs(estimate) < abs(paper) else "larger"


def evidence_of(gap: float, se: float | None, arms_above_chance: bool = True) -> str:
    """The paper's own evidence for a printed gap: ``clear`` when its spread is printed, |gap| >
    :data:`EVIDENCE_Z` se and both arms sit above chance; else why not.

    >>> evidence_of(20.47, 0.61), evidence_of(-0.26, 0.25), evidence_of(0.39, 0.3, False), evidence_of(1.0, None)
    ('clear', 'within noise', 'at chance', 'no spread')
    """
    if not arms_above_chance:
        return "at chance"
    if se is None or not math.isfinite(se) or se <= 0:
        return "no spread"
    return "clear" if abs(gap) > EVIDENCE_Z * se else "within noise"


def claim_of(rule, judgement, *, item: str = "") -> str:
    """What the paper's statement behind a row is (the ``claim`` criterion), from its rule and
    its judgement: see the module docstring."""
    paper = str(getattr(rule, "paper", "")).strip().lower()
    if not rule.judged or judgement.verdict == "not comparable":
        return "none"
    if judgement.verdict == "identity":
        return "construction"
    if rule.id in OWN_CODE_RULES or paper in ("-", "not in the paper") or "not in the paper" in item:
        return "own check"
    if judgement.kind == "effect":
        return "effect"
    if judgement.kind == "equivalence":
        return "no difference"
    if judgement.kind == "exact":
        return "value"
    return "check"


