"""Benchmark: our private gradient step against Opacus on the paper's workload.

Workload (Hong et al. 2022, FAccT, arXiv 2101.07413 Sec. 5): MNIST35-PCA60's shape (Gaussian
features rescaled to max norm 10: a step's cost does not depend on the values), a ``60 -> 1000 -> 1``
MLP, full batch N = 1000, clipping at C = 4, lr 0.1, the uniform schedule for the (4, 1e-8)-DP
budget ``accounting.R_PAPER``. Measured in one process with the same thread settings:

* **ours**: :func:`~dpcompanion.training.trainers.train_pgd`, the whole call timed (ledger and
  final evaluation included), one seed and ``runs`` seeds batched as one tensor program;
* **Opacus** ``make_private`` in each ``grad_sample_mode`` that works (``ghost``, ``hooks``,
  ``functorch``, ``ew``), full batch, ``noise_multiplier = sigma``, ``max_grad_norm = C``; runs
  sequential, slow modes measured on fewer runs within a budget and extrapolated (the JSON says
  so). Its sequential rate is the larger of the measured one and its single-run rate, so that
  load on the sequential measurement cannot favour the batched side.

Timings are medians over repeats after warm-up, interleaved across methods so that background
load hits all alike (``*_best_times``: fastest repeats, a load diagnostic). Peak memory: CUDA's
``max_memory_allocated`` or the CPU's ``VmHWM`` above the resident size before the call
(``tracemalloc`` does not see torch's tensors). ``fraction_of_matmul_peak``: counted FLOPs
(:func:`~dpcompanion.training.bench_measure.private_step_flops`) x run-steps/s over the best
measured ``2048 x 2048`` float32 matmul rate (measured at the start and the end). Before any
timing, glibc is told to keep freed memory (:func:`~dpcompanion.training.bench_measure.keep_freed_memory`,
``allocator`` in the JSON), for every method alike: otherwise each step's multi-MB tensors are
returned to the system and faulted in again, a cost of the allocator's policy, not of the step.

The ``linear_*`` keys (:func:`~dpcompanion.training.bench_workloads.run_linear_benchmark`): the
influence sweep's logistic regression (N = 1000, D = 60, 1000 runs) by our trainer against the
plain batched loop :func:`~dpcompanion.training.bench_workloads.plain_linear_loop`, with distinct
seeds and with seeds shared by 10 runs (``linear.common_random_numbers``). ``cnn`` and
``mlp.private_over_*``: W-F4's CNN against Opacus, and each private step over the fastest
non-private step (torch's SGD step or our engine's with clipping and noise off), with per-stage
profiles (:mod:`dpcompanion.training.bench_profile`).

``targets`` (:data:`TARGETS`) are the project's own goals, not paper claims. On this CPU the noise
draw alone (torch's MT19937 stream, which every committed result was drawn from) is about a tenth
of the MLP's non-private step, which bounds what ``mlp.private_over_fastest_nonprivate`` can reach.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import torch

from dpcompanion.core.provenance import REPO, git_state, resolve_device, validate_mode, validate_seed, versions
from dpcompanion.training.bench_measure import PeakMemory, keep_freed_memory, matmul_peak_gflops, median_and_all, private_step_flops, torch_threads
from dpcompanion.training.bench_workloads import (LINEAR_SETTINGS, LINEAR_WORKLOADS, OPACUS_MODES, SETTINGS, WORKLOADS,
                                                   OpacusRunner, OursRunner, run_cnn_benchmark, run_linear_benchmark,
                                                   run_mlp_overhead, workload_data, workload_schedule)

__all__ = ["TARGETS", "lookup", "targets", "provenance_extras", "run_benchmark", "run_linear_only", "default_output",
           "summary_rows"]

#: the project's targets for the headline keys (module docstring): ``(key, what, relation,
#: bound)``, ``key`` a dotted path into the result, ``relation`` ``">="`` or ``"<="``.
TARGETS: tuple[tuple[str, str, str, float], ...] = (
    ("mlp.private_over_fastest_nonprivate", "the MLP: our private step / the fastest non-private step (torch's or "
                                            "our engine's without privacy)", "<=", 1.15),
    ("cnn.private_over_fastest_nonprivate", "the CNN: our private step / the fastest non-private step (torch's, "
                                            "channels-last or not, or our engine's without privacy)", "<=", 1.25),
    ("mlp.ratio_vs_opacus_fastest", "the paper's MLP, one run: our steps/s / Opacus's fastest", ">=", 2.5),
    ("mlp.ratio_batched_vs_sequential_opacus", "the paper's MLP, batched runs: our run-steps/s / Opacus's fastest "
                                               "mode run sequentially", ">=", 2.5),
    ("cnn.ratio_vs_opacus_fastest", "W-F4's CNN (batch 256), one run: Opacus's fastest step time / ours", ">=", 2.5),
    ("mlp.fraction_of_matmul_peak", "the MLP, batched runs: counted FLOP/s / measured matmul peak", ">=", 0.4),
    ("linear.worst_ratio_vs_reference", "the logistic workload: the plain batched loop's time / our trainer's "
                                        "(ledger, history and all), the smaller of its two seed designs", ">=", 1.0),
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
    [('mlp.private_over_fastest_nonprivate', True), ('cnn.ratio_vs_opacus_fastest', False)]
    """
    rows = []
    for key, what, rel, bound in TARGETS:
        v = lookup(result, key)
        met = None if v is None else bool(v >= bound if rel == ">=" else v <= bound)
        rows.append({"key": key, "what": what, "target": f"{rel} {bound:g}", "value": v, "met": met})
    return rows


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
    allocator = keep_freed_memory()
    with torch_threads(threads):
        return _run(mode=mode, dev=dev, size=size, cfg=cfg, seed=seed, opacus_modes=opacus_modes, log=log) | {
            "allocator": allocator}


