"""Scale honesty (issue 21): for each experiment, per dimension (training samples, model or
hidden width, repeats or seeds, epochs or T, grid), the paper's value with the sentence it
comes from, and ours, read from a config.

:data:`PAPER` holds only what the papers print, each with its source (file, section) and a
short quotation; ``None`` where the paper states no number (the source then says what it does
state). :func:`scale_of` pairs it with our value for a config; a result's provenance records
that block at save time (``scale``, :func:`dpcompanion.experiments.store.compute`); the pages,
the verdict report and the compute table recompute it with :func:`scale_of` from the recorded
config, so the quotations they show are always this module's.

"Matches" is decided per dimension (``match``: equal values; ``None`` where the paper gives
no number); a run is at the paper's scale only when every dimension with a printed value
matches (:func:`at_paper_scale`). This module is left out of every code hash
(:data:`dpcompanion.experiments.store.CODE_HASH_EXCLUDE`): correcting a quotation never makes a
stored result stale. It imports no other module of the package and sits below both the store
(which records the scale block and checks sizes with :func:`size_mismatches`) and the verdict
rules (:mod:`dpcompanion.experiments.comparisons`, which import the store), so that neither
imports the other through it (issue 32, item 4: no import circle).

Widths of the DNNs of Hong et al. (the two versions differ): the FAccT version's Sec. 5 trains "a
2-layer Deep Neural Network (DNN) with 1000 hidden units" for the data-efficiency figure
(H-F-EFF); the ICLR submission, Sec. 5 uses "a Deep Neural Network (DNN) with 2 layers and 100 hidden units"
for the momentum pane (H-F-MOM). The ICLR submission's App. D names the DNN of Fig. 3 (H-F-SCALE, the retrained
influences of H-F-INFL-EXTRA) without its width, so those pages say "not stated" and cite both.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

__all__ = ["Dim", "PAPER", "STORED", "STEPS_RATIO", "scale_of", "at_paper_scale", "comparability", "scaled_ids",
           "stored_sizes", "size_mismatches"]

#: issue 33: our number of steps matches the paper's when within this factor of it (either way):
#: a run of half or twice the paper's steps is the same regime, one 25 times shorter is not
STEPS_RATIO = 2.0


@dataclasses.dataclass(frozen=True)
class Dim:
    """One dimension: the paper's value (None: not stated), where it is printed, and how our
    value is read from a config."""

    paper: Any
    source: str
    ours: Callable[[dict], Any]
    #: issue 33: whether the dimension is part of the *setup* (data set, model, trained layers,
    #: number of steps) that decides if a row may compare sizes (:func:`comparability`)
    setup: bool = False
    #: match within this factor (numbers, or lists of numbers elementwise); None: equal values
    ratio: float | None = None


def _g(*keys):
    """Our value: the first of ``keys`` present in the config."""
    def read(c: dict):
        for k in keys:
            if k in c:
                v = c[k]
                return list(v) if isinstance(v, tuple) else v
        return None
    return read


def _range(key):
    def read(c: dict):
        v = c.get(key)
        return None if not v else [min(v), max(v)]
    return read


def _steps(epochs_key: str, n_key: str, *, per_epoch_ceil: bool = False, batch: int = 256):
    """Our number of steps from a config: ``ceil(epochs N / m)`` (protocols.wu.steps_for), or
    ``ceil(N / m) epochs`` (``per_epoch_ceil``, W-F4's run); a list for a list of epochs; ``N``
    the largest of a list (W-LADDER's top rung)."""
    def read(c: dict):
        e, n, m = c.get(epochs_key), c.get(n_key), c.get("batch_size", batch)
        if e is None or n is None or not m:
            return None
        n = max(n) if isinstance(n, (list, tuple)) else n

        def one(ep):
            return int(math.ceil(n / m)) * int(ep) if per_epoch_ceil else int(math.ceil(int(ep) * n / m))
        return [one(x) for x in e] if isinstance(e, (list, tuple)) else one(e)
    return read


_H_REPEATS = "the ICLR submission, App. D, Setup: \"All the experiments are repeated 100 times\""
_H_MNIST35 = "the ICLR submission, App. D, Dataset: MNIST35 \"including 1000 handwritten images of digit 3 and 5\""
_H_DNN_WIDTH = ("not stated for this figure (the ICLR submission, App. D: \"the DNN is experimented with the same setting\", no width); the FAccT version, Sec. 5: \"2-layer Deep "
                "Neural Network (DNN) with 1000 hidden units\" (data efficiency); the ICLR submission, Sec. 5: \"DNN with 2 layers and "
                "100 hidden units\" (momentum)")
_W_TRAIN = "Wu et al., Sec. 6: \"There are 50000 images used for training\" (CIFAR-10)"
_W_SEEDS = "Wu et al., Sec. 6: \"We repeat the experiments five times\""
_W_MODEL = "Wu et al., Sec. 6: a CNN \"pre-trained on CIFAR-100 and fined-tuned on CIFAR-10\""
_W_STEPS = ("Wu et al., Sec. 6: \"T = 11760, 23520, 39200 iterations corresponding to 60, 120, 200 training epochs\" "
            f"(ours: ceil(epochs N / 256); matches within a factor {STEPS_RATIO:g})")
#: the layers W train privately: the paper fine-tunes its pre-trained CNN (which layers it does not print); every
#: W transfer run here trains the CNN's last dense layer alone (protocols.wu.FROZEN_LAYERS, head_model)
_W_LAYERS = Dim("the pre-trained CNN, fine-tuned", "Wu et al., Sec. 6: a CNN \"pre-trained on CIFAR-100 and fined-tuned "
                "on CIFAR-10\" (which layers are fine-tuned is not printed); ours: protocols.wu.head_model on the frozen "
                "features of protocols.wu.transfer_features", lambda c: "last dense layer only (32 -> 10)", setup=True)

#: the dimensions of Wu et al.'s Tables 1, 2, 4, 5 besides the training-set size (W-T1245 and
#: its ladder, W-LADDER)
_W_TABLE_DIMS = {
    "model / data": Dim("CNN, CIFAR-100 -> CIFAR-10", _W_MODEL, lambda c: f"{c.get('dataset')} (pretrain "
                                                                        f"{c.get('pretrain_n')} images)", setup=True),
    "seeds": Dim(5, _W_SEEDS, _g("seeds")),
    "epochs": Dim([60, 120, 200], "Wu et al., Sec. 6: \"T = 11760, 23520, 39200 iterations corresponding to 60, 120, 200 "
                  "training epochs\"", _g("epochs")),
    "steps": Dim([11760, 23520, 39200], _W_STEPS, _steps("epochs", "n_train"), setup=True, ratio=STEPS_RATIO),
    "trained layers": _W_LAYERS,
    "clip grid": Dim([0.5, 1.0, 2.5, 5.0], "Wu et al., Sec. 6: \"C_G in {0.5, 1, 2.5, 5}\"", _g("clips")),
    "epsilon_bar grid": Dim([0.8, 1.2, 1.6, 3.2, 6.4], "Wu et al., Sec. 6: \"epsilon_bar in {0.8, 1.2, 1.6, 3.2, 6.4}\"",
                            _g("epsilon_bars")),
}

#: experiment ID -> {dimension: Dim}
PAPER: dict[str, dict[str, Dim]] = {
    "h-f-eff": {
        "training samples": Dim(None, "the FAccT version, Sec. 5 / Fig. 1: MNIST35 with \"a varying total number of training "
                                "samples\" (the values are in the figure only)", _g("N")),
        "hidden width": Dim(1000, "the FAccT version, Sec. 5, Setup: \"a 2-layer Deep Neural Network (DNN) with 1000 hidden units\"",
                            _g("hidden")),
        "repeats": Dim(100, _H_REPEATS, _g("repeats")),
        "T range": Dim([50, 150], "the FAccT version, Sec. 5, Setup: \"we grid search the best T in range [50, 150]\"",
                       _range("T_grid")),
        "gamma grid": Dim(None, "the FAccT version, Sec. 5: exp's parameters tuned on the auxiliary data; no grid printed",
                          _g("gammas")),
    },
    # beyond the paper: H-F-EFF's dimensions, and the budget it spends (the paper's guarantee, accounted exactly)
    "h-f-eff-exact": {
        "hidden width": Dim(1000, "the FAccT version, Sec. 5, Setup: \"a 2-layer Deep Neural Network (DNN) with 1000 hidden units\"",
                            _g("hidden")),
        "repeats": Dim(100, _H_REPEATS, _g("repeats")),
        "T range": Dim([50, 150], "the FAccT version, Sec. 5, Setup: \"we grid search the best T in range [50, 150]\"",
                       _range("T_grid")),
        "budget R": Dim(0.3927, "the FAccT version, Sec. 5: (4, 1e-8)-DP accounted by zCDP, rho = 0.1963, R = 2 rho = 0.3927; "
                        "ours: the same guarantee accounted exactly (Gaussian DP)", lambda c: round(float(c["R"]), 4)),
    },
    "h-f-scale": {
        "training samples": Dim(1000, _H_MNIST35 + "; synthetic: \"1000 samples are generated for training\"",
                                _g("N")),
        "hidden width (DNN row)": Dim(None, _H_DNN_WIDTH, _g("hidden")),
        "repeats": Dim(100, _H_REPEATS, _g("repeats")),
        "repeats (DNN row)": Dim(100, _H_REPEATS, _g("dnn_repeats")),
        # ours: the range the tuning searches (T_range; its grid starts at T_grid and extends down to 1 when
        # a choice falls at the grid's low end), for every row
        "T range": Dim([1, 100], "the ICLR submission, App. D, Results: the final losses \"are picked by grid searching the best T in "
                       "[1, 100]\"", _range("T_range")),
        "T range (DNN row)": Dim([1, 100], "the ICLR submission, App. D, Results: the DNN row \"is experimented with the same setting\"",
                                 _range("T_range")),
        "data scales": Dim(None, "the ICLR submission, App. D, Results: the data scale is varied (values in Fig. 3 only)",
                           _g("scales")),
        # dyn's schedule comes from the influence estimated by retraining (App. D, "Estimate of influences by
        # retraining"): the paper estimates it at every step, 100 repeats; ours at infl_steps steps
        "influence: steps estimated": Dim(100, "the ICLR submission, App. D: \"Repeating the estimation for all t in range "
                                          "1 to 100\"", _g("infl_steps")),
        "influence: repeats": Dim(100, _H_REPEATS, _g("infl_repeats")),
        "influence: levels of sigma_t": Dim(None, "the ICLR submission, App. D: sigma_t \"is varied from 20 to 200\" (how many "
                                            "levels is not printed)", _g("infl_levels")),
    },
    "h-f-mom": {
        "training samples": Dim(1000, "the ICLR submission, Fig. 2 caption: \"subsampled MNIST dataset of 1000 training samples\"",
                                _g("N")),
        "hidden width": Dim(100, "the ICLR submission, Sec. 5: \"DNN with 2 layers and 100 hidden units\"", _g("hidden")),
        "repeats": Dim(100, _H_REPEATS, _g("repeats")),
        "T": Dim(None, "the ICLR submission, Sec. 5: momexpinfl's advantage where \"the number of iteration is only 100\" (other T not "
                 "printed)", _g("Ts")),
        "schedule grid": Dim(None, "the ICLR submission, Sec. 5: \"we grid-search for the schedule hyper-parameters\" (no grid printed)",
                             lambda c: {"gammas": c.get("gammas"), "mom_gammas": c.get("mom_gammas"),
                                        "crossings": c.get("crossings")}),
    },
    "h-f-curv": {
        "training samples": Dim(None, "the ICLR submission, Fig. 1: a toy problem, no size printed", _g("N")),
        "repeats": Dim(100, "the ICLR submission, Fig. 1 caption: \"Private gradient descent repeated 100 times\"", _g("repeats")),
        "T": Dim(None, "the ICLR submission, Fig. 1: not printed", _g("T")),
    },
    "h-f-infl": {
        "training samples": Dim(1000, _H_MNIST35, _g("n")),
        "T": Dim(100, "the ICLR submission, App. D, Estimate of influences by retraining: \"for all t in range 1 to 100\"", _g("T")),
        "noise levels": Dim([20, 200], "the ICLR submission, App. D: sigma_t \"is varied from 20 to 200\"", _range("levels")),
        "repeats": Dim(100, _H_REPEATS, _g("repeats")),
    },
    "h-f-infl-extra": {
        "training samples": Dim(1000, _H_MNIST35, _g("N")),
        "T": Dim(100, "the ICLR submission, App. D: \"for all t in range 1 to 100\"", _g("T")),
        "steps estimated": Dim(1, "the ICLR submission, App. D: every t from 1 to 100 (every step)", _g("step_every")),
        "repeats": Dim(100, _H_REPEATS, _g("repeats")),
        "repeats (DNN row)": Dim(100, _H_REPEATS, _g("dnn_repeats")),
        "hidden width (DNN row)": Dim(None, _H_DNN_WIDTH, _g("hidden")),
    },
    "h-x-eer": {
        "training samples": Dim(None, "not in the paper (our experiment on the FAccT version's Thm 4.1-4.4)", _g("n")),
        "T": Dim(None, "not in the paper", _g("T_max")),
        "Monte Carlo runs": Dim(None, "not in the paper", _g("runs_mc")),
        "kappa grid": Dim(None, "not in the paper", lambda c: len(c.get("kappas") or [])),
    },
    "h-x-eer-breakdown": {
        "runs": Dim(None, "not in the paper (our experiment)", _g("runs", "runs_mc", "repeats")),
    },
    "audit": {
        "trials": Dim(None, "not in the papers (our audit of our trainers)", _g("trials", "n_trials")),
    },
    "w-f1": {
        "training samples": Dim(50000, _W_TRAIN, _g("n_train"), setup=True),
        "model / data": Dim("CNN, CIFAR-100 -> CIFAR-10", _W_MODEL, lambda c: f"{c.get('dataset')} (pretrain "
                                                                            f"{c.get('pretrain_n')} images)", setup=True),
        "seeds": Dim(5, _W_SEEDS, _g("seeds")),
        "epochs": Dim(120, "Wu et al., Fig. 1 / Fig. 3: \"the top middle plot is the same as the right plot in Figure 1\" "
                      "(120 epochs)", _g("epochs")),
        "steps": Dim(23520, _W_STEPS, _steps("epochs", "n_train"), setup=True, ratio=STEPS_RATIO),
        "trained layers": _W_LAYERS,
    },
    "w-f4": {
        "training samples": Dim(None, "Wu et al., App. F.3: \"applied to the MNIST dataset\" (size not printed)",
                                _g("n_train")),
        "model": Dim("CNN", "Wu et al., App. F.3: \"a convolutional neural network\" (Fig. 6)",
                     lambda c: "CNN" if str(c.get("model", "")).startswith("cnn") else c.get("model"), setup=True),
        "seeds": Dim(None, "Wu et al., App. F.3: not printed",
                     lambda c: int(c.get("seeds", 1)) * int(c.get("replicates", 1))),
        "epochs": Dim(50, "Wu et al., Fig. 4: \"sigma = 1.6 for 50 epochs\"", _g("epochs")),
        "steps": Dim(None, "Wu et al., App. F.3: not printed (MNIST's 60,000 images for 50 epochs at batch 256 would be "
                     "11,750; ours: ceil(N / 256) epochs)", _steps("epochs", "n_train", per_epoch_ceil=True),
                     setup=True, ratio=STEPS_RATIO),
        "trained layers": Dim("all (from scratch)", "Wu et al., App. F.3: the CNN trained on MNIST (no pre-training)",
                              lambda c: "all (from scratch)", setup=True),
        "c grid": Dim([0.0, 1e-5, 1e-3, 1e-2, 0.1, 0.5], "Wu et al., App. F.3: \"We vary c in {0, 1e-5, 1e-3, 1e-2, 1e-1, "
                      "5e-1}\"", _g("cs")),
    },
    "w-t1245": {"training samples": Dim(50000, _W_TRAIN, _g("n_train"), setup=True),
                **_W_TABLE_DIMS},
    "w-ladder": {"training samples (largest rung)": Dim(50000, _W_TRAIN, lambda c: max(c["rungs"]), setup=True),
                 **{k: (dataclasses.replace(d, ours=_steps("epochs", "rungs")) if k == "steps" else d)
                    for k, d in _W_TABLE_DIMS.items()}},
    "w-t36": {
        "training samples": Dim(50000, _W_TRAIN, _g("n_train"), setup=True),
        "model / data": Dim("CNN, CIFAR-100 -> CIFAR-10", _W_MODEL, lambda c: f"{c.get('dataset')} (pretrain "
                                                                            f"{c.get('pretrain_n')} images)", setup=True),
        "seeds": Dim(5, "Wu et al., App. F.2: \"Based on these hyper-parameters, we repeat the experiments five times\"",
                     _g("seeds")),
        "epochs": Dim(60, "Wu et al., Table 3 (60 epochs)", _g("epochs")),
        "steps": Dim(11700, "Wu et al., Sec. 6.2 and footnote 3: T = 11700 for 60 epochs (ours: ceil(epochs N / 256); "
                     f"matches within a factor {STEPS_RATIO:g})", _steps("epochs", "n_train"), setup=True,
                     ratio=STEPS_RATIO),
        "trained layers": _W_LAYERS,
        "(beta, C) grid": Dim(None, "Wu et al., App. F.2: \"we first tune the hyper-parameters, namely beta for DP-SGD and a "
                              "pair of (beta, C) for ADP-SGD\" (Table 6 prints the chosen values, not the grid)",
                              lambda c: {"betas": c.get("betas"), "Cs": c.get("Cs")}),
    },
}


#: Hong et al.'s setup dimensions (issue 33; the data sets, MNIST35 and synthetic data, are the paper's): the
#: training-set size, the DNN's width and the number of steps (a tuning grid, "T range", is not the setup)
_H_SETUP = ("training samples", "hidden width", "T")
for _eid, _dims in PAPER.items():
    if _eid.startswith("h-"):
        for _name in _H_SETUP:
            if _name in _dims:
                _dims[_name] = dataclasses.replace(_dims[_name], setup=True)


def _cells(key, *, many=False):
    """Our value read from the payload's ``cells`` (W's table experiments): the one value of
    ``key`` every cell holds, or (``many``) the sorted distinct values."""
    def read(p: dict):
        vals = sorted({c[key] for c in p["cells"]})
        return vals if many else (vals[0] if len(vals) == 1 else vals)
    return read


def _runs(key, *, many=False):
    """Our value read from W-F4's ``runs`` (one entry per (sigma, c) cell)."""
    def read(p: dict):
        vals = sorted({r[key] for r in p["runs"]})
        return vals if many else (vals[0] if len(vals) == 1 else vals)
    return read


def _seeds_in(*path):
    """The number of seeds: the length of the first axis of the array at ``path`` (a key, or an
    index into a list) of the payload."""
    def read(p: dict):
        v = p
        for k in path:
            v = v[k]
        return len(v)
    return read


_W_TABLE_STORED = {"seeds": _seeds_in("cells", 0, "best_adp"), "epochs": _cells("epochs", many=True),
                   "clip grid": _cells("clip", many=True), "epsilon_bar grid": _cells("epsilon_bar", many=True)}

#: experiment ID -> {dimension: our value read from the **payload**} (issue 30): the sizes a
#: result holds in its numbers (array lengths, stored counts), which an edit of its provenance
#: cannot change. A dimension not listed here is read, by default, with its config reader
#: (``Dim.ours``) from the config the payload records of itself (``payload["config"]`` or
#: ``payload["settings"]``), where it records one; see :func:`stored_sizes`.
STORED: dict[str, dict[str, Callable[[dict], Any]]] = {
    "audit": {"trials": lambda p: {a["trainer"]: a["trials"] for a in p["audits"]}},
    "w-f1": {"training samples": lambda p: p["train"]["N_train"], "seeds": _seeds_in("train", "acc_adp")},
    "w-f4": {"training samples": _runs("N"), "seeds": _seeds_in("runs", 0, "test_error"),
             "epochs": lambda p: int(max(max(r["epochs"]) for r in p["runs"])), "c grid": _runs("c", many=True),
             "model": lambda p: "CNN" if str(_runs("model")(p)).startswith("cnn") else _runs("model")(p)},
    "w-t1245": {"training samples": _cells("N_train"), **_W_TABLE_STORED},
    "w-ladder": {"training samples (largest rung)": lambda p: max(c["rung"] for c in p["cells"]), **_W_TABLE_STORED},
    "w-t36": {"training samples": _cells("N_train")},
}


def stored_sizes(experiment_id: str, payload: dict) -> dict[str, Any]:
    """``{dimension: our value as the payload holds it}`` for the dimensions the payload records
    (:data:`STORED`, else the dimension's config reader applied to the payload's own record of
    its config); a dimension the payload does not record, or whose reader fails on it, is left out.

    >>> stored_sizes("h-f-curv", {"config": {"N": 100, "repeats": 1000, "T": 100}})
    {'training samples': 100, 'repeats': 1000, 'T': 100}
    >>> stored_sizes("w-f1", {"train": {"N_train": 5000, "acc_adp": [[0.5], [0.6]]}})
    {'training samples': 5000, 'seeds': 2}
    """
    dims = PAPER.get(experiment_id, {})
    readers = STORED.get(experiment_id, {})
    own = next((payload[k] for k in ("config", "settings") if isinstance(payload.get(k), dict)), None)
    out = {}
    for name, d in dims.items():
        try:
            if name in readers:
                out[name] = readers[name](payload)
            elif own is not None and d.ours(own) is not None:
                out[name] = d.ours(own)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            continue
    return out


def size_mismatches(experiment_id: str, config: dict, payload: dict) -> list[str]:
    """The dimensions where the recorded ``config`` and the ``payload`` disagree, each as
    ``<dimension>: config <value>, payload <value>`` ([] when they agree): a result whose
    provenance says one size and whose numbers hold another is inconsistent, and is never
    judged at the paper's scale (issue 30: an edited ``provenance.config``).

    >>> size_mismatches("h-f-curv", {"N": 60000, "repeats": 100, "T": 100},
    ...                 {"config": {"N": 100, "repeats": 1000, "T": 100}})
    ['training samples: config 60000, payload 100', 'repeats: config 100, payload 1000']
    """
    dims = PAPER.get(experiment_id, {})
    out = []
    for name, value in stored_sizes(experiment_id, payload).items():
        try:
            ours = dims[name].ours(config)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            ours = None
        if not _same(_rounded(_plain(value)), _rounded(_plain(ours))):
            out.append(f"{name}: config {_plain(ours)}, payload {_plain(value)}")
    return out


def _rounded(v):
    """``v`` with every float rounded to 12 significant digits (as the store's config hash: a
    computed grid differs in its last bit between machines)."""
    if isinstance(v, float):
        return float(f"{v:.12g}")
    if isinstance(v, list):
        return [_rounded(x) for x in v]
    if isinstance(v, dict):
        return {k: _rounded(x) for k, x in v.items()}
    return v


def _plain(v):
    """``v`` with numpy scalars and arrays, and tuples, as plain Python (for comparing and printing)."""
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def scaled_ids() -> list[str]:
    """The experiments with a scale declaration."""
    return list(PAPER)


def _same(a, b) -> bool:
    try:
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
            return float(a) == float(b)
    except TypeError:
        return False
    return a == b


def scale_of(experiment_id: str, config: dict) -> dict[str, dict]:
    """``{dimension: {"paper", "ours", "source", "match"}}`` for ``config`` (``match`` None
    where the paper prints no number); an experiment without a declaration gives ``{}``.

    >>> s = scale_of("h-f-eff", {"N": [250], "hidden": 100, "repeats": 50, "T_grid": [50, 100, 150], "gammas": [0.9]})
    >>> s["hidden width"]["paper"], s["hidden width"]["ours"], s["hidden width"]["match"], s["T range"]["match"]
    (1000, 100, False, True)
    """
    dims = PAPER.get(experiment_id, {})
    out = {}
    for name, d in dims.items():
        ours = d.ours(config)
        match = None if d.paper is None else (_within(d.paper, ours, d.ratio) if d.ratio else _same(d.paper, ours))
        out[name] = {"paper": d.paper, "ours": ours, "source": d.source, "match": match}
    return out


def _within(paper, ours, ratio: float) -> bool:
    """Numbers (or equal-length lists of numbers, elementwise) within a factor ``ratio`` either way.

    >>> _within([11760, 23520], [11000, 40000], 2.0), _within(11760, 469, 2.0), _within(10, None, 2.0)
    (True, False, False)
    """
    if isinstance(paper, (list, tuple)) and isinstance(ours, (list, tuple)):
        return len(paper) == len(ours) and all(_within(a, b, ratio) for a, b in zip(paper, ours))
    try:
        a, b = float(paper), float(ours)
    except (TypeError, ValueError):
        return False
    return a > 0 and b > 0 and 1 / ratio <= b / a <= ratio


def comparability(experiment_id: str, scale: dict[str, dict]) -> tuple[str, str]:
    """``("size", "")`` when every *setup* dimension of ``experiment_id``'s scale block (data set,
    model, trained layers, number of steps: :attr:`Dim.setup`) that the paper prints matches ours (steps
    within :data:`STEPS_RATIO`), or the row has no scale block (a closed form, a count, an
    accountant: the paper's own quantity); else ``("direction", why)``, naming the dimensions
    that differ: such a row compares the sign of an effect, never its size (issue 33).

    >>> comparability("h-x-eer", {})
    ('size', '')
    >>> s = scale_of("w-t1245", {"dataset": "fashion", "pretrain_n": 20000, "n_train": 2000, "epochs": [60],
    ...                          "batch_size": 256})
    >>> comparability("w-t1245", s)[0], s["steps"]["ours"], s["steps"]["match"]
    ('direction', [469], False)
    """
    dims = PAPER.get(experiment_id, {})
    differ = [f"{k}: ours {d.get('ours')}, paper {d.get('paper')}" for k, d in scale.items()
              if k in dims and dims[k].setup and d.get("match") is False]
    if not differ:
        return "size", ""
    return "direction", "our setup is not the paper's (" + "; ".join(differ) + ")"


def at_paper_scale(scale: dict[str, dict]) -> bool:
    """True only when every dimension with a printed value matches (and there is one).

    >>> at_paper_scale({"a": {"match": True}, "b": {"match": None}}), at_paper_scale({"a": {"match": False}})
    (True, False)
    """
    printed = [d["match"] for d in scale.values() if d.get("match") is not None]
    return bool(printed) and all(printed)
