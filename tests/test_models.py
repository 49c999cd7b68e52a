"""Models: per-sample gradients, ghost clipping and the torch.func path against
independent references (a one-sample-at-a-time autograd loop on an ``nn.Module`` built
from the same parameters, and central finite differences)."""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dpcompanion.training.dense_models import DenseModel
from dpcompanion.training.model_base import clip_factors
from dpcompanion.training.models import make_model

DT = torch.float64


def _data(n, d, n_classes, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=DT) * 2
    y = torch.randint(0, n_classes, (n,), generator=g)
    return X, y


def _theta(model, K, seed=0):
    gens = [torch.Generator().manual_seed(seed + k) for k in range(K)]
    th = model.init(generators=gens, dtype=DT)
    return th + 0.5 * torch.randn(th.shape, generator=torch.Generator().manual_seed(99), dtype=DT)


def _loss_ref(model, out, yi):
    """The per-sample loss written again from the definitions in models' docstring."""
    if getattr(model, "n_out", None) == 1:
        s = 2.0 * yi.to(DT) - 1.0
        z = out[0, 0]
        return 0.5 * (z - s) ** 2 if model.loss_kind == "squared" else torch.log1p(torch.exp(-s * z))
    if getattr(model, "loss_kind", "logistic") == "squared":
        return 0.5 * ((out[0] - F.one_hot(yi, out.shape[-1]).to(DT)) ** 2).sum()
    return F.cross_entropy(out, yi.view(1))


def _loop_clipped_sum(model, theta_k, X, y, C, weights=None):
    """One sample at a time: autograd on an nn.Module, clip, accumulate."""
    mod = model.to_module(theta_k)
    total = torch.zeros_like(theta_k)
    norms = []
    for n in range(X.shape[0]):
        mod.zero_grad()
        x = X[n : n + 1]
        if hasattr(model, "in_shape") and len(model.in_shape) > 1:
            x = x.reshape(1, *model.in_shape)
        loss = _loss_ref(model, mod(x), y[n])
        loss.backward()
        g = torch.cat([p.grad.reshape(-1) for p in mod.parameters()])
        norms.append(g.norm())
        w = 1.0 if weights is None else float(weights[n])
        total += w * g * min(1.0, C / g.norm().item())
    return total, torch.stack(norms)


DENSE_CASES = [
    ("linear", 2, {}),
    ("linear", 3, {}),
    ("logistic", 2, {}),
    ("logistic", 4, {}),
    ("mlp", 2, {"activation": "relu"}),
    ("mlp", 3, {"activation": "tanh"}),
    ("mlp", 2, {"activation": "sigmoid", "loss": "squared"}),
]


