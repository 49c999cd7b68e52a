"""The tuning protocol every tuned experiment follows, written once.

Candidates are scored on seeds disjoint from the reported ones (:func:`disjoint_seeds`); :func:`tune`
selects the best and, while a choice lies on an edge of its grid, extends the grid beyond it
(:func:`extend`) until the choice is interior, unless the edge is a bound the paper stated (kept, with
the paper's text; the experiment then adds a *beyond-the-paper* setting with the bound lifted) or a
hard limit is reached. The methods compared get the same grids. :func:`record` turns a trace into the
payload's ``tuning`` entries (one per parameter, with its candidates and scores, which the pages draw);
:func:`repeats_for_power` and :func:`min_detectable` size the runs at 80% power.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from scipy.stats import norm

__all__ = ["edge", "interior", "extend", "select", "tune", "record", "disjoint_seeds", "repeats_for_power",
           "min_detectable", "SCALES"]

SCALES = ("linear", "log", "to_one")


def _grid(grid) -> list:
    g = sorted(set(float(v) for v in grid))
    if not g or not all(math.isfinite(v) for v in g):
        raise ValueError(f"grid must hold at least one finite value, got {list(grid)!r}"[:200])
    return g


def edge(value, grid) -> str | None:
    """Which edge of ``grid`` ``value`` lies on: ``"low"``, ``"high"``, ``"both"`` (a grid of
    one value) or ``None`` (interior).

    >>> edge(3, [1, 2, 3]), edge(1, [1, 2, 3]), edge(2, [1, 2, 3]), edge(5, [5])
    ('high', 'low', None, 'both')
    """
    g = _grid(grid)
    v = float(value)
    if v not in g:
        raise ValueError(f"value {value!r} is not in the grid {g}")
    if len(g) == 1:
        return "both"
    return "low" if v == g[0] else "high" if v == g[-1] else None


def interior(value, grid) -> bool:
    """True when ``value`` lies strictly inside ``grid`` (a grid of one value has no inside).

    >>> interior(2, [1, 2, 3]), interior(3, [1, 2, 3])
    (True, False)
    """
    return edge(value, grid) is None


def extend(grid, side: str, *, scale: str = "linear", lower: float | None = None, upper: float | None = None,
           integer: bool = False) -> float | None:
    """The next value beyond the ``side`` (``"low"``/``"high"``) edge of ``grid``, spaced as its outermost
    step (``linear``: difference, ``log``: ratio, one value: +-value/2 or x10; ``to_one``: the distance to 1
    halved going up, doubled going down), clamped to ``[lower, upper]``; None when nothing new is left.

    >>> extend([50, 100, 150], "high"), extend([0.9, 0.99], "high", scale="to_one")
    (200.0, 0.995)
    >>> extend([1e-5, 1e-3, 1e-1], "high", scale="log"), extend([10, 20], "low", lower=1, integer=True)
    (10.0, 1.0)
    >>> extend([0.9, 0.99], "high", scale="to_one", upper=0.99) is None
    True
    """
    if side not in ("low", "high"):
        raise ValueError(f"side must be 'low' or 'high', got {side!r}")
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    g = _grid(grid)
    lo, hi = g[0], g[-1]
    if scale == "to_one":
        if not all(0 < v < 1 for v in g):
            raise ValueError(f"scale 'to_one' needs a grid in (0, 1), got {g}")
        v = 1 - (1 - hi) / 2 if side == "high" else 1 - (1 - lo) * 2
    elif scale == "log":
        if not all(v > 0 for v in g):
            raise ValueError(f"scale 'log' needs a grid > 0, got {g}")
        if len(g) == 1:
            ratio = 10.0
        else:
            ratio = g[-1] / g[-2] if side == "high" else g[1] / g[0]
        v = hi * ratio if side == "high" else lo / ratio
    else:
        if len(g) == 1:
            step = abs(lo) / 2 or 1.0
        else:
            step = g[-1] - g[-2] if side == "high" else g[1] - g[0]
        v = hi + step if side == "high" else lo - step
    v = float(round(v)) if integer else float(f"{v:.12g}")  # no 9.999999999999998 from a ratio
    if lower is not None and v < lower:
        v = float(lower)  # clamp once to the limit, then stop
    if upper is not None and v > upper:
        v = float(upper)
    if v in g:
        return None
    if scale == "to_one" and not 0 < v < 1:
        return None
    return float(v)


def select(candidates: Sequence[Mapping[str, Any]], scores, *, minimize: bool = True) -> tuple[int, dict]:
    """The index of the best candidate (lowest score, or highest with ``minimize=False``; the
    first on ties) and the trace ``{"candidates", "scores", "chosen", "index"}``.

    >>> select([{"T": 50}, {"T": 100}], [0.3, 0.2])
    (1, {'candidates': [{'T': 50}, {'T': 100}], 'scores': [0.3, 0.2], 'chosen': {'T': 100}, 'index': 1})
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1 or s.size != len(candidates) or s.size == 0:
        raise ValueError(f"scores must be one value per candidate ({len(candidates)}), got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"scores must be finite, got {s.tolist()}"[:200])
    i = int(np.argmin(s) if minimize else np.argmax(s))
    cands = [dict(c) for c in candidates]
    return i, {"candidates": cands, "scores": [float(x) for x in s], "chosen": dict(cands[i]), "index": i}


def tune(evaluate: Callable[[list[dict]], Sequence[float]], grids: Mapping[str, Sequence[float]], *,
         stated: Mapping[str, Mapping[str, str]] | None = None, scales: Mapping[str, str] | None = None,
         limits: Mapping[str, tuple[float | None, float | None]] | None = None,
         integer: Sequence[str] = (), max_rounds: int = 4, minimize: bool = True) -> tuple[dict, dict]:
    """The best point of the product of ``grids`` by ``evaluate`` (candidate dicts -> one score each),
    a grid extended beyond the edge its choice lies on until every choice is interior, the edge is
    stated (``stated[param][side]``: the paper's text, or ``(value, text)`` for a bound the grid may not
    reach yet, never stepped past), a limit (``limits[param] = (lower, upper)``) stops it, or
    ``max_rounds`` extensions were made. Returns ``(chosen, trace)``: candidates, scores, ``grids``,
    ``grids_start``, per parameter ``edge``, ``stated_bound`` and ``stopped`` ("stated", "limit",
    "rounds" or None), and ``rounds``.

    >>> f = lambda cs: [(c["g"] - 0.995) ** 2 for c in cs]
    >>> ch, tr = tune(f, {"g": [0.9, 0.97, 0.99]}, scales={"g": "to_one"})
    >>> ch, tr["grids"]["g"], tr["edge"]["g"]
    ({'g': 0.995}, [0.9, 0.97, 0.99, 0.995, 0.9975], None)
    >>> ch, tr = tune(lambda cs: [-c["T"] for c in cs], {"T": [50, 100, 150]},
    ...               stated={"T": {"high": "T in [50, 150] (FAccT Sec. 5)"}})
    >>> ch, tr["edge"]["T"], tr["stated_bound"]["T"], tr["stopped"]["T"]
    ({'T': 150.0}, 'high', 'T in [50, 150] (FAccT Sec. 5)', 'stated')
    >>> ch, tr = tune(lambda cs: [-c["C"] for c in cs], {"C": [1e-5, 1e-3]}, scales={"C": "log"},
    ...               stated={"C": {"high": (1.0, "C <= 1 (W Sec. 6.2)")}})
    >>> ch, tr["grids"]["C"], tr["stated_bound"]["C"]
    ({'C': 1.0}, [1e-05, 0.001, 0.1, 1.0], 'C <= 1 (W Sec. 6.2)')
    """
    if not grids:
        raise ValueError("grids must name at least one parameter")
    stated, scales, limits = dict(stated or {}), dict(scales or {}), dict(limits or {})
    params = list(grids)
    g = {p: _grid(grids[p]) for p in params}
    start = {p: list(v) for p, v in g.items()}
    cands: list[dict] = []
    scores: list[float] = []

    def _key(c):
        return tuple(float(c[p]) for p in params)

    def _score(new):
        new = [c for c in new if _key(c) not in seen]
        if not new:
            return
        s = np.asarray(evaluate(new), dtype=float)
        if s.shape != (len(new),) or not np.all(np.isfinite(s)):
            raise ValueError(f"evaluate must return one finite score per candidate ({len(new)}), got {s.tolist()}"[:200])
        for c in new:
            seen.add(_key(c))
        cands.extend(new)
        scores.extend(float(x) for x in s)

    def _as(p, v):
        return int(round(v)) if p in integer else float(v)

    seen: set = set()
    _score([{p: _as(p, v) for p, v in zip(params, vals)} for vals in itertools.product(*(g[p] for p in params))])
    rounds = 0
    while True:
        i, _ = select(cands, scores, minimize=minimize)
        chosen = cands[i]
        stopped: dict[str, str | None] = {}
        grew = False
        for p in params:
            side = edge(chosen[p], g[p])
            stopped[p] = None
            if side is None:
                continue
            for sd in (("low", "high") if side == "both" else (side,)):
                at = _stated_at(stated, p, sd)
                edge_value = g[p][0] if sd == "low" else g[p][-1]
                if sd in stated.get(p, {}) and (at is None or edge_value == at):
                    stopped[p] = "stated"
                    continue
                if rounds >= max_rounds:
                    stopped[p] = "rounds"
                    continue
                lo, hi = limits.get(p, (None, None))
                if at is not None:  # never step past a stated bound that lies beyond the grid
                    lo, hi = (at if lo is None else max(lo, at), hi) if sd == "low" else (lo, at if hi is None else min(hi, at))
                v = extend(g[p], sd, scale=scales.get(p, "linear"), lower=lo, upper=hi, integer=p in integer)
                if v is None:
                    stopped[p] = "limit"
                    continue
                g[p] = sorted(g[p] + [v])
                grew = True
        if not grew:
            break
        rounds += 1
        _score([{p: _as(p, v) for p, v in zip(params, vals)} for vals in itertools.product(*(g[p] for p in params))])
    edges = {p: edge(chosen[p], g[p]) for p in params}
    bound = {}
    for p in params:
        sides = ("low", "high") if edges[p] == "both" else (edges[p],) if edges[p] else ()
        texts = [_stated_text(stated, p, s) for s in sides
                 if s in stated.get(p, {}) and _stated_at(stated, p, s) in (None, g[p][0] if s == "low" else g[p][-1])]
        bound[p] = "; ".join(texts) if texts else None
    trace = {"params": params, "candidates": cands, "scores": scores, "chosen": dict(chosen),
             "grids": {p: list(v) for p, v in g.items()}, "grids_start": start, "edge": edges,
             "stated_bound": bound, "stopped": stopped, "rounds": rounds, "minimize": bool(minimize)}
    return dict(chosen), trace


def _stated_at(stated, p, side):
    v = stated.get(p, {}).get(side)
    return float(v[0]) if isinstance(v, (tuple, list)) else None


def _stated_text(stated, p, side):
    v = stated.get(p, {}).get(side)
    return str(v[1]) if isinstance(v, (tuple, list)) else str(v)


def record(trace: Mapping[str, Any], *, method: str, tuning_seeds: Sequence[int], report_seeds: Sequence[int],
           setting: str = "paper", **extra) -> list[dict]:
    """The payload's ``tuning`` entries of one method's :func:`tune` trace, one per parameter
    (``setting``: "paper" or "beyond"); raises if the tuning and report seeds overlap.

    >>> _, tr = tune(lambda cs: [abs(c["T"] - 100) for c in cs], {"T": [50, 100, 150]})
    >>> e = record(tr, method="uni", tuning_seeds=[1, 2], report_seeds=[3])[0]
    >>> e["param"], e["chosen"], e["grid_min"], e["grid_max"], e["interior"], e["stated_bound"], e["n_candidates"]
    ('T', 100.0, 50.0, 150.0, True, None, 3)
    """
    disjoint_seeds(tuning_seeds, report_seeds)
    out = []
    for p in trace["params"]:
        grid = trace["grids"][p]
        out.append({"param": p, "method": method, "chosen": trace["chosen"][p], "grid_min": float(min(grid)),
                    "grid_max": float(max(grid)), "interior": trace["edge"][p] is None,
                    "stated_bound": trace["stated_bound"][p], "tuning_seeds": [int(s) for s in tuning_seeds],
                    "report_seeds": [int(s) for s in report_seeds], "edge": trace["edge"][p],
                    "stopped": trace["stopped"][p], "grid": [float(v) for v in grid],
                    "n_candidates": len(trace["candidates"]), "setting": setting,
                    "minimize": bool(trace.get("minimize", True)),
                    "trace": {"candidates": trace["candidates"], "scores": trace["scores"]}, **extra})
    return out


def disjoint_seeds(tuning_seeds: Sequence[int], report_seeds: Sequence[int]) -> None:
    """Raise ``ValueError`` when a seed is used both to tune and to report.

    >>> disjoint_seeds([1, 2], [3, 4])
    >>> disjoint_seeds([1, 2], [2, 3])
    Traceback (most recent call last):
    ValueError: tuning and report seeds must be disjoint, both hold [2]
    """
    both = sorted(set(int(s) for s in tuning_seeds) & set(int(s) for s in report_seeds))
    if both:
        raise ValueError(f"tuning and report seeds must be disjoint, both hold {both[:5]}")


def repeats_for_power(*, sd: float, effect: float, power: float = 0.8, alpha: float = 0.05) -> int:
    """Runs for a two-sided z-test at ``alpha`` to detect ``effect`` with probability ``power`` at one
    run's standard deviation ``sd``: ``n = ((z_{1-alpha/2} + z_{power}) sd / effect)^2``, up, >= 2.

    >>> repeats_for_power(sd=1.0, effect=0.5)
    32
    """
    if not (math.isfinite(sd) and sd >= 0):
        raise ValueError(f"sd must be finite and >= 0, got {sd!r}")
    if not (math.isfinite(effect) and effect != 0):
        raise ValueError(f"effect must be finite and != 0, got {effect!r}")
    if not 0 < power < 1 or not 0 < alpha < 1:
        raise ValueError(f"power and alpha must be in (0, 1), got {power!r}, {alpha!r}")
    z = norm.ppf(1 - alpha / 2) + norm.ppf(power)
    return max(2, int(math.ceil((z * sd / abs(effect)) ** 2)))


def min_detectable(se: float, *, power: float = 0.8, alpha: float = 0.05) -> float:
    """The smallest effect a two-sided z-test at ``alpha`` detects with probability ``power`` at
    standard error ``se``: ``(z_{1-alpha/2} + z_{power}) se``.

    >>> round(min_detectable(1.0), 4)
    2.8016
    """
    if not (math.isfinite(se) and se >= 0):
        raise ValueError(f"se must be finite and >= 0, got {se!r}")
    if not 0 < power < 1 or not 0 < alpha < 1:
        raise ValueError(f"power and alpha must be in (0, 1), got {power!r}, {alpha!r}")
    return float((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * se)
