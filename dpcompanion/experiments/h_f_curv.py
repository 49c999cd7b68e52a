"""H-F-CURV: private gradient descent repeated on two losses of different curvature
(Hong et al. 2022, the ICLR submission, Fig. 1 and Sec. 4.1.3 "Robustness"; the FAccT version,
Sec. 4.1.3 makes the same sharp-loss argument without the figure).

The paper gives no sizes for this toy; ours are stated. Both losses are one-parameter squared
losses through the library's trainer (a bias-free linear model, clip 4, learning rate 0.1, the
uniform schedule at the paper's budget R):

    f_c(w) = (1/N) sum_n (w x_n - s_n)^2 / 2,  x_n = c s_n,  s_n = +-1,

so ``f_c(w) = (c w - 1)^2 / 2``: curvature ``M = c^2``, minimum 0 at ``w* = 1/c``, the same starting
loss 1/2 at ``w = 0``. Each curvature's mean final loss is also checked against the exact expectation
of PGD on a quadratic (:func:`dpcompanion.theory.exact_risk.expected_excess_risk`, exact while nothing
is clipped).
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import torch

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module, sizes_line, totals
from dpcompanion.experiments.comparisons.rule import (Case, DIRECTION, Judgement, Margin, Rule, judge_effect,
                                                      judge_equivalence)
from dpcompanion.experiments.comparisons.sequential import Plan, first_seeds, judge_sequential
from dpcompanion.experiments.protocols import hong as hp
from dpcompanion.experiments.scale_tables import Dim, config_key, hong_setup
from dpcompanion.theory import exact_risk, schedules
from dpcompanion.training.dense_models import DenseModel


TITLE = "PGD repeated on two losses of different curvature (the ICLR submission, Fig. 1)"
SCALE_NOTE = ("the paper prints no sizes for this toy; full mode runs 16,000 repeats (the paper: 100), judged at 1,000, "
              "4,000 and 16,000 by a group-sequential plan")
REPEATS_KEY = "repeats"

__all__ = ["EXPERIMENT", "units", "run_unit", "combine", "describe", "verdict_rows", "toy_data"]

PAPER_REPEATS = 100  # the ICLR submission's Fig. 1 caption: "repeated 100 times"

CONFIGS = {
    "quick": {"curvatures": [1.0, 15.0], "N": 100, "T": 100, "repeats": 100},
    # full: the cap of the group-sequential plan (a unit's seeds are a prefix of a longer run's)
    "full": {"curvatures": [1.0, 15.0], "N": 100, "T": 100, "repeats": 16000},
}


def toy_data(*, curvature: float, N: int) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` with ``x_n = sqrt(curvature) s_n``, ``s_n = 2 y_n - 1`` alternating, so that
    the squared loss of a bias-free linear model is ``(sqrt(curvature) w - 1)^2 / 2``.

    >>> X, y = toy_data(curvature=4.0, N=4)
    >>> X[:, 0].tolist(), y.tolist()
    ([-2.0, 2.0, -2.0, 2.0], [0, 1, 0, 1])
    """
    if not (math.isfinite(curvature) and curvature > 0):
        raise ValueError(f"curvature must be a finite number > 0, got {curvature}")
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 2:
        raise ValueError(f"N must be an integer >= 2, got {N!r}")
    y = np.arange(N) % 2
    s = 2.0 * y - 1.0
    return (math.sqrt(curvature) * s)[:, None], y.astype(np.int64)


def units(config) -> list[dict]:
    seeds = hp.unit_seeds(config["seed"], len(config["curvatures"]))
    return [{"curvature": float(c), "N": int(config["N"]), "T": int(config["T"]), "repeats": int(config["repeats"]),
             "seed": s} for c, s in zip(config["curvatures"], seeds)]


def run_unit(unit, device) -> dict:
    t0 = time.perf_counter()
    X, y = toy_data(curvature=unit["curvature"], N=unit["N"])
    model = DenseModel(in_dim=1, n_classes=2, loss="squared", bias=False)
    sigma = schedules.uniform(T=unit["T"], R=hp.R)
    seeds = hp.unit_seeds(unit["seed"], unit["repeats"])
    r = hp.run_batched(model, X, y, sigma_rows=np.tile(sigma, (len(seeds), 1)), seeds=seeds, R=hp.R,
                       device=device, dtype=torch.float64)
    if np.any(r["stopped_early"]):
        raise RuntimeError("the uniform schedule stopped early: ledger and schedule disagree")
    c = math.sqrt(unit["curvature"])
    exact = exact_risk.expected_excess_risk(eigenvalues=[unit["curvature"]], offset=[-1.0 / c], eta=hp.LR,
                                            sigma=sigma, clip_norm=hp.CLIP, N=unit["N"])
    curves = np.concatenate([r["loss_curve"], r["final_loss"][:, None]], axis=1)  # f(theta_1..theta_{T+1})
    return {"curvature": unit["curvature"], "final_loss": r["final_loss"], "curves": curves[: min(100, len(seeds))],
            "mean_curve": curves.mean(axis=0), "exact": float(exact), "clip_fraction": float(np.max(r["clip_fraction"])),
            "repeats": len(seeds), "run_steps": r["run_steps"], "wall_s": time.perf_counter() - t0}