@pytest.mark.parametrize("name,n_classes,kw", DENSE_CASES)
def test_ghost_clipping_equals_one_sample_loop(name, n_classes, kw):
    model = make_model(name, in_dim=4, n_classes=n_classes, hidden=6, **kw)
    X, y = _data(9, 4, n_classes)
    theta = _theta(model, 2)
    w = torch.tensor([1.0, 0, 1, 1, 0, 1, 1, 1, 0], dtype=DT)
    # clip at the median norm, so that some samples are clipped and some are not
    C = float(model.clipped_grad_sum(theta, X, y, clip_norm=1.0).norms.median())
    res = model.clipped_grad_sum(theta, X, y, clip_norm=C, weights=w.expand(2, -1))
    for k in range(2):
        ref, norms = _loop_clipped_sum(model, theta[k], X, y, C, w)
        torch.testing.assert_close(res.grad_sum[k], ref, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(res.norms[k], norms, rtol=1e-10, atol=1e-12)
    assert 0 < (res.norms > C).sum() < res.norms.numel()


@pytest.mark.parametrize("name,n_classes,kw", DENSE_CASES)
def test_per_sample_grads_match_finite_differences(name, n_classes, kw):
    model = make_model(name, in_dim=3, n_classes=n_classes, hidden=4, **kw)
    X, y = _data(3, 3, n_classes, seed=1)
    theta = _theta(model, 1, seed=3)
    G = model.per_sample_grads(theta, X, y)[0]  # (N, P)
    h = 1e-6
    for n in range(3):
        fd = torch.zeros(model.n_params, dtype=DT)
        for i in range(model.n_params):
            e = torch.zeros_like(theta)
            e[0, i] = h
            lp = model.per_sample_loss(theta + e, X[n : n + 1], y[n : n + 1])[0, 0]
            lm = model.per_sample_loss(theta - e, X[n : n + 1], y[n : n + 1])[0, 0]
            fd[i] = (lp - lm) / (2 * h)
        torch.testing.assert_close(G[n], fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,n_classes,kw", DENSE_CASES)
def test_losses_and_outputs_match_module(name, n_classes, kw):
    model = make_model(name, in_dim=4, n_classes=n_classes, hidden=5, **kw)
    X, y = _data(6, 4, n_classes)
    theta = _theta(model, 2)
    res = model.clipped_grad_sum(theta, X, y, clip_norm=1.0)
    for k in range(2):
        mod = model.to_module(theta[k])
        out = mod(X)
        torch.testing.assert_close(model.forward(theta, X)[k], out)
        ref = torch.stack([_loss_ref(model, out[n : n + 1], y[n]) for n in range(6)])
        torch.testing.assert_close(res.losses[k], ref)
        torch.testing.assert_close(model.per_sample_loss(theta, X, y)[k], ref)


def test_chunking_over_runs_gives_the_same_numbers():
    model = make_model("mlp", in_dim=5, n_classes=2, hidden=8)
    X, y = _data(20, 5, 2)
    theta = _theta(model, 5)
    full = model.clipped_grad_sum(theta, X, y, clip_norm=0.5)
    model.chunk_elements = 20 * 8 * 2  # two runs per chunk
    chunked = model.clipped_grad_sum(theta, X, y, clip_norm=0.5)
    torch.testing.assert_close(chunked.grad_sum, full.grad_sum, rtol=0, atol=1e-13)


def test_cnn_torch_func_clipping_equals_loop():
    model = make_model("cnn-mnist", n_classes=10)
    assert model.n_params == 26010
    g = torch.Generator().manual_seed(0)
    X = torch.rand(3, 784, generator=g, dtype=DT)
    y = torch.tensor([1, 7, 3])
    theta = model.init(generators=[torch.Generator().manual_seed(0)], dtype=DT)
    res = model.clipped_grad_sum(theta, X, y, clip_norm=0.05)
    ref, norms = _loop_clipped_sum(model, theta[0], X, y, 0.05)
    torch.testing.assert_close(res.norms[0], norms, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(res.grad_sum[0], ref, rtol=1e-9, atol=1e-12)


def test_cifar_cnn_shapes():
    model = make_model("cnn-cifar", n_classes=10)
    theta = model.init(generators=[torch.Generator().manual_seed(0)])
    X = torch.rand(2, 3 * 32 * 32)
    assert model.forward(theta, X).shape == (1, 2, 10)


def test_clip_factors():
    norms = torch.tensor([0.0, 0.5, 1.0, 4.0], dtype=torch.float64)
    c = clip_factors(norms, 1.0)
    assert c.dtype == torch.float32
    torch.testing.assert_close(c, torch.tensor([1.0, 1.0, 1.0, 0.25]), rtol=1e-6, atol=0)
    assert c[0] == 1.0 and c[1] == 1.0 and c[2] < 1.0 and c[3] < 0.25  # a few ulps of slack below C
    with pytest.raises(TypeError, match="float64"):
        clip_factors(norms.float(), 1.0)  # norms must be exact to ~1e-10: float64, from the values


# ---- a clipped per-sample gradient never exceeds C, in float32 or float64 ----------

def _post_clip_norms(G, C, dtype):
    """Float64 norms of the clipped vectors as summed: the factor times the gradient, each
    product rounded in ``dtype`` (and, separately, the exact products)."""
    from dpcompanion.training.model_base import norms64

    G = G.to(dtype)
    c = clip_factors(norms64(G), C, dtype=dtype)
    rounded = norms64(c.unsqueeze(-1) * G)
    exact = norms64(c.double().unsqueeze(-1) * G.double())
    return rounded, exact


def _near_C(C, dim, n, dtype, seed):
    """``n`` random vectors whose float64 norms are within a few dtype-ulps of C, plus huge and tiny ones."""
    g = torch.Generator().manual_seed(seed)
    V = torch.randn(n, dim, generator=g, dtype=torch.float64)
    eps = torch.finfo(dtype).eps
    k = torch.randint(-8, 65, (n,), generator=g).to(torch.float64)
    V = V / V.norm(dim=1, keepdim=True) * (C * (1 + k * eps / 2)).unsqueeze(-1)
    extra = torch.randn(6, dim, generator=g, dtype=torch.float64) * torch.tensor([1e30, 1e15, 1e3, 1e-3, 1e-20, 0.0],
                                                                                  dtype=torch.float64).unsqueeze(-1)
    return torch.cat([V, extra]).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("dim", [1, 3, 62001])
def test_clipped_norm_never_exceeds_C_adversarial(dtype, dim):
    n = 2000 if dim < 1000 else 40
    for seed, C in enumerate([1.0, 4.0, 0.1, 3.7e-3, 1e6]):
        G = _near_C(C, dim, n, dtype, seed)
        rounded, exact = _post_clip_norms(G, C, dtype)
        assert bool((rounded <= C).all()) and bool((exact <= C).all())


def test_old_clip_rule_overshoots_so_the_probe_can_fail():
    """The plain float32 rule ``min(1, C / ||g||)`` on float32 norms exceeds C on these inputs
    (up to C (1 + 1.7e-7)); the rule in use does not."""
    C, worst = 4.0, 0.0
    G = _near_C(C, 3, 20000, torch.float32, 7)
    old = torch.clamp(C / G.norm(dim=-1).clamp_min(1e-30), max=1.0)
    from dpcompanion.training.model_base import norms64

    worst = float((norms64(old.unsqueeze(-1) * G) / C).max()) - 1
    assert worst > 5e-8
    rounded, _ = _post_clip_norms(G, C, torch.float32)
    assert bool((rounded <= C).all())


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    @settings(max_examples=200, deadline=None)
    @given(v=hnp.arrays(np.float32, st.integers(1, 40), elements=st.floats(-1e6, 1e6, width=32)),
           C=st.floats(1e-6, 1e6), k=st.integers(-4, 40))
    def test_clipped_norm_never_exceeds_C_hypothesis(v, C, k):
        G = torch.from_numpy(v).double()
        nrm = float(G.norm())
        if nrm > 0:  # put the norm a few ulps around C (or leave it where it was for k = 40)
            G = G * (C * (1 + k * 2.0**-24) / nrm) if k < 40 else G
        for dtype in (torch.float32, torch.float64):
            rounded, exact = _post_clip_norms(G.unsqueeze(0).to(dtype), C, dtype)
            assert float(rounded[0]) <= C and float(exact[0]) <= C
except ImportError:  # pragma: no cover - hypothesis is a test dependency
    pass


def _single_sample_sums(clip_sum, X, y, n):
    """The clipped gradient of each sample alone, as the path sums it (float32 values)."""
    return [clip_sum(X[i:i + 1], y[i:i + 1]) for i in range(n)]


@pytest.mark.parametrize("path", ["linear-squared", "linear-logistic", "relu-mlp", "ghost-tanh", "torch-func", "canary"])
def test_every_clipping_path_keeps_each_sample_within_C(path):
    """For each path that clips (the trainers' linear fast path, the MLP fast path, ghost
    clipping, the torch.func path, the audit's canary model), in float32: the clip norm C is
    put within a few ulps of each sample's gradient norm, and each sample's clipped gradient,
    summed alone by that path, has float64 norm <= C."""
    from dpcompanion.training.privacy_audit import CanaryModel
    from dpcompanion.training.model_base import Model, norms64
    from dpcompanion.training.trainers.oracles import LinearOracle

    f32 = torch.float32
    g = torch.Generator().manual_seed(3)
    n, d = 24, 5
    X = (torch.randn(n, d, generator=g, dtype=torch.float64) * 3).to(f32)
    y = torch.randint(0, 2, (n,), generator=g)
    if path.startswith("linear"):
        model = make_model("linear" if path.endswith("squared") else "logistic", in_dim=d)
    elif path == "relu-mlp":
        model = make_model("mlp", in_dim=d, hidden=7)
    elif path in ("ghost-tanh", "torch-func"):
        model = DenseModel(in_dim=d, n_classes=3, hidden=(6, 4), activation="tanh")
    else:
        model = CanaryModel(dim=d)
    theta = (torch.randn(2, model.n_params, generator=g, dtype=torch.float64) * 0.3).to(f32)
    G = Model.per_sample_grads(model, theta, X, y) if path != "canary" else -X.expand(2, n, d)
    gn = norms64(G)  # (K, N)
    checked = 0
    for j in (-6, -2, -1, 0, 1, 2, 6, 40):
        for i in range(n):
            C = float(gn[0, i]) * (1 + j * 2.0**-24)
            Xi, yi = X[i:i + 1], y[i:i + 1]
            if path.startswith("linear"):
                gs = LinearOracle(model, Xi, yi, clip_norm=C).clip_sum(theta).grad_sum
            elif path == "torch-func":
                gs = Model.clipped_grad_sum(model, theta, Xi, yi, clip_norm=C).grad_sum
            else:
                gs = model.clipped_grad_sum(theta, Xi, yi, clip_norm=C).grad_sum
            assert gs.dtype == f32
            assert float(norms64(gs[0])) <= C, (path, j, i)
            checked += 1
    assert checked == 8 * n


def test_init_is_seeded_and_device_independent_in_layout():
    model = make_model("mlp", in_dim=3, n_classes=2, hidden=4)
    a = model.init(generators=[torch.Generator().manual_seed(5)])
    b = model.init(generators=[torch.Generator().manual_seed(5)])
    c = model.init(generators=[torch.Generator().manual_seed(6)])
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert model.n_params == 3 * 4 + 4 + 4 + 1
    p = model.unflatten(a)
    assert p["W1"].shape == (1, 4, 3) and p["b2"].shape == (1, 1)
    torch.testing.assert_close(model.flatten(p), a)
    assert torch.count_nonzero(make_model("logistic", in_dim=3).init(generators=[torch.Generator()])) == 0


def test_paper_mlp_size():
    # 60 -> 1000 -> 1 (binary, one logit): 60*1000 + 1000 + 1000 + 1
    assert make_model("mlp", in_dim=60, n_classes=2, hidden=1000).n_params == 62001


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"name": "resnet", "in_dim": 3}, "model must be one of"),
        ({"name": "mlp"}, "in_dim is required"),
        ({"name": "mlp", "in_dim": 3, "activation": "gelu"}, "activation must be"),
        ({"name": "logistic", "in_dim": 3, "n_classes": 1}, "n_classes must be"),
    ],
)
def test_bad_model_arguments(kwargs, match):
    name = kwargs.pop("name")
    with pytest.raises(ValueError, match=match):
        make_model(name, **kwargs)


