"""H-F-SCALE: relative final loss of dynamic schedules vs the data scale (Hong et al. 2022,
file 000 Fig. 2 middle and Fig. 3 right, App. D "Results", last paragraphs).

For each row (logistic loss on the synthetic set; squared and logistic loss on MNIST35;
the DNN on MNIST35) and each data scale (max_n ||x_n||, 000 App. D "Setup"):

1. the influence q_t of each step's noise at ``T_infl`` steps of the uniform schedule:
   **analytic** for the squared loss (Hessian eigenvalues, exact for every T:
   :func:`dpcompanion.training.influence.analytic_influence`, as the paper does), by
   **retraining** otherwise (:func:`dpcompanion.training.influence.influence_by_retraining`
   on a subset of steps, sigma_t swept over [20, 200]);
2. for every T of the grid: ``uni`` (Thm 4.2), ``dyn`` = Lemma 4.3's optimal schedule for
   the estimated q (001 Eq. (10)), ``exp`` = sigma_0 exp(-k t) with k fitted to dyn by
   least squares on log sigma (000 App. D) and sigma_0 set to spend R exactly;
3. every schedule run ``repeats`` times with the ledger (R = 0.3927), paired seeds; the
   best T per method (lowest mean final loss) and the relative loss
   ``(e_sched - e_uni) / e_uni`` with its delta-method SE; the dashed term ``T Var(q_t)``
   with q normalised to sum 1 (the figure's normalisation is not printed).

Readings where the paper is ambiguous: the retrained q_t is estimated at T = ``T_infl``
only and a shorter run uses its last T values (q_t depends on the steps left, as in
Thm 4.1's gamma^{T-t}); between the swept steps log q is interpolated linearly;
estimates <= 0 (noise) are floored at 1e-3 of the largest; the best T is searched on a
grid in [1, 100] rather than every integer.
"""

from __future__ import annotations

import math
import time

import numpy as np

from dpcompanion.experiments import hong_protocol as hp
from dpcompanion.experiments.base import Experiment

__all__ = ["EXPERIMENT", "ROWS", "PAPER", "units", "run_unit", "combine", "describe", "verdict_rows",
           "influence_on_grid", "fit_exponential_rate"]

#: (dataset, model) rows of 000 Fig. 3 (Fig. 2 middle is the MNIST35 squared row)
ROWS = (("synthetic", "logistic"), ("mnist35", "squared"), ("mnist35", "logistic"), ("mnist35", "dnn"))
#: the paper's sizes (000 App. D): N = 1000, best T in [1, 100], 100 repeats; DNN of 000 Sec. 5: 100 hidden
PAPER = {"N": 1000, "T_max": 100, "repeats": 100, "hidden": 100}

CONFIGS = {
    "quick": {"rows": [list(r) for r in ROWS], "N": 200, "scales": [5.0, 20.0], "T_grid": [10, 25],
              "repeats": 6, "infl_steps": 4, "infl_levels": 3, "infl_repeats": 3, "hidden": 16,
              "dnn_repeats": 4, "dnn_scales": [5.0, 20.0], "dnn_T_grid": [10, 25]},
    "full": {"rows": [list(r) for r in ROWS], "N": 1000, "scales": [5.0, 10.0, 15.0, 20.0, 25.0],
             "T_grid": [10, 20, 40, 70, 100], "repeats": 100, "infl_steps": 10, "infl_levels": 5,
             "infl_repeats": 20, "hidden": 100, "dnn_repeats": 20, "dnn_scales": [5.0, 15.0, 25.0],
             "dnn_T_grid": [25, 50, 100]},
}
KINDS = ("uni", "dyn", "exp")


def fit_exponential_rate(sigma) -> float:
    """Least-squares ``k`` of ``log sigma_t = a - k t`` (000 App. D: exp fitted to dyn).

    >>> round(fit_exponential_rate(3.0 * np.exp(-0.2 * np.arange(1, 6))), 12)
    0.2
    """
    s = np.asarray(sigma, dtype=float)
    if s.ndim != 1 or s.size < 2 or np.any(~np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"sigma must be >= 2 finite values > 0, got {sigma!r}"[:200])
    t = np.arange(1, s.size + 1, dtype=float)
    return float(-np.polyfit(t, np.log(s), 1)[0])


def influence_on_grid(steps, q, *, T: int, floor: float = 1e-3) -> np.ndarray:
    """q_1..q_T from estimates at ``steps`` (1-based) of a ``T``-step run: values <= 0 are
    floored at ``floor`` x the largest, log q interpolated linearly in t (constant
    beyond the ends).

    >>> influence_on_grid([1, 3], [1.0, 4.0], T=3).round(6).tolist()
    [1.0, 2.0, 4.0]
    """
    st, qa = np.asarray(steps, dtype=float), np.asarray(q, dtype=float)
    if st.shape != qa.shape or st.size < 1:
        raise ValueError(f"steps and q must have the same length >= 1, got {st.shape} and {qa.shape}")
    top = np.nanmax(qa)
    if not (np.isfinite(top) and top > 0):
        raise ValueError(f"no positive influence estimate among {qa.tolist()}")
    qa = np.where(np.isfinite(qa) & (qa > floor * top), qa, floor * top)
    return np.exp(np.interp(np.arange(1, T + 1, dtype=float), st, np.log(qa)))


