"""Benchmark: our private gradient step against Opacus on the paper's workload.

Workload (Hong et al. 2022, FAccT, arXiv 2101.07413 Sec. 5; the ICLR submission's App. D):
MNIST35 projected to 60 PCA dimensions, a 2-layer MLP with 1000 hidden units and one
logistic output (``60 -> 1000 -> 1``, 62 001 parameters), **full batch** N = 1000,
per-sample clipping at C = 4, learning rate 0.1, the uniform schedule
``sigma = sqrt(T/R)`` for the paper's (4, 1e-8)-DP budget R (``accounting.R_PAPER``). The data are
Gaussian features of that shape rescaled to max norm 10 (the paper's data scale): the
cost of a step does not depend on the values, and the benchmark then runs on a machine
without the MNIST wheel.

Measured in one process, with the same thread settings for everything:

* **ours, one run**: :func:`dpcompanion.training.trainers.train_pgd` with one seed (ghost-norm
  clipping, :meth:`dpcompanion.training.dense_models.DenseModel.clipped_grad_sum`), whole call timed
  (setup, privacy ledger and final evaluation included: a conservative count);
* **ours, batched**: the same call with ``runs`` seeds - ``runs`` independent runs as
  one tensor program;
* **Opacus 1.6** ``PrivacyEngine.make_private`` in each ``grad_sample_mode`` that works:
  ``ghost`` (fast gradient / ghost clipping, returns a ``DPLossFastGradientClipping``
  criterion: two backward passes, no per-sample gradient materialised), ``hooks``
  (per-sample gradients from module hooks), ``functorch`` and ``ew`` (expanded
  weights). Full batch: a DataLoader-free loop over the same tensors, no Poisson
  sampling, ``noise_multiplier = sigma``, ``max_grad_norm = C``, mean reduction (noise
  std ``C sigma / N`` on the mean, as ours). One run = ``steps`` steps; ``runs``
  independent runs are run **sequentially** (parameters reset between runs). Modes are
  measured on fewer runs/steps within a time budget and extrapolated per run; the JSON
  says so (``measured_runs``, ``extrapolated``). Opacus's sequential throughput is taken
  as the larger of the measured sequential rate and its single-run rate, so that load on
  the sequential measurement cannot favour the batched side.

Timings are medians over repeats after warm-up, interleaved across methods so that
background load hits all of them alike: single runs round-robin; the batched program and
the fastest Opacus mode's sequential runs alternate over ``batched_rounds`` rounds. The
``*_best_times`` ratios use each method's fastest repeat instead (a load diagnostic). Peak memory: on CUDA
``torch.cuda.max_memory_allocated``; on CPU the peak resident set size (``VmHWM``,
reset through ``/proc/self/clear_refs`` after glibc's ``malloc_trim``) above the resident
size before the call.
``tracemalloc`` is not used: it only sees Python's allocator, not torch's tensors.

**Linear/logistic workload** (:func:`run_linear_benchmark`, the ``linear_*`` keys): the shape
of the influence-by-retraining sweep (the ICLR submission, App. D): logistic regression on N = 1000 samples
with D = 60 features (+ bias), 1000 runs, T steps (100 in full mode, 20 in quick), clipping at
C = 4, full batch. The library's :func:`~dpcompanion.training.trainers.train_pgd` (margin fast
path, ledger charged before every step, history of everything but the per-step loss, clip
statistics) against the **plain loop** :func:`plain_linear_loop` (margins, per-sample norms
``|dloss/dmargin| ||x||``, clip, ``weights @ X``, one Gaussian draw per step; no ledger, no
history), timed in the same process in interleaved rounds. ``ratio_linear_batched_vs_reference``
is the median over rounds of the round's plain-loop time over our time (target >= 1); the
``*_run_steps_per_s`` rates are medians over rounds. The runs have distinct seeds (1000 noise generators, each
keeping its run's own noise stream and drawing a block of steps per call,
:class:`~dpcompanion.training.trainers.engine.NoiseSource`); ``linear.common_random_numbers``
repeats the measurement with seeds shared by 10 runs each, the influence sweep's design.
:func:`run_linear_only` (``bench --linear-only``) measures this workload alone, with the
provenance of a full benchmark.

FLOP count (:func:`private_step_flops`): the useful arithmetic of one private step of a
dense network with layer sizes ``d_0 -> d_1 -> ... -> d_L`` on N samples, ghost style:

* forward: ``2 N d_{l-1} d_l`` per layer (matmul) + ``N d_l`` (bias) + ``N d_l``
  (activation, hidden layers);
* backprop to each hidden layer: ``2 N d_{l-1} d_l`` (matmul) + ``N d_{l-1}``
  (activation derivative);
* per-sample norms: ``2 N (d_{l-1} + d_l) + 2 N`` per layer
  (``||g_n||^2 = ||delta_n||^2 (||a_n||^2 + 1)``);
* weighted backward: ``N d_l`` (scale backprops by the clip factors) +
  ``2 N d_{l-1} d_l`` (weight gradient matmul) + ``N d_l`` (bias gradient);
* noise, average and update: ``4 P`` (random number generation not counted).

For the workload: 2.46e8 matmul FLOPs + 9.4e6 others = 2.55e8 per run-step.
``achieved_gflops`` = that count times the measured run-steps per second of the batched
program; ``fraction_of_matmul_peak`` divides it by this machine's measured float32
matmul rate (best of several ``2048 x 2048`` products, measured at the start and at the
end of the benchmark).

**Where a reader finds the headline numbers** (``bench --quick --json``, CPU; every one a
ratio of medians over interleaved rounds in this one process, computed from the times stored
beside it, unrounded; the CNN and overhead ratios are medians over rounds of the round's
ratio, with the per-round values and their spread in ``*_rounds``):

* ``cnn.ratio_vs_opacus_fastest``: W-F4's CNN (``cnn-mnist``, 1x28x28, batch 256), the
  median step time of Opacus's fastest ``grad_sample_mode`` over ours
  (:func:`run_cnn_benchmark`; > 1: ours is faster); ``cnn.ratio_vs_opacus_fastest_channels_last``
  gives Opacus the channels-last input our engine's pools get (no side wins by memory layout);
* ``mlp.private_over_fastest_nonprivate``: the overhead of privacy itself against the limit
  named per workload (issue 31 item 2): our private step on the paper's MLP (ghost clipping,
  noise, update) over the fastest non-private step of the same network on the same full batch,
  the faster of two baselines timed in the same rounds: torch's plain SGD step
  (``mlp.private_over_nonprivate``, the key's meaning since issue 22) and our engine's step with
  clipping and noise off (``mlp.private_over_engine_nonprivate``,
  :meth:`~dpcompanion.training.bench_profile.MLPStages.nonprivate_step`); ``mlp.fastest_nonprivate``
  names the faster (:func:`run_mlp_overhead`; 1 = no overhead). ``cnn.private_over_*`` are the
  same for the CNN, whose torch baseline is also timed on a channels-last input;
* ``mlp.profile`` (one run), ``mlp.profile_batched`` (``runs`` runs in one step) and
  ``cnn.profile``: where the private step's time goes, per stage (forward, per-sample norms,
  clipped sum, noise, update; :mod:`dpcompanion.training.bench_profile`), each the median over
  the rounds, with the shares of the total and a sentence naming the largest stage;
* ``mlp.ratio_vs_opacus_fastest``: one run of the paper's MLP, our steps/s over Opacus's fastest
  mode's (= ``ratio_single_vs_opacus``); ``mlp.ratio_batched_vs_sequential_opacus`` the batched
  runs against Opacus's fastest mode run sequentially;
* ``mlp.fraction_of_matmul_peak``: counted FLOPs x the batched program's run-steps/s over
  ``matmul_peak_gflops`` (= ``fraction_of_matmul_peak``); ``cnn.fraction_of_matmul_peak``:
  torch's FLOP count of one private CNN step (``cnn.flops_per_step``) x our steps/s over the same peak;
* ``linear.fraction_of_matmul_peak``: the logistic workload, ``4 N (D + 1)`` FLOPs per
  run-step x our run-steps/s over the same peak, measured in the same process.

``targets`` lists them with the project's targets for them (:data:`TARGETS`, :func:`targets`:
the key, its value, the target and whether it is met); the paper reports no timings, so these are
the project's own goals, not paper claims.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import itertools
import math
import os
import platform
import resource
import statistics
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from importlib import metadata
from typing import Any, Callable

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.flop_counter import FlopCounterMode

from dpcompanion.core.provenance import REPO, git_state, resolve_device, validate_mode, validate_seed, versions
from dpcompanion.theory import schedules
from dpcompanion.theory.accounting import R_PAPER  # (4, 1e-8)-DP as R = 2 rho (H Sec. 5)
from dpcompanion.training.bench_profile import CNNStages, MLPStages, profile_summary
from dpcompanion.training.models import make_model
from dpcompanion.training.trainers import train_pgd

__all__ = [
    "OPACUS_MODES",
    "SETTINGS",
    "TARGETS",
    "lookup",
    "targets",
    "WORKLOADS",
    "run_cnn_benchmark",
    "run_mlp_overhead",
    "Workload",
    "matmul_peak_gflops",
    "private_step_flops",
    "run_benchmark",
    "run_linear_benchmark",
    "run_linear_only",
    "plain_linear_loop",
    "LINEAR_WORKLOADS",
    "default_output",
    "provenance_extras",
    "torch_threads",
    "private_step_fn",
]

#: Opacus ``grad_sample_mode`` values benchmarked, fastest expected first.
OPACUS_MODES: tuple[str, ...] = ("ghost", "hooks", "functorch", "ew")

#: the project's targets for the headline keys (module docstring): ``(key, what, relation,
#: bound)``, ``key`` a dotted path into the result, ``relation`` ``">="`` or ``"<="``.
TARGETS: tuple[tuple[str, str, str, float], ...] = (
    ("cnn.ratio_vs_opacus_fastest", "W-F4's CNN (batch 256), one run: Opacus's fastest step time / ours", ">=", 2.5),
    ("mlp.ratio_vs_opacus_fastest", "the paper's MLP, one run: our steps/s / Opacus's fastest", ">=", 2.5),
    ("mlp.ratio_batched_vs_sequential_opacus", "the paper's MLP, batched runs: our run-steps/s / Opacus's fastest "
                                               "mode run sequentially", ">=", 2.5),
    ("mlp.private_over_fastest_nonprivate", "the MLP: our private step / the fastest non-private step (torch's or "
                                            "our engine's without privacy)", "<=", 1.1),
    ("cnn.private_over_fastest_nonprivate", "the CNN: our private step / the fastest non-private step (torch's, "
                                            "channels-last or not, or our engine's without privacy)", "<=", 1.1),
    ("mlp.fraction_of_matmul_peak", "the MLP, batched runs: counted FLOP/s / measured matmul peak", ">=", 0.5),
    ("linear.fraction_of_matmul_peak", "the logistic workload: counted FLOP/s / the same matmul peak", ">=", 0.5),
)


def lookup(result: dict[str, Any], key: str) -> Any:
    """The value at a dotted ``key`` of a benchmark result (None where a part is absent: a
    result measured before the key existed, or a section not measured on this device).

    >>> lookup({"cnn": {"ratio_vs_opacus_fastest": 1.5}, "mlp": None}, "cnn.ratio_vs_opacus_fastest")
    1.5
    >>> lookup({"mlp": None}, "mlp.private_over_fastest_nonprivate") is None
    True
    """
    node: Any = result
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per :data:`TARGETS` entry: ``key``, ``what``, ``target`` (e.g. ``">= 2"``),
    ``value`` (None when the result lacks it) and ``met`` (None when there is no value).

    >>> rows = targets({"cnn": {"ratio_vs_opacus_fastest": 1.36}, "mlp": {"private_over_fastest_nonprivate": 1.05}})
    >>> [(r["key"], r["met"]) for r in rows if r["met"] is not None]
    [('cnn.ratio_vs_opacus_fastest', False), ('mlp.private_over_fastest_nonprivate', True)]
    """
    rows = []
    for key, what, rel, bound in TARGETS:
        v = lookup(result, key)
        met = None if v is None else bool(v >= bound if rel == ">=" else v <= bound)
        rows.append({"key": key, "what": what, "target": f"{rel} {bound:g}", "value": v, "met": met})
    return rows



