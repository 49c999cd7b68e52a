"""H-F-INFL, the rows the ``h-f-infl`` page does not have: the influence q_t estimated by
retraining for the **logistic loss on the synthetic data** and for the **DNN** on MNIST35
(Hong et al. 2022, the ICLR submission's App. D, Fig. 3 middle, first and last rows).

Protocol as on the ``h-f-infl`` page (the ICLR submission, App. D "Estimate of influences by retraining"):
every step at the tuned uniform sigma = sqrt(T/R) except step t, whose sigma_t is swept
over [20, 200]; the final loss fitted as c sigma_t^2 + c0 per repeat; q_t ~ c
(:func:`dpcompanion.training.influence.influence_by_retraining`, one batched trainer
program, common random numbers within a repeat, no ledger: an analysis, not a release).

Sizes. The paper sweeps every t = 1..100 with 100 repeats (10^7 run-steps per row; the
DNN costs ~0.37 GFLOP per run-step at 1000 hidden units). Full mode here sweeps every
5th step with 10 levels and 20 repeats (synthetic), and the DNN with 100 hidden units
on 10 steps, 5 levels, 5 repeats; :data:`PAPER_SCALE` is the paper's size for a GPU or a
cluster.
"""

from __future__ import annotations

import math
import time

import numpy as np

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module, totals
from dpcompanion.experiments.protocols import hong as hp
from dpcompanion.training import data, influence
from dpcompanion.training.models import make_model

__all__ = ["EXPERIMENT", "PAPER_SCALE", "units", "run_unit", "combine", "describe", "verdict_rows"]

ROWS = (("synthetic", "logistic"), ("mnist35", "dnn"))
CONFIGS = {
    "quick": {"rows": [list(r) for r in ROWS], "N": 300, "T": 30, "step_every": 5, "levels": 3, "repeats": 5,
              "hidden": 16, "dnn_step_every": 5, "dnn_levels": 3, "dnn_repeats": 2},
    "full": {"rows": [list(r) for r in ROWS], "N": 1000, "T": 100, "step_every": 5, "levels": 10, "repeats": 20,
             "hidden": 100, "dnn_step_every": 10, "dnn_levels": 5, "dnn_repeats": 5},
}
#: the paper's size (the ICLR submission, App. D): every step of T = 100, 10 levels, 100 repeats; DNN 1000 hidden (the FAccT version, Sec. 5)
PAPER_SCALE = {**CONFIGS["full"], "step_every": 1, "repeats": 100, "hidden": 1000, "dnn_step_every": 1,
               "dnn_levels": 10, "dnn_repeats": 100}


def units(config) -> list[dict]:
    out = []
    for (ds, kind), s in zip(config["rows"], hp.unit_seeds(config["seed"], len(config["rows"]))):
        dnn = kind == "dnn"
        out.append({"dataset": ds, "model": kind, "N": int(config["N"]), "T": int(config["T"]),
                    "step_every": int(config["dnn_step_every" if dnn else "step_every"]),
                    "levels": int(config["dnn_levels" if dnn else "levels"]),
                    "repeats": int(config["dnn_repeats" if dnn else "repeats"]), "hidden": int(config["hidden"]),
                    "seed": s})
    return out


def run_unit(unit, device) -> dict:
    t0 = time.perf_counter()
    s_data, s_run = hp.unit_seeds(unit["seed"], 2)
    d = data.load(unit["dataset"], seed=s_data, n=unit["N"], scale=hp.SCALE)
    if unit["model"] == "dnn":
        model = make_model("mlp", in_dim=d.dim, n_classes=2, hidden=unit["hidden"])
    else:
        model = make_model(unit["model"] if unit["model"] == "logistic" else "linear", in_dim=d.dim, n_classes=2)
    T = unit["T"]
    steps = np.arange(1, T + 1, unit["step_every"])
    if steps[-1] != T:
        steps = np.append(steps, T)
    est = influence.influence_by_retraining(model, d.X_train, d.y_train, T=T, base_sigma=math.sqrt(T / hp.R),
                                            levels=np.linspace(20.0, 200.0, unit["levels"]), steps=steps,
                                            repeats=unit["repeats"], clip_norm=hp.CLIP, lr=hp.LR, seed=s_run,
                                            device=device)
    return {"dataset": unit["dataset"], "model": unit["model"], "hidden": unit["hidden"] if unit["model"] == "dnn" else 0,
            "N": unit["N"], "T": T, "steps": est.steps, "q": est.q, "q_se": est.q_se, "coef": est.coef,
            "coef_relative_variance": est.coef_relative_variance, "clip_fraction": est.clip_fraction,
            "levels": unit["levels"], "step_every": unit["step_every"], "repeats": unit["repeats"], "runs": int(est.runs), "run_steps": int(est.runs) * T,
            "wall_s": time.perf_counter() - t0}


def _thirds(r) -> tuple[float, float]:
    """Mean q over the last third of the swept steps minus the first third, and its SE
    (from the per-repeat coefficients)."""
    st, c = np.asarray(r["steps"]), np.asarray(r["coef"])  # (n_steps, repeats)
    T = r["T"]
    first, last = st <= T / 3, st > 2 * T / 3
    per_repeat = c[last].mean(axis=0) - c[first].mean(axis=0)
    return hp.mean_se(per_repeat)


def combine(config, results) -> dict:
    rows = {}
    for r in results:
        m, se = _thirds(r)
        rows[f"{r['dataset']}/{r['model']}"] = {**r, "late_minus_early": m, "late_minus_early_se": se,
                                                "sizes_match": bool(r["T"] == 100 and r["N"] == 1000
                                                                    and r["step_every"] == 1
                                                                    and r["repeats"] >= 100)}
    return {"rows": rows, "config": dict(config), "R": hp.R, "lr": hp.LR, "clip_norm": hp.CLIP,
            **totals(results)}


def describe(payload) -> str:
    parts = []
    for k, r in payload["rows"].items():
        parts.append(f"{k}: N = {r['N']}, T = {r['T']}, {len(r['steps'])} swept steps, {r['levels']} levels of "
                     f"sigma_t in [20, 200], {r['repeats']} repeats ({r['runs']} runs)"
                     + (f", {r['hidden']} hidden units" if r["hidden"] else "")
                     + f", {100 * r['clip_fraction']:.0f}% of gradients clipped")
    c = payload["config"]
    return (f"**Sizes ({c['mode']} mode).** " + "; ".join(parts) + ". The paper: every step of T = 100, 10 levels, "
            f"100 repeats, N = 1000. {payload['run_steps']} run-steps in {payload['wall_s']:.0f} s.")


def verdict_rows(payload) -> list[dict]:
    out = []
    for k, r in payload["rows"].items():
        note = f"T {r['T']}, N {r['N']}, every {r['step_every']}th step, {r['repeats']} repeats vs every step, 100 repeats"
        out.append(comparisons.compare("h-f-infl-extra/increasing", sizes_match=r["sizes_match"], sizes_note=note,
                                       item=f"{k}: q_t late vs early", diff=r["late_minus_early"],
                                       se=r["late_minus_early_se"]))
    return out


EXPERIMENT = from_module(__name__, id="h-f-infl-extra",
    title="Influence by retraining: logistic loss on synthetic data and the DNN (the ICLR submission, Fig. 3 middle)",
    scale_note="full: every 5th step with 20 repeats (synthetic) and a 100-hidden-unit DNN on 10 steps with 5 repeats; "
               "PAPER_SCALE is every step with 100 repeats",
)
