"""Numeric revalidation: a full or paper result records its quick-mode numbers (``quick_numbers``:
:func:`pack`, exact and compact); when a code change moves the quick digest (a reordered float
sum moves every last bit), the current code's quick numbers are compared with them (:func:`compare`).

**The rule.** Two payloads agree when they have the same structure (keys, list lengths, array
shapes and dtypes, types), every non-float value is exactly equal, and every float ``x`` (new)
against ``y`` (recorded) satisfies ``|x - y| <= max(rtol * max(|x|, |y|), atol)`` (NaN agrees only
with NaN, an infinity only with itself); times (:data:`.identity.TIME_KEYS`) are left out. The
tolerance (:func:`tolerance`) is the experiment's entry of :data:`TOLERANCES`, else by dtype:
float32 :data:`FLOAT32` (rtol 1e-5, atol 1e-6), float64 :data:`FLOAT64` (rtol 1e-10, atol 1e-12).
The largest deviation reported is the number using the largest share of its allowance.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import zlib
from typing import Any, Iterator

import numpy as np

from dpcompanion.experiments.store import files, identity
from dpcompanion.experiments.store.identity import TIME_KEYS, digest



@dataclasses.dataclass(frozen=True)
class Tolerance:
    """``|x - y| <= max(rtol * max(|x|, |y|), atol)``, and why these numbers."""

    rtol: float
    atol: float
    reason: str


#: numbers stored as float32: a reordered float32 sum moves the last of its ~7 digits
FLOAT32 = Tolerance(rtol=1e-5, atol=1e-6, reason="float32 numbers (about 7 significant digits)")
#: numbers stored as float64 (and Python floats) computed in float64: theory, exact formulas
FLOAT64 = Tolerance(rtol=1e-10, atol=1e-12, reason="float64 numbers (about 16 significant digits)")

_TORCH_FLOAT32 = ("trains with torch in float32 (dpcompanion.training.trainers) and stores float64 copies of "
                  "those numbers: a reordered float32 sum moves them in the 7th digit")

#: per-experiment tolerances (experiment id -> :class:`Tolerance`, with its reason); an
#: experiment not listed gets the dtype rule (:func:`tolerance`)
TOLERANCES: dict[str, Tolerance] = {
    exp_id: Tolerance(rtol=FLOAT32.rtol, atol=FLOAT32.atol, reason=_TORCH_FLOAT32)
    for exp_id in ("audit", "h-f-curv", "h-f-eff", "h-f-eff-exact", "h-f-infl", "h-f-infl-extra", "h-f-mom",
                   "h-f-scale", "h-x-eer", "h-x-eer-breakdown", "w-f1", "w-f4", "w-ladder", "w-t1245", "w-t36")
}


def tolerance(experiment_id: str, value: Any) -> Tolerance:
    """The tolerance a float ``value`` of ``experiment_id``'s payload is compared with: the
    experiment's entry of :data:`TOLERANCES`, else :data:`FLOAT32` for float32 (and float16)
    numbers, :data:`FLOAT64` for the others."""
    if experiment_id in TOLERANCES:
        return TOLERANCES[experiment_id]
    dt = getattr(value, "dtype", None)
    return FLOAT32 if dt is not None and np.dtype(dt).kind in "fc" and np.dtype(dt).itemsize <= 4 else FLOAT64


# --- recording the numbers -----------------------------------------------------------

#: the key marking a packed array (:func:`pack` refuses a payload key equal to it)
ARRAY_TAG = "__nd__"
#: the key marking a packed list of Python floats (longer than :data:`FLOAT_LIST_MIN`)
FLOATS_TAG = "__floats__"
FLOAT_LIST_MIN = 8


def _blob(a: np.ndarray) -> str:
    return base64.b64encode(zlib.compress(np.ascontiguousarray(a).tobytes(), 9)).decode("ascii")


def pack(payload: Any) -> Any:
    """A JSON-able, exact and compact form of a payload's numbers: arrays as the base64 of their
    zlib-compressed little-endian bytes with dtype and shape, lists of more than
    :data:`FLOAT_LIST_MIN` Python floats likewise (as float64, back as a list of floats), numpy
    scalars as Python numbers (their value is exact in JSON: floats are written by ``repr``),
    tuples as lists, entries of
    :data:`.identity.TIME_KEYS` left out. ``digest(unpack(pack(p))) == digest(p)``.

    >>> p = {"x": np.arange(3.0), "n": 2, "wall_s": 1.5}
    >>> digest(unpack(pack(p))) == digest(p) and "wall_s" not in pack(p)
    True
    """
    if isinstance(payload, np.ndarray):
        a = np.ascontiguousarray(payload, dtype=payload.dtype.newbyteorder("<"))
        return {ARRAY_TAG: _blob(a), "dtype": a.dtype.str, "shape": list(a.shape)}
    if isinstance(payload, np.generic):
        return payload.item()
    if isinstance(payload, dict):
        bad = [k for k in payload if not isinstance(k, str) or k in (ARRAY_TAG, FLOATS_TAG)]
        if bad:
            raise ValueError(f"payload dict keys must be strings other than {ARRAY_TAG!r} and {FLOATS_TAG!r}, "
                             f"got {bad[0]!r}")
        return {k: pack(v) for k, v in sorted(payload.items()) if k not in TIME_KEYS}
    if isinstance(payload, (list, tuple)):
        if len(payload) > FLOAT_LIST_MIN and all(type(v) is float for v in payload):
            return {FLOATS_TAG: _blob(np.asarray(payload, dtype="<f8"))}
        return [pack(v) for v in payload]
    return payload


def _unblob(text: Any) -> bytes:
    """The bytes of a :func:`_blob`, at most :data:`.files.MAX_ARRAY_BYTES` of them (a recorded
    blob is a zlib stream: a few kB of it could otherwise inflate to gigabytes); ValueError beyond."""
    cap = files.MAX_ARRAY_BYTES
    d = zlib.decompressobj()
    raw = d.decompress(base64.b64decode(text), cap)
    if d.unconsumed_tail or not d.eof:
        raise ValueError(f"a recorded array inflates to more than {cap:,} bytes (or is truncated)")
    return raw


def unpack(packed: Any) -> Any:
    """The payload :func:`pack` recorded (arrays back as numpy arrays of their dtype and shape;
    each at most :data:`.files.MAX_ARRAY_BYTES`, ValueError beyond)."""
    if isinstance(packed, dict):
        if FLOATS_TAG in packed:
            raw = _unblob(packed[FLOATS_TAG])
            return [float(v) for v in np.frombuffer(raw, dtype="<f8")]
        if ARRAY_TAG in packed:
            dt = np.dtype(str(packed["dtype"]))
            if dt.hasobject:
                raise ValueError("a recorded array of object dtype")
            raw = _unblob(packed[ARRAY_TAG])
            return np.frombuffer(raw, dtype=dt).reshape([int(n) for n in packed["shape"]]).copy()
        return {k: unpack(v) for k, v in packed.items()}
    if isinstance(packed, list):
        return [unpack(v) for v in packed]
    return packed


# --- comparing them ------------------------------------------------------------------

def _floats(new: Any, old: Any, path: str, tol) -> Iterator[tuple[str, float, float, float, str, bool]]:
    """``(path, |x - y|, relative, share of the allowance, '', False)`` for every float, or
    ``(path, inf, inf, inf, why, structure)`` for the first difference of structure (``structure``
    True: keys, types, list lengths, array shapes or dtypes) or of an exact value (False)."""
    if isinstance(new, dict) or isinstance(old, dict):
        if not (isinstance(new, dict) and isinstance(old, dict)):
            yield path or "/", math.inf, math.inf, math.inf, "a dict on one side only", True
            return
        a, b = set(new) - TIME_KEYS, set(old) - TIME_KEYS
        if a != b:
            extra = sorted(a - b)
            gone = sorted(b - a)
            what = (f"new key {extra[0]!r}" if extra else "") + (", " if extra and gone else "") + \
                   (f"key {gone[0]!r} gone" if gone else "")
            yield path or "/", math.inf, math.inf, math.inf, f"keys differ ({what})", True
            return
        for k in sorted(a):
            yield from _floats(new[k], old[k], f"{path}/{k}", tol)
        return
    if isinstance(new, np.ndarray) or isinstance(old, np.ndarray):
        if not (isinstance(new, np.ndarray) and isinstance(old, np.ndarray)):
            yield path, math.inf, math.inf, math.inf, "an array on one side only", True
            return
        if new.shape != old.shape or new.dtype != old.dtype:
            yield path, math.inf, math.inf, math.inf, (f"array {old.dtype.str}{list(old.shape)} is now "
                                                        f"{new.dtype.str}{list(new.shape)}"), True
            return
        if new.dtype.kind not in "fc":
            if not np.array_equal(new, old):
                yield path, math.inf, math.inf, math.inf, "integer values differ", False
            return
        if new.size == 0:
            return
        t = tol(new)
        x, y = new.astype(np.complex128 if new.dtype.kind == "c" else np.float64).ravel(), \
            old.astype(np.complex128 if old.dtype.kind == "c" else np.float64).ravel()
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(x - y)
            scale = np.maximum(np.abs(x), np.abs(y))
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            d = np.where(same, 0.0, np.where(np.isnan(d), math.inf, d))
            allowed = np.maximum(t.rtol * scale, t.atol)
            share = np.where(same, 0.0, np.where(np.isfinite(allowed), d / allowed, math.inf))
            rel = np.where(same, 0.0, np.where(scale > 0, d / np.where(scale > 0, scale, 1.0), math.inf))
        i = int(np.argmax(share))
        yield f"{path}[{i}]", float(d[i]), float(rel[i]), float(share[i]), "", False
        return
    if isinstance(new, (list, tuple)) or isinstance(old, (list, tuple)):
        if not (isinstance(new, (list, tuple)) and isinstance(old, (list, tuple))) or len(new) != len(old):
            yield path, math.inf, math.inf, math.inf, "list length or type differs", True
            return
        for i, (v, w) in enumerate(zip(new, old)):
            yield from _floats(v, w, f"{path}/{i}", tol)
        return
    if type(new) is float and type(old) is float:
        t = tol(new)
        x, y = float(new), float(old)
        if x == y or (math.isnan(x) and math.isnan(y)):
            yield path, 0.0, 0.0, 0.0, "", False
            return
        d = abs(x - y) if math.isfinite(x) and math.isfinite(y) else math.inf
        scale = max(abs(x), abs(y))
        allowed = max(t.rtol * scale, t.atol)
        yield path, d, (d / scale if scale > 0 else math.inf), (d / allowed if math.isfinite(allowed) else math.inf), "", False
        return
    if type(new) is not type(old) or new != old:
        yield path, math.inf, math.inf, math.inf, f"{old!r} is now {new!r}", type(new) is not type(old)


def compare(new: Any, recorded: Any, *, experiment_id: str) -> dict:
    """Compare a quick payload ``new`` with the ``recorded`` one by the rule of the module
    docstring. Returns ``{"ok", "key", "abs", "rel", "share", "rtol", "atol", "why", "structure"}``: the
    number using the largest share of its allowance (``key`` a ``/``-path, ``abs`` and ``rel``
    its deviations, ``share`` > 1 beyond tolerance), or, for a difference of structure or of an
    exact value, ``ok`` False with ``why`` saying what differs (and the deviations ``inf``).
    ``rtol``/``atol``: the tolerance of that number. ``structure``: True when the payloads differ
    in structure (keys, types, list lengths, array shapes or dtypes) rather than in a value.

    >>> compare({"x": 1.0 + 1e-12}, {"x": 1.0}, experiment_id="toy")["ok"]
    True
    >>> r = compare({"x": 1.0, "n": 3}, {"x": 1.0, "n": 4}, experiment_id="toy"); (r["ok"], r["key"])
    (False, '/n')
    """
    worst = {"key": "/", "abs": 0.0, "rel": 0.0, "share": 0.0, "why": "", "structure": False}
    seen = []

    def tol(v):
        t = tolerance(experiment_id, v)
        seen.append(t)
        return t

    # both sides in the recorded form (numpy scalars as Python numbers, tuples as lists, times
    # left out), as the digest sees them: a payload computed now and one read back compare alike
    for path, d, rel, share, why, structure in _floats(unpack(pack(new)), unpack(pack(recorded)), "", tol):
        if why:
            worst = {"key": path, "abs": d, "rel": rel, "share": share, "why": why, "structure": structure}
            break
        if share > worst["share"] or (worst["key"] == "/" and d > worst["abs"]):
            worst = {"key": path, "abs": d, "rel": rel, "share": share, "why": "", "structure": False}
    t = seen[-1] if seen else tolerance(experiment_id, 0.0)
    return {"ok": not worst["why"] and worst["share"] <= 1.0, **worst, "rtol": t.rtol, "atol": t.atol}


def describe(check: dict) -> str:
    """One phrase for a :func:`compare` result: ``largest deviation 3.1e-08 (relative 2.4e-08) at
    /curve[12], 0.0024 of the tolerance`` or what differs."""
    if check["why"]:
        return f"{check['why']} at {check['key']}"
    if check["share"] == 0.0:
        return "every number identical"
    return (f"largest deviation {check['abs']:.3g} (relative {check['rel']:.3g}) at {check['key']}, "
            f"{check['share']:.3g} of the tolerance (rtol {check['rtol']:g}, atol {check['atol']:g})")


def record(payload: Any, *, cpu: str, commit: str) -> dict:
    """The ``quick_numbers`` provenance entry of a quick payload: ``{"digest", "cpu", "commit",
    "numbers"}`` (the digest of the numbers, the CPU and commit that computed them)."""
    return {"digest": digest(payload), "cpu": cpu, "commit": commit, "numbers": pack(payload)}


def recorded_numbers(entry: Any) -> tuple[Any, str]:
    """``(payload, '')`` from a ``quick_numbers`` entry, or ``(None, why)`` when there is none or
    it does not unpack to its own digest."""
    if not isinstance(entry, dict) or "numbers" not in entry:
        return None, "no quick numbers recorded"
    try:
        numbers = unpack(entry["numbers"])
        ok = digest(numbers) == entry.get("digest")
    except (ValueError, TypeError, KeyError, zlib.error, base64.binascii.Error) as exc:
        return None, f"the recorded quick numbers do not read back ({exc})"
    if not ok:
        return None, "the recorded quick numbers do not match their digest"
    return numbers, ""
