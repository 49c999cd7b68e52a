"""The one home of input validation for every layer. Each validator takes the parameter's
name as the papers spell it and the value, returns it converted (``float``, ``int`` or a
float64 array) or raises ``ValueError`` in one line naming the parameter, the value and what
is allowed (the command line reports the same message)::

    >>> positive("R", 0.5)
    0.5
    >>> positive("R", -1)
    Traceback (most recent call last):
    ...
    ValueError: R must be a finite number > 0, got -1
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "number",
    "positive",
    "unit_interval",
    "delta",
    "sampling_rate",
    "integer",
    "steps",
    "kappa",
    "positive_array",
    "noise_multipliers",
    "choice",
    "class_labels",
    "features",
    "path_lengths",
    "can_create_file_in",
    "writable_folder",
    "MAX_STEPS",
    "MIN_SAMPLING_RATE",
    "MIN_DELTA",
]

#: Longest schedule or training run built in memory (one float64 per step per record).
MAX_STEPS: int = 10_000_000

#: Smallest Poisson sampling rate accepted: below it a step samples less than one example on
#: average from any data set of up to 10^9 examples, and the accounting (p^2/sigma^2, R/p^2)
#: leaves the range where float64 is accurate.
MIN_SAMPLING_RATE: float = 1e-9


def _as_float(name: str, value: Any, allowed: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be {allowed}, got {value!r}"[:300]) from None


def number(name: str, value: Any, *, lo: float = -math.inf, hi: float = math.inf, lo_open: bool = True,
           hi_open: bool = True, allowed: str | None = None) -> float:
    """A finite float in the interval from ``lo`` to ``hi`` (open or closed ends).

    >>> number("rate", -0.5)
    -0.5
    >>> number("beta", 1.0, lo=0.0, hi=1.0, lo_open=False)
    Traceback (most recent call last):
    ...
    ValueError: beta must be in [0, 1), got 1.0
    """
    if allowed is None:
        if lo == -math.inf and hi == math.inf:
            allowed = "a finite number"
        elif hi == math.inf:
            allowed = f"a finite number {'>' if lo_open else '>='} {lo:g}"
        elif lo == -math.inf:
            allowed = f"a finite number {'<' if hi_open else '<='} {hi:g}"
        else:
            allowed = f"in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    v = _as_float(name, value, allowed)
    ok = math.isfinite(v) and (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
    if not ok:
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return v


def positive(name: str, value: Any, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """A number > 0 (``>= 0`` with ``allow_zero``), finite unless ``allow_inf``.

    >>> positive("rho", 0, allow_zero=True), positive("mu", float("inf"), allow_inf=True)
    (0.0, inf)
    """
    op = ">=" if allow_zero else ">"
    allowed = f"a number {op} 0 (inf allowed)" if allow_inf else f"a finite number {op} 0"
    v = _as_float(name, value, allowed)
    ok = (v >= 0 if allow_zero else v > 0) and not math.isnan(v) and (allow_inf or math.isfinite(v))
    if not ok:
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return v


def unit_interval(name: str, value: Any, *, closed_lo: bool = False, closed_hi: bool = False) -> float:
    """A number in (0, 1), with either end closed on request."""
    return number(name, value, lo=0.0, hi=1.0, lo_open=not closed_lo, hi_open=not closed_hi)


#: Smallest delta accepted: the smallest normal float64 (a subnormal delta has too few
#: significant bits, and ``1/delta`` overflows).
MIN_DELTA: float = sys.float_info.min


def delta(value: Any, name: str = "delta") -> float:
    """delta of (epsilon, delta)-DP: in (0, 1), and not subnormal (at least :data:`MIN_DELTA`).

    >>> delta(1e-310)
    Traceback (most recent call last):
    ...
    ValueError: delta must be in (0, 1) and at least 2.2e-308 (a subnormal delta has too few significant digits and 1/delta overflows), got 1e-310
    """
    v = unit_interval(name, value)
    if v < MIN_DELTA:
        raise ValueError(f"{name} must be in (0, 1) and at least {MIN_DELTA:.2g} (a subnormal delta has too few "
                         f"significant digits and 1/delta overflows), got {value!r}")
    return v


def sampling_rate(value: Any, name: str = "sampling_rate") -> float:
    """A Poisson sampling rate p in [:data:`MIN_SAMPLING_RATE`, 1] (1 = full batch).

    >>> sampling_rate(1e-300)
    Traceback (most recent call last):
    ...
    ValueError: sampling_rate must be in [1e-09, 1] (a smaller rate samples less than one example per step from any data set of up to 10^9 examples), got 1e-300
    """
    return number(name, value, lo=MIN_SAMPLING_RATE, hi=1.0, lo_open=False, hi_open=False,
                  allowed=f"in [{MIN_SAMPLING_RATE:g}, 1] (a smaller rate samples less than one example per step "
                          "from any data set of up to 10^9 examples)")


def integer(name: str, value: Any, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer (an integral float such as ``3.0`` is accepted; ``True`` is not).

    >>> integer("T", 3.0)
    3
    >>> integer("T", 0)
    Traceback (most recent call last):
    ...
    ValueError: T must be an integer >= 1, got 0
    """
    allowed = f"an integer >= {minimum}" if maximum is None else f"an integer in [{minimum}, {maximum:,}]"
    if isinstance(value, bool):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    if isinstance(value, (int, np.integer)):
        v = int(value)
    else:
        try:
            f = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{name} must be {allowed}, got {value!r}"[:300]) from None
        if not (math.isfinite(f) and f.is_integer()):
            raise ValueError(f"{name} must be {allowed}, got {value!r}")
        v = int(f)
    if v < minimum or (maximum is not None and v > maximum):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return v


