"""The benchmark's measurement primitives (no workload): the FLOP count of a dense private step, the
float32 matmul peak, peak memory, interleaved timing rounds, per-round ratios, torch's FLOP counter,
and the torch thread setting.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import math
import platform
import resource
import statistics
import time
from typing import Any, Callable

import torch
from torch.utils.flop_counter import FlopCounterMode

__all__ = ["private_step_flops", "keep_freed_memory", "sync", "matmul_peak_gflops", "PeakMemory", "median_and_all", "per_round_ratios",
           "counted_flops", "interleave", "torch_threads"]


def private_step_flops(*, N: int, sizes) -> dict[str, float]:
    """The useful FLOPs of one ghost-clipped private step of a dense net ``sizes = (d_0, ..., d_L)`` on
    ``N`` samples, per layer: forward ``2 N d_{l-1} d_l`` (+ ``N d_l`` bias, + ``N d_l`` activation),
    backprop into hidden layers ``2 N d_{l-1} d_l + N d_{l-1}``, ghost norms ``2 N (d_{l-1} + d_l) + 2 N``
    (``||g_n||^2 = ||delta_n||^2 (||a_n||^2 + 1)``), weighted backward ``2 N d_{l-1} d_l + 2 N d_l``;
    then ``4 P`` for noise, average and update (random number generation not counted).

    >>> f = private_step_flops(N=1000, sizes=(60, 1000, 1))
    >>> f["matmul"], f["total"]
    (246000000.0, 255377004.0)
    """
    sizes = [int(s) for s in sizes]
    if N < 1 or len(sizes) < 2 or min(sizes) < 1:
        raise ValueError(f"N must be >= 1 and sizes a list of >= 2 positive widths, got N={N}, sizes={sizes}")
    L = len(sizes) - 1
    mm = other = 0.0
    P = 0
    for l in range(1, L + 1):
        din, dout = sizes[l - 1], sizes[l]
        P += din * dout + dout
        mm += 2 * N * din * dout  # forward
        other += N * dout + (N * dout if l < L else 0)  # bias, activation
        if l > 1:
            mm += 2 * N * din * dout  # backprop into the layer's input
            other += N * din  # activation derivative
        other += 2 * N * (din + dout) + 2 * N  # ghost norms
        other += N * dout  # clip-factor scaling of the backprops
        mm += 2 * N * din * dout  # weight gradient
        other += N * dout  # bias gradient
    other += 4 * P  # noise add, average, update
    return {"matmul": float(mm), "other": float(other), "total": float(mm + other), "params": float(P)}


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def matmul_peak_gflops(*, device: str, n: int = 2048, repeats: int = 7) -> dict[str, float]:
    """This machine's float32 matmul rate: best of ``repeats`` timed ``n x n`` products
    (after two warm-up products), in GFLOP/s (``2 n^3`` FLOPs each)."""
    g = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=g).to(device)
    b = torch.randn(n, n, generator=g).to(device)
    for _ in range(2):
        a @ b
    sync(device)
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - t)
    return {"gflops": 2 * n**3 / best / 1e9, "n": n, "repeats": repeats, "best_s": best}


def _proc_status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _malloc_trim() -> None:
    """glibc's ``malloc_trim(0)`` (no-op elsewhere): without it, memory freed by an earlier
    call stays resident and a later call reuses it without raising the peak."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


#: glibc's ``mallopt`` parameters (malloc.h) and the values :func:`keep_freed_memory` sets
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
KEPT_TRIM_BYTES, KEPT_MMAP_BYTES = 1 << 30, 32 << 20


