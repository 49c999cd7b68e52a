"""H-F-MOM: schedules for momentum on a DNN (Hong et al. 2022, the ICLR submission, Sec. 5, Fig. 2
right; the FAccT version's Thm 4.7 for the momentum influence).

A DNN with 2 layers and 100 hidden units, trained with (debiased) momentum on 10-class MNIST (1000
training samples, the rest as test set, PCA 60, the paper's preprocessing per data scale): uniform vs
``expinfl`` (:func:`dpcompanion.theory.schedules.expinfl`) vs ``momexpinfl`` (influence
``c1 gamma^{T+t} + c2 gamma^{T-t}``, Thm 4.7, :func:`dpcompanion.theory.schedules.momexpinfl`), the
schedules' hyper-parameters grid-searched. Readings: beta = 0.9 (not printed for this figure; Thm 4.5's
example uses it); momexpinfl is parameterised by gamma and the crossing ``t_x`` of its two terms
(``c1/c2 = gamma^{-2 t_x}``, a fraction of T); the search picks the lowest mean final training loss on
tuning seeds (not charged to the budget, as the paper) and the numbers come from fresh seeds; both
models search the same gamma grid (:mod:`dpcompanion.experiments.protocols.tuning`).
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Sequence

import numpy as np

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module, sizes_line, totals
from dpcompanion.experiments.comparisons.rule import Case, DIRECTION, H_LOSS, Judgement, Margin, Rule, judge_effect
from dpcompanion.experiments.protocols import hong as hp, tuning
from dpcompanion.experiments.scale_tables import Dim, H_REPEATS, config_key, hong_setup
from dpcompanion.theory import schedules
from dpcompanion.training import data
from dpcompanion.training.models import make_model


TITLE = "Momentum DNN: uniform vs expinfl vs momexpinfl (the ICLR submission, Fig. 2 right)"
SCALE_NOTE = ("full: the paper's N = 1000 and 100 hidden units; 30 fresh repeats per schedule (paper: 100); "
              "paper mode (`--mode paper`): 100 repeats, every size the paper's")
REPEATS_KEY = "repeats"

__all__ = ["EXPERIMENT", "PAPER", "BETA", "units", "unit_size", "run_unit", "combine", "describe", "verdict_rows"]

BETA = 0.9
#: the ICLR submission's Sec. 5 / Fig. 2: 1000 training samples, 2 layers with 100 hidden units, T = 100 at data scale 25
PAPER = {"N": 1000, "hidden": 100}
KINDS = ("uni", "expinfl", "momexpinfl")

#: gamma's grid is extended towards 1 up to this while a choice is on its edge (no stated range)
GAMMA_MAX = 0.999

CONFIGS = {
    "quick": {"N": 200, "hidden": 16, "scales": [25.0], "Ts": [100], "gammas": [0.9, 0.95],
              "crossings": [0.1, 0.5], "tune_repeats": 2, "repeats": 6, "n_test": 2000, "max_rounds": 1},
    "full": {"N": 1000, "hidden": 100, "scales": [5.0, 10.0, 25.0], "Ts": [100, 200],
             "gammas": [0.9, 0.94, 0.97, 0.99], "crossings": [0.1, 0.25, 0.5],
             "tune_repeats": 4, "repeats": 30, "n_test": None, "max_rounds": 3},
}
#: the paper's size: full mode with App. D's "All the experiments are repeated 100 times"
CONFIGS["paper"] = {**CONFIGS["full"], "repeats": 100, "tune_repeats": 10}


def _schedule(c, T: int) -> np.ndarray:
    kind, g, x = c
    if kind == "uni":
        return schedules.uniform(T=T, R=hp.R)
    if kind == "expinfl":
        return schedules.expinfl(T=T, R=hp.R, gamma=g)
    return schedules.momexpinfl(T=T, R=hp.R, gamma=g, c1=g ** (-2.0 * x * T), c2=1.0)


def units(config) -> list[dict]:
    cells = list(itertools.product(config["scales"], config["Ts"]))
    keys = ("N", "hidden", "gammas", "crossings", "tune_repeats", "repeats", "n_test")
    return [{"scale": float(s), "T": int(T), "seed": sd, "dataset": config.get("dataset", "mnist"),
             "max_rounds": int(config.get("max_rounds", 3)),
             **{k: config[k] for k in keys}}
            for (s, T), sd in zip(cells, hp.unit_seeds(config["seed"], len(cells)))]


def unit_size(unit) -> str:
    """``T=<T>``: a cell's time grows with its number of steps, not its scale."""
    return f"T={unit['T']}"