def steps(value: Any, name: str = "T", *, minimum: int = 1) -> int:
    """A number of steps: an integer >= ``minimum`` and at most :data:`MAX_STEPS`.

    >>> steps(10**9)
    Traceback (most recent call last):
    ...
    ValueError: T must be at most 10,000,000 (one float64 per step in memory), got 1,000,000,000
    """
    v = integer(name, value, minimum=minimum)
    if v > MAX_STEPS:
        raise ValueError(f"{name} must be at most {MAX_STEPS:,} (one float64 per step in memory), got {v:,}")
    return v


def kappa(value: Any, name: str = "kappa") -> float:
    """A condition number kappa = M/mu: finite and >= 1 (H Eq. 6)."""
    return number(name, value, lo=1.0, lo_open=False, allowed="a finite number >= 1")


def positive_array(name: str, values: Any, *, length: int | None = None, allow_inf: bool = False,
                   allow_zero: bool = False) -> np.ndarray:
    """A non-empty 1-D float64 array of numbers > 0 (``>= 0`` with ``allow_zero``; finite
    unless ``allow_inf``)."""
    try:
        a = np.atleast_1d(np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a non-empty 1-D sequence of numbers > 0, got {values!r}"[:300]) from None
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of numbers > 0, got shape {a.shape}")
    if length is not None and a.size != length:
        raise ValueError(f"{name} must have {length} values, got {a.size}")
    bad = ~((a >= 0) if allow_zero else (a > 0)) | (np.isinf(a) if not allow_inf else np.zeros(a.shape, dtype=bool))
    if bad.any():
        k = int(np.argmax(bad))
        op = ">= 0" if allow_zero else "> 0"
        what = f"{op} (inf allowed)" if allow_inf else f"finite and {op}"
        raise ValueError(f"{name} must be {what} at every step, got {a[k]} at step {k + 1}")
    return a


def noise_multipliers(sigma: Any, *, name: str = "sigma") -> np.ndarray:
    """Per-step noise multipliers: a non-empty 1-D array, every entry finite and > 0 (an
    infinite or NaN sigma would be a step without noise).

    >>> noise_multipliers([1.0, float("inf")])
    Traceback (most recent call last):
    ...
    ValueError: sigma must be finite and > 0 at every step, got inf at step 2
    """
    return positive_array(name, sigma)


def choice(name: str, value: Any, allowed) -> Any:
    """One of ``allowed`` (compared as given)."""
    if value not in tuple(allowed):
        raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}, got {value!r}")
    return value


