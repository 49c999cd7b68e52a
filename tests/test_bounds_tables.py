"""dpcompanion.theory.bounds.tables: every printed row against a SymPy expression rewritten from
Tables 1 and 2 of Hong et al. 2022 (001), constants 1; derived rows against brute force."""

import math

import numpy as np
import pytest
import sympy as sp

from dpcompanion.theory.bounds import gd
from dpcompanion.theory.bounds import tables as tb

N, D, R, p = sp.symbols("N D R p", positive=True)
ln = sp.log
REF = {
    "T1-gd-adv": D * ln(N) ** 3 / (N * R),
    "T1-gd-ma": D * ln(N) ** 2 / (N**2 * R),
    "T1-gd-ma-adjusted": sp.Min(sp.sqrt(D) / (N * R), D * ln(N) / (N**2 * R**2)),
    "T1-gd-adv-bbimp": D**2 * ln(1 / p) ** 2 / (R * N ** sp.Rational(9, 10)),
    "T1-adam-ma": sp.sqrt(D) * ln(N * D / (1 - p)) / (N * R),
    "T1-gd-nonprivate": D / (N**2 * R),
    "T1-gd-zcdp-static": D * ln(N) / (N**2 * R),
    "T1-gd-zcdp-dynamic": D / (N**2 * R),
    "T1-mom-static": D / (N**2 * R) * (1 + ln(N)),
    "T1-mom-dynamic": D / (N**2 * R) * (1 + D / (N**2 * R)),
    "T2-gd-adv": sp.sqrt(D) * ln(N) ** 2 * ln(1 / p) / (p * N * R),
    "T2-svrg-ma": D * ln(N) / (N**2 * R),
    "T2-ssgd-zcdp": (1 / sp.sqrt(N) + 2 * sp.sqrt(D) / sp.sqrt(R * N)) * ln(N),
    "T2-sgd-ma": sp.Max(sp.sqrt(D) / (N * sp.sqrt(R)), 1 / sp.sqrt(N)),
    "T2-hp-gd-static": (sp.sqrt(D * ln(N) * ln(1 / p) / (N * R)) + 4 / p) / N,
    "T2-hp-gd-dynamic": (sp.sqrt(D * ln(1 / p) / (N * R)) + 4 / p) / N,
    "T2-hp-mom-static": (sp.sqrt(D * ln(1 / p) / (N * R) * (1 + ln(N))) + 4 / p) / N,
    "T2-hp-mom-dynamic": (sp.sqrt(D * ln(1 / p) / (N * R)) * (1 + D / (N**2 * R)) + 4 / p) / N,
    "T2-us-gd-nonprivate": D / (N**2 * R),
    "T2-us-gd-static": D * ln(N) / (N**2 * R),
    "T2-us-gd-dynamic": D / (N**2 * R),
    "T2-us-mom-static": D / (N**2 * R) * (1 + ln(N)),
    "T2-us-mom-dynamic": D / (N**2 * R) * (1 + D / (N**2 * R)),
}


def test_every_row_has_a_reference():
    assert {r.key for r in tb.TABLE1 + tb.TABLE2} == set(REF)
    assert len(tb.TABLE1) == 10 and len(tb.TABLE2) == 13


@pytest.mark.parametrize("key", sorted(REF))
def test_row_matches_sympy(key):
    f = sp.lambdify((N, D, R, p), REF[key])
    rng = np.random.default_rng(abs(hash(key)) % 2**32)
    for _ in range(10):
        NN, DD, RR, pp = float(10 ** rng.uniform(2, 9)), float(10 ** rng.uniform(0, 3)), float(10 ** rng.uniform(-2, 1)), float(rng.uniform(0.01, 0.5))
        assert tb.evaluate(key, N=NN, D=DD, R=RR, p=pp) == pytest.approx(float(f(NN, DD, RR, pp)), rel=1e-10)


def test_derived_rows_against_brute_force():
    NN, DD, RR = 1e3, 10.0, 0.5
    alpha = DD / (2 * RR * NN**2)
    g = 1 - 1 / tb.KAPPA_DEFAULT
    uni = min(g**T + alpha * tb.KAPPA_DEFAULT * (1 - g**T) * T for T in range(1, 5000))
    dyn = min(g**T + alpha * ((1 - g ** (T / 2)) / (1 - math.sqrt(g))) ** 2 for T in range(1, 5000))
    assert tb.derived("T1-gd-zcdp-static", N=NN, D=DD, R=RR) == pytest.approx(uni, rel=1e-12)
    assert tb.derived("T1-gd-zcdp-dynamic", N=NN, D=DD, R=RR) == pytest.approx(dyn, rel=1e-12)
    T_dyn = gd.argmin_dynamic(kappa=tb.KAPPA_DEFAULT, alpha=alpha)[0]
    assert tb.derived("T2-us-gd-dynamic", N=NN, D=DD, R=RR) == pytest.approx(dyn + 2 * T_dyn / NN, rel=1e-12)
    assert tb.derived("T1-gd-nonprivate", N=NN, D=DD, R=RR) <= alpha
    with pytest.raises(ValueError, match="no derivation"):
        tb.derived("T1-gd-adv", N=NN, D=DD, R=RR)


def test_fit_exponent_and_regenerate():
    assert tb.fit_exponent(lambda x: 5 * x**-1.5) == pytest.approx(-1.5)
    head, rows = tb.regenerate(2, D=10, R=0.3927, Ns=(1e3, 1e4))
    assert len(rows) == 13 and all(len(r) == len(head) for r in rows)
    assert all(r[1].startswith("$") and r[2].startswith("$") for r in rows)
    with pytest.raises(ValueError, match="table"):
        tb.regenerate(3, D=1, R=1)
    with pytest.raises(ValueError, match="key"):
        tb.row("nope")
