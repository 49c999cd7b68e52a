"""H-F-INFL / H-F-FIT: the influence of each step's noise, estimated by retraining on MNIST35.

Hong et al. 2022, earlier version (file 000) App. D, Fig. 3 left/middle (FAccT version,
file 001, Fig. 1 left; the influence ``q_t = gamma^{T-t} alpha`` is 001 Thm 4.1, Eq. (7)):
every step keeps the uniform noise ``sigma = sqrt(T/R)`` except step t, whose ``sigma_t`` is
swept over [20, 200]; the final loss is fitted as ``c sigma_t^2 + c0`` per repeat and
``q_t ~ c``. For the squared loss, the analytic ``q_t`` from the Hessian and the theory's
``rate^{T-t}`` are computed too.

Units: one per loss x block of ``repeats_per_unit`` repeats (each a batched call of
:func:`dpcompanion.training.influence.influence_by_retraining`), plus one ``analytic`` unit.
Block ``b`` of a loss draws its base seed from ``SeedSequence(config seed).spawn`` (the same
for both losses, so a repeat of the squared and of the logistic loss share their noise),
and its repeats use ``base + 0, 1, ...``: a unit's numbers do not depend on where it runs.
:func:`combine` concatenates the blocks along the repeats and does the fits
(:func:`dpcompanion.training.influence.influence_statistics`).

Full mode is the paper's protocol (T = 100, 10 levels over [20, 200], 100 repeats, every t);
quick mode is smaller (T = 20, 5 levels, 8 repeats) and its rows that compare with the
paper's numbers say so instead of giving a verdict (:func:`verdict_rows`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import spearmanr

from dpcompanion.experiments.base import Experiment
from dpcompanion.theory.accounting import R_PAPER
from dpcompanion.training import influence

__all__ = ["EXPERIMENT", "units", "run_unit", "combine", "verdict_rows", "sizes_match_paper", "PAPER",
           "QUICK_NOT_COMPARED"]

_COMMON = {"dataset": "mnist35", "n": 1000, "scale": 10.0, "clip_norm": 4.0, "lr": 0.1, "R": R_PAPER,
           "losses": ["squared", "logistic"]}
CONFIGS = {
    "quick": {**_COMMON, "T": 20, "levels": np.linspace(20.0, 200.0, 5).tolist(), "repeats": 8,
              "repeats_per_unit": 4, "fit_steps": [2, 12, 18]},
    "full": {**_COMMON, "T": 100, "levels": influence.PAPER_LEVELS.tolist(), "repeats": 100,
             "repeats_per_unit": 10, "fit_steps": [10, 60, 90]},
}

#: the paper's protocol and reported numbers (000 App. D, "Results")
PAPER = {
    "T": 100, "levels": influence.PAPER_LEVELS.tolist(), "repeats": 100, "fit_steps": [10, 60, 90],
    "logistic_clip_fraction": 0.8,                       # "approximately more than 80%"
    "squared_loss_relative_variance": [0.14, 0.032, 0.016],  # t = 10, 60, 90
    "logistic_coef_relative_variance": [0.025, 0.024, 0.027],
}
QUICK_NOT_COMPARED = "quick build: sizes differ from the paper, not compared"


def _blocks(config: dict) -> list[tuple[int, int, int]]:
    """(block index, first repeat, repeats in block) covering ``config['repeats']``."""
    R, B = int(config["repeats"]), int(config["repeats_per_unit"])
    return [(b, a, min(B, R - a)) for b, a in enumerate(range(0, R, B))]


def _block_seeds(config: dict, n: int) -> list[int]:
    ss = np.random.SeedSequence(int(config["seed"])).spawn(n)
    return [int(s.generate_state(1, dtype=np.uint64)[0] >> 2) for s in ss]  # < 2^62: room for + repeat


def units(config: dict) -> list[dict]:
    blocks = _blocks(config)
    if any(k < 2 for _, _, k in blocks):
        raise ValueError(f"every block needs >= 2 repeats (repeats {config['repeats']}, "
                         f"repeats_per_unit {config['repeats_per_unit']})")
    seeds = _block_seeds(config, len(blocks))
    data = {k: config[k] for k in ("dataset", "n", "scale")} | {"data_seed": int(config["seed"])}
    common = data | {k: config[k] for k in ("T", "levels", "clip_norm", "lr", "R")}
    out = [{"kind": "analytic", **common}]
    for loss in config["losses"]:
        for (b, first, k), s in zip(blocks, seeds):
            out.append({"kind": "retrain", "loss": loss, "block": b, "first_repeat": first, "repeats": k,
                        "seed": s, **common})
    return out


def _data(unit: dict):
    from dpcompanion.training import data

    d = data.load(unit["dataset"], seed=unit["data_seed"], scale=unit["scale"], n=unit["n"])
    return d.X_train, d.y_train


def run_unit(unit: dict, device: str) -> dict:
    from dpcompanion.training.models import make_model

    X, y = _data(unit)
    T = int(unit["T"])
    base_sigma = math.sqrt(T / unit["R"])
    if unit["kind"] == "analytic":
        model = make_model("linear", in_dim=X.shape[1], n_classes=2)
        th = influence.theory_influence(model, X, y, T=T, lr=unit["lr"])
        return {"runs": 0, "N": int(len(y)), "base_sigma": base_sigma,
                "analytic": influence.analytic_influence(model, X, y, T=T, lr=unit["lr"], clip_norm=unit["clip_norm"]),
                "theory": {k: (np.asarray(v) if isinstance(v, np.ndarray) else float(v)) for k, v in th.items()}}
    model = make_model("linear" if unit["loss"] == "squared" else "logistic", in_dim=X.shape[1], n_classes=2)
    r = influence.influence_by_retraining(model, X, y, T=T, base_sigma=base_sigma, levels=unit["levels"],
                                          repeats=unit["repeats"], clip_norm=unit["clip_norm"], lr=unit["lr"],
                                          seed=unit["seed"], device=device)
    return {"runs": int(r.runs), "loss": unit["loss"], "final_loss": np.asarray(r.final_loss, dtype=np.float64),
            "clip_fraction": float(r.clip_fraction)}


def combine(config: dict, results: list[dict]) -> dict:
    analytic = next(r for r in results if "analytic" in r)
    levels = np.asarray(config["levels"], dtype=float)
    steps = np.arange(1, int(config["T"]) + 1)
    fit_idx = [int(s) - 1 for s in config["fit_steps"]]
    out = {"settings": {**{k: v for k, v in config.items()}, "base_sigma": analytic["base_sigma"],
                        "N": analytic["N"]},
           "analytic": analytic["analytic"], "theory": analytic["theory"]}
    for loss in config["losses"]:
        parts = [r for r in results if r.get("loss") == loss]  # in units order = block order
        final = np.concatenate([p["final_loss"] for p in parts], axis=2)  # (T, L, repeats)
        runs = sum(p["runs"] for p in parts)
        stats = influence.influence_statistics(levels, final)
        out[loss] = {
            "steps": steps, "levels": levels, "runs": int(runs),
            "clip_fraction": float(sum(p["clip_fraction"] * p["runs"] for p in parts) / runs),
            "final_loss_at_fit_steps": final[fit_idx],
            **stats,
        }
    return out


EXPERIMENT = Experiment(
    id="h-f-infl",
    title="Influence of each step's noise by retraining, MNIST35 (000 App. D Fig. 3; 001 Fig. 1 left)",
    configs=CONFIGS,
    units=units,
    run_unit=run_unit,
    combine=combine,
    scale_note="full = the paper's protocol: T = 100, 10 levels of sigma_t over [20, 200], 100 repeats, every t, "
               "squared and logistic loss",
)


# --- the page's verdict rules ----------------------------------------------------------

def sizes_match_paper(config: dict) -> bool:
    """Whether a result was computed at the paper's sizes (T, levels, repeats, fitted steps)."""
    return (int(config["T"]) == PAPER["T"] and int(config["repeats"]) == PAPER["repeats"]
            and list(config["fit_steps"]) == PAPER["fit_steps"]
            and np.allclose(np.asarray(config["levels"], float), PAPER["levels"], rtol=0, atol=1e-9))


