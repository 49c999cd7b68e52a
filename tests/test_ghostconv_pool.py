"""GhostConvModel feeds its max-pooling layers channels-last tensors on CPU (torch's CPU
max-pool is far slower on NCHW tensors): the layout reaches the pools, and the clipped sums,
norms and losses are those of the NCHW path (float32 rounding apart)."""

import pytest
import torch

from dpcompanion.training.conv_models import GhostConvModel
from dpcompanion.training.models import make_model


@pytest.mark.parametrize("name", ["cnn-mnist"])
def test_pools_get_channels_last_and_results_match_the_nchw_path(name, monkeypatch):
    model = make_model(name, n_classes=10)
    g = torch.Generator().manual_seed(0)
    X, y = torch.rand(12, 784, generator=g), torch.randint(0, 10, (12,), generator=g)
    theta = model.init(generators=[torch.Generator().manual_seed(s) for s in (0, 1)])
    w = (torch.rand(2, 12, generator=g) < 0.6).float()
    seen = []
    pools = [m for m in model.module.children() if isinstance(m, torch.nn.MaxPool2d)]
    assert pools
    hooks = [m.register_forward_pre_hook(lambda mod, args: seen.append(
        args[0].is_contiguous(memory_format=torch.channels_last) and not args[0].is_contiguous())) for m in pools]
    try:
        fast = model.clipped_grad_sum(theta, X, y, clip_norm=0.5, weights=w)
        assert seen and all(seen)
        seen.clear()
        monkeypatch.setattr(GhostConvModel, "channels_last_pool", False)
        ref = model.clipped_grad_sum(theta, X, y, clip_norm=0.5, weights=w)
        assert seen and not any(seen)
    finally:
        for h in hooks:
            h.remove()
    for field in ("grad_sum", "norms", "losses"):
        torch.testing.assert_close(getattr(fast, field), getattr(ref, field), rtol=1e-5, atol=1e-6)
