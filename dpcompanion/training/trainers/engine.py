"""The training loop shared by every private trainer, as named stages, batched over runs.

One call of :func:`train` trains ``K`` runs (parameters ``(K, P)``, the data shared) under a frozen
:class:`~dpcompanion.training.trainers.config.TrainConfig`; per step t:

1. **charge** (:class:`Charger`): each run's ledger is charged *before* the noisy step; a run whose
   ledger refuses stops there (Hong et al. 2022 Algorithm 1 lines 2-8). Runs with the same schedule
   row and budget share one ledger (a ledger is a deterministic function of its charges).
2. **sample** (:func:`sample`, PSGD only): a Poisson mask per run at rate p.
3. **private step** (:func:`private_step`, the pieces below): clip-and-sum (:mod:`.oracles`) -> noise -> divide by the
   public ``p N`` (the declared ``TrainConfig.N``, never the size of the data handed in) -> update.
4. **record** (:class:`Recorder`): the per-step fields asked for.

:func:`train_pgd` (full-batch PGD, Hong et al. Algorithm 1 and Eq. (1); ``momentum > 0``: debiased
momentum, H Eq. (3)) and :func:`train_psgd` (Poisson sampling, charged ``p^2/sigma_t^2``, H Sec. 4.3,
after Yu et al. 2019 Thm 3, and checked by the ledger's RDP accountant) build the config from keywords.

Randomness: run k's initial parameters come from a CPU generator seeded ``seed_k``, its training
noise from a device generator seeded :func:`noise_seed` (:class:`NoiseSource`), shared by runs with
the same seed (common random numbers). A run's numbers depend neither on the other runs in the batch
nor on the chunking (:func:`plan_chunks`, below ``config.memory_budget``: bit for bit on the margin fast
path, to rounding on the general path). That stream is a public function of the seed; with
``config.secure`` the noise comes from secret seeds instead (:func:`secret_noise_seeds`).

The private step is a fixed sequence of named pieces, each testable alone:

    model.clipped_grad_sum -> add_noise -> scale -> (momentum) -> update

(Hong et al. 2022, FAccT, Algorithm 1 and Eq. (1)-(3)), on ``K`` runs at once: flat ``(K, P)``
tensors. The loop uses the in-place forms (on a CPU every fresh ``(K, P)`` temporary costs page
faults); ``momentum_update`` and ``sgd_update`` are their references."""

from __future__ import annotations

import functools
import math
import secrets
import sys
import threading
import time
from collections.abc import Sequence

import numpy as np
import torch

from dpcompanion.core import validate
from dpcompanion.theory import accounting
from dpcompanion.theory.budget import Budget, BudgetExceeded, PrivacyLedger
from dpcompanion.training.dense_models import DenseModel
from dpcompanion.training.model_base import Model
from dpcompanion.training.trainers.config import TrainConfig, as_runs, check_sigma, rounding_excess_bound
from dpcompanion.training.trainers.history import STEP_FIELDS, History
from dpcompanion.training.trainers.oracles import StepGrad, make_oracle

__all__ = ["train", "noise_seed", "segment_seed", "eval_points", "secret_noise_seeds", "SECURE_DRAWS", "as_runs",
           "Charger", "NoiseSource", "NOISE_BLOCK_ELEMENTS", "block_steps", "Recorder", "sample", "private_step",
           "plan_chunks", "bytes_per_run", "tally", "train_pgd", "train_psgd", "n_samples",
           "noise_std", "add_noise", "scale", "debias_factor", "momentum_update", "momentum_accumulate_",
           "sgd_update", "sgd_update_"]


@functools.lru_cache(maxsize=1 << 16)
def noise_seed(seed: int) -> int:
    """Seed of a run's training-noise generator, derived from its seed (so the noise
    stream is not the init stream)."""
    return int(np.random.SeedSequence([int(seed), 0x5EED]).generate_state(1, dtype=np.uint64)[0] >> 1)


def segment_seed(seed: int, segment: int) -> int:
    """The seed of segment ``segment`` of a run seeded ``seed`` under ``TrainConfig.segment_noise``
    (its noise generator is seeded with :func:`noise_seed` of it), and of the initial parameters
    Wu et al.'s protocol trains from (:func:`dpcompanion.experiments.protocols.wu.train_segments`).

    >>> segment_seed(0, 0) == segment_seed(0, 0) != segment_seed(0, 1)
    True
    """
    return int(np.random.SeedSequence([int(seed), int(segment), 0x57]).generate_state(1)[0] & 0x7FFFFFFF)


def eval_points(T: int, eval_every: int) -> list[int]:
    """The steps after which the evaluation hook is called: every ``eval_every`` steps and the last.

    >>> eval_points(12, 5), eval_points(10, 5)
    ([5, 10, 12], [5, 10])
    """
    return list(range(int(eval_every), int(T), int(eval_every))) + [int(T)]


#: generators per distinct seed whose draws a secure run's noise sums (Opacus's ``secure_mode``
#: sums 2n = 4 Gaussians, Holohan & Braghin 2021 Sec. 5.1; see :class:`NoiseSource`)
SECURE_DRAWS = 4


