"""Stored results: computing an experiment's units on an executor (local or Dask), each unit
stored as it finishes (a killed sweep resumes), and saving the result; loading it and deciding
whether it is fresh, revalidating a full or paper result by its quick mode, listing and sealing
(see the package docstring). The sentences a page shows
about results are the book's (:mod:`dpcompanion.book.show`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import json
import logging
import math
import os
import random
import shutil
import socket
import tempfile
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit

import numpy as np
from threadpoolctl import threadpool_limits

from dpcompanion.core.provenance import git_state, resolve_device, validate_seed, versions
from dpcompanion.experiments import base
from dpcompanion.experiments.scale_tables import scale_of, size_mismatches  # the scale block
from dpcompanion.experiments.store import files, identity, numeric
from dpcompanion.experiments.store.files import NPZ_ERRORS, SEAL, Damaged, check_writable, result_dir, results_root, sealed
from dpcompanion.experiments.store.identity import config_hash, digest


@dataclasses.dataclass(frozen=True)
class StoredResult:
    """A result and what is known about it: ``cached`` (loaded, not computed by this call),
    ``stale_reason`` (why it is not ``fresh``), ``damaged`` (``<file>: <what>`` when a file is
    missing, unreadable or does not match its digest: the payload is then empty, never shown)."""

    id: str
    mode: str
    payload: dict[str, Any]
    provenance: dict[str, Any]
    fresh: bool
    cached: bool
    path: Path | None
    stale_reason: str = ""
    damaged: str = ""
    #: its files against git (:func:`.files.modified`), '' when git has nothing to say
    modified: str = ""

    @property
    def digest(self) -> str:
        return self.provenance.get("digest", "")

    @property
    def config(self) -> dict[str, Any]:
        return self.provenance.get("config", {})

    @property
    def over_sittings_s(self) -> float | None:
        """The summed time of all its units when the result was assembled from units stored in
        earlier sittings (``units_reused``), else None (then ``wall_s`` is the whole time)."""
        p = self.provenance
        return p["units_wall_s"] if p.get("units_reused") and p.get("units_wall_s") is not None else None

    def validation(self) -> dict[str, Any]:
        """How the result came to be valid for its recorded code: ``method`` ``computed`` (by that
        code), ``digest`` (the last revalidation found the quick digest unchanged; ``by``) or
        ``numeric`` (quick numbers within tolerance; ``max_deviation``); ``quick_numbers``: whether
        they are recorded."""
        p = self.provenance
        events = [e for e in (p.get("revalidated") or []) if isinstance(e, dict)]
        last = events[-1] if events else None
        if last is None or last.get("to_code_hash") != p.get("code_hash"):
            out = {"method": "computed"}
        elif last.get("method") == "numeric":
            out = {"method": "numeric", "date": last.get("date"), "max_deviation": last.get("max_deviation"),
                   "result_commit": last.get("result_commit"), "commit": last.get("commit"),
                   "quick_digest": last.get("quick_digest")}
        else:
            out = {"method": "digest", "by": last.get("method"), "date": last.get("date")}
        return {**out, "quick_numbers": isinstance(p.get("quick_numbers"), dict)}

    def record(self) -> dict[str, Any]:
        """The fields ``experiment --json`` and ``results --json`` print."""
        p = self.provenance
        config = p.get("config") if isinstance(p.get("config"), dict) else {}
        return {"id": self.id, "mode": self.mode, "path": str(self.path) if self.path else None,
                "cached": self.cached, "fresh": self.fresh, "stale_reason": self.stale_reason,
                "damaged": self.damaged or None,
                "wall_s": p.get("wall_s"), "executor": p.get("executor"), "runs": p.get("runs"),
                "run_steps": p.get("run_steps"), "units": p.get("units"), "digest": p.get("digest"), "commit": p.get("commit"),
                "dirty": p.get("dirty"), "device": p.get("device"), "created": p.get("created"),
                "seed": config.get("seed"), "modified": self.modified or None, "units_total": p.get("units"),
                # by this run, and stored units (all of them when loaded)
                "units_computed": 0 if self.cached else p.get("units_computed", p.get("units")),
                "units_reused": p.get("units") if self.cached else p.get("units_reused", 0)}


def _read(exp: base.Experiment, mode: str, root: Path | None) -> StoredResult | None:
    """The stored result, files checked (``damaged`` set when one fails), or None; while a killed
    save left ``<mode>/`` missing, the previous result in ``.<mode>.old-…`` is read."""
    target = result_dir(exp.id, mode, root)
    odd = files.not_a_folder(target)
    if odd:  # a symlink (to itself or anywhere), a file, a FIFO: listed as damaged, never dropped
        return StoredResult(id=exp.id, mode=mode, payload={}, provenance={}, fresh=False, cached=True,
                            path=target, stale_reason=f"damaged: {odd}", damaged=odd)
    for _ in range(3):  # a folder moved away by a concurrent save while being read: read again
        d = target if target.is_dir() else next(iter(files.olds(target)), None)
        if d is None:
            return None
        try:
            prov, payload = files.read_files(d)
        except Damaged as exc:
            if d.is_dir():
                prov = exc.args[1] if len(exc.args) > 1 else {}
                return StoredResult(id=exp.id, mode=mode, payload={}, provenance=prov, fresh=False, cached=True,
                                    path=target, stale_reason=f"damaged: {exc.args[0]}", damaged=exc.args[0])
            continue
        return StoredResult(id=exp.id, mode=mode, payload=payload, provenance=prov, fresh=False, cached=True,
                            path=target)
    return None


def inconsistency(exp: base.Experiment, provenance: dict, payload: dict) -> str:
    """'' when the recorded config hashes to the recorded ``config_hash``, agrees with the payload's
    own record of it (``payload["config"]`` or ``["settings"]``) and with the sizes the payload holds
    (:func:`dpcompanion.experiments.scale_tables.size_mismatches`), and makes the recorded number of
    units; else ``inconsistent: <what>`` (an edited, resealed config must not read as fresh)."""
    config = provenance.get("config")
    if not isinstance(config, dict):
        return "inconsistent: no recorded config"
    if provenance.get("config_hash") != config_hash(config):
        return "inconsistent: the recorded config does not hash to the recorded config_hash (edited)"
    own = next((payload[k] for k in ("config", "settings") if isinstance(payload.get(k), dict)), {})
    for k in sorted(set(own) & set(config)):
        if config_hash({"v": own[k]}) != config_hash({"v": config[k]}):
            return f"inconsistent: config {k} is {config[k]!r}, the payload's record of it {own[k]!r}"
    sizes = size_mismatches(exp.id, config, payload)
    if sizes:
        return "inconsistent: sizes differ between config and payload (" + "; ".join(sizes[:3]) + ")"
    units = provenance.get("units")
    if isinstance(units, int) and not isinstance(units, bool):
        try:
            made = len(exp.units(config))
        except Exception:  # noqa: BLE001 - a config the code cannot split is itself the finding
            return "inconsistent: the recorded config cannot be split into units by this code"
        if made != units:
            return f"inconsistent: the config makes {made} units, the provenance records {units}"
    return ""


def _staleness(exp: base.Experiment, res: StoredResult, config: dict | None) -> str:
    """Why ``res`` is not fresh ('' when it is)."""
    if res.damaged:
        return res.stale_reason
    p = res.provenance
    edited = files.seal_problem(p)
    if edited:
        return edited
    odd = inconsistency(exp, p, res.payload)
    if odd:
        return odd
    if res.modified.startswith("modified since"):
        return res.modified
    if config is not None and p.get("config_hash") != config_hash(config):
        return "config changed"
    if p.get("code_hash") != identity.code_hash(exp):
        old, now = p.get("code_files", {}), identity.code_files(exp)
        old = old if isinstance(old, dict) else {}
        changed = sorted(m for m, h in now.items() if old.get(m) != h)
        changed += sorted(m for m in old if m not in now)
        if not changed:
            return "code changed: the store's run policy"
        return "code changed: " + ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
    if res.mode in base.FINGERPRINTED_MODES:
        loose = files.uncommitted_code(exp)
        if loose:
            return ("its code is not committed: " + ", ".join(loose[:5]) + (" ..." if len(loose) > 5 else "")
                    + " (commit it, then the result is fresh)")
    return ""


def load(experiment_id: str, *, mode: str, seed: int | None = None, root: Path | None = None) -> StoredResult | None:
    """The stored result of ``experiment_id`` in ``mode``, fresh or not, without computing; None
    when nothing is stored (or the experiment has no such mode). ``seed``: the seed it must have
    been computed with to be fresh (default: its own). Never raises for a damaged result."""
    exp = base.get(experiment_id)
    base.validate_mode(mode)
    if mode not in exp.configs:
        return None
    res = _read(exp, mode, root)
    if res is None or res.damaged:
        return res
    git = files.modified(res.path)
    res = dataclasses.replace(res, modified=git[1] if git else "")
    stored_seed = res.provenance["config"].get("seed", 0)
    config = base.config_for(exp, mode, seed=stored_seed if seed is None else seed)
    why = _staleness(exp, res, config)
    return dataclasses.replace(res, fresh=not why, stale_reason=why)


def _versions() -> dict[str, str]:
    v = versions()
    for pkg in ("dask", "distributed", "scipy"):
        try:
            v[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            v[pkg] = "absent"
    return v


# --- resumable sweeps: every unit stored as it finishes, in ``results/<id>/<mode>.units/<key>.json``
# (+ ``.npz``), so that a run killed part-way resumes where it stopped; and the CPU each records

#: the folder beside ``<mode>/`` that holds the finished units of a sweep in progress
UNITS_SUFFIX = ".units"
#: seconds of recorded unit time a resumed sweep spends recomputing stored units before reusing
#: them (:func:`_check_stored_units`); a unit claiming a longer time is trusted as stored
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
    code = identity.code_hash(exp)
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


def _compute_payload(exp: base.Experiment, config: dict, executor, device: str,
                     root: Path | None = None, progress: Callable[[str], None] | None = None) -> tuple[dict, dict]:
    """Run the units not stored by the current code in ``<mode>.units/``, storing each as it
    finishes, and combine all of them in units order."""
    units = exp.units(config)
    mode, seed = config["mode"], int(config["seed"])
    folder = units_dir(exp.id, mode, root)
    code = identity.code_hash(exp)
    keys = [unit_key(exp.id, mode, u, seed, device) for u in units]
    done: list = [None] * len(units)
    old_code = 0
    if folder.is_dir():  # temporary files of unit saves killed mid-write
        now = time.time_ns()
        for p in folder.glob(".*.tmp-*"):
            if files.temp_is_stale(p.name, now):
                p.unlink(missing_ok=True)
    for i, k in enumerate(keys):
        rec = load_unit(folder, k) if folder.is_dir() else None
        if rec is None:
            continue
        if rec.get("code_hash") != code:
            old_code += 1
            continue
        done[i] = (rec["result"], {"runs": rec.get("runs", 0), "run_steps": rec.get("run_steps", 0),
                                   "wall_s": rec.get("wall_s", 0.0)})
    stored = [i for i in range(len(units)) if done[i] is not None]
    if progress is not None and (stored or old_code):
        progress(f"{exp.id} {mode}: resuming, {len(stored)}/{len(units)} units stored"
                 + (f"; {old_code} stored by older code are recomputed" if old_code else ""))
    checked, rejected = _check_stored_units(exp, mode, units, keys, done, stored, executor, device, folder, code,
                                            seed, progress)
    todo = [i for i in range(len(units)) if done[i] is None]
    reused = len(units) - len(todo) - len(rejected)

    def on_done(j: int, out: tuple[dict, dict]) -> None:
        i = todo[j]
        save_unit(folder, keys[i], units[i], out[0], out[1], code=code, seed=seed, device=device)

    t0 = time.perf_counter()
    if todo:
        fresh = executor.map(exp.run_unit, [units[i] for i in todo], device, on_done=on_done)
        for j, i in enumerate(todo):
            done[i] = fresh[j]
    payload = files.sorted_keys(exp.combine(config, [r for r, _ in done]))  # the order a loaded payload has
    wall = time.perf_counter() - t0
    checks = {"units_checked": checked, "units_rejected": len(rejected)} if stored else {}
    return payload, {"wall_s": round(wall, 3), "units": len(units), **checks,
                     "units_computed": len(todo) + len(rejected), "units_reused": reused,
                     "units_wall_s": round(sum(float(c.get("wall_s", 0.0)) for _, c in done), 3),
                     "runs": int(sum(c["runs"] for _, c in done)), "run_steps": int(sum(c["run_steps"] for _, c in done))}


def _check_stored_units(exp: base.Experiment, mode: str, units: list, keys: list[str], done: list, stored: list[int],
                        executor, device: str, folder: Path, code: str, seed: int,
                        progress: Callable[[str], None] | None) -> tuple[int, list[int]]:
    """Before a resumed sweep reuses its stored units, recompute those whose recorded wall times
    fit in :data:`REUSE_CHECK_S` seconds (in a random order) and compare them with
    the stored numbers (:func:`.numeric.compare`); a unit that differs is replaced in ``done`` and
    in its file, and a progress line names it. The others are trusted as stored. Returns
    ``(units checked, indices of the units that differed)``."""
    rng = random.SystemRandom()
    order = list(stored)
    rng.shuffle(order)
    budget, pick = REUSE_CHECK_S, []
    for i in order:
        w = done[i][1].get("wall_s", 0.0)
        w = max(float(w), 0.0) if isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) \
            else math.inf
        if w <= budget:
            pick.append(i)
            budget -= w
    if not pick:
        return 0, []
    pick.sort()
    again = executor.map(exp.run_unit, [units[i] for i in pick], device)
    rejected = []
    for i, (result, counts) in zip(pick, again):
        check = numeric.compare(result, done[i][0], experiment_id=exp.id)
        if check["ok"]:
            continue
        rejected.append(i)
        save_unit(folder, keys[i], units[i], result, counts, code=code, seed=seed, device=device)
        done[i] = (result, {"runs": counts.get("runs", 0), "run_steps": counts.get("run_steps", 0),
                            "wall_s": counts.get("wall_s", 0.0)})
        if progress is not None:
            progress(f"{exp.id} {mode}: stored unit {i} ({keys[i]}.json) is not what this code computes "
                     f"({numeric.describe(check)}): recomputed, not reused")
    if progress is not None:
        progress(f"{exp.id} {mode}: {len(pick)} of the {len(stored)} stored units recomputed and compared before "
                 f"reuse" + (f"; {len(rejected)} differed and were replaced" if rejected else ", all equal"))
    return len(pick), rejected


def compute(experiment_id: str, *, mode: str, seed: int = 0, device: str = "cpu", executor=None,
            root: Path | None = None, progress: Callable[[str], None] | None = None) -> StoredResult:
    """Compute ``experiment_id`` in ``mode`` (no cache look-up) and save it atomically. A full or
    paper result also records the quick mode's digest and numbers for :func:`revalidate`, that
    quick mode computed on the CPU whatever ``device`` is."""
    exp = base.get(experiment_id)
    base.validate_mode(mode, exp)
    validate_seed(seed)
    resolved = resolve_device(device)
    target = result_dir(exp.id, mode, root)
    check_writable(target)
    config = base.config_for(exp, mode, seed=seed)
    own = executor is None
    ex = LocalExecutor() if own else executor
    try:
        quick = None
        if mode in base.FINGERPRINTED_MODES:
            # the fingerprint is computed on the CPU whatever device runs the result: a CUDA
            # generator draws other noise, and revalidation (CI, a reader's laptop) runs on CPU
            quick = load_or_compute(exp.id, mode="quick", seed=seed, device="cpu", executor=ex, root=root,
                                    progress=progress)
        payload, stats = _compute_payload(exp, config, ex, resolved, root, progress)
    finally:
        if own:
            ex.close()
    commit, dirty = git_state()
    cpu = cpu_model()
    prov = {
        "id": exp.id, "mode": mode, "commit": commit, "dirty": dirty, "config": config,
        "config_hash": config_hash(config), "code_hash": identity.code_hash(exp), "code_files": identity.code_files(exp),
        "scale": scale_of(exp.id, config),
        "device": resolved, "cpu": cpu, "versions": _versions(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **stats, "executor": ex.describe(), "digest": digest(payload), "revalidated": [],
    }
    if quick is not None:
        prov["quick_digest"] = quick.digest
        prov["quick_device"] = quick.provenance.get("device")
        prov["quick_cpu"] = quick.provenance.get("cpu") or cpu  # a quick result cached before CPUs were recorded: here
        prov["quick_numbers"] = numeric.record(quick.payload, cpu=prov["quick_cpu"],
                                               commit=quick.provenance.get("commit") or commit)
    prov = sealed(prov)
    files.save(target, payload, prov)
    # the result is complete and saved: its units are no longer needed (keeps the repository small)
    shutil.rmtree(units_dir(exp.id, mode, root), ignore_errors=True)
    return StoredResult(id=exp.id, mode=mode, payload=payload, provenance=prov, fresh=True, cached=False,
                        path=target)


def load_or_compute(experiment_id: str, *, mode: str, seed: int = 0, device: str = "cpu",
                    executor: Any = None, recompute: bool = False, root: Path | None = None,
                    progress: Callable[[str], None] | None = None) -> StoredResult:
    """The stored result when fresh, else computed with ``executor`` (default: in-process) and
    saved; ``recompute=True`` always computes."""
    exp = base.get(experiment_id)
    base.validate_mode(mode, exp)
    validate_seed(seed)
    if not recompute:
        res = load(exp.id, mode=mode, seed=seed, root=root)
        if res is not None and res.fresh:
            return res
    return compute(exp.id, mode=mode, seed=seed, device=device, executor=executor, root=root, progress=progress)


#: which stored result a page shows and a verdict is judged on, best first (:func:`best_fresh`):
#: the paper's own sizes (a complete sweep), the committed full run, this build's quick run
SHOWN_FIRST = ("paper", "full", "quick")


def best_fresh(experiment_id: str, *, modes: tuple[str, ...] = SHOWN_FIRST, seed: int = 0,
               root: Path | None = None) -> StoredResult | None:
    """The one rule for which stored result a page shows and a verdict is judged on: the first
    of ``modes`` (default :data:`SHOWN_FIRST`) whose stored result is fresh, else None; a quick
    one only of ``seed`` (a partial sweep is never a result)."""
    for mode in modes:
        res = load(experiment_id, mode=mode, seed=seed if mode == "quick" else None, root=root)
        if res is not None and res.fresh:
            return res
    return None


def fresh_full(experiment_id: str) -> StoredResult | None:
    """The stored full-mode result of ``experiment_id`` when it is fresh, else None."""
    return best_fresh(experiment_id, modes=("full",))


def fresh_paper(experiment_id: str, root: Path | None = None) -> StoredResult | None:
    """The stored paper-mode result of ``experiment_id`` when it is complete and fresh, else None."""
    return best_fresh(experiment_id, modes=("paper",), root=root)


def result_to_show(experiment_id: str, *, mode: str, seed: int = 0, device: str = "cpu") -> StoredResult:
    """The result a page shows for ``experiment_id``: :func:`best_fresh` of the modes ranked above
    ``mode`` in :data:`SHOWN_FIRST`, else this build's result of ``mode`` (:func:`load_or_compute`)."""
    above = SHOWN_FIRST[:SHOWN_FIRST.index(base.validate_mode(mode))]
    return best_fresh(experiment_id, modes=above) or load_or_compute(experiment_id, mode=mode, seed=seed, device=device)


