"""dpcompanion.theory.bounds.psgd against SymPy expressions written from Hong et al. 2022 (001) Thm 4.8."""

import math

import numpy as np
import pytest
import sympy as sp

from dpcompanion.theory.bounds import gd, psgd

D, mu, N, R, gap, n, sg, G, M = sp.symbols("D mu N R Delta n sigma_g G M", positive=True)
RNG = np.random.default_rng(8)


def test_alpha_g_matches_sympy():
    f = sp.lambdify((D, mu, N, R, gap), D / (2 * mu * N**2 * R * gap))
    for _ in range(30):
        args = [float(10 ** RNG.uniform(-2, 3)) for _ in range(5)]
        assert psgd.alpha_g_of(D=args[0], mu=args[1], N=args[2], R=args[3], f_gap=args[4]) == pytest.approx(f(*args), rel=1e-12)


def test_coefficient_is_R_prime_kappa_alpha_over_G2():
    # Proof D.3: R' kappa alpha / G^2 with alpha taken with the batch size n and budget R'.
    Rp = sp.Symbol("Rp", positive=True)
    expr = Rp * (M / mu) * (D * G**2 / (2 * Rp * M * n**2 * gap)) / G**2
    f = sp.lambdify((D, mu, n, gap), sp.simplify(expr))
    for _ in range(20):
        args = [float(10 ** RNG.uniform(-2, 3)) for _ in range(4)]
        assert psgd.sgd_noise_coefficient(D=args[0], mu=args[1], n=args[2], f_gap=args[3]) == pytest.approx(f(*args), rel=1e-12)


def test_batch_size_and_rescaled_budget():
    assert psgd.batch_size(N=100, R=0.25) == 50
    assert psgd.batch_size(N=2, R=0.01) == 1.0  # max{N sqrt R, 1}
    for NN, RR in ((100.0, 0.3927), (1e4, 1e-3)):
        nn = psgd.batch_size(N=NN, R=RR)
        assert psgd.rescaled_budget(R=RR, n=nn, N=NN) == pytest.approx(1.0)  # R' = R/p^2 = 1 at n = N sqrt R


def test_erub_psgd_is_pgd_bound_plus_sampling_term():
    for _ in range(20):
        T = int(RNG.integers(1, 20))
        sigma = 10 ** RNG.uniform(-1, 1, T)
        kk, aa, Rp, ag, s = 1 + float(RNG.exponential(10)), float(10 ** RNG.uniform(-5, -1)), float(RNG.uniform(0.1, 3)), 0.01, 2.0
        g = 1 - 1 / kk
        ref = g**T + ag * s**2 + Rp * sum(g ** (T - t) * aa * sigma[t - 1] ** 2 for t in range(1, T + 1))
        assert psgd.erub_psgd(sigma=sigma, kappa=kk, alpha=aa, R_prime=Rp, alpha_g=ag, sigma_g=s) == pytest.approx(ref, rel=1e-10)
        assert psgd.erub_psgd(sigma=sigma, kappa=kk, alpha=aa, R_prime=Rp, alpha_g=ag, sigma_g=0.0) == pytest.approx(
            gd.erub(sigma=sigma, kappa=kk, alpha=aa, R=Rp))


@pytest.mark.parametrize("call,param", [
    (lambda: psgd.alpha_g_of(D=1, mu=0, N=1, R=1, f_gap=1), "mu"),
    (lambda: psgd.batch_size(N=-1, R=1), "N"),
    (lambda: psgd.erub_psgd(sigma=[1.0], kappa=2, alpha=0.1, R_prime=1, alpha_g=-1, sigma_g=1), "alpha_g"),
])
def test_validation(call, param):
    with pytest.raises(ValueError, match=param):
        call()
