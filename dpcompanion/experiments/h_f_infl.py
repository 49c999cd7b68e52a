"""H-F-INFL / H-F-FIT: the influence of each step's noise, estimated by retraining on MNIST35.

Hong et al. 2022, the ICLR submission's App. D, Fig. 3 left/middle (the FAccT version, Fig. 1
left; ``q_t = gamma^{T-t} alpha`` is the FAccT version's Thm 4.1, Eq. (7)): every step keeps the
uniform noise ``sigma = sqrt(T/R)`` except step t, whose ``sigma_t`` is swept over [20, 200]; the
final loss is fitted as ``c sigma_t^2 + c0`` per repeat and ``q_t ~ c``. For the squared loss the
analytic ``q_t`` (Hessian) and the theory's ``rate^{T-t}`` are computed too. Units: one per loss x
block of repeats (a block's seed from ``SeedSequence(seed).spawn``, shared by both losses), plus one
``analytic`` unit. Rows that compare with a printed number are judged only at the paper's sizes.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module, sizes_line
from dpcompanion.experiments.comparisons.rule import (Case, DIRECTION, Judgement, LEVEL, Margin, Rule, Z, by_ratio,
                                                      judge_effect)
from dpcompanion.experiments.scale_tables import Dim, H_MNIST35, H_REPEATS, config_key, config_range, hong_setup
from dpcompanion.theory.accounting import R_PAPER
from dpcompanion.training import data, influence
from dpcompanion.training.models import make_model


TITLE = "Influence of each step's noise by retraining, MNIST35 (the ICLR submission, App. D Fig. 3; the FAccT version, Fig. 1 left)"
SCALE_NOTE = ("full = the paper's protocol: T = 100, 10 levels of sigma_t over [20, 200], 100 repeats, every t, "
              "squared and logistic loss")
REPEATS_KEY = "repeats"

__all__ = ["EXPERIMENT", "units", "run_unit", "combine", "describe", "verdict_rows", "sizes_match_paper"]

#: what the ICLR submission's App. D prints for H-F-INFL: its protocol ("Estimate of influences by retraining":
#: T = 100, sigma_t over [20, 200], 100 repeats, the left pane at t = 10, 60, 90) and its numbers
#: ("Results": relative variances, and roughly 80% or more of the gradients clipped)
INFL_PAPER = {
    "T": 100, "levels": np.linspace(20.0, 200.0, 10).tolist(), "repeats": 100, "fit_steps": [10, 60, 90],
    "logistic_clip_fraction": 0.8,
    "squared_loss_relative_variance": [0.14, 0.032, 0.016],
    "logistic_coef_relative_variance": [0.025, 0.024, 0.027],
}

#: ratio tolerances: ours/paper within a factor 1.5 agrees, within 4 partly
INFL_RATIO = (1.5, 4.0)


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
    """Whether a result was computed at the paper's sizes (:data:`INFL_PAPER`)."""
    P = INFL_PAPER
    return (int(config["T"]) == P["T"] and int(config["repeats"]) == P["repeats"]
            and list(config["fit_steps"]) == P["fit_steps"]
            and np.allclose(np.asarray(config["levels"], float), P["levels"], rtol=0, atol=1e-9))


def describe(payload) -> str:
    """The sizes paragraph of a stored result (its settings), with the paper's sizes where they differ."""
    s, P = payload["settings"], INFL_PAPER
    paper = (" (the paper's sizes)." if sizes_match_paper(s) else
             f"; the paper: T = {P['T']}, {len(P['levels'])} levels, {P['repeats']} repeats, t = "
             f"{', '.join(map(str, P['fit_steps']))}.")
    return sizes_line(s, f"T = {s['T']} steps, base noise sigma = sqrt(T/R) = {float(s['base_sigma']):.3g}, "
                      f"{len(s['levels'])} levels of sigma_t in [{min(s['levels']):g}, {max(s['levels']):g}], "
                      f"{s['repeats']} repeats, every step t swept: {payload['squared']['runs']:,} runs per loss, "
                      f"the fits shown at t = {', '.join(map(str, s['fit_steps']))}; N = {s['N']:,}, data scale "
                      f"{float(s['scale']):g}, clip norm {float(s['clip_norm']):g}, learning rate {float(s['lr']):g}, "
                      f"R = {float(s['R']):.4g}, seed {s['seed']}" + paper)


