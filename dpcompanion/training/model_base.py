"""What every model of the private trainers shares: the :class:`Model` contract, :class:`ClipResult`,
the binary-output losses and the clipping arithmetic (:func:`clip_factors`, :func:`sqnorms`,
:func:`finite_clip_sum`).

Models are *functional*: parameters live in one flat tensor ``theta (K, P)`` (K independent runs),
viewed by ``model.unflatten(theta)`` as named ``(K, *shape)`` tensors in ``param_shapes`` order (the
order the trainers' noise vectors follow). The private step needs :meth:`Model.clipped_grad_sum`
(per-sample norms -> factors ``min(1, C / ||g_n||)`` -> weighted sum, a :class:`ClipResult`):
:class:`~dpcompanion.training.dense_models.DenseModel` by ghost clipping (a dense layer's per-sample
gradient is ``delta_n a_n^T``, so ``||g_n||^2 = ||delta_n||^2 (||a_n||^2 + 1)``; Goodfellow 2015,
arXiv 1510.01799; Li et al. 2022, arXiv 2110.05679 Sec. 4) and
:class:`~dpcompanion.training.conv_models.GhostConvModel` per layer. :meth:`Model.per_sample_grads`
is the torch.func reference the tests check them against.

Labels are class indices. With two classes the dense models use one output ``z`` and ``s = 2y - 1``:
squared loss ``(z - s)^2 / 2`` or logistic ``log(1 + exp(-s z))`` (Hong et al. 2022, App. D); with
more, ``||z - onehot(y)||^2 / 2`` or softmax cross-entropy.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch.func import grad, vmap

__all__ = ["ClipResult", "Model", "binary_output_loss", "binary_output_backprop_", "predict_from_output",
           "clip_scale", "clip_factors", "norms64", "NORM_BLOCK", "NORM_MAX_PARTIALS", "sqnorm_error", "sqnorms",
           "product_norms64", "reduction_upper", "sqnorms_upper", "exact_float32_matmul", "underflow_unit", "round_down_subnormal", "finite_clip_sum"]


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


#: Relative slack of the clip factor, in unit roundoffs u of the training dtype: the clipped
#: gradient ``c g`` is formed by a few float roundings (c itself, then up to three products on
#: the way to the sum: ``c dz``, ``(c dz) x``, ``* W2`` on the MLP path), each at most u, and a
#: float32 norm from :func:`sqnorms` is at least ``sqrt(1 - 7 u)`` of the exact one: 8 u covers
#: ``(1 + u)^4 / sqrt(1 - 7 u)`` (checked exactly, ``tests/test_clip_float32_norms.py``). ``CLIP_SLACK_NORM`` float64 ulps cover the float64 norm's own rounding
#: (torch sums in blocks/pairs: error ~ log2(n) ulps, n the number of squares) and the two
#: float64 roundings of the factor itself. Underflowed products, where u does not bound the
#: error, are charged separately (the ``absolute`` slack of :func:`clip_scale`).
CLIP_SLACK_ULPS = 8
CLIP_SLACK_NORM = 64 * 2.0**-53
_TINY64 = float(torch.finfo(torch.float64).tiny)
_SAFE_LO, _SAFE_HI = 2.0**-400, 2.0**400  # float64 norms in this range came from squares that neither over- nor underflowed


def underflow_unit(dtype: torch.dtype) -> float:
    """The smallest subnormal number of ``dtype``: twice the largest absolute error of one rounding
    below the normal range (where u no longer bounds it); the clipping paths charge it, times what
    an underflowed product is multiplied by next, as the absolute slack of :func:`clip_scale`.

    >>> underflow_unit(torch.float32) == 2.0**-149, underflow_unit(torch.float64) == 2.0**-1074
    (True, True)
    """
    fi = torch.finfo(dtype)
    return float(fi.tiny) * float(fi.eps)


def round_down_subnormal(s64: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``s64`` (float64, >= 0) in ``dtype``, never above ``s64`` where it falls below the normal
    range of ``dtype``, where round-to-nearest may round up by a relative error up to 100%. Normal
    values keep round-to-nearest (relative error <= u, inside :data:`CLIP_SLACK_ULPS`).

    >>> s = torch.tensor([0.6 * 2.0**-149, 1.5 * 2.0**-149, 0.5], dtype=torch.float64)
    >>> (round_down_subnormal(s, torch.float32).double() / s).tolist()
    [0.0, 0.6666666666666666, 1.0]
    """
    out = s64.to(dtype)
    if dtype == torch.float64 or s64.numel() == 0 or not float(s64.amin()) < torch.finfo(dtype).tiny:
        return out  # no value below the normal range (the common case: one reduction, no pass)
    up = (s64 < torch.finfo(dtype).tiny) & (out.to(torch.float64) > s64)
    return torch.where(up, torch.nextafter(out, torch.zeros_like(out)), out)


