"""W-F4: Wu et al. (ADP-SGD, arXiv 2110.07435) Figure 4 (App. F.3): DP-SGD on MNIST trained from
scratch with a constant step size (c = 0) vs decaying ones, eta_t = 1/sqrt(2 + c t),
c in {0, 1e-5, 1e-3, 1e-2, 0.1, 0.5}, for noise multipliers sigma in {1.6, 3.2, 6.4, 12.8},
50 epochs: test error vs epoch, with the numerical epsilon (RDP accountant) and Thm 4.1's
epsilon_bar at each epoch.

The paper's model is a CNN (its App. F.4 Fig. 6, an image). Its per-sample gradients cost
about 2.6 s per step of 256 samples on the two shared CPU cores here (torch.func, measured),
so the committed full runs use a one-hidden-layer MLP on the raw pixels (784 -> 100 -> 10,
ghost clipping). ``configs["paper"]`` (``--mode paper``) is App. F.3's size: the CNN
(``make_model("cnn-mnist")``, per-sample norms of its convolutions by ghost norms) trained
from scratch on all 60,000 MNIST training images, tested on the 10,000 test images, 50
epochs, batch 256, the full 6 x 4 grid of c and sigma, **two seeds per cell** (the paper prints
no seed count; two is the fewest that give a spread to judge by), as two replicate units per
cell (48 units of about 10 CPU minutes each on an AMD EPYC: 627 s beside another sweep's unit
on its 2 cores; units timed before commit a55048d ran in Dask workers whose malloc settings
made them about twice as slow), stored as they finish in ``results/w-f4/paper.units/``. The
batch size (256) and clip norm (1) are not given for this figure in the text; ours are stated.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module
from dpcompanion.experiments.protocols import wu as wp
from dpcompanion.theory import adp_accounting, numerical_accounting
from dpcompanion.training import data
from dpcompanion.training.models import make_model

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
    """One unit per (sigma, c) cell; with ``config["replicates"]`` (paper mode), as many units per
    cell, each of ``seeds`` runs with seeds of its own (replicate 0's unit is the single-seed
    cell's, key and all, so units committed before replicates existed are reused): a CNN cell of
    60,000 images is about 10 CPU minutes here, and a unit must fit in a sitting."""
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
        eps_total = numerical_accounting.rdp_epsilon_repeated(sigma=u["sigma"], T=T, sampling_rate=q, delta=u["delta"],
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
    """``runs``: one per (sigma, c) cell, in the units' cell order; the replicates of a cell
    joined (their test-error rows stacked, ``stopped`` summed)."""
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
    """The W-F4 page's rows (rules ``w-f4/*`` of :mod:`dpcompanion.experiments.comparisons`):
    per sigma, whether the decaying step sizes end below the constant one (final test error,
    one per seed); and the numerical epsilon against Thm 4.1's epsilon_bar at the last
    epoch (first run)."""
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


EXPERIMENT = from_module(__name__, id="w-f4",
    title="DP-SGD with constant vs decaying step sizes on MNIST (Wu et al. Fig. 4)",
    scale_note="MNIST, 2 000 training and 2 000 test images, all 4 sigmas and 6 values of c, 50 epochs as the "
               "paper, 2 seeds, a one-hidden-layer MLP instead of the paper's CNN (from scratch in both); the "
               "paper: 60 000 images, CNN. Paper mode (`--mode paper`, hours on two cores): the CNN on "
               "60 000 images, 10 000 test images, 50 epochs, the full grid, 2 seeds per cell.",
    repeats_key="seeds",
)
