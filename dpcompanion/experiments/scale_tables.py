"""Scale honesty: for each experiment, per dimension (training samples, width, repeats or seeds,
epochs or T, grid), the paper's value with the sentence it comes from, and ours, read from a config.

Each experiment declares its :class:`Dim` s in its own module (``PAPER_DIMS``, ``None`` where the paper
states no number); this module holds the machinery and the quotations several share. A run is at the
paper's scale only when every dimension with a printed value matches (:func:`at_paper_scale`). The pages,
the verdicts and the compute table recompute the block from the recorded config (:func:`scale_of`), so
the quotations shown are the current ones. Left out of every code hash; it imports only
:mod:`~dpcompanion.experiments.base` and sits below the store and the verdict rules (no import circle).

The DNN widths of Hong et al. differ between versions: 1000 hidden units in the FAccT version's Sec. 5
(H-F-EFF), 100 in the ICLR submission's Sec. 5 (H-F-MOM); its App. D (H-F-SCALE, H-F-INFL-EXTRA) prints
none, so those pages say "not stated" and cite both.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

from dpcompanion.experiments import base

__all__ = ["Dim", "STEPS_RATIO", "scale_of", "at_paper_scale", "comparability", "scaled_ids", "stored_sizes",
           "size_mismatches", "config_key", "config_range", "config_steps", "payload_cells",
           "payload_seeds", "hong_setup", "H_SETUP", "H_REPEATS", "H_MNIST35", "H_DNN_WIDTH", "W_TRAIN", "W_SEEDS",
           "W_MODEL", "W_MODEL_DATA", "W_STEPS", "W_LAYERS", "W_TABLE_DIMS", "W_TABLE_STORED", "beyond_scale"]

#: our number of steps matches the paper's within this factor either way: the paper's T = 11760 for 60
#: epochs is 60 x 196 (its steps per epoch rounded up), ours ceil(60 N / 256), 0.35% fewer at N = 50,000
STEPS_RATIO = 1.01


@dataclasses.dataclass(frozen=True)
class Dim:
    """One dimension: the paper's value (None: not stated), where it is printed, how ours is read."""

    paper: Any
    source: str
    ours: Callable[[dict], Any]
    #: part of the *setup* that decides if a row may compare sizes (:func:`comparability`)
    setup: bool = False
    #: match within this factor (numbers, or lists of numbers elementwise); None: equal values
    ratio: float | None = None


def config_key(*keys):
    """A reader of our value: the first of ``keys`` present in the config."""
    def read(c: dict):
        for k in keys:
            if k in c:
                v = c[k]
                return list(v) if isinstance(v, tuple) else v
        return None
    return read


def config_range(key):
    """A reader of our value: ``[min, max]`` of the config's list ``key`` (None where empty)."""
    def read(c: dict):
        v = c.get(key)
        return None if not v else [min(v), max(v)]
    return read


def config_steps(epochs_key: str, n_key: str, *, per_epoch_ceil: bool = False, batch: int = 256):
    """Our number of steps: ``ceil(epochs N / m)``, or ``ceil(N / m) epochs`` (``per_epoch_ceil``); a list
    for a list of epochs; ``N`` the largest of a list."""
    def read(c: dict):
        e, n, m = c.get(epochs_key), c.get(n_key), c.get("batch_size", batch)
        if e is None or n is None or not m:
            return None
        n = max(n) if isinstance(n, (list, tuple)) else n

        def one(ep):
            return int(math.ceil(n / m)) * int(ep) if per_epoch_ceil else int(math.ceil(int(ep) * n / m))
        return [one(x) for x in e] if isinstance(e, (list, tuple)) else one(e)
    return read


H_REPEATS = "the ICLR submission, App. D, Setup: \"All the experiments are repeated 100 times\""
H_MNIST35 = "the ICLR submission, App. D, Dataset: MNIST35 \"including 1000 handwritten images of digit 3 and 5\""
H_DNN_WIDTH = ("not stated for this figure (the ICLR submission, App. D: \"the DNN is experimented with the same setting\", no width); the FAccT version, Sec. 5: \"2-layer Deep "
                "Neural Network (DNN) with 1000 hidden units\" (data efficiency); the ICLR submission, Sec. 5: \"DNN with 2 layers and "
                "100 hidden units\" (momentum)")
