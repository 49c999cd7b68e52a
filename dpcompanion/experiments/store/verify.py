"""Spot check of a stored result by recomputation (``results --verify``): seals, digests and the
journal can be rewritten by whoever can write the files; recomputed numbers cannot be fooled.

:func:`verify` recomputes ``K`` units chosen at random (the seed drawn afresh unless given, and
reported) with the current code and the result's own config and seed, and compares them with the
stored numbers by :func:`.numeric.compare`. By default ``K = ceil(0.95 n)`` of ``n`` units, which
catches one forged unit with probability at least :data:`CATCH_TARGET`, or all ``n`` when their
recorded time is at most :data:`VERIFY_ALL_S` (then the whole payload is combined again and
compared too, which also checks numbers combined from several units).

A recomputed unit is looked up in the stored payload: among its dicts holding every key of the
unit's result and of the same structure, the one agreeing best is the match (``ok`` or
``mismatch``); ``not in payload`` when none (its numbers are combined: only recomputing every unit
checks them). ``catch_probability``: 1 when the whole payload was compared, else the share of all
units whose record was compared. A row's ``max_deviation`` is the relative deviation of the number
using the largest share of its tolerance (``share``), ``where`` its path in the stored payload.
"""

from __future__ import annotations

import math
import secrets
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from dpcompanion.experiments import base
from dpcompanion.experiments.store import files, numeric
from dpcompanion.experiments.store.identity import TIME_KEYS
from dpcompanion.experiments.store.result_store import LocalExecutor, load


#: the least probability with which a default ``verify`` catches one forged unit
CATCH_TARGET = 0.95
#: seconds: a result whose units took at most this long in all (as recorded) is verified whole
#: by default (every unit recomputed, the whole payload compared): a minute of compute
#: buys certainty, where 95% of the units would cost nearly as much
VERIFY_ALL_S = 60.0


def recorded_seconds(provenance: dict) -> float | None:
    """The compute a result's units took, as its provenance records it: ``units_wall_s`` (the
    units' summed wall times), else ``wall_s`` (the run's); None when neither is a number."""
    for key in ("units_wall_s", "wall_s"):
        v = provenance.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
            return float(v)
    return None


def default_units(n: int, recorded_s: float | None) -> tuple[int, str]:
    """``(K, why)``: how many of ``n`` units a default verify recomputes (see the module docstring).

    >>> default_units(45, 2.4)
    (45, 'all: their recorded time, 2.4 s, is at most 60 s')
    >>> default_units(48, 36000.0)
    (46, 'at least 95% of them: their recorded time, 36000 s, is over 60 s')
    """
    if recorded_s is not None and recorded_s <= VERIFY_ALL_S:
        return n, f"all: their recorded time, {recorded_s:.3g} s, is at most {VERIFY_ALL_S:g} s"
    k = min(n, math.ceil(CATCH_TARGET * n - 1e-9))
    when = "not recorded" if recorded_s is None else f"{recorded_s:.6g} s, is over {VERIFY_ALL_S:g} s"
    return k, f"at least {CATCH_TARGET:.0%} of them: their recorded time, {when}"


