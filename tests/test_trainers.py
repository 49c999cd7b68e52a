"""Private trainers: Algorithm 1 step by step, the ledger, momentum debiasing (hand
derivation), PSGD, ADP-SGD, batched = sequential, reproducibility."""

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from dpcompanion.theory import accounting, schedules
from dpcompanion.theory.accounting import accountant_epsilon
import dpcompanion.training
from dpcompanion.theory.budget import Budget, plan_paper_p2, PrivacyLedger
from dpcompanion.training.models import make_model
from dpcompanion.training.trainers import History, TrainConfig, train_adpsgd, train_pgd, train_psgd
from dpcompanion.training.trainers import engine
from dpcompanion.training.trainers.engine import noise_seed

DT = torch.float64
CPU = dict(device="cpu", dtype=DT, progress=False)


def _toy(n=12, d=3, n_classes=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=DT) * 3
    y = torch.randint(0, n_classes, (n,), generator=g)
    return X, y


# ----------------------------------------------------------------- the named pieces


def test_add_noise_scale_and_refuses_a_noiseless_step():
    """``add_noise`` as the engine calls it (the draws come from the engine, given as
    ``noise``; the scales from ``noise_std``): row k is ``grad_sum_k + C sigma_k v_k``, in place
    when asked."""
    s = torch.arange(8, dtype=DT).reshape(2, 4)
    v = torch.randn(2, 4, generator=torch.Generator().manual_seed(1), dtype=DT)
    want = s + torch.tensor([[2.0 * 3.0], [2.0 * 0.5]], dtype=DT) * v
    std = engine.noise_std(clip_norm=2.0, sigma=torch.tensor([3.0, 0.5], dtype=DT), dtype=DT)
    out = engine.add_noise(s.clone(), std=std, noise=v.clone())
    torch.testing.assert_close(out, want, rtol=0, atol=0)
    s_in = s.clone()
    assert engine.add_noise(s_in, std=std, noise=v.clone(), inplace=True) is s_in
    torch.testing.assert_close(s_in, want, rtol=0, atol=0)
    # the invariant: an infinite, zero, NaN or vanishing (subnormal) scale never reaches the update
    for bad in (math.inf, 0.0, math.nan, -1.0, 1e-320):
        with pytest.raises(RuntimeError, match="invariant"):
            engine.noise_std(clip_norm=1.0, sigma=torch.tensor([3.0, bad], dtype=DT), dtype=DT)


def test_momentum_update_is_eq3():
    # H Eq. (3): m_{t+1} = [beta (1 - beta^{t-1}) m_t + (1 - beta) g_t] / (1 - beta^t)
    beta, gs = 0.7, [torch.tensor([[2.0]]), torch.tensor([[-1.0]]), torch.tensor([[0.5]])]
    v, m_eq3 = torch.zeros(1, 1), torch.zeros(1, 1)
    for t, g in enumerate(gs, start=1):
        v, m = engine.momentum_update(v, g, beta=beta, t=t)
        m_eq3 = (beta * (1 - beta ** (t - 1)) * m_eq3 + (1 - beta) * g) / (1 - beta**t)
        torch.testing.assert_close(m, m_eq3)


