"""Clip-and-sum oracles: the first piece of the private step, for K runs at once.

An oracle returns, for ``theta (K, P)`` and optional Poisson weights ``(K, N)``, the clipped sum
``sum_n w_kn min(1, C/||g_kn||) g_kn`` and only the statistics asked for.

* :class:`GeneralOracle`: any model through its :meth:`~dpcompanion.training.model_base.Model.clipped_grad_sum`;
  PSGD gathers the rows some run sampled.
* :class:`LinearOracle`: the **margin fast path** for a binary linear or logistic model. With the
  negative margin ``r = -s theta.x`` (``s = 2y - 1``, ``x`` with its bias feature) a sample's gradient
  is ``a(r) (-s x)``, of norm exactly ``|a| ||s x||``, so clipping at C is clamping ``a`` to
  ``C / ||s x||`` (the row's own norm, so the bound holds for any label). A step is two matmuls and
  three elementwise passes, nothing per-sample formed.

The fast path pads runs to a multiple of 8 and samples to 16 (zero rows, contributing exactly 0):
a run's numbers then do not depend on how many runs share the call (the CPU kernels treat ragged
tails differently), so a chunked sweep equals the unchunked one bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from dpcompanion.training.dense_models import DenseModel
from dpcompanion.training.model_base import (
    Model,
    binary_output_backprop_,
    binary_output_loss,
    clip_scale,
    norms64,
    predict_from_output,
    underflow_unit,
)

__all__ = ["StepGrad", "GeneralOracle", "LinearOracle", "make_oracle", "fast_path_applies"]


@dataclass
class StepGrad:
    """``grad_sum (K, P)``; ``clip_fraction (K,)`` and ``loss (K,)`` when asked for, else None
    (both over the step's batch: all N samples, or the Poisson-sampled ones)."""

    grad_sum: torch.Tensor
    clip_fraction: torch.Tensor | None = None
    loss: torch.Tensor | None = None


def fast_path_applies(model: Model) -> bool:
    """Whether :class:`LinearOracle` handles ``model``: a binary DenseModel without hidden layers."""
    return isinstance(model, DenseModel) and model.hidden == () and model.n_out == 1


def make_oracle(model: Model, X: torch.Tensor, y: torch.Tensor, *, clip_norm: float, fast: bool | None = None):
    """The fast oracle where it applies (``fast=None`` or True), else the general one.
    ``fast=True`` for a model it does not apply to is an error."""
    if fast is not False and fast_path_applies(model):
        return LinearOracle(model, X, y, clip_norm=clip_norm)
    if fast:
        raise ValueError(f"fast=True needs a binary linear or logistic DenseModel, got {model!r}")
    return GeneralOracle(model, X, y, clip_norm=clip_norm)


class GeneralOracle:
    """Clip-and-sum through the model's own :meth:`clipped_grad_sum`."""

    fast = False

    def __init__(self, model: Model, X: torch.Tensor, y: torch.Tensor, *, clip_norm: float):
        self.model, self.X, self.y, self.clip_norm = model, X, y, float(clip_norm)
        self.N = X.shape[0]

    def bytes_per_run(self, itemsize: int) -> int:
        """Run-dependent memory of one step (per-sample norms and losses; per-sample
        gradients of a chunk of samples for torch.func models)."""
        extra = 2 * getattr(self.model, "sample_chunk", 0) * self.model.n_params
        return itemsize * (3 * self.N + extra)

    def clip_sum(self, theta, weights=None, *, need_loss=True, need_clip=True) -> StepGrad:
        C = self.clip_norm
        if weights is None:
            res = self.model.clipped_grad_sum(theta, self.X, self.y, clip_norm=C)
            exceed = (res.norms > C).to(theta.dtype)
            return StepGrad(res.grad_sum, exceed.mean(-1) if need_clip else None,
                            res.losses.mean(-1) if need_loss else None)
        # only the rows some run sampled (all runs share the gathered rows)
        rows = torch.nonzero(weights.any(dim=0)).squeeze(-1)
        w = weights.index_select(1, rows)
        res = self.model.clipped_grad_sum(theta, self.X.index_select(0, rows), self.y.index_select(0, rows),
                                          clip_norm=C, weights=w)
        cnt = w.sum(-1).clamp_min(1.0)
        exceed = (res.norms > C).to(theta.dtype)
        return StepGrad(res.grad_sum, (exceed * w).sum(-1) / cnt if need_clip else None,
                        (res.losses * w).sum(-1) / cnt if need_loss else None)

    def evaluate(self, theta) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model.evaluate(theta, self.X, self.y)


def _ceil(n: int, m: int) -> int:
    return -(-n // m) * m


class LinearOracle:
    """The margin fast path (module docstring). ``X (N, D)``, ``y (N,)`` in {0, 1}."""

    fast = True
    RUN_PAD = 8
    SAMPLE_PAD = 16

    def __init__(self, model: DenseModel, X: torch.Tensor, y: torch.Tensor, *, clip_norm: float):
        if not fast_path_applies(model):
            raise ValueError(f"the linear fast path needs a binary DenseModel without hidden layers, got {model!r}")
        self.model, self.kind, self.clip_norm = model, model.loss_kind, float(clip_norm)
        N = X.shape[0]
        self.N, self.Np = N, _ceil(N, self.SAMPLE_PAD)
        dt, dev = X.dtype, X.device
        feats = torch.cat([X, torch.ones(N, 1, dtype=dt, device=dev)], dim=1) if model.bias else X
        ns = -(2 * y - 1).to(dt)  # -s
        Xn = torch.zeros(self.Np, feats.shape[1], dtype=dt, device=dev)
        Xn[:N] = ns.unsqueeze(-1) * feats  # rows -s x (exact for s = +-1); padded rows 0
        # the cap comes from the rows' own norms, label included: a gradient a (-s x) has norm |a| |s| ||x||
        rows64 = norms64(Xn[:N])
        finite = torch.isfinite(Xn[:N]).all(dim=-1)
        if not bool(finite.all()):
            k = int(torch.nonzero(~finite)[0, 0])
            raise ValueError(f"the linear fast path needs finite rows (2y - 1) x, got a non-finite one at sample {k} "
                             f"(y = {y[k].item()!r})")
        self.Xn = Xn  # (Np, P): sum = clamp(a) @ Xn
        self.XnT = Xn.t().contiguous()  # (P, Np): r = theta @ XnT
        cap = torch.full((self.Np,), float("inf"), dtype=dt, device=dev)
        # |a| <= C / ||s x|| <=> ||g|| <= C, by the one clipping rule (float64 norms, a few ulps of slack;
        # the sum forms c x_j, one product per entry, and one that underflows errs by < eta / 2;
        # a row whose float64 norm overflows gets cap 0 and contributes nothing)
        cap[:N] = clip_scale(rows64, self.clip_norm, dtype=dt, absolute=underflow_unit(dt) * math.sqrt(Xn.shape[1]))
        self.cap, self.neg_cap = cap, -cap
        self.ns = torch.zeros(self.Np, dtype=dt, device=dev)
        self.ns[:N] = ns
        self.y = y
        self._buf: dict[tuple, torch.Tensor] = {}

    def bytes_per_run(self, itemsize: int) -> int:
        """Margins, clamped weights, a boolean and (PSGD) the padded weights per run."""
        return itemsize * 3 * self.Np + self.Np

    def _buffer(self, name: str, shape, dtype) -> torch.Tensor:
        key = (name, tuple(shape), dtype)
        b = self._buf.get(key)
        if b is None:
            if len(self._buf) > 16:
                self._buf.clear()
            b = self._buf[key] = torch.empty(shape, dtype=dtype, device=self.Xn.device)
        return b

    def _margins(self, theta: torch.Tensor) -> torch.Tensor:
        """Negative margins ``(Kp, Np)`` of the runs padded to a multiple of 8."""
        K, P = theta.shape
        Kp = _ceil(K, self.RUN_PAD)
        if Kp != K:
            th = self._buffer("theta", (Kp, P), theta.dtype)
            th[K:].zero_()
            th[:K].copy_(theta)
        else:
            th = theta
        r = self._buffer("r", (Kp, self.Np), theta.dtype)
        return torch.mm(th, self.XnT, out=r)

    def clip_sum(self, theta, weights=None, *, need_loss=True, need_clip=True) -> StepGrad:
        K = theta.shape[0]
        r = self._margins(theta)
        Kp = r.shape[0]
        w = None
        if weights is not None:
            w = self._buffer("w", (Kp, self.Np), theta.dtype)
            w.zero_()
            w[:K, : self.N].copy_(weights)
        loss = None
        if need_loss:
            lo = binary_output_loss(self.kind, r)
            if w is not None:
                lo.mul_(w)
            loss = lo[:K, : self.N].sum(-1)
        a = binary_output_backprop_(self.kind, r)  # in place: d loss / d z = -s a
        ex = None
        if self.kind == "logistic":  # a = sigmoid(r) > 0: only the upper bound can bind
            if need_clip:  # clipped: a ||x|| > C (the same as min(a, cap) != a)
                ex = torch.gt(a, self.cap, out=self._buffer("ex", (Kp, self.Np), torch.bool))
            c = torch.minimum(a, self.cap, out=a)  # clip in place: |a| ||x|| <= C
        else:
            c = self._buffer("c", (Kp, self.Np), theta.dtype)
            torch.clamp(a, min=self.neg_cap, max=self.cap, out=c)
            if need_clip:
                ex = torch.ne(c, a, out=self._buffer("ex", (Kp, self.Np), torch.bool))
        clip = None
        if need_clip:
            if w is not None:
                ex.logical_and_(w > 0)
            # summing bytes as int32 is ~6x faster than summing a bool tensor on CPU
            clip = ex[:K].view(torch.uint8).sum(-1, dtype=torch.int32).to(theta.dtype)
        if w is not None:
            c.mul_(w)
            cnt = weights.sum(-1).clamp_min(1.0)
        g = self._buffer("g", (Kp, self.Xn.shape[1]), theta.dtype)
        torch.mm(c, self.Xn, out=g)
        if not bool(torch.isfinite(g).all()):
            # a NaN margin (theta . x overflowing to inf - inf on a finite record) passes the clamp
            # as NaN and would make the run's sum NaN: that sample's weight becomes 0 (its
            # contribution 0, within C); checked on the small (K, P) sum, so free when all is finite
            torch.nan_to_num_(c, nan=0.0)
            torch.mm(c, self.Xn, out=g)
        if w is None:
            if loss is not None:
                loss = loss / self.N
            if clip is not None:
                clip = clip / self.N
        else:
            loss = None if loss is None else loss / cnt
            clip = None if clip is None else clip / cnt
        return StepGrad(g[:K].clone(), clip, loss)

    def evaluate(self, theta) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean loss, accuracy)`` per run at ``theta``, from the same padded margins."""
        K = theta.shape[0]
        r = self._margins(theta)[:K, : self.N]
        loss = binary_output_loss(self.kind, r).sum(-1) / self.N
        z = (r * self.ns[: self.N]).unsqueeze(-1)  # z = -s r (exact)
        acc = (predict_from_output(z) == self.y).to(theta.dtype).mean(-1)
        return loss, acc
