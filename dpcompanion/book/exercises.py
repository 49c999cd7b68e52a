"""Exercises for the theory chapters, with folded solutions whose numbers the library computes.

Each exercise states its givens, asks for named quantities and shows a worked solution in which
every number is filled in from :attr:`Exercise.answers` (library calls, one source of the formulas).
``tests/test_exercises.py`` recomputes each answer from the paper's formula written out again in the
test, and checks that the built page shows it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpcompanion.theory import accounting, schedules
from dpcompanion.theory.bounds import adp, gd, momentum, psgd


@dataclasses.dataclass(frozen=True)
class Exercise:
    """One exercise: ``question`` and ``solution`` are Markdown templates filled with ``givens`` and the
    values ``answers(**givens)`` returns (format specs such as ``{R:.4f}`` allowed)."""

    id: str  # "3.1": chapter and number, as the page numbers it
    page: str  # the notebook that shows it
    title: str
    givens: dict[str, Any]
    question: str
    solution: str
    answers: Callable[..., dict[str, float]]

    def values(self) -> dict[str, Any]:
        r"""The givens and the answers, each with its LaTeX form (``delta_tex``: ``10^{-8}``; an answer's to
        4 significant digits, ``q1_tex``: ``5.726\cdot 10^{-6}``), never Python's ``5.7264e-06`` in a formula."""
        answers = self.answers(**self.givens)
        return {**self.givens, **{f"{k}_tex": tex_number(v) for k, v in self.givens.items()},
                **answers, **{f"{k}_tex": tex_number(v, digits=4) for k, v in answers.items()}}

    def markdown(self) -> str:
        from dpcompanion.book.report import folded

        v = self.values()
        return "\n".join([f"**Exercise {self.id}** ({self.title}). " + self.question.strip().format(**v), "",
                          folded(f"Solution to Exercise {self.id}", self.solution.strip().format(**v)), ""])


EXERCISES: list[Exercise] = []


def tex_number(x: Any, *, digits: int = 7) -> str:
    r"""A number as LaTeX: very small or large ones as ``m\cdot 10^{n}`` (``10^{n}`` for a power of ten) with
    at most ``digits`` significant digits, others as ``:g`` prints them.

    >>> tex_number(1e-8), tex_number(4.0), tex_number(60000), tex_number(2.5e-7), tex_number(5.72641e-6, digits=4)
    ('10^{-8}', '4', '60000', '2.5\\cdot 10^{-7}', '5.726\\cdot 10^{-6}')
    """
    if not isinstance(x, (int, float)) or isinstance(x, bool) or x == 0 or 1e-3 <= abs(x) < 1e6:
        return f"{x:.{digits}g}" if isinstance(x, (int, float)) else str(x)
    m, e = f"{x:.{digits - 1}e}".split("e")
    m = m.rstrip("0").rstrip(".")
    return (f"10^{{{int(e)}}}" if m == "1" else f"{m}\\cdot 10^{{{int(e)}}}")


def exercise(**kwargs: Any) -> Exercise:
    ex = Exercise(**kwargs)
    if any(e.id == ex.id for e in EXERCISES):
        raise ValueError(f"exercise {ex.id} declared twice")
    EXERCISES.append(ex)
    return ex


def _budget(epsilon: float, delta: float) -> dict[str, float]:
    rho = accounting.dp_to_zcdp(epsilon=epsilon, delta=delta)
    return {"L": math.log(1 / delta), "rho": rho, "R": accounting.R_from_rho(rho=rho),
            "eps_back": accounting.zcdp_to_dp(rho=rho, delta=delta)}


exercise(id="3.1", page="h-sec-3", title="from a DP budget to the paper's R", givens={"epsilon": 4.0, "delta": 1e-8},
         question=r"""
A practitioner wants $(\varepsilon,\delta)=({epsilon_tex},{delta_tex})$-DP. Using Lemma C.3, find the largest
$\rho$ whose conversion stays within $\varepsilon$, and the budget $R$ of Thm 3.1 that it allows.
""", solution=r"""
Write $L=\ln(1/\delta)={L:.4f}$ and $x=\sqrt\rho$. Lemma C.3 asks $x^2+2\sqrt L\,x\le\varepsilon$; the
quadratic's non-negative root gives
$\rho=(\sqrt{{L+\varepsilon}}-\sqrt L)^2={rho:.5f}$. Thm 3.1 releases an $\frac R2$-zCDP iterate, so
$R=2\rho={R:.4f}$. Check: $\rho+2\sqrt{{\rho L}}={eps_back:.4f}=\varepsilon$.
""", answers=_budget)


