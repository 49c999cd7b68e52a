"""Resumable sweeps: every unit stored as it finishes, in ``results/<id>/<mode>.units/<key>.json``
(+ ``.npz``), so that a run killed part-way resumes where it stopped; and the CPU each records."""

from __future__ import annotations

import datetime as _dt
import functools
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from dpcompanion.experiments import base
from dpcompanion.experiments.store import files
from dpcompanion.experiments.store.files import NPZ_ERRORS, digest, results_root


#: the folder beside ``<mode>/`` that holds the finished units of a sweep in progress
UNITS_SUFFIX = ".units"
#: seconds of recorded unit time a resumed sweep spends recomputing stored units before reusing
#: them (``result_store._check_stored_units``); a unit claiming a longer time is trusted as stored
REUSE_CHECK_S = 60.0


@functools.cache
def cpu_model() -> str:
    """This machine's processor (``/proc/cpuinfo``'s first "model name", else the platform's),
    recorded with every result and unit: BLAS and torch pick other kernels on another kind of CPU,
    so a quick digest is a fingerprint of one kind only.

    >>> isinstance(cpu_model(), str) and len(cpu_model()) > 0
    True
    """
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name") and ":" in line:
                    name = " ".join(line.split(":", 1)[1].split())
                    if name:
                        return name
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def units_dir(experiment_id: str, mode: str, root: Path | None = None) -> Path:
    """``results/<id>/<mode>.units/``: one ``<unit key>.json`` (and ``.npz`` for large arrays)
    per finished unit of a sweep not yet assembled."""
    return (root or results_root()) / experiment_id / f"{mode}{UNITS_SUFFIX}"


def unit_key(exp_id: str, mode: str, unit: dict, seed: int, device: str) -> str:
    """The file name of a unit's result: sha256 (32 hex digits) over the experiment id, mode, the
    unit's dict, the seed and the device (the code hash is recorded inside the file)."""
    return digest({"id": exp_id, "mode": mode, "unit": unit, "seed": int(seed), "device": device})[:32]


