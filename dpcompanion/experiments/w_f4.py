"""W-F4: Wu et al. (ADP-SGD, arXiv 2110.07435) Figure 4 (App. F.3): DP-SGD on MNIST trained from
scratch with a constant step size (c = 0) vs decaying ones, eta_t = 1/sqrt(2 + c t),
c in {0, 1e-5, 1e-3, 1e-2, 0.1, 0.5}, for noise multipliers sigma in {1.6, 3.2, 6.4, 12.8},
50 epochs: test error vs epoch, with the numerical epsilon (RDP accountant) and Thm 4.1's
epsilon_bar at each epoch.

The paper's CNN costs seconds per step here, so full mode uses a one-hidden-layer MLP on the raw
pixels (784 -> 100 -> 10); paper mode (``--mode paper``) is App. F.3's size (the CNN on all 60,000
images, 10,000 test images, the full grid) with two seeds per cell (the paper prints no count; two
give a spread), as two replicate units per cell of about 10 CPU minutes each. The batch size (256)
and clip norm (1) are not given for this figure; ours are stated.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import Counter
from typing import Sequence

import numpy as np

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module
from dpcompanion.experiments.comparisons.rule import (Case, Judgement, LEVEL, Margin, Rule, W_ACC_MARGIN, W_SPREAD,
                                                      estimate_effect, judge_effect, pool_random_effects, sign_of,
                                                      tost)
from dpcompanion.experiments.protocols import wu as wp
from dpcompanion.experiments.scale_tables import (Dim, STEPS_RATIO, config_key, config_steps, payload_cells,
                                                  payload_seeds)
from dpcompanion.theory import adp_accounting, accounting
from dpcompanion.training import data
from dpcompanion.training.models import make_model


TITLE = "DP-SGD with constant vs decaying step sizes on MNIST (Wu et al. Fig. 4)"
SCALE_NOTE = ("MNIST, 2 000 training and 2 000 test images, all 4 sigmas and 6 values of c, 50 epochs as the "
              "paper, 2 seeds, a one-hidden-layer MLP instead of the paper's CNN (from scratch in both); the "
              "paper: 60 000 images, CNN. Paper mode (`--mode paper`, hours on two cores): the CNN on "
              "60 000 images, 10 000 test images, 50 epochs, the full grid, 2 seeds per cell.")
REPEATS_KEY = "seeds"

#: the paper's grid (W App. F.3): 60 000 MNIST images, CNN from scratch, 50 epochs
PAPER_GRID = dict(model="cnn-mnist", n_train=60000, n_test=10000, epochs=50, sigmas=[1.6, 3.2, 6.4, 12.8],
                  cs=[0.0, 1e-5, 1e-3, 1e-2, 0.1, 0.5], seeds=1)

_COMMON = dict(batch_size=256, delta=1e-5, clip=1.0, a=2.0, hidden=100)

CONFIGS = {
    "quick": dict(_COMMON, model="mlp", n_train=1000, n_test=1000, epochs=10, sigmas=[1.6, 12.8], cs=[0.0, 0.1],
                  seeds=2),
    "full": dict(_COMMON, model="mlp", n_train=2000, n_test=2000, epochs=50, sigmas=[1.6, 3.2, 6.4, 12.8],
                 cs=[0.0, 1e-5, 1e-3, 1e-2, 0.1, 0.5], seeds=2),
}
#: the optional paper mode: App. F.3's CNN on all of MNIST, 2 seeds per cell (2 replicates of 1 seed each)
CONFIGS["paper"] = dict(_COMMON, **PAPER_GRID, replicates=2)


def units(config: dict) -> list[dict]:
    """One unit per (sigma, c) cell; with ``config["replicates"]`` (paper mode), as many per cell, each
    with seeds of its own (replicate 0's unit is the single-seed cell's, key and all)."""
    keep = ("batch_size", "delta", "clip", "a", "hidden", "model", "n_train", "n_test", "epochs", "seeds", "seed")
    base = {k: config[k] for k in keep}
    reps = int(config.get("replicates", 1))
    return [dict(base, sigma=float(s), c=float(c), **({"replicate": r} if r else {}))
            for r in range(reps) for s, c in itertools.product(config["sigmas"], config["cs"])]


def run_unit(u: dict, device: str) -> dict:
    with wp.single_thread():
        d = data.load("mnist", n=u["n_train"], scale=None, pca_dim=None, seed=u["seed"])
        rng = np.random.default_rng(u["seed"])
        te = np.sort(rng.choice(len(d.y_test), size=min(u["n_test"], len(d.y_test)), replace=False))
        N, m = len(d.y_train), u["batch_size"]
        q = m / N
        per_epoch = int(math.ceil(N / m))
        T = per_epoch * u["epochs"]
        model = (make_model("mlp", in_dim=784, n_classes=10, hidden=u["hidden"]) if u["model"] == "mlp"
                 else make_model(u["model"], n_classes=10))
        sigma = np.full(T, u["sigma"])
        orders = wp.orders_for(sigma=u["sigma"], T=T, sampling_rate=q, delta=u["delta"])
        eps_total = accounting.rdp_epsilon_repeated(sigma=u["sigma"], T=T, sampling_rate=q, delta=u["delta"],
                                                    orders=orders)
        eta = wp.step_sizes(family="sqrt", T=T, a=u["a"], c=u["c"])
        rep = int(u.get("replicate", 0))  # replicate 0: the seeds a single-seed cell always had
        ss = np.random.SeedSequence([u["seed"], int(u["sigma"] * 10), int(round(u["c"] * 1e5))] + ([rep] if rep else []))
        seeds = [int(s) for s in ss.generate_state(u["seeds"]) & 0x7FFFFFFF]
        K = len(seeds)
        r = wp.train_segments(model, d.X_train, d.y_train, X_val=d.X_test[te], y_val=d.y_test[te],
                              sigma=np.broadcast_to(sigma, (K, T)), lr=np.broadcast_to(eta, (K, T)), seeds=seeds,
                              clip_norm=u["clip"], sampling_rate=q, delta=u["delta"], epsilon_target=eps_total,
                              eval_every=per_epoch, device=device, orders=orders)
        epochs = np.arange(u["epochs"] + 1)
        eps_num = wp.epsilon_curve(sigma=sigma, sampling_rate=q, delta=u["delta"], at=epochs * per_epoch,
                                   orders=orders)
        eps_th = np.array([0.0] + [adp_accounting.adp_epsilon_bar(sigma=u["sigma"], T=e * per_epoch, N=N, batch_size=m,
                                                              clip=u["clip"], delta=u["delta"]) for e in epochs[1:]])
        return {"sigma": u["sigma"], "c": u["c"], "epochs": epochs, "test_error": 100 - 100 * r["val_accuracy"],
                "eps_numeric": eps_num, "eps_theory": eps_th, "T": T, "N": N, "stopped": int(r["stopped"].sum()),
                "model": u["model"]}


def combine(config: dict, results: list[dict]) -> dict:
    """``runs``: one per (sigma, c) cell, its replicates joined (test-error rows stacked)."""
    cells: dict[tuple, dict] = {}
    for r in results:
        key = (float(r["sigma"]), float(r["c"]))
        if key not in cells:
            cells[key] = dict(r)
        else:
            m = cells[key]
            m["test_error"] = np.concatenate([np.atleast_2d(m["test_error"]), np.atleast_2d(r["test_error"])])
            m["stopped"] = int(m["stopped"]) + int(r["stopped"])
    return {"runs": list(cells.values())}


def verdict_rows(payload) -> list[dict]:
    """The page's rows: per sigma, whether the decaying step sizes end below the constant one; the
    numerical epsilon against Thm 4.1's epsilon_bar at the last epoch (first run)."""
    runs = payload["runs"]
    rows = []
    for s in sorted({float(r["sigma"]) for r in runs}):
        final = {float(r["c"]): np.asarray(r["test_error"])[:, -1].tolist() for r in runs if r["sigma"] == s}
        rows.append(comparisons.compare(
            "w-f4/decay", sizes_match=True, final_error=final,
            item=f"sigma {s:g}: decaying step sizes (c > 0) end below the constant one (c = 0)"))
    r = runs[0]
    rows.append(comparisons.compare(
        "w-f4/eps-below-bar", sizes_match=True, eps_numeric=float(r["eps_numeric"][-1]),
        eps_theory=float(r["eps_theory"][-1]),
        item=f"numerical epsilon below Thm 4.1's epsilon_bar after {len(r['epochs']) - 1} epochs (sigma {r['sigma']:g})"))
    return rows


