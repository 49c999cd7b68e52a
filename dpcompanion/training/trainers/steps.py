"""The private step as a fixed sequence of named pieces, each testable alone:

    model.clipped_grad_sum -> add_noise -> scale -> (momentum) -> update

(Hong et al. 2022, FAccT, Algorithm 1 and Eq. (1)-(3)), on ``K`` runs at once: flat ``(K, P)``
tensors. The loop uses the in-place forms (on a CPU every fresh ``(K, P)`` temporary costs page
faults); ``momentum_update`` and ``sgd_update`` are their references.
"""

from __future__ import annotations

import torch

from dpcompanion.training.model_base import clip_factors

__all__ = ["clip_factors", "noise_std", "add_noise", "scale", "debias_factor", "momentum_update",
           "momentum_accumulate_", "sgd_update", "sgd_update_"]


def noise_std(*, clip_norm: float, sigma: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``C sigma`` elementwise (the engine passes the whole ``(K, T)`` schedule once), asserted finite
    and a normal number of ``dtype``: no step is released without its noise (the trainers refuse such
    sigmas up front, :func:`~dpcompanion.training.trainers.config.check_sigma`; reaching this is a bug)."""
    std = clip_norm * sigma.to(dtype)
    if not bool(torch.all(torch.isfinite(std) & (std >= torch.finfo(dtype).tiny))):
        raise RuntimeError(f"internal invariant broken: noise scale C*sigma must be finite and >= "
                           f"{torch.finfo(dtype).tiny:.3g}, got {std.min().item():.3g}..{std.max().item():.3g}")
    return std


def add_noise(grad_sum: torch.Tensor, *, std: torch.Tensor, noise: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """``grad_sum + std_k v_k`` with ``noise`` row ``k`` the standard normal draw ``v_k`` of run
    ``k`` (scaled in place, so consumed) and ``std_k = C sigma_k`` from :func:`noise_std`.
    ``inplace``: add into ``grad_sum``."""
    noise.mul_(std.unsqueeze(-1))
    return grad_sum.add_(noise) if inplace else grad_sum + noise


def scale(noisy_sum: torch.Tensor, *, denominator: float, inplace: bool = False) -> torch.Tensor:
    """Average: divide by N (full batch) or by the expected batch size p N (Poisson)."""
    return noisy_sum.div_(denominator) if inplace else noisy_sum / denominator


def debias_factor(*, beta: float, t: torch.Tensor) -> torch.Tensor:
    """``1 / (1 - beta^t)`` (H Eq. (3)); ``t`` 1-based, per run."""
    return 1.0 / (1.0 - torch.pow(torch.as_tensor(beta, dtype=t.dtype, device=t.device), t))


def momentum_update(v: torch.Tensor, g: torch.Tensor, *, beta: float, t: torch.Tensor | int):
    """Debiased momentum, H Eq. (3) (= slides Algorithm 2):
    ``v_{t+1} = beta v_t + (1 - beta) g_t`` (``v_1 = 0``) and the step direction
    ``m_{t+1} = v_{t+1} / (1 - beta^t)``. ``t`` (1-based, scalar or per run ``(K,)``).
    Returns ``(v_{t+1}, m_{t+1})``. With ``beta = 0`` this is plain GD (``m = g``)."""
    v_next = beta * v + (1.0 - beta) * g
    if beta == 0.0:
        return v_next, v_next
    f = debias_factor(beta=beta, t=torch.as_tensor(t, dtype=g.dtype, device=g.device))
    if f.dim() == 1:
        f = f.unsqueeze(-1)
    return v_next, v_next * f


def momentum_accumulate_(v: torch.Tensor, g: torch.Tensor, *, beta: float) -> torch.Tensor:
    """In place: ``v <- beta v + (1 - beta) g``; the debiasing goes into the step size."""
    return v.mul_(beta).add_(g, alpha=1.0 - beta)


def sgd_update(theta: torch.Tensor, direction: torch.Tensor, *, lr: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
    """``theta_{t+1} = theta_t - eta_t m_{t+1}`` for active runs; stopped runs stay put."""
    step = (lr * active.to(theta.dtype)).unsqueeze(-1) * direction
    return theta - step


def sgd_update_(theta: torch.Tensor, direction: torch.Tensor, *, lr: torch.Tensor) -> torch.Tensor:
    """In place: ``theta <- theta - lr_k direction_k`` (``lr_k = 0`` leaves run k put)."""
    return theta.addcmul_(direction, lr.unsqueeze(-1), value=-1.0)
