"""Tables 1 and 2 of Hong et al. 2022 (FAccT, arXiv 2101.07413), row by row (10 and 13 rows).

Each :class:`Row` carries the printed symbols (LaTeX) and the printed order as a function of ``N, D, R, p``
with every hidden constant 1 (``c = 1``, ``I_{T > T_hat} = 1``, ``R_{eps,delta}`` read as ``R``,
``mu = G = 1``; BBImp's free exponent ``c = 0.1``), for 1-smooth, 1-Lipschitz losses. For the paper's
own (``ours``) GD rows :func:`derived` evaluates what its theorems give (exact minima of
:mod:`dpcompanion.theory.bounds.gd` at ``alpha = D / (2 R N^2)``), for comparing fitted exponents."""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from dpcompanion.theory.bounds import gd
from dpcompanion.core import validate

__all__ = ["Row", "TABLE1", "TABLE2", "row", "evaluate", "derived", "fit_exponent", "KAPPA_DEFAULT"]

KAPPA_DEFAULT = 10.0
_BBIMP_C = 0.1


@dataclasses.dataclass(frozen=True)
class Row:
    key: str  # short id, e.g. "T1-gd-zcdp-dynamic"
    table: int
    algorithm: str
    schedule: str  # LaTeX (Table 1) or the T column (Table 2)
    bound: str  # LaTeX of the printed order
    printed: Callable[..., float]  # printed order, constants = 1: f(N=, D=, R=, p=)
    ours: bool = False
    block: str = ""  # Table 2 block: "baseline", "high-probability", "uniform-stability"


def _ln(x):
    return math.log(x)


TABLE1: tuple[Row, ...] = (
    Row("T1-gd-adv", 1, "*GD+Adv [3]", r"O\left(\frac{\ln(N/\delta)}{R_{\epsilon,\delta}}\right)",
        r"O\left(\frac{D\ln^3N}{NR_{\epsilon,\delta}}\right)", lambda N, D, R, p: D * _ln(N) ** 3 / (N * R)),
    Row("T1-gd-ma", 1, "GD+MA [34]", r"O\left(\frac{T}{R_{\epsilon,\delta}}\right)",
        r"O\left(\frac{D\ln^2N}{N^2R_{\epsilon,\delta}}\right)", lambda N, D, R, p: D * _ln(N) ** 2 / (N**2 * R)),
    Row("T1-gd-ma-adjusted", 1, "GD+MA (adjusted utility) [39]", r"O\left(\frac{T}{R_{\epsilon,\delta}}\right)",
        r"O\left(\min\left\{\frac{\sqrt D}{NR_{\epsilon,\delta}},\frac{D\ln N}{N^2R_{\epsilon,\delta}^2}\right\}\right)",
        lambda N, D, R, p: min(math.sqrt(D) / (N * R), D * _ln(N) / (N**2 * R**2))),
    Row("T1-gd-adv-bbimp", 1, "*GD+Adv+BBImp [7]", r"O\left(\frac{n^2\ln(n/\delta)}{R_{\epsilon,\delta}}\right)",
        r"O_p\left(\frac{D^2\ln^2(1/p)}{R_{\epsilon,\delta}N^{1-c}}\right)",
        lambda N, D, R, p: D**2 * _ln(1 / p) ** 2 / (R * N ** (1 - _BBIMP_C))),
    Row("T1-adam-ma", 1, "Adam+MA [42]", r"O\left(\frac{T}{R_{\epsilon,\delta}}\right)",
        r"O_p\left(\frac{\sqrt D\ln(ND\epsilon/(1-p))}{NR_{\epsilon,\delta}}\right)",
        lambda N, D, R, p: math.sqrt(D) * _ln(N * D / (1 - p)) / (N * R)),
    Row("T1-gd-nonprivate", 1, "GD, Non-Private", "0", r"O\left(\frac{D}{N^2R}\right)",
        lambda N, D, R, p: D / (N**2 * R), ours=True),
    Row("T1-gd-zcdp-static", 1, "GD+zCDP, Static Schedule", r"\frac{T}{R}", r"O\left(\frac{D\ln N}{N^2R}\right)",
        lambda N, D, R, p: D * _ln(N) / (N**2 * R), ours=True),
    Row("T1-gd-zcdp-dynamic", 1, "GD+zCDP, Dynamic Schedule", r"O\left(\frac{\gamma^{(t-T)/2}}{R}\right)",
        r"O\left(\frac{D}{N^2R}\right)", lambda N, D, R, p: D / (N**2 * R), ours=True),
    Row("T1-mom-static", 1, "Momentum+zCDP, Static Schedule", r"\frac{T}{R}",
        r"O\left(\frac{D}{N^2R}(c+\ln N\,\mathbb I_{T>\hat T})\right)", lambda N, D, R, p: D / (N**2 * R) * (1 + _ln(N)), ours=True),
    Row("T1-mom-dynamic", 1, "Momentum+zCDP, Dynamic Schedule", r"O\left(\frac{c_1\gamma^{T+t}+c_2\gamma^{(T-t)/2}}{R}\right)",
        r"O\left(\frac{D}{N^2R}\left(1+\frac{cD}{N^2R}\mathbb I_{T>\hat T}\right)\right)",
        lambda N, D, R, p: D / (N**2 * R) * (1 + D / (N**2 * R)), ours=True),
)

