"""Experiment ``audit``: the empirical privacy audit of every trainer, as shipped (S = 1) and
deliberately mis-calibrated (S = 0.5: half the noise claimed), plus a curve over S for PGD.
One unit per trainer and noise-multiplier scale S (:func:`dpcompanion.training.privacy_audit.run_audit`),
its seed from the config seed and its index; the payload keeps every unit's full report.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module
from dpcompanion.experiments.comparisons.rule import Case, Judgement, Rule
from dpcompanion.experiments.scale_tables import Dim, config_key
from dpcompanion.training.privacy_audit import run_audit


TITLE = "Empirical privacy audit of the trainers (white-box canary, Gaussian-DP fit and Clopper-Pearson)"
SCALE_NOTE = ("no paper protocol to match: full mode uses the most trials the command accepts (200,000 per "
              "unit: tighter lower bounds) and a finer curve over S")

__all__ = ["EXPERIMENT", "verdict_rows"]

TRAINERS = ("pgd", "momentum", "psgd", "adp")

#: what both modes share: the budget audited, the noise scales (1 = as shipped), the curve's trainer
_AUDITED = {"epsilon": 2.0, "delta": 1e-5, "scales": [1.0, 0.5], "curve_trainer": "pgd"}

CONFIGS = {
    # well under a minute on 2 CPU cores: fewer trials than the command's defaults for PSGD
    "quick": {**_AUDITED, "trials": {"pgd": 20000, "momentum": 20000, "psgd": 100000, "adp": 20000},
              "curve_scales": [0.7, 0.8, 0.9]},
    # the most trials the command accepts: a couple of minutes on 2 CPU cores
    "full": {**_AUDITED, "trials": {"pgd": 200000, "momentum": 200000, "psgd": 200000, "adp": 200000},
             "curve_scales": [0.6, 0.7, 0.75, 0.8, 0.85, 0.9]},
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
    r = run_audit(trainer=unit["trainer"], epsilon=unit["epsilon"], delta=unit["delta"], trials=unit["trials"],
                  noise_multiplier_scale=unit["scale"], seed=unit["seed"], device=device)
    return r.to_dict()


def combine(config: dict, results: list[dict]) -> dict:
    return {"epsilon": config["epsilon"], "delta": config["delta"], "audits": results}


def verdict_rows(payload) -> list[dict]:
    """Each trainer as shipped (S = 1) against its ledger's claim, and whether the audit flags every
    trainer at the smallest S below 1 (the test's power)."""
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
    rows.append(comparisons.compare("audit/power", sizes_match=True, item=f"the audit flags every trainer at S = {s_bad:g}",
                                    flagged=flagged, trainers=[t for t in trainers if (t, s_bad) in by]))
    return rows


# ------------------------------------------------------------------------ the paper's scale and this page's rules


PAPER_DIMS = {
    "trials": Dim(None, "not in the papers (our audit of our trainers)", config_key("trials", "n_trials")),
}


STORED_SIZES = {"trials": lambda p: {a["trainer"]: a["trials"] for a in p["audits"]}}


def _judge_claim(*, epsilon_claimed: float, delta: float, epsilon_lower: float, passed: bool) -> Judgement:
    return Judgement("agrees" if passed else "disagrees", "95% lower bound; below the claim = not refuted (not proved)",
                     ours=f"epsilon >= {epsilon_lower:.4g} (95% lower bound)",
                     printed=f"({epsilon_claimed:.4g}, {delta:g})-DP (the ledger's claim)")


def _judge_power(*, flagged: Sequence[str], trainers: Sequence[str]) -> Judgement:
    n, k = len(trainers), len(flagged)
    v = "agrees" if k == n else "partly" if k else "disagrees"
    missed = sorted(set(trainers) - set(flagged))
    return Judgement(v, "shows the test has power at this size" + (f"; not flagged: {', '.join(missed)}" if missed else ""),
                     ours=f"{k} of {n}", printed=f"{n} of {n} (every trainer's noise is worth more than its claim)")


RULES: tuple[Rule, ...] = (
    Rule("audit/claim", "trainer as shipped (S = 1): the ledger's (epsilon, delta)-DP claim", "the ledger's claim",
         "agrees: the audit's lower bound on epsilon (the larger of the Gaussian-DP fit and the Clopper-Pearson "
         "threshold test, 95% together) does not exceed the claim (dpcompanion.training.privacy_audit decides 'passed')",
         _judge_claim,
         case=Case("the ledger's claim is not refuted by the audit",
                   {"epsilon_claimed": 2.0, "delta": 1e-5, "epsilon_lower": 0.5, "passed": True},
                   {"epsilon_claimed": 2.0, "delta": 1e-5, "epsilon_lower": 3.5, "passed": False})),
    Rule("audit/power", "the audit flags every deliberately mis-calibrated trainer",
         "every trainer flagged", "agrees: all flagged; partly: some; disagrees: none", _judge_power,
         case=Case("every mis-calibrated trainer is flagged",
                   {"flagged": ["pgd", "adp"], "trainers": ["pgd", "adp"]},
                   {"flagged": [], "trainers": ["pgd", "adp"]})),
)


EXPERIMENT = from_module(__name__, id="audit")
