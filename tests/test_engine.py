"""The training engine stage by stage (charge, sample, private step, record), the margin fast
path against materialised per-sample gradients, chunking under a memory budget, and
property tests: no step without its noise, the ledger never lets R_spent exceed R."""

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompanion.theory import schedules
from dpcompanion.theory.budget import Budget, PrivacyLedger
from dpcompanion.training.model_base import Model
from dpcompanion.training.models import make_model
from dpcompanion.training.trainers import TrainConfig, engine, train_pgd, train_psgd
from dpcompanion.training.trainers.config import check_sigma, sigma_floor
from dpcompanion.training.trainers.engine import Charger, NoiseSource, Recorder, noise_seed, plan_chunks, private_step
from dpcompanion.training.trainers.oracles import GeneralOracle, LinearOracle, StepGrad, make_oracle

DT = torch.float64
CPU = dict(device="cpu", dtype=DT, progress=False)


def _data(n=40, d=3, seed=0, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=DT) * scale
    y = torch.randint(0, 2, (n,), generator=g)
    return X, y


# ------------------------------------------------------------ fast path == general path


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("clip_norm", [0.3, 1e4])  # clipping active for most samples / never
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_fast_path_equals_materialised_per_sample_gradients(loss, clip_norm, weighted, bias):
    model = make_model("linear" if loss == "squared" else "logistic", in_dim=3, bias=bias)
    X, y = _data()
    K = 5
    theta = torch.randn(K, model.n_params, generator=torch.Generator().manual_seed(1), dtype=DT)
    w = (torch.rand(K, len(y), generator=torch.Generator().manual_seed(2), dtype=DT) < 0.5).to(DT) if weighted else None
    fast = LinearOracle(model, X, y, clip_norm=clip_norm).clip_sum(theta, w)
    # reference: the base-class torch.func path, per-sample gradients (K, N, P) materialised
    ref = Model.clipped_grad_sum(model, theta, X, y, clip_norm=clip_norm, weights=w)
    torch.testing.assert_close(fast.grad_sum, ref.grad_sum, rtol=1e-12, atol=1e-12)
    G = model.per_sample_grads(theta, X, y)
    exceed = (G.norm(dim=-1) > clip_norm).to(DT)
    if w is None:
        torch.testing.assert_close(fast.clip_fraction, exceed.mean(-1), rtol=0, atol=0)
        torch.testing.assert_close(fast.loss, ref.losses.mean(-1), rtol=1e-13, atol=1e-13)
    else:
        cnt = w.sum(-1).clamp_min(1)
        torch.testing.assert_close(fast.clip_fraction, (exceed * w).sum(-1) / cnt, rtol=1e-15, atol=0)
        torch.testing.assert_close(fast.loss, (ref.losses * w).sum(-1) / cnt, rtol=1e-13, atol=1e-13)
    if clip_norm > 1e3:
        assert float(exceed.max()) == 0.0
    else:
        assert float(exceed.mean()) > 0.5
    loss_f, acc_f = LinearOracle(model, X, y, clip_norm=clip_norm).evaluate(theta)
    loss_g, acc_g = model.evaluate(theta, X, y)
    torch.testing.assert_close(loss_f, loss_g, rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(acc_f, acc_g, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["linear", "logistic"])
def test_trainer_fast_path_equals_general_path(name):
    model = make_model(name, in_dim=3)
    X, y = _data(n=30)
    sig = schedules.gd_dynamic(T=12, R=0.8, kappa=5.0)
    kw = dict(sigma=sig, R=0.8, clip_norm=0.7, lr=0.2, seed=[3, 4, 3], momentum=0.5, **CPU)
    a = train_pgd(model, X, y, **kw)
    b = train_pgd(model, X, y, fast=False, **kw)
    assert a.meta["fast_path"] and not b.meta["fast_path"]
    torch.testing.assert_close(a.theta, b.theta, rtol=1e-11, atol=1e-12)
    for f in ("loss", "grad_norm", "clip_fraction", "budget_spent"):
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=1e-11, atol=1e-12, err_msg=f)
    sig = np.full(6, 3.0)  # one sigma value: the RDP check of PSGD is computed once
    c = train_psgd(model, X, y, sigma=sig, R=0.8, sampling_rate=0.5, delta=1e-5, clip_norm=0.7, lr=0.2,
                   seed=[3, 4], **CPU)
    d = train_psgd(model, X, y, sigma=sig, R=0.8, sampling_rate=0.5, delta=1e-5, clip_norm=0.7, lr=0.2,
                   seed=[3, 4], fast=False, **CPU)
    torch.testing.assert_close(c.theta, d.theta, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(c.loss, d.loss, rtol=1e-11, atol=1e-12)


def test_fast_true_on_an_mlp_is_refused():
    with pytest.raises(ValueError, match="fast=True needs"):
        train_pgd(make_model("mlp", in_dim=3, hidden=4), *_data(), sigma=[2.0], R=None, fast=True, **CPU)


# --------------------------------------------------------------------------- chunking


@pytest.mark.parametrize("name,dtype", [("logistic", torch.float32), ("linear", torch.float64), ("mlp", torch.float64)])
def test_chunked_runs_equal_one_call(name, dtype):
    """A memory budget small enough to split 1300 runs into chunks gives the numbers of one call."""
    model = make_model(name, in_dim=3, hidden=5) if name == "mlp" else make_model(name, in_dim=3)
    X, y = _data(n=37)
    K, T = 1300, 4
    rng = np.random.default_rng(0)
    sig = rng.uniform(0.5, 3.0, size=(K, T))
    seeds = [int(s) for s in rng.integers(0, 50, size=K)]  # shared seeds too
    kw = dict(sigma=sig, R=None, clip_norm=1.0, lr=0.3, seed=seeds, device="cpu", dtype=dtype, progress=False)
    one = train_pgd(model, X, y, **kw)
    many = train_pgd(model, X, y, memory_budget=2**20, **kw)
    assert one.meta["chunks"] == 1 and many.meta["chunks"] > 1
    if name == "mlp":  # general path: the BLAS blocks a batch by its size, so equal to rounding
        torch.testing.assert_close(one.theta, many.theta, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(one.loss, many.loss, rtol=1e-12)
        np.testing.assert_array_equal(one.sigma, many.sigma)
        return
    assert torch.equal(one.theta, many.theta)  # fast path: bit for bit
    for f in ("loss", "grad_norm", "clip_fraction", "sigma", "lr", "budget_spent"):
        np.testing.assert_array_equal(getattr(one, f), getattr(many, f), err_msg=f)
    np.testing.assert_array_equal(one.final_loss, many.final_loss)
    # and on the fast path a run does not depend on its neighbours: run k alone equals row k
    # bit for bit (the general path agrees to rounding: its BLAS calls differ with the batch)
    for k in (0, 7, 1299):
        alone = train_pgd(model, X, y, **(kw | {"sigma": sig[k], "seed": seeds[k]}))
        if name == "mlp":
            torch.testing.assert_close(alone.theta, one.theta[k], rtol=1e-12, atol=1e-14)
        else:
            assert torch.equal(alone.theta, one.theta[k]), k


def test_memory_budget_bounds_the_chunks_and_refuses_when_nothing_fits():
    assert plan_chunks(10, bytes_per_run=100, budget=450) == [(0, 4), (4, 8), (8, 10)]
    assert plan_chunks(10, bytes_per_run=100, budget=10_000, fixed=50, max_runs=3)[0] == (0, 3)
    with pytest.raises(ValueError, match="memory_budget must be at least"):
        plan_chunks(5, bytes_per_run=100, budget=120, fixed=50)
    model = make_model("logistic", in_dim=3)
    X, y = _data(n=20)
    h = train_pgd(model, X, y, sigma=np.full((3000, 2), 2.0), R=None, seed=list(range(3000)),
                  memory_budget=2**20, record=("clip_fraction",), **CPU)
    assert h.meta["chunks"] > 1 and h.loss is None and h.clip_fraction.shape == (3000, 2)


# ------------------------------------------------------------------------- the stages


def test_charge_stage_one_ledger_per_schedule_and_stop_before_overspending():
    sig = np.array([[2.0, 2.0, 2.0], [2.0, 2.0, 2.0], [1.0, 1.0, 1.0]])
    ch = Charger(sig, budget=Budget.from_R(R=0.6), sampling_rate=1.0)
    assert ch.n_ledgers == 2 and all(isinstance(led, PrivacyLedger) and led.R == 0.6 for led in ch.ledgers)
    a1 = ch.charge(0)
    assert list(a1) == [True, True, False]  # 1/1^2 = 1 > 0.6: refused before the step
    np.testing.assert_array_equal(ch.spent, [0.25, 0.25, 0.0])
    a2 = ch.charge(1)
    a3 = ch.charge(2)
    assert list(a2) == [True, True, False] and list(a3) == [False, False, False]
    np.testing.assert_array_equal(ch.spent, [0.5, 0.5, 0.0])
    free = Charger(sig, budget=None, sampling_rate=1.0)
    for t in range(3):
        assert free.charge(t).all()
    np.testing.assert_array_equal(free.spent, [0.75, 0.75, 3.0])


def test_block_steps_depends_on_the_problem_only():
    assert engine.block_steps(61) == engine.NOISE_BLOCK_ELEMENTS // 61
    assert engine.block_steps(10**6) == 1 and engine.block_steps(61, 10**6) == 1
    # a run's stream is fixed by (seed, P, N_mask, T): the block never depends on K or the budget
    assert NoiseSource([0], device="cpu", dtype=DT, P=61, T=10).B == 10
    assert NoiseSource(list(range(50)), device="cpu", dtype=DT, P=61, T=1000).B == engine.block_steps(61)


@pytest.mark.parametrize("P,T", [(5, 7), (9000, 4)])  # several steps per block (last one partial); one step per block
def test_noise_source_shares_streams_by_seed_and_skips_stopped_runs(P, T):
    """Reference written from the documented stream: per block of b = min(B, T - t0) steps,
    one randn(b, P) from the seed's generator; rows of stopped runs are 0."""
    seeds = [4, 9, 4, 1]
    src = NoiseSource(seeds, device="cpu", dtype=DT, P=P, T=T)
    B = min(T, engine.block_steps(P))
    assert len(src.gens) == 3 and not src.identity and src.B == B
    assert (B > 1) == (P == 5)
    refs = {s: torch.Generator().manual_seed(noise_seed(s)) for s in set(seeds)}
    stop_at = {0: T, 1: T, 2: 1, 3: B + 1 if B + 1 < T else 2}  # run 3 stops inside the 2nd block
    blocks: dict[int, torch.Tensor] = {}
    out = torch.empty(4, P, dtype=DT)
    for step in range(T):
        active = np.array([step < stop_at[k] for k in range(4)])
        src.draw(step, active, out)
        if step % B == 0:
            live = {seeds[k] for k in range(4) if active[k]}
            b = min(B, T - step)
            blocks = {s: torch.randn(b, P, generator=refs[s], dtype=DT) for s in sorted(live)}
        for k, s in enumerate(seeds):
            if active[k]:
                assert torch.equal(out[k], blocks[s][step % B]), (step, k)
            else:
                assert not out[k].any()
    ident = NoiseSource([0, 1], device="cpu", dtype=DT, P=3, T=2)
    assert ident.identity


def test_noise_source_numbers_do_not_depend_on_the_batch():
    """Run 7's noise is the same trained alone or beside other runs, with any seed sharing."""
    alone = NoiseSource([7], device="cpu", dtype=DT, P=9, T=6)
    crowd = NoiseSource([3, 7, 3, 11], device="cpu", dtype=DT, P=9, T=6)
    a, c = torch.empty(1, 9, dtype=DT), torch.empty(4, 9, dtype=DT)
    for t in range(6):
        alone.draw(t, np.array([True]), a)
        crowd.draw(t, np.array([True, True, t < 2, t < 4]), c)
        assert torch.equal(a[0], c[1])


def test_noise_source_refuses_steps_out_of_order():
    src = NoiseSource([0], device="cpu", dtype=DT, P=3, T=10)
    out = torch.empty(1, 3, dtype=DT)
    src.draw(0, np.array([True]), out)
    with pytest.raises(RuntimeError, match="in order"):
        src.draw(src.B + 1, np.array([True]), out)


def test_sample_stage_is_a_poisson_mask_per_run():
    """Per block: the b masks' uniforms (rand(b, N)), then the b noise vectors (randn(b, P))."""
    N, P, T = 1000, 3, 5
    src = NoiseSource([2, 3], device="cpu", dtype=DT, P=P, T=T, N=N, sampling_rate=0.3)
    B = min(T, engine.block_steps(P, N))
    assert B == T
    ref = torch.Generator().manual_seed(noise_seed(2))
    masks = (torch.rand(B, N, generator=ref, dtype=DT) < 0.3).to(DT)
    noise = torch.randn(B, P, generator=ref, dtype=DT)
    out = torch.empty(2, P, dtype=DT)
    for t in range(T):
        w = engine.sample(src, t, np.array([True, t < 1]))
        src.draw(t, np.array([True, t < 1]), out)
        assert torch.equal(w[0], masks[t]) and torch.equal(out[0], noise[t])
        assert (t < 1) == bool(w[1].any())
    full = NoiseSource([2], device="cpu", dtype=DT, P=P, T=T)
    assert engine.sample(full, 0, np.array([True])) is None


class _StubOracle:
    fast = False

    def __init__(self, g):
        self.g = g

    def clip_sum(self, theta, weights=None, *, need_loss=True, need_clip=True):
        return StepGrad(self.g.clone(), None, None)


def test_private_step_adds_the_noise_scales_and_updates():
    g = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=DT)
    theta = torch.zeros(2, 2, dtype=DT)
    noise = torch.tensor([[0.5, -0.5], [1.0, 2.0]], dtype=DT)
    sig = torch.tensor([2.0, 3.0], dtype=DT)
    std = engine.noise_std(clip_norm=1.5, sigma=sig, dtype=DT)
    th, _, gn, _ = private_step(_StubOracle(g), theta, weights=None, noise=noise.clone(), std_t=std,
                                lr_t=torch.tensor([0.1, 0.2], dtype=DT), active=torch.tensor([True, False]),
                                clip_norm=1.5, denominator=4.0)
    expect0 = -0.1 * (g[0] + 1.5 * 2.0 * noise[0]) / 4.0
    torch.testing.assert_close(th[0], expect0, rtol=1e-15, atol=0)
    assert not th[1].any()  # a stopped run stays put
    torch.testing.assert_close(gn, g.norm(dim=-1) / 4.0)
    for bad in (math.inf, 0.0, math.nan):  # the scales are checked once for the whole schedule, here
        with pytest.raises(RuntimeError, match="invariant"):
            engine.noise_std(clip_norm=1.5, sigma=torch.tensor([[2.0, 2.0], [3.0, bad]], dtype=DT), dtype=DT)


def test_record_stage_keeps_only_what_was_asked():
    r = Recorder(("loss", "sigma"), K=3, T=2)
    r.write(0, np.array([True, False, True]), loss=torch.tensor([1.0, 2.0, 3.0]), sigma=np.array([4.0, 5.0, 6.0]),
            grad_norm=torch.ones(3))
    a = r.arrays()
    assert a["grad_norm"] is None and a["clip_fraction"] is None
    np.testing.assert_array_equal(a["loss"][:, 0], [1.0, np.nan, 3.0])
    assert np.isnan(a["sigma"][:, 1]).all() and np.isnan(a["loss"][:, 1]).all()  # a step never written
    assert a["loss"].dtype == np.float64 and a["loss"].shape == (3, 2)


def test_sigma_floor_and_check():
    assert sigma_floor(clip_norm=1.0, denominator=1.0, dtype=torch.float32) == pytest.approx(torch.finfo(torch.float32).tiny)
    check_sigma(np.array([[1e-30]]), clip_norm=1.0, denominator=10.0, dtype=torch.float32)  # above the floor
    with pytest.raises(ValueError, match="sigma must be >="):
        check_sigma(np.array([[1e-37]]), clip_norm=1.0, denominator=1000.0, dtype=torch.float32)
    with pytest.raises(ValueError, match="no noiseless step"):
        check_sigma(np.array([[1.0, np.inf]]), clip_norm=1.0, denominator=1.0, dtype=DT)


def test_train_config_is_frozen():
    cfg = TrainConfig.build(sigma=[1.0, 2.0], R=1.0, lr=0.1, clip_norm=1.0, seed=0, device="cpu")
    with pytest.raises(Exception):
        cfg.R = 2.0
    with pytest.raises(ValueError):
        cfg.sigma[0, 0] = 5.0
    assert cfg.K == 1 and cfg.T == 2 and cfg.single


# --------------------------------------------------------------------- property tests

SPECIAL = [math.inf, -math.inf, math.nan, 0.0, -1.0, 5e-324, 1e-310, 1e-200]


@st.composite
def sigma_arrays(draw):
    K = draw(st.integers(1, 3))
    T = draw(st.integers(1, 6))
    vals = draw(st.lists(st.sampled_from([0.4, 0.9, 1.7, 3.0, 6.0]), min_size=K * T, max_size=K * T))
    sig = np.array(vals).reshape(K, T)
    if draw(st.booleans()):  # poison one entry
        sig[draw(st.integers(0, K - 1)), draw(st.integers(0, T - 1))] = draw(st.sampled_from(SPECIAL))
    return sig


class _Spy:
    """Wraps engine.add_noise: records, per call, which runs' gradients the noise moved."""

    def __init__(self, mp):
        self.moved = []
        orig = engine.add_noise

        def spy(grad_sum, *, std, noise=None, **kw):
            before = grad_sum.clone()
            out = orig(grad_sum, std=std, noise=noise, **kw)
            assert torch.all(torch.isfinite(std) & (std > 0))
            self.moved.append((out != before).any(dim=-1).numpy().copy())
            return out

        mp.setattr(engine, "add_noise", spy)


@settings(max_examples=30)
@given(sig=sigma_arrays(), R=st.floats(0.05, 4.0), p=st.sampled_from([1.0, 1.0, 1.0, 0.5]),
       name=st.sampled_from(["logistic", "linear", "mlp"]))
def test_property_no_step_without_noise_and_no_overspending(sig, R, p, name):
    with pytest.MonkeyPatch.context() as mp:
        spy = _Spy(mp)
        model = make_model(name, in_dim=2, hidden=3) if name == "mlp" else make_model(name, in_dim=2)
        X, y = _data(n=12, d=2)
        fn = train_pgd if p == 1.0 else train_psgd
        kw = {} if p == 1.0 else {"sampling_rate": p, "delta": 1e-5}
        valid = bool(np.all(np.isfinite(sig) & (sig > 1e-150)))
        if not valid:
            with pytest.raises(ValueError, match="sigma must"):
                fn(model, X, y, sigma=sig, R=R, seed=list(range(sig.shape[0])), **kw, **CPU)
            assert spy.moved == []  # refused before any step
            return
        h = fn(model, X, y, sigma=sig, R=R, seed=list(range(sig.shape[0])), **kw, **CPU)
        # the ledger never lets R_spent exceed R, as printed in JSON
        printed = json.loads(json.dumps(h.to_dict()))
        assert all(s <= R for s in printed["R_spent"]), (printed["R_spent"], R)
        # every step a run took went through the noise, and the noise moved its gradient
        assert len(spy.moved) == int(np.max(h.steps_done))
        for t, moved in enumerate(spy.moved):
            assert moved[h.steps_done > t].all(), t
        assert np.all(h.steps_done[~h.stopped_early] == sig.shape[1])


@settings(max_examples=40)
@given(kind=st.sampled_from(["uniform", "gd-dynamic", "exp"]), T=st.integers(1, 40), R=st.floats(0.01, 50.0))
def test_property_budget_exact_schedules_finish_within_R(kind, T, R):
    """A budget-exact schedule (sum 1/sigma^2 = R up to rounding) runs all its steps and the
    spent budget, as printed in JSON, is never above R."""
    params = {"gd-dynamic": {"kappa": 7.0}, "exp": {"rate": 0.05}}.get(kind, {})
    sig = schedules.make(kind, T=T, R=R, **params)
    model = make_model("logistic", in_dim=2)
    X, y = _data(n=8, d=2)
    h = train_pgd(model, X, y, sigma=sig, R=R, seed=0, record=("sigma",), **CPU)
    assert json.loads(json.dumps(h.to_dict()))["R_spent"] <= R
    assert h.steps_done == T or h.R_spent + 1 / sig[h.steps_done] ** 2 > R


def test_seeded_generators_are_made_on_reading_and_zero_init_reads_none():
    from dpcompanion.training.models import make_model
    from dpcompanion.training.trainers.engine import SeededGenerators

    gens = SeededGenerators([3, 5])
    assert len(gens) == 2
    assert torch.equal(torch.rand(4, generator=gens[1]), torch.rand(4, generator=torch.Generator().manual_seed(5)))
    assert [torch.rand(1, generator=g).item() for g in gens] == [torch.rand(1, generator=gens[k]).item() for k in (0, 1)]

    class Untouchable(SeededGenerators):
        def __getitem__(self, k):
            raise AssertionError("a zero initial point must not draw")

    th = make_model("logistic", in_dim=3).init(generators=Untouchable([1, 2, 3]), dtype=DT)
    assert th.shape == (3, 4) and th.dtype == DT and not th.any()
    mlp = make_model("mlp", in_dim=3, n_classes=2, hidden=4)
    a = mlp.init(generators=SeededGenerators([7, 8]), dtype=DT)
    b = mlp.init(generators=[torch.Generator().manual_seed(s) for s in (7, 8)], dtype=DT)
    assert torch.equal(a, b)


# ------------------------------------------------------------ the final evaluation is optional


@pytest.mark.parametrize("name,sampling_rate", [("mlp", 1.0), ("logistic", 0.5), ("cnn-mnist", 0.5)])
def test_final_eval_false_skips_only_the_training_set_evaluation(name, sampling_rate):
    """W's segmented trainer evaluates on its own data: ``final_eval=False`` saves the pass over
    the training set and changes nothing else, not a bit of theta nor of a recorded step."""
    if name == "cnn-mnist":
        g = torch.Generator().manual_seed(3)
        X, y = torch.rand(24, 784, generator=g, dtype=torch.float32), torch.randint(0, 10, (24,), generator=g)
        model, dt = make_model(name, n_classes=10), torch.float32
    else:
        X, y = _data()
        model, dt = make_model(name, in_dim=3, hidden=4), DT
    kw = dict(sigma=[2.0] * 4, lr=0.1, clip_norm=1.0, seed=[5, 6], sampling_rate=sampling_rate, N=len(y),
              device="cpu", dtype=dt, progress=False)
    a = engine.train(model, X, y, TrainConfig.build(**kw))
    b = engine.train(model, X, y, TrainConfig.build(**kw, final_eval=False))
    assert torch.equal(a.theta, b.theta)
    for f in ("loss", "clip_fraction", "sigma", "lr", "steps_done"):
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f
    assert a.final_loss is not None and a.train_accuracy is not None
    assert b.final_loss is None and b.train_accuracy is None and b.meta["final_eval"] is False
    assert b.run(1).final_loss is None  # a single run of it too
    with pytest.raises(ValueError, match="final_eval must be True or False, got 'no'"):
        TrainConfig.build(**kw, final_eval="no")


# ------------------------------------------------------------ the evaluation hook


def _hooked(calls):
    def on_eval(step, theta, runs):
        calls.append((step, theta, runs))
    return on_eval


@pytest.mark.parametrize("name,sampling_rate", [("logistic", 0.5), ("mlp", 0.5), ("mlp", 1.0)])
def test_eval_hook_sees_the_current_theta_and_segment_noise_equals_one_call_per_segment(name, sampling_rate):
    """``on_eval`` is called after every ``eval_every`` steps and after the last step
    (4, 8, 10 here) with the parameters of that moment; with ``segment_noise`` one call equals
    training segment by segment, one call per segment seeded ``segment_seed(seed, j)`` from
    the last one's parameters (how Wu's protocol was trained before the hook), bit for bit."""
    X, y = _data()
    model = make_model(name, in_dim=3, hidden=4)
    sig = np.array([[1.5] * 10, np.linspace(1.0, 3.0, 10)])
    lr = np.linspace(0.5, 0.1, 10)
    kw = dict(lr=lr, clip_norm=1.0, sampling_rate=sampling_rate, N=len(y), **CPU)
    calls = []
    h = engine.train(model, X, y, TrainConfig.build(sigma=sig, seed=[3, 4], eval_every=4, on_eval=_hooked(calls),
                                                     segment_noise=True, **kw))
    assert [c[0] for c in calls] == engine.eval_points(10, 4) == [4, 8, 10]
    assert all(c[2] == range(0, 2) for c in calls)
    assert torch.equal(calls[-1][1], h.theta) and calls[-1][1] is not h.theta  # a copy
    theta = model.init(generators=[torch.Generator().manual_seed(s) for s in (3, 4)], dtype=DT)
    for j, (t0, (step, seen, _)) in enumerate(zip([0, 4, 8], calls)):
        part = engine.train(model, X, y, TrainConfig.build(
            sigma=sig[:, t0:step], seed=[engine.segment_seed(s, j) for s in (3, 4)], **dict(kw, lr=lr[t0:step])),
            init=theta)
        theta = part.theta
        assert torch.equal(seen, theta), step
    assert not torch.equal(calls[0][1], calls[1][1])  # the check can fail: theta moves


def test_eval_hook_runs_on_after_every_run_stopped_and_refused_steps_do_not_move_theta():
    """Once every ledger has refused, the remaining evaluation points are still
    reported, with the parameters of the last step taken; the refused steps move nothing."""
    X, y = _data()
    model = make_model("mlp", in_dim=3, hidden=4)
    calls = []
    cfg = TrainConfig.build(sigma=[2.0] * 9, R=1.0, lr=0.3, clip_norm=1.0, seed=[1, 2], eval_every=2,
                            on_eval=_hooked(calls), **CPU)  # R = 1 affords 4 steps at sigma = 2
    h = engine.train(model, X, y, cfg)
    assert [c[0] for c in calls] == [2, 4, 6, 8, 9]
    assert list(h.steps_done) == [4, 4] and h.stopped_early.all() and float(h.R_spent.max()) <= 1.0
    assert not torch.equal(calls[0][1], calls[1][1])
    assert all(torch.equal(c[1], h.theta) for c in calls[1:])


@pytest.mark.parametrize("name", ["mlp", "logistic"])
def test_hold_keeps_a_refused_run_in_the_batch_so_the_others_do_not_change(name):
    """Wu's protocol: with ``on_refusal="hold"`` a run whose ledger refuses stops
    moving (its theta stays at the last step taken, its epsilon within its target) but keeps
    drawing its masks and noise, so the run beside it gets the same numbers bit for bit whether
    or not its neighbour was refused (the general path gathers the rows any run sampled)."""
    from dpcompanion.theory.budget import EpsilonTarget

    X, y = _data(n=60)
    model = make_model(name, in_dim=3, hidden=4)
    sig = np.full((2, 12), 1.2)
    led = PrivacyLedger.from_budget(EpsilonTarget(epsilon=1e9, delta=1e-5))
    spent = [led.charge(sigma=1.2, sampling_rate=0.3) and led.spent_epsilon() for _ in range(12)]
    big = EpsilonTarget(epsilon=spent[-1] * 2, delta=1e-5)
    small = EpsilonTarget(epsilon=(spent[6] + spent[7]) / 2, delta=1e-5)  # affords 7 steps
    out = {}
    for label, budget in (("free", (big, big)), ("refused", (big, small))):
        calls = []
        out[label] = engine.train(model, X, y, TrainConfig.build(
            sigma=sig, budget=budget, seed=[1, 2], lr=0.5, clip_norm=1.0, sampling_rate=0.3, N=len(y),
            eval_every=1, on_eval=_hooked(calls), on_refusal="hold", **CPU)), calls
    h, calls = out["refused"]
    n = int(h.steps_done[1])
    assert h.stopped_early.tolist() == [False, True] and n == 7 and h.epsilon[1] <= small.epsilon
    assert torch.equal(h.theta[0], out["free"][0].theta[0])
    assert all(torch.equal(c[1][1], h.theta[1]) for c in calls[n - 1:])  # refused steps move nothing
    assert not torch.equal(calls[n - 2][1][1], h.theta[1])
    assert np.isnan(h.lr[1, n:]).all() and not np.isnan(h.lr[0]).any()


def test_per_run_budgets_one_ledger_per_schedule_and_budget():
    """Runs are charged through one ledger per distinct (schedule row, budget)."""
    from dpcompanion.theory.budget import EpsilonTarget

    sig = np.array([[2.0, 2.0], [2.0, 2.0], [1.0, 1.0], [2.0, 2.0]])
    a, b = EpsilonTarget(epsilon=5.0, delta=1e-5), EpsilonTarget(epsilon=6.0, delta=1e-5)
    ch = Charger(sig, budget=(a, a, a, b), sampling_rate=0.5)
    assert ch.n_ledgers == 3 and list(ch.group_of) in ([0, 0, 1, 2], [1, 1, 0, 2], [0, 0, 2, 1], [1, 1, 2, 0],
                                                       [2, 2, 0, 1], [2, 2, 1, 0])
    assert ch.group_of[0] == ch.group_of[1] != ch.group_of[3] != ch.group_of[2]
    assert ch.charge(0).all() and ch.epsilon()[0] == ch.epsilon()[3] != ch.epsilon()[2]


def test_eval_hook_settings_are_validated():
    """The hook's settings are checked when the config is built."""
    from dpcompanion.theory.budget import EpsilonTarget

    kw = dict(sigma=[2.0] * 3, lr=0.1, clip_norm=1.0, device="cpu")
    for bad, match in [(dict(eval_every=0), "eval_every must be an integer >= 1"),
                       (dict(eval_every=True), "eval_every must be an integer >= 1"),
                       (dict(on_eval=print), "need eval_every"),
                       (dict(segment_noise=True), "need eval_every"),
                       (dict(eval_every=2, on_eval=3), "on_eval must be a callable"),
                       (dict(eval_every=2, segment_noise=True, secure=True), "give one of segment_noise and secure"),
                       (dict(on_refusal="pause"), "on_refusal must be one of stop, hold"),
                       (dict(seed=[1, 2], budget=(EpsilonTarget(epsilon=1.0, delta=1e-5),) * 3),
                        "one budget or one per run"),
                       (dict(budget=Budget.from_R(R=1.0, delta=1e-5, sampling_rate=0.5), sampling_rate=0.4),
                        "sampling_rate must be the budget's")]:
        with pytest.raises(ValueError, match=match):
            TrainConfig.build(**kw, **bad)
