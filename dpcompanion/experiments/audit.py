"""Experiment ``audit``: the empirical privacy audit of every trainer, as shipped (S = 1) and
deliberately mis-calibrated (S = 0.25), plus a curve over S for PGD.

One unit = one trainer at one noise-multiplier scale S (:func:`dpcompanion.training.audit.run_audit`);
each unit's seed is derived from the config seed and the unit's index, so units can run in
any order or place. The payload keeps every unit's full report.
"""

from __future__ import annotations

import numpy as np

from dpcompanion.experiments.base import Experiment

__all__ = ["EXPERIMENT", "verdict_rows"]

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


def verdict_rows(payload) -> list[dict]:
    """The audit page's rows (rules ``audit/*`` of :mod:`dpcompanion.experiments.comparisons`):
    each trainer as shipped (S = 1) against its ledger's claim, and whether the audit flags
    every trainer at the smallest S below 1 (the test's power)."""
    from dpcompanion.experiments import comparisons

    by = {(a["trainer"], a["noise_multiplier_scale"]): a for a in payload["audits"]}
    trainers = list(dict.fromkeys(a["trainer"] for a in payload["audits"]))
    rows = []
    for t in trainers:
        a = by[(t, 1.0)]
        rows.append(comparisons.compare(
            "audit/claim", sizes_match=True, item=f"{t}: ({a['epsilon_claimed']:.4g}, {payload['delta']:g})-DP as claimed by its ledger",
            epsilon_claimed=float(a["epsilon_claimed"]), delta=float(payload["delta"]),
            epsilon_lower=float(a["epsilon_lower"]), passed=bool(a["passed"])))
    s_bad = min(s for (_, s) in by if s < 1)
    flagged = [t for t in trainers if (t, s_bad) in by and not by[(t, s_bad)]["passed"]]
    rows.append(comparisons.compare("audit/power", sizes_match=True, item=f"the audit flags every trainer at S = {s_bad:g} (noise deliberately too small: its power)",
                                    flagged=flagged, trainers=[t for t in trainers if (t, s_bad) in by]))
    return rows


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