def run_unit(unit, device) -> dict:
    t0 = time.perf_counter()
    s_data, s_tune, s_eval = hp.unit_seeds(unit["seed"], 3)
    ds = unit.get("dataset", "mnist")
    d = data.load(ds, seed=s_data, n=int(unit["N"]), scale=unit["scale"], **({"test": "rest"} if ds == "mnist" else {}))
    if unit.get("n_test"):  # quick mode: a fixed random subset of the held-out images
        keep = np.sort(np.random.default_rng(s_data).choice(len(d.y_test), size=int(unit["n_test"]), replace=False))
        d.X_test, d.y_test = d.X_test[keep], d.y_test[keep]
    model = make_model("mlp", in_dim=d.dim, n_classes=d.n_classes, hidden=int(unit["hidden"]))
    T = unit["T"]
    tseeds = hp.unit_seeds(s_tune, int(unit["tune_repeats"]))
    eseeds = hp.unit_seeds(s_eval, int(unit["repeats"]))
    tuning.disjoint_seeds(tseeds, eseeds)
    steps = [0]

    def _run(cands, seeds, **kw):
        rows = np.concatenate([np.tile(_schedule(c, T), (len(seeds), 1)) for c in cands])
        r = hp.run_batched(model, d.X_train, d.y_train, sigma_rows=rows, seeds=list(seeds) * len(cands), R=hp.R,
                           device=device, momentum=BETA, **kw)
        if np.any(r["stopped_early"]):
            raise RuntimeError("a budget-exact schedule stopped early: ledger and schedule disagree")
        steps[0] += r["run_steps"]
        return r

    def _evaluate(kind):
        def f(cs):
            tup = [(kind, float(c["gamma"]), float(c.get("crossing", 0.0))) for c in cs]
            return _run(tup, tseeds)["final_loss"].reshape(len(cs), len(tseeds)).mean(axis=1)
        return f

    limits = {"gamma": (None, GAMMA_MAX), "crossing": (0.0, 1.0)}
    # the crossing's domain [0, 1] (a fraction of T): a choice at its ends is the optimum
    domain = {"crossing": {"low": (0.0, "crossing is a fraction of T: 0 is its least value by definition"),
                           "high": (1.0, "crossing is a fraction of T: 1 is its largest value by definition")}}
    grids = {"expinfl": {"gamma": unit["gammas"]},
             "momexpinfl": {"gamma": unit["gammas"], "crossing": unit["crossings"]}}
    chosen = {"uni": ("uni", 0.0, 0.0)}
    traces, records = {}, []
    for kind in ("expinfl", "momexpinfl"):
        ch, tr = tuning.tune(_evaluate(kind), grids[kind], scales={"gamma": "to_one"}, limits=limits,
                             stated=domain if kind == "momexpinfl" else None,
                             max_rounds=int(unit.get("max_rounds", 3)))
        chosen[kind] = (kind, float(ch["gamma"]), float(ch.get("crossing", 0.0)))
        traces[kind] = tr
        records += tuning.record(tr, method=kind, tuning_seeds=tseeds, report_seeds=eseeds,
                                 cell=f"scale {unit['scale']:g}, T = {T}")
    n = len(eseeds)
    r = _run([chosen[k] for k in KINDS], eseeds, X_test=d.X_test, y_test=d.y_test)
    run_steps = steps[0]
    cands = [(k, c["gamma"], c.get("crossing", 0.0)) for k in ("expinfl", "momexpinfl") for c in traces[k]["candidates"]]
    tune = np.array([s for k in ("expinfl", "momexpinfl") for s in traces[k]["scores"]])
    out = {"scale": unit["scale"], "T": T, "N": int(unit["N"]), "hidden": int(unit["hidden"]),
           "n_test": int(len(d.y_test)), "tune_kind": [c[0] for c in cands], "tune_gamma": [c[1] for c in cands],
           "tune_crossing": [c[2] for c in cands], "tune_loss": tune, "repeats": n, "tune_repeats": len(tseeds),
           "tuning": records, "run_steps": int(run_steps),
           "wall_s": time.perf_counter() - t0}
    for j, kind in enumerate(KINDS):
        sl = slice(j * n, (j + 1) * n)
        out[kind] = {"gamma": chosen[kind][1], "crossing": chosen[kind][2], "final_loss": r["final_loss"][sl],
                     "test_accuracy": r["test_accuracy"][sl]}
    return out