@dataclass(frozen=True)
class Workload:
    N: int = 1000
    D: int = 60
    hidden: int = 1000
    clip_norm: float = 4.0
    lr: float = 0.1
    data_scale: float = 10.0
    R: float = R_PAPER
    peak_n: int = 2048  # side of the matmul timed for the machine's peak

    @property
    def sizes(self) -> tuple[int, ...]:
        return (self.D, self.hidden, 1)


WORKLOADS: dict[str, Workload] = {
    "paper": Workload(),
    # smoke size for tests: same code paths, milliseconds per step
    "tiny": Workload(N=64, D=8, hidden=16, peak_n=512),
}

#: per mode: steps per run, runs, repeats of the single-run timing, and the time budget
#: (seconds) of each slow Opacus mode for its single-run and its sequential measurement.
SETTINGS: dict[str, dict[str, Any]] = {
    "quick": {"steps": 10, "runs": 100, "repeats": 7, "batched_rounds": 5, "opacus_single_budget_s": 2.0,
              "opacus_seq_budget_s": 1.5},
    "full": {"steps": 100, "runs": 100, "repeats": 7, "batched_rounds": 5, "opacus_single_budget_s": 20.0,
             "opacus_seq_budget_s": 60.0},
}


@dataclass(frozen=True)
class LinearWorkload:
    N: int = 1000
    D: int = 60
    runs: int = 1000
    clip_norm: float = 4.0
    lr: float = 0.1
    data_scale: float = 10.0
    R: float = R_PAPER
    shared_seed_group: int = 10  # runs per seed in the common-random-numbers measurement


LINEAR_WORKLOADS: dict[str, LinearWorkload] = {
    "paper": LinearWorkload(),
    "tiny": LinearWorkload(N=64, D=8, runs=16, shared_seed_group=4),
}

#: per mode: steps per run and interleaved rounds of the linear workload
LINEAR_SETTINGS: dict[str, dict[str, int]] = {"quick": {"steps": 20, "rounds": 9}, "full": {"steps": 100, "rounds": 9}}


# --- FLOPs and peak -------------------------------------------------------------------


