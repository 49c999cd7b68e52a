"""Every clipping path keeps each example's clipped gradient within C, whatever the magnitude of
its features, in float32 and float64; and the trainers refuse features that are not finite real
numbers, or that overflow the training dtype, or an empty data set, in one line.

The bound is measured as the ledger needs it: the float64 norm of the gradient sum the path
returns for that example alone (a one-example data set, and the full data set with Poisson
weights selecting it), against C with no slack beyond float64's rounding of the check. One
record of huge or tiny magnitude sits among ordinary ones. A float32 clip factor below the
normal range used to round up (a record near 1e23 gave ||clipped|| / C = 1.96 on the MLP with
the squared loss); :func:`test_old_clip_factor_breaks_the_bound` keeps the old factor at hand
to show that these tests see it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompanion.core import validate
from dpcompanion.training import model_base
from dpcompanion.training.dense_models import DenseModel
from dpcompanion.training.model_base import Model, norms64
from dpcompanion.training.models import make_model
from dpcompanion.training.trainers import TrainConfig, train
from dpcompanion.training.trainers.oracles import GeneralOracle, LinearOracle, make_oracle

D = 6  # features of the dense models
SLACK = 1 + 1e-12  # float64 rounding of the check itself, nothing more
MAGNITUDES = [1e-30, 1e-20, 1e22, 3e22, 1e23, 1e24, 1e30, 1e38]
#: clip norms below the normal range, where the products forming c g underflow (the slack of clip_scale)
TINY_C = {torch.float32: [1e-44, 1e-43, 1e-42, 1e-41, 1e-40, 1e-39],
          torch.float64: [1e-322, 1e-320, 1e-316, 1e-312, 1e-309]}


def _mlp_generic():
    m = make_model("mlp", in_dim=D, hidden=7)
    m.fast_path = False  # the paper's network through the generic ghost path
    return m


def _cnn_ghost():
    m = make_model("cnn-mnist", n_classes=10)
    m.force_ghost = True  # every conv layer by its ghost norm
    return m


#: name -> (model factory, how the trainers clip it: an oracle's ``fast`` flag, or "func" for
#: the torch.func reference path, Model.clipped_grad_sum)
CASES = {
    "linear-fast": (lambda: make_model("linear", in_dim=D), None),
    "linear-general": (lambda: make_model("linear", in_dim=D), False),
    "logistic-fast": (lambda: make_model("logistic", in_dim=D), None),
    "logistic-general": (lambda: make_model("logistic", in_dim=D), False),
    "linear-4class": (lambda: make_model("linear", in_dim=D, n_classes=4), None),
    "logistic-3class": (lambda: make_model("logistic", in_dim=D, n_classes=3), None),
    "mlp": (lambda: make_model("mlp", in_dim=D, hidden=7), None),
    "mlp-squared": (lambda: make_model("mlp", in_dim=D, hidden=7, loss="squared"), None),
    "mlp-generic": (_mlp_generic, None),
    # rows of 1,000 and 300 values: their squared norms are summed in float32 partials (sqnorms)
    "mlp-wide": (lambda: make_model("mlp", in_dim=D, hidden=1000), None),
    "mlp-wide-generic-3class": (lambda: DenseModel(in_dim=D, n_classes=3, hidden=(300, 40)), None),
    "mlp-3class": (lambda: make_model("mlp", in_dim=D, n_classes=3, hidden=7), None),
    "mlp-tanh-deep": (lambda: DenseModel(in_dim=D, n_classes=2, hidden=(5, 4), activation="tanh",
                                         loss="squared"), None),
    "torch-func": (lambda: make_model("mlp", in_dim=D, n_classes=3, hidden=5), "func"),
    "cnn-mnist": (lambda: make_model("cnn-mnist", n_classes=10), None),
    "cnn-mnist-ghost": (_cnn_ghost, None),
}
_MODELS: dict[str, Model] = {}


def _model(name: str) -> Model:
    if name not in _MODELS:
        _MODELS[name] = CASES[name][0]()
    return _MODELS[name]


def _clip_sum(name, theta, X, y, C, weights=None):
    """The clipped gradient sum ``(K, P)`` as the trainers form it for case ``name``."""
    model, how = _model(name), CASES[name][1]
    if how == "func":
        return Model.clipped_grad_sum(model, theta, X, y, clip_norm=C, weights=weights).grad_sum
    oracle = make_oracle(model, X, y, clip_norm=C, fast=how)
    assert isinstance(oracle, LinearOracle if name.endswith("-fast") else GeneralOracle)
    return oracle.clip_sum(theta, weights).grad_sum


def _data(name, dtype, mag, *, mixed, seed, theta_scale):
    """Parameters of K = 2 runs and N = 3 examples, example 0 of magnitude ``mag`` (every
    feature, or with ``mixed`` half of them, the others ordinary), within dtype's range."""
    model = _model(name)
    dim = math.prod(model.in_shape)
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(3, dim, generator=g, dtype=torch.float64)
    sign = torch.where(torch.rand(dim, generator=g) < 0.5, -1.0, 1.0).double()
    big = mag * sign * (0.5 + 0.5 * torch.rand(dim, generator=g, dtype=torch.float64))
    if mixed:
        big[::2] = X[0, ::2]
    X[0] = big
    y = torch.randint(0, model.n_classes, (3,), generator=g)
    if isinstance(model, DenseModel) and model.hidden == ():
        theta = torch.randn(2, model.n_params, generator=g, dtype=torch.float64) * theta_scale
    else:
        theta = model.init(generators=[torch.Generator().manual_seed(seed + k) for k in range(2)],
                           dtype=torch.float64) * (theta_scale / 0.3)
    return theta.to(dtype), X.to(dtype), y


