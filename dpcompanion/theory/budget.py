"""The privacy budget as one value, schedules planned against it, and the ledger that enforces it.

A :class:`Budget` (built once, from the command line or Python) goes to the planner (:func:`plan`), the
ledger (:meth:`PrivacyLedger.from_budget`) and through it the trainers; it keeps
the ``epsilon`` asked for. Accountants: ``zcdp`` (Hong et al. 2022, FAccT, arXiv 2101.07413, Lemma C.3,
``R = 2 rho``), ``exact`` (Gaussian DP, Dong, Roth & Su 2019, Cor. 2.13 and 3.3), ``pld`` (dp-accounting),
all full-batch only, and ``rdp`` (:func:`~dpcompanion.theory.accounting.rdp_curve`), also for
Poisson subsampling. Full-batch steps compose to one Gaussian with ``mu = sqrt(R)``, so each accountant is
one budget ``R = sum_t 1/sigma_t^2``; subsampled steps are planned and checked by the RDP epsilon of the
actual steps. The paper's ``p^2/sigma^2`` rule (H Sec. 4.3) is :func:`plan_paper_p2`, never a guarantee.

**The ledger** records each noisy step and refuses to overspend. A trainer calls ``ledger.charge(sigma=...)`` *before* each noisy step and stops when it raises
:class:`BudgetExceeded`: Algorithm 1 of Hong et al. 2022 (FAccT, arXiv 2101.07413), "budget request ...
else terminate", whose release is ``(R/2)``-zCDP by Thm 3.1. Costs are in R units: ``1/sigma^2`` at full
batch, the paper's PSGD rule ``p^2/sigma^2`` at sampling rate ``p`` (H Sec. 4.3). That rule is **not a
guarantee**, so subsampled steps need the ledger's ``delta`` and are also refused if the composed RDP
epsilon (:func:`~dpcompanion.theory.accounting.rdp_curve`, the planner's curve, so a planned
schedule finishes) would exceed the target: the user's epsilon, else ``zcdp_to_dp(rho=R/2, delta)``.
A mixed history is checked by one RDP curve, the full-batch steps before it entering as Gaussians.
A ledger without ``R`` (:class:`EpsilonTarget`, Wu et al.'s protocol) enforces the epsilon alone by RDP."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpcompanion.core import validate
from dpcompanion.theory import accounting, schedules

__all__ = ["ACCOUNTANTS", "Budget", "plan", "make_schedule", "plan_paper_p2", "fit_constant", "PlanRefused",
           "check_epsilon", "largest_within", "BudgetExceeded", "StepRecord", "PrivacyLedger", "EpsilonTarget",
           "SCHEDULE_SLACK"]

#: Accountants a Budget may name (:data:`accounting.ACCOUNTANTS`); the subsampled ones are those the
#: ledger can enforce.
ACCOUNTANTS = accounting.ACCOUNTANTS
SUBSAMPLED_ACCOUNTANTS: tuple[str, ...] = ("rdp",)

#: Budgets a Budget accepts: where every conversion is finite and accurate in float64.
EPSILON_RANGE: tuple[float, float] = (1e-6, 1e6)
RHO_RANGE: tuple[float, float] = (1e-12, 1e12)
R_RANGE: tuple[float, float] = (2e-12, 2e12)

#: Relative margin the planner keeps below the target epsilon, so that rounding in the
#: ledger's step-by-step sum never refuses the last planned step.
PLAN_MARGIN = 1e-9


def check_epsilon(epsilon, name: str = "epsilon") -> float:
    """The epsilon of a budget, in :data:`EPSILON_RANGE` (the one check of every command and :class:`Budget`).

    >>> check_epsilon(1e-300)
    Traceback (most recent call last):
    ...
    ValueError: epsilon must be in [1e-06, 1e+06] (a smaller epsilon's budget underflows in float64, a larger one protects nothing), got 1e-300
    """
    lo, hi = EPSILON_RANGE
    return validate.number(name, epsilon, lo=lo, hi=hi, lo_open=False, hi_open=False,
                           allowed=f"in [{lo:g}, {hi:g}] (a smaller epsilon's budget underflows in float64, "
                                   "a larger one protects nothing)")


class PlanRefused(ValueError):
    """No schedule of the requested shape fits the budget (the message says what fits)."""


@dataclasses.dataclass(frozen=True)
class Budget:
    """A privacy budget: ``epsilon`` at ``delta`` under ``accountant``, for steps sampled at ``sampling_rate``
    (1 = full batch). ``R``: the full-batch budget in the paper's units (``sum_t 1/sigma_t^2 <= R``).
    ``epsilon``/``delta`` are ``None`` only for a full-batch budget given as ``R`` alone. Build it with
    :meth:`from_epsilon` or :meth:`from_R` (both validate).

    >>> b = Budget.from_epsilon(epsilon=4, delta=1e-8)
    >>> b.accountant, round(b.R, 4), b.epsilon      # H Sec. 5: R = 0.3927
    ('zcdp', 0.3927, 4.0)
    >>> Budget.from_epsilon(epsilon=1, delta=1e-5, sampling_rate=0.01).accountant
    'rdp'
    """

    epsilon: float | None
    delta: float | None
    R: float
    accountant: str
    sampling_rate: float = 1.0

    @staticmethod
    def _accountant(accountant: str | None, p: float) -> str:
        if accountant in (None, "auto"):
            return "zcdp" if p == 1.0 else "rdp"
        validate.choice("accountant", accountant, ACCOUNTANTS)
        if p < 1.0 and accountant not in SUBSAMPLED_ACCOUNTANTS:
            raise ValueError(
                f"accountant must be one of {', '.join(SUBSAMPLED_ACCOUNTANTS)} when sampling_rate < 1 "
                f"(got {accountant!r} with sampling_rate={p:g}): zcdp and exact hold for full-batch steps only, "
                "and the ledger checks subsampled steps by RDP"
            )
        return accountant

    @classmethod
    def from_epsilon(cls, *, epsilon: float, delta: float, accountant: str | None = "auto",
                     sampling_rate: float = 1.0) -> "Budget":
        """``(epsilon, delta)``-DP. ``accountant="auto"``: zcdp (the paper) for full batch,
        rdp for ``sampling_rate < 1``."""
        eps = check_epsilon(epsilon)
        d = validate.delta(delta)
        p = validate.sampling_rate(sampling_rate)
        acc = cls._accountant(accountant, p)
        if acc == "zcdp":
            R = accounting.R_zcdp(epsilon=eps, delta=d)
        elif acc == "exact":
            R = accounting.R_exact(epsilon=eps, delta=d)
        else:
            R = accounting.R_accountant(epsilon=eps, delta=d, accountant=acc)
        if not (math.isfinite(R) and R > 0):
            raise ValueError(f"epsilon = {epsilon!r} at delta = {delta!r} gives no finite budget R; use a smaller epsilon")
        # the inversions are root-finders: step R down until the accountant's epsilon of it is within the target
        R = largest_within(lambda r: accounting.epsilon_at_R(R=r, delta=d, accountant=acc) <= eps, float(R))
        return cls(epsilon=eps, delta=d, R=float(R), accountant=acc, sampling_rate=p)

    @classmethod
    def from_R(cls, *, R: float, delta: float | None = None, sampling_rate: float = 1.0,
               accountant: str | None = "auto") -> "Budget":
        """The paper's budget ``R = 2 rho``; with ``delta``, ``epsilon`` is what R stands for (required when
        subsampled: the ledger checks those steps by RDP against it).

        >>> Budget.from_R(R=0.5).epsilon is None
        True
        >>> round(Budget.from_R(R=1.0, delta=1e-5).epsilon, 4)
        5.2985
        """
        r = validate.number("R", R, lo=R_RANGE[0], hi=R_RANGE[1], lo_open=False, hi_open=False)
        p = validate.sampling_rate(sampling_rate)
        acc = cls._accountant(accountant, p)
        if delta is None:
            if p < 1.0:
                raise ValueError(
                    f"delta is required with R when sampling_rate < 1 (got sampling_rate={p:g}): subsampled steps are "
                    "checked by RDP against the epsilon that R stands for at delta"
                )
            return cls(epsilon=None, delta=None, R=r, accountant=acc, sampling_rate=p)
        d = validate.delta(delta)
        eps = accounting.epsilon_at_R(R=r, delta=d, accountant="zcdp" if p < 1.0 else acc)
        return cls(epsilon=float(eps), delta=d, R=r, accountant=acc, sampling_rate=p)

    @property
    def subsampled(self) -> bool:
        return self.sampling_rate < 1.0

    def epsilon_of(self, sigma, accountant: str | None = None) -> float:
        """epsilon at ``delta`` of the steps ``sigma`` under ``accountant`` (default: this budget's): RDP for
        subsampled steps, else the accountant's epsilon of ``sum 1/sigma_t^2``; what the ledger enforces.

        >>> b = Budget.from_epsilon(epsilon=1, delta=1e-5, accountant="exact")
        >>> s = plan(b, "uniform", T=100)
        >>> b.epsilon_of(s) <= 1.0, round(b.epsilon_of(s, "zcdp"), 3)
        (True, 1.322)
        """
        if self.delta is None:
            raise ValueError("this budget has no delta (built from R alone): give delta to report an epsilon")
        acc = self.accountant if accountant is None else accountant
        if self.subsampled:
            validate.choice("accountant", acc, SUBSAMPLED_ACCOUNTANTS)
            return accounting.rdp_epsilon_of(sigma=sigma, delta=self.delta, sampling_rate=self.sampling_rate)
        s = validate.noise_multipliers(sigma)  # steps taken: each finite and > 0 (spent_R alone allows inf)
        return accounting.epsilon_at_R(R=accounting.spent_R(sigma=s), delta=self.delta, accountant=acc)

    def epsilon_by_accountant(self, sigma) -> dict[str, float]:
        """epsilon at ``delta`` of the steps ``sigma`` under every accountant that applies (RDP only when
        subsampled), 0 each for no step; ``pld`` left out beyond :data:`accounting.PLD_MAX_R`
        or below :data:`accounting.PLD_MIN_DELTA`.

        >>> b = Budget.from_epsilon(epsilon=1, delta=1e-5, accountant="exact")
        >>> e = b.epsilon_by_accountant(plan(b, "uniform", T=100))
        >>> sorted(e), e["exact"] <= 1.0 < e["rdp"] < e["zcdp"]
        (['exact', 'pld', 'rdp', 'zcdp'], True)
        """
        names = SUBSAMPLED_ACCOUNTANTS if self.subsampled else ACCOUNTANTS
        if np.size(sigma) == 0:  # no step taken: nothing released
            return {a: 0.0 for a in names}
        if self.subsampled:
            return {a: float(self.epsilon_of(sigma, a)) for a in names}
        if self.delta is None:
            raise ValueError("this budget has no delta (built from R alone): give delta to report an epsilon")
        R = accounting.spent_R(sigma=validate.noise_multipliers(sigma))  # validated and summed once for all
        if R > accounting.PLD_MAX_R or self.delta < accounting.PLD_MIN_DELTA:
            # beyond the pld accountant's range (epsilon ~ 5e5, or delta below its tail truncation): left out
            names = tuple(a for a in names if a != "pld")
        return {a: float(accounting.epsilon_at_R(R=R, delta=self.delta, accountant=a)) for a in names}

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def largest_within(ok, x: float) -> float:
    """``x``, or the nearest float below it for which ``ok`` holds (stepping down 1, 2, 4, ... ulps: ``x``
    may come from a root-finder a little past the boundary); raises :class:`PlanRefused` if none above 0.

    >>> largest_within(lambda v: v <= 0.3, 0.30000000000000004)
    0.3
    """
    x = float(x)
    step = 1.0
    while not ok(x):
        x = min(math.nextafter(x, 0.0), x - step * math.ulp(x))
        step *= 2.0
        if x <= 0.0 or step > 1 << 62:  # pragma: no cover - every check here holds near 0
            raise PlanRefused("no value within the target found")
    return x


def _fits(budget: Budget, sigma: np.ndarray) -> bool:
    """Whether the ledger built from ``budget`` lets every step of ``sigma`` happen."""
    p = budget.sampling_rate
    with np.errstate(divide="ignore", over="ignore"):  # a denormal sigma costs inf: it does not fit
        if np.cumsum(p * p / sigma**2)[-1] > budget.R:  # summed as the ledger sums
            return False
    if budget.epsilon is None:  # a budget given as R alone: R is the whole guarantee
        return True
    return budget.epsilon_of(sigma) <= budget.epsilon  # exactly: the planned budget never exceeds the target


def plan(budget: Budget, kind: str, *, T: int | None = None, **params) -> np.ndarray:
    """The schedule of ``kind`` (a row of :data:`schedules.KIND_TABLE`) that spends ``budget``.

    Full batch: ``schedules.make(kind, T=T, R=budget.R, ...)`` (H Sec. 3), R stepped down by ulps if
    rounding puts its epsilon above the target. Subsampled: the kind fixes the shape; the scale is the
    largest whose RDP epsilon stays within ``epsilon`` (bisection) and whose ``sum p^2/sigma_t^2`` stays
    within R. Either way :meth:`Budget.epsilon_of` of the result is at most ``budget.epsilon`` exactly.

    >>> b = Budget.from_epsilon(epsilon=1, delta=1e-5, sampling_rate=0.01)
    >>> s = plan(b, "uniform", T=300)
    >>> s.shape, bool(b.epsilon_of(s) <= 1.0)
    ((300,), True)
    """
    if T is not None:
        params["T"] = T
    if not budget.subsampled:
        found: dict[float, np.ndarray] = {}

        def fits_at(r: float) -> bool:
            found[r] = schedules.make(kind, R=r, **params)
            return _fits(budget, found[r])

        return found[largest_within(fits_at, budget.R)]
    shape = schedules.make(kind, R=1.0, **params)  # sum 1/shape^2 = 1
    p = budget.sampling_rate
    r_hi = budget.R / (p * p)  # the paper's rule as a cap (the ledger keeps R_spent <= R)
    target = budget.epsilon * (1 - PLAN_MARGIN)

    def eps(r: float) -> float:
        return budget.epsilon_of(shape / math.sqrt(r))

    if eps(r_hi) <= target:
        r = r_hi
    else:
        lo = r_hi
        while eps(lo) > target:
            lo /= 4.0
            if lo < 1e-300:  # pragma: no cover - RDP -> 0 as the noise grows
                raise PlanRefused(f"no scale of the {kind} schedule fits epsilon = {budget.epsilon:g}")
        hi = min(4.0 * lo, r_hi)
        for _ in range(60):
            mid = math.sqrt(lo * hi)
            if eps(mid) <= target:
                lo = mid
            else:
                hi = mid
            if hi / lo < 1 + 1e-10:
                break
        r = lo
    found = {}

    def fits_sub(rr: float) -> bool:
        found[rr] = schedules.fit_within(schedules.make(kind, R=rr, **params), budget.R, sampling_rate=p)
        return _fits(budget, found[rr])

    return found[largest_within(fits_sub, r)]


def make_schedule(budget: Budget, kind: str, *, T: int | None = None, **params) -> np.ndarray:
    """:func:`plan` for the ``schedule`` and ``train`` commands; ``T`` goes only to kinds that take it.

    >>> s = make_schedule(Budget.from_R(R=1.0), "uniform", T=4)
    >>> s.shape, bool(np.sum(1 / s**2) <= 1.0)
    ((4,), True)
    """
    validate.choice("kind", kind, schedules.KINDS)
    return plan(budget, kind, **({"T": T} if schedules.KIND_TABLE[kind].takes_T else {}), **params)


def plan_paper_p2(budget: Budget, kind: str, *, T: int | None = None, **params) -> np.ndarray:
    """The paper's PSGD planning (H Sec. 4.3): a schedule for ``R' = R/p^2``. **Not a privacy guarantee**:
    the ledger also checks the RDP epsilon and may stop it early. Kept to reproduce the paper.

    >>> b = Budget.from_R(R=0.5, delta=1e-5, sampling_rate=0.1)
    >>> round(float(np.sum(0.01 / plan_paper_p2(b, "uniform", T=10) ** 2)), 12)
    0.5
    """
    if T is not None:
        params["T"] = T
    return schedules.make(kind, R=accounting.psgd_R_prime(R=budget.R, sampling_rate=budget.sampling_rate), **params)


def fit_constant(budget: Budget, *, sigma: float, T: int) -> None:
    """Refuse, saying what fits, ``T`` steps of a constant ``sigma`` the budget cannot pay for.

    >>> fit_constant(Budget.from_R(R=0.3927), sigma=3.0, T=10)
    Traceback (most recent call last):
    ...
    dpcompanion.theory.budget.PlanRefused: T = 10 steps of sigma = 3 do not fit the budget (R = 0.3927, zcdp): the largest T that fits is 3, or use sigma >= 5.04626 for T = 10
    """
    s = float(validate.noise_multipliers([sigma])[0])
    T = validate.steps(T)
    if _fits(budget, np.full(T, s)):
        return
    lo, hi = 0, T  # largest fitting T by bisection (fits(lo) true, fits(hi) false)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fits(budget, np.full(mid, s)):
            lo = mid
        else:
            hi = mid
    smin = float(plan(budget, "uniform", T=T)[0])
    shown = float(f"{smin:.6g}")
    if shown < smin:  # round the advice up, so that the sigma it names does fit
        shown = float(f"{smin + 10 ** (math.floor(math.log10(smin)) - 5):.6g}")
    what = f"R = {budget.R:.6g}, {budget.accountant}" + (
        f", epsilon = {budget.epsilon:g} at delta = {budget.delta:g}, sampling_rate = {budget.sampling_rate:g}"
        if budget.subsampled else "")
    largest = f"the largest T that fits is {lo}" if lo else "not even one step fits"
    raise PlanRefused(f"T = {T} steps of sigma = {s:g} do not fit the budget ({what}): {largest}, "
                      f"or use sigma >= {shown:.6g} for T = {T}")


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
                                                                             accounting.ACCOUNTANTS)
        self.orders = accounting.rdp_orders(orders)
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
        c = accounting.step_cost(sigma, sampling_rate)
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
        step = accounting.step_rdp(sigma, sampling_rate, self._orders_key)
        # the first step checked by RDP composes with the full-batch steps before it: Gaussians of RDP alpha R_spent / 2
        rdp = (step + self.orders * (0.5 * self._spent)) if self._rdp is None else self._rdp + step
        eps = accounting.rdp_epsilon(orders=self.orders, rdp=rdp, delta=self.delta)
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
        dpcompanion.theory.budget.BudgetExceeded: step 2 would spend 1 but only 0.25 of R = 0.5 remains (spent 0.25)
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
            out["epsilon_rdp"] = accounting.accountant_epsilon(
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
        return accounting.epsilon_at_R(R=self._spent, delta=self.delta, accountant=self.accountant)

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
            object.__setattr__(self, "orders", tuple(float(o) for o in accounting.rdp_orders(self.orders)))
        object.__setattr__(self, "rel_slack", validate.number("rel_slack", self.rel_slack, lo=0.0, lo_open=False))

    @property
    def R(self) -> None:
        """No full-batch budget R: the target is the epsilon alone."""
        return None
