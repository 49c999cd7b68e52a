"""H-F-CURV: private gradient descent repeated on two losses of different curvature
(Hong et al. 2022, the ICLR submission, Fig. 1 and Sec. 4.1.3 "Robustness"; FAccT version, Sec.
4.1.3 makes the same sharp-loss argument without the figure).

The paper gives no sizes for this toy figure; ours are chosen and stated. Both losses
are one-parameter squared losses run through the library's trainer (a linear model
without bias, per-sample clipping at 4, learning rate 0.1, the uniform schedule at the
paper's budget R, the ledger charged before every noisy step):

    f_c(w) = (1/N) sum_n (w x_n - s_n)^2 / 2,  x_n = c s_n,  s_n = +-1,

so ``f_c(w) = (c w - 1)^2 / 2``: curvature (Hessian) ``M = c^2``, minimum 0 at
``w* = 1/c``, the same starting loss 1/2 at ``w = 0`` for every c. Each run's
trajectory of ``f(theta_t)`` and its final loss are recorded; the mean final loss of
each curvature is compared with the exact expectation of PGD on a quadratic
(:func:`dpcompanion.theory.exact_risk.expected_excess_risk`, exact while nothing is
clipped) - a check that fails if the trainer and the closed form disagree.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module, sizes_line, totals
from dpcompanion.experiments.protocols import hong as hp
from dpcompanion.theory import exact_risk, schedules
from dpcompanion.training.dense_models import DenseModel

__all__ = ["EXPERIMENT", "units", "run_unit", "combine", "describe", "verdict_rows", "toy_data"]

PAPER_REPEATS = 100  # the ICLR submission's Fig. 1 caption: "repeated 100 times"

CONFIGS = {
    "quick": {"curvatures": [1.0, 15.0], "N": 100, "T": 100, "repeats": 100},
    # full: the group-sequential plan's cap (comparisons.rows.SEQUENTIAL: looks at 1,000, 4,000 and 16,000
    # repeats; a unit's seeds are a prefix of a longer run's, SeedSequence.spawn)
    "full": {"curvatures": [1.0, 15.0], "N": 100, "T": 100, "repeats": 16000},
}


def toy_data(*, curvature: float, N: int) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` with ``x_n = sqrt(curvature) s_n``, ``s_n = 2 y_n - 1`` alternating, so that
    the squared loss of a bias-free linear model is ``(sqrt(curvature) w - 1)^2 / 2``.

    >>> X, y = toy_data(curvature=4.0, N=4)
    >>> X[:, 0].tolist(), y.tolist()
    ([-2.0, 2.0, -2.0, 2.0], [0, 1, 0, 1])
    """
    if not (math.isfinite(curvature) and curvature > 0):
        raise ValueError(f"curvature must be a finite number > 0, got {curvature}")
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 2:
        raise ValueError(f"N must be an integer >= 2, got {N!r}")
    y = np.arange(N) % 2
    s = 2.0 * y - 1.0
    return (math.sqrt(curvature) * s)[:, None], y.astype(np.int64)


def units(config) -> list[dict]:
    seeds = hp.unit_seeds(config["seed"], len(config["curvatures"]))
    return [{"curvature": float(c), "N": int(config["N"]), "T": int(config["T"]), "repeats": int(config["repeats"]),
             "seed": s} for c, s in zip(config["curvatures"], seeds)]