W_TRAIN = "Wu et al., Sec. 6: \"There are 50000 images used for training\" (CIFAR-10)"
W_SEEDS = "Wu et al., Sec. 6: \"We repeat the experiments five times\""
W_MODEL = "Wu et al., Sec. 6: a CNN \"pre-trained on CIFAR-100 and fined-tuned on CIFAR-10\""
W_STEPS = ("Wu et al., Sec. 6: \"T = 11760, 23520, 39200 iterations corresponding to 60, 120, 200 training epochs\" "
            f"(ours: ceil(epochs N / 256); matches within {100 * (STEPS_RATIO - 1):g}%)")
#: every W transfer run here trains the CNN's last dense layer alone (protocols.wu.head_model)
W_LAYERS = Dim("the pre-trained CNN, fine-tuned", "Wu et al., Sec. 6: a CNN \"pre-trained on CIFAR-100 and fined-tuned "
                "on CIFAR-10\" (which layers are fine-tuned is not printed); ours: protocols.wu.head_model on the frozen "
                "features of protocols.wu.transfer_features", lambda c: "last dense layer only (32 -> 10)", setup=True)

#: the datasets as a reader knows them (the keys: dpcompanion.training.data.DATASETS)
DATASET_NAMES = {"fashion": "Fashion-MNIST", "mnist": "MNIST", "mnist35": "MNIST 3 vs 5", "cifar10": "CIFAR-10",
                 "digits": "scikit-learn digits"}

#: the model and data W train (a transfer from CIFAR-100); ours: the dataset and its public pre-training set
W_MODEL_DATA = Dim("CNN, CIFAR-100 -> CIFAR-10", W_MODEL,
                   lambda c: f"{DATASET_NAMES.get(c.get('dataset'), c.get('dataset'))} (a CNN pre-trained on "
                             f"{int(c.get('pretrain_n') or 0):,} public images)", setup=True)

#: the dimensions of Wu et al.'s Tables 1, 2, 4, 5 besides the training-set size
W_TABLE_DIMS = {
    "model / data": W_MODEL_DATA,
    "seeds": Dim(5, W_SEEDS, config_key("seeds")),
    "epochs": Dim([60, 120, 200], "Wu et al., Sec. 6: \"T = 11760, 23520, 39200 iterations corresponding to 60, 120, 200 "
                  "training epochs\"", config_key("epochs")),
    "steps": Dim([11760, 23520, 39200], W_STEPS, config_steps("epochs", "n_train"), setup=True, ratio=STEPS_RATIO),
    "trained layers": W_LAYERS,
    "clip grid": Dim([0.5, 1.0, 2.5, 5.0], "Wu et al., Sec. 6: \"C_G in {0.5, 1, 2.5, 5}\"", config_key("clips")),
    "epsilon_bar grid": Dim([0.8, 1.2, 1.6, 3.2, 6.4], "Wu et al., Sec. 6: \"epsilon_bar in {0.8, 1.2, 1.6, 3.2, 6.4}\"",
                            config_key("epsilon_bars")),
}

#: Hong et al.'s setup dimensions (the data sets are the paper's; a tuning range is not the setup)
H_SETUP = ("training samples", "hidden width", "T")


def hong_setup(dims: dict[str, Dim]) -> dict[str, Dim]:
    """A Hong et al. scale block with its :data:`H_SETUP` dimensions marked as the setup."""
    return {k: (dataclasses.replace(d, setup=True) if k in H_SETUP else d) for k, d in dims.items()}


def payload_cells(key, *, many=False, of="cells"):
    """Our value read from the payload's list ``of`` (``cells``; W-F4: ``runs``): the one value of
    ``key`` every entry holds, or (``many``) the sorted distinct values."""
    def read(p: dict):
        vals = sorted({c[key] for c in p[of]})
        return vals if many else (vals[0] if len(vals) == 1 else vals)
    return read


def payload_seeds(*path):
    """The number of seeds: the length of the first axis of the array at ``path`` (a key, or an
    index into a list) of the payload."""
    def read(p: dict):
        v = p
        for k in path:
            v = v[k]
        return len(v)
    return read


W_TABLE_STORED = {"seeds": payload_seeds("cells", 0, "best_adp"), "epochs": payload_cells("epochs", many=True),
                   "clip grid": payload_cells("clip", many=True), "epsilon_bar grid": payload_cells("epsilon_bar", many=True)}


