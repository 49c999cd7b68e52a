"""Models given as ``torch.nn`` modules: :class:`FuncModel` (per-sample gradients from ``torch.func``,
any module), :class:`GhostConvModel` (the CNNs, with per-layer ghost norms for convolutions and dense
layers) and the two CNNs of the experiments (:class:`MNISTCNN`, :class:`CIFARCNN`).
"""

from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from dpcompanion.training.model_base import (ClipResult, Model, clip_factors, finite_clip_sum, norms64, product_norms64,
                                             sqnorms, sqnorms_upper, underflow_unit)

__all__ = ["FuncModel", "GhostConvModel", "MNISTCNN", "CIFARCNN"]


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
