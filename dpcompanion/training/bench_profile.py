"""Where the time of our private step goes, and the engine's step with privacy turned off.

:class:`MLPStages` (the paper's network's ghost-clipping path) and :class:`CNNStages` (W-F4's CNN)
run the private step stage by stage (:data:`STAGES`) with the same tensor operations in the same
order, calling the models' own stage helpers: the staged step's parameters equal
:func:`~dpcompanion.training.bench_workloads.private_step_fn`'s bit for bit (tested), and the engine
carries no profiling hook. ``nonprivate_step``: the same path without clipping and noise, one of
the two non-private baselines of the benchmark.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import torch

from dpcompanion.training.conv_models import GhostConvModel
from dpcompanion.training.dense_models import DenseModel
from dpcompanion.training.model_base import clip_factors

__all__ = ["STAGES", "STAGE_WHY", "MLPStages", "CNNStages", "profile_summary"]

#: the stages of the private step, in order
STAGES: tuple[str, ...] = ("forward", "norms", "clipped_sum", "noise", "update")

#: what each stage costs and why, for the sentence naming a workload's largest stage
STAGE_WHY: dict[str, str] = {
    "forward": "the forward pass and the backprops, which the non-private step pays as well: the floor of any step",
    "norms": "the per-sample gradient norms, from the activations and backprops the step holds anyway, in "
             "float32 partials with a proven error bound (sqnorms), and the clip factors: passes a non-private step "
             "does not make",
    "clipped_sum": "the clip-weighted sum of the per-sample gradients: the weight-gradient products of a "
                   "non-private backward, with the clip factors applied first",
    "noise": "one Gaussian draw per parameter: random number generation the non-private step does not do",
    "update": "the averaged SGD update, one pass over the parameters",
}


class _Timer:
    """Per-stage seconds of each call: ``times[stage]`` one entry per call."""

    def __init__(self):
        self.times: dict[str, list[float]] = {s: [] for s in STAGES}

    def run(self, stages: list[tuple[str, Callable[[], Any]]]) -> None:
        t = time.perf_counter()
        for name, f in stages:
            f()
            now = time.perf_counter()
            self.times[name].append(now - t)
            t = now


class _StagedStep:
    """The timed private step over the pieces ``pieces()`` yields (the MLP's chunks of runs, the
    CNN's runs), whose clipped sums ``join`` concatenates."""

    def __init__(self, model, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor, *,
                 clip_norm: float, lr: float, sigma: float, gen: torch.Generator):
        self.model, self.theta, self.X, self.y = model, theta, X, y
        self.clip_norm, self.lr, self.sigma, self.gen = float(clip_norm), float(lr), float(sigma), gen
        self.N = X.shape[0]
        self.timer = _Timer()

    @property
    def times(self) -> dict[str, list[float]]:
        return self.timer.times

    def _noise(self, g: torch.Tensor) -> None:
        noise = torch.randn(g.shape, generator=self.gen, dtype=self.theta.dtype)
        g.add_(noise, alpha=self.sigma * self.clip_norm)

    def _staged_step(self, pieces: Callable[[], Any], join: Callable[[list], torch.Tensor]) -> None:
        box: dict[str, Any] = {"fw": [], "c": [], "g": None}
        self.timer.run([
            ("forward", lambda: box["fw"].extend(self.forward(th) for th in pieces())),
            ("norms", lambda: box["c"].extend(self.norms(fw) for fw in box["fw"])),
            ("clipped_sum", lambda: box.__setitem__("g", join(
                [self.clipped_sum(fw, c) for fw, c in zip(box["fw"], box["c"])]))),
            ("noise", lambda: self._noise(box["g"])),
            ("update", lambda: self.theta.sub_(box["g"], alpha=self.lr / self.N)),
        ])


class MLPStages(_StagedStep):
    """The stages of our private step on a one-hidden-layer binary ReLU MLP with biases (the paper's
    network): ``theta (K, P)`` updated in place, in the engine's chunks of runs."""

    def __init__(self, model: DenseModel, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor, *,
                 clip_norm: float, lr: float, sigma: float, gen: torch.Generator):
        if not (isinstance(model, DenseModel) and model.fast_path and model.n_layers == 2 and model.n_out == 1
                and model.bias and model.activation == "relu"):
            raise ValueError(f"MLPStages needs a one-hidden-layer binary ReLU MLP with biases, got {model!r}")
        super().__init__(model, theta, X, y, clip_norm=clip_norm, lr=lr, sigma=sigma, gen=gen)

    def _chunks(self) -> list[slice]:
        K = self.theta.shape[0]
        step = self.model._runs_per_chunk(self.theta, self.N)
        return [slice(i, i + step) for i in range(0, K, step)]

    def forward(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """The chunk's forward and backward to the hidden layer (:meth:`DenseModel._relu_forward`)."""
        with torch.no_grad():
            return self.model._relu_forward(theta, self.X, self.y)

    def norms(self, fw: dict[str, torch.Tensor]) -> torch.Tensor:
        """Clip factors ``(K, N)`` from the per-sample norms (:meth:`DenseModel._relu_norms`)."""
        with torch.no_grad():
            n64, slack = self.model._relu_norms(fw)
            return clip_factors(n64, self.clip_norm, dtype=self.theta.dtype, absolute=slack)

    def clipped_sum(self, fw: dict[str, torch.Tensor], c: torch.Tensor | None) -> torch.Tensor:
        """``sum_n c_n g_n`` ``(K, P)``; ``c=None``: the plain sum (no clip weights)."""
        with torch.no_grad():
            return self.model._relu_sum(fw, c)

    def private_step(self) -> None:
        """One private step, each stage timed (the chunks' times add up per stage)."""
        chunks = self._chunks()
        self._staged_step(lambda: (self.theta[s] for s in chunks), torch.cat)

    def mean_gradient(self, theta: torch.Tensor) -> torch.Tensor:
        """The plain mean gradient ``(1/N) sum_n g_n`` ``(K, P)`` by the engine's path, no clipping."""
        return torch.cat([self.clipped_sum(self.forward(theta[s]), None) for s in self._chunks()]) / self.N

    def nonprivate_step(self) -> None:
        """The engine's step with clipping and noise off: forward, plain sum, update."""
        g = torch.cat([self.clipped_sum(self.forward(self.theta[s]), None) for s in self._chunks()])
        self.theta.sub_(g, alpha=self.lr / self.N)


class CNNStages(_StagedStep):
    """The stages of our private step on a :class:`GhostConvModel`, one run at a time as the engine;
    ``theta (K, P)`` updated in place."""

    def __init__(self, model: GhostConvModel, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor, *,
                 clip_norm: float, lr: float, sigma: float, gen: torch.Generator):
        if not isinstance(model, GhostConvModel):
            raise ValueError(f"CNNStages needs a GhostConvModel, got {model!r}")
        super().__init__(model, theta, X, y, clip_norm=clip_norm, lr=lr, sigma=sigma, gen=gen)

    def _losses(self, th: torch.Tensor, outs: list | None):
        """The engine's forward (channels-last pools on CPU); the weighted layers' inputs and
        outputs appended to ``outs`` when given. Returns ``(per-sample losses, inputs, mods)``."""
        m = self.model
        h, inputs, weighted = m.layers_forward(m.unflatten(th), self.X.reshape(self.N, *m.in_shape), outs)
        return m.per_sample_loss_from_output(h, self.y), inputs, weighted

    def forward(self, th: torch.Tensor) -> dict[str, Any]:
        """One run's layer inputs and output gradients (forward and one backward)."""
        outs: list[torch.Tensor] = []
        with torch.enable_grad():
            losses, inputs, weighted = self._losses(th, outs)
            grads = torch.autograd.grad(losses.sum(), outs)
        return {"inputs": inputs, "grads": grads, "mods": weighted}

    def norms(self, fw: dict[str, Any]) -> torch.Tensor:
        """Per-layer squared norms (ghost or formed, as the engine picks), the clip factors."""
        with torch.no_grad():
            fw["per_layer"] = per_layer = [self.model._layer_norms(m, a, g)
                                           for m, a, g in zip(fw["mods"], fw["inputs"], fw["grads"])]
            norms = sum(n for n, _ in per_layer).sqrt()
            return clip_factors(norms, self.clip_norm, dtype=fw["inputs"][0].dtype)

    def clipped_sum(self, fw: dict[str, Any], c: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            pieces = []
            for m, (_, carry) in zip(fw["mods"], fw["per_layer"]):
                pieces += self.model._layer_clipped_sum(m, carry, c)
            return torch.cat(pieces)

    def private_step(self) -> None:
        """One private step, each stage timed (runs one after another, as the engine)."""
        K = self.theta.shape[0]
        self._staged_step(lambda: (self.theta[k] for k in range(K)), torch.stack)

    def _grad_sum(self, theta: torch.Tensor) -> torch.Tensor:
        rows = []
        for k in range(theta.shape[0]):
            th = theta[k].detach().requires_grad_(True)
            with torch.enable_grad():
                losses, _, _ = self._losses(th, None)
                rows.append(torch.autograd.grad(losses.sum(), th)[0])
        return torch.stack(rows)

    def mean_gradient(self, theta: torch.Tensor) -> torch.Tensor:
        """The plain mean gradient ``(K, P)`` through the engine's forward, by autograd."""
        return self._grad_sum(theta) / self.N

    def nonprivate_step(self) -> None:
        """The engine's step with clipping and noise off: forward, plain gradient sum, update."""
        self.theta.sub_(self._grad_sum(self.theta), alpha=self.lr / self.N)


def profile_summary(times: dict[str, list[float]], *, rounds: int, steps: int, whole_s: list[float],
                    measured_step_s: float, workload: str) -> dict[str, Any]:
    """A workload's profile from the stage ``times`` (the first call, the warm-up, dropped; the rest in
    ``rounds`` rounds of ``steps`` calls): per stage the median over rounds of the round's mean seconds
    per step, their total, shares and a sentence naming the largest stage. Checks: the stages' sum per
    round over ``whole_s`` (the staged step timed whole) and the total over ``measured_step_s`` (the
    engine's step timed in the same rounds).

    >>> t = {s: [9.0] + [1.0] * 4 for s in STAGES}; t["forward"] = [9.0, 3.0, 3.0, 5.0, 5.0]
    >>> p = profile_summary(t, rounds=2, steps=2, whole_s=[7.0, 9.0], measured_step_s=8.0, workload="w")
    >>> p["stage_s"]["forward"], p["total_s"], p["share"]["forward"], p["total_over_measured"], p["largest"]
    (4.0, 8.0, 0.5, 1.0, 'forward')
    >>> p["stages_over_whole_per_round"]
    [1.0, 1.0]
    """
    per_round = {}
    for s in STAGES:
        ts = times[s][1:]
        if len(ts) != rounds * steps:
            raise ValueError(f"stage {s}: expected {rounds} x {steps} timed calls after the warm-up, got {len(ts)}")
        per_round[s] = [sum(ts[r * steps:(r + 1) * steps]) / steps for r in range(rounds)]
    if len(whole_s) != rounds:
        raise ValueError(f"expected {rounds} whole-step times, got {len(whole_s)}")
    summed = [sum(per_round[s][r] for s in STAGES) for r in range(rounds)]
    stage_s = {s: statistics.median(v) for s, v in per_round.items()}
    total = sum(stage_s.values())
    share = {s: v / total for s, v in stage_s.items()}
    largest = max(share, key=share.get)
    return {
        "stages": list(STAGES), "stage_s": stage_s, "stage_s_per_round": per_round, "total_s": total,
        "share": share, "stages_over_whole_per_round": [a / float(b) for a, b in zip(summed, whole_s)],
        "whole_s_per_round": [float(x) for x in whole_s],
        "measured_step_s": measured_step_s, "total_over_measured": total / measured_step_s,
        "largest": largest,
        "sentence": f"{workload}: the largest stage is {largest.replace('_', ' ')} ({share[largest]:.0%} of the "
                    f"step): {STAGE_WHY[largest]}.",
        "statistic": "per stage, the median over the rounds of the round's mean seconds per step; total = their sum",
    }