_TLN = r"O(\ln\frac{N^2R}{D})"

TABLE2: tuple[Row, ...] = (
    Row("T2-gd-adv", 2, "GD+Adv [3]", r"O(N^2)", r"O_{1-p}\left(\frac{\sqrt D\ln^2N\ln(1/p)}{p\mu NR_{\epsilon,\delta}}\right)",
        lambda N, D, R, p: math.sqrt(D) * _ln(N) ** 2 * _ln(1 / p) / (p * N * R), block="baseline"),
    Row("T2-svrg-ma", 2, "SVRG+MA [34]", r"O(\ln\frac{N^2R_{\epsilon,\delta}}{D})", r"O\left(\frac{D\ln N}{\mu N^2R_{\epsilon,\delta}}\right)",
        lambda N, D, R, p: D * _ln(N) / (N**2 * R), block="baseline"),
    Row("T2-ssgd-zcdp", 2, "SSGD+zCDP [11]", r"O(\frac{N^2}{16D/R^2+4N})",
        r"O\left(\left(\frac{1}{\sqrt N}+\frac{2\sqrt D}{\sqrt{RN}}\right)\ln N\right)",
        lambda N, D, R, p: (1 / math.sqrt(N) + 2 * math.sqrt(D) / math.sqrt(R * N)) * _ln(N), block="baseline"),
    Row("T2-sgd-ma", 2, "*SGD+MA [2]", r"O(\min\{\frac N8,\frac{N^2R_{\epsilon,\delta}}{32D}\})",
        r"O\left(\max\left\{\frac{\sqrt D}{N\sqrt{R_{\epsilon,\delta}}},\frac{1}{\sqrt N}\right\}\right)",
        lambda N, D, R, p: max(math.sqrt(D) / (N * math.sqrt(R)), 1 / math.sqrt(N)), block="baseline"),
    Row("T2-hp-gd-static", 2, "GD+zCDP, Static Schedule", _TLN,
        r"O_{1-p}\left(\frac{G^2}{\mu N}\left(\sqrt{\frac{D\ln(N)\ln(1/p)}{NR}}+\frac4p\right)\right)",
        lambda N, D, R, p: (math.sqrt(D * _ln(N) * _ln(1 / p) / (N * R)) + 4 / p) / N, ours=True, block="high-probability"),
    Row("T2-hp-gd-dynamic", 2, "GD+zCDP, Dynamic Schedule", _TLN,
        r"O_{1-p}\left(\frac{G^2}{\mu N}\left(\sqrt{\frac{D\ln(1/p)}{NR}}+\frac4p\right)\right)",
        lambda N, D, R, p: (math.sqrt(D * _ln(1 / p) / (N * R)) + 4 / p) / N, ours=True, block="high-probability"),
    Row("T2-hp-mom-static", 2, "Momentum+zCDP, Static Sch.", _TLN,
        r"O_{1-p}\left(\frac{G^2}{\mu N}\left(\sqrt{\frac{D\ln(1/p)}{NR}(c+\ln N\,\mathbb I_{T>\hat T})}+\frac4p\right)\right)",
        lambda N, D, R, p: (math.sqrt(D * _ln(1 / p) / (N * R) * (1 + _ln(N))) + 4 / p) / N, ours=True, block="high-probability"),
    Row("T2-hp-mom-dynamic", 2, "Momentum+zCDP, Dynamic Sch.", _TLN,
        r"O_{1-p}\left(\frac{G^2}{\mu N}\left(\sqrt{\frac{D\ln(1/p)}{NR}}\left(1+\frac{cD}{N^2R}\mathbb I_{T>\hat T}\right)+\frac4p\right)\right)",
        lambda N, D, R, p: (math.sqrt(D * _ln(1 / p) / (N * R)) * (1 + D / (N**2 * R)) + 4 / p) / N, ours=True, block="high-probability"),
    Row("T2-us-gd-nonprivate", 2, "GD, Non-Private", _TLN, r"O\left(\frac{D}{N^2R}\right)",
        lambda N, D, R, p: D / (N**2 * R), ours=True, block="uniform-stability"),
    Row("T2-us-gd-static", 2, "GD+zCDP, Static Schedule", _TLN, r"O\left(\frac{D\ln N}{N^2R}\right)",
        lambda N, D, R, p: D * _ln(N) / (N**2 * R), ours=True, block="uniform-stability"),
    Row("T2-us-gd-dynamic", 2, "GD+zCDP, Dynamic Schedule", _TLN, r"O\left(\frac{D}{N^2R}\right)",
        lambda N, D, R, p: D / (N**2 * R), ours=True, block="uniform-stability"),
    Row("T2-us-mom-static", 2, "Momentum+zCDP, Static Sch.", _TLN,
        r"O\left(\frac{D}{N^2R}(c+\ln N\,\mathbb I_{T>\hat T})\right)", lambda N, D, R, p: D / (N**2 * R) * (1 + _ln(N)),
        ours=True, block="uniform-stability"),
    Row("T2-us-mom-dynamic", 2, "Momentum+zCDP, Dynamic Sch.", _TLN,
        r"O\left(\frac{D}{N^2R}\left(1+\frac{cD}{N^2R}\mathbb I_{T>\hat T}\right)\right)",
        lambda N, D, R, p: D / (N**2 * R) * (1 + D / (N**2 * R)), ours=True, block="uniform-stability"),
)


