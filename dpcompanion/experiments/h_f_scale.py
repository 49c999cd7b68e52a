"""H-F-SCALE: relative final loss of dynamic schedules vs the data scale (Hong et al. 2022,
the ICLR submission, Fig. 2 middle and Fig. 3 right, App. D "Results").

Per row (dataset, model) and data scale: the influence q_t of each step's noise (analytic for the
squared loss, :func:`dpcompanion.training.influence.analytic_influence`; else by retraining on a subset
of steps, sigma_t swept over [20, 200]); per T of the grid ``uni`` (Thm 4.2), ``dyn`` (Lemma 4.3's
optimum for q, the FAccT version, Eq. (10)) and ``exp`` (sigma_0 exp(-k t), k fitted to dyn on log
sigma); each run ``repeats`` times on paired seeds, the best T per method tuned on disjoint seeds
(:mod:`dpcompanion.experiments.protocols.tuning`; the stated T <= 100 is flagged when chosen and searched
past, up to :data:`T_BEYOND_MAX`); reported: ``(e_sched - e_uni) / e_uni`` and the term ``T Var(q_t)``
(q normalised to sum 1). Readings: a retrained q_t is estimated at T = ``T_infl`` and a shorter run
uses its last T values (q_t depends on the steps left), a longer one repeats its earliest; log q is
interpolated between the swept steps; estimates <= 0 are floored at 1e-3 of the largest.
"""

from __future__ import annotations

import math
import time
from typing import Sequence

import numpy as np

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module, sizes_line, totals
from dpcompanion.experiments.comparisons.rule import Case, DIRECTION, Judgement, Margin, Rule, judge_effect
from dpcompanion.experiments.protocols import hong as hp, tuning
from dpcompanion.experiments.scale_tables import (Dim, H_DNN_WIDTH, H_MNIST35, H_REPEATS, config_key, config_range,
                                                  hong_setup)
from dpcompanion.theory import schedules
from dpcompanion.training import data, influence
from dpcompanion.training.models import make_model


TITLE = "Relative final loss of dyn and exp vs the data scale (the ICLR submission, Fig. 2 middle, Fig. 3 right)"
SCALE_NOTE = ("full: the paper's N = 1000 and T up to 100, 100 repeats for the linear rows; the retrained influence "
              "on 10 of 100 steps with 20 repeats (paper: every step, 100 repeats); DNN row at 20 repeats; paper mode "
              "(`--mode paper`, a GPU job): every row at the paper's sizes")
REPEATS_KEY = "repeats"

__all__ = ["EXPERIMENT", "ROWS", "PAPER", "units", "run_unit", "combine", "describe", "verdict_rows",
           "influence_on_grid", "fit_exponential_rate"]

#: (dataset, model) rows of the ICLR submission's Fig. 3 (Fig. 2 middle is the MNIST35 squared row)
ROWS = (("synthetic", "logistic"), ("mnist35", "squared"), ("mnist35", "logistic"), ("mnist35", "dnn"))
#: the paper's sizes (the ICLR submission, App. D): N = 1000, best T in [1, 100], 100 repeats; DNN of the ICLR submission's Sec. 5: 100 hidden
PAPER = {"N": 1000, "T_max": 100, "repeats": 100, "hidden": 100}

STATED_T = "best T in [1, 100] (the ICLR submission, App. D: 'grid searching the best T in [1,100]')"
#: the beyond-the-paper search: linear and logistic rows step T geometrically (the grid's last
#: ratio) up to 1000 (a run-step costs microseconds there); the DNN row steps linearly up to 200
T_BEYOND_MAX = {"linear": 1000, "dnn": 200}

