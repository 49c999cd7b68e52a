"""Experiment ``audit``: the empirical privacy audit of every trainer, as shipped (S = 1) and
deliberately mis-calibrated (S = 0.25), plus a curve over S for PGD.

One unit = one trainer at one noise-multiplier scale S (:func:`dpcompanion.training.audit.run_audit`);
each unit's seed is derived from the config seed and the unit's index, so units can run in
any order or place. The payload keeps every unit's full report.
"""

from __future__ import annotations

import numpy as np

from dpcompanion.experiments.base import Experiment

__all__ = ["EXPERIMENT"]

TRAINERS = ("pgd", "momentum", "psgd", "adp")

CONFIGS = {
    # about a minute on 2 CPU cores: fewer trials than the command's defaults
    "quick": {
        "epsilon": 2.0,
        "delta": 1e-5,
        "scales": [1.0, 0.25],
        "trials": {"pgd": 4000, "momentum": 4000, "psgd": 1500, "adp": 4000},
        "curve_trainer": "pgd",
        "curve_scales": [0.35, 0.5, 0.7],
    },
    # the command's defaults and more: several minutes on 2 CPU cores
    "full": {
        "epsilon": 2.0,
        "delta": 1e-5,
        "scales": [1.0, 0.25],
        "trials": {"pgd": 40000, "momentum": 40000, "psgd": 6000, "adp": 40000},
        "curve_trainer": "pgd",
        "curve_scales": [0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.85],
    },
}


def units(config: dict) -> list[dict]:
    pairs = [(t, s) for t in TRAINERS for s in config["scales"]]
    pairs += [(config["curve_trainer"], s) for s in config["curve_scales"]]
    out = []
    for i, (trainer, scale) in enumerate(pairs):
        seed = int(np.random.SeedSequence([int(config["seed"]), i]).generate_state(1, dtype=np.uint32)[0])
        out.append({"trainer": trainer, "scale": float(scale), "trials": int(config["trials"][trainer]),
                    "epsilon": float(config["epsilon"]), "delta": float(config["delta"]), "seed": seed})
    return out


def run_unit(unit: dict, device: str) -> dict:
    from dpcompanion.training.audit import run_audit

    r = run_audit(trainer=unit["trainer"], epsilon=unit["epsilon"], delta=unit["delta"], trials=unit["trials"],
                  noise_multiplier_scale=unit["scale"], seed=unit["seed"], device=device)
    return r.to_dict()


def combine(config: dict, results: list[dict]) -> dict:
    return {"epsilon": config["epsilon"], "delta": config["delta"], "audits": results}


EXPERIMENT = Experiment(
    id="audit",
    title="Empirical privacy audit of the trainers (white-box canary, Clopper-Pearson)",
    configs=CONFIGS,
    units=units,
    run_unit=run_unit,
    combine=combine,
    depends_on=("dpcompanion.training.audit", "dpcompanion.training.trainers", "dpcompanion.theory.ledger",
                "dpcompanion.theory.accounting", "dpcompanion.theory.schedules"),
    scale_note="no paper protocol to match: full mode uses ten times the quick trials (a tighter lower bound) "
               "and a finer curve over S",
)
