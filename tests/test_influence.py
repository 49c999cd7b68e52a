"""Tests of dpcompanion.training.influence: the retraining estimate of q_t against the exact
influence of PGD on a quadratic, the common-random-numbers design, and the Monte Carlo
excess risk of the real trainer against the closed form of dpcompanion.theory.exact_risk."""

import math

import numpy as np
import pytest
import torch

from dpcompanion.theory import exact_risk
from dpcompanion.training import influence
from dpcompanion.training.models import make_model


def _tiny(seed=0, N=60, D=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D)) * np.array([1.0, 0.6, 0.3])[:D]
    y = (rng.random(N) < 0.5).astype(int)
    return X, y, make_model("linear", in_dim=D, n_classes=2)


def test_fit_quadratic_matches_polyfit():
    rng = np.random.default_rng(0)
    lv = np.array([20.0, 60.0, 100.0, 150.0, 200.0])
    L = rng.standard_normal((4, 5))
    c, c0 = influence.fit_quadratic(lv, L)
    for i in range(4):
        ref = np.polynomial.polynomial.polyfit(lv**2, L[i], 1)  # independent: numpy's LS
        assert c[i] == pytest.approx(ref[1], rel=1e-9)
        assert c0[i] == pytest.approx(ref[0], rel=1e-9, abs=1e-12)


def test_retraining_estimate_matches_analytic_influence():
    """No gradient is clipped (checked), so the trainer is exactly PGD on the quadratic and
    the retrained coefficient estimates the exact q_t without bias: each t within 4 SE."""
    X, y, m = _tiny()
    T, lr, C = 8, 0.5, 50.0
    res = influence.influence_by_retraining(m, X, y, T=T, base_sigma=0.5, levels=[0.1, 0.3, 0.5, 0.7, 0.9],
                                            repeats=200, clip_norm=C, lr=lr, device="cpu", dtype=torch.float64)
    assert res.clip_fraction == 0.0
    assert res.runs == T * 5 * 200 and res.meta["calls"] == 1
    qa = influence.analytic_influence(m, X, y, T=T, lr=lr, clip_norm=C)
    z = (res.q - qa) / res.q_se
    assert np.all(np.abs(z) < 4), f"retrained vs analytic q_t: z = {np.round(z, 2)}"
    # the influence grows with t (the paper's qualitative claim) and so does the estimate
    assert np.all(np.diff(qa) > 0) and res.q[-1] > res.q[0]


def test_sweep_runs_differ_only_in_the_swept_step():
    """With base_sigma among the levels, the runs at that level are the same run for every
    swept t (same seed, same schedule): their final losses coincide exactly."""
    X, y, m = _tiny(1)
    res = influence.influence_by_retraining(m, X, y, T=5, base_sigma=0.4, levels=[0.2, 0.4, 0.8], repeats=3,
                                            clip_norm=50.0, lr=0.5, device="cpu", dtype=torch.float64)
    base = res.final_loss[:, 1, :]  # (n_t, repeats)
    assert np.all(base == base[0])
    assert not np.all(res.final_loss[:, 0, :] == res.final_loss[0, 0, :])  # other levels differ by t
    assert len(set(base[0])) == 3  # repeats are independent seeds


def test_max_runs_per_call_gives_the_same_numbers():
    X, y, m = _tiny(2)
    kw = dict(T=4, base_sigma=0.4, levels=[0.2, 0.6], repeats=2, clip_norm=50.0, lr=0.5, device="cpu",
              dtype=torch.float64)
    a = influence.influence_by_retraining(m, X, y, **kw)
    b = influence.influence_by_retraining(m, X, y, max_runs_per_call=5, **kw)
    assert b.meta["calls"] == 4
    np.testing.assert_allclose(a.final_loss, b.final_loss, rtol=1e-12)


