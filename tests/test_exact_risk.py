"""Tests of dpcompanion.theory.exact_risk: the closed form against a moment recursion in the
original coordinates, against Monte Carlo PGD, and against Hong et al. Thm 4.1's bound."""

import math

import numpy as np
import pytest

from dpcompanion.theory import exact_risk as er


def _random_quadratic(rng, D, *, lam_min=0.05, lam_max=1.0):
    U, _ = np.linalg.qr(rng.standard_normal((D, D)))
    lam = np.sort(rng.uniform(lam_min, lam_max, D))
    lam[0], lam[-1] = lam_min, lam_max
    return lam, U, U @ np.diag(lam) @ U.T


def _moment_recursion(H, theta1_minus_star, eta, sigma, G, N):
    """Independent reference: propagate mean and covariance of theta_t - theta* in the
    original coordinates (no eigen-decomposition); E f - f* = 1/2 (m^T H m + tr(H S))."""
    D = H.shape[0]
    m, S = theta1_minus_star.copy(), np.zeros((D, D))
    etas = np.broadcast_to(np.asarray(eta, float), (len(sigma),))
    for et, s in zip(etas, sigma):
        A = np.eye(D) - et * H
        m = A @ m
        S = A @ S @ A.T + (et * G * s / N) ** 2 * np.eye(D)
    return 0.5 * (m @ H @ m + np.trace(H @ S)), S, m


@pytest.mark.parametrize("per_step_eta", [False, True])
def test_closed_form_equals_moment_recursion(per_step_eta):
    rng = np.random.default_rng(1)
    lam, U, H = _random_quadratic(rng, 6)
    T = 12
    eta = rng.uniform(0.3, 1.5, T) if per_step_eta else 1.0
    sigma = rng.uniform(0.0, 3.0, T)
    d1 = rng.standard_normal(6)
    G, N = 4.0, 10
    ref, _, _ = _moment_recursion(H, d1, eta, sigma, G, N)
    got = er.expected_excess_risk(eigenvalues=lam, offset=U.T @ d1, eta=eta, sigma=sigma, clip_norm=G, N=N)
    assert got == pytest.approx(ref, rel=1e-12)
    # influence: finite difference in sigma_t^2 of the reference
    q = er.noise_influence(eigenvalues=lam, eta=eta, T=T, clip_norm=G, N=N)
    for t in (0, 5, T - 1):
        s2 = sigma.copy()
        s2[t] = math.sqrt(sigma[t] ** 2 + 1.0)
        assert _moment_recursion(H, d1, eta, s2, G, N)[0] - ref == pytest.approx(q[t], rel=1e-9)


def test_closed_form_matches_monte_carlo_pgd():
    """Simulate PGD itself (theta_{t+1} = theta_t - eta (H(theta_t - theta*) + G sigma_t v_t/N))
    and compare the sample mean of f - f* with the closed form, in units of its exact
    standard error (from excess_risk_variance)."""
    rng = np.random.default_rng(7)
    D, T, runs = 4, 20, 20000
    lam, U, H = _random_quadratic(rng, D, lam_min=0.2, lam_max=1.0)
    theta_star = rng.standard_normal(D)
    theta1 = theta_star + rng.standard_normal(D)
    eta, G, N = 0.8, 4.0, 10
    sigma = np.linspace(3.0, 0.5, T)
    th = np.tile(theta1, (runs, 1))
    for t in range(T):
        grad = (th - theta_star) @ H
        th = th - eta * (grad + G * sigma[t] * rng.standard_normal((runs, D)) / N)
    d = th - theta_star
    f = 0.5 * np.einsum("ri,ij,rj->r", d, H, d)
    kw = dict(eigenvalues=lam, offset=U.T @ (theta1 - theta_star), eta=eta, sigma=sigma, clip_norm=G, N=N)
    exact = er.expected_excess_risk(**kw)
    se = math.sqrt(er.excess_risk_variance(**kw) / runs)
    z = (f.mean() - exact) / se
    assert abs(z) < 4, f"MC mean {f.mean():.6g} vs exact {exact:.6g}: z = {z:.2f}"
    # the variance formula itself, against the sample variance (relative tolerance ~ 4/sqrt(runs) * kurtosis)
    assert f.var() == pytest.approx(er.excess_risk_variance(**kw), rel=0.1)


def _thm41_bound_absolute(lam, offset, sigma, G, N):
    """Hong et al. 2022 (001) Thm 4.1 rewritten from the proof D.1 (eta = 1/M), in absolute
    units: gamma^T (f1 - f*) + sum_t gamma^{T-t} (M D / 2) (G sigma_t / (M N))^2."""
    M, mu, D, T = lam.max(), lam.min(), lam.size, len(sigma)
    gamma = 1 - mu / M
    gap = 0.5 * np.sum(lam * offset**2)
    k = T - np.arange(1, T + 1)
    return gamma**T * gap + np.sum(gamma**k * (M * D / 2) * (G * np.asarray(sigma) / (M * N)) ** 2)


