"""Results store: experiments computed once, saved with their provenance, loaded by the book.

An experiment (:mod:`dpcompanion.experiments.base`) is ``compute(config) -> payload``, split
into independent units. Its result lives in ``results/<id>/<mode>/``:

* ``payload.json``: the numeric payload (scalars, strings, small arrays inline);
* ``arrays.npz``: arrays of more than :data:`INLINE_MAX` elements (referenced from the JSON);
* ``provenance.json``: commit and dirty flag, config and its hash, code hash (and the hash
  of each source file it covers), device, library versions, created, wall time, units and
  runs, executor, ``digest``; for a full result also the quick-mode digest of the same code
  (the behavioural fingerprint, see :func:`revalidate`) and the revalidation history; and
  the **seal** (``provenance_seal``, below).

Writes are atomic and never lose the previous result (:func:`_save`): everything goes to a
temporary folder ``.<mode>.tmp-…`` beside ``<mode>/`` (made with the umask's permissions),
then two renames swap it in (``<mode>`` to ``.<mode>.old-…``, the new folder to ``<mode>``).
A failing computation or write leaves nothing behind; a save killed between the two renames
leaves the previous result in ``.<mode>.old-…``, which readers use while ``<mode>`` is
missing and the next save or listing puts back; temporary folders of killed saves (writer
gone, or older than :data:`STALE_TEMP_S`) are removed by the next save or listing; two saves
racing at the swap both succeed, the last one wins. Results stay plain folders of plain
files (git stores them). Quick results are a local cache (``results/*/quick/`` is
git-ignored, so a fresh clone recomputes them); full results are committed.

**Resumable sweeps** (:func:`_compute_payload`): every unit is stored as it finishes in
``results/<id>/<mode>.units/<key>.json`` (and ``<key>.npz`` for arrays of more than
:data:`INLINE_MAX` elements), each file written to a temporary name and renamed into place
(the ``.npz`` first; the ``.json`` marks the unit done). The key (:func:`unit_key`) hashes
everything that determines the unit's numbers besides the code: experiment id, mode, the
unit's own dict (canonical, as :func:`digest`), the seed and the device; the experiment's
code hash is recorded in the file, and a unit stored by older code is recomputed (the
``progress`` line says how many). A unit file keeps its result's types exactly (numpy
scalars with their dtype, tuples, arrays), and carries the result's digest: a unit file
that does not read back or does not match is recomputed. A run killed or failing part-way
therefore leaves its finished units, and the next run (local or Dask: the calling process
stores each unit as the executor hands it back, ``map(..., on_done=)``) computes only the
others; the payload is combined from all units in their order, exactly as in a straight run,
so its digest is the same. ``units_total``, ``units_computed``, ``units_reused`` are recorded
in the provenance and in :meth:`StoredResult.record`. Once the result is saved its units
folder is removed (the result holds the numbers; the repository stays small). Until then
:func:`sweep_progress` / :func:`list_partial` report ``units_done/units_total`` and an
estimate of the compute left (mean wall time of the finished units times the units left);
a partial result is never shown (:func:`full_absent_note` says how far a partial full sweep
got). ``quick.units/`` is git-ignored; a full sweep's units may be committed, so that a fresh
clone on another machine resumes it.

**Reading checks everything** (:func:`load`): both JSON files parse, every array the payload
refers to is in ``arrays.npz`` and readable, and the payload has its recorded digest. A
result failing any check is **damaged**: ``StoredResult.damaged`` is ``<file>: <what>``, its
``stale_reason`` ``damaged: <file>: <what>``; it is stale (never shown, recomputed by the
next :func:`load_or_compute`), and listing goes on with the other results.

**seal** (``provenance_seal``): ``{field: sha256[:16] of its JSON value}`` for every other
provenance field (device, commit, created, wall time, runs, run-steps, units, executor,
config, digest ...), written at save. A field edited, added or removed since makes the
result stale with reason ``provenance edited: <field>``; a result without a seal is stale
too (``results --seal``, :func:`seal_unsealed`, seals results stored before seals existed,
intact ones only, without recomputing). The seal covers every field, so a revalidation,
which changes the code hash and appends to ``revalidated``, re-seals; it only runs on a
result whose seal was intact (an edited one is stale for that reason, not for code). The
seal detects edits and accidents, it is not a signature: anyone can recompute it.

**digest**: sha256 over a canonical encoding of the payload only (:func:`digest`): dict keys
sorted, floats by ``repr``, ints and strings tagged, arrays by dtype, shape and bytes. It
does not cover provenance, times or paths, so the same config and seed give the same digest
on any executor.

**code hash** (:func:`code_hash`, :func:`code_files`): the sha256 of the source of the experiment's module and
of every ``dpcompanion`` module it imports, transitively (found by reading the imports
with ``ast``, at top level and inside functions: an experiment lists no dependencies by
hand). The store itself is left out (it stores numbers, it does not
make them), so are the verdict rules (:mod:`dpcompanion.experiments.comparisons`: they judge
numbers), and so is everything the experiment does not import: the book layer (plotting,
report) in particular, so editing a figure never invalidates a result. The store's
:data:`RUN_POLICY` (every unit runs single-threaded) is hashed with them.

A result is **fresh** when it is not damaged, its seal matches, and its config hash and code
hash both equal the current ones.

**Revalidation** (:func:`revalidate`): a refactor that changes no number should not force
hours of recomputation. When a full result is computed, the quick mode of the same code and
seed is computed too and its digest recorded (``quick_digest``). When the code hash later
changes, :func:`revalidate` recomputes only the quick mode; if its digest equals the recorded
one, the full result is marked fresh for the new code hash (the event is appended to
``revalidated`` in its provenance, with the date), otherwise it stays stale.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime as _dt
import errno
import functools
import hashlib
import json
import os
import shutil
import sys
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from dpcompanion.core.provenance import REPO, git_state, resolve_device, validate_mode, validate_seed, versions
from dpcompanion.experiments import base
from dpcompanion.experiments.comparisons.scale import scale_of  # the scale block of a result (issue 21)

__all__ = [
    "StoredResult", "load_or_compute", "units_dir", "unit_key", "sweep_progress", "list_partial", "save_unit", "load", "compute", "revalidate", "list_results", "seal_unsealed", "sealed",
    "digest",
    "config_hash", "code_files", "code_hash", "results_root", "result_dir", "check_writable",
    "LocalExecutor", "DaskExecutor", "make_executor", "check_executor_options", "EXECUTORS", "INLINE_MAX",
    "check_scheduler_address", "max_workers",
]

#: arrays with more elements than this go to ``arrays.npz``; smaller ones stay in the JSON
INLINE_MAX = 64
#: seconds allowed to connect to a running Dask scheduler (``--scheduler``): a hard deadline,
#: kept even when the peer accepts the connection and never answers
SCHEDULER_TIMEOUT_S = 3
#: most ``--workers`` per core of this machine: each worker is a single-threaded process
#: (one unit at a time), so more than a few per core only adds processes and memory
WORKERS_PER_CORE = 4
EXECUTORS = ("local", "dask")
PKG = Path(__file__).resolve().parents[1]
#: modules (and packages, with their submodules) left out of every code hash: the store
#: stores numbers and the verdict rules judge them; neither makes them
CODE_HASH_EXCLUDE = frozenset({"dpcompanion.experiments.store", "dpcompanion.experiments.comparisons"})
#: how :func:`_run_one` runs every unit; part of every code hash (change it when the way
#: units are run changes, since that can change their last bits)
RUN_POLICY = "unit single-threaded: torch 1 intra-op thread, BLAS 1 thread"


# --- where results live --------------------------------------------------------------

def results_root() -> Path:
    """``results/`` of the repository, or ``$DPCOMPANION_RESULTS`` when set (tests, clusters)."""
    env = os.environ.get("DPCOMPANION_RESULTS")
    return Path(env) if env else REPO / "results"


def result_dir(experiment_id: str, mode: str, root: Path | None = None) -> Path:
    return (root or results_root()) / experiment_id / mode


def check_writable(path: Path) -> None:
    """ValueError unless ``path`` is (or can be created as) a writable directory; leaves nothing
    behind (a probe file is created and removed: ``os.access`` passes for root, e.g. in /proc)."""
    from dpcompanion.core.validate import can_create_file_in

    p = Path(path)
    probe = p
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir() or not can_create_file_in(probe):
        why = "is not a directory" if probe.exists() and not probe.is_dir() else "is not writable"
        raise ValueError(f"results folder {p} cannot be written ({probe} {why}); "
                         "set DPCOMPANION_RESULTS to a writable directory")


# --- the canonical digest ------------------------------------------------------------

#: payload keys that hold a measured time (seconds): kept in the payload, which pages show,
#: but left out of :func:`digest`, so that the same config and seed give the same digest on
#: any machine and executor, and a revalidation (which compares digests) can succeed
TIME_KEYS = frozenset({"wall_s", "train_wall_s", "wall_time"})


def _canon(obj: Any) -> Any:
    """A JSON-able canonical form of a payload: tagged scalars, arrays by dtype/shape/bytes;
    dict entries named in :data:`TIME_KEYS` are left out."""
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biufc":
            raise ValueError(f"payload arrays must be numeric, got dtype {obj.dtype}")
        a = np.ascontiguousarray(obj, dtype=obj.dtype.newbyteorder("<"))
        return ["a", a.dtype.str, list(a.shape), hashlib.sha256(a.tobytes()).hexdigest()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, bool):
        return ["b", obj]
    if isinstance(obj, int):
        return ["i", str(obj)]
    if isinstance(obj, float):
        return ["f", repr(obj)]
    if isinstance(obj, str):
        return ["s", obj]
    if obj is None:
        return ["n"]
    if isinstance(obj, (list, tuple)):
        return ["l", [_canon(v) for v in obj]]
    if isinstance(obj, dict):
        bad = [k for k in obj if not isinstance(k, str)]
        if bad:
            raise ValueError(f"payload dict keys must be strings, got {bad[0]!r}")
        return ["d", [[k, _canon(obj[k])] for k in sorted(obj) if k not in TIME_KEYS]]
    raise ValueError(f"payload values must be numbers, strings, arrays, lists or dicts, got {type(obj).__name__}")


def digest(payload: Any) -> str:
    """sha256 of the canonical encoding of a numeric payload (not of provenance, times or paths).

    >>> digest({"b": [1, 2.0], "a": np.arange(3)}) == digest({"a": np.arange(3), "b": (1, 2.0)})
    True
    >>> digest({"x": 1}) == digest({"x": 1.0})
    False
    >>> digest({"x": 1, "wall_s": 3.2}) == digest({"x": 1, "wall_s": 0.7})   # times are not results
    True
    """
    enc = json.dumps(_canon(payload), separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(enc.encode()).hexdigest()


#: significant digits a config's floats keep in :func:`config_hash` (a grid from ``np.geomspace``
#: differs in its last bit between machines; issue 21: kappa 3.615183284464984 vs ...9845)
CONFIG_DIGITS = 12


def _round_floats(obj: Any) -> Any:
    """``obj`` with every float (and float array) rounded to :data:`CONFIG_DIGITS` significant digits."""
    if isinstance(obj, np.ndarray) and obj.dtype.kind == "f":
        return [_round_floats(float(v)) for v in obj.ravel()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return float(f"{obj:.{CONFIG_DIGITS}g}")
    if isinstance(obj, (list, tuple)):
        return [_round_floats(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _round_floats(v) for k, v in obj.items()}
    return obj


def config_hash(config: dict) -> str:
    """sha256 of the config (canonical encoding, as for :func:`digest`), its floats rounded to
    :data:`CONFIG_DIGITS` significant digits so that the last bit of a computed grid does not
    make a result stale.

    >>> config_hash({"kappa": [3.615183284464984]}) == config_hash({"kappa": [3.6151832844649845]})
    True
    >>> config_hash({"kappa": [3.6151832844]}) == config_hash({"kappa": [3.6151832845]})
    False
    """
    return digest(_round_floats(config))


# --- the code hash -------------------------------------------------------------------

def _module_file(name: str) -> Path | None:
    if name != "dpcompanion" and not name.startswith("dpcompanion."):
        return None
    parts = name.split(".")[1:]
    base_path = PKG.joinpath(*parts) if parts else PKG
    for cand in (base_path.with_suffix(".py"), base_path / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports_of(path: Path, module: str) -> set[str]:
    st = path.stat()
    return set(_imports_of_cached(path, module, st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=4096)
def _imports_of_cached(path: Path, module: str, mtime_ns: int, size: int) -> frozenset[str]:
    """The dpcompanion modules ``module`` (at ``path``) imports; cached per file version."""
    tree = ast.parse(path.read_text(), filename=str(path))
    pkg = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = pkg.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                mod = ".".join(anchor + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # `from pkg import module`
    # a submodule import also runs its parent packages' __init__
    for m in list(out):
        while "." in m:
            m = m.rpartition(".")[0]
            out.add(m)
    return frozenset(m for m in out if _module_file(m) is not None)


def _source_file(name: str) -> Path | None:
    """The source of a dpcompanion module, or of an already imported module outside the
    package (an experiment defined in a test, say)."""
    f = _module_file(name)
    if f is None and name in sys.modules and getattr(sys.modules[name], "__file__", None):
        f = Path(sys.modules[name].__file__)
    return f


def code_files(exp: base.Experiment) -> dict[str, str]:
    """``{module: sha256 of its source}`` for the experiment's module (the module defining its
    ``run_unit``, ``units`` and ``combine``), every dpcompanion module it imports
    (transitively, imports inside functions included), minus :data:`CODE_HASH_EXCLUDE`."""
    todo = [exp.run_unit.__module__, exp.combine.__module__, exp.units.__module__]
    seen: dict[str, str] = {}
    while todo:
        m = todo.pop()
        if m in seen or any(m == x or m.startswith(x + ".") for x in CODE_HASH_EXCLUDE):
            continue
        f = _source_file(m)
        if f is None:
            raise ValueError(f"experiment {exp.id}: cannot find the source of module {m}")
        seen[m] = hashlib.sha256(f.read_bytes()).hexdigest()
        todo.extend(_imports_of(f, m) - set(seen))
    return dict(sorted(seen.items()))


def code_hash(exp: base.Experiment) -> str:
    """sha256 over :func:`code_files` (module names and their source hashes) and
    :data:`RUN_POLICY` (how the store runs a unit, which can change its last bits)."""
    return hashlib.sha256(json.dumps({"files": code_files(exp), "run_policy": RUN_POLICY},
                                     sort_keys=True).encode()).hexdigest()


# --- payload files -------------------------------------------------------------------

def _split_arrays(obj: Any, arrays: dict[str, np.ndarray], path: str) -> Any:
    if isinstance(obj, np.ndarray):
        if obj.size > INLINE_MAX:
            key = f"a{len(arrays)}"
            arrays[key] = obj
            return {"__npz__": key}
        return {"__array__": obj.tolist(), "dtype": obj.dtype.str, "shape": list(obj.shape)}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {k: _split_arrays(v, arrays, f"{path}/{k}") for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_split_arrays(v, arrays, f"{path}/{i}") for i, v in enumerate(obj)]
    return obj


def _join_arrays(obj: Any, arrays) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"__npz__"}:
            return arrays[obj["__npz__"]]
        if "__array__" in obj:
            return np.asarray(obj["__array__"], dtype=np.dtype(obj["dtype"])).reshape(obj["shape"])
        return {k: _join_arrays(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_join_arrays(v, arrays) for v in obj]
    return obj


def _npz_keys(obj: Any) -> list[str]:
    """The ``arrays.npz`` entries a payload.json refers to."""
    if isinstance(obj, dict):
        if set(obj) == {"__npz__"}:
            return [str(obj["__npz__"])]
        return [k for v in obj.values() for k in _npz_keys(v)]
    if isinstance(obj, list):
        return [k for v in obj for k in _npz_keys(v)]
    return []


def _sorted_keys(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _sorted_keys(obj[k]) for k in sorted(obj)}
    if isinstance(obj, (list, tuple)):
        return [_sorted_keys(v) for v in obj]
    return obj


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


# --- the provenance seal -------------------------------------------------------------

#: the provenance field holding the seal: ``{field: sha256[:16] of its JSON value}`` for every
#: other field (see the module docstring)
SEAL = "provenance_seal"
#: the command that seals results stored before seals existed
SEAL_COMMAND = "python -m dpcompanion results --seal"


def _seal_of(provenance: dict) -> dict[str, str]:
    data = json.loads(json.dumps(provenance))  # exactly as stored (tuples as lists, keys as strings)
    return {k: hashlib.sha256(json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
                              .encode()).hexdigest()[:16]
            for k, v in sorted(data.items()) if k != SEAL}


def sealed(provenance: dict) -> dict:
    """``provenance`` with its seal (:data:`SEAL`) over every other field."""
    p = {k: v for k, v in provenance.items() if k != SEAL}
    return {**p, SEAL: _seal_of(p)}


def _seal_problem(provenance: dict) -> str:
    """'' when the seal matches every field, else ``provenance edited: <field>`` (or unsealed)."""
    seal = provenance.get(SEAL)
    if seal is None:
        return f"provenance not sealed (`{SEAL_COMMAND}` seals a result stored before seals)"
    if not isinstance(seal, dict):
        return f"provenance edited: {SEAL}"
    now = _seal_of(provenance)
    for k in sorted(set(now) | set(seal)):
        if k not in seal:
            return f"provenance edited: {k} (added)"
        if k not in now:
            return f"provenance edited: {k} (removed)"
        if now[k] != seal[k]:
            return f"provenance edited: {k}"
    return ""


# --- saving: never losing the previous result ----------------------------------------

#: a temporary folder (``.<mode>.tmp-*``, ``.<mode>.old-*``) or file (``.provenance.tmp-*``)
#: older than this, or whose writer (same host) is no longer running, is left over from a
#: killed save and is removed by the next save or listing
STALE_TEMP_S = 600
#: how often a save retries its swap when other saves of the same result keep getting in first
SWAP_ATTEMPTS = 20
_HOST = "".join(c for c in __import__("socket").gethostname() if c.isalnum())[:32] or "host"


def _checkpoint(step: str) -> None:
    """Called between the steps of a save (a no-op): tests stop a save here to simulate a kill."""


def _temp_name(target: Path, kind: str, suffix: str = "") -> Path:
    """``.<name>.<kind>-<host>-<pid>-<time ns>-<random><suffix>`` beside ``target``."""
    return target.parent / (f".{target.name}.{kind}-{_HOST}-{os.getpid()}-{time.time_ns()}-"
                            f"{os.urandom(4).hex()}{suffix}")


def _temp_is_stale(name: str, now_ns: int) -> bool:
    """Whether the temporary file/folder ``name`` (from :func:`_temp_name`) was left by a save
    that is over: its writer on this host has exited, or it is older than :data:`STALE_TEMP_S`."""
    parts = name.split("-")
    try:
        host, pid, t_ns = parts[-4], int(parts[-3]), int(parts[-2])
    except (IndexError, ValueError):
        return False  # not ours
    if now_ns - t_ns > STALE_TEMP_S * 1e9:
        return True
    if host == _HOST and pid != os.getpid() and os.name == "posix":  # (os.kill(pid, 0) kills on Windows)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
    return False


def _olds(target: Path) -> list[Path]:
    """The ``.<mode>.old-*`` folders beside ``target``, newest first."""
    def when(p: Path) -> int:
        try:
            return int(p.name.split("-")[-2])
        except (IndexError, ValueError):
            return 0
    try:
        found = [p for p in target.parent.glob(f".{target.name}.old-*") if p.is_dir()]
    except OSError:
        return []
    return sorted(found, key=when, reverse=True)


def _cleanup(target: Path) -> None:
    """Tidy what killed saves of ``target`` left (never raises): when ``target`` is missing
    because a save was killed between its two renames, the previous result (``.old-``) is put
    back; stale ``.tmp-``/``.old-`` folders and ``.provenance.tmp-`` files are removed."""
    try:
        parent = target.parent
        if not parent.is_dir():
            return
        now = time.time_ns()
        if not target.exists():
            for old in _olds(target):
                if _temp_is_stale(old.name, now) and (old / "provenance.json").is_file():
                    try:
                        _rename(old, target)
                    except OSError:
                        pass
                    break
        for p in parent.glob(f".{target.name}.*-*"):
            kind = p.name[len(target.name) + 2:].split("-")[0]
            if kind in ("tmp", "old") and _temp_is_stale(p.name, now):
                shutil.rmtree(p, ignore_errors=True)
        if target.is_dir():
            for p in target.glob(".provenance.json.tmp-*"):
                if _temp_is_stale(p.name.removesuffix(".json"), now):
                    p.unlink(missing_ok=True)
    except OSError:
        pass


def _rename(src: Path, dst: Path) -> None:
    os.rename(src, dst)


def _save(target: Path, payload: dict, provenance: dict) -> None:
    """Write ``payload`` and ``provenance`` into ``target`` so that no moment, and no kill,
    loses the previous result.

    The new result is written whole into a temporary folder (``.<mode>.tmp-…``, made with
    the umask's permissions), then swapped in by two renames: ``<mode>`` to ``.<mode>.old-…``
    and the temporary folder to ``<mode>``. A save killed between the two leaves the previous
    result in ``.<mode>.old-…``, which readers use while ``<mode>`` is missing and the next save
    or listing puts back (:func:`_cleanup`). Two saves racing at the swap: the one whose
    rename lands second finds ``<mode>`` taken and swaps again, so both succeed and the last
    one wins (after :data:`SWAP_ATTEMPTS` lost swaps a ValueError says so)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _cleanup(target)
    tmp = _temp_name(target, "tmp")
    os.mkdir(tmp)  # mode 0o777 less the umask (tempfile.mkdtemp would give 0o700)
    try:
        _checkpoint("tmp made")
        arrays: dict[str, np.ndarray] = {}
        _write_json(tmp / "payload.json", _split_arrays(payload, arrays, ""))
        _checkpoint("payload written")
        if arrays:
            np.savez_compressed(tmp / "arrays.npz", **arrays)
            _checkpoint("arrays written")
        _write_json(tmp / "provenance.json", provenance)
        _checkpoint("provenance written")
        _swap_in(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_in(tmp: Path, target: Path) -> None:
    for _ in range(SWAP_ATTEMPTS):
        old = None
        if target.exists():
            old = _temp_name(target, "old")
            try:
                _rename(target, old)
            except FileNotFoundError:  # another save moved it away first
                old = None
        _checkpoint("old moved away")
        try:
            _rename(tmp, target)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                # another save's result landed between our two renames: it is newer than the
                # one we moved away, which can go; swap again
                if old is not None:
                    shutil.rmtree(old, ignore_errors=True)
                continue
            if old is not None and not target.exists():
                _rename(old, target)
            raise
        _checkpoint("new in place")
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        _checkpoint("old removed")
        return
    raise ValueError(f"results folder {target}: {SWAP_ATTEMPTS} other saves replaced it while this one "
                     "was being saved; run the command again")


def _replace_provenance(target: Path, provenance: dict) -> None:
    """Replace ``target/provenance.json`` atomically (a temporary file renamed over it)."""
    tmp = _temp_name(target / "provenance.json", "tmp", ".json")
    try:
        _write_json(tmp, provenance)  # the umask's permissions (tempfile.mkstemp would give 0o600)
        os.replace(tmp, target / "provenance.json")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# --- results -------------------------------------------------------------------------

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

    @property
    def digest(self) -> str:
        return self.provenance.get("digest", "")

    @property
    def config(self) -> dict[str, Any]:
        return self.provenance.get("config", {})

    def summary(self) -> str:
        """One line of provenance for a page: mode, device, wall time, commit, created."""
        p = self.provenance
        if self.damaged:
            return f"{self.mode} result: damaged ({self.damaged}), not shown"
        dirty = "+dirty" if p.get("dirty") else ""
        reval = p.get("revalidated") or []
        rv = f", revalidated {reval[-1]['date']}" if reval else ""
        return (f"{self.mode} result: computed on {p.get('device')} in {p.get('wall_s', 0):.0f} s "
                f"({_count(p.get('runs'))} runs, {_count(p.get('run_steps'))} run-steps, {p.get('units')} units, "
                f"executor {p.get('executor')}) "
                f"at commit {p.get('commit')}{dirty}, created {p.get('created')}{rv}; "
                f"{'fresh' if self.fresh else 'stale: ' + self.stale_reason}")

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
                "seed": config.get("seed"), **self.unit_counts()}

    def unit_counts(self) -> dict[str, Any]:
        """``units_total``, ``units_computed`` (by this run) and ``units_reused`` (stored units,
        or the whole stored result when it was loaded)."""
        p = self.provenance
        total = p.get("units")
        if self.cached:
            return {"units_total": total, "units_computed": 0, "units_reused": total}
        return {"units_total": total, "units_computed": p.get("units_computed", total),
                "units_reused": p.get("units_reused", 0)}


def _count(n) -> str:
    """``12,345``; ``?`` for a count a result stored before it was recorded lacks."""
    return "?" if n is None else f"{int(n):,}"


class _Damaged(Exception):
    """A file of a stored result is missing, unreadable or inconsistent: ``<file>: <what>``."""


def _read_json_object(path: Path) -> dict:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise _Damaged(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _Damaged(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:  # json.JSONDecodeError (also a truncated file)
        raise _Damaged(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _Damaged(f"{path}: not a JSON object")
    return data


def _check_provenance(path: Path, prov: dict) -> None:
    for key, kind in (("digest", str), ("config", dict), ("config_hash", str), ("code_hash", str)):
        if not isinstance(prov.get(key), kind):
            raise _Damaged(f"{path}: field {key!r} missing or not a {kind.__name__}")
    seed = prov["config"].get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise _Damaged(f"{path}: config seed must be an integer in [0, 2**32), got {seed!r}")


#: what reading a damaged ``arrays.npz`` can raise (zip, zlib, npy header, I/O)
_NPZ_ERRORS = (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile, zlib.error)


def _read_files(d: Path) -> tuple[dict, dict]:
    """``(provenance, payload)`` of the result in folder ``d``, every file checked; raises
    :class:`_Damaged` (with the provenance read so far in ``args[1]``)."""
    prov: dict = {}
    try:
        prov = _read_json_object(d / "provenance.json")
        _check_provenance(d / "provenance.json", prov)
        raw = _read_json_object(d / "payload.json")
        keys = _npz_keys(raw)
        npz = d / "arrays.npz"
        arrays: dict[str, np.ndarray] = {}
        if keys and not npz.is_file():
            raise _Damaged(f"{npz}: missing ({d / 'payload.json'} refers to {keys[0]})")
        if keys:
            try:
                with np.load(npz, allow_pickle=False) as z:
                    absent = [k for k in keys if k not in z.files]
                    if absent:
                        raise _Damaged(f"{npz}: array {absent[0]} missing ({d / 'payload.json'} refers to it)")
                    arrays = {k: z[k] for k in keys}
            except _NPZ_ERRORS as exc:
                raise _Damaged(f"{npz}: cannot be read ({type(exc).__name__}: {exc})") from None
        try:
            payload = _join_arrays(raw, arrays)
            got = digest(payload)
        except (ValueError, TypeError, KeyError) as exc:
            raise _Damaged(f"{d / 'payload.json'}: malformed ({type(exc).__name__}: {exc})") from None
        if got != prov["digest"]:
            with_npz = " (with arrays.npz)" if keys else ""
            raise _Damaged(f"{d / 'payload.json'}: the payload{with_npz} does not match the digest recorded "
                           "in provenance.json")
        return prov, payload
    except _Damaged as exc:
        raise _Damaged(str(exc), prov) from None


def _read(exp: base.Experiment, mode: str, root: Path | None) -> StoredResult | None:
    """The stored result (its files checked: a damaged one comes back with ``damaged`` set),
    or None when nothing is stored. While ``<mode>/`` is missing because a save was killed
    between its renames, the previous result in ``.<mode>.old-…`` is read."""
    target = result_dir(exp.id, mode, root)
    for _ in range(3):  # a folder moved away by a concurrent save while being read: read again
        d = target if target.is_dir() else next(iter(_olds(target)), None)
        if d is None:
            return None
        try:
            prov, payload = _read_files(d)
        except _Damaged as exc:
            if d.is_dir():
                prov = exc.args[1] if len(exc.args) > 1 else {}
                return StoredResult(id=exp.id, mode=mode, payload={}, provenance=prov, fresh=False, cached=True,
                                    path=target, stale_reason=f"damaged: {exc.args[0]}", damaged=exc.args[0])
            continue
        return StoredResult(id=exp.id, mode=mode, payload=payload, provenance=prov, fresh=False, cached=True,
                            path=target)
    return None


def _staleness(exp: base.Experiment, res: StoredResult, config: dict | None) -> str:
    """Why ``res`` is not fresh ('' when it is)."""
    if res.damaged:
        return res.stale_reason
    p = res.provenance
    edited = _seal_problem(p)
    if edited:
        return edited
    if config is not None and p.get("config_hash") != config_hash(config):
        return "config changed"
    if p.get("code_hash") != code_hash(exp):
        old, now = p.get("code_files", {}), code_files(exp)
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
    fresh (default: the one it was computed with). Never raises for a damaged result."""
    exp = base.get(experiment_id)
    validate_mode(mode)
    res = _read(exp, mode, root)
    if res is None or res.damaged:
        return res
    stored_seed = res.provenance["config"].get("seed", 0)
    config = base.config_for(exp, mode, seed=stored_seed if seed is None else seed)
    why = _staleness(exp, res, config)
    return dataclasses.replace(res, fresh=not why, stale_reason=why)

# --- resumable sweeps: every unit stored as it finishes ------------------------------

#: the folder beside ``<mode>/`` that holds the finished units of a sweep in progress
UNITS_SUFFIX = ".units"


def units_dir(experiment_id: str, mode: str, root: Path | None = None) -> Path:
    """``results/<id>/<mode>.units/``: one ``<unit key>.json`` (and ``.npz`` for large arrays)
    per finished unit of a sweep not yet assembled."""
    return (root or results_root()) / experiment_id / f"{mode}{UNITS_SUFFIX}"


def unit_key(exp_id: str, mode: str, unit: dict, seed: int, device: str) -> str:
    """The file name of a unit's result: sha256 (first 32 hex digits) over the experiment id,
    mode, the unit's own dict (canonical), the seed and the device. The code hash is recorded
    inside the file (a unit of older code is recomputed, and the progress says so)."""
    return digest({"id": exp_id, "mode": mode, "unit": unit, "seed": int(seed), "device": device})[:32]


def _enc(obj: Any, arrays: dict[str, np.ndarray]) -> Any:
    """Exact JSON form of a unit result: arrays (large ones to the .npz), numpy scalars with
    their dtype and tuples are kept as such, so that ``combine`` sees the very same values."""
    if isinstance(obj, np.ndarray):
        if obj.size > INLINE_MAX:
            key = f"a{len(arrays)}"
            arrays[key] = obj
            return {"__npz__": key}
        return {"__array__": obj.tolist(), "dtype": obj.dtype.str, "shape": list(obj.shape)}
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
        if set(obj) == {"__npz__"}:
            return np.asarray(arrays[obj["__npz__"]])
        if "__array__" in obj:
            return np.asarray(obj["__array__"], dtype=np.dtype(obj["dtype"])).reshape(obj["shape"])
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


def _atomic_bytes(path: Path, write: Callable[[Path], None]) -> None:
    """Write ``path`` through a temporary file renamed over it (a kill leaves no half file)."""
    tmp = _temp_name(path, "tmp", path.suffix)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


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
        _atomic_bytes(folder / f"{key}.npz", npz)
    rec = {"key": key, "unit": unit, "seed": int(seed), "device": device, "code_hash": code, "result": enc,
           "digest": digest(result), "runs": int(counts.get("runs", 0)), "run_steps": int(counts.get("run_steps", 0)),
           "wall_s": round(float(counts.get("wall_s", 0.0)), 3),
           "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "created_ns": time.time_ns()}
    _atomic_bytes(folder / f"{key}.json", lambda p: p.write_text(json.dumps(rec, sort_keys=True) + "\n"))


def _load_unit(folder: Path, key: str) -> dict | None:
    """A stored unit's record with its decoded ``result``; None when absent or damaged
    (unreadable, or its result not matching its digest: it is recomputed)."""
    f = folder / f"{key}.json"
    try:
        rec = json.loads(f.read_text())
        arrays = {}
        if (folder / f"{key}.npz").is_file():
            with np.load(folder / f"{key}.npz", allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        rec["result"] = _dec(rec["result"], arrays)
        if digest(rec["result"]) != rec["digest"]:
            return None
        return rec
    except (OSError, ValueError, KeyError, TypeError, *_NPZ_ERRORS):
        return None


def sweep_progress(experiment_id: str, mode: str, root: Path | None = None) -> dict | None:
    """Progress of a sweep whose finished units are stored but not yet assembled: ``units_done``
    (units of the sweep, stored by the current code), ``units_total``, ``units_old_code``
    (stored by older code, or for another seed, device or config: not reused) and
    ``estimate_left_s`` (mean wall time of the finished units times the units left); None when
    no unit is stored. The sweep is the seed and device of the newest unit file."""
    exp = base.get(experiment_id)
    folder = units_dir(exp.id, mode, root)
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        return None
    recs = []
    for f in files:
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict):
            recs.append(rec)
    recs.sort(key=lambda r: int(r.get("created_ns", 0)) if isinstance(r.get("created_ns"), int) else 0)
    newest = recs[-1] if recs else {}
    seed, device = int(newest.get("seed", 0)), str(newest.get("device", "cpu"))
    config = base.config_for(exp, mode, seed=seed)
    units = exp.units(config)
    total = len(units)
    code = code_hash(exp)
    wanted = {unit_key(exp.id, mode, u, seed, device) for u in units} & {f.stem for f in files}
    current = [r for r in recs if r.get("code_hash") == code and r.get("key") in wanted]
    done = len(current)
    walls = [float(r.get("wall_s", 0.0)) for r in current]
    left = total - done
    est = round(sum(walls) / len(walls) * left, 1) if walls else None
    return {"id": exp.id, "mode": mode, "seed": seed, "device": device, "units_done": done, "units_total": total,
            "units_old_code": len(recs) - len(current), "estimate_left_s": est, "path": str(folder)}


def list_partial(root: Path | None = None) -> list[dict]:
    """:func:`sweep_progress` of every experiment and mode with stored units."""
    out = []
    for exp_id in base.all_experiments():
        for mode in base.MODES:
            p = sweep_progress(exp_id, mode, root)
            if p is not None:
                out.append(p)
    return out


# --- executors -----------------------------------------------------------------------

def _run_one(run_unit: Callable[[dict, str], dict], unit: dict, device: str) -> tuple[dict, dict]:
    """Run one unit single-threaded on the CPU side, whatever the executor: torch at one
    intra-op thread and numpy's BLAS/LAPACK at one thread, restored afterwards.

    Why: a reduction split over two threads rounds differently from one over a single
    thread, so a unit run with torch's default threads in this process and the same unit in
    a single-threaded Dask worker gave different digests (measured on H-F-INFL quick, N =
    1000; tiny sizes stay below torch's parallel grain and hide it). Fixing the thread count
    makes a unit's numbers depend on its config only. Parallelism comes from running units
    side by side (``--executor dask --workers N``); on a loaded 2-core machine one thread
    per unit was also by far the faster choice (see the report of issue 8).

    Returns ``(unit result, counts)``: ``counts`` are the runs and run-steps the unit
    trained, from the trainer engine's tally (``engine.tally``), for the provenance."""
    import torch
    from threadpoolctl import threadpool_limits

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


def _run_in_worker(run_unit: Callable[[dict, str], dict], unit: dict, device: str) -> tuple[dict, dict]:
    """Run one unit in a Dask worker process (single-threaded, as every unit: :func:`_run_one`;
    N workers fill N cores)."""
    return _run_one(run_unit, unit, device)


class LocalExecutor:
    """Every unit in this process, in order."""

    name = "local"

    def map(self, run_unit, units: Sequence[dict], device: str, on_done=None) -> list[tuple[dict, dict]]:
        """``on_done(i, (result, counts))`` is called as each unit finishes (the store saves it)."""
        out = []
        for i, u in enumerate(units):
            out.append(_run_one(run_unit, u, device))
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
        import logging

        from distributed import Client, LocalCluster

        self.cluster = None
        if scheduler is not None:
            self.client = _connect(scheduler)
            self.where = scheduler
        else:
            n = workers or os.cpu_count() or 1
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                        dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
            self.where = f"LocalCluster({n} workers x 1 thread)"

    def map(self, run_unit, units: Sequence[dict], device: str, on_done=None) -> list[tuple[dict, dict]]:
        """``on_done(i, (result, counts))`` is called in this process as each unit finishes,
        in the order they finish (the store saves it here, not on the worker). A failing unit
        does not stop the others: every unit that succeeds is handed to ``on_done`` (so a
        rerun reuses it), then the first failure is raised."""
        from distributed import as_completed

        futures = self.client.map(_run_in_worker, [run_unit] * len(units), list(units),
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
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def describe(self) -> str:
        return f"dask {self.where}"


def _connect(scheduler: str):
    """A Dask ``Client`` of the running scheduler at ``scheduler``, or ValueError within
    :data:`SCHEDULER_TIMEOUT_S` seconds. The connection is attempted in a thread with a hard
    deadline: Dask's own ``timeout`` does not bound a peer that accepts the connection and
    never answers, and a peer that answers with other bytes makes Dask read a length prefix
    and try to allocate exabytes (issue 19); both become one line here."""
    import logging
    import socket
    import threading
    import time
    from urllib.parse import urlsplit

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
    from urllib.parse import urlsplit

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


# --- computing -----------------------------------------------------------------------

def _versions() -> dict[str, str]:
    from importlib import metadata

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
    folder = units_dir(exp.id, mode, root)
    code = code_hash(exp)
    keys = [unit_key(exp.id, mode, u, seed, device) for u in units]
    done: list = [None] * len(units)
    old_code = 0
    if folder.is_dir():  # temporary files of unit saves killed mid-write
        now = time.time_ns()
        for p in folder.glob(".*.tmp-*"):
            if _temp_is_stale(p.name, now):
                p.unlink(missing_ok=True)
    for i, k in enumerate(keys):
        rec = _load_unit(folder, k) if folder.is_dir() else None
        if rec is None:
            continue
        if rec.get("code_hash") != code:
            old_code += 1
            continue
        done[i] = (rec["result"], {"runs": rec.get("runs", 0), "run_steps": rec.get("run_steps", 0),
                                   "wall_s": rec.get("wall_s", 0.0)})
    todo = [i for i in range(len(units)) if done[i] is None]
    reused = len(units) - len(todo)
    if progress is not None and (reused or old_code):
        progress(f"{exp.id} {mode}: resuming, {reused}/{len(units)} units stored"
                 + (f"; {old_code} stored by older code are recomputed" if old_code else ""))

    def on_done(j: int, out: tuple[dict, dict]) -> None:
        i = todo[j]
        save_unit(folder, keys[i], units[i], out[0], out[1], code=code, seed=seed, device=device)

    t0 = time.perf_counter()
    if todo:
        fresh = executor.map(exp.run_unit, [units[i] for i in todo], device, on_done=on_done)
        for j, i in enumerate(todo):
            done[i] = fresh[j]
    payload = _sorted_keys(exp.combine(config, [r for r, _ in done]))  # the order a loaded payload has
    wall = time.perf_counter() - t0
    return payload, {"wall_s": round(wall, 3), "units": len(units),
                     "units_computed": len(todo), "units_reused": reused,
                     "units_wall_s": round(sum(float(c.get("wall_s", 0.0)) for _, c in done), 3),
                     "runs": int(sum(c["runs"] for _, c in done)), "run_steps": int(sum(c["run_steps"] for _, c in done))}


def compute(experiment_id: str, *, mode: str, seed: int = 0, device: str = "cpu", executor=None,
            root: Path | None = None, progress: Callable[[str], None] | None = None) -> StoredResult:
    """Compute ``experiment_id`` in ``mode`` (no cache look-up) and save it atomically.

    A full result also records the quick-mode digest of the same code and seed (computed if
    no fresh quick result is stored) for :func:`revalidate`."""
    exp = base.get(experiment_id)
    validate_mode(mode)
    validate_seed(seed)
    resolved = resolve_device(device)
    target = result_dir(exp.id, mode, root)
    check_writable(target)
    config = base.config_for(exp, mode, seed=seed)
    own = executor is None
    ex = LocalExecutor() if own else executor
    try:
        quick = None
        if mode == "full":
            quick = load_or_compute(exp.id, mode="quick", seed=seed, device=resolved, executor=ex, root=root,
                                    progress=progress)
        payload, stats = _compute_payload(exp, config, ex, resolved, root, progress)
    finally:
        if own:
            ex.close()
    commit, dirty = git_state()
    prov = {
        "id": exp.id, "mode": mode, "commit": commit, "dirty": dirty, "config": config,
        "config_hash": config_hash(config), "code_hash": code_hash(exp), "code_files": code_files(exp),
        "scale": scale_of(exp.id, config),
        "device": resolved, "versions": _versions(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **stats, "executor": ex.describe(), "digest": digest(payload), "revalidated": [],
    }
    if quick is not None:
        prov["quick_digest"] = quick.digest
        prov["quick_device"] = quick.provenance.get("device")
    prov = sealed(prov)
    _save(target, payload, prov)
    # the result is complete and saved: its units are no longer needed (keeps the repository small)
    shutil.rmtree(units_dir(exp.id, mode, root), ignore_errors=True)
    return StoredResult(id=exp.id, mode=mode, payload=payload, provenance=prov, fresh=True, cached=False,
                        path=target)


def load_or_compute(experiment_id: str, *, mode: str, seed: int = 0, device: str = "cpu",
                    executor: Any = None, recompute: bool = False, root: Path | None = None,
                    progress: Callable[[str], None] | None = None) -> StoredResult:
    """The stored result when fresh (same config, seed included, and same code), else computed
    with ``executor`` (default: in-process) and saved. ``recompute=True`` always computes."""
    exp = base.get(experiment_id)
    validate_mode(mode)
    validate_seed(seed)
    if not recompute:
        res = load(exp.id, mode=mode, seed=seed, root=root)
        if res is not None and res.fresh:
            return res
    return compute(exp.id, mode=mode, seed=seed, device=device, executor=executor, root=root, progress=progress)


def fresh_full(experiment_id: str) -> StoredResult | None:
    """The stored full-mode result of ``experiment_id`` when it is fresh, else None: a stale
    full result is never shown as current (:func:`full_absent_note` says why it is not)."""
    full = load(experiment_id, mode="full")
    return full if full is not None and full.fresh else None


def full_absent_note(experiment_id: str) -> str:
    """One sentence for a page without a fresh full result: none stored, or stale and why,
    with the command that computes it."""
    full = load(experiment_id, mode="full")
    why = ("No full-mode result is stored yet" if full is None
           else f"The stored full-mode result is stale ({full.stale_reason}) and is not shown")
    part = sweep_progress(experiment_id, "full")
    if part is not None:
        why += (f"; a full sweep is partly done ({part['units_done']}/{part['units_total']} units stored"
                + (f", about {part['estimate_left_s']} s of compute left" if part["estimate_left_s"] is not None else "")
                + ") and is not shown until it is complete")
    return f"{why}: `python -m dpcompanion experiment {experiment_id} --mode full` computes it."


def result_to_show(experiment_id: str, *, mode: str, seed: int = 0, device: str = "cpu") -> StoredResult:
    """The result a page shows for ``experiment_id``: the stored full-mode result when it is
    fresh (the committed paper-scale run), else this build's result of ``mode`` (loaded when
    fresh, else computed). A stale full result is never shown as current."""
    full = fresh_full(experiment_id) if mode != "full" else None
    return full or load_or_compute(experiment_id, mode=mode, seed=seed, device=device)


def revalidate(experiment_id: str, *, device: str = "cpu", executor=None, root: Path | None = None) -> dict:
    """Re-check a stale full result by its behavioural fingerprint (see the module docstring).

    Returns ``{"id", "status", "detail"}``; status is ``fresh`` (nothing to do), ``revalidated``
    (the quick digest of the current code equals the recorded one: the full result is marked
    fresh for the current code hash), ``stale`` (digests differ, or the config changed, or no
    fingerprint was recorded) or ``missing`` (no full result)."""
    exp = base.get(experiment_id)
    res = load(exp.id, mode="full", root=root)
    if res is None:
        return {"id": exp.id, "status": "missing", "detail": "no full result stored"}
    if res.fresh:
        return {"id": exp.id, "status": "fresh", "detail": "config and code unchanged"}
    if not res.stale_reason.startswith("code changed"):
        return {"id": exp.id, "status": "stale", "detail": res.stale_reason + "; revalidation covers code changes only"}
    p = res.provenance
    if not p.get("quick_digest"):
        return {"id": exp.id, "status": "stale", "detail": "no quick-mode fingerprint recorded; recompute"}
    seed = int(p.get("config", {}).get("seed", 0))
    quick = load_or_compute(exp.id, mode="quick", seed=seed, device=p.get("quick_device") or device,
                            executor=executor, root=root)
    if quick.digest != p["quick_digest"]:
        return {"id": exp.id, "status": "stale",
                "detail": f"quick digest changed ({p['quick_digest'][:12]} -> {quick.digest[:12]}): the code change "
                          "changes numbers; recompute the full result"}
    new_hash = code_hash(exp)
    event = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
             "from_code_hash": p.get("code_hash"), "to_code_hash": new_hash, "quick_digest": quick.digest,
             "commit": git_state()[0]}
    check_writable(res.path)
    # the seal was intact (an edited provenance is stale for that reason, not for code, and
    # never gets here): re-seal over the new code hash and the appended event
    prov = sealed({**p, "code_hash": new_hash, "code_files": code_files(exp),
                   "revalidated": list(p.get("revalidated") or []) + [event]})
    _replace_provenance(res.path, prov)
    return {"id": exp.id, "status": "revalidated",
            "detail": f"quick digest {quick.digest[:12]} unchanged; full result fresh for code {new_hash[:12]}"}


def list_results(root: Path | None = None) -> list[StoredResult]:
    """Every stored result of every known experiment (fresh, stale or damaged), by id then
    mode; what killed saves left behind is tidied first (:func:`_cleanup`)."""
    out = []
    for exp_id in base.all_experiments():
        for mode in base.MODES:
            _cleanup(result_dir(exp_id, mode, root))
            r = load(exp_id, mode=mode, root=root)
            if r is not None:
                out.append(r)
    return out


def seal_unsealed(root: Path | None = None) -> list[dict]:
    """Seal the provenance of every stored result that has no seal (stored before seals
    existed), without recomputing: a one-off migration (``results --seal``). Only an intact
    result is sealed (its files read and its payload matching its digest); a damaged one or
    one whose seal is broken is left as it is. Returns ``{"id", "mode", "status", "detail"}``
    per result, status ``sealed``, ``already sealed`` or ``refused``."""
    out = []
    for exp_id in base.all_experiments():
        for mode in base.MODES:
            res = _read(base.get(exp_id), mode, root)
            if res is None:
                continue
            row = {"id": exp_id, "mode": mode}
            problem = res.stale_reason if res.damaged else _seal_problem(res.provenance)
            if not problem:
                out.append({**row, "status": "already sealed", "detail": ""})
            elif res.damaged or SEAL in res.provenance:
                out.append({**row, "status": "refused", "detail": problem})
            elif not result_dir(exp_id, mode, root).is_dir():
                out.append({**row, "status": "refused", "detail": "an interrupted save is being recovered; list again"})
            else:
                _replace_provenance(res.path, sealed(res.provenance))
                out.append({**row, "status": "sealed", "detail": f"digest {res.digest[:12]}"})
    return out