def test_dense_model_loss_name():
    with pytest.raises(ValueError, match="loss must be"):
        DenseModel(in_dim=2, n_classes=2, loss="hinge")


def test_cnn_sample_chunks_and_batched_runs():
    model = make_model("cnn-mnist", n_classes=10)
    g = torch.Generator().manual_seed(1)
    X = torch.rand(5, 784, generator=g, dtype=DT)
    y = torch.tensor([0, 1, 2, 3, 4])
    theta = model.init(generators=[torch.Generator().manual_seed(s) for s in (0, 1)], dtype=DT)
    full = model.clipped_grad_sum(theta, X, y, clip_norm=0.1)
    model.sample_chunk = 2
    chunked = model.clipped_grad_sum(theta, X, y, clip_norm=0.1)
    torch.testing.assert_close(chunked.grad_sum, full.grad_sum, rtol=1e-12, atol=1e-14)
    one = model.clipped_grad_sum(theta[1:], X, y, clip_norm=0.1)
    torch.testing.assert_close(one.grad_sum[0], full.grad_sum[1], rtol=1e-12, atol=1e-14)


def test_binary_relu_fast_path_equals_generic_ghost_path():
    model = make_model("mlp", in_dim=5, n_classes=2, hidden=9)
    X, y = _data(30, 5, 2, seed=4)
    theta = _theta(model, 3)
    w = (torch.rand(3, 30, generator=torch.Generator().manual_seed(2)) < 0.6).to(DT)
    fast = model.clipped_grad_sum(theta, X, y, clip_norm=1.5, weights=w)
    model.fast_path = False
    generic = model.clipped_grad_sum(theta, X, y, clip_norm=1.5, weights=w)
    for f in ("grad_sum", "norms", "losses"):
        torch.testing.assert_close(getattr(fast, f), getattr(generic, f), rtol=1e-12, atol=1e-13)


