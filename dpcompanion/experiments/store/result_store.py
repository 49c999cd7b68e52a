"""Stored results: computing an experiment on an executor and saving it, loading it and
deciding whether it is fresh, revalidating a full (or paper) result by its quick-mode
fingerprint, listing and sealing (see the package docstring, :mod:`dpcompanion.experiments.store`).

**Paper mode** (``paper``, optional: :data:`dpcompanion.experiments.base.OPTIONAL_MODES`): the
paper's own sizes, hours on two cores. It is stored, resumed and revalidated exactly as
full mode (its units in ``<id>/paper.units/``, committable; its result in ``<id>/paper/``,
committed; its quick digest recorded). Where a fresh paper result exists, a page shows it
instead of the full one (:func:`fresh_paper`, :func:`result_to_show`); while a paper sweep is
partial, the page says how far it got (:func:`dpcompanion.book.show.paper_progress_note`, from
:func:`.unit_sweeps.sweep_progress`).

This module returns results and facts about them; the sentences a page shows about them
(why no full result is shown, how far a partial sweep got) are the book's
(:mod:`dpcompanion.book.show`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import random
import shutil
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from dpcompanion.core.provenance import git_state, resolve_device, validate_seed, versions
from dpcompanion.experiments import base
from dpcompanion.experiments.scale_tables import scale_of, size_mismatches  # the scale block
from dpcompanion.experiments.store import files, hashing, numeric, unit_sweeps, vcs
from dpcompanion.experiments.store.executors import LocalExecutor, cpu_model
from dpcompanion.experiments.store.files import SEAL, Damaged, check_writable, result_dir, sealed
from dpcompanion.experiments.store.hashing import config_hash, digest

__all__ = ["StoredResult", "load", "compute", "load_or_compute", "SHOWN_FIRST", "best_fresh", "fresh_full", "fresh_paper",
           "quick_payload_here", "result_to_show", "revalidate", "list_results", "seal_unsealed"]

@dataclasses.dataclass(frozen=True)
class StoredResult:
    """A result and what is known about it.

    ``fresh``: the result's files are intact, its provenance seal matches, config hash and
    code hash equal the current ones; ``cached``: loaded from disk rather than computed by
    this call; ``path``: its folder ``results/<id>/<mode>/``; ``stale_reason``: why it is not
    fresh; ``damaged``: ``<file>: <what>`` when a file of the result is missing, unreadable or
    does not match its digest (then ``stale_reason`` is ``damaged: <file>: <what>``, the
    payload is empty, and the result is never shown)."""

    id: str
    mode: str
    payload: dict[str, Any]
    provenance: dict[str, Any]
    fresh: bool
    cached: bool
    path: Path | None
    stale_reason: str = ""
    damaged: str = ""
    #: its files against git (:func:`.vcs.modified`): '' when they equal the last commit that
    #: touched them (or git has nothing to say), else ``modified since commit <sha> ...`` (stale)
    #: or ``written by this store since commit <sha>, not committed yet``
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
        """How the result came to be valid for the code it is recorded with:
        ``{"method": "computed"}`` (made by that code), ``{"method": "digest", "by": "fingerprint"
        | "reference", "date"}`` (the last revalidation found the quick digest unchanged) or
        ``{"method": "numeric", "date", "max_deviation": {"key", "abs", "rel", "share", "rtol",
        "atol"}, "result_commit", "commit"}`` (the quick digest moved, the quick numbers within
        tolerance); ``quick_numbers``: whether the quick numbers are recorded (so that the next
        code change can be revalidated numerically)."""
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
                "seed": config.get("seed"), "modified": self.modified or None, **self.unit_counts()}

    def unit_counts(self) -> dict[str, Any]:
        """``units_total``, ``units_computed`` (by this run) and ``units_reused`` (stored units,
        or the whole stored result when it was loaded)."""
        p = self.provenance
        total = p.get("units")
        if self.cached:
            return {"units_total": total, "units_computed": 0, "units_reused": total}
        return {"units_total": total, "units_computed": p.get("units_computed", total),
                "units_reused": p.get("units_reused", 0)}


def _read(exp: base.Experiment, mode: str, root: Path | None) -> StoredResult | None:
    """The stored result (its files checked: a damaged one comes back with ``damaged`` set),
    or None when nothing is stored. While ``<mode>/`` is missing because a save was killed
    between its renames, the previous result in ``.<mode>.old-…`` is read."""
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
    """'' when the recorded config agrees with its own hash and with the payload, else
    ``inconsistent: <what>`` (an edited ``provenance.config``, resealed, must not read
    as fresh nor be judged at the paper's scale). Checked: the config hashes to the recorded
    ``config_hash``; every key the payload's own record of its config (``payload["config"]`` or
    ``["settings"]``) shares with it is equal; the sizes the payload holds (array lengths, stored
    counts: :func:`dpcompanion.experiments.scale_tables.size_mismatches`) equal the config's;
    the number of units the config makes equals the recorded ``units``."""
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
    if p.get("code_hash") != hashing.code_hash(exp):
        old, now = p.get("code_files", {}), hashing.code_files(exp)
        old = old if isinstance(old, dict) else {}
        changed = sorted(m for m, h in now.items() if old.get(m) != h)
        changed += sorted(m for m in old if m not in now)
        if not changed:
            return "code changed: the store's run policy"
        return "code changed: " + ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
    return ""


def load(experiment_id: str, *, mode: str, seed: int | None = None, root: Path | None = None) -> StoredResult | None:
    """The stored result of ``experiment_id`` in ``mode``, fresh or not (``fresh`` says which;
    a damaged one is stale, ``damaged`` says what is wrong), without computing; ``None`` when
    nothing is stored. ``seed``: the seed the result must have been computed with to count as
    fresh (default: the one it was computed with). Never raises for a damaged result. ``None``
    too for an optional mode (``paper``) that the experiment does not define."""
    exp = base.get(experiment_id)
    base.validate_mode(mode)
    if mode not in exp.configs:
        return None
    res = _read(exp, mode, root)
    if res is None or res.damaged:
        return res
    git = vcs.modified(res.path)
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


def _compute_payload(exp: base.Experiment, config: dict, executor, device: str,
                     root: Path | None = None, progress: Callable[[str], None] | None = None) -> tuple[dict, dict]:
    """Run the units not already stored (by the current code) in ``<mode>.units/``, storing
    each as it finishes, and combine all of them, in units order."""
    units = exp.units(config)
    mode, seed = config["mode"], int(config["seed"])
    folder = unit_sweeps.units_dir(exp.id, mode, root)
    code = hashing.code_hash(exp)
    keys = [unit_sweeps.unit_key(exp.id, mode, u, seed, device) for u in units]
    done: list = [None] * len(units)
    old_code = 0
    if folder.is_dir():  # temporary files of unit saves killed mid-write
        now = time.time_ns()
        for p in folder.glob(".*.tmp-*"):
            if files.temp_is_stale(p.name, now):
                p.unlink(missing_ok=True)
    for i, k in enumerate(keys):
        rec = unit_sweeps.load_unit(folder, k) if folder.is_dir() else None
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
        unit_sweeps.save_unit(folder, keys[i], units[i], out[0], out[1], code=code, seed=seed, device=device)

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
    """Before a resumed sweep (``experiment``, with or without ``--recompute``) reuses its stored
    units, recompute some and compare them with the stored numbers (:func:`.numeric.compare`,
    the experiment's tolerance): in a random order (this process's own randomness), every stored
    unit whose recorded wall time still fits in :data:`.unit_sweeps.REUSE_CHECK_S` seconds, so
    all of them when they are cheap. A unit that differs is not reused: its recomputed result
    takes its place in ``done`` and in its file, and a progress line names it. Returns
    ``(units checked, indices of the units that differed)``. What is not checked (units whose
    recorded times exceed the budget) is trusted as stored: see the package docstring."""
    rng = random.SystemRandom()
    order = list(stored)
    rng.shuffle(order)
    budget, pick = unit_sweeps.REUSE_CHECK_S, []
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
        unit_sweeps.save_unit(folder, keys[i], units[i], result, counts, code=code, seed=seed, device=device)
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
    """Compute ``experiment_id`` in ``mode`` (no cache look-up) and save it atomically.

    A full or paper result (:data:`~dpcompanion.experiments.base.FINGERPRINTED_MODES`) also
    records the quick-mode digest of the same code and seed (computed if no fresh quick result
    is stored) and, next to it, the quick numbers themselves (``quick_numbers``,
    :func:`.numeric.record`) for :func:`revalidate`. That quick mode runs on the CPU whatever
    ``device`` is, so a result computed on a GPU revalidates on any CPU."""
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
        "config_hash": config_hash(config), "code_hash": hashing.code_hash(exp), "code_files": hashing.code_files(exp),
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
    shutil.rmtree(unit_sweeps.units_dir(exp.id, mode, root), ignore_errors=True)
    return StoredResult(id=exp.id, mode=mode, payload=payload, provenance=prov, fresh=True, cached=False,
                        path=target)


def load_or_compute(experiment_id: str, *, mode: str, seed: int = 0, device: str = "cpu",
                    executor: Any = None, recompute: bool = False, root: Path | None = None,
                    progress: Callable[[str], None] | None = None) -> StoredResult:
    """The stored result when fresh (same config, seed included, and same code), else computed
    with ``executor`` (default: in-process) and saved. ``recompute=True`` always computes."""
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
    of ``modes`` (default :data:`SHOWN_FIRST`: paper, else full, else quick) whose stored result
    is fresh, else None. A paper result counts only complete and for an experiment with a paper
    config (a partial sweep is never a result: :func:`.unit_sweeps.sweep_progress` says how far it
    got); a quick one only of ``seed``; a stale one never (:func:`load` says why:
    ``stale_reason``).
    :func:`result_to_show`, :func:`fresh_full`, :func:`fresh_paper`, the pages
    (:class:`dpcompanion.book.show.ExperimentPage`) and the verdicts report call it."""
    for mode in modes:
        res = load(experiment_id, mode=mode, seed=seed if mode == "quick" else None, root=root)
        if res is not None and res.fresh:
            return res
    return None


