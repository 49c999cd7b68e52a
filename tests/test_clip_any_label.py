"""Clipping holds for any label.

Two defences, each tested on its own:

* **By construction.** Below the trainers' entry, every clip-and-sum piece (the linear /
  logistic margin fast path, the dense ghost-clipping paths, the binary ReLU MLP path,
  multi-class dense models, the CNNs through torch.func and ghost norms) bounds one
  example's contribution to the clipped sum by C whatever its label: the property test
  computes the sum on a data set D and on D without one example and checks the difference,
  the true per-example sensitivity, against C. Labels a model cannot take (a CNN's index out
  of range) must raise; those refusals are tested separately, so that no property test
  passes because the function refused.
* **At the boundary.** Every trainer (PGD, momentum, PSGD, ADP-SGD, ``training.train``)
  refuses labels outside ``{0, ..., n_classes - 1}`` with one ``ValueError`` naming ``y``,
  the value and what is allowed, and runs on valid labels.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcompanion import training
from dpcompanion.core import validate
from dpcompanion.training.conv_models import FuncModel, GhostConvModel
from dpcompanion.training.dense_models import DenseModel
from dpcompanion.training.model_base import clip_scale, norms64
from dpcompanion.training.models import make_model
from dpcompanion.training.trainers import TrainConfig, train_adpsgd, train_pgd, train_psgd
from dpcompanion.training.trainers.oracles import GeneralOracle, LinearOracle, make_oracle

C = 0.7
#: relative slack on C for rounding of the other examples' part of the two sums (float64)
SLACK = 1e-9
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _tiny_cnn():
    return torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Tanh(), torch.nn.MaxPool2d(2, 1),
                               torch.nn.Flatten(), torch.nn.Linear(2 * 3 * 3, 3))


#: every model kind the trainers train, small; ``fast``: which oracle make_oracle builds
DENSE_BINARY = {
    "linear-fast": (lambda: DenseModel(in_dim=3, n_classes=2, loss="squared"), None),
    "linear-nobias-fast": (lambda: DenseModel(in_dim=3, n_classes=2, loss="squared", bias=False), None),
    "logistic-fast": (lambda: DenseModel(in_dim=3, n_classes=2, loss="logistic"), None),
    "linear-general": (lambda: DenseModel(in_dim=3, n_classes=2, loss="squared"), False),
    "logistic-general": (lambda: DenseModel(in_dim=3, n_classes=2, loss="logistic"), False),
    "mlp-relu-fast-path": (lambda: DenseModel(in_dim=3, n_classes=2, hidden=(5,)), None),
    "mlp-relu-squared": (lambda: DenseModel(in_dim=3, n_classes=2, hidden=(5,), loss="squared"), None),
    "mlp-tanh": (lambda: DenseModel(in_dim=3, n_classes=2, hidden=(5,), activation="tanh"), None),
    "mlp-2-hidden": (lambda: DenseModel(in_dim=3, n_classes=2, hidden=(4, 3)), None),
}
DENSE_MULTI = {
    "multiclass-ce": (lambda: DenseModel(in_dim=3, n_classes=3, hidden=(4,)), None),
    "multiclass-squared": (lambda: DenseModel(in_dim=3, n_classes=3, loss="squared"), None),
}
CNNS = {
    "cnn-torch-func": lambda: FuncModel(_tiny_cnn, in_shape=(1, 6, 6), n_classes=3, name="tiny-func"),
    "cnn-ghost": lambda: GhostConvModel(_tiny_cnn, in_shape=(1, 6, 6), n_classes=3, name="tiny-ghost"),
}


def _problem(model, seed: int, N: int, K: int = 3, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    X = (torch.randn(N, math.prod(model.in_shape), generator=g) * 2.0).to(dtype)
    theta = (torch.randn(K, model.n_params, generator=g) * 1.5).to(dtype)
    weights = (torch.rand(K, N, generator=g) < 0.6).to(dtype)
    return X, theta, weights


def _contribution(model, X, y, theta, weights, k: int, fast) -> np.ndarray:
    """Per run, ``||sum(D) - sum(D without example k)||`` of the clip-and-sum oracle (the
    piece below the trainers' label check), with Poisson ``weights`` or full batch."""
    keep = torch.tensor([i for i in range(X.shape[0]) if i != k])
    full = make_oracle(model, X, y, clip_norm=C, fast=fast)
    less = make_oracle(model, X[keep], y[keep], clip_norm=C, fast=fast)
    w_full = None if weights is None else weights
    w_less = None if weights is None else weights[:, keep]
    d = full.clip_sum(theta, w_full).grad_sum - less.clip_sum(theta, w_less).grad_sum
    return torch.linalg.vector_norm(d.double(), dim=-1).numpy()


any_float_label = st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, allow_infinity=False)
any_int_label = st.integers(min_value=-10**6, max_value=10**6)


