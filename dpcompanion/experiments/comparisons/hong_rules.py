"""Verdict rules of the Hong et al. 2022 experiment pages (both versions).

The figures of Hong et al. are images that the text extractions do not carry: their numbers
cannot be read, so the rules compare a *shape* stated in the paper's text or caption, except
where the text prints a number (the ICLR submission, App. D "Results": the relative variances and the clip
fraction of H-F-INFL, in :data:`INFL_PAPER`). Like with like: means over repeats with
standard errors; "significant" means a z-score of at least :data:`~.rule.Z`.

H-X-EER and its breakdown are not in the paper: their rules check our closed forms and
trainer against each other (the paper column says so) or report a finding beyond the paper.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from dpcompanion.experiments.comparisons.rows import design_of, row_of
from dpcompanion.experiments.comparisons.sequential import Plan, first_seeds, judge_sequential
from dpcompanion.experiments.comparisons.rule import (LEVEL, Z, Judgement, Rule, by_ratio, judge_effect,
                                                       judge_equivalence)

__all__ = ["RULES", "eff_trend", "eff_rows", "INFL_PAPER", "EER_MC_Z_MAX", "EER_T_CHOICE_RTOL", "EXACT_Z_MAX", "BREAKDOWN_Z_MAX",
           "INFL_TREND_RHO", "INFL_RATIO", "EXACT_REL_MARGIN"]

#: what the ICLR submission's App. D prints for H-F-INFL: its protocol ("Estimate of influences by retraining":
#: T = 100, sigma_t over [20, 200], 100 repeats, the left pane at t = 10, 60, 90) and its numbers
#: ("Results": relative variances, and roughly 80% or more of the gradients clipped)
INFL_PAPER = {
    "T": 100, "levels": np.linspace(20.0, 200.0, 10).tolist(), "repeats": 100, "fit_steps": [10, 60, 90],
    "logistic_clip_fraction": 0.8,
    "squared_loss_relative_variance": [0.14, 0.032, 0.016],
    "logistic_coef_relative_variance": [0.025, 0.024, 0.027],
}
#: H-F-INFL "q_t increases with t": Spearman rho above the first agrees, above the second partly
INFL_TREND_RHO = (0.5, 0.0)
#: H-F-INFL ratio tolerances: ours/paper within a factor 1.5 agrees, within 4 partly
INFL_RATIO = (1.5, 4.0)
#: H-X-EER: |z| below which the trainer's Monte Carlo mean agrees with the closed form (no clipping)
EER_MC_Z_MAX = 4.0
#: H-X-EER: exact risk at the bound's T within this relative distance of the best agrees (second: partly)
EER_T_CHOICE_RTOL = (0.1, 0.5)
#: H-F-CURV: |z| of the old rule (kept for callers; the rule is now a TOST, :data:`EXACT_REL_MARGIN`)
EXACT_Z_MAX = 3.0
#: H-F-CURV our own check: the smallest effect of interest of trainer mean - exact E[f], relative to |exact|
EXACT_REL_MARGIN = 0.05
#: H-X-EER breakdown: |z| below which the unclipped control agrees with the exact risk
BREAKDOWN_Z_MAX = 3.0


# ------------------------------------------------------------------------ H-F-EFF

def eff_trend(*, N: Sequence[int], diff: Sequence[float], se: Sequence[float]) -> dict:
    """The trend of H-F-EFF's paired gap (exp's gain over uni at each N, ``diff`` with its
    standard error ``se`` over the repeats) against log N: weighted least squares of ``diff`` on
    ``log2 N`` with weights ``1/se^2`` (the per-N SEs), so the slope is the change of the gap
    *per doubling of N*. The per-N SEs are a floor on the noise: where the gaps scatter about
    the line more than they allow (``chi2 / df > 1``, ``df = len(N) - 2``), the slope's standard
    error is scaled up by ``sqrt(chi2 / df)`` and its interval uses Student t with ``df``
    degrees of freedom (the usual WLS with an estimated scale); otherwise the SEs are taken as
    known (normal interval). More repeats shrink only the first part: a lack of fit is
    narrowed by more sizes N, not more repeats. Returns ``slope``, ``se``, ``df`` (None: normal),
    ``intercept`` (the gap at N = 1), ``chi2``, ``fit_df``, ``inflated`` and ``N_min``, ``N_max``.

    Two sizes: the line through both gaps (chi2 = 0), its slope's SE from theirs.

    >>> t = eff_trend(N=[100, 200, 400], diff=[0.0, 1.0, 2.0], se=[0.1, 0.1, 0.1])
    >>> round(t["slope"], 6), round(t["se"], 4), t["df"], t["inflated"]
    (1.0, 0.0707, None, False)
    >>> t = eff_trend(N=[100, 1000], diff=[0.01, 0.05], se=[0.01, 0.01]); round(t["slope"], 4)
    0.012
    """
    n = [int(v) for v in N]
    d, s = np.asarray(diff, float), np.asarray(se, float)
    if len(n) < 2 or d.shape != (len(n),) or s.shape != (len(n),):
        raise ValueError(f"need >= 2 sizes N with one diff and se each, got N={n}, diff={d.shape}, se={s.shape}")
    if min(n) <= 0 or len(set(n)) != len(n):
        raise ValueError(f"N must be distinct positive sizes, got {n}")
    if not (np.all(np.isfinite(s)) and np.all(s > 0)):
        raise ValueError(f"se must be finite and > 0 at every N, got {s.tolist()}")
    x = np.log2(np.asarray(n, float))
    w = 1.0 / s**2
    xm = float(np.sum(w * x) / np.sum(w))
    sxx = float(np.sum(w * (x - xm) ** 2))
    slope = float(np.sum(w * (x - xm) * d) / sxx)
    icept = float(np.sum(w * d) / np.sum(w) - slope * xm)
    chi2 = float(np.sum(w * (d - icept - slope * x) ** 2))
    fit_df = len(n) - 2
    scale = chi2 / fit_df if fit_df > 0 else 0.0
    inflated = scale > 1.0
    se_slope = math.sqrt((scale if inflated else 1.0) / sxx)
    return {"slope": slope, "se": se_slope, "df": fit_df if inflated else None, "intercept": icept, "chi2": chi2,
            "fit_df": fit_df, "inflated": inflated, "N_min": min(n), "N_max": max(n)}


def _judge_eff(*, N: Sequence[int], diff: Sequence[float], se: Sequence[float], what: str) -> Judgement:
    """``diff`` > 0 means exp is better than uni (lower loss / higher accuracy). The paper
    prints a direction (no number) about a trend, "as the training size increases, exp
    outperforms uni" (the FAccT version, Sec. 5): judged as a trend (issue 33), by the slope of
    the gap against log N (:func:`eff_trend`, per doubling of N), claimed above zero, with
    :func:`~.rule.judge_effect` (direction +1). Each N's own gap is a row of
    :func:`eff_rows`."""
    N, d, s = [int(n) for n in N], np.asarray(diff, float), np.asarray(se, float)
    t = eff_trend(N=N, diff=d, se=s)
    ours = "; ".join(f"N={n}: {a:+.3g} ± {b:.2g}" for n, a, b in zip(N, d, s))
    ours += f"; slope per doubling of N {t['slope']:+.3g} ± {t['se']:.2g}"
    # the regression's runs are its sizes N: runs needed = sizes needed (at the same spacing)
    j = judge_effect(t["slope"], t["se"], direction=+1, df=t["df"], n=len(N), design=design_of("h-f-eff/loss"))
    if t["inflated"] and j.verdict == "inconclusive" and j.runs_factor:  # repeats shrink the per-N SEs, not the scatter
        k = math.ceil(j.runs_factor * len(N))
        j = dataclasses.replace(j, note=j.note.split("; ")[0] + f"; about {k} sizes N (the regression's points, at the "
                                "same spacing) would detect a slope of our estimate at 80% power if the scatter about "
                                "the line is noise; more repeats at these sizes would not")
    fit = (f"the gaps scatter about the line more than their standard errors allow (chi2 {t['chi2']:.3g} on "
           f"{t['fit_df']} df), so the slope's SE is scaled by sqrt(chi2/df) and more repeats would not narrow it: "
           "more sizes N would" if t["inflated"] else
           f"the line fits within the per-N standard errors (chi2 {t['chi2']:.3g} on {t['fit_df']} df)")
    return j.for_row(ours, remark=f"; trend of the gap ({what}, exp - uni, positive = exp better) against log2 N, "
                     f"weighted least squares with weights 1/se^2 over N = {t['N_min']}..{t['N_max']}; {fit}")


def _judge_eff_at(*, N: int, diff: float, se: float, n: int, what: str) -> Judgement:
    """One N of H-F-EFF: exp's paired gain over uni (``diff``, positive = exp better, ``se``
    over ``n`` paired repeats), claimed above zero (the paper shows exp ahead; it prints no
    number), judged by :func:`~.rule.judge_effect` with ``n - 1`` degrees of freedom."""
    if int(n) < 2:
        raise ValueError(f"n must be >= 2 paired repeats, got {n!r}")
    j = judge_effect(float(diff), float(se), direction=+1, df=int(n) - 1, n=int(n), design=design_of("h-f-eff/loss"))
    return j.for_row(f"{float(diff):+.3g} ± {float(se):.2g} ({int(n)} paired repeats)",
                     remark=f"; the gap at N = {int(N)} ({what}, exp - uni, positive = exp better)")


def eff_rows(payload: dict, *, rules: str = "h-f-eff") -> list[dict]:
    """H-F-EFF's row per N (rules ``<rules>/loss-at-N`` and ``<rules>/acc-at-N``), from the
    paired gaps of the payload's ``table`` (the paper's T range; each gap is the mean over the
    repeats of exp - uni on the same seeds, from the stored arrays). Rows of a result whose
    sizes are not the paper's are not made (its trend rows say so). The trend rows are the
    experiment's own ``verdict_rows`` (rules ``<rules>/loss`` and ``<rules>/acc``)."""
    if not payload.get("sizes_match"):
        return []
    t = payload["table"]
    out = []
    for i, N in enumerate(t["N"]):
        n = int(t["n"][i]) if "n" in t else int(payload["config"]["repeats"])
        for key, what, label in (("loss", "training loss", "final training loss"), ("acc", "test accuracy", "test accuracy")):
            r = _RULE_BY_ID[f"{rules}/{key}-at-N"]
            out.append(row_of(r, sizes_match=True, item=f"{label}, exp vs uni, at N = {int(N)}", N=int(N),
                              diff=float(t[f"{key}_gain"][i]), se=float(t[f"{key}_gain_se"][i]), n=n, what=what))
    return out


