"""H-F-INFL, the rows the ``h-f-infl`` page does not have: the influence q_t estimated by retraining for
the **logistic loss on the synthetic data** and for the **DNN** on MNIST35 (Hong et al. 2022, the ICLR
submission's App. D, Fig. 3 middle, first and last rows), by the ``h-f-infl`` page's protocol
(:func:`dpcompanion.training.influence.influence_by_retraining`; no ledger: an analysis, not a release).

The DNN's width is not printed for this figure ("the DNN is experimented with the same setting"); we
read it as the only DNN the ICLR submission describes, 2 layers and 100 hidden units (its Sec. 5). In
paper mode (:data:`PAPER_SCALE`, every step, 10 levels, 100 repeats) the DNN row is one unit per swept
step (a repeat's runs share their seed across units), resumable over sittings (CPU hours).
"""

from __future__ import annotations

import math
import time

import numpy as np

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module, totals
from dpcompanion.experiments.comparisons.rule import Case, DIRECTION, Judgement, Margin, Rule, judge_effect
from dpcompanion.experiments.protocols import hong as hp
from dpcompanion.experiments.scale_tables import Dim, H_DNN_WIDTH, H_MNIST35, H_REPEATS, config_key, hong_setup
from dpcompanion.training import data, influence
from dpcompanion.training.models import make_model


TITLE = "Influence by retraining: logistic loss on synthetic data and the DNN (the ICLR submission, Fig. 3 middle)"
SCALE_NOTE = ("full: every 5th step with 20 repeats (synthetic) and a 100-hidden-unit DNN on 10 steps with 5 repeats; "
              "paper mode (`--mode paper`, many CPU hours: one unit per DNN step, resumable over sittings): every "
              "step, 10 levels, 100 repeats, both rows")
REPEATS_KEY = "repeats"

__all__ = ["EXPERIMENT", "PAPER_SCALE", "units", "unit_size", "run_unit", "combine", "describe", "verdict_rows"]

ROWS = (("synthetic", "logistic"), ("mnist35", "dnn"))

CONFIGS = {
    "quick": {"rows": [list(r) for r in ROWS], "N": 300, "T": 30, "step_every": 5, "levels": 3, "repeats": 5,
              "hidden": 16, "dnn_step_every": 5, "dnn_levels": 3, "dnn_repeats": 2},
    "full": {"rows": [list(r) for r in ROWS], "N": 1000, "T": 100, "step_every": 5, "levels": 10, "repeats": 20,
             "hidden": 100, "dnn_step_every": 10, "dnn_levels": 5, "dnn_repeats": 5},
}
#: the paper's size (the ICLR submission, App. D); at most ``max_runs_per_call`` runs per trainer call (memory)
PAPER_SCALE = {**CONFIGS["full"], "step_every": 1, "levels": 10, "repeats": 100, "hidden": 100, "dnn_step_every": 1,
               "dnn_levels": 10, "dnn_repeats": 100, "dnn_steps_per_unit": 1, "max_runs_per_call": 1000}
CONFIGS["paper"] = PAPER_SCALE


def _swept_steps(T: int, every: int) -> np.ndarray:
    """Every ``every``-th step from 1, and always the last (T).

    >>> _swept_steps(6, 2).tolist(), _swept_steps(5, 1).tolist()
    ([1, 3, 5, 6], [1, 2, 3, 4, 5])
    """
    steps = np.arange(1, T + 1, every)
    return steps if steps[-1] == T else np.append(steps, T)


def units(config) -> list[dict]:
    """One unit per row; with ``dnn_steps_per_unit``, the DNN row split into units of that many swept
    steps (``steps``, ``block``), all with the row's seed."""
    out = []
    extra = {"max_runs_per_call": int(config["max_runs_per_call"])} if config.get("max_runs_per_call") else {}
    for (ds, kind), s in zip(config["rows"], hp.unit_seeds(config["seed"], len(config["rows"]))):
        dnn = kind == "dnn"
        u = {"dataset": ds, "model": kind, "N": int(config["N"]), "T": int(config["T"]),
             "step_every": int(config["dnn_step_every" if dnn else "step_every"]),
             "levels": int(config["dnn_levels" if dnn else "levels"]),
             "repeats": int(config["dnn_repeats" if dnn else "repeats"]), "hidden": int(config["hidden"]),
             "seed": s, **extra}
        per = config.get("dnn_steps_per_unit") if dnn else None
        if per:
            steps = _swept_steps(u["T"], u["step_every"]).tolist()
            out += [{**u, "block": b, "steps": steps[a:a + int(per)]}
                    for b, a in enumerate(range(0, len(steps), int(per)))]
        else:
            out.append(u)
    return out


