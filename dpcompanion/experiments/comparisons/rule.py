"""A verdict rule (:class:`Rule`), its judges, and its row of a paper-vs-ours table.

A rule's judge returns one :class:`Judgement`; :func:`row_of` turns it into criteria (:data:`CRITERIA`),
each stored and shown in the row, and the one declared :data:`TABLE` gives the row its word
(:data:`VERDICTS`) and outcome (:data:`OUTCOMES`). The registry of rules is
:mod:`dpcompanion.experiments.comparisons`.

The criteria: ``claim`` (what the paper states: an ``effect``, ``no difference``, a printed ``value``
without sampling noise, a ``check`` the rule decides itself, an ``own check`` of our code, a row true by
``construction``, or ``none``: shown, never judged); ``paper_evidence`` (is the paper's printed effect
clear of zero: ``clear`` when |gap| > 2 printed se and both arms sit above chance); ``setup`` (the
``paper's``, ``reduced``, ``none printed``: an experiment of ours on a claim the paper shows no run of,
``another``); ``sign`` (the side of zero our interval excludes); ``size`` (ours
against the paper's printed size); ``absence`` (TOST puts our effect within its margin); ``check`` (the
rule's own decision where it judges no interval); ``cap`` (what the protocol caps: tuning, sizes, or the
cells of a pooled row, :func:`cells_cap`).

A table claim is judged by its pooled gap *and* its cells: one failing cell makes it at most partial, half
or more failing make it not reproduced; the cells never raise it (a pooled mean cannot stand for cells that
contradict it). The table's principle: nothing a reader could take for success where the paper printed a
size that we did not find, in a matching setup, or could not test; an absent effect against a claimed one
is a failure to reproduce, never a kind of agreement; ``equivalent`` only where the paper claims no
difference.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping

import numpy as np

from dpcompanion.experiments.protocols import wu_paper

__all__ = ["CRITERIA", "OUTCOMES", "TABLE", "VERDICTS", "decide", "table_markdown", "cells_cap", "OWN_CODE_RULES",
           "CHECK_OF", "EVIDENCE_Z", "sign_of", "size_of", "evidence_of", "claim_of", "JUDGE_WORDS", "Z",
           "NOT_COMPARED", "Margin", "Case", "Rule", "by_ratio", "rel_within", "LEVEL", "POWER", "Judgement",
           "critical_value", "mde", "welch_df", "DESIGNS", "COMPARABLE", "Estimate", "estimate_effect", "Pooled",
           "pool_random_effects", "judge_effect", "TOST_ALPHA", "Tost", "tost", "equivalence_runs_factor",
           "with_margin", "judge_equivalence", "judge_identity", "judge_exact", "W_PAPER_RUNS", "W_ACC_MARGIN",
           "W_SPREAD", "H_LOSS", "H_ACC", "TREND", "DIRECTION", "HEADLINE_N", "tuning_cap", "tuning_for_row", "CAP_OF",
           "decided", "apply_tuning_cap", "row_of", "criteria_of"]


# ------------------------------------------------------------------------ the outcome of a row

#: every criterion of a row and its allowed values
CRITERIA: dict[str, tuple[str, ...]] = {
    "claim": ("effect", "no difference", "value", "check", "own check", "construction", "none"),
    "paper_evidence": ("clear", "within noise", "at chance", "no spread", "not printed", "stated", "exact", "none"),
    "setup": ("paper's", "reduced", "none printed", "another"),
    "sign": ("paper's side", "other side", "neither", "n/a"),
    "size": ("compatible", "smaller", "larger", "not testable", "none printed", "n/a"),
    "absence": ("shown", "not shown", "n/a"),
    "check": ("pass", "part", "fail", "undecided", "n/a"),
    "cap": ("none", "tuning: at most partial", "tuning: not judged", "sizes differ", "cells: at most partial",
            "cells: not reproduced"),
}

#: every outcome, the one count of the book
OUTCOMES = ("success", "partial", "failure", "undecided", "not judged")

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
    ({"claim": ("effect",), "paper_evidence": ("within noise", "at chance", "no spread", "not printed")}, "not judged",
     "not judged"),
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
    """The ``cap`` a pooled row's cells (their ``outcomes``; ``not judged`` ones do not count) put
    on it: ``none`` when no judged cell is a failure, ``cells: not reproduced`` when half or more
    are, else ``cells: at most partial``.

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
    """``compatible`` when the interval of ``ours - paper`` (both standard errors folded in, ``crit``
    our critical value) includes zero, else ``smaller`` or ``larger`` in magnitude.

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
    """The ``claim`` criterion of a row, from its rule and its judgement."""
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


# ------------------------------------------------------------------------ a rule and its judges

#: every word a judge may give (the row's ``check``): how a number we measured compares with the one a
#: paper printed (or with the claim under test, on the pages that check our own code); ``equivalent``:
#: TOST puts the effect inside the rule's :class:`Margin`. Kept apart on purpose from the claims
#: registry's statuses (:data:`dpcompanion.claims.registry.STATUSES`), which say how a *claim* was checked.
JUDGE_WORDS = ("agrees", "partly", "equivalent", "disagrees", "inconclusive", "identity", "not comparable")

#: z-score at which a difference counts as significant (two-sided ~5 %)
Z = 2.0
#: the note of every row not judged because our sizes differ from the paper's
NOT_COMPARED = "not compared (sizes differ)"


@dataclasses.dataclass(frozen=True)
class Margin:
    """The practical margin of one rule's effect: ``value`` in the units of the rule's estimate (None: no
    margin, ``reason`` says why), ``basis`` (``printed precision``, ``reported spread``, ``smallest effect of
    interest``, ``none``); ``applied_by``: ``row`` (:func:`row_of` applies it) or ``judge`` (the judge is
    itself a TOST with this margin)."""

    value: float | None
    units: str
    basis: str
    reason: str
    applied_by: str = "row"


@dataclasses.dataclass(frozen=True)
class Case:
    """A worked example of a rule (``tests/test_comparisons.py`` runs every rule's): the paper's
    ``statement`` it is written from, measurements the rule must judge ``expect`` (``agrees``; ``identity``
    for a row true by construction; ``not comparable`` for a rule never judged) and, for a judged rule,
    measurements it must judge ``disagrees``; written from the statement and the tolerance, not the judge."""

    statement: str
    agrees: Mapping[str, Any]
    disagrees: Mapping[str, Any] | None = None
    expect: str = "agrees"


@dataclasses.dataclass(frozen=True)
class Rule:
    """One verdict rule: ``paper`` (only what the paper printed, quoted with version, figure/table and
    panel), ``tolerance`` (the stated criterion), ``judge(**measured) -> Judgement``; ``judged`` False for a
    row shown but never judged (its judge says ``not comparable`` and why).

    ``design``: ``(paired | independent, why)`` for a comparison of two arms, None where no two arms are
    compared by seed; ``margin``: its practical margin (:class:`Margin`), None for a rule that judges no
    effect over runs; ``comparable``: ``(size | direction, why)`` where our protocol fixes whether the
    paper's size may be compared (None: :func:`dpcompanion.experiments.scale_tables.comparability`);
    ``takes_rule``: the judge is called with ``rule=`` this rule (a judge shared by several rules);
    ``case``: a worked example (:class:`Case`)."""

    id: str
    item: str
    paper: str
    tolerance: str
    judge: Callable[..., Judgement]
    judged: bool = True
    design: tuple[str, str] | None = None
    margin: Margin | None = None
    comparable: tuple[str, str] | None = None
    takes_rule: bool = False
    case: Case | None = None

    def __post_init__(self):
        if "/" not in self.id:
            raise ValueError(f"verdict rule id {self.id!r} is not '<experiment id>/<panel>'")
        if self.design is not None and self.design[0] not in DESIGNS:
            raise ValueError(f"rule {self.id}: design must be one of {DESIGNS}, got {self.design[0]!r}")
        if self.comparable is not None and self.comparable[0] not in COMPARABLE:
            raise ValueError(f"rule {self.id}: comparable must be one of {COMPARABLE}, got {self.comparable[0]!r}")

    @property
    def design_name(self) -> str | None:
        """``paired``, ``independent``, or None (no two arms compared by seed)."""
        return self.design[0] if self.design else None

    @property
    def comparable_name(self) -> str:
        """``size`` or ``direction``: what of the paper's number this rule's protocol lets a row
        compare (``size`` where not fixed by the protocol)."""
        return self.comparable[0] if self.comparable else "size"


def by_ratio(paper: float, ours: float, *, agree: float = 1.5, partly: float = 4.0) -> str:
    """``agrees`` when ours/paper is within a factor ``agree``, ``partly`` within ``partly``, else
    ``disagrees`` (symmetric in the ratio).

    >>> by_ratio(0.8, 0.9), by_ratio(0.8, 0.3), by_ratio(0.8, 0.008)
    ('agrees', 'partly', 'disagrees')
    """
    if not (paper > 0 and ours > 0):
        return "disagrees"
    r = ours / paper
    return "agrees" if 1 / agree <= r <= agree else "partly" if 1 / partly <= r <= partly else "disagrees"


def rel_within(paper: float, ours: float, rtol: float) -> bool:
    """``|ours - paper| <= rtol |paper|``.

    >>> rel_within(1e-10, 1.00000001e-10, 1e-6), rel_within(1e-10, 0.2, 1e-6)
    (True, False)
    """
    return abs(ours - paper) <= rtol * abs(paper)


#: confidence level of every interval judged (two-sided)
LEVEL = 0.95
#: power at which "how many runs would separate them" and "smallest detectable effect" are computed
POWER = 0.80


@dataclasses.dataclass(frozen=True)
class Judgement:
    """What every judge returns: its word (one of :data:`JUDGE_WORDS`), what the row shows of it and
    the numbers behind it (:meth:`stats`).

    ``note``: why (a practical margin rewrites it, :func:`with_margin`); ``remark``: what the rule adds,
    kept apart so that a margin keeps it (:attr:`row_note`); ``ours``: the row's "ours" column;
    ``printed``: the paper column where it depends on the row (a cell of a table), else None.

    ``estimate``, ``ci_low``, ``ci_high``: our effect and its 95% interval; ``n``: our runs;
    ``paper``/``paper_se``: the paper's value and printed standard error; ``margin``: the smallest effect
    of interest or the tolerance, in the units of ``estimate``; ``ratio``: ours / paper's;
    ``runs_factor``: how many times our runs would separate the two reference points at 80% power;
    ``mde``: the smallest effect our runs detect at 80% power; ``kind``: ``effect`` for a judgement of
    :func:`judge_effect` as it stands, the only kind :func:`with_margin` refines."""

    verdict: str
    note: str
    estimate: float = math.nan
    se: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    n: int | None = None
    paper: float | None = None
    paper_se: float | None = None
    margin: float | None = None
    ratio: float | None = None
    runs_factor: float | None = None
    mde: float | None = None
    design: str | None = None
    comparable: str | None = None
    df: float | None = None
    direction: int | None = None
    kind: str | None = None
    #: a group-sequential comparison (:mod:`.sequential`): the look that decided it ("look k of K, n
    #: seeds") and the verdict at each look taken
    stage: str | None = None
    looks: tuple | None = None
    ours: str = ""
    printed: str | None = None
    remark: str = ""
    #: the paper's own evidence (``CRITERIA["paper_evidence"]``) where the judge knows more than the printed
    #: value and its se; None to derive it (:func:`criteria_of`)
    evidence: str | None = None
    #: a row pooling a table's cells: the cap its cells put on it (:func:`cells_cap`)
    cells_cap: str | None = None

    def for_row(self, ours: str, *, remark: str = "", printed: str | None = None) -> Judgement:
        """This judgement with what its row shows: ``ours``, the rule's ``remark`` appended to the note
        (with its own separator, e.g. ``"; at N = 1000"``) and the paper column ``printed``.

        >>> judge_identity("x").for_row("1.0", remark="; y").row_note
        'true by construction: x; y'
        """
        return dataclasses.replace(self, ours=ours, remark=remark, printed=printed)

    def overruled(self, verdict: str, note: str) -> Judgement:
        """These numbers under the rule's own ``verdict`` and ``note``, where the rule knows more than the
        statistics (a gradient was clipped): no longer :func:`judge_effect`'s, so no margin refines it.

        >>> Judgement("agrees", "x", kind="effect").overruled("partly", "x; but y").kind is None
        True
        """
        return dataclasses.replace(self, verdict=verdict, note=note, remark="", kind=None)

    @property
    def row_note(self) -> str:
        """The judgement's ``note`` followed by the rule's ``remark``."""
        return self.note + self.remark

    def stats(self) -> dict:
        """The numbers of the report (JSON-able; NaN as None); empty for a judgement that holds none."""
        def c(x):
            return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x
        out = {"estimate": c(self.estimate), "se": c(self.se), "ci_low": c(self.ci_low), "ci_high": c(self.ci_high),
                "n": self.n, "paper_value": c(self.paper), "paper_se": c(self.paper_se), "margin": c(self.margin),
                "ratio": c(self.ratio), "runs_factor": c(self.runs_factor), "mde": c(self.mde),
                "design": self.design, "comparable": self.comparable, "stage": self.stage,
                "looks": None if self.looks is None else [list(x) for x in self.looks]}
        return out if any(v is not None for v in out.values()) else {}


def critical_value(df: float | None, level: float = LEVEL) -> float:
    """Two-sided critical value: Student t with ``df`` degrees of freedom, normal when None."""
    from scipy import stats

    q = 0.5 + level / 2
    if df is None or not math.isfinite(df):
        return float(stats.norm.ppf(q))
    if df <= 0:
        raise ValueError(f"df must be > 0, got {df!r}")
    return float(stats.t.ppf(q, df))


def mde(se: float, df: float | None = None) -> float:
    """Smallest effect detected at :data:`POWER` by a two-sided test at 1 - :data:`LEVEL`
    with standard error ``se``: ``(t_{0.975} + t_{0.80}) se`` (normal quantiles when ``df`` is None).

    >>> round(mde(1.0), 3)
    2.802
    """
    from scipy import stats

    zb = float(stats.norm.ppf(POWER)) if df is None else float(stats.t.ppf(POWER, df))
    return (critical_value(df) + zb) * se


def welch_df(sd_a: float, n_a: int, sd_b: float, n_b: int) -> float | None:
    """Welch-Satterthwaite degrees of freedom of a difference of two means (None when a group
    has a single run or both spreads are zero).

    >>> round(welch_df(1.0, 3, 1.0, 3), 6)
    4.0
    """
    if n_a < 2 or n_b < 2:
        return None
    va, vb = sd_a**2 / n_a, sd_b**2 / n_b
    den = va**2 / (n_a - 1) + vb**2 / (n_b - 1)
    return None if den <= 0 else (va + vb) ** 2 / den


#: the designs a comparison of two arms may have: ``paired`` when the arms share seeds (run k of
#: each arm has the same initial parameters, data order and noise stream), else ``independent``
DESIGNS = ("paired", "independent")
#: what a row compares with the paper: ``size`` where our setup (data set, model, trained layers,
#: number of steps) is the paper's, else ``direction`` (the sign of the effect alone)
COMPARABLE = ("size", "direction")


@dataclasses.dataclass(frozen=True)
class Estimate:
    """An effect ``mean(a) - mean(b)`` of two arms with the spread its design gives: ``se`` and ``df``
    (Student t; None: normal), ``n`` (pairs, or the smaller arm), the 95% interval and the ``design``."""

    estimate: float
    se: float
    df: float | None
    n: int
    design: str
    ci_low: float
    ci_high: float


def estimate_effect(a, b, *, design: str) -> Estimate:
    """The effect ``mean(a) - mean(b)`` of two arms by the comparison's ``design``, for both papers:

    * ``paired`` (the arms share seeds): the mean of the per-seed differences, with the t interval of
      ``scipy.stats.ttest_rel`` (``se = sd(d) / sqrt(n)``, ``n - 1`` degrees of freedom);
    * ``independent``: Welch's interval (``scipy.stats.ttest_ind(equal_var=False)``).

    The interval ``estimate +- t se`` is written out so that a zero spread gives a zero-width interval,
    not NaN. Fewer than 2 runs: ``se`` NaN.

    >>> e = estimate_effect([1.0, 3.0], [0.0, 0.0], design="paired"); e.estimate, e.se, e.df
    (2.0, 1.0, 1)
    >>> e = estimate_effect([70.0, 70.5, 71.0], [60.0, 60.5, 61.0], design="independent")
    >>> round(e.se, 4), round(e.df, 6)
    (0.4082, 4.0)
    >>> estimate_effect([70.0, 70.5, 71.0], [60.0, 60.5, 61.0], design="paired").se
    0.0
    """
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {', '.join(DESIGNS)}, got {design!r}")
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if design == "paired":
        if x.shape != y.shape:
            raise ValueError(f"paired arms must have one run per seed each, got {x.size} and {y.size} runs")
        d = x - y
        n = int(d.size)
        est = float(d.mean()) if n else math.nan
        se = float(d.std(ddof=1) / math.sqrt(n)) if n >= 2 else math.nan
        df = n - 1 if n >= 2 else None
    else:
        n = int(min(x.size, y.size))
        est = float(x.mean() - y.mean()) if n else math.nan
        if n >= 2:
            sa, sb = float(x.std(ddof=1)), float(y.std(ddof=1))
            se = math.sqrt(sa**2 / x.size + sb**2 / y.size)
            df = welch_df(sa, int(x.size), sb, int(y.size))
        else:
            se, df = math.nan, None
    if math.isfinite(se):
        c = critical_value(df)
        lo, hi = est - c * se, est + c * se
    else:
        lo = hi = math.nan
    return Estimate(estimate=est, se=se, df=df, n=n, design=design, ci_low=lo, ci_high=hi)


@dataclasses.dataclass(frozen=True)
class Pooled:
    """A pooled effect over ``k`` cells: ``estimate``, its ``se`` and ``df`` (Student t; None: normal, a
    single cell), the 95% interval, the between-cell variance ``tau2`` and Cochran's ``Q``."""

    estimate: float
    se: float
    df: float | None
    ci_low: float
    ci_high: float
    k: int
    tau2: float
    Q: float


def pool_random_effects(estimates, ses) -> Pooled:
    """The random-effects mean of ``k`` cells' effects, each with its standard
    error: DerSimonian-Laird's between-cell variance ``tau2 = max(0, (Q - (k - 1)) / C)`` with
    the fixed-effect weights ``w = 1 / se^2`` (``Q = sum w (y - ybar_w)^2``,
    ``C = sum w - sum w^2 / sum w``), the mean weighted by ``1 / (se^2 + tau2)``, and the
    modified Hartung-Knapp-Sidik-Jonkman interval (Roever, Knapp & Friede 2015): the standard
    error ``sqrt(1 / sum w*)`` scaled by ``sqrt(max(1, q))``, ``q = sum w* (y - mu)^2 / (k - 1)``,
    with Student t on ``k - 1`` degrees of freedom, never narrower than DerSimonian-Laird's.

    Why random effects: the cells of a table differ in epsilon_bar, clip and epochs, and so do
    their true gains (the paper's printed gaps range over more than an order of magnitude), so
    no common effect is assumed; the pooled gap is the mean gain over cells like these, its
    interval carrying the between-cell spread. Why the Hartung-Knapp interval: a table pools 2
    to 12 cells, where DerSimonian-Laird's normal interval is too narrow. One cell: that cell
    (normal interval, no between-cell variance).

    >>> p = pool_random_effects([1.0, 1.0, 1.0], [0.5, 0.5, 0.5]); p.estimate, p.tau2, p.df
    (1.0, 0.0, 2)
    >>> p = pool_random_effects([0.0, 4.0], [1.0, 1.0]); round(p.tau2, 6), round(p.se, 6)
    (7.0, 2.0)
    """
    y, s = np.asarray(estimates, dtype=float).ravel(), np.asarray(ses, dtype=float).ravel()
    if y.size == 0 or y.shape != s.shape:
        raise ValueError(f"estimates and ses must be non-empty and of one length, got {y.size} and {s.size}")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(s)) and np.all(s >= 0)):
        raise ValueError("estimates and ses must be finite, ses >= 0")
    k = int(y.size)
    v = np.maximum(s**2, np.finfo(float).tiny)  # a zero spread: a weight as large as a float allows
    if k == 1:
        mu, se = float(y[0]), float(s[0])
        c = critical_value(None)
        return Pooled(estimate=mu, se=se, df=None, ci_low=mu - c * se, ci_high=mu + c * se, k=1, tau2=0.0, Q=0.0)
    w = 1.0 / v
    mu_f = float(np.sum(w * y) / np.sum(w))
    Q = float(np.sum(w * (y - mu_f) ** 2))
    C = float(np.sum(w) - np.sum(w**2) / np.sum(w))
    tau2 = max(0.0, (Q - (k - 1)) / C) if C > 0 else 0.0
    ws = 1.0 / (v + tau2)
    mu = float(np.sum(ws * y) / np.sum(ws))
    q = float(np.sum(ws * (y - mu) ** 2) / (k - 1))
    se = math.sqrt(1.0 / float(np.sum(ws))) * math.sqrt(max(1.0, q))
    c = critical_value(k - 1)
    return Pooled(estimate=mu, se=se, df=k - 1, ci_low=mu - c * se, ci_high=mu + c * se, k=k, tau2=tau2, Q=Q)


