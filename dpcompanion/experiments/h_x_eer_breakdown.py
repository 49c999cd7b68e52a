"""H-X-EER breakdown: where the Thm 4.4 dynamic schedule stops working once gradients are clipped (a
finding beyond the paper; SPEC H-X-EER).

Per curvature kappa and length T, on least squares whose Hessian has exactly the spectrum
:func:`dpcompanion.theory.exact_risk.spectrum` (:func:`spectrum_data`), the Hong et al. 2022 Thm 4.4
schedule (:func:`dpcompanion.theory.schedules.gd_dynamic`, eta = 1/M) runs through the trainer with the
paper's clipping (clip 4) and, as the control, with clipping off in effect (noise of the same absolute
size); the mean final excess risk is divided by the *exact* one of unclipped PGD
(:func:`dpcompanion.theory.exact_risk.expected_excess_risk`). The control's ratio is ~1 (a check that
can fail); where the clipped ratio explodes, the schedule has broken. Beside it: the schedule's span
max sigma / min sigma and whether :func:`dpcompanion.theory.schedules.schedule_warnings` warns.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Sequence

import numpy as np
import torch

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module, sizes_line, totals
from dpcompanion.experiments.comparisons.rule import Case, Judgement, Rule
from dpcompanion.experiments.protocols import hong as hp
from dpcompanion.experiments.scale_tables import Dim, config_key, hong_setup
from dpcompanion.theory import exact_risk, schedules
from dpcompanion.training import influence
from dpcompanion.training.dense_models import DenseModel


TITLE = "Where the dynamic schedule breaks under clipping (H-X-EER)"
SCALE_NOTE = "beyond the paper: a grid of curvatures and lengths on a synthetic least-squares problem"
REPEATS_KEY = "runs"

__all__ = ["EXPERIMENT", "units", "run_unit", "combine", "describe", "warning_paragraph", "spectrum_data",
           "verdict_rows"]

CONFIGS = {
    "quick": {"kappas": [1.3, 3.0, 10.0, 100.0], "Ts": [10, 30, 100], "D": 10, "N": 100, "runs": 20},
    "full": {"kappas": [1.2, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0, 300.0], "Ts": [10, 20, 50, 100, 200],
             "D": 10, "N": 100, "runs": 100},
}
UNCLIPPED = 1e100  # no per-sample gradient norm comes near it (and sigma * 4 / 1e100 stays a normal float64)


def spectrum_data(*, kappa: float, D: int, N: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` whose least-squares Hessian ``X^T X / N`` is ``diag(spectrum(kappa, D))``.

    >>> X, y = spectrum_data(kappa=10.0, D=3, N=8, seed=0)
    >>> np.round(np.linalg.eigvalsh(X.T @ X / 8), 6).tolist()
    [0.1, 0.316228, 1.0]
    """
    if N < D:
        raise ValueError(f"N must be >= D = {D}, got {N}")
    rng = np.random.default_rng(seed)
    lam = exact_risk.spectrum(kappa=kappa, D=D)
    Q, _ = np.linalg.qr(rng.standard_normal((N, D)))
    X = math.sqrt(N) * Q * np.sqrt(lam)[None, :]
    return X, rng.integers(0, 2, size=N).astype(np.int64)


def units(config) -> list[dict]:
    cells = list(itertools.product(config["kappas"], config["Ts"]))
    return [{"kappa": float(k), "T": int(T), "D": int(config["D"]), "N": int(config["N"]),
             "runs": int(config["runs"]), "seed": s}
            for (k, T), s in zip(cells, hp.unit_seeds(config["seed"], len(cells)))]