def clip_scale(norms: torch.Tensor, clip_norm: float, *, dtype: torch.dtype,
               absolute: torch.Tensor | float | None = None) -> torch.Tensor:
    """``(C - (1 + kappa) A) / (||g_n|| (1 + kappa))`` in ``dtype`` (0 where that is negative,
    or where the norm is NaN or inf), from norms computed in float64 from the ``dtype`` values of
    the gradients (``kappa = 8 u + 64 * 2^-53``, u the unit roundoff of ``dtype``; ``A``:
    ``absolute``, per sample, default 0). The largest multiplier of ``g_n`` that this code may use
    while every clipped gradient it sums, rounded in ``dtype``, keeps a float64 norm <= C (the
    sensitivity the ledger charges for); :func:`clip_factors` and the linear fast path both use it.

    The bound, for finite gradient values of any magnitude and any C > 0, and why. (i) The norm
    ``n``: float64, from the ``dtype`` values: float64 values within ``2^-47`` (rows rescaled where
    squares could over- or underflow, :func:`norms64`, and the ghost paths multiply factor norms
    before squaring, :func:`product_norms64`); float32 values from float32 partials of 7 squares,
    at least ``sqrt(1 - E)`` of the exact norm with ``E`` 7 u (:func:`sqnorms`, :func:`sqnorm_error`), or
    an upper bound of it from one float32 reduction (:func:`sqnorms_upper`, the paper's network;
    the paths combine them in float64 with a few roundings); a norm below 1e-30 is taken as 1e-30, which only lowers the
    factor, so an absolute error in a norm that small does not matter. (ii) The factor: two
    float64 roundings (reciprocal, product; one step down below float64's normal range, where
    the product's rounding is absolute), then the cast to ``dtype``: to nearest for a normal
    result (a factor 1 + u at most) and never upwards below the normal range
    (:func:`round_down_subnormal`). (iii) Forming ``c g`` takes at most three more products, each exact to a factor
    (1 + u) while its result is normal; a product that underflows errs instead by up to half of
    :func:`underflow_unit` in absolute terms, and the caller passes ``A``: those errors times
    the norms of what multiplies them afterwards (the ghost convolution also adds its
    summation error to ``n``). So the clipped gradient as summed has norm at most ``(1 + u)^4
    (1 + 2^-47 + 2^-52) (c n + A)`` from a float64 norm and ``(1 + u)^4 (1 - E)^-1/2 (1 + 2^-50) (c n
    + A)`` from a float32 one, both ``<= (1 + kappa) (c n + A) <= C``. An overflowed (inf) or NaN
    norm gives factor 0: the sample contributes nothing, which never exceeds C (a sample whose
    own values are not finite is dropped by :func:`finite_clip_sum`).

    >>> c = clip_scale(torch.tensor([2.0], dtype=torch.float64), 1.0, dtype=torch.float32)
    >>> bool(c.double() * 2.0 <= 1.0), float(1 - 2 * c)   # 0.5 less a few float32 ulps
    (True, 4.76837158203125e-07)
    >>> clip_scale(torch.tensor([1e46, float("nan"), float("inf")], dtype=torch.float64), 1.0,
    ...            dtype=torch.float32).tolist()   # 1e-46 is below float32's smallest subnormal: 0
    [0.0, 0.0, 0.0]
    """
    if norms.dtype != torch.float64:
        raise TypeError(f"norms must be float64 (computed from the gradients' values), got {norms.dtype}")
    kappa = CLIP_SLACK_ULPS * torch.finfo(dtype).eps / 2 + CLIP_SLACK_NORM
    num = clip_norm  # C - (1 + kappa) A: exactly C in float64 unless A is within ~1e-16 C of it
    if isinstance(absolute, torch.Tensor):
        num = torch.clamp_min(clip_norm - (1.0 + kappa) * absolute.to(torch.float64), 0.0)
    elif absolute is not None:
        num = max(0.0, clip_norm - (1.0 + kappa) * float(absolute))
    # reciprocal times C, as torch evaluates ``C / tensor``
    s = (norms.clamp_min(1e-30) * (1.0 + kappa)).reciprocal_() * num
    s = s.nan_to_num_(nan=0.0, posinf=math.inf, neginf=-math.inf)  # a NaN norm (or slack): factor 0
    # below float64's normal range (a subnormal C) the product above rounds by up to half a step,
    # more than its relative error: one step down makes s no larger than its exact value (a pass
    # only where some factor is that small)
    if s.numel() and float(s.amin()) < _TINY64:
        s = torch.where(s < _TINY64, torch.nextafter(s, torch.zeros_like(s)), s)
    return round_down_subnormal(s, dtype)