def units(config) -> list[dict]:
    out = []
    for ds, kind in config["rows"]:
        dnn = kind == "dnn"
        for scale in (config["dnn_scales"] if dnn else config["scales"]):
            out.append({"dataset": ds, "model": kind, "scale": float(scale), "N": config["N"],
                        "T_grid": config["dnn_T_grid"] if dnn else config["T_grid"],
                        "repeats": config["dnn_repeats"] if dnn else config["repeats"],
                        "hidden": config["hidden"], "infl_steps": config["infl_steps"],
                        "infl_levels": config["infl_levels"], "infl_repeats": config["infl_repeats"]})
    for u, s in zip(out, hp.unit_seeds(config["seed"], len(out))):
        u["seed"] = s
    return out


def _model(kind: str, hidden: int):
    from dpcompanion.training.models import make_model

    if kind == "squared":
        return make_model("linear", in_dim=_DIMS["current"], n_classes=2)
    if kind == "logistic":
        return make_model("logistic", in_dim=_DIMS["current"], n_classes=2)
    return make_model("mlp", in_dim=_DIMS["current"], n_classes=2, hidden=int(hidden))


_DIMS = {"current": 0}


def run_unit(unit, device) -> dict:
    from dpcompanion.theory import schedules
    from dpcompanion.training import data, influence

    t0 = time.perf_counter()
    s_data, s_infl, s_run = hp.unit_seeds(unit["seed"], 3)
    d = data.load(unit["dataset"], seed=s_data, n=int(unit["N"]), scale=unit["scale"])
    X, y = d.X_train, d.y_train
    _DIMS["current"] = X.shape[1]
    model = _model(unit["model"], unit["hidden"])
    T_grid = [int(T) for T in unit["T_grid"]]
    T_infl = max(T_grid)
    run_steps = 0
    if unit["model"] == "squared":
        q_by_T = {T: influence.analytic_influence(model, X, y, T=T, lr=hp.LR, clip_norm=hp.CLIP) for T in T_grid}
        q_infl, method = q_by_T[T_infl], "analytic (Hessian eigenvalues)"
        q_steps, q_est, q_se = np.arange(1, T_infl + 1), q_infl, np.zeros(T_infl)
    else:
        q_steps = np.unique(np.linspace(1, T_infl, int(unit["infl_steps"])).round().astype(int))
        est = influence.influence_by_retraining(
            model, X, y, T=T_infl, base_sigma=math.sqrt(T_infl / hp.R),
            levels=np.linspace(20.0, 200.0, int(unit["infl_levels"])), steps=q_steps,
            repeats=int(unit["infl_repeats"]), clip_norm=hp.CLIP, lr=hp.LR, seed=s_infl, device=device)
        run_steps += int(est.runs) * T_infl
        q_est, q_se = est.q, est.q_se
        q_infl, method = influence_on_grid(q_steps, q_est, T=T_infl), "retraining"
        q_by_T = {T: q_infl[T_infl - T:] for T in T_grid}
    seeds = hp.unit_seeds(s_run, int(unit["repeats"]))
    n = len(seeds)
    final = {k: np.zeros((len(T_grid), n)) for k in KINDS}
    rates, clip = [], []
    for i, T in enumerate(T_grid):
        uni = schedules.uniform(T=T, R=hp.R)
        if T == 1:
            dyn, k = uni, 0.0
        else:
            dyn = schedules.optimal(q=q_by_T[T], R=hp.R)
            k = fit_exponential_rate(dyn)
        rates.append(k)
        exp = schedules.exponential(T=T, R=hp.R, rate=k)
        rows = np.concatenate([np.tile(s, (n, 1)) for s in (uni, dyn, exp)])
        r = hp.run_batched(model, X, y, sigma_rows=rows, seeds=seeds * 3, R=hp.R, device=device)
        if np.any(r["stopped_early"]):
            raise RuntimeError("a budget-exact schedule stopped early: ledger and schedule disagree")
        run_steps += r["run_steps"]
        clip.append(float(np.mean(r["clip_fraction"])))
        for j, kind in enumerate(KINDS):
            final[kind][i] = r["final_loss"][j * n:(j + 1) * n]
    qn = q_infl / q_infl.sum()
    return {"dataset": unit["dataset"], "model": unit["model"], "scale": unit["scale"], "N": int(unit["N"]),
            "hidden": int(unit["hidden"]) if unit["model"] == "dnn" else 0, "T_grid": T_grid,
            "final_loss": final, "exp_rate": np.array(rates), "q_method": method, "q_steps": np.asarray(q_steps),
            "q_est": np.asarray(q_est, float), "q_se": np.asarray(q_se, float), "q": q_infl,
            "tvar": float(T_infl * np.var(qn)), "clip_fraction": float(np.mean(clip)),
            "repeats": n, "run_steps": int(run_steps), "wall_s": time.perf_counter() - t0}