def run_unit(unit, device) -> dict:
    t0 = time.perf_counter()
    s_data, s_run = hp.unit_seeds(unit["seed"], 2)
    X, y = spectrum_data(kappa=unit["kappa"], D=unit["D"], N=unit["N"], seed=s_data)
    model = DenseModel(in_dim=unit["D"], n_classes=2, loss="squared", bias=False)
    quad = influence.squared_loss_quadratic_of(model, X, y)
    lam = quad["eigenvalues"]
    eta = 1.0 / float(lam.max())
    out = {"kappa": unit["kappa"], "T": unit["T"], "runs": unit["runs"]}
    try:
        sigma = schedules.gd_dynamic(T=unit["T"], R=hp.R, kappa=unit["kappa"])
    except ValueError as e:  # beyond float64: the schedule itself refuses
        return out | {"representable": False, "reason": str(e), "span": math.inf, "warns": True,
                      "ratio_clipped": math.nan, "ratio_unclipped": math.nan, "exact": math.nan,
                      "z_unclipped": math.nan, "run_steps": 0, "wall_s": time.perf_counter() - t0}
    exact = exact_risk.expected_excess_risk(eigenvalues=lam, offset=quad["offset"], eta=eta, sigma=sigma,
                                            clip_norm=hp.CLIP, N=unit["N"])
    seeds = hp.unit_seeds(s_run, unit["runs"])
    res = {}
    run_steps = 0
    for name, clip in (("clipped", hp.CLIP), ("unclipped", UNCLIPPED)):
        # the unclipped control's noise is scaled to the same absolute size: std = C sigma / N with C = 4
        sig = sigma if name == "clipped" else sigma * (hp.CLIP / UNCLIPPED)
        with np.errstate(divide="ignore", over="ignore"):  # the control's tiny sigma has a huge nominal cost
            r = hp.run_batched(model, X, y, sigma_rows=np.tile(sig, (len(seeds), 1)), seeds=seeds,
                               R=None if name == "unclipped" else hp.R, device=device, lr=eta, clip_norm=clip,
                               dtype=torch.float64)
        run_steps += r["run_steps"]
        res[name] = r["final_loss"] - quad["f_star"]
    m_u, se_u = hp.mean_se(res["unclipped"])
    return out | {"representable": True, "reason": "", "span": schedules.schedule_span(sigma),
                  "sigma_max": float(sigma.max()), "warns": bool(schedules.schedule_warnings(sigma)),
                  "exact": float(exact), "mean_clipped": float(res["clipped"].mean()), "mean_unclipped": m_u,
                  "ratio_clipped": float(res["clipped"].mean() / exact), "ratio_unclipped": float(m_u / exact),
                  "z_unclipped": float((m_u - exact) / se_u) if se_u > 0 else 0.0,
                  "run_steps": int(run_steps), "wall_s": time.perf_counter() - t0}