# ------------------------------------------------------------------------ the paper's scale and this page's rules


PAPER_DIMS = {
    "training samples": Dim(None, "Wu et al., App. F.3: \"applied to the MNIST dataset\" (size not printed)",
                            config_key("n_train")),
    "model": Dim("CNN", "Wu et al., App. F.3: \"a convolutional neural network\" (Fig. 6)",
                 lambda c: "CNN" if str(c.get("model", "")).startswith("cnn") else c.get("model"), setup=True),
    "seeds": Dim(None, "Wu et al., App. F.3: not printed",
                 lambda c: int(c.get("seeds", 1)) * int(c.get("replicates", 1))),
    "epochs": Dim(50, "Wu et al., Fig. 4 (a)-(d): each sigma \"for 50 epochs\"", config_key("epochs")),
    "steps": Dim(None, "Wu et al., App. F.3: not printed (MNIST's 60,000 images for 50 epochs at batch 256 would be "
                 "11,750; ours: ceil(N / 256) epochs)", config_steps("epochs", "n_train", per_epoch_ceil=True),
                 setup=True, ratio=STEPS_RATIO),
    "trained layers": Dim("all (from scratch)", "Wu et al., App. F.3: the CNN trained on MNIST (no pre-training)",
                          lambda c: "all (from scratch)", setup=True),
    "c grid": Dim([0.0, 1e-5, 1e-3, 1e-2, 0.1, 0.5], "Wu et al., App. F.3: \"We vary c in {0, 1e-5, 1e-3, 1e-2, 1e-1, "
                  "5e-1}\"", config_key("cs")),
}


