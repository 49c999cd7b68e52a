"""Verdict rules for the experiment pages: what the paper printed against what we measured.

One :class:`Rule` per figure panel, keyed by ``"<figure id>/<panel>"``. A rule holds

* ``paper``: only what the paper printed (a number, or a shape read from its figure or
  its text), quoted with file, figure and panel;
* ``tolerance``: the stated criterion (significance level, direction);
* ``judge(**measured) -> (verdict, ours, note)``: computed from our numbers only.

:func:`compare` turns a rule and measurements into one row of the paper-vs-ours table
(:func:`dpcompanion.book.report.paper_vs_ours`). When our sizes differ from the paper's
(``sizes_match=False``) the row is not judged: its verdict is ``not comparable`` and its
note starts with ``not compared (sizes differ)``, naming both sizes. Comparisons are
like with like: means over repeats with standard errors; "significant" means a z-score
of at least :data:`Z` (two-sided about 5 %).

The figures of Hong et al. are images that the text extractions (files 000, 001) do not
carry: their numbers cannot be read, so every rule here compares a *shape* stated in the
paper's text or caption.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["Z", "Rule", "RULES", "compare", "rule", "NOT_COMPARED"]

#: z-score at which a difference counts as significant (two-sided ~5 %)
Z = 2.0
NOT_COMPARED = "not compared (sizes differ)"


@dataclasses.dataclass(frozen=True)
class Rule:
    id: str
    item: str
    paper: str
    tolerance: str
    judge: Callable[..., tuple[str, str, str]]


def _z(diff: float, se: float) -> float:
    if not (math.isfinite(diff) and math.isfinite(se)):
        return float("nan")
    if se <= 0:
        return math.copysign(math.inf, diff) if diff else 0.0
    return diff / se


def _fz(z: float) -> str:
    return "inf" if math.isinf(z) else f"{z:.1f}"


def _judge_eff(*, N: Sequence[int], diff: Sequence[float], se: Sequence[float], what: str) -> tuple[str, str, str]:
    """``diff`` > 0 means exp is better than uni (lower loss / higher accuracy)."""
    N, d, s = [int(n) for n in N], np.asarray(diff, float), np.asarray(se, float)
    if len(N) < 2 or d.shape != (len(N),) or s.shape != (len(N),):
        raise ValueError(f"need >= 2 sizes N with one diff and se each, got N={N}, diff={d.shape}, se={s.shape}")
    zs = [_z(a, b) for a, b in zip(d, s)]
    sig = [n for n, z in zip(N, zs) if z >= Z]
    worse = [n for n, z in zip(N, zs) if z <= -Z]
    ours = "; ".join(f"N={n}: {a:+.3g} ± {b:.2g} (z {_fz(z)})" for n, a, b, z in zip(N, d, s, zs))
    grows = d[-1] >= d[0]
    if worse:
        return "disagrees", ours, f"exp significantly worse than uni in {what} at N = {worse}"
    if zs[-1] >= Z and grows:
        return "agrees", ours, f"exp significantly better in {what} at the largest N; the gap at the largest N is at least the gap at the smallest (significant at N = {sig})"
    if zs[-1] >= Z:
        return "partly", ours, f"exp significantly better at the largest N, but the gap does not grow with N (significant at N = {sig})"
    if zs[-1] > 0:
        return "partly", ours, f"exp ahead at the largest N but not significantly (z {_fz(zs[-1])} < {Z})"
    return "disagrees", ours, f"exp not ahead of uni in {what} at the largest N"


def _judge_scale(*, scales: Sequence[float], rel_dyn: Sequence[float], se_dyn: Sequence[float],
                 tvar: Sequence[float]) -> tuple[str, str, str]:
    """Relative loss of dyn (negative = better than uni) against the influence spread."""
    sc, r, s, tv = [float(x) for x in scales], np.asarray(rel_dyn, float), np.asarray(se_dyn, float), np.asarray(tvar, float)
    if len(sc) < 1 or not (r.shape == s.shape == tv.shape == (len(sc),)):
        raise ValueError("scales, rel_dyn, se_dyn and tvar must have the same length >= 1")
    zs = [_z(-a, b) for a, b in zip(r, s)]  # > 0: dyn better
    ours = "; ".join(f"scale {x:g}: {a:+.3g} ± {b:.2g}" for x, a, b in zip(sc, r, s))
    k = int(np.nanargmax(tv))
    better = [x for x, z in zip(sc, zs) if z >= Z]
    worse = [x for x, z in zip(sc, zs) if z <= -Z]
    if zs[k] >= Z:
        return "agrees", ours, f"dyn significantly below uni at the scale of largest T·Var(q) ({sc[k]:g}); significant at scales {better}"
    if better:
        return "partly", ours, f"dyn significantly below uni at scales {better}, not at the scale of largest T·Var(q) ({sc[k]:g})"
    if worse and len(worse) == len(sc):
        return "disagrees", ours, "dyn significantly above uni at every scale"
    return "disagrees", ours, f"dyn never significantly below uni (z at the largest-variance scale {_fz(zs[k])})"


def _judge_curv(*, sharp: float, sharp_se: float, flat: float, flat_se: float) -> tuple[str, str, str]:
    z = _z(sharp - flat, math.hypot(sharp_se, flat_se))
    ours = f"sharp {sharp:.4g} ± {sharp_se:.2g}, flat {flat:.4g} ± {flat_se:.2g} (z {_fz(z)})"
    if z >= Z:
        return "agrees", ours, "the sharper loss ends significantly higher"
    if z > -Z:
        return "partly", ours, f"no significant difference (|z| < {Z})"
    return "disagrees", ours, "the sharper loss ends significantly lower"


def _judge_mom(*, cells: Sequence[dict]) -> tuple[str, str, str]:
    """``cells``: dicts with ``scale``, ``T``, ``diff`` = loss(expinfl) - loss(momexpinfl)
    (> 0: momexpinfl ahead) and ``se``. The paper's claim concerns the cell (25, 100)."""
    key = [c for c in cells if float(c["scale"]) == 25.0 and int(c["T"]) == 100]
    if len(key) != 1:
        raise ValueError("h-f-mom needs exactly one cell at data scale 25 and T = 100")
    z25 = _z(key[0]["diff"], key[0]["se"])
    others = [(c["scale"], c["T"]) for c in cells if c is not key[0] and _z(c["diff"], c["se"]) >= Z]
    ours = "; ".join(f"scale {c['scale']:g}, T={c['T']}: {c['diff']:+.3g} ± {c['se']:.2g}" for c in cells)
    if z25 >= Z and not others:
        return "agrees", ours, "momexpinfl significantly ahead at scale 25, T = 100 only"
    if z25 >= Z:
        return "partly", ours, f"momexpinfl ahead at scale 25, T = 100, but also at {others}"
    if z25 > 0:
        return "partly", ours, f"momexpinfl ahead at scale 25, T = 100, not significantly (z {_fz(z25)})"
    return "disagrees", ours, f"momexpinfl not ahead at scale 25, T = 100 (z {_fz(z25)})"


