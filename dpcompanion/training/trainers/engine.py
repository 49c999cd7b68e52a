"""The training loop shared by every private trainer, batched over independent runs.

One loop runs ``K`` runs that differ in seed and/or schedule as one tensor program:
parameters ``(K, P)``, the data shared. Per step t, for every run still active:

1. **budget**: the run's ledger is charged *before* the noisy step
   (``ledger.charge(sigma=sigma_t, sampling_rate=p)``); if the step is unaffordable the
   run stops there (``stopped_early``), as in Hong et al. 2022 (file 001) Algorithm 1
   lines 2-8;
2. **sample** (PSGD only): a Poisson mask, each sample kept with probability p;
3. **clip_and_sum** -> **add_noise** -> **scale** -> **momentum** -> **update**
   (:mod:`dpcompanion.training.trainers.steps`).

Randomness. Run k owns two generators: a CPU ``torch.Generator`` seeded with
``seed_k`` for the initial parameters, and a generator on the device seeded with a
derived seed for everything drawn during training, drawn in a fixed order per step
(mask, then one Gaussian vector of length P). A run's numbers therefore do not depend on
which other runs share the batch: the batched path reproduces the one-run path.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable, Sequence

import numpy as np
import torch

from dpcompanion.training.models import Model
from dpcompanion.training.trainers import steps
from dpcompanion.training.trainers.history import History

__all__ = ["train_loop", "noise_seed", "as_runs"]


def noise_seed(seed: int) -> int:
    """Seed of a run's training-noise generator, derived from its seed (so the noise
    stream is not the init stream)."""
    return int(np.random.SeedSequence([int(seed), 0x5EED]).generate_state(1, dtype=np.uint64)[0] >> 1)


def as_runs(seed, sigma) -> tuple[list[int], np.ndarray, bool]:
    """Broadcast ``seed`` (int or sequence) and ``sigma`` ((T,) or (K, T)) to K runs.
    Returns ``(seeds, sigma (K, T), single)``; ``single`` when one int seed and 1-D sigma."""
    sig = np.asarray(sigma, dtype=np.float64)
    if sig.ndim == 0:
        raise ValueError("sigma must be an array of per-step noise multipliers (length T), got a scalar; "
                         "use numpy.full(T, sigma) for a constant one")
    if sig.ndim > 2 or sig.shape[-1] < 1:
        raise ValueError(f"sigma must have shape (T,) or (K, T) with T >= 1, got {sig.shape}")
    if np.any(np.isnan(sig)) or np.any(sig <= 0):
        raise ValueError("sigma must be > 0 everywhere (inf means no noise and no cost), got a value <= 0 or NaN")
    if isinstance(seed, (int, np.integer)):
        seeds = None
    else:
        seeds = [int(s) for s in seed]
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
    return seeds, sig, single


def _as_tensor(a, *, dtype, device) -> torch.Tensor:
    if isinstance(a, torch.Tensor):
        return a.to(dtype=dtype, device=device)
    return torch.as_tensor(np.asarray(a), dtype=dtype, device=device)


def _progress(total: int, progress: bool | None, desc: str):
    """A tqdm bar, shown on a terminal (or when ``progress=True``), silent in notebooks' quick
    runs and CI logs. ``tqdm.auto`` is imported only when the bar is shown: in a kernel
    without ipywidgets it warns on import."""
    enabled = sys.stderr.isatty() if progress is None else bool(progress)
    if enabled:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm(total=total, disable=not enabled, desc=desc, leave=False)


def _ledgers(R, K, ledger_factory, delta, sampling_rate):
    """One ledger per run. Subsampled runs need ``delta``: their steps are also checked by
    an RDP accountant (the paper's p^2/sigma^2 rule alone is not a guarantee)."""
    if R is None:
        return None
    if sampling_rate < 1.0 and delta is None:
        raise ValueError(
            f"delta is required when sampling_rate < 1 (got {sampling_rate}): subsampled steps are checked "
            "against the target epsilon at delta with an RDP accountant"
        )
    if ledger_factory is None:
        from dpcompanion.theory.ledger import PrivacyLedger

        ledger_factory = PrivacyLedger
    return [ledger_factory(R=R, delta=delta) for _ in range(K)]


def _step_cost(sigma: float, p: float) -> float:
    from dpcompanion.theory.accounting import psgd_step_cost

    return 0.0 if math.isinf(sigma) else psgd_step_cost(sigma=sigma, sampling_rate=p)


def train_loop(
    model: Model,
    X,
    y,
    *,
    sigma,
    R: float | None,
    lr,
    clip_norm: float,
    seed,
    beta: float = 0.0,
    sampling_rate: float = 1.0,
    lr_rule: Callable[[int, torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    X_test=None,
    y_test=None,
    init=None,
    device: str = "auto",
    dtype: torch.dtype = torch.float32,
    delta: float | None = None,
    progress: bool | None = None,
    ledger_factory=None,
    algorithm: str = "pgd",
) -> History:
    """The shared loop (see the module docstring); the public trainers validate their
    arguments and call this. ``lr``: scalar, ``(T,)`` or ``(K, T)`` step sizes;
    ``lr_rule(t, g, lr_t) -> (K,)``, if given, turns the privatized gradient ``g`` of step
    t into that step's step size (ADP-SGD's adaptive rule)."""
    from dpcompanion.core.provenance import resolve_device

    t0 = time.perf_counter()
    try:
        clip_norm = float(clip_norm)
    except (TypeError, ValueError):
        raise ValueError(f"clip_norm must be a finite number > 0, got {clip_norm!r}") from None
    if not (math.isfinite(clip_norm) and clip_norm > 0):
        raise ValueError(f"clip_norm must be a finite number > 0, got {clip_norm}")
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"beta (momentum) must be in [0, 1), got {beta}")
    if not 0.0 < sampling_rate <= 1.0:
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate}")
    if R is not None and not (math.isfinite(R) and R > 0):
        raise ValueError(f"R must be a finite number > 0 (or None for no ledger), got {R}")
    seeds, sig, single = as_runs(seed, sigma)
    K, T = sig.shape
    lr_arr = np.asarray(lr, dtype=np.float64)
    if lr_arr.ndim == 0:
        lr_arr = np.full((K, T), float(lr_arr))
    elif lr_arr.ndim == 1:
        if lr_arr.shape[0] != T:
            raise ValueError(f"lr must be a number or have length T={T}, got length {lr_arr.shape[0]}")
        lr_arr = np.broadcast_to(lr_arr, (K, T)).copy()
    elif lr_arr.shape != (K, T):
        raise ValueError(f"lr must be a number, (T,) or (K, T) = ({K}, {T}), got shape {lr_arr.shape}")
    if np.any(~np.isfinite(lr_arr)) or np.any(lr_arr < 0):
        raise ValueError("lr (step size) must be finite and >= 0")

    dev = torch.device(resolve_device(device))
    Xt = _as_tensor(X, dtype=dtype, device=dev)
    yt = _as_tensor(y, dtype=torch.long, device=dev)
    N = Xt.shape[0]
    if yt.shape != (N,):
        raise ValueError(f"y must have shape ({N},) to match X, got {tuple(yt.shape)}")
    Xt = Xt.reshape(N, -1)

    # parameters and generators
    if init is None:
        theta = model.init(generators=[torch.Generator().manual_seed(s) for s in seeds], dtype=dtype, device=dev)
    else:
        th0 = _as_tensor(init, dtype=dtype, device=dev)
        if th0.shape == (model.n_params,):
            th0 = th0.expand(K, -1)
        if th0.shape != (K, model.n_params):
            raise ValueError(f"init must have shape ({model.n_params},) or ({K}, {model.n_params}), got {tuple(th0.shape)}")
        theta = th0.clone()
    gens = [torch.Generator(device=dev).manual_seed(noise_seed(s)) for s in seeds]
    ledgers = _ledgers(R, K, ledger_factory, delta, float(sampling_rate))

    nan = np.full((K, T), np.nan)
    rec = {k: nan.copy() for k in ("loss", "grad_norm", "clip_fraction", "sigma", "lr", "budget_spent")}
    spent = np.zeros(K)
    steps_done = np.zeros(K, dtype=np.int64)
    stopped = np.zeros(K, dtype=bool)
    active = np.ones(K, dtype=bool)
    v = torch.zeros_like(theta) if beta > 0 else None
    noise_buf = torch.empty_like(theta)
    denom = sampling_rate * N
    p = float(sampling_rate)

    bar = _progress(T, progress, algorithm)
    try:
        for t in range(T):
            # 1. budget: charge before the noisy step; stop a run that cannot afford it
            for k in range(K):
                if not active[k]:
                    continue
                s = float(sig[k, t])
                if ledgers is not None:
                    if not ledgers[k].can_afford(sigma=s, sampling_rate=p):
                        active[k], stopped[k] = False, True
                        continue
                    ledgers[k].charge(sigma=s, sampling_rate=p, step=t + 1)
                    spent[k] = ledgers[k].spent
                else:
                    spent[k] += _step_cost(s, p)
            if not active.any():
                break
            act = torch.as_tensor(active, device=dev)
            run_gens = [g if active[k] else None for k, g in enumerate(gens)]
            # 2. Poisson sampling (PSGD)
            weights = None
            if p < 1.0:
                weights = torch.zeros((K, N), dtype=dtype, device=dev)
                for k, g in enumerate(run_gens):
                    if g is not None:
                        weights[k] = (torch.rand(N, generator=g, device=dev, dtype=dtype) < p).to(dtype)
            # 3. clip -> sum -> noise -> scale -> (momentum) -> update
            if weights is None:
                res = steps.clip_and_sum(model, theta, Xt, yt, clip_norm=clip_norm)
            else:  # only the rows some run sampled (all runs share the gathered rows)
                rows = torch.nonzero(weights.any(dim=0)).squeeze(-1)
                weights = weights.index_select(1, rows)
                res = steps.clip_and_sum(model, theta, Xt.index_select(0, rows), yt.index_select(0, rows),
                                         clip_norm=clip_norm, weights=weights)
            gnorm = torch.linalg.vector_norm(res.grad_sum, dim=-1) / denom  # before noise
            sig_t = torch.as_tensor(sig[:, t], dtype=dtype, device=dev)
            noisy = steps.add_noise(res.grad_sum, clip_norm=clip_norm, sigma=sig_t, generators=run_gens,
                                    out=noise_buf, inplace=True)
            g = steps.scale(noisy, denominator=denom, inplace=True)
            lr_t = torch.as_tensor(lr_arr[:, t], dtype=dtype, device=dev)
            if lr_rule is not None:
                lr_t = lr_rule(t, g, lr_t)
            step_size = lr_t * act.to(dtype)  # stopped runs stay put
            if v is not None:
                # v is updated for stopped runs too: they never resume, so it is unused
                direction = steps.momentum_accumulate_(v, g, beta=beta)
                n_t = torch.as_tensor(steps_done + 1, dtype=dtype, device=dev)
                step_size = step_size * steps.debias_factor(beta=beta, t=n_t)
            else:
                direction = g
            # records (loss at theta_t, where the gradient was taken)
            exceed = (res.norms > clip_norm).to(dtype)
            if weights is None:
                loss_t = res.losses.mean(-1)
                clip_frac = exceed.mean(-1)
            else:
                cnt = weights.sum(-1).clamp_min(1.0)
                loss_t = (res.losses * weights).sum(-1) / cnt
                clip_frac = (exceed * weights).sum(-1) / cnt
            theta = steps.sgd_update_(theta, direction, lr=step_size)
            cols = np.stack([x.detach().to("cpu", torch.float64).numpy()
                             for x in (loss_t, gnorm, clip_frac, lr_t)])
            a = active
            rec["loss"][a, t], rec["grad_norm"][a, t], rec["clip_fraction"][a, t], rec["lr"][a, t] = cols[:, a]
            rec["sigma"][a, t] = sig[a, t]
            rec["budget_spent"][a, t] = spent[a]
            steps_done[a] += 1
            bar.update(1)
    finally:
        bar.close()

    with torch.no_grad():
        fl, ta = model.evaluate(theta, Xt, yt)
        final_loss = fl.to("cpu", torch.float64).numpy()
        train_acc = ta.to("cpu", torch.float64).numpy()
        test_acc = None
        if X_test is not None:
            Xs = _as_tensor(X_test, dtype=dtype, device=dev).reshape(len(X_test), -1)
            ys = _as_tensor(y_test, dtype=torch.long, device=dev)
            test_acc = model.evaluate(theta, Xs, ys)[1].to("cpu", torch.float64).numpy()
    eps = None
    if delta is not None:
        from dpcompanion.theory.accounting import accountant_epsilon

        memo: dict[bytes, float] = {}  # runs sharing a schedule share its epsilon
        eps = np.zeros(K)
        for k in range(K):
            if steps_done[k]:
                key = sig[k, : steps_done[k]].tobytes()
                if key not in memo:
                    memo[key] = accountant_epsilon(sigma=sig[k, : steps_done[k]], delta=delta, sampling_rate=p)
                eps[k] = memo[key]
    wall = time.perf_counter() - t0
    h = History(
        **rec,
        steps_done=steps_done,
        stopped_early=stopped,
        R=R,
        R_spent=spent.copy(),
        final_loss=final_loss,
        train_accuracy=train_acc,
        test_accuracy=test_acc,
        epsilon=eps,
        theta=theta,
        meta={
            "algorithm": algorithm,
            "model": repr(model),
            "device": str(dev),
            "dtype": str(dtype).replace("torch.", ""),
            "seeds": seeds,
            "clip_norm": clip_norm,
            "beta": beta,
            "sampling_rate": p,
            "N": N,
            "T": T,
            "runs": K,
            "wall_time": wall,
        },
    )
    if single:
        h = h.run(0)
        h.meta.pop("seeds", None)
        h.meta["runs"] = 1
    return h