def test_momentum_debiasing_hand_derived_three_steps():
    """1-D quadratic: one sample x = 1 with label s = +1, linear model without bias,
    loss (w - 1)^2 / 2, gradient g = w - 1, no clipping (C = 100), eta = 0.1, beta = 0.5,
    w_1 = 2. The step's gradient is g_t + C sigma v_t / N with v_t the run's t-th noise
    draw (N = 1). By hand (v_1 = 0, v_{t+1} = beta v_t + (1-beta) g~_t,
    w_{t+1} = w_t - eta v_{t+1} / (1 - beta^t)); with no noise this would be
      t=1: g = 1, m = 1, w = 1.9;  t=2: g = 0.9, m = 0.933333, w = 1.8066667;
      t=3: g = 0.8066667, m = 0.8609524, w = 1.7205714.
    The trainer has no noiseless step, so the test adds the known noise draws (sigma = 1e-3)."""
    model = make_model("linear", in_dim=1, bias=False)
    X, y = torch.tensor([[1.0]], dtype=DT), torch.tensor([1])
    C, sigma, eta, beta = 100.0, 1e-3, 0.1, 0.5
    h = train_pgd(model, X, y, sigma=np.full(3, sigma), R=None, clip_norm=C, lr=eta, momentum=beta,
                  init=torch.tensor([2.0]), seed=5, **CPU)
    # P = 1, T = 3: the run's three noise numbers are one block, randn(3, 1) (engine.NoiseSource)
    draws = torch.randn(3, 1, generator=torch.Generator().manual_seed(noise_seed(5)), dtype=DT)
    w, v, ws, losses = 2.0, 0.0, [], []
    for t in (1, 2, 3):
        losses.append(0.5 * (w - 1) ** 2)
        g = (w - 1) + C * sigma * float(draws[t - 1, 0])
        v = beta * v + (1 - beta) * g
        w = w - eta * v / (1 - beta**t)
        ws.append(w)
    np.testing.assert_allclose(float(h.theta[0]), ws[-1], rtol=1e-12)
    np.testing.assert_allclose(h.loss, losses, rtol=1e-12)  # the loss at w_1, w_2, w_3
    noiseless = [1.9, 1.8066666666666666, 1.7205714285714286]
    assert abs(ws[-1] - noiseless[-1]) < 0.05  # the noise is small but present
    assert ws[-1] != noiseless[-1]


def test_one_pgd_step_is_algorithm_1():
    """theta_2 = theta_1 - eta (mean_n clip(g_n) + C sigma v / N), v from the run's noise
    generator (H Algorithm 1, Eq. (1) with G = C)."""
    model = make_model("logistic", in_dim=3)
    X, y = _toy()
    C, sigma, eta = 0.8, 2.5, 0.3
    th0 = torch.tensor([0.2, -0.1, 0.4, 0.05], dtype=DT)
    h = train_pgd(model, X, y, sigma=[sigma], R=1.0, clip_norm=C, lr=eta, seed=7, init=th0, **CPU)
    G = model.per_sample_grads(th0[None], X, y)[0]
    clipped = sum(G[n] * min(1.0, C / G[n].norm().item()) for n in range(len(y)))
    v = torch.randn(4, generator=torch.Generator().manual_seed(noise_seed(7)), dtype=DT)
    expect = th0 - eta * (clipped / len(y) + C * sigma * v / len(y))
    torch.testing.assert_close(h.theta, expect, rtol=1e-12, atol=1e-12)
    assert h.R_spent == pytest.approx(1 / sigma**2)
    assert h.grad_norm[0] == pytest.approx(float((clipped / len(y)).norm()))
    assert h.clip_fraction[0] == pytest.approx(float((G.norm(dim=1) > C).double().mean()))


# ---------------------------------------------------------------------- the ledger


def test_forced_sigma_overspending_stops_early():
    model = make_model("logistic", in_dim=3)
    X, y = _toy()
    h = train_pgd(model, X, y, sigma=np.full(10, 3.0), R=0.3927, seed=0, **CPU)
    # each step costs 1/9; three fit in 0.3927, a fourth would not
    assert h.steps_done == 3 and h.stopped_early
    assert h.R_spent == pytest.approx(3 / 9) and h.R_spent <= 0.3927
    assert np.isnan(h.loss[3:]).all() and np.isfinite(h.loss[:3]).all()


def test_engine_tally_counts_runs_and_the_steps_they_took():
    """The results store's run count: runs trained and steps actually taken (a run the
    ledger stops counts its steps so far, not T)."""
    from dpcompanion.training.trainers import engine

    model = make_model("logistic", in_dim=3)
    X, y = _toy()
    before = engine.tally()
    h = train_pgd(model, X, y, sigma=np.array([[3.0] * 10, [30.0] * 10]), R=0.3927, seed=[0, 1], **CPU)
    after = engine.tally()
    assert list(h.steps_done) == [3, 10]
    assert after["runs"] - before["runs"] == 2 and after["run_steps"] - before["run_steps"] == 13


