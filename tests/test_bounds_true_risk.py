"""dpcompanion.theory.bounds.true_risk against SymPy expressions written from Hong et al. 2022 (001) Sec. 4.4."""

import numpy as np
import pytest
import sympy as sp

from dpcompanion.theory.bounds import true_risk

G, N, eta, T = sp.symbols("G N eta T", positive=True)
RNG = np.random.default_rng(10)


def test_stability_constants():
    f = sp.lambdify((G, eta, T, N), G**2 * T * eta / N)
    for _ in range(20):
        a = [float(10 ** RNG.uniform(-1, 1)), float(RNG.uniform(0.01, 2)), float(RNG.integers(1, 100)), float(RNG.integers(2, 1000))]
        assert true_risk.stability_printed(G=a[0], eta=a[1], T=a[2], N=a[3]) == pytest.approx(f(*a))
        assert true_risk.stability_gd(G=a[0], eta=a[1], T=a[2], N=a[3]) == pytest.approx(2 * f(*a))


def test_linear_loss_attains_corrected_constant():
    # f(theta; x) = x theta, neighbours differ in x_1 = +1 / -1: theta_T - theta'_T = -eta T (2/N) exactly
    N, T, eta = 10, 5, 0.1
    diff = eta * T * 2 / N
    assert diff == pytest.approx(true_risk.stability_gd(G=1, eta=eta, T=T, N=N))
    assert diff > true_risk.stability_printed(G=1, eta=eta, T=T, N=N)


def test_validation():
    with pytest.raises(ValueError, match="N"):
        true_risk.stability_gd(G=1, eta=0.1, T=5, N=0)
