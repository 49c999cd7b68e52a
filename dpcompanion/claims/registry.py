"""The claim registry: every checked statement of both papers, with the check that decides it.

A claim's status is whatever its check returns when run, built by the constructors below, which
refuse a status the evidence (a SymPy residual, a comparison's two sides) does not support:

* a refutation only comes from a failed comparison (:func:`refuted` raises when the relation holds);
* every ``proved``/``verified`` entry declares a *mutant*: its check, called with ``mutant=True``,
  runs on a minimally false variant of the claim, which must come out ``refuted``
  (``python -m dpcompanion checks --mutants``). A claim true by construction is an ``identity``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import operator
import random
import time
import traceback
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import sympy as sp

METHODS = ("sympy", "numeric", "bruteforce", "montecarlo", "end-to-end")

#: how a *claim* of a paper was checked, one line per status (the errata page shows them). Kept apart
#: from the experiments' verdict words (:data:`dpcompanion.experiments.comparisons.rule.VERDICTS`).
STATUS_DEFINITIONS = {
    "proved": "SymPy reduces the claim to an identity in its symbols, for every admissible value (T symbolic, or an induction written out), and the same check refutes the claim's declared mutant.",
    "checked": "SymPy reduces the claim to an identity at each listed value of T (the values the check ran, recorded by it), not for every T; the same check refutes the claim's declared mutant.",
    "verified": "The claim holds at every point of a stated grid within the stated tolerance, and the same check refutes the claim's declared mutant.",
    "identity": "True by construction (one side is defined as the other), so no check of it could fail; shown as such, not as a finding.",
    "refuted": "A comparison the claim makes fails: both sides and the relation are reported at a counterexample.",
    "not-reproduced": "The paper's number comes from a procedure it does not state; the book's reconstruction does not give it, which decides nothing about the paper.",
    "illustrated": "An asymptotic or qualitative statement: a fitted exponent or trend is reported, not a pass/fail comparison.",
    "open": "Not checked (must not occur).",
}
#: every status a claim's check may return, in the order the pages list them
STATUSES = tuple(STATUS_DEFINITIONS)

#: statuses of a claim whose check passed (each declares a mutant the same check must refute)
PASSING = ("proved", "checked", "verified")
#: statuses of a claim that is an erratum of its paper (the errata page lists them)
ERRATA = ("refuted", "not-reproduced")

#: how much an errata entry matters, most serious first (the errata page sorts by it)
SEVERITIES = ("invalidates a privacy claim", "changes a conclusion", "missing hypothesis", "constant factor", "typo",
              "procedure unknown")

#: what each level of :data:`SEVERITIES` means (the errata page shows it)
SEVERITY_DEFINITIONS = {
    "invalidates a privacy claim": "A stated privacy guarantee ((epsilon, delta)-DP, zCDP, a budgeting rule) does not hold as "
                                   "printed: runs or schedules budgeted by it may not be as private as the paper says.",
    "changes a conclusion": "A bound, rate, order or recommendation fails as printed, so a conclusion the paper draws "
                            "from it is not supported as stated (its corrected form may still support a weaker one).",
    "missing hypothesis": "The statement fails without a condition the paper leaves out; with the condition it holds.",
    "constant factor": "Off by a constant factor or in a non-leading term; the orders and the paper's conclusions stand.",
    "typo": "A transcription or algebra slip; the paper's own use of the result is correct.",
    "procedure unknown": "A number the paper reports comes from a procedure it does not state and the book's "
                         "reconstruction does not give it: this decides nothing about the paper.",
}

RELATIONS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt, "==": operator.eq, "!=": operator.ne,
}

#: modules under dpcompanion.claims that define entries (imported by :func:`load_all`).
CLAIM_MODULES: tuple[str, ...] = (
    "h_sec_3_privacy",  # Hong et al. (FAccT) Sec. 3, App. C: privacy (Thm 3.1, Lemmas C.2-C.4)
    "h_sec_4_1_gd",  # Sec. 4.1: gradient descent (Thm 4.1, 4.2, Lemma 4.3, Eq. 26, Thm 4.4, Sec. 4.1.3)
    "h_sec_4_1_slides",  # Sec. 4.1 in the slides (Thm 3.2, 3.3, Lemma 3.2)
    "h_sec_4_2_momentum",  # Sec. 4.2: momentum (Thm 4.5, Lemmas C.5-C.7, Thm 4.6, 4.7; slides Thm 3.4)
    "h_sec_4_3_psgd",  # Sec. 4.3: PSGD (Thm 4.8, 4.9, the subsampling rule)
    "h_sec_4_4_true_risk",  # Sec. 4.4: true risk (Thm 4.10-4.12)
    "h_tables",  # Tables 1 and 2
    "w_adp",  # Wu et al. (ADP-SGD): privacy (Lemma 2.2, Thm 4.1), utility (Thm 4.2, Remark 4.1, Prop. 5.1, 5.2)
    "w_adp_eps",  # Wu et al.: the moments-accountant epsilons of Sec. 6
    "x_unify",  # both papers: one Cauchy-Schwarz allocation
    "theorems",  # the theorem boxes
)


@dataclasses.dataclass(frozen=True)
class Result:
    """Outcome of one check, built by the constructors below (not directly)."""

    status: str
    evidence: dict[str, Any]


class Derivation:
    """The steps of a symbolic check, each an equation or inequality whose sides are the SymPy expressions the
    check computes, with what justifies it. The check returns ``derivation=d.steps`` in its evidence; the page
    numbers and prints them (:func:`dpcompanion.book.claims_page.derivation_lines`), so page and status come
    from one computation.

    >>> d = Derivation()
    >>> x = sp.Symbol("x")
    >>> d.step((x + 1) ** 2, sp.expand((x + 1) ** 2), "expand the square")
    x**2 + 2*x + 1
    >>> print(d.steps[0]["lhs"], d.steps[0]["rel"], d.steps[0]["rhs"], "|", d.steps[0]["why"])
    \\left(x + 1\\right)^{2} = x^{2} + 2 x + 1 | expand the square
    """

    RELATIONS = {"=": "=", "<=": r"\le", ">=": r"\ge", "<": "<", ">": ">", "==>": r"\Longrightarrow"}

    def __init__(self) -> None:
        self.steps: list[dict[str, str]] = []

    def step(self, lhs: Any, rhs: Any, why: str, *, rel: str = "=") -> Any:
        """Record ``lhs rel rhs`` (SymPy expressions, or LaTeX strings) justified by ``why``; returns ``rhs``."""
        if rel not in self.RELATIONS:
            raise ValueError(f"rel must be one of {tuple(self.RELATIONS)}, got {rel!r}")
        tex = (lambda e: e if isinstance(e, str) else sp.latex(e))
        self.steps.append({"lhs": tex(lhs), "rel": rel, "rhs": tex(rhs), "why": why})
        return rhs


def accepts_mutant(check: Callable[..., Any]) -> bool:
    """Whether ``check`` takes the keyword-only argument ``mutant`` (the mutant protocol)."""
    p = inspect.signature(check).parameters.get("mutant")
    return p is not None and p.kind == inspect.Parameter.KEYWORD_ONLY


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim, declared once: every page, the JSON and the errata render from it."""

    id: str  # SPEC ID with part suffix, e.g. "H-T4.4.T-opt"
    source: str  # e.g. "H (the FAccT version) Thm 4.4, Eq. (27)"
    statement: str  # paraphrase, LaTeX allowed
    method: str  # one of METHODS
    check: Callable[..., Result]
    corrects: str | None = None  # for a corrected statement: the id of the refuted one
    corrected_by: str | None = None  # for a refuted statement: the id of its correction
    versions: tuple[str, ...] = ("001",)  # paper versions this wording appears in
    mutant: str | None = None  # the minimally false variant its check must refute
    impact: str | None = None  # which later results inherit a failure of the claim
    severity: str | None = None  # one of SEVERITIES (for a claim that is refuted)
    domain: str | None = None  # the grid the check covers, when stated in the declaration
    tolerance: float | None = None  # the stated tolerance of a numerical comparison
    rests_on: tuple[tuple[str, str], ...] = ()  # (claim id, the part of it this claim builds on)

    @property
    def takes_mutant(self) -> bool:
        return accepts_mutant(self.check)