STORED_SIZES = {"training samples": payload_cells("N", of="runs"), "seeds": payload_seeds("runs", 0, "test_error"),
             "epochs": lambda p: int(max(max(r["epochs"]) for r in p["runs"])),
             "c grid": payload_cells("c", many=True, of="runs"),
             "model": lambda p: "CNN" if str(payload_cells("model", of="runs")(p)).startswith("cnn")
             else payload_cells("model", of="runs")(p)}


def _judge_decay(*, final_error: dict) -> Judgement:
    """``final_error``: c -> our final test errors (%, one per seed). "Every c > 0 beats c = 0" is judged
    by an intersection-union test (Berger 1982): each c > 0 by its own err(c = 0) - err(c) (Welch t) at
    the fixed level (no multiplicity correction: the claim holds only if every cell holds); the row's
    numbers are the deciding cell's (:func:`_deciding_cell`), so it agrees only when every cell passes.

    >>> _judge_decay(final_error={0.0: [10.0, 10.2, 9.9], 0.1: [8.0, 8.1, 7.9]}).verdict
    'agrees'
    >>> _judge_decay(final_error={0.0: [10.0, 12.0], 0.1: [9.0, 11.5]}).verdict
    'inconclusive'
    >>> j = _judge_decay(final_error={0.0: [10.0, 10.2, 9.9], 0.1: [8.0, 8.1, 7.9], 1e-5: [10.1, 9.9, 10.2]})
    >>> j.verdict, j.ours.split(";")[0]
    ('inconclusive', '1 of 2 values of c > 0 significantly below c = 0 (each at the 95% level)')
    """
    def seeds(v):
        return [float(x) for x in (v if isinstance(v, (list, tuple, np.ndarray)) else [v])]

    rs = {float(c): seeds(e) for c, e in final_error.items()}
    if 0.0 not in rs or len(rs) < 2:
        return Judgement("not comparable", "needs c = 0 and at least one c > 0", ours="no c = 0 run or no c > 0 run")
    base = rs[0.0]
    if min(len(v) for v in rs.values()) < 2:
        return Judgement("not comparable", "fewer than 2 seeds: no spread to judge by", ours="one seed per schedule")
    m = comparisons.rule_by_id("w-f4/decay").margin
    design = comparisons.design_of("w-f4/decay")
    cs = sorted(k for k in rs if k > 0)
    cells = []
    for c in cs:
        # mean(c = 0) - mean(c): positive = decaying better; independent arms (the rule's design)
        e = estimate_effect(base, rs[c], design=design)
        j = judge_effect(e.estimate, e.se, direction=+1, df=e.df, n=e.n, design=e.design, margin=m.value)
        absent = math.isfinite(e.se) and tost(e.estimate, e.se, margin=m.value, df=e.df).equivalent
        cells.append((c, j, sign_of(j.ci_low, j.ci_high, +1), absent))
    c_shown, shown, side, absent = _deciding_cell(cells)
    passed = [c for c, _, sd, ab in cells if sd == "paper's side" and not ab]
    failed = [(c, j, sd, ab) for c, j, sd, ab in cells if not (sd == "paper's side" and not ab)]
    word = ("agrees" if not failed else "disagrees" if any(sd == "other side" for _, _, sd, _ in failed)
            else "equivalent" if any(ab for *_, ab in failed) else "inconclusive")

    def cell_text(c, j, sd, ab):
        why = "above zero" if sd == "other side" else "inside the margin (TOST)" if ab else "not separated"
        return f"c = {c:g}: {j.estimate:+.2f} (95% CI {j.ci_low:+.2f} to {j.ci_high:+.2f}, {why})"

    level = f"{100 * LEVEL:g}%"
    ours = (f"{len(passed)} of {len(cells)} values of c > 0 significantly below c = 0 (each at the {level} level)"
            + (f"; not: {'; '.join(cell_text(*f) for f in failed)}" if failed else "")
            + f"; deciding cell c = {c_shown:g}: err(c = 0) - err(c) {shown.estimate:+.2f} points "
              f"({level} CI {shown.ci_low:+.2f} to {shown.ci_high:+.2f}), c = 0 at {np.mean(base):.2f}%")
    p, se, df = _pool_against_base(base, [rs[c] for c in cs])
    counted = ", ".join(f"{k} {n}" for k, n in sorted(Counter(j.verdict for _, j, _, _ in cells).items()))
    remark = ("; intersection-union test: the row's interval is the deciding cell's, the claim holds only if every "
              "cell excludes zero on the paper's side; per c, err(c = 0) - err(c) (Welch t): "
              + "; ".join(f"c = {c:g}: {j.estimate:+.2f} ± {j.se:.2f} ({j.verdict})" for c, j, _, _ in cells)
              + f"; cells by verdict: {counted}; for reference only (not the test), the pooled effect over the "
                f"{p.k} values c > 0 by random effects (DerSimonian-Laird tau^2 = {p.tau2:.3g}, modified "
                f"Hartung-Knapp, the shared c = 0 arm counted once): {p.estimate:+.2f} ± {se:.2f}")
    return dataclasses.replace(shown, verdict=word).for_row(ours, remark=remark)