# ------------------------------------------------------------------------ H-F-SCALE

def _judge_scale(*, scales: Sequence[float], rel_dyn: Sequence[float], se_dyn: Sequence[float],
                 tvar: Sequence[float]) -> Judgement:
    """Relative loss of dyn (negative = better than uni) against the influence spread."""
    sc, r, s, tv = [float(x) for x in scales], np.asarray(rel_dyn, float), np.asarray(se_dyn, float), np.asarray(tvar, float)
    if len(sc) < 1 or not (r.shape == s.shape == tv.shape == (len(sc),)):
        raise ValueError("scales, rel_dyn, se_dyn and tvar must have the same length >= 1")
    ours = "; ".join(f"scale {x:g}: {a:+.3g} ± {b:.2g}" for x, a, b in zip(sc, r, s))
    k = int(np.nanargmax(tv))
    j = judge_effect(float(r[k]), float(s[k]), direction=-1, design=design_of("h-f-scale/dyn"))
    return j.for_row(ours, remark=f"; judged at the scale of largest T·Var(q) ({sc[k]:g}); negative = dyn below uni")


# ------------------------------------------------------------------------ H-F-CURV

def _mean_se_df(x) -> tuple[float, float, int]:
    x = np.asarray(x, dtype=float)
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size)), x.size - 1


