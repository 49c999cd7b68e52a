"""Readings of a printed number we do not reproduce (issue 33, item 8).

Where a deterministic number of a paper (an epsilon, a bound, a table entry) disagrees with
ours, the row searches the *natural readings* of the stated protocol (data size, steps,
delta, sampling scheme, accountant and its conversion, the theorem's constants and forms,
...), each a :class:`Reading` whose value library code computes, and reports the closest one
(:func:`closest`): "reproduced under reading X (deviation d)" or "no natural reading
reproduces it (closest: X, value v, deviation d; tried: ...)" (:func:`note`), and the row's
JSON carries it as ``reading: {name, value, deviation, relative, reproduces, stated}``
(:func:`field`).

The rule: **the verdict is about the stated protocol; a reading only explains.** A row whose
stated protocol does not reproduce the printed number stays ``disagrees`` even when another
reading does (the note then says under which reading the number is reproduced); no reading
ever changes a verdict. A reading marked ``stated`` is one the paper's text allows (for
instance each accountant where the paper names none); the others depart from the text.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

__all__ = ["Reading", "Closest", "closest", "note", "field"]


@dataclasses.dataclass(frozen=True)
class Reading:
    """One reading of a protocol: its ``name`` (what differs from the stated protocol), the
    ``value`` library code computes under it, and whether the paper's text allows it
    (``stated``)."""

    name: str
    value: float
    stated: bool = False


@dataclasses.dataclass(frozen=True)
class Closest:
    """The reading closest to a printed ``target``: its absolute ``deviation`` (for a printed
    relation ``value > target``, how far the value falls short of holding it), the deviation
    relative to ``|target|`` (None for a printed zero), whether it reproduces the printed
    number within the row's tolerance, and every reading tried."""

    reading: Reading
    target: float
    deviation: float
    relative: float | None
    reproduces: bool
    tried: tuple[Reading, ...]


def _deviation(value: float, target: float, relation: str) -> float:
    if relation == ">":
        return max(0.0, target - value)
    return abs(value - target)


def closest(target: float, readings: Sequence[Reading], *, atol: float = 0.0, rtol: float = 0.0,
            relation: str = "=") -> Closest:
    """The reading whose value is closest to ``target`` (ties: the first, so a stated reading
    listed first wins), and whether it reproduces it within ``atol + rtol |target|``.
    ``relation=">"``: the printed statement is ``value > target`` (an inequality); the
    deviation is the shortfall ``max(0, target - value)`` and it reproduces when it holds.

    >>> c = closest(0.29, [Reading("a", 0.24, stated=True), Reading("b", 0.288)], atol=0.005)
    >>> c.reading.name, round(c.deviation, 6), c.reproduces
    ('b', 0.002, True)
    >>> closest(1.0, [Reading("x", 0.5), Reading("y", 2.0)], relation=">").reading.name
    'y'
    """
    if not readings:
        raise ValueError("readings must name at least one reading")
    if relation not in ("=", ">"):
        raise ValueError(f"relation must be '=' or '>', got {relation!r}")
    target = float(target)
    if not math.isfinite(target):
        raise ValueError(f"target must be finite, got {target}")
    devs = [_deviation(float(r.value), target, relation) for r in readings]
    i = min(range(len(readings)), key=lambda k: (devs[k], k))
    d = devs[i]
    ok = (float(readings[i].value) > target) if relation == ">" else d <= atol + rtol * abs(target) + 1e-15 * max(
        1.0, abs(target))
    return Closest(readings[i], target, d, d / abs(target) if target else None, bool(ok), tuple(readings))


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def note(c: Closest, *, tried: str | None = None) -> str:
    """The sentence a row's note carries: "reproduced under reading X (value v, deviation d)"
    or "no natural reading reproduces it (closest: X, value v, deviation d; tried: ...)".
    ``tried``: a summary of the readings searched (default: how many; each one's name and
    value is in the row's ``reading`` field, :func:`field`, and on the errata page).

    >>> note(closest(2.0, [Reading("a", 1.0, True), Reading("b", 2.0)]))
    'reproduced under reading b (value 2, deviation 0; not the stated protocol: the verdict stays with it)'
    """
    r = c.reading
    rel = f", relative {c.relative:.3g}" if c.relative is not None and c.deviation else ""
    where = f"value {_fmt(r.value)}, deviation {_fmt(c.deviation)}{rel}"
    if c.reproduces:
        tail = "" if r.stated else "; not the stated protocol: the verdict stays with it"
        return f"reproduced under reading {r.name} ({where}{tail})"
    listed = f"{len(c.tried)} readings" if tried is None else f"{len(c.tried)}: {tried}"
    return f"no natural reading reproduces it (closest: {r.name}, {where}; tried {listed})"


def field(c: Closest) -> dict:
    """The ``reading`` field of a row's JSON: the closest reading's name and value, its
    deviation (absolute and relative), whether it reproduces the printed number and whether
    it is a reading the paper's text allows.

    >>> field(closest(2.0, [Reading("a", 1.5)]))["deviation"]
    0.5
    """
    return {"name": c.reading.name, "value": float(c.reading.value), "deviation": float(c.deviation),
            "relative": c.relative, "reproduces": c.reproduces, "stated": c.reading.stated, "tried": len(c.tried),
            "readings": [{"name": x.name, "value": float(x.value), "stated": x.stated} for x in c.tried]}
