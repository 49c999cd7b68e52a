"""Empirical privacy audit of the private trainers: a white-box canary test with two lower
bounds on epsilon, a Gaussian-DP fit (tight, assumes Gaussian noise) and a threshold test
with Clopper-Pearson intervals (distribution-free, loose).

An ``(epsilon, delta)``-DP trainer bounds every membership test: ``FPR + e^epsilon FNR >= 1 - delta``
and symmetrically (Kairouz, Oh & Viswanath arXiv 1311.0776v4 Thm 2.1; Dong, Roth & Su arXiv
1905.02383v3 Sec. 2). Training many times with and without a *canary* and bounding a test's error
rates from above gives a lower bound on the real epsilon (Jagielski, Ullman & Oprea arXiv
2006.07709v1; Nasr et al. arXiv 2101.04535v1); above the ledger's claim, the claim is false (95 %
confidence). A bound below the claim proves nothing about privacy.

* **Worst pair of the relation.** :class:`CanaryModel` has the linear loss ``-<theta, x>`` (every
  gradient ``-x``, whatever the trajectory). The world *with* the canary holds ``x = 2C e_0`` (clipped
  to norm ``C``) in slot 0 and the ``N - 1`` ordinary rows; the world *without* only the ordinary rows
  (add/remove-one, :data:`~dpcompanion.training.trainers.config.NEIGHBOURING`), both trained with the
  same public ``N``, so the clipped sums differ by exactly ``C e_0`` (Hong et al. 2022, FAccT,
  Algorithm 1, Def. C.1, Thm 3.1). In the full-batch audits the ordinary rows are ``-2C e_0``, so a
  trainer dividing by its data's own size (moving the average by ``2C/N``) would be flagged.
* **White-box adversary.** It sees every iterate, recovers each step's noisy sum (undoing debiased
  momentum, H Eq. (3)) and projects it on the canary's gradient: ``s_t = b_t + sigma_t z_t``, ``b_t = 0``
  without the canary, ``Bernoulli(p)`` with it. The statistic is the log likelihood ratio (most
  powerful by Neyman-Pearson).
* **Bound 1, Gaussian-DP fit** (full batch; ``epsilon_lower_gdp``): the statistic is Gaussian,
  means ``mu = sqrt(sum_t 1/sigma_t^2)`` sd apart (Dong, Roth & Su Cor. 3.3); a lower confidence bound
  on ``mu`` from the noncentral t law, converted at ``delta`` (as Nasr et al. 2023, arXiv 2302.07956).
  Sound only if the noise is Gaussian (:func:`gdp_model_check`; withheld when rejected).
* **Bound 2, threshold test** (``epsilon_lower_threshold``): a quarter of the trials choose the
  threshold, the rest give error counts with one-sided Clopper-Pearson bounds at ``alpha / 2``.
  Distribution-free, but a rate below about ``3.7 / n`` cannot be certified with ``n`` trials.
* **Verdict.** Each bound at 97.5 % (:data:`BOUND_CONFIDENCE`), both together at 95 %;
  ``flagged`` when the larger exceeds the claim; :func:`noise_check` compares the projections'
  moments with what the accountant assumes.

``noise_multiplier_scale = S`` hands a trainer the schedule ``S sigma`` with a ledger budget it fits,
and claims what ``sigma`` is worth: what a trainer whose noise is ``S`` times what its ledger believes
would report (``S = 1``: as shipped). The claim: full batch, the ledger's zCDP conversion (H Lemma
C.3); Poisson, the RDP epsilon the ledger checks. ``epsilon_exact``: the exact GDP epsilon (full
batch) or dp-accounting's PLD epsilon of the noise used.

:func:`label_audit` audits the linear fast path with a canary of arbitrary label, built below the
trainers' label check: one private step per trial, the same adversary and bounds; a path letting the
canary contribute more than ``C`` shows as ``shift_ratio`` above 1.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Sequence

import numpy as np
import torch

from dpcompanion.core.provenance import resolve_device
from dpcompanion.theory import accounting, schedules
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
from dpcompanion.theory.budget import Budget, PrivacyLedger
from dpcompanion.training.dense_models import DenseModel
from dpcompanion.training.model_base import ClipResult, Model, clip_factors, norms64
from dpcompanion.training.trainers import TrainConfig, train, train_adpsgd
from dpcompanion.training.trainers.config import NEIGHBOURING
from dpcompanion.training.trainers.adp_sgd import adp_schedule
from dpcompanion.training.trainers.engine import debias_factor, private_step
from dpcompanion.training.trainers.oracles import make_oracle

__all__ = ["TRAINERS", "SETUPS", "AuditSetup", "AuditResult", "MIN_TRIALS", "MAX_TRIALS", "SCALE_RANGE",
           "BOUND_CONFIDENCE", "GDP_ASSUMPTION", "CanaryModel", "canary_data", "ordinary_shift",
           "noisy_sums_from_iterates", "noise_check", "validate_audit", "run_audit", "audit_scores", "LABEL_TRIALS",
           "label_canary_data", "label_audit"]

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


#: per trainer: 40,000 full-batch trials put the Gaussian-DP bound near 95 % of the exact epsilon at
#: (2, 1e-5); PSGD gets no Gaussian-DP bound, so the most trials accepted. ADP-SGD is audited full
#: batch by default (``sampling_rate=`` audits it subsampled).
SETUPS: dict[str, AuditSetup] = {
    "pgd": AuditSetup("pgd", T=10, sampling_rate=1.0, schedule="gd-dynamic (kappa = 10)", trials=40_000),
    "momentum": AuditSetup("momentum", T=10, sampling_rate=1.0, schedule="momentum-dynamic (kappa = 10, beta = 0.5)",
                           trials=40_000, momentum=0.5),
    "psgd": AuditSetup("psgd", T=3, sampling_rate=0.7, schedule="uniform, the paper's R' = R/p^2", trials=200_000),
    "adp": AuditSetup("adp", T=10, sampling_rate=1.0, schedule="ADP-SGD alpha_t^2 = sqrt(20 + t), polynomial steps",
                      trials=40_000, lr=1.0),
}


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
    """``(X, y)`` in 2 dimensions: with the canary, ``n`` rows, row 0 the canary ``2C e_0``; without
    it, the ``n - 1`` ordinary rows alone. The ordinary rows lie along coordinate 1 (drawn from
    ``seed``), or with ``opposed`` (full batch) are all ``-2C e_0`` (:func:`ordinary_shift`)."""
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
    """Does the trainer add what the accountant assumes? From the projections ``(K, T)`` (units of
    ``C``): ``noise_ratio``, the sd of ``s_t / sigma_t`` without the canary (1 for noise ``C sigma_t``),
    and ``shift_ratio``, the mean shift with the canary over ``p`` (1 when the canary enters with
    probability ``p`` and the sum is divided by the fixed ``p N``), each with its ``*_se``.

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
    the ledger checks each step against (:func:`dpcompanion.theory.accounting.rdp_epsilon_of`)."""
    if sampling_rate == 1.0:
        return (accounting.epsilon_at_R(R=accounting.spent_R(sigma=sigma), delta=delta, accountant="zcdp"),
                "zcdp (the ledger's conversion, H Lemma C.3)")
    return (accounting.rdp_epsilon_of(sigma=sigma, delta=delta, sampling_rate=sampling_rate),
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
        eps = accounting.rdp_epsilon_of(sigma=sigma, delta=delta, sampling_rate=p)
        need = max(need, accounting.R_zcdp(epsilon=eps, delta=delta))
    return max(R, need * (1.0 + 1e-9))


def _lower_bounds(scores: dict, *, delta: float, gdp_fit: bool):
    """``(test, gdp, lower_gdp, lower)``: the threshold test, the Gaussian-DP fit (where ``gdp_fit``),
    the fit's bound (only where the scores do not reject its model) and the larger bound."""
    test = epsilon_lower_bound(scores_out=scores[0], scores_in=scores[1], delta=delta, confidence=BOUND_CONFIDENCE)
    gdp = None
    if gdp_fit:
        gdp = epsilon_lower_gdp(scores_out=scores[0], scores_in=scores[1], delta=delta, confidence=BOUND_CONFIDENCE)
        gdp["model_check"] = gdp_model_check(scores_out=scores[0], scores_in=scores[1])
    lower_gdp = None if gdp is None or not gdp["model_check"]["ok"] else gdp["epsilon_lower"]
    return test, gdp, lower_gdp, max(test["epsilon_lower"], lower_gdp or 0.0)


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
        # the paper's R' = R/p^2, raised by the few ulps by which the ledger's float64 sum of p^2/sigma^2 may exceed R
        p = setup.sampling_rate
        return schedules.fit_within(schedules.uniform(T=setup.T, R=accounting.psgd_R_prime(R=R, sampling_rate=p)),
                                    R, sampling_rate=p)
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
    """Audit one trainer at the budget ``(epsilon, delta)``: ``(result, {"out": scores, "in": scores})``,
    each trial's statistic without and with the canary. ``trials``: in all (half with the canary;
    default :data:`SETUPS`); ``noise_multiplier_scale`` S (module docstring); ``seed``: all randomness;
    ``sampling_rate``: for psgd and adp. Raises ``ValueError`` on bad input, before any training.
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
    # full batch: the statistic is Gaussian with a mean shift (see epsilon_lower_gdp)
    test, gdp, lower_gdp, lower = _lower_bounds(scores, delta=dl, gdp_fit=p == 1.0)
    eps_claimed, claim_acc = _claimed_epsilon(sigma, delta=dl, sampling_rate=p)
    eps_actual = _claimed_epsilon(used, delta=dl, sampling_rate=p)[0]
    eps_exact, exact_acc = exact_epsilon_of(used, delta=dl, sampling_rate=p)
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
        epsilon_lower_threshold=test["epsilon_lower"],
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
    """Audit the binary linear clip-and-sum path with a canary labelled ``label`` (2 or -1 give
    ``s = 2y - 1 = +-3``: a path bounding the gradient by ``||x||`` would let it contribute ``3 C``).

    Per world, ``trials // 2`` runs of one private step from ``theta = 0`` at the budget's sigma, on
    the fast-path oracle of a bias-free :class:`~dpcompanion.training.dense_models.DenseModel` fed
    :func:`label_canary_data` directly (below the trainers' label check). Returns the claimed epsilon,
    both lower bounds, ``flagged`` and ``shift_ratio``, the canary's contribution in units of C."""
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
    test, gdp, lower_gdp, lower = _lower_bounds(scores, delta=dl, gdp_fit=True)
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