def fresh_full(experiment_id: str) -> StoredResult | None:
    """The stored full-mode result of ``experiment_id`` when it is fresh, else None
    (:func:`best_fresh` of full mode alone)."""
    return best_fresh(experiment_id, modes=("full",))


def fresh_paper(experiment_id: str, root: Path | None = None) -> StoredResult | None:
    """The stored paper-mode result of ``experiment_id`` when it is complete and fresh, else
    None, also for an experiment without a paper config (:func:`best_fresh` of paper mode
    alone)."""
    return best_fresh(experiment_id, modes=("paper",), root=root)


def result_to_show(experiment_id: str, *, mode: str, seed: int = 0, device: str = "cpu") -> StoredResult:
    """The result a page shows for ``experiment_id``: the stored paper-mode result when it is
    complete and fresh (the paper's own sizes), else the stored full-mode result when it is
    fresh (the committed run), else this build's result of ``mode`` (loaded when fresh, else
    computed). A stale or partial result is never shown as current: :func:`best_fresh` of the
    modes ranked above ``mode`` in :data:`SHOWN_FIRST`, else :func:`load_or_compute`."""
    above = SHOWN_FIRST[:SHOWN_FIRST.index(base.validate_mode(mode))]
    return best_fresh(experiment_id, modes=above) or load_or_compute(experiment_id, mode=mode, seed=seed, device=device)