def _worst_ratio(name, theta, X, y, C) -> float:
    """Largest ||clipped contribution|| / C over the runs for each example alone and for the
    huge example selected by weights in the full data set; the full sum must be finite. (The
    CNNs, slow, check the huge example alone: their oracle sums a weighted selection over the
    selected rows only, which is the same computation.)"""
    ratios = []
    cnn = name.startswith("cnn")
    for i in range(1 if cnn else X.shape[0]):
        ratios.append(norms64(_clip_sum(name, theta, X[i:i + 1], y[i:i + 1], C)) / C)
    if not cnn:
        w = torch.zeros(theta.shape[0], X.shape[0], dtype=X.dtype)
        w[:, 0] = 1.0
        ratios.append(norms64(_clip_sum(name, theta, X, y, C, w)) / C)
    full = _clip_sum(name, theta, X, y, C)
    assert bool(torch.isfinite(full).all()), f"{name}: the full sum is not finite"
    r = torch.cat(ratios)
    assert bool(torch.isfinite(r).all()), f"{name}: a contribution is not finite"
    return float(r.max())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(CASES))
def test_each_example_within_C_at_extreme_magnitudes(name, dtype):
    worst = 0.0
    cnn = name.startswith("cnn")  # slow: one setting, whole records
    settings = [(1.0, 0.3), (0.1, 3.0)][: 1 if cnn else 2]
    for mag in MAGNITUDES:
        for mixed in (False,) if cnn else (False, True):
            for seed, (C, scale) in enumerate(settings):
                theta, X, y = _data(name, dtype, mag, mixed=mixed, seed=seed, theta_scale=scale)
                r = _worst_ratio(name, theta, X, y, C)
                assert r <= SLACK, (name, dtype, mag, mixed, C, r)
                worst = max(worst, r)
    assert worst > 0.5  # the huge records are clipped to about C, not dropped wholesale


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(list(CASES)), f32=st.booleans(), exponent=st.floats(-35.0, 38.5),
       mixed=st.booleans(), seed=st.integers(0, 2**16), C=st.sampled_from([1e-42, 1e-3, 0.1, 1.0, 30.0]),
       scale=st.sampled_from([0.3, 3.0]))
def test_each_example_within_C_property(name, f32, exponent, mixed, seed, C, scale):
    dtype = torch.float32 if f32 else torch.float64
    theta, X, y = _data(name, dtype, 10.0**exponent, mixed=mixed, seed=seed, theta_scale=scale)
    assert _worst_ratio(name, theta, X, y, C) <= SLACK


def _old_clip_scale(norms, clip_norm, *, dtype, absolute=None):
    """The clip factor as it was: ``C / (||g|| (1 + kappa))`` rounded to nearest in ``dtype``
    (no rounding down below the normal range, no underflow slack)."""
    kappa = model_base.CLIP_SLACK_ULPS * torch.finfo(dtype).eps / 2 + model_base.CLIP_SLACK_NORM
    return (clip_norm / (norms.clamp_min(1e-30) * (1.0 + kappa))).to(dtype)


def _sweep_1e22_1e24(name):
    worst = 0.0
    for seed in range(5):
        for mag in np.logspace(22, 24, 17):
            theta, X, y = _data(name, torch.float32, float(mag), mixed=False, seed=seed, theta_scale=0.3)
            for i in range(2):
                g = _clip_sum(name, theta, X[i:i + 1], y[i:i + 1], 1.0)
                worst = max(worst, float(norms64(g).max()))
    return worst


@pytest.mark.parametrize("name", ["mlp-squared", "linear-4class"])
def test_old_clip_factor_breaks_the_bound(name, monkeypatch):
    """With the old factor, a float32 record of magnitude 1e22 to 1e24 gets a clip factor below
    float32's normal range that rounds up: ||clipped|| / C well above 1 (1.9 or so). The same
    inputs stay within C with the factor in use."""
    new = _sweep_1e22_1e24(name)
    with monkeypatch.context() as mp:
        mp.setattr(model_base, "clip_scale", _old_clip_scale)
        old = _sweep_1e22_1e24(name)
    assert old > 1.01, old
    assert new <= SLACK, new