def combine(config, results) -> dict:
    out = {"config": dict(config), "R": hp.R, "lr": hp.LR, "clip_norm": hp.CLIP, "units": results,
           **totals(results)}
    out["summary"] = []
    for r in results:
        m, se = hp.mean_se(r["final_loss"])
        out["summary"].append({"curvature": r["curvature"], "mean": m, "se": se, "exact": r["exact"],
                               "z_exact": (m - r["exact"]) / se if se > 0 else 0.0,
                               "max_clip_fraction": r["clip_fraction"]})
    return out


def describe(payload) -> str:
    c = payload["config"]
    return sizes_line(c, f"Curvatures M = {c['curvatures']} (x_n = ±sqrt(M)), N = {c['N']}, "
            f"T = {c['T']}, uniform schedule, {c['repeats']} repeats per loss (the paper: 100 repeats, sizes not "
            f"printed); R = {payload['R']:.4g}, clip {payload['clip_norm']:g}, learning rate {payload['lr']:g}; "
            f"{payload['run_steps']} run-steps in {payload['wall_s']:.1f} s.")


def verdict_rows(payload) -> list[dict]:
    """The sharp-vs-flat row and, per curvature, our trainer against the exact E[f] (our own check)."""
    s = sorted(payload["summary"], key=lambda r: r["curvature"])
    losses = {float(u["curvature"]): np.asarray(u["final_loss"], dtype=float) for u in payload["units"]}
    plan = SEQUENTIAL
    flat, sharp = s[0], s[-1]
    rows = [comparisons.compare("h-f-curv/sharp-vs-flat", sizes_match=True, sharp=sharp["mean"], sharp_se=sharp["se"],
                                flat=flat["mean"], flat_se=flat["se"], sharp_losses=losses[float(sharp["curvature"])],
                                flat_losses=losses[float(flat["curvature"])], plan=plan)]
    for r in s:
        rows.append(comparisons.compare("h-f-curv/exact", sizes_match=True,
                                        item=f"M = {r['curvature']:g}: trainer mean vs exact E[f] (not in the paper)",
                                        mean=float(r["mean"]), se=float(r["se"]), exact=float(r["exact"]),
                                        z=float(r["z_exact"]), max_clip_fraction=float(r["max_clip_fraction"]),
                                        losses=losses[float(r["curvature"])], plan=plan))
    return rows


# ------------------------------------------------------------------------ the paper's scale and this page's rules


PAPER_DIMS = hong_setup({
    "training samples": Dim(None, "the ICLR submission, Fig. 1: a toy problem, no size printed", config_key("N")),
    "repeats": Dim(100, "the ICLR submission, Fig. 1 caption: \"Private gradient descent repeated 100 times\"", config_key("repeats")),
    "T": Dim(None, "the ICLR submission, Fig. 1: not printed", config_key("T")),
})


#: the group-sequential plan (cumulative repeats per look), declared on 2026-11-28 before any repeat
#: beyond the first look ran; O'Brien-Fleming spending keeps the overall error rate at 5%
SEQUENTIAL = Plan(looks=(1000, 4000, 16000), unit="repeats", reason=(
    "look 1 is the 1,000-repeat result already judged; 4,000 and 16,000 repeats (the cap) bracket the "
    "runs_needed of its two undecided checks at a cost of seconds"))


#: our own check: the smallest effect of interest of trainer mean - exact E[f], relative to |exact|
EXACT_REL_MARGIN = 0.05


def _mean_se_df(x) -> tuple[float, float, int]:
    x = np.asarray(x, dtype=float)
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size)), x.size - 1


def _judge_curv(*, sharp: float, sharp_se: float, flat: float, flat_se: float, sharp_losses=None, flat_losses=None,
                plan: Plan | None = None) -> Judgement:
    """Sharp minus flat final loss (independent arms), claimed above zero; with a ``plan`` and the
    per-repeat losses, judged look by look on the first repeats of each arm."""
    design = comparisons.design_of("h-f-curv/sharp-vs-flat")
    note = "effect: sharp - flat (positive = the sharper loss ends higher)"
    n_all = min(len(sharp_losses), len(flat_losses)) if sharp_losses is not None and flat_losses is not None else 0
    if plan is not None and n_all >= plan.looks[0]:
        def at(look):
            (ms, ss, _), (mf, sf, _) = (_mean_se_df(first_seeds(x, look.n)) for x in (sharp_losses, flat_losses))
            return judge_effect(ms - mf, math.hypot(ss, sf), direction=+1, design=design, level=look.level,
                                tost_alpha=look.tost_alpha, n=look.n,
                                interval=f"repeated 95% CI ({look.label}, {look.n} repeats)")

        j, look, taken = judge_sequential(plan, n_all, at)
        j = dataclasses.replace(j, stage=f"{look.label}, {look.n} repeats", looks=tuple(taken))
        ours = f"sharp - flat {j.estimate:.4g} ± {j.se:.2g} ({look.n} repeats each, {look.label})"
        return j.for_row(ours, remark=f"; {note}; {plan.describe()}")
    ours = f"sharp {sharp:.4g} ± {sharp_se:.2g}, flat {flat:.4g} ± {flat_se:.2g}"
    j = judge_effect(sharp - flat, math.hypot(sharp_se, flat_se), direction=+1, design=design)
    return j.for_row(ours, remark=f"; {note}")