def _fingerprints(p: dict) -> dict[str, str]:
    """``{cpu: quick digest}`` a result's provenance holds: the one recorded with it (``quick_cpu``),
    one per reference revalidation (the quick digest the code gave on that CPU) and the digest of
    its recorded quick numbers (``quick_numbers``: the result's own code's, on the CPU named there)."""
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
    result when fresh and computed on this kind of CPU (or on a device), else computed."""
    quick = load_or_compute(exp.id, mode="quick", seed=seed, device=qdev, executor=executor, root=root)
    if quick.provenance.get("cpu") in (None, cpu_model()) or qdev != "cpu":
        return quick.payload, quick.digest
    return quick_payload_here(exp, seed=seed, device=qdev)


def quick_payload_here(exp: base.Experiment, *, seed: int = 0, device: str = "cpu") -> tuple[dict, str]:
    """``(payload, digest)`` of the current code's quick mode, computed on this machine into a
    temporary results folder (a stored quick result may come from another machine): the numbers
    a numeric revalidation compares and the digest a reference check
    (:mod:`.reference`) compares with the reference commit's."""
    with tempfile.TemporaryDirectory(prefix="dpc-current-") as tmp:
        res = compute(exp.id, mode="quick", seed=seed, device=device, root=Path(tmp))
        return res.payload, res.digest


