"""Dense models with ghost clipping: :class:`DenseModel`, linear and logistic regression and the MLPs of
both papers (Hong et al. 2022's one-hidden-layer network; Wu et al.'s dense baselines).

A dense layer's per-sample gradient is the outer product ``delta_n a_n^T`` of its backprop and its
input, so ``||grad_n||^2 = ||delta_n||^2 (||a_n||^2 + 1)``: the norms come from activations and
backprops, and the clipped sum is one weighted matmul per layer (Goodfellow 2015, arXiv 1510.01799;
Li et al. 2022, arXiv 2110.05679 Sec. 4). Backprops are written out analytically; the paper's
network (one ReLU hidden layer, one output) has a specialised path
(:meth:`DenseModel._binary_relu_mlp_chunk`).
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from dpcompanion.training.model_base import (ClipResult, Model, binary_output_backprop_, binary_output_loss,
                                             clip_factors, exact_float32_matmul, finite_clip_sum, norms64,
                                             product_norms64, sqnorms, sqnorms_upper, underflow_unit)

__all__ = ["DenseModel"]

LOSSES = ("squared", "logistic")
ACTIVATIONS = ("relu", "tanh", "sigmoid")


def _one_hot(y: torch.Tensor, n_classes: int, dtype) -> torch.Tensor:
    # a comparison rather than F.one_hot, which torch.func.vmap cannot batch
    return (y.unsqueeze(-1) == torch.arange(n_classes, device=y.device)).to(dtype)


def _binary_targets(y: torch.Tensor, dtype) -> torch.Tensor:
    return (2 * y - 1).to(dtype)


class DenseModel(Model):
    """Fully connected network ``in_dim -> hidden... -> out`` with ghost clipping.

    ``hidden=()`` gives linear (``loss="squared"``) or logistic regression; ``hidden=(100,)`` /
    ``(1000,)`` the 2-layer MLPs of Hong et al. 2022 (ICLR submission App. D; FAccT Sec. 5).
    ``init="zeros"`` (default for the convex models) or ``"uniform"``, PyTorch's ``nn.Linear`` rule
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` (default with hidden layers).
    """

    def __init__(
        self,
        *,
        in_dim: int,
        n_classes: int,
        hidden: Sequence[int] = (),
        loss: str = "logistic",
        activation: str = "relu",
        bias: bool = True,
        init: str | None = None,
        name: str | None = None,
    ):
        if in_dim < 1:
            raise ValueError(f"in_dim must be >= 1, got {in_dim}")
        if n_classes < 2:
            raise ValueError(f"n_classes must be >= 2, got {n_classes}")
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}, got {loss!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
        hidden = tuple(int(h) for h in hidden)
        if any(h < 1 for h in hidden):
            raise ValueError(f"hidden sizes must be >= 1, got {hidden}")
        init = init or ("uniform" if hidden else "zeros")
        if init not in ("zeros", "uniform"):
            raise ValueError(f"init must be 'zeros' or 'uniform', got {init!r}")
        self.in_dim, self.n_classes, self.hidden = int(in_dim), int(n_classes), hidden
        self.loss_kind, self.activation, self.bias, self.init_kind = loss, activation, bias, init
        self.n_out = 1 if n_classes == 2 else n_classes
        self.in_shape = (self.in_dim,)
        self.sizes = (self.in_dim, *hidden, self.n_out)
        self.param_shapes = {}
        for i in range(len(self.sizes) - 1):
            self.param_shapes[f"W{i + 1}"] = (self.sizes[i + 1], self.sizes[i])
            if bias:
                self.param_shapes[f"b{i + 1}"] = (self.sizes[i + 1],)
        self.name = name or ("mlp" if hidden else ("linear" if loss == "squared" else "logistic"))

    def __repr__(self) -> str:
        return (
            f"DenseModel(in_dim={self.in_dim}, n_classes={self.n_classes}, hidden={self.hidden}, "
            f"loss={self.loss_kind!r}, activation={self.activation!r}, bias={self.bias})"
        )

    @property
    def n_layers(self) -> int:
        return len(self.sizes) - 1

    def init(self, *, generators: Sequence[torch.Generator], dtype=torch.float32, device="cpu") -> torch.Tensor:
        """As :meth:`Model.init`; ``init="zeros"`` draws nothing (the generators are never
        touched, so a lazy sequence of them is never built)."""
        if self.init_kind == "zeros":
            return torch.zeros((len(generators), self.n_params), dtype=dtype, device=device)
        return super().init(generators=generators, dtype=dtype, device=device)

    def init_single(self, generator: torch.Generator) -> torch.Tensor:
        if self.init_kind == "zeros":
            return torch.zeros(self.n_params, dtype=torch.float64)
        pieces = []
        for i in range(self.n_layers):
            bound = 1.0 / math.sqrt(self.sizes[i])
            w = (torch.rand(self.sizes[i + 1] * self.sizes[i], generator=generator, dtype=torch.float64) * 2 - 1) * bound
            pieces.append(w)
            if self.bias:
                pieces.append((torch.rand(self.sizes[i + 1], generator=generator, dtype=torch.float64) * 2 - 1) * bound)
        return torch.cat(pieces)

    def _act(self, z: torch.Tensor) -> torch.Tensor:
        if self.activation == "relu":
            return torch.relu(z)
        if self.activation == "tanh":
            return torch.tanh(z)
        return torch.sigmoid(z)

    def _act_grad(self, z: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        if self.activation == "relu":
            return (z > 0).to(z.dtype)
        if self.activation == "tanh":
            return 1 - a * a
        return a * (1 - a)

    def _layers(self, theta):
        p = self.unflatten(theta)
        return [(p[f"W{i + 1}"], p.get(f"b{i + 1}")) for i in range(self.n_layers)]

    def _forward_all(self, theta: torch.Tensor, X: torch.Tensor):
        """Inputs and pre-activations of every layer: lists ``a`` (inputs) and ``z``."""
        acts, pre = [], []
        a = X
        layers = self._layers(theta)
        for i, (W, b) in enumerate(layers):
            acts.append(a)
            z = torch.matmul(a, W.transpose(-1, -2))
            if b is not None:
                z = z + b.unsqueeze(-2)
            pre.append(z)
            if i < len(layers) - 1:
                a = self._act(z)
        return acts, pre, layers

    def _runs_per_chunk(self, theta: torch.Tensor, N: int) -> int:
        limit = self.chunk_elements if theta.device.type == "cpu" else self.chunk_elements_cuda
        return max(1, limit // max(1, N * max(self.sizes)))

    def forward(self, theta: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        """Outputs ``(K, N, n_out)``, computed in chunks of runs (hidden activations of
        all K runs at once would be ``K x N x H`` floats)."""
        step = self._runs_per_chunk(theta, X.shape[0])
        if theta.shape[0] <= step:
            return self._forward_all(theta, X)[1][-1]
        return torch.cat([self._forward_all(theta[i : i + step], X)[1][-1] for i in range(0, theta.shape[0], step)])

    def per_sample_loss_from_output(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.n_out == 1:
            return binary_output_loss(self.loss_kind, -_binary_targets(y, z.dtype) * z[..., 0])
        if self.loss_kind == "squared":
            onehot = _one_hot(y, self.n_classes, z.dtype)
            return 0.5 * ((z - onehot) ** 2).sum(dim=-1)
        return torch.logsumexp(z, dim=-1) - z.gather(-1, y.expand(*z.shape[:-1]).unsqueeze(-1))[..., 0]

    def _output_backprop(self, z: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-sample losses and ``d loss_n / d z_n`` (both per run), analytically."""
        if self.n_out == 1:
            ns = -_binary_targets(y, z.dtype)
            r = ns * z[..., 0]  # negative margin -s z
            losses = binary_output_loss(self.loss_kind, r)
            return losses, (ns * binary_output_backprop_(self.loss_kind, r)).unsqueeze(-1)
        onehot = _one_hot(y, self.n_classes, z.dtype)
        if self.loss_kind == "squared":
            r = z - onehot
            return 0.5 * (r * r).sum(dim=-1), r
        lse = torch.logsumexp(z, dim=-1, keepdim=True)
        losses = lse[..., 0] - (z * onehot).sum(dim=-1)
        return losses, torch.exp(z - lse) - onehot

    #: runs per chunk are chosen so that one (runs, N, width) tensor stays below this many elements
    #: (8 MB of float32): the CPU step is memory-bound, and a cache-sized chunk runs each run as fast as alone
    chunk_elements: int = 1 << 21
    #: the same limit on a GPU, where bigger batches pay off (256 MB of float32)
    chunk_elements_cuda: int = 1 << 26
    #: use the specialised path for one-hidden-layer binary ReLU MLPs
    fast_path: bool = True

    def clipped_grad_sum(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        """Ghost clipping over chunks of runs (see :meth:`_clipped_grad_sum_chunk`); each sample's
        clipped gradient, as summed, has norm <= C for any finite values (the factor of
        :func:`~dpcompanion.training.model_base.clip_scale` with each path's underflow slack;
        a sample whose activations overflow is dropped,
        :func:`~dpcompanion.training.model_base.finite_clip_sum`)."""
        return finite_clip_sum(self._clipped_grad_sum_chunks, theta, X, y, clip_norm=clip_norm, weights=weights)

    def _clipped_grad_sum_chunks(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        K, N = theta.shape[0], X.shape[0]
        step = self._runs_per_chunk(theta, N)
        if step >= K:
            return self._clipped_grad_sum_chunk(theta, X, y, clip_norm=clip_norm, weights=weights)
        parts = [
            self._clipped_grad_sum_chunk(theta[i : i + step], X, y, clip_norm=clip_norm,
                                         weights=None if weights is None else weights[i : i + step])
            for i in range(0, K, step)
        ]
        return ClipResult(*(torch.cat([getattr(r, f) for r in parts]) for f in ("grad_sum", "norms", "losses")))

    def _binary_relu_mlp_chunk(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        """The paper's network (one ReLU hidden layer, one output, biases), book-keeping style, in
        three stages: :meth:`_relu_forward` (the hidden activations ``a (K, N, H)`` and the hidden
        backprop over ``dz``, ``D_n = W2 * 1[a_n > 0]``), :meth:`_relu_norms`

        ``||g_n||^2 = dz_n^2 (||a_n||^2 + 1 + ||D_n||^2 ||[x_n, 1]||^2)``

        from what the backward holds anyway, and :meth:`_relu_sum`, one product per layer, ``(c dz
        [X, 1])^T D`` and ``(c dz)^T a``: the products a non-private step makes with ``c = 1``."""
        with torch.no_grad():
            fw = self._relu_forward(theta, X, y)
            n64, slack = self._relu_norms(fw)
            c = clip_factors(n64, clip_norm, dtype=theta.dtype, absolute=slack)
            if weights is not None:
                c = c * weights
            return ClipResult(self._relu_sum(fw, c), n64.to(theta.dtype), fw["losses"])

    def _relu_forward(self, theta, X, y) -> dict:
        """Forward and backward to the hidden layer of :meth:`_binary_relu_mlp_chunk`: ``a (K, N, H)``
        (the GEMM ``[X, 1] [W1, b1]^T``, per run), the
        output gradients ``dz (K, N, 1)``, the per-sample losses, ``D (K, N, H)``
        (``threshold_backward``: the mask selects ``W2_h``, exactly) and ``||[x_n, 1]||^2`` in
        float64 (a product with a float32 estimate must not double its error)."""
        K, N = theta.shape[0], X.shape[0]
        H = self.sizes[1]
        p = self.unflatten(theta)
        W1, b1, W2, b2 = p["W1"], p["b1"], p["W2"], p["b2"]  # (K,H,d) (K,H) (K,1,H) (K,1)
        Xa = torch.cat([X, torch.ones(N, 1, dtype=X.dtype, device=X.device)], dim=1)  # (N, d+1)
        xn = norms64(Xa).square()  # float64 from the values: it multiplies a float32 estimate (sqnorms)
        W1a = torch.cat([W1, b1.unsqueeze(-1)], dim=-1)  # (K, H, d+1)
        # one run: one GEMM; several: a batched one with contiguous outputs (faster later products)
        a = (torch.mm(Xa, W1a[0].t()).unsqueeze(0) if K == 1 else torch.matmul(Xa, W1a.transpose(-1, -2))).relu_()
        z = torch.baddbmm(b2.unsqueeze(-2), a, W2.transpose(-1, -2))  # (K, N, 1)
        losses, dz = self._output_backprop(z, y)  # (K, N), (K, N, 1)
        D = torch.ops.aten.threshold_backward(W2.expand(K, N, H), a, 0)
        return {"a": a, "D": D, "dz": dz, "losses": losses, "Xa": Xa, "xn": xn, "W2": W2}

    def _relu_norms(self, fw: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-sample gradient norms ``(K, N)`` (float64; from float32 partials of the training dtype's
        values, :func:`~dpcompanion.training.model_base.sqnorms`, at most one such factor in each
        product, or, for float64 values, products of norms before squaring,
        :meth:`_binary_relu_norms64`) and the underflow slack of
        :func:`~dpcompanion.training.model_base.clip_scale`."""
        a, D, dz, Xa, xn = fw["a"], fw["D"], fw["dz"][..., 0], fw["Xa"], fw["xn"]
        d, H = self.sizes[0], self.sizes[1]
        if a.dtype == torch.float64:
            n64, at, xt, wn = self._binary_relu_norms64(a, Xa, fw["W2"].transpose(-1, -2), torch.sign(a), dz)
        else:
            # one float32 reduction each, bounded above (sqnorms_upper): ||[a, 1]||^2, and
            # ||D_n||^2 = sum_h 1[a_nh > 0] W2_h^2 = D_n . W2 (D selects W2 exactly), a GEMV
            an = sqnorms_upper(a).add_(1.0)
            dW = torch.bmm(D, fw["W2"].transpose(-1, -2))[..., 0] if exact_float32_matmul(D.device) else None
            dn = sqnorms_upper(D, sums=dW)
            n64 = (dz.double().square() * (an + dn * xn)).sqrt_()
            at, xt, wn = an.sqrt(), xn.sqrt(), dn.sqrt()  # ||[a, 1]||, ||[x, 1]||, ||D_n||
        # c dz, then (c dz) a_h and the bias; (c dz) x_j, then times W2_h: each product that
        # underflows errs by < eta / 2, times what follows it
        eta = underflow_unit(a.dtype)
        return n64, eta * (at + math.sqrt(H) + (xt + math.sqrt(d + 1)) * wn + math.sqrt(H * (d + 1)))

    def _relu_sum(self, fw: dict, c: torch.Tensor | None) -> torch.Tensor:
        """``sum_n c_n g_n`` ``(K, P)`` in the parameters' order; ``c=None``: the plain sum."""
        a, D, dz, Xa = fw["a"], fw["D"], fw["dz"], fw["Xa"]
        K, d = a.shape[0], self.sizes[0]
        cdz = dz if c is None else c.unsqueeze(-1) * dz  # (K, N, 1)
        gW2 = torch.bmm(cdz.transpose(-1, -2), a)  # (K, 1, H)
        gW1aT = torch.bmm((cdz * Xa).transpose(-1, -2), D)  # (K, d+1, H)
        return torch.cat([gW1aT[:, :d].transpose(-1, -2).reshape(K, -1), gW1aT[:, d], gW2.reshape(K, -1),
                          cdz.sum(dim=1)], dim=-1)

    @staticmethod
    def _binary_relu_norms64(a, Xa, w2, mask, dz):
        """The per-sample norms of :meth:`_binary_relu_mlp_chunk` for float64 values, where the
        squares there can under- or overflow (float32 values cannot): ``||g_n|| = |dz| ||(||[a,
        1]||, ||m W2|| ||[x, 1]||)||`` from norms, ``||m W2||`` with ``W2`` divided by its largest
        magnitude per run. An entry ``W2_h / max |W2|`` whose square underflows (below 2^-537)
        loses at most 2^-1075 of that sum; ``|dz| ||[x, 1]|| max|W2| sqrt(H) 2^-537`` added to the
        first layer's part covers it (nothing for ordinary weights). Also returns ``||[a, 1]||``,
        ``||[x, 1]||`` and ``||m W2||`` (for the underflow slack)."""
        s = w2.abs().amax(dim=1, keepdim=True)  # (K, 1, 1)
        s = torch.where(s > 0, s, torch.ones_like(s))
        wn = torch.bmm(mask, (w2 / s).square()).sqrt_()[..., 0] * s[..., 0]  # (K, N): ||m_n W2||
        at = norms64(a)
        at = torch.hypot(at, torch.ones_like(at))
        xt = norms64(Xa)
        adz = dz.abs()
        lost = adz * xt * s[..., 0] * (math.sqrt(a.shape[-1]) * 2.0**-537)
        n64 = torch.hypot(adz * at, adz * xt * wn + lost)
        return n64, at, xt, wn

    def _clipped_grad_sum_chunk(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        if self.fast_path and self.n_layers == 2 and self.n_out == 1 and self.bias and self.activation == "relu":
            return self._binary_relu_mlp_chunk(theta, X, y, clip_norm=clip_norm, weights=weights)
        return self._generic_chunk(theta, X, y, clip_norm=clip_norm, weights=weights)

    def _generic_chunk(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        """Ghost clipping: norms from activations and backprops, then one weighted matmul per layer.
        Written for memory traffic (fused bias, in-place activation, the clip factors applied to the
        narrow side of each product)."""
        with torch.no_grad():
            K, N = theta.shape[0], X.shape[0]
            layers = self._layers(theta)
            L = len(layers)
            acts, pre = [], []
            a = X.expand(K, *X.shape) if X.dim() == 2 else X
            for i, (W, b) in enumerate(layers):
                acts.append(a)
                Wt = W.transpose(-1, -2)
                z = torch.baddbmm(b.unsqueeze(-2), a, Wt) if b is not None else torch.bmm(a, Wt)
                if i < L - 1:
                    pre.append(z)
                    if self.activation == "relu":
                        a = z.relu_()  # z is not needed again: ReLU's backward reads a
                    else:
                        a = self._act(z)
                else:
                    zout = z
            losses, delta = self._output_backprop(zout, y)
            deltas = [delta]
            for i in range(L - 1, 0, -1):
                da = torch.bmm(delta, layers[i][0])
                a_i = acts[i]
                if self.activation == "relu":
                    delta = torch.ops.aten.threshold_backward(da, a_i, 0)
                else:
                    delta = da.mul_(self._act_grad(pre[i - 1], a_i))
                deltas.append(delta)
            deltas.reverse()
            norms_sq = torch.zeros((K, N), dtype=torch.float64, device=theta.device)  # float64: clip_scale
            # underflow slack (clip_scale): c a_j or c d_i (one side scaled), then times the
            # other side, and c d_i for the bias; each product that underflows errs by < eta / 2
            eta, slack = underflow_unit(theta.dtype), 0.0
            for a_l, d_l in zip(acts, deltas):
                wa, wd = math.sqrt(a_l.shape[-1]), math.sqrt(d_l.shape[-1])
                if theta.dtype == torch.float64:  # ||d|| ||[a, 1]|| before squaring (product_norms64)
                    na, nd = norms64(a_l), norms64(d_l)
                    slack = slack + eta * (wa * nd + wd * na + wa * wd + wd)
                    norms_sq.add_(product_norms64(nd, torch.hypot(na, torch.ones_like(na)) if self.bias else na))
                    continue
                # the wider factor from float32 partials (sqnorms), the other in float64: the error
                # bound of one float32 estimate fits the clip slack, that of a product of two would not
                if a_l.shape[-1] >= d_l.shape[-1]:
                    an, dn = sqnorms(a_l), norms64(d_l).square_()
                else:
                    an, dn = norms64(a_l).square_(), sqnorms(d_l)
                slack = slack + eta * (wa * dn.sqrt() + wd * an.sqrt() + wa * wd + wd)
                if self.bias:
                    an.add_(1.0)
                norms_sq.addcmul_(dn, an)
            n64 = norms_sq.sqrt_()
            norms = n64.to(theta.dtype)
            c = clip_factors(n64, clip_norm, dtype=theta.dtype, absolute=slack)
            if weights is not None:
                c = c * weights
            cu = c.unsqueeze(-1)
            pieces = []
            for a_l, d_l in zip(acts, deltas):
                # grad_W = sum_n c_n d_n a_n^T: scale whichever factor is narrower
                if a_l.shape[-1] <= d_l.shape[-1]:
                    gW = torch.bmm(d_l.transpose(-1, -2), a_l * cu)
                else:
                    gW = torch.bmm((d_l * cu).transpose(-1, -2), a_l)
                pieces.append(gW.reshape(K, -1))
                if self.bias:
                    pieces.append(torch.bmm(c.unsqueeze(-2), d_l).squeeze(-2))
            return ClipResult(torch.cat(pieces, dim=-1), norms, losses)

    def to_module(self, theta_single: torch.Tensor) -> torch.nn.Module:
        """``nn.Sequential`` of ``nn.Linear`` (+ activation) holding one run's parameters
        (outputs only; the loss is :meth:`per_sample_loss_from_output`)."""
        act = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "sigmoid": torch.nn.Sigmoid}[self.activation]
        p = self.unflatten(theta_single.detach())
        layers: list[torch.nn.Module] = []
        for i in range(self.n_layers):
            lin = torch.nn.Linear(self.sizes[i], self.sizes[i + 1], bias=self.bias)
            lin = lin.to(dtype=theta_single.dtype, device=theta_single.device)
            with torch.no_grad():
                lin.weight.copy_(p[f"W{i + 1}"])
                if self.bias:
                    lin.bias.copy_(p[f"b{i + 1}"])
            layers.append(lin)
            if i < self.n_layers - 1:
                layers.append(act())
        return torch.nn.Sequential(*layers)