def clip_factors(norms: torch.Tensor, clip_norm: float, *, dtype: torch.dtype | None = None,
                 absolute: torch.Tensor | float | None = None) -> torch.Tensor:
    """``min(1, C / ||g_n||)`` elementwise (1 where the norm is 0), made safe in floating
    point (:func:`clip_scale`, whose docstring states the bound and ``absolute``): ``norms`` in
    float64, the factors in ``dtype`` (default float32). Every clipped per-sample gradient has
    norm <= C (float64, of its ``dtype`` values), where a plain float32 ``C / ||g||`` can give
    ``C (1 + 1.7e-7)``. A factor of exactly 1 multiplies exactly.

    >>> clip_factors(torch.tensor([0.0, 0.5, 4.0], dtype=torch.float64), 1.0).tolist()
    [1.0, 1.0, 0.24999988079071045]
    """
    return torch.clamp(clip_scale(norms, clip_norm, dtype=dtype or torch.float32, absolute=absolute), max=1.0)


def norms64(v: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Euclidean norms along ``dim`` computed in float64 from ``v``'s values (for
    :func:`clip_factors`: a float32 norm can be ~1e-7 short of the vector's own), to a few
    float64 ulps at any magnitude: squares of float64 values can over- or underflow, so a float64 row
    whose norm comes out outside ``[2^-400, 2^400]`` (or 0, inf) is computed again from its values
    divided by their largest magnitude. Ordinary rows keep torch's result.

    >>> v = torch.tensor([[3.0, 4.0]], dtype=torch.float64)
    >>> [float(norms64(v * 2.0**k)[0] / 2.0**k) for k in (600, -600, 0)]   # plain squares: inf, 0, 5
    [5.0, 5.0, 5.0]
    """
    n = torch.linalg.vector_norm(v, dim=dim, dtype=torch.float64)
    if v.dtype != torch.float64 or v.numel() == 0:
        return n
    redo = ~((n >= _SAFE_LO) & (n <= _SAFE_HI))  # also 0, inf and NaN
    if not bool(redo.any()):
        return n
    rows = v.movedim(dim, -1).reshape(-1, v.shape[dim])
    idx = torch.nonzero(redo.reshape(-1)).squeeze(-1)
    sub = rows.index_select(0, idx)
    m = sub.abs().amax(dim=-1, keepdim=True)
    m = torch.where((m > 0) & torch.isfinite(m), m, torch.ones_like(m))
    flat = n.reshape(-1).clone()
    flat[idx] = torch.linalg.vector_norm(sub / m, dim=-1) * m.squeeze(-1)
    return flat.reshape(n.shape)


#: float32 squares summed per partial by :func:`sqnorms` (the partials are then summed in float64): 7
#: is the largest count whose error the slack of :func:`clip_scale` covers (``tests/test_clip_float32_norms.py``)
NORM_BLOCK = 7
#: partials per row above which :func:`sqnorms` takes the row in float64 (their float64 sum's error bound
#: would no longer fit the slack)
NORM_MAX_PARTIALS = 1 << 24


def sqnorm_error(dtype: torch.dtype, n: int) -> tuple[float, float]:
    """``(E, add)`` such that a squared norm ``S`` of ``n`` finite values of ``dtype`` satisfies
    ``S <= S~ / (1 - E)``, with ``S~`` what :func:`sqnorms` returns: the float64 sum of its
    low-precision partials plus ``add``.

    The proof. Each partial is a sum of at most ``q =`` :data:`NORM_BLOCK` products ``x_i^2`` computed
    in ``dtype``: at most ``q`` roundings on any term, in any order and with or without fused
    multiply-adds (one per square, at most ``q - 1`` additions; Higham 2002, Eq. 3.4 and Lemma 3.1),
    so the partial is within ``gamma_q = q u / (1 - q u)`` of its exact value, ``u`` the unit
    roundoff, while no product underflows. A product below the normal range errs instead by at most
    half the smallest subnormal, ``eta / 2`` (:func:`underflow_unit`), in absolute terms: at most ``n
    eta / 2`` over the row, carried through at most ``q - 1`` additions (``add``). The ``m <= n / q +
    1`` partials, exact in float64, are summed there: within ``gamma_m`` in float64. Hence ``S~ >=
    (S - add)(1 - gamma_q)(1 - gamma64_m) + add >= S (1 - E)`` with ``E = gamma_q + gamma64_m``. In
    float32, ``E`` is 7.0 u (4.2e-7): the clip factor's slack (:data:`CLIP_SLACK_ULPS`) covers it with
    the products that form ``c g``, so a clipped gradient stays within C without any factor on
    top of :func:`clip_scale`'s, and the factors differ from float64 norms' by float32 rounding only.

    >>> E, a = sqnorm_error(torch.float32, 1000)
    >>> round(E / 2.0**-24, 4), a < 1e-41
    (7.0, True)
    """
    if dtype == torch.float64:
        raise ValueError("sqnorm_error is for low-precision values; float64 values take norms64")
    u = float(torch.finfo(dtype).eps) / 2
    q = NORM_BLOCK
    g = q * u / (1 - q * u)
    m = int(n) // q + 2
    g64 = m * 2.0**-53 / (1 - m * 2.0**-53)
    return (g + g64) * (1 + 2.0**-40), int(n) * underflow_unit(dtype) / 2 * (1 + g) * (1 + 2.0**-50)


def _partial_sums(v: torch.Tensor, dim: int) -> torch.Tensor:
    """The float64 sum of float32 partials of at most :data:`NORM_BLOCK` squares of ``v`` along
    ``dim``: partial ``b`` sums ``v[j B + b]^2`` over ``j < q`` with ``B = n // q`` (``q`` fused
    multiply-adds over strided views), and the fewer than ``q`` values left over one more."""
    n, q = v.shape[dim], NORM_BLOCK
    B = n // q
    total = None
    if B:
        main = v.narrow(dim, 0, q * B).unflatten(dim, (q, B))
        s = main.select(dim, 0)
        acc = s * s
        for j in range(1, q):
            s = main.select(dim, j)
            acc.addcmul_(s, s)
        total = acc.sum(dim, dtype=torch.float64)
    if n - q * B:
        rest = v.narrow(dim, q * B, n - q * B)
        tail = (rest * rest).sum(dim).double()
        total = tail if total is None else total.add_(tail)
    return total


def sqnorms(v: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Squared Euclidean norms of ``v`` along ``dim`` in float64, computed in ``v``'s own dtype with a
    proven error bound (:func:`sqnorm_error`: never short of the exact value by more than ``E`` of it,
    7 float32 ulps): the squares are taken and summed in partials of ``q =`` :data:`NORM_BLOCK` terms
    (``q`` multiply-adds over strided views of ``v``, no float64 copy of it, :func:`_partial_sums`),
    the partials summed in float64. Float64 values take :func:`norms64` squared (to a few float64 ulps,
    :data:`CLIP_SLACK_NORM`). A float32 row whose partials overflow (values above ~1.8e19), or whose
    squared norm is so small (non-zero, below ~1e-35 for 1,000 values) that the underflow allowance
    would dominate, or that is longer than ``q`` :data:`NORM_MAX_PARTIALS`, is taken in float64 from
    its values (a rare pass over the whole tensor).

    >>> v = torch.tensor([[3.0, 4.0] * 7, [1e-20] * 14, [3e19, 4e19] + [0.0] * 12])
    >>> exact = norms64(v) ** 2
    >>> [abs(float(s) / float(exact[i]) - 1) < 5e-7 for i, s in enumerate(sqnorms(v))]
    [True, True, True]
    """
    if v.dtype == torch.float64 or v.numel() == 0:
        return norms64(v, dim=dim).square()
    dim = dim % v.dim()
    n = v.shape[dim]
    if n // NORM_BLOCK + 1 > NORM_MAX_PARTIALS:
        return torch.linalg.vector_norm(v, dim=dim, dtype=torch.float64).square_()
    total = _partial_sums(v, dim)
    _, add = sqnorm_error(v.dtype, n)
    # overflowed partials, and rows so small that the underflow allowance would dominate the bound:
    # float64 squares of the values (none over- or underflows). A row of 0 keeps ``add`` (every
    # square of it rounded to 0, so its exact squared norm is below that).
    bad = ((total > 0) & (total < add * 2.0**30)) | torch.isinf(total)
    out = total.add_(add)
    if bool(bad.any()):
        again = torch.linalg.vector_norm(v, dim=dim, dtype=torch.float64).square_()
        out = torch.where(bad, again, out)
    return out