def class_labels(name: str, values: Any, *, n_classes: int) -> np.ndarray:
    """Class labels of a model with ``n_classes`` classes: a 1-D array of whole numbers in
    ``{0, ..., n_classes - 1}``, returned as int64 (the trainers' clipping is built for these:
    a binary model's ``s = 2y - 1`` is +-1 only for y in {0, 1}).

    >>> class_labels("y", [0, 1, -1], n_classes=2)
    Traceback (most recent call last):
    ...
    ValueError: y must hold class labels in {0, 1}, got -1 at index 2
    """
    allowed = "{0, 1}" if n_classes == 2 else f"{{0, ..., {n_classes - 1}}}"
    try:
        a = np.asarray(values)
        if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_):
            raise TypeError
        if np.iscomplexobj(a):
            raise TypeError
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must hold class labels in {allowed}, got {values!r}"[:300]) from None
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of class labels in {allowed}, got shape {a.shape}")
    if np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_:
        bad = (a < 0) | (a > n_classes - 1)
    else:  # finite, whole and in range (NaN fails every comparison)
        with np.errstate(invalid="ignore"):
            bad = ~((a >= 0) & (a <= n_classes - 1) & (a == np.floor(a)))
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"{name} must hold class labels in {allowed}, got {a[k].item()!r} at index {k}")
    return a.astype(np.int64)


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def features(name: str, values: Any, *, dtype: Any = "float64") -> Any:
    """The features of a training or test set: an array (numpy, torch or nested sequences) of
    real numbers with at least one example (its first axis), every value finite and within the
    range of ``dtype`` (the training dtype) so that the cast keeps it finite (one NaN feature
    makes the whole model NaN, which tells that the record was there). Returned as given
    (numpy for a sequence); torch tensors are checked on their device, without importing torch.

    >>> features("X", [[1.0, float("nan")]])
    Traceback (most recent call last):
    ...
    ValueError: X must hold finite real numbers (no NaN or inf), got nan in example 0 (at index (0, 1))
    >>> features("X", [[1e39]], dtype="float32")
    Traceback (most recent call last):
    ...
    ValueError: X must hold numbers that float32 represents (|x| < 3.4e+38), got 1e+39 in example 0 (at index (0, 0)), which becomes inf in float32
    """
    dt_name = _dtype_name(dtype)
    try:
        fi = np.finfo(np.dtype(dt_name))
    except TypeError:
        raise ValueError(f"the training dtype must be a floating type, got {dtype!r}") from None
    # the smallest magnitude that rounds to inf in dtype (round to nearest): max + half an ulp
    try:
        limit = math.ldexp(2.0 - 2.0 ** -(fi.nmant + 1), fi.maxexp - 1)
    except OverflowError:  # float64: every finite float64 stays finite
        limit = math.inf
    is_tensor = hasattr(values, "detach") and hasattr(values, "is_complex")
    if is_tensor:
        a = values.detach()
        if a.is_complex():
            raise ValueError(f"{name} must hold real numbers, got a complex tensor ({_dtype_name(a.dtype)}), "
                             "whose imaginary part the cast would drop")
        kind = "f" if a.is_floating_point() else "i"
    else:
        try:
            a = np.asarray(values)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{name} must be an array of real numbers (one example per row), "
                             f"got {values!r}"[:300]) from None
        if np.iscomplexobj(a):
            raise ValueError(f"{name} must hold real numbers, got a complex array ({a.dtype}), "
                             "whose imaginary part the cast would drop")
        if not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_):
            raise ValueError(f"{name} must be an array of real numbers (one example per row), "
                             f"got an array of {a.dtype}"[:300])
        kind = "f" if np.issubdtype(a.dtype, np.floating) else "i"
    shape = tuple(a.shape)
    if len(shape) == 0:
        raise ValueError(f"{name} must be an array with one example per row, got a single number")
    if shape[0] == 0:
        raise ValueError(f"{name} must hold at least one example (N >= 1, one per row), got shape {shape}")
    if kind == "f":
        bad = ~a.isfinite() if is_tensor else ~np.isfinite(a)
        if bool(bad.any()):
            idx = _first(bad, is_tensor)
            raise ValueError(f"{name} must hold finite real numbers (no NaN or inf), got {_at(a, idx, is_tensor)!r} "
                             f"in example {idx[0]} (at index {idx})")
    try:  # integers, and floats no wider than dtype, cannot overflow it
        fits = kind == "i" or np.finfo(np.dtype(_dtype_name(a.dtype))).max <= fi.max
    except TypeError:  # a float type numpy does not know (bfloat16): check
        fits = False
    if fits:
        return values if is_tensor else a
    big = (a.abs() if is_tensor else np.abs(a)) >= limit
    if bool(big.any()):
        idx = _first(big, is_tensor)
        raise ValueError(f"{name} must hold numbers that {dt_name} represents (|x| < {float(fi.max):.2g}), got "
                         f"{_at(a, idx, is_tensor):g} in example {idx[0]} (at index {idx}), which becomes inf in {dt_name}")
    return values if is_tensor else a