def _judge_curv(*, sharp: float, sharp_se: float, flat: float, flat_se: float, sharp_losses=None, flat_losses=None,
                plan: Plan | None = None) -> Judgement:
    """Sharp minus flat final loss (independent arms), claimed above zero. With a
    group-sequential ``plan`` and the per-repeat losses, judged look by look on the first
    repeats of each arm (:func:`~.sequential.judge_sequential`)."""
    design = design_of("h-f-curv/sharp-vs-flat")
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
                 z_max: float | None = None, losses=None, plan: Plan | None = None) -> Judgement:
    """A trainer's Monte Carlo mean against our closed form of the same quantity (our own
    check, a claim of no difference): TOST of ``mean - exact`` against a smallest effect of
    interest of :data:`EXACT_REL_MARGIN` times ``|exact|``; a miss where some gradient was
    clipped is not comparable (the closed form is for unclipped PGD). ``z``, ``z_max``: unused
    (kept for callers). With a group-sequential ``plan`` and the per-repeat ``losses``, judged
    look by look on the first repeats (:func:`~.sequential.judge_sequential`)."""
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


# ------------------------------------------------------------------------ H-F-MOM

def _judge_mom(*, cells: Sequence[dict]) -> Judgement:
    """``cells``: dicts with ``scale``, ``T``, ``diff`` = loss(expinfl) - loss(momexpinfl)
    (> 0: momexpinfl ahead) and ``se``. The paper's claim concerns the cell (25, 100): judged
    there by :func:`~.rule.judge_effect` (direction +1); an ``agrees`` there becomes ``partly``
    when momexpinfl is also ahead (interval above zero) in another cell, where the paper says
    the two are comparable."""
    key = [c for c in cells if float(c["scale"]) == 25.0 and int(c["T"]) == 100]
    if len(key) != 1:
        raise ValueError("h-f-mom needs exactly one cell at data scale 25 and T = 100")
    j = judge_effect(float(key[0]["diff"]), float(key[0]["se"]), direction=+1,
                     design=design_of("h-f-mom/expinfl-vs-momexpinfl"))
    others = [(c["scale"], c["T"]) for c in cells if c is not key[0]
              and judge_effect(float(c["diff"]), float(c["se"]), direction=+1).verdict == "agrees"]
    ours = "; ".join(f"scale {c['scale']:g}, T={c['T']}: {c['diff']:+.3g} ± {c['se']:.2g}" for c in cells)
    if j.verdict == "agrees" and others:
        return j.overruled("partly", f"{j.note}; but momexpinfl is also ahead at {others}, where the paper finds the "
                           "two comparable").for_row(ours)
    return j.for_row(ours, remark="; judged at data scale 25, T = 100 (positive = momexpinfl lower)")