def _fingerprints(p: dict) -> dict[str, str]:
    """``{cpu: quick digest}`` a result's provenance holds: the one recorded with it (``quick_cpu``),
    those of past revalidations by a reference commit (``method: reference``) and the digest of its
    recorded quick numbers (on the CPU named there)."""
    out = {}
    if p.get("quick_digest"):
        out[p.get("quick_cpu") or "unknown"] = p["quick_digest"]
    for ev in p.get("revalidated") or []:
        if ev.get("cpu") and ev.get("quick_digest") and ev.get("method") == "reference":
            out[ev["cpu"]] = ev["quick_digest"]
    nums = p.get("quick_numbers")
    if isinstance(nums, dict) and nums.get("cpu") and nums.get("digest"):
        out.setdefault(str(nums["cpu"]), str(nums["digest"]))
    return out


def _quick_here(exp: base.Experiment, *, seed: int, qdev: str, executor, root: Path | None) -> tuple[dict, str]:
    """``(payload, digest)`` of the current code's quick mode on this machine: the stored quick
    result when fresh and computed on this kind of CPU (or on a device), else computed into a
    temporary results folder."""
    quick = load_or_compute(exp.id, mode="quick", seed=seed, device=qdev, executor=executor, root=root)
    if quick.provenance.get("cpu") in (None, cpu_model()) or qdev != "cpu":
        return quick.payload, quick.digest
    with tempfile.TemporaryDirectory(prefix="dpc-current-") as tmp:
        res = compute(exp.id, mode="quick", seed=seed, device=qdev, root=Path(tmp))
        return res.payload, res.digest


