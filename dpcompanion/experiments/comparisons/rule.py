"""The pieces every verdict rule is made of (:mod:`dpcompanion.experiments.comparisons`).

A :class:`Rule` holds

* ``paper``: only what the paper printed (a number, or a shape read from its figure or text),
  quoted with file, figure/table and panel;
* ``tolerance``: the stated criterion (significance level, relative tolerance, direction);
* ``judge(**measured) -> (verdict, ours, note)`` or ``(verdict, ours, note, paper)``: computed
  from our numbers (and, for rules whose printed value depends on the row, such as one cell of
  a table, the printed value passed in as ``printed``); the optional fourth element is the
  paper column for that row (what the paper printed for it);
* ``judged``: ``False`` for a row that is shown but never judged (the paper's quantity and
  ours are not the same quantity, or the row is a finding beyond the paper): its judge always
  says ``not comparable`` and says why.

Verdict words are those of :data:`dpcompanion.book.report.VERDICTS`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

__all__ = ["Z", "NOT_COMPARED", "Rule", "zscore", "fmt_z", "by_z", "by_ratio", "rel_within"]

#: z-score at which a difference counts as significant (two-sided ~5 %)
Z = 2.0
#: the note of every row not judged because our sizes differ from the paper's
NOT_COMPARED = "not compared (sizes differ)"


@dataclasses.dataclass(frozen=True)
class Rule:
    id: str
    item: str
    paper: str
    tolerance: str
    judge: Callable[..., tuple]
    judged: bool = True


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


def by_z(z: float, *, up: str, down: str) -> tuple[str, str]:
    """``(verdict, note)`` of a difference in the claimed direction with z-score ``z``:
    ``z >= Z`` agrees (note ``up``), ``z <= -Z`` disagrees (note ``down``), in between partly
    (no significant difference).

    >>> by_z(2.5, up="higher", down="lower"), by_z(-2.0, up="higher", down="lower")[0]
    (('agrees', 'higher'), 'disagrees')
    >>> by_z(1.9, up="higher", down="lower")
    ('partly', 'no significant difference (|z| < 2.0)')
    """
    if z >= Z:
        return "agrees", up
    if z > -Z:
        return "partly", f"no significant difference (|z| < {Z})"
    return "disagrees", down


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
