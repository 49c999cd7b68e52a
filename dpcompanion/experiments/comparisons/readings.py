"""Readings of a printed number we do not reproduce.

Where a deterministic number of a paper (an epsilon, a bound, a table entry) disagrees with ours, the row
tries the *natural readings* of the stated protocol (data size, steps, delta, accountant, the theorem's
constants and forms, ...), each a :class:`Reading` whose value library code computes, and reports the
closest (:func:`closest`, :func:`note`, the row's ``reading`` field :func:`field`). Where the text leaves a
constant open, :func:`fit_constants` fits it to the printed numbers and names the nearest value with a
source (:data:`NATURAL_SLACK`). **The verdict is about the stated protocol: a reading or a fit only
explains, it never changes a verdict.** A reading marked ``stated`` is one the paper's text allows."""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

__all__ = ["Reading", "Closest", "closest", "note", "field", "Candidate", "Fit", "fit_constants", "fit_note", "fit_field",
           "NATURAL_SLACK"]


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


# ------------------------------------------------------------------------ constants the text leaves open, fitted

#: a fitted constant "has a natural source" when a named value of it (a library's default, a
#: tutorial's constant, another table of the paper), plugged in, reproduces the printed numbers
#: within this much more relative deviation than the best fit itself
NATURAL_SLACK = 0.01


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A named value a fitted constant may have come from: ``name`` says where (a library's
    default, a tutorial's constant, another table of the paper), ``value`` is it."""

    name: str
    value: float


@dataclasses.dataclass(frozen=True)
class Fit:
    """The best fit of the constants ``names`` that the text leaves open (the others as
    stated): their ``values``, the printed ``targets`` and the ``fitted`` numbers they give,
    the fit's ``deviation`` (the largest relative deviation over the targets, the quantity
    minimised), whether every fitted number rounds to its printed one (``reproduces``), and per
    constant the nearest named value (``nearest``: its candidate, its own deviation with the
    other constants at their fitted values, and whether it is a natural source)."""

    names: tuple[str, ...]
    values: tuple[float, ...]
    targets: tuple[float, ...]
    fitted: tuple[float, ...]
    deviation: float
    reproduces: bool
    nearest: tuple[dict, ...]
    context: str = ""


def _max_rel(values: Sequence[float], targets: Sequence[float]) -> float:
    return max(abs(float(v) - t) / abs(t) for v, t in zip(values, targets))


def fit_constants(targets: Sequence[float], model, *, names: Sequence[str], bounds: Sequence[tuple[float, float]],
                  log: Sequence[bool] | None = None, candidates: Sequence[Sequence[Candidate]] | None = None,
                  decimals: int | None = None, integer: Sequence[bool] | None = None, context: str = "",
                  start: Sequence[float] | None = None) -> Fit:
    """Fit the constants ``names`` (within ``bounds``; searched on a log scale where ``log``) so
    that ``model(*values)`` (one number per target) comes closest to the printed ``targets``:
    the largest relative deviation is minimised (bounded Brent for one constant; for several,
    Nelder-Mead from ``start``, else from each point of a 3-point grid per constant). ``integer`` constants are rounded after the
    fit (and the deviation recomputed). ``decimals``: the printed precision, for ``reproduces``
    (every fitted number rounds to its target). ``candidates``: per constant, the named values
    it may have come from (:class:`Candidate`), each judged by :data:`NATURAL_SLACK`.

    >>> f = fit_constants([2.0, 4.0], lambda k: [k, 2 * k], names=["k"], bounds=[(0.1, 10)], decimals=2,
    ...                   candidates=[[Candidate("a library's default", 2.0), Candidate("far", 5.0)]])
    >>> round(f.values[0], 4), f.reproduces, f.nearest[0]["name"], f.nearest[0]["natural"]
    (2.0, True, "a library's default", True)
    """
    from scipy import optimize

    targets = tuple(float(t) for t in targets)
    if not targets or any(t == 0 or not math.isfinite(t) for t in targets):
        raise ValueError(f"targets must be finite and non-zero, got {targets}")
    k = len(names)
    if k == 0 or len(bounds) != k:
        raise ValueError(f"need one (lo, hi) bound per constant, got {len(bounds)} for {k}")
    log = tuple(log) if log is not None else (False,) * k
    integer = tuple(integer) if integer is not None else (False,) * k
    to_x = [(lambda v, lg=lg: math.log(v) if lg else v) for lg in log]
    to_v = [(lambda x, lg=lg: math.exp(x) if lg else x) for lg in log]
    xb = [(to_x[i](lo), to_x[i](hi)) for i, (lo, hi) in enumerate(bounds)]

    def values_of(x):
        return tuple(min(max(to_v[i](x[i]), bounds[i][0]), bounds[i][1]) for i in range(k))

    def objective(x):
        return _max_rel(model(*values_of(x)), targets)

    if k == 1:
        r = optimize.minimize_scalar(lambda x: objective([x]), bounds=xb[0], method="bounded",
                                     options={"xatol": 1e-6 * max(1.0, abs(xb[0][1]))})
        best = values_of([r.x])
    else:
        import itertools

        starts = ([[to_x[i](v) for i, v in enumerate(start)]] if start is not None else
                  itertools.product(*[(lo + (hi - lo) * f for f in (0.25, 0.5, 0.75)) for lo, hi in xb]))
        runs = [optimize.minimize(objective, list(s), method="Nelder-Mead", options={"xatol": 1e-5, "fatol": 1e-6})
                for s in starts]
        best = values_of(min(runs, key=lambda r: r.fun).x)
    best = tuple(float(round(v)) if integer[i] else float(v) for i, v in enumerate(best))
    fitted = tuple(float(v) for v in model(*best))
    dev = _max_rel(fitted, targets)
    ok = decimals is not None and all(round(v, decimals) == round(t, decimals) for v, t in zip(fitted, targets))
    nearest = []
    for i in range(k):
        cands = list(candidates[i]) if candidates else []
        if not cands:
            nearest.append({"constant": names[i], "name": None, "value": None, "distance": None, "deviation": None,
                            "natural": False})
            continue
        c = min(cands, key=lambda c: abs(math.log(c.value / best[i])) if c.value > 0 and best[i] > 0
                else abs(c.value - best[i]))
        vals = list(best)
        vals[i] = c.value
        cdev = _max_rel(model(*vals), targets)
        nearest.append({"constant": names[i], "name": c.name, "value": float(c.value),
                        "distance": abs(c.value - best[i]) / abs(best[i]) if best[i] else None,
                        "deviation": float(cdev), "natural": bool(cdev <= dev + NATURAL_SLACK)})
    return Fit(tuple(names), best, targets, fitted, float(dev), bool(ok), tuple(nearest), context)


def fit_note(f: Fit) -> str:
    """One sentence on a fit: the constants' best values, the largest relative deviation,
    whether the fitted numbers round to the printed ones, and per constant its nearest named
    value and whether it is a natural source.

    >>> f = Fit(("N",), (60000.0,), (1.0,), (1.001,), 0.001, True,
    ...         ({"constant": "N", "name": "MNIST's training set", "value": 60000.0, "distance": 0.0,
    ...           "deviation": 0.001, "natural": True},))
    >>> fit_note(f)
    "best fit N = 60000 (largest relative deviation 0.001; every fitted number rounds to the printed one); N: nearest named value MNIST's training set (60000), a natural source (its deviation 0.001)"
    """
    vals = ", ".join(f"{n} = {_fmt(v)}" for n, v in zip(f.names, f.values))
    rounds = ("every fitted number rounds to the printed one" if f.reproduces
              else "the fitted numbers do not all round to the printed ones")
    out = f"best fit {vals} (largest relative deviation {f.deviation:.3g}; {rounds})"
    for n in f.nearest:
        if n["name"] is None:
            continue
        kind = "a natural source" if n["natural"] else "not a natural source"
        out += (f"; {n['constant']}: nearest named value {n['name']} ({_fmt(n['value'])}), {kind} "
                f"(its deviation {n['deviation']:.3g})")
    return out


def fit_field(f: Fit) -> dict:
    """A fit as JSON: the constants and their best values, the deviation, whether it
    reproduces the printed numbers, the fitted numbers and the nearest named values."""
    return {"constants": dict(zip(f.names, f.values)), "deviation": f.deviation, "reproduces": f.reproduces,
            "fitted": list(f.fitted), "printed": list(f.targets), "nearest": [dict(n) for n in f.nearest],
            "context": f.context, "note": fit_note(f)}
