"""The pieces every verdict rule is made of (:mod:`dpcompanion.experiments.comparisons`).

A :class:`Rule` holds

* ``paper``: only what the paper printed (a number, or a shape read from its figure or text),
  quoted with file, figure/table and panel;
* ``tolerance``: the stated criterion (significance level, relative tolerance, direction);
* ``judge(**measured) -> Judgement``: computed from our numbers (and, for rules whose printed
  value depends on the row, such as one cell of a table, the printed value passed in as
  ``printed``); every judge returns one :class:`Judgement`: the verdict,
  the note, the "ours" column's text, the paper column where it depends on the row, and the
  numbers behind the verdict where there are any;
* ``judged``: ``False`` for a row that is shown but never judged (the paper's quantity and
  ours are not the same quantity, or the row is a finding beyond the paper): its judge always
  says ``not comparable`` and says why.

Verdict words: :data:`VERDICTS`, defined here and nowhere else.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping

import numpy as np

from dpcompanion.experiments.comparisons import outcome as _outcome

__all__ = ["VERDICTS", "JUDGE_WORDS", "Z", "NOT_COMPARED", "Rule", "Margin", "Case", "zscore", "fmt_z", "by_ratio", "rel_within", "LEVEL", "POWER", "Judgement",
           "judge_effect", "judge_equivalence", "judge_identity", "judge_exact", "mde", "welch_df", "mean_se_df",
           "DESIGNS", "COMPARABLE", "Estimate", "estimate_effect", "direction_verdict", "TOST_ALPHA", "Tost", "tost",
           "with_margin", "critical_value"]

#: every word a judge may give (its ``check``, :mod:`.outcome`): how a number we measured compares with the one a paper
#: printed (or, on the pages that check our own code, with the claim under test). ``equivalent``:
#: TOST puts the effect inside the row's practical margin
#: (the rule's :class:`Margin`), an effect too small to matter. Not the claims registry's statuses
#: (:data:`dpcompanion.claims.registry.STATUSES`: proved, refuted, ...), which say how a
#: *claim* was checked; the two vocabularies are kept apart on purpose.
JUDGE_WORDS = ("agrees", "partly", "equivalent", "disagrees", "inconclusive", "identity", "not comparable")

#: the words a row shows: not a judge's own word but the one the declared table of
#: :mod:`.outcome` gives the row's criteria (:data:`.outcome.VERDICTS`)
VERDICTS = _outcome.VERDICTS

#: z-score at which a difference counts as significant (two-sided ~5 %)
Z = 2.0
#: the note of every row not judged because our sizes differ from the paper's
NOT_COMPARED = "not compared (sizes differ)"


@dataclasses.dataclass(frozen=True)
class Margin:
    """The practical margin of one rule's effect: ``value`` in the units of
    the rule's estimate (None: the rule has no margin, ``reason`` says why), ``basis``
    (``printed precision``, ``reported spread``, ``smallest effect of interest``, ``none``) and
    ``reason``; ``applied_by``: ``row`` (:func:`.rows.row_of` applies it, :func:`with_margin`)
    or ``judge`` (the rule's judge is itself a TOST with this margin)."""

    value: float | None
    units: str
    basis: str
    reason: str
    applied_by: str = "row"


@dataclasses.dataclass(frozen=True)
class Case:
    """A worked example of a rule, declared with it (``tests/test_comparisons.py`` runs
    every rule's): the paper's ``statement`` it is written from, hand-made measurements the rule
    must judge ``expect`` (``agrees``; ``identity`` for a row true by construction; ``not
    comparable`` for a rule never judged) and, for a judged rule, measurements it must judge
    ``disagrees``. The numbers are written from the statement and the rule's tolerance, not read
    from the judge."""

    statement: str
    agrees: Mapping[str, Any]
    disagrees: Mapping[str, Any] | None = None
    expect: str = "agrees"


@dataclasses.dataclass(frozen=True)
class Rule:
    """One verdict rule, declared with what it judges (an experiment declares its
    rules in its own module, :attr:`dpcompanion.experiments.base.Experiment.rules`; the pages
    without an experiment in :mod:`.theory` and :mod:`.wu_rules`).

    ``design``: ``(paired | independent, why)`` for a comparison of two arms (the
    reason found in the experiment code), None where the rule compares no two arms by seed;
    ``margin``: its declared practical margin (:class:`Margin`), declared before any verdict was
    regenerated with it, None for a rule that judges no effect over runs; ``comparable``:
    ``(size | direction, why)`` where our protocol fixes whether the paper's size may be compared,
    whatever the run's sizes (None: read from the experiment's scale block,
    :func:`dpcompanion.experiments.scale_tables.comparability`); ``takes_rule``: the judge is called with
    ``rule=`` this rule (a judge shared by several rules reads their design and margin from it);
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
    #: its worked example (:class:`Case`)
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


def zscore(diff: float, se: float) -> float:
    """``diff / se``; +-inf for a non-zero difference with zero spread, NaN for NaN input.

    >>> zscore(1.0, 0.5), zscore(1.0, 0.0), zscore(0.0, 0.0)
    (2.0, inf, 0.0)
    """
    if not (math.isfinite(diff) and math.isfinite(se)):
        return float("nan")
    if se <= 0:
        return math.copysign(math.inf, diff) if diff else 0.0
    return diff / se


def fmt_z(z: float) -> str:
    return "inf" if math.isinf(z) else f"{z:.1f}"


def by_ratio(paper: float, ours: float, *, agree: float = 1.5, partly: float = 4.0) -> str:
    """``agrees`` when ours/paper is within a factor ``agree``, ``partly`` within ``partly``,
    else ``disagrees`` (symmetric in the ratio: a factor 100 too small is not 'partly').

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


# ------------------------------------------------------------------------ the one way of judging an effect

#: confidence level of every interval judged (two-sided)
LEVEL = 0.95
#: power at which "how many runs would separate them" and "smallest detectable effect" are computed
POWER = 0.80


@dataclasses.dataclass(frozen=True)
class Judgement:
    """What every judge returns: the verdict of one comparison (one of
    :data:`VERDICTS`), what the paper-vs-ours row shows of it and the numbers behind it
    (``stats`` for the report).

    ``note``: why (the statistical judges' words, which a practical margin rewrites,
    :func:`with_margin`); ``remark``: what the rule adds to it, kept apart so that a margin
    keeps it (the row's note is :attr:`row_note`, ``note + remark``); ``ours``: our value as the
    row's "ours" column shows it; ``printed``: the paper column of this row where it depends
    on the row (a cell of a table), else None (the rule's ``paper``).

    ``estimate``, ``ci_low``, ``ci_high``: our effect and its 95% interval; ``n``: our runs
    (None when not known to the rule); ``paper``/``paper_se``: the paper's value and the
    standard error it printed (None where it printed none); ``margin``: the smallest effect of
    interest (no-difference claims) or the tolerance (exact comparisons), in the units of
    ``estimate``; ``ratio``: ours / paper's; ``runs_factor``: how many times our runs would
    separate the two reference points at 80% power (inconclusive rows); ``mde``: the smallest
    effect our runs detect at 80% power (two-sided 5%); ``kind``: ``effect`` for a judgement of
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
    #: a group-sequential comparison (:mod:`.sequential`): the look that decided it, or the last
    #: one taken ("look k of K, n seeds"), and the verdict at each look taken
    stage: str | None = None
    looks: tuple | None = None
    ours: str = ""
    printed: str | None = None
    remark: str = ""
    #: the paper's own evidence for the printed effect, where the judge knows more than the
    #: printed value and its se (both arms above chance): a value of
    #: :data:`.outcome.CRITERIA` ``["paper_evidence"]``, None to derive it (:func:`.outcome.criteria_of`)
    evidence: str | None = None
    #: a row pooling a table's cells: the cap its cells put on it (:func:`.outcome.cells_cap`),
    #: None for a row of one comparison
    cells_cap: str | None = None

    def for_row(self, ours: str, *, remark: str = "", printed: str | None = None) -> Judgement:
        """This judgement with what its row shows: ``ours`` (the "ours" column), the rule's
        ``remark`` appended to the note (with its own separator, e.g. ``"; at N = 1000"``) and
        the paper column ``printed`` where it depends on the row.

        >>> judge_identity("x").for_row("1.0", remark="; y").row_note
        'true by construction: x; y'
        """
        return dataclasses.replace(self, ours=ours, remark=remark, printed=printed)

    def overruled(self, verdict: str, note: str) -> Judgement:
        """These numbers under the rule's own ``verdict`` and ``note``, where the rule knows more
        than the statistics (a gradient was clipped, another cell contradicts the paper): no
        longer :func:`judge_effect`'s verdict, so no margin refines it (``kind`` None).

        >>> Judgement("agrees", "x", kind="effect").overruled("partly", "x; but y").kind is None
        True
        """
        return dataclasses.replace(self, verdict=verdict, note=note, remark="", kind=None)

    @property
    def row_note(self) -> str:
        """The note the row shows: the judgement's ``note`` followed by the rule's ``remark``."""
        return self.note + self.remark

    def stats(self) -> dict:
        """The numbers of the report (JSON-able; NaN as None); empty for a judgement that holds
        none (a count, an exact yes or no, a row true by construction)."""
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


def mean_se_df(x) -> tuple[float, float, int]:
    """Mean, standard error (ddof 1) and n of a sample.

    >>> m, se, n = mean_se_df([1.0, 2.0, 3.0]); m, round(se, 6), n
    (2.0, 0.57735, 3)
    """
    xs = [float(v) for v in x]
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, math.nan, n
    return m, math.sqrt(sum((v - m) ** 2 for v in xs) / (n - 1) / n), n


# ------------------------------------------------------------------------ the one estimator

#: the designs a comparison of two arms may have: ``paired`` when the arms share seeds (run k of
#: each arm has the same initial parameters, data order and noise stream), else ``independent``
DESIGNS = ("paired", "independent")
#: what a row compares with the paper: ``size`` where our setup (data set, model, trained layers,
#: number of steps) is the paper's, else ``direction`` (the sign of the effect alone)
COMPARABLE = ("size", "direction")


@dataclasses.dataclass(frozen=True)
class Estimate:
    """An effect ``mean(a) - mean(b)`` of two arms with the spread its design gives:
    ``se`` and ``df`` (Student t; None: normal), ``n`` (pairs, or the smaller arm), the 95%
    interval ``ci_low``, ``ci_high`` and the ``design``. Power and runs needed
    (:func:`mde`, :func:`judge_effect`) use the same ``se`` and ``df``."""

    estimate: float
    se: float
    df: float | None
    n: int
    design: str
    ci_low: float
    ci_high: float


def estimate_effect(a, b, *, design: str) -> Estimate:
    """The effect ``mean(a) - mean(b)`` of two arms, by the comparison's ``design``, for both
    papers:

    * ``paired`` (the arms share seeds): the mean of the per-seed differences ``a_k - b_k``
      with the t interval of ``scipy.stats.ttest_rel`` (``se = sd(d) / sqrt(n)``, ``n - 1``
      degrees of freedom): the spread the two arms share cancels;
    * ``independent``: Welch's interval (``scipy.stats.ttest_ind(equal_var=False)``:
      ``se = sqrt(s_a^2/n_a + s_b^2/n_b)``, Welch-Satterthwaite degrees of freedom).

    The interval is ``estimate +- t se`` (the same numbers scipy gives; written out so that a
    zero spread gives a zero-width interval, not NaN). Fewer than 2 runs: ``se`` NaN.

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


