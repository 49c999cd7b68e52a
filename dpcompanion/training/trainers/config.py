"""The frozen configuration of a private training call, validated once.

:meth:`TrainConfig.build` checks everything before any step (a bad value raises one ``ValueError``
naming the parameter, the value and what is allowed); the loop (:func:`dpcompanion.training.train`)
trusts the config; ``train_pgd``, ``train_psgd`` and ``train_adpsgd`` only build one.

**No noiseless step.** Every sigma must be finite, > 0 and at least :func:`sigma_floor`: below it
the noise scale ``C sigma / (p N)`` is not a normal number of the training dtype, or the cost
``1/sigma^2`` overflows a float64; a sigma whose noise scale overflows the dtype is refused too.

**Whose secret the noise is.** A seeded run (``secure=False``, the book's reproducible runs) draws
its noise from a function of ``seed``: anyone who knows the seed can replay and subtract it, so its
guarantee holds only while the seed stays secret (:data:`SEEDED_NOISE_NOTE`). ``secure=True`` seeds
the noise from ``os.urandom`` on every call, per run, recording nothing (:data:`SECURE_NOISE_NOTE`).

**Which neighbours** (:data:`NEIGHBOURING`): every guarantee is for the *add/remove-one* relation
(dp-accounting's, and Hong et al. FAccT 2022 Def. C.1). The trainers divide the clipped, noised sum
by a *public* ``N`` (``TrainConfig.N``; ``p N`` under Poisson sampling, as Opacus), never by the size
of the data handed in: removing one record then moves the sum by at most ``C`` and the average by at
most ``C / N``, the sensitivity charged; dividing by the data's own size would move it by up to
``2C/N``. ``N = None`` takes the size of ``X``, which the caller thereby declares public. Statistics
on the raw training data (:data:`OUTSIDE_GUARANTEE`) are not covered and are labelled so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np
import torch

from dpcompanion.core import validate
from dpcompanion.core.provenance import resolve_device
from dpcompanion.theory.budget import Budget, EpsilonTarget

__all__ = ["DEFAULT_MEMORY_BUDGET", "NEIGHBOURING", "OUTSIDE_GUARANTEE", "OUTSIDE_GUARANTEE_NOTE", "ON_REFUSAL",
           "ROUNDING_NOTE", "rounding_excess_bound",
           "RECORDABLE", "SECURE_NOISE_NOTE", "SEEDED_NOISE_NOTE", "TrainConfig", "as_runs", "check_sigma",
           "sigma_floor"]

#: bytes a training call may use for its run-dependent state (runs are trained in chunks below it)
DEFAULT_MEMORY_BUDGET = 4 * 2**30

#: what a run whose ledger refuses a step does (``TrainConfig.on_refusal``): ``stop`` (it draws
#: and computes nothing more) or ``hold`` (it keeps its place in the batch at step size 0)
ON_REFUSAL = ("stop", "hold")

#: per-step fields a trainer can record (``record=``); the History holds None for the rest
RECORDABLE = ("loss", "grad_norm", "clip_fraction", "sigma", "lr", "budget_spent")

#: the neighbouring relation of every guarantee the library states (module docstring)
NEIGHBOURING = ("add/remove one record; the clipped, noised gradient sum is divided by the public N "
                "(N_public; p N_public under Poisson sampling), the same for both neighbours")

#: what the sensitivity C leaves out (recorded with every run): rounding, bounded by :func:`rounding_excess_bound`
ROUNDING_NOTE = (
    "the sensitivity C charged is that of exact arithmetic: in floating point, removing a record also changes how "
    "the other records' contributions round, so the computed sum can move by more than C; rounding_excess_bound "
    "bounds that excess relative to C for the linear and logistic models (worst case over the data); for the MLPs "
    "and CNNs none is proven (there each record's own factors round differently once a record is removed) and "
    "it is None; the excess is not charged to the budget"
)


def rounding_excess_bound(n: int, dtype: torch.dtype) -> float:
    """Worst case over the data of ``||fl(S(D)) - fl(S(D'))|| / C - 1`` for the clipped gradient sum of a
    linear or logistic model over ``n`` records in ``dtype``, D' = D less one record, in any summation order:
    ``2 n gamma_{n+2}``, ``gamma_k = k u / (1 - k u)`` (``u`` the unit roundoff; inf once ``(n + 2) u >= 1``).

    Derivation. Each record's contribution is a rank-one product ``(c_i r_i) a_i`` (its scalar output
    gradient ``r_i`` times its features ``a_i``, the bias folded in), so ``|| |c_i r_i| |a_i| || =
    ||c_i r_i a_i|| <= C``. The computed sum is the exact one plus ``e`` with ``|e| <= gamma_{n+2} sum_i
    |c_i r_i| |a_i|`` elementwise (two roundings in forming a contribution, ``n - 1`` additions: Higham,
    *Accuracy and Stability of Numerical Algorithms*, 2002, Lemma 3.1 and Eq. (3.4)), so ``||e|| <=
    gamma_{n+2} n C`` (triangle inequality over records), and the two sums differ by at most ``C + ||e_D||
    + ||e_D'||``. It assumes that each remaining record's ``r_i``, ``a_i`` and ``c_i`` come out bit-identical
    in both data sets; ``tests/test_neighbouring.py`` checks that on these models. An MLP's per-record factors
    come from matrix products whose rounding depends on ``N`` (a cold review found most records' norms
    changed by removing one), so no bound of this form holds for it.

    >>> f"{rounding_excess_bound(4096, torch.float64):.2e}"
    '3.73e-09'
    >>> rounding_excess_bound(4096, torch.float32) > 1.0  # no useful bound in float32 at this size
    True
    """
    u = torch.finfo(dtype).eps / 2
    k = (n + 2) * u
    return math.inf if k >= 1 else 2 * n * k / (1 - k)


#: fields of a History (and of ``train --json``) computed on the raw training data, outside the guarantee
#: (``meta.N`` is the data's size, ``meta.chunks`` depends on it, ``meta.wall_time`` times the computation)
OUTSIDE_GUARANTEE = ("loss", "grad_norm", "clip_fraction", "final_loss", "train_accuracy",
                     "meta.N", "meta.chunks", "meta.wall_time")

#: what :data:`OUTSIDE_GUARANTEE` means, printed beside those fields
OUTSIDE_GUARANTEE_NOTE = (
    "computed on the raw training data, not privatized: outside the (epsilon, delta) guarantee; for "
    "analysis only, do not release them with the model"
)

#: the ``privacy_note`` of a seeded run (``secure=False``): what its guarantee assumes
SEEDED_NOISE_NOTE = (
    "the (epsilon, delta) guarantee holds only if the noise seed stays secret: this run's noise is a "
    "function of its seed, which is recorded here, so anyone holding the seed can replay the noise and "
    "undo the privacy; train with secure=True (command line: --secure) for noise drawn from the "
    "operating system's CSPRNG"
)

#: the ``privacy_note`` of a secure run (``secure=True``)
SECURE_NOISE_NOTE = (
    "the noise was seeded from the operating system's CSPRNG (os.urandom) for this run only and the seed "
    "was not recorded, so it cannot be replayed (nor reproduced); the recorded seed drives only the "
    "initial parameters (and, on the command line, the data subset), not the noise"
)


def sigma_floor(*, clip_norm: float, denominator: float, dtype: torch.dtype) -> float:
    """Smallest noise multiplier a trainer accepts:
    ``max(tiny * max(1, p N) / C, 1 / sqrt(float64 max))`` with ``tiny`` the smallest normal
    number of ``dtype`` (1.18e-38 in float32, 2.2e-308 in float64).

    >>> f"{sigma_floor(clip_norm=4.0, denominator=1000.0, dtype=torch.float32):.3g}"
    '2.94e-36'
    >>> f"{sigma_floor(clip_norm=4.0, denominator=1000.0, dtype=torch.float64):.3g}"
    '7.46e-155'
    """
    tiny = torch.finfo(dtype).tiny
    return max(tiny * max(1.0, float(denominator)) / float(clip_norm), 1.0 / math.sqrt(np.finfo(np.float64).max))


def check_sigma(sig: np.ndarray, *, clip_norm: float, denominator: float, dtype: torch.dtype) -> None:
    """Refuse (one-line ``ValueError``) any sigma that would make a step noiseless or its
    noise or cost unrepresentable; ``sig`` is ``(K, T)``."""
    bad = ~np.isfinite(sig) | ~(sig > 0)
    if bad.any():
        k, t = np.argwhere(bad)[0]
        where = f"step {t + 1}" + (f" of run {k}" if sig.shape[0] > 1 else "")
        raise ValueError(f"sigma must be finite and > 0 at every step (no noiseless step), got {sig[k, t]} at {where}")
    floor = sigma_floor(clip_norm=clip_norm, denominator=denominator, dtype=dtype)
    lo = float(sig.min())
    if lo < floor:
        raise ValueError(f"sigma must be >= {floor:.3g} here (clip_norm={clip_norm:g}, {str(dtype).replace('torch.', '')}): "
                         f"got {lo:.3g}, whose noise would vanish below the dtype's smallest normal number or whose "
                         "cost 1/sigma^2 overflows")
    hi = float(sig.max())
    if not math.isfinite(clip_norm * hi) or clip_norm * hi > torch.finfo(dtype).max / 1e3:
        raise ValueError(f"sigma must be <= {torch.finfo(dtype).max / 1e3 / clip_norm:.3g} here: clip_norm * sigma = "
                         f"{clip_norm * hi:.3g} overflows {str(dtype).replace('torch.', '')}")
    ceiling = math.sqrt(np.finfo(np.float64).max)  # sigma^2 in the accounting (OverflowError)
    if hi > ceiling:
        t = int(np.argmax(sig.max(axis=0)))
        raise ValueError(f"sigma must be <= {ceiling:.3g} (its square in the accounting overflows float64), "
                         f"got {hi:.3g} at step {t + 1}")


def as_runs(seed, sigma) -> tuple[list[int], np.ndarray, bool]:
    """Broadcast ``seed`` (int or sequence) and ``sigma`` ((T,) or (K, T)) to K runs.
    Returns ``(seeds, sigma (K, T), single)``; ``single`` when one int seed and 1-D sigma.
    The values of sigma are checked by :func:`check_sigma` (which needs the clip norm)."""
    try:
        sig = np.asarray(sigma, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"sigma must be an array of numbers, got {sigma!r}") from None
    if sig.ndim == 0:
        raise ValueError("sigma must be an array of per-step noise multipliers (length T), got a scalar; "
                         "use numpy.full(T, sigma) for a constant one")
    if sig.ndim > 2 or sig.shape[-1] < 1 or sig.size == 0:
        raise ValueError(f"sigma must have shape (T,) or (K, T) with T >= 1 and K >= 1, got {sig.shape}")
    if isinstance(seed, (bool, np.bool_)):
        raise ValueError(f"seed must be an int or a sequence of ints, got {seed!r}")
    if isinstance(seed, (int, np.integer)):
        seeds = None
    else:
        try:
            seeds = [int(s) for s in seed]
        except (TypeError, ValueError):
            raise ValueError(f"seed must be an int or a sequence of ints, got {seed!r}") from None
        if not seeds:
            raise ValueError("seed must be an int or a non-empty sequence of ints, got an empty sequence")
    single = seeds is None and sig.ndim == 1
    if sig.ndim == 1:
        K = 1 if seeds is None else len(seeds)
        sig = np.broadcast_to(sig, (K, sig.shape[0])).copy()
    K = sig.shape[0]
    if seeds is None:
        seeds = [int(seed)] * K
    if len(seeds) != K:
        raise ValueError(f"got {len(seeds)} seeds but sigma has {K} rows; give one seed per run")
    if any(s < 0 for s in seeds):
        raise ValueError(f"seed must be >= 0, got {min(seeds)}")
    return seeds, sig, single


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64, copy=True)
    a.flags.writeable = False
    return a


def _budget(budget, R, delta, sampling_rate):
    """The budget of a call: ``budget`` (a Budget, an EpsilonTarget, or a tuple of one per run), or
    ``R`` (with ``delta``) as :meth:`Budget.from_R`; None: no ledger."""
    if budget is not None:
        if R is not None or delta is not None:
            raise ValueError("give either budget or R (with delta), not both")
        many = isinstance(budget, (list, tuple))
        for b in budget if many else [budget]:
            if not isinstance(b, (Budget, EpsilonTarget)):
                raise ValueError("budget must be a dpcompanion.theory.budget.Budget, a dpcompanion.theory.budget."
                                 f"EpsilonTarget, one of them per run, or None, got {b!r}"[:200])
            if isinstance(b, Budget) and b.sampling_rate != sampling_rate:
                raise ValueError(f"sampling_rate must be the budget's ({b.sampling_rate:g}), got {sampling_rate:g}")
        return tuple(budget) if many else budget
    if R is None:  # no ledger: nothing is accounted (a delta given alongside is not used)
        if delta is not None:
            validate.delta(delta)
        return None
    R = validate.number("R", R, lo=0.0, allowed="a finite number > 0 (or None for no ledger)")
    if delta is not None:
        delta = validate.delta(delta)
    if sampling_rate < 1.0 and delta is None:
        raise ValueError(
            f"delta is required when sampling_rate < 1 (got {sampling_rate}): subsampled steps are checked "
            "against the target epsilon at delta with an RDP accountant"
        )
    return Budget.from_R(R=R, delta=delta, sampling_rate=sampling_rate)


@dataclass(frozen=True)
class TrainConfig:
    """Everything a private training call needs besides the model and the data.

    ``budget``: what each run's :class:`~dpcompanion.theory.budget.PrivacyLedger` enforces (a Budget,
    an EpsilonTarget, or a tuple of one per run; ``None``: no ledger, the cost still added up).
    ``sigma``, ``lr``: ``(K, T)`` float64, read-only; ``seeds``: one per run; ``single``: one run asked
    for (an unbatched History). ``sampling_rate``: Poisson rate p. ``beta``: debiased momentum.
    ``lr_rule(t, g, lr_t) -> (K,)``: a step-size rule from the privatized gradient (ADP-SGD); a rule
    with state offers ``fresh()`` (each chunk of runs gets its own). ``record``: per-step fields
    (:data:`RECORDABLE`; the loss costs a pass over the data per step). ``memory_budget``: bytes for
    run-dependent state. ``fast``: ``None`` takes the margin fast path where the model allows it
    (binary linear or logistic), ``False`` never. ``N``: the public data-set size (module docstring).
    ``final_eval=False`` leaves ``final_loss`` and ``train_accuracy`` None (for a caller that
    evaluates on its own data). ``secure``: noise seeded from ``os.urandom`` (module docstring).

    ``on_eval(step, theta, runs)`` is called after every ``eval_every`` steps and the last (also for
    the points left once every run has stopped) with a copy of the chunk's parameters and its run
    indices (a ``range``). ``segment_noise``: segment ``j`` (steps from ``j eval_every``) draws its
    masks and noise from :func:`~dpcompanion.training.trainers.engine.segment_seed` ``(seed, j)``, so
    a call equals training segment by segment (Wu et al.'s protocol); seeded noise only.
    ``on_refusal``: ``"stop"``: a refused run draws and computes nothing more; ``"hold"``: it stops
    moving (step size 0) but keeps its masks and noise drawn, so the other runs see the very batch
    they would see had it not been refused (Wu et al.'s protocol).
    """

    sigma: np.ndarray
    seeds: tuple[int, ...]
    single: bool
    budget: Budget | None
    lr: np.ndarray
    clip_norm: float
    beta: float = 0.0
    sampling_rate: float = 1.0
    lr_rule: Callable | None = None
    device: str = "cpu"
    dtype: torch.dtype = torch.float32
    progress: bool | None = None
    algorithm: str = "pgd"
    record: frozenset = field(default_factory=lambda: frozenset(RECORDABLE))
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    fast: bool | None = None
    N: int | None = None
    final_eval: bool = True
    secure: bool = False
    eval_every: int | None = None
    on_eval: Callable | None = None
    segment_noise: bool = False
    on_refusal: str = "stop"

    @property
    def K(self) -> int:
        return self.sigma.shape[0]

    @property
    def T(self) -> int:
        return self.sigma.shape[1]

    @property
    def R(self) -> float | None:
        """The budget's R (None without a budget, for an EpsilonTarget, or for per-run budgets
        whose R differ)."""
        if isinstance(self.budget, tuple):
            Rs = {b.R for b in self.budget}
            return Rs.pop() if len(Rs) == 1 else None
        return None if self.budget is None else self.budget.R

    @classmethod
    def build(
        cls,
        *,
        sigma,
        lr,
        clip_norm: float,
        seed=0,
        budget: Budget | None = None,
        R: float | None = None,
        delta: float | None = None,
        N: int | None = None,
        beta: float = 0.0,
        sampling_rate: float | None = None,
        lr_rule: Callable | None = None,
        device: str = "auto",
        dtype: torch.dtype = torch.float32,
        progress: bool | None = None,
        algorithm: str | None = None,
        record: Sequence[str] | None = None,
        memory_budget: int | None = None,
        fast: bool | None = None,
        final_eval: bool = True,
        secure: bool = False,
        eval_every: int | None = None,
        on_eval: Callable | None = None,
        segment_noise: bool = False,
        on_refusal: str = "stop",
    ) -> "TrainConfig":
        """Validate every setting (one ``ValueError`` naming the parameter) and freeze them.

        The budget is ``budget``, or ``R`` in Hong's units (R = 2 rho) with ``delta`` (``Budget.from_R``),
        or neither (no ledger). ``sampling_rate`` defaults to the budget's (1 without one or for an
        EpsilonTarget); ``algorithm`` to ``pgd``/``psgd`` (``-momentum`` with ``beta > 0``).

        >>> cfg = TrainConfig.build(sigma=[2.0, 2.0], R=1.0, lr=0.1, clip_norm=1.0, device="cpu")
        >>> cfg.budget.R, cfg.K, cfg.T, cfg.algorithm
        (1.0, 1, 2, 'pgd')
        """
        clip_norm = validate.positive("clip_norm", clip_norm)
        beta = validate.number("beta (momentum)", beta, lo=0.0, hi=1.0, lo_open=False)
        if budget is not None and sampling_rate is None:
            first = budget[0] if isinstance(budget, (list, tuple)) and len(budget) else budget
            p = first.sampling_rate if isinstance(first, Budget) else 1.0
        else:
            p = validate.sampling_rate(1.0 if sampling_rate is None else sampling_rate)
        budget = _budget(budget, R, delta, p)
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
        seeds, sig, single = as_runs(seed, sigma)
        K, T = sig.shape
        if isinstance(budget, tuple) and len(budget) != K:
            raise ValueError(f"budget must be one budget or one per run ({K}), got {len(budget)}")
        if N is not None and (isinstance(N, (bool, np.bool_)) or not isinstance(N, (int, np.integer)) or N < 1):
            raise ValueError(f"N (the public data-set size the trainers divide by) must be an integer >= 1 or None, got {N!r}")
        check_sigma(sig, clip_norm=clip_norm, denominator=p * (N if N else 1), dtype=dtype)
        try:
            lr_arr = np.asarray(lr, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"lr must be a number or an array of step sizes, got {lr!r}") from None
        if lr_arr.ndim == 0:
            lr_arr = np.full((K, T), float(lr_arr))
        elif lr_arr.ndim == 1:
            if lr_arr.shape[0] != T:
                raise ValueError(f"lr must be a number or have length T={T}, got length {lr_arr.shape[0]}")
            lr_arr = np.broadcast_to(lr_arr, (K, T))
        elif lr_arr.shape != (K, T):
            raise ValueError(f"lr must be a number, (T,) or (K, T) = ({K}, {T}), got shape {lr_arr.shape}")
        if np.any(~np.isfinite(lr_arr)) or np.any(lr_arr < 0):
            raise ValueError(f"lr must be finite and >= 0 (the step size), got {lr_arr[~(np.isfinite(lr_arr) & (lr_arr >= 0))].flat[0]}")
        rec = RECORDABLE if record is None else tuple(record)
        unknown = [r for r in rec if r not in RECORDABLE]
        if unknown:
            raise ValueError(f"record must name fields among {', '.join(RECORDABLE)}, got {unknown[0]!r}")
        if memory_budget is None:
            memory_budget = DEFAULT_MEMORY_BUDGET
        if isinstance(memory_budget, bool) or not isinstance(memory_budget, (int, np.integer)) or memory_budget < 2**20:
            raise ValueError(f"memory_budget must be an integer number of bytes >= 1 MiB, got {memory_budget!r}")
        if fast not in (None, True, False):
            raise ValueError(f"fast must be None (auto), True or False, got {fast!r}")
        if final_eval not in (True, False):
            raise ValueError(f"final_eval must be True or False, got {final_eval!r}")
        if not isinstance(secure, (bool, np.bool_)):
            raise ValueError(f"secure must be True or False, got {secure!r}")
        if eval_every is not None and (isinstance(eval_every, (bool, np.bool_))
                                       or not isinstance(eval_every, (int, np.integer)) or eval_every < 1):
            raise ValueError(f"eval_every must be an integer >= 1 or None, got {eval_every!r}")
        if on_eval is not None and not callable(on_eval):
            raise ValueError(f"on_eval must be a callable (step, theta, runs) or None, got {on_eval!r}"[:200])
        if (on_eval is not None or segment_noise) and eval_every is None:
            raise ValueError("on_eval and segment_noise need eval_every (the steps between evaluations)")
        if segment_noise not in (True, False):
            raise ValueError(f"segment_noise must be True or False, got {segment_noise!r}")
        if segment_noise and secure:
            raise ValueError("segment_noise reseeds the seeded noise at each segment; secure noise is never seeded: "
                             "give one of segment_noise and secure")
        on_refusal = validate.choice("on_refusal", on_refusal, ON_REFUSAL)
        if algorithm is None:
            algorithm = ("psgd" if p < 1.0 else "pgd") + ("-momentum" if beta else "")
        return cls(sigma=_frozen(sig), seeds=tuple(seeds), single=single, budget=budget, lr=_frozen(lr_arr),
                   clip_norm=clip_norm, beta=beta, sampling_rate=p, lr_rule=lr_rule, device=resolve_device(device),
                   dtype=dtype, progress=progress, algorithm=str(algorithm), record=frozenset(rec),
                   memory_budget=int(memory_budget), fast=fast, N=None if N is None else int(N),
                   final_eval=bool(final_eval), secure=bool(secure),
                   eval_every=None if eval_every is None else int(eval_every), on_eval=on_eval,
                   segment_noise=bool(segment_noise), on_refusal=on_refusal)

    def rows(self, a: int, b: int) -> "TrainConfig":
        """The same configuration for runs ``a..b-1`` (a chunk)."""
        budget = self.budget[a:b] if isinstance(self.budget, tuple) else self.budget
        return replace(self, sigma=self.sigma[a:b], lr=self.lr[a:b], seeds=self.seeds[a:b], single=False,
                       budget=budget)

    def describe(self) -> dict[str, Any]:
        """JSON-friendly summary (for History.meta): the settings and the ``privacy_note``;
        ``eval_every``, ``segment_noise`` and ``on_refusal`` only where they are set."""
        out = {"algorithm": self.algorithm, "clip_norm": self.clip_norm, "beta": self.beta,
               "sampling_rate": self.sampling_rate, "record": sorted(self.record),
               "memory_budget": self.memory_budget, "final_eval": self.final_eval, "secure": self.secure,
               "privacy_note": SECURE_NOISE_NOTE if self.secure else SEEDED_NOISE_NOTE,
               "neighbouring": NEIGHBOURING, "rounding": ROUNDING_NOTE, "outside_guarantee": list(OUTSIDE_GUARANTEE),
               "outside_guarantee_note": OUTSIDE_GUARANTEE_NOTE}
        if self.eval_every is not None:
            out.update(eval_every=self.eval_every, segment_noise=self.segment_noise)
        if self.on_refusal != "stop":
            out["on_refusal"] = self.on_refusal
        return out