def _runs_factor(se: float, effect: float, df: float | None) -> float | None:
    """How many times our runs detect ``effect`` at 80% power (se scales as 1/sqrt(runs))."""
    if not (math.isfinite(se) and se > 0 and effect):
        return None
    return (mde(se, df) / abs(effect)) ** 2


def _more_runs(k: float | None, n: int | None, what: str = "separate them") -> str:
    """``about 40 runs (13x ours) would separate them at 80% power``, or, when our runs already have that
    power (k <= 1), that this outcome is within chance.

    >>> _more_runs(13.2, 3), _more_runs(0.8, 5)
    ('about 40 runs (13x ours) would separate them at 80% power', 'our runs have 80% power to separate them; this outcome is within chance')
    """
    if k is None:
        return f"no standard error to say how many runs would {what}"
    if k <= 1:
        return f"our runs have 80% power to {what}; this outcome is within chance"
    x = f"{k:.1f}" if k < 10 else f"{k:.0f}"
    runs = f"about {math.ceil(k * n)} runs ({x}x ours)" if n else f"about {x}x our runs"
    return f"{runs} would {what} at 80% power"


def judge_effect(estimate: float, se: float, *, paper: float | None = None, paper_se: float | None = None,
                 direction: int | None = None, df: float | None = None, n: int | None = None,
                 design: str | None = None, comparable: str = "size", margin: float | None = None,
                 level: float | None = None, tost_alpha: float | None = None, interval: str | None = None) -> Judgement:
    """Judge our effect against zero and the paper's value with our 95% interval ``estimate +- crit se``
    (Student t with ``df``, normal when None) and, for the paper's value, the interval of ours - paper
    with the paper's printed standard error folded in (``sqrt(se^2 + paper_se^2)``):

    * ``agrees``: the interval excludes zero on the paper's side and is compatible with the paper's value;
    * ``partly``: excludes zero on the paper's side but also the paper's value (the note gives the ratio);
    * ``disagrees``: excludes zero on the other side; or excludes the paper's value while including zero;
    * ``inconclusive``: compatible with both; the note says how many times our runs would separate them
      at 80% power.

    ``paper`` None: the paper printed a direction only (``direction`` +1 or -1): agrees / disagrees by
    the side of zero the interval excludes, else inconclusive. ``comparable="direction"`` (our setup is
    not the paper's): judged the same way by the sign of the paper's value, which is quoted but never
    judged, so size alone never makes such a row ``disagrees``. ``design`` (see :func:`estimate_effect`)
    is recorded; ``se`` and ``df`` are the design's. A practical ``margin`` (the rule's :class:`Margin`)
    then applies :func:`with_margin`. A look of a group-sequential plan (:mod:`.sequential`) passes its
    own ``level``, ``tost_alpha`` and ``interval`` (how the note names the interval).

    W Table 2, epsilon_bar 0.8, clip 2.5, 120 epochs: the paper's gain is ruled out, ours includes zero;
    clip 1, 60 epochs: two noisy estimates, no evidence either way:

    >>> judge_effect(1.77, 1.74, paper=20.47, paper_se=0.61, df=4).verdict
    'disagrees'
    >>> j = judge_effect(0.45, 1.24, paper=0.25, paper_se=0.41, df=4, n=3)
    >>> j.verdict, j.runs_factor > 100
    ('inconclusive', True)

    An underpowered run (n = 3) of a real effect is inconclusive, not agrees:

    >>> judge_effect(2.0, 1.5, paper=2.5, paper_se=0.2, df=2).verdict
    'inconclusive'
    >>> judge_effect(2.4, 0.3, paper=2.5, paper_se=0.2).verdict
    'agrees'
    >>> j = judge_effect(0.8, 0.1, paper=2.5, paper_se=0.2); j.verdict, round(j.ratio, 2)
    ('partly', 0.32)
    >>> judge_effect(-1.0, 0.2, paper=2.5).verdict
    'disagrees'
    >>> judge_effect(0.5, 0.2, direction=+1).verdict, judge_effect(-0.5, 0.2, direction=+1).verdict
    ('agrees', 'disagrees')
    >>> judge_effect(0.1, 0.2, direction=-1).verdict
    'inconclusive'
    >>> judge_effect(1.0, float("nan"), paper=2.0).verdict  # one run: no standard error
    'not comparable'

    H-F-MOM's example: -0.0009 (se 0.0001) on a loss near 0.84 is a difference the rule without a margin
    calls ``disagrees``; inside a margin of 0.023 (1% of ln 10) it is ``equivalent``:

    >>> judge_effect(-0.0009, 0.0001, direction=+1, df=99).verdict
    'disagrees'
    >>> judge_effect(-0.0009, 0.0001, direction=+1, df=99, margin=0.023).verdict
    'equivalent'
    >>> judge_effect(0.5, 0.1, direction=+1, df=9, margin=0.2).verdict
    'agrees'
    """
    j = _judge_sides(estimate, se, paper=paper, paper_se=paper_se, direction=direction, df=df, n=n, design=design,
                     comparable=comparable, level=LEVEL if level is None else level, interval=interval)
    if paper is not None and float(paper) != 0:
        direction = 1 if float(paper) > 0 else -1
    j = dataclasses.replace(j, df=df, direction=direction, kind="effect")
    return j if margin is None else with_margin(j, margin, alpha=TOST_ALPHA if tost_alpha is None else tost_alpha)