def _schedules(T, R, kappa):
    """Schedules of SPEC section 5, rewritten here (each spends sum 1/sigma_t^2 = R)."""
    gamma = 1 - 1 / kappa
    t = np.arange(1, T + 1)
    out = {"uniform": np.full(T, math.sqrt(T / R))}
    # Thm 4.4 (001): sigma_t^2 = (1/R) ((1/gamma)^{T/2} - 1)/(1 - sqrt(gamma)) gamma^{t/2}
    out["gd-dynamic"] = np.sqrt((gamma ** (-T / 2) - 1) / (1 - math.sqrt(gamma)) * gamma ** (t / 2) / R)
    for k in (0.01, 0.05):
        s2 = np.exp(-2 * k * t)
        out[f"exponential(k={k})"] = np.sqrt(s2 * np.sum(1 / s2) / R)
    out["increasing"] = out["gd-dynamic"][::-1].copy()
    return out


def _schedules_from_library(T, R, kappa):
    sched = pytest.importorskip("dpcompanion.theory.schedules")
    out = {"uniform": np.asarray(sched.uniform(T=T, R=R), float)}
    if hasattr(sched, "gd_dynamic"):
        out["gd-dynamic"] = np.asarray(sched.gd_dynamic(T=T, R=R, kappa=kappa), float)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_exact_risk_below_thm41_bound_for_every_schedule(seed):
    rng = np.random.default_rng(seed)
    D = int(rng.integers(2, 30))
    lam, U, H = _random_quadratic(rng, D, lam_min=rng.uniform(0.01, 0.5), lam_max=1.0)
    lam = lam * rng.uniform(0.5, 20)  # M varies
    offset = rng.standard_normal(D) * rng.uniform(0.1, 10)
    G, N, R = 4.0, 1000, 0.3927
    kappa = lam.max() / lam.min()
    for T in (1, 10, 60):
        for name, sigma in _schedules(T, R, kappa).items():
            assert np.sum(1 / sigma**2) == pytest.approx(R, rel=1e-9), name
            exact = er.expected_excess_risk(
                eigenvalues=lam, offset=offset, eta=1 / lam.max(), sigma=sigma, clip_norm=G, N=N
            )
            bound = _thm41_bound_absolute(lam, offset, sigma, G, N)
            assert exact <= bound * (1 + 1e-12), (
                f"{name}, T={T}, D={D}, kappa={kappa:.3g}: exact {exact:.6g} > bound {bound:.6g} "
                f"(gap bound - exact = {bound - exact:.3g})"
            )
            # ERUB normalisation: relative gap reported by pl_constants-based evaluation
            c = er.pl_constants(eigenvalues=lam, offset=offset, clip_norm=G, N=N, R=R)
            erub = c["gamma"] ** T + R * np.sum(
                c["alpha"] * c["gamma"] ** (T - np.arange(1, T + 1)) * sigma**2
            )
            assert erub * c["initial_gap"] == pytest.approx(bound, rel=1e-10)


def test_exact_risk_below_bound_with_library_schedules():
    """Same sandwich with the schedules module (when it has landed)."""
    rng = np.random.default_rng(11)
    lam, U, H = _random_quadratic(rng, 8, lam_min=0.1, lam_max=2.0)
    offset = rng.standard_normal(8)
    G, N, R, T = 4.0, 1000, 0.3927, 40
    for name, sigma in _schedules_from_library(T, R, lam.max() / lam.min()).items():
        exact = er.expected_excess_risk(eigenvalues=lam, offset=offset, eta=1 / lam.max(), sigma=sigma, clip_norm=G, N=N)
        bound = _thm41_bound_absolute(lam, offset, sigma, G, N)
        assert exact <= bound, f"{name}: exact {exact:.6g} > bound {bound:.6g} (gap bound - exact = {bound - exact:.3g})"


def test_isotropic_quadratic_attains_the_noise_part_of_the_bound_at_the_last_step():
    """When all eigenvalues equal M and eta = 1/M, one step solves the problem, so only
    the last step's noise counts and the bound's q_T = (D G^2/(2 M N^2)) is exact."""
    lam = np.full(5, 2.0)
    q = er.noise_influence(eigenvalues=lam, eta=0.5, T=4, clip_norm=3.0, N=7)
    assert q[:-1] == pytest.approx(np.zeros(3))
    assert q[-1] == pytest.approx(5 * 9 / (2 * 2.0 * 49))


def test_squared_loss_quadratic_matches_the_loss():
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((50, 4)), rng.standard_normal(50)
    th = rng.standard_normal(4)
    q = er.squared_loss_quadratic(features=X, targets=y, theta_init=th)
    f = lambda v: 0.5 * np.mean((X @ v - y) ** 2)
    assert f(th) - q["f_star"] == pytest.approx(0.5 * np.sum(q["eigenvalues"] * q["offset"] ** 2))
    assert er.deterministic_excess_risk(eigenvalues=q["eigenvalues"], offset=q["offset"], eta=0.1, T=0) == pytest.approx(
        f(th) - q["f_star"]
    )


