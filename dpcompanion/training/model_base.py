"""What every model of the private trainers shares: the :class:`Model` contract, :class:`ClipResult`,
the binary-output losses and the clipping arithmetic (:func:`clip_factors`, :func:`norms64`). The
models are written for many independent runs at once.

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

* :class:`~dpcompanion.training.dense_models.DenseModel` (linear / logistic regression, the MLPs): **ghost clipping**.
  A dense layer's per-sample gradient is the outer product ``delta_n a_n^T`` of its
  backprop ``delta_n`` and its input ``a_n``, so ``||grad_n||^2 = ||delta_n||^2
  (||a_n||^2 + 1)`` (the ``+1`` is the bias). The norms come from activations and
  backprops without ever materialising ``N x P`` per-sample gradients, and the clipped
  sum is one weighted matmul per layer (Goodfellow 2015, arXiv 1510.01799; Li et al.
  2022, arXiv 2110.05679 Sec. 4 "ghost clipping"). Backprops are written out
  analytically (squared loss, binary logistic, softmax cross-entropy), which keeps the
  whole step to a handful of batched matmuls. For the paper's network (one ReLU hidden
  layer, one output) a specialised path never forms the hidden backprops at all
  (:meth:`~dpcompanion.training.dense_models.DenseModel._binary_relu_mlp_chunk`).
* :class:`~dpcompanion.training.conv_models.FuncModel` (any ``torch.nn.Module``, used for the CNNs): per-sample gradients
  from ``torch.func`` (``functional_call`` + ``vmap(grad)``), vmapped again over runs.

Both offer :meth:`Model.per_sample_grads` (the torch.func reference, ``(K, N, P)``), used by
the tests to check the ghost path, and :meth:`Model.to_module` (an ``nn.Module`` holding one
run's parameters, e.g. for the Opacus benchmark).

Labels are class indices ``0..n_classes-1``. With ``n_classes == 2`` the dense models
use one output ``z`` and the label ``s = 2 y - 1 in {-1, +1}``: squared loss
``(z - s)^2 / 2`` and logistic loss ``log(1 + exp(-s z))`` (the binary MNIST35 /
synthetic setups of Hong et al. 2022, the ICLR submission's App. D). With more classes: squared loss
``||z - onehot(y)||^2 / 2`` or softmax cross-entropy.

The models are split by kind so that no module grows past the package's 800-line limit (issue 32):
this module (the contract, which both kinds implement), :mod:`dpcompanion.training.dense_models`,
:mod:`dpcompanion.training.conv_models`, and :mod:`dpcompanion.training.models` (:func:`make_model`
builds one by name).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch.func import grad, vmap

__all__ = [
    "ClipResult",
    "Model",
    "binary_output_loss",
    "binary_output_backprop_",
    "predict_from_output",
    "clip_scale",
    "clip_factors",
    "norms64",
]


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