def test_trainer_monte_carlo_matches_exact_expected_excess_risk():
    """H-X-EER's Monte Carlo column: the real trainer (no clipping) against the closed form."""
    X, y, m = _tiny(3, N=80)
    quad = influence.squared_loss_quadratic_of(m, X, y)
    lam, off = quad["eigenvalues"], quad["offset"]
    T, C, lr = 12, 50.0, 1.0 / lam.max()
    scheds = {"uniform": np.full(T, 0.6), "decreasing": np.linspace(1.0, 0.2, T)}
    mc = influence.excess_risk_monte_carlo(m, X, y, schedules=scheds, runs=3000, lr=lr, clip_norm=C,
                                           f_star=quad["f_star"], device="cpu")
    for name, s in scheds.items():
        assert mc[name]["max_clip_fraction"] == 0.0
        exact = exact_risk.expected_excess_risk(eigenvalues=lam, offset=off, eta=lr, sigma=s, clip_norm=C, N=len(y))
        z = (mc[name]["mean"] - exact) / mc[name]["se"]
        assert abs(z) < 4, f"{name}: MC {mc[name]['mean']:.5g} +- {mc[name]['se']:.2g} vs exact {exact:.5g}"


def test_theory_influence_shape():
    X, y, m = _tiny()
    th = influence.theory_influence(m, X, y, T=6)
    assert th["q"][-1] == 1.0 and 0 <= th["gamma"] < 1
    assert th["q"] == pytest.approx(th["gamma"] ** np.arange(5, -1, -1))


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(levels=[1.0]), "levels must be"),
        (dict(levels=[1.0, -2.0]), "levels must be"),
        (dict(steps=[0]), "steps must be"),
        (dict(steps=[2, 2]), "steps must be"),
        (dict(repeats=1), "repeats must be"),
        (dict(base_sigma=0.0), "base_sigma must be"),
    ],
)
def test_validation(kw, match):
    X, y, m = _tiny()
    args = dict(T=3, base_sigma=1.0, levels=[1.0, 2.0], repeats=2, device="cpu") | kw
    with pytest.raises(ValueError, match=match):
        influence.influence_by_retraining(m, X, y, **args)
    with pytest.raises(ValueError, match="linear model with squared loss"):
        influence.analytic_influence(make_model("logistic", in_dim=3), X, y, T=3, lr=0.1, clip_norm=1.0)


def test_theory_rate_with_a_step_size():
    X, y, m = _tiny()
    th = influence.theory_influence(m, X, y, T=4, lr=0.1)
    # the proof's contraction before eta = 1/M is substituted (001 proof D.1)
    assert th["rate"] == pytest.approx(1 - 2 * th["mu"] * 0.1 * (1 - th["M"] * 0.1 / 2))
    assert th["q"] == pytest.approx(th["rate"] ** np.arange(3, -1, -1))


def test_eer_units_on_a_tiny_dataset():
    """eer_at_scale and eer_tightness (what the H-X-EER experiment's units call) on a tiny
    synthetic dataset instead of MNIST35."""
    X, y, _ = _tiny(4, N=80)
    Xs = X / np.linalg.norm(X, axis=1).max()
    r = influence.eer_at_scale(Xs, y, T_max=40, T_mc=10, runs_mc=100, device="cpu")
    comp = r["comparison"]
    for kind in ("uniform", "gd-dynamic", "exponential"):
        assert np.all(comp[kind]["ratio"] >= 1 - 1e-12)
        mc = r["monte_carlo"][kind]
        if mc["max_clip_fraction"] == 0.0:
            assert abs(mc["z"]) < 4, (kind, mc)
    gap = 0.5 * float(np.sum(r["eigenvalues"] * r["offset"] ** 2))
    assert gap == pytest.approx(comp["constants"]["initial_gap"], rel=1e-9)  # the unit's gap is the bound's
    t = influence.eer_tightness(kappas=[1.3, 100.0], initial_gap=gap, D=r["eigenvalues"].size, N=r["N"], T_max=40)
    assert set(t["ratio"]) == {"uniform", "gd-dynamic", "exponential"}
    assert all(np.all(v >= 1 - 1e-12) for v in t["ratio"].values())


def test_influence_statistics_is_what_retraining_reports():
    X, y, m = _tiny(2)
    res = influence.influence_by_retraining(m, X, y, T=3, base_sigma=0.4, levels=[0.2, 0.4, 0.8], repeats=4,
                                            clip_norm=50.0, lr=0.5, device="cpu", dtype=torch.float64)
    st = influence.influence_statistics(res.levels, res.final_loss)
    for k, v in st.items():
        np.testing.assert_array_equal(v, getattr(res, k))
    # blocks of repeats concatenated give the statistics of the whole (the experiment's combine)
    a, b = res.final_loss[:, :, :2], res.final_loss[:, :, 2:]
    np.testing.assert_array_equal(influence.influence_statistics(res.levels, np.concatenate([a, b], axis=2))["q"],
                                  res.q)