def verdict_rows(pay) -> list[dict]:
    """The page's rows (rules ``h-f-infl/*``); those that compare with a printed number are judged only
    at the paper's sizes (:func:`sizes_match_paper`)."""
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
        rows.append(comparisons.compare("h-f-infl/logistic-coef-relvar", sizes_match=at_paper, sizes_note=sizes,
                                        item=f"logistic: relative variance of the coefficient c at t = {s}",
                                        t_paper=tp, ours=float(lg["coef_relative_variance"][i]),
                                        cv2=float(lg["coef_cv2"][i])))
    return rows


# ------------------------------------------------------------------------ the paper's scale and this page's rules


PAPER_DIMS = hong_setup({
    "training samples": Dim(1000, H_MNIST35, config_key("n")),
    "T": Dim(100, "the ICLR submission, App. D, Estimate of influences by retraining: \"for all t in range 1 to 100\"", config_key("T")),
    "noise levels": Dim([20, 200], "the ICLR submission, App. D: sigma_t \"is varied from 20 to 200\"", config_range("levels")),
    "repeats": Dim(100, H_REPEATS, config_key("repeats")),
})


def _judge_trend(*, q: Sequence[float]) -> Judgement:
    """Spearman rho of ``q`` against t."""
    from scipy.stats import spearmanr

    q = np.asarray(q, dtype=float)
    if q.ndim != 1 or q.size < 3:
        raise ValueError(f"q must be one value per step, at least 3, got shape {q.shape}")
    res = spearmanr(np.arange(q.size), q)
    rho, p = float(res.statistic), float(res.pvalue)
    sig = p < 1 - LEVEL
    v = "agrees" if sig and rho > 0 else "disagrees" if sig and rho < 0 else "inconclusive"
    return Judgement(v, f"rank correlation of q_t with t over {q.size} steps; a two-sided test at {1 - LEVEL:g}: "
                     + ("increasing" if v == "agrees" else "decreasing" if v == "disagrees" else "no trend shown"),
                     ours=f"Spearman rho = {rho:.3g} (p = {p:.2g})")


def resolved_tail(q: Sequence[float], se: Sequence[float]) -> int:
    """Index of the first step from which every later retrained ``q_t`` exceeds ``Z`` standard errors
    (``len(q)`` when the last does not): early squared-loss influences (about 1e-13) are below the noise.

    >>> resolved_tail([1e-9, -1e-9, 2.0, 3.0], [1e-9, 1e-9, 0.1, 0.1]), resolved_tail([1.0, 0.0], [0.1, 0.1])
    (2, 2)
    """
    ok = np.asarray(q, float) > Z * np.asarray(se, float)
    bad = np.flatnonzero(~ok)
    return int(bad[-1] + 1) if bad.size else 0


def _arrays(**named) -> dict[str, np.ndarray]:
    out = {k: np.asarray(v, dtype=float) for k, v in named.items()}
    shapes = {v.shape for v in out.values()}
    if len(shapes) != 1 or next(iter(shapes))[0:1] == (0,) or len(next(iter(shapes))) != 1:
        raise ValueError(f"{', '.join(out)} must be 1-D arrays of one equal, non-zero length, got {shapes}")
    return out