def combine(config, results) -> dict:
    K, Tn = len(config["kappas"]), len(config["Ts"])

    def grid(key):
        a = np.full((Tn, K), np.nan)
        for i, r in enumerate(results):
            a[i % Tn, i // Tn] = r.get(key, np.nan)
        return a

    return {"kappas": np.asarray(config["kappas"], float), "Ts": np.asarray(config["Ts"]),
            "ratio_clipped": grid("ratio_clipped"), "ratio_unclipped": grid("ratio_unclipped"),
            "span": grid("span"), "warns": grid("warns"), "z_unclipped": grid("z_unclipped"),
            "cells": results, "config": dict(config), "R": hp.R, "clip_norm": hp.CLIP,
            **totals(results)}


def describe(payload) -> str:
    c = payload["config"]
    return sizes_line(c, f"kappa in {c['kappas']}, T in {c['Ts']}; least squares with D = {c['D']}, "
            f"N = {c['N']}; {c['runs']} runs per cell and clipping setting, float64; eta = 1/M; R = {payload['R']:.4g}; "
            f"clip norm {payload['clip_norm']:g} (control: {UNCLIPPED:g}); {payload['run_steps']} run-steps in "
            f"{payload['wall_s']:.1f} s.")


def warning_paragraph(payload, *, threshold: float = 10.0) -> str:
    """The landing page's warning: the cells where the clipped trainer's excess risk exceeds
    ``threshold`` times the exact one."""
    bad = [c for c in payload["cells"] if c["representable"] and c["ratio_clipped"] > threshold]
    caught = sum(bool(c["warns"]) for c in bad)
    worst = max(bad, key=lambda c: c["ratio_clipped"]) if bad else None
    if worst is None:
        return (f"**Dynamic schedules and clipping.** In our grid the Thm 4.4 schedule never did worse than "
                f"{threshold:g} times the exact risk of unclipped PGD.")
    return (f"**Warning: the Thm 4.4 dynamic schedule can break under clipping.** When the curvature guess "
            f"kappa is close to 1 or T is long, the schedule's first noise multipliers become enormous (its span "
            f"max/min sigma is gamma^(-(T-1)/4)); the bound and the exact risk of unclipped gradient descent do not "
            f"mind, but clipped gradients can never undo such a step. In {len(bad)} of "
            f"{len(payload['cells'])} (kappa, T) cells the clipped trainer's mean excess risk was more than "
            f"{threshold:g} times the exact unclipped value (worst: {worst['ratio_clipped']:.3g} times at kappa = "
            f"{worst['kappa']:g}, T = {worst['T']}); `schedule_warnings` (span above {schedules.MAX_SPAN:g}) flags {caught} of "
            f"them. Prefer a larger kappa guess, fewer steps, or an exponential schedule tuned on auxiliary data.")


def verdict_rows(payload, *, threshold: float = 10.0) -> list[dict]:
    """The unclipped control against the exact risk, and the breakdown (never judged: a finding)."""
    cells = [c for c in payload["cells"] if c["representable"]]
    return [
        comparisons.compare("h-x-eer-breakdown/control", sizes_match=True, z=[c["z_unclipped"] for c in cells]),
        comparisons.compare("h-x-eer-breakdown/clipped", sizes_match=True, item=f"clipped trainer / exact > {threshold:g}",
                            threshold=threshold, cells=[(c["kappa"], c["T"], c["ratio_clipped"]) for c in cells]),
    ]


# ------------------------------------------------------------------------ the paper's scale and this page's rules


PAPER_DIMS = hong_setup({
    "runs": Dim(None, "not in the paper (our experiment)", config_key("runs", "runs_mc", "repeats")),
})


#: |z| below which the unclipped control agrees with the exact risk
BREAKDOWN_Z_MAX = 3.0


def _judge_breakdown_control(*, z: Sequence[float]) -> Judgement:
    zmax = max(abs(float(x)) for x in z)
    return Judgement("agrees" if zmax < BREAKDOWN_Z_MAX else "disagrees",
                     f"our own check: the trainer without clipping reproduces the closed form (|z| < {BREAKDOWN_Z_MAX:g})",
                     ours=f"largest |z| over {len(z)} cells: {zmax:.2f}")


def _judge_breakdown_clipped(*, cells: Sequence[tuple[float, int, float]], threshold: float) -> Judgement:
    bad = [(k, T, r) for k, T, r in cells if r > threshold]
    return Judgement("not comparable", "a finding beyond the paper: the bound assumes no clipping; see the warning below",
                     ours="; ".join(f"kappa {k:g}, T {T}: {r:.3g}" for k, T, r in bad) or "none")


RULES: tuple[Rule, ...] = (
    Rule("h-x-eer-breakdown/control", "unclipped trainer vs exact E[f] - f* (control)", "-",
         f"agrees: every representable cell has |z| < {BREAKDOWN_Z_MAX:g}",
         _judge_breakdown_control,
         case=Case("our check: unclipped control within |z| < 3", {"z": [1.0, -2.0]}, {"z": [1.0, 5.0]})),
    Rule("h-x-eer-breakdown/clipped", "clipped trainer / exact above the threshold", "-",
         "never judged: a finding beyond the paper (the bound assumes no clipping)",
         _judge_breakdown_clipped, judged=False,
         case=Case("never judged: the row is shown, not judged", {"cells": [(1.3, 100, 3.6e6), (10.0, 10, 1.0)], "threshold": 10.0}, expect="not comparable")),
)


EXPERIMENT = from_module(__name__, id="h-x-eer-breakdown")
