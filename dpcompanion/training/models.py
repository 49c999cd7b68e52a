"""Models for the private trainers, written for many independent runs at once.

Every model here is *functional*: it holds no parameters. Parameters live in one flat
tensor ``theta`` of shape ``(K, P)`` (``K`` independent runs, ``P`` parameters), which
``model.unflatten(theta)`` views as a dict of named tensors with a leading run
dimension (``W1: (K, H, d)``, ...). The order of the flat vector is
``model.param_shapes`` (insertion order); the trainers draw one Gaussian vector of
length ``P`` per run and step in that order, so noise is reproducible and
device-independent in its layout.

The one operation the private step needs is :meth:`Model.clipped_grad_sum`:

    per-sample gradient norms -> clip factors min(1, C / ||g_n||) -> weighted sum

returned as a :class:`ClipResult` (flat summed clipped gradient ``(K, P)``, per-sample
norms ``(K, N)``, per-sample losses ``(K, N)``). Two implementations:

* :class:`DenseModel` (linear / logistic regression, the MLPs): **ghost clipping**.
  A dense layer's per-sample gradient is the outer product ``delta_n a_n^T`` of its
  backprop ``delta_n`` and its input ``a_n``, so ``||grad_n||^2 = ||delta_n||^2
  (||a_n||^2 + 1)`` (the ``+1`` is the bias). The norms come from activations and
  backprops without ever materialising ``N x P`` per-sample gradients, and the clipped
  sum is one weighted matmul per layer (Goodfellow 2015, arXiv 1510.01799; Li et al.
  2022, arXiv 2110.05679 Sec. 4 "ghost clipping"). Backprops are written out
  analytically (squared loss, binary logistic, softmax cross-entropy), which keeps the
  whole step to a handful of batched matmuls. For the paper's network (one ReLU hidden
  layer, one output) a specialised path never forms the hidden backprops at all
  (:meth:`DenseModel._binary_relu_mlp_chunk`).
* :class:`FuncModel` (any ``torch.nn.Module``, used for the CNNs): per-sample gradients
  from ``torch.func`` (``functional_call`` + ``vmap(grad)``), vmapped again over runs.

Both offer :meth:`per_sample_grads` (the torch.func reference, ``(K, N, P)``), used by
the tests to check the ghost path, and :meth:`to_module` (an ``nn.Module`` holding one
run's parameters, e.g. for the Opacus benchmark).

Labels are class indices ``0..n_classes-1``. With ``n_classes == 2`` the dense models
use one output ``z`` and the label ``s = 2 y - 1 in {-1, +1}``: squared loss
``(z - s)^2 / 2`` and logistic loss ``log(1 + exp(-s z))`` (the binary MNIST35 /
synthetic setups of Hong et al. 2022, the ICLR submission's App. D). With more classes: squared loss
``||z - onehot(y)||^2 / 2`` or softmax cross-entropy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

__all__ = [
    "ClipResult",
    "Model",
    "DenseModel",
    "FuncModel",
    "GhostConvModel",
    "MNISTCNN",
    "CIFARCNN",
    "MODELS",
    "make_model",
    "binary_output_loss",
    "binary_output_backprop_",
    "predict_from_output",
    "clip_scale",
    "clip_factors",
    "norms64",
]

LOSSES = ("squared", "logistic")
ACTIVATIONS = ("relu", "tanh", "sigmoid")


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
    logistic ``log(1 + exp(-s z)) = softplus(r)`` (Hong et al. 2022, the ICLR submission's App. D). The one
    home of these two formulas: the ghost-clipping path, the evaluation and the trainers'
    linear fast path all call it.

    >>> binary_output_loss("squared", torch.tensor([1.0])).item(), round(binary_output_loss("logistic", torch.tensor([0.0])).item(), 6)
    (2.0, 0.693147)
    """
    if kind == "squared":
        return 0.5 * (r + 1.0) ** 2
    return F.softplus(r)