def secret_noise_seeds(seeds: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """For each distinct key, :data:`SECURE_DRAWS` fresh 64-bit seeds from ``os.urandom``
    (:func:`secrets.randbits`): a secure run's noise seeds, held in memory only, never returned or
    written. :func:`train` keys them by run index (common noise across released runs with different
    sigmas would reveal their noise-free sum)."""
    return {int(s): tuple(secrets.randbits(64) for _ in range(SECURE_DRAWS)) for s in set(int(s) for s in seeds)}


#: runs and run-steps trained by :func:`train`, per thread (read through :func:`tally`)
_TALLY = threading.local()


def tally() -> dict[str, int]:
    """The runs and run-steps trained by :func:`train` in this thread (the results store counts a
    unit's runs by the difference; per thread, so that units in one Dask worker do not mix)."""
    return {"runs": getattr(_TALLY, "runs", 0), "run_steps": getattr(_TALLY, "run_steps", 0)}


class SeededGenerators(Sequence):
    """``[torch.Generator().manual_seed(s) for s in seeds]``, each made when it is read: a
    model whose initial point draws nothing (zeros) never pays for K generators."""

    def __init__(self, seeds: Sequence[int]):
        self.seeds = list(seeds)

    def __len__(self) -> int:
        return len(self.seeds)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [torch.Generator().manual_seed(int(s)) for s in self.seeds[k]]
        return torch.Generator().manual_seed(int(self.seeds[k]))


def unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct rows, index of each row's distinct row)``; fast when all rows are equal."""
    if a.shape[0] == 1 or bool((a == a[0]).all()):
        return a[:1], np.zeros(a.shape[0], dtype=np.int64)
    u, inv = np.unique(a, axis=0, return_inverse=True)
    return u, inv.reshape(-1)


def _labels(name: str, y, model: Model, *, device) -> torch.Tensor:
    """``y`` checked once per call (whole numbers in ``{0, ..., n_classes - 1}``: the clipping is
    built for these labels), as int64 on ``device``."""
    if isinstance(y, torch.Tensor):
        y = y.detach().cpu()
        y = (y.double() if y.is_floating_point() else y).numpy()
    return torch.as_tensor(validate.class_labels(name, y, n_classes=model.n_classes), device=device)


def _as_tensor(a, *, dtype, device) -> torch.Tensor:
    if isinstance(a, torch.Tensor):
        return a.to(dtype=dtype, device=device)
    return torch.as_tensor(np.asarray(a), dtype=dtype, device=device)


def _progress(total: int, progress: bool | None, desc: str):
    """A tqdm bar, shown on a terminal or when ``progress=True``. ``tqdm.auto`` is imported only
    when shown: in a kernel without ipywidgets it warns on import."""
    enabled = sys.stderr.isatty() if progress is None else bool(progress)
    if enabled:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm(total=total, disable=not enabled, desc=desc, leave=False)


class Charger:
    """The charge stage: one ledger per distinct (schedule row, budget), charged before each step.

    ``sigma (K, T)``; ``budget``: each ledger is :meth:`PrivacyLedger.from_budget` of it (a
    Budget or an EpsilonTarget, or a tuple of one per run); ``None``: no ledger, the cost
    (:func:`dpcompanion.theory.accounting.psgd_step_cost`) is only added up. A run is
    charged at step t for ``sigma_rows[group_of, t]``, the sigma its noise uses (:func:`_run_chunk`)."""

    def __init__(self, sigma: np.ndarray, *, budget, sampling_rate: float):
        if isinstance(budget, tuple):  # one budget per run: a group shares its row and its budget
            distinct = list(dict.fromkeys(budget))
            ids = np.array([distinct.index(b) for b in budget], dtype=np.float64)
            rows, self.group_of = unique_rows(np.column_stack([sigma, ids]))
            self.sigma_rows = np.ascontiguousarray(rows[:, :-1])
            budgets = [distinct[int(i)] for i in rows[:, -1]]
        else:
            self.sigma_rows, self.group_of = unique_rows(sigma)
            budgets = [budget] * self.sigma_rows.shape[0]
        G = self.sigma_rows.shape[0]
        self.p = float(sampling_rate)
        self.alive = np.ones(G, dtype=bool)
        self.spent_g = np.zeros(G)
        self.ledgers = None
        if budget is None:
            vals, inv = np.unique(self.sigma_rows, return_inverse=True)
            costs = np.array([accounting.psgd_step_cost(sigma=float(v), sampling_rate=self.p) for v in vals])
            self.cost = costs[inv.reshape(-1)].reshape(self.sigma_rows.shape)
        else:
            self.ledgers = [PrivacyLedger.from_budget(b) for b in budgets]

    @property
    def n_ledgers(self) -> int:
        return 0 if self.ledgers is None else len(self.ledgers)

    def charge(self, t: int) -> np.ndarray:
        """Charge step ``t`` (0-based) for every run still going; returns ``active (K,)``."""
        if self.ledgers is None:
            np.add(self.spent_g, self.cost[:, t], out=self.spent_g, where=self.alive)
        else:
            for g in np.flatnonzero(self.alive):
                led = self.ledgers[g]
                try:
                    led.charge(sigma=float(self.sigma_rows[g, t]), sampling_rate=self.p, step=t + 1)
                except BudgetExceeded:
                    self.alive[g] = False
                    continue
                self.spent_g[g] = led.spent
        return self.alive[self.group_of]

    @property
    def spent(self) -> np.ndarray:
        return self.spent_g[self.group_of]

    def epsilon(self) -> np.ndarray | None:
        """Each run's spent epsilon by its ledger (:meth:`PrivacyLedger.spent_epsilon`); None
        without ledgers or without delta."""
        if self.ledgers is None or any(led.delta is None for led in self.ledgers):
            return None
        return np.array([led.spent_epsilon() for led in self.ledgers])[self.group_of]


#: numbers one generator pre-draws per block of steps (``(P + N_mask) x steps``): a small model
#: draws many steps in one call, a large one step by step
NOISE_BLOCK_ELEMENTS = 1 << 14


def block_steps(P: int, N_mask: int = 0, *, elements: int = NOISE_BLOCK_ELEMENTS) -> int:
    """Steps per noise block: ``max(1, elements // (P + N_mask))`` with ``N_mask`` the
    Poisson-mask length (0 for full batch). It depends on the problem only, never on the
    runs in the batch or the memory budget, so a run's numbers never depend on them.

    >>> block_steps(61), block_steps(785), block_steps(79_510), block_steps(61, 20_000)
    (268, 20, 1, 1)
    """
    return max(1, int(elements) // (int(P) + int(N_mask)))


class NoiseSource:
    """One training-noise generator per distinct seed (:func:`noise_seed`), shared by the
    runs with that seed, drawing in blocks of ``B =`` :func:`block_steps` steps.

    A generator's stream is a fixed function of its seed and ``(P, N_mask, T)``: per block of
    ``b = min(B, T - t0)`` steps, the ``b`` Poisson masks' uniforms (PSGD only), then the ``b`` steps'
    Gaussian vectors. A block is drawn only when one of the generator's runs is active at ``t0``
    (runs never resume, so this changes no active run's numbers).

    **Masks at the charged rate p, exactly.** torch's uniforms lie on a grid of step ``g`` (``2^-24``
    in float32, ``2^-53`` in float64 on the CPU), so ``u < p`` would keep a record with probability
    ``ceil(p/g) g`` (float32, p = 1e-9: sixty times p). With ``k = floor(p/g)`` a record is kept when
    ``u < k g`` and, on the edge ``u = k g`` (probability ``g``), with probability ``p/g - k`` by a
    second generator per distinct seed: ``k g + g (p/g - k) = p``. On CUDA (no such grid) the uniforms
    are float64 and a record is kept below ``floor(p 2^53) 2^-53``, a rate never above ``p``.

    **Secure noise** (``secret``, :func:`secret_noise_seeds`): each distinct seed gets
    :data:`SECURE_DRAWS` = 4 generators seeded with secret 64-bit seeds; each Gaussian is the sum of
    their draws over 2 (Opacus ``secure_mode``'s defence against floating-point attacks on the
    sampler), each mask uniform ``(sum_j k_j mod 2^53) 2^-53`` of their float64 uniforms (exact).
    Claimed: nobody without the four seeds (from ``os.urandom``, per call, never recorded; 128 bits
    on CPU, where MT19937 keeps 32 bits of a seed) can replay the noise. Not claimed: a cryptographic
    stream (MT19937 and Philox are statistical generators)."""

    def __init__(self, seeds: Sequence[int], *, device, dtype, P: int, T: int, N: int = 0,
                 sampling_rate: float = 1.0, secret: dict[int, tuple[int, ...]] | None = None):
        uniq, inv = np.unique(np.asarray(seeds, dtype=np.int64), return_inverse=True)
        self.gen_of = torch.as_tensor(inv.reshape(-1), device=device)
        self.gen_of_np = inv.reshape(-1)
        self.identity = len(uniq) == len(seeds) and bool(np.all(self.gen_of_np == np.arange(len(seeds))))
        self.secure = secret is not None
        if self.secure:  # a tuple of SECURE_DRAWS generators per distinct seed, seeded in secret
            self.gens = [tuple(torch.Generator(device=device).manual_seed(k) for k in secret[int(s)]) for s in uniq]
        else:
            self.gens = [torch.Generator(device=device).manual_seed(noise_seed(int(s))) for s in uniq]
        self.device, self.dtype = device, dtype
        self.T, self.p = int(T), float(sampling_rate)
        # the masks' uniforms (class docstring): the training dtype on the CPU, float64 otherwise
        on_cpu = torch.device(device).type == "cpu"
        self.mask_dtype = dtype if on_cpu and not self.secure else torch.float64
        grid = 2.0 ** -(24 if self.mask_dtype == torch.float32 else 53)  # torch.finfo(dtype).eps / 2
        k = math.floor(self.p / grid)
        self.p_cut = k * grid  # kept below this
        self.edge_prob = (self.p / grid - k) if on_cpu else 0.0  # kept on the edge k g with this probability
        self.edge_gens: dict[int, torch.Generator] = {}  # made at a distinct seed's first edge event (rare)
        self.uniq = uniq
        self.B, n_mask = self.block_shape(P, T=T, N=N, sampling_rate=sampling_rate)
        G = len(self.gens)
        self.noise_blk = torch.empty((G, self.B, P), dtype=dtype, device=device)
        self.mask_blk = torch.empty((G, self.B, n_mask), dtype=self.mask_dtype, device=device) if n_mask else None
        self.t0 = None  # first step of the block in the buffers

    def edge_seed(self, i: int) -> int:
        """The seed of distinct seed ``i``'s edge generator: a function of its seed, or a secret for a
        secure run (drawn when first needed, as unrecorded as the noise seeds)."""
        if self.secure:
            return secrets.randbits(63)
        return int(np.random.SeedSequence([int(self.uniq[i]), 0xED6E]).generate_state(1)[0])

    @staticmethod
    def block_shape(P: int, *, T: int, N: int, sampling_rate: float) -> tuple[int, int]:
        """``(B, N_mask)``: steps per block (at most T) and the mask length (0 for full batch)."""
        n_mask = int(N) if sampling_rate < 1.0 else 0
        return min(int(T), block_steps(P, n_mask)), n_mask

    @classmethod
    def bytes_per_generator(cls, P: int, *, T: int, N: int, sampling_rate: float, itemsize: int) -> int:
        B, n_mask = cls.block_shape(P, T=T, N=N, sampling_rate=sampling_rate)
        return itemsize * B * int(P) + 8 * B * n_mask  # the mask uniforms: at most float64

    def _live(self, active: np.ndarray) -> list:
        if active.all():
            return self.gens
        live = np.zeros(len(self.gens), dtype=bool)
        live[self.gen_of_np[active]] = True
        return [g if live[i] else None for i, g in enumerate(self.gens)]

    def _row(self, t: int, active: np.ndarray) -> int:
        """Index of step ``t`` in the block buffers, drawing the next block first when ``t``
        is past the current one (steps come in order, one call per step and stage)."""
        if self.t0 is None or t >= self.t0 + self.B:
            if self.t0 is not None and t != self.t0 + self.B:
                raise RuntimeError(f"internal: noise steps must come in order, got step {t} after block {self.t0}")
            b = min(self.B, self.T - t)
            for i, g in enumerate(self._live(active)):
                if g is None:
                    continue
                if self.secure:
                    self._draw_secure(i, b, g)
                    continue
                if self.mask_blk is not None:
                    self.mask_blk[i, :b].uniform_(generator=g)
                self.noise_blk[i, :b].normal_(generator=g)
            self.t0 = t
        return t - self.t0

    def _draw_secure(self, i: int, b: int, gens: tuple) -> None:
        """Block rows ``[:b]`` of distinct seed ``i`` from its secret generators ``gens`` (the
        class docstring): mask uniforms ``(sum_j k_j mod 2^53) 2^-53``, then Gaussians ``sum z_j / 2``."""
        if self.mask_blk is not None:
            u = torch.empty(self.mask_blk[i, :b].shape, dtype=torch.float64, device=self.device)
            acc = torch.zeros(u.shape, dtype=torch.int64, device=self.device)
            for g in gens:
                acc += (u.uniform_(generator=g) * 2.0**53).to(torch.int64)  # k_j, exactly
            self.mask_blk[i, :b] = torch.remainder(acc, 2**53).to(torch.float64) * 2.0**-53
        z = self.noise_blk[i, :b]
        z.normal_(generator=gens[0])
        tmp = torch.empty_like(z)
        for g in gens[1:]:
            z += tmp.normal_(generator=g)
        z *= 1.0 / math.sqrt(len(gens))

    def _spread(self, rows: torch.Tensor, active: np.ndarray, out: torch.Tensor | None = None) -> torch.Tensor:
        """Per-generator rows ``(G, n)`` -> per-run rows ``(K, n)``, stopped runs zero."""
        if self.identity:
            out = rows.clone() if out is None else out.copy_(rows)
        else:
            out = torch.index_select(rows, 0, self.gen_of, out=out) if out is not None else rows.index_select(0, self.gen_of)
        if not active.all():
            out[torch.as_tensor(~active, device=out.device)] = 0
        return out

    def draw(self, t: int, active: np.ndarray, out: torch.Tensor) -> torch.Tensor:
        """``out (K, P)`` <- each active run's standard normal vector of step ``t`` (0 for
        stopped runs)."""
        j = self._row(t, active)
        return self._spread(self.noise_blk[:, j], active, out)

    def mask(self, t: int, active: np.ndarray) -> torch.Tensor:
        """Poisson masks ``(K, N)`` of step ``t`` (0/1 in the training dtype; 0 rows for
        stopped runs)."""
        if self.mask_blk is None:
            raise RuntimeError("internal: this NoiseSource was built for full batch (sampling_rate = 1)")
        j = self._row(t, active)
        u = self.mask_blk[:, j]
        keep = u < self.p_cut
        if self.edge_prob > 0.0:
            edge = u == self.p_cut
            if bool(edge.any()):  # rare (probability g per record): decided by the edge generator
                for i in torch.nonzero(edge.any(dim=1)).flatten().tolist():
                    idx = torch.nonzero(edge[i]).flatten()
                    gen = self.edge_gens.get(i)
                    if gen is None:
                        gen = self.edge_gens[i] = torch.Generator().manual_seed(self.edge_seed(i))
                    v = torch.rand(idx.numel(), generator=gen, dtype=torch.float64)
                    keep[i, idx] = (v < self.edge_prob).to(keep.device)
        return self._spread(keep.to(self.dtype), active)


# ---------------------------------------------------------------- the private step's pieces


def noise_std(*, clip_norm: float, sigma: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``C sigma`` elementwise (the engine passes the whole ``(K, T)`` schedule once), asserted finite
    and a normal number of ``dtype``: no step is released without its noise (the trainers refuse such
    sigmas up front, :func:`~dpcompanion.training.trainers.config.check_sigma`; reaching this is a bug)."""
    std = clip_norm * sigma.to(dtype)
    if not bool(torch.all(torch.isfinite(std) & (std >= torch.finfo(dtype).tiny))):
        raise RuntimeError(f"internal invariant broken: noise scale C*sigma must be finite and >= "
                           f"{torch.finfo(dtype).tiny:.3g}, got {std.min().item():.3g}..{std.max().item():.3g}")
    return std


def add_noise(grad_sum: torch.Tensor, *, std: torch.Tensor, noise: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """``grad_sum + std_k v_k`` with ``noise`` row ``k`` the standard normal draw ``v_k`` of run
    ``k`` (scaled in place, so consumed) and ``std_k = C sigma_k`` from :func:`noise_std`.
    ``inplace``: add into ``grad_sum``."""
    noise.mul_(std.unsqueeze(-1))
    return grad_sum.add_(noise) if inplace else grad_sum + noise


def scale(noisy_sum: torch.Tensor, *, denominator: float, inplace: bool = False) -> torch.Tensor:
    """Average: divide by N (full batch) or by the expected batch size p N (Poisson)."""
    return noisy_sum.div_(denominator) if inplace else noisy_sum / denominator


def debias_factor(*, beta: float, t: torch.Tensor) -> torch.Tensor:
    """``1 / (1 - beta^t)`` (H Eq. (3)); ``t`` 1-based, per run."""
    return 1.0 / (1.0 - torch.pow(torch.as_tensor(beta, dtype=t.dtype, device=t.device), t))


def momentum_update(v: torch.Tensor, g: torch.Tensor, *, beta: float, t: torch.Tensor | int):
    """Debiased momentum, H Eq. (3) (= slides Algorithm 2):
    ``v_{t+1} = beta v_t + (1 - beta) g_t`` (``v_1 = 0``) and the step direction
    ``m_{t+1} = v_{t+1} / (1 - beta^t)``. ``t`` (1-based, scalar or per run ``(K,)``).
    Returns ``(v_{t+1}, m_{t+1})``. With ``beta = 0`` this is plain GD (``m = g``)."""
    v_next = beta * v + (1.0 - beta) * g
    if beta == 0.0:
        return v_next, v_next
    f = debias_factor(beta=beta, t=torch.as_tensor(t, dtype=g.dtype, device=g.device))
    if f.dim() == 1:
        f = f.unsqueeze(-1)
    return v_next, v_next * f


def momentum_accumulate_(v: torch.Tensor, g: torch.Tensor, *, beta: float) -> torch.Tensor:
    """In place: ``v <- beta v + (1 - beta) g``; the debiasing goes into the step size."""
    return v.mul_(beta).add_(g, alpha=1.0 - beta)


def sgd_update(theta: torch.Tensor, direction: torch.Tensor, *, lr: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
    """``theta_{t+1} = theta_t - eta_t m_{t+1}`` for active runs; stopped runs stay put."""
    step = (lr * active.to(theta.dtype)).unsqueeze(-1) * direction
    return theta - step


def sgd_update_(theta: torch.Tensor, direction: torch.Tensor, *, lr: torch.Tensor) -> torch.Tensor:
    """In place: ``theta <- theta - lr_k direction_k`` (``lr_k = 0`` leaves run k put)."""
    return theta.addcmul_(direction, lr.unsqueeze(-1), value=-1.0)


def sample(noise: NoiseSource, t: int, active: np.ndarray) -> torch.Tensor | None:
    """The sample stage: Poisson weights ``(K, N)`` of step ``t`` for ``sampling_rate < 1``,
    else None (full batch)."""
    return None if noise.mask_blk is None else noise.mask(t, active)


def private_step(
    oracle,
    theta: torch.Tensor,
    *,
    weights: torch.Tensor | None,
    noise: torch.Tensor,
    std_t: torch.Tensor,
    lr_t: torch.Tensor,
    active: torch.Tensor,
    clip_norm: float,
    denominator: float,
    v: torch.Tensor | None = None,
    beta: float = 0.0,
    n_t: torch.Tensor | None = None,
    lr_rule=None,
    t: int = 0,
    need_loss: bool = True,
    need_clip: bool = True,
    need_grad_norm: bool = True,
) -> tuple[torch.Tensor, StepGrad, torch.Tensor | None, torch.Tensor]:
    """One private step for all runs, in place on ``theta``:
    clip-and-sum -> + ``std_t`` x ``noise`` (standard normal, consumed) -> / ``denominator``
    -> step size (``lr_t``, or ``lr_rule``) -> momentum (``v``, debiased by ``n_t``) -> update
    (runs with ``active`` False stay put). ``std_t``: each run's ``C sigma_t``, checked by
    :func:`~dpcompanion.training.trainers.engine.noise_std`. Returns ``(theta, stats, grad_norm,
    lr_t)``, ``grad_norm`` the norm of the averaged clipped gradient before noise."""
    sg = oracle.clip_sum(theta, weights, need_loss=need_loss, need_clip=need_clip)
    gnorm = torch.linalg.vector_norm(sg.grad_sum, dim=-1) / denominator if need_grad_norm else None
    noisy = add_noise(sg.grad_sum, std=std_t, noise=noise, inplace=True)
    g = scale(noisy, denominator=denominator, inplace=True)
    if lr_rule is not None:
        lr_t = lr_rule(t, g, lr_t)
    step_size = lr_t * active.to(theta.dtype)  # stopped runs stay put
    if v is not None:
        # v is updated for stopped runs too: they never resume, so it is unused
        direction = momentum_accumulate_(v, g, beta=beta)
        step_size = step_size * debias_factor(beta=beta, t=n_t)
    else:
        direction = g
    sgd_update_(theta, direction, lr=step_size)
    return theta, sg, gnorm, lr_t


class Recorder:
    """The record stage: ``(K, T)`` float64 arrays (NaN until written) of the fields in
    ``fields``; steps of stopped runs stay NaN. Tensor values stay on their device until
    :meth:`arrays` (one copy at the end, not a synchronisation per field and step)."""

    def __init__(self, fields, K: int, T: int):
        self.fields = frozenset(fields)
        self.K, self.T = K, T
        self.rec = {f: np.full((K, T), np.nan) for f in self.fields}
        self.on_device: dict[str, torch.Tensor] = {}
        self.active = np.zeros((K, T), dtype=bool)

    def write(self, t: int, active: np.ndarray, **values) -> None:
        """``values``: per-run arrays or tensors (K,) for field names; unrequested ones ignored."""
        self.active[:, t] = active
        for f, x in values.items():
            if f not in self.fields or x is None:
                continue
            if isinstance(x, torch.Tensor):
                buf = self.on_device.get(f)
                if buf is None:
                    buf = self.on_device[f] = torch.full((self.K, self.T), math.nan, dtype=torch.float64,
                                                         device=x.device)
                buf[:, t] = x.detach()
            else:
                self.rec[f][active, t] = np.asarray(x, dtype=np.float64)[active]

    def arrays(self) -> dict:
        for f, buf in self.on_device.items():
            a = buf.cpu().numpy()
            a[~self.active] = np.nan  # steps of stopped runs
            self.rec[f] = a
        self.on_device = {}
        return {f: self.rec.get(f) for f in STEP_FIELDS}


def plan_chunks(K: int, *, bytes_per_run: int, budget: int, fixed: int = 0, max_runs: int | None = None) -> list[tuple[int, int]]:
    """Split ``K`` runs into consecutive chunks whose estimated memory
    ``fixed + runs * bytes_per_run`` stays within ``budget`` (and at most ``max_runs``
    runs each). Refuses when not even one run fits.

    >>> plan_chunks(10, bytes_per_run=100, budget=450)
    [(0, 4), (4, 8), (8, 10)]
    """
    room = budget - fixed
    if room < bytes_per_run:
        raise ValueError(f"memory_budget must be at least {fixed + bytes_per_run} bytes for one run of this "
                         f"problem, got {budget}")
    per = max(1, room // max(1, bytes_per_run))
    if max_runs is not None:
        per = min(per, max_runs)
    return [(a, min(K, a + per)) for a in range(0, K, per)]


def bytes_per_run(oracle, cfg: TrainConfig, P: int, N: int) -> int:
    """Estimated run-dependent bytes of one run: state, records and the oracle's per-step buffers."""
    item = torch.finfo(cfg.dtype).bits // 8
    state = item * P * (4 if cfg.beta > 0 else 3)  # theta, grad sum, noise (+ v)
    records = 8 * cfg.T * (len(cfg.record) + 2)  # recorded fields + sigma and lr rows
    block = NoiseSource.bytes_per_generator(P, T=cfg.T, N=N, sampling_rate=cfg.sampling_rate, itemsize=item)
    mask = item * N * 2 if cfg.sampling_rate < 1.0 else 0  # this step's masks (K, N)
    return state + records + block + mask + oracle.bytes_per_run(item)


#: runs per chunk on the fast path (cache-sized blocks: ~8 M margins of float32 per step)
FAST_BLOCK_ELEMENTS = 1 << 23


def train(model: Model, X, y, config: TrainConfig, *, X_test=None, y_test=None, init=None) -> History:
    """Train ``config.K`` runs of ``model`` on ``(X, y)`` under ``config`` (a
    :class:`~dpcompanion.training.trainers.config.TrainConfig`): every run's ledger is charged
    before each noisy step and the run stops rather than overspend; ``config.on_eval`` is called at
    :func:`eval_points`. ``y``: class labels in ``{0, ..., n_classes - 1}``. ``X_test, y_test``:
    optional test data (``test_accuracy``); ``init``: ``(P,)`` or ``(K, P)`` (default: from the seeds).

    >>> import numpy as np, torch
    >>> from dpcompanion.training.models import make_model
    >>> X = torch.tensor([[1.0, 0.0], [0.0, 1.0]]); y = torch.tensor([1, 0])
    >>> cfg = TrainConfig.build(sigma=np.full(3, 2.0), R=1.0, lr=1.0, clip_norm=4.0, device="cpu", dtype=torch.float64)
    >>> h = train(make_model("logistic", in_dim=2), X, y, cfg)
    >>> h.steps_done, h.stopped_early, h.R_spent
    (3, False, 0.75)
    """
    if not isinstance(config, TrainConfig):
        raise ValueError(f"config must be a TrainConfig (TrainConfig.build(...)), got {type(config).__name__}")
    cfg = config
    t0 = time.perf_counter()
    dev = torch.device(cfg.device)
    Xt = _as_tensor(validate.features("X", X, dtype=cfg.dtype), dtype=cfg.dtype, device=dev)
    yt = _labels("y", y, model, device=dev)
    N = Xt.shape[0]
    if yt.shape != (N,):
        raise ValueError(f"y must have shape ({N},) to match X, got {tuple(yt.shape)}")
    Xt = Xt.reshape(N, -1)
    # the public divisor (config module, "Which neighbours"): the declared N, never this data's size
    # when one is declared, so that a neighbour with a record removed is divided by the same number
    N_public = N if cfg.N is None else cfg.N
    if cfg.N is None:  # the config was built without N: its sigma floor is checked for this one here
        check_sigma(cfg.sigma, clip_norm=cfg.clip_norm, denominator=cfg.sampling_rate * N, dtype=cfg.dtype)
    ceiling = torch.finfo(cfg.dtype).max / 1e3
    if cfg.clip_norm * max(N, 1) > ceiling:  # N contributions of norm C must sum to a finite number
        raise ValueError(f"clip_norm * N must be <= {ceiling:.3g} in {str(cfg.dtype).replace('torch.', '')}: "
                         f"{cfg.clip_norm:g} * {N} could overflow the clipped sum (whose finiteness would then "
                         "depend on who is in the data)")
    K, P = cfg.K, model.n_params
    th0 = None
    if init is not None:
        th0 = _as_tensor(init, dtype=cfg.dtype, device=dev)
        if th0.shape == (P,):
            th0 = th0.expand(K, -1)
        if th0.shape != (K, P):
            raise ValueError(f"init must have shape ({P},) or ({K}, {P}), got {tuple(th0.shape)}")
    oracle = make_oracle(model, Xt, yt, clip_norm=cfg.clip_norm, fast=cfg.fast)
    test = None
    if X_test is not None:
        Xs = _as_tensor(validate.features("X_test", X_test, dtype=cfg.dtype), dtype=cfg.dtype,
                        device=dev).reshape(len(X_test), -1)
        ys = _labels("y_test", y_test, model, device=dev)
        test = make_oracle(model, Xs, ys, clip_norm=cfg.clip_norm, fast=cfg.fast)
    item = torch.finfo(cfg.dtype).bits // 8
    fixed = item * Xt.numel() * (3 if oracle.fast else 1)
    max_runs = max(8, FAST_BLOCK_ELEMENTS // max(1, oracle.Np)) if oracle.fast and dev.type == "cpu" else None
    chunks = plan_chunks(K, bytes_per_run=bytes_per_run(oracle, cfg, P, N), budget=cfg.memory_budget, fixed=fixed,
                         max_runs=max_runs)
    bar = _progress(cfg.T * len(chunks), cfg.progress, cfg.algorithm)
    # secure: a secret per run (run index), never shared, even by runs given the same seed: two released
    # runs with common noise and different sigmas would give away their noise-free sum
    secret = secret_noise_seeds(range(K)) if cfg.secure else None
    parts = []
    try:
        for a, b in chunks:
            parts.append(_run_chunk(model, oracle, test, Xt, cfg.rows(a, b) if (a, b) != (0, K) else cfg,
                                    None if th0 is None else th0[a:b], bar, secret=secret, runs=range(a, b),
                                    N_public=N_public))
    finally:
        bar.close()
    h = parts[0] if len(parts) == 1 else History.concat(parts)
    _TALLY.runs = getattr(_TALLY, "runs", 0) + K
    _TALLY.run_steps = getattr(_TALLY, "run_steps", 0) + int(np.sum(h.steps_done))
    h.meta.update({"model": repr(model), "device": str(dev), "dtype": str(cfg.dtype).replace("torch.", ""),
                   "seeds": list(cfg.seeds), "N": N, "N_public": N_public,
                   "N_public_declared": cfg.N is not None, "T": cfg.T, "runs": K, "chunks": len(chunks),
                   "fast_path": bool(oracle.fast), "wall_time": time.perf_counter() - t0, **cfg.describe(),
                   "rounding_excess_bound": rounding_excess_bound(N, cfg.dtype)
                   if isinstance(model, DenseModel) and model.n_layers == 1 else None})  # proven for these only
    if cfg.single:
        h = h.run(0)
        h.meta.pop("seeds", None)
        h.meta["runs"] = 1
    return h


def _run_chunk(model, oracle, test, Xt, cfg: TrainConfig, th0, bar, *, secret=None, runs: range,
               N_public: int) -> History:
    dev, dtype = Xt.device, cfg.dtype
    K, T, N, P = cfg.K, cfg.T, Xt.shape[0], model.n_params
    if th0 is None:
        theta = model.init(generators=SeededGenerators(cfg.seeds), dtype=dtype, device=dev)
    else:
        theta = th0.clone()
    charger = Charger(cfg.sigma, budget=cfg.budget, sampling_rate=cfg.sampling_rate)

    def noise_from(t: int) -> tuple[NoiseSource, int]:
        """The noise source of the steps from ``t`` on and its first step: the whole call's, or
        (``segment_noise``) the segment's, seeded from :func:`segment_seed` and ending with it."""
        if not cfg.segment_noise:
            keys = cfg.seeds if secret is None else list(runs)  # secure: each run its own secret generators
            return NoiseSource(keys, device=dev, dtype=dtype, P=P, T=T, N=N, sampling_rate=cfg.sampling_rate,
                               secret=secret), 0
        seeds = [segment_seed(s, t // cfg.eval_every) for s in cfg.seeds]
        return NoiseSource(seeds, device=dev, dtype=dtype, P=P, T=min(cfg.eval_every, T - t), N=N,
                           sampling_rate=cfg.sampling_rate), t

    noise_src, origin = noise_from(0)
    pending = eval_points(T, cfg.eval_every) if cfg.on_eval is not None else []
    hold = cfg.on_refusal == "hold"
    everyone = np.ones(K, dtype=bool)
    recorder = Recorder(cfg.record, K, T)
    lr_rule = cfg.lr_rule.fresh() if hasattr(cfg.lr_rule, "fresh") else cfg.lr_rule
    stopped = np.zeros(K, dtype=bool)
    steps_done = np.zeros(K, dtype=np.int64)
    v = torch.zeros_like(theta) if cfg.beta > 0 else None
    noise = torch.empty_like(theta)
    p = cfg.sampling_rate
    denom = p * N_public  # the fixed, public (expected) batch size: the same for add/remove neighbours
    lr_all = torch.tensor(cfg.lr, dtype=dtype, device=dev)  # a copy of the read-only array
    # each run's noise scale C sigma at every step, checked once (finite, positive): the sigma each run
    # is charged for at step t is the one its noise uses (the charger's rows, spread to the runs)
    sigma_runs = charger.sigma_rows[charger.group_of]
    std_all = noise_std(clip_norm=cfg.clip_norm, sigma=torch.as_tensor(sigma_runs, device=dev), dtype=dtype)
    act, act_np = None, None
    need_loss, need_clip = "loss" in cfg.record, "clip_fraction" in cfg.record
    taken = 0
    for t in range(T):
        if cfg.segment_noise and t > origin and t % cfg.eval_every == 0:
            noise_src, origin = noise_from(t)  # a new segment: its own noise stream
        active = charger.charge(t)  # 1. charge before the noisy step
        stopped |= ~active
        if not active.any():
            break
        if act_np is None or not np.array_equal(active, act_np):  # changes only when a run stops
            act_np, act = active.copy(), torch.as_tensor(active, device=dev)
        drawing = everyone if hold else active  # held runs keep their place in the batch
        weights = sample(noise_src, t - origin, drawing)  # 2. Poisson sampling (PSGD)
        noise_src.draw(t - origin, drawing, noise)
        n_t = torch.as_tensor(steps_done + 1, dtype=dtype, device=dev) if v is not None else None
        theta, sg, gnorm, lr_t = private_step(  # 3. clip -> sum -> noise -> scale -> update
            oracle, theta, weights=weights, noise=noise, std_t=std_all[:, t], lr_t=lr_all[:, t], active=act,
            clip_norm=cfg.clip_norm, denominator=denom, v=v, beta=cfg.beta, n_t=n_t, lr_rule=lr_rule, t=t,
            need_loss=need_loss, need_clip=need_clip, need_grad_norm="grad_norm" in cfg.record)
        recorder.write(t, active, loss=sg.loss, grad_norm=gnorm, clip_fraction=sg.clip_fraction,  # 4. record
                       lr=lr_t, sigma=sigma_runs[:, t], budget_spent=charger.spent)
        steps_done[active] += 1
        taken += 1
        bar.update(1)
        if pending and pending[0] == t + 1:  # the evaluation hook
            cfg.on_eval(pending.pop(0), theta.detach().clone(), runs)
    bar.update(T - taken)
    for step in pending:  # every run has stopped: the parameters are final
        cfg.on_eval(step, theta.detach().clone(), runs)

    with torch.no_grad():
        final_loss = train_acc = None
        if cfg.final_eval:
            fl, ta = oracle.evaluate(theta)
            final_loss = fl.to("cpu", torch.float64).numpy()
            train_acc = ta.to("cpu", torch.float64).numpy()
        test_acc = None if test is None else test.evaluate(theta)[1].to("cpu", torch.float64).numpy()
    eps = charger.epsilon()  # the end-of-run report: each ledger's spent epsilon
    return History(
        **recorder.arrays(),
        steps_done=steps_done,
        stopped_early=stopped,
        R=cfg.R,
        R_spent=charger.spent.copy(),
        final_loss=final_loss,
        train_accuracy=train_acc,
        test_accuracy=test_acc,
        epsilon=eps,
        theta=theta,
        meta={"ledgers": charger.n_ledgers, "noise_generators": len(noise_src.gens)},
    )


def n_samples(X) -> int:
    """Number of rows of ``X`` (tensor, array or sequence)."""
    return int(X.shape[0]) if isinstance(X, torch.Tensor) else int(np.shape(X)[0])


def _budget_given(fn: str, R, budget):
    if R is ... and budget is None:
        raise TypeError(f"{fn} needs R (None: no ledger, analysis runs) or budget")
    return None if R is ... else R


def train_pgd(
    model: Model,
    X,
    y,
    *,
    sigma,
    R: float | None = ...,
    budget: Budget | None = None,
    clip_norm: float = 4.0,
    lr=0.1,
    momentum: float = 0.0,
    seed=0,
    X_test=None,
    y_test=None,
    init=None,
    device: str = "auto",
    dtype: torch.dtype = torch.float32,
    delta: float | None = None,
    progress: bool | None = None,
    record=None,
    memory_budget: int | None = None,
    fast: bool | None = None,
    sampling_rate: float | None = None,
    lr_rule=None,
    algorithm: str | None = None,
    secure: bool = False,
    N: int | None = None,
) -> History:
    """Full-batch private GD (H Algorithm 1), optionally with debiased momentum:
    ``train(model, X, y, TrainConfig.build(...))`` with these settings (``sampling_rate``: default
    the budget's, 1 without one; below 1 the steps are Poisson-sampled, see :func:`train_psgd`).

    ``sigma``: ``(T,)`` or ``(K, T)``, every entry finite and > 0 (no noiseless step). ``seed``: int
    (one run, or the shared seed of K schedule rows) or K ints. The budget: ``budget``, or ``R``
    (R = 2 rho, optional ``delta``); ``R=None`` disables the ledger (analysis only; the cost is still
    recorded). ``lr``: number, ``(T,)`` or ``(K, T)``. ``N``: the public data-set size the noisy sum is
    divided by (default ``len(X)``, declared public). The rest as :meth:`TrainConfig.build`.
    Returns a :class:`~dpcompanion.training.trainers.history.History` (batched when K > 1).
    """
    config = TrainConfig.build(sigma=sigma, budget=budget, R=_budget_given("train_pgd", R, budget), delta=delta,
                               lr=lr, clip_norm=clip_norm, seed=seed, N=n_samples(X) if N is None else N,
                               beta=momentum,
                               sampling_rate=sampling_rate, lr_rule=lr_rule, device=device, dtype=dtype,
                               progress=progress, algorithm=algorithm, record=record, memory_budget=memory_budget,
                               fast=fast, secure=secure)
    return train(model, X, y, config, X_test=X_test, y_test=y_test, init=init)


def train_psgd(model: Model, X, y, *, sampling_rate: float, **kw) -> History:
    """Private SGD with Poisson sampling at ``sampling_rate`` p (H Sec. 4.3); the other
    arguments as :func:`train_pgd`.

    The ledger is charged ``p^2 / sigma_t^2`` per step (the paper's rule) and, because that rule is
    not a guarantee, every step is also checked against the target epsilon at ``delta`` (required
    when p < 1) by the RDP accountant: a run stops at the first step either check refuses. ``loss``
    is the mean over the step's batch; ``final_loss`` the full training loss.
    """
    return train_pgd(model, X, y, sampling_rate=sampling_rate, **kw)