def test_forward_in_run_chunks_and_evaluate():
    model = make_model("mlp", in_dim=4, n_classes=3, hidden=6)
    X, y = _data(10, 4, 3)
    theta = _theta(model, 5)
    full = model.forward(theta, X)
    model.chunk_elements = 10 * 6 * 2
    torch.testing.assert_close(model.forward(theta, X), full, rtol=0, atol=1e-14)
    loss, acc = model.evaluate(theta, X, y)
    torch.testing.assert_close(loss, model.loss(theta, X, y))
    torch.testing.assert_close(acc, model.accuracy(theta, X, y))


def _ghost_vs_vmap(model, X, y, clip, K=2):
    from dpcompanion.training.conv_models import FuncModel

    theta = model.init(generators=[torch.Generator().manual_seed(s) for s in range(K)], dtype=DT)
    w = torch.rand(K, X.shape[0], generator=torch.Generator().manual_seed(9), dtype=DT)
    ours = model.clipped_grad_sum(theta, X, y, clip_norm=clip, weights=w)
    G = model.per_sample_grads(theta, X, y)  # torch.func vmap(grad)
    torch.testing.assert_close(ours.norms, G.norm(dim=-1), rtol=1e-10, atol=1e-13)
    ref = FuncModel.clipped_grad_sum(model, theta, X, y, clip_norm=clip, weights=w)
    torch.testing.assert_close(ours.grad_sum, ref.grad_sum, rtol=1e-10, atol=1e-13)
    torch.testing.assert_close(ours.losses, ref.losses, rtol=1e-12, atol=1e-13)
    return theta