def _uniform(epsilon: float, delta: float, T: int) -> dict[str, float]:
    R = accounting.R_zcdp(epsilon=epsilon, delta=delta)
    sigma = schedules.uniform(T=T, R=R)
    return {"R": R, "sigma": float(sigma[0]), "spent": accounting.spent_R(sigma=sigma)}


exercise(id="3.2", page="h-sec-3", title="the uniform schedule's noise", givens={"epsilon": 4.0, "delta": 1e-8, "T": 100},
         question=r"""
With the budget of Exercise 3.1 spread evenly over $T={T}$ steps, what noise multiplier $\sigma_t$ does
each step use, and how much of $R$ does the run spend?
""", solution=r"""
Thm 3.1 needs $\sum_t\sigma_t^{{-2}}\le R={R:.4f}$. Equal shares give $T/\sigma^2=R$, so
$\sigma=\sqrt{{T/R}}={sigma:.4f}$, and the run spends $\sum_t\sigma_t^{{-2}}={spent:.4f}$: all of $R$, none
left over.
""", answers=_uniform)


def _fixed(sigma: float, T: int, delta: float) -> dict[str, float]:
    R = accounting.spent_R(sigma=np.full(T, sigma))
    rho = accounting.rho_from_R(R=R)
    return {"R": R, "rho": rho, "eps": accounting.zcdp_to_dp(rho=rho, delta=delta)}


exercise(id="3.3", page="h-sec-3", title="what a fixed noise level costs", givens={"sigma": 10.0, "T": 200, "delta": 1e-5},
         question=r"""
A run adds noise with multiplier $\sigma={sigma:g}$ at each of $T={T}$ steps. What zCDP parameter does
Thm 3.1 give, and which $\varepsilon$ at $\delta={delta_tex}$ does Lemma C.3 turn it into?
""", solution=r"""
The run spends $R=\sum_t\sigma_t^{{-2}}=T/\sigma^2={R:.4f}$, so it is $\rho=R/2={rho:.4f}$-zCDP
(Thm 3.1), and Lemma C.3 gives $\varepsilon=\rho+2\sqrt{{\rho\ln(1/\delta)}}={eps:.4f}$.
""", answers=_fixed)


def _lemma43(q: tuple[float, ...], R: float) -> dict[str, float]:
    s2, minimum = gd.optimal_schedule(q=list(q), R=R)
    uniform = R * float(np.sum(np.asarray(q) * schedules.uniform(T=len(q), R=R) ** 2))
    return {**{f"s{i}": float(v) for i, v in enumerate(s2, 1)}, "minimum": minimum, "uniform": uniform,
            "ratio": uniform / minimum}


exercise(id="4.1", page="h-sec-4-1", title="Lemma 4.3 by hand", givens={"q": (1.0, 4.0, 9.0), "R": 2.0},
         question=r"""
Three steps have influences $q=({q[0]:g},{q[1]:g},{q[2]:g})$ and the budget is $R={R:g}$. Find the schedule
of Lemma 4.3, the minimum of $R\sum_tq_t\sigma_t^2$, and how much larger the uniform schedule makes it.
""", solution=r"""
Lemma 4.3 gives $\sigma_t^2=\frac1R\sum_i\sqrt{{q_i/q_t}}$ with $\sum_i\sqrt{{q_i}}=1+2+3=6$:
$\sigma_1^2={s1:g}$, $\sigma_2^2={s2:g}$, $\sigma_3^2={s3:g}$ (check: $\sum_t\sigma_t^{{-2}}=R$). The
minimum is $(\sum_t\sqrt{{q_t}})^2={minimum:g}$. The uniform schedule $\sigma_t^2=T/R$ gives
$T\sum_tq_t={uniform:g}$, a factor ${ratio:.4f}$ larger: Eq. 26's $T\sum_tq_t-(\sum_t\sqrt{{q_t}})^2=T^2\,
\mathrm{{Var}}_t[\sqrt{{q_t}}]$, zero only when all influences are equal.
""", answers=_lemma43)