def _deciding_cell(cells):
    """The cell deciding an intersection-union test over ``(c, judgement, sign, absent)``: of those on the
    other side of zero, the lowest upper bound; else of those shown absent, the smallest |estimate|; else
    the lowest lower bound (it excludes zero exactly when every cell does).

    >>> from dpcompanion.experiments.comparisons.rule import Judgement as J
    >>> cells = [(0.1, J("x", "", estimate=2.0, ci_low=1.0, ci_high=3.0), "paper's side", False),
    ...          (0.5, J("x", "", estimate=1.0, ci_low=0.2, ci_high=1.8), "paper's side", False)]
    >>> _deciding_cell(cells)[0], _deciding_cell(cells + [(1e-5, J("x", "", estimate=-1.0, ci_low=-2.0, ci_high=-0.1),
    ...                                                   "other side", False)])[0]
    (0.5, 1e-05)
    """
    other = [x for x in cells if x[2] == "other side"]
    if other:
        return min(other, key=lambda x: x[1].ci_high)
    absent = [x for x in cells if x[3]]
    if absent:
        return min(absent, key=lambda x: abs(x[1].estimate))
    return min(cells, key=lambda x: x[1].ci_low)


def _pool_against_base(base: Sequence[float], arms: Sequence[Sequence[float]]):
    """The pooled effect ``mean(base) - mu`` over arms compared with one shared ``base`` arm: random
    effects of ``mean(base) - mean(arm_c)`` with each arm's own variance (the shared base shifts every
    effect alike), then the base's ``s_0^2 / n_0`` added once; df by Satterthwaite. ``(pooled, se, df)``.

    >>> p, se, df = _pool_against_base([10.0, 10.2, 9.8], [[8.0, 8.2, 7.8], [9.0, 9.2, 8.8]])
    >>> round(p.estimate, 6), round(se**2, 6), round(df, 3)
    (1.5, 0.263333, 1.108)
    """
    b = np.asarray(base, float)
    ys = [float(b.mean() - np.mean(a)) for a in arms]
    ses = [float(np.std(a, ddof=1) / math.sqrt(len(a))) for a in arms]
    p = pool_random_effects(ys, ses)
    vb = float(np.var(b, ddof=1) / b.size)
    vp = p.se**2
    df_p = p.df if p.df is not None else math.inf
    den = (vp**2 / df_p if math.isfinite(df_p) else 0.0) + vb**2 / (b.size - 1)
    df = (vp + vb) ** 2 / den if den > 0 else None
    return p, math.sqrt(vp + vb), df