def private_step_flops(*, N: int, sizes) -> dict[str, float]:
    """Analytic FLOPs of one ghost-clipped private step of a dense net (module docstring).

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


def _sync(device: str) -> None:
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
    _sync(device)
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        _sync(device)
        best = min(best, time.perf_counter() - t)
    return {"gflops": 2 * n**3 / best / 1e9, "n": n, "repeats": repeats, "best_s": best}


# --- memory ---------------------------------------------------------------------------


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


class PeakMemory:
    """Context manager: peak memory (bytes) used by the enclosed code above what was in
    use before it. CUDA: allocator peak; CPU (Linux): VmHWM after resetting it through
    ``/proc/self/clear_refs`` (after ``malloc_trim``); elsewhere: ``ru_maxrss`` (process
    peak, an upper bound)."""

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


# --- the workload ---------------------------------------------------------------------


def _data(w: Workload, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(w.N, w.D, generator=g, dtype=torch.float64)
    X = (X - X.mean(0)) / X.std(0)
    X = X * (w.data_scale / X.norm(dim=1).max())
    y = (torch.rand(w.N, generator=g) < 0.5).long()
    return X.float(), y


def _model(w: Workload):

    return make_model("mlp", in_dim=w.D, n_classes=2, hidden=w.hidden)


def _schedule(w: Workload, steps: int) -> np.ndarray:

    return np.asarray(schedules.uniform(T=steps, R=w.R), dtype=float)


def _median_and_all(ts: list[float]) -> dict[str, Any]:
    """The times as measured: stored unrounded, so that every ratio and median reported
    beside them is exactly the one computed from the stored numbers (pages round for display)."""
    return {"median_s": statistics.median(ts), "min_s": min(ts), "times_s": [float(t) for t in ts]}


# --- ours -----------------------------------------------------------------------------


class _Ours:
    """Timed calls of :func:`dpcompanion.training.trainers.train_pgd` on the workload."""

    def __init__(self, w: Workload, X, y, sigma, device: str):

        self.train = train_pgd
        self.w, self.model, self.sigma, self.device = w, _model(w), sigma, device
        self.X, self.y = X.to(device), y.to(device)

    def call(self, runs: int, steps: int | None = None) -> float:
        sig = self.sigma if steps is None else self.sigma[:steps]
        seed = 0 if runs == 1 else list(range(runs))
        _sync(self.device)
        t = time.perf_counter()
        h = self.train(self.model, self.X, self.y, sigma=sig, R=self.w.R * (1 + 1e-9), clip_norm=self.w.clip_norm,
                       lr=self.w.lr, seed=seed, device=self.device, progress=False)
        _sync(self.device)
        dt = time.perf_counter() - t
        done = np.asarray(h.steps_done)
        if np.any(done != len(sig)):
            raise RuntimeError(f"benchmark run stopped early ({done.min()} of {len(sig)} steps): ledger refused a step")
        return dt


# --- the linear workload ----------------------------------------------------------------


def plain_linear_loop(X: torch.Tensor, y: torch.Tensor, sigma, *, runs: int, clip_norm: float, lr: float,
                      seed: int = 0) -> torch.Tensor:
    """The reference of the linear workload: private GD of ``runs`` logistic regressions
    written as a plain batched torch loop (no ledger, no history, one generator).
    Returns the final parameters ``(runs, D + 1)``.

    >>> X = torch.tensor([[1.0, 0.0], [0.0, 2.0]]); y = torch.tensor([1, 0])
    >>> plain_linear_loop(X, y, [1.0, 1.0], runs=3, clip_norm=1.0, lr=0.1).shape
    torch.Size([3, 3])
    """
    g = torch.Generator(device=X.device).manual_seed(seed)
    N = X.shape[0]
    Xa = torch.cat([X, torch.ones(N, 1, dtype=X.dtype, device=X.device)], dim=1)
    s = (2 * y - 1).to(X.dtype)
    xn = torch.linalg.vector_norm(Xa, dim=1)
    theta = torch.zeros(runs, Xa.shape[1], dtype=X.dtype, device=X.device)
    for sig in np.asarray(sigma, dtype=float):
        z = theta @ Xa.T  # margins (runs, N)
        d = -s * torch.sigmoid(-s * z)  # d loss / d z of log(1 + exp(-s z))
        norms = d.abs() * xn  # per-sample gradient norms
        w = d * torch.clamp(clip_norm / norms, max=1.0)  # clipped weights
        grad = w @ Xa / N  # clipped mean gradient
        noise = torch.randn(theta.shape, generator=g, dtype=X.dtype, device=X.device)
        theta -= lr * (grad + clip_norm * float(sig) / N * noise)
    return theta


def run_linear_benchmark(*, mode: str = "quick", device: str = "cpu", size: str = "paper", seed: int = 0,
                         steps: int | None = None, rounds: int | None = None,
                         log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The linear/logistic workload (module docstring): our trainer against the plain loop,
    interleaved rounds, medians. Returns the ``linear_*`` keys and a ``linear`` section."""

    log = log or (lambda s: None)
    w = LINEAR_WORKLOADS[size]
    cfg = dict(LINEAR_SETTINGS[mode])
    if steps is not None:
        cfg["steps"] = steps
    if rounds is not None:
        cfg["rounds"] = rounds
    T, K = cfg["steps"], w.runs
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(w.N, w.D, generator=g, dtype=torch.float64)
    X = (X - X.mean(0)) / X.std(0)
    X = (X * (w.data_scale / X.norm(dim=1).max())).float().to(device)
    y = (torch.rand(w.N, generator=g) < 0.5).long().to(device)
    sigma = np.asarray(schedules.uniform(T=T, R=w.R), dtype=float)
    model = make_model("logistic", in_dim=w.D, n_classes=2)
    record = ("grad_norm", "clip_fraction", "sigma", "lr", "budget_spent")  # all but the per-step loss
    distinct = list(range(seed, seed + K))
    shared = [seed + k // w.shared_seed_group for k in range(K)]

    def ours(seeds) -> float:
        _sync(device)
        t = time.perf_counter()
        h = train_pgd(model, X, y, sigma=sigma, R=w.R * (1 + 1e-9), clip_norm=w.clip_norm, lr=w.lr, seed=seeds,
                      device=device, progress=False, record=record)
        _sync(device)
        dt = time.perf_counter() - t
        if not h.meta.get("fast_path"):
            raise RuntimeError("the linear benchmark did not take the fast path")
        if np.any(np.asarray(h.steps_done) != T):
            raise RuntimeError("linear benchmark run stopped early: the ledger refused a step")
        return dt

    def plain() -> float:
        _sync(device)
        t = time.perf_counter()
        plain_linear_loop(X, y, sigma, runs=K, clip_norm=w.clip_norm, lr=w.lr, seed=seed)
        _sync(device)
        return time.perf_counter() - t

    ours(distinct)  # warm-up at the timed size, like the plain loop's (buffers, allocator, caches)
    plain()
    times: dict[str, list[float]] = {"ours": [], "plain": [], "ours_crn": []}
    for r in range(cfg["rounds"]):
        times["plain"].append(plain())
        times["ours"].append(ours(distinct))
        times["ours_crn"].append(ours(shared))
        log(f"linear round {r + 1}: ours {K * T / times['ours'][-1]:.0f}, plain {K * T / times['plain'][-1]:.0f} "
            "run-steps/s")
    rate = {k: K * T / statistics.median(v) for k, v in times.items()}
    # the ratio of each round pairs two measurements taken back to back (the same load);
    # the reported ratio is the median over rounds
    ratios = [p / o for p, o in zip(times["plain"], times["ours"])]
    crn_ratios = [p / o for p, o in zip(times["plain"], times["ours_crn"])]
    return {
        "linear_run_steps_per_s": rate["ours"],
        "linear_reference_run_steps_per_s": rate["plain"],
        "ratio_linear_batched_vs_reference": statistics.median(ratios),
        "linear": {
            "ours": _median_and_all(times["ours"]),
            "reference": _median_and_all(times["plain"]),
            "ratio_per_round": [float(x) for x in ratios],
            "ratio_of_median_rates": rate["ours"] / rate["plain"],
            "ratio_of_best_times": min(times["plain"]) / min(times["ours"]),  # less sensitive to load bursts
            "ratio_statistic": "median over interleaved rounds of (plain loop time / our time) in that round",
            "common_random_numbers": {"runs_per_seed": w.shared_seed_group, "run_steps_per_s": rate["ours_crn"],
                                      "ratio_vs_reference": statistics.median(crn_ratios),
                                      "ratio_of_best_times": min(times["plain"]) / min(times["ours_crn"]),
                                      "ratio_per_round": [float(x) for x in crn_ratios],
                                      **_median_and_all(times["ours_crn"])},
            "workload": asdict(w) | {"steps": T, "params": w.D + 1, "batch": "full", "sigma": float(sigma[0]),
                                     "schedule": f"uniform(T={T}, R={w.R})"},
            "rounds": cfg["rounds"],
            "what": {"ours": "train_pgd(logistic model, distinct seeds): margin fast path, ledger charged before "
                             "each step, history of grad_norm, clip_fraction, sigma, lr, budget_spent, final "
                             "evaluation; whole call timed",
                     "reference": "plain_linear_loop: the same arithmetic as a plain batched torch loop, one "
                                  "noise generator, no ledger, no history"},
        },
    }


# --- Opacus ---------------------------------------------------------------------------


class _Opacus:
    """One Opacus private model/optimizer/criterion in ``mode`` on the workload."""

    def __init__(self, mode: str, w: Workload, X, y, sigma: float, device: str, seed: int):
        from opacus import PrivacyEngine

        self.mode, self.device = mode, device
        model = _model(w)
        theta0 = model.init(generators=[torch.Generator().manual_seed(seed)])[0]
        module = model.to_module(theta0).to(device)
        self.X, self.yf = X.to(device), y.to(device).float()
        self.init_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        opt = torch.optim.SGD(module.parameters(), lr=w.lr)
        loader = DataLoader(TensorDataset(X, y.float()), batch_size=w.N)
        crit = torch.nn.BCEWithLogitsLoss()  # = softplus(-s z), s = 2y - 1: our logistic loss
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "secure RNG turned off": fine for timing
            engine = PrivacyEngine(accountant="rdp")
            out = engine.make_private(module=module, optimizer=opt, criterion=crit, data_loader=loader,
                                      noise_multiplier=float(sigma), max_grad_norm=w.clip_norm,
                                      poisson_sampling=False, grad_sample_mode=mode)
        if mode == "ghost":
            self.module, self.opt, self.crit, _ = out
        else:
            (self.module, self.opt, _), self.crit = out, crit

    def step(self) -> None:
        self.opt.zero_grad(set_to_none=True)
        loss = self.crit(self.module(self.X).squeeze(-1), self.yf)
        loss.backward()
        self.opt.step()

    def reset(self) -> None:
        inner = getattr(self.module, "_module", self.module)
        with torch.no_grad():
            for k, v in inner.state_dict().items():
                v.copy_(self.init_state[k])

    def call(self, steps: int, runs: int = 1) -> float:
        _sync(self.device)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(runs):
                self.reset()
                for _ in range(steps):
                    self.step()
        _sync(self.device)
        return time.perf_counter() - t


# --- CNN workload and the overhead of privacy -------------------------------------------

#: the CNN workload: W-F4's network (``cnn-mnist``) on 1x28x28 inputs, batch ``N``
CNN_BATCH: dict[str, int] = {"paper": 256, "tiny": 16}
#: suffix of the CNN entries whose input is channels-last (Opacus and the plain step)
CL = "_channels_last"
#: interleaved rounds and steps per round of the CNN and the overhead measurements
CNN_SETTINGS: dict[str, dict[str, int]] = {"quick": {"rounds": 5, "steps": 3}, "full": {"rounds": 9, "steps": 10}}


def private_step_fn(model, theta, X, y, *, clip_norm: float, lr: float, sigma: float, gen: torch.Generator):
    """One private step of our engine on ``theta`` (in place): clipped sum
    (:meth:`Model.clipped_grad_sum`), Gaussian noise of std ``sigma C``, averaged update."""
    N = X.shape[0]

    def step() -> None:
        r = model.clipped_grad_sum(theta, X, y, clip_norm=clip_norm)
        noise = torch.randn(r.grad_sum.shape, generator=gen, dtype=theta.dtype)
        theta.sub_(r.grad_sum.add_(noise, alpha=sigma * clip_norm), alpha=lr / N)

    return step


def _plain_step_fn(module, X, y, *, lr: float, loss: str):
    """One plain (non-private) torch SGD step of ``module`` on the whole batch."""
    opt = torch.optim.SGD(module.parameters(), lr=lr)
    crit = torch.nn.CrossEntropyLoss() if loss == "ce" else torch.nn.BCEWithLogitsLoss()
    target = y if loss == "ce" else y.float()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        z = module(X)
        crit(z if loss == "ce" else z.squeeze(-1), target).backward()
        opt.step()

    return step


def _per_round_ratios(num: list[float], den: list[float]) -> dict[str, Any]:
    """Round-by-round ratios ``num[r] / den[r]`` of two interleaved timings (each pair taken
    back to back, under the same load), their median (the reported ratio), spread (min, max)
    and the ratio of the medians (a cross-check).

    >>> r = _per_round_ratios([2.0, 3.0, 9.0], [1.0, 3.0, 3.0])
    >>> r["per_round"], r["median"], r["min"], r["max"], r["of_medians"]
    ([2.0, 1.0, 3.0], 2.0, 1.0, 3.0, 1.0)
    """
    per = [float(a) / float(b) for a, b in zip(num, den)]
    return {"per_round": per, "median": statistics.median(per), "min": min(per), "max": max(per),
            "of_medians": statistics.median(num) / statistics.median(den)}


class _NoModuleTracking:
    """Stands in for :class:`FlopCounterMode`'s module tracker, which attributes counts to the
    ``nn.Module`` s a step calls by hooking their backward, hooks that ``torch.autograd.grad`` on
    non-leaf outputs (our CNN engine's backward) refuses; only the total is used here."""

    parents = {"Global"}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _counted_flops(step: Callable[[], None]) -> float:
    """FLOPs of one call of ``step`` by torch's own counter (:class:`torch.utils.flop_counter.FlopCounterMode`:
    convolutions and matrix products, forward and backward), for the CNN's fraction of the
    matmul peak. The call is a real step (it moves the parameters like any other)."""
    fc = FlopCounterMode(display=False)
    fc.mod_tracker = _NoModuleTracking()
    with fc:
        step()
    return float(fc.get_total_flops())


def _interleave(fns: dict[str, Callable[[], None]], *, rounds: int, steps: int) -> dict[str, list[float]]:
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


def run_cnn_benchmark(*, mode: str = "quick", size: str = "paper", seed: int = 0, opacus_modes=OPACUS_MODES,
                      log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """W-F4's CNN (``cnn-mnist``, 26 010 parameters) at batch ``CNN_BATCH[size]``: our
    private step (:class:`GhostConvModel`'s ghost/mixed clipping, noise, update) against
    each Opacus ``grad_sample_mode`` (same module, same initial parameters, same batch),
    and the non-private steps (torch's plain step, our engine's without privacy), interleaved
    rounds in this process (CPU).
    Opacus's fastest mode is the one with the smallest median step time;
    ``ratio_vs_opacus_fastest`` is the median over rounds of (its step time / ours) in each round,
    ``private_over_nonprivate`` the median over rounds of (our step time / torch's non-private one),
    ``private_over_engine_nonprivate`` and ``private_over_fastest_nonprivate`` the same over our
    engine's step without privacy and over the fastest non-private step (:func:`_overhead_keys`);
    ``profile`` the private step's stages (:class:`CNNStages`, timed in the same rounds);
    ``*_rounds`` hold the per-round ratios, their spread and the ratio of the medians.
    ``*_channels_last``: the same ratios with Opacus and the plain step given a channels-last input
    (torch's CPU max-pool is far slower on NCHW tensors; our engine feeds its pools channels-last
    tensors, :class:`GhostConvModel`), so that no side wins by memory layout alone."""

    log = log or (lambda s: None)
    cfg, N = CNN_SETTINGS[mode], CNN_BATCH[size]
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(N, 784, generator=g)
    y = torch.randint(0, 10, (N,), generator=g)
    model = make_model("cnn-mnist", n_classes=10)
    theta = model.init(generators=[torch.Generator().manual_seed(seed)])
    clip, lr, sigma = 1.0, 0.1, 1.0
    fns = {"ours": private_step_fn(model, theta, X, y, clip_norm=clip, lr=lr, sigma=sigma,
                                    gen=torch.Generator().manual_seed(seed + 1))}
    Xi = X.reshape(N, 1, 28, 28)
    # the same input in both memory layouts: torch's CPU max-pool is far slower on NCHW tensors than on
    # channels-last ones, and our engine feeds its pools channels-last tensors; the "_channels_last"
    # entries give Opacus and the plain step that advantage too (their fastest comparison)
    layouts = {"": Xi, CL: Xi.contiguous(memory_format=torch.channels_last)}
    for tag, Xl in layouts.items():
        fns[f"nonprivate{tag}"] = _plain_step_fn(model.to_module(theta[0].clone()), Xl, y, lr=lr, loss="ce")
    kw = dict(clip_norm=clip, lr=lr, sigma=sigma)
    fns["engine_nonprivate"] = CNNStages(model, theta.clone(), X, y, **kw, gen=torch.Generator()).nonprivate_step
    stages = CNNStages(model, theta.clone(), X, y, **kw, gen=torch.Generator().manual_seed(seed + 1))
    fns["profiled"] = stages.private_step
    errors = {}
    from opacus import PrivacyEngine

    for m, (tag, Xl) in itertools.product(opacus_modes, layouts.items()):
        try:
            module = model.to_module(theta[0].clone())
            opt = torch.optim.SGD(module.parameters(), lr=lr)
            crit = torch.nn.CrossEntropyLoss()
            loader = DataLoader(TensorDataset(Xi, y), batch_size=N)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = PrivacyEngine(accountant="rdp").make_private(
                    module=module, optimizer=opt, criterion=crit, data_loader=loader, noise_multiplier=sigma,
                    max_grad_norm=clip, poisson_sampling=False, grad_sample_mode=m)
            if m == "ghost":
                mod_, opt_, crit_, _ = out
            else:
                (mod_, opt_, _), crit_ = out, crit

            def st(mod_=mod_, opt_=opt_, crit_=crit_, Xl=Xl):
                opt_.zero_grad(set_to_none=True)
                crit_(mod_(Xl), y).backward()
                opt_.step()

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                st()
            fns[f"opacus_{m}{tag}"] = st
        except Exception as e:  # noqa: BLE001 - a mode that does not run is reported
            errors[m + tag] = f"{type(e).__name__}: {e}"[:300]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        times = _interleave(fns, rounds=cfg["rounds"], steps=cfg["steps"])
    med = {k: statistics.median(v) for k, v in times.items()}
    op = {k[len("opacus_"):]: v for k, v in med.items() if k.startswith("opacus_") and not k.endswith(CL)}
    op_cl = {k[len("opacus_"):-len(CL)]: v for k, v in med.items() if k.startswith("opacus_") and k.endswith(CL)}
    if not op:
        raise RuntimeError("no Opacus mode ran on the CNN workload; nothing to compare with")
    fastest = min(op, key=op.get)
    log(f"cnn: ours {med['ours'] * 1e3:.1f} ms/step, opacus {fastest} {op[fastest] * 1e3:.1f} ms/step")
    vs_opacus = _per_round_ratios(times[f"opacus_{fastest}"], times["ours"])
    out = {
        "ratio_vs_opacus_fastest": vs_opacus["median"],
        "ratio_vs_opacus_fastest_rounds": vs_opacus,
        "opacus_fastest_mode": fastest,
        **_overhead_keys(times, "ours", {"torch": "nonprivate", "torch_channels_last": f"nonprivate{CL}",
                                         "engine": "engine_nonprivate"}),
        "profile": profile_summary(stages.times, rounds=cfg["rounds"], steps=cfg["steps"],
                                   whole_s=times["profiled"], measured_step_s=statistics.median(times["ours"]),
                                   workload=f"W-F4's CNN, batch {N}"),
        "flops_per_step": _counted_flops(fns["ours"]),
        "step_s": {k: _median_and_all(v) for k, v in times.items()},
    }
    if op_cl:
        fastest_cl = min(op_cl, key=op_cl.get)
        vs_cl = _per_round_ratios(times[f"opacus_{fastest_cl}{CL}"], times["ours"])
        over_cl = _per_round_ratios(times["ours"], times[f"nonprivate{CL}"])
        out |= {"ratio_vs_opacus_fastest_channels_last": vs_cl["median"],
                "ratio_vs_opacus_fastest_channels_last_rounds": vs_cl, "opacus_fastest_mode_channels_last": fastest_cl,
                "private_over_nonprivate_channels_last": over_cl["median"],
                "private_over_nonprivate_channels_last_rounds": over_cl}
    return out | {
        "opacus_errors": errors,
        "workload": {"model": "cnn-mnist (W-F4's network)", "params": model.n_params, "input": [1, 28, 28],
                     "batch": N, "clip_norm": clip, "sigma": sigma, "lr": lr, "dtype": "float32"},
        "rounds": cfg["rounds"], "steps_per_round": cfg["steps"],
        "ratio_statistic": "median over interleaved rounds of the round's ratio of step times (Opacus's fastest "
                           "mode by median step time / ours; ours / the non-private step): both times of a ratio "
                           "taken back to back, under the same load",
        "what": {"ours": "GhostConvModel.clipped_grad_sum (ghost or formed per-sample norms per layer), noise, "
                         "update; no ledger", "opacus": "PrivacyEngine.make_private step (zero_grad, forward, "
                         "backward, optimizer step)", "nonprivate": "plain torch SGD step of the same module",
                 "engine_nonprivate": "our engine's forward (channels-last pools) and the parameters' gradient of "
                                      "the summed loss, no clipping, no noise, the same update "
                                      "(CNNStages.nonprivate_step)",
                 "profiled": "the private step run stage by stage (CNNStages.private_step; same numbers)",
                 "flops_per_step": "torch.utils.flop_counter's count of one private step of ours (convolutions "
                                   "and matrix products)"},
    }


def _fastest_nonprivate(times: dict[str, list[float]], private: str, baselines: dict[str, str]) -> dict[str, Any]:
    """The private step against the fastest non-private step (issue 31 item 2): ``baselines``
    maps a name (``torch``, ``engine``, ...) to its key in ``times``. Per round, the private
    time over the smallest baseline time of that round (:func:`_per_round_ratios`); the
    baseline that is fastest by median is named.

    >>> r = _fastest_nonprivate({"p": [3.0, 3.0, 3.0], "a": [1.0, 2.0, 2.0], "b": [2.0, 1.5, 1.5]}, "p",
    ...                         {"torch": "a", "engine": "b"})
    >>> r["per_round"], r["median"], r["fastest_by_median"]
    ([3.0, 2.0, 2.0], 2.0, 'engine')
    """
    fastest = [min(times[k][r] for k in baselines.values()) for r in range(len(times[private]))]
    med = {name: statistics.median(times[k]) for name, k in baselines.items()}
    return _per_round_ratios(times[private], fastest) | {
        "fastest_by_median": min(med, key=med.get), "baselines": dict(baselines),
        "statistic": "median over rounds of the round's private step time / the smallest non-private step time "
                     "of that round"}


def _overhead_keys(times, private: str, baselines: dict[str, str]) -> dict[str, Any]:
    """The overhead-of-privacy keys shared by the MLP and the CNN sections: the private step
    over torch's plain step (``private_over_nonprivate``, the key's meaning since issue 22),
    over our engine's step without privacy (``private_over_engine_nonprivate``) and over the
    faster of all baselines (``private_over_fastest_nonprivate``), each with its ``_rounds``."""
    torch_ = _per_round_ratios(times[private], times[baselines["torch"]])
    engine = _per_round_ratios(times[private], times[baselines["engine"]])
    fastest = _fastest_nonprivate(times, private, baselines)
    return {"private_over_nonprivate": torch_["median"], "private_over_nonprivate_rounds": torch_,
            "private_over_engine_nonprivate": engine["median"], "private_over_engine_nonprivate_rounds": engine,
            "private_over_fastest_nonprivate": fastest["median"], "private_over_fastest_nonprivate_rounds": fastest,
            "fastest_nonprivate": fastest["fastest_by_median"]}


def run_mlp_overhead(w: "Workload", X, y, *, mode: str = "quick", seed: int = 0, runs: int = 1) -> dict[str, Any]:
    """The overhead of privacy on the MLP workload, interleaved rounds: our private step
    (ghost clipping, noise, update; one run) over the two non-private baselines of issue 31,
    a plain torch SGD step of the same network on the same full batch (``nonprivate``) and
    our engine's step with clipping and noise off (``engine_nonprivate``,
    :meth:`MLPStages.nonprivate_step`), and over the faster of them (:func:`_overhead_keys`;
    each ratio the median over rounds of the round's ratio of step times). ``profile``: the
    private step's stages timed one by one in the same rounds (:class:`MLPStages`,
    :func:`profile_summary`); ``profile_batched``: the same for ``runs`` runs in one step
    (the batched program's shape), in rounds of its own interleaved with the whole batched step."""
    cfg = CNN_SETTINGS[mode]
    model = _model(w)
    theta = model.init(generators=[torch.Generator().manual_seed(seed)])
    kw = dict(clip_norm=w.clip_norm, lr=w.lr, sigma=1.0)
    stages = MLPStages(model, theta.clone(), X, y, **kw, gen=torch.Generator().manual_seed(seed + 1))
    fns = {"private": private_step_fn(model, theta, X, y, **kw, gen=torch.Generator().manual_seed(seed + 1)),
           "nonprivate": _plain_step_fn(model.to_module(theta[0].clone()), X, y, lr=w.lr, loss="bce"),
           "engine_nonprivate": MLPStages(model, theta.clone(), X, y, **kw, gen=torch.Generator()).nonprivate_step,
           "profiled": stages.private_step}
    times = _interleave(fns, rounds=cfg["rounds"], steps=cfg["steps"])
    out = _overhead_keys(times, "private", {"torch": "nonprivate", "engine": "engine_nonprivate"})
    out["profile"] = profile_summary(stages.times, rounds=cfg["rounds"], steps=cfg["steps"],
                                     whole_s=times["profiled"], measured_step_s=statistics.median(times["private"]),
                                     workload="the paper's MLP, one run")
    thetaK = model.init(generators=[torch.Generator().manual_seed(seed + k) for k in range(runs)])
    stagesK = MLPStages(model, thetaK.clone(), X, y, **kw, gen=torch.Generator().manual_seed(seed + 1))
    timesK = _interleave({"private": private_step_fn(model, thetaK, X, y, **kw,
                                                     gen=torch.Generator().manual_seed(seed + 1)),
                          "profiled": stagesK.private_step}, rounds=cfg["rounds"], steps=1)
    out["profile_batched"] = profile_summary(
        stagesK.times, rounds=cfg["rounds"], steps=1, whole_s=timesK["profiled"],
        measured_step_s=statistics.median(timesK["private"]),
        workload=f"the paper's MLP, {runs} runs in one step") | {"runs": runs}
    return out | {
        "step_s": {k: _median_and_all(v) for k, v in times.items()},
        "rounds": cfg["rounds"], "steps_per_round": cfg["steps"],
        "ratio_statistic": "median over interleaved rounds of the round's private / non-private step time "
                           "(the fastest: the smallest non-private time of the round)",
        "what": {"private": "DenseModel.clipped_grad_sum + noise + update (no ledger)",
                 "nonprivate": "torch SGD step of the same network (BCEWithLogitsLoss, the same logistic loss)",
                 "engine_nonprivate": "our engine's forward and backward with clipping and noise off: the plain "
                                      "mean gradient, the same update (MLPStages.nonprivate_step)",
                 "profiled": "the private step run stage by stage (MLPStages.private_step; same numbers)"}}


# --- the benchmark --------------------------------------------------------------------


def provenance_extras(device: str) -> dict[str, Any]:
    """What a benchmark file records about where it ran: commit, versions (opacus, scipy
    included), CPU model and count, torch threads, float32 matmul precision (and the GPU)."""

    commit, dirty = git_state()
    v = versions()
    for pkg in ("opacus", "scipy"):
        try:
            v[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            v[pkg] = "absent"
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    out = {"commit": commit, "dirty": dirty, "versions": v, "cpu": cpu, "cpu_count": os.cpu_count(),
           "torch_threads": torch.get_num_threads(), "torch_interop_threads": torch.get_num_interop_threads()}
    out["float32_matmul_precision"] = torch.get_float32_matmul_precision()  # "highest": no TF32
    if device == "cuda":
        out["gpu"] = torch.cuda.get_device_name(0)
        out["cuda"] = torch.version.cuda
        out["allow_tf32_matmul"] = bool(torch.backends.cuda.matmul.allow_tf32)
    return out


def run_benchmark(
    *,
    mode: str = "quick",
    device: str = "auto",
    runs: int | None = None,
    steps: int | None = None,
    size: str = "paper",
    seed: int = 0,
    threads: int | None = None,
    opacus_modes=OPACUS_MODES,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark and return the JSON-ready result (see the module docstring).

    ``mode``: ``quick`` (CI, < 90 s on 2 cores) or ``full``; ``runs``/``steps`` override
    the mode's defaults; ``size``: ``paper`` or ``tiny`` (a smoke size for tests);
    ``threads``: torch intra-op threads for every method (default: torch's own choice);
    restored afterwards.
    """

    validate_mode(mode)
    validate_seed(seed)
    dev = resolve_device(device)
    if size not in WORKLOADS:
        raise ValueError(f"size must be one of {', '.join(WORKLOADS)}, got {size!r}")
    cfg = dict(SETTINGS[mode])
    for name, val in (("runs", runs), ("steps", steps)):
        if val is not None:
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise ValueError(f"{name} must be a positive integer, got {val!r}")
            cfg[name] = val
    bad = [m for m in opacus_modes if m not in OPACUS_MODES]
    if bad or not opacus_modes:
        raise ValueError(f"opacus modes must be a non-empty subset of {', '.join(OPACUS_MODES)}, got {list(opacus_modes)}")
    log = log or (lambda s: None)
    with torch_threads(threads):
        return _run(mode=mode, dev=dev, size=size, cfg=cfg, seed=seed, opacus_modes=opacus_modes, log=log)


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


def _run(*, mode, dev, size, cfg, seed, opacus_modes, log) -> dict[str, Any]:
    w = WORKLOADS[size]
    T, K, reps = cfg["steps"], cfg["runs"], cfg["repeats"]
    t_start = time.perf_counter()
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None

    X, y = _data(w, seed)
    sigma = _schedule(w, T)
    flops = private_step_flops(N=w.N, sizes=w.sizes)
    peak = matmul_peak_gflops(device=dev, n=w.peak_n)
    log(f"matmul peak {peak['gflops']:.1f} GFLOP/s ({dev}, {torch.get_num_threads()} threads)")

    ours = _Ours(w, X, y, sigma, dev)
    ours.call(1, steps=2)  # warm-up
    ours.call(min(K, 4), steps=2)

    # Opacus engines (those that fail are reported, not fatal)
    engines: dict[str, _Opacus] = {}
    results_op: dict[str, dict[str, Any]] = {}
    for m in opacus_modes:
        try:
            e = _Opacus(m, w, X, y, float(sigma[0]), dev, seed)
            e.call(2)  # warm-up
            t1 = e.call(1)
            engines[m] = e
            results_op[m] = {"works": True, "est_step_s": t1}
        except Exception as exc:  # noqa: BLE001 - a failing mode is a result
            results_op[m] = {"works": False, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"}
            log(f"opacus {m}: does not run ({results_op[m]['error'][:120]})")

    # Interleaved rounds, so that background load hits every method alike: each round
    # times one run of ours, one run of each Opacus mode, the batched program and the
    # sequential Opacus runs. The fastest Opacus mode (the reference of the ratios) is
    # timed in every round; slower modes in the first rounds only, within their budgets.
    fastest = min(engines, key=lambda k: results_op[k]["est_step_s"]) if engines else None
    plan: dict[str, tuple[int, int]] = {"ours": (T, reps)}
    n_runs: dict[str, int] = {}
    for m in engines:
        est = results_op[m]["est_step_s"]
        n_steps = T if est * T <= cfg["opacus_single_budget_s"] else max(2, int(cfg["opacus_single_budget_s"] / est))
        n_steps = min(n_steps, T)
        n_reps = int(min(reps, max(1, cfg["opacus_single_budget_s"] // max(est * n_steps, 1e-9))))
        if m == fastest:
            n_steps, n_reps = T, reps
        plan[m] = (n_steps, n_reps)
        est_run = est * T
        n = K if est_run * K <= cfg["opacus_seq_budget_s"] else max(1, int(cfg["opacus_seq_budget_s"] / est_run))
        n_runs[m] = min(n, K)
    times: dict[str, list[float]] = {k: [] for k in plan}
    tb: list[float] = []
    seq: dict[str, list[float]] = {m: [] for m in engines}
    for r in range(max(reps, cfg["batched_rounds"])):
        for k, (n_steps, n_reps) in plan.items():
            if r < n_reps:
                times[k].append((ours.call(1) if k == "ours" else engines[k].call(n_steps)) / n_steps)
        if r < cfg["batched_rounds"]:
            tb.append(ours.call(K))
            for m, e in engines.items():
                if r == 0 or m == fastest:
                    seq[m].append(e.call(T, runs=n_runs[m]) / n_runs[m])
        log(f"round {r + 1} done")

    # memory of one run (a short call, same shapes)
    mem: dict[str, Any] = {}
    with PeakMemory(dev) as pm:
        ours.call(1, steps=min(T, 3))
    mem["ours_single"] = pm.bytes
    for m, e in engines.items():
        with PeakMemory(dev) as pm:
            e.call(min(T, 3))
        mem[f"opacus_{m}"] = pm.bytes
    with PeakMemory(dev) as pm:
        ours.call(K, steps=min(T, 3))
    mem["ours_batched"] = pm.bytes
    mem["method"] = pm.method

    ours_batched_rate = K * T / statistics.median(tb)
    log(f"ours batched: {ours_batched_rate:.1f} run-steps/s")
    for m in engines:
        per_run = statistics.median(seq[m])
        # conservative: Opacus's sequential throughput is at least its single-run rate
        single_rate = 1.0 / statistics.median(times[m])
        results_op[m].update({
            "steps_per_s": 1.0 / statistics.median(times[m]),
            "steps_per_s_best": 1.0 / min(times[m]),
            "single": {"steps_timed": plan[m][0], **_median_and_all(times[m])},
            "sequential": {"runs": K, "measured_runs": n_runs[m], "extrapolated": n_runs[m] < K,
                           "per_run_s": per_run, "per_run_s_all": [float(x) for x in seq[m]],
                           "total_s_for_runs": per_run * K, "run_steps_per_s_measured": T / per_run,
                           "run_steps_per_s": max(T / per_run, single_rate),
                           "run_steps_per_s_best": max(T / min(seq[m]), 1.0 / min(times[m])),
                           "rule": "max(measured sequential rate, single-run rate): a background-load hit on the "
                                   "sequential measurement cannot favour the batched side"},
            "peak_memory_bytes": mem.get(f"opacus_{m}"),
        })
        log(f"opacus {m}: {results_op[m]['steps_per_s']:.1f} steps/s, sequential {T / per_run:.1f} run-steps/s measured"
            f"{' (extrapolated from %d runs)' % n_runs[m] if n_runs[m] < K else ''}")
    for m in results_op:
        results_op[m].pop("est_step_s", None)

    # the machine's matmul rate again at the end: the peak is the better of the two
    # (one load burst during a short measurement must not inflate the fraction of peak)
    peak_end = matmul_peak_gflops(device=dev, n=w.peak_n)
    peak = peak if peak["gflops"] >= peak_end["gflops"] else peak_end
    peak["measurements"] = 2

    ours_single_rate = 1.0 / statistics.median(times["ours"])
    working = {m: r for m, r in results_op.items() if r["works"]}
    if not working:
        raise RuntimeError("no Opacus mode ran; nothing to compare with")
    best_single = max(working, key=lambda m: working[m]["steps_per_s"])
    best_seq = max(working, key=lambda m: working[m]["sequential"]["run_steps_per_s"])
    op_single = working[best_single]["steps_per_s"]
    op_seq = working[best_seq]["sequential"]["run_steps_per_s"]
    ratio_single_best = (1.0 / min(times["ours"])) / max(r["steps_per_s_best"] for r in working.values())
    ratio_batched_best = (K * T / min(tb)) / max(r["sequential"]["run_steps_per_s_best"] for r in working.values())
    achieved = flops["total"] * ours_batched_rate / 1e9
    achieved_single = flops["total"] * ours_single_rate / 1e9
    linear = run_linear_benchmark(mode=mode, device=dev, size=size, seed=seed, log=log)
    _linear_peak_fraction(linear, size=size, peak_gflops=peak["gflops"])
    overhead = run_mlp_overhead(w, X, y, mode=mode, seed=seed, runs=K) if dev == "cpu" else None
    cnn = run_cnn_benchmark(mode=mode, size=size, seed=seed, opacus_modes=opacus_modes, log=log) if dev == "cpu" else None
    if cnn is not None:  # counted FLOPs x our steps/s over the same matmul peak as the MLP's
        cnn_rate = cnn["flops_per_step"] / cnn["step_s"]["ours"]["median_s"] / 1e9
        cnn["fraction_of_matmul_peak"] = cnn_rate / peak["gflops"]
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None
    result = linear | {
        "mlp": {"ratio_vs_opacus_fastest": ours_single_rate / op_single,
                "ratio_batched_vs_sequential_opacus": ours_batched_rate / op_seq,
                "fraction_of_matmul_peak": achieved / peak["gflops"],
                **{k: None if overhead is None else overhead[k]
                   for k in ("private_over_nonprivate", "private_over_engine_nonprivate",
                             "private_over_fastest_nonprivate", "fastest_nonprivate")},
                # the profiles live here only (not repeated under mlp.overhead)
                **{k: None if overhead is None else overhead.pop(k) for k in ("profile", "profile_batched")},
                "overhead": overhead},
        "cnn": cnn,
        "device": dev,
        "mode": mode,
        "size": size,
        "ours_steps_per_s": ours_single_rate,
        "opacus_steps_per_s": op_single,
        "opacus_fastest_mode": best_single,
        "ratio_single_vs_opacus": ours_single_rate / op_single,
        "ours_batched_run_steps_per_s": ours_batched_rate,
        "opacus_sequential_run_steps_per_s": op_seq,
        "opacus_sequential_fastest_mode": best_seq,
        "ratio_batched_vs_sequential_opacus": ours_batched_rate / op_seq,
        "ratio_single_vs_opacus_best_times": ratio_single_best,
        "ratio_batched_vs_sequential_opacus_best_times": ratio_batched_best,
        "timing_statistic": "median over repeats (the *_best_times ratios use the fastest repeat of each method, "
                            "less sensitive to background load)",
        "achieved_gflops": achieved,
        "achieved_gflops_basis": "batched program (runs x steps in one call)",
        "achieved_gflops_single": achieved_single,
        "matmul_peak_gflops": peak["gflops"],
        "matmul_peak": peak,
        "fraction_of_matmul_peak": achieved / peak["gflops"],
        "fraction_of_matmul_peak_single": achieved_single / peak["gflops"],
        "flops_per_run_step": flops,
        "ours": {
            "single": _median_and_all(times["ours"]) | {"steps_timed": T, "per": "step"},
            "batched": {"runs": K, "steps": T, **_median_and_all(tb)},
            "peak_memory_bytes": {"single": mem["ours_single"], "batched": mem["ours_batched"]},
            "what": "dpcompanion.training.trainers.train_pgd, whole call (ledger, records, final evaluation included)",
        },
        "opacus": results_op,
        "memory_method": mem["method"],
        "workload": {k: v for k, v in asdict(w).items() if k != "peak_n"} | {
            "matmul_peak_n": w.peak_n, "sizes": list(w.sizes), "params": int(flops["params"]), "batch": "full",
            "sigma": float(sigma[0]), "schedule": f"uniform(T={T}, R={w.R})",
            "data": "Gaussian features with the MNIST35-PCA60 shape, max norm = data_scale"},
        "settings": cfg | {"seed": seed},
        "threads": torch.get_num_threads(),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "wall_s": time.perf_counter() - t_start,
        "provenance": provenance_extras(dev),
    }
    result["targets"] = targets(result)
    return result


def run_linear_only(*, mode: str = "quick", device: str = "auto", size: str = "paper", seed: int = 0,
                    threads: int | None = None, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The linear/logistic workload alone (:func:`run_linear_benchmark`; seconds, where the
    full benchmark's Opacus section takes an hour on 2 cores), with the device, threads,
    load and provenance fields of :func:`run_benchmark`; ``sections = ["linear"]``."""

    validate_mode(mode)
    validate_seed(seed)
    dev = resolve_device(device)
    if size not in LINEAR_WORKLOADS:
        raise ValueError(f"size must be one of {', '.join(LINEAR_WORKLOADS)}, got {size!r}")
    with torch_threads(threads):
        t0 = time.perf_counter()
        load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
        peak_n = WORKLOADS[size].peak_n if size in WORKLOADS else WORKLOADS["paper"].peak_n
        peaks = [matmul_peak_gflops(device=dev, n=peak_n)]
        linear = run_linear_benchmark(mode=mode, device=dev, size=size, seed=seed, log=log)
        peaks.append(matmul_peak_gflops(device=dev, n=peak_n))
        peak = max(peaks, key=lambda q: q["gflops"]) | {"measurements": 2}
        _linear_peak_fraction(linear, size=size, peak_gflops=peak["gflops"])
        result = linear | {
            "sections": ["linear"], "device": dev, "mode": mode, "size": size, "threads": torch.get_num_threads(),
            "settings": dict(LINEAR_SETTINGS[mode]) | {"seed": seed},
            "matmul_peak_gflops": peak["gflops"], "matmul_peak": peak,
            "load_average_before": load_before,
            "load_average_after": os.getloadavg() if hasattr(os, "getloadavg") else None,
            "wall_s": time.perf_counter() - t0, "provenance": provenance_extras(dev),
        }
        result["targets"] = targets(result)
        return result


def _linear_peak_fraction(linear: dict[str, Any], *, size: str, peak_gflops: float) -> None:
    """Adds ``flops_per_run_step`` and ``fraction_of_matmul_peak`` to ``linear["linear"]``:
    the logistic step's forward ``X theta`` and gradient ``X^T (c a s)``, ``2 N (D + 1)`` FLOPs
    each per run, times our run-steps/s, over the matmul peak measured in the same process."""
    lw = LINEAR_WORKLOADS[size]
    lin_flops = 4.0 * lw.N * (lw.D + 1)
    linear["linear"]["flops_per_run_step"] = lin_flops
    linear["linear"]["fraction_of_matmul_peak"] = lin_flops * linear["linear_run_steps_per_s"] / 1e9 / peak_gflops


def default_output(result: dict[str, Any]) -> Path:
    """``results/bench/<device>-<mode>.json``; ``-linear`` appended for :func:`run_linear_only`,
    ``-tiny`` for the smoke size."""

    tag = "-linear" if result.get("sections") == ["linear"] else ""
    tag += "" if result.get("size", "paper") == "paper" else f"-{result['size']}"
    return REPO / "results" / "bench" / f"{result['device']}-{result['mode']}{tag}.json"


def summary_rows(result: dict[str, Any]) -> list[list[Any]]:
    """Rows ``[method, steps/s (one run), run-steps/s (runs), peak memory MiB]`` for a table."""
    mib = lambda b: None if b is None else round(b / 2**20, 1)  # noqa: E731
    rows = [["ours (dpcompanion, ghost norms)", result["ours_steps_per_s"], result["ours_batched_run_steps_per_s"],
             mib(result["ours"]["peak_memory_bytes"]["single"])]]
    for m in sorted(result["opacus"], key=lambda k: OPACUS_MODES.index(k) if k in OPACUS_MODES else 99):
        r = result["opacus"][m]
        if r["works"]:
            seq = r["sequential"]
            note = f" (from {seq['measured_runs']} runs)" if seq["extrapolated"] else ""
            rows.append([f"Opacus {m}", r["steps_per_s"], f"{seq['run_steps_per_s']:.4g}{note}",
                         mib(r["peak_memory_bytes"])])
        else:
            rows.append([f"Opacus {m}", "fails", r["error"][:60], None])
    return rows
