"""End-to-end claim entries (issue 12 item 1) and the missing entries: each passes or is refuted with a
counterexample, and each entry's mutant is refuted; the exact-moment engines agree with independent references."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from dpcompanion.claims import registry
from dpcompanion.theory import exact_momentum as em
from dpcompanion.theory import exact_risk as er
from dpcompanion.theory import exact_subsampled as xs

MODULES = ("dpcompanion.claims.end_to_end", "dpcompanion.claims.h_missing")


def _entries():
    reg = registry.load_all()
    return sorted((cid, c) for cid, c in reg.items() if c.check.__module__ in MODULES)


ENTRIES = _entries()
IDS = [cid for cid, _ in ENTRIES]


def test_registered_and_listed():
    assert "end_to_end" in registry.CLAIM_MODULES
    ends = [cid for cid, c in ENTRIES if c.method == "end-to-end"]
    for thm in ("H-T4.1", "H-T4.2", "H-T4.4", "H-T4.5", "H-T4.6", "H-T4.7", "H-T4.8", "H-T4.9", "H-T4.10-12",
                "W-T4.1", "W-T4.2", "W-P5.1"):
        assert f"{thm}.end-to-end" in ends


@pytest.mark.slow
@pytest.mark.parametrize("cid", IDS)
def test_entry_and_mutant(cid):
    c = dict(ENTRIES)[cid]
    assert "mutant" in inspect.signature(c.check).parameters
    res = c.check()
    assert res.status in ("verified", "proved", "refuted")
    assert "mutant" in res.evidence and res.evidence["mutant"]
    if res.status == "refuted":
        assert res.evidence.get("counterexample") is not None
        assert res.evidence.get("impact")
    mut = c.check(mutant=True)
    assert mut.status == "refuted", f"{cid}: mutant not caught ({mut.evidence.get('worst_margin')})"


def test_moments_match_exact_risk_for_pgd():
    lam = np.array([1.0, 0.3, 0.05])
    th = np.array([1.0, -2.0, 0.5])
    sig = np.linspace(3, 1, 20)
    m = em.moments(em.diagonal_quadratic(eigenvalues=lam), theta1=th, eta=0.7, noise_std=sig * 2 / 10, T=20)
    ref = er.expected_excess_risk(eigenvalues=lam, offset=th, eta=0.7, sigma=sig, clip_norm=2, N=10)
    assert m["excess"][-1] == pytest.approx(ref, rel=1e-12)


def test_moments_match_monte_carlo_momentum_minibatch():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 2)), rng.normal(size=12)
    p = em.least_squares(features=X, targets=y)
    T, beta, n, eta, s, th1 = 8, 0.6, 3, 0.1, 0.3, np.array([2.0, -1.0])
    m = em.moments(p, theta1=th1, eta=eta, noise_std=s, T=T, beta=beta, batch_size=n)
    R = 100_000
    th, v = np.tile(th1, (R, 1)), np.zeros((R, 2))
    for t in range(1, T + 1):  # the same algorithm written out independently (H Eq. 13 with minibatches)
        idx = rng.integers(0, 12, size=(R, n))
        g = np.mean((np.einsum("rnd,rd->rn", X[idx], th) - y[idx])[:, :, None] * X[idx], axis=1) + s * rng.normal(size=(R, 2))
        v = beta * v + (1 - beta) * g
        th = th - eta * v / (1 - beta**t)
    f = 0.5 * np.mean((th @ X.T - y) ** 2, axis=1) - p.f_star
    assert abs(m["excess"][-1] - f.mean()) < 5 * f.std() / np.sqrt(R)
    vs = np.sum(v**2, axis=1)
    assert abs(m["v_sq"][-1] - vs.mean()) < 5 * vs.std() / np.sqrt(R)


@pytest.mark.parametrize("q,z", [(1.0, 1.0), (0.01, 1.0), (0.1, 2.0), (0.01, 0.5)])
def test_step_epsilon_matches_pld(q, z):
    from dpcompanion.theory import accounting

    ours = xs.step_epsilon(delta=1e-5, sampling_rate=q, noise_multiplier=z)
    pld = accounting.accountant_epsilon(sigma=[z], delta=1e-5, sampling_rate=q, accountant="pld")
    assert ours == pytest.approx(pld, rel=1e-4)


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="beta"):
        em.moments(em.diagonal_quadratic(eigenvalues=[1.0]), theta1=[1.0], eta=0.1, noise_std=0.0, T=2, beta=1.0)
    with pytest.raises(ValueError, match="sampling_rate"):
        xs.step_delta(epsilon=1.0, sampling_rate=0.0, noise_multiplier=1.0)
