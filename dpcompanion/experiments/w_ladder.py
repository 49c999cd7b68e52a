"""W-LADDER: Wu et al.'s Table 2 and Table 5 cells (ADP-SGD vs DP-SGD, eta_t = 1/sqrt(20 + t), best and
last validation accuracy) along a ladder of training-set sizes, 2 000, 10 000 and 50 000 images, the
last CIFAR-10's size (W Sec. 6: "There are 50000 images used for training").

CIFAR-10 is not available here (``DATA.md``), so every rung keeps W-T1245's protocol
(:func:`~dpcompanion.experiments.w_t1245.run_cell`: Fashion-MNIST, a CNN pre-trained on MNIST, its last
layer trained privately); only the number of private training images changes, with the paper's epochs,
5 runs and 10 000 validation images. The page shows, per cell, the verdict of rule ``w-t1245/gap`` at
each rung: whether it moves as the training set approaches the paper's size.
"""

from __future__ import annotations

import dataclasses
import itertools

from dpcompanion.experiments import comparisons, w_t1245
from dpcompanion.experiments.base import from_module
from dpcompanion.experiments.comparisons.rule import HEADLINE_N, Rule
from dpcompanion.experiments.comparisons.wu_rules import W_SHARED, W_TRANSFER, gap_stats, table_rule
from dpcompanion.experiments.protocols import wu as wp
from dpcompanion.experiments.scale_tables import Dim, W_TABLE_DIMS, W_TABLE_STORED, W_TRAIN, config_steps


TITLE = "Wu et al.'s Tables 2 and 5 along a ladder of training-set sizes (2 000, 10 000, 50 000 images)"
SCALE_NOTE = ("Fashion-MNIST instead of CIFAR-10 (not available here); 2 000, 10 000 and 50 000 private training "
              "images, the last CIFAR-10's size; Table 2's rows at epsilon_bar 0.8 and 3.2, clips {1, 2.5}, the "
              "paper's epochs and 5 runs; clip 1 only at 50 000")
REPEATS_KEY = "seeds"

__all__ = ["EXPERIMENT", "RUNGS", "units", "unit_size", "run_unit", "combine", "describe", "ladder_rows", "verdict_rows"]

#: the training-set sizes of the ladder; the last is CIFAR-10's (W Sec. 6)
RUNGS = [2000, 10000, 50000]

_COMMON = dict(dataset="fashion", data_dir=None, batch_size=256, delta=1e-5, family="sqrt")

CONFIGS = {
    "quick": dict(_COMMON, rungs=[500, 1000], n_val=1000, pretrain_n=3000, pretrain_epochs=1, clips=[1.0],
                  epochs=[10], epsilon_bars=[0.8, 3.2], seeds=2, eval_every=10),
    "full": dict(_COMMON, rungs=RUNGS, n_val=10000, pretrain_n=20000, pretrain_epochs=2, clips=[1.0, 2.5],
                 top_clips=[1.0], epochs=[60, 120, 200], epsilon_bars=[0.8, 3.2], seeds=5, eval_every=20),
}


def units(config: dict) -> list[dict]:
    """One unit per rung and cell, the largest rung first (the longest units), with the clips
    ``top_clips`` only (default: all of ``clips``)."""
    keep = ("dataset", "data_dir", "batch_size", "delta", "n_val", "pretrain_n", "pretrain_epochs", "seeds",
            "eval_every", "seed", "family")
    base = {k: config[k] for k in keep}
    top = max(config["rungs"])
    out = []
    for n in sorted(config["rungs"], reverse=True):
        clips = config.get("top_clips", config["clips"]) if n == top else config["clips"]
        out += [dict(base, n_train=int(n), clip=float(c), epochs=int(e), epsilon_bar=float(eb))
                for c, e, eb in itertools.product(clips, config["epochs"], config["epsilon_bars"])]
    return out


def unit_size(u: dict) -> str:
    """``n_train=<n>, epochs=<e>``: a cell's time grows with its rung and epochs."""
    return f"n_train={u['n_train']}, epochs={u['epochs']}"


def run_unit(u: dict, device: str) -> dict:
    """One cell at one rung (:func:`dpcompanion.experiments.w_t1245.run_cell`), with its rung."""
    with wp.single_thread():
        return {**w_t1245.run_cell(u, device), "rung": int(u["n_train"])}


def combine(config: dict, results: list[dict]) -> dict:
    return {"cells": sorted(results, key=lambda c: (c["rung"], c["epsilon_bar"], c["clip"], c["epochs"])),
            "rungs": sorted(int(n) for n in config["rungs"])}