def revalidate(experiment_id: str, *, device: str = "cpu", executor=None, root: Path | None = None,
               mode: str = "full") -> dict:
    """Re-check a stale full (or paper) result by its quick mode: the current code's quick digest
    against the fingerprint recorded on this kind of CPU, else its quick numbers against the
    recorded ones within the tolerance of :mod:`.numeric` (``method: numeric``, with the largest
    deviation). Returns ``{"id", "status", "detail"}``, status ``fresh`` (nothing to do),
    ``revalidated`` (the event appended to ``revalidated``), ``stale`` (the reason says why),
    ``replaced`` (a save landed meanwhile: nothing written) or ``missing``."""
    exp = base.get(experiment_id)
    if mode not in base.FINGERPRINTED_MODES:
        raise ValueError(f"revalidation applies to modes {', '.join(base.FINGERPRINTED_MODES)}, got {mode!r}")
    res = load(exp.id, mode=mode, root=root)
    if res is None:
        return {"id": exp.id, "status": "missing", "detail": f"no {mode} result stored"}
    if res.fresh:
        return {"id": exp.id, "status": "fresh", "detail": "config and code unchanged"}
    if not res.stale_reason.startswith("code changed"):
        return {"id": exp.id, "status": "stale", "detail": res.stale_reason + "; revalidation covers code changes only"}
    p = res.provenance
    seed = int(p.get("config", {}).get("seed", 0))
    qdev = p.get("quick_device") or device
    here = cpu_model()
    prints = _fingerprints(p)
    new_hash = identity.code_hash(exp)
    numbers, no_numbers = numeric.recorded_numbers(p.get("quick_numbers"))
    same_cpu = here in prints or qdev != "cpu"
    date = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    event, beyond, now = None, "", ""
    if same_cpu or numbers is not None:
        current, now = _quick_here(exp, seed=seed, qdev=qdev, executor=executor, root=root)
        recorded = prints.get(here, p.get("quick_digest"))
        if same_cpu and now == recorded:
            event = {"date": date, "method": "fingerprint", "from_code_hash": p.get("code_hash"),
                     "to_code_hash": new_hash, "quick_digest": now, "cpu": here, "commit": git_state()[0]}
        elif numbers is not None:
            check = numeric.compare(current, numbers, experiment_id=exp.id)
            if check["ok"]:
                nums = p["quick_numbers"]
                event = {"date": date, "method": "numeric", "from_code_hash": p.get("code_hash"),
                         "to_code_hash": new_hash, "quick_digest": now, "recorded_quick_digest": nums.get("digest"),
                         "cpu": here, "numbers_cpu": nums.get("cpu"), "commit": git_state()[0],
                         "result_commit": p.get("commit"), "numbers_commit": nums.get("commit"),
                         "max_deviation": {k: check[k] for k in ("key", "abs", "rel", "share", "rtol", "atol")}}
            else:
                beyond = ("quick numbers differ: " if check["why"] else "quick numbers beyond tolerance: ") + \
                    numeric.describe(check)
        if event is None and same_cpu:
            recorded = recorded or "?"
            return {"id": exp.id, "status": "stale",
                    "detail": f"quick digest changed ({recorded[:12]} -> {now[:12]}): the code change changes "
                              f"numbers; {beyond or no_numbers}; recompute the {mode} result"}
    if event is None:
        there = p.get("quick_cpu")
        if not p.get("quick_digest"):
            head = "no quick-mode fingerprint recorded"
        elif there:
            head = (f"recorded on another CPU ({there}; this one: {here}), whose kernels round differently, "
                    "so its fingerprint cannot be compared here")
        else:
            head = (f"the CPU that recorded it is not known (this one: {here}); float results can differ in "
                    "their last bits from one kind of CPU to another")
        return {"id": exp.id, "status": "stale",
                "detail": f"{head}; {beyond or no_numbers}; recompute the {mode} result"}
    check_writable(res.path)
    # the seal was intact (an edited provenance is stale for that reason, not for code, and
    # never gets here): re-seal over the new code hash and the appended event. The recorded
    # quick numbers are kept (every later code is compared with them, so deviations never accumulate)
    update = {"code_hash": new_hash, "code_files": identity.code_files(exp),
              "revalidated": list(p.get("revalidated") or []) + [event]}
    try:
        # compare and swap, under the result's lock: written only if the provenance is still the
        # one read above (a save that landed meanwhile holds another payload, whose provenance
        # this must not replace)
        files.replace_provenance(res.path, sealed({**p, **update}), expect=p)
    except files.Replaced:
        return {"id": exp.id, "status": "replaced",
                "detail": f"another save replaced the {mode} result while it was being revalidated; nothing written "
                          "(the new result is judged as it is: list the results again)"}
    if event["method"] == "numeric":
        dev = event["max_deviation"]
        how = (f"differs from the recorded {event['recorded_quick_digest'][:12]}, its numbers within tolerance: "
               + numeric.describe({**dev, "why": ""}))
    else:
        how = "unchanged"
    return {"id": exp.id, "status": "revalidated", "method": event["method"],
            "detail": f"quick digest {event['quick_digest'][:12]} {how}; {mode} result fresh for code {new_hash[:12]}"}