def by_ratio(paper: float, ours: float, *, agree: float = 1.5, partly: float = 4.0) -> str:
    """``agrees`` when ours/paper is within a factor ``agree``, ``partly`` within ``partly``,
    else ``disagrees`` (symmetric in the ratio: a factor 100 too small is not 'partly').

    >>> by_ratio(0.8, 0.9), by_ratio(0.8, 0.3), by_ratio(0.8, 0.008)
    ('agrees', 'partly', 'disagrees')
    """
    if not (paper > 0 and ours > 0):
        return "disagrees"
    r = ours / paper
    return "agrees" if 1 / agree <= r <= agree else "partly" if 1 / partly <= r <= partly else "disagrees"


def trend(q) -> tuple[float, str]:
    """Spearman rho of ``q`` against t, and the verdict on 'q_t increases with t':
    agrees for rho > 0.5, partly for rho > 0, else disagrees."""
    rho = float(spearmanr(np.arange(len(q)), q).statistic)
    return rho, ("agrees" if rho > 0.5 else "partly" if rho > 0 else "disagrees")


def _steep(q) -> float:
    q = np.asarray(q, dtype=float)
    return float(q[-1] / q[0])


def verdict_rows(result, *, fmt=lambda x, d=4: f"{x:.{d}g}") -> list[dict]:
    """Paper-vs-ours rows of the H-F-INFL page from a stored result (quick or full), each
    rule with its tolerance:

    * q_t increases with t (each loss): Spearman rho > 0.5 agrees, > 0 partly;
    * squared loss, steepness q_T/q_1 retrained vs analytic (ours vs ours): ratio within 1.5
      agrees, within 4 partly;
    * logistic flatter than squared: q_T/q_1 smaller;
    * logistic clip fraction vs the paper's 0.8, relative variance of the squared final
      loss at t = 10, 60, 90 vs 0.14, 0.032, 0.016: ratio within 1.5 (agrees) / 4 (partly);
      that relative variance decreasing with t: strictly;
    * logistic relative variance of c vs 0.025, 0.024, 0.027: not comparable (var/mean
      carries the units of c, which depend on the loss scale).

    Rows that compare with a number the paper reports at its sizes say
    :data:`QUICK_NOT_COMPARED` when the result's sizes differ from the paper's."""
    pay = result.payload if hasattr(result, "payload") else result
    cfg = pay["settings"]
    sq, lg = pay["squared"], pay["logistic"]
    at_paper = sizes_match_paper(cfg)
    fit_steps = list(cfg["fit_steps"])
    idx = [int(s) - 1 for s in fit_steps]
    paper_only = (lambda v: v) if at_paper else (lambda v: QUICK_NOT_COMPARED)
    rows = []
    for name, r in (("squared", sq), ("logistic", lg)):
        rho, v = trend(r["q"])
        rows.append({"item": f"influence q_t increases with t ({name} loss, retrained)",
                     "paper": "increases (Fig. 3 middle)", "ours": f"Spearman rho = {fmt(rho, 3)}", "verdict": v})
    s_an, s_sq, s_lg = _steep(pay["analytic"]), _steep(sq["q"]), _steep(lg["q"])
    rows.append({"item": "squared loss: steepness q_T / q_1, retrained vs analytic (Hessian)",
                 "paper": f"analytic (as the paper computes it): {fmt(s_an, 3)}",
                 "ours": f"retrained: {fmt(s_sq, 3)}", "verdict": by_ratio(s_an, s_sq),
                 "note": f"{fmt(100 * sq['clip_fraction'], 2)}% of gradients clipped; the analytic form assumes none"})
    rows.append({"item": "logistic influence flatter than squared (retrained q_T / q_1)", "paper": "yes",
                 "ours": f"{fmt(s_lg, 3)} vs {fmt(s_sq, 3)}", "verdict": "agrees" if s_lg < s_sq else "disagrees"})
    rows.append({"item": "logistic loss: fraction of per-sample gradients clipped",
                 "paper": PAPER["logistic_clip_fraction"], "ours": lg["clip_fraction"],
                 "verdict": paper_only(by_ratio(PAPER["logistic_clip_fraction"], lg["clip_fraction"])),
                 "note": "paper: 'approximately more than 80%' (000 App. D); ours: mean over all runs and steps"})
    ours_lrv = [float(np.mean(sq["loss_relative_variance"][i])) for i in idx]
    for s, p, o in zip(fit_steps, PAPER["squared_loss_relative_variance"], ours_lrv):
        rows.append({"item": f"squared: relative variance of the final loss at t = {s}", "paper": p, "ours": o,
                     "verdict": paper_only(by_ratio(p, o)),
                     "note": ("" if at_paper else "paper: t = 10, 60, 90 of T = 100; ")
                             + "var/mean carries the loss's units"})
    dec = all(a > b for a, b in zip(ours_lrv, ours_lrv[1:]))
    rows.append({"item": "squared: that relative variance decreases with t", "paper": "yes (0.14 > 0.032 > 0.016)",
                 "ours": "yes" if dec else "no", "verdict": paper_only("agrees" if dec else "disagrees"),
                 "note": "" if at_paper else f"ours at t = {', '.join(map(str, fit_steps))} of T = {cfg['T']}"})
    for s, p, i in zip(fit_steps, PAPER["logistic_coef_relative_variance"], idx):
        rows.append({"item": f"logistic: relative variance of the coefficient c at t = {s}", "paper": p,
                     "ours": float(lg["coef_relative_variance"][i]), "verdict": "not comparable",
                     "note": f"var/mean has the units of c; var/mean^2 = {fmt(float(lg['coef_cv2'][i]), 3)}"})
    return rows