@pytest.mark.parametrize("name", ["cnn-mnist", "cnn-cifar"])
def test_cnn_ghost_clipping_equals_torch_func_per_sample_grads(name):
    from dpcompanion.training.conv_models import GhostConvModel

    model = make_model(name, n_classes=10)
    assert isinstance(model, GhostConvModel)
    g = torch.Generator().manual_seed(3)
    X = torch.rand(6, math.prod(model.in_shape), generator=g, dtype=DT)
    y = torch.tensor([0, 9, 3, 3, 5, 1])
    _ghost_vs_vmap(model, X, y, clip=0.05)


@pytest.mark.parametrize("conv_i, in_shape", [(0, (1, 28, 28)), (1, (16, 13, 13))])
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_cnn_ghost_and_formed_branches_give_the_same_norms_and_sums(conv_i, in_shape, layout, monkeypatch):
    """Both branches of a conv layer (the ghost norm, the formed per-sample gradients), forced
    in turn, give the per-sample squared norms and the clipped weight/bias sums of the
    einsum reference, for NCHW and channels-last inputs and backprops alike."""
    from dpcompanion.training.conv_models import GhostConvModel

    model = make_model("cnn-mnist", n_classes=10)
    conv = [m for m in model.module.children() if isinstance(m, torch.nn.Conv2d)][conv_i].to(DT)
    g = torch.Generator().manual_seed(4)
    a = torch.rand(3, *in_shape, generator=g, dtype=DT)
    grad_out = torch.randn(conv(a).shape, generator=g, dtype=DT)
    if layout == "channels_last":
        a, grad_out = (t.contiguous(memory_format=torch.channels_last) for t in (a, grad_out))
    A = F.unfold(a, conv.kernel_size, padding=conv.padding, stride=conv.stride)
    G = grad_out.reshape(3, conv.out_channels, -1)
    psg = torch.einsum("nol,ndl->nod", G, A)
    per = psg.square().sum((1, 2)) + G.sum(-1).square().sum(-1)
    c = torch.rand(3, generator=g, dtype=DT)
    ref = [torch.einsum("n,nod->od", c, psg).reshape(-1), G.sum(-1).t() @ c]
    for force in (True, False):
        monkeypatch.setattr(GhostConvModel, "force_ghost", force)
        torch.testing.assert_close(GhostConvModel._layer_norms_and_sum(model, conv, a, grad_out), per,
                                   rtol=1e-12, atol=1e-12)
        got = GhostConvModel._layer_norms_and_sum(model, conv, a, grad_out, c)
        for x, r in zip(got, ref):
            torch.testing.assert_close(x, r, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("conv_kw", [dict(padding=1, padding_mode="reflect"), dict(padding=1, dilation=1, stride=2),
                                     dict(padding=(2, 1), dilation=2)])
def test_ghostconv_other_conv_settings_equal_torch_func(conv_kw):
    """A conv with reflect padding (taken by the torch.func path), a strided and a dilated
    conv (by the patches): the same norms and clipped sums as torch.func."""
    from dpcompanion.training.conv_models import GhostConvModel

    def net():
        return torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, **conv_kw), torch.nn.Tanh(), torch.nn.Flatten(),
                                   torch.nn.LazyLinear(4))

    probe = net()
    probe(torch.zeros(1, 2, 7, 6))
    n_flat = probe[3].in_features

    def factory():
        return torch.nn.Sequential(*list(net())[:3], torch.nn.Linear(n_flat, 4))

    model = GhostConvModel(factory, in_shape=(2, 7, 6), n_classes=4, name="probe")
    g = torch.Generator().manual_seed(6)
    X = torch.rand(5, 84, generator=g, dtype=DT)
    y = torch.tensor([0, 3, 1, 2, 1])
    _ghost_vs_vmap(model, X, y, clip=0.05)