def _judge_retrained_vs_analytic(*, q: Sequence[float], se: Sequence[float], analytic: Sequence[float],
                                 clip_fraction: float) -> Judgement:
    """Least-squares factor ``a`` in ``q_retrained ~ a * q_analytic`` (weights 1/se^2) over the
    resolved tail of the retrained influence; judged by how far ``a`` is from 1."""
    d = _arrays(q=q, se=se, analytic=analytic)
    q, se, an = d["q"], d["se"], d["analytic"]
    t0, T = resolved_tail(q, se), q.size
    clipped = f"{100 * clip_fraction:.2g}% of gradients clipped; the analytic form assumes none"
    if T - t0 < 3:
        return Judgement("not comparable", f"too few resolved steps to compare shapes; {clipped}",
                         ours=f"retrained q_t resolved (> {Z:g} se) at {T - t0} of {T} steps")
    w = 1.0 / np.maximum(se[t0:], 1e-300) ** 2
    a = float(np.sum(w * q[t0:] * an[t0:]) / np.sum(w * an[t0:] ** 2))
    # the shape: the ratio retrained / analytic at every resolved step, against the fitted factor
    # (one weighted factor alone is decided by the last, best-resolved steps)
    r = q[t0:] / an[t0:]
    worst = float(np.max(np.maximum(r / a, a / r))) if a > 0 and np.all(r > 0) else math.inf
    order = ("agrees", "partly", "disagrees")
    v = max(by_ratio(1.0, a, agree=INFL_RATIO[0], partly=INFL_RATIO[1]),
            by_ratio(1.0, worst, agree=INFL_RATIO[0], partly=INFL_RATIO[1]) if math.isfinite(worst) else "disagrees",
            key=order.index)
    i_lo, i_hi = int(np.argmin(r)), int(np.argmax(r))
    return Judgement(v, f"the factor fitted with weights 1/se^2 over the steps from which every retrained q_t exceeds "
                     f"{Z:g} standard errors (before t = {t0 + 1} the analytic q_t, {an[0]:.2g} at t = 1, is below the "
                     f"retraining noise), and the shape: the ratio at every one of those steps within the same factor "
                     f"of the fitted one (it runs from {r[i_lo]:.3g} at t = {t0 + i_lo + 1} to {r[i_hi]:.3g} at "
                     f"t = {t0 + i_hi + 1}); " + clipped,
                     ours=f"retrained = {a:.3g} x analytic over t = {t0 + 1}..{T}, the ratio from {r[i_lo]:.3g} to "
                          f"{r[i_hi]:.3g}; steepness q_T / q_{t0 + 1}: retrained {q[-1] / q[t0]:.3g}, analytic "
                          f"{an[-1] / an[t0]:.3g}")


def _judge_flatter(*, q_logistic: Sequence[float], se_logistic: Sequence[float], q_squared: Sequence[float],
                   se_squared: Sequence[float]) -> Judgement:
    """Steepness ``q_T / q_t0`` of both retrained influences from the first step ``t0`` at
    which both are resolved for good."""
    d = _arrays(ql=q_logistic, sl=se_logistic, qs=q_squared, ss=se_squared)
    t0, T = max(resolved_tail(d["ql"], d["sl"]), resolved_tail(d["qs"], d["ss"])), d["ql"].size
    if T - t0 < 2:
        return Judgement("not comparable", "too few resolved steps to compare steepness",
                         ours=f"both retrained influences resolved at only {T - t0} of {T} steps")
    ql, sl, qs, ss = d["ql"], d["sl"], d["qs"], d["ss"]
    lg, sq = ql[-1] / ql[t0], qs[-1] / qs[t0]
    # effect: log(squared steepness) - log(logistic steepness) > 0 when the logistic trend is flatter;
    # its standard error by the delta method from the four retrained estimates' relative errors
    eff = math.log(sq) - math.log(lg)
    se = math.sqrt(sum((b / a) ** 2 for a, b in ((ql[-1], sl[-1]), (ql[t0], sl[t0]), (qs[-1], ss[-1]), (qs[t0], ss[t0]))))
    j = judge_effect(eff, se, direction=+1)
    return j.for_row(f"q_T / q_{t0 + 1}: logistic {lg:.3g} vs squared {sq:.3g}",
                     remark=" (log of squared / logistic steepness, se by the delta method); retrained influences from "
                            f"t = {t0 + 1}, the first step after which both exceed {Z:g} standard errors")