def _first(mask: Any, is_tensor: bool) -> tuple[int, ...]:
    """Index of the first True of a boolean array or tensor."""
    if is_tensor:
        return tuple(int(i) for i in mask.nonzero()[0].tolist())
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))


def _at(a: Any, idx: tuple[int, ...], is_tensor: bool) -> Any:
    v = a[idx]
    return v.item() if is_tensor else v.item()


#: Longest file name (one path segment, in bytes) and whole path Linux accepts (``NAME_MAX``,
#: ``PATH_MAX``); a longer one fails every system call with ``ENAMETOOLONG``.
NAME_MAX: int = 255
PATH_MAX: int = 4096


def path_lengths(name: str, path: Any) -> Path:
    """A path whose every segment fits in :data:`NAME_MAX` bytes and whose whole fits in
    :data:`PATH_MAX` (else every system call fails with ``ENAMETOOLONG``).

    >>> path_lengths("--csv", "a/" + "x" * 256)
    Traceback (most recent call last):
    ...
    ValueError: --csv: the path segment 'xxxxxxxxxxxxxxxxxxxx...' is 256 bytes long; a file or folder name may have at most 255
    """
    raw = os.fsencode(os.fspath(path))
    if len(raw) >= PATH_MAX:
        raise ValueError(f"{name}: the path is {len(raw):,} bytes long; a path may have at most {PATH_MAX - 1:,}")
    for seg in raw.split(b"/"):
        if len(seg) > NAME_MAX:
            shown = os.fsdecode(seg)
            raise ValueError(f"{name}: the path segment {shown[:20] + '...'!r} is {len(seg)} bytes long; a file or "
                             f"folder name may have at most {NAME_MAX}")
    return Path(os.fsdecode(raw))


def can_create_file_in(folder: Any) -> bool:
    """Whether a file can be created in the existing folder ``folder``, by a probe file
    (permission bits do not tell: for root, or in /proc).

    >>> can_create_file_in("/proc")
    False
    """
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".dpcompanion-probe-"):
            return True
    except OSError:
        return False


def writable_folder(name: str, path: Any) -> Path:
    """A folder output can be written to: one a file can be created in, or a missing one whose
    deepest existing ancestor is such a folder. Nothing is left behind.

    >>> writable_folder("--output", "/proc/x")
    Traceback (most recent call last):
    ...
    ValueError: --output /proc/x cannot be written (/proc is not writable); give a writable folder
    """
    p = Path(path)
    if str(path).strip() == "":
        raise ValueError(f"{name} must be a folder path, got an empty string")
    path_lengths(name, p)
    anc = p
    while not os.path.lexists(anc) and anc.parent != anc:
        anc = anc.parent
    if not anc.is_dir():
        why = "is not a folder" if os.path.lexists(anc) else "does not exist"
        raise ValueError(f"{name} {p} cannot be written ({anc} {why}); give a writable folder")
    if not can_create_file_in(anc):
        raise ValueError(f"{name} {p} cannot be written ({anc} is not writable); give a writable folder")
    return p
