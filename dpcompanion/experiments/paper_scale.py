"""CPU time of H-F-EFF and W-F4 at the papers' own sizes, estimated from short measured timings of the
experiments' own training calls at those sizes, extrapolated (not a full run).
``python -m dpcompanion bench --paper-scale --out`` writes ``results/bench/<device>-paper-scale.json``;
the compute page shows it.

**H-F-EFF** (the FAccT version, Sec. 5: 1000 hidden units, 100 repeats, :data:`h_f_eff.PAPER_SCALE`):
per N, the run-steps at the paper's size (:func:`hfeff_run_steps`: the committed run's tuning candidates
x the paper-scale tuning repeats, plus the chosen schedules' T x 100; assumed: the search visits the
same candidates at 1000 hidden units), and ``estimate_s`` = the committed run's recorded training time
x (those run-steps / the committed run's) x (seconds per run-step at 1000 hidden units / at the
committed width, the median over interleaved rounds of the pair's ratio). ``estimate_absolute_s``
multiplies the run-steps by the fastest measured seconds per run-step; ``calibration`` applies that
model to the committed run.

**W-F4** (App. F.3, :data:`w_f4.PAPER_GRID`): per cell and seed ``T = ceil(N / 256) x 50`` private
steps plus 51 test-set evaluations, each part measured directly (one torch thread, random images of
MNIST's size: the cost does not depend on the pixels, fastest round), times 24 cells x the paper
mode's seeds per cell; ``check`` compares one segment of the experiment's own trainer
(:func:`..protocols.wu.train_segments`) with the sum of its measured parts.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from dpcompanion.core.provenance import REPO
from dpcompanion.experiments import h_f_eff, store, w_f4
from dpcompanion.experiments.protocols import hong as hp
from dpcompanion.experiments.protocols import wu as wp
from dpcompanion.theory import schedules
from dpcompanion.training import bench, bench_measure, bench_workloads, data
from dpcompanion.training.models import make_model

__all__ = ["hfeff_run_steps", "measure", "hfeff_estimate", "wf4_estimate", "default_output", "SETTINGS"]

#: timed steps and interleaved rounds per measurement; ``tiny`` is the tests' smoke size
SETTINGS: dict[str, dict[str, Any]] = {
    "paper": {"hfeff_steps": 6, "hfeff_runs": h_f_eff.PAPER_SCALE["tune_repeats"], "hfeff_rounds": 5, "rounds": 3,
              "wf4_steps": 10, "wf4_n_train": w_f4.PAPER_GRID["n_train"],
              "wf4_n_test": w_f4.PAPER_GRID["n_test"]},
    "tiny": {"hfeff_steps": 2, "hfeff_runs": 2, "hfeff_rounds": 2, "rounds": 2, "wf4_steps": 2, "wf4_n_train": 512,
             "wf4_n_test": 64, "hfeff_N": [64], "hfeff_hidden": 8},
}


def hfeff_run_steps(payload: dict[str, Any], *, tune_repeats: int | None = None,
                    repeats: int | None = None) -> list[dict[str, int]]:
    """Per unit (N) of an H-F-EFF payload: ``tune`` (every candidate's T x tuning repeats), ``eval`` (the
    distinct chosen schedules' T x repeats) and ``total`` run-steps; the repeats default to the payload's.

    >>> u = {"N": 10, "tune_T": [50, 100], "tune_repeats": 2, "repeats": 3,
    ...      "uni": {"T": 50, "gamma": 0.0}, "exp": {"T": 100, "gamma": 0.9},
    ...      "beyond": {"uni": {"T": 50, "gamma": 0.0}, "exp": {"T": 150, "gamma": 0.9}}}
    >>> hfeff_run_steps({"units": [u]}, repeats=10)
    [{'N': 10, 'tune': 300, 'eval': 3000, 'total': 3300}]
    """
    out = []
    for u in payload["units"]:
        tr = int(u["tune_repeats"] if tune_repeats is None else tune_repeats)
        rp = int(u["repeats"] if repeats is None else repeats)
        chosen = {(k, int(u[k]["T"]), float(u[k]["gamma"])) for k in h_f_eff.KINDS}
        beyond = u.get("beyond") or {}
        chosen |= {(k, int(beyond[k]["T"]), float(beyond[k]["gamma"])) for k in h_f_eff.KINDS if k in beyond}
        tune = sum(int(T) for T in u["tune_T"]) * tr
        ev = sum(T for _, T, _ in chosen) * rp
        out.append({"N": int(u["N"]), "tune": tune, "eval": ev, "total": tune + ev})
    return out


def _hfeff_paired(*, N: int, hidden_paper: int, hidden_ours: int, runs: int, steps: int, rounds: int, device: str,
                  seed: int) -> dict[str, Any]:
    """Seconds per run-step at both widths over interleaved rounds: per width the fastest round, and the
    median of the rounds' ratios (paper width / ours)."""
    aux = data.load("gaussian", seed=seed, n=N, dim=hp.PCA_DIM, n_classes=2, scale=hp.SCALE)
    models = {"paper": make_model("mlp", in_dim=aux.dim, n_classes=2, hidden=hidden_paper),
              "committed": make_model("mlp", in_dim=aux.dim, n_classes=2, hidden=hidden_ours)}
    seeds = hp.unit_seeds(seed, runs)

    def call(which: str, T: int) -> float:
        rows = np.tile(schedules.uniform(T=T, R=hp.R), (runs, 1))
        return hp.run_batched(models[which], aux.X_train, aux.y_train, sigma_rows=rows, seeds=seeds, R=hp.R,
                              device=device)["wall_s"]

    for which in models:  # warm-up
        call(which, 1)
    per: dict[str, list[float]] = {k: [] for k in models}
    for _ in range(rounds):
        for which in models:
            per[which].append(call(which, steps) / steps / runs)
    ratios = [a / b for a, b in zip(per["paper"], per["committed"])]
    return {"N": N, "runs": runs, "steps": steps, "rounds": rounds,
            "paper": {"hidden": hidden_paper, "s_per_run_step": min(per["paper"]), "per_round": per["paper"]},
            "committed": {"hidden": hidden_ours, "s_per_run_step": min(per["committed"]),
                          "per_round": per["committed"]},
            "ratio_per_round": ratios, "ratio": statistics.median(ratios),
            "statistic": "seconds per run-step: the fastest round (background load only slows a round down); "
                         "ratio: median over rounds of the round's ratio (both calls back to back)"}


def hfeff_estimate(*, device: str = "cpu", size: str = "paper", seed: int = 0, root: Path | None = None,
                   log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The H-F-EFF estimate of the module docstring (from the stored full result)."""
    log = log or (lambda s: None)
    cfg = SETTINGS[size]
    res = store.load("h-f-eff", mode="full", root=root)
    if res is None or res.damaged:
        raise RuntimeError("the H-F-EFF estimate counts run-steps from the stored full result, and none is stored: "
                           "python -m dpcompanion experiment h-f-eff --mode full")
    paper = h_f_eff.PAPER_SCALE
    counted = hfeff_run_steps(res.payload)
    recorded = res.provenance.get("run_steps")
    at_paper = hfeff_run_steps(res.payload, tune_repeats=paper["tune_repeats"], repeats=paper["repeats"])
    wall = {int(u["N"]): float(u["train_wall_s"]) for u in res.payload["units"]}
    hidden_paper = cfg.get("hfeff_hidden", paper["hidden"])
    hidden_ours = int(res.payload["config"]["hidden"])
    per_N = []
    for c, p in zip(counted, at_paper):
        m = _hfeff_paired(N=cfg["hfeff_N"][0] if "hfeff_N" in cfg else c["N"], hidden_paper=hidden_paper,
                          hidden_ours=hidden_ours, runs=cfg["hfeff_runs"], steps=cfg["hfeff_steps"],
                          rounds=cfg["hfeff_rounds"], device=device, seed=seed)
        rec = wall.get(c["N"])
        per_N.append({"N": c["N"], "run_steps_paper": p["total"], "tune_run_steps_paper": p["tune"],
                      "eval_run_steps_paper": p["eval"], "run_steps_committed": c["total"],
                      "recorded_committed_train_s": rec, "width_ratio": m["ratio"],
                      "estimate_s": rec * p["total"] / c["total"] * m["ratio"],
                      "s_per_run_step_paper": m["paper"]["s_per_run_step"],
                      "estimate_absolute_s": p["total"] * m["paper"]["s_per_run_step"],
                      "s_per_run_step_committed": m["committed"]["s_per_run_step"],
                      "predicted_committed_s": c["total"] * m["committed"]["s_per_run_step"],
                      "measured": m})
        log(f"h-f-eff N={c['N']}: {hidden_paper} hidden units cost {m['ratio']:.3g}x {hidden_ours} per run-step "
            f"({m['paper']['s_per_run_step'] * 1e3:.3g} ms); {p['total']:,} run-steps at the paper's size")
    pred = sum(r["predicted_committed_s"] for r in per_N)
    rec = sum(r["recorded_committed_train_s"] for r in per_N)
    return {
        "estimate_s": sum(r["estimate_s"] for r in per_N),
        "estimate_absolute_s": sum(r["estimate_absolute_s"] for r in per_N),
        "run_steps_paper": sum(r["run_steps_paper"] for r in per_N),
        "per_N": per_N,
        "model": "per N: the committed run's recorded training time x (run-steps at the paper's size / the committed "
                 "run's) x (seconds per run-step at the paper's width / at the committed width, measured "
                 "interleaved); estimate_absolute_s: run-steps x the fastest measured seconds per run-step",
        "count_check": {"counted_run_steps": sum(c["total"] for c in counted), "recorded_run_steps": recorded,
                        "equal": sum(c["total"] for c in counted) == recorded},
        "calibration": {"predicted_s": pred, "recorded_train_s": rec, "recorded_wall_s": res.provenance.get("wall_s"),
                        "predicted_over_recorded": pred / rec if rec > 0 else None,
                        "what": f"the absolute model at the committed run's {hidden_ours} hidden units and repeats, "
                                "against the training time that run recorded"},
        "sizes": {"hidden": hidden_paper, "repeats": paper["repeats"], "tune_repeats": paper["tune_repeats"],
                  "N": [r["N"] for r in per_N], "T range": paper["T_range"], "tuning": "auxiliary Gaussian set of the "
                  "same N", "committed": {"hidden": hidden_ours, "repeats": int(res.payload["config"]["repeats"]),
                                          "tune_repeats": int(res.payload["config"]["tune_repeats"])}},
        "source_result": {"commit": res.provenance.get("commit"), "created": res.provenance.get("created"),
                          "status": "fresh" if res.fresh else f"stale: {res.stale_reason}"},
        "threads": torch.get_num_threads(),
    }


def wf4_estimate(*, device: str = "cpu", size: str = "paper", seed: int = 0,
                 log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The W-F4 estimate of the module docstring."""
    log = log or (lambda s: None)
    cfg, grid = SETTINGS[size], w_f4.PAPER_GRID
    paper = w_f4.CONFIGS["paper"]
    seeds_per_cell = int(paper["seeds"]) * int(paper.get("replicates", 1))
    base = w_f4.CONFIGS["full"]
    N, n_test, m = cfg["wf4_n_train"], cfg["wf4_n_test"], base["batch_size"]
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(N, 784, generator=g)
    y = torch.randint(0, 10, (N,), generator=g)
    Xv, yv = torch.rand(n_test, 784, generator=g), torch.randint(0, 10, (n_test,), generator=g)
    model = make_model(grid["model"], n_classes=10)
    theta = model.init(generators=[torch.Generator().manual_seed(seed)])
    sigma = float(grid["sigmas"][0])
    steps = cfg["wf4_steps"]

    def timed(f: Callable[[], Any]) -> float:
        t = time.perf_counter()
        f()
        return time.perf_counter() - t

    def step_block() -> float:  # `steps` private steps, each on a fresh Poisson batch of expected size m
        fns = []
        for _ in range(steps):
            rows = torch.nonzero(torch.rand(N, generator=g) < m / N).squeeze(-1)
            fns.append(bench_workloads.private_step_fn(model, theta, X[rows], y[rows], clip_norm=base["clip"], lr=0.01,
                                             sigma=sigma, gen=g))
        t = time.perf_counter()
        for f in fns:
            f()
        return (time.perf_counter() - t) / steps

    def segment() -> float:  # the experiment's own segment trainer: one segment of `steps` steps
        return timed(lambda: wp.train_segments(
            model, X, y, X_val=Xv, y_val=yv, sigma=np.full((1, steps), sigma),
            lr=wp.step_sizes(family="sqrt", T=steps, a=base["a"], c=0.0)[None, :], seeds=[seed],
            clip_norm=base["clip"], sampling_rate=m / N, delta=base["delta"], epsilon_target=1e9, eval_every=steps,
            device=device))

    with wp.single_thread():
        step_block()  # warm-up
        meas: dict[str, list[float]] = {"step_s": [], "eval_test_s": [], "segment_s": []}
        for r in range(cfg["rounds"]):
            meas["step_s"].append(step_block())
            meas["eval_test_s"].append(timed(lambda: model.evaluate(theta, Xv, yv)))
            meas["segment_s"].append(segment())
            log(f"w-f4 round {r + 1}: step {meas['step_s'][-1]:.3g} s, test-set evaluation "
                f"{meas['eval_test_s'][-1]:.3g} s, a {steps}-step segment {meas['segment_s'][-1]:.3g} s")
        threads = torch.get_num_threads()
    med = {k: min(v) for k, v in meas.items()}  # the fastest round: background load only slows a round down
    per_epoch = math.ceil(grid["n_train"] / m)
    T = per_epoch * grid["epochs"]
    cell = T * med["step_s"] + (grid["epochs"] + 1) * med["eval_test_s"]  # one seed of a cell
    cells = len(grid["sigmas"]) * len(grid["cs"])
    predicted_segment = steps * med["step_s"] + 2 * med["eval_test_s"]  # the initial and the segment's evaluation
    return {
        "estimate_s": cells * seeds_per_cell * cell, "cell_s": cell, "cells": cells, "seeds": seeds_per_cell,
        "steps_per_run": T, "steps_per_epoch": per_epoch, "step_s": med["step_s"], "eval_test_s": med["eval_test_s"],
        "check": {"segment_steps": steps, "predicted_segment_s": predicted_segment,
                  "measured_segment_s": med["segment_s"],
                  "measured_over_predicted": med["segment_s"] / predicted_segment,
                  "what": "one segment of the experiment's own trainer (wu.train_segments: ledger, Poisson sampling, "
                          "two test-set evaluations) against the model's sum of its measured parts"},
        "measured": {"per_round": meas, "rounds": cfg["rounds"], "steps_timed": steps, "n_train": N,
                     "n_test": n_test, "batch": m, "model": grid["model"], "params": model.n_params,
                     "threads": threads},
        "sizes": {"n_train": grid["n_train"], "n_test": grid["n_test"], "epochs": grid["epochs"], "batch": m,
                  "model": grid["model"], "sigmas": grid["sigmas"], "cs": grid["cs"], "seeds": seeds_per_cell},
    }


def measure(*, device: str = "cpu", size: str = "paper", seed: int = 0, root: Path | None = None,
            log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Both estimates, the matmul peak (the better of start and end), load and provenance: the JSON of
    ``bench --paper-scale``."""
    if size not in SETTINGS:
        raise ValueError(f"size must be one of {', '.join(SETTINGS)}, got {size!r}")
    t0 = time.perf_counter()
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    peak_n = bench_workloads.WORKLOADS["paper" if size == "paper" else "tiny"].peak_n
    peaks = [bench_measure.matmul_peak_gflops(device=device, n=peak_n)]
    hf = hfeff_estimate(device=device, size=size, seed=seed, root=root, log=log)
    wf = wf4_estimate(device=device, size=size, seed=seed, log=log)
    peaks.append(bench_measure.matmul_peak_gflops(device=device, n=peak_n))
    peak = max(peaks, key=lambda p: p["gflops"]) | {"measurements": 2}
    return {
        "sections": ["paper-scale"], "device": device, "mode": "paper-scale", "size": size,
        "h-f-eff": hf, "w-f4": wf, "matmul_peak_gflops": peak["gflops"], "matmul_peak": peak,
        "threads": torch.get_num_threads(), "settings": dict(SETTINGS[size]) | {"seed": seed},
        "load_average_before": load_before, "load_average_after": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "wall_s": time.perf_counter() - t0, "provenance": bench.provenance_extras(device),
        "method": "short measured timings of the experiments' own training calls at the papers' sizes, extrapolated "
                  "(dpcompanion.experiments.paper_scale); not a full run",
    }


def default_output(result: dict[str, Any]) -> Path:
    """``results/bench/<device>-paper-scale.json`` (``-tiny`` appended for the smoke size)."""
    tag = "" if result.get("size", "paper") == "paper" else f"-{result['size']}"
    return REPO / "results" / "bench" / f"{result['device']}-paper-scale{tag}.json"
