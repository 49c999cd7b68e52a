"""The models of the private trainers: the :class:`Model` contract, the dense models
(:class:`DenseModel`: linear and logistic regression, the MLPs of both papers), the models given as
``torch.nn`` modules (:class:`FuncModel`, :class:`GhostConvModel` and the two CNNs of the
experiments, :class:`MNISTCNN` and :class:`CIFARCNN`) and the registry by name (:data:`MODELS`,
:func:`make_model`). The float arithmetic of clipping they share is :mod:`dpcompanion.training.clipping`.

Models are *functional*: parameters live in one flat tensor ``theta (K, P)`` (K independent runs),
viewed by ``model.unflatten(theta)`` as named ``(K, *shape)`` tensors in ``param_shapes`` order (the
order the trainers' noise vectors follow). The private step needs :meth:`Model.clipped_grad_sum`
(per-sample norms -> factors ``min(1, C / ||g_n||)`` -> weighted sum, a :class:`ClipResult`).
:meth:`Model.per_sample_grads` is the torch.func reference the tests check the models against.

**Dense layers by ghost clipping.** A dense layer's per-sample gradient is the outer product
``delta_n a_n^T`` of its backprop and its input, so ``||grad_n||^2 = ||delta_n||^2 (||a_n||^2 + 1)``:
the norms come from activations and backprops, and the clipped sum is one weighted matmul per layer
(Goodfellow 2015, arXiv 1510.01799; Li et al. 2022, arXiv 2110.05679 Sec. 4). Backprops are written
out analytically; the paper's network (one ReLU hidden layer, one output) has a specialised path
(:meth:`DenseModel._binary_relu_mlp_chunk`). :class:`GhostConvModel` takes the norms layer by layer,
a convolution's through its unfolded form.

Labels are class indices. With two classes the dense models use one output ``z`` and ``s = 2y - 1``:
squared loss ``(z - s)^2 / 2`` or logistic ``log(1 + exp(-s z))`` (Hong et al. 2022, App. D); with
more, ``||z - onehot(y)||^2 / 2`` or softmax cross-entropy.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from dpcompanion.training.clipping import (clip_factors, exact_float32_matmul, norms64, product_norms64, sqnorms,
                                          sqnorms_upper, underflow_unit)

__all__ = ["ClipResult", "Model", "binary_output_loss", "binary_output_backprop_", "predict_from_output",
           "finite_clip_sum", "DenseModel", "FuncModel", "GhostConvModel", "MNISTCNN", "CIFARCNN", "MODELS",
           "make_model"]


@dataclass
class ClipResult:
    """Output of the clip-and-sum piece of the private step (all per run).

    ``grad_sum``: ``(K, P)``, sum over samples of ``w_n min(1, C/||g_n||) g_n``;
    ``norms``: ``(K, N)`` per-sample gradient norms before clipping;
    ``losses``: ``(K, N)`` per-sample losses at the current parameters.
    """

    grad_sum: torch.Tensor
    norms: torch.Tensor
    losses: torch.Tensor


def binary_output_loss(kind: str, r: torch.Tensor) -> torch.Tensor:
    """Per-sample loss of a binary model with one output ``z`` and label ``s = 2y - 1``,
    written in the *negative margin* ``r = -s z``: squared ``(z - s)^2 / 2 = (r + 1)^2 / 2``,
    logistic ``log(1 + exp(-s z)) = softplus(r)`` (Hong et al. 2022, the ICLR submission's App. D).

    >>> binary_output_loss("squared", torch.tensor([1.0])).item(), round(binary_output_loss("logistic", torch.tensor([0.0])).item(), 6)
    (2.0, 0.693147)
    """
    if kind == "squared":
        return 0.5 * (r + 1.0) ** 2
    return F.softplus(r)


def binary_output_backprop_(kind: str, r: torch.Tensor) -> torch.Tensor:
    """In place: overwrite the negative margins ``r = -s z`` with ``a`` such that ``d loss / d z = -s a``
    (squared: ``a = r + 1``; logistic: ``a = sigmoid(r)``): a linear model's per-sample gradient is
    then ``a (-s x)``, of norm ``|a| ||s x||``.

    >>> binary_output_backprop_("logistic", torch.tensor([0.0])).item()
    0.5
    """
    if kind == "squared":
        return r.add_(1.0)
    return r.sigmoid_()


def predict_from_output(z: torch.Tensor) -> torch.Tensor:
    """Class indices from outputs ``(..., n_out)``: ``z > 0`` for one output, else argmax."""
    if z.shape[-1] == 1:
        return (z[..., 0] > 0).long()
    return z.argmax(dim=-1)


def finite_clip_sum(raw, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor, *, clip_norm: float,
                    weights: torch.Tensor | None = None) -> ClipResult:
    """``raw(theta, X, y, clip_norm=, weights=)`` (a clip-and-sum), with every sample whose
    contribution is not finite dropped from its run's sum: a float32 record near 1e38 makes ``W x``
    inf, and a NaN sum would tell that the record was there. A run whose sum is not finite is
    summed again without its samples of non-finite norm, then by halves down to single samples,
    each part kept only if finite (a dropped sample contributes 0, never above C). Runs whose sums
    are finite are returned as computed.
    """
    res = raw(theta, X, y, clip_norm=clip_norm, weights=weights)
    if bool(torch.isfinite(res.grad_sum.sum())):  # a finite total has no inf or NaN entry: one reduction
        return res
    ok = torch.isfinite(res.grad_sum).all(dim=-1)
    if bool(ok.all()):
        return res
    grad_sum = res.grad_sum.clone()

    def part(k: int, rows: torch.Tensor, known_bad: bool = False) -> torch.Tensor | None:
        if rows.numel() == 0:
            return None
        if not known_bad:
            w = None if weights is None else weights[k:k + 1].index_select(1, rows)
            g = raw(theta[k:k + 1], X.index_select(0, rows), y.index_select(0, rows), clip_norm=clip_norm,
                    weights=w).grad_sum[0]
            if bool(torch.isfinite(g).all()):
                return g
        if rows.numel() == 1:
            return None
        h = rows.numel() // 2
        a, b = part(k, rows[:h]), part(k, rows[h:])
        return b if a is None else (a if b is None else a + b)

    for k in torch.nonzero(~ok).flatten().tolist():
        keep = torch.isfinite(res.norms[k])
        if weights is not None:
            keep &= weights[k] != 0
        rows = torch.nonzero(keep).flatten()
        g = part(k, rows, known_bad=rows.numel() == X.shape[0])  # all rows: the sum is known not finite
        grad_sum[k] = 0.0 if g is None else g
    return ClipResult(grad_sum, res.norms, res.losses)


class Model:
    """Common interface. Subclasses define ``param_shapes``,
    ``init_single``, ``forward`` and ``per_sample_loss_from_output``."""

    name: str = "model"
    n_classes: int
    in_shape: tuple[int, ...]
    param_shapes: dict[str, tuple[int, ...]]

    @property
    def n_params(self) -> int:
        return sum(math.prod(s) for s in self.param_shapes.values())

    def unflatten(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views of a flat ``(K, P)`` tensor as named ``(K, *shape)`` tensors."""
        out, i = {}, 0
        lead = theta.shape[:-1]
        for name, shape in self.param_shapes.items():
            n = math.prod(shape)
            out[name] = theta[..., i : i + n].reshape(*lead, *shape)
            i += n
        return out

    def flatten(self, params: dict[str, torch.Tensor]) -> torch.Tensor:
        """Inverse of :meth:`unflatten` (leading dims kept)."""
        pieces = []
        for name, shape in self.param_shapes.items():
            p = params[name]
            lead = p.shape[: p.dim() - len(shape)]
            pieces.append(p.reshape(*lead, -1))
        return torch.cat(pieces, dim=-1)

    def init_single(self, generator: torch.Generator) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError

    def init(self, *, generators: Sequence[torch.Generator], dtype=torch.float32, device="cpu") -> torch.Tensor:
        """``(K, P)`` initial parameters, run ``k`` drawn from ``generators[k]`` (CPU
        generators, so the initial point does not depend on the device)."""
        rows = [self.init_single(g).to(torch.float64) for g in generators]
        return torch.stack(rows).to(dtype=dtype, device=device)

    def forward(self, theta: torch.Tensor, X: torch.Tensor) -> torch.Tensor:  # pragma: no cover
        """Outputs ``(K, N, n_out)`` for parameters ``(K, P)`` and shared inputs ``X``."""
        raise NotImplementedError

    def per_sample_loss_from_output(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError

    def per_sample_loss(self, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``(K, N)`` per-sample losses."""
        return self.per_sample_loss_from_output(self.forward(theta, X), y)

    def loss(self, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``(K,)`` empirical risk ``(1/N) sum_n f(theta; x_n)``."""
        return self.per_sample_loss(theta, X, y).mean(dim=-1)

    def predict(self, theta: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        """``(K, N)`` predicted class indices."""
        return predict_from_output(self.forward(theta, X))

    def accuracy(self, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``(K,)`` fraction of correct predictions."""
        return (self.predict(theta, X) == y).to(theta.dtype).mean(dim=-1)

    def evaluate(self, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(loss, accuracy)``, each ``(K,)``, from one forward pass."""
        with torch.no_grad():
            z = self.forward(theta, X)
            loss = self.per_sample_loss_from_output(z, y).mean(dim=-1)
            pred = predict_from_output(z)
            return loss, (pred == y).to(theta.dtype).mean(dim=-1)

    def per_sample_grads(self, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``(K, N, P)`` per-sample gradients from ``torch.func`` (reference path)."""
        def single(th: torch.Tensor, x: torch.Tensor, yy: torch.Tensor) -> torch.Tensor:
            return self.per_sample_loss(th[None], x[None], yy[None])[0, 0]

        per_run = vmap(grad(single), in_dims=(None, 0, 0))
        return vmap(per_run, in_dims=(0, None, None))(theta, X, y)

    def clipped_grad_sum(
        self,
        theta: torch.Tensor,
        X: torch.Tensor,
        y: torch.Tensor,
        *,
        clip_norm: float,
        weights: torch.Tensor | None = None,
    ) -> ClipResult:
        """Sum over samples of ``weights[k, n] * clip(g_n)`` (generic torch.func path), each
        sample's clipped gradient of norm <= C (:func:`clip_scale`; samples whose values are not
        finite are dropped, :func:`finite_clip_sum`)."""
        return finite_clip_sum(functools.partial(Model._func_clip_sum, self), theta, X, y, clip_norm=clip_norm,
                               weights=weights)

    def _func_clip_sum(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        with torch.no_grad():
            losses = self.per_sample_loss(theta, X, y)
        G = self.per_sample_grads(theta, X, y)
        n64 = sqnorms(G).sqrt_()
        # the sum forms c_n G_np, one product per entry: an underflowed one errs by < eta / 2
        c = clip_factors(n64, clip_norm, dtype=G.dtype, absolute=underflow_unit(G.dtype) * math.sqrt(G.shape[-1]))
        if weights is not None:
            c = c * weights
        return ClipResult(torch.einsum("kn,knp->kp", c, G), n64.to(G.dtype), losses)

    def to_module(self, theta_single: torch.Tensor) -> torch.nn.Module:  # pragma: no cover
        raise NotImplementedError


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
        :func:`~dpcompanion.training.clipping.clip_scale` with each path's underflow slack;
        a sample whose activations overflow is dropped,
        :func:`~dpcompanion.training.models.finite_clip_sum`)."""
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
        values, :func:`~dpcompanion.training.clipping.sqnorms`, at most one such factor in each
        product, or, for float64 values, products of norms before squaring,
        :meth:`_binary_relu_norms64`) and the underflow slack of
        :func:`~dpcompanion.training.clipping.clip_scale`."""
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


class FuncModel(Model):
    """Any ``torch.nn.Module`` made functional (``torch.func.functional_call``); the
    per-sample gradients come from ``vmap(grad)`` (samples), vmapped over runs.
    Loss: softmax cross-entropy on the module's logits."""

    def __init__(self, module_factory: Callable[[], torch.nn.Module], *, in_shape, n_classes: int, name: str):
        self.module_factory = module_factory
        self.module = module_factory()
        self.in_shape = tuple(in_shape)
        self.n_classes = int(n_classes)
        self.n_out = self.n_classes
        self.name = name
        self.param_shapes = {k: tuple(v.shape) for k, v in self.module.named_parameters()}

    def __repr__(self) -> str:
        return f"FuncModel({self.name}, in_shape={self.in_shape}, n_classes={self.n_classes}, P={self.n_params})"

    def init_single(self, generator: torch.Generator) -> torch.Tensor:
        # PyTorch's default init for conv/linear, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), from the given generator
        pieces = []
        for name, shape in self.param_shapes.items():
            if len(shape) > 1:
                fan_in = math.prod(shape[1:])
            else:  # bias: fan_in of the layer's weight
                wname = name.rsplit(".", 1)[0] + ".weight"
                fan_in = math.prod(self.param_shapes[wname][1:])
            bound = 1.0 / math.sqrt(fan_in)
            pieces.append((torch.rand(math.prod(shape), generator=generator, dtype=torch.float64) * 2 - 1) * bound)
        return torch.cat(pieces)

    def _call_single(self, th: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        params = self.unflatten(th)
        return functional_call(self.module, params, (X.reshape(X.shape[0], *self.in_shape),))

    #: samples per chunk in :meth:`clipped_grad_sum` (bounds the (K, chunk, P) memory)
    sample_chunk: int = 256

    def forward(self, theta: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        return vmap(lambda th: self._call_single(th, X))(theta)

    def per_sample_loss_from_output(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(z, dim=-1) - z.gather(-1, y.expand(*z.shape[:-1]).unsqueeze(-1))[..., 0]

    def per_sample_grads(self, theta, X, y):
        def single(th, x, yy):
            z = self._call_single(th, x[None])
            return self.per_sample_loss_from_output(z, yy[None])[0]

        per_run = vmap(grad(single), in_dims=(None, 0, 0))
        return vmap(per_run, in_dims=(0, None, None))(theta, X, y)

    def clipped_grad_sum(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        """torch.func per-sample gradients, clipped and summed chunk by chunk of samples."""
        total, norms, losses = None, [], []
        for i in range(0, X.shape[0], self.sample_chunk):
            sl = slice(i, i + self.sample_chunk)
            r = Model.clipped_grad_sum(self, theta, X[sl], y[sl], clip_norm=clip_norm,
                                       weights=None if weights is None else weights[:, sl])
            total = r.grad_sum if total is None else total + r.grad_sum
            norms.append(r.norms)
            losses.append(r.losses)
        return ClipResult(total, torch.cat(norms, dim=1), torch.cat(losses, dim=1))

    def to_module(self, theta_single: torch.Tensor) -> torch.nn.Module:
        m = self.module_factory().to(dtype=theta_single.dtype, device=theta_single.device)
        p = self.unflatten(theta_single.detach())
        with torch.no_grad():
            for name, param in m.named_parameters():
                param.copy_(p[name])
        return m


def _patches(a: torch.Tensor, conv: torch.nn.Conv2d) -> torch.Tensor:
    """A conv's input as patches ``(N, L, k_h k_w C_in)``, one row per output position, the
    patch axis ordered ``(k_h, k_w, C_in)`` (the channels-last im2col: read from the input
    as NHWC, a view for channels-last inputs and ``C_in = 1``; faster than ``F.unfold`` on
    the W-F4 CNN). Int padding, any stride and dilation;
    ``F.unfold(a, ...)`` is its transpose with the patch axis reordered to ``(C_in, k_h, k_w)``."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = conv.kernel_size, conv.stride, conv.padding, conv.dilation
    h = a.permute(0, 2, 3, 1)
    if ph or pw:
        h = F.pad(h, (0, 0, pw, pw, ph, ph))
    h = h.contiguous()
    N, H, W, C = h.shape
    Ho, Wo = (H - dh * (kh - 1) - 1) // sh + 1, (W - dw * (kw - 1) - 1) // sw + 1
    sN, sH, sW, sC = h.stride()
    v = h.as_strided((N, Ho, Wo, kh, kw, C), (sN, sh * sH, sw * sW, dh * sH, dw * sW, sC))
    return v.reshape(N, Ho * Wo, kh * kw * C)


def _conv_ghost(L: int, d: int, c_out: int) -> bool:
    """Whether a conv layer's per-sample norms are taken as ghost norms (else the per-sample gradients
    are formed), by counted cost per sample: forming costs ``C_out d L`` and a pass over the gradient;
    the ghost norm two float64 Gram matrices (``L^2 (d + C_out)`` at twice the cost), the float64 copy
    of the patches and the clipped sum as one GEMM (``C_out d L``). Ghost wins for few positions and
    wide layers.

    >>> _conv_ghost(196, 64, 16), _conv_ghost(25, 256, 32), _conv_ghost(1, 4608, 512)
    (False, False, True)
    """
    return 2 * L * L * (d + c_out) + L * d < c_out * d


class GhostConvModel(FuncModel):
    """A :class:`FuncModel` over a ``torch.nn.Sequential`` of Conv2d / Linear layers (and
    parameter-free layers between them) clipped without ``vmap(grad)``: one forward and one backward
    per run give each weighted layer's inputs ``a`` and output backprops ``g`` per sample, and

    * Linear: ``||grad_n||^2 = ||g_n||^2 (||a_n||^2 + 1)``;
    * Conv2d, inputs as patches ``A_n (L, d)`` (:func:`_patches`), ``G_n (C_out, L)``: the weight
      gradient ``G_n A_n`` is either formed or its squared norm taken as the ghost norm
      ``sum_{p,q} (a_p . a_q)(g_p . g_q)``, whichever costs less (:func:`_conv_ghost`); the bias
      gradient is ``sum_p g_p``.

    Squared norms come from :func:`~dpcompanion.training.model_base.sqnorms` (in a product of two, the
    narrower factor in float64; the ghost Gram products in float64; a conv's bias from one bounded
    float32 reduction, :func:`~dpcompanion.training.model_base.sqnorms_upper`), the factors from
    :func:`~dpcompanion.training.model_base.clip_scale`. Runs are looped.

    On CPU the forward feeds max-pooling layers channels-last tensors (``channels_last_pool``):
    torch's CPU max-pool is far slower on NCHW tensors, for the same values."""

    #: feed max-pooling layers channels-last tensors on CPU (False: torch's NCHW path, for comparison)
    channels_last_pool: bool = True
    #: per conv layer, ``None``: :func:`_conv_ghost` decides; True / False force the ghost / formed branch
    force_ghost: bool | None = None

    def _layer_norms(self, mod, a, g):
        """A layer's per-sample squared gradient norms ``(N,)`` (float64) and what its clipped sum needs.
        Float64 values take norms before squaring (:func:`~dpcompanion.training.model_base.product_norms64`;
        the ghost branch divides each sample's patches and backprops by their largest magnitude first)."""
        f64 = g.dtype == torch.float64
        if isinstance(mod, torch.nn.Linear):
            if f64:
                na = norms64(a)
                return product_norms64(norms64(g), torch.hypot(na, torch.ones_like(na)) if mod.bias is not None
                                       else na), ("linear", a, g)
            # the wider factor from float32 partials (sqnorms), the other in float64 (one float32
            # estimate per product: its error bound fits the clip slack, a product of two would not)
            wide_a = a.shape[-1] >= g.shape[-1]
            an = (sqnorms(a) if wide_a else norms64(a).square()) + (1.0 if mod.bias is not None else 0.0)
            return (norms64(g).square() if wide_a else sqnorms(g)) * an, ("linear", a, g)
        N, c_out = g.shape[0], g.shape[1]
        A = _patches(a, mod)  # (N, L, d)
        L, d = A.shape[1], A.shape[2]
        # (N, C_out, L) without a copy where g is channels-last (as the backward through a
        # channels-last pool leaves it) or NCHW
        gl = g.permute(0, 2, 3, 1)
        G = gl.reshape(N, L, c_out).transpose(1, 2) if gl.is_contiguous() else g.reshape(N, c_out, L)
        gb = G.sum(-1) if mod.bias is not None else None
        ghost = _conv_ghost(L, d, c_out) if self.force_ghost is None else self.force_ghost
        if ghost:
            A64, G64 = A.double(), G.double()
            if f64:  # ||G A|| = mA mG ||(G / mG)(A / mA)||
                mA, mG = (torch.where(m > 0, m, torch.ones_like(m)) for m in
                          (A64.abs().amax((1, 2)), G64.abs().amax((1, 2))))
                A64, G64 = A64 / mA[:, None, None], G64 / mG[:, None, None]
            nsq = torch.bmm(A64, A64.transpose(1, 2)).mul_(torch.bmm(G64.transpose(1, 2), G64)).sum((1, 2))
            if f64:
                nsq = product_norms64(nsq.sqrt(), mA, mG)
            carry = ("ghost", A, G, gb)
        else:  # the per-sample gradients (N, C_out, d)
            psg = torch.bmm(G, A)
            nsq = norms64(psg.reshape(N, -1)).square() if f64 else sqnorms(psg.reshape(N, -1))
            carry = ("formed", psg, None, gb)
        if gb is not None:
            nsq = nsq + (norms64(gb).square() if f64 else sqnorms_upper(gb))
        return nsq, carry

    @staticmethod
    def _layer_clipped_sum(mod, carry, c):
        """The layer's ``sum_n c_n grad_n``, weight then bias, flattened in the parameters'
        order (a conv weight ``(C_out, C_in, k_h, k_w)``)."""
        if carry[0] == "linear":
            _, a, g = carry
            cg = g * c[:, None]
            out = [(cg.transpose(0, 1) @ a).reshape(-1)]
            if mod.bias is not None:
                out.append(cg.sum(0))
            return out
        kind, X1, X2, gb = carry
        if kind == "formed":  # X1: (N, C_out, d)
            gw = torch.mv(X1.reshape(X1.shape[0], -1).t(), c)
        else:  # X1: patches (N, L, d), X2: G (N, C_out, L)
            N, L, d = X1.shape
            cG = (X2 * c[:, None, None]).permute(1, 0, 2).reshape(X2.shape[1], N * L)
            gw = cG @ X1.reshape(N * L, d)
        kh, kw = mod.kernel_size
        gw = gw.reshape(mod.out_channels, kh, kw, -1).permute(0, 3, 1, 2).reshape(-1)
        out = [gw]
        if gb is not None:
            out.append(gb.t() @ c)
        return out

    @staticmethod
    def _layer_bound(mod, carry, dtype):
        """What the clip factor must allow for on top of the layer's norm, per sample (float64,
        :func:`~dpcompanion.training.model_base.clip_scale`): ``(pad, slack)``. ``slack``: the
        products of :meth:`_layer_clipped_sum` that may underflow (each errs by < eta / 2, eta =
        :func:`~dpcompanion.training.model_base.underflow_unit`) times what multiplies them next.
        ``pad`` (ghost branch only, else None): ``cG @ A`` sums a sample's ``L`` positions in ``dtype``
        (error up to ``~L u ||G|| ||A||``) and the float64 Gram products err by up to ``sqrt((d + C_out +
        L^2) 2^-53) ||G|| ||A||``; cancellation can make both exceed ``u ||G A||``, so they are added to
        the norm the factor divides."""
        eta = underflow_unit(dtype)
        if carry[0] == "linear":
            _, a, g = carry
            wa, wg = math.sqrt(a.shape[-1]), math.sqrt(g.shape[-1])
            return None, eta * (wg * norms64(a) + wg * wa + wg)
        kind, X1, X2, gb = carry
        wb = math.sqrt(mod.out_channels) if gb is not None else 0.0
        if kind == "formed":  # c psg: one product per entry
            return None, eta * (math.sqrt(X1.shape[1] * X1.shape[2]) + wb)
        N, L, d = X1.shape
        nA, nG = norms64(X1.reshape(N, -1)), norms64(X2.reshape(N, -1))
        u = torch.finfo(dtype).eps / 2
        c_out = mod.out_channels
        # the Gram products' entries err by gamma_d ||a_p|| ||a_q|| and gamma_C_out ||g_p|| ||g_q||, summed
        # over L^2 products: the squared norm errs by at most (d + C_out + L^2 + 2) 2^-53 ||A||^2 ||G||^2
        # (Cauchy-Schwarz)
        pad = (2 * (L + 1) * u + math.sqrt((d + c_out + L * L + 2) * 2.0**-52)) * nG * nA
        return pad, eta * (math.sqrt(mod.out_channels * L) * nA + L * math.sqrt(mod.out_channels * d) + wb)

    def _layer_norms_and_sum(self, mod, a, g, c=None):
        """Per-sample squared norms ``(N,)`` of one layer, or (``c`` given) its clipped sum."""
        nsq, carry = self._layer_norms(mod, a, g)
        return nsq if c is None else self._layer_clipped_sum(mod, carry, c)

    def layers_forward(self, params, h, outs: list | None = None):
        """The engine's forward pass through the module's layers with the parameters
        ``params`` (:meth:`unflatten`; channels-last max-pools on CPU): returns the output and,
        per weighted layer (conv or linear), its input and the layer itself; each weighted
        layer's output is appended to ``outs`` (kept for autograd) when given."""
        inputs, weighted = [], []
        for name, mod in self.module.named_children():
            if isinstance(mod, (torch.nn.Conv2d, torch.nn.Linear)):
                W = params[f"{name}.weight"]
                b = params.get(f"{name}.bias")
                inputs.append(h.detach())
                if isinstance(mod, torch.nn.Conv2d):
                    h = F.conv2d(h, W, b, mod.stride, mod.padding, mod.dilation, mod.groups)
                else:
                    h = F.linear(h, W, b)
                if outs is not None:
                    h.retain_grad() if h.requires_grad else h.requires_grad_(True)
                    outs.append(h)
                weighted.append(mod)
            else:
                if (self.channels_last_pool and isinstance(mod, torch.nn.MaxPool2d) and h.dim() == 4
                        and h.device.type == "cpu"):
                    h = h.contiguous(memory_format=torch.channels_last)
                h = mod(h)
        return h, inputs, weighted

    def _run_one(self, th, X, y, clip_norm, w):
        params = self.unflatten(th)
        x = X.reshape(X.shape[0], *self.in_shape)
        outs = []
        with torch.enable_grad():
            h, inputs, weighted = self.layers_forward(params, x, outs)
            losses = self.per_sample_loss_from_output(h, y)
            grads = torch.autograd.grad(losses.sum(), outs)
        with torch.no_grad():
            per_layer = [self._layer_norms(m, a, g) for m, a, g in zip(weighted, inputs, grads)]
            norms = sum(n for n, _ in per_layer).sqrt()
            dt = inputs[0].dtype
            bounds = [self._layer_bound(m, carry, dt) for m, (_, carry) in zip(weighted, per_layer)]
            slack = sum(s for _, s in bounds)
            divisor = norms  # the ghost branch's summation error rides on its layer's norm
            if any(p is not None for p, _ in bounds):
                divisor = sum((n.sqrt() if p is None else n.sqrt() + p).square()
                              for (n, _), (p, _) in zip(per_layer, bounds)).sqrt()
            c = clip_factors(divisor, clip_norm, dtype=dt, absolute=slack)
            if w is not None:
                c = c * w
            pieces = []
            for m, (_, carry) in zip(weighted, per_layer):
                pieces += self._layer_clipped_sum(m, carry, c)
            return torch.cat(pieces), norms, losses.detach()

    def clipped_grad_sum(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        """Ghost/mixed clipping per run (see the class docstring); grouped convs, string
        padding and non-zero padding modes take :class:`FuncModel`'s torch.func path. Each
        sample's clipped gradient, as summed, has norm <= C for any finite values
        (:meth:`_layer_bound`; a sample whose values overflow is dropped,
        :func:`~dpcompanion.training.model_base.finite_clip_sum`)."""
        for m in self.module.children():
            if isinstance(m, torch.nn.Conv2d) and (m.groups != 1 or isinstance(m.padding, str)
                                                   or m.padding_mode != "zeros"):
                return FuncModel.clipped_grad_sum(self, theta, X, y, clip_norm=clip_norm, weights=weights)
        return finite_clip_sum(self._ghost_runs, theta, X, y, clip_norm=clip_norm, weights=weights)

    def _ghost_runs(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        rows = [self._run_one(theta[k], X, y, clip_norm, None if weights is None else weights[k])
                for k in range(theta.shape[0])]
        return ClipResult(*(torch.stack([r[i] for r in rows]) for i in range(3)))


class MNISTCNN(torch.nn.Sequential):
    """Small CNN for 28x28 grey images (stand-in for Wu et al. (ADP-SGD, arXiv 2110.07435)
    App. F.4 Fig. 6, whose code is an image not in the text extraction): the tanh CNN
    of Papernot et al. 2020 (arXiv 2007.14191) used in Opacus's MNIST example:
    conv 16@8x8 s2 p3 -> tanh -> maxpool 2 s1 -> conv 32@4x4 s2 -> tanh -> maxpool 2 s1
    -> fc 512->32 -> tanh -> fc 32->10 (26 010 parameters)."""

    def __init__(self, n_classes: int = 10):
        super().__init__(
            torch.nn.Conv2d(1, 16, 8, 2, padding=3),
            torch.nn.Tanh(),
            torch.nn.MaxPool2d(2, 1),
            torch.nn.Conv2d(16, 32, 4, 2),
            torch.nn.Tanh(),
            torch.nn.MaxPool2d(2, 1),
            torch.nn.Flatten(),
            torch.nn.Linear(32 * 4 * 4, 32),
            torch.nn.Tanh(),
            torch.nn.Linear(32, n_classes),
        )


class CIFARCNN(torch.nn.Sequential):
    """Small CNN for 32x32 colour images (stand-in for Wu et al. (ADP-SGD, arXiv 2110.07435)
    App. F.4 Fig. 5, an image not in the text extraction): two conv-tanh-pool blocks
    (32 and 64 channels, 3x3) and two dense layers (4096 -> 128 -> 10)."""

    def __init__(self, n_classes: int = 10):
        super().__init__(
            torch.nn.Conv2d(3, 32, 3, padding=1),
            torch.nn.Tanh(),
            torch.nn.AvgPool2d(2),
            torch.nn.Conv2d(32, 64, 3, padding=1),
            torch.nn.Tanh(),
            torch.nn.AvgPool2d(2),
            torch.nn.Flatten(),
            torch.nn.Linear(64 * 8 * 8, 128),
            torch.nn.Tanh(),
            torch.nn.Linear(128, n_classes),
        )


MODELS = ("linear", "logistic", "mlp", "cnn-mnist", "cnn-cifar")


def make_model(
    name: str,
    *,
    in_dim: int | None = None,
    n_classes: int = 2,
    hidden: int | Sequence[int] = 100,
    activation: str = "relu",
    loss: str | None = None,
    bias: bool = True,
) -> Model:
    """Build a model by name: ``linear`` (squared loss), ``logistic``, ``mlp`` (one
    hidden layer of ``hidden`` units, logistic/cross-entropy loss unless ``loss``),
    ``cnn-mnist`` (28x28x1), ``cnn-cifar`` (32x32x3).

    >>> make_model("mlp", in_dim=60, n_classes=2, hidden=1000).n_params
    62001
    """
    if name not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}, got {name!r}")
    if name in ("linear", "logistic", "mlp"):
        if in_dim is None:
            raise ValueError(f"in_dim is required for model {name!r}")
        if name == "mlp":
            hid = (hidden,) if isinstance(hidden, int) else tuple(hidden)
            return DenseModel(in_dim=in_dim, n_classes=n_classes, hidden=hid, loss=loss or "logistic",
                              activation=activation, bias=bias)
        return DenseModel(in_dim=in_dim, n_classes=n_classes, loss=loss or ("squared" if name == "linear" else "logistic"),
                          bias=bias)
    if name == "cnn-mnist":
        return GhostConvModel(lambda: MNISTCNN(n_classes), in_shape=(1, 28, 28), n_classes=n_classes, name=name)
    return GhostConvModel(lambda: CIFARCNN(n_classes), in_shape=(3, 32, 32), n_classes=n_classes, name=name)