def stored_sizes(experiment_id: str, payload: dict) -> dict[str, Any]:
    """``{dimension: our value as the payload holds it}`` (the experiment's ``stored_sizes``, else the
    config reader on the payload's own config); a dimension it does not record is left out.

    >>> stored_sizes("h-f-curv", {"config": {"N": 100, "repeats": 1000, "T": 100}})
    {'training samples': 100, 'repeats': 1000, 'T': 100}
    >>> stored_sizes("w-f1", {"train": {"N_train": 5000, "acc_adp": [[0.5], [0.6]]}})
    {'training samples': 5000, 'seeds': 2}
    """
    dims = _paper_dims(experiment_id)
    readers = _paper_dims(experiment_id, "stored_sizes")
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
    """``<dimension>: config <value>, payload <value>`` where the recorded ``config`` and the ``payload``
    disagree (an edited provenance: never judged at the paper's scale).

    >>> size_mismatches("h-f-curv", {"N": 60000, "repeats": 100, "T": 100},
    ...                 {"config": {"N": 100, "repeats": 1000, "T": 100}})
    ['training samples: config 60000, payload 100', 'repeats: config 100, payload 1000']
    """
    dims = _paper_dims(experiment_id)
    out = []
    for name, value in stored_sizes(experiment_id, payload).items():
        try:
            ours = dims[name].ours(config)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            ours = None
        if not _same(_plain(value, rounded=True), _plain(ours, rounded=True)):
            out.append(f"{name}: config {_plain(ours)}, payload {_plain(value)}")
    return out


def _plain(v, *, rounded: bool = False):
    """``v`` with numpy scalars and arrays, and tuples, as plain Python (for comparing and printing);
    ``rounded``: every float to 12 significant digits (as the store's config hash)."""
    if hasattr(v, "tolist"):
        v = v.tolist()
    if rounded and isinstance(v, float):
        return float(f"{v:.12g}")
    if isinstance(v, (list, tuple)):
        return [_plain(x, rounded=rounded) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x, rounded=rounded) for k, x in v.items()}
    return v


def scaled_ids() -> list[str]:
    """The experiments with a scale declaration (:attr:`~dpcompanion.experiments.base.Experiment.paper_scale`)."""
    return [eid for eid, exp in base.all_experiments().items() if exp.paper_scale]


def _paper_dims(experiment_id: str, field: str = "paper_scale") -> dict:
    """The experiment's ``paper_scale`` (or another such field, ``stored_sizes``); {} where none."""
    exp = base.all_experiments().get(experiment_id)
    return dict(getattr(exp, field) or {}) if exp is not None else {}


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
    dims = _paper_dims(experiment_id)
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
    """``("size", "")`` when every printed *setup* dimension (:attr:`Dim.setup`) matches ours, or the row
    has no scale block; else ``("direction", why)``, naming those that differ: such a row compares the
    sign of an effect, never its size.

    >>> comparability("h-x-eer", {})
    ('size', '')
    >>> s = scale_of("w-t1245", {"dataset": "fashion", "pretrain_n": 20000, "n_train": 2000, "epochs": [60],
    ...                          "batch_size": 256})
    >>> comparability("w-t1245", s)[0], s["steps"]["ours"], s["steps"]["match"]
    ('direction', [469], False)
    """
    dims = _paper_dims(experiment_id)
    differ = [f"{k}: ours {d.get('ours')}, paper {d.get('paper')}" for k, d in scale.items()
              if k in dims and dims[k].setup and d.get("match") is False]
    if not differ:
        return "size", ""
    return "direction", "our setup is not the paper's (" + "; ".join(differ) + ")"


def at_paper_scale(scale: dict[str, dict]) -> bool:
    """True when the result's one scale word (:func:`scale_word`) is "paper scale": every size the paper
    prints matched or exceeded in its setup, so a caption, a verdict row and a count never disagree.

    >>> at_paper_scale({"a": {"match": True}, "b": {"match": None}}), at_paper_scale({"a": {"match": False}})
    (True, False)
    >>> at_paper_scale({"repeats": {"paper": 100, "ours": 16000, "match": False}})
    True
    """
    return scale_word(scale) == "paper scale"


#: the words a caption, table or count uses for a result's scale (:func:`scale_word`), each with its meaning
SCALE_WORDS = {
    "paper scale": "every size the paper prints is matched or exceeded, in the paper's setup",
    "reduced": "the paper's data and setup, with a size the paper prints made smaller",
    "other data": "a dataset (or a model's pre-training data) other than the paper's",
    "other setup": "the paper's sizes on its data, with a setting the paper prints changed (e.g. the budget)",
    "no printed run": "the paper prints no size for this run: an experiment of ours on a claim it states",
}