def _judge_eps_below(*, eps_numeric: float, eps_theory: float) -> Judgement:
    return Judgement("agrees" if eps_numeric < eps_theory else "disagrees", "numerical (RDP) vs Thm 4.1's epsilon_bar",
                     ours=f"{eps_numeric:.3g} vs {eps_theory:.3g}")


RULES: tuple[Rule, ...] = (
    Rule("w-f4/decay", "decaying step sizes (c > 0) end below the constant one (c = 0)",
         "Wu et al., App. F.3 (Fig. 4): every decaying schedule (c > 0) beats the constant one (c = 0)",
         "an intersection-union test: every c > 0 against c = 0 by its own err(c = 0) - err(c) (Welch t, 95% CI, "
         "TOST against the practical margin); the row's interval is the deciding cell's (one below zero, else one "
         "inside the margin, else the one with the lowest bound): above zero, i.e. every cell above zero, agrees; a "
         "cell below zero disagrees; a cell inside the margin is an absent effect; else inconclusive; the count of "
         "cells that pass and the ones that do not beside it (the pooled effect for reference only)", _judge_decay,
         design=("independent", "w_f4.run_unit draws each (sigma, c) cell's seeds from SeedSequence([seed, sigma, "
                                      "c]): the c = 0 and c > 0 runs share the data, not their batches or noise"),
         margin=Margin(W_ACC_MARGIN, "points of test error", "reported spread",
                             W_SPREAD + "; Fig. 4 prints no number, test error is accuracy's complement"),
         case=Case("Wu et al., App. F.3: every c > 0 beats c = 0",
                   {"final_error": {0.0: [10.0, 10.1, 9.9], 0.1: [8.0, 8.1, 7.9], 0.5: [8.2, 8.3, 8.1],
                   1.0: [7.9, 8.0, 7.8]}},
              {"final_error": {0.0: [8.0, 8.1, 7.9], 0.1: [10.0, 10.1, 9.9], 0.5: [9.8, 9.9, 9.7],
                                    1.0: [10.1, 10.2, 10.0]}})),
    Rule("w-f4/eps-below-bar", "numerical epsilon below Thm 4.1's epsilon_bar at the last epoch",
         "Wu et al., Fig. 4 (dashed vs dots): yes", "agrees: numerical < epsilon_bar", _judge_eps_below,
         case=Case("Wu et al., Fig. 4: the numerical epsilon lies below epsilon_bar",
                   {"eps_numeric": 1.0, "eps_theory": 2.0}, {"eps_numeric": 2.5, "eps_theory": 2.0})),
)


EXPERIMENT = from_module(__name__, id="w-f4")
