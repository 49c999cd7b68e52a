"""H-F-INFL / H-F-FIT: the influence of each step's noise, estimated by retraining on MNIST35.

Hong et al. 2022, the ICLR submission's App. D, Fig. 3 left/middle (the FAccT version, Fig. 1
left; the influence ``q_t = gamma^{T-t} alpha`` is the FAccT version's Thm 4.1, Eq. (7)):
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
paper's numbers say so instead of giving a verdict (:func:`verdict_rows`; the paper's numbers
and the rules are in :mod:`dpcompanion.experiments.comparisons`).
"""

from __future__ import annotations

import math

import numpy as np

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module
from dpcompanion.experiments.comparisons.hong_rules import INFL_PAPER
from dpcompanion.theory.accounting import R_PAPER
from dpcompanion.training import data, influence
from dpcompanion.training.models import make_model

__all__ = ["EXPERIMENT", "units", "run_unit", "combine", "verdict_rows", "sizes_match_paper"]

_COMMON = {"dataset": "mnist35", "n": 1000, "scale": 10.0, "clip_norm": 4.0, "lr": 0.1, "R": R_PAPER,
           "losses": ["squared", "logistic"]}
CONFIGS = {
    "quick": {**_COMMON, "T": 20, "levels": np.linspace(20.0, 200.0, 5).tolist(), "repeats": 8,
              "repeats_per_unit": 4, "fit_steps": [2, 12, 18]},
    "full": {**_COMMON, "T": 100, "levels": influence.PAPER_LEVELS.tolist(), "repeats": 100,
             "repeats_per_unit": 10, "fit_steps": [10, 60, 90]},
}

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


def run_unit(unit: dict, device: str) -> dict:
    d = data.load(unit["dataset"], seed=unit["data_seed"], scale=unit["scale"], n=unit["n"])
    X, y = d.X_train, d.y_train
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


# --- the page's verdict rows (rules: dpcompanion.experiments.comparisons, "h-f-infl/...") ---

def sizes_match_paper(config: dict) -> bool:
    """Whether a result was computed at the paper's sizes (T, levels, repeats, fitted steps;
    :data:`dpcompanion.experiments.comparisons.hong_rules.INFL_PAPER`)."""
    P = INFL_PAPER
    return (int(config["T"]) == P["T"] and int(config["repeats"]) == P["repeats"]
            and list(config["fit_steps"]) == P["fit_steps"]
            and np.allclose(np.asarray(config["levels"], float), P["levels"], rtol=0, atol=1e-9))


def verdict_rows(result) -> list[dict]:
    """Paper-vs-ours rows of the H-F-INFL page from a stored result (quick or full): our
    measurements, judged by the rules ``h-f-infl/*`` of
    :mod:`dpcompanion.experiments.comparisons`. The rows that compare with a number the paper
    printed (clip fraction, relative variances) are not judged when the result's sizes differ
    from the paper's (:func:`sizes_match_paper`); the shape rows are judged at any size."""
    pay = result.payload if hasattr(result, "payload") else result
    cfg = pay["settings"]
    sq, lg = pay["squared"], pay["logistic"]
    at_paper = sizes_match_paper(cfg)
    fit_steps = list(cfg["fit_steps"])
    idx = [int(s) - 1 for s in fit_steps]
    sizes = (f"T = {cfg['T']}, {len(cfg['levels'])} levels, {cfg['repeats']} repeats, t = "
             f"{', '.join(map(str, fit_steps))} vs T = {INFL_PAPER['T']}, {len(INFL_PAPER['levels'])} levels, "
             f"{INFL_PAPER['repeats']} repeats, t = {', '.join(map(str, INFL_PAPER['fit_steps']))}")
    rows = [comparisons.compare("h-f-infl/increasing", sizes_match=True, q=r["q"],
                                item=f"influence q_t increases with t ({name} loss, retrained)")
            for name, r in (("squared", sq), ("logistic", lg))]
    rows.append(comparisons.compare("h-f-infl/retrained-vs-analytic", sizes_match=True, q=sq["q"], se=sq["q_se"],
                                    analytic=pay["analytic"], clip_fraction=sq["clip_fraction"]))
    rows.append(comparisons.compare("h-f-infl/logistic-flatter", sizes_match=True, q_logistic=lg["q"],
                                    se_logistic=lg["q_se"], q_squared=sq["q"], se_squared=sq["q_se"]))
    rows.append(comparisons.compare("h-f-infl/clip-fraction", sizes_match=at_paper, sizes_note=sizes,
                                    ours=float(lg["clip_fraction"])))
    ours_lrv = [float(np.mean(sq["loss_relative_variance"][i])) for i in idx]
    for s, tp, o in zip(fit_steps, INFL_PAPER["fit_steps"], ours_lrv):
        rows.append(comparisons.compare("h-f-infl/squared-relvar", sizes_match=at_paper, sizes_note=sizes,
                                        item=f"squared: relative variance of the final loss at t = {s}",
                                        t_paper=tp, ours=o))
    rows.append(comparisons.compare("h-f-infl/squared-relvar-decreasing", sizes_match=at_paper, sizes_note=sizes,
                                    values=ours_lrv))
    for s, tp, i in zip(fit_steps, INFL_PAPER["fit_steps"], idx):
        rows.append(comparisons.compare("h-f-infl/logistic-coef-relvar", sizes_match=True,
                                        item=f"logistic: relative variance of the coefficient c at t = {s}",
                                        t_paper=tp, ours=float(lg["coef_relative_variance"][i]),
                                        cv2=float(lg["coef_cv2"][i])))
    return rows


EXPERIMENT = from_module(__name__, id="h-f-infl",
    title="Influence of each step's noise by retraining, MNIST35 (the ICLR submission, App. D Fig. 3; the FAccT version, Fig. 1 left)",
    scale_note="full = the paper's protocol: T = 100, 10 levels of sigma_t over [20, 200], 100 repeats, every t, "
               "squared and logistic loss",
    repeats_key="repeats",
)
