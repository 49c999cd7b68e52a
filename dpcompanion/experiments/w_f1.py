"""W-F1: Wu et al. (ADP-SGD, arXiv 2110.07435) Figure 1: the noise each method adds to the parameters
(eta_t alpha_t sigma) and the privacy spent vs t for DP-SGD (alpha_t = 1) and ADP-SGD
(alpha_t = 1/sqrt(eta_t)), eta_t = 1/sqrt(20 + t), the same final budget; and the validation
accuracy of both.

Part "schedule" needs no training (it runs in every mode); part "train" runs the Poisson
mini-batch protocol of :mod:`dpcompanion.experiments.protocols.wu` (W: CIFAR-10, clip 2.5,
epsilon_bar = 3.2, batch 256; here Fashion-MNIST with a CNN pre-trained on MNIST).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module
from dpcompanion.experiments.comparisons.rule import Case, Judgement, Rule, judge_identity
from dpcompanion.experiments.comparisons.wu_rules import EPSILON_RTOL, W_SHARED, gap_case, gap_rule
from dpcompanion.experiments.protocols import wu as wp, wu_paper
from dpcompanion.experiments.scale_tables import (Dim, STEPS_RATIO, W_LAYERS, W_MODEL_DATA, W_SEEDS, W_STEPS, W_TRAIN,
                                                  config_key, config_steps, payload_seeds)


TITLE = "ADP-SGD vs DP-SGD: noise, privacy and accuracy vs t (Wu et al. Fig. 1)"
SCALE_NOTE = ("Fashion-MNIST (5 000 training images, CNN pre-trained on MNIST, last layer fine-tuned) for 120 "
              "epochs, 5 seeds; the paper: CIFAR-10 (50 000 images, CNN pre-trained on CIFAR-100), 120 epochs, "
              "5 runs.")
REPEATS_KEY = "seeds"

#: the paper's protocol for the figure (W Fig. 1 caption and Sec. 6; its accuracy curve is Fig. 3's top middle)
PAPER_CONFIG = dict(dataset="cifar10", n_train=50000, n_val=10000, epochs=120, batch_size=256, delta=1e-5,
                    epsilon_bar=3.2, clip=2.5, family="sqrt", seeds=5, eval_every=20)

_COMMON = dict(dataset="fashion", data_dir=None, batch_size=256, delta=1e-5, epsilon_bar=3.2, clip=2.5,
               family="sqrt", curve_points=200)

CONFIGS = {
    "quick": dict(_COMMON, n_train=2000, n_val=2000, pretrain_n=3000, pretrain_epochs=1, epochs=20, seeds=3,
                  eval_every=10),
    "full": dict(_COMMON, n_train=5000, n_val=5000, pretrain_n=20000, pretrain_epochs=2, epochs=120, seeds=5,
                 eval_every=20),
}


def units(config: dict) -> list[dict]:
    return [dict(config, part="schedule"), dict(config, part="train")]


def _plan(u: dict, N: int) -> dict:
    T = wp.steps_for(epochs=u["epochs"], N=N, batch_size=u["batch_size"])
    return wp.plan(epsilon_bar=u["epsilon_bar"], T=T, N=N, batch_size=u["batch_size"], delta=u["delta"],
                   family=u["family"])


def run_unit(u: dict, device: str) -> dict:
    with wp.single_thread():
        if u["part"] == "schedule":
            N = u["n_train"]
            p = _plan(u, N)
            T = len(p["eta"])
            m = u["batch_size"]
            at = np.unique(np.linspace(1, T, min(T, u["curve_points"])).round().astype(int))
            # noise on the parameters, per coordinate: eta_t x (C z_t / m)
            noise_dp = p["eta"] * u["clip"] * p["sigma_dp"] / m
            noise_adp = p["eta"] * u["clip"] * p["sigma_adp"] / m
            kw = dict(sampling_rate=p["sampling_rate"], delta=u["delta"], at=at, orders=p["orders"])
            return {"t": at, "noise_dp": noise_dp[at - 1], "noise_adp": noise_adp[at - 1],
                    "eps_dp": wp.epsilon_curve(sigma=p["sigma_dp"], **kw),
                    "eps_adp": wp.epsilon_curve(sigma=p["sigma_adp"], **kw),
                    "z_dp": p["z_dp"], "z_adp": p["z_adp"], "epsilon": p["epsilon"], "epsilon_adp": p["epsilon_adp"],
                    "T": T, "N": N, "sampling_rate": p["sampling_rate"]}
        f = wp.transfer_features(dataset=u["dataset"], n_train=u["n_train"], n_val=u["n_val"], seed=u["seed"],
                                 pretrain_n=u["pretrain_n"], pretrain_epochs=u["pretrain_epochs"],
                                 data_dir=u["data_dir"])
        N = len(f["y_train"])
        p = _plan(u, N)
        seeds = [int(s) for s in np.random.SeedSequence(u["seed"]).generate_state(u["seeds"]) & 0x7FFFFFFF]
        sigma = np.stack([p["sigma_dp"]] * len(seeds) + [p["sigma_adp"]] * len(seeds))
        r = wp.train_segments(wp.head_model(dim=f["dim"]), f["X_train"], f["y_train"], X_val=f["X_val"],
                              y_val=f["y_val"], sigma=sigma, lr=np.broadcast_to(p["eta"], sigma.shape),
                              seeds=seeds + seeds, clip_norm=u["clip"], sampling_rate=p["sampling_rate"],
                              delta=u["delta"], epsilon_target=p["epsilon"], eval_every=u["eval_every"],
                              device=device, orders=p["orders"])
        k = len(seeds)
        return {"steps": r["steps"], "acc_dp": 100 * r["val_accuracy"][:k], "acc_adp": 100 * r["val_accuracy"][k:],
                "eps_spent_dp": r["epsilon"][:k], "eps_spent_adp": r["epsilon"][k:],
                "stopped": int(r["stopped"].sum()), "dataset_used": f["dataset"], "public": f["public"],
                "pretrain_accuracy": f["pretrain_accuracy"], "N_train": N, "N_val": len(f["y_val"])}


def combine(config: dict, results: list[dict]) -> dict:
    sched, train = results
    return {"schedule": sched, "train": train}


def sizes_match_paper(payload) -> bool:
    """Whether the run trained for the paper's 120 epochs at its own N and batch, >= 2 seeds per method."""
    S, R = payload["schedule"], payload["train"]
    m = int(round(S["sampling_rate"] * S["N"]))
    T_paper = wp.steps_for(epochs=PAPER_CONFIG["epochs"], N=int(S["N"]), batch_size=m)
    return int(S["T"]) == T_paper and len(R["acc_adp"]) >= 2 and len(R["acc_dp"]) >= 2