def _dicts(obj: Any, path: str = "") -> Iterator[tuple[str, dict]]:
    if isinstance(obj, dict):
        yield path, obj
        for k, v in obj.items():
            yield from _dicts(v, f"{path}/{k}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _dicts(v, f"{path}/{i}")


def _row(check: dict, where: str = "") -> dict:
    """A report row from a :func:`.numeric.compare` result, its key read from ``where`` (the
    path of the compared dict in the stored payload)."""
    key = where + ("" if check["key"] == "/" else check["key"])
    return {"status": "ok" if check["ok"] else "mismatch", "max_deviation": check["rel"], "where": key or "/",
            "share": check["share"], "rtol": check["rtol"], "atol": check["atol"], "why": check["why"]}


def _match_unit(result: dict, payload: dict, experiment_id: str) -> dict:
    """The unit's record in ``payload`` (see the module docstring): the row of the dict holding
    the unit's keys that agrees best, ``not in payload`` when none has the unit's structure."""
    keys = {k for k in result if k not in TIME_KEYS}
    best = None
    for where, d in _dicts(payload):
        if not keys or not keys <= set(d):
            continue
        check = numeric.compare(result, {k: d[k] for k in keys}, experiment_id=experiment_id)
        if check["structure"]:
            continue  # another structure (a combined array, another kind of entry): not this unit's record
        if best is None or (check["ok"], -check["share"]) > (best[1]["ok"], -best[1]["share"]):
            best = (where, check)
        if check["ok"] and check["share"] == 0.0:
            break
    if best is None:
        return {"status": "not in payload", "max_deviation": None, "where": None}
    return {**_row(best[1], best[0]), "matched": best[0] or "/"}


def verify(experiment_id: str, *, mode: str | None = None, units: int | None = None, seed: int | None = None,
           device: str = "cpu", root: Path | None = None) -> dict:
    """Recompute ``units`` randomly chosen units (``np.random.default_rng(seed)``; ``seed``
    drawn at random when None, and reported) of the stored result of ``experiment_id`` in
    ``mode`` (default: paper when stored, else full, else quick) and compare them with the
    stored numbers (see the module docstring). ``units=None``: :func:`default_units`. Returns
    ``{"id", "mode", "units_total", "chosen", "seed", "policy", "recorded_s", "units": [{"index",
    "unit", "status", "max_deviation", "where", "share", "rtol", "atol", "why", "matched"}],
    "whole": {...} or None, "units_checked", "catch_probability", "ok", "checked", "fresh",
    "stale_reason"}`` (a unit ``not in payload`` has only ``status``, ``max_deviation`` and
    ``where``, both None); ValueError when nothing usable is stored."""
    exp = base.get(experiment_id)
    if mode is None:
        mode = next((m for m in ("paper", "full", "quick") if m in exp.configs
                     and files.result_dir(exp.id, m, root).exists()), "full")
    base.validate_mode(mode, exp)
    if units is not None and (isinstance(units, bool) or not isinstance(units, int) or units < 1):
        raise ValueError(f"units must be an integer >= 1, got {units!r}")
    if seed is None:
        seed = secrets.randbelow(2**32)
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
    recorded = recorded_seconds(res.provenance)
    if units is None:
        k, policy = default_units(n, recorded)
    else:
        k, policy = min(units, n), ("all" if units >= n else "as asked") + f" (--units {units})"
    chosen = sorted(int(i) for i in np.random.default_rng(seed).choice(n, size=k, replace=False))
    out = LocalExecutor().map(exp.run_unit, [all_units[i] for i in chosen], device)
    rows = []
    for i, (result, _) in zip(chosen, out):
        m = _match_unit(result, res.payload, exp.id) if isinstance(result, dict) else \
            {"status": "not in payload", "max_deviation": None, "where": None}
        rows.append({"index": i, "unit": all_units[i], **m})
    whole = None
    if k == n:
        payload = files.sorted_keys(exp.combine(config, [r for r, _ in out]))
        whole = _row(numeric.compare(payload, res.payload, experiment_id=exp.id))
    bad = any(r["status"] == "mismatch" for r in rows) or (whole is not None and whole["status"] != "ok")
    compared = sum(r["status"] != "not in payload" for r in rows)
    checked = compared > 0 or whole is not None
    catch = 1.0 if whole is not None else (compared / n if n else 0.0)
    return {"id": exp.id, "mode": mode, "units_total": n, "chosen": chosen, "seed": seed, "policy": policy,
            "recorded_s": recorded, "units": rows, "whole": whole, "units_checked": compared,
            "catch_probability": catch, "ok": not bad, "checked": checked, "fresh": res.fresh,
            "stale_reason": res.stale_reason}