def _judge_infl(*, diff: float, se: float) -> tuple[str, str, str]:
    """``diff``: mean influence over the last third of the steps minus the first third."""
    z = _z(diff, se)
    ours = f"late - early = {diff:.3g} ± {se:.2g} (z {_fz(z)})"
    if z >= Z:
        return "agrees", ours, "q_t significantly larger late than early"
    if z > -Z:
        return "partly", ours, f"no significant trend (|z| < {Z})"
    return "disagrees", ours, "q_t significantly smaller late than early"


RULES: dict[str, Rule] = {r.id: r for r in (
    Rule("h-f-infl/increasing", "influence q_t, late vs early steps",
         "000 App. D (Fig. 3 middle): the influence increases as learning continues",
         f"agrees: mean q_t over the last third of the steps above the first third with z >= {Z}",
         _judge_infl),
    Rule("h-f-eff/loss", "final training loss, exp vs uni, by N",
         "001 Fig. 1 middle, Sec. 5: as the training size increases, exp outperforms uni on the training loss",
         f"agrees: exp lower at the largest N with z >= {Z} and the gap at the largest N >= at the smallest; "
         f"disagrees: exp significantly higher anywhere, or not lower at the largest N",
         lambda **m: _judge_eff(**m, what="training loss")),
    Rule("h-f-eff/acc", "test accuracy, exp vs uni, by N",
         "001 Fig. 1 right, Sec. 5: as the training size increases, exp outperforms uni on the test accuracy",
         f"as for the loss (z >= {Z}), with accuracy differences exp - uni",
         lambda **m: _judge_eff(**m, what="test accuracy")),
    Rule("h-f-scale/dyn", "relative final loss of dyn vs data scale",
         "000 Sec. 5 and App. D (Fig. 2 middle, Fig. 3 right): dynamic schedules improve the final loss when the "
         "variance of influence is large",
         f"agrees: (e_dyn - e_uni)/e_uni below 0 with z >= {Z} at the scale of largest T·Var(q)",
         _judge_scale),
    Rule("h-f-curv", "mean final loss, sharp vs flat loss",
         "000 Fig. 1 and Sec. 4.1.3: the highly-curved loss ends at a higher mean final loss than the flatter one",
         f"agrees: sharp - flat > 0 with z >= {Z}; disagrees: < 0 with z <= -{Z}",
         _judge_curv),
    Rule("h-f-mom", "final loss, expinfl vs momexpinfl",
         "000 Sec. 5 (Fig. 2 right): expinfl comparable to momexpinfl; momexpinfl ahead only at data scale 25 "
         "with T = 100",
         f"agrees: momexpinfl lower at (25, 100) with z >= {Z} and not significantly lower elsewhere",
         _judge_mom),
)}


def rule(rule_id: str) -> Rule:
    if rule_id not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}, got {rule_id!r}")
    return RULES[rule_id]


def compare(rule_id: str, *, sizes_match: bool, sizes_note: str = "", item: str | None = None,
            **measured: Any) -> dict[str, str]:
    """One paper-vs-ours row for ``rule_id``. ``sizes_match=False``: not judged (verdict
    ``not comparable``, note ``not compared (sizes differ): <sizes_note>``), though our
    numbers are still shown.

    >>> r = compare("h-f-curv", sizes_match=True, sharp=1.0, sharp_se=0.1, flat=0.5, flat_se=0.1)
    >>> r["verdict"]
    'agrees'
    >>> compare("h-f-curv", sizes_match=False, sizes_note="N 10 vs 1000", sharp=1.0, sharp_se=0.1,
    ...         flat=0.5, flat_se=0.1)["note"].split(".")[0]
    'not compared (sizes differ): N 10 vs 1000'
    """
    r = rule(rule_id)
    verdict, ours, note = r.judge(**measured)
    row = {"item": item or r.item, "paper": r.paper, "ours": ours, "verdict": verdict,
           "note": f"{note}. Tolerance: {r.tolerance}"}
    if not sizes_match:
        row["verdict"] = "not comparable"
        head = f"{NOT_COMPARED}: {sizes_note}" if sizes_note else NOT_COMPARED
        row["note"] = f"{head}. At our sizes the rule would give '{verdict}' ({note})"
    return row