def _enc(obj: Any, arrays: dict[str, np.ndarray]) -> Any:
    """Exact JSON form of a unit result: arrays (large ones to the .npz), numpy scalars with
    their dtype and tuples are kept as such, so that ``combine`` sees the very same values."""
    if isinstance(obj, np.ndarray):
        return files.encode_array(obj, arrays)
    if isinstance(obj, np.generic):
        return {"__scalar__": obj.item(), "dtype": obj.dtype.str}
    if isinstance(obj, dict):
        return {"__dict__": [[k, _enc(v, arrays)] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"__tuple__": [_enc(v, arrays) for v in obj]}
    if isinstance(obj, list):
        return [_enc(v, arrays) for v in obj]
    return obj


def _dec(obj: Any, arrays) -> Any:
    if isinstance(obj, dict):
        a = files.decode_array(obj, arrays)
        if a is not None:
            return a
        if "__scalar__" in obj:
            return np.dtype(obj["dtype"]).type(obj["__scalar__"])
        if "__tuple__" in obj:
            return tuple(_dec(v, arrays) for v in obj["__tuple__"])
        if "__dict__" in obj:
            return {k: _dec(v, arrays) for k, v in obj["__dict__"]}
        raise ValueError("unknown entry")
    if isinstance(obj, list):
        return [_dec(v, arrays) for v in obj]
    return obj


def save_unit(folder: Path, key: str, unit: dict, result: dict, counts: dict, *, code: str, seed: int,
              device: str = "cpu") -> None:
    """Store one finished unit atomically: the ``.npz`` (if any) first, then the ``.json``,
    whose presence marks the unit as done."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    enc = _enc(result, arrays)
    if arrays:
        def npz(p: Path) -> None:
            with open(p, "wb") as fh:
                np.savez_compressed(fh, **arrays)
        files.write_atomic(folder / f"{key}.npz", npz)
    rec = {"key": key, "unit": unit, "seed": int(seed), "device": device, "cpu": cpu_model(), "code_hash": code,
           "result": enc,
           "digest": digest(result), "runs": int(counts.get("runs", 0)), "run_steps": int(counts.get("run_steps", 0)),
           "wall_s": round(float(counts.get("wall_s", 0.0)), 3),
           "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "created_ns": time.time_ns()}
    files.write_atomic(folder / f"{key}.json", lambda p: p.write_text(json.dumps(rec, sort_keys=True) + "\n"))


def load_unit(folder: Path, key: str) -> dict | None:
    """A stored unit's record with its decoded ``result``; None when absent or damaged
    (unreadable, or its result not matching its digest: it is recomputed)."""
    f = folder / f"{key}.json"
    try:
        rec = files.read_json(f)  # a regular file, size and depth capped
        keys = files.npz_keys(rec["result"])
        # the arrays it refers to, their headers checked against files.MAX_ARRAY_BYTES first
        arrays = files.read_npz(folder / f"{key}.npz", keys) if keys else {}
        rec["result"] = _dec(rec["result"], arrays)
        if digest(rec["result"]) != rec["digest"]:
            return None
        return rec
    except (files.Damaged, OSError, ValueError, KeyError, TypeError, *NPZ_ERRORS):
        return None


def _sweep_state(experiment_id: str, mode: str, root: Path | None) -> tuple[dict, set[str]] | None:
    """(:func:`sweep_progress`'s dict, the keys of the units done), None when no unit is stored."""
    exp = base.get(experiment_id)
    folder = units_dir(exp.id, mode, root)
    found = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not found:
        return None
    recs = []
    for f in found:
        try:
            rec = files.read_json(f)  # a FIFO or a 200,000-deep file is skipped, never waited on
        except files.Damaged:
            continue
        if isinstance(rec, dict):
            recs.append((f.stem, rec))
    recs.sort(key=lambda sr: int(sr[1].get("created_ns", 0)) if isinstance(sr[1].get("created_ns"), int) else 0)
    newest = recs[-1][1] if recs else {}
    seed, device = int(newest.get("seed", 0)), str(newest.get("device", "cpu"))
    config = base.config_for(exp, mode, seed=seed)
    units = exp.units(config)
    total = len(units)
    code = files.code_hash(exp)
    size = exp.unit_size or (lambda u: "")
    keyed = [(unit_key(exp.id, mode, u, seed, device), size(u)) for u in units]
    wanted = {key for key, _ in keyed}
    # a unit is done when its own file (named by its key) holds it, stored by the current code
    current = {stem: r for stem, r in recs if stem in wanted and r.get("key") == stem and r.get("code_hash") == code}
    done = len(current)
    walls = [float(r.get("wall_s", 0.0)) for r in current.values()]
    by_size: dict[str, list[float]] = {}
    left_by_size: dict[str, int] = {}
    for key, sz in keyed:
        if key in current:
            by_size.setdefault(sz, []).append(float(current[key].get("wall_s", 0.0)))
        else:
            left_by_size[sz] = left_by_size.get(sz, 0) + 1
    est, why = estimate_left(by_size, left_by_size)
    return ({"id": exp.id, "mode": mode, "seed": seed, "device": device, "units_done": done, "units_total": total,
             "units_old_code": len(recs) - len(current), "wall_s_done": round(sum(walls), 3),
             "estimate_left_s": est, "estimate_why": why, "sized": exp.unit_size is not None,
             "path": str(folder)}, set(current))


#: finished units whose wall times differ by more than this factor (and by more than
#: UNEQUAL_MIN_S seconds) are of unequal sizes: their mean says nothing about the units left
UNEQUAL_FACTOR = 2.0
UNEQUAL_MIN_S = 1.0


def estimate_left(done: dict[str, list[float]], left: dict[str, int]) -> tuple[float | None, str]:
    """Compute left in a sweep, from the wall times of its finished units grouped by size
    (``done``: ``{size: [seconds, ...]}``) and the number of units left of each size (``left``);
    sizes are the experiment's ``unit_size`` labels (:class:`~dpcompanion.experiments.base.Experiment`),
    ``""`` for all units of an experiment that declares none. Each unit left is charged the mean
    of the finished units of its size. ``(None, why)`` when none has finished, when a size left
    has no finished unit yet (a mean of the small ones would promise minutes for hours of work),
    or when the finished units of one size took times differing by more than
    :data:`UNEQUAL_FACTOR` (an experiment without sizes whose units are not alike).

    >>> estimate_left({"": [10.0, 12.0]}, {"": 3})
    (33.0, '')
    >>> estimate_left({"": [54.0, 150.0]}, {"": 3})
    (None, 'units differ in size (54 s to 150 s so far): no estimate from them')
    >>> estimate_left({"N=250": [110.0], "N=500": [160.0]}, {"N=500": 1})
    (160.0, '')
    >>> estimate_left({"N=250": [110.0]}, {"N=1000": 1, "N=4000 uni": 1})
    (None, 'no unit of size N=1000, N=4000 uni has finished yet: no estimate for them from smaller ones')
    >>> estimate_left({}, {"": 2})[0] is None
    True
    """
    walls = [w for ws in done.values() for w in ws]
    if not walls:
        return None, "time left not yet estimated (no unit of the current code has finished)"
    unseen = [size for size, n in left.items() if n and not done.get(size)]
    if unseen:
        return None, (f"no unit of size {', '.join(unseen)} has finished yet: no estimate for them "
                      "from smaller ones")
    for ws in done.values():
        lo, hi = min(ws), max(ws)
        if hi > UNEQUAL_FACTOR * lo and hi - lo > UNEQUAL_MIN_S:
            return None, f"units differ in size ({lo:.0f} s to {hi:.0f} s so far): no estimate from them"
    return round(sum(sum(done[size]) / len(done[size]) * n for size, n in left.items() if n), 1), ""


def estimate_phrase(part: dict, *, hours: bool = False) -> str:
    """How much compute a partial sweep (:func:`sweep_progress`) has left, in words, or why there is no estimate."""
    left = part["estimate_left_s"]
    if left is None:
        return part["estimate_why"]
    amount = f"about {left / 3600:.2g} CPU-hours" if hours else f"about {left} s of compute"
    how = ("at the finished units' mean time per unit size" if part.get("sized")
           else "at the finished units' mean time (units left may be larger)")
    return f"{amount} left {how}"


def sweep_progress(experiment_id: str, mode: str, root: Path | None = None) -> dict | None:
    """Progress of a sweep whose units are stored but not yet assembled (the seed and device of the
    newest unit file): ``units_done`` (by the current code), ``units_total``, ``units_old_code``
    (not reused), ``wall_s_done``, ``estimate_left_s`` and ``estimate_why`` (:func:`estimate_left`)
    and ``sized``; None when no unit is stored."""
    state = _sweep_state(experiment_id, mode, root)
    return None if state is None else state[0]


def list_partial(root: Path | None = None) -> list[dict]:
    """:func:`sweep_progress` of every experiment and mode with stored units."""
    out = []
    for exp_id, exp in base.all_experiments().items():
        for mode in base.modes_of(exp):
            p = sweep_progress(exp_id, mode, root)
            if p is not None:
                out.append(p)
    return out


def committed_units(experiment_id: str, mode: str, root: Path | None = None) -> int | None:
    """How many of the units :func:`sweep_progress` counts as done have their file committed in
    ``HEAD``; None when git cannot tell."""
    state = _sweep_state(experiment_id, mode, root)
    if state is None:
        return 0
    folder = units_dir(experiment_id, mode, root)
    out = files.git(folder, "ls-tree", "-r", "-z", "--name-only", "HEAD", "--", ".")  # paths relative to folder
    if out is None:
        return None
    names = {n for n in out.split("\0") if n}
    return sum(1 for key in state[1] if f"{key}.json" in names)
