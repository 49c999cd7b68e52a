"""What the section modules' checks share: the paper's budget, the rounding tolerance, and the
margin loop of the end-to-end entries (a theorem's final inequality against the quantity it
bounds, computed exactly).

Every comparison goes through :func:`~dpcompanion.claims.registry.verified_by_margins`
(margin >= 0 means the printed inequality holds at that point), so a refutation can only come
from a failed comparison, and carries the worst point. A check built on :func:`margin_result`
takes ``mutant``: with ``mutant=True`` it runs the same comparison on a minimally false variant
of the claim (described under ``evidence["mutant"]``), which must come out refuted.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dpcompanion.claims.registry import Result, verified_by_margins

R_PAPER = 0.3927  # H Sec. 5: (4, 1e-8)-DP = 0.1963-zCDP, R = 2 rho (claim H-C3.paper-numbers)
TOL = 1e-9  # relative rounding tolerance of the end-to-end comparisons
#: The paper an entry's ``source`` names first (``source=f"{SRC} Thm 4.1"``, each section module
#: importing the one it reads as ``SRC``): written once, so that every page cites a paper alike.
HONG_SOURCE = "Hong et al. (FAccT)"
WU_SOURCE = "Wu et al."
#: The version of Wu et al. its entries read (the ``versions`` of every ``W-`` entry): ``002``.
WU_VERSIONS = ("002",)


def simplest(point: dict, margin: float) -> tuple:
    """Sort key of the simplest counterexample: smallest T, then N, then the largest margin."""
    return point.get("T", 0), point.get("N", 0), -margin


def margin_result(margins, points, *, domain: str, mutant: bool, mutant_desc: str, impact: str, tol: float = TOL,
                  smallest_key: Callable[[dict, float], Any] | None = None, **evidence: Any) -> Result:
    """:func:`verified_by_margins` with the mutant's description and, for a refutation, the impact, a
    ``holds_instead`` (when given), the number of failing points and, with ``smallest_key(point, margin)``,
    the failing point it ranks first (``smallest_counterexample``).

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
    """Margins (bound - exact)/bound; for the mutant the bound is scaled by a factor just below the tightest
    ratio exact/bound of the grid (so the mutant is false at that point), and the factor is returned."""
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
    """The end-to-end verdict on grid points that each hold the exact value (``"exact"``) and the printed bound
    (``"bound"``): margins (bound - exact)/bound through :func:`margin_result`, the simplest failing point, and
    the tightest point (:func:`tightest`) in the evidence."""
    margins = [(p["bound"] - p["exact"]) / p["bound"] for p in points]
    ratios = [p["exact"] / p["bound"] for p in points]
    return margin_result(margins, points, smallest_key=simplest, mutant=mutant, domain=domain, mutant_desc=mutant_desc,
                         impact=impact, tightest=tightest(ratios, points), **evidence)


#: the mutant of :func:`scaled_result`
SCALED_MUTANT = "the bound multiplied by a factor just below the tightest ratio exact/bound on the grid (evidence: mutant_factor)"


def scaled_result(exacts, bounds, points, *, mutant: bool, domain: str, impact: str, **evidence: Any) -> Result:
    """The end-to-end verdict on the exact values against the printed bounds, margins (bound - exact)/bound; the
    mutant (:data:`SCALED_MUTANT`, :func:`scaled_margins`) scales the bounds just past the tightest point, and its
    factor is in the evidence (``mutant_factor``)."""
    margins, factor = scaled_margins(exacts, bounds, mutant)
    return margin_result(margins, points, smallest_key=simplest, mutant=mutant, mutant_factor=factor, domain=domain,
                         mutant_desc=SCALED_MUTANT, impact=impact, **evidence)
