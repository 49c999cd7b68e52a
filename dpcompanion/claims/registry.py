"""The claim registry: every checked statement of both papers, with the check that decides it.

A claim's *status* never comes from the registry entry itself: it is whatever the entry's
check function returns when run, and the check functions build their :class:`Result`
through the constructors below, which look at the evidence (a SymPy residual, sampled
margins, a counterexample) and refuse to report a status the evidence does not support.

Statuses (SPEC section 0): ``proved`` (SymPy reduces the claim to an identity),
``verified`` (numerically on a stated domain; sample size and worst margin reported),
``refuted`` (a counterexample with both sides' values), ``illustrated`` (asymptotic
statements: fitted exponent/trend reported), ``open`` (not checked; must not occur).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import time
import traceback
from typing import Any, Callable, Iterable

STATUSES = ("proved", "verified", "refuted", "illustrated", "open")
METHODS = ("sympy", "numeric", "bruteforce", "montecarlo", "end-to-end")

#: modules under dpcompanion.claims that define entries (imported by :func:`load_all`).
CLAIM_MODULES: tuple[str, ...] = (
    "h_privacy",
    "h_gd",
    "h_momentum",
    "h_psgd",
    "h_true_risk",
    "h_tables",
    "h_slides",
    "w_adp",
    "x_unify",
    "end_to_end",
    "h_missing",
)


@dataclasses.dataclass(frozen=True)
class Result:
    """Outcome of one check. Build it with :func:`proved`, :func:`verified_by_margins`,
    :func:`refuted`, :func:`illustrated`; not directly."""

    status: str
    evidence: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Claim:
    id: str  # SPEC ID with part suffix, e.g. "H-T4.4.T-opt"
    source: str  # e.g. "H (001) Thm 4.4, Eq. (27)"
    statement: str  # paraphrase, LaTeX allowed
    method: str  # one of METHODS
    check: Callable[[], Result]
    corrects: str | None = None  # for a corrected statement: the id of the refuted one
    corrected_by: str | None = None  # for a refuted statement: the id of its correction
    versions: tuple[str, ...] = ("001",)  # paper versions this wording appears in


REGISTRY: dict[str, Claim] = {}


def claim(
    id: str,
    *,
    source: str,
    statement: str,
    method: str,
    corrects: str | None = None,
    corrected_by: str | None = None,
    versions: Iterable[str] = ("001",),
) -> Callable[[Callable[[], Result]], Callable[[], Result]]:
    """Decorator registering ``check`` as the computation deciding claim ``id``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")

    def register(check: Callable[[], Result]) -> Callable[[], Result]:
        if id in REGISTRY:
            raise ValueError(f"claim id {id!r} registered twice")
        REGISTRY[id] = Claim(
            id=id,
            source=source,
            statement=statement,
            method=method,
            check=check,
            corrects=corrects,
            corrected_by=corrected_by,
            versions=tuple(versions),
        )
        return check

    return register


# --- result constructors: the only way a status is set ------------------------------------


def proved(residual: Any, **evidence: Any) -> Result:
    """``proved`` if the SymPy ``residual`` simplifies to exactly zero (or is ``True``)."""
    import sympy as sp

    expr = sp.sympify(residual)
    ok = expr is sp.true or sp.simplify(expr) == 0
    if not ok:
        raise AssertionError(f"residual does not vanish: {expr}")
    return Result("proved", {"residual": str(expr), **evidence})


def verified_by_margins(
    margins: Iterable[float], *, domain: str, points: Iterable[Any] | None = None, tol: float = 0.0, **evidence: Any
) -> Result:
    """``verified`` when every margin (>= 0 means the claim holds at that point) is >= -tol,
    else ``refuted`` with the worst point as counterexample."""
    margins = list(margins)
    points = list(points) if points is not None else [None] * len(margins)
    if not margins:
        raise ValueError("no sampled points: nothing was checked")
    worst = min(range(len(margins)), key=lambda i: margins[i])
    ev = {"domain": domain, "samples": len(margins), "worst_margin": float(margins[worst]), **evidence}
    if margins[worst] >= -tol and all(math.isfinite(m) for m in margins):
        return Result("verified", ev)
    ev["counterexample"] = points[worst]
    return Result("refuted", ev)


def refuted(*, counterexample: Any, printed: Any, actual: Any, **evidence: Any) -> Result:
    """``refuted``: the printed value/side and the computed one at ``counterexample``."""
    return Result("refuted", {"counterexample": counterexample, "printed": printed, "actual": actual, **evidence})


def illustrated(**evidence: Any) -> Result:
    """``illustrated``: asymptotic statements; evidence holds the fitted exponent/trend."""
    if not evidence:
        raise ValueError("an illustrated claim needs its evidence (fitted exponent, ratios)")
    return Result("illustrated", evidence)


# --- running -------------------------------------------------------------------------------


def load_all() -> dict[str, Claim]:
    """Import every claims module (registering its entries) and return the registry."""
    for name in CLAIM_MODULES:
        try:
            importlib.import_module(f"dpcompanion.claims.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"dpcompanion.claims.{name}":
                raise
    return REGISTRY


def run_claim(c: Claim) -> dict[str, Any]:
    """Run one check; an exception is reported as ``status: "error"`` (not a finding)."""
    t0 = time.perf_counter()
    try:
        res = c.check()
        if not isinstance(res, Result) or res.status not in STATUSES:
            raise TypeError(f"check of {c.id} returned {res!r}, not a Result")
        status, evidence = res.status, res.evidence
    except Exception as exc:  # noqa: BLE001 - reported, never swallowed silently
        status, evidence = "error", {"exception": repr(exc), "traceback": traceback.format_exc()}
    return {
        "id": c.id,
        "status": status,
        "method": c.method,
        "source": c.source,
        "statement": c.statement,
        "evidence": _jsonable(evidence),
        "corrects": c.corrects,
        "corrected_by": c.corrected_by,
        "versions": list(c.versions),
        "seconds": round(time.perf_counter() - t0, 4),
    }


def run_checks(prefix: str | None = None) -> list[dict[str, Any]]:
    """Run every registered check whose id starts with ``prefix`` (all when None)."""
    reg = load_all()
    return [run_claim(c) for cid, c in sorted(reg.items()) if prefix is None or cid.startswith(prefix)]


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
    try:
        import numpy as np

        if isinstance(x, np.ndarray):
            return _jsonable(x.tolist())
        if isinstance(x, np.generic):
            return _jsonable(x.item())
    except ImportError:  # pragma: no cover
        pass
    return str(x)