def _run(*, mode, dev, size, cfg, seed, opacus_modes, log) -> dict[str, Any]:
    w = WORKLOADS[size]
    T, K, reps = cfg["steps"], cfg["runs"], cfg["repeats"]
    t_start = time.perf_counter()
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None

    X, y = workload_data(w, seed)
    sigma = workload_schedule(w, T)
    flops = private_step_flops(N=w.N, sizes=w.sizes)
    peak = matmul_peak_gflops(device=dev, n=w.peak_n)
    log(f"matmul peak {peak['gflops']:.1f} GFLOP/s ({dev}, {torch.get_num_threads()} threads)")

    ours = OursRunner(w, X, y, sigma, dev)
    ours.call(1, steps=2)  # warm-up
    ours.call(min(K, 4), steps=2)

    # Opacus engines (those that fail are reported, not fatal)
    engines: dict[str, OpacusRunner] = {}
    results_op: dict[str, dict[str, Any]] = {}
    for m in opacus_modes:
        try:
            e = OpacusRunner(m, w, X, y, float(sigma[0]), dev, seed)
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
            "single": {"steps_timed": plan[m][0], **median_and_all(times[m])},
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
            "single": median_and_all(times["ours"]) | {"steps_timed": T, "per": "step"},
            "batched": {"runs": K, "steps": T, **median_and_all(tb)},
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
    """The linear/logistic workload alone (:func:`~dpcompanion.training.bench_workloads.run_linear_benchmark`; seconds, where the
    full benchmark's Opacus section takes an hour on 2 cores), with the device, threads,
    load and provenance fields of :func:`run_benchmark`; ``sections = ["linear"]``."""

    validate_mode(mode)
    validate_seed(seed)
    dev = resolve_device(device)
    if size not in LINEAR_WORKLOADS:
        raise ValueError(f"size must be one of {', '.join(LINEAR_WORKLOADS)}, got {size!r}")
    allocator = keep_freed_memory()
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
            "wall_s": time.perf_counter() - t0, "provenance": provenance_extras(dev), "allocator": allocator,
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