#: the level of each of TOST's one-sided tests: equivalence is shown when the 90% interval lies inside +-margin
TOST_ALPHA = 0.05


@dataclasses.dataclass(frozen=True)
class Tost:
    """Two one-sided tests of ``|effect| < margin`` (Schuirmann 1987): ``p_lower`` tests H0 effect <=
    -margin, ``p_upper`` H0 effect >= +margin, ``p`` the larger; ``ci_low``, ``ci_high`` the ``1 - 2 alpha``
    interval; ``equivalent``: ``p < alpha``, i.e. that interval lies inside (-margin, +margin)."""

    p_lower: float
    p_upper: float
    p: float
    ci_low: float
    ci_high: float
    equivalent: bool


def tost(estimate: float, se: float, *, margin: float, df: float | None = None,
         alpha: float = TOST_ALPHA) -> Tost:
    """TOST of ``estimate`` (standard error ``se``; Student t with ``df``, normal when None) against the
    practical ``margin``: ``t_lower = (estimate + margin) / se``, ``t_upper = (estimate - margin) / se``, each
    one-sided at ``alpha``. A zero spread is equivalent exactly when ``|estimate| < margin``.

    >>> t = tost(0.01, 0.02, margin=0.1, df=9); t.equivalent, round(t.p, 4)
    (True, 0.0007)
    >>> tost(0.08, 0.02, margin=0.1, df=9).equivalent
    False
    """
    from scipy import stats

    estimate, se, margin = float(estimate), float(se), float(margin)
    if not margin > 0 or not math.isfinite(margin):
        raise ValueError(f"margin must be finite and > 0, got {margin!r}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    if not (math.isfinite(estimate) and math.isfinite(se) and se >= 0):
        raise ValueError(f"estimate and se must be finite (se >= 0), got {estimate!r}, {se!r}")
    if se == 0:
        inside = abs(estimate) < margin
        p = 0.0 if inside else 1.0
        return Tost(p_lower=0.0 if estimate > -margin else 1.0, p_upper=0.0 if estimate < margin else 1.0, p=p,
                    ci_low=estimate, ci_high=estimate, equivalent=inside)
    dist = stats.norm if df is None or not math.isfinite(df) else stats.t(df)
    p_lower = float(dist.sf((estimate + margin) / se))
    p_upper = float(dist.cdf((estimate - margin) / se))
    c = critical_value(df, 1 - 2 * alpha)
    p = max(p_lower, p_upper)
    return Tost(p_lower=p_lower, p_upper=p_upper, p=p, ci_low=estimate - c * se, ci_high=estimate + c * se,
                equivalent=p < alpha)


def equivalence_runs_factor(estimate: float, se: float, *, margin: float, df: float | None = None,
                            alpha: float = TOST_ALPHA) -> float | None:
    """How many times our runs TOST needs to show ``|effect| < margin`` at :data:`POWER` were
    the true difference our ``estimate``: ``((t_{1-alpha} + z_p) se / (margin - |estimate|))^2``
    (one test binds; at an estimate of zero both do, ``z_{(1+p)/2}``). None where the estimate
    is not inside the margin (more runs would not show equivalence) or the spread is zero.

    >>> round(equivalence_runs_factor(0.0, 0.1, margin=0.2), 2), round(equivalence_runs_factor(0.1, 0.1, margin=0.2), 2)
    (2.14, 6.18)
    >>> equivalence_runs_factor(0.3, 0.1, margin=0.2) is None
    True
    """
    from scipy import stats

    gap = float(margin) - abs(float(estimate))
    if not (gap > 0 and se > 0):
        return None
    zb = float(stats.norm.ppf(0.5 + POWER / 2 if estimate == 0 else POWER))
    return ((critical_value(df, 1 - 2 * alpha) + zb) * float(se) / gap) ** 2


def with_margin(j: Judgement, margin: float, *, alpha: float | None = None) -> Judgement:
    """The judgement ``j`` of :func:`judge_effect` with the row's practical ``margin``:

    * ``equivalent`` when TOST (:func:`tost`, :data:`TOST_ALPHA` each side) puts the effect inside +-margin,
      whatever side of zero it is on: an effect too small to matter, be it significant or not;
    * an effect inside its margin never reads ``disagrees``: not shown equivalent, it is ``inconclusive``,
      the note saying how many runs would show equivalence at 80% power;
    * otherwise the verdict stands, the margin recorded.

    Judgements not of :func:`judge_effect` (``kind`` not ``effect``), with a margin already, or ``not
    comparable`` are returned unchanged.

    >>> j = judge_effect(-0.004, 0.0015, direction=+1, df=19)
    >>> j.verdict, with_margin(j, 0.005).verdict
    ('disagrees', 'inconclusive')
    """
    if j.kind != "effect" or j.margin is not None or j.verdict == "not comparable":
        return j
    alpha = TOST_ALPHA if alpha is None else float(alpha)
    margin = float(margin)
    t = tost(j.estimate, j.se, margin=margin, df=j.df, alpha=alpha)
    m = dataclasses.replace(j, margin=margin)
    ci90 = f"{100 * (1 - 2 * alpha):.3g}% CI [{t.ci_low:.3g}, {t.ci_high:.3g}]"
    if t.equivalent:
        return dataclasses.replace(m, verdict="equivalent", runs_factor=None, note=(
            f"{j.note.split(';')[0]}; equivalent (TOST, p = {t.p:.2g}): the {ci90} lies inside +-{margin:.3g}, the "
            f"practical margin, so the effect is too small to matter (the rule without a margin said '{j.verdict}')"))
    if j.verdict == "disagrees" and abs(j.estimate) < margin:
        k = equivalence_runs_factor(j.estimate, j.se, margin=margin, df=j.df, alpha=alpha)
        return dataclasses.replace(m, verdict="inconclusive", runs_factor=k, note=(
            f"{j.note}; but the effect lies inside its practical margin +-{margin:.3g} (an effect inside its "
            f"margin never reads 'disagrees') and TOST does not show it equivalent ({ci90}, p = {t.p:.2g}); "
            f"{_more_runs(k, j.n, 'show equivalence were the true difference our estimate')}"))
    return dataclasses.replace(m, note=f"{j.note}; not equivalent within +-{margin:.3g} (TOST p = {t.p:.2g})")


def _judge_sides(estimate: float, se: float, *, paper: float | None = None, paper_se: float | None = None,
                 direction: int | None = None, df: float | None = None, n: int | None = None,
                 design: str | None = None, comparable: str = "size", level: float | None = None,
                 interval: str | None = None) -> Judgement:
    """:func:`judge_effect` without its margin."""
    estimate, se = float(estimate), float(se)
    if design is not None and design not in DESIGNS:
        raise ValueError(f"design must be one of {', '.join(DESIGNS)}, got {design!r}")
    if comparable not in COMPARABLE:
        raise ValueError(f"comparable must be one of {', '.join(COMPARABLE)}, got {comparable!r}")
    if paper is not None:
        paper = float(paper)
        direction = 1 if paper > 0 else -1 if paper < 0 else direction
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1 when the paper's value is zero or not given, got {direction!r}")
    tag = dict(design=design, comparable=comparable)
    if not (math.isfinite(estimate) and math.isfinite(se) and se >= 0):
        return Judgement("not comparable", f"no standard error (estimate {estimate:.3g}, se {se:.3g}): "
                         "fewer than 2 runs", estimate=estimate, se=se, n=n, paper=paper, paper_se=paper_se, **tag)
    level = LEVEL if level is None else float(level)
    name = interval or f"{100 * level:.3g}% CI"
    c = critical_value(df, level)
    lo, hi = estimate - c * se, estimate + c * se
    m = mde(se, df) if se > 0 else 0.0
    base = dict(estimate=estimate, se=se, ci_low=lo, ci_high=hi, n=n, paper=paper, paper_se=paper_se, mde=m, **tag)
    side = "above" if direction > 0 else "below"
    pos = lo > 0 if direction > 0 else hi < 0   # excludes zero on the paper's side
    neg = hi < 0 if direction > 0 else lo > 0   # excludes zero on the other side
    ci = f"ours {estimate:.3g}, {name} [{lo:.3g}, {hi:.3g}]" + (f" ({design})" if design else "")
    if paper is not None:
        pse = float(paper_se) if paper_se is not None and math.isfinite(float(paper_se)) else 0.0
        pv = f"paper {paper:.3g}" + (f" (se {pse:.2g})" if pse else "")
        base["ratio"] = estimate / paper if paper else None
    if paper is None or comparable == "direction":
        # a direction: printed without a size, or a size that is not ours to match (our setup is not the paper's)
        if paper is None:
            agree, other, tail = f"{side} zero, as the paper states", "the paper states", ""
        else:
            head = f"direction only (our setup is not the paper's; the {pv} is not a size to match)"
            agree, other, tail = f"{side} zero, the paper's direction; {head}", f"the {pv}; {head}", f"; {head}"
        if pos:
            return Judgement("agrees", f"{ci}: {agree}", **base)
        if neg:
            return Judgement("disagrees", f"{ci}: on the other side of zero than {other}", **base)
        k = _runs_factor(se, estimate, df)
        return Judgement("inconclusive", f"{ci} includes zero{tail}; "
                         f"{_more_runs(k, n, 'detect an effect of our estimate')}", runs_factor=k, **base)
    s_diff = math.hypot(se, pse)  # our degrees of freedom (the paper's estimate has more runs behind it)
    d_lo, d_hi = estimate - paper - c * s_diff, estimate - paper + c * s_diff
    compatible = d_lo <= 0 <= d_hi
    if neg:
        return Judgement("disagrees", f"{ci}: on the other side of zero than the {pv}", **base)
    if pos and compatible:
        return Judgement("agrees", f"{ci}: excludes zero on the paper's side and includes the {pv}", **base)
    if pos:
        return Judgement("partly", f"{ci}: direction reproduced, size not (ours / paper = {base['ratio']:.2g})", **base)
    if not compatible:
        return Judgement("disagrees", f"{ci} includes zero and rules out the {pv} (difference "
                         f"{estimate - paper:+.3g}, {name} [{d_lo:.3g}, {d_hi:.3g}])", **base)
    # separate zero from the paper's value: the standard error must shrink so that |paper| is detectable
    k = _runs_factor(se, paper, df)
    return Judgement("inconclusive", f"{ci} includes both zero and the {pv}; {_more_runs(k, n)}",
                     runs_factor=k, **base)


def judge_equivalence(estimate: float, se: float, *, margin: float, df: float | None = None,
                      n: int | None = None, level: float | None = None, tost_alpha: float | None = None,
                      interval: str | None = None) -> Judgement:
    """A claim of *no difference*, judged by TOST (each one-sided test at 5%, i.e. the 90% interval)
    against the smallest effect of interest ``margin``: ``agrees`` when the 90% interval lies within +-margin;
    ``disagrees`` when the 95% interval lies entirely beyond +margin or -margin; else ``inconclusive``, the
    note saying how many times our runs would show equivalence at 80% power. A look of a group-sequential
    plan (:mod:`.sequential`) passes its own ``level``, ``tost_alpha`` and ``interval``.

    >>> judge_equivalence(0.01, 0.02, margin=0.1).verdict
    'agrees'
    >>> judge_equivalence(0.5, 0.1, margin=0.1).verdict
    'disagrees'
    >>> j = judge_equivalence(0.05, 0.2, margin=0.1, n=3); j.verdict, j.runs_factor > 10
    ('inconclusive', True)
    """
    estimate, se, margin = float(estimate), float(se), float(margin)
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    if not (math.isfinite(estimate) and math.isfinite(se) and se >= 0):
        return Judgement("not comparable", "no standard error: fewer than 2 runs", estimate=estimate, se=se, n=n,
                         margin=margin, kind="equivalence")
    a = TOST_ALPHA if tost_alpha is None else float(tost_alpha)
    c90, c95 = critical_value(df, 1 - 2 * a), critical_value(df, LEVEL if level is None else float(level))
    lo, hi = estimate - c95 * se, estimate + c95 * se
    base = dict(estimate=estimate, se=se, ci_low=lo, ci_high=hi, n=n, margin=margin, mde=mde(se, df) if se else 0.0, df=df)
    ci = f"ours {estimate:.3g}, {interval or '95% CI'} [{lo:.3g}, {hi:.3g}]"
    if -margin <= estimate - c90 * se and estimate + c90 * se <= margin:
        return Judgement("agrees", f"{ci}; TOST: the {100 * (1 - 2 * a):.3g}% interval lies within +-{margin:.3g}: "
                         "equivalent", **base, kind="equivalence")
    if lo > margin or hi < -margin:
        return Judgement("disagrees", f"{ci}: a difference beyond the smallest effect of interest {margin:.3g}", **base, kind="equivalence")
    k = equivalence_runs_factor(estimate, se, margin=margin, df=df, alpha=a)
    return Judgement("inconclusive", f"{ci}: neither within nor beyond +-{margin:.3g}; "
                     f"{_more_runs(k, n, 'show equivalence were the true difference our estimate')}",
                     runs_factor=k, **base, kind="equivalence")


def judge_identity(why: str, *, holds: bool = True) -> Judgement:
    """A row true by construction: verdict ``identity`` with the reason; ``holds=False`` (our code broke
    the construction) is a ``disagrees``.

    >>> judge_identity("both schedules are calibrated to the same epsilon").verdict, judge_identity("x", holds=False).verdict
    ('identity', 'disagrees')
    """
    if holds:
        return Judgement("identity", f"true by construction: {why}")
    return Judgement("disagrees", f"should hold by construction ({why}) but does not: a bug in our code")


def judge_exact(ours: float, target: float, *, rtol: float = 0.0, atol: float = 0.0, what: str = "") -> Judgement:
    """A number without sampling noise (a closed form, a count, an accountant) against a printed or
    exact value within ``atol + rtol |target|``: agrees / disagrees (no interval: ``ci_low = ci_high = ours``).

    >>> judge_exact(0.291, 0.29, atol=0.005).verdict, judge_exact(0.31, 0.29, atol=0.005).verdict
    ('agrees', 'disagrees')
    """
    ours, target = float(ours), float(target)
    tol = atol + rtol * abs(target)
    ok = abs(ours - target) <= tol + 1e-15 * max(1.0, abs(target))
    note = f"|ours - target| = {abs(ours - target):.3g} {'<=' if ok else '>'} tolerance {tol:.3g}" + (f" ({what})" if what else "")
    return Judgement("agrees" if ok else "disagrees", note, estimate=ours, ci_low=ours, ci_high=ours, paper=target,
                     margin=tol, se=0.0, ratio=ours / target if target else None, kind="exact")


# ------------------------------------------------------------------------ a rule's row

#: runs behind each of Wu et al.'s printed mean +- sd (W Sec. 6: "We repeat the experiments five times")
W_PAPER_RUNS = 5


def _w_acc_margin() -> float:
    """The median standard error ``sqrt(sd_ADP^2/5 + sd_DP^2/5)`` of a gap Wu et al. printed, over every
    printed cell of Tables 1 to 5 (points of accuracy; from :mod:`~dpcompanion.experiments.protocols.wu_paper`)."""
    cells = [c for t in wu_paper.TABLES.values() for c in t.values()] + list(wu_paper.TABLE3.values())
    return float(np.median([math.sqrt(sa**2 / W_PAPER_RUNS + sd**2 / W_PAPER_RUNS) for _, sa, _, sd in cells]))


#: the one accuracy margin of the book (points): Wu et al.'s own resolution of a gap (:func:`_w_acc_margin`,
#: about 0.27 points); the rules' margins are built from it and from the reasons below, which several share
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
    """The tuning protocol's cap on a verdict, from a payload's ``tuning`` list (``{param, method,
    chosen, grid_min, grid_max, interior, stated_bound, tuning_seeds, report_seeds}``): ``("not comparable",
    why)`` when an optimum lies at a grid edge the paper did not state, or the tuning and report seeds overlap;
    ``("partly", why)`` when the methods compared (same ``cell`` and ``setting``) were tuned on different grids
    for the same parameter, or with different numbers of candidates; ``(None, "")`` otherwise.

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
    """The tuning records behind ``row``: those of its setting (``beyond`` when the item says it is beyond
    the paper's grid, else ``paper``; records without a setting count for both) and of its cell (a record
    whose ``cell`` appears in the item, or whose cell's first part starts it); all of the setting when no
    cell matches.

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


#: the ``cap`` criterion of a tuning protocol's cap (:func:`tuning_cap`)
CAP_OF = {None: "none", "partly": "tuning: at most partial", "not comparable": "tuning: not judged"}
#: how severe each cap is (a cap never lowers another)
_CAP_RANK = {"none": 0, "tuning: at most partial": 1, "cells: at most partial": 1, "cells: not reproduced": 1.5,
             "tuning: not judged": 2, "sizes differ": 3}


#: the criteria of a row that declares none (built by hand, not by a rule): nothing to judge it by
_NO_CRITERIA = {"claim": "none", "paper_evidence": "none", "setup": "another", "sign": "n/a", "size": "n/a",
                "absence": "n/a", "check": "n/a", "cap": "none"}


def decided(row: dict, **criteria: str) -> dict:
    """``row`` with ``criteria`` replaced and its ``verdict`` and ``outcome`` decided again (:func:`decide`).
    A lower ``setup`` than ``paper's`` makes the paper's size of an effect ``not testable``.

    >>> r = decided({k: v[0] for k, v in CRITERIA.items()}, claim="effect", paper_evidence="clear",
    ...             sign="paper's side", size="compatible", absence="not shown", check="n/a")
    >>> r["verdict"], r["outcome"], decided(r, setup="another")["verdict"], decided(r, setup="another")["size"]
    ('reproduced', 'success', 'sign only', 'not testable')
    """
    out = {**_NO_CRITERIA, **row, **criteria}  # a row built without a rule declares no claim: not judged
    if out.get("claim") == "effect" and out.get("setup") != "paper's" and out.get("size") in ("compatible", "smaller",
                                                                                                  "larger"):
        out["size"] = "not testable"
    out["verdict"], out["outcome"] = decide({k: out[k] for k in CRITERIA})
    return out


def apply_tuning_cap(row: dict, tuning: Any) -> dict:
    """``row`` with its ``cap`` raised by :func:`tuning_cap` over the records behind it
    (:func:`tuning_for_row`; a cap never lowers another; idempotent), the reason prepended to its note."""
    cap, why = tuning_cap(tuning_for_row(row, tuning))
    c = CAP_OF[cap]
    if _CAP_RANK[c] <= _CAP_RANK.get(row.get("cap", "none"), 0):
        return row
    new = decided(row, cap=c)
    return {**new, "note": f"{why}: capped ({c}; the row would read '{row['verdict']}'). {row.get('note', '')}"}


def row_of(r: Rule, *, sizes_match: bool, sizes_note: str = "", item: str | None = None,
           tuning: Any = None, setup: str | None = None, **measured: Any) -> dict[str, str]:
    """One paper-vs-ours row for the rule ``r``: the judge's :class:`Judgement`, its criteria
    (:func:`criteria_of`), each stored in the row, and the word and outcome :func:`decide` gives them.
    ``setup``: the row's (default ``another`` where the rule compares the direction alone, else ``paper's``;
    the reproduction report lowers it where the result's scale is smaller). ``sizes_match=False``: not
    judged (cap ``sizes differ``, note ``not compared (sizes differ): <sizes_note>``), though our numbers
    are still shown. ``tuning``: the payload's tuning list, whose protocol caps the row (:func:`tuning_cap`)."""
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
    """The criteria of one row from its rule, the judge's :class:`Judgement` (before any margin
    rewrote its word), the row's ``setup`` and its protocol ``cap``."""
    j = judgement
    claim = claim_of(rule, j, item=item)
    if cap == "none" and j.cells_cap is not None:
        cap = j.cells_cap  # a pooled row's cells (:func:`cells_cap`)
    out = dict(claim=claim, paper_evidence="none", setup=setup, sign="n/a", size="n/a", absence="n/a",
               check=CHECK_OF.get(j.verdict, "n/a"), cap=cap)
    has_ci = all(isinstance(x, (int, float)) and math.isfinite(x) for x in (j.estimate, j.se, j.ci_low, j.ci_high))
    if claim == "effect":
        out["check"] = "n/a"
        direction = j.direction or (1 if (j.paper or 0) > 0 else -1 if (j.paper or 0) < 0 else None)
        if j.evidence is not None:
            out["paper_evidence"] = j.evidence
        elif j.paper is not None:
            out["paper_evidence"] = evidence_of(j.paper, j.paper_se)
        else:
            out["paper_evidence"] = "stated"
        if has_ci and direction in (1, -1):
            out["sign"] = sign_of(j.ci_low, j.ci_high, direction)
        if j.paper is None:
            out["size"] = "none printed"
        elif j.comparable == "direction" or setup != "paper's":
            out["size"] = "not testable"
        elif has_ci:
            out["size"] = size_of(j.estimate, j.se, j.paper, j.paper_se, crit=critical_value(j.df))
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