def combine(config, results) -> dict:
    cells = []
    for r in results:
        cell = {"scale": r["scale"], "T": r["T"]}
        for k in KINDS:
            cell[f"loss_{k}"], cell[f"loss_{k}_se"] = hp.mean_se(r[k]["final_loss"])
            cell[f"acc_{k}"], cell[f"acc_{k}_se"] = hp.mean_se(r[k]["test_accuracy"])
            cell[f"gamma_{k}"], cell[f"crossing_{k}"] = r[k]["gamma"], r[k]["crossing"]
        for k in ("expinfl", "momexpinfl"):
            cell[f"rel_{k}"], cell[f"rel_{k}_se"] = hp.relative_loss(r[k]["final_loss"], r["uni"]["final_loss"])
        cell["diff"], cell["se"] = hp.paired_difference(r["expinfl"]["final_loss"], r["momexpinfl"]["final_loss"])
        cell["n"] = int(r["repeats"])
        # smallest difference a two-sided 5% test detects at 80% power with these n pairs
        cell["mde_80"] = tuning.min_detectable(cell["se"])
        cells.append(cell)
    return {"cells": cells, "units": results, "config": dict(config), "beta": BETA,
            "tuning": [e for r in results for e in r["tuning"]], "R": hp.R, "lr": hp.LR,
            "clip_norm": hp.CLIP, "n_test": results[0]["n_test"],
            "sizes_match": bool(config["N"] == PAPER["N"] and config["hidden"] == PAPER["hidden"]),
            **totals(results)}


def describe(payload) -> str:
    c = payload["config"]
    return sizes_line(c, f"10-class MNIST, N = {c['N']} training samples (paper: {PAPER['N']}), "
            f"{payload['n_test']} of the other training images as test set (paper: 50,000 test samples, Fig. 2 caption); DNN with {c['hidden']} hidden units (paper: "
            f"{PAPER['hidden']}); momentum beta = {payload['beta']:g}; data scales {c['scales']}, T in {c['Ts']}; "
            f"grids (the same starting gamma grid for both, each extended towards 1 up to {GAMMA_MAX:g} while the choice is on "
            f"its edge): expinfl gamma {c['gammas']}, momexpinfl gamma {c['gammas']} x crossing {c['crossings']} of T (extended to 0 or 1, its domain's ends, while the choice is on its edge); "
            f"{c['tune_repeats']} tuning seeds per candidate, then {c['repeats']} fresh seeds (disjoint from the "
            f"tuning seeds) per chosen schedule; "
            f"R = {payload['R']:.4g}, clip {payload['clip_norm']:g}, learning rate {payload['lr']:g}; "
            f"{payload['run_steps']} run-steps in {payload['wall_s']:.0f} s.")


def verdict_rows(payload) -> list[dict]:
    """The page's row, capped by the tuning protocol (:func:`dpcompanion.experiments.comparisons.apply_tuning_cap`)."""
    c = payload["config"]
    note = f"N {c['N']}, {c['hidden']} hidden units vs the paper's {PAPER['N']}, {PAPER['hidden']}"
    cells = [{"scale": x["scale"], "T": x["T"], "diff": x["diff"], "se": x["se"]} for x in payload["cells"]]
    row = comparisons.compare("h-f-mom/expinfl-vs-momexpinfl", sizes_match=payload["sizes_match"], sizes_note=note,
                              cells=cells)
    return [comparisons.apply_tuning_cap(row, payload.get("tuning"))]


# ------------------------------------------------------------------------ the paper's scale and this page's rules