def test_squared_loss_quadratic_offset_does_not_depend_on_lapacks_eigenvector_signs(monkeypatch):
    """A LAPACK build may return any eigenvector's sign (a new machine flipped h-x-eer's stored offsets):
    an eigh that flips every other column must give the same basis and offset."""
    rng = np.random.default_rng(4)
    X, y, th = rng.standard_normal((40, 5)), rng.standard_normal(40), rng.standard_normal(5)
    ref = er.squared_loss_quadratic(features=X, targets=y, theta_init=th)
    real = np.linalg.eigh

    def flipped(a):
        lam, U = real(a)
        return lam, U * np.where(np.arange(U.shape[1]) % 2 == 0, -1.0, 1.0)

    monkeypatch.setattr(er.np.linalg, "eigh", flipped)
    q = er.squared_loss_quadratic(features=X, targets=y, theta_init=th)
    assert np.array_equal(q["basis"], ref["basis"]) and np.array_equal(q["offset"], ref["offset"])
    U = ref["basis"]
    assert np.all(U[np.abs(U).argmax(axis=0), np.arange(5)] > 0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(eigenvalues=[-1.0], eta=0.1, T=2, clip_norm=1.0, N=1), "eigenvalues must be"),
        (dict(eigenvalues=[1.0], eta=0.0, T=2, clip_norm=1.0, N=1), "eta must be"),
        (dict(eigenvalues=[1.0], eta=[0.1], T=2, clip_norm=1.0, N=1), "eta must be a scalar or have length"),
        (dict(eigenvalues=[1.0], eta=0.1, T=-1, clip_norm=1.0, N=1), "T must be"),
        (dict(eigenvalues=[1.0], eta=0.1, T=2, clip_norm=0.0, N=1), "clip_norm must be"),
    ],
)
def test_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        er.noise_influence(**kwargs)
    with pytest.raises(ValueError, match="sigma must be"):
        er.expected_excess_risk(eigenvalues=[1.0], offset=[1.0], eta=0.1, sigma=[-1.0], clip_norm=1.0, N=1)
    with pytest.raises(ValueError, match="mu"):
        er.pl_constants(eigenvalues=[0.0, 1.0], offset=[1.0, 1.0], clip_norm=1.0, N=1, R=1.0)


def test_compare_with_bound_is_consistent_and_sandwiched():
    """compare_with_bound (which evaluates the bound through dpcompanion.theory.bounds.gd) against
    the closed form and the bound rewritten in this file, for every schedule kind."""
    rng = np.random.default_rng(5)
    lam = er.spectrum(kappa=50.0, D=7) * 2.0
    offset = rng.standard_normal(7)
    G, N, R, T_max = 4.0, 200, 0.5, 25
    comp = er.compare_with_bound(eigenvalues=lam, offset=offset, clip_norm=G, N=N, R=R, T_max=T_max)
    gap = comp["constants"]["initial_gap"]
    for kind in er.SCHEDULE_KINDS:
        r = comp[kind]
        for T in (1, 7, T_max):
            s = er.schedule_of(kind, T=T, R=R, kappa=comp["constants"]["kappa"])
            ex = er.expected_excess_risk(eigenvalues=lam, offset=offset, eta=1 / lam.max(), sigma=s, clip_norm=G, N=N)
            assert r["exact"][T - 1] == pytest.approx(ex / gap, rel=1e-12)
            assert r["bound"][T - 1] == pytest.approx(_thm41_bound_absolute(lam, offset, s, G, N) / gap, rel=1e-9)
        slack = r["bound"] - r["exact"]
        assert np.all(r["ratio"] >= 1 - 1e-12), (
            f"{kind}: min bound/exact {r['ratio'].min():.6g}, min gap bound - exact {slack.min():.3g} "
            f"at T = {int(np.argmin(slack)) + 1}")
        assert r["exact_min"] <= r["exact_at_T_bound"]
        assert r["T_exact"] == int(np.argmin(r["exact"])) + 1


def test_spectrum_and_schedule_of():
    lam = er.spectrum(kappa=1e4, D=5, M=3.0)
    assert lam.max() == pytest.approx(3.0) and lam.max() / lam.min() == pytest.approx(1e4)
    for kind in er.SCHEDULE_KINDS:
        s = er.schedule_of(kind, T=12, R=0.3927, kappa=20.0)
        assert np.sum(1 / s**2) == pytest.approx(0.3927, rel=1e-12), kind
    with pytest.raises(ValueError, match="kind must be"):
        er.schedule_of("linear", T=3, R=1.0, kappa=2.0)
    with pytest.raises(ValueError, match="kappa must be"):
        er.spectrum(kappa=0.5, D=3)