# ------------------------------------------------------------------ by construction


@pytest.mark.parametrize("name", sorted(DENSE_BINARY))
@given(labels=st.lists(st.one_of(any_float_label, any_int_label.map(float)), min_size=6, max_size=6),
       k=st.integers(0, 5), seed=st.integers(0, 2**16), poisson=st.booleans())
@PROPERTY
def test_binary_models_clip_every_label_to_C(name, labels, k, seed, poisson):
    """A binary model's clip-and-sum bounds one example's contribution by C for any
    finite label (floats, integers far outside {0, 1}, negatives), full batch and Poisson."""
    make, fast = DENSE_BINARY[name]
    model = make()
    X, theta, w = _problem(model, seed, N=6)
    y = torch.tensor(labels, dtype=torch.float64)
    got = _contribution(model, X, y, theta, w if poisson else None, k, fast)
    assert np.all(got <= C * (1 + SLACK)), (name, labels[k], got)


@pytest.mark.parametrize("name", sorted(DENSE_MULTI))
@given(labels=st.lists(any_int_label, min_size=6, max_size=6), k=st.integers(0, 5), seed=st.integers(0, 2**16),
       poisson=st.booleans())
@PROPERTY
def test_multiclass_dense_models_clip_every_label_to_C(name, labels, k, seed, poisson):
    """A multi-class dense model (one-hot targets) bounds one example's
    contribution by C for any integer label, in range or not."""
    make, fast = DENSE_MULTI[name]
    model = make()
    X, theta, w = _problem(model, seed, N=6)
    got = _contribution(model, X, torch.tensor(labels), theta, w if poisson else None, k, fast)
    assert np.all(got <= C * (1 + SLACK)), (name, labels[k], got)


@pytest.mark.parametrize("name", sorted(CNNS))
@given(labels=st.lists(st.integers(0, 2), min_size=5, max_size=5), k=st.integers(0, 4), seed=st.integers(0, 2**16),
       poisson=st.booleans())
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_cnns_clip_every_label_they_accept_to_C(name, labels, k, seed, poisson):
    """The CNNs (torch.func and ghost norms) bound one example's contribution by C
    for every label they accept (the class indices)."""
    model = CNNS[name]()
    X, theta, w = _problem(model, seed, N=5, K=2)
    got = _contribution(model, X, torch.tensor(labels), theta, w if poisson else None, k, None)
    assert np.all(got <= C * (1 + SLACK)), (name, labels[k], got)


@pytest.mark.parametrize("name", sorted(CNNS))
@pytest.mark.parametrize("bad", [3, 10**6, -1, -10**6])
def test_cnns_refuse_labels_out_of_range(name, bad):
    """Below the trainers' label check a CNN refuses a class index out of range (its
    loss indexes the logits) rather than contributing anything."""
    model = CNNS[name]()
    X, theta, _ = _problem(model, 0, N=4, K=2)
    with pytest.raises((RuntimeError, IndexError, ValueError), match="out of bounds"):
        make_oracle(model, X, torch.tensor([0, bad, 1, 2]), clip_norm=C).clip_sum(theta)


def _old_cap_oracle(model, X, y, *, clip_norm):
    """The fast path as it was before the fix: the cap from ``||x||``, without the label."""
    o = LinearOracle(model, X, y, clip_norm=clip_norm)
    feats = torch.cat([X, torch.ones(X.shape[0], 1, dtype=X.dtype)], dim=1) if model.bias else X
    o.cap[: o.N] = clip_scale(norms64(feats), clip_norm, dtype=X.dtype)
    o.neg_cap = -o.cap
    return o