def binary_output_backprop_(kind: str, r: torch.Tensor) -> torch.Tensor:
    """In place: overwrite the negative margins ``r = -s z`` with ``a`` such that
    ``d loss / d z = -s a`` (squared: ``a = r + 1``; logistic: ``a = sigmoid(r)``, in (0, 1)).
    A sample's gradient with respect to a linear model's parameters is then ``a (-s x)``,
    with norm ``|a| ||x||`` (``x`` with its bias feature): exact, nothing per-sample formed.

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


#: Relative slack of the clip factor, in unit roundoffs u of the training dtype: the clipped
#: gradient ``c g`` is formed by a few float roundings (c itself, then up to three products on
#: the way to the sum: ``c dz``, ``(c dz) x``, ``* W2`` on the MLP path), each at most u;
#: 8 u covers them. ``CLIP_SLACK_NORM`` float64 ulps cover the float64 norm's own rounding
#: (torch sums in blocks/pairs: error ~ log2(n) ulps, n the number of squares).
CLIP_SLACK_ULPS = 8
CLIP_SLACK_NORM = 64 * 2.0**-53


def clip_scale(norms: torch.Tensor, clip_norm: float, *, dtype: torch.dtype) -> torch.Tensor:
    """``C / (||g_n|| (1 + kappa))`` in ``dtype``, from norms computed in float64 from the
    ``dtype`` values of the gradients (``kappa = 8 u + 64 * 2^-53``, u the unit roundoff of
    ``dtype``): the largest multiplier of ``g_n`` that this code may use while every clipped
    gradient it sums, rounded in ``dtype``, keeps a float64 norm <= C (the sensitivity the
    ledger charges for). The one clipping rule: :func:`clip_factors` and the trainers' linear
    fast path (a cap on the margin weight) both use it.

    >>> c = clip_scale(torch.tensor([2.0], dtype=torch.float64), 1.0, dtype=torch.float32)
    >>> bool(c.double() * 2.0 <= 1.0), float(1 - 2 * c)   # 0.5 less a few float32 ulps
    (True, 4.76837158203125e-07)
    """
    if norms.dtype != torch.float64:
        raise TypeError(f"norms must be float64 (computed from the gradients' values), got {norms.dtype}")
    kappa = CLIP_SLACK_ULPS * torch.finfo(dtype).eps / 2 + CLIP_SLACK_NORM
    return (clip_norm / (norms.clamp_min(1e-30) * (1.0 + kappa))).to(dtype)


def clip_factors(norms: torch.Tensor, clip_norm: float, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``min(1, C / ||g_n||)`` elementwise (1 where the norm is 0), made safe in floating
    point (:func:`clip_scale`): ``norms`` in float64, the factors in ``dtype`` (default
    float32). Every clipped per-sample gradient has norm <= C (float64, of its ``dtype``
    values), never ``C (1 + 1.7e-7)`` as a plain ``C / ||g||`` in float32 can give.

    >>> clip_factors(torch.tensor([0.0, 0.5, 4.0], dtype=torch.float64), 1.0).tolist()
    [1.0, 1.0, 0.24999988079071045]
    """
    return torch.clamp(clip_scale(norms, clip_norm, dtype=dtype or torch.float32), max=1.0)