def reduction_upper(S: torch.Tensor, n: int) -> torch.Tensor:
    """A float64 upper bound of each exact sum ``S`` of ``n`` non-negative products of ``dtype``
    values, from ``S~`` (``S``'s entries) computed in ``dtype`` by one reduction in any order, with or
    without fused multiply-adds: a BLAS dot or GEMV, ``(v * v).sum(-1)``.

    The proof: each term takes at most ``n`` roundings of relative size ``u`` (one for its product,
    at most ``n - 1`` additions; Higham 2002, Lemma 3.1 and Eq. 3.4, which holds for every order of
    the additions), so ``S~ >= (S - add)(1 - gamma_n)`` with ``gamma_n = n u / (1 - n u)``, while no
    product underflows; a product below the normal range errs instead by at most half the smallest
    subnormal (``add``, as in :func:`sqnorm_error`). Hence ``S <= (S~ + add) / (1 - gamma_n)``,
    returned with one float64 step up for its own roundings. The bound is the safety factor that
    keeps a clip factor at most ``C / ||g_n||`` whatever the float32 rounding: 6e-5 for n = 1000, so a
    clipped example's factor is at most 3e-5 below the exact one. Entries that overflowed (inf) or
    are so small that ``add`` would dominate keep their own value (the caller takes them in float64).
    The reduction must run in ``dtype`` itself: a CUDA matmul allowed TF32 would not
    (:func:`exact_float32_matmul`).

    >>> S = torch.tensor([1.0, 0.0]); b = reduction_upper(S, 1000)
    >>> bool(b[0] > 1.0 + 5.9e-5) and bool(b[0] < 1.0 + 6.1e-5), float(b[1]) < 1e-40
    (True, True)
    """
    if S.dtype == torch.float64:
        raise ValueError("reduction_upper is for low-precision sums; float64 values take norms64")
    u = float(torch.finfo(S.dtype).eps) / 2
    nu = int(n) * u
    if nu >= 0.5:
        raise ValueError(f"reduction_upper: {n} terms is too many for a bound in {S.dtype}")
    g = nu / (1 - nu)
    add = int(n) * underflow_unit(S.dtype) / 2 * (1 + g)
    return (S.double() + add).div_(1 - g).mul_(1 + 2.0**-50)


