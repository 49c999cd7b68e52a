"""End-to-end claim entries and the missing entries: each passes or is refuted with a
counterexample, and each entry's mutant is refuted; the exact-moment engines agree with independent references."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from dpcompanion.claims import registry
from dpcompanion.theory import exact_momentum as em
from dpcompanion.theory import exact_risk as er
from dpcompanion.theory import exact_subsampled as xs

def _entries():
    """The entries that name their mutant in their evidence (built on claims.checks.margin_result): each
    theorem's end-to-end inequality and the missing entries, in their sections' modules."""
    reg = registry.load_all()
    return sorted((cid, c) for cid, c in reg.items() if c.takes_mutant and c.mutant is None)


ENTRIES = _entries()
IDS = [cid for cid, _ in ENTRIES]


def test_registered_and_listed():
    assert len(ENTRIES) == 24
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


# --- the refutations, reproduced independently (formulas rewritten here, not read from the evidence) --------------


def _status(cid):
    return registry.load_all()[cid].check()


def test_ce_thm45_one_step():  # H-T4.5.end-to-end: T = 1, kappa = 1 (H = I, D = 3), theta_1 - theta* = (1, 1, 1)
    beta, eta0, N, R = 0.3, 0.0396, 3, 0.3927
    s2 = 1 / R  # T = 1: the whole budget on one step
    gamma = 1 - eta0  # H Thm 4.5: gamma = 1 - eta0/kappa
    gap = 1.5
    # one step: m_2 = g_1 (debiased), theta_2 = theta_1 - eta0/2 (theta_1 + sigma/N nu)
    exact = 0.5 * (3 * (1 - eta0 / 2) ** 2 + 3 * (eta0 / 2) ** 2 * s2 / N**2)
    alpha = 3 / (2 * R * 1 * N**2 * gap)  # D G^2 / (2 R M N^2 gap)
    zeta = 1 - eta0**2 / (beta * (1 - beta) ** 3) - eta0 / 4  # as printed
    v2 = (1 - beta) ** 2 * (3 + 3 * s2 / N**2)  # E||v_2||^2, v_2 = (1 - beta) g_1
    rhs = (gamma + 2 * R * eta0 * alpha * s2) * gap - zeta * eta0 / 2 * v2
    assert exact > rhs * (1 + 1e-4)
    assert _status("H-T4.5.end-to-end").status == "refuted"


def test_ce_thm47_monte_carlo():  # H-T4.7.end-to-end smallest counterexample, exact side by simulation
    from dpcompanion.theory import schedules
    from dpcompanion.theory.bounds import gd

    kappa, beta, eta0, N, T, R = 1.0, 0.05, 0.8626337489163055, 2, 2, 0.3927
    s = schedules.momentum_dynamic(T=T, R=R, kappa=kappa, beta=beta, eta0=eta0, variant="statement")
    q = np.exp(schedules.log_influence("momentum-dynamic", T=T, kappa=kappa, beta=beta, eta0=eta0, variant="statement"))
    gamma, gap = 1 - eta0 / kappa, 1.5
    alpha = gd.alpha_of(D=3, G=1.0, R=R, M=1.0, N=N, f_gap=gap)
    bound = (gamma**T + 2 * eta0 * alpha * R * float(np.sum(q * s**2))) * gap
    rng = np.random.default_rng(47)
    reps = 200_000
    th, v = np.ones((reps, 3)), np.zeros((reps, 3))
    for t in range(1, T + 1):
        g = th + s[t - 1] / N * rng.normal(size=th.shape)
        v = beta * v + (1 - beta) * g
        th = th - eta0 / 2 * v / (1 - beta**t)
    f = 0.5 * np.sum(th**2, axis=1)
    assert f.mean() - 5 * f.std() / np.sqrt(reps) > bound
    assert _status("H-T4.7.end-to-end").status == "refuted"


def test_ce_subsampling_rule_pld():  # H-S4.3.subsampling-rule, against dp-accounting's PLD directly
    import dp_accounting as dpa

    p, sigma, delta = 1e-3, 0.5, 1e-5
    rho = p**2 / sigma**2 / 2  # the rule: cost p^2/sigma^2 in R units, R/2-zCDP
    eps_rule = rho + 2 * np.sqrt(rho * np.log(1 / delta))
    acc = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dpa.PoissonSampledDpEvent(p, dpa.GaussianDpEvent(sigma)), 1)
    assert acc.get_epsilon(delta) > 10 * eps_rule
    assert _status("H-S4.3.subsampling-rule").status == "refuted"


def test_ce_eq24_not_the_minimiser():  # H-T4.2.T-eq24-vs-minimiser
    kappa, alpha = 10.0, 1e-3
    gamma = 1 - 1 / kappa
    L = -np.log(gamma)
    T24 = np.log(1 + L / alpha) / L
    Ts = np.arange(1, 3000)
    erub = gamma**Ts + alpha * kappa * (1 - gamma**Ts) * Ts  # Eq. (22), rewritten
    T_star = int(Ts[np.argmin(erub)])
    assert abs(T24 - T_star) > 10
    assert _status("H-T4.2.T-eq24-vs-minimiser").status == "refuted"


def test_ce_table2_lower_bound():  # H-Tab2.uniform-stability.lower-bound: TER >= 1/(4N) by simulation, and > C D/(N^2 R)
    rng = np.random.default_rng(12)
    N, reps, T = 10, 200_000, 3
    x = rng.choice([-1.0, 1.0], size=(reps, N))
    th = np.zeros(reps)
    for _ in range(T):  # f = 1/4 (theta - x)^2: M = 1/2, eta = 1/M = 2, any noise
        th = th - 2 * (0.5 * (th - x.mean(axis=1)) + 0.3 / N * rng.normal(size=reps))
    ter = 0.25 * np.mean(th**2)  # E_x f(theta; x) - min = 1/4 theta^2
    assert ter > 1 / (4 * N) * 0.99
    N = 1e5
    assert 1 / (4 * N) > 1e3 * 1.0 / (N**2 * 0.3927)
    assert _status("H-Tab2.uniform-stability.lower-bound").status == "refuted"


def test_ce_table2_high_probability_rate():  # H-Tab2.high-probability.first-term
    Ns = np.logspace(6, 12, 7)
    printed = [np.sqrt(10 * np.log(n) * np.log(20) / (n * 0.3927)) / n for n in Ns]  # (1/N) sqrt(D ln N ln(1/p)/(N R))
    slope = np.polyfit(np.log(Ns), np.log(printed), 1)[0]
    assert slope < -1.4  # the corrected first term, sqrt(2 G^2/mu) sqrt(EER) with EER ~ D/(N^2 R), decays like N^-1
    assert _status("H-Tab2.high-probability.first-term").status == "refuted"


def test_ce_slides_clipping():  # H-Slides.T3.2.clipping: C = 0.1 G, one step on 1/2 theta^2 from theta_1 = G = 1
    C, G, sigma = 0.1, 1.0, 0.5
    exact = 0.5 * ((G - C) ** 2 + (C * sigma) ** 2)
    bound = 0.5 * C**2 * sigma**2 * (1 / sigma**2) * sigma**2  # R alpha_1 sigma^2 gap, alpha_1 = (C^2/(2R))/gap
    assert exact > 100 * bound
    assert _status("H-Slides.T3.2.clipping").status == "refuted"
