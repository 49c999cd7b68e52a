"""Opacus follows a dpcompanion schedule step by step; its own accountant stays within the target."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus import PrivacyEngine  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from dpcompanion.theory import accounting
from dpcompanion.theory import schedules  # noqa: E402
from dpcompanion.integrations.opacus import (  # noqa: E402
    make_private_with_schedule,
    noise_lambda,
    opacus_epsilon,
)
from dpcompanion.theory.budget import BudgetExceeded, PrivacyLedger  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _setup(N, batch_size, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N, 5, generator=g)
    y = (x[:, 0] > 0).long()
    torch.manual_seed(seed)
    model = torch.nn.Linear(5, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, generator=g)
    return model, opt, loader


def _train_step(model, opt, xb, yb):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(xb), yb).backward()
    opt.step()


def test_full_batch_training_follows_schedule_and_stays_within_target():
    epsilon, delta, T, N = 4.0, 1e-5, 10, 64
    R = accounting.R_zcdp(epsilon=epsilon, delta=delta)
    sigma = schedules.gd_dynamic(T=T, R=R, kappa=20.0)
    model, opt, loader = _setup(N, batch_size=N)
    engine = PrivacyEngine(accountant="rdp")
    ledger = PrivacyLedger(R=R)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader, noise = make_private_with_schedule(
            engine, module=model, optimizer=opt, data_loader=loader, sigma=sigma, max_grad_norm=1.0,
            poisson_sampling=False, ledger=ledger, noise_generator=torch.Generator().manual_seed(1))
    (xb, yb), = list(loader)
    assert len(xb) == N  # full batch: sampling rate 1
    used = []
    for _ in range(T):
        _train_step(model, opt, xb, yb)
        used.append(opt.noise_multiplier)
        noise.step()
    assert np.allclose(used, sigma, rtol=1e-12)
    assert noise.exhausted and ledger.spent == pytest.approx(R, rel=1e-12)
    # Opacus's accountant saw exactly the schedule, at sampling rate 1
    seen = [(nm, q, n) for nm, q, n in engine.accountant.history]
    assert sum(n for _, _, n in seen) == T and all(q == 1.0 for _, q, _ in seen)
    eps_opacus = engine.get_epsilon(delta)
    eps_exact = accounting.exact_epsilon(sigma=sigma, delta=delta)
    # exact (GDP) <= Opacus RDP <= target (the paper's zCDP conversion of R)
    assert eps_exact <= eps_opacus <= epsilon
    assert opacus_epsilon(sigma=sigma, sampling_rate=1.0, delta=delta) == pytest.approx(eps_opacus, rel=1e-9)
    # a step beyond the schedule is refused before the parameters move or Opacus records it
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(BudgetExceeded):
        _train_step(model, opt, xb, yb)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert sum(n for _, _, n in engine.accountant.history) == T


def test_forgotten_scheduler_step_is_refused():
    sigma = schedules.exponential(T=4, R=1.0, rate=0.2)
    model, opt, loader = _setup(32, batch_size=32)
    engine = PrivacyEngine(accountant="rdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader, noise = make_private_with_schedule(
            engine, module=model, optimizer=opt, data_loader=loader, sigma=sigma, max_grad_norm=1.0,
            poisson_sampling=False)
    (xb, yb), = list(loader)
    _train_step(model, opt, xb, yb)
    with pytest.raises(ValueError, match="ScheduleNoise.step"):
        _train_step(model, opt, xb, yb)  # noise.step() was not called


def test_poisson_sampling_matches_dp_accounting():
    N, B, T, delta = 200, 50, 8, 1e-5
    p = B / N
    sigma = schedules.step_decay(T=T, R=2.0, drop=0.7, period=4)
    model, opt, loader = _setup(N, batch_size=B)
    engine = PrivacyEngine(accountant="rdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader, noise = make_private_with_schedule(
            engine, module=model, optimizer=opt, data_loader=loader, sigma=sigma, max_grad_norm=1.0,
            poisson_sampling=True, noise_generator=torch.Generator().manual_seed(2))
    steps = 0
    while steps < T:
        for xb, yb in loader:
            if steps == T:
                break
            _train_step(model, opt, xb, yb)
            noise.step()
            steps += 1
    assert noise.exhausted
    assert all(q == pytest.approx(p) for _, q, _ in engine.accountant.history)
    eps_opacus = engine.get_epsilon(delta)
    eps_ours = accounting.accountant_epsilon(sigma=sigma, delta=delta, sampling_rate=p, accountant="rdp")
    assert eps_opacus == pytest.approx(eps_ours, rel=0.05)
    # subsampling amplifies: far below the full-batch figure for the same multipliers
    assert eps_opacus < accounting.exact_epsilon(sigma=sigma, delta=delta)


def test_noise_lambda_for_stock_lambda_noise():
    sigma = np.array([4.0, 2.0, 1.0])
    f = noise_lambda(sigma)
    assert [sigma[0] * f(k) for k in range(5)] == [4.0, 2.0, 1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="sigma"):
        noise_lambda([1.0, 0.0])


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 0.0, -1.0])
def test_bridge_refuses_noiseless_schedules_before_anything(bad):
    """No step without noise through the Opacus bridge either; refused before
    Opacus is touched (the engine and optimizer below would fail if they were used)."""
    from dpcompanion.integrations import opacus as bridge

    with pytest.raises(ValueError, match="sigma must be finite and > 0"):
        bridge.make_private_with_schedule(None, module=None, optimizer=None, data_loader=None, sigma=[1.0, bad],
                                          max_grad_norm=1.0)
    with pytest.raises(ValueError, match="sigma"):
        bridge.ScheduleNoise(None, sigma=[bad])
    with pytest.raises(ValueError, match="sigma"):
        bridge.noise_lambda([1.0, bad])
    with pytest.raises(ValueError, match="sigma"):
        bridge.opacus_epsilon(sigma=[bad], sampling_rate=0.1, delta=1e-5)