PAPER_DIMS = hong_setup({
    "training samples": Dim(1000, "the ICLR submission, Fig. 2 caption: \"subsampled MNIST dataset of 1000 training samples\"",
                            config_key("N")),
    "test samples": Dim(50000, "the ICLR submission, Fig. 2 caption: \"1000 training samples and 50, 000 test samples\"",
                        lambda c: c.get("n_test") or sum(data.MNIST_TRAIN_COUNTS) - c["N"]),
    "hidden width": Dim(100, "the ICLR submission, Sec. 5: \"DNN with 2 layers and 100 hidden units\"", config_key("hidden")),
    "repeats": Dim(100, H_REPEATS, config_key("repeats")),
    "T": Dim(None, "the ICLR submission, Sec. 5: momexpinfl's advantage where \"the number of iteration is only 100\" (other T not "
             "printed)", config_key("Ts")),
    "schedule grid": Dim(None, "the ICLR submission, Sec. 5: \"we grid-search for the schedule hyper-parameters\" (no grid printed)",
                         lambda c: {"gammas (both methods)" if c.get("mom_gammas") is None else "gammas": c.get("gammas"),
                                    **({} if c.get("mom_gammas") is None else {"mom_gammas": c["mom_gammas"]}),
                                    "crossings": c.get("crossings")}),
})


def _judge_mom(*, cells: Sequence[dict]) -> Judgement:
    """``cells``: ``scale``, ``T``, ``diff`` = loss(expinfl) - loss(momexpinfl) (> 0: momexpinfl ahead),
    ``se``; judged at (25, 100), an ``agrees`` there ``partly`` when momexpinfl is also ahead elsewhere
    (where the paper finds the two comparable)."""
    key = [c for c in cells if float(c["scale"]) == 25.0 and int(c["T"]) == 100]
    if len(key) != 1:
        raise ValueError("h-f-mom needs exactly one cell at data scale 25 and T = 100")
    j = judge_effect(float(key[0]["diff"]), float(key[0]["se"]), direction=+1,
                     design=comparisons.design_of("h-f-mom/expinfl-vs-momexpinfl"))
    others = [(c["scale"], c["T"]) for c in cells if c is not key[0]
              and judge_effect(float(c["diff"]), float(c["se"]), direction=+1).verdict == "agrees"]
    # the judged cell first: the "we measured" column's first clause is the one the verdict is on
    k = key[0]
    ours = (f"scale {k['scale']:g}, T={k['T']} (judged): {k['diff']:+.3g} ± {k['se']:.2g}; other cells: "
            + "; ".join(f"scale {c['scale']:g}, T={c['T']}: {c['diff']:+.3g} ± {c['se']:.2g}" for c in cells if c is not k))
    if j.verdict == "agrees" and others:
        return j.overruled("partly", f"{j.note}; but momexpinfl is also ahead at {others}, where the paper finds the "
                           "two comparable").for_row(ours)
    return j.for_row(ours, remark="; judged at data scale 25, T = 100 (positive = momexpinfl lower)")


RULES: tuple[Rule, ...] = (
    Rule("h-f-mom/expinfl-vs-momexpinfl", "final loss, expinfl vs momexpinfl",
         "the ICLR submission, Sec. 5 (Fig. 2 right): expinfl comparable to momexpinfl; momexpinfl ahead only at data scale 25 "
         "with T = 100",
         f"loss(expinfl) - loss(momexpinfl) at (25, 100), claimed above zero; {DIRECTION}; an agrees there is partly when "
         f"momexpinfl is also ahead (CI above zero) in another cell",
         _judge_mom,
         design=("paired", "expinfl and momexpinfl run on the same seeds per repeat (h_f_mom, "
                                                    "protocols.hong.paired_difference)"),
         margin=Margin(0.01 * math.log(10), "final training loss (nats)",
                                                "smallest effect of interest", H_LOSS + ": MNIST's 10 classes, 0.01 ln 10"),
         case=Case("the ICLR submission, Sec. 5: momexpinfl ahead only at scale 25, T = 100",
                   {"cells": [{"scale": 10, "T": 100, "diff": 0.0, "se": 0.1}, {"scale": 25, "T": 100, "diff": 0.5, "se": 0.1}]},
                   {"cells": [{"scale": 10, "T": 100, "diff": 0.0, "se": 0.1}, {"scale": 25, "T": 100, "diff": -0.5, "se": 0.1}]})),
)


EXPERIMENT = from_module(__name__, id="h-f-mom")