CONFIGS = {
    "quick": {"rows": [list(r) for r in ROWS], "N": 200, "scales": [5.0, 20.0], "T_grid": [10, 25],
              "repeats": 6, "tune_repeats": 4, "infl_steps": 4, "infl_levels": 3, "infl_repeats": 3, "hidden": 16,
              "dnn_repeats": 4, "dnn_tune_repeats": 2, "dnn_scales": [5.0, 20.0], "dnn_T_grid": [10, 25],
              "T_range": [1, 25], "max_rounds": 1},
    "full": {"rows": [list(r) for r in ROWS], "N": 1000, "scales": [5.0, 10.0, 15.0, 20.0, 25.0],
             "T_grid": [10, 20, 40, 70, 100], "repeats": 100, "tune_repeats": 30, "infl_steps": 10, "infl_levels": 5,
             "infl_repeats": 20, "hidden": 100, "dnn_repeats": 20, "dnn_tune_repeats": 10,
             "dnn_scales": [5.0, 15.0, 25.0], "dnn_T_grid": [25, 50, 100], "T_range": [1, 100], "max_rounds": 6},
}
#: the ICLR submission's App. D sizes for every row: the influence retrained at every step of T = 100
#: (10 levels of sigma_t, 100 repeats), the DNN row "with the same setting"; a GPU job (tools/gpu-runs.sh)
CONFIGS["paper"] = {**CONFIGS["full"], "infl_steps": 100, "infl_levels": 10, "infl_repeats": 100,
                    "dnn_repeats": 100, "dnn_tune_repeats": 30, "dnn_scales": list(CONFIGS["full"]["scales"]),
                    "dnn_T_grid": list(CONFIGS["full"]["T_grid"])}
KINDS = ("uni", "dyn", "exp")