def _judge_clip_fraction(*, ours: float) -> Judgement:
    p = INFL_PAPER["logistic_clip_fraction"]
    return Judgement(by_ratio(p, ours, agree=INFL_RATIO[0], partly=INFL_RATIO[1]), "ours: mean over all runs and steps",
                     ours=f"{ours:.4g}")


def _printed_at(key: str, t_paper: int) -> float:
    steps = INFL_PAPER["fit_steps"]
    if t_paper not in steps:
        raise ValueError(f"t_paper must be one of {steps} (the ICLR submission, App. D), got {t_paper!r}")
    return float(INFL_PAPER[key][steps.index(t_paper)])


def _judge_relvar(*, t_paper: int, ours: float) -> Judgement:
    p = _printed_at("squared_loss_relative_variance", t_paper)
    return Judgement(by_ratio(p, ours, agree=INFL_RATIO[0], partly=INFL_RATIO[1]), "var/mean carries the loss's units",
                     ours=f"{ours:.4g}", printed=f"{p:g} at t = {t_paper} (the ICLR submission, App. D, Results)")


def _judge_relvar_decreasing(*, values: Sequence[float]) -> Judgement:
    v = [float(x) for x in values]
    dec = all(a > b for a, b in zip(v, v[1:]))
    return Judgement("agrees" if dec else "disagrees", "strictly decreasing",
                     ours=f"{'yes' if dec else 'no'} ({', '.join(f'{x:.3g}' for x in v)})")


def _judge_coef_relvar(*, t_paper: int, ours: float, cv2: float) -> Judgement:
    p = _printed_at("logistic_coef_relative_variance", t_paper)
    return Judgement(by_ratio(p, ours, agree=INFL_RATIO[0], partly=INFL_RATIO[1]),
                     f"var/mean as the paper defines it (it carries the units of c); ours var/mean^2 = {cv2:.3g}",
                     ours=f"{ours:.4g}", printed=f"{p:g} at t = {t_paper} (the ICLR submission, App. D, Results)")