def combine(config, results) -> dict:
    rows: dict[str, dict] = {}
    for r in results:
        key = f"{r['dataset']}/{r['model']}"
        best = {k: int(np.argmin(r["final_loss"][k].mean(axis=1))) for k in KINDS}
        e = {k: r["final_loss"][k][best[k]] for k in KINDS}
        row = rows.setdefault(key, {"scales": [], "tvar": [], "best_T": {k: [] for k in KINDS},
                                    "rel": {k: [] for k in ("dyn", "exp")}, "rel_se": {k: [] for k in ("dyn", "exp")},
                                    "loss_uni": [], "clip_fraction": [], "q_method": r["q_method"],
                                    "N": r["N"], "hidden": r["hidden"], "T_max": max(r["T_grid"]),
                                    "repeats": r["repeats"], "q": [], "q_steps": [], "q_est": [], "q_se": []})
        row["scales"].append(r["scale"])
        row["tvar"].append(r["tvar"])
        row["loss_uni"].append(float(e["uni"].mean()))
        row["clip_fraction"].append(r["clip_fraction"])
        for k in KINDS:
            row["best_T"][k].append(r["T_grid"][best[k]])
        for k in ("dyn", "exp"):
            m, se = hp.relative_loss(e[k], e["uni"])
            row["rel"][k].append(m)
            row["rel_se"][k].append(se)
        for k in ("q", "q_steps", "q_est", "q_se"):
            row[k].append(np.asarray(r[k]))
    for row in rows.values():
        m = row["hidden"] if row["hidden"] else PAPER["hidden"]
        row["sizes_match"] = bool(row["N"] == PAPER["N"] and row["T_max"] == PAPER["T_max"] and m == PAPER["hidden"])
    return {"rows": rows, "config": dict(config), "R": hp.R, "lr": hp.LR, "clip_norm": hp.CLIP,
            "run_steps": int(sum(r["run_steps"] for r in results)),
            "wall_s": float(sum(r["wall_s"] for r in results))}


def describe(payload) -> str:
    c = payload["config"]
    return (f"**Sizes ({c['mode']} mode).** N = {c['N']} per dataset (paper: {PAPER['N']}); linear rows: scales "
            f"{c['scales']}, T grid {c['T_grid']}, {c['repeats']} repeats (paper: best T in [1, {PAPER['T_max']}], "
            f"{PAPER['repeats']} repeats); retrained influence at T = {max(c['T_grid'])} on {c['infl_steps']} steps, "
            f"{c['infl_levels']} levels of sigma_t in [20, 200], {c['infl_repeats']} repeats; DNN row: "
            f"{c['hidden']} hidden units, scales {c['dnn_scales']}, T grid {c['dnn_T_grid']}, {c['dnn_repeats']} repeats. "
            f"R = {payload['R']:.4g}, clip {payload['clip_norm']:g}, learning rate {payload['lr']:g}; "
            f"{payload['run_steps']} run-steps in {payload['wall_s']:.0f} s.")


def verdict_rows(payload) -> list[dict]:
    from dpcompanion.experiments import comparisons

    out = []
    for key, row in payload["rows"].items():
        note = (f"N {row['N']} vs {PAPER['N']}, T up to {row['T_max']} vs {PAPER['T_max']}"
                + (f", {row['hidden']} hidden units" if row["hidden"] else ""))
        out.append(comparisons.compare("h-f-scale/dyn", sizes_match=row["sizes_match"], sizes_note=note,
                                       item=f"{key}: relative loss of dyn", scales=row["scales"],
                                       rel_dyn=row["rel"]["dyn"], se_dyn=row["rel_se"]["dyn"], tvar=row["tvar"]))
    return out


EXPERIMENT = Experiment(
    id="h-f-scale",
    title="Relative final loss of dyn and exp vs the data scale (000 Fig. 2 middle, Fig. 3 right)",
    configs=CONFIGS,
    units=units,
    run_unit=run_unit,
    combine=combine,
    depends_on=("dpcompanion.experiments.hong_protocol", "dpcompanion.training.data", "dpcompanion.training.models",
                "dpcompanion.training.trainers", "dpcompanion.training.influence", "dpcompanion.theory.schedules"),
    scale_note="full: the paper's N = 1000 and T up to 100, 100 repeats for the linear rows; the retrained influence "
               "on 10 of 100 steps with 20 repeats (paper: every step, 100 repeats); DNN row at 20 repeats",
)
