"""W-T1245: Wu et al. (ADP-SGD, arXiv 2110.07435) Tables 1, 2, 4 and 5: best (Tables 1, 2) and last
(Tables 4, 5) validation accuracy of DP-SGD vs ADP-SGD over the grid epsilon_bar x clip x
epochs, for the two step-size families (Tables 1, 4: eta_t = 0.1 - a_T sqrt(t); Tables 2, 5:
eta_t = 1/sqrt(20 + t)), 5 runs each, batch 256, delta 1e-5.

One unit per cell ``(family, clip, epochs, epsilon_bar)``: both methods and all seeds in one
batched call of :func:`dpcompanion.experiments.protocols.wu.train_segments`, the two methods
calibrated to the same RDP epsilon.
"""

from __future__ import annotations

import itertools

import numpy as np

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module
from dpcompanion.experiments.comparisons.rule import Rule
from dpcompanion.experiments.comparisons.sequential import Plan
from dpcompanion.experiments.comparisons.wu_rules import W_SHARED, gap_case, gap_printed, gap_rule, gap_stats, table_rule
from dpcompanion.experiments.protocols import wu as wp, wu_paper
from dpcompanion.experiments.scale_tables import Dim, W_TABLE_DIMS, W_TABLE_STORED, W_TRAIN, config_key, payload_cells


TITLE = "ADP-SGD vs DP-SGD over the privacy x clip x epochs grid (Wu et al. Tables 1, 2, 4, 5)"
SCALE_NOTE = ("Fashion-MNIST (2 000 training, 2 000 validation images; CNN pre-trained on MNIST, last layer "
              "fine-tuned), both step-size families, the paper's 3 epoch counts, clips {1, 2.5} of its 4, "
              "epsilon_bar in {0.8, 3.2} of its 5 values, 20 seeds (the paper: 5 runs), judged at 3, 10 and 20 "
              "seeds by a group-sequential plan; the paper: CIFAR-10 (50 000 images).")
REPEATS_KEY = "seeds"

#: the paper's full grid (W Sec. 6, Tables 1, 2, 4, 5; CIFAR-10)
PAPER_GRID = dict(dataset="cifar10", n_train=50000, n_val=10000, families=["linear-sqrt", "sqrt"],
                  clips=[0.5, 1.0, 2.5, 5.0], epochs=[60, 120, 200], epsilon_bars=[0.8, 1.2, 1.6, 3.2, 6.4],
                  seeds=5, eval_every=20, batch_size=256, delta=1e-5)

#: the group-sequential plan (cumulative seeds per look), declared on 2026-11-28 before any seed beyond
#: the first look ran; O'Brien-Fleming spending keeps the overall error rate at 5%
SEQUENTIAL = Plan(looks=(3, 10, 20), reason=(
    "look 1 is the 3-seed result already judged; 10 and 20 seeds (the cap: 4x the paper's 5 runs, 12 CPU "
    "minutes here) are where runs_needed put most of the undecided cells"))


_COMMON = dict(dataset="fashion", data_dir=None, batch_size=256, delta=1e-5)

CONFIGS = {
    "quick": dict(_COMMON, n_train=1000, n_val=1000, pretrain_n=3000, pretrain_epochs=1, families=["sqrt"],
                  clips=[1.0, 2.5], epochs=[10], epsilon_bars=[0.8, 3.2], seeds=2, eval_every=10),
    "full": dict(_COMMON, n_train=2000, n_val=2000, pretrain_n=20000, pretrain_epochs=2,
                 families=["linear-sqrt", "sqrt"], clips=[1.0, 2.5], epochs=[60, 120, 200],
                 epsilon_bars=[0.8, 3.2], seeds=20, eval_every=20),
}
#: full mode's seeds follow :data:`SEQUENTIAL` (a cell's seeds are a prefix of a longer run's)
assert CONFIGS["full"]["seeds"] == SEQUENTIAL.looks[-1]


def units(config: dict) -> list[dict]:
    keep = ("dataset", "data_dir", "batch_size", "delta", "n_train", "n_val", "pretrain_n", "pretrain_epochs",
            "seeds", "eval_every", "seed")
    base = {k: config[k] for k in keep}
    return [dict(base, family=f, clip=float(c), epochs=int(e), epsilon_bar=float(eb))
            for f, c, e, eb in itertools.product(config["families"], config["clips"], config["epochs"],
                                                 config["epsilon_bars"])]