RULES: tuple[Rule, ...] = (
    Rule("h-f-infl/increasing", "influence q_t increases with t (retrained)",
         "the ICLR submission, App. D, Results (Fig. 3 middle): for both losses the influence grows as training proceeds",
         "Spearman rho of q_t against t, two-sided test at 0.05: rho > 0 significant agrees, rho < 0 significant "
         "disagrees, else inconclusive",
         _judge_trend,
         case=Case("the ICLR submission, App. D: the influence grows as training proceeds",
                   {"q": [1.0, 1.5, 2.0, 3.0, 5.0]}, {"q": [5.0, 3.0, 2.0, 1.5, 1.0]})),
    Rule("h-f-infl/retrained-vs-analytic", "squared loss: retrained q_t vs the analytic q_t (Hessian)",
         "the ICLR submission, App. D, Results (Fig. 3 middle): the squared loss's q_t, computed analytically from the Hessian "
         "eigenvalues, rises steeply (no number printed)",
         f"ours vs ours: the fitted factor retrained/analytic over the resolved steps (q_t > {Z:g} se), and the "
         f"ratio at each of those steps against it, both within {INFL_RATIO[0]:g} agrees, {INFL_RATIO[1]:g} partly, "
         "else disagrees (the shapes differ); fewer than 3 resolved steps: not comparable",
         _judge_retrained_vs_analytic,
         case=Case("retrained q_t = analytic q_t (factor within 1.5) where resolved",
                   {"q": [-5e-10, 3e-10, 1e-6, 2e-6, 4e-6], "se": [1e-9] * 5,
                   "analytic": [1e-13, 1e-12, 1.1e-6, 2.2e-6, 4.4e-6], "clip_fraction": 0.1},
              {"q": [-5e-10, 3e-10, 1e-7, 2e-7, 4e-7], "se": [1e-9] * 5,
                                        "analytic": [1e-13, 1e-12, 1.1e-6, 2.2e-6, 4.4e-6], "clip_fraction": 0.1})),
    Rule("h-f-infl/logistic-flatter", "logistic influence flatter than squared (retrained q_T / q_t0)",
         "the ICLR submission, App. D, Results (Fig. 3 middle): the logistic loss's influence trend is flatter than the squared loss's",
         f"log(squared q_T / q_t0) - log(logistic q_T / q_t0), claimed above zero (t0 the first step from which both "
         f"exceed {Z:g} se; se by the delta method); {DIRECTION}",
         _judge_flatter,
         margin=Margin(math.log(1.5), "log ratio of steepness", "smallest effect of interest",
                                            "smallest effect of interest: a factor 1.5 in steepness, the factor within "
                                            "which this page calls two influences the same (dpcompanion.experiments.h_f_infl.INFL_RATIO)"),
         case=Case("the ICLR submission, App. D: the logistic trend is flatter than the squared one",
                   {"q_logistic": [1.0, 1.5, 2.0], "se_logistic": [0.1] * 3,
                   "q_squared": [1.0, 5.0, 20.0], "se_squared": [0.1] * 3},
              {"q_logistic": [1.0, 5.0, 30.0], "se_logistic": [0.1] * 3,
                                   "q_squared": [1.0, 5.0, 20.0], "se_squared": [0.1] * 3})),
    Rule("h-f-infl/clip-fraction", "logistic loss: fraction of per-sample gradients clipped",
         f"{INFL_PAPER['logistic_clip_fraction']:g} (the ICLR submission, App. D, Results: roughly 80% or more of the logistic loss's "
         "gradients are clipped)",
         f"ours / paper within a factor {INFL_RATIO[0]:g} agrees, {INFL_RATIO[1]:g} partly",
         _judge_clip_fraction,
         case=Case("the ICLR submission, App. D: about 80% or more of the gradients clipped",
                   {"ours": 0.85}, {"ours": 0.01})),
    Rule("h-f-infl/squared-relvar", "squared: relative variance of the final loss",
         "the ICLR submission, App. D, Results: 0.14, 0.032, 0.016 for t = 10, 60, 90",
         f"ours / paper within a factor {INFL_RATIO[0]:g} agrees, {INFL_RATIO[1]:g} partly",
         _judge_relvar,
         case=Case("the ICLR submission, App. D: relative variance 0.032 at t = 60",
                   {"t_paper": 60, "ours": 0.03}, {"t_paper": 60, "ours": 0.5})),
    Rule("h-f-infl/squared-relvar-decreasing", "squared: that relative variance decreases with t",
         "the ICLR submission, App. D, Results: yes (0.14 > 0.032 > 0.016)", "agrees: strictly decreasing over the fitted steps",
         _judge_relvar_decreasing,
         case=Case("the ICLR submission, App. D: 0.14 > 0.032 > 0.016",
                   {"values": [0.2, 0.05, 0.01]}, {"values": [0.01, 0.05, 0.2]})),
    Rule("h-f-infl/logistic-coef-relvar", "logistic: relative variance of the coefficient c",
         "the ICLR submission, App. D, Results: 0.025, 0.024, 0.027 for t = 10, 60, 90",
         f"the variance divided by the mean, as the paper defines it; ours / paper within a factor {INFL_RATIO[0]:g} "
         f"agrees, {INFL_RATIO[1]:g} partly",
         _judge_coef_relvar,
         case=Case("the ICLR submission, App. D: relative variance 0.025 at t = 10",
                   {"t_paper": 10, "ours": 0.024, "cv2": 0.1}, {"t_paper": 10, "ours": 1e-7, "cv2": 0.1})),
)


EXPERIMENT = from_module(__name__, id="h-f-infl")
