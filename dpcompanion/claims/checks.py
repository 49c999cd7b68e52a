"""What the section modules' checks share: the paper's budget, the rounding tolerance, the papers'
names, and the margin loop of the end-to-end entries (a theorem's final inequality against the
quantity it bounds, computed exactly; margin >= 0 where the printed inequality holds).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dpcompanion.claims.registry import Result, verified_by_margins

R_PAPER = 0.3927  # H Sec. 5: (4, 1e-8)-DP = 0.1963-zCDP, R = 2 rho (claim H-C3.paper-numbers)
TOL = 1e-9  # relative rounding tolerance of the end-to-end comparisons
#: the paper an entry's ``source`` names first (imported as ``SRC``: ``source=f"{SRC} Thm 4.1"``)
HONG_SOURCE = "Hong et al. (FAccT)"
WU_SOURCE = "Wu et al."
#: the version of Wu et al. every ``W-`` entry reads
WU_VERSIONS = ("002",)


def simplest(point: dict, margin: float) -> tuple:
    """Sort key of the simplest counterexample: smallest T, then N, then the largest margin."""
    return point.get("T", 0), point.get("N", 0), -margin


def margin_result(margins, points, *, domain: str, mutant: bool, mutant_desc: str, impact: str, tol: float = TOL,
                  smallest_key: Callable[[dict, float], Any] | None = None, **evidence: Any) -> Result:
    """:func:`verified_by_margins` with the mutant's description and, for a refutation, the impact,
    ``holds_instead`` (when given), the number of failing points and the one ``smallest_key(point, margin)``
    ranks first (``smallest_counterexample``).

    >>> margin_result([0.1, -0.2], [{"T": 1}, {"T": 2}], domain="d", mutant=False, mutant_desc="m", impact="i",
    ...               smallest_key=simplest).evidence["smallest_counterexample"]
    {'T': 2}
    """
    ev = dict(evidence)
    holds_instead = ev.pop("holds_instead", None)
    ev["mutant"] = mutant_desc
    ev["checked"] = "mutant (a minimally false variant)" if mutant else "the statement as printed"
    res = verified_by_margins(margins, points=points, domain=domain, tol=tol, **ev)
    if res.status == "refuted":
        res.evidence["impact"] = impact
        if holds_instead:
            res.evidence["holds_instead"] = holds_instead
        bad = [(p, m) for p, m in zip(points, margins) if m < -tol]
        res.evidence["failing_points"] = len(bad)
        if smallest_key is not None:
            res.evidence["smallest_counterexample"] = min(bad, key=lambda pm: smallest_key(*pm))[0] if bad else None
    return res


def scaled_margins(exacts, bounds, mutant: bool) -> tuple[list[float], float]:
    """Margins (bound - exact)/bound and the bound's factor: for the mutant, just below the grid's tightest
    ratio exact/bound (so the mutant is false there)."""
    exacts, bounds = np.asarray(exacts, float), np.asarray(bounds, float)
    factor = 1.0
    if mutant:
        factor = float(np.max(exacts / bounds)) * (1 - 1e-3)
    return list((bounds * factor - exacts) / bounds), factor


def tightest(ratios, points) -> dict:
    """The grid point where exact/bound is largest, with that ratio."""
    i = int(np.argmax(ratios))
    return {"max_exact_over_bound": float(ratios[i]), "at": points[i]}


def bound_result(points, *, mutant: bool, domain: str, mutant_desc: str, impact: str, **evidence: Any) -> Result:
    """The end-to-end verdict on points holding ``"exact"`` and the printed ``"bound"``: margins
    (bound - exact)/bound through :func:`margin_result`, with the tightest point (:func:`tightest`)."""
    margins = [(p["bound"] - p["exact"]) / p["bound"] for p in points]
    ratios = [p["exact"] / p["bound"] for p in points]
    return margin_result(margins, points, smallest_key=simplest, mutant=mutant, domain=domain, mutant_desc=mutant_desc,
                         impact=impact, tightest=tightest(ratios, points), **evidence)


#: the mutant of :func:`scaled_result`
SCALED_MUTANT = "the bound multiplied by a factor just below the tightest ratio exact/bound on the grid (evidence: mutant_factor)"


def scaled_result(exacts, bounds, points, *, mutant: bool, domain: str, impact: str, **evidence: Any) -> Result:
    """The end-to-end verdict on the exact values against the printed bounds (:func:`scaled_margins`; the
    mutant's factor in the evidence as ``mutant_factor``)."""
    margins, factor = scaled_margins(exacts, bounds, mutant)
    return margin_result(margins, points, smallest_key=simplest, mutant=mutant, mutant_factor=factor, domain=domain,
                         mutant_desc=SCALED_MUTANT, impact=impact, **evidence)