def run_cell(u: dict, device: str) -> dict:
    """One cell: DP-SGD and ADP-SGD, ``u["seeds"]`` runs each; per-run best/last accuracy (%)."""
    f = wp.transfer_features(dataset=u["dataset"], n_train=u["n_train"], n_val=u["n_val"], seed=u["seed"],
                             pretrain_n=u["pretrain_n"], pretrain_epochs=u["pretrain_epochs"], data_dir=u["data_dir"])
    N = len(f["y_train"])
    T = wp.steps_for(epochs=u["epochs"], N=N, batch_size=u["batch_size"])
    p = wp.plan(epsilon_bar=u["epsilon_bar"], T=T, N=N, batch_size=u["batch_size"], delta=u["delta"],
                family=u["family"])
    ss = np.random.SeedSequence([u["seed"], int(u["epsilon_bar"] * 100), int(u["clip"] * 100), u["epochs"]])
    seeds = [int(s) for s in ss.generate_state(u["seeds"]) & 0x7FFFFFFF]
    sigma = np.stack([p["sigma_dp"]] * len(seeds) + [p["sigma_adp"]] * len(seeds))
    r = wp.train_segments(wp.head_model(dim=f["dim"]), f["X_train"], f["y_train"], X_val=f["X_val"],
                          y_val=f["y_val"], sigma=sigma, lr=np.broadcast_to(p["eta"], sigma.shape),
                          seeds=seeds + seeds, clip_norm=u["clip"], sampling_rate=p["sampling_rate"],
                          delta=u["delta"], epsilon_target=p["epsilon"], eval_every=u["eval_every"], device=device,
                          orders=p["orders"])
    k = len(seeds)
    acc = 100 * r["val_accuracy"]
    return {"family": u["family"], "clip": u["clip"], "epochs": u["epochs"], "epsilon_bar": u["epsilon_bar"],
            "best_dp": acc[:k, 1:].max(1), "best_adp": acc[k:, 1:].max(1), "last_dp": acc[:k, -1],
            "last_adp": acc[k:, -1], "epsilon": p["epsilon"], "epsilon_adp": p["epsilon_adp"], "z_dp": p["z_dp"],
            "z_adp": p["z_adp"], "T": T, "stopped": int(r["stopped"].sum()), "dataset_used": f["dataset"],
            "public": f["public"], "N_train": N, "N_val": len(f["y_val"])}


def run_unit(u: dict, device: str) -> dict:
    with wp.single_thread():
        return run_cell(u, device)


def combine(config: dict, results: list[dict]) -> dict:
    return {"cells": results}


# ----------------------------------------------------------------- rendering helpers (pure)

def _ms(v) -> str:
    v = np.asarray(v, dtype=float)
    sd = float(np.std(v, ddof=1)) if len(v) > 1 else float("nan")
    return f"{v.mean():.2f} ± {sd:.2f}"


