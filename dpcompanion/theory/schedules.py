"""Noise schedules: per-step noise multipliers sigma_1..sigma_T that spend a budget exactly.

Every function returns a float64 array ``sigma`` (length T) with ``sum_t 1/sigma_t^2 = R`` to
floating-point accuracy (SPEC section 5); ``R = 2 rho`` is Hong et al.'s budget
(:mod:`dpcompanion.theory.accounting`). A schedule is a set of log-weights ``c_t`` with step cost
``1/sigma_t^2 = R softmax(c)_t``: in logs, T up to 1e5 and kappa up to 1e8 stay stable, and a
schedule beyond float64 raises ``ValueError`` saying what would work (never inf, 0 or NaN).

Influence-based schedules use Hong et al. (FAccT 2022, arXiv 2101.07413) Lemma 4.3: the minimiser of
``sum_t q_t sigma_t^2`` subject to ``sum_t 1/sigma_t^2 = R`` is ``sigma_t^2 = (1/R) sum_i sqrt(q_i / q_t)``,
i.e. ``c_t = ln(q_t)/2``.

**Warnings** for schedules that are budget-exact but useless in practice (the H-X-EER finding): Hong et al. 2022 (FAccT, arXiv 2101.07413) Thm 4.4's schedule, ``sigma_t^2 ∝ gamma^{-(T-t)/2}``, spans
``max sigma / min sigma = gamma^{-(T-1)/4}``: astronomically large when kappa is near 1 or T is long.
Thm 4.1's bound shrugs this off (a contraction of ``1 - eta mu`` per step wipes out any displacement),
but with per-sample clipping the first step's displacement ``lr * clip_norm * sigma_1 * sqrt(D) / N`` is
never undone. :func:`schedule_warnings` flags such schedules from the schedule alone, before training."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import numpy as np
from scipy.special import logsumexp

from dpcompanion.core import validate

__all__ = ["KINDS", "KIND_TABLE", "Kind", "Param", "kind", "kinds_markdown", "kinds_help", "make", "fit_within",
           "uniform", "optimal", "gd_dynamic", "exponential", "step_decay", "momentum_dynamic", "momentum_T_hat",
           "expinfl", "momexpinfl", "adp", "log_influence", "MAX_SPAN", "MAX_SIGMA", "schedule_warnings",
           "schedule_span"]

# Largest |ln| of a float64 we let sigma^2 or 1/sigma^2 reach (float max is e^709.78).
_LOG_LIMIT = 700.0


def _log_gamma(kappa: float, eta0: float = 1.0) -> float:
    """ln(gamma) for gamma = 1 - eta0/kappa, accurate for large kappa; -inf when gamma = 0."""
    x = eta0 / kappa
    return math.log1p(-x) if x < 1 else -math.inf


def _from_log_weights(c: np.ndarray, R: float, what: str, hint: str) -> np.ndarray:
    """sigma_t with 1/sigma_t^2 = R softmax(c)_t; ValueError if out of float64 range."""
    c = np.asarray(c, dtype=np.float64)
    if c.ndim != 1 or c.size == 0 or np.isnan(c).any() or np.isposinf(c).any():
        raise ValueError(f"{what}: the schedule's log-weights are not finite; {hint}")
    if np.isneginf(c).any():
        k = int(np.argmax(np.isneginf(c))) + 1
        raise ValueError(f"{what}: step {k} gets no budget (infinite noise); {hint}")
    log_sigma2 = logsumexp(c) - c - math.log(R)
    lo, hi = float(log_sigma2.min()), float(log_sigma2.max())
    if hi > _LOG_LIMIT or lo < -_LOG_LIMIT:
        raise ValueError(
            f"{what}: sigma^2 would range over e^{lo:.0f}..e^{hi:.0f}, beyond float64 "
            f"(|ln sigma^2| <= {_LOG_LIMIT:.0f}); {hint}"
        )
    return fit_within(np.exp(0.5 * log_sigma2), R)


def fit_within(sigma: np.ndarray, R: float, *, sampling_rate: float = 1.0) -> np.ndarray:
    """``sigma`` scaled up by a few ulps if needed so that the step costs ``p^2/sigma_t^2``, added
    one by one in float64 as a ledger adds them, total at most ``R``.

    >>> s = fit_within(np.full(3, (3 / 0.3927) ** 0.5), 0.3927)
    >>> bool(np.cumsum(1 / s**2)[-1] <= 0.3927)
    True
    """
    p2 = float(sampling_rate) * float(sampling_rate)
    out = np.asarray(sigma, dtype=np.float64)
    for k in range(64):
        total = float(np.cumsum(p2 / out**2)[-1])
        if total <= R:
            return out
        out = out * (math.sqrt(total / R) * (1.0 + 2.0**-52 * 2 ** min(k, 40)))
    raise ValueError(f"cannot fit the schedule within R = {R!r}")  # pragma: no cover


def uniform(*, T: int, R: float) -> np.ndarray:
    """Uniform schedule ``sigma_t^2 = T / R`` (H Thm 4.2).

    >>> uniform(T=4, R=1.0)
    array([2., 2., 2., 2.])
    """
    T = validate.steps(T)
    R = validate.positive("R", R)
    return _from_log_weights(np.zeros(T), R, f"uniform with T={T}, R={R}", "use a smaller T or a larger R")


def optimal(*, q, R: float) -> np.ndarray:
    """Optimal schedule for influences ``q_t > 0`` (H Lemma 4.3, Eq. 10):
    ``sigma_t^2 = (1/R) sum_i sqrt(q_i / q_t)``. ``T = len(q)``.

    >>> s = optimal(q=[1.0, 4.0], R=1.0)
    >>> s**2
    array([3. , 1.5])
    """
    R = validate.positive("R", R)
    qa = validate.positive_array("q", q)
    return _from_log_weights(0.5 * np.log(qa), R, f"optimal with T={qa.size}", "the influences span too wide a range")


def gd_dynamic(*, T: int, R: float, kappa: float) -> np.ndarray:
    """GD dynamic schedule, H Thm 4.4 (influence ``q_t = alpha gamma^{T-t}``, Thm 4.1):

        sigma_t^2 = (1/R) (sqrt((1/gamma)^T) - 1) / (1 - sqrt(gamma)) sqrt(gamma^t),  gamma = 1 - 1/kappa,

    evaluated as Lemma 4.3 in logs. ``kappa = 1`` (gamma = 0) is only allowed with T = 1.

    >>> s = gd_dynamic(T=3, R=1.0, kappa=2.0)   # gamma = 1/2
    >>> bool(abs((1 / s**2).sum() - 1.0) < 1e-12), bool(s[0] > s[1] > s[2])
    (True, True)
    """
    T = validate.steps(T)
    R = validate.positive("R", R)
    kappa = validate.kappa(kappa)
    return _from_log_weights(
        0.5 * log_influence("gd-dynamic", T=T, kappa=kappa),
        R,
        f"gd-dynamic with T={T}, kappa={kappa:g}",
        _gd_hint(kappa),
    )


def _gd_hint(kappa: float) -> str:
    lg = _log_gamma(kappa)
    if not math.isfinite(lg):
        return "kappa = 1 (gamma = 0) only allows T = 1; use kappa > 1"
    t_max = 1 + int(1300.0 / -lg)
    return f"the noise ratio grows like gamma^(-T/2): use T <= {t_max} for this kappa, or a larger kappa"


def exponential(*, T: int, R: float, rate: float) -> np.ndarray:
    """Exponential decay ``sigma_t = sigma_0 exp(-rate t)`` (Yu et al. 2019; H, the ICLR submission, App. D),
    budget-exact. ``rate < 0`` grows, 0 is uniform.

    >>> s = exponential(T=3, R=1.0, rate=0.5)
    >>> bool(np.allclose(s[1:] / s[:-1], np.exp(-0.5))), round(float((1 / s**2).sum()), 12)
    (True, 1.0)
    """
    T = validate.steps(T)
    R = validate.positive("R", R)
    rate = validate.number("rate", rate, allowed="a finite number")
    t = np.arange(1, T + 1, dtype=np.float64)
    return _from_log_weights(
        2.0 * rate * t, R, f"exp with T={T}, rate={rate:g}", "use a smaller |rate| or a smaller T"
    )


def step_decay(*, T: int, R: float, drop: float = 0.5, period: int | None = None) -> np.ndarray:
    """Step decay ``sigma_t = sigma_0 drop^floor((t - 1) / period)``, budget-exact; default period ``ceil(T / 4)``.

    >>> s = step_decay(T=4, R=1.0, drop=0.5, period=2)
    >>> s / s[0]
    array([1. , 1. , 0.5, 0.5])
    """
    T = validate.steps(T)
    R = validate.positive("R", R)
    drop = validate.number("drop", drop, lo=0.0, allowed="finite and > 0")
    if period is None:
        period = max(1, math.ceil(T / 4))
    period = validate.integer("period", period)
    k = np.arange(T) // int(period)
    return _from_log_weights(
        -2.0 * math.log(drop) * k.astype(np.float64),
        R,
        f"step with T={T}, drop={drop:g}, period={period}",
        "use a drop factor closer to 1 or a longer period",
    )


def momentum_T_hat(*, T: int, kappa: float, beta: float, eta0: float = 1.0) -> int:
    """``T_hat = max t <= T s.t. gamma^(t-1) >= (1 - beta)/(1 - beta^t)`` (H Thm 4.6/4.7, Lemma C.7),
    with ``gamma = 1 - eta0/kappa`` (H Thm 4.5). t = 1 always qualifies.

    >>> momentum_T_hat(T=1000, kappa=100.0, beta=0.9)   # gamma = 0.99: gamma^229 ~ 0.1
    230
    """
    T = validate.steps(T)
    kappa = validate.kappa(kappa)
    beta = validate.number("beta", beta, lo=0.0, hi=1.0, lo_open=False)
    lg = _log_gamma(kappa, eta0)
    t = np.arange(1, T + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        lhs = (t - 1) * lg if math.isfinite(lg) else np.where(t == 1, 0.0, -np.inf)
        rhs = math.log1p(-beta) - np.log1p(-(beta**t)) if beta > 0 else np.zeros(T)
    ok = lhs >= rhs - 1e-12
    ok[0] = True
    return int(np.nonzero(ok)[0].max()) + 1


def _log_geom_diff(x: float, y: float, k: np.ndarray) -> np.ndarray:
    """ln((x^k - y^k) / (x - y)) = ln(sum_{j<k} x^j y^(k-1-j)) for x, y >= 0, stably."""
    a, b = max(x, y), min(x, y)
    if a == 0.0:
        return np.where(k == 1, 0.0, -np.inf)
    la = math.log(a)
    if b == a:
        return np.log(k) + (k - 1) * la
    r = b / a
    return (k - 1) * la + np.log1p(-(r**k)) - math.log1p(-r)


def log_influence(kind: str, *, T: int, **params) -> np.ndarray:
    """ln q_t (up to an additive constant) of the influence-based kinds, t = 1..T.

    * ``gd-dynamic`` (``kappa``): ``q_t = gamma^{T-t}`` (H Thm 4.1, Eq. 7).
    * ``momentum-dynamic`` (``kappa, beta, eta0=1, variant``): see :func:`momentum_dynamic`.
    * ``expinfl`` (``gamma``): ``q_t = gamma^{T-t}`` for any ``gamma > 0`` (the ICLR submission, Sec. 5).
    * ``momexpinfl`` (``gamma, c1=1, c2=1``): ``q_t = c1 gamma^{T+t} + c2 gamma^{T-t}`` (ibid., H Thm 4.7).

    >>> np.exp(log_influence("gd-dynamic", T=3, kappa=2.0))
    array([0.25, 0.5 , 1.  ])
    """
    T = validate.steps(T)
    t = np.arange(1, T + 1, dtype=np.float64)
    kind = kind.replace("_", "-")
    if kind == "gd-dynamic":
        kappa = validate.kappa(params.pop("kappa"))
        lg = _log_gamma(kappa)
        if not math.isfinite(lg):
            return np.where(t == T, 0.0, -np.inf)
        out = (T - t) * lg
    elif kind == "expinfl":
        gamma = validate.number("gamma", params.pop("gamma"), lo=0.0, allowed="finite and > 0")
        out = (T - t) * math.log(gamma)
    elif kind == "momexpinfl":
        gamma = validate.number("gamma", params.pop("gamma"), lo=0.0, hi=1.0, allowed="in (0, 1)")
        c1 = validate.number("c1", params.pop("c1", 1.0), lo=0.0, lo_open=False, allowed="finite and >= 0")
        c2 = validate.number("c2", params.pop("c2", 1.0), lo=0.0, lo_open=False, allowed="finite and >= 0")
        if c1 == 0 and c2 == 0:
            raise ValueError("c1 and c2 must not both be 0 (momexpinfl needs a positive influence)")
        lg = math.log(gamma)
        with np.errstate(divide="ignore"):
            # common factor gamma^T dropped
            out = np.logaddexp(math.log(c1) + t * lg if c1 > 0 else -np.inf, math.log(c2) - t * lg if c2 > 0 else -np.inf)
    elif kind == "momentum-dynamic":
        kappa = validate.kappa(params.pop("kappa"))
        beta = validate.number("beta", params.pop("beta"), lo=0.0, hi=1.0, lo_open=False)
        eta0 = validate.number("eta0", params.pop("eta0", 1.0), lo=0.0, allowed="finite and > 0")
        variant = params.pop("variant", "corrected")
        variant = validate.choice("variant", variant, MOMENTUM_VARIANTS)
        if eta0 >= kappa:
            raise ValueError(f"eta0 must be < kappa (gamma = 1 - eta0/kappa must be in (0, 1)), got eta0={eta0}, kappa={kappa}")
        gamma = 1.0 - eta0 / kappa
        lg = _log_gamma(kappa, eta0)
        if variant == "slides":
            k = T - t + 1
            out = _log_geom_diff(beta * beta, gamma, k)
        else:
            if not beta < gamma:
                raise ValueError(f"beta must be < gamma = 1 - eta0/kappa = {gamma:g} (H Thm 4.7), got {beta}")
            T_hat = momentum_T_hat(T=T, kappa=kappa, beta=beta, eta0=eta0)
            log_c1 = math.log(2.0) - lg - math.log(gamma - beta * beta)
            # the proof's c2 = gamma^(2 T_hat)/(gamma - beta^2); "corrected" uses the
            # c2' = gamma^T_hat/(gamma - beta^2) that the proof's own previous line gives
            # (claim H-T4.7.q-corrected: only then does q_t bound the exact influence)
            log_c2 = (1 if variant == "corrected" else 2) * T_hat * lg - math.log(gamma - beta * beta)
            first = log_c1 + (T + t) * lg
            second = (T_hat - 1) * lg + log_c2 + (T - t) * lg
            if variant in ("proof", "corrected"):  # regimes split on t (proof of Thm 4.7, Eq. before (28))
                out = np.where(t <= T_hat, first, second)
            else:  # as printed in the statement: indicator on T
                out = first if T <= T_hat else second
    else:
        raise ValueError(f"log_influence kind must be one of gd-dynamic, momentum-dynamic, expinfl, momexpinfl, got {kind!r}")
    if params:
        raise ValueError(f"unexpected parameters for {kind}: {', '.join(sorted(params))}")
    return np.asarray(out, dtype=np.float64)


MOMENTUM_VARIANTS = ("corrected", "proof", "statement", "slides")


def momentum_dynamic(
    *, T: int, R: float, kappa: float, beta: float, eta0: float = 1.0, variant: str = "corrected"
) -> np.ndarray:
    """Momentum dynamic schedule, H Thm 4.7: Lemma 4.3 applied to the momentum influence, with
    ``gamma = 1 - eta0/kappa`` (Thm 4.5), ``T_hat`` from :func:`momentum_T_hat`,
    ``c1 = 2/(gamma(gamma - beta^2))`` and ``c2 = gamma^{2 T_hat}/(gamma - beta^2)`` (proof of Thm 4.7).

    * ``"corrected"`` (default): as "proof" with ``c2' = gamma^{T_hat}/(gamma - beta^2)``, which the
      proof's derivation gives; only this form bounds the exact influence for every t
      (claims ``H-T4.7.q-corrected``, ``H-T4.7.q-statement``);
    * ``"proof"``: ``q_t = c1 gamma^{T+t}`` for ``t <= T_hat``, else ``gamma^{T_hat-1} c2 gamma^{T-t}``;
    * ``"statement"``: as printed, indicators on T (one exponential);
    * ``"slides"``: the slides' Thm 3.4, ``q_t = (beta^{2(T-t+1)} - gamma^{T-t+1}) / (beta^2 - gamma)``.

    The paper's variants need ``beta < gamma``.

    >>> s = momentum_dynamic(T=50, R=1.0, kappa=100.0, beta=0.9)
    >>> round(float((1 / s**2).sum()), 12), bool(s[0] < s[10])   # increasing: T <= T_hat = 230
    (1.0, True)
    """
    T = validate.steps(T)
    R = validate.positive("R", R)
    lq = log_influence("momentum-dynamic", T=T, kappa=kappa, beta=beta, eta0=eta0, variant=variant)
    return _from_log_weights(
        0.5 * lq,
        R,
        f"momentum-dynamic ({variant}) with T={T}, kappa={kappa:g}, beta={beta:g}",
        "use a smaller T or a larger kappa",
    )


def expinfl(*, T: int, R: float, gamma: float) -> np.ndarray:
    """"expinfl" (the ICLR submission, Sec. 5, App. D): ``q_t = gamma^{T-t}`` (any ``gamma > 0``) by Lemma 4.3;
    :func:`gd_dynamic` with ``kappa = 1/(1 - gamma)`` for gamma in (0, 1).

    >>> bool(np.allclose(expinfl(T=5, R=1.0, gamma=0.5), gd_dynamic(T=5, R=1.0, kappa=2.0)))
    True
    """
    T = validate.steps(T)
    R = validate.positive("R", R)
    return _from_log_weights(
        0.5 * log_influence("expinfl", T=T, gamma=gamma),
        R,
        f"expinfl with T={T}, gamma={gamma:g}",
        "use a smaller T or gamma closer to 1",
    )


def momexpinfl(*, T: int, R: float, gamma: float, c1: float = 1.0, c2: float = 1.0) -> np.ndarray:
    """"momexpinfl" (the ICLR submission, Sec. 5; H Thm 4.7's two regimes):
    ``q_t = c1 gamma^{T+t} + c2 gamma^{T-t}`` by Lemma 4.3. Only ``c1/c2`` matters.

    >>> s = momexpinfl(T=9, R=1.0, gamma=0.7, c1=1.0, c2=0.7**10)
    >>> int(np.argmax(s)) + 1          # q_t smallest (noise largest) where c1 gamma^t = c2 gamma^-t
    5
    """
    T = validate.steps(T)
    R = validate.positive("R", R)
    return _from_log_weights(
        0.5 * log_influence("momexpinfl", T=T, gamma=gamma, c1=c1, c2=c2),
        R,
        f"momexpinfl with T={T}, gamma={gamma:g}",
        "use a smaller T or gamma closer to 1",
    )


def adp(*, T: int, R: float, a: float = 20.0, c: float = 1.0, power: float = 0.5, alpha2=None) -> np.ndarray:
    """ADP-SGD's allocation (Wu et al., Thm 4.2 / Remark 4.1: ``alpha_t^2 = b_t``) in Hong et al.'s units.

    Step t's noise multiplier is proportional to alpha_t, so ``sigma_t^2 = alpha_t^2 (sum_i 1/alpha_i^2) / R``.
    Defaults: W's ``b_t = (a + c t)^{1/2}``, i.e. ``alpha_t^2 = (a + c t)^power``; W Sec. 5.2's adaptive
    ``sqrt(b_0^2 + t C)`` is ``a = b_0^2, c = C``. ``alpha2`` (length T) gives any other sequence.
    (Lemma 4.3 with ``q_t ∝ alpha_t^{-4}``: SPEC X-UNIFY.)

    >>> s = adp(T=3, R=1.0, a=1.0, c=1.0, power=1.0)
    >>> s**2 / s[0]**2
    array([1. , 1.5, 2. ])
    """
    T = validate.steps(T)
    R = validate.positive("R", R)
    if alpha2 is not None:
        log_a2 = np.log(validate.positive_array("alpha2", alpha2, length=T))
    else:
        a = validate.number("a", a, lo=0.0, allowed="finite and > 0")
        c = validate.number("c", c, lo=0.0, lo_open=False, allowed="finite and >= 0")
        power = validate.number("power", power, allowed="a finite number")
        t = np.arange(1, T + 1, dtype=np.float64)
        log_a2 = power * np.log(a + c * t)
    return _from_log_weights(-log_a2, R, f"adp with T={T}", "use a smaller power or T")


# ------------------------------------------------------------------ the table of kinds


_REQUIRED = object()


@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter of a schedule kind: keyword (``_`` as ``-`` is the flag), type, allowed range
    (text; the function enforces it), default (``_REQUIRED`` if none) and meaning.
    """

    name: str
    type: str
    allowed: str
    default: Any
    meaning: str
    choices: tuple[str, ...] | None = None
    cli: bool = True  # False: Python only (an array)
    shown: str | None = None  # how the default reads in help and docs, if not its value

    @property
    def shown_default(self) -> str:
        return self.shown if self.shown is not None else str(self.default)

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclasses.dataclass(frozen=True)
class Kind:
    """A schedule kind: name, function, parameters (besides ``T`` and ``R``), paper reference."""

    name: str
    function: Callable[..., np.ndarray]
    params: tuple[Param, ...]
    reference: str
    summary: str
    takes_T: bool = True  # False: the length is given by an array (optimal's q)

    def signature(self) -> str:
        """``kind(kappa, [eta0=1])``: the parameters as in ``--help``."""
        parts = [p.name if p.required else f"[{p.name}={p.shown_default}]" for p in self.params if p.cli]
        return f"{self.name}({', '.join(parts)})"


#: The one table of schedule kinds: :func:`make`, the ``schedule`` and ``train`` commands
#: (flags, ``--help``), the docs (:func:`kinds_markdown`) and the tests all read it.
KIND_TABLE: dict[str, Kind] = {k.name: k for k in (
    Kind("uniform", uniform, (), "H Thm 4.2", "sigma_t^2 = T/R"),
    Kind("optimal", optimal,
         (Param("q", "float array", "each finite and > 0", _REQUIRED,
                "influences q_t (CLI: --influence FILE, one per line or a CSV column q)"),),
         "H Lemma 4.3, Eq. (10)", "minimises sum_t q_t sigma_t^2 for given influences", takes_T=False),
    Kind("gd-dynamic", gd_dynamic,
         (Param("kappa", "float", ">= 1 (= 1 only with T = 1)", _REQUIRED, "condition number kappa = M/mu"),),
         "H Thm 4.4", "GD dynamic schedule, noise falling like gamma^(t/2)"),
    Kind("exp", exponential,
         (Param("rate", "float", "finite", _REQUIRED, "sigma_t = sigma_0 exp(-rate t)"),),
         "H ICLR submission App. D (Yu et al. 2019)", "exponential decay"),
    Kind("step", step_decay,
         (Param("drop", "float", "> 0", 0.5, "noise factor per period"),
          Param("period", "int", ">= 1", None, "steps per plateau", shown="ceil(T/4)")),
         "H ICLR submission App. D", "step decay"),
    Kind("momentum-dynamic", momentum_dynamic,
         (Param("kappa", "float", ">= 1, > eta0", _REQUIRED, "condition number kappa = M/mu"),
          Param("beta", "float", "in [0, 1), < gamma = 1 - eta0/kappa (paper variants)", _REQUIRED, "momentum"),
          Param("eta0", "float", "> 0, < kappa", 1.0, "step factor (gamma = 1 - eta0/kappa)"),
          Param("variant", "str", "one of " + ", ".join(MOMENTUM_VARIANTS), "corrected",
                "which influence: corrected (c2' of the proof), proof, statement (as printed), slides",
                choices=MOMENTUM_VARIANTS)),
         "H Thm 4.7 (slides: Thm 3.4)", "momentum dynamic schedule"),
    Kind("expinfl", expinfl,
         (Param("gamma", "float", "> 0", _REQUIRED, "influence q_t = gamma^(T-t)"),),
         "H ICLR submission Sec. 5", "one-exponential influence model"),
    Kind("momexpinfl", momexpinfl,
         (Param("gamma", "float", "in (0, 1)", _REQUIRED, "influence rate"),
          Param("c1", "float", ">= 0 (not both 0)", 1.0, "weight of gamma^(T+t)"),
          Param("c2", "float", ">= 0 (not both 0)", 1.0, "weight of gamma^(T-t)")),
         "H ICLR submission Sec. 5, Thm 4.7", "two-exponential influence model"),
    Kind("adp", adp,
         (Param("a", "float", "> 0", 20.0, "alpha_t^2 = (a + c t)^power"),
          Param("c", "float", ">= 0", 1.0, "slope c"),
          Param("power", "float", "finite", 0.5, "power (1/2: W's b_t = sqrt(a + c t))"),
          Param("alpha2", "float array", "T values, each finite and > 0", None, "any alpha_t^2 (Python only)",
                cli=False, shown="from a, c, power")),
         "W Thm 4.2 / Remark 4.1", "ADP-SGD's allocation in Hong's units"),
)}

#: Schedule kinds accepted by :func:`make` and by the ``schedule``/``train`` commands.
KINDS: tuple[str, ...] = tuple(KIND_TABLE)


def kind(name: str) -> Kind:
    """The table entry of a kind (``_`` and ``-`` are the same).

    >>> kind("gd_dynamic").signature()
    'gd-dynamic(kappa)'
    """
    key = str(name).replace("_", "-")
    if key not in KIND_TABLE:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {name!r}")
    return KIND_TABLE[key]


def make(kind_name: str, **params) -> np.ndarray:
    """Dispatch to a schedule by name (one of :data:`KINDS`; ``_`` and ``-`` are the same) with its
    :data:`KIND_TABLE` parameters plus ``T`` and ``R``; an unknown or missing one is refused.

    >>> make("uniform", T=2, R=2.0)
    array([1., 1.])
    >>> make("gd_dynamic", T=3, R=1.0, kappa=2.0).shape
    (3,)
    >>> make("gd-dynamic", T=3, R=1.0)
    Traceback (most recent call last):
    ...
    ValueError: gd-dynamic needs kappa (a float >= 1 (= 1 only with T = 1)); its parameters: kappa
    """
    k = kind(kind_name)
    names = {p.name for p in k.params} | {"R"} | ({"T"} if k.takes_T else set())
    unknown = sorted(set(params) - names)
    listed = ", ".join(p.name for p in k.params) or "none besides T and R"
    if unknown:
        raise ValueError(f"{k.name} does not take {', '.join(unknown)}; its parameters: {listed}")
    for p in k.params:
        if p.required and params.get(p.name) is None:
            raise ValueError(f"{k.name} needs {p.name} (a {p.type} {p.allowed}); its parameters: {listed}")
    for must in ("R",) + (("T",) if k.takes_T else ()):
        if must not in params:
            raise ValueError(f"{k.name} needs {must}")
    given = {n: v for n, v in params.items() if v is not None or n in ("T", "R")}
    return k.function(**given)


def kinds_markdown() -> str:
    """The table of kinds as Markdown (CONTRIBUTING and the accounting page show it)."""
    rows = ["| kind | parameters (type, allowed, default) | paper | what |", "| --- | --- | --- | --- |"]
    for k in KIND_TABLE.values():
        ps = "; ".join(
            f"`{p.name}` ({p.type}, {p.allowed}{'' if p.required else f', default {p.shown_default}'})" for p in k.params
        ) or "none (T, R only)"
        rows.append(f"| `{k.name}` | {ps} | {k.reference} | {k.summary} |")
    return "\n".join(rows)


def kinds_help() -> str:
    """The kinds with their parameters, one line each (for ``--help``)."""
    return "\n".join(
        f"  {k.signature():<50} {k.reference}" for k in KIND_TABLE.values()
    )


#: default largest span max sigma_t / min sigma_t without a warning: in experiment ``h-x-eer-breakdown``
#: every cell where the clipped trainer ended 10x above the exact risk spanned more than 20, and the
#: paper's exponential schedules stay below (gamma = 0.9 over T = 100 spans 13.5)
MAX_SPAN = 20.0
#: default largest single noise multiplier accepted without a warning
MAX_SIGMA = 1e4


def schedule_span(sigma) -> float:
    """``max sigma_t / min sigma_t`` over the noisy (finite) steps; 1 for fewer than two.

    >>> schedule_span([1.0, 10.0, float("inf")])
    10.0
    """
    s = _check(sigma)
    f = s[np.isfinite(s)]
    if f.size < 2:
        return 1.0
    return float(f.max() / f.min())


def _check(sigma) -> np.ndarray:
    try:
        s = np.atleast_1d(np.asarray(sigma, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"sigma must be a sequence of noise multipliers > 0, got {sigma!r}"[:200]) from None
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"sigma must be a non-empty 1-D sequence, got shape {s.shape}")
    if np.any(np.isnan(s)) or np.any(s <= 0):
        raise ValueError("sigma must be > 0 at every step (inf = a noiseless step), got a value <= 0 or NaN")
    return s


def schedule_warnings(sigma, *, max_span: float = MAX_SPAN, max_sigma: float = MAX_SIGMA) -> list[str]:
    """Human-readable warnings (empty: none) for a schedule whose noise multipliers span more than
    ``max_span`` (over noisy steps) or exceed ``max_sigma``; they name the numbers and what to change.

    >>> schedule_warnings([1.6, 1.6, 1.6])
    []
    >>> w = schedule_warnings([1e9, 1e3, 1.0])
    >>> len(w), w[0].split(":")[0]
    (2, 'noise multipliers span a factor 1e+09')
    """
    s = _check(sigma)
    if not (isinstance(max_span, (int, float)) and math.isfinite(max_span) and max_span >= 1):
        raise ValueError(f"max_span must be a finite number >= 1, got {max_span!r}")
    if not (isinstance(max_sigma, (int, float)) and math.isfinite(max_sigma) and max_sigma > 0):
        raise ValueError(f"max_sigma must be a finite number > 0, got {max_sigma!r}")
    out: list[str] = []
    f = s[np.isfinite(s)]
    if f.size == 0:
        return out
    span = schedule_span(s)
    hint = ("use a larger curvature guess kappa, fewer steps T, or a uniform / exponential schedule "
            "(see the book's h-x-eer-breakdown page)")
    if span > max_span:
        out.append(f"noise multipliers span a factor {span:.3g}: from {f.min():.3g} to {f.max():.3g} (more than "
                   f"{max_span:g}); with clipped gradients the noisiest steps move the model further than the "
                   f"other steps can undo; {hint}")
    if f.max() > max_sigma:
        t = int(np.argmax(np.where(np.isfinite(s), s, -np.inf))) + 1
        out.append(f"noise multiplier {f.max():.3g} at step {t} exceeds {max_sigma:g}: that step's noise alone "
                   f"is {f.max():.3g} clip norms per sample; {hint}")
    return out