def test_conv_branch_rule_by_counted_cost():
    """The W-F4 network's convs form their per-sample gradients (many positions L for
    their size); a conv with one output position and a wide weight takes the ghost norm."""
    from dpcompanion.training.conv_models import _conv_ghost

    assert not _conv_ghost(196, 64, 16) and not _conv_ghost(25, 256, 32)
    assert _conv_ghost(1, 4608, 512) and _conv_ghost(4, 2304, 256)


def test_cnn_ghost_clipping_equals_opacus_clipped_sum():
    """Opacus's per-sample clipping (hooks mode, float64) on the same module, batch and
    clip gives the same per-sample norms and clipped gradient sum (loss reduction "sum")."""
    opacus = pytest.importorskip("opacus")
    from opacus.grad_sample import GradSampleModule
    from opacus.optimizers import DPOptimizer

    model = make_model("cnn-mnist", n_classes=10)
    theta = model.init(generators=[torch.Generator().manual_seed(0)], dtype=DT)
    g = torch.Generator().manual_seed(5)
    N, C = 8, 0.1
    X = torch.rand(N, 784, generator=g, dtype=DT)
    y = torch.randint(0, 10, (N,), generator=g)
    ours = model.clipped_grad_sum(theta, X, y, clip_norm=C)
    net = GradSampleModule(model.to_module(theta[0]), loss_reduction="sum")
    opt = DPOptimizer(torch.optim.SGD(net.parameters(), lr=0.0), noise_multiplier=0.0, max_grad_norm=C,
                      expected_batch_size=N, loss_reduction="sum")
    opt.zero_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the input needs no gradient
        F.cross_entropy(net(X.reshape(N, 1, 28, 28)), y, reduction="sum").backward()
    opt.pre_step()
    ref = torch.cat([p.grad.reshape(-1) for p in net.parameters()])
    gs = torch.cat([p.grad_sample.reshape(N, -1) for p in net.parameters()], dim=1)  # Opacus's per-sample grads
    torch.testing.assert_close(ours.norms[0], gs.norm(dim=1), rtol=1e-10, atol=1e-13)
    torch.testing.assert_close(ours.grad_sum[0], clip_factors(gs.norm(dim=1), C, dtype=DT) @ gs, rtol=1e-10, atol=1e-13)
    # Opacus's factor is C / (||g|| + 1e-6): relative differences of order 1e-6 / ||g||
    assert opacus is not None and ours.norms.min() > 0.1
    torch.testing.assert_close(ours.grad_sum[0], ref, rtol=1e-4, atol=1e-9)


@pytest.mark.parametrize("kw", [dict(kernel_size=8, stride=2, padding=3), dict(kernel_size=4, stride=2),
                                dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0)),
                                dict(kernel_size=3, dilation=2, padding=1)])
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_conv_patches_equal_torch_unfold(kw, layout):
    """:func:`_patches` is ``F.unfold`` transposed, its patch axis ordered (k_h, k_w, C_in)."""
    from dpcompanion.training.conv_models import _patches

    conv = torch.nn.Conv2d(3, 4, **kw)
    a = torch.rand(2, 3, 11, 12, generator=torch.Generator().manual_seed(0), dtype=DT)
    ref = F.unfold(a, conv.kernel_size, dilation=conv.dilation, padding=conv.padding, stride=conv.stride)
    kh, kw_ = conv.kernel_size
    ref = ref.reshape(2, 3, kh, kw_, -1).permute(0, 4, 2, 3, 1).reshape(2, ref.shape[-1], -1)
    if layout == "channels_last":
        a = a.contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(_patches(a, conv), ref, rtol=0, atol=0)