@pytest.mark.parametrize("name", list(CASES))
def test_each_example_within_C_beyond_float32_range_in_float64(name):
    """Float64 records far outside float32's range, where float64's own squares over- or
    underflow (above ~1e154, below ~1e-154)."""
    cnn = name.startswith("cnn")  # slow here (subnormal arithmetic in the convolutions): two magnitudes
    for mag in (1e-200, 1e200) if cnn else (1e-300, 1e-200, 1e-160, 1e150, 1e200, 1e300):
        for mixed in (False,) if cnn else (False, True):
            theta, X, y = _data(name, torch.float64, mag, mixed=mixed, seed=1, theta_scale=0.3)
            assert _worst_ratio(name, theta, X, y, 1.0) <= SLACK, (name, mag, mixed)
        if not cnn:
            theta, X, y = _data(name, torch.float64, 3.0, mixed=True, seed=2, theta_scale=0.3)
            theta = theta * mag ** 0.5  # huge or tiny weights on ordinary data
            assert _worst_ratio(name, theta, X, y, 1e-3) <= SLACK, (name, mag, "theta")


def test_float64_tiny_backprop_against_huge_features(monkeypatch):
    """Float64: a backprop of 1e-170 (its squares underflow to 0) against features of 1e150
    (finite): the gradient's norm is 4e-20, far above C = 1e-25. Norms from plain float64
    squares called it 0 and left the gradient unclipped (ratio ~4e5); the rescaled norms and
    the products of norms before squaring clip it to C."""
    from dpcompanion.training import dense_models

    model = _model("linear-4class")
    X = torch.full((1, D), 1e150, dtype=torch.float64)
    y = torch.tensor([0])
    theta = torch.zeros(1, model.n_params, dtype=torch.float64)
    # W = 0 and z = b = (1, 1e-170, 1e-170, 1e-170): the backprop z - onehot(0) is (0, 1e-170, ...)
    model.unflatten(theta)["b1"].copy_(torch.tensor([[1.0, 1e-170, 1e-170, 1e-170]], dtype=torch.float64))
    C = 1e-25
    assert _worst_ratio("linear-4class", theta, X, y, C) <= SLACK
    with monkeypatch.context() as mp:
        mp.setattr(dense_models, "norms64", lambda v: torch.linalg.vector_norm(v, dim=-1, dtype=torch.float64))
        old = float(norms64(_clip_sum("linear-4class", theta, X, y, C))) / C
    assert old > 1e5, old


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(CASES))
def test_each_example_within_a_tiny_C(name, dtype):
    """Ordinary records, C below the dtype's normal range: the clipped products are subnormal,
    each rounded by up to half a step, which the factor's absolute slack covers."""
    cnn = name.startswith("cnn")  # slow (subnormal arithmetic throughout): one C, one seed
    for C in TINY_C[dtype][2:3] if cnn else TINY_C[dtype]:
        for seed in range(1 if cnn else 2):
            theta, X, y = _data(name, dtype, 3.0, mixed=True, seed=seed, theta_scale=0.3)
            assert _worst_ratio(name, theta, X, y, C) <= SLACK, (name, dtype, C)


def _without_slack(norms, clip_norm, *, dtype, absolute=None, _scale=model_base.clip_scale):
    return _scale(norms, clip_norm, dtype=dtype)


@pytest.mark.parametrize("name", ["mlp", "logistic-3class"])
def test_without_the_underflow_slack_a_tiny_C_is_exceeded(name, monkeypatch):
    """The absolute slack is needed: without it (the factor as in use otherwise), a float32 C
    below the normal range lets a subnormal product round up, ||clipped|| / C above 1.01."""
    def sweep():
        worst = 0.0
        for seed in range(4):
            for C in np.logspace(-44, -40, 9):
                theta, X, y = _data(name, torch.float32, 3.0, mixed=True, seed=seed, theta_scale=0.3)
                worst = max(worst, _worst_ratio(name, theta, X, y, float(C)))
        return worst

    new = sweep()
    with monkeypatch.context() as mp:
        mp.setattr(model_base, "clip_scale", _without_slack)
        old = sweep()
    assert old > 1.01, old
    assert new <= SLACK, new


def test_round_down_subnormal_never_rounds_up():
    s = torch.tensor([0.0, 2.0**-150, 0.6 * 2.0**-149, 1.5 * 2.0**-149, 0.999 * 2.0**-126, 2.0**-126, 0.7],
                     dtype=torch.float64)
    out = model_base.round_down_subnormal(s, torch.float32)
    assert out.dtype == torch.float32 and bool((out.double() <= s).all())
    assert out[-1] == torch.tensor(0.7, dtype=torch.float32)  # normal values: round to nearest, as before
    assert torch.equal(model_base.round_down_subnormal(s, torch.float64), s)