def fit_exponential_rate(sigma) -> float:
    """Least-squares ``k`` of ``log sigma_t = a - k t`` (the ICLR submission, App. D: exp fitted to dyn).

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
                        "tune_repeats": config.get("dnn_tune_repeats" if dnn else "tune_repeats", 2),
                        "T_range": list(config.get("T_range", [1, PAPER["T_max"]])),
                        "max_rounds": int(config.get("max_rounds", 3)),
                        "hidden": config["hidden"], "infl_steps": config["infl_steps"],
                        "infl_levels": config["infl_levels"], "infl_repeats": config["infl_repeats"]})
    for u, s in zip(out, hp.unit_seeds(config["seed"], len(out))):
        u["seed"] = s
    return out


def _model(kind: str, hidden: int):
    if kind == "squared":
        return make_model("linear", in_dim=_DIMS["current"], n_classes=2)
    if kind == "logistic":
        return make_model("logistic", in_dim=_DIMS["current"], n_classes=2)
    return make_model("mlp", in_dim=_DIMS["current"], n_classes=2, hidden=int(hidden))


_DIMS = {"current": 0}


def run_unit(unit, device) -> dict:
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
    s_tune, s_rep = hp.unit_seeds(s_run, 2)
    tseeds = hp.unit_seeds(s_tune, int(unit["tune_repeats"]))
    seeds = hp.unit_seeds(s_rep, int(unit["repeats"]))
    tuning.disjoint_seeds(tseeds, seeds)
    n = len(seeds)
    sched: dict[int, dict] = {}
    clip = []

    def schedules_at(T: int) -> dict:
        if T not in sched:
            if T not in q_by_T:
                if unit["model"] == "squared":
                    q_by_T[T] = influence.analytic_influence(model, X, y, T=T, lr=hp.LR, clip_norm=hp.CLIP)
                elif T <= T_infl:  # q_t depends on the steps left: the last T values
                    q_by_T[T] = q_infl[T_infl - T:]
                else:  # beyond T_infl: the earliest estimate holds for the steps further from the end
                    q_by_T[T] = np.concatenate([np.full(T - T_infl, q_infl[0]), q_infl])
            uni = schedules.uniform(T=T, R=hp.R)
            if T == 1:
                dyn, k = uni, 0.0
            else:
                dyn = schedules.optimal(q=q_by_T[T], R=hp.R)
                k = fit_exponential_rate(dyn)
            sched[T] = {"uni": uni, "dyn": dyn, "exp": schedules.exponential(T=T, R=hp.R, rate=k), "rate": k}
        return sched[T]

    steps = [run_steps]

    def run(cands, sd):
        """final losses of (kind, T) candidates on seeds ``sd``, one trainer call per T."""
        out = {}
        for T in sorted({c[1] for c in cands}):
            ks = [c[0] for c in cands if c[1] == T]
            rows = np.concatenate([np.tile(schedules_at(T)[k], (len(sd), 1)) for k in ks])
            r = hp.run_batched(model, X, y, sigma_rows=rows, seeds=list(sd) * len(ks), R=hp.R, device=device)
            if np.any(r["stopped_early"]):
                raise RuntimeError("a budget-exact schedule stopped early: ledger and schedule disagree")
            steps[0] += r["run_steps"]
            clip.append(float(np.mean(r["clip_fraction"])))
            for j, k in enumerate(ks):
                out[(k, T)] = r["final_loss"][j * len(sd):(j + 1) * len(sd)]
        return out

    cache: dict[tuple, float] = {}

    def evaluate(kind):
        def f(cs):
            cands = [(kind, int(c["T"])) for c in cs]
            todo = [c for c in cands if c not in cache]
            if todo:
                cache.update({c: float(v.mean()) for c, v in run(todo, tseeds).items()})
            return [cache[c] for c in cands]
        return f

    lo, hi = (float(v) for v in unit["T_range"])
    text = STATED_T if (lo, hi) == (1.0, float(PAPER["T_max"])) else f"T in [{lo:g}, {hi:g}], this mode's stand-in for {STATED_T}"
    chosen, traces = {}, {}
    for setting in ("paper", "beyond"):
        stated = {"T": {"low": (lo, text), "high": (hi, text)}}
        if setting == "beyond":
            stated = {"T": {"low": (lo, text)}}
        chosen[setting], traces[setting] = {}, {}
        for kind in KINDS:
            grid = traces["paper"][kind]["grids"]["T"] if setting == "beyond" else T_grid
            dnn = unit["model"] == "dnn"
            ch, tr = tuning.tune(evaluate(kind), {"T": grid}, stated=stated, integer=("T",),
                                 scales={"T": "linear" if dnn else "log"},
                                 limits={"T": (1, T_BEYOND_MAX["dnn" if dnn else "linear"])},
                                 max_rounds=int(unit["max_rounds"]))
            chosen[setting][kind], traces[setting][kind] = int(ch["T"]), tr
    report = run(sorted({(k, T) for st in chosen.values() for k, T in st.items()}), seeds)
    records = []
    beyond_differs = chosen["beyond"] != chosen["paper"]
    for setting in ("paper", "beyond"):
        if setting == "beyond" and not beyond_differs and all(
                traces["beyond"][k]["grids"] == traces["paper"][k]["grids"] for k in KINDS):
            continue
        for kind in KINDS:
            records += tuning.record(traces[setting][kind], method=kind, tuning_seeds=tseeds, report_seeds=seeds,
                                     setting=setting, cell=f"{unit['dataset']}/{unit['model']}, scale {unit['scale']:g}")
    cands = sorted(cache)
    qn = q_infl / q_infl.sum()
    return {"dataset": unit["dataset"], "model": unit["model"], "scale": unit["scale"], "N": int(unit["N"]),
            "hidden": int(unit["hidden"]) if unit["model"] == "dnn" else 0, "T_grid": T_grid,
            "best_T": chosen["paper"], "best_T_beyond": chosen["beyond"], "beyond_differs": beyond_differs,
            "final_loss": {k: report[(k, chosen["paper"][k])] for k in KINDS},
            "final_loss_beyond": {k: report[(k, chosen["beyond"][k])] for k in KINDS},
            "tune_kind": [c[0] for c in cands], "tune_T": [c[1] for c in cands],
            "tune_loss": np.array([cache[c] for c in cands]), "tuning": records,
            "exp_rate": np.array([sched[T]["rate"] for T in T_grid]), "q_method": method,
            "q_steps": np.asarray(q_steps),
            "q_est": np.asarray(q_est, float), "q_se": np.asarray(q_se, float), "q": q_infl,
            "tvar": float(T_infl * np.var(qn)), "clip_fraction": float(np.mean(clip)),
            "repeats": n, "tune_repeats": len(tseeds), "run_steps": int(steps[0]), "wall_s": time.perf_counter() - t0}


def _add_setting(row: dict, r: dict, losses: dict, suffix: str) -> None:
    """Append one unit's best T per method and relative losses of dyn and exp (``suffix``: "" or "_beyond")."""
    for k in KINDS:
        row["best_T" + suffix][k].append(int(r["best_T" + suffix][k]))
    for k in ("dyn", "exp"):
        m, se = hp.relative_loss(losses[k], losses["uni"])
        row["rel" + suffix][k].append(m)
        row["rel_se" + suffix][k].append(se)