def verdict_rows(payload) -> list[dict]:
    """The page's rows: the same final epsilon, the slower decay of ADP-SGD's noise, and the best-accuracy
    gain against Table 2's cell (eps_bar 3.2, C 2.5, 120 epochs)."""
    S, R = payload["schedule"], payload["train"]
    best = lambda a: np.asarray(a)[:, 1:].max(axis=1)  # noqa: E731 (best over the run, after step 0)
    m = int(round(S["sampling_rate"] * S["N"]))
    printed = wu_paper.row(family=PAPER_CONFIG["family"], metric="best", epsilon_bar=PAPER_CONFIG["epsilon_bar"],
                           clip=PAPER_CONFIG["clip"], epochs=PAPER_CONFIG["epochs"])
    return [
        comparisons.compare("w-f1/same-epsilon", sizes_match=True, epsilon_dp=float(S["epsilon"]),
                            epsilon_adp=float(S["epsilon_adp"])),
        comparisons.compare("w-f1/slower-decay", sizes_match=True, noise_dp=S["noise_dp"], noise_adp=S["noise_adp"]),
        comparisons.compare("w-f1/gap", sizes_match=sizes_match_paper(payload),
                            sizes_note=f"T = {S['T']} steps ({len(R['acc_adp'])} seeds) vs "
                                       f"{wp.steps_for(epochs=PAPER_CONFIG['epochs'], N=int(S['N']), batch_size=m)} "
                                       f"for the paper's {PAPER_CONFIG['epochs']} epochs",
                            printed=printed, adp=best(R["acc_adp"]), dp=best(R["acc_dp"])),
    ]