def revalidate(experiment_id: str, *, device: str = "cpu", executor=None, root: Path | None = None,
               mode: str = "full") -> dict:
    """Re-check a stale full (or, ``mode="paper"``, paper) result by its quick mode (see the
    package docstring).

    With a fingerprint recorded on this kind of CPU, the current code's quick digest is compared
    with it; where they differ (or the fingerprint is of another CPU), the current code's quick
    numbers are compared with the recorded ``quick_numbers`` within the tolerance of
    :mod:`.numeric`: within it, the result is revalidated numerically (``method: numeric``, with
    the largest deviation, the commit that made the result and the current one, and the new
    digest); beyond it, it stays stale and the reason names the largest deviation.

    Returns ``{"id", "status", "detail"}``; status is ``fresh`` (nothing to do), ``revalidated``
    (the event appended to ``revalidated``, the result fresh for the current code hash),
    ``stale`` (digests and numbers differ, or the config changed, or nothing to compare with),
    ``replaced`` (a save of the same result landed while this one computed: the provenance is
    written only if it is still the one read at the start, :func:`.files.replace_provenance`, so
    nothing was written and the new payload keeps its own) or ``missing`` (no result of ``mode``)."""
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
    new_hash = hashing.code_hash(exp)
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
        return {"id": exp.id, "status": "stale", "detail": f"{head}; {beyond or no_numbers}; recompute the {mode} result"}
    check_writable(res.path)
    # the seal was intact (an edited provenance is stale for that reason, not for code, and
    # never gets here): re-seal over the new code hash and the appended event. The recorded
    # quick numbers are kept (every later code is compared with them, so deviations never accumulate)
    update = {"code_hash": new_hash, "code_files": hashing.code_files(exp),
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
    """Every stored result of every known experiment (fresh, stale or damaged), by id then
    mode; what killed saves left behind is tidied first (:func:`cleanup`)."""
    out = []
    for exp_id, exp in base.all_experiments().items():
        for mode in base.modes_of(exp):
            files.cleanup(result_dir(exp_id, mode, root))
            r = load(exp_id, mode=mode, root=root)
            if r is not None:
                out.append(r)
    return out


def seal_unsealed(root: Path | None = None) -> list[dict]:
    """Seal the provenance of every stored result that has no seal (stored before seals
    existed), without recomputing: a one-off migration (``results --seal``). Only what can be
    verified is sealed (a reseal must never turn an edit into a fresh result): the
    files read and the payload matches its digest; the recorded config hashes to its
    ``config_hash`` and agrees with the sizes the payload holds (:func:`inconsistency`); and
    the files equal the last git commit that touched them (:func:`.vcs.state`). A result that
    is damaged, whose seal is broken, that is inconsistent, that differs from its commit, was
    never committed, or lies outside a git work tree is refused, the detail naming which.
    Returns ``{"id", "mode", "status", "detail"}`` per result, status ``sealed``, ``already
    sealed`` or ``refused``."""
    out = []
    for exp_id, exp in base.all_experiments().items():
        for mode in base.modes_of(exp):
            res = _read(exp, mode, root)
            if res is None:
                continue
            row = {"id": exp_id, "mode": mode}
            problem = res.stale_reason if res.damaged else files.seal_problem(res.provenance)
            if not problem:
                out.append({**row, "status": "already sealed", "detail": ""})
                continue
            if res.damaged or SEAL in res.provenance:
                out.append({**row, "status": "refused", "detail": problem})
                continue
            if not result_dir(exp_id, mode, root).is_dir():
                out.append({**row, "status": "refused", "detail": "an interrupted save is being recovered; list again"})
                continue
            why = inconsistency(exp, res.provenance, res.payload)
            if not why:
                kind, last = vcs.state(res.path)
                why = {"no git": "not in a git work tree: its files cannot be compared with a commit, so an edit "
                                 "cannot be told from the original",
                       "untracked": "never committed: nothing to compare its files with",
                       "journaled": f"rewritten since commit {last}: only a committed result is sealed",
                       "modified": f"its files differ from commit {last}, the last that touched them (an edit)",
                       "hidden": "git is told not to compare its files with the commit (skip-worktree or "
                                 "assume-unchanged): an edit cannot be told from the original",
                       }.get(kind, "")
            if why:
                out.append({**row, "status": "refused", "detail": f"{why}; not sealed (recompute it: "
                                                                     f"`python -m dpcompanion experiment {exp_id} "
                                                                     f"--mode {mode}`)"})
                continue
            try:
                files.replace_provenance(res.path, sealed(res.provenance), expect=res.provenance)
            except files.Replaced:
                out.append({**row, "status": "refused", "detail": "replaced by another save while being sealed; "
                                                                  "not sealed (list again)"})
                continue
            out.append({**row, "status": "sealed", "detail": f"digest {res.digest[:12]}, equal to commit {last}"})
    return out
