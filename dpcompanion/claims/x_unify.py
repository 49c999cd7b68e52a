"""Registry entries: the unification of Hong et al.'s Lemma 4.3 and Wu et al.'s
Remark 4.1 as one Cauchy-Schwarz allocation (SPEC X-UNIFY).

Dictionary (derived in :func:`_map`): in ADP-SGD step t adds noise ``alpha_t c_t`` with one
shared ``c_t ~ N(0, sigma^2 I)``, so step t's noise variance (in gradient units) is
``s_t^2 = alpha_t^2 sigma^2`` and its privacy cost is ``1/s_t^2`` up to a constant; Thm 4.1
fixes ``sum_t 1/s_t^2 = (1/sigma^2) sum_t 1/alpha_t^2`` (Hong's budget R). Then Wu's utility
factor is ``M({alpha},{b}) = R sum_t q_t s_t^2`` with ``q_t = 1/b_t^2 = eta_t^2/eta^2``:
Hong's objective with influence ``q_t`` proportional to ``eta_t^2``.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from dpcompanion.theory import schedules
from dpcompanion.theory.bounds import adp
from dpcompanion.claims.registry import checked, claim, verified_by_margins

T_SYM = 4
V = ("001", "002")


@claim("X-UNIFY.cs", method="sympy", versions=V,
       source="Hong et al. (FAccT) Lemma 4.3 and Wu et al. Remark 4.1",
       mutant='the Cauchy-Schwarz remainder scaled by 101/100')
def _cs(*, mutant=False):
    r"""Both optimisations are one Cauchy-Schwarz (Lagrange) identity: $(\sum_t q_t s_t^2)(\sum_t s_t^{-2}) -
    (\sum_t\sqrt{q_t})^2 = \sum_{u<t}(\sqrt{q_u}\,s_u/s_t-\sqrt{q_t}\,s_t/s_u)^2\ge0$, zero iff $s_t^2\propto
    q_t^{-1/2}$.
    """
    q = sp.symbols(f"q1:{T_SYM + 1}", positive=True)
    s = sp.symbols(f"s1:{T_SYM + 1}", positive=True)
    lhs = sum(qi * si**2 for qi, si in zip(q, s)) * sum(1 / si**2 for si in s) - sum(sp.sqrt(qi) for qi in q) ** 2
    rhs = sum(
        (sp.sqrt(q[u]) * s[u] / s[t] - sp.sqrt(q[t]) * s[t] / s[u]) ** 2 for u in range(T_SYM) for t in range(u + 1, T_SYM)
    )
    return checked({T_SYM: sp.simplify(sp.expand(lhs - rhs * (sp.Rational(101, 100) if mutant else 1)))})


@claim("X-UNIFY.map", method="sympy", versions=V,
       source="Wu et al. Thm 4.1, Thm 4.2; Hong et al. (FAccT) Thm 4.1, Lemma 4.3",
       mutant='q_t = 1/b_t (not squared)')
def _map(*, mutant=False):
    r"""With $s_t^2=\alpha_t^2\sigma^2$ (step t's noise variance), $R=\sum_t s_t^{-2}$ (Thm 4.1 fixes it) and
    $q_t=b_t^{-2}=\eta_t^2/\eta^2$: $M(\{\alpha\},\{b\}) = R\sum_t q_t s_t^2$ identically, for any $\sigma$.
    """
    a = sp.symbols(f"alpha1:{T_SYM + 1}", positive=True)
    b = sp.symbols(f"b1:{T_SYM + 1}", positive=True)
    sig = sp.Symbol("sigma", positive=True)
    s2 = [ai**2 * sig**2 for ai in a]
    R = sum(1 / x for x in s2)
    q = [1 / bi ** (1 if mutant else 2) for bi in b]
    M = sum((ai / bi) ** 2 for ai, bi in zip(a, b)) * sum(1 / ai**2 for ai in a)
    return checked({T_SYM: sp.simplify(R * sum(qi * x for qi, x in zip(q, s2)) - M)})


@claim("X-UNIFY.rule", method="sympy", versions=V,
       source="Hong et al. (FAccT) Lemma 4.3 / Wu et al. Remark 4.1",
       mutant='q_t = 1/b_t (not squared)')
def _rule(*, mutant=False):
    r"""Hong's optimal $s_t^2=\frac1R\sum_i\sqrt{q_i/q_t}$ with $q_t=b_t^{-2}$ is $s_t^2\propto b_t$, i.e. Wu's
    $\alpha_t^2=b_t$ (up to the shared scale), and its value $(\sum_t\sqrt{q_t})^2=(\sum_t b_t^{-1})^2=M_{adp}$.
    """
    b = sp.symbols(f"b1:{T_SYM + 1}", positive=True)
    R = sp.Symbol("R", positive=True)
    q = [1 / bi ** (1 if mutant else 2) for bi in b]
    s2 = [sum(sp.sqrt(qi) for qi in q) / (R * sp.sqrt(qt)) for qt in q]
    ratios = [sp.simplify(s2[t] / b[t] - s2[0] / b[0]) for t in range(T_SYM)]
    val = sp.simplify(sum(sp.sqrt(qi) for qi in q) ** 2 - sum(1 / bi for bi in b) ** 2)
    return checked({T_SYM: sum(sp.Abs(r) for r in ratios) + sp.Abs(val)})


@claim("X-UNIFY.spec", method="sympy", versions=V,
       source="our unification (X-UNIFY): W's alpha_t^2 = b_t read as H's rule with q_t = eta_t^2",
       mutant='the second influence c + q_t (a shift) in place of c q_t (a rescaling)')
def _spec(*, mutant=False):
    r"""The identification $q_t=\eta_t^2$ is right up to a constant factor ($\eta_t=\eta/b_t$, $q_t=\eta^2
    b_t^{-2}$), which Lemma 4.3's schedule ignores (it depends on $q$ only through ratios); the discount
    $\gamma^{T-t}$ of Hong's $q_t$ has no counterpart in Wu's min-gradient-norm bound.
    """
    b = sp.symbols(f"b1:{T_SYM + 1}", positive=True)
    eta, R, c = sp.symbols("eta R c", positive=True)
    q1 = [eta**2 / bi**2 for bi in b]
    q2 = [c + x if mutant else c * x for x in q1]
    sch = lambda q: [sum(sp.sqrt(qi) for qi in q) / (R * sp.sqrt(qt)) for qt in q]  # noqa: E731
    return checked({T_SYM: sum(sp.Abs(sp.cancel(x - y)) for x, y in zip(sch(q1), sch(q2)))})


@claim("X-UNIFY.numeric", method="numeric", versions=V,
       source="dpcompanion.theory.schedules.adp vs dpcompanion.theory.schedules.optimal",
       mutant='the ADP schedule compared with the optimum for q_t = 1/b_t (not squared)')
def _numeric(*, mutant=False):
    r"""The library's ADP-SGD schedule (W's $\alpha_t^2=b_t$ in Hong's units) equals Lemma 4.3's optimal schedule
    for $q_t=\eta_t^2$, and attains $R\sum_t q_t s_t^2 = M_{adp}$ for $\eta=1$.
    """
    margins, pts = [], []
    for T, a, c, R in ((10, 20.0, 1.0, 1.0), (500, 20.0, 1.0, 0.39), (2000, 1.0, 0.1, 5.0), (11700, 20.0, 1.0, 2.0)):
        b = adp.b_poly(a=a, c=c, T=T)
        s_adp = schedules.adp(T=T, R=R, a=a, c=c)
        s_opt = schedules.optimal(q=(1.0 / b) ** (1 if mutant else 2), R=R)
        val = R * float(np.sum((1.0 / b) ** 2 * s_adp**2))
        rel = max(float(np.max(np.abs(s_adp / s_opt - 1))), abs(val / adp.M_adp(b=b) - 1))
        margins.append(1e-9 - rel)
        pts.append({"T": T, "a": a, "c": c, "R": R, "max_rel_diff": rel})
    return verified_by_margins(margins, points=pts, domain="4 (T, a, c, R) settings incl. W's T = 11700, b_t = sqrt(20 + t)")