def combine(config, results) -> dict:
    rows: dict[str, dict] = {}
    for r in results:
        key = f"{r['dataset']}/{r['model']}"
        e = r["final_loss"]
        eb = r["final_loss_beyond"]
        row = rows.setdefault(key, {"scales": [], "tvar": [], "best_T": {k: [] for k in KINDS},
                                    "best_T_beyond": {k: [] for k in KINDS}, "beyond_differs": [],
                                    "rel": {k: [] for k in ("dyn", "exp")}, "rel_se": {k: [] for k in ("dyn", "exp")},
                                    "rel_beyond": {k: [] for k in ("dyn", "exp")},
                                    "rel_se_beyond": {k: [] for k in ("dyn", "exp")}, "mde_80": [],
                                    "loss_uni": [], "clip_fraction": [], "q_method": r["q_method"],
                                    "N": r["N"], "hidden": r["hidden"], "T_max": max(r["T_grid"]),
                                    "repeats": r["repeats"], "tune_repeats": r["tune_repeats"],
                                    "q": [], "q_steps": [], "q_est": [], "q_se": []})
        row["beyond_differs"].append(bool(r["beyond_differs"]))
        _add_setting(row, r, eb, "_beyond")
        row["scales"].append(r["scale"])
        row["tvar"].append(r["tvar"])
        row["loss_uni"].append(float(e["uni"].mean()))
        row["clip_fraction"].append(r["clip_fraction"])
        _add_setting(row, r, e, "")
        # the smallest relative loss of dyn a two-sided 5% test detects at 80% power here
        row["mde_80"].append(tuning.min_detectable(row["rel_se"]["dyn"][-1]))
        for k in ("q", "q_steps", "q_est", "q_se"):
            row[k].append(np.asarray(r[k]))
    for row in rows.values():
        m = row["hidden"] if row["hidden"] else PAPER["hidden"]
        row["sizes_match"] = bool(row["N"] == PAPER["N"] and row["T_max"] == PAPER["T_max"] and m == PAPER["hidden"])
    return {"rows": rows, "config": dict(config), "R": hp.R, "tuning": [e for r in results for e in r["tuning"]], "lr": hp.LR, "clip_norm": hp.CLIP,
            **totals(results)}


def describe(payload) -> str:
    c = payload["config"]
    return sizes_line(c, f"N = {c['N']} per dataset (paper: {PAPER['N']}); linear rows: scales "
            f"{c['scales']}, T grid {c['T_grid']}, {c['repeats']} repeats (paper: best T in [1, {PAPER['T_max']}], "
            f"{PAPER['repeats']} repeats; each method's T tuned on {c.get('tune_repeats', '?')} seeds disjoint from "
            f"the reported ones, a choice at T = {PAPER['T_max']} flagged and also tuned beyond it, up to T = "
            f"{T_BEYOND_MAX['linear']} (DNN: {T_BEYOND_MAX['dnn']})); retrained influence at T = {max(c['T_grid'])} on {c['infl_steps']} steps, "
            f"{c['infl_levels']} levels of sigma_t in [20, 200], {c['infl_repeats']} repeats; DNN row: "
            f"{c['hidden']} hidden units, scales {c['dnn_scales']}, T grid {c['dnn_T_grid']}, {c['dnn_repeats']} repeats ({c.get('dnn_tune_repeats', '?')} tuning seeds). "
            f"R = {payload['R']:.4g}, clip {payload['clip_norm']:g}, learning rate {payload['lr']:g}; "
            f"{payload['run_steps']} run-steps in {payload['wall_s']:.0f} s.")


def verdict_rows(payload) -> list[dict]:
    """The page's rows, capped by the tuning protocol (:func:`dpcompanion.experiments.comparisons.apply_tuning_cap`)."""
    out = []
    for key, row in payload["rows"].items():
        note = (f"N {row['N']} vs {PAPER['N']}, T up to {row['T_max']} vs {PAPER['T_max']}"
                + (f", {row['hidden']} hidden units" if row["hidden"] else ""))
        out.append(comparisons.compare("h-f-scale/dyn", sizes_match=row["sizes_match"], sizes_note=note,
                                       item=f"{key}: relative loss of dyn", scales=row["scales"],
                                       rel_dyn=row["rel"]["dyn"], se_dyn=row["rel_se"]["dyn"], tvar=row["tvar"]))
        if any(row.get("beyond_differs", [])):
            out.append(comparisons.compare(
                "h-f-scale/dyn", sizes_match=row["sizes_match"], sizes_note=note,
                item=f"{key}: relative loss of dyn, T beyond the paper's [1, {PAPER['T_max']}]",
                scales=row["scales"], rel_dyn=row["rel_beyond"]["dyn"], se_dyn=row["rel_se_beyond"]["dyn"],
                tvar=row["tvar"]))
    return [comparisons.apply_tuning_cap(r, payload.get("tuning")) for r in out]


