"""Spot check of a stored result by recomputation (issue 30, ``results --verify``).

A seal, a digest and the journal of :mod:`.vcs` can all be rewritten by whoever can write the
files; recomputing numbers cannot be fooled. :func:`verify` recomputes ``K`` units of a stored
result, chosen at random with a seeded generator (the choice is reported, so a check can be
repeated), with the current code and the result's own config and seed, on the store's run
policy (:class:`.executors.LocalExecutor`), and compares them with the stored numbers:

* each recomputed unit is looked up in the stored payload: the dict of the payload holding
  every key of the unit's result (most experiments keep their units' results in the payload:
  ``units``, ``cells``, ``runs``, ``audits``) whose numbers are closest; the unit is ``ok``
  when every number agrees within :data:`RTOL` (relative, by the recomputed value's dtype:
  1e-6 for float32, 1e-10 for float64; integers, strings and shapes exactly), ``mismatch``
  otherwise (with the largest deviation and where it is), ``not in payload`` when no dict of the
  payload holds the unit's keys (its numbers are combined: then only recomputing every unit
  checks them);
* when every unit is recomputed (``K`` at least the number of units), the payload is combined
  again and compared with the stored one number by number (``whole payload``).

Times (:data:`.hashing.TIME_KEYS`) are left out of every comparison.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from dpcompanion.experiments import base
from dpcompanion.experiments.store import files
from dpcompanion.experiments.store.executors import LocalExecutor
from dpcompanion.experiments.store.hashing import TIME_KEYS
from dpcompanion.experiments.store.results import load

__all__ = ["RTOL", "verify", "deviation"]

#: relative tolerance by the recomputed number's dtype kind and size: float32 1e-6, float64 1e-10
RTOL = {4: 1e-6, 8: 1e-10}


def _rtol(v: Any) -> float:
    if isinstance(v, np.ndarray) or isinstance(v, np.generic):
        return RTOL.get(np.dtype(v.dtype).itemsize, 1e-6) if np.dtype(v.dtype).kind in "fc" else 0.0
    return RTOL[8] if isinstance(v, float) else 0.0


def _rel(a: float, b: float) -> float:
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b))


def deviation(new: Any, stored: Any, path: str = "") -> Iterator[tuple[str, float, float]]:
    """``(path, relative deviation, tolerance)`` for every number of ``new`` against ``stored``
    (``inf`` for a different string, integer or flag; ``None`` for a different structure: a
    key missing, another type or shape); keys of :data:`TIME_KEYS` are skipped, and keys only
    ``stored`` has are ignored (a payload dict may hold more).

    >>> [(p, round(d, 15)) for p, d, _ in deviation({"x": 2.0, "n": 3, "wall_s": 1.0}, {"x": 2.5, "n": 3, "wall_s": 9.0})]
    [('/x', 0.2), ('/n', 0.0)]
    >>> [d for _, d, _ in deviation({"x": [1.0, 2.0]}, {"x": [1.0]})]   # another structure: None
    [None]
    """
    if isinstance(new, np.generic):
        new = new.item() if not isinstance(new, np.floating) else new
    if isinstance(new, dict):
        if not isinstance(stored, dict):
            yield path, None, 0.0
            return
        for k, v in new.items():
            if k in TIME_KEYS:
                continue
            if k not in stored:
                yield f"{path}/{k}", None, 0.0
                continue
            yield from deviation(v, stored[k], f"{path}/{k}")
        return
    if isinstance(new, (list, tuple)) and not (isinstance(stored, np.ndarray)):
        if not isinstance(stored, (list, tuple)) or len(stored) != len(new):
            yield path, None, 0.0
            return
        for i, (v, w) in enumerate(zip(new, stored)):
            yield from deviation(v, w, f"{path}/{i}")
        return
    if isinstance(new, (np.ndarray, list, tuple)) or isinstance(stored, np.ndarray):
        a, b = np.asarray(new), np.asarray(stored)
        if a.shape != b.shape or a.dtype.kind not in "biufc" or b.dtype.kind not in "biufc":
            yield path, None, 0.0
            return
        tol = _rtol(a)
        if a.size == 0:
            return
        if tol == 0.0:
            yield path, (0.0 if np.array_equal(a, b) else math.inf), 0.0
            return
        af, bf = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = np.maximum(np.abs(af), np.abs(bf))
            d = np.where(af == bf, 0.0, np.abs(af - bf) / scale)
        d = np.where(np.isnan(af) & np.isnan(bf), 0.0, d)
        d = np.where(np.isnan(d), math.inf, d)
        i = int(np.argmax(d))
        yield f"{path}[{i}]", float(d[i]), tol
        return
    if isinstance(new, (bool, str)) or new is None or isinstance(new, int) and not isinstance(new, bool):
        same = (type(new) is type(stored) or (isinstance(new, int) and isinstance(stored, int)
                                             and not isinstance(stored, bool))) and new == stored
        yield path, 0.0 if same else math.inf, 0.0
        return
    if isinstance(new, (float, np.floating)):
        if not isinstance(stored, (int, float, np.number)) or isinstance(stored, bool):
            yield path, None, 0.0
            return
        yield path, _rel(float(new), float(stored)), _rtol(new)
        return
    yield path, (0.0 if new == stored else math.inf), 0.0


def _dicts(obj: Any, path: str = "") -> Iterator[tuple[str, dict]]:
    if isinstance(obj, dict):
        yield path, obj
        for k, v in obj.items():
            yield from _dicts(v, f"{path}/{k}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _dicts(v, f"{path}/{i}")


def _worst(devs) -> tuple[str, float, bool]:
    """(path of the largest deviation, that deviation, all within their tolerance); a different
    structure counts as an infinite deviation."""
    worst_path, worst, ok = "", 0.0, True
    for path, d, tol in devs:
        d = math.inf if d is None else d
        if d > tol:
            ok = False
        if d > worst or (worst_path == "" and d >= worst):
            worst_path, worst = path, d
    return worst_path, worst, ok


def _match_unit(result: dict, payload: dict) -> dict:
    keys = {k for k in result if k not in TIME_KEYS}
    best = None
    for where, d in _dicts(payload):
        if not keys or not keys <= set(d):
            continue
        devs = list(deviation(result, d))
        if any(dv is None for _, dv, _ in devs):
            continue  # another structure (a combined array, another kind of entry): not this unit's record
        path, worst, ok = _worst(devs)
        if best is None or (ok, -worst) > (best[2], -best[1]):
            best = (where + path, worst, ok, where)
        if ok and worst == 0.0:
            break
    if best is None:
        return {"status": "not in payload", "max_deviation": None, "where": None}
    return {"status": "ok" if best[2] else "mismatch", "max_deviation": best[1], "where": best[0] or "/",
            "matched": best[3] or "/"}


def verify(experiment_id: str, *, mode: str | None = None, units: int = 3, seed: int = 0, device: str = "cpu",
           root: Path | None = None) -> dict:
    """Recompute ``units`` randomly chosen units (``np.random.default_rng(seed)``) of the stored
    result of ``experiment_id`` in ``mode`` (default: paper when stored, else full, else quick)
    and compare them with the stored numbers (see the module docstring). Returns ``{"id",
    "mode", "units_total", "chosen", "seed", "units": [{"index", "status", "max_deviation",
    "where"}], "whole": {...} or None, "ok"}``; ValueError when nothing usable is stored."""
    exp = base.get(experiment_id)
    if mode is None:
        mode = next((m for m in ("paper", "full", "quick") if m in exp.configs
                     and files.result_dir(exp.id, m, root).exists()), "full")
    base.validate_mode(mode, exp)
    if isinstance(units, bool) or not isinstance(units, int) or units < 1:
        raise ValueError(f"units must be an integer >= 1, got {units!r}")
    res = load(exp.id, mode=mode, root=root)
    if res is None:
        raise ValueError(f"no {mode} result of {exp.id} is stored")
    if res.damaged:
        raise ValueError(f"the {mode} result of {exp.id} is damaged ({res.damaged}); nothing to verify")
    rec_seed = res.provenance.get("config", {}).get("seed", 0)
    # the config this code makes for the recorded seed (an edited recorded config is not trusted,
    # and would not be recomputed at its claimed size)
    config = base.config_for(exp, mode, seed=int(rec_seed))
    all_units = exp.units(config)
    n = len(all_units)
    k = min(units, n)
    chosen = sorted(int(i) for i in np.random.default_rng(seed).choice(n, size=k, replace=False))
    out = LocalExecutor().map(exp.run_unit, [all_units[i] for i in chosen], device)
    rows = []
    for i, (result, _) in zip(chosen, out):
        m = _match_unit(result, res.payload) if isinstance(result, dict) else \
            {"status": "not in payload", "max_deviation": None, "where": None}
        rows.append({"index": i, **m})
    whole = None
    if k == n:
        payload = files.sorted_keys(exp.combine(config, [r for r, _ in out]))
        path, worst, ok = _worst(deviation(payload, res.payload))
        missing = sorted(set(res.payload) - set(payload))
        if missing:
            path, worst, ok = f"/{missing[0]}", math.inf, False
        whole = {"status": "ok" if ok else "mismatch", "max_deviation": worst, "where": path or "/"}
    bad = any(r["status"] == "mismatch" for r in rows) or (whole is not None and whole["status"] != "ok")
    checked = any(r["status"] != "not in payload" for r in rows) or whole is not None
    return {"id": exp.id, "mode": mode, "units_total": n, "chosen": chosen, "seed": seed, "units": rows,
            "whole": whole, "ok": not bad, "checked": checked, "fresh": res.fresh, "stale_reason": res.stale_reason}