def direction_verdict(ci_low: float, ci_high: float, direction: int) -> str:
    """The verdict of a row compared by *direction* only: ``agrees`` when the 95%
    interval excludes zero on the paper's side (``direction`` +1 or -1), ``disagrees`` when
    it excludes zero on the other side, else ``inconclusive``. Size never enters.

    >>> direction_verdict(0.1, 2.0, +1), direction_verdict(-2.0, -0.1, +1), direction_verdict(-0.5, 3.0, +1)
    ('agrees', 'disagrees', 'inconclusive')
    """
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction!r}")
    pos = ci_low > 0 if direction > 0 else ci_high < 0
    neg = ci_high < 0 if direction > 0 else ci_low > 0
    return "agrees" if pos else "disagrees" if neg else "inconclusive"


def _runs_factor(se: float, effect: float, df: float | None) -> float | None:
    """How many times our runs give a standard error that detects ``effect`` at 80% power
    (se scales as 1/sqrt(runs))."""
    if not (math.isfinite(se) and se > 0 and effect):
        return None
    return (mde(se, df) / abs(effect)) ** 2


def _more_runs(k: float | None, n: int | None, what: str = "separate them") -> str:
    """``about 40 runs (13x ours) would separate them at 80% power``, or, when our runs already
    have that power (k <= 1), that this outcome is within chance.

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
    """Judge our effect as :func:`_judge_sides` does, then, where the row has a practical
    ``margin`` (declared once, as the rule's :class:`Margin`, in the units of
    ``estimate``), by :func:`with_margin`: ``equivalent`` when TOST shows the effect inside
    +-margin, and never ``disagrees`` for an effect inside its margin.

    H-F-MOM's named example: -0.0009 (se 0.0001) on a loss near 0.84 is a difference the rule
    without a margin calls ``disagrees``; inside a margin of 0.023 (1% of ln 10) it is ``equivalent``:

    >>> judge_effect(-0.0009, 0.0001, direction=+1, df=99).verdict
    'disagrees'
    >>> judge_effect(-0.0009, 0.0001, direction=+1, df=99, margin=0.023).verdict
    'equivalent'
    >>> judge_effect(0.5, 0.1, direction=+1, df=9, margin=0.2).verdict
    'agrees'

    A look of a group-sequential plan (:mod:`.sequential`) passes its own ``level`` (the
    nominal two-sided level of its repeated interval), ``tost_alpha`` and ``interval`` (how
    the note names the interval); by default the fixed-sample 95% interval and TOST at 5%.
    """
    j = _judge_sides(estimate, se, paper=paper, paper_se=paper_se, direction=direction, df=df, n=n, design=design,
                     comparable=comparable, level=LEVEL if level is None else level, interval=interval)
    if paper is not None and float(paper) != 0:
        direction = 1 if float(paper) > 0 else -1
    j = dataclasses.replace(j, df=df, direction=direction, kind="effect")
    return j if margin is None else with_margin(j, margin, alpha=TOST_ALPHA if tost_alpha is None else tost_alpha)


#: the level of each of the two one-sided tests of TOST: equivalence is shown when
#: the 90% interval lies inside (-margin, +margin)
TOST_ALPHA = 0.05


@dataclasses.dataclass(frozen=True)
class Tost:
    """Two one-sided tests of ``|effect| < margin`` (Schuirmann 1987): ``p_lower`` tests
    H0 effect <= -margin, ``p_upper`` H0 effect >= +margin, ``p`` the larger; ``ci_low``,
    ``ci_high`` the ``1 - 2 alpha`` (90%) interval; ``equivalent``: ``p < alpha``, i.e. that
    interval lies inside (-margin, +margin)."""

    p_lower: float
    p_upper: float
    p: float
    ci_low: float
    ci_high: float
    equivalent: bool


def tost(estimate: float, se: float, *, margin: float, df: float | None = None,
         alpha: float = TOST_ALPHA) -> Tost:
    """TOST of ``estimate`` (standard error ``se``, Student t with ``df`` degrees of freedom,
    normal when None) against the practical ``margin``: ``t_lower = (estimate + margin) / se``
    and ``t_upper = (estimate - margin) / se``, one-sided p-values at ``alpha`` each. A zero
    spread is equivalent exactly when ``|estimate| < margin``.

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

    * ``equivalent`` when TOST (:func:`tost`, :data:`TOST_ALPHA` each side) puts the effect
      inside +-margin: the 90% interval lies inside (-margin, +margin), whatever side of zero
      it is on: an effect too small to matter, be it significant or not;
    * an effect inside its margin (``|estimate| < margin``) never reads ``disagrees``: not
      shown equivalent, it is ``inconclusive``, the note saying how many runs would show
      equivalence at 80% power (were the true effect zero);
    * otherwise the verdict stands, the margin recorded.

    Judgements not of :func:`judge_effect` (``kind`` not ``effect``), those that already carry
    a margin, and ``not comparable`` ones are returned unchanged.

    >>> j = judge_effect(-0.004, 0.0015, direction=+1, df=19)
    >>> j.verdict, with_margin(j, 0.005).verdict
    ('disagrees', 'inconclusive')
    """
    from scipy import stats

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
    """Judge our effect against zero and the paper's value, with our 95% interval (``level``;
    ``interval`` names it in the note, by default "95% CI")
    ``estimate +- crit se`` (``crit`` from Student t with ``df``, normal when None) and, for the
    paper's value, the interval of the difference ours - paper with the paper's printed
    standard error folded in (``sqrt(se^2 + paper_se^2)``):

    * ``agrees``: the interval excludes zero on the paper's side and is compatible with the
      paper's value;
    * ``partly``: excludes zero on the paper's side but also the paper's value (the note gives
      the ratio ours/paper);
    * ``disagrees``: excludes zero on the other side; or excludes the paper's value while
      including zero (the effect is not seen and the paper's size is ruled out);
    * ``inconclusive``: compatible with both; the note says how many times our runs would
      separate them at 80% power.

    ``paper`` None: the paper printed a direction only (``direction`` +1 or -1), so there is no
    size to match: agrees / disagrees by the side of zero the interval excludes, else
    inconclusive (the note then says how many runs would detect our own estimate).

    ``comparable="direction"`` (our setup is not the paper's, so its size is not
    ours to match): judged as a printed direction (:func:`direction_verdict`, the sign of the
    paper's value), the paper's value quoted in the note but never judged: size alone never
    makes such a row ``disagrees``. ``design`` (``paired`` or ``independent``, see
    :func:`estimate_effect`) is recorded in the judgement; ``se`` and ``df`` are the design's.

    W Table 2, epsilon_bar 0.8, clip 2.5, 120 epochs: the paper's gain is ruled out, ours
    includes zero:

    >>> judge_effect(1.77, 1.74, paper=20.47, paper_se=0.61, df=4).verdict
    'disagrees'

    Clip 1, 60 epochs: two noisy estimates, no evidence either way:

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

    One run, no standard error: nothing to judge by.

    >>> judge_effect(1.0, float("nan"), paper=2.0).verdict
    'not comparable'
    """
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
    if paper is not None and comparable == "direction":
        # our setup is not the paper's: its size is quoted, the sign alone is judged
        pse = float(paper_se) if paper_se is not None and math.isfinite(float(paper_se)) else 0.0
        pv = f"paper {paper:.3g}" + (f" (se {pse:.2g})" if pse else "")
        base["ratio"] = estimate / paper if paper else None
        v = direction_verdict(lo, hi, direction)
        head = f"direction only (our setup is not the paper's; the {pv} is not a size to match)"
        if v == "agrees":
            return Judgement("agrees", f"{ci}: {side} zero, the paper's direction; {head}", **base)
        if v == "disagrees":
            return Judgement("disagrees", f"{ci}: on the other side of zero than the {pv}; {head}", **base)
        k = _runs_factor(se, estimate, df)
        return Judgement("inconclusive", f"{ci} includes zero; {head}; "
                         f"{_more_runs(k, n, 'detect an effect of our estimate')}", runs_factor=k, **base)
    if paper is None:
        if pos:
            return Judgement("agrees", f"{ci}: {side} zero, as the paper states", **base)
        if neg:
            return Judgement("disagrees", f"{ci}: on the other side of zero than the paper states", **base)
        k = _runs_factor(se, estimate, df)
        return Judgement("inconclusive", f"{ci} includes zero; {_more_runs(k, n, 'detect an effect of our estimate')}",
                         runs_factor=k, **base)
    pse = float(paper_se) if paper_se is not None and math.isfinite(float(paper_se)) else 0.0
    s_diff = math.hypot(se, pse)
    c_diff = critical_value(df, level)  # our degrees of freedom (the paper's estimate has more runs behind it)
    d_lo, d_hi = estimate - paper - c_diff * s_diff, estimate - paper + c_diff * s_diff
    compatible = d_lo <= 0 <= d_hi
    ratio = estimate / paper if paper else None
    base["ratio"] = ratio
    pv = f"paper {paper:.3g}" + (f" (se {pse:.2g})" if pse else "")
    if neg:
        return Judgement("disagrees", f"{ci}: on the other side of zero than the {pv}", **base)
    if pos and compatible:
        return Judgement("agrees", f"{ci}: excludes zero on the paper's side and includes the {pv}", **base)
    if pos:
        return Judgement("partly", f"{ci}: direction reproduced, size not (ours / paper = {ratio:.2g})", **base)
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
    """A claim of *no difference*, judged by two one-sided tests (TOST, each at 5%, i.e. the 90%
    interval) against the smallest effect of interest ``margin`` (stated on the page):

    * ``agrees``: the 90% interval lies within +-margin (equivalence shown);
    * ``disagrees``: the 95% interval lies entirely beyond +margin or -margin (a difference
      larger than the smallest effect of interest);
    * ``inconclusive``: neither; the note says how many times our runs would show equivalence
      at 80% power were the true difference zero.

    >>> judge_equivalence(0.01, 0.02, margin=0.1).verdict
    'agrees'
    >>> judge_equivalence(0.5, 0.1, margin=0.1).verdict
    'disagrees'
    >>> j = judge_equivalence(0.05, 0.2, margin=0.1, n=3); j.verdict, j.runs_factor > 10
    ('inconclusive', True)

    A look of a group-sequential plan (:mod:`.sequential`) passes its ``level`` (the repeated
    interval's nominal level, in place of 95%), ``tost_alpha`` (each one-sided test's, in place
    of 5%) and ``interval`` (how the note names the interval).
    """
    from scipy import stats

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
    """A row true by construction: verdict ``identity`` with the reason; ``holds=False`` (our
    code broke the construction) is a ``disagrees``.

    >>> judge_identity("both schedules are calibrated to the same epsilon").verdict
    'identity'
    >>> judge_identity("x", holds=False).verdict
    'disagrees'
    """
    if holds:
        return Judgement("identity", f"true by construction: {why}")
    return Judgement("disagrees", f"should hold by construction ({why}) but does not: a bug in our code")


def judge_exact(ours: float, target: float, *, rtol: float = 0.0, atol: float = 0.0, what: str = "") -> Judgement:
    """A number without sampling noise (a closed form, a count, an accountant) against a
    printed or exact value within a stated tolerance ``atol + rtol |target|``: agrees / disagrees
    (no interval: ``ci_low = ci_high = ours``).

    >>> judge_exact(0.291, 0.29, atol=0.005).verdict, judge_exact(0.31, 0.29, atol=0.005).verdict
    ('agrees', 'disagrees')
    """
    ours, target = float(ours), float(target)
    tol = atol + rtol * abs(target)
    ok = abs(ours - target) <= tol + 1e-15 * max(1.0, abs(target))
    note = f"|ours - target| = {abs(ours - target):.3g} {'<=' if ok else '>'} tolerance {tol:.3g}" + (f" ({what})" if what else "")
    return Judgement("agrees" if ok else "disagrees", note, estimate=ours, ci_low=ours, ci_high=ours, paper=target,
                     margin=tol, se=0.0, ratio=ours / target if target else None, kind="exact")