# ------------------------------------------------------------------------ the paper's scale and this page's rules


PAPER_DIMS = hong_setup({
    "training samples": Dim(1000, H_MNIST35 + "; synthetic: \"1000 samples are generated for training\"",
                            config_key("N")),
    "hidden width (DNN row)": Dim(None, H_DNN_WIDTH, config_key("hidden")),
    "repeats": Dim(100, H_REPEATS, config_key("repeats")),
    "repeats (DNN row)": Dim(100, H_REPEATS, config_key("dnn_repeats")),
    # ours: the range the tuning searches (its grid extends down to 1 from T_grid's low end)
    "T range": Dim([1, 100], "the ICLR submission, App. D, Results: the final losses \"are picked by grid searching the best T in "
                   "[1, 100]\"", config_range("T_range")),
    "T range (DNN row)": Dim([1, 100], "the ICLR submission, App. D, Results: the DNN row \"is experimented with the same setting\"",
                             config_range("T_range")),
    "data scales": Dim(None, "the ICLR submission, App. D, Results: the data scale is varied (values in Fig. 3 only)",
                       config_key("scales")),
    "influence: steps estimated": Dim(100, "the ICLR submission, App. D: \"Repeating the estimation for all t in range "
                                      "1 to 100\"", config_key("infl_steps")),
    "influence: repeats": Dim(100, H_REPEATS, config_key("infl_repeats")),
    "influence: levels of sigma_t": Dim(None, "the ICLR submission, App. D: sigma_t \"is varied from 20 to 200\" (how many "
                                        "levels is not printed)", config_key("infl_levels")),
})


def _judge_scale(*, scales: Sequence[float], rel_dyn: Sequence[float], se_dyn: Sequence[float],
                 tvar: Sequence[float]) -> Judgement:
    """Relative loss of dyn (negative = better than uni) against the influence spread."""
    sc, r, s, tv = [float(x) for x in scales], np.asarray(rel_dyn, float), np.asarray(se_dyn, float), np.asarray(tvar, float)
    if len(sc) < 1 or not (r.shape == s.shape == tv.shape == (len(sc),)):
        raise ValueError("scales, rel_dyn, se_dyn and tvar must have the same length >= 1")
    ours = "; ".join(f"scale {x:g}: {a:+.3g} ± {b:.2g}" for x, a, b in zip(sc, r, s))
    k = int(np.nanargmax(tv))
    j = judge_effect(float(r[k]), float(s[k]), direction=-1, design=comparisons.design_of("h-f-scale/dyn"))
    return j.for_row(ours, remark=f"; judged at the scale of largest T·Var(q) ({sc[k]:g}); negative = dyn below uni")


RULES: tuple[Rule, ...] = (
    Rule("h-f-scale/dyn", "relative final loss of dyn vs data scale",
         "the ICLR submission, Sec. 5 and App. D (Fig. 2 middle, Fig. 3 right): dynamic schedules improve the final loss when the "
         "variance of influence is large",
         f"(e_dyn - e_uni)/e_uni at the scale of largest T·Var(q), claimed below zero; {DIRECTION}",
         _judge_scale,
         design=("paired", "every schedule runs on the same seeds (h_f_scale, protocols.hong.relative_loss with "
                                    "the covariance)"),
         margin=Margin(0.01, "relative final loss (e_dyn - e_uni) / e_uni", "smallest effect of interest",
                                "smallest effect of interest: 1% of uni's loss, the relative form of the Hong loss margin"),
         case=Case("the ICLR submission, Fig. 2 middle: dyn improves the final loss where the influence spread is largest",
                   {"scales": [5, 25], "rel_dyn": [-0.01, -0.1], "se_dyn": [0.01, 0.01], "tvar": [0.1, 0.5]},
                   {"scales": [5, 25], "rel_dyn": [0.05, 0.1], "se_dyn": [0.01, 0.01], "tvar": [0.1, 0.5]})),
)


EXPERIMENT = from_module(__name__, id="h-f-scale")