# ------------------------------------------------------------------------ H-F-INFL (and its extra rows)

def _judge_late_early(*, diff: float, se: float) -> Judgement:
    """``diff``: mean influence over the last third of the steps minus the first third."""
    j = judge_effect(diff, se, direction=+1)
    return j.for_row(f"late - early = {diff:.3g} ± {se:.2g}")


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
    """Index of the first step from which every later retrained ``q_t`` is resolved, i.e.
    above ``Z`` standard errors (``len(q)`` when the last one is not). Early influences of the
    squared loss are of order 1e-13 analytically, far below the retraining noise, so a ratio
    ``q_T / q_1`` of retrained estimates divides by noise.

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
    v = by_ratio(1.0, a, agree=INFL_RATIO[0], partly=INFL_RATIO[1])
    return Judgement(v, f"fitted with weights 1/se^2 over the steps from which every retrained q_t exceeds {Z:g} "
                     f"standard errors (before t = {t0 + 1} the analytic q_t, {an[0]:.2g} at t = 1, is below the "
                     "retraining noise); " + clipped,
                     ours=f"retrained = {a:.3g} x analytic over t = {t0 + 1}..{T}; steepness q_T / q_{t0 + 1}: "
                          f"retrained {q[-1] / q[t0]:.3g}, analytic {an[-1] / an[t0]:.3g}")


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
    return Judgement("not comparable", f"var/mean has the units of c (the loss's scale); var/mean^2 = {cv2:.3g}",
                     ours=f"{ours:.4g}", printed=f"{p:g} at t = {t_paper} (the ICLR submission, App. D, Results)")


# ------------------------------------------------------------------------ H-X-EER

def _judge_bound_holds(*, min_ratio: float) -> Judgement:
    return Judgement("agrees" if min_ratio >= 1 else "disagrees", "over every T, schedule and quadratic computed",
                     ours=f"min bound/exact = {min_ratio:.3g}")


def _judge_mc(*, z: float, max_clip_fraction: float) -> Judgement:
    if max_clip_fraction > 0:
        return Judgement("not comparable", f"gradients clipped (max fraction {max_clip_fraction:.2g}): the closed form "
                         "does not describe the algorithm", ours=f"z = {z:.2f}")
    return Judgement("agrees" if abs(z) < EER_MC_Z_MAX else "disagrees", "no gradient clipped", ours=f"z = {z:.2f}")


def _judge_mc_all(*, z: Sequence[float]) -> Judgement:
    zs = [abs(float(x)) for x in z]
    if not zs:  # nothing to compare: not a pass
        return Judgement("not comparable", "every Monte Carlo cell clipped some gradient, where the closed form does "
                         "not describe the algorithm", ours="no cell without clipping")
    ok = all(x < EER_MC_Z_MAX for x in zs)
    ours = f"all |z| < {EER_MC_Z_MAX:g}" if ok else f"some |z| >= {EER_MC_Z_MAX:g}"
    return Judgement("agrees" if ok else "disagrees", "checks our derivation and trainer, not a paper claim",
                     ours=ours + f" ({len(zs)} unclipped cells)")


def _judge_dyn_beats_uni(*, dyn_min: Sequence[float], uni_min: Sequence[float]) -> Judgement:
    """Exact minima (no sampling noise) of the dynamic and the uniform schedule per scale;
    an empty or mismatched list is ``not comparable`` (``all()`` of nothing is no evidence).

    >>> _judge_dyn_beats_uni(dyn_min=[], uni_min=[]).verdict, _judge_dyn_beats_uni(dyn_min=[1.0], uni_min=[2.0]).verdict
    ('not comparable', 'agrees')
    """
    if len(dyn_min) == 0 or len(dyn_min) != len(uni_min):
        return Judgement("not comparable", "nothing to compare: no scale with both exact minima",
                         ours=f"{len(dyn_min)} dynamic and {len(uni_min)} uniform minima")
    ok = all(d <= u * (1 + 1e-9) for d, u in zip(dyn_min, uni_min))
    return Judgement("agrees" if ok else "disagrees", "; ".join(f"{d:.3g} vs {u:.3g}" for d, u in zip(dyn_min, uni_min)),
                     ours="yes" if ok else "no")


def _judge_t_choice(*, T_bound: int, T_exact: int, exact_at_T_bound: float, exact_min: float) -> Judgement:
    rel = abs(exact_at_T_bound - exact_min) / abs(exact_min)
    a, p = EER_T_CHOICE_RTOL
    v = "agrees" if rel <= a else "partly" if rel <= p else "disagrees"
    return Judgement(v, f"exact risk {exact_at_T_bound:.3g} vs {exact_min:.3g}", ours=f"T = {T_bound} vs best {T_exact}")


def _judge_breakdown_control(*, z: Sequence[float]) -> Judgement:
    zmax = max(abs(float(x)) for x in z)
    return Judgement("agrees" if zmax < BREAKDOWN_Z_MAX else "disagrees",
                     f"our own check: the trainer without clipping reproduces the closed form (|z| < {BREAKDOWN_Z_MAX:g})",
                     ours=f"largest |z| over {len(z)} cells: {zmax:.2f}")


def _judge_breakdown_clipped(*, cells: Sequence[tuple[float, int, float]], threshold: float) -> Judgement:
    bad = [(k, T, r) for k, T, r in cells if r > threshold]
    return Judgement("not comparable", "a finding beyond the paper: the bound assumes no clipping; see the warning below",
                     ours="; ".join(f"kappa {k:g}, T {T}: {r:.3g}" for k, T, r in bad) or "none")


_DIR = "the paper prints a direction, no number: our 95% CI above zero agrees, below zero disagrees, else inconclusive"

RULES: tuple[Rule, ...] = (
    Rule("h-f-eff/loss", "final training loss: exp's gain over uni against log N (trend)",
         "the FAccT version, Fig. 1 middle, Sec. 5: as the training size increases, exp outperforms uni on the training loss",
         f"slope of the gap uni - exp (positive = exp better) per doubling of N, weighted least squares over N; {_DIR}",
         lambda **m: _judge_eff(**m, what="training loss")),
    Rule("h-f-eff/acc", "test accuracy: exp's gain over uni against log N (trend)",
         "the FAccT version, Fig. 1 right, Sec. 5: as the training size increases, exp outperforms uni on the test accuracy",
         f"slope of the gap exp - uni per doubling of N, weighted least squares over N; {_DIR}",
         lambda **m: _judge_eff(**m, what="test accuracy")),
    Rule("h-f-eff/loss-at-N", "final training loss, exp vs uni, at one N",
         "the FAccT version, Fig. 1 middle, Sec. 5: exp ahead of uni on the training loss (read from the claim 'as the "
         "training size increases, exp outperforms uni'; the figure's values cannot be read)",
         f"the paired gap uni - exp at this N (positive = exp better); {_DIR}",
         lambda **m: _judge_eff_at(**m)),
    Rule("h-f-eff/acc-at-N", "test accuracy, exp vs uni, at one N",
         "the FAccT version, Fig. 1 right, Sec. 5: exp ahead of uni on the test accuracy (read from the claim 'as the "
         "training size increases, exp outperforms uni'; the figure's values cannot be read)",
         f"the paired gap exp - uni at this N; {_DIR}",
         lambda **m: _judge_eff_at(**m)),
    Rule("h-f-eff-exact/loss", "final training loss: exp's gain over uni against log N (trend), at the exact budget",
         "the FAccT version, Fig. 1 middle, Sec. 5: as the training size increases, exp outperforms uni on the training loss "
         "(at R = 0.3927, the zCDP accounting of (4, 1e-8)-DP; here the same guarantee accounted exactly)",
         f"as h-f-eff/loss; not comparable while the budget is not the paper's; {_DIR}",
         lambda **m: _judge_eff(**m, what="training loss")),
    Rule("h-f-eff-exact/acc", "test accuracy: exp's gain over uni against log N (trend), at the exact budget",
         "the FAccT version, Fig. 1 right, Sec. 5: as the training size increases, exp outperforms uni on the test accuracy "
         "(at R = 0.3927; here the same guarantee accounted exactly)",
         f"as h-f-eff/acc; not comparable while the budget is not the paper's; {_DIR}",
         lambda **m: _judge_eff(**m, what="test accuracy")),
    Rule("h-f-scale/dyn", "relative final loss of dyn vs data scale",
         "the ICLR submission, Sec. 5 and App. D (Fig. 2 middle, Fig. 3 right): dynamic schedules improve the final loss when the "
         "variance of influence is large",
         f"(e_dyn - e_uni)/e_uni at the scale of largest T·Var(q), claimed below zero; {_DIR}",
         _judge_scale),
    Rule("h-f-curv/sharp-vs-flat", "mean final loss, sharp vs flat loss",
         "the ICLR submission, Fig. 1 and Sec. 4.1.3: the highly-curved loss ends at a higher mean final loss than the flatter one",
         f"sharp - flat, claimed above zero; {_DIR}",
         _judge_curv),
    Rule("h-f-curv/exact", "trainer mean vs exact E[f] (not in the paper)", "-",
         f"no-difference claim, TOST (90% CI of mean - exact within +-{EXACT_REL_MARGIN:g} |exact|) agrees; a 95% CI "
         f"beyond it disagrees (not comparable where clipping happened); else inconclusive",
         lambda **m: _judge_exact(**m, z_max=EXACT_Z_MAX)),
    Rule("h-f-mom/expinfl-vs-momexpinfl", "final loss, expinfl vs momexpinfl",
         "the ICLR submission, Sec. 5 (Fig. 2 right): expinfl comparable to momexpinfl; momexpinfl ahead only at data scale 25 "
         "with T = 100",
         f"loss(expinfl) - loss(momexpinfl) at (25, 100), claimed above zero; {_DIR}; an agrees there is partly when "
         f"momexpinfl is also ahead (CI above zero) in another cell",
         _judge_mom),
    Rule("h-f-infl-extra/increasing", "influence q_t, late vs early steps",
         "the ICLR submission, App. D (Fig. 3 middle): the influence increases as learning continues",
         f"mean q_t over the last third of the steps minus the first third, claimed above zero; {_DIR}",
         _judge_late_early),
    Rule("h-f-infl/increasing", "influence q_t increases with t (retrained)",
         "the ICLR submission, App. D, Results (Fig. 3 middle): for both losses the influence grows as training proceeds",
         "Spearman rho of q_t against t, two-sided test at 0.05: rho > 0 significant agrees, rho < 0 significant "
         "disagrees, else inconclusive",
         _judge_trend),
    Rule("h-f-infl/retrained-vs-analytic", "squared loss: retrained q_t vs the analytic q_t (Hessian)",
         "the ICLR submission, App. D, Results (Fig. 3 middle): the squared loss's q_t, computed analytically from the Hessian "
         "eigenvalues, rises steeply (no number printed)",
         f"ours vs ours: fitted factor retrained/analytic over the resolved steps (q_t > {Z:g} se) within "
         f"{INFL_RATIO[0]:g} agrees, {INFL_RATIO[1]:g} partly; fewer than 3 resolved steps: not comparable",
         _judge_retrained_vs_analytic),
    Rule("h-f-infl/logistic-flatter", "logistic influence flatter than squared (retrained q_T / q_t0)",
         "the ICLR submission, App. D, Results (Fig. 3 middle): the logistic loss's influence trend is flatter than the squared loss's",
         f"log(squared q_T / q_t0) - log(logistic q_T / q_t0), claimed above zero (t0 the first step from which both "
         f"exceed {Z:g} se; se by the delta method); {_DIR}",
         _judge_flatter),
    Rule("h-f-infl/clip-fraction", "logistic loss: fraction of per-sample gradients clipped",
         f"{INFL_PAPER['logistic_clip_fraction']:g} (the ICLR submission, App. D, Results: roughly 80% or more of the logistic loss's "
         "gradients are clipped)",
         f"ours / paper within a factor {INFL_RATIO[0]:g} agrees, {INFL_RATIO[1]:g} partly",
         _judge_clip_fraction),
    Rule("h-f-infl/squared-relvar", "squared: relative variance of the final loss",
         "the ICLR submission, App. D, Results: 0.14, 0.032, 0.016 for t = 10, 60, 90",
         f"ours / paper within a factor {INFL_RATIO[0]:g} agrees, {INFL_RATIO[1]:g} partly",
         _judge_relvar),
    Rule("h-f-infl/squared-relvar-decreasing", "squared: that relative variance decreases with t",
         "the ICLR submission, App. D, Results: yes (0.14 > 0.032 > 0.016)", "agrees: strictly decreasing over the fitted steps",
         _judge_relvar_decreasing),
    Rule("h-f-infl/logistic-coef-relvar", "logistic: relative variance of the coefficient c",
         "the ICLR submission, App. D, Results: 0.025, 0.024, 0.027 for t = 10, 60, 90",
         "never judged: var/mean carries the units of c, which depend on the loss scale",
         _judge_coef_relvar, judged=False),
    Rule("h-x-eer/bound-holds", "Thm 4.1: E f(theta_{T+1}) - f* <= bound (all T, schedules, quadratics here)",
         "the FAccT version, Thm 4.1: holds (proof D.1)", "exact: min bound/exact >= 1",
         _judge_bound_holds),
    Rule("h-x-eer/mc", "closed form = trainer's mean, one scale and schedule", "not in the paper",
         f"agrees: |z| < {EER_MC_Z_MAX:g} where no gradient was clipped; clipped: not comparable",
         _judge_mc),
    Rule("h-x-eer/mc-all", "closed form = trainer's mean (no clipping)", "not in the paper",
         f"agrees: every unclipped cell has |z| < {EER_MC_Z_MAX:g}",
         _judge_mc_all),
    Rule("h-x-eer/dyn-beats-uni", "dynamic (Thm 4.4) beats uniform, at each one's best T (exact risk)",
         "the FAccT version, Thm 4.4: yes (on the bound)", "exact_min(dynamic) <= exact_min(uniform) within 1e-9 relative, every scale",
         _judge_dyn_beats_uni),
    Rule("h-x-eer/t-choice", "T chosen by the bound is near-optimal (uniform)",
         "the FAccT version, Thm 4.2: T from the bound",
         f"exact risk at the bound's T within {EER_T_CHOICE_RTOL[0]:g} (relative) of the best agrees, "
         f"within {EER_T_CHOICE_RTOL[1]:g} partly",
         _judge_t_choice),
    Rule("h-x-eer-breakdown/control", "unclipped trainer vs exact E[f] - f* (control)", "-",
         f"agrees: every representable cell has |z| < {BREAKDOWN_Z_MAX:g}",
         _judge_breakdown_control),
    Rule("h-x-eer-breakdown/clipped", "clipped trainer / exact above the threshold", "-",
         "never judged: a finding beyond the paper (the bound assumes no clipping)",
         _judge_breakdown_clipped, judged=False),
)

#: the rules by id (for :func:`eff_rows`, which cannot import the registry that imports this module)
_RULE_BY_ID = {r.id: r for r in RULES}