def unit_size(unit) -> str:
    """The row (``synthetic/logistic``, ``mnist35/dnn``): a row's units are alike, the rows are not.

    >>> unit_size({"dataset": "mnist35", "model": "dnn", "block": 3})
    'mnist35/dnn'
    """
    return f"{unit['dataset']}/{unit['model']}"


def run_unit(unit, device) -> dict:
    t0 = time.perf_counter()
    s_data, s_run = hp.unit_seeds(unit["seed"], 2)
    d = data.load(unit["dataset"], seed=s_data, n=unit["N"], scale=hp.SCALE)
    if unit["model"] == "dnn":
        model = make_model("mlp", in_dim=d.dim, n_classes=2, hidden=unit["hidden"])
    else:
        model = make_model(unit["model"] if unit["model"] == "logistic" else "linear", in_dim=d.dim, n_classes=2)
    T = unit["T"]
    steps = np.asarray(unit["steps"]) if "steps" in unit else _swept_steps(T, unit["step_every"])
    est = influence.influence_by_retraining(model, d.X_train, d.y_train, T=T, base_sigma=math.sqrt(T / hp.R),
                                            levels=np.linspace(20.0, 200.0, unit["levels"]), steps=steps,
                                            repeats=unit["repeats"], clip_norm=hp.CLIP, lr=hp.LR, seed=s_run,
                                            device=device, max_runs_per_call=unit.get("max_runs_per_call"))
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


def _join_blocks(parts: list[dict]) -> dict:
    """One row from the units of a split row (in step order)."""
    if len(parts) == 1:
        return parts[0]
    runs = np.array([p["runs"] for p in parts], dtype=float)
    out = dict(parts[0])
    for k in ("steps", "q", "q_se", "coef", "coef_relative_variance"):
        out[k] = np.concatenate([np.asarray(p[k]) for p in parts])
    out.update(runs=int(runs.sum()), run_steps=int(sum(p["run_steps"] for p in parts)),
               wall_s=float(sum(p["wall_s"] for p in parts)),
               clip_fraction=float(np.dot(runs, [p["clip_fraction"] for p in parts]) / runs.sum()))
    return out


def combine(config, results) -> dict:
    """One row per (dataset, model): a row split into units (paper mode's DNN) is joined first."""
    grouped: dict[tuple, list[dict]] = {}
    for r in results:
        grouped.setdefault((r["dataset"], r["model"]), []).append(r)
    rows = {}
    for parts in grouped.values():
        r = _join_blocks(parts)
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
                                       se=r["late_minus_early_se"], negative=int(np.sum(np.asarray(r["q"]) < 0)),
                                       steps=int(np.asarray(r["q"]).size)))
    return out


# ------------------------------------------------------------------------ the paper's scale and this page's rules


PAPER_DIMS = hong_setup({
    "training samples": Dim(1000, H_MNIST35, config_key("N")),
    "T": Dim(100, "the ICLR submission, App. D: \"for all t in range 1 to 100\"", config_key("T")),
    "steps estimated": Dim(1, "the ICLR submission, App. D: every t from 1 to 100 (every step)", config_key("step_every")),
    "repeats": Dim(100, H_REPEATS, config_key("repeats")),
    "repeats (DNN row)": Dim(100, H_REPEATS, config_key("dnn_repeats")),
    "hidden width (DNN row)": Dim(None, H_DNN_WIDTH, config_key("hidden")),
})


def _judge_late_early(*, diff: float, se: float, negative: int = 0, steps: int = 0) -> Judgement:
    """``diff``: mean influence over the last third of the steps minus the first third; ``negative`` of
    the ``steps`` estimates below zero (said beside the word)."""
    j = judge_effect(diff, se, direction=+1)
    caveat = (f"; {negative} of {steps} estimated q_t are negative (an influence is a coefficient on sigma_t^2: "
              "estimates within their noise, or where the quadratic fits poorly)" if negative else "")
    return j.for_row(f"late - early = {diff:.3g} ± {se:.2g}" + (f"; {negative} of {steps} q_t negative" if negative else ""),
                     remark=caveat)


RULES: tuple[Rule, ...] = (
    Rule("h-f-infl-extra/increasing", "influence q_t, late vs early steps",
         "the ICLR submission, App. D (Fig. 3 middle): the influence increases as learning continues",
         f"mean q_t over the last third of the steps minus the first third, claimed above zero; {DIRECTION}",
         _judge_late_early,
         margin=Margin(None, "influence q_t (our units)", "none",
                                            "no margin: the influence's units depend on the loss scale and step size of "
                                            "each setting, and the paper prints no influence value; judged against zero "
                                            "alone"),
         case=Case("the ICLR submission, App. D: the influence increases as learning continues",
                   {"diff": 1.0, "se": 0.1}, {"diff": -1.0, "se": 0.1})),
)


EXPERIMENT = from_module(__name__, id="h-f-infl-extra")