def describe(payload) -> str:
    c = payload["cells"]
    rungs = ", ".join(f"{n:,}" for n in payload["rungs"])
    ds = sorted({x["dataset_used"] for x in c})
    top = max(payload["rungs"])
    top_clips = sorted({x["clip"] for x in c if x["rung"] == top})
    clips = sorted({x["clip"] for x in c})
    clip_text = (f"clip in {clips}" if top_clips == clips
                 else f"clip in {clips} ({top_clips} only at {top:,} images)")
    return (f"**Sizes.** Private training sets of {rungs} images ({', '.join(ds)}; the paper: "
            f"{PAPER_DIMS['training samples (largest rung)'].paper:,} CIFAR-10 images), {c[0]['N_val']:,} validation images, the paper's epochs "
            f"{sorted({x['epochs'] for x in c})}, epsilon_bar in {sorted({x['epsilon_bar'] for x in c})}, {clip_text}, "
            f"{len(c[0]['best_dp'])} runs per method (the paper's 5), batch 256, "
            f"step sizes 1/sqrt(20 + t) (Tables 2 and 5); the CNN pre-trained on {c[0]['public']}, its last layer "
            f"trained privately.")


def ladder_rows(payload, *, metric: str) -> tuple[list[str], list[list[str]]]:
    """``(columns, rows)``: per cell, the paper's printed gap and, at each rung, ours with its verdict."""
    V = {}
    for c in payload["cells"]:
        table, printed, row = w_t1245.gap_verdict(c, metric=metric)
        g, se = gap_stats(c[f"{metric}_adp"], c[f"{metric}_dp"])
        V[(c["epsilon_bar"], c["clip"], c["epochs"], c["rung"])] = (g, se, row["verdict"], printed, table)
    rungs = payload["rungs"]
    cols = ["eps_bar", "clip", "epochs", "paper's gap"] + [f"N = {n:,}" for n in rungs]
    rows = []
    for eb, cl, ep in sorted({k[:3] for k in V}):
        printed = next(V[(eb, cl, ep, n)][3] for n in rungs if (eb, cl, ep, n) in V)
        paper = "not printed" if printed is None else f"{printed[0] - printed[2]:+.2f}"
        cells = []
        for n in rungs:
            if (eb, cl, ep, n) not in V:
                cells.append("not run at this rung")
                continue
            g, se, verdict, _, _ = V[(eb, cl, ep, n)]
            cells.append(f"{g:+.2f} ± {se:.2f}: {verdict}")
        rows.append([f"{eb:g}", f"{cl:g}", str(ep), paper, *cells])
    return cols, rows


def verdict_rows(payload) -> list[dict]:
    """Per rung and table (2: best accuracy, 5: last), rule ``w-ladder/table`` over its cells."""
    rows = []
    for n in payload["rungs"]:
        cells = [c for c in payload["cells"] if c["rung"] == n]
        for metric in ("best", "last"):
            V = w_t1245.verdicts(cells, metric=metric)
            t = V[0]["table"]
            row = comparisons.compare("w-ladder/table", sizes_match=True, table=t,
                                      item=f"Table {t} at N = {n:,}: ADP-SGD ahead of DP-SGD (cells run here)", cells=V)
            if n == HEADLINE_N:
                row["headline"] = (f"the headline evidence for Wu et al.'s Table {t}: this rung has the paper's "
                                   f"{HEADLINE_N:,} training images and steps (not its data set, model or trained layers)")
            rows.append(row)
    return rows


# ------------------------------------------------------------------------ the paper's scale and this page's rules


PAPER_DIMS = {"training samples (largest rung)": Dim(50000, W_TRAIN, lambda c: max(c["rungs"]), setup=True),
             **{k: (dataclasses.replace(d, ours=config_steps("epochs", "rungs")) if k == "steps" else d)
                for k, d in W_TABLE_DIMS.items()}}


STORED_SIZES = {"training samples (largest rung)": lambda p: max(c["rung"] for c in p["cells"]), **W_TABLE_STORED}


RULES: tuple[Rule, ...] = (
    table_rule("w-ladder/table", "one of Tables 2, 5 at one rung of the training-set ladder: ADP-SGD ahead of DP-SGD",
               "Wu et al., Tables 2 and 5: the printed gaps (CIFAR-10, 50 000 training images)",
               tolerance=f"as w-t1245/table, over the cells of one rung (each judged by w-t1245/gap); the top rung "
                         f"(N = {HEADLINE_N:,}) is the headline evidence for Tables 2 and 5",
               paired_because="its cells are w-t1245/gap's, run by w_t1245.run_cell at each rung (" + W_SHARED + ")",
               comparable_because=W_TRANSFER + " (the top rung has the paper's 50,000 images and steps, not its data "
                                               "set, model or trained layers)"),
)


EXPERIMENT = from_module(__name__, id="w-ladder")