def row(key: str) -> Row:
    """The row with this key.

    >>> row("T1-gd-zcdp-dynamic").algorithm
    'GD+zCDP, Dynamic Schedule'
    """
    for r in TABLE1 + TABLE2:
        if r.key == key:
            return r
    raise ValueError(f"key must be one of {[r.key for r in TABLE1 + TABLE2]}, got {key!r}")


def evaluate(key: str, *, N: float, D: float, R: float, p: float = 0.05) -> float:
    """The printed order of row ``key`` at ``N, D, R, p`` with all constants 1.

    >>> evaluate("T1-gd-zcdp-static", N=100, D=10, R=1.0) == 10 * math.log(100) / 100**2
    True
    """
    N, D, R = validate.positive("N", N), validate.positive("D", D), validate.positive("R", R)
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    return float(row(key).printed(N, D, R, p))


def derived(key: str, *, N: float, D: float, R: float, p: float = 0.05, kappa: float = KAPPA_DEFAULT) -> float:
    """What the paper's theorems give for one of its own GD rows (1-smooth, 1-Lipschitz,
    ``f(theta_1) - f* = 1``, so ``alpha = D / (2 R N^2)``, curvature ``kappa``):

    - ``T1-gd-nonprivate``: ``gamma^T`` at ``T = ceil(ln(1/alpha)/ln(1/gamma))`` (<= alpha);
    - ``T1-gd-zcdp-static`` / ``-dynamic``: the exact minimum over integer T of the uniform /
      dynamic ERUB (Thm 4.2 / 4.4);
    - ``T2-us-gd-*``: that empirical bound plus the stability term ``2 G^2 eta T / N`` at the
      minimising T, ``eta = 1/M = 1`` (Thm 4.11 + 4.12, factor 2 as corrected in claim H-T4.12);
    - ``T2-hp-gd-static`` / ``-dynamic``: corrected Eq. (15), ``sqrt(2 G^2/mu) sqrt(EER) +
      4 G^2/(p mu N)`` with ``mu = 1/kappa`` and EER the minimum at budget ``R/k``,
      ``k = ceil(log2(1/p))`` repetitions, doubled (Markov).

    >>> derived("T1-gd-zcdp-dynamic", N=1000, D=10, R=1.0) < derived("T1-gd-zcdp-static", N=1000, D=10, R=1.0)
    True
    """
    N, D, R = validate.positive("N", N), validate.positive("D", D), validate.positive("R", R)
    alpha = D / (2 * R * N**2)
    if key == "T1-gd-nonprivate" or key == "T2-us-gd-nonprivate":
        L = -math.log1p(-1 / kappa)
        T = math.ceil(math.log(1 / alpha) / L)
        val = math.exp(-L * T)
        return val + (2 * T / N if key.startswith("T2") else 0.0)
    if key in ("T1-gd-zcdp-static", "T2-us-gd-static"):
        T, val = gd.argmin_uniform(kappa=kappa, alpha=alpha)
        return val + (2 * T / N if key.startswith("T2") else 0.0)
    if key in ("T1-gd-zcdp-dynamic", "T2-us-gd-dynamic"):
        T, val = gd.argmin_dynamic(kappa=kappa, alpha=alpha)
        return val + (2 * T / N if key.startswith("T2") else 0.0)
    if key in ("T2-hp-gd-static", "T2-hp-gd-dynamic"):
        k = max(1, math.ceil(math.log2(1 / p)))
        a_k = alpha * k
        mn = gd.argmin_uniform if key.endswith("static") else gd.argmin_dynamic
        eer = 2 * mn(kappa=kappa, alpha=a_k)[1]
        mu = 1 / kappa
        return math.sqrt(2 / mu) * math.sqrt(eer) + 4 / (p * mu * N)
    raise ValueError(f"no derivation for row {key!r}; derived rows: GD rows of both tables")