@pytest.mark.parametrize("name", ["mlp-squared", "mlp-3class", "mlp-tanh-deep", "torch-func", "linear-fast",
                                  "logistic-fast"])
def test_nonfinite_samples_are_dropped_not_spread(name, monkeypatch):
    """A finite float32 record whose activations overflow (``W x`` with weights 2 and features
    3e38: inf, then inf - inf): its run's sum equals the sum without it, where it was NaN. On the
    margin fast path the BLAS kernel decides whether ``theta . x`` is inf (clipped like any
    margin) or NaN, so there a NaN margin is injected for that record."""
    model = _model(name)
    g = torch.Generator().manual_seed(0)
    theta = torch.randn(2, model.n_params, generator=g) * 0.3
    n1 = model.sizes[1] * D  # the first layer's weights, (2, -2, 2, ...): 2 * 3e38 is inf in float32
    theta[:, :n1] = torch.tensor([2.0, -2.0]).repeat(n1 // 2)
    X = torch.randn(4, D, generator=g)
    X[0] = torch.tensor([3e38, 3e38, -3e38, -3e38, 3e38, -3e38])
    y = torch.tensor([1, 0, 1, 0])
    if name.endswith("-fast"):
        margins = LinearOracle._margins

        def nan_margin(self, th):
            r = margins(self, th)
            if self.N == 4:
                r[:, 0] = float("nan")
            return r

        monkeypatch.setattr(LinearOracle, "_margins", nan_margin)
    else:  # the record's own values overflow: its norm is not finite
        res = (Model.clipped_grad_sum(model, theta, X, y, clip_norm=1.0) if name == "torch-func"
               else model.clipped_grad_sum(theta, X, y, clip_norm=1.0))
        assert not bool(torch.isfinite(res.norms[:, 0]).any())
    got = _clip_sum(name, theta, X, y, 1.0)
    ref = _clip_sum(name, theta, X[1:], y[1:], 1.0)
    assert bool(torch.isfinite(got).all())
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)


# ---- refused at the boundary of training ---------------------------------------------------

def _cfg(dtype=torch.float32):
    return TrainConfig.build(sigma=np.full(2, 2.0), R=1.0, lr=0.1, clip_norm=1.0, device="cpu", dtype=dtype)


def _ok():
    return np.array([[0.5, -1.0], [1.0, 2.0], [0.0, 1.0]]), np.array([0, 1, 1])


def _with(v):
    X, _ = _ok()
    X = X.astype(np.asarray(v).dtype) if np.iscomplexobj(v) else X.copy()
    X[1, 1] = v
    return X


REFUSED = {
    "nan": (lambda: (_with(np.nan), None), "X", "finite"),
    "+inf": (lambda: (_with(np.inf), None), "X", "finite"),
    "-inf": (lambda: (_with(-np.inf), None), "X", "finite"),
    "nan-tensor": (lambda: (torch.tensor(_with(np.nan)), None), "X", "finite"),
    "complex": (lambda: (_ok()[0] + 1j, None), "X", "complex"),
    "complex-tensor": (lambda: (torch.tensor(_ok()[0] + 0j), None), "X", "complex"),
    "empty": (lambda: (np.zeros((0, 2)), None), "X", "at least one example"),
    "overflow-on-cast": (lambda: (_with(1e39), None), "X", "float32"),
    "X_test-nan": (lambda: (_ok()[0], _with(np.nan)), "X_test", "finite"),
    "X_test-empty": (lambda: (_ok()[0], np.zeros((0, 2))), "X_test", "at least one example"),
    "strings": (lambda: (np.array([["a", "b"]] * 3), None), "X", "real numbers"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_train_refuses_bad_features_in_one_line(case):
    make, who, what = REFUSED[case]
    X, X_test = make()
    _, y = _ok()
    y = y[: len(X)]
    kw = {} if X_test is None else {"X_test": X_test, "y_test": np.array([0, 1, 1])[: len(X_test)]}
    with pytest.raises(ValueError) as e:
        train(make_model("logistic", in_dim=2), X, y, _cfg(), **kw)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{who} ") and what in msg, msg


def test_ordinary_and_float64_features_still_train():
    X, y = _ok()
    h = train(make_model("logistic", in_dim=2), X, y, _cfg(), X_test=X, y_test=y)
    assert h.steps_done == 2
    big = X * 1e300  # finite in float64, refused in float32
    assert validate.features("X", big, dtype=torch.float64) is not None
    with pytest.raises(ValueError, match="becomes inf in float32"):
        validate.features("X", big, dtype=torch.float32)