@pytest.mark.parametrize("label,old", [(-1, 3.0), (2, 3.0), (5, 9.0), (-7, 15.0)])
def test_the_issue_rows_linear_model_C_1(label, old):
    """The bug's numbers: with C = 1 one example of the linear model contributed 3.0 for
    y in {-1, 2}, 9.0 for y = 5 and 15.0 for y = -7 on the fast path (reproduced here on the
    old rule); the fast path now gives what the general path gives, at most 1."""
    model = make_model("linear", in_dim=1, bias=False)
    X = torch.tensor([[2.0], [0.5]], dtype=torch.float64)
    y = torch.tensor([label, 0])
    theta = torch.zeros(1, 1, dtype=torch.float64)
    X1, y1 = X[1:], y[1:]  # without the first example
    old_c = abs(float(_old_cap_oracle(model, X, y, clip_norm=1.0).clip_sum(theta).grad_sum
                      - _old_cap_oracle(model, X1, y1, clip_norm=1.0).clip_sum(theta).grad_sum))
    new_c = abs(float(LinearOracle(model, X, y, clip_norm=1.0).clip_sum(theta).grad_sum
                      - LinearOracle(model, X1, y1, clip_norm=1.0).clip_sum(theta).grad_sum))
    gen_c = abs(float(GeneralOracle(model, X, y, clip_norm=1.0).clip_sum(theta).grad_sum
                      - GeneralOracle(model, X1, y1, clip_norm=1.0).clip_sum(theta).grad_sum))
    assert old_c == pytest.approx(old, rel=1e-6)
    assert new_c <= 1.0 and gen_c <= 1.0
    assert new_c == pytest.approx(gen_c, rel=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("bias", [True, False])
def test_fast_path_is_bit_identical_for_labels_0_1(dtype, loss, bias):
    """The cap from the rows' own norms equals the old cap from ``||x||`` bit for bit
    when every label is 0 or 1 (the rows are +-x exactly), and so do the clipped sums, the
    clip fractions and the losses: committed numbers do not move."""
    g = torch.Generator().manual_seed(3)
    N, D, K = 45, 6, 11
    X = (torch.randn(N, D, generator=g) * 3).to(dtype)
    y = (torch.rand(N, generator=g) < 0.5).long()
    model = DenseModel(in_dim=D, n_classes=2, loss=loss, bias=bias)
    new, old = LinearOracle(model, X, y, clip_norm=C), _old_cap_oracle(model, X, y, clip_norm=C)
    assert torch.equal(new.cap, old.cap)
    theta = torch.randn(K, model.n_params, generator=g).to(dtype)
    w = (torch.rand(K, N, generator=g) < 0.4).to(dtype)
    for weights in (None, w):
        a, b = new.clip_sum(theta, weights), old.clip_sum(theta, weights)
        assert torch.equal(a.grad_sum, b.grad_sum)
        assert torch.equal(a.clip_fraction, b.clip_fraction) and torch.equal(a.loss, b.loss)


def test_fast_path_refuses_rows_that_overflow():
    """A label so large that ``(2y - 1) x`` overflows the dtype is refused by the
    fast path with a clear error, not clipped to a NaN contribution."""
    model = DenseModel(in_dim=2, n_classes=2, loss="squared")
    X = torch.ones(3, 2)
    with pytest.raises(ValueError, match=r"finite rows \(2y - 1\) x.*sample 1"):
        LinearOracle(model, X, torch.tensor([0.0, 1e39, 1.0], dtype=torch.float64), clip_norm=1.0)


# -------------------------------------------------------------------- at the boundary


def _data(n_classes: int = 2, N: int = 12):
    g = torch.Generator().manual_seed(0)
    return torch.randn(N, 3, generator=g), torch.arange(N) % n_classes


TRAINERS = {
    "pgd": lambda m, X, y, **kw: train_pgd(m, X, y, sigma=np.full(3, 4.0), R=1.0, **kw),
    "momentum": lambda m, X, y, **kw: train_pgd(m, X, y, sigma=np.full(3, 4.0), R=1.0, momentum=0.5, **kw),
    "psgd": lambda m, X, y, **kw: train_psgd(m, X, y, sigma=np.full(3, 4.0), R=1.0, sampling_rate=0.5, delta=1e-5,
                                             **kw),
    "adp": lambda m, X, y, **kw: train_adpsgd(m, X, y, R=1.0, T=3, **kw),
    "train": lambda m, X, y, **kw: training.train(m, X, y, TrainConfig.build(sigma=np.full(3, 4.0), R=1.0, lr=0.1,
                                                                                   clip_norm=1.0, **kw)),
}
CPU = {"device": "cpu", "progress": False}


@pytest.mark.parametrize("trainer", sorted(TRAINERS))
@pytest.mark.parametrize("model", ["linear", "logistic", "mlp"])
@pytest.mark.parametrize("bad,shown", [(-1, "-1"), (2, "2"), (10**9, "1000000000"), (0.5, "0.5"), (float("nan"), "nan"),
                                       (float("inf"), "inf"), (-7.0, "-7.0")])
def test_every_trainer_refuses_labels_outside_0_1(trainer, model, bad, shown):
    """Every trainer refuses a binary label outside {0, 1}, before any step, with
    one line naming y, the value, its index and what is allowed."""
    X, y = _data()
    y = y.double() if isinstance(bad, float) else y
    y[4] = bad
    m = make_model(model, in_dim=3, hidden=4)
    with pytest.raises(ValueError, match=r"^y must hold class labels in \{0, 1\}, got " + shown + " at index 4$"):
        TRAINERS[trainer](m, X, y, **CPU)


@pytest.mark.parametrize("trainer", sorted(TRAINERS))
@pytest.mark.parametrize("model", ["linear", "logistic", "mlp"])
def test_every_trainer_runs_on_valid_labels(trainer, model):
    """The same trainers run on labels in {0, 1}, given as ints, floats or numpy."""
    X, y = _data()
    m = make_model(model, in_dim=3, hidden=4)
    for labels in (y, y.double(), y.numpy()):
        h = TRAINERS[trainer](m, X, labels, **CPU)
        assert int(np.max(h.steps_done)) >= 1


def test_multiclass_trainer_refuses_a_label_past_the_last_class():
    """A 3-class model accepts 0, 1, 2 and refuses 3 and -1, naming the classes."""
    X, y = _data(n_classes=3)
    m = make_model("mlp", in_dim=3, n_classes=3, hidden=4)
    assert int(TRAINERS["pgd"](m, X, y, **CPU).steps_done) == 3
    for bad in (3, -1):
        yb = y.clone()
        yb[0] = bad
        with pytest.raises(ValueError, match=rf"^y must hold class labels in \{{0, \.\.\., 2\}}, got {bad} at index 0$"):
            TRAINERS["pgd"](m, X, yb, **CPU)


def test_test_labels_are_checked_too():
    """``y_test`` is checked as ``y`` (named as such)."""
    X, y = _data()
    yt = y.clone()
    yt[1] = 2
    with pytest.raises(ValueError, match=r"^y_test must hold class labels in \{0, 1\}, got 2 at index 1$"):
        train_pgd(make_model("logistic", in_dim=3), X, y, sigma=np.full(2, 4.0), R=1.0, X_test=X, y_test=yt, **CPU)


@pytest.mark.parametrize("values,needle", [
    ([[0, 1], [1, 0]], "1-D array of class labels in {0, 1}, got shape (2, 2)"),
    (["a", "b"], "must hold class labels in {0, 1}, got ['a', 'b']"),
    ([0, 1 + 0j], "must hold class labels in {0, 1}"),
    ([True, False], None),
])
def test_class_labels_validator(values, needle):
    """:func:`validate.class_labels`: shapes, non-numbers and complex refused by
    name; booleans are the labels 0 and 1."""
    if needle is None:
        assert validate.class_labels("y", values, n_classes=2).tolist() == [1, 0]
        return
    with pytest.raises(ValueError) as e:
        validate.class_labels("y", values, n_classes=2)
    assert needle in str(e.value) and "\n" not in str(e.value)