def fit_exponent(f: Callable[[float], float], *, N_grid=None) -> float:
    """Least-squares slope of ``log f(N)`` against ``log N`` (default grid: 1e6..1e12).

    >>> round(fit_exponent(lambda N: 3 / N**2), 6)
    -2.0
    """
    Ns = np.logspace(6, 12, 7) if N_grid is None else np.asarray(N_grid, float)
    vals = np.array([f(float(n)) for n in Ns])
    return float(np.polyfit(np.log(Ns), np.log(vals), 1)[0])


def regenerate(table: int, *, D: float, R: float, p: float = 0.05, Ns=(1e3, 1e5), kappa: float = KAPPA_DEFAULT):
    """Table ``table`` (1 or 2) regenerated: header and rows with the algorithm, the printed
    schedule (Table 1) or T (Table 2) and bound as LaTeX (``$...$``), the printed order at each
    N of ``Ns``, its fitted exponent in N and, for the paper's GD rows, the exponent fitted to
    :func:`derived` (else the text "not re-derived").

    >>> head, rows = regenerate(1, D=10, R=1.0, Ns=(1e3,))
    >>> len(rows), len(head) == len(rows[0])
    (10, True)
    """
    if table not in (1, 2):
        raise ValueError(f"table must be 1 or 2, got {table!r}")
    out = []
    for r in TABLE1 if table == 1 else TABLE2:
        fitted = fit_exponent(lambda N: evaluate(r.key, N=N, D=D, R=R, p=p))
        try:
            ours: object = round(fit_exponent(lambda N: derived(r.key, N=N, D=D, R=R, p=p, kappa=kappa)), 3)
        except ValueError:
            ours = "not re-derived"
        vals = [evaluate(r.key, N=n, D=D, R=R, p=p) for n in Ns]
        out.append([r.algorithm, f"${r.schedule}$", f"${r.bound}$", *vals, round(fitted, 3), ours])
    second = "schedule $\\sigma_t^2$" if table == 1 else "T"
    head = ["algorithm", second, "printed bound"] + [f"at N = {n:.0e}" for n in Ns] + [
        "N-exponent of the printed order", "N-exponent derived from the theorems"]
    return head, out
