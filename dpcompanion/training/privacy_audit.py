"""Empirical privacy audit of the private trainers: a white-box canary test with two lower
bounds on epsilon, a Gaussian-DP fit (tight, assumes Gaussian noise) and a threshold test
with Clopper-Pearson intervals (distribution-free, loose).

What it measures. A trainer that is ``(epsilon, delta)``-DP bounds every test that tries to
tell, from what the trainer releases, whether one example was in the training set: for
any rejection region, ``FPR + e^epsilon FNR >= 1 - delta`` and ``FNR + e^epsilon FPR >=
1 - delta`` (Kairouz, Oh & Viswanath arXiv 1311.0776v4 Thm 2.1; Dong, Roth & Su arXiv
1905.02383v3 Sec. 2). Running the trainer many times with and without a *canary* example,
counting a test's false positives and false negatives, and bounding both rates from above
with Clopper-Pearson intervals gives a lower bound on the epsilon the trainer really has
(Jagielski, Ullman & Oprea arXiv 2006.07709v1; Nasr et al. arXiv 2101.04535v1). If that
lower bound exceeds the epsilon the ledger claims, the claim is false (with 95 %
confidence). A lower bound that stays below the claim proves nothing about privacy: it only
says this test could not refute the claim at this many trials.

The setup is built so that the test is as strong as the accounting allows:

* **Model and data: the worst pair of the stated relation.** :class:`CanaryModel` has the
  linear loss ``f(theta; x) = -<theta, x>``: every example's gradient ``-x`` is the same at
  every step, whatever the trajectory. Under Poisson sampling the ``N - 1`` ordinary examples
  are zero in coordinate 0 (they move the model only along coordinate 1); in the full-batch
  audits they are all ``-2C e_0``, clipped gradients opposite to the canary's (the adversary
  knows them and subtracts their part, :func:`ordinary_shift`). The world *with* the canary holds them and the
  canary ``x = 2C e_0`` (clipped to norm exactly ``C``) in slot 0; the world *without* holds the
  ``N - 1`` ordinary examples only: the canary's record removed, the worst pair of the
  add/remove-one relation every guarantee of the library is for
  (:data:`~dpcompanion.training.trainers.config.NEIGHBOURING`). Both worlds are trained with the
  same public ``N`` (``TrainConfig.N``), as the relation prescribes, so the trainers' ``1/N`` or
  ``1/(pN)`` scaling is the same and the clipped gradient sums differ by exactly ``C e_0`` at every
  step in which the canary is sampled: the sensitivity the accounting charges for (Hong et al.
  2022, FAccT, arXiv 2101.07413, Algorithm 1, Def. C.1 and Thm 3.1: sensitivity ``C``, noise
  ``C sigma_t`` on the sum). A trainer that divided by its data's own size would also move the
  ordinary examples' part of the average between the worlds (the ``2C/N`` of a data-dependent
  divisor) and be flagged (tests).
* **White-box adversary.** It sees every iterate, as the accounting assumes: the model
  records the parameters at which each step's gradient is taken. From consecutive iterates
  and the public step sizes it recovers each step's noisy clipped-gradient sum (undoing the
  debiased momentum of H Eq. (3) for the momentum trainer) and projects it on the canary's
  clipped gradient: ``s_t = b_t + sigma_t z_t`` with ``z_t ~ N(0, 1)``, ``b_t = 0`` without the
  canary and ``b_t ~ Bernoulli(p)`` with it (``p = 1`` full batch).
* **Statistic.** The log likelihood ratio of the two worlds, which by Neyman-Pearson is the
  most powerful test: ``sum_t (s_t - 1/2) / sigma_t^2`` for full batch (the projected
  updates scaled by ``1/sigma_t^2``) and ``sum_t log(1 - p + p exp((s_t - 1/2) / sigma_t^2))``
  under Poisson sampling, where the adversary does not see whether the canary was sampled.
* **Bound 1, Gaussian-DP fit (full batch only; ``epsilon_lower_gdp``).** With full batch the
  statistic is Gaussian with the same variance in both worlds and means ``mu`` standard
  deviations apart, ``mu = sqrt(sum_t 1/sigma_t^2)`` (the mechanism is ``mu``-GDP; Dong,
  Roth & Su arXiv 1905.02383v3 Cor. 3.3). Fitting the means and the pooled variance of
  each world's statistic gives ``mu_hat``, its one-sided lower confidence bound follows from
  the noncentral t law of the two-sample t statistic, and the exact epsilon of that
  ``mu``-GDP at ``delta`` (:func:`dpcompanion.theory.accounting.gdp_epsilon`) is the bound
  (Nasr et al. 2023, "Tight auditing of differentially private machine learning", arXiv
  2302.07956, fit the Gaussian-DP trade-off curve in the same way). It is sound *only if the
  noise is Gaussian with a law the canary does not change*: a statistical model, not a
  distribution-free guarantee. :func:`gdp_model_check` tests equal variances and normality on
  the scores, and the bound is withheld (``None``) when it rejects them. Under Poisson
  sampling the statistic is a Gaussian mixture, so no fit is made.
* **Bound 2, threshold test (every trainer; ``epsilon_lower_threshold``).** The first quarter
  of each world's trials chooses the threshold and the direction of the test; the other
  three quarters, untouched by that choice, give the false-positive and false-negative
  counts. Each rate gets a one-sided Clopper-Pearson upper bound at level ``alpha / 2``
  and ``epsilon_lower = max(log((1 - delta - FNR_hi) / FPR_hi), log((1 - delta - FPR_hi) /
  FNR_hi), 0)``. It assumes nothing about the noise but needs many trials: a rate below
  about ``3.7 / n`` cannot be certified with ``n`` trials.
* **Verdict.** Each bound is one-sided at 97.5 % (:data:`BOUND_CONFIDENCE`), so both hold
  together with 95 % (:data:`CONFIDENCE`); ``epsilon_lower`` is the larger, ``flagged``
  (the claim is refuted) when it exceeds the claim, ``passed = not flagged``;
  ``tightness = epsilon_lower / epsilon_exact``. :func:`noise_check` also compares the
  moments of the recovered projections with what the accountant assumes (noise ``C
  sigma_t``; the canary entering with probability ``p``, divided by the fixed expected
  batch size ``p N``).

Mis-calibrated trainers (``noise_multiplier_scale = S``). The trainers have no switch that
adds less noise than their ledger charges for, and the audit adds none: it hands a trainer
the schedule ``S sigma`` together with a ledger budget that this scaled schedule fits, and
claims the epsilon that the *unscaled* schedule ``sigma`` is worth, computed by replaying
``sigma`` through a fresh :class:`~dpcompanion.theory.ledger.PrivacyLedger` at the user's
budget: that is what a trainer whose noise is ``S`` times what its ledger believes would
report. ``S = 1`` is the trainer exactly as shipped.

What the claim is. Full batch: the ledger's zCDP conversion of the spent budget
(``epsilon_zcdp``, H Lemma C.3; equal to the requested epsilon for a budget-exact
schedule). Poisson sampling: the RDP epsilon at ``delta`` that the ledger checks every
subsampled step against (``epsilon_rdp``, dp-accounting), which is at most the requested
epsilon. ``epsilon_actual`` is the same accountant applied to the noise really added; for
full batch the exact (Gaussian DP) epsilon of that noise is the
largest value any test can certify. ``epsilon_exact`` is that value (full batch) or
dp-accounting's PLD epsilon of the noise used (Poisson sampling, tight up to discretisation).

The label canary (:func:`label_audit`). The setup above feeds the trainers only what they
accept, so it cannot see a clipping rule that holds for some labels and not others: the
linear/logistic fast path once bounded a sample's gradient ``a (-s x)`` by ``|a| ||x||``,
leaving out ``|s| = |2y - 1|``, and a sample labelled -1 or 2 contributed ``3 C``.
:func:`label_audit` audits that path directly: a binary linear model (no bias) whose canary
``2C e_0`` carries an arbitrary label, the clip-and-sum oracle built *below* the trainers'
label check, one full-batch private step (:func:`~dpcompanion.training.trainers.engine.private_step`)
per trial from the origin, and the same adversary, statistic and bounds as above. A path that
lets the canary contribute more than ``C`` shows as ``shift_ratio`` above 1 and an epsilon
lower bound above the claim.

Everything is batched: each world is one call of the public trainer with one run per trial
(:func:`dpcompanion.training.trainers.engine.as_runs`), in float64 on the CPU by default.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Sequence

import numpy as np
import torch

from dpcompanion.core.provenance import resolve_device
from dpcompanion.theory import accounting, numerical_accounting, schedules
from dpcompanion.theory.auditing import (
    CONFIDENCE,
    MODEL_CHECK_LEVEL,
    SELECTION_FRACTION,
    clopper_pearson_upper,
    epsilon_from_rates,
    epsilon_lower_bound,
    epsilon_lower_gdp,
    exact_epsilon_of,
    gdp_model_check,
    gdp_mu_lower_bound,
    log_likelihood_ratio,
)
from dpcompanion.theory.budget import Budget
from dpcompanion.theory.ledger import PrivacyLedger
from dpcompanion.training.dense_models import DenseModel
from dpcompanion.training.model_base import ClipResult, Model, clip_factors, norms64
from dpcompanion.training.trainers import TrainConfig, train, train_adpsgd
from dpcompanion.training.trainers.config import NEIGHBOURING
from dpcompanion.training.trainers.adp_sgd import adp_schedule
from dpcompanion.training.trainers.engine import private_step
from dpcompanion.training.trainers.oracles import make_oracle
from dpcompanion.training.trainers.steps import debias_factor

__all__ = [
    "TRAINERS",
    "SETUPS",
    "AuditSetup",
    "AuditResult",
    "MIN_TRIALS",
    "MAX_TRIALS",
    "SCALE_RANGE",
    "BOUND_CONFIDENCE",
    "GDP_ASSUMPTION",
    "CanaryModel",
    "canary_data",
    "ordinary_shift",
    "noisy_sums_from_iterates",
    "noise_check",
    "validate_audit",
    "run_audit",
    "audit_scores",
    "LABEL_TRIALS",
    "label_canary_data",
    "label_audit",
]

TRAINERS: tuple[str, ...] = ("pgd", "momentum", "psgd", "adp")
#: fewest trials accepted (both worlds together); below this no bound is informative
MIN_TRIALS = 200
#: most trials accepted: each run holds a ledger and a noise generator (a few kB), and a full-batch
#: trial costs about 1 ms of CPU time (a subsampled one about 10 ms)
MAX_TRIALS = 200_000
#: runs per trainer call (bounds the memory of ledgers, generators and recorded iterates)
CHUNK = 20_000
#: accepted noise-multiplier scales S (inclusive)
SCALE_RANGE = (0.01, 100.0)
BOUND_CONFIDENCE = 1.0 - (1.0 - CONFIDENCE) / 2.0  # each of the verdict's two bounds
#: what the Gaussian-DP bound assumes (printed beside it)
GDP_ASSUMPTION = ("the statistic is Gaussian with the same variance with and without the canary "
                  "(the full-batch Gaussian mechanism); not distribution-free")
#: largest number of steps an audit may take (each run keeps every iterate)
MAX_T = 1000


@dataclasses.dataclass(frozen=True)
class AuditSetup:
    """The fixed, documented setup of one trainer's audit (sizes chosen for power per second:
    see the book page ``audit``)."""

    trainer: str
    T: int
    sampling_rate: float
    schedule: str
    trials: int  # default number of trials (both worlds together)
    lr: float = 0.1
    momentum: float = 0.0
    kappa: float = 10.0
    clip_norm: float = 1.0
    n: int = 16  # examples per dataset, slot 0 = canary or null example

    @property
    def note(self) -> str:
        p = "full batch" if self.sampling_rate == 1.0 else f"Poisson sampling p = {self.sampling_rate:g}"
        mom = f", momentum beta = {self.momentum:g}" if self.momentum else ""
        return f"T = {self.T} steps, {p}, schedule {self.schedule}{mom}, N = {self.n}, C = {self.clip_norm:g}"


#: per trainer: a full-batch run of T = 10 steps costs about 50 us, so 40,000 trials (about 2 s)
#: put the Gaussian-DP bound near 95 % of the exact epsilon at (2, 1e-5); PSGD gets no
#: Gaussian-DP bound, so it uses the most trials accepted (about 15 s; the threshold test's
#: tightness grows slowly with the trials). ADP-SGD is audited full batch by default (its noise
#: allocation and step sizes; the subsampled path is the engine's PSGD path):
#: ``sampling_rate=`` audits it subsampled, at about 1 s of RDP accounting per distinct noise
#: level on top.
SETUPS: dict[str, AuditSetup] = {
    "pgd": AuditSetup("pgd", T=10, sampling_rate=1.0, schedule="gd-dynamic (kappa = 10)", trials=40_000),
    "momentum": AuditSetup("momentum", T=10, sampling_rate=1.0, schedule="momentum-dynamic (kappa = 10, beta = 0.5)",
                           trials=40_000, momentum=0.5),
    "psgd": AuditSetup("psgd", T=3, sampling_rate=0.7, schedule="uniform, the paper's R' = R/p^2", trials=200_000),
    "adp": AuditSetup("adp", T=10, sampling_rate=1.0, schedule="ADP-SGD alpha_t^2 = sqrt(20 + t), polynomial steps",
                      trials=40_000, lr=1.0),
}


# ------------------------------------------------------------------------ model and data


class CanaryModel(Model):
    """Linear loss ``f(theta; x) = -<theta, x>`` on ``dim`` parameters; its per-sample gradient
    ``-x`` does not depend on theta. Records every ``theta`` at which the trainer asks for a
    gradient (``iterates``): the white-box adversary's view of the trajectory."""

    name = "canary-linear"

    def __init__(self, dim: int = 2):
        self.dim = int(dim)
        self.n_classes = 2
        self.in_shape = (self.dim,)
        self.param_shapes = {"w": (self.dim,)}
        self.iterates: list[torch.Tensor] = []

    def __repr__(self) -> str:
        return f"CanaryModel(dim={self.dim})"

    def init_single(self, generator: torch.Generator) -> torch.Tensor:
        return torch.zeros(self.dim, dtype=torch.float64)

    def forward(self, theta: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        return torch.einsum("kp,np->kn", theta, X.to(theta.dtype)).unsqueeze(-1)

    def per_sample_loss_from_output(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return -z[..., 0]

    def clipped_grad_sum(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        """Analytic: ``sum_n w_kn min(1, C/||x_n||) (-x_n)``; records ``theta``."""
        self.iterates.append(theta.detach().clone())
        Xd = X.to(theta.dtype)
        K = theta.shape[0]
        n64 = norms64(Xd)
        norms = n64.to(theta.dtype)
        c = clip_factors(n64, clip_norm, dtype=theta.dtype)
        if weights is None:
            grad_sum = -(c @ Xd).expand(K, -1).clone()
        else:
            grad_sum = -((weights.to(theta.dtype) * c) @ Xd)
        losses = -(theta @ Xd.T)
        return ClipResult(grad_sum, norms.expand(K, -1), losses)


def canary_data(*, canary: bool, n: int = 16, clip_norm: float = 1.0, seed: int = 0,
                opposed: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """``(X, y)`` in 2 dimensions: with the canary, ``n`` rows, row 0 the canary ``2C e_0`` (its
    clipped gradient ``-C e_0``) and rows ``1..n-1`` the ordinary examples; without it, the
    ``n - 1`` ordinary rows alone (the canary's record removed: the add/remove neighbour). Both
    worlds share the ordinary rows; the public ``N`` they are trained with is ``n`` in both.

    The ordinary rows lie along coordinate 1 only (drawn from ``seed``, norms around ``C``, some
    clipped), or, with ``opposed`` (the full-batch audits), are all ``-2C e_0``: clipped gradients
    ``+C e_0``, opposite to the canary's, the rows that make a divisor taken from the data's own
    size move the average by ``2C/N`` (:func:`ordinary_shift` is their known part of the sum)."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n, 2))
    X[1:, 1] = rng.normal(0.0, clip_norm, size=n - 1)
    if opposed:
        X[1:] = [-2.0 * clip_norm, 0.0]
    X[0, 0] = 2.0 * clip_norm
    if not canary:
        X = X[1:]
    return torch.as_tensor(X, dtype=torch.float64), torch.zeros(X.shape[0], dtype=torch.long)


def ordinary_shift(*, n: int, opposed: bool) -> float:
    """The ordinary rows' part of the projection ``-S_0 / C`` of a full-batch clipped sum ``S`` on
    the canary's direction (in units of ``C``): ``-(n - 1)`` for ``opposed`` rows, 0 otherwise. The
    adversary knows the neighbour without the canary, so it adds ``n - 1`` back."""
    return -(n - 1.0) if opposed else 0.0


def noisy_sums_from_iterates(*, iterates: torch.Tensor, lr: np.ndarray, denominator: float,
                             momentum: float = 0.0) -> np.ndarray:
    """The noisy clipped-gradient sums ``(K, T, P)`` behind iterates ``(T + 1, K, P)``.

    Plain steps: ``theta_{t+1} = theta_t - lr_t g_t`` with ``g_t = sum_t / denominator``.
    Debiased momentum (H Eq. (3)): ``theta_{t+1} = theta_t - lr_t v_{t+1} / (1 - beta^t)``,
    ``v_{t+1} = beta v_t + (1 - beta) g_t``, ``v_1 = 0``; inverted step by step.
    """
    th = iterates.to(torch.float64)
    T = th.shape[0] - 1
    lr_t = torch.as_tensor(np.asarray(lr, dtype=np.float64)).T.unsqueeze(-1)  # (T, K, 1)
    step = (th[:-1] - th[1:]) / lr_t  # lr_t * direction_t
    if momentum:
        f = debias_factor(beta=momentum, t=torch.arange(1, T + 1, dtype=torch.float64)).view(T, 1, 1)
        v = step / f
        v_prev = torch.cat([torch.zeros_like(v[:1]), v[:-1]])
        g = (v - momentum * v_prev) / (1.0 - momentum)
    else:
        g = step
    return (g * denominator).permute(1, 0, 2).numpy()



def noise_check(*, proj_out, proj_in, sigma, sampling_rate: float = 1.0) -> dict[str, Any]:
    """Does the trainer add what the accountant assumes? From the adversary's projections
    ``(K, T)`` (in units of ``C``, the sums rescaled by the fixed denominator ``p N``):

    * ``noise_ratio``: the sd of ``s_t / sigma_t`` without the canary; 1 when the noise on the
      clipped-gradient sum is ``C sigma_t``;
    * ``shift_ratio``: the mean of ``s_t`` with minus without the canary, over ``p``; 1 when the
      canary's clipped gradient enters with probability ``p`` (Poisson sampling) and the sum is
      divided by the *fixed expected* batch size ``p N``, as the add/remove accountant
      assumes (dividing by the realised batch size would not give these moments).

    Each comes with its standard error (``*_se``).

    >>> rng = np.random.default_rng(0)
    >>> sig = np.array([2.0, 3.0])
    >>> c = noise_check(proj_out=rng.normal(0, sig, (4000, 2)), proj_in=rng.normal(1, sig, (4000, 2)), sigma=sig)
    >>> abs(c["noise_ratio"] - 1) < 4 * c["noise_ratio_se"], abs(c["shift_ratio"] - 1) < 4 * c["shift_ratio_se"]
    (True, True)
    """
    so, si = np.asarray(proj_out, dtype=float), np.asarray(proj_in, dtype=float)
    sig = np.asarray(sigma, dtype=float)
    p = float(sampling_rate)
    z = so / sig
    m_in, m_out = si.mean(-1), so.mean(-1)  # per run, over steps
    shift = (m_in.mean() - m_out.mean()) / p
    se_shift = math.sqrt(m_in.var(ddof=1) / m_in.size + m_out.var(ddof=1) / m_out.size) / p
    return {"noise_ratio": float(z.std(ddof=1)), "noise_ratio_se": float(1.0 / math.sqrt(2.0 * z.size)),
            "shift_ratio": float(shift), "shift_ratio_se": float(se_shift)}


# ------------------------------------------------------------------------------- the audit


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`run_audit` (``to_dict()`` is what ``audit --json`` prints)."""

    trainer: str
    neighbouring: str
    epsilon: float
    delta: float
    noise_multiplier_scale: float
    seed: int
    trials: int
    epsilon_claimed: float
    epsilon_lower: float
    epsilon_lower_gdp: float | None
    epsilon_lower_threshold: float
    flagged: bool
    passed: bool
    epsilon_actual: float
    epsilon_exact: float
    exact_accountant: str
    tightness: float | None
    claim_accountant: str
    test: dict
    gdp_fit: dict | None
    noise_check: dict
    setup: dict
    sigma_claimed: list
    sigma_used: list
    wall_time: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _check_number(name: str, value, *, lo: float, hi: float, lo_open: bool, hi_open: bool, allowed: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {allowed}, got {value!r}") from None
    ok = math.isfinite(v) and (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
    if not ok:
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return v


def validate_audit(*, trainer: str, epsilon, delta, trials=None, noise_multiplier_scale=1.0, seed=0,
                   sampling_rate=None) -> dict[str, Any]:
    """Check every input of :func:`run_audit` before any work; returns the normalised values.
    Messages name the parameter, the value and what is allowed."""
    if trainer not in TRAINERS:
        raise ValueError(f"trainer must be one of {', '.join(TRAINERS)}, got {trainer!r}")
    eps = _check_number("epsilon", epsilon, lo=0.0, hi=math.inf, lo_open=True, hi_open=True,
                        allowed="a finite number > 0")
    dl = _check_number("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True, allowed="in (0, 1)")
    lo, hi = SCALE_RANGE
    S = _check_number("noise_multiplier_scale", noise_multiplier_scale, lo=lo, hi=hi, lo_open=False, hi_open=False,
                      allowed=f"a finite number in [{lo:g}, {hi:g}]")
    if trials is None:
        trials = SETUPS[trainer].trials
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or not MIN_TRIALS <= trials <= MAX_TRIALS:
        raise ValueError(f"trials must be an integer in [{MIN_TRIALS}, {MAX_TRIALS}], got {trials!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an integer in [0, 2^32), got {seed!r}")
    if sampling_rate is None:
        p = SETUPS[trainer].sampling_rate
    elif trainer in ("pgd", "momentum"):
        raise ValueError(f"sampling_rate applies to psgd and adp only ({trainer} is full batch), got {sampling_rate!r}")
    else:
        p = _check_number("sampling_rate", sampling_rate, lo=0.0, hi=1.0, lo_open=True, hi_open=False,
                          allowed="in (0, 1]")
    return {"trainer": trainer, "epsilon": eps, "delta": dl, "trials": int(trials), "noise_multiplier_scale": S,
            "seed": int(seed), "sampling_rate": p}


def _quiet_absl() -> None:
    """dp-accounting logs a warning per fractional RDP order it skips; keep them out."""
    try:
        from absl import logging as absl_logging

        absl_logging.set_verbosity(absl_logging.ERROR)
    except ImportError:  # pragma: no cover
        pass


def _claimed_epsilon(sigma: np.ndarray, *, delta: float, sampling_rate: float) -> tuple[float, str]:
    """What the ledger believes steps ``sigma`` cost: full batch, the zCDP conversion of the
    spent budget (H Lemma C.3; the ledger's ``epsilon_zcdp``); subsampled, the RDP epsilon
    the ledger checks each step against (:func:`dpcompanion.theory.numerical_accounting.rdp_epsilon_of`)."""
    if sampling_rate == 1.0:
        return (numerical_accounting.epsilon_at_R(R=accounting.spent_R(sigma=sigma), delta=delta, accountant="zcdp"),
                "zcdp (the ledger's conversion, H Lemma C.3)")
    return (numerical_accounting.rdp_epsilon_of(sigma=sigma, delta=delta, sampling_rate=sampling_rate),
            "rdp (the ledger's check, integer orders)")


def _replay(sigma: np.ndarray, *, R: float, delta: float, sampling_rate: float) -> int:
    """How many steps of ``sigma`` a fresh ledger of budget R accepts."""
    led = PrivacyLedger(R=R, delta=delta)
    n = 0
    for s in sigma:
        if not led.can_afford(sigma=float(s), sampling_rate=sampling_rate):
            break
        led.charge(sigma=float(s), sampling_rate=sampling_rate)
        n += 1
    return n


def _fitting_budget(sigma: np.ndarray, *, R: float, delta: float, sampling_rate: float) -> float:
    """A budget whose ledger accepts every step of ``sigma`` (the mis-calibrated run's
    ledger): the paper's-rule spend, and for subsampled steps also the budget whose target
    epsilon covers the schedule's RDP epsilon; never below R."""
    p = sampling_rate
    need = p * p * accounting.spent_R(sigma=sigma)
    if p < 1.0:
        eps = numerical_accounting.rdp_epsilon_of(sigma=sigma, delta=delta, sampling_rate=p)
        need = max(need, accounting.R_zcdp(epsilon=eps, delta=delta))
    return max(R, need * (1.0 + 1e-9))


def _seeds(seed: int, world: int, n: int) -> list[int]:
    return [int(s) for s in np.random.SeedSequence([seed, world]).generate_state(n, dtype=np.uint32)]


def _train_world(trainer: str, setup: AuditSetup, *, canary: bool, seeds: Sequence[int], sigma: np.ndarray | None,
                 R_trainer: float, R_ledger: float, delta: float, device: str, data_seed: int):
    """One batched call of :func:`dpcompanion.training.trainers.train` (the ledger's budget
    ``R_ledger``; ADP-SGD's schedule for ``R_trainer``): (noisy sums (K, T, P), history)."""
    p = setup.sampling_rate
    X, y = canary_data(canary=canary, n=setup.n, clip_norm=setup.clip_norm, seed=data_seed, opposed=p == 1.0)
    model = CanaryModel(dim=2)
    lr, algorithm = setup.lr, None
    if trainer == "adp":
        plan = adp_schedule(R=R_trainer, T=setup.T, sampling_rate=p, step_size="polynomial", eta=setup.lr)
        sigma, lr, algorithm = plan["sigma"], plan["lr"], plan["algorithm"]
    budget = Budget.from_R(R=R_ledger, delta=delta if p < 1.0 else None, sampling_rate=p)
    config = TrainConfig.build(sigma=sigma, budget=budget, lr=lr, clip_norm=setup.clip_norm, seed=list(seeds),
                               N=setup.n, beta=setup.momentum, device=device, dtype=torch.float64, progress=False,
                               algorithm=algorithm)
    h = train(model, X, y, config, init=torch.zeros(2, dtype=torch.float64))
    steps = np.asarray(h.steps_done)
    if np.any(steps != setup.T) or np.any(np.asarray(h.stopped_early)):
        raise RuntimeError(f"audit of {trainer}: a run stopped after {int(steps.min())} of {setup.T} steps")
    its = torch.stack(model.iterates + [h.theta.detach()])
    sums = noisy_sums_from_iterates(iterates=its, lr=np.asarray(h.lr), denominator=p * setup.n,
                                    momentum=setup.momentum)
    return sums, h


def _honest_schedule(trainer: str, setup: AuditSetup, *, R: float, delta: float, device: str) -> np.ndarray:
    """The noise schedule the shipped trainer uses at budget R."""
    if trainer == "pgd":
        return schedules.gd_dynamic(T=setup.T, R=R, kappa=setup.kappa)
    if trainer == "momentum":
        return schedules.momentum_dynamic(T=setup.T, R=R, kappa=setup.kappa, beta=setup.momentum)
    if trainer == "psgd":
        return schedules.uniform(T=setup.T, R=numerical_accounting.psgd_R_prime(R=R, sampling_rate=setup.sampling_rate))
    # ADP-SGD builds its schedule inside the trainer: read it off one honest run
    X, y = canary_data(canary=False, n=setup.n, clip_norm=setup.clip_norm)
    h = train_adpsgd(CanaryModel(), X, y, R=R, T=setup.T, sampling_rate=setup.sampling_rate, step_size="polynomial",
                     eta=setup.lr, clip_norm=setup.clip_norm, seed=0, device=device, dtype=torch.float64,
                     delta=delta if setup.sampling_rate < 1.0 else None, progress=False)
    return np.asarray(h.sigma, dtype=np.float64)[: int(h.steps_done)]


def run_audit(*, trainer: str, epsilon: float, delta: float, trials: int | None = None,
              noise_multiplier_scale: float = 1.0, seed: int = 0, sampling_rate: float | None = None,
              device: str = "cpu") -> AuditResult:
    """Audit one trainer at the budget ``(epsilon, delta)`` (see the module docstring and
    :func:`audit_scores`, which takes the same arguments and also returns the scores)."""
    return audit_scores(trainer=trainer, epsilon=epsilon, delta=delta, trials=trials,
                        noise_multiplier_scale=noise_multiplier_scale, seed=seed, sampling_rate=sampling_rate,
                        device=device)[0]


def audit_scores(
    *,
    trainer: str,
    epsilon: float,
    delta: float,
    trials: int | None = None,
    noise_multiplier_scale: float = 1.0,
    seed: int = 0,
    sampling_rate: float | None = None,
    device: str = "cpu",
) -> tuple[AuditResult, dict[str, np.ndarray]]:
    """Audit one trainer at the budget ``(epsilon, delta)`` (see the module docstring):
    ``(result, {"out": scores, "in": scores})``, the scores being the test statistic of each
    trial without and with the canary, computed from the trainer's iterates.

    ``trials``: trainings in all (half with the canary; default per trainer in
    :data:`SETUPS`); ``noise_multiplier_scale`` S: the trainer adds S times the noise its
    ledger claims (S = 1: as shipped); ``seed``: all randomness (data, per-run seeds);
    ``sampling_rate``: Poisson rate for psgd and adp (default in :data:`SETUPS`).
    Raises ``ValueError`` (naming the parameter) on bad input, before any training.
    """
    t0 = time.perf_counter()
    v = validate_audit(trainer=trainer, epsilon=epsilon, delta=delta, trials=trials,
                       noise_multiplier_scale=noise_multiplier_scale, seed=seed, sampling_rate=sampling_rate)
    dev = resolve_device(device)
    _quiet_absl()
    setup = dataclasses.replace(SETUPS[trainer], sampling_rate=v["sampling_rate"])
    eps, dl, S, n_trials = v["epsilon"], v["delta"], v["noise_multiplier_scale"], v["trials"]
    p = setup.sampling_rate
    R = accounting.R_zcdp(epsilon=eps, delta=dl)
    sigma = _honest_schedule(trainer, setup, R=R, delta=dl, device=dev)
    accepted = _replay(sigma, R=R, delta=dl, sampling_rate=p)
    if sigma.size != setup.T or accepted != setup.T:
        raise ValueError(
            f"epsilon {eps:g} at delta {dl:g}: the {trainer} trainer's schedule does not fit its own ledger "
            f"({min(accepted, sigma.size)} of {setup.T} steps accepted at sampling rate {p:g}); "
            "audit a smaller epsilon"
        )
    used = S * sigma
    R_ledger = R if S >= 1.0 else _fitting_budget(used, R=R, delta=dl, sampling_rate=p)
    R_trainer = R / (S * S)  # ADP-SGD's schedule is budget-exact, so sigma(R / S^2) = S sigma(R)
    n_in = n_trials // 2
    n_out = n_trials - n_in
    sums = {}
    for world, canary, n in ((0, False, n_out), (1, True, n_in)):
        seeds = _seeds(v["seed"], world, n)
        parts = []
        for lo in range(0, n, CHUNK):
            part, h = _train_world(trainer, setup, canary=canary, seeds=seeds[lo:lo + CHUNK],
                                   sigma=None if trainer == "adp" else used, R_trainer=R_trainer,
                                   R_ledger=R_ledger, delta=dl, device=dev, data_seed=v["seed"])
            got = np.asarray(h.sigma, dtype=np.float64).reshape(-1, setup.T)
            if not np.allclose(got, used, rtol=1e-9, atol=0.0):
                raise RuntimeError(f"audit of {trainer}: the trainer used noise {got[0]} instead of {used}")
            parts.append(part)
        sums[world] = np.concatenate(parts)
    # the adversary: project each step's noisy sum on the canary's clipped gradient -C e_0
    # (less the ordinary rows' known part, which the adversary, knowing the neighbour, subtracts)
    known = ordinary_shift(n=setup.n, opposed=p == 1.0)
    proj = {w: -sums[w][..., 0] / setup.clip_norm - known for w in sums}
    scores = {w: log_likelihood_ratio(s=proj[w], sigma=used, sampling_rate=p) for w in sums}
    test = epsilon_lower_bound(scores_out=scores[0], scores_in=scores[1], delta=dl, confidence=BOUND_CONFIDENCE)
    gdp = None
    if p == 1.0:  # full batch: the statistic is Gaussian with a mean shift (see epsilon_lower_gdp)
        gdp = epsilon_lower_gdp(scores_out=scores[0], scores_in=scores[1], delta=dl, confidence=BOUND_CONFIDENCE)
        gdp["model_check"] = gdp_model_check(scores_out=scores[0], scores_in=scores[1])
    eps_claimed, claim_acc = _claimed_epsilon(sigma, delta=dl, sampling_rate=p)
    eps_actual = _claimed_epsilon(used, delta=dl, sampling_rate=p)[0]
    eps_exact, exact_acc = exact_epsilon_of(used, delta=dl, sampling_rate=p)
    lower_thr = test["epsilon_lower"]
    # the fit's bound counts only where its model is not rejected by the scores themselves
    lower_gdp = None if gdp is None or not gdp["model_check"]["ok"] else gdp["epsilon_lower"]
    lower = max(lower_thr, lower_gdp or 0.0)
    flagged = bool(lower > eps_claimed)
    return (AuditResult(
        trainer=trainer,
        neighbouring=NEIGHBOURING + "; audited pair: the canary's record present (N rows) and removed (N - 1 rows)",
        epsilon=eps,
        delta=dl,
        noise_multiplier_scale=S,
        seed=v["seed"],
        trials=n_trials,
        epsilon_claimed=eps_claimed,
        epsilon_lower=lower,
        epsilon_lower_gdp=lower_gdp,
        epsilon_lower_threshold=lower_thr,
        flagged=flagged,
        passed=not flagged,
        epsilon_actual=float(eps_actual),
        epsilon_exact=float(eps_exact),
        exact_accountant=exact_acc,
        tightness=float(lower / eps_exact) if eps_exact > 0 else None,
        claim_accountant=claim_acc,
        test={**test, "statistic": "log likelihood ratio of the projected noisy sums",
              "trials_with_canary": n_in, "trials_without_canary": n_out},
        gdp_fit=None if gdp is None else {**gdp, "assumes": GDP_ASSUMPTION},
        noise_check=noise_check(proj_out=proj[0], proj_in=proj[1], sigma=used, sampling_rate=p),
        setup={**dataclasses.asdict(setup), "R": R, "R_ledger": R_ledger, "device": dev, "note": setup.note},
        sigma_claimed=[float(s) for s in sigma],
        sigma_used=[float(s) for s in used],
        wall_time=time.perf_counter() - t0,
    ), {"out": scores[0], "in": scores[1]})


# ------------------------------------------------------------------------ the label canary

#: default trials of :func:`label_audit` (both worlds; one step each, about 0.1 s in all)
LABEL_TRIALS = 20_000


def label_canary_data(*, canary: bool, label: float, n: int = 16, clip_norm: float = 1.0,
                      seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(X, y)`` of :func:`label_audit`: ``X`` as :func:`canary_data` (the canary ``2C e_0`` in
    slot 0, or its record removed), ``y`` float64 with labels in {0, 1} drawn from ``seed`` for the
    ordinary rows and ``label`` (any finite number) for the canary."""
    X, _ = canary_data(canary=canary, n=n, clip_norm=clip_norm, seed=seed)
    y = np.random.default_rng([seed, 30]).integers(0, 2, size=n).astype(np.float64)
    y[0] = label
    return X, torch.as_tensor(y if canary else y[1:])


def label_audit(*, label: float = 2.0, loss: str = "squared", epsilon: float = 2.0, delta: float = 1e-5,
                trials: int = LABEL_TRIALS, seed: int = 0, clip_norm: float = 1.0) -> dict[str, Any]:
    """Audit the binary linear clip-and-sum path with a canary whose label is ``label`` (module
    docstring, "The label canary"). ``label`` 2 or -1 gives ``s = 2y - 1 = +-3``: a
    path that bounds the gradient by ``||x||`` lets the canary contribute ``3 C`` and is flagged.

    Per world, ``trials`` // 2 runs of one private step from ``theta = 0`` at the budget's
    sigma (``schedules.uniform(T=1, R)``, R the zCDP budget of ``(epsilon, delta)``), on the
    oracle :func:`~dpcompanion.training.trainers.oracles.make_oracle` builds for a
    :class:`~dpcompanion.training.dense_models.DenseModel` with ``loss`` and no bias (the margin fast
    path) from :func:`label_canary_data`: the data go to the oracle directly, below the
    trainers' label check, which would refuse them. The adversary recovers the noisy sum from
    the iterate and projects it on the canary's direction ``-sign(s) e_0``. Returns the
    claimed epsilon, both lower bounds and ``flagged`` as :class:`AuditResult` defines them,
    and ``shift_ratio``: the canary's measured contribution in units of C (1 when clipped)."""
    v = validate_audit(trainer="pgd", epsilon=epsilon, delta=delta, trials=trials, seed=seed)
    lab = _check_number("label", label, lo=-math.inf, hi=math.inf, lo_open=True, hi_open=True,
                        allowed="a finite number")
    if loss not in ("squared", "logistic"):
        raise ValueError(f"loss must be one of squared, logistic, got {loss!r}")
    C = _check_number("clip_norm", clip_norm, lo=0.0, hi=math.inf, lo_open=True, hi_open=True,
                      allowed="a finite number > 0")
    t0 = time.perf_counter()
    eps, dl, n_trials = v["epsilon"], v["delta"], v["trials"]
    R = accounting.R_zcdp(epsilon=eps, delta=dl)
    sigma = schedules.uniform(T=1, R=R)
    n, lr = SETUPS["pgd"].n, 1.0
    model = DenseModel(in_dim=2, n_classes=2, loss=loss, bias=False)
    s_sign = float(np.sign(2.0 * lab - 1.0)) or 1.0
    proj = {}
    for world, canary, k in ((0, False, n_trials - n_trials // 2), (1, True, n_trials // 2)):
        X, y = label_canary_data(canary=canary, label=lab, n=n, clip_norm=C, seed=v["seed"])
        oracle = make_oracle(model, X, y, clip_norm=C, fast=True)
        gen = torch.Generator().manual_seed(_seeds(v["seed"], 30 + world, 1)[0])
        theta0 = torch.zeros(k, 2, dtype=torch.float64)
        theta = theta0.clone()
        private_step(oracle, theta, weights=None, noise=torch.randn(k, 2, generator=gen, dtype=torch.float64),
                     std_t=torch.full((k,), C * float(sigma[0]), dtype=torch.float64),
                     lr_t=torch.full((k,), lr, dtype=torch.float64), active=torch.ones(k, dtype=torch.bool),
                     clip_norm=C, denominator=float(n), need_loss=False, need_clip=False, need_grad_norm=False)
        sums = noisy_sums_from_iterates(iterates=torch.stack([theta0, theta]), lr=np.full((k, 1), lr),
                                        denominator=float(n))
        proj[world] = -s_sign * sums[..., 0] / C  # on the canary's clipped gradient -sign(s) C e_0
    scores = {w: log_likelihood_ratio(s=proj[w], sigma=sigma) for w in proj}
    test = epsilon_lower_bound(scores_out=scores[0], scores_in=scores[1], delta=dl, confidence=BOUND_CONFIDENCE)
    gdp = epsilon_lower_gdp(scores_out=scores[0], scores_in=scores[1], delta=dl, confidence=BOUND_CONFIDENCE)
    gdp["model_check"] = gdp_model_check(scores_out=scores[0], scores_in=scores[1])
    lower_gdp = gdp["epsilon_lower"] if gdp["model_check"]["ok"] else None
    lower = max(test["epsilon_lower"], lower_gdp or 0.0)
    claimed, claim_acc = _claimed_epsilon(sigma, delta=dl, sampling_rate=1.0)
    exact, exact_acc = exact_epsilon_of(sigma, delta=dl)
    check = noise_check(proj_out=proj[0], proj_in=proj[1], sigma=sigma)
    return {"label": lab, "s": 2.0 * lab - 1.0, "loss": loss, "epsilon": eps, "delta": dl, "trials": n_trials,
            "seed": v["seed"], "clip_norm": C, "sigma": float(sigma[0]), "fast_path": bool(oracle.fast),
            "epsilon_claimed": claimed, "claim_accountant": claim_acc, "epsilon_exact": exact,
            "exact_accountant": exact_acc, "epsilon_lower": lower, "epsilon_lower_gdp": lower_gdp,
            "epsilon_lower_threshold": test["epsilon_lower"], "flagged": bool(lower > claimed),
            "passed": not lower > claimed, "shift_ratio": check["shift_ratio"],
            "shift_ratio_se": check["shift_ratio_se"], "noise_ratio": check["noise_ratio"], "test": test,
            "gdp_fit": {**gdp, "assumes": GDP_ASSUMPTION}, "wall_time": time.perf_counter() - t0}