def paper_layout(cells: list[dict], *, family: str, metric: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of one of W's tables (``metric`` "best": Tables 1/2, "last": 4/5): rows
    epsilon_bar x (ADP-SGD, DP-SGD, Gap), columns clip x epochs."""
    mine = [c for c in cells if c["family"] == family]
    cols = sorted({(c["clip"], c["epochs"]) for c in mine})
    ebs = sorted({c["epsilon_bar"] for c in mine})
    by = {(c["epsilon_bar"], c["clip"], c["epochs"]): c for c in mine}
    header = ["eps_bar", "alg"] + [f"C={c:g}, {e} ep." for c, e in cols]
    rows = []
    for eb in ebs:
        cs = [by.get((eb, c, e)) for c, e in cols]
        rows.append([f"{eb:g}", "ADP-SGD"] + [_ms(x[f"{metric}_adp"]) if x else "" for x in cs])
        rows.append(["", "DP-SGD"] + [_ms(x[f"{metric}_dp"]) if x else "" for x in cs])
        rows.append(["", "Gap"] + [f"{np.mean(x[f'{metric}_adp']) - np.mean(x[f'{metric}_dp']):+.2f}" if x else ""
                                   for x in cs])
    return header, rows


def verdicts(cells: list[dict], *, metric: str) -> list[dict]:
    """Per cell: the paper's printed gap (or None), ours, and the verdict of rule ``w-t1245/gap``."""
    out = []
    plan = SEQUENTIAL
    for c in cells:
        table, paper, row = gap_verdict(c, metric=metric, plan=plan)
        adp, dp = c[f"{metric}_adp"], c[f"{metric}_dp"]
        g, se = gap_stats(adp, dp)
        out.append({"table": table, "family": c["family"],
                    "epsilon_bar": c["epsilon_bar"], "clip": c["clip"], "epochs": c["epochs"],
                    "paper_gap": paper[0] - paper[2] if gap_printed(table, paper) else None, "gap": g, "se": se,
                    "adp": np.asarray(adp, dtype=float), "dp": np.asarray(dp, dtype=float),
                    "stage": (row.get("stats") or {}).get("stage"), "verdict": row["verdict"], "outcome": row["outcome"], "cap": row["cap"],
                    "note": row["note"].split(". Tolerance: ")[0]})  # tolerance: in the summary
    return out


def gap_verdict(cell: dict, *, metric: str, item: str | None = None,
                plan: Plan | None = None) -> tuple[int, tuple | None, dict[str, str]]:
    """Rule ``w-t1245/gap`` on one payload cell (``metric``: ``best`` or ``last``): ``(table, the printed
    row or None, the row)``; comparable only at the paper's epoch counts with >= 2 seeds per method.
    ``plan``: the group-sequential plan, if any."""
    printed = wu_paper.row(family=cell["family"], metric=metric, epsilon_bar=cell["epsilon_bar"], clip=cell["clip"],
                           epochs=cell["epochs"])
    table = wu_paper.TABLE_OF[(cell["family"], metric)]
    adp, dp = cell[f"{metric}_adp"], cell[f"{metric}_dp"]
    row = comparisons.compare(
        "w-t1245/gap", sizes_match=cell["epochs"] in wu_paper.PAPER_EPOCHS and len(adp) >= 2 and len(dp) >= 2,
        sizes_note=f"{cell['epochs']} epochs, {len(adp)} seeds vs {wu_paper.PAPER_EPOCHS} epochs, 5 runs",
        item=item, table=table, printed=printed, adp=adp, dp=dp, plan=plan)
    return table, printed, row


def cell_rows(payload: dict) -> list[dict]:
    """The verdicts report's rows per cell (:func:`gap_verdict`), best then last metric."""
    out = []
    for metric in ("best", "last"):
        for c in payload["cells"]:
            table = wu_paper.TABLE_OF[(c["family"], metric)]
            out.append(gap_verdict(
                c, metric=metric, plan=SEQUENTIAL, item=f"Table {table}: gain ADP - DP, {c['family']}, C_G {c['clip']:g}, "
                                                      f"eps_bar {c['epsilon_bar']:g}, {c['epochs']} epochs")[2])
    return out


def verdict_rows(payload) -> list[dict]:
    """The page's summary rows, one per table (rule ``w-t1245/table``)."""
    rows = []
    for metric in ("best", "last"):
        V = verdicts(payload["cells"], metric=metric)
        for t in sorted({v["table"] for v in V}):
            rows.append(comparisons.compare("w-t1245/table", sizes_match=True, table=t,
                                            item=f"Table {t}: ADP-SGD ahead of DP-SGD (cells run here)",
                                            cells=[v for v in V if v["table"] == t]))
    return rows


def report_verdict_rows(payload) -> list[dict]:
    """Every cell's row (:func:`cell_rows`), then the page's summary rows."""
    return cell_rows(payload) + verdict_rows(payload)


# ------------------------------------------------------------------------ the paper's scale and this page's rules


PAPER_DIMS = {"training samples": Dim(50000, W_TRAIN, config_key("n_train"), setup=True),
            **W_TABLE_DIMS}


STORED_SIZES = {"training samples": payload_cells("N_train"), **W_TABLE_STORED}


RULES: tuple[Rule, ...] = (
    gap_rule("w-t1245/gap", "one cell of Tables 1, 2, 4, 5: gain ADP - DP", "Wu et al., Tables 1, 2, 4, 5",
             paired_because="w_t1245.run_cell " + W_SHARED,
             case=gap_case("Wu et al., Table 2: ADP-SGD ahead by a significant 0.68 points", table=2,
                           printed=wu_paper.row(family="sqrt", metric="best", epsilon_bar=3.2, clip=2.5, epochs=120),
                           adp=[66.3, 66.4, 66.5], dp=[65.6, 65.73, 65.9])),
    table_rule("w-t1245/table", "one of Tables 1, 2, 4, 5: ADP-SGD ahead of DP-SGD (cells run here)",
               "Wu et al., Tables 1, 2, 4, 5: the printed gaps",
               paired_because="its cells are w-t1245/gap's (w_t1245.run_cell " + W_SHARED + ")"),
)


EXPERIMENT = from_module(__name__, id="w-t1245")
