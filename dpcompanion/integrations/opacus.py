"""Opacus integration: a user's Opacus training follows a dpcompanion schedule step by step.

Units. Opacus adds noise with std ``noise_multiplier * max_grad_norm`` to the *sum* of the
clipped per-sample gradients and divides by the (expected) batch size: ``noise_multiplier *
C / B`` on the mean gradient, exactly Hong et al.'s ``sigma_t C / N`` (FAccT 2022, Eq. 1 with
clipping) when the batch is the full data set. So a schedule's ``sigma_t`` *is* Opacus's
``noise_multiplier`` at step t (for Poisson-sampled training, account it with a subsampled
accountant, not with the paper's zCDP budget).

Usage::

    sigma = schedules.gd_dynamic(T=100, R=0.3927, kappa=50)
    engine = PrivacyEngine(accountant="rdp")
    model, optimizer, loader, noise = make_private_with_schedule(
        engine, module=model, optimizer=optimizer, data_loader=loader, sigma=sigma, max_grad_norm=1.0)
    for x, y in loader:
        optimizer.zero_grad(); loss_fn(model(x), y).backward()
        optimizer.step()                     # uses sigma_t; refuses a step beyond the schedule
        noise.step()                         # moves to sigma_{t+1}

Unlike Opacus's stock schedulers, :class:`ScheduleNoise` refuses a schedule with a
non-finite or non-positive multiplier, raises before the parameters are updated (and before
Opacus's accountant records the step) on a step beyond T or one whose multiplier differs
from the schedule (``noise.step()`` forgotten), and charges an optional
:class:`~dpcompanion.theory.budget.PrivacyLedger` for every step.
"""

from __future__ import annotations

import math
from typing import Callable

from opacus.accountants import RDPAccountant
from opacus.schedulers.noise_scheduler import _NoiseScheduler

from dpcompanion.core import validate
from dpcompanion.theory.budget import BudgetExceeded, PrivacyLedger

__all__ = ["ScheduleNoise", "make_private_with_schedule", "noise_lambda", "opacus_epsilon"]


class ScheduleNoise(_NoiseScheduler):
    """Sets ``optimizer.noise_multiplier = sigma[k]`` for the k-th noisy step (k = 0..T-1); call
    :meth:`step` after each ``optimizer.step()``. ``sampling_rate`` is only used to charge ``ledger``."""

    def __init__(self, optimizer, *, sigma, ledger: PrivacyLedger | None = None, sampling_rate: float = 1.0):
        self.sigma = validate.noise_multipliers(sigma)
        self.ledger = ledger
        self.sampling_rate = validate.sampling_rate(sampling_rate)
        self.steps_taken = 0
        previous: Callable | None = getattr(optimizer, "step_hook", None)

        def guard(optim) -> None:
            k = self.steps_taken
            if k >= len(self.sigma):
                raise BudgetExceeded(f"the schedule has {len(self.sigma)} steps and all are spent; a further noisy "
                                     "step is refused")
            if not math.isclose(optim.noise_multiplier, self.sigma[k], rel_tol=1e-12):
                raise ValueError(f"optimizer.noise_multiplier is {optim.noise_multiplier} at step {k + 1} but the "
                                 f"schedule says {self.sigma[k]}; call ScheduleNoise.step() after every "
                                 "optimizer.step()")
            if self.ledger is not None:
                self.ledger.charge(sigma=float(self.sigma[k]), sampling_rate=self.sampling_rate, step=k + 1)
            self.steps_taken = k + 1
            if previous is not None:
                previous(optim)  # Opacus's accountant records the step only once it is allowed

        optimizer.attach_step_hook(guard)
        super().__init__(optimizer)

    @property
    def exhausted(self) -> bool:
        """True once all T noisy steps were taken."""
        return self.steps_taken >= len(self.sigma)

    def get_noise_multiplier(self) -> float:
        return float(self.sigma[min(self.last_epoch, len(self.sigma) - 1)])


def make_private_with_schedule(engine, *, module, optimizer, data_loader, sigma, max_grad_norm: float,
                               poisson_sampling: bool = True, ledger: PrivacyLedger | None = None, **kwargs):
    """``engine.make_private`` with ``noise_multiplier = sigma[0]``, plus a :class:`ScheduleNoise`:
    returns ``(module, optimizer, data_loader, noise_scheduler)``. For full-batch training pass
    a loader whose batch is the whole data set and ``poisson_sampling=False``."""
    s = validate.noise_multipliers(sigma)
    module, optimizer, data_loader = engine.make_private(module=module, optimizer=optimizer, data_loader=data_loader,
                                                         noise_multiplier=float(s[0]), max_grad_norm=max_grad_norm,
                                                         poisson_sampling=poisson_sampling, **kwargs)
    rate = 1.0 / len(data_loader)
    return module, optimizer, data_loader, ScheduleNoise(optimizer, sigma=s, ledger=ledger, sampling_rate=rate)


def noise_lambda(sigma) -> Callable[[int], float]:
    """The factor function for Opacus's stock ``LambdaNoise`` (base multiplier ``sigma[0]``),
    without the guards of :class:`ScheduleNoise`; past step T it keeps ``sigma[-1]``."""
    s = validate.noise_multipliers(sigma)

    def factor(k: int) -> float:
        return float(s[min(k, len(s) - 1)] / s[0])

    return factor


def opacus_epsilon(*, sigma, sampling_rate: float, delta: float) -> float:
    """epsilon that Opacus's own RDP accountant reports for the schedule: a cross-check against
    another library (this package's accountant is :mod:`dpcompanion.theory.accounting`)."""
    p = validate.sampling_rate(sampling_rate)
    validate.delta(delta)
    acc = RDPAccountant()
    for s in validate.noise_multipliers(sigma):
        acc.step(noise_multiplier=float(s), sample_rate=p)
    return float(acc.get_epsilon(delta))
