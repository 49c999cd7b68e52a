"""The benchmark's workloads and how each is timed (:mod:`dpcompanion.training.bench` says what is
measured and why): the paper's MLP (ours, :class:`OursRunner`, against Opacus, :class:`OpacusRunner`;
the overhead of privacy, :func:`run_mlp_overhead`), the logistic workload (:func:`run_linear_benchmark`)
and W-F4's CNN (:func:`run_cnn_benchmark`).
"""

from __future__ import annotations

import itertools
import statistics
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from dpcompanion.theory import schedules
from dpcompanion.theory.accounting import R_PAPER  # (4, 1e-8)-DP as R = 2 rho (H Sec. 5)
from dpcompanion.training.bench_measure import counted_flops, interleave, median_and_all, per_round_ratios, sync
from dpcompanion.training.bench_profile import CNNStages, MLPStages, profile_summary
from dpcompanion.training.models import make_model
from dpcompanion.training.trainers import train_pgd

__all__ = ["OPACUS_MODES", "DataWorkload", "Workload", "WORKLOADS", "SETTINGS", "LinearWorkload", "LINEAR_WORKLOADS",
           "LINEAR_SETTINGS", "workload_data", "workload_schedule", "OursRunner", "plain_linear_loop",
           "run_linear_benchmark", "OpacusRunner", "CNN_BATCH", "CL", "CNN_SETTINGS", "MLP_OVERHEAD_SETTINGS",
           "private_step_fn", "run_cnn_benchmark", "run_mlp_overhead"]

#: Opacus ``grad_sample_mode`` values benchmarked, fastest expected first.
OPACUS_MODES: tuple[str, ...] = ("ghost", "hooks", "functorch", "ew")


@dataclass(frozen=True)
class DataWorkload:
    """The workloads' shared data and training settings: H Sec. 5's MNIST35-PCA60 shape, (4, 1e-8)-DP."""

    N: int = 1000
    D: int = 60
    clip_norm: float = 4.0
    lr: float = 0.1
    data_scale: float = 10.0
    R: float = R_PAPER


@dataclass(frozen=True)
class Workload(DataWorkload):
    """The MLP workload: a ``D``-``hidden``-1 network on :class:`DataWorkload`'s data."""

    hidden: int = 1000
    peak_n: int = 2048  # side of the matmul timed for the machine's peak

    @property
    def sizes(self) -> tuple[int, ...]:
        return (self.D, self.hidden, 1)


WORKLOADS: dict[str, Workload] = {
    "paper": Workload(),
    # smoke size for tests: same code paths, milliseconds per step
    "tiny": Workload(N=64, D=8, hidden=16, peak_n=512),
}

#: per mode: steps per run, runs, repeats, and each slow Opacus mode's time budgets (seconds).
SETTINGS: dict[str, dict[str, Any]] = {
    "quick": {"steps": 10, "runs": 100, "repeats": 7, "batched_rounds": 5, "opacus_single_budget_s": 2.0,
              "opacus_seq_budget_s": 1.5},
    "full": {"steps": 100, "runs": 100, "repeats": 7, "batched_rounds": 5, "opacus_single_budget_s": 20.0,
             "opacus_seq_budget_s": 60.0},
}


@dataclass(frozen=True)
class LinearWorkload(DataWorkload):
    """The logistic workload: ``runs`` logistic models trained at once."""

    runs: int = 1000
    shared_seed_group: int = 10  # runs per seed in the common-random-numbers measurement


LINEAR_WORKLOADS: dict[str, LinearWorkload] = {
    "paper": LinearWorkload(),
    "tiny": LinearWorkload(N=64, D=8, runs=16, shared_seed_group=4),
}

#: per mode: steps per run and interleaved rounds of the linear workload
LINEAR_SETTINGS: dict[str, dict[str, int]] = {"quick": {"steps": 20, "rounds": 9}, "full": {"steps": 100, "rounds": 9}}