def sqnorms_upper(v: torch.Tensor, dim: int = -1, sums: torch.Tensor | None = None) -> torch.Tensor:
    """Float64 upper bounds of the squared Euclidean norms of ``v`` along ``dim`` from one reduction
    in ``v``'s dtype (:func:`reduction_upper`): ``(v * v).sum(dim)``, or ``sums`` when the caller has
    the same sums of squares from a product it makes anyway (the ReLU MLP's ``D_n . W2``). Rows whose
    sum overflowed, or is so small that the underflow allowance would dominate, are taken in float64
    from ``v``'s values (a rare pass). Float64 values take :func:`norms64` squared.

    >>> v = torch.tensor([[3.0, 4.0] * 500, [1e-20] * 1000, [3e19, 4e19] + [0.0] * 998])
    >>> exact = norms64(v) ** 2
    >>> [0 <= float(s) / float(exact[i]) - 1 < 6.1e-5 for i, s in enumerate(sqnorms_upper(v))]
    [True, True, True]
    """
    if v.dtype == torch.float64 or v.numel() == 0:
        return norms64(v, dim=dim).square()
    n = v.shape[dim]
    S = (v * v).sum(dim) if sums is None else sums
    out = reduction_upper(S, n)
    add = n * underflow_unit(v.dtype) / 2
    lo, hi = torch.aminmax(out) if out.numel() else (out.new_ones(()), out.new_ones(()))
    if float(lo) >= add * 2.0**30 and float(hi) < math.inf:  # every row finite and well above the allowance
        return out
    bad = torch.isinf(S) | ((S > 0) & (out < add * 2.0**30))
    if bool(bad.any()):
        again = torch.linalg.vector_norm(v, dim=dim, dtype=torch.float64).square_()
        out = torch.where(bad, again, out)
    return out


def exact_float32_matmul(device: torch.device) -> bool:
    """Whether a float32 matmul on ``device`` rounds in float32 (the premise of
    :func:`reduction_upper`): always on the CPU; on CUDA unless TF32 is allowed."""
    if torch.device(device).type != "cuda":
        return True
    return torch.get_float32_matmul_precision() == "highest" and not torch.backends.cuda.matmul.allow_tf32


def product_norms64(*factors: torch.Tensor) -> torch.Tensor:
    """Squared norm of an outer product from its factors' float64 norms: ``(n_1 n_2 ...)^2``,
    the product formed before squaring, so that a tiny factor does not underflow against a huge
    one (``1e-170^2 * 1e150^2`` is 0 in float64, ``(1e-170 * 1e150)^2`` is 1e-40); for float64
    values (float32 values' squares cannot underflow in float64)."""
    t = factors[0]
    for f in factors[1:]:
        t = t * f
    return t * t


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