# ------------------------------------------------------------------------ the paper's scale and this page's rules


PAPER_DIMS = {
    "training samples": Dim(50000, W_TRAIN, config_key("n_train"), setup=True),
    "model / data": W_MODEL_DATA,
    "seeds": Dim(5, W_SEEDS, config_key("seeds")),
    "epochs": Dim(120, "Wu et al., Fig. 1 / Fig. 3: \"the top middle plot is the same as the right plot in Figure 1\" "
                  "(120 epochs)", config_key("epochs")),
    "steps": Dim(23520, W_STEPS, config_steps("epochs", "n_train"), setup=True, ratio=STEPS_RATIO),
    "trained layers": W_LAYERS,
}


STORED_SIZES = {"training samples": lambda p: p["train"]["N_train"], "seeds": payload_seeds("train", "acc_adp")}


def _judge_same_epsilon(*, epsilon_dp: float, epsilon_adp: float) -> Judgement:
    rel = abs(epsilon_adp - epsilon_dp) / max(abs(epsilon_dp), 1e-300)
    j = judge_identity("both noise schedules are calibrated to the same epsilon_bar by Thm 4.1, so their final "
                       f"epsilons are equal by construction (relative difference {rel:.2g} <= {EPSILON_RTOL:g} "
                       "checks our calibration, not the paper)", holds=rel <= EPSILON_RTOL)
    return j.for_row(f"{epsilon_dp:.7g} / {epsilon_adp:.7g} (RDP)")


def _judge_slower_decay(*, noise_dp: Sequence[float], noise_adp: Sequence[float]) -> Judgement:
    nd, na = np.asarray(noise_dp, dtype=float), np.asarray(noise_adp, dtype=float)
    rd, ra = float(nd[-1] / nd[0]), float(na[-1] / na[0])
    j = judge_identity("ADP-SGD's noise multiplier alpha_t = 1/sqrt(eta_t) grows as the step size decays, and "
                       "DP-SGD's is constant (alpha_t = 1), so ADP's noise on theta decays more slowly by construction",
                       holds=ra > rd)
    return j.for_row(f"DP {rd:.3g}, ADP {ra:.3g}", remark="; last / first noise on theta")


RULES: tuple[Rule, ...] = (
    Rule("w-f1/same-epsilon", "final epsilon of DP-SGD and ADP-SGD",
         "Wu et al., Thm 4.1, Sec. 6: equal (both calibrated to the same epsilon_bar)",
         f"identity (true by construction); disagrees only if our calibration breaks it (relative difference > "
         f"{EPSILON_RTOL:g})", _judge_same_epsilon,
         case=Case("Wu et al., Sec. 6: both methods at the same epsilon_bar",
                   {"epsilon_dp": 1.0, "epsilon_adp": 1.0 + 1e-9},
                   {"epsilon_dp": 1.0, "epsilon_adp": 1.1}, expect="identity")),
    Rule("w-f1/slower-decay", "noise on theta decays more slowly with ADP-SGD (last/first)",
         "Wu et al., Fig. 1 left: yes", "identity (true by construction of alpha_t); disagrees only if our schedule breaks it",
         _judge_slower_decay,
         case=Case("Wu et al., Fig. 1 left: ADP-SGD's noise decays more slowly",
                   {"noise_dp": [2.0, 1.0], "noise_adp": [2.0, 1.5]},
                   {"noise_dp": [2.0, 1.5], "noise_adp": [2.0, 1.0]}, expect="identity")),
    gap_rule("w-f1/gap", "best-accuracy gain ADP - DP, eps_bar 3.2, C 2.5, 120 epochs (Fig. 1 right = Table 2)",
             "Wu et al., Table 2 (Fig. 1 right)", where="Wu et al., Table 2", paired_because="w_f1.run_unit " + W_SHARED,
             case=gap_case("Wu et al., Table 2: ADP-SGD ahead by a significant 0.68 points",
                           printed=wu_paper.row(family="sqrt", metric="best", epsilon_bar=3.2, clip=2.5, epochs=120),
                           adp=[66.3, 66.4, 66.5], dp=[65.6, 65.73, 65.9])),
)


EXPERIMENT = from_module(__name__, id="w-f1")
