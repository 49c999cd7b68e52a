"""A thin privacy ledger: records each noisy step and refuses to overspend.

A trainer calls ``ledger.charge(sigma=...)`` *before* each noisy step and stops when it raises
:class:`BudgetExceeded`: Algorithm 1 of Hong et al. 2022 (FAccT, arXiv 2101.07413), "budget request ...
else terminate", whose release is ``(R/2)``-zCDP by Thm 3.1. Costs are in R units: ``1/sigma^2`` at full
batch, the paper's PSGD rule ``p^2/sigma^2`` at sampling rate ``p`` (H Sec. 4.3). That rule is **not a
guarantee**, so subsampled steps need the ledger's ``delta`` and are also refused if the composed RDP
epsilon (:func:`~dpcompanion.theory.numerical_accounting.rdp_curve`, the planner's curve, so a planned
schedule finishes) would exceed the target: the user's epsilon, else ``zcdp_to_dp(rho=R/2, delta)``.
A mixed history is checked by one RDP curve, the full-batch steps before it entering as Gaussians.
A ledger without ``R`` (:class:`EpsilonTarget`, Wu et al.'s protocol) enforces the epsilon alone by RDP."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpcompanion.core import validate
from dpcompanion.theory import accounting, numerical_accounting

__all__ = ["BudgetExceeded", "StepRecord", "PrivacyLedger", "EpsilonTarget", "SCHEDULE_SLACK"]

#: Relative slack on the epsilon check of subsampled steps (rounding in the running RDP sum); the R
#: check has none (:func:`dpcompanion.theory.schedules.fit_within`).
REL_SLACK = 1e-12


class BudgetExceeded(ValueError):
    """A requested step would spend more than the remaining budget (nothing was recorded)."""


@dataclasses.dataclass(frozen=True)
class StepRecord:
    """One recorded noisy step."""

    step: int
    sigma: float
    sampling_rate: float
    cost: float
    spent_after: float


class PrivacyLedger:
    """Records noisy steps against a budget ``R`` (paper units: R = 2 rho).

    >>> led = PrivacyLedger(R=1.0)
    >>> for s in [2.0, 2.0, 2.0, 2.0]:
    ...     _ = led.charge(sigma=s)
    >>> led.spent, led.remaining, len(led.history)
    (1.0, 0.0, 4)
    >>> led.can_afford(sigma=100.0)
    False
    """

    def __init__(self, *, R: float | None, delta: float | None = None, epsilon: float | None = None,
                 accountant: str | None = None, orders=None, rel_slack: float = REL_SLACK):
        if R is None and (epsilon is None or delta is None):
            raise ValueError("R is required unless the ledger enforces an (epsilon, delta) target alone")
        self.R = None if R is None else validate.positive("R", R)
        self.delta = None if delta is None else validate.delta(delta)
        if epsilon is not None and delta is None:
            raise ValueError("epsilon needs delta: the target is (epsilon, delta)-DP")
        #: the epsilon subsampled steps are checked against: the user's, else what R stands for (H Lemma C.3)
        if epsilon is not None:
            self.epsilon_target = validate.positive("epsilon", epsilon)
        elif delta is None:
            self.epsilon_target = None
        else:
            self.epsilon_target = accounting.zcdp_to_dp(rho=accounting.rho_from_R(R=self.R), delta=self.delta)
        #: the accountant full-batch spending is reported by (:meth:`spent_epsilon`): the budget's
        self.accountant = "zcdp" if accountant is None else validate.choice("accountant", accountant,
                                                                             numerical_accounting.ACCOUNTANTS)
        self.orders = numerical_accounting.rdp_orders(orders)
        self._orders_key = tuple(self.orders)  # the key of the cached per-step RDP curves
        self.rel_slack = float(rel_slack)
        self._spent = 0.0
        self._history: list[StepRecord] = []
        self._rdp: np.ndarray | None = None  # running RDP curve of the subsampled history
        self._rdp_epsilon = 0.0  # its epsilon at delta

    @classmethod
    def from_budget(cls, budget) -> "PrivacyLedger":
        """The ledger of a :class:`~dpcompanion.theory.budget.Budget` (its R, delta, accountant and the user's
        epsilon) or of an :class:`EpsilonTarget` (its epsilon at delta alone, by RDP at its orders).

        >>> from dpcompanion.theory.budget import Budget
        >>> led = PrivacyLedger.from_budget(Budget.from_epsilon(epsilon=1.0, delta=1e-5, sampling_rate=0.01))
        >>> led.epsilon_target
        1.0
        >>> PrivacyLedger.from_budget(EpsilonTarget(epsilon=2.0, delta=1e-5))
        PrivacyLedger(epsilon=2, delta=1e-05, spent=0, steps=0)
        """
        if isinstance(budget, EpsilonTarget):
            return cls(R=None, delta=budget.delta, epsilon=budget.epsilon, orders=budget.orders,
                       rel_slack=budget.rel_slack)
        return cls(R=budget.R, delta=budget.delta, epsilon=budget.epsilon, accountant=budget.accountant)

    @property
    def spent(self) -> float:
        """Budget spent so far (R units)."""
        return self._spent

    @property
    def remaining(self) -> float:
        """Budget left (never negative).

        >>> PrivacyLedger(R=0.5).remaining
        0.5
        """
        return math.inf if self.R is None else max(0.0, self.R - self._spent)

    @property
    def history(self) -> list[StepRecord]:
        """The recorded steps, oldest first (a copy)."""
        return list(self._history)

    def _assess(self, sigma: float, sampling_rate: float) -> tuple[float, np.ndarray | None, float, str | None]:
        """(cost in R units, RDP curve after the step or None, its epsilon, reason to refuse or None)."""
        sigma = float(validate.noise_multipliers([sigma])[0])  # the ledger's boundary: validated once here
        sampling_rate = validate.sampling_rate(sampling_rate)
        c = numerical_accounting.step_cost(sigma, sampling_rate)
        if self.R is not None and self._spent + c > self.R:
            return c, None, 0.0, (f"would spend {c:.6g} but only {self.remaining:.6g} of R = {self.R:.6g} remains "
                                  f"(spent {self._spent:.6g})")
        if self.R is not None and float(sampling_rate) == 1.0 and self._rdp is None:
            return c, None, 0.0, None
        if self.delta is None:
            raise ValueError(
                f"a subsampled step (sampling_rate={sampling_rate}) needs the ledger's delta: the paper's "
                "p^2/sigma^2 rule is not a guarantee, so such steps are also checked with an RDP accountant at delta"
            )
        step = numerical_accounting.step_rdp(sigma, sampling_rate, self._orders_key)
        # the first step checked by RDP composes with the full-batch steps before it: Gaussians of RDP alpha R_spent / 2
        rdp = (step + self.orders * (0.5 * self._spent)) if self._rdp is None else self._rdp + step
        eps = numerical_accounting.rdp_epsilon(orders=self.orders, rdp=rdp, delta=self.delta)
        if eps > self.epsilon_target * (1 + self.rel_slack):
            stands = "asked for" if self.R is None else f"that R = {self.R:.6g} stands for"
            return c, None, eps, (f"would bring the RDP epsilon to {eps:.6g} at delta = {self.delta:g}, above the "
                                  f"target {self.epsilon_target:.6g} {stands}")
        return c, rdp, eps, None

    def can_afford(self, *, sigma: float, sampling_rate: float = 1.0) -> bool:
        """Whether a step stays within ``R`` (exactly) and, if subsampled, within the target epsilon by RDP.

        >>> PrivacyLedger(R=1.0).can_afford(sigma=0.5)
        False
        >>> led, n = PrivacyLedger(R=0.4, delta=1e-8), 0
        >>> while led.can_afford(sigma=1.0, sampling_rate=0.01):
        ...     _ = led.charge(sigma=1.0, sampling_rate=0.01); n += 1
        >>> n, round(led.spent / led.R, 2)   # the paper's p^2/sigma^2 rule alone: 4000 steps
        (2056, 0.51)
        """
        return self._assess(sigma, sampling_rate)[3] is None

    def charge(self, *, sigma: float, sampling_rate: float = 1.0, step: int | None = None) -> StepRecord:
        """Record a step, or raise :class:`BudgetExceeded` without recording anything.

        >>> led = PrivacyLedger(R=0.5)
        >>> led.charge(sigma=2.0).cost
        0.25
        >>> led.charge(sigma=1.0)
        Traceback (most recent call last):
        ...
        dpcompanion.theory.ledger.BudgetExceeded: step 2 would spend 1 but only 0.25 of R = 0.5 remains (spent 0.25)
        """
        k = len(self._history) + 1 if step is None else int(step)
        c, rdp, eps, reason = self._assess(sigma, sampling_rate)
        if reason is not None:
            raise BudgetExceeded(f"step {k} {reason}")
        if rdp is not None:
            self._rdp, self._rdp_epsilon = rdp, eps
        self._spent += c
        rec = StepRecord(step=k, sigma=float(sigma), sampling_rate=float(sampling_rate), cost=c, spent_after=self._spent)
        self._history.append(rec)
        return rec

    def epsilon(self, delta: float) -> dict[str, float | None]:
        """The spent budget as ``(epsilon, delta)``: ``R_spent`` (R units), ``rho`` (``sum_t 1/(2 sigma_t^2)``,
        ignoring subsampling's amplification), ``epsilon_zcdp`` (H Lemma C.3 of rho), ``epsilon_exact``
        (GDP; ``None`` if any step was subsampled) and, for subsampled histories, ``epsilon_rdp``.

        >>> led = PrivacyLedger(R=1.0)
        >>> _ = led.charge(sigma=1.0)
        >>> e = led.epsilon(1e-5)
        >>> round(e["epsilon_zcdp"], 4), round(e["epsilon_exact"], 4)
        (5.2985, 4.3772)
        """
        delta = float(delta)
        sig = np.array([r.sigma for r in self._history], dtype=np.float64)
        rates = {r.sampling_rate for r in self._history}
        rho = accounting.rho_from_R(R=self._spent if rates <= {1.0} else accounting.spent_R(sigma=sig))
        out: dict[str, float | None] = {
            "R_spent": self._spent,
            "rho": rho,
            "delta": delta,
            "epsilon_zcdp": accounting.zcdp_to_dp(rho=rho, delta=delta),
            "epsilon_exact": None,
        }
        if not self._history:
            out["epsilon_exact"] = 0.0
        elif rates == {1.0}:
            out["epsilon_exact"] = accounting.exact_epsilon(sigma=sig, delta=delta)
        else:
            out["epsilon_rdp"] = numerical_accounting.accountant_epsilon(
                sigma=sig, delta=delta, sampling_rate=[r.sampling_rate for r in self._history])
        return out

    def spent_epsilon(self) -> float | None:
        """The epsilon at ``delta`` of the recorded steps by the accountant the ledger enforces: the running RDP
        epsilon if any step was subsampled (or there is no R), else ``R_spent`` by the budget's accountant.
        None without delta; 0 before any step.

        >>> led = PrivacyLedger(R=1.0, delta=1e-5)
        >>> _ = led.charge(sigma=1.0)
        >>> round(led.spent_epsilon(), 4)        # zcdp: H Lemma C.3 of R_spent = 1
        5.2985
        """
        if self.delta is None:
            return None
        if self._rdp is not None or not self._history:
            return float(self._rdp_epsilon)
        return numerical_accounting.epsilon_at_R(R=self._spent, delta=self.delta, accountant=self.accountant)

    def __repr__(self) -> str:
        target = f"R={self.R:g}" if self.R is not None else f"epsilon={self.epsilon_target:g}, delta={self.delta:g}"
        return f"PrivacyLedger({target}, spent={self._spent:g}, steps={len(self._history)})"


#: relative slack of an :class:`EpsilonTarget` (rounding in a schedule calibrated to the target exactly)
SCHEDULE_SLACK = 1e-9


@dataclasses.dataclass(frozen=True)
class EpsilonTarget:
    """A budget that is an ``(epsilon, delta)`` target alone (no R; Wu et al.'s protocol): its ledger refuses
    a step that would take the RDP epsilon at ``orders`` (None: the default) above ``epsilon`` (relative
    slack ``rel_slack``). Frozen and hashable: runs sharing a schedule and a target share one ledger.

    >>> led = PrivacyLedger.from_budget(EpsilonTarget(epsilon=1e9, delta=1e-5, orders=[2, 3]))
    >>> [led.charge(sigma=1.0, sampling_rate=0.5).step for _ in range(3)], led.spent_epsilon() > 0
    ([1, 2, 3], True)
    >>> EpsilonTarget(epsilon=-1.0, delta=1e-5)
    Traceback (most recent call last):
    ...
    ValueError: epsilon must be a finite number > 0, got -1.0
    """

    epsilon: float
    delta: float
    orders: tuple[float, ...] | None = None
    rel_slack: float = SCHEDULE_SLACK

    def __post_init__(self):
        object.__setattr__(self, "epsilon", validate.positive("epsilon", self.epsilon))
        object.__setattr__(self, "delta", validate.delta(self.delta))
        if self.orders is not None:  # a tuple (hashable), the validated orders' values
            object.__setattr__(self, "orders", tuple(float(o) for o in numerical_accounting.rdp_orders(self.orders)))
        object.__setattr__(self, "rel_slack", validate.number("rel_slack", self.rel_slack, lo=0.0, lo_open=False))

    @property
    def R(self) -> None:
        """No full-batch budget R: the target is the epsilon alone."""
        return None