def workload_data(w: DataWorkload, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The workload's data (float32 features, int64 labels in {0, 1}) drawn from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(w.N, w.D, generator=g, dtype=torch.float64)
    X = (X - X.mean(0)) / X.std(0)
    X = X * (w.data_scale / X.norm(dim=1).max())
    y = (torch.rand(w.N, generator=g) < 0.5).long()
    return X.float(), y


def _model(w: Workload):
    return make_model("mlp", in_dim=w.D, n_classes=2, hidden=w.hidden)


def workload_schedule(w: DataWorkload, steps: int) -> np.ndarray:
    """The uniform noise multipliers of ``steps`` steps spending the workload's budget ``R``."""
    return np.asarray(schedules.uniform(T=steps, R=w.R), dtype=float)


class OursRunner:
    """Timed calls of :func:`dpcompanion.training.trainers.train_pgd` on the workload."""

    def __init__(self, w: Workload, X, y, sigma, device: str):
        self.train = train_pgd
        self.w, self.model, self.sigma, self.device = w, _model(w), sigma, device
        self.X, self.y = X.to(device), y.to(device)

    def call(self, runs: int, steps: int | None = None) -> float:
        sig = self.sigma if steps is None else self.sigma[:steps]
        seed = 0 if runs == 1 else list(range(runs))
        sync(self.device)
        t = time.perf_counter()
        h = self.train(self.model, self.X, self.y, sigma=sig, R=self.w.R * (1 + 1e-9), clip_norm=self.w.clip_norm,
                       lr=self.w.lr, seed=seed, device=self.device, progress=False)
        sync(self.device)
        dt = time.perf_counter() - t
        done = np.asarray(h.steps_done)
        if np.any(done != len(sig)):
            raise RuntimeError(f"benchmark run stopped early ({done.min()} of {len(sig)} steps): ledger refused a step")
        return dt


def plain_linear_loop(X: torch.Tensor, y: torch.Tensor, sigma, *, runs: int, clip_norm: float, lr: float,
                      seed: int = 0) -> torch.Tensor:
    """Private GD of ``runs`` logistic regressions as a plain batched torch loop (no ledger, no
    history, one generator): the linear workload's reference. Returns the parameters ``(runs, D + 1)``.

    >>> X = torch.tensor([[1.0, 0.0], [0.0, 2.0]]); y = torch.tensor([1, 0])
    >>> plain_linear_loop(X, y, [1.0, 1.0], runs=3, clip_norm=1.0, lr=0.1).shape
    torch.Size([3, 3])
    """
    g = torch.Generator(device=X.device).manual_seed(seed)
    N = X.shape[0]
    Xa = torch.cat([X, torch.ones(N, 1, dtype=X.dtype, device=X.device)], dim=1)
    s = (2 * y - 1).to(X.dtype)
    xn = torch.linalg.vector_norm(Xa, dim=1)
    theta = torch.zeros(runs, Xa.shape[1], dtype=X.dtype, device=X.device)
    for sig in np.asarray(sigma, dtype=float):
        z = theta @ Xa.T  # margins (runs, N)
        d = -s * torch.sigmoid(-s * z)  # d loss / d z of log(1 + exp(-s z))
        norms = d.abs() * xn  # per-sample gradient norms
        w = d * torch.clamp(clip_norm / norms, max=1.0)  # clipped weights
        grad = w @ Xa / N  # clipped mean gradient
        noise = torch.randn(theta.shape, generator=g, dtype=X.dtype, device=X.device)
        theta -= lr * (grad + clip_norm * float(sig) / N * noise)
    return theta


def run_linear_benchmark(*, mode: str = "quick", device: str = "cpu", size: str = "paper", seed: int = 0,
                         steps: int | None = None, rounds: int | None = None,
                         log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Our trainer against the plain loop, interleaved rounds: the ``linear_*`` keys and ``linear``."""

    log = log or (lambda s: None)
    w = LINEAR_WORKLOADS[size]
    cfg = dict(LINEAR_SETTINGS[mode])
    if steps is not None:
        cfg["steps"] = steps
    if rounds is not None:
        cfg["rounds"] = rounds
    T, K = cfg["steps"], w.runs
    X, y = workload_data(w, seed)
    X, y = X.to(device), y.to(device)
    sigma = workload_schedule(w, T)
    model = make_model("logistic", in_dim=w.D, n_classes=2)
    record = ("grad_norm", "clip_fraction", "sigma", "lr", "budget_spent")  # all but the per-step loss
    distinct = list(range(seed, seed + K))
    shared = [seed + k // w.shared_seed_group for k in range(K)]

    def ours(seeds) -> float:
        sync(device)
        t = time.perf_counter()
        h = train_pgd(model, X, y, sigma=sigma, R=w.R * (1 + 1e-9), clip_norm=w.clip_norm, lr=w.lr, seed=seeds,
                      device=device, progress=False, record=record)
        sync(device)
        dt = time.perf_counter() - t
        if not h.meta.get("fast_path"):
            raise RuntimeError("the linear benchmark did not take the fast path")
        if np.any(np.asarray(h.steps_done) != T):
            raise RuntimeError("linear benchmark run stopped early: the ledger refused a step")
        return dt

    def plain() -> float:
        sync(device)
        t = time.perf_counter()
        plain_linear_loop(X, y, sigma, runs=K, clip_norm=w.clip_norm, lr=w.lr, seed=seed)
        sync(device)
        return time.perf_counter() - t

    ours(distinct)  # warm-up at the timed size, like the plain loop's (buffers, allocator, caches)
    plain()
    times: dict[str, list[float]] = {"ours": [], "plain": [], "ours_crn": []}
    for r in range(cfg["rounds"]):
        times["plain"].append(plain())
        times["ours"].append(ours(distinct))
        times["ours_crn"].append(ours(shared))
        log(f"linear round {r + 1}: ours {K * T / times['ours'][-1]:.0f}, plain {K * T / times['plain'][-1]:.0f} "
            "run-steps/s")
    rate = {k: K * T / statistics.median(v) for k, v in times.items()}
    # each round's ratio pairs two measurements taken back to back (the same load)
    ratios = [p / o for p, o in zip(times["plain"], times["ours"])]
    crn_ratios = [p / o for p, o in zip(times["plain"], times["ours_crn"])]
    return {
        "linear_run_steps_per_s": rate["ours"],
        "linear_reference_run_steps_per_s": rate["plain"],
        "ratio_linear_batched_vs_reference": statistics.median(ratios),
        "linear": {
            "ours": median_and_all(times["ours"]),
            "reference": median_and_all(times["plain"]),
            "ratio_per_round": [float(x) for x in ratios],
            # the target's key: the smaller median of the two designs (distinct seeds, common random numbers)
            "worst_ratio_vs_reference": min(statistics.median(ratios), statistics.median(crn_ratios)),
            "ratio_of_median_rates": rate["ours"] / rate["plain"],
            "ratio_of_best_times": min(times["plain"]) / min(times["ours"]),  # less sensitive to load bursts
            "ratio_statistic": "median over interleaved rounds of (plain loop time / our time) in that round",
            "common_random_numbers": {"runs_per_seed": w.shared_seed_group, "run_steps_per_s": rate["ours_crn"],
                                      "ratio_vs_reference": statistics.median(crn_ratios),
                                      "ratio_of_best_times": min(times["plain"]) / min(times["ours_crn"]),
                                      "ratio_per_round": [float(x) for x in crn_ratios],
                                      **median_and_all(times["ours_crn"])},
            "workload": asdict(w) | {"steps": T, "params": w.D + 1, "batch": "full", "sigma": float(sigma[0]),
                                     "schedule": f"uniform(T={T}, R={w.R})"},
            "rounds": cfg["rounds"],
            "what": {"ours": "train_pgd(logistic model, distinct seeds): margin fast path, ledger charged before "
                             "each step, history of grad_norm, clip_fraction, sigma, lr, budget_spent, final "
                             "evaluation; whole call timed",
                     "reference": "plain_linear_loop: the same arithmetic as a plain batched torch loop, one "
                                  "noise generator, no ledger, no history"},
        },
    }


def _make_private(module, opt, crit, loader, *, sigma: float, clip_norm: float, mode: str):
    """Opacus's private ``(module, optimizer, criterion)`` in ``mode`` (ghost mode brings its own criterion)."""
    from opacus import PrivacyEngine

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "secure RNG turned off": fine for timing
        out = PrivacyEngine(accountant="rdp").make_private(
            module=module, optimizer=opt, criterion=crit, data_loader=loader, noise_multiplier=float(sigma),
            max_grad_norm=clip_norm, poisson_sampling=False, grad_sample_mode=mode)
    if mode == "ghost":
        return out[:3]
    module, opt, _ = out
    return module, opt, crit


class OpacusRunner:
    """One Opacus private model/optimizer/criterion in ``mode`` on the workload."""

    def __init__(self, mode: str, w: Workload, X, y, sigma: float, device: str, seed: int):
        self.mode, self.device = mode, device
        model = _model(w)
        theta0 = model.init(generators=[torch.Generator().manual_seed(seed)])[0]
        module = model.to_module(theta0).to(device)
        self.X, self.yf = X.to(device), y.to(device).float()
        self.init_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        opt = torch.optim.SGD(module.parameters(), lr=w.lr)
        loader = DataLoader(TensorDataset(X, y.float()), batch_size=w.N)
        crit = torch.nn.BCEWithLogitsLoss()  # = softplus(-s z), s = 2y - 1: our logistic loss
        self.module, self.opt, self.crit = _make_private(module, opt, crit, loader, sigma=sigma,
                                                         clip_norm=w.clip_norm, mode=mode)

    def step(self) -> None:
        self.opt.zero_grad(set_to_none=True)
        loss = self.crit(self.module(self.X).squeeze(-1), self.yf)
        loss.backward()
        self.opt.step()

    def reset(self) -> None:
        inner = getattr(self.module, "_module", self.module)
        with torch.no_grad():
            for k, v in inner.state_dict().items():
                v.copy_(self.init_state[k])

    def call(self, steps: int, runs: int = 1) -> float:
        sync(self.device)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(runs):
                self.reset()
                for _ in range(steps):
                    self.step()
        sync(self.device)
        return time.perf_counter() - t


#: the CNN workload: W-F4's network (``cnn-mnist``) on 1x28x28 inputs, batch ``N``
CNN_BATCH: dict[str, int] = {"paper": 256, "tiny": 16}
#: suffix of the CNN entries whose input is channels-last (Opacus and the plain step)
CL = "_channels_last"
#: interleaved rounds and steps per round of the CNN and the overhead measurements
CNN_SETTINGS: dict[str, dict[str, int]] = {"quick": {"rounds": 5, "steps": 3}, "full": {"rounds": 9, "steps": 10}}
#: the MLP's one-run overhead rounds: its steps take milliseconds, so many short rounds
MLP_OVERHEAD_SETTINGS: dict[str, dict[str, int]] = {"quick": {"rounds": 21, "steps": 5},
                                                    "full": {"rounds": 41, "steps": 10}}


def private_step_fn(model, theta, X, y, *, clip_norm: float, lr: float, sigma: float, gen: torch.Generator):
    """One private step of our engine on ``theta`` (in place): clipped sum
    (:meth:`Model.clipped_grad_sum`), Gaussian noise of std ``sigma C``, averaged update."""
    N = X.shape[0]

    def step() -> None:
        r = model.clipped_grad_sum(theta, X, y, clip_norm=clip_norm)
        noise = torch.randn(r.grad_sum.shape, generator=gen, dtype=theta.dtype)
        theta.sub_(r.grad_sum.add_(noise, alpha=sigma * clip_norm), alpha=lr / N)

    return step


def _plain_step_fn(module, X, y, *, lr: float, loss: str):
    """One plain (non-private) torch SGD step of ``module`` on the whole batch."""
    opt = torch.optim.SGD(module.parameters(), lr=lr)
    crit = torch.nn.CrossEntropyLoss() if loss == "ce" else torch.nn.BCEWithLogitsLoss()
    target = y if loss == "ce" else y.float()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        z = module(X)
        crit(z if loss == "ce" else z.squeeze(-1), target).backward()
        opt.step()

    return step


def run_cnn_benchmark(*, mode: str = "quick", size: str = "paper", seed: int = 0, opacus_modes=OPACUS_MODES,
                      log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """W-F4's CNN (``cnn-mnist``) at batch ``CNN_BATCH[size]``: our private step against each Opacus
    ``grad_sample_mode`` (same module, parameters and batch) and the non-private steps, interleaved
    rounds (CPU). Each ratio is the median over rounds of the round's ratio (``*_rounds``: per round);
    ``profile``: the stages (:class:`CNNStages`). ``*_channels_last``: Opacus and the plain step given
    the channels-last input our engine feeds its pools, so that no side wins by memory layout alone."""

    log = log or (lambda s: None)
    cfg, N = CNN_SETTINGS[mode], CNN_BATCH[size]
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(N, 784, generator=g)
    y = torch.randint(0, 10, (N,), generator=g)
    model = make_model("cnn-mnist", n_classes=10)
    theta = model.init(generators=[torch.Generator().manual_seed(seed)])
    clip, lr, sigma = 1.0, 0.1, 1.0
    fns = {"ours": private_step_fn(model, theta, X, y, clip_norm=clip, lr=lr, sigma=sigma,
                                    gen=torch.Generator().manual_seed(seed + 1))}
    Xi = X.reshape(N, 1, 28, 28)
    # torch's CPU max-pool is far slower on NCHW tensors than on channels-last ones (which our engine uses)
    layouts = {"": Xi, CL: Xi.contiguous(memory_format=torch.channels_last)}
    for tag, Xl in layouts.items():
        fns[f"nonprivate{tag}"] = _plain_step_fn(model.to_module(theta[0].clone()), Xl, y, lr=lr, loss="ce")
    kw = dict(clip_norm=clip, lr=lr, sigma=sigma)
    fns["engine_nonprivate"] = CNNStages(model, theta.clone(), X, y, **kw, gen=torch.Generator()).nonprivate_step
    stages = CNNStages(model, theta.clone(), X, y, **kw, gen=torch.Generator().manual_seed(seed + 1))
    fns["profiled"] = stages.private_step
    errors = {}
    for m, (tag, Xl) in itertools.product(opacus_modes, layouts.items()):
        try:
            module = model.to_module(theta[0].clone())
            opt = torch.optim.SGD(module.parameters(), lr=lr)
            crit = torch.nn.CrossEntropyLoss()
            loader = DataLoader(TensorDataset(Xi, y), batch_size=N)
            mod_, opt_, crit_ = _make_private(module, opt, crit, loader, sigma=sigma, clip_norm=clip, mode=m)

            def st(mod_=mod_, opt_=opt_, crit_=crit_, Xl=Xl):
                opt_.zero_grad(set_to_none=True)
                crit_(mod_(Xl), y).backward()
                opt_.step()

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                st()
            fns[f"opacus_{m}{tag}"] = st
        except Exception as e:  # noqa: BLE001 - a mode that does not run is reported
            errors[m + tag] = f"{type(e).__name__}: {e}"[:300]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        times = interleave(fns, rounds=cfg["rounds"], steps=cfg["steps"])
    med = {k: statistics.median(v) for k, v in times.items()}
    op = {k[len("opacus_"):]: v for k, v in med.items() if k.startswith("opacus_") and not k.endswith(CL)}
    op_cl = {k[len("opacus_"):-len(CL)]: v for k, v in med.items() if k.startswith("opacus_") and k.endswith(CL)}
    if not op:
        raise RuntimeError("no Opacus mode ran on the CNN workload; nothing to compare with")
    fastest = min(op, key=op.get)
    log(f"cnn: ours {med['ours'] * 1e3:.1f} ms/step, opacus {fastest} {op[fastest] * 1e3:.1f} ms/step")
    vs_opacus = per_round_ratios(times[f"opacus_{fastest}"], times["ours"])
    out = {
        "ratio_vs_opacus_fastest": vs_opacus["median"],
        "ratio_vs_opacus_fastest_rounds": vs_opacus,
        "opacus_fastest_mode": fastest,
        **_overhead_keys(times, "ours", {"torch": "nonprivate", "torch_channels_last": f"nonprivate{CL}",
                                         "engine": "engine_nonprivate"}),
        "profile": profile_summary(stages.times, rounds=cfg["rounds"], steps=cfg["steps"],
                                   whole_s=times["profiled"], measured_step_s=statistics.median(times["ours"]),
                                   workload=f"W-F4's CNN, batch {N}"),
        "flops_per_step": counted_flops(fns["ours"]),
        "step_s": {k: median_and_all(v) for k, v in times.items()},
    }
    if op_cl:
        fastest_cl = min(op_cl, key=op_cl.get)
        vs_cl = per_round_ratios(times[f"opacus_{fastest_cl}{CL}"], times["ours"])
        over_cl = per_round_ratios(times["ours"], times[f"nonprivate{CL}"])
        out |= {"ratio_vs_opacus_fastest_channels_last": vs_cl["median"],
                "ratio_vs_opacus_fastest_channels_last_rounds": vs_cl, "opacus_fastest_mode_channels_last": fastest_cl,
                "private_over_nonprivate_channels_last": over_cl["median"],
                "private_over_nonprivate_channels_last_rounds": over_cl}
    return out | {
        "opacus_errors": errors,
        "workload": {"model": "cnn-mnist (W-F4's network)", "params": model.n_params, "input": [1, 28, 28],
                     "batch": N, "clip_norm": clip, "sigma": sigma, "lr": lr, "dtype": "float32"},
        "rounds": cfg["rounds"], "steps_per_round": cfg["steps"],
        "ratio_statistic": "median over interleaved rounds of the round's ratio of step times (Opacus's fastest "
                           "mode by median step time / ours; ours / the non-private step): both times of a ratio "
                           "taken back to back, under the same load",
        "what": {"ours": "GhostConvModel.clipped_grad_sum (ghost or formed per-sample norms per layer), noise, "
                         "update; no ledger", "opacus": "PrivacyEngine.make_private step (zero_grad, forward, "
                         "backward, optimizer step)", "nonprivate": "plain torch SGD step of the same module",
                 "engine_nonprivate": "our engine's forward (channels-last pools) and the parameters' gradient of "
                                      "the summed loss, no clipping, no noise, the same update "
                                      "(CNNStages.nonprivate_step)",
                 "profiled": "the private step run stage by stage (CNNStages.private_step; same numbers)",
                 "flops_per_step": "torch.utils.flop_counter's count of one private step of ours (convolutions "
                                   "and matrix products)"},
    }


def _fastest_nonprivate(times: dict[str, list[float]], private: str, baselines: dict[str, str]) -> dict[str, Any]:
    """Per round, the private time over the smallest time of the ``baselines`` (name -> key in
    ``times``) in that round; the baseline fastest by median is named.

    >>> r = _fastest_nonprivate({"p": [3.0, 3.0, 3.0], "a": [1.0, 2.0, 2.0], "b": [2.0, 1.5, 1.5]}, "p",
    ...                         {"torch": "a", "engine": "b"})
    >>> r["per_round"], r["median"], r["fastest_by_median"]
    ([3.0, 2.0, 2.0], 2.0, 'engine')
    """
    fastest = [min(times[k][r] for k in baselines.values()) for r in range(len(times[private]))]
    med = {name: statistics.median(times[k]) for name, k in baselines.items()}
    return per_round_ratios(times[private], fastest) | {
        "fastest_by_median": min(med, key=med.get), "baselines": dict(baselines),
        "statistic": "median over rounds of the round's private step time / the smallest non-private step time "
                     "of that round"}


def _overhead_keys(times, private: str, baselines: dict[str, str]) -> dict[str, Any]:
    """The MLP's and the CNN's overhead-of-privacy keys: the private step over torch's plain step,
    over our engine's without privacy and over the fastest baseline, each with its ``_rounds``."""
    torch_ = per_round_ratios(times[private], times[baselines["torch"]])
    engine = per_round_ratios(times[private], times[baselines["engine"]])
    fastest = _fastest_nonprivate(times, private, baselines)
    return {"private_over_nonprivate": torch_["median"], "private_over_nonprivate_rounds": torch_,
            "private_over_engine_nonprivate": engine["median"], "private_over_engine_nonprivate_rounds": engine,
            "private_over_fastest_nonprivate": fastest["median"], "private_over_fastest_nonprivate_rounds": fastest,
            "fastest_nonprivate": fastest["fastest_by_median"]}


def run_mlp_overhead(w: "Workload", X, y, *, mode: str = "quick", seed: int = 0, runs: int = 1) -> dict[str, Any]:
    """The overhead of privacy on the MLP (one run), interleaved rounds: our private step over torch's
    plain SGD step and over our engine's step without privacy (:func:`_overhead_keys`); ``profile``: its
    stages (:class:`MLPStages`); ``profile_batched``: the same for ``runs`` runs in one step."""
    cfg, cfgK = MLP_OVERHEAD_SETTINGS[mode], CNN_SETTINGS[mode]
    model = _model(w)
    theta = model.init(generators=[torch.Generator().manual_seed(seed)])
    kw = dict(clip_norm=w.clip_norm, lr=w.lr, sigma=1.0)
    stages = MLPStages(model, theta.clone(), X, y, **kw, gen=torch.Generator().manual_seed(seed + 1))
    fns = {"private": private_step_fn(model, theta, X, y, **kw, gen=torch.Generator().manual_seed(seed + 1)),
           "nonprivate": _plain_step_fn(model.to_module(theta[0].clone()), X, y, lr=w.lr, loss="bce"),
           "engine_nonprivate": MLPStages(model, theta.clone(), X, y, **kw, gen=torch.Generator()).nonprivate_step,
           "profiled": stages.private_step}
    times = interleave(fns, rounds=cfg["rounds"], steps=cfg["steps"])
    out = _overhead_keys(times, "private", {"torch": "nonprivate", "engine": "engine_nonprivate"})
    out["profile"] = profile_summary(stages.times, rounds=cfg["rounds"], steps=cfg["steps"],
                                     whole_s=times["profiled"], measured_step_s=statistics.median(times["private"]),
                                     workload="the paper's MLP, one run")
    thetaK = model.init(generators=[torch.Generator().manual_seed(seed + k) for k in range(runs)])
    stagesK = MLPStages(model, thetaK.clone(), X, y, **kw, gen=torch.Generator().manual_seed(seed + 1))
    timesK = interleave({"private": private_step_fn(model, thetaK, X, y, **kw,
                                                     gen=torch.Generator().manual_seed(seed + 1)),
                          "profiled": stagesK.private_step}, rounds=cfgK["rounds"], steps=1)
    out["profile_batched"] = profile_summary(
        stagesK.times, rounds=cfgK["rounds"], steps=1, whole_s=timesK["profiled"],
        measured_step_s=statistics.median(timesK["private"]),
        workload=f"the paper's MLP, {runs} runs in one step") | {"runs": runs}
    return out | {
        "step_s": {k: median_and_all(v) for k, v in times.items()},
        "rounds": cfg["rounds"], "steps_per_round": cfg["steps"],
        "ratio_statistic": "median over interleaved rounds of the round's private / non-private step time "
                           "(the fastest: the smallest non-private time of the round)",
        "what": {"private": "DenseModel.clipped_grad_sum + noise + update (no ledger)",
                 "nonprivate": "torch SGD step of the same network (BCEWithLogitsLoss, the same logistic loss)",
                 "engine_nonprivate": "our engine's forward and backward with clipping and noise off: the plain "
                                      "mean gradient, the same update (MLPStages.nonprivate_step)",
                 "profiled": "the private step run stage by stage (MLPStages.private_step; same numbers)"}}