def _influence(kappa: float, alpha: float, T: int) -> dict[str, float]:
    q = gd.influence(T=T, kappa=kappa, alpha=alpha)
    return {"gamma": 1 - 1 / kappa, "q1": float(q[0]), "qT": float(q[-1]), "ratio": float(q[-1] / q[0])}


exercise(id="4.2", page="h-sec-4-1", title="which steps matter", givens={"kappa": 10.0, "alpha": 1e-3, "T": 50},
         question=r"""
For $\kappa={kappa:g}$, $\alpha={alpha_tex}$ and $T={T}$, compute the influences $q_1$ and $q_T$ of Thm 4.1.
How many times more does the last step's noise weigh than the first's?
""", solution=r"""
With $\gamma=1-1/\kappa={gamma:g}$, $q_t=\gamma^{{T-t}}\alpha$: $q_1=\gamma^{{T-1}}\alpha={q1_tex}$ and
$q_T=\alpha={qT:g}$, a ratio $\gamma^{{-(T-1)}}={ratio:.2f}$. Late noise is hardly contracted before the
end, so Lemma 4.3 gives late steps less noise: $\sigma_t^2\propto\gamma^{{t/2}}$ decreases in $t$.
""", answers=_influence)


def _horizons(kappa: float, alpha: float) -> dict[str, float]:
    Tu, Eu = gd.argmin_uniform(kappa=kappa, alpha=alpha)
    Td, Ed = gd.argmin_dynamic(kappa=kappa, alpha=alpha)
    out = {"T24": gd.t_uniform(kappa=kappa, alpha=alpha), "E25": gd.erub_uniform_eq25(kappa=kappa, alpha=alpha),
            "T27": gd.t_dynamic(kappa=kappa, alpha=alpha), "Tst": gd.t_dynamic_statement(kappa=kappa, alpha=alpha),
            "Emin": gd.erub_dynamic_min(kappa=kappa, alpha=alpha), "Tu": Tu, "Eu": Eu, "Td": Td, "Ed": Ed,
            "Est": gd.erub_dynamic(T=math.ceil(gd.t_dynamic_statement(kappa=kappa, alpha=alpha)), kappa=kappa, alpha=alpha)}
    out["st_ratio"] = out["Tst"] / out["T27"]
    out["st_excess"] = out["Est"] / out["Emin"]
    return out


exercise(id="4.3", page="h-sec-4-1", title="the optimal horizons", givens={"kappa": 10.0, "alpha": 1e-3},
         question=r"""
For $\kappa={kappa:g}$ and $\alpha={alpha_tex}$, evaluate the uniform horizon of Eq. 24 and its bound (Eq. 25),
the dynamic horizon of Eq. 27 and the minimum of $\mathrm{{ERUB}}^{{dyn}}$, and compare with the horizon
printed in the statement of Thm 4.4. Which integer $T$ minimises each bound?
""", solution=r"""
$\ln(1/\gamma)=-\ln(1-1/\kappa)$. Eq. 24 gives $T={T24:.3f}$ and Eq. 25 the bound ${E25:.4f}$; the best
integer horizon of the uniform bound is $T={Tu}$ (bound ${Eu:.4f}$). Eq. 27 gives
$T=2\log_\gamma\frac{{\alpha}}{{\alpha+(1-\sqrt\gamma)^2}}={T27:.3f}$ and the minimum $A/(A+1)={Emin:.4f}$
with $A=\alpha(1-\sqrt\gamma)^{{-2}}$; the best integer horizon is $T={Td}$ (bound ${Ed:.4f}$). The
statement's $2\kappa\ln(1+\frac1{{\kappa\alpha}})={Tst:.3f}$ is {st_ratio:.1f} times Eq. 27's, and the bound at
the rounded-up $T$ is ${Est:.4f}$, {st_excess:.1f} times the minimum: the erratum on this page.
""", answers=_horizons)


def _eta(beta: float, gamma: float) -> dict[str, float]:
    e = momentum.eta0_max(beta=beta, gamma=gamma)
    return {"eta0": e, "zeta_half": momentum.zeta(eta0=e / 2, beta=beta, gamma=gamma),
            "zeta_printed": momentum.zeta(eta0=e, beta=beta, form="statement"), "T_hat": momentum.T_hat(beta=beta, gamma=gamma)}