def keep_freed_memory() -> dict[str, Any]:
    """Make glibc keep freed memory for reuse, for every method the bench times (one process): by
    default it returns the top of its heap to the system once 2 x (a freed block) is free there, so a
    step that frees two 4 MB activations gives their pages back and faults them in again on the next
    step (about 1 ms a step of the paper's MLP on this machine, a third of a plain torch step). With
    the trim threshold at 1 GiB and blocks up to 32 MiB served from the heap, the steps reuse their
    pages; blocks larger than that (Opacus's per-sample gradients) are still mapped afresh. Returns
    what was set, for the result's provenance (``set: False`` where glibc is not the allocator)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = bool(libc.mallopt(M_MMAP_THRESHOLD, KEPT_MMAP_BYTES)) and bool(libc.mallopt(M_TRIM_THRESHOLD, KEPT_TRIM_BYTES))
    except (OSError, AttributeError):
        ok = False
    return {"allocator": "glibc malloc" if ok else "unchanged (not glibc)", "set": ok,
            "trim_threshold_bytes": KEPT_TRIM_BYTES if ok else None, "mmap_threshold_bytes": KEPT_MMAP_BYTES if ok else None,
            "what": "mallopt set once, before any method is timed; the same for every method"}


class PeakMemory:
    """Context manager: peak memory (bytes) of the enclosed code above what was in use before. CUDA:
    allocator peak; Linux: VmHWM reset through ``/proc/self/clear_refs``; else ``ru_maxrss`` (an upper bound)."""

    def __init__(self, device: str):
        self.device = device
        self.bytes: int | None = None
        self.method = ""

    def __enter__(self):
        gc.collect()
        if self.device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self._base = torch.cuda.memory_allocated()
            self.method = "torch.cuda.max_memory_allocated"
            return self
        _malloc_trim()  # hand freed heap memory back first, so the baseline is what is in use
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
            self._base = (_proc_status_kb("VmRSS") or 0) * 1024
            self.method = "VmHWM - VmRSS (Linux /proc, peak reset per measurement)"
        except OSError:
            self._base = 0
            self.method = "ru_maxrss (process peak; clear_refs unavailable)"
        return self

    def __exit__(self, *exc):
        if self.device == "cuda":
            torch.cuda.synchronize()
            self.bytes = int(torch.cuda.max_memory_allocated() - self._base)
        elif self.method.startswith("VmHWM"):
            self.bytes = int((_proc_status_kb("VmHWM") or 0) * 1024 - self._base)
        else:
            scale = 1 if platform.system() == "Darwin" else 1024
            self.bytes = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale)
        return False


def median_and_all(ts: list[float]) -> dict[str, Any]:
    """The times unrounded, so that every ratio reported beside them is exactly computed from them."""
    return {"median_s": statistics.median(ts), "min_s": min(ts), "times_s": [float(t) for t in ts]}


def per_round_ratios(num: list[float], den: list[float]) -> dict[str, Any]:
    """Per-round ratios ``num[r] / den[r]`` of two interleaved timings, their median (the reported
    ratio), spread and the ratio of the medians (a cross-check).

    >>> r = per_round_ratios([2.0, 3.0, 9.0], [1.0, 3.0, 3.0])
    >>> r["per_round"], r["median"], r["min"], r["max"], r["of_medians"]
    ([2.0, 1.0, 3.0], 2.0, 1.0, 3.0, 1.0)
    """
    per = [float(a) / float(b) for a, b in zip(num, den)]
    return {"per_round": per, "median": statistics.median(per), "min": min(per), "max": max(per),
            "of_medians": statistics.median(num) / statistics.median(den)}


class _NoModuleTracking:
    """Stands in for :class:`FlopCounterMode`'s module tracker, whose backward hooks ``torch.autograd.grad``
    on non-leaf outputs (our CNN engine's backward) refuses; only the total is used here."""

    parents = {"Global"}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def counted_flops(step: Callable[[], None]) -> float:
    """FLOPs (convolutions and matrix products) of one real call of ``step`` by torch's counter."""
    fc = FlopCounterMode(display=False)
    fc.mod_tracker = _NoModuleTracking()
    with fc:
        step()
    return float(fc.get_total_flops())


def interleave(fns: dict[str, Callable[[], None]], *, rounds: int, steps: int) -> dict[str, list[float]]:
    """Seconds per step of each function, ``rounds`` interleaved rounds of ``steps`` steps."""
    for f in fns.values():  # warm-up
        f()
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t = time.perf_counter()
            for _ in range(steps):
                f()
            out[k].append((time.perf_counter() - t) / steps)
    return out


@contextlib.contextmanager
def torch_threads(threads: int | None):
    """torch's intra-op threads set to ``threads`` (None: unchanged) inside, restored after."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    prev = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(prev)