def _judge_exact(*, mean: float, se: float, exact: float, z: float, max_clip_fraction: float,
                 losses=None, plan: Plan | None = None) -> Judgement:
    """A trainer's Monte Carlo mean against our closed form (a no-difference claim): TOST of
    ``mean - exact`` within :data:`EXACT_REL_MARGIN` ``|exact|``; a miss where a gradient was clipped is
    not comparable (the closed form is for unclipped PGD). ``z``: unused (the row's statistic); with a
    ``plan`` and the per-repeat ``losses``, judged look by look."""
    ours = f"{mean:.4g} ± {se:.2g} vs exact {exact:.4g}"
    margin = EXACT_REL_MARGIN * abs(exact)
    if plan is not None and losses is not None and len(losses) >= plan.looks[0]:
        def at(look):
            m, s_, df = _mean_se_df(first_seeds(losses, look.n))
            return judge_equivalence(m - exact, s_, margin=margin, df=df, n=look.n, level=look.level,
                                     tost_alpha=look.tost_alpha,
                                     interval=f"repeated 95% CI ({look.label}, {look.n} repeats)")

        j, look, taken = judge_sequential(plan, len(losses), at)
        j = dataclasses.replace(j, stage=f"{look.label}, {look.n} repeats", looks=tuple(taken))
        ours = f"{j.estimate + exact:.4g} ± {j.se:.2g} vs exact {exact:.4g} ({look.n} repeats, {look.label})"
        j = dataclasses.replace(j, note=f"{j.note}; {plan.describe()}")
    else:
        j = judge_equivalence(mean - exact, se, margin=margin)
    if j.verdict == "disagrees" and max_clip_fraction > 0:
        return j.overruled("not comparable", f"clipping happened (max fraction {max_clip_fraction:.2f}) and the closed "
                           "form is for unclipped PGD, so a miss is not a disagreement").for_row(ours)
    return j.for_row(ours, remark="; our own check, not a paper claim")


RULES: tuple[Rule, ...] = (
    Rule("h-f-curv/sharp-vs-flat", "mean final loss, sharp vs flat loss",
         "the ICLR submission, Fig. 1 and Sec. 4.1.3: the highly-curved loss ends at a higher mean final loss than the flatter one",
         f"sharp - flat, claimed above zero; {DIRECTION}",
         _judge_curv,
         design=("independent", "each curvature is its own unit with seeds of its own "
                                                  "(h_f_curv.units, protocols.hong.unit_seeds)"),
         margin=Margin(None, "final loss (our synthetic quadratics)", "none",
                                         "no margin: the two losses are synthetic quadratics of our choosing, whose units "
                                         "give no practical scale and which the paper prints no number for; judged "
                                         "against zero alone"),
         case=Case("the ICLR submission, Fig. 1: the sharper loss ends higher",
                   {"sharp": 0.04, "sharp_se": 0.005, "flat": 0.01, "flat_se": 0.001},
                   {"sharp": 0.01, "sharp_se": 0.001, "flat": 0.04, "flat_se": 0.005})),
    Rule("h-f-curv/exact", "trainer mean vs exact E[f] (not in the paper)", "-",
         f"no-difference claim, TOST (90% CI of mean - exact within +-{EXACT_REL_MARGIN:g} |exact|) agrees; a 95% CI "
         f"beyond it disagrees (not comparable where clipping happened); else inconclusive",
         _judge_exact,
         margin=Margin(None, "final loss, trainer mean - exact", "smallest effect of interest",
                                 "5% of |exact E[f]| (dpcompanion.experiments.h_f_curv.EXACT_REL_MARGIN), relative to each cell's exact "
                                 "value: the rule's own judge is a TOST with it", applied_by="judge"),
         case=Case("our check: the trainer's mean equals the exact E[f] (TOST, margin 5% of |exact|)",
                   {"mean": 1.0, "se": 0.01, "exact": 1.01, "z": -1.0, "max_clip_fraction": 0.0},
                   {"mean": 1.0, "se": 0.1, "exact": 1.5, "z": -5.0, "max_clip_fraction": 0.0})),
)


EXPERIMENT = from_module(__name__, id="h-f-curv")