def test_engine_tally_is_per_thread():
    """Units run side by side in one process's threads (a threaded Dask worker) each count
    only their own runs."""
    import threading

    from dpcompanion.training.trainers import engine

    model = make_model("logistic", in_dim=3)
    X, y = _toy()
    counts = {}
    both = threading.Barrier(2)  # both snapshots are taken before, and read after, both trainings

    def unit(k):
        before = engine.tally()
        both.wait()
        train_pgd(model, X, y, sigma=np.full(4, 30.0), R=None, seed=list(range(k)), **CPU)
        both.wait()
        counts[k] = engine.tally()["runs"] - before["runs"]

    threads = [threading.Thread(target=unit, args=(k,)) for k in (3, 5)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert counts == {3: 3, 5: 5}


# sigma from a small set: RDP curves of subsampled steps (~0.1 s each) are cached per value
@given(
    sigma=st.sampled_from([0.3, 0.8, 1.7, 4.0, 20.0]),
    T=st.integers(1, 30),
    R=st.floats(0.01, 5.0),
    p=st.sampled_from([1.0, 0.5]),
)
@pytest.mark.slow
def test_budget_never_exceeded(sigma, T, R, p):
    model = make_model("logistic", in_dim=2)
    X, y = _toy(n=6, d=2)
    delta = 1e-5
    fn = train_pgd if p == 1.0 else train_psgd
    kw = {} if p == 1.0 else {"sampling_rate": p, "delta": delta}
    h = fn(model, X, y, sigma=np.full(T, sigma), R=R, seed=1, **kw, **CPU)
    cost = p * p / sigma**2
    assert h.R_spent <= R * (1 + 1e-12)
    by_rule = min(T, int(np.floor(R / cost * (1 + 1e-12))))
    assert h.R_spent == pytest.approx(h.steps_done * cost)
    if p == 1.0:
        assert h.steps_done == by_rule
    else:  # also within the target epsilon by an independent accountant call (RDP, dp-accounting)
        target = accounting.zcdp_to_dp(rho=R / 2, delta=delta)
        eps = lambda k: accounting.accountant_epsilon(sigma=[sigma] * k, delta=delta, sampling_rate=p)  # noqa: E731
        assert h.steps_done <= by_rule
        assert h.steps_done == 0 or eps(h.steps_done) <= target * (1 + 1e-9)
        assert h.steps_done == by_rule or eps(h.steps_done + 1) > target
    assert h.stopped_early == (h.steps_done < T)


@pytest.mark.parametrize("kind,params", [("uniform", {}), ("gd-dynamic", {"kappa": 5.0}), ("exp", {"rate": 0.05})])
def test_budget_spent_equals_schedule_sum(kind, params):
    model = make_model("logistic", in_dim=3)
    X, y = _toy()
    R = 0.3927
    sig = schedules.make(kind, T=25, R=R, **params)
    h = train_pgd(model, X, y, sigma=sig, R=R, seed=0, **CPU)
    assert h.steps_done == 25 and not h.stopped_early
    np.testing.assert_allclose(h.budget_spent, np.cumsum(1 / sig**2), rtol=1e-12)
    assert h.R_spent == pytest.approx(np.sum(1 / sig**2), rel=1e-12) and h.R_spent == pytest.approx(R, rel=1e-9)
    # the last step may be noised a hair more (<= 1e-12 relative) so that R_spent <= R exactly
    np.testing.assert_allclose(h.sigma, sig, rtol=1e-12)
    assert np.all(h.sigma >= sig) and h.R_spent <= R


# ----------------------------------------------------------- batched = sequential


@pytest.mark.parametrize("algo", ["pgd", "momentum", "psgd"])
def test_batched_equals_sequential(algo):
    model = make_model("mlp", in_dim=3, n_classes=3, hidden=7)
    X, y = _toy(n=15, n_classes=3)
    seeds = [3, 11, 5]
    R = 0.5
    kw = {"momentum": 0.9} if algo == "momentum" else {}
    fn, p = train_pgd, 1.0
    if algo == "psgd":
        fn, p = train_psgd, 0.4
        kw = {"sampling_rate": p, "delta": 1e-5}
    # third run: a constant multiplier costing 1/9 per step, which overspends R = 0.5
    sig = np.stack([schedules.uniform(T=8, R=R), schedules.gd_dynamic(T=8, R=R, kappa=4.0), np.full(8, 3.0 * p)])
    Xte, yte = _toy(n=7, n_classes=3, seed=9)
    hb = fn(model, X, y, sigma=sig, R=R, seed=seeds, lr=0.2, X_test=Xte, y_test=yte, **kw, **CPU)
    assert hb.runs == 3 and hb.loss.shape == (3, 8)
    assert list(hb.stopped_early) == [False, False, True]  # 3rd: constant sigma 3 overspends
    for k, s in enumerate(seeds):
        h1 = fn(model, X, y, sigma=sig[k], R=R, seed=s, lr=0.2, X_test=Xte, y_test=yte, **kw, **CPU)
        hk = hb.run(k)
        for f in ("loss", "grad_norm", "clip_fraction", "sigma", "budget_spent", "lr"):
            np.testing.assert_allclose(getattr(hk, f), getattr(h1, f), rtol=1e-10, atol=1e-13, err_msg=f)
        assert hk.steps_done == h1.steps_done and hk.stopped_early == h1.stopped_early
        torch.testing.assert_close(hk.theta, h1.theta, rtol=1e-10, atol=1e-13)
        assert hk.test_accuracy == h1.test_accuracy
        assert hk.final_loss == pytest.approx(h1.final_loss, rel=1e-10)


def test_common_random_numbers_with_one_seed_and_many_schedules():
    """int seed + (K, T) sigma: same init and same noise vectors, only the scale differs
    (the influence-by-retraining setup). Runs with the same schedule coincide."""
    model = make_model("logistic", in_dim=3)
    X, y = _toy()
    base = np.full(6, 4.0)
    sig = np.stack([base, base, base.copy()])
    sig[2, 2] = 40.0
    h = train_pgd(model, X, y, sigma=sig, R=None, seed=4, **CPU)
    torch.testing.assert_close(h.theta[0], h.theta[1], rtol=0, atol=0)
    assert not torch.equal(h.theta[0], h.theta[2])
    np.testing.assert_array_equal(h.loss[0, :3], h.loss[2, :3])  # differ only after step 3
    assert h.R is None and h.R_spent[2] == pytest.approx(5 / 16 + 1 / 1600)


def test_same_seed_same_numbers_and_different_seeds_differ():
    model = make_model("mlp", in_dim=3, hidden=5)
    X, y = _toy()
    sig = schedules.uniform(T=5, R=1.0)
    a = train_pgd(model, X, y, sigma=sig, R=1.0, seed=2, progress=False, device="cpu")
    b = train_pgd(model, X, y, sigma=sig, R=1.0, seed=2, progress=False, device="cpu")
    c = train_pgd(model, X, y, sigma=sig, R=1.0, seed=3, progress=False, device="cpu")
    np.testing.assert_array_equal(a.loss, b.loss)
    assert torch.equal(a.theta, b.theta) and not torch.equal(a.theta, c.theta)


# -------------------------------------------------------------- train(model, X, y, config)


def _replayed(budget, sigma):
    """Steps of ``sigma`` a fresh ledger of ``budget`` accepts (charged one by one)."""
    led, n = PrivacyLedger.from_budget(budget), 0
    for s in sigma:
        if not led.can_afford(sigma=float(s), sampling_rate=budget.sampling_rate):
            break
        led.charge(sigma=float(s), sampling_rate=budget.sampling_rate)
        n += 1
    return n


@pytest.mark.parametrize("p", [1.0, 0.25])
def test_train_takes_one_config_and_stops_rather_than_overspend(p):
    """``dpcompanion.training.train(model, X, y, config)``: the config's Budget is what each
    run's ledger enforces. A schedule that overspends it (twice the paper's budget, or the
    paper's p^2/sigma^2 rule, which is not a guarantee) is stopped before the first step the
    ledger refuses: the run takes exactly the steps a fresh ledger accepts, and what it spent
    (R, and the epsilon the History reports) is within the budget."""
    model = make_model("logistic", in_dim=3)
    X, y = _toy(n=40)
    budget = (Budget.from_R(R=0.5, delta=1e-5) if p == 1.0
              else Budget.from_epsilon(epsilon=2.0, delta=1e-5, sampling_rate=p))
    sig = (schedules.uniform(T=10, R=2 * budget.R) if p == 1.0 else plan_paper_p2(budget, "uniform", T=20))
    n = _replayed(budget, sig)
    assert 0 < n < sig.size  # the schedule does overspend: the check can fail
    cfg = TrainConfig.build(sigma=sig, budget=budget, lr=0.1, clip_norm=4.0, seed=[0, 1], N=40, device="cpu",
                            dtype=DT)
    assert cfg.budget is budget and cfg.sampling_rate == p and cfg.algorithm == ("pgd" if p == 1.0 else "psgd")
    h = dpcompanion.training.train(model, X, y, cfg)
    assert list(h.steps_done) == [n, n] and all(h.stopped_early)
    assert np.all(h.R_spent <= budget.R)
    assert np.all(h.epsilon <= budget.epsilon * (1 + 1e-12))
    assert np.all(np.isnan(h.sigma[:, n:])) and np.all(np.isfinite(h.sigma[:, :n]))
    # the wrappers are the same call
    w = train_pgd(model, X, y, sigma=sig, budget=budget, lr=0.1, clip_norm=4.0, seed=[0, 1], **CPU)
    torch.testing.assert_close(w.theta, h.theta, rtol=0, atol=0)


def test_train_refuses_what_is_not_a_config():
    model = make_model("logistic", in_dim=3)
    X, y = _toy()
    with pytest.raises(ValueError, match="config must be a TrainConfig"):
        dpcompanion.training.train(model, X, y, {"sigma": [1.0]})
    with pytest.raises(ValueError, match="either budget or R"):
        TrainConfig.build(sigma=[1.0], budget=Budget.from_R(R=1.0), R=1.0, lr=0.1, clip_norm=1.0)
    with pytest.raises(ValueError, match="sampling_rate must be the budget's"):
        TrainConfig.build(sigma=[1.0], budget=Budget.from_R(R=1.0), sampling_rate=0.5, lr=0.1, clip_norm=1.0)
    with pytest.raises(TypeError, match="needs R"):
        train_pgd(model, X, y, sigma=[1.0])


# -------------------------------------------------------------------- PSGD and ADP


def test_psgd_charges_subsampled_cost_and_reports_tight_epsilon():
    model = make_model("logistic", in_dim=3)
    X, y = _toy(n=40)
    p, R, delta = 0.25, 0.3927, 1e-5
    # within the target by the tight accountant as well: every step is taken
    sig = schedules.uniform(T=20, R=R / p**2) * 1.3
    h = train_psgd(model, X, y, sigma=sig, R=R, sampling_rate=p, seed=0, delta=delta, **CPU)
    assert h.steps_done == 20 and not h.stopped_early
    assert h.R_spent == pytest.approx(20 * p**2 / sig[0] ** 2, rel=1e-12)  # the paper's p^2/sigma^2
    # the History reports the ledger's epsilon: the RDP accountant it enforces (integer orders), which
    # dp-accounting's (fractional orders too, independent code) bounds from below within 1 %
    assert h.epsilon == pytest.approx(accounting.rdp_epsilon_of(sigma=sig, delta=delta, sampling_rate=p), rel=1e-12)
    tight = accountant_epsilon(sigma=sig, delta=delta, sampling_rate=p)
    assert tight <= h.epsilon < 1.01 * tight
    assert h.meta["sampling_rate"] == p and np.isfinite(h.loss).all()


def test_psgd_stops_where_the_papers_rule_would_overspend():
    """The schedule that spends exactly R' = R/p^2 by the paper's rule (H Sec. 4.3) exceeds the
    target epsilon by the tight accountant here; the ledger stops the run at the last step the
    accountant allows."""
    model = make_model("logistic", in_dim=3)
    X, y = _toy(n=40)
    p, R, delta = 0.25, 0.3927, 1e-5
    target = accounting.zcdp_to_dp(rho=R / 2, delta=delta)
    sig = schedules.uniform(T=20, R=R / p**2)
    assert accountant_epsilon(sigma=sig, delta=delta, sampling_rate=p) > target  # the rule overspends
    h = train_psgd(model, X, y, sigma=sig, R=R, sampling_rate=p, seed=0, delta=delta, **CPU)
    k = h.steps_done
    assert 0 < k < 20 and h.stopped_early and h.R_spent < R
    assert accountant_epsilon(sigma=sig[:k], delta=delta, sampling_rate=p) <= target
    assert accountant_epsilon(sigma=sig[: k + 1], delta=delta, sampling_rate=p) > target


def test_psgd_with_rate_one_is_pgd():
    model = make_model("logistic", in_dim=3)
    X, y = _toy()
    sig = schedules.uniform(T=4, R=1.0)
    a = train_psgd(model, X, y, sigma=sig, R=1.0, sampling_rate=1.0, seed=1, **CPU)
    b = train_pgd(model, X, y, sigma=sig, R=1.0, seed=1, **CPU)
    torch.testing.assert_close(a.theta, b.theta, rtol=0, atol=0)


@pytest.mark.slow
def test_adpsgd_polynomial_schedule_and_steps():
    model = make_model("logistic", in_dim=3)
    X, y = _toy(n=40)
    T, R, p = 30, 0.5, 0.5
    h = train_adpsgd(model, X, y, R=R, T=T, sampling_rate=p, step_size="polynomial", seed=0, delta=1e-5, **CPU)
    t = np.arange(1, T + 1)
    np.testing.assert_allclose(h.lr, 1.0 / np.sqrt(20 + t))  # W Fig. 1: eta_t = 1/sqrt(20 + t)
    alpha2 = np.sqrt(20 + t)  # W Thm 4.2: alpha_t^2 = b_t
    np.testing.assert_allclose(h.sigma**2 / alpha2, (h.sigma[0] ** 2 / alpha2[0]) * np.ones(T), rtol=1e-10)
    assert h.R_spent == pytest.approx(R, rel=1e-9) and h.steps_done == T
    d = train_adpsgd(model, X, y, R=R, T=T, sampling_rate=p, adaptive_noise=False, seed=0, delta=1e-5, **CPU)
    np.testing.assert_allclose(d.sigma, d.sigma[0])  # DP-SGD: alpha_t = 1
    assert d.R_spent == pytest.approx(R, rel=1e-9)


def test_adpsgd_adaptive_step_sizes_follow_w():
    model = make_model("logistic", in_dim=3)
    X, y = _toy(n=20)
    T = 6
    h = train_adpsgd(model, X, y, R=1.0, T=T, step_size="adaptive", eta=1.0, b0_sq=20.0, C=0.1, beta=4.0,
                     period=3, seed=0, **CPU)
    assert np.all(np.diff(h.lr) <= 0) and h.lr[0] < 1 / math.sqrt(20.0)
    alpha2 = np.sqrt(20.0 + 0.1 * np.arange(1, T + 1))
    np.testing.assert_allclose(h.sigma**2 / alpha2, h.sigma[0] ** 2 / alpha2[0], rtol=1e-10)
    with pytest.raises(ValueError, match="step_size must be"):
        train_adpsgd(model, X, y, R=1.0, T=3, step_size="cosine", **CPU)


# ------------------------------------------------------------------ history, misc


def test_history_fields_and_json():
    model = make_model("logistic", in_dim=3)
    X, y = _toy()
    h = train_pgd(model, X, y, sigma=np.full(4, 2.0), R=0.6, seed=[0, 1], X_test=X, y_test=y, **CPU)
    assert isinstance(h, History) and h.runs == 2
    for f in ("loss", "grad_norm", "clip_fraction", "sigma", "lr", "budget_spent"):
        assert getattr(h, f).shape == (2, 4)
    assert list(h.steps_done) == [2, 2] and all(h.stopped_early)
    assert h.test_accuracy.shape == (2,)
    json.dumps(h.to_dict())
    json.dumps(h.run(1).to_dict())
    assert h.run(1).meta["seed"] == 1


def test_quiet_without_tty(capsys):
    model = make_model("logistic", in_dim=3)
    X, y = _toy()
    train_pgd(model, X, y, sigma=np.full(3, 2.0), R=1.0, device="cpu")  # progress=None: stderr not a TTY
    train_pgd(model, X, y, sigma=np.full(3, 2.0), R=1.0, device="cpu", progress=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"sigma": 2.0}, "sigma must be an array"),
        ({"sigma": [1.0, -1.0]}, "sigma must be finite and > 0"),
        ({"sigma": [1.0, np.inf]}, "no noiseless step"),
        ({"sigma": [np.nan, 1.0]}, "no noiseless step"),
        ({"sigma": [0.0, 1.0]}, "no noiseless step"),
        ({"sigma": [1e-300, 1.0]}, "sigma must be >= "),
        ({"sigma": [1e40, 1.0]}, "overflows float32"),
        ({"record": ("loss", "weights")}, "record must name"),
        ({"memory_budget": 10}, "memory_budget must be"),
        ({"clip_norm": -1.0}, "clip_norm must be"),
        ({"lr": -0.1}, "lr must be"),
        ({"momentum": 1.0}, "beta"),
        ({"seed": [1, 2], "sigma": np.ones((3, 2))}, "seeds but sigma has 3 rows"),
        ({"R": -1.0}, "R must be"),
        ({"device": "tpu"}, "device must be one of"),
        ({"init": torch.zeros(7)}, "init must have shape"),
    ],
)
def test_bad_arguments(kw, match):
    model = make_model("logistic", in_dim=3)
    X, y = _toy()
    args = {"sigma": [2.0, 2.0], "R": 1.0, "device": "cpu", "progress": False}
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        train_pgd(model, X, y, **args)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_gpu_is_an_error():
    model = make_model("logistic", in_dim=3)
    X, y = _toy()
    with pytest.raises(ValueError, match="cuda"):
        train_pgd(model, X, y, sigma=[2.0], R=1.0, device="cuda")