def list_results(root: Path | None = None) -> list[StoredResult]:
    """Every stored result of every known experiment (fresh, stale or damaged), by id then mode;
    what killed saves left is tidied first."""
    out = []
    for exp_id, exp in base.all_experiments().items():
        for mode in base.modes_of(exp):
            files.cleanup(result_dir(exp_id, mode, root))
            r = load(exp_id, mode=mode, root=root)
            if r is not None:
                out.append(r)
    return out


# --- executors: where the units run ---------------------------------------------------

#: seconds allowed to connect to a running Dask scheduler (``--scheduler``): a hard deadline,
#: kept even when the peer accepts the connection and never answers
SCHEDULER_TIMEOUT_S = 3
#: most ``--workers`` per core of this machine: each worker is a single-threaded process
#: (one unit at a time), so more than a few per core only adds processes and memory
WORKERS_PER_CORE = 4
EXECUTORS = ("local", "dask")
def run_one(run_unit: Callable[[dict, str], dict], unit: dict, device: str) -> tuple[dict, dict]:
    """Run one unit with torch and BLAS at one thread (restored afterwards), whatever the
    executor: a reduction split over threads rounds differently, so this makes a unit's numbers
    depend on its config only (parallelism comes from units side by side). Returns ``(unit
    result, counts)``: the runs and run-steps it trained (``engine.tally``) and its wall time."""
    import torch  # torch and the engine only here: the store imports without torch (the CLI, the book)

    from dpcompanion.training.trainers import engine

    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            before_tally = engine.tally()
            t0 = time.perf_counter()
            result = run_unit(unit, device)
            wall = time.perf_counter() - t0
            after = engine.tally()
            return result, {**{k: after[k] - before_tally[k] for k in after}, "wall_s": wall}
    finally:
        if before != 1:
            torch.set_num_threads(before)