def norms64(v: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Euclidean norms along ``dim`` computed in float64 from ``v``'s values (for
    :func:`clip_factors`: a float32 norm can be ~1e-7 short of the vector's own)."""
    return torch.linalg.vector_norm(v, dim=dim, dtype=torch.float64)


class Model:
    """Common interface (see the module docstring). Subclasses define ``param_shapes``,
    ``init_single``, ``forward`` and ``per_sample_loss_from_output``."""

    name: str = "model"
    n_classes: int
    in_shape: tuple[int, ...]
    param_shapes: dict[str, tuple[int, ...]]

    # -- parameters -------------------------------------------------------------------
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

    # -- evaluation -------------------------------------------------------------------
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

    # -- gradients --------------------------------------------------------------------
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
        """Sum over samples of ``weights[k, n] * clip(g_n)`` (generic torch.func path)."""
        with torch.no_grad():
            losses = self.per_sample_loss(theta, X, y)
        G = self.per_sample_grads(theta, X, y)
        n64 = norms64(G)
        c = clip_factors(n64, clip_norm, dtype=G.dtype)
        if weights is not None:
            c = c * weights
        return ClipResult(torch.einsum("kn,knp->kp", c, G), n64.to(G.dtype), losses)

    def to_module(self, theta_single: torch.Tensor) -> torch.nn.Module:  # pragma: no cover
        raise NotImplementedError


def _one_hot(y: torch.Tensor, n_classes: int, dtype) -> torch.Tensor:
    # a comparison rather than F.one_hot, which torch.func.vmap cannot batch
    return (y.unsqueeze(-1) == torch.arange(n_classes, device=y.device)).to(dtype)


def _binary_targets(y: torch.Tensor, dtype) -> torch.Tensor:
    return (2 * y - 1).to(dtype)


class DenseModel(Model):
    """Fully connected network ``in_dim -> hidden... -> out`` with ghost clipping.

    ``hidden=()`` gives linear regression (``loss="squared"``) or logistic regression
    (``loss="logistic"``); ``hidden=(100,)`` / ``(1000,)`` the 2-layer MLPs of Hong et
    al. 2022 (the ICLR submission, App. D: "DNN with 2 layers and 100 hidden units"; the FAccT version, Sec. 5: 1000
    hidden units for the data-efficiency figure). ``init="zeros"`` starts at the origin
    (default for the convex models); ``"uniform"`` is PyTorch's ``nn.Linear`` rule
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

    def backprops(self, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor):
        """Forward and analytic backward pass: per-layer inputs ``a_l`` and backprops
        ``delta_l = d loss_n / d z_l`` (``(K, N, width)``), and the per-sample losses."""
        acts, pre, layers = self._forward_all(theta, X)
        losses, delta = self._output_backprop(pre[-1], y)
        deltas = [delta]
        for i in range(self.n_layers - 1, 0, -1):
            W = layers[i][0]
            da = torch.matmul(delta, W)
            a_next = acts[i]
            delta = da * self._act_grad(pre[i - 1], a_next)
            deltas.append(delta)
        deltas.reverse()
        return acts, deltas, losses

    #: runs per chunk are chosen so that one (runs, N, width) tensor stays below this
    #: many elements (8 MB of float32): on a 2-core CPU the step is memory-bound and a
    #: cache-sized chunk runs each run about as fast as a lone run (measured: 1-2 runs of
    #: the paper's 1000 x 1000 activations per chunk ~2.0-2.2 ms per run, 32 runs ~4.4 ms).
    chunk_elements: int = 1 << 21
    #: the same limit on a GPU, where bigger batches pay off (256 MB of float32)
    chunk_elements_cuda: int = 1 << 26
    #: use the specialised path for one-hidden-layer binary ReLU MLPs
    fast_path: bool = True

    def clipped_grad_sum(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        """Ghost clipping over chunks of runs (see :meth:`_clipped_grad_sum_chunk`)."""
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
        """The paper's network (one ReLU hidden layer, one output, biases) without ever
        forming the hidden backprop ``delta_n = dz_n (W2 * m_n)``, ``m_n = 1[a_n > 0]``:

        ``||delta_n||^2 = dz_n^2 (m_n . W2^2)`` and ``sum_n c_n delta_n [x_n, 1]^T =
        W2^T * (M^T (c dz [X, 1]))``: one mask and two matmuls over the ``(K, N, H)``
        activations; the first layer's bias rides along as a column of ones."""
        with torch.no_grad():
            K, N = theta.shape[0], X.shape[0]
            d, H = self.sizes[0], self.sizes[1]
            p = self.unflatten(theta)
            W1, b1, W2, b2 = p["W1"], p["b1"], p["W2"], p["b2"]  # (K,H,d) (K,H) (K,1,H) (K,1)
            Xa = torch.cat([X, torch.ones(N, 1, dtype=X.dtype, device=X.device)], dim=1)  # (N, d+1)
            W1a = torch.cat([W1, b1.unsqueeze(-1)], dim=-1)  # (K, H, d+1)
            a = torch.matmul(Xa, W1a.transpose(-1, -2)).relu_()  # (K, N, H)
            z = torch.baddbmm(b2.unsqueeze(-2), a, W2.transpose(-1, -2))  # (K, N, 1)
            losses, dz = self._output_backprop(z, y)  # (K, N), (K, N, 1)
            mask = torch.sign(a)  # 0/1 as floats (a >= 0)
            w2 = W2.transpose(-1, -2)  # (K, H, 1)
            # (K, N): sum_h m_nh W2_h^2, below
            # the norms in float64 from the float32 values (clip_factors needs them exact to ~1e-10)
            m_w2 = torch.bmm(mask.to(torch.float64), w2.to(torch.float64).square())[..., 0]
            dz2 = dz[..., 0].to(torch.float64).square()
            an = norms64(a).square_().add_(1.0)
            xn = norms64(Xa).square_()  # ||x_n||^2 + 1
            n64 = (dz2 * (an + m_w2 * xn)).sqrt_()
            norms = n64.to(theta.dtype)
            c = clip_factors(n64, clip_norm, dtype=theta.dtype)
            if weights is not None:
                c = c * weights
            cdz = c.unsqueeze(-1) * dz  # (K, N, 1)
            gW2 = torch.bmm(cdz.transpose(-1, -2), a)  # (K, 1, H)
            gb2 = cdz.sum(dim=-2)  # (K, 1)
            gW1a = torch.bmm(mask.transpose(-1, -2), cdz * Xa) * w2  # (K, H, d+1)
            pieces = [gW1a[..., :d].reshape(K, -1), gW1a[..., d], gW2.reshape(K, -1), gb2]
            return ClipResult(torch.cat(pieces, dim=-1), norms, losses)

    def _clipped_grad_sum_chunk(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        if self.fast_path and self.n_layers == 2 and self.n_out == 1 and self.bias and self.activation == "relu":
            return self._binary_relu_mlp_chunk(theta, X, y, clip_norm=clip_norm, weights=weights)
        return self._generic_chunk(theta, X, y, clip_norm=clip_norm, weights=weights)

    def _generic_chunk(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        """Ghost clipping: norms from activations and backprops, then one weighted
        matmul per layer (no per-sample gradient is materialised).

        Written for memory traffic, which dominates on CPU when K runs share the data:
        fused bias (``baddbmm``), in-place activation, ReLU's backward as one
        ``threshold_backward`` kernel, norms by ``vector_norm`` (no temporaries), and the
        clip factors applied to the small side of each product (``c * a_l`` or
        ``c * delta_out``) instead of to the ``(K, N, H)`` backprops."""
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
            norms_sq = torch.zeros((K, N), dtype=torch.float64, device=theta.device)  # float64: clip_factors
            for a_l, d_l in zip(acts, deltas):
                an = norms64(a_l).square_()
                if self.bias:
                    an.add_(1.0)
                norms_sq.addcmul_(norms64(d_l).square_(), an)
            n64 = norms_sq.sqrt_()
            norms = n64.to(theta.dtype)
            c = clip_factors(n64, clip_norm, dtype=theta.dtype)
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
        # PyTorch's default init for conv/linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
        # drawn from the given generator (no global RNG).
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
    as NHWC, a view for channels-last inputs and ``C_in = 1``, so the copy reads runs of
    ``C_in`` contiguous values). On the W-F4 CNN, one thread: 1.9 ms for the first conv's
    patches (``F.unfold``: 5.2 ms), 0.3 ms for the second's, from its channels-last input
    (an NCHW-ordered unfold of it: 2.1 ms). Int padding, any stride and dilation;
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


def _sqnorms64(x: torch.Tensor, block: int = 1 << 17) -> torch.Tensor:
    """Squared Euclidean norms of the rows of ``x`` ``(N, D)``: float64 norms of its values
    (:func:`norms64`, torch's vectorised reduction, faster than squaring a float64 copy),
    squared (a few float64 ulps, inside :data:`CLIP_SLACK_NORM`), taken in blocks of rows of
    about ``block`` elements so that each block's float64 copy stays in cache (the W-F4 CNN's
    second conv, 256 x 8192 values: its whole formed branch with the clipped sum 2.3 ms
    against 3.1 ms with the norms in one piece, one thread).

    >>> x = torch.tensor([[3.0, 4.0], [6.0, 8.0], [0.0, 1.0]])
    >>> _sqnorms64(x, block=2).tolist(), torch.equal(_sqnorms64(x, block=2), _sqnorms64(x))
    ([25.0, 100.0, 1.0], True)
    """
    rows = max(1, block // max(1, x.shape[1]))
    if rows >= x.shape[0]:
        return norms64(x).square()
    return torch.cat([norms64(x[i:i + rows]) for i in range(0, x.shape[0], rows)]).square()


def _conv_ghost(L: int, d: int, c_out: int) -> bool:
    """Whether a conv layer's per-sample norms are taken as ghost norms (else the per-sample
    gradients are formed), by counted cost per sample: forming costs the batched product
    ``C_out d L`` plus a pass over the ``C_out d`` per-sample gradient (its float64 norm; the
    clipped sum is then a matrix-vector product); the ghost norm costs two Gram matrices in
    float64 (``L^2 (d + C_out)`` multiply-adds at twice a float32 one's cost), the float64
    copy of the ``L d`` patches, and the clipped sum as one GEMM (``C_out d L`` again).
    Ghost wins only where the per-sample gradient is large against ``L`` (few positions,
    wide layers), where it also saves the ``N C_out d`` memory.

    >>> _conv_ghost(196, 64, 16), _conv_ghost(25, 256, 32), _conv_ghost(1, 4608, 512)
    (False, False, True)
    """
    return 2 * L * L * (d + c_out) + L * d < c_out * d


class GhostConvModel(FuncModel):
    """A :class:`FuncModel` over a ``torch.nn.Sequential`` of Conv2d / Linear layers
    (and parameter-free layers between them) whose :meth:`clipped_grad_sum` never calls
    ``vmap(grad)``: one forward and one backward per run give each weighted layer's
    inputs ``a`` and output backprops ``g`` (per sample, since the loss is a sum), and

    * Linear: ``||grad_n||^2 = ||g_n||^2 (||a_n||^2 + 1)`` (closed form, as the dense
      engine);
    * Conv2d, inputs as patches ``A_n`` ``(L, d)`` (:func:`_patches`, ``d = k_h k_w C_in``,
      ``L`` positions), ``G_n`` ``(C_out, L)``: the per-sample weight gradient is
      ``G_n A_n``; it is either formed (cost ``C_out d L``; the clipped sum is then
      ``sum_n c_n (G_n A_n)``, a matrix-vector product) or its squared norm is taken as the
      ghost norm ``sum_{p,q} (a_p . a_q)(g_p . g_q)`` (cost ``L^2 (d + C_out)``; the clipped
      sum is then one GEMM over all samples and positions), whichever costs less per layer
      (:func:`_conv_ghost`); the bias gradient is ``sum_p g_p``.

    No second backward pass is needed: the clip factors weight per-sample quantities already
    at hand. Squared norms are summed in float64 from the float32 values (the one clipping
    rule, :func:`clip_scale`). Runs are looped (each run's conv is already batched over
    samples).

    On CPU the forward of :meth:`clipped_grad_sum` feeds max-pooling layers channels-last
    tensors (``channels_last_pool``): torch's CPU max-pool is far slower on NCHW tensors than on
    channels-last ones (kernel 2, stride 1 on 256x16x14x14: 13.5 ms against 1.8 ms per call,
    measured on one thread), for the same operation and the same values."""

    #: feed max-pooling layers channels-last tensors on CPU (False: torch's NCHW path, for comparison)
    channels_last_pool: bool = True
    #: per conv layer, ``None``: :func:`_conv_ghost` decides; True / False force the ghost / formed branch
    force_ghost: bool | None = None

    def _layer_norms(self, mod, a, g):
        """A layer's per-sample squared gradient norms ``(N,)`` (float64) and what its
        clipped sum needs (the patches, or the formed per-sample gradients)."""
        if isinstance(mod, torch.nn.Linear):
            an = a.double().square().sum(-1) + (1.0 if mod.bias is not None else 0.0)
            return g.double().square().sum(-1) * an, ("linear", a, g)
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
            nsq = torch.bmm(A64, A64.transpose(1, 2)).mul_(torch.bmm(G64.transpose(1, 2), G64)).sum((1, 2))
            carry = ("ghost", A, G, gb)
        else:  # the per-sample gradients (N, C_out, d)
            psg = torch.bmm(G, A)
            nsq = _sqnorms64(psg.reshape(N, -1))
            carry = ("formed", psg, None, gb)
        if gb is not None:
            nsq = nsq + gb.double().square().sum(-1)
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
            c = clip_factors(norms, clip_norm, dtype=inputs[0].dtype)
            if w is not None:
                c = c * w
            pieces = []
            for m, (_, carry) in zip(weighted, per_layer):
                pieces += self._layer_clipped_sum(m, carry, c)
            return torch.cat(pieces), norms, losses.detach()

    def clipped_grad_sum(self, theta, X, y, *, clip_norm, weights=None) -> ClipResult:
        """Ghost/mixed clipping per run (see the class docstring); grouped convs, string
        padding and non-zero padding modes take :class:`FuncModel`'s torch.func path."""
        for m in self.module.children():
            if isinstance(m, torch.nn.Conv2d) and (m.groups != 1 or isinstance(m.padding, str)
                                                   or m.padding_mode != "zeros"):
                return FuncModel.clipped_grad_sum(self, theta, X, y, clip_norm=clip_norm, weights=weights)
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