def test_cnn_psgd_batched_equals_sequential():
    model = make_model("cnn-mnist", n_classes=10)
    g = torch.Generator().manual_seed(0)
    X = torch.rand(10, 784, generator=g, dtype=DT)
    y = torch.randint(0, 10, (10,), generator=g)
    sig = np.full(2, 2.0)
    hb = train_psgd(model, X, y, sigma=sig, R=1.0, sampling_rate=0.5, seed=[0, 1], clip_norm=1.0, delta=1e-5, **CPU)
    for k in range(2):
        h1 = train_psgd(model, X, y, sigma=sig, R=1.0, sampling_rate=0.5, seed=k, clip_norm=1.0, delta=1e-5, **CPU)
        torch.testing.assert_close(hb.theta[k], h1.theta, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(hb.loss[k], h1.loss, rtol=1e-10)


def test_in_place_pieces_match_pure_ones():
    g = torch.Generator().manual_seed(0)
    v, grad, theta = (torch.randn(3, 5, generator=g, dtype=DT) for _ in range(3))
    t = torch.tensor([1.0, 2.0, 5.0], dtype=DT)
    lr = torch.tensor([0.1, 0.2, 0.3], dtype=DT)
    active = torch.tensor([True, False, True])
    v_ref, m_ref = engine.momentum_update(v, grad, beta=0.8, t=t)
    th_ref = engine.sgd_update(theta, m_ref, lr=lr, active=active)
    v2 = engine.momentum_accumulate_(v.clone(), grad, beta=0.8)
    torch.testing.assert_close(v2, v_ref)
    step = lr * active.to(DT) * engine.debias_factor(beta=0.8, t=t)
    torch.testing.assert_close(engine.sgd_update_(theta.clone(), v2, lr=step), th_ref)
    s = torch.randn(3, 5, generator=g, dtype=DT)
    torch.testing.assert_close(engine.scale(s.clone(), denominator=4.0, inplace=True), s / 4.0)


def test_cnn_engine_charges_the_ledger_and_stops_rather_than_overspend():
    """The conv model goes through the same trainer loop: a forced sigma that would
    overspend R stops the run after the steps that fit (each charged before it is taken)."""
    model = make_model("cnn-mnist", n_classes=10)
    g = torch.Generator().manual_seed(0)
    X = torch.rand(8, 784, generator=g, dtype=DT)
    y = torch.randint(0, 10, (8,), generator=g)
    h = train_pgd(model, X, y, sigma=np.full(5, 3.0), R=0.3927, seed=0, clip_norm=1.0, lr=0.1, **CPU)
    assert h.steps_done == 3 and h.stopped_early
    assert h.R_spent == pytest.approx(3 / 9) and h.R_spent <= 0.3927
    assert np.isnan(h.loss[3:]).all() and np.isfinite(h.loss[:3]).all()