def worker_environ() -> dict:
    """The environment a ``LocalCluster`` worker starts with: Dask's
    ``distributed.nanny.pre-spawn-environ`` without ``MALLOC_TRIM_THRESHOLD_``. Setting any glibc
    malloc threshold turns off its dynamic mmap threshold, so every allocation above 128 KiB
    (most tensors of a step) is a fresh ``mmap`` faulted in and zeroed: steps ran 2-3x slower.
    The numbers a unit computes do not depend on it. A cluster started elsewhere (``--scheduler``)
    keeps its own settings."""
    import dask

    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    return env


class LocalExecutor:
    """Every unit in this process, in order."""

    name = "local"

    def map(self, run_unit, units: Sequence[dict], device: str, on_done=None) -> list[tuple[dict, dict]]:
        """``on_done(i, (result, counts))`` is called as each unit finishes (the store saves it)."""
        out = []
        for i, u in enumerate(units):
            out.append(run_one(run_unit, u, device))
            if on_done is not None:
                on_done(i, out[-1])
        return out

    def close(self) -> None:
        pass

    def describe(self) -> str:
        return "local"


class DaskExecutor:
    """Units as Dask tasks: ``workers=N`` starts a ``LocalCluster`` of N single-threaded worker
    processes; ``scheduler=ADDRESS`` connects to a running scheduler (``dask-jobqueue``,
    ``dask scheduler`` ...) within :data:`SCHEDULER_TIMEOUT_S` seconds."""

    name = "dask"

    def __init__(self, *, workers: int | None = None, scheduler: str | None = None):
        import dask  # optional: the dask extra
        from distributed import Client, LocalCluster

        self.cluster = None
        if scheduler is not None:
            self.client = _connect(scheduler)
            self.where = scheduler
        else:
            n = workers or os.cpu_count() or 1

            def start() -> None:
                with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ()}):
                    self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                                dashboard_address=None, silence_logs=logging.ERROR)
                self.client = Client(self.cluster)

            self.client = None
            if _sigint_deferred(start):  # Ctrl-C while it started: torn down whole, then the interrupt
                self.close()
                raise KeyboardInterrupt
            self.where = f"LocalCluster({n} workers x 1 thread)"

    def map(self, run_unit, units: Sequence[dict], device: str, on_done=None) -> list[tuple[dict, dict]]:
        """``on_done(i, (result, counts))`` is called in this process as each unit finishes,
        in the order they finish (the store saves it here, not on the worker). A failing unit
        does not stop the others: every unit that succeeds is handed to ``on_done`` (so a
        rerun reuses it), then the first failure is raised."""
        from distributed import as_completed

        futures = self.client.map(run_one, [run_unit] * len(units), list(units),
                                  [device] * len(units), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        out: list = [None] * len(units)
        failed: BaseException | None = None
        for fut in as_completed(futures):
            i = index[fut.key]
            try:
                out[i] = fut.result()
            except Exception as exc:  # noqa: BLE001 (re-raised below, once the others are in)
                failed = failed or exc
                continue
            if on_done is not None:
                on_done(i, out[i])
        if failed is not None:
            raise failed
        return out

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def describe(self) -> str:
        return f"dask {self.where}"


def _sigint_deferred(start: Callable[[], None]) -> bool:
    """Run ``start`` with SIGINT held back; True when one arrived meanwhile (an interrupt inside
    ``LocalCluster``'s start leaves a half-started cluster and a worker process behind: held back,
    the cluster starts whole and the caller tears it down). Off the main thread ``start`` just runs."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        start()
        return False
    got: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        start()
    finally:
        signal.signal(signal.SIGINT, previous)
    return bool(got)


def _connect(scheduler: str):
    """A Dask ``Client`` of the running scheduler at ``scheduler``, or ValueError within
    :data:`SCHEDULER_TIMEOUT_S` seconds: attempted in a thread with a hard deadline (Dask's own
    ``timeout`` does not bound a peer that accepts and never answers, and other bytes make Dask
    try to allocate exabytes)."""
    from distributed import Client

    deadline = time.monotonic() + SCHEDULER_TIMEOUT_S
    quiet = [logging.getLogger(n) for n in ("distributed", "distributed.client", "distributed.comm",
                                            "distributed.core", "distributed.protocol")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.CRITICAL)
    lock = threading.Lock()
    box: dict[str, Any] = {}

    def restore_logging() -> None:
        for lg, lv in zip(quiet, levels):
            lg.setLevel(lv)

    def attempt() -> None:
        try:
            # a plain TCP connection first: a refused or unreachable address fails at once
            # (Dask retries a refused connection until its timeout)
            parts = urlsplit("tcp://" + scheduler.strip().split("://", 1)[-1])
            socket.create_connection((parts.hostname, parts.port), timeout=SCHEDULER_TIMEOUT_S).close()
            client = Client(scheduler, timeout=f"{SCHEDULER_TIMEOUT_S}s")
        except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, MemoryError (non-Dask bytes), ...
            client, error = None, exc
        else:
            error = None
        with lock:
            if box.get("abandoned"):  # too late: the caller has reported the failure
                if client is not None:
                    client.close()
                restore_logging()
                return
            box["client"], box["error"], box["done"] = client, error, True

    worker = threading.Thread(target=attempt, name="dpcompanion-dask-connect", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    with lock:
        if not box.get("done"):
            box["abandoned"] = True  # the thread restores the logging levels if it ever ends
            raise ValueError(f"--scheduler {scheduler}: cannot connect within {SCHEDULER_TIMEOUT_S} s (nothing answered "
                             "as a Dask scheduler); is a Dask scheduler running there?")
    restore_logging()
    if box["error"] is not None:
        exc = box["error"]
        what = ("the peer's reply is not Dask's protocol" if isinstance(exc, MemoryError) else type(exc).__name__)
        raise ValueError(f"--scheduler {scheduler}: cannot connect within {SCHEDULER_TIMEOUT_S} s ({what}); "
                         "is a Dask scheduler running there?")
    return box["client"]


def max_workers() -> int:
    """The most ``--workers`` accepted: :data:`WORKERS_PER_CORE` per core of this machine."""
    return WORKERS_PER_CORE * (os.cpu_count() or 1)


def check_scheduler_address(scheduler: Any) -> str:
    """``tcp://HOST:PORT`` (or ``HOST:PORT``, which Dask reads as tcp), checked without
    contacting it; ValueError naming ``--scheduler`` otherwise. TLS and the other protocols
    need a security configuration (certificates) that this command does not take."""
    allowed = ("an address tcp://HOST:PORT (PORT in 1..65535; tls:// and other protocols are not supported: "
               "they need a security configuration)")
    if not isinstance(scheduler, str) or not scheduler.strip():
        raise ValueError(f"--scheduler must be {allowed}, got {scheduler!r}")
    text = scheduler.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    try:
        parts = urlsplit(f"tcp://{rest}")
        ok = (scheme == "tcp" and bool(parts.hostname) and parts.port is not None and 1 <= parts.port <= 65535
              and not (parts.path or parts.query or parts.fragment) and parts.username is None)
    except ValueError:  # a port that is not a number, a malformed [IPv6] host
        ok = False
    if not ok:
        raise ValueError(f"--scheduler must be {allowed}, got {scheduler!r}")
    return text


def make_executor(executor: str | None = "local", *, workers: int | None = None,
                  scheduler: str | None = None):
    """Validate the executor options (ValueError naming the flag) and build the executor."""
    check_executor_options(executor, workers=workers, scheduler=scheduler)
    if (executor or "local") == "local":
        return LocalExecutor()
    return DaskExecutor(workers=workers, scheduler=scheduler)


def check_executor_options(executor: str | None = "local", *, workers: int | None = None,
                           scheduler: str | None = None) -> None:
    """The checks of :func:`make_executor`, without starting or contacting anything."""
    executor = executor or "local"
    if executor not in EXECUTORS:
        raise ValueError(f"--executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"--workers must be an integer >= 1, got {workers!r}")
    if workers is not None and workers > max_workers():
        raise ValueError(f"--workers must be at most {max_workers()} ({WORKERS_PER_CORE} single-threaded worker "
                         f"processes per core, {os.cpu_count() or 1} cores here), got {workers!r}")
    if executor == "local" and (workers is not None or scheduler is not None):
        raise ValueError("--workers and --scheduler need --executor dask")
    if workers is not None and scheduler is not None:
        raise ValueError("give either --workers (start a LocalCluster) or --scheduler (use a running one), not both")
    if scheduler is not None:
        check_scheduler_address(scheduler)