REGISTRY: dict[str, Claim] = {}


def statement_of(check: Callable[..., Any]) -> str:
    """A check's docstring as one line (:func:`prose`): the statement of the claim it decides."""
    return prose(check.__doc__ or "")


def prose(text: str) -> str:
    """Wrapped text as one line: its lines stripped and joined by single spaces (blank lines dropped).

    >>> prose('''
    ...     A sign error
    ...     in the inversion.
    ... ''')
    'A sign error in the inversion.'
    """
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def claim(
    id: str,
    *,
    source: str,
    method: str,
    statement: str | None = None,
    corrects: str | None = None,
    corrected_by: str | None = None,
    versions: Iterable[str] = ("001",),
    mutant: str | None = None,
    impact: str | None = None,
    severity: str | None = None,
    domain: str | None = None,
    tolerance: float | None = None,
    rests_on: dict[str, str] | None = None,
) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
    """Decorator registering ``check`` as the computation deciding claim ``id`` (fields as :class:`Claim`).

    The statement is the check's docstring as one line unless given. A declared ``mutant`` needs a check
    that takes the keyword-only ``mutant`` (one taking it without a declared text may name its mutant in
    its evidence under ``"mutant"``). ``rests_on`` maps each claim this one builds on to the part of it used: when
    that claim's check comes out ``refuted``, the run says so next to this claim's status (:func:`run_claim`)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if severity is not None and severity not in SEVERITIES:
        raise ValueError(f"severity must be one of {SEVERITIES}, got {severity!r}")

    def register(check: Callable[..., Result]) -> Callable[..., Result]:
        if id in REGISTRY:
            raise ValueError(f"claim id {id!r} registered twice")
        if mutant is not None and not accepts_mutant(check):
            raise ValueError(f"claim {id!r}: mutant={mutant!r} is declared but its check does not take the keyword 'mutant'")
        text = statement if statement is not None else statement_of(check)
        if not text:
            raise ValueError(f"claim {id!r}: no statement (give statement= or a docstring to its check)")
        REGISTRY[id] = Claim(id=id, source=source, statement=text, method=method, check=check, corrects=corrects,
                             corrected_by=corrected_by, versions=tuple(versions), mutant=mutant, impact=impact,
                             severity=severity, domain=domain, tolerance=tolerance,
                             rests_on=tuple((rests_on or {}).items()))
        return check

    return register


# --- result constructors: the only way a status is set ------------------------------------


def holds(lhs: Any, relation: str, rhs: Any, *, tol: float = 0.0) -> bool:
    """Whether ``lhs relation rhs`` holds, numbers compared with absolute slack ``tol``
    (``==`` within ``tol``; ``<=`` as ``lhs <= rhs + tol``). NaN never holds.

    >>> holds(1.0, "<=", 1.0 - 1e-12, tol=1e-9), holds(2, "<=", 1), holds(float("nan"), "==", 0)
    (True, False, False)
    """
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {tuple(RELATIONS)}, got {relation!r}")
    if isinstance(lhs, (int, float)) and isinstance(rhs, (int, float)) and not isinstance(lhs, bool):
        lhs, rhs = float(lhs), float(rhs)
        if math.isnan(lhs) or math.isnan(rhs):
            return False
        if relation == "==":
            return abs(lhs - rhs) <= tol
        if relation == "!=":
            return abs(lhs - rhs) > tol
        if relation in ("<=", "<"):
            return RELATIONS[relation](lhs, rhs + tol)
        return RELATIONS[relation](lhs + tol, rhs)
    return bool(RELATIONS[relation](lhs, rhs))


def refuted(*, lhs: Any, relation: str, rhs: Any, counterexample: Any, tol: float = 0.0, **evidence: Any) -> Result:
    """``refuted``: the claim says ``lhs relation rhs`` at ``counterexample`` and it does not hold there
    (within ``tol``); raises ``ValueError`` when it holds. Other keywords are kept as evidence.

    >>> refuted(lhs=2.0, relation="<=", rhs=1.0, counterexample={"x": 1}).status
    'refuted'
    >>> refuted(lhs=1.0, relation="<=", rhs=2.0, counterexample={"x": 1})
    Traceback (most recent call last):
    ...
    ValueError: refuted() needs a failed comparison, but 1.0 <= 2.0 holds (tol 0.0) at {'x': 1}
    """
    if holds(lhs, relation, rhs, tol=tol):
        raise ValueError(f"refuted() needs a failed comparison, but {lhs!r} {relation} {rhs!r} holds (tol {tol}) at {counterexample!r}")
    comparison = {"lhs": lhs, "relation": relation, "rhs": rhs, "tolerance": tol}
    return Result("refuted", {"counterexample": counterexample, "comparison": comparison, **evidence})


def refuted_at_worst(grid: Result, *, counterexample: Any, **evidence: Any) -> Result:
    """The refutation of a claim checked on a grid: the failed comparison is the worst margin ``>= 0`` of
    ``grid`` (a failed :func:`verified_by_margins` result)."""
    return refuted(lhs=grid.evidence["worst_margin"], relation=">=", rhs=0.0, counterexample=counterexample, **evidence)


def _probe_points(expr: Any, n: int = 6, seed: int = 0) -> list[dict[Any, Any]]:
    """Points at which a residual is evaluated: ``n`` with each free symbol in (0.15, 0.85) (below 1, as
    rates such as gamma) and ``n`` in (1.2, 4) (above 1, as kappa); integer symbols in 2..9."""
    rng = random.Random(seed)
    pts = []
    for lo, hi in ((0.15, 0.85), (1.2, 4.0)):
        for _ in range(n):
            pts.append({s: rng.randint(2, 9) if s.is_integer else round(rng.uniform(lo, hi), 6)
                        for s in sorted(expr.free_symbols, key=str)})
    return pts


def checked(residuals: dict[int, Any], **evidence: Any) -> Result:
    """``checked``: the claim is an identity at each T of ``residuals`` (T -> SymPy residual), decided as
    by :func:`proved`; the first non-zero one refutes (its T joins the counterexample). ``T_checked``
    comes from the mapping itself, so it names the values the check ran.

    >>> import sympy as sp; x = sp.Symbol("x")
    >>> r = checked({T: sp.expand((x + 1) ** T - sum(sp.binomial(T, k) * x**k for k in range(T + 1))) for T in (1, 2, 3)})
    >>> r.status, r.evidence["T_checked"]
    ('checked', [1, 2, 3])
    >>> checked({1: 0, 2: x - x**2}).evidence["counterexample"]["T"]
    2
    """
    if not residuals:
        raise ValueError("checked() needs at least one value of T")
    for T in sorted(residuals):
        res = proved(residuals[T], **evidence)
        if res.status != "proved":
            ce = res.evidence.get("counterexample")
            return Result(res.status, {**res.evidence, "counterexample": {"T": T, **(ce if isinstance(ce, dict) else {"at": ce})}})
    return Result("checked", {"residual": "0 at each T checked", "T_checked": sorted(int(T) for T in residuals), **evidence})


def proved(residual: Any, **evidence: Any) -> Result:
    """``proved`` if the SymPy ``residual`` simplifies to exactly zero (or is ``True``); evidence naming
    a T is refused (a check at fixed T uses :func:`checked`). Otherwise the residual is evaluated at
    :func:`_probe_points`: numerically non-zero there refutes; if SymPy merely failed to simplify,
    ``AssertionError`` (the check errs, it does not decide)."""
    fixed = {"T", "T_checked"} & set(evidence)
    if fixed:
        raise ValueError(f"proved() got {sorted(fixed)}: a check at fixed T is not a proof for every T; use checked()")
    expr = sp.sympify(residual)
    if expr is sp.true:
        return Result("proved", {"residual": "True", **evidence})
    if expr is sp.false:
        return refuted(lhs=False, relation="==", rhs=True, counterexample="every value", residual="False", **evidence)
    if isinstance(expr, sp.logic.boolalg.Boolean):
        raise AssertionError(f"residual is an undecided condition, not an expression: {expr}")
    if expr.is_polynomial():  # identically zero exactly when the expansion is: fast and decisive
        if sp.expand(expr) == 0:
            return Result("proved", {"residual": "0", **evidence})
    # a residual that is real and non-zero at a probe point refutes (probes whose value is complex, i.e. outside the
    # real domain of some radical or logarithm, decide nothing); otherwise simplify must reduce it to 0
    for pt in _probe_points(expr):
        try:
            v = complex(sp.N(expr.subs(pt), 30))
        except (TypeError, ValueError, ZeroDivisionError):
            continue
        if abs(v.imag) <= 1e-12 * max(1.0, abs(v.real)) and abs(v.real) > 1e-9:
            return refuted(lhs=v.real, relation="==", rhs=0.0, tol=1e-9, counterexample={str(k): x for k, x in pt.items()},
                           residual=str(expr)[:300], **evidence)
    if not expr.is_polynomial() and sp.simplify(expr) == 0:
        return Result("proved", {"residual": "0", **evidence})
    raise AssertionError(f"residual does not simplify to 0 but vanishes at every probe point: {expr}")


def as_symbols(expr: Any) -> Any:
    """``expr`` with each applied undefined function (a schedule ``s(t)``, ``s(T + 1)``) and each remaining
    ``Sum`` replaced by a positive symbol of its printed name, so that a residual left in such terms can be
    evaluated at :func:`_probe_points` (equal terms map to one symbol).

    >>> s, T = sp.Function("s"), sp.Symbol("T", integer=True, positive=True)
    >>> sorted(map(str, as_symbols(s(T + 1) - 2 * s(1)).free_symbols))
    ['s(1)', 's(T + 1)']
    """
    from sympy.core.function import AppliedUndef

    expr = sp.sympify(expr)
    terms = {x: sp.Symbol(str(x), positive=True) for x in expr.atoms(sp.Sum)}
    expr = expr.xreplace(terms)
    return expr.xreplace({x: sp.Symbol(str(x), positive=True) for x in expr.atoms(AppliedUndef)})


def by_induction(base: Any, step: Any, **evidence: Any) -> Result:
    """``proved`` for every T by induction: ``base`` is the residual of the claim at T = 1, ``step`` the
    residual of the case T + 1 once the case T is assumed (each a SymPy expression in symbolic ``T``), both
    decided by :func:`proved` (terms in a schedule ``s(t)`` read as symbols, :func:`as_symbols`); a non-zero
    one refutes, and the evidence says which (``failed``).

    >>> T = sp.Symbol("T", integer=True, positive=True)
    >>> by_induction(sp.Integer(0), (T + 1) ** 2 - (T**2 + 2 * T + 1)).status
    'proved'
    >>> r = by_induction(sp.Integer(0), (T + 1) ** 2 - (T**2 + 2 * T)); r.status, r.evidence["failed"]
    ('refuted', 'step')
    """
    for part, res in (("base case", base), ("step", step)):
        out = proved(as_symbols(res), **evidence)
        if out.status != "proved":
            return Result(out.status, {**out.evidence, "failed": part})
    return Result("proved", {"residual": "0 (base case T = 1 and step T -> T + 1)", "induction": True, **evidence})


def verified_by_margins(
    margins: Iterable[float], *, domain: str, points: Iterable[Any] | None = None, tol: float = 0.0, **evidence: Any
) -> Result:
    """``verified`` when every margin (>= 0 means the claim holds at that point) is >= -tol,
    else ``refuted`` with the worst point as counterexample (comparison ``margin >= -tol``)."""
    margins = list(margins)
    points = list(points) if points is not None else [None] * len(margins)
    if not margins:
        raise ValueError("no sampled points: nothing was checked")
    finite = [m if math.isfinite(m) else -math.inf for m in margins]
    worst = min(range(len(finite)), key=lambda i: finite[i])
    ev = {"domain": domain, "samples": len(margins), "worst_margin": float(margins[worst]), "tolerance": tol, **evidence}
    if finite[worst] >= -tol:
        return Result("verified", ev)
    return refuted(lhs=float(margins[worst]), relation=">=", rhs=-tol, counterexample=points[worst], **ev)


def compare(
    points: Sequence[Any],
    *,
    lhs: Sequence[float],
    rhs: Sequence[float],
    relation: str = "<=",
    domain: str,
    tol: float = 0.0,
    relative: bool = True,
    mutant: bool = False,
    **evidence: Any,
) -> Result:
    """The claim ``lhs[i] relation rhs[i]`` (``<=``, ``>=``, ``==``) at every ``points[i]``, margins relative
    to ``|rhs|`` (``relative``) or absolute; verified when every margin is ``>= -tol``. With ``mutant=True``
    the bound is scaled just past the tightest point, by the tightest ratio ``lhs/rhs`` times
    ``(1 -+ 2 max(tol, 1e-9))`` (``mutant_scale`` in the evidence).

    >>> compare([1, 2], lhs=[1.0, 1.0], rhs=[2.0, 4.0], domain="x in {1, 2}").status
    'verified'
    >>> compare([1, 2], lhs=[1.0, 1.0], rhs=[2.0, 4.0], domain="x in {1, 2}", mutant=True).status
    'refuted'
    """
    if relation not in ("<=", ">=", "=="):
        raise ValueError(f"relation must be '<=', '>=' or '==', got {relation!r}")
    pts, a, b = list(points), [float(x) for x in lhs], [float(x) for x in rhs]
    if not (len(pts) == len(a) == len(b)):
        raise ValueError(f"points, lhs and rhs must have one entry per point, got {len(pts)}, {len(a)}, {len(b)}")
    if not pts:
        raise ValueError("no points: nothing was checked")
    scale = 1.0
    if mutant:
        tau = 2 * max(tol, 1e-9)
        ratios = [x / y for x, y in zip(a, b) if y != 0 and math.isfinite(x / y)]
        if relation == "<=":
            scale = max(ratios) * (1 - tau) if ratios else 0.0
        elif relation == ">=":
            scale = min(ratios) * (1 + tau) if ratios else 0.0
        else:
            scale = 1 + 2 * tau + max(abs(r - 1) for r in ratios) if ratios else 1.0
        b = [y * scale for y in b]
    margins = []
    for x, y in zip(a, b):
        d = {"<=": y - x, ">=": x - y, "==": -abs(x - y)}[relation]
        margins.append(d / abs(y) if relative and y != 0 else d)
    ev = dict(evidence)
    ev["comparison"] = f"lhs {relation} rhs" + (" (margin relative to |rhs|)" if relative else " (absolute margin)")
    if mutant:
        ev["mutant_scale"] = scale
    shown = [{**(p if isinstance(p, dict) else {"point": p}), "lhs": x, "rhs": y} for p, x, y in zip(pts, a, b)]
    return verified_by_margins(margins, domain=domain, points=shown, tol=tol, **ev)


def identity(*, construction: str, **evidence: Any) -> Result:
    """``identity``: the claim is true by construction (``construction`` says how)."""
    if not construction:
        raise ValueError("an identity needs the construction that makes it true")
    return Result("identity", {"construction": construction, **evidence})


def not_reproduced(*, missing: str, lhs: Any, relation: str, rhs: Any, counterexample: Any, tol: float = 0.0,
                   **evidence: Any) -> Result:
    """``not-reproduced``: the book's reconstruction (``missing``: the paper's unstated part) fails the
    comparison ``lhs relation rhs``; raises when it holds."""
    if holds(lhs, relation, rhs, tol=tol):
        raise ValueError(f"not_reproduced() needs a failed comparison, but {lhs!r} {relation} {rhs!r} holds")
    comparison = {"lhs": lhs, "relation": relation, "rhs": rhs, "tolerance": tol}
    return Result("not-reproduced", {"missing": missing, "counterexample": counterexample, "comparison": comparison, **evidence})


def illustrated(**evidence: Any) -> Result:
    """``illustrated``: asymptotic statements; evidence holds the fitted exponent/trend."""
    if not evidence:
        raise ValueError("an illustrated claim needs its evidence (fitted exponent, ratios)")
    return Result("illustrated", evidence)


# --- running -------------------------------------------------------------------------------


def load_all() -> dict[str, Claim]:
    """Import every claims module (registering its entries) and return the registry; a ``rests_on`` naming no
    registered claim raises ``ValueError``."""
    for name in CLAIM_MODULES:
        importlib.import_module(f"dpcompanion.claims.{name}")
    unknown = [(c.id, d) for c in REGISTRY.values() for d, _ in c.rests_on if d not in REGISTRY]
    if unknown:
        raise ValueError(f"rests_on names unregistered claims: {unknown}")
    return REGISTRY


def _run(check: Callable[..., Result], cid: str, **kwargs: Any) -> tuple[str, dict[str, Any]]:
    try:
        res = check(**kwargs)
        if not isinstance(res, Result) or res.status not in STATUSES:
            raise TypeError(f"check of {cid} returned {res!r}, not a Result")
        return res.status, res.evidence
    except Exception as exc:  # noqa: BLE001 - reported, never swallowed silently
        return "error", {"exception": repr(exc), "traceback": traceback.format_exc()}


_STATUS: dict[str, str] = {}  # claim id -> the status its check returned (each run once per process for this)


def status_of(cid: str) -> str:
    """The status the check of claim ``cid`` returns (run at most once per process here)."""
    if cid not in _STATUS:
        c = load_all()[cid]
        _STATUS[cid] = _run(c.check, c.id)[0]
    return _STATUS[cid]


def run_claim(c: Claim, *, mutants: bool = False) -> dict[str, Any]:
    """Run one check; an exception is reported as ``status: "error"`` (not a finding). With ``mutants`` a
    passing entry's check runs again with ``mutant=True``: ``mutant_caught`` is whether it came out
    ``refuted`` (``False`` without a mutant), ``None`` for the other statuses. ``rests_on`` lists the claims it
    builds on with their statuses, and ``rests_on_refuted`` those of them that come out refuted (each
    computed by running that claim's check)."""
    t0 = time.perf_counter()
    status, evidence = _run(c.check, c.id)
    _STATUS[c.id] = status
    deps = [{"id": d, "part": part, "status": status_of(d)} for d, part in c.rests_on]
    out = {
        "id": c.id,
        "status": status,
        "method": c.method,
        "source": c.source,
        "statement": c.statement,
        "evidence": _jsonable(evidence),
        "corrects": c.corrects,
        "corrected_by": c.corrected_by,
        "versions": list(c.versions),
        "mutant": c.mutant if c.mutant is not None else (evidence.get("mutant") if isinstance(evidence.get("mutant"), str) else None),
        "impact": c.impact if c.impact is not None else evidence.get("impact"),
        "severity": c.severity,
        "rests_on": deps,
        "rests_on_refuted": [d["id"] for d in deps if d["status"] == "refuted"],
        "seconds": round(time.perf_counter() - t0, 4),
    }
    if mutants:
        if status in PASSING and c.takes_mutant:
            m_status, m_ev = _run(c.check, c.id, mutant=True)
            out["mutant_status"] = m_status
            out["mutant_caught"] = m_status == "refuted"
            if m_status == "refuted":
                out["mutant_counterexample"] = _jsonable(m_ev.get("counterexample"))
            elif m_status == "error":
                out["mutant_error"] = str(m_ev.get("exception"))
        else:
            out["mutant_caught"] = False if status in PASSING else None
        out["seconds"] = round(time.perf_counter() - t0, 4)
    return out


def run_checks(prefix: str | None = None, *, mutants: bool = False) -> list[dict[str, Any]]:
    """Run every registered check whose id starts with ``prefix`` (all when None)."""
    reg = load_all()
    return [run_claim(c, mutants=mutants) for cid, c in sorted(reg.items()) if prefix is None or cid.startswith(prefix)]


def _jsonable(x: Any) -> Any:
    """Evidence as JSON-safe values (numpy scalars/arrays, sympy objects, tuples)."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (str, bool, type(None), int)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.generic):
        return _jsonable(x.item())
    return str(x)


# --- theorem boxes: the papers' statements, declared once, shown on the pages -----------------


@dataclasses.dataclass(frozen=True)
class Theorem:
    """A result of the papers as the book states it: the box a page shows above its claims."""

    id: str  # claim-id prefix of the result, e.g. "H-T4.4"
    kind: str  # theorem, lemma, proposition, remark... (its heading)
    title: str
    label: str  # the box's one anchor (a ``{ref}`` target)
    statement: str  # MyST (LaTeX allowed)
    sketch: str = ""  # the proof in words, shown below the statement


THEOREMS: dict[str, Theorem] = {}
THEOREM_KINDS = ("theorem", "lemma", "proposition", "remark", "corollary", "definition")


def theorem(id: str, *, kind: str, title: str, label: str, statement: str, sketch: str = "") -> Theorem:
    """Declare the box of result ``id`` (once); :func:`dpcompanion.book.claims_page.show_theorem` renders it."""
    if kind not in THEOREM_KINDS:
        raise ValueError(f"kind must be one of {THEOREM_KINDS}, got {kind!r}")
    if id in THEOREMS:
        raise ValueError(f"theorem id {id!r} declared twice")
    THEOREMS[id] = Theorem(id=id, kind=kind, title=title, label=label, statement=statement.strip(),
                           sketch=" ".join(sketch.split()))
    return THEOREMS[id]
