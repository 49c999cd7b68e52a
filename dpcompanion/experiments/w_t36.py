"""W-T36: Wu et al. (ADP-SGD, arXiv 2110.07435) Tables 3 and 6: DP-SGD vs ADP-SGD with *adaptive*
step sizes (Sec. 6.2, App. F.2, Prop. 5.2).

Step sizes ``eta_t = eta / b_{t+1}`` with ``b_{t+1}^2 = b_t^2 + max(beta_t ||g_t||^2, 1e-5)``,
``beta_t = max(beta / ((t mod P) + 1), 1)`` (P = steps per epoch, 195 in the paper),
``b_0^2 = 20``, eta = 1; ADP-SGD's noise is fixed in advance by ``alpha_t^2 = sqrt(b_0^2 + t C)``
(W Sec. 5.2) and calibrated to DP-SGD's RDP epsilon. ``g_t`` is the *privatized* mean
gradient (post-processing, no privacy cost; W's Algorithm 1 writes the raw gradient, which
would need its own privatization). DP-SGD tunes beta, ADP-SGD tunes C at DP-SGD's beta (as in every
cell of Table 6), on the best validation accuracy, on seeds disjoint from the reported ones
(:mod:`dpcompanion.experiments.protocols.tuning`), a choice on an end of the paper's grid also tuned
beyond it.
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np
import torch

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module
from dpcompanion.experiments.comparisons.rule import Rule
from dpcompanion.experiments.comparisons.wu_rules import TABLE_TOL, gap_case, gap_rule, table_rule
from dpcompanion.experiments.protocols import tuning, wu as wp, wu_paper
from dpcompanion.experiments.scale_tables import (Dim, STEPS_RATIO, W_LAYERS, W_MODEL_DATA, W_TRAIN, config_key,
                                                  config_steps, payload_cells)
from dpcompanion.theory import accounting


TITLE = "ADP-SGD vs DP-SGD with adaptive step sizes (Wu et al. Tables 3, 6)"
SCALE_NOTE = ("Fashion-MNIST (2 000 training images; CNN pre-trained on MNIST, last layer fine-tuned), 60 epochs "
              "as the paper, both clips and all 4 privacy levels, the paper's grids (6 betas for DP-SGD, 6 Cs for "
              "ADP-SGD at DP-SGD's beta) tuned on 5 seeds, reported on 5 to 200 fresh seeds (80% power for the "
              "paper's gap at the sd seen on the tuning seeds); the paper: CIFAR-10 (50 000 images), 5 runs.")
REPEATS_KEY = "seeds"

#: the paper's grid (W Sec. 6.2): T = 11 700 (60 epochs of CIFAR-10), clips 1 and 2.5
PAPER_GRID = dict(dataset="cifar10", n_train=50000, n_val=10000, epochs=60, clips=[1.0, 2.5],
                  epsilon_bars=[0.8, 1.6, 3.2, 6.4], betas=[1, 512, 1024, 2048, 4096, 8192],
                  Cs=[1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0], b0_sq=20.0, seeds=5, eval_every=20)

_COMMON = dict(dataset="fashion", data_dir=None, batch_size=256, delta=1e-5, b0_sq=20.0)
#: Power: a cell's report seeds detect Table 3's printed gap at 80% power at the paired sd of the
#: chosen configurations on the *tuning* seeds, within [report_seeds_min, report_seeds_max].
#: Stated bounds: beta >= 1 (beta_t is clamped at 1) and the paper's grid ends; the beyond
#: setting lifts them (log steps, up to BEYOND_MAX).
STATED = {"beta": {"low": (1.0, "beta >= 1: W Sec. 6.2 take beta_t = max(beta / ((t mod 195) + 1), 1) with beta_t > 1 "
                               "and beta in {1, 512, ..., 8192}; every beta <= 1 is the same run"),
                   "high": (8192.0, "beta <= 8192, the paper's grid (W Sec. 6.2)")},
           "C": {"low": (1e-5, "C >= 1e-5, the paper's grid (W Sec. 6.2)"),
                 "high": (1.0, "C <= 1, the paper's grid (W Sec. 6.2)")}}
BEYOND_MAX = {"beta": 2.0 ** 17, "C": 1e3}

CONFIGS = {
    "quick": dict(_COMMON, n_train=1000, n_val=1000, pretrain_n=3000, pretrain_epochs=1, epochs=10, clips=[2.5],
                  epsilon_bars=[0.8, 3.2], betas=[1, 1024], Cs=[1e-5, 1e-2], tune_seeds=2, report_seeds_min=2,
                  report_seeds_max=3, eval_every=10, max_rounds=1),
    "full": dict(_COMMON, n_train=2000, n_val=2000, pretrain_n=20000, pretrain_epochs=2, epochs=60,
                 clips=[1.0, 2.5], epsilon_bars=[0.8, 1.6, 3.2, 6.4], betas=PAPER_GRID["betas"],
                 Cs=PAPER_GRID["Cs"], tune_seeds=5, report_seeds_min=5, report_seeds_max=200, eval_every=20,
                 max_rounds=3),
}


def report_seeds_for(clip: float, epsilon_bar: float, *, sd: float, floor: int, cap: int) -> tuple[int, int]:
    """(n used, n needed): the report seeds of one cell, 80% power for the paper's printed gap
    (Table 3) at a paired sd ``sd``, within ``[floor, cap]``; without a printed gap, ``cap``.

    >>> report_seeds_for(2.5, 6.4, sd=0.36, floor=5, cap=200)
    (5, 2)
    >>> report_seeds_for(2.5, 3.2, sd=0.36, floor=5, cap=200)
    (200, 1131)
    """
    printed = wu_paper.TABLE3.get((float(clip), float(epsilon_bar)))
    if printed is None or printed[0] == printed[2]:
        return int(cap), int(cap)
    need = tuning.repeats_for_power(sd=float(sd), effect=printed[0] - printed[2])
    return int(min(cap, max(floor, need))), int(need)


def units(config: dict) -> list[dict]:
    keep = ("dataset", "data_dir", "batch_size", "delta", "b0_sq", "n_train", "n_val", "pretrain_n",
            "pretrain_epochs", "epochs", "betas", "Cs", "tune_seeds", "eval_every", "seed", "max_rounds",
            "report_seeds_max")
    base = {k: config[k] for k in keep}
    return [dict(base, clip=float(c), epsilon_bar=float(eb), report_seeds_min=int(config.get("report_seeds_min", 5)))
            for c, eb in itertools.product(config["clips"], config["epsilon_bars"])]


def adaptive_rule(*, betas, b0_sq: float, period: int, eta: float = 1.0):
    """``factory(K)`` for :func:`~dpcompanion.experiments.protocols.wu.train_segments`: W's adaptive
    step size, one beta per run."""

    def factory(K: int):
        state = {}
        beta = torch.as_tensor(np.asarray(betas, dtype=np.float64))

        def rule(t: int, g, lr_t):
            if "b_sq" not in state:
                state["b_sq"] = torch.full((g.shape[0],), float(b0_sq), dtype=g.dtype)
            beta_t = torch.clamp(beta.to(g.dtype) / ((t % period) + 1), min=1.0)
            state["b_sq"] = state["b_sq"] + torch.clamp(beta_t * (g * g).sum(-1), min=1e-5)
            return eta / torch.sqrt(state["b_sq"])

        return rule

    return factory


def run_unit(u: dict, device: str) -> dict:
    with wp.single_thread():
        f = wp.transfer_features(dataset=u["dataset"], n_train=u["n_train"], n_val=u["n_val"], seed=u["seed"],
                                 pretrain_n=u["pretrain_n"], pretrain_epochs=u["pretrain_epochs"],
                                 data_dir=u["data_dir"])
        N = len(f["y_train"])
        m, q = u["batch_size"], u["batch_size"] / N
        T = wp.steps_for(epochs=u["epochs"], N=N, batch_size=m)
        period = max(1, int(np.ceil(N / m)))
        z_dp = wp.dp_noise_multiplier(epsilon_bar=u["epsilon_bar"], T=T, N=N, batch_size=m, delta=u["delta"])
        orders = wp.orders_for(sigma=z_dp, T=T, sampling_rate=q, delta=u["delta"])
        eps = accounting.rdp_epsilon_repeated(sigma=z_dp, T=T, sampling_rate=q, delta=u["delta"], orders=orders,
                                              check_order=True)
        t = np.arange(1, T + 1, dtype=np.float64)
        ss = np.random.SeedSequence([u["seed"], int(u["epsilon_bar"] * 100), int(u["clip"] * 100)])
        s_tune, s_rep = ss.spawn(2)
        tseeds = [int(x) for x in s_tune.generate_state(u["tune_seeds"]) & 0x7FFFFFFF]
        z_of: dict[float, float] = {}
        eps_adp = []

        def sigma_of(method, C):
            if method == "dp":
                return np.full(T, z_dp)
            alpha = (u["b0_sq"] + t * C) ** 0.25
            if C not in z_of:
                z_of[C] = wp.calibrate(alpha=alpha, sampling_rate=q, delta=u["delta"], epsilon_target=eps,
                                       orders=orders, bracket=(z_dp / alpha.max(), z_dp / alpha.min()))
                eps_adp.append(wp.epsilon(rdp=wp.rdp_total(sigma=z_of[C] * alpha, sampling_rate=q, orders=orders),
                                          delta=u["delta"], orders=orders))
            return z_of[C] * alpha

        stats = {"stopped": 0, "lr_first": [], "lr_last": []}

        def train(configs, seeds):
            S = len(seeds)
            sig = np.repeat(np.stack([sigma_of(m, C) for m, _, C in configs]), S, axis=0)
            betas = np.repeat([b for _, b, _ in configs], S)
            r = wp.train_segments(wp.head_model(dim=f["dim"]), f["X_train"], f["y_train"], X_val=f["X_val"],
                                  y_val=f["y_val"], sigma=sig, lr=np.ones_like(sig), seeds=list(seeds) * len(configs),
                                  clip_norm=u["clip"], sampling_rate=q, delta=u["delta"], epsilon_target=eps,
                                  eval_every=u["eval_every"], device=device, orders=orders,
                                  lr_rule_factory=adaptive_rule(betas=betas, b0_sq=u["b0_sq"], period=period))
            stats["stopped"] += int(r["stopped"].sum())
            stats["lr_first"] += list(r["lr_used"][:, 0].reshape(len(configs), S)[:, 0])
            stats["lr_last"] += list(r["lr_used"][:, -1].reshape(len(configs), S).mean(1))
            acc = 100 * r["val_accuracy"].reshape(len(configs), S, -1)
            return acc[:, :, 1:].max(-1), acc[:, :, -1]

        cache: dict[tuple, float] = {}
        per_seed: dict[tuple, np.ndarray] = {}

        def evaluate(method, beta=None):
            def f(cs):
                cfgs = [(method, float(c.get("beta", beta)), float(c.get("C", 0.0))) for c in cs]
                todo = [c for c in cfgs if c not in cache]
                if todo:
                    best, _ = train(todo, tseeds)
                    cache.update({c: float(v) for c, v in zip(todo, best.mean(axis=1))})
                    per_seed.update(dict(zip(todo, best)))
                return [cache[c] for c in cfgs]
            return f

        beyond_stated = {"beta": {"low": STATED["beta"]["low"]}}
        beyond_limits = {p: (None, v) for p, v in BEYOND_MAX.items()}
        rounds = int(u.get("max_rounds", 3))
        chosen, traces = {}, {}
        for setting in ("paper", "beyond"):
            st = STATED if setting == "paper" else beyond_stated
            lim = {} if setting == "paper" else beyond_limits
            start = traces.get("paper", {})  # the beyond setting starts from the paper setting's grids
            ch, tr_dp = tuning.tune(evaluate("dp"), {"beta": start["dp"]["grids"]["beta"] if start else u["betas"]},
                                    stated={"beta": st["beta"]},
                                    scales={"beta": "log"}, limits=lim, max_rounds=rounds, minimize=False)
            beta = float(ch["beta"])
            c_grid = start["adp"]["grids"]["C"] if start and beta == chosen["paper"]["dp"][1] else u["Cs"]
            chc, tr_adp = tuning.tune(evaluate("adp", beta), {"C": c_grid}, stated={"C": st.get("C", {})},
                                      scales={"C": "log"}, limits=lim, max_rounds=rounds, minimize=False)
            chosen[setting] = {"dp": ("dp", beta, 0.0), "adp": ("adp", beta, float(chc["C"]))}
            traces[setting] = {"dp": tr_dp, "adp": tr_adp}
        # power: the paired sd of the two chosen configurations on the tuning seeds plans the report seeds
        pc = chosen["paper"]
        sd_plan = float(np.std(per_seed[pc["adp"]] - per_seed[pc["dp"]], ddof=1)) if len(tseeds) > 1 else 0.0
        n_rep, n_need = report_seeds_for(u["clip"], u["epsilon_bar"], sd=sd_plan, floor=u["report_seeds_min"],
                                         cap=u["report_seeds_max"])
        rseeds = [int(x) for x in s_rep.generate_state(n_rep) & 0x7FFFFFFF]
        tuning.disjoint_seeds(tseeds, rseeds)
        runs = sorted({c for st in chosen.values() for c in st.values()})
        best, last = train(runs, rseeds)
        res = {c: (best[i], last[i]) for i, c in enumerate(runs)}
        report, records = {}, []
        for setting in ("paper", "beyond"):
            report[setting] = {m: {"beta": c[1], "C": c[2], "best": res[c][0], "last": res[c][1]}
                               for m, c in chosen[setting].items()}
            if setting == "beyond" and chosen["beyond"] == chosen["paper"] and all(
                    traces["beyond"][m]["grids"] == traces["paper"][m]["grids"] for m in ("dp", "adp")):
                continue  # nothing beyond the paper's ends was searched: one setting
            for m in ("dp", "adp"):
                records += tuning.record(traces[setting][m], method=m, tuning_seeds=tseeds, report_seeds=rseeds,
                                         setting=setting, cell=f"C_G {u['clip']:g}, eps_bar {u['epsilon_bar']:g}")
        cands = sorted(cache)
        return {"clip": u["clip"], "epsilon_bar": u["epsilon_bar"], "method": [c[0] for c in cands],
                "beta": [c[1] for c in cands], "C": [c[2] for c in cands],
                "tune_score": np.array([cache[c] for c in cands]), "report": report,
                "beyond_differs": chosen["beyond"] != chosen["paper"], "tuning": records,
                "tune_seeds": len(tseeds), "report_seeds": len(rseeds),
                "report_seeds_needed": n_need, "sd_plan": sd_plan,
                "epsilon": eps, "epsilon_adp_max_rel": float(max(abs(e - eps) / eps for e in eps_adp)),
                "T": T, "stopped": stats["stopped"], "lr_first": np.array(stats["lr_first"]),
                "lr_last": np.array(stats["lr_last"]),
                "dataset_used": f["dataset"], "public": f["public"], "N_train": N, "N_val": len(f["y_val"])}


def combine(config: dict, results: list[dict]) -> dict:
    return {"cells": results, "tuning": [e for r in results for e in r["tuning"]]}


def best_of(cell: dict, method: str, setting: str = "paper") -> dict:
    """The configuration ``method`` ("dp" or "adp") chose in one cell (``setting``: "paper" or
    "beyond"), with its accuracies on the report seeds."""
    r = cell["report"][setting][method]
    return {"beta": r["beta"], "C": r["C"], "best": np.asarray(r["best"]), "last": np.asarray(r["last"])}


def verdict_rows(payload) -> list[dict]:
    """One row per cell (rule ``w-t36/gap``) against Table 3's printed cell, comparable at the paper's
    60 epochs with >= 2 seeds per method, capped by the tuning protocol
    (:func:`dpcompanion.experiments.comparisons.apply_tuning_cap`)."""
    out = []
    for c in payload["cells"]:
        T_paper = wp.steps_for(epochs=PAPER_GRID["epochs"], N=int(c["N_train"]), batch_size=_COMMON["batch_size"])
        for setting in ("paper", "beyond"):
            if setting == "beyond" and not c.get("beyond_differs"):
                continue
            a, d = best_of(c, "adp", setting), best_of(c, "dp", setting)
            ok = int(c["T"]) == T_paper and len(a["best"]) >= 2 and len(d["best"]) >= 2
            tail = "" if setting == "paper" else " (beyond the paper's grid)"
            out.append(comparisons.compare(
                "w-t36/gap", sizes_match=ok,
                item=f"Table 3: gain ADP - DP, C_G {c['clip']:g}, eps_bar {c['epsilon_bar']:g}{tail}",
                sizes_note=f"T = {c['T']} ({len(a['best'])} seeds) vs {T_paper} for the paper's {PAPER_GRID['epochs']} epochs",
                printed=wu_paper.TABLE3.get((c["clip"], c["epsilon_bar"])), adp=a["best"], dp=d["best"]))
    return [comparisons.apply_tuning_cap(r, payload.get("tuning")) for r in out]


def table_rows(cell_rows: Sequence[dict]) -> list[dict]:
    """Rule ``w-t36/table`` over the page's ``w-t36/gap`` rows: one row for the paper's grid, one for the
    grid beyond it where such cells exist (each cell with its verdict, outcome, cap, gap and se).

    >>> table_rows([])
    []
    """
    out = []
    for beyond in (False, True):
        mine = [r for r in cell_rows if r.get("rule") == "w-t36/gap" and ("beyond" in str(r["item"])) == beyond]
        if not mine:
            continue
        cells = [{"verdict": r["verdict"], "outcome": r["outcome"], "cap": r["cap"], "gap": float(r["stats"].get("estimate", math.nan) if r.get("stats") else math.nan),
                  "se": float((r.get("stats") or {}).get("se") or math.nan),
                  "paper_gap": (r.get("stats") or {}).get("paper_value")} for r in mine]
        tail = " (beyond the paper's grid)" if beyond else ""
        out.append(comparisons.compare("w-t36/table", sizes_match=True, table=3, cells=cells,
                        item=f"Table 3: ADP-SGD ahead of DP-SGD, pooled over {len(cells)} cells{tail}"))
    return out


def report_verdict_rows(payload) -> list[dict]:
    """The page's rows, then Table 3's verdict of its cells pooled (:func:`table_rows`)."""
    rows = verdict_rows(payload)
    return rows + table_rows(rows)


# ------------------------------------------------------------------------ the paper's scale and this page's rules


PAPER_DIMS = {
    "training samples": Dim(50000, W_TRAIN, config_key("n_train"), setup=True),
    "model / data": W_MODEL_DATA,
    "seeds": Dim(5, "Wu et al., App. F.2: \"Based on these hyper-parameters, we repeat the experiments five times\"",
                 config_key("seeds")),
    "epochs": Dim(60, "Wu et al., Table 3 (60 epochs)", config_key("epochs")),
    "steps": Dim(11700, "Wu et al., Sec. 6.2 and footnote 3: T = 11700 for 60 epochs (ours: ceil(epochs N / 256); "
                 f"matches within {100 * (STEPS_RATIO - 1):g}%)", config_steps("epochs", "n_train"), setup=True,
                 ratio=STEPS_RATIO),
    "trained layers": W_LAYERS,
    "(beta, C) grid": Dim({"betas": [1, 512, 1024, 2048, 4096, 8192], "Cs": [1e-5, 1e-4, 0.001, 0.01, 0.1, 1]},
                          "Wu et al., Sec. 6.2: beta \"searching in a set {1, 512, 1024, 2048, 4096, 8192}\" and "
                          "\"C in {1e-5, 1e-4, 0.001, 0.01, 0.1, 1}\" (Table 6 prints the chosen pairs)",
                          lambda c: {"betas": c.get("betas"), "Cs": c.get("Cs")}),
}


STORED_SIZES = {"training samples": payload_cells("N_train")}


RULES: tuple[Rule, ...] = (
    gap_rule("w-t36/gap", "Table 3: gain ADP - DP (adaptive step sizes, best accuracy)", "Wu et al., Table 3",
             where="Wu et al., Table 3", paired_because="w_t36.run_unit reports both chosen configurations on the same "
             "report seeds (seeds = list(rseeds) * len(configs) in one protocols.wu.train_segments call)",
             case=gap_case("Wu et al., Table 3: ADP-SGD ahead by a significant 1.32 points",
                           printed=wu_paper.TABLE3[(2.5, 6.4)], adp=[67.5, 67.7, 67.6], dp=[66.2, 66.3, 66.4])),
    table_rule("w-t36/table", "Table 3: ADP-SGD ahead of DP-SGD (pooled over the cells run here)",
               "Wu et al., Table 3: the printed gaps", tolerance=TABLE_TOL + " (each cell judged by w-t36/gap)",
               paired_because="its cells are w-t36/gap's (the same report seeds for both chosen configurations)"),
)


EXPERIMENT = from_module(__name__, id="w-t36")