def _smaller(paper, ours, ratio: float | None) -> bool | None:
    """Whether ``ours`` is smaller than ``paper`` (numbers, or lists: their largest values); None when
    they are not numbers."""
    if isinstance(paper, (list, tuple)) and isinstance(ours, (list, tuple)):
        if not paper or not ours:
            return None
        if len(ours) < len(paper):
            return True
        return _smaller(max(paper, key=float), max(ours, key=float), ratio) if all(
            isinstance(x, (int, float)) for x in [*paper, *ours]) else None
    if isinstance(paper, bool) or isinstance(ours, bool):
        return None
    try:
        a, b = float(paper), float(ours)
    except (TypeError, ValueError):
        return None
    return b < a / (ratio or 1.0)


def scale_word(scale: dict[str, dict]) -> str:
    """The one word for a result's scale (:data:`SCALE_WORDS`), from its dimensions (:func:`scale_of`):
    "other data" when a data dimension differs, else "reduced" when a size is smaller than printed or a
    non-numeric size (the model, a grid) differs, else "other setup" when a setup number differs, else
    "paper scale" (sizes larger than printed count as matched); "no printed run" when the paper prints no
    size, "" for no declaration.

    >>> scale_word({"repeats": {"paper": 100, "ours": 16000, "match": False}})
    'paper scale'
    >>> scale_word({"repeats": {"paper": 100, "ours": 10, "match": False}})
    'reduced'
    >>> scale_word({"budget R": {"paper": 0.39, "ours": 0.51, "match": False, }, "repeats": {"paper": 100, "ours": 100, "match": True}})
    'other setup'
    >>> scale_word({"model / data": {"paper": "CNN, CIFAR", "ours": "fashion", "match": False}})
    'other data'
    >>> scale_word({"seeds": {"paper": None, "ours": 2, "match": None}}), scale_word({})
    ('no printed run', '')
    """
    printed = {k: d for k, d in scale.items() if d.get("match") is not None}
    if not scale:
        return ""
    if not printed:
        return "no printed run"
    differ = {k: d for k, d in printed.items() if d["match"] is False}
    if any("data" in k for k in differ):
        return "other data"
    smaller = {k: _smaller(d.get("paper"), d.get("ours"), None) for k, d in differ.items()}
    if any(v is True or (v is None and not _is_setting(k)) for k, v in smaller.items()):
        return "reduced"
    if any(v is False and _is_setting(k) for k, v in smaller.items()):
        return "other setup"
    return "paper scale"


def _is_setting(name: str) -> bool:
    """A dimension that is a setting of the run (a budget, a rate, a range a tuned parameter was searched
    over) rather than a size."""
    return any(w in name for w in ("budget", "epsilon", "delta", "rate", "range"))


def beyond_scale(scale: dict, tuning: list) -> tuple[dict, bool]:
    """``(scale, beyond)`` for one row: where its tuning records searched beyond the stated range, each
    range dimension of a tuned parameter (``"T range"``...) shows the range searched, not matching.

    >>> s = {"T range": {"paper": [50, 150], "ours": [50, 150], "match": True}}
    >>> t = [{"param": "T", "setting": "beyond", "grid_min": 50.0, "grid_max": 300.0}]
    >>> new, b = beyond_scale(s, t); new["T range"]["ours"], new["T range"]["match"], b
    ([50, 300], False, True)
    >>> beyond_scale(s, [{"param": "T", "setting": "paper", "grid_min": 50.0, "grid_max": 150.0}])[1]
    False
    """
    recs = [t for t in tuning if t.get("setting") == "beyond"]
    if not recs:
        return scale, False
    out = dict(scale)
    for name, d in scale.items():
        param = name.split(" range")[0] if " range" in name else None
        lims = [(t["grid_min"], t["grid_max"]) for t in recs if param and t.get("param") == param
                and t.get("grid_min") is not None and t.get("grid_max") is not None]
        if lims:
            lo, hi = min(a for a, _ in lims), max(b for _, b in lims)
            out[name] = {**d, "ours": [int(lo) if float(lo).is_integer() else lo, int(hi) if float(hi).is_integer() else hi],
                         "match": False}
    return out, True