exercise(id="4.4", page="h-sec-4-2", title="the admissible step size", givens={"beta": 0.9, "gamma": 0.99},
         question=r"""
For momentum $\beta={beta:g}$ and $\gamma={gamma:g}$, find the largest $\eta_0$ of Thm 4.5, the coefficient
$\zeta$ of the proof at half of it, the printed $\zeta$ at the largest $\eta_0$, and the switch point
$\hat T$ of Lemma C.7.
""", solution=r"""
The proof's $\zeta(\eta_0)=1-\frac{{\eta_0}}4-\frac{{\beta\gamma\eta_0^2}}{{(\gamma-\beta)^2(1-\beta)^3}}$ is a
downward parabola in $\eta_0$; its positive root is
$8\,(\sqrt{{1+64\beta\gamma(\gamma-\beta)^{{-2}}(1-\beta)^{{-3}}}}+1)^{{-1}}={eta0:.6f}$, the bound of
Thm 4.5. At half of it $\zeta={zeta_half:.4f}>0$. The statement's form
$1-\frac{{\eta_0^2}}{{\beta(1-\beta)^3}}-\frac{{\eta_0}}4$ at the largest $\eta_0$ is ${zeta_printed:.6f}$,
not zero: where the proof has $\beta\gamma(\gamma-\beta)^{{-2}}$ the statement prints $1/\beta$. The switch point, the last $t$ with
$\gamma^{{t-1}}\ge(1-\beta)/(1-\beta^t)$, is $\hat T={T_hat}$.
""", answers=_eta)


def _batch(N: int, epsilon: float, delta: float) -> dict[str, float]:
    R = accounting.R_zcdp(epsilon=epsilon, delta=delta)
    n = psgd.batch_size(N=N, R=R)
    return {"R": R, "n": n, "p": n / N, "R_prime": psgd.rescaled_budget(R=R, n=n, N=N)}


exercise(id="4.5", page="h-sec-4-3", title="the batch size of Thm 4.8", givens={"N": 60000, "epsilon": 4.0, "delta": 1e-8},
         question=r"""
With $N={N}$ examples and the budget of $(\varepsilon,\delta)=({epsilon_tex},{delta_tex})$ (Exercise 3.1), which
batch size does Thm 4.8 assume, and what budget $R'$ does the subsampled run then get?
""", solution=r"""
$R={R:.4f}$ and Thm 4.8 takes $n=\max\{{N\sqrt R,1\}}={n:.1f}$, a sampling rate $p=n/N={p:.4f}$. Sec. 4.3
rescales the budget as $R'=R/p^2=N^2R/n^2={R_prime:.4f}$: with this batch size, exactly 1.
""", answers=_batch)


def _wu(a: float, c: float, T: int) -> dict[str, float]:
    b = adp.b_poly(a=a, c=c, T=T)
    return {"M_dp": adp.M_dp(b=b), "M_adp": adp.M_adp(b=b), "ratio": adp.M_ratio(b=b)}


exercise(id="W.1", page="w-theory", title="what adapting the noise gains", givens={"a": 20.0, "c": 1.0, "T": 1000},
         question=r"""
With step-size denominators $b_t=\sqrt{{a+ct}}$, $a={a:g}$, $c={c:g}$, over $T={T}$ steps, compute
$M_{{dp}}=T\sum_tb_t^{{-2}}$, $M_{{adp}}=(\sum_tb_t^{{-1}})^2$ and their ratio (W Remark 4.1).
""", solution=r"""
$M_{{dp}}={M_dp:.2f}$ and $M_{{adp}}={M_adp:.2f}$, a ratio ${ratio:.4f}$. Cauchy-Schwarz on
$(1,\dots,1)$ and $(b_t^{{-1}})$ gives $(\sum_tb_t^{{-1}})^2\le T\sum_tb_t^{{-2}}$, so the ratio is at least 1,
with equality only for a constant $b_t$: ADP-SGD's term of the bound is never larger than DP-SGD's.
""", answers=_wu)


def exercises_of(page: str) -> list[Exercise]:
    return [e for e in EXERCISES if e.page == page]


def show_exercises(page: str) -> None:
    """Display (IPython) the exercises of a theory page (the page's own Markdown cell heads them)."""
    from IPython.display import Markdown, display

    exs = exercises_of(page)
    if not exs:
        raise ValueError(f"no exercises for page {page!r}; pages with exercises: {sorted({e.page for e in EXERCISES})}")
    display(Markdown("\n".join(e.markdown() for e in exs)))