def run_unit(unit, device) -> dict:
    t0 = time.perf_counter()
    X, y = toy_data(curvature=unit["curvature"], N=unit["N"])
    model = DenseModel(in_dim=1, n_classes=2, loss="squared", bias=False)
    sigma = schedules.uniform(T=unit["T"], R=hp.R)
    seeds = hp.unit_seeds(unit["seed"], unit["repeats"])
    r = hp.run_batched(model, X, y, sigma_rows=np.tile(sigma, (len(seeds), 1)), seeds=seeds, R=hp.R,
                       device=device, dtype=torch.float64)
    if np.any(r["stopped_early"]):
        raise RuntimeError("the uniform schedule stopped early: ledger and schedule disagree")
    c = math.sqrt(unit["curvature"])
    exact = exact_risk.expected_excess_risk(eigenvalues=[unit["curvature"]], offset=[-1.0 / c], eta=hp.LR,
                                            sigma=sigma, clip_norm=hp.CLIP, N=unit["N"])
    curves = np.concatenate([r["loss_curve"], r["final_loss"][:, None]], axis=1)  # f(theta_1..theta_{T+1})
    return {"curvature": unit["curvature"], "final_loss": r["final_loss"], "curves": curves[: min(100, len(seeds))],
            "mean_curve": curves.mean(axis=0), "exact": float(exact), "clip_fraction": float(np.max(r["clip_fraction"])),
            "repeats": len(seeds), "run_steps": r["run_steps"], "wall_s": time.perf_counter() - t0}


def combine(config, results) -> dict:
    out = {"config": dict(config), "R": hp.R, "lr": hp.LR, "clip_norm": hp.CLIP, "units": results,
           **totals(results)}
    out["summary"] = []
    for r in results:
        m, se = hp.mean_se(r["final_loss"])
        out["summary"].append({"curvature": r["curvature"], "mean": m, "se": se, "exact": r["exact"],
                               "z_exact": (m - r["exact"]) / se if se > 0 else 0.0,
                               "max_clip_fraction": r["clip_fraction"]})
    return out


def describe(payload) -> str:
    c = payload["config"]
    return sizes_line(c, f"Curvatures M = {c['curvatures']} (x_n = ±sqrt(M)), N = {c['N']}, "
            f"T = {c['T']}, uniform schedule, {c['repeats']} repeats per loss (the paper: 100 repeats, sizes not "
            f"printed); R = {payload['R']:.4g}, clip {payload['clip_norm']:g}, learning rate {payload['lr']:g}; "
            f"{payload['run_steps']} run-steps in {payload['wall_s']:.1f} s.")


def verdict_rows(payload) -> list[dict]:
    """The sharp-vs-flat row (rule ``h-f-curv/sharp-vs-flat``; the paper prints no sizes for
    this toy, so only its shape is compared) and, per curvature, our trainer against the
    exact E[f] (rule ``h-f-curv/exact``, our own check)."""
    s = sorted(payload["summary"], key=lambda r: r["curvature"])
    losses = {float(u["curvature"]): np.asarray(u["final_loss"], dtype=float) for u in payload["units"]}
    plan = comparisons.plan_of("h-f-curv")
    flat, sharp = s[0], s[-1]
    rows = [comparisons.compare("h-f-curv/sharp-vs-flat", sizes_match=True, sharp=sharp["mean"], sharp_se=sharp["se"],
                                flat=flat["mean"], flat_se=flat["se"], sharp_losses=losses[float(sharp["curvature"])],
                                flat_losses=losses[float(flat["curvature"])], plan=plan)]
    for r in s:
        rows.append(comparisons.compare("h-f-curv/exact", sizes_match=True,
                                        item=f"M = {r['curvature']:g}: trainer mean vs exact E[f] (not in the paper)",
                                        mean=float(r["mean"]), se=float(r["se"]), exact=float(r["exact"]),
                                        z=float(r["z_exact"]), max_clip_fraction=float(r["max_clip_fraction"]),
                                        losses=losses[float(r["curvature"])], plan=plan))
    return rows


EXPERIMENT = from_module(__name__, id="h-f-curv",
    title="PGD repeated on two losses of different curvature (the ICLR submission, Fig. 1)",
    scale_note="the paper prints no sizes for this toy; full mode runs 16,000 repeats (the paper: 100), judged at 1,000, "
               "4,000 and 16,000 by a group-sequential plan",
    repeats_key="repeats",
)
